/*
 * bind_journal.h - the persistence of cats-bind: an append-only journal of
 * CBOR records plus periodic snapshots, in one directory (cats-bind(1),
 * JOURNAL):
 *
 *   DIR/lock              flock(2): one cats-bind per journal
 *   DIR/journal.SEQ       segments (SEQ 16 hex digits), appended in order
 *   DIR/snapshot          the table at the start of segment "seq"
 *
 * A segment is a CBOR Sequence of records of cats-records(5):
 *   status  {fwd: SELF, event: hello, epoch}      an owner epoch began
 *   binding {op: install, state: BINDING_READY}   a binding, whole
 *   status  {fwd: SELF, event: installed, id}     it was committed (ACTIVE)
 *   binding {op: refresh, ...}                    a new version (repair)
 *   binding {op: remove, id, reason}              it left the table
 * A snapshot is a hello, one whole binding per READY or ACTIVE flow and a
 * trailer, stats {tool: cats-bind, counters: {seq, next_id, epoch,
 * bindings}}, without which it is not a snapshot.
 *
 * Crash consistency: a record is one write(2) of its whole encoding, made
 * before anything it covers is sent; after a crash the last segment may end
 * in a torn record (or garbage), which restore detects (the scanner finds no
 * whole record there), drops and truncates away; nothing before it is lost
 * and nothing of it is applied.  A snapshot is written to snapshot.tmp,
 * fsynced and renamed.
 */
#ifndef CATS_BIND_JOURNAL_H
#define CATS_BIND_JOURNAL_H

#include "bind/bind.h"

enum bj_fsync {
	BJ_FSYNC_ALWAYS,	/* fdatasync before any covered output leaves */
	BJ_FSYNC_INTERVAL,	/* fdatasync by bj_sync() on a timer */
	BJ_FSYNC_NEVER,		/* the kernel decides */
};
extern const char *const bj_fsync_names[];

struct bj_stats {
	uint64_t records, bytes, fsyncs, snapshots, snapshot_records;
	uint64_t snapshot_bytes;	/* size of the last snapshot */
	uint64_t since_snapshot;	/* journal bytes since it */
	uint64_t restored, refused, segments;
	uint64_t torn, torn_bytes;	/* torn tails dropped */
};

struct bj;

/*
 * Open (creating DIR if needed) and lock the journal; readonly opens for
 * --dump: no lock, nothing written, a torn tail reported but left.
 */
struct bj *bj_open(const char *dir, bool readonly, int fsync_policy,
    char *err, size_t errlen);
void bj_close(struct bj *j);
const struct bj_stats *bj_stats(const struct bj *j);
/* Snapshot when the journal grew past max(min_bytes, 2 x the snapshot). */
void bj_set_snapshot_min(struct bj *j, uint64_t min_bytes);

/*
 * Load the snapshot and the segments after it into t (empty), dropping a
 * torn tail of the last segment.  -1 with err on a corrupt snapshot or a
 * corrupt segment that is not the last.
 */
int bj_restore(struct bj *j, struct bind_table *t, uint64_t now, char *err,
    size_t errlen);
/*
 * Begin the new owner epoch: epoch = restored epoch + 1, a new segment
 * starting with its hello, synced to disk before this returns.
 */
int bj_start(struct bj *j, struct bind_table *t, uint64_t now, char *err,
    size_t errlen);

/* Queue a record (the table's journal callback). */
int bj_append(struct bj *j, const struct cats_rec *r);
/* Write what is queued; fdatasync too under BJ_FSYNC_ALWAYS. */
int bj_commit(struct bj *j);
/*
 * The same in three steps (a pipelined commit, seq.h cats_commit): begin
 * on the loop takes what is queued (-1 out of memory; 1 when work will
 * sync, 0 when it only writes); work writes and syncs, and may run on
 * another thread: until end, the caller calls nothing of j but
 * bj_append() and bj_queued(); end gets work's answer (errno set on -1).
 * covers: output waits for this batch.  Under BJ_FSYNC_ALWAYS such a
 * batch that writes records is synced, and with it all written before;
 * one that no output waits for (a forwarder's status) is written only,
 * and synced by the next covering one that writes or by bj_want_sync's
 * timer.
 */
int bj_commit_begin(struct bj *j, bool covers);
int bj_commit_work(struct bj *j);
int bj_commit_end(struct bj *j, int rc);
/* The next commit syncs (--fsync interval's timer; not under never). */
void bj_want_sync(struct bj *j);
/* Bytes queued and not yet taken by a commit. */
size_t bj_queued(const struct bj *j);
/* fdatasync now if anything was written since the last one. */
int bj_sync(struct bj *j);
bool bj_snapshot_due(const struct bj *j);
/* Write a snapshot now (waits for one in the background first). */
int bj_snapshot(struct bj *j, struct bind_table *t, uint64_t now, char *err,
    size_t errlen);
/*
 * Start a snapshot in the background: a forked child writes the table as
 * of now (copy-on-write) and deletes the segments it covers once it is
 * renamed into place, while the caller goes on appending to a new segment.
 */
int bj_snapshot_async(struct bj *j, struct bind_table *t, uint64_t now,
    char *err, size_t errlen);
/* Reap the background snapshot: 1 running, 0 done or none, -1 it failed. */
int bj_snapshot_wait(struct bj *j, bool block);

/*
 * Apply the whole records of p[0..n) to t (bind_restore); stops at the
 * first item that is not a whole, valid record and returns the bytes
 * before it.  *last is the type of the last record applied (-1 if none);
 * *seq (may be NULL) the "seq" of a snapshot trailer met.
 * Shared by restore and the fuzzer.
 */
size_t bj_replay(struct bind_table *t, const uint8_t *p, size_t n,
    uint64_t now, struct bj_stats *st, int *last, uint64_t *seq,
    struct cats_err *why);

#endif
