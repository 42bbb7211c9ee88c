/*
 * httpd.h - a small layer over libevent's evhttp for the cats servers:
 * listening on an endpoint (ep.h: http://HOST:PORT/, tcp:HOST:PORT,
 * unix:PATH; https://HOST:PORT/ or tls:HOST:PORT with TLS, net/tls.h:
 * libevent's OpenSSL bufferevents under evhttp, client certificates
 * required with --tls-ca), a body size limit and an idle timeout for every connection,
 * one-line plain-text error bodies, and Server-Sent Events responses.
 *
 * Limits.  Each connection's input is followed as it arrives, ahead of
 * evhttp (libevent 2.1 has no hook for its own answers: see httpd.c), by
 * the framing follower below: a request it refuses (RFC 9112 framing it
 * does not take, a method other than GET, HEAD and POST, a body declared
 * over max_body, a head over HTTPD_HEAD_MAX) is answered as soon as the
 * line that tells is in, before any body is read: the status with a
 * one-line text/plain body and Connection: close, one audit line
 * (event=reject, src=PEER, status, reason) and a counter of
 * httpd_stats(); what the client still sends is read and thrown away (up
 * to 256 KiB), then the connection is closed.  evhttp sees only what the
 * follower took, so that no page of evhttp's own is ever sent.  A
 * connection that sends or accepts nothing for timeout_ms is closed (no
 * answer); a request that trickles in and is not whole 3 x timeout_ms
 * after its first byte gets 408 the same way (too_slow).
 *
 * Routing.  A request's target (origin-form, or absolute-form http://)
 * is percent-decoded and compared exactly with the routes' paths: a
 * malformed escape, a decoded NUL or control byte, a fragment or another
 * form is a 400 (Connection: close, audited, counted in bad); no route is
 * a 404.
 *
 * The listener's accept(2) failing for want of descriptors is handled as
 * net/listener.h says (counted in fd_exhausted).
 */
#ifndef CATS_HTTPD_H
#define CATS_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evhttp;
struct evhttp_request;

struct httpd_opts {
	size_t max_body;	/* 0: 1 MiB */
	uint64_t timeout_ms;	/* 0: 10 s */
};

struct httpd_stats {
	uint64_t too_large;	/* 413: body over max_body */
	uint64_t too_slow;	/* 408: not whole within 3 x timeout_ms */
	uint64_t bad;		/* 400 (and 417): framing or a target refused */
	uint64_t not_allowed;	/* 405: a method refused by the framing */
	uint64_t head_too_large;	/* 431: head over HTTPD_HEAD_MAX */
	uint64_t fd_exhausted;	/* accept(2) out of descriptors */
};

typedef void (*httpd_fn)(struct evhttp_request *req, void *arg);

struct httpd;

struct cats_ep;
/*
 * The endpoint an HTTP server on ep listens on (what httpd_new() gives
 * cats_ep_listen(): for http:// and https://, tcp: at the URL's host and
 * port; TLS, if any, by the server, not the listener): 0, or -1 when the
 * URL has no host.  cats-cps holds a stage's by this name.
 */
int httpd_listen_ep(const struct cats_ep *ep, struct cats_ep *lep);
/* Listen on an endpoint; NULL with the reason in err. */
struct httpd *httpd_new(struct event_base *base, const char *endpoint,
    const struct httpd_opts *o, char *err, size_t errlen);
void httpd_free(struct httpd *h);
struct evhttp *httpd_evhttp(struct httpd *h);
const struct httpd_stats *httpd_stats(const struct httpd *h);
/* The TCP port listened on (useful after port 0), 0 for unix sockets. */
int httpd_port(const struct httpd *h);

enum { HTTPD_GET = 1, HTTPD_POST = 2 };
/*
 * Call fn for requests on an exact path (query string aside) with one of the
 * methods (HTTPD_GET | HTTPD_POST); another method gets 405.  Every other
 * path gets 404.
 */
int httpd_route(struct httpd *h, const char *path, unsigned methods,
    httpd_fn fn, void *arg);

/* A reply with a body (copied). */
void httpd_reply(struct evhttp_request *req, int code, const char *ctype,
    const void *body, size_t n);
/* A reply with a one-line text/plain body: the message and a newline. */
void httpd_error(struct evhttp_request *req, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The request body in one piece (NULL and 0 when empty). */
const uint8_t *httpd_body(struct evhttp_request *req, size_t *n);
/* The media type of the body, lowercased, without parameters ("" if none). */
const char *httpd_ctype(struct evhttp_request *req, char *buf, size_t len);
/* A request header, or NULL. */
const char *httpd_header(struct evhttp_request *req, const char *name);
/* The peer as "ADDR:PORT". */
const char *httpd_peer(struct evhttp_request *req, char *buf, size_t len);
/* The client certificate's SAN URIs (net/tls.h cats_tls_bev_uris). */
int httpd_peer_uris(struct evhttp_request *req, char *buf, size_t len,
    const char **v, size_t max);
/* A query parameter into buf, or NULL. */
const char *httpd_query(struct evhttp_request *req, const char *key,
    char *buf, size_t len);

/* ---- Server-Sent Events ---- */

struct httpd_sse;

/*
 * Start an event stream on req (200, text/event-stream).  closed is called
 * once when the client goes away; after that (or after httpd_sse_end) the
 * handle is gone.
 */
struct httpd_sse *httpd_sse_start(struct evhttp_request *req,
    void (*closed)(void *arg, struct httpd_sse *c), void *arg);
/*
 * Send one event (type and id may be NULL; data must not hold a newline).
 * -1 when the client does not keep up (more than max_queue bytes waiting):
 * the caller should end the stream.
 */
int httpd_sse_send(struct httpd_sse *c, const char *type, const char *id,
    const char *data, size_t max_queue);
/* A comment line, to keep the stream (and the client's stall timer) alive. */
int httpd_sse_comment(struct httpd_sse *c, const char *text);
/* End the stream (no closed callback). */
void httpd_sse_end(struct httpd_sse *c);

/*
 * The framing follower behind the limits, exposed for tests and fuzzing:
 * fed a connection's bytes as they arrive, it reads request heads,
 * Content-Length and chunked bodies in a fixed amount of memory, and
 * refuses what RFC 9112 lets a server refuse and evhttp would read its own
 * way (or answer with its own page).  httpd_framer_feed returns 0, or once
 * the input is refused the status to answer (then st is HTTPD_FR_REFUSED,
 * and why says it in one line):
 *
 *   400  a request line other than "METHOD SP target SP HTTP/1.x"; a
 *        control character or a bare CR in the head; a header line without
 *        a token and a colon, with white space before the colon, or folded
 *        (obs-fold); Content-Length twice, with a sign, a leading zero or
 *        anything but digits; Transfer-Encoding twice or other than
 *        "chunked"; both; a body on GET or HEAD; a target neither a path
 *        nor http://HOST[:PORT]...; an HTTP/1.1 request
 *        without exactly one Host; a chunk size line with extensions or
 *        junk; chunk data not followed by CRLF
 *   405  a method other than GET, HEAD and POST
 *   413  a body declared over max_body (Content-Length, or chunk sizes
 *        adding up past it)
 *   417  an Expect other than 100-continue
 *   431  a request head over HTTPD_HEAD_MAX bytes
 *
 * Whatever it does not refuse, evhttp reads the same way: the same
 * requests, the same bodies, nothing read as a request from a body.
 */
#define HTTPD_HEAD_MAX 16384
enum { HTTPD_FR_START = 0, HTTPD_FR_REFUSED = 7 };
struct httpd_framer {
	size_t max_body;
	uint8_t st;
	uint16_t code;		/* refused: the status */
	const char *why;	/* refused: the reason */
	bool body_method, http11, chunked, have_cl, have_te, have_host;
	/* the line so far */
	size_t llen;		/* its length */
	uint16_t ncr, nsp;	/* CRs, and spaces (request line) */
	uint16_t colon;		/* 1 + where its first colon is; 0: none */
	bool bad, ws_name;	/* a control byte; white space before colon */
	char lastc;		/* its last byte */
	char tail[16];		/* its last bytes, at tail[i % 16] */
	char line[96];		/* its first bytes */
	uint64_t left, total, cl, began_ns;
	size_t head;		/* bytes of the request's head so far */
};
void httpd_framer_init(struct httpd_framer *f, size_t max_body);
int httpd_framer_feed(struct httpd_framer *f, const char *p, size_t n);

#endif
