/*
 * ha_fold.h - the bindings of etcd's chunks (ha_log.h) as a set of
 * buckets, one per range of HA_CHUNK_IDS ids: the owner's fold keeps it
 * to write the chunks the log changed, a standby keeps its warm copy in
 * it (the chunks and the log merged); pure, no etcd.
 *
 * Each binding is held with the seq of the entry its record is as of (a
 * remove record too, so that an older record of the binding does not
 * bring it back); each bucket with the highest seq a chunk of it was
 * written or read as of.  Two rules merge what etcd holds, in whatever
 * order it is read: a log record of seq s goes in when s is at least the
 * binding's, or, for a binding the bucket does not hold, when s is above
 * the bucket's seq (a chunk of seq S holds every entry up to S: what it
 * lacks was removed); a chunk of seq S replaces every binding of its
 * range held as of S or earlier, and drops those it lacks.
 */
#ifndef CATS_HA_FOLD_H
#define CATS_HA_FOLD_H

#include "base/htab.h"
#include "ha/ha_log.h"

struct ha_fent {
	uint64_t id, seq;
	uint8_t *v;		/* the record */
	uint32_t len;
	bool rm;		/* a remove record */
};

struct ha_bucket {
	uint64_t b;		/* ids b * HA_CHUNK_IDS ... */
	uint64_t seq;		/* a chunk's, the highest written or read */
	struct ha_fent *e;	/* sorted by id */
	size_t n, cap, live;	/* live: not removed */
	uint32_t nparts;	/* chunks as last written (0: not known) */
	bool dirty;		/* changed since written */
};

struct ha_fold_set {
	struct cats_htab tab;
	size_t live;		/* bindings not removed */
};

/* A chunk of a bucket to write: its range and its value. */
struct ha_part {
	uint64_t lo, hi;
	struct cats_buf v;
};

/* The hash of a number (an id, a bucket, a seq) for cats_htab. */
uint64_t ha_num_hash(uint64_t v);
/* The bucket of binding id, the first id of bucket b (id 0 is none) and
 * the end of its range. */
uint64_t ha_bucket_of(uint64_t id);
uint64_t ha_bucket_lo(uint64_t b);
uint64_t ha_bucket_hi(uint64_t b);

void ha_fold_free(struct ha_fold_set *s);
struct ha_bucket *ha_fold_bucket(struct ha_fold_set *s, uint64_t b);
/* Drop bucket b and what it holds. */
void ha_fold_drop(struct ha_fold_set *s, uint64_t b);

/*
 * The log's rule: binding id's record v[0..n) of entry seq (a remove
 * record when rm); its bucket made dirty when it goes in.  1 in, 0 older
 * than what is held, -1 out of memory.
 */
int ha_fold_put(struct ha_fold_set *s, uint64_t id, uint64_t seq, bool rm,
    const uint8_t *v, size_t n);
/*
 * The chunks' rule: the chunk p[0..n), read at key lo (ha_chunk_decode(),
 * d and raw its scratch), into s; its header into *h.  0; -1 with err
 * when it is not a chunk of key lo (nothing changed); -2 out of memory.
 */
int ha_fold_chunk(struct ha_fold_set *s, struct cats_dec *d,
    const uint8_t *p, size_t n, uint64_t lo, struct cats_buf *raw,
    struct ha_chunk_hdr *h, struct cats_err *err);

/*
 * The chunks of bucket b as of seq: its bindings not removed, in id
 * order, split where a chunk's records would pass HA_LOG_TARGET bytes
 * (one empty chunk for an empty bucket), each sealed; *parts (malloc'd,
 * ha_parts_free()) and *n.  0, or -1 out of memory.
 */
int ha_fold_seal(const struct ha_bucket *b, uint64_t seq,
    struct ha_part **parts, size_t *n);
void ha_parts_free(struct ha_part *p, size_t n);
/* Bucket b written as of seq in nparts chunks: clean, its remove records
 * up to seq dropped (the chunk's seq keeps older records out). */
void ha_fold_written(struct ha_fold_set *s, struct ha_bucket *b, uint64_t seq,
    uint32_t nparts);
/* The buckets (all, or the dirty ones), sorted by b: malloc'd, *n. */
struct ha_bucket **ha_fold_buckets(const struct ha_fold_set *s, bool dirty,
    size_t *n);

#endif
