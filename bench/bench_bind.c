/*
 * bench_bind.c - the binding table at scale:
 *   bytes per binding (forward and reverse together) at N active bindings,
 *   against Katran (~56 B of key and value per flow, before hash overhead),
 *   IPVS (>= 128 B per connection) and nf_conntrack (~304 B per entry),
 *   with 16 flows per client and with a client per flow (IPv4, and IPv6,
 *   whose client addresses are interned, not inline);
 *   bindings installed per second (goal >= 500k/s), table alone and with
 *   each binding encoded into the journal;
 *   restore of N bindings from the journal and from a snapshot (goal
 *   <= 2 s).
 * Rows: "name | value | baseline | ratio".  N is 1M (BENCH_BIND_N to
 * change it).  Timings are printed, never asserted.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bind/bind.h"
#include "bind/bind_journal.h"
#include "base/clock.h"
#include "sec/crypto.h"

static struct bj *jr;
static uint64_t jbytes;

static void
to_journal(void *arg, const struct cats_rec *r)
{
	(void)arg;
	bj_append(jr, r);
}

static struct cats_buf scratch;

static void
to_buffer(void *arg, const struct cats_rec *r)
{
	(void)arg;
	cats_rec_encode(r, &scratch, false);
	jbytes += scratch.len;
	scratch.len = 0;
}

static bool v6;	/* IPv6 flows (clients interned) instead of IPv4 */

/* The i-th path reply: distinct flows, clients of flows_per_client each. */
static void
make_rep(struct cats_path_rep *r, uint64_t i, uint64_t flows_per_client)
{
	static const uint8_t sid[16] = { 0xfc, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 1, 0 };
	static struct cats_segment seg[2];
	uint64_t client = i / flows_per_client;
	memset(r, 0, sizeof(*r));
	r->txn = i + 1;
	r->ts = 1000;
	r->status = CATS_PATH_OK;
	r->endpoint = "EF-2";
	r->headend = "IF-1";
	r->ingress = "IF-1";
	CATS_SET(r, PRP, dataplane, CATS_DP_SRV6);
	seg[0].kind = seg[1].kind = CATS_SEG_NODE;
	seg[0].sid.af = seg[1].sid.af = 6;
	memcpy(seg[0].sid.a, sid, 16);
	memcpy(seg[1].sid.a, sid, 16);
	seg[1].sid.a[15] = (uint8_t)(i % 8);	/* 8 distinct paths */
	r->segments.v = seg;
	r->segments.n = 2;
	CATS_SET(r, PRP, path_id, i % 8);
	CATS_SET(r, PRP, gen, 3);
	CATS_SET(r, PRP, deadline, UINT64_C(1) << 40);
	r->has |= UINT64_C(1) << CATS_PRP_decision;
	r->decision.cs_id = "S1";
	r->decision.csci_id = (i & 1) ? "B" : "A";
	r->decision.egress = "EF-2";
	r->decision.ts = 1000;
	r->decision.locator.af = 4;
	memcpy(r->decision.locator.a, "\xc6\x33\x64\x15", 4);
	r->decision.locator.a[3] = (i & 1) ? 0x15 : 0x0b;
	CATS_SET(&r->decision, DEC, cst_gen, 5);
	CATS_SET(&r->decision, DEC, nst_gen, 6);
	r->has |= UINT64_C(1) << CATS_PRP_flow;
	r->flow.proto = 6;
	r->flow.src.af = r->flow.dst.af = 4;
	r->flow.src.a[0] = 10;
	r->flow.src.a[1] = (uint8_t)(client >> 16);
	r->flow.src.a[2] = (uint8_t)(client >> 8);
	r->flow.src.a[3] = (uint8_t)client;
	memcpy(r->flow.dst.a, "\xc0\x00\x02\x64", 4);
	CATS_SET(&r->flow, FLOW, sport, 1024 + (i % flows_per_client) +
	    (i >> 24) * 4096);
	CATS_SET(&r->flow, FLOW, dport, 443);
	if (v6) {
		static const uint8_t net[16] = { 0x20, 0x01, 0x0d, 0xb8 };
		r->flow.src.af = r->flow.dst.af = r->decision.locator.af = 6;
		memcpy(r->flow.src.a, net, 16);
		r->flow.src.a[4] = (uint8_t)(client >> 24);
		r->flow.src.a[5] = (uint8_t)(client >> 16);
		r->flow.src.a[6] = (uint8_t)(client >> 8);
		r->flow.src.a[7] = (uint8_t)client;
		r->flow.src.a[15] = 1;
		memcpy(r->flow.dst.a, net, 16);
		r->flow.dst.a[5] = 1;
		r->flow.dst.a[15] = 0x64;
		memcpy(r->decision.locator.a, net, 16);
		r->decision.locator.a[5] = 5;
		r->decision.locator.a[15] = (i & 1) ? 0x15 : 0x0b;
	}
}

static long
rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0, rss = 0;
	if (f != NULL) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static struct bind_table *
new_table(const struct bind_io *io)
{
	struct bind_conf c;
	bind_conf_default(&c);
	c.commit = BIND_COMMIT_NONE;
	c.max_bindings = c.tenant_bindings = c.client_bindings = 0;
	c.max_pending = c.tenant_pending = c.client_pending = 0;
	c.idle_ms = 0;		/* nothing expires during the run */
	struct bind_table *t = bind_new(&c, io);
	bind_set_epoch(t, 1);
	return t;
}

static void
row(const char *name, double v, double base, const char *unit)
{
	/* Every baseline is a goal; a 0 is a measurement that failed. */
	if (v > 0)
		printf("%s | %.1f %s | %.1f %s | %.2f\n", name, v, unit, base,
		    unit, v / base);
	else
		printf("%s | error: did not measure | %.1f %s | error\n", name,
		    base, unit);
}

/* Fill t with n bindings; returns installs per second. */
static double
fill(struct bind_table *t, uint64_t n, uint64_t fpc)
{
	struct cats_path_rep r;
	uint64_t t0 = cats_clock_mono_ns();
	for (uint64_t i = 0; i < n; i++) {
		make_rep(&r, i, fpc);
		if (bind_path_rep(t, &r, 1000) != BR_OK) {
			fprintf(stderr, "bench_bind: install %" PRIu64
			    " refused\n", i);
			exit(1);
		}
	}
	double s = (double)(cats_clock_mono_ns() - t0) / 1e9;
	return (double)n / s;
}

static void
rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[512];
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* The bytes per binding of n bindings, a client per flow (IPv4 or IPv6). */
static void
client_per_flow(uint64_t n, bool ipv6)
{
	char label[128];
	v6 = ipv6;
	struct bind_table *t = new_table(NULL);
	fill(t, n, 1);
	snprintf(label, sizeof(label), "bind bytes/binding at %" PRIu64
	    " active, a client per flow%s (vs goal)", n, ipv6 ? ", IPv6" : "");
	row(label, (double)bind_mem(t) / (double)n, 128, "B");
	bind_free(t);
	v6 = false;
}

int
main(void)
{
	uint64_t n = 1000000;
	const char *e = getenv("BENCH_BIND_N");
	if (e != NULL && atoll(e) > 0)
		n = (uint64_t)atoll(e);
	cats_crypto_init();
	char label[128];

	/* Memory: 16 flows per client, then a client per flow. */
	long r0 = rss_kb();
	struct bind_table *t = new_table(NULL);
	double rate = fill(t, n, 16);
	long r1 = rss_kb();
	double per = (double)bind_mem(t) / (double)n;
	snprintf(label, sizeof(label), "bind bytes/binding at %" PRIu64
	    " active, 16 flows/client (vs Katran)", n);
	row(label, per, 56, "B");
	snprintf(label, sizeof(label), "bind bytes/binding at %" PRIu64
	    " active, 16 flows/client (vs IPVS)", n);
	row(label, per, 128, "B");
	snprintf(label, sizeof(label), "bind bytes/binding at %" PRIu64
	    " active, 16 flows/client (vs nf_conntrack)", n);
	row(label, per, 304, "B");
	snprintf(label, sizeof(label), "bind RSS bytes/binding at %" PRIu64
	    " active, 16 flows/client (vs goal)", n);
	row(label, (double)(r1 - r0) * 1024 / (double)n, 128, "B");
	snprintf(label, sizeof(label), "bind installs/s, table only "
	    "(vs goal)");
	row(label, rate, 500000, "/s");
	bind_free(t);
	if (getenv("BENCH_BIND_ONLY_INSTALL"))
		return 0;

	client_per_flow(n, false);
	client_per_flow(n, true);

	/* Installs with every binding encoded as its journal record. */
	struct bind_io io = { NULL, to_buffer, NULL, NULL, NULL };
	t = new_table(&io);
	rate = fill(t, n, 16);
	row("bind installs/s, with journal encoding (vs goal)", rate, 500000,
	    "/s");
	bind_free(t);

	/* Restore from a journal on disk, then from a snapshot. */
	char dir[256], err[512];
	snprintf(dir, sizeof(dir), "/tmp/bench_bind.%d", (int)getpid());
	rm_dir(dir);
	jr = bj_open(dir, false, BJ_FSYNC_NEVER, err, sizeof(err));
	if (jr == NULL) {
		fprintf(stderr, "bench_bind: %s\n", err);
		return 1;
	}
	io.journal = to_journal;
	t = new_table(&io);
	bj_restore(jr, t, 1000, err, sizeof(err));
	bj_start(jr, t, 1000, err, sizeof(err));
	fill(t, n, 16);
	bj_commit(jr);
	uint64_t jb = bj_stats(jr)->bytes;
	bj_close(jr);
	bind_free(t);

	jr = bj_open(dir, false, BJ_FSYNC_NEVER, err, sizeof(err));
	t = new_table(NULL);
	uint64_t t0 = cats_clock_mono_ns();
	if (bj_restore(jr, t, 2000, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_bind: %s\n", err);
		return 1;
	}
	double s = (double)(cats_clock_mono_ns() - t0) / 1e9;
	snprintf(label, sizeof(label), "bind restore of %zu bindings from the "
	    "journal, %.0f MB (vs goal)", bind_count(t), (double)jb / 1e6);
	row(label, s, 2, "s");
	t0 = cats_clock_mono_ns();
	if (bj_snapshot(jr, t, 2000, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_bind: %s\n", err);
		return 1;
	}
	double ss = (double)(cats_clock_mono_ns() - t0) / 1e9;
	uint64_t sb = bj_stats(jr)->snapshot_bytes;
	bj_close(jr);
	bind_free(t);
	jr = bj_open(dir, false, BJ_FSYNC_NEVER, err, sizeof(err));
	t = new_table(NULL);
	t0 = cats_clock_mono_ns();
	bj_restore(jr, t, 3000, err, sizeof(err));
	s = (double)(cats_clock_mono_ns() - t0) / 1e9;
	snprintf(label, sizeof(label), "bind restore of %zu bindings from a "
	    "snapshot, %.0f MB (vs goal)", bind_count(t), (double)sb / 1e6);
	row(label, s, 2, "s");
	row("bind snapshot write (vs restore goal)", ss, 2, "s");
	bj_close(jr);
	bind_free(t);
	if (getenv("BENCH_BIND_KEEP") == NULL)
		rm_dir(dir);
	else
		printf("# kept %s\n", dir);
	cats_buf_free(&scratch);
	return 0;
}
