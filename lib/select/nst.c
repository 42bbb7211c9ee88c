/*
 * nst.c - the Network Service Table: the provider list and the provider fed
 * by `net` records of scope path.
 */
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "select/nst.h"

const char *const cats_nst_status_names[] = { "ok", "unknown", "down",
	"stale", NULL };

void
cats_nst_init(struct cats_nst *n)
{
	memset(n, 0, sizeof(*n));
}

int
cats_nst_add(struct cats_nst *n, const struct cats_nst_provider *ops,
    void *ctx)
{
	if (n->n >= CATS_NST_MAX_PROVIDERS)
		return -1;
	n->p[n->n].ops = ops;
	n->p[n->n].ctx = ctx;
	n->n++;
	return 0;
}

/* Ask provider i alone; out->status is its answer. */
static int
ask(const struct cats_nst *n, size_t i, const char *headend,
    const char *egress, uint64_t now, struct cats_nst_path *out)
{
	memset(out, 0, sizeof(*out));
	out->status = n->p[i].ops->lookup(n->p[i].ctx, headend, egress, now,
	    out);
	if (out->provider == NULL)
		out->provider = n->p[i].ops->name;
	return out->status;
}

int
cats_nst_lookup(const struct cats_nst *n, const char *headend,
    const char *egress, uint64_t now, struct cats_nst_path *out)
{
	for (size_t i = 0; i < n->n; i++)
		if (ask(n, i, headend, egress, now, out) != CATS_NST_UNKNOWN)
			return out->status;
	memset(out, 0, sizeof(*out));
	return out->status = CATS_NST_UNKNOWN;
}

/* Up to this many egresses go to a provider at once. */
#define MANY 32

void
cats_nst_lookup_many(const struct cats_nst *n, const char *headend,
    uint64_t headend_h, const char *const *egress, const uint64_t *egress_h,
    size_t k, uint64_t now, struct cats_nst_path *out)
{
	for (size_t b = 0; b < k; b += MANY) {
		size_t m = k - b < MANY ? k - b : MANY;
		/* The egresses not known yet: all of them at first. */
		size_t idx[MANY], left = m;
		for (size_t i = 0; i < m; i++)
			idx[i] = b + i;
		/*
		 * Provider by provider, as cats_nst_lookup asks them, each on
		 * what the ones before did not know, in one batch where it can.
		 */
		for (size_t p = 0; p < n->n && left > 0; p++) {
			const struct cats_nst_provider *ops = n->p[p].ops;
			const char *eg[MANY];
			uint64_t egh[MANY];
			struct cats_nst_path got[MANY];
			for (size_t i = 0; i < left; i++) {
				eg[i] = egress[idx[i]];
				egh[i] = egress_h[idx[i]];
			}
			if (ops->lookup_many != NULL) {
				ops->lookup_many(n->p[p].ctx, headend, headend_h,
				    eg, egh, left, now, got);
			} else {
				for (size_t i = 0; i < left; i++)
					ask(n, p, headend, eg[i], now, &got[i]);
			}
			size_t still = 0;
			for (size_t i = 0; i < left; i++) {
				if (got[i].status == CATS_NST_UNKNOWN) {
					idx[still++] = idx[i];
					continue;
				}
				if (got[i].provider == NULL)
					got[i].provider = ops->name;
				out[idx[i]] = got[i];
			}
			left = still;
		}
		/* What none knows reads as cats_nst_lookup leaves it. */
		for (size_t i = 0; i < left; i++) {
			memset(&out[idx[i]], 0, sizeof(out[idx[i]]));
			out[idx[i]].status = CATS_NST_UNKNOWN;
		}
	}
}

uint64_t
cats_nst_gen(const struct cats_nst *n)
{
	uint64_t g = 0;
	for (size_t i = 0; i < n->n; i++)
		g += n->p[i].ops->gen(n->p[i].ctx);
	return g;
}

int
cats_nst_dump(const struct cats_nst *n, uint64_t now,
    int (*fn)(const struct cats_rec *r, void *arg), void *arg)
{
	for (size_t i = 0; i < n->n; i++) {
		if (n->p[i].ops->dump == NULL)
			continue;
		int rc = n->p[i].ops->dump(n->p[i].ctx, now, fn, arg);
		if (rc != 0)
			return rc;
	}
	return 0;
}

size_t
cats_nst_expire(struct cats_nst *n, uint64_t now, uint64_t grace_ms)
{
	size_t k = 0;
	for (size_t i = 0; i < n->n; i++)
		if (n->p[i].ops->expire != NULL)
			k += n->p[i].ops->expire(n->p[i].ctx, now, grace_ms);
	return k;
}

void
cats_nst_free(struct cats_nst *n)
{
	for (size_t i = 0; i < n->n; i++)
		if (n->p[i].ops->free != NULL)
			n->p[i].ops->free(n->p[i].ctx);
	n->n = 0;
}

/* ---- the record provider ---- */

struct rpath {
	char *src, *dst, *source;
	bool has_gen;
	uint64_t gen;		/* the record's gen */
	uint64_t ts;
	uint64_t ttl_ms;
	uint64_t expires;
	bool up;
	bool has_delay, has_bw, has_max_bw, has_hops;
	uint64_t delay_us, avail_bw, max_bw, hops;
	uint64_t pgen;		/* provider generation of the last change */
	char key[];		/* src and dst, inline: one fetch per compare */
};

struct cats_nst_rec {
	struct cats_htab t;
	size_t n, max;
	uint64_t default_ttl;
	uint64_t gen;
};

struct pkey {
	const char *src, *dst;
};

static bool
eq_path(const void *item, const void *key)
{
	const struct rpath *p = item;
	const struct pkey *k = key;
	return strcmp(p->src, k->src) == 0 && strcmp(p->dst, k->dst) == 0;
}

/* A path's key: joined from the names' hashes, which lookup_many's callers
 * keep, so that a batch of lookups hashes no string. */
static uint64_t
path_hash(const char *src, const char *dst)
{
	return cats_hash_join(cats_hash_str(src), cats_hash_str(dst));
}

struct cats_nst_rec *
cats_nst_rec_new(uint64_t default_ttl_ms, size_t max_paths)
{
	struct cats_nst_rec *r = calloc(1, sizeof(*r));
	if (r == NULL)
		return NULL;
	r->default_ttl = default_ttl_ms;
	r->max = max_paths ? max_paths : 4000000;
	return r;
}

static void
free_path(struct rpath *p)
{
	free(p->source);
	free(p);
}

static void
rec_free(void *ctx)
{
	struct cats_nst_rec *r = ctx;
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->t.cap; i++)
		if (r->t.s[i].h)
			free_path(r->t.s[i].item);
	cats_htab_free(&r->t);
	free(r);
}

size_t
cats_nst_rec_count(const struct cats_nst_rec *r)
{
	return r->n;
}

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int
cats_nst_rec_apply(struct cats_nst_rec *r, const struct cats_net *m,
    uint64_t now, struct cats_err *err)
{
	if (m->scope != CATS_NET_PATH)
		return 0;
	struct pkey k = { m->src, m->dst };
	uint64_t h = path_hash(m->src, m->dst);
	struct rpath *p = cats_htab_get(&r->t, h, eq_path, &k);
	bool has_gen = CATS_HAS(m, NET, gen);
	if (p != NULL) {
		if (has_gen && p->has_gen) {
			if (m->gen < p->gen ||
			    (m->gen == p->gen && m->ts < p->ts))
				return 0;
		} else if (m->ts < p->ts) {
			return 0;
		}
	} else {
		if (r->n >= r->max)
			return cats_err_set(err, "dst", "the NST is full (%zu "
			    "paths)", r->max);
		size_t ls = strlen(m->src) + 1, ld = strlen(m->dst) + 1;
		if ((p = calloc(1, sizeof(*p) + ls + ld)) == NULL)
			return cats_err_set(err, "", "out of memory");
		p->src = memcpy(p->key, m->src, ls);
		p->dst = memcpy(p->key + ls, m->dst, ld);
		if (cats_htab_put(&r->t, h, p) < 0) {
			free_path(p);
			return cats_err_set(err, "", "out of memory");
		}
		r->n++;
	}
	char *source = m->source ? strdup(m->source) : NULL;
	free(p->source);
	p->source = source;
	p->has_gen = has_gen;
	p->gen = m->gen;
	p->ts = m->ts;
	p->ttl_ms = CATS_HAS(m, NET, ttl_ms) ? m->ttl_ms : r->default_ttl;
	p->expires = sat_add(m->ts < now ? m->ts : now, p->ttl_ms);
	p->up = CATS_HAS(m, NET, up) ? m->up : true;
	p->has_delay = CATS_HAS(m, NET, delay_us);
	p->delay_us = m->delay_us;
	p->has_bw = CATS_HAS(m, NET, avail_bw);
	p->avail_bw = m->avail_bw;
	p->has_max_bw = CATS_HAS(m, NET, max_bw);
	p->max_bw = m->max_bw;
	p->has_hops = CATS_HAS(m, NET, hops);
	p->hops = m->hops;
	p->pgen = ++r->gen;
	return 1;
}

/* The view of the path whose key hashes to h (see rec_lookup). */
static int
rec_find(const struct cats_nst_rec *r, uint64_t h, const char *headend,
    const char *egress, uint64_t now, struct cats_nst_path *out)
{
	struct pkey k = { headend, egress };
	const struct rpath *p = cats_htab_get(&r->t, h, eq_path, &k);
	if (p == NULL)
		return CATS_NST_UNKNOWN;
	out->has_delay = p->has_delay;
	out->delay_us = p->delay_us;
	out->has_bw = p->has_bw;
	out->avail_bw = p->avail_bw;
	out->has_hops = p->has_hops;
	out->hops = p->hops;
	out->ts = p->ts;
	out->expires = p->expires;
	out->gen = p->pgen;
	out->up = p->up;
	if (now >= p->expires)
		return CATS_NST_STALE;
	return p->up ? CATS_NST_OK : CATS_NST_DOWN;
}

static int
rec_lookup(void *ctx, const char *headend, const char *egress, uint64_t now,
    struct cats_nst_path *out)
{
	const struct cats_nst_rec *r = ctx;
	return rec_find(r, path_hash(headend, egress), headend, egress,
	    now, out);
}

/* Lookups in rec_lookup_many that overlap. */
#define BATCH 16

/*
 * The paths are scattered in a large table: hash a batch of keys and ask
 * for their index slots, then for the paths in those slots (the key's in
 * all but a collision), then look each up with the lines on their way.
 */
static void
rec_lookup_many(void *ctx, const char *headend, uint64_t headend_h,
    const char *const *egress, const uint64_t *egress_h, size_t n,
    uint64_t now, struct cats_nst_path *out)
{
	const struct cats_nst_rec *r = ctx;
	uint64_t h[BATCH];
	for (size_t b = 0; b < n; b += BATCH) {
		size_t m = n - b < BATCH ? n - b : BATCH;
		size_t mask = r->t.cap ? r->t.cap - 1 : 0;
		for (size_t i = 0; i < m; i++) {
			h[i] = cats_hash_join(headend_h, egress_h[b + i]);
			if (r->t.cap)
				__builtin_prefetch(&r->t.s[h[i] & mask]);
		}
		for (size_t i = 0; i < m && r->t.cap; i++) {
			const struct cats_hslot *sl = &r->t.s[h[i] & mask];
			if (sl->h == 0)
				continue;
			/* The struct and its inline key: three lines. */
			for (int l = 0; l < 3; l++)
				__builtin_prefetch((const char *)sl->item +
				    64 * l);
		}
		for (size_t i = 0; i < m; i++) {
			memset(&out[b + i], 0, sizeof(out[b + i]));
			out[b + i].status = rec_find(r, h[i], headend,
			    egress[b + i], now, &out[b + i]);
		}
	}
}

static uint64_t
rec_gen(const void *ctx)
{
	return ((const struct cats_nst_rec *)ctx)->gen;
}

static int
cmp_path(const void *a, const void *b)
{
	const struct rpath *x = *(struct rpath *const *)a;
	const struct rpath *y = *(struct rpath *const *)b;
	int c = strcmp(x->src, y->src);
	return c ? c : strcmp(x->dst, y->dst);
}

static int
rec_dump(const void *ctx, uint64_t now,
    int (*fn)(const struct cats_rec *r, void *arg), void *arg)
{
	const struct cats_nst_rec *r = ctx;
	struct rpath **v = r->n ? malloc(r->n * sizeof(*v)) : NULL;
	size_t n = 0;
	int rc = 0;
	if (r->n && v == NULL)
		return -1;
	for (size_t i = 0; i < r->t.cap; i++)
		if (r->t.s[i].h)
			v[n++] = r->t.s[i].item;
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_path);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct rpath *p = v[i];
		struct cats_rec rec;
		cats_rec_init(&rec, CATS_T_NET);
		struct cats_net *m = &rec.u.net;
		m->scope = CATS_NET_PATH;
		m->ts = p->ts;
		m->src = p->src;
		m->dst = p->dst;
		m->source = p->source;
		CATS_SET_IF(p->has_gen, m, NET, gen, p->gen);
		/* Remaining lifetime, as the CST dump does. */
		uint64_t left = now < p->expires ? p->expires - now : 0;
		CATS_SET(m, NET, ttl_ms, left > CATS_U32 ? CATS_U32 : left);
		CATS_SET_IF(p->has_delay, m, NET, delay_us, p->delay_us);
		CATS_SET_IF(p->has_bw, m, NET, avail_bw, p->avail_bw);
		CATS_SET_IF(p->has_max_bw, m, NET, max_bw, p->max_bw);
		CATS_SET_IF(p->has_hops, m, NET, hops, p->hops);
		CATS_SET(m, NET, up, p->up && now < p->expires);
		rc = fn(&rec, arg);
	}
	free(v);
	return rc;
}

struct purge {
	uint64_t now, grace;
};

static bool
path_dead(const void *item, void *arg)
{
	const struct purge *p = arg;
	return sat_add(((const struct rpath *)item)->expires, p->grace) <=
	    p->now;
}

static size_t
rec_expire(void *ctx, uint64_t now, uint64_t grace_ms)
{
	struct cats_nst_rec *r = ctx;
	struct purge pg = { now, grace_ms };
	size_t n;
	struct rpath **dead = (struct rpath **)cats_htab_select(&r->t,
	    path_dead, &pg, &n);
	for (size_t i = 0; i < n; i++) {
		struct pkey k = { dead[i]->src, dead[i]->dst };
		cats_htab_del(&r->t, path_hash(k.src, k.dst), eq_path, &k);
		free_path(dead[i]);
		r->n--;
	}
	free(dead);
	if (n > 0)
		r->gen++;
	return n;
}

const struct cats_nst_provider cats_nst_rec_provider = {
	.name = "net-records",
	.lookup = rec_lookup,
	.gen = rec_gen,
	.dump = rec_dump,
	.expire = rec_expire,
	.free = rec_free,
	.lookup_many = rec_lookup_many,
};
