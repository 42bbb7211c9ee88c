/*
 * tedist.c - per-headend distance cache over a TE database (tedist.h).
 */
#include <stdlib.h>
#include <string.h>

#include "pce/cspf.h"
#include "pce/tedist.h"

struct nst_entry {
	uint64_t uid, gen;	/* database the run belongs to; uid 0: free */
	uint32_t headend;
	int metric;
	uint64_t used;		/* LRU clock */
	uint32_t n;		/* nodes the arrays hold */
	uint64_t *cost, *delay;
	uint32_t *hops;
};

struct cats_tedist {
	struct nst_entry *e;
	unsigned cap;
	uint64_t clock, runs, hits;
	struct cats_cspf_ws *ws;
};

struct cats_tedist *
cats_tedist_new(unsigned max_headends)
{
	struct cats_tedist *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->cap = max_headends ? max_headends : 16;
	c->e = calloc(c->cap, sizeof(*c->e));
	c->ws = cats_cspf_ws_new();
	if (c->e == NULL || c->ws == NULL) {
		cats_tedist_free(c);
		return NULL;
	}
	return c;
}

static void
entry_clear(struct nst_entry *e)
{
	free(e->cost);
	free(e->delay);
	free(e->hops);
	memset(e, 0, sizeof(*e));
}

void
cats_tedist_free(struct cats_tedist *c)
{
	if (c == NULL)
		return;
	for (unsigned i = 0; c->e != NULL && i < c->cap; i++)
		entry_clear(&c->e[i]);
	free(c->e);
	cats_cspf_ws_free(c->ws);
	free(c);
}

void
cats_tedist_counters(const struct cats_tedist *c, uint64_t *runs, uint64_t *hits)
{
	*runs = c->runs;
	*hits = c->hits;
}

/* The entry of (headend, metric) for this database, computed if needed. */
static struct nst_entry *
lookup(struct cats_tedist *c, const struct cats_te *te, uint32_t h, int metric)
{
	uint64_t uid = cats_te_uid(te), gen = cats_te_gen(te);
	struct nst_entry *victim = NULL;
	for (unsigned i = 0; i < c->cap; i++) {
		struct nst_entry *e = &c->e[i];
		if (e->uid == uid && e->gen == gen && e->headend == h &&
		    e->metric == metric) {
			e->used = ++c->clock;
			c->hits++;
			return e;
		}
		/* Entries of another database or generation are dead: free
		 * (their arrays are reused). */
		if (e->uid != 0 && (e->uid != uid || e->gen != gen))
			e->uid = 0;
		if (victim == NULL || (victim->uid != 0 && (e->uid == 0 ||
		    e->used < victim->used)))
			victim = e;
	}
	struct nst_entry *e = victim;
	uint32_t n = cats_te_nodes(te);
	if (e->n != n) {
		entry_clear(e);
		e->cost = malloc((size_t)n * sizeof(uint64_t));
		e->delay = malloc((size_t)n * sizeof(uint64_t));
		e->hops = malloc((size_t)n * sizeof(uint32_t));
		if (e->cost == NULL || e->delay == NULL || e->hops == NULL) {
			entry_clear(e);
			return NULL;
		}
		e->n = n;
	}
	e->uid = 0;
	if (cats_cspf_tree(te, c->ws, h, metric, e->cost, e->delay,
	    e->hops) < 0)
		return NULL;
	e->uid = uid;
	e->gen = gen;
	e->headend = h;
	e->metric = metric;
	e->used = ++c->clock;
	c->runs++;
	return e;
}

static int
fill(const struct nst_entry *e, const struct cats_te *te, uint32_t v,
    struct cats_tedist_dist *out)
{
	memset(out, 0, sizeof(*out));
	if (v == CATS_TE_NONE)
		return CATS_TEDIST_NO_EGRESS;
	out->gen = e->gen;
	if (e->hops[v] == UINT32_MAX)
		return CATS_TEDIST_UNREACHABLE;
	out->cost = e->cost[v];
	out->delay_us = e->delay[v];
	out->hops = e->hops[v];
	return CATS_TEDIST_OK;
}

int
cats_tedist_get(struct cats_tedist *c, const struct cats_te *te, const char *headend,
    const char *egress, int metric, struct cats_tedist_dist *out)
{
	uint32_t h = cats_te_node(te, headend);
	memset(out, 0, sizeof(*out));
	if (h == CATS_TE_NONE)
		return CATS_TEDIST_NO_HEADEND;
	struct nst_entry *e = lookup(c, te, h, metric);
	if (e == NULL)
		return CATS_TEDIST_NOMEM;
	return fill(e, te, cats_te_node(te, egress), out);
}

int
cats_tedist_get_many(struct cats_tedist *c, const struct cats_te *te,
    const char *headend, const char *const *egress, const uint64_t *egress_h,
    size_t n, int metric, struct cats_tedist_dist *out, int *status)
{
	uint32_t h = cats_te_node(te, headend);
	if (h == CATS_TE_NONE)
		return -1;
	struct nst_entry *e = lookup(c, te, h, metric);
	if (e == NULL)
		return -1;
	int ok = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t v = egress_h != NULL ? cats_te_node_h(te, egress[i],
		    egress_h[i]) : cats_te_node(te, egress[i]);
		status[i] = fill(e, te, v, &out[i]);
		ok += status[i] == CATS_TEDIST_OK;
	}
	return ok;
}
