/*
 * ha_fold.c - the buckets of the chunks (ha_fold.h).
 */
#include <stdlib.h>
#include <string.h>

#include "ha/ha_fold.h"

uint64_t
ha_bucket_of(uint64_t id)
{
	return id / HA_CHUNK_IDS;
}

uint64_t
ha_bucket_lo(uint64_t b)
{
	return b == 0 ? 1 : b * HA_CHUNK_IDS;
}

uint64_t
ha_bucket_hi(uint64_t b)
{
	return (b + 1) * HA_CHUNK_IDS;
}

static bool
bucket_eq(const void *item, const void *key)
{
	return ((const struct ha_bucket *)item)->b == *(const uint64_t *)key;
}

uint64_t
ha_num_hash(uint64_t v)
{
	return cats_hash(&v, sizeof(v));
}

static void
bucket_free(struct ha_bucket *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->e[i].v);
	free(k->e);
	free(k);
}

void
ha_fold_free(struct ha_fold_set *s)
{
	for (size_t i = 0; i < s->tab.cap; i++)
		if (s->tab.s[i].h)
			bucket_free(s->tab.s[i].item);
	cats_htab_free(&s->tab);
	memset(s, 0, sizeof(*s));
}

struct ha_bucket *
ha_fold_bucket(struct ha_fold_set *s, uint64_t b)
{
	return cats_htab_get(&s->tab, ha_num_hash(b), bucket_eq, &b);
}

void
ha_fold_drop(struct ha_fold_set *s, uint64_t b)
{
	struct ha_bucket *k = cats_htab_del(&s->tab, ha_num_hash(b), bucket_eq, &b);
	if (k != NULL) {
		s->live -= k->live;
		bucket_free(k);
	}
}

static struct ha_bucket *
bucket_get(struct ha_fold_set *s, uint64_t b)
{
	struct ha_bucket *k = ha_fold_bucket(s, b);
	if (k != NULL)
		return k;
	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	k->b = b;
	if (cats_htab_put(&s->tab, ha_num_hash(b), k) < 0) {
		free(k);
		return NULL;
	}
	return k;
}

/* The index of id in k, or where it would go (*found false). */
static size_t
find(const struct ha_bucket *k, uint64_t id, bool *found)
{
	size_t lo = 0, hi = k->n;
	while (lo < hi) {
		size_t m = (lo + hi) / 2;
		if (k->e[m].id < id)
			lo = m + 1;
		else
			hi = m;
	}
	*found = lo < k->n && k->e[lo].id == id;
	return lo;
}

/* Entry e of s's bucket k set to (seq, rm, v[0..n)): 0 or -1. */
static int
set_entry(struct ha_fold_set *s, struct ha_bucket *k, struct ha_fent *e,
    uint64_t seq, bool rm, const uint8_t *v, size_t n)
{
	uint8_t *c = malloc(n ? n : 1);
	if (c == NULL)
		return -1;
	memcpy(c, v, n);
	free(e->v);
	if (e->v != NULL && !e->rm) {
		k->live--;
		s->live--;
	}
	e->v = c;
	e->len = (uint32_t)n;
	e->seq = seq;
	e->rm = rm;
	if (!rm) {
		k->live++;
		s->live++;
	}
	return 0;
}

static void
del_entry(struct ha_fold_set *s, struct ha_bucket *k, size_t i)
{
	if (!k->e[i].rm) {
		k->live--;
		s->live--;
	}
	free(k->e[i].v);
	memmove(k->e + i, k->e + i + 1, (k->n - i - 1) * sizeof(*k->e));
	k->n--;
}

/* A new entry for id at index i of k (empty: set_entry fills it). */
static struct ha_fent *
add_entry(struct ha_bucket *k, size_t i, uint64_t id)
{
	if (cats_grow((void **)&k->e, &k->cap, k->n, sizeof(*k->e), 8) < 0)
		return NULL;
	memmove(k->e + i + 1, k->e + i, (k->n - i) * sizeof(*k->e));
	k->n++;
	k->e[i] = (struct ha_fent){ .id = id };
	return &k->e[i];
}

int
ha_fold_put(struct ha_fold_set *s, uint64_t id, uint64_t seq, bool rm,
    const uint8_t *v, size_t n)
{
	struct ha_bucket *k = bucket_get(s, ha_bucket_of(id));
	bool found;
	if (k == NULL)
		return -1;
	size_t i = find(k, id, &found);
	if (found ? seq < k->e[i].seq : seq <= k->seq)
		return 0;
	struct ha_fent *e = found ? &k->e[i] : add_entry(k, i, id);
	if (e == NULL)
		return -1;
	if (set_entry(s, k, e, seq, rm, v, n) < 0) {
		if (!found)
			del_entry(s, k, i);
		return -1;
	}
	k->dirty = true;
	return 1;
}

/* A chunk's records as decoded: pointers into its value (or raw). */
struct crec {
	uint64_t id;
	const uint8_t *v;
	size_t n;
};

struct cctx {
	struct crec r[HA_CHUNK_IDS];
	size_t n;
};

static int
chunk_cb(void *arg, const struct cats_rec *r, const uint8_t *v, size_t n)
{
	struct cctx *c = arg;
	/* ha_chunk_decode() caps the count at the range's ids. */
	c->r[c->n++] = (struct crec){ r->u.binding.id, v, n };
	return 0;
}

int
ha_fold_chunk(struct ha_fold_set *s, struct cats_dec *d, const uint8_t *p,
    size_t n, uint64_t lo, struct cats_buf *raw, struct ha_chunk_hdr *h,
    struct cats_err *err)
{
	struct cctx *c = malloc(sizeof(*c));
	int rc = -2;
	if (c == NULL)
		return -2;
	c->n = 0;
	if (ha_chunk_decode(d, p, n, raw, h, chunk_cb, c, err) != 0) {
		free(c);
		return -1;
	}
	if (h->lo != lo) {
		free(c);
		return cats_err_set(err, "", "a chunk of range [%llu, %llu) "
		    "at the key of %llu", (unsigned long long)h->lo,
		    (unsigned long long)h->hi, (unsigned long long)lo);
	}
	struct ha_bucket *k = bucket_get(s, ha_bucket_of(lo));
	if (k == NULL)
		goto out;
	/* Its bindings, unless held as of a later entry. */
	for (size_t j = 0; j < c->n; j++) {
		bool found;
		size_t i = find(k, c->r[j].id, &found);
		if (found && k->e[i].seq > h->seq)
			continue;
		struct ha_fent *e = found ? &k->e[i] : add_entry(k, i,
		    c->r[j].id);
		if (e == NULL)
			goto out;
		if (set_entry(s, k, e, h->seq, false, c->r[j].v, c->r[j].n) <
		    0) {
			if (!found)
				del_entry(s, k, i);
			goto out;
		}
	}
	/* Those of its range it lacks, held as of it or earlier, are gone. */
	size_t j = 0;
	for (size_t i = 0; i < k->n;) {
		struct ha_fent *e = &k->e[i];
		while (j < c->n && c->r[j].id < e->id)
			j++;
		if (e->id >= h->lo && e->id < h->hi && e->seq <= h->seq &&
		    (j == c->n || c->r[j].id != e->id)) {
			del_entry(s, k, i);
			continue;
		}
		i++;
	}
	if (h->seq > k->seq)
		k->seq = h->seq;
	k->nparts = 0;
	rc = 0;
out:
	free(c);
	return rc;
}

void
ha_parts_free(struct ha_part *p, size_t n)
{
	for (size_t i = 0; p != NULL && i < n; i++)
		cats_buf_free(&p[i].v);
	free(p);
}

/* Part [lo, hi) of the n records raw[0..len), sealed as of seq. */
static int
part_add(struct ha_part **parts, size_t *np, size_t *cap, uint64_t seq,
    uint64_t lo, uint64_t hi, uint64_t n, const struct cats_buf *raw)
{
	if (cats_grow((void **)parts, cap, *np, sizeof(**parts), 2) < 0)
		return -1;
	struct ha_part *p = &(*parts)[*np];
	struct ha_chunk_hdr h = { seq, lo, hi, n, 0 };
	memset(p, 0, sizeof(*p));
	p->lo = lo;
	p->hi = hi;
	if (ha_chunk_seal(&p->v, &h, raw->p, raw->len) < 0) {
		cats_buf_free(&p->v);
		return -1;
	}
	(*np)++;
	return 0;
}

int
ha_fold_seal(const struct ha_bucket *b, uint64_t seq, struct ha_part **parts,
    size_t *n)
{
	struct cats_buf raw = { 0 };
	size_t cap = 0;
	uint64_t lo = ha_bucket_lo(b->b), nrec = 0;
	*parts = NULL;
	*n = 0;
	for (size_t i = 0; i < b->n; i++) {
		const struct ha_fent *e = &b->e[i];
		if (e->rm)
			continue;
		/* The next chunk starts at this binding. */
		if (nrec > 0 && raw.len + e->len > HA_LOG_TARGET) {
			if (part_add(parts, n, &cap, seq, lo, e->id, nrec,
			    &raw) < 0)
				goto fail;
			lo = e->id;
			raw.len = 0;
			nrec = 0;
		}
		if (cats_buf_add(&raw, e->v, e->len) < 0)
			goto fail;
		nrec++;
	}
	if (part_add(parts, n, &cap, seq, lo, ha_bucket_hi(b->b), nrec,
	    &raw) < 0)
		goto fail;
	cats_buf_free(&raw);
	return 0;
fail:
	cats_buf_free(&raw);
	ha_parts_free(*parts, *n);
	*parts = NULL;
	*n = 0;
	return -1;
}

void
ha_fold_written(struct ha_fold_set *s, struct ha_bucket *b, uint64_t seq,
    uint32_t nparts)
{
	for (size_t i = 0; i < b->n;) {
		if (b->e[i].rm && b->e[i].seq <= seq) {
			del_entry(s, b, i);
			continue;
		}
		i++;
	}
	if (seq > b->seq)
		b->seq = seq;
	b->nparts = nparts;
	b->dirty = false;
}

static bool
is_dirty(const void *item, void *arg)
{
	return arg == NULL || ((const struct ha_bucket *)item)->dirty;
}

static int
cmp_bucket(const void *a, const void *b)
{
	uint64_t x = (*(struct ha_bucket *const *)a)->b;
	uint64_t y = (*(struct ha_bucket *const *)b)->b;
	return x < y ? -1 : x > y;
}

struct ha_bucket **
ha_fold_buckets(const struct ha_fold_set *s, bool dirty, size_t *n)
{
	struct ha_bucket **v = (struct ha_bucket **)cats_htab_select(&s->tab,
	    is_dirty, dirty ? (void *)1 : NULL, n);
	if (v != NULL && *n > 1)
		qsort(v, *n, sizeof(*v), cmp_bucket);
	return v;
}
