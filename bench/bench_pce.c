/*
 * bench_pce - the PCE beside igraph's Dijkstra, on the same synthetic
 * carrier-like graphs (te_synth.h) of 10^4, 10^5 and 10^6 nodes.
 *
 * Rows "name | value | baseline | ratio" (bench/run.sh):
 *   spf-N          unconstrained single-pair shortest path (TE metric), us
 *                  per path; baseline igraph_get_shortest_path_dijkstra
 *   spf+segs-N     the same with the SR-MPLS segment list computed
 *   cspf-N         delay bound + minimum bandwidth + exclude-any affinity,
 *                  us per path; baseline our own unconstrained time
 *                  (the goal is a ratio <= 3)
 *   requests-N     path-req records decoded, answered and encoded per
 *                  second (in process; bench/pce.sh goes through the tool)
 *   mem-node-N, mem-direction-N   bytes of the TE database; baseline
 *                  igraph's graph with one weight (topology only)
 *
 * usage: bench_pce [max-nodes]   (default 1000000; BENCH_PCE_MAX too)
 * Timings are printed, never asserted; results are checked (same costs as
 * igraph, constrained paths feasible) and a mismatch fails the run.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <igraph/igraph.h>

#include "base/clock.h"
#include "rec/json.h"
#include "pce/pce.h"
#include "te_synth.h"

static uint64_t rng = 0x243f6a8885a308d3ULL;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void
row(const char *name, double value, const char *unit, double base,
    const char *bunit)
{
	if (base > 0)
		printf("%-20s | %.2f %s | %.2f %s | %.2f\n", name, value, unit,
		    base, bunit, value / base);
	else
		printf("%-20s | %.2f %s | no baseline | n/a\n", name, value,
		    unit);
	fflush(stdout);
}

static double
now_us(void)
{
	return (double)cats_clock_mono_ns() / 1000.0;
}

static int
bench_size(uint32_t n, int pairs)
{
	char err[300], name[64];
	int fails = 0;
	double t0 = now_us();
	struct cats_synth sp = { .nodes = n, .seed = 1 };
	struct cats_te *te = cats_te_synth_build(&sp, err, sizeof(err));
	if (te == NULL) {
		fprintf(stderr, "bench_pce: %s\n", err);
		return 1;
	}
	double tbuild = now_us() - t0;
	fprintf(stderr, "# %u nodes, %u directions, built in %.0f ms\n", te->n,
	    te->m, tbuild / 1000);

	/* igraph: the same directed graph, TE metric as weights. */
	igraph_vector_int_t ev;
	igraph_vector_t wv;
	igraph_vector_int_init(&ev, 2 * (igraph_integer_t)te->m);
	igraph_vector_init(&wv, te->m);
	for (uint32_t v = 0; v < te->n; v++)
		for (uint32_t e = te->row[v]; e < te->row[v + 1]; e++) {
			VECTOR(ev)[2 * e] = v;
			VECTOR(ev)[2 * e + 1] = te->dst[e];
			VECTOR(wv)[e] = te->w[CATS_TE_W_IGP][e];
		}
	igraph_t g;
	igraph_create(&g, &ev, te->n, IGRAPH_DIRECTED);
	igraph_vector_int_t pv, pe;
	igraph_vector_int_init(&pv, 0);
	igraph_vector_int_init(&pe, 0);

	uint32_t *src = malloc(pairs * sizeof(uint32_t));
	uint32_t *dst = malloc(pairs * sizeof(uint32_t));
	uint64_t *cost = malloc(pairs * sizeof(uint64_t));
	for (int i = 0; i < pairs; i++) {
		src[i] = rnd(te->n);
		dst[i] = rnd(te->n - 1);
		dst[i] += dst[i] >= src[i];
	}
	/* igraph's edge ids are ours: it keeps the edge order given. */
	double ti = now_us();
	for (int i = 0; i < pairs; i++) {
		igraph_get_shortest_path_dijkstra(&g, &pv, &pe, src[i], dst[i],
		    &wv, IGRAPH_OUT);
		uint64_t c = 0;
		for (igraph_integer_t k = 0; k < igraph_vector_int_size(&pe);
		    k++)
			c += te->w[CATS_TE_W_IGP][VECTOR(pe)[k]];
		cost[i] = c;
	}
	ti = (now_us() - ti) / pairs;

	struct cats_cspf_ws *ws = cats_cspf_ws_new();
	struct cats_cspf_req q;
	struct cats_cspf_res r;
	/* Warm the workspace (allocation is not the search). */
	cats_cspf_req_init(&q, 0, 1);
	cats_cspf(te, ws, &q, &r);
	double to = now_us();
	for (int i = 0; i < pairs; i++) {
		cats_cspf_req_init(&q, src[i], dst[i]);
		q.dataplane = CATS_DP_SRMPLS;
		q.metric = CATS_METRIC_IGP;
		q.path_only = true;
		cats_cspf(te, ws, &q, &r);
		if (r.status != CATS_CSPF_OK || r.cost != cost[i])
			fails++;
	}
	to = (now_us() - to) / pairs;
	snprintf(name, sizeof(name), "spf-%u", n);
	row(name, to, "us", ti, "us igraph");

	double ts = now_us();
	int segok = 0;
	for (int i = 0; i < pairs; i++) {
		cats_cspf_req_init(&q, src[i], dst[i]);
		q.dataplane = CATS_DP_SRMPLS;
		q.metric = CATS_METRIC_IGP;
		cats_cspf(te, ws, &q, &r);
		segok += r.status == CATS_CSPF_OK;
	}
	ts = (now_us() - ts) / pairs;
	snprintf(name, sizeof(name), "spf+segs-%u", n);
	row(name, ts, "us", ti, "us igraph");
	fprintf(stderr, "# %d of %d paths within the MSD of 10\n", segok,
	    pairs);

	/* Constrained: least IGP metric within 10 % of the least delay,
	 * 100 Mbit/s available, avoiding admin group bit 3. */
	uint64_t *bound = malloc(pairs * sizeof(uint64_t));
	for (int i = 0; i < pairs; i++) {
		cats_cspf_req_init(&q, src[i], dst[i]);
		q.dataplane = CATS_DP_SRMPLS;
		q.metric = CATS_METRIC_DELAY;
		q.path_only = true;
		cats_cspf(te, ws, &q, &r);
		bound[i] = r.status == CATS_CSPF_OK ? r.cost * 11 / 10 : 1;
	}
	int feasible = 0, exact = 0;
	const uint64_t min_bw = 100000000ULL;	/* 100 Mbit/s available */
	const uint32_t excl = 8;		/* affinity bit 3: 20 % */
	double tc = now_us();
	for (int i = 0; i < pairs; i++) {
		cats_cspf_req_init(&q, src[i], dst[i]);
		q.dataplane = CATS_DP_SRMPLS;
		q.path_only = true;
		q.metric = CATS_METRIC_IGP;
		q.max_delay_us = bound[i];
		q.min_bw = min_bw;
		q.exclude_any = excl;
		cats_cspf(te, ws, &q, &r);
		feasible += r.status == CATS_CSPF_OK;
		exact += r.exact_search;
		if (r.status == CATS_CSPF_OK && r.delay_us > bound[i])
			fails++;
	}
	tc = (now_us() - tc) / pairs;
	snprintf(name, sizeof(name), "cspf-%u", n);
	row(name, tc, "us", to, "us unconstrained");
	fprintf(stderr, "# constrained: %d of %d feasible, %d needed the exact "
	    "search\n", feasible, pairs, exact);

	/* Requests through the PCE function, records in and out: distinct
	 * random pairs (nothing to share), then the CATS pattern (a few
	 * ingress forwarders, a few egress sites, a few constraint sets,
	 * answers shared by flows through the cache). */
	struct cats_pce pce;
	cats_pce_init(&pce, te);
	double rate[2];
	for (int pass = 0; pass < 2; pass++) {
		int nreq = pass == 0 ? pairs : 20 * pairs;
		uint32_t ing[8], egr[8];
		for (int k = 0; k < 8; k++) {
			ing[k] = rnd(te->n);
			egr[k] = rnd(te->n);
		}
		struct cats_buf in = { 0 }, out = { 0 };
		size_t *offs = malloc((nreq + 1) * sizeof(size_t));
		for (int i = 0; i < nreq; i++) {
			char text[700];
			uint32_t a = pass ? ing[rnd(8)] : src[i];
			uint32_t b = pass ? egr[rnd(8)] : dst[i];
			if (a == b)
				b = (b + 1) % te->n;
			static const char *const prof[4] = { "{}",
			    "{\"max_delay_us\":40000}",
			    "{\"min_bw\":100000000,\"exclude_any\":8}",
			    "{\"metric\":\"delay\",\"max_hops\":40}" };
			snprintf(text, sizeof(text), "{\"type\":\"path-req\","
			    "\"txn\":%d,\"ts\":1000,\"headend\":\"n%u\","
			    "\"endpoint\":\"n%u\",\"dataplane\":\"srmpls\","
			    "\"constraints\":%s,\"decision\":{\"cs_id\":"
			    "\"S1\",\"csci_id\":\"c1\",\"locator\":"
			    "\"198.51.100.21\",\"egress\":\"n%u\",\"ts\":"
			    "1000},\"ingress\":\"n%u\"}", i + 1, a, b,
			    prof[pass ? rnd(4) : 0], b, a);
			json_error_t je;
			json_t *j = json_loads(text, 0, &je);
			struct cats_err e;
			offs[i] = in.len;
			if (j == NULL || cats_json_to_cbor(j, &in, &e) < 0)
				fails++;
			json_decref(j);
		}
		offs[nreq] = in.len;
		struct cats_dec dec;
		struct cats_arena arena = { 0 };
		cats_dec_init(&dec, NULL);
		pce.cache_max = pass ? CATS_PCE_CACHE_DEFAULT : 0;
		int answered = 0;
		double tr = now_us();
		for (int i = 0; i < nreq; i++) {
			struct cats_rec rec, rep;
			struct cats_err e;
			if (cats_rec_decode(&dec, in.p + offs[i], offs[i + 1] -
			    offs[i], &rec, &e) < 0) {
				fails++;
				continue;
			}
			cats_arena_reset(&arena);
			cats_pce_answer(&pce, &rec.u.preq, 1000, &rep, &arena);
			out.len = 0;
			answered += cats_rec_encode(&rep, &out, true) == 0;
		}
		rate[pass] = answered / ((now_us() - tr) / 1e6);
		cats_dec_free(&dec);
		cats_arena_free(&arena);
		cats_buf_free(&in);
		cats_buf_free(&out);
		free(offs);
	}
	snprintf(name, sizeof(name), "requests-cold-%u", n);
	row(name, rate[0], "req/s", 0, "");
	snprintf(name, sizeof(name), "requests-cats-%u", n);
	row(name, rate[1], "req/s", rate[0], "req/s cold");
	fprintf(stderr, "# %" PRIu64 " cache hits\n", pce.c.cache_hits);

	struct cats_te_mem m;
	cats_te_mem(te, &m);
	snprintf(name, sizeof(name), "mem-node-%u", n);
	/* igraph: os, is (n+1 integers of 8 bytes). */
	row(name, (double)m.node_bytes / te->n, "B", 16, "B igraph");
	snprintf(name, sizeof(name), "mem-direction-%u", n);
	/* igraph: from, to, oi, ii (8 bytes each) and one double weight. */
	row(name, (double)m.edge_bytes / te->m, "B", 40, "B igraph");
	fprintf(stderr, "# workspace %zu bytes (%.1f per node)\n",
	    cats_cspf_ws_bytes(ws), (double)cats_cspf_ws_bytes(ws) / te->n);

	if (fails)
		fprintf(stderr, "bench_pce: %d results disagree\n", fails);
	igraph_vector_int_destroy(&pv);
	igraph_vector_int_destroy(&pe);
	igraph_vector_int_destroy(&ev);
	igraph_vector_destroy(&wv);
	igraph_destroy(&g);
	free(src);
	free(dst);
	free(cost);
	free(bound);
	cats_cspf_ws_free(ws);
	cats_pce_free(&pce);	/* frees te */
	return fails ? 1 : 0;
}

int
main(int argc, char **argv)
{
	uint32_t max = 1000000;
	const char *env = getenv("BENCH_PCE_MAX");
	if (argc > 1)
		max = (uint32_t)strtoul(argv[1], NULL, 0);
	else if (env != NULL)
		max = (uint32_t)strtoul(env, NULL, 0);
	int rc = 0;
	printf("%-20s | %s | %s | %s\n", "name", "value", "baseline", "ratio");
	for (uint32_t n = 10000; n <= max; n *= 10)
		rc |= bench_size(n, n >= 1000000 ? 40 : n >= 100000 ? 200 :
		    1000);
	return rc;
}
