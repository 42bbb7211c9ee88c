/*
 * clock.c - real or replayed time.
 */
#include <time.h>

#include "base/clock.h"

static enum cats_clock_mode mode = CATS_CLOCK_REAL;
static uint64_t replay_now;

void
cats_clock_set_mode(enum cats_clock_mode m)
{
	mode = m;
}

bool
cats_clock_replay(void)
{
	return mode == CATS_CLOCK_REPLAY;
}

uint64_t
cats_clock_now(void)
{
	if (mode == CATS_CLOCK_REPLAY)
		return replay_now;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void
cats_clock_observe(uint64_t ts)
{
	if (ts > replay_now)
		replay_now = ts;
}

void
cats_clock_set(uint64_t ts)
{
	replay_now = ts;
}

uint64_t
cats_clock_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t
cats_rand_next(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

uint64_t
cats_jitter(uint64_t interval, uint64_t jitter_ppm, uint64_t *state)
{
	const int64_t ppm = 1000000;
	int64_t r = (int64_t)(cats_rand_next(state) % (2 * ppm + 1)) - ppm;
	__int128 d = (__int128)interval * ((__int128)ppm * ppm +
	    (__int128)jitter_ppm * r) / ((__int128)ppm * ppm);
	return d < 1 ? 1 : (uint64_t)d;
}
