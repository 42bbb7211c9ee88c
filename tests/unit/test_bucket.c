/*
 * test_bucket.c - the token bucket: start full, refill, depth, fractional
 * rates, unlimited, the wait until a token, idle, no overflow.
 */
#include "base/bucket.h"
#include "t.h"

static void
test_basic(void)
{
	struct cats_bucket b;
	cats_bucket_init(&b, 10, 3, 1000);
	int n = 0;
	while (n < 10 && cats_bucket_take(&b, 1, 1000))
		n++;
	T_OK(n == 3, "starts full: burst 3 taken at once (%d)", n);
	T_OK(!cats_bucket_take(&b, 1, 1099), "99 ms at 10/s: no token yet");
	T_OK(cats_bucket_take(&b, 1, 1100), "100 ms at 10/s: one token");
	T_OK(!cats_bucket_take(&b, 1, 1100), "and only one");
	T_OK(cats_bucket_take(&b, 3, 1100 + 10000), "refill stops at the "
	    "depth: 3 after a long idle");
	T_OK(!cats_bucket_take(&b, 1, 1100 + 10000), "not 4");
	cats_bucket_init(&b, 10, 3, 0);
	T_OK(!cats_bucket_take(&b, 4, 0), "more than the depth: never");
	T_OK(cats_bucket_take(&b, 3, 0), "a refused take takes nothing");
	T_OK(!cats_bucket_take(&b, 1, 0), "empty");
	T_OK(!cats_bucket_take(&b, 1, 0) && !cats_bucket_take(&b, 1, 0),
	    "refused takes do not go below empty");
	T_OK(cats_bucket_take(&b, 0, 0), "zero tokens: always");
}

static void
test_burst_zero(void)
{
	struct cats_bucket b;
	cats_bucket_init(&b, 1, 0, 0);
	T_OK(cats_bucket_take(&b, 1, 0), "burst 0 is a depth of 1");
	T_OK(!cats_bucket_take(&b, 1, 999), "999 ms at 1/s: empty");
	T_OK(cats_bucket_take(&b, 1, 1000), "1000 ms at 1/s: one");
}

static void
test_fraction(void)
{
	struct cats_bucket b;
	cats_bucket_init_milli(&b, 500, 1, 0);	/* 0.5 a second */
	T_OK(cats_bucket_take(&b, 1, 0), "0.5/s starts full");
	T_OK(!cats_bucket_take(&b, 1, 1999), "1999 ms at 0.5/s: empty");
	T_OK(cats_bucket_take(&b, 1, 2000), "2000 ms at 0.5/s: one");
	/* Refills of 1 ms each at 1000/s add a whole token each time. */
	cats_bucket_init(&b, 1000, 1, 0);
	T_OK(cats_bucket_take(&b, 1, 0), "1000/s full");
	int ok = 1;
	for (uint64_t t = 1; t <= 50; t++)
		ok &= cats_bucket_take(&b, 1, t);
	T_OK(ok, "1000/s: a token every ms");
	/* 1.5 a second polled every ms keeps its thousandths. */
	cats_bucket_init_milli(&b, 1500, 1, 0);
	(void)cats_bucket_take(&b, 1, 0);
	uint64_t t = 0;
	while (!cats_bucket_take(&b, 1, ++t) && t < 5000)
		;
	T_OK(t == 667, "1.5/s polled every ms: a token at 667 ms (%llu)",
	    (unsigned long long)t);
}

static void
test_unlimited(void)
{
	struct cats_bucket b;
	cats_bucket_init(&b, 0, 1, 0);
	int ok = 1;
	for (int i = 0; i < 1000; i++)
		ok &= cats_bucket_take(&b, 1000, 0);
	T_OK(ok, "rate 0: unlimited");
	T_OK(cats_bucket_wait(&b, 1000000, 0) == 0, "rate 0: no wait");
	T_OK(cats_bucket_full(&b, 0), "rate 0: always full");
}

static void
test_wait(void)
{
	struct cats_bucket b;
	cats_bucket_init(&b, 10, 2, 0);
	T_OK(cats_bucket_wait(&b, 2, 0) == 0, "full: no wait");
	T_OK(cats_bucket_wait(&b, 3, 0) == UINT64_MAX, "beyond the depth: "
	    "never");
	(void)cats_bucket_take(&b, 2, 0);
	T_OK(cats_bucket_wait(&b, 1, 0) == 100, "empty at 10/s: 100 ms");
	T_OK(cats_bucket_wait(&b, 1, 40) == 60, "40 ms later: 60 ms");
	T_OK(cats_bucket_wait(&b, 2, 40) == 160, "two tokens: 160 ms");
	T_OK(!cats_bucket_take(&b, 1, 99) && cats_bucket_wait(&b, 1, 99) == 1,
	    "at 99 ms: 1 ms to go");
	T_OK(cats_bucket_take(&b, 1, 100), "the wait was exact");
	cats_bucket_init_milli(&b, 3, 1, 0);	/* a token in 333.3 s */
	(void)cats_bucket_take(&b, 1, 0);
	uint64_t w = cats_bucket_wait(&b, 1, 0);
	T_OK(w == 333334, "0.003/s: rounded up (%llu)", (unsigned long long)w);
	T_OK(!cats_bucket_take(&b, 1, w - 1) && cats_bucket_take(&b, 1, w),
	    "not a ms before, at it");
}

static void
test_full(void)
{
	struct cats_bucket b;
	cats_bucket_init(&b, 10, 2, 0);
	T_OK(cats_bucket_full(&b, 0), "new: full");
	(void)cats_bucket_take(&b, 1, 0);
	T_OK(!cats_bucket_full(&b, 99), "99 ms after a take at 10/s: not full");
	T_OK(cats_bucket_full(&b, 100), "100 ms: full again");
	T_OK(b.tokens_micro == 1000000, "full does not change the bucket");
}

static void
test_time_and_limits(void)
{
	struct cats_bucket b;
	cats_bucket_init(&b, 10, 1, 5000);
	(void)cats_bucket_take(&b, 1, 5000);
	T_OK(!cats_bucket_take(&b, 1, 1000), "time before the last refill: "
	    "nothing added");
	T_OK(b.last_ms == 5000, "and the last refill stays");
	T_OK(cats_bucket_take(&b, 1, 5100), "refill counts from it");
	cats_bucket_init(&b, UINT64_MAX, UINT64_MAX, 0);
	T_OK(cats_bucket_take(&b, UINT64_MAX / 1000000, 0), "saturated depth");
	T_OK(cats_bucket_take(&b, 1, UINT64_MAX), "huge rate and interval: no "
	    "overflow");
	cats_bucket_init_milli(&b, UINT64_MAX, 2, 0);
	(void)cats_bucket_take(&b, 2, 0);
	T_OK(cats_bucket_wait(&b, 1, 0) == 1, "huge rate: a wait of 1 ms");
	cats_bucket_init(&b, 1, 5, 0);
	(void)cats_bucket_take(&b, 5, 0);
	T_OK(cats_bucket_take(&b, 5, UINT64_MAX), "interval of 2^64 ms: full");
	/* A reloaded configuration: the depth shrinks, tokens are clamped. */
	cats_bucket_init(&b, 10, 5, 0);
	b.burst = 2;
	T_OK(cats_bucket_take(&b, 2, 0) && !cats_bucket_take(&b, 1, 0),
	    "a smaller depth clamps the tokens at the next take");
}

int
main(void)
{
	test_basic();
	test_burst_zero();
	test_fraction();
	test_unlimited();
	test_wait();
	test_full();
	test_time_and_limits();
	return t_done();
}
