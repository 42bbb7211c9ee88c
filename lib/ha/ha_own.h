/*
 * ha_own.h - the ownership of a redundant C-PS, as pure logic: the owner
 * holds an etcd lease bound to its owner key and may act (admit, install,
 * write state) only before its renew deadline.
 *
 * A lease alone is no mutual exclusion (etcd#11457, #10125: a paused
 * process or a drifting clock outlives its lease without knowing), so the
 * owner stops at a deadline shorter than its TTL, counted from the moment
 * it *sent* the request that started or renewed the lease (the lease runs
 * from no earlier than that on the server):
 *
 *   deadline = sent + renew,  renew = TTL x 3/4   (1.5 s of a 2 s lease)
 *
 * renewed every TTL/4, so that two keepalives can be lost before the
 * deadline.  A keepalive whose answer has no TTL (the lease is gone), a
 * write whose compare failed (another owner) or the deadline passing ends
 * the ownership for good: HA_LOST, with the reason; the process then
 * leaves (its supervisor starts it again, as a standby).  Time comes in as
 * `now` (ms); nothing here does I/O.
 */
#ifndef CATS_HA_OWN_H
#define CATS_HA_OWN_H

#include <stdbool.h>
#include <stdint.h>

enum { HA_STANDBY, HA_OWNER, HA_LOST };
extern const char *const ha_state_names[];

struct ha_own {
	uint64_t ttl_ms;	/* the lease asked for */
	uint64_t renew_ms;	/* acts this long after a (re)new sent */
	uint64_t keepalive_ms;	/* renew period */
	uint64_t retry_ms;	/* after a failed keepalive */
	int state;
	int64_t lease;
	uint64_t epoch;		/* the owner key's create_revision */
	uint64_t deadline;	/* acts while now < deadline */
	uint64_t next_ka;	/* the next keepalive is due */
	uint64_t renewals, renew_failures;
	const char *why;	/* why HA_LOST */
};

/* Standby, with a lease of ttl_ms (rounded up to whole seconds, at least
 * 2 s: etcd's minimum). */
void ha_own_init(struct ha_own *o, uint64_t ttl_ms);
/*
 * The campaign won: the lease granted with ttl_s (seconds, as etcd
 * answered) on a request sent at sent, the owner key created at epoch.
 */
void ha_own_won(struct ha_own *o, int64_t lease, int64_t ttl_s,
    uint64_t epoch, uint64_t sent, uint64_t now);
/* A keepalive sent at sent answered ttl_s (0: the lease is gone). */
void ha_own_renewed(struct ha_own *o, int64_t ttl_s, uint64_t sent,
    uint64_t now);
/* A keepalive got no answer: retried sooner. */
void ha_own_renew_failed(struct ha_own *o, uint64_t now);
/* A fenced write: another owner. */
void ha_own_fenced(struct ha_own *o);
/* The state at now (HA_OWNER turns HA_LOST at the deadline). */
int ha_own_check(struct ha_own *o, uint64_t now);
/* Owner and before the deadline. */
bool ha_own_may_act(struct ha_own *o, uint64_t now);
bool ha_own_keepalive_due(const struct ha_own *o, uint64_t now);

#endif
