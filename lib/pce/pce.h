/*
 * pce.h - the PCE function: a path request in, a path reply out
 * (cats-pce(1)).  The tool is a thin loop around cats_pce_answer().
 */
#ifndef CATS_PCE_H
#define CATS_PCE_H

#include "pce/cspf.h"

#include "base/htab.h"

struct cats_pce_counters {
	uint64_t requests, ok, no_path, errors, expired;
	uint64_t exact_searches, labels, settled;
	uint64_t cache_hits;
};

struct pce_cent;

/*
 * The answer to a request is a function of the request and the database
 * (object and generation): answers are cached, least recently used out,
 * and the cache empties when the database changes.  Flows between the same
 * ingress and egress under the same constraints share a path.
 */
struct cats_pce {
	struct cats_te *te;		/* owned */
	struct cats_cspf_ws *ws;
	size_t max_labels;		/* 0: default */
	size_t cache_max;		/* answers kept; 0: no cache */
	struct cats_pce_counters c;
	/* the cache */
	struct cats_htab cache;
	struct pce_cent *lru, *lru_tail;
	size_t ncache;
	uint64_t cache_uid, cache_gen;
	struct cats_buf key;
};

#define CATS_PCE_CACHE_DEFAULT 4096

/* A PCE over te (taken over; may be NULL until cats_pce_set_te()). */
int cats_pce_init(struct cats_pce *p, struct cats_te *te);
void cats_pce_free(struct cats_pce *p);
/* Replace the database (the old one is freed). */
void cats_pce_set_te(struct cats_pce *p, struct cats_te *te);
/* Drop every cached answer. */
void cats_pce_cache_clear(struct cats_pce *p);

/*
 * The part of a path reply that answers rq whatever the path: txn, ts (now),
 * headend, endpoint, dataplane, decision, flow, ingress and deadline.
 */
void cats_pce_reply_of(const struct cats_path_req *rq, uint64_t now,
    struct cats_path_rep *o);
/*
 * Answer a path request: rep becomes a path-rep carrying the request's
 * txn, decision, flow, ingress and deadline.  A request whose deadline is
 * not after now gets status error, reason "deadline".  Strings and arrays
 * of rep live in the database and in arena until either changes.  Returns
 * 0, or -1 when out of memory.
 */
int cats_pce_answer(struct cats_pce *p, const struct cats_path_req *rq,
    uint64_t now, struct cats_rec *rep, struct cats_arena *arena);

/* Translate a request's constraints; exclusions naming no node or link of
 * the database are dropped (nothing to avoid).  Arrays live in arena. */
int cats_pce_request(const struct cats_te *te, const struct cats_path_req *rq,
    struct cats_cspf_req *out, struct cats_arena *arena);

#endif
