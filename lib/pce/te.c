/*
 * te.c - the TE database: builder, CSR layout, topology JSON loader (both
 * forms of cats-topology(5)) and `net` updates.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base/file.h"
#include "base/htab.h"
#include "pce/te.h"

const struct cats_te_limits cats_te_limits_default = {
	.max_file = (size_t)1 << 30,
	.max_nodes = UINT32_C(1) << 21,
	.max_links = UINT32_C(1) << 22,
};

static uint64_t te_uid_next = 1;

static void
errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	/* Ids and keys come from the file: keep the message one line. */
	for (char *p = err; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}

/* ---- id tables: items are index + 1, keys name a string in a pool ---- */

struct idkey {
	const char *const *pool;	/* the pool may move while building */
	const uint32_t *const *off;
	const char *s;
	size_t n;
};

static bool
id_eq(const void *item, const void *key)
{
	const struct idkey *k = key;
	uint32_t i = (uint32_t)((uintptr_t)item - 1);
	const char *s = *k->pool + (*k->off)[i];
	return strncmp(s, k->s, k->n) == 0 && s[k->n] == '\0';
}

/* Index of the id s[0..n) hashed as h (cats_hash(s, n)). */
static uint32_t
id_find_h(const struct cats_htab *t, const char *const *pool,
    const uint32_t *const *off, const char *s, size_t n, uint64_t h)
{
	struct idkey k = { pool, off, s, n };
	void *it = cats_htab_get(t, h, id_eq, &k);
	return it ? (uint32_t)((uintptr_t)it - 1) : CATS_TE_NONE;
}

static uint32_t
id_find(const struct cats_htab *t, const char *const *pool,
    const uint32_t *const *off, const char *s, size_t n)
{
	return id_find_h(t, pool, off, s, n, cats_hash(s, n));
}

/* An id is 1..128 bytes of UTF-8 without control characters. */
static const char *
id_invalid(const char *s)
{
	if (s == NULL || *s == '\0')
		return "is empty";
	size_t n = strlen(s);
	if (n > CATS_ID)
		return "is longer than 128 bytes";
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return "contains a control character";
	if (!cats_utf8_valid((const uint8_t *)s, n))
		return "is not UTF-8";
	return NULL;
}

/* ---- builder ---- */

struct tmp_edge {
	uint32_t src, dst, link;
	uint32_t w[CATS_TE_W__N];
	uint64_t max_bw, avail_bw;
	uint32_t ag;
	uint32_t srlg_off, nsrlg;
	uint32_t adj_label;
	uint8_t adj6[16];
	bool has6, up;
};

struct cats_te_builder {
	struct cats_te_limits lim;
	struct cats_buf names;
	char *pool;			/* == names.p, for id keys */
	/* nodes */
	uint32_t n, ncap;
	uint32_t *name_off;
	uint8_t *caps, *msd;
	uint32_t *label;
	struct cats_ip *router_id;
	uint8_t (*sid6)[16];
	bool any_rid, any_sid6;
	struct cats_htab node_ids;
	/* links */
	uint32_t nlinks, lcap;
	uint32_t *link_off;
	struct cats_htab link_ids;
	struct tmp_edge *e;
	uint32_t m, ecap;
	uint32_t *srlg;
	uint32_t nsrlg, scap;
	bool any_adj6;
};

struct cats_te_builder *
cats_te_builder_new(const struct cats_te_limits *lim)
{
	struct cats_te_builder *b = calloc(1, sizeof(*b));
	if (b == NULL)
		return NULL;
	b->lim = lim ? *lim : cats_te_limits_default;
	return b;
}

void
cats_te_builder_free(struct cats_te_builder *b)
{
	if (b == NULL)
		return;
	cats_buf_free(&b->names);
	free(b->name_off);
	free(b->caps);
	free(b->msd);
	free(b->label);
	free(b->router_id);
	free(b->sid6);
	cats_htab_free(&b->node_ids);
	free(b->link_off);
	cats_htab_free(&b->link_ids);
	free(b->e);
	free(b->srlg);
	free(b);
}

/* Grow an array of n elements of size sz to at least want elements. */
static int
grow(void **p, uint32_t *cap, uint32_t want, size_t sz)
{
	if (want <= *cap)
		return 0;
	uint32_t c = *cap ? *cap : 64;
	while (c < want)
		c = c > UINT32_MAX / 2 ? want : c * 2;
	void *q = realloc(*p, (size_t)c * sz);
	if (q == NULL)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

static int
add_name(struct cats_te_builder *b, const char *s, uint32_t *off)
{
	size_t n = strlen(s) + 1;
	if (b->names.len + n > UINT32_MAX)
		return -1;
	*off = (uint32_t)b->names.len;
	if (cats_buf_add(&b->names, s, n) < 0)
		return -1;
	b->pool = (char *)b->names.p;
	return 0;
}

/* The node arrays follow name_off's capacity. */
static int
grow_nodes(struct cats_te_builder *b)
{
	uint8_t *c = realloc(b->caps, b->ncap);
	if (c == NULL)
		return -1;
	b->caps = c;
	if ((c = realloc(b->msd, b->ncap)) == NULL)
		return -1;
	b->msd = c;
	uint32_t *l = realloc(b->label, (size_t)b->ncap * sizeof(*l));
	if (l == NULL)
		return -1;
	b->label = l;
	struct cats_ip *r = realloc(b->router_id, (size_t)b->ncap * sizeof(*r));
	if (r == NULL)
		return -1;
	b->router_id = r;
	uint8_t (*s6)[16] = realloc(b->sid6, (size_t)b->ncap * 16);
	if (s6 == NULL)
		return -1;
	b->sid6 = s6;
	return 0;
}

int
cats_te_add_node(struct cats_te_builder *b, const struct cats_te_node_spec *s,
    char *err, size_t errlen)
{
	const char *why = id_invalid(s->id);
	if (why != NULL) {
		errf(err, errlen, "id: %s", why);
		return -1;
	}
	if (b->n >= b->lim.max_nodes) {
		errf(err, errlen, "id: more than %" PRIu32 " nodes",
		    b->lim.max_nodes);
		return -1;
	}
	const uint32_t *offp = b->name_off;
	if (id_find(&b->node_ids, (const char *const *)&b->pool, &offp, s->id,
	    strlen(s->id)) != CATS_TE_NONE) {
		errf(err, errlen, "id: duplicate node id");
		return -1;
	}
	if (s->label != 0 && (s->label < CATS_TE_LABEL_MIN ||
	    s->label > CATS_TE_LABEL_MAX)) {
		errf(err, errlen, "node_label: %" PRIu32 " is out of range "
		    "%u..%u", s->label, CATS_TE_LABEL_MIN, CATS_TE_LABEL_MAX);
		return -1;
	}
	if (s->msd > CATS_TE_MSD_MAX) {
		errf(err, errlen, "msd: %u is out of range 1..%u", s->msd,
		    CATS_TE_MSD_MAX);
		return -1;
	}
	if (s->srv6_sid.af == 4) {
		errf(err, errlen, "srv6_sid: an SRv6 SID is an IPv6 address");
		return -1;
	}
	if (s->srv6_locator.af == 4) {
		errf(err, errlen, "srv6_locator: an SRv6 locator is an IPv6 "
		    "prefix");
		return -1;
	}
	if (s->srv6_locator.af == 6 && (s->srv6_plen == 0 ||
	    s->srv6_plen > 128)) {
		errf(err, errlen, "srv6_locator: prefix length %u is out of "
		    "range 1..128", s->srv6_plen);
		return -1;
	}
	struct cats_ip sid = s->srv6_sid;
	if (sid.af == 0 && s->srv6_locator.af == 6)
		sid = s->srv6_locator;
	if (s->srv6_sid.af == 6 && s->srv6_locator.af == 6 &&
	    !cats_bits_match(s->srv6_sid.a, s->srv6_locator.a, s->srv6_plen)) {
		errf(err, errlen, "srv6_sid: not within srv6_locator");
		return -1;
	}
	uint8_t caps = s->caps;
	if (caps & ~(CATS_TE_CAP_IP | CATS_TE_CAP_SRMPLS | CATS_TE_CAP_SRV6)) {
		errf(err, errlen, "caps: unknown capability bits");
		return -1;
	}
	if (caps == 0)
		caps = CATS_TE_CAP_IP | (s->label ? CATS_TE_CAP_SRMPLS : 0) |
		    (sid.af == 6 ? CATS_TE_CAP_SRV6 : 0);
	if ((caps & CATS_TE_CAP_SRMPLS) && s->label == 0) {
		errf(err, errlen, "caps: srmpls needs a node_label");
		return -1;
	}
	if ((caps & CATS_TE_CAP_SRV6) && sid.af != 6) {
		errf(err, errlen, "caps: srv6 needs an srv6_sid or "
		    "srv6_locator");
		return -1;
	}
	uint32_t i = b->n, oldcap = b->ncap;
	if (grow((void **)&b->name_off, &b->ncap, i + 1, sizeof(uint32_t)) < 0)
		goto nomem;
	if (b->ncap != oldcap && grow_nodes(b) < 0)
		goto nomem;
	if (add_name(b, s->id, &b->name_off[i]) < 0)
		goto nomem;
	b->caps[i] = caps;
	b->msd[i] = s->msd ? s->msd : CATS_TE_MSD_DEFAULT;
	b->label[i] = s->label;
	b->router_id[i] = s->router_id;
	b->any_rid |= s->router_id.af != 0;
	if (sid.af == 6) {
		memcpy(b->sid6[i], sid.a, 16);
		b->any_sid6 = true;
	} else {
		memset(b->sid6[i], 0, 16);
	}
	if (cats_htab_put(&b->node_ids, cats_hash_str(s->id),
	    (void *)(uintptr_t)(i + 1)) < 0)
		goto nomem;
	b->n++;
	return 0;
nomem:
	errf(err, errlen, "id: out of memory");
	return -1;
}

static int
check_dir(const struct cats_te_dir *d, const char *pfx, char *err,
    size_t errlen)
{
	if (d->igp < 1 || d->igp > CATS_TE_METRIC_MAX) {
		errf(err, errlen, "%sigp_metric: %" PRIu32 " is out of range "
		    "1..%" PRIu32, pfx, d->igp, CATS_TE_METRIC_MAX);
		return -1;
	}
	if (d->te > CATS_TE_METRIC_MAX) {
		errf(err, errlen, "%ste_metric: %" PRIu32 " is out of range "
		    "1..%" PRIu32, pfx, d->te, CATS_TE_METRIC_MAX);
		return -1;
	}
	if (d->delay_us < 1 || d->delay_us > CATS_TE_DELAY_MAX) {
		errf(err, errlen, "%sdelay_us: %" PRIu32 " is out of range "
		    "1..%" PRIu32, pfx, d->delay_us, CATS_TE_DELAY_MAX);
		return -1;
	}
	if (d->max_bw > CATS_TE_BW_MAX) {
		errf(err, errlen, "%smax_bw: %" PRIu64 " is out of range "
		    "0..%" PRIu64, pfx, d->max_bw, CATS_TE_BW_MAX);
		return -1;
	}
	if (d->avail_bw != UINT64_MAX && d->avail_bw > d->max_bw) {
		errf(err, errlen, "%savail_bw: %" PRIu64 " exceeds max_bw %"
		    PRIu64, pfx, d->avail_bw, d->max_bw);
		return -1;
	}
	if (d->adj_label != 0 && (d->adj_label < CATS_TE_LABEL_MIN ||
	    d->adj_label > CATS_TE_LABEL_MAX)) {
		errf(err, errlen, "%sadj_label: %" PRIu32 " is out of range "
		    "%u..%u", pfx, d->adj_label, CATS_TE_LABEL_MIN,
		    CATS_TE_LABEL_MAX);
		return -1;
	}
	if (d->adj_sid.af == 4) {
		errf(err, errlen, "%sadj_sid: an SRv6 SID is an IPv6 address",
		    pfx);
		return -1;
	}
	return 0;
}

static int
push_edge(struct cats_te_builder *b, uint32_t src, uint32_t dst,
    uint32_t link, const struct cats_te_link_spec *l,
    const struct cats_te_dir *d, uint32_t srlg_off)
{
	if (grow((void **)&b->e, &b->ecap, b->m + 1, sizeof(*b->e)) < 0)
		return -1;
	struct tmp_edge *e = &b->e[b->m++];
	memset(e, 0, sizeof(*e));
	e->src = src;
	e->dst = dst;
	e->link = link;
	e->w[CATS_TE_W_IGP] = d->igp;
	e->w[CATS_TE_W_TE] = d->te ? d->te : d->igp;
	e->w[CATS_TE_W_DELAY] = d->delay_us;
	e->max_bw = d->max_bw;
	e->avail_bw = d->avail_bw == UINT64_MAX ? d->max_bw : d->avail_bw;
	e->ag = l->admin_groups;
	e->srlg_off = srlg_off;
	e->nsrlg = (uint32_t)l->nsrlgs;
	e->adj_label = d->adj_label;
	if (d->adj_sid.af == 6) {
		memcpy(e->adj6, d->adj_sid.a, 16);
		e->has6 = true;
		b->any_adj6 = true;
	}
	e->up = !d->down;
	return 0;
}

int
cats_te_add_link(struct cats_te_builder *b, const struct cats_te_link_spec *l,
    char *err, size_t errlen)
{
	const char *why = id_invalid(l->id);
	if (why != NULL) {
		errf(err, errlen, "id: %s", why);
		return -1;
	}
	if (b->nlinks >= b->lim.max_links) {
		errf(err, errlen, "id: more than %" PRIu32 " links",
		    b->lim.max_links);
		return -1;
	}
	const uint32_t *loff = b->link_off, *noff = b->name_off;
	const char *const *pool = (const char *const *)&b->pool;
	if (id_find(&b->link_ids, pool, &loff, l->id, strlen(l->id)) !=
	    CATS_TE_NONE) {
		errf(err, errlen, "id: duplicate link id");
		return -1;
	}
	if (l->src == NULL) {
		errf(err, errlen, "src: required");
		return -1;
	}
	if (l->dst == NULL) {
		errf(err, errlen, "dst: required");
		return -1;
	}
	uint32_t s = id_find(&b->node_ids, pool, &noff, l->src, strlen(l->src));
	if (s == CATS_TE_NONE) {
		errf(err, errlen, "src: no node \"%.128s\" (dangling link)",
		    l->src);
		return -1;
	}
	uint32_t d = id_find(&b->node_ids, pool, &noff, l->dst, strlen(l->dst));
	if (d == CATS_TE_NONE) {
		errf(err, errlen, "dst: no node \"%.128s\" (dangling link)",
		    l->dst);
		return -1;
	}
	if (s == d) {
		errf(err, errlen, "dst: a link from a node to itself");
		return -1;
	}
	if (l->nsrlgs > CATS_TE_SRLG_MAX) {
		errf(err, errlen, "srlgs: more than %u", CATS_TE_SRLG_MAX);
		return -1;
	}
	if (check_dir(&l->fwd, "", err, errlen) < 0)
		return -1;
	if (!l->directed && check_dir(&l->rev, "reverse.", err, errlen) < 0)
		return -1;
	uint32_t ndir = l->directed ? 1 : 2;
	if (b->m > UINT32_MAX - 2 || (uint64_t)b->nsrlg + l->nsrlgs >
	    UINT32_MAX - 1)
		goto nomem;
	if (grow((void **)&b->link_off, &b->lcap, b->nlinks + 1,
	    sizeof(uint32_t)) < 0)
		goto nomem;
	if (grow((void **)&b->srlg, &b->scap, b->nsrlg +
	    (uint32_t)l->nsrlgs, sizeof(uint32_t)) < 0)
		goto nomem;
	uint32_t soff = b->nsrlg;
	if (l->nsrlgs)
		memcpy(b->srlg + soff, l->srlgs, l->nsrlgs * sizeof(uint32_t));
	uint32_t li = b->nlinks, m0 = b->m;
	if (push_edge(b, s, d, li, l, &l->fwd, soff) < 0)
		goto nomem;
	if (ndir == 2 && push_edge(b, d, s, li, l, &l->rev, soff) < 0) {
		b->m = m0;
		goto nomem;
	}
	if (add_name(b, l->id, &b->link_off[li]) < 0 ||
	    cats_htab_put(&b->link_ids, cats_hash_str(l->id),
	    (void *)(uintptr_t)(li + 1)) < 0) {
		b->m = m0;
		goto nomem;
	}
	b->nsrlg += (uint32_t)l->nsrlgs;
	b->nlinks++;
	return 0;
nomem:
	errf(err, errlen, "id: out of memory");
	return -1;
}

/* ---- building the CSR database ---- */

void
cats_te_free(struct cats_te *te)
{
	if (te == NULL)
		return;
	free(te->row);
	free(te->rrow);
	free(te->rin);
	free(te->rsrc);
	free(te->name_off);
	free(te->caps);
	free(te->msd);
	free(te->label);
	free(te->router_id);
	free(te->sid6);
	free(te->dst);
	for (int i = 0; i < CATS_TE_W__N; i++)
		free(te->w[i]);
	free(te->max_bw);
	free(te->avail_bw);
	free(te->ag);
	free(te->srlg_row);
	free(te->srlg);
	free(te->adj_label);
	free(te->adj6);
	free(te->link);
	free(te->up);
	free(te->link_off);
	free(te->names);
	if (te->node_ids) {
		cats_htab_free(te->node_ids);
		free(te->node_ids);
	}
	if (te->link_ids) {
		cats_htab_free(te->link_ids);
		free(te->link_ids);
	}
	free(te);
}

/* A value that must be unique: a label or an SRv6 SID and who holds it. */
struct uval {
	uint8_t kind;		/* 0 node label, 1 adj label, 2 SRv6 SID */
	uint8_t v[16];
	uint32_t node;		/* holder (the node of an adjacency) */
	uint32_t edge;		/* CATS_TE_NONE for a node SID */
};

struct ukey {
	const uint8_t *v;
	size_t len;
	uint8_t kind;
	uint32_t node;
};

static bool
uval_eq(const void *item, const void *key)
{
	const struct uval *u = item;
	const struct ukey *k = key;
	return u->kind == k->kind && memcmp(u->v, k->v, k->len) == 0 &&
	    (k->kind != 1 || u->node == k->node);
}

static bool
is_set16(const uint8_t *a)
{
	for (int i = 0; i < 16; i++)
		if (a[i])
			return true;
	return false;
}

/* Node labels and SIDs hash by value; adjacency labels by value and node,
 * since the same local label is reused at every node. */
static uint64_t
uhash(const struct uval *x, size_t len)
{
	uint8_t k[24];
	memcpy(k, x->v, len);
	if (x->kind == 1) {
		memcpy(k + len, &x->node, 4);
		len += 4;
	}
	k[len++] = x->kind;
	return cats_hash(k, len);
}

static const char *
holder(const struct cats_te *te, const struct uval *u, char *buf, size_t len)
{
	if (u->edge == CATS_TE_NONE)
		snprintf(buf, len, "node \"%s\"", cats_te_node_id(te, u->node));
	else
		snprintf(buf, len, "link \"%s\" at node \"%s\"",
		    cats_te_link_id(te, te->link[u->edge]),
		    cats_te_node_id(te, u->node));
	return buf;
}

/* Fill x with the i-th candidate value of node or direction i; false if
 * it has none. */
static bool
uval_at(const struct cats_te *te, int pass, uint32_t i, int six,
    struct uval *x, size_t *len)
{
	memset(x, 0, sizeof(*x));
	if (pass == 0) {
		x->node = i;
		x->edge = CATS_TE_NONE;
		if (six == 0 && te->label[i]) {
			memcpy(x->v, &te->label[i], 4);
			*len = 4;
			x->kind = 0;
			return true;
		}
		if (six == 1 && te->sid6 && is_set16(te->sid6[i])) {
			memcpy(x->v, te->sid6[i], 16);
			*len = 16;
			x->kind = 2;
			return true;
		}
		return false;
	}
	x->edge = i;
	if (six == 0 && te->adj_label[i]) {
		x->node = cats_te_edge_src(te, i);
		memcpy(x->v, &te->adj_label[i], 4);
		*len = 4;
		x->kind = 1;
		return true;
	}
	if (six == 1 && te->adj6 && is_set16(te->adj6[i])) {
		x->node = cats_te_edge_src(te, i);
		memcpy(x->v, te->adj6[i], 16);
		*len = 16;
		x->kind = 2;
		return true;
	}
	return false;
}

/*
 * Node labels are global (one SRGB), adjacency labels local to their node
 * but must not shadow a node label; SRv6 SIDs are global.
 */
static int
check_unique(const struct cats_te *te, char *err, size_t errlen)
{
	struct cats_htab t = { 0 };
	size_t cap = (size_t)te->n * 2 + (size_t)te->m * 2;
	struct uval *u = calloc(cap ? cap : 1, sizeof(*u));
	size_t nu = 0;
	int rc = -1;
	char b1[300], b2[300];
	if (u == NULL) {
		errf(err, errlen, "out of memory");
		return -1;
	}
	/* Node SIDs first, so that an adjacency clash names both. */
	for (int pass = 0; pass < 2; pass++) {
		uint32_t lim = pass == 0 ? te->n : te->m;
		for (uint32_t i = 0; i < lim; i++) {
			for (int six = 0; six < 2; six++) {
				struct uval *x = &u[nu];
				size_t len;
				if (!uval_at(te, pass, i, six, x, &len))
					continue;
				struct ukey k = { x->v, len, x->kind, x->node };
				struct uval *old = cats_htab_get(&t,
				    uhash(x, len), uval_eq, &k);
				if (old == NULL && x->kind == 1) {
					/* An adjacency label that is also a
					 * node label. */
					struct uval probe = *x;
					probe.kind = 0;
					k.kind = 0;
					old = cats_htab_get(&t,
					    uhash(&probe, len), uval_eq, &k);
				}
				if (old != NULL) {
					holder(te, x, b1, sizeof(b1));
					holder(te, old, b2, sizeof(b2));
					if (x->kind == 2) {
						char a[64];
						struct cats_ip ip = { .af = 6 };
						memcpy(ip.a, x->v, 16);
						errf(err, errlen, "%s: SRv6 SID "
						    "%s also used by %s", b1,
						    cats_ip_fmt(&ip, a,
						    sizeof(a)), b2);
					} else {
						uint32_t lab;
						memcpy(&lab, x->v, 4);
						errf(err, errlen, "%s: label %"
						    PRIu32 " also used by %s",
						    b1, lab, b2);
					}
					goto out;
				}
				if (cats_htab_put(&t, uhash(x, len), x) < 0) {
					errf(err, errlen, "out of memory");
					goto out;
				}
				nu++;
			}
		}
	}
	rc = 0;
out:
	cats_htab_free(&t);
	free(u);
	return rc;
}

/* SRv6 adjacency SIDs that are not in the node's locator are accepted;
 * SIDs are opaque to the PCE. */

struct cats_te *
cats_te_build(struct cats_te_builder *b, uint64_t gen, char *err,
    size_t errlen)
{
	struct cats_te *te = calloc(1, sizeof(*te));
	uint32_t n = b->n, m = b->m;
	if (te == NULL)
		goto nomem;
	te->n = n;
	te->m = m;
	te->nlinks = b->nlinks;
	te->gen = gen;
	te->uid = te_uid_next++;
	size_t nn = n ? n : 1, mm = m ? m : 1;
	te->row = calloc(nn + 1, sizeof(uint32_t));
	te->rrow = calloc(nn + 1, sizeof(uint32_t));
	te->rin = malloc(mm * sizeof(uint32_t));
	te->rsrc = malloc(mm * sizeof(uint32_t));
	te->dst = malloc(mm * sizeof(uint32_t));
	for (int i = 0; i < CATS_TE_W__N; i++)
		if ((te->w[i] = malloc(mm * sizeof(uint32_t))) == NULL)
			goto nomem;
	te->max_bw = malloc(mm * sizeof(uint64_t));
	te->avail_bw = malloc(mm * sizeof(uint64_t));
	te->ag = malloc(mm * sizeof(uint32_t));
	te->srlg_row = malloc((mm + 1) * sizeof(uint32_t));
	/* Both directions of a link carry its SRLGs. */
	size_t nsrlg = 0;
	for (uint32_t i = 0; i < m; i++)
		nsrlg += b->e[i].nsrlg;
	te->srlg = malloc((nsrlg ? nsrlg : 1) * sizeof(uint32_t));
	te->adj_label = malloc(mm * sizeof(uint32_t));
	te->link = malloc(mm * sizeof(uint32_t));
	te->up = malloc(mm);
	if (b->any_adj6 && (te->adj6 = calloc(mm, 16)) == NULL)
		goto nomem;
	if (te->row == NULL || te->rrow == NULL || te->rin == NULL ||
	    te->rsrc == NULL || te->dst == NULL || te->max_bw == NULL ||
	    te->avail_bw == NULL || te->ag == NULL || te->srlg_row == NULL || te->srlg == NULL ||
	    te->adj_label == NULL || te->link == NULL || te->up == NULL)
		goto nomem;
	/* Counting sort by tail, stable: links keep their file order. */
	for (uint32_t i = 0; i < m; i++)
		te->row[b->e[i].src + 1]++;
	for (uint32_t v = 0; v < n; v++)
		te->row[v + 1] += te->row[v];
	uint32_t *fill = malloc(nn * sizeof(uint32_t));
	if (fill == NULL)
		goto nomem;
	memcpy(fill, te->row, nn * sizeof(uint32_t));
	uint32_t *order = malloc(mm * sizeof(uint32_t));
	if (order == NULL) {
		free(fill);
		goto nomem;
	}
	for (uint32_t i = 0; i < m; i++)
		order[fill[b->e[i].src]++] = i;
	uint32_t so = 0;
	for (uint32_t k = 0; k < m; k++) {
		const struct tmp_edge *e = &b->e[order[k]];
		te->dst[k] = e->dst;
		for (int i = 0; i < CATS_TE_W__N; i++)
			te->w[i][k] = e->w[i];
		te->max_bw[k] = e->max_bw;
		te->avail_bw[k] = e->avail_bw;
		te->ag[k] = e->ag;
		te->srlg_row[k] = so;
		if (e->nsrlg)
			memcpy(te->srlg + so, b->srlg + e->srlg_off,
			    e->nsrlg * sizeof(uint32_t));
		so += e->nsrlg;
		te->adj_label[k] = e->adj_label;
		if (e->has6)
			memcpy(te->adj6[k], e->adj6, 16);
		te->link[k] = e->link;
		te->up[k] = e->up;
	}
	te->srlg_row[m] = so;
	free(order);
	/* In-links, grouped by head. */
	for (uint32_t k = 0; k < m; k++)
		te->rrow[te->dst[k] + 1]++;
	for (uint32_t v = 0; v < n; v++)
		te->rrow[v + 1] += te->rrow[v];
	memcpy(fill, te->rrow, nn * sizeof(uint32_t));
	for (uint32_t v = 0; v < n; v++)
		for (uint32_t k = te->row[v]; k < te->row[v + 1]; k++) {
			uint32_t at = fill[te->dst[k]]++;
			te->rin[at] = k;
			te->rsrc[at] = v;
		}
	free(fill);
	/* Nodes: take the builder's arrays. */
	te->name_off = b->name_off;
	te->caps = b->caps;
	te->msd = b->msd;
	te->label = b->label;
	te->allcaps = 0xff;
	for (uint32_t v = 0; v < n; v++)
		te->allcaps &= te->caps[v];
	b->name_off = b->label = NULL;
	b->caps = b->msd = NULL;
	if (b->any_rid) {
		te->router_id = b->router_id;
		b->router_id = NULL;
	}
	if (b->any_sid6) {
		te->sid6 = b->sid6;
		b->sid6 = NULL;
	}
	te->link_off = b->link_off;
	b->link_off = NULL;
	te->names = (char *)b->names.p;
	te->names_len = b->names.len;
	memset(&b->names, 0, sizeof(b->names));
	te->node_ids = malloc(sizeof(*te->node_ids));
	te->link_ids = malloc(sizeof(*te->link_ids));
	if (te->node_ids == NULL || te->link_ids == NULL)
		goto nomem;
	*te->node_ids = b->node_ids;
	*te->link_ids = b->link_ids;
	memset(&b->node_ids, 0, sizeof(b->node_ids));
	memset(&b->link_ids, 0, sizeof(b->link_ids));
	if (te->names == NULL && (te->names = calloc(1, 1)) == NULL)
		goto nomem;
	cats_te_builder_free(b);
	if (check_unique(te, err, errlen) < 0) {
		cats_te_free(te);
		return NULL;
	}
	return te;
nomem:
	errf(err, errlen, "out of memory");
	cats_te_free(te);
	cats_te_builder_free(b);
	return NULL;
}

/* ---- accessors ---- */

uint64_t
cats_te_gen(const struct cats_te *te)
{
	return te->gen;
}

uint64_t
cats_te_uid(const struct cats_te *te)
{
	return te->uid;
}

uint32_t
cats_te_nodes(const struct cats_te *te)
{
	return te->n;
}

uint32_t
cats_te_edges(const struct cats_te *te)
{
	return te->m;
}

uint32_t
cats_te_links(const struct cats_te *te)
{
	return te->nlinks;
}

uint32_t
cats_te_node_n(const struct cats_te *te, const char *id, size_t n)
{
	const char *pool = te->names;
	const uint32_t *off = te->name_off;
	return id_find(te->node_ids, &pool, &off, id, n);
}

uint32_t
cats_te_node(const struct cats_te *te, const char *id)
{
	return cats_te_node_n(te, id, strlen(id));
}

uint32_t
cats_te_node_h(const struct cats_te *te, const char *id, uint64_t h)
{
	const char *pool = te->names;
	const uint32_t *off = te->name_off;
	return id_find_h(te->node_ids, &pool, &off, id, strlen(id), h);
}

const char *
cats_te_node_id(const struct cats_te *te, uint32_t v)
{
	return v < te->n ? te->names + te->name_off[v] : NULL;
}

uint32_t
cats_te_link(const struct cats_te *te, const char *id)
{
	const char *pool = te->names;
	const uint32_t *off = te->link_off;
	return id_find(te->link_ids, &pool, &off, id, strlen(id));
}

const char *
cats_te_link_id(const struct cats_te *te, uint32_t l)
{
	return l < te->nlinks ? te->names + te->link_off[l] : NULL;
}

uint32_t
cats_te_edge_src(const struct cats_te *te, uint32_t e)
{
	/* The last v with row[v] <= e. */
	uint32_t lo = 0, hi = te->n;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (te->row[mid] <= e)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

void
cats_te_mem(const struct cats_te *te, struct cats_te_mem *mm)
{
	size_t n = te->n, m = te->m;
	/* row, rrow, name_off, label: 4 each; caps, msd: 1 each. */
	mm->node_bytes = n * (4 + 4 + 4 + 4 + 1 + 1);
	if (te->router_id)
		mm->node_bytes += n * sizeof(struct cats_ip);
	if (te->sid6)
		mm->node_bytes += n * 16;
	/* node id strings and the id table */
	size_t ids = 0;
	for (uint32_t v = 0; v < te->n; v++)
		ids += strlen(te->names + te->name_off[v]) + 1;
	mm->node_bytes += ids + te->node_ids->cap * sizeof(struct cats_hslot);
	/* rin, rsrc, dst, w[3], ag, srlg_row, adj_label, link: 4 each; bw 8+8;
	 * up 1; the SRLG values; SRv6 adjacency SIDs. */
	mm->edge_bytes = m * (4 + 4 + 4 + 4 * CATS_TE_W__N + 4 + 4 + 4 + 4 + 16 + 1)
	    + (size_t)te->srlg_row[m] * 4;
	if (te->adj6)
		mm->edge_bytes += m * 16;
	mm->other_bytes = sizeof(*te) + (te->names_len - ids) +
	    te->nlinks * sizeof(uint32_t) +
	    te->link_ids->cap * sizeof(struct cats_hslot);
}

/* ---- net updates ---- */

int
cats_te_apply_net(struct cats_te *te, const struct cats_net *nr, char *err,
    size_t errlen)
{
	if (nr->scope == CATS_NET_PATH)
		return 1;
	if (nr->scope == CATS_NET_NODE) {
		uint32_t v = nr->node ? cats_te_node(te, nr->node) : CATS_TE_NONE;
		if (v == CATS_TE_NONE) {
			errf(err, errlen, "node: no node \"%.128s\"",
			    nr->node ? nr->node : "");
			return -1;
		}
		if (!CATS_HAS(nr, NET, up))
			return 1;
		for (uint32_t e = te->row[v]; e < te->row[v + 1]; e++)
			te->up[e] = nr->up;
		for (uint32_t k = te->rrow[v]; k < te->rrow[v + 1]; k++)
			te->up[te->rin[k]] = nr->up;
		te->gen++;
		return 0;
	}
	uint32_t s = cats_te_node(te, nr->src), d = cats_te_node(te, nr->dst);
	if (s == CATS_TE_NONE) {
		errf(err, errlen, "src: no node \"%.128s\"", nr->src);
		return -1;
	}
	if (d == CATS_TE_NONE) {
		errf(err, errlen, "dst: no node \"%.128s\"", nr->dst);
		return -1;
	}
	uint32_t want = CATS_TE_NONE;
	if (nr->link_id != NULL) {
		want = cats_te_link(te, nr->link_id);
		if (want == CATS_TE_NONE) {
			errf(err, errlen, "link_id: no link \"%.128s\"",
			    nr->link_id);
			return -1;
		}
	}
	uint32_t hit = CATS_TE_NONE;
	for (uint32_t e = te->row[s]; e < te->row[s + 1]; e++) {
		if (te->dst[e] != d || (want != CATS_TE_NONE &&
		    te->link[e] != want))
			continue;
		if (hit != CATS_TE_NONE) {
			errf(err, errlen, "link_id: parallel links from \"%s\" "
			    "to \"%s\": name one", nr->src, nr->dst);
			return -1;
		}
		hit = e;
	}
	if (hit == CATS_TE_NONE) {
		errf(err, errlen, "dst: no link from \"%.128s\" to \"%.128s\"%s",
		    nr->src, nr->dst, want != CATS_TE_NONE ? " with that id" :
		    "");
		return -1;
	}
	/* Check everything first: a refused record changes nothing. */
	uint64_t maxbw = CATS_HAS(nr, NET, max_bw) ? nr->max_bw :
	    te->max_bw[hit];
	uint64_t avail = CATS_HAS(nr, NET, avail_bw) ? nr->avail_bw :
	    te->avail_bw[hit];
	if (CATS_HAS(nr, NET, delay_us) && (nr->delay_us < 1 ||
	    nr->delay_us > CATS_TE_DELAY_MAX)) {
		errf(err, errlen, "delay_us: %" PRIu64 " is out of range 1..%"
		    PRIu32, nr->delay_us, CATS_TE_DELAY_MAX);
		return -1;
	}
	if (CATS_HAS(nr, NET, igp_metric) && (nr->igp_metric < 1 ||
	    nr->igp_metric > CATS_TE_METRIC_MAX)) {
		errf(err, errlen, "igp_metric: %" PRIu64 " is out of range "
		    "1..%" PRIu32, nr->igp_metric, CATS_TE_METRIC_MAX);
		return -1;
	}
	if (CATS_HAS(nr, NET, te_metric) && (nr->te_metric < 1 ||
	    nr->te_metric > CATS_TE_METRIC_MAX)) {
		errf(err, errlen, "te_metric: %" PRIu64 " is out of range "
		    "1..%" PRIu32, nr->te_metric, CATS_TE_METRIC_MAX);
		return -1;
	}
	if (maxbw > CATS_TE_BW_MAX) {
		errf(err, errlen, "max_bw: %" PRIu64 " is out of range 0..%"
		    PRIu64, maxbw, CATS_TE_BW_MAX);
		return -1;
	}
	if (avail > maxbw) {
		if (CATS_HAS(nr, NET, avail_bw)) {
			errf(err, errlen, "avail_bw: %" PRIu64 " exceeds "
			    "max_bw %" PRIu64, avail, maxbw);
			return -1;
		}
		avail = maxbw;	/* a lower max_bw caps what is available */
	}
	if (CATS_HAS(nr, NET, delay_us))
		te->w[CATS_TE_W_DELAY][hit] = (uint32_t)nr->delay_us;
	if (CATS_HAS(nr, NET, igp_metric))
		te->w[CATS_TE_W_IGP][hit] = (uint32_t)nr->igp_metric;
	if (CATS_HAS(nr, NET, te_metric))
		te->w[CATS_TE_W_TE][hit] = (uint32_t)nr->te_metric;
	te->max_bw[hit] = maxbw;
	te->avail_bw[hit] = avail;
	if (CATS_HAS(nr, NET, up))
		te->up[hit] = nr->up;
	te->gen++;
	return 0;
}

/* ---- the JSON loader ---- */

struct loader {
	struct cats_te_builder *b;
	const struct cats_te_limits *lim;
	uint64_t gen;
	bool have_gen;
	char *err;
	size_t errlen;
	char where[200];	/* "links[3] \"x\"" or "line 12: link \"x\"" */
	char why[400];
};

static int
lfail(struct loader *L, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
lfail(struct loader *L, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(L->why, sizeof(L->why), fmt, ap);
	va_end(ap);
	errf(L->err, L->errlen, "%s: %s", L->where, L->why);
	return -1;
}

/* An unsigned integer member in [lo, hi]; 0 absent, 1 present, -1 bad. */
static int
get_uint(struct loader *L, json_t *o, const char *k, uint64_t lo,
    uint64_t hi, uint64_t *out)
{
	json_t *v = json_object_get(o, k);
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return lfail(L, "%s: expected an integer", k);
	json_int_t i = json_integer_value(v);
	if (i < 0)
		return lfail(L, "%s: %" JSON_INTEGER_FORMAT " is negative", k, i);
	if ((uint64_t)i < lo || (uint64_t)i > hi)
		return lfail(L, "%s: %" JSON_INTEGER_FORMAT " is out of range %"
		    PRIu64 "..%" PRIu64, k, i, lo, hi);
	*out = (uint64_t)i;
	return 1;
}

static int
get_str(struct loader *L, json_t *o, const char *k, const char **out)
{
	json_t *v = json_object_get(o, k);
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return lfail(L, "%s: expected a string", k);
	*out = json_string_value(v);
	if (strlen(*out) != json_string_length(v))
		return lfail(L, "%s: contains NUL", k);
	return 1;
}

static int
get_bool(struct loader *L, json_t *o, const char *k, bool *out)
{
	json_t *v = json_object_get(o, k);
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return lfail(L, "%s: expected true or false", k);
	*out = json_is_true(v);
	return 1;
}

static int
get_addr(struct loader *L, json_t *o, const char *k, struct cats_ip *ip,
    uint8_t *plen)
{
	const char *s;
	int r = get_str(L, o, k, &s);
	if (r <= 0)
		return r;
	size_t n = strlen(s);
	const char *slash = strchr(s, '/');
	if (plen == NULL && slash != NULL)
		return lfail(L, "%s: \"%.64s\" is an address, not a prefix",
		    k, s);
	if (plen != NULL) {
		if (slash == NULL)
			return lfail(L, "%s: \"%.64s\": expected ADDRESS/LENGTH",
			    k, s);
		char *end;
		errno = 0;
		unsigned long l = strtoul(slash + 1, &end, 10);
		if (*end != '\0' || slash[1] == '\0' || errno || l > 128)
			return lfail(L, "%s: \"%.64s\": bad prefix length", k, s);
		*plen = (uint8_t)l;
		n = (size_t)(slash - s);
	}
	if (cats_ip_parse(s, n, ip) < 0)
		return lfail(L, "%s: \"%.64s\" is not an IP address", k, s);
	return 1;
}

/* Keys a node or link may have; "x-" keys are left to the user. */
static int
check_keys(struct loader *L, json_t *o, const char *const *known)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v) {
		(void)v;
		if (strncmp(k, "x-", 2) == 0)
			continue;
		size_t i;
		for (i = 0; known[i] != NULL; i++)
			if (strcmp(k, known[i]) == 0)
				break;
		if (known[i] == NULL)
			return lfail(L, "%.64s: unknown key", k);
	}
	return 0;
}

static const char *const node_keys[] = { "id", "name", "router_id",
	"node_label", "srv6_sid", "srv6_locator", "caps", "msd", "lat", "lon",
	NULL };
static const char *const link_keys[] = { "id", "src", "dst", "directed",
	"igp_metric", "te_metric", "delay_us", "max_bw", "avail_bw",
	"admin_groups", "srlgs", "adj_label", "adj_sid", "up", "reverse",
	"name", NULL };
static const char *const dir_keys[] = { "igp_metric", "te_metric",
	"delay_us", "max_bw", "avail_bw", "adj_label", "adj_sid", "up", NULL };

static void
set_where(struct loader *L, const char *kind, const char *idx, json_t *o)
{
	json_t *id = json_is_object(o) ? json_object_get(o, "id") : NULL;
	if (json_is_string(id))
		snprintf(L->where, sizeof(L->where), "%s \"%.128s\"", idx,
		    json_string_value(id));
	else
		snprintf(L->where, sizeof(L->where), "%s", idx);
	(void)kind;
}

static int
load_node(struct loader *L, json_t *o)
{
	if (!json_is_object(o))
		return lfail(L, "a node is an object");
	if (check_keys(L, o, node_keys) < 0)
		return -1;
	struct cats_te_node_spec s;
	memset(&s, 0, sizeof(s));
	uint64_t u;
	int r;
	if ((r = get_str(L, o, "id", &s.id)) < 0)
		return -1;
	if (r == 0)
		return lfail(L, "id: required");
	const char *nm;
	if (get_str(L, o, "name", &nm) < 0)
		return -1;
	if (get_addr(L, o, "router_id", &s.router_id, NULL) < 0)
		return -1;
	if ((r = get_uint(L, o, "node_label", CATS_TE_LABEL_MIN,
	    CATS_TE_LABEL_MAX, &u)) < 0)
		return -1;
	if (r)
		s.label = (uint32_t)u;
	if (get_addr(L, o, "srv6_sid", &s.srv6_sid, NULL) < 0)
		return -1;
	if (get_addr(L, o, "srv6_locator", &s.srv6_locator, &s.srv6_plen) < 0)
		return -1;
	if ((r = get_uint(L, o, "msd", 1, CATS_TE_MSD_MAX, &u)) < 0)
		return -1;
	if (r)
		s.msd = (uint8_t)u;
	for (int i = 0; i < 2; i++) {
		const char *k = i ? "lon" : "lat";
		json_t *v = json_object_get(o, k);
		double lim = i ? 180 : 90;
		if (v != NULL && (!json_is_number(v) ||
		    json_number_value(v) < -lim || json_number_value(v) > lim))
			return lfail(L, "%s: expected a number in -%g..%g", k,
			    lim, lim);
	}
	json_t *caps = json_object_get(o, "caps");
	if (caps != NULL) {
		if (!json_is_array(caps))
			return lfail(L, "caps: expected an array of \"ip\", "
			    "\"srmpls\", \"srv6\"");
		size_t i;
		json_t *c;
		json_array_foreach(caps, i, c) {
			const char *cs = json_string_value(c);
			if (cs != NULL && strcmp(cs, "ip") == 0)
				s.caps |= CATS_TE_CAP_IP;
			else if (cs != NULL && strcmp(cs, "srmpls") == 0)
				s.caps |= CATS_TE_CAP_SRMPLS;
			else if (cs != NULL && strcmp(cs, "srv6") == 0)
				s.caps |= CATS_TE_CAP_SRV6;
			else
				return lfail(L, "caps[%zu]: expected \"ip\", "
				    "\"srmpls\" or \"srv6\"", i);
		}
		if (s.caps == 0)
			return lfail(L, "caps: empty (a node forwards "
			    "something)");
	}
	char e[300];
	if (cats_te_add_node(L->b, &s, e, sizeof(e)) < 0)
		return lfail(L, "%s", e);
	return 0;
}

static int
load_dir(struct loader *L, json_t *o, struct cats_te_dir *d, bool rev)
{
	uint64_t u;
	int r;
	const char *p = rev ? "reverse." : "";
	/* Ranges are checked by the builder, with the same messages. */
	if ((r = get_uint(L, o, "igp_metric", 0, UINT32_MAX, &u)) < 0)
		return -1;
	if (r)
		d->igp = (uint32_t)u;
	else if (!rev)
		return lfail(L, "igp_metric: required");
	if ((r = get_uint(L, o, "te_metric", 1, UINT32_MAX, &u)) < 0)
		return -1;
	if (r)
		d->te = (uint32_t)u;
	if ((r = get_uint(L, o, "delay_us", 0, UINT32_MAX, &u)) < 0)
		return -1;
	if (r)
		d->delay_us = (uint32_t)u;
	else if (!rev)
		return lfail(L, "delay_us: required");
	bool had_max = false;
	if ((r = get_uint(L, o, "max_bw", 0, CATS_TE_BW_MAX, &u)) < 0)
		return -1;
	if (r) {
		d->max_bw = u;
		had_max = true;
		if (rev)
			d->avail_bw = UINT64_MAX;
	}
	if ((r = get_uint(L, o, "avail_bw", 0, CATS_TE_BW_MAX, &u)) < 0)
		return -1;
	if (r)
		d->avail_bw = u;
	else if (!rev || had_max)
		d->avail_bw = UINT64_MAX;
	if ((r = get_uint(L, o, "adj_label", CATS_TE_LABEL_MIN,
	    CATS_TE_LABEL_MAX, &u)) < 0)
		return -1;
	d->adj_label = r ? (uint32_t)u : (rev ? 0 : d->adj_label);
	struct cats_ip ip;
	memset(&ip, 0, sizeof(ip));
	if ((r = get_addr(L, o, "adj_sid", &ip, NULL)) < 0)
		return -1;
	d->adj_sid = r ? ip : (rev ? (struct cats_ip){ 0 } : d->adj_sid);
	bool up = true;
	if ((r = get_bool(L, o, "up", &up)) < 0)
		return -1;
	if (r)
		d->down = !up;
	(void)p;
	return 0;
}

static int
load_link(struct loader *L, json_t *o)
{
	if (!json_is_object(o))
		return lfail(L, "a link is an object");
	if (check_keys(L, o, link_keys) < 0)
		return -1;
	struct cats_te_link_spec s;
	memset(&s, 0, sizeof(s));
	uint64_t u;
	int r;
	if ((r = get_str(L, o, "id", &s.id)) < 0)
		return -1;
	if (r == 0)
		return lfail(L, "id: required");
	if ((r = get_str(L, o, "src", &s.src)) < 0)
		return -1;
	if (r == 0)
		return lfail(L, "src: required");
	if ((r = get_str(L, o, "dst", &s.dst)) < 0)
		return -1;
	if (r == 0)
		return lfail(L, "dst: required");
	const char *nm;
	if (get_str(L, o, "name", &nm) < 0)
		return -1;
	if (get_bool(L, o, "directed", &s.directed) < 0)
		return -1;
	if ((r = get_uint(L, o, "admin_groups", 0, UINT32_MAX, &u)) < 0)
		return -1;
	if (r)
		s.admin_groups = (uint32_t)u;
	uint32_t srlgs[CATS_TE_SRLG_MAX];
	json_t *sa = json_object_get(o, "srlgs");
	if (sa != NULL) {
		if (!json_is_array(sa))
			return lfail(L, "srlgs: expected an array of integers");
		if (json_array_size(sa) > CATS_TE_SRLG_MAX)
			return lfail(L, "srlgs: more than %u", CATS_TE_SRLG_MAX);
		size_t i;
		json_t *v;
		json_array_foreach(sa, i, v) {
			if (!json_is_integer(v) || json_integer_value(v) < 0 ||
			    json_integer_value(v) > (json_int_t)UINT32_MAX)
				return lfail(L, "srlgs[%zu]: expected an "
				    "integer in 0..%" PRIu32, i, UINT32_MAX);
			srlgs[i] = (uint32_t)json_integer_value(v);
		}
		s.srlgs = srlgs;
		s.nsrlgs = json_array_size(sa);
	}
	s.fwd.max_bw = UINT64_C(10000000000);	/* 10 Gbit/s */
	if (load_dir(L, o, &s.fwd, false) < 0)
		return -1;
	/* The reverse direction starts as a copy of the forward one
	 * without its adjacency SIDs, which are per direction. */
	s.rev = s.fwd;
	s.rev.adj_label = 0;
	memset(&s.rev.adj_sid, 0, sizeof(s.rev.adj_sid));
	json_t *rv = json_object_get(o, "reverse");
	if (rv != NULL) {
		if (s.directed)
			return lfail(L, "reverse: a directed link has no "
			    "reverse direction");
		if (!json_is_object(rv))
			return lfail(L, "reverse: expected an object");
		char saved[sizeof(L->where)];
		memcpy(saved, L->where, sizeof(saved));
		snprintf(L->where, sizeof(L->where), "%.180s: reverse", saved);
		int rc = check_keys(L, rv, dir_keys);
		if (rc == 0)
			rc = load_dir(L, rv, &s.rev, true);
		memcpy(L->where, saved, sizeof(saved));
		if (rc < 0)
			return -1;
	}
	char e[300];
	if (cats_te_add_link(L->b, &s, e, sizeof(e)) < 0)
		return lfail(L, "%s", e);
	return 0;
}

static const char *const top_keys[] = { "name", "source", "license",
	"attribution", "generation", "format", "version", "nodes", "links",
	"node", "link", "notes", NULL };

static int
load_value(struct loader *L, json_t *o, unsigned line)
{
	char linepfx[32];
	snprintf(linepfx, sizeof(linepfx), "line %u", line);
	snprintf(L->where, sizeof(L->where), "%s", linepfx);
	if (!json_is_object(o))
		return lfail(L, "expected an object");
	if (check_keys(L, o, top_keys) < 0)
		return -1;
	uint64_t g;
	int r = get_uint(L, o, "generation", 0, CATS_U53, &g);
	if (r < 0)
		return -1;
	if (r) {
		L->gen = g;
		L->have_gen = true;
	}
	json_t *v = json_object_get(o, "version");
	if (v != NULL && (!json_is_integer(v) || json_integer_value(v) != 1))
		return lfail(L, "version: only version 1 is known");
	char idx[64];
	/* Nodes before links, so that one document may list them in any
	 * key order. */
	json_t *a = json_object_get(o, "nodes");
	if (a != NULL) {
		if (!json_is_array(a))
			return lfail(L, "nodes: expected an array");
		size_t i;
		json_t *x;
		json_array_foreach(a, i, x) {
			snprintf(idx, sizeof(idx), "nodes[%zu]", i);
			set_where(L, "node", idx, x);
			if (load_node(L, x) < 0)
				return -1;
		}
	}
	if ((v = json_object_get(o, "node")) != NULL) {
		snprintf(idx, sizeof(idx), "%s: node", linepfx);
		set_where(L, "node", idx, v);
		if (load_node(L, v) < 0)
			return -1;
	}
	snprintf(L->where, sizeof(L->where), "%s", linepfx);
	if ((a = json_object_get(o, "links")) != NULL) {
		if (!json_is_array(a))
			return lfail(L, "links: expected an array");
		size_t i;
		json_t *x;
		json_array_foreach(a, i, x) {
			snprintf(idx, sizeof(idx), "links[%zu]", i);
			set_where(L, "link", idx, x);
			if (load_link(L, x) < 0)
				return -1;
		}
	}
	if ((v = json_object_get(o, "link")) != NULL) {
		snprintf(idx, sizeof(idx), "%s: link", linepfx);
		set_where(L, "link", idx, v);
		if (load_link(L, v) < 0)
			return -1;
	}
	return 0;
}

struct cats_te *
cats_te_load_mem(const char *text, size_t len, const struct cats_te_limits *lim,
    uint64_t gen0, char *err, size_t errlen)
{
	struct loader L;
	memset(&L, 0, sizeof(L));
	L.lim = lim ? lim : &cats_te_limits_default;
	L.err = err;
	L.errlen = errlen;
	if (len > L.lim->max_file) {
		errf(err, errlen, "file of %zu bytes exceeds the %zu-byte "
		    "limit", len, L.lim->max_file);
		return NULL;
	}
	L.b = cats_te_builder_new(L.lim);
	if (L.b == NULL) {
		errf(err, errlen, "out of memory");
		return NULL;
	}
	size_t off = 0;
	unsigned line = 1, values = 0;
	for (;;) {
		while (off < len && strchr(" \t\r\n", text[off]) != NULL) {
			if (text[off] == '\n')
				line++;
			off++;
		}
		if (off >= len)
			break;
		json_error_t je;
		json_t *o = json_loadb(text + off, len - off,
		    JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &je);
		if (o == NULL) {
			errf(err, errlen, "line %u: %s", line + (je.line > 0 ?
			    (unsigned)je.line - 1 : 0), je.text);
			goto fail;
		}
		int rc = load_value(&L, o, line);
		json_decref(o);
		if (rc < 0)
			goto fail;
		values++;
		size_t used = (size_t)je.position;
		if (used == 0 || used > len - off) {
			errf(err, errlen, "line %u: parser did not advance",
			    line);
			goto fail;
		}
		for (size_t i = off; i < off + used; i++)
			line += text[i] == '\n';
		off += used;
	}
	if (values == 0 || L.b->n == 0) {
		errf(err, errlen, "no nodes (an empty topology)");
		goto fail;
	}
	return cats_te_build(L.b, L.have_gen ? L.gen : gen0, err, errlen);
fail:
	cats_te_builder_free(L.b);
	return NULL;
}

struct cats_te *
cats_te_load(const char *path, const struct cats_te_limits *lim, uint64_t gen0,
    bool *missing, char *err, size_t errlen)
{
	const struct cats_te_limits *l = lim ? lim : &cats_te_limits_default;
	if (missing)
		*missing = false;
	char why[600];
	int fd = cats_file_open(path, why, sizeof(why));
	if (fd < 0) {
		if (missing && errno != EINVAL)
			*missing = true;
		errf(err, errlen, "%s", why);
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		errf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	if ((uint64_t)st.st_size > l->max_file) {
		errf(err, errlen, "%s: file of %jd bytes exceeds the %zu-byte "
		    "limit", path, (intmax_t)st.st_size, l->max_file);
		close(fd);
		return NULL;
	}
	size_t len = (size_t)st.st_size;
	void *p = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (len && p == MAP_FAILED) {
		errf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	char e[512];
	struct cats_te *te = cats_te_load_mem(p ? p : "", len, l, gen0, e,
	    sizeof(e));
	if (p)
		munmap(p, len);
	if (te == NULL)
		errf(err, errlen, "%s: %s", path, e);
	return te;
}
