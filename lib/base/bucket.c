/*
 * bucket.c - the token bucket (see bucket.h for the contract).
 */
#include "base/bucket.h"

#define MICRO UINT64_C(1000000)

/* n tokens in millionths, saturated. */
static uint64_t
micro(uint64_t n)
{
	return n > UINT64_MAX / MICRO ? UINT64_MAX : n * MICRO;
}

/* The depth in millionths of a token. */
static uint64_t
cap_micro(const struct cats_bucket *b)
{
	return micro(b->burst ? b->burst : 1);
}

/* The millionths the bucket would hold at now. */
static uint64_t
level(const struct cats_bucket *b, uint64_t now_ms)
{
	uint64_t cap = cap_micro(b);
	unsigned __int128 t = b->tokens_micro;
	if (now_ms > b->last_ms)
		t += (unsigned __int128)(now_ms - b->last_ms) * b->rate_milli;
	return t > cap ? cap : (uint64_t)t;
}

void
cats_bucket_init_milli(struct cats_bucket *b, uint64_t rate_milli,
    uint64_t burst, uint64_t now_ms)
{
	b->rate_milli = rate_milli;
	b->burst = burst;
	b->tokens_micro = cap_micro(b);
	b->last_ms = now_ms;
}

void
cats_bucket_init(struct cats_bucket *b, uint64_t rate_per_s, uint64_t burst,
    uint64_t now_ms)
{
	cats_bucket_init_milli(b, rate_per_s > UINT64_MAX / 1000 ?
	    UINT64_MAX : rate_per_s * 1000, burst, now_ms);
}

bool
cats_bucket_take(struct cats_bucket *b, uint64_t n, uint64_t now_ms)
{
	if (b->rate_milli == 0)
		return true;
	b->tokens_micro = level(b, now_ms);
	if (now_ms > b->last_ms)
		b->last_ms = now_ms;
	if (n > b->tokens_micro / MICRO)
		return false;
	b->tokens_micro -= n * MICRO;
	return true;
}

uint64_t
cats_bucket_wait(const struct cats_bucket *b, uint64_t n, uint64_t now_ms)
{
	if (b->rate_milli == 0)
		return 0;
	if (n > cap_micro(b) / MICRO)
		return UINT64_MAX;
	uint64_t have = level(b, now_ms), want = n * MICRO;
	if (have >= want)
		return 0;
	/* Each ms adds rate_milli millionths: round the ms needed up. */
	return (uint64_t)(((unsigned __int128)(want - have) + b->rate_milli -
	    1) / b->rate_milli);
}

bool
cats_bucket_full(const struct cats_bucket *b, uint64_t now_ms)
{
	if (b->rate_milli == 0)
		return true;
	return level(b, now_ms) >= cap_micro(b);
}
