/*
 * bind_fsm.c - the flow state machine of 001 (bind.h): the edge table,
 * the one checked transition and the counts it keeps, the records an entry
 * sends and journals, the moves every input shares (fail, drain, push,
 * activate, cleanup) and the deadlines that fire on the timing wheel.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind/bind_int.h"

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
bind_trace_fmt(const struct bind_trace *tr, char *buf, size_t len)
{
	snprintf(buf, len, "txn=%" PRIu64 " id=%" PRIu64 " %s%s -> %s (%s)%s%s",
	    tr->txn, tr->id, tr->refused ? "refused " : "",
	    cats_flow_state_names[tr->from], cats_flow_state_names[tr->to],
	    tr->event, tr->reason ? " reason=" : "",
	    tr->reason ? bind_reason_names[tr->reason] : "");
}

/* ---- counters and the checked transition ---- */

int
bt_category(int s)
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
	int a = bt_category(from), b = bt_category(to);
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
int
bt_transition(struct bind_table *t, struct bent *e, int to, int reason,
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

void
bt_flow_of(const struct bind_table *t, const struct bent *e,
    struct cats_flow *f)
{
	const struct bclass *c = cls(t, e);
	memset(f, 0, sizeof(*f));
	f->proto = c->k.proto;
	src_of(t, e, &f->src);
	f->dst = c->k.dst;
	CATS_SET_IF(e->flags & F_SPORT, f, FLOW, sport, e->sport);
	CATS_SET_IF(c->k.has & K_DPORT, f, FLOW, dport, c->k.dport);
	f->tenant = str_text(c->k.tenant);
}

void
bt_decision_of(const struct bclass *c, uint64_t now, struct cats_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->cs_id = c->k.cs_id->s;
	d->csci_id = c->k.csci_id->s;
	d->locator = c->k.locator;
	d->egress = c->k.egress->s;
	d->ts = now;
	CATS_SET_IF(c->k.has & K_PORT, d, DEC, port, c->k.port);
	CATS_SET_IF(c->k.has & K_CST, d, DEC, cst_gen, c->k.cst_gen);
	CATS_SET_IF(c->k.has & K_NST, d, DEC, nst_gen, c->k.nst_gen);
	CATS_SET_IF(c->k.has & K_ONFAIL, d, DEC, on_failure, c->k.on_failure);
	CATS_SET(d, DEC, idle_ms, c->k.idle_ms);
	CATS_SET(d, DEC, hard_ms, c->k.hard_ms);
}

/* The binding record of entry e (bind.h: bind_record). */
void
bt_make_binding(const struct bind_table *t, const struct bent *e, int op,
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
		bt_flow_of(t, e, &f->match);
		f->locator = c->k.locator;
		CATS_SET_IF(c->k.has & K_PORT, f, BFW, port, c->k.port);
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
		CATS_SET_IF(e->flags & F_SPORT, &v->match, FLOW, dport,
		    e->sport);
		v->match.tenant = f->match.tenant;
		v->restore_src = c->k.dst;
		CATS_SET_IF(c->k.has & K_DPORT, v, BRV, restore_port,
		    c->k.dport);
		v->owner = c->k.ingress->s;
		CATS_SET_IF(c->k.idle_ms, b, BND, idle_ms, c->k.idle_ms);
		CATS_SET_IF(c->k.hard_ms, b, BND, hard_ms, c->k.hard_ms);
		CATS_SET_IF(c->k.has & K_CST, b, BND, cst_gen, c->k.cst_gen);
		CATS_SET_IF(c->k.has & K_NST, b, BND, nst_gen, c->k.nst_gen);
		CATS_SET_IF(p->has & P_GEN, b, BND, path_gen, p->gen);
		CATS_SET_IF(p->has & P_PID, b, BND, path_id, p->path_id);
		b->path.v = p->names;
		b->path.n = p->nn;
		CATS_SET_IF(c->k.has & K_ONFAIL, b, BND, on_failure,
		    c->k.on_failure);
	}
}

void
bt_send_rec(struct bind_table *t, const struct cats_rec *r,
    const struct bstr *to)
{
	if (t->io.send)
		t->io.send(t->io.arg, r, to ? to->s : NULL);
}

void
bt_journal_rec(struct bind_table *t, const struct cats_rec *r)
{
	if (t->io.journal)
		t->io.journal(t->io.arg, r);
}

/*
 * Send entry e's binding to one forwarder (its current owner epoch); ahead:
 * through send_ahead (an egress's copy that admits nothing yet).
 */
static void
send_binding(struct bind_table *t, struct bent *e, int op, struct bstr *to,
    uint64_t now, bool ahead)
{
	struct cats_rec r;
	e->epoch = (uint32_t)t->epoch;
	bt_make_binding(t, e, op, t->epoch, now, BR_OK, &r);
	if (to != NULL)
		r.u.binding.path.n = 0;	/* the forwarders need no node list */
	if (ahead && to != NULL && t->io.send_ahead != NULL)
		t->io.send_ahead(t->io.arg, &r, to->s);
	else
		bt_send_rec(t, &r, to);
	if (to != NULL) {
		if (op == CATS_BIND_INSTALL)
			t->k.sent_install++;
		else if (op == CATS_BIND_REFRESH)
			t->k.sent_refresh++;
	}
}

void
bt_send_binding(struct bind_table *t, struct bent *e, int op, struct bstr *to,
    uint64_t now)
{
	send_binding(t, e, op, to, now, false);
}

/*
 * An error for a transaction: to the output and to its ingress forwarder,
 * which releases the flow's pending packets.
 */
void
bt_send_error(struct bind_table *t, uint64_t txn, const char *code,
    const struct bstr *ingress, const struct cats_flow *flow, const char *msg,
    uint64_t now)
{
	struct cats_rec r;
	cats_rec_error_init(&r, code, "cats-bind", txn, now, msg);
	cats_rec_error_route(&r, ingress ? ingress->s : NULL, flow);
	bt_send_rec(t, &r, NULL);
	if (ingress != NULL && ingress->connected)
		bt_send_rec(t, &r, ingress);
	t->k.sent_error++;
}

static void
entry_error(struct bind_table *t, struct bent *e, const char *code,
    const char *msg, uint64_t now)
{
	struct cats_flow f;
	bt_flow_of(t, e, &f);
	bt_send_error(t, e->txn, code, cls(t, e)->k.ingress, &f, msg, now);
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
void
bt_cleanup(struct bind_table *t, struct bent *e, uint64_t now)
{
	if (bt_transition(t, e, S_ABSENT, BR_OK, now) < 0)
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
	bt_make_binding(t, e, CATS_BIND_REMOVE, t->epoch, now, reason, &r);
	if ((e->flags & F_SENT_ING) && c->k.ingress->connected) {
		bt_send_rec(t, &r, c->k.ingress);
		t->k.sent_remove++;
	} else {
		e->flags &= (uint8_t)~F_SENT_ING;
	}
	if (c->k.egress == c->k.ingress) {
		e->flags &= (uint8_t)~F_SENT_EGR;
	} else if ((e->flags & F_SENT_EGR) && c->k.egress->connected) {
		bt_send_rec(t, &r, c->k.egress);
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
	bt_make_binding(t, e, CATS_BIND_REMOVE, t->epoch, now, reason, &r);
	bt_journal_rec(t, &r);
	bt_send_rec(t, &r, NULL);
}

/*
 * A transaction or flow fails (to FAILED or RECONNECT_REQUIRED): journaled
 * if it was a binding, an error to its ingress unless quiet, removal at
 * the forwarders that hold it, and cleanup once none does.
 */
void
bt_fail(struct bind_table *t, struct bent *e, int to, int reason, bool quiet,
    uint64_t now)
{
	int from = e->state;
	uint32_t i = ent_no(t, e);
	if (bt_transition(t, e, to, reason, now) < 0)
		return;
	t->k.fail[reason]++;
	bool bound = from == S_READY || from == S_ACTIVE;
	if (bound)
		journal_remove(t, e, reason, now);
	else if (from == S_DS && t->journal_pending) {
		/* Its path-req was replicated: its end is too, so that a new
		 * owner does not ask its path again. */
		struct cats_rec end;
		cats_rec_error_init(&end, bind_reason_names[reason],
		    "cats-bind", e->txn, now, NULL);
		bt_journal_rec(t, &end);
	}
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
		bt_cleanup(t, e, now);
		return;
	}
	e->t1 = now + t->c.drain_ms;
	bt_wheel_link(t, e, i);
}

/* ACTIVE -> DRAINING on expiry; the forwarders release it with us. */
void
bt_drain(struct bind_table *t, struct bent *e, int reason, uint64_t now)
{
	uint32_t i = ent_no(t, e);
	if (bt_transition(t, e, S_DRAINING, reason, now) < 0)
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
		bt_cleanup(t, e, now);
		return;
	}
	e->t1 = now + t->c.drain_ms;
	bt_wheel_link(t, e, i);
}

/*
 * Send a BINDING_READY binding where it may go now.  Commit "both": the
 * egress first (the service-side delivery exists before traffic is
 * admitted), the ingress once the egress installed it.  The egress's copy
 * admits nothing, so it goes ahead of the journal's sync (send_ahead): the
 * egress installs it while the binding is made durable, and the ingress's
 * copy, which releases the first packet, waits for both.
 */
void
bt_push(struct bind_table *t, struct bent *e, uint64_t now)
{
	const struct bclass *c = cls(t, e);
	struct bstr *ing = c->k.ingress, *egr = c->k.egress;
	bool same = egress_is_ingress(c);
	if (e->state != S_READY)
		return;
	if (same) {
		if (!(e->flags & F_SENT_ING) && ing->connected) {
			bt_send_binding(t, e, CATS_BIND_INSTALL, ing, now);
			e->flags |= F_SENT_ING;
		}
		return;
	}
	if (!(e->flags & F_SENT_EGR) && egr->connected) {
		send_binding(t, e, CATS_BIND_INSTALL, egr, now,
		    t->c.commit == BIND_COMMIT_BOTH);
		e->flags |= F_SENT_EGR;
	}
	bool ing_may = t->c.commit != BIND_COMMIT_BOTH || (e->flags & F_OK_EGR);
	if (ing_may && !(e->flags & F_SENT_ING) && ing->connected) {
		bt_send_binding(t, e, CATS_BIND_INSTALL, ing, now);
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
	bt_journal_rec(t, &r);
}

void
bt_activate(struct bind_table *t, struct bent *e, uint64_t now)
{
	if (bt_transition(t, e, S_ACTIVE, BR_OK, now) < 0)
		return;
	t->k.activated++;
	journal_commit(t, e, now);
	e->t0 = e->t1 = now;
	bt_wheel_link(t, e, ent_no(t, e));
}

bool
bt_committed(const struct bind_table *t, const struct bent *e)
{
	if (!(e->flags & F_OK_ING))
		return false;
	return t->c.commit != BIND_COMMIT_BOTH || egress_is_ingress(cls(t, e))
	    || (e->flags & F_OK_EGR);
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
		bt_fail(t, e, S_FAILED, BR_TIMEOUT, false, now);
		break;
	case S_READY:
		snprintf(t->msg, sizeof(t->msg), "no commit by %s%s%s",
		    c->k.ingress->s, egress_is_ingress(c) ? "" : " and ",
		    egress_is_ingress(c) ? "" : c->k.egress->s);
		bt_fail(t, e, S_FAILED, BR_COMMIT_TIMEOUT, false, now);
		break;
	case S_ACTIVE:
		if (c->k.hard_ms && now >= e->t0 + c->k.hard_ms) {
			bt_drain(t, e, BR_HARD, now);
		} else if (e->flags & F_REPAIR) {
			snprintf(t->msg, sizeof(t->msg), "no repair path "
			    "before the deadline");
			bt_fail(t, e, (c->k.has & K_ONFAIL) && c->k.on_failure ==
			    CATS_ONFAIL_RECONNECT ? S_RECONNECT : S_FAILED,
			    BR_REPAIR_FAILED, false, now);
		} else {
			bt_drain(t, e, BR_IDLE, now);
		}
		break;
	case S_DRAINING:
		t->k.drained++;
		bt_cleanup(t, e, now);
		break;
	case S_FAILED:
	case S_RECONNECT:
		bt_cleanup(t, e, now);
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

/* ---- for tests ---- */

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
	if (bt_transition(t, e, to, BR_OK, now) < 0)
		return -1;
	if (to == S_ABSENT)
		bt_entry_release(t, e);
	else
		bt_wheel_link(t, e, i);
	return 0;
}
