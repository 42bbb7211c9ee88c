/*
 * htab.c - linear-probing hash table with backward-shift deletion.
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "base/htab.h"

static unsigned char hash_key[crypto_shorthash_KEYBYTES];
static bool hash_key_ready;

uint64_t
cats_hash(const void *p, size_t n)
{
	if (!hash_key_ready) {
		if (sodium_init() < 0)
			abort();
		randombytes_buf(hash_key, sizeof(hash_key));
		hash_key_ready = true;
	}
	uint64_t h;
	crypto_shorthash((unsigned char *)&h, p, n, hash_key);
	return h ? h : 1;
}

uint64_t
cats_hash_str(const char *s)
{
	return cats_hash(s, strlen(s));
}

uint64_t
cats_hash_pair(const char *a, const char *b)
{
	char buf[512];
	size_t x = strlen(a), y = strlen(b);
	if (x + y + 1 > sizeof(buf))
		return cats_hash_str(a) ^ (cats_hash_str(b) * 31);
	memcpy(buf, a, x);
	buf[x] = '\0';
	memcpy(buf + x + 1, b, y);
	return cats_hash(buf, x + y + 1);
}

uint64_t
cats_fnv1a(const char *s)
{
	uint64_t h = UINT64_C(14695981039346656037);
	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= UINT64_C(1099511628211);
	}
	return h;
}

uint64_t
cats_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= UINT64_C(0xbf58476d1ce4e5b9);
	x ^= x >> 27;
	x *= UINT64_C(0x94d049bb133111eb);
	x ^= x >> 31;
	return x;
}

uint64_t
cats_hash_join(uint64_t ha, uint64_t hb)
{
	/* Asymmetric, so that (a, b) and (b, a) differ. */
	uint64_t h = cats_mix64(ha ^ cats_mix64(hb + UINT64_C(0x9e3779b97f4a7c15)));
	return h ? h : 1;
}

static int
grow(struct cats_htab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 16;
	struct cats_hslot *s = calloc(cap, sizeof(*s));
	if (s == NULL)
		return -1;
	for (size_t i = 0; i < t->cap; i++) {
		if (t->s[i].h == 0)
			continue;
		size_t j = t->s[i].h & (cap - 1);
		while (s[j].h != 0)
			j = (j + 1) & (cap - 1);
		s[j] = t->s[i];
	}
	free(t->s);
	t->s = s;
	t->cap = cap;
	return 0;
}

int
cats_htab_put(struct cats_htab *t, uint64_t h, void *item)
{
	if ((t->n + 1) * 4 > t->cap * 3 && grow(t) < 0)
		return -1;
	size_t mask = t->cap - 1, i = h & mask;
	while (t->s[i].h != 0)
		i = (i + 1) & mask;
	t->s[i].h = h;
	t->s[i].item = item;
	t->n++;
	return 0;
}

void *
cats_htab_del(struct cats_htab *t, uint64_t h, cats_eq_fn eq, const void *key)
{
	if (t->cap == 0)
		return NULL;
	size_t mask = t->cap - 1, i = h & mask;
	for (;; i = (i + 1) & mask) {
		if (t->s[i].h == 0)
			return NULL;
		if (t->s[i].h == h && eq(t->s[i].item, key))
			break;
	}
	void *item = t->s[i].item;
	/* Shift back the entries that probed past the hole. */
	size_t hole = i;
	for (size_t j = (i + 1) & mask; t->s[j].h != 0; j = (j + 1) & mask) {
		size_t home = t->s[j].h & mask;
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			t->s[hole] = t->s[j];
			hole = j;
		}
	}
	t->s[hole].h = 0;
	t->s[hole].item = NULL;
	t->n--;
	return item;
}

void **
cats_htab_select(const struct cats_htab *t,
    bool (*keep)(const void *item, void *arg), void *arg, size_t *n)
{
	void **v = NULL;
	size_t cap = 0;
	*n = 0;
	for (size_t i = 0; i < t->cap; i++) {
		if (t->s[i].h == 0 || !keep(t->s[i].item, arg))
			continue;
		if (cats_grow((void **)&v, &cap, *n, sizeof(*v), 64) < 0)
			return v;
		v[(*n)++] = t->s[i].item;
	}
	return v;
}

void
cats_htab_free(struct cats_htab *t)
{
	free(t->s);
	memset(t, 0, sizeof(*t));
}

void *
cats_htab_str_item(struct cats_htab *t, const char *key, cats_eq_fn eq,
    size_t size, size_t off, bool create, bool *made)
{
	uint64_t h = cats_hash_str(key);
	char *x = cats_htab_get(t, h, eq, key);
	if (made != NULL)
		*made = false;
	if (x != NULL || !create)
		return x;
	size_t n = strlen(key) + 1;
	if ((x = calloc(1, size + n)) == NULL)
		return NULL;
	memcpy(x + off, key, n);
	if (cats_htab_put(t, h, x) < 0) {
		free(x);
		return NULL;
	}
	if (made != NULL)
		*made = true;
	return x;
}
