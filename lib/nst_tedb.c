/*
 * nst_tedb.c - the Network Service Table provider over a TE database: the
 * distances tedist.h computes from the headend (an ingress forwarder) to
 * each egress.
 */
#include <stdlib.h>
#include <string.h>

#include "nst.h"
#include "tedist.h"

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

static int
tedb_lookup(void *ctx, const char *headend, const char *egress, uint64_t now,
    struct cats_nst_path *out)
{
	struct cats_nst_tedb *p = ctx;
	memset(out, 0, sizeof(*out));
	out->provider = "tedb";
	out->status = CATS_NST_UNKNOWN;
	if (p->te == NULL)
		return out->status;
	struct cats_tedist_dist d;
	int st = cats_tedist_get(p->dist, p->te, headend, egress,
	    CATS_METRIC_DELAY, &d);
	out->ts = now;
	out->expires = UINT64_MAX;
	out->gen = cats_te_gen(p->te);
	if (st == CATS_TEDIST_OK) {
		out->status = CATS_NST_OK;
		out->up = true;
		out->has_delay = true;
		out->delay_us = d.delay_us;
		out->has_hops = true;
		out->hops = d.hops;
	} else if (st == CATS_TEDIST_UNREACHABLE) {
		out->status = CATS_NST_DOWN;
	} else {
		out->status = CATS_NST_UNKNOWN;
	}
	return out->status;
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
	.gen = tedb_gen,
	.free = tedb_free,
};
