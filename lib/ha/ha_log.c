/*
 * ha_log.c - log entries in etcd values (ha_log.h).
 */
#include <string.h>

#include <zlib.h>

#include "ha/ha_log.h"
#include "rec/cbor_scan.h"

static size_t
put_u64(uint8_t *p, uint64_t v)
{
	p[0] = 0x1b;
	for (int i = 0; i < 8; i++)
		p[1 + i] = (uint8_t)(v >> (56 - 8 * i));
	return 9;
}

/*
 * A sealed value: the header [version, items[0..k), rawlen], then the
 * records raw[0..len), deflated when deflate and smaller so.
 */
static int
seal(struct cats_buf *out, const uint64_t *items, size_t k,
    const uint8_t *raw, size_t len, bool deflate)
{
	uint8_t h[2 + 9 * 6 + 5];
	size_t hl = 2, hmax = 2 + 9 * (k + 1) + 5;
	out->len = 0;
	if (len > HA_LOG_MAX_RAW)
		return -1;
	uLong bound = compressBound(len);
	if (cats_buf_reserve(out, hmax + (deflate ? bound : len)) < 0)
		return -1;
	h[0] = (uint8_t)(0x80 + k + 2);
	h[1] = HA_LOG_VERSION;
	for (size_t i = 0; i < k; i++)
		hl += put_u64(h + hl, items[i]);
	uLongf zl = bound;
	if (deflate && len > 0 && compress2(out->p + hmax, &zl, raw, len,
	    1) == Z_OK && zl + 5 < len) {
		hl += put_u64(h + hl, len);
		h[hl++] = 0x5a;
		for (int i = 0; i < 4; i++)
			h[hl++] = (uint8_t)(zl >> (24 - 8 * i));
		memcpy(out->p, h, hl);
		memmove(out->p + hl, out->p + hmax, zl);
		out->len = hl + zl;
		return 0;
	}
	hl += put_u64(h + hl, 0);
	memcpy(out->p, h, hl);
	if (len > 0)
		memcpy(out->p + hl, raw, len);
	out->len = hl + len;
	return 0;
}

int
ha_log_seal(struct cats_buf *out, uint64_t seq, uint64_t next_id,
    uint64_t n, const uint8_t *raw, size_t len, bool deflate)
{
	const uint64_t items[] = { seq, next_id, n };
	out->len = 0;
	if (n > HA_LOG_MAX_RECS)
		return -1;
	return seal(out, items, 3, raw, len, deflate);
}

int
ha_chunk_seal(struct cats_buf *out, const struct ha_chunk_hdr *h,
    const uint8_t *raw, size_t len)
{
	const uint64_t items[] = { h->seq, h->lo, h->hi, h->n };
	out->len = 0;
	if (h->n > HA_CHUNK_IDS || h->hi <= h->lo || h->hi - h->lo >
	    HA_CHUNK_IDS)
		return -1;
	return seal(out, items, 4, raw, len, true);
}

/*
 * The header p[0..n) of a value named what: an array of 2 + k unsigned
 * integers below 2^53, the first HA_LOG_VERSION, the next k into
 * items[], the last (rawlen, at most HA_LOG_MAX_RAW) too; its size
 * *used.  0, or -1 with err.
 */
static int
header(const char *what, const uint8_t *p, size_t n, uint64_t *items,
    size_t k, size_t *used, struct cats_err *err)
{
	static const struct cats_limits hlim = { 80, 2, 10, 0, 8 };
	struct cats_toks ht = { 0 };
	*used = 0;
	if (n > HA_LOG_MAX_VALUE)
		return cats_err_set(err, "", "a %s of %zu bytes (at most %zu)",
		    what, n, HA_LOG_MAX_VALUE);
	int rc = cats_scan(p, n < hlim.max_record ? n : hlim.max_record, true,
	    &hlim, &ht, NULL, used, NULL, err);
	if (rc == CATS_SCAN_OK && (ht.n != k + 3 || ht.t[0].kind !=
	    CATS_TK_ARRAY || ht.t[0].n != k + 2))
		rc = cats_err_set(err, "", "a %s's header is not an array of "
		    "%zu", what, k + 2);
	for (size_t i = 1; rc == CATS_SCAN_OK && i < k + 3; i++)
		if (ht.t[i].kind != CATS_TK_UINT || ht.t[i].v.u > CATS_U53)
			rc = cats_err_set(err, "", "a %s's header item %zu is "
			    "not an unsigned integer below 2^53", what, i);
	if (rc == CATS_SCAN_OK && ht.t[1].v.u != HA_LOG_VERSION)
		rc = cats_err_set(err, "", "a %s of version %llu (this is %d)",
		    what, (unsigned long long)ht.t[1].v.u, HA_LOG_VERSION);
	if (rc == CATS_SCAN_OK && ht.t[k + 2].v.u > HA_LOG_MAX_RAW)
		rc = cats_err_set(err, "", "a %s of %llu bytes deflated (at "
		    "most %zu)", what, (unsigned long long)ht.t[k + 2].v.u,
		    HA_LOG_MAX_RAW);
	for (size_t i = 0; rc == CATS_SCAN_OK && i <= k; i++)
		items[i] = ht.t[2 + i].v.u;
	cats_toks_free(&ht);
	return rc == CATS_SCAN_OK ? 0 : -1;
}

int
ha_log_header(const uint8_t *p, size_t n, struct ha_log_hdr *h, size_t *used,
    struct cats_err *err)
{
	uint64_t it[4];
	memset(h, 0, sizeof(*h));
	if (header("log entry", p, n, it, 3, used, err) < 0)
		return -1;
	if (it[2] > HA_LOG_MAX_RECS)
		return cats_err_set(err, "", "a log entry of %llu records (at "
		    "most %d)", (unsigned long long)it[2], HA_LOG_MAX_RECS);
	h->seq = it[0];
	h->next_id = it[1];
	h->n = it[2];
	h->rawlen = it[3];
	return 0;
}

/* Inflate the byte string p[0..n) (the rest of a value) into raw, to
 * exactly rawlen bytes. */
static int
inflate_to(const uint8_t *p, size_t n, uint64_t rawlen, struct cats_buf *raw,
    struct cats_err *err)
{
	static const struct cats_limits slim = { HA_LOG_MAX_VALUE, 1, 1,
		HA_LOG_MAX_VALUE, 1 };
	struct cats_toks t = { 0 };
	size_t used = 0;
	int rc = cats_scan(p, n, true, &slim, &t, NULL, &used, NULL, err);
	const uint8_t *z = rc == CATS_SCAN_OK ? t.t[0].v.p : NULL;
	size_t zl = rc == CATS_SCAN_OK ? t.t[0].n : 0;
	bool bytes = rc == CATS_SCAN_OK && t.t[0].kind == CATS_TK_BYTES;
	cats_toks_free(&t);
	if (rc != CATS_SCAN_OK)
		return -1;
	if (!bytes || used != n)
		return cats_err_set(err, "", "a deflated log entry is not one "
		    "byte string");
	raw->len = 0;
	if (cats_buf_reserve(raw, rawlen) < 0)
		return cats_err_set(err, "", "out of memory");
	z_stream s;
	memset(&s, 0, sizeof(s));
	if (inflateInit(&s) != Z_OK)
		return cats_err_set(err, "", "out of memory");
	s.next_in = (Bytef *)(uintptr_t)z;
	s.avail_in = (uInt)zl;
	s.next_out = raw->p;
	s.avail_out = (uInt)rawlen;
	int zr = inflate(&s, Z_FINISH);
	size_t out = s.total_out;
	bool rest = s.avail_in != 0;
	inflateEnd(&s);
	if (zr != Z_STREAM_END || out != rawlen || rest)
		return cats_err_set(err, "", "a deflated log entry does not "
		    "inflate to its %llu bytes (zlib %d)",
		    (unsigned long long)rawlen, zr);
	raw->len = out;
	return 0;
}

/*
 * The nrec records of a value after its header (p[used..n), or inflated
 * into raw when rawlen), each decoded and given to cb: 0, cb's non-zero,
 * or -1 with err.
 */
static int
records(struct cats_dec *d, const uint8_t *p, size_t n, size_t used,
    uint64_t nrec, uint64_t rawlen, struct cats_buf *raw,
    int (*cb)(void *, const struct cats_rec *, const uint8_t *, size_t),
    void *arg, struct cats_err *err)
{
	if (rawlen > 0) {
		if (inflate_to(p + used, n - used, rawlen, raw, err) < 0)
			return -1;
		p = raw->p;
		n = raw->len;
		used = 0;
	}
	size_t off = used;
	for (uint64_t i = 0; i < nrec; i++) {
		if (off == n)
			return cats_err_set(err, "", "a value of %llu records "
			    "ends after %llu", (unsigned long long)nrec,
			    (unsigned long long)i);
		size_t left = n - off < d->lim.max_record ? n - off :
		    d->lim.max_record;
		cats_arena_reset(&d->arena);
		if (cats_scan(p + off, left, true, &d->lim, &d->toks,
		    &d->arena, &used, NULL, err) != CATS_SCAN_OK)
			return -1;
		struct cats_rec r;
		if (cats_rec_from_toks(d, &r, err) < 0)
			return -1;
		int c = cb(arg, &r, p + off, used);
		if (c != 0)
			return c;
		off += used;
	}
	if (off != n)
		return cats_err_set(err, "", "%zu bytes after a value's %llu "
		    "records", n - off, (unsigned long long)nrec);
	return 0;
}

int
ha_log_decode(struct cats_dec *d, const uint8_t *p, size_t n,
    struct cats_buf *raw, struct ha_log_hdr *h, int (*cb)(void *,
    const struct cats_rec *, const uint8_t *, size_t), void *arg,
    struct cats_err *err)
{
	size_t used;
	if (ha_log_header(p, n, h, &used, err) < 0)
		return -1;
	return records(d, p, n, used, h->n, h->rawlen, raw, cb, arg, err);
}

/* A chunk's record checked: a binding (not a remove) of its range, in
 * increasing id order; then handed on. */
struct chk {
	const struct ha_chunk_hdr *h;
	uint64_t last;
	int (*cb)(void *, const struct cats_rec *, const uint8_t *, size_t);
	void *arg;
	struct cats_err *err;
};

static int
chunk_rec(void *arg, const struct cats_rec *r, const uint8_t *v, size_t n)
{
	struct chk *c = arg;
	if (r->type != CATS_T_BINDING || r->u.binding.op == CATS_BIND_REMOVE)
		return cats_err_set(c->err, "", "a chunk holds a record that "
		    "is not a binding");
	uint64_t id = r->u.binding.id;
	if (id < c->h->lo || id >= c->h->hi || id <= c->last)
		return cats_err_set(c->err, "", "a chunk's binding %llu is out "
		    "of its range [%llu, %llu) or of order",
		    (unsigned long long)id, (unsigned long long)c->h->lo,
		    (unsigned long long)c->h->hi);
	c->last = id;
	return c->cb(c->arg, r, v, n);
}

int
ha_chunk_decode(struct cats_dec *d, const uint8_t *p, size_t n,
    struct cats_buf *raw, struct ha_chunk_hdr *h, int (*cb)(void *,
    const struct cats_rec *, const uint8_t *, size_t), void *arg,
    struct cats_err *err)
{
	uint64_t it[5];
	size_t used;
	memset(h, 0, sizeof(*h));
	if (header("chunk", p, n, it, 4, &used, err) < 0)
		return -1;
	h->seq = it[0];
	h->lo = it[1];
	h->hi = it[2];
	h->n = it[3];
	h->rawlen = it[4];
	if (h->lo == 0 || h->hi <= h->lo || h->hi - h->lo > HA_CHUNK_IDS ||
	    h->lo / HA_CHUNK_IDS != (h->hi - 1) / HA_CHUNK_IDS)
		return cats_err_set(err, "", "a chunk's range [%llu, %llu) is "
		    "not within one range of %d ids", (unsigned long long)h->lo,
		    (unsigned long long)h->hi, HA_CHUNK_IDS);
	if (h->n > h->hi - h->lo)
		return cats_err_set(err, "", "a chunk of %llu records for %llu "
		    "ids", (unsigned long long)h->n,
		    (unsigned long long)(h->hi - h->lo));
	struct chk c = { h, 0, cb, arg, err };
	int rc = records(d, p, n, used, h->n, h->rawlen, raw, chunk_rec, &c,
	    err);
	/* chunk_rec's refusal is -1 with err: no callback returns it. */
	return rc;
}
