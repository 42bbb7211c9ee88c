/*
 * test_seq.c - CBOR Sequence reader and libevent record streams.
 */
#include <stdio.h>
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
	struct cats_stream_cbs cbs = { on_item, on_bad, on_eof, on_drained };
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
	struct cats_stream_cbs cbs = { on_item, on_bad, on_eof, NULL };
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

int
main(void)
{
	test_reader_partial();
	test_reader_resync();
	test_stream();
	test_stream_pause();
	test_stream_decode_into();
	return t_done();
}
