/*
 * cbor_scan.h - the hardened CBOR scanner every decoder in cats stands on.
 *
 * The scanner checks one CBOR data item (RFC 8949) for well-formedness and
 * turns it into a flat array of tokens.  It never allocates according to a
 * declared length: a declared string length must fit in the bytes that remain
 * (or, on a stream, in the record cap), a declared array or map count must be
 * coverable by the remaining bytes, nesting is capped, the token count is
 * capped, and text strings must be valid UTF-8.  Tokens point into the
 * caller's buffer; only indefinite-length strings are copied (into an arena).
 */
#ifndef CATS_CBOR_SCAN_H
#define CATS_CBOR_SCAN_H

#include "base/cats.h"

enum cats_tk {
	CATS_TK_UINT,
	CATS_TK_NINT,	/* value is -1 - v.u */
	CATS_TK_BYTES,
	CATS_TK_TEXT,
	CATS_TK_ARRAY,
	CATS_TK_MAP,
	CATS_TK_TAG,	/* one child item follows */
	CATS_TK_FALSE,
	CATS_TK_TRUE,
	CATS_TK_NULL,
	CATS_TK_UNDEF,
	CATS_TK_SIMPLE,	/* other simple value, v.u */
	CATS_TK_FLOAT,
};

struct cats_tok {
	uint8_t kind;
	uint8_t flags;	/* CATS_TKF_* */
	uint32_t n;	/* ARRAY: items, MAP: pairs, BYTES/TEXT: length */
	uint32_t next;	/* index of the first token after this item */
	union {
		uint64_t u;
		double f;
		const uint8_t *p;
	} v;
};

/* Token flags. */
#define CATS_TKF_NUL 1	/* TEXT: the string contains a NUL character */

/* Caps applied while scanning; see cats-records(5). */
struct cats_limits {
	size_t max_record;	/* bytes in one item (default 65536) */
	unsigned max_depth;	/* nesting of arrays, maps and tags (16) */
	size_t max_tokens;	/* data items in one record (8192) */
	size_t max_string;	/* bytes in one text or byte string (16384) */
	size_t max_count;	/* elements of one array or pairs of one map (4096) */
};

extern const struct cats_limits cats_limits_default;

/* Where and why something was refused. */
struct cats_err {
	size_t offset;		/* byte offset in the item, when known */
	char field[96];		/* field path ("entries[2].gas"), or "" */
	char reason[160];
};

/* Set an error; returns -1 so that callers can `return cats_err_set(...)`. */
int cats_err_set(struct cats_err *e, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

struct cats_toks {
	struct cats_tok *t;
	size_t n;
	size_t cap;	/* allocated once, never beyond limits.max_tokens */
	/*
	 * Keys "type" of a top-level map, noted while scanning so that a
	 * record's type is found without a walk: how many, and the token of
	 * the first one's value.
	 */
	size_t ntype, type_val;
};

enum {
	CATS_SCAN_OK = 0,
	CATS_SCAN_MORE = 1,	/* stream mode: item incomplete, need more */
	CATS_SCAN_BAD = -1,	/* not well-formed, or over a cap */
};

/*
 * Scan the item at the start of buf.  With final set, buf holds all the
 * input there is, so a short item is truncated (BAD); without it a short item
 * gives MORE and *need says how many bytes in all are needed at least.  On OK,
 * *used is the item's size and toks holds its tokens.  Indefinite strings are
 * joined into arena, which may be NULL if the caller refuses them.
 */
int cats_scan(const uint8_t *buf, size_t len, bool final,
    const struct cats_limits *lim, struct cats_toks *toks,
    struct cats_arena *arena, size_t *used, size_t *need,
    struct cats_err *err);

/*
 * Frame the item at the start of buf without scanning it into tokens, for
 * a relay that passes items on unread (cats-cps between its stages): the
 * heads are walked under cats_scan's caps (record size, nesting, counts,
 * string lengths, data items), so *used is the size cats_scan gives for
 * every item it accepts; text is not checked for UTF-8 and no value is
 * read (the reader the item goes to does that, once).  *type and *type_len
 * (either may be NULL) give the text of a top-level map's "type" key when
 * there is exactly one and its value is a definite text string, else NULL
 * and 0.  Returns CATS_SCAN_OK, CATS_SCAN_MORE (*need as cats_scan gives
 * it) or CATS_SCAN_BAD with err set.
 */
int cats_frame(const uint8_t *buf, size_t len, bool final,
    const struct cats_limits *lim, const uint8_t **type, size_t *type_len,
    size_t *used, size_t *need, struct cats_err *err);

void cats_toks_free(struct cats_toks *toks);

/* True if s[0..n) is valid UTF-8 (no overlongs, surrogates or > U+10FFFF). */
bool cats_utf8_valid(const uint8_t *s, size_t n);

#endif
