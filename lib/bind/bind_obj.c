/*
 * bind_obj.c - what many flows share, interned once and reference-counted
 * (bind_int.h): strings (forwarder ids, CS-IDs, tenants), classes (a
 * decision and a flow's service side), paths (encapsulation, segments,
 * tunnel destination) and IPv6 clients, with their admission counts.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind/bind_int.h"

/* ---- strings ---- */

struct skey {
	const char *s;
	size_t n;
};

static bool
str_eq(const void *item, const void *key)
{
	const struct bstr *b = item;
	const struct skey *k = key;
	return b->len == k->n && memcmp(b->s, k->s, k->n) == 0;
}

/* The few forwarders and services come up again and again. */
static struct bstr *
mru_find(const struct bind_table *t, const char *s, size_t n)
{
	for (unsigned i = 0; i < CATS_ARRAY_LEN(t->mru); i++) {
		const struct bstr *b = t->mru[i];
		if (b != NULL && b->len == n && memcmp(b->s, s, n) == 0)
			return (struct bstr *)b;
	}
	return NULL;
}

static void
mru_add(struct bind_table *t, struct bstr *b)
{
	t->mru[t->mru_pos++ % CATS_ARRAY_LEN(t->mru)] = b;
}

struct bstr *
bt_str_find(const struct bind_table *t, const char *s)
{
	if (s == NULL)
		return NULL;
	struct skey k = { s, strlen(s) };
	struct bstr *b = mru_find(t, s, k.n);
	if (b != NULL)
		return b;
	b = cats_htab_get(&t->strs, cats_hash(s, k.n), str_eq, &k);
	if (b != NULL)
		mru_add((struct bind_table *)t, b);
	return b;
}

/* A reference to the interned s (created if new); NULL for NULL or OOM. */
struct bstr *
bt_str_get(struct bind_table *t, const char *s)
{
	if (s == NULL)
		return NULL;
	struct skey k = { s, strlen(s) };
	struct bstr *b = mru_find(t, s, k.n);
	if (b != NULL) {
		b->refs++;
		return b;
	}
	uint64_t h = cats_hash(s, k.n);
	b = cats_htab_get(&t->strs, h, str_eq, &k);
	if (b == NULL) {
		b = calloc(1, sizeof(*b) + k.n + 1);
		if (b == NULL)
			return NULL;
		b->h = h;
		b->len = (uint32_t)k.n;
		memcpy(b->s, s, k.n);
		b->id = bs_hvec_add(&t->hstr, b);
		if (b->id == 0 || cats_htab_put(&t->strs, h, b) < 0) {
			if (b->id != 0)
				bs_hvec_del(&t->hstr, b->id);
			free(b);
			return NULL;
		}
		t->k.strings++;
	}
	mru_add(t, b);
	b->refs++;
	return b;
}

void
bt_str_put(struct bind_table *t, struct bstr *b)
{
	if (b == NULL || --b->refs > 0)
		return;
	struct skey k = { b->s, b->len };
	cats_htab_del(&t->strs, b->h, str_eq, &k);
	bs_hvec_del(&t->hstr, b->id);
	for (unsigned i = 0; i < CATS_ARRAY_LEN(t->mru); i++)
		if (t->mru[i] == b)
			t->mru[i] = NULL;
	t->k.strings--;
	free(b);
}

/* ---- classes ---- */

static bool
class_eq(const void *item, const void *key)
{
	return memcmp(&((const struct bclass *)item)->k, key,
	    sizeof(struct bclass_key)) == 0;
}

/* Intern a class; takes over the key's string references either way. */
uint32_t
bt_class_get(struct bind_table *t, struct bclass_key *k)
{
	struct bstr *strs[] = { k->ingress, k->egress, k->cs_id, k->csci_id,
		k->tenant };
	struct bclass *c = NULL;
	for (unsigned i = 0; i < CATS_ARRAY_LEN(t->cmru) && c == NULL; i++)
		if (t->cmru[i] != NULL && class_eq(t->cmru[i], k))
			c = t->cmru[i];
	uint64_t h = 0;
	if (c == NULL) {
		h = cats_hash(k, sizeof(*k));
		c = cats_htab_get(&t->classes, h, class_eq, k);
		if (c != NULL)
			t->cmru[t->cmru_pos++ % CATS_ARRAY_LEN(t->cmru)] = c;
	}
	if (c != NULL) {
		for (size_t i = 0; i < CATS_ARRAY_LEN(strs); i++)
			bt_str_put(t, strs[i]);
		c->refs++;
		return c->handle;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		goto fail;
	c->k = *k;
	c->h = h;
	c->refs = 1;
	c->handle = bs_hvec_add(&t->hclass, c);
	if (c->handle == 0)
		goto fail;
	if (cats_htab_put(&t->classes, h, c) < 0) {
		bs_hvec_del(&t->hclass, c->handle);
		goto fail;
	}
	t->k.classes++;
	t->cmru[t->cmru_pos++ % CATS_ARRAY_LEN(t->cmru)] = c;
	return c->handle;
fail:
	free(c);
	for (size_t i = 0; i < CATS_ARRAY_LEN(strs); i++)
		bt_str_put(t, strs[i]);
	return 0;
}

void
bt_class_put(struct bind_table *t, uint32_t handle)
{
	if (handle == 0)
		return;
	struct bclass *c = t->hclass.v[handle];
	if (--c->refs > 0)
		return;
	cats_htab_del(&t->classes, c->h, class_eq, &c->k);
	bs_hvec_del(&t->hclass, handle);
	for (unsigned i = 0; i < CATS_ARRAY_LEN(t->cmru); i++)
		if (t->cmru[i] == c)
			t->cmru[i] = NULL;
	bt_str_put(t, c->k.ingress);
	bt_str_put(t, c->k.egress);
	bt_str_put(t, c->k.cs_id);
	bt_str_put(t, c->k.csci_id);
	bt_str_put(t, c->k.tenant);
	t->k.classes--;
	free(c);
}

void
bt_key_release(struct bind_table *t, struct bclass_key *k)
{
	bt_str_put(t, k->ingress);
	bt_str_put(t, k->tenant);
	bt_str_put(t, k->egress);
	bt_str_put(t, k->cs_id);
	bt_str_put(t, k->csci_id);
	memset(k, 0, sizeof(*k));
}

/* A class key with fresh string references; zeroed padding (it is hashed). */
int
bt_class_key(struct bind_table *t, struct bclass_key *k, const char *ingress,
    const struct cats_flow *f, const struct cats_decision *d)
{
	memset(k, 0, sizeof(*k));
	k->ingress = bt_str_get(t, ingress);
	k->tenant = bt_str_get(t, f->tenant ? f->tenant : "");
	if (k->ingress == NULL || k->tenant == NULL)
		goto fail;
	k->dst = f->dst;
	memset(k->dst.a + (k->dst.af == 4 ? 4 : 16), 0,
	    k->dst.af == 4 ? 12 : 0);
	k->proto = (uint8_t)f->proto;
	if (CATS_HAS(f, FLOW, dport)) {
		k->dport = (uint16_t)f->dport;
		k->has |= K_DPORT;
	}
	if (d == NULL)
		return 0;
	k->has |= K_DECIDED;
	k->egress = bt_str_get(t, d->egress);
	k->cs_id = bt_str_get(t, d->cs_id);
	k->csci_id = bt_str_get(t, d->csci_id);
	if (k->egress == NULL || k->cs_id == NULL || k->csci_id == NULL)
		goto fail;
	k->locator = d->locator;
	if (CATS_HAS(d, DEC, port)) {
		k->port = (uint16_t)d->port;
		k->has |= K_PORT;
	}
	if (CATS_HAS(d, DEC, cst_gen)) {
		k->cst_gen = d->cst_gen;
		k->has |= K_CST;
	}
	if (CATS_HAS(d, DEC, nst_gen)) {
		k->nst_gen = d->nst_gen;
		k->has |= K_NST;
	}
	if (CATS_HAS(d, DEC, on_failure)) {
		k->on_failure = (uint8_t)d->on_failure;
		k->has |= K_ONFAIL;
	}
	k->idle_ms = (uint32_t)(CATS_HAS(d, DEC, idle_ms) ? d->idle_ms :
	    t->c.idle_ms);
	k->hard_ms = (uint32_t)(CATS_HAS(d, DEC, hard_ms) ? d->hard_ms :
	    t->c.hard_ms);
	return 0;
fail:
	bt_key_release(t, k);
	return -1;
}

/* Does decision d name the instance class c was decided for? */
bool
bt_same_instance(const struct bclass *c, const struct cats_decision *d)
{
	const struct bclass_key *k = &c->k;
	return (k->has & K_DECIDED) && strcmp(k->csci_id->s, d->csci_id) == 0 &&
	    strcmp(k->egress->s, d->egress) == 0 &&
	    strcmp(k->cs_id->s, d->cs_id) == 0 &&
	    cats_ip_eq(&k->locator, &d->locator) &&
	    ((k->has & K_PORT) != 0) == (CATS_HAS(d, DEC, port) != 0) &&
	    (!(k->has & K_PORT) || k->port == d->port);
}

/* Is d exactly the decision of c (instance and metric generations)? */
bool
bt_same_decision(const struct bclass *c, const struct cats_decision *d)
{
	const struct bclass_key *k = &c->k;
	if (!bt_same_instance(c, d))
		return false;
	if (((k->has & K_CST) != 0) != (CATS_HAS(d, DEC, cst_gen) != 0) ||
	    ((k->has & K_NST) != 0) != (CATS_HAS(d, DEC, nst_gen) != 0))
		return false;
	return (!(k->has & K_CST) || k->cst_gen == d->cst_gen) &&
	    (!(k->has & K_NST) || k->nst_gen == d->nst_gen);
}

/* ---- paths ---- */

static uint64_t
pkey_hash(const struct pkey *k)
{
	uint8_t b[16 * 17 + 64];
	size_t n = 0;
	memset(b, 0, sizeof(b));
	b[n++] = k->encap;
	b[n++] = k->n;
	b[n++] = k->has;
	memcpy(b + n, &k->path_id, 8);
	n += 8;
	memcpy(b + n, &k->gen, 8);
	n += 8;
	memcpy(b + n, &k->tunnel_dst, sizeof(k->tunnel_dst));
	n += sizeof(k->tunnel_dst);
	for (uint8_t i = 0; i < k->n; i++) {
		if (k->sids != NULL) {
			memcpy(b + n, &k->sids[i], sizeof(struct cats_ip));
			n += sizeof(struct cats_ip);
		} else {
			memcpy(b + n, &k->labels[i], 8);
			n += 8;
		}
	}
	uint64_t h = cats_hash(b, n);
	if (k->nlen > 0)
		h ^= cats_hash(k->nodes, k->nlen) * UINT64_C(0x9E3779B97F4A7C15);
	return h;
}

static bool
path_eq(const void *item, const void *key)
{
	const struct bpath *p = item;
	const struct pkey *k = key;
	if (p->encap != k->encap || p->n != k->n || p->has != k->has ||
	    p->path_id != k->path_id || p->gen != k->gen ||
	    memcmp(&p->tunnel_dst, &k->tunnel_dst, sizeof(k->tunnel_dst)) != 0 ||
	    p->nlen != k->nlen || (k->nlen > 0 &&
	    memcmp(p->nodes, k->nodes, k->nlen) != 0))
		return false;
	if ((p->sids != NULL) != (k->sids != NULL))
		return false;
	if (p->sids != NULL)
		return memcmp(p->sids, k->sids, k->n * sizeof(struct cats_ip)) == 0;
	return k->n == 0 || memcmp(p->labels, k->labels, k->n * 8) == 0;
}

/*
 * A slot of the path cache, by a cheap hash of the key's identity.  The
 * cache only saves the keyed hash and the table probe: a path found there
 * is compared whole, and colliding keys merely miss.
 */
static unsigned
pkey_slot(const struct pkey *k)
{
	uint64_t x = k->path_id ^ (k->gen << 20) ^ ((uint64_t)k->encap << 56) ^
	    ((uint64_t)k->n << 48) ^ ((uint64_t)k->has << 40);
	uint64_t y = 0;
	if (k->n > 0 && k->sids != NULL)
		memcpy(&y, k->sids[k->n - 1].a + 8, 8);
	else if (k->n > 0)
		y = k->labels[k->n - 1];
	else
		memcpy(&y, k->tunnel_dst.a, 8);
	x = (x ^ y) * UINT64_C(0x9E3779B97F4A7C15);
	return (unsigned)(x >> 58);
}

uint32_t
bt_path_get(struct bind_table *t, const struct pkey *k)
{
	unsigned slot = pkey_slot(k);
	struct bpath *p = t->pcache[slot];
	if (p != NULL && path_eq(p, k)) {
		p->refs++;
		return p->handle;
	}
	uint64_t h = pkey_hash(k);
	p = cats_htab_get(&t->paths, h, path_eq, k);
	if (p != NULL) {
		t->pcache[slot] = p;
		p->refs++;
		return p->handle;
	}
	size_t extra = k->sids ? k->n * sizeof(struct cats_ip) : k->n * 8;
	/* The nodes' names, then the nodes: after the segments, aligned. */
	size_t nn = 0;
	for (size_t i = 1; i < k->nlen; i++)
		nn += k->nodes[i] == '\0';
	size_t at = (sizeof(*p) + extra + _Alignof(const char *) - 1) &
	    ~(_Alignof(const char *) - 1);
	p = calloc(1, at + nn * sizeof(const char *) + k->nlen);
	if (p == NULL)
		return 0;
	p->h = h;
	p->refs = 1;
	p->encap = k->encap;
	p->n = k->n;
	p->has = k->has;
	p->path_id = k->path_id;
	p->gen = k->gen;
	p->tunnel_dst = k->tunnel_dst;
	if (k->sids != NULL) {
		p->sids = (struct cats_ip *)(p + 1);
		memcpy(p->sids, k->sids, extra);
	} else if (k->n > 0) {
		p->labels = (uint64_t *)(p + 1);
		memcpy(p->labels, k->labels, extra);
	}
	if (k->nlen > 0) {
		p->names = (const char **)(void *)((char *)p + at);
		p->nodes = (char *)(p->names + nn);
		memcpy(p->nodes, k->nodes, k->nlen);
		p->nlen = k->nlen;
		for (size_t i = 0; i + 1 < k->nlen; i++)
			if (p->nodes[i] == '\0')
				p->names[p->nn++] = p->nodes + i + 1;
	}
	p->handle = bs_hvec_add(&t->hpath, p);
	if (p->handle == 0 || cats_htab_put(&t->paths, h, p) < 0) {
		if (p->handle)
			bs_hvec_del(&t->hpath, p->handle);
		free(p);
		return 0;
	}
	t->k.paths++;
	t->pcache[slot] = p;
	return p->handle;
}

/* Drop a path reference; the path goes with the last one (001: not before). */
void
bt_path_put(struct bind_table *t, uint32_t handle)
{
	if (handle == 0)
		return;
	struct bpath *p = t->hpath.v[handle];
	if (--p->refs > 0)
		return;
	struct pkey k = { p->encap, p->n, p->has, p->sids, p->labels,
		p->tunnel_dst, p->path_id, p->gen, p->nodes, p->nlen };
	cats_htab_del(&t->paths, p->h, path_eq, &k);
	bs_hvec_del(&t->hpath, handle);
	if (t->pcache[pkey_slot(&k)] == p)
		t->pcache[pkey_slot(&k)] = NULL;
	t->k.paths--;
	t->k.paths_released++;
	free(p);
}

/* ---- forwarders' capabilities ---- */

/* The number after "NAME=" in token w, or -1. */
static int
cap_num(const char *w, const char *name)
{
	size_t n = strlen(name);
	if (strncmp(w, name, n) != 0 || w[n] != '=')
		return -1;
	char *end;
	unsigned long v = strtoul(w + n + 1, &end, 10);
	return *end == '\0' && end != w + n + 1 && v <= 255 ? (int)v : -1;
}

void
bt_caps_set(struct bstr *f, const struct cats_arr_text *caps)
{
	static const struct { const char *w; uint8_t bit; } dp[] = {
		{ "ip", CAP_IP }, { "ipip4", CAP_IPIP4 }, { "ipip6", CAP_IPIP6 },
		{ "srv6", CAP_SRV6 }, { "srmpls", CAP_SRMPLS },
	};
	int v;
	f->caps = CAP_KNOWN;
	f->srv6_msd = f->mpls_msd = 0;
	for (size_t i = 0; i < caps->n; i++) {
		const char *w = caps->v[i];
		for (size_t j = 0; j < CATS_ARRAY_LEN(dp); j++)
			if (strcmp(w, dp[j].w) == 0)
				f->caps |= dp[j].bit;
		if ((v = cap_num(w, "srv6-msd")) >= 0)
			f->srv6_msd = (uint8_t)v;
		else if ((v = cap_num(w, "srmpls-msd")) >= 0)
			f->mpls_msd = (uint8_t)v;
	}
	/* A data plane without its depth pushes what a binding holds. */
	if ((f->caps & CAP_SRV6) && f->srv6_msd == 0)
		f->srv6_msd = 16;
	if ((f->caps & CAP_SRMPLS) && f->mpls_msd == 0)
		f->mpls_msd = 16;
}

/* The advertised bit of data plane dp (IP-in-IP: of the outer family). */
static uint8_t
cap_bit(int dp, int outer_af)
{
	switch (dp) {
	case CATS_DP_IP:
		return CAP_IP;
	case CATS_DP_IPIP:
		return outer_af == 6 ? CAP_IPIP6 : outer_af == 4 ? CAP_IPIP4 :
		    CAP_IPIP4 | CAP_IPIP6;
	case CATS_DP_SRV6:
		return CAP_SRV6;
	default:
		return CAP_SRMPLS;
	}
}

int
bt_caps_msd(const struct bind_table *t, const char *fwd, int dp)
{
	const struct bstr *f = bt_str_find(t, fwd);
	if (f == NULL || !(f->caps & CAP_KNOWN))
		return -1;
	return dp == CATS_DP_SRV6 ? f->srv6_msd : dp == CATS_DP_SRMPLS ?
	    f->mpls_msd : -1;
}

int
bt_caps_reask(const struct bind_table *t, const char *headend,
    const char *egress, int dp, int outer_af, const struct cats_arr_text *dps)
{
	const struct bstr *h = headend ? bt_str_find(t, headend) : NULL;
	const struct bstr *g = egress ? bt_str_find(t, egress) : NULL;
	if (t->c.dataplanes != 0 || h == NULL || g == NULL ||
	    !(h->caps & CAP_KNOWN) || !(g->caps & CAP_KNOWN) ||
	    (g->caps & cap_bit(dp, outer_af)))
		return -1;
	for (size_t i = 0; i < dps->n; i++) {
		int d = cats_enum_index(cats_dataplane_names, dps->v[i],
		    strlen(dps->v[i]));
		if (d >= 0 && d != dp && (h->caps & g->caps & cap_bit(d, 0)))
			return d;
	}
	return -1;
}

/*
 * Can the path (data plane dp, nsegs segments, IP-in-IP outer family
 * outer_af) be realized by what its forwarders advertised?  The headend
 * pushes it (data plane and MSD), the egress takes it off and sends the
 * return path the same way (data plane).  A forwarder that advertised
 * nothing is not judged; --dataplanes, when given, stands for every
 * forwarder's data planes (the MSD still counts).
 */
static int
caps_check(struct bind_table *t, const char *headend, const char *egress,
    int dp, size_t nsegs, int outer_af)
{
	const char *who[2] = { headend, egress };
	uint8_t bit = cap_bit(dp, outer_af);
	for (int i = 0; i < 2; i++) {
		const struct bstr *f = who[i] ? bt_str_find(t, who[i]) : NULL;
		if (f == NULL || !(f->caps & CAP_KNOWN))
			continue;
		if (t->c.dataplanes == 0 && !(f->caps & bit)) {
			snprintf(t->msg, sizeof(t->msg), "%s %s does not "
			    "advertise %s%s", i ? "egress" : "headend", f->s,
			    cats_dataplane_names[dp], dp != CATS_DP_IPIP ? "" :
			    outer_af == 6 ? " (ipip6)" : " (ipip4)");
			return BR_PATH_CAPABILITY;
		}
		int msd = dp == CATS_DP_SRV6 ? f->srv6_msd : dp ==
		    CATS_DP_SRMPLS ? f->mpls_msd : -1;
		if (i == 0 && msd > 0 && nsegs > (size_t)msd) {
			snprintf(t->msg, sizeof(t->msg), "%s path of %zu "
			    "segments, headend %s pushes at most %d",
			    cats_dataplane_names[dp], nsegs, f->s, msd);
			return BR_PATH_CAPABILITY;
		}
	}
	return BR_OK;
}

uint16_t
bt_nodes_join(const struct cats_arr_text *path, char *buf, size_t cap)
{
	size_t nl = 0;
	for (size_t i = 0; i < path->n; i++) {
		size_t l = strlen(path->v[i]);
		if (nl + l + 2 > cap || nl + l + 2 > UINT16_MAX)
			return 0;
		buf[nl++] = '\0';
		memcpy(buf + nl, path->v[i], l);
		nl += l;
	}
	if (nl == 0)
		return 0;
	buf[nl++] = '\0';
	return (uint16_t)nl;
}

void
bt_pkey_finish(struct pkey *k, bool has_pid, uint64_t pid, bool has_gen,
    uint64_t gen, const struct cats_arr_text *path, char *nodes)
{
	if (has_pid) {
		k->path_id = pid;
		k->has |= P_PID;
	}
	if (has_gen) {
		k->gen = gen;
		k->has |= P_GEN;
	}
	k->nlen = bt_nodes_join(path, nodes, BIND_PATH_NODES_MAX);
	k->nodes = k->nlen ? nodes : NULL;
}

/*
 * The path of a reply as the headend can realize it, or a reason why not
 * (001: a path the headend cannot represent is a path failure).
 */
int
bt_path_from_rep(struct bind_table *t, const struct cats_path_rep *r,
    uint32_t *handle)
{
	struct cats_ip sids[16];
	uint64_t labels[16];
	struct pkey k;
	memset(&k, 0, sizeof(k));
	memset(sids, 0, sizeof(sids));
	int dp = CATS_HAS(r, PRP, dataplane) ? r->dataplane : CATS_DP_IP;
	if (t->c.dataplanes != 0 && !(t->c.dataplanes & (1u << dp))) {
		snprintf(t->msg, sizeof(t->msg), "data plane %s is not "
		    "supported", cats_dataplane_names[dp]);
		return BR_PATH_CAPABILITY;
	}
	k.encap = (uint8_t)dp;
	switch (dp) {
	case CATS_DP_SRV6:
	case CATS_DP_SRMPLS:
		if (r->segments.n == 0 || r->segments.n > 16) {
			snprintf(t->msg, sizeof(t->msg), "%s path of %zu "
			    "segments (1 to 16)", cats_dataplane_names[dp],
			    r->segments.n);
			return BR_PATH_CAPABILITY;
		}
		for (size_t i = 0; i < r->segments.n; i++) {
			const struct cats_segment *s = &r->segments.v[i];
			if (dp == CATS_DP_SRV6 && s->sid.af != 6) {
				snprintf(t->msg, sizeof(t->msg), "segment %zu "
				    "has no SRv6 SID", i);
				return BR_PATH_CAPABILITY;
			}
			if (dp == CATS_DP_SRMPLS && !CATS_HAS(s, SEG, label)) {
				snprintf(t->msg, sizeof(t->msg), "segment %zu "
				    "has no label", i);
				return BR_PATH_CAPABILITY;
			}
			if (dp == CATS_DP_SRV6)
				sids[i] = s->sid;
			else
				labels[i] = s->label;
		}
		k.n = (uint8_t)r->segments.n;
		if (dp == CATS_DP_SRV6)
			k.sids = sids;
		else
			k.labels = labels;
		break;
	case CATS_DP_IPIP:
		if (r->endpoint_addr.af == 0) {
			snprintf(t->msg, sizeof(t->msg), "ipip path without "
			    "endpoint_addr");
			return BR_PATH_CAPABILITY;
		}
		k.tunnel_dst = r->endpoint_addr;
		break;
	default:
		break;
	}
	const char *egress = r->endpoint ? r->endpoint :
	    CATS_HAS(r, PRP, decision) ? r->decision.egress : NULL;
	int rc = caps_check(t, r->ingress ? r->ingress : r->headend, egress,
	    dp, k.n, k.tunnel_dst.af);
	if (rc != BR_OK)
		return rc;
	/* Its nodes, for bind_net() and the binding's path list. */
	char nodes[BIND_PATH_NODES_MAX];
	bt_pkey_finish(&k, CATS_HAS(r, PRP, path_id), r->path_id,
	    CATS_HAS(r, PRP, gen), r->gen, &r->path, nodes);
	*handle = bt_path_get(t, &k);
	return *handle ? BR_OK : BR_NOMEM;
}

/* ---- clients ---- */

/* What an IPv6 client is interned by. */
struct v6key {
	uint8_t a[16];
	uint32_t tid;
};

static bool
v6_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct bind_table *t = ctx;
	const struct bv6 *v = v6_at(t, i);
	const struct v6key *k = key;
	return v->tid == k->tid && memcmp(v->a, k->a, 16) == 0;
}

static struct v6key
v6key_make(const struct bstr *tenant, const uint8_t a[16])
{
	struct v6key k;
	memcpy(k.a, a, 16);
	k.tid = tenant->id;
	return k;
}

/* The handle of an IPv6 client, 0 if there is none. */
uint32_t
bt_v6_find(const struct bind_table *t, const struct bstr *tenant,
    const uint8_t a[16])
{
	struct v6key k = v6key_make(tenant, a);
	return bs_cidx_find(&t->by_v6, cats_hash(&k, sizeof(k)), v6_eq, t, &k);
}

/* A reference to the IPv6 client (tenant, a), created if new; 0 on OOM. */
static uint32_t
v6_get(struct bind_table *t, const struct bstr *tenant, const uint8_t a[16])
{
	struct v6key k = v6key_make(tenant, a);
	uint64_t h = cats_hash(&k, sizeof(k));
	uint32_t i = bs_cidx_find(&t->by_v6, h, v6_eq, t, &k);
	if (i != 0) {
		v6_at(t, i)->refs++;
		return i;
	}
	if ((i = bs_slab_alloc(&t->v6s)) == 0)
		return 0;
	struct bv6 *v = v6_at(t, i);
	memcpy(v->a, a, 16);
	v->tid = k.tid;
	v->refs = 1;
	if (bs_cidx_put(&t->by_v6, h, i) < 0) {
		bs_slab_free(&t->v6s, i);
		return 0;
	}
	return i;
}

void
bt_v6_put(struct bind_table *t, uint32_t i)
{
	struct bv6 *v = v6_at(t, i);
	if (--v->refs > 0)
		return;
	struct v6key k;
	memcpy(k.a, v->a, 16);
	k.tid = v->tid;
	bs_cidx_del(&t->by_v6, cats_hash(&k, sizeof(k)), i);
	bs_slab_free(&t->v6s, i);
}

/* The entry's reference to its client; -1 on OOM (IPv6). */
int
bt_src_ref(struct bind_table *t, const struct bstr *tenant,
    const struct cats_ip *src, uint32_t *ref)
{
	if (src->af == 6)
		return (*ref = v6_get(t, tenant, src->a)) != 0 ? 0 : -1;
	memcpy(ref, src->a, 4);
	return 0;
}

void
bt_src_unref(struct bind_table *t, const struct bent *e)
{
	if (is_v6(t, e))
		bt_v6_put(t, e->client);
}

/* The bindings of e's client. */
uint32_t
bt_client_nbind(const struct bind_table *t, const struct bent *e)
{
	const struct bclass *c = cls(t, e);
	if (c->k.dst.af == 6)
		return v6_at(t, e->client)->nbind;
	struct bs_ckey k = ckey_make(c->k.tenant, e->client);
	const struct bs_ccount *n = bs_ctab_find(&t->counts, &k, ckey_tag(t, &k));
	return n ? n->nbind : 0;
}
