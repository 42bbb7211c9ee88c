/*
 * test_chan.c - the endpoint rotation of a forwarder's control channel
 * (fwd/chan.h): which endpoint is tried next and after how long; the
 * select channel kept to the bind channel's rank (following); the
 * liveness deadline, time passed in.
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
	T_OK(cats_chan_rot_fail(&r) == 1000,
	    "connected, closed before a record: the backoff goes on");
	cats_chan_rot_up(&r);
	cats_chan_rot_answered(&r);
	T_OK(cats_chan_rot_fail(&r) == 100, "a connection that answered: 100 ms "
	    "again");
	ok = 1;
	for (unsigned i = 0; i < 12; i++) {
		cats_chan_rot_up(&r);
		if (cats_chan_rot_fail(&r) != (i < 8 ? 200 + 100 * i : 1000))
			ok = 0;
	}
	T_OK(ok, "a peer that closes at once (a refused certificate): 200 ms "
	    "growing to 1 s, not 100 ms each time");
	cats_chan_rot_up(&r);
	cats_chan_rot_answered(&r);
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
	cats_chan_rot_answered(&r);
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

	/* Following: kept to rank 1 whatever fails, with one endpoint's
	 * backoff; unpinned, the rotation goes on from there. */
	cats_chan_rot_init(&r, 3);
	cats_chan_rot_up(&r);
	cats_chan_rot_pin(&r, 1);
	T_OK(r.cur == 1 && r.pin == 1, "pinned to 1: it is cur");
	cats_chan_rot_up(&r);
	T_OK(r.switches == 1, "on the pinned one: a switch");
	ok = 1;
	for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (cats_chan_rot_fail(&r) != want[i] || r.cur != 1)
			ok = 0;
	T_OK(ok, "pinned: failures retry it alone, 100 ms growing to 1 s");
	cats_chan_rot_up(&r);
	cats_chan_rot_answered(&r);
	T_OK(cats_chan_rot_fail(&r) == 100 && r.cur == 1,
	    "pinned, connection lost: the same one, 100 ms later");
	cats_chan_rot_pin(&r, 3);
	T_OK(r.pin == 3 && cats_chan_rot_fail(&r) == 0 && r.cur == 2,
	    "unpinned: the rotation goes on, the next at once");
	cats_chan_rot_pin(&r, 0);
	cats_chan_rot_up(&r);
	T_OK(r.cur == 0 && r.switches == 2, "pinned to 0: a second switch");

	/* Liveness: a 3 s deadline, armed from the start (several
	 * endpoints); a record at 2.9 s pushes it on. */
	struct cats_chan_live l;
	cats_chan_live_init(&l, 3000, true);
	cats_chan_live_up(&l, 10000);
	T_OK(!cats_chan_live_dead(&l, 10000), "connected: alive");
	T_OK(!cats_chan_live_dead(&l, 12999), "2999 ms of silence: alive");
	T_OK(cats_chan_live_dead(&l, 13000), "3000 ms of silence: dead");
	cats_chan_live_up(&l, 20000);
	cats_chan_live_rx(&l, false, 22900);
	T_OK(!cats_chan_live_dead(&l, 25000), "a record at 2.9 s: alive at 5 s");
	T_OK(cats_chan_live_dead(&l, 25900), "and dead 3 s after it");
	/* A record stamped before the last (a clock read earlier) does not
	 * move the deadline back. */
	cats_chan_live_rx(&l, false, 21000);
	T_OK(l.last == 22900, "an older time does not move it back");
	/* Keepalives every second keep it alive for a minute; then a freeze. */
	cats_chan_live_up(&l, 100000);
	uint64_t t = 100000;
	ok = 1;
	for (int i = 0; i < 60; i++) {
		t += 1000;
		if (cats_chan_live_dead(&l, t - 1))
			ok = 0;
		cats_chan_live_rx(&l, true, t);
	}
	T_OK(ok, "keepalives every second: alive for 60 s");
	uint64_t dead_at = 0;
	for (uint64_t u = t; u < t + 10000 && !dead_at; u += 100)
		if (cats_chan_live_dead(&l, u))
			dead_at = u;
	T_OK(dead_at == t + 3000, "frozen: dead at the deadline (%llu ms)",
	    (unsigned long long)(dead_at - t));
	/* Not armed (one endpoint, nothing said yet): never dead, until a
	 * keepalive arms it for good, across connections. */
	cats_chan_live_init(&l, 3000, false);
	cats_chan_live_up(&l, 0);
	T_OK(!cats_chan_live_dead(&l, 1000000), "unarmed: a silent peer kept");
	cats_chan_live_rx(&l, false, 1000000);
	T_OK(!l.armed, "a record other than a keepalive does not arm it");
	cats_chan_live_rx(&l, true, 1000001);
	T_OK(l.armed && cats_chan_live_dead(&l, 1003001),
	    "a keepalive arms it: dead 3 s later");
	cats_chan_live_up(&l, 2000000);
	T_OK(l.armed && cats_chan_live_dead(&l, 2003000),
	    "armed still on the next connection");
	/* No deadline (--ctl-deadline 0): never dead. */
	cats_chan_live_init(&l, 0, true);
	cats_chan_live_up(&l, 0);
	T_OK(!cats_chan_live_dead(&l, UINT64_C(1) << 40), "deadline 0: never");

	/* A frozen owner as timed by a clock: the forwarder on 0 of 2 hears
	 * its last keepalive at 0; the standby owns and listens from 2300
	 * ms.  The check every 100 ms finds it dead at 3000, the new owner
	 * is tried 100 ms after: on it at 3100, 3 s and a round's delay. */
	cats_chan_rot_init(&r, 2);
	cats_chan_rot_up(&r);
	cats_chan_live_init(&l, 3000, true);
	cats_chan_live_up(&l, 0);
	t = 0;
	while (!cats_chan_live_dead(&l, t))
		t += 100;
	uint64_t dead = t;
	for (;;) {
		t += cats_chan_rot_fail(&r);
		if (r.cur == 1 && t >= 2300)
			break;
	}
	cats_chan_rot_up(&r);
	T_OK(dead == 3000 && t == 3100 && r.switches == 1,
	    "frozen owner: dead at %llu ms, on the new owner at %llu ms",
	    (unsigned long long)dead, (unsigned long long)t);

	/* 0 endpoints is read as 1. */
	cats_chan_rot_init(&r, 0);
	T_OK(r.n == 1 && cats_chan_rot_fail(&r) == 100 && r.cur == 0,
	    "no endpoints: read as one");
	return t_done();
}
