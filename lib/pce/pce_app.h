/*
 * pce_app.h - the running cats-pce (cats-pce(1)): path requests in,
 * answered by cats_pce_answer() over the TE database; net records applied
 * to it and passed on; every other record passed on; on stdin and stdout,
 * or on the sessions of a listening socket.
 *
 * The main parses the options into the fields marked "the main's", loads
 * the keys, creates a->base, the signals and the endpoints; this module
 * does the rest on the libevent loop.  Call order: cats_pce_app_init;
 * cats_pce_app_stdio or cats_pce_app_listener; the loop; cats_pce_app_end;
 * cats_pce_app_free whatever happened.  Functions returning an int return
 * a cats(7) exit code and print the one line that says why (cats_errorx).
 *
 * Time: the clock of base/clock.h (live, or in --replay the timestamps of
 * path-req and net records).  Replies go where the request came from (the
 * output stream in stdio mode, the session, the datagram's sender); a
 * reply above the high-water mark pauses the stream it answers until the
 * output drains.  With --keys, path requests and net records must be
 * signed by a key of the keyring, within the window and never seen before
 * (cats_tag_guard, crypto.h); a refused request gets an "unauthorized"
 * error.  A record that does not decode is counted (exit 65 at the end);
 * a path-req among them gets a "bad-request" error carrying what can be
 * salvaged (txn, ingress, flow), any other one is passed on as it came.
 */
#ifndef CATS_PCE_APP_H
#define CATS_PCE_APP_H

#include "base/bucket.h"
#include "base/stats.h"
#include "pce/pce.h"
#include "rec/seq.h"
#include "sec/crypto.h"

struct event_base;
struct cats_listener;
struct cats_pce_sess;
struct cats_pcep_srv;
struct cats_pcep_names;
struct cats_pcc;

struct cats_pce_app {
	/* the main's */
	struct event_base *base;
	const char *tedb;		/* -t: the TE database's file */
	bool strict, stats;
	size_t max_labels, cache;	/* --max-labels (0: default), --cache */
	struct cats_keyring keys;	/* --keys; n == 0: none */
	uint64_t window;		/* --window (ms) */
	struct cats_key sign;		/* --key; kind -1: do not sign */
	const struct cats_prefix *pcep_allow;	/* --pcep-allow */
	size_t pcep_nallow;
	uint64_t pce_timeout;		/* --pce-timeout (ms; 0: 5 s) */
	/* --hello-timeout (ms): a session not authenticated by then is
	 * closed; 0: only under a flood, after 10 s */
	uint64_t hello_ms;
	uint8_t md5[80];		/* --tcp-md5 (md5_len 0: none) */
	size_t md5_len;
	/* the module's */
	struct cats_pce pce;
	struct cats_tag_guard *guard;
	struct cats_stream *in, *out;	/* stdio mode */
	/* --stats-to: the stats records' stream (a->out itself for "-");
	 * NULL: one JSON line each on stderr */
	struct cats_stream *stats_out;
	uint64_t last_stats_ts, last_requests;	/* request_rate's base */
	struct cats_pce_sess *stdio;
	struct cats_listener *lst;	/* sessions (net/listener.h) */
	struct cats_pcep_srv *pcep;	/* --pcep sessions (pcep_srv.h) */
	struct cats_pcep_names *names;	/* of the database in force */
	uint64_t names_gen;		/* the generation names index */
	struct cats_arena parena;	/* one PCReq's replies */
	uint64_t pcep_reqs, pcep_reps, pcep_errs, pcep_refused;
	struct cats_bucket audit;	/* PCEP session lines (pce_app.c) */
	bool audit_init;
	uint64_t audit_suppressed, audit_held;
	uint64_t pcep_relayed;
	struct cats_hist h_compute;	/* time of each path computation */
	struct cats_pcc *pcc;		/* --pce: the remote PCE */
	bool in_done;			/* stdin ended (stdio mode) */
	struct cats_dec dec;
	struct cats_arena arena;
	uint64_t records, bad, passed, net_applied, net_refused, reloads,
	    reload_failed, sessions, unauthorized;
	int exit_code;
};

/*
 * Load the TE database of a->tedb (66 if missing, 78 if refused) and make
 * the PCE, and the replay guard of --keys.
 */
int cats_pce_app_init(struct cats_pce_app *a);
/* Requests on stdin, everything out on ofd. */
int cats_pce_app_stdio(struct cats_pce_app *a, int ofd);
/*
 * Serve the listening socket fd (the main's): a session per connection
 * (through one listener, listener.h: caps, and a quiet session that has
 * sent nothing valid is closed after 10 s under a flood of such), or,
 * dgram, one for all datagrams (replies to their senders).
 */
int cats_pce_app_listener(struct cats_pce_app *a, int fd, bool dgram);
/*
 * --pcep: serve PCEP (RFC 5440, pcep.h) on the listening TCP socket fd
 * (the main's), as a stateless PCE over the same database and CSPF as
 * the records: each PCReq's requests become path-reqs
 * (cats_pcep_to_path_req), are answered by cats_pce_answer() and go back
 * as one PCRep (cats_pcep_from_path_rep).  The node names index of pcep.h
 * follows the database: rebuilt when its generation changes (SIGHUP, net
 * records).  Peers outside a->pcep_allow are refused and audited, like
 * every PCErr or Close the speaker sent by itself.
 */
int cats_pce_app_pcep(struct cats_pce_app *a, int fd);
/*
 * --pce: the path requests of the record input are not computed here but
 * sent over PCEP (as a PCC, pcep.h) to the PCE at the tcp: endpoint spec;
 * the replies come back as path-rep records where the request came from,
 * as if computed here (cats_pcep_to_path_rep).  Each request gets a
 * request id of its own (the RP's; the record's txn stays with the
 * record).  The connection is non-blocking, and made again after a
 * failure or the end of a session with a backoff (0.5 s doubling to
 * 30 s, reset once a session is up).  Fail closed: a request waits for
 * a session at most a->pce_timeout (and never past its own deadline);
 * then, as when the session ends before its reply or the PCE answers it
 * with a PCErr, it gets a path-rep with status error (reason
 * pce-unavailable, deadline, or pce-error), never a path.  At most 4096
 * requests wait: standard input is then paused until half have their
 * answer; on sessions more are failed at once.  A node without an address
 * cannot be named in END-POINTS: answered here (no-source,
 * no-destination).  With stdin, its end ends the run once every request
 * has its answer.  With a->md5_len, the connection is signed with TCP-MD5
 * (pcep_srv.h); then insecure is not needed.
 */
int cats_pce_app_pcc(struct cats_pce_app *a, const char *spec, bool insecure);
/* SIGHUP: load the database again; a bad one is refused, the old kept. */
void cats_pce_app_reload(struct cats_pce_app *a);
/*
 * --stats-to ENDPOINT: the stats records go there (CBOR), "-" the output
 * stream of the records itself (stdio mode; in listen mode stdout).
 * Returns 0, or 74 with the one line said.
 */
int cats_pce_app_stats_to(struct cats_pce_app *a, const char *spec);
/* The stats record (SIGUSR1, --stats): to --stats-to, else one JSON line
 * on stderr.  request_rate is the rate since the last record. */
void cats_pce_app_stats(struct cats_pce_app *a);
/* The same list and the computation histogram (net/metrics.h's fill). */
void cats_pce_app_stats_fill(void *arg, struct cats_stats_list *st);
/* After the loop: the output flushed, --stats, the count of bad
 * records.  The run's exit code. */
int cats_pce_app_end(struct cats_pce_app *a);
/* Free the module's part, and the main's keys. */
void cats_pce_app_free(struct cats_pce_app *a);

/* --check: load the database at path and describe it on stdout. */
int cats_pce_check(const char *path);

#endif
