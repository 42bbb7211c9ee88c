/*
 * test_httpc.c - the SSE parser, and httpc against httpd over loopback:
 * GET, POST, body caps, errors, event streams with Last-Event-ID.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <event2/http.h>

#include "net/httpc.h"
#include "net/httpd.h"
#include "t.h"

/* ---- the parser ---- */

struct got {
	char type[8][64], id[8][64], data[8][256];
	int n;
};

static void
on_ev(void *arg, const struct httpc_sse_event *ev)
{
	struct got *g = arg;
	if (g->n == 8)
		return;
	snprintf(g->type[g->n], 64, "%s", ev->type);
	snprintf(g->id[g->n], 64, "%s", ev->id);
	snprintf(g->data[g->n], 256, "%s", ev->data);
	g->n++;
}

static struct got
parse(const char *s, size_t step, size_t max)
{
	struct httpc_sse_parser p;
	struct got g;
	memset(&g, 0, sizeof(g));
	httpc_sse_parser_init(&p, max);
	size_t n = strlen(s);
	for (size_t i = 0; i < n; i += step)
		httpc_sse_feed(&p, s + i, n - i < step ? n - i : step, on_ev, &g);
	httpc_sse_parser_free(&p);
	return g;
}

static void
test_parser(void)
{
	struct got g = parse("data: hello\n\n", 1000, 0);
	T_OK(g.n == 1 && strcmp(g.type[0], "message") == 0 &&
	    strcmp(g.data[0], "hello") == 0, "one event, default type");
	g = parse(": comment\nevent: sci-report\nid: 7\ndata: a\ndata:b\n\n"
	    "data: c\n\n", 1000, 0);
	T_OK(g.n == 2 && strcmp(g.type[0], "sci-report") == 0 &&
	    strcmp(g.id[0], "7") == 0 && strcmp(g.data[0], "a\nb") == 0,
	    "type, id, two data lines (one without the space)");
	T_OK(strcmp(g.type[1], "message") == 0 && strcmp(g.id[1], "7") == 0,
	    "the type resets, the id stays");
	const char *mixed = "\xef\xbb\xbf" "data: x\r\n\r\ndata: y\r\rdata: z\n\n";
	g = parse(mixed, 1000, 0);
	T_OK(g.n == 3 && strcmp(g.data[0], "x") == 0 &&
	    strcmp(g.data[1], "y") == 0 && strcmp(g.data[2], "z") == 0,
	    "BOM, CRLF, CR and LF line ends");
	struct got g1 = parse(mixed, 1, 0);
	T_OK(g1.n == 3 && memcmp(&g, &g1, sizeof(g)) == 0,
	    "byte by byte gives the same (CRLF split across reads)");
	g = parse("event: x\n\nid: 9\n\ndata\n\n", 1000, 0);
	T_OK(g.n == 1 && strcmp(g.data[0], "") == 0 && strcmp(g.id[0], "9") == 0,
	    "no data, no event; a bare \"data\" field is an empty line");
	char big[400];
	memset(big, 'a', sizeof(big));
	snprintf(big, sizeof(big), "data: %0300d\n\ndata: ok\n\n", 1);
	g = parse(big, 7, 100);
	T_OK(g.n == 1 && strcmp(g.data[0], "ok") == 0,
	    "an event over the cap is dropped whole, the next comes");
	struct httpc_sse_parser p;
	httpc_sse_parser_init(&p, 64);
	httpc_sse_feed(&p, "retry: 2500\ndata: 1\ndata: 2\n", 27, NULL, NULL);
	T_OK(p.retry_ms == 2500, "retry field");
	httpc_sse_parser_free(&p);
}

/* ---- loopback ---- */

struct ctx {
	struct event_base *base;
	struct httpc *c;
	int done;
	struct httpc_resp last;
	char body[256];
	char lastid[3][64];
	int conns;
	struct got ev;
	int connected, lost;
};

static void
h_get(struct evhttp_request *req, void *arg)
{
	(void)arg;
	httpd_reply(req, 200, "text/plain", "pong", 4);
}

static void
h_echo(struct evhttp_request *req, void *arg)
{
	size_t n;
	char ct[64];
	(void)arg;
	const uint8_t *p = httpd_body(req, &n);
	httpd_reply(req, 200, httpd_ctype(req, ct, sizeof(ct)), p, n);
}

static void
h_big(struct evhttp_request *req, void *arg)
{
	(void)arg;
	char *b = calloc(1, 300000);
	httpd_reply(req, 200, "application/octet-stream", b, 300000);
	free(b);
}

static void
h_events(struct evhttp_request *req, void *arg)
{
	struct ctx *x = arg;
	const char *id = httpd_header(req, "Last-Event-ID");
	if (x->conns < 3)
		snprintf(x->lastid[x->conns], 64, "%s", id ? id : "none");
	x->conns++;
	struct httpd_sse *c = httpd_sse_start(req, NULL, NULL);
	if (x->conns == 1) {
		httpd_sse_send(c, "t", "1", "first", 0);
		httpd_sse_send(c, "t", "2", "second", 0);
		httpd_sse_end(c);
	} else {
		httpd_sse_comment(c, "hello");
		httpd_sse_send(c, "t", "3", "third", 0);
		httpd_sse_end(c);
	}
}

static void
done(void *arg, const struct httpc_resp *r)
{
	struct ctx *x = arg;
	x->last = *r;
	snprintf(x->body, sizeof(x->body), "%.*s", (int)(r->len > 200 ? 200 :
	    r->len), r->body ? (const char *)r->body : "");
	x->last.body = NULL;
	x->last.error = NULL;
	x->last.ctype = NULL;
	x->done++;
	event_base_loopbreak(x->base);
}

static void
run(struct ctx *x, int secs)
{
	struct timeval tv = { secs, 0 };
	event_base_loopexit(x->base, &tv);
	event_base_dispatch(x->base);
}

static void
sse_ev(void *arg, const struct httpc_sse_event *ev)
{
	struct ctx *x = arg;
	on_ev(&x->ev, ev);
	if (x->ev.n == 3)
		event_base_loopbreak(x->base);
}

static void
sse_state(void *arg, bool connected, const char *why, uint64_t retry)
{
	struct ctx *x = arg;
	(void)why;
	(void)retry;
	if (connected)
		x->connected++;
	else
		x->lost++;
}

static void
test_loopback(void)
{
	struct ctx x;
	char err[256], url[128];
	memset(&x, 0, sizeof(x));
	x.base = event_base_new();
	struct httpd_opts o = { .max_body = 1000, .timeout_ms = 2000 };
	struct httpd *h = httpd_new(x.base, "http://127.0.0.1:0/", &o, err,
	    sizeof(err));
	T_OK(h != NULL && httpd_port(h) > 0, "listening (%s)", h ? "" : err);
	if (h == NULL)
		return;
	httpd_route(h, "/get", HTTPD_GET, h_get, &x);
	httpd_route(h, "/echo", HTTPD_POST, h_echo, &x);
	httpd_route(h, "/big", HTTPD_GET, h_big, &x);
	httpd_route(h, "/events", HTTPD_GET, h_events, &x);
	x.c = httpc_new(x.base);
	int port = httpd_port(h);

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/get", port);
	struct httpc_req_opts g = { .url = url };
	httpc_request(x.c, &g, done, &x);
	run(&x, 5);
	T_OK(x.done == 1 && x.last.code == 0 && x.last.status == 200 &&
	    strcmp(x.body, "pong") == 0, "GET");

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/echo", port);
	struct httpc_req_opts p = { .method = "POST", .url = url,
		.body = "abc", .len = 3, .ctype = "application/cbor" };
	httpc_request(x.c, &p, done, &x);
	run(&x, 5);
	T_OK(x.done == 2 && x.last.status == 200 && strcmp(x.body, "abc") == 0,
	    "POST, echoed");
	char big[2000];
	memset(big, 'x', sizeof(big));
	p.body = big;
	p.len = sizeof(big);
	httpc_request(x.c, &p, done, &x);
	run(&x, 5);
	T_OK(x.done == 3 && x.last.status == 413, "a body over max_body: 413 "
	    "(%ld)", x.last.status);

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/get", port);
	p.url = url;
	p.len = 3;
	httpc_request(x.c, &p, done, &x);
	run(&x, 5);
	T_OK(x.done == 4 && x.last.status == 405 &&
	    strcmp(x.body, "method not allowed\n") == 0,
	    "wrong method: 405, one line");
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/nothing", port);
	httpc_request(x.c, &g, done, &x);
	g.url = url;
	httpc_request(x.c, &g, done, &x);
	run(&x, 5);
	run(&x, 5);
	T_OK(x.done == 6 && x.last.status == 404, "unknown path: 404");

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/big", port);
	struct httpc_req_opts b = { .url = url, .max_body = 100000 };
	httpc_request(x.c, &b, done, &x);
	run(&x, 5);
	T_OK(x.done == 7 && x.last.code != 0 && x.last.too_big,
	    "an answer over max_body is cut off");

	struct httpc_req_opts d = { .url = "http://127.0.0.1:1/x",
		.timeout_ms = 2000 };
	httpc_request(x.c, &d, done, &x);
	run(&x, 5);
	T_OK(x.done == 8 && x.last.code != 0 && x.last.status == 0,
	    "connection refused reported");
	/* A cancelled request never calls back. */
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/get", port);
	g.url = url;
	httpc_cancel(httpc_request(x.c, &g, done, &x));
	run(&x, 1);
	T_OK(x.done == 8 && httpc_active(x.c) == 0, "cancelled");

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/events", port);
	struct httpc_sse_opts so = { .url = url, .backoff_min_ms = 50,
		.backoff_max_ms = 100, .stall_ms = 2000 };
	struct httpc_sse_cbs cbs = { sse_ev, sse_state };
	struct httpc_sse *s = httpc_sse_open(x.c, &so, &cbs, &x);
	run(&x, 5);
	T_OK(x.ev.n == 3 && strcmp(x.ev.data[0], "first") == 0 &&
	    strcmp(x.ev.data[2], "third") == 0 && strcmp(x.ev.id[2], "3") == 0,
	    "event stream across a reconnection");
	T_OK(strcmp(x.lastid[0], "none") == 0 && strcmp(x.lastid[1], "2") == 0,
	    "the reconnection sends Last-Event-ID 2 (%s)", x.lastid[1]);
	T_OK(x.connected >= 2 && x.lost >= 1 && httpc_sse_attempts(s) >= 2,
	    "state callbacks");
	httpc_sse_close(s);
	httpc_free(x.c);
	httpd_free(h);
	event_base_free(x.base);
}

int
main(void)
{
	test_parser();
	test_loopback();
	return t_done();
}
