/*
 * cbor_scan.c - hardened, allocation-bounded CBOR item scanner.
 *
 * libcbor 0.8's cbor_load() allocates for a declared length before reading
 * it, and its streaming decoder refuses well-formed tags 6..20 (COSE uses 17
 * and 18) and simple values; so items are checked here, with every cap
 * applied before anything is reserved.  Encoding uses libcbor (see rec.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec/cbor_scan.h"

const struct cats_limits cats_limits_default = {
	.max_record = 65536,
	.max_depth = 16,
	.max_tokens = 8192,
	.max_string = 16384,
	.max_count = 4096,
};

int
cats_err_set(struct cats_err *e, const char *field, const char *fmt, ...)
{
	if (e == NULL)
		return -1;
	cats_strlcpy(e->field, field ? field : "", sizeof(e->field));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->reason, sizeof(e->reason), fmt, ap);
	va_end(ap);
	return -1;
}

bool
cats_utf8_valid(const uint8_t *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		uint8_t c = s[i];
		if (c < 0x80) {
			/* ASCII runs, eight bytes at a time. */
			uint64_t w;
			while (n - i >= 8) {
				memcpy(&w, s + i, 8);
				if (w & UINT64_C(0x8080808080808080))
					break;
				i += 8;
			}
			if (i < n && s[i] < 0x80)
				i++;
			continue;
		}
		size_t k;
		uint32_t cp, min;
		if ((c & 0xE0) == 0xC0) {
			k = 1; cp = c & 0x1F; min = 0x80;
		} else if ((c & 0xF0) == 0xE0) {
			k = 2; cp = c & 0x0F; min = 0x800;
		} else if ((c & 0xF8) == 0xF0) {
			k = 3; cp = c & 0x07; min = 0x10000;
		} else {
			return false;
		}
		if (n - i <= k)
			return false;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + j] & 0x3F);
		}
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += k + 1;
	}
	return true;
}

void
cats_toks_free(struct cats_toks *toks)
{
	free(toks->t);
	toks->t = NULL;
	toks->n = toks->cap = 0;
}

/* One open container on the scanner's stack. */
struct frame {
	size_t tok;		/* index of the container's token */
	uint64_t left;		/* items still expected (definite) */
	uint32_t items;		/* items seen (indefinite) */
	bool indef;
};

struct scan {
	const uint8_t *buf;
	size_t len;
	bool final;
	const struct cats_limits *lim;
	struct cats_toks *toks;
	struct cats_arena *arena;
	size_t pos;
	size_t need;
	struct cats_err *err;
	size_t tok_room;	/* tokens the array holds within the cap */
};

/* The bytes a stream may still bring for this item. */
static size_t
room(const struct scan *s)
{
	if (s->final)
		return s->len - s->pos;
	return s->lim->max_record > s->pos ? s->lim->max_record - s->pos : 0;
}

/*
 * Make sure n bytes are available at pos.  Returns 1 if they are, 0 if the
 * caller must wait (stream), -1 if the item is truncated or too large.
 */
static int
avail(struct scan *s, size_t n, const char *what)
{
	if (n <= s->len - s->pos)
		return 1;
	if (s->final) {
		cats_err_set(s->err, NULL, "truncated %s: %zu bytes needed, %zu left",
		    what, n, s->len - s->pos);
		return -1;
	}
	if (n > room(s)) {
		cats_err_set(s->err, NULL, "item exceeds the %zu-byte record limit",
		    s->lim->max_record);
		return -1;
	}
	s->need = s->pos + n;
	return 0;
}

/* The token array is full: grow it, or refuse at the cap. */
static struct cats_tok *
grow_toks(struct scan *s)
{
	struct cats_toks *t = s->toks;
	if (t->n >= s->lim->max_tokens) {
		cats_err_set(s->err, NULL, "more than %zu data items in one record",
		    s->lim->max_tokens);
		return NULL;
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		if (cap > s->lim->max_tokens)
			cap = s->lim->max_tokens;
		struct cats_tok *p = realloc(t->t, cap * sizeof(*p));
		if (p == NULL) {
			cats_err_set(s->err, NULL, "out of memory");
			return NULL;
		}
		t->t = p;
		t->cap = cap;
	}
	s->tok_room = t->cap < s->lim->max_tokens ? t->cap : s->lim->max_tokens;
	return &t->t[t->n++];
}

static inline struct cats_tok *
new_tok(struct scan *s, uint8_t kind)
{
	struct cats_toks *t = s->toks;
	struct cats_tok *k;
	if (t->n < s->tok_room)
		k = &t->t[t->n++];
	else if ((k = grow_toks(s)) == NULL)
		return NULL;
	k->kind = kind;
	k->flags = 0;
	k->n = 0;
	k->next = 0;
	k->v.u = 0;
	return k;
}

#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/*
 * The high bits of the bytes of p[0..n) (nonzero: not ASCII) and whether a
 * zero byte occurs, by word loads that may overlap but never leave p[0..n).
 */
static inline uint64_t
text_bits(const uint8_t *p, size_t n, bool *nul)
{
	uint64_t h = 0, z = 0, w;
	if (n >= 8) {
		size_t i = 0;
		for (; n - i >= 8; i += 8) {
			memcpy(&w, p + i, 8);
			h |= w;
			z |= (w - ONES) & ~w;
		}
		if (i < n) {
			memcpy(&w, p + n - 8, 8);
			h |= w;
			z |= (w - ONES) & ~w;
		}
	} else if (n >= 4) {
		uint32_t a, b;
		memcpy(&a, p, 4);
		memcpy(&b, p + n - 4, 4);
		w = (uint64_t)a << 32 | b;
		h = w;
		z = (w - ONES) & ~w;
	} else if (n > 0) {
		/* The bytes not loaded are 0x01: ASCII, not zero. */
		w = (uint64_t)p[0] | (uint64_t)p[n >> 1] << 8 |
		    (uint64_t)p[n - 1] << 16 | UINT64_C(0x0101010101000000);
		h = w;
		z = (w - ONES) & ~w;
	}
	*nul = (z & HIGHS) != 0;
	return h & HIGHS;
}

/* Check a text string: valid UTF-8 (false if not); *nul if it has a NUL. */
static inline bool
text_ok(const uint8_t *p, size_t n, bool *nul)
{
	if (text_bits(p, n, nul) == 0)
		return true;
	if (!cats_utf8_valid(p, n))
		return false;
	*nul = memchr(p, 0, n) != NULL;
	return true;
}

static double
half_to_double(uint16_t h)
{
	int exp = (h >> 10) & 0x1F;
	int mant = h & 0x3FF;
	double v;
	if (exp == 0)
		v = mant * (1.0 / (1 << 24));
	else if (exp != 31)
		v = (mant + 1024) * ((exp >= 25) ? (double)(1u << (exp - 25))
		    : 1.0 / (double)(1u << (25 - exp)));
	else
		v = mant == 0 ? __builtin_inf() : __builtin_nan("");
	return (h & 0x8000) ? -v : v;
}

/*
 * Read the argument of a head whose initial byte is at pos.  Returns 1 with
 * *arg set and pos advanced, 0 to wait, -1 on error.
 */
static int
read_arg(struct scan *s, uint8_t ai, uint64_t *arg)
{
	size_t k;
	switch (ai) {
	case 24: k = 1; break;
	case 25: k = 2; break;
	case 26: k = 4; break;
	case 27: k = 8; break;
	default:
		*arg = ai;
		s->pos += 1;
		return 1;
	}
	int r = avail(s, 1 + k, "head");
	if (r <= 0)
		return r;
	uint64_t v = 0;
	for (size_t i = 1; i <= k; i++)
		v = (v << 8) | s->buf[s->pos + i];
	*arg = v;
	s->pos += 1 + k;
	return 1;
}

/* read_arg() for a head whose bytes are all there: no call, no checks. */
static inline int
head_arg(struct scan *s, uint8_t ai, uint64_t *arg)
{
	if (ai < 24) {
		*arg = ai;
		s->pos += 1;
		return 1;
	}
	size_t k = (size_t)1 << (ai - 24);
	if (1 + k > s->len - s->pos)
		return read_arg(s, ai, arg);
	const uint8_t *p = s->buf + s->pos + 1;
	uint64_t v = 0;
	for (size_t i = 0; i < k; i++)
		v = (v << 8) | p[i];
	*arg = v;
	s->pos += 1 + k;
	return 1;
}

/* Scan a definite string of length n at pos (head already consumed). */
static int
scan_string(struct scan *s, uint8_t major, uint64_t n, struct cats_tok *k)
{
	if (n > s->lim->max_string)
		return cats_err_set(s->err, NULL,
		    "string of %llu bytes exceeds the %zu-byte limit",
		    (unsigned long long)n, s->lim->max_string);
	if (n > room(s)) {
		if (s->final)
			return cats_err_set(s->err, NULL,
			    "declared length %llu exceeds the %zu bytes left",
			    (unsigned long long)n, s->len - s->pos);
		return cats_err_set(s->err, NULL,
		    "item exceeds the %zu-byte record limit", s->lim->max_record);
	}
	int r = avail(s, (size_t)n, "string");
	if (r <= 0)
		return r;
	const uint8_t *p = s->buf + s->pos;
	bool nul = false;
	if (major == 3 && !text_ok(p, (size_t)n, &nul))
		return cats_err_set(s->err, NULL, "text string is not valid UTF-8");
	if (k != NULL) {
		k->n = (uint32_t)n;
		k->v.p = p;
		if (nul)
			k->flags |= CATS_TKF_NUL;
	}
	s->pos += (size_t)n;
	return 1;
}

/* Join the chunks of an indefinite-length string into the arena. */
static int
scan_indef_string(struct scan *s, uint8_t major, struct cats_tok *k)
{
	size_t start = s->pos, total = 0;
	/* First pass: check the chunks and measure. */
	for (;;) {
		int r = avail(s, 1, "string chunk");
		if (r <= 0)
			return r;
		uint8_t ib = s->buf[s->pos];
		if (ib == 0xFF) {
			s->pos++;
			break;
		}
		if ((ib >> 5) != major || (ib & 31) == 31 || (ib & 31) > 27)
			return cats_err_set(s->err, NULL,
			    "bad chunk in an indefinite-length string");
		uint64_t n;
		r = read_arg(s, ib & 31, &n);
		if (r <= 0)
			return r;
		if (n > s->lim->max_string - total)
			return cats_err_set(s->err, NULL,
			    "string exceeds the %zu-byte limit", s->lim->max_string);
		r = scan_string(s, major, n, NULL);
		if (r <= 0)
			return r;
		total += (size_t)n;
	}
	if (s->arena == NULL)
		return cats_err_set(s->err, NULL,
		    "indefinite-length strings are not accepted here");
	uint8_t *dst = cats_arena_alloc(s->arena, total ? total : 1);
	if (dst == NULL)
		return cats_err_set(s->err, NULL, "out of memory");
	/* Second pass: copy. Chunks were validated above. */
	size_t pos = start, off = 0;
	while (s->buf[pos] != 0xFF) {
		uint8_t ai = s->buf[pos] & 31;
		size_t hk = ai < 24 ? 0 : (size_t)1 << (ai - 24);
		uint64_t n = ai < 24 ? ai : 0;
		for (size_t i = 1; i <= hk; i++)
			n = (n << 8) | s->buf[pos + i];
		pos += 1 + hk;
		memcpy(dst + off, s->buf + pos, (size_t)n);
		off += (size_t)n;
		pos += (size_t)n;
	}
	if (major == 3 && !cats_utf8_valid(dst, total))
		return cats_err_set(s->err, NULL, "text string is not valid UTF-8");
	k->n = (uint32_t)total;
	k->v.p = dst;
	if (major == 3 && memchr(dst, 0, total) != NULL)
		k->flags |= CATS_TKF_NUL;
	return 1;
}

/*
 * The fast path: definite-length items whose heads and string bytes are
 * all there, within every cap, one after the other, in few registers.
 * Returns true when the top-level item is complete (s->pos past it).  It
 * stops at anything else, and at every error, leaving s->pos at the start
 * of that item for the general way, which reads it again.
 */
/*
 * Note token i, just scanned, if it is a key "type" of a top-level map
 * (depth 1, top its frame; the item not counted in it yet).
 */
static inline void
note_key(struct cats_toks *toks, size_t i, const struct frame *top)
{
	const struct cats_tok *k = &toks->t[i];
	if (k->kind != CATS_TK_TEXT || k->n != 4 ||
	    memcmp(k->v.p, "type", 4) != 0 || toks->t[0].kind != CATS_TK_MAP)
		return;
	if (top->indef ? (top->items & 1) : (top->left & 1))
		return;		/* a value, not a key */
	if (toks->ntype++ == 0)
		toks->type_val = i + 1;
}

static bool __attribute__((noinline))
scan_fast(struct scan *s, struct frame *stack, unsigned *depthp,
    unsigned max_depth)
{
	const uint8_t *const buf = s->buf;
	const size_t len = s->len;
	const bool final = s->final;
	const size_t max_record = s->lim->max_record,
	    max_string = s->lim->max_string, max_count = s->lim->max_count;
	struct cats_toks *toks = s->toks;
	struct cats_tok *const tv = toks->t;
	const size_t troom = s->tok_room;
	size_t pos = s->pos, ntok = toks->n;
	unsigned depth = *depthp;
	bool done = false;
	while (pos < len && ntok < troom) {
		const uint8_t *p = buf + pos;
		unsigned ib = p[0], major = ib >> 5, ai = ib & 31;
		uint64_t arg;
		size_t hl;
		if (ai < 24) {
			arg = ai;
			hl = 1;
		} else if (ai <= 27 && (hl = 1 + ((size_t)1 << (ai - 24))) <=
		    len - pos) {
			arg = 0;
			for (size_t x = 1; x < hl; x++)
				arg = arg << 8 | p[x];
		} else {
			break;
		}
		struct cats_tok *k = &tv[ntok];
		if (major == 3 || major == 2) {
			size_t after = pos + hl;
			size_t rm = final ? len - after : max_record > after ?
			    max_record - after : 0;
			if (arg > max_string || arg > len - after || arg > rm)
				break;
			bool nul = false;
			if (major == 3 && !text_ok(p + hl, (size_t)arg, &nul))
				break;
			k->kind = major == 2 ? CATS_TK_BYTES : CATS_TK_TEXT;
			k->flags = nul ? CATS_TKF_NUL : 0;
			k->n = (uint32_t)arg;
			k->v.p = p + hl;
			hl += (size_t)arg;
			if (depth == 1 && arg == 4)
				note_key(toks, ntok, &stack[0]);
		} else if (major <= 1) {
			k->kind = major ? CATS_TK_NINT : CATS_TK_UINT;
			k->flags = 0;
			k->n = 0;
			k->v.u = arg;
		} else if (major == 7) {
			if (ai < 20 || ai > 23)
				break;
			k->kind = ai == 20 ? CATS_TK_FALSE : ai == 21 ?
			    CATS_TK_TRUE : ai == 22 ? CATS_TK_NULL : CATS_TK_UNDEF;
			k->flags = 0;
			k->n = 0;
			k->v.u = ai;
		} else {
			/* An array, a map or a tag. */
			size_t after = pos + hl;
			size_t rm = final ? len - after : max_record > after ?
			    max_record - after : 0;
			uint64_t items = major == 5 ? arg * 2 : major == 4 ? arg
			    : 1;
			if (depth >= max_depth || (major != 6 &&
			    (arg > max_count || items > rm ||
			    (major == 5 && arg > UINT64_MAX / 2))))
				break;
			k->kind = major == 4 ? CATS_TK_ARRAY : major == 5 ?
			    CATS_TK_MAP : CATS_TK_TAG;
			k->flags = 0;
			k->n = major == 6 ? 1 : (uint32_t)arg;
			k->v.u = arg;
			if (items != 0) {
				k->next = 0;
				stack[depth].tok = ntok;
				stack[depth].indef = false;
				stack[depth].items = 0;
				stack[depth].left = items;
				depth++;
				ntok++;
				pos = after;
				continue;
			}
		}
		ntok++;
		pos += hl;
		k->next = (uint32_t)ntok;
		/* Count the item in its parents, closing them. */
		while (depth > 0) {
			struct frame *f = &stack[depth - 1];
			if (f->indef) {
				f->items++;
				break;
			}
			if (--f->left > 0)
				break;
			tv[f->tok].next = (uint32_t)ntok;
			depth--;
		}
		if (depth == 0) {
			done = true;
			break;
		}
	}
	s->pos = pos;
	toks->n = ntok;
	*depthp = depth;
	return done;
}

int
cats_scan(const uint8_t *buf, size_t len, bool final,
    const struct cats_limits *lim, struct cats_toks *toks,
    struct cats_arena *arena, size_t *used, size_t *need,
    struct cats_err *err)
{
	struct scan s = {
		.buf = buf, .len = len, .final = final,
		.lim = lim ? lim : &cats_limits_default,
		.toks = toks, .arena = arena, .err = err,
	};
	struct frame stack[64];
	unsigned depth = 0, max_depth = s.lim->max_depth;
	if (max_depth > CATS_ARRAY_LEN(stack))
		max_depth = CATS_ARRAY_LEN(stack);
	toks->n = 0;
	toks->ntype = toks->type_val = 0;
	s.tok_room = toks->cap < s.lim->max_tokens ? toks->cap :
	    s.lim->max_tokens;
	if (need)
		*need = 0;

	for (;;) {
		size_t here = s.pos;
		int r;
		/* The fast path first; what it leaves goes the general way. */
		if (scan_fast(&s, stack, &depth, max_depth)) {
			*used = s.pos;
			return CATS_SCAN_OK;
		}
		here = s.pos;
		if (s.pos >= s.len) {
			r = avail(&s, 1, "item");
			goto stop;
		}
		uint8_t ib = buf[s.pos];
		uint8_t major = ib >> 5, ai = ib & 31;
		bool complete = true;	/* item finished at this step */

		if (ib == 0xFF) {
			if (depth == 0 || !stack[depth - 1].indef) {
				cats_err_set(err, NULL, "unexpected break (0xff)");
				r = -1;
				goto stop;
			}
			struct frame *f = &stack[depth - 1];
			struct cats_tok *c = &toks->t[f->tok];
			if (c->kind == CATS_TK_MAP && (f->items & 1)) {
				cats_err_set(err, NULL,
				    "indefinite map ends after a key");
				r = -1;
				goto stop;
			}
			c->n = c->kind == CATS_TK_MAP ? f->items / 2 : f->items;
			s.pos++;
			c->next = (uint32_t)toks->n;
			depth--;
			goto finished;
		}
		if (ai >= 28 && ai <= 30) {
			cats_err_set(err, NULL,
			    "reserved additional information %u at offset %zu",
			    ai, here);
			r = -1;
			goto stop;
		}
		if (ai == 31 && (major == 0 || major == 1 || major == 6 ||
		    major == 7)) {
			cats_err_set(err, NULL,
			    "indefinite length not allowed for major type %u",
			    major);
			r = -1;
			goto stop;
		}

		struct cats_tok *k;
		uint64_t arg = 0;
		switch (major) {
		case 0:
		case 1:
			if ((r = head_arg(&s, ai, &arg)) <= 0)
				goto stop;
			if ((k = new_tok(&s, major ? CATS_TK_NINT
			    : CATS_TK_UINT)) == NULL) {
				r = -1;
				goto stop;
			}
			k->v.u = arg;
			break;
		case 2:
		case 3:
			if ((k = new_tok(&s, major == 2 ? CATS_TK_BYTES
			    : CATS_TK_TEXT)) == NULL) {
				r = -1;
				goto stop;
			}
			if (ai == 31) {
				s.pos++;
				r = scan_indef_string(&s, major, k);
				if (r <= 0)
					goto stop;
				break;
			}
			if ((r = head_arg(&s, ai, &arg)) <= 0)
				goto stop;
			if (arg > s.lim->max_string || arg > s.len - s.pos ||
			    (!s.final && arg > room(&s))) {
				/* Over a cap, or not all there: the long way. */
				if ((r = scan_string(&s, major, arg, k)) <= 0)
					goto stop;
				break;
			}
			k->n = (uint32_t)arg;
			k->v.p = buf + s.pos;
			if (major == 3) {
				bool nul;
				if (!text_ok(k->v.p, (size_t)arg, &nul)) {
					cats_err_set(err, NULL,
					    "text string is not valid UTF-8");
					r = -1;
					goto stop;
				}
				if (nul)
					k->flags = CATS_TKF_NUL;
			}
			s.pos += (size_t)arg;
			break;
		case 4:
		case 5:
		case 6: {
			if (depth >= max_depth) {
				cats_err_set(err, NULL,
				    "nesting deeper than %u", max_depth);
				r = -1;
				goto stop;
			}
			bool indef = ai == 31;
			if (indef)
				s.pos++;
			else if ((r = head_arg(&s, ai, &arg)) <= 0)
				goto stop;
			uint8_t kind = major == 4 ? CATS_TK_ARRAY
			    : major == 5 ? CATS_TK_MAP : CATS_TK_TAG;
			if (!indef && major != 6) {
				uint64_t items = major == 5 ? arg * 2 : arg;
				if (arg > s.lim->max_count ||
				    (major == 5 && arg > UINT64_MAX / 2)) {
					cats_err_set(err, NULL,
					    "%s of %llu elements exceeds the "
					    "limit of %zu",
					    major == 4 ? "array" : "map",
					    (unsigned long long)arg,
					    s.lim->max_count);
					r = -1;
					goto stop;
				}
				/* Every element takes at least one byte. */
				if (items > room(&s)) {
					cats_err_set(err, NULL,
					    "declared %s of %llu elements cannot "
					    "fit in the %zu bytes left",
					    major == 4 ? "array" : "map",
					    (unsigned long long)arg, room(&s));
					r = -1;
					goto stop;
				}
			}
			if ((k = new_tok(&s, kind)) == NULL) {
				r = -1;
				goto stop;
			}
			k->v.u = arg;
			k->n = major == 6 ? 1 : (uint32_t)arg;
			stack[depth].tok = toks->n - 1;
			stack[depth].indef = indef;
			stack[depth].items = 0;
			stack[depth].left = major == 6 ? 1
			    : major == 5 ? arg * 2 : arg;
			depth++;
			if (!indef && stack[depth - 1].left == 0) {
				k->next = (uint32_t)toks->n;
				depth--;
			} else {
				complete = false;
			}
			break;
		}
		case 7:
			if (ai < 24) {
				uint8_t kind = ai == 20 ? CATS_TK_FALSE
				    : ai == 21 ? CATS_TK_TRUE
				    : ai == 22 ? CATS_TK_NULL
				    : ai == 23 ? CATS_TK_UNDEF : CATS_TK_SIMPLE;
				s.pos++;
				if ((k = new_tok(&s, kind)) == NULL) {
					r = -1;
					goto stop;
				}
				k->v.u = ai;
				break;
			}
			if ((r = head_arg(&s, ai, &arg)) <= 0)
				goto stop;
			if (ai == 24) {
				if (arg < 32) {
					cats_err_set(err, NULL,
					    "two-byte simple value %llu below 32",
					    (unsigned long long)arg);
					r = -1;
					goto stop;
				}
				if ((k = new_tok(&s, CATS_TK_SIMPLE)) == NULL) {
					r = -1;
					goto stop;
				}
				k->v.u = arg;
				break;
			}
			if ((k = new_tok(&s, CATS_TK_FLOAT)) == NULL) {
				r = -1;
				goto stop;
			}
			if (ai == 25) {
				k->v.f = half_to_double((uint16_t)arg);
			} else if (ai == 26) {
				uint32_t w = (uint32_t)arg;
				float f;
				memcpy(&f, &w, sizeof(f));
				k->v.f = f;
			} else {
				double d;
				memcpy(&d, &arg, sizeof(d));
				k->v.f = d;
			}
			break;
		}
		if (k->kind == CATS_TK_TEXT && depth == 1)
			note_key(toks, toks->n - 1, &stack[0]);
		if (complete)
			k->next = (uint32_t)toks->n;
		if (!complete)
			continue;
finished:
		/* An item ended: count it in its parent, closing as needed. */
		while (depth > 0) {
			struct frame *f = &stack[depth - 1];
			if (f->indef) {
				f->items++;
				break;
			}
			if (--f->left > 0)
				break;
			toks->t[f->tok].next = (uint32_t)toks->n;
			depth--;
		}
		if (depth == 0) {
			*used = s.pos;
			return CATS_SCAN_OK;
		}
		continue;
stop:
		if (r == 0) {
			if (need)
				*need = s.need;
			return CATS_SCAN_MORE;
		}
		if (err)
			err->offset = here;
		return CATS_SCAN_BAD;
	}
}

/* One open container of cats_frame(): an array, a map, a tag, or the
 * chunks of an indefinite-length string (major 2 or 3 in str). */
struct fframe {
	uint64_t left;		/* items still expected (definite) */
	uint32_t items;		/* items seen (indefinite) */
	uint8_t str;		/* indefinite string: its major type; else 0 */
	bool indef, map;
	size_t total;		/* indefinite string: its bytes so far */
};

int
cats_frame(const uint8_t *buf, size_t len, bool final,
    const struct cats_limits *lim, const uint8_t **type, size_t *type_len,
    size_t *used, size_t *need, struct cats_err *err)
{
	if (lim == NULL)
		lim = &cats_limits_default;
	/* Containers up to max_depth (at most 64), and a string's chunks. */
	struct fframe stack[65];
	unsigned depth = 0, max_depth = lim->max_depth;
	if (max_depth > CATS_ARRAY_LEN(stack) - 1)
		max_depth = CATS_ARRAY_LEN(stack) - 1;
	size_t pos = 0, ntok = 0, ntype = 0, tlen = 0;
	const uint8_t *tval = NULL;
	bool type_next = false;	/* the item at pos is a "type" key's value */
	size_t want = 0;	/* bytes needed at pos, when short */
	if (need)
		*need = 0;
	for (;;) {
		if (pos >= len) {
			want = 1;
			goto short_;
		}
		size_t here = pos;
		unsigned ib = buf[pos], major = ib >> 5, ai = ib & 31;
		struct fframe *top = depth ? &stack[depth - 1] : NULL;
		bool value_here = type_next;
		type_next = false;
		if (ib == 0xFF) {
			if (top == NULL || !top->indef) {
				cats_err_set(err, NULL, "unexpected break (0xff)");
				goto bad;
			}
			if (top->map && (top->items & 1)) {
				cats_err_set(err, NULL,
				    "indefinite map ends after a key");
				goto bad;
			}
			pos++;
			depth--;
			goto finished;
		}
		if (top != NULL && top->str != 0 && (major != top->str ||
		    ai == 31 || ai > 27)) {
			cats_err_set(err, NULL,
			    "bad chunk in an indefinite-length string");
			goto bad;
		}
		if (ai >= 28 && ai <= 30) {
			cats_err_set(err, NULL,
			    "reserved additional information %u at offset %zu",
			    ai, here);
			goto bad;
		}
		if (ai == 31 && (major <= 1 || major >= 6)) {
			cats_err_set(err, NULL,
			    "indefinite length not allowed for major type %u",
			    major);
			goto bad;
		}
		size_t hl = ai < 24 || ai == 31 ? 1 : 1 + ((size_t)1 << (ai - 24));
		if (hl > len - pos) {
			want = hl;
			goto short_;
		}
		uint64_t arg = ai < 24 ? ai : 0;
		for (size_t x = 1; x < hl; x++)
			arg = arg << 8 | buf[pos + x];
		/* Chunks are not data items of their own. */
		if ((top == NULL || top->str == 0) && ++ntok > lim->max_tokens) {
			cats_err_set(err, NULL, "more than %zu data items in one "
			    "record", lim->max_tokens);
			goto bad;
		}
		size_t after = pos + hl;
		size_t room = final ? len - after : lim->max_record > after ?
		    lim->max_record - after : 0;
		bool complete = true;
		if ((major == 2 || major == 3) && ai != 31) {
			if (arg > lim->max_string || (top != NULL &&
			    top->str != 0 && arg > lim->max_string - top->total)) {
				cats_err_set(err, NULL, "string of %llu bytes "
				    "exceeds the %zu-byte limit",
				    (unsigned long long)arg, lim->max_string);
				goto bad;
			}
			if (arg > room) {
				if (final)
					cats_err_set(err, NULL, "declared length "
					    "%llu exceeds the %zu bytes left",
					    (unsigned long long)arg, len - after);
				else
					cats_err_set(err, NULL, "item exceeds "
					    "the %zu-byte record limit",
					    lim->max_record);
				goto bad;
			}
			if (arg > len - after) {
				pos = after;
				want = (size_t)arg;
				goto short_;
			}
			if (top != NULL && top->str != 0)
				top->total += (size_t)arg;
			if (major == 3 && arg == 4 && depth == 1 && top->map &&
			    !((top->indef ? top->items : top->left) & 1) &&
			    memcmp(buf + after, "type", 4) == 0) {
				ntype++;
				type_next = true;
			} else if (value_here && major == 3 && ntype == 1) {
				tval = buf + after;
				tlen = (size_t)arg;
			}
			pos = after + (size_t)arg;
		} else if (major >= 2 && major <= 6) {
			if (major >= 4 && depth >= max_depth) {
				cats_err_set(err, NULL, "nesting deeper than %u",
				    max_depth);
				goto bad;
			}
			uint64_t items = major == 5 ? arg * 2 : major == 4 ? arg
			    : 1;
			if (ai != 31 && (major == 4 || major == 5) &&
			    (arg > lim->max_count ||
			    (major == 5 && arg > UINT64_MAX / 2))) {
				cats_err_set(err, NULL, "%s of %llu elements "
				    "exceeds the limit of %zu", major == 4 ?
				    "array" : "map", (unsigned long long)arg,
				    lim->max_count);
				goto bad;
			}
			if (ai != 31 && major != 6 && items > room) {
				cats_err_set(err, NULL, "declared %s of %llu "
				    "elements cannot fit in the bytes left",
				    major == 4 ? "array" : "map",
				    (unsigned long long)arg);
				goto bad;
			}
			pos = after;
			if (ai == 31 || items != 0) {
				stack[depth++] = (struct fframe){
					.left = items, .indef = ai == 31,
					.map = major == 5,
					.str = major <= 3 ? (uint8_t)major : 0,
				};
				complete = false;
			}
		} else if (major == 7 && ai == 24 && arg < 32) {
			cats_err_set(err, NULL,
			    "two-byte simple value %llu below 32",
			    (unsigned long long)arg);
			goto bad;
		} else {
			pos = after;	/* an integer, a simple value, a float */
		}
		if (!complete)
			continue;
finished:
		/* An item ended: count it in its parents, closing them. */
		while (depth > 0) {
			struct fframe *f = &stack[depth - 1];
			if (f->indef) {
				f->items++;
				break;
			}
			if (--f->left > 0)
				break;
			depth--;
		}
		if (depth == 0) {
			*used = pos;
			if (type != NULL)
				*type = ntype == 1 ? tval : NULL;
			if (type_len != NULL)
				*type_len = ntype == 1 && tval ? tlen : 0;
			return CATS_SCAN_OK;
		}
	}
short_:
	if (final) {
		cats_err_set(err, NULL, "truncated item: %zu bytes needed, %zu "
		    "left", want, len - pos);
		goto bad;
	}
	if (want > (lim->max_record > pos ? lim->max_record - pos : 0)) {
		cats_err_set(err, NULL, "item exceeds the %zu-byte record limit",
		    lim->max_record);
		goto bad;
	}
	if (need)
		*need = pos + want;
	return CATS_SCAN_MORE;
bad:
	if (err)
		err->offset = pos;
	return CATS_SCAN_BAD;
}
