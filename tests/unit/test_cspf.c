/*
 * test_cspf.c - constrained paths: hand-checked answers on the lab
 * topology for every constraint kind and every failure reason; a
 * brute-force checker (every simple path of small random graphs) and a
 * dynamic program (medium random graphs) that must agree with the CSPF;
 * segment lists replayed over the graph; the NST distance cache.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pce/cspf.h"
#include "pce/tedist.h"
#include "pce/pce.h"
#include "te_synth.h"
#include "t.h"

#define LAB "tests/data/pce/lab.json"

static struct cats_cspf_ws *ws;

/* ---- segment replay: an independent forwarding model ---- */

/*
 * IGP distances from s over the links that are up, O(n^2), with the
 * number of shortest paths (saturating at 2) and one predecessor.
 */
static void
spf_w(const struct cats_te *te, uint32_t s, const uint32_t *w, uint64_t *dist,
    int *np, uint32_t *pe)
{
	bool *done = calloc(te->n, 1);
	for (uint32_t v = 0; v < te->n; v++) {
		dist[v] = UINT64_MAX;
		np[v] = 0;
		pe[v] = CATS_TE_NONE;
	}
	dist[s] = 0;
	np[s] = 1;
	for (;;) {
		uint32_t u = CATS_TE_NONE;
		for (uint32_t v = 0; v < te->n; v++)
			if (!done[v] && dist[v] != UINT64_MAX &&
			    (u == CATS_TE_NONE || dist[v] < dist[u]))
				u = v;
		if (u == CATS_TE_NONE)
			break;
		done[u] = true;
		for (uint32_t e = te->row[u]; e < te->row[u + 1]; e++) {
			if (!te->up[e])
				continue;
			uint32_t v = te->dst[e];
			uint64_t nd = dist[u] + (w ? w[e] : 1);
			if (nd < dist[v]) {
				dist[v] = nd;
				np[v] = np[u];
				pe[v] = e;
			} else if (nd == dist[v]) {
				np[v] = np[v] + np[u] > 2 ? 2 : np[v] + np[u];
			}
		}
	}
	free(done);
}

static void
igp_spf(const struct cats_te *te, uint32_t s, uint64_t *dist, int *np,
    uint32_t *pe)
{
	spf_w(te, s, te->w[CATS_TE_W_IGP], dist, np, pe);
}

/*
 * Forward a packet along the segment list and compare the links it
 * crosses with the computed path.  Returns NULL or what went wrong.
 */
static const char *
replay(const struct cats_te *te, const struct cats_cspf_res *r, int dp)
{
	static char why[200];
	uint64_t *dist = malloc(te->n * sizeof(uint64_t));
	int *np = malloc(te->n * sizeof(int));
	uint32_t *pe = malloc(te->n * sizeof(uint32_t));
	uint32_t *walk = malloc((te->m + 1) * sizeof(uint32_t)), nw = 0;
	uint32_t cur = r->nodes[0];
	const char *bad = NULL;
	for (size_t i = 0; i < r->nsegs && bad == NULL; i++) {
		const struct cats_cspf_seg *g = &r->segs[i];
		if (g->adj) {
			if (cats_te_edge_src(te, g->edge) != cur) {
				bad = "adjacency SID not at the current node";
				break;
			}
			if (dp == CATS_DP_SRMPLS ? te->adj_label[g->edge] == 0 :
			    te->adj6 == NULL) {
				bad = "adjacency without a SID";
				break;
			}
			walk[nw++] = g->edge;
			cur = te->dst[g->edge];
			continue;
		}
		if (dp == CATS_DP_SRMPLS && te->label[g->node] == 0) {
			bad = "node without a label";
			break;
		}
		if (g->node == cur)
			continue;	/* the endpoint's decapsulation SID */
		igp_spf(te, cur, dist, np, pe);
		if (dist[g->node] == UINT64_MAX) {
			bad = "node SID unreachable";
			break;
		}
		if (np[g->node] != 1) {
			snprintf(why, sizeof(why), "node SID %s reached over "
			    "ECMP", cats_te_node_id(te, g->node));
			bad = why;
			break;
		}
		uint32_t tmp[64], nt = 0;
		for (uint32_t v = g->node; v != cur; v = cats_te_edge_src(te,
		    pe[v]))
			tmp[nt++] = pe[v];
		while (nt > 0)
			walk[nw++] = tmp[--nt];
		cur = g->node;
	}
	if (bad == NULL && nw != r->hops)
		bad = "the segments cross a different number of links";
	for (uint32_t i = 0; bad == NULL && i < nw; i++)
		if (walk[i] != r->edges[i])
			bad = "the segments cross other links";
	if (bad == NULL && dp == CATS_DP_SRV6 && r->nsegs > 0 &&
	    (r->segs[r->nsegs - 1].adj ||
	    r->segs[r->nsegs - 1].node != r->nodes[r->hops]))
		bad = "an SRv6 list ends with the endpoint's SID";
	free(dist);
	free(np);
	free(pe);
	free(walk);
	return bad;
}

/* ---- the lab: hand-checked answers ---- */

struct lab {
	struct cats_te *te;
	uint32_t ex[8];
	uint32_t exl[8];
	uint32_t exs[8];
};

static void
req(struct lab *L, struct cats_cspf_req *q, const char *a, const char *b,
    int dp)
{
	cats_cspf_req_init(q, cats_te_node(L->te, a), cats_te_node(L->te, b));
	q->dataplane = dp;
}

static void
ex_nodes(struct lab *L, struct cats_cspf_req *q, const char *list)
{
	char buf[200], *save, *tok;
	snprintf(buf, sizeof(buf), "%s", list);
	q->n_ex_nodes = 0;
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ",
	    &save))
		L->ex[q->n_ex_nodes++] = cats_te_node(L->te, tok);
	q->ex_nodes = L->ex;
}

static void
ex_links(struct lab *L, struct cats_cspf_req *q, const char *list)
{
	char buf[200], *save, *tok;
	snprintf(buf, sizeof(buf), "%s", list);
	q->n_ex_links = 0;
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ",
	    &save))
		L->exl[q->n_ex_links++] = cats_te_link(L->te, tok);
	q->ex_links = L->exl;
}

static const char *
path_str(const struct cats_te *te, const struct cats_cspf_res *r)
{
	static char buf[400];
	buf[0] = '\0';
	if (r->nodes == NULL)
		return "(none)";
	for (uint32_t i = 0; i <= r->hops; i++) {
		strcat(buf, i ? " " : "");
		strcat(buf, cats_te_node_id(te, r->nodes[i]));
	}
	return buf;
}

static const char *
segs_str(const struct cats_te *te, const struct cats_cspf_res *r, int dp)
{
	static char buf[400];
	buf[0] = '\0';
	for (size_t i = 0; i < r->nsegs; i++) {
		char one[80];
		const struct cats_cspf_seg *g = &r->segs[i];
		if (g->adj)
			snprintf(one, sizeof(one), "%sadj:%s>%s:%u", i ? " " : "",
			    cats_te_node_id(te, g->node),
			    cats_te_node_id(te, te->dst[g->edge]),
			    dp == CATS_DP_SRMPLS ? te->adj_label[g->edge] : 0);
		else
			snprintf(one, sizeof(one), "%snode:%s:%u", i ? " " : "",
			    cats_te_node_id(te, g->node), dp == CATS_DP_SRMPLS ?
			    te->label[g->node] : 0);
		strcat(buf, one);
	}
	return buf;
}

/* An answer: the path, its cost, and (when given) the segment list. */
static void
want_path(struct lab *L, const char *name, const struct cats_cspf_req *q,
    const char *path, uint64_t cost, const char *segs)
{
	struct cats_cspf_res r;
	cats_cspf(L->te, ws, q, &r);
	bool ok = r.status == CATS_CSPF_OK && r.nodes &&
	    strcmp(path_str(L->te, &r), path) == 0 && r.cost == cost;
	T_OK(ok, "%s: %s cost %llu (got %s: %s cost %llu)", name, path,
	    (unsigned long long)cost, cats_cspf_status_name(r.status),
	    path_str(L->te, &r), (unsigned long long)r.cost);
	if (ok && segs != NULL)
		T_OK(strcmp(segs_str(L->te, &r, q->dataplane), segs) == 0,
		    "%s: segments %s (got %s)", name, segs,
		    segs_str(L->te, &r, q->dataplane));
	if (ok && (q->dataplane == CATS_DP_SRMPLS ||
	    q->dataplane == CATS_DP_SRV6)) {
		const char *why = replay(L->te, &r, q->dataplane);
		T_OK(why == NULL, "%s: the segments replay the path (%s)", name,
		    why ? why : "ok");
	}
}

static void
want_fail(struct lab *L, const char *name, const struct cats_cspf_req *q,
    int status, int pruned)
{
	struct cats_cspf_res r;
	cats_cspf(L->te, ws, q, &r);
	T_OK(r.status == status && (status != CATS_CSPF_NO_PATH ||
	    r.pruned == pruned), "%s: %s%s%s (got %s %s, path %s)", name,
	    cats_cspf_status_name(status), status == CATS_CSPF_NO_PATH ?
	    " pruned " : "", status == CATS_CSPF_NO_PATH ?
	    cats_cspf_prune_name(pruned) : "", cats_cspf_status_name(r.status),
	    r.status == CATS_CSPF_NO_PATH ? cats_cspf_prune_name(r.pruned) : "",
	    path_str(L->te, &r));
}

static void
test_lab_constraints(struct lab *L)
{
	struct cats_cspf_req q;
	const int M = CATS_DP_SRMPLS, V6 = CATS_DP_SRV6;
	uint32_t s[4];

	req(L, &q, "IF-1", "EF-2", M);
	want_path(L, "unconstrained (te)", &q, "IF-1 P1 P2 EF-2", 30,
	    "node:EF-2:16002");
	q.metric = CATS_METRIC_IGP;
	want_path(L, "metric igp", &q, "IF-1 P1 P2 EF-2", 30, NULL);
	q.metric = CATS_METRIC_DELAY;
	want_path(L, "metric delay", &q, "IF-1 P6 P7 EF-2", 750,
	    "node:P7:16017 node:EF-2:16002");
	q.metric = CATS_METRIC_HOPS;
	want_path(L, "metric hops", &q, "IF-1 P3 EF-2", 2,
	    "node:P3:16013 node:EF-2:16002");

	req(L, &q, "IF-1", "EF-2", M);
	q.max_delay_us = 2000;
	want_path(L, "max_delay 2000", &q, "IF-1 P1 P3 EF-2", 31,
	    "node:P1:16011 adj:P1>P3:24003 node:EF-2:16002");
	q.max_delay_us = 1300;
	want_path(L, "max_delay 1300 (exact search beats the least-delay "
	    "path)", &q, "IF-1 P3 EF-2", 40, NULL);
	{
		struct cats_cspf_res r;
		cats_cspf(L->te, ws, &q, &r);
		T_OK(r.exact_search && r.labels > 0,
		    "max_delay 1300: the label-setting search ran");
	}
	req(L, &q, "IF-1", "EF-2", M);
	q.max_hops = 2;
	want_path(L, "max_hops 2", &q, "IF-1 P3 EF-2", 40, NULL);
	req(L, &q, "IF-1", "EF-2", M);
	q.min_bw = 5000000000ULL;
	want_path(L, "min_bw 5G", &q, "IF-1 P1 P2 EF-2", 30, NULL);
	ex_nodes(L, &q, "P1");
	want_path(L, "min_bw 5G, exclude P1", &q, "IF-1 P4 P5 EF-2", 45,
	    "node:P5:16015 node:EF-2:16002");
	req(L, &q, "IF-1", "EF-2", M);
	q.include_any = 4;
	want_path(L, "include_any 0x4", &q, "IF-1 P4 P5 EF-2", 45, NULL);
	req(L, &q, "IF-1", "EF-2", M);
	q.include_all = 5;
	want_path(L, "include_all 0x5", &q, "IF-1 P4 P5 EF-2", 45, NULL);
	req(L, &q, "IF-1", "EF-2", M);
	q.include_any = 3;
	want_path(L, "include_any 0x3", &q, "IF-1 P1 P2 EF-2", 30, NULL);
	req(L, &q, "IF-1", "EF-2", M);
	q.exclude_any = 1;
	want_path(L, "exclude_any 0x1", &q, "IF-1 P3 EF-2", 40,
	    "node:P3:16013 node:EF-2:16002");
	req(L, &q, "IF-1", "EF-2", M);
	ex_nodes(L, &q, "P1");
	want_path(L, "exclude_nodes P1", &q, "IF-1 P3 EF-2", 40, NULL);
	req(L, &q, "IF-1", "EF-2", M);
	ex_links(L, &q, "a2");
	want_path(L, "exclude_links a2", &q, "IF-1 P1 P3 EF-2", 31, NULL);
	req(L, &q, "IF-1", "EF-2", M);
	s[0] = 100;
	q.ex_srlgs = s;
	q.n_ex_srlgs = 1;
	want_path(L, "exclude_srlgs 100", &q, "IF-1 P1 P3 EF-2", 31,
	    "node:P1:16011 adj:P1>P3:24003 node:EF-2:16002");
	/* The data plane changes the answer: P5 has no SRv6. */
	req(L, &q, "IF-1", "EF-2", M);
	q.exclude_any = 2;
	ex_nodes(L, &q, "P1");
	want_path(L, "srmpls through P5", &q, "IF-1 P4 P5 EF-2", 45, NULL);
	q.dataplane = V6;
	want_path(L, "srv6 avoids P5", &q, "IF-1 P6 P7 EF-2", 60, NULL);
	req(L, &q, "IF-1", "EF-2", V6);
	want_path(L, "srv6 unconstrained", &q, "IF-1 P1 P2 EF-2", 30,
	    "node:EF-2:0");
	/* ECMP in the IGP is pinned with a node SID short of it. */
	req(L, &q, "IF-1", "EF-3", M);
	want_path(L, "ECMP pinned", &q, "IF-1 P1 EF-3", 110,
	    "node:P1:16011 node:EF-3:16003");
	/* ip: the IGP path, checked. */
	req(L, &q, "IF-1", "EF-2", CATS_DP_IP);
	want_path(L, "ip: the IGP path", &q, "IF-1 P1 P2 EF-2", 30, NULL);
	q.dataplane = CATS_DP_IPIP;
	q.max_delay_us = 3000;
	want_path(L, "ipip: the IGP path within max_delay", &q,
	    "IF-1 P1 P2 EF-2", 30, NULL);
	{
		struct cats_cspf_res r;
		cats_cspf(L->te, ws, &q, &r);
		T_OK(r.nsegs == 0, "ip: no segments");
	}
}

static void
test_lab_failures(struct lab *L)
{
	struct cats_cspf_req q;
	const int M = CATS_DP_SRMPLS, V6 = CATS_DP_SRV6;
	uint32_t s[4] = { 150, 200, 300, 400 };

	req(L, &q, "nowhere", "EF-2", M);
	want_fail(L, "unknown headend", &q, CATS_CSPF_NO_SOURCE, 0);
	req(L, &q, "IF-1", "nowhere", M);
	want_fail(L, "unknown endpoint", &q, CATS_CSPF_NO_DEST, 0);
	req(L, &q, "IF-1", "IF-1", M);
	want_fail(L, "headend is endpoint", &q, CATS_CSPF_SAME, 0);
	req(L, &q, "P5", "EF-2", V6);
	want_fail(L, "srv6 from P5", &q, CATS_CSPF_HEADEND_DP, 0);
	req(L, &q, "IF-1", "P5", V6);
	want_fail(L, "srv6 to P5", &q, CATS_CSPF_ENDPOINT_DP, 0);
	req(L, &q, "IF-1", "ISO", M);
	want_fail(L, "isolated endpoint", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_TOPOLOGY);
	req(L, &q, "IF-1", "X", V6);
	want_fail(L, "srv6 to X (only through P5)", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_DATAPLANE);
	req(L, &q, "IF-1", "X", M);
	want_path(L, "srmpls to X", &q, "IF-1 P4 P5 X", 40, NULL);
	req(L, &q, "IF-1", "EF-2", M);
	ex_nodes(L, &q, "P1 P3 P4 P6");
	want_fail(L, "exclude every first hop", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_EXCLUDE_NODES);
	ex_nodes(L, &q, "EF-2");
	want_fail(L, "exclude the endpoint", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_EXCLUDE_NODES);
	ex_nodes(L, &q, "IF-1");
	want_fail(L, "exclude the headend", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_EXCLUDE_NODES);
	req(L, &q, "IF-1", "ISO", M);
	ex_nodes(L, &q, "ISO");
	want_fail(L, "excluded and unreachable: topology first", &q,
	    CATS_CSPF_NO_PATH, CATS_PRUNE_TOPOLOGY);
	req(L, &q, "IF-1", "EF-2", M);
	ex_links(L, &q, "a1 b1 g1 d1");
	want_fail(L, "exclude every first link", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_EXCLUDE_LINKS);
	req(L, &q, "IF-1", "EF-2", M);
	q.ex_srlgs = s;
	q.n_ex_srlgs = 4;
	want_fail(L, "exclude every SRLG", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_EXCLUDE_SRLGS);
	req(L, &q, "IF-1", "EF-2", M);
	q.exclude_any = 0xf;
	want_fail(L, "exclude_any 0xf", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_EXCLUDE_ANY);
	req(L, &q, "IF-1", "EF-2", M);
	q.include_any = 0x10;
	want_fail(L, "include_any 0x10", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_INCLUDE_ANY);
	req(L, &q, "IF-1", "EF-2", M);
	q.include_all = 0x3;
	want_fail(L, "include_all 0x3", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_INCLUDE_ALL);
	req(L, &q, "IF-1", "EF-2", M);
	q.min_bw = 100000000000ULL;
	want_fail(L, "min_bw 100G", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_MIN_BW);
	req(L, &q, "IF-1", "EF-2", M);
	q.max_hops = 1;
	want_fail(L, "max_hops 1", &q, CATS_CSPF_NO_PATH, CATS_PRUNE_MAX_HOPS);
	req(L, &q, "IF-1", "EF-2", M);
	q.max_delay_us = 500;
	want_fail(L, "max_delay 500", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_MAX_DELAY);
	q.metric = CATS_METRIC_DELAY;
	want_fail(L, "max_delay 500 minimizing delay", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_MAX_DELAY);
	/* Which constraint pruned last: the order, not the strength. */
	req(L, &q, "IF-1", "EF-2", M);
	ex_nodes(L, &q, "P1 P3");
	q.exclude_any = 0xc;
	want_fail(L, "exclude P1 P3 then exclude_any 0xc", &q,
	    CATS_CSPF_NO_PATH, CATS_PRUNE_EXCLUDE_ANY);
	req(L, &q, "IF-1", "EF-2", M);
	q.max_hops = 2;
	q.max_delay_us = 800;
	want_fail(L, "max_hops 2 and max_delay 800: each alone feasible", &q,
	    CATS_CSPF_NO_PATH, CATS_PRUNE_MAX_DELAY);
	q.max_hops = 1;
	q.max_delay_us = 500;
	want_fail(L, "max_hops 1 and max_delay 500: hops first", &q,
	    CATS_CSPF_NO_PATH, CATS_PRUNE_MAX_HOPS);
	q.metric = CATS_METRIC_HOPS;
	want_fail(L, "max_hops 1 minimizing hops", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_MAX_HOPS);
	/* Realization. */
	req(L, &q, "IF-1", "EF-3", CATS_DP_IP);
	want_fail(L, "ip over IGP ECMP", &q, CATS_CSPF_ECMP, 0);
	req(L, &q, "IF-1", "EF-2", CATS_DP_IP);
	ex_nodes(L, &q, "P1");
	want_fail(L, "ip cannot steer around P1", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_EXCLUDE_NODES);
	req(L, &q, "IF-1", "EF-2", CATS_DP_IP);
	q.max_delay_us = 2999;
	want_fail(L, "ip: the IGP path is too slow", &q, CATS_CSPF_NO_PATH,
	    CATS_PRUNE_MAX_DELAY);
	req(L, &q, "IF-9", "EF-2", M);
	q.exclude_any = 1;
	want_fail(L, "two segments over an MSD of 1", &q, CATS_CSPF_SID_DEPTH,
	    0);
	req(L, &q, "IF-9", "EF-2", M);
	want_path(L, "one segment within an MSD of 1", &q,
	    "IF-9 IF-1 P1 P2 EF-2", 40, "node:EF-2:16002");
	/* The headend's advertised MSD, below the database's (16). */
	req(L, &q, "IF-1", "EF-2", M);
	q.exclude_any = 1;
	q.msd = 1;
	want_fail(L, "two segments over an advertised MSD of 1", &q,
	    CATS_CSPF_SID_DEPTH, 0);
	req(L, &q, "IF-1", "EF-2", M);
	q.msd = 1;
	want_path(L, "one segment within an advertised MSD of 1", &q,
	    "IF-1 P1 P2 EF-2", 30, "node:EF-2:16002");
	req(L, &q, "IF-9", "EF-2", M);
	q.exclude_any = 1;
	q.msd = 8;
	want_fail(L, "an advertised MSD above the database's counts not", &q,
	    CATS_CSPF_SID_DEPTH, 0);
	req(L, &q, "IF-1", "EF-2", V6);
	s[0] = 100;
	q.ex_srlgs = s;
	q.n_ex_srlgs = 1;
	want_fail(L, "srv6 needs the SRv6 adjacency P1>P3", &q,
	    CATS_CSPF_NO_SID, 0);
	req(L, &q, "IF-1", "EF-2", M);
	q.max_delay_us = 1300;
	q.max_labels = 2;
	want_fail(L, "label budget", &q, CATS_CSPF_BUDGET, 0);
}

/* net records move the answer. */
static void
test_lab_updates(struct lab *L)
{
	struct cats_cspf_req q;
	char err[300];
	struct cats_net n;
	memset(&n, 0, sizeof(n));
	n.scope = CATS_NET_LINK;
	n.src = "P1";
	n.dst = "P2";
	CATS_SET(&n, NET, up, false);
	T_OK(cats_te_apply_net(L->te, &n, err, sizeof(err)) == 0, "a2 down");
	req(L, &q, "IF-1", "EF-2", CATS_DP_SRMPLS);
	want_path(L, "a2 down", &q, "IF-1 P1 P3 EF-2", 31, NULL);
	CATS_SET(&n, NET, up, true);
	CATS_SET(&n, NET, te_metric, 50);
	cats_te_apply_net(L->te, &n, err, sizeof(err));
	want_path(L, "a2 up at te 50", &q, "IF-1 P1 P3 EF-2", 31, NULL);
	CATS_SET(&n, NET, te_metric, 10);
	cats_te_apply_net(L->te, &n, err, sizeof(err));
	want_path(L, "a2 back", &q, "IF-1 P1 P2 EF-2", 30, NULL);
}

static void
test_nst(struct lab *L)
{
	struct cats_tedist *nst = cats_tedist_new(2);
	struct cats_tedist_dist d;
	uint64_t runs, hits;
	int s = cats_tedist_get(nst, L->te, "IF-1", "EF-2", CATS_METRIC_DELAY, &d);
	T_OK(s == CATS_TEDIST_OK && d.cost == 750 && d.delay_us == 750 &&
	    d.hops == 3, "NST: least delay IF-1 to EF-2 is 750 us in 3 hops");
	s = cats_tedist_get(nst, L->te, "IF-1", "EF-2", CATS_METRIC_TE, &d);
	T_OK(s == CATS_TEDIST_OK && d.cost == 30 && d.delay_us == 3000 &&
	    d.hops == 3 && d.gen == cats_te_gen(L->te),
	    "NST: te metric 30, delay of that path 3000 us");
	s = cats_tedist_get(nst, L->te, "IF-1", "EF-3", CATS_METRIC_TE, &d);
	cats_tedist_counters(nst, &runs, &hits);
	T_OK(s == CATS_TEDIST_OK && d.cost == 110 && runs == 2 && hits == 1,
	    "NST: one run per headend and metric, then cached");
	T_OK(cats_tedist_get(nst, L->te, "IF-1", "ISO", CATS_METRIC_TE, &d) ==
	    CATS_TEDIST_UNREACHABLE, "NST: unreachable");
	T_OK(cats_tedist_get(nst, L->te, "IF-1", "nope", CATS_METRIC_TE, &d) ==
	    CATS_TEDIST_NO_EGRESS, "NST: unknown egress");
	T_OK(cats_tedist_get(nst, L->te, "nope", "EF-2", CATS_METRIC_TE, &d) ==
	    CATS_TEDIST_NO_HEADEND, "NST: unknown headend");
	/* A net update invalidates. */
	char err[300];
	struct cats_net n;
	memset(&n, 0, sizeof(n));
	n.scope = CATS_NET_LINK;
	n.src = "P6";
	n.dst = "P7";
	CATS_SET(&n, NET, delay_us, 1000);
	cats_te_apply_net(L->te, &n, err, sizeof(err));
	s = cats_tedist_get(nst, L->te, "IF-1", "EF-2", CATS_METRIC_DELAY, &d);
	cats_tedist_counters(nst, &runs, &hits);
	T_OK(s == CATS_TEDIST_OK && d.delay_us == 1000 && d.hops == 2 &&
	    runs == 3 && d.gen == cats_te_gen(L->te),
	    "NST: a new generation recomputes (now 1000 us, 2 hops)");
	CATS_SET(&n, NET, delay_us, 250);
	cats_te_apply_net(L->te, &n, err, sizeof(err));
	/* Several egresses in one run; LRU of 2 entries. */
	const char *eg[] = { "EF-2", "EF-3", "ISO", "zz" };
	struct cats_tedist_dist dd[4];
	int st[4];
	int ok = cats_tedist_get_many(nst, L->te, "P3", eg, NULL, 4,
	    CATS_METRIC_IGP, dd, st);
	T_OK(ok == 2 && st[0] == CATS_TEDIST_OK && dd[0].cost == 20 &&
	    st[1] == CATS_TEDIST_OK && dd[1].cost == 50 &&
	    st[2] == CATS_TEDIST_UNREACHABLE && st[3] == CATS_TEDIST_NO_EGRESS,
	    "NST: many egresses from one run");
	uint64_t egh[4];
	struct cats_tedist_dist dh[4];
	int sth[4];
	for (int i = 0; i < 4; i++)
		egh[i] = cats_hash_str(eg[i]);
	T_OK(cats_tedist_get_many(nst, L->te, "P3", eg, egh, 4,
	    CATS_METRIC_IGP, dh, sth) == 2 && memcmp(st, sth, sizeof(st)) == 0 &&
	    memcmp(dd, dh, sizeof(dd)) == 0,
	    "NST: the egresses' hashes given, the same answers");
	cats_tedist_get(nst, L->te, "P4", "EF-2", CATS_METRIC_IGP, &d);
	cats_tedist_get(nst, L->te, "P3", "EF-2", CATS_METRIC_IGP, &d);
	cats_tedist_counters(nst, &runs, &hits);
	uint64_t r0 = runs;
	cats_tedist_get(nst, L->te, "P4", "EF-2", CATS_METRIC_IGP, &d);
	cats_tedist_counters(nst, &runs, &hits);
	T_OK(runs == r0, "NST: the two most recent headends stay cached");
	cats_tedist_get(nst, L->te, "IF-9", "EF-2", CATS_METRIC_IGP, &d);
	cats_tedist_get(nst, L->te, "P3", "EF-2", CATS_METRIC_IGP, &d);
	cats_tedist_counters(nst, &runs, &hits);
	T_OK(runs == r0 + 2, "NST: the least recently used one is evicted");
	/* Another database object: recomputed even at the same generation. */
	char e2[300];
	bool missing;
	struct cats_te *te2 = cats_te_load(LAB, NULL, cats_te_gen(L->te),
	    &missing, e2, sizeof(e2));
	cats_tedist_get(nst, te2, "P3", "EF-2", CATS_METRIC_IGP, &d);
	cats_tedist_counters(nst, &runs, &hits);
	T_OK(runs == r0 + 3 && d.cost == 20, "NST: a reload recomputes");
	cats_te_free(te2);
	cats_tedist_free(nst);
}

/*
 * Two labels meet at v: A (cost 5, delay 10) and B (cost 6, delay 5).  A
 * is cheaper but only B can take the cheap last link within the bound:
 * dominance must look at the delay too.
 */
static void
test_dominance(void)
{
	const char *text = "{\"nodes\":[{\"id\":\"s\",\"node_label\":100},"
	    "{\"id\":\"a\",\"node_label\":101},{\"id\":\"b\","
	    "\"node_label\":102},{\"id\":\"v\",\"node_label\":103},"
	    "{\"id\":\"t\",\"node_label\":104}],\"links\":["
	    "{\"id\":\"sa\",\"src\":\"s\",\"dst\":\"a\",\"igp_metric\":1,"
	    "\"te_metric\":2,\"delay_us\":5,\"directed\":true},"
	    "{\"id\":\"av\",\"src\":\"a\",\"dst\":\"v\",\"igp_metric\":1,"
	    "\"te_metric\":3,\"delay_us\":5,\"directed\":true},"
	    "{\"id\":\"sb\",\"src\":\"s\",\"dst\":\"b\",\"igp_metric\":1,"
	    "\"te_metric\":3,\"delay_us\":2,\"directed\":true},"
	    "{\"id\":\"bv\",\"src\":\"b\",\"dst\":\"v\",\"igp_metric\":1,"
	    "\"te_metric\":3,\"delay_us\":3,\"directed\":true},"
	    "{\"id\":\"e1\",\"src\":\"v\",\"dst\":\"t\",\"igp_metric\":1,"
	    "\"te_metric\":1,\"delay_us\":8,\"directed\":true,"
	    "\"adj_label\":200},"
	    "{\"id\":\"e2\",\"src\":\"v\",\"dst\":\"t\",\"igp_metric\":5,"
	    "\"te_metric\":100,\"delay_us\":4,\"directed\":true,"
	    "\"adj_label\":201}]}";
	char err[300];
	struct cats_te *te = cats_te_load_mem(text, strlen(text), NULL, 1, err,
	    sizeof(err));
	if (!T_OK(te != NULL, "dominance graph loads (%s)", te ? "" : err))
		return;
	struct cats_cspf_req q;
	cats_cspf_req_init(&q, cats_te_node(te, "s"), cats_te_node(te, "t"));
	q.dataplane = CATS_DP_SRMPLS;
	q.max_delay_us = 14;
	struct cats_cspf_res r;
	cats_cspf(te, ws, &q, &r);
	T_OK(r.status == CATS_CSPF_OK && r.cost == 7 && r.delay_us == 13 &&
	    strcmp(path_str(te, &r), "s b v t") == 0 && r.exact_search,
	    "dominance keeps the slower-but-cheaper-to-finish label: s b v t "
	    "cost 7 (got %s cost %llu)", path_str(te, &r),
	    (unsigned long long)r.cost);
	cats_te_free(te);
}

/* ---- random graphs ---- */

static uint64_t rng = 88172645463325252ULL;

static uint32_t
rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

/* A random topology of n nodes: node i is "n<i>", link j "l<j>". */
static struct cats_te *
random_te(uint32_t n, uint32_t pct, bool small_weights)
{
	struct cats_te_builder *b = cats_te_builder_new(NULL);
	char err[300], id[16], a[16], c[16];
	for (uint32_t i = 0; i < n; i++) {
		struct cats_te_node_spec s;
		memset(&s, 0, sizeof(s));
		snprintf(id, sizeof(id), "n%u", i);
		s.id = id;
		s.label = 16000 + i;
		s.srv6_sid.af = 6;
		s.srv6_sid.a[0] = 0xfc;
		s.srv6_sid.a[2] = (uint8_t)(i >> 8);
		s.srv6_sid.a[3] = (uint8_t)i;
		s.srv6_sid.a[15] = 1;
		/* Some nodes lack SR-MPLS. */
		s.caps = CATS_TE_CAP_IP | CATS_TE_CAP_SRV6 |
		    (rnd(100) < 85 ? CATS_TE_CAP_SRMPLS : 0);
		s.msd = 16;
		cats_te_add_node(b, &s, err, sizeof(err));
	}
	uint32_t nl = 0, adj[256] = { 0 };
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t j = i + 1; j < n; j++) {
			int copies = rnd(100) < pct ? 1 + (rnd(10) == 0) : 0;
			for (int k = 0; k < copies; k++) {
				struct cats_te_link_spec l;
				uint32_t srl[2];
				memset(&l, 0, sizeof(l));
				snprintf(id, sizeof(id), "l%u", nl++);
				snprintf(a, sizeof(a), "n%u", i);
				snprintf(c, sizeof(c), "n%u", j);
				l.id = id;
				bool flip = rnd(2);
				l.src = flip ? c : a;
				l.dst = flip ? a : c;
				l.directed = rnd(4) == 0;
				l.admin_groups = rnd(16);
				l.nsrlgs = rnd(3);
				for (size_t q = 0; q < l.nsrlgs; q++)
					srl[q] = 1 + rnd(4);
				l.srlgs = srl;
				struct cats_te_dir *d[2] = { &l.fwd, &l.rev };
				for (int q = 0; q < 2; q++) {
					uint32_t span = small_weights ? 4 : 20;
					d[q]->igp = 1 + rnd(span);
					d[q]->te = 1 + rnd(span);
					d[q]->delay_us = 1 + rnd(small_weights ?
					    9 : 20);
					d[q]->max_bw = (1 + rnd(10)) *
					    1000000000ULL;
					d[q]->avail_bw = UINT64_MAX;
					d[q]->down = rnd(100) < 8;
				}
				uint32_t tail = flip ? j : i, head = flip ? i : j;
				l.fwd.adj_label = 24000 + adj[tail % 256]++;
				l.rev.adj_label = 24000 + adj[head % 256]++;
				l.fwd.adj_sid.af = l.rev.adj_sid.af = 6;
				l.fwd.adj_sid.a[0] = l.rev.adj_sid.a[0] = 0xfd;
				l.fwd.adj_sid.a[2] = (uint8_t)(nl >> 8);
				l.fwd.adj_sid.a[3] = (uint8_t)nl;
				l.rev.adj_sid.a[2] = (uint8_t)(nl >> 8);
				l.rev.adj_sid.a[3] = (uint8_t)nl;
				l.rev.adj_sid.a[4] = 1;
				if (cats_te_add_link(b, &l, err, sizeof(err)) < 0)
					fprintf(stderr, "# %s\n", err);
			}
		}
	return cats_te_build(b, 1, err, sizeof(err));
}

/* The constraint level of a path: the first constraint (in order) it
 * fails, or CATS_PRUNE__N.  Written from cspf.h, not from cspf.c. */
static int
level(const struct cats_te *te, const struct cats_cspf_req *q,
    const uint32_t *nodes, const uint32_t *edges, uint32_t hops)
{
	int lv = CATS_PRUNE__N;
#define FAIL(k) do { if ((k) < lv) lv = (k); } while (0)
	uint8_t cap = q->dataplane == CATS_DP_SRMPLS ? CATS_TE_CAP_SRMPLS :
	    q->dataplane == CATS_DP_SRV6 ? CATS_TE_CAP_SRV6 : CATS_TE_CAP_IP;
	uint64_t delay = 0;
	for (uint32_t i = 0; i <= hops; i++) {
		if (!(te->caps[nodes[i]] & cap))
			FAIL(CATS_PRUNE_DATAPLANE);
		for (size_t k = 0; k < q->n_ex_nodes; k++)
			if (q->ex_nodes[k] == nodes[i])
				FAIL(CATS_PRUNE_EXCLUDE_NODES);
	}
	for (uint32_t i = 0; i < hops; i++) {
		uint32_t e = edges[i];
		for (size_t k = 0; k < q->n_ex_links; k++)
			if (q->ex_links[k] == te->link[e])
				FAIL(CATS_PRUNE_EXCLUDE_LINKS);
		for (uint32_t s = te->srlg_row[e]; s < te->srlg_row[e + 1]; s++)
			for (size_t k = 0; k < q->n_ex_srlgs; k++)
				if (q->ex_srlgs[k] == te->srlg[s])
					FAIL(CATS_PRUNE_EXCLUDE_SRLGS);
		if (te->ag[e] & q->exclude_any)
			FAIL(CATS_PRUNE_EXCLUDE_ANY);
		if (q->include_any && !(te->ag[e] & q->include_any))
			FAIL(CATS_PRUNE_INCLUDE_ANY);
		if ((te->ag[e] & q->include_all) != q->include_all)
			FAIL(CATS_PRUNE_INCLUDE_ALL);
		if (te->avail_bw[e] < q->min_bw)
			FAIL(CATS_PRUNE_MIN_BW);
		delay += te->w[CATS_TE_W_DELAY][e];
	}
	if (hops > q->max_hops)
		FAIL(CATS_PRUNE_MAX_HOPS);
	if (delay > q->max_delay_us)
		FAIL(CATS_PRUNE_MAX_DELAY);
#undef FAIL
	return lv;
}

static uint64_t
path_cost(const struct cats_te *te, int metric, const uint32_t *edges,
    uint32_t hops)
{
	uint64_t c = 0;
	for (uint32_t i = 0; i < hops; i++)
		c += metric == CATS_METRIC_HOPS ? 1 :
		    metric == CATS_METRIC_IGP ? te->w[CATS_TE_W_IGP][edges[i]] :
		    metric == CATS_METRIC_DELAY ?
		    te->w[CATS_TE_W_DELAY][edges[i]] :
		    te->w[CATS_TE_W_TE][edges[i]];
	return c;
}

/* What enumerating every simple path says. */
struct brute {
	const struct cats_te *te;
	const struct cats_cspf_req *q;
	uint32_t nodes[16], edges[16];
	bool on[16];
	int maxlv;		/* -1: no path at all */
	uint64_t best;		/* feasible paths: least cost */
	uint64_t best_igp;	/* ip: least IGP cost, how many */
	int n_best_igp, igp_lv;
	size_t paths;
};

static void
dfs(struct brute *B, uint32_t v, uint32_t hops)
{
	const struct cats_te *te = B->te;
	if (v == B->q->dst) {
		B->paths++;
		int lv = level(te, B->q, B->nodes, B->edges, hops);
		if (lv > B->maxlv)
			B->maxlv = lv;
		if (lv == CATS_PRUNE__N) {
			uint64_t c = path_cost(te, B->q->metric, B->edges, hops);
			if (c < B->best)
				B->best = c;
		}
		uint64_t ic = path_cost(te, CATS_METRIC_IGP, B->edges, hops);
		if (ic < B->best_igp) {
			B->best_igp = ic;
			B->n_best_igp = 1;
			B->igp_lv = lv;
		} else if (ic == B->best_igp) {
			B->n_best_igp++;
		}
		return;
	}
	for (uint32_t e = te->row[v]; e < te->row[v + 1]; e++) {
		uint32_t w = te->dst[e];
		if (!te->up[e] || B->on[w])
			continue;
		B->on[w] = true;
		B->edges[hops] = e;
		B->nodes[hops + 1] = w;
		dfs(B, w, hops + 1);
		B->on[w] = false;
	}
}

static void
random_req(const struct cats_te *te, struct cats_cspf_req *q, bool plain,
    uint32_t *exn, uint32_t *exl, uint32_t *exs)
{
	uint32_t n = te->n;
	uint32_t s = rnd(n), d = rnd(n - 1);
	if (d >= s)
		d++;
	cats_cspf_req_init(q, s, d);
	q->metric = (int)rnd(4);
	q->dataplane = rnd(10) < 7 ? CATS_DP_SRMPLS : rnd(2) ? CATS_DP_SRV6 :
	    CATS_DP_IP;
	if (plain)
		return;
	if (rnd(100) < 35)
		q->max_delay_us = 3 + rnd(rnd(2) ? 12 : 30);
	if (rnd(100) < 30)
		q->max_hops = 1 + rnd(5);
	if (rnd(100) < 20)
		q->min_bw = (1 + rnd(10)) * 1000000000ULL;
	if (rnd(100) < 15)
		q->exclude_any = 1u << rnd(4);
	if (rnd(100) < 15)
		q->include_any = rnd(16);
	if (rnd(100) < 10)
		q->include_all = 1u << rnd(4);
	if (rnd(100) < 20) {
		q->n_ex_nodes = 1 + rnd(2);
		for (size_t i = 0; i < q->n_ex_nodes; i++)
			exn[i] = rnd(n);
		q->ex_nodes = exn;
	}
	if (rnd(100) < 15 && te->nlinks > 0) {
		q->n_ex_links = 1 + rnd(2);
		for (size_t i = 0; i < q->n_ex_links; i++)
			exl[i] = rnd(te->nlinks);
		q->ex_links = exl;
	}
	if (rnd(100) < 15) {
		q->n_ex_srlgs = 1 + rnd(2);
		for (size_t i = 0; i < q->n_ex_srlgs; i++)
			exs[i] = 1 + rnd(4);
		q->ex_srlgs = exs;
	}
}

/* Does the CSPF agree with every simple path enumerated? */
static const char *
check_brute(const struct cats_te *te, const struct cats_cspf_req *q,
    size_t *feasible)
{
	static char why[300];
	struct brute B;
	memset(&B, 0, sizeof(B));
	B.te = te;
	B.q = q;
	B.maxlv = -1;
	B.best = UINT64_MAX;
	B.best_igp = UINT64_MAX;
	B.nodes[0] = q->src;
	B.on[q->src] = true;
	dfs(&B, q->src, 0);
	struct cats_cspf_res r;
	cats_cspf(te, ws, q, &r);
	uint8_t cap = q->dataplane == CATS_DP_SRMPLS ? CATS_TE_CAP_SRMPLS :
	    q->dataplane == CATS_DP_SRV6 ? CATS_TE_CAP_SRV6 : CATS_TE_CAP_IP;
	int want, pruned = -1;
	if (!(te->caps[q->src] & cap))
		want = CATS_CSPF_HEADEND_DP;
	else if (!(te->caps[q->dst] & cap))
		want = CATS_CSPF_ENDPOINT_DP;
	else if (q->dataplane == CATS_DP_IP) {
		if (B.paths == 0) {
			want = CATS_CSPF_NO_PATH;
			pruned = CATS_PRUNE_TOPOLOGY;
		} else if (B.n_best_igp > 1) {
			want = CATS_CSPF_ECMP;
		} else if (B.igp_lv < CATS_PRUNE__N) {
			want = CATS_CSPF_NO_PATH;
			pruned = B.igp_lv;
		} else {
			want = CATS_CSPF_OK;
		}
	} else if (B.maxlv == CATS_PRUNE__N) {
		want = CATS_CSPF_OK;
	} else {
		want = CATS_CSPF_NO_PATH;
		pruned = B.maxlv < 0 ? CATS_PRUNE_TOPOLOGY : B.maxlv;
	}
	if (want == CATS_CSPF_OK)
		(*feasible)++;
	if (r.status != want && getenv("CSPF_DEBUG"))
		fprintf(stderr, "#  cspf path %s cost %llu hops %u; brute igp "
		    "%llu x%d lv %d\n", path_str(te, &r),
		    (unsigned long long)r.cost, r.hops,
		    (unsigned long long)B.best_igp, B.n_best_igp, B.igp_lv);
	if (r.status != want) {
		snprintf(why, sizeof(why), "status %s, brute force says %s "
		    "(%zu paths)", cats_cspf_status_name(r.status),
		    cats_cspf_status_name(want), B.paths);
		return why;
	}
	if (want == CATS_CSPF_NO_PATH && r.pruned != pruned) {
		snprintf(why, sizeof(why), "pruned %s, brute force says %s",
		    cats_cspf_prune_name(r.pruned), cats_cspf_prune_name(pruned));
		return why;
	}
	if (want != CATS_CSPF_OK)
		return NULL;
	/* The answer is a simple, feasible path of the least cost. */
	bool seen[16] = { false };
	for (uint32_t i = 0; i <= r.hops; i++) {
		if (seen[r.nodes[i]])
			return "not a simple path";
		seen[r.nodes[i]] = true;
		if (i < r.hops && (cats_te_edge_src(te, r.edges[i]) !=
		    r.nodes[i] || te->dst[r.edges[i]] != r.nodes[i + 1]))
			return "nodes and links disagree";
	}
	if (r.nodes[0] != q->src || r.nodes[r.hops] != q->dst)
		return "wrong ends";
	if (level(te, q, r.nodes, r.edges, r.hops) != CATS_PRUNE__N)
		return "the path breaks a constraint";
	uint64_t c = path_cost(te, q->metric, r.edges, r.hops);
	if (c != r.cost)
		return "reported cost is not the path's";
	uint64_t best = q->dataplane == CATS_DP_IP ? c : B.best;
	if (q->dataplane == CATS_DP_IP &&
	    path_cost(te, CATS_METRIC_IGP, r.edges, r.hops) != B.best_igp)
		return "ip: not the IGP shortest path";
	if (c != best) {
		snprintf(why, sizeof(why), "cost %llu, brute force finds %llu",
		    (unsigned long long)c, (unsigned long long)best);
		return why;
	}
	if (q->dataplane != CATS_DP_IP) {
		const char *rw = replay(te, &r, q->dataplane);
		if (rw != NULL)
			return rw;
	}
	return NULL;
}

static void
test_brute(int graphs, int per_graph, bool plain)
{
	int cases = 0, fails = 0;
	size_t feasible = 0;
	char first[400] = "";
	for (int g = 0; g < graphs; g++) {
		uint32_t n = 3 + rnd(6);
		struct cats_te *te = random_te(n, 30 + rnd(40), true);
		if (te == NULL) {
			fails++;
			continue;
		}
		for (int k = 0; k < per_graph; k++) {
			struct cats_cspf_req q;
			uint32_t exn[4], exl[4], exs[4];
			random_req(te, &q, plain, exn, exl, exs);
			const char *why = check_brute(te, &q, &feasible);
			cases++;
			if (why != NULL && getenv("CSPF_DEBUG")) {
				fprintf(stderr, "# g%d k%d n%u->n%u dp %d "
				    "metric %d D %llu H %u bw %llu xa %u ia %u "
				    "il %u nx %zu nl %zu ns %zu: %s\n", g, k,
				    q.src, q.dst, q.dataplane, q.metric,
				    (unsigned long long)q.max_delay_us,
				    q.max_hops, (unsigned long long)q.min_bw,
				    q.exclude_any, q.include_any, q.include_all,
				    q.n_ex_nodes, q.n_ex_links, q.n_ex_srlgs,
				    why);
				for (size_t i = 0; i < q.n_ex_nodes; i++)
					fprintf(stderr, "#  exn %u\n", q.ex_nodes[i]);
			}
			if (why != NULL && fails++ == 0)
				snprintf(first, sizeof(first), "graph %d case "
				    "%d (%u nodes, n%u to n%u, %s, metric %d): "
				    "%s", g, k, n, q.src, q.dst,
				    cats_dataplane_names[q.dataplane], q.metric,
				    why);
		}
		cats_te_free(te);
	}
	T_OK(fails == 0, "brute force, %s: %d cases (%zu feasible), %d "
	    "disagree %s", plain ? "unconstrained" : "constrained", cases,
	    feasible, fails, first);
}

/*
 * Medium graphs: least cost within a delay bound (or a hop bound) by
 * dynamic programming over the budget, against the label-setting search.
 */
static void
test_dp(int graphs)
{
	int cases = 0, fails = 0, searched = 0;
	char first[300] = "";
	for (int g = 0; g < graphs; g++) {
		uint32_t n = 30 + rnd(40);
		struct cats_te *te = random_te(n, 8, false);
		for (int k = 0; k < 5; k++) {
			struct cats_cspf_req q;
			random_req(te, &q, true, NULL, NULL, NULL);
			q.dataplane = CATS_DP_SRV6;
			q.metric = rnd(2) ? CATS_METRIC_TE : CATS_METRIC_IGP;
			bool hops = rnd(3) == 0;
			/* Bounds just above the least delay (hops) make the
			 * exact search work hardest. */
			uint64_t *lc = malloc(n * 8), *ld = malloc(n * 8);
			uint32_t *lh = malloc(n * 4);
			cats_cspf_tree(te, ws, q.src, hops ? CATS_METRIC_HOPS :
			    CATS_METRIC_DELAY, lc, ld, lh);
			uint64_t least = lc[q.dst];
			free(lc);
			free(ld);
			free(lh);
			uint32_t B;
			if (least == UINT64_MAX)
				B = hops ? 1 + rnd(8) : 10 + rnd(120);
			else
				B = (uint32_t)(least + rnd((uint32_t)least / 2 +
				    2));
			if (hops)
				q.max_hops = B;
			else
				q.max_delay_us = B;
			const uint32_t *w = te->w[q.metric == CATS_METRIC_TE ?
			    CATS_TE_W_TE : CATS_TE_W_IGP];
			/* dp[b][v]: least cost to v using at most b. */
			uint64_t *dp = malloc((size_t)(B + 1) * n * 8);
			for (size_t i = 0; i < (size_t)(B + 1) * n; i++)
				dp[i] = UINT64_MAX;
			for (uint32_t b = 0; b <= B; b++) {
				dp[(size_t)b * n + q.src] = 0;
				if (b > 0)
					for (uint32_t v = 0; v < n; v++)
						if (dp[(size_t)(b - 1) * n + v] <
						    dp[(size_t)b * n + v])
							dp[(size_t)b * n + v] =
							    dp[(size_t)(b - 1) *
							    n + v];
				for (uint32_t v = 0; v < n; v++)
					for (uint32_t e = te->row[v];
					    e < te->row[v + 1]; e++) {
						uint32_t c = hops ? 1 :
						    te->w[CATS_TE_W_DELAY][e];
						if (!te->up[e] || c > b)
							continue;
						uint64_t pv = dp[(size_t)(b -
						    c) * n + v];
						if (pv == UINT64_MAX)
							continue;
						uint64_t *t = &dp[(size_t)b *
						    n + te->dst[e]];
						if (pv + w[e] < *t)
							*t = pv + w[e];
					}
			}
			uint64_t want = dp[(size_t)B * n + q.dst];
			free(dp);
			struct cats_cspf_res r;
			cats_cspf(te, ws, &q, &r);
			searched += r.exact_search;
			bool have = r.nodes != NULL && (r.status ==
			    CATS_CSPF_OK || r.status == CATS_CSPF_SID_DEPTH ||
			    r.status == CATS_CSPF_NO_SID);
			uint64_t got = have ? r.cost : UINT64_MAX;
			cases++;
			if (got != want && fails++ == 0)
				snprintf(first, sizeof(first), "graph %d case %d "
				    "(%u nodes, %s bound %u): %llu, dynamic "
				    "programming finds %llu", g, k, n, hops ?
				    "hop" : "delay", B, (unsigned long long)got,
				    (unsigned long long)want);
		}
		cats_te_free(te);
	}
	T_OK(fails == 0 && searched > 0, "dynamic programming: %d bounded "
	    "cases (%d needed the exact search), %d disagree %s", cases,
	    searched, fails, first);
}

/* The converted Topology Zoo networks. */
static void
test_real(void)
{
	static const char *const files[] = { "abilene", "nsfnet",
		"arpanet19728", "geant2012", "uninett2010", "cogentco" };
	for (size_t i = 0; i < CATS_ARRAY_LEN(files); i++) {
		char path[128], err[600];
		bool missing;
		snprintf(path, sizeof(path), "tests/topologies/%s.json",
		    files[i]);
		struct cats_te *te = cats_te_load(path, NULL, 1, &missing, err,
		    sizeof(err));
		if (!T_OK(te != NULL, "%s loads (%s)", files[i], te ? "" : err))
			continue;
		uint64_t *dist = malloc(te->n * 8);
		int *np = malloc(te->n * sizeof(int));
		uint32_t *pe = malloc(te->n * 4);
		int n = 0, ok = 0, bad = 0, exact = 0;
		char first[300] = "";
		for (int k = 0; k < 150; k++) {
			struct cats_cspf_req q;
			uint32_t exn[4], exl[4], exs[4];
			random_req(te, &q, k % 3 == 0, exn, exl, exs);
			if (q.dataplane == CATS_DP_IP)
				q.dataplane = CATS_DP_SRV6;
			if (q.max_delay_us != UINT64_MAX)
				q.max_delay_us = 2000 + rnd(30000);
			q.ex_srlgs = NULL;
			q.n_ex_srlgs = 0;
			struct cats_cspf_res r;
			cats_cspf(te, ws, &q, &r);
			n++;
			exact += r.exact_search;
			const char *why = NULL;
			if (r.status == CATS_CSPF_OK) {
				ok++;
				why = replay(te, &r, q.dataplane);
				if (why == NULL && level(te, &q, r.nodes, r.edges,
				    r.hops) != CATS_PRUNE__N)
					why = "the path breaks a constraint";
			}
			if (why == NULL && k % 3 == 0) {
				const uint32_t *w = q.metric == CATS_METRIC_HOPS ?
				    NULL : te->w[q.metric == CATS_METRIC_IGP ?
				    CATS_TE_W_IGP : q.metric == CATS_METRIC_DELAY ?
				    CATS_TE_W_DELAY : CATS_TE_W_TE];
				spf_w(te, q.src, w, dist, np, pe);
				if (dist[q.dst] == UINT64_MAX ? r.status !=
				    CATS_CSPF_NO_PATH : (r.nodes == NULL ||
				    r.cost != dist[q.dst]))
					why = "unconstrained cost differs from "
					    "Dijkstra";
			}
			if (why != NULL && bad++ == 0)
				snprintf(first, sizeof(first), "case %d: %s", k,
				    why);
		}
		T_OK(bad == 0 && ok > 30, "%s: %d requests, %d paths (%d exact "
		    "searches), all replay and check %s", files[i], n, ok,
		    exact, first);
		free(dist);
		free(np);
		free(pe);
		cats_te_free(te);
	}
}

/* The synthetic generator: connected, carrier-like, deterministic. */
static void
test_synth(void)
{
	char err[300];
	struct cats_synth p = { .nodes = 3000, .seed = 7 };
	struct cats_te *te = cats_te_synth_build(&p, err, sizeof(err));
	if (!T_OK(te != NULL, "synthetic 3000 nodes (%s)", te ? "" : err))
		return;
	uint64_t *c = malloc(te->n * 8), *d = malloc(te->n * 8);
	uint32_t *h = malloc(te->n * 4), far = 0;
	bool connected = true;
	cats_cspf_tree(te, ws, 0, CATS_METRIC_HOPS, c, d, h);
	for (uint32_t v = 0; v < te->n; v++) {
		connected &= h[v] != UINT32_MAX;
		if (h[v] != UINT32_MAX && h[v] > far)
			far = h[v];
	}
	double deg = 2.0 * te->nlinks / te->n;
	T_OK(connected && far < 40 && deg > 2.0 && deg < 3.0,
	    "synthetic: connected, %u hops to the farthest node, average "
	    "degree %.2f", far, deg);
	struct cats_te *again = cats_te_synth_build(&p, err, sizeof(err));
	p.seed = 8;
	struct cats_te *other = cats_te_synth_build(&p, err, sizeof(err));
	T_OK(again && again->m == te->m && memcmp(again->dst, te->dst,
	    te->m * 4) == 0 && memcmp(again->w[CATS_TE_W_DELAY],
	    te->w[CATS_TE_W_DELAY], te->m * 4) == 0,
	    "synthetic: same seed, same network");
	T_OK(other && (other->m != te->m || memcmp(other->w[CATS_TE_W_DELAY],
	    te->w[CATS_TE_W_DELAY], te->m * 4) != 0),
	    "synthetic: another seed, another network");
	/* Paths on it replay, constrained or not. */
	int bad = 0, ok = 0;
	for (int k = 0; k < 40; k++) {
		struct cats_cspf_req q;
		cats_cspf_req_init(&q, rnd(te->n), rnd(te->n));
		q.dataplane = k % 2 ? CATS_DP_SRV6 : CATS_DP_SRMPLS;
		if (k % 3 == 0)
			q.exclude_any = 4;
		struct cats_cspf_res r;
		cats_cspf(te, ws, &q, &r);
		if (r.status == CATS_CSPF_OK) {
			ok++;
			bad += replay(te, &r, q.dataplane) != NULL;
		}
	}
	T_OK(bad == 0 && ok > 10, "synthetic: %d paths, segments replay", ok);
	free(c);
	free(d);
	free(h);
	cats_te_free(te);
	cats_te_free(again);
	cats_te_free(other);
}

/*
 * A repair's unreachable segment (a path-down's, from a router's ICMP
 * error): an adjacency SID takes its link out of the search, a transit
 * node's SID the node; the endpoint's names nothing.  On the TE database
 * of examples/demo/repair_net.bash (fwd_repair.bats, make demo).
 */
static void
test_unreachable(void)
{
	char err[600];
	bool missing;
	struct cats_te *te = cats_te_load("examples/demo/repair-topology.json",
	    NULL, 1, &missing, err, sizeof(err));
	if (!T_OK(te != NULL, "repair topology loads (%s)", te ? "" : err))
		return;
	struct cats_pce pce;
	cats_pce_init(&pce, te);
	struct cats_arena a = { 0 };
	static const struct {
		const char *unreach, *path;
		uint32_t max_hops;
	} c[] = {
		{ NULL, "IF-1 P1 P2 EF-1", 0 },
		{ "2001:db8:a1::12", "IF-1 P1 P3 P2 EF-1", 0 },
		{ "2001:db8:a1::12", "IF-1 P1 P3 P2 EF-1", 9 },
		{ "2001:db8:a2::1", "-", 0 },
		{ "2001:db8:2::1", "IF-1 P1 P2 EF-1", 0 },
		{ "2001:db8:99::1", "IF-1 P1 P2 EF-1", 0 },
	};
	for (size_t i = 0; i < CATS_ARRAY_LEN(c); i++) {
		struct cats_path_req rq;
		memset(&rq, 0, sizeof(rq));
		rq.txn = 1 + i;
		rq.headend = "IF-1";
		rq.endpoint = "EF-1";
		rq.dataplane = CATS_DP_SRV6;
		if (c[i].unreach != NULL)
			cats_ip_parse(c[i].unreach, strlen(c[i].unreach),
			    &rq.unreachable);
		if (c[i].max_hops) {
			rq.has |= UINT64_C(1) << CATS_PRQ_constraints;
			CATS_SET(&rq.constraints, CON, max_hops, c[i].max_hops);
		}
		struct cats_rec ans;
		cats_pce_answer(&pce, &rq, 5, &ans, &a);
		const struct cats_path_rep *x = &ans.u.prep;
		char got[128] = "-";
		size_t o = 0;
		for (size_t k = 0; x->status == CATS_PATH_OK &&
		    k < x->path.n; k++)
			o += (size_t)snprintf(got + o, sizeof(got) - o, "%s%s",
			    k ? " " : "", x->path.v[k]);
		T_OK(strcmp(got, c[i].path) == 0, "unreachable %s%s: %s (%s)",
		    c[i].unreach ? c[i].unreach : "none", c[i].max_hops ?
		    " with constraints" : "", c[i].path, got);
	}
	cats_arena_free(&a);
	cats_pce_free(&pce);	/* and te, which it took over */
}

int
main(int argc, char **argv)
{
	char err[600];
	bool missing;
	struct lab L;
	if (argc > 1)
		rng = strtoull(argv[1], NULL, 0);
	ws = cats_cspf_ws_new();
	L.te = cats_te_load(LAB, NULL, 1, &missing, err, sizeof(err));
	if (!T_OK(L.te != NULL, "lab loads (%s)", L.te ? "" : err))
		return t_done();
	test_lab_constraints(&L);
	test_lab_failures(&L);
	test_lab_updates(&L);
	test_nst(&L);
	cats_te_free(L.te);
	test_brute(100, 8, true);
	test_brute(150, 8, false);
	test_dp(150);
	test_dominance();
	test_synth();
	test_real();
	test_unreachable();
	cats_cspf_ws_free(ws);
	return t_done();
}
