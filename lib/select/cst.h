/*
 * cst.h - the Computing Service Table of the C-PS (001 §5; 000 §5, §9).
 *
 * The table holds one entry per (CS-ID, CSCI-ID): the metrics a C-SMA
 * advertised for a service contact instance, the site and egress node of the
 * advertisement, and the entry's soft state.  It is fed by `metric` records,
 * whichever way they arrive (a file, a stream, the authenticated ingest
 * endpoint); authentication, nonces and timestamp windows are the caller's
 * business, sequence and epoch ordering is the table's.
 *
 * Operations (the `op` of a metric record):
 *   full       a snapshot of everything the C-SMA advertises.  It may come
 *              in parts (part 1..parts, consecutive sequence numbers in one
 *              epoch); entries are upserted as each part arrives, and when
 *              the last part of an unbroken snapshot is in, the C-SMA's
 *              entries that the snapshot did not name are removed.
 *   delta      upsert the listed entries; a field absent from an entry keeps
 *              its old value.
 * An entry's own site or egress (a domain C-SMA relaying several sites)
 * wins over the record's.
 *   withdraw   remove the listed entries (only those owned by this C-SMA).
 *   release    not taken here: the operator's action, cats_cst_release().
 *   heartbeat  with entries: a full snapshot (000 §9.2); without: a refresh.
 *   refresh    extend the soft state of the C-SMA's entries (the listed ones
 *              if any are listed) that are still fresh.  An expired entry is
 *              not revived by a refresh; it needs a full or delta.
 *
 * Ordering per C-SMA (sma_id): an epoch below the current one, or a sequence
 * at or below the last applied one in the same epoch, is STALE and not
 * applied.  A new epoch, a sequence gap or a broken multi-part snapshot is
 * applied and sets `resync`: the caller should ask the C-SMA for a full sync.
 *
 * Soft state: an entry is fresh while now < base + ttl, where base is
 * min(record ts, now) of the record that last wrote or refreshed it (a
 * buffered old advertisement does not look newer than it is) and ttl is the
 * record's ttl_ms, else the entry's ttl_ms, else the table default.  Expired
 * entries stay visible (as expired) until cats_cst_expire() purges them.
 *
 * Ownership (001 §9, 000 §12): an instance belongs to the C-SMA that
 * advertises it: an instance is a CSCI-ID of a CS-ID.  A record of another
 * C-SMA that names it (a full, delta or heartbeat entry with the same CS-ID
 * and the same CSCI-ID compared without ASCII case and surrounding white
 * space, while the owner's entry is fresh; a refresh or withdraw entry of
 * the owner's exact key, fresh or not) is refused whole (result BAD,
 * `conflict`, the owner in `owner`) and changes nothing, not even the
 * sender's position.  The instance changes hands when its owner withdraws
 * it, when all the owner's entries of it have expired (`taken_over`), or by
 * cats_cst_release().
 *
 * Scope: a C-SMA given one (cats_cst_scope) may advertise only locators
 * inside its prefixes and egresses among its names; a record with an entry
 * outside is refused whole (result BAD, `forbidden`).
 *
 * The generation grows by one on every applied change of content (insert,
 * update, removal); refreshes do not change it.  Decisions record it.
 */
#ifndef CATS_CST_H
#define CATS_CST_H

#include "rec/rec.h"

struct cats_cst_entry {
	char *cs_id;
	char *csci_id;
	char *sma_id;		/* C-SMA owning the entry */
	char *site;		/* of the advertisement, may be NULL */
	char *egress;		/* egress node of the site, may be NULL */
	uint64_t egress_h;	/* cats_hash_str(egress), 0 without one */
	uint64_t epoch;		/* C-SMA epoch that last wrote it */
	/* Metrics; presence bits are CATS_ENT_* of struct cats_entry. */
	uint64_t has;
	int health;		/* enum cats_health */
	int state;		/* enum cats_sci_state */
	uint64_t gas, comp_time_ms, price, reputation, security_level;
	struct cats_ip locator;	/* af 0: none */
	uint64_t port;
	uint64_t sci_gen;	/* the entry's gen (SCI report sequence) */
	uint64_t sci_ts;	/* the entry's ts */
	struct cats_kv *ext;
	size_t next;
	char **flags;
	size_t nflags;
	/* Soft state. */
	uint64_t base;		/* ms */
	uint64_t ttl_ms;
	uint64_t expires;	/* base + ttl_ms */
	uint64_t gen;		/* table generation of the last change */
	/* Reserved for a selector's per-entry cache (see select.c). */
	uint64_t memo;
	/* Internal. */
	uint64_t snap;
	size_t cs_pos, sma_pos, inst_pos;
	char egress_buf[CATS_ID + 1];
};

/* What a C-SMA's stream looks like from the table. */
struct cats_cst_peer {
	uint64_t epoch;
	uint64_t seq;		/* last sequence applied in the epoch */
	bool has_seq;
	uint64_t last_ts;	/* ts of the last applied record */
	size_t entries;
};

struct cats_cst_result {
	int result;		/* enum cats_ack_result: OK, STALE or BAD */
	bool resync;		/* ask this C-SMA for a full sync */
	size_t applied;		/* entries inserted, updated or refreshed */
	size_t removed;
	size_t refused;		/* table full, another C-SMA's, expired */
	size_t taken_over;	/* entries whose expired owner was replaced */
	bool conflict;		/* refused: an instance of another C-SMA */
	bool forbidden;		/* refused: outside the C-SMA's scope */
	uint64_t epoch, seq;	/* the C-SMA's position after this record */
	char owner[CATS_ID + 1];	/* conflict: the owner; taken_over: the
					 * previous one */
	char reason[300];
};

struct cats_cst;

/*
 * A hook on what happens to entries (hierarchical aggregation: a domain
 * C-SMA follows its subordinates' table): an entry was inserted or
 * updated, refreshed, or is about to be removed (withdrawn, replaced by a
 * snapshot, purged).
 */
enum { CATS_CST_UPSERT, CATS_CST_REFRESH, CATS_CST_REMOVE };
typedef void (*cats_cst_hook_fn)(void *arg, int what,
    const struct cats_cst_entry *e);

/* A table; default_ttl_ms for entries whose records name no ttl, at most
 * max_entries entries (0: 1,000,000). */
struct cats_cst *cats_cst_new(uint64_t default_ttl_ms, size_t max_entries);
void cats_cst_free(struct cats_cst *t);

void cats_cst_set_hook(struct cats_cst *t, cats_cst_hook_fn fn, void *arg);

/*
 * What sma_id may advertise: locators inside one of the prefixes and
 * egresses among the names, each a list separated by commas or white space
 * ("*" or NULL: any).  Replaces the C-SMA's scope.  Returns 0, or -1 with
 * a reason in err (a bad prefix, more than 256 items, out of memory).
 */
int cats_cst_scope(struct cats_cst *t, const char *sma_id,
    const char *locators, const char *egresses, char *err, size_t errlen);

/*
 * The operator's release (op release, cats-select's control stream): remove
 * the listed (CS-ID, CSCI-ID) entries whoever owns them, so that another
 * C-SMA may advertise the instance.  Ordering is not checked; res->removed
 * counts them and res->owner names the last owner.
 */
int cats_cst_release(struct cats_cst *t, const struct cats_metric *m,
    struct cats_cst_result *res);

/* Apply one metric record at time now.  Returns res->result. */
int cats_cst_apply(struct cats_cst *t, const struct cats_metric *m,
    uint64_t now, struct cats_cst_result *res);

/* Remove entries expired for at least grace_ms; returns how many. */
size_t cats_cst_expire(struct cats_cst *t, uint64_t now, uint64_t grace_ms);

/* Is the entry's soft state valid at now (now < expires)? */
static inline bool
cats_cst_fresh(const struct cats_cst_entry *e, uint64_t now)
{
	return now < e->expires;
}

/* The entries of one CS-ID in insertion order; *v is valid until the next
 * change of the table. */
size_t cats_cst_lookup(const struct cats_cst *t, const char *cs_id,
    struct cats_cst_entry *const **v);
/*
 * The same, with the CS-ID's generation: it changes whenever an entry of
 * the CS-ID is inserted, updated or removed (not on refresh), and never
 * repeats, so that a cache of per-CS-ID results can check it.  cs_h is
 * cats_hash_str(cs_id), which the service catalogue keeps (cats_svc.cs_h).
 */
size_t cats_cst_candidates(const struct cats_cst *t, const char *cs_id,
    uint64_t cs_h, struct cats_cst_entry *const **v, uint64_t *gen);
const struct cats_cst_entry *cats_cst_get(const struct cats_cst *t,
    const char *cs_id, const char *csci_id);
/* A C-SMA's position (epoch, sequence); false if it never advertised. */
bool cats_cst_peer(const struct cats_cst *t, const char *sma_id,
    struct cats_cst_peer *p);

uint64_t cats_cst_gen(const struct cats_cst *t);
size_t cats_cst_count(const struct cats_cst *t);

/*
 * The table as metric records (op full), one snapshot per (C-SMA, site,
 * egress) in sorted order, at most 1024 entries per part.  Each entry's
 * ttl_ms is its remaining lifetime at now (0 when expired, and its state
 * then reads STALE), so that applying a dump taken at now rebuilds the same
 * soft state.  fn gets each record (valid during the call); a non-zero
 * return stops the dump and is returned.
 */
int cats_cst_dump(const struct cats_cst *t, uint64_t now,
    int (*fn)(const struct cats_rec *r, void *arg), void *arg);

#endif
