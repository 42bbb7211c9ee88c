/*
 * bind_index.c - finding entries and their deadlines (bind_int.h): flow
 * keys, the flow and transaction indexes, the memory of recently closed
 * transactions (late and duplicate replies) and the timing wheel.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind/bind_int.h"

/* ---- flow keys and the two entry indexes ---- */

static uint64_t
flow_hash(const struct bind_table *t, uint32_t i)
{
	struct fkey k;
	fkey_of(t, ent(t, i), &k);
	return fkey_hash(&k);
}

void
bt_txn_index(struct bind_table *t, struct bent *e)
{
	if (e->flags & F_TXNIDX)
		return;
	if (cats_htab_put(&t->txns, cats_hash(&e->txn, 8), e) == 0)
		e->flags |= F_TXNIDX;
}

void
bt_txn_unindex(struct bind_table *t, struct bent *e)
{
	if (!(e->flags & F_TXNIDX))
		return;
	cats_htab_del(&t->txns, cats_hash(&e->txn, 8), txn_eq, &e->txn);
	e->flags &= (uint8_t)~F_TXNIDX;
}

void
bt_flow_unindex(struct bind_table *t, struct bent *e, uint32_t i)
{
	if (!(e->flags & F_FLOWIDX))
		return;
	bs_cidx_del(&t->by_flow, flow_hash(t, i), i);
	e->flags &= (uint8_t)~F_FLOWIDX;
}

/* ---- recently closed transactions (late and duplicate replies) ---- */

static bool
closed_eq(const void *item, const void *key)
{
	return (*(const uint64_t *)item & TXN_MASK) == *(const uint64_t *)key;
}

void
bt_closed_add(struct bind_table *t, uint64_t txn, int how)
{
	if (t->ring == NULL || txn == 0)
		return;
	uint64_t *slot = &t->ring[t->ring_pos];
	if (*slot != 0) {
		uint64_t old = *slot & TXN_MASK;
		cats_htab_del(&t->closed, cats_hash(&old, 8), closed_eq, &old);
	}
	uint64_t *prev = cats_htab_get(&t->closed, cats_hash(&txn, 8),
	    closed_eq, &txn);
	if (prev != NULL) {
		*prev = txn | ((uint64_t)how << CLOSED_SHIFT);
		*slot = 0;
		return;
	}
	*slot = txn | ((uint64_t)how << CLOSED_SHIFT);
	if (cats_htab_put(&t->closed, cats_hash(&txn, 8), slot) < 0)
		*slot = 0;
	t->ring_pos = (t->ring_pos + 1) % t->c.closed_memory;
}

int
bt_closed_how(const struct bind_table *t, uint64_t txn)
{
	if (t->closed.n == 0)
		return 0;
	const uint64_t *v = cats_htab_get(&t->closed, cats_hash(&txn, 8),
	    closed_eq, &txn);
	return v ? (int)(*v >> CLOSED_SHIFT) : 0;
}

/* ---- the timing wheel ---- */

uint64_t
bt_deadline(const struct bind_table *t, const struct bent *e)
{
	if (e->state != S_ACTIVE)
		return e->t1;
	const struct bclass *c = cls(t, e);
	uint64_t d = UINT64_MAX;
	if (c->k.hard_ms)
		d = e->t0 + c->k.hard_ms;
	if (e->flags & F_REPAIR) {
		if (e->t1 < d)
			d = e->t1;
	} else if (c->k.idle_ms) {
		uint64_t g = t->c.idle_grace_ms ? t->c.idle_grace_ms :
		    c->k.idle_ms;
		if (e->t1 + c->k.idle_ms + g < d)
			d = e->t1 + c->k.idle_ms + g;
	}
	return d;
}

void
bt_wheel_unlink(struct bind_table *t, struct bent *e)
{
	if (e->wprev == W_UNLINKED)
		return;
	if (e->wnext)
		ent(t, e->wnext)->wprev = e->wprev;
	if (e->wprev & W_HEAD)
		t->wheel[e->wprev & ~W_HEAD] = e->wnext;
	else
		ent(t, e->wprev)->wnext = e->wnext;
	e->wnext = 0;
	e->wprev = W_UNLINKED;
}

void
bt_wheel_link(struct bind_table *t, struct bent *e, uint32_t i)
{
	bt_wheel_unlink(t, e);
	uint64_t d = bt_deadline(t, e);
	if (d == UINT64_MAX)
		return;
	/* Never behind the wheel: what is already due goes in the next bucket. */
	if (d < t->wheel_at)
		d = t->wheel_at;
	uint32_t b = (uint32_t)((d / W_GRAN) & (W_SIZE - 1));
	e->wnext = t->wheel[b];
	e->wprev = W_HEAD | b;
	if (e->wnext)
		ent(t, e->wnext)->wprev = i;
	t->wheel[b] = i;
}

/* The flow key of a record's flow, without creating anything. */
bool
bt_fkey_from(const struct bind_table *t, const char *ingress,
    const struct cats_flow *f, struct fkey *k)
{
	memset(k, 0, sizeof(*k));
	k->ingress = bt_str_find(t, ingress);
	k->tenant = bt_str_find(t, f->tenant ? f->tenant : "");
	if (k->ingress == NULL || k->tenant == NULL)
		return false;
	k->src = f->src;
	k->dst = f->dst;
	if (k->src.af == 4)
		memset(k->src.a + 4, 0, 12);
	if (k->dst.af == 4)
		memset(k->dst.a + 4, 0, 12);
	k->proto = (uint8_t)f->proto;
	if (CATS_HAS(f, FLOW, sport)) {
		k->sport = (uint16_t)f->sport;
		k->fl |= 1;
	}
	if (CATS_HAS(f, FLOW, dport)) {
		k->dport = (uint16_t)f->dport;
		k->fl |= 2;
	}
	return true;
}
