/*
 * bind_restore.c - the table rebuilt from journal records (bind.h:
 * bind_restore()): bindings whole, commits, epochs and the snapshot
 * trailer, applied without sending or journaling anything.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind/bind_int.h"

/* ---- restore ---- */

static int
restore_binding(struct bind_table *t, const struct cats_binding *b,
    uint64_t now)
{
	uint32_t i = find_id(t, b->id);
	if (b->op == CATS_BIND_REMOVE) {
		if (i != 0) {
			struct bent *e = ent(t, i);
			bt_account(t, e, e->state, S_ABSENT);
			t->k.state[e->state]--;
			bt_entry_release(t, e);
		}
		return BR_OK;
	}
	if (i != 0 && ent(t, i)->version > b->version)
		return BR_STALE_VERSION;
	const struct cats_bind_fwd *f = &b->fwd;
	const char *ingress = b->ingress ? b->ingress : b->rev.owner;
	const char *egress = b->egress ? b->egress : f->egress;
	if (ingress == NULL || egress == NULL || b->cs_id == NULL ||
	    b->csci_id == NULL || f->match.src.af != f->locator.af ||
	    (f->match.src.af != 4 && f->match.src.af != 6) ||
	    f->match.src.af != f->match.dst.af)
		return BR_BAD;
	int state = CATS_HAS(b, BND, state) ? b->state : S_READY;
	if (state != S_READY && state != S_ACTIVE)
		return BR_BAD;
	/* The decision and the path as the binding carries them. */
	struct cats_decision d;
	memset(&d, 0, sizeof(d));
	d.cs_id = b->cs_id;
	d.csci_id = b->csci_id;
	d.locator = f->locator;
	d.egress = egress;
	CATS_SET_IF(CATS_HAS(f, BFW, port), &d, DEC, port, f->port);
	CATS_SET_IF(CATS_HAS(b, BND, cst_gen), &d, DEC, cst_gen, b->cst_gen);
	CATS_SET_IF(CATS_HAS(b, BND, nst_gen), &d, DEC, nst_gen, b->nst_gen);
	CATS_SET_IF(CATS_HAS(b, BND, on_failure), &d, DEC, on_failure,
	    b->on_failure);
	CATS_SET(&d, DEC, idle_ms, CATS_HAS(b, BND, idle_ms) ? b->idle_ms : 0);
	CATS_SET(&d, DEC, hard_ms, CATS_HAS(b, BND, hard_ms) ? b->hard_ms : 0);
	struct pkey pk;
	memset(&pk, 0, sizeof(pk));
	pk.encap = (uint8_t)f->encap;
	if (f->encap == CATS_DP_SRV6) {
		pk.sids = f->sids.v;
		pk.n = (uint8_t)f->sids.n;
	} else if (f->encap == CATS_DP_SRMPLS) {
		pk.labels = f->labels.v;
		pk.n = (uint8_t)f->labels.n;
	} else if (f->encap == CATS_DP_IPIP) {
		pk.tunnel_dst = f->tunnel_dst;
	}
	struct cats_ip sids[16];
	if (pk.sids != NULL) {
		/* Addresses are compared whole: clear what v4 leaves unused. */
		memcpy(sids, pk.sids, pk.n * sizeof(*sids));
		pk.sids = sids;
	}
	/* Its nodes, so that a net record finds it after a restart too. */
	char nodes[BIND_PATH_NODES_MAX];
	bt_pkey_finish(&pk, CATS_HAS(b, BND, path_id), b->path_id,
	    CATS_HAS(b, BND, path_gen), b->path_gen, &b->path, nodes);
	struct bclass_key k;
	if (bt_class_key(t, &k, ingress, &f->match, &d) < 0)
		return BR_NOMEM;
	struct cats_flow fl = f->match;
	if (i != 0) {
		/* A newer version of a binding we have: new path and class. */
		struct bent *e = ent(t, i);
		struct fkey a, c2;
		fkey_of(t, e, &a);
		uint32_t nc = bt_class_get(t, &k);
		uint32_t np = nc ? bt_path_get(t, &pk) : 0;
		if (np == 0) {
			bt_class_put(t, nc);
			return BR_NOMEM;
		}
		uint32_t oc = e->cls;
		e->cls = nc;
		fkey_of(t, e, &c2);
		if (memcmp(&a, &c2, sizeof(a)) != 0) {
			e->cls = oc;
			bt_class_put(t, nc);
			bt_path_put(t, np);
			return BR_BAD;
		}
		bt_class_put(t, oc);
		bt_path_put(t, e->path);
		e->path = np;
		e->version = (uint32_t)b->version;
		e->epoch = (uint32_t)b->epoch;
		if (e->state != state && state == S_ACTIVE) {
			bt_account(t, e, e->state, S_ACTIVE);
			t->k.state[e->state]--;
			t->k.state[S_ACTIVE]++;
			e->state = S_ACTIVE;
			e->t0 = b->ts;
			e->t1 = now;
		}
		bt_wheel_link(t, e, i);
		return BR_OK;
	}
	struct fkey fk;
	bt_fkey_from(t, ingress, &fl, &fk);
	uint64_t fh = t->pf_hash != 0 && memcmp(&fk, &t->pf_key,
	    sizeof(fk)) == 0 ? t->pf_hash : fkey_hash(&fk);
	if (bs_cidx_find(&t->by_flow, fh, flow_eq, t, &fk) != 0) {
		bt_key_release(t, &k);
		return BR_DUP_FLOW;
	}
	uint32_t client;
	if (bs_ctab_reserve(&t->counts) < 0 || bt_src_ref(t, k.tenant, &fl.src,
	    &client) < 0) {
		bt_key_release(t, &k);
		return BR_NOMEM;
	}
	uint32_t c = bt_class_get(t, &k);
	uint32_t p = c ? bt_path_get(t, &pk) : 0;
	i = p ? bs_slab_alloc(&t->ents) : 0;
	if (i == 0) {
		bt_path_put(t, p);
		bt_class_put(t, c);
		if (fl.src.af == 6)
			bt_v6_put(t, client);
		return BR_NOMEM;
	}
	struct bent *e = ent(t, i);
	e->wprev = W_UNLINKED;
	e->id = b->id;
	e->txn = CATS_HAS(b, BND, txn) ? b->txn : 0;
	e->cls = c;
	e->client = client;
	e->path = p;
	e->version = (uint32_t)b->version;
	e->epoch = (uint32_t)b->epoch;
	if (CATS_HAS(&fl, FLOW, sport)) {
		e->sport = (uint16_t)fl.sport;
		e->flags |= F_SPORT;
	}
	if (bs_cidx_put(&t->by_id, id_mix(t, e->id), i) < 0) {
		bt_entry_release(t, e);
		return BR_NOMEM;
	}
	if (bs_cidx_put(&t->by_flow, fh, i) == 0)
		e->flags |= F_FLOWIDX;
	e->state = (uint8_t)state;
	bt_account(t, e, S_ABSENT, state);
	t->k.state[state]++;
	if (state == S_ACTIVE) {
		e->t0 = b->ts;
		e->t1 = now;
	} else {
		e->t1 = now + t->c.commit_ms;
	}
	bt_wheel_link(t, e, i);
	if (b->id >= t->next_id)
		t->next_id = b->id + 1;
	return BR_OK;
}

void
bind_restore_prefetch(const struct bind_table *t, const struct cats_rec *r)
{
	if (r->type != CATS_T_BINDING || r->u.binding.op == CATS_BIND_REMOVE)
		return;
	const struct cats_binding *b = &r->u.binding;
	const struct cats_flow *f = &b->fwd.match;
	const char *ingress = b->ingress ? b->ingress : b->rev.owner;
	struct fkey fk;
	if (ingress == NULL || !bt_fkey_from(t, ingress, f, &fk))
		return;
	/*
	 * Spelled out: gcc 12 finds a helper that only prefetches free of
	 * effects and drops its calls.
	 */
	uint64_t h = fkey_hash(&fk);
	struct bind_table *tw = (struct bind_table *)t;
	tw->pf_key = fk;
	tw->pf_hash = h;
	if (t->by_flow.s != NULL)
		__builtin_prefetch(&t->by_flow.s[bs_idx_home((uint32_t)h,
		    t->by_flow.m, t->by_flow.cap)]);
	if (f->src.af == 4 && t->counts.s != NULL) {
		struct bs_ckey ck = ckey_make(fk.tenant, 0);
		memcpy(&ck.ref, f->src.a, 4);
		__builtin_prefetch(&t->counts.s[bs_idx_home(ckey_tag(t, &ck),
		    t->counts.m, t->counts.cap)]);
	}
}

int
bind_restore(struct bind_table *t, const struct cats_rec *r, uint64_t now)
{
	int rc = BR_OK;
	if (!t->wheel_at)
		t->wheel_at = now;
	switch (r->type) {
	case CATS_T_BINDING:
		rc = restore_binding(t, &r->u.binding, now);
		break;
	case CATS_T_STATUS: {
		const struct cats_status *s = &r->u.status;
		if (strcmp(s->fwd, t->self->s) != 0) {
			rc = BR_NOT_OWNER;
			break;
		}
		if (s->event == CATS_EV_HELLO) {
			if (CATS_HAS(s, STA, epoch) && s->epoch > t->epoch)
				t->epoch = s->epoch;
		} else if (s->event == CATS_EV_INSTALLED &&
		    CATS_HAS(s, STA, id)) {
			uint32_t i = find_id(t, s->id);
			if (i == 0) {
				rc = BR_UNKNOWN_BINDING;
				break;
			}
			struct bent *e = ent(t, i);
			if (e->state == S_READY) {
				bt_account(t, e, S_READY, S_ACTIVE);
				t->k.state[S_READY]--;
				t->k.state[S_ACTIVE]++;
				e->state = S_ACTIVE;
				e->t0 = s->ts;
				e->t1 = now;
				bt_wheel_link(t, e, i);
			}
		} else {
			rc = BR_BAD;
		}
		break;
	}
	case CATS_T_STATS: {
		const struct cats_stats *s = &r->u.stats;
		for (size_t i = 0; i < s->counters.n; i++) {
			const struct cats_kv *kv = &s->counters.v[i];
			if (strcmp(kv->k, "next_id") == 0)
				bind_set_next_id(t, kv->v);
			else if (strcmp(kv->k, "epoch") == 0 && kv->v > t->epoch)
				t->epoch = kv->v;
		}
		break;
	}
	default:
		rc = BR_BAD;
		break;
	}
	if (rc == BR_OK)
		t->k.restored++;
	else
		t->k.restore_refused++;
	return rc;
}
