/*
 * cats-sma - the CATS Service Metric Agent: SCI reports in (stdin, HTTP
 * push, SSE, pull), metric records out.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "base/clock.h"
#include "net/ep.h"
#include "net/httpc.h"
#include "net/httpd.h"
#include "select/ingest.h"
#include "rec/json.h"
#include "base/log.h"
#include "rec/seq.h"
#include "sma/sma.h"
#include "sma/sma_nb.h"
#include "sma/sma_policy.h"
#include "sma/sma_uc.h"
#include "base/tool.h"

static const char usage_text[] =
    "usage: cats-sma [-1iqrSsv] [-a endpoint] -c config [-E epoch]\n"
    "                [-l endpoint] [-N now] [-T state] [-t endpoint ...]\n"
    "                [-u until]\n";

static void
usage(void)
{
	fputs(usage_text, stderr);
	exit(CATS_EXIT_USAGE);
}

#define MAX_LISTEN 8
#define MAX_URLS 8

/* A configured SCI at run time: its event stream and its pulls. */
struct sci_rt {
	struct app *app;
	char *csci_id;
	char *pull_url, *sse_url;
	uint64_t pull_interval_ms;
	struct httpc_sse *sse;
	struct httpc_req *pull;
	struct event *timer;
	char peer[300];
};

/* A connection of a CBOR stream listener. */
struct conn {
	struct app *app;
	struct cats_stream *st;
	struct conn *next;
	char peer[64];
};

struct slisten {
	struct app *app;
	int fd;
	struct event *ev;
};

struct app {
	struct event_base *base;
	char *conf_path;
	struct sma_conf *c;
	struct sma_keys *k;
	struct sma *core;
	struct sma_uc *uc;
	struct sma_policy *policy;	/* loaded, not yet handed over */
	uint64_t out_failures;
	/* [northbound] key: every record is signed (and carries a nonce) */
	struct cats_key nbkey;
	bool has_nbkey;
	/*
	 * The records for the output stream, written together once the
	 * callback that made them is done (flush_ev) or at 64 KiB: a write
	 * per record cost more than encoding it.  Datagram outputs get one
	 * record per datagram, unbatched (enc reused).
	 */
	struct cats_buf obuf, enc;
	size_t obuf_recs;
	bool batch;
	struct event *flush_ev;
	uint64_t nonce;
	struct cats_dec dec;
	struct httpc *http;

	/* output: a stream, or the C-PS (URLs, the primary first) */
	struct cats_ep to;
	bool to_http;
	const char *urls[MAX_URLS];
	size_t nurls;
	struct sma_nb *nb;
	struct cats_keyring ps_keys;
	struct httpc_req *nb_req;
	struct event *prom_ev;

	/* hierarchical aggregation: subordinate C-SMAs */
	struct cats_cst *sub_cst;
	struct cats_ingest *sub_ing;
	struct cats_keyring sub_keys;
	uint64_t sub_purged;
	struct cats_stream *outs;
	int outfd;
	bool out_broken;

	/* inputs */
	bool use_stdin;
	struct cats_stream *in;
	bool in_eof;
	const char *listen[MAX_LISTEN];
	size_t nlisten;
	struct httpd *push[MAX_LISTEN];
	struct slisten slis[MAX_LISTEN];
	size_t nslis;
	struct conn *conns;
	const char *admin_ep;
	struct httpd *admin;
	struct sci_rt *scis;
	size_t nscis;
	size_t pulls_pending;	/* once mode */

	/* modes */
	bool replay, once, strict, stats, started;
	bool have_now;
	uint64_t start_now;
	bool have_epoch;
	uint64_t epoch;
	const char *until;
	const char *state_path;
	struct sma_state state;
	bool have_state;

	struct event *tick, *sigs[6];
	uint64_t malformed;
	int exit_code;
	bool stopping;
};

static struct app *the_app;

static uint64_t
now_ms(void)
{
	return cats_clock_now();
}

/* ---- output ---- */

static void
stop_loop(struct app *a, int code)
{
	if (a->exit_code == 0)
		a->exit_code = code;
	a->stopping = true;
	event_base_loopbreak(a->base);
}

static void pause_inputs(struct app *a, bool pause);

/* The next nonce: strictly increasing, across restarts too. */
static uint64_t
next_nonce(struct app *a)
{
	uint64_t t = now_ms() * 1000;
	a->nonce = t > a->nonce ? t : a->nonce + 1;
	return a->nonce;
}

/*
 * What a send to the output stream returned: the first failure stops the
 * loop (exit 74); above its high-water mark the inputs pause.
 */
static int
sent(struct app *a, int rc)
{
	if (rc < 0) {
		if (!a->out_broken) {
			cats_errorx("output failed: %s", strerror(errno));
			a->out_broken = true;
			stop_loop(a, CATS_EXIT_IOERR);
		}
		return -1;
	}
	if (rc == 1)
		pause_inputs(a, true);
	return 0;
}

/* Write the batched records; -1 when the output failed. */
static int
flush_out(struct app *a)
{
	if (a->obuf.len == 0 || a->outs == NULL)
		return 0;
	int rc = cats_stream_send(a->outs, a->obuf.p, a->obuf.len);
	size_t recs = a->obuf_recs;
	a->obuf.len = 0;
	a->obuf_recs = 0;
	if (rc < 0)
		a->out_failures += recs;
	return sent(a, rc);
}

static void
on_flush(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	flush_out(arg);
}

static int
emit(void *arg, const struct cats_rec *r)
{
	struct app *a = arg;
	if (a->outs == NULL)
		return 0;
	struct cats_rec signed_rec;
	if (a->has_nbkey) {
		signed_rec = *r;
		CATS_SET(&signed_rec.u.metric, MET, nonce, next_nonce(a));
		if (cats_rec_sign(&signed_rec, &a->nbkey) < 0) {
			cats_errorx("cannot sign a metric record");
			return -1;
		}
		r = &signed_rec;
	}
	if (a->batch && !a->out_broken) {
		if (cats_rec_encode(r, &a->obuf, true) < 0)
			return -1;
		if (a->obuf_recs++ == 0)
			event_active(a->flush_ev, EV_TIMEOUT, 1);
		if (a->obuf.len >= 65536 && flush_out(a) < 0)
			return -1;
		return 0;
	}
	/* (cats_stream_send_rec would malloc a buffer per record) */
	a->enc.len = 0;
	int rc = cats_rec_encode(r, &a->enc, true) < 0 ? -1 :
	    cats_stream_send(a->outs, a->enc.p, a->enc.len);
	return sent(a, rc);
}

static void
out_drained(struct cats_stream *s, void *arg)
{
	(void)s;
	pause_inputs(arg, false);
}

static void
out_eof(struct cats_stream *s, int error, void *arg)
{
	struct app *a = arg;
	(void)s;
	if (error && !a->out_broken) {
		cats_errorx("output failed: %s", strerror(error));
		a->out_broken = true;
		stop_loop(a, CATS_EXIT_IOERR);
	}
}

/* ---- the northbound sender's I/O (cats-northbound(7)) ---- */

static void arm_tick(struct app *a);

static void
nb_done(void *arg, const struct httpc_resp *r)
{
	struct app *a = arg;
	a->nb_req = NULL;
	sma_nb_done(a->nb, r->code, r->status, r->body, r->len, r->error,
	    now_ms());
	arm_tick(a);
}

static int
nb_post(void *arg, const char *url, const uint8_t *body, size_t len)
{
	struct app *a = arg;
	static const char *const hdrs[] = {
		"Accept: application/cbor-seq", NULL };
	struct httpc_req_opts o = { .method = "POST", .url = url,
		.headers = hdrs, .body = body, .len = len,
		.ctype = "application/cbor-seq",
		.timeout_ms = a->c->nb.timeout_ms,
		.connect_timeout_ms = a->c->nb.timeout_ms,
		.max_body = 64u << 20, .ca_file = a->c->ca_file };
	a->nb_req = httpc_request(a->http, &o, nb_done, a);
	return a->nb_req ? 0 : -1;
}

static void
nb_snapshot(void *arg, uint64_t now)
{
	struct app *a = arg;
	sma_uc_snapshot(a->uc, now, CATS_OP_FULL);
}

static void
nb_refresh(void *arg, bool ok)
{
	struct app *a = arg;
	sma_uc_peer_refresh(a->uc, ok);
}

static void
nb_renumber(void *arg, uint64_t above)
{
	struct app *a = arg;
	sma_uc_renumber(a->uc, above);
}

static void
nb_load(void *arg, uint64_t ppm)
{
	struct app *a = arg;
	sma_uc_set_load(a->uc, ppm);
}

/* Operator notification (000 §10.2): the log, and syslog. */
static void
nb_notify(void *arg, int prio, const char *msg)
{
	struct app *a = arg;
	cats_log(prio, "%s", msg);
	if (a->c->nb.notify)
		syslog(LOG_DAEMON | prio, "%s", msg);
	cats_audit("northbound", "state=%s msg=\"%s\"",
	    sma_nb_state_names[sma_nb_status(a->nb)->state], msg);
}

/* ---- subordinate C-SMAs (hierarchical aggregation, 000 §11) ---- */

/* Their table changed: the cache follows. */
static void
sub_hook(void *arg, int what, const struct cats_cst_entry *ce)
{
	struct app *a = arg;
	uint64_t now = now_ms();
	if (what == CATS_CST_REMOVE) {
		sma_remove(a->core, ce->csci_id, SMA_WD_WITHDRAWN, now);
		return;
	}
	if (what == CATS_CST_REFRESH) {
		sma_import_refresh(a->core, ce->csci_id, now);
		return;
	}
	struct cats_entry e;
	memset(&e, 0, sizeof(e));
	e.csci_id = ce->csci_id;
	e.cs_id = ce->cs_id;
	e.has = ce->has;
	e.health = ce->health;
	e.state = ce->state;
	e.gas = ce->gas;
	e.comp_time_ms = ce->comp_time_ms;
	e.price = ce->price;
	e.reputation = ce->reputation;
	e.security_level = ce->security_level;
	e.port = ce->port;
	e.gen = ce->sci_gen;
	e.ts = ce->sci_ts;
	e.locator = ce->locator;
	e.ext.v = ce->ext;
	e.ext.n = ce->next;
	CATS_SET(&e, ENT, ttl_ms, ce->ttl_ms);
	if (sma_import(a->core, &e, ce->site, ce->egress, now) < 0)
		cats_warnx("subordinate %s: entry %s not taken (too many "
		    "CS-IDs)", ce->sma_id, ce->csci_id);
}

static void start(struct app *a);

/* POST /metrics, /update, /withdraw, /retrieve from a subordinate. */
static void
on_sub(struct evhttp_request *req, void *arg)
{
	struct app *a = arg;
	if (!a->started)
		start(a);
	cats_ingest_serve(a->sub_ing, req, now_ms());
	arm_tick(a);
}

/* ---- the core's events ---- */

static void start_pull(struct sci_rt *r);

static struct sci_rt *
find_sci(struct app *a, const char *csci_id)
{
	for (size_t i = 0; i < a->nscis; i++)
		if (strcmp(a->scis[i].csci_id, csci_id) == 0)
			return &a->scis[i];
	return NULL;
}

static void
on_event(void *arg, const struct sma_event *ev)
{
	struct app *a = arg;
	if (ev->kind == SMA_EV_PULL && !a->replay) {
		/* Hybrid mode: a STALE SCI is pulled at once. */
		struct sci_rt *r = find_sci(a, ev->ent->csci_id);
		if (r != NULL && r->pull_url != NULL)
			start_pull(r);
	}
	sma_uc_event(a->uc, ev);
}

/* The controller's records: to the C-PS's sender and to the stream, when
 * there is one (with a C-PS, the stream is a copy of what was queued). */
static int
uc_emit(void *arg, const struct cats_rec *r, int kind)
{
	struct app *a = arg;
	if (a->nb != NULL) {
		if (a->outs != NULL && emit(a, r) < 0)
			a->out_failures++;
		return sma_nb_push(a->nb, r, kind, now_ms());
	}
	if (emit(a, r) < 0) {
		a->out_failures++;
		return -1;
	}
	return 0;
}

/* ---- timers ---- */

/* The earlier of the core's and the controller's timers, 0 if none. */
static uint64_t
earlier(uint64_t x, uint64_t y)
{
	return x == 0 ? y : y == 0 ? x : x < y ? x : y;
}

static uint64_t
next_deadline(const struct app *a)
{
	uint64_t t = earlier(sma_next_deadline(a->core),
	    sma_uc_next_deadline(a->uc));
	if (a->nb != NULL)
		t = earlier(t, sma_nb_next_deadline(a->nb));
	return t;
}

/* Subordinates' entries past their soft state go (once a second). */
static void
sub_purge(struct app *a, uint64_t now)
{
	if (a->sub_cst != NULL && now >= a->sub_purged + 1000) {
		a->sub_purged = now;
		cats_cst_expire(a->sub_cst, now, a->c->grace_ms);
	}
}

static void
arm_tick(struct app *a)
{
	if (a->replay || a->tick == NULL)
		return;
	uint64_t next = next_deadline(a), now = now_ms();
	if (next == 0) {
		evtimer_del(a->tick);
		return;
	}
	uint64_t d = next > now ? next - now : 0;
	struct timeval tv = { (time_t)(d / 1000), (suseconds_t)(d % 1000) *
		1000 };
	evtimer_add(a->tick, &tv);
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct app *a = arg;
	(void)fd;
	(void)what;
	uint64_t now = now_ms();
	sma_tick(a->core, now);
	sma_uc_tick(a->uc, now);
	if (a->nb != NULL)
		sma_nb_tick(a->nb, now);
	sub_purge(a, now);
	arm_tick(a);
}

/* Restore saved state and send the first snapshot, once "now" is known. */
static void
start(struct app *a)
{
	if (a->started)
		return;
	a->started = true;
	uint64_t now = now_ms();
	if (a->have_state) {
		size_t restored = 0, old = 0;
		for (size_t i = 0; i < a->state.n; i++) {
			int rc = sma_restore(a->core, &a->state.v[i], now);
			restored += rc == 1;
			old += rc == 0;
		}
		cats_info("state %s: %zu entries restored, %zu too old",
		    a->state_path, restored, old);
	}
	if (a->once)
		sma_uc_seed(a->uc, now);	/* the C-PS has those */
	else
		sma_uc_snapshot(a->uc, now, CATS_OP_FULL);
	if (a->nb != NULL)
		sma_nb_start(a->nb, now);
	arm_tick(a);
}

/*
 * Replay: run the timers up to t, each with the clock at its own deadline
 * (so that audit lines carry the time of the event), then move the clock.
 */
static void
advance(struct app *a, uint64_t t)
{
	uint64_t next;
	while ((next = next_deadline(a)) != 0 && next <= t) {
		cats_clock_observe(next);
		sma_tick(a->core, next);
		sma_uc_tick(a->uc, next);
		sub_purge(a, next);
	}
	cats_clock_observe(t);
}

/* Replay: the clock follows the records. */
static void
observe(struct app *a, const struct cats_rec *r)
{
	if (!a->replay)
		return;
	uint64_t ts = 0;
	if (r->type == CATS_T_SCI_REPORT)
		ts = r->u.sci.ts;
	else if (r->type == CATS_T_SYNC)
		ts = r->u.sync.ts;
	else if (r->type == CATS_T_METRIC && a->sub_ing != NULL)
		ts = r->u.metric.ts;
	if (ts == 0)
		return;
	if (!a->started)
		cats_clock_observe(ts);
	start(a);
	if (ts > now_ms())
		advance(a, ts);
}

/* ---- reports from streams ---- */

static void
report_line(const char *where, uint64_t index, const struct sma_result *res)
{
	if (res->verdict == SMA_REJECTED)
		cats_errorx("%srecord %" PRIu64 ": %s%s%s", where, index,
		    res->err.field, res->err.field[0] ? ": " : "",
		    res->err.reason);
	else if (res->verdict == SMA_QUARANTINED)
		cats_warnx("%srecord %" PRIu64 ": quarantined as %" PRIu64
		    " (%s)", where, index, res->qid, res->err.reason);
}

/*
 * Decode an item: a stream's item from the tokens the stream scanned it
 * into (every input stream scans into a->dec: cats_stream_decode_into),
 * rather than scanning it a second time.
 */
static int
decode_item(struct app *a, struct cats_stream *s, const uint8_t *p, size_t n,
    struct cats_rec *r, struct cats_err *e)
{
	if (s != NULL)
		return cats_rec_from_toks(&a->dec, r, e);
	return cats_rec_decode(&a->dec, p, n, r, e);
}

/* One record of a stream: consume sci-report and sync, pass the rest. */
static void
stream_item(struct app *a, struct cats_stream *in, const uint8_t *p, size_t n,
    uint64_t index, const char *peer, struct cats_stream *reply)
{
	struct cats_rec r;
	struct cats_err e;
	memset(&e, 0, sizeof(e));
	if (decode_item(a, in, p, n, &r, &e) < 0) {
		char msg[400], q[400];
		a->malformed++;
		cats_errorx("%s", cats_err_fmt(&e, index, msg, sizeof(msg)));
		cats_audit("reject", "src=%s index=%" PRIu64 " status=400 "
		    "reason=\"%s\"", peer, index, cats_quote(msg, q, sizeof(q)));
		if (a->strict)
			stop_loop(a, CATS_EXIT_DATAERR);
		return;
	}
	observe(a, &r);
	if (!a->started)
		start(a);
	uint64_t now = now_ms();
	if (r.type == CATS_T_SYNC) {
		/* A C-PS asks for a full view. */
		sma_uc_snapshot(a->uc, now, CATS_OP_FULL);
		return;
	}
	if (r.type == CATS_T_METRIC && a->sub_ing != NULL) {
		/* A subordinate C-SMA's advertisement (hierarchy). */
		struct cats_buf ans = { 0 };
		int st = cats_ingest_handle(a->sub_ing, CATS_ING_METRICS, p, n,
		    peer, now, &ans);
		if (st != 200)
			cats_warnx("%s: record %" PRIu64 ": subordinate metric "
			    "refused (HTTP %d)", peer, index, st);
		if (reply != NULL)
			cats_stream_send(reply, ans.p, ans.len);
		cats_buf_free(&ans);
		arm_tick(a);
		return;
	}
	if (r.type != CATS_T_SCI_REPORT) {
		if (a->outs == NULL) {
			cats_warnx("%s: record %" PRIu64 ": a %s record has "
			    "nowhere to go (the C-PS takes metric records)",
			    peer, index, cats_type_name(r.type));
		} else if (flush_out(a) < 0 ||
		    cats_stream_send(a->outs, p, n) < 0) {
			stop_loop(a, CATS_EXIT_IOERR);
		}
		return;
	}
	struct sma_src src = { .kind = SMA_SRC_STREAM, .peer = peer,
		.index = index };
	struct sma_result res;
	sma_report(a->core, &r, p, n, &src, now, &res);
	if (reply == NULL)
		report_line("", index, &res);
	if (reply != NULL && res.verdict == SMA_REJECTED) {
		struct cats_rec er;
		cats_rec_init(&er, CATS_T_ERROR);
		er.u.error.code = res.status == 401 || res.status == 403 ?
		    "unauthorized" : "rejected";
		CATS_SET(&er.u.error, ERR, ts, now);
		er.u.error.stage = "cats-sma";
		er.u.error.msg = res.err.reason;
		CATS_SET(&er.u.error, ERR, index, index);
		if (res.err.field[0])
			er.u.error.field = res.err.field;
		cats_stream_send_rec(reply, &er);
	}
	if (res.verdict == SMA_REJECTED && a->strict)
		stop_loop(a, CATS_EXIT_DATAERR);
	arm_tick(a);
}

static void finish(struct app *a);

static void
stdin_item(struct cats_stream *s, const uint8_t *p, size_t n, uint64_t index,
    const struct cats_peer *peer, void *arg)
{
	(void)peer;
	stream_item(arg, s, p, n, index, "stdin", NULL);
}

static void
stdin_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	struct app *a = arg;
	char msg[400], q[400];
	(void)s;
	a->malformed++;
	cats_errorx("%s", cats_err_fmt(e, index, msg, sizeof(msg)));
	cats_audit("reject", "src=stdin index=%" PRIu64 " status=400 "
	    "reason=\"%s\"", index, cats_quote(msg, q, sizeof(q)));
	if (a->strict)
		stop_loop(a, CATS_EXIT_DATAERR);
}

static bool
only_stdin(const struct app *a)
{
	return a->nlisten == 0 && a->nscis == 0 && a->admin_ep == NULL;
}

static void
stdin_eof(struct cats_stream *s, int error, void *arg)
{
	struct app *a = arg;
	(void)s;
	if (error)
		cats_errorx("stdin: %s", strerror(error));
	a->in_eof = true;
	if (a->once && a->pulls_pending == 0)
		finish(a);
	else if (only_stdin(a) && !a->once)
		finish(a);
}

static void
pause_inputs(struct app *a, bool pause)
{
	if (a->in != NULL) {
		if (pause)
			cats_stream_pause(a->in);
		else
			cats_stream_resume(a->in);
	}
	for (struct conn *c = a->conns; c; c = c->next) {
		if (pause)
			cats_stream_pause(c->st);
		else
			cats_stream_resume(c->st);
	}
}

/* ---- CBOR stream listeners (unix:, tcp:) ---- */

static void
conn_item(struct cats_stream *s, const uint8_t *p, size_t n, uint64_t index,
    const struct cats_peer *peer, void *arg)
{
	struct conn *c = arg;
	(void)peer;
	stream_item(c->app, s, p, n, index, c->peer, s);
}

static void
conn_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	struct conn *c = arg;
	char msg[400], q[400];
	struct cats_rec er;
	c->app->malformed++;
	cats_err_fmt(e, index, msg, sizeof(msg));
	cats_audit("reject", "src=%s index=%" PRIu64 " status=400 reason=\"%s\"",
	    c->peer, index, cats_quote(msg, q, sizeof(q)));
	cats_rec_init(&er, CATS_T_ERROR);
	er.u.error.code = "malformed";
	er.u.error.stage = "cats-sma";
	er.u.error.msg = e->reason;
	CATS_SET(&er.u.error, ERR, index, index);
	cats_stream_send_rec(s, &er);
}

static void
conn_eof(struct cats_stream *s, int error, void *arg)
{
	struct conn *c = arg;
	struct app *a = c->app;
	(void)error;
	cats_stream_flush(s);
	for (struct conn **pp = &a->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	cats_stream_free(s);
	free(c);
}

static void
on_accept(evutil_socket_t fd, short what, void *arg)
{
	struct slisten *l = arg;
	struct app *a = l->app;
	(void)what;
	int cfd = accept(fd, NULL, NULL);
	if (cfd < 0)
		return;
	struct conn *c = calloc(1, sizeof(*c));
	static const struct cats_stream_cbs cbs = { conn_item, conn_bad,
		conn_eof, NULL };
	if (c == NULL) {
		close(cfd);
		return;
	}
	c->app = a;
	snprintf(c->peer, sizeof(c->peer), "conn-%d", cfd);
	c->st = cats_stream_new(a->base, cfd, cfd, false, NULL, 0, &cbs, c);
	if (c->st != NULL)
		cats_stream_decode_into(c->st, &a->dec);
	if (c->st == NULL) {
		close(cfd);
		free(c);
		return;
	}
	cats_stream_own(c->st);
	c->next = a->conns;
	a->conns = c;
}

/* ---- HTTP push ---- */

struct push_ctx {
	size_t accepted, quarantined, rejected;
	int status;
	char first[400];
	uint64_t qid;
};

static void
push_result(void *arg, uint64_t index, const struct sma_result *res)
{
	struct push_ctx *x = arg;
	if (res->verdict == SMA_ACCEPTED || res->verdict == SMA_FLAGGED) {
		x->accepted++;
		return;
	}
	if (res->verdict == SMA_QUARANTINED) {
		x->quarantined++;
		if (x->qid == 0)
			x->qid = res->qid;
		return;
	}
	x->rejected++;
	if (x->first[0] == '\0') {
		x->status = res->status;
		snprintf(x->first, sizeof(x->first), "record %" PRIu64 ": %s%s%s",
		    index, res->err.field, res->err.field[0] ? ": " : "",
		    res->err.reason);
	}
}

static void
on_push(struct evhttp_request *req, void *arg)
{
	struct app *a = arg;
	char ct[64], peer[80];
	size_t n;
	httpd_ctype(req, ct, sizeof(ct));
	if (strcmp(ct, "application/cbor") != 0 &&
	    strcmp(ct, "application/cbor-seq") != 0) {
		httpd_error(req, 415, "expected application/cbor or "
		    "application/cbor-seq");
		return;
	}
	const uint8_t *p = httpd_body(req, &n);
	if (p == NULL) {
		httpd_error(req, 400, "empty body");
		return;
	}
	if (!a->started)
		start(a);
	struct sma_src src = { .kind = SMA_SRC_PUSH, .peer = httpd_peer(req,
		peer, sizeof(peer)) };
	struct push_ctx x;
	memset(&x, 0, sizeof(x));
	sma_ingest(a->core, &a->dec, p, n, &src, now_ms(), push_result, &x);
	arm_tick(a);
	if (x.rejected > 0)
		httpd_error(req, x.status, "%zu accepted, %zu quarantined, "
		    "%zu rejected; %s", x.accepted, x.quarantined, x.rejected,
		    x.first);
	else if (x.quarantined > 0)
		httpd_error(req, 202, "%zu accepted, %zu quarantined (first "
		    "as %" PRIu64 ")", x.accepted, x.quarantined, x.qid);
	else
		httpd_error(req, 200, "%zu accepted", x.accepted);
}

static void
on_health(struct evhttp_request *req, void *arg)
{
	(void)arg;
	httpd_error(req, 200, "ok");
}

/* ---- admin ---- */

static void
add_json_line(struct cats_buf *b, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (s != NULL) {
		cats_buf_add(b, s, strlen(s));
		cats_buf_add(b, "\n", 1);
	}
	free(s);
	json_decref(j);
}

static void
on_quarantine(struct evhttp_request *req, void *arg)
{
	struct app *a = arg;
	size_t n;
	const struct sma_qitem *q = sma_quarantine(a->core, &n);
	struct cats_buf b = { 0 };
	struct cats_dec d;
	cats_dec_init(&d, NULL);
	for (size_t i = 0; i < n; i++) {
		struct cats_rec r;
		struct cats_err e;
		json_t *fl = json_array();
		for (int k = 0; k < SMA_NFLAGS; k++)
			if (q[i].flags & (1 << k))
				json_array_append_new(fl,
				    json_string(sma_flag_names[k]));
		json_t *rep = cats_rec_decode(&d, q[i].raw, q[i].len, &r, &e)
		    == 0 ? cats_rec_to_json(&r) : json_null();
		add_json_line(&b, json_pack("{s:I,s:I,s:s,s:I,s:o,s:o}", "id",
		    (json_int_t)q[i].id, "at", (json_int_t)q[i].at, "csci_id",
		    q[i].csci_id, "seq", (json_int_t)q[i].seq, "anomalies", fl,
		    "report", rep));
	}
	cats_dec_free(&d);
	httpd_reply(req, 200, "application/jsonl", b.p, b.len);
	cats_buf_free(&b);
}

/* ?id=N or ?id=all: 0 for all, -1 if bad. */
static int64_t
want_id(struct evhttp_request *req)
{
	char v[32];
	uint64_t id;
	char why[64];
	if (httpd_query(req, "id", v, sizeof(v)) == NULL)
		return -1;
	if (strcmp(v, "all") == 0)
		return 0;
	if (cats_parse_u64(v, 1, CATS_U53, &id, why, sizeof(why)) < 0)
		return -1;
	return (int64_t)id;
}

static void
on_release(struct evhttp_request *req, void *arg)
{
	struct app *a = arg;
	int64_t id = want_id(req);
	if (id < 0) {
		httpd_error(req, 400, "expected ?id=N or ?id=all");
		return;
	}
	int n = sma_quarantine_release(a->core, (uint64_t)id, now_ms());
	arm_tick(a);
	if (n < 0)
		httpd_error(req, 404, "no quarantined report %" PRId64, id);
	else
		httpd_error(req, 200, "released %d", n);
}

static void
on_drop(struct evhttp_request *req, void *arg)
{
	struct app *a = arg;
	int64_t id = want_id(req);
	if (id < 0) {
		httpd_error(req, 400, "expected ?id=N or ?id=all");
		return;
	}
	int n = sma_quarantine_drop(a->core, (uint64_t)id);
	if (n < 0)
		httpd_error(req, 404, "no quarantined report %" PRId64, id);
	else
		httpd_error(req, 200, "dropped %d", n);
}

static void
on_cache(struct evhttp_request *req, void *arg)
{
	struct app *a = arg;
	struct cats_buf b = { 0 };
	const char *fl[SMA_NFLAGS];
	for (const struct sma_svc *v = sma_services(a->core); v; v = v->next) {
		for (const struct sma_entry *e = v->head; e; e = e->svc_next) {
			struct cats_rec r;
			struct cats_entry ent;
			sma_entry_view(e, &ent, fl);
			cats_rec_init(&r, CATS_T_METRIC);
			r.u.metric.op = CATS_OP_FULL;
			r.u.metric.sma_id = a->c->id;
			r.u.metric.epoch = sma_uc_epoch(a->uc);
			r.u.metric.seq = sma_uc_seq(a->uc);
			r.u.metric.ts = now_ms();
			r.u.metric.entries.v = &ent;
			r.u.metric.entries.n = 1;
			json_t *j = cats_rec_to_json(&r);
			json_t *x = j ? json_array_get(json_object_get(j,
			    "entries"), 0) : NULL;
			add_json_line(&b, x ? json_incref(x) : NULL);
			json_decref(j);
		}
	}
	httpd_reply(req, 200, "application/jsonl", b.p, b.len);
	cats_buf_free(&b);
}

/* The advertised view: what the C-PS should hold, as JSON Lines. */
struct view_ctx {
	struct cats_buf *b;
};

static void
view_line(void *arg, const struct cats_entry *e)
{
	struct view_ctx *v = arg;
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_METRIC);
	r.u.metric.op = CATS_OP_FULL;
	r.u.metric.sma_id = "-";
	r.u.metric.entries.v = (struct cats_entry *)e;
	r.u.metric.entries.n = 1;
	json_t *j = cats_rec_to_json(&r);
	json_t *x = j ? json_array_get(json_object_get(j, "entries"), 0) : NULL;
	add_json_line(v->b, x ? json_incref(x) : NULL);
	json_decref(j);
}

static void
on_advertised(struct evhttp_request *req, void *arg)
{
	struct app *a = arg;
	struct cats_buf b = { 0 };
	struct view_ctx v = { &b };
	sma_uc_view(a->uc, view_line, &v);
	httpd_reply(req, 200, "application/jsonl", b.p, b.len);
	cats_buf_free(&b);
}

static void
on_snapshot(struct evhttp_request *req, void *arg)
{
	struct app *a = arg;
	sma_uc_snapshot(a->uc, now_ms(), CATS_OP_FULL);
	httpd_error(req, 200, "snapshot sent");
}

static json_t *stats_json(struct app *a);

static void
on_stats(struct evhttp_request *req, void *arg)
{
	struct cats_buf b = { 0 };
	add_json_line(&b, stats_json(arg));
	httpd_reply(req, 200, "application/json", b.p, b.len);
	cats_buf_free(&b);
}

/* ---- pull and SSE ---- */

static void
pull_done(void *arg, const struct httpc_resp *resp)
{
	struct sci_rt *r = arg;
	struct app *a = r->app;
	r->pull = NULL;
	if (resp->code != 0 || resp->status != 200) {
		if (resp->code != 0)
			cats_warnx("pull %s: %s", r->csci_id, resp->error);
		else
			cats_warnx("pull %s: HTTP status %ld", r->csci_id,
			    resp->status);
	} else {
		struct sma_src src = { .kind = SMA_SRC_PULL, .expect =
			r->csci_id, .peer = r->peer };
		struct push_ctx x;
		memset(&x, 0, sizeof(x));
		if (!a->started)
			start(a);
		sma_ingest(a->core, &a->dec, resp->body, resp->len, &src,
		    now_ms(), push_result, &x);
		if (x.rejected && x.status != 409)
			cats_warnx("pull %s: %s", r->csci_id, x.first);
		arm_tick(a);
	}
	if (a->once && a->pulls_pending > 0 && --a->pulls_pending == 0 &&
	    (a->in == NULL || a->in_eof))
		finish(a);
}

static void
start_pull(struct sci_rt *r)
{
	struct app *a = r->app;
	if (r->pull != NULL || r->pull_url == NULL)
		return;
	static const char *const hdrs[] = { "Accept: application/cbor", NULL };
	struct httpc_req_opts o = { .url = r->pull_url, .headers = hdrs,
		.timeout_ms = a->c->pull_timeout_ms,
		.max_body = a->c->max_body, .ca_file = a->c->ca_file };
	r->pull = httpc_request(a->http, &o, pull_done, r);
	if (r->pull == NULL)
		cats_warnx("pull %s: cannot start", r->csci_id);
}

static void
on_pull_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	start_pull(arg);
}

static void
sse_event(void *arg, const struct httpc_sse_event *ev)
{
	struct sci_rt *r = arg;
	struct app *a = r->app;
	if (strcmp(ev->type, "sci-report") != 0 &&
	    strcmp(ev->type, "message") != 0)
		return;
	uint8_t buf[65536];
	long n = cats_b64url_decode(ev->data, ev->len, buf, sizeof(buf));
	struct sma_src src = { .kind = SMA_SRC_SSE, .expect = r->csci_id,
		.peer = r->peer };
	struct push_ctx x;
	memset(&x, 0, sizeof(x));
	if (!a->started)
		start(a);
	if (n <= 0) {
		cats_warnx("sse %s: event %s: data is not base64url CBOR",
		    r->csci_id, ev->id);
		cats_audit("reject", "src=%s index=0 status=400 reason=\"event "
		    "data is not base64url\"", r->peer);
		return;
	}
	sma_ingest(a->core, &a->dec, buf, (size_t)n, &src, now_ms(),
	    push_result, &x);
	if (x.rejected && x.status != 409)
		cats_warnx("sse %s: %s", r->csci_id, x.first);
	arm_tick(a);
}

static void
sse_state(void *arg, bool connected, const char *why, uint64_t retry_ms)
{
	struct sci_rt *r = arg;
	if (connected)
		cats_info("sse %s: connected to %s", r->csci_id, r->sse_url);
	else
		cats_warnx("sse %s: %s; retrying in %" PRIu64 " ms", r->csci_id,
		    why, retry_ms);
}

static void
sci_stop(struct sci_rt *r)
{
	if (r->sse)
		httpc_sse_close(r->sse);
	if (r->pull)
		httpc_cancel(r->pull);
	if (r->timer)
		event_free(r->timer);
	free(r->csci_id);
	free(r->pull_url);
	free(r->sse_url);
	memset(r, 0, sizeof(*r));
}

static void
scis_start(struct app *a, const char *const *last_ids)
{
	a->nscis = a->c->nscis;
	a->scis = calloc(a->nscis ? a->nscis : 1, sizeof(*a->scis));
	if (a->scis == NULL) {
		cats_errorx("out of memory");
		exit(CATS_EXIT_FAIL);
	}
	for (size_t i = 0; i < a->nscis; i++) {
		const struct sma_cfg_sci *ci = &a->c->scis[i];
		struct sci_rt *r = &a->scis[i];
		r->app = a;
		r->csci_id = strdup(ci->csci_id);
		r->pull_url = ci->pull ? strdup(ci->pull) : NULL;
		r->sse_url = ci->sse ? strdup(ci->sse) : NULL;
		r->pull_interval_ms = ci->pull_interval_ms;
		snprintf(r->peer, sizeof(r->peer), "%s", ci->sse ? ci->sse
		    : ci->pull ? ci->pull : ci->csci_id);
		if (a->replay)
			continue;
		if (r->sse_url && !a->once) {
			struct httpc_sse_opts o = { .url = r->sse_url,
				.stall_ms = a->c->stall_ms,
				.backoff_max_ms = a->c->backoff_max_ms,
				.max_event = 4 * a->c->max_body / 3 + 4,
				.ca_file = a->c->ca_file,
				.last_id = last_ids ? last_ids[i] : NULL };
			static const struct httpc_sse_cbs cbs = { sse_event,
				sse_state };
			r->sse = httpc_sse_open(a->http, &o, &cbs, r);
		}
		if (r->pull_url && r->pull_interval_ms && !a->once) {
			r->timer = event_new(a->base, -1, EV_PERSIST,
			    on_pull_timer, r);
			struct timeval tv = { (time_t)(r->pull_interval_ms /
				1000), (suseconds_t)(r->pull_interval_ms %
				1000) * 1000 };
			evtimer_add(r->timer, &tv);
		}
	}
}

/* ---- statistics ---- */

static json_t *
stats_json(struct app *a)
{
	const struct sma_stats *st = sma_stats(a->core);
	const struct sma_uc_stats *u = sma_uc_stats(a->uc);
	/* Requests refused by the HTTP layer (413, 408: lib/net/httpd.h). */
	struct httpd_stats hs = { 0 };
	for (size_t i = 0; i <= a->nlisten; i++) {
		struct httpd *h = i < a->nlisten ? a->push[i] : a->admin;
		if (h != NULL) {
			hs.too_large += httpd_stats(h)->too_large;
			hs.too_slow += httpd_stats(h)->too_slow;
		}
	}
	struct cats_kv kv[] = {
		{ "reports", st->reports }, { "accepted", st->accepted },
		{ "flagged", st->flagged }, { "quarantined", st->quarantined },
		{ "rejected", st->rejected }, { "rejected_auth", st->rej_auth },
		{ "rejected_range", st->rej_range },
		{ "rejected_sequence", st->rej_seq },
		{ "rejected_other", st->rej_other },
		{ "malformed", a->malformed },
		{ "http_too_large", hs.too_large },
		{ "http_too_slow", hs.too_slow },
		{ "tokens_verified", st->tok_verified },
		{ "tokens_cached", st->tok_cached },
		{ "signatures_verified", st->sig_verified },
		{ "entries", sma_count(a->core) }, { "added", st->added },
		{ "evicted", st->evicted }, { "stale", st->stale },
		{ "failed", st->failed }, { "recovered", st->recovered },
		{ "pulls_wanted", st->pulls }, { "released", st->released },
		{ "quarantine_dropped", st->dropped_q },
		{ "records_out", u->records },
		{ "output_failures", a->out_failures },
		{ "full_sent", u->full },
		{ "heartbeats_sent", u->heartbeats },
		{ "deltas_sent", u->deltas },
		{ "withdrawals_sent", u->withdraws },
		{ "refreshes_sent", u->refreshes },
		{ "entries_sent", u->entries_sent },
		{ "trigger_discovery", u->trig_discovery },
		{ "trigger_withdrawal", u->trig_withdraw },
		{ "trigger_health", u->trig_health },
		{ "trigger_locator", u->trig_locator },
		{ "trigger_metric", u->trig_metric },
		{ "trigger_policy", u->trig_policy },
		{ "suppressed_threshold", u->sup_threshold },
		{ "suppressed_interval", u->sup_interval },
		{ "suppressed_window", u->sup_window },
		{ "suppressed_dampening", u->sup_damp },
		{ "suppressed_bucket", u->sup_bucket },
		{ "coalesced", u->coalesced },
		{ "optional_omitted", u->omitted },
		{ "damp_suppressed", u->damp_suppressed },
		{ "damp_observed", u->damp_observed },
		{ "damp_reused", u->damp_reused },
		{ "damped", u->damped },
		{ "pending", u->pending },
		{ "last_full", u->last_full },
		{ "audit_lines", cats_audit_count() },
		{ "advertised", sma_uc_count(a->uc) },
	};
	/* The sync status (000 §9): what the sender says. */
	static const struct sma_nb_status none;
	const struct sma_nb_status *n = a->nb ? sma_nb_status(a->nb) : &none;
	struct cats_kv sync[] = {
		{ "sync_state", a->nb ? (uint64_t)n->state : 0 },
		{ "sync_url", n->url },
		{ "sync_queued", n->queued },
		{ "sync_queue_max", n->queue_max },
		{ "sync_dropped", n->dropped },
		{ "sync_superseded", n->superseded },
		{ "sync_refused", n->refused },
		{ "sync_requests", n->requests },
		{ "sync_failures", n->failures },
		{ "sync_partitions", n->partitions },
		{ "sync_attempts", n->attempts },
		{ "sync_backoff_ms", n->backoff_ms },
		{ "sync_records_acked", n->records_acked },
		{ "sync_deltas_acked", n->deltas_acked },
		{ "sync_withdrawals_acked", n->withdrawals_acked },
		{ "sync_snapshots_acked", n->snapshots_acked },
		{ "sync_refreshes_acked", n->refreshes_acked },
		{ "sync_bytes_sent", n->bytes_sent },
		{ "sync_full", n->full_syncs },
		{ "sync_incremental", n->incremental_syncs },
		{ "sync_full_requested", n->full_requested },
		{ "sync_last_ack", n->last_ack },
		{ "sync_last_full", a->nb ? n->last_full : u->last_full },
		{ "sync_acked_seq", n->acked_seq },
		{ "sync_peer_epoch", n->ps_epoch },
		{ "sync_peer_restarts", n->ps_restarts },
	};
	struct cats_kv all[CATS_ARRAY_LEN(kv) + CATS_ARRAY_LEN(sync)];
	memcpy(all, kv, sizeof(kv));
	memcpy(all + CATS_ARRAY_LEN(kv), sync, sizeof(sync));
	struct cats_rec r;
	cats_stats_rec(&r, "cats-sma", a->c->id, all, CATS_ARRAY_LEN(all),
	    now_ms());
	return cats_rec_to_json(&r);
}

/*
 * The stats record as a node_exporter textfile: cats_sma_<counter>
 * {sma_id="..."}, written to FILE.tmp and renamed (atomic for the
 * collector).
 */
static void
write_prom(struct app *a)
{
	const char *path = a->c->nb.prometheus;
	if (path == NULL)
		return;
	json_t *j = stats_json(a);
	json_t *cs = j ? json_object_get(j, "counters") : NULL;
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = cs ? fopen(tmp, "we") : NULL;
	if (f == NULL) {
		cats_warnx("prometheus %s: %s", tmp, strerror(errno));
		json_decref(j);
		return;
	}
	char id[CATS_ID + 1];
	cats_quote(a->c->id, id, sizeof(id));
	const char *k;
	json_t *v;
	json_object_foreach(cs, k, v) {
		/* Counters grow; gauges (states, sizes, times) go both ways. */
		static const char *const gauges[] = { "entries", "damped",
			"pending", "advertised", "sync_state", "sync_url",
			"sync_queued", "sync_queue_max", "sync_backoff_ms",
			"sync_acked_seq", "sync_peer_epoch", NULL };
		bool gauge = false, time = strcmp(k, "last_full") == 0 ||
		    strcmp(k, "sync_last_ack") == 0 ||
		    strcmp(k, "sync_last_full") == 0;
		for (size_t i = 0; gauges[i] != NULL; i++)
			gauge |= strcmp(k, gauges[i]) == 0;
		uint64_t x = (uint64_t)json_integer_value(v);
		if (time) {
			fprintf(f, "# HELP cats_sma_%s_seconds %s, Unix time\n"
			    "# TYPE cats_sma_%s_seconds gauge\n"
			    "cats_sma_%s_seconds{sma_id=\"%s\"} %" PRIu64 ".%03"
			    PRIu64 "\n", k, k, k, k, id, x / 1000, x % 1000);
			continue;
		}
		const char *sfx = gauge ? "" : "_total";
		fprintf(f, "# HELP cats_sma_%s%s cats-sma(1) STATISTICS %s\n"
		    "# TYPE cats_sma_%s%s %s\ncats_sma_%s%s{sma_id=\"%s\"} %"
		    PRIu64 "\n", k, sfx, k, k, sfx, gauge ? "gauge" : "counter",
		    k, sfx, id, x);
	}
	json_decref(j);
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		cats_warnx("prometheus %s: %s", path, strerror(errno));
		unlink(tmp);
	}
}

static void
on_prom(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	write_prom(arg);
}

static void
print_stats(struct app *a)
{
	json_t *j = stats_json(a);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	if (s != NULL)
		fprintf(stderr, "%s\n", s);
	free(s);
	json_decref(j);
}

/* ---- configuration ---- */

/* The rule file of a configuration (NULL and 0 when it names none). */
static int
load_policy(const struct sma_conf *c, struct sma_policy **pp)
{
	char err[600];
	*pp = NULL;
	if (c->pol.rules == NULL)
		return 0;
	if ((*pp = sma_policy_load(c->pol.rules, err, sizeof(err))) == NULL) {
		char q[600];
		cats_errorx("%s", err);
		cats_audit("config-refused", "file=%s reason=\"%s\"",
		    c->pol.rules, cats_quote(err, q, sizeof(q)));
		return -1;
	}
	return 0;
}

static int
load_config(const char *path, struct sma_conf **cp, struct sma_keys **kp,
    int *code)
{
	char err[600];
	struct sma_conf *c = calloc(1, sizeof(*c));
	struct sma_keys *k = calloc(1, sizeof(*k));
	if (c == NULL || k == NULL) {
		free(c);
		free(k);
		*code = CATS_EXIT_FAIL;
		cats_errorx("out of memory");
		return -1;
	}
	if (sma_conf_load(c, path, err, sizeof(err)) < 0) {
		char q[600];
		cats_errorx("%s", err);
		cats_audit("config-refused", "file=%s reason=\"%s\"", path,
		    cats_quote(err, q, sizeof(q)));
		free(c);
		free(k);
		*code = CATS_EXIT_CONFIG;
		return -1;
	}
	if (sma_keys_load(k, c, err, sizeof(err)) < 0) {
		char q[600];
		cats_errorx("%s", err);
		cats_audit("config-refused", "file=%s reason=\"%s\"", path,
		    cats_quote(err, q, sizeof(q)));
		sma_conf_free(c);
		free(c);
		free(k);
		*code = CATS_EXIT_NOPERM;
		return -1;
	}
	*cp = c;
	*kp = k;
	return 0;
}

static void
reload(struct app *a)
{
	struct sma_conf *c;
	struct sma_keys *k;
	struct sma_policy *pol;
	int code;
	if (load_config(a->conf_path, &c, &k, &code) < 0) {
		cats_warnx("reload refused; the running configuration stays");
		return;
	}
	if (a->once)
		c->uc.control = false;
	if (load_policy(c, &pol) < 0) {
		cats_warnx("reload refused; the running configuration and "
		    "policy stay");
		sma_conf_free(c);
		free(c);
		sma_keys_free(k);
		free(k);
		return;
	}
	if (c->audit && cats_audit_open(c->audit) < 0) {
		cats_warnx("reload refused: audit %s: %s", c->audit,
		    strerror(errno));
		sma_conf_free(c);
		free(c);
		sma_keys_free(k);
		free(k);
		return;
	}
	/* Event streams keep their position across the reload. */
	const char **ids = calloc(c->nscis ? c->nscis : 1, sizeof(*ids));
	char (*idbuf)[256] = calloc(c->nscis ? c->nscis : 1, 256);
	for (size_t i = 0; ids && idbuf && i < c->nscis; i++) {
		struct sci_rt *r = find_sci(a, c->scis[i].csci_id);
		if (r && r->sse && c->scis[i].sse &&
		    strcmp(r->sse_url, c->scis[i].sse) == 0) {
			cats_strlcpy(idbuf[i], httpc_sse_last_id(r->sse), 256);
			ids[i] = idbuf[i];
		}
	}
	for (size_t i = 0; i < a->nscis; i++)
		sci_stop(&a->scis[i]);
	free(a->scis);
	a->scis = NULL;
	a->nscis = 0;
	struct sma_conf *oc = a->c;
	struct sma_keys *ok = a->k;
	a->c = c;
	a->k = k;
	sma_uc_reconf(a->uc, c, now_ms());
	if (a->nb != NULL)
		sma_nb_reconf(a->nb, &c->nb);
	for (size_t i = 0; a->sub_ing != NULL && i < c->nsubs; i++) {
		char err[200];
		cats_ingest_allow(a->sub_ing, c->subs[i].sma_id,
		    (const char *const *)c->subs[i].cs_ids,
		    c->subs[i].ncs_ids);
		if (cats_cst_scope(a->sub_cst, c->subs[i].sma_id,
		    c->subs[i].locators, c->subs[i].egresses, err,
		    sizeof(err)) < 0)
			cats_warnx("[subordinate \"%s\"]: %s",
			    c->subs[i].sma_id, err);
	}
	sma_reconf(a->core, c, k, now_ms());
	sma_conf_free(oc);
	free(oc);
	sma_keys_free(ok);
	free(ok);
	scis_start(a, ids);
	free(ids);
	free(idbuf);
	/* The Policy Change Trigger: every entry evaluated again. */
	sma_uc_set_policy(a->uc, pol, now_ms());
	cats_audit("policy", "file=%s rules=%zu windows=%zu",
	    c->pol.rules ? c->pol.rules : "-", sma_policy_rules(pol),
	    sma_policy_windows(pol));
	arm_tick(a);
	cats_audit("config", "file=%s result=reloaded scis=%zu", a->conf_path,
	    a->nscis);
	cats_info("configuration reloaded");
}

/* ---- the end ---- */

static void
finish(struct app *a)
{
	if (a->stopping)
		return;
	if (!a->started)
		start(a);
	uint64_t now = now_ms();
	if (a->replay && a->until != NULL) {
		uint64_t t = 0;
		char why[128];
		if (a->until[0] == '+') {
			uint64_t d;
			if (cats_parse_ms(a->until + 1, &d, why, sizeof(why)) == 0)
				t = now + d;
		} else {
			cats_parse_u64(a->until, 0, CATS_U53, &t, why,
			    sizeof(why));
		}
		if (t > now) {
			advance(a, t);
			now = t;
		}
	}
	sma_tick(a->core, now);
	sma_uc_tick(a->uc, now);
	sma_uc_drain(a->uc, now);
	if (a->once && a->have_state) {
		/* Saved entries too old to restore, and not heard from in
		 * this run, are withdrawn. */
		for (size_t i = 0; i < a->state.n; i++) {
			const struct cats_entry *e = &a->state.v[i];
			if (sma_lookup(a->core, e->csci_id) != NULL)
				continue;
			if (e->state == CATS_SCI_FAILED)
				continue;
			sma_uc_withdraw_saved(a->uc, e, SMA_WD_EXPIRED, now);
			cats_audit("state", "csci=%s cs=%s from=%s to=FAILED "
			    "reason=state-too-old", e->csci_id, e->cs_id,
			    cats_sci_state_names[e->state]);
		}
	}
	a->stopping = true;
	event_base_loopbreak(a->base);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct app *a = arg;
	(void)what;
	switch (sig) {
	case SIGHUP:
		reload(a);
		break;
	case SIGUSR1:
		if (!a->started)
			start(a);
		sma_uc_snapshot(a->uc, now_ms(), CATS_OP_FULL);
		break;
	case SIGUSR2:
		print_stats(a);
		write_prom(a);
		break;
	default:
		cats_info("stopping on signal %d", (int)sig);
		finish(a);
		break;
	}
}

/* ---- main ---- */

static void
open_output(struct app *a, const char *spec)
{
	char err[300];
	if (spec == NULL && a->nurls > 0)
		return;		/* only the C-PS */
	if (cats_ep_parse(spec ? spec : "-", &a->to, err, sizeof(err)) < 0) {
		cats_errorx("--to: %s", err);
		exit(CATS_EXIT_USAGE);
	}
	int fd = cats_ep_open(&a->to, true, err, sizeof(err));
	if (fd < 0) {
		cats_errorx("--to: %s", err);
		exit(CATS_EXIT_IOERR);
	}
	static const struct cats_stream_cbs cbs = { NULL, NULL, out_eof,
		out_drained };
	a->outfd = fd;
	a->outs = cats_stream_new(a->base, -1, fd, cats_ep_is_dgram(&a->to),
	    NULL, 0, &cbs, a);
	a->flush_ev = event_new(a->base, -1, 0, on_flush, a);
	a->batch = !cats_ep_is_dgram(&a->to) && a->flush_ev != NULL;
	if (a->outs == NULL) {
		cats_errorx("out of memory");
		exit(CATS_EXIT_FAIL);
	}
	if (fd > 2)
		cats_stream_own(a->outs);
}

static void
open_listeners(struct app *a)
{
	char err[400];
	struct httpd_opts ho = { .max_body = a->c->max_body,
		.timeout_ms = a->c->http_timeout_ms };
	for (size_t i = 0; i < a->nlisten; i++) {
		struct cats_ep ep;
		if (cats_ep_parse(a->listen[i], &ep, err, sizeof(err)) < 0) {
			cats_errorx("--listen: %s", err);
			exit(CATS_EXIT_USAGE);
		}
		if (ep.kind == CATS_EP_HTTP || ep.kind == CATS_EP_HTTPS) {
			struct httpd *h = httpd_new(a->base, a->listen[i], &ho,
			    err, sizeof(err));
			if (h == NULL) {
				cats_errorx("--listen: %s", err);
				exit(CATS_EXIT_FAIL);
			}
			httpd_route(h, "/reports", HTTPD_POST, on_push, a);
			httpd_route(h, "/health", HTTPD_GET, on_health, a);
			for (int k = 0; a->sub_ing && k < CATS_ING__N; k++)
				httpd_route(h, cats_ingest_paths[k], HTTPD_POST,
				    on_sub, a);
			a->push[i] = h;
			continue;
		}
		if (ep.kind != CATS_EP_UNIX && ep.kind != CATS_EP_TCP) {
			cats_errorx("--listen: %s: expected http://, unix: or "
			    "tcp:", a->listen[i]);
			exit(CATS_EXIT_USAGE);
		}
		int fd = cats_ep_listen(&ep, err, sizeof(err));
		if (fd < 0) {
			cats_errorx("--listen: %s", err);
			exit(CATS_EXIT_FAIL);
		}
		struct slisten *l = &a->slis[a->nslis++];
		l->app = a;
		l->fd = fd;
		l->ev = event_new(a->base, fd, EV_READ | EV_PERSIST, on_accept,
		    l);
		event_add(l->ev, NULL);
	}
	if (a->admin_ep != NULL) {
		a->admin = httpd_new(a->base, a->admin_ep, &ho, err,
		    sizeof(err));
		if (a->admin == NULL) {
			cats_errorx("--admin: %s", err);
			exit(CATS_EXIT_FAIL);
		}
		httpd_route(a->admin, "/quarantine", HTTPD_GET, on_quarantine, a);
		httpd_route(a->admin, "/quarantine/release", HTTPD_POST,
		    on_release, a);
		httpd_route(a->admin, "/quarantine/drop", HTTPD_POST, on_drop, a);
		httpd_route(a->admin, "/cache", HTTPD_GET, on_cache, a);
		httpd_route(a->admin, "/advertised", HTTPD_GET, on_advertised,
		    a);
		httpd_route(a->admin, "/snapshot", HTTPD_POST, on_snapshot, a);
		httpd_route(a->admin, "/stats", HTTPD_GET, on_stats, a);
	}
}

/* The sender to the C-PS URLs (-t http..., [northbound] fallback). */
static int
setup_northbound(struct app *a, uint64_t epoch)
{
	const struct sma_nb_conf *n = &a->c->nb;
	if (a->nurls == 0)
		return 0;
	for (size_t i = 0; i < n->nfallback && a->nurls < MAX_URLS; i++)
		a->urls[a->nurls++] = n->fallback[i];
	char err[600];
	if (n->ps_keys != NULL && cats_keyring_load(&a->ps_keys, n->ps_keys,
	    err, sizeof(err)) < 0) {
		cats_errorx("%s", err);
		return CATS_EXIT_NOPERM;
	}
	if (!a->has_nbkey)
		cats_warnx("[northbound] no key: advertisements are not "
		    "authenticated and a C-PS will refuse them");
	else if (a->nbkey.kind != CATS_KEY_PSK && n->ps_keys == NULL)
		cats_warnx("[northbound] no ps-keys: the C-PS's answers are "
		    "trusted on TLS alone");
	if (n->notify)
		openlog("cats-sma", LOG_PID, LOG_DAEMON);
	static const struct sma_nb_io io = { nb_post, nb_snapshot,
		nb_refresh, nb_load, nb_notify, nb_renumber };
	struct sma_nb_params p = { .urls = a->urls, .nurls = a->nurls,
		.sma_id = a->c->id, .epoch = epoch, .seq = sma_uc_seq(a->uc),
		.key = a->has_nbkey ? &a->nbkey : NULL,
		.ps_keys = n->ps_keys ? &a->ps_keys : NULL, .c = n,
		.seed = epoch ^ (uint64_t)getpid() };
	if ((a->nb = sma_nb_new(&p, &io, a)) == NULL) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	return 0;
}

/* Subordinate C-SMAs ([hierarchy], [subordinate]). */
static int
setup_hierarchy(struct app *a)
{
	const struct sma_conf *c = a->c;
	if (c->nsubs == 0)
		return 0;
	char err[600];
	if (cats_keyring_load(&a->sub_keys, c->sub_keys, err,
	    sizeof(err)) < 0) {
		cats_errorx("%s", err);
		return CATS_EXIT_NOPERM;
	}
	a->sub_cst = cats_cst_new(c->advert_ttl_ms ? c->advert_ttl_ms :
	    180000, c->max_entries);
	struct cats_ingest_conf ic = { .keys = &a->sub_keys,
		.window_ms = c->sub_window_ms, .ps_id = c->id,
		.ps_epoch = a->replay ? 1 : now_ms(), .refresh = true };
	if (a->sub_cst == NULL ||
	    (a->sub_ing = cats_ingest_new(&ic, a->sub_cst)) == NULL) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	cats_cst_set_hook(a->sub_cst, sub_hook, a);
	for (size_t i = 0; i < c->nsubs; i++) {
		if (cats_ingest_allow(a->sub_ing, c->subs[i].sma_id,
		    (const char *const *)c->subs[i].cs_ids,
		    c->subs[i].ncs_ids) < 0) {
			cats_errorx("out of memory");
			return CATS_EXIT_FAIL;
		}
		/* What a subordinate may advertise, it alone passes on. */
		if (cats_cst_scope(a->sub_cst, c->subs[i].sma_id,
		    c->subs[i].locators, c->subs[i].egresses, err,
		    sizeof(err)) < 0) {
			cats_errorx("[subordinate \"%s\"]: %s",
			    c->subs[i].sma_id, err);
			return CATS_EXIT_CONFIG;
		}
	}
	return 0;
}

static uint64_t
opt_u64(const char *opt, const char *v, uint64_t min, uint64_t max)
{
	uint64_t x;
	char why[128];
	if (cats_parse_u64(v, min, max, &x, why, sizeof(why)) < 0) {
		cats_errorx("%s: %s", opt, why);
		exit(CATS_EXIT_USAGE);
	}
	return x;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "admin", required_argument, NULL, 'a' },
		{ "config", required_argument, NULL, 'c' },
		{ "epoch", required_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ "listen", required_argument, NULL, 'l' },
		{ "now", required_argument, NULL, 'N' },
		{ "once", no_argument, NULL, '1' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "replay", no_argument, NULL, 'r' },
		{ "state", required_argument, NULL, 'T' },
		{ "stats", no_argument, NULL, 's' },
		{ "stdin", no_argument, NULL, 'i' },
		{ "strict", no_argument, NULL, 'S' },
		{ "to", required_argument, NULL, 't' },
		{ "until", required_argument, NULL, 'u' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct app app;
	struct app *a = &app;
	const char *to = NULL;
	bool force_stdin = false;
	int ch, verbosity = 1;

	cats_tool_init(argv[0]);
	a->outfd = -1;
	while ((ch = getopt_long(argc, argv, "1a:c:E:hil:N:qrSsT:t:u:vV",
	    longopts, NULL)) != -1) {
		switch (ch) {
		case '1':
			a->once = true;
			break;
		case 'a':
			a->admin_ep = optarg;
			break;
		case 'c':
			a->conf_path = optarg;
			break;
		case 'E':
			a->have_epoch = true;
			a->epoch = opt_u64("--epoch", optarg, 0, CATS_U53);
			break;
		case 'h':
			fputs(usage_text, stdout);
			return CATS_EXIT_OK;
		case 'i':
			force_stdin = true;
			break;
		case 'l':
			if (a->nlisten == MAX_LISTEN) {
				cats_errorx("at most %d --listen", MAX_LISTEN);
				return CATS_EXIT_USAGE;
			}
			a->listen[a->nlisten++] = optarg;
			break;
		case 'N':
			a->have_now = true;
			a->start_now = opt_u64("--now", optarg, 1, CATS_U53);
			break;
		case 'q':
			verbosity = 0;
			break;
		case 'r':
			a->replay = true;
			break;
		case 'S':
			a->strict = true;
			break;
		case 's':
			a->stats = true;
			break;
		case 'T':
			a->state_path = optarg;
			break;
		case 't':
			if (strncmp(optarg, "http://", 7) == 0 ||
			    strncmp(optarg, "https://", 8) == 0) {
				if (a->nurls == MAX_URLS) {
					cats_errorx("at most %d C-PS URLs",
					    MAX_URLS);
					return CATS_EXIT_USAGE;
				}
				a->urls[a->nurls++] = optarg;
				a->to_http = true;
			} else if (to != NULL) {
				cats_errorx("--to: one stream output (and any "
				    "number of C-PS URLs)");
				return CATS_EXIT_USAGE;
			} else {
				to = optarg;
			}
			break;
		case 'u':
			a->until = optarg;
			break;
		case 'v':
			verbosity++;
			break;
		case 'V':
			cats_tool_version();
			return CATS_EXIT_OK;
		default:
			usage();
		}
	}
	if (optind != argc || a->conf_path == NULL)
		usage();
	cats_log_verbosity(verbosity);
	if (a->replay) {
		cats_clock_set_mode(CATS_CLOCK_REPLAY);
		if (a->have_now)
			cats_clock_set(a->start_now);
	} else if (a->have_now || a->until) {
		cats_errorx("--now and --until go with --replay");
		return CATS_EXIT_USAGE;
	}
	if (a->replay && a->nurls > 0) {
		cats_errorx("--replay writes to a stream, not to a C-PS");
		return CATS_EXIT_USAGE;
	}
	if (a->replay && (a->nlisten > 0 || a->admin_ep != NULL)) {
		cats_errorx("--replay reads recorded reports from stdin only");
		return CATS_EXIT_USAGE;
	}

	int code;
	if (load_config(a->conf_path, &a->c, &a->k, &code) < 0)
		return code;
	if (a->once)
		a->c->uc.control = false;	/* each run sends every change */
	if (load_policy(a->c, &a->policy) < 0)
		return CATS_EXIT_CONFIG;
	if (a->c->nb.key != NULL) {
		char err[600];
		if (cats_key_load(&a->nbkey, a->c->nb.key, -1, err,
		    sizeof(err)) < 0 || a->nbkey.kind ==
		    CATS_KEY_ED25519_PUBLIC) {
			cats_errorx("%s", a->nbkey.kind ==
			    CATS_KEY_ED25519_PUBLIC ? "[northbound] key: a "
			    "public key cannot sign" : err);
			return CATS_EXIT_NOPERM;
		}
		a->has_nbkey = true;
	}
	if (a->c->audit && cats_audit_open(a->c->audit) < 0) {
		cats_errorx("audit %s: %s", a->c->audit, strerror(errno));
		return CATS_EXIT_CONFIG;
	}
	if (a->state_path != NULL) {
		char err[600];
		int rc = sma_state_load(&a->state, a->state_path, err,
		    sizeof(err));
		if (rc < 0) {
			cats_errorx("%s", err);
			return CATS_EXIT_NOINPUT;
		}
		a->have_state = rc == 0;
	}
	uint64_t epoch = a->replay ? 1 : now_ms(), seq = 0;
	if (a->have_state) {
		epoch = a->state.epoch;
		seq = a->state.seq;
	}
	if (a->have_epoch)
		epoch = a->epoch;

	a->base = event_base_new();
	a->http = httpc_new(a->base);
	if (a->base == NULL || a->http == NULL) {
		cats_errorx("cannot set up the event loop");
		return CATS_EXIT_FAIL;
	}
	the_app = a;
	cats_dec_init(&a->dec, NULL);
	open_output(a, to);
	a->uc = sma_uc_new(a->c, NULL, epoch, seq, uc_emit, a);
	a->core = sma_new(a->c, a->k, on_event, a);
	if (a->uc == NULL || a->core == NULL) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	sma_uc_set_core(a->uc, a->core);
	if (a->policy != NULL) {
		sma_uc_set_policy(a->uc, a->policy, now_ms());
		a->policy = NULL;
	}
	if ((code = setup_northbound(a, epoch)) != 0 ||
	    (code = setup_hierarchy(a)) != 0)
		return code;
	a->tick = evtimer_new(a->base, on_tick, a);
	static const int sigs[] = { SIGHUP, SIGUSR1, SIGUSR2, SIGTERM, SIGINT };
	for (size_t i = 0; i < CATS_ARRAY_LEN(sigs); i++) {
		a->sigs[i] = evsignal_new(a->base, sigs[i], on_signal, a);
		evsignal_add(a->sigs[i], NULL);
	}
	scis_start(a, NULL);
	open_listeners(a);
	if (a->c->nb.prometheus != NULL && !a->replay && !a->once) {
		a->prom_ev = event_new(a->base, -1, EV_PERSIST, on_prom, a);
		uint64_t ms = a->c->nb.stats_interval_ms;
		struct timeval tv = { (time_t)(ms / 1000),
			(suseconds_t)(ms % 1000) * 1000 };
		if (a->prom_ev != NULL)
			event_add(a->prom_ev, &tv);
	}

	bool pulls = false;
	for (size_t i = 0; i < a->nscis; i++)
		pulls |= a->scis[i].pull_url != NULL;
	a->use_stdin = force_stdin || (a->nlisten == 0 && a->admin_ep == NULL &&
	    (a->once ? !pulls : a->nscis == 0));
	if (a->replay && !a->use_stdin) {
		cats_errorx("--replay reads recorded reports from stdin only");
		return CATS_EXIT_USAGE;
	}
	if (!a->replay || a->have_now)
		start(a);
	if (a->use_stdin) {
		static const struct cats_stream_cbs cbs = { stdin_item,
			stdin_bad, stdin_eof, NULL };
		a->in = cats_stream_new(a->base, 0, -1, false, NULL, 0, &cbs, a);
		if (a->in != NULL)
			cats_stream_decode_into(a->in, &a->dec);
		if (a->in == NULL) {
			cats_errorx("stdin: cannot read");
			return CATS_EXIT_NOINPUT;
		}
	}
	if (a->once) {
		for (size_t i = 0; i < a->nscis; i++) {
			if (a->scis[i].pull_url == NULL || a->replay)
				continue;
			a->pulls_pending++;
			start_pull(&a->scis[i]);
		}
		if (a->pulls_pending == 0 && a->in == NULL)
			finish(a);
	}
	if (!a->stopping)
		event_base_dispatch(a->base);

	flush_out(a);
	if (a->outs != NULL && cats_stream_flush(a->outs) < 0 &&
	    a->exit_code == 0) {
		cats_errorx("output failed: %s", strerror(errno));
		a->exit_code = CATS_EXIT_IOERR;
	}
	/* The C-PS: let the queue go while it answers (bounded). */
	uint64_t give_up = cats_clock_mono_ns() / 1000000 +
	    (a->c->nb.timeout_ms > 2000 ? a->c->nb.timeout_ms : 2000);
	while (a->nb != NULL && !sma_nb_idle(a->nb) &&
	    sma_nb_status(a->nb)->state != SMA_NB_PARTITION &&
	    cats_clock_mono_ns() / 1000000 < give_up) {
		struct timeval tv = { 0, 50000 };
		a->stopping = false;
		event_base_loopexit(a->base, &tv);
		event_base_dispatch(a->base);
	}
	if (a->obuf.len > 0 && (flush_out(a) < 0 ||
	    cats_stream_flush(a->outs) < 0) && a->exit_code == 0)
		a->exit_code = CATS_EXIT_IOERR;
	if (a->nb != NULL && !sma_nb_idle(a->nb))
		cats_warnx("exit with %" PRIu64 " records not acknowledged by "
		    "the C-PS", sma_nb_status(a->nb)->queued);
	/* Save the state once the C-PS had its records, then report. */
	if (a->state_path != NULL && a->exit_code == 0) {
		char err[600];
		struct sma_out *so = sma_out_new(a->c, sma_uc_epoch(a->uc),
		    sma_uc_seq(a->uc), NULL, NULL);
		if (so == NULL)
			snprintf(err, sizeof(err), "out of memory");
		if (so == NULL || sma_out_save_state(so, a->core, a->state_path,
		    now_ms(), err, sizeof(err)) < 0) {
			cats_errorx("%s", err);
			a->exit_code = CATS_EXIT_IOERR;
		}
		sma_out_free(so);
	}
	write_prom(a);
	if (a->stats)
		print_stats(a);
	if (a->exit_code == 0 && a->malformed > 0)
		a->exit_code = CATS_EXIT_DATAERR;
	return a->exit_code;
}
