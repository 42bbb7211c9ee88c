/*
 * bench_sma.c - the C-SMA pipeline: reports/s through decode +
 * authentication + validation + cache, read from a pipe, with 100k SCIs;
 * and the memory a cached SCI takes.
 *
 * Rows (name | value | baseline | ratio):
 *   decode only (the record layer reading the same pipe) is the baseline
 *   of the pipeline rows; the memory row is set against the 512 B goal;
 *   the input-side limits on (checked, never reached) against off.
 * Timings are printed, never asserted.
 */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/clock.h"
#include "base/log.h"
#include "rec/seq.h"
#include "sci/sci_mqtt.h"
#include "sma/sma.h"
#include "sec/token.h"

#define NSCI 100000
#define ROUNDS 3	/* the first warms the cache; all are timed apart */

static void
row(const char *name, double v, const char *unit, double base,
    const char *bunit)
{
	/* A 0 is a measurement that failed: it says so, with no ratio. */
	if (v > 0 && base > 0)
		printf("%s | %.0f %s | %.0f %s | %.2f\n", name, v, unit, base,
		    bunit, v / base);
	else if (v > 0)
		printf("%s | %.0f %s | error: the baseline did not measure | "
		    "error\n", name, v, unit);
	else
		printf("%s | error: did not measure | %.0f %s | error\n", name,
		    base, bunit);
	fflush(stdout);
}

struct sci {
	char id[24];
	struct cats_buf tok;
	struct cats_key key;	/* for signed reports */
};

static struct sci *scis;	/* nsci plain, then nsigned that sign */

static void
make_report(struct cats_buf *out, int i, uint64_t seq, uint64_t ts,
    bool token, bool sign)
{
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_SCI_REPORT);
	r.u.sci.csci_id = scis[i].id;
	r.u.sci.cs_id = i % 2 ? "ARS" : "VRS";
	r.u.sci.seq = seq;
	r.u.sci.ts = ts;
	r.u.sci.health = CATS_HEALTHY;
	CATS_SET(&r.u.sci, SCI, gas, 100 + (uint64_t)(i % 7));
	CATS_SET(&r.u.sci, SCI, comp_time_ms, 5);
	CATS_SET(&r.u.sci, SCI, interval_ms, 60000);
	if (token) {
		r.u.sci.token.p = scis[i].tok.p;
		r.u.sci.token.n = scis[i].tok.len;
	}
	if (sign)
		cats_rec_sign(&r, &scis[i].key);
	cats_rec_encode(&r, out, true);
}

struct writer {
	const struct cats_buf *b;
	int fd;
};

static void *
write_all(void *arg)
{
	struct writer *w = arg;
	cats_write_all(w->fd, w->b->p, w->b->len);
	close(w->fd);
	return NULL;
}

/*
 * Write buf to a pipe from a thread (not a forked child: copy-on-write
 * faults in the parent would be measured instead); read the other end.
 */
static int
feed(const struct cats_buf *b, pthread_t *th, struct writer *w)
{
	int fds[2];
	if (pipe(fds) < 0)
		return -1;
	w->b = b;
	w->fd = fds[1];
	pthread_create(th, NULL, write_all, w);
	return fds[0];
}

/* Read a stream through the pipeline (or decode only); reports/s. */
static double
run(const struct cats_buf *b, struct sma *s, uint64_t now, size_t *n)
{
	pthread_t th;
	struct writer w;
	int fd = feed(b, &th, &w);
	struct cats_seq_reader rd;
	struct cats_dec d;
	struct cats_rec r;
	struct cats_err e;
	struct sma_result res;
	cats_seq_reader_init(&rd, NULL);
	cats_dec_init(&d, NULL);
	*n = 0;
	uint64_t t0 = cats_clock_mono_ns();
	for (;;) {
		int k = cats_seq_next_rec(&rd, &d, &r, &e);
		if (k == CATS_SEQ_NEED) {
			if (rd.eof || cats_seq_read_fd(&rd, fd) < 0)
				break;
			continue;
		}
		if (k == CATS_SEQ_ITEM && s != NULL)
			sma_report(s, &r, NULL, 0, NULL, now, &res);
		(*n)++;
	}
	uint64_t dt = cats_clock_mono_ns() - t0;
	close(fd);
	pthread_join(th, NULL);
	cats_seq_reader_free(&rd);
	cats_dec_free(&d);
	return (double)*n * 1e9 / (double)(dt ? dt : 1);
}

static size_t
heap_used(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

/*
 * bench_sma mqtt URL SECONDS NSCI ISSUER.key: publish signed reports of
 * the SCIs load-0 .. load-NSCI-1 (the subjects and tokens httpload push
 * makes) to cats/sci/load-N/report, QoS 1, 256 in flight, for SECONDS;
 * print "published P acked A refused R".  bench/sma.sh drives it.
 */
struct pub {
	struct event_base *base;
	struct sci_mqtt *m;
	struct cats_buf *tok;
	uint64_t *seq;
	int nsci, next;
	uint64_t published, acked, refused, inflight;
	bool running;
};

static void
pub_fill(struct pub *p)
{
	char topic[64], err[200], id[32];
	struct cats_buf b = { 0 };
	while (p->running && p->inflight < 256) {
		int i = p->next;
		p->next = (p->next + 1) % p->nsci;
		snprintf(id, sizeof(id), "load-%d", i);
		snprintf(topic, sizeof(topic), "cats/sci/%s/report", id);
		struct cats_rec r;
		cats_rec_init(&r, CATS_T_SCI_REPORT);
		r.u.sci.csci_id = id;
		r.u.sci.cs_id = "ARS";
		r.u.sci.seq = ++p->seq[i];
		r.u.sci.ts = cats_clock_now();
		r.u.sci.health = CATS_HEALTHY;
		CATS_SET(&r.u.sci, SCI, gas, 100 + (uint64_t)(p->seq[i] % 7));
		CATS_SET(&r.u.sci, SCI, comp_time_ms, 5);
		r.u.sci.token.p = p->tok[i].p;
		r.u.sci.token.n = p->tok[i].len;
		b.len = 0;
		cats_rec_encode(&r, &b, true);
		int mid;
		if (sci_mqtt_publish(p->m, topic, b.p, b.len, &mid, err,
		    sizeof(err)) < 0)
			break;
		p->published++;
		p->inflight++;
	}
	cats_buf_free(&b);
}

static void
pub_state(void *arg, bool up, const char *why)
{
	struct pub *p = arg;
	if (!up) {
		fprintf(stderr, "bench_sma: mqtt: %s\n", why);
		return;
	}
	pub_fill(p);
}

static void
pub_acked(void *arg, int mid, int reason)
{
	struct pub *p = arg;
	(void)mid;
	p->inflight--;
	if (reason >= 0x80)
		p->refused++;
	else
		p->acked++;
	pub_fill(p);
}

static void
pub_stop(evutil_socket_t fd, short what, void *arg)
{
	struct pub *p = arg;
	(void)fd;
	(void)what;
	p->running = false;
	event_base_loopbreak(p->base);
}

static int
mqtt_load(const char *url, int secs, int nsci, const char *keyfile)
{
	struct cats_key k;
	char err[256];
	if (cats_key_load(&k, keyfile, CATS_KEY_ED25519_SECRET, err,
	    sizeof(err)) < 0) {
		fprintf(stderr, "bench_sma: %s\n", err);
		return 1;
	}
	struct pub p = { .nsci = nsci, .running = true };
	p.tok = calloc((size_t)nsci, sizeof(*p.tok));
	p.seq = calloc((size_t)nsci, sizeof(*p.seq));
	uint64_t now = cats_clock_now();
	for (int i = 0; i < nsci; i++) {
		struct cats_token t;
		memset(&t, 0, sizeof(t));
		cats_strlcpy(t.iss, k.name, sizeof(t.iss));
		snprintf(t.sub, sizeof(t.sub), "load-%d", i);
		t.iat = now / 1000 - 1;
		t.exp = now / 1000 + 3600;
		memcpy(t.cti, &i, sizeof(i));
		t.ncs = 1;
		cats_strlcpy(t.cs[0], "ARS", sizeof(t.cs[0]));
		cats_token_make(&t, &k, &p.tok[i]);
		/* Sequences above what an earlier run (and httpload) used. */
		p.seq[i] = now * 2;
	}
	p.base = event_base_new();
	struct sci_mqtt_conf c = { .broker = url, .client_id = "bench-pub",
		.qos = 1, .clean = true };
	static const struct sci_mqtt_cbs cbs = { NULL, pub_state, pub_acked };
	if ((p.m = sci_mqtt_new(p.base, &c, &cbs, &p, err,
	    sizeof(err))) == NULL) {
		fprintf(stderr, "bench_sma: %s\n", err);
		return 1;
	}
	struct event *stop = evtimer_new(p.base, pub_stop, &p);
	struct timeval tv = { secs, 0 };
	evtimer_add(stop, &tv);
	event_base_dispatch(p.base);
	printf("published %llu acked %llu refused %llu\n",
	    (unsigned long long)p.published, (unsigned long long)p.acked,
	    (unsigned long long)p.refused);
	event_free(stop);
	sci_mqtt_free(p.m);
	event_base_free(p.base);
	return 0;
}

int
main(int argc, char **argv)
{
	if (argc == 6 && strcmp(argv[1], "mqtt") == 0) {
		cats_crypto_init();
		cats_log_init("bench_sma");
		cats_log_verbosity(0);
		return mqtt_load(argv[2], atoi(argv[3]), atoi(argv[4]),
		    argv[5]);
	}
	int nsci = argc > 1 ? atoi(argv[1]) : NSCI;
	/* "plain" or "token": only those rows (for profiling); "dump": write
	 * the plain rounds to stdout (for bench/sma.sh). */
	const char *only = argc > 2 ? argv[2] : "";
	if (nsci < 1000)
		nsci = 1000;
	cats_crypto_init();
	cats_log_init("bench_sma");
	cats_log_verbosity(0);
	cats_audit_open("none");
	uint64_t now = 1700000000000;

	/* An issuer and one token per SCI. */
	struct cats_key iss, isspub;
	cats_key_gen_ed25519(&iss, "issuer");
	cats_key_public(&iss, &isspub);
	int nsigned = nsci / 10;
	scis = calloc((size_t)(nsci + nsigned), sizeof(*scis));
	for (int i = 0; i < nsci + nsigned; i++) {
		struct cats_token t;
		memset(&t, 0, sizeof(t));
		snprintf(scis[i].id, sizeof(scis[i].id), "10.%d.%d.%d:80",
		    i >> 16, (i >> 8) & 255, i & 255);
		cats_strlcpy(t.iss, "issuer", sizeof(t.iss));
		cats_strlcpy(t.sub, scis[i].id, sizeof(t.sub));
		t.iat = now / 1000 - 10;
		t.exp = now / 1000 + 86400;
		t.cti[0] = (uint8_t)i;
		t.cti[1] = (uint8_t)(i >> 8);
		t.cti[2] = (uint8_t)(i >> 16);
		t.ncs = 1;
		cats_strlcpy(t.cs[0], i % 2 ? "ARS" : "VRS", sizeof(t.cs[0]));
		if (i >= nsci) {
			cats_key_gen_ed25519(&scis[i].key, NULL);
			t.has_cnf = true;
			memcpy(t.cnf, scis[i].key.pk, 32);
		}
		if (strcmp(only, "plain") != 0 && strcmp(only, "dump") != 0)
			cats_token_make(&t, &iss, &scis[i].tok);
	}

	struct sma_conf c;
	sma_conf_defaults(&c);
	c.id = strdup("bench");
	c.max_entries = (uint64_t)nsci * 2;
	c.healthy_after = 1;
	c.skew_ms = 0;
	/* The pipeline rows without the input-side limits (every report
	 * of a round has the same time); their own row is below. */
	c.in_all_milli = 0;
	c.in_sci_milli = 0;
	struct sma_keys k;
	memset(&k, 0, sizeof(k));
	k.issuers.v = &isspub;
	k.issuers.n = 1;

	/* Streams: ROUNDS reports per SCI, without and with tokens. */
	struct cats_buf plain[ROUNDS], tok[ROUNDS], sig = { 0 };
	memset(plain, 0, sizeof(plain));
	memset(tok, 0, sizeof(tok));
	for (int rnd = 0; rnd < ROUNDS; rnd++)
		for (int i = 0; i < nsci; i++) {
			make_report(&plain[rnd], i, (uint64_t)rnd + 1, now,
			    false, false);
			make_report(&tok[rnd], i + 0, (uint64_t)rnd + 1, now,
			    true, false);
		}
	/* Signed reports: SCIs whose tokens bind a key; a first round
	 * verifies the tokens, the second is timed. */
	struct cats_buf sig0 = { 0 };
	for (int i = nsci; i < nsci + nsigned; i++) {
		make_report(&sig0, i, 1, now, true, true);
		make_report(&sig, i, 2, now, true, true);
	}

	if (strcmp(only, "dump") == 0) {
		for (int rnd = 0; rnd < ROUNDS; rnd++)
			cats_write_all(1, plain[rnd].p, plain[rnd].len);
		return 0;
	}
	size_t n;
	double base = run(&plain[1], NULL, now, &n);
	printf("# %d SCIs, %zu reports per round, %zu bytes per report\n",
	    nsci, n, plain[1].len / n);

	if (strcmp(only, "token") == 0)
		goto tokens;
	/* No authentication. */
	c.auth = SMA_AUTH_NONE;
	struct sma *s = sma_new(&c, &k, NULL, NULL);
	size_t before = heap_used();
	run(&plain[0], s, now, &n);
	size_t after = heap_used();
	double r1 = run(&plain[1], s, now, &n);
	double r2 = run(&plain[2], s, now, &n);
	double best = r1 > r2 ? r1 : r2;
	row("sma reports/s, no auth (decode+validate+cache, 100k SCIs)", best,
	    "rep/s", base, "rep/s decode only");
	row("sma memory per cached SCI (100k SCIs)", (double)(after - before) /
	    nsci, "B", 512, "B goal");
	sma_free(s);
	/*
	 * The input-side limits on (an overall and a per-SCI bucket checked
	 * for every report, set so that none is dropped) against off, the
	 * same rounds, each at its best of three.
	 */
	double on = 0, off = 0;
	for (int k2 = 0; k2 < 3; k2++) {
		for (int lim = 0; lim < 2; lim++) {
			c.in_all_milli = lim ? UINT64_C(1000000000000) : 0;
			c.in_all_burst = 1000000000;
			c.in_sci_milli = lim ? 1000000 : 0;
			c.in_sci_burst = 1000;
			s = sma_new(&c, &k, NULL, NULL);
			run(&plain[0], s, now, &n);
			r1 = run(&plain[1], s, now, &n);
			r2 = run(&plain[2], s, now, &n);
			double r = r1 > r2 ? r1 : r2;
			if (lim && r > on)
				on = r;
			if (!lim && r > off)
				off = r;
			if (lim && sma_stats(s)->limited_sci +
			    sma_stats(s)->limited_all > 0)
				on = 0;	/* a drop: not the row it says */
			sma_free(s);
		}
	}
	c.in_all_milli = c.in_sci_milli = 0;
	row("sma reports/s, input limits on (checked, not reached) vs off",
	    on, "rep/s", off, "rep/s limits off");
	if (strcmp(only, "plain") == 0)
		return 0;

tokens:
	/* Tokens: the first round verifies each (Ed25519), then cached. */
	c.auth = SMA_AUTH_TOKEN;
	s = sma_new(&c, &k, NULL, NULL);
	before = heap_used();
	double first = run(&tok[0], s, now, &n);
	after = heap_used();
	r1 = run(&tok[1], s, now, &n);
	r2 = run(&tok[2], s, now, &n);
	best = r1 > r2 ? r1 : r2;
	double tbase = run(&tok[1], NULL, now, &n);
	row("sma reports/s, tokens verified once then cached", best, "rep/s",
	    tbase, "rep/s decode only");
	row("sma reports/s, first contact (token signature checked)", first,
	    "rep/s", tbase, "rep/s decode only");
	row("sma memory per cached SCI with its token (100k SCIs)",
	    (double)(after - before) / nsci, "B", 512, "B goal");
	run(&sig0, s, now, &n);
	double rs = run(&sig, s, now, &n);
	row("sma reports/s, every report signed (Ed25519 check each)", rs,
	    "rep/s", tbase, "rep/s decode only");
	const struct sma_stats *st = sma_stats(s);
	printf("# accepted %llu, rejected %llu, tokens verified %llu, cached "
	    "%llu, signatures %llu\n", (unsigned long long)(st->accepted +
	    st->flagged), (unsigned long long)st->rejected,
	    (unsigned long long)st->tok_verified,
	    (unsigned long long)st->tok_cached,
	    (unsigned long long)st->sig_verified);
	sma_free(s);
	return 0;
}
