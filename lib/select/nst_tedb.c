/*
 * nst_tedb.c - the Network Service Table provider over a TE database: the
 * distances tedist.h computes from the headend (an ingress forwarder) to
 * each egress.
 */
#include <stdlib.h>
#include <string.h>

#include "select/nst.h"
#include "pce/tedist.h"

struct cats_nst_tedb {
	struct cats_tedist *dist;
	const struct cats_te *te;
	uint64_t gen;		/* grows with every database or update */
	uint64_t last_uid, last_gen;
};

struct cats_nst_tedb *
cats_nst_tedb_new(unsigned max_headends)
{
	struct cats_nst_tedb *p = calloc(1, sizeof(*p));
	if (p == NULL || (p->dist = cats_tedist_new(max_headends)) == NULL) {
		free(p);
		return NULL;
	}
	return p;
}

void
cats_nst_tedb_set(struct cats_nst_tedb *p, const struct cats_te *te)
{
	p->te = te;
	p->gen++;
}

/* The path record of a distance (st: a CATS_TEDIST_* code). */
static int
path_of(const struct cats_nst_tedb *p, int st, const struct cats_tedist_dist *d,
    uint64_t now, struct cats_nst_path *out)
{
	memset(out, 0, sizeof(*out));
	out->provider = "tedb";
	out->ts = now;
	out->expires = UINT64_MAX;
	out->gen = cats_te_gen(p->te);
	if (st == CATS_TEDIST_OK) {
		out->status = CATS_NST_OK;
		out->up = true;
		out->has_delay = true;
		out->delay_us = d->delay_us;
		out->has_hops = true;
		out->hops = d->hops;
	} else if (st == CATS_TEDIST_UNREACHABLE) {
		out->status = CATS_NST_DOWN;
	} else {
		out->status = CATS_NST_UNKNOWN;
	}
	return out->status;
}

static int
tedb_lookup(void *ctx, const char *headend, const char *egress, uint64_t now,
    struct cats_nst_path *out)
{
	struct cats_nst_tedb *p = ctx;
	if (p->te == NULL) {
		memset(out, 0, sizeof(*out));
		out->provider = "tedb";
		return out->status = CATS_NST_UNKNOWN;
	}
	struct cats_tedist_dist d;
	int st = cats_tedist_get(p->dist, p->te, headend, egress,
	    CATS_METRIC_DELAY, &d);
	return path_of(p, st, &d, now, out);
}

/* A batch from one headend: its distances are looked up once, and every
 * egress is then an index into them, found by the hash the CST keeps. */
static void
tedb_lookup_many(void *ctx, const char *headend, uint64_t headend_h,
    const char *const *egress, const uint64_t *egress_h, size_t n,
    uint64_t now, struct cats_nst_path *out)
{
	struct cats_nst_tedb *p = ctx;
	enum { BLOCK = 32 };
	struct cats_tedist_dist d[BLOCK];
	int st[BLOCK];
	(void)headend_h;
	for (size_t b = 0; b < n; b += BLOCK) {
		size_t m = n - b < BLOCK ? n - b : BLOCK;
		if (p->te == NULL || cats_tedist_get_many(p->dist, p->te,
		    headend, egress + b, egress_h + b, m, CATS_METRIC_DELAY, d,
		    st) < 0) {
			/* No database, no such headend, or no memory: each
			 * lookup says which. */
			for (size_t i = 0; i < m; i++)
				tedb_lookup(ctx, headend, egress[b + i], now,
				    &out[b + i]);
			continue;
		}
		for (size_t i = 0; i < m; i++)
			path_of(p, st[i], &d[i], now, &out[b + i]);
	}
}

static uint64_t
tedb_gen(const void *ctx)
{
	const struct cats_nst_tedb *p = ctx;
	struct cats_nst_tedb *w = (struct cats_nst_tedb *)p;
	/* A net update of the database moves its generation: ours too. */
	if (p->te != NULL && (cats_te_uid(p->te) != p->last_uid ||
	    cats_te_gen(p->te) != p->last_gen)) {
		w->last_uid = cats_te_uid(p->te);
		w->last_gen = cats_te_gen(p->te);
		w->gen++;
	}
	return p->gen;
}

static void
tedb_free(void *ctx)
{
	struct cats_nst_tedb *p = ctx;
	cats_tedist_free(p->dist);
	free(p);
}

const struct cats_nst_provider cats_nst_tedb_provider = {
	.name = "tedb",
	.lookup = tedb_lookup,
	.lookup_many = tedb_lookup_many,
	.gen = tedb_gen,
	.free = tedb_free,
};
