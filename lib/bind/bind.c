/*
 * bind.c - the binding table (bind.h, bind_int.h): its configuration and
 * reason names, creation and teardown, accessors, counters, memory and
 * the invariants bind_check() walks.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/conf.h"
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

int
bind_conf_limit(struct bind_conf *c, const char *s, char *err, size_t len)
{
	static const struct { const char *name; size_t off; } names[] = {
		{ "pending", offsetof(struct bind_conf, max_pending) },
		{ "bindings", offsetof(struct bind_conf, max_bindings) },
		{ "tenant-pending", offsetof(struct bind_conf, tenant_pending) },
		{ "tenant-bindings", offsetof(struct bind_conf,
		    tenant_bindings) },
		{ "client-pending", offsetof(struct bind_conf, client_pending) },
		{ "client-bindings", offsetof(struct bind_conf,
		    client_bindings) },
	};
	const char *eq = strchr(s, '=');
	uint64_t v;
	for (size_t i = 0; eq && i < CATS_ARRAY_LEN(names); i++) {
		if (strlen(names[i].name) != (size_t)(eq - s) ||
		    strncmp(names[i].name, s, (size_t)(eq - s)) != 0)
			continue;
		if (cats_parse_u64(eq + 1, 0, CATS_U32, &v, err, len) < 0)
			return -1;
		*(uint32_t *)((char *)c + names[i].off) = (uint32_t)v;
		return 0;
	}
	snprintf(err, len, "expected NAME=N, NAME one of pending, bindings, "
	    "tenant-pending, tenant-bindings, client-pending, client-bindings");
	return -1;
}

int
bind_conf_dataplanes(const char *s, unsigned *mask, char *err, size_t len)
{
	*mask = 0;
	for (const char *w = s; *w != '\0';) {
		size_t n = strcspn(w, ",");
		if (n > 0) {
			int i = cats_enum_index(cats_dataplane_names, w, n);
			if (i < 0) {
				snprintf(err, len, "unknown data plane \"%.*s\" "
				    "(ip, ipip, srv6, srmpls)", (int)n, w);
				return -1;
			}
			*mask |= 1u << i;
		}
		w += n;
		if (*w == ',')
			w++;
	}
	return 0;
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

void
bind_set_journal_pending(struct bind_table *t, bool on)
{
	t->journal_pending = on;
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
	bt_make_binding(t, e, op, e->epoch, now, BR_OK, r);
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
		bt_make_binding(t, e, CATS_BIND_INSTALL, e->epoch,
		    e->state == S_ACTIVE ? e->t0 : now, BR_OK, &r);
		fn(arg, &r);
		n++;
	}
	return n;
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
		"instance.failures", "epoch", "memory", "caps.updates",
		"fallback.reported", "fallback.adopted", "fallback.ended",
		"fallback.status", "net.downs", "net.repairs", "status.late",
		"caps.reasks", "pending.reasked",
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
		t->epoch, bind_mem(t), k->caps_updates, k->fallback_reported,
		k->fallback_adopted, k->fallback_ended, k->fallback_status,
		k->net_downs, k->net_repairs, k->late_status, k->caps_reasks,
		k->pending_reasked,
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
		if (bt_category(e->state) == 1)
			npend++;
		else if (bt_category(e->state) == 2)
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
