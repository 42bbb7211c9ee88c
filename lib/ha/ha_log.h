/*
 * ha_log.h - the values cats-bind writes to etcd (ha.h): one log entry a
 * slice of a commit, and the chunks the fold writes, each the bindings of
 * a range of HA_CHUNK_IDS ids.
 *
 * An entry is a CBOR sequence (RFC 8742): a header, the array
 * [version 1, seq, next_id, n, rawlen], then its n binding records
 * (cats-records(5): a binding as the table held it, or its remove
 * record) - as they are when rawlen is 0, else one byte string, their
 * bytes deflated (zlib, RFC 1950), which inflates to exactly rawlen
 * bytes.  seq orders the entries of every owner (a new owner goes on from
 * the highest it saw); next_id is the next binding id when it was written
 * (0: not said).  Deflated, a log entry is some 5 to 15 times smaller:
 * the records of a commit repeat their keys, services and paths.
 *
 * A chunk is the same but for its header, [version 1, seq, lo, hi, n,
 * rawlen]: the n bindings (install records, no removes) of ids in
 * [lo, hi), in increasing id order, as they were once every entry up to
 * seq was folded; [lo, hi) lies within one range of HA_CHUNK_IDS ids
 * (ids k * HA_CHUNK_IDS to (k + 1) * HA_CHUNK_IDS - 1, id 0 is none),
 * which is one chunk or, when its records pass HA_LOG_TARGET bytes,
 * several consecutive ones.  A chunk's records are always deflated.
 *
 * A value read from etcd is untrusted: its size, the count, rawlen and
 * every record are checked against the caps below (and
 * cats_limits_default) before anything is allocated for them
 * (fuzz/fuzz_etcd_resp.c).
 */
#ifndef CATS_HA_LOG_H
#define CATS_HA_LOG_H

#include <stdbool.h>

#include "rec/rec.h"

#define HA_LOG_VERSION 1
/* An entry written is closed once its records hold this many bytes. */
#define HA_LOG_TARGET ((size_t)512 << 10)
/* Caps of an entry read: its bytes, its records' bytes, its records. */
#define HA_LOG_MAX_VALUE ((size_t)1 << 20)
#define HA_LOG_MAX_RAW ((size_t)1 << 20)
#define HA_LOG_MAX_RECS 8192

/* The ids of a chunk's range (a power of two). */
#define HA_CHUNK_IDS 256

struct ha_log_hdr {
	uint64_t seq, next_id, n, rawlen;
};

struct ha_chunk_hdr {
	uint64_t seq, lo, hi, n, rawlen;
};

/*
 * The entry seq of the n records raw[0..len) into out (emptied), their
 * bytes deflated when deflate and smaller so.  0, or -1 (out of memory,
 * or past a cap).
 */
int ha_log_seal(struct cats_buf *out, uint64_t seq, uint64_t next_id,
    uint64_t n, const uint8_t *raw, size_t len, bool deflate);

/*
 * The header of the entry p[0..n) into *h, its size *used: 0, or -1 with
 * err when it is not one (or breaks a cap: the value's size, the count,
 * rawlen).
 */
int ha_log_header(const uint8_t *p, size_t n, struct ha_log_hdr *h,
    size_t *used, struct cats_err *err);
/*
 * Decode the entry p[0..n): its header into *h, then each record, decoded
 * and validated, given to cb with its bytes (in p, or in raw, which holds
 * the inflated records; cb returns non-zero to stop: that value is
 * returned).  0, or -1 with err when the value breaks a cap or is not an
 * entry.
 */
int ha_log_decode(struct cats_dec *d, const uint8_t *p, size_t n,
    struct cats_buf *raw, struct ha_log_hdr *h, int (*cb)(void *,
    const struct cats_rec *, const uint8_t *, size_t), void *arg,
    struct cats_err *err);

/*
 * The chunk of h (seq, lo, hi, n; rawlen is the seal's) holding the n
 * records raw[0..len) into out (emptied), deflated.  0, or -1 (out of
 * memory, or past a cap).
 */
int ha_chunk_seal(struct cats_buf *out, const struct ha_chunk_hdr *h,
    const uint8_t *raw, size_t len);
/*
 * Decode the chunk p[0..n) as ha_log_decode() does an entry, its header
 * into *h; besides the caps of an entry, its range must lie within one
 * range of HA_CHUNK_IDS ids, n at most the range's ids, and each record a
 * binding of the range in increasing id order.  0, cb's non-zero, or -1
 * with err.
 */
int ha_chunk_decode(struct cats_dec *d, const uint8_t *p, size_t n,
    struct cats_buf *raw, struct ha_chunk_hdr *h, int (*cb)(void *,
    const struct cats_rec *, const uint8_t *, size_t), void *arg,
    struct cats_err *err);

#endif
