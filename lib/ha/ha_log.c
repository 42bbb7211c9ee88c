/*
 * ha_log.c - log entries in etcd values (ha_log.h).
 */
#include <string.h>

#include <zlib.h>

#include "ha/ha_log.h"
#include "rec/cbor_scan.h"

/* The header's fixed size: 0x85, the version, then four 9-byte uints. */
#define HDR 38

static size_t
put_u64(uint8_t *p, uint64_t v)
{
	p[0] = 0x1b;
	for (int i = 0; i < 8; i++)
		p[1 + i] = (uint8_t)(v >> (56 - 8 * i));
	return 9;
}

int
ha_log_seal(struct cats_buf *out, uint64_t seq, uint64_t next_id,
    uint64_t n, const uint8_t *raw, size_t len, bool deflate)
{
	uint8_t h[HDR + 5];
	size_t hl = 2;
	out->len = 0;
	if (len > HA_LOG_MAX_RAW || n > HA_LOG_MAX_RECS)
		return -1;
	uLong bound = compressBound(len);
	if (cats_buf_reserve(out, sizeof(h) + (deflate ? bound : len)) < 0)
		return -1;
	h[0] = 0x85;
	h[1] = HA_LOG_VERSION;
	hl += put_u64(h + hl, seq);
	hl += put_u64(h + hl, next_id);
	hl += put_u64(h + hl, n);
	uLongf zl = bound;
	if (deflate && len > 0 && compress2(out->p + sizeof(h), &zl, raw, len,
	    1) == Z_OK && zl + 5 < len) {
		hl += put_u64(h + hl, len);
		h[hl++] = 0x5a;
		for (int i = 0; i < 4; i++)
			h[hl++] = (uint8_t)(zl >> (24 - 8 * i));
		memcpy(out->p, h, hl);
		memmove(out->p + hl, out->p + sizeof(h), zl);
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
ha_log_header(const uint8_t *p, size_t n, struct ha_log_hdr *h, size_t *used,
    struct cats_err *err)
{
	static const struct cats_limits hlim = { 64, 2, 8, 0, 5 };
	struct cats_toks ht = { 0 };
	memset(h, 0, sizeof(*h));
	*used = 0;
	if (n > HA_LOG_MAX_VALUE)
		return cats_err_set(err, "", "a log entry of %zu bytes (at most "
		    "%zu)", n, HA_LOG_MAX_VALUE);
	int rc = cats_scan(p, n < hlim.max_record ? n : hlim.max_record, true,
	    &hlim, &ht, NULL, used, NULL, err);
	if (rc == CATS_SCAN_OK && (ht.n != 6 || ht.t[0].kind != CATS_TK_ARRAY ||
	    ht.t[0].n != 5))
		rc = cats_err_set(err, "", "a log entry's header is not an "
		    "array of 5");
	for (size_t i = 1; rc == CATS_SCAN_OK && i < 6; i++)
		if (ht.t[i].kind != CATS_TK_UINT || ht.t[i].v.u > CATS_U53)
			rc = cats_err_set(err, "", "a log entry's header item "
			    "%zu is not an unsigned integer below 2^53", i);
	if (rc == CATS_SCAN_OK && ht.t[1].v.u != HA_LOG_VERSION)
		rc = cats_err_set(err, "", "a log entry of version %llu (this "
		    "is %d)", (unsigned long long)ht.t[1].v.u, HA_LOG_VERSION);
	if (rc == CATS_SCAN_OK && ht.t[4].v.u > HA_LOG_MAX_RECS)
		rc = cats_err_set(err, "", "a log entry of %llu records (at "
		    "most %d)", (unsigned long long)ht.t[4].v.u,
		    HA_LOG_MAX_RECS);
	if (rc == CATS_SCAN_OK && ht.t[5].v.u > HA_LOG_MAX_RAW)
		rc = cats_err_set(err, "", "a log entry of %llu bytes deflated "
		    "(at most %zu)", (unsigned long long)ht.t[5].v.u,
		    HA_LOG_MAX_RAW);
	if (rc == CATS_SCAN_OK) {
		h->seq = ht.t[2].v.u;
		h->next_id = ht.t[3].v.u;
		h->n = ht.t[4].v.u;
		h->rawlen = ht.t[5].v.u;
	}
	cats_toks_free(&ht);
	return rc == CATS_SCAN_OK ? 0 : -1;
}

/* Inflate the byte string p[0..n) (the rest of an entry) into raw, to
 * exactly h->rawlen bytes. */
static int
inflate_to(const uint8_t *p, size_t n, const struct ha_log_hdr *h,
    struct cats_buf *raw, struct cats_err *err)
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
	if (cats_buf_reserve(raw, h->rawlen) < 0)
		return cats_err_set(err, "", "out of memory");
	z_stream s;
	memset(&s, 0, sizeof(s));
	if (inflateInit(&s) != Z_OK)
		return cats_err_set(err, "", "out of memory");
	s.next_in = (Bytef *)(uintptr_t)z;
	s.avail_in = (uInt)zl;
	s.next_out = raw->p;
	s.avail_out = (uInt)h->rawlen;
	int zr = inflate(&s, Z_FINISH);
	size_t out = s.total_out;
	bool rest = s.avail_in != 0;
	inflateEnd(&s);
	if (zr != Z_STREAM_END || out != h->rawlen || rest)
		return cats_err_set(err, "", "a deflated log entry does not "
		    "inflate to its %llu bytes (zlib %d)",
		    (unsigned long long)h->rawlen, zr);
	raw->len = out;
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
	if (h->rawlen > 0) {
		if (inflate_to(p + used, n - used, h, raw, err) < 0)
			return -1;
		p = raw->p;
		n = raw->len;
		used = 0;
	}
	size_t off = used;
	for (uint64_t i = 0; i < h->n; i++) {
		if (off == n)
			return cats_err_set(err, "", "a log entry of %llu records "
			    "ends after %llu", (unsigned long long)h->n,
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
		return cats_err_set(err, "", "%zu bytes after a log entry's %llu "
		    "records", n - off, (unsigned long long)h->n);
	return 0;
}
