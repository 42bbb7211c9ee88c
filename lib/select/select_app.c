/*
 * select_app.c - the running cats-select (see select_app.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/stats.h"
#include "base/tool.h"
#include "net/listener.h"
#include "rec/json.h"
#include "rec/recfile.h"
#include "select/select_app.h"

/* A forwarder says hello within this, as to cats-bind(1). */

/* A forwarder connection (or a datagram listener, kept at EOF); lc its
 * place in the listener (net/listener.h). */
struct cats_sel_conn {
	struct cats_sel_app *app;
	struct cats_stream *s;
	struct cats_conn *lc;
	bool peercred;
	uint32_t uid;
	bool listener;		/* a datagram listener: kept at EOF */
	char fwd[CATS_ID + 1];	/* after its hello: keepalives go to it */
	struct cats_sel_conn *next, **prevp;
};

/* ---- output ---- */

static void pause_inputs(struct cats_sel_app *a);

/* Stop reading and leave the loop (the output is flushed after it). */
void
cats_sel_app_stop(struct cats_sel_app *a, int rc)
{
	if (a->rc == 0)
		a->rc = rc;
	a->done = true;
	pause_inputs(a);
	event_base_loopbreak(a->base);
}

static void
send_now(struct cats_sel_app *a, struct cats_stream *s, const uint8_t *p,
    size_t n)
{
	int r = cats_stream_send(s, p, n);
	if (r < 0) {
		cats_tool_output_failed("output", errno ? errno : EPIPE);
		cats_sel_app_stop(a, CATS_EXIT_IOERR);
	} else if (r > 0) {
		pause_inputs(a);
	}
}

/* A write of the output that failed at the end of a loop turn. */
static void
on_out_eof(struct cats_stream *s, int error, void *arg)
{
	(void)s;
	cats_tool_output_failed("output", error);
	cats_sel_app_stop(arg, CATS_EXIT_IOERR);
}

/*
 * Records for the main output gather during a turn of the loop (a read
 * delivers many) and leave in one write (cats_stream_batch); the order is
 * kept.  Answers to forwarders wait at most ANSWER_WAIT_NS behind the work
 * that follows them (handle_request), so that one read of many requests
 * does not hold the first answers until the last is decided.
 */
#define ANSWER_WAIT_NS 50000
static void
send_raw(struct cats_sel_app *a, struct cats_stream *s, const uint8_t *p,
    size_t n)
{
	if (s == a->out && cats_stream_batched(s) == 0)
		a->batch_since = cats_clock_mono_ns();
	send_now(a, s, p, n);
}

static void
send_rec(struct cats_sel_app *a, struct cats_stream *s,
    const struct cats_rec *r)
{
	cats_buf_reset(&a->obuf);
	if (cats_rec_encode(r, &a->obuf, true) < 0) {
		cats_errorx("cannot encode a %s record",
		    cats_type_name(r->type));
		return;
	}
	send_raw(a, s, a->obuf.p, a->obuf.len);
}

static int
dump_one(const struct cats_rec *r, void *arg)
{
	struct cats_sel_app *a = arg;
	send_rec(a, a->dump, r);
	return a->done ? -1 : 0;
}

void
cats_sel_app_dump(struct cats_sel_app *a)
{
	uint64_t now = cats_clock_now();
	cats_cst_dump(a->cst, now, dump_one, a);
	cats_nst_dump(&a->nst, now, dump_one, a);
}

static void
counter_name(char *dst, size_t len, const char *prefix, const char *name)
{
	snprintf(dst, len, "%s%s", prefix, name);
	for (char *p = dst; *p; p++)
		if (*p == '-')
			*p = '_';
}

/*
 * The list of the stats record; decision_rate is the rate since the last
 * record (a scrape does not move it).
 */
static void
stats_list(struct cats_sel_app *a, struct cats_stats_list *st, uint64_t now)
{
	static char names[CATS_SEL__N + CATS_REJ__N][48];
	const struct cats_sel_counters *c = cats_sel_counters(a->sel);
	uint64_t dt = now > a->last_stats_ts ? now - a->last_stats_ts : 0;
	uint64_t rate = dt ? (c->decisions - a->last_decisions) * 1000 / dt : 0;
	cats_stats_init(st, "cats-select", a->o.id);
#define KV(name, val) cats_stats_add(st, (name), (val))
#define GAUGE(name, val) cats_stats_gauge(st, (name), (val))
	KV("requests", c->requests);
	KV("decisions", c->decisions);
	uint64_t errors = 0;
	for (int i = 1; i < CATS_SEL__N; i++)
		errors += c->fail[i];
	KV("errors", errors);
	GAUGE("decision_rate", rate);
	KV("fallbacks", c->fallbacks);
	KV("precedence", c->precedence);
	KV("cache_hits", c->cache_hits);
	for (int i = 1; i < CATS_SEL__N; i++) {
		counter_name(names[i], sizeof(names[i]), "fail_",
		    cats_sel_code_names[i]);
		KV(names[i], c->fail[i]);
	}
	for (int i = 1; i < CATS_REJ__N; i++) {
		char *nm = names[CATS_SEL__N + i];
		counter_name(nm, 48, "reject_", cats_rej_names[i]);
		KV(nm, c->reject[i]);
	}
	KV("records", a->records);
	KV("bad_records", a->bad);
	KV("passed", a->passed);
	KV("fwd_dropped", a->fwd_dropped);
	KV("hellos", a->hellos_ok);
	KV("keepalives", a->keepalives);
	KV("hello_refused", a->hello_refused);
	KV("hello_replayed", a->hello_replayed);
	const struct cats_listener_stats *ls = a->lst ?
	    cats_listener_stats(a->lst) : NULL;
	GAUGE("connections", a->nconns);
	KV("connections_refused", a->conns_refused + (ls ? ls->refused : 0));
	KV("connections_evicted", ls ? ls->evicted : 0);
	KV("connections_hello_timeouts", ls ? ls->hello_timeouts : 0);
	KV("accept_fd_exhausted", ls ? ls->fd_exhausted : 0);
	GAUGE("services", cats_svc_count(a->cat));
	KV("service_records", a->svc_applied);
	KV("service_ignored", a->svc_ignored);
	KV("service_refused", a->svc_refused);
	KV("metric_records", a->met_records);
	KV("metric_stale", a->met_stale);
	KV("metric_bad", a->met_bad);
	KV("metric_resync", a->met_resync);
	KV("metric_entries_applied", a->met_applied);
	KV("metric_entries_removed", a->met_removed);
	KV("metric_entries_refused", a->met_refused);
	KV("metric_passed", a->met_passed);
	KV("metric_refused_owner", a->met_refused_owner);
	KV("metric_refused_scope", a->met_refused_scope);
	KV("net_applied", a->net_applied);
	KV("net_ignored", a->net_ignored);
	KV("net_refused", a->net_refused);
	KV("purged", a->purged);
	KV("state_writes", a->state_writes);
	KV("state_errors", a->state_errors);
	static const struct cats_ingest_stats none;
	const struct cats_ingest_stats *is = a->ing ? cats_ingest_stats(a->ing)
	    : &none;
	KV("ingest_requests", is->requests);
	KV("ingest_records", is->records);
	KV("ingest_applied", is->applied);
	KV("ingest_stale", is->stale);
	KV("ingest_resync", is->resync);
	KV("ingest_bad", is->bad);
	KV("ingest_unauthenticated", is->unauthenticated);
	KV("ingest_unauthorized", is->unauthorized);
	KV("ingest_cert_refused", is->cert_refused);
	static const struct httpd_stats hnone;
	const struct httpd_stats *hs = a->ingest_h ? httpd_stats(a->ingest_h)
	    : &hnone;
	KV("ingest_too_large", hs->too_large);
	KV("ingest_too_slow", hs->too_slow);
	KV("ingest_replays", is->replays);
	KV("ingest_conflicts", is->conflicts);
	KV("ingest_retrievals", is->retrievals);
	KV("ingest_full_wanted", is->full_wanted);
	KV("ingest_entries_applied", is->entries_applied);
	KV("ingest_entries_removed", is->entries_removed);
	GAUGE("tedb_gen", a->te ? cats_te_gen(a->te) : 0);
	GAUGE("tedb_nodes", a->te ? cats_te_nodes(a->te) : 0);
	KV("tedb_applied", a->te_applied);
	KV("tedb_refused", a->te_refused);
	GAUGE("cst_entries", cats_cst_count(a->cst));
	GAUGE("cst_gen", cats_cst_gen(a->cst));
	GAUGE("nst_paths", cats_nst_rec_count(a->nrec));
	GAUGE("nst_gen", cats_nst_gen(&a->nst));
#undef KV
#undef GAUGE
}

void
cats_sel_app_stats(struct cats_sel_app *a)
{
	struct cats_stats_list st;
	const struct cats_sel_counters *c = cats_sel_counters(a->sel);
	uint64_t now = cats_clock_now();
	stats_list(a, &st, now);
	a->last_stats_ts = now;
	a->last_decisions = c->decisions;
	struct cats_rec r;
	cats_stats_record(&st, &r, now);
	send_rec(a, a->stats, &r);
	cats_stats_free(&st);
}

void
cats_sel_app_stats_fill(void *arg, struct cats_stats_list *st)
{
	struct cats_sel_app *a = arg;
	stats_list(a, st, cats_clock_now());
	cats_stats_hist(st, "selection", &a->h_select);
}

/* ---- inputs ---- */

static void
for_each_input(struct cats_sel_app *a, void (*fn)(struct cats_stream *))
{
	if (a->in != NULL)
		fn(a->in);
	for (struct cats_sel_conn *c = a->conns; c != NULL; c = c->next)
		fn(c->s);
}

static void
pause_inputs(struct cats_sel_app *a)
{
	if (a->paused)
		return;
	a->paused = true;
	for_each_input(a, cats_stream_pause);
	cats_listener_hold(a->lst, true);
}

static void
on_drained(struct cats_stream *s, void *arg)
{
	struct cats_sel_app *a = arg;
	(void)s;
	if (!a->paused)
		return;
	a->paused = false;
	for_each_input(a, cats_stream_resume);
	cats_listener_hold(a->lst, false);
}

static void
purge(struct cats_sel_app *a, uint64_t now)
{
	uint64_t grace = a->o.purge_ms;
	uint64_t st = cats_svc_max_stale(a->cat);
	if (st > grace)
		grace = st;
	a->purged += cats_cst_expire(a->cst, now, grace);
	a->purged += cats_nst_expire(&a->nst, now, grace);
}

/*
 * In replay, the clock follows the records the selector takes: requests,
 * metric, net and service records (not those it only passes on).
 */
static void
observe(const struct cats_sel_app *a, const struct cats_rec *r)
{
	if (a->o.replay && (r->type == CATS_T_REQUEST ||
	    r->type == CATS_T_METRIC || r->type == CATS_T_NET ||
	    r->type == CATS_T_SERVICE))
		cats_clock_observe(cats_rec_ts(r));
}

static void
apply_service(struct cats_sel_app *a, const struct cats_service *s,
    uint64_t index, const char *where)
{
	struct cats_err e;
	memset(&e, 0, sizeof(e));
	int r = cats_svc_apply(a->cat, s, &e);
	if (r > 0) {
		a->svc_applied++;
	} else if (r == 0) {
		a->svc_ignored++;
		cats_info("%s: record %" PRIu64 ": service %s version %" PRIu64
		    " is older than the catalogue's", where, index, s->cs_id,
		    s->version);
	} else {
		char msg[400];
		a->svc_refused++;
		cats_errorx("%s: %s", where, cats_err_fmt(&e, index, msg,
		    sizeof(msg)));
		cats_audit("service-refused", "cs_id=%s reason=%s", s->cs_id,
		    e.reason);
	}
}

/*
 * A metric record that takes an instance down (a withdrawal, a FAILED or
 * UNHEALTHY entry) is also for the binding manager after us: its flows to
 * that instance are repaired or failed (cats-bind(1)).  Other metric
 * records stop here.
 */
static void
pass_instance_down(const struct cats_metric *m, void *arg)
{
	struct cats_sel_app *a = arg;
	bool down = m->op == CATS_OP_WITHDRAW && m->entries.n > 0;
	for (size_t i = 0; i < m->entries.n && !down; i++) {
		const struct cats_entry *x = &m->entries.v[i];
		down = (CATS_HAS(x, ENT, health) &&
		    x->health == CATS_UNHEALTHY) ||
		    (CATS_HAS(x, ENT, state) && x->state == CATS_SCI_FAILED);
	}
	if (!down || a->out == NULL)
		return;
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_METRIC);
	r.u.metric = *m;
	a->met_passed++;
	send_rec(a, a->out, &r);
}

static void
apply_metric(struct cats_sel_app *a, const struct cats_metric *m, uint64_t now,
    uint64_t index, const char *where)
{
	struct cats_cst_result res;
	char q[CATS_ID + 1], o[CATS_ID + 1];
	a->met_records++;
	if (m->op == CATS_OP_RELEASE) {
		/* The operator's action: the control stream is trusted. */
		cats_cst_release(a->cst, m, &res);
		a->met_removed += res.removed;
		for (size_t i = 0; i < m->entries.n; i++) {
			char c1[CATS_ID + 1], c2[CATS_ID + 1];
			cats_audit("instance-released", "by=%s cs_id=%s "
			    "csci_id=%s where=%s", cats_safe(m->sma_id, q,
			    sizeof(q)), cats_safe(m->entries.v[i].cs_id, c1,
			    sizeof(c1)), cats_safe(m->entries.v[i].csci_id, c2,
			    sizeof(c2)), where);
		}
		cats_info("%s: record %" PRIu64 ": %zu entries released by the "
		    "operator%s%s", where, index, res.removed,
		    res.refused ? "; " : "", res.reason);
		if (res.removed > 0 && a->out != NULL) {
			struct cats_rec r;
			cats_rec_init(&r, CATS_T_METRIC);
			r.u.metric = *m;
			r.u.metric.op = CATS_OP_WITHDRAW;
			a->met_passed++;
			send_rec(a, a->out, &r);
		}
		return;
	}
	cats_cst_apply(a->cst, m, now, &res);
	if (res.conflict || res.forbidden) {
		a->met_refused_owner += res.conflict;
		a->met_refused_scope += res.forbidden;
		cats_audit("metric-refused", "sma=%s owner=%s where=%s "
		    "record=%" PRIu64 " reason=\"%s\"", cats_safe(m->sma_id, q,
		    sizeof(q)), res.conflict ? cats_safe(res.owner, o,
		    sizeof(o)) : "-", where, index, res.reason);
	}
	if (res.taken_over > 0)
		cats_audit("instance-takeover", "sma=%s from=%s where=%s "
		    "entries=%zu reason=\"the owner's entries had expired\"",
		    cats_safe(m->sma_id, q, sizeof(q)), cats_safe(res.owner, o,
		    sizeof(o)), where, res.taken_over);
	a->met_applied += res.applied;
	a->met_removed += res.removed;
	a->met_refused += res.refused;
	if (res.resync)
		a->met_resync++;
	if (res.result == CATS_ACK_STALE) {
		a->met_stale++;
		cats_info("%s: record %" PRIu64 ": metric from %s ignored: %s",
		    where, index, m->sma_id, res.reason);
	} else if (res.result != CATS_ACK_OK) {
		a->met_bad++;
		cats_warnx("%s: record %" PRIu64 ": metric from %s: %s", where,
		    index, m->sma_id, res.reason);
	} else if (res.resync) {
		cats_info("%s: record %" PRIu64 ": metric from %s: %s; a full "
		    "sync is needed", where, index, m->sma_id, res.reason);
	}
	if (res.result == CATS_ACK_OK)
		pass_instance_down(m, a);
}

static void
apply_net(struct cats_sel_app *a, const struct cats_net *m, uint64_t now,
    uint64_t index, const char *where)
{
	struct cats_err e;
	memset(&e, 0, sizeof(e));
	int r = cats_nst_rec_apply(a->nrec, m, now, &e);
	if (r > 0) {
		a->net_applied++;
	} else if (r == 0) {
		a->net_ignored++;
	} else {
		char msg[400];
		a->net_refused++;
		cats_warnx("%s: %s", where, cats_err_fmt(&e, index, msg,
		    sizeof(msg)));
	}
}

/* The type and transaction id of an item that did not decode, if any. */
static bool
peek_request(struct cats_sel_app *a, const uint8_t *p, size_t n, bool *has_txn,
    uint64_t *txn)
{
	size_t used;
	struct cats_err e;
	bool req = false;
	*has_txn = false;
	if (cats_scan(p, n, true, &a->dec.lim, &a->peek, NULL, &used, NULL,
	    &e) != CATS_SCAN_OK)
		return false;
	const struct cats_tok *t = a->peek.t;
	if (t[0].kind != CATS_TK_MAP)
		return false;
	size_t i = 1;
	for (uint32_t k = 0; k < t[0].n; k++) {
		const struct cats_tok *key = &t[i], *val = &t[i + 1];
		if (key->kind == CATS_TK_TEXT && key->n == 4 &&
		    memcmp(key->v.p, "type", 4) == 0 &&
		    val->kind == CATS_TK_TEXT && val->n == 7 &&
		    memcmp(val->v.p, "request", 7) == 0)
			req = true;
		if (key->kind == CATS_TK_TEXT && key->n == 3 &&
		    memcmp(key->v.p, "txn", 3) == 0 &&
		    val->kind == CATS_TK_UINT && val->v.u >= 1 &&
		    val->v.u <= CATS_U53) {
			*has_txn = true;
			*txn = val->v.u;
		}
		i = val->next;
	}
	return req;
}

static void
handle_request(struct cats_sel_app *a, const struct cats_rec *r,
    const struct cats_sel_conn *c, uint64_t now)
{
	struct cats_sel_origin o = { 0 };
	if (c != NULL && c->peercred) {
		o.peercred = true;
		o.uid = c->uid;
	}
	struct cats_sel_out *out = &a->sout;
	uint64_t t0 = cats_clock_mono_ns();
	int code = cats_sel_request(a->sel, r, &o, now, out);
	cats_hist_observe(&a->h_select, (cats_clock_mono_ns() - t0) / 1000);
	if (c != NULL && c->lc != NULL && code != CATS_SEL_UNAUTHENTICATED &&
	    code != CATS_SEL_UNAUTHORIZED && code != CATS_SEL_REPLAY) {
		cats_conn_auth(c->lc);	/* past its hello (listener.h) */
		cats_conn_touch(c->lc);
	}
	if (code != CATS_SEL_OK) {
		cats_debug("txn %" PRIu64 " from %s: %s: %s", r->u.request.txn,
		    r->u.request.ingress, cats_sel_code_names[code], out->msg);
		if (code == CATS_SEL_UNAUTHENTICATED ||
		    code == CATS_SEL_UNAUTHORIZED || code == CATS_SEL_REPLAY ||
		    code == CATS_SEL_STALE_GEN)
			cats_audit("request-refused", "txn=%" PRIu64
			    " ingress=%s code=%s reason=\"%s\"",
			    r->u.request.txn, r->u.request.ingress,
			    cats_sel_code_names[code], out->msg);
	}
	send_rec(a, a->out, &out->rec);
	if (c != NULL && cats_stream_batched(a->out) > 0 &&
	    cats_clock_mono_ns() - a->batch_since >= ANSWER_WAIT_NS &&
	    cats_stream_push(a->out) < 0) {
		cats_tool_output_failed("output", errno ? errno : EPIPE);
		cats_sel_app_stop(a, CATS_EXIT_IOERR);
	}
}

/*
 * A forwarder's hello (cats-select(1) FORWARDERS): with --keys signed by
 * the key of the forwarder it names, within the request window and fresh
 * (sec/crypto.h, cats_hello_guard_new); unsigned only with --no-auth or on
 * a unix socket, whose requests SO_PEERCRED still checks.  The connection is then past its
 * hello deadline; a refused hello closes it.
 */
static void conn_free(struct cats_sel_conn *c);

static void
handle_hello(struct cats_sel_app *a, const struct cats_rec *r,
    struct cats_sel_conn *c, uint64_t now)
{
	const struct cats_status *st = &r->u.status;
	char why[300] = "";
	if (r->auth.alg != CATS_ALG_NONE && a->keys.n > 0) {
		const struct cats_key *who = NULL;
		struct cats_err e;
		uint64_t w = a->o.sel.window_ms;
		memset(&e, 0, sizeof(e));
		if (cats_rec_verify(r, &a->keys, &who, &e) < 0)
			snprintf(why, sizeof(why), "%s", e.reason);
		else if (strcmp(who->name, st->fwd) != 0)
			snprintf(why, sizeof(why), "the key of %s speaks for "
			    "%s", who->name, st->fwd);
		else if (w > 0 && !cats_replay_in_window(st->ts, now, w))
			snprintf(why, sizeof(why), "timestamp %" PRIu64
			    " outside now +/- %" PRIu64 " ms", st->ts, w);
		else if (cats_hello_check(a->hellos, st->fwd, st->ts, why,
		    sizeof(why)) == CATS_REPLAY_NONCE)
			a->hello_replayed++;
	} else if (r->auth.alg != CATS_ALG_NONE && !a->o.sel.insecure)
		snprintf(why, sizeof(why), "no forwarder keys are configured");
	else if (r->auth.alg == CATS_ALG_NONE && !a->o.sel.insecure &&
	    !c->peercred)
		snprintf(why, sizeof(why), "the hello carries no MAC");
	if (why[0] != '\0') {
		char peer[64];
		a->hello_refused++;
		cats_warnx("forwarder %s: hello refused: %s", st->fwd, why);
		cats_audit_limited("hello-refused", "fwd=%s peer=%s "
		    "reason=\"%s\"",
		    st->fwd, cats_conn_peer(c->lc, peer, sizeof(peer)), why);
		conn_free(c);
		return;
	}
	a->hellos_ok++;
	cats_strlcpy(c->fwd, st->fwd, sizeof(c->fwd));
	cats_conn_auth(c->lc);
	cats_conn_touch(c->lc);
}

/*
 * One item from stdin (c NULL: the trusted control stream) or from a
 * forwarder connection, decoded by its stream from a->dec's tokens.
 */
static void
handle_item(struct cats_sel_app *a, struct cats_item *it,
    struct cats_sel_conn *c)
{
	struct cats_rec *r = it->rec;
	const uint8_t *p = it->p;
	size_t n = it->n;
	uint64_t index = it->index;
	const char *where = c ? "forwarder" : "input";
	cats_tool_hugepages();
	a->records++;
	if (r == NULL) {
		a->bad++;
		cats_errorx("%s: %s", where, it->why);
		bool has_txn;
		uint64_t txn = 0;
		if (peek_request(a, p, n, &has_txn, &txn) || c != NULL) {
			cats_sel_malformed(a->sel, &it->err, index, has_txn, txn,
			    cats_clock_now(), &a->sout);
			send_rec(a, a->out, &a->sout.rec);
		}
		if (a->o.strict && c == NULL)
			cats_sel_app_stop(a, CATS_EXIT_DATAERR);
		return;
	}
	observe(a, r);
	uint64_t now = cats_clock_now();
	if (c != NULL && c->lc != NULL && r->type == CATS_T_STATUS &&
	    r->u.status.event == CATS_EV_HELLO) {
		handle_hello(a, r, c, now);
		return;
	}
	if (c != NULL && r->type != CATS_T_REQUEST) {
		/* Forwarders send requests; nothing else is theirs to say. */
		a->fwd_dropped++;
		cats_warnx("forwarder: record %" PRIu64 ": a %s record from a "
		    "forwarder connection is dropped", index,
		    cats_type_name(r->type));
		cats_audit("forwarder-record-dropped", "type=%s",
		    cats_type_name(r->type));
		return;
	}
	switch (r->type) {
	case CATS_T_REQUEST:
		handle_request(a, r, c, now);
		break;
	case CATS_T_SERVICE:
		apply_service(a, &r->u.service, index, where);
		break;
	case CATS_T_METRIC:
		apply_metric(a, &r->u.metric, now, index, where);
		break;
	case CATS_T_NET:
		/* Link and node records are the PCE's: passed on (and
		 * applied to our copy of the TE database). */
		if (r->u.net.scope == CATS_NET_PATH) {
			apply_net(a, &r->u.net, now, index, where);
			break;
		}
		if (a->te != NULL) {
			char why[256];
			int rc = cats_te_apply_net(a->te, &r->u.net, why,
			    sizeof(why));
			if (rc == 0)
				a->te_applied++;
			else if (rc < 0) {
				a->te_refused++;
				cats_warnx("%s: record %" PRIu64 ": TE "
				    "database: %s", where, index, why);
			}
		}
		a->passed++;
		send_raw(a, a->out, p, n);
		break;
	default:
		a->passed++;
		send_raw(a, a->out, p, n);
	}
	/* In replay, purge once a replayed second (the timer's job live). */
	if (a->o.replay && now >= a->last_purge + 1000) {
		a->last_purge = now;
		purge(a, now);
	}
}

static void
on_rec(struct cats_stream *s, struct cats_item *it, void *arg)
{
	struct cats_sel_conn *c = arg;
	(void)s;
	handle_item(c->app, it, c);
}

static void
on_in_rec(struct cats_stream *s, struct cats_item *it, void *arg)
{
	(void)s;
	handle_item(arg, it, NULL);
}

static void
report_bad_item(struct cats_sel_app *a, const char *where, uint64_t index,
    const struct cats_err *e, bool from_fwd)
{
	char msg[400];
	a->records++;
	a->bad++;
	cats_errorx("%s: %s", where, cats_err_fmt(e, index, msg, sizeof(msg)));
	if (from_fwd) {
		cats_sel_malformed(a->sel, e, index, false, 0, cats_clock_now(),
		    &a->sout);
		send_rec(a, a->out, &a->sout.rec);
	}
}

static void
on_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	struct cats_sel_conn *c = arg;
	(void)s;
	report_bad_item(c->app, "forwarder", index, e, true);
}

static void
on_in_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	struct cats_sel_app *a = arg;
	(void)s;
	report_bad_item(a, "input", index, e, false);
	if (a->o.strict)
		cats_sel_app_stop(a, CATS_EXIT_DATAERR);
}

static void
conn_free(struct cats_sel_conn *c)
{
	struct cats_sel_app *a = c->app;
	cats_conn_release(c->lc);
	*c->prevp = c->next;
	if (c->next)
		c->next->prevp = c->prevp;
	a->nconns--;
	cats_stream_free(c->s);
	free(c);
}

static void
on_eof(struct cats_stream *s, int error, void *arg)
{
	struct cats_sel_conn *c = arg;
	(void)s;
	if (error != 0)
		cats_debug("forwarder connection: %s", strerror(error));
	if (!c->listener)
		conn_free(c);
}

void
cats_sel_app_finish(struct cats_sel_app *a)
{
	uint64_t now = cats_clock_now();
	purge(a, now);
	if (a->o.stats_at_end)
		cats_sel_app_stats(a);
	if (a->o.dump_at_end)
		cats_sel_app_dump(a);
	cats_sel_app_stop(a, CATS_EXIT_OK);
}

static void
on_in_eof(struct cats_stream *s, int error, void *arg)
{
	struct cats_sel_app *a = arg;
	(void)s;
	if (error != 0) {
		cats_errorx("input: %s", strerror(error));
		a->rc = CATS_EXIT_FAIL;
	}
	if (!a->daemon)
		cats_sel_app_finish(a);
}

/* A connection on fd, written to (keepalives) when it is a stream's. */
static struct cats_sel_conn *
conn_new(struct cats_sel_app *a, int fd, bool dgram, bool listener)
{
	static const struct cats_stream_cbs cbs = { .rec = on_rec,
		.bad = on_bad, .eof = on_eof };
	struct cats_sel_conn *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->app = a;
	c->listener = listener;
	c->s = cats_stream_new(a->base, fd, dgram ? -1 : fd, dgram,
	    &a->dec.lim, 0, &cbs, c);
	if (c->s == NULL) {
		free(c);
		return NULL;
	}
	cats_stream_decode_into(c->s, &a->dec);
	c->next = a->conns;
	if (a->conns)
		a->conns->prevp = &c->next;
	c->prevp = &a->conns;
	a->conns = c;
	a->nconns++;
	if (a->paused)
		cats_stream_pause(c->s);
	return c;
}

static int
on_accept(struct cats_conn *lc, int fd, void *arg)
{
	struct cats_sel_app *a = arg;
	struct cats_sel_conn *c = conn_new(a, fd, false, false);
	if (c == NULL)
		return -1;
	cats_stream_own(c->s);
	c->lc = lc;
	cats_conn_set_data(lc, c);
	struct ucred uc;
	socklen_t len = sizeof(uc);
	if (cats_conn_tag(lc) && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc,
	    &len) == 0 && len == sizeof(uc)) {
		c->peercred = true;
		c->uid = uc.uid;
	}
	return 0;
}

/* The listener closes a connection (a deadline, an eviction, the end). */
static void
on_conn_closed(struct cats_conn *lc, int why, void *arg)
{
	struct cats_sel_conn *c = cats_conn_data(lc);
	(void)why;
	(void)arg;
	c->lc = NULL;
	conn_free(c);
}

/* ---- timers and reloads ---- */

/*
 * To each forwarder that said hello on a stream: this selector is alive
 * (cats-fwd(1) CONTROL CHANNELS: it leaves a channel that falls silent).
 * A connection that cannot take it is closed, never waited for.
 */
static void
keepalive(struct cats_sel_app *a, uint64_t now)
{
	struct cats_rec r;
	cats_rec_keepalive_init(&r, now);
	for (struct cats_sel_conn *c = a->conns, *nx; c != NULL; c = nx) {
		nx = c->next;
		if (c->lc == NULL || c->fwd[0] == '\0')
			continue;
		r.u.status.fwd = c->fwd;
		cats_buf_reset(&a->obuf);
		if (cats_rec_encode(&r, &a->obuf, true) < 0)
			return;
		if (cats_stream_send(c->s, a->obuf.p, a->obuf.len) < 0) {
			conn_free(c);
			continue;
		}
		a->keepalives++;
	}
}

void
cats_sel_app_tick(struct cats_sel_app *a)
{
	uint64_t now = cats_clock_now();
	keepalive(a, now);
	purge(a, now);
	cats_sel_app_save_state(a, false);
	if (a->o.stats_ms > 0 && now >= a->last_stats_ts + a->o.stats_ms)
		cats_sel_app_stats(a);
}

static int load_file(struct cats_sel_app *a, const char *path, int type,
    struct cats_svc_cat *cat);

void
cats_sel_app_reload(struct cats_sel_app *a)
{
	if (a->o.tedb != NULL) {
		char err[512];
		bool missing;
		struct cats_te *te = cats_te_load(a->o.tedb, NULL,
		    cats_te_gen(a->te) + 1, &missing, err, sizeof(err));
		if (te == NULL) {
			cats_errorx("%s; the old TE database stays", err);
			cats_audit("tedb-reload-refused", "file=%s",
			    a->o.tedb);
		} else {
			cats_nst_tedb_set(a->tedb, te);
			cats_te_free(a->te);
			a->te = te;
			cats_info("%s: reloaded, %u nodes", a->o.tedb,
			    cats_te_nodes(te));
			cats_audit("tedb-reloaded", "file=%s nodes=%u",
			    a->o.tedb, cats_te_nodes(te));
		}
	}
	if (a->o.services == NULL)
		return;
	struct cats_svc_cat *cat = cats_svc_cat_new(0);
	if (cat == NULL || load_file(a, a->o.services, CATS_T_SERVICE,
	    cat) != CATS_EXIT_OK) {
		cats_errorx("%s: not reloaded; the old catalogue stays",
		    a->o.services);
		cats_svc_cat_free(cat);
		return;
	}
	cats_sel_set_catalogue(a->sel, cat);
	cats_svc_cat_free(a->cat);
	a->cat = cat;
	cats_info("%s: reloaded, %zu services", a->o.services,
	    cats_svc_count(cat));
	cats_audit("services-reloaded", "services=%zu",
	    cats_svc_count(cat));
}

/* ---- files ---- */

/* Apply one record of a start-up file; -1 if it is refused. */
static int
load_rec(struct cats_sel_app *a, const struct cats_rec *r, int type,
    uint64_t index, const char *path, struct cats_svc_cat *cat)
{
	cats_tool_hugepages();
	if ((int)r->type != type) {
		cats_errorx("%s: record %" PRIu64 ": a %s record, expected %s",
		    path, index, cats_type_name(r->type), cats_type_name(type));
		return -1;
	}
	observe(a, r);
	uint64_t now = cats_clock_now();
	if (type == CATS_T_SERVICE) {
		struct cats_err e;
		memset(&e, 0, sizeof(e));
		if (cats_svc_apply(cat, &r->u.service, &e) < 0) {
			char msg[400];
			cats_errorx("%s: %s", path, cats_err_fmt(&e, index, msg,
			    sizeof(msg)));
			return -1;
		}
	} else if (type == CATS_T_METRIC) {
		apply_metric(a, &r->u.metric, now, index, path);
	} else {
		apply_net(a, &r->u.net, now, index, path);
	}
	return 0;
}

struct load_ctx {
	struct cats_sel_app *a;
	int type;
	const char *path;
	struct cats_svc_cat *cat;
};

static int
load_one(const struct cats_rec *r, uint64_t index, void *arg)
{
	struct load_ctx *x = arg;
	return load_rec(x->a, r, x->type, index, x->path, x->cat);
}

/*
 * Load a start-up file (rec/recfile.h: CBOR Sequence or JSON Lines, each
 * record under the cap before it is parsed, given up after 100 bad ones).
 */
static int
load_file(struct cats_sel_app *a, const char *path, int type,
    struct cats_svc_cat *cat)
{
	struct load_ctx x = { a, type, path, cat };
	struct cats_recfile_res res;
	char err[600];
	if (cats_recfile_load(path, &a->dec, 100, load_one, &x, &res, err,
	    sizeof(err)) < 0) {
		cats_errorx("%s", err);
		return res.opened ? CATS_EXIT_DATAERR : CATS_EXIT_NOINPUT;
	}
	return res.bad ? CATS_EXIT_DATAERR : CATS_EXIT_OK;
}

static int
setup_forwarders(struct cats_sel_app *a)
{
	for (size_t i = 0; i < a->o.npc; i++) {
		struct cats_sel_peer *p = &a->o.pc[i];
		const char *tv[64];
		size_t nt = 0;
		char *copy = p->tenants ? strdup(p->tenants) : NULL;
		if (p->tenants != NULL && copy == NULL)
			return -1;
		for (char *save = NULL, *t = copy ? strtok_r(copy, " \t,",
		    &save) : NULL; t != NULL && nt < 64;
		    t = strtok_r(NULL, " \t,", &save))
			tv[nt++] = t;
		int rc = cats_sel_forwarder(a->sel, p->id, p->uid != UINT32_MAX,
		    p->uid, tv, nt);
		free(copy);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* POST /metrics, /update, /withdraw, /retrieve (cats-northbound(7)). */
static void
on_ingest(struct evhttp_request *req, void *arg)
{
	struct cats_sel_app *a = arg;
	cats_ingest_serve(a->ing, req, cats_clock_now());
}

int
cats_sel_app_ingest(struct cats_sel_app *a)
{
	struct cats_sel_opts *o = &a->o;
	char err[512];
	if (o->ingest == NULL)
		return CATS_EXIT_OK;
	/* Refused in the shape of cats_opt_keyring()'s ("OPT: FILE:
	 * reason"), without its exit: this is library code. */
	if (cats_keyring_load(&a->ikeys, o->ingest_keys, err,
	    sizeof(err)) < 0) {
		cats_errorx("--ingest-keys: %s", err);
		return CATS_EXIT_NOPERM;
	}
	if (o->ingest_key != NULL) {
		if (cats_key_load(&a->isign, o->ingest_key,
		    CATS_KEY_ED25519_SECRET, err, sizeof(err)) < 0) {
			cats_errorx("--ingest-key: %s", err);
			return CATS_EXIT_NOPERM;
		}
		a->has_isign = true;
	}
	struct cats_ingest_conf ic = { .keys = &a->ikeys,
		.window_ms = o->ingest_window,
		.ps_id = o->id ? o->id : "cats-select",
		.ps_epoch = cats_clock_now(), .refresh = true,
		.sign = a->has_isign ? &a->isign : NULL,
		.applied = pass_instance_down, .applied_arg = a };
	if ((a->ing = cats_ingest_new(&ic, a->cst)) == NULL)
		return CATS_EXIT_FAIL;
	for (size_t i = 0; i < o->nsmas; i++) {
		const char *cs[256];
		size_t ncs = 0;
		char *copy = strdup(o->smas[i].cs ? o->smas[i].cs : ""),
		    *save = NULL;
		if (copy == NULL)
			return CATS_EXIT_FAIL;
		for (char *t = strtok_r(copy, " \t,", &save); t != NULL &&
		    ncs < 256; t = strtok_r(NULL, " \t,", &save))
			cs[ncs++] = t;
		int rc = cats_ingest_allow(a->ing, o->smas[i].id, cs, ncs);
		free(copy);
		if (rc < 0)
			return CATS_EXIT_FAIL;
	}
	if (o->nsmas == 0)
		cats_warnx("--ingest without --sma: every C-SMA is refused "
		    "(403) until it is allowed CS-IDs");
	struct httpd_opts ho = { .max_body = 8u << 20, .timeout_ms = 30000 };
	a->ingest_h = httpd_new(a->base, o->ingest, &ho, err, sizeof(err));
	if (a->ingest_h == NULL) {
		cats_errorx("--ingest: %s", err);
		return CATS_EXIT_FAIL;
	}
	for (int i = 0; i < CATS_ING__N; i++)
		httpd_route(a->ingest_h, cats_ingest_paths[i], HTTPD_POST,
		    on_ingest, a);
	cats_info("C-SMA ingest on %s (port %d)", o->ingest,
	    httpd_port(a->ingest_h));
	return CATS_EXIT_OK;
}

/* ---- set up and end ---- */

int
cats_sel_app_init(struct cats_sel_app *a)
{
	struct cats_sel_opts *o = &a->o;
	char err[512];
	cats_dec_init(&a->dec, NULL);
	a->hellos = cats_hello_guard_new(cats_clock_now());
	a->cat = cats_svc_cat_new(0);
	a->cst = cats_cst_new(o->metric_ttl, 0);
	a->nrec = cats_nst_rec_new(o->net_ttl, 0);
	cats_nst_init(&a->nst);
	if (a->hellos == NULL || a->cat == NULL || a->cst == NULL ||
	    a->nrec == NULL || cats_nst_add(&a->nst, &cats_nst_rec_provider, a->nrec) < 0) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	/* Each C-SMA's site, for the ingest and the stream alike. */
	for (size_t i = 0; i < o->nsmas; i++) {
		const struct cats_sel_sma *sa = &o->smas[i];
		if (cats_cst_scope(a->cst, sa->id, sa->locators, sa->egresses,
		    err, sizeof(err)) < 0) {
			cats_errorx("--sma-locators/--sma-egresses %s: %s",
			    sa->id, err);
			return CATS_EXIT_USAGE;
		}
		if (sa->locators == NULL)
			cats_info("C-SMA %s: no --sma-locators, any locator "
			    "taken", sa->id);
	}
	if (o->tedb != NULL) {
		/* Measured paths first, the TE database's view behind them. */
		bool missing;
		a->te = cats_te_load(o->tedb, NULL, 1, &missing, err,
		    sizeof(err));
		if (a->te == NULL) {
			cats_errorx("%s", err);
			return missing ? CATS_EXIT_NOINPUT : CATS_EXIT_DATAERR;
		}
		a->tedb = cats_nst_tedb_new(0);
		if (a->tedb == NULL ||
		    cats_nst_add(&a->nst, &cats_nst_tedb_provider,
		    a->tedb) < 0) {
			cats_nst_tedb_provider.free(a->tedb);
			a->tedb = NULL;
			cats_errorx("out of memory");
			return CATS_EXIT_FAIL;
		}
		cats_nst_tedb_set(a->tedb, a->te);
	}
	cats_tool_hugepages();
	a->sel = cats_sel_new(&o->sel, a->cat, a->cst, &a->nst);
	if (a->sel == NULL || setup_forwarders(a) < 0) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	return CATS_EXIT_OK;
}

/* ---- the state file (--state) ---- */

static int
state_one(const struct cats_rec *r, void *arg)
{
	struct cats_buf *b = arg;
	return cats_rec_encode(r, b, false);
}

void
cats_sel_app_save_state(struct cats_sel_app *a, bool force)
{
	const char *path = a->o.state;
	if (path == NULL || a->o.replay)
		return;
	uint64_t mono = cats_clock_mono_ns() / 1000000;
	uint64_t gen = cats_cst_gen(a->cst);
	if (!force && (mono < a->state_ms + 1000 ||
	    (gen == a->state_gen && mono < a->state_ms + 5000)))
		return;
	a->state_ms = mono;
	a->state_gen = gen;
	struct cats_buf b = { 0 };
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = -1;
	const char *what = "encode";
	if (cats_cst_dump(a->cst, cats_clock_now(), state_one, &b) != 0)
		goto fail;
	what = "open";
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		goto fail;
	what = "write";
	if (cats_write_all(fd, b.p, b.len) < 0 || fdatasync(fd) < 0)
		goto fail;
	what = "close";
	int c = close(fd);
	fd = -1;
	if (c < 0)
		goto fail;
	what = "rename";
	if (rename(tmp, path) < 0)
		goto fail;
	a->state_writes++;
	cats_buf_free(&b);
	return;
fail:
	/* One line per run of failures, not one a second. */
	if (a->state_errors++ == 0 || force)
		cats_warnx("--state %s: %s: %s", path, what, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	cats_buf_free(&b);
}

/*
 * The state of the last run: what it dumped, applied as a start-up file
 * (entries expire at the times they had, so nothing expired comes back
 * fresh).  No file yet is a first start; a refused one is reported and
 * the run goes on with what could be applied.
 */
static void
load_state(struct cats_sel_app *a)
{
	struct stat st;
	if (stat(a->o.state, &st) < 0 && errno == ENOENT) {
		cats_info("--state %s: no state yet", a->o.state);
		return;
	}
	size_t n0 = cats_cst_count(a->cst);
	if (load_file(a, a->o.state, CATS_T_METRIC, NULL) != CATS_EXIT_OK)
		cats_warnx("--state %s: refused in part; going on",
		    a->o.state);
	purge(a, cats_clock_now());
	cats_info("--state %s: %zu CST entries restored", a->o.state,
	    cats_cst_count(a->cst) - n0);
}

int
cats_sel_app_load_files(struct cats_sel_app *a)
{
	struct cats_sel_opts *o = &a->o;
	int rc;
	if (o->services != NULL &&
	    (rc = load_file(a, o->services, CATS_T_SERVICE, a->cat)) != 0)
		return rc;
	if (o->state != NULL && !o->replay)
		load_state(a);
	if (o->metrics != NULL &&
	    (rc = load_file(a, o->metrics, CATS_T_METRIC, NULL)) != 0)
		return rc;
	if (o->net != NULL &&
	    (rc = load_file(a, o->net, CATS_T_NET, NULL)) != 0)
		return rc;
	return CATS_EXIT_OK;
}

int
cats_sel_app_output(struct cats_sel_app *a, int ofd, int sfd, int dfd)
{
	static const struct cats_stream_cbs outcbs = { .eof = on_out_eof,
		.drained = on_drained };
	static const struct cats_stream_cbs statscbs = {
		.drained = on_drained };
	a->out = cats_stream_new(a->base, -1, ofd, false, NULL, 0, &outcbs, a);
	if (a->out == NULL)
		return CATS_EXIT_FAIL;
	a->stats = a->out;
	cats_stream_batch(a->out, 256 * 1024);
	if (sfd >= 0 && sfd != ofd) {	/* "-" for both: one stream */
		a->stats = cats_stream_new(a->base, -1, sfd, false, NULL, 0,
		    &statscbs, a);
		if (a->stats == NULL)
			return CATS_EXIT_FAIL;
	}
	a->dump = dfd >= 0 && dfd == ofd ? a->out : a->stats;
	if (dfd >= 0 && dfd != sfd && dfd != ofd) {
		a->dump = cats_stream_new(a->base, -1, dfd, false, NULL, 0,
		    &statscbs, a);
		if (a->dump == NULL)
			return CATS_EXIT_FAIL;
	}
	return CATS_EXIT_OK;
}

int
cats_sel_app_input(struct cats_sel_app *a)
{
	static const struct cats_stream_cbs incbs = { .rec = on_in_rec,
		.bad = on_in_bad, .eof = on_in_eof };
	/*
	 * A character device that is no terminal (/dev/null) cannot be
	 * watched by epoll and holds nothing: the input is empty.
	 */
	struct stat st;
	bool empty_in = fstat(0, &st) == 0 && S_ISCHR(st.st_mode) &&
	    !isatty(0);
	if (empty_in)
		return CATS_EXIT_OK;
	a->in = cats_stream_new(a->base, 0, -1, false, &a->dec.lim, 0, &incbs,
	    a);
	if (a->in == NULL)
		return CATS_EXIT_FAIL;
	cats_stream_decode_into(a->in, &a->dec);
	return CATS_EXIT_OK;
}

int
cats_sel_app_listener(struct cats_sel_app *a, int fd, bool dgram,
    bool unix_sock)
{
	a->ls[a->nls].fd = fd;
	a->ls[a->nls].unix_sock = unix_sock;
	if (dgram) {
		a->ls[a->nls].dgram = true;
		struct cats_sel_conn *c = conn_new(a, fd, true, true);
		if (c == NULL)
			return -1;
		cats_stream_own(c->s);
		a->ls[a->nls].dconn = c;
	} else {
		/* A forwarder says hello (or a request) within the hello
		 * deadline; on a unix socket, whose peers SO_PEERCRED
		 * tells, a quiet one is closed only under a flood of such
		 * (listener.h). */
		static const struct cats_listener_cbs cbs = { on_accept,
			on_conn_closed };
		struct cats_listener_opts lo = { .name = "forwarder",
			.hello_ms = a->o.hello_ms,
			.hello_when_crowded_tagged = true };
		if (a->lst == NULL)
			a->lst = cats_listener_new(a->base, &lo, &cbs, a);
		if (a->lst == NULL || cats_listener_add(a->lst, fd,
		    unix_sock) < 0)
			return -1;
		if (a->paused)
			cats_listener_hold(a->lst, true);
	}
	a->nls++;
	return 0;
}

int
cats_sel_app_end(struct cats_sel_app *a)
{
	if (a->daemon)
		cats_sel_app_save_state(a, true);
	if (a->bad > 0 && a->rc == 0 && !a->daemon)
		a->rc = CATS_EXIT_DATAERR;
	if (cats_stream_flush(a->out) < 0 && a->rc == 0) {
		cats_tool_output_failed("output", errno);
		a->rc = CATS_EXIT_IOERR;
	}
	if (a->stats != a->out && cats_stream_flush(a->stats) < 0 && a->rc == 0)
		a->rc = CATS_EXIT_IOERR;
	if (a->dump != a->stats && cats_stream_flush(a->dump) < 0 && a->rc == 0)
		a->rc = CATS_EXIT_IOERR;
	return a->rc;
}

void
cats_sel_app_free(struct cats_sel_app *a)
{
	cats_listener_free(a->lst);
	cats_replay_free(a->hellos);
	a->lst = NULL;
	while (a->conns != NULL)
		conn_free(a->conns);
	for (size_t i = 0; i < a->nls; i++)
		if (!a->ls[i].dgram)
			close(a->ls[i].fd);
	cats_stream_free(a->in);
	if (a->dump != a->stats)
		cats_stream_free(a->dump);
	if (a->stats != a->out)
		cats_stream_free(a->stats);
	cats_stream_free(a->out);
	if (a->ingest_h != NULL)
		httpd_free(a->ingest_h);
	cats_ingest_free(a->ing);
	cats_keyring_free(&a->ikeys);
	cats_sel_free(a->sel);
	cats_nst_free(&a->nst);
	cats_te_free(a->te);
	cats_cst_free(a->cst);
	cats_svc_cat_free(a->cat);
	cats_keyring_free(&a->keys);
	cats_dec_free(&a->dec);
	cats_toks_free(&a->peek);
	cats_buf_free(&a->obuf);
	cats_conf_free(&a->cf);
}

