/*
 * cps.h - the C-PS as one supervised service (cats-cps(1)): a parent that
 * runs the three stages of the C-PS, cats-select, cats-pce and cats-bind
 * (the same tools, from the same bin directory), each as its own process
 * on a socketpair, and relays their records so that the loop is closed:
 *
 *   stdin ----------------------> select
 *   select --------------------->  pce      (path requests, the rest passed on)
 *   pce ------------------------>  bind     (path replies, the rest passed on)
 *   bind, path-req ------------->  pce      (repairs: their replies go to bind)
 *   bind, everything else ------> the service's output
 *   any stage, stats -----------> kept: one stats record for the whole
 *
 * A stage that dies is started again (at once if it had run for 5 s, else
 * after a backoff doubling from 100 ms to 10 s), every restart counted
 * and logged with its cause.  What is sent to a stage while it is down
 * waits for it (up to 16 MiB per stage, then counted as lost).  When the
 * service's input ends, the end is passed along the chain (select's input
 * is shut, then pce's once select has exited, then bind's): filter stages
 * end and the service exits with the first non-zero code of a stage;
 * daemon stages go on.
 *
 * The ownership hook (redundant C-PS, lib/ha): cps_set_active() starts or
 * stops the stages as a unit; a standby parent runs none (admits and
 * installs nothing) and keeps its configuration and counters.  With the
 * binding stage on etcd (cps_conf_etcd()), the parent runs every stage
 * and etcd's election decides: the binding stage of the instance that
 * does not own the owner key waits as a standby (ha/ha_bind.h).
 *
 * Call order: cps_conf_init, cps_conf_load (and cps_conf_set for command
 * line overrides), cps_conf_finish; cps_init; cps_set_active(true); the
 * loop; cps_end (the exit code); cps_free.  Functions returning an int
 * return a cats(7) exit code and print the one line that says why.
 */
#ifndef CATS_CPS_H
#define CATS_CPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/conf.h"
#include "base/stats.h"
#include "rec/rec.h"

struct event_base;
struct event;
struct cats_stream;

enum { CPS_SELECT, CPS_PCE, CPS_BIND, CPS_NSTAGE };
#define CPS_MAX_LISTEN 8	/* listen endpoints of a stage held */

/* The TLS keys of the service (tls-cert, tls-key, tls-ca, tls-crl). */
enum { CPS_TLS_CERT, CPS_TLS_KEY, CPS_TLS_CA, CPS_TLS_CRL, CPS_NTLS };
extern const char *const cps_tls_keys[CPS_NTLS];

/* The stages' names ("select", "pce", "bind"). */
extern const char *const cps_stage_names[CPS_NSTAGE];

struct cps_conf {
	const char *id;		/* the service's identity (stats) */
	const char *bin;	/* the stages' directory; NULL: cats-cps's own */
	const char *to;		/* the service's output; NULL: stdout */
	const char *stats_to;	/* endpoint of the stats records; NULL: none */
	const char *textfile;	/* Prometheus textfile; NULL: none */
	const char *tap;	/* a copy of pce's output; NULL: none */
	const char *prometheus;	/* /metrics endpoint (net/metrics.h); NULL */
	uint64_t stats_ms;	/* stats interval; 0: on SIGUSR1 only */
	const char *user;	/* the stages run as this user; NULL: ours */
	uid_t uid;		/* its ids (cps_conf_finish) */
	gid_t gid;
	/* The TLS files of every stage (net/tls.h), by CPS_TLS_*; NULL: none.
	 * They come first in each stage's arguments: its section may
	 * override them. */
	const char *tls[CPS_NTLS];
	/* Each stage's arguments after its name, from its section. */
	char **args[CPS_NSTAGE];
	size_t nargs[CPS_NSTAGE];
	struct cats_conf cf;	/* the file (strings point into it) */
	char binbuf[4096];
};

void cps_conf_init(struct cps_conf *c);
/* Read the configuration file (cats-cps(1) CONFIGURATION); 78 if refused. */
int cps_conf_load(struct cps_conf *c, const char *path);
/* The same from text (tests): 0, or -1 with "name:line: key: reason". */
int cps_conf_parse(struct cps_conf *c, const char *name, const char *text,
    size_t len, char *err, size_t errlen);
/* One top-level key from the command line (id, bin, to, stats-to, tap,
 * textfile, stats-interval, prometheus, user, tls-cert, tls-key, tls-ca,
 * tls-crl): 0, or -1 with the reason in err. */
int cps_conf_set(struct cps_conf *c, const char *key, const char *val,
    char *err, size_t errlen);
/*
 * The bin directory found (the directory of /proc/self/exe); user's ids
 * looked up (78 if unknown, or named without root while not ours); the TLS
 * files read for the parent's own listener (--prometheus https://) and
 * checked before any stage starts (77 if refused).
 */
int cps_conf_finish(struct cps_conf *c);
/* Whether the binding stage is on etcd (an etcd key in [bind]): then the
 * election decides which instance acts, not the parent. */
bool cps_conf_etcd(const struct cps_conf *c);
void cps_conf_free(struct cps_conf *c);

struct cps_stage {
	int which;		/* CPS_SELECT ... */
	struct cps *p;
	char **argv;		/* path, the parent's options, args, NULL */
	size_t ntls;		/* the parent's options: the TLS files,
				   pce's --stats-to (argv[1..ntls], owned) */
	pid_t pid;		/* 0: not running */
	int fd;			/* the parent's end of the socketpair */
	struct cats_stream *s;
	struct cats_dec dec;	/* its stats records */
	struct event *timer;	/* restart after the backoff */
	uint64_t started_ms;	/* monotonic ms of the last start */
	uint64_t backoff_ms;
	uint64_t starts, restarts, items_in, items_out, lost, bad;
	uint64_t walked;	/* of items_in, those that came bare: framed
				   by a walk, not by their wrapper's head */
	int last_exit;		/* exit code, or 128 + signal */
	bool eof;		/* its input is to be shut (the end passed on) */
	bool shut;		/* and was */
	bool closed;		/* its output ended (the socket's EOF) */
	bool done;		/* ended after its input did: not restarted */
	bool congested;		/* above its high-water mark */
	struct cats_buf pending;	/* items waiting while it is down */
	/* Its listen endpoints, held by the parent while active and handed
	 * down (net/ep.h CATS_LISTEN_FDS): a restart refuses no connect. */
	struct cps_listen {
		char *name;	/* the endpoint, as cats_ep_str() writes it */
		char *path;	/* unix: the socket file; NULL otherwise */
		int fd;		/* -1: not held (the stage opens it) */
		unsigned long ino;	/* the file's, when held */
	} ls[CPS_MAX_LISTEN];
	size_t nls;
	char *lenv;		/* CATS_LISTEN_FDS for it; NULL: none held */
	/* Its last stats record's counters, names "STAGE.NAME", and their
	 * kinds (enum cats_stat_kind) as the record said them. */
	struct cats_kv *kv;
	unsigned char *kind;
	size_t nkv;
	char *names;
};

struct cps {
	struct cps_conf *c;
	struct event_base *base;	/* the main's */
	struct cps_stage st[CPS_NSTAGE];
	struct cats_stream *in, *out, *stats, *tap;
	struct event *tick, *stats_ev, *kill_ev;
	bool active, stopping, in_eof;
	int rc;
	uint64_t started_ms;
	uint64_t in_items, in_bad, out_items, out_lost, routed_repairs,
	    stats_records, fatal;
	uint64_t routed_pending;	/* path-reqs copied to bind (etcd) */
	bool etcd;		/* the binding stage is on etcd */
};

/* The streams of the service (its input, output, stats) and the timers;
 * the stages are not started yet.  74 if an output cannot be opened. */
int cps_init(struct cps *p, struct cps_conf *c, struct event_base *base);
/*
 * The ownership hook: true starts every stage that is not running, false
 * stops them all (SIGTERM, then SIGKILL after 5 s) and keeps them stopped.
 * Returns 0, or -1 when a stage could not be started (it is retried).
 */
int cps_set_active(struct cps *p, bool active);
/* Signals of the main: SIGHUP to every stage (their reloads: catalogue,
 * TE database, TLS files) and the parent's TLS files read again; SIGUSR2
 * to select (its dump); SIGUSR1 a stats record; SIGTERM, SIGINT: stop. */
void cps_signal(struct cps *p, int sig);
/* SIGCHLD: reap the stages that exited, restart or pass the end on. */
void cps_reap(struct cps *p);
/* Stop the stages and leave the loop once they have exited; rc the exit
 * code (the first one given stays). */
void cps_stop(struct cps *p, int rc);
/* Write the stats record (and textfile) now, from the stages' last ones. */
void cps_stats(struct cps *p);
/*
 * The stats record's list into st (net/metrics.h's fill function; arg:
 * the service): its own counters, then the stages' last ones, typed as
 * their records say (gauges named; untyped from a stage that does not
 * say).  The stages' histograms are on each stage's own endpoint
 * (prometheus = ENDPOINT in its section).
 */
void cps_stats_fill(void *arg, struct cats_stats_list *st);
/* After the loop: output flushed; the exit code. */
int cps_end(struct cps *p);
void cps_free(struct cps *p);

#endif
