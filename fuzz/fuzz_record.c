/*
 * fuzz_record.c - record decoding: never a crash, and whatever decodes
 * re-encodes to bytes that decode to the same encoding again.  The same
 * input is also fed to a stream reader in small pieces, and framed
 * (cats_frame()): the framer must give the scanner's size, and its type,
 * for every item the scanner accepts; a framing reader (wrapped items)
 * is fed too.
 */
#include <stdlib.h>
#include <string.h>

#include "rec/json.h"
#include "rec/seq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cats_dec d, d2;
	static bool init;
	if (!init) {
		cats_dec_init(&d, NULL);
		cats_dec_init(&d2, NULL);
		init = true;
	}
	struct cats_rec r, r2;
	struct cats_err e;
	if (cats_rec_decode(&d, data, size, &r, &e) == 0) {
		struct cats_buf a = { 0 }, b = { 0 };
		if (cats_rec_encode(&r, &a, true) < 0)
			abort();
		if (cats_rec_decode(&d2, a.p, a.len, &r2, &e) < 0)
			abort();
		if (cats_rec_encode(&r2, &b, true) < 0 || a.len != b.len ||
		    memcmp(a.p, b.p, a.len) != 0)
			abort();
		json_t *j = cats_rec_to_json(&r2);
		if (j == NULL)
			abort();
		json_decref(j);
		cats_buf_free(&a);
		cats_buf_free(&b);
	}
	/* The framer agrees with the scanner. */
	static struct cats_toks toks;
	static struct cats_arena arena;
	size_t su = 0, fu = 0, tn = 0;
	const uint8_t *tp = NULL;
	cats_arena_reset(&arena);
	if (cats_scan(data, size, true, NULL, &toks, &arena, &su, NULL, &e) ==
	    CATS_SCAN_OK) {
		if (cats_frame(data, size, true, NULL, &tp, &tn, &fu, NULL, &e) !=
		    CATS_SCAN_OK || fu != su)
			abort();
		/* A definite "type" key (the scanner counts indefinite ones
		 * too) with a definite text value: the same text. */
		const struct cats_tok *v = &toks.t[toks.type_val];
		const struct cats_tok *k = v - 1;
		if (toks.ntype == 1 && v->kind == CATS_TK_TEXT &&
		    k->v.p >= data && k->v.p < data + size &&
		    v->v.p >= data && v->v.p < data + size &&
		    (tp != v->v.p || tn != v->n))
			abort();
	}
	/* Stream reader, fed in pieces of 7 bytes. */
	struct cats_seq_reader rd;
	cats_seq_reader_init(&rd, NULL);
	for (size_t off = 0; off <= size; off += 7) {
		size_t n = size - off < 7 ? size - off : 7;
		cats_seq_feed(&rd, data + off, n);
		if (off + n == size)
			rd.eof = true;
		int s;
		while ((s = cats_seq_next_rec(&rd, &d2, &r2, &e)) != CATS_SEQ_NEED)
			;
		if (rd.eof)
			break;
	}
	cats_seq_reader_free(&rd);
	/* A framing reader (cats-cps's, wrapped items or bare), the same way:
	 * every item it hands out lies within the input. */
	cats_seq_reader_init(&rd, NULL);
	rd.frame = true;
	for (size_t off = 0; off <= size; off += 7) {
		size_t n = size - off < 7 ? size - off : 7;
		cats_seq_feed(&rd, data + off, n);
		if (off + n == size)
			rd.eof = true;
		const uint8_t *p;
		size_t len;
		int s;
		while ((s = cats_seq_next(&rd, &p, &len, &e)) != CATS_SEQ_NEED)
			if (s == CATS_SEQ_ITEM && (len == 0 || p < rd.buf.p ||
			    p + len > rd.buf.p + rd.buf.len))
				abort();
		if (rd.eof)
			break;
	}
	cats_seq_reader_free(&rd);
	return 0;
}
