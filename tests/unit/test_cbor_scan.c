/*
 * test_cbor_scan.c - the hardened scanner: RFC 8949 Appendix A vectors,
 * malformed items, and bombs that would make a trusting decoder allocate.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "rec/json.h"
#include "t.h"

static size_t
unhex(const char *h, uint8_t *out, size_t cap)
{
	size_t n = 0;
	while (h[0] && h[1] && n < cap) {
		unsigned v;
		sscanf(h, "%2x", &v);
		out[n++] = (uint8_t)v;
		h += 2;
	}
	return n;
}

/* Scan hex and return the JSON text of the item, or NULL if refused. */
static char *
scan_json(const char *hex, struct cats_err *e)
{
	static uint8_t buf[4096];
	size_t n = unhex(hex, buf, sizeof(buf)), used = 0;
	struct cats_toks t = { 0 };
	struct cats_arena a = { 0 };
	char *s = NULL;
	memset(e, 0, sizeof(*e));
	if (cats_scan(buf, n, true, NULL, &t, &a, &used, NULL, e) ==
	    CATS_SCAN_OK && used == n) {
		json_t *j = cats_toks_to_json(t.t, 0);
		s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
		json_decref(j);
	}
	cats_toks_free(&t);
	cats_arena_free(&a);
	return s;
}

/*
 * RFC 8949 Appendix A, as the JSON our mapping gives (jansson writes
 * doubles with 17 significant digits, so 1.1 reads 1.1000000000000001).
 */
static const struct {
	const char *hex, *json;
} vectors[] = {
	{ "00", "0" }, { "01", "1" }, { "0a", "10" }, { "17", "23" },
	{ "1818", "24" }, { "1819", "25" }, { "1864", "100" },
	{ "1903e8", "1000" }, { "1a000f4240", "1000000" },
	{ "1b000000e8d4a51000", "1000000000000" },
	{ "1bffffffffffffffff", "1.8446744073709552e19" },
	{ "20", "-1" }, { "29", "-10" }, { "3863", "-100" },
	{ "3903e7", "-1000" },
	{ "c249010000000000000000", "{\"$tag\":2,\"value\":{\"$bytes\":\"AQAAAAAAAAAA\"}}" },
	{ "f90000", "0.0" }, { "f98000", "-0.0" }, { "f93c00", "1.0" },
	{ "fb3ff199999999999a", "1.1000000000000001" }, { "f93e00", "1.5" },
	{ "f97bff", "65504.0" }, { "fa47c35000", "100000.0" },
	{ "fa7f7fffff", "3.4028234663852886e38" },
	{ "fb7e37e43c8800759c", "1.0000000000000001e300" }, { "f90001", "5.9604644775390625e-8" },
	{ "f90400", "6.103515625e-5" }, { "f9c400", "-4.0" },
	{ "fbc010666666666666", "-4.0999999999999996" }, { "f97c00", "null" },
	{ "f97e00", "null" }, { "f9fc00", "null" }, { "fa7f800000", "null" },
	{ "fb7ff0000000000000", "null" },
	{ "f4", "false" }, { "f5", "true" }, { "f6", "null" }, { "f7", "null" },
	{ "f0", "{\"$simple\":16}" }, { "f8ff", "{\"$simple\":255}" },
	{ "c074323031332d30332d32315432303a30343a30305a",
	  "{\"$tag\":0,\"value\":\"2013-03-21T20:04:00Z\"}" },
	{ "c11a514b67b0", "{\"$tag\":1,\"value\":1363896240}" },
	{ "d74401020304", "{\"$tag\":23,\"value\":{\"$bytes\":\"AQIDBA\"}}" },
	{ "d818456449455446", "{\"$tag\":24,\"value\":{\"$bytes\":\"ZElFVEY\"}}" },
	{ "40", "{\"$bytes\":\"\"}" }, { "4401020304", "{\"$bytes\":\"AQIDBA\"}" },
	{ "60", "\"\"" }, { "6161", "\"a\"" }, { "6449455446", "\"IETF\"" },
	{ "62225c", "\"\\\"\\\\\"" }, { "62c3bc", "\"\xc3\xbc\"" },
	{ "63e6b0b4", "\"\xe6\xb0\xb4\"" }, { "64f0908591", "\"\xf0\x90\x85\x91\"" },
	{ "80", "[]" }, { "83010203", "[1,2,3]" },
	{ "8301820203820405", "[1,[2,3],[4,5]]" },
	{ "98190102030405060708090a0b0c0d0e0f101112131415161718181819",
	  "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25]" },
	{ "a0", "{}" }, { "a201020304", "{\"1\":2,\"3\":4}" },
	{ "a26161016162820203", "{\"a\":1,\"b\":[2,3]}" },
	{ "826161a161626163", "[\"a\",{\"b\":\"c\"}]" },
	{ "a56161614161626142616361436164614461656145",
	  "{\"a\":\"A\",\"b\":\"B\",\"c\":\"C\",\"d\":\"D\",\"e\":\"E\"}" },
	{ "5f42010243030405ff", "{\"$bytes\":\"AQIDBAU\"}" },
	{ "7f657374726561646d696e67ff", "\"streaming\"" },
	{ "9fff", "[]" }, { "9f018202039f0405ffff", "[1,[2,3],[4,5]]" },
	{ "9f01820203820405ff", "[1,[2,3],[4,5]]" },
	{ "83018202039f0405ff", "[1,[2,3],[4,5]]" },
	{ "83019f0203ff820405", "[1,[2,3],[4,5]]" },
	{ "9f0102030405060708090a0b0c0d0e0f101112131415161718181819ff",
	  "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25]" },
	{ "bf61610161629f0203ffff", "{\"a\":1,\"b\":[2,3]}" },
	{ "826161bf61626163ff", "[\"a\",{\"b\":\"c\"}]" },
	{ "bf6346756ef563416d7421ff", "{\"Fun\":true,\"Amt\":-2}" },
};

/* Items that are not well-formed (RFC 8949 Appendix F) or over a cap. */
static const struct {
	const char *hex, *why;
} bad[] = {
	{ "1c", "reserved additional information 28" },
	{ "1d", "reserved additional information 29" },
	{ "1e", "reserved additional information 30" },
	{ "3c", "reserved additional information in a negative integer" },
	{ "5c", "reserved additional information in a byte string" },
	{ "7d", "reserved additional information in a text string" },
	{ "9e", "reserved additional information in an array" },
	{ "bc", "reserved additional information in a map" },
	{ "dc", "reserved additional information in a tag" },
	{ "fc", "reserved additional information in major type 7" },
	{ "ff", "stray break at the top" },
	{ "8201ff", "break inside a definite array" },
	{ "a1ff", "break in place of a map key" },
	{ "bf00ff", "indefinite map ending after a key" },
	{ "1f", "indefinite unsigned integer" },
	{ "3f", "indefinite negative integer" },
	{ "df", "indefinite tag" },
	{ "f800", "two-byte simple value below 32" },
	{ "f81f", "two-byte simple value 31" },
	{ "18", "truncated head" }, { "19ff", "truncated 2-byte head" },
	{ "1b00000000", "truncated 8-byte head" },
	{ "42ff", "truncated byte string" }, { "62c3", "truncated text" },
	{ "8301", "truncated array" }, { "a201", "truncated map" },
	{ "c0", "tag without its item" }, { "9f0102", "unterminated array" },
	{ "5f4101", "unterminated indefinite byte string" },
	{ "5f6161ff", "text chunk in a byte string" },
	{ "5f5f4100ffff", "nested indefinite chunk" },
	{ "7f4100ff", "byte chunk in a text string" },
	{ "61ff", "invalid UTF-8 (0xff)" },
	{ "62c0af", "overlong UTF-8" },
	{ "63eda080", "UTF-8 surrogate" },
	{ "64f4908080", "UTF-8 beyond U+10FFFF" },
	{ "61c3", "UTF-8 sequence cut short" },
	{ "9a10000000", "array bomb: 2^28 elements, 5 bytes" },
	{ "9b0000000100000000", "array bomb: 2^32 elements" },
	{ "ba10000000", "map bomb: 2^28 pairs" },
	{ "5a7fffffff", "byte-string bomb: 2 GiB declared" },
	{ "5bffffffffffffffff", "byte-string bomb: 2^64-1 declared" },
	{ "7b0000000100000000", "text bomb: 4 GiB declared" },
};

static void
test_vectors(void)
{
	struct cats_err e;
	for (size_t i = 0; i < CATS_ARRAY_LEN(vectors); i++) {
		char *s = scan_json(vectors[i].hex, &e);
		T_OK(s && strcmp(s, vectors[i].json) == 0,
		    "Appendix A %s -> %s (got %s%s)", vectors[i].hex,
		    vectors[i].json, s ? s : "refused: ", s ? "" : e.reason);
		free(s);
	}
}

static void
test_bad(void)
{
	struct cats_err e;
	for (size_t i = 0; i < CATS_ARRAY_LEN(bad); i++) {
		char *s = scan_json(bad[i].hex, &e);
		T_OK(s == NULL && e.reason[0], "refused %s: %s (%s)",
		    bad[i].hex, bad[i].why, e.reason);
		free(s);
	}
}

static void
test_depth(void)
{
	/* 3000 nested arrays: refused at the depth cap, no recursion. */
	uint8_t *p = malloc(3001);
	memset(p, 0x81, 3000);
	p[3000] = 0;
	struct cats_toks t = { 0 };
	struct cats_err e;
	size_t used;
	int r = cats_scan(p, 3001, true, NULL, &t, NULL, &used, NULL, &e);
	T_OK(r == CATS_SCAN_BAD && strstr(e.reason, "nesting"),
	    "3000-deep nesting refused: %s", e.reason);
	T_OK(t.cap <= 64, "no more than a few tokens were allocated (%zu)",
	    t.cap);
	/* 16 levels are fine. */
	r = cats_scan(p + 3000 - 15, 16, true, NULL, &t, NULL, &used, NULL, &e);
	T_OK(r == CATS_SCAN_OK && used == 16, "16 levels accepted");
	/* Same with indefinite arrays and tags. */
	memset(p, 0x9f, 3000);
	r = cats_scan(p, 3001, true, NULL, &t, NULL, &used, NULL, &e);
	T_OK(r == CATS_SCAN_BAD, "3000 indefinite arrays refused");
	memset(p, 0xc6, 3000);
	r = cats_scan(p, 3001, true, NULL, &t, NULL, &used, NULL, &e);
	T_OK(r == CATS_SCAN_BAD, "3000 nested tags refused");
	cats_toks_free(&t);
	free(p);
}

static void
test_stream_mode(void)
{
	struct cats_toks t = { 0 };
	struct cats_err e;
	size_t used, need;
	uint8_t item[] = { 0x83, 0x01, 0x02, 0x03 };
	int r = cats_scan(item, 2, false, NULL, &t, NULL, &used, &need, &e);
	T_OK(r == CATS_SCAN_MORE && need >= 3, "partial item asks for more");
	r = cats_scan(item, 4, false, NULL, &t, NULL, &used, &need, &e);
	T_OK(r == CATS_SCAN_OK && used == 4, "complete item scans");
	/* A declared length beyond the record cap is refused at once. */
	uint8_t big[] = { 0x5a, 0x00, 0x10, 0x00, 0x00 };
	r = cats_scan(big, sizeof(big), false, NULL, &t, NULL, &used, &need, &e);
	T_OK(r == CATS_SCAN_BAD, "1 MiB string on a stream refused at once: %s",
	    e.reason);
	struct cats_limits lim = cats_limits_default;
	lim.max_tokens = 4;
	uint8_t many[] = { 0x85, 1, 2, 3, 4, 5 };
	r = cats_scan(many, sizeof(many), true, &lim, &t, NULL, &used, &need, &e);
	T_OK(r == CATS_SCAN_BAD && strstr(e.reason, "data items"),
	    "token cap: %s", e.reason);
	cats_toks_free(&t);
}

static void
test_no_big_allocation(void)
{
	/*
	 * Under a 256 MiB address-space limit a decoder that trusted the
	 * declared lengths would fail to allocate; this one never tries.
	 */
	struct rlimit rl = { 256u << 20, 256u << 20 };
#if !defined(__SANITIZE_ADDRESS__)
	/* (ASan reserves terabytes of shadow; it checks allocations itself.) */
	setrlimit(RLIMIT_AS, &rl);
#else
	(void)rl;
#endif
	struct cats_dec d;
	struct cats_rec r;
	struct cats_err e;
	cats_dec_init(&d, NULL);
	uint8_t bombs[][9] = {
		{ 0x9a, 0x10, 0, 0, 0 }, { 0xba, 0x10, 0, 0, 0 },
		{ 0x5a, 0x7f, 0xff, 0xff, 0xff }, { 0x9b, 0, 0, 0, 1, 0, 0, 0, 0 },
	};
	int refused = 0;
	for (size_t i = 0; i < CATS_ARRAY_LEN(bombs); i++)
		refused += cats_rec_decode(&d, bombs[i], 9, &r, &e) < 0;
	T_OK(refused == 4, "every bomb refused within 256 MiB");
	cats_dec_free(&d);
}

/* cats_frame() on hex: its answer, *used and the type text ("" none). */
static int
frame_hex(const char *hex, bool final, size_t *used, size_t *need,
    char *type, size_t tcap, struct cats_err *e)
{
	static uint8_t buf[4096];
	size_t n = unhex(hex, buf, sizeof(buf)), tn = 0;
	const uint8_t *tp = NULL;
	memset(e, 0, sizeof(*e));
	*used = 0;
	int r = cats_frame(buf, n, final, NULL, &tp, &tn, used, need, e);
	snprintf(type, tcap, "%.*s", tp ? (int)tn : 0, tp ? (const char *)tp : "");
	return r;
}

/* A record's deterministic encoding, from JSON. */
static size_t
rec_bytes(const char *json, uint8_t *out, size_t cap)
{
	json_error_t je;
	json_t *j = json_loads(json, 0, &je);
	struct cats_buf b = { 0 };
	struct cats_err e;
	size_t n = 0;
	if (j != NULL && cats_json_to_cbor(j, &b, &e) == 0 && b.len <= cap) {
		memcpy(out, b.p, b.len);
		n = b.len;
	}
	json_decref(j);
	cats_buf_free(&b);
	return n;
}

/*
 * The framer: the size cats_scan gives for every item it accepts (the RFC
 * vectors: indefinite items, tags, floats), every item scan refuses for
 * its structure or a cap refused too, the type of a record, a short item
 * on a stream asking for what it needs.
 */
static void
test_frame(void)
{
	struct cats_err e;
	size_t used, need;
	char type[64];
	for (size_t i = 0; i < CATS_ARRAY_LEN(vectors); i++) {
		uint8_t buf[256];
		size_t n = unhex(vectors[i].hex, buf, sizeof(buf));
		int r = frame_hex(vectors[i].hex, true, &used, &need, type,
		    sizeof(type), &e);
		T_OK(r == CATS_SCAN_OK && used == n, "frame %s: %zu bytes (%s)",
		    vectors[i].hex, n, r == CATS_SCAN_OK ? "ok" : e.reason);
	}
	size_t refused = 0, nbad = 0;
	for (size_t i = 0; i < CATS_ARRAY_LEN(bad); i++) {
		if (strstr(bad[i].why, "UTF-8") != NULL)
			continue;	/* text is the reader's to check */
		nbad++;
		refused += frame_hex(bad[i].hex, true, &used, &need, type,
		    sizeof(type), &e) == CATS_SCAN_BAD && e.reason[0];
	}
	T_OK(refused == nbad, "frame refuses the %zu malformed items and bombs "
	    "(%zu)", nbad, refused);
	T_OK(frame_hex("61ff", true, &used, &need, type, sizeof(type), &e) ==
	    CATS_SCAN_OK && used == 2, "frame leaves UTF-8 to the reader");
	/* Caps. */
	uint8_t deep[3001];
	memset(deep, 0x81, 3000);
	deep[3000] = 0;
	const uint8_t *tp;
	size_t tn;
	T_OK(cats_frame(deep, sizeof(deep), true, NULL, &tp, &tn, &used, NULL,
	    &e) == CATS_SCAN_BAD && strstr(e.reason, "nesting"),
	    "frame: 3000-deep nesting refused: %s", e.reason);
	T_OK(cats_frame(deep + 3000 - 15, 16, true, NULL, &tp, &tn, &used, NULL,
	    &e) == CATS_SCAN_OK && used == 16, "frame: 16 levels accepted");
	struct cats_limits lim = cats_limits_default;
	lim.max_tokens = 4;
	uint8_t many[] = { 0x85, 1, 2, 3, 4, 5 };
	T_OK(cats_frame(many, sizeof(many), true, &lim, &tp, &tn, &used, NULL,
	    &e) == CATS_SCAN_BAD && strstr(e.reason, "data items"),
	    "frame: token cap: %s", e.reason);
	uint8_t big[] = { 0x5a, 0x00, 0x10, 0x00, 0x00 };
	T_OK(cats_frame(big, sizeof(big), false, NULL, &tp, &tn, &used, &need,
	    &e) == CATS_SCAN_BAD, "frame: 1 MiB string on a stream refused at "
	    "once: %s", e.reason);
	/* A record: its type, wherever the key is, once. */
	uint8_t rec[1024];
	size_t n = rec_bytes("{\"type\":\"path-req\",\"txn\":7,\"flow\":"
	    "{\"type\":\"x\",\"proto\":6},\"msg\":\"\u00e9t\u00e9\"}", rec,
	    sizeof(rec));
	T_OK(n > 0 && cats_frame(rec, n, true, NULL, &tp, &tn, &used, NULL,
	    &e) == CATS_SCAN_OK && used == n && tp != NULL && tn == 8 &&
	    memcmp(tp, "path-req", 8) == 0, "frame: a record's type path-req");
	static const struct {
		const char *hex, *type;
	} types[] = {
		{ "a2617801647479706563737461", "sta" },	/* not first */
		{ "a2647479706561616474797065616262", "" },	/* twice */
		{ "a164747970650c", "" },			/* a number */
		{ "a1617aa16474797065616b", "" },		/* nested */
		{ "bf64747970656174616101ff", "t" },		/* indefinite map */
		{ "a164747970657f6174ff", "" },		/* indefinite text */
		{ "81a16474797065617a", "" },			/* not a map */
	};
	for (size_t i = 0; i < CATS_ARRAY_LEN(types); i++) {
		int r = frame_hex(types[i].hex, true, &used, &need, type,
		    sizeof(type), &e);
		T_OK(r == CATS_SCAN_OK && strcmp(type, types[i].type) == 0,
		    "frame %s: type \"%s\" (got %s \"%s\")", types[i].hex,
		    types[i].type, r == CATS_SCAN_OK ? "ok" : e.reason, type);
	}
	/* Every prefix on a stream asks for more, never past the item. */
	bool more = true;
	for (size_t k = 0; k < n && more; k++) {
		need = 0;
		more = cats_frame(rec, k, false, NULL, &tp, &tn, &used, &need,
		    &e) == CATS_SCAN_MORE && need > k && need <= n &&
		    cats_frame(rec, k, true, NULL, &tp, &tn, &used, NULL, &e) ==
		    CATS_SCAN_BAD;
	}
	T_OK(more, "frame: each of the %zu prefixes asks for more (and is "
	    "truncated when final)", n);
}

int
main(void)
{
	test_vectors();
	test_bad();
	test_depth();
	test_stream_mode();
	test_frame();
	test_no_big_allocation();
	return t_done();
}
