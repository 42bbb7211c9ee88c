/*
 * httpc.h - the one HTTP client of cats: libcurl's multi interface driven
 * from a libevent loop.  Requests (GET, POST) complete through a callback;
 * Server-Sent Events streams deliver events through a callback and
 * reconnect by themselves (Last-Event-ID, exponential backoff with jitter,
 * stall detection through CURLOPT_LOW_SPEED_*, since a silent drop is never
 * reported otherwise).  HTTPS verifies certificates (ca_file to name the
 * trust anchors); HTTP/2 is used where the server offers it (ALPN).
 *
 * Nothing here blocks.  Callbacks run from the event loop; inside one a
 * caller may start new requests, cancel others, or free the client.
 */
#ifndef CATS_HTTPC_H
#define CATS_HTTPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cats.h"

struct event_base;
struct httpc;

/* One client per event loop; curl_global_init is done on first use. */
struct httpc *httpc_new(struct event_base *base);
/* Cancel everything (no callbacks) and free. */
void httpc_free(struct httpc *c);
/* Transfers in progress (requests and connected event streams). */
size_t httpc_active(const struct httpc *c);

/* ---- requests ---- */

struct httpc_resp {
	int code;		/* CURLcode: 0 when a response arrived */
	long status;		/* HTTP status, 0 if none */
	const char *error;	/* one line when code != 0 */
	const uint8_t *body;	/* valid during the callback */
	size_t len;
	const char *ctype;	/* Content-Type, or NULL */
	bool too_big;		/* the body passed max_body: aborted */
	uint64_t ms;		/* time taken */
};

typedef void (*httpc_done_fn)(void *arg, const struct httpc_resp *r);

struct httpc_req_opts {
	const char *method;	/* "GET" (default) or "POST" */
	const char *url;
	const char *const *headers;	/* "Name: value", NULL-terminated */
	const void *body;	/* POST body (copied) */
	size_t len;
	const char *ctype;	/* POST Content-Type */
	uint64_t timeout_ms;	/* whole transfer; 0: 30 s */
	uint64_t connect_timeout_ms;	/* 0: 10 s */
	size_t max_body;	/* response body cap; 0: 1 MiB */
	const char *ca_file;	/* trust anchors for https, NULL: system */
};

struct httpc_req;

/* Start a request; NULL if it could not be started (fn is not called). */
struct httpc_req *httpc_request(struct httpc *c, const struct httpc_req_opts *o,
    httpc_done_fn fn, void *arg);
/* Stop a request; its callback is not called. */
void httpc_cancel(struct httpc_req *r);

/* ---- Server-Sent Events ---- */

struct httpc_sse_event {
	const char *type;	/* "message" unless the event named one */
	const char *id;		/* the last event id ("" if none) */
	const char *data;	/* the data lines joined with \n, NUL-ended */
	size_t len;
};

/*
 * The event-stream parser (WHATWG HTML "Server-sent events"), pure, for
 * tests and fuzzing: lines end in CR, LF or CRLF; a blank line dispatches;
 * "data", "event", "id" and "retry" fields; ":" comments.  A line or an
 * event over max_event bytes is dropped whole (counted in overflows).
 */
struct httpc_sse_parser {
	struct cats_buf line;
	struct cats_buf data;
	char type[64];
	char id[256];		/* the last event id, kept across events */
	size_t max_event;
	bool cr;		/* the previous byte was a CR */
	bool skip_line;		/* the current line is too long */
	bool skip_event;	/* the current event is too long */
	bool started;		/* past the first line (and a BOM) */
	uint64_t retry_ms;	/* a retry field seen, 0 if none */
	uint64_t events, overflows;
};

typedef void (*httpc_sse_fn)(void *arg, const struct httpc_sse_event *ev);

void httpc_sse_parser_init(struct httpc_sse_parser *p, size_t max_event);
void httpc_sse_parser_free(struct httpc_sse_parser *p);
/* Feed bytes; events are dispatched as they complete. */
void httpc_sse_feed(struct httpc_sse_parser *p, const char *buf, size_t n,
    httpc_sse_fn fn, void *arg);

struct httpc_sse_opts {
	const char *url;
	const char *const *headers;	/* extra "Name: value" lines */
	const char *last_id;	/* Last-Event-ID to start from, or NULL */
	uint64_t stall_ms;	/* no byte for this long = stalled; 0: 30 s */
	uint64_t connect_timeout_ms;	/* 0: 10 s */
	uint64_t backoff_min_ms;	/* 0: 1 s */
	uint64_t backoff_max_ms;	/* 0: 60 s */
	size_t max_event;	/* 0: 64 KiB */
	const char *ca_file;
};

struct httpc_sse_cbs {
	void (*event)(void *arg, const struct httpc_sse_event *ev);
	/*
	 * Connected (a 200 text/event-stream answer), or disconnected with a
	 * reason and the delay before the next attempt.
	 */
	void (*state)(void *arg, bool connected, const char *why,
	    uint64_t retry_ms);
};

struct httpc_sse;

/* Subscribe; the stream connects now and reconnects until closed. */
struct httpc_sse *httpc_sse_open(struct httpc *c,
    const struct httpc_sse_opts *o, const struct httpc_sse_cbs *cbs,
    void *arg);
void httpc_sse_close(struct httpc_sse *s);
/* The last event id received (sent as Last-Event-ID on reconnection). */
const char *httpc_sse_last_id(const struct httpc_sse *s);
/* Connection attempts so far. */
uint64_t httpc_sse_attempts(const struct httpc_sse *s);

#endif
