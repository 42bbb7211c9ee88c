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
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include "base/cats.h"
#include "base/clock.h"
#include "net/ep.h"
#include "base/htab.h"
#include "net/httpd.h"
#include "net/listener.h"
#include "net/tls.h"
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
	struct cats_evguard *guard;	/* EMFILE on its listener */
	int port;
	struct route **routes;
	size_t nroutes;
	size_t max_body;
	uint64_t timeout_ms;
	bool tls;		/* https:// or tls: */
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
	W_CEND, W_TRAILER, W_REFUSED = HTTPD_FR_REFUSED, W_DISCARD };

#define LINGER (256u << 10)
#define LINE_MAX_BODY 1024	/* chunk size and trailer lines */

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

/* Refuse the input: the status and its one-line reason. */
static int
refuse(struct httpd_framer *f, int code, const char *why)
{
	f->st = W_REFUSED;
	f->code = (uint16_t)code;
	f->why = why;
	return code;
}

/* RFC 9110 §5.6.2 tchar. */
static bool
tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != 0 && strchr("!#$%&'*+-.^_`|~",
	    c) != NULL);
}

/* Is the header line's name (before its colon) this one? */
static bool
name_is(const struct httpd_framer *f, const char *name)
{
	size_t k = strlen(name);
	return f->colon == k + 1 && strncasecmp(f->line, name, k) == 0;
}

/* The header line's value, trimmed, into v; false if not all kept. */
static bool
header_value(const struct httpd_framer *f, char *v, size_t vlen)
{
	size_t n = f->llen, i = f->colon;
	if (n > sizeof(f->line))
		return false;
	while (i < n && (f->line[i] == ' ' || f->line[i] == '\t'))
		i++;
	while (n > i && (f->line[n - 1] == ' ' || f->line[n - 1] == '\t'))
		n--;
	if (n - i >= vlen)
		return false;
	memcpy(v, f->line + i, n - i);
	v[n - i] = '\0';
	return true;
}

/* The bytes of a line, as they come: what is kept, and what they hold. */
static void
line_bytes(struct httpd_framer *f, const char *p, size_t k)
{
	bool reqline = f->st == W_START;
	bool header = f->st == W_HEAD || f->st == W_TRAILER;
	for (size_t i = 0; i < k; i++) {
		unsigned char c = (unsigned char)p[i];
		size_t at = f->llen + i;
		if (at < sizeof(f->line))
			f->line[at] = (char)c;
		f->tail[at % sizeof(f->tail)] = (char)c;
		if (c == '\r') {
			f->ncr++;
			f->lastc = (char)c;
			continue;
		}
		if (f->ncr > 0)
			f->bad = true;	/* a CR not at the end */
		if ((c < 0x20 && c != '\t') || c == 0x7f ||
		    (reqline && c == '\t'))
			f->bad = true;
		if (reqline && c == ' ') {
			if (at == 0 || f->lastc == ' ')
				f->bad = true;
			f->nsp++;
		}
		if (header && f->colon == 0) {
			if (c == ':')
				f->colon = (uint16_t)(at + 1 < UINT16_MAX ?
				    at + 1 : UINT16_MAX);
			else if (c == ' ' || c == '\t')
				f->ws_name = true;
			else if (!tchar(c))
				f->bad = true;
		}
		f->lastc = (char)c;
	}
	f->llen += k;
}

/*
 * The request target: origin-form ("/..."), or absolute-form with a plain
 * authority ("http://host[:port]..."), which evhttp's URI parser takes as
 * it is; anything else is ours to refuse, not evhttp's.
 */
static int
request_target(struct httpd_framer *f)
{
	size_t kept = f->llen < sizeof(f->line) ? f->llen : sizeof(f->line);
	const char *t = memchr(f->line, ' ', kept);
	if (t == NULL || (size_t)(++t - f->line) >= kept)
		return refuse(f, 400, "malformed request line");
	size_t room = kept - (size_t)(t - f->line);
	if (t[0] == '/')
		return 0;
	if (room < 8 || strncasecmp(t, "http://", 7) != 0)
		return refuse(f, 400, "request target is neither a path nor "
		    "an http URI");
	size_t i = 7, port = 0;
	for (; i < room && (isalnum((unsigned char)t[i]) || t[i] == '.' ||
	    t[i] == '-'); i++)
		;
	if (i == 7)
		return refuse(f, 400, "absolute-form target without a host");
	if (i < room && t[i] == ':')
		for (i++; i < room && isdigit((unsigned char)t[i]); i++)
			port++;
	if (i >= room || port > 5 || (t[i] != '/' && t[i] != '?' &&
	    t[i] != ' '))
		return refuse(f, 400, "malformed authority in the request "
		    "target");
	return 0;
}

/* The request line, whole in f (its end of line taken off). */
static int
request_line(struct httpd_framer *f)
{
	size_t n = f->llen;
	char v[9];
	if (f->bad || f->nsp != 2 || n < 14)
		return refuse(f, 400, "malformed request line");
	for (size_t i = 0; i < 8; i++)
		v[i] = f->tail[(n - 8 + i) % sizeof(f->tail)];
	v[8] = '\0';
	if (f->tail[(n - 9) % sizeof(f->tail)] != ' ' || f->tail[(n - 10) %
	    sizeof(f->tail)] == ' ' ||
	    (strcmp(v, "HTTP/1.1") != 0 && strcmp(v, "HTTP/1.0") != 0))
		return refuse(f, 400, "expected HTTP/1.0 or HTTP/1.1");
	f->http11 = v[7] == '1';
	/* Methods are case-sensitive. */
	const char *l = f->line;
	int rc = request_target(f);
	if (rc != 0)
		return rc;
	if (memcmp(l, "POST ", 5) == 0)
		f->body_method = true;
	else if (memcmp(l, "GET ", 4) == 0 || memcmp(l, "HEAD ", 5) == 0)
		f->body_method = false;
	else
		return refuse(f, 405, "method not allowed (GET, HEAD, POST)");
	f->st = W_HEAD;
	return 0;
}

/* A header line (or trailer line), whole in f. */
static int
header_line(struct httpd_framer *f)
{
	char v[48];
	const char *l = f->line;
	if (l[0] == ' ' || l[0] == '\t')
		return refuse(f, 400, "folded header line (obs-fold)");
	if (f->ws_name && f->colon != 0)
		return refuse(f, 400, "white space before the colon of a header");
	if (f->bad || f->colon <= 1)
		return refuse(f, 400, "malformed header line");
	if (f->st == W_TRAILER)
		return 0;
	if (name_is(f, "content-length")) {
		if (f->have_cl)
			return refuse(f, 400, "Content-Length twice");
		f->have_cl = true;
		size_t k;
		if (!header_value(f, v, sizeof(v)) || (k = strlen(v)) == 0 ||
		    k > 18 || strspn(v, "0123456789") != k ||
		    (v[0] == '0' && k > 1))
			return refuse(f, 400, "Content-Length other than "
			    "digits (no sign, no leading zero)");
		f->cl = strtoull(v, NULL, 10);
	} else if (name_is(f, "transfer-encoding")) {
		if (f->have_te)
			return refuse(f, 400, "Transfer-Encoding twice");
		f->have_te = true;
		if (!header_value(f, v, sizeof(v)) ||
		    strcasecmp(v, "chunked") != 0)
			return refuse(f, 400, "Transfer-Encoding other than "
			    "chunked");
		f->chunked = true;
	} else if (name_is(f, "host")) {
		if (f->have_host)
			return refuse(f, 400, "Host twice");
		f->have_host = true;
	} else if (name_is(f, "expect")) {
		/* evhttp answers any other expectation with its own page. */
		if (!header_value(f, v, sizeof(v)) ||
		    strcasecmp(v, "100-continue") != 0)
			return refuse(f, 417, "an expectation other than "
			    "100-continue");
	}
	return 0;
}

/* The end of the head: where its body is. */
static int
end_of_head(struct httpd_framer *f)
{
	if (f->http11 && !f->have_host)
		return refuse(f, 400, "an HTTP/1.1 request without Host");
	if (f->have_cl && f->have_te)
		return refuse(f, 400, "both Content-Length and "
		    "Transfer-Encoding");
	if (!f->body_method) {
		if (f->have_te || f->cl > 0)
			return refuse(f, 400, "a body on a GET or HEAD request");
		f->st = W_START;
	} else if (f->chunked) {
		f->total = 0;
		f->st = W_CSIZE;
	} else if (f->cl > f->max_body) {
		return refuse(f, 413, "body over the limit");
	} else if (f->cl > 0) {
		f->left = f->cl;
		f->st = W_BODY;
	} else {
		f->st = W_START;
	}
	return 0;
}

/* A chunk size line: hex digits, nothing else (no extensions). */
static int
chunk_size(struct httpd_framer *f)
{
	uint64_t x = 0;
	size_t n = f->llen;
	if (f->bad || n == 0 || n > 16 || n > sizeof(f->line))
		return refuse(f, 400, "malformed chunk size line");
	for (size_t i = 0; i < n; i++) {
		int c = f->line[i], d = c >= '0' && c <= '9' ? c - '0' :
		    c >= 'a' && c <= 'f' ? c - 'a' + 10 :
		    c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return refuse(f, 400, c == ';' ? "chunk extensions "
			    "are not taken" : "malformed chunk size line");
		x = x * 16 + (uint64_t)d;
	}
	if (x == 0) {
		f->st = W_TRAILER;
	} else if (x > f->max_body || f->total + x > f->max_body) {
		return refuse(f, 413, "body over the limit");
	} else {
		f->total += x;
		f->left = x;
		f->st = W_CDATA;
	}
	return 0;
}

/* One complete line (its end taken off) in a line-oriented state. */
static int
framer_line(struct httpd_framer *f)
{
	switch (f->st) {
	case W_START:
		if (f->llen == 0)
			return 0;	/* RFC 9112 §2.2: empty lines before */
		return request_line(f);
	case W_HEAD:
		return f->llen == 0 ? end_of_head(f) : header_line(f);
	case W_CSIZE:
		return chunk_size(f);
	case W_CEND:
		if (f->llen != 0)
			return refuse(f, 400, "chunk data not followed by CRLF");
		f->st = W_CSIZE;
		return 0;
	case W_TRAILER:
		if (f->llen == 0) {
			f->st = W_START;
			return 0;
		}
		return header_line(f);
	}
	return 0;
}

void
httpd_framer_init(struct httpd_framer *f, size_t max_body)
{
	memset(f, 0, sizeof(*f));
	f->max_body = max_body;
}

/* A new line starts: what was counted of the last one goes. */
static void
line_reset(struct httpd_framer *f)
{
	f->llen = 0;
	f->ncr = f->nsp = f->colon = 0;
	f->bad = f->ws_name = false;
	f->lastc = 0;
}

/* A new request starts. */
static void
request_reset(struct httpd_framer *f)
{
	f->body_method = f->http11 = f->chunked = false;
	f->have_cl = f->have_te = f->have_host = false;
	f->cl = f->left = f->total = 0;
	f->head = 0;
}

int
httpd_framer_feed(struct httpd_framer *f, const char *p, size_t n)
{
	while (n > 0) {
		if (f->st == W_REFUSED)
			return f->code;
		if (f->st == W_BODY || f->st == W_CDATA) {
			size_t k = f->left < n ? (size_t)f->left : n;
			f->left -= k;
			p += k;
			n -= k;
			if (f->left == 0 && f->st == W_BODY) {
				f->st = W_START;
				f->began_ns = 0;	/* a whole request */
			} else if (f->left == 0) {
				f->st = W_CEND;
			}
			continue;
		}
		if (f->st == W_START && f->llen == 0 && f->began_ns == 0)
			f->began_ns = cats_clock_mono_ns();
		const char *e = memchr(p, '\n', n);
		size_t k = e ? (size_t)(e - p) : n;
		line_bytes(f, p, k);
		p += k;
		n -= k;
		if (f->st == W_START || f->st == W_HEAD) {
			if (f->head + f->llen > HTTPD_HEAD_MAX)
				return refuse(f, 431, "request head over the "
				    "limit");
		} else if (f->llen > LINE_MAX_BODY) {
			return refuse(f, 400, "line too long in a chunked body");
		}
		if (e == NULL)
			break;
		p++;
		n--;
		/* The line's end: LF or CRLF, and no CR elsewhere. */
		if (f->ncr > 0) {
			if (f->ncr > 1 || f->lastc != '\r')
				return refuse(f, 400, "a CR inside a line");
			f->llen--;
		}
		uint8_t was = f->st;
		if (was == W_START && f->llen > 0) {
			request_reset(f);
			f->head = f->llen + 1;
		} else if (was == W_HEAD) {
			f->head += f->llen + 1;
		}
		int rc = framer_line(f);
		line_reset(f);
		if (rc != 0)
			return rc;
		if (f->st == W_START && was != W_START)
			f->began_ns = 0;	/* a whole request */
	}
	return f->st == W_REFUSED ? f->code : 0;
}

static const char *
reason_phrase(int code)
{
	switch (code) {
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 417: return "Expectation Failed";
	case 431: return "Request Header Fields Too Large";
	default: return "Error";
	}
}

/* Count a refusal by its status. */
static void
count_refusal(struct httpd *h, int code)
{
	switch (code) {
	case 408: h->st.too_slow++; break;
	case 413: h->st.too_large++; break;
	case 431: h->st.head_too_large++; break;
	case 405: h->st.not_allowed++; break;
	default: h->st.bad++; break;
	}
}

/* Answer, audit and count a refused request; then linger. */
static void
watch_refuse(struct watch *w, struct evbuffer *in, int code, const char *why)
{
	struct httpd *h = w->h;
	int fd = bufferevent_getfd(w->bev);
	char peer[80], line[160], msg[512];
	cats_ep_peer(fd, peer, sizeof(peer));
	count_refusal(h, code);
	if (code == 413)
		snprintf(line, sizeof(line), "body over %zu bytes", h->max_body);
	else if (code == 408)
		snprintf(line, sizeof(line), "request not complete within "
		    "%" PRIu64 " ms", 3 * h->timeout_ms);
	else if (code == 431)
		snprintf(line, sizeof(line), "request head over %u bytes",
		    HTTPD_HEAD_MAX);
	else
		snprintf(line, sizeof(line), "%s", why ? why : "bad request");
	/* Rate-limited: a flood of bad requests writes no line per request. */
	cats_audit_limited("reject", "src=%s index=0 status=%d reason=\"%s\"",
	    peer, code, line);
	w->f.st = W_DISCARD;
	w->discarded = evbuffer_get_length(in);
	evbuffer_drain(in, w->discarded);
	int n = snprintf(msg, sizeof(msg), "HTTP/1.1 %d %s\r\n"
	    "Content-Type: text/plain; charset=utf-8\r\n%s"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n", code,
	    reason_phrase(code), code == 405 ? "Allow: GET, HEAD, POST\r\n" :
	    "", strlen(line) + 1, line);
	if (h->tls) {
		/* The same through TLS (the client closes after it,
		 * Connection: close, or the discarding below does). */
		(void)cats_tls_bev_send(w->bev, msg, (size_t)n);
	} else if (fd >= 0) {
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
	if (info->n_added == 0 || w->h == NULL)
		return;
	if (w->f.st == W_DISCARD) {
		size_t n = evbuffer_get_length(in);
		w->discarded += n;
		evbuffer_drain(in, n);
		if (w->discarded > LINGER) {
			/* enough: evhttp reads the end of file and closes */
			shutdown(bufferevent_getfd(w->bev), SHUT_RD);
			w->discarded = 0;
		}
		return;
	}
	size_t len = evbuffer_get_length(in);
	struct evbuffer_ptr at;
	if (info->n_added > len || evbuffer_ptr_set(in, &at,
	    len - info->n_added, EVBUFFER_PTR_SET) < 0) {
		watch_refuse(w, in, 400, "input not followed");
		return;
	}
	size_t todo = info->n_added;
	while (todo > 0) {
		struct evbuffer_iovec v;
		if (evbuffer_peek(in, (ev_ssize_t)todo, &at, &v, 1) < 1)
			break;
		size_t k = v.iov_len < todo ? v.iov_len : todo;
		int code = httpd_framer_feed(&w->f, v.iov_base, k);
		if (code != 0) {
			watch_refuse(w, in, code, w->f.why);
			return;
		}
		todo -= k;
		if (todo == 0 || evbuffer_ptr_set(in, &at, k,
		    EVBUFFER_PTR_ADD) < 0)
			break;
	}
	/* A slow trickle keeps the idle timer from firing: a request must
	 * arrive whole within 3 x timeout. */
	if (w->f.began_ns != 0 && (cats_clock_mono_ns() - w->f.began_ns) /
	    1000000 > 3 * w->h->timeout_ms)
		watch_refuse(w, in, 408, NULL);
}

static struct bufferevent *
new_bev(struct event_base *base, void *arg)
{
	struct httpd *h = arg;
	cats_evguard_accepted(h->guard);
	struct bufferevent *bev = h->tls ? cats_tls_bev(base) :
	    bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
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

/*
 * The path of a request target (RFC 9112 §3.2), percent-decoded, into
 * buf: origin-form ("/p?q") or absolute-form ("http://authority/p?q").
 * -1 with why for a target that is neither, a fragment, a malformed
 * escape or a decoded NUL or control byte; 1 for a path too long to be
 * any resource's.
 */
static int
target_path(const char *t, char *buf, size_t len, const char **why)
{
	const char *p = t;
	if (strncasecmp(t, "http://", 7) == 0) {
		p = t + 7 + strcspn(t + 7, "/?");
		if (p == t + 7) {
			*why = "absolute-form target without authority";
			return -1;
		}
		if (*p != '/') {
			cats_strlcpy(buf, "/", len);
			return strchr(p, '#') ? (*why = "fragment in the request "
			    "target", -1) : 0;
		}
	} else if (t[0] != '/') {
		*why = "request target is neither a path nor an http URI";
		return -1;
	}
	if (strchr(p, '#') != NULL) {
		*why = "fragment in the request target";
		return -1;
	}
	size_t n = 0;
	for (; *p != '\0' && *p != '?'; p++) {
		unsigned char c = (unsigned char)*p;
		if (c == '%') {
			int hi = isxdigit((unsigned char)p[1]) ? p[1] : -1;
			int lo = hi >= 0 && isxdigit((unsigned char)p[2]) ? p[2] :
			    -1;
			if (lo < 0) {
				*why = "malformed percent-encoding in the path";
				return -1;
			}
			char hex[3] = { (char)hi, (char)lo, '\0' };
			c = (unsigned char)strtoul(hex, NULL, 16);
			p += 2;
			if (c < 0x20 || c == 0x7f) {
				*why = c == 0 ? "NUL in the path" :
				    "control character in the path";
				return -1;
			}
		}
		if (n + 1 >= len)
			return 1;
		buf[n++] = (char)c;
	}
	buf[n] = '\0';
	return 0;
}

static void route_cb(struct evhttp_request *req, struct route *r);

/*
 * Every request: its path decoded and compared exactly with the routes'
 * (a "%00" or an absolute-form target reaches no resource under another
 * name); a target refused is a 400 with Connection: close, audited and
 * counted.
 */
static void
dispatch(struct evhttp_request *req, void *arg)
{
	struct httpd *h = arg;
	char path[2048], peer[80];
	const char *why = "bad request target";
	const char *t = evhttp_request_get_uri(req);
	int rc = t != NULL ? target_path(t, path, sizeof(path), &why) : -1;
	if (rc < 0) {
		h->st.bad++;
		cats_audit_limited("reject", "src=%s index=0 status=400 "
		    "reason=\"%s\"", httpd_peer(req, peer, sizeof(peer)), why);
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Connection", "close");
		httpd_error(req, 400, "%s", why);
		return;
	}
	for (size_t i = 0; rc == 0 && i < h->nroutes; i++) {
		if (strcmp(h->routes[i]->path, path) == 0) {
			route_cb(req, h->routes[i]);
			return;
		}
	}
	httpd_error(req, 404, "no such resource");
}

int
httpd_listen_ep(const struct cats_ep *ep, struct cats_ep *lep)
{
	*lep = *ep;
	if (ep->kind == CATS_EP_HTTP || ep->kind == CATS_EP_HTTPS) {
		/* The endpoint keeps the URL; its authority is where to
		 * listen. */
		struct evhttp_uri *u = evhttp_uri_parse(ep->path);
		const char *host = u ? evhttp_uri_get_host(u) : NULL;
		if (host == NULL || host[0] == '\0') {
			if (u)
				evhttp_uri_free(u);
			return -1;
		}
		size_t hl = strlen(host);
		if (host[0] == '[' && hl > 2 && host[hl - 1] == ']')
			snprintf(lep->host, sizeof(lep->host), "%.*s",
			    (int)(hl - 2), host + 1);
		else
			cats_strlcpy(lep->host, host, sizeof(lep->host));
		int port = evhttp_uri_get_port(u);
		snprintf(lep->port, sizeof(lep->port), "%u",
		    (unsigned)(port > 0 && port < 65536 ? port :
		    ep->kind == CATS_EP_HTTPS ? 443 : 80));
		evhttp_uri_free(u);
		lep->kind = CATS_EP_TCP;
	}
	lep->tls = false;	/* TLS by the bufferevents, not the listener */
	return 0;
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
	bool tls = ep.kind == CATS_EP_HTTPS || ep.tls;
	if (tls && !cats_tls_server_on()) {
		snprintf(err, errlen, "%s: HTTPS needs --tls-cert and "
		    "--tls-key", endpoint);
		return NULL;
	}
	if (ep.kind != CATS_EP_HTTP && ep.kind != CATS_EP_HTTPS &&
	    ep.kind != CATS_EP_TCP && ep.kind != CATS_EP_UNIX) {
		snprintf(err, errlen, "%s: an HTTP server listens on http://, "
		    "https://, tcp:, tls: or unix:", endpoint);
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
	h->tls = tls;
	nservers++;
	evhttp_set_bevcb(h->http, new_bev, h);
	evhttp_set_max_body_size(h->http, (ev_ssize_t)max);
	/* The framing's limit is met first (HTTPD_HEAD_MAX). */
	evhttp_set_max_headers_size(h->http, 2 * HTTPD_HEAD_MAX);
	struct timeval tv = { (time_t)(tmo / 1000), (suseconds_t)(tmo % 1000) *
		1000 };
	evhttp_set_timeout_tv(h->http, &tv);
	evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_HEAD);
	evhttp_set_default_content_type(h->http, "text/plain");
	evhttp_set_gencb(h->http, dispatch, h);
	struct cats_ep lep;
	if (httpd_listen_ep(&ep, &lep) < 0) {
		snprintf(err, errlen, "%s: no host in the URL", endpoint);
		httpd_free(h);
		return NULL;
	}
	int fd = cats_ep_listen(&lep, why, sizeof(why));
	if (fd < 0) {
		/* why names what was listened on: the URL's authority, or
		 * the endpoint itself (not said twice). */
		if (lep.kind == ep.kind)
			snprintf(err, errlen, "%s", why);
		else
			snprintf(err, errlen, "%s: %s", endpoint, why);
		httpd_free(h);
		return NULL;
	}
	if (tls) {
		/* A TLS answer leaves in several records: without this, the
		 * last waits for the client's delayed ACK (Nagle), 40 ms. */
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	h->bound = evhttp_accept_socket_with_handle(h->http, fd);
	if (h->bound == NULL) {
		close(fd);
		snprintf(err, errlen, "%s: cannot accept", endpoint);
		httpd_free(h);
		return NULL;
	}
	h->guard = cats_evguard_new(base, evhttp_bound_socket_get_listener(
	    h->bound), "HTTP", &h->st.fd_exhausted);
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
	cats_evguard_free(h->guard);
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
route_cb(struct evhttp_request *req, struct route *r)
{
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

/* The connection's TLS bufferevent, or NULL. */
static struct bufferevent *
req_bev(struct evhttp_request *req)
{
	struct evhttp_connection *c = evhttp_request_get_connection(req);
	return c ? evhttp_connection_get_bufferevent(c) : NULL;
}

int
httpd_peer_uris(struct evhttp_request *req, char *buf, size_t len,
    const char **v, size_t max)
{
	return cats_tls_bev_uris(req_bev(req), buf, len, v, max);
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
