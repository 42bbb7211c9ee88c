/*
 * test_seq.c - CBOR Sequence reader and libevent record streams.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "rec/json.h"
#include "rec/seq.h"
#include "t.h"

static void
encode_json(const char *text, struct cats_buf *out)
{
	json_error_t je;
	json_t *j = json_loads(text, 0, &je);
	struct cats_err e;
	cats_json_to_cbor(j, out, &e);
	json_decref(j);
}

static void
test_reader_partial(void)
{
	struct cats_buf b = { 0 };
	encode_json("{\"type\":\"error\",\"code\":\"x\"}", &b);
	encode_json("{\"type\":\"error\",\"code\":\"y\"}", &b);
	struct cats_seq_reader r;
	cats_seq_reader_init(&r, NULL);
	const uint8_t *p;
	size_t n;
	struct cats_err e;
	int items = 0, needs = 0;
	/* Feed one byte at a time: items come out whole, in order. */
	for (size_t i = 0; i < b.len; i++) {
		cats_seq_feed(&r, b.p + i, 1);
		int s;
		while ((s = cats_seq_next(&r, &p, &n, &e)) == CATS_SEQ_ITEM)
			items++;
		needs += s == CATS_SEQ_NEED;
	}
	T_OK(items == 2, "byte-by-byte feed yields 2 items (got %d)", items);
	T_OK(needs > 0, "partial input asked for more (%d times)", needs);
	r.eof = true;
	T_OK(cats_seq_next(&r, &p, &n, &e) == CATS_SEQ_NEED, "then nothing");
	cats_seq_reader_free(&r);
	cats_buf_free(&b);
}

static void
test_reader_resync(void)
{
	struct cats_buf b = { 0 };
	encode_json("{\"type\":\"error\",\"code\":\"a\"}", &b);
	cats_buf_add(&b, "\x1c\xff\x1d", 3);	/* garbage */
	encode_json("{\"type\":\"error\",\"code\":\"b\"}", &b);
	cats_buf_add(&b, "\xa2\x61", 2);	/* truncated at the end */
	struct cats_seq_reader r;
	struct cats_dec d;
	struct cats_rec rec;
	struct cats_err e;
	cats_seq_reader_init(&r, NULL);
	cats_dec_init(&d, NULL);
	cats_seq_feed(&r, b.p, b.len);
	r.eof = true;
	int s = cats_seq_next_rec(&r, &d, &rec, &e);
	T_OK(s == CATS_SEQ_ITEM && strcmp(rec.u.error.code, "a") == 0,
	    "first record decodes");
	s = cats_seq_next_rec(&r, &d, &rec, &e);
	T_OK(s == CATS_SEQ_BAD, "garbage is one error: %s", e.reason);
	s = cats_seq_next_rec(&r, &d, &rec, &e);
	T_OK(s == CATS_SEQ_ITEM && strcmp(rec.u.error.code, "b") == 0,
	    "reader resynchronizes on the next record");
	s = cats_seq_next_rec(&r, &d, &rec, &e);
	T_OK(s == CATS_SEQ_BAD && (strstr(e.reason, "truncated") || strstr(e.reason, "fit")),
	    "truncated tail reported: %s", e.reason);
	T_OK(r.index == 4, "four items counted (%llu)",
	    (unsigned long long)r.index);
	s = cats_seq_next_rec(&r, &d, &rec, &e);
	T_OK(s == CATS_SEQ_NEED, "end");
	cats_dec_free(&d);
	cats_seq_reader_free(&r);
	cats_buf_free(&b);
}

struct ctx {
	struct event_base *base;
	struct cats_stream *in, *out;
	int items, bad, eof, drained;
	uint64_t last_index;
};

static void
on_item(struct cats_stream *s, const uint8_t *p, size_t n, uint64_t index,
    const struct cats_peer *peer, void *arg)
{
	struct ctx *c = arg;
	c->items++;
	c->last_index = index;
}

static void
on_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	((struct ctx *)arg)->bad++;
}

static void
on_eof(struct cats_stream *s, int error, void *arg)
{
	struct ctx *c = arg;
	c->eof++;
	event_base_loopbreak(c->base);
}

static void
on_drained(struct cats_stream *s, void *arg)
{
	((struct ctx *)arg)->drained++;
}

static void
test_stream(void)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	struct ctx c = { 0 };
	c.base = event_base_new();
	struct cats_stream_cbs cbs = { .item = on_item, .bad = on_bad,
		.eof = on_eof, .drained = on_drained };
	c.in = cats_stream_new(c.base, sv[0], -1, false, NULL, 0, &cbs, &c);
	c.out = cats_stream_new(c.base, -1, sv[1], false, NULL, 4096, &cbs, &c);
	struct cats_buf b = { 0 };
	encode_json("{\"type\":\"error\",\"code\":\"x\",\"msg\":"
	    "\"0123456789012345678901234567890123456789\"}", &b);
	int over = 0, rc = 0;
	/* More than the socket buffer: the writer queues and says so. */
	for (int i = 0; i < 20000; i++) {
		rc = cats_stream_send(c.out, b.p, b.len);
		over += rc == 1;
	}
	T_OK(over > 0, "send reports the high-water mark (%d times)", over);
	T_OK(cats_stream_queued(c.out) > 0, "output is queued");
	/* Run until everything arrived; then close the writer's end. */
	while (c.items < 20000)
		event_base_loop(c.base, EVLOOP_ONCE);
	T_OK(c.items == 20000 && c.bad == 0, "all 20000 items arrive whole");
	T_OK(c.drained >= 1, "drained callback fired");
	cats_stream_free(c.out);
	close(sv[1]);
	event_base_dispatch(c.base);
	T_OK(c.eof == 1, "eof seen once");
	cats_stream_free(c.in);
	close(sv[0]);
	event_base_free(c.base);
	cats_buf_free(&b);
}

static void
test_stream_pause(void)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	struct ctx c = { 0 };
	c.base = event_base_new();
	struct cats_stream_cbs cbs = { .item = on_item, .bad = on_bad,
		.eof = on_eof };
	c.in = cats_stream_new(c.base, sv[0], -1, false, NULL, 0, &cbs, &c);
	struct cats_buf b = { 0 };
	for (int i = 0; i < 10; i++)
		encode_json("{\"type\":\"error\",\"code\":\"p\"}", &b);
	T_OK(write(sv[1], b.p, b.len) == (ssize_t)b.len, "written");
	cats_stream_pause(c.in);
	event_base_loop(c.base, EVLOOP_NONBLOCK);
	T_OK(c.items == 0, "a paused stream delivers nothing");
	cats_stream_resume(c.in);
	event_base_loop(c.base, EVLOOP_NONBLOCK);
	event_base_loop(c.base, EVLOOP_NONBLOCK);
	T_OK(c.items == 10, "resume delivers what was waiting (%d)", c.items);
	close(sv[1]);
	event_base_dispatch(c.base);
	cats_stream_free(c.in);
	close(sv[0]);
	event_base_free(c.base);
	cats_buf_free(&b);
}

/* Items decoded from the tokens the stream left in the decoder. */
struct dctx {
	struct cats_dec dec;
	int ok, wrong;
};

static void
on_dec_item(struct cats_stream *s, const uint8_t *p, size_t n,
    uint64_t index, const struct cats_peer *peer, void *arg)
{
	struct dctx *c = arg;
	struct cats_rec r;
	struct cats_err e;
	if (cats_rec_from_toks(&c->dec, &r, &e) == 0 &&
	    r.type == CATS_T_ERROR && r.u.error.txn == index + 1)
		c->ok++;
	else
		c->wrong++;
}

static void
test_stream_decode_into(void)
{
	for (int dgram = 0; dgram < 2; dgram++) {
		int sv[2];
		socketpair(AF_UNIX, dgram ? SOCK_DGRAM : SOCK_STREAM, 0, sv);
		struct dctx c = { 0 };
		cats_dec_init(&c.dec, NULL);
		struct event_base *base = event_base_new();
		struct cats_stream_cbs cbs = { .item = on_dec_item };
		struct cats_stream *in = cats_stream_new(base, sv[0], -1,
		    dgram, NULL, 0, &cbs, &c);
		cats_stream_decode_into(in, &c.dec);
		for (int i = 1; i <= 20; i++) {
			struct cats_buf b = { 0 };
			char text[128];
			snprintf(text, sizeof(text), "{\"type\":\"error\","
			    "\"code\":\"c%d\",\"txn\":%d}", i, i);
			encode_json(text, &b);
			if (write(sv[1], b.p, b.len) != (ssize_t)b.len)
				c.wrong++;
			cats_buf_free(&b);
		}
		for (int i = 0; i < 50 && c.ok + c.wrong < 20; i++)
			event_base_loop(base, EVLOOP_NONBLOCK);
		T_OK(c.ok == 20 && c.wrong == 0, "%s: each item decodes from "
		    "the tokens left in the decoder (%d of 20)",
		    dgram ? "datagrams" : "stream", c.ok);
		cats_stream_free(in);
		close(sv[0]);
		close(sv[1]);
		event_base_free(base);
		cats_dec_free(&c.dec);
	}
}

/* Bytes waiting on fd, read without blocking; -1: none (EAGAIN). */
static ssize_t
pending(int fd)
{
	static uint8_t buf[1 << 16];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
	return n < 0 && errno == EAGAIN ? -1 : n;
}

struct bctx {
	int eof, eof_error, drained;
};

static void
on_beof(struct cats_stream *s, int error, void *arg)
{
	struct bctx *c = arg;
	c->eof++;
	c->eof_error = error;
}

static void
on_bdrained(struct cats_stream *s, void *arg)
{
	((struct bctx *)arg)->drained++;
}

static void
test_stream_batch(void)
{
	struct cats_buf b = { 0 };
	encode_json("{\"type\":\"error\",\"code\":\"b\"}", &b);
	ssize_t len = (ssize_t)b.len;
	struct cats_stream_cbs cbs = { .eof = on_beof, .drained = on_bdrained };
	struct cats_stream_stats st;
	int sv[2];

	/* A turn's items leave together, at its end. */
	struct event_base *base = event_base_new();
	struct bctx c = { 0 };
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	struct cats_stream *out = cats_stream_new(base, -1, sv[1], false,
	    NULL, 0, &cbs, &c);
	T_OK(cats_stream_batch(out, 0) == 0, "batching on");
	int rc = 0;
	for (int i = 0; i < 10; i++)
		rc |= cats_stream_send(out, b.p, b.len);
	T_OK(rc == 0 && pending(sv[0]) == -1, "nothing written during the "
	    "turn");
	T_OK(cats_stream_batched(out) == 10 * b.len, "ten items batched");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(cats_stream_batched(out) == 0, "the batch left at the end of the "
	    "turn");
	T_OK(pending(sv[0]) == 10 * len, "in one write, all ten");
	T_OK(cats_stream_send(out, b.p, b.len) == 0 &&
	    cats_stream_batched(out) == b.len, "the next turn opens a batch");
	T_OK(cats_stream_push(out) == 0 && pending(sv[0]) == len &&
	    cats_stream_batched(out) == 0, "push writes it now");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(pending(sv[0]) == -1, "and the end of the turn has nothing left");

	/* The size bound: at max bytes the batch leaves from send(). */
	cats_stream_batch(out, 3 * b.len + 1);
	cats_stream_send(out, b.p, b.len);
	cats_stream_send(out, b.p, b.len);
	cats_stream_send(out, b.p, b.len);
	T_OK(pending(sv[0]) == -1, "one byte below max: batched");
	cats_stream_send(out, b.p, b.len);
	T_OK(pending(sv[0]) == 4 * len && cats_stream_batched(out) == 0,
	    "at max: written from send");
	cats_stream_batch(out, 2 * b.len);
	cats_stream_send(out, b.p, b.len);
	T_OK(pending(sv[0]) == -1, "max 2 items: the first waits");
	cats_stream_send(out, b.p, b.len);
	T_OK(pending(sv[0]) == 2 * len, "the second (max exactly) sends both");
	event_base_loop(base, EVLOOP_NONBLOCK);

	/* cats_stream_flush() writes the batch. */
	cats_stream_send(out, b.p, b.len);
	T_OK(cats_stream_flush(out) == 0 && cats_stream_batched(out) == 0 &&
	    pending(sv[0]) == len, "flush writes the batch");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(pending(sv[0]) == -1, "once");
	cats_stream_stats(out, &st);
	T_OK(st.bytes_out == 18 * b.len && st.lost == 0, "bytes_out counts "
	    "batched bytes once (%llu)", (unsigned long long)st.bytes_out);
	cats_stream_free(out);
	close(sv[1]);

	/* Back-pressure counts the batch; drained comes when it left. */
	close(sv[0]);
	c = (struct bctx){ 0 };
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	out = cats_stream_new(base, -1, sv[1], false, NULL, 5 * b.len, &cbs,
	    &c);
	cats_stream_batch(out, 0);
	int ones = 0;
	for (int i = 0; i < 6; i++)
		ones += cats_stream_send(out, b.p, b.len) == 1;
	T_OK(ones == 1, "above the high-water mark at the sixth item (%d)",
	    ones);
	T_OK(pending(sv[0]) == -1 && c.drained == 0, "still batched");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(pending(sv[0]) == 6 * len && c.drained == 1, "written, then "
	    "drained (%d)", c.drained);
	for (int i = 0; i < 6; i++)
		cats_stream_send(out, b.p, b.len);
	cats_stream_push(out);
	T_OK(c.drained == 1, "push runs no callback");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(c.drained == 2 && pending(sv[0]) == 6 * len, "drained after a "
	    "push at the end of the turn (%d)", c.drained);

	/* A failed write at the end of the turn tells eof; items lost. */
	close(sv[0]);
	for (int i = 0; i < 6; i++)
		cats_stream_send(out, b.p, b.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	cats_stream_stats(out, &st);
	T_OK(c.eof == 1 && c.eof_error == EPIPE && st.lost == 6 &&
	    c.drained == 2, "eof with EPIPE, not drained; 6 items lost (eof "
	    "%d, error %d, lost %llu)", c.eof, c.eof_error,
	    (unsigned long long)st.lost);
	T_OK(cats_stream_send(out, b.p, b.len) == -1, "then send fails");
	cats_stream_free(out);
	close(sv[1]);

	/* A failed write from send() at max: -1, as unbatched. */
	c = (struct bctx){ 0 };
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	out = cats_stream_new(base, -1, sv[1], false, NULL, 0, &cbs, &c);
	cats_stream_batch(out, 2 * b.len);
	close(sv[0]);
	T_OK(cats_stream_send(out, b.p, b.len) == 0, "the first is batched");
	T_OK(cats_stream_send(out, b.p, b.len) == -1, "the write at max fails "
	    "in send");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(c.eof == 0, "and eof is not told for it");
	cats_stream_free(out);
	close(sv[1]);

	/* A regular file: written at the end of the turn too. */
	char path[] = "/tmp/test_seq_XXXXXX";
	int fd = mkstemp(path);
	out = cats_stream_new(base, -1, fd, false, NULL, 0, &cbs, &c);
	cats_stream_batch(out, 0);
	cats_stream_send(out, b.p, b.len);
	cats_stream_send(out, b.p, b.len);
	T_OK(lseek(fd, 0, SEEK_END) == 0, "file: nothing during the turn");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(lseek(fd, 0, SEEK_END) == 2 * len, "file: both at its end");
	cats_stream_free(out);
	close(fd);
	unlink(path);

	/* Datagrams: one item per datagram, not batched. */
	socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	out = cats_stream_new(base, -1, sv[1], true, NULL, 0, &cbs, &c);
	cats_stream_batch(out, 0);
	cats_stream_send(out, b.p, b.len);
	cats_stream_send(out, b.p, b.len);
	T_OK(pending(sv[0]) == len && pending(sv[0]) == len &&
	    pending(sv[0]) == -1, "datagrams leave at once, one each");
	cats_stream_free(out);
	close(sv[0]);
	close(sv[1]);

	event_base_free(base);
	cats_buf_free(&b);
}

/* A commit point's owner: counts runs, can refuse, send or drop. */
struct hctx {
	int runs, rc;
	int fd;				/* at a run, nothing of it is written */
	bool early;			/* something was written before a run */
	struct cats_stream *send_on;	/* the run sends an item on it */
	struct cats_stream **drop;	/* the run frees this stream */
	const struct cats_buf *item;
};

static int
on_commit_fn(void *arg)
{
	struct hctx *h = arg;
	h->runs++;
	if (h->fd >= 0 && pending(h->fd) != -1)
		h->early = true;
	if (h->send_on != NULL)
		cats_stream_send(h->send_on, h->item->p, h->item->len);
	if (h->drop != NULL && *h->drop != NULL) {
		cats_stream_free(*h->drop);
		*h->drop = NULL;
	}
	return h->rc;
}

static const struct cats_commit_ops SYNC_OPS = { on_commit_fn, NULL, NULL };

static void
test_stream_hold(void)
{
	struct cats_buf b = { 0 };
	encode_json("{\"type\":\"error\",\"code\":\"h\"}", &b);
	ssize_t len = (ssize_t)b.len;
	struct cats_stream_cbs cbs = { .eof = on_beof, .drained = on_bdrained };
	struct cats_stream_stats st;
	struct event_base *base = event_base_new();
	struct bctx c = { 0 }, c2 = { 0 };
	struct hctx h = { .fd = -1, .item = &b };
	int sv[2], sw[2];

	/* Two streams behind one commit: nothing leaves before it. */
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	socketpair(AF_UNIX, SOCK_STREAM, 0, sw);
	struct cats_commit *cm = cats_commit_new(base, &SYNC_OPS, &h, 0);
	struct cats_stream *out = cats_stream_new(base, -1, sv[1], false,
	    NULL, 0, &cbs, &c);
	struct cats_stream *o2 = cats_stream_new(base, -1, sw[1], false,
	    NULL, 0, &cbs, &c2);
	T_OK(cm != NULL && cats_stream_hold(out, cm) == 0 &&
	    cats_stream_hold(o2, cm) == 0, "two streams hold behind a commit");
	h.fd = sv[0];
	for (int i = 0; i < 3; i++)
		cats_stream_send(out, b.p, b.len);
	cats_stream_send(o2, b.p, b.len);
	T_OK(pending(sv[0]) == -1 && pending(sw[0]) == -1 &&
	    cats_stream_held(out) == 3 * b.len &&
	    cats_commit_held(cm) == 4 * b.len, "four items held, none written");
	T_OK(cats_stream_flush(out) == 0 && pending(sv[0]) == -1,
	    "cats_stream_flush() does not write held items");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(h.runs == 1 && !h.early, "one commit at the end of the turn, "
	    "before any write (%d)", h.runs);
	T_OK(pending(sv[0]) == 3 * len && pending(sw[0]) == len &&
	    cats_commit_held(cm) == 0, "then both streams' items left");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(h.runs == 1, "no commit in a turn with nothing held");

	/* A refused commit releases nothing; a later one does. */
	h.rc = -1;
	cats_stream_send(out, b.p, b.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(h.runs == 2 && pending(sv[0]) == -1 && cats_stream_held(out) ==
	    b.len, "refused: still held");
	T_OK(cats_commit_run(cm) == -1 && pending(sv[0]) == -1,
	    "cats_commit_run says -1, nothing written");
	h.rc = 0;
	T_OK(cats_commit_run(cm) == 0 && pending(sv[0]) == len &&
	    cats_stream_held(out) == 0, "accepted: written at once");
	cats_stream_send(out, b.p, b.len);
	cats_stream_send(o2, b.p, b.len);
	cats_commit_discard(cm);
	T_OK(cats_commit_held(cm) == 0 && cats_stream_queued(out) == 0,
	    "discarded: nothing held");
	h.runs--;	/* (the turn's commit finds nothing to release) */
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(pending(sv[0]) == -1 && pending(sw[0]) == -1, "and nothing "
	    "written");

	/* What the commit sends waits for the next one. */
	h.send_on = out;
	cats_stream_send(out, b.p, b.len);
	cats_commit_run(cm);
	h.send_on = NULL;
	T_OK(pending(sv[0]) == len && cats_stream_held(out) == b.len,
	    "an item sent by the commit stays held");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(h.runs == 6 && pending(sv[0]) == len, "and leaves with the next "
	    "(%d runs)", h.runs);

	/* A commit asked for with nothing held runs at the end of the turn. */
	cats_commit_due(cm);
	T_OK(h.runs == 6, "due: not at once");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(h.runs == 7, "due: at the end of the turn");
	cats_stream_free(o2);
	o2 = NULL;
	close(sw[0]);
	close(sw[1]);
	cats_stream_free(out);
	cats_commit_free(cm);
	close(sv[0]);
	close(sv[1]);

	/* max bytes held in all streams: the commit runs from send(). */
	h = (struct hctx){ .fd = -1, .item = &b };
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	socketpair(AF_UNIX, SOCK_STREAM, 0, sw);
	cm = cats_commit_new(base, &SYNC_OPS, &h, 3 * b.len);
	out = cats_stream_new(base, -1, sv[1], false, NULL, 0, &cbs, &c);
	o2 = cats_stream_new(base, -1, sw[1], false, NULL, 0, &cbs, &c2);
	cats_stream_hold(out, cm);
	cats_stream_hold(o2, cm);
	cats_stream_send(out, b.p, b.len);
	cats_stream_send(o2, b.p, b.len);
	T_OK(h.runs == 0 && pending(sv[0]) == -1, "below max: held");
	cats_stream_send(o2, b.p, b.len);
	T_OK(h.runs == 1 && pending(sv[0]) == len && pending(sw[0]) == 2 * len,
	    "at max: committed and written from send (%d)", h.runs);

	/* The commit may free a stream (a slow peer dropped). */
	h.drop = &o2;
	cats_stream_send(out, b.p, b.len);
	cats_stream_send(o2, b.p, b.len);
	cats_stream_send(out, b.p, b.len);
	T_OK(o2 == NULL && pending(sv[0]) == 2 * len &&
	    cats_commit_held(cm) == 0, "a stream freed by the commit: its "
	    "items dropped, the others' written");
	h.drop = NULL;
	close(sw[0]);
	close(sw[1]);

	/* A stream freed while holding takes its items with it. */
	socketpair(AF_UNIX, SOCK_STREAM, 0, sw);
	struct cats_stream *o3 = cats_stream_new(base, -1, sw[1], false, NULL, 0, &cbs, &c2);
	cats_stream_hold(o3, cm);
	cats_stream_send(o3, b.p, b.len);
	cats_stream_free(o3);
	T_OK(cats_commit_held(cm) == 0, "freed: nothing held any more");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(pending(sw[0]) == -1, "and nothing written");
	close(sw[0]);
	close(sw[1]);
	cats_stream_free(out);
	cats_commit_free(cm);
	close(sv[0]);
	close(sv[1]);

	/* Back-pressure counts what is held; drained once it is written. */
	h = (struct hctx){ .fd = -1, .item = &b };
	c = (struct bctx){ 0 };
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	cm = cats_commit_new(base, &SYNC_OPS, &h, 0);
	out = cats_stream_new(base, -1, sv[1], false, NULL, 5 * b.len, &cbs,
	    &c);
	cats_stream_hold(out, cm);
	int ones = 0;
	for (int i = 0; i < 6; i++)
		ones += cats_stream_send(out, b.p, b.len) == 1;
	T_OK(ones == 1 && c.drained == 0, "above the high-water mark at the "
	    "sixth held item (%d)", ones);
	event_base_loop(base, EVLOOP_NONBLOCK);
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(pending(sv[0]) == 6 * len && c.drained == 1, "committed, written, "
	    "drained (%d)", c.drained);

	/* A release whose write fails tells eof; its items are lost. */
	close(sv[0]);
	for (int i = 0; i < 4; i++)
		cats_stream_send(out, b.p, b.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	event_base_loop(base, EVLOOP_NONBLOCK);
	cats_stream_stats(out, &st);
	T_OK(c.eof == 1 && c.eof_error == EPIPE && st.lost == 4, "eof with "
	    "EPIPE, 4 lost (eof %d, error %d, lost %llu)", c.eof, c.eof_error,
	    (unsigned long long)st.lost);
	cats_stream_free(out);
	close(sv[1]);

	/* Sent ahead: at once while nothing is held, else behind it. */
	h = (struct hctx){ .fd = -1, .item = &b };
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	out = cats_stream_new(base, -1, sv[1], false, NULL, 0, &cbs, &c);
	cats_stream_hold(out, cm);
	cats_stream_send_ahead(out, b.p, b.len);
	T_OK(pending(sv[0]) == len && cats_stream_held(out) == 0,
	    "ahead, nothing held: written before any commit");
	cats_stream_send(out, b.p, b.len);
	cats_stream_send_ahead(out, b.p, b.len);
	T_OK(pending(sv[0]) == -1 && cats_stream_held(out) == 2 * b.len,
	    "ahead, an item held: held behind it, never before it");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(h.runs == 1 && pending(sv[0]) == 2 * len, "both leave with the "
	    "commit, in order (%d)", h.runs);
	cats_stream_free(out);
	close(sv[0]);
	close(sv[1]);

	/* A regular file: written at the commit, not before. */
	char path[] = "/tmp/test_seq_XXXXXX";
	int fd = mkstemp(path);
	out = cats_stream_new(base, -1, fd, false, NULL, 0, &cbs, &c);
	cats_stream_hold(out, cm);
	cats_stream_send(out, b.p, b.len);
	cats_stream_send(out, b.p, b.len);
	T_OK(lseek(fd, 0, SEEK_END) == 0, "file: nothing before the commit");
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(lseek(fd, 0, SEEK_END) == 2 * len, "file: both after it");
	cats_stream_free(out);
	close(fd);
	unlink(path);

	/* A batch open is written first; datagrams cannot hold. */
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	out = cats_stream_new(base, -1, sv[1], false, NULL, 0, &cbs, &c);
	cats_stream_batch(out, 0);
	cats_stream_send(out, b.p, b.len);
	T_OK(cats_stream_hold(out, cm) == 0 && pending(sv[0]) == len,
	    "a batch open leaves when the stream starts holding");
	cats_stream_send(out, b.p, b.len);
	T_OK(pending(sv[0]) == -1 && cats_stream_held(out) == b.len,
	    "then items are held, not batched");
	cats_commit_free(cm);
	T_OK(cats_stream_held(out) == 0 && cats_stream_queued(out) == 0,
	    "cats_commit_free drops what its streams held");
	cats_stream_send(out, b.p, b.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(pending(sv[0]) == len, "and they send as before");
	cats_stream_free(out);
	close(sv[0]);
	close(sv[1]);
	cm = cats_commit_new(base, &SYNC_OPS, &h, 0);
	socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	out = cats_stream_new(base, -1, sv[1], true, NULL, 0, &cbs, &c);
	T_OK(cats_stream_hold(out, cm) == -1, "a datagram stream cannot hold");
	cats_stream_free(out);
	cats_commit_free(cm);
	close(sv[0]);
	close(sv[1]);

	event_base_free(base);
	cats_buf_free(&b);
}

/*
 * A pipelined commit's owner: a fake commit whose work (on the worker)
 * waits for the test to let it end (a byte on gate), so the test decides
 * when each batch is durable; every step is logged in order.
 */
struct pctx {
	char log[64];
	size_t nlog;
	int gate[2];		/* work reads a byte from gate[0] to end */
	int begin_rc, work_rc, end_rc;
	bool gated;		/* work waits for the gate */
	pthread_t loop;		/* the loop's thread */
	bool off_loop;		/* the last work ran on another thread */
	int end_got;		/* work's answer, as end saw it */
	int ends;		/* end calls */
	struct cats_commit *discard;	/* end discards what is held */
};

static void
plog(struct pctx *p, char c)
{
	if (p->nlog < sizeof(p->log) - 1)
		p->log[p->nlog++] = c;
	p->log[p->nlog] = '\0';
}

static int
p_begin(void *arg)
{
	struct pctx *p = arg;
	plog(p, 'b');
	return p->begin_rc;
}

static int
p_work(void *arg)
{
	struct pctx *p = arg;
	char c;
	p->off_loop = !pthread_equal(pthread_self(), p->loop);
	if (p->gated)
		while (read(p->gate[0], &c, 1) < 0 && errno == EINTR)
			;
	plog(p, 'w');
	return p->work_rc;
}

static int
p_end(void *arg, int rc)
{
	struct pctx *p = arg;
	plog(p, 'e');
	p->ends++;
	p->end_got = rc;
	if (p->discard != NULL)
		cats_commit_discard(p->discard);
	return rc < 0 ? rc : p->end_rc;
}

static const struct cats_commit_ops PIPE_OPS = { p_begin, p_work, p_end };

/* Let the batch in flight end, then the loop see it (the eventfd). */
static void
p_land(struct pctx *p, struct event_base *base, struct cats_commit *cm)
{
	if (write(p->gate[1], "x", 1) != 1)
		abort();
	int ends = p->ends;
	while (p->ends == ends && cats_commit_busy(cm))
		event_base_loop(base, EVLOOP_ONCE);
	event_base_loop(base, EVLOOP_NONBLOCK);
}

static void
test_commit_pipeline(void)
{
	struct cats_buf a = { 0 }, b = { 0 };
	encode_json("{\"type\":\"error\",\"code\":\"a\"}", &a);
	encode_json("{\"type\":\"error\",\"code\":\"bb\"}", &b);
	ssize_t la = (ssize_t)a.len, lb = (ssize_t)b.len;
	struct cats_stream_cbs cbs = { .eof = on_beof, .drained = on_bdrained };
	struct event_base *base = event_base_new();
	struct bctx c = { 0 };
	struct pctx p = { .begin_rc = 1, .gated = true,
		.loop = pthread_self() };
	int sv[2];
	if (pipe(p.gate) < 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		abort();
	struct cats_commit *cm = cats_commit_new(base, &PIPE_OPS, &p, 0);
	cats_commit_probe(cm, 1);	/* the worker every time */
	struct cats_stream *out = cats_stream_new(base, -1, sv[1], false,
	    NULL, 0, &cbs, &c);
	T_OK(cm != NULL && cats_stream_hold(out, cm) == 0, "a pipelined "
	    "commit point");

	/* Batch 1 (a) flies; b is held behind it, for batch 2. */
	cats_stream_send(out, a.p, a.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(strcmp(p.log, "b") == 0 && cats_commit_busy(cm) &&
	    pending(sv[0]) == -1, "batch 1 begun, its work on the worker, "
	    "nothing released (%s)", p.log);
	cats_stream_send(out, b.p, b.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(strcmp(p.log, "b") == 0 && cats_stream_held(out) == a.len + b.len,
	    "one batch in flight: the next one is held, not begun (%s)",
	    p.log);
	p_land(&p, base, cm);
	T_OK(p.off_loop, "the work ran off the loop's thread");
	T_OK(strncmp(p.log, "bweb", 4) == 0 && pending(sv[0]) == la &&
	    cats_stream_held(out) == b.len, "batch 1 durable: a released, "
	    "alone; batch 2 (b) begun at once (%s)", p.log);
	p_land(&p, base, cm);
	T_OK(strcmp(p.log, "bwebwe") == 0 && pending(sv[0]) == lb &&
	    cats_commit_held(cm) == 0 && !cats_commit_busy(cm),
	    "batch 2 durable: b released after a (%s)", p.log);
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(p.nlog == 6, "nothing held: no batch");

	/* A failed work: nothing released, no batch by itself; the owner's
	 * run commits it later (its work here, on the loop). */
	p.nlog = 0;
	p.work_rc = -1;
	cats_stream_send(out, a.p, a.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	cats_stream_send(out, b.p, b.len);
	p_land(&p, base, cm);
	T_OK(strcmp(p.log, "bwe") == 0 && p.end_got == -1 &&
	    pending(sv[0]) == -1 && cats_stream_held(out) == a.len + b.len,
	    "work failed: end told, nothing released, none begun (%s)", p.log);
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(strcmp(p.log, "bwe") == 0, "still none");
	p.work_rc = 0;
	p.gated = false;
	T_OK(cats_commit_run(cm) == 0 && !p.off_loop &&
	    pending(sv[0]) == la + lb && cats_stream_held(out) == 0,
	    "cats_commit_run: the work here, both released in order (%s)",
	    p.log);

	/* end may refuse what work made durable: nothing released. */
	p.nlog = 0;
	p.gated = true;
	p.end_rc = -1;
	cats_stream_send(out, a.p, a.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	p_land(&p, base, cm);
	T_OK(strcmp(p.log, "bwe") == 0 && p.end_got == 0 &&
	    pending(sv[0]) == -1 && cats_stream_held(out) == a.len,
	    "end refused: held (%s)", p.log);
	p.end_rc = 0;

	/* begin refuses: no work, no end, nothing released. */
	p.nlog = 0;
	p.begin_rc = -1;
	T_OK(cats_commit_run(cm) == -1 && strcmp(p.log, "b") == 0 &&
	    pending(sv[0]) == -1, "begin refused: -1, no work (%s)", p.log);

	/* begin says the work is cheap: here and now, in the turn. */
	p.nlog = 0;
	p.begin_rc = 0;
	p.gated = false;
	event_base_loop(base, EVLOOP_NONBLOCK);	/* (nothing due) */
	cats_commit_due(cm);
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(strcmp(p.log, "bwe") == 0 && !p.off_loop &&
	    pending(sv[0]) == la, "begin 0: the work on the loop, released "
	    "in the same turn (%s)", p.log);

	/* cats_commit_wait: the batch in flight ended, its items out. */
	p.nlog = 0;
	p.begin_rc = 1;
	p.gated = true;
	cats_stream_send(out, a.p, a.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	cats_stream_send(out, b.p, b.len);
	if (write(p.gate[1], "x", 1) != 1)
		abort();
	T_OK(cats_commit_wait(cm) == 0 && !cats_commit_busy(cm) &&
	    strcmp(p.log, "bwe") == 0 && pending(sv[0]) == la &&
	    cats_stream_held(out) == b.len, "wait: batch 1 ended, a out, b "
	    "held for the next (%s)", p.log);
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(strcmp(p.log, "bweb") == 0, "which begins at the end of the "
	    "turn (%s)", p.log);

	/* max held reached while one flies: it is waited for, then the rest
	 * committed from send() (here): in order. */
	if (write(p.gate[1], "x", 1) != 1)
		abort();
	cats_stream_free(out);
	cats_commit_free(cm);
	pending(sv[0]);
	p.nlog = 0;
	cm = cats_commit_new(base, &PIPE_OPS, &p, 2 * a.len + b.len);
	cats_commit_probe(cm, 1);
	out = cats_stream_new(base, -1, sv[1], false, NULL, 0, &cbs, &c);
	cats_stream_hold(out, cm);
	cats_stream_send(out, a.p, a.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	cats_stream_send(out, b.p, b.len);
	T_OK(pending(sv[0]) == -1, "below max: held");
	if (write(p.gate[1], "x", 1) != 1 || write(p.gate[1], "x", 1) != 1)
		abort();
	cats_stream_send(out, a.p, a.len);
	T_OK(strcmp(p.log, "bwebwe") == 0 && pending(sv[0]) == 2 * la + lb &&
	    cats_commit_held(cm) == 0, "at max: the one in flight, then the "
	    "rest, from send (%s)", p.log);

	/* The items of a batch in flight discarded: never written. */
	p.nlog = 0;
	p.discard = cm;
	cats_stream_send(out, a.p, a.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	p_land(&p, base, cm);
	T_OK(strcmp(p.log, "bwe") == 0 && pending(sv[0]) == -1 &&
	    cats_commit_held(cm) == 0, "discarded by end: nothing written "
	    "(%s)", p.log);
	p.discard = NULL;

	/* Freed with a batch in flight: waited for, its end not called. */
	p.nlog = 0;
	cats_stream_send(out, a.p, a.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	if (write(p.gate[1], "x", 1) != 1)
		abort();
	cats_commit_free(cm);
	T_OK(strcmp(p.log, "bw") == 0 && cats_stream_held(out) == 0,
	    "freed in flight: the work waited for, no end (%s)", p.log);
	cats_stream_send(out, a.p, a.len);
	T_OK(pending(sv[0]) == la, "and the stream sends as before");

	/* By default the worker only while the next batch waits behind the
	 * one in flight: a lone client's batches run on the loop, but every
	 * 8th probes the worker. */
	cm = cats_commit_new(base, &PIPE_OPS, &p, 0);
	cats_stream_hold(out, cm);
	p.nlog = 0;
	cats_stream_send(out, a.p, a.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(cats_commit_busy(cm), "the first slow batch probes the worker");
	p_land(&p, base, cm);
	int here = 0;
	p.gated = false;
	for (int i = 0; i < 7; i++) {
		cats_stream_send(out, a.p, a.len);
		event_base_loop(base, EVLOOP_NONBLOCK);
		here += !p.off_loop && !cats_commit_busy(cm);
	}
	T_OK(here == 7 && pending(sv[0]) == 8 * la, "nothing waited behind "
	    "it: the next 7 on the loop, released in their turn (%d, %s)", here,
	    p.log);
	p.gated = true;
	cats_stream_send(out, a.p, a.len);
	event_base_loop(base, EVLOOP_NONBLOCK);
	T_OK(cats_commit_busy(cm), "the 8th probes the worker");
	cats_stream_send(out, b.p, b.len);
	p_land(&p, base, cm);
	T_OK(cats_commit_busy(cm) && pending(sv[0]) == la, "b waited behind "
	    "it: the next one on the worker too");
	p_land(&p, base, cm);
	T_OK(!cats_commit_busy(cm) && pending(sv[0]) == lb, "and released");
	cats_commit_free(cm);
	cats_stream_free(out);
	close(sv[0]);
	close(sv[1]);
	close(p.gate[0]);
	close(p.gate[1]);
	event_base_free(base);
	cats_buf_free(&a);
	cats_buf_free(&b);
}

/* What a framing reader was given: the items' bytes and their types. */
struct fctx {
	struct event_base *base;
	int items, bad, types[16];
	struct cats_buf got;
};

static void
on_fitem(struct cats_stream *s, const uint8_t *p, size_t n, uint64_t index,
    const struct cats_peer *peer, void *arg)
{
	struct fctx *c = arg;
	if (c->items < 16)
		c->types[c->items] = cats_stream_item_type(s);
	c->items++;
	cats_buf_add(&c->got, p, n);
}

static void
on_fbad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	((struct fctx *)arg)->bad++;
}

/*
 * Wrapped items (cats_stream_wrap, as cats-cps's stages send) framed by a
 * reader (cats_stream_frame, as cats-cps reads them): each given back
 * whole and unwrapped with its type, heads of 1, 2 and 3 bytes; a bare
 * item among them framed by a walk; a wrapper over the record cap refused
 * alone, the next item read again.
 */
static void
test_stream_wrap(void)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	struct fctx c = { 0 };
	c.base = event_base_new();
	struct cats_stream_cbs cbs = { .item = on_fitem, .bad = on_fbad };
	struct cats_stream *in = cats_stream_new(c.base, sv[0], -1, false,
	    NULL, 0, &cbs, &c);
	struct cats_stream *out = cats_stream_new(c.base, -1, sv[1], false,
	    NULL, 0, &cbs, &c);
	cats_stream_frame(in);
	cats_stream_wrap(out);
	char msg[400], big[1000];
	memset(msg, 'm', 300);
	msg[300] = '\0';
	snprintf(big, sizeof(big), "{\"type\":\"error\",\"code\":\"x\","
	    "\"msg\":\"%s\"}", msg);
	struct cats_buf r[5] = { { 0 } }, want = { 0 };
	encode_json("{\"type\":\"stats\"}", &r[0]);	/* under 24 bytes */
	encode_json("{\"type\":\"path-req\",\"txn\":1,\"msg\":"
	    "\"0123456789012345678901234567890\"}", &r[1]);
	encode_json(big, &r[2]);			/* over 255 */
	encode_json("{\"txn\":2,\"type\":\"binding\"}", &r[3]);	/* bare */
	encode_json("{\"type\":\"status\"}", &r[4]);
	for (int i = 0; i < 3; i++)
		cats_stream_send(out, r[i].p, r[i].len);
	cats_stream_flush(out);
	T_OK(write(sv[1], r[3].p, r[3].len) == (ssize_t)r[3].len, "bare item");
	static const uint8_t over[] = { 0xd8, 0x18, 0x5a, 0x00, 0x10, 0, 0 };
	T_OK(write(sv[1], over, sizeof(over)) == sizeof(over), "1 MiB wrapper");
	cats_stream_send(out, r[4].p, r[4].len);
	cats_stream_flush(out);
	for (int i = 0; i < 5; i++)
		cats_buf_add(&want, r[i].p, r[i].len);
	while (c.items + c.bad < 6)
		event_base_loop(c.base, EVLOOP_ONCE);
	T_OK(c.items == 5 && c.bad == 1, "5 items and the oversized wrapper "
	    "(%d, %d)", c.items, c.bad);
	T_OK(c.got.len == want.len && memcmp(c.got.p, want.p, want.len) == 0,
	    "the items arrive unwrapped, byte for byte");
	T_OK(c.types[0] == CATS_T_STATS && c.types[1] == CATS_T_PATH_REQ &&
	    c.types[2] == CATS_T_ERROR && c.types[3] == CATS_T_BINDING &&
	    c.types[4] == CATS_T_STATUS, "each with its type");
	struct cats_stream_stats st;
	cats_stream_stats(out, &st);
	T_OK(st.bytes_out == r[0].len + 3 + r[1].len + 4 + r[2].len + 5 +
	    r[4].len + 3, "the wrappers: tag 24 and a head of 1, 2, 3 bytes");
	cats_stream_free(out);
	cats_stream_free(in);
	close(sv[0]);
	close(sv[1]);
	event_base_free(c.base);
	for (int i = 0; i < 5; i++)
		cats_buf_free(&r[i]);
	cats_buf_free(&want);
	cats_buf_free(&c.got);
}

/* A commit whose end sends one more item (held for the next batch), as
 * the contract allows, n times; reads seen meanwhile. */
struct chain {
	struct cats_stream *out;
	struct cats_buf item;
	int wfd;	/* the reader's peer: written at the 5th end */
	int ends, max, reads, ends_at_first_read;
};

static int
chain_end(void *arg, int rc)
{
	struct chain *c = arg;
	if (++c->ends == 5 &&
	    write(c->wfd, c->item.p, c->item.len) != (ssize_t)c->item.len)
		return -1;
	if (c->ends < c->max)
		cats_stream_send(c->out, c->item.p, c->item.len);
	return 0;
}

static void
chain_read(struct cats_stream *s, const uint8_t *p, size_t n, uint64_t index,
    const struct cats_peer *peer, void *arg)
{
	struct chain *c = arg;
	if (c->reads++ == 0)
		c->ends_at_first_read = c->ends;
}

static const struct cats_commit_ops CHAIN_OPS = { NULL, NULL, chain_end };

/*
 * The next batch begins after the loop has looked at its descriptors: a
 * commit whose end sends again (the next batch's item) does not keep the
 * loop from reading.  Before, the next batch was activated in the same
 * pass, and such a chain ran all of its 1,000 batches before the read of
 * an item that came at its 5th.
 */
static void
test_commit_chain(void)
{
	int sv[2], sr[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	socketpair(AF_UNIX, SOCK_STREAM, 0, sr);
	struct event_base *base = event_base_new();
	struct chain c = { .max = 1000 };
	encode_json("{\"type\":\"error\",\"code\":\"c\"}", &c.item);
	struct cats_stream_cbs rcbs = { .item = chain_read };
	struct cats_stream *in = cats_stream_new(base, sr[0], -1, false, NULL,
	    0, &rcbs, &c);
	c.out = cats_stream_new(base, -1, sv[1], false, NULL, 0, NULL, NULL);
	struct cats_commit *cm = cats_commit_new(base, &CHAIN_OPS, &c, 0);
	cats_stream_hold(c.out, cm);
	c.wfd = sr[1];
	cats_stream_send(c.out, c.item.p, c.item.len);
	while (c.ends < c.max)
		event_base_loop(base, EVLOOP_ONCE);
	T_OK(c.reads == 1 && c.ends_at_first_read < 10,
	    "an item that came during the chain was read within a few "
	    "batches (after %d of %d)", c.ends_at_first_read, c.max);
	cats_commit_free(cm);
	cats_stream_free(c.out);
	cats_stream_free(in);
	close(sv[0]);
	close(sv[1]);
	close(sr[0]);
	close(sr[1]);
	event_base_free(base);
	cats_buf_free(&c.item);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_reader_partial();
	test_reader_resync();
	test_stream();
	test_stream_pause();
	test_stream_decode_into();
	test_stream_wrap();
	test_stream_batch();
	test_stream_hold();
	test_commit_pipeline();
	test_commit_chain();
	return t_done();
}
