/*
 * sma_nb.c - the northbound sender: a bounded queue of metric records,
 * requests to the C-PS, acks, backoff, fallback URLs, reconciliation.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "base/clock.h"
#include "base/log.h"
#include "sma/sma_nb.h"
#include "sma/sma_uc.h"

const char *const sma_nb_state_names[] = { "connected", "reconcile",
	"partition", NULL };

#define PPM UINT64_C(1000000)
#define MAX_RECORDS 4096	/* in one request (the C-PS's cap) */
#define MIN_POST 65536

enum { R_NONE, R_POST, R_RETRIEVE };

struct qrec {
	uint8_t *p;		/* the record, unsigned, ts and nonce marked */
	size_t n;
	size_t ts_off, nonce_off;	/* where to write them, 0: decode */
	uint64_t seq;
	uint8_t op, kind;
	uint16_t part, parts;
	uint64_t group;		/* snapshot number, 0 for others */
	bool one_entry;		/* a delta of one entry */
};

struct sma_nb {
	char **urls;
	size_t nurls;
	char *sma_id;
	uint64_t epoch;
	const struct cats_key *key;
	const struct cats_keyring *ps_keys;
	const struct sma_nb_conf *c;
	struct sma_nb_io io;
	void *arg;
	struct qrec *q;
	size_t qhead, qlen, qcap;
	size_t inflight;	/* records at the head in the request */
	int req;
	bool partitioned;
	size_t tried;		/* failures in this round */
	unsigned round;
	uint64_t nonce;
	bool lost;		/* a record was dropped: no incremental sync */
	uint64_t group_ctr;
	uint64_t last_pushed;
	uint64_t max_post;
	uint64_t rng;
	char *url_buf;
	struct cats_dec dec, adec;
	struct cats_buf body;
	struct sma_nb_status st;
};

uint64_t
sma_nb_backoff(const struct sma_nb_conf *c, unsigned round, uint64_t *rng)
{
	uint64_t d = c->backoff_min_ms;
	for (unsigned i = 1; i < round && d < c->backoff_max_ms; i++)
		d *= 2;
	if (d > c->backoff_max_ms)
		d = c->backoff_max_ms;
	return cats_jitter(d, c->jitter_ppm, rng);
}

static struct qrec *
at(const struct sma_nb *nb, size_t i)
{
	return &nb->q[nb->qhead + i];
}

static void
load_changed(struct sma_nb *nb)
{
	nb->st.queued = nb->qlen;
	if (nb->io.load != NULL)
		nb->io.load(nb->arg, nb->c->queue_max ? (uint64_t)nb->qlen *
		    PPM / nb->c->queue_max : 0);
}

/* Remove records [from, from + n) of the queue. */
static void
q_remove(struct sma_nb *nb, size_t from, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(at(nb, from + i)->p);
	if (from == 0) {
		nb->qhead += n;
	} else {
		memmove(at(nb, from), at(nb, from + n), (nb->qlen - from - n) *
		    sizeof(*nb->q));
	}
	nb->qlen -= n;
	if (nb->qlen == 0)
		nb->qhead = 0;
}

static int
q_append(struct sma_nb *nb, const struct qrec *r)
{
	if (nb->qhead + nb->qlen == nb->qcap) {
		if (nb->qhead > 0) {
			memmove(nb->q, nb->q + nb->qhead, nb->qlen *
			    sizeof(*nb->q));
			nb->qhead = 0;
		} else if (cats_grow((void **)&nb->q, &nb->qcap, nb->qlen,
		    sizeof(*nb->q), 64) < 0) {
			return -1;
		}
	}
	nb->q[nb->qhead + nb->qlen++] = *r;
	return 0;
}

struct sma_nb *
sma_nb_new(const struct sma_nb_params *p, const struct sma_nb_io *io,
    void *arg)
{
	struct sma_nb *nb = calloc(1, sizeof(*nb));
	if (nb == NULL)
		return NULL;
	nb->urls = calloc(p->nurls ? p->nurls : 1, sizeof(*nb->urls));
	nb->sma_id = strdup(p->sma_id);
	if (nb->urls == NULL || nb->sma_id == NULL)
		goto fail;
	size_t longest = 0;
	for (size_t i = 0; i < p->nurls; i++) {
		/* A base URL ends in '/': resources are relative to it. */
		size_t n = strlen(p->urls[i]);
		if ((nb->urls[i] = malloc(n + 2)) == NULL)
			goto fail;
		memcpy(nb->urls[i], p->urls[i], n + 1);
		if (n == 0 || p->urls[i][n - 1] != '/')
			strcat(nb->urls[i], "/");
		nb->nurls++;
		longest = n > longest ? n : longest;
	}
	if ((nb->url_buf = malloc(longest + 32)) == NULL)
		goto fail;
	nb->epoch = p->epoch;
	nb->last_pushed = p->seq;
	nb->key = p->key;
	nb->ps_keys = p->ps_keys;
	nb->c = p->c;
	nb->io = *io;
	nb->arg = arg;
	nb->rng = p->seed;
	nb->max_post = p->c->max_post;
	nb->st.queue_max = p->c->queue_max;
	nb->st.state = SMA_NB_RECONCILE;
	cats_dec_init(&nb->dec, NULL);
	cats_dec_init(&nb->adec, NULL);
	return nb;
fail:
	sma_nb_free(nb);
	return NULL;
}

void
sma_nb_free(struct sma_nb *nb)
{
	if (nb == NULL)
		return;
	for (size_t i = 0; i < nb->qlen; i++)
		free(at(nb, i)->p);
	free(nb->q);
	for (size_t i = 0; i < nb->nurls; i++)
		free(nb->urls[i]);
	free(nb->urls);
	free(nb->sma_id);
	free(nb->url_buf);
	cats_dec_free(&nb->dec);
	cats_dec_free(&nb->adec);
	cats_buf_free(&nb->body);
	free(nb);
}

void
sma_nb_reconf(struct sma_nb *nb, const struct sma_nb_conf *c)
{
	nb->c = c;
	nb->max_post = c->max_post;
	nb->st.queue_max = c->queue_max;
}

const struct sma_nb_status *
sma_nb_status(const struct sma_nb *nb)
{
	return &nb->st;
}

bool
sma_nb_idle(const struct sma_nb *nb)
{
	return nb->qlen == 0 && nb->req == R_NONE;
}

uint64_t
sma_nb_next_deadline(const struct sma_nb *nb)
{
	return nb->st.state == SMA_NB_PARTITION && nb->req == R_NONE ?
	    nb->st.retry_at : 0;
}

static const char *
url_of(struct sma_nb *nb, const char *resource)
{
	sprintf(nb->url_buf, "%s%s", nb->urls[nb->st.url], resource);
	return nb->url_buf;
}

static uint64_t
next_nonce(struct sma_nb *nb, uint64_t now)
{
	uint64_t t = now * 1000;
	nb->nonce = t > nb->nonce ? t : nb->nonce + 1;
	return nb->nonce;
}

/* ---- failures and backoff ---- */

static void reconcile(struct sma_nb *nb, uint64_t now);

static void
notify(struct sma_nb *nb, int prio, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
notify(struct sma_nb *nb, int prio, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (nb->io.notify != NULL)
		nb->io.notify(nb->arg, prio, msg);
}

static void
failure(struct sma_nb *nb, const char *why, uint64_t now)
{
	nb->st.failures++;
	nb->inflight = 0;
	nb->req = R_NONE;
	const char *url = nb->urls[nb->st.url];
	if (!nb->partitioned) {
		nb->partitioned = true;
		nb->st.partitions++;
		nb->st.partition_since = now;
		notify(nb, LOG_WARNING, "C-PS %s unreachable: %s; read-only, "
		    "%" PRIu64 " records buffered", url, why, (uint64_t)nb->qlen);
	} else {
		cats_info("C-PS %s: %s", url, why);
	}
	nb->st.state = SMA_NB_PARTITION;
	uint64_t delay = 0;
	if (++nb->tried < nb->nurls) {
		/* The next fallback at once. */
		nb->st.url = (nb->st.url + 1) % nb->nurls;
	} else {
		nb->tried = 0;
		nb->round++;
		nb->st.url = 0;
		delay = sma_nb_backoff(nb->c, nb->round, &nb->rng);
		cats_info("C-PS unreachable: retry %u in %" PRIu64 " ms",
		    nb->round, delay);
	}
	nb->st.backoff_ms = delay;
	nb->st.retry_at = now + delay;
}

void
sma_nb_want_full(struct sma_nb *nb)
{
	nb->lost = true;
}

uint64_t
sma_nb_tick(struct sma_nb *nb, uint64_t now)
{
	if (nb->st.state == SMA_NB_PARTITION && nb->req == R_NONE &&
	    now >= nb->st.retry_at) {
		nb->st.attempts++;
		reconcile(nb, now);
	}
	return sma_nb_next_deadline(nb);
}

/* ---- sending ---- */

static const char *
resource(struct sma_nb *nb, size_t k)
{
	bool wd = true;
	for (size_t i = 0; i < k; i++)
		wd &= at(nb, i)->op == CATS_OP_WITHDRAW;
	if (wd)
		return "withdraw";
	if (k == 1 && at(nb, 0)->one_entry)
		return "update";
	return "metrics";
}

/*
 * A record is queued encoded, with these two 9-byte values (0x1b and 8
 * bytes, the canonical form of any value from 2^32 up) where its ts and
 * nonce go, so that a transmission patches them and computes the MAC over
 * the result, which is the record's canonical encoding without auth, as
 * the C-PS re-encodes it.
 */
#define TS_MARK UINT64_C(0x001f2e3d4c5b6a79)
#define NONCE_MARK UINT64_C(0x001e2d3c4b5a6978)

static void
put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)v;
		v >>= 8;
	}
}

/* The offset of the 8 bytes of mark after a 0x1b, 0 unless exactly once. */
static size_t
find_mark(const uint8_t *p, size_t n, uint64_t mark)
{
	uint8_t m[9];
	m[0] = 0x1b;
	put64(m + 1, mark);
	const uint8_t *a = memmem(p, n, m, sizeof(m));
	if (a == NULL || memmem(a + 1, n - (size_t)(a + 1 - p), m,
	    sizeof(m)) != NULL)
		return 0;
	return (size_t)(a - p) + 1;
}

static int
bstr_head(struct cats_buf *b, size_t n)
{
	uint8_t h[2] = { (uint8_t)(0x40 + n), 0 };
	if (n < 24)
		return cats_buf_add(b, h, 1);
	h[0] = 0x58;
	h[1] = (uint8_t)n;
	return cats_buf_add(b, h, 2);
}

/* Patch ts and nonce, MAC or sign, append "auth": no decoding. */
static int
stamp_fast(struct sma_nb *nb, const struct qrec *q, uint64_t ts,
    uint64_t nonce)
{
	size_t start = nb->body.len;
	if (cats_buf_add(&nb->body, q->p, q->n) < 0)
		return -1;
	uint8_t *u = nb->body.p + start;
	put64(u + q->ts_off, ts);
	put64(u + q->nonce_off, nonce);
	if (nb->key == NULL)
		return 0;
	int alg = nb->key->kind == CATS_KEY_PSK ? CATS_ALG_HMAC256 :
	    CATS_ALG_EDDSA;
	uint8_t prot[32], tag[64];
	size_t protlen = cats_cose_protected(alg, nb->key->kid, prot,
	    sizeof(prot)), tl;
	if (protlen == 0 || protlen > 64 || cats_cose_tag(nb->key, prot,
	    protlen, u, q->n, tag, &tl) < 0)
		return -1;
	nb->body.p[start]++;	/* one more pair in the map: auth */
	static const uint8_t head[] = { 0x64, 'a', 'u', 't', 'h', 0x84 };
	static const uint8_t mid[] = { 0xa0, 0xf6 };
	if (cats_buf_add(&nb->body, head, sizeof(head)) < 0 ||
	    bstr_head(&nb->body, protlen) < 0 ||
	    cats_buf_add(&nb->body, prot, protlen) < 0 ||
	    cats_buf_add(&nb->body, mid, sizeof(mid)) < 0 ||
	    bstr_head(&nb->body, tl) < 0 ||
	    cats_buf_add(&nb->body, tag, tl) < 0)
		return -1;
	return 0;
}

/* Stamp (ts, nonce) and sign one queued record into the body. */
static int
stamp(struct sma_nb *nb, const struct qrec *q, uint64_t now)
{
	uint64_t nonce = next_nonce(nb, now);
	if (q->ts_off != 0 && now > UINT32_MAX)
		return stamp_fast(nb, q, now, nonce);
	struct cats_rec r;
	struct cats_err e;
	if (cats_rec_decode(&nb->dec, q->p, q->n, &r, &e) < 0)
		return -1;
	r.u.metric.ts = now;
	CATS_SET(&r.u.metric, MET, nonce, nonce);
	if (nb->key != NULL && cats_rec_sign(&r, nb->key) < 0)
		return -1;
	return cats_rec_encode(&r, &nb->body, true);
}

static void
send_next(struct sma_nb *nb, uint64_t now)
{
	if (nb->st.state != SMA_NB_CONNECTED || nb->req != R_NONE ||
	    nb->qlen == 0)
		return;
	cats_buf_reset(&nb->body);
	size_t k = 0;
	while (k < nb->qlen && k < MAX_RECORDS) {
		const struct qrec *q = at(nb, k);
		if (k > 0 && nb->body.len + q->n + 128 > nb->max_post)
			break;
		if (stamp(nb, q, now) < 0) {
			/* Cannot happen with our own records: drop it. */
			cats_errorx("northbound: record %" PRIu64 " cannot be "
			    "encoded; dropped", q->seq);
			q_remove(nb, k, 1);
			nb->st.dropped++;
			continue;
		}
		k++;
	}
	if (k == 0)
		return;
	nb->inflight = k;
	nb->req = R_POST;
	nb->st.requests++;
	nb->st.bytes_sent += nb->body.len;
	if (nb->io.post(nb->arg, url_of(nb, resource(nb, k)), nb->body.p,
	    nb->body.len) < 0)
		failure(nb, "cannot start a request", now);
}

/* Ask the C-PS what it holds of us (POST /retrieve, a sync record). */
static void
reconcile(struct sma_nb *nb, uint64_t now)
{
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_SYNC);
	struct cats_sync *s = &r.u.sync;
	s->mode = CATS_SYNC_INCREMENTAL;
	s->ts = now;
	s->sma_id = nb->sma_id;
	CATS_SET(s, SYNC, epoch, nb->epoch);
	CATS_SET(s, SYNC, from_seq, nb->st.acked_seq);
	CATS_SET(s, SYNC, nonce, next_nonce(nb, now));
	if (nb->key != NULL)
		cats_rec_sign(&r, nb->key);
	cats_buf_reset(&nb->body);
	cats_rec_encode(&r, &nb->body, true);
	if (!nb->partitioned)
		nb->st.state = SMA_NB_RECONCILE;
	nb->req = R_RETRIEVE;
	nb->st.requests++;
	nb->st.bytes_sent += nb->body.len;
	if (nb->io.post(nb->arg, url_of(nb, "retrieve"), nb->body.p,
	    nb->body.len) < 0)
		failure(nb, "cannot start a request", now);
}

void
sma_nb_start(struct sma_nb *nb, uint64_t now)
{
	reconcile(nb, now);
}

/* Is a snapshot queued (and not in flight)?  Its first index, or -1. */
static long
queued_snapshot(const struct sma_nb *nb)
{
	long first = -1;
	for (size_t i = nb->inflight; i < nb->qlen; i++) {
		const struct qrec *q = at(nb, i);
		if (q->kind == SMA_UC_SNAPSHOT && q->part == 1)
			first = (long)i;
	}
	return first;
}

static bool
snapshot_pending(const struct sma_nb *nb)
{
	for (size_t i = 0; i < nb->qlen; i++)
		if (at(nb, i)->kind == SMA_UC_SNAPSHOT)
			return true;
	return false;
}

/* A full sync: the latest snapshot queued, else a new one. */
static void
full_sync(struct sma_nb *nb, uint64_t now)
{
	long s = queued_snapshot(nb);
	size_t from = nb->inflight;
	if (s >= 0) {
		nb->st.superseded += (size_t)s - from;
		q_remove(nb, from, (size_t)s - from);
	} else {
		nb->st.superseded += nb->qlen - from;
		q_remove(nb, from, nb->qlen - from);
		nb->io.snapshot(nb->arg, now);
	}
	nb->lost = false;
	nb->st.full_syncs++;
	load_changed(nb);
}

int
sma_nb_push(struct sma_nb *nb, const struct cats_rec *r, int kind,
    uint64_t now)
{
	const struct cats_metric *m = &r->u.metric;
	struct qrec q;
	memset(&q, 0, sizeof(q));
	struct cats_buf b = { 0 };
	struct cats_rec marked = *r;
	marked.u.metric.ts = TS_MARK;
	CATS_SET(&marked.u.metric, MET, nonce, NONCE_MARK);
	marked.auth.alg = CATS_ALG_NONE;
	if (cats_rec_encode(&marked, &b, false) < 0) {
		cats_buf_free(&b);
		return -1;
	}
	q.p = b.p;
	q.n = b.len;
	/* One byte of map header with room for auth (23 pairs at most). */
	if (b.len > 0 && b.p[0] >= 0xa0 && b.p[0] < 0xb7) {
		q.ts_off = find_mark(b.p, b.len, TS_MARK);
		q.nonce_off = find_mark(b.p, b.len, NONCE_MARK);
		if (q.ts_off == 0 || q.nonce_off == 0)
			q.ts_off = q.nonce_off = 0;
	}
	q.seq = m->seq;
	q.op = (uint8_t)m->op;
	q.kind = (uint8_t)kind;
	q.one_entry = m->op == CATS_OP_DELTA && m->entries.n == 1 &&
	    m->sites.n == 0;
	if (kind == SMA_UC_SNAPSHOT) {
		q.part = (uint16_t)(CATS_HAS(m, MET, part) ? m->part : 1);
		q.parts = (uint16_t)(CATS_HAS(m, MET, parts) ? m->parts : 1);
		if (q.part == 1) {
			nb->group_ctr++;
			/* The snapshot is the whole view: what waits before it
			 * is superseded. */
			nb->st.superseded += nb->qlen - nb->inflight;
			q_remove(nb, nb->inflight, nb->qlen - nb->inflight);
			nb->lost = false;
		}
		q.group = nb->group_ctr;
	}
	if (q_append(nb, &q) < 0) {
		free(q.p);
		nb->st.dropped++;
		nb->lost = true;
		return -1;
	}
	nb->last_pushed = q.seq;
	/* The bound: the oldest goes first; a snapshot is never cut. */
	while (nb->qlen - nb->inflight > nb->c->queue_max) {
		const struct qrec *o = at(nb, nb->inflight);
		size_t n = 1;
		if (o->group != 0) {
			while (nb->inflight + n < nb->qlen &&
			    at(nb, nb->inflight + n)->group == o->group)
				n++;
			if (nb->inflight + n == nb->qlen)
				break;
		}
		q_remove(nb, nb->inflight, n);
		nb->st.dropped += n;
		nb->lost = true;
	}
	load_changed(nb);
	/* A snapshot leaves whole: after its last part. */
	if (kind != SMA_UC_SNAPSHOT || q.part == q.parts)
		send_next(nb, now);
	return 0;
}

/* ---- answers ---- */

struct answer {
	bool ok;		/* an ack, from the C-PS, for us */
	struct cats_ack ack;
	bool sync_full;
	char why[400];
	char reason[257];
};

static void
parse_answer(struct sma_nb *nb, const uint8_t *p, size_t n,
    struct answer *a)
{
	memset(a, 0, sizeof(*a));
	size_t off = 0;
	bool first = true;
	snprintf(a->why, sizeof(a->why), "an empty answer");
	while (off < n) {
		struct cats_rec r;
		struct cats_err e;
		size_t used;
		struct cats_dec *d = &nb->adec;
		cats_arena_reset(&d->arena);
		if (cats_scan(p + off, n - off, true, &d->lim, &d->toks,
		    &d->arena, &used, NULL, &e) != CATS_SCAN_OK ||
		    cats_rec_from_toks(d, &r, &e) < 0) {
			snprintf(a->why, sizeof(a->why), "a malformed answer "
			    "(%s%s%s)", e.field, e.field[0] ? ": " : "",
			    e.reason);
			a->ok = false;
			return;
		}
		off += used;
		if (first && r.type != CATS_T_ACK) {
			snprintf(a->why, sizeof(a->why), "the answer is a %s, "
			    "not an ack", cats_type_name(r.type));
			return;
		}
		if (r.type != CATS_T_ACK && r.type != CATS_T_SYNC)
			continue;
		/* The C-PS authenticates itself (000 §8.2). */
		const struct cats_keyring *kr = nb->ps_keys;
		struct cats_keyring one = { (struct cats_key *)nb->key, 1 };
		if (nb->key != NULL && nb->key->kind == CATS_KEY_PSK)
			kr = &one;
		if (kr != NULL && cats_rec_verify(&r, kr, NULL, &e) < 0) {
			snprintf(a->why, sizeof(a->why), "the answer is not "
			    "from the C-PS: %s", e.reason);
			cats_audit("northbound-auth-fail", "sma=%s reason=\"%s\"",
			    nb->sma_id, e.reason);
			a->ok = false;
			return;
		}
		const char *id = r.type == CATS_T_ACK ? r.u.ack.sma_id :
		    r.u.sync.sma_id;
		if (id != NULL && strcmp(id, "-") != 0 &&
		    strcmp(id, nb->sma_id) != 0) {
			snprintf(a->why, sizeof(a->why), "the answer is for "
			    "another C-SMA");
			a->ok = false;
			return;
		}
		if (r.type == CATS_T_ACK && first) {
			a->ack = r.u.ack;
			if (r.u.ack.reason != NULL)
				cats_strlcpy(a->reason, r.u.ack.reason,
				    sizeof(a->reason));
			a->ack.reason = NULL;
			a->ack.sma_id = NULL;
			a->ack.ps_id = NULL;
			a->ok = true;
		} else if (r.type == CATS_T_SYNC &&
		    r.u.sync.mode == CATS_SYNC_FULL) {
			a->sync_full = true;
		}
		first = false;
	}
}

static bool
wants_full(const struct answer *a)
{
	return a->sync_full || (CATS_HAS(&a->ack, ACK, want) &&
	    a->ack.want == CATS_SYNC_FULL);
}

/* The first k records were applied (acked). */
static void
acked(struct sma_nb *nb, size_t k, uint64_t now)
{
	for (size_t i = 0; i < k; i++) {
		const struct qrec *q = at(nb, i);
		nb->st.records_acked++;
		switch (q->op) {
		case CATS_OP_WITHDRAW: nb->st.withdrawals_acked++; break;
		case CATS_OP_REFRESH: nb->st.refreshes_acked++; break;
		case CATS_OP_DELTA: nb->st.deltas_acked++; break;
		default:
			nb->st.snapshots_acked++;
			if (q->part == q->parts)
				nb->st.last_full = now;
			break;
		}
	}
	q_remove(nb, 0, k);
	nb->inflight -= k;
}

static void
take_ack(struct sma_nb *nb, const struct answer *a, uint64_t now)
{
	const struct cats_ack *k = &a->ack;
	nb->st.last_ack = now;
	if (CATS_HAS(k, ACK, ps_epoch)) {
		if (nb->st.ps_epoch != 0 && k->ps_epoch != nb->st.ps_epoch) {
			nb->st.ps_restarts++;
			cats_info("C-PS epoch %" PRIu64 " -> %" PRIu64 ": it "
			    "restarted", nb->st.ps_epoch, k->ps_epoch);
		}
		nb->st.ps_epoch = k->ps_epoch;
	}
	if (k->epoch == nb->epoch)
		nb->st.acked_seq = k->seq;
	if (nb->io.refresh != NULL)
		nb->io.refresh(nb->arg, CATS_HAS(k, ACK, refresh) && k->refresh);
	(void)now;
}

static void
post_answer(struct sma_nb *nb, long status, const struct answer *a,
    uint64_t now)
{
	const struct cats_ack *k = &a->ack;
	if (status >= 200 && status <= 299) {
		acked(nb, nb->inflight, now);
		if (wants_full(a) && !snapshot_pending(nb)) {
			nb->st.full_requested++;
			cats_info("the C-PS asks for a full sync");
			full_sync(nb, now);
		}
		load_changed(nb);
		send_next(nb, now);
		return;
	}
	if (status == 413) {
		nb->max_post = nb->max_post / 2 < MIN_POST ? MIN_POST :
		    nb->max_post / 2;
		cats_warnx("northbound: request too large; down to %" PRIu64
		    " bytes", nb->max_post);
		if (nb->inflight == 1) {
			nb->st.refused++;
			cats_audit("northbound-refused", "sma=%s seq=%" PRIu64
			    " status=413", nb->sma_id, at(nb, 0)->seq);
			acked(nb, 0, now);
			q_remove(nb, 0, 1);
			nb->lost = true;
		}
		nb->inflight = 0;
		send_next(nb, now);
		return;
	}
	bool one = status == 400 || status == 403 ||
	    (status == 409 && (!CATS_HAS(k, ACK, result) ||
	    k->result != CATS_ACK_REPLAY));
	if (!one) {
		char why[300];
		snprintf(why, sizeof(why), "HTTP %ld%s%s", status,
		    a->reason[0] ? ": " : "", a->reason);
		failure(nb, why, now);
		return;
	}
	/* What came before the refused record was applied. */
	size_t done = 0;
	while (done < nb->inflight && k->epoch == nb->epoch &&
	    at(nb, done)->seq <= k->seq)
		done++;
	acked(nb, done, now);
	if (nb->inflight > 0) {
		nb->st.refused++;
		cats_warnx("northbound: record %" PRIu64 " refused: HTTP %ld: "
		    "%s", at(nb, 0)->seq, status, a->reason);
		cats_audit("northbound-refused", "sma=%s seq=%" PRIu64
		    " status=%ld reason=\"%s\"", nb->sma_id, at(nb, 0)->seq,
		    status, a->reason);
		q_remove(nb, 0, 1);
		nb->lost = true;
	}
	nb->inflight = 0;
	load_changed(nb);
	send_next(nb, now);
}

static void
retrieve_answer(struct sma_nb *nb, long status, const struct answer *a,
    uint64_t now)
{
	if (status != 200) {
		char why[300];
		snprintf(why, sizeof(why), "retrieve: HTTP %ld%s%s", status,
		    a->reason[0] ? ": " : "", a->reason);
		failure(nb, why, now);
		return;
	}
	if (nb->partitioned) {
		notify(nb, LOG_NOTICE, "C-PS %s reachable again after %" PRIu64
		    " ms; %" PRIu64 " records buffered, %" PRIu64 " dropped",
		    nb->urls[nb->st.url], now - nb->st.partition_since,
		    (uint64_t)nb->qlen, nb->st.dropped);
		nb->partitioned = false;
	}
	nb->st.state = SMA_NB_CONNECTED;
	nb->tried = 0;
	nb->round = 0;
	nb->st.backoff_ms = 0;
	const struct cats_ack *k = &a->ack;
	bool incr = k->epoch == nb->epoch && !nb->lost && !wants_full(a);
	if (k->epoch == nb->epoch && k->seq > nb->last_pushed) {
		/* Our numbering is behind the C-PS's: records would look
		 * stale.  Number from above and sync fully. */
		cats_warnx("the C-PS holds sequence %" PRIu64 " of this epoch, "
		    "above our %" PRIu64 ": renumbering", k->seq,
		    nb->last_pushed);
		if (nb->io.renumber != NULL)
			nb->io.renumber(nb->arg, k->seq);
		q_remove(nb, 0, nb->qlen);
		nb->last_pushed = k->seq;
		incr = false;
	}
	if (incr) {
		/* Applied already (their acks were lost): drop them. */
		size_t done = 0;
		while (done < nb->qlen && at(nb, done)->seq <= k->seq)
			done++;
		q_remove(nb, 0, done);
		if (nb->qlen > 0 ? at(nb, 0)->seq != k->seq + 1 :
		    nb->last_pushed != k->seq)
			incr = false;
	}
	if (incr) {
		nb->st.incremental_syncs++;
		cats_info("C-PS holds our sequence %" PRIu64 ": incremental "
		    "sync, %" PRIu64 " records", k->seq, (uint64_t)nb->qlen);
	} else {
		cats_info("C-PS holds %s: full sync", k->epoch == nb->epoch ?
		    "an incomplete view" : "nothing of this epoch");
		full_sync(nb, now);
	}
	load_changed(nb);
	send_next(nb, now);
}

void
sma_nb_done(struct sma_nb *nb, int code, long status, const uint8_t *body,
    size_t len, const char *error, uint64_t now)
{
	int req = nb->req;
	nb->req = R_NONE;
	if (req == R_NONE)
		return;
	if (code != 0) {
		failure(nb, error ? error : "transfer failed", now);
		return;
	}
	if (status >= 500 || status == 408 || status == 429 || status == 0) {
		char why[64];
		snprintf(why, sizeof(why), "HTTP %ld", status);
		failure(nb, why, now);
		return;
	}
	struct answer a;
	parse_answer(nb, body, len, &a);
	if (!a.ok) {
		char why[440];
		snprintf(why, sizeof(why), "HTTP %ld: %s", status, a.why);
		failure(nb, why, now);
		return;
	}
	take_ack(nb, &a, now);
	if (req == R_RETRIEVE)
		retrieve_answer(nb, status, &a, now);
	else
		post_answer(nb, status, &a, now);
}
