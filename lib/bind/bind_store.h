/*
 * bind_store.h - the containers of the binding table (private to
 * lib/bind): large zeroed arrays on huge pages, slabs of fixed-size items
 * that never move, handle vectors (32-bit names of interned objects) and
 * compact Robin Hood indexes of 32-bit item numbers.
 *
 * Why not base/htab.h, "the one hash table"?  A table of a million flows
 * is held to about 90 bytes a flow (bench/bench_bind.c: 88 B a binding at
 * 1M active, 16 flows a client; 112 B with a client per flow), and two
 * indexes find every entry (by binding id and by flow key).  A cats_htab
 * slot is 16 bytes (a 64-bit hash and a pointer) in a power-of-two table
 * grown at 3/4 full: at 1M entries each index is 2M slots, 32 MiB, so the
 * two would take 67 B a binding on their own.  A struct bs_cidx slot is
 * 8 bytes (an item number and a 32-bit tag), the table up to 7/8 full and
 * grown by a quarter, filling whole huge pages: 21 B a binding for both
 * (1.31M slots, 10 MiB each), so the table would grow from 88 to some
 * 134 B a binding on cats_htab, past the 128 B goal.  Item numbers rather
 * than pointers are also what keeps an entry at 64 bytes (the timing wheel
 * links entries by number).  The few interned objects and the transactions
 * in flight do use cats_htab.
 *
 * None of these reads the clock or does I/O; none is thread-safe.
 */
#ifndef CATS_BIND_STORE_H
#define CATS_BIND_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- large zeroed arrays, on huge pages where the kernel has them ---- */

#define BS_HUGE_SIZE ((size_t)2 << 20)

/* The bytes a bs_big_alloc() of n takes. */
static inline size_t
bs_big_size(size_t n)
{
	return n < BS_HUGE_SIZE ? n : (n + BS_HUGE_SIZE - 1) &
	    ~(BS_HUGE_SIZE - 1);
}

/*
 * n zeroed bytes.  From 2 MiB up, a mapping aligned to 2 MiB, marked for
 * transparent huge pages if huge: a 1M-binding table then takes a few
 * hundred page faults instead of tens of thousands, and its random probes
 * fewer TLB misses.  (A small table's first slab chunk is not: a huge page
 * is zeroed whole at its first touch.)
 */
void *bs_big_alloc(size_t n, bool huge);
/* Free what bs_big_alloc(n) returned (NULL is ignored). */
void bs_big_free(void *p, size_t n);

/* ---- slabs: fixed-size items in chunks that never move ---- */

#define BS_SLAB_SHIFT 15
#define BS_SLAB_CHUNK (1u << BS_SLAB_SHIFT)
#define BS_SLAB_MASK (BS_SLAB_CHUNK - 1)
#define BS_MAX_ITEMS (UINT32_C(1) << 30)

/*
 * Item 0 of every chunk is never handed out: it holds the chunk's number,
 * so that an item's own number is found from its address when chunks are
 * aligned to their size (entries: 32768 of 64 bytes, one huge page).
 * Set isz before the first bs_slab_alloc().
 */
struct bs_slab {
	uint8_t **chunk;
	uint32_t nchunk, isz;
	uint32_t top;		/* next never-used item (0 is reserved) */
	uint32_t free;		/* free list, linked through the first u32 */
	uint32_t live;
};

/* The address of item i. */
static inline void *
bs_slab_at(const struct bs_slab *s, uint32_t i)
{
	return s->chunk[i >> BS_SLAB_SHIFT] + (size_t)(i & BS_SLAB_MASK) *
	    s->isz;
}

/* A zeroed item's number; 0 on OOM or when BS_MAX_ITEMS are used. */
uint32_t bs_slab_alloc(struct bs_slab *s);
/* Give item i back (zeroed, onto the free list). */
void bs_slab_free(struct bs_slab *s, uint32_t i);
void bs_slab_destroy(struct bs_slab *s);
/* The bytes the slab's chunks take. */
size_t bs_slab_mem(const struct bs_slab *s);

/* ---- handles: 32-bit names of interned objects ---- */

struct bs_hvec {
	void **v;
	uint32_t n;
	size_t cap;
	uint32_t *freed;
	uint32_t nfreed;
	size_t capfreed;
};

/* A handle (never 0) naming p, a freed one first; 0 on OOM. */
uint32_t bs_hvec_add(struct bs_hvec *h, void *p);
/* Free handle i for reuse (leaked, not reused, on OOM). */
void bs_hvec_del(struct bs_hvec *h, uint32_t i);
void bs_hvec_free(struct bs_hvec *h);

/* ---- compact open-addressing index of item numbers ---- */

/*
 * A slot is an item number and 32 bits of its key's hash (the tag): probes
 * compare the tag before touching the item, and growth and deletion need
 * no rehashing.  Robin Hood linear probing, so that the table may be 7/8
 * full and a miss still ends after a few slots; a key's home slot is
 * computed from its tag by multiplication (bs_idx_home()), so that the
 * capacity need not be a power of two and grows in small steps.  Binding
 * ids, handed out in sequence, are their own tags: new bindings fill the
 * index in order.
 */
struct bs_cslot {
	uint32_t v;		/* item number, 0 empty */
	uint32_t tag;
};

struct bs_cidx {
	struct bs_cslot *s;
	uint32_t cap, n;
	uint64_t m;		/* bs_idx_home() */
	bool seq;		/* tags come in sequence: homes by modulo */
};

/*
 * The home slot of a tag: tag mod cap (Lemire's fastmod, m = UINT64_MAX /
 * cap + 1) for sequential tags, whose run of slots then follows their
 * order; else tag scaled to cap (m = 0), which keeps the slots in the
 * order of the tags, so that growth writes the new array front to back.
 */
static inline uint32_t
bs_idx_home(uint32_t tag, uint64_t m, uint32_t cap)
{
	if (m != 0)
		return (uint32_t)(((unsigned __int128)(m * tag) * cap) >> 64);
	return (uint32_t)(((uint64_t)tag * cap) >> 32);
}

/* How far slot i is from the home of tag. */
static inline uint32_t
bs_probe_dist(uint32_t i, uint32_t home, uint32_t cap)
{
	return i >= home ? i - home : i + cap - home;
}

static inline bool
bs_idx_full(uint32_t n, uint32_t cap)
{
	return (uint64_t)(n + 1) * 8 > (uint64_t)cap * 7;
}

/*
 * The capacity after cap: double while small, then a quarter more (a large
 * table is never less than 70% full), filling whole huge pages; 0 past
 * 2^31 slots.
 */
uint32_t bs_idx_next_cap(uint32_t cap, size_t slot);

/*
 * The item whose key is key (hash h), or 0: eq(ctx, item, key) compares
 * an item whose tag matches.  Inline, so that each caller's eq is too.
 */
static inline uint32_t
bs_cidx_find(const struct bs_cidx *x, uint64_t h, bool (*eq)(const void *,
    uint32_t, const void *), const void *ctx, const void *key)
{
	if (x->s == NULL)
		return 0;
	uint32_t tag = (uint32_t)h, cap = x->cap;
	uint32_t i = bs_idx_home(tag, x->m, cap);
	for (uint32_t d = 0;; d++) {
		const struct bs_cslot *c = &x->s[i];
		if (c->v == 0)
			return 0;
		if (c->tag == tag && eq(ctx, c->v, key))
			return c->v;
		if (bs_probe_dist(i, bs_idx_home(c->tag, x->m, cap), cap) < d)
			return 0;
		if (++i == cap)
			i = 0;
	}
}

/* Add item v (hash h), growing if full; -1 on OOM. */
int bs_cidx_put(struct bs_cidx *x, uint64_t h, uint32_t v);
/* Remove item v (hash h); backward shift, no tombstones. */
void bs_cidx_del(struct bs_cidx *x, uint64_t h, uint32_t v);
/* Grow at once to what puts of n more items would grow the index to. */
int bs_cidx_reserve(struct bs_cidx *x, uint32_t n);
/* The capacity growth gives an index of n items; shrink to it if larger. */
void bs_cidx_trim(struct bs_cidx *x);
/* Free the slots; the index stays usable (and sequential if it was). */
void bs_cidx_free(struct bs_cidx *x);
size_t bs_cidx_mem(const struct bs_cidx *x);

/* ---- counts of IPv4 clients ---- */

/* One IPv4 client's counts, keyed by (tenant id, address). */
struct bs_ccount {
	uint32_t tag;		/* 32 bits of the key's hash */
	uint32_t key;		/* tenant id; 0 empty */
	uint32_t ref;		/* IPv4 address */
	uint32_t npend, nbind;
};

/* The count table's key of a client. */
struct bs_ckey {
	uint32_t key, ref;
};

/*
 * The counts, open addressing as struct bs_cidx (Robin Hood, homes by
 * scaling), the key inline: a client is counted without touching its
 * entries.
 */
struct bs_ctab {
	struct bs_ccount *s;
	uint32_t cap, n;
	uint64_t m;
};

/* The counts of client k (tag: its hash), or NULL when it has none. */
static inline struct bs_ccount *
bs_ctab_find(const struct bs_ctab *x, const struct bs_ckey *k, uint32_t tag)
{
	if (x->s == NULL)
		return NULL;
	uint32_t cap = x->cap, i = bs_idx_home(tag, x->m, cap);
	for (uint32_t d = 0;; d++) {
		struct bs_ccount *c = &x->s[i];
		if (c->key == 0)
			return NULL;
		if (c->tag == tag && c->key == k->key && c->ref == k->ref)
			return c;
		if (bs_probe_dist(i, bs_idx_home(c->tag, x->m, cap), cap) < d)
			return NULL;
		if (++i == cap)
			i = 0;
	}
}

/* Insert c into a table with room (bs_ctab_reserve()). */
void bs_ctab_insert(struct bs_ctab *x, struct bs_ccount c);
/* Room for one more client, so that an insert cannot fail; -1 on OOM. */
int bs_ctab_reserve(struct bs_ctab *x);
/* Remove the counts c points to. */
void bs_ctab_del(struct bs_ctab *x, struct bs_ccount *c);
void bs_ctab_free(struct bs_ctab *x);
size_t bs_ctab_mem(const struct bs_ctab *x);

#endif
