/*
 * etcd.h - a small client of etcd's v3 API through its gRPC gateway, the
 * JSON face etcd 3.4 serves at /v3/ (Debian 12's etcd-server): kv range,
 * put, txn and deleterange; lease grant, keepalive and revoke; watch.
 *
 * The gateway's JSON is proto3's: 64-bit integers arrive as strings, keys
 * and values as base64, and a field at its zero value is left out (a txn
 * whose compare failed has no "succeeded", an empty range no "kvs", an
 * expired lease's keepalive no "TTL").  An error is {"error", "message",
 * "code"} with a gRPC status code.
 *
 * What etcd answers is untrusted input: the body is capped while it
 * arrives (the transfer is aborted past the cap), the counts and lengths
 * are checked against etcd_limits before anything is allocated for them,
 * and etcd_parse() is the one decoder (fuzz/fuzz_etcd_resp.c).
 *
 * Calls are synchronous (libcurl's easy interface) and every one has a
 * deadline: the store commit of cats-bind sits where its journal's
 * fdatasync sits, and what it covers waits for it, so lib/net/httpc.h
 * (asynchronous, on the event loop) does not fit.  Several endpoints may be
 * given: a call that gets no answer from one is tried once on the next,
 * which is then kept.
 */
#ifndef CATS_ETCD_H
#define CATS_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cats.h"

struct etcd_limits {
	size_t max_body;	/* a response body (4 MiB) */
	size_t max_kvs;		/* key-values in one answer (10000) */
	size_t max_key;		/* a key, decoded (1024) */
	size_t max_value;	/* a value, decoded (64 KiB) */
	size_t max_responses;	/* responses of one txn (1024) */
	size_t max_message;	/* an error message kept (240) */
};
void etcd_limits_default(struct etcd_limits *l);

enum etcd_kind {
	ETCD_RANGE, ETCD_PUT, ETCD_DELETE, ETCD_TXN, ETCD_GRANT,
	ETCD_KEEPALIVE, ETCD_REVOKE, ETCD_WATCH, ETCD__N
};
/* The kinds' names ("range", "put" ...) and their gateway paths. */
extern const char *const etcd_kind_names[];
extern const char *const etcd_kind_paths[];

struct etcd_kv {
	const uint8_t *key, *value;	/* decoded; NUL-terminated too */
	size_t klen, vlen;
	int64_t create_rev, mod_rev, version, lease;
	bool deleted;			/* a watch's DELETE event */
};

/* A decoded answer; kvs point into the arena, valid until the next parse. */
struct etcd_resp {
	int kind;
	bool error;		/* an error answer: code, message */
	int code;
	char message[256];
	int64_t revision;	/* header.revision */
	int64_t raft_term;
	/* range; in a txn, the kvs of every range response, in order */
	struct etcd_kv *kvs;
	size_t nkvs;
	bool more;
	int64_t count;
	/* txn */
	bool succeeded;
	size_t nresponses;
	/* deleterange (in a txn too: the sum) */
	int64_t deleted;
	/* lease: grant, keepalive ("result"); TTL 0: the lease is gone */
	int64_t id, ttl;
	/* watch: one message of the stream; its events are the kvs */
	bool created, canceled;
	int64_t compact_rev;
	struct cats_arena arena;
};
void etcd_resp_init(struct etcd_resp *r);
void etcd_resp_free(struct etcd_resp *r);

/*
 * Decode the answer body[0..len) to a call of kind: 0 (an error answer is
 * decoded too: r->error), or -1 with the reason in err when the body is
 * not JSON, breaks a cap or has a field of the wrong type.
 */
int etcd_parse(const struct etcd_limits *lim, int kind, const char *body,
    size_t len, struct etcd_resp *r, char *err, size_t errlen);
/* One line describing r (tests: tests/data/ha/ *.out). */
void etcd_resp_fmt(const struct etcd_resp *r, struct cats_buf *out);

/* ---- requests (jansson objects the caller frees) ---- */

struct json_t;
/* The base64 of p[0..n) as a JSON string. */
struct json_t *etcd_j_bytes(const void *p, size_t n);
/* A decimal JSON string of v (proto3's int64). */
struct json_t *etcd_j_int(int64_t v);
/* The end of the range of every key starting with prefix (prefix with
 * its last byte not 0xff incremented); *n its length. */
size_t etcd_prefix_end(const void *prefix, size_t n, uint8_t *out);
/* Txn operations: {"requestPut": ...}, {"requestDeleteRange": ...},
 * {"requestRange": ...} (end NULL: the key alone). */
struct json_t *etcd_op_put(const void *k, size_t kl, const void *v,
    size_t vl, int64_t lease);
struct json_t *etcd_op_delete(const void *k, size_t kl, const void *end,
    size_t el);
struct json_t *etcd_op_range(const void *k, size_t kl, const void *end,
    size_t el, int64_t limit, int64_t rev);
/* A compare of key's create_revision with rev ("EQUAL"). */
struct json_t *etcd_cmp_create(const void *k, size_t kl, int64_t rev);

/* ---- the client ---- */

struct etcd_stats {
	uint64_t calls, failures, errors;	/* no answer / error answers */
	uint64_t bytes_out, bytes_in, failovers;
	uint64_t ms;				/* time in calls */
};

struct etcd;
/*
 * A client of the endpoints in urls ("http://127.0.0.1:2379", several
 * separated by commas), each call bounded by timeout_ms; NULL with err.
 */
struct etcd *etcd_new(const char *urls, uint64_t timeout_ms,
    const struct etcd_limits *lim, char *err, size_t errlen);
void etcd_free(struct etcd *e);
const struct etcd_stats *etcd_stats(const struct etcd *e);
/* The endpoint in use. */
const char *etcd_endpoint(const struct etcd *e);

/*
 * POST the request req (not freed) of kind to its path and decode the
 * answer into r: 0, an answer (r->error when it is an error answer), or
 * -1 with the reason in err (no answer, a body past the cap, a body that
 * is not an answer).
 */
int etcd_call(struct etcd *e, int kind, struct json_t *req,
    struct etcd_resp *r, char *err, size_t errlen);

/*
 * The same for n requests of one kind at once (curl's multi interface,
 * up to ETCD_PARALLEL in flight): independent txns whose order does not
 * matter, so that etcd commits them in one raft batch.  rs[i] answers
 * reqs[i]; a request that got no answer is sent again alone by
 * etcd_call() (the next endpoint).  0 when every request has an answer
 * (each may be an error answer), else -1 with the first reason in err.
 */
#define ETCD_PARALLEL 8

/*
 * A watch (req: {"create_request": ...}) on the endpoint in use, for up to
 * ms: each message of the stream, as it arrives, decoded into r (kind
 * ETCD_WATCH, a line each, capped like an answer) and given to cb, which
 * returns non-zero to end the watch.  0 when cb ended it or the time ran
 * out, -1 with err when the stream failed, ended early or carried a bad
 * message (the next endpoint is then the one in use).
 */
int etcd_watch(struct etcd *e, struct json_t *req, uint64_t ms,
    int (*cb)(void *, const struct etcd_resp *), void *arg,
    struct etcd_resp *r, char *err, size_t errlen);
int etcd_call_many(struct etcd *e, int kind, struct json_t **reqs, size_t n,
    struct etcd_resp *rs, char *err, size_t errlen);

#endif
