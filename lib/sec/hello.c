/*
 * hello.c - the replay guard of forwarders' signed hellos (hello.h).
 */
#include <stdlib.h>
#include <string.h>

#include "sec/hello.h"

struct hello_seen {
	uint64_t ts;
	char fwd[];
};

static bool
seen_eq(const void *item, const void *key)
{
	return strcmp(((const struct hello_seen *)item)->fwd, key) == 0;
}

void
cats_hello_guard_init(struct cats_hello_guard *g, uint64_t started)
{
	memset(g, 0, sizeof(*g));
	g->started = started;
}

int
cats_hello_check(struct cats_hello_guard *g, const char *fwd, uint64_t ts,
    uint64_t *floor, bool *last)
{
	uint64_t h = cats_hash_str(fwd);
	struct hello_seen *e = cats_htab_get(&g->seen, h, seen_eq, fwd);
	*floor = e != NULL ? e->ts : g->started;
	*last = e != NULL;
	if ((e != NULL && ts <= *floor) || (e == NULL && ts < *floor))
		return CATS_HELLO_REPLAY;
	if (e == NULL) {
		size_t n = strlen(fwd) + 1;
		e = malloc(sizeof(*e) + n);
		if (e == NULL)
			return CATS_HELLO_NOMEM;
		memcpy(e->fwd, fwd, n);
		if (cats_htab_put(&g->seen, h, e) < 0) {
			free(e);
			return CATS_HELLO_NOMEM;
		}
	}
	e->ts = ts;
	return CATS_HELLO_FRESH;
}

void
cats_hello_guard_free(struct cats_hello_guard *g)
{
	for (size_t i = 0; i < g->seen.cap; i++)
		if (g->seen.s[i].h)
			free(g->seen.s[i].item);
	cats_htab_free(&g->seen);
}
