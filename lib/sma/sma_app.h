/*
 * sma_app.h - the running cats-sma (cats-sma(1)): SCI reports in from
 * stdin, CBOR stream connections, HTTP push, pulls and SSE (sma_http.h),
 * subordinate C-SMAs; the core (sma.h) and the update controller
 * (sma_uc.h) behind them; metric records out to a stream and to the C-PS
 * (sma_nb.h); reloads, the end of a run, statistics.
 *
 * The main parses the options into the fields marked "main", creates
 * a->base and a->http and opens the endpoints; this module does the rest on
 * the libevent loop.  Call order: sma_app_load_config, sma_app_load_policy,
 * sma_app_output (if a stream output), sma_app_core, sma_app_northbound,
 * sma_app_hierarchy, sma_http_scis_start, the listeners (sma_http.h,
 * sma_app_stream_listener), sma_app_start once "now" is known, then the
 * loop; sma_app_end.  Functions returning an int return 0 or a cats(7)
 * exit code and print the one line that says why (cats_errorx).
 *
 * Time: the clock of base/clock.h (live, or in --replay the reports'
 * timestamps: the timers run at their own deadlines as the clock moves).
 * Output: the records of one loop turn leave in one write (the stream's
 * batch); the first failed write ends the run with 74.
 */
#ifndef CATS_SMA_APP_H
#define CATS_SMA_APP_H

#include "base/stats.h"
#include "net/ep.h"
#include "net/httpc.h"
#include "net/httpd.h"
#include "rec/json.h"
#include "rec/seq.h"
#include "select/ingest.h"
#include "sma/sma.h"
#include "sma/sma_nb.h"
#include "sma/sma_policy.h"
#include "sma/sma_steer.h"
#include "sma/sma_uc.h"

#define SMA_MAX_LISTEN 8
#define SMA_MAX_URLS 8

struct event_base;
struct event;
struct cats_listener;
struct sci_mqtt;

/* A configured SCI at run time: its event stream and its pulls. */
struct sma_sci {
	struct sma_app *app;
	char *csci_id;
	char *pull_url, *sse_url;
	uint64_t pull_interval_ms;
	struct httpc_sse *sse;
	struct httpc_req *pull;
	struct event *timer;
	char peer[300];
};

struct sma_app {
	struct event_base *base;	/* main */
	char *conf_path;		/* main */
	struct sma_conf *c;
	struct sma_keys *k;
	struct sma *core;
	struct sma_uc *uc;
	struct sma_policy *policy;	/* loaded, not yet handed over */
	uint64_t out_failures;
	/* [northbound] key: every record is signed (and carries a nonce) */
	struct cats_key nbkey;
	bool has_nbkey;
	struct cats_buf enc;		/* a record's encoding, reused */
	uint64_t nonce;
	struct cats_dec dec;
	struct httpc *http;		/* main */

	/* output: a stream, or the C-PS (URLs, the primary first) */
	struct cats_ep to;
	const char *urls[SMA_MAX_URLS];	/* main */
	size_t nurls;			/* main */
	struct sma_nb *nb;
	struct cats_keyring ps_keys;
	struct httpc_req *nb_req;

	/* [steer]: site-local steering in a partition (000 §10.3) */
	struct sma_steer *steer;
	struct cats_stream *steer_out;	/* NULL while reconnecting */
	bool steer_dgram;
	struct cats_ep steer_ep;	/* [steer] to, reconnected when lost */
	struct event *steer_retry;
	unsigned steer_retry_ms;
	uint64_t steer_reconnects;
	bool steer_connected;		/* once: a later connect is a reconnect */
	bool steer_warned;		/* this outage's failed connect said */
	uint64_t config_refused;	/* reloads refused */
	uint64_t cert_refused;		/* pushes refused for their certificate */

	/* hierarchical aggregation: subordinate C-SMAs */
	struct cats_cst *sub_cst;
	struct cats_ingest *sub_ing;
	struct cats_keyring sub_keys;
	uint64_t sub_purged;
	struct cats_stream *outs;
	bool out_broken;

	/* inputs */
	struct cats_stream *in;
	bool in_eof;
	size_t nlisten;			/* main */
	/* --hello-timeout (ms): a stream connection without an accepted
	 * report by then is closed; 0: only under a flood, after 10 s */
	uint64_t hello_ms;		/* main */
	struct httpd *push[SMA_MAX_LISTEN];
	struct cats_listener *streams;	/* unix:, tcp:, tls: record streams */
	struct httpd *admin;
	struct sma_sci *scis;
	size_t nscis;
	struct sci_mqtt *mqtt;		/* [mqtt]: the broker subscription */
	size_t pulls_pending;	/* once mode */

	/* modes (main) */
	bool replay, once, strict, started;
	const char *until;
	const char *state_path;
	struct sma_state state;
	bool have_state;

	struct event *tick;
	struct event *save;		/* the periodic state save (-T) */
	uint64_t saves, save_failures;
	uint64_t malformed;
	int exit_code;
	bool stopping;
};

/* The configuration of a->conf_path and its keys; 78 or 77 (and an audit
 * line) if refused. */
int sma_app_load_config(struct sma_app *a);
/* The rule file the configuration names, into a->policy; 78 if refused. */
int sma_app_load_policy(struct sma_app *a);
/* Records to a stream on fd (datagrams for a datagram endpoint a->to). */
int sma_app_output(struct sma_app *a, int fd);
/* The controller (epoch, seq) and the core, the policy handed over. */
int sma_app_core(struct sma_app *a, uint64_t epoch, uint64_t seq);
/* The sender to the C-PS URLs a->urls and the [northbound] fallbacks. */
int sma_app_northbound(struct sma_app *a, uint64_t epoch);
/*
 * [steer]: steer records to the stream on fd (the endpoint ep, [steer] to,
 * opened by the main), or with fd -1 (unix: and tcp:) to a connection
 * made on the loop.  A unix: or tcp: connection that cannot be made or is
 * lost (the egress not up yet, restarted) is tried again, 100 ms growing
 * to 1 s apart, and the redirects in force, also those decided meanwhile,
 * are said on it in seq order.  78 when it has no C-PS to be partitioned
 * from.
 */
int sma_app_steer(struct sma_app *a, const struct cats_ep *ep, int fd);
/* Subordinate C-SMAs ([hierarchy], [subordinate]): their ingest. */
int sma_app_hierarchy(struct sma_app *a);
/*
 * Serve CBOR stream connections on a listening socket (net/listener.h).
 * -1: no memory.
 */
int sma_app_stream_listener(struct sma_app *a, int fd);
/* Records from stdin.  -1 if the stream cannot be made. */
int sma_app_stdin(struct sma_app *a);
/*
 * [mqtt]: subscribe to the reports on the broker (not in replay or cron
 * mode).  Each message is a report (or a CBOR Sequence of them) of the
 * CSCI-ID its topic names: it takes the path of an HTTP push, and a
 * report for another CSCI-ID than its topic's is refused (403).  0, or
 * 78 if the broker or its TLS files are refused.
 */
int sma_app_mqtt(struct sma_app *a);

/* Restore saved state and send the first snapshot, once "now" is known
 * (idempotent). */
void sma_app_start(struct sma_app *a);
/* Arm the timer for the next deadline of the core, controller, sender. */
void sma_app_arm(struct sma_app *a);
/* SIGHUP: the configuration, keys and rule file read again (a refused
 * one changes nothing); event streams keep their position. */
void sma_app_reload(struct sma_app *a);
/* The end of the input (or a signal): --until in replay, the last ticks
 * and drain, saved entries not heard of withdrawn (--once); the loop
 * stops. */
void sma_app_finish(struct sma_app *a);
/* Leave the loop with exit code code (the first one given stays). */
void sma_app_stop(struct sma_app *a, int code);

/* The stats record (cats-sma(1) STATISTICS): on stderr, as a JSON
 * object, and as the Prometheus textfile of [northbound] prometheus
 * (nothing without one). */
void sma_app_print_stats(struct sma_app *a);
json_t *sma_app_stats_json(struct sma_app *a);
void sma_app_textfile(struct sma_app *a);
/* The same list into st (net/metrics.h's fill function; arg: the app). */
void sma_app_stats_fill(void *arg, struct cats_stats_list *st);

/* After the loop: the output flushed, the C-PS's queue let go while it
 * answers (bounded), the state saved; the exit code. */
int sma_app_end(struct sma_app *a);
/*
 * Save the soft state to a->state_path now (atomic: written aside, fsynced,
 * renamed, the directory synced), so that a kill -9 loses at most
 * [cache] save-interval.  -1 with the line said.
 */
int sma_app_save_state(struct sma_app *a);
/* Arm (again, after a reload) the periodic save of the live daemon. */
void sma_app_arm_save(struct sma_app *a);

#endif
