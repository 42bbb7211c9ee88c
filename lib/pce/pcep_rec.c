/*
 * pcep_rec.c - PCEP requests and replies as path-req and path-rep records
 * (see pcep.h): the names of nodes and links, the constraints, the
 * segment lists and the mapping of cats-pce reasons onto NO-PATH.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pce/cspf.h"
#include "pce/pce.h"
#include "pce/pcep.h"

/* ---- names ---- */

struct nent {
	struct cats_ip ip;
	uint32_t v;
};

struct lent {
	uint32_t label, v;
};

/* An SRv6 SID: a node's End SID (e CATS_TE_NONE) or an adjacency's. */
struct sent {
	uint8_t sid[16];
	uint32_t v, e;
};

struct cats_pcep_names {
	const struct cats_te *te;
	struct nent *addr;	/* sorted by address */
	size_t naddr;
	struct lent *label;	/* node SID labels, sorted */
	size_t nlabel;
	uint32_t *ldir;		/* a direction of each link id */
	struct sent *sid;	/* SRv6 SIDs, sorted */
	size_t nsid;
};

static int
ip_cmp(const struct cats_ip *a, const struct cats_ip *b)
{
	if (a->af != b->af)
		return a->af < b->af ? -1 : 1;
	return memcmp(a->a, b->a, 16);
}

static int
nent_cmp(const void *x, const void *y)
{
	const struct nent *a = x, *b = y;
	int c = ip_cmp(&a->ip, &b->ip);
	return c ? c : a->v < b->v ? -1 : a->v > b->v;
}

static int
sent_cmp(const void *x, const void *y)
{
	const struct sent *a = x, *b = y;
	int c = memcmp(a->sid, b->sid, 16);
	if (c)
		return c;
	return a->e < b->e ? -1 : a->e > b->e;
}

static bool
sid_zero(const uint8_t *s)
{
	static const uint8_t z[16];
	return memcmp(s, z, 16) == 0;
}

static int
lent_cmp(const void *x, const void *y)
{
	const struct lent *a = x, *b = y;
	if (a->label != b->label)
		return a->label < b->label ? -1 : 1;
	return a->v < b->v ? -1 : a->v > b->v;
}

/* The address a node stands for: its router id, else its id when that is
 * an address. */
static bool
node_addr(const struct cats_te *te, uint32_t v, struct cats_ip *a)
{
	if (te->router_id != NULL && te->router_id[v].af != 0) {
		*a = te->router_id[v];
		return true;
	}
	const char *id = cats_te_node_id(te, v);
	memset(a, 0, sizeof(*a));
	return cats_ip_parse(id, strlen(id), a) == 0;
}

struct cats_pcep_names *
cats_pcep_names_new(const struct cats_te *te)
{
	struct cats_pcep_names *n = calloc(1, sizeof(*n));
	if (n == NULL)
		return NULL;
	n->te = te;
	uint32_t nn = cats_te_nodes(te), nl = cats_te_links(te);
	n->addr = calloc(nn ? nn : 1, sizeof(*n->addr));
	n->label = calloc(nn ? nn : 1, sizeof(*n->label));
	n->ldir = malloc((nl ? nl : 1) * sizeof(*n->ldir));
	size_t ns = (te->sid6 ? nn : 0) + (te->adj6 ? cats_te_edges(te) : 0);
	n->sid = calloc(ns ? ns : 1, sizeof(*n->sid));
	if (n->addr == NULL || n->label == NULL || n->ldir == NULL ||
	    n->sid == NULL) {
		cats_pcep_names_free(n);
		return NULL;
	}
	for (uint32_t v = 0; v < nn; v++) {
		struct cats_ip a;
		if (node_addr(te, v, &a)) {
			n->addr[n->naddr].ip = a;
			n->addr[n->naddr++].v = v;
		}
		if (te->label[v] != 0) {
			n->label[n->nlabel].label = te->label[v];
			n->label[n->nlabel++].v = v;
		}
		if (te->sid6 != NULL && !sid_zero(te->sid6[v])) {
			struct sent *x = &n->sid[n->nsid++];
			memcpy(x->sid, te->sid6[v], 16);
			x->v = v;
			x->e = CATS_TE_NONE;
		}
	}
	for (uint32_t e = 0; te->adj6 != NULL && e < cats_te_edges(te); e++)
		if (!sid_zero(te->adj6[e])) {
			struct sent *x = &n->sid[n->nsid++];
			memcpy(x->sid, te->adj6[e], 16);
			x->v = cats_te_edge_src(te, e);
			x->e = e;
		}
	qsort(n->sid, n->nsid, sizeof(*n->sid), sent_cmp);
	qsort(n->addr, n->naddr, sizeof(*n->addr), nent_cmp);
	qsort(n->label, n->nlabel, sizeof(*n->label), lent_cmp);
	for (uint32_t l = 0; l < nl; l++)
		n->ldir[l] = CATS_TE_NONE;
	for (uint32_t e = cats_te_edges(te); e-- > 0;)
		n->ldir[te->link[e]] = e;
	return n;
}

void
cats_pcep_names_free(struct cats_pcep_names *n)
{
	if (n == NULL)
		return;
	free(n->addr);
	free(n->label);
	free(n->ldir);
	free(n->sid);
	free(n);
}

uint32_t
cats_pcep_names_node(const struct cats_pcep_names *n, const struct cats_ip *a)
{
	size_t lo = 0, hi = n->naddr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ip_cmp(&n->addr[mid].ip, a) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n->naddr && ip_cmp(&n->addr[lo].ip, a) == 0)
		return n->addr[lo].v;
	return CATS_TE_NONE;
}

bool
cats_pcep_names_addr(const struct cats_pcep_names *n, uint32_t v,
    struct cats_ip *a)
{
	if (v >= cats_te_nodes(n->te))
		return false;
	return node_addr(n->te, v, a);
}

/* The node whose node SID is label, or CATS_TE_NONE. */
static uint32_t
names_label(const struct cats_pcep_names *n, uint32_t label)
{
	size_t lo = 0, hi = n->nlabel;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (n->label[mid].label < label)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n->nlabel && n->label[lo].label == label ?
	    n->label[lo].v : CATS_TE_NONE;
}

/* The SRv6 SID sid: its entry, or NULL. */
static const struct sent *
names_sid(const struct cats_pcep_names *n, const uint8_t *sid)
{
	size_t lo = 0, hi = n->nsid;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (memcmp(n->sid[mid].sid, sid, 16) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n->nsid && memcmp(n->sid[lo].sid, sid, 16) == 0 ?
	    &n->sid[lo] : NULL;
}

/* The link id index named by an unnumbered interface, or CATS_TE_NONE:
 * the interface id is 1 + the index, the router id one of its ends. */
static uint32_t
names_link(const struct cats_pcep_names *n, const struct cats_ip *rid,
    uint32_t ifid)
{
	const struct cats_te *te = n->te;
	if (ifid == 0 || ifid > cats_te_links(te))
		return CATS_TE_NONE;
	uint32_t l = ifid - 1, e = n->ldir[l];
	if (e == CATS_TE_NONE)
		return CATS_TE_NONE;
	uint32_t ends[2] = { cats_te_edge_src(te, e), te->dst[e] };
	for (int i = 0; i < 2; i++) {
		struct cats_ip a;
		if (node_addr(te, ends[i], &a) && cats_ip_eq(&a, rid))
			return l;
	}
	return CATS_TE_NONE;
}

/* ---- numbers ---- */

/* A METRIC or BANDWIDTH value as an integer: false when it is not a
 * finite number >= 0. */
static bool
f2u(float f, uint64_t max, uint64_t *out)
{
	if (!isfinite(f) || f < 0)
		return false;
	double d = floor((double)f + 0.5);
	*out = d >= (double)max ? max : (uint64_t)d;
	return true;
}

static float
u2f(uint64_t v)
{
	return (float)v;
}

static const char *
ip_text(const struct cats_ip *ip, struct cats_arena *a)
{
	char buf[64];
	const char *s = cats_ip_fmt(ip, buf, sizeof(buf));
	return s ? cats_arena_strndup(a, s, strlen(s)) : NULL;
}

/* ---- XRO subobjects: what each one excludes ---- */

enum { XK_NONE, XK_NODE, XK_LINK, XK_SRLG, XK_UNSUPP };

static bool
host_prefix(const struct cats_pcep_xsub *s)
{
	return s->plen == (s->addr.af == 4 ? 32 : 128);
}

/* The kind of exclusion s is (what it names through names; *idx the node
 * or link index, CATS_TE_NONE when it names nothing here). */
static int
xsub_kind(const struct cats_pcep_xsub *s, const struct cats_pcep_names *n,
    uint32_t *idx)
{
	*idx = CATS_TE_NONE;
	switch (s->type) {
	case CATS_PCEP_SO_IPV4:
	case CATS_PCEP_SO_IPV6:
		if (s->attr == CATS_PCEP_XA_SRLG || !host_prefix(s))
			return XK_UNSUPP;
		if (n != NULL)
			*idx = cats_pcep_names_node(n, &s->addr);
		return XK_NODE;
	case CATS_PCEP_SO_UNNUM:
		if (s->attr == CATS_PCEP_XA_NODE) {
			if (n != NULL)
				*idx = cats_pcep_names_node(n, &s->addr);
			return XK_NODE;
		}
		if (s->attr != CATS_PCEP_XA_INTERFACE)
			return XK_UNSUPP;
		if (n != NULL)
			*idx = names_link(n, &s->addr, s->ifid);
		return XK_LINK;
	case CATS_PCEP_SO_SRLG:
		return XK_SRLG;
	default:
		return XK_UNSUPP;
	}
}

/* ---- PCE side: request in ---- */

static int
pst_dataplane(const struct cats_pcep_rp *rp)
{
	if (!rp->has_pst || rp->pst == CATS_PCEP_PST_RSVP)
		return CATS_DP_IP;
	if (rp->pst == CATS_PCEP_PST_SR)
		return CATS_DP_SRMPLS;
	if (rp->pst == CATS_PCEP_PST_SRV6)
		return CATS_DP_SRV6;
	return -1;
}

static const char *
endpoint_name(const struct cats_ip *ip, const struct cats_te *te,
    const struct cats_pcep_names *n, struct cats_arena *a)
{
	uint32_t v = n ? cats_pcep_names_node(n, ip) : CATS_TE_NONE;
	if (v != CATS_TE_NONE)
		return cats_te_node_id(te, v);
	return ip_text(ip, a);
}

int
cats_pcep_to_path_req(const struct cats_pcep_req *r, const struct cats_te *te,
    const struct cats_pcep_names *names, uint64_t now,
    struct cats_path_req *out, struct cats_arena *a,
    struct cats_pcep_status *st)
{
	memset(out, 0, sizeof(*out));
	cats_pcep_st(st, CATS_PCEP_ST_OK, 0, 0, NULL);
	out->txn = r->rp.id ? r->rp.id : 1;
	out->ts = now;
	int dp = pst_dataplane(&r->rp);
	if (dp < 0) {
		cats_pcep_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_PST,
		    CATS_PCEP_EV_PST_UNSUPP, "path setup type not supported");
		return -1;
	}
	out->dataplane = dp;
	out->headend = endpoint_name(&r->ep.src, te, names, a);
	out->endpoint = endpoint_name(&r->ep.dst, te, names, a);
	if (out->headend == NULL || out->endpoint == NULL)
		goto nomem;
	struct cats_constraints *k = &out->constraints;
	const struct cats_pcep_attrs *at = &r->a;
	for (size_t i = 0; i < at->nmetrics; i++) {
		const struct cats_pcep_metric *m = &at->metrics[i];
		uint64_t v;
		if (!f2u(m->value, CATS_U53, &v)) {
			cats_pcep_st(st, CATS_PCEP_ST_PCERR,
			    CATS_PCEP_ET_INVALID, CATS_PCEP_EV_MALFORMED,
			    "METRIC value");
			return -1;
		}
		if (!m->bound) {
			int mt = m->type == CATS_PCEP_MT_IGP ? CATS_METRIC_IGP :
			    m->type == CATS_PCEP_MT_TE ? CATS_METRIC_TE :
			    m->type == CATS_PCEP_MT_HOPS ? CATS_METRIC_HOPS :
			    m->type == CATS_PCEP_MT_DELAY ? CATS_METRIC_DELAY :
			    -1;
			CATS_SET_IF(mt >= 0 && !CATS_HAS(k, CON, metric), k,
			    CON, metric, mt);
			continue;	/* other objectives: the default */
		}
		/* A bound is a hard constraint: a zero-width one included. */
		double f = floor((double)m->value);
		if (m->type == CATS_PCEP_MT_HOPS) {
			uint64_t h = f > 4096 ? 4096 : (uint64_t)f;
			CATS_SET_IF(!CATS_HAS(k, CON, max_hops) ||
			    h < k->max_hops, k, CON, max_hops, h);
		} else if (m->type == CATS_PCEP_MT_DELAY) {
			uint64_t d = f > (double)CATS_U53 ? CATS_U53 :
			    (uint64_t)f;
			if (!CATS_HAS(k, CON, max_delay_us) ||
			    d < k->max_delay_us)
				CATS_SET(k, CON, max_delay_us, d);
		} else if (m->type == CATS_PCEP_MT_SID_DEPTH && dp !=
		    CATS_DP_IP) {
			/* RFC 8664 4.5: the PCC's MSD for this request. */
			if (f < 1) {
				cats_pcep_st(st, CATS_PCEP_ST_PCERR,
				    CATS_PCEP_ET_INVALID,
				    CATS_PCEP_EV_MALFORMED,
				    "METRIC SID depth bound below 1");
				return -1;
			}
			uint64_t d = f > 255 ? 255 : (uint64_t)f;
			CATS_SET_IF(!CATS_HAS(out, PRQ, msd) || d < out->msd,
			    out, PRQ, msd, d);
		} else {
			cats_pcep_st(st, CATS_PCEP_ST_PCERR,
			    CATS_PCEP_ET_UNSUPP_OBJ, CATS_PCEP_EV_PARAM,
			    "METRIC bound of this type");
			return -1;
		}
	}
	if (at->has_bw && at->bw_type == 1) {
		uint64_t bps;
		if (!f2u(at->bw, CATS_U53 / 8, &bps)) {
			cats_pcep_st(st, CATS_PCEP_ST_PCERR,
			    CATS_PCEP_ET_INVALID, CATS_PCEP_EV_MALFORMED,
			    "BANDWIDTH value");
			return -1;
		}
		/* Bytes to bits, never below what was asked. */
		double bits = ceil((double)at->bw * 8);
		uint64_t b = bits >= (double)CATS_U53 ? CATS_U53 :
		    (uint64_t)bits;
		CATS_SET_IF(b > 0, k, CON, min_bw, b);
	}
	if (at->has_lspa) {
		CATS_SET_IF(at->lspa.exclude_any, k, CON, exclude_any,
		    at->lspa.exclude_any);
		CATS_SET_IF(at->lspa.include_any, k, CON, include_any,
		    at->lspa.include_any);
		CATS_SET_IF(at->lspa.include_all, k, CON, include_all,
		    at->lspa.include_all);
	}
	if (at->has_xro && at->xro.n > 0) {
		size_t nx = at->xro.n;
		const char **nodes = cats_arena_alloc(a, nx * sizeof(*nodes));
		const char **links = cats_arena_alloc(a, nx * sizeof(*links));
		uint64_t *srlgs = cats_arena_alloc(a, nx * sizeof(*srlgs));
		if (nodes == NULL || links == NULL || srlgs == NULL)
			goto nomem;
		for (size_t i = 0; i < nx; i++) {
			const struct cats_pcep_xsub *s = &at->xro.v[i];
			uint32_t idx;
			switch (xsub_kind(s, names, &idx)) {
			case XK_NODE:
				if (idx != CATS_TE_NONE)
					nodes[k->exclude_nodes.n++] =
					    cats_te_node_id(te, idx);
				break;
			case XK_LINK:
				if (idx != CATS_TE_NONE)
					links[k->exclude_links.n++] =
					    cats_te_link_id(te, idx);
				break;
			case XK_SRLG:
				srlgs[k->exclude_srlgs.n++] = s->srlg;
				break;
			default:
				if (!s->desirable) {
					cats_pcep_st(st, CATS_PCEP_ST_PCERR,
					    CATS_PCEP_ET_UNSUPP_OBJ,
					    CATS_PCEP_EV_PARAM,
					    "XRO subobject not supported");
					return -1;
				}
				break;
			}
		}
		if (k->exclude_nodes.n)
			k->exclude_nodes.v = nodes;
		if (k->exclude_links.n)
			k->exclude_links.v = links;
		if (k->exclude_srlgs.n)
			k->exclude_srlgs.v = srlgs;
	}
	if (k->has || k->exclude_nodes.n || k->exclude_links.n ||
	    k->exclude_srlgs.n)
		out->has |= UINT64_C(1) << CATS_PRQ_constraints;
	return 0;
nomem:
	cats_pcep_st(st, CATS_PCEP_ST_NOMEM, 0, 0, "out of memory");
	return -1;
}

/* ---- PCE side: reply out ---- */

/* The direction of an adjacency segment, or CATS_TE_NONE. */
static uint32_t
seg_edge(const struct cats_te *te, const struct cats_segment *g, int dp)
{
	if (g->node == NULL || g->remote == NULL)
		return CATS_TE_NONE;
	uint32_t u = cats_te_node(te, g->node), w = cats_te_node(te, g->remote);
	if (u == CATS_TE_NONE || w == CATS_TE_NONE)
		return CATS_TE_NONE;
	for (uint32_t e = te->row[u]; e < te->row[u + 1]; e++) {
		if (te->dst[e] != w)
			continue;
		if (dp == CATS_DP_SRMPLS && CATS_HAS(g, SEG, label) &&
		    te->adj_label[e] == g->label)
			return e;
		if (dp == CATS_DP_SRV6 && te->adj6 != NULL && g->sid.af == 6 &&
		    memcmp(te->adj6[e], g->sid.a, 16) == 0)
			return e;
	}
	return CATS_TE_NONE;
}

/* The NAI of a segment: node types by the node's address, adjacencies as
 * unnumbered (IPv4, type 5) or global IPv6 with interface ids (type 6). */
static void
seg_nai(const struct cats_te *te, const struct cats_pcep_names *n,
    const struct cats_segment *g, int dp, struct cats_pcep_hop *h)
{
	if (n == NULL || g->node == NULL)
		return;
	uint32_t u = cats_te_node(te, g->node);
	if (u == CATS_TE_NONE || !cats_pcep_names_addr(n, u, &h->local))
		return;
	if (g->kind == CATS_SEG_NODE) {
		if (h->local.af == 4 && dp == CATS_DP_SRMPLS)
			h->nt = CATS_PCEP_NAI_IPV4_NODE;
		else if (h->local.af == 6)
			h->nt = CATS_PCEP_NAI_IPV6_NODE;
		else
			return;
		h->has_nai = true;
		return;
	}
	uint32_t e = seg_edge(te, g, dp);
	if (e == CATS_TE_NONE || !cats_pcep_names_addr(n, te->dst[e],
	    &h->remote) || h->remote.af != h->local.af)
		return;
	h->local_if = h->remote_if = te->link[e] + 1;
	if (h->local.af == 4 && dp == CATS_DP_SRMPLS)
		h->nt = CATS_PCEP_NAI_UNNUM_ADJ;
	else if (h->local.af == 6)
		h->nt = CATS_PCEP_NAI_IPV6_LL_ADJ;
	else
		return;
	h->has_nai = true;
}

/* The request's objective metric type (TE when none). */
static uint8_t
objective(const struct cats_pcep_attrs *at)
{
	for (size_t i = 0; i < at->nmetrics; i++) {
		uint8_t t = at->metrics[i].type;
		if (!at->metrics[i].bound && (t == CATS_PCEP_MT_IGP ||
		    t == CATS_PCEP_MT_TE || t == CATS_PCEP_MT_HOPS ||
		    t == CATS_PCEP_MT_DELAY))
			return t;
	}
	return CATS_PCEP_MT_TE;
}

static const struct cats_pcep_metric *
find_bound(const struct cats_pcep_attrs *at, uint8_t type)
{
	for (size_t i = 0; i < at->nmetrics; i++)
		if (at->metrics[i].bound && at->metrics[i].type == type)
			return &at->metrics[i];
	return NULL;
}

static int
ok_reply(const struct cats_path_rep *rep, const struct cats_pcep_req *r,
    const struct cats_te *te, const struct cats_pcep_names *n,
    struct cats_pcep_rep *o, struct cats_arena *a)
{
	int dp = rep->dataplane;
	size_t nh = dp == CATS_DP_SRMPLS || dp == CATS_DP_SRV6 ?
	    rep->segments.n : rep->path.n;
	o->has_ero = true;
	if (nh > 0) {
		o->ero = cats_arena_alloc(a, nh * sizeof(*o->ero));
		if (o->ero == NULL)
			return -1;
		memset(o->ero, 0, nh * sizeof(*o->ero));
	}
	if (dp == CATS_DP_SRMPLS || dp == CATS_DP_SRV6) {
		for (size_t i = 0; i < nh; i++) {
			const struct cats_segment *g = &rep->segments.v[i];
			struct cats_pcep_hop *h = &o->ero[o->nero++];
			if (dp == CATS_DP_SRMPLS) {
				h->type = CATS_PCEP_SO_SR;
				h->flags = CATS_PCEP_SR_M;
				h->has_sid = CATS_HAS(g, SEG, label);
				h->sid = (uint32_t)g->label << 12;
			} else {
				h->type = CATS_PCEP_SO_SRV6;
				h->has_sid = g->sid.af == 6;
				memcpy(h->sid6, g->sid.a, 16);
				h->behavior = g->kind == CATS_SEG_ADJ ? 5 : 1;
			}
			seg_nai(te, n, g, dp, h);
		}
	} else {
		/* ip, ipip: the path's nodes by their addresses, strict;
		 * after a node with no address the next hop is loose. */
		bool gap = false;
		for (size_t i = 0; i < nh; i++) {
			uint32_t v = cats_te_node(te, rep->path.v[i]);
			struct cats_pcep_hop *h = &o->ero[o->nero];
			if (n == NULL || v == CATS_TE_NONE ||
			    !cats_pcep_names_addr(n, v, &h->local)) {
				gap = true;
				continue;
			}
			h->type = h->local.af == 4 ? CATS_PCEP_SO_IPV4 :
			    CATS_PCEP_SO_IPV6;
			h->plen = h->local.af == 4 ? 32 : 128;
			h->has_nai = true;
			h->loose = gap;
			gap = false;
			o->nero++;
		}
	}
	uint8_t obj = objective(&r->a);
	struct cats_pcep_metric *m = cats_arena_alloc(a, 3 * sizeof(*m));
	if (m == NULL)
		return -1;
	memset(m, 0, 3 * sizeof(*m));
	o->a.metrics = m;
	if (CATS_HAS(rep, PRP, cost)) {
		m[o->a.nmetrics].type = obj;
		m[o->a.nmetrics++].value = u2f(rep->cost);
	}
	if (CATS_HAS(rep, PRP, hops) && obj != CATS_PCEP_MT_HOPS) {
		m[o->a.nmetrics].type = CATS_PCEP_MT_HOPS;
		m[o->a.nmetrics++].value = u2f(rep->hops);
	}
	if (CATS_HAS(rep, PRP, delay_us) && obj != CATS_PCEP_MT_DELAY) {
		m[o->a.nmetrics].type = CATS_PCEP_MT_DELAY;
		m[o->a.nmetrics++].value = u2f(rep->delay_us);
	}
	return 0;
}

static bool
streq(const char *a, const char *b)
{
	return a != NULL && strcmp(a, b) == 0;
}

/* The unmet constraint `pruned` as the request's objects. */
static int
unmet(const char *pruned, const struct cats_pcep_req *r,
    const struct cats_pcep_names *n, struct cats_pcep_rep *o,
    struct cats_arena *a)
{
	const struct cats_pcep_attrs *q = &r->a;
	struct cats_pcep_attrs *at = &o->a;
	int kind = streq(pruned, "exclude_nodes") ? XK_NODE :
	    streq(pruned, "exclude_links") ? XK_LINK :
	    streq(pruned, "exclude_srlgs") ? XK_SRLG : XK_NONE;
	if (kind != XK_NONE && q->has_xro) {
		at->xro.v = cats_arena_alloc(a, (q->xro.n ? q->xro.n : 1) *
		    sizeof(*at->xro.v));
		if (at->xro.v == NULL)
			return -1;
		for (size_t i = 0; i < q->xro.n; i++) {
			uint32_t idx;
			if (xsub_kind(&q->xro.v[i], n, &idx) == kind)
				at->xro.v[at->xro.n++] = q->xro.v[i];
		}
		at->has_xro = true;
		return 0;
	}
	if (q->has_lspa && (streq(pruned, "exclude_any") ||
	    streq(pruned, "include_any") || streq(pruned, "include_all"))) {
		at->has_lspa = true;
		at->lspa.setup = q->lspa.setup;
		at->lspa.hold = q->lspa.hold;
		if (streq(pruned, "exclude_any"))
			at->lspa.exclude_any = q->lspa.exclude_any;
		else if (streq(pruned, "include_any"))
			at->lspa.include_any = q->lspa.include_any;
		else
			at->lspa.include_all = q->lspa.include_all;
		return 0;
	}
	if (streq(pruned, "min_bw") && q->has_bw) {
		at->has_bw = true;
		at->bw_type = q->bw_type;
		at->bw = q->bw;
		return 0;
	}
	uint8_t mt = streq(pruned, "max_hops") ? CATS_PCEP_MT_HOPS :
	    streq(pruned, "max_delay") ? CATS_PCEP_MT_DELAY : 0;
	const struct cats_pcep_metric *b = mt ? find_bound(q, mt) : NULL;
	if (b != NULL) {
		at->metrics = cats_arena_memdup(a, b, sizeof(*b));
		if (at->metrics == NULL)
			return -1;
		at->nmetrics = 1;
	}
	return 0;
}

int
cats_pcep_from_path_rep(const struct cats_path_rep *rep,
    const struct cats_pcep_req *r, const struct cats_te *te,
    const struct cats_pcep_names *n, struct cats_pcep_rep *o,
    struct cats_arena *a)
{
	memset(o, 0, sizeof(*o));
	o->rp = r->rp;
	o->rp.p = true;
	if (rep->status == CATS_PATH_OK)
		return ok_reply(rep, r, te, n, o, a);
	o->nopath = true;
	o->ni = 0;
	const char *why = rep->reason;
	if (streq(why, "no-source"))
		o->vector = CATS_PCEP_NPV_UNKNOWN_SRC;
	else if (streq(why, "no-destination"))
		o->vector = CATS_PCEP_NPV_UNKNOWN_DST;
	else if (streq(why, "no-path") && (rep->pruned == NULL ||
	    streq(rep->pruned, "topology")))
		;
	else if (streq(why, "same-node"))
		;
	else if (streq(why, "no-path")) {
		o->nopath_c = true;
		if (!streq(rep->pruned, "dataplane"))
			return unmet(rep->pruned, r, n, o, a);
	} else if (streq(why, "headend-dataplane") ||
	    streq(why, "endpoint-dataplane") || streq(why, "ecmp") ||
	    streq(why, "no-sid"))
		o->nopath_c = true;
	else if (streq(why, "sid-depth")) {
		o->nopath_c = true;
		uint32_t msd = CATS_TE_MSD_DEFAULT;
		uint32_t v = rep->headend ? cats_te_node(te, rep->headend) :
		    CATS_TE_NONE;
		if (v != CATS_TE_NONE && te->msd[v])
			msd = te->msd[v];
		/* The request's own SID depth bound, when lower. */
		const struct cats_pcep_metric *b = find_bound(&r->a,
		    CATS_PCEP_MT_SID_DEPTH);
		if (b != NULL && b->value >= 1 && b->value < (float)msd)
			msd = (uint32_t)b->value;
		struct cats_pcep_metric *m = cats_arena_alloc(a, sizeof(*m));
		if (m == NULL)
			return -1;
		memset(m, 0, sizeof(*m));
		m->type = CATS_PCEP_MT_SID_DEPTH;
		m->bound = true;
		m->value = (float)msd;
		o->a.metrics = m;
		o->a.nmetrics = 1;
	} else
		o->vector = CATS_PCEP_NPV_PCE_UNAVAILABLE;
	return 0;
}

/* ---- PCC side: request out ---- */

/* The address of a node id: through names, else the id itself. */
static bool
name_addr(const char *id, const struct cats_te *te,
    const struct cats_pcep_names *n, struct cats_ip *ip)
{
	uint32_t v = te != NULL && id != NULL ? cats_te_node(te, id) :
	    CATS_TE_NONE;
	if (v != CATS_TE_NONE && n != NULL)
		return cats_pcep_names_addr(n, v, ip);
	memset(ip, 0, sizeof(*ip));
	return id != NULL && cats_ip_parse(id, strlen(id), ip) == 0;
}

static uint8_t
metric_type(int m)
{
	switch (m) {
	case CATS_METRIC_IGP:
		return CATS_PCEP_MT_IGP;
	case CATS_METRIC_HOPS:
		return CATS_PCEP_MT_HOPS;
	case CATS_METRIC_DELAY:
		return CATS_PCEP_MT_DELAY;
	default:
		return CATS_PCEP_MT_TE;
	}
}

int
cats_pcep_from_path_req(const struct cats_path_req *rq, uint32_t id,
    const struct cats_te *te, const struct cats_pcep_names *n,
    struct cats_pcep_req *o, struct cats_arena *a,
    struct cats_pcep_status *st)
{
	memset(o, 0, sizeof(*o));
	cats_pcep_st(st, CATS_PCEP_ST_OK, 0, 0, NULL);
	o->rp.id = id;
	o->rp.p = true;
	if (rq->dataplane == CATS_DP_SRMPLS || rq->dataplane == CATS_DP_SRV6) {
		o->rp.has_pst = true;
		o->rp.pst = rq->dataplane == CATS_DP_SRMPLS ? CATS_PCEP_PST_SR :
		    CATS_PCEP_PST_SRV6;
	}
	/* A node with no address cannot be asked for: the PCC answers
	 * itself, with the reason cats-pce would give. */
	if (!name_addr(rq->headend, te, n, &o->ep.src)) {
		cats_pcep_st(st, CATS_PCEP_ST_PCERR, 0, 0, "no-source");
		return -1;
	}
	if (!name_addr(rq->endpoint, te, n, &o->ep.dst)) {
		cats_pcep_st(st, CATS_PCEP_ST_PCERR, 0, 0, "no-destination");
		return -1;
	}
	if (o->ep.src.af != o->ep.dst.af) {
		cats_pcep_st(st, CATS_PCEP_ST_PCERR, 0, 0,
		    "headend and endpoint addresses of different families");
		return -1;
	}
	o->has_ep = true;
	const struct cats_constraints *k = &rq->constraints;
	bool has = CATS_HAS(rq, PRQ, constraints);
	struct cats_pcep_attrs *at = &o->a;
	at->metrics = cats_arena_alloc(a, 4 * sizeof(*at->metrics));
	if (at->metrics == NULL)
		goto nomem;
	memset(at->metrics, 0, 4 * sizeof(*at->metrics));
	struct cats_pcep_metric *m = at->metrics;
	m[at->nmetrics].type = metric_type(has && CATS_HAS(k, CON, metric) ?
	    k->metric : CATS_METRIC_TE);
	m[at->nmetrics++].computed = true;
	if (CATS_HAS(rq, PRQ, msd) && o->rp.has_pst) {
		/* The headend's MSD as the request's SID depth bound. */
		m[at->nmetrics].type = CATS_PCEP_MT_SID_DEPTH;
		m[at->nmetrics].bound = true;
		m[at->nmetrics++].value = u2f(rq->msd);
	}
	if (!has)
		return 0;
	if (CATS_HAS(k, CON, max_hops)) {
		m[at->nmetrics].type = CATS_PCEP_MT_HOPS;
		m[at->nmetrics].bound = true;
		m[at->nmetrics++].value = u2f(k->max_hops);
	}
	if (CATS_HAS(k, CON, max_delay_us)) {
		m[at->nmetrics].type = CATS_PCEP_MT_DELAY;
		m[at->nmetrics].bound = true;
		m[at->nmetrics++].value = u2f(k->max_delay_us);
	}
	if (CATS_HAS(k, CON, min_bw) && k->min_bw > 0) {
		at->has_bw = true;
		at->bw_type = 1;
		at->bw = (float)((double)k->min_bw / 8);
	}
	if (CATS_HAS(k, CON, include_any) || CATS_HAS(k, CON, include_all) ||
	    CATS_HAS(k, CON, exclude_any)) {
		at->has_lspa = true;
		at->lspa.setup = at->lspa.hold = 7;
		at->lspa.include_any = CATS_HAS(k, CON, include_any) ?
		    (uint32_t)k->include_any : 0;
		at->lspa.include_all = CATS_HAS(k, CON, include_all) ?
		    (uint32_t)k->include_all : 0;
		at->lspa.exclude_any = CATS_HAS(k, CON, exclude_any) ?
		    (uint32_t)k->exclude_any : 0;
	}
	size_t nx = k->exclude_nodes.n + k->exclude_links.n +
	    k->exclude_srlgs.n;
	if (nx == 0)
		return 0;
	struct cats_pcep_xsub *x = cats_arena_alloc(a, nx * sizeof(*x));
	if (x == NULL)
		goto nomem;
	memset(x, 0, nx * sizeof(*x));
	at->xro.v = x;
	for (size_t i = 0; i < k->exclude_nodes.n; i++) {
		struct cats_pcep_xsub *s = &x[at->xro.n];
		uint32_t v = te ? cats_te_node(te, k->exclude_nodes.v[i]) :
		    CATS_TE_NONE;
		if (te != NULL && v == CATS_TE_NONE)
			continue;	/* not in the network */
		if (!name_addr(k->exclude_nodes.v[i], te, n, &s->addr)) {
			cats_pcep_st(st, CATS_PCEP_ST_PCERR, 0, 0,
			    "an excluded node has no address");
			return -1;
		}
		s->type = s->addr.af == 4 ? CATS_PCEP_SO_IPV4 :
		    CATS_PCEP_SO_IPV6;
		s->plen = s->addr.af == 4 ? 32 : 128;
		s->attr = CATS_PCEP_XA_NODE;
		at->xro.n++;
	}
	for (size_t i = 0; i < k->exclude_links.n; i++) {
		uint32_t l = te ? cats_te_link(te, k->exclude_links.v[i]) :
		    CATS_TE_NONE;
		if (te != NULL && l == CATS_TE_NONE)
			continue;
		struct cats_pcep_xsub *s = &x[at->xro.n];
		uint32_t e = n && l != CATS_TE_NONE ? n->ldir[l] : CATS_TE_NONE;
		if (e == CATS_TE_NONE || !cats_pcep_names_addr(n,
		    cats_te_edge_src(te, e), &s->addr) || s->addr.af != 4) {
			cats_pcep_st(st, CATS_PCEP_ST_PCERR, 0, 0,
			    "an excluded link has no IPv4 router id");
			return -1;
		}
		s->type = CATS_PCEP_SO_UNNUM;
		s->attr = CATS_PCEP_XA_INTERFACE;
		s->ifid = l + 1;
		at->xro.n++;
	}
	for (size_t i = 0; i < k->exclude_srlgs.n; i++) {
		if (k->exclude_srlgs.v[i] > UINT32_MAX)
			continue;
		struct cats_pcep_xsub *s = &x[at->xro.n++];
		s->type = CATS_PCEP_SO_SRLG;
		s->attr = CATS_PCEP_XA_SRLG;
		s->srlg = (uint32_t)k->exclude_srlgs.v[i];
	}
	at->has_xro = at->xro.n > 0;
	return 0;
nomem:
	cats_pcep_st(st, CATS_PCEP_ST_NOMEM, 0, 0, "out of memory");
	return -1;
}

/* ---- PCC side: reply in ---- */

static const char *
node_name(const struct cats_te *te, const struct cats_pcep_names *n,
    const struct cats_ip *ip)
{
	if (n == NULL || te == NULL)
		return NULL;
	uint32_t v = cats_pcep_names_node(n, ip);
	return v == CATS_TE_NONE ? NULL : cats_te_node_id(te, v);
}

/* One ERO hop as a segment: 0, or -1 when it is not one. */
static int
hop_seg(const struct cats_pcep_hop *h, int dp, const struct cats_te *te,
    const struct cats_pcep_names *n, struct cats_segment *g)
{
	memset(g, 0, sizeof(*g));
	if (dp == CATS_DP_SRMPLS) {
		if (h->type != CATS_PCEP_SO_SR || !h->has_sid ||
		    !(h->flags & CATS_PCEP_SR_M))
			return -1;
		uint32_t label = h->sid >> 12;
		if (label < CATS_TE_LABEL_MIN)
			return -1;
		CATS_SET(g, SEG, label, label);
	} else {
		if (h->type != CATS_PCEP_SO_SRV6 || !h->has_sid)
			return -1;
		g->sid.af = 6;
		memcpy(g->sid.a, h->sid6, 16);
	}
	/* Kind and names: the NAI, else the SID itself (an SRv6 SID, a
	 * node SID label are global), else the endpoint behavior. */
	const struct sent *x = dp == CATS_DP_SRV6 && n != NULL ?
	    names_sid(n, h->sid6) : NULL;
	bool adj;
	if (h->has_nai)
		adj = h->nt >= CATS_PCEP_NAI_IPV4_ADJ;
	else if (x != NULL)
		adj = x->e != CATS_TE_NONE;
	else if (dp == CATS_DP_SRV6)
		adj = h->behavior >= 5 && h->behavior <= 8;
	else
		adj = n != NULL && names_label(n, g->label) == CATS_TE_NONE;
	g->kind = adj ? CATS_SEG_ADJ : CATS_SEG_NODE;
	if (h->has_nai) {
		g->node = node_name(te, n, &h->local);
		if (adj)
			g->remote = node_name(te, n, &h->remote);
	} else if (x != NULL) {
		g->node = cats_te_node_id(te, x->v);
		if (adj)
			g->remote = cats_te_node_id(te, te->dst[x->e]);
	} else if (!adj && dp == CATS_DP_SRMPLS && n != NULL) {
		uint32_t v = names_label(n, g->label);
		g->node = v == CATS_TE_NONE ? NULL : cats_te_node_id(te, v);
	}
	return 0;
}

static void
set_error(struct cats_path_rep *o, int status, const char *reason)
{
	o->status = status;
	o->reason = reason;
}

/* NO-PATH back to a status and reason (the reverse of the table). */
static void
nopath_reason(const struct cats_pcep_rep *r, struct cats_path_rep *o)
{
	const struct cats_pcep_attrs *at = &r->a;
	if (r->vector & CATS_PCEP_NPV_UNKNOWN_SRC) {
		set_error(o, CATS_PATH_ERROR, "no-source");
		return;
	}
	if (r->vector & CATS_PCEP_NPV_UNKNOWN_DST) {
		set_error(o, CATS_PATH_ERROR, "no-destination");
		return;
	}
	if (r->vector & CATS_PCEP_NPV_PCE_UNAVAILABLE || r->ni != 0) {
		set_error(o, CATS_PATH_ERROR, "pce-unavailable");
		return;
	}
	set_error(o, CATS_PATH_NO_PATH, "no-path");
	if (!r->nopath_c) {
		o->pruned = "topology";
		return;
	}
	for (size_t i = 0; i < at->nmetrics; i++)
		if (at->metrics[i].type == CATS_PCEP_MT_SID_DEPTH) {
			o->reason = "sid-depth";
			return;
		}
	if (at->has_xro && at->xro.n > 0) {
		uint32_t idx;
		int k = xsub_kind(&at->xro.v[0], NULL, &idx);
		o->pruned = k == XK_LINK ? "exclude_links" : k == XK_SRLG ?
		    "exclude_srlgs" : "exclude_nodes";
	} else if (at->has_lspa)
		o->pruned = at->lspa.exclude_any ? "exclude_any" :
		    at->lspa.include_any ? "include_any" : "include_all";
	else if (at->has_bw)
		o->pruned = "min_bw";
	else if (find_bound(at, CATS_PCEP_MT_HOPS))
		o->pruned = "max_hops";
	else if (find_bound(at, CATS_PCEP_MT_DELAY))
		o->pruned = "max_delay";
	else
		o->pruned = "dataplane";
}

int
cats_pcep_to_path_rep(const struct cats_pcep_rep *r,
    const struct cats_path_req *rq, const struct cats_te *te,
    const struct cats_pcep_names *n, uint64_t now, struct cats_rec *rec,
    struct cats_arena *a)
{
	cats_rec_init(rec, CATS_T_PATH_REP);
	struct cats_path_rep *o = &rec->u.prep;
	cats_pce_reply_of(rq, now, o);
	if (CATS_HAS(rq, PRQ, deadline) && rq->deadline <= now) {
		set_error(o, CATS_PATH_ERROR, "deadline");
		return 0;
	}
	if (r->nopath) {
		nopath_reason(r, o);
		return 0;
	}
	int dp = rq->dataplane;
	if (!r->has_ero) {
		set_error(o, CATS_PATH_ERROR, "bad-reply");
		return 0;
	}
	if (dp == CATS_DP_SRMPLS || dp == CATS_DP_SRV6) {
		if (r->nero == 0 || r->nero > CATS_CSPF_MAX_SEGS) {
			set_error(o, CATS_PATH_ERROR, "bad-reply");
			return 0;
		}
		struct cats_segment *s = cats_arena_alloc(a, r->nero *
		    sizeof(*s));
		if (s == NULL)
			return -1;
		for (size_t i = 0; i < r->nero; i++)
			if (hop_seg(&r->ero[i], dp, te, n, &s[i]) < 0) {
				set_error(o, CATS_PATH_ERROR, "bad-reply");
				return 0;
			}
		o->segments.v = s;
		o->segments.n = r->nero;
	} else {
		for (size_t i = 0; i < r->nero; i++)
			if (r->ero[i].type != CATS_PCEP_SO_IPV4 &&
			    r->ero[i].type != CATS_PCEP_SO_IPV6) {
				set_error(o, CATS_PATH_ERROR, "bad-reply");
				return 0;
			}
	}
	uint8_t obj = metric_type(CATS_HAS(rq, PRQ, constraints) &&
	    CATS_HAS(&rq->constraints, CON, metric) ? rq->constraints.metric :
	    CATS_METRIC_TE);
	for (size_t i = 0; i < r->a.nmetrics; i++) {
		const struct cats_pcep_metric *m = &r->a.metrics[i];
		uint64_t v;
		if (m->bound || !f2u(m->value, CATS_U53, &v))
			continue;
		CATS_SET_IF(m->type == obj && !CATS_HAS(o, PRP, cost), o, PRP,
		    cost, v);
		CATS_SET_IF(m->type == CATS_PCEP_MT_HOPS &&
		    !CATS_HAS(o, PRP, hops), o, PRP, hops, v > 4096 ? 4096 : v);
		if (m->type == CATS_PCEP_MT_DELAY &&
		    !CATS_HAS(o, PRP, delay_us))
			CATS_SET(o, PRP, delay_us, v);
	}
	if (te != NULL && te->router_id != NULL && rq->endpoint != NULL) {
		uint32_t v = cats_te_node(te, rq->endpoint);
		if (v != CATS_TE_NONE && te->router_id[v].af != 0)
			o->endpoint_addr = te->router_id[v];
	}
	o->status = CATS_PATH_OK;
	return 0;
}

/* ---- what survives ---- */

static uint64_t
through_float(uint64_t v)
{
	uint64_t o;
	return f2u(u2f(v), CATS_U53, &o) ? o : 0;
}

void
cats_pcep_rep_project(const struct cats_path_rep *rep,
    struct cats_path_rep *o)
{
	*o = *rep;
	o->has &= ~(UINT64_C(1) << CATS_PRP_gen |
	    UINT64_C(1) << CATS_PRP_path_id);
	o->path.v = NULL;
	o->path.n = 0;
	o->pruned = NULL;
	const char *why = rep->reason;
	if (rep->status == CATS_PATH_OK) {
		if (CATS_HAS(rep, PRP, cost))
			o->cost = through_float(rep->cost);
		if (CATS_HAS(rep, PRP, delay_us))
			o->delay_us = through_float(rep->delay_us);
		if (CATS_HAS(rep, PRP, hops))
			o->hops = through_float(rep->hops);
		return;
	}
	o->has &= ~(UINT64_C(1) << CATS_PRP_cost |
	    UINT64_C(1) << CATS_PRP_delay_us | UINT64_C(1) << CATS_PRP_hops);
	o->segments.v = NULL;
	o->segments.n = 0;
	memset(&o->endpoint_addr, 0, sizeof(o->endpoint_addr));
	if (streq(why, "no-source") || streq(why, "no-destination")) {
		o->status = CATS_PATH_ERROR;
	} else if (streq(why, "no-path") || streq(why, "same-node")) {
		o->status = CATS_PATH_NO_PATH;
		o->reason = "no-path";
		o->pruned = streq(why, "same-node") || rep->pruned == NULL ?
		    "topology" : rep->pruned;
	} else if (streq(why, "headend-dataplane") ||
	    streq(why, "endpoint-dataplane") || streq(why, "ecmp") ||
	    streq(why, "no-sid")) {
		o->status = CATS_PATH_NO_PATH;
		o->reason = "no-path";
		o->pruned = "dataplane";
	} else if (streq(why, "sid-depth")) {
		o->status = CATS_PATH_NO_PATH;
	} else if (streq(why, "deadline")) {
		o->status = CATS_PATH_ERROR;	/* the PCC's own clock */
	} else {
		o->status = CATS_PATH_ERROR;
		o->reason = "pce-unavailable";
	}
}
