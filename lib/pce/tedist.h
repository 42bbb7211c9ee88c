/*
 * tedist.h - the Network Service Table view of a TE database (seed 001:
 * "the NST ... MAY be derived from a TEDB"): the cost, delay and hop count
 * from one headend (an ingress forwarder) to every egress.
 *
 * One shortest-path run from a headend gives the distances to every node;
 * the result is cached per (headend, metric) and used until the database
 * changes: a cached entry is valid only for the database object and the
 * generation it was computed on (cats_te_uid(), cats_te_gen()), so a `net`
 * update or a reload invalidates it with no call from the caller.  The
 * cache holds at most max_headends entries and evicts the least recently
 * used one; an entry costs 20 bytes per node of the database.
 *
 * What the distances mean: the path minimizing `metric` over every link
 * that is up, with no other constraint (the PCE applies the request's
 * constraints when it computes the path: a reachable egress here may still
 * get a no-path reply).  delay_us and hops are those of that path; to know
 * whether any path meets a delay bound, ask with CATS_METRIC_DELAY.
 *
 * Usage (cats-select):
 *
 *	struct cats_tedist *nst = cats_tedist_new(0);
 *	struct cats_tedist_dist d;
 *	switch (cats_tedist_get(nst, te, "IF-1", "EF-2", CATS_METRIC_DELAY, &d)) {
 *	case CATS_TEDIST_OK:	use d.delay_us, d.cost, d.hops, d.gen
 *	case CATS_TEDIST_UNREACHABLE: ... not a candidate
 *	default:		unknown headend or egress, out of memory
 *	}
 *	cats_tedist_free(nst);
 *
 * The database must outlive the calls that pass it; the cache keeps no
 * pointer into it between calls.  Not thread-safe (one per thread).
 */
#ifndef CATS_TEDIST_H
#define CATS_TEDIST_H

#include "pce/te.h"

enum cats_tedist_status {
	CATS_TEDIST_OK,
	CATS_TEDIST_UNREACHABLE,	/* no path over the links that are up */
	CATS_TEDIST_NO_HEADEND,	/* headend not in the database */
	CATS_TEDIST_NO_EGRESS,	/* egress not in the database */
	CATS_TEDIST_NOMEM,
};

struct cats_tedist_dist {
	uint64_t cost;		/* in the metric asked for */
	uint64_t delay_us;	/* delay of that path */
	uint32_t hops;		/* links of that path */
	uint64_t gen;		/* database generation it was computed on */
};

struct cats_tedist;

/* A cache of at most max_headends (headend, metric) runs; 0: 16. */
struct cats_tedist *cats_tedist_new(unsigned max_headends);
void cats_tedist_free(struct cats_tedist *nst);

/* Distance from headend to egress (node ids), computing the headend's
 * run if it is not cached for this database and generation. */
int cats_tedist_get(struct cats_tedist *nst, const struct cats_te *te,
    const char *headend, const char *egress, int metric,
    struct cats_tedist_dist *out);

/* The same for n egresses at once (one run); returns the number of
 * egresses with CATS_TEDIST_OK, or -1 when the headend is unknown or memory
 * is short.  status[i] gets each egress's status.  egress_h, when not
 * NULL, holds each egress's cats_hash_str (no name is hashed then). */
int cats_tedist_get_many(struct cats_tedist *nst, const struct cats_te *te,
    const char *headend, const char *const *egress, const uint64_t *egress_h,
    size_t n, int metric, struct cats_tedist_dist *out, int *status);

/* Counters: runs computed, lookups answered from the cache. */
void cats_tedist_counters(const struct cats_tedist *nst, uint64_t *runs,
    uint64_t *hits);

#endif
