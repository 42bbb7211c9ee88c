/*
 * bind_app.h - the running cats-bind (cats-bind(1)): the pipeline on stdin
 * and stdout, forwarder connections on the listener, the binding table
 * (bind.h) and its journal (bind_journal.h) between them, statistics.
 *
 * The main parses the options into the fields marked "the main's", loads
 * the keys, opens the trace file, creates a->base, the listening socket,
 * the signals and the timer; this module does the rest on the libevent
 * loop.  Call order: bind_app_init; bind_app_journal (with --journal);
 * bind_app_output; bind_app_listener (with --listen); bind_app_input;
 * the loop; bind_app_end; bind_app_free whatever happened.  Functions
 * returning an int return a cats(7) exit code and print the one line that
 * says why (cats_errorx).
 *
 * Time: the clock of base/clock.h (live, or in --replay the timestamps of
 * the records the table takes), read where a record or a timer comes in.
 *
 * Output is held behind one commit point (seq.h, cats_commit): what the
 * table sends leaves only once the journal records that cover it are
 * written (and synced under --fsync always), at the end of the loop turn
 * or as soon as 1 MiB is held (the group commit).  Output above the
 * stream's high-water mark pauses every input until it drains; a failed
 * write to stdout ends the run with 74.
 */
#ifndef CATS_BIND_APP_H
#define CATS_BIND_APP_H

#include <stdio.h>

#include "base/htab.h"
#include "base/stats.h"
#include "bind/bind.h"
#include "bind/bind_journal.h"
#include "rec/seq.h"
#include "sec/crypto.h"

struct event_base;
struct event;
struct bind_app_conn;
struct cats_listener;
struct cats_stats_list;

/*
 * A replica of the journal (the redundant C-PS: lib/ha, etcd): every
 * journal record goes to append; a commit of it is done before any output
 * it covers leaves (after the journal's), in three steps as a pipelined
 * commit's (seq.h): begin on the loop (-1: refused; 0: nothing to write,
 * neither work nor end follows; 1: work follows), work on the commit's
 * worker thread (while it runs, only append is called on the loop), end
 * on the loop with work's answer; -1 from begin or end (err says why)
 * ends the run with nothing more sent.  tick runs on the timer (-1: the
 * same), never while a commit is in flight; stats adds its counters to
 * the stats record (no commit in flight either).
 */
struct bind_replica {
	int (*append)(void *arg, const struct cats_rec *r);
	int (*begin)(void *arg, uint64_t next_id, char *err, size_t errlen);
	int (*work)(void *arg);
	int (*end)(void *arg, int rc, char *err, size_t errlen);
	int (*tick)(void *arg, char *err, size_t errlen);
	void (*stats)(void *arg, struct cats_stats_list *st);
	void *arg;
};

struct bind_app {
	/* the main's */
	struct event_base *base;
	FILE *trace;			/* --trace; NULL: to the log */
	struct cats_key key;		/* --key: signs what forwarders get */
	bool have_key;
	struct cats_keyring keys;	/* --keys; n == 0: not checked */
	bool strict, stats_at_exit;
	uint64_t fsync_ms;		/* --fsync interval: its period */
	uint64_t stats_ms;		/* --stats-interval; 0: none */
	const struct bind_replica *repl;	/* --etcd; NULL: none */
	/* forwarder connections (listener.h; 0: its defaults, a 5 s hello) */
	size_t max_conns, max_unauth;
	uint64_t hello_ms, idle_ms;
	/* the module's */
	struct bind_table *t;
	struct bj *j;
	struct cats_stream *in, *out;
	struct cats_commit *cm;		/* output held until the journal commit */
	struct event *resync;		/* the next slice of the re-syncs */
	bool cm_j, cm_repl;		/* the batch in flight: journal, replica */
	int cm_jrc, cm_rrc;		/* their work's answers */
	struct cats_buf enc;		/* a record being encoded */
	struct cats_listener *lst;	/* forwarder connections */
	struct cats_htab byname;	/* connections by forwarder id */
	struct cats_replay *hellos;	/* replayed hellos (sec/crypto.h) */
	struct cats_dec dec;
	bool paused, stdin_eof, listening, stopping;
	uint64_t last_fsync, last_stats, last_keepalive;
	int exit_code;
	/* counters of the tool itself */
	uint64_t in_records, in_bad, passed, dropped_sends, sent_ahead, sent_mac,
	    conns_refused, auth_refused, hello_replayed, imperson,
	    journal_errors, keepalives;
	struct cats_hist h_install;	/* a path-rep in to its bindings out */
	/* 001's binding installation latency and control-channel latency
	 * (cats-bind(1) STATISTICS): samples of in-flight bindings in two
	 * direct-mapped rings (a collision loses a sample, never memory) */
	struct cats_hist h_activate;	/* a transaction's first record to ACTIVE */
	struct cats_hist h_control;	/* an install released to its status */
	struct bind_app_lat *lat;	/* the rings; NULL: not measured */
	uint64_t commits;		/* commits done (the batch sequence) */
};

/* The table of configuration c, its callbacks this module's. */
int bind_app_init(struct bind_app *a, const struct bind_conf *c);
/*
 * Open the journal in dir (fsync policy, snapshot size floor snap_min, 0:
 * the default), restore the table from it and start a new owner epoch,
 * before anyone hears of it.
 */
int bind_app_journal(struct bind_app *a, const char *dir, int fsync_policy,
    uint64_t snap_min);
/* The output stream on stdout. */
int bind_app_output(struct bind_app *a);
/*
 * Accept forwarders on the listening socket fd (the main's), through one
 * listener (listener.h): a connection must say a valid hello within
 * hello_ms (--hello-timeout; 0: CATS_HELLO_MS); with --keys a hello is fresh (signed after the start and
 * after the last accepted one from that forwarder) or refused.
 */
void bind_app_listener(struct bind_app *a, int fd);
/* The pipeline's input stream on stdin. */
int bind_app_input(struct bind_app *a);
/*
 * The timer (every 50 ms): deadlines when live, the --fsync interval, the
 * --stats-interval record, background snapshots, and live every second a
 * keepalive to each forwarder that said hello (a status, event keepalive,
 * with the epoch; held behind the commit like every output, so an owner
 * that may no longer act sends none): a forwarder leaves a connection
 * that falls silent (cats-fwd(1) CONTROL CHANNELS).
 */
void bind_app_tick(struct bind_app *a);
/* A stats record to stdout (SIGUSR1, --stats). */
void bind_app_stats(struct bind_app *a);
/*
 * The same counters and the installation histogram (the time from a
 * path-rep read to its bindings handed to the forwarders) into st
 * (net/metrics.h's fill function; arg: the app).
 */
void bind_app_stats_fill(void *arg, struct cats_stats_list *st);
/* End the loop; the first code given is the run's. */
void bind_app_stop(struct bind_app *a, int code);
/*
 * The clean stop: what is held goes out (and the --stats record), the
 * journal gets a snapshot and is closed.  The run's exit code.
 */
int bind_app_end(struct bind_app *a);
/* Free the module's part, and the keyring of the main's. */
void bind_app_free(struct bind_app *a);

/*
 * --dump: every binding of the journal in dir (opened read-only, with the
 * table of configuration c) to stdout, as a CBOR Sequence.
 */
int bind_app_dump(const struct bind_conf *c, const char *dir);

#endif
