/*
 * cats.h - common definitions of libcats: version, exit codes, small buffers
 * and the arena every decoder allocates from.
 */
#ifndef CATS_H
#define CATS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CATS_VERSION "0.1.0"

/*
 * Exit codes shared by every tool (documented in cats(7)).  They follow
 * sysexits(3) where one fits.
 */
enum {
	CATS_EXIT_OK = 0,	/* success */
	CATS_EXIT_FAIL = 1,	/* runtime failure (I/O, resources, peer) */
	CATS_EXIT_USAGE = 2,	/* bad command line */
	CATS_EXIT_DATAERR = 65,	/* input had invalid records */
	CATS_EXIT_NOINPUT = 66,	/* an input file could not be opened */
	CATS_EXIT_IOERR = 74,	/* output could not be written */
	CATS_EXIT_NOPERM = 77,	/* a key or credential was refused */
	CATS_EXIT_CONFIG = 78,	/* a configuration file was refused */
};

#define CATS_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Make room in the array *v of *cap elements of size bytes for element
 * n: when n reaches *cap the array doubles (first: the first capacity).
 * Returns 0, or -1 with *v and *cap as they were.  The one growth step
 * for arrays (cats_buf for bytes). */
int cats_grow(void **v, size_t *cap, size_t n, size_t size, size_t first);

/* A growable byte buffer. */
struct cats_buf {
	uint8_t *p;
	size_t len;
	size_t cap;
};

/* Make room for n more bytes; returns 0 or -1 on allocation failure. */
int cats_buf_reserve(struct cats_buf *b, size_t n);
/* Append n bytes. */
int cats_buf_add(struct cats_buf *b, const void *p, size_t n);
/* Drop the first n bytes, keeping the rest. */
void cats_buf_consume(struct cats_buf *b, size_t n);
void cats_buf_reset(struct cats_buf *b);
void cats_buf_free(struct cats_buf *b);
/*
 * Text appended to a buffer by a writer of many lines: cats_outf() is
 * printf into b; the first failure (out of memory) is kept in err (-1)
 * and what follows is not written.
 */
struct cats_out {
	struct cats_buf *b;
	int err;
};
void cats_outf(struct cats_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * A bump allocator.  Decoded records point into an arena; resetting it
 * releases every record decoded from it at once.  An arena has a hard cap so
 * that no input can make it grow without bound.
 */
struct cats_arena_chunk;
struct cats_arena {
	struct cats_arena_chunk *head;
	size_t used;	/* bytes handed out since the last reset */
	size_t cap;	/* 0 = default cap (16 MiB) */
};

void *cats_arena_alloc(struct cats_arena *a, size_t n);
void *cats_arena_memdup(struct cats_arena *a, const void *p, size_t n);
char *cats_arena_strndup(struct cats_arena *a, const char *s, size_t n);
void cats_arena_reset(struct cats_arena *a);
void cats_arena_free(struct cats_arena *a);

/* Copy with truncation, always NUL-terminated; returns strlen(src). */
size_t cats_strlcpy(char *dst, const char *src, size_t size);

#endif
