/*
 * select_app.h - the running cats-select (cats-select(1)): the control
 * stream on stdin, forwarder connections on the listeners, the C-SMA ingest,
 * start-up files; records into the catalogue, the CST and the NST, requests
 * answered by the selector, the rest passed on; dumps and statistics.
 *
 * The main parses the options into a->o, creates a->base and opens the
 * endpoints; this module does the rest on the libevent loop.  Call order:
 * cats_sel_app_init, cats_sel_app_load_files, cats_sel_app_output,
 * cats_sel_app_input, cats_sel_app_listener (each listener),
 * cats_sel_app_ingest; then the loop (or cats_sel_app_finish when there is
 * no input); cats_sel_app_end; cats_sel_app_free whatever happened.
 * Functions returning an int return a cats(7) exit code and print the one
 * line that says why (cats_errorx).
 *
 * Time: the clock of base/clock.h (the live clock, or in --replay the
 * records' timestamps), read where a record, a request or a timer comes in.
 * Output: the records of one loop turn leave in one write (the inputs pause
 * while the output is above its high-water mark); a write that fails ends
 * the run with 74.
 */
#ifndef CATS_SELECT_APP_H
#define CATS_SELECT_APP_H

#include "base/stats.h"
#include "net/httpd.h"
#include "pce/te.h"
#include "rec/seq.h"
#include "select/ingest.h"
#include "select/select_conf.h"

struct event_base;
struct event;
struct cats_sel_conn;
struct cats_listener;

struct cats_sel_app {
	struct cats_sel_opts o;		/* the main's */
	struct event_base *base;	/* the main's */
	struct cats_stream *in, *out, *stats, *dump;
	struct {
		int fd;
		bool dgram, unix_sock;
		struct cats_sel_conn *dconn;
	} ls[CATS_SEL_MAX_LISTEN];
	size_t nls;
	struct cats_sel_conn *conns;
	size_t nconns;
	struct cats_listener *lst;	/* accepting them (net/listener.h) */
	bool paused, daemon, done;
	struct cats_dec dec;
	struct cats_toks peek;
	struct cats_keyring keys;
	struct cats_svc_cat *cat;
	struct cats_cst *cst;
	struct cats_nst nst;
	struct cats_nst_rec *nrec;
	struct cats_sel *sel;
	struct cats_sel_out sout;
	struct cats_hist h_select;	/* time of each request's selection */
	struct cats_buf obuf;
	uint64_t last_purge;
	uint64_t batch_since;	/* monotonic ns: the output's batch opened */
	uint64_t last_stats_ts, last_decisions;
	struct cats_conf cf;
	int rc;
	/* The C-SMA ingest (cats-northbound(7)) and the TE database. */
	struct httpd *ingest_h;
	struct cats_ingest *ing;
	struct cats_keyring ikeys;
	struct cats_key isign;
	bool has_isign;
	struct cats_te *te;
	struct cats_nst_tedb *tedb;
	uint64_t te_applied, te_refused;
	/* Counters of the tool (the selector has its own). */
	uint64_t records, bad, passed, fwd_dropped, conns_refused;
	uint64_t hellos_ok, hello_refused, hello_replayed, keepalives;
	struct cats_replay *hellos;	/* replayed hellos (sec/crypto.h) */
	uint64_t svc_applied, svc_ignored, svc_refused;
	uint64_t met_records, met_stale, met_bad, met_resync, met_applied,
	    met_removed, met_refused, met_passed, met_refused_owner,
	    met_refused_scope;
	uint64_t net_applied, net_ignored, net_refused;
	uint64_t purged;
	/* --state: the CST's generation and the time of the last write. */
	uint64_t state_gen, state_ms, state_writes, state_errors;
};

/* The catalogue, the CST and its C-SMA sites, the NST (records, then the
 * TE database of --tedb), the selector and its forwarders.  The keyring of
 * --keys is the main's (a->keys, a->o.sel.keys). */
int cats_sel_app_init(struct cats_sel_app *a);

/* The start-up files: --services, --metrics, --net, in this order; 66 if
 * one is missing, 65 if one holds a refused record. */
int cats_sel_app_load_files(struct cats_sel_app *a);

/* The output stream on ofd, the stats stream on sfd (-1: the output) and
 * the dumps' on dfd (-1: the stats stream). */
int cats_sel_app_output(struct cats_sel_app *a, int ofd, int sfd, int dfd);

/* The control stream on stdin, unless stdin is a character device that is
 * no terminal (/dev/null: an empty input). */
int cats_sel_app_input(struct cats_sel_app *a);

/* Serve forwarders on a listening socket (a datagram socket is read as
 * one connection); unix_sock: peers are known by SO_PEERCRED.  -1 if out
 * of memory. */
int cats_sel_app_listener(struct cats_sel_app *a, int fd, bool dgram,
    bool unix_sock);

/* The C-SMA ingest of --ingest: its keys, the C-SMAs' CS-IDs, the HTTP
 * server (nothing without --ingest). */
int cats_sel_app_ingest(struct cats_sel_app *a);

/* Once a second when live: a keepalive to each forwarder that said hello
 * on a stream, expired soft state goes, and the stats record of
 * --stats-interval when it is due. */
void cats_sel_app_tick(struct cats_sel_app *a);

/*
 * --state: the CST written to its file as the dump's metric records
 * (to FILE.tmp, synced, renamed over FILE), when it changed and at most
 * once a second, or every 5 s (refreshes move lifetimes without changing
 * the generation); force: now (the end of a run).  The file is read at
 * start by cats_sel_app_load_files, before --metrics.
 */
void cats_sel_app_save_state(struct cats_sel_app *a, bool force);

/* SIGHUP: the TE database and the services file read again; a bad one is
 * refused and the old one stays. */
void cats_sel_app_reload(struct cats_sel_app *a);

/* A stats record (SIGUSR1), the CST and the NST as records (SIGUSR2), on
 * the stats stream. */
void cats_sel_app_stats(struct cats_sel_app *a);
/*
 * The stats record's list into st, and the selection latency histogram
 * (net/metrics.h's fill function; arg: the app).
 */
void cats_sel_app_stats_fill(void *arg, struct cats_stats_list *st);
void cats_sel_app_dump(struct cats_sel_app *a);

/* Leave the loop with exit code rc (the first one given stays). */
void cats_sel_app_stop(struct cats_sel_app *a, int rc);

/* The end of the input: the last purge, --stats-at-end, --dump-at-end,
 * then stop with 0. */
void cats_sel_app_finish(struct cats_sel_app *a);

/* After the loop: the output flushed; the exit code (65 for bad records
 * of a filter run, 74 when the output failed). */
int cats_sel_app_end(struct cats_sel_app *a);

/* Release all but a->base (the main frees it after). */
void cats_sel_app_free(struct cats_sel_app *a);

#endif
