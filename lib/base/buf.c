/*
 * buf.c - growable byte buffers and the bump arena.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cats.h"

#define ARENA_DEFAULT_CAP (16u << 20)
#define ARENA_MIN_CHUNK 4096

struct cats_arena_chunk {
	struct cats_arena_chunk *next;
	size_t size;
	size_t off;
	max_align_t data[];
};

int
cats_grow(void **v, size_t *cap, size_t n, size_t size, size_t first)
{
	if (n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : first;
	if (nc <= n || nc > SIZE_MAX / size)
		return -1;
	void *p = realloc(*v, nc * size);
	if (p == NULL)
		return -1;
	*v = p;
	*cap = nc;
	return 0;
}

int
cats_buf_reserve(struct cats_buf *b, size_t n)
{
	if (n <= b->cap - b->len)
		return 0;
	if (n > SIZE_MAX / 2 - b->len)
		return -1;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->len < n)
		cap *= 2;
	uint8_t *p = realloc(b->p, cap);
	if (p == NULL)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

int
cats_buf_add(struct cats_buf *b, const void *p, size_t n)
{
	if (cats_buf_reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

void
cats_buf_consume(struct cats_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

void
cats_buf_reset(struct cats_buf *b)
{
	b->len = 0;
}

void
cats_buf_free(struct cats_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

void *
cats_arena_alloc(struct cats_arena *a, size_t n)
{
	size_t cap = a->cap ? a->cap : ARENA_DEFAULT_CAP;
	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (n == 0)
		n = sizeof(max_align_t);
	if (n > cap || a->used > cap - n)
		return NULL;
	struct cats_arena_chunk *c = a->head;
	if (c == NULL || c->size - c->off < n) {
		size_t size = n > ARENA_MIN_CHUNK ? n : ARENA_MIN_CHUNK;
		if (c != NULL && c->size * 2 > size && c->size * 2 <= cap)
			size = c->size * 2;
		c = malloc(sizeof(*c) + size);
		if (c == NULL)
			return NULL;
		c->next = a->head;
		c->size = size;
		c->off = 0;
		a->head = c;
	}
	void *p = (char *)c->data + c->off;
	c->off += n;
	a->used += n;
	return p;
}

void *
cats_arena_memdup(struct cats_arena *a, const void *p, size_t n)
{
	void *q = cats_arena_alloc(a, n ? n : 1);
	if (q != NULL && n)
		memcpy(q, p, n);
	return q;
}

char *
cats_arena_strndup(struct cats_arena *a, const char *s, size_t n)
{
	char *q = cats_arena_alloc(a, n + 1);
	if (q == NULL)
		return NULL;
	memcpy(q, s, n);
	q[n] = '\0';
	return q;
}

/* Keep the largest chunk so that steady-state decoding does not allocate. */
void
cats_arena_reset(struct cats_arena *a)
{
	struct cats_arena_chunk *keep = a->head, *c, *next;
	for (c = a->head; c != NULL; c = c->next)
		if (c->size > keep->size)
			keep = c;
	for (c = a->head; c != NULL; c = next) {
		next = c->next;
		if (c != keep)
			free(c);
	}
	if (keep != NULL) {
		keep->next = NULL;
		keep->off = 0;
	}
	a->head = keep;
	a->used = 0;
}

void
cats_arena_free(struct cats_arena *a)
{
	struct cats_arena_chunk *c, *next;
	for (c = a->head; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
	a->used = 0;
}

size_t
cats_strlcpy(char *dst, const char *src, size_t size)
{
	size_t n = strlen(src);
	if (size) {
		size_t m = n < size - 1 ? n : size - 1;
		memcpy(dst, src, m);
		dst[m] = '\0';
	}
	return n;
}

void
cats_outf(struct cats_out *o, const char *fmt, ...)
{
	if (o->err)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || cats_buf_reserve(o->b, (size_t)n + 1) < 0) {
		o->err = -1;
		return;
	}
	va_start(ap, fmt);
	vsnprintf((char *)o->b->p + o->b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	o->b->len += (size_t)n;
}
