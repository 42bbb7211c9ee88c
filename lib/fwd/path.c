/*
 * path.c - the packet path of a CATS-Forwarder (path.h): classification
 * and the forward, reverse and egress actions, held packets, the control
 * records in and out, the tick, the counters.
 */
#include <event2/event.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/conf.h"
#include "base/log.h"
#include "fwd/path_int.h"
#include "rec/json.h"

#define HR CATS_PKT_HEADROOM

#define CATS_FWDP_X_NAME(n) #n,
const char *const cats_fwdp_ctr_names[] = { CATS_FWDP_CTRS(CATS_FWDP_X_NAME)
	NULL };

static void bind_gone(struct cats_fbind *, const char *, void *);

int
cats_fwdp_init(struct cats_fwdp *w, const struct cats_fwdp_conf *conf)
{
	memset(w, 0, offsetof(struct cats_fwdp, wroom));
	w->cf = *conf;
	w->cf.fc.id = w->cf.id;
	w->cf.fc.ret = w->cf.ret;
	w->cf.fc.nret = w->cf.nret;
	if (w->cf.tenant != NULL)
		w->tenant_h = cats_hash_str(w->cf.tenant);
	if (cats_fwd_init(&w->tab, &w->cf.fc) < 0)
		return -1;
	w->tab.next_txn = w->cf.epoch * 1000 % (CATS_U53 / 2);
	w->local_id = CATS_FWD_LOCAL_ID + w->cf.epoch % 1000 * 1000000000;
	w->tx_mtu = w->cf.mtu;
	w->synced = w->cf.bind_ep == NULL;
	w->tab.gone_cb = bind_gone;
	w->tab.gone_arg = w;
	return 0;
}

void
cats_fwdp_start(struct cats_fwdp *w, uint64_t sync_ms, uint64_t now)
{
	cats_bucket_init(&w->icmp, 100, 100, now);
	w->now = now;
	w->sync_deadline = now + sync_ms;
}

void
cats_fwdp_free(struct cats_fwdp *w)
{
	for (int i = 0; i < w->nports; i++)
		cats_port_sent_free(&w->ports[i]);
	cats_fwd_free(&w->tab);
}

static struct cats_port *
port_add(struct cats_fwdp *w, const struct cats_port *pt, char *err,
    size_t errlen)
{
	for (int i = 0; i < w->nports; i++) {
		if (strcmp(w->ports[i].name, pt->name) == 0) {
			if (w->ports[i].kind != pt->kind) {
				snprintf(err, errlen, "%s: used as two kinds "
				    "of port", pt->name);
				return NULL;
			}
			w->ports[i].roles |= pt->roles;
			return &w->ports[i];
		}
	}
	if (w->nports == CATS_FWDP_MAXPORTS) {
		snprintf(err, errlen, "too many ports");
		return NULL;
	}
	struct cats_port *np = &w->ports[w->nports++];
	*np = *pt;
	if (np->kind == CATS_PORT_FAKE)
		np->sent_tail = &np->sent;
	return np;
}

static void
port_role(struct cats_fwdp *w, struct cats_port *pt, int role)
{
	if (role == CATS_PORT_CLIENT)
		w->client = pt;
	else if (role == CATS_PORT_CORE)
		w->core = pt;
	/* A TUN device carries IP only: no SR-MPLS through it. */
	if (role == CATS_PORT_CORE)
		w->tab.c.no_mpls = w->cf.fc.no_mpls || pt->kind == CATS_PORT_TUN;
	else if (role == CATS_PORT_SITE)
		w->site = pt;
}

struct cats_port *
cats_fwdp_port(struct cats_fwdp *w, const char *spec, int role, char *err,
    size_t errlen)
{
	struct cats_port pt;
	if (cats_port_parse(spec, role, &pt, err, errlen) < 0)
		return NULL;
	struct cats_port *p = port_add(w, &pt, err, errlen);
	if (p != NULL)
		port_role(w, p, role);
	return p;
}

struct cats_port *
cats_fwdp_port_fake(struct cats_fwdp *w, const char *name, int role,
    int ifindex, uint32_t mtu)
{
	struct cats_port pt;
	char err[64];
	cats_port_fake(&pt, name, role, ifindex, mtu);
	struct cats_port *p = port_add(w, &pt, err, sizeof(err));
	if (p != NULL)
		port_role(w, p, role);
	return p;
}

int
cats_fwdp_open_ports(struct cats_fwdp *w, unsigned ring_frames, char *err,
    size_t errlen)
{
	for (int i = 0; i < w->nports; i++) {
		uint32_t mtu = cats_port_if_mtu(w->ports[i].name);
		if (mtu > w->tx_mtu)
			w->tx_mtu = mtu;
	}
	for (int i = 0; i < w->nports; i++)
		if (cats_port_open(&w->ports[i], w->tx_mtu, ring_frames, err,
		    errlen) < 0)
			return -1;
	return 0;
}

void
cats_fwdp_tx_flush(struct cats_fwdp *w)
{
	for (int i = 0; i < w->nports; i++)
		cats_port_tx_flush(&w->ports[i]);
}

static void
flush_later(struct cats_fwdp *w)
{
	if (w->flush_later != NULL)
		w->flush_later(w->hook_arg);
}

int
cats_fwd_svc_parse(const char *arg, bool intercept, struct cats_fwd_svc *s,
    char *err, size_t errlen)
{
	const char *opt = intercept ? "--intercept" : "--service";
	char buf[256], e[128];
	uint64_t v;
	const char *a = arg;
	memset(s, 0, sizeof(*s));
	if (!intercept) {
		const char *eq = strchr(arg, '=');
		if (eq == NULL || eq == arg || (size_t)(eq - arg) > CATS_ID) {
			snprintf(err, errlen, "--service %s: expected CSID=ADDR",
			    arg);
			return -1;
		}
		memcpy(s->cs_id, arg, (size_t)(eq - arg));
		a = eq + 1;
	}
	if (cats_strlcpy(buf, a, sizeof(buf)) >= sizeof(buf))
		goto bad;
	char *slash = strchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
		const char *pr = slash + 1;
		if (strcmp(pr, "tcp") == 0)
			s->proto = 6;
		else if (strcmp(pr, "udp") == 0)
			s->proto = 17;
		else if (cats_parse_u64(pr, 1, 255, &v, e, sizeof(e)) < 0)
			goto bad_num;
		else
			s->proto = (uint8_t)v;
	}
	char *host = buf, *port = NULL;
	if (buf[0] == '[') {
		char *rb = strchr(buf, ']');
		if (rb == NULL)
			goto bad;
		*rb = '\0';
		host = buf + 1;
		if (rb[1] == ':')
			port = rb + 2;
	} else if (strchr(buf, ':') == strrchr(buf, ':') && strchr(buf, ':')) {
		port = strchr(buf, ':');
		*port++ = '\0';
	}
	if (cats_ip_parse(host, strlen(host), &s->addr) < 0) {
		snprintf(err, errlen, "%s: bad service address", host);
		return -1;
	}
	if (port != NULL) {
		if (cats_parse_u64(port, 1, 65535, &v, e, sizeof(e)) < 0)
			goto bad_num;
		s->port = (uint16_t)v;
	}
	return 0;
bad_num:
	snprintf(err, errlen, "%s: %s", opt, e);
	return -1;
bad:
	snprintf(err, errlen, "%s %.200s: expected [CSID=]ADDR[:PORT][/PROTO]",
	    opt, arg);
	return -1;
}

/* ---- control records out ---- */

static void
send_status_at(struct cats_fwdp *w, const struct cats_fbind *b, int ev,
    const char *reason, uint64_t id, uint64_t epoch,
    const struct cats_ip *unreachable, uint64_t now)
{
	struct cats_rec r;
	cats_fwd_status(&w->tab, b, ev, reason, now, &r);
	if (unreachable != NULL)
		r.u.status.unreachable = *unreachable;
	CATS_SET_IF(b == NULL && id, &r.u.status, STA, id, id);
	CATS_SET_IF(b == NULL && ev != CATS_EV_HELLO && epoch, &r.u.status, STA,
	    epoch, epoch);
	CATS_SET_IF(ev == CATS_EV_HELLO, &r.u.status, STA, epoch, w->cf.epoch);
	w->ctr[CATS_FC_status_sent]++;
	if (w->emit != NULL)
		w->emit(w->hook_arg, CATS_FWDP_BIND, &r);
}

static void
send_status(struct cats_fwdp *w, const struct cats_fbind *b, int ev,
    const char *reason, uint64_t id, uint64_t epoch, uint64_t now)
{
	send_status_at(w, b, ev, reason, id, epoch, NULL, now);
}

/* The order an ingress prefers the data planes it advertises in. */
static const int dp_order[4] = {
	CATS_DP_SRV6, CATS_DP_SRMPLS, CATS_DP_IPIP, CATS_DP_IP
};

static bool
send_request(struct cats_fwdp *w, struct cats_pend *p,
    const struct cats_pkt *pk)
{
	const struct cats_fwdp_conf *cf = &w->cf;
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_REQUEST);
	struct cats_request *q = &r.u.request;
	q->txn = p->txn;
	q->ingress = cf->id;
	q->ts = p->created;
	q->has = UINT64_C(1) << CATS_REQ_txn | UINT64_C(1) << CATS_REQ_ingress |
	    UINT64_C(1) << CATS_REQ_ts | UINT64_C(1) << CATS_REQ_flow;
	CATS_SET(q, REQ, gen, cf->epoch);
	cats_fkey_to_flow(&p->key, &q->flow, cf->tenant);
	if (cf->tenant != NULL) {
		q->tenant = cf->tenant;
		q->has |= UINT64_C(1) << CATS_REQ_tenant;
	}
	const struct cats_req_meta *m = &p->meta;
	/*
	 * A CS-ID only travels as the client's metadata (Mode A or B); with
	 * carriage mode none the C-PS resolves the destination address with
	 * its own catalogue (001 §6), so the --service mapping stays local.
	 */
	if (m->cs_id[0] && m->present) {
		q->cs_id = m->cs_id;
		q->has |= UINT64_C(1) << CATS_REQ_cs_id;
	}
	if (m->present) {
		struct cats_constraints *c = &q->constraints;
		CATS_SET_IF(m->has & (1u << CATS_TLV_MAX_DELAY), c, CON,
		    max_delay_us, m->max_delay_us);
		CATS_SET_IF(m->has & (1u << CATS_TLV_MAX_COMP), c, CON,
		    max_comp_ms, m->max_comp_ms);
		CATS_SET_IF(m->has & (1u << CATS_TLV_MAX_PRICE), c, CON,
		    max_price, m->max_price);
		CATS_SET_IF(m->has & (1u << CATS_TLV_MIN_BW), c, CON, min_bw,
		    m->min_bw);
		CATS_SET_IF(m->has & (1u << CATS_TLV_MIN_SECURITY), c, CON,
		    min_security, m->min_security);
		CATS_SET_IF(m->has & (1u << CATS_TLV_MIN_REPUTATION), c, CON,
		    min_reputation, m->min_reputation);
		if (c->has)
			q->has |= UINT64_C(1) << CATS_REQ_constraints;
	}
	CATS_SET(q, REQ, mode, pk != NULL && pk->meta.present ? CATS_MODE_A :
	    m->present ? CATS_MODE_B : CATS_MODE_NONE);
	CATS_SET(q, REQ, held, p->npkts);
	int dp = cats_fwdp_dataplane(w);
	CATS_SET_IF(dp >= 0, q, REQ, dataplane, dp);
	/* Not bound by --dataplane: every one it advertises, so that the
	 * C-PS can take a service's own where this forwarder has it. */
	const char *dps[4];
	if (cf->dataplane < 0) {
		unsigned mask = cats_fwdp_dataplanes(w);
		q->dataplanes.v = dps;
		q->dataplanes.n = 0;
		for (int i = 0; i < 4; i++)
			if (mask & (1u << dp_order[i]))
				dps[q->dataplanes.n++] =
				    cats_dataplane_names[dp_order[i]];
		if (q->dataplanes.n > 0)
			q->has |= UINT64_C(1) << CATS_REQ_dataplanes;
	}
	CATS_SET_IF(dp == CATS_DP_SRV6 || dp == CATS_DP_SRMPLS, q, REQ, msd,
	    w->tab.c.msd);
	CATS_SET(q, REQ, deadline, p->deadline);
	p->sent = true;
	if (w->clock_us != NULL && p->head != NULL)
		p->head->asked_us = w->clock_us();
	if (w->emit == NULL || w->emit(w->hook_arg, CATS_FWDP_SELECT, &r) < 0) {
		w->ctr[CATS_FC_request_fail]++;
		return false;
	}
	w->ctr[CATS_FC_requests]++;
	return true;
}

/* ---- the forward and reverse actions ---- */

/*
 * A steered packet toward the core: hop limit (ICMP time exceeded at zero),
 * the MSS of a SYN clamped to the encapsulation, counted, encapsulated.
 */
static void
to_core(struct cats_fwdp *w, struct cats_pkt *pk, const struct cats_rxmeta *m,
    const struct cats_encap *enc, int counter, uint64_t now)
{
	if (cats_pkt_dec_ttl(pk)) {
		w->drop_pkt[CATS_DROP_TTL]++;
		if (m != NULL)
			cats_out_icmp(w, m->in, pk, CATS_ICMP_TIME_EXCEEDED, 0,
			    now);
		return;
	}
	if (pk->proto == 6 && (pk->tcp_flags & CATS_TCP_SYN) &&
	    cats_pkt_clamp_mss(pk, cats_out_clamp(w, enc, pk->af)))
		w->ctr[CATS_FC_mss_clamped]++;
	w->ctr[counter]++;
	if (enc->kind == CATS_ENC_NONE)
		cats_out_big(w, w->core, pk, m, now);
	else
		cats_out_encap(w, enc, pk, m, now);
}

/*
 * A TCP packet of b (reply: from the instance's side) moves its connection
 * state.  A client's SYN on a closing connection that reaches this far
 * (an egress, or an ingress that kept the binding) opens it again.
 */
static void
track(struct cats_fwdp *w, struct cats_fbind *b, const struct cats_pkt *pk,
    bool reply)
{
	if (pk->proto != 6 || !cats_fbind_tracked(&w->tab, b))
		return;
	if (cats_fbind_tcp(&w->tab, b, reply, pk->tcp_flags) ==
	    CATS_TCP_REOPEN) {
		b->tcp_fin = 0;
		cats_fbind_tcp_set(&w->tab, b, CATS_TCPS_SYN_SENT);
		w->ctr[CATS_FC_tcp_reopened]++;
	}
}

static void
ingress_forward(struct cats_fwdp *w, struct cats_fbind *b, struct cats_pkt *pk,
    const struct cats_rxmeta *m, uint64_t now)
{
	cats_fbind_count(b, 0, pk->len, now);
	track(w, b, pk, false);
	cats_pkt_set_dst(pk, b->locator, b->port);
	to_core(w, pk, m, &b->enc, CATS_FC_fwd_pkts, now);
	cats_fast_maybe(w, b, now);
}

static void
release_held(struct cats_fwdp *w, struct cats_fbind *b, struct cats_held *h,
    uint64_t now)
{
	uint8_t *wbuf = w->wroom + HR;
	if (h != NULL && h->arrived_us != 0)
		cats_hist_observe(&w->h_first, w->clock_us() - h->arrived_us);
	while (h != NULL) {
		struct cats_held *n = h->next;
		struct cats_pkt pk;
		memcpy(wbuf, h->data, h->len);
		if (cats_pkt_parse(&pk, wbuf, h->len) == 0) {
			struct cats_rxmeta m = { .in = &w->ports[h->port] };
			w->ctr[CATS_FC_released]++;
			ingress_forward(w, b, &pk, &m, now);
		}
		free(h);
		h = n;
	}
	flush_later(w);
}

static void
drop_held(struct cats_fwdp *w, struct cats_held *h, int counter, uint64_t now)
{
	uint8_t *wbuf = w->wroom + HR;
	while (h != NULL) {
		struct cats_held *n = h->next;
		w->ctr[counter]++;
		if (w->cf.icmp_unreach) {
			struct cats_pkt pk;
			memcpy(wbuf, h->data, h->len);
			if (cats_pkt_parse(&pk, wbuf, h->len) == 0)
				cats_out_icmp(w, &w->ports[h->port], &pk,
				    CATS_ICMP_UNREACH, 0, now);
		}
		free(h);
		h = n;
	}
	flush_later(w);
}

/* ---- the configured fallback (fallback.h) ---- */

static void learn_return(struct cats_fwdp *, struct cats_fbind *,
    const uint8_t *, uint8_t);

static const char *
key_fmt(const struct cats_fkey *k, bool dst, char *buf, size_t n)
{
	struct cats_ip ip = { .af = k->af };
	memcpy(ip.a, dst ? k->dst : k->src, k->af == 4 ? 4 : 16);
	return cats_ip_fmt(&ip, buf, n);
}

/*
 * Bind pending flow p to a fallback candidate of its service: when the
 * service configures a fallback, the C-PS has not been silent for longer
 * than it allows and a candidate is eligible, the held packets go to the
 * Maglev table's choice; the binding is marked, audited, and reported to
 * the binding manager when the C-PS answers again.  False when the flow is
 * not the fallback's (the caller goes on as without one).
 */
static bool
fb_bind(struct cats_fwdp *w, struct cats_pend *p, uint64_t now)
{
	struct cats_ifb *fb = &w->cf.fb;
	struct cats_ifb_svc *s = cats_ifb_svc(fb, p->meta.cs_id);
	const struct cats_ifb_cand *c;
	char a[64], d[64], l[64];
	if (s == NULL)
		return false;
	cats_ifb_silent(fb, p->created);
	int r = cats_ifb_pick(fb, s, cats_ifb_flow_hash(&p->key), now, &c);
	if (r != CATS_IFB_OK) {
		w->ctr[CATS_FC_fallback_refused]++;
		cats_audit("fallback-refused", "cs_id=%s txn=%" PRIu64 " why=%s",
		    s->cs_id, p->txn, cats_ifb_why[r]);
		return false;
	}
	const struct cats_fkey *k = &p->key;
	struct cats_fbind nb;
	memset(&nb, 0, sizeof(nb));
	nb.id = w->local_id++;
	nb.version = 1;
	nb.epoch = w->tab.epoch_max;
	nb.txn = p->txn;
	nb.ingress = nb.fallback = true;
	nb.af = k->af;
	memcpy(nb.locator, c->locator, 16);
	nb.port = c->port;
	nb.enc = c->enc;
	nb.fkind = c->fkind;
	nb.rkind = c->rkind;
	memcpy(nb.restore, k->dst, 16);
	nb.restore_port = c->port ? k->dport : 0;
	nb.idle_ms = c->idle_ms;
	nb.hard_ms = c->hard_ms;
	cats_strlcpy(nb.cs_id, s->cs_id, sizeof(nb.cs_id));
	nb.keys[CATS_DIR_IN_FWD] = *k;
	struct cats_fkey *rk = &nb.keys[CATS_DIR_IN_REV];
	rk->af = k->af;
	rk->proto = k->proto;
	rk->dir = CATS_DIR_IN_REV;
	memcpy(rk->src, c->locator, 16);
	memcpy(rk->dst, k->src, 16);
	rk->sport = c->port ? c->port : k->dport;
	rk->dport = k->sport;
	if (k->wild & CATS_WILD_SPORT) {
		rk->dport = 0;
		rk->wild |= CATS_WILD_DPORT;
	}
	nb.keyed[CATS_DIR_IN_FWD] = nb.keyed[CATS_DIR_IN_REV] = true;
	nb.fb_egress = strdup(c->egress);
	struct cats_fbind *b;
	if (nb.fb_egress == NULL || (r = cats_fwd_insert(&w->tab, &nb, now,
	    &b)) != 0) {
		free(nb.fb_egress);
		w->ctr[CATS_FC_fallback_refused]++;
		return false;
	}
	w->ctr[CATS_FC_fallback_bound]++;
	w->fb_unreported++;
	cats_audit("fallback-bind", "cs_id=%s id=%" PRIu64 " txn=%" PRIu64
	    " proto=%u src=%s sport=%u dst=%s dport=%u locator=%s egress=%s",
	    s->cs_id, b->id, b->txn, k->proto, key_fmt(k, false, a, sizeof(a)),
	    k->sport, key_fmt(k, true, d, sizeof(d)), k->dport,
	    key_fmt(rk, false, l, sizeof(l)), c->egress);
	release_held(w, b, cats_fwd_pend_take(&w->tab, p), now);
	return true;
}

/*
 * The binding record of fallback binding b, as a binding manager would
 * have sent it (reason fallback): what the forwarder did, for the manager
 * to adopt (a binding of its own for the flow takes this one's place) or
 * end (a remove of this id).  The arrays point into sids and labels.
 */
static void
fb_record(struct cats_fwdp *w, const struct cats_fbind *b,
    struct cats_ip *sids, uint64_t *labels, uint64_t now, struct cats_rec *r)
{
	cats_rec_init(r, CATS_T_BINDING);
	struct cats_binding *bd = &r->u.binding;
	const struct cats_fkey *k = &b->keys[CATS_DIR_IN_FWD];
	bd->id = b->id;
	bd->version = b->version;
	bd->epoch = b->epoch;
	bd->op = CATS_BIND_INSTALL;
	bd->ts = now;
	bd->ingress = w->cf.id;
	bd->egress = b->fb_egress;
	bd->cs_id = b->cs_id;
	bd->reason = "fallback";
	bd->has = UINT64_C(1) << CATS_BND_id | UINT64_C(1) << CATS_BND_version |
	    UINT64_C(1) << CATS_BND_epoch | UINT64_C(1) << CATS_BND_op |
	    UINT64_C(1) << CATS_BND_ts | UINT64_C(1) << CATS_BND_ingress |
	    UINT64_C(1) << CATS_BND_cs_id | UINT64_C(1) << CATS_BND_reason |
	    UINT64_C(1) << CATS_BND_fwd | UINT64_C(1) << CATS_BND_rev;
	if (b->fb_egress != NULL && b->fb_egress[0])
		bd->has |= UINT64_C(1) << CATS_BND_egress;
	else
		bd->egress = NULL;
	CATS_SET_IF(b->txn, bd, BND, txn, b->txn);
	CATS_SET_IF(b->idle_ms, bd, BND, idle_ms, b->idle_ms);
	CATS_SET_IF(b->hard_ms, bd, BND, hard_ms, b->hard_ms);
	struct cats_bind_fwd *f = &bd->fwd;
	cats_fkey_to_flow(k, &f->match, w->cf.tenant);
	f->locator.af = b->af;
	memcpy(f->locator.a, b->locator, 16);
	f->encap = b->fkind;
	f->has = UINT64_C(1) << CATS_BFW_match | UINT64_C(1) << CATS_BFW_locator |
	    UINT64_C(1) << CATS_BFW_encap;
	CATS_SET_IF(b->port, f, BFW, port, b->port);
	if (b->enc.kind == CATS_ENC_SRV6) {
		for (unsigned i = 0; i < b->enc.nsids; i++) {
			sids[i].af = 6;
			memcpy(sids[i].a, b->enc.sids[i], 16);
		}
		f->sids.v = sids;
		f->sids.n = b->enc.nsids;
		f->has |= UINT64_C(1) << CATS_BFW_sids;
	} else if (b->enc.kind == CATS_ENC_MPLS) {
		for (unsigned i = 0; i < b->enc.nlabels; i++)
			labels[i] = b->enc.labels[i];
		f->labels.v = labels;
		f->labels.n = b->enc.nlabels;
		f->has |= UINT64_C(1) << CATS_BFW_labels;
	} else if (b->enc.kind == CATS_ENC_IPIP) {
		f->tunnel_dst.af = b->enc.outer_af;
		memcpy(f->tunnel_dst.a, b->enc.dst, 16);
		f->has |= UINT64_C(1) << CATS_BFW_tunnel_dst;
	}
	if (bd->egress != NULL) {
		f->egress = bd->egress;
		f->has |= UINT64_C(1) << CATS_BFW_egress;
	}
	struct cats_bind_rev *v = &bd->rev;
	cats_fkey_to_flow(&b->keys[CATS_DIR_IN_REV], &v->match, w->cf.tenant);
	v->restore_src.af = b->af;
	memcpy(v->restore_src.a, b->restore, 16);
	v->owner = w->cf.id;
	v->has = UINT64_C(1) << CATS_BRV_match |
	    UINT64_C(1) << CATS_BRV_restore_src | UINT64_C(1) << CATS_BRV_owner;
	CATS_SET_IF(!(k->wild & CATS_WILD_DPORT), v, BRV, restore_port,
	    k->dport);
	CATS_SET_IF(b->rkind != b->fkind, v, BRV, encap, b->rkind);
}

/*
 * The C-PS answers again: every fallback binding it was not told of goes
 * to the binding manager, once (again at the next answer if the channel
 * is down).
 */
static void
fb_report(struct cats_fwdp *w, uint64_t now)
{
	struct cats_htab *h = &w->tab.bind_by_id;
	for (size_t i = 0; w->fb_unreported > 0 && i < h->cap; i++) {
		struct cats_fbind *b = h->s[i].item;
		if (h->s[i].h == 0 || !b->fallback || b->reported_fb)
			continue;
		struct cats_rec r;
		struct cats_ip sids[CATS_PKT_MAX_SIDS];
		uint64_t labels[CATS_PKT_MAX_SIDS];
		struct cats_err e;
		fb_record(w, b, sids, labels, now, &r);
		if (cats_rec_validate(&r, &e) < 0) {
			cats_warnx("fallback binding %" PRIu64 ": %s: %s", b->id,
			    e.field, e.reason);
			continue;
		}
		if (w->emit == NULL || w->emit(w->hook_arg, CATS_FWDP_BIND,
		    &r) < 0)
			return;
		b->reported_fb = true;
		w->fb_unreported--;
		w->ctr[CATS_FC_fallback_reported]++;
		cats_audit("fallback-reported", "cs_id=%s id=%" PRIu64 " txn=%"
		    PRIu64, b->cs_id, b->id, b->txn);
	}
}

/* The C-PS answered: no longer silent; what was bound meanwhile is told. */
static void
cps_answered(struct cats_fwdp *w, uint64_t now)
{
	cats_ifb_answer(&w->cf.fb);
	if (w->fb_unreported > 0)
		fb_report(w, now);
}

/*
 * At the egress (--learn-reverse): an unbound flow's forward packet,
 * delivered because its destination is owned, teaches the reverse of the
 * flow (replies go back the way the packet came, to its outer source) for
 * an idle time: the reverse of the flows an ingress bound by its fallback
 * while the C-PS, and so the binding manager, were away.  Marked learned,
 * audited, never reported; a binding of the manager for the flow takes
 * its place.
 */
static void
learn_unbound(struct cats_fwdp *w, const struct cats_pkt *pk,
    const uint8_t *outer_src, uint8_t outer_af, uint64_t now)
{
	struct cats_fbind nb, *b;
	char a[64], d[64], o[64];
	if (outer_af == 0 || !pk->has_ports || (pk->proto != 6 &&
	    pk->proto != 17))
		return;
	memset(&nb, 0, sizeof(nb));
	nb.id = w->local_id++;
	nb.version = 1;
	nb.epoch = w->tab.epoch_max;
	nb.egress = nb.learned = true;
	nb.af = pk->af;
	nb.idle_ms = w->cf.learn_rev_ms;
	nb.fkind = nb.rkind = outer_af == 6 ? CATS_DP_SRV6 : CATS_DP_IPIP;
	cats_fkey_from_pkt(&nb.keys[CATS_DIR_EG_FWD], pk, CATS_DIR_EG_FWD, 0);
	struct cats_fkey *rk = &nb.keys[CATS_DIR_EG_REV];
	const struct cats_fkey *fk = &nb.keys[CATS_DIR_EG_FWD];
	rk->af = fk->af;
	rk->proto = fk->proto;
	rk->dir = CATS_DIR_EG_REV;
	memcpy(rk->src, fk->dst, 16);
	memcpy(rk->dst, fk->src, 16);
	rk->sport = fk->dport;
	rk->dport = fk->sport;
	memcpy(nb.locator, fk->dst, 16);
	nb.keyed[CATS_DIR_EG_FWD] = nb.keyed[CATS_DIR_EG_REV] = true;
	nb.renc.kind = outer_af == 6 ? CATS_ENC_SRV6 : CATS_ENC_IPIP;
	nb.renc.flowlabel = !w->cf.fc.flowlabel_off;
	nb.renc_learn = true;
	learn_return(w, &nb, outer_src, outer_af);
	if (cats_fwd_insert(&w->tab, &nb, now, &b) != 0)
		return;
	track(w, b, pk, false);
	w->ctr[CATS_FC_reverse_learned]++;
	struct cats_ip ip = { .af = outer_af };
	memcpy(ip.a, outer_src, outer_af == 4 ? 4 : 16);
	cats_audit("reverse-learned", "id=%" PRIu64 " proto=%u src=%s sport=%u "
	    "dst=%s dport=%u return=%s", b->id, pk->proto,
	    key_fmt(fk, false, a, sizeof(a)), fk->sport,
	    key_fmt(fk, true, d, sizeof(d)), fk->dport,
	    cats_ip_fmt(&ip, o, sizeof(o)));
}

/* ---- classification ---- */

static bool
is_sid(const struct cats_fwdp *w, uint8_t af, const uint8_t *a)
{
	for (size_t i = 0; i < w->cf.nsids; i++)
		if (w->cf.sids[i].af == af && memcmp(w->cf.sids[i].a, a,
		    af == 4 ? 4 : 16) == 0)
			return true;
	return false;
}

static bool
is_owned(const struct cats_fwdp *w, const struct cats_pkt *pk)
{
	struct cats_ip ip = { .af = pk->af };
	memcpy(ip.a, cats_pkt_dst(pk), pk->af == 4 ? 4 : 16);
	for (size_t i = 0; i < w->cf.nowns; i++)
		if (cats_prefix_has(&w->cf.owns[i], &ip))
			return true;
	return false;
}

static const struct cats_fwd_svc *
find_svc(const struct cats_fwdp *w, const struct cats_pkt *pk)
{
	const uint8_t *d = cats_pkt_dst(pk);
	for (size_t i = 0; i < w->cf.nsvc; i++) {
		const struct cats_fwd_svc *s = &w->cf.svc[i];
		if (s->addr.af != pk->af || memcmp(s->addr.a, d,
		    pk->af == 4 ? 4 : 16) != 0)
			continue;
		if (s->proto && s->proto != pk->proto)
			continue;
		if (s->port && (!pk->has_ports || s->port != pk->dport))
			continue;
		return s;
	}
	return NULL;
}

/* The CS-ID of the --service address a flow key goes to ("" if none). */
static const char *
svc_csid(const struct cats_fwdp *w, const struct cats_fkey *k)
{
	for (size_t i = 0; i < w->cf.nsvc; i++) {
		const struct cats_fwd_svc *s = &w->cf.svc[i];
		if (s->addr.af == k->af && memcmp(s->addr.a, k->dst, k->af == 4 ?
		    4 : 16) == 0 && (!s->proto || s->proto == k->proto) &&
		    (!s->port || ((k->wild & CATS_WILD_DPORT) == 0 &&
		    s->port == k->dport)))
			return s->cs_id;
	}
	return "";
}

/*
 * The request metadata of a client packet without a binding: Mode A from
 * the parse, Mode B where configured, the CS-ID of the service address
 * (001 §6: never silently combine two services).  -1: dropped (counted).
 */
static int
client_meta(struct cats_fwdp *w, const struct cats_pkt *pk,
    const struct cats_fwd_svc *s, struct cats_req_meta *meta)
{
	const struct cats_fwdp_conf *cf = &w->cf;
	*meta = pk->meta;
	if (!meta->present && cf->modeb_proto && pk->proto == cf->modeb_proto &&
	    pk->dport == cf->modeb_port) {
		if (cats_modeb_parse(pk, (size_t)cf->modeb_off, meta) < 0) {
			w->ctr[CATS_FC_drop_bad_modeb]++;
			return -1;
		}
	}
	if (meta->cs_id[0] && s->cs_id[0] && strcmp(meta->cs_id,
	    s->cs_id) != 0) {
		if (cf->precedence == 0) {
			w->ctr[CATS_FC_drop_csid_mismatch]++;
			char a[64];
			struct cats_ip ip = { .af = pk->af };
			memcpy(ip.a, cats_pkt_dst(pk), pk->af == 4 ? 4 : 16);
			cats_audit("csid-mismatch", "cs_id=%s addr=%s addr_cs_id=%s",
			    meta->cs_id, cats_ip_fmt(&ip, a, sizeof(a)), s->cs_id);
			return -1;
		}
		if (cf->precedence == 2)
			cats_strlcpy(meta->cs_id, s->cs_id, sizeof(meta->cs_id));
	}
	if (!meta->cs_id[0] && s->cs_id[0])
		cats_strlcpy(meta->cs_id, s->cs_id, sizeof(meta->cs_id));
	return 0;
}

/* A client packet at the ingress. */
static void
on_client(struct cats_fwdp *w, struct cats_pkt *pk,
    const struct cats_rxmeta *m, uint64_t now)
{
	struct cats_fkey k;
	cats_fkey_from_pkt(&k, pk, CATS_DIR_IN_FWD, w->tenant_h);
	struct cats_fbind *b = cats_fwd_lookup(&w->tab, &k);
	if (b != NULL && pk->proto == 6 && (pk->tcp_flags & (CATS_TCP_SYN |
	    CATS_TCP_ACK | CATS_TCP_RST)) == CATS_TCP_SYN &&
	    cats_fbind_tracked(&w->tab, b) && cats_fbind_closing(b)) {
		/* A reused 5-tuple after a FIN or a RST: a new connection,
		 * selected afresh; the old binding ends here. */
		w->tab.st.tcp_reused++;
		bind_gone(b, cats_fbind_tcp_why(&w->tab, b), w);
		cats_fwd_remove(&w->tab, b);
		b = NULL;
	}
	if (b != NULL) {
		ingress_forward(w, b, pk, m, now);
		return;
	}
	const struct cats_fwd_svc *s = find_svc(w, pk);
	if (s == NULL) {
		w->ctr[CATS_FC_drop_not_service]++;
		return;
	}
	w->ctr[CATS_FC_misses]++;
	if (w->cf.affinity == CATS_AFF_CLIENT) {
		k.sport = 0;
		k.wild |= CATS_WILD_SPORT;
	}
	struct cats_req_meta meta;
	if (client_meta(w, pk, s, &meta) < 0)
		return;
	bool established = pk->proto == 6 && !(pk->tcp_flags & CATS_TCP_SYN);
	if (established && w->synced) {
		/* A mid-connection packet never starts a selection. */
		w->ctr[CATS_FC_drop_no_binding_tcp]++;
		return;
	}
	struct cats_pend *p;
	struct cats_rxmeta mm = *m;
	cats_out_csum_fix(&mm, pk);	/* a held packet is sent whole */
	int r = cats_fwd_hold(&w->tab, &k, pk->p, pk->len,
	    (uint32_t)(m->in - w->ports), now, &p);
	if (r < 0) {
		w->drop_pend[-r]++;
		return;
	}
	if (r == CATS_PEND_NEW) {
		if (w->clock_us != NULL)
			p->head->arrived_us = w->clock_us();
		p->meta = meta;
		p->established = established;
		/* The C-PS's channel is down: a fallback service's flow
		 * need not wait for the deadline. */
		if (w->synced && !send_request(w, p, pk))
			fb_bind(w, p, now);
	}
}

/* The egress learns the return tunnel of b from the first forward packet's
 * outer source (when the binding named none). */
static void
learn_return(struct cats_fwdp *w, struct cats_fbind *b,
    const uint8_t *outer_src, uint8_t outer_af)
{
	if (!b->renc_learn || outer_af == 0 || cats_encap_ready(&b->renc))
		return;
	if (b->renc.kind == CATS_ENC_SRV6 && outer_af == 6) {
		memcpy(b->renc.sids[0], outer_src, 16);
		b->renc.nsids = 1;
		b->renc.outer_af = 6;
		memcpy(b->renc.src, w->cf.fc.src6, 16);
	} else if (b->renc.kind == CATS_ENC_IPIP) {
		size_t alen = outer_af == 4 ? 4 : 16;
		memcpy(b->renc.dst, outer_src, alen);
		b->renc.outer_af = outer_af;
		memcpy(b->renc.src, outer_af == 4 ? w->cf.fc.src4 :
		    w->cf.fc.src6, alen);
	}
}

/* Site-local steering (steer.h): a packet to a failed instance goes to
 * the redirect's target; the fast path is not offered its flow. */
static bool
steer_fwd(struct cats_fwdp *w, struct cats_pkt *pk, uint64_t now)
{
	const struct cats_fsteer_ent *e = cats_fsteer_fwd(w->steer, pk->af,
	    cats_pkt_dst(pk), pk->dport, now);
	if (e == NULL)
		return false;
	cats_pkt_set_dst(pk, e->to_loc.a, e->ports ? e->to_port : pk->dport);
	w->steer->st.fwd_pkts++;
	return true;
}

/* A reply of a redirect's target, not a flow of its own: the flow it is
 * the reply of when its source is put back to the address the client sent
 * to; then the packet's source is put back. */
static struct cats_fbind *
steer_rev(struct cats_fwdp *w, struct cats_pkt *pk, uint64_t now)
{
	struct cats_fkey k;
	struct cats_fbind *b = NULL;
	const struct cats_fsteer_ent *e = NULL;
	while (b == NULL && (e = cats_fsteer_rev(w->steer, pk->af,
	    cats_pkt_src(pk), pk->sport, now, e)) != NULL) {
		cats_fkey_from_pkt(&k, pk, CATS_DIR_EG_REV, 0);
		memcpy(k.src, e->from_loc.a, pk->af == 4 ? 4 : 16);
		if (e->ports && pk->has_ports)
			k.sport = e->from_port;
		b = cats_fwd_lookup(&w->tab, &k);
	}
	if (b == NULL)
		return NULL;
	cats_pkt_set_src(pk, e->from_loc.a, e->ports ? e->from_port :
	    pk->sport);
	w->steer->st.rev_pkts++;
	return b;
}

/* A decapsulated packet from the core. */
static void
on_core_inner(struct cats_fwdp *w, struct cats_pkt *pk,
    const uint8_t *outer_src, uint8_t outer_af, const struct cats_rxmeta *m,
    uint64_t now)
{
	struct cats_fkey k;
	if (w->client != NULL) {
		cats_fkey_from_pkt(&k, pk, CATS_DIR_IN_REV, 0);
		struct cats_fbind *b = cats_fwd_lookup(&w->tab, &k);
		if (b != NULL) {
			cats_fbind_count(b, 1, pk->len, now);
			track(w, b, pk, true);
			cats_pkt_set_src(pk, b->restore, b->restore_port);
			if (cats_pkt_dec_ttl(pk)) {
				w->drop_pkt[CATS_DROP_TTL]++;
				return;
			}
			w->ctr[CATS_FC_rev_pkts]++;
			cats_out_big(w, w->client, pk, m, now);
			cats_fast_maybe(w, b, now);
			return;
		}
	}
	if (w->site == NULL) {
		w->ctr[CATS_FC_drop_no_reverse_binding]++;
		return;
	}
	cats_fkey_from_pkt(&k, pk, CATS_DIR_EG_FWD, 0);
	struct cats_fbind *b = cats_fwd_lookup(&w->tab, &k);
	if (b != NULL) {
		cats_fbind_count(b, 0, pk->len, now);
		track(w, b, pk, false);
		learn_return(w, b, outer_src, outer_af);
	} else if (!is_owned(w, pk)) {
		w->ctr[CATS_FC_drop_not_owned]++;
		return;
	} else {
		w->ctr[CATS_FC_eg_unbound]++;
		if (w->cf.learn_rev_ms)
			learn_unbound(w, pk, outer_src, outer_af, now);
	}
	if (cats_pkt_dec_ttl(pk)) {
		w->drop_pkt[CATS_DROP_TTL]++;
		return;
	}
	bool steered = w->steer != NULL && steer_fwd(w, pk, now);
	w->ctr[CATS_FC_eg_fwd_pkts]++;
	cats_out_big(w, w->site, pk, m, now);
	if (b != NULL && !steered)
		cats_fast_maybe(w, b, now);
}

/* A dropped packet, with -v: formatted only then (floods stay cheap). */
static void
debug_pkt(const struct cats_fwdp *w, const char *what,
    const struct cats_pkt *pk)
{
	char a[64], b[64];
	if (w->verbosity < 2)
		return;
	struct cats_ip s = { .af = pk->af }, d = { .af = pk->af };
	memcpy(s.a, cats_pkt_src(pk), pk->af == 4 ? 4 : 16);
	memcpy(d.a, cats_pkt_dst(pk), pk->af == 4 ? 4 : 16);
	cats_debug("%s: proto %u %s:%u -> %s:%u", what, pk->proto,
	    cats_ip_fmt(&s, a, sizeof(a)), pk->sport,
	    cats_ip_fmt(&d, b, sizeof(b)), pk->dport);
}

/* An instance's reply at the egress. */
static void
on_site(struct cats_fwdp *w, struct cats_pkt *pk, const struct cats_rxmeta *m,
    uint64_t now)
{
	struct cats_fkey k;
	cats_fkey_from_pkt(&k, pk, CATS_DIR_EG_REV, 0);
	struct cats_fbind *b = cats_fwd_lookup(&w->tab, &k);
	bool steered = false;
	if (b == NULL && w->steer != NULL)
		steered = (b = steer_rev(w, pk, now)) != NULL;
	if (b == NULL) {
		/* Never a selection, never to an arbitrary client. */
		w->ctr[CATS_FC_drop_no_reverse_binding]++;
		debug_pkt(w, "no reverse binding", pk);
		return;
	}
	if (!cats_encap_ready(&b->renc)) {
		w->ctr[CATS_FC_drop_no_return_path]++;
		return;
	}
	cats_fbind_count(b, 1, pk->len, now);
	track(w, b, pk, true);
	to_core(w, pk, m, &b->renc, CATS_FC_eg_rev_pkts, now);
	if (!steered)
		cats_fast_maybe(w, b, now);
}

/* The binding of the quoted flow by its key of direction dir, the flow
 * turned round (turn) or not. */
static struct cats_fbind *
quote_lookup(struct cats_fwdp *w, const struct cats_quote *q, int dir,
    bool turn)
{
	struct cats_fkey k;
	size_t al = q->af == 4 ? 4 : 16;
	memset(&k, 0, sizeof(k));
	k.af = q->af;
	k.proto = q->proto;
	k.dir = (uint8_t)dir;
	memcpy(k.src, turn ? q->dst : q->src, al);
	memcpy(k.dst, turn ? q->src : q->dst, al);
	k.sport = turn ? q->dport : q->sport;
	k.dport = turn ? q->sport : q->dport;
	return cats_fwd_lookup(&w->tab, &k);
}

/*
 * An ICMP error from the core about a packet this forwarder encapsulated
 * (a router on the path found no route, the hop limit ran out) is counted;
 * with --path-down the binding whose packet it was is reported with a
 * path-down status, at most once per PATH_DOWN_MS, for the control plane
 * to repair its path.  The forwarder itself changes nothing: the error is
 * unauthenticated, and the binding stays until the control plane says
 * otherwise.
 */
#define PATH_DOWN_MS 5000
static bool
on_core_icmp(struct cats_fwdp *w, const struct cats_pkt *pk, uint64_t now)
{
	const struct cats_fwd_conf *fc = &w->cf.fc;
	struct cats_quote q;
	if (cats_pkt_icmp_quote(pk, fc->has_src4 ? fc->src4 : NULL,
	    fc->has_src6 ? fc->src6 : NULL, &q) < 0)
		return false;
	w->ctr[CATS_FC_path_errors]++;
	if (!w->cf.path_down)
		return true;
	/* A client's packet, rewritten, at the ingress: its binding's reverse
	 * key; an instance's reply at the egress: its own. */
	struct cats_fbind *b = w->client != NULL ?
	    quote_lookup(w, &q, CATS_DIR_IN_REV, true) : NULL;
	if (b == NULL && w->site != NULL)
		b = quote_lookup(w, &q, CATS_DIR_EG_REV, false);
	if (b == NULL || (b->path_down_at != 0 &&
	    now - b->path_down_at < PATH_DOWN_MS))
		return true;
	b->path_down_at = now;
	w->ctr[CATS_FC_path_down_sent]++;
	/* The segment the router could not reach, for the repair to avoid. */
	struct cats_ip at = { .af = pk->af };
	memcpy(at.a, q.outer_dst, pk->af == 4 ? 4 : 16);
	send_status_at(w, b, CATS_EV_PATH_DOWN, q.what, 0, 0, &at, now);
	return true;
}

static bool
is_label(uint32_t label, void *arg)
{
	const struct cats_fwdp *w = arg;
	for (size_t i = 0; i < w->cf.nlabels; i++)
		if (w->cf.labels[i] == label)
			return true;
	return false;
}

void
cats_fwdp_mpls(struct cats_fwdp *w, uint8_t *p, size_t len,
    const struct cats_rxmeta *m, uint64_t now)
{
	uint8_t *inner;
	size_t ilen;
	struct cats_pkt pk;
	w->now = now;
	int r = cats_mpls_pop(p, len, is_label, w, &inner, &ilen);
	if (r == 0)
		r = cats_pkt_parse(&pk, inner, ilen);
	if (r) {
		w->drop_pkt[r]++;
		return;
	}
	on_core_inner(w, &pk, NULL, 0, m, now);
}

/*
 * A plain IP packet on the core of a flow bound with SR-MPLS: its last
 * label was popped one hop before (penultimate hop popping, the SR-MPLS
 * default without an explicit null).  Handled as decapsulated; false when
 * it is no such flow's.
 */
static bool
on_core_php(struct cats_fwdp *w, struct cats_pkt *pk,
    const struct cats_rxmeta *m, uint64_t now)
{
	struct cats_fkey k;
	struct cats_fbind *b = NULL;
	if (w->client != NULL) {
		cats_fkey_from_pkt(&k, pk, CATS_DIR_IN_REV, 0);
		b = cats_fwd_lookup(&w->tab, &k);
		if (b != NULL && b->rkind != CATS_DP_SRMPLS)
			b = NULL;
	}
	if (b == NULL && w->site != NULL) {
		cats_fkey_from_pkt(&k, pk, CATS_DIR_EG_FWD, 0);
		b = cats_fwd_lookup(&w->tab, &k);
		if (b != NULL && b->fkind != CATS_DP_SRMPLS)
			b = NULL;
	}
	if (b == NULL)
		return false;
	on_core_inner(w, pk, NULL, 0, m, now);
	return true;
}

void
cats_fwdp_packet(struct cats_fwdp *w, uint8_t *ip, size_t len,
    const struct cats_rxmeta *m, uint64_t now)
{
	struct cats_pkt pk;
	w->now = now;
	int r = cats_pkt_parse(&pk, ip, len);
	if (r) {
		w->drop_pkt[r]++;
		return;
	}
	int roles = m->in->roles;
	const uint8_t *d = cats_pkt_dst(&pk);
	if ((roles & CATS_PORT_CORE) && (pk.proto == 4 || pk.proto == 41) &&
	    is_sid(w, pk.af, d)) {
		uint8_t *inner, osrc[16];
		size_t ilen;
		r = cats_decap(&pk, &inner, &ilen, osrc);
		if (r) {
			w->drop_pkt[r]++;
			return;
		}
		struct cats_pkt ip2;
		r = cats_pkt_parse(&ip2, inner, ilen);
		if (r) {
			w->drop_pkt[r]++;
			return;
		}
		on_core_inner(w, &ip2, osrc, pk.af, m, now);
		return;
	}
	if ((pk.af == 6 && (d[0] == 0xff || (d[0] == 0xfe &&
	    (d[1] & 0xc0) == 0x80))) || (pk.af == 4 && d[0] >= 224)) {
		w->ctr[CATS_FC_ignored]++;	/* multicast, link-local */
		return;
	}
	if (roles & CATS_PORT_CLIENT) {
		on_client(w, &pk, m, now);
		return;
	}
	if (roles & CATS_PORT_SITE) {
		on_site(w, &pk, m, now);
		return;
	}
	if ((roles & CATS_PORT_CORE) && (pk.proto == 1 || pk.proto == 58) &&
	    on_core_icmp(w, &pk, now))
		return;
	if ((roles & CATS_PORT_CORE) && pk.proto != 4 && pk.proto != 41 &&
	    on_core_php(w, &pk, m, now))
		return;
	if (roles & CATS_PORT_CORE)
		w->drop_pkt[(pk.proto == 4 || pk.proto == 41) ?
		    CATS_DROP_NOT_OURS : CATS_DROP_NOT_TUNNEL]++;
}

/* ---- packet I/O ---- */

void
cats_fwdp_frame(struct cats_fwdp *w, struct cats_port *pt,
    const struct cats_port_frame *fr, uint64_t now)
{
	uint8_t *f = fr->f;
	size_t len = fr->len;
	struct cats_rxmeta m = { .in = pt };
	if (!fr->whole || len < 14) {
		w->ctr[CATS_FC_drop_truncated_frame]++;
		return;
	}
	if (f[0] & 1) {
		w->ctr[CATS_FC_ignored]++;	/* L2 multicast / broadcast */
		return;
	}
	uint16_t et = (uint16_t)(f[12] << 8 | f[13]);
	if (!pt->fixed_peer && (!pt->has_peer ||
	    memcmp(pt->peer, f + 6, 6) != 0)) {
		pt->peer_moved |= pt->has_peer;
		memcpy(pt->peer, f + 6, 6);
		pt->has_peer = true;
	}
	const struct virtio_net_hdr *vh = fr->vh;
	if (et == 0x8847 && (pt->roles & CATS_PORT_CORE)) {
		/* Labelled by a kernel (a fast path's push): the checksum
		 * it left to the hardware is completed here. */
		if ((vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) &&
		    (vh->gso_type != VIRTIO_NET_HDR_GSO_NONE ||
		    vh->csum_start < 14 || cats_pkt_csum_complete(f + 14,
		    len - 14, (uint16_t)(vh->csum_start - 14u),
		    vh->csum_offset) != 0)) {
			w->drop_pkt[CATS_DROP_TRUNCATED]++;
			return;
		}
		cats_fwdp_mpls(w, f + 14, len - 14, &m, now);
		return;
	}
	if (et != 0x0800 && et != 0x86dd) {
		w->ctr[CATS_FC_ignored]++;
		return;
	}
	if (vh->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		m.gso_size = vh->gso_size;
		m.gso_type = vh->gso_type;
	}
	if (vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
		m.csum_start = (uint16_t)(vh->csum_start - 14u);
		m.csum_off = vh->csum_offset;
		if (cats_out_gso_cut(&m, f + 14, len - 14)) {
			m.csum_partial = true;
		} else if (cats_pkt_csum_complete(f + 14, len - 14,
		    m.csum_start, m.csum_off) != 0) {
			w->drop_pkt[CATS_DROP_TRUNCATED]++;
			return;
		}
	}
	cats_fwdp_packet(w, f + 14, len - 14, &m, now);
}

static unsigned
rx_ring(struct cats_fwdp *w, struct cats_port *pt, uint64_t now)
{
	unsigned budget = CATS_PORT_RX_BATCH;
	uint8_t *wbuf = w->wroom + HR;
	struct cats_port_frame fr;
	while (budget-- > 0) {
		if (!cats_port_rx_next(pt, &fr, wbuf - 14, 14 + 65536 + 256))
			break;
		cats_fwdp_frame(w, pt, &fr, now);
		cats_port_rx_done(pt);
	}
	cats_fwdp_tx_flush(w);
	/* More frames waiting: come back after other events. */
	if (budget == (unsigned)-1) {
		if (pt->ev != NULL)
			event_active(pt->ev, EV_READ, 0);
		return CATS_PORT_RX_BATCH + 1;
	}
	return CATS_PORT_RX_BATCH - 1 - budget;
}

static unsigned
rx_tun(struct cats_fwdp *w, struct cats_port *pt, uint64_t now)
{
	uint8_t *wbuf = w->wroom + HR;
	unsigned i;
	for (i = 0; i < 64; i++) {
		ssize_t n = read(pt->rxfd, wbuf, 65536);
		if (n <= 0)
			break;
		struct cats_rxmeta m = { .in = pt };
		pt->rx_pkts++;
		pt->rx_bytes += (size_t)n;
		cats_fwdp_packet(w, wbuf, (size_t)n, &m, now);
	}
	return i;
}

unsigned
cats_fwdp_rx(struct cats_fwdp *w, struct cats_port *pt, uint64_t now)
{
	w->now = now;
	if (pt->kind == CATS_PORT_PACKET)
		return rx_ring(w, pt, now);
	if (pt->kind == CATS_PORT_TUN)
		return rx_tun(w, pt, now);
	return 0;
}

/* ---- control records in ---- */

static void
after_sync(struct cats_fwdp *w, uint64_t now)
{
	struct cats_fwd *t = &w->tab;
	/* Pending records held while the bindings were fetched again. */
	size_t n = 0;
	struct cats_pend **v = malloc(t->st.pending * sizeof(*v) + 1);
	if (v == NULL)
		return;
	for (size_t i = 0; i < t->pend_by_key.cap; i++)
		if (t->pend_by_key.s[i].h)
			v[n++] = t->pend_by_key.s[i].item;
	for (size_t i = 0; i < n; i++) {
		struct cats_pend *p = v[i];
		if (p->sent)
			continue;
		struct cats_fbind *b = cats_fwd_lookup(t, &p->key);
		if (b != NULL)
			release_held(w, b, cats_fwd_pend_take(t, p), now);
		else if (p->established)
			drop_held(w, cats_fwd_pend_take(t, p),
			    CATS_FC_drop_not_synced, now);
		else
			send_request(w, p, NULL);
	}
	free(v);
}

/*
 * The end of a re-sync at manager epoch e: bindings of older epochs that
 * were not sent again belong to a fenced owner and go.
 */
static void
fence_older(struct cats_fwdp *w, uint64_t e, uint64_t now)
{
	struct cats_fwd *t = &w->tab;
	size_t n = 0;
	struct cats_fbind **v = malloc((t->st.bindings + 1) * sizeof(*v));
	if (v == NULL)
		return;
	if (e > t->epoch_max)
		t->epoch_max = e;
	for (size_t i = 0; i < t->bind_by_id.cap; i++) {
		struct cats_fbind *b = t->bind_by_id.s[i].item;
		if (t->bind_by_id.s[i].h && b->epoch < e && !b->fallback &&
		    !b->learned)
			v[n++] = b;
	}
	for (size_t i = 0; i < n; i++) {
		w->ctr[CATS_FC_bindings_removed]++;
		send_status(w, v[i], CATS_EV_REMOVED, "fenced", 0, 0, now);
		cats_fwd_remove(t, v[i]);
	}
	free(v);
}

/* The C-PS answered the request of the flow whose held packets are h. */
static void
cps_latency(struct cats_fwdp *w, const struct cats_held *h)
{
	if (h != NULL && h->asked_us != 0)
		cats_hist_observe(&w->h_cps, w->clock_us() - h->asked_us);
}

static void
on_binding(struct cats_fwdp *w, const struct cats_binding *b, uint64_t now)
{
	struct cats_fbind *fb;
	struct cats_held *rel;
	int ev = 0;
	int r = cats_fwd_apply(&w->tab, b, now, &fb, &rel, &ev);
	if (r) {
		w->ctr[CATS_FC_bindings_refused]++;
		cats_warnx("binding %" PRIu64 ": refused: %s", b->id,
		    cats_fwd_reason_names[r]);
		/* An older owner still sending: split forwarding prevented. */
		if (r == CATS_FR_FENCED)
			cats_audit("fenced", "binding=%" PRIu64 " epoch=%"
			    PRIu64 " highest=%" PRIu64, b->id, b->epoch,
			    w->tab.epoch_max);
		send_status(w, NULL, CATS_EV_FAILED, cats_fwd_reason_names[r],
		    b->id, b->epoch, now);
		return;
	}
	if (ev == CATS_EV_REMOVED) {
		w->ctr[CATS_FC_bindings_removed]++;
		send_status(w, fb, CATS_EV_REMOVED, b->reason, 0, 0, now);
		cats_fwd_remove(&w->tab, fb);
		return;
	}
	w->ctr[ev == CATS_EV_INSTALLED ? CATS_FC_bindings_installed :
	    CATS_FC_bindings_refreshed]++;
	/* An eligible instance and path of its service, for a fallback: the
	 * binding's CS-ID, else that of its service address here. */
	if (w->cf.fb.n > 0 && fb->ingress && !fb->fallback)
		cats_ifb_learn(&w->cf.fb, fb, fb->cs_id[0] ? fb->cs_id :
		    svc_csid(w, &fb->keys[CATS_DIR_IN_FWD]), b->egress, now);
	cps_latency(w, rel);
	/* Forward and reverse state are in; now the held packets go. */
	release_held(w, fb, rel, now);
	send_status(w, fb, ev, NULL, 0, 0, now);
}

void
cats_fwdp_ctl(struct cats_fwdp *w, const struct cats_rec *r, bool from_bind,
    uint64_t now)
{
	w->now = now;
	switch (r->type) {
	case CATS_T_BINDING:
		on_binding(w, &r->u.binding, now);
		cps_answered(w, now);
		break;
	case CATS_T_ERROR: {
		w->ctr[CATS_FC_errors_received]++;
		struct cats_pend *pd = cats_fwd_error(&w->tab, &r->u.error);
		if (pd != NULL) {
			w->tab.st.pend_errors++;
			struct cats_held *h = cats_fwd_pend_take(&w->tab, pd);
			cps_latency(w, h);
			drop_held(w, h, CATS_FC_drop_pending_error, now);
		}
		cps_answered(w, now);
		break;
	}
	case CATS_T_STATUS:
		/* cats-bind answers a hello after it re-sent the bindings. */
		if (from_bind && r->u.status.event == CATS_EV_HELLO) {
			if (CATS_HAS(&r->u.status, STA, epoch))
				fence_older(w, r->u.status.epoch, now);
			if (!w->synced) {
				w->synced = true;
				cats_info("bindings fetched again; forwarding");
				after_sync(w, now);
			}
			cps_answered(w, now);
		}
		break;
	default:
		break;
	}
}

/*
 * The data planes the forwarder advertises, a bit per enum cats_dataplane
 * (IP-in-IP when it has either outer family): what --encaps leaves of what
 * it has the means for.
 */
unsigned
cats_fwdp_dataplanes(const struct cats_fwdp *w)
{
	const struct cats_fwd_conf *fc = &w->tab.c;
	unsigned m = 0;
#define CAN(dp) (fc->encaps == 0 || (fc->encaps & (1u << (dp))))
	if (CAN(CATS_DP_IP))
		m |= 1u << CATS_DP_IP;
	if (CAN(CATS_DP_IPIP) && (fc->has_src4 || fc->has_src6))
		m |= 1u << CATS_DP_IPIP;
	if (CAN(CATS_DP_SRV6) && fc->has_src6)
		m |= 1u << CATS_DP_SRV6;
	if (CAN(CATS_DP_SRMPLS) && !fc->no_mpls)
		m |= 1u << CATS_DP_SRMPLS;
#undef CAN
	return m;
}

int
cats_fwdp_dataplane(const struct cats_fwdp *w)
{
	if (w->cf.dataplane >= 0)
		return w->cf.dataplane;
	unsigned m = cats_fwdp_dataplanes(w);
	for (int i = 0; i < 4; i++)
		if (m & (1u << dp_order[i]))
			return dp_order[i];
	return -1;
}

size_t
cats_fwdp_caps(const struct cats_fwdp *w, const char **v, char (*buf)[40])
{
	const struct cats_fwd_conf *fc = &w->tab.c;
	unsigned dps = cats_fwdp_dataplanes(w);
	size_t n = 0;
#define CAP(...) do { snprintf(buf[n], sizeof(buf[0]), __VA_ARGS__); \
	v[n] = buf[n]; n++; } while (0)
#define CAN(dp) (dps & (1u << (dp)))
	if (w->client != NULL)
		CAP("ingress");
	if (w->site != NULL)
		CAP("egress");
	CAP("af4");
	CAP("af6");
	if (CAN(CATS_DP_IP))
		CAP("ip");
	if (CAN(CATS_DP_IPIP) && fc->has_src4)
		CAP("ipip4");
	if (CAN(CATS_DP_IPIP) && fc->has_src6)
		CAP("ipip6");
	if (CAN(CATS_DP_SRV6)) {
		CAP("srv6");
		CAP("srv6-msd=%u", fc->msd);
	}
	if (CAN(CATS_DP_SRMPLS)) {
		CAP("srmpls");
		CAP("srmpls-msd=%u", fc->msd);
		if (fc->explicit_null)
			CAP("explicit-null");
	}
	CAP("mode-a");
	if (w->cf.modeb_proto)
		CAP("mode-b=%s:%d:%d", w->cf.modeb_proto == 6 ? "tcp" : "udp",
		    w->cf.modeb_port, w->cf.modeb_off);
	if (w->fp != NULL) {
		CAP("fast-path");
		unsigned fmsd = (CATS_FP_ENC_MAX - 48) / 16;
		CAP("fast-path-msd=%u", fmsd < fc->msd ? fmsd : fc->msd);
	}
	if (!fc->tcp_off)
		CAP("tcp-state");
	if (!fc->flowlabel_off)
		CAP("flow-label");
	if (w->cf.fb.n > 0)
		CAP("fallback");
	if (w->cf.learn_rev_ms)
		CAP("learn-reverse");
#undef CAN
#undef CAP
	return n;
}

/* Capabilities into status s, and their hash (to tell changes). */
static uint64_t
add_caps(struct cats_fwdp *w, struct cats_status *s, const char **v,
    char (*buf)[40])
{
	size_t n = cats_fwdp_caps(w, v, buf);
	uint64_t h = UINT64_C(14695981039346656037);
	for (size_t i = 0; i < n; i++)
		for (const char *c = v[i]; ; c++) {
			h = (h ^ (uint8_t)*c) * UINT64_C(1099511628211);
			if (*c == '\0')
				break;
		}
	s->caps.v = v;
	s->caps.n = n;
	s->has |= UINT64_C(1) << CATS_STA_caps;
	return h;
}

void
cats_fwdp_hello(struct cats_fwdp *w, uint64_t now)
{
	struct cats_rec r;
	const char *v[CATS_FWDP_NCAPS];
	char buf[CATS_FWDP_NCAPS][40];
	w->ctr[CATS_FC_bind_connects]++;
	cats_fwd_status(&w->tab, NULL, CATS_EV_HELLO, NULL, now, &r);
	CATS_SET(&r.u.status, STA, epoch, w->cf.epoch);
	w->caps_hash = add_caps(w, &r.u.status, v, buf);
	w->caps_at = now;
	w->ctr[CATS_FC_status_sent]++;
	if (w->emit != NULL)
		w->emit(w->hook_arg, CATS_FWDP_BIND, &r);
}

void
cats_fwdp_hello_select(struct cats_fwdp *w, uint64_t now)
{
	struct cats_rec r;
	cats_fwd_status(&w->tab, NULL, CATS_EV_HELLO, NULL, now, &r);
	CATS_SET(&r.u.status, STA, epoch, w->cf.epoch);
	if (w->emit != NULL)
		w->emit(w->hook_arg, CATS_FWDP_SELECT, &r);
}

void
cats_fwdp_resend_pending(struct cats_fwdp *w, uint64_t now)
{
	struct cats_fwd *t = &w->tab;
	(void)now;
	if (!w->synced)
		return;	/* the end of the bind re-sync sends them */
	for (size_t i = 0; i < t->pend_by_key.cap; i++) {
		struct cats_pend *p = t->pend_by_key.s[i].item;
		if (!t->pend_by_key.s[i].h || p->established)
			continue;
		if (send_request(w, p, NULL))
			w->ctr[CATS_FC_requests_resent]++;
	}
}

/* Once a second: capabilities that changed since they were told go to
 * the binding manager (status refreshed, reason capabilities). */
static void
caps_check(struct cats_fwdp *w, uint64_t now)
{
	struct cats_rec r;
	const char *v[CATS_FWDP_NCAPS];
	char buf[CATS_FWDP_NCAPS][40];
	if (now < w->caps_at + 1000)
		return;
	w->caps_at = now;
	cats_fwd_status(&w->tab, NULL, CATS_EV_REFRESHED, "capabilities", now,
	    &r);
	uint64_t h = add_caps(w, &r.u.status, v, buf);
	if (h == w->caps_hash)
		return;
	w->ctr[CATS_FC_status_sent]++;
	if (w->emit != NULL && w->emit(w->hook_arg, CATS_FWDP_BIND, &r) == 0)
		w->caps_hash = h;
}

/* ---- the tick ---- */

static void
pend_expired(struct cats_pend *p, void *arg)
{
	struct cats_fwdp *w = arg;
	/* Unanswered: a fallback service's flow is bound here. */
	if (p->sent && fb_bind(w, p, w->now))
		return;
	drop_held(w, cats_fwd_pend_take(&w->tab, p), CATS_FC_drop_pending_timeout,
	    w->now);
}

/* A binding of a closing connection ends for a new one of its flow. */
static void
bind_gone(struct cats_fbind *b, const char *why, void *arg)
{
	struct cats_fwdp *w = arg;
	w->ctr[CATS_FC_bindings_expired]++;
	if (b->fallback && !b->reported_fb)
		w->fb_unreported--;
	if (!b->learned)
		send_status(w, b, CATS_EV_EXPIRED, why, 0, 0, w->now);
}

static void
bind_expired(struct cats_fbind *b, const char *why, void *arg)
{
	bind_gone(b, why, arg);
}

void
cats_fwdp_tick(struct cats_fwdp *w, uint64_t now, bool report)
{
	struct cats_fwd *t = &w->tab;
	w->now = now;
	cats_fast_follow_peers(w);
	if (w->steer != NULL)
		cats_fsteer_expire(w->steer, now);
	if (!w->synced && now >= w->sync_deadline) {
		cats_warnx("no binding sync from %s; forwarding anyway",
		    w->cf.bind_ep ? w->cf.bind_ep : "(none)");
		w->synced = true;
		after_sync(w, now);
	}
	/*
	 * Bindings are visited a tenth of the table per tick (100 ms), the
	 * whole once a second, whatever their number: a refreshed status
	 * (reason activity) for those that carried traffic, then expiry.
	 */
	size_t cap = t->bind_by_id.cap, n = cap / 10 + 1;
	for (size_t j = 0; report && j < n && j < cap; j++) {
		size_t i = (w->tick_pos + j) & (cap - 1);
		struct cats_fbind *b = t->bind_by_id.s[i].item;
		if (t->bind_by_id.s[i].h == 0)
			continue;
		if (b->fast)
			cats_fast_sync(b, now, w);
		if (b->pkts + b->rpkts == b->rep_pkts)
			continue;
		uint64_t every = b->idle_ms ? b->idle_ms / 3 : 10000;
		if (now - b->reported < every)
			continue;
		b->reported = now;
		b->rep_pkts = b->pkts + b->rpkts;
		send_status(w, b, CATS_EV_REFRESHED, "activity", 0, 0, now);
	}
	cats_fwd_expire_step(t, now, &w->tick_pos, n, pend_expired,
	    bind_expired, w);
	cats_fwdp_fast_offer_queued(w, now, true);
	cats_fwdp_tx_flush(w);
	if (report)
		caps_check(w, now);
}

/* ---- counters ---- */

/* A composed counter name: prefix and a name whose '-' become '_'. */
static const char *
name2(struct cats_fwdp_names *names, size_t *nn, const char *prefix,
    const char *name)
{
	char *q = names->n[(*nn)++];
	snprintf(q, sizeof(names->n[0]), "%s%s", prefix, name);
	for (; *q; q++)
		if (*q == '-')
			*q = '_';
	return names->n[*nn - 1];
}

void
cats_fwdp_stats(struct cats_fwdp *w, struct cats_stats_list *st,
    struct cats_fwdp_names *names)
{
	size_t nn = 0;
	uint64_t *c = w->ctr;
	c[CATS_FC_rx_pkts] = c[CATS_FC_rx_bytes] = c[CATS_FC_tx_pkts] =
	    c[CATS_FC_tx_bytes] = c[CATS_FC_rx_copies] =
	    c[CATS_FC_rx_ring_drops] = 0;
	for (int i = 0; i < w->nports; i++) {
		struct cats_port *pt = &w->ports[i];
		cats_port_ring_drops(pt);
		c[CATS_FC_rx_pkts] += pt->rx_pkts;
		c[CATS_FC_rx_bytes] += pt->rx_bytes;
		c[CATS_FC_tx_pkts] += pt->tx_pkts;
		c[CATS_FC_tx_bytes] += pt->tx_bytes;
		c[CATS_FC_rx_copies] += pt->rx_copies;
		c[CATS_FC_rx_ring_drops] += pt->ring_drops;
	}
	for (int i = 0; i < CATS_FC__N; i++)
		cats_stats_add(st, cats_fwdp_ctr_names[i], c[i]);
	for (int i = 1; i < CATS_DROP__N; i++)
		cats_stats_add(st, name2(names, &nn, "drop_",
		    cats_drop_names[i]), w->drop_pkt[i]);
	for (int i = 1; i < CATS_FR__N; i++) {
		if (i > CATS_FR_PEND_CLIENT_FULL && i != CATS_FR_NOMEM &&
		    i != CATS_FR_BAD)
			continue;
		cats_stats_add(st, name2(names, &nn, "drop_",
		    cats_fwd_reason_names[i]), w->drop_pend[i]);
	}
	const struct cats_fwd_stats *fs = &w->tab.st;
	cats_stats_gauge(st, "bindings", fs->bindings);
	cats_stats_gauge(st, "pending", fs->pending);
	cats_stats_gauge(st, "pending_held", fs->held);
	cats_stats_gauge(st, "synced", w->synced);
	for (int i = 0; i < CATS_TCPS__N; i++)
		cats_stats_gauge(st, name2(names, &nn, "tcp_",
		    cats_tcps_names[i]), fs->tcp[i]);
	for (int i = 0; i < CATS_TCPS__N; i++)
		cats_stats_add(st, name2(names, &nn, "tcp_ended_",
		    cats_tcps_names[i]), fs->tcp_released[i]);
	cats_stats_add(st, "tcp_reused", fs->tcp_reused);
	if (w->steer != NULL) {
		const struct cats_fsteer_stats *ss = &w->steer->st;
		cats_stats_gauge(st, "steer_active", w->steer->n);
		cats_stats_add(st, "steer_records", ss->records);
		cats_stats_add(st, "steer_redirects", ss->redirects);
		cats_stats_add(st, "steer_ends", ss->ends);
		cats_stats_add(st, "steer_refused", ss->refused);
		cats_stats_add(st, "steer_bad", ss->bad);
		cats_stats_add(st, "steer_expired", ss->expired);
		cats_stats_add(st, "steer_fenced", ss->fenced);
		cats_stats_add(st, "steer_pkts", ss->fwd_pkts);
		cats_stats_add(st, "steer_rev_pkts", ss->rev_pkts);
	}
	if (w->fp != NULL) {
		uint64_t fc[CATS_FP__N];
		cats_fwd_fast_counters(w->fp, fc);
		cats_stats_gauge(st, "fast_keys", w->fp_keys);
		cats_stats_add(st, "fast_hit", fc[CATS_FP_HIT]);
		cats_stats_add(st, "fast_pass", fc[CATS_FP_PASS]);
		cats_stats_add(st, "fast_fail", fc[CATS_FP_FAIL]);
	}
}

void
cats_fwdp_stats_list(struct cats_fwdp *w, struct cats_stats_list *st,
    const char *id, struct cats_fwdp_names *names)
{
	cats_stats_init(st, "cats-fwd", id);
	cats_fwdp_stats(w, st, names);
	cats_stats_hist(st, "first_packet", &w->h_first);
	cats_stats_hist(st, "cps_answer", &w->h_cps);
}

void
cats_fwdp_dump_bindings(struct cats_fwdp *w, FILE *f, uint64_t now)
{
	struct cats_htab *h = &w->tab.bind_by_id;
	for (size_t i = 0; i < h->cap; i++) {
		if (h->s[i].h == 0)
			continue;
		struct cats_fbind *b = h->s[i].item;
		if (b->fast)
			cats_fast_sync(b, now, w);
		struct cats_rec r;
		cats_fwd_status(&w->tab, b, CATS_EV_REFRESHED, "counters", now,
		    &r);
		cats_rec_print_json(&r, f);
	}
}
