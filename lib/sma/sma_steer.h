/*
 * sma_steer.h - site-local steering by a C-SMA co-located with an egress
 * CATS-Forwarder while it is partitioned from the C-PS (seed 000 §10.3,
 * cats-sma(1) LOCAL STEERING).  Pure: the caller passes the time in, the
 * northbound's state, and a function that writes the steer records.
 *
 * Off unless [steer] services names the CS-IDs that allow it.  During a
 * partition (the northbound sender in PARTITION), for at most [steer] max
 * of it, each instance of such a CS-ID that has a locator and has failed
 * in the cache (STALE or FAILED, UNHEALTHY, GAS 0, or gone from the cache
 * while redirected) is redirected to the best eligible instance of the
 * same CS-ID of this site: HEALTHY state (its soft state holds), health
 * HEALTHY or DEGRADED, GAS above 0, a locator; the most GAS, then the
 * least computing time, then the CSCI-ID.  A redirect keeps its target
 * while that one stays eligible; it moves to another when it does not
 * (replaced), and ends when the instance recovers, no candidate is left,
 * the service is no longer configured, or max runs out.  Partition
 * healing: once the C-PS is reachable again and the full sync that
 * follows is acknowledged (the sender connected with nothing queued),
 * every redirect ends (reason healed): the C-PS, holding the site's view
 * again, steers.  A C-SMA that steered asks for that full sync (the
 * caller forces it: sma_steer_wants_full()).
 *
 * Every decision is one steer record (cats-records(5)) and one audit line
 * (steer-redirect, steer-end, steer-refused, steer-heal).
 */
#ifndef CATS_SMA_STEER_H
#define CATS_SMA_STEER_H

#include "sma/sma.h"

struct sma_steer;

/* Write one steer record; -1 when it did not leave (counted). */
typedef int (*sma_steer_emit_fn)(void *arg, const struct cats_rec *r);

struct sma_steer *sma_steer_new(const struct sma_conf *c, uint64_t epoch,
    sma_steer_emit_fn emit, void *arg);
void sma_steer_free(struct sma_steer *st);
/* A new configuration (SIGHUP): services no longer named end at the next
 * update (reason unconfigured); max and the bound apply from now. */
void sma_steer_reconf(struct sma_steer *st, const struct sma_conf *c);
/* An event of the core (sma.h): what it touches is looked at again. */
void sma_steer_note(struct sma_steer *st, const struct sma_event *ev);

/* The northbound as the steering sees it. */
struct sma_steer_nb {
	bool partitioned;	/* the sender is in PARTITION */
	uint64_t since;		/* when the partition began */
	bool synced;		/* connected, nothing queued or in flight */
};
/* Decide at now from the core's cache and the northbound's state. */
void sma_steer_update(struct sma_steer *st, const struct sma *core,
    const struct sma_steer_nb *nb, uint64_t now);
/* The next time a decision falls due by the clock alone (max), 0: none. */
uint64_t sma_steer_next_deadline(const struct sma_steer *st);
/* The redirects in force, each as the steer record that made it, in seq
 * order (the admin's GET /steer; said again on a new connection). */
void sma_steer_view(const struct sma_steer *st,
    void (*fn)(void *arg, const struct cats_rec *r), void *arg);
/*
 * A new connection to the egress: the redirects in force and the ends that
 * did not leave while there was none (sma_steer_emit_fn said -1), all in
 * seq order (an egress refuses a seq below one it has taken), each with
 * its own seq, through emit.  The ends that leave are forgotten; the
 * count of them.
 */
size_t sma_steer_resend(struct sma_steer *st);
/* It steered in this partition: the heal must be a full sync (once). */
bool sma_steer_wants_full(struct sma_steer *st);

/* Counters (cats-sma(1) STATISTICS). */
struct sma_steer_stats {
	uint64_t redirects;	/* steer redirect records (new and replaced) */
	uint64_t replaced;	/* of those, a target that moved */
	uint64_t ends;		/* steer end records */
	uint64_t refused;	/* no candidate, or the bound reached */
	uint64_t heals;		/* partitions healed with redirects ended */
	uint64_t expired;	/* partitions that outlasted max */
	uint64_t failures;	/* records that did not leave */
	uint64_t active;	/* redirects in force */
	bool steering;		/* in a partition, within max */
};
const struct sma_steer_stats *sma_steer_stats(const struct sma_steer *st);

#endif
