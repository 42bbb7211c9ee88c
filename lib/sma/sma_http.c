/*
 * sma_http.c - cats-sma's HTTP faces (see sma_http.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/http.h>

#include "base/clock.h"
#include "base/log.h"
#include "sma/sma_http.h"

/* POST /metrics, /update, /withdraw, /retrieve from a subordinate. */
static void
on_sub(struct evhttp_request *req, void *arg)
{
	struct sma_app *a = arg;
	if (!a->started)
		sma_app_start(a);
	cats_ingest_serve(a->sub_ing, req, cats_clock_now());
	sma_app_arm(a);
}

struct sma_sci *
sma_http_sci(struct sma_app *a, const char *csci_id)
{
	for (size_t i = 0; i < a->nscis; i++)
		if (strcmp(a->scis[i].csci_id, csci_id) == 0)
			return &a->scis[i];
	return NULL;
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
		snprintf(x->first, sizeof(x->first), "record %" PRIu64
		    ": %s%s%s", index, res->err.field,
		    res->err.field[0] ? ": " : "", res->err.reason);
	}
}

static void
on_push(struct evhttp_request *req, void *arg)
{
	struct sma_app *a = arg;
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
		sma_app_start(a);
	struct sma_src src = { .kind = SMA_SRC_PUSH, .peer = httpd_peer(req,
		peer, sizeof(peer)) };
	/*
	 * Mutual TLS: a certificate naming an SCI (SAN URI cats:sci:ID)
	 * binds the connection to that CSCI-ID, like a pull's, and the
	 * CS-IDs it names (cats:cs:ID), if any, are all it may report for.
	 */
	char ubuf[4096];
	const char *uris[2 * SMA_CERT_CS], *cs[2 * SMA_CERT_CS];
	int nu = httpd_peer_uris(req, ubuf, sizeof(ubuf), uris,
	    CATS_ARRAY_LEN(uris));
	for (int i = 0; i < nu; i++) {
		if (strncmp(uris[i], "cats:sci:", 9) == 0) {
			if (src.expect != NULL)
				nu = -3;
			else
				src.expect = uris[i] + 9;
		} else if (strncmp(uris[i], "cats:cs:", 8) == 0)
			cs[src.ncs++] = uris[i] + 8;
	}
	if (nu < -1 || src.ncs > SMA_CERT_CS) {
		const char *why = nu == -3 ? "names two CSCI-IDs" :
		    "names too many identities, or too long ones";
		a->cert_refused++;
		sma_audit(a->core, cats_clock_now(), "auth-fail",
		    "status=403 field=cert", "src=%s index=0 status=403 "
		    "field=cert reason=\"the client certificate %s\"",
		    src.peer, why);
		httpd_error(req, 403, "the client certificate %s", why);
		return;
	}
	src.cs_ids = cs;
	struct push_ctx x;
	memset(&x, 0, sizeof(x));
	sma_ingest(a->core, &a->dec, p, n, &src, cats_clock_now(), push_result,
	    &x);
	sma_app_arm(a);
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
	struct sma_app *a = arg;
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
	struct sma_app *a = arg;
	int64_t id = want_id(req);
	if (id < 0) {
		httpd_error(req, 400, "expected ?id=N or ?id=all");
		return;
	}
	int n = sma_quarantine_release(a->core, (uint64_t)id, cats_clock_now());
	sma_app_arm(a);
	if (n < 0)
		httpd_error(req, 404, "no quarantined report %" PRId64, id);
	else
		httpd_error(req, 200, "released %d", n);
}

static void
on_drop(struct evhttp_request *req, void *arg)
{
	struct sma_app *a = arg;
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
	struct sma_app *a = arg;
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
			r.u.metric.ts = cats_clock_now();
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
	struct sma_app *a = arg;
	struct cats_buf b = { 0 };
	struct view_ctx v = { &b };
	sma_uc_view(a->uc, view_line, &v);
	httpd_reply(req, 200, "application/jsonl", b.p, b.len);
	cats_buf_free(&b);
}

static void
steer_line(void *arg, const struct cats_rec *r)
{
	add_json_line(arg, cats_rec_to_json(r));
}

/* The redirects in force (cats-sma(1) LOCAL STEERING). */
static void
on_steer(struct evhttp_request *req, void *arg)
{
	struct sma_app *a = arg;
	struct cats_buf b = { 0 };
	if (a->steer != NULL)
		sma_steer_view(a->steer, steer_line, &b);
	httpd_reply(req, 200, "application/jsonl", b.p, b.len);
	cats_buf_free(&b);
}

static void
on_snapshot(struct evhttp_request *req, void *arg)
{
	struct sma_app *a = arg;
	sma_uc_snapshot(a->uc, cats_clock_now(), CATS_OP_FULL);
	httpd_error(req, 200, "snapshot sent");
}

static void
on_stats(struct evhttp_request *req, void *arg)
{
	struct cats_buf b = { 0 };
	add_json_line(&b, sma_app_stats_json(arg));
	httpd_reply(req, 200, "application/json", b.p, b.len);
	cats_buf_free(&b);
}

/* ---- pull and SSE ---- */

static void
pull_done(void *arg, const struct httpc_resp *resp)
{
	struct sma_sci *r = arg;
	struct sma_app *a = r->app;
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
			sma_app_start(a);
		sma_ingest(a->core, &a->dec, resp->body, resp->len, &src,
		    cats_clock_now(), push_result, &x);
		if (x.rejected && x.status != 409)
			cats_warnx("pull %s: %s", r->csci_id, x.first);
		sma_app_arm(a);
	}
	if (a->once && a->pulls_pending > 0 && --a->pulls_pending == 0 &&
	    (a->in == NULL || a->in_eof))
		sma_app_finish(a);
}

void
sma_http_pull(struct sma_sci *r)
{
	struct sma_app *a = r->app;
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
	sma_http_pull(arg);
}

static void
sse_event(void *arg, const struct httpc_sse_event *ev)
{
	struct sma_sci *r = arg;
	struct sma_app *a = r->app;
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
		sma_app_start(a);
	if (n <= 0) {
		cats_warnx("sse %s: event %s: data is not base64url CBOR",
		    r->csci_id, ev->id);
		sma_audit(a->core, cats_clock_now(), "reject",
		    "status=400 field=data", "src=%s index=0 status=400 "
		    "field=data reason=\"event data is not base64url\"",
		    r->peer);
		return;
	}
	sma_ingest(a->core, &a->dec, buf, (size_t)n, &src, cats_clock_now(),
	    push_result, &x);
	if (x.rejected && x.status != 409)
		cats_warnx("sse %s: %s", r->csci_id, x.first);
	sma_app_arm(a);
}

static void
sse_state(void *arg, bool connected, const char *why, uint64_t retry_ms)
{
	struct sma_sci *r = arg;
	if (connected)
		cats_info("sse %s: connected to %s", r->csci_id, r->sse_url);
	else
		cats_warnx("sse %s: %s; retrying in %" PRIu64 " ms", r->csci_id,
		    why, retry_ms);
}

static void
sci_stop(struct sma_sci *r)
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

int
sma_http_scis_start(struct sma_app *a, const char *const *last_ids)
{
	a->nscis = a->c->nscis;
	a->scis = calloc(a->nscis ? a->nscis : 1, sizeof(*a->scis));
	if (a->scis == NULL) {
		a->nscis = 0;
		return -1;
	}
	for (size_t i = 0; i < a->nscis; i++) {
		const struct sma_cfg_sci *ci = &a->c->scis[i];
		struct sma_sci *r = &a->scis[i];
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
	return 0;
}

void
sma_http_scis_stop(struct sma_app *a)
{
	for (size_t i = 0; i < a->nscis; i++)
		sci_stop(&a->scis[i]);
	free(a->scis);
	a->scis = NULL;
	a->nscis = 0;
}

/* ---- routes ---- */

void
sma_http_push_routes(struct sma_app *a, struct httpd *h)
{
	httpd_route(h, "/reports", HTTPD_POST, on_push, a);
	httpd_route(h, "/health", HTTPD_GET, on_health, a);
	for (int k = 0; a->sub_ing && k < CATS_ING__N; k++)
		httpd_route(h, cats_ingest_paths[k], HTTPD_POST, on_sub, a);
}

void
sma_http_admin_routes(struct sma_app *a, struct httpd *h)
{
	httpd_route(h, "/quarantine", HTTPD_GET, on_quarantine, a);
	httpd_route(h, "/quarantine/release", HTTPD_POST, on_release, a);
	httpd_route(h, "/quarantine/drop", HTTPD_POST, on_drop, a);
	httpd_route(h, "/cache", HTTPD_GET, on_cache, a);
	httpd_route(h, "/advertised", HTTPD_GET, on_advertised, a);
	httpd_route(h, "/snapshot", HTTPD_POST, on_snapshot, a);
	httpd_route(h, "/steer", HTTPD_GET, on_steer, a);
	httpd_route(h, "/stats", HTTPD_GET, on_stats, a);
}
