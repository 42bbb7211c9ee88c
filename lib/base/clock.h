/*
 * clock.h - the one clock of every cats tool.
 *
 * Library code never reads the time itself: it takes `now` (milliseconds
 * since the Unix epoch) as an argument.  Tools get `now` from here.  In
 * replay mode the clock is driven by the timestamps of the records read, so
 * that the same input always gives the same output; it never goes back.
 */
#ifndef CATS_CLOCK_H
#define CATS_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

enum cats_clock_mode {
	CATS_CLOCK_REAL,	/* CLOCK_REALTIME */
	CATS_CLOCK_REPLAY,	/* driven by cats_clock_observe() */
};

void cats_clock_set_mode(enum cats_clock_mode m);
bool cats_clock_replay(void);
/* Now, in milliseconds since the epoch. */
uint64_t cats_clock_now(void);
/* Replay: advance to a record's timestamp (never backwards). */
void cats_clock_observe(uint64_t ts_ms);
/* Replay: set the clock (tests, and a final advance at end of input). */
void cats_clock_set(uint64_t ts_ms);
/* A monotonic reading in nanoseconds, for measuring durations only. */
uint64_t cats_clock_mono_ns(void);

/* The next number of a seeded generator (splitmix64): reproducible runs. */
uint64_t cats_rand_next(uint64_t *state);
/*
 * interval +/- jitter_ppm millionths of it, uniformly, drawn from state;
 * at least 1.
 */
uint64_t cats_jitter(uint64_t interval, uint64_t jitter_ppm, uint64_t *state);

#endif
