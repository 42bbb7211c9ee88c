/*
 * cspf.c - constrained shortest paths, the exact multi-constraint search,
 * the no-path diagnosis and segment-list compression (see cspf.h).
 */
#include <stdlib.h>
#include <string.h>

#include "pce/cspf.h"

static const char *const status_names[CATS_CSPF__N] = {
	"ok", "no-source", "no-destination", "same-node", "headend-dataplane",
	"endpoint-dataplane", "no-path", "ecmp", "sid-depth", "no-sid",
	"budget",
};

static const char *const con_names[CATS_PRUNE__N] = {
	"topology", "dataplane", "exclude_nodes", "exclude_links",
	"exclude_srlgs", "exclude_any", "include_any", "include_all", "min_bw",
	"max_hops", "max_delay",
};

/* A direction passes every link and node constraint. */
#define PASS CATS_PRUNE_MAX_HOPS
#define SETTLED UINT32_MAX
#define NONE CATS_TE_NONE
#define INF UINT64_MAX

const char *
cats_cspf_status_name(int s)
{
	return s >= 0 && s < CATS_CSPF__N ? status_names[s] : "?";
}

const char *
cats_cspf_prune_name(int c)
{
	return c >= 0 && c < CATS_PRUNE__N ? con_names[c] : "?";
}

bool
cats_cspf_status_is_nopath(int s)
{
	return s == CATS_CSPF_HEADEND_DP || s == CATS_CSPF_ENDPOINT_DP ||
	    s == CATS_CSPF_NO_PATH || s == CATS_CSPF_ECMP ||
	    s == CATS_CSPF_SID_DEPTH || s == CATS_CSPF_NO_SID;
}

void
cats_cspf_req_init(struct cats_cspf_req *r, uint32_t src, uint32_t dst)
{
	memset(r, 0, sizeof(*r));
	r->src = src;
	r->dst = dst;
	r->metric = CATS_METRIC_TE;
	r->dataplane = CATS_DP_IP;
	r->max_delay_us = INF;
	r->max_hops = UINT32_MAX;
}

/* ---- workspace ---- */

/* A per-node (or per-link) array whose entries are valid when their stamp
 * is current: resetting it is O(1). */
struct stamped {
	uint32_t *seen;
	uint32_t cur;
};

struct hent {
	uint64_t key;
	uint32_t v;
};

struct label {
	uint64_t cost, delay;
	uint32_t node, pred, edge, next;	/* next: at the same node */
	uint32_t hops;
	bool dead;
};

struct cats_cspf_ws {
	uint32_t ncap, lcap;
	struct stamped A, B, C, L, NB, LB;
	uint64_t *distA, *distB;
	uint32_t *predA, *prednA, *predB, *pos, *lhead;
	uint8_t *npath;
	struct hent *heap;
	/* label-setting */
	struct label *lab;
	size_t nlab, labcap;
	struct hent *lheap;
	size_t lhn, lhcap;
	/* the path of the last answer */
	uint32_t *pnodes, *pedges;
};

struct cats_cspf_ws *
cats_cspf_ws_new(void)
{
	return calloc(1, sizeof(struct cats_cspf_ws));
}

static void
ws_nodes_free(struct cats_cspf_ws *ws)
{
	free(ws->A.seen);
	free(ws->B.seen);
	free(ws->C.seen);
	free(ws->L.seen);
	free(ws->NB.seen);
	free(ws->distA);
	free(ws->distB);
	free(ws->predA);
	free(ws->prednA);
	free(ws->predB);
	free(ws->pos);
	free(ws->lhead);
	free(ws->npath);
	free(ws->heap);
	free(ws->pnodes);
	free(ws->pedges);
}

void
cats_cspf_ws_free(struct cats_cspf_ws *ws)
{
	if (ws == NULL)
		return;
	ws_nodes_free(ws);
	free(ws->LB.seen);
	free(ws->lab);
	free(ws->lheap);
	free(ws);
}

size_t
cats_cspf_ws_bytes(const struct cats_cspf_ws *ws)
{
	/* Per node: 5 stamps, 2 distances, 5 indexes, npath, a heap entry,
	 * the path buffers. */
	return (size_t)ws->ncap * (5 * 4 + 2 * 8 + 5 * 4 + 1 +
	    sizeof(struct hent) + 2 * 4) + (size_t)ws->lcap * 4 +
	    ws->labcap * sizeof(struct label) + ws->lhcap * sizeof(struct hent);
}

/* After ws_nodes_free: no dangling pointers, stamps start over. */
static void
ws_nodes_clear(struct cats_cspf_ws *ws)
{
	struct stamped *st[] = { &ws->A, &ws->B, &ws->C, &ws->L, &ws->NB };
	for (size_t i = 0; i < CATS_ARRAY_LEN(st); i++)
		memset(st[i], 0, sizeof(*st[i]));
	ws->distA = ws->distB = NULL;
	ws->predA = ws->prednA = ws->predB = ws->pos = ws->lhead = NULL;
	ws->pnodes = ws->pedges = NULL;
	ws->npath = NULL;
	ws->heap = NULL;
	ws->ncap = 0;
}

static int
ws_fit(struct cats_cspf_ws *ws, const struct cats_te *te)
{
	if (te->nlinks > ws->lcap) {
		free(ws->LB.seen);
		ws->lcap = te->nlinks;
		ws->LB.seen = calloc(ws->lcap, sizeof(uint32_t));
		ws->LB.cur = 0;
		if (ws->LB.seen == NULL) {
			ws->lcap = 0;
			return -1;
		}
	}
	if (te->n + 1 <= ws->ncap)
		return 0;
	ws_nodes_free(ws);
	ws_nodes_clear(ws);
	size_t n = (size_t)te->n + 1;
	ws->ncap = (uint32_t)n;
	ws->A.seen = calloc(n, 4);
	ws->B.seen = calloc(n, 4);
	ws->C.seen = calloc(n, 4);
	ws->L.seen = calloc(n, 4);
	ws->NB.seen = calloc(n, 4);
	ws->distA = malloc(n * 8);
	ws->distB = malloc(n * 8);
	ws->predA = malloc(n * 4);
	ws->prednA = malloc(n * 4);
	ws->predB = malloc(n * 4);
	ws->pos = malloc(n * 4);
	ws->lhead = malloc(n * 4);
	ws->npath = malloc(n);
	ws->heap = malloc(n * sizeof(struct hent));
	ws->pnodes = malloc(n * 4);
	ws->pedges = malloc(n * 4);
	if (!ws->A.seen || !ws->B.seen || !ws->C.seen || !ws->L.seen ||
	    !ws->NB.seen || !ws->distA || !ws->distB || !ws->predA ||
	    !ws->prednA || !ws->predB || !ws->pos ||
	    !ws->lhead || !ws->npath || !ws->heap || !ws->pnodes ||
	    !ws->pedges) {
		ws_nodes_free(ws);
		ws_nodes_clear(ws);
		return -1;
	}
	return 0;
}

static void
st_reset(struct stamped *s, size_t n)
{
	if (++s->cur == 0) {
		memset(s->seen, 0, n * sizeof(uint32_t));
		s->cur = 1;
	}
}

/* ---- binary heap of (key, v), ties broken by v (deterministic) ---- */

static inline bool
hless(const struct hent *a, const struct hent *b)
{
	return a->key < b->key || (a->key == b->key && a->v < b->v);
}

static inline void
sift_up(struct hent *h, uint32_t i, uint32_t *pos)
{
	struct hent x = h[i];
	while (i > 0) {
		uint32_t p = (i - 1) / 2;
		if (!hless(&x, &h[p]))
			break;
		h[i] = h[p];
		if (pos)
			pos[h[i].v] = i;
		i = p;
	}
	h[i] = x;
	if (pos)
		pos[x.v] = i;
}

static inline void
sift_down(struct hent *h, uint32_t n, uint32_t i, uint32_t *pos)
{
	struct hent x = h[i];
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && hless(&h[c + 1], &h[c]))
			c++;
		if (!hless(&h[c], &x))
			break;
		h[i] = h[c];
		if (pos)
			pos[h[i].v] = i;
		i = c;
	}
	h[i] = x;
	if (pos)
		pos[x.v] = i;
}

/* ---- constraints ---- */

struct filt {
	uint8_t capmask;
	bool check_caps, ban_nodes, ban_links;
	const uint32_t *srlgs;
	size_t nsrlgs;
	uint32_t exclude_any, include_any, include_all;
	uint64_t min_bw;
	const struct stamped *NB, *LB;
};

/* The first constraint direction e into (or, backward, out of) node v
 * fails, or PASS. */
static inline int
prune(const struct cats_te *te, const struct filt *f, uint32_t e, uint32_t v)
{
	if (f->check_caps && !(te->caps[v] & f->capmask))
		return CATS_PRUNE_DATAPLANE;
	if (f->ban_nodes && f->NB->seen[v] == f->NB->cur)
		return CATS_PRUNE_EXCLUDE_NODES;
	if (f->ban_links && f->LB->seen[te->link[e]] == f->LB->cur)
		return CATS_PRUNE_EXCLUDE_LINKS;
	if (f->nsrlgs) {
		for (uint32_t k = te->srlg_row[e]; k < te->srlg_row[e + 1]; k++)
			for (size_t j = 0; j < f->nsrlgs; j++)
				if (te->srlg[k] == f->srlgs[j])
					return CATS_PRUNE_EXCLUDE_SRLGS;
	}
	uint32_t ag = te->ag[e];
	if (ag & f->exclude_any)
		return CATS_PRUNE_EXCLUDE_ANY;
	if (f->include_any && !(ag & f->include_any))
		return CATS_PRUNE_INCLUDE_ANY;
	if ((ag & f->include_all) != f->include_all)
		return CATS_PRUNE_INCLUDE_ALL;
	if (te->avail_bw[e] < f->min_bw)
		return CATS_PRUNE_MIN_BW;
	return PASS;
}

static bool
filt_active(const struct filt *f)
{
	return f->check_caps || f->ban_nodes || f->ban_links || f->nsrlgs ||
	    f->exclude_any || f->include_any || f->include_all || f->min_bw;
}

static uint8_t
dp_cap(int dp)
{
	switch (dp) {
	case CATS_DP_SRMPLS:
		return CATS_TE_CAP_SRMPLS;
	case CATS_DP_SRV6:
		return CATS_TE_CAP_SRV6;
	default:
		return CATS_TE_CAP_IP;
	}
}

/* ---- Dijkstra ---- */

struct sp {
	const struct cats_te *te;
	struct cats_cspf_ws *ws;
	const struct filt *f;
	struct stamped *S;
	uint64_t *dist;
	uint32_t *pred, *predn;	/* predn may be NULL */
	uint8_t *npath;		/* count shortest paths (saturating at 2) */
	const uint32_t *w;	/* NULL: hops */
	uint64_t bound;		/* stop past this distance */
	size_t settled;
};

/*
 * One search from src: forward over out-directions, or backward over
 * in-directions (dist then is the distance to src).  Stops when target is
 * settled or the next key exceeds the bound.  Specialized by the constant
 * arguments at each call site.
 */
static inline __attribute__((always_inline)) bool
sp_core(struct sp *s, uint32_t src, uint32_t target, const bool filtered,
    const bool reverse, const bool hops, const bool count)
{
	const struct cats_te *te = s->te;
	uint32_t *seen = s->S->seen, cur, *pos = s->ws->pos;
	uint64_t *dist = s->dist;
	uint32_t *pred = s->pred, *predn = s->predn;
	const uint32_t *w = s->w;
	const uint32_t *row = reverse ? te->rrow : te->row;
	const uint32_t *nbr = reverse ? te->rsrc : te->dst;
	const uint8_t *up = te->up;
	struct hent *h = s->ws->heap;
	uint32_t hn = 1;
	size_t settled = 0;
	bool reached = false;
	st_reset(s->S, s->ws->ncap);
	cur = s->S->cur;
	seen[src] = cur;
	dist[src] = 0;
	pred[src] = NONE;
	if (predn)
		predn[src] = NONE;
	if (count)
		s->npath[src] = 1;
	h[0].key = 0;
	h[0].v = src;
	pos[src] = 0;
	while (hn > 0) {
		uint32_t u = h[0].v;
		uint64_t du = h[0].key;
		if (du > s->bound)
			break;
		if (--hn > 0) {
			h[0] = h[hn];
			sift_down(h, hn, 0, pos);
		}
		pos[u] = SETTLED;
		settled++;
		if (u == target) {
			reached = true;
			break;
		}
		for (uint32_t k = row[u], end = row[u + 1]; k < end; k++) {
			uint32_t e = reverse ? te->rin[k] : k;
			uint32_t v = nbr[k];
			if (!up[e])
				continue;
			if (filtered && prune(te, s->f, e, v) != PASS)
				continue;
			uint64_t nd = du + (hops ? 1 : w[e]);
			if (seen[v] != cur) {
				seen[v] = cur;
				dist[v] = nd;
				pred[v] = e;
				if (predn)
					predn[v] = u;
				if (count)
					s->npath[v] = s->npath[u];
				h[hn].key = nd;
				h[hn].v = v;
				sift_up(h, hn, pos);
				hn++;
			} else if (nd < dist[v]) {
				dist[v] = nd;
				pred[v] = e;
				if (predn)
					predn[v] = u;
				if (count)
					s->npath[v] = s->npath[u];
				h[pos[v]].key = nd;
				sift_up(h, pos[v], pos);
			} else if (count && nd == dist[v] && pos[v] != SETTLED) {
				unsigned c = (unsigned)s->npath[v] + s->npath[u];
				s->npath[v] = (uint8_t)(c > 2 ? 2 : c);
			}
		}
	}
	s->settled += settled;
	return reached;
}

/* The call sites, so that each loop is compiled for its case. */
static bool
sp_fwd(struct sp *s, uint32_t src, uint32_t target)
{
	return sp_core(s, src, target, false, false, false, false);
}

static bool
sp_fwd_f(struct sp *s, uint32_t src, uint32_t target)
{
	return sp_core(s, src, target, true, false, false, false);
}

static bool
sp_fwd_hops_f(struct sp *s, uint32_t src, uint32_t target)
{
	return sp_core(s, src, target, true, false, true, false);
}

static bool
sp_fwd_hops(struct sp *s, uint32_t src, uint32_t target)
{
	return sp_core(s, src, target, false, false, true, false);
}

static bool
sp_fwd_count(struct sp *s, uint32_t src, uint32_t target)
{
	return sp_core(s, src, target, false, false, false, true);
}

static bool
sp_rev_f(struct sp *s, uint32_t src)
{
	return sp_core(s, src, NONE, true, true, false, false);
}

static bool
sp_rev_hops_f(struct sp *s, uint32_t src)
{
	return sp_core(s, src, NONE, true, true, true, false);
}

static const uint32_t *
metric_w(const struct cats_te *te, int metric)
{
	switch (metric) {
	case CATS_METRIC_IGP:
		return te->w[CATS_TE_W_IGP];
	case CATS_METRIC_DELAY:
		return te->w[CATS_TE_W_DELAY];
	case CATS_METRIC_HOPS:
		return NULL;
	default:
		return te->w[CATS_TE_W_TE];
	}
}

/* ---- one computation ---- */

struct ctx {
	const struct cats_te *te;
	struct cats_cspf_ws *ws;
	const struct cats_cspf_req *rq;
	struct cats_cspf_res *res;
	struct filt f;
	bool filtered;
	const uint32_t *w;
	size_t max_labels;
};

/* Walk a path given backwards by pred edges into the answer buffers. */
static void
take_path_pred(struct ctx *c, const uint32_t *pred, const uint32_t *predn,
    uint32_t dst)
{
	const struct cats_te *te = c->te;
	uint32_t k = 0;
	for (uint32_t v = dst; pred[v] != NONE; v = predn[v])
		k++;
	uint32_t i = k;
	c->ws->pnodes[i] = dst;
	for (uint32_t v = dst; pred[v] != NONE; v = predn[v]) {
		c->ws->pedges[--i] = pred[v];
		c->ws->pnodes[i] = predn[v];
	}
	c->res->hops = k;
	(void)te;
}

/* Cost, delay and hops of the path in the answer buffers. */
static void
path_sums(struct ctx *c)
{
	const struct cats_te *te = c->te;
	uint64_t cost = 0, delay = 0;
	for (uint32_t i = 0; i < c->res->hops; i++) {
		uint32_t e = c->ws->pedges[i];
		cost += c->w ? c->w[e] : 1;
		delay += te->w[CATS_TE_W_DELAY][e];
	}
	c->res->cost = cost;
	c->res->delay_us = delay;
	c->res->nodes = c->ws->pnodes;
	c->res->edges = c->ws->pedges;
}

static bool
within_bounds(const struct ctx *c)
{
	return c->res->delay_us <= c->rq->max_delay_us &&
	    c->res->hops <= c->rq->max_hops;
}

/*
 * Widest-path search on "how many constraints (in their order) a path
 * passes": the value of a direction is the first constraint it fails, the
 * value of a path its smallest, and the endpoint's best value names the
 * constraint that removed the last path.  Buckets would do; the heap is
 * already there.
 */
static int
diagnose_filters(struct ctx *c)
{
	const struct cats_te *te = c->te;
	struct cats_cspf_ws *ws = c->ws;
	struct stamped *S = &ws->A;
	uint64_t *best = ws->distA;	/* PASS + 1 - value: smaller is better */
	uint32_t *pos = ws->pos;
	struct hent *h = ws->heap;
	uint32_t hn = 1, src = c->rq->src, dst = c->rq->dst;
	st_reset(S, ws->ncap);
	S->seen[src] = S->cur;
	best[src] = 0;
	h[0].key = 0;
	h[0].v = src;
	pos[src] = 0;
	while (hn > 0) {
		uint32_t u = h[0].v;
		uint64_t bu = h[0].key;
		if (--hn > 0) {
			h[0] = h[hn];
			sift_down(h, hn, 0, pos);
		}
		pos[u] = SETTLED;
		if (u == dst)
			break;
		for (uint32_t e = te->row[u]; e < te->row[u + 1]; e++) {
			uint32_t v = te->dst[e];
			if (!te->up[e])
				continue;
			uint64_t p = (uint64_t)(PASS + 1 - prune(te, &c->f, e, v));
			uint64_t nb = p > bu ? p : bu;
			if (S->seen[v] != S->cur) {
				S->seen[v] = S->cur;
				best[v] = nb;
				h[hn].key = nb;
				h[hn].v = v;
				sift_up(h, hn, pos);
				hn++;
			} else if (nb < best[v] && pos[v] != SETTLED) {
				best[v] = nb;
				h[pos[v]].key = nb;
				sift_up(h, pos[v], pos);
			}
		}
	}
	if (S->seen[dst] != S->cur)
		return CATS_PRUNE_TOPOLOGY;
	int k = (int)(PASS + 1 - best[dst]);
	return k >= PASS ? PASS : k;
}

/* Every link and node constraint holds: the hop limit, or the delay. */
static int
diagnose_bounds(struct ctx *c)
{
	if (c->rq->max_hops != UINT32_MAX) {
		struct sp s = { .te = c->te, .ws = c->ws, .f = &c->f,
			.S = &c->ws->A, .dist = c->ws->distA,
			.pred = c->ws->predA, .bound = INF };
		if (!sp_fwd_hops_f(&s, c->rq->src, c->rq->dst) ||
		    c->ws->distA[c->rq->dst] > c->rq->max_hops)
			return CATS_PRUNE_MAX_HOPS;
	}
	return CATS_PRUNE_MAX_DELAY;
}

static void
no_path(struct ctx *c, int pruned)
{
	c->res->status = CATS_CSPF_NO_PATH;
	c->res->pruned = pruned;
	c->res->hops = 0;
	c->res->nodes = c->res->edges = NULL;
}

/* ---- the exact search ---- */

static int
lheap_push(struct cats_cspf_ws *ws, uint64_t key, uint32_t v)
{
	if (cats_grow((void **)&ws->lheap, &ws->lhcap, ws->lhn,
	    sizeof(*ws->lheap), 4096) < 0)
		return -1;
	ws->lheap[ws->lhn].key = key;
	ws->lheap[ws->lhn].v = v;
	sift_up(ws->lheap, (uint32_t)ws->lhn, NULL);
	ws->lhn++;
	return 0;
}

static uint32_t
new_label(struct cats_cspf_ws *ws)
{
	if (cats_grow((void **)&ws->lab, &ws->labcap, ws->nlab,
	    sizeof(*ws->lab), 4096) < 0)
		return NONE;
	return (uint32_t)ws->nlab++;
}

enum { LS_FOUND, LS_NONE, LS_BUDGET, LS_NOMEM };

/*
 * Label-setting search for the minimum-cost path within max_delay and
 * max_hops (see cspf.h).  The first label settled at the endpoint wins.
 */
static int
label_search(struct ctx *c)
{
	const struct cats_te *te = c->te;
	const struct cats_cspf_req *rq = c->rq;
	struct cats_cspf_ws *ws = c->ws;
	const uint32_t *wd = te->w[CATS_TE_W_DELAY];
	bool bd = rq->max_delay_us != INF, bh = rq->max_hops != UINT32_MAX;
	uint32_t src = rq->src, dst = rq->dst;
	uint64_t D = rq->max_delay_us;
	uint32_t H = rq->max_hops;
	c->res->exact_search = true;

	/* Least delay and least hops still needed, bounded by the limits. */
	if (bd) {
		struct sp s = { .te = te, .ws = ws, .f = &c->f, .S = &ws->B,
			.dist = ws->distB, .pred = ws->predB, .w = wd,
			.bound = D };
		sp_rev_f(&s, dst);
		c->res->settled += s.settled;
		if (ws->B.seen[src] != ws->B.cur || ws->distB[src] > D)
			return LS_NONE;
	}
	if (bh) {
		uint32_t *savepred = ws->predA;
		struct sp s = { .te = te, .ws = ws, .f = &c->f, .S = &ws->C,
			.dist = ws->distA, .pred = savepred, .bound = H };
		/* distA is free here: phase one is over. */
		sp_rev_hops_f(&s, dst);
		c->res->settled += s.settled;
		if (ws->C.seen[src] != ws->C.cur || ws->distA[src] > H)
			return LS_NONE;
	}
	/* hlb(v): C stamps mark the nodes within H hops, distA holds hops. */
#define DLB(v) (ws->B.seen[v] == ws->B.cur && ws->distB[v] <= D ? \
	ws->distB[v] : INF)
#define HLB(v) (ws->C.seen[v] == ws->C.cur && ws->distA[v] <= H ? \
	ws->distA[v] : INF)

	/* The least-delay path is feasible when it meets the hop limit: an
	 * upper bound on the cost, and the answer if nothing beats it. */
	uint64_t ub = INF;
	bool incumbent = false;
	if (bd) {
		uint64_t cost = 0, h = 0;
		for (uint32_t v = src; v != dst; v = te->dst[ws->predB[v]]) {
			uint32_t e = ws->predB[v];
			cost += c->w ? c->w[e] : 1;
			h++;
		}
		if (!bh || h <= H) {
			ub = cost;
			incumbent = true;
		}
	}

	ws->nlab = 0;
	ws->lhn = 0;
	st_reset(&ws->L, ws->ncap);
	uint32_t l0 = new_label(ws);
	if (l0 == NONE)
		return LS_NOMEM;
	ws->lab[l0] = (struct label){ .node = src, .pred = NONE, .edge = NONE,
		.next = NONE };
	ws->L.seen[src] = ws->L.cur;
	ws->lhead[src] = l0;
	if (lheap_push(ws, 0, l0) < 0)
		return LS_NOMEM;
	uint32_t found = NONE;
	while (ws->lhn > 0) {
		uint32_t li = ws->lheap[0].v;
		if (--ws->lhn > 0) {
			ws->lheap[0] = ws->lheap[ws->lhn];
			sift_down(ws->lheap, (uint32_t)ws->lhn, 0, NULL);
		}
		struct label L = ws->lab[li];
		if (L.dead)
			continue;
		if (L.node == dst) {
			found = li;
			break;
		}
		c->res->settled++;
		for (uint32_t e = te->row[L.node]; e < te->row[L.node + 1];
		    e++) {
			uint32_t v = te->dst[e];
			if (!te->up[e] || v == src)
				continue;
			if (c->filtered && prune(te, &c->f, e, v) != PASS)
				continue;
			uint64_t nc = L.cost + (c->w ? c->w[e] : 1);
			uint64_t nd = L.delay + wd[e];
			uint32_t nh = L.hops + 1;
			if (nc >= ub)
				continue;
			if (bd) {
				uint64_t lb = DLB(v);
				if (lb == INF || nd + lb > D)
					continue;
			}
			if (bh) {
				uint64_t lb = HLB(v);
				if (lb == INF || nh + lb > H)
					continue;
			}
			/* Dominance at v, in the bounded dimensions. */
			bool dominated = false;
			uint32_t *link = NULL;
			if (ws->L.seen[v] != ws->L.cur) {
				ws->L.seen[v] = ws->L.cur;
				ws->lhead[v] = NONE;
			}
			link = &ws->lhead[v];
			while (*link != NONE) {
				struct label *o = &ws->lab[*link];
				if (o->cost <= nc && (!bd || o->delay <= nd) &&
				    (!bh || o->hops <= nh)) {
					dominated = true;
					break;
				}
				if (nc <= o->cost && (!bd || nd <= o->delay) &&
				    (!bh || nh <= o->hops)) {
					o->dead = true;
					*link = o->next;
					continue;
				}
				link = &o->next;
			}
			if (dominated)
				continue;
			if (ws->nlab >= c->max_labels)
				return LS_BUDGET;
			uint32_t ni = new_label(ws);
			if (ni == NONE)
				return LS_NOMEM;
			ws->lab[ni] = (struct label){ .cost = nc, .delay = nd,
				.hops = nh, .node = v, .pred = li, .edge = e,
				.next = ws->lhead[v] };
			ws->lhead[v] = ni;
			if (lheap_push(ws, nc, ni) < 0)
				return LS_NOMEM;
		}
	}
	c->res->labels = ws->nlab;
	if (found != NONE) {
		uint32_t k = ws->lab[found].hops;
		c->res->hops = k;
		uint32_t i = k;
		ws->pnodes[i] = dst;
		for (uint32_t l = found; ws->lab[l].pred != NONE;
		    l = ws->lab[l].pred) {
			ws->pedges[--i] = ws->lab[l].edge;
			ws->pnodes[i] = ws->lab[ws->lab[l].pred].node;
		}
		return LS_FOUND;
	}
	if (incumbent) {
		uint32_t k = 0;
		ws->pnodes[0] = src;
		for (uint32_t v = src; v != dst; v = te->dst[ws->predB[v]]) {
			ws->pedges[k] = ws->predB[v];
			ws->pnodes[++k] = te->dst[ws->predB[v]];
		}
		c->res->hops = k;
		return LS_FOUND;
	}
	return LS_NONE;
#undef DLB
#undef HLB
}

/* ---- segment lists ---- */

/*
 * From path position i, the farthest j such that nodes i..j of the path
 * are the unique IGP shortest path from node i to node j (i if even the
 * next hop is not).  One IGP search from node i, stopped at the first
 * failure.
 */
static uint32_t
farthest(struct ctx *c, uint32_t i)
{
	const struct cats_te *te = c->te;
	struct cats_cspf_ws *ws = c->ws;
	const uint32_t *P = ws->pnodes, *E = ws->pedges;
	const uint32_t *w = te->w[CATS_TE_W_IGP];
	uint32_t k = c->res->hops;
	uint32_t *seen = ws->A.seen, *pos = ws->pos, cur;
	uint64_t *dist = ws->distA;
	uint8_t *np = ws->npath;
	struct hent *h = ws->heap;
	uint32_t hn = 1, t = i + 1, best = i;
	uint64_t S = w[E[i]];
	st_reset(&ws->A, ws->ncap);
	cur = ws->A.cur;
	seen[P[i]] = cur;
	dist[P[i]] = 0;
	np[P[i]] = 1;
	h[0].key = 0;
	h[0].v = P[i];
	pos[P[i]] = 0;
	while (hn > 0) {
		uint32_t u = h[0].v;
		uint64_t du = h[0].key;
		if (--hn > 0) {
			h[0] = h[hn];
			sift_down(h, hn, 0, pos);
		}
		pos[u] = SETTLED;
		c->res->settled++;
		/* Path nodes settle in order along a shortest path. */
		while (t <= k && seen[P[t]] == cur && pos[P[t]] == SETTLED) {
			if (dist[P[t]] != S || np[P[t]] != 1)
				return best;
			best = t++;
			if (t <= k)
				S += w[E[t - 1]];
		}
		if (t > k || du > S)
			return best;
		for (uint32_t e = te->row[u]; e < te->row[u + 1]; e++) {
			uint32_t v = te->dst[e];
			if (!te->up[e])
				continue;
			uint64_t nd = du + w[e];
			if (seen[v] != cur) {
				seen[v] = cur;
				dist[v] = nd;
				np[v] = np[u];
				h[hn].key = nd;
				h[hn].v = v;
				sift_up(h, hn, pos);
				hn++;
			} else if (nd < dist[v]) {
				dist[v] = nd;
				np[v] = np[u];
				h[pos[v]].key = nd;
				sift_up(h, pos[v], pos);
			} else if (nd == dist[v] && pos[v] != SETTLED) {
				unsigned s2 = (unsigned)np[v] + np[u];
				np[v] = (uint8_t)(s2 > 2 ? 2 : s2);
			}
		}
	}
	return best;
}

static bool
set16(const uint8_t *a)
{
	for (int i = 0; i < 16; i++)
		if (a[i])
			return true;
	return false;
}

static bool
has_node_sid(const struct cats_te *te, uint32_t v, int dp)
{
	if (dp == CATS_DP_SRMPLS)
		return te->label[v] != 0;
	return te->sid6 != NULL && set16(te->sid6[v]);
}

static bool
has_adj_sid(const struct cats_te *te, uint32_t e, int dp)
{
	if (dp == CATS_DP_SRMPLS)
		return te->adj_label[e] != 0;
	return te->adj6 != NULL && set16(te->adj6[e]);
}

/* Compress the path into segments; sets the status on failure. */
static void
compress(struct ctx *c)
{
	const struct cats_te *te = c->te;
	struct cats_cspf_res *res = c->res;
	int dp = c->rq->dataplane;
	uint32_t k = res->hops, i = 0;
	/* Copy: farthest() reuses the workspace, not the path buffers. */
	const uint32_t *P = c->ws->pnodes, *E = c->ws->pedges;
	size_t msd = te->msd[c->rq->src];
	if (c->rq->msd > 0 && c->rq->msd < msd)
		msd = c->rq->msd;
	res->nsegs = 0;
	while (i < k) {
		uint32_t j = farthest(c, i);
		struct cats_cspf_seg sg;
		if (j > i) {
			sg.adj = false;
			sg.node = P[j];
			sg.edge = NONE;
			if (!has_node_sid(te, P[j], dp)) {
				res->status = CATS_CSPF_NO_SID;
				return;
			}
		} else {
			sg.adj = true;
			sg.node = P[i];
			sg.edge = E[i];
			j = i + 1;
			if (!has_adj_sid(te, E[i], dp)) {
				res->status = CATS_CSPF_NO_SID;
				return;
			}
		}
		if (res->nsegs >= msd) {
			res->status = CATS_CSPF_SID_DEPTH;
			return;
		}
		res->segs[res->nsegs++] = sg;
		i = j;
	}
	/* SRv6: the endpoint's own SID decapsulates. */
	if (dp == CATS_DP_SRV6 && res->nsegs > 0 &&
	    res->segs[res->nsegs - 1].adj) {
		if (!has_node_sid(te, P[k], dp)) {
			res->status = CATS_CSPF_NO_SID;
			return;
		}
		if (res->nsegs >= msd) {
			res->status = CATS_CSPF_SID_DEPTH;
			return;
		}
		res->segs[res->nsegs++] = (struct cats_cspf_seg){ .adj = false,
			.node = P[k], .edge = NONE };
	}
}

/* ip, ipip: the IGP shortest path, if unique, checked against everything. */
static int
ip_path(struct ctx *c)
{
	struct cats_cspf_ws *ws = c->ws;
	const struct cats_te *te = c->te;
	struct sp s = { .te = te, .ws = ws, .S = &ws->A, .dist = ws->distA,
		.pred = ws->predA, .predn = ws->prednA, .npath = ws->npath,
		.w = te->w[CATS_TE_W_IGP], .bound = INF };
	if (!sp_fwd_count(&s, c->rq->src, c->rq->dst)) {
		c->res->settled = s.settled;
		no_path(c, CATS_PRUNE_TOPOLOGY);
		return 0;
	}
	c->res->settled = s.settled;
	take_path_pred(c, ws->predA, ws->prednA, c->rq->dst);
	path_sums(c);
	if (ws->npath[c->rq->dst] != 1) {
		c->res->status = CATS_CSPF_ECMP;
		return 0;
	}
	int worst = PASS;
	if (c->f.ban_nodes && c->ws->NB.seen[c->rq->src] == c->ws->NB.cur)
		worst = CATS_PRUNE_EXCLUDE_NODES;
	for (uint32_t i = 0; i < c->res->hops; i++) {
		uint32_t e = ws->pedges[i];
		int p = prune(te, &c->f, e, te->dst[e]);
		if (p < worst)
			worst = p;
	}
	/* PASS is also the value of max_hops: say "broken" apart. */
	bool broken = worst != PASS;
	if (!broken && c->res->hops > c->rq->max_hops) {
		worst = CATS_PRUNE_MAX_HOPS;
		broken = true;
	} else if (!broken && c->res->delay_us > c->rq->max_delay_us) {
		worst = CATS_PRUNE_MAX_DELAY;
		broken = true;
	}
	if (broken) {
		no_path(c, worst);
		return 0;
	}
	c->res->status = CATS_CSPF_OK;
	return 0;
}

int
cats_cspf(const struct cats_te *te, struct cats_cspf_ws *ws,
    const struct cats_cspf_req *rq, struct cats_cspf_res *res)
{
	struct ctx c = { .te = te, .ws = ws, .rq = rq, .res = res };
	memset(res, 0, sizeof(*res));
	res->pruned = -1;
	if (rq->src == NONE || rq->src >= te->n) {
		res->status = CATS_CSPF_NO_SOURCE;
		return 0;
	}
	if (rq->dst == NONE || rq->dst >= te->n) {
		res->status = CATS_CSPF_NO_DEST;
		return 0;
	}
	if (rq->src == rq->dst) {
		res->status = CATS_CSPF_SAME;
		return 0;
	}
	uint8_t cap = dp_cap(rq->dataplane);
	if (!(te->caps[rq->src] & cap)) {
		res->status = CATS_CSPF_HEADEND_DP;
		return 0;
	}
	if (!(te->caps[rq->dst] & cap)) {
		res->status = CATS_CSPF_ENDPOINT_DP;
		return 0;
	}
	if (ws_fit(ws, te) < 0)
		return -1;
	c.w = metric_w(te, rq->metric);
	c.max_labels = rq->max_labels ? rq->max_labels :
	    CATS_CSPF_MAX_LABELS_DEFAULT;
	struct filt *f = &c.f;
	f->capmask = cap;
	/* Only look at node capabilities when some node lacks this one. */
	f->check_caps = !(te->allcaps & cap);
	f->NB = &ws->NB;
	f->LB = &ws->LB;
	if (rq->n_ex_nodes) {
		st_reset(&ws->NB, ws->ncap);
		for (size_t i = 0; i < rq->n_ex_nodes; i++)
			if (rq->ex_nodes[i] < te->n)
				ws->NB.seen[rq->ex_nodes[i]] = ws->NB.cur;
		f->ban_nodes = true;
	}
	bool ends_banned = f->ban_nodes &&
	    (ws->NB.seen[rq->src] == ws->NB.cur ||
	    ws->NB.seen[rq->dst] == ws->NB.cur);
	if (rq->n_ex_links) {
		st_reset(&ws->LB, ws->lcap);
		for (size_t i = 0; i < rq->n_ex_links; i++)
			if (rq->ex_links[i] < te->nlinks)
				ws->LB.seen[rq->ex_links[i]] = ws->LB.cur;
		f->ban_links = true;
	}
	f->srlgs = rq->ex_srlgs;
	f->nsrlgs = rq->n_ex_srlgs;
	f->exclude_any = rq->exclude_any;
	f->include_any = rq->include_any;
	f->include_all = rq->include_all;
	f->min_bw = rq->min_bw;
	c.filtered = filt_active(f);

	if (rq->dataplane != CATS_DP_SRMPLS && rq->dataplane != CATS_DP_SRV6)
		return ip_path(&c);
	/* An excluded headend or endpoint: no path, but name the constraint
	 * in order (no path at all, or none with the data plane, first). */
	if (ends_banned) {
		int k = diagnose_filters(&c);
		no_path(&c, k < CATS_PRUNE_EXCLUDE_NODES ? k :
		    CATS_PRUNE_EXCLUDE_NODES);
		return 0;
	}

	/* Phase one: the plain shortest path over the filtered graph. */
	struct sp s = { .te = te, .ws = ws, .f = f, .S = &ws->A,
		.dist = ws->distA, .pred = ws->predA, .predn = ws->prednA,
		.w = c.w, .bound = INF };
	bool reached;
	if (c.w == NULL)
		reached = c.filtered ? sp_fwd_hops_f(&s, rq->src, rq->dst) :
		    sp_fwd_hops(&s, rq->src, rq->dst);
	else
		reached = c.filtered ? sp_fwd_f(&s, rq->src, rq->dst) :
		    sp_fwd(&s, rq->src, rq->dst);
	res->settled = s.settled;
	if (!reached) {
		int k = diagnose_filters(&c);
		no_path(&c, k == PASS ? CATS_PRUNE_TOPOLOGY : k);
		return 0;
	}
	take_path_pred(&c, ws->predA, ws->prednA, rq->dst);
	path_sums(&c);
	if (!within_bounds(&c)) {
		bool alone = (rq->metric == CATS_METRIC_DELAY &&
		    res->delay_us > rq->max_delay_us) ||
		    (rq->metric == CATS_METRIC_HOPS && res->hops > rq->max_hops);
		int ls = alone ? LS_NONE : label_search(&c);
		if (ls == LS_NOMEM)
			return -1;
		if (ls == LS_BUDGET) {
			res->status = CATS_CSPF_BUDGET;
			res->hops = 0;
			res->nodes = res->edges = NULL;
			return 0;
		}
		if (ls == LS_NONE) {
			no_path(&c, diagnose_bounds(&c));
			return 0;
		}
		path_sums(&c);
	}
	res->status = CATS_CSPF_OK;
	if (!rq->path_only)
		compress(&c);
	return 0;
}

int
cats_cspf_tree(const struct cats_te *te, struct cats_cspf_ws *ws, uint32_t src,
    int metric, uint64_t *cost, uint64_t *delay, uint32_t *hops)
{
	if (src >= te->n)
		return -1;
	if (ws_fit(ws, te) < 0)
		return -1;
	struct sp s = { .te = te, .ws = ws, .S = &ws->A, .dist = ws->distA,
		.pred = ws->predA, .predn = ws->prednA,
		.w = metric_w(te, metric), .bound = INF };
	if (s.w == NULL)
		sp_fwd_hops(&s, src, NONE);
	else
		sp_fwd(&s, src, NONE);
	/* Parents settle before children: fill in settling order. */
	uint32_t *order = ws->pnodes, no = 0;
	for (uint32_t v = 0; v < te->n; v++) {
		cost[v] = INF;
		delay[v] = INF;
		hops[v] = UINT32_MAX;
		if (ws->A.seen[v] == ws->A.cur && ws->pos[v] == SETTLED)
			order[no++] = v;
	}
	cost[src] = 0;
	delay[src] = 0;
	hops[src] = 0;
	/* Resolve each node through its parent chain, memoized. */
	for (uint32_t i = 0; i < no; i++) {
		uint32_t v = order[i];
		if (hops[v] != UINT32_MAX)
			continue;
		/* Climb to a resolved ancestor, then come back down. */
		uint32_t *stack = ws->pedges, sn = 0;
		uint32_t x = v;
		while (hops[x] == UINT32_MAX) {
			stack[sn++] = x;
			x = ws->prednA[x];
		}
		while (sn > 0) {
			uint32_t y = stack[--sn], p = ws->prednA[y];
			uint32_t e = ws->predA[y];
			cost[y] = ws->distA[y];
			delay[y] = delay[p] + te->w[CATS_TE_W_DELAY][e];
			hops[y] = hops[p] + 1;
		}
	}
	return 0;
}
