/*
 * sma_uc.h - the C-SMA's update controller (seed 000 §7.2, §7.3, §9.1,
 * §9.2, §11): between the core's change events and the metric records
 * that leave, it applies the policy and the transformations, decides what
 * is worth sending and when, and keeps the view the C-PS should hold (the
 * "advertised" view).  Pure: time comes in as `now`.
 *
 * For every entry the controller keeps two sets of values: `cur`, the
 * core's entry after the policy rules (cats-sma-policy(5)), the safety
 * margin and the computing-time bounds; and `adv`, what was last
 * advertised.  A change of cur is classified against adv:
 *
 *   critical  discovery, withdrawal, health or state change, new locator
 *             or port: sent at the end of the change set, before anything
 *             routine, past the minimum interval, maintenance windows and
 *             the token bucket;
 *   routine   GAS beyond gas-threshold (10 %) or gas-threshold-abs (50),
 *             computing time beyond comp-time-threshold (20 %), security
 *             level, price or reputation changed, a metric appeared or
 *             went, a new policy changed anything: gathered for `batch`,
 *             at most every min-interval per entry, a token per record,
 *             held while a SUPPRESS_UPDATES rule holds (maintenance);
 *   minor     flags, extension metrics, report times: ride along with the
 *             next record of the entry and the heartbeats.
 *
 * Dampening (RFC 2439 style): each health or state flap adds a penalty
 * that halves every half-life; above damp-suppress the entry is damped
 * until the penalty decays below damp-reuse.  A damped entry's changes
 * that make it less attractive (worse health, withdrawal) still leave at
 * once; the others wait for reuse.  What leaves is, field by field, the
 * less attractive of adv and cur: nothing more attractive than what was
 * last advertised leaves while the entry is suppressed.  Observe mode
 * computes and audits the penalties and holds nothing.
 *
 * Sites: a site aggregate is the sum of its entries as advertised (what
 * the C-PS holds) and travels in the record that changed it; it has no
 * thresholds, interval, windows or dampening of its own.
 *
 * Heartbeat: a full snapshot (op heartbeat) every `heartbeat`, jittered;
 * with refresh on (or auto and the C-PS said it takes them) a refresh
 * record instead, and a full heartbeat every full-every-th time.  Records
 * are numbered in one epoch; a snapshot is parts 1..N of at most 256
 * entries with consecutive sequence numbers.
 *
 * With control off every change (minor ones included) leaves at the end of
 * its change set, as one delta after the withdrawals.
 */
#ifndef CATS_SMA_UC_H
#define CATS_SMA_UC_H

#include "sma/sma.h"
#include "sma/sma_policy.h"

/* What a record is, for the sender's queue. */
enum sma_uc_kind {
	SMA_UC_CRITICAL,	/* withdrawals and critical deltas */
	SMA_UC_ROUTINE,		/* routine deltas */
	SMA_UC_SNAPSHOT,	/* a part of a full or heartbeat snapshot */
	SMA_UC_REFRESH,		/* a refresh (keepalive) */
};

typedef int (*sma_uc_emit_fn)(void *arg, const struct cats_rec *r, int kind);

struct sma_uc;

/*
 * A controller on a configuration and a core (both outlive it, or are
 * replaced through sma_uc_reconf); records are numbered from seq + 1.
 */
struct sma_uc *sma_uc_new(const struct sma_conf *c, const struct sma *core,
    uint64_t epoch, uint64_t seq, sma_uc_emit_fn emit, void *arg);
void sma_uc_free(struct sma_uc *u);
void sma_uc_reconf(struct sma_uc *u, const struct sma_conf *c, uint64_t now);
/* The core's event callback: pass it to sma_new() with the controller. */
void sma_uc_event(void *arg, const struct sma_event *ev);
/* Late binding of the core (sma_new needs the callback first). */
void sma_uc_set_core(struct sma_uc *u, const struct sma *core);

/*
 * A new policy (NULL: none), owned by the controller from now on: every
 * entry is evaluated again and what changed is sent (the Policy Change
 * Trigger).
 */
void sma_uc_set_policy(struct sma_uc *u, struct sma_policy *p, uint64_t now);
const struct sma_policy *sma_uc_policy(const struct sma_uc *u);

/*
 * Send what waits (the end of a run): routine entries past their batch,
 * minimum interval and token bucket; held entries (maintenance window,
 * dampening) stay held.
 */
void sma_uc_drain(struct sma_uc *u, uint64_t now);

/* Run what is due at now; returns the next deadline (0: none). */
uint64_t sma_uc_tick(struct sma_uc *u, uint64_t now);
uint64_t sma_uc_next_deadline(const struct sma_uc *u);

/* A full snapshot now (op full, or heartbeat): the whole view. */
int sma_uc_snapshot(struct sma_uc *u, uint64_t now, int op);
/* Mark the core's entries as advertised without sending (a restored
 * state in cron mode: the C-PS already has them). */
void sma_uc_seed(struct sma_uc *u, uint64_t now);
/* A withdrawal of a saved entry too old to restore (cron mode). */
int sma_uc_withdraw_saved(struct sma_uc *u, const struct cats_entry *e,
    int reason, uint64_t now);

/* The C-PS says whether it takes refresh records (ack refresh). */
void sma_uc_peer_refresh(struct sma_uc *u, bool ok);
/* The sender's load (queue fill) in ppm: above [update] load, routine
 * records leave their optional metrics (extensions) out. */
void sma_uc_set_load(struct sma_uc *u, uint64_t ppm);

uint64_t sma_uc_seq(const struct sma_uc *u);
/* Number the next records above seq (the C-PS holds a later one). */
void sma_uc_renumber(struct sma_uc *u, uint64_t seq);
uint64_t sma_uc_epoch(const struct sma_uc *u);

/*
 * The advertised view: every entry the C-PS should hold, as record maps
 * (valid during the call), and every site.
 */
void sma_uc_view(const struct sma_uc *u,
    void (*fn)(void *arg, const struct cats_entry *e), void *arg);
size_t sma_uc_count(const struct sma_uc *u);

/* Counters (cats-sma(1) STATISTICS). */
struct sma_uc_stats {
	uint64_t records, full, heartbeats, deltas, withdraws, refreshes;
	uint64_t entries_sent;
	uint64_t trig_discovery, trig_withdraw, trig_health, trig_metric,
	    trig_policy, trig_locator;
	uint64_t sup_threshold, sup_interval, sup_window, sup_damp, sup_bucket;
	uint64_t coalesced, omitted;
	uint64_t damp_suppressed, damp_observed, damp_reused;
	uint64_t damped;	/* entries damped now */
	uint64_t pending;	/* entries waiting now */
	uint64_t last_full;	/* time of the last full or heartbeat snapshot */
};
const struct sma_uc_stats *sma_uc_stats(const struct sma_uc *u);

#endif
