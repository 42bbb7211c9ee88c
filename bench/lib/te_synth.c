/*
 * te_synth.c - synthetic carrier-like topologies (te_synth.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "te_synth.h"

#define SYNTH_MAX 1032575u	/* node labels stay below 2^20 */
#define PLANE_W 4000.0		/* km */
#define PLANE_H 2500.0

struct gen {
	uint64_t s;
	uint32_t n;
	float *x, *y;
	uint32_t *adj;		/* adjacencies handed out per node */
	uint32_t nlinks;
	const struct cats_synth_cbs *cbs;
	void *arg;
};

static uint64_t
next(struct gen *g)
{
	return cats_rand_next(&g->s);
}

static double
unif(struct gen *g)
{
	return (double)(next(g) >> 11) / 9007199254740992.0;
}

static uint32_t
below(struct gen *g, uint32_t n)
{
	return (uint32_t)(next(g) % n);
}

static void
locator(uint32_t i, struct cats_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	ip->af = 6;
	ip->a[0] = 0xfc;
	ip->a[2] = (uint8_t)(i >> 24);
	ip->a[3] = (uint8_t)(i >> 16);
	ip->a[4] = (uint8_t)(i >> 8);
	ip->a[5] = (uint8_t)i;
}

static double
dist(const struct gen *g, uint32_t a, uint32_t b)
{
	double dx = g->x[a] - g->x[b], dy = g->y[a] - g->y[b];
	return sqrt(dx * dx + dy * dy);
}

enum { K_CORE, K_UPLINK, K_ACCESS, K_RING };

/* One link both ways between a and b, of a kind. */
static int
mklink(struct gen *g, uint32_t a, uint32_t b, int kind, uint32_t srlg)
{
	char id[16], sa[16], sb[16];
	struct cats_te_link_spec l;
	memset(&l, 0, sizeof(l));
	snprintf(id, sizeof(id), "l%u", g->nlinks++);
	snprintf(sa, sizeof(sa), "n%u", a);
	snprintf(sb, sizeof(sb), "n%u", b);
	l.id = id;
	l.src = sa;
	l.dst = sb;
	double km = dist(g, a, b);
	uint64_t bw;
	switch (kind) {
	case K_CORE:
		bw = unif(g) < 0.3 ? UINT64_C(400000000000) :
		    UINT64_C(100000000000);
		break;
	case K_UPLINK:
		bw = UINT64_C(100000000000);
		break;
	case K_ACCESS:
		bw = UINT64_C(10000000000);
		break;
	default:
		bw = unif(g) < 0.5 ? UINT64_C(1000000000) :
		    UINT64_C(10000000000);
		break;
	}
	uint32_t delay = 10 + (uint32_t)ceil(5.0 * 1.2 * km);
	l.admin_groups = (km > 500 ? 1u : 0) | (kind == K_CORE ? 2u : 0) |
	    (unif(g) < 0.3 ? 4u : 0) | (unif(g) < 0.2 ? 8u : 0);
	uint32_t srl = srlg;
	if (srlg) {
		l.srlgs = &srl;
		l.nsrlgs = 1;
	}
	struct cats_te_dir *d[2] = { &l.fwd, &l.rev };
	uint32_t ends[2] = { a, b };
	for (int i = 0; i < 2; i++) {
		uint32_t k = g->adj[ends[i]]++;
		d[i]->delay_us = delay;
		d[i]->igp = (uint32_t)(UINT64_C(1000000000000) / bw) + delay / 100;
		d[i]->te = delay / 10 ? delay / 10 : 1;
		d[i]->max_bw = bw;
		d[i]->avail_bw = (uint64_t)((double)bw * (0.05 + 0.9 * unif(g)));
		d[i]->adj_label = 16001 + g->n + k;
		locator(ends[i], &d[i]->adj_sid);
		uint32_t fn = UINT32_C(0xe0000000) + k;
		for (int q = 0; q < 4; q++)
			d[i]->adj_sid.a[12 + q] = (uint8_t)(fn >> (24 - 8 * q));
	}
	return g->cbs->link(&l, g->arg);
}

int
cats_te_synth(const struct cats_synth *p, const struct cats_synth_cbs *cbs,
    void *arg)
{
	uint32_t n = p->nodes;
	if (n < 16 || n > SYNTH_MAX)
		return -1;
	struct gen g = { .s = p->seed ^ UINT64_C(0x5eed), .n = n, .cbs = cbs,
		.arg = arg };
	uint32_t M = (uint32_t)lround(sqrt((double)n) / 2);
	if (M < 2)
		M = 2;
	if (M > n / 8)
		M = n / 8;
	uint32_t C = 2 * M, A = n / 20;
	if (A < M)
		A = M;
	if (C + A > n)
		A = n - C;
	uint32_t X = n - C - A;		/* access routers */
	g.x = calloc(n, sizeof(float));
	g.y = calloc(n, sizeof(float));
	g.adj = calloc(n, sizeof(uint32_t));
	double *mx = calloc(M, sizeof(double)), *my = calloc(M, sizeof(double));
	double *mw = calloc(M, sizeof(double));
	uint32_t *na = calloc(M, sizeof(uint32_t)), *nx = calloc(M,
	    sizeof(uint32_t)), *a0 = calloc(M, sizeof(uint32_t)),
	    *x0 = calloc(M, sizeof(uint32_t));
	uint8_t *pair = calloc((size_t)M * M / 8 + 1, 1);
	int rc = -1;
	if (!g.x || !g.y || !g.adj || !mx || !my || !mw || !na || !nx ||
	    !a0 || !x0 || !pair)
		goto out;
	/* Metros, Zipf-like sizes: aggregation and access split by size. */
	double wsum = 0;
	for (uint32_t m = 0; m < M; m++) {
		mx[m] = unif(&g) * PLANE_W;
		my[m] = unif(&g) * PLANE_H;
		mw[m] = 1.0 / pow(m + 1.0, 0.8);
		wsum += mw[m];
	}
	uint32_t given = 0, xgiven = 0;
	for (uint32_t m = 0; m < M; m++) {
		na[m] = 1 + (uint32_t)((double)(A - M) * mw[m] / wsum);
		nx[m] = (uint32_t)((double)X * mw[m] / wsum);
		given += na[m];
		xgiven += nx[m];
	}
	for (uint32_t m = 0; given < A; m = (m + 1) % M, given++)
		na[m]++;
	for (uint32_t m = 0; xgiven < X; m = (m + 1) % M, xgiven++)
		nx[m]++;
	/* Node numbers: cores 0..C-1 (2m, 2m+1), then aggregation, access,
	 * metro by metro. */
	uint32_t at = C;
	for (uint32_t m = 0; m < M; m++) {
		a0[m] = at;
		at += na[m];
	}
	for (uint32_t m = 0; m < M; m++) {
		x0[m] = at;
		at += nx[m];
	}
	double rad = 20.0;
	for (uint32_t m = 0; m < M; m++) {
		for (int c = 0; c < 2; c++) {
			g.x[2 * m + c] = (float)(mx[m] + unif(&g) * 4 - 2);
			g.y[2 * m + c] = (float)(my[m] + unif(&g) * 4 - 2);
		}
		double r = rad * sqrt(mw[m] * M / wsum + 0.2);
		for (uint32_t i = 0; i < na[m]; i++) {
			double t = unif(&g) * 2 * M_PI, d = r * sqrt(unif(&g));
			g.x[a0[m] + i] = (float)(mx[m] + d * cos(t));
			g.y[a0[m] + i] = (float)(my[m] + d * sin(t));
		}
		for (uint32_t i = 0; i < nx[m]; i++) {
			/* Near the aggregation router of its ring. */
			uint32_t agg = a0[m] + (i / 7) % na[m];
			g.x[x0[m] + i] = g.x[agg] + (float)(unif(&g) * 16 - 8);
			g.y[x0[m] + i] = g.y[agg] + (float)(unif(&g) * 16 - 8);
		}
	}
	for (uint32_t v = 0; v < n; v++) {
		struct cats_te_node_spec s;
		char id[16];
		memset(&s, 0, sizeof(s));
		snprintf(id, sizeof(id), "n%u", v);
		s.id = id;
		s.label = 16000 + v;
		locator(v, &s.srv6_locator);
		s.srv6_plen = 48;
		s.srv6_sid = s.srv6_locator;
		s.srv6_sid.a[15] = 1;
		s.router_id.af = 4;
		s.router_id.a[0] = 10;
		s.router_id.a[1] = (uint8_t)((v + 1) >> 16);
		s.router_id.a[2] = (uint8_t)((v + 1) >> 8);
		s.router_id.a[3] = (uint8_t)(v + 1);
		s.msd = 10;
		if ((rc = cbs->node(&s, arg)) < 0)
			goto out;
	}
	/* Core: the two routers of a metro, then each metro to its three
	 * nearest and along a spanning tree (Prim), on both planes. */
	for (uint32_t m = 0; m < M; m++)
		if ((rc = mklink(&g, 2 * m, 2 * m + 1, K_CORE, 0)) < 0)
			goto out;
#define PAIR(a, b) (((size_t)(a) * M + (b)))
	for (uint32_t m = 0; m < M; m++) {
		uint32_t best[3] = { UINT32_MAX, UINT32_MAX, UINT32_MAX };
		double bd[3] = { 1e18, 1e18, 1e18 };
		for (uint32_t o = 0; o < M; o++) {
			if (o == m)
				continue;
			double d = hypot(mx[m] - mx[o], my[m] - my[o]);
			for (int k = 0; k < 3; k++)
				if (d < bd[k]) {
					for (int j = 2; j > k; j--) {
						bd[j] = bd[j - 1];
						best[j] = best[j - 1];
					}
					bd[k] = d;
					best[k] = o;
					break;
				}
		}
		for (int k = 0; k < 3; k++) {
			if (best[k] == UINT32_MAX)
				continue;
			uint32_t a = m < best[k] ? m : best[k];
			uint32_t b = m < best[k] ? best[k] : m;
			pair[PAIR(a, b) / 8] |= (uint8_t)(1u << (PAIR(a, b) % 8));
		}
	}
	{
		double *key = malloc(M * sizeof(double));
		uint32_t *par = malloc(M * sizeof(uint32_t));
		uint8_t *in = calloc(M, 1);
		if (!key || !par || !in) {
			free(key);
			free(par);
			free(in);
			rc = -1;
			goto out;
		}
		for (uint32_t m = 0; m < M; m++) {
			key[m] = 1e18;
			par[m] = UINT32_MAX;
		}
		key[0] = 0;
		for (uint32_t it = 0; it < M; it++) {
			uint32_t u = UINT32_MAX;
			for (uint32_t m = 0; m < M; m++)
				if (!in[m] && (u == UINT32_MAX || key[m] < key[u]))
					u = m;
			in[u] = 1;
			if (par[u] != UINT32_MAX) {
				uint32_t a = u < par[u] ? u : par[u];
				uint32_t b = u < par[u] ? par[u] : u;
				pair[PAIR(a, b) / 8] |= (uint8_t)(1u <<
				    (PAIR(a, b) % 8));
			}
			for (uint32_t m = 0; m < M; m++) {
				double d = hypot(mx[u] - mx[m], my[u] - my[m]);
				if (!in[m] && d < key[m]) {
					key[m] = d;
					par[m] = u;
				}
			}
		}
		free(key);
		free(par);
		free(in);
	}
	uint32_t srlg = 1;
	for (uint32_t a = 0; a < M; a++)
		for (uint32_t b = a + 1; b < M; b++) {
			if (!(pair[PAIR(a, b) / 8] & (1u << (PAIR(a, b) % 8))))
				continue;
			uint32_t duct = unif(&g) < 0.5 ? srlg++ : 0;
			for (int c = 0; c < 2; c++)
				if ((rc = mklink(&g, 2 * a + c, 2 * b + c, K_CORE,
				    duct)) < 0)
					goto out;
		}
#undef PAIR
	/* Aggregation, dual-homed. */
	for (uint32_t m = 0; m < M; m++)
		for (uint32_t i = 0; i < na[m]; i++)
			for (int c = 0; c < 2; c++)
				if ((rc = mklink(&g, a0[m] + i, 2 * m + c,
				    K_UPLINK, 0)) < 0)
					goto out;
	/* Access rings between two aggregation routers of the metro. */
	for (uint32_t m = 0; m < M; m++) {
		uint32_t i = 0, ring = 0;
		while (i < nx[m]) {
			uint32_t r = 4 + below(&g, 7);
			if (r > nx[m] - i)
				r = nx[m] - i;
			uint32_t ag1 = a0[m] + ring % na[m];
			uint32_t ag2 = a0[m] + (ring + 1) % na[m];
			uint32_t duct = unif(&g) < 0.2 ? srlg++ : 0;
			uint32_t first = x0[m] + i, last = first + r - 1;
			if ((rc = mklink(&g, ag1, first, K_ACCESS, duct)) < 0)
				goto out;
			for (uint32_t k = first; k < last; k++)
				if ((rc = mklink(&g, k, k + 1, K_RING, 0)) < 0)
					goto out;
			if ((rc = mklink(&g, last, ag2, K_ACCESS, duct)) < 0)
				goto out;
			i += r;
			ring++;
		}
	}
	rc = 0;
out:
	free(g.x);
	free(g.y);
	free(g.adj);
	free(mx);
	free(my);
	free(mw);
	free(na);
	free(nx);
	free(a0);
	free(x0);
	free(pair);
	return rc;
}

struct bctx {
	struct cats_te_builder *b;
	char *err;
	size_t errlen;
};

static int
add_node(const struct cats_te_node_spec *n, void *arg)
{
	struct bctx *c = arg;
	return cats_te_add_node(c->b, n, c->err, c->errlen);
}

static int
add_link(const struct cats_te_link_spec *l, void *arg)
{
	struct bctx *c = arg;
	return cats_te_add_link(c->b, l, c->err, c->errlen);
}

struct cats_te *
cats_te_synth_build(const struct cats_synth *p, char *err, size_t errlen)
{
	static const struct cats_synth_cbs cbs = { add_node, add_link };
	struct bctx c = { cats_te_builder_new(NULL), err, errlen };
	if (c.b == NULL)
		return NULL;
	if (cats_te_synth(p, &cbs, &c) < 0) {
		if (err && errlen && err[0] == '\0')
			snprintf(err, errlen, "bad size (16..%u nodes)",
			    SYNTH_MAX);
		cats_te_builder_free(c.b);
		return NULL;
	}
	return cats_te_build(c.b, 1, err, errlen);
}
