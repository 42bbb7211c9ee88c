/*
 * httpd.c - evhttp listeners, limits, one-line errors and SSE responses.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

#include "base/cats.h"
#include "base/clock.h"
#include "net/ep.h"
#include "base/htab.h"
#include "net/httpd.h"
#include "base/log.h"

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
	size_t max_body;
	uint64_t timeout_ms;
	struct httpd_stats st;
};

/*
 * Body limits ahead of evhttp.  libevent 2.1 answers an oversized body
 * itself (413 with its own HTML body) and tells nobody, and it has no hook
 * to change that (evhttp_set_newreqcb and evhttp_set_errorcb came in 2.2).
 * So every connection gets its own socket bufferevent (evhttp_set_bevcb),
 * and a callback on its input buffer, which runs after each read from the
 * socket and before evhttp parses what came in, follows the HTTP/1.1
 * framing the way evhttp does (request line, headers, Content-Length or
 * chunked, trailers; a body only for POST, PUT and PATCH).  When a request
 * declares more than max_body bytes (Content-Length, or chunk sizes that add
 * up past it), or is still arriving 3 x timeout after it began, the watch
 * empties the input buffer (evhttp never sees the request), writes a
 * one-line answer straight to the socket (413 or 408, Connection: close),
 * shuts the sending side, audits and counts it, and then discards what the
 * client still sends (up to LINGER bytes: a lingering close, so that the
 * client reads the answer rather than a reset), then shuts the receiving
 * side too and evhttp frees the connection on the end of file.  Input the
 * watch cannot follow (a malformed head, a chunk extension, a folded
 * header) is left to evhttp, whose own limit (the same max_body) stays as
 * the backstop.
 *
 * The watches are kept by bufferevent address, process-wide (the input
 * buffer callback has no way back to its bufferevent, and a socket
 * bufferevent has no free hook): a new connection whose bufferevent reuses
 * the address of a freed one takes over (and resets) its watch, so there
 * are never more watches than connections open at the busiest moment.
 */
enum { W_START = HTTPD_FR_START, W_HEAD, W_BODY, W_CSIZE, W_CDATA,
	W_TRAILER, W_LOST = HTTPD_FR_LOST, W_DISCARD };

#define LINGER (256u << 10)

struct watch {
	struct bufferevent *bev;	/* the key */
	struct httpd *h;		/* NULL: the server is gone */
	uint64_t discarded;
	struct httpd_framer f;
};

static struct cats_htab watches;
static size_t nservers;

static bool
watch_eq(const void *item, const void *key)
{
	return ((const struct watch *)item)->bev == key;
}

static uint64_t
watch_hash(const void *bev)
{
	return cats_hash(&bev, sizeof(bev));
}

static bool
prefix_ci(const char *s, size_t n, const char *p)
{
	size_t k = strlen(p);
	return n >= k && strncasecmp(s, p, k) == 0;
}

/* The value of a "name:" header line, trimmed, into v. */
static bool
header_value(const struct httpd_framer *w, size_t namelen, char *v, size_t vlen)
{
	size_t n = w->llen, i = namelen;
	if (n > sizeof(w->line))
		return false;	/* longer than we keep: not followed */
	while (i < n && (w->line[i] == ' ' || w->line[i] == '\t'))
		i++;
	while (n > i && (w->line[n - 1] == ' ' || w->line[n - 1] == '\t'))
		n--;
	if (n - i >= vlen)
		return false;
	memcpy(v, w->line + i, n - i);
	v[n - i] = '\0';
	return true;
}

/* One complete line (without its end) in the line-oriented states. */
static void
watch_line(struct httpd_framer *w)
{
	size_t n = w->llen < sizeof(w->line) ? w->llen : sizeof(w->line);
	const char *l = w->line;
	char v[48];
	switch (w->st) {
	case W_START:
		if (w->llen == 0)
			return;
		/* evhttp: a body only for these (evhttp_method_may_have_body);
		 * methods are case-sensitive */
		w->body_method = (n > 5 && memcmp(l, "POST ", 5) == 0) ||
		    (n > 4 && memcmp(l, "PUT ", 4) == 0) ||
		    (n > 6 && memcmp(l, "PATCH ", 6) == 0);
		w->chunked = w->have_cl = w->cl_bad = w->have_te = false;
		w->st = W_HEAD;
		return;
	case W_HEAD:
		if (w->llen == 0) {
			if (!w->body_method) {
				w->st = W_START;
			} else if (w->chunked) {
				w->total = 0;
				w->st = W_CSIZE;
			} else if (w->cl_bad) {
				w->st = W_LOST;	/* evhttp answers 400 */
			} else if (w->have_cl && w->cl > 0) {
				w->left = w->cl;
				w->st = W_BODY;
			} else {
				w->st = W_START;
			}
			return;
		}
		if (l[0] == ' ' || l[0] == '\t') {
			/* a folded header: could continue one we read */
			w->st = W_LOST;
			return;
		}
		/* evhttp looks at the first of each */
		if (prefix_ci(l, n, "content-length:") && !w->have_cl) {
			w->have_cl = true;
			if (!header_value(w, 15, v, sizeof(v)) || v[0] == '\0') {
				w->cl_bad = true;
				return;
			}
			uint64_t x = 0;
			for (const char *p = v; *p; p++) {
				if (*p < '0' || *p > '9') {
					w->cl_bad = true;
					return;
				}
				x = x > UINT64_MAX / 10 - 1 ? UINT64_MAX / 10 :
				    x * 10 + (uint64_t)(*p - '0');
			}
			w->cl = x;
		} else if (prefix_ci(l, n, "transfer-encoding:") && !w->have_te) {
			w->have_te = true;
			if (!header_value(w, 18, v, sizeof(v)))
				w->st = W_LOST;
			else if (strcasecmp(v, "chunked") == 0)
				w->chunked = true;
		}
		return;
	case W_CSIZE: {
		if (w->llen == 0)
			return;	/* the end of the previous chunk's data */
		uint64_t x = 0;
		size_t i = 0;
		if (w->llen > sizeof(w->line)) {
			w->st = W_LOST;
			return;
		}
		for (; i < n && i < 16; i++) {
			int c = l[i], d = c >= '0' && c <= '9' ? c - '0' :
			    c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			    c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
			if (d < 0)
				break;
			x = x * 16 + (uint64_t)d;
		}
		while (i < n && l[i] == ' ')
			i++;
		if (i == 0 || i < n) {
			w->st = W_LOST;	/* extensions, junk: evhttp's */
			return;
		}
		if (x == 0) {
			w->st = W_TRAILER;
		} else if (x > w->max_body || w->total + x >
		    w->max_body) {
			w->total = w->max_body + 1;	/* refused */
		} else {
			w->total += x;
			w->left = x;
			w->st = W_CDATA;
		}
		return;
	}
	case W_TRAILER:
		if (w->llen == 0)
			w->st = W_START;
		return;
	}
}

void
httpd_framer_init(struct httpd_framer *f, size_t max_body)
{
	memset(f, 0, sizeof(*f));
	f->max_body = max_body;
}

bool
httpd_framer_feed(struct httpd_framer *w, const char *p, size_t n)
{
	while (n > 0 && w->st != W_LOST) {
		if (w->st == W_BODY || w->st == W_CDATA) {
			size_t k = w->left < n ? (size_t)w->left : n;
			w->left -= k;
			p += k;
			n -= k;
			if (w->left == 0 && w->st == W_BODY) {
				w->st = W_START;
				w->began_ns = 0;	/* a whole request */
			} else if (w->left == 0) {
				w->st = W_CSIZE;
			}
			continue;
		}
		if (w->st == W_START && w->llen == 0 && w->began_ns == 0)
			w->began_ns = cats_clock_mono_ns();
		const char *e = memchr(p, '\n', n);
		size_t k = e ? (size_t)(e - p) : n;
		if (w->llen < sizeof(w->line)) {
			size_t c = sizeof(w->line) - w->llen;
			memcpy(w->line + w->llen, p, k < c ? k : c);
		}
		w->llen += k;
		if (k > 0)
			w->lastc = p[k - 1];
		p += k;
		n -= k;
		if (e == NULL)
			break;
		p++;
		n--;
		if (w->llen > 0 && w->lastc == '\r')
			w->llen--;
		w->lastc = 0;
		uint8_t was = w->st;
		watch_line(w);
		w->llen = 0;
		if (was == W_HEAD && w->st == W_BODY && w->cl > w->max_body)
			return false;
		if (w->st == W_CSIZE && w->total > w->max_body)
			return false;
		if ((w->st == W_START) && was != W_START)
			w->began_ns = 0;	/* a whole request */
	}
	return true;
}

static void
peer_of(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char a[INET6_ADDRSTRLEN] = "local";
	unsigned port = 0;
	if (fd >= 0 && getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
			port = ntohs(s4->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
			port = ntohs(s6->sin6_port);
		}
	}
	snprintf(buf, len, "%s:%u", a, port);
}

/* Answer, audit and count a refused request; then linger. */
static void
watch_refuse(struct watch *w, struct evbuffer *in, int code)
{
	struct httpd *h = w->h;
	int fd = bufferevent_getfd(w->bev);
	char peer[80], line[128], msg[400];
	peer_of(fd, peer, sizeof(peer));
	if (code == 413) {
		h->st.too_large++;
		snprintf(line, sizeof(line), "body over %zu bytes", h->max_body);
	} else {
		h->st.too_slow++;
		snprintf(line, sizeof(line), "request not complete within "
		    "%" PRIu64 " ms", 3 * h->timeout_ms);
	}
	cats_audit("reject", "src=%s index=0 status=%d reason=\"%s\"", peer,
	    code, line);
	w->f.st = W_DISCARD;
	w->discarded = evbuffer_get_length(in);
	evbuffer_drain(in, w->discarded);
	int n = snprintf(msg, sizeof(msg), "HTTP/1.1 %d %s\r\n"
	    "Content-Type: text/plain; charset=utf-8\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n", code,
	    code == 413 ? "Payload Too Large" : "Request Timeout",
	    strlen(line) + 1, line);
	if (fd >= 0) {
		/* evhttp is reading (its output is empty): the socket takes a
		 * short answer whole; if not, the client gets the close. */
		(void)!send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
		shutdown(fd, SHUT_WR);
	}
}

static void
watch_cb(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
	struct watch *w = arg;
	if (info->n_added == 0 || w->h == NULL || w->f.st == W_LOST)
		return;
	if (w->f.st == W_DISCARD) {
		size_t n = evbuffer_get_length(in);
		w->discarded += n;
		evbuffer_drain(in, n);
		if (w->discarded > LINGER) {
			/* enough: evhttp reads the end of file and closes */
			shutdown(bufferevent_getfd(w->bev), SHUT_RD);
			w->f.st = W_LOST;
		}
		return;
	}
	size_t len = evbuffer_get_length(in);
	if (info->n_added > len) {
		w->f.st = W_LOST;
		return;
	}
	struct evbuffer_ptr at;
	if (evbuffer_ptr_set(in, &at, len - info->n_added,
	    EVBUFFER_PTR_SET) < 0) {
		w->f.st = W_LOST;
		return;
	}
	size_t todo = info->n_added;
	while (todo > 0) {
		struct evbuffer_iovec v;
		if (evbuffer_peek(in, (ev_ssize_t)todo, &at, &v, 1) < 1)
			break;
		size_t k = v.iov_len < todo ? v.iov_len : todo;
		if (!httpd_framer_feed(&w->f, v.iov_base, k)) {
			watch_refuse(w, in, 413);
			return;
		}
		todo -= k;
		if (todo == 0 || evbuffer_ptr_set(in, &at, k,
		    EVBUFFER_PTR_ADD) < 0)
			break;
	}
	/* A slow trickle keeps the idle timer from firing: a request must
	 * arrive whole within 3 x timeout. */
	if (w->f.began_ns != 0 && w->f.st != W_LOST && (cats_clock_mono_ns() -
	    w->f.began_ns) / 1000000 > 3 * w->h->timeout_ms)
		watch_refuse(w, in, 408);
}

static struct bufferevent *
new_bev(struct event_base *base, void *arg)
{
	struct httpd *h = arg;
	struct bufferevent *bev = bufferevent_socket_new(base, -1,
	    BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL)
		return NULL;
	uint64_t hv = watch_hash(bev);
	struct watch *w = cats_htab_get(&watches, hv, watch_eq, bev);
	if (w == NULL) {
		w = calloc(1, sizeof(*w));
		if (w == NULL || cats_htab_put(&watches, hv, w) < 0) {
			free(w);
			return bev;	/* evhttp's own limit only */
		}
	}
	memset(w, 0, sizeof(*w));
	w->bev = bev;
	w->h = h;
	httpd_framer_init(&w->f, h->max_body);
	if (evbuffer_add_cb(bufferevent_get_input(bev), watch_cb, w) == NULL)
		w->h = NULL;
	return bev;
}

const struct httpd_stats *
httpd_stats(const struct httpd *h)
{
	return &h->st;
}

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
	h->max_body = max;
	h->timeout_ms = tmo;
	nservers++;
	evhttp_set_bevcb(h->http, new_bev, h);
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
	for (size_t i = 0; i < watches.cap; i++)
		if (watches.s[i].h && ((struct watch *)watches.s[i].item)->h ==
		    h)
			((struct watch *)watches.s[i].item)->h = NULL;
	if (h->max_body && --nservers == 0) {
		for (size_t i = 0; i < watches.cap; i++)
			if (watches.s[i].h)
				free(watches.s[i].item);
		cats_htab_free(&watches);
		memset(&watches, 0, sizeof(watches));
	}
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
