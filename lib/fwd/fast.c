/*
 * fast.c - the packet path's side of the fast path (--fast-path,
 * fwd_fast.h): which binding keys go into the kernel's map and with what
 * action, when they are offered, their counters brought back, their keys
 * taken out again.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fwd/path_int.h"

/* The port the packets of a binding's key d come in on (NULL: none). */
static struct cats_port *
port_in(const struct cats_fwdp *w, int d)
{
	return d == CATS_DIR_IN_FWD ? w->client : d == CATS_DIR_EG_REV ?
	    w->site : w->core;
}

/* The port the packets of a binding's key d leave by (NULL: none). */
static struct cats_port *
port_out(const struct cats_fwdp *w, int d)
{
	return d == CATS_DIR_IN_FWD || d == CATS_DIR_EG_REV ? w->core :
	    d == CATS_DIR_IN_REV ? w->client : w->site;
}

/* The map key of binding b's key d: the port it comes in on, whether it
 * comes encapsulated (the reverse at the ingress, the forward at the egress),
 * the 5-tuple.  -1 when there is no such port or the key has wildcards. */
static int
fp_key(const struct cats_fwdp *w, const struct cats_fbind *b, int d,
    struct cats_fp_key *k)
{
	const struct cats_port *in = port_in(w, d);
	if (in == NULL || cats_fp_key_make(k, &b->keys[d], in->ifindex) < 0)
		return -1;
	k->tun = d == CATS_DIR_IN_REV || d == CATS_DIR_EG_FWD;
	return 0;
}

/* Is b a flow at the egress whose instance a redirect in force moves? */
static bool
steered(const struct cats_fwdp *w, const struct cats_fbind *b)
{
	const struct cats_fkey *k = &b->keys[CATS_DIR_EG_FWD];
	return w->steer != NULL && b->keyed[CATS_DIR_EG_FWD] &&
	    cats_fsteer_fwd(w->steer, k->af, k->dst, k->dport, w->now) != NULL;
}

int
cats_fwdp_fast_entry(struct cats_fwdp *w, const struct cats_fbind *b, int d,
    struct cats_fp_key *k, struct cats_fp_act *a)
{
	struct cats_port *in = port_in(w, d), *out = port_out(w, d);
	int rw = CATS_FP_RW_NONE;
	const uint8_t *addr = NULL;
	uint16_t port = 0;
	const struct cats_encap *enc = NULL;
	if (d == CATS_DIR_IN_FWD) {
		rw = CATS_FP_RW_DST;
		addr = b->locator, port = b->port, enc = &b->enc;
	} else if (d == CATS_DIR_IN_REV) {
		rw = CATS_FP_RW_SRC;
		addr = b->restore, port = b->restore_port;
	} else if (d == CATS_DIR_EG_REV) {
		enc = &b->renc;
	}
	if (in == NULL || out == NULL || in->kind == CATS_PORT_TUN ||
	    out->kind == CATS_PORT_TUN ||
	    (d == CATS_DIR_IN_FWD && b->keys[d].tenant != w->tenant_h))
		return CATS_FWDP_FP_NEVER;
	/* SR-MPLS: the kernel pushes the labels (the forward direction at
	 * the ingress, the return at the egress); what comes labelled is
	 * user space's to pop. */
	if ((d == CATS_DIR_IN_REV && b->rkind == CATS_DP_SRMPLS) ||
	    (d == CATS_DIR_EG_FWD && b->fkind == CATS_DP_SRMPLS))
		return CATS_FWDP_FP_NEVER;
	/* The egress learns the return tunnel from the first forward packet,
	 * in user space. */
	if (d >= CATS_DIR_EG_FWD && !cats_encap_ready(&b->renc))
		return CATS_FWDP_FP_LATER;
	/* A flow to a redirected instance is steered in user space. */
	if (d >= CATS_DIR_EG_FWD && steered(w, b))
		return CATS_FWDP_FP_LATER;
	if (!out->has_peer)
		return CATS_FWDP_FP_LATER;
	if (fp_key(w, b, d, k) < 0)
		return CATS_FWDP_FP_NEVER;
	uint8_t l2[14];
	cats_port_l2(out, l2, b->af);
	uint32_t mtu = out == w->core && w->cf.mtu ? w->cf.mtu : out->mtu;
	if (cats_fp_act_make(a, out->ifindex, l2, mtu, rw, addr, b->af, port,
	    enc != NULL && enc->kind != CATS_ENC_NONE ? enc : NULL) < 0)
		return CATS_FWDP_FP_NEVER;
	/* The outer flow label of the flow's inner packets: the key's
	 * 5-tuple as the rewrite leaves it. */
	if (enc != NULL && enc->kind != CATS_ENC_NONE && enc->flowlabel) {
		const struct cats_fkey *fk = &b->keys[d];
		cats_fp_act_flowlabel(a, d == CATS_DIR_IN_FWD ?
		    cats_flow_label5(fk->af, fk->proto, fk->src, b->locator,
		    fk->sport, b->port ? b->port : fk->dport) :
		    cats_flow_label5(fk->af, fk->proto, fk->src, fk->dst,
		    fk->sport, fk->dport));
	}
	/* FINs and RSTs change a tracked connection's state: user space's. */
	if (cats_fbind_tracked(&w->tab, b))
		a->flags |= CATS_FP_F_TCP;
	if (out->veth)
		a->flags |= CATS_FP_F_PEER;
	return CATS_FWDP_FP_OK;
}

/*
 * Put key d of binding b into the kernel's map: its input and output ports,
 * its rewrite and encapsulation, as the user-space path would apply them.
 * FP_LATER also when the map is full.
 */
static int
fp_put(struct cats_fwdp *w, struct cats_fbind *b, int d)
{
	struct cats_fp_key k;
	struct cats_fp_act a;
	int r = cats_fwdp_fast_entry(w, b, d, &k, &a);
	if (r != CATS_FWDP_FP_OK)
		return r;
	if (cats_fwd_fast_put(w->fp, &k, &a) < 0)
		return CATS_FWDP_FP_LATER;
	return CATS_FWDP_FP_OK;
}

/* Offer the keys of b the kernel does not forward yet. */
static void
fp_offer(struct cats_fwdp *w, struct cats_fbind *b)
{
	for (int d = 0; d < CATS_DIR__N; d++) {
		uint8_t bit = (uint8_t)(1u << d);
		if (!b->keyed[d])
			b->fast_never |= bit;
		if ((b->fast | b->fast_never) & bit)
			continue;
		int r = fp_put(w, b, d);
		if (r == CATS_FWDP_FP_OK) {
			b->fast |= bit;
			b->fast_pkts[d] = b->fast_bytes[d] = 0;
			w->fp_keys++;
		} else if (r == CATS_FWDP_FP_NEVER) {
			b->fast_never |= bit;
		}
	}
}

/*
 * Does b have keys the fast path could still take, and has it carried
 * FP_AFTER packets in user space?  A flow of a packet or two (a DNS query,
 * a flood of new source ports) costs no map updates; a longer one goes to
 * the kernel after its first packets.  A tracked TCP connection goes once
 * it is established (the handshake is user space's).
 */
#define FP_AFTER 4
static inline bool
fp_wants(const struct cats_fwdp *w, const struct cats_fbind *b)
{
	return w->fp != NULL && !b->fast_queued &&
	    (b->fast | b->fast_never) != 0x0f && b->pkts + b->rpkts >= FP_AFTER &&
	    (b->tcp == CATS_TCPS_ESTABLISHED || !cats_fbind_tracked(&w->tab, b));
}

/*
 * Bindings (by id) are offered once the receive rings are empty, so that
 * the packets of a flow already in a ring leave before the kernel forwards
 * the flow's next ones; under a load that never lets the rings empty, after
 * FP_WAIT_MS all the same (and on every tick).
 */
#define FP_WAIT_MS 2

void
cats_fast_maybe(struct cats_fwdp *w, struct cats_fbind *b, uint64_t now)
{
	if (!fp_wants(w, b))
		return;
	if (w->fp_nqueue == CATS_FWDP_FP_QUEUE)
		return;		/* offered at one of its next packets */
	if (w->fp_nqueue == 0)
		w->fp_queued_at = now;
	w->fp_queue[w->fp_nqueue++] = b->id;
	b->fast_queued = true;
}

void
cats_fwdp_fast_offer_queued(struct cats_fwdp *w, uint64_t now, bool force)
{
	if (w->fp_nqueue == 0)
		return;
	if (!force && now < w->fp_queued_at + FP_WAIT_MS)
		for (int i = 0; i < w->nports; i++)
			if (cats_port_ring_ready(&w->ports[i]))
				return;
	cats_fwdp_tx_flush(w);
	for (size_t i = 0; i < w->fp_nqueue; i++) {
		struct cats_fbind *b = cats_fwd_by_id(&w->tab, w->fp_queue[i]);
		if (b == NULL)
			continue;
		b->fast_queued = false;
		fp_offer(w, b);
	}
	w->fp_nqueue = 0;
	/* What reached the rings before the map changed leaves now, close
	 * behind: the kernel forwards the flows' next packets already. */
	for (int i = 0; i < w->nports; i++)
		if (w->ports[i].kind == CATS_PORT_PACKET)
			cats_fwdp_rx(w, &w->ports[i], now);
	cats_fwdp_tx_flush(w);
}

void
cats_fast_sync(struct cats_fbind *b, uint64_t now, void *arg)
{
	struct cats_fwdp *w = arg;
	for (int d = 0; d < CATS_DIR__N; d++) {
		struct cats_fp_key k;
		struct cats_fp_act a;
		if (!(b->fast & (1u << d)) || fp_key(w, b, d, &k) < 0 ||
		    cats_fwd_fast_get(w->fp, &k, &a) < 0 ||
		    a.pkts == b->fast_pkts[d])
			continue;
		bool rev = d == CATS_DIR_IN_REV || d == CATS_DIR_EG_REV;
		uint64_t dp = a.pkts - b->fast_pkts[d];
		uint64_t db = a.bytes - b->fast_bytes[d];
		*(rev ? &b->rpkts : &b->pkts) += dp;
		*(rev ? &b->rbytes : &b->bytes) += db;
		w->ctr[rev ? (d == CATS_DIR_IN_REV ? CATS_FC_rev_pkts :
		    CATS_FC_eg_rev_pkts) : (d == CATS_DIR_IN_FWD ?
		    CATS_FC_fwd_pkts : CATS_FC_eg_fwd_pkts)] += dp;
		w->ctr[CATS_FC_fast_pkts] += dp;
		b->fast_pkts[d] = a.pkts;
		b->fast_bytes[d] = a.bytes;
		if (now > b->last)
			b->last = now;
	}
}

/* Take b's keys out of the kernel's map (its counters added first). */
static void
fp_drop(struct cats_fbind *b, void *arg)
{
	struct cats_fwdp *w = arg;
	cats_fast_sync(b, w->now, w);
	for (int d = 0; d < CATS_DIR__N; d++) {
		struct cats_fp_key k;
		if (!(b->fast & (1u << d)) || fp_key(w, b, d, &k) < 0)
			continue;
		cats_fwd_fast_del(w->fp, &k);
		w->fp_keys--;
	}
	b->fast = 0;
}

/*
 * A learned link peer changed (a neighbour replaced, its MAC changed): the
 * kernel's actions toward that port still carry the old one.  Their
 * bindings leave the map; user space forwards their next packets with the
 * new peer and offers them again.  Called from the tick, so that a port
 * whose peer flaps costs one walk of the bindings per tick at most.
 */
void
cats_fast_follow_peers(struct cats_fwdp *w)
{
	bool moved = false;
	for (int i = 0; i < w->nports; i++)
		moved |= w->ports[i].peer_moved;
	if (w->fp == NULL || !moved)
		return;
	struct cats_htab *h = &w->tab.bind_by_id;
	for (size_t i = 0; i < h->cap; i++) {
		struct cats_fbind *b = h->s[i].item;
		if (h->s[i].h == 0 || b->fast == 0)
			continue;
		for (int d = 0; d < CATS_DIR__N; d++)
			if ((b->fast & (1u << d)) && port_out(w, d) != NULL &&
			    port_out(w, d)->peer_moved) {
				fp_drop(b, w);
				break;
			}
	}
	for (int i = 0; i < w->nports; i++)
		w->ports[i].peer_moved = false;
}

/* A redirect came into force: its instance's flows leave the map. */
static void
steer_moved(const struct cats_fsteer_ent *e, void *arg)
{
	struct cats_fwdp *w = arg;
	if (w->tab.fast_drop == NULL)
		return;
	struct cats_htab *h = &w->tab.bind_by_id;
	for (size_t i = 0; i < h->cap; i++) {
		struct cats_fbind *b = h->s[i].item;
		if (h->s[i].h == 0 || b->fast == 0 ||
		    !b->keyed[CATS_DIR_EG_FWD])
			continue;
		const struct cats_fkey *k = &b->keys[CATS_DIR_EG_FWD];
		if (cats_fsteer_match(e, k->af, k->dst, k->dport))
			w->tab.fast_drop(b, w->tab.fast_arg);
	}
}

void
cats_fwdp_steer(struct cats_fwdp *w, struct cats_fsteer *t)
{
	w->steer = t;
	t->moved = steer_moved;
	t->moved_arg = w;
}

int
cats_fwdp_fast_start(struct cats_fwdp *w, char *err, size_t errlen)
{
	w->fp = cats_fwd_fast_open((size_t)w->tab.c.max_bindings * 2, err,
	    errlen);
	if (w->fp == NULL)
		return -1;
	for (size_t i = 0; i < w->cf.nsids; i++)
		if (cats_fwd_fast_sid(w->fp, w->cf.sids[i].af,
		    w->cf.sids[i].a) < 0) {
			snprintf(err, errlen, "SID map: %s", strerror(errno));
			return -1;
		}
	for (int i = 0; i < w->nports; i++) {
		char e[200];
		struct cats_port *pt = &w->ports[i];
		if (pt->kind == CATS_PORT_PACKET && cats_fwd_fast_port(w->fp,
		    pt->ifindex, e, sizeof(e)) < 0) {
			snprintf(err, errlen, "%s: %s", pt->name, e);
			return -1;
		}
	}
	w->tab.fast_sync = cats_fast_sync;
	w->tab.fast_drop = fp_drop;
	w->tab.fast_arg = w;
	return 0;
}

void
cats_fwdp_fast_stop(struct cats_fwdp *w)
{
	/* The kernel stops forwarding with the program gone: no map edits. */
	w->tab.fast_sync = NULL;
	w->tab.fast_drop = NULL;
	cats_fwd_fast_close(w->fp);
	w->fp = NULL;
}
