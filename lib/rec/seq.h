/*
 * seq.h - CBOR Sequences (RFC 8742): records back to back on a stream, one
 * record per datagram on a datagram socket.
 *
 * struct cats_seq_reader buffers partial items (bounded by the record cap)
 * and hands out complete ones.  After a malformed item it reports one error
 * and resynchronizes at the next byte that starts a well-formed map.
 *
 * struct cats_stream drives a reader and a writer on a file descriptor from
 * a libevent loop: items are delivered to a callback; output is queued and
 * written as the descriptor allows; when the queue passes its high-water
 * mark, send() says so and the caller pauses its inputs until the drained
 * callback fires (back-pressure).  Regular files, which epoll cannot watch,
 * are read and written directly.
 */
#ifndef CATS_SEQ_H
#define CATS_SEQ_H

#include <sys/socket.h>

#include "rec/rec.h"

struct event_base;

struct cats_seq_reader {
	struct cats_limits lim;
	struct cats_buf buf;
	size_t start;		/* first unconsumed byte of buf */
	size_t consume;		/* size of the item handed out last */
	size_t need;		/* bytes needed before scanning again */
	uint64_t index;		/* items handed out (good and bad) */
	bool resync;		/* skipping after a malformed item */
	bool eof;
	/* Items framed (cbor_scan.h cats_frame()), not scanned into toks:
	 * type is the record type of the item handed out last (CATS_T_*, or
	 * -1 when it names none). */
	bool frame;
	int type;
	uint64_t walked;	/* items framed by a walk (bare) */
	struct cats_toks toks;	/* used by cats_seq_next() */
};

void cats_seq_reader_init(struct cats_seq_reader *r,
    const struct cats_limits *lim);
void cats_seq_reader_free(struct cats_seq_reader *r);
int cats_seq_feed(struct cats_seq_reader *r, const void *p, size_t n);
/* Read what fd has (up to 64 KiB); returns bytes read, 0 at EOF, -1. */
ssize_t cats_seq_read_fd(struct cats_seq_reader *r, int fd);

enum { CATS_SEQ_ITEM = 1, CATS_SEQ_NEED = 0, CATS_SEQ_BAD = -1 };

/*
 * The next complete item: ITEM with *p and *n valid until the next call; NEED
 * when more input is needed (or at EOF when all is consumed); BAD with err
 * set for a malformed or oversized item (the index is r->index - 1).
 */
int cats_seq_next(struct cats_seq_reader *r, const uint8_t **p, size_t *n,
    struct cats_err *err);
/*
 * The same, scanning straight into d and decoding the record (one pass):
 * ITEM with rec set; BAD for a malformed item or an invalid record.
 */
int cats_seq_next_rec(struct cats_seq_reader *r, struct cats_dec *d,
    struct cats_rec *rec, struct cats_err *err);

/* Write all of p to a blocking fd; -1 on error. */
int cats_write_all(int fd, const void *p, size_t n);

/* ---- libevent streams ---- */

struct cats_stream;

/* The sender of a datagram, for replies; NULL on connected streams. */
struct cats_peer {
	struct sockaddr_storage addr;
	socklen_t len;
};

/*
 * An item decoded, as the rec callback gets it: its bytes, its index, its
 * sender, and the record, or rec NULL with err and why (err formatted with
 * the index by cats_err_fmt) when it is not a valid record.
 */
struct cats_item {
	const uint8_t *p;
	size_t n;
	uint64_t index;
	const struct cats_peer *peer;
	struct cats_rec *rec;
	struct cats_err err;
	char why[400];
};

struct cats_stream_cbs {
	/* A complete item; index counts items on this stream from 0. */
	void (*item)(struct cats_stream *s, const uint8_t *p, size_t n,
	    uint64_t index, const struct cats_peer *peer, void *arg);
	/* A malformed item (the stream goes on). */
	void (*bad)(struct cats_stream *s, uint64_t index,
	    const struct cats_err *err, void *arg);
	/* End of input (0) or an error (errno); the stream stays valid. */
	void (*eof)(struct cats_stream *s, int error, void *arg);
	/* Output fell below the low-water mark after passing the high one. */
	void (*drained)(struct cats_stream *s, void *arg);
	/*
	 * In place of item on a stream that decodes (cats_stream_decode_into):
	 * the item decoded from the tokens the stream scanned it into.  With
	 * no bad callback a malformed item comes here too (rec NULL, p NULL,
	 * n 0), as one that is no valid record does.
	 */
	void (*rec)(struct cats_stream *s, struct cats_item *it, void *arg);
};

/*
 * A stream on fd; rfd < 0 for output only, wfd < 0 for input only (rfd and
 * wfd may be the same socket).  out_high is the high-water mark in bytes
 * (0: 1 MiB).  The stream owns neither fd unless cats_stream_own() is used.
 */
struct cats_stream *cats_stream_new(struct event_base *base, int rfd, int wfd,
    bool dgram, const struct cats_limits *lim, size_t out_high,
    const struct cats_stream_cbs *cbs, void *arg);
/* Close the fds when the stream is freed. */
void cats_stream_own(struct cats_stream *s);
/*
 * Scan items into d's tokens and arena, with d's limits: during an item
 * callback, cats_rec_from_toks(d, ...) decodes the item without a second
 * scan (cats_rec_decode would scan it again).  d must outlive the stream.
 */
void cats_stream_decode_into(struct cats_stream *s, struct cats_dec *d);
/*
 * The environment variable that names a descriptor (a number) whose
 * record streams wrap every item they send as an encoded CBOR data item
 * (tag 24 around a byte string, RFC 8949 3.4.5.1): cats-cps sets it to 1
 * for its stages, so that it frames their output by one head, not a walk
 * of every item (cats_stream_frame()).  cats_stream_wrap() does it for
 * one stream.  Datagram streams never wrap.
 */
#define CATS_WRAP_FD "CATS_WRAP_FD"
void cats_stream_wrap(struct cats_stream *s);
/*
 * Frame items, not scan them (for a relay that passes them on unread):
 * a wrapped item (CATS_WRAP_FD) by its wrapper's head, given to the item
 * callback unwrapped; a bare one as far as cats_frame() checks it.
 * During an item callback cats_stream_item_type() says which record type
 * it names (CATS_T_*, -1 for none), read from its first key when that is
 * "type" (as cats_rec_encode() writes it).  Not with
 * cats_stream_decode_into().
 */
void cats_stream_frame(struct cats_stream *s);
int cats_stream_item_type(const struct cats_stream *s);
/*
 * Queue one item: 0, 1 if the queue is now above the high-water mark
 * (pause inputs until drained), -1 if the stream is broken.
 */
int cats_stream_send(struct cats_stream *s, const uint8_t *p, size_t n);
/* Encode and queue a record. */
int cats_stream_send_rec(struct cats_stream *s, const struct cats_rec *r);
/*
 * Batched output: from now on an item sent is queued, not written, and the
 * items of one turn of the loop (the many records one read produced) leave
 * together in one write at its end, or as soon as max bytes (0: 64 KiB)
 * are batched.  The order of items is kept; send() still returns 1 when
 * the queue, batch included, passes the high-water mark.  A write at the
 * end of the turn that fails tells the eof callback (errno) and counts
 * the batch's items as lost; a write from send() that fails makes send()
 * return -1, as without batching.  Datagram streams stay one item per
 * datagram, unbatched.  cats_stream_flush() writes the batch too;
 * cats_stream_free() drops what was not written.  -1 if the event cannot
 * be made (the stream then stays unbatched).
 */
int cats_stream_batch(struct cats_stream *s, size_t max);
/* Bytes batched and not yet offered to write(2); 0: no batch open. */
size_t cats_stream_batched(const struct cats_stream *s);
/*
 * Write the batch now instead of at the end of the turn (a bound on how
 * long an answer may wait): 0, or -1 if the stream is broken.  No callback
 * runs.
 */
int cats_stream_push(struct cats_stream *s);
/*
 * Held output, the base of group commit: a commit point holds what its
 * streams send until its commit (write and sync a journal, an etcd txn)
 * says the items are covered, then releases them, each stream's in one
 * write.  Commits are pipelined: one batch is committed while the next
 * one is held.
 *
 * - cats_stream_hold(s, cm): from now on every item sent on s is queued
 *   behind cm, not offered to write(2), not even by cats_stream_flush();
 *   a batch open on s is written first.  -1 for a datagram or input-only
 *   stream (they cannot hold) or a broken one.  A stream holds behind one
 *   commit point at a time.
 * - A commit of a batch is three calls of ops (each optional):
 *   begin(arg) on the loop takes what the batch covers (the items held
 *   when it is called; the journal's records so far) and returns -1
 *   (refused), 0 (work runs here and now: it is cheap) or 1 (work runs on
 *   the commit point's worker thread); work(arg) is the commit itself,
 *   0 or -1; end(arg, rc) on the loop gets work's answer (0 when there
 *   was no work) and returns the batch's: 0 releases it, -1 keeps it
 *   held.  Only work runs off the loop: it must touch nothing that the
 *   loop touches meanwhile (begin hands it what it writes; end takes back
 *   its counters), and makes no libevent call (the worker tells the loop
 *   through an eventfd).  One batch is in flight at a time, so batches
 *   end, and are released, in the order they began.  The worker is used
 *   while it pays: as long as the next batch was held behind the last
 *   one in flight; else a slow batch runs on the loop (a lone client pays
 *   no thread wakeup), but every 8th (cats_commit_probe) on the worker,
 *   to see whether others wait behind it again.
 * - A batch begins at the end of the loop turn in which an item was held
 *   or cats_commit_due() was called, or, while one is in flight, as soon
 *   as that one has ended well; at once when max bytes (0: 1 MiB) are held
 *   in all its streams together (the batch in flight is waited for), or
 *   when the owner calls cats_commit_run() (before a snapshot, at the end
 *   of a run).
 * - If the batch's answer is 0, every item held when begin was called
 *   leaves, in the order sent, each stream's in one write (the rest as
 *   the descriptor allows); items sent since stay held for the next
 *   batch.  If it is -1 (begin refused, or end said so), nothing leaves:
 *   the items stay held until a later batch succeeds or the stream is
 *   freed, no batch begins by itself until the next item or call, and
 *   cats_commit_run() returns -1 (the ops say why; the owner decides
 *   whether the run goes on).  begin and end may send (held for the next
 *   batch) and may free any of the streams (a slow peer dropped), not cm
 *   itself; a send that reaches max commits before it returns, and does
 *   not touch its stream after.
 * - send() returns 1 when the queue, held items included, passes the
 *   high-water mark, as without holding; drained fires once the released
 *   items are written below the low-water mark.  A release whose write
 *   fails tells the eof callback (errno) at the end of the turn and counts
 *   the items as lost; held items of a stream that breaks are lost too.
 * - cats_stream_free() drops the stream's held items (they are never
 *   written); cats_commit_free() waits for a batch in flight (its end is
 *   not called) and drops what every stream still holding behind it
 *   holds; they then send as before they held.
 */
struct cats_commit;
struct cats_commit_ops {
	int (*begin)(void *arg);
	int (*work)(void *arg);
	int (*end)(void *arg, int rc);
};
struct cats_commit *cats_commit_new(struct event_base *base,
    const struct cats_commit_ops *ops, void *arg, size_t max);
int cats_stream_hold(struct cats_stream *s, struct cats_commit *cm);
/* Ask for a commit at the end of this turn, even with nothing held. */
void cats_commit_due(struct cats_commit *cm);
/*
 * Commit and release now (the batch in flight ended first, then one more
 * with all that is held, its work run here): 0, or -1 when a batch was
 * refused (nothing of it released).
 */
int cats_commit_run(struct cats_commit *cm);
/*
 * Wait until no batch is in flight (its end run, its items released or
 * not), so that the loop may touch what work touches; the next batch
 * begins at the end of the turn.  0, or -1 when the batch's answer was.
 */
int cats_commit_wait(struct cats_commit *cm);
/* Every how many slow batches one probes the worker while it did not pay
 * (8; 1: always the worker). */
void cats_commit_probe(struct cats_commit *cm, unsigned every);
/* A batch is in flight (its work runs on the worker thread). */
bool cats_commit_busy(const struct cats_commit *cm);
/*
 * Drop what every stream holds behind cm, never to be written (the items a
 * failed commit was to cover, when the run ends); the ops may call it.
 */
void cats_commit_discard(struct cats_commit *cm);
/* Bytes held behind cm in all its streams; on s alone. */
size_t cats_commit_held(const struct cats_commit *cm);
size_t cats_stream_held(const struct cats_stream *s);
/*
 * Send an item that its commit point need not cover (one that admits
 * nothing): when nothing is held on s it is offered to write(2) at once,
 * as without holding, else it is held behind what was sent before it, so
 * that it never overtakes an item of s.  On a stream that does not hold,
 * cats_stream_send().
 */
int cats_stream_send_ahead(struct cats_stream *s, const uint8_t *p, size_t n);
void cats_commit_free(struct cats_commit *cm);
/* Datagram streams: reply to the sender of an item. */
int cats_stream_sendto(struct cats_stream *s, const struct cats_peer *peer,
    const uint8_t *p, size_t n);
size_t cats_stream_queued(const struct cats_stream *s);
void cats_stream_pause(struct cats_stream *s);
void cats_stream_resume(struct cats_stream *s);
/* Flush what is queued, blocking (used at exit). */
int cats_stream_flush(struct cats_stream *s);
void cats_stream_free(struct cats_stream *s);
/*
 * A record stream on each connection of a listener (net/listener.h), the
 * glue in one place.  The tool's object for a connection begins with a
 * struct cats_sconn; the object is the stream's callback argument and the
 * connection's data.
 *
 * - cats_sconn_accept(), in the listener's accept(): an object of size
 *   bytes, zeroed, with a stream on fd that reads and writes it, owns fd
 *   and decodes into dec (NULL: none); NULL if out of memory (accept()
 *   then returns -1 and the listener closes fd).
 * - cats_sconn_end(), when the tool ends the connection: what is queued
 *   is written (blocking), the listener forgets the connection, the
 *   stream (and fd) and the object are freed.  cats_sconn_eof() is that,
 *   as the stream's eof callback.
 * - cats_sconn_closed() is the listener's close() (a cap, a deadline, the
 *   end): the stream and the object are freed.  cats_sconn_free() is
 *   that, for a close() with more to do.
 */
struct cats_conn;
struct cats_sconn {
	struct cats_conn *lc;
	struct cats_stream *st;
};
void *cats_sconn_accept(struct event_base *base, struct cats_conn *lc, int fd,
    size_t size, const struct cats_stream_cbs *cbs, struct cats_dec *dec);
void cats_sconn_end(void *obj);
void cats_sconn_eof(struct cats_stream *s, int error, void *arg);
void cats_sconn_free(void *obj);
void cats_sconn_closed(struct cats_conn *lc, int why, void *arg);
/*
 * Counters: items read, bad items, bytes written, datagrams dropped, items
 * of batches whose write failed at the end of a turn; on a framing stream
 * (cats_stream_frame()), the items that came bare and were walked.
 */
struct cats_stream_stats {
	uint64_t items, bad, bytes_out, dropped, lost, walked;
};
void cats_stream_stats(const struct cats_stream *s,
    struct cats_stream_stats *st);

#endif
