/*
 * htab.h - one open-addressing hash table for every keyed lookup in cats.
 *
 * The table stores (hash, item) pairs; items and their keys belong to the
 * caller, who passes an equality test at lookup.  Hashes come from
 * cats_hash(), SipHash-2-4 with a per-process random key, so that remote
 * input (CSCI-IDs, flow keys) cannot force collisions.  Deletion shifts
 * entries back, so no tombstones build up.
 */
#ifndef CATS_HTAB_H
#define CATS_HTAB_H

#include "base/cats.h"

struct cats_hslot {
	uint64_t h;	/* 0 marks an empty slot; cats_hash never returns 0 */
	void *item;
};

struct cats_htab {
	struct cats_hslot *s;
	size_t cap;	/* power of two */
	size_t n;
};

typedef bool (*cats_eq_fn)(const void *item, const void *key);

/* A 64-bit FNV-1a hash and the SplitMix64 finalizer: stable across runs
 * (unlike cats_hash, keyed per process), for seeded choices. */
uint64_t cats_fnv1a(const char *s);
uint64_t cats_mix64(uint64_t x);

uint64_t cats_hash(const void *p, size_t n);
uint64_t cats_hash_str(const char *s);
/* A key of two strings (a, b): the hash of "a\0b". */
uint64_t cats_hash_pair(const char *a, const char *b);
/*
 * A key of two strings from their cats_hash_str values: for callers that
 * keep those at hand (no strings read, no SipHash run); as unpredictable
 * as its inputs, which are keyed.  Not interchangeable with cats_hash_pair.
 */
uint64_t cats_hash_join(uint64_t ha, uint64_t hb);

/*
 * The item with this key, or NULL.  Inline, so that the equality test of
 * each caller is inlined too: every lookup of a hot path goes through here.
 */
static inline void *
cats_htab_get(const struct cats_htab *t, uint64_t h, cats_eq_fn eq,
    const void *key)
{
	if (t->cap == 0)
		return NULL;
	size_t mask = t->cap - 1;
	for (size_t i = h & mask;; i = (i + 1) & mask) {
		if (t->s[i].h == 0)
			return NULL;
		if (t->s[i].h == h && eq(t->s[i].item, key))
			return t->s[i].item;
	}
}
/* Insert an item whose key is not in the table; -1 on allocation failure. */
int cats_htab_put(struct cats_htab *t, uint64_t h, void *item);
/*
 * The item of the string key in t (eq compares an item with a key), or,
 * when create, a new zeroed one of size bytes and the key, which is copied
 * at offset off of it (its flexible array member), put in t; *made (when
 * not NULL) says which.  NULL: not there and not create, or out of memory.
 */
void *cats_htab_str_item(struct cats_htab *t, const char *key, cats_eq_fn eq,
    size_t size, size_t off, bool create, bool *made);
/* Remove and return the item with this key, or NULL. */
void *cats_htab_del(struct cats_htab *t, uint64_t h, cats_eq_fn eq,
    const void *key);
void cats_htab_free(struct cats_htab *t);

/*
 * The items for which keep(item, arg) is true, in a malloc'd array (*n of
 * them; NULL when none, or when memory ran out: then *n counts the ones
 * found so far).  The table may be changed after: the array is a copy.
 */
void **cats_htab_select(const struct cats_htab *t,
    bool (*keep)(const void *item, void *arg), void *arg, size_t *n);

/* Iterate: for (size_t i = 0; i < t.cap; i++) if (t.s[i].h) use(t.s[i].item) */

#endif
