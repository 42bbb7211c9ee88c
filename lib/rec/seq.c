/*
 * seq.c - CBOR Sequence reader, and record streams under libevent.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "rec/seq.h"

#define READ_CHUNK 65536

void
cats_seq_reader_init(struct cats_seq_reader *r, const struct cats_limits *lim)
{
	memset(r, 0, sizeof(*r));
	r->lim = lim ? *lim : cats_limits_default;
}

void
cats_seq_reader_free(struct cats_seq_reader *r)
{
	cats_buf_free(&r->buf);
	cats_toks_free(&r->toks);
}

/* Drop consumed bytes when they are more than what is left. */
static void
compact(struct cats_seq_reader *r)
{
	if (r->start == 0)
		return;
	if (r->start == r->buf.len) {
		r->buf.len = 0;
		r->start = 0;
	} else if (r->start > r->buf.len / 2) {
		cats_buf_consume(&r->buf, r->start);
		r->start = 0;
	}
}

int
cats_seq_feed(struct cats_seq_reader *r, const void *p, size_t n)
{
	r->start += r->consume;
	r->consume = 0;
	compact(r);
	return cats_buf_add(&r->buf, p, n);
}

ssize_t
cats_seq_read_fd(struct cats_seq_reader *r, int fd)
{
	r->start += r->consume;
	r->consume = 0;
	compact(r);
	if (cats_buf_reserve(&r->buf, READ_CHUNK) < 0) {
		errno = ENOMEM;
		return -1;
	}
	ssize_t got = read(fd, r->buf.p + r->buf.len, READ_CHUNK);
	if (got > 0)
		r->buf.len += (size_t)got;
	else if (got == 0)
		r->eof = true;
	return got;
}

/* Skip to the next byte that could start a map (major type 5). */
static void
skip_to_map(struct cats_seq_reader *r)
{
	r->start++;
	while (r->start < r->buf.len && (r->buf.p[r->start] >> 5) != 5)
		r->start++;
	r->need = 0;
}

/* The record type an item names when "type" is its first key, as the
 * encoder writes it (rec.h): -1 when it is not, or names no type. */
static int
peek_type(const uint8_t *b, size_t n)
{
	size_t off;
	if (n < 1 || (b[0] >> 5) != 5)
		return -1;
	off = (b[0] & 31) < 24 ? 1 : (b[0] & 31) == 24 ? 2 :
	    (b[0] & 31) == 25 ? 3 : 0;
	if (off == 0 || n < off + 6 || memcmp(b + off, "\x64type", 5) != 0)
		return -1;
	off += 5;
	size_t tl = b[off] & 31, hl = 1;
	if ((b[off] >> 5) != 3 || tl > 24)
		return -1;
	if (tl == 24) {
		if (n < off + 2)
			return -1;
		tl = b[off + 1];
		hl = 2;
	}
	if (n - off - hl < tl)
		return -1;
	return cats_type_from_name((const char *)b + off + hl, tl);
}

/*
 * One item of a framing reader at b[0..len) (r->frame): an item its sender
 * wrapped (CATS_WRAP_FD: tag 24 around a byte string) is framed by its
 * head and is the string's content, *skip the wrapper's bytes before it;
 * a bare one is framed by a walk (cats_frame()).  r->type is set from the
 * item's first key, else from the walk.  CATS_SCAN_* as cats_scan, *used
 * and *need counting the wrapper.
 */
static int
frame_one(struct cats_seq_reader *r, const uint8_t *b, size_t len, bool final,
    size_t *used, size_t *skip, size_t *need, struct cats_err *e)
{
	const uint8_t *tp;
	size_t tn, hl = 0, want = 3;
	uint64_t arg = 0;
	*skip = 0;
	r->type = -1;
	if (len == 0 || b[0] != 0xd8 || (len >= 2 && b[1] != 0x18) ||
	    (len >= 3 && ((b[2] >> 5) != 2 || (b[2] & 31) > 27))) {
		int st = cats_frame(b, len, final, &r->lim, &tp, &tn, used,
		    need, e);
		if (st == CATS_SCAN_OK)
			r->walked++;
		if (st == CATS_SCAN_OK && tp != NULL)
			r->type = cats_type_from_name((const char *)tp, tn);
		return st;
	}
	if (len >= 3) {
		hl = (b[2] & 31) < 24 ? 1 : 1 + ((size_t)1 << ((b[2] & 31) - 24));
		want = 2 + hl;
	}
	if (len >= want) {
		arg = (b[2] & 31) < 24 ? (b[2] & 31) : 0;
		for (size_t x = 3; x < 2 + hl; x++)
			arg = arg << 8 | b[x];
		if (arg > r->lim.max_record)
			return cats_err_set(e, NULL, "wrapped item of %llu bytes "
			    "exceeds the %zu-byte record limit",
			    (unsigned long long)arg, r->lim.max_record);
		want = 2 + hl + (size_t)arg;
	}
	if (len < want) {
		if (final)
			return cats_err_set(e, NULL, "truncated wrapped item: "
			    "%zu bytes needed, %zu left", want, len);
		*need = want;
		return CATS_SCAN_MORE;
	}
	*skip = 2 + hl;
	*used = want;
	const uint8_t *item = b + *skip;
	size_t n = (size_t)arg, in_used = 0;
	if ((r->type = peek_type(item, n)) >= 0)
		return CATS_SCAN_OK;
	if (cats_frame(item, n, true, &r->lim, &tp, &tn, &in_used, NULL,
	    e) != CATS_SCAN_OK)
		return CATS_SCAN_BAD;
	if (in_used != n)
		return cats_err_set(e, NULL, "%zu bytes after the item in its "
		    "wrapper", n - in_used);
	if (tp != NULL)
		r->type = cats_type_from_name((const char *)tp, tn);
	return CATS_SCAN_OK;
}

static int
next_item(struct cats_seq_reader *r, struct cats_toks *toks,
    struct cats_arena *arena, const uint8_t **p, size_t *n,
    struct cats_err *err)
{
	r->start += r->consume;
	r->consume = 0;
	for (;;) {
		size_t avail = r->buf.len - r->start;
		if (avail == 0) {
			compact(r);
			return CATS_SEQ_NEED;
		}
		if (!r->eof && avail < r->need)
			return CATS_SEQ_NEED;
		size_t used = 0, need = 0;
		if (arena != NULL)
			cats_arena_reset(arena);
		struct cats_err e;
		memset(&e, 0, sizeof(e));
		size_t skip = 0;
		int s = r->frame ? frame_one(r, r->buf.p + r->start, avail,
		    r->eof, &used, &skip, &need, &e) : cats_scan(r->buf.p +
		    r->start, avail, r->eof, &r->lim, toks, arena, &used, &need,
		    &e);
		if (s == CATS_SCAN_OK) {
			r->need = 0;
			r->resync = false;
			r->consume = used;
			r->index++;
			*p = r->buf.p + r->start + skip;
			*n = used - skip;
			return CATS_SEQ_ITEM;
		}
		if (s == CATS_SCAN_MORE) {
			r->need = need;
			return CATS_SEQ_NEED;
		}
		if (r->resync) {
			skip_to_map(r);
			continue;
		}
		if (err != NULL) {
			*err = e;
			err->offset = e.offset;
			/* '{"' starts a text string of 2^63 bytes in CBOR:
			 * the input is JSON, and the scanner's reason about
			 * a length nobody wrote would mislead. */
			const uint8_t *b = r->buf.p + r->start;
			if (avail >= 2 && b[0] == '{' && (b[1] == '"' ||
			    b[1] == ' ' || b[1] == '}'))
				cats_err_set(err, NULL, "this looks like JSON, "
				    "not CBOR (cats-cbor encode turns JSON "
				    "Lines into CBOR)");
		}
		r->index++;
		r->resync = true;
		skip_to_map(r);
		return CATS_SEQ_BAD;
	}
}

int
cats_seq_next(struct cats_seq_reader *r, const uint8_t **p, size_t *n,
    struct cats_err *err)
{
	return next_item(r, &r->toks, NULL, p, n, err);
}

/* The next item, scanned into d's tokens and arena with d's limits. */
static int
next_item_dec(struct cats_seq_reader *r, struct cats_dec *d,
    const uint8_t **p, size_t *n, struct cats_err *err)
{
	struct cats_limits saved = r->lim;
	r->lim = d->lim;
	int s = next_item(r, &d->toks, &d->arena, p, n, err);
	r->lim = saved;
	return s;
}

int
cats_seq_next_rec(struct cats_seq_reader *r, struct cats_dec *d,
    struct cats_rec *rec, struct cats_err *err)
{
	const uint8_t *p;
	size_t n;
	int s = next_item_dec(r, d, &p, &n, err);
	if (s != CATS_SEQ_ITEM)
		return s;
	return cats_rec_from_toks(d, rec, err) < 0 ? CATS_SEQ_BAD
	    : CATS_SEQ_ITEM;
}

int
cats_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *q = p;
	while (n > 0) {
		ssize_t w = write(fd, q, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				fd_set ws;
				FD_ZERO(&ws);
				FD_SET(fd, &ws);
				select(fd + 1, NULL, &ws, NULL, NULL);
				continue;
			}
			return -1;
		}
		q += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ---- streams ---- */

struct cats_stream {
	struct event_base *base;
	int rfd, wfd;
	bool dgram, rfile, wfile, own;
	struct event *rev, *wev, *kick;
	struct event *bev;	/* end of the turn: write the batch */
	size_t batch_max;	/* 0: unbatched */
	size_t batched;		/* bytes of out not yet offered to write */
	uint64_t batch_items;	/* items in them */
	struct cats_commit *cm;	/* output held until its commit, or NULL */
	struct cats_stream *cm_prev, *cm_next;	/* the commit's streams */
	size_t held;		/* bytes at the tail of out held */
	uint64_t held_items;	/* items in them */
	size_t mark;		/* of them, held when the commit began */
	uint64_t mark_items;
	int release_err;	/* a release's write broke it: errno, told */
	struct cats_seq_reader rd;
	uint8_t *dgbuf;
	struct cats_buf out;
	size_t out_start, high, low;
	bool above, paused, eof_told, broken;
	int busy;		/* inside a callback */
	bool dead;		/* freed while busy */
	struct cats_stream_cbs cbs;
	void *arg;
	struct cats_dec *dec;	/* items are scanned into it (or NULL) */
	bool wrap;		/* items sent go wrapped (CATS_WRAP_FD) */
	struct cats_buf wbuf;	/* the wrapped item being sent */
	struct cats_stream_stats st;
	int rflags, wflags;	/* file status flags to restore, or -1 */
};

struct cats_commit {
	struct event *ev;	/* the end of the turn: begin a batch */
	struct cats_commit_ops ops;
	void *arg;
	size_t max;		/* commit as soon as this much is held */
	size_t held;		/* bytes held in all its streams */
	struct cats_stream *head, *tail;
	bool running;		/* inside begin or end (on the loop) */
	bool flying;		/* a batch's work is on the worker */
	bool again;		/* a batch was asked for while one flew */
	/* Off the loop only while it pays: the last flight had the next
	 * batch waiting behind it (pipelined); else a slow batch runs here
	 * (no thread wakeup for a lone client) but every probe-th one. */
	bool pipelined;
	unsigned since_probe, probe;
	/* The worker thread: the loop hands it a batch (job), it answers
	 * (done, rc) under mu and tells the loop through efd. */
	pthread_t thr;
	bool thr_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool job, done, quit;
	int rc;
	int efd;
	struct event *dev;	/* efd readable: a batch's work ended */
};

/*
 * Make fd non-blocking, remembering its flags: stdin and stdout may be
 * shared with the shell, which must get them back as they were.
 */
static int
set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && !(fl & O_NONBLOCK))
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	return fl;
}

static void stream_destroy(struct cats_stream *s);

/* A callback is over: a stream freed during it goes now.  True if gone. */
static bool
unbusy(struct cats_stream *s)
{
	if (--s->busy > 0 || !s->dead)
		return false;
	stream_destroy(s);
	return true;
}

/* A malformed item to the bad callback, or else to the rec one (rec NULL). */
static void
give_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e)
{
	if (s->cbs.bad) {
		s->cbs.bad(s, index, e, s->arg);
		return;
	}
	if (s->cbs.rec == NULL || s->dec == NULL)
		return;
	struct cats_item it;
	memset(&it, 0, sizeof(it));
	it.index = index;
	it.err = *e;
	cats_err_fmt(&it.err, index, it.why, sizeof(it.why));
	s->cbs.rec(s, &it, s->arg);
}

/* One complete item to the rec callback, decoded, or to the item one. */
static void
give_item(struct cats_stream *s, const uint8_t *p, size_t n, uint64_t index,
    const struct cats_peer *peer)
{
	if (s->cbs.rec == NULL || s->dec == NULL) {
		if (s->cbs.item)
			s->cbs.item(s, p, n, index, peer, s->arg);
		return;
	}
	struct cats_rec r;
	struct cats_item it;
	it.p = p;
	it.n = n;
	it.index = index;
	it.peer = peer;
	it.rec = &r;
	it.why[0] = '\0';
	memset(&it.err, 0, sizeof(it.err));
	if (cats_rec_from_toks(s->dec, &r, &it.err) < 0) {
		it.rec = NULL;
		cats_err_fmt(&it.err, index, it.why, sizeof(it.why));
	}
	s->cbs.rec(s, &it, s->arg);
}

static void
deliver(struct cats_stream *s)
{
	s->busy++;
	while (!s->paused && !s->dead) {
		const uint8_t *p;
		size_t n;
		struct cats_err e;
		memset(&e, 0, sizeof(e));
		int r = s->dec != NULL ? next_item_dec(&s->rd, s->dec, &p, &n,
		    &e) : cats_seq_next(&s->rd, &p, &n, &e);
		if (r == CATS_SEQ_ITEM) {
			s->st.items++;
			give_item(s, p, n, s->rd.index - 1, NULL);
		} else if (r == CATS_SEQ_BAD) {
			s->st.bad++;
			give_bad(s, s->rd.index - 1, &e);
		} else {
			if (s->rd.eof && !s->eof_told &&
			    s->rd.buf.len == s->rd.start) {
				s->eof_told = true;
				if (s->rev)
					event_del(s->rev);
				if (s->cbs.eof)
					s->cbs.eof(s, 0, s->arg);
			}
			break;
		}
	}
	unbusy(s);
}

static void
read_dgram(struct cats_stream *s)
{
	size_t cap = s->rd.lim.max_record + 1;
	s->busy++;
	for (int i = 0; i < 64 && !s->paused && !s->dead; i++) {
		struct cats_peer peer;
		peer.len = sizeof(peer.addr);
		ssize_t n = recvfrom(s->rfd, s->dgbuf, cap, 0,
		    (struct sockaddr *)&peer.addr, &peer.len);
		if (n < 0)
			break;
		uint64_t index = s->rd.index++;
		struct cats_err e;
		memset(&e, 0, sizeof(e));
		size_t used = 0, skip = 0;
		int r;
		if ((size_t)n > s->rd.lim.max_record) {
			cats_err_set(&e, NULL, "datagram exceeds the %zu-byte "
			    "record limit", s->rd.lim.max_record);
			r = CATS_SCAN_BAD;
		} else {
			struct cats_dec *d = s->dec;
			if (d != NULL)
				cats_arena_reset(&d->arena);
			if (s->rd.frame) {
				r = frame_one(&s->rd, s->dgbuf, (size_t)n, true,
				    &used, &skip, NULL, &e);
			} else {
				r = cats_scan(s->dgbuf, (size_t)n, true,
				    d ? &d->lim : &s->rd.lim,
				    d ? &d->toks : &s->rd.toks,
				    d ? &d->arena : NULL, &used, NULL, &e);
			}
			if (r == CATS_SCAN_OK && used != (size_t)n) {
				cats_err_set(&e, NULL, "%zu bytes after the "
				    "record in the datagram", (size_t)n - used);
				r = CATS_SCAN_BAD;
			}
		}
		if (r == CATS_SCAN_OK) {
			s->st.items++;
			give_item(s, s->dgbuf + skip, (size_t)n - skip, index,
			    peer.len ? &peer : NULL);
		} else {
			s->st.bad++;
			give_bad(s, index, &e);
		}
	}
	unbusy(s);
}

/*
 * A TLS client on a plaintext stream: its first bytes are a handshake
 * record (0x16, then version 3.x), which CBOR would take for the integer
 * 22 and go on with a line per "item" of the ClientHello.  One bad item
 * that says so, and the end of the stream (EPROTO): the tool closes it.
 */
static bool
tls_hello(struct cats_stream *s)
{
	const uint8_t *b = s->rd.buf.p + s->rd.start;
	if (s->rd.index != 0 || s->rfile || s->rd.buf.len - s->rd.start < 2 ||
	    b[0] != 0x16 || b[1] != 0x03)
		return false;
	struct cats_err e;
	memset(&e, 0, sizeof(e));
	cats_err_set(&e, NULL, "a TLS handshake on a plaintext stream (the "
	    "peer speaks TLS: a tls: endpoint), closed");
	s->rd.index++;
	s->rd.eof = true;
	event_del(s->rev);
	s->st.bad++;
	if (s->cbs.bad)
		s->cbs.bad(s, 0, &e, s->arg);
	if (!s->dead && !s->eof_told && s->cbs.eof) {
		s->eof_told = true;
		s->cbs.eof(s, EPROTO, s->arg);
	}
	return true;
}

static void
on_read(evutil_socket_t fd, short what, void *arg)
{
	struct cats_stream *s = arg;
	(void)fd;
	(void)what;
	if (s->dgram) {
		read_dgram(s);
		return;
	}
	/* A regular file is read a chunk per turn of the loop. */
	ssize_t got = cats_seq_read_fd(&s->rd, s->rfd);
	if (got < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (got < 0) {
		int e = errno;
		s->rd.eof = true;
		event_del(s->rev);
		s->busy++;
		if (!s->eof_told && s->cbs.eof) {
			s->eof_told = true;
			s->cbs.eof(s, e, s->arg);
		}
		unbusy(s);
		return;
	}
	/* deliver() may run a callback that frees the stream. */
	s->busy++;
	if (tls_hello(s)) {
		unbusy(s);
		return;
	}
	deliver(s);
	if (unbusy(s))
		return;
	if (s->rfile && !s->rd.eof && !s->paused && !s->dead)
		event_active(s->rev, EV_READ, 0);
}

static void
on_kick(evutil_socket_t fd, short what, void *arg)
{
	struct cats_stream *s = arg;
	(void)fd;
	(void)what;
	if (s->dgram)
		return;
	s->busy++;
	deliver(s);
	if (unbusy(s))
		return;
	if (!s->dead && !s->paused && !s->rd.eof) {
		if (s->rfile)
			event_active(s->rev, EV_READ, 0);
	}
}

static size_t
queued(const struct cats_stream *s)
{
	return s->out.len - s->out_start;
}

/* What may be written now: the queue less its held tail. */
static size_t
offered(const struct cats_stream *s)
{
	return queued(s) - s->held;
}

/* The held tail is gone with the rest of the queue (broken, or dropped). */
static void
held_gone(struct cats_stream *s, bool lost)
{
	if (s->cm != NULL)
		s->cm->held -= s->held;
	if (lost)
		s->st.lost += s->held_items;
	s->held = s->mark = 0;
	s->held_items = s->mark_items = 0;
}

static void
flush_some(struct cats_stream *s)
{
	while (offered(s) > 0) {
		ssize_t w = write(s->wfd, s->out.p + s->out_start, offered(s));
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN) {
				s->broken = true;
				s->out.len = s->out_start = 0;
			}
			break;
		}
		s->out_start += (size_t)w;
		s->st.bytes_out += (size_t)w;
	}
	if (queued(s) == 0) {
		s->out.len = s->out_start = 0;
	} else if (s->out_start > s->out.len / 2) {
		cats_buf_consume(&s->out, s->out_start);
		s->out_start = 0;
	}
	/* A batch is the tail of the queue: what was written is not in it. */
	if (s->broken) {
		s->st.lost += s->batch_items;
		s->batched = 0;
		s->batch_items = 0;
		held_gone(s, true);
	} else if (s->batched > offered(s)) {
		s->batched = offered(s);
	}
}

/*
 * After a write from an event: tell the owner that the output drained
 * below the low-water mark, or else that it broke (EPIPE).  broke: the
 * write broke it with that errno, told first.
 */
static void
tell_output(struct cats_stream *s, int broke)
{
	s->busy++;
	if (!broke && s->above && queued(s) <= s->low) {
		s->above = false;
		if (s->cbs.drained)
			s->cbs.drained(s, s->arg);
	} else if (s->broken && !s->eof_told && s->cbs.eof) {
		s->eof_told = true;
		s->cbs.eof(s, broke ? broke : EPIPE, s->arg);
	}
	unbusy(s);
}

static void
on_write(evutil_socket_t fd, short what, void *arg)
{
	struct cats_stream *s = arg;
	(void)fd;
	(void)what;
	flush_some(s);
	if (offered(s) == 0 || s->broken)
		event_del(s->wev);
	tell_output(s, 0);
}

/*
 * Descriptors epoll cannot watch (regular files, and character devices
 * such as /dev/null that are not terminals) are read and written directly.
 */
static bool
is_regular(int fd)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return false;
	return S_ISREG(st.st_mode) || (S_ISCHR(st.st_mode) && !isatty(fd));
}

/* The descriptor CATS_WRAP_FD names, read once; -1: none. */
static int
wrap_fd(void)
{
	static int fd = -2;
	if (fd == -2) {
		const char *v = getenv(CATS_WRAP_FD);
		char *end;
		long l = v != NULL ? strtol(v, &end, 10) : -1;
		fd = v != NULL && *v != '\0' && *end == '\0' && l >= 0 &&
		    l < INT_MAX ? (int)l : -1;
	}
	return fd;
}

struct cats_stream *
cats_stream_new(struct event_base *base, int rfd, int wfd, bool dgram,
    const struct cats_limits *lim, size_t out_high,
    const struct cats_stream_cbs *cbs, void *arg)
{
	struct cats_stream *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->base = base;
	s->rfd = rfd;
	s->wfd = wfd;
	s->rflags = s->wflags = -1;
	s->dgram = dgram;
	s->high = out_high ? out_high : (1u << 20);
	s->low = s->high / 4;
	if (cbs != NULL)
		s->cbs = *cbs;
	s->arg = arg;
	cats_seq_reader_init(&s->rd, lim);
	s->wrap = !dgram && wfd >= 0 && wfd == wrap_fd();
	s->kick = event_new(base, -1, 0, on_kick, s);
	if (s->kick == NULL)
		goto fail;
	if (rfd >= 0) {
		s->rfile = is_regular(rfd);
		if (dgram) {
			s->dgbuf = malloc(s->rd.lim.max_record + 1);
			if (s->dgbuf == NULL)
				goto fail;
		}
		if (!s->rfile)
			s->rflags = set_nonblock(rfd);
		s->rev = s->rfile ? event_new(base, -1, 0, on_read, s)
		    : event_new(base, rfd, EV_READ | EV_PERSIST, on_read, s);
		if (s->rev == NULL)
			goto fail;
		if (s->rfile)
			event_active(s->rev, EV_READ, 0);
		else
			event_add(s->rev, NULL);
	}
	if (wfd >= 0) {
		s->wfile = is_regular(wfd);
		if (!s->wfile) {
			s->wflags = set_nonblock(wfd);
			s->wev = event_new(base, wfd, EV_WRITE | EV_PERSIST,
			    on_write, s);
			if (s->wev == NULL)
				goto fail;
		}
	}
	return s;
fail:
	stream_destroy(s);
	return NULL;
}

void
cats_stream_decode_into(struct cats_stream *s, struct cats_dec *d)
{
	s->dec = d;
}

void
cats_stream_wrap(struct cats_stream *s)
{
	s->wrap = !s->dgram && s->wfd >= 0;
}

void
cats_stream_frame(struct cats_stream *s)
{
	s->dec = NULL;
	s->rd.frame = true;
}

int
cats_stream_item_type(const struct cats_stream *s)
{
	return s->rd.frame ? s->rd.type : -1;
}

void
cats_stream_own(struct cats_stream *s)
{
	s->own = true;
}

/*
 * Offer the batch to write(2): all of it on a regular file, what the
 * descriptor takes now otherwise (the rest waits for EV_WRITE).  Returns
 * -1 with errno if the stream broke.
 */
static int
push(struct cats_stream *s)
{
	if (s->batched == 0)
		return s->broken ? -1 : 0;
	uint64_t items = s->batch_items;
	s->batched = 0;
	s->batch_items = 0;
	if (s->wfile) {
		size_t off = offered(s);
		if (cats_write_all(s->wfd, s->out.p + s->out_start, off) < 0) {
			s->broken = true;
			s->out.len = s->out_start = 0;
			held_gone(s, true);
		} else {
			s->st.bytes_out += off;
			s->out_start += off;
			if (queued(s) == 0)
				s->out.len = s->out_start = 0;
		}
	} else {
		flush_some(s);
		if (offered(s) > 0 && !s->broken)
			event_add(s->wev, NULL);
	}
	if (s->broken) {
		s->st.lost += items;
		return -1;
	}
	/* Drained by this write: on_batch tells, at the end of the turn. */
	if (s->above && queued(s) <= s->low)
		event_active(s->bev, 0, 0);
	return 0;
}

/* The end of the turn the batch was opened in. */
static void
on_batch(evutil_socket_t fd, short what, void *arg)
{
	struct cats_stream *s = arg;
	(void)fd;
	(void)what;
	if (s->dead)
		return;
	int err = s->release_err;
	s->release_err = 0;
	if (err == 0 && s->batched > 0 && push(s) < 0)
		err = errno ? errno : EPIPE;
	if (err != 0)
		tell_output(s, err);
	else if (!s->broken)	/* (broken in a send(), which said -1) */
		tell_output(s, 0);
}

int
cats_stream_batch(struct cats_stream *s, size_t max)
{
	if (s->bev == NULL &&
	    (s->bev = event_new(s->base, -1, 0, on_batch, s)) == NULL)
		return -1;
	s->batch_max = max ? max : 65536;
	return 0;
}

size_t
cats_stream_batched(const struct cats_stream *s)
{
	return s->batched;
}

int
cats_stream_push(struct cats_stream *s)
{
	return push(s);
}

/* Queue an item in the batch; it leaves at the end of the turn or at max. */
static int
send_batched(struct cats_stream *s, const uint8_t *p, size_t n)
{
	if (cats_buf_add(&s->out, p, n) < 0)
		return -1;
	if (s->batched == 0)
		event_active(s->bev, 0, 0);
	s->batched += n;
	s->batch_items++;
	if (s->batched >= s->batch_max && push(s) < 0)
		return -1;
	if (queued(s) > s->high) {
		s->above = true;
		return 1;
	}
	return 0;
}

/* ---- held output (the commit points) ---- */

static int commit_begin(struct cats_commit *cm, bool here);
static void release(struct cats_stream *s);

static void
on_commit(evutil_socket_t fd, short what, void *arg)
{
	struct cats_commit *cm = arg;
	(void)fd;
	(void)what;
	if (cm->running)
		return;
	if (cm->flying)
		cm->again = true;	/* begun when the one in flight ends */
	else
		(void)commit_begin(cm, false);
}

/* The worker: one batch's work at a time; no libevent call but efd. */
static void *
worker(void *arg)
{
	struct cats_commit *cm = arg;
	pthread_mutex_lock(&cm->mu);
	for (;;) {
		while (!cm->job && !cm->quit)
			pthread_cond_wait(&cm->cv, &cm->mu);
		if (cm->quit)
			break;
		cm->job = false;
		pthread_mutex_unlock(&cm->mu);
		int rc = cm->ops.work(cm->arg);
		pthread_mutex_lock(&cm->mu);
		cm->rc = rc;
		cm->done = true;
		pthread_cond_broadcast(&cm->cv);
		uint64_t one = 1;
		while (write(cm->efd, &one, sizeof(one)) < 0 && errno == EINTR)
			;
	}
	pthread_mutex_unlock(&cm->mu);
	return NULL;
}

static int
worker_start(struct cats_commit *cm)
{
	if (cm->thr_started)
		return 0;
	/* Signals stay with the loop's thread. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(&cm->thr, NULL, worker, cm);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e != 0)
		return -1;
	cm->thr_started = true;
	return 0;
}

/*
 * A batch ended with work's answer rc: end says what it is worth; 0
 * releases what was held when it began.  Then the next batch, if one was
 * asked for (or is held) and this one went well.
 */
static int
commit_end(struct cats_commit *cm, int rc)
{
	bool flew = cm->flying;
	cm->flying = false;
	cm->running = true;
	if (cm->ops.end != NULL)
		rc = cm->ops.end(cm->arg, rc);
	for (struct cats_stream *s = cm->head; s != NULL; s = s->cm_next) {
		if (rc == 0)
			release(s);
		s->mark = 0;
		s->mark_items = 0;
	}
	cm->running = false;
	bool again = cm->again;
	cm->again = false;
	/* Held now: sent while it flew (or refused with it). */
	if (flew)
		cm->pipelined = again || cm->held > 0;
	/* The next batch after the loop has polled its descriptors (a 0 s
	 * timer): activated here, in a callback, it would run in this same
	 * pass, and an end that sends again (the contract allows it) would
	 * chain batches with no read between them. */
	static const struct timeval zero = { 0, 0 };
	if (rc == 0 && (again || cm->held > 0))
		event_add(cm->ev, &zero);
	return rc < 0 ? -1 : 0;
}

/*
 * Begin a batch: what is held now is marked; its work runs here (here, or
 * begin said it is cheap, or no worker) or on the worker.  -1 when refused
 * or it ended here badly; 0 when it ended here well or flies.
 */
static int
commit_begin(struct cats_commit *cm, bool here)
{
	event_del(cm->ev);
	cm->again = false;
	cm->running = true;
	for (struct cats_stream *s = cm->head; s != NULL; s = s->cm_next) {
		s->mark = s->held;
		s->mark_items = s->held_items;
	}
	int b = cm->ops.begin != NULL ? cm->ops.begin(cm->arg) : 0;
	cm->running = false;
	if (b < 0) {
		for (struct cats_stream *s = cm->head; s != NULL;
		    s = s->cm_next) {
			s->mark = 0;
			s->mark_items = 0;
		}
		return -1;
	}
	if (cm->ops.work == NULL)
		return commit_end(cm, 0);
	bool probe = ++cm->since_probe >= cm->probe;
	if (b == 0 || here || (!cm->pipelined && !probe) ||
	    worker_start(cm) < 0)
		return commit_end(cm, cm->ops.work(cm->arg));
	cm->since_probe = 0;
	pthread_mutex_lock(&cm->mu);
	cm->job = true;
	cm->done = false;
	pthread_cond_signal(&cm->cv);
	pthread_mutex_unlock(&cm->mu);
	cm->flying = true;
	return 0;
}

/* The worker's answer, waited for or not: -2 when there is none yet. */
static int
worker_answer(struct cats_commit *cm, bool block)
{
	int rc = -2;
	pthread_mutex_lock(&cm->mu);
	while (block && !cm->done)
		pthread_cond_wait(&cm->cv, &cm->mu);
	if (cm->done) {
		cm->done = false;
		rc = cm->rc;
	}
	pthread_mutex_unlock(&cm->mu);
	uint64_t v;
	if (rc != -2)
		while (read(cm->efd, &v, sizeof(v)) < 0 && errno == EINTR)
			;
	return rc;
}

static void
on_done(evutil_socket_t fd, short what, void *arg)
{
	struct cats_commit *cm = arg;
	(void)fd;
	(void)what;
	if (!cm->flying) {
		uint64_t v;
		while (read(cm->efd, &v, sizeof(v)) < 0 && errno == EINTR)
			;
		return;
	}
	int rc = worker_answer(cm, false);
	if (rc != -2)
		commit_end(cm, rc);
}

struct cats_commit *
cats_commit_new(struct event_base *base, const struct cats_commit_ops *ops,
    void *arg, size_t max)
{
	struct cats_commit *cm = calloc(1, sizeof(*cm));
	if (cm == NULL)
		return NULL;
	cm->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (cm->efd < 0) {
		free(cm);
		return NULL;
	}
	cm->ev = event_new(base, -1, 0, on_commit, cm);
	cm->dev = event_new(base, cm->efd, EV_READ | EV_PERSIST, on_done, cm);
	if (cm->ev == NULL || cm->dev == NULL || event_add(cm->dev, NULL) < 0 ||
	    pthread_mutex_init(&cm->mu, NULL) != 0) {
		if (cm->ev != NULL)
			event_free(cm->ev);
		if (cm->dev != NULL)
			event_free(cm->dev);
		close(cm->efd);
		free(cm);
		return NULL;
	}
	if (pthread_cond_init(&cm->cv, NULL) != 0) {
		pthread_mutex_destroy(&cm->mu);
		event_free(cm->ev);
		event_free(cm->dev);
		close(cm->efd);
		free(cm);
		return NULL;
	}
	if (ops != NULL)
		cm->ops = *ops;
	cm->arg = arg;
	cm->max = max ? max : (1u << 20);
	cm->probe = 8;
	cm->since_probe = cm->probe - 1;	/* the first slow one probes */
	return cm;
}

void
cats_commit_probe(struct cats_commit *cm, unsigned every)
{
	cm->probe = every ? every : 1;
	cm->since_probe = cm->probe - 1;
}

/* s leaves its commit point; its held output is dropped, never written. */
static void
hold_leave(struct cats_stream *s)
{
	struct cats_commit *cm = s->cm;
	if (cm == NULL)
		return;
	s->out.len -= s->held;
	held_gone(s, false);
	if (s->cm_prev != NULL)
		s->cm_prev->cm_next = s->cm_next;
	else
		cm->head = s->cm_next;
	if (s->cm_next != NULL)
		s->cm_next->cm_prev = s->cm_prev;
	else
		cm->tail = s->cm_prev;
	s->cm = NULL;
	s->cm_prev = s->cm_next = NULL;
}

int
cats_stream_hold(struct cats_stream *s, struct cats_commit *cm)
{
	if (s->dgram || s->wfd < 0 || s->broken)
		return -1;
	if (s->bev == NULL &&
	    (s->bev = event_new(s->base, -1, 0, on_batch, s)) == NULL)
		return -1;
	if (s->batched > 0 && push(s) < 0)
		return -1;
	hold_leave(s);
	s->cm = cm;
	s->cm_prev = cm->tail;
	if (cm->tail != NULL)
		cm->tail->cm_next = s;
	else
		cm->head = s;
	cm->tail = s;
	return 0;
}

size_t
cats_stream_held(const struct cats_stream *s)
{
	return s->held;
}

/* Queue an item behind the commit point; it leaves once committed. */
static int
send_held(struct cats_stream *s, const uint8_t *p, size_t n)
{
	struct cats_commit *cm = s->cm;
	if (cats_buf_add(&s->out, p, n) < 0)
		return -1;
	s->held += n;
	s->held_items++;
	cm->held += n;
	int rc = 0;
	if (queued(s) > s->high) {
		s->above = true;
		rc = 1;
	}
	/* The commit may free s (its owner drops a slow peer): s is done. */
	if (cm->held >= cm->max && !cm->running)
		cats_commit_run(cm);
	else if (!cm->running)
		event_active(cm->ev, 0, 0);
	return rc;
}

/*
 * What was held when the commit began becomes a batch, offered to
 * write(2) now; what the commit itself sent stays held.
 */
static void
release(struct cats_stream *s)
{
	size_t n = s->mark;
	uint64_t items = s->mark_items;
	s->mark = 0;
	s->mark_items = 0;
	if (n == 0 || s->broken || n > s->held)
		return;
	s->batched += n;
	s->batch_items += items;
	s->cm->held -= n;
	s->held -= n;
	s->held_items -= items;
	if (push(s) < 0) {
		/* Told by the eof callback at the end of the turn. */
		s->release_err = errno ? errno : EPIPE;
		event_active(s->bev, 0, 0);
	}
}

int
cats_commit_wait(struct cats_commit *cm)
{
	if (!cm->flying)
		return 0;
	int rc = commit_end(cm, worker_answer(cm, true));
	/* The next batch begins at the end of the turn, not in our way. */
	return rc;
}

bool
cats_commit_busy(const struct cats_commit *cm)
{
	return cm->flying;
}

int
cats_commit_run(struct cats_commit *cm)
{
	if (cm->running)
		return 0;
	if (cats_commit_wait(cm) < 0)
		return -1;
	return commit_begin(cm, true);
}

void
cats_commit_discard(struct cats_commit *cm)
{
	for (struct cats_stream *s = cm->head; s != NULL; s = s->cm_next) {
		s->out.len -= s->held;
		held_gone(s, false);
	}
}

void
cats_commit_due(struct cats_commit *cm)
{
	if (cm->flying)
		cm->again = true;
	else
		event_active(cm->ev, 0, 0);
}

size_t
cats_commit_held(const struct cats_commit *cm)
{
	return cm->held;
}

void
cats_commit_free(struct cats_commit *cm)
{
	if (cm == NULL)
		return;
	if (cm->flying)
		worker_answer(cm, true);
	cm->flying = false;
	if (cm->thr_started) {
		pthread_mutex_lock(&cm->mu);
		cm->quit = true;
		pthread_cond_signal(&cm->cv);
		pthread_mutex_unlock(&cm->mu);
		pthread_join(cm->thr, NULL);
	}
	while (cm->head != NULL)
		hold_leave(cm->head);
	event_free(cm->ev);
	event_free(cm->dev);
	close(cm->efd);
	pthread_cond_destroy(&cm->cv);
	pthread_mutex_destroy(&cm->mu);
	free(cm);
}

/* An item out; ahead: past the commit point when nothing is held on s. */
static int
stream_send(struct cats_stream *s, const uint8_t *p, size_t n, bool ahead)
{
	if (s->broken || s->wfd < 0)
		return -1;
	if (s->dgram) {
		if (send(s->wfd, p, n, MSG_DONTWAIT) < 0)
			s->st.dropped++;
		else
			s->st.bytes_out += n;
		return 0;
	}
	if (s->wrap) {
		/* Tag 24, then a byte string's head, then the item: every
		 * path below copies it before anything runs that may send. */
		uint8_t h[11] = { 0xd8, 0x18 };
		size_t hl = 2;
		if (n < 24) {
			h[hl++] = (uint8_t)(0x40 | n);
		} else {
			unsigned k = n <= 0xff ? 1 : n <= 0xffff ? 2 :
			    n <= 0xffffffffu ? 4 : 8;
			h[hl++] = (uint8_t)(0x40 | (k == 1 ? 24 : k == 2 ? 25 :
			    k == 4 ? 26 : 27));
			for (unsigned i = k; i-- > 0;)
				h[hl++] = (uint8_t)((uint64_t)n >> (8 * i));
		}
		s->wbuf.len = 0;
		if (cats_buf_add(&s->wbuf, h, hl) < 0 ||
		    cats_buf_add(&s->wbuf, p, n) < 0)
			return -1;
		p = s->wbuf.p;
		n = s->wbuf.len;
	}
	if (s->cm != NULL && (!ahead || s->held > 0))
		return send_held(s, p, n);
	if (s->batch_max > 0 && !(ahead && s->cm != NULL))
		return send_batched(s, p, n);
	if (s->wfile) {
		if (cats_write_all(s->wfd, p, n) < 0) {
			s->broken = true;
			return -1;
		}
		s->st.bytes_out += n;
		return 0;
	}
	if (queued(s) == 0) {
		ssize_t w = write(s->wfd, p, n);
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			s->broken = true;
			return -1;
		}
		if (w > 0) {
			s->st.bytes_out += (size_t)w;
			p += w;
			n -= (size_t)w;
		}
	}
	if (n > 0) {
		if (cats_buf_add(&s->out, p, n) < 0)
			return -1;
		event_add(s->wev, NULL);
	}
	if (queued(s) > s->high) {
		s->above = true;
		return 1;
	}
	return 0;
}

int
cats_stream_send(struct cats_stream *s, const uint8_t *p, size_t n)
{
	return stream_send(s, p, n, false);
}

int
cats_stream_send_ahead(struct cats_stream *s, const uint8_t *p, size_t n)
{
	return stream_send(s, p, n, true);
}

int
cats_stream_send_rec(struct cats_stream *s, const struct cats_rec *r)
{
	struct cats_buf b = { 0 };
	int rc = -1;
	if (cats_rec_encode(r, &b, true) == 0)
		rc = cats_stream_send(s, b.p, b.len);
	cats_buf_free(&b);
	return rc;
}

int
cats_stream_sendto(struct cats_stream *s, const struct cats_peer *peer,
    const uint8_t *p, size_t n)
{
	if (peer == NULL)
		return cats_stream_send(s, p, n);
	if (sendto(s->rfd, p, n, MSG_DONTWAIT,
	    (const struct sockaddr *)&peer->addr, peer->len) < 0) {
		s->st.dropped++;
		return 0;
	}
	s->st.bytes_out += n;
	return 0;
}

size_t
cats_stream_queued(const struct cats_stream *s)
{
	return queued(s);
}

void
cats_stream_pause(struct cats_stream *s)
{
	if (s->paused)
		return;
	s->paused = true;
	if (s->rev != NULL && !s->rfile)
		event_del(s->rev);
}

void
cats_stream_resume(struct cats_stream *s)
{
	if (!s->paused)
		return;
	s->paused = false;
	if (s->rev != NULL && !s->rfile && !s->rd.eof)
		event_add(s->rev, NULL);
	/* Items already buffered are delivered on the next loop turn. */
	event_active(s->kick, 0, 0);
}

int
cats_stream_flush(struct cats_stream *s)
{
	size_t off = s->wfd < 0 ? 0 : offered(s);
	if (off == 0)
		return s->broken ? -1 : 0;
	int fl = fcntl(s->wfd, F_GETFL);
	if (fl >= 0)
		fcntl(s->wfd, F_SETFL, fl & ~O_NONBLOCK);
	int rc = cats_write_all(s->wfd, s->out.p + s->out_start, off);
	if (rc == 0)
		s->st.bytes_out += off;
	s->out_start += off;
	if (queued(s) == 0)
		s->out.len = s->out_start = 0;
	s->batched = 0;
	s->batch_items = 0;
	if (fl >= 0)
		fcntl(s->wfd, F_SETFL, fl);
	if (s->wev)
		event_del(s->wev);
	return rc;
}

static void
stream_destroy(struct cats_stream *s)
{
	hold_leave(s);
	if (s->rev)
		event_free(s->rev);
	if (s->wev)
		event_free(s->wev);
	if (s->kick)
		event_free(s->kick);
	if (s->bev)
		event_free(s->bev);
	if (s->own) {
		if (s->rfd >= 0)
			close(s->rfd);
		if (s->wfd >= 0 && s->wfd != s->rfd)
			close(s->wfd);
	} else {
		if (s->rflags >= 0)
			fcntl(s->rfd, F_SETFL, s->rflags);
		if (s->wflags >= 0 && s->wfd != s->rfd)
			fcntl(s->wfd, F_SETFL, s->wflags);
	}
	cats_seq_reader_free(&s->rd);
	cats_buf_free(&s->out);
	cats_buf_free(&s->wbuf);
	free(s->dgbuf);
	free(s);
}

void
cats_stream_free(struct cats_stream *s)
{
	if (s == NULL)
		return;
	hold_leave(s);
	if (s->busy > 0) {
		s->dead = true;
		if (s->rev)
			event_del(s->rev);
		if (s->wev)
			event_del(s->wev);
		if (s->bev)
			event_del(s->bev);
		return;
	}
	stream_destroy(s);
}

void
cats_stream_stats(const struct cats_stream *s, struct cats_stream_stats *st)
{
	*st = s->st;
	st->walked = s->rd.walked;
}
