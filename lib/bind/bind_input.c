/*
 * bind_input.c - the records in (bind.h): requests, path requests and
 * replies joined into bindings, upstream errors, forwarder status and
 * hellos, metrics that fail instances.  Each checks what it is given,
 * then moves entries through bind_fsm.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "bind/bind_int.h"

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
		bt_send_binding(t, x, CATS_BIND_INSTALL, c->k.ingress, now);
	return refuse(t, BR_DUP_FLOW);
}

/*
 * A new transaction for a flow whose binding its ingress installed (ACTIVE),
 * from the same run of that ingress (its transaction ids, epoch*1000+n,
 * cats-fwd(1), are both at or above its epoch's): the ingress asks only
 * for a flow it holds no binding for, so it has let that one go, a
 * 5-tuple reused after a FIN or a RST (selected afresh, cats-fwd(1)),
 * whose expired status may still be on its way.  The old binding drains
 * (removed at the egress, which a new one for the same keys displaces
 * anyway) and leaves the flow index to the new transaction.  From an
 * ingress that restarted since (an older run's binding, re-sent on its
 * hello) the flow keeps its binding: an established flow is never moved;
 * so does a flow a forwarder's fallback binding names (FALLBACK).
 */
static bool
superseded(struct bind_table *t, struct bent *e, uint64_t txn,
    const struct bstr *ingress, const struct cats_decision *d, uint64_t now)
{
	const struct bclass *c = cls(t, e);
	const struct bstr *ing = c->k.ingress;
	if (d != NULL && CATS_HAS(d, DEC, fallback) && d->fallback)
		return false;	/* a fallback reported: bind_fwd_binding */
	if (e->state != S_ACTIVE || !(e->flags & F_OK_ING) || txn == e->txn ||
	    ing != ingress || !ing->connected || ing->fwd_epoch == 0 ||
	    ing->fwd_epoch > UINT64_MAX / 1000 ||
	    e->txn < ing->fwd_epoch * 1000 || txn < ing->fwd_epoch * 1000)
		return false;
	e->flags &= (uint8_t)~(F_SENT_ING | F_OK_ING);
	bt_drain(t, e, BR_REMOVED, now);
	return true;
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
	if (x != 0 && superseded(t, ent(t, x), txn, k.ingress, d, now))
		x = 0;
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
	bt_transition(t, e, S_PENDING, BR_OK, now);
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
		bt_transition(t, e, S_DS, BR_OK, now);
		return BR_OK;
	}
	bt_flow_of(t, e, &f);
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
	bt_transition(t, e, S_DS, BR_OK, now);
	return BR_OK;
}

static uint64_t
txn_deadline(const struct bind_table *t, bool has_dl, uint64_t dl,
    uint64_t base)
{
	return has_dl ? dl : base + t->c.pending_ms;
}

/* ---- the records in ---- */

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
		bt_send_error(t, r->txn, bind_reason_names[rc], ing, &r->flow,
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
	bt_send_error(t, txn, bind_reason_names[rc], ing, f, t->msg, now);
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
				bt_fail(t, e, S_FAILED, BR_JOIN_MISMATCH, false, now);
				*out = NULL;
				return refuse(t, BR_JOIN_MISMATCH);
			}
		}
		if (ingress != NULL && strcmp(ingress, c->k.ingress->s) != 0) {
			snprintf(t->msg, sizeof(t->msg), "ingress %s, the "
			    "transaction's is %s", ingress, c->k.ingress->s);
			bt_fail(t, e, S_FAILED, BR_JOIN_MISMATCH, false, now);
			*out = NULL;
			return refuse(t, BR_JOIN_MISMATCH);
		}
		int rc = decide(t, e, d, now);
		if (rc != BR_OK) {
			bt_fail(t, e, S_FAILED, rc, false, now);
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
	int rc = txn_with_decision(t, r->txn, ingress, f, &r->decision, true,
	    dl, now, &e);
	/* A request waiting for its path, replicated as it was decided. */
	if (rc == BR_OK && e != NULL && e->state == S_DS && t->journal_pending) {
		struct cats_rec rec;
		cats_rec_init(&rec, CATS_T_PATH_REQ);
		rec.u.preq = *r;
		bt_journal_rec(t, &rec);
	}
	return rc;
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
		bt_fail(t, e, on, BR_REPAIR_FAILED, false, now);
		return BR_OK;
	}
	uint32_t p;
	int rc = bt_path_from_rep(t, r, &p);
	if (rc != BR_OK) {
		bt_fail(t, e, on, BR_REPAIR_FAILED, false, now);
		return refuse(t, rc);
	}
	if (bt_transition(t, e, S_ACTIVE, BR_OK, now) < 0) {
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
	bt_make_binding(t, e, CATS_BIND_REFRESH, t->epoch, now, BR_OK, &rec);
	bt_journal_rec(t, &rec);
	bt_send_rec(t, &rec, NULL);
	if ((e->flags & F_SENT_EGR) && c->k.egress->connected &&
	    !egress_is_ingress(c))
		bt_send_binding(t, e, CATS_BIND_REFRESH, c->k.egress, now);
	if ((e->flags & F_SENT_ING) && c->k.ingress->connected)
		bt_send_binding(t, e, CATS_BIND_REFRESH, c->k.ingress, now);
	return BR_OK;
}

static void ask_pce(struct bind_table *t, struct bent *e, int dp,
    const struct cats_ip *unreachable, const struct cats_arr_text *dps,
    uint64_t now);

/*
 * A path in a data plane the egress does not advertise, where the
 * selection allowed others (the reply's dataplanes): the PCE is asked
 * again, once, in the first that both ends advertise, within the
 * transaction's deadline (cats-bind(1) Capabilities).  True when asked.
 */
static bool
reask(struct bind_table *t, struct bent *e, const struct cats_path_rep *r,
    uint64_t now)
{
	const struct bclass *c = cls(t, e);
	if ((e->flags & F_REPAIR) || !CATS_HAS(r, PRP, dataplanes) ||
	    c->k.egress == NULL)
		return false;
	int dp = CATS_HAS(r, PRP, dataplane) ? r->dataplane : CATS_DP_IP;
	int nd = bt_caps_reask(t, c->k.ingress->s, c->k.egress->s, dp,
	    r->endpoint_addr.af, &r->dataplanes);
	struct bent *o = find_txn(t, e->txn);
	if (nd < 0 || (o != NULL && o != e))
		return false;
	if (o == NULL)
		bt_txn_index(t, e);
	e->flags |= F_REPAIR;
	ask_pce(t, e, nd, NULL, &r->dataplanes, now);
	t->k.caps_reasks++;
	return true;
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
	if (why == BR_PATH_CAPABILITY && reask(t, e, r, now))
		return BR_OK;
	if (why == BR_OK)
		why = limit_bindings(t, e);
	if (why != BR_OK) {
		bt_path_put(t, p);
		bt_fail(t, e, S_FAILED, why, false, now);
		return why == BR_NO_PATH || why == BR_PATH_ERROR ? BR_OK :
		    refuse(t, why);
	}
	e->path = p;
	e->version = 1;
	e->flags &= (uint8_t)~F_REPAIR;	/* asked again, answered */
	if (bt_transition(t, e, S_READY, BR_OK, now) < 0) {
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
		bt_make_binding(t, e, CATS_BIND_INSTALL, t->epoch, now, BR_OK,
		    &rec);
		bt_journal_rec(t, &rec);
		bt_send_rec(t, &rec, NULL);
	}
	if (t->c.commit == BIND_COMMIT_NONE) {
		e->flags |= F_OK_ING | F_OK_EGR;
		bt_activate(t, e, now);
		return BR_OK;
	}
	e->t1 = now + t->c.commit_ms;
	bt_wheel_link(t, e, ent_no(t, e));
	bt_push(t, e, now);
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
	bt_send_rec(t, &r, NULL);
	struct bstr *ing = bt_str_find(t, x->ingress);
	if (ing != NULL && ing->connected)
		bt_send_rec(t, &r, ing);
	if (!CATS_HAS(x, ERR, txn))
		return BR_OK;
	struct bent *e = find_txn(t, x->txn);
	if (e == NULL)
		return BR_OK;
	if (e->state == S_PENDING || e->state == S_DS) {
		snprintf(t->msg, sizeof(t->msg), "%s", x->code);
		bt_fail(t, e, S_FAILED, BR_SELECTION, true, now);
	}
	return BR_OK;
}

/*
 * A path-req for e (same transaction, headend, egress, decision and flow)
 * in data plane dp, with the deadline e->t1: a repair's (unreachable, when
 * a path-down named it) or a pending one's asked again (dps, the
 * selection's data planes).
 */
static void
ask_pce(struct bind_table *t, struct bent *e, int dp,
    const struct cats_ip *unreachable, const struct cats_arr_text *dps,
    uint64_t now)
{
	const struct bclass *c = cls(t, e);
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_PATH_REQ);
	struct cats_path_req *q = &r.u.preq;
	q->txn = e->txn;
	q->ts = now;
	q->headend = c->k.ingress->s;
	q->endpoint = c->k.egress->s;
	q->dataplane = dp;
	int msd = bt_caps_msd(t, c->k.ingress->s, q->dataplane);
	CATS_SET_IF(msd > 0, q, PRQ, msd, (uint64_t)msd);
	bt_decision_of(c, now, &q->decision);
	bt_flow_of(t, e, &q->flow);
	q->has |= UINT64_C(1) << CATS_PRQ_flow;
	q->ingress = c->k.ingress->s;
	CATS_SET(q, PRQ, deadline, e->t1);
	if (unreachable != NULL)
		q->unreachable = *unreachable;
	if (dps != NULL) {
		q->dataplanes = *dps;
		q->has |= UINT64_C(1) << CATS_PRQ_dataplanes;
	}
	bt_send_rec(t, &r, NULL);
}

int
bind_pending_again(struct bind_table *t, const struct cats_path_req *r,
    uint64_t now)
{
	int rc = bind_path_req(t, r, now);
	struct bent *e = find_txn(t, r->txn);
	if (rc != BR_OK || e == NULL || e->state != S_DS)
		return rc != BR_OK ? rc : BR_DUP_TXN;
	ask_pce(t, e, r->dataplane, NULL, CATS_HAS(r, PRQ, dataplanes) ?
	    &r->dataplanes : NULL, now);
	t->k.pending_reasked++;
	return BR_OK;
}

/*
 * Ask the PCE again for e's path (same headend, egress and decision);
 * unreachable, when a path-down named it, is the segment a router could
 * not reach: the PCE avoids it.
 */
static void
start_repair(struct bind_table *t, struct bent *e,
    const struct cats_ip *unreachable, uint64_t now)
{
	const struct bclass *c = cls(t, e);
	const struct bpath *p = path_of(t, e);
	if (e->flags & F_REPAIR)
		return;
	if (find_txn(t, e->txn) != NULL) {
		/* The txn id is in use by another flow: no repair possible. */
		bt_fail(t, e, (c->k.has & K_ONFAIL) && c->k.on_failure ==
		    CATS_ONFAIL_RECONNECT ? S_RECONNECT : S_FAILED,
		    BR_REPAIR_FAILED, false, now);
		return;
	}
	e->flags |= F_REPAIR;
	bt_txn_index(t, e);
	e->t1 = now + t->c.repair_ms;
	bt_wheel_link(t, e, ent_no(t, e));
	ask_pce(t, e, p ? p->encap : CATS_DP_IP, unreachable, NULL, now);
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

/*
 * An installed status for a flow that is not READY or ACTIVE: counted,
 * no transition.  In DRAINING, FAILED or RECONNECT_REQUIRED a forwarder
 * that was sent the removal reports its removal next; one that was not
 * (it was not connected then, or not sent the install: e.g. it re-learned
 * the binding) is sent it now and held until it reports.  In PENDING or
 * DESTINATION_SELECTED nothing was sent: only counted.
 */
static void
late_install(struct bind_table *t, struct bent *e, int ro, uint64_t now)
{
	t->k.late_status++;
	if (e->state != S_DRAINING && e->state != S_FAILED &&
	    e->state != S_RECONNECT)
		return;
	const struct bclass *c = cls(t, e);
	struct cats_rec r;
	bt_make_binding(t, e, CATS_BIND_REMOVE, t->epoch, now, BR_REMOVED, &r);
	if ((ro & 1) && !(e->flags & F_SENT_ING) && c->k.ingress->connected) {
		bt_send_rec(t, &r, c->k.ingress);
		t->k.sent_remove++;
		e->flags |= F_SENT_ING;
	}
	if ((ro & 2) && !(ro & 1) && !(e->flags & F_SENT_EGR) &&
	    c->k.egress->connected) {
		bt_send_rec(t, &r, c->k.egress);
		t->k.sent_remove++;
		e->flags |= F_SENT_EGR;
	}
}

int
bind_status(struct bind_table *t, const struct cats_status *s, uint64_t now)
{
	bind_tick(t, now);
	if ((unsigned)s->event < 8)
		t->k.status_in[s->event]++;
	if (s->event == CATS_EV_HELLO) {
		int rc = bind_fwd_hello(t, s->fwd, CATS_HAS(s, STA, epoch) ?
		    s->epoch : 0, now);
		if (rc == BR_OK && CATS_HAS(s, STA, caps))
			bt_caps_set(bt_str_find(t, s->fwd), &s->caps);
		return rc;
	}
	if (s->event == CATS_EV_PATH_UP)
		return BR_OK;
	if (!CATS_HAS(s, STA, id) && !CATS_HAS(s, STA, txn)) {
		/* Of the forwarder, not of a binding: its capabilities. */
		struct bstr *f = bt_str_find(t, s->fwd);
		if (s->event != CATS_EV_REFRESHED || !CATS_HAS(s, STA, caps))
			return refuse(t, BR_UNKNOWN_BINDING);
		if (f == NULL || !f->connected)
			return refuse(t, BR_NOT_OWNER);
		bt_caps_set(f, &s->caps);
		t->k.caps_updates++;
		return BR_OK;
	}
	if (CATS_HAS(s, STA, id) && s->id >= BIND_FALLBACK_ID) {
		/* Of a binding the forwarder made (adopted or ended). */
		t->k.fallback_status++;
		return BR_OK;
	}
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
			if (bt_committed(t, e))
				bt_activate(t, e, now);
			else
				bt_push(t, e, now);
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
			/* No edge leads back to ACTIVE (001): an install
			 * reported late, where it is going away or was never
			 * sent (its removal is on its way, or goes now). */
			late_install(t, e, ro, now);
		}
		break;
	case CATS_EV_FAILED:
		forget_holder(e, ro);
		if (e->state == S_READY || e->state == S_ACTIVE)
			/* A forwarder that cannot do the path: a path failure. */
			bt_fail(t, e, S_FAILED, s->reason != NULL &&
			    strcmp(s->reason, "unsupported-encap") == 0 ?
			    BR_PATH_CAPABILITY : BR_COMMIT_FAILED, false, now);
		else if (!holds(e) && (e->state == S_DRAINING ||
		    e->state == S_FAILED || e->state == S_RECONNECT))
			bt_cleanup(t, e, now);
		break;
	case CATS_EV_EXPIRED:
	case CATS_EV_REMOVED:
		if (e->state == S_ACTIVE) {
			forget_holder(e, ro);
			bt_drain(t, e, s->event == CATS_EV_EXPIRED ?
			    (s->reason && strcmp(s->reason, "hard") == 0 ?
			    BR_HARD : BR_IDLE) : BR_REMOVED, now);
		} else if (e->state == S_DRAINING || e->state == S_FAILED ||
		    e->state == S_RECONNECT) {
			forget_holder(e, ro);
			if (!holds(e)) {
				if (e->state == S_DRAINING)
					t->k.drained++;
				bt_cleanup(t, e, now);
			}
		} else if (e->state == S_READY) {
			forget_holder(e, ro);
			bt_fail(t, e, S_FAILED, BR_COMMIT_FAILED, false, now);
		} else {
			/* PENDING, DESTINATION_SELECTED: nothing was sent
			 * that could be removed (no edge to DRAINING). */
			t->k.late_status++;
		}
		break;
	case CATS_EV_PATH_DOWN:
		if (e->state == S_ACTIVE)
			start_repair(t, e, s->unreachable.af ? &s->unreachable :
			    NULL, now);
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
			bt_fail(t, e, (c->k.has & K_ONFAIL) && c->k.on_failure ==
			    CATS_ONFAIL_RECONNECT ? S_RECONNECT : S_FAILED,
			    BR_INSTANCE_FAILED, false, now);
			n++;
		} else if (e->state == S_READY || e->state == S_DS) {
			bt_fail(t, e, S_FAILED, BR_INSTANCE_FAILED, false, now);
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

/* Does the path p use the link src -> dst (directed, as cats-pce keeps
 * it) or, for src NULL, the node dst? */
static bool
path_uses(const struct bpath *p, const char *src, const char *dst)
{
	char w[BIND_PATH_NODES_MAX + 4];
	size_t ls = src ? strlen(src) : 0, ld = strlen(dst);
	if (p->nlen == 0 || ls + ld + 3 > sizeof(w))
		return false;
	size_t n = 0;
	w[n++] = '\0';
	if (src != NULL) {
		memcpy(w + n, src, ls);
		n += ls;
		w[n++] = '\0';
	}
	memcpy(w + n, dst, ld);
	n += ld;
	w[n++] = '\0';
	return memmem(p->nodes, p->nlen, w, n) != NULL;
}

/*
 * A net record that takes a link or a node down (up false): every active
 * binding whose path uses it is repaired as on a path-down status, a path
 * request to the same egress (001: a topology update invalidates a path
 * while the instance stays healthy; handled independently).  A bounded
 * scan: the interned paths first (each once, however many flows share it),
 * then the bindings only when a path was hit.
 */
int
bind_net(struct bind_table *t, const struct cats_net *nr, uint64_t now)
{
	bind_tick(t, now);
	if (!CATS_HAS(nr, NET, up) || nr->up)
		return BR_OK;
	const char *src = NULL, *dst = NULL;
	if (nr->scope == CATS_NET_LINK && nr->src != NULL && nr->dst != NULL) {
		src = nr->src;
		dst = nr->dst;
	} else if (nr->scope == CATS_NET_NODE && nr->node != NULL) {
		dst = nr->node;
	} else {
		return BR_OK;
	}
	size_t hit = 0;
	for (uint32_t i = 1; i < t->hpath.n; i++) {
		struct bpath *p = t->hpath.v[i];
		if (p != NULL && path_uses(p, src, dst)) {
			p->mark = true;
			hit++;
		}
	}
	if (hit == 0)
		return BR_OK;
	t->k.net_downs++;
	for (uint32_t i = 1; i < t->ents.top; i++) {
		struct bent *e = ent(t, i);
		if (e->state != S_ACTIVE || e->path == 0 ||
		    (e->flags & F_REPAIR) || !path_of(t, e)->mark)
			continue;
		t->k.net_repairs++;
		start_repair(t, e, NULL, now);
	}
	for (uint32_t i = 1; i < t->hpath.n; i++) {
		struct bpath *p = t->hpath.v[i];
		if (p != NULL)
			p->mark = false;
	}
	return BR_OK;
}

int
bind_input_kind(int type)
{
	switch (type) {
	case CATS_T_PATH_REP:
	case CATS_T_ERROR:
	case CATS_T_STATUS:
	case CATS_T_PATH_REQ:
	case CATS_T_REQUEST:
		return BIND_IN_TAKE;
	case CATS_T_METRIC:
	case CATS_T_NET:
		return BIND_IN_BOTH;
	default:
		return BIND_IN_PASS;
	}
}

int
bind_input(struct bind_table *t, const struct cats_rec *r, uint64_t now)
{
	switch (r->type) {
	case CATS_T_PATH_REP:
		return bind_path_rep(t, &r->u.prep, now);
	case CATS_T_ERROR:
		return bind_error(t, &r->u.error, now);
	case CATS_T_STATUS:
		return bind_status(t, &r->u.status, now);
	case CATS_T_PATH_REQ:
		return bind_path_req(t, &r->u.preq, now);
	case CATS_T_REQUEST:
		return bind_request(t, &r->u.request, now);
	case CATS_T_METRIC:
		return bind_metric(t, &r->u.metric, now);
	case CATS_T_NET:
		return bind_net(t, &r->u.net, now);
	default:
		return BR_OK;
	}
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
	bt_send_rec(t, &r, fwd);
}

/* Forwarder f leaves the list of re-syncs under way. */
static void
resync_unlink(struct bind_table *t, struct bstr *f)
{
	if (!f->rs_on)
		return;
	for (struct bstr **p = &t->resyncing; *p != NULL; p = &(*p)->rs_next)
		if (*p == f) {
			*p = f->rs_next;
			break;
		}
	f->rs_next = NULL;
	f->rs_on = false;
}

/* Entry i re-sent to (or settled for) forwarder f; true when sent. */
static bool
resync_one(struct bind_table *t, struct bstr *f, uint32_t i, uint64_t now)
{
	struct bent *e = ent(t, i);
	if (e->state == S_ABSENT || e->cls == 0)
		return false;
	const struct bclass *c = cls(t, e);
	int ro = role(c, f);
	if (ro == 0)
		return false;
	switch (e->state) {
	case S_READY:
		forget_holder(e, ro);
		bt_push(t, e, now);
		t->k.resync_bindings++;
		return true;
	case S_ACTIVE:
		bt_send_binding(t, e, CATS_BIND_INSTALL, f, now);
		if (ro & 1)
			e->flags |= F_SENT_ING;
		if (ro & 2)
			e->flags |= F_SENT_EGR;
		t->k.resync_bindings++;
		return true;
	case S_DRAINING:
	case S_FAILED:
	case S_RECONNECT:
		/* Not re-sent: the marker fences what it still has. */
		forget_holder(e, ro);
		if (!holds(e)) {
			if (e->state == S_DRAINING)
				t->k.drained++;
			bt_cleanup(t, e, now);
		}
		return false;
	default:
		return false;
	}
}

/* A slice of f's re-sync: up to max bindings; the marker once all are. */
static void
resync_slice(struct bind_table *t, struct bstr *f, size_t max, uint64_t now)
{
	size_t sent = 0, seen = 0;
	uint32_t end = f->rs_end < t->ents.top ? f->rs_end : t->ents.top;
	while (f->rs_at < end && sent < max && seen < 8 * max) {
		sent += resync_one(t, f, f->rs_at++, now);
		seen++;
	}
	if (f->rs_at >= end) {
		resync_unlink(t, f);
		sync_marker(t, f, now);
	}
}

bool
bind_fwd_resync(struct bind_table *t, size_t max, uint64_t now)
{
	for (struct bstr *f = t->resyncing, *nx; f != NULL; f = nx) {
		nx = f->rs_next;
		resync_slice(t, f, max, now);
	}
	return t->resyncing != NULL;
}

bool
bind_fwd_resync_pending(const struct bind_table *t)
{
	return t->resyncing != NULL;
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
	/*
	 * The entries there now, from the first: one made after this is sent
	 * by its own making.  A hello during a re-sync begins it again.
	 */
	f->rs_at = 1;
	f->rs_end = t->ents.top;
	if (!f->rs_on) {
		f->rs_on = true;
		f->rs_next = t->resyncing;
		t->resyncing = f;
	}
	resync_slice(t, f, BIND_RESYNC_SLICE, now);
	return BR_OK;
}

void
bind_fwd_gone(struct bind_table *t, const char *name)
{
	struct bstr *f = bt_str_find(t, name);
	if (f == NULL || !f->connected)
		return;
	resync_unlink(t, f);
	f->connected = false;
	bt_str_put(t, f);
}

bool
bind_fwd_connected(const struct bind_table *t, const char *name)
{
	const struct bstr *f = bt_str_find(t, name);
	return f != NULL && f->connected;
}

/* ---- bindings a forwarder made itself (its configured fallback) ---- */

/* The CSCI-ID of a live class of cs_id with this instance and egress. */
static const char *
instance_of(const struct bind_table *t, const char *cs_id,
    const struct cats_ip *locator, uint64_t port, const char *egress)
{
	for (size_t i = 0; i < t->classes.cap; i++) {
		const struct bclass *c = t->classes.s[i].item;
		if (t->classes.s[i].h == 0 || c->k.cs_id == NULL ||
		    c->k.csci_id == NULL || c->k.egress == NULL)
			continue;
		if (strcmp(c->k.cs_id->s, cs_id) == 0 &&
		    strcmp(c->k.egress->s, egress) == 0 &&
		    cats_ip_eq(&c->k.locator, locator) &&
		    ((c->k.has & K_PORT) ? c->k.port : 0) == port)
			return c->k.csci_id->s;
	}
	return NULL;
}

/*
 * The interned path a forwarder's fallback took: one of the manager's own
 * paths from headend fwd to egress with the same encapsulation (its
 * fallback candidates are paths the manager gave it), the newest of the
 * TE database when several match; NULL when none is known.  It gives the
 * adopted binding the path's nodes (a net record then finds it) and its
 * identity.
 */
static const struct bpath *
fallback_path(const struct bind_table *t, const char *fwd, const char *egress,
    const struct cats_bind_fwd *f)
{
	const struct bpath *best = NULL;
	for (uint32_t i = 1; i < t->hpath.n; i++) {
		const struct bpath *p = t->hpath.v[i];
		if (p == NULL || p->nn < 2 || p->encap != f->encap ||
		    strcmp(p->names[0], fwd) != 0 ||
		    strcmp(p->names[p->nn - 1], egress) != 0)
			continue;
		bool same;
		if (f->encap == CATS_DP_SRV6) {
			same = p->sids != NULL && p->n == f->sids.n;
			for (size_t k = 0; same && k < p->n; k++)
				same = cats_ip_eq(&p->sids[k], &f->sids.v[k]);
		} else if (f->encap == CATS_DP_SRMPLS) {
			same = p->labels != NULL && p->n == f->labels.n &&
			    memcmp(p->labels, f->labels.v, p->n * 8) == 0;
		} else if (f->encap == CATS_DP_IPIP) {
			same = cats_ip_eq(&p->tunnel_dst, &f->tunnel_dst);
		} else {
			same = p->n == 0;
		}
		if (same && (best == NULL || p->gen > best->gen))
			best = p;
	}
	return best;
}

/* End a fallback binding at its ingress: a remove of its id. */
static void
fallback_end(struct bind_table *t, struct bstr *ing,
    const struct cats_binding *b, const char *why, uint64_t now)
{
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_BINDING);
	struct cats_binding *x = &r.u.binding;
	x->id = b->id;
	x->version = b->version;
	x->epoch = t->epoch;
	x->op = CATS_BIND_REMOVE;
	x->ts = now;
	x->ingress = ing->s;
	x->reason = "fallback-ended";
	x->has = UINT64_C(1) << CATS_BND_id | UINT64_C(1) << CATS_BND_version |
	    UINT64_C(1) << CATS_BND_epoch | UINT64_C(1) << CATS_BND_op |
	    UINT64_C(1) << CATS_BND_ts | UINT64_C(1) << CATS_BND_ingress |
	    UINT64_C(1) << CATS_BND_reason;
	CATS_SET_IF(CATS_HAS(b, BND, txn), x, BND, txn, b->txn);
	bt_send_rec(t, &r, ing);
	t->k.sent_remove++;
	t->k.fallback_ended++;
	cats_audit("fallback-ended", "fwd=%s id=%" PRIu64 " cs_id=%s why=\"%s\"",
	    ing->s, b->id, b->cs_id ? b->cs_id : "-", why);
}

int
bind_fwd_binding(struct bind_table *t, const char *fwd,
    const struct cats_binding *b, uint64_t now)
{
	bind_tick(t, now);
	struct bstr *ing = bt_str_find(t, fwd);
	if (ing == NULL || !ing->connected)
		return refuse(t, BR_NOT_OWNER);
	if (b->id < BIND_FALLBACK_ID || b->op != CATS_BIND_INSTALL ||
	    b->reason == NULL || strcmp(b->reason, "fallback") != 0)
		return refuse(t, BR_BAD);
	if (b->ingress == NULL || strcmp(b->ingress, fwd) != 0)
		return refuse(t, BR_NOT_OWNER);
	t->k.fallback_reported++;
	const struct cats_bind_fwd *f = &b->fwd;
	const char *egress = b->egress ? b->egress :
	    CATS_HAS(f, BFW, egress) ? f->egress : NULL;
	uint64_t port = CATS_HAS(f, BFW, port) ? f->port : 0;
	const char *csci = b->cs_id != NULL && egress != NULL ?
	    instance_of(t, b->cs_id, &f->locator, port, egress) : NULL;
	if (csci == NULL) {
		fallback_end(t, ing, b, "no binding of the manager names its "
		    "instance", now);
		return BR_OK;
	}

	/* Adopted as the C-PS's answer would have come: a path reply. */
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_PATH_REP);
	struct cats_path_rep *p = &r.u.prep;
	struct cats_segment segs[16];
	memset(segs, 0, sizeof(segs));
	p->txn = b->id;
	p->ts = now;
	p->status = CATS_PATH_OK;
	p->headend = fwd;
	p->endpoint = egress;
	p->ingress = fwd;
	CATS_SET(p, PRP, dataplane, f->encap);
	size_t n = f->encap == CATS_DP_SRV6 ? f->sids.n : f->encap ==
	    CATS_DP_SRMPLS ? f->labels.n : 0;
	for (size_t i = 0; i < n && i < 16; i++) {
		segs[i].kind = CATS_SEG_NODE;
		if (f->encap == CATS_DP_SRV6)
			segs[i].sid = f->sids.v[i];
		else
			CATS_SET(&segs[i], SEG, label, f->labels.v[i]);
	}
	p->segments.v = segs;
	p->segments.n = n < 16 ? n : 16;
	if (f->encap == CATS_DP_IPIP)
		p->endpoint_addr = f->tunnel_dst;
	const struct bpath *known = fallback_path(t, fwd, egress, f);
	if (known != NULL) {
		p->path.v = known->names;
		p->path.n = known->nn;
		CATS_SET_IF(known->has & P_PID, p, PRP, path_id,
		    known->path_id);
		CATS_SET_IF(known->has & P_GEN, p, PRP, gen, known->gen);
	}
	struct cats_decision *d = &p->decision;
	d->cs_id = b->cs_id;
	d->csci_id = csci;
	d->locator = f->locator;
	d->egress = egress;
	d->ts = now;
	CATS_SET_IF(port, d, DEC, port, port);
	CATS_SET(d, DEC, fallback, true);
	CATS_SET_IF(CATS_HAS(b, BND, idle_ms), d, DEC, idle_ms, b->idle_ms);
	CATS_SET_IF(CATS_HAS(b, BND, hard_ms), d, DEC, hard_ms, b->hard_ms);
	p->flow = f->match;
	p->has |= UINT64_C(1) << CATS_PRP_decision |
	    UINT64_C(1) << CATS_PRP_flow;
	uint64_t bound = t->k.bound;
	int rc = bind_path_rep(t, p, now);
	if (t->k.bound > bound) {
		t->k.fallback_adopted++;
		cats_audit("fallback-adopted", "fwd=%s id=%" PRIu64 " cs_id=%s "
		    "csci_id=%s binding=%" PRIu64, fwd, b->id, b->cs_id, csci,
		    t->next_id - 1);
		return BR_OK;
	}
	if (rc != BR_DUP_FLOW)
		fallback_end(t, ing, b, t->msg[0] ? t->msg :
		    bind_reason_names[rc], now);
	t->msg[0] = '\0';
	return BR_OK;
}
