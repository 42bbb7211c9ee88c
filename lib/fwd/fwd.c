/*
 * fwd.c - flow and binding table of a CATS-Forwarder (see fwd.h).
 */
#include <stdlib.h>
#include <string.h>

#include "fwd/fwd.h"

const char *const cats_fwd_reason_names[] = {
	"none", "pending-flow-full", "pending-pool-full", "pending-flows-full",
	"pending-client-full", "fenced", "stale-version", "flow-bound",
	"unknown-binding", "not-mine", "bad-binding", "unsupported-encap",
	"table-full", "no-memory",
	NULL
};

#define CLIENT_BUCKETS 65536

static bool
key_eq_bind(const void *item, const void *key)
{
	const struct cats_fbind *b = item;
	const struct cats_fkey *k = key;
	return b->keyed[k->dir] && memcmp(&b->keys[k->dir], k, sizeof(*k)) == 0;
}

static bool
key_eq_pend(const void *item, const void *key)
{
	const struct cats_pend *p = item;
	return memcmp(&p->key, key, sizeof(p->key)) == 0;
}

static bool
id_eq_bind(const void *item, const void *key)
{
	return ((const struct cats_fbind *)item)->id == *(const uint64_t *)key;
}

static bool
txn_eq_pend(const void *item, const void *key)
{
	return ((const struct cats_pend *)item)->txn == *(const uint64_t *)key;
}

static uint64_t
key_hash(const struct cats_fkey *k)
{
	return cats_hash(k, sizeof(*k));
}

static uint64_t
u64_hash(uint64_t v)
{
	return cats_hash(&v, sizeof(v));
}

size_t
cats_fwd_flow_bytes(void)
{
	/* Keys and id of the binding, key and txn of the pending record;
	 * a table of n slots grows at 3/4 full to 2n, so 8/3 slots each. */
	size_t slots = (CATS_DIR__N + 1 + 2) * 8 / 3 + 1;
	return sizeof(struct cats_fbind) + sizeof(struct cats_pend) +
	    sizeof(struct cats_held) + 256 + slots * sizeof(struct cats_hslot) +
	    3 * 16;
}

int
cats_fwd_init(struct cats_fwd *t, const struct cats_fwd_conf *c)
{
	memset(t, 0, sizeof(*t));
	t->c = *c;
	if (t->c.pend_pkts_flow == 0)
		t->c.pend_pkts_flow = 8;
	if (t->c.pend_pkts == 0)
		t->c.pend_pkts = 4096;
	if (t->c.pend_flows == 0)
		t->c.pend_flows = 4096;
	if (t->c.pend_client == 0)
		t->c.pend_client = 64;
	if (t->c.pend_ms == 0)
		t->c.pend_ms = 1000;
	if (t->c.max_bindings == 0)
		t->c.max_bindings = 1u << 20;
	if (t->c.max_pkt == 0)
		t->c.max_pkt = 65536 + 64;
	if (t->c.msd == 0 || t->c.msd > CATS_PKT_MAX_SIDS)
		t->c.msd = CATS_PKT_MAX_SIDS;
	t->client_pend = calloc(CLIENT_BUCKETS, sizeof(*t->client_pend));
	return t->client_pend ? 0 : -1;
}

static void
pend_free(struct cats_fwd *t, struct cats_pend *p)
{
	cats_fwd_held_free(t, p->head);
	free(p);
}

void
cats_fwd_free(struct cats_fwd *t)
{
	for (size_t i = 0; i < t->pend_by_key.cap; i++)
		if (t->pend_by_key.s[i].h)
			pend_free(t, t->pend_by_key.s[i].item);
	for (size_t i = 0; i < t->bind_by_id.cap; i++) {
		if (t->bind_by_id.s[i].h == 0)
			continue;
		struct cats_fbind *b = t->bind_by_id.s[i].item;
		free(b->fb_egress);
		free(b);
	}
	cats_htab_free(&t->bind_by_key);
	cats_htab_free(&t->bind_by_id);
	cats_htab_free(&t->pend_by_key);
	cats_htab_free(&t->pend_by_txn);
	free(t->client_pend);
	memset(t, 0, sizeof(*t));
}

/* ---- keys ---- */

void
cats_fkey_from_pkt(struct cats_fkey *k, const struct cats_pkt *pk, int dir,
    uint64_t tenant)
{
	size_t al = pk->af == 4 ? 4 : 16;
	memset(k, 0, sizeof(*k));
	k->af = pk->af;
	k->proto = pk->proto;
	k->dir = (uint8_t)dir;
	if (pk->has_ports) {
		k->sport = pk->sport;
		k->dport = pk->dport;
	}
	memcpy(k->src, cats_pkt_src(pk), al);
	memcpy(k->dst, cats_pkt_dst(pk), al);
	k->tenant = dir == CATS_DIR_IN_FWD ? tenant : 0;
}

int
cats_fkey_from_flow(struct cats_fkey *k, const struct cats_flow *f, int dir)
{
	memset(k, 0, sizeof(*k));
	if (f->src.af != f->dst.af || (f->src.af != 4 && f->src.af != 6))
		return -1;
	k->af = f->src.af;
	k->proto = (uint8_t)f->proto;
	k->dir = (uint8_t)dir;
	size_t al = k->af == 4 ? 4 : 16;
	memcpy(k->src, f->src.a, al);
	memcpy(k->dst, f->dst.a, al);
	if (CATS_HAS(f, FLOW, sport))
		k->sport = (uint16_t)f->sport;
	else
		k->wild |= CATS_WILD_SPORT;
	if (CATS_HAS(f, FLOW, dport))
		k->dport = (uint16_t)f->dport;
	else
		k->wild |= CATS_WILD_DPORT;
	if (dir == CATS_DIR_IN_FWD && f->tenant != NULL && f->tenant[0])
		k->tenant = cats_hash_str(f->tenant);
	return 0;
}

void
cats_fkey_to_flow(const struct cats_fkey *k, struct cats_flow *f,
    const char *tenant)
{
	memset(f, 0, sizeof(*f));
	f->proto = k->proto;
	f->src.af = f->dst.af = k->af;
	size_t al = k->af == 4 ? 4 : 16;
	memcpy(f->src.a, k->src, al);
	memcpy(f->dst.a, k->dst, al);
	f->has = UINT64_C(1) << CATS_FLOW_proto | UINT64_C(1) << CATS_FLOW_src |
	    UINT64_C(1) << CATS_FLOW_dst;
	CATS_SET_IF(!(k->wild & CATS_WILD_SPORT), f, FLOW, sport, k->sport);
	CATS_SET_IF(!(k->wild & CATS_WILD_DPORT), f, FLOW, dport, k->dport);
	if (tenant != NULL && tenant[0]) {
		f->tenant = tenant;
		f->has |= UINT64_C(1) << CATS_FLOW_tenant;
	}
}

struct cats_fbind *
cats_fwd_lookup(struct cats_fwd *t, const struct cats_fkey *k)
{
	struct cats_fbind *b = cats_htab_get(&t->bind_by_key, key_hash(k),
	    key_eq_bind, k);
	if (b != NULL || t->wild_keys == 0)
		return b;
	struct cats_fkey w = *k;
	for (uint8_t wild = 1; wild <= 3; wild++) {
		w.wild = wild;
		w.sport = (wild & CATS_WILD_SPORT) ? 0 : k->sport;
		w.dport = (wild & CATS_WILD_DPORT) ? 0 : k->dport;
		b = cats_htab_get(&t->bind_by_key, key_hash(&w), key_eq_bind,
		    &w);
		if (b != NULL)
			return b;
	}
	return NULL;
}

struct cats_fbind *
cats_fwd_by_id(struct cats_fwd *t, uint64_t id)
{
	return cats_htab_get(&t->bind_by_id, u64_hash(id), id_eq_bind, &id);
}

struct cats_pend *
cats_fwd_pending(struct cats_fwd *t, const struct cats_fkey *k)
{
	return cats_htab_get(&t->pend_by_key, key_hash(k), key_eq_pend, k);
}

/* ---- pending ---- */

static uint32_t
client_bucket(const struct cats_fkey *k)
{
	uint8_t b[17];
	b[0] = k->af;
	memcpy(b + 1, k->src, 16);
	return (uint32_t)(cats_hash(b, sizeof(b)) & (CLIENT_BUCKETS - 1));
}

static struct cats_held *
held_new(const uint8_t *pkt, size_t len, uint32_t port, uint64_t now)
{
	struct cats_held *h = malloc(sizeof(*h) + len);
	if (h == NULL)
		return NULL;
	h->next = NULL;
	h->port = port;
	h->len = (uint32_t)len;
	h->arrived = now;
	h->arrived_us = h->asked_us = 0;
	memcpy(h->data, pkt, len);
	return h;
}

int
cats_fwd_hold(struct cats_fwd *t, const struct cats_fkey *k,
    const uint8_t *pkt, size_t len, uint32_t port, uint64_t now,
    struct cats_pend **out)
{
	struct cats_pend *p = cats_fwd_pending(t, k);
	if (len > t->c.max_pkt)
		return -CATS_FR_BAD;
	if (p != NULL) {
		*out = p;
		if (p->npkts >= t->c.pend_pkts_flow)
			return -CATS_FR_PEND_FLOW_FULL;
		if (t->st.held >= t->c.pend_pkts)
			return -CATS_FR_PEND_POOL_FULL;
		struct cats_held *h = held_new(pkt, len, port, now);
		if (h == NULL)
			return -CATS_FR_NOMEM;
		p->tail->next = h;
		p->tail = h;
		p->npkts++;
		t->st.held++;
		t->st.pend_joined++;
		return CATS_PEND_JOINED;
	}
	*out = NULL;
	if (t->st.pending >= t->c.pend_flows)
		return -CATS_FR_PEND_FLOWS_FULL;
	uint32_t bk = client_bucket(k);
	if (t->client_pend[bk] >= t->c.pend_client)
		return -CATS_FR_PEND_CLIENT_FULL;
	if (t->st.held >= t->c.pend_pkts)
		return -CATS_FR_PEND_POOL_FULL;
	p = calloc(1, sizeof(*p));
	struct cats_held *h = held_new(pkt, len, port, now);
	if (p == NULL || h == NULL) {
		free(p);
		free(h);
		return -CATS_FR_NOMEM;
	}
	p->key = *k;
	p->txn = ++t->next_txn;
	p->created = now;
	p->deadline = now + t->c.pend_ms;
	p->head = p->tail = h;
	p->npkts = 1;
	p->bucket = bk;
	if (cats_htab_put(&t->pend_by_key, key_hash(k), p) < 0) {
		pend_free(t, p);
		return -CATS_FR_NOMEM;
	}
	if (cats_htab_put(&t->pend_by_txn, u64_hash(p->txn), p) < 0) {
		cats_htab_del(&t->pend_by_key, key_hash(k), key_eq_pend, k);
		pend_free(t, p);
		return -CATS_FR_NOMEM;
	}
	t->client_pend[bk]++;
	t->st.pending++;
	t->st.held++;
	t->st.pend_new++;
	p->older = t->newest;
	if (t->newest != NULL)
		t->newest->newer = p;
	else
		t->oldest = p;
	t->newest = p;
	*out = p;
	return CATS_PEND_NEW;
}

struct cats_held *
cats_fwd_pend_take(struct cats_fwd *t, struct cats_pend *p)
{
	cats_htab_del(&t->pend_by_key, key_hash(&p->key), key_eq_pend, &p->key);
	cats_htab_del(&t->pend_by_txn, u64_hash(p->txn), txn_eq_pend, &p->txn);
	if (p->older != NULL)
		p->older->newer = p->newer;
	else
		t->oldest = p->newer;
	if (p->newer != NULL)
		p->newer->older = p->older;
	else
		t->newest = p->older;
	t->client_pend[p->bucket]--;
	t->st.pending--;
	t->st.held -= p->npkts;
	struct cats_held *h = p->head;
	free(p);
	return h;
}

void
cats_fwd_held_free(struct cats_fwd *t, struct cats_held *h)
{
	(void)t;
	while (h != NULL) {
		struct cats_held *n = h->next;
		free(h);
		h = n;
	}
}

struct cats_pend *
cats_fwd_error(struct cats_fwd *t, const struct cats_error *e)
{
	struct cats_pend *p = NULL;
	if (CATS_HAS(e, ERR, txn))
		p = cats_htab_get(&t->pend_by_txn, u64_hash(e->txn),
		    txn_eq_pend, &e->txn);
	if (p == NULL && CATS_HAS(e, ERR, flow)) {
		struct cats_fkey k;
		if (cats_fkey_from_flow(&k, &e->flow, CATS_DIR_IN_FWD) == 0)
			p = cats_fwd_pending(t, &k);
	}
	return p;
}

/* ---- bindings ---- */

static void
unkey(struct cats_fwd *t, struct cats_fbind *b)
{
	if (b->fast && t->fast_drop != NULL)
		t->fast_drop(b, t->fast_arg);
	for (int d = 0; d < CATS_DIR__N; d++) {
		if (!b->keyed[d])
			continue;
		cats_htab_del(&t->bind_by_key, key_hash(&b->keys[d]),
		    key_eq_bind, &b->keys[d]);
		if (b->keys[d].wild)
			t->wild_keys--;
		b->keyed[d] = false;
	}
}

void
cats_fwd_remove(struct cats_fwd *t, struct cats_fbind *b)
{
	if (cats_fbind_tracked(t, b)) {
		t->st.tcp[b->tcp]--;
		t->st.tcp_released[b->tcp]++;
	}
	unkey(t, b);
	cats_htab_del(&t->bind_by_id, u64_hash(b->id), id_eq_bind, &b->id);
	t->st.bindings--;
	free(b->fb_egress);
	free(b);
}

static bool
is_me(const struct cats_fwd *t, const char *s)
{
	return s != NULL && t->c.id != NULL && strcmp(s, t->c.id) == 0;
}

/*
 * Fill e for a binding's encapsulation of kind; *learn when the path is
 * still to be learned (or configured).  0, -1 for fields that make no
 * sense (bad-binding), -2 for what this forwarder cannot do
 * (unsupported-encap: --encaps, MSD, no source address of the family, no
 * port for MPLS).
 */
#define UNSUPPORTED (-2)
static int
build_encap(const struct cats_fwd *t, struct cats_encap *e, int kind,
    const struct cats_arr_ip *sids, const struct cats_arr_u64 *labels,
    const struct cats_ip *dst, const struct cats_ip *src, bool *learn)
{
	memset(e, 0, sizeof(*e));
	*learn = false;
	e->flowlabel = !t->c.flowlabel_off;
	if (kind < 0 || kind > CATS_DP_SRMPLS)
		return -1;
	if (t->c.encaps && !(t->c.encaps & (1u << kind)))
		return UNSUPPORTED;
	switch (kind) {
	case CATS_DP_IP:
		e->kind = CATS_ENC_NONE;
		return 0;
	case CATS_DP_SRMPLS:
		/* The label stack as the binding names it (a record's forward
		 * half always has one); the return path's is configured
		 * (--return), or with an explicit null and none the ingress
		 * is the next hop. */
		e->kind = CATS_ENC_MPLS;
		e->explicit_null = t->c.explicit_null;
		if (t->c.no_mpls || (labels != NULL &&
		    labels->n > t->c.msd))
			return UNSUPPORTED;
		for (size_t i = 0; labels != NULL && i < labels->n; i++) {
			if (labels->v[i] < CATS_MPLS_FIRST ||
			    labels->v[i] > CATS_MPLS_MAX)
				return -1;
			e->labels[i] = (uint32_t)labels->v[i];
		}
		e->nlabels = labels != NULL ? (unsigned)labels->n : 0;
		*learn = e->nlabels == 0 && !e->explicit_null;
		return 0;
	case CATS_DP_SRV6:
		e->kind = CATS_ENC_SRV6;
		e->outer_af = 6;
		if (sids->n > t->c.msd || !t->c.has_src6)
			return UNSUPPORTED;
		for (size_t i = 0; i < sids->n; i++) {
			if (sids->v[i].af != 6)
				return -1;
			memcpy(e->sids[i], sids->v[i].a, 16);
		}
		e->nsids = (unsigned)sids->n;
		if (e->nsids == 0) {
			/* Learned from the first forward packet (its outer
			 * source): no outer header until then. */
			*learn = true;
			e->outer_af = 0;
		}
		break;
	default:	/* CATS_DP_IPIP */
		e->kind = CATS_ENC_IPIP;
		if (dst != NULL && dst->af != 0) {
			e->outer_af = dst->af;
			memcpy(e->dst, dst->a, 16);
		} else {
			*learn = true;
		}
		break;
	}
	if (src != NULL && src->af != 0) {
		if (e->outer_af && src->af != e->outer_af)
			return -1;
		memcpy(e->src, src->a, 16);
	} else if (e->outer_af == 4 || (*learn && t->c.has_src4 &&
	    !t->c.has_src6)) {
		if (!t->c.has_src4 && !*learn)
			return UNSUPPORTED;
		memcpy(e->src, t->c.src4, 4);
	} else {
		if (!t->c.has_src6 && !*learn)
			return UNSUPPORTED;
		memcpy(e->src, t->c.src6, 16);
	}
	return 0;
}

/*
 * A configured return tunnel toward the binding's owner, so that a
 * restarted egress need not wait for a forward packet to learn it (a
 * client that only receives sends none while the server retransmits).
 */
static void
return_tunnel(const struct cats_fwd *t, struct cats_fbind *b,
    const char *owner)
{
	const struct cats_fwd_ret *rt = NULL;
	for (size_t i = 0; owner != NULL && i < t->c.nret && rt == NULL; i++)
		if (strcmp(t->c.ret[i].id, owner) == 0)
			rt = &t->c.ret[i];
	if (rt == NULL)
		return;
	struct cats_encap *e = &b->renc;
	if (e->kind == CATS_ENC_MPLS && rt->nlabels > 0) {
		memcpy(e->labels, rt->labels, sizeof(e->labels));
		e->nlabels = rt->nlabels;
	} else if (e->kind == CATS_ENC_SRV6 && rt->addr.af == 6 &&
	    t->c.has_src6) {
		memcpy(e->sids[0], rt->addr.a, 16);
		e->nsids = 1;
		e->outer_af = 6;
		memcpy(e->src, t->c.src6, 16);
	} else if (e->kind == CATS_ENC_IPIP && (rt->addr.af == 6 ?
	    t->c.has_src6 : t->c.has_src4)) {
		memcpy(e->dst, rt->addr.a, 16);
		e->outer_af = rt->addr.af;
		if (rt->addr.af == 6)
			memcpy(e->src, t->c.src6, 16);
		else
			memcpy(e->src, t->c.src4, 4);
	} else {
		return;
	}
	b->renc_learn = false;
}

/* Fill b's keys and actions from the record; -1 if unusable, UNSUPPORTED
 * for an encapsulation this forwarder cannot do. */
static int
bind_fill(struct cats_fwd *t, struct cats_fbind *b, const struct cats_binding *r)
{
	const struct cats_bind_fwd *f = &r->fwd;
	const struct cats_bind_rev *v = &r->rev;
	b->ingress = is_me(t, r->ingress);
	b->egress = is_me(t, r->egress) || is_me(t, f->egress);
	if (!b->ingress && !b->egress)
		return -1;
	b->af = f->match.dst.af;
	if (f->locator.af != b->af || v->restore_src.af != b->af ||
	    v->match.src.af != b->af)
		return -1;
	memcpy(b->locator, f->locator.a, 16);
	b->port = CATS_HAS(f, BFW, port) ? (uint16_t)f->port : 0;
	memcpy(b->restore, v->restore_src.a, 16);
	b->restore_port = CATS_HAS(v, BRV, restore_port) ?
	    (uint16_t)v->restore_port : 0;
	bool learn;
	b->fkind = (uint8_t)f->encap;
	b->rkind = (uint8_t)(CATS_HAS(v, BRV, encap) ? v->encap : f->encap);
	int e;
	if (b->ingress && (e = build_encap(t, &b->enc, f->encap, &f->sids,
	    &f->labels, &f->tunnel_dst, &f->tunnel_src, &learn)) < 0)
		return e;
	if (b->ingress && learn)
		return -1;
	if (b->egress) {
		if ((e = build_encap(t, &b->renc, b->rkind, &v->sids, NULL,
		    &v->tunnel_dst, NULL, &b->renc_learn)) < 0)
			return e;
		if (b->renc_learn)
			return_tunnel(t, b, v->owner ? v->owner : r->ingress);
	}
	if (b->ingress) {
		if (cats_fkey_from_flow(&b->keys[CATS_DIR_IN_FWD], &f->match,
		    CATS_DIR_IN_FWD) < 0 ||
		    cats_fkey_from_flow(&b->keys[CATS_DIR_IN_REV], &v->match,
		    CATS_DIR_IN_REV) < 0)
			return -1;
	}
	if (b->egress) {
		struct cats_fkey *k = &b->keys[CATS_DIR_EG_FWD];
		if (cats_fkey_from_flow(k, &f->match, CATS_DIR_EG_FWD) < 0 ||
		    cats_fkey_from_flow(&b->keys[CATS_DIR_EG_REV], &v->match,
		    CATS_DIR_EG_REV) < 0)
			return -1;
		memcpy(k->dst, f->locator.a, 16);
		if (b->port && !(k->wild & CATS_WILD_DPORT))
			k->dport = b->port;
	}
	b->idle_ms = CATS_HAS(r, BND, idle_ms) ? r->idle_ms : 0;
	b->hard_ms = CATS_HAS(r, BND, hard_ms) ? r->hard_ms : 0;
	cats_strlcpy(b->cs_id, r->cs_id ? r->cs_id : "", sizeof(b->cs_id));
	return 0;
}

/* Why binding o gives way to a binding of the manager for its flow. */
static const char *
displaced_why(const struct cats_fwd *t, const struct cats_fbind *o)
{
	if (o->fallback)
		return "fallback-adopted";
	if (o->learned)
		return "learned-replaced";
	return cats_fbind_tcp_why(t, o);
}

/*
 * Bindings whose keys nb takes give way when they are closing TCP
 * connections (a client reusing a 5-tuple after a FIN or a RST was
 * selected afresh) or were made here (a fallback the binding manager
 * adopts, a learned reverse it replaces).
 */
static void
displace(struct cats_fwd *t, const struct cats_fbind *nb)
{
	for (int d = 0; d < CATS_DIR__N; d++) {
		if (!nb->keyed[d])
			continue;
		struct cats_fbind *o = cats_htab_get(&t->bind_by_key,
		    key_hash(&nb->keys[d]), key_eq_bind, &nb->keys[d]);
		if (o == NULL || o->id == nb->id || (!o->fallback &&
		    !o->learned && (!cats_fbind_tracked(t, o) ||
		    !cats_fbind_closing(o))))
			continue;
		if (!o->fallback && !o->learned)
			t->st.tcp_reused++;
		if (t->gone_cb != NULL)
			t->gone_cb(o, displaced_why(t, o), t->gone_arg);
		cats_fwd_remove(t, o);
	}
}

/* Is any key of nb taken by another binding? */
static bool
conflicts(struct cats_fwd *t, const struct cats_fbind *nb)
{
	for (int d = 0; d < CATS_DIR__N; d++) {
		if (!nb->keyed[d])
			continue;
		struct cats_fbind *o = cats_htab_get(&t->bind_by_key,
		    key_hash(&nb->keys[d]), key_eq_bind, &nb->keys[d]);
		if (o != NULL && o->id != nb->id)
			return true;
	}
	return false;
}

static int
rekey(struct cats_fwd *t, struct cats_fbind *b)
{
	for (int d = 0; d < CATS_DIR__N; d++) {
		if (!b->keyed[d])
			continue;
		b->keyed[d] = false;
		if (cats_htab_put(&t->bind_by_key, key_hash(&b->keys[d]), b) < 0)
			return -1;
		b->keyed[d] = true;
		if (b->keys[d].wild)
			t->wild_keys++;
	}
	return 0;
}

/*
 * A new binding, a copy of nb installed at now (its first activity report
 * due a period later), in the table by id and by its flow keys: 0 with
 * *out, or CATS_FR_NOMEM.
 */
static int
add_new(struct cats_fwd *t, const struct cats_fbind *nb, uint64_t now,
    struct cats_fbind **out)
{
	struct cats_fbind *b = malloc(sizeof(*b));
	if (b == NULL)
		return CATS_FR_NOMEM;
	*b = *nb;
	b->installed = b->last = b->reported = now;
	bool ok[CATS_DIR__N];
	memcpy(ok, b->keyed, sizeof(ok));
	memset(b->keyed, 0, sizeof(b->keyed));
	if (cats_htab_put(&t->bind_by_id, u64_hash(b->id), b) < 0) {
		free(b);
		return CATS_FR_NOMEM;
	}
	memcpy(b->keyed, ok, sizeof(ok));
	t->st.bindings++;
	if (cats_fbind_tracked(t, b))
		t->st.tcp[b->tcp]++;
	if (rekey(t, b) < 0) {
		cats_fwd_remove(t, b);
		return CATS_FR_NOMEM;
	}
	*out = b;
	return 0;
}

int
cats_fwd_apply(struct cats_fwd *t, const struct cats_binding *r,
    uint64_t now, struct cats_fbind **out, struct cats_held **released,
    int *event)
{
	*out = NULL;
	*released = NULL;
	if (r->epoch < t->epoch_max) {
		t->st.refused++;
		return CATS_FR_FENCED;
	}
	struct cats_fbind *ex = cats_fwd_by_id(t, r->id);
	if (ex != NULL) {
		if (r->epoch < ex->epoch ||
		    (r->epoch == ex->epoch && r->version < ex->version)) {
			t->st.refused++;
			return r->epoch < ex->epoch ? CATS_FR_FENCED
			    : CATS_FR_STALE_VERSION;
		}
	}
	t->epoch_max = r->epoch;
	if (r->op == CATS_BIND_REMOVE) {
		if (ex == NULL) {
			t->st.refused++;
			return CATS_FR_UNKNOWN;
		}
		*out = ex;
		*event = CATS_EV_REMOVED;
		t->st.removed++;
		return 0;
	}
	if (ex == NULL && r->op == CATS_BIND_REFRESH) {
		t->st.refused++;
		return CATS_FR_UNKNOWN;
	}
	if (ex == NULL && t->st.bindings >= t->c.max_bindings) {
		t->st.refused++;
		return CATS_FR_FULL;
	}
	struct cats_fbind nb;
	memset(&nb, 0, sizeof(nb));
	nb.id = r->id;
	int fe = bind_fill(t, &nb, r);
	if (fe < 0) {
		t->st.refused++;
		return fe == UNSUPPORTED ? CATS_FR_UNSUPPORTED : is_me(t,
		    r->ingress) || is_me(t, r->egress) || is_me(t, r->fwd.egress) ?
		    CATS_FR_BAD : CATS_FR_NOT_MINE;
	}
	for (int d = 0; d < CATS_DIR__N; d++)
		nb.keyed[d] = d < CATS_DIR_EG_FWD ? nb.ingress : nb.egress;
	displace(t, &nb);
	if (conflicts(t, &nb)) {
		t->st.refused++;
		return CATS_FR_FLOW_BOUND;
	}
	nb.version = r->version;
	nb.epoch = r->epoch;
	nb.txn = CATS_HAS(r, BND, txn) ? r->txn : 0;
	struct cats_fbind *b = ex;
	if (b == NULL) {
		int rc = add_new(t, &nb, now, &b);
		if (rc != 0)
			return rc;
		*event = CATS_EV_INSTALLED;
		t->st.installed++;
	} else {
		unkey(t, b);
		nb.installed = b->installed;
		nb.last = now;
		nb.pkts = b->pkts;
		nb.bytes = b->bytes;
		nb.rpkts = b->rpkts;
		nb.rbytes = b->rbytes;
		nb.reported = b->reported;
		nb.rep_pkts = b->rep_pkts;
		nb.tcp = b->tcp;
		nb.tcp_fin = b->tcp_fin;
		/* A learned return tunnel survives a refresh that names none. */
		if (nb.renc_learn && b->renc_learn && b->renc.kind ==
		    nb.renc.kind && cats_encap_ready(&b->renc))
			nb.renc = b->renc;
		*b = nb;
		if (rekey(t, b) < 0) {
			cats_fwd_remove(t, b);
			return CATS_FR_NOMEM;
		}
		*event = CATS_EV_REFRESHED;
		t->st.refreshed++;
	}
	/* Release the packets held for this flow (by txn, then by key). */
	if (b->ingress) {
		struct cats_pend *p = NULL;
		if (b->txn)
			p = cats_htab_get(&t->pend_by_txn, u64_hash(b->txn),
			    txn_eq_pend, &b->txn);
		if (p == NULL)
			p = cats_fwd_pending(t, &b->keys[CATS_DIR_IN_FWD]);
		if (p != NULL)
			*released = cats_fwd_pend_take(t, p);
	}
	*out = b;
	return 0;
}

int
cats_fwd_insert(struct cats_fwd *t, const struct cats_fbind *nb, uint64_t now,
    struct cats_fbind **out)
{
	*out = NULL;
	if (conflicts(t, nb) || cats_fwd_by_id(t, nb->id) != NULL)
		return CATS_FR_FLOW_BOUND;
	if (t->st.bindings >= t->c.max_bindings)
		return CATS_FR_FULL;
	return add_new(t, nb, now, out);
}

/* Append v to the growing array *a (of *cap); false when out of memory. */
static bool
push(void ***a, size_t *n, size_t *cap, void *v)
{
	if (*n == *cap) {
		size_t nc = *cap ? 2 * *cap : 64;
		void **na = realloc(*a, nc * sizeof(*na));
		if (na == NULL)
			return false;
		*a = na;
		*cap = nc;
	}
	(*a)[(*n)++] = v;
	return true;
}

static void
expire_pending(struct cats_fwd *t, uint64_t now,
    void (*pend_cb)(struct cats_pend *, void *), void *arg)
{
	void **v = NULL;
	size_t n = 0, cap = 0;
	/* Collected first: the callback takes each record off the list. */
	for (struct cats_pend *p = t->oldest; p != NULL && p->deadline <= now;
	    p = p->newer)
		if (!push(&v, &n, &cap, p))
			break;
	for (size_t i = 0; i < n; i++) {
		t->st.pend_timeout++;
		pend_cb(v[i], arg);
	}
	free(v);
}

static size_t expire_window(struct cats_fwd *, uint64_t, size_t, size_t,
    void (*)(struct cats_fbind *, const char *, void *), void *);

/* Bindings in slots [from, from + n) of the id table (wrapping).  A removal
 * shifts the entries after it back by a slot, so entries from past the
 * window can land in its last slots: those are scanned again. */
static void
expire_bindings(struct cats_fwd *t, uint64_t now, size_t from, size_t n,
    void (*bind_cb)(struct cats_fbind *, const char *, void *), void *arg)
{
	size_t tc = t->bind_by_id.cap;
	if (tc == 0)
		return;
	if (n > tc)
		n = tc;
	for (;;) {
		size_t removed = expire_window(t, now, from, n, bind_cb, arg);
		if (removed == 0 || n == tc)
			return;
		if (removed > n)
			removed = n;
		from = (from + n - removed) & (tc - 1);
		n = removed;
	}
}

/* One pass of expire_bindings; returns how many it removed. */
static size_t
expire_window(struct cats_fwd *t, uint64_t now, size_t from, size_t n,
    void (*bind_cb)(struct cats_fbind *, const char *, void *), void *arg)
{
	void **v = NULL;
	size_t nv = 0, cap = 0, tc = t->bind_by_id.cap;
	for (size_t j = 0; j < n; j++) {
		size_t i = (from + j) & (tc - 1);
		struct cats_fbind *b = t->bind_by_id.s[i].item;
		if (t->bind_by_id.s[i].h == 0)
			continue;
		uint64_t idle_ms = cats_fbind_idle_ms(t, b);
		if (b->fast && idle_ms && t->fast_sync != NULL)
			t->fast_sync(b, now, t->fast_arg);
		bool idle = idle_ms && b->last + idle_ms <= now;
		bool hard = b->hard_ms && b->installed + b->hard_ms <= now;
		if ((idle || hard) && !push(&v, &nv, &cap, b))
			break;
	}
	for (size_t i = 0; i < nv; i++) {
		struct cats_fbind *b = v[i];
		bool hard = b->hard_ms && b->installed + b->hard_ms <= now;
		t->st.expired++;
		bind_cb(b, hard ? "hard" : cats_fbind_tcp_why(t, b), arg);
		cats_fwd_remove(t, b);
	}
	free(v);
	return nv;
}

void
cats_fwd_expire(struct cats_fwd *t, uint64_t now,
    void (*pend_cb)(struct cats_pend *, void *),
    void (*bind_cb)(struct cats_fbind *, const char *, void *), void *arg)
{
	expire_pending(t, now, pend_cb, arg);
	expire_bindings(t, now, 0, t->bind_by_id.cap, bind_cb, arg);
}

void
cats_fwd_expire_step(struct cats_fwd *t, uint64_t now, size_t *pos, size_t n,
    void (*pend_cb)(struct cats_pend *, void *),
    void (*bind_cb)(struct cats_fbind *, const char *, void *), void *arg)
{
	expire_pending(t, now, pend_cb, arg);
	size_t tc = t->bind_by_id.cap;
	if (tc == 0)
		return;
	expire_bindings(t, now, *pos & (tc - 1), n, bind_cb, arg);
	*pos = ((*pos & (tc - 1)) + n) & (tc - 1);
}

void
cats_fwd_status(const struct cats_fwd *t, const struct cats_fbind *b,
    int event, const char *reason, uint64_t now, struct cats_rec *r)
{
	cats_rec_init(r, CATS_T_STATUS);
	struct cats_status *s = &r->u.status;
	s->fwd = t->c.id;
	s->event = event;
	s->ts = now;
	s->has = UINT64_C(1) << CATS_STA_fwd | UINT64_C(1) << CATS_STA_event |
	    UINT64_C(1) << CATS_STA_ts;
	if (b != NULL) {
		CATS_SET(s, STA, id, b->id);
		CATS_SET_IF(b->txn, s, STA, txn, b->txn);
		CATS_SET(s, STA, epoch, b->epoch);
		CATS_SET(s, STA, version, b->version);
		CATS_SET(s, STA, pkts, b->pkts);
		CATS_SET(s, STA, bytes, b->bytes);
		CATS_SET(s, STA, rev_pkts, b->rpkts);
		CATS_SET(s, STA, rev_bytes, b->rbytes);
	}
	if (reason != NULL) {
		s->reason = reason;
		s->has |= UINT64_C(1) << CATS_STA_reason;
	}
}
