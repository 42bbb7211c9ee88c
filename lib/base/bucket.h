/*
 * bucket.h - the one token bucket of cats: integer arithmetic, time passed
 * in (milliseconds, as everywhere in libcats), no clock read.
 *
 * Contract:
 * - A bucket holds up to `burst` tokens (a burst of 0 is taken as 1) and
 *   gains `rate_milli` thousandths of a token a second (so 0.5 a second is
 *   500).  It counts millionths of a token (`tokens_micro`): a millisecond
 *   at rate_milli adds exactly rate_milli millionths, so refills are exact
 *   however often the bucket is polled (nothing is lost to rounding).
 * - It starts full at cats_bucket_init().
 * - A refill adds (now - last_ms) * rate_milli millionths, never beyond the
 *   depth, and moves `last_ms` to now; a `now` at or before `last_ms` adds
 *   nothing and leaves `last_ms` (time never goes back in the bucket).
 * - cats_bucket_take() takes n whole tokens at once or none.  More tokens
 *   than the depth can never be taken.
 * - A rate of 0 is unlimited: every take succeeds and nothing is counted.
 * - The owner may change `rate_milli` and `burst` between calls (a reloaded
 *   configuration): the next take clamps the tokens to the new depth.
 * - No overflow for any input: products are computed in 128 bits and the
 *   depth saturates.
 */
#ifndef CATS_BUCKET_H
#define CATS_BUCKET_H

#include <stdbool.h>
#include <stdint.h>

struct cats_bucket {
	uint64_t rate_milli;	/* thousandths of a token/s; 0: unlimited */
	uint64_t burst;		/* depth in tokens (0 is taken as 1) */
	uint64_t tokens_micro;	/* millionths of a token held */
	uint64_t last_ms;	/* time of the last refill */
};

/* A full bucket of burst tokens gaining rate_per_s tokens a second. */
void cats_bucket_init(struct cats_bucket *b, uint64_t rate_per_s,
    uint64_t burst, uint64_t now_ms);
/* The same with a rate in thousandths of a token a second (0.5/s: 500). */
void cats_bucket_init_milli(struct cats_bucket *b, uint64_t rate_milli,
    uint64_t burst, uint64_t now_ms);
/* Refill to now, then take n tokens if they are all there: true if taken. */
bool cats_bucket_take(struct cats_bucket *b, uint64_t n, uint64_t now_ms);
/*
 * Milliseconds from now until cats_bucket_take(b, n, ...) can succeed:
 * 0 if it can now, UINT64_MAX if never (n beyond the depth).  b is not
 * changed.
 */
uint64_t cats_bucket_wait(const struct cats_bucket *b, uint64_t n,
    uint64_t now_ms);
/*
 * Would the bucket be full at now (idle long enough to be forgotten)?
 * An unlimited bucket (rate 0) always is.  b is not changed.
 */
bool cats_bucket_full(const struct cats_bucket *b, uint64_t now_ms);

#endif
