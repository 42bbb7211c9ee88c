/*
 * bind_store.c - the containers of the binding table (bind_store.h).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/cats.h"
#include "bind/bind_store.h"

/* ---- large zeroed arrays ---- */

void *
bs_big_alloc(size_t n, bool huge)
{
	if (n < BS_HUGE_SIZE)
		return calloc(1, n ? n : 1);
	size_t len = bs_big_size(n);
	uint8_t *p = mmap(NULL, len + BS_HUGE_SIZE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uintptr_t a = ((uintptr_t)p + BS_HUGE_SIZE - 1) &
	    ~(uintptr_t)(BS_HUGE_SIZE - 1);
	size_t head = (size_t)(a - (uintptr_t)p);
	if (head > 0)
		munmap(p, head);
	if (BS_HUGE_SIZE - head > 0)
		munmap((uint8_t *)a + len, BS_HUGE_SIZE - head);
#ifdef MADV_HUGEPAGE
	if (huge)
		madvise((void *)a, len, MADV_HUGEPAGE);
#endif
	return (void *)a;
}

void
bs_big_free(void *p, size_t n)
{
	if (p == NULL)
		return;
	if (n < BS_HUGE_SIZE)
		free(p);
	else
		munmap(p, bs_big_size(n));
}

/* ---- slabs ---- */

uint32_t
bs_slab_alloc(struct bs_slab *s)
{
	uint32_t i;
	if (s->free != 0) {
		i = s->free;
		memcpy(&s->free, bs_slab_at(s, i), sizeof(uint32_t));
	} else {
		if ((s->top & BS_SLAB_MASK) == 0)
			s->top++;
		if (s->top >= BS_MAX_ITEMS)
			return 0;
		if ((s->top >> BS_SLAB_SHIFT) >= s->nchunk) {
			uint8_t **v = realloc(s->chunk, (s->nchunk + 1) *
			    sizeof(*v));
			if (v == NULL)
				return 0;
			s->chunk = v;
			size_t bytes = (size_t)BS_SLAB_CHUNK * s->isz;
			uint8_t *c = bs_big_alloc(bytes, s->nchunk > 0);
			if (c == NULL)
				return 0;
			/* Items are zeroed when handed out; pages stay untouched. */
			memcpy(c, &s->nchunk, sizeof(uint32_t));
			v[s->nchunk] = c;
			s->nchunk++;
		}
		i = s->top++;
	}
	memset(bs_slab_at(s, i), 0, s->isz);
	s->live++;
	return i;
}

void
bs_slab_free(struct bs_slab *s, uint32_t i)
{
	memset(bs_slab_at(s, i), 0, s->isz);
	memcpy(bs_slab_at(s, i), &s->free, sizeof(uint32_t));
	s->free = i;
	s->live--;
}

void
bs_slab_destroy(struct bs_slab *s)
{
	for (uint32_t i = 0; i < s->nchunk; i++)
		bs_big_free(s->chunk[i], (size_t)BS_SLAB_CHUNK * s->isz);
	free(s->chunk);
	memset(s, 0, sizeof(*s));
}

size_t
bs_slab_mem(const struct bs_slab *s)
{
	return (size_t)s->nchunk * (bs_big_size((size_t)BS_SLAB_CHUNK *
	    s->isz) + sizeof(void *));
}

/* ---- handles ---- */

uint32_t
bs_hvec_add(struct bs_hvec *h, void *p)
{
	if (h->nfreed > 0) {
		uint32_t i = h->freed[--h->nfreed];
		h->v[i] = p;
		return i;
	}
	if (h->n == 0)
		h->n = 1;
	if (cats_grow((void **)&h->v, &h->cap, h->n, sizeof(*h->v), 64) < 0)
		return 0;
	h->v[h->n] = p;
	return h->n++;
}

void
bs_hvec_del(struct bs_hvec *h, uint32_t i)
{
	h->v[i] = NULL;
	if (cats_grow((void **)&h->freed, &h->capfreed, h->nfreed,
	    sizeof(*h->freed), 64) < 0)
		return;		/* the handle is leaked, not reused */
	h->freed[h->nfreed++] = i;
}

void
bs_hvec_free(struct bs_hvec *h)
{
	free(h->v);
	free(h->freed);
	memset(h, 0, sizeof(*h));
}

/* ---- the index ---- */

#define IDX_MIN 64

uint32_t
bs_idx_next_cap(uint32_t cap, size_t slot)
{
	uint64_t c = cap == 0 ? IDX_MIN : cap < 65536 ? (uint64_t)cap * 2 :
	    (uint64_t)cap + cap / 4;
	c = bs_big_size(c * slot) / slot;
	return c > (UINT32_C(1) << 31) ? 0 : (uint32_t)c;
}

/* Insert into a table with room (no growth). */
static void
cidx_insert(struct bs_cidx *x, struct bs_cslot c)
{
	uint32_t cap = x->cap, i = bs_idx_home(c.tag, x->m, cap);
	for (uint32_t d = 0;; d++) {
		struct bs_cslot *o = &x->s[i];
		if (o->v == 0) {
			*o = c;
			x->n++;
			return;
		}
		uint32_t od = bs_probe_dist(i, bs_idx_home(o->tag, x->m, cap),
		    cap);
		if (od < d) {
			struct bs_cslot tmp = *o;
			*o = c;
			c = tmp;
			d = od;
		}
		if (++i == cap)
			i = 0;
	}
}

/* The capacity the puts of n items would grow a table of cap to. */
static uint32_t
idx_cap_for(uint32_t cap, uint32_t n, size_t slot)
{
	if (cap == 0)
		cap = bs_idx_next_cap(0, slot);
	while (cap != 0 && bs_idx_full(n, cap))
		cap = bs_idx_next_cap(cap, slot);
	return cap;
}

static int
cidx_resize(struct bs_cidx *x, uint32_t cap)
{
	if (cap == 0)
		return -1;
	struct bs_cslot *s = bs_big_alloc((size_t)cap * sizeof(*s), true);
	if (s == NULL)
		return -1;
	struct bs_cidx o = *x;
	x->s = s;
	x->cap = cap;
	x->n = 0;
	x->m = x->seq ? UINT64_MAX / cap + 1 : 0;
	for (uint32_t i = 0; i < o.cap; i++)
		if (o.s[i].v != 0)
			cidx_insert(x, o.s[i]);
	bs_big_free(o.s, (size_t)o.cap * sizeof(*o.s));
	return 0;
}

int
bs_cidx_reserve(struct bs_cidx *x, uint32_t n)
{
	uint64_t want = (uint64_t)x->n + n;
	if (want > UINT32_MAX / 2)
		return -1;
	uint32_t cap = idx_cap_for(x->cap, (uint32_t)want,
	    sizeof(struct bs_cslot));
	return x->s != NULL && cap == x->cap ? 0 : cidx_resize(x, cap);
}

void
bs_cidx_trim(struct bs_cidx *x)
{
	if (x->s == NULL)
		return;
	uint32_t cap = idx_cap_for(0, x->n, sizeof(struct bs_cslot));
	if (cap != 0 && cap < x->cap)
		cidx_resize(x, cap);
}

void
bs_cidx_free(struct bs_cidx *x)
{
	bool seq = x->seq;
	bs_big_free(x->s, (size_t)x->cap * sizeof(*x->s));
	memset(x, 0, sizeof(*x));
	x->seq = seq;
}

int
bs_cidx_put(struct bs_cidx *x, uint64_t h, uint32_t v)
{
	if ((x->s == NULL || bs_idx_full(x->n, x->cap)) &&
	    cidx_resize(x, bs_idx_next_cap(x->cap, sizeof(struct bs_cslot))) < 0)
		return -1;
	cidx_insert(x, (struct bs_cslot){ v, (uint32_t)h });
	return 0;
}

void
bs_cidx_del(struct bs_cidx *x, uint64_t h, uint32_t v)
{
	if (x->s == NULL)
		return;
	uint32_t cap = x->cap, i = bs_idx_home((uint32_t)h, x->m, cap);
	for (uint32_t d = 0;; d++) {
		const struct bs_cslot *c = &x->s[i];
		if (c->v == 0 || bs_probe_dist(i, bs_idx_home(c->tag, x->m,
		    cap), cap) < d)
			return;
		if (c->v == v)
			break;
		if (++i == cap)
			i = 0;
	}
	for (;;) {
		uint32_t j = i + 1 == cap ? 0 : i + 1;
		struct bs_cslot *c = &x->s[j];
		if (c->v == 0 || bs_idx_home(c->tag, x->m, cap) == j)
			break;
		x->s[i] = *c;
		i = j;
	}
	x->s[i].v = 0;
	x->n--;
}

size_t
bs_cidx_mem(const struct bs_cidx *x)
{
	return x->s ? bs_big_size((size_t)x->cap * sizeof(struct bs_cslot)) : 0;
}

/* ---- client counts ---- */

void
bs_ctab_insert(struct bs_ctab *x, struct bs_ccount c)
{
	uint32_t cap = x->cap, i = bs_idx_home(c.tag, x->m, cap);
	for (uint32_t d = 0;; d++) {
		struct bs_ccount *o = &x->s[i];
		if (o->key == 0) {
			*o = c;
			x->n++;
			return;
		}
		uint32_t od = bs_probe_dist(i, bs_idx_home(o->tag, x->m, cap),
		    cap);
		if (od < d) {
			struct bs_ccount tmp = *o;
			*o = c;
			c = tmp;
			d = od;
		}
		if (++i == cap)
			i = 0;
	}
}

int
bs_ctab_reserve(struct bs_ctab *x)
{
	if (x->s != NULL && !bs_idx_full(x->n, x->cap))
		return 0;
	uint32_t cap = bs_idx_next_cap(x->cap, sizeof(struct bs_ccount));
	struct bs_ccount *s = cap ? bs_big_alloc((size_t)cap * sizeof(*s),
	    true) : NULL;
	if (s == NULL)
		return -1;
	struct bs_ctab o = *x;
	x->s = s;
	x->cap = cap;
	x->n = 0;
	x->m = 0;
	for (uint32_t i = 0; i < o.cap; i++)
		if (o.s[i].key != 0)
			bs_ctab_insert(x, o.s[i]);
	bs_big_free(o.s, (size_t)o.cap * sizeof(*o.s));
	return 0;
}

void
bs_ctab_del(struct bs_ctab *x, struct bs_ccount *c)
{
	uint32_t cap = x->cap, i = (uint32_t)(c - x->s);
	for (;;) {
		uint32_t j = i + 1 == cap ? 0 : i + 1;
		struct bs_ccount *n = &x->s[j];
		if (n->key == 0 || bs_idx_home(n->tag, x->m, cap) == j)
			break;
		x->s[i] = *n;
		i = j;
	}
	x->s[i].key = 0;
	x->n--;
}

void
bs_ctab_free(struct bs_ctab *x)
{
	bs_big_free(x->s, (size_t)x->cap * sizeof(struct bs_ccount));
	memset(x, 0, sizeof(*x));
}

size_t
bs_ctab_mem(const struct bs_ctab *x)
{
	return x->s ? bs_big_size((size_t)x->cap * sizeof(struct bs_ccount)) :
	    0;
}
