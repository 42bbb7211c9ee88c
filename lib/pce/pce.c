/*
 * pce.c - path requests to path replies.
 */
#include <stdlib.h>
#include <string.h>

#include "base/list.h"
#include "pce/pce.h"

/* A cached answer: the computation's result with its own path arrays. */
struct pce_cent {
	uint8_t *key;
	size_t klen;
	uint64_t h;
	struct cats_cspf_res res;
	uint32_t *nodes, *edges;
	struct pce_cent *prev, *next;	/* LRU, most recent first */
};

int
cats_pce_init(struct cats_pce *p, struct cats_te *te)
{
	memset(p, 0, sizeof(*p));
	p->te = te;
	p->cache_max = CATS_PCE_CACHE_DEFAULT;
	p->ws = cats_cspf_ws_new();
	return p->ws ? 0 : -1;
}

static void
cent_free(struct pce_cent *c)
{
	free(c->key);
	free(c->nodes);
	free(c->edges);
	free(c);
}

static void
lru_unlink(struct cats_pce *p, struct pce_cent *c)
{
	CATS_LIST_REMOVE(p->lru, p->lru_tail, c, prev, next);
}

static void
lru_front(struct cats_pce *p, struct pce_cent *c)
{
	CATS_LIST_PREPEND(p->lru, p->lru_tail, c, prev, next);
}

void
cats_pce_cache_clear(struct cats_pce *p)
{
	struct pce_cent *c = p->lru;
	while (c != NULL) {
		struct pce_cent *n = c->next;
		cent_free(c);
		c = n;
	}
	p->lru = p->lru_tail = NULL;
	p->ncache = 0;
	cats_htab_free(&p->cache);
}

void
cats_pce_free(struct cats_pce *p)
{
	cats_pce_cache_clear(p);
	cats_buf_free(&p->key);
	cats_te_free(p->te);
	cats_cspf_ws_free(p->ws);
	memset(p, 0, sizeof(*p));
}

void
cats_pce_set_te(struct cats_pce *p, struct cats_te *te)
{
	cats_pce_cache_clear(p);
	cats_te_free(p->te);
	p->te = te;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The request in canonical form: exclusion lists sorted. */
static int
make_key(struct cats_buf *k, struct cats_cspf_req *q)
{
	k->len = 0;
	struct {
		uint32_t src, dst;
		int32_t metric, dataplane;
		uint64_t max_delay, min_bw, max_labels;
		uint32_t max_hops, ia, il, xa;
		uint32_t nn, nl, ns, msd;
	} h;
	memset(&h, 0, sizeof(h));
	h.src = q->src;
	h.dst = q->dst;
	h.metric = q->metric;
	h.dataplane = q->dataplane;
	h.max_delay = q->max_delay_us;
	h.min_bw = q->min_bw;
	h.max_labels = q->max_labels;
	h.max_hops = q->max_hops;
	h.ia = q->include_any;
	h.il = q->include_all;
	h.xa = q->exclude_any;
	h.nn = (uint32_t)q->n_ex_nodes;
	h.nl = (uint32_t)q->n_ex_links;
	h.ns = (uint32_t)q->n_ex_srlgs;
	h.msd = (uint32_t)q->msd;
	/* The arrays live in the request's arena: sorting them is fine. */
	if (q->n_ex_nodes)
		qsort((void *)q->ex_nodes, q->n_ex_nodes, 4, cmp_u32);
	if (q->n_ex_links)
		qsort((void *)q->ex_links, q->n_ex_links, 4, cmp_u32);
	if (q->n_ex_srlgs)
		qsort((void *)q->ex_srlgs, q->n_ex_srlgs, 4, cmp_u32);
	if (cats_buf_add(k, &h, sizeof(h)) < 0 ||
	    cats_buf_add(k, q->ex_nodes, q->n_ex_nodes * 4) < 0 ||
	    cats_buf_add(k, q->ex_links, q->n_ex_links * 4) < 0 ||
	    cats_buf_add(k, q->ex_srlgs, q->n_ex_srlgs * 4) < 0)
		return -1;
	return 0;
}

static bool
cent_eq(const void *item, const void *key)
{
	const struct pce_cent *c = item;
	const struct cats_buf *k = key;
	return c->klen == k->len && memcmp(c->key, k->p, k->len) == 0;
}

/* Remember a computed answer (best effort: a failure only skips it). */
static void
cache_put(struct cats_pce *p, uint64_t h, const struct cats_cspf_res *r)
{
	struct pce_cent *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return;
	c->h = h;
	c->klen = p->key.len;
	c->key = malloc(p->key.len);
	c->res = *r;
	if (r->nodes != NULL) {
		c->nodes = malloc((r->hops + 1) * sizeof(uint32_t));
		c->edges = malloc((r->hops + 1) * sizeof(uint32_t));
	}
	if (c->key == NULL || (r->nodes != NULL && (c->nodes == NULL ||
	    c->edges == NULL))) {
		cent_free(c);
		return;
	}
	memcpy(c->key, p->key.p, p->key.len);
	if (r->nodes != NULL) {
		memcpy(c->nodes, r->nodes, (r->hops + 1) * sizeof(uint32_t));
		memcpy(c->edges, r->edges, r->hops * sizeof(uint32_t));
		c->res.nodes = c->nodes;
		c->res.edges = c->edges;
	}
	if (cats_htab_put(&p->cache, h, c) < 0) {
		cent_free(c);
		return;
	}
	lru_front(p, c);
	if (++p->ncache > p->cache_max) {
		struct pce_cent *old = p->lru_tail;
		struct cats_buf k = { .p = old->key, .len = old->klen };
		cats_htab_del(&p->cache, old->h, cent_eq, &k);
		lru_unlink(p, old);
		cent_free(old);
		p->ncache--;
	}
}

/* Compute, or take the cached answer. */
static int
compute(struct cats_pce *p, struct cats_cspf_req *q, struct cats_cspf_res *r)
{
	const struct cats_te *te = p->te;
	if (p->cache_max == 0)
		return cats_cspf(te, p->ws, q, r);
	if (p->cache_uid != cats_te_uid(te) ||
	    p->cache_gen != cats_te_gen(te)) {
		cats_pce_cache_clear(p);
		p->cache_uid = cats_te_uid(te);
		p->cache_gen = cats_te_gen(te);
	}
	if (make_key(&p->key, q) < 0)
		return cats_cspf(te, p->ws, q, r);
	uint64_t h = cats_hash(p->key.p, p->key.len);
	struct pce_cent *c = cats_htab_get(&p->cache, h, cent_eq, &p->key);
	if (c != NULL) {
		*r = c->res;
		r->settled = r->labels = 0;
		r->exact_search = false;
		lru_unlink(p, c);
		lru_front(p, c);
		p->c.cache_hits++;
		return 0;
	}
	if (cats_cspf(te, p->ws, q, r) < 0)
		return -1;
	/* Out of budget is no property of the request: do not keep it. */
	if (r->status != CATS_CSPF_BUDGET)
		cache_put(p, h, r);
	return 0;
}

/*
 * The element a repair's unreachable segment names (cats-pce(1) REPAIRS):
 * an adjacency SID, its link; a node SID of a node that is neither the
 * headend nor the endpoint, that node; anything else, nothing (a router
 * that could not reach the endpoint says nothing of where the path broke).
 * A scan of the database's SIDs, for repair requests only.
 */
static void
unreachable_of(const struct cats_te *te, const struct cats_path_req *rq,
    const struct cats_cspf_req *q, uint32_t *node, uint32_t *link)
{
	*node = *link = CATS_TE_NONE;
	const struct cats_ip *u = &rq->unreachable;
	if (u->af != 6)
		return;
	if (te->adj6 != NULL)
		for (uint32_t e = 0; e < te->m; e++)
			if (memcmp(te->adj6[e], u->a, 16) == 0) {
				*link = te->link[e];
				return;
			}
	if (te->sid6 != NULL)
		for (uint32_t v = 0; v < te->n; v++)
			if (memcmp(te->sid6[v], u->a, 16) == 0) {
				if (v != q->src && v != q->dst)
					*node = v;
				return;
			}
}

/* A request without exclusions of its own: the unreachable segment's. */
static int
unreachable(const struct cats_te *te, const struct cats_path_req *rq,
    struct cats_cspf_req *out, struct cats_arena *arena)
{
	uint32_t v, l;
	unreachable_of(te, rq, out, &v, &l);
	if (v == CATS_TE_NONE && l == CATS_TE_NONE)
		return 0;
	uint32_t *a = cats_arena_alloc(arena, sizeof(uint32_t));
	if (a == NULL)
		return -1;
	*a = v != CATS_TE_NONE ? v : l;
	if (v != CATS_TE_NONE) {
		out->ex_nodes = a;
		out->n_ex_nodes = 1;
	} else {
		out->ex_links = a;
		out->n_ex_links = 1;
	}
	return 0;
}

int
cats_pce_request(const struct cats_te *te, const struct cats_path_req *rq,
    struct cats_cspf_req *out, struct cats_arena *arena)
{
	cats_cspf_req_init(out, cats_te_node(te, rq->headend),
	    cats_te_node(te, rq->endpoint));
	out->dataplane = rq->dataplane;
	if (CATS_HAS(rq, PRQ, msd))
		out->msd = (size_t)rq->msd;
	if (!CATS_HAS(rq, PRQ, constraints))
		return unreachable(te, rq, out, arena);
	const struct cats_constraints *k = &rq->constraints;
	if (CATS_HAS(k, CON, metric))
		out->metric = k->metric;
	if (CATS_HAS(k, CON, max_delay_us))
		out->max_delay_us = k->max_delay_us;
	if (CATS_HAS(k, CON, max_hops))
		out->max_hops = (uint32_t)k->max_hops;
	if (CATS_HAS(k, CON, min_bw))
		out->min_bw = k->min_bw;
	if (CATS_HAS(k, CON, include_any))
		out->include_any = (uint32_t)k->include_any;
	if (CATS_HAS(k, CON, include_all))
		out->include_all = (uint32_t)k->include_all;
	if (CATS_HAS(k, CON, exclude_any))
		out->exclude_any = (uint32_t)k->exclude_any;
	size_t n = k->exclude_nodes.n + k->exclude_links.n +
	    k->exclude_srlgs.n;
	if (n == 0)
		return unreachable(te, rq, out, arena);
	/* One more of each for the segment a repair avoids. */
	uint32_t *a = cats_arena_alloc(arena, (n + 2) * sizeof(uint32_t));
	if (a == NULL)
		return -1;
	uint32_t *p = a;
	uint32_t ev = CATS_TE_NONE, el = CATS_TE_NONE;
	unreachable_of(te, rq, out, &ev, &el);
	out->ex_nodes = p;
	for (size_t i = 0; i < k->exclude_nodes.n; i++) {
		uint32_t v = cats_te_node(te, k->exclude_nodes.v[i]);
		if (v != CATS_TE_NONE)
			p[out->n_ex_nodes++] = v;
	}
	if (ev != CATS_TE_NONE)
		p[out->n_ex_nodes++] = ev;
	p += out->n_ex_nodes;
	out->ex_links = p;
	for (size_t i = 0; i < k->exclude_links.n; i++) {
		uint32_t l = cats_te_link(te, k->exclude_links.v[i]);
		if (l != CATS_TE_NONE)
			p[out->n_ex_links++] = l;
	}
	if (el != CATS_TE_NONE)
		p[out->n_ex_links++] = el;
	p += out->n_ex_links;
	out->ex_srlgs = p;
	for (size_t i = 0; i < k->exclude_srlgs.n; i++)
		if (k->exclude_srlgs.v[i] <= UINT32_MAX)
			p[out->n_ex_srlgs++] = (uint32_t)k->exclude_srlgs.v[i];
	return 0;
}

/* A stable identifier of a path: FNV-1a over its directions and data
 * plane, within 53 bits, never 0. */
static uint64_t
path_id(const struct cats_te *te, const struct cats_cspf_res *r, int dp)
{
	uint64_t h = UINT64_C(14695981039346656037);
	uint32_t x[2] = { (uint32_t)dp, r->nodes ? r->nodes[0] : 0 };
	for (int k = 0; k < 2; k++)
		for (int b = 0; b < 4; b++) {
			h ^= (x[k] >> (8 * b)) & 0xff;
			h *= UINT64_C(1099511628211);
		}
	for (uint32_t i = 0; i < r->hops; i++) {
		/* Link ids and direction heads: stable across reloads of
		 * the same file, unlike direction indexes. */
		const char *s = cats_te_link_id(te, te->link[r->edges[i]]);
		const char *d = cats_te_node_id(te, te->dst[r->edges[i]]);
		for (; *s; s++) {
			h ^= (uint8_t)*s;
			h *= UINT64_C(1099511628211);
		}
		h ^= 0xff;
		h *= UINT64_C(1099511628211);
		for (; *d; d++) {
			h ^= (uint8_t)*d;
			h *= UINT64_C(1099511628211);
		}
		h ^= 0xfe;
		h *= UINT64_C(1099511628211);
	}
	h &= CATS_U53;
	return h ? h : 1;
}

static int
fill_segments(const struct cats_te *te, const struct cats_cspf_res *r, int dp,
    struct cats_path_rep *o, struct cats_arena *a)
{
	if (r->nsegs == 0)
		return 0;
	struct cats_segment *s = cats_arena_alloc(a, r->nsegs * sizeof(*s));
	if (s == NULL)
		return -1;
	memset(s, 0, r->nsegs * sizeof(*s));
	for (size_t i = 0; i < r->nsegs; i++) {
		const struct cats_cspf_seg *g = &r->segs[i];
		s[i].node = cats_te_node_id(te, g->node);
		if (g->adj) {
			s[i].kind = CATS_SEG_ADJ;
			s[i].remote = cats_te_node_id(te, te->dst[g->edge]);
			if (dp == CATS_DP_SRMPLS)
				CATS_SET(&s[i], SEG, label,
				    te->adj_label[g->edge]);
			else {
				s[i].sid.af = 6;
				memcpy(s[i].sid.a, te->adj6[g->edge], 16);
			}
		} else {
			s[i].kind = CATS_SEG_NODE;
			if (dp == CATS_DP_SRMPLS)
				CATS_SET(&s[i], SEG, label, te->label[g->node]);
			else {
				s[i].sid.af = 6;
				memcpy(s[i].sid.a, te->sid6[g->node], 16);
			}
		}
	}
	o->segments.v = s;
	o->segments.n = r->nsegs;
	return 0;
}

/* The longest path a reply can name node by node (cats-records(5)). */
#define PATH_NODES_MAX 1024
#define HOPS_MAX 4096

void
cats_pce_reply_of(const struct cats_path_req *rq, uint64_t now,
    struct cats_path_rep *o)
{
	o->txn = rq->txn;
	o->ts = now;
	o->headend = rq->headend;
	o->endpoint = rq->endpoint;
	CATS_SET(o, PRP, dataplane, rq->dataplane);
	if (CATS_HAS(rq, PRQ, decision)) {
		o->decision = rq->decision;
		o->has |= UINT64_C(1) << CATS_PRP_decision;
	}
	if (CATS_HAS(rq, PRQ, flow)) {
		o->flow = rq->flow;
		o->has |= UINT64_C(1) << CATS_PRP_flow;
	}
	o->ingress = rq->ingress;
	CATS_SET_IF(CATS_HAS(rq, PRQ, deadline), o, PRP, deadline,
	    rq->deadline);
	if (CATS_HAS(rq, PRQ, dataplanes)) {
		o->dataplanes = rq->dataplanes;
		o->has |= UINT64_C(1) << CATS_PRP_dataplanes;
	}
}

int
cats_pce_answer(struct cats_pce *p, const struct cats_path_req *rq,
    uint64_t now, struct cats_rec *rep, struct cats_arena *a)
{
	const struct cats_te *te = p->te;
	cats_rec_init(rep, CATS_T_PATH_REP);
	struct cats_path_rep *o = &rep->u.prep;
	cats_pce_reply_of(rq, now, o);
	p->c.requests++;
	CATS_SET_IF(te != NULL, o, PRP, gen, cats_te_gen(te));
	if (CATS_HAS(rq, PRQ, deadline) && rq->deadline <= now) {
		o->status = CATS_PATH_ERROR;
		o->reason = "deadline";
		p->c.expired++;
		p->c.errors++;
		return 0;
	}
	if (te == NULL) {
		o->status = CATS_PATH_ERROR;
		o->reason = "no-database";
		p->c.errors++;
		return 0;
	}
	struct cats_cspf_req q;
	if (cats_pce_request(te, rq, &q, a) < 0)
		return -1;
	q.max_labels = p->max_labels;
	struct cats_cspf_res r;
	if (compute(p, &q, &r) < 0)
		return -1;
	p->c.settled += r.settled;
	p->c.labels += r.labels;
	p->c.exact_searches += r.exact_search;
	if (r.status == CATS_CSPF_OK && r.hops > HOPS_MAX) {
		o->status = CATS_PATH_ERROR;
		o->reason = "path-too-long";
		p->c.errors++;
		return 0;
	}
	if (r.status == CATS_CSPF_OK) {
		o->status = CATS_PATH_OK;
		p->c.ok++;
	} else if (cats_cspf_status_is_nopath(r.status)) {
		o->status = CATS_PATH_NO_PATH;
		o->reason = cats_cspf_status_name(r.status);
		p->c.no_path++;
	} else {
		o->status = CATS_PATH_ERROR;
		o->reason = cats_cspf_status_name(r.status);
		p->c.errors++;
	}
	if (r.status == CATS_CSPF_NO_PATH)
		o->pruned = cats_cspf_prune_name(r.pruned);
	if (r.nodes == NULL || r.hops > HOPS_MAX)
		return 0;
	/* A path: the answer, or the path that could not be realized. */
	CATS_SET(o, PRP, cost, r.cost);
	CATS_SET(o, PRP, delay_us, r.delay_us);
	CATS_SET(o, PRP, hops, r.hops);
	if (r.hops + 1 <= PATH_NODES_MAX) {
		const char **names = cats_arena_alloc(a, (r.hops + 1) *
		    sizeof(*names));
		if (names == NULL)
			return -1;
		for (uint32_t i = 0; i <= r.hops; i++)
			names[i] = cats_te_node_id(te, r.nodes[i]);
		o->path.v = names;
		o->path.n = r.hops + 1;
	}
	if (r.status != CATS_CSPF_OK)
		return 0;
	CATS_SET(o, PRP, path_id, path_id(te, &r, rq->dataplane));
	if (te->router_id != NULL && te->router_id[q.dst].af != 0)
		o->endpoint_addr = te->router_id[q.dst];
	return fill_segments(te, &r, rq->dataplane, o, a);
}
