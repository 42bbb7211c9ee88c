/*
 * test_sma_nb.c - the northbound sender against the C-PS ingest, both pure
 * (the "network" is a function call): reconciliation, full and incremental
 * sync, partitions, the backoff schedule, fallback URLs, the bounded queue,
 * refused records, bad answers, a restarted C-PS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "select/ingest.h"
#include "base/log.h"
#include "sma/sma_nb.h"
#include "sma/sma_uc.h"
#include "t.h"

#define T0 UINT64_C(1700000000000)

static struct cats_key psk;
static struct cats_keyring ring;
static struct cats_cst *cst;
static struct cats_ingest *ing;
static struct sma_nb *nb;
static uint64_t seq, now = T0;

/* The last request. */
static char last_url[256];
static struct cats_buf last_body;
static int posts, snapshots, warnings, notices;
static bool down;		/* the C-PS does not answer */
static int force_status;	/* answer with this status and garbage */

static int
io_post(void *arg, const char *url, const uint8_t *body, size_t len)
{
	(void)arg;
	snprintf(last_url, sizeof(last_url), "%s", url);
	cats_buf_reset(&last_body);
	cats_buf_add(&last_body, body, len);
	posts++;
	return 0;
}

/* Deliver the pending request to the ingest (or fail it). */
static void
deliver(void)
{
	if (down) {
		sma_nb_done(nb, 7, 0, NULL, 0, "Couldn't connect to server",
		    now);
		return;
	}
	if (force_status) {
		sma_nb_done(nb, 0, force_status, (const uint8_t *)"oops", 4,
		    NULL, now);
		return;
	}
	const char *r = strrchr(last_url, '/');
	int op = -1;
	for (int i = 0; i < CATS_ING__N; i++)
		if (strcmp(r, cats_ingest_paths[i]) == 0)
			op = i;
	struct cats_buf out = { 0 };
	int status = cats_ingest_handle(ing, op, last_body.p, last_body.len,
	    "t", now, &out);
	sma_nb_done(nb, 0, status, out.p, out.len, NULL, now);
	cats_buf_free(&out);
}

static struct cats_rec
metric(int op, const char *csci, uint64_t gas, int part, int parts)
{
	static struct cats_entry e;
	struct cats_rec r;
	memset(&e, 0, sizeof(e));
	e.csci_id = csci;
	e.cs_id = "ARS";
	CATS_SET(&e, ENT, health, CATS_HEALTHY);
	CATS_SET(&e, ENT, gas, gas);
	cats_rec_init(&r, CATS_T_METRIC);
	r.u.metric.op = op;
	r.u.metric.sma_id = "sma-a";
	r.u.metric.epoch = 5;
	r.u.metric.seq = ++seq;
	r.u.metric.ts = now;
	if (csci != NULL) {
		r.u.metric.entries.v = &e;
		r.u.metric.entries.n = 1;
	}
	if (parts) {
		CATS_SET(&r.u.metric, MET, part, part);
		CATS_SET(&r.u.metric, MET, parts, parts);
	}
	return r;
}

static void
push(int op, const char *csci, uint64_t gas)
{
	struct cats_rec r = metric(op, csci, gas, 0, 0);
	sma_nb_push(nb, &r, op == CATS_OP_WITHDRAW ? SMA_UC_CRITICAL :
	    SMA_UC_ROUTINE, now);
}

/* The controller's snapshot: two parts, x and y. */
static void
io_snapshot(void *arg, uint64_t t)
{
	(void)arg;
	(void)t;
	snapshots++;
	struct cats_rec a = metric(CATS_OP_FULL, "x", 10, 1, 2);
	sma_nb_push(nb, &a, SMA_UC_SNAPSHOT, now);
	struct cats_rec b = metric(CATS_OP_FULL, "y", 20, 2, 2);
	sma_nb_push(nb, &b, SMA_UC_SNAPSHOT, now);
}

static void
io_notify(void *arg, int prio, const char *msg)
{
	(void)arg;
	printf("# notify %d: %s\n", prio, msg);
	if (prio == LOG_WARNING)
		warnings++;
	else
		notices++;
}

static const char *
table(void)
{
	static char buf[256];
	struct cats_cst_entry *const *v;
	size_t n = cats_cst_lookup(cst, "ARS", &v);
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		char one[32];
		snprintf(one, sizeof(one), "%s%s:%llu", i ? " " : "",
		    v[i]->csci_id, (unsigned long long)v[i]->gas);
		strncat(buf, one, sizeof(buf) - strlen(buf) - 1);
	}
	return buf;
}

static void
new_cps(uint64_t ps_epoch)
{
	cats_ingest_free(ing);
	cats_cst_free(cst);
	cst = cats_cst_new(180000, 0);
	struct cats_ingest_conf c = { .keys = &ring, .window_ms = 30000,
		.ps_id = "cps", .ps_epoch = ps_epoch, .refresh = true };
	ing = cats_ingest_new(&c, cst);
	const char *any[] = { "ARS" };
	cats_ingest_allow(ing, "sma-a", any, 1);
}

static void
backoff_schedule(void)
{
	struct sma_nb_conf c = { .backoff_min_ms = 1000, .backoff_max_ms =
	    60000, .jitter_ppm = 200000 };
	uint64_t rng = 1, base = 1000;
	bool ok = true;
	for (unsigned r = 1; r <= 9; r++) {
		uint64_t d = sma_nb_backoff(&c, r, &rng);
		ok &= d >= base * 8 / 10 && d <= base * 12 / 10;
		printf("# round %u: %llu ms (base %llu)\n", r,
		    (unsigned long long)d, (unsigned long long)base);
		base = base * 2 > 60000 ? 60000 : base * 2;
	}
	T_OK(ok, "backoff 1, 2, 4, 8, 16, 32, 60, 60, 60 s, each +/- 20 %%");
	uint64_t a = 7, b = 7;
	T_OK(sma_nb_backoff(&c, 3, &a) == sma_nb_backoff(&c, 3, &b),
	    "the same seed, the same delay");
}

int
main(void)
{
	cats_crypto_init();
	cats_audit_open("none");
	cats_log_verbosity(0);
	cats_key_gen_psk(&psk, "sma-a");
	ring.v = &psk;
	ring.n = 1;
	backoff_schedule();
	new_cps(100);

	struct sma_nb_conf conf = { .timeout_ms = 1000, .backoff_min_ms =
	    1000, .backoff_max_ms = 60000, .jitter_ppm = 200000, .queue_max =
	    5, .max_post = 1u << 20 };
	const char *urls[] = { "http://primary:1/", "http://fallback:2" };
	struct sma_nb_params p = { .urls = urls, .nurls = 2, .sma_id = "sma-a",
		.epoch = 5, .key = &psk, .c = &conf, .seed = 1 };
	struct sma_nb_io io = { .post = io_post, .snapshot = io_snapshot,
		.notify = io_notify };
	nb = sma_nb_new(&p, &io, NULL);

	/* Start: the controller's first snapshot is queued; retrieve. */
	io_snapshot(NULL, now);
	snapshots = 0;
	sma_nb_start(nb, now);
	T_OK(strcmp(last_url, "http://primary:1/retrieve") == 0,
	    "start: POST /retrieve");
	deliver();
	const struct sma_nb_status *st = sma_nb_status(nb);
	T_OK(st->state == SMA_NB_CONNECTED && st->full_syncs == 1 &&
	    snapshots == 0 && strcmp(last_url, "http://primary:1/metrics") == 0,
	    "the C-PS knows nothing: full sync with the queued snapshot");
	deliver();
	T_OK(strcmp(table(), "x:10 y:20") == 0 && sma_nb_idle(nb) &&
	    st->acked_seq == 2 && st->last_full == now && st->ps_epoch == 100,
	    "the snapshot is applied and acked (seq 2)");

	/* One entry: /update; a withdrawal: /withdraw. */
	push(CATS_OP_DELTA, "x", 11);
	T_OK(strstr(last_url, "/update") != NULL, "a delta of one: /update");
	deliver();
	push(CATS_OP_WITHDRAW, "y", 0);
	T_OK(strstr(last_url, "/withdraw") != NULL, "/withdraw");
	deliver();
	T_OK(strcmp(table(), "x:11") == 0 && st->acked_seq == 4, "applied");

	/* Partition: no answer.  The fallback at once, then backoff. */
	down = true;
	push(CATS_OP_DELTA, "x", 12);
	deliver();
	T_OK(st->state == SMA_NB_PARTITION && warnings == 1 &&
	    st->backoff_ms == 0 && st->url == 1, "unreachable: read-only, "
	    "notified once, the fallback URL next, at once");
	sma_nb_tick(nb, now);
	T_OK(strcmp(last_url, "http://fallback:2/retrieve") == 0,
	    "a fallback is tried with a retrieval (base URL gets a /)");
	deliver();
	T_OK(st->url == 0 && st->backoff_ms >= 800 && st->backoff_ms <= 1200 &&
	    warnings == 1, "both failed: back to the primary in about 1 s "
	    "(%llu ms)", (unsigned long long)st->backoff_ms);
	int before = posts;
	sma_nb_tick(nb, now + st->backoff_ms - 1);
	T_OK(posts == before, "nothing before the delay");
	uint64_t expect = 2000;
	bool sched = true;
	for (int round = 2; round <= 4; round++) {
		now = st->retry_at;
		sma_nb_tick(nb, now);	/* primary */
		deliver();
		sma_nb_tick(nb, now);	/* fallback, at once */
		deliver();
		sched &= st->backoff_ms >= expect * 8 / 10 &&
		    st->backoff_ms <= expect * 12 / 10;
		expect *= 2;
	}
	T_OK(sched, "the rounds back off 2, 4, 8 s");
	/* Buffering: queue-max 5; the delta in flight stays queued. */
	for (int i = 0; i < 7; i++)
		push(CATS_OP_DELTA, "x", 20 + (uint64_t)i);
	T_OK(st->queued == 5 && st->dropped == 3 && st->state ==
	    SMA_NB_PARTITION, "7 more updates, 5 kept, the 3 oldest dropped "
	    "(%llu queued, %llu dropped)", (unsigned long long)st->queued,
	    (unsigned long long)st->dropped);
	T_OK(strcmp(table(), "x:11") == 0, "nothing reached the C-PS");

	/* Heal: the C-PS kept our epoch, but records were dropped: full. */
	down = false;
	now = st->retry_at;
	sma_nb_tick(nb, now);
	deliver();
	T_OK(st->state == SMA_NB_CONNECTED && notices == 1 &&
	    snapshots == 1 && st->full_syncs == 2 && st->superseded >= 5,
	    "healed: notified, full sync (records were dropped)");
	deliver();
	T_OK(strcmp(table(), "x:10 y:20") == 0 && sma_nb_idle(nb),
	    "the C-SMA's view wins");

	/* A short partition with nothing dropped: incremental. */
	down = true;
	push(CATS_OP_DELTA, "x", 30);
	deliver();
	push(CATS_OP_DELTA, "y", 31);
	down = false;
	now = st->retry_at;
	sma_nb_tick(nb, now);
	deliver();
	T_OK(st->incremental_syncs == 1 && snapshots == 1 &&
	    strstr(last_url, "/metrics") != NULL, "healed: incremental, the "
	    "buffered updates in one request");
	deliver();
	T_OK(strcmp(table(), "x:30 y:31") == 0 && sma_nb_idle(nb),
	    "both applied");

	/* The C-PS restarts (kill -9): its next answer wants a full. */
	new_cps(101);
	push(CATS_OP_DELTA, "x", 40);
	deliver();
	T_OK(st->full_requested == 1 && snapshots == 2 && st->ps_restarts == 1,
	    "a restarted C-PS asks for a full sync; one is made");
	deliver();
	T_OK(strcmp(table(), "x:10 y:20") == 0 && sma_nb_idle(nb),
	    "the table is the C-SMA's view again");

	/* Bad answers: a 503, garbage with 200, a forged ack. */
	force_status = 503;
	push(CATS_OP_DELTA, "x", 50);
	deliver();
	T_OK(st->state == SMA_NB_PARTITION && st->queued == 1, "503: backoff, "
	    "the record kept");
	force_status = 200;
	now = st->retry_at;
	sma_nb_tick(nb, now);
	deliver();
	T_OK(st->state == SMA_NB_PARTITION, "garbage with 200: a failure");
	force_status = 0;
	struct cats_key forged;
	cats_key_gen_psk(&forged, "sma-a");
	struct cats_keyring fr = { &forged, 1 };
	struct cats_ingest_conf fc = { .keys = &fr, .window_ms = 30000,
		.ps_id = "evil", .ps_epoch = 1 };
	struct cats_ingest *evil = cats_ingest_new(&fc, cst);
	const char *any[] = { "ARS" };
	cats_ingest_allow(evil, "sma-a", any, 1);
	struct cats_ingest *real = ing;
	ing = evil;
	now = st->retry_at;
	sma_nb_tick(nb, now);
	deliver();
	T_OK(st->state == SMA_NB_PARTITION, "an answer not MAC'd with our PSK "
	    "is not the C-PS's");
	ing = real;
	cats_ingest_free(evil);
	now = st->retry_at;
	sma_nb_tick(nb, now);
	deliver();
	deliver();
	T_OK(st->state == SMA_NB_CONNECTED && strcmp(table(), "x:50 y:20") ==
	    0, "then the real C-PS: incremental, applied");

	/* A refused record is dropped, the next ones go on. */
	struct cats_rec bad = metric(CATS_OP_DELTA, "x", 60, 0, 0);
	bad.u.metric.entries.v[0].cs_id = "VRS";
	sma_nb_push(nb, &bad, SMA_UC_ROUTINE, now);
	T_OK(strstr(last_url, "/update") != NULL, "sent");
	deliver();
	T_OK(st->refused == 1 && sma_nb_idle(nb) && st->state ==
	    SMA_NB_CONNECTED, "403 for an unauthorized CS-ID: refused, dropped, "
	    "still connected");
	push(CATS_OP_DELTA, "x", 61);
	deliver();
	deliver();	/* the gap asks for a full */
	deliver();
	T_OK(strcmp(table(), "x:10 y:20") == 0 && sma_nb_idle(nb),
	    "the gap it left is healed by a full sync");

	sma_nb_free(nb);
	cats_ingest_free(ing);
	cats_cst_free(cst);
	cats_buf_free(&last_body);
	return t_done();
}
