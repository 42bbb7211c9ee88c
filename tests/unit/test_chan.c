/*
 * test_chan.c - the endpoint rotation of a forwarder's control channel
 * (fwd/chan.h): which endpoint is tried next and after how long.
 */
#include "fwd/chan.h"
#include "t.h"

int
main(void)
{
	struct cats_chan_rot r;

	/* One endpoint: as before, 100 ms, +100 per failure, up to 1 s. */
	cats_chan_rot_init(&r, 1);
	T_OK(r.cur == 0, "one endpoint: it is tried first");
	unsigned want[] = { 100, 200, 300, 400, 500, 600, 700, 800, 900,
		1000, 1000, 1000 };
	int ok = 1;
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (cats_chan_rot_fail(&r) != want[i] || r.cur != 0)
			ok = 0;
	T_OK(ok, "one endpoint: 100 ms growing by 100 to 1 s, the same one");
	cats_chan_rot_up(&r);
	T_OK(cats_chan_rot_fail(&r) == 100, "a connection made: 100 ms again");
	T_OK(r.switches == 0, "one endpoint: no switch");

	/* Three: the owner is the first, then dies; the third takes over. */
	cats_chan_rot_init(&r, 3);
	T_OK(r.cur == 0, "three: the first is tried first");
	cats_chan_rot_up(&r);
	T_OK(r.switches == 0, "the first connection is no switch");
	/* The connection ends: a round from the next, 100 ms later. */
	T_OK(cats_chan_rot_fail(&r) == 100 && r.cur == 1,
	    "loss: the second, 100 ms later");
	T_OK(cats_chan_rot_fail(&r) == 0 && r.cur == 2,
	    "refused: the third at once");
	T_OK(cats_chan_rot_fail(&r) == 0 && r.cur == 0,
	    "refused: the first at once");
	T_OK(cats_chan_rot_fail(&r) == 200 && r.cur == 1,
	    "a round refused: the second again, 200 ms later");
	T_OK(cats_chan_rot_fail(&r) == 0 && r.cur == 2, "the third at once");
	/* The third answers: it is kept (no preference for the first). */
	cats_chan_rot_up(&r);
	T_OK(r.cur == 2 && r.switches == 1, "the third kept; one switch");
	T_OK(r.fails == 5, "five failures counted");
	/* Its loss: the first next, the backoff from 100 ms again. */
	T_OK(cats_chan_rot_fail(&r) == 100 && r.cur == 0,
	    "loss of the third: the first, 100 ms later");
	cats_chan_rot_up(&r);
	T_OK(r.switches == 2, "back on the first: a second switch");

	/* Rounds refused: 100 ms, +100 a round, up to 1 s. */
	cats_chan_rot_init(&r, 2);
	ok = 1;
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (cats_chan_rot_fail(&r) != 0 || r.cur != 1 ||
		    cats_chan_rot_fail(&r) != want[i] || r.cur != 0)
			ok = 0;
	T_OK(ok, "two refusing: each round at once, rounds 100 ms to 1 s apart");

	/* A failover as timed by a clock: the owner (0 of N) killed at t=0,
	 * the new owner (N-1) listening from t=2300 ms (lease 2 s and its
	 * poll); the forwarder reaches it within a round's delay. */
	for (unsigned n = 2; n <= CATS_CHAN_EPS; n *= 2) {
		cats_chan_rot_init(&r, n);
		cats_chan_rot_up(&r);
		uint64_t t = 0, up_at = 2300;
		for (;;) {
			t += cats_chan_rot_fail(&r);
			if (r.cur == n - 1 && t >= up_at)
				break;
		}
		cats_chan_rot_up(&r);
		T_OK(t >= up_at && t - up_at <= 1000 && r.switches == 1,
		    "%u endpoints, failover at 2300 ms: on the new owner at "
		    "%llu ms", n, (unsigned long long)t);
	}

	/* 0 endpoints is read as 1. */
	cats_chan_rot_init(&r, 0);
	T_OK(r.n == 1 && cats_chan_rot_fail(&r) == 100 && r.cur == 0,
	    "no endpoints: read as one");
	return t_done();
}
