/*
 * httpd.h - a small layer over libevent's evhttp for the cats servers:
 * listening on an endpoint (ep.h: http://HOST:PORT/, tcp:HOST:PORT,
 * unix:PATH), a body size limit and an idle timeout for every connection,
 * one-line plain-text error bodies, and Server-Sent Events responses.
 *
 * Limits.  Each connection's input is followed as it arrives, ahead of
 * evhttp (libevent 2.1 has no hook for its own 413: see httpd.c).  A request
 * whose body is declared over max_body (Content-Length, or chunk sizes
 * adding up past it) is refused as soon as its head (or the chunk size
 * line) is in, before the body is read: 413 with a one-line text/plain
 * body and Connection: close, one audit line (event=reject, src=PEER,
 * status=413) and httpd_stats()->too_large; what the client still sends is
 * read and thrown away (up to 256 KiB), then the connection is closed.  A
 * connection that sends or accepts nothing for timeout_ms is closed (no
 * answer); a request that trickles in and is not whole 3 x timeout_ms after
 * its first byte gets 408 the same way (too_slow).  evhttp's own limit
 * (its short HTML 413) stays as a backstop for input this layer does not
 * follow (malformed heads, chunk extensions), which evhttp refuses anyway.
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
};

typedef void (*httpd_fn)(struct evhttp_request *req, void *arg);

struct httpd;

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
 * fed a connection's bytes as they arrive, it tracks request heads,
 * Content-Length and chunked bodies the way evhttp reads them, in a fixed
 * amount of memory.  httpd_framer_feed is false when the request it is in
 * declares a body over max_body (then stop feeding); st is HTTPD_FR_LOST
 * when the input is beyond what it follows (evhttp refuses it).
 */
enum { HTTPD_FR_START = 0, HTTPD_FR_LOST = 6 };
struct httpd_framer {
	size_t max_body;
	uint8_t st;
	bool body_method, chunked, have_cl, cl_bad, have_te;
	char lastc;		/* the line's last byte so far */
	uint64_t left, total, cl, began_ns;
	size_t llen;		/* length of the line so far */
	char line[64];		/* its first bytes */
};
void httpd_framer_init(struct httpd_framer *f, size_t max_body);
bool httpd_framer_feed(struct httpd_framer *f, const char *p, size_t n);

#endif
