/*
 * sma_app.c - the running cats-sma (see sma_app.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/stats.h"
#include "base/tool.h"
#include "sci/sci_mqtt.h"
#include "net/listener.h"
#include "sma/sma_app.h"
#include "sma/sma_http.h"

/* A connection of a CBOR stream listener. */
struct sma_conn {
	struct cats_sconn sc;	/* first: the listener's stream */
	struct sma_app *app;
	char peer[64];
};

/* ---- output ---- */

void
sma_app_stop(struct sma_app *a, int code)
{
	if (a->exit_code == 0)
		a->exit_code = code;
	a->stopping = true;
	event_base_loopbreak(a->base);
}

static void pause_inputs(struct sma_app *a, bool pause);
static void steer_poll(struct sma_app *a, uint64_t now);

/* The next nonce: strictly increasing, across restarts too. */
static uint64_t
next_nonce(struct sma_app *a)
{
	uint64_t t = cats_clock_now() * 1000;
	a->nonce = t > a->nonce ? t : a->nonce + 1;
	return a->nonce;
}

/*
 * What a send to the output stream returned: the first failure stops the
 * loop (exit 74); above its high-water mark the inputs pause.
 */
static int
sent(struct sma_app *a, int rc)
{
	if (rc < 0) {
		if (!a->out_broken) {
			cats_tool_output_failed("output", errno);
			a->out_broken = true;
			sma_app_stop(a, CATS_EXIT_IOERR);
		}
		return -1;
	}
	if (rc == 1)
		pause_inputs(a, true);
	return 0;
}

/*
 * A record for the output stream.  The stream batches the records of a
 * loop turn into one write (sma_app_output): a write per record cost more
 * than encoding it.  Datagram outputs get one record per datagram.
 */
static int
emit(void *arg, const struct cats_rec *r)
{
	struct sma_app *a = arg;
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
	/* (cats_stream_send_rec would malloc a buffer per record) */
	a->enc.len = 0;
	if (cats_rec_encode(r, &a->enc, true) < 0)
		return -1;
	return sent(a, cats_stream_send(a->outs, a->enc.p, a->enc.len));
}

/* Records that did not leave: refused by the output, or in a batch whose
 * write failed. */
static uint64_t
out_failures(const struct sma_app *a)
{
	struct cats_stream_stats st = { 0 };
	if (a->outs != NULL)
		cats_stream_stats(a->outs, &st);
	return a->out_failures + st.lost;
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
	struct sma_app *a = arg;
	(void)s;
	if (error && !a->out_broken) {
		cats_tool_output_failed("output", error);
		a->out_broken = true;
		sma_app_stop(a, CATS_EXIT_IOERR);
	}
}

int
sma_app_output(struct sma_app *a, int fd)
{
	static const struct cats_stream_cbs cbs = { .eof = out_eof,
		.drained = out_drained };
	a->outs = cats_stream_new(a->base, -1, fd, cats_ep_is_dgram(&a->to),
	    NULL, 0, &cbs, a);
	if (a->outs == NULL) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	if (!cats_ep_is_dgram(&a->to))
		cats_stream_batch(a->outs, 65536);
	if (fd > 2)
		cats_stream_own(a->outs);
	return 0;
}

/* ---- the northbound sender's I/O (cats-northbound(7)) ---- */

static void
nb_done(void *arg, const struct httpc_resp *r)
{
	struct sma_app *a = arg;
	a->nb_req = NULL;
	sma_nb_done(a->nb, r->code, r->status, r->body, r->len, r->error,
	    cats_clock_now());
	steer_poll(a, cats_clock_now());
	sma_app_arm(a);
}

static int
nb_post(void *arg, const char *url, const uint8_t *body, size_t len)
{
	struct sma_app *a = arg;
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
	struct sma_app *a = arg;
	sma_uc_snapshot(a->uc, now, CATS_OP_FULL);
}

static void
nb_refresh(void *arg, bool ok)
{
	struct sma_app *a = arg;
	sma_uc_peer_refresh(a->uc, ok);
}

static void
nb_renumber(void *arg, uint64_t above)
{
	struct sma_app *a = arg;
	sma_uc_renumber(a->uc, above);
}

static void
nb_load(void *arg, uint64_t ppm)
{
	struct sma_app *a = arg;
	sma_uc_set_load(a->uc, ppm);
}

/* Operator notification (000 §10.2): the log, and syslog. */
static void
nb_notify(void *arg, int prio, const char *msg)
{
	struct sma_app *a = arg;
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
	struct sma_app *a = arg;
	uint64_t now = cats_clock_now();
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

/* ---- site-local steering (000 §10.3) ---- */

/* A [steer] to connect not answered in this long is tried again. */
#define STEER_CONNECT_MS 2000

static void steer_lost(struct sma_app *a, int error);

/* A steer record to its stream (signed with the [northbound] key). */
static int
steer_emit(void *arg, const struct cats_rec *r)
{
	struct sma_app *a = arg;
	struct cats_rec rec = *r;
	if (a->steer_out == NULL)
		return -1;	/* reconnecting: said again once connected */
	if (a->has_nbkey && cats_rec_sign(&rec, &a->nbkey) < 0)
		return -1;
	a->enc.len = 0;
	if (cats_rec_encode(&rec, &a->enc, true) < 0)
		return -1;
	if (cats_stream_send(a->steer_out, a->enc.p, a->enc.len) < 0) {
		if (!a->steer_dgram)
			steer_lost(a, EPIPE);
		return -1;
	}
	return 0;
}

/* The steering looks at the cache and the sender's state again. */
static void
steer_poll(struct sma_app *a, uint64_t now)
{
	if (a->steer == NULL || a->nb == NULL)
		return;
	const struct sma_nb_status *n = sma_nb_status(a->nb);
	struct sma_steer_nb v = { .partitioned = n->state == SMA_NB_PARTITION,
		.since = n->partition_since,
		.synced = n->state == SMA_NB_CONNECTED && sma_nb_idle(a->nb) };
	sma_steer_update(a->steer, a->core, &v, now);
	if (sma_steer_wants_full(a->steer))
		sma_nb_want_full(a->nb);
}

static void steer_eof(struct cats_stream *s, int error, void *arg);

/*
 * The steer stream on fd, owned by it.  A unix: or tcp: connection is
 * read too, only so that the egress's close is seen at once (a restart),
 * not at the next record.
 */
static int
steer_attach(struct sma_app *a, int fd, bool dgram)
{
	/* The egress says nothing on it: what comes is dropped (no item
	 * callbacks). */
	static const struct cats_stream_cbs cbs = { .eof = steer_eof };
	enum cats_ep_kind k = a->steer_ep.kind;
	int rfd = k == CATS_EP_UNIX || k == CATS_EP_TCP ? fd : -1;
	a->steer_out = cats_stream_new(a->base, rfd, fd, dgram, NULL, 0, &cbs,
	    a);
	if (a->steer_out == NULL)
		return -1;
	if (fd > 2)
		cats_stream_own(a->steer_out);
	return 0;
}

static void
steer_retry_later(struct sma_app *a)
{
	unsigned ms = a->steer_retry_ms < 100 ? 100 : a->steer_retry_ms;
	a->steer_retry_ms = ms + 100 > 1000 ? 1000 : ms + 100;
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	evtimer_add(a->steer_retry, &tv);
}

/* A failed connect to [steer] to, said once per outage. */
static void
steer_connect_failed(struct sma_app *a, const char *why)
{
	if (!a->steer_warned)
		cats_warnx("[steer] to: %s (connecting in the background, "
		    "100 ms growing to 1 s apart)", why);
	a->steer_warned = true;
	steer_retry_later(a);
}

/*
 * The connect to [steer] to ended (cats_ep_connect); on it, the redirects
 * in force, also those decided while there was no connection, and the
 * ends decided meanwhile, in seq order (sma_steer_resend).
 */
static void
steer_connected(void *arg, int fd, const char *why)
{
	struct sma_app *a = arg;
	if (fd < 0 || steer_attach(a, fd, false) < 0) {
		if (fd >= 0)
			close(fd);
		steer_connect_failed(a, why != NULL ? why : "out of memory");
		return;
	}
	bool again = a->steer_connected;
	a->steer_connected = true;
	a->steer_warned = false;
	a->steer_retry_ms = 100;
	uint64_t n = sma_steer_stats(a->steer)->active;
	if (again)
		a->steer_reconnects++;
	size_t ends = sma_steer_resend(a->steer);
	cats_info("[steer] to: connected%s; %" PRIu64 " redirect%s in force "
	    "and %zu end%s decided meanwhile sent", again ? " again" : "", n,
	    n == 1 ? "" : "s", ends, ends == 1 ? "" : "s");
	cats_audit(again ? "steer-reconnect" : "steer-connect", "redirects=%"
	    PRIu64 " ends=%zu", n, ends);
}

/*
 * Connect to [steer] to (again) on the loop, never waiting there: an
 * egress whose SYNs are dropped, or whose unix: backlog is full, would
 * hold every other stream and timer of cats-sma.
 */
static void
on_steer_retry(evutil_socket_t fd0, short what, void *arg)
{
	struct sma_app *a = arg;
	char err[400];
	(void)fd0;
	(void)what;
	if (cats_ep_connect(a->base, &a->steer_ep, STEER_CONNECT_MS,
	    steer_connected, a, err, sizeof(err)) < 0)
		steer_connect_failed(a, err);
}

/*
 * The steer stream ended or a write to it broke.  A unix: or tcp: peer
 * (the egress) restarted: what it had is gone with it, so connect again
 * and say it again; records decided meanwhile do not leave
 * (steer_failures) and the redirects in force are said again once
 * connected.
 */
static void
steer_lost(struct sma_app *a, int error)
{
	enum cats_ep_kind k = a->steer_ep.kind;
	bool again = (k == CATS_EP_UNIX || k == CATS_EP_TCP) &&
	    a->steer_retry != NULL;
	cats_warnx("[steer] to: %s%s", error ? strerror(error) : "closed",
	    again ? "; connecting again" : "");
	if (!again)
		return;
	cats_stream_free(a->steer_out);
	a->steer_out = NULL;
	steer_retry_later(a);
}

static void
steer_eof(struct cats_stream *s, int error, void *arg)
{
	struct sma_app *a = arg;
	if (s == a->steer_out)
		steer_lost(a, error);
}

int
sma_app_steer(struct sma_app *a, const struct cats_ep *ep, int fd)
{
	if (a->nb == NULL) {
		cats_errorx("%s: [steer] steers in a partition from the C-PS: "
		    "it needs -t http(s)://C-PS", a->c->path);
		return CATS_EXIT_CONFIG;
	}
	a->steer_ep = *ep;
	a->steer_dgram = cats_ep_is_dgram(ep);
	a->steer_retry = evtimer_new(a->base, on_steer_retry, a);
	a->steer = sma_steer_new(a->c, sma_uc_epoch(a->uc), steer_emit, a);
	if (a->steer_retry == NULL || a->steer == NULL ||
	    (fd >= 0 && steer_attach(a, fd, a->steer_dgram) < 0)) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	a->steer_connected = fd >= 0;
	if (fd < 0)
		event_active(a->steer_retry, EV_TIMEOUT, 1);
	return 0;
}

/* ---- the core's events ---- */

static void
on_event(void *arg, const struct sma_event *ev)
{
	struct sma_app *a = arg;
	if (ev->kind == SMA_EV_PULL && !a->replay) {
		/* Hybrid mode: a STALE SCI is pulled at once. */
		struct sma_sci *r = sma_http_sci(a, ev->ent->csci_id);
		if (r != NULL && r->pull_url != NULL)
			sma_http_pull(r);
	}
	sma_uc_event(a->uc, ev);
	if (a->steer != NULL) {
		sma_steer_note(a->steer, ev);
		if (ev->kind == SMA_EV_COMMIT)
			steer_poll(a, ev->now);
	}
}

/* The controller's records: to the C-PS's sender and to the stream, when
 * there is one (with a C-PS, the stream is a copy of what was queued). */
static int
uc_emit(void *arg, const struct cats_rec *r, int kind)
{
	struct sma_app *a = arg;
	if (a->nb != NULL) {
		if (a->outs != NULL && emit(a, r) < 0)
			a->out_failures++;
		return sma_nb_push(a->nb, r, kind, cats_clock_now());
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
next_deadline(const struct sma_app *a)
{
	uint64_t t = earlier(sma_next_deadline(a->core),
	    sma_uc_next_deadline(a->uc));
	if (a->nb != NULL)
		t = earlier(t, sma_nb_next_deadline(a->nb));
	if (a->steer != NULL)
		t = earlier(t, sma_steer_next_deadline(a->steer));
	return t;
}

/* Subordinates' entries past their soft state go (once a second). */
static void
sub_purge(struct sma_app *a, uint64_t now)
{
	if (a->sub_cst != NULL && now >= a->sub_purged + 1000) {
		a->sub_purged = now;
		cats_cst_expire(a->sub_cst, now, a->c->grace_ms);
	}
}

void
sma_app_arm(struct sma_app *a)
{
	if (a->replay || a->tick == NULL)
		return;
	uint64_t next = next_deadline(a), now = cats_clock_now();
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
	struct sma_app *a = arg;
	(void)fd;
	(void)what;
	uint64_t now = cats_clock_now();
	sma_tick(a->core, now);
	sma_uc_tick(a->uc, now);
	if (a->nb != NULL)
		sma_nb_tick(a->nb, now);
	steer_poll(a, now);
	sub_purge(a, now);
	sma_app_arm(a);
}

void
sma_app_start(struct sma_app *a)
{
	if (a->started)
		return;
	a->started = true;
	uint64_t now = cats_clock_now();
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
	sma_app_arm(a);
	sma_app_arm_save(a);
}

/*
 * Replay: run the timers up to t, each with the clock at its own deadline
 * (so that audit lines carry the time of the event), then move the clock.
 */
static void
advance(struct sma_app *a, uint64_t t)
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

static void observe_ts(struct sma_app *a, uint64_t ts);

/* Replay: the clock follows the records. */
static void
observe(struct sma_app *a, const struct cats_rec *r)
{
	if (!a->replay)
		return;
	uint64_t ts = r->type == CATS_T_SCI_REPORT || r->type == CATS_T_SYNC ||
	    (r->type == CATS_T_METRIC && a->sub_ing != NULL) ?
	    cats_rec_ts(r) : 0;
	observe_ts(a, ts);
}

static void
observe_ts(struct sma_app *a, uint64_t ts)
{
	if (!a->replay || ts == 0)
		return;
	if (!a->started)
		cats_clock_observe(ts);
	sma_app_start(a);
	if (ts > cats_clock_now())
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
 * One record of a stream: consume sci-report and sync, pass the rest.
 * True when it was an SCI report the core accepted: its sender proved
 * itself (token and freshness), as a hello does on other listeners.
 */
static bool
stream_item(struct sma_app *a, struct cats_item *it, const char *peer,
    struct cats_stream *reply)
{
	struct cats_rec *r = it->rec;
	const uint8_t *p = it->p;
	size_t n = it->n;
	uint64_t index = it->index;
	if (r == NULL) {
		/* One path for a metric out of range, whichever layer caught
		 * it (sma_undecoded): a rejection, not a malformed record. */
		struct sma_src src = { .kind = SMA_SRC_STREAM, .peer = peer,
			.index = index };
		struct sma_result res;
		/* A report refused by the decoder moves the replay clock as
		 * one refused later would. */
		observe_ts(a, sma_toks_u64(&a->dec.toks, "ts"));
		int range = sma_undecoded(a->core, &a->dec.toks, &it->err,
		    &src, cats_clock_now(), false, &res);
		if (range && reply == NULL) {
			report_line("", index, &res);
		} else if (range) {
			struct cats_rec er;
			cats_rec_error_init(&er, "rejected", "cats-sma", 0,
			    cats_clock_now(), res.err.reason);
			CATS_SET(&er.u.error, ERR, index, index);
			er.u.error.field = res.err.field;
			cats_stream_send_rec(reply, &er);
		} else {
			a->malformed++;
			cats_errorx("%s", it->why);
		}
		if (a->strict)
			sma_app_stop(a, CATS_EXIT_DATAERR);
		return false;
	}
	observe(a, r);
	if (!a->started)
		sma_app_start(a);
	uint64_t now = cats_clock_now();
	if (r->type == CATS_T_SYNC) {
		/* A C-PS asks for a full view. */
		sma_uc_snapshot(a->uc, now, CATS_OP_FULL);
		return false;
	}
	if (r->type == CATS_T_METRIC && a->sub_ing != NULL) {
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
		sma_app_arm(a);
		return false;
	}
	if (r->type != CATS_T_SCI_REPORT) {
		if (a->outs == NULL) {
			cats_warnx("%s: record %" PRIu64 ": a %s record has "
			    "nowhere to go (the C-PS takes metric records)",
			    peer, index, cats_type_name(r->type));
		} else {
			sent(a, cats_stream_send(a->outs, p, n));
		}
		return false;
	}
	struct sma_src src = { .kind = SMA_SRC_STREAM, .peer = peer,
		.index = index };
	struct sma_result res;
	sma_report(a->core, r, p, n, &src, now, &res);
	if (reply == NULL)
		report_line("", index, &res);
	if (reply != NULL && res.verdict == SMA_REJECTED) {
		struct cats_rec er;
		bool auth = res.status == 401 || res.status == 403;
		cats_rec_error_init(&er, auth ? "unauthorized" : "rejected",
		    "cats-sma", 0, now, res.err.reason);
		CATS_SET(&er.u.error, ERR, index, index);
		if (res.err.field[0])
			er.u.error.field = res.err.field;
		cats_stream_send_rec(reply, &er);
	}
	if (res.verdict == SMA_REJECTED && a->strict)
		sma_app_stop(a, CATS_EXIT_DATAERR);
	sma_app_arm(a);
	return res.verdict != SMA_REJECTED;
}

static void
stdin_rec(struct cats_stream *s, struct cats_item *it, void *arg)
{
	(void)s;
	(void)stream_item(arg, it, "stdin", NULL);
}

static void
stdin_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	struct sma_app *a = arg;
	char msg[400];
	struct sma_src src = { .kind = SMA_SRC_STREAM, .peer = "stdin",
		.index = index };
	struct sma_result res;
	(void)s;
	a->malformed++;
	cats_errorx("%s", cats_err_fmt(e, index, msg, sizeof(msg)));
	sma_undecoded(a->core, NULL, e, &src, cats_clock_now(), false, &res);
	if (a->strict)
		sma_app_stop(a, CATS_EXIT_DATAERR);
}

static bool
only_stdin(const struct sma_app *a)
{
	return a->nlisten == 0 && a->nscis == 0 && a->admin == NULL &&
	    a->mqtt == NULL;
}

static void
stdin_eof(struct cats_stream *s, int error, void *arg)
{
	struct sma_app *a = arg;
	(void)s;
	if (error)
		cats_errorx("stdin: %s", strerror(error));
	a->in_eof = true;
	if (a->once && a->pulls_pending == 0)
		sma_app_finish(a);
	else if ((only_stdin(a) || a->replay) && !a->once)
		/* In replay stdin is the only input, [sci] or not. */
		sma_app_finish(a);
}

static void
pause_inputs(struct sma_app *a, bool pause)
{
	if (a->in != NULL) {
		if (pause)
			cats_stream_pause(a->in);
		else
			cats_stream_resume(a->in);
	}
	for (struct cats_conn *lc = a->streams != NULL ?
	    cats_listener_first(a->streams) : NULL; lc != NULL;
	    lc = cats_conn_next(lc)) {
		struct sma_conn *c = cats_conn_data(lc);
		if (pause)
			cats_stream_pause(c->sc.st);
		else
			cats_stream_resume(c->sc.st);
	}
}

/* ---- CBOR stream listeners (unix:, tcp:) ---- */

static void
conn_rec(struct cats_stream *s, struct cats_item *it, void *arg)
{
	struct sma_conn *c = arg;
	/* A peer whose report was accepted is out of the flood deadline. */
	if (stream_item(c->app, it, c->peer, s))
		cats_conn_auth(c->sc.lc);
}

static void
conn_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	struct sma_conn *c = arg;
	struct cats_rec er;
	struct sma_src src = { .kind = SMA_SRC_STREAM, .peer = c->peer,
		.index = index };
	struct sma_result res;
	c->app->malformed++;
	sma_undecoded(c->app->core, NULL, e, &src, cats_clock_now(), false,
	    &res);
	cats_rec_error_init(&er, "malformed", "cats-sma", 0, cats_clock_now(),
	    e->reason);
	CATS_SET(&er.u.error, ERR, index, index);
	cats_stream_send_rec(s, &er);
}

/*
 * A connection from the listener (net/listener.h: caps, EMFILE, tls:
 * handshakes): one record stream, its descriptor owned by the stream.
 */
static int
conn_accept(struct cats_conn *lc, int fd, void *arg)
{
	struct sma_app *a = arg;
	static const struct cats_stream_cbs cbs = { .rec = conn_rec,
		.bad = conn_bad, .eof = cats_sconn_eof };
	struct sma_conn *c = cats_sconn_accept(a->base, lc, fd, sizeof(*c),
	    &cbs, &a->dec);
	if (c == NULL)
		return -1;
	c->app = a;
	snprintf(c->peer, sizeof(c->peer), "conn-%d", fd);
	return 0;
}

/*
 * The listeners of record streams share one cats_listener.  Its peers
 * say no hello (each report carries its own token): a connection is
 * authenticated by its first accepted SCI report; until then it is held
 * to the unauthenticated cap (the whole connection cap), and the hello
 * deadline holds only under a flood.
 */
int
sma_app_stream_listener(struct sma_app *a, int fd)
{
	static const struct cats_listener_cbs cbs = { conn_accept,
		cats_sconn_closed };
	struct cats_listener_opts o = { .name = "stream", .max_conns = 1024,
		.max_unauth = 1024, .hello_ms = a->hello_ms,
		.hello_when_crowded = a->hello_ms == 0 };
	if (a->streams == NULL)
		a->streams = cats_listener_new(a->base, &o, &cbs, a);
	if (a->streams == NULL || cats_listener_add(a->streams, fd, 0) < 0) {
		cats_errorx("out of memory");
		return -1;
	}
	return 0;
}

int
sma_app_stdin(struct sma_app *a)
{
	static const struct cats_stream_cbs cbs = { .rec = stdin_rec,
		.bad = stdin_bad, .eof = stdin_eof };
	a->in = cats_stream_new(a->base, 0, -1, false, NULL, 0, &cbs, a);
	if (a->in == NULL)
		return -1;
	cats_stream_decode_into(a->in, &a->dec);
	return 0;
}

/* ---- MQTT (000 §4.1): reports published to a broker ---- */

static void
mqtt_message(void *arg, const char *topic, const uint8_t *p, size_t n)
{
	struct sma_app *a = arg;
	char id[CATS_ID + 1], peer[CATS_ID + 300], b[256];
	snprintf(peer, sizeof(peer), "mqtt:%s", cats_safe(topic, b,
	    sizeof(b)));
	if (!a->started)
		sma_app_start(a);
	uint64_t now = cats_clock_now();
	/* The topic says whose report it is; the token has the last word
	 * (sma_report: the report's CSCI-ID must be the topic's, and the
	 * token's). */
	const char *csci = sci_mqtt_topic_id(a->c->mqtt.topic, topic, id,
	    sizeof(id));
	if (csci == NULL) {
		sma_audit(a->core, now, "reject", "status=403 field=topic",
		    "src=%s index=0 status=403 field=topic reason=\"the topic "
		    "names no CSCI-ID\"", peer);
		return;
	}
	struct sma_src src = { .kind = SMA_SRC_MQTT, .expect = csci,
		.peer = peer };
	sma_ingest(a->core, &a->dec, p, n, &src, now, NULL, NULL);
	sma_app_arm(a);
}

static void
mqtt_state(void *arg, bool up, const char *why)
{
	struct sma_app *a = arg;
	if (up)
		cats_info("mqtt %s: subscribed to %s", a->c->mqtt.broker,
		    a->c->mqtt.topic);
	else
		cats_warnx("mqtt %s: %s", a->c->mqtt.broker, why);
	char q[300];
	cats_audit("mqtt", "broker=%s state=%s reason=\"%s\"",
	    a->c->mqtt.broker, up ? "up" : "down", cats_quote(why, q,
	    sizeof(q)));
}

int
sma_app_mqtt(struct sma_app *a)
{
	const struct sma_mqtt_conf *m = &a->c->mqtt;
	sci_mqtt_free(a->mqtt);
	a->mqtt = NULL;
	if (m->broker == NULL || a->replay || a->once)
		return 0;
	struct sci_mqtt_conf mc = { .broker = m->broker, .client_id =
		m->client_id ? m->client_id : a->c->id, .ca_file = m->ca_file,
		.cert = m->cert, .key = m->key, .username = m->username,
		.password = m->password, .qos = (int)m->qos,
		.keepalive_ms = m->keepalive_ms,
		.backoff_min_ms = m->backoff_min_ms,
		.backoff_max_ms = m->backoff_max_ms };
	static const struct sci_mqtt_cbs cbs = { mqtt_message, mqtt_state,
		NULL };
	char err[400];
	if ((a->mqtt = sci_mqtt_new(a->base, &mc, &cbs, a, err,
	    sizeof(err))) == NULL) {
		cats_errorx("[mqtt] %s", err);
		return CATS_EXIT_CONFIG;
	}
	if (sci_mqtt_subscribe(a->mqtt, m->topic) < 0) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	return 0;
}

/* ---- statistics ---- */

/*
 * The last full snapshot acknowledged (or sent on a stream): this run's, or
 * else the one the state file kept (a cron run that synced incrementally).
 */
static uint64_t
sync_last_full(const struct sma_app *a)
{
	uint64_t t = a->nb ? sma_nb_status(a->nb)->last_full :
	    sma_uc_stats(a->uc)->last_full;
	return t ? t : a->have_state ? a->state.last_full : 0;
}

/* The counters of cats-sma(1) STATISTICS, in their order. */
static void
stats_list(struct sma_app *a, struct cats_stats_list *st)
{
	const struct sma_stats *s = sma_stats(a->core);
	const struct sma_uc_stats *u = sma_uc_stats(a->uc);
	/* Requests refused by the HTTP layer (413, 408, 400: lib/net/httpd.h). */
	struct httpd_stats hs = { 0 };
	for (size_t i = 0; i <= a->nlisten; i++) {
		struct httpd *h = i < a->nlisten ? a->push[i] : a->admin;
		if (h != NULL) {
			hs.too_large += httpd_stats(h)->too_large;
			hs.too_slow += httpd_stats(h)->too_slow;
			hs.bad += httpd_stats(h)->bad;
		}
	}
	/* The sync status (000 §9): what the sender says. */
	static const struct sma_nb_status none;
	const struct sma_nb_status *n = a->nb ? sma_nb_status(a->nb) : &none;
	cats_stats_init(st, "cats-sma", a->c->id);
	cats_stats_add(st, "reports", s->reports);
	cats_stats_add(st, "accepted", s->accepted);
	cats_stats_add(st, "flagged", s->flagged);
	cats_stats_add(st, "quarantined", s->quarantined);
	cats_stats_add(st, "rejected", s->rejected);
	cats_stats_add(st, "rejected_auth", s->rej_auth);
	cats_stats_add(st, "rejected_range", s->rej_range);
	cats_stats_add(st, "rejected_sequence", s->rej_seq);
	cats_stats_add(st, "rejected_other", s->rej_other);
	cats_stats_add(st, "malformed", a->malformed);
	cats_stats_add(st, "http_too_large", hs.too_large);
	cats_stats_add(st, "http_too_slow", hs.too_slow);
	cats_stats_add(st, "http_bad", hs.bad);
	cats_stats_add(st, "tokens_verified", s->tok_verified);
	cats_stats_add(st, "tokens_cached", s->tok_cached);
	cats_stats_add(st, "signatures_verified", s->sig_verified);
	cats_stats_gauge(st, "entries", sma_count(a->core));
	cats_stats_add(st, "added", s->added);
	cats_stats_add(st, "evicted", s->evicted);
	cats_stats_add(st, "stale", s->stale);
	cats_stats_add(st, "failed", s->failed);
	cats_stats_add(st, "recovered", s->recovered);
	cats_stats_add(st, "pulls_wanted", s->pulls);
	cats_stats_add(st, "released", s->released);
	cats_stats_add(st, "quarantine_dropped", s->dropped_q);
	cats_stats_add(st, "limited_sci", s->limited_sci);
	cats_stats_add(st, "limited_total", s->limited_all);
	cats_stats_add(st, "audit_suppressed", s->audit_suppressed);
	static const struct sci_mqtt_stats nomq;
	const struct sci_mqtt_stats *mq = a->mqtt ? sci_mqtt_stats(a->mqtt) :
	    &nomq;
	cats_stats_add(st, "mqtt_connects", mq->connects);
	cats_stats_add(st, "mqtt_disconnects", mq->disconnects);
	cats_stats_add(st, "mqtt_messages", mq->messages);
	cats_stats_add(st, "state_saves", a->saves);
	cats_stats_add(st, "state_save_failures", a->save_failures);
	cats_stats_add(st, "records_out", u->records);
	cats_stats_add(st, "output_failures", out_failures(a));
	cats_stats_add(st, "full_sent", u->full);
	cats_stats_add(st, "heartbeats_sent", u->heartbeats);
	cats_stats_add(st, "deltas_sent", u->deltas);
	cats_stats_add(st, "withdrawals_sent", u->withdraws);
	cats_stats_add(st, "refreshes_sent", u->refreshes);
	cats_stats_add(st, "entries_sent", u->entries_sent);
	cats_stats_add(st, "trigger_discovery", u->trig_discovery);
	cats_stats_add(st, "trigger_withdrawal", u->trig_withdraw);
	cats_stats_add(st, "trigger_health", u->trig_health);
	cats_stats_add(st, "trigger_locator", u->trig_locator);
	cats_stats_add(st, "trigger_metric", u->trig_metric);
	cats_stats_add(st, "trigger_policy", u->trig_policy);
	cats_stats_add(st, "suppressed_threshold", u->sup_threshold);
	cats_stats_add(st, "suppressed_interval", u->sup_interval);
	cats_stats_add(st, "suppressed_window", u->sup_window);
	cats_stats_add(st, "suppressed_dampening", u->sup_damp);
	cats_stats_add(st, "suppressed_bucket", u->sup_bucket);
	cats_stats_add(st, "coalesced", u->coalesced);
	cats_stats_add(st, "optional_omitted", u->omitted);
	cats_stats_add(st, "damp_suppressed", u->damp_suppressed);
	cats_stats_add(st, "damp_observed", u->damp_observed);
	cats_stats_add(st, "damp_reused", u->damp_reused);
	cats_stats_gauge(st, "damped", u->damped);
	cats_stats_gauge(st, "pending", u->pending);
	cats_stats_time(st, "last_full", u->last_full);
	cats_stats_add(st, "audit_lines", cats_audit_count());
	cats_stats_gauge(st, "advertised", sma_uc_count(a->uc));
	cats_stats_gauge(st, "sync_state", a->nb ? (uint64_t)n->state : 0);
	cats_stats_gauge(st, "sync_url", n->url);
	cats_stats_gauge(st, "sync_queued", n->queued);
	cats_stats_gauge(st, "sync_queue_max", n->queue_max);
	cats_stats_add(st, "sync_dropped", n->dropped);
	cats_stats_add(st, "sync_superseded", n->superseded);
	cats_stats_add(st, "sync_refused", n->refused);
	cats_stats_add(st, "sync_requests", n->requests);
	cats_stats_add(st, "sync_failures", n->failures);
	cats_stats_add(st, "sync_partitions", n->partitions);
	cats_stats_add(st, "sync_attempts", n->attempts);
	cats_stats_gauge(st, "sync_backoff_ms", n->backoff_ms);
	cats_stats_add(st, "sync_records_acked", n->records_acked);
	cats_stats_add(st, "sync_deltas_acked", n->deltas_acked);
	cats_stats_add(st, "sync_withdrawals_acked", n->withdrawals_acked);
	cats_stats_add(st, "sync_snapshots_acked", n->snapshots_acked);
	cats_stats_add(st, "sync_refreshes_acked", n->refreshes_acked);
	cats_stats_add(st, "sync_bytes_sent", n->bytes_sent);
	cats_stats_add(st, "sync_full", n->full_syncs);
	cats_stats_add(st, "sync_incremental", n->incremental_syncs);
	cats_stats_add(st, "sync_full_requested", n->full_requested);
	cats_stats_time(st, "sync_last_ack", n->last_ack);
	cats_stats_time(st, "sync_last_full", sync_last_full(a));
	cats_stats_gauge(st, "sync_acked_seq", n->acked_seq);
	cats_stats_gauge(st, "sync_peer_epoch", n->ps_epoch);
	cats_stats_add(st, "sync_peer_restarts", n->ps_restarts);
	static const struct sma_steer_stats nost;
	const struct sma_steer_stats *sv = a->steer ?
	    sma_steer_stats(a->steer) : &nost;
	cats_stats_gauge(st, "steer_active", sv->active);
	cats_stats_gauge(st, "steer_steering", sv->steering);
	cats_stats_add(st, "steer_redirects", sv->redirects);
	cats_stats_add(st, "steer_replaced", sv->replaced);
	cats_stats_add(st, "steer_ends", sv->ends);
	cats_stats_add(st, "steer_refused", sv->refused);
	cats_stats_add(st, "steer_heals", sv->heals);
	cats_stats_add(st, "steer_expired", sv->expired);
	cats_stats_add(st, "steer_failures", sv->failures);
	cats_stats_add(st, "steer_reconnects", a->steer_reconnects);
	cats_stats_add(st, "config_refused", a->config_refused);
	cats_stats_add(st, "cert_refused", a->cert_refused);
}

void
sma_app_stats_fill(void *arg, struct cats_stats_list *st)
{
	stats_list(arg, st);
}

json_t *
sma_app_stats_json(struct sma_app *a)
{
	struct cats_stats_list st;
	struct cats_rec r;
	stats_list(a, &st);
	cats_stats_record(&st, &r, cats_clock_now());
	json_t *j = cats_rec_to_json(&r);
	cats_stats_free(&st);
	return j;
}

/*
 * The stats as a node_exporter textfile: cats_sma_<counter>{sma_id="..."},
 * written to FILE.tmp and renamed (atomic for the collector).
 */
void
sma_app_textfile(struct sma_app *a)
{
	const char *path = a->c->nb.prometheus;
	if (path == NULL)
		return;
	struct cats_stats_list st;
	char err[4400];
	stats_list(a, &st);
	if (cats_stats_textfile(&st, path, err, sizeof(err)) < 0)
		cats_warnx("prometheus %s", err);
	cats_stats_free(&st);
}

void
sma_app_print_stats(struct sma_app *a)
{
	struct cats_stats_list st;
	stats_list(a, &st);
	cats_stats_print(&st, stderr, cats_clock_now());
	cats_stats_free(&st);
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

int
sma_app_load_config(struct sma_app *a)
{
	int code = 0;
	load_config(a->conf_path, &a->c, &a->k, &code);
	return code;
}

int
sma_app_load_policy(struct sma_app *a)
{
	return load_policy(a->c, &a->policy) < 0 ? CATS_EXIT_CONFIG : 0;
}

void
sma_app_reload(struct sma_app *a)
{
	struct sma_conf *c;
	struct sma_keys *k;
	struct sma_policy *pol;
	int code;
	if (load_config(a->conf_path, &c, &k, &code) < 0) {
		cats_warnx("reload refused; the running configuration stays");
		a->config_refused++;
		return;
	}
	/* [steer] to is opened once: a change (or a start) takes a restart. */
	bool had = a->steer != NULL, has = c->steer.nservices > 0;
	if (had != has || (had && strcmp(a->c->steer.to, c->steer.to) != 0)) {
		cats_errorx("%s: [steer] %s: reload refused (a restart opens "
		    "it); the running configuration stays", a->conf_path,
		    has ? "to" : "services");
		cats_audit("config-refused", "file=%s reason=\"[steer] to "
		    "changed\"", a->conf_path);
		a->config_refused++;
		sma_conf_free(c);
		free(c);
		sma_keys_free(k);
		free(k);
		return;
	}
	if (a->once)
		c->uc.control = false;
	if (load_policy(c, &pol) < 0) {
		cats_warnx("reload refused; the running configuration and "
		    "policy stay");
		a->config_refused++;
		sma_conf_free(c);
		free(c);
		sma_keys_free(k);
		free(k);
		return;
	}
	if (c->audit && cats_audit_open(c->audit) < 0) {
		cats_warnx("reload refused: %s: audit: %s: %s", a->conf_path,
		    c->audit, strerror(errno));
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
		struct sma_sci *r = sma_http_sci(a, c->scis[i].csci_id);
		if (r && r->sse && c->scis[i].sse &&
		    strcmp(r->sse_url, c->scis[i].sse) == 0) {
			cats_strlcpy(idbuf[i], httpc_sse_last_id(r->sse), 256);
			ids[i] = idbuf[i];
		}
	}
	sma_http_scis_stop(a);
	struct sma_conf *oc = a->c;
	struct sma_keys *ok = a->k;
	a->c = c;
	a->k = k;
	sma_uc_reconf(a->uc, c, cats_clock_now());
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
	sma_reconf(a->core, c, k, cats_clock_now());
	if (a->steer != NULL) {
		sma_steer_reconf(a->steer, c);
		steer_poll(a, cats_clock_now());
	}
	sma_conf_free(oc);
	free(oc);
	sma_keys_free(ok);
	free(ok);
	if (sma_http_scis_start(a, ids) < 0) {
		cats_errorx("out of memory");
		sma_app_stop(a, CATS_EXIT_FAIL);
	}
	free(ids);
	free(idbuf);
	/* The Policy Change Trigger: every entry evaluated again. */
	sma_uc_set_policy(a->uc, pol, cats_clock_now());
	cats_audit("policy", "file=%s rules=%zu windows=%zu",
	    c->pol.rules ? c->pol.rules : "-", sma_policy_rules(pol),
	    sma_policy_windows(pol));
	sma_app_arm(a);
	sma_app_arm_save(a);
	if (sma_app_mqtt(a) != 0)
		cats_warnx("[mqtt] not started again after the reload");
	cats_audit("config", "file=%s result=reloaded scis=%zu", a->conf_path,
	    a->nscis);
	cats_info("configuration reloaded");
}

/* ---- the end ---- */

void
sma_app_finish(struct sma_app *a)
{
	if (a->stopping)
		return;
	if (!a->started)
		sma_app_start(a);
	uint64_t now = cats_clock_now();
	if (a->replay && a->until != NULL) {
		uint64_t t = 0;
		char why[128];
		if (a->until[0] == '+') {
			uint64_t d;
			if (cats_parse_ms(a->until + 1, &d, why,
			    sizeof(why)) == 0)
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
	/* The "N more like this" lines still open. */
	sma_audit_flush(a->core, now, true);
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

int
sma_app_northbound(struct sma_app *a, uint64_t epoch)
{
	const struct sma_nb_conf *n = &a->c->nb;
	if (a->nurls == 0)
		return 0;
	for (size_t i = 0; i < n->nfallback && a->nurls < SMA_MAX_URLS; i++)
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

int
sma_app_hierarchy(struct sma_app *a)
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
		.ps_epoch = a->replay ? 1 : cats_clock_now(), .refresh = true };
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


int
sma_app_core(struct sma_app *a, uint64_t epoch, uint64_t seq)
{
	cats_dec_init(&a->dec, NULL);
	a->uc = sma_uc_new(a->c, NULL, epoch, seq, uc_emit, a);
	a->core = sma_new(a->c, a->k, on_event, a);
	a->tick = evtimer_new(a->base, on_tick, a);
	if (a->uc == NULL || a->core == NULL) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	sma_uc_set_core(a->uc, a->core);
	if (a->policy != NULL) {
		sma_uc_set_policy(a->uc, a->policy, cats_clock_now());
		a->policy = NULL;
	}
	return 0;
}

/* ---- the end ---- */

int
sma_app_save_state(struct sma_app *a)
{
	char err[600];
	struct sma_out *so = sma_out_new(a->c, sma_uc_epoch(a->uc),
	    sma_uc_seq(a->uc), NULL, NULL);
	int rc = 0;
	if (so == NULL)
		snprintf(err, sizeof(err), "out of memory");
	if (so == NULL || sma_out_save_state(so, a->core, a->state_path,
	    cats_clock_now(), sync_last_full(a), err, sizeof(err)) < 0) {
		cats_errorx("%s", err);
		a->save_failures++;
		rc = -1;
	} else {
		a->saves++;
	}
	sma_out_free(so);
	return rc;
}

static void
on_save(evutil_socket_t fd, short what, void *arg)
{
	struct sma_app *a = arg;
	(void)fd;
	(void)what;
	if (a->started && !a->stopping)
		sma_app_save_state(a);
}

void
sma_app_arm_save(struct sma_app *a)
{
	uint64_t ms = a->c->save_interval_ms;
	if (a->state_path == NULL || a->once || a->replay)
		return;
	if (a->save == NULL &&
	    (a->save = event_new(a->base, -1, EV_PERSIST, on_save, a)) == NULL)
		return;
	evtimer_del(a->save);
	if (ms == 0)
		return;
	struct timeval tv = { (time_t)(ms / 1000), (suseconds_t)(ms % 1000) *
		1000 };
	evtimer_add(a->save, &tv);
}

int
sma_app_end(struct sma_app *a)
{
	if (a->outs != NULL && cats_stream_flush(a->outs) < 0 &&
	    a->exit_code == 0) {
		cats_tool_output_failed("output", errno);
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
	if (a->outs != NULL && cats_stream_batched(a->outs) > 0 &&
	    cats_stream_flush(a->outs) < 0 && a->exit_code == 0)
		a->exit_code = cats_tool_output_failed("output", errno);
	if (a->nb != NULL && !sma_nb_idle(a->nb))
		cats_warnx("exit with %" PRIu64 " records not acknowledged by "
		    "the C-PS", sma_nb_status(a->nb)->queued);
	/* Save the state once the C-PS had its records, then report. */
	if (a->state_path != NULL && a->exit_code == 0 &&
	    sma_app_save_state(a) < 0)
		a->exit_code = CATS_EXIT_IOERR;
	sma_app_textfile(a);
	sci_mqtt_free(a->mqtt);
	a->mqtt = NULL;
	cats_listener_free(a->streams);
	a->streams = NULL;
	if (a->exit_code == 0 && a->malformed > 0)
		a->exit_code = CATS_EXIT_DATAERR;
	return a->exit_code;
}
