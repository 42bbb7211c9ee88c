/*
 * clock.c - real or replayed time.
 */
#include <time.h>

#include "clock.h"

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
