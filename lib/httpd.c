/*
 * httpd.c - evhttp listeners, limits, one-line errors and SSE responses.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "cats.h"
#include "ep.h"
#include "httpd.h"

struct route {
	char *path;
	unsigned methods;
	httpd_fn fn;
	void *arg;
};

struct httpd {
	struct evhttp *http;
	struct evhttp_bound_socket *bound;
	int port;
	struct route **routes;	/* registered with evhttp: never move */
	size_t nroutes;
};

static void
not_found(struct evhttp_request *req, void *arg)
{
	(void)arg;
	httpd_error(req, 404, "no such resource");
}

struct httpd *
httpd_new(struct event_base *base, const char *endpoint,
    const struct httpd_opts *o, char *err, size_t errlen)
{
	struct cats_ep ep;
	char why[256];
	if (cats_ep_parse(endpoint, &ep, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: %s", endpoint, why);
		return NULL;
	}
	if (ep.kind == CATS_EP_HTTPS) {
		snprintf(err, errlen, "%s: this server speaks plain HTTP; put "
		    "a TLS terminator in front of it", endpoint);
		return NULL;
	}
	if (ep.kind != CATS_EP_HTTP && ep.kind != CATS_EP_TCP &&
	    ep.kind != CATS_EP_UNIX) {
		snprintf(err, errlen, "%s: an HTTP server listens on http://, "
		    "tcp: or unix:", endpoint);
		return NULL;
	}
	struct httpd *h = calloc(1, sizeof(*h));
	if (h == NULL || (h->http = evhttp_new(base)) == NULL) {
		free(h);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	size_t max = o && o->max_body ? o->max_body : (1u << 20);
	uint64_t tmo = o && o->timeout_ms ? o->timeout_ms : 10000;
	evhttp_set_max_body_size(h->http, (ev_ssize_t)max);
	evhttp_set_max_headers_size(h->http, 16384);
	struct timeval tv = { (time_t)(tmo / 1000), (suseconds_t)(tmo % 1000) *
		1000 };
	evhttp_set_timeout_tv(h->http, &tv);
	evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_HEAD);
	evhttp_set_default_content_type(h->http, "text/plain");
	evhttp_set_gencb(h->http, not_found, NULL);
	struct cats_ep lep = ep;
	if (ep.kind == CATS_EP_HTTP) {
		/* The endpoint keeps the URL; its authority is where to
		 * listen. */
		struct evhttp_uri *u = evhttp_uri_parse(ep.path);
		const char *host = u ? evhttp_uri_get_host(u) : NULL;
		if (host == NULL || host[0] == '\0') {
			if (u)
				evhttp_uri_free(u);
			snprintf(err, errlen, "%s: no host in the URL", endpoint);
			httpd_free(h);
			return NULL;
		}
		size_t hl = strlen(host);
		if (host[0] == '[' && hl > 2 && host[hl - 1] == ']')
			snprintf(lep.host, sizeof(lep.host), "%.*s",
			    (int)(hl - 2), host + 1);
		else
			cats_strlcpy(lep.host, host, sizeof(lep.host));
		int port = evhttp_uri_get_port(u);
		snprintf(lep.port, sizeof(lep.port), "%u",
		    (unsigned)(port > 0 && port < 65536 ? port : 80));
		evhttp_uri_free(u);
		lep.kind = CATS_EP_TCP;
	}
	int fd = cats_ep_listen(&lep, why, sizeof(why));
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", endpoint, why);
		httpd_free(h);
		return NULL;
	}
	h->bound = evhttp_accept_socket_with_handle(h->http, fd);
	if (h->bound == NULL) {
		close(fd);
		snprintf(err, errlen, "%s: cannot accept", endpoint);
		httpd_free(h);
		return NULL;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET)
			h->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		else if (ss.ss_family == AF_INET6)
			h->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	}
	return h;
}

void
httpd_free(struct httpd *h)
{
	if (h == NULL)
		return;
	if (h->http)
		evhttp_free(h->http);
	for (size_t i = 0; i < h->nroutes; i++) {
		free(h->routes[i]->path);
		free(h->routes[i]);
	}
	free(h->routes);
	free(h);
}

struct evhttp *
httpd_evhttp(struct httpd *h)
{
	return h->http;
}

int
httpd_port(const struct httpd *h)
{
	return h->port;
}

static void
route_cb(struct evhttp_request *req, void *arg)
{
	struct route *r = arg;
	enum evhttp_cmd_type t = evhttp_request_get_command(req);
	unsigned m = t == EVHTTP_REQ_GET || t == EVHTTP_REQ_HEAD ? HTTPD_GET
	    : t == EVHTTP_REQ_POST ? HTTPD_POST : 0;
	if ((m & r->methods) == 0) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Allow", r->methods == HTTPD_GET ? "GET" :
		    r->methods == HTTPD_POST ? "POST" : "GET, POST");
		httpd_error(req, 405, "method not allowed");
		return;
	}
	r->fn(req, r->arg);
}

int
httpd_route(struct httpd *h, const char *path, unsigned methods, httpd_fn fn,
    void *arg)
{
	struct route *v = calloc(1, sizeof(*v));
	void *nv = realloc(h->routes, (h->nroutes + 1) * sizeof(*h->routes));
	if (nv != NULL)
		h->routes = nv;
	if (v == NULL || nv == NULL || (v->path = strdup(path)) == NULL) {
		free(v);
		return -1;
	}
	v->methods = methods;
	v->fn = fn;
	v->arg = arg;
	if (evhttp_set_cb(h->http, path, route_cb, v) != 0) {
		free(v->path);
		free(v);
		return -1;
	}
	h->routes[h->nroutes++] = v;
	return 0;
}

void
httpd_reply(struct evhttp_request *req, int code, const char *ctype,
    const void *body, size_t n)
{
	struct evbuffer *b = evbuffer_new();
	if (b == NULL) {
		evhttp_send_error(req, 500, NULL);
		return;
	}
	if (ctype != NULL)
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Content-Type", ctype);
	if (n > 0)
		evbuffer_add(b, body, n);
	evhttp_send_reply(req, code, NULL, b);
	evbuffer_free(b);
}

void
httpd_error(struct evhttp_request *req, int code, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	for (int i = 0; i < n; i++)
		if (line[i] == '\n' || line[i] == '\r')
			line[i] = ' ';
	line[n++] = '\n';
	httpd_reply(req, code, "text/plain; charset=utf-8", line, (size_t)n);
}

const uint8_t *
httpd_body(struct evhttp_request *req, size_t *n)
{
	struct evbuffer *b = evhttp_request_get_input_buffer(req);
	*n = evbuffer_get_length(b);
	if (*n == 0)
		return NULL;
	return evbuffer_pullup(b, -1);
}

const char *
httpd_header(struct evhttp_request *req, const char *name)
{
	return evhttp_find_header(evhttp_request_get_input_headers(req), name);
}

const char *
httpd_ctype(struct evhttp_request *req, char *buf, size_t len)
{
	const char *ct = httpd_header(req, "Content-Type");
	size_t i = 0;
	if (len == 0)
		return "";
	for (; ct && ct[i] && ct[i] != ';' && ct[i] != ' ' && i + 1 < len; i++)
		buf[i] = (char)tolower((unsigned char)ct[i]);
	buf[i] = '\0';
	return buf;
}

const char *
httpd_peer(struct evhttp_request *req, char *buf, size_t len)
{
	struct evhttp_connection *c = evhttp_request_get_connection(req);
	char *addr = NULL;
	ev_uint16_t port = 0;
	if (c != NULL)
		evhttp_connection_get_peer(c, &addr, &port);
	snprintf(buf, len, "%s:%u", addr && addr[0] ? addr : "local",
	    (unsigned)port);
	return buf;
}

const char *
httpd_query(struct evhttp_request *req, const char *key, char *buf,
    size_t len)
{
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
	const char *q = u ? evhttp_uri_get_query(u) : NULL;
	struct evkeyvalq kv;
	const char *v = NULL;
	if (q == NULL || evhttp_parse_query_str(q, &kv) != 0)
		return NULL;
	const char *f = evhttp_find_header(&kv, key);
	if (f != NULL) {
		cats_strlcpy(buf, f, len);
		v = buf;
	}
	evhttp_clear_headers(&kv);
	return v;
}

/* ---- Server-Sent Events ---- */

struct httpd_sse {
	struct evhttp_request *req;
	struct evhttp_connection *conn;
	void (*closed)(void *, struct httpd_sse *);
	void *arg;
};

static void
sse_closed(struct evhttp_connection *conn, void *arg)
{
	struct httpd_sse *c = arg;
	evhttp_connection_set_closecb(conn, NULL, NULL);
	if (c->closed)
		c->closed(c->arg, c);
	free(c);
}

struct httpd_sse *
httpd_sse_start(struct evhttp_request *req,
    void (*closed)(void *, struct httpd_sse *), void *arg)
{
	struct httpd_sse *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		httpd_error(req, 503, "out of memory");
		return NULL;
	}
	c->req = req;
	c->conn = evhttp_request_get_connection(req);
	c->closed = closed;
	c->arg = arg;
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	evhttp_add_header(h, "Content-Type", "text/event-stream");
	evhttp_add_header(h, "Cache-Control", "no-cache");
	evhttp_send_reply_start(req, 200, "OK");
	evhttp_connection_set_closecb(c->conn, sse_closed, c);
	return c;
}

static size_t
queued(struct httpd_sse *c)
{
	struct bufferevent *bev = evhttp_connection_get_bufferevent(c->conn);
	return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

int
httpd_sse_send(struct httpd_sse *c, const char *type, const char *id,
    const char *data, size_t max_queue)
{
	if (max_queue && queued(c) > max_queue)
		return -1;
	struct evbuffer *b = evbuffer_new();
	if (b == NULL)
		return -1;
	if (type)
		evbuffer_add_printf(b, "event: %s\n", type);
	if (id)
		evbuffer_add_printf(b, "id: %s\n", id);
	evbuffer_add_printf(b, "data: %s\n\n", data);
	evhttp_send_reply_chunk(c->req, b);
	evbuffer_free(b);
	return 0;
}

int
httpd_sse_comment(struct httpd_sse *c, const char *text)
{
	struct evbuffer *b = evbuffer_new();
	if (b == NULL)
		return -1;
	evbuffer_add_printf(b, ": %s\n", text);
	evhttp_send_reply_chunk(c->req, b);
	evbuffer_free(b);
	return 0;
}

void
httpd_sse_end(struct httpd_sse *c)
{
	evhttp_connection_set_closecb(c->conn, NULL, NULL);
	evhttp_send_reply_end(c->req);
	free(c);
}
