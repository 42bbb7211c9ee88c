/*
 * bind.h - the binding manager of cats-bind: transactions, the flow state
 * machine of 001, steering bindings (forward and reverse as one record),
 * lifetimes, admission limits, forwarder commit and re-sync, and the table
 * a restart restores from the journal (bind_journal.h).
 *
 * The state machine (001, "Flow state machine"; normative):
 *
 *   ABSENT               -- new classified packet -> PENDING
 *   PENDING              -- service selection     -> DESTINATION_SELECTED
 *   DESTINATION_SELECTED -- no path               -> FAILED
 *   DESTINATION_SELECTED -- path reply            -> BINDING_READY
 *   BINDING_READY        -- forwarder commit      -> ACTIVE
 *   BINDING_READY        -- commit failure        -> FAILED
 *   ACTIVE               -- idle/hard expiry      -> DRAINING
 *   ACTIVE               -- path repair           -> ACTIVE
 *   ACTIVE               -- instance failure      -> FAILED | RECONNECT_REQUIRED
 *   DRAINING             -- reverse cleanup       -> ABSENT
 *   FAILED               -- pending cleanup       -> ABSENT
 *
 * and two edges the text requires where the figure is silent: PENDING ->
 * FAILED (the finite deadline of PENDING, or a selection failure) and
 * RECONNECT_REQUIRED -> ABSENT (its cleanup).  Every other move is refused
 * and counted.  Every transition goes through one checked function and is
 * reported to the trace callback with the transaction id.
 *
 * The table is compact: one 64-byte entry per flow (both directions) that
 * holds the client's address (IPv4 inline), the strings, decisions and
 * paths it shares with other flows interned and reference-counted, and two
 * open-addressing indexes of 32-bit entry numbers (by binding id and by
 * flow key).  A shared path is released with the last binding that
 * references it.
 *
 * Nothing here reads the clock or does I/O: time comes in as `now` (ms), and
 * records to send, to journal and transitions to log go out through the
 * callbacks of struct bind_io.
 */
#ifndef CATS_BIND_H
#define CATS_BIND_H

#include "rec/rec.h"

/* Reasons: refusals, failures, removals; the text is the error code. */
enum bind_reason {
	BR_OK,
	BR_TIMEOUT,		/* the transaction's deadline passed */
	BR_LATE_REPLY,		/* a path reply after its deadline */
	BR_DUP_TXN,		/* a transaction already decided */
	BR_DUP_FLOW,		/* the flow already has a binding or a txn */
	BR_UNKNOWN_TXN,
	BR_UNKNOWN_BINDING,
	BR_NO_DECISION,		/* a path reply without the decision it answers */
	BR_NO_FLOW,
	BR_JOIN_MISMATCH,	/* reply and decision are not one transaction */
	BR_NO_PATH,
	BR_PATH_ERROR,
	BR_PATH_CAPABILITY,	/* the headend cannot realize the path */
	BR_LIMIT_GLOBAL,
	BR_LIMIT_TENANT,
	BR_LIMIT_CLIENT,
	BR_SELECTION,		/* an upstream error failed the transaction */
	BR_COMMIT_FAILED,
	BR_COMMIT_TIMEOUT,
	BR_IDLE,
	BR_HARD,
	BR_REMOVED,		/* a forwarder removed an active binding */
	BR_INSTANCE_FAILED,
	BR_REPAIR_FAILED,
	BR_MOVE_REFUSED,	/* a reply would move an established flow */
	BR_STALE_EPOCH,
	BR_STALE_VERSION,
	BR_NOT_OWNER,		/* status from a forwarder the binding does not name */
	BR_ILLEGAL,		/* illegal transition */
	BR_NOMEM,
	BR_BAD,			/* a record the table cannot use */
	BR__N
};
extern const char *const bind_reason_names[];

enum bind_commit {
	BIND_COMMIT_BOTH,	/* egress installs first, then ingress */
	BIND_COMMIT_INGRESS,	/* ingress install commits; egress told too */
	BIND_COMMIT_NONE,	/* writing the binding out commits it */
};
extern const char *const bind_commit_names[];

struct bind_conf {
	uint64_t pending_ms;	/* deadline after the decision when no record
				   carries one (2000) */
	uint64_t commit_ms;	/* BINDING_READY until a forwarder commits (2000) */
	uint64_t drain_ms;	/* DRAINING / FAILED wait for removals (5000) */
	uint64_t repair_ms;	/* a path repair's deadline (2000) */
	uint64_t idle_ms;	/* idle lifetime when the decision has none (300 s) */
	uint64_t hard_ms;	/* hard lifetime when the decision has none (0: none) */
	uint64_t idle_grace_ms;	/* cats-bind's own idle backstop beyond idle_ms;
				   the forwarder reports expiry first (idle_ms) */
	int commit;		/* enum bind_commit */
	unsigned dataplanes;	/* bit per enum cats_dataplane; 0: all */
	uint32_t max_pending, max_bindings;	/* global caps */
	uint32_t tenant_pending, tenant_bindings;
	uint32_t client_pending, client_bindings;	/* 0: unlimited */
	size_t closed_memory;	/* recently closed transactions kept (65536) */
	const char *self;	/* identity in journal records ("cats-bind") */
};
void bind_conf_default(struct bind_conf *c);
/*
 * Set the admission limit of "NAME=N" (NAME one of pending, bindings,
 * tenant-pending, tenant-bindings, client-pending, client-bindings; N at
 * most 2^32-1, 0: unlimited): 0, or -1 with the reason in err.
 */
int bind_conf_limit(struct bind_conf *c, const char *s, char *err,
    size_t len);
/*
 * The data planes of a comma-separated list of their names (ip, ipip,
 * srv6, srmpls) as the bit mask of conf.dataplanes: 0, or -1 with the
 * reason in err.
 */
int bind_conf_dataplanes(const char *s, unsigned *mask, char *err,
    size_t len);

/* One transition (or a refused one) for the log. */
struct bind_trace {
	uint64_t now, txn, id;
	int from, to;		/* enum cats_flow_state */
	const char *event;	/* "path-reply", "forwarder-commit" ... */
	int reason;		/* enum bind_reason */
	bool refused;		/* an illegal transition, not applied */
};
/*
 * The line a transition is logged as: "txn=T id=I [refused ]FROM -> TO
 * (EVENT)[ reason=REASON]", truncated to len.
 */
void bind_trace_fmt(const struct bind_trace *tr, char *buf, size_t len);

struct bind_io {
	/*
	 * A record to send.  to == NULL: the output stream (every binding,
	 * error and repair request once); otherwise a forwarder id.
	 */
	void (*send)(void *arg, const struct cats_rec *r, const char *to);
	/* A record to append to the journal, before anything it covers is sent. */
	void (*journal)(void *arg, const struct cats_rec *r);
	void (*trace)(void *arg, const struct bind_trace *t);
	void *arg;
	/*
	 * A binding to its egress that admits no traffic yet (commit "both":
	 * the ingress gets it only once the egress installed it): it may
	 * leave before the journal covers it.  NULL: send.
	 */
	void (*send_ahead)(void *arg, const struct cats_rec *r, const char *to);
};

struct bind_counters {
	uint64_t state[8];	/* flows in each state now (ABSENT unused) */
	uint64_t transitions, illegal;
	uint64_t created, bound, activated, repaired, drained, cleaned;
	uint64_t expired_idle, expired_hard;
	uint64_t fail[BR__N];	/* flows that failed or drained, by reason */
	uint64_t refused[BR__N];	/* records refused, by reason */
	uint64_t status_in[8];	/* status records by event */
	uint64_t sent_install, sent_refresh, sent_remove, sent_error;
	uint64_t repair_requests, resyncs, resync_bindings;
	uint64_t net_downs, net_repairs;
	uint64_t late_status;	/* status of a state it cannot move (late) */
	uint64_t paths, paths_released, classes, clients, strings;
	uint64_t restored, restore_refused;
	uint64_t instance_failures;
	uint64_t caps_updates;	/* status refreshed, reason capabilities */
	uint64_t pending_reasked;	/* replicated pending requests a new
					 * owner asked its PCE again */
	uint64_t caps_reasks;	/* paths asked again in a data plane the
				 * egress has too */
	uint64_t fallback_reported, fallback_adopted, fallback_ended,
	    fallback_status;
};

struct bind_table;

struct bind_table *bind_new(const struct bind_conf *c, const struct bind_io *io);
void bind_free(struct bind_table *t);
const struct bind_counters *bind_counters(const struct bind_table *t);
/* Name/value pairs of every counter, for a stats record; *n set. */
struct cats_kv *bind_counters_kv(const struct bind_table *t, size_t *n);

/* The ownership epoch; the journal sets it, one higher on every restart. */
uint64_t bind_epoch(const struct bind_table *t);
void bind_set_epoch(struct bind_table *t, uint64_t epoch);
/*
 * Journal the path-req of each transaction it takes while it waits for
 * its path (a pending request, as the selection decided it), so that a
 * replica holds pending requests too (cats-bind(1), REDUNDANCY).
 */
void bind_set_journal_pending(struct bind_table *t, bool on);
/*
 * A pending request of a previous owner (its path-req, replicated): its
 * transaction taken again, waiting for its path, and the path asked of
 * the PCE again (the path-req on the output, under its deadline).  A
 * cats(7)-style reason: BR_OK, or why it was refused (its deadline
 * passed, a duplicate ...).
 */
int bind_pending_again(struct bind_table *t, const struct cats_path_req *r,
    uint64_t now);
uint64_t bind_next_id(const struct bind_table *t);
/* The manager's own identity (conf.self), named in its journal records. */
const char *bind_self(const struct bind_table *t);
void bind_set_next_id(struct bind_table *t, uint64_t id);

/* ---- input records; each returns BR_OK or why it was refused ---- */

/* A request: ABSENT -> PENDING (optional: path-rep alone suffices). */
int bind_request(struct bind_table *t, const struct cats_request *r,
    uint64_t now);
/* A path request: the decision, before path computation (optional). */
int bind_path_req(struct bind_table *t, const struct cats_path_req *r,
    uint64_t now);
/* A path reply: joined with its decision, becomes a binding. */
int bind_path_rep(struct bind_table *t, const struct cats_path_rep *r,
    uint64_t now);
/* An error from upstream: fails its transaction; passed on. */
int bind_error(struct bind_table *t, const struct cats_error *e,
    uint64_t now);
/* A forwarder's status (hello is bind_fwd_hello). */
int bind_status(struct bind_table *t, const struct cats_status *s,
    uint64_t now);
/* Metric records: withdrawn or failed instances fail their flows. */
int bind_metric(struct bind_table *t, const struct cats_metric *m,
    uint64_t now);
/* A net record taking a link or node down (up false): the active flows
 * whose path uses it are repaired (a path request, as on path-down). */
int bind_net(struct bind_table *t, const struct cats_net *nr, uint64_t now);
/* The instance csci_id of the service cs_id (NULL: of any) is gone: its
 * flows fail or need a reconnect.  An instance is named by both: another
 * service's instance of the same CSCI-ID, another C-SMA's, is not touched. */
size_t bind_instance_down(struct bind_table *t, const char *cs_id,
    const char *csci_id, uint64_t now);

/*
 * A forwarder said hello: re-sync every binding naming it, then the
 * end-of-sync marker.  The re-sync goes in slices of BIND_RESYNC_SLICE
 * bindings: the first here, the rest by bind_fwd_resync, so that the loop
 * turns between them (what is held is committed and written, keepalives
 * and other forwarders' records go out) and a table of any size never
 * keeps a channel silent.  A binding that changes meanwhile is sent by
 * its change as to any connected forwarder.
 */
int bind_fwd_hello(struct bind_table *t, const char *fwd, uint64_t fwd_epoch,
    uint64_t now);
#define BIND_RESYNC_SLICE 256
/*
 * The next slice of every re-sync under way: up to max bindings sent to
 * each such forwarder (about 8 times as many entries visited).  True while
 * one is still under way (call it again on the loop's next turn).
 */
bool bind_fwd_resync(struct bind_table *t, size_t max, uint64_t now);
/* A re-sync is under way. */
bool bind_fwd_resync_pending(const struct bind_table *t);
/*
 * Ids from 2^52 are the forwarders' own: the bindings an ingress made by
 * its configured fallback while the C-PS did not answer (cats-fwd(1)
 * FALLBACK).  Their status is counted and otherwise ignored.
 */
#define BIND_FALLBACK_ID (UINT64_C(1) << 52)
/*
 * Forwarder fwd reports binding b it made by its fallback: adopted (a
 * binding of the manager for the flow, made as a path reply with the
 * decision the fallback binding carries would have been, which the ingress
 * puts in its place) when a live binding of the manager names the same
 * instance (CS-ID, locator, port, egress: its CSCI-ID) and the path passes
 * every check of a reply; otherwise ended (a remove of its id sent to fwd).
 * BR_OK, or why the record was refused (not a fallback binding of fwd).
 */
int bind_fwd_binding(struct bind_table *t, const char *fwd,
    const struct cats_binding *b, uint64_t now);
/* A forwarder's connection closed. */
void bind_fwd_gone(struct bind_table *t, const char *fwd);
bool bind_fwd_connected(const struct bind_table *t, const char *fwd);

/*
 * What the manager does with an input record of a type: BIND_IN_TAKE, the
 * table's; BIND_IN_BOTH, the table's and passed on to whoever is after
 * cats-bind (metrics); BIND_IN_PASS, not its own: passed on unchanged.
 */
enum { BIND_IN_PASS, BIND_IN_TAKE, BIND_IN_BOTH };
int bind_input_kind(int type);
/*
 * Apply an input record the table takes: the bind_request(), bind_path_req(),
 * bind_path_rep(), bind_error(), bind_status() or bind_metric() of its
 * type.  BR_OK for a record it does not take (nothing is done).
 */
int bind_input(struct bind_table *t, const struct cats_rec *r, uint64_t now);

/* Fire the deadlines and lifetimes due at now. */
void bind_tick(struct bind_table *t, uint64_t now);

/* ---- inspection ---- */

struct bind_info {
	uint64_t id, txn, version, epoch, t_start, t_last;
	int state;
	bool repairing;
	const char *ingress, *egress, *cs_id, *csci_id, *tenant;
	uint64_t path_id;
	uint32_t path_refs;	/* bindings sharing the path */
	int encap;
	size_t nsegs;
};
int bind_get(const struct bind_table *t, uint64_t id, struct bind_info *out);
/* The entry of a transaction still in flight (PENDING .. BINDING_READY). */
int bind_get_txn(const struct bind_table *t, uint64_t txn,
    struct bind_info *out);
/*
 * The binding record of entry id (op install/refresh/remove); it points into
 * the table and is valid until the table changes.
 */
int bind_record(const struct bind_table *t, uint64_t id, int op,
    uint64_t now, struct cats_rec *r);
/* Call fn with the record of every entry in one of the states in mask. */
size_t bind_foreach(const struct bind_table *t, unsigned state_mask,
    uint64_t now, void (*fn)(void *arg, const struct cats_rec *r), void *arg);
size_t bind_count(const struct bind_table *t);
/*
 * Make room in the indexes for n more entries at once, as n installs would
 * grow them (a restore that knows how many bindings come); -1 on OOM.
 */
int bind_reserve(struct bind_table *t, size_t n);
/* Shrink the indexes to what growth would have given them (after a
   bind_reserve() that guessed too high). */
void bind_trim(struct bind_table *t);
/* Bytes the table holds (entries, indexes, interned objects). */
size_t bind_mem(const struct bind_table *t);

/* The edge table: is from -> to a transition of 001? */
bool bind_edge_ok(int from, int to);
const char *bind_edge_event(int from, int to);
/*
 * Attempt a bare transition of entry id (tests): applies only the state
 * change if the edge is legal, else refuses and counts.  id 0 tries from
 * ABSENT.
 */
int bind_try(struct bind_table *t, uint64_t id, int to, uint64_t now);

/*
 * Check the table's invariants (every entry found by its id and flow key,
 * the counters by state and by client/tenant agree with the entries, the
 * timing wheel is well linked); 0, or -1 with the first violation in why.
 * For tests and fuzzers: it walks the whole table.
 */
int bind_check(const struct bind_table *t, char *why, size_t len);

/* ---- restore (the journal reader applies records here) ---- */

/*
 * Apply one journal record: a binding (install/refresh: whole, remove), a
 * status "installed" of this manager (the commit), a status "hello" of this
 * manager (an epoch), a stats trailer.  Nothing is sent or journaled.
 */
int bind_restore(struct bind_table *t, const struct cats_rec *r, uint64_t now);
/*
 * Start loading the index slots bind_restore(r) will probe (a hint, no
 * effect on the table): the journal reader decodes the next record while
 * they arrive.
 */
void bind_restore_prefetch(const struct bind_table *t,
    const struct cats_rec *r);

#endif
