/*
 * ha.h - the binding state of cats-bind replicated in etcd, and the
 * ownership that fences it (cats-bind(1), REDUNDANCY): active-standby.
 *
 * Keys under a prefix P (default "/cats/cps/"):
 *
 *   P owner                   the owner's name, bound to its lease; the
 *                             ownership epoch is this key's create_revision
 *   P l/SEQ                   a log entry (ha_log.h): the bindings one
 *                             commit changed, each as the table held it
 *                             then (or its remove record), and the
 *                             pending requests it took (their path-reqs),
 *                             in one value; or the pending requests a
 *                             fold carried, not bound yet
 *   P c/LO                    a chunk (ha_log.h): the bindings of ids LO
 *                             up to the end of LO's range of
 *                             HA_CHUNK_IDS (or up to the next chunk of
 *                             the range), whole, in their latest state,
 *                             as of the entry SEQ it names
 *   P next                    the next binding id (decimal), as folded
 *   P b/ID                    an older cats-bind's binding: read, folded
 *                             into its chunk by a new owner and deleted
 *
 * ID, SEQ and LO are 16 hex digits.  A commit is one txn per log entry of
 * up to HA_LOG_TARGET bytes (a few hundred bindings): one key whatever
 * the number of bindings, where etcd's cost is per key (a single member
 * takes some 4,300 puts a second).  The owner's fold thread, off the
 * commits' path, merges the entries into the buckets it holds (every
 * binding, ha_fold.h) and rewrites the chunks of the buckets they changed
 * (a removed binding left out, an empty bucket one empty chunk, deleted
 * 30 s later), deleting the entries in the same fenced txn, once the
 * commits have been quiet 50 ms or 8,192 records wait: a few keys for
 * thousands of bindings, so the fold keeps up with the commits.  A
 * restore is the chunks and then the log in SEQ order; every record and
 * chunk carries the SEQ it is as of, so ha_fold.h's rules give the same
 * state in whatever order a standby sees them (the log by its watch, a
 * fold after it); a standby whose last sync is older than 10 s reads
 * everything again.  A new owner folds the log its predecessor left.
 *
 * Every write is a txn whose compare is "create_revision(P owner) ==
 * epoch": a write of a fenced owner fails at the store (its fold too).
 * The epoch is the table's epoch, so every binding the owner sends
 * carries it and the forwarders refuse an older one: fenced at the data
 * plane too.  Writes of one commit are coalesced per binding: one record
 * each.
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
	uint64_t log_raw_bytes;	/* their records' bytes, before deflate */
	uint64_t fenced, write_failures, restored, restore_refused;
	uint64_t ignored;	/* journal records with no state (hellos) */
	uint64_t syncs, tombs_deleted, write_retries;
	uint64_t watches, watch_events;	/* a standby's */
	/* the fold: rounds, binding records merged, txns, request bytes,
	 * failures, chunks written, records waiting */
	uint64_t folds, folded, fold_txns, fold_bytes, fold_failures;
	uint64_t fold_chunks;
	uint64_t log_backlog;
	/* pending requests: written, restored (to take again), restored
	 * past their deadline or bound, carried by the fold */
	uint64_t pending_written, pending_restored, pending_dropped;
	uint64_t pending_carried, pending_ended;
};

struct ha;

struct ha *ha_new(const struct ha_conf *c, char *err, size_t errlen);
/* Free; an owner stops its fold (what it has not folded stays in the
 * log) and revokes its lease (a clean handover). */
void ha_free(struct ha *h);

/*
 * One campaign: 1 won (ha_epoch()), 0 another instance owns (ha_owner()
 * names it), -1 with err when etcd did not answer or refused.
 */
int ha_campaign(struct ha *h, char *err, size_t errlen);
const char *ha_owner(const struct ha *h);
uint64_t ha_epoch(const struct ha *h);
struct ha_own *ha_own(struct ha *h);
/* The counters, the fold's as of now. */
const struct ha_stats *ha_stats(struct ha *h);
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

/*
 * The pending requests of the previous owners a restore found (their
 * path-reqs: not bound, their deadline not passed), for the new owner to
 * take again (bind_pending_again()); cleared by ha_pending_clear().
 */
size_t ha_pending_count(const struct ha *h);
const uint8_t *ha_pending_at(const struct ha *h, size_t i, size_t *len);
void ha_pending_clear(struct ha *h);

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
 * binding, or its commit by self), a tombstone, a pending request (a
 * path-req: *id is its transaction), a pending request's end without a
 * binding (an error record of its transaction), or none (hello,
 * stats). */
enum { HA_OP_NONE, HA_OP_PUT, HA_OP_PUT_COMMIT, HA_OP_DELETE,
	HA_OP_PENDING, HA_OP_PENDING_END };
int ha_op_of(const struct cats_rec *r, const char *self, uint64_t *id);

#endif
