/*
 * bind.c - the flow/binding table and the flow state machine of 001 (the
 * layout is in bind_int.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind/bind_int.h"

const char *const bind_reason_names[] = {
	"ok", "timeout", "late-reply", "duplicate-txn", "duplicate-flow",
	"unknown-txn", "unknown-binding", "no-decision", "no-flow",
	"join-mismatch", "no-path", "path-error", "path-capability",
	"limit-global", "limit-tenant", "limit-client", "selection-failed",
	"commit-failed", "commit-timeout", "idle", "hard", "removed",
	"instance-failed", "repair-failed", "move-refused", "stale-epoch",
	"stale-version", "not-owner", "illegal-transition", "no-memory",
	"bad-record", NULL
};
_Static_assert(sizeof(bind_reason_names) / sizeof(bind_reason_names[0]) ==
    BR__N + 1, "a name per reason");

const char *const bind_commit_names[] = { "both", "ingress", "none", NULL };

/* The edges of 001's figure, plus the two the text requires (bind.h). */
static const char *const edges[S__N][S__N] = {
	[S_ABSENT][S_PENDING] = "new-flow",
	[S_PENDING][S_DS] = "service-selection",
	[S_PENDING][S_FAILED] = "selection-failure",
	[S_DS][S_FAILED] = "no-path",
	[S_DS][S_READY] = "path-reply",
	[S_READY][S_ACTIVE] = "forwarder-commit",
	[S_READY][S_FAILED] = "commit-failure",
	[S_ACTIVE][S_DRAINING] = "expiry",
	[S_ACTIVE][S_ACTIVE] = "path-repair",
	[S_ACTIVE][S_FAILED] = "instance-failure",
	[S_ACTIVE][S_RECONNECT] = "instance-failure",
	[S_DRAINING][S_ABSENT] = "reverse-cleanup",
	[S_FAILED][S_ABSENT] = "pending-cleanup",
	[S_RECONNECT][S_ABSENT] = "pending-cleanup",
};

bool
bind_edge_ok(int from, int to)
{
	return from >= 0 && from < S__N && to >= 0 && to < S__N &&
	    edges[from][to] != NULL;
}

const char *
bind_edge_event(int from, int to)
{
	return bind_edge_ok(from, to) ? edges[from][to] : NULL;
}

void
bind_conf_default(struct bind_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->pending_ms = 2000;
	c->commit_ms = 2000;
	c->drain_ms = 5000;
	c->repair_ms = 2000;
	c->idle_ms = 300000;
	c->hard_ms = 0;
	c->idle_grace_ms = 0;	/* 0: idle_ms */
	c->commit = BIND_COMMIT_BOTH;
	c->max_pending = 65536;
	c->max_bindings = 4u << 20;
	c->tenant_pending = 16384;
	c->tenant_bindings = 1u << 20;
	c->client_pending = 256;
	c->client_bindings = 4096;
	c->closed_memory = 65536;
	c->self = "cats-bind";
}

/* ---- counters and the checked transition ---- */

static int
category(int s)
{
	if (s == S_PENDING || s == S_DS)
		return 1;
	if (s == S_READY || s == S_ACTIVE)
		return 2;
	return 0;
}

void
bt_account(struct bind_table *t, struct bent *e, int from, int to)
{
	int a = category(from), b = category(to);
	if (a == b)
		return;
	const struct bclass *c = cls(t, e);
	struct bstr *tn = c->k.tenant;
	struct bs_ccount *cl = NULL;
	uint32_t *np, *nb;
	if (c->k.dst.af == 6) {
		struct bv6 *v = v6_at(t, e->client);
		if (v->npend == 0 && v->nbind == 0)
			t->k.clients++;
		np = &v->npend;
		nb = &v->nbind;
	} else {
		struct bs_ckey k = ckey_make(tn, e->client);
		uint32_t tag = ckey_tag(t, &k);
		cl = bs_ctab_find(&t->counts, &k, tag);
		if (cl == NULL) {
			/* A first flow; bs_ctab_reserve() made room for it. */
			if (a != 0 || t->counts.s == NULL ||
			    t->counts.n >= t->counts.cap)
				return;
			bs_ctab_insert(&t->counts, (struct bs_ccount){ tag, k.key,
			    k.ref, 0, 0 });
			t->k.clients++;
			cl = bs_ctab_find(&t->counts, &k, tag);
		}
		np = &cl->npend;
		nb = &cl->nbind;
	}
	if (a == 1) {
		t->npend--;
		tn->npend--;
		(*np)--;
	} else if (a == 2) {
		t->nbind--;
		tn->nbind--;
		(*nb)--;
	}
	if (b == 1) {
		t->npend++;
		tn->npend++;
		(*np)++;
	} else if (b == 2) {
		t->nbind++;
		tn->nbind++;
		(*nb)++;
	}
	if (*np == 0 && *nb == 0) {
		if (cl != NULL)
			bs_ctab_del(&t->counts, cl);
		t->k.clients--;
	}
}

static void
trace(struct bind_table *t, const struct bent *e, int from, int to,
    const char *event, int reason, bool refused, uint64_t now)
{
	if (t->io.trace == NULL)
		return;
	struct bind_trace tr = { now, e ? e->txn : 0, e ? e->id : 0, from, to,
		event, reason, refused };
	t->io.trace(t->io.arg, &tr);
}

/*
 * The one way a flow changes state: legal edges only; an illegal one is
 * refused, counted and logged, and changes nothing.
 */
static int
transition(struct bind_table *t, struct bent *e, int to, int reason,
    uint64_t now)
{
	int from = e->state;
	if (!bind_edge_ok(from, to)) {
		t->k.illegal++;
		t->k.refused[BR_ILLEGAL]++;
		trace(t, e, from, to, "illegal", reason, true, now);
		return -1;
	}
	bt_account(t, e, from, to);
	if (from != S_ABSENT)
		t->k.state[from]--;
	if (to != S_ABSENT)
		t->k.state[to]++;
	e->state = (uint8_t)to;
	t->k.transitions++;
	trace(t, e, from, to, edges[from][to], reason, false, now);
	return 0;
}

/* ---- records ---- */

static void
flow_of(const struct bind_table *t, const struct bent *e, struct cats_flow *f)
{
	const struct bclass *c = cls(t, e);
	memset(f, 0, sizeof(*f));
	f->proto = c->k.proto;
	src_of(t, e, &f->src);
	f->dst = c->k.dst;
	if (e->flags & F_SPORT)
		CATS_SET(f, FLOW, sport, e->sport);
	if (c->k.has & K_DPORT)
		CATS_SET(f, FLOW, dport, c->k.dport);
	f->tenant = str_text(c->k.tenant);
}

static void
decision_of(const struct bclass *c, uint64_t now, struct cats_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->cs_id = c->k.cs_id->s;
	d->csci_id = c->k.csci_id->s;
	d->locator = c->k.locator;
	d->egress = c->k.egress->s;
	d->ts = now;
	if (c->k.has & K_PORT)
		CATS_SET(d, DEC, port, c->k.port);
	if (c->k.has & K_CST)
		CATS_SET(d, DEC, cst_gen, c->k.cst_gen);
	if (c->k.has & K_NST)
		CATS_SET(d, DEC, nst_gen, c->k.nst_gen);
	if (c->k.has & K_ONFAIL)
		CATS_SET(d, DEC, on_failure, c->k.on_failure);
	CATS_SET(d, DEC, idle_ms, c->k.idle_ms);
	CATS_SET(d, DEC, hard_ms, c->k.hard_ms);
}

/* The binding record of entry e (bind.h: bind_record). */
static void
make_binding(const struct bind_table *t, const struct bent *e, int op,
    uint64_t epoch, uint64_t now, int reason, struct cats_rec *r)
{
	const struct bclass *c = cls(t, e);
	const struct bpath *p = path_of(t, e);
	struct cats_binding *b = &r->u.binding;
	cats_rec_init(r, CATS_T_BINDING);
	b->id = e->id;
	b->version = e->version;
	b->epoch = epoch;
	b->op = op;
	b->ts = now;
	CATS_SET(b, BND, txn, e->txn);
	b->ingress = c->k.ingress->s;
	b->egress = c->k.egress ? c->k.egress->s : NULL;
	b->cs_id = c->k.cs_id ? c->k.cs_id->s : NULL;
	b->csci_id = c->k.csci_id ? c->k.csci_id->s : NULL;
	CATS_SET(b, BND, state, e->state);
	if (reason != BR_OK)
		b->reason = bind_reason_names[reason];
	if (op != CATS_BIND_REMOVE && p != NULL && (c->k.has & K_DECIDED)) {
		struct cats_bind_fwd *f = &b->fwd;
		struct cats_bind_rev *v = &b->rev;
		b->has |= UINT64_C(1) << CATS_BND_fwd;
		b->has |= UINT64_C(1) << CATS_BND_rev;
		flow_of(t, e, &f->match);
		f->locator = c->k.locator;
		if (c->k.has & K_PORT)
			CATS_SET(f, BFW, port, c->k.port);
		f->encap = p->encap;
		if (p->sids != NULL) {
			f->sids.v = p->sids;
			f->sids.n = p->n;
		} else if (p->labels != NULL) {
			f->labels.v = p->labels;
			f->labels.n = p->n;
		}
		f->tunnel_dst = p->tunnel_dst;
		f->egress = c->k.egress->s;
		/* Return packets: service side to client, source restored. */
		memset(&v->match, 0, sizeof(v->match));
		v->match.proto = c->k.proto;
		v->match.src = c->k.locator;
		v->match.dst = f->match.src;
		if (c->k.has & K_PORT)
			CATS_SET(&v->match, FLOW, sport, c->k.port);
		else if (c->k.has & K_DPORT)
			CATS_SET(&v->match, FLOW, sport, c->k.dport);
		if (e->flags & F_SPORT)
			CATS_SET(&v->match, FLOW, dport, e->sport);
		v->match.tenant = f->match.tenant;
		v->restore_src = c->k.dst;
		if (c->k.has & K_DPORT)
			CATS_SET(v, BRV, restore_port, c->k.dport);
		v->owner = c->k.ingress->s;
		if (c->k.idle_ms)
			CATS_SET(b, BND, idle_ms, c->k.idle_ms);
		if (c->k.hard_ms)
			CATS_SET(b, BND, hard_ms, c->k.hard_ms);
		if (c->k.has & K_CST)
			CATS_SET(b, BND, cst_gen, c->k.cst_gen);
		if (c->k.has & K_NST)
			CATS_SET(b, BND, nst_gen, c->k.nst_gen);
		if (p->has & P_GEN)
			CATS_SET(b, BND, path_gen, p->gen);
		if (p->has & P_PID)
			CATS_SET(b, BND, path_id, p->path_id);
		if (c->k.has & K_ONFAIL)
			CATS_SET(b, BND, on_failure, c->k.on_failure);
	}
}

static void
send_rec(struct bind_table *t, const struct cats_rec *r, const struct bstr *to)
{
	if (t->io.send)
		t->io.send(t->io.arg, r, to ? to->s : NULL);
}

static void
journal_rec(struct bind_table *t, const struct cats_rec *r)
{
	if (t->io.journal)
		t->io.journal(t->io.arg, r);
}

/* Send entry e's binding to one forwarder (its current owner epoch). */
static void
send_binding(struct bind_table *t, struct bent *e, int op, struct bstr *to,
    uint64_t now)
{
	struct cats_rec r;
	e->epoch = (uint32_t)t->epoch;
	make_binding(t, e, op, t->epoch, now, BR_OK, &r);
	send_rec(t, &r, to);
	if (to != NULL) {
		if (op == CATS_BIND_INSTALL)
			t->k.sent_install++;
		else if (op == CATS_BIND_REFRESH)
			t->k.sent_refresh++;
	}
}

/*
 * An error for a transaction: to the output and to its ingress forwarder,
 * which releases the flow's pending packets.
 */
static void
send_error(struct bind_table *t, uint64_t txn, const char *code,
    const struct bstr *ingress, const struct cats_flow *flow, const char *msg,
    uint64_t now)
{
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_ERROR);
	struct cats_error *x = &r.u.error;
	x->code = code;
	CATS_SET(x, ERR, ts, now);
	if (txn)
		CATS_SET(x, ERR, txn, txn);
	x->stage = "cats-bind";
	x->msg = msg && msg[0] ? msg : NULL;
	x->ingress = ingress ? ingress->s : NULL;
	if (flow != NULL) {
		x->flow = *flow;
		x->has |= UINT64_C(1) << CATS_ERR_flow;
	}
	send_rec(t, &r, NULL);
	if (ingress != NULL && ingress->connected)
		send_rec(t, &r, ingress);
	t->k.sent_error++;
}

static void
entry_error(struct bind_table *t, struct bent *e, const char *code,
    const char *msg, uint64_t now)
{
	struct cats_flow f;
	flow_of(t, e, &f);
	send_error(t, e->txn, code, cls(t, e)->k.ingress, &f, msg, now);
}

/* ---- entries ---- */

void
bt_entry_release(struct bind_table *t, struct bent *e)
{
	uint32_t i = ent_no(t, e);
	bt_wheel_unlink(t, e);
	bt_txn_unindex(t, e);
	bt_flow_unindex(t, e, i);
	bs_cidx_del(&t->by_id, id_mix(t, e->id), i);
	bt_path_put(t, e->path);
	bt_src_unref(t, e);
	bt_class_put(t, e->cls);
	e->wprev = 0;
	bs_slab_free(&t->ents, i);
}

/* Leave the table: the final transition to ABSENT, then free. */
static void
cleanup(struct bind_table *t, struct bent *e, uint64_t now)
{
	if (transition(t, e, S_ABSENT, BR_OK, now) < 0)
		return;
	t->k.cleaned++;
	bt_entry_release(t, e);
}

/* Tell every forwarder holding e to remove it; forget those not there. */
static void
remove_at_holders(struct bind_table *t, struct bent *e, int reason,
    uint64_t now)
{
	const struct bclass *c = cls(t, e);
	struct cats_rec r;
	make_binding(t, e, CATS_BIND_REMOVE, t->epoch, now, reason, &r);
	if ((e->flags & F_SENT_ING) && c->k.ingress->connected) {
		send_rec(t, &r, c->k.ingress);
		t->k.sent_remove++;
	} else {
		e->flags &= (uint8_t)~F_SENT_ING;
	}
	if (c->k.egress == c->k.ingress) {
		e->flags &= (uint8_t)~F_SENT_EGR;
	} else if ((e->flags & F_SENT_EGR) && c->k.egress->connected) {
		send_rec(t, &r, c->k.egress);
		t->k.sent_remove++;
	} else {
		e->flags &= (uint8_t)~F_SENT_EGR;
	}
	e->flags &= (uint8_t)~(F_OK_ING | F_OK_EGR);
}

static void
journal_remove(struct bind_table *t, struct bent *e, int reason, uint64_t now)
{
	struct cats_rec r;
	make_binding(t, e, CATS_BIND_REMOVE, t->epoch, now, reason, &r);
	journal_rec(t, &r);
	send_rec(t, &r, NULL);
}

/*
 * A transaction or flow fails (to FAILED or RECONNECT_REQUIRED): journaled
 * if it was a binding, an error to its ingress unless quiet, removal at
 * the forwarders that hold it, and cleanup once none does.
 */
static void
fail(struct bind_table *t, struct bent *e, int to, int reason, bool quiet,
    uint64_t now)
{
	int from = e->state;
	uint32_t i = ent_no(t, e);
	if (transition(t, e, to, reason, now) < 0)
		return;
	t->k.fail[reason]++;
	bool bound = from == S_READY || from == S_ACTIVE;
	if (bound)
		journal_remove(t, e, reason, now);
	bt_txn_unindex(t, e);
	bt_flow_unindex(t, e, i);
	bt_closed_add(t, e->txn, reason == BR_TIMEOUT ? CLOSED_TIMEOUT :
	    CLOSED_DONE);
	e->flags &= (uint8_t)~F_REPAIR;
	if (!quiet) {
		const char *code = to == S_RECONNECT ? "reconnect-required" :
		    bind_reason_names[reason];
		entry_error(t, e, code, t->msg, now);
	}
	t->msg[0] = '\0';
	if (bound)
		remove_at_holders(t, e, reason, now);
	if (!holds(e)) {
		cleanup(t, e, now);
		return;
	}
	e->t1 = now + t->c.drain_ms;
	bt_wheel_link(t, e, i);
}

/* ACTIVE -> DRAINING on expiry; the forwarders release it with us. */
static void
drain(struct bind_table *t, struct bent *e, int reason, uint64_t now)
{
	uint32_t i = ent_no(t, e);
	if (transition(t, e, S_DRAINING, reason, now) < 0)
		return;
	t->k.fail[reason]++;
	if (reason == BR_IDLE)
		t->k.expired_idle++;
	else if (reason == BR_HARD)
		t->k.expired_hard++;
	journal_remove(t, e, reason, now);
	bt_txn_unindex(t, e);
	bt_flow_unindex(t, e, i);
	e->flags &= (uint8_t)~F_REPAIR;
	remove_at_holders(t, e, reason, now);
	if (!holds(e)) {
		t->k.drained++;
		cleanup(t, e, now);
		return;
	}
	e->t1 = now + t->c.drain_ms;
	bt_wheel_link(t, e, i);
}

/*
 * Send a BINDING_READY binding where it may go now.  Commit "both": the
 * egress first (the service-side delivery exists before traffic is
 * admitted), the ingress once the egress installed it.
 */
static void
push(struct bind_table *t, struct bent *e, uint64_t now)
{
	const struct bclass *c = cls(t, e);
	struct bstr *ing = c->k.ingress, *egr = c->k.egress;
	bool same = egress_is_ingress(c);
	if (e->state != S_READY)
		return;
	if (same) {
		if (!(e->flags & F_SENT_ING) && ing->connected) {
			send_binding(t, e, CATS_BIND_INSTALL, ing, now);
			e->flags |= F_SENT_ING;
		}
		return;
	}
	if (!(e->flags & F_SENT_EGR) && egr->connected) {
		send_binding(t, e, CATS_BIND_INSTALL, egr, now);
		e->flags |= F_SENT_EGR;
	}
	bool ing_may = t->c.commit != BIND_COMMIT_BOTH || (e->flags & F_OK_EGR);
	if (ing_may && !(e->flags & F_SENT_ING) && ing->connected) {
		send_binding(t, e, CATS_BIND_INSTALL, ing, now);
		e->flags |= F_SENT_ING;
	}
}

static void
journal_commit(struct bind_table *t, struct bent *e, uint64_t now)
{
	struct cats_rec r;
	if (t->io.journal == NULL)
		return;
	cats_rec_init(&r, CATS_T_STATUS);
	struct cats_status *s = &r.u.status;
	s->fwd = t->self->s;
	s->event = CATS_EV_INSTALLED;
	s->ts = now;
	CATS_SET(s, STA, id, e->id);
	CATS_SET(s, STA, txn, e->txn);
	CATS_SET(s, STA, epoch, t->epoch);
	CATS_SET(s, STA, version, e->version);
	journal_rec(t, &r);
}

static void
activate(struct bind_table *t, struct bent *e, uint64_t now)
{
	if (transition(t, e, S_ACTIVE, BR_OK, now) < 0)
		return;
	t->k.activated++;
	journal_commit(t, e, now);
	e->t0 = e->t1 = now;
	bt_wheel_link(t, e, ent_no(t, e));
}

static bool
committed(const struct bind_table *t, const struct bent *e)
{
	if (!(e->flags & F_OK_ING))
		return false;
	return t->c.commit != BIND_COMMIT_BOTH || egress_is_ingress(cls(t, e))
	    || (e->flags & F_OK_EGR);
}

/* ---- creating transactions ---- */

static int
limit_pending(const struct bind_table *t, const struct bstr *tenant,
    uint32_t client_pending)
{
	if (t->c.max_pending && t->npend >= t->c.max_pending)
		return BR_LIMIT_GLOBAL;
	if (t->c.tenant_pending && tenant->npend >= t->c.tenant_pending)
		return BR_LIMIT_TENANT;
	if (t->c.client_pending && client_pending >= t->c.client_pending)
		return BR_LIMIT_CLIENT;
	return BR_OK;
}

static int
limit_bindings(const struct bind_table *t, const struct bent *e)
{
	if (t->c.max_bindings && t->nbind >= t->c.max_bindings)
		return BR_LIMIT_GLOBAL;
	if (t->c.tenant_bindings && cls(t, e)->k.tenant->nbind >=
	    t->c.tenant_bindings)
		return BR_LIMIT_TENANT;
	if (t->c.client_bindings && bt_client_nbind(t, e) >=
	    t->c.client_bindings)
		return BR_LIMIT_CLIENT;
	return BR_OK;
}

static int
refuse(struct bind_table *t, int reason)
{
	t->k.refused[reason]++;
	return reason;
}

/*
 * A second transaction for a flow that already has one: the flow keeps its
 * one binding (001: no independent selections for one connection).  A
 * bound flow's binding is sent to its ingress again.
 */
static int
dup_flow(struct bind_table *t, struct bent *x, uint64_t now)
{
	const struct bclass *c = cls(t, x);
	if ((x->state == S_ACTIVE || x->state == S_READY) &&
	    (x->flags & F_SENT_ING) && c->k.ingress->connected)
		send_binding(t, x, CATS_BIND_INSTALL, c->k.ingress, now);
	return refuse(t, BR_DUP_FLOW);
}

/*
 * ABSENT -> PENDING: a new transaction for a flow, with its deadline.  With
 * the decision at hand (a reply that carries it), the entry's class is the
 * decided one at once; the state still goes through PENDING.  *out is the
 * entry, or the flow's existing entry with BR_DUP_FLOW.
 */
static int
new_txn(struct bind_table *t, uint64_t txn, const char *ingress,
    const struct cats_flow *f, const struct cats_decision *d, bool index_txn,
    uint64_t dl, uint64_t now, struct bent **out)
{
	*out = NULL;
	if ((f->src.af != 4 && f->src.af != 6) || f->src.af != f->dst.af)
		return BR_BAD;
	struct bclass_key k;
	if (bt_class_key(t, &k, ingress, f, d) < 0)
		return BR_NOMEM;
	struct fkey fk;
	bt_fkey_from(t, ingress, f, &fk);
	uint64_t fh = fkey_hash(&fk);
	uint32_t x = bs_cidx_find(&t->by_flow, fh, flow_eq, t, &fk);
	if (x != 0) {
		bt_key_release(t, &k);
		*out = ent(t, x);
		return BR_DUP_FLOW;
	}
	/* The limits, before anything is allocated for the client. */
	bool v6 = f->src.af == 6;
	uint32_t ref = 0, npend = 0;
	if (v6) {
		if ((ref = bt_v6_find(t, k.tenant, f->src.a)) != 0)
			npend = v6_at(t, ref)->npend;
	} else {
		memcpy(&ref, f->src.a, 4);
		struct bs_ckey ck = ckey_make(k.tenant, ref);
		const struct bs_ccount *cc = bs_ctab_find(&t->counts, &ck,
		    ckey_tag(t, &ck));
		npend = cc ? cc->npend : 0;
	}
	int lim = limit_pending(t, k.tenant, npend);
	if (lim != BR_OK) {
		bt_key_release(t, &k);
		return lim;
	}
	uint32_t client;
	if (bs_ctab_reserve(&t->counts) < 0 || bt_src_ref(t, k.tenant, &f->src,
	    &client) < 0) {
		bt_key_release(t, &k);
		return BR_NOMEM;
	}
	uint32_t cl = bt_class_get(t, &k);	/* takes k's references */
	uint32_t i = cl ? bs_slab_alloc(&t->ents) : 0;
	if (i == 0) {
		bt_class_put(t, cl);
		if (v6)
			bt_v6_put(t, client);
		return BR_NOMEM;
	}
	struct bent *e = ent(t, i);
	e->wprev = W_UNLINKED;
	e->id = t->next_id++;
	e->txn = txn;
	e->cls = cl;
	e->client = client;
	e->epoch = (uint32_t)t->epoch;
	if (CATS_HAS(f, FLOW, sport)) {
		e->sport = (uint16_t)f->sport;
		e->flags |= F_SPORT;
	}
	e->state = S_ABSENT;
	if (bs_cidx_put(&t->by_id, id_mix(t, e->id), i) < 0) {
		bt_class_put(t, cl);
		if (v6)
			bt_v6_put(t, client);
		bs_slab_free(&t->ents, i);
		return BR_NOMEM;
	}
	if (bs_cidx_put(&t->by_flow, fh, i) == 0)
		e->flags |= F_FLOWIDX;
	if (index_txn)
		bt_txn_index(t, e);
	transition(t, e, S_PENDING, BR_OK, now);
	t->k.created++;
	e->t1 = dl;
	bt_wheel_link(t, e, i);
	*out = e;
	return BR_OK;
}

/* PENDING -> DESTINATION_SELECTED: the C-PS decision is recorded. */
static int
decide(struct bind_table *t, struct bent *e, const struct cats_decision *d,
    uint64_t now)
{
	struct cats_flow f;
	struct bclass_key k;
	if (cls(t, e)->k.has & K_DECIDED) {
		transition(t, e, S_DS, BR_OK, now);
		return BR_OK;
	}
	flow_of(t, e, &f);
	if (d->locator.af != f.dst.af) {
		snprintf(t->msg, sizeof(t->msg), "locator and flow are of "
		    "different address families");
		return BR_JOIN_MISMATCH;
	}
	if (bt_class_key(t, &k, cls(t, e)->k.ingress->s, &f, d) < 0)
		return BR_NOMEM;
	uint32_t c = bt_class_get(t, &k);
	if (c == 0)
		return BR_NOMEM;
	/* The flow key stays: the new class has the same service side. */
	bt_class_put(t, e->cls);
	e->cls = c;
	transition(t, e, S_DS, BR_OK, now);
	return BR_OK;
}

static uint64_t
txn_deadline(const struct bind_table *t, bool has_dl, uint64_t dl,
    uint64_t base)
{
	return has_dl ? dl : base + t->c.pending_ms;
}

int
bind_request(struct bind_table *t, const struct cats_request *r, uint64_t now)
{
	bind_tick(t, now);
	if (find_txn(t, r->txn) != NULL || bt_closed_how(t, r->txn))
		return refuse(t, BR_DUP_TXN);
	uint64_t dl = txn_deadline(t, CATS_HAS(r, REQ, deadline), r->deadline,
	    r->ts);
	if (now >= dl)
		return refuse(t, BR_LATE_REPLY);
	struct cats_flow f = r->flow;
	if (f.tenant == NULL && r->tenant != NULL)
		f.tenant = r->tenant;
	struct bent *e;
	int rc = new_txn(t, r->txn, r->ingress, &f, NULL, true, dl, now, &e);
	if (rc == BR_DUP_FLOW)
		return dup_flow(t, e, now);
	if (rc != BR_OK) {
		struct bstr *ing = bt_str_find(t, r->ingress);
		send_error(t, r->txn, bind_reason_names[rc], ing, &r->flow,
		    NULL, now);
		bt_closed_add(t, r->txn, CLOSED_DONE);
		return refuse(t, rc);
	}
	return BR_OK;
}

/* Fail a transaction we could not even create: error to its ingress. */
static int
refuse_txn(struct bind_table *t, uint64_t txn, const char *ingress,
    const struct cats_flow *f, int rc, uint64_t now)
{
	struct bstr *ing = bt_str_find(t, ingress);
	send_error(t, txn, bind_reason_names[rc], ing, f, t->msg, now);
	t->msg[0] = '\0';
	bt_closed_add(t, txn, rc == BR_LATE_REPLY ? CLOSED_TIMEOUT : CLOSED_DONE);
	return refuse(t, rc);
}

/* Find or create the transaction of a decision; PENDING or DS after. */
static int
txn_with_decision(struct bind_table *t, uint64_t txn, const char *ingress,
    const struct cats_flow *f, const struct cats_decision *d, bool index_txn,
    uint64_t dl, uint64_t now, struct bent **out)
{
	struct bent *e = find_txn(t, txn);
	*out = NULL;
	if (e == NULL) {
		int how = bt_closed_how(t, txn);
		if (how == CLOSED_TIMEOUT)
			return refuse(t, BR_LATE_REPLY);
		if (how)
			return refuse(t, BR_DUP_TXN);
		if (f == NULL)
			return refuse(t, BR_NO_FLOW);
		if (now >= dl)
			return refuse_txn(t, txn, ingress, f, BR_LATE_REPLY, now);
		/* Decided at once when the locator fits the flow. */
		const struct cats_decision *dd = d != NULL &&
		    d->locator.af == f->dst.af ? d : NULL;
		int rc = new_txn(t, txn, ingress, f, dd, index_txn, dl, now, &e);
		if (rc == BR_DUP_FLOW)
			return dup_flow(t, e, now);
		if (rc != BR_OK)
			return refuse_txn(t, txn, ingress, f, rc, now);
	}
	*out = e;
	if (e->state == S_PENDING && d != NULL) {
		const struct bclass *c = cls(t, e);
		if (f != NULL) {
			struct fkey a, b;
			fkey_of(t, e, &a);
			if (!bt_fkey_from(t, ingress, f, &b) ||
			    memcmp(&a, &b, sizeof(a)) != 0) {
				snprintf(t->msg, sizeof(t->msg), "the flow "
				    "differs from the transaction's");
				fail(t, e, S_FAILED, BR_JOIN_MISMATCH, false, now);
				*out = NULL;
				return refuse(t, BR_JOIN_MISMATCH);
			}
		}
		if (ingress != NULL && strcmp(ingress, c->k.ingress->s) != 0) {
			snprintf(t->msg, sizeof(t->msg), "ingress %s, the "
			    "transaction's is %s", ingress, c->k.ingress->s);
			fail(t, e, S_FAILED, BR_JOIN_MISMATCH, false, now);
			*out = NULL;
			return refuse(t, BR_JOIN_MISMATCH);
		}
		int rc = decide(t, e, d, now);
		if (rc != BR_OK) {
			fail(t, e, S_FAILED, rc, false, now);
			*out = NULL;
			return refuse(t, rc);
		}
	}
	return BR_OK;
}

int
bind_path_req(struct bind_table *t, const struct cats_path_req *r,
    uint64_t now)
{
	bind_tick(t, now);
	const char *ingress = r->ingress ? r->ingress : r->headend;
	const struct cats_flow *f = CATS_HAS(r, PRQ, flow) ? &r->flow : NULL;
	struct bent *e = find_txn(t, r->txn);
	if (e != NULL && e->state != S_PENDING)
		return refuse(t, BR_DUP_TXN);
	uint64_t dl = txn_deadline(t, CATS_HAS(r, PRQ, deadline), r->deadline,
	    r->decision.ts);
	return txn_with_decision(t, r->txn, ingress, f, &r->decision, true,
	    dl, now, &e);
}

/* ACTIVE -- path repair --> ACTIVE: a new path to the same instance. */
static int
repair(struct bind_table *t, struct bent *e, const struct cats_path_rep *r,
    uint64_t now)
{
	const struct bclass *c = cls(t, e);
	int on = (c->k.has & K_ONFAIL) && c->k.on_failure ==
	    CATS_ONFAIL_RECONNECT ? S_RECONNECT : S_FAILED;
	if (CATS_HAS(r, PRP, decision) && !bt_same_instance(c, &r->decision))
		return refuse(t, BR_MOVE_REFUSED);
	if (r->endpoint != NULL && strcmp(r->endpoint, c->k.egress->s) != 0)
		return refuse(t, BR_MOVE_REFUSED);
	if (r->status != CATS_PATH_OK) {
		snprintf(t->msg, sizeof(t->msg), "repair: %s",
		    r->reason ? r->reason : "no path");
		t->k.instance_failures++;
		fail(t, e, on, BR_REPAIR_FAILED, false, now);
		return BR_OK;
	}
	uint32_t p;
	int rc = bt_path_from_rep(t, r, &p);
	if (rc != BR_OK) {
		t->k.instance_failures++;
		fail(t, e, on, BR_REPAIR_FAILED, false, now);
		return refuse(t, rc);
	}
	if (transition(t, e, S_ACTIVE, BR_OK, now) < 0) {
		bt_path_put(t, p);
		return BR_ILLEGAL;
	}
	bt_path_put(t, e->path);
	e->path = p;
	e->version++;
	e->flags &= (uint8_t)~F_REPAIR;
	bt_txn_unindex(t, e);
	e->t1 = now;
	bt_wheel_link(t, e, ent_no(t, e));
	t->k.repaired++;
	struct cats_rec rec;
	make_binding(t, e, CATS_BIND_REFRESH, t->epoch, now, BR_OK, &rec);
	journal_rec(t, &rec);
	send_rec(t, &rec, NULL);
	if ((e->flags & F_SENT_EGR) && c->k.egress->connected &&
	    !egress_is_ingress(c))
		send_binding(t, e, CATS_BIND_REFRESH, c->k.egress, now);
	if ((e->flags & F_SENT_ING) && c->k.ingress->connected)
		send_binding(t, e, CATS_BIND_REFRESH, c->k.ingress, now);
	return BR_OK;
}

int
bind_path_rep(struct bind_table *t, const struct cats_path_rep *r,
    uint64_t now)
{
	bind_tick(t, now);
	const char *ingress = r->ingress ? r->ingress : r->headend;
	const struct cats_flow *f = CATS_HAS(r, PRP, flow) ? &r->flow : NULL;
	const struct cats_decision *d = CATS_HAS(r, PRP, decision) ?
	    &r->decision : NULL;
	struct bent *e = find_txn(t, r->txn);
	if (e != NULL && e->state == S_ACTIVE && (e->flags & F_REPAIR))
		return repair(t, e, r, now);
	if (e == NULL) {
		if (d == NULL) {
			int how = bt_closed_how(t, r->txn);
			return refuse(t, how == CLOSED_TIMEOUT ? BR_LATE_REPLY :
			    how ? BR_DUP_TXN : BR_NO_DECISION);
		}
		if (ingress == NULL)
			return refuse(t, BR_BAD);
		uint64_t dl = txn_deadline(t, CATS_HAS(r, PRP, deadline),
		    r->deadline, d->ts);
		/* Bound or failed before this returns: no txn index needed. */
		int rc = txn_with_decision(t, r->txn, ingress, f, d, false, dl,
		    now, &e);
		if (rc != BR_OK)
			return rc;
	} else if (e->state == S_PENDING) {
		if (d == NULL)
			return refuse(t, BR_NO_DECISION);
		int rc = txn_with_decision(t, r->txn, ingress, f, d, true, 0,
		    now, &e);
		if (rc != BR_OK)
			return rc;
	}
	if (e->state != S_DS)
		return refuse(t, BR_DUP_TXN);

	/* The join: one transaction, one decision (001 "Path result"). */
	const struct bclass *c = cls(t, e);
	int why = BR_OK;
	if (d != NULL && !bt_same_decision(c, d)) {
		snprintf(t->msg, sizeof(t->msg), "the reply's decision is not "
		    "the transaction's (%s at %s)", d->csci_id, d->egress);
		why = BR_JOIN_MISMATCH;
	} else if (r->endpoint != NULL && strcmp(r->endpoint,
	    c->k.egress->s) != 0) {
		snprintf(t->msg, sizeof(t->msg), "path endpoint %s, the "
		    "selected egress is %s", r->endpoint, c->k.egress->s);
		why = BR_JOIN_MISMATCH;
	} else if (ingress != NULL && strcmp(ingress, c->k.ingress->s) != 0) {
		snprintf(t->msg, sizeof(t->msg), "headend %s, the ingress is "
		    "%s", ingress, c->k.ingress->s);
		why = BR_JOIN_MISMATCH;
	} else if (f != NULL) {
		struct fkey a, b;
		fkey_of(t, e, &a);
		if (!bt_fkey_from(t, ingress ? ingress : c->k.ingress->s, f, &b) ||
		    memcmp(&a, &b, sizeof(a)) != 0) {
			snprintf(t->msg, sizeof(t->msg), "the reply's flow is "
			    "not the transaction's");
			why = BR_JOIN_MISMATCH;
		}
	}
	if (why == BR_OK && r->status != CATS_PATH_OK) {
		snprintf(t->msg, sizeof(t->msg), "%s%s%s", r->reason ?
		    r->reason : "", r->pruned ? ", pruned by " : "",
		    r->pruned ? r->pruned : "");
		why = r->status == CATS_PATH_NO_PATH ? BR_NO_PATH :
		    BR_PATH_ERROR;
	}
	uint32_t p = 0;
	if (why == BR_OK)
		why = bt_path_from_rep(t, r, &p);
	if (why == BR_OK)
		why = limit_bindings(t, e);
	if (why != BR_OK) {
		bt_path_put(t, p);
		fail(t, e, S_FAILED, why, false, now);
		return why == BR_NO_PATH || why == BR_PATH_ERROR ? BR_OK :
		    refuse(t, why);
	}
	e->path = p;
	e->version = 1;
	if (transition(t, e, S_READY, BR_OK, now) < 0) {
		bt_path_put(t, p);
		e->path = 0;
		return BR_ILLEGAL;
	}
	t->k.bound++;
	/* A bound txn needs no memory: its flow key refuses a duplicate. */
	bt_txn_unindex(t, e);
	e->epoch = (uint32_t)t->epoch;
	if (t->io.journal != NULL || t->io.send != NULL) {
		struct cats_rec rec;
		make_binding(t, e, CATS_BIND_INSTALL, t->epoch, now, BR_OK,
		    &rec);
		journal_rec(t, &rec);
		send_rec(t, &rec, NULL);
	}
	if (t->c.commit == BIND_COMMIT_NONE) {
		e->flags |= F_OK_ING | F_OK_EGR;
		activate(t, e, now);
		return BR_OK;
	}
	e->t1 = now + t->c.commit_ms;
	bt_wheel_link(t, e, ent_no(t, e));
	push(t, e, now);
	return BR_OK;
}

int
bind_error(struct bind_table *t, const struct cats_error *x, uint64_t now)
{
	bind_tick(t, now);
	/* Passed on: to the output and to the ingress forwarder it names. */
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_ERROR);
	r.u.error = *x;
	send_rec(t, &r, NULL);
	struct bstr *ing = bt_str_find(t, x->ingress);
	if (ing != NULL && ing->connected)
		send_rec(t, &r, ing);
	if (!CATS_HAS(x, ERR, txn))
		return BR_OK;
	struct bent *e = find_txn(t, x->txn);
	if (e == NULL)
		return BR_OK;
	if (e->state == S_PENDING || e->state == S_DS) {
		snprintf(t->msg, sizeof(t->msg), "%s", x->code);
		fail(t, e, S_FAILED, BR_SELECTION, true, now);
	}
	return BR_OK;
}

static void
start_repair(struct bind_table *t, struct bent *e, uint64_t now)
{
	const struct bclass *c = cls(t, e);
	const struct bpath *p = path_of(t, e);
	if (e->flags & F_REPAIR)
		return;
	if (find_txn(t, e->txn) != NULL) {
		/* The txn id is in use by another flow: no repair possible. */
		t->k.instance_failures++;
		fail(t, e, (c->k.has & K_ONFAIL) && c->k.on_failure ==
		    CATS_ONFAIL_RECONNECT ? S_RECONNECT : S_FAILED,
		    BR_REPAIR_FAILED, false, now);
		return;
	}
	e->flags |= F_REPAIR;
	bt_txn_index(t, e);
	e->t1 = now + t->c.repair_ms;
	bt_wheel_link(t, e, ent_no(t, e));
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_PATH_REQ);
	struct cats_path_req *q = &r.u.preq;
	q->txn = e->txn;
	q->ts = now;
	q->headend = c->k.ingress->s;
	q->endpoint = c->k.egress->s;
	q->dataplane = p ? p->encap : CATS_DP_IP;
	decision_of(c, now, &q->decision);
	flow_of(t, e, &q->flow);
	q->has |= UINT64_C(1) << CATS_PRQ_flow;
	q->ingress = c->k.ingress->s;
	CATS_SET(q, PRQ, deadline, e->t1);
	send_rec(t, &r, NULL);
	t->k.repair_requests++;
}

/* Which of the binding's forwarders is fwd: 1 ingress, 2 egress, 3 both. */
static int
role(const struct bclass *c, const struct bstr *fwd)
{
	int r = 0;
	if (fwd == NULL)
		return 0;
	if (fwd == c->k.ingress)
		r |= 1;
	if (fwd == c->k.egress)
		r |= 2;
	return r;
}

static void
forget_holder(struct bent *e, int ro)
{
	if (ro & 1)
		e->flags &= (uint8_t)~(F_SENT_ING | F_OK_ING);
	if (ro & 2)
		e->flags &= (uint8_t)~(F_SENT_EGR | F_OK_EGR);
}

int
bind_status(struct bind_table *t, const struct cats_status *s, uint64_t now)
{
	bind_tick(t, now);
	if ((unsigned)s->event < 8)
		t->k.status_in[s->event]++;
	if (s->event == CATS_EV_HELLO)
		return bind_fwd_hello(t, s->fwd, CATS_HAS(s, STA, epoch) ?
		    s->epoch : 0, now);
	if (s->event == CATS_EV_PATH_UP)
		return BR_OK;
	struct bent *e = NULL;
	if (CATS_HAS(s, STA, id)) {
		uint32_t i = find_id(t, s->id);
		e = i ? ent(t, i) : NULL;
	} else if (CATS_HAS(s, STA, txn)) {
		e = find_txn(t, s->txn);
	}
	if (e == NULL)
		return refuse(t, BR_UNKNOWN_BINDING);
	const struct bclass *c = cls(t, e);
	struct bstr *fwd = bt_str_find(t, s->fwd);
	int ro = role(c, fwd);
	if (ro == 0)
		return refuse(t, BR_NOT_OWNER);
	if (CATS_HAS(s, STA, epoch) && s->epoch < e->epoch)
		return refuse(t, BR_STALE_EPOCH);
	if (CATS_HAS(s, STA, version) && s->version < e->version)
		return refuse(t, BR_STALE_VERSION);
	snprintf(t->msg, sizeof(t->msg), "%s: %s", s->fwd,
	    s->reason ? s->reason : cats_status_event_names[s->event]);
	switch (s->event) {
	case CATS_EV_INSTALLED:
	case CATS_EV_REFRESHED:
		if (e->state == S_READY && s->event == CATS_EV_INSTALLED) {
			if (ro & 1)
				e->flags |= F_OK_ING | F_SENT_ING;
			if (ro & 2)
				e->flags |= F_OK_EGR | F_SENT_EGR;
			if (committed(t, e))
				activate(t, e, now);
			else
				push(t, e, now);
		} else if (e->state == S_ACTIVE) {
			if (s->event == CATS_EV_INSTALLED) {
				if (ro & 1)
					e->flags |= F_OK_ING | F_SENT_ING;
				if (ro & 2)
					e->flags |= F_OK_EGR | F_SENT_EGR;
			}
			if (!(e->flags & F_REPAIR) && s->ts > e->t1)
				e->t1 = s->ts < now ? s->ts : now;
		} else if (s->event == CATS_EV_INSTALLED) {
			/* Installed where it is going away: e.g. DRAINING -> ACTIVE. */
			if (transition(t, e, S_ACTIVE, BR_OK, now) < 0)
				break;
		}
		break;
	case CATS_EV_FAILED:
		forget_holder(e, ro);
		if (e->state == S_READY || e->state == S_ACTIVE)
			fail(t, e, S_FAILED, BR_COMMIT_FAILED, false, now);
		else if (!holds(e) && (e->state == S_DRAINING ||
		    e->state == S_FAILED || e->state == S_RECONNECT))
			cleanup(t, e, now);
		break;
	case CATS_EV_EXPIRED:
	case CATS_EV_REMOVED:
		if (e->state == S_ACTIVE) {
			forget_holder(e, ro);
			drain(t, e, s->event == CATS_EV_EXPIRED ?
			    (s->reason && strcmp(s->reason, "hard") == 0 ?
			    BR_HARD : BR_IDLE) : BR_REMOVED, now);
		} else if (e->state == S_DRAINING || e->state == S_FAILED ||
		    e->state == S_RECONNECT) {
			forget_holder(e, ro);
			if (!holds(e)) {
				if (e->state == S_DRAINING)
					t->k.drained++;
				cleanup(t, e, now);
			}
		} else if (e->state == S_READY) {
			forget_holder(e, ro);
			fail(t, e, S_FAILED, BR_COMMIT_FAILED, false, now);
		} else {
			transition(t, e, S_DRAINING, BR_REMOVED, now);
		}
		break;
	case CATS_EV_PATH_DOWN:
		if (e->state == S_ACTIVE)
			start_repair(t, e, now);
		break;
	default:
		break;
	}
	t->msg[0] = '\0';
	return BR_OK;
}

size_t
bind_instance_down(struct bind_table *t, const char *cs_id,
    const char *csci_id, uint64_t now)
{
	struct bstr *x = bt_str_find(t, csci_id);
	struct bstr *cs = cs_id ? bt_str_find(t, cs_id) : NULL;
	size_t n = 0;
	if (x == NULL || (cs_id != NULL && cs == NULL))
		return 0;
	x->refs++;	/* kept while the flows that name it go */
	for (uint32_t i = 1; i < t->ents.top; i++) {
		struct bent *e = ent(t, i);
		if (e->state == S_ABSENT || e->cls == 0 ||
		    cls(t, e)->k.csci_id != x ||
		    (cs != NULL && cls(t, e)->k.cs_id != cs))
			continue;
		const struct bclass *c = cls(t, e);
		snprintf(t->msg, sizeof(t->msg), "instance %s failed", x->s);
		if (e->state == S_ACTIVE) {
			fail(t, e, (c->k.has & K_ONFAIL) && c->k.on_failure ==
			    CATS_ONFAIL_RECONNECT ? S_RECONNECT : S_FAILED,
			    BR_INSTANCE_FAILED, false, now);
			n++;
		} else if (e->state == S_READY || e->state == S_DS) {
			fail(t, e, S_FAILED, BR_INSTANCE_FAILED, false, now);
			n++;
		}
	}
	t->msg[0] = '\0';
	t->k.instance_failures += n;
	bt_str_put(t, x);
	return n;
}

int
bind_metric(struct bind_table *t, const struct cats_metric *m, uint64_t now)
{
	bind_tick(t, now);
	for (size_t i = 0; i < m->entries.n; i++) {
		const struct cats_entry *x = &m->entries.v[i];
		bool down = m->op == CATS_OP_WITHDRAW ||
		    (CATS_HAS(x, ENT, health) && x->health == CATS_UNHEALTHY) ||
		    (CATS_HAS(x, ENT, state) && x->state == CATS_SCI_FAILED);
		if (down)
			bind_instance_down(t, x->cs_id, x->csci_id, now);
	}
	return BR_OK;
}

/* ---- forwarders ---- */

static void
sync_marker(struct bind_table *t, struct bstr *fwd, uint64_t now)
{
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_STATUS);
	r.u.status.fwd = t->self->s;
	r.u.status.event = CATS_EV_HELLO;
	r.u.status.ts = now;
	CATS_SET(&r.u.status, STA, epoch, t->epoch);
	send_rec(t, &r, fwd);
}

int
bind_fwd_hello(struct bind_table *t, const char *name, uint64_t fwd_epoch,
    uint64_t now)
{
	struct bstr *f = bt_str_find(t, name);
	if (f == NULL) {
		f = bt_str_get(t, name);
		if (f == NULL)
			return refuse(t, BR_NOMEM);
	} else if (!f->connected) {
		f->refs++;
	}
	f->connected = true;
	f->fwd_epoch = fwd_epoch;
	t->k.resyncs++;
	for (uint32_t i = 1; i < t->ents.top; i++) {
		struct bent *e = ent(t, i);
		if (e->state == S_ABSENT || e->cls == 0)
			continue;
		const struct bclass *c = cls(t, e);
		int ro = role(c, f);
		if (ro == 0)
			continue;
		switch (e->state) {
		case S_READY:
			forget_holder(e, ro);
			push(t, e, now);
			t->k.resync_bindings++;
			break;
		case S_ACTIVE:
			send_binding(t, e, CATS_BIND_INSTALL, f, now);
			if (ro & 1)
				e->flags |= F_SENT_ING;
			if (ro & 2)
				e->flags |= F_SENT_EGR;
			t->k.resync_bindings++;
			break;
		case S_DRAINING:
		case S_FAILED:
		case S_RECONNECT:
			/* Not re-sent: the marker fences what it still has. */
			forget_holder(e, ro);
			if (!holds(e)) {
				if (e->state == S_DRAINING)
					t->k.drained++;
				cleanup(t, e, now);
			}
			break;
		default:
			break;
		}
	}
	sync_marker(t, f, now);
	return BR_OK;
}

void
bind_fwd_gone(struct bind_table *t, const char *name)
{
	struct bstr *f = bt_str_find(t, name);
	if (f == NULL || !f->connected)
		return;
	f->connected = false;
	bt_str_put(t, f);
}

bool
bind_fwd_connected(const struct bind_table *t, const char *name)
{
	const struct bstr *f = bt_str_find(t, name);
	return f != NULL && f->connected;
}

/* ---- time ---- */

static void
fire(struct bind_table *t, struct bent *e, uint64_t now)
{
	const struct bclass *c = cls(t, e);
	switch (e->state) {
	case S_PENDING:
	case S_DS:
		snprintf(t->msg, sizeof(t->msg), "no %s before the deadline",
		    e->state == S_PENDING ? "decision" : "path");
		fail(t, e, S_FAILED, BR_TIMEOUT, false, now);
		break;
	case S_READY:
		snprintf(t->msg, sizeof(t->msg), "no commit by %s%s%s",
		    c->k.ingress->s, egress_is_ingress(c) ? "" : " and ",
		    egress_is_ingress(c) ? "" : c->k.egress->s);
		fail(t, e, S_FAILED, BR_COMMIT_TIMEOUT, false, now);
		break;
	case S_ACTIVE:
		if (c->k.hard_ms && now >= e->t0 + c->k.hard_ms) {
			drain(t, e, BR_HARD, now);
		} else if (e->flags & F_REPAIR) {
			snprintf(t->msg, sizeof(t->msg), "no repair path "
			    "before the deadline");
			t->k.instance_failures++;
			fail(t, e, (c->k.has & K_ONFAIL) && c->k.on_failure ==
			    CATS_ONFAIL_RECONNECT ? S_RECONNECT : S_FAILED,
			    BR_REPAIR_FAILED, false, now);
		} else {
			drain(t, e, BR_IDLE, now);
		}
		break;
	case S_DRAINING:
		t->k.drained++;
		cleanup(t, e, now);
		break;
	case S_FAILED:
	case S_RECONNECT:
		cleanup(t, e, now);
		break;
	default:
		break;
	}
}

static void
tick_bucket(struct bind_table *t, uint32_t b, uint64_t now)
{
	uint32_t i = t->wheel[b];
	while (i != 0) {
		struct bent *e = ent(t, i);
		uint32_t next = e->wnext;
		uint64_t d = bt_deadline(t, e);
		if (d <= now) {
			bt_wheel_unlink(t, e);
			fire(t, e, now);
		} else if (((d / W_GRAN) & (W_SIZE - 1)) != b) {
			bt_wheel_link(t, e, i);
		}
		i = next;
	}
}

void
bind_tick(struct bind_table *t, uint64_t now)
{
	if (t->ticking)
		return;
	if (now < t->wheel_at)
		return;
	t->ticking = true;
	uint64_t from = t->wheel_at / W_GRAN, to = now / W_GRAN;
	if (to - from >= W_SIZE)
		from = to - W_SIZE + 1;
	t->wheel_at = now;
	for (uint64_t s = from; s <= to; s++)
		tick_bucket(t, (uint32_t)(s & (W_SIZE - 1)), now);
	t->ticking = false;
}

/* ---- the table ---- */

struct bind_table *
bind_new(const struct bind_conf *c, const struct bind_io *io)
{
	struct bind_table *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	if (c != NULL)
		t->c = *c;
	else
		bind_conf_default(&t->c);
	if (t->c.self == NULL)
		t->c.self = "cats-bind";
	if (io != NULL)
		t->io = *io;
	t->ents.isz = sizeof(struct bent);
	t->v6s.isz = sizeof(struct bv6);
	t->by_id.seq = true;
	t->next_id = 1;
	t->wheel = calloc(W_SIZE, sizeof(uint32_t));
	if (t->c.closed_memory)
		t->ring = calloc(t->c.closed_memory, sizeof(uint64_t));
	t->empty = bt_str_get(t, "");
	t->self = bt_str_get(t, t->c.self);
	if (t->wheel == NULL || t->empty == NULL || t->self == NULL ||
	    (t->c.closed_memory && t->ring == NULL)) {
		bind_free(t);
		return NULL;
	}
	return t;
}

static void
free_items(struct cats_htab *h)
{
	for (size_t i = 0; i < h->cap; i++)
		if (h->s[i].h)
			free(h->s[i].item);
	cats_htab_free(h);
}

void
bind_free(struct bind_table *t)
{
	if (t == NULL)
		return;
	cats_htab_free(&t->txns);
	cats_htab_free(&t->closed);
	free_items(&t->classes);
	free_items(&t->paths);
	free_items(&t->strs);
	bs_hvec_free(&t->hstr);
	bs_hvec_free(&t->hclass);
	bs_hvec_free(&t->hpath);
	bs_slab_destroy(&t->ents);
	bs_slab_destroy(&t->v6s);
	bs_cidx_free(&t->by_id);
	bs_cidx_free(&t->by_flow);
	bs_cidx_free(&t->by_v6);
	bs_ctab_free(&t->counts);
	free(t->wheel);
	free(t->ring);
	free(t->kv);
	free(t->kv_names);
	free(t);
}

const struct bind_counters *
bind_counters(const struct bind_table *t)
{
	return &t->k;
}

uint64_t
bind_epoch(const struct bind_table *t)
{
	return t->epoch;
}

void
bind_set_epoch(struct bind_table *t, uint64_t epoch)
{
	t->epoch = epoch;
}

const char *
bind_self(const struct bind_table *t)
{
	return t->self->s;
}

uint64_t
bind_next_id(const struct bind_table *t)
{
	return t->next_id;
}

void
bind_set_next_id(struct bind_table *t, uint64_t id)
{
	if (id > t->next_id)
		t->next_id = id;
}

size_t
bind_count(const struct bind_table *t)
{
	return t->ents.live;
}

void
bind_trim(struct bind_table *t)
{
	bs_cidx_trim(&t->by_id);
	bs_cidx_trim(&t->by_flow);
}

int
bind_reserve(struct bind_table *t, size_t n)
{
	if (n > BS_MAX_ITEMS)
		n = BS_MAX_ITEMS;
	if (bs_cidx_reserve(&t->by_id, (uint32_t)n) < 0 ||
	    bs_cidx_reserve(&t->by_flow, (uint32_t)n) < 0)
		return -1;
	return 0;
}

static size_t
htab_mem(const struct cats_htab *h)
{
	return h->cap * sizeof(struct cats_hslot);
}

size_t
bind_mem(const struct bind_table *t)
{
	size_t m = sizeof(*t);
	m += bs_slab_mem(&t->ents) + bs_slab_mem(&t->v6s);
	m += bs_cidx_mem(&t->by_id) + bs_cidx_mem(&t->by_flow) +
	    bs_cidx_mem(&t->by_v6) + bs_ctab_mem(&t->counts);
	m += htab_mem(&t->strs) + htab_mem(&t->classes) + htab_mem(&t->paths) +
	    htab_mem(&t->txns) + htab_mem(&t->closed);
	m += (size_t)t->k.classes * sizeof(struct bclass);
	for (size_t i = 0; i < t->paths.cap; i++) {
		if (!t->paths.s[i].h)
			continue;
		const struct bpath *p = t->paths.s[i].item;
		m += sizeof(*p) + p->n * (p->sids ? sizeof(struct cats_ip) : 8);
	}
	for (size_t i = 0; i < t->strs.cap; i++)
		if (t->strs.s[i].h)
			m += sizeof(struct bstr) +
			    ((const struct bstr *)t->strs.s[i].item)->len + 1;
	m += (t->hstr.cap + t->hclass.cap + t->hpath.cap) * sizeof(void *);
	m += W_SIZE * sizeof(uint32_t) + t->c.closed_memory * sizeof(uint64_t);
	return m;
}

static void
info_of(const struct bind_table *t, const struct bent *e, struct bind_info *o)
{
	const struct bclass *c = cls(t, e);
	const struct bpath *p = path_of(t, e);
	memset(o, 0, sizeof(*o));
	o->id = e->id;
	o->txn = e->txn;
	o->version = e->version;
	o->epoch = e->epoch;
	o->t_start = e->t0;
	o->t_last = e->t1;
	o->state = e->state;
	o->repairing = (e->flags & F_REPAIR) != 0;
	o->ingress = c->k.ingress->s;
	o->egress = c->k.egress ? c->k.egress->s : NULL;
	o->cs_id = c->k.cs_id ? c->k.cs_id->s : NULL;
	o->csci_id = c->k.csci_id ? c->k.csci_id->s : NULL;
	o->tenant = str_text(c->k.tenant);
	if (p != NULL) {
		o->path_id = p->path_id;
		o->path_refs = p->refs;
		o->encap = p->encap;
		o->nsegs = p->n;
	}
}

int
bind_get(const struct bind_table *t, uint64_t id, struct bind_info *out)
{
	uint32_t i = find_id(t, id);
	if (i == 0)
		return -1;
	info_of(t, ent(t, i), out);
	return 0;
}

int
bind_get_txn(const struct bind_table *t, uint64_t txn, struct bind_info *out)
{
	const struct bent *e = find_txn(t, txn);
	if (e == NULL)
		return -1;
	info_of(t, e, out);
	return 0;
}

int
bind_record(const struct bind_table *t, uint64_t id, int op, uint64_t now,
    struct cats_rec *r)
{
	uint32_t i = find_id(t, id);
	if (i == 0)
		return -1;
	const struct bent *e = ent(t, i);
	make_binding(t, e, op, e->epoch, now, BR_OK, r);
	return 0;
}

size_t
bind_foreach(const struct bind_table *t, unsigned mask, uint64_t now,
    void (*fn)(void *, const struct cats_rec *), void *arg)
{
	size_t n = 0;
	for (uint32_t i = 1; i < t->ents.top; i++) {
		const struct bent *e = ent(t, i);
		if (e->state == S_ABSENT || !(mask & (1u << e->state)))
			continue;
		struct cats_rec r;
		/* An active binding's time is the start of its lifetime. */
		make_binding(t, e, CATS_BIND_INSTALL, e->epoch,
		    e->state == S_ACTIVE ? e->t0 : now, BR_OK, &r);
		fn(arg, &r);
		n++;
	}
	return n;
}

int
bind_try(struct bind_table *t, uint64_t id, int to, uint64_t now)
{
	if (id == 0) {
		if (!bind_edge_ok(S_ABSENT, to)) {
			t->k.illegal++;
			t->k.refused[BR_ILLEGAL]++;
			trace(t, NULL, S_ABSENT, to, "illegal", BR_OK, true, now);
			return -1;
		}
		return 0;
	}
	uint32_t i = find_id(t, id);
	if (i == 0)
		return -1;
	struct bent *e = ent(t, i);
	if (transition(t, e, to, BR_OK, now) < 0)
		return -1;
	if (to == S_ABSENT)
		bt_entry_release(t, e);
	else
		bt_wheel_link(t, e, i);
	return 0;
}

struct cats_kv *
bind_counters_kv(const struct bind_table *t0, size_t *n)
{
	struct bind_table *t = (struct bind_table *)t0;
	const struct bind_counters *k = &t->k;
	static const char *const fixed[] = {
		"bindings", "pending", "entries", "transitions", "illegal",
		"created", "bound", "activated", "repaired", "drained",
		"cleaned", "expired.idle", "expired.hard", "sent.install",
		"sent.refresh", "sent.remove", "sent.error", "repair.requests",
		"resyncs", "resync.bindings", "paths", "paths.released",
		"classes", "clients", "strings", "restored", "restore.refused",
		"instance.failures", "epoch", "memory",
	};
	size_t total = CATS_ARRAY_LEN(fixed) + 7 + 8 + 2 * (BR__N - 1);
	if (t->kv == NULL) {
		t->kv = calloc(total, sizeof(*t->kv));
		t->kv_names = calloc(total, 48);
		if (t->kv == NULL || t->kv_names == NULL) {
			*n = 0;
			return NULL;
		}
		size_t j = 0;
		for (size_t i = 0; i < CATS_ARRAY_LEN(fixed); i++)
			t->kv[j++].k = fixed[i];
		for (int s = 1; s < S__N; s++) {
			char *p = t->kv_names + j * 48;
			snprintf(p, 48, "state.%s", cats_flow_state_names[s]);
			t->kv[j++].k = p;
		}
		for (int s = 0; s < 8; s++) {
			char *p = t->kv_names + j * 48;
			snprintf(p, 48, "status.%s", cats_status_event_names[s]);
			t->kv[j++].k = p;
		}
		for (int r = 1; r < BR__N; r++) {
			char *p = t->kv_names + j * 48;
			snprintf(p, 48, "fail.%s", bind_reason_names[r]);
			t->kv[j++].k = p;
		}
		for (int r = 1; r < BR__N; r++) {
			char *p = t->kv_names + j * 48;
			snprintf(p, 48, "refused.%s", bind_reason_names[r]);
			t->kv[j++].k = p;
		}
		t->kv_n = j;
	}
	uint64_t v[] = {
		t->nbind, t->npend, t->ents.live, k->transitions, k->illegal,
		k->created, k->bound, k->activated, k->repaired, k->drained,
		k->cleaned, k->expired_idle, k->expired_hard, k->sent_install,
		k->sent_refresh, k->sent_remove, k->sent_error,
		k->repair_requests, k->resyncs, k->resync_bindings, k->paths,
		k->paths_released, k->classes, k->clients, k->strings,
		k->restored, k->restore_refused, k->instance_failures,
		t->epoch, bind_mem(t),
	};
	size_t j = 0;
	for (size_t i = 0; i < CATS_ARRAY_LEN(v); i++)
		t->kv[j++].v = v[i];
	for (int s = 1; s < S__N; s++)
		t->kv[j++].v = k->state[s];
	for (int s = 0; s < 8; s++)
		t->kv[j++].v = k->status_in[s];
	for (int r = 1; r < BR__N; r++)
		t->kv[j++].v = k->fail[r];
	for (int r = 1; r < BR__N; r++)
		t->kv[j++].v = k->refused[r];
	*n = t->kv_n;
	return t->kv;
}

/* ---- invariants ---- */

int
bind_check(const struct bind_table *t, char *why, size_t len)
{
	uint64_t states[S__N] = { 0 }, npend = 0, nbind = 0, live = 0;
	for (uint32_t i = 1; i < t->ents.top; i++) {
		if ((i & BS_SLAB_MASK) == 0)
			continue;
		const struct bent *e = ent(t, i);
		if (e->state == S_ABSENT)
			continue;
		live++;
		states[e->state]++;
		if (category(e->state) == 1)
			npend++;
		else if (category(e->state) == 2)
			nbind++;
		if (e->cls == 0 || (is_v6(t, e) && e->client == 0)) {
			snprintf(why, len, "entry %u: no class or client", i);
			return -1;
		}
		if (find_id(t, e->id) != i) {
			snprintf(why, len, "entry %u: id %" PRIu64 " not indexed",
			    i, e->id);
			return -1;
		}
		if (e->flags & F_FLOWIDX) {
			struct fkey k;
			fkey_of(t, e, &k);
			if (bs_cidx_find(&t->by_flow, fkey_hash(&k), flow_eq, t,
			    &k) != i) {
				snprintf(why, len, "entry %u: flow not indexed", i);
				return -1;
			}
		}
		if ((e->flags & F_TXNIDX) && find_txn(t, e->txn) != e) {
			snprintf(why, len, "entry %u: txn not indexed", i);
			return -1;
		}
		if ((e->state == S_READY || e->state == S_ACTIVE) &&
		    e->path == 0) {
			snprintf(why, len, "entry %u: bound without a path", i);
			return -1;
		}
		if (e->wprev != W_UNLINKED && !(e->wprev & W_HEAD) &&
		    ent(t, e->wprev)->wnext != i) {
			snprintf(why, len, "entry %u: wheel link broken", i);
			return -1;
		}
		if (e->wnext && ent(t, e->wnext)->wprev != i) {
			snprintf(why, len, "entry %u: wheel next broken", i);
			return -1;
		}
	}
	if (live != t->ents.live || t->by_id.n != live) {
		snprintf(why, len, "%" PRIu64 " entries, %u live, %u indexed",
		    live, t->ents.live, t->by_id.n);
		return -1;
	}
	for (int s = 1; s < S__N; s++) {
		if (states[s] != t->k.state[s]) {
			snprintf(why, len, "state %s: %" PRIu64 " entries, "
			    "counter %" PRIu64, cats_flow_state_names[s],
			    states[s], t->k.state[s]);
			return -1;
		}
	}
	if (npend != t->npend || nbind != t->nbind) {
		snprintf(why, len, "pending %" PRIu64 "/%" PRIu64 ", bindings %"
		    PRIu64 "/%" PRIu64, npend, t->npend, nbind, t->nbind);
		return -1;
	}
	/* The clients' counts add up to the same, none of them empty. */
	uint64_t cp = 0, cb = 0, nc = 0, n6 = 0;
	for (uint32_t i = 1; i < t->v6s.top; i++) {
		const struct bv6 *v = v6_at(t, i);
		if ((i & BS_SLAB_MASK) == 0 || v->refs == 0)
			continue;
		cp += v->npend;
		cb += v->nbind;
		n6 += v->npend != 0 || v->nbind != 0;
	}
	for (uint32_t i = 0; t->counts.s != NULL && i < t->counts.cap; i++) {
		const struct bs_ccount *c = &t->counts.s[i];
		if (c->key == 0)
			continue;
		if (c->npend == 0 && c->nbind == 0) {
			snprintf(why, len, "client slot %u counts nothing", i);
			return -1;
		}
		cp += c->npend;
		cb += c->nbind;
		nc++;
	}
	if (cp != npend || cb != nbind || nc != t->counts.n ||
	    nc + n6 != t->k.clients) {
		snprintf(why, len, "clients count %" PRIu64 " pending, %" PRIu64
		    " bindings, %" PRIu64 " clients (%u, %" PRIu64 ")", cp, cb,
		    nc, t->counts.n, t->k.clients);
		return -1;
	}
	return 0;
}
