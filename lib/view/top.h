/*
 * top.h - the live look of cats-top(1): one screen from two scrapes of a
 * daemon's /metrics (view/prom.h), what ipvsadm -L --rate, conntrack -S
 * and bgpctl show give their users, for a cats daemon:
 *
 *   the header    the tool and its id, up since, restarts seen
 *   RATES         the tool's headline counters per second over the
 *                 interval, and their totals (new flows, requests,
 *                 packets, decisions...)
 *   STATE         its gauges now (active bindings, pending flows and
 *                 packets, sessions, connections, stages running...)
 *   DROPS         every counter whose name says it is a drop or a refusal
 *                 (drop, fail, refus, reject, bad, error, lost, evict,
 *                 timeout, expired, unauth, replay, limited, too_), that
 *                 is not zero: per second and total, the fastest first
 *   LATENCY       each histogram: observations per second, mean, and the
 *                 50th, 90th and 99th percentiles of the interval
 *                 (interpolated in its buckets, as histogram_quantile())
 *
 * Rates are over the interval between the two scrapes; the first screen
 * (no previous scrape, or a restart: start_time moved or a counter went
 * back) is over the process's life when it says when it started.
 * Library code: times are passed in (seconds).
 */
#ifndef CATS_VIEW_TOP_H
#define CATS_VIEW_TOP_H

#include <stdbool.h>

#include "base/cats.h"
#include "view/prom.h"

struct cats_top {
	bool all;		/* every counter in RATES, not the headline */
	unsigned restarts;	/* restarts seen so far */
	unsigned frames;
};

/*
 * Append one screen to out: cur scraped at now (seconds since the epoch),
 * prev dt seconds before (NULL: none).  -1 out of memory.
 */
int cats_top_frame(struct cats_top *t, const struct cats_prom *prev,
    const struct cats_prom *cur, double now, double dt, struct cats_buf *out);

#endif
