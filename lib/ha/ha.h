/*
 * ha.h - the binding state of cats-bind replicated in etcd, and the
 * ownership that fences it (cats-bind(1), REDUNDANCY): active-standby.
 *
 * Keys under a prefix P (default "/cats/cps/"):
 *
 *   P owner                   the owner's name, bound to its lease; the
 *                             ownership epoch is this key's create_revision
 *   P next                    the next binding id (decimal)
 *   P b/ID                    a binding, whole, in its current state (the
 *                             record a journal snapshot holds: CBOR), or
 *                             its tombstone (its remove record) for 30 s
 *
 * ID is 16 hex digits.  The journal records of one commit (bind_journal.h)
 * name the bindings it changed; each is written as the table holds it
 * then, so a takeover restores through bind_restore() what a journal
 * replay would.  Tombstones let a standby's warm copy follow removals
 * from the keys changed since its last revision (min_mod_revision); the
 * owner deletes them 30 s later, and a standby whose last sync is older
 * than 10 s reads everything again.
 *
 * Every write is one txn (several above 120 operations) whose compare is
 * "create_revision(P owner) == epoch": a write of a fenced owner fails at
 * the store.  The epoch is the table's epoch, so every binding the owner
 * sends carries it and the forwarders refuse an older one: fenced at the
 * data plane too.  Writes of one commit are coalesced per binding (etcd
 * refuses a txn that names a key twice): one put each.
 *
 * The calls block, each bounded by the etcd timeout; the clock is the
 * caller's (conf.clock), read around calls to know when they were sent.
 */
#ifndef CATS_HA_H
#define CATS_HA_H

#include "bind/bind.h"
#include "ha/etcd.h"
#include "ha/ha_own.h"

struct ha_conf {
	const char *urls;	/* etcd endpoints, comma-separated */
	const char *prefix;	/* key prefix ("/cats/cps/") */
	const char *name;	/* this instance (the owner key's value) */
	uint64_t lease_ms;	/* lease TTL (2000) */
	uint64_t timeout_ms;	/* every call (0: lease / 4) */
	uint64_t (*clock)(void);	/* ms */
};

struct ha_stats {
	uint64_t campaigns, takeovers, txns, ops, puts, deletes, coalesced;
	uint64_t txn_bytes;	/* request bytes of state writes */
	uint64_t fenced, write_failures, restored, restore_refused;
	uint64_t ignored;	/* journal records with no state (hellos) */
	uint64_t syncs, tombs_deleted, write_retries;
	uint64_t watches, watch_events;	/* a standby's */
};

struct ha;

struct ha *ha_new(const struct ha_conf *c, char *err, size_t errlen);
/* Free; an owner revokes its lease first (a clean handover). */
void ha_free(struct ha *h);

/*
 * One campaign: 1 won (ha_epoch()), 0 another instance owns (ha_owner()
 * names it), -1 with err when etcd did not answer or refused.
 */
int ha_campaign(struct ha *h, char *err, size_t errlen);
const char *ha_owner(const struct ha *h);
uint64_t ha_epoch(const struct ha *h);
struct ha_own *ha_own(struct ha *h);
const struct ha_stats *ha_stats(const struct ha *h);
const struct etcd_stats *ha_etcd_stats(const struct ha *h);

/*
 * A standby's warm copy kept by a watch of the prefix (read whole first
 * when it is empty or older than 10 s), for up to ms: 1 as soon as the
 * owner key goes (deleted, or its lease expired: campaign now), 0 when
 * the time ran out, -1 with err when the watch failed.
 */
int ha_standby_watch(struct ha *h, uint64_t ms, char *err, size_t errlen);
/*
 * Once owner: the warm copy brought up to etcd and restored into t
 * (empty): every binding in its state, the next id, and t's epoch set to
 * ours; t is the table the commits read.  0, or -1 with err.
 */
int ha_restore(struct ha *h, struct bind_table *t, uint64_t now, char *err,
    size_t errlen);

/* Queue a journal record (the table's journal callback). */
int ha_append(struct ha *h, const struct cats_rec *r);
/*
 * Write what is queued (and next_id) under the fence, tried again (and
 * the lease renewed) while etcd does not answer, up to the renew
 * deadline: 0, or -1 when it could not be written, etcd refused it, or we
 * are not the owner any more (err says which;
 * ha_own(h)->state is HA_LOST when the ownership ended).  Nothing the
 * queue covers may be sent after -1.  An empty queue only checks the
 * ownership.
 */
int ha_commit(struct ha *h, uint64_t next_id, char *err, size_t errlen);
/*
 * The same in three steps (a pipelined commit, seq.h cats_commit): begin
 * on the caller's thread checks the ownership and builds the txns from
 * the queue and the table as they are now (-1 with err; 0 nothing to
 * write; 1 work will write); work writes them (the etcd calls, retries
 * and renewals) and may run on another thread: until end, the caller
 * calls nothing of h but ha_append(); end gets work's answer (-1 with
 * err).  begin's 0 needs neither work nor end.
 */
int ha_commit_begin(struct ha *h, uint64_t next_id, char *err,
    size_t errlen);
int ha_commit_work(struct ha *h);
int ha_commit_end(struct ha *h, int rc, char *err, size_t errlen);
/* Renew the lease when due: 0, or -1 when the ownership ended (err). */
int ha_tick(struct ha *h, char *err, size_t errlen);

/* ---- pure helpers (tests) ---- */

/* The state operation of a journal record on binding *id: a put (the
 * binding, or its commit by self), a tombstone, or none (hello, stats). */
enum { HA_OP_NONE, HA_OP_PUT, HA_OP_PUT_COMMIT, HA_OP_DELETE };
int ha_op_of(const struct cats_rec *r, const char *self, uint64_t *id);

#endif
