/*
 * ha.c - binding state in etcd under an owner's fence (ha.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "base/htab.h"
#include "base/log.h"
#include "ha/ha.h"

/* etcd's --max-txn-ops is 128 by default: room for the next id. */
#define TXN_OPS 120
#define RANGE_PAGE 1000
/*
 * Tombstones live TOMB_MS before they are deleted; a standby whose last
 * sync is older than WARM_MS reads everything again, so it never misses
 * one (both are durations, each on its own clock).
 */
#define TOMB_MS 30000
#define WARM_MS 10000

struct op {
	uint64_t id;
	uint32_t seq;
	uint8_t kind;
	size_t off, len;	/* a tombstone's value in h->vals */
};

/* A binding as etcd holds it, in the standby's warm copy. */
struct warm {
	uint64_t id, gen;
	size_t len;
	uint8_t v[];
};

/* A tombstone written (or restored), deleted after TOMB_MS. */
struct tomb {
	uint64_t id, at;
};

struct ha {
	struct ha_conf c;
	char *prefix, *name;
	struct etcd *e;
	struct ha_own own;
	char owner[256];	/* who owns, as last seen */
	uint64_t owner_epoch;
	struct op *ops;
	size_t nops, capops;
	struct cats_buf vals;
	uint64_t next_written;
	struct bind_table *t;	/* the live table, once restored */
	struct etcd_resp r;
	struct ha_stats st;
	/* the standby's warm copy: bindings by id, at revision rev */
	struct cats_htab warm;
	uint64_t gen, synced_at;
	int64_t rev;
	char nextv[24];
	/* tombstones to delete, oldest first */
	struct tomb *tombs;
	size_t ntombs, captombs, tomb0;
	/* the txns of a commit begun (ha_commit_begin) and not ended */
	json_t **fly_q;
	size_t fly_k, fly_n;
	uint64_t fly_next;
	char fly_err[512];
};

static void
key_of(const struct ha *h, const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", h->prefix, suffix);
}

struct ha *
ha_new(const struct ha_conf *c, char *err, size_t errlen)
{
	struct ha *h = calloc(1, sizeof(*h));
	if (h == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	h->c = *c;
	if (h->c.lease_ms == 0)
		h->c.lease_ms = 2000;
	ha_own_init(&h->own, h->c.lease_ms);
	if (h->c.timeout_ms == 0)
		h->c.timeout_ms = h->own.ttl_ms / 4;
	h->prefix = strdup(c->prefix ? c->prefix : "/cats/cps/");
	h->name = strdup(c->name);
	if (h->prefix == NULL || h->name == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (strlen(h->prefix) > 200 || strlen(h->name) > 200) {
		snprintf(err, errlen, "the prefix and the name are at most 200 "
		    "bytes");
		goto fail;
	}
	h->e = etcd_new(c->urls, h->c.timeout_ms, NULL, err, errlen);
	if (h->e == NULL)
		goto fail;
	etcd_resp_init(&h->r);
	return h;
fail:
	ha_free(h);
	return NULL;
}

static void fly_free(struct ha *h);

static void
warm_clear(struct ha *h)
{
	for (size_t i = 0; i < h->warm.cap; i++)
		if (h->warm.s[i].h)
			free(h->warm.s[i].item);
	cats_htab_free(&h->warm);
	memset(&h->warm, 0, sizeof(h->warm));
}

void
ha_free(struct ha *h)
{
	if (h == NULL)
		return;
	if (h->e != NULL && h->own.state == HA_OWNER) {
		char err[256];
		json_t *q = json_pack("{s:o}", "ID", etcd_j_int(h->own.lease));
		if (etcd_call(h->e, ETCD_REVOKE, q, &h->r, err,
		    sizeof(err)) == 0)
			h->own.state = HA_LOST;
		json_decref(q);
	}
	fly_free(h);
	etcd_free(h->e);
	etcd_resp_free(&h->r);
	warm_clear(h);
	free(h->tombs);
	free(h->ops);
	cats_buf_free(&h->vals);
	free(h->prefix);
	free(h->name);
	free(h);
}

const char *
ha_owner(const struct ha *h)
{
	return h->owner;
}

uint64_t
ha_epoch(const struct ha *h)
{
	return h->own.epoch;
}

struct ha_own *
ha_own(struct ha *h)
{
	return &h->own;
}

const struct ha_stats *
ha_stats(const struct ha *h)
{
	return &h->st;
}

const struct etcd_stats *
ha_etcd_stats(const struct ha *h)
{
	return etcd_stats(h->e);
}

/* A call whose error answer is a failure too. */
static int
call(struct ha *h, int kind, json_t *q, char *err, size_t errlen)
{
	int rc = etcd_call(h->e, kind, q, &h->r, err, errlen);
	json_decref(q);
	if (rc == 0 && h->r.error) {
		snprintf(err, errlen, "etcd %s: %s (code %d)",
		    etcd_kind_names[kind], h->r.message, h->r.code);
		return -1;
	}
	return rc;
}

/* The owner as an answer's kvs show it (none: ""). */
static void
see_owner(struct ha *h)
{
	h->owner[0] = '\0';
	h->owner_epoch = 0;
	if (h->r.nkvs == 0)
		return;
	const struct etcd_kv *kv = &h->r.kvs[0];
	size_t n = kv->vlen < sizeof(h->owner) - 1 ? kv->vlen :
	    sizeof(h->owner) - 1;
	for (size_t i = 0; i < n; i++)
		h->owner[i] = kv->value[i] >= 0x20 && kv->value[i] < 0x7f ?
		    (char)kv->value[i] : '?';
	h->owner[n] = '\0';
	h->owner_epoch = (uint64_t)kv->create_rev;
}

int
ha_campaign(struct ha *h, char *err, size_t errlen)
{
	char key[512];
	key_of(h, "owner", key, sizeof(key));
	size_t kl = strlen(key);
	if (h->own.state != HA_STANDBY) {
		snprintf(err, errlen, "not a standby (%s)",
		    ha_state_names[h->own.state]);
		return -1;
	}
	h->st.campaigns++;
	/* Is there an owner?  A standby holds no lease while it waits. */
	if (call(h, ETCD_RANGE, etcd_op_range(key, kl, NULL, 0, 0, 0), err,
	    errlen) < 0)
		return -1;
	see_owner(h);
	if (h->r.nkvs > 0)
		return 0;
	uint64_t sent = h->c.clock();
	if (call(h, ETCD_GRANT, json_pack("{s:o}", "TTL",
	    etcd_j_int((int64_t)(h->own.ttl_ms / 1000))), err, errlen) < 0)
		return -1;
	int64_t lease = h->r.id, ttl = h->r.ttl;
	json_t *rng = etcd_op_range(key, kl, NULL, 0, 0, 0);
	json_t *q = json_pack("{s:[o],s:[o,{s:O}],s:[{s:O}]}",
	    "compare", etcd_cmp_create(key, kl, 0),
	    "success", etcd_op_put(key, kl, h->name, strlen(h->name), lease),
	    "requestRange", rng, "failure", "requestRange", rng);
	json_decref(rng);
	if (call(h, ETCD_TXN, q, err, errlen) < 0)
		return -1;
	see_owner(h);
	if (!h->r.succeeded || h->r.nkvs == 0 || h->r.kvs[0].lease != lease ||
	    strcmp(h->owner, h->name) != 0) {
		/* Lost the race: our lease goes at once. */
		char e2[256];
		call(h, ETCD_REVOKE, json_pack("{s:o}", "ID",
		    etcd_j_int(lease)), e2, sizeof(e2));
		return 0;
	}
	if (h->owner_epoch > CATS_U53) {
		snprintf(err, errlen, "the owner key's create_revision %" PRIu64
		    " is past 2^53: an epoch records cannot carry",
		    h->owner_epoch);
		return -1;
	}
	uint64_t now = h->c.clock();
	ha_own_won(&h->own, lease, ttl, h->owner_epoch, sent, now);
	if (h->own.state != HA_OWNER) {
		snprintf(err, errlen, "won, but %s (the campaign took %" PRIu64
		    " ms)", h->own.why, now - sent);
		return -1;
	}
	h->st.takeovers++;
	return 1;
}

static bool
warm_eq(const void *item, const void *key)
{
	return ((const struct warm *)item)->id == *(const uint64_t *)key;
}

static uint64_t
id_hash(uint64_t id)
{
	return cats_hash(&id, sizeof(id));
}

/* The binding id of key k (P b/ID, ID 16 hex digits), 0 if none. */
static uint64_t
id_of_key(const struct ha *h, const uint8_t *k, size_t n)
{
	size_t pl = strlen(h->prefix);
	if (n != pl + 2 + 16 || memcmp(k, h->prefix, pl) != 0 ||
	    memcmp(k + pl, "b/", 2) != 0)
		return 0;
	uint64_t id = 0;
	for (size_t i = pl + 2; i < n; i++) {
		int c = k[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ?
		    c - 'a' + 10 : -1;
		if (d < 0)
			return 0;
		id = id << 4 | (uint64_t)d;
	}
	return id;
}

static void
tomb_add(struct ha *h, uint64_t id, uint64_t at)
{
	if (h->ntombs == h->captombs) {
		/* Drop what was deleted before growing. */
		if (h->tomb0 > 0) {
			memmove(h->tombs, h->tombs + h->tomb0, (h->ntombs -
			    h->tomb0) * sizeof(*h->tombs));
			h->ntombs -= h->tomb0;
			h->tomb0 = 0;
		}
		if (h->ntombs == h->captombs) {
			size_t cap = h->captombs ? h->captombs * 2 : 256;
			struct tomb *v = realloc(h->tombs, cap * sizeof(*v));
			if (v == NULL)
				return;	/* it stays in etcd: harmless */
			h->tombs = v;
			h->captombs = cap;
		}
	}
	h->tombs[h->ntombs].id = id;
	h->tombs[h->ntombs].at = at;
	h->ntombs++;
}

/* Binding id's value v[0..n) into the warm copy (replacing it): 0 or -1. */
static int
warm_put(struct ha *h, uint64_t id, const uint8_t *v, size_t n)
{
	struct warm *w = cats_htab_del(&h->warm, id_hash(id), warm_eq, &id);
	free(w);
	if ((w = malloc(sizeof(*w) + n)) == NULL)
		return -1;
	w->id = id;
	w->gen = h->gen;
	w->len = n;
	memcpy(w->v, v, n);
	if (cats_htab_put(&h->warm, id_hash(id), w) < 0) {
		free(w);
		return -1;
	}
	return 0;
}

static void
next_set(struct ha *h, const uint8_t *v, size_t vlen)
{
	size_t n = vlen < sizeof(h->nextv) - 1 ? vlen : sizeof(h->nextv) - 1;
	memcpy(h->nextv, v, n);
	h->nextv[n] = '\0';
}

/*
 * Bring the warm copy up to etcd: everything (full, or when the last sync
 * is older than WARM_MS), else the keys changed since the last revision;
 * all pages at the first page's revision.  A tombstone (a remove record)
 * drops its binding.  0, or -1 with err.
 */
static int
warm_sync(struct ha *h, uint64_t now, char *err, size_t errlen)
{
	char key[512], next[512];
	uint8_t end[512];
	bool full = h->rev == 0 || now - h->synced_at > WARM_MS;
	key_of(h, "b/", key, sizeof(key));
	size_t kl = strlen(key);
	size_t el = etcd_prefix_end(key, kl, end);
	int64_t rev = 0;
	memcpy(next, key, kl + 1);
	size_t nl = kl;
	h->gen++;
	for (;;) {
		json_t *q = etcd_op_range(next, nl, end, el, RANGE_PAGE, rev);
		if (!full)
			json_object_set_new(q, "min_mod_revision",
			    etcd_j_int(h->rev + 1));
		if (call(h, ETCD_RANGE, q, err, errlen) < 0)
			return -1;
		if (rev == 0)
			rev = h->r.revision;
		for (size_t i = 0; i < h->r.nkvs; i++) {
			const struct etcd_kv *kv = &h->r.kvs[i];
			uint64_t id = id_of_key(h, kv->key, kv->klen);
			if (id == 0 || kv->vlen == 0) {
				h->st.restore_refused++;
				continue;
			}
			if (warm_put(h, id, kv->value, kv->vlen) < 0) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
		}
		if (!h->r.more || h->r.nkvs == 0)
			break;
		const struct etcd_kv *last = &h->r.kvs[h->r.nkvs - 1];
		if (last->klen + 1 >= sizeof(next)) {
			snprintf(err, errlen, "a key longer than %zu bytes",
			    sizeof(next) - 2);
			return -1;
		}
		/* The next page starts just after the last key. */
		memcpy(next, last->key, last->klen);
		next[last->klen] = '\0';
		nl = last->klen + 1;
	}
	if (full) {
		/* What a full read did not see is gone. */
		for (size_t i = 0; i < h->warm.cap;) {
			struct warm *w = h->warm.s[i].item;
			if (h->warm.s[i].h && w->gen != h->gen) {
				cats_htab_del(&h->warm, h->warm.s[i].h, warm_eq,
				    &w->id);
				free(w);
				continue;	/* the slot was refilled */
			}
			i++;
		}
	}
	key_of(h, "next", key, sizeof(key));
	if (call(h, ETCD_RANGE, etcd_op_range(key, strlen(key), NULL, 0, 0,
	    rev), err, errlen) < 0)
		return -1;
	h->nextv[0] = '\0';
	if (h->r.nkvs > 0)
		next_set(h, h->r.kvs[0].value, h->r.kvs[0].vlen);
	h->rev = rev;
	h->synced_at = now;
	h->st.syncs++;
	return 0;
}

/* A watch's state: the prefix's keys, what ended it. */
struct wctx {
	struct ha *h;
	char okey[512], nkey[512];
	size_t ol, nl;
	bool owner_gone, restart;
	int rc;
	char *err;
	size_t errlen;
};

/* One message of the standby's watch into the warm copy. */
static int
on_watch(void *arg, const struct etcd_resp *r)
{
	struct wctx *w = arg;
	struct ha *h = w->h;
	if (r->error) {
		snprintf(w->err, w->errlen, "etcd watch: %s (code %d)",
		    r->message, r->code);
		w->rc = -1;
		return 1;
	}
	if (r->canceled || r->compact_rev != 0) {
		/* Compacted past our revision: everything again. */
		w->restart = true;
		return 1;
	}
	for (size_t i = 0; i < r->nkvs; i++) {
		const struct etcd_kv *kv = &r->kvs[i];
		h->st.watch_events++;
		if (kv->klen == w->ol && memcmp(kv->key, w->okey, w->ol) == 0) {
			if (kv->deleted) {
				h->owner[0] = '\0';
				w->owner_gone = true;
			}
			continue;
		}
		if (kv->klen == w->nl && memcmp(kv->key, w->nkey, w->nl) == 0) {
			if (!kv->deleted)
				next_set(h, kv->value, kv->vlen);
			continue;
		}
		uint64_t id = id_of_key(h, kv->key, kv->klen);
		if (id == 0)
			continue;	/* not ours (b/ID/... or another) */
		if (kv->deleted) {
			free(cats_htab_del(&h->warm, id_hash(id), warm_eq,
			    &id));
		} else if (kv->vlen == 0) {
			h->st.restore_refused++;
		} else if (warm_put(h, id, kv->value, kv->vlen) < 0) {
			snprintf(w->err, w->errlen, "out of memory");
			w->rc = -1;
			return 1;
		}
	}
	if (r->revision > h->rev)
		h->rev = r->revision;
	h->synced_at = h->c.clock();
	return w->owner_gone;
}

int
ha_standby_watch(struct ha *h, uint64_t ms, char *err, size_t errlen)
{
	if (h->own.state != HA_STANDBY)
		return 0;
	uint64_t now = h->c.clock();
	if ((h->rev == 0 || now - h->synced_at > WARM_MS) &&
	    warm_sync(h, now, err, errlen) < 0)
		return -1;
	struct wctx w = { .h = h, .err = err, .errlen = errlen };
	uint8_t end[512];
	key_of(h, "owner", w.okey, sizeof(w.okey));
	key_of(h, "next", w.nkey, sizeof(w.nkey));
	w.ol = strlen(w.okey);
	w.nl = strlen(w.nkey);
	size_t pl = strlen(h->prefix);
	size_t el = etcd_prefix_end(h->prefix, pl, end);
	/* Every change after the warm copy's revision, the prefix whole:
	 * the owner key, the next id, the bindings. */
	json_t *q = json_pack("{s:{s:o,s:o,s:o}}", "create_request", "key",
	    etcd_j_bytes(h->prefix, pl), "range_end", etcd_j_bytes(end, el),
	    "start_revision", etcd_j_int(h->rev + 1));
	h->st.watches++;
	int rc = etcd_watch(h->e, q, ms, on_watch, &w, &h->r, err, errlen);
	json_decref(q);
	if (rc < 0 || w.rc < 0)
		return -1;
	if (w.restart)
		h->rev = 0;
	return w.owner_gone ? 1 : 0;
}

static int
cmp_warm(const void *a, const void *b)
{
	uint64_t x = (*(struct warm *const *)a)->id;
	uint64_t y = (*(struct warm *const *)b)->id;
	return x < y ? -1 : x > y;
}

static bool
keep_all(const void *item, void *arg)
{
	(void)item;
	(void)arg;
	return true;
}

int
ha_restore(struct ha *h, struct bind_table *t, uint64_t now, char *err,
    size_t errlen)
{
	/* The last changes (or everything, for a cold standby). */
	if (warm_sync(h, now, err, errlen) < 0)
		return -1;
	size_t n;
	void **v = cats_htab_select(&h->warm, keep_all, NULL, &n);
	if (v == NULL && n > 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* In id order, as the journal would replay them. */
	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_warm);
	struct cats_dec d;
	cats_dec_init(&d, NULL);
	bind_reserve(t, n);
	for (size_t i = 0; i < n; i++) {
		const struct warm *w = v[i];
		struct cats_rec rec;
		struct cats_err e;
		int ok = cats_rec_decode(&d, w->v, w->len, &rec, &e);
		if (ok == 0 && rec.type == CATS_T_BINDING &&
		    rec.u.binding.op == CATS_BIND_REMOVE) {
			/* A tombstone: deleted in its time by this owner. */
			tomb_add(h, w->id, now);
			continue;
		}
		if (ok < 0 || rec.type != CATS_T_BINDING ||
		    bind_restore(t, &rec, now) != BR_OK)
			h->st.restore_refused++;
		else
			h->st.restored++;
	}
	cats_dec_free(&d);
	free(v);
	warm_clear(h);
	uint64_t id = strtoull(h->nextv, NULL, 10);
	if (id > 0 && id <= CATS_U53)
		bind_set_next_id(t, id);
	h->next_written = bind_next_id(t);
	bind_set_epoch(t, h->own.epoch);
	h->t = t;
	return 0;
}

int
ha_op_of(const struct cats_rec *r, const char *self, uint64_t *id)
{
	*id = 0;
	if (r->type == CATS_T_BINDING) {
		*id = r->u.binding.id;
		return r->u.binding.op == CATS_BIND_REMOVE ? HA_OP_DELETE :
		    HA_OP_PUT;
	}
	if (r->type == CATS_T_STATUS && r->u.status.event ==
	    CATS_EV_INSTALLED && CATS_HAS(&r->u.status, STA, id) &&
	    self != NULL && strcmp(r->u.status.fwd, self) == 0) {
		*id = r->u.status.id;
		return HA_OP_PUT_COMMIT;
	}
	return HA_OP_NONE;
}

int
ha_append(struct ha *h, const struct cats_rec *r)
{
	uint64_t id;
	const char *self = r->type == CATS_T_STATUS ? r->u.status.fwd : NULL;
	int kind = ha_op_of(r, self, &id);
	if (kind == HA_OP_NONE) {
		h->st.ignored++;
		return 0;
	}
	if (h->nops == h->capops) {
		size_t cap = h->capops ? h->capops * 2 : 256;
		struct op *v = realloc(h->ops, cap * sizeof(*v));
		if (v == NULL)
			return -1;
		h->ops = v;
		h->capops = cap;
	}
	struct op *o = &h->ops[h->nops];
	o->id = id;
	o->seq = (uint32_t)h->nops;
	o->kind = (uint8_t)kind;
	o->off = h->vals.len;
	/* A removed binding's tombstone is its remove record; the others'
	 * values are read from the table at the commit. */
	if (kind == HA_OP_DELETE && cats_rec_encode(r, &h->vals, false) < 0)
		return -1;
	o->len = h->vals.len - o->off;
	h->nops++;
	return 0;
}

static int
cmp_op(const void *a, const void *b)
{
	const struct op *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Coalesce the queue in place: one operation per binding id, its
 * tombstone if it was removed (a removed id is never used again), else a
 * put of what the table holds now.  Returns the operations kept.
 */
static size_t
coalesce(struct ha *h)
{
	qsort(h->ops, h->nops, sizeof(*h->ops), cmp_op);
	size_t out = 0;
	for (size_t i = 0; i < h->nops;) {
		size_t j = i;
		struct op keep = h->ops[i];
		for (; j < h->nops && h->ops[j].id == h->ops[i].id; j++)
			if (h->ops[j].kind == HA_OP_DELETE ||
			    keep.kind != HA_OP_DELETE)
				keep = h->ops[j];
		h->st.coalesced += (j - i) - 1;
		h->ops[out++] = keep;
		i = j;
	}
	return out;
}

/* The txn of ops[0..n) (and the next id, when given), under the fence. */
static json_t *
build_txn(struct ha *h, const struct op *ops, size_t n, uint64_t next_id,
    uint64_t now)
{
	char key[512], okey[512], v[24];
	struct cats_buf val = { 0 };
	key_of(h, "owner", okey, sizeof(okey));
	json_t *succ = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct op *o = &ops[i];
		struct bind_info bi;
		struct cats_rec rec;
		snprintf(key, sizeof(key), "%sb/%016" PRIx64, h->prefix, o->id);
		size_t kl = strlen(key);
		if (o->kind == HA_OP_DELETE) {
			json_array_append_new(succ, etcd_op_put(key, kl,
			    h->vals.p + o->off, o->len, 0));
			tomb_add(h, o->id, now);
			h->st.deletes++;
			continue;
		}
		/* The binding as it is now; an active one's time is the
		 * start of its lifetime (as in a journal snapshot). */
		if (h->t == NULL || bind_get(h->t, o->id, &bi) < 0 ||
		    bind_record(h->t, o->id, CATS_BIND_INSTALL,
		    bi.state == CATS_FS_ACTIVE ? bi.t_start : now, &rec) < 0)
			continue;
		val.len = 0;
		if (cats_rec_encode(&rec, &val, false) < 0)
			continue;
		json_array_append_new(succ, etcd_op_put(key, kl, val.p, val.len,
		    0));
		h->st.puts++;
	}
	cats_buf_free(&val);
	if (next_id != 0) {
		key_of(h, "next", key, sizeof(key));
		snprintf(v, sizeof(v), "%" PRIu64, next_id);
		json_array_append_new(succ, etcd_op_put(key, strlen(key), v,
		    strlen(v), 0));
	}
	return json_pack("{s:[o],s:o}", "compare",
	    etcd_cmp_create(okey, strlen(okey), (int64_t)h->own.epoch),
	    "success", succ);
}

/*
 * The txns of ops[0..n) (the first carries the next id), built on the
 * loop from the table as it is now: h->fly_q.  0, or -1 out of memory.
 */
static int
build_txns(struct ha *h, size_t n, uint64_t next_id, uint64_t now)
{
	size_t k = n == 0 ? 1 : (n + TXN_OPS - 1) / TXN_OPS;
	h->fly_q = calloc(k, sizeof(*h->fly_q));
	if (h->fly_q == NULL)
		return -1;
	h->fly_k = k;
	h->fly_n = n;
	h->fly_next = next_id;
	for (size_t i = 0; i < k; i++) {
		size_t m = n - i * TXN_OPS < TXN_OPS ? n - i * TXN_OPS : TXN_OPS;
		h->fly_q[i] = build_txn(h, h->ops + i * TXN_OPS, m, i == 0 &&
		    next_id != h->next_written ? next_id : 0, now);
		if (h->fly_q[i] == NULL)
			return -1;
	}
	return 0;
}

static void
fly_free(struct ha *h)
{
	for (size_t i = 0; h->fly_q != NULL && i < h->fly_k; i++)
		json_decref(h->fly_q[i]);
	free(h->fly_q);
	h->fly_q = NULL;
	h->fly_k = h->fly_n = 0;
}

/*
 * The txns built at once (they name distinct keys, so their order does
 * not matter).  0, or -1 with err: one got no answer, an error answer,
 * or failed its compare (fenced).
 */
static int
write_txns(struct ha *h, char *err, size_t errlen)
{
	size_t k = h->fly_k;
	struct etcd_resp *rs = calloc(k, sizeof(*rs));
	int rc = -1;
	if (rs == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	uint64_t before = etcd_stats(h->e)->bytes_out;
	int crc = etcd_call_many(h->e, ETCD_TXN, h->fly_q, k, rs, err,
	    errlen);
	h->st.txn_bytes += etcd_stats(h->e)->bytes_out - before;
	h->st.txns += k;
	if (crc < 0) {
		h->st.write_failures++;
		goto out;
	}
	for (size_t i = 0; i < k; i++) {
		if (rs[i].error) {
			h->st.write_failures++;
			snprintf(err, errlen, "etcd txn: %s (code %d)",
			    rs[i].message, rs[i].code);
			goto out;
		}
		if (!rs[i].succeeded) {
			h->st.fenced++;
			ha_own_fenced(&h->own);
			snprintf(err, errlen, "%s (epoch %" PRIu64 ")",
			    h->own.why, h->own.epoch);
			goto out;
		}
	}
	h->next_written = h->fly_next;
	h->st.ops += h->fly_n;
	rc = 0;
out:
	for (size_t i = 0; i < k; i++)
		etcd_resp_free(&rs[i]);
	free(rs);
	return rc;
}

/* Renew the lease if due (past the deadline nothing is renewed). */
static void
renew(struct ha *h)
{
	uint64_t now = h->c.clock();
	if (!ha_own_may_act(&h->own, now) ||
	    !ha_own_keepalive_due(&h->own, now))
		return;
	char e2[256];
	if (call(h, ETCD_KEEPALIVE, json_pack("{s:o}", "ID",
	    etcd_j_int(h->own.lease)), e2, sizeof(e2)) < 0) {
		ha_own_renew_failed(&h->own, h->c.clock());
		cats_warnx("etcd keepalive: %s", e2);
	} else {
		ha_own_renewed(&h->own, h->r.ttl, now, h->c.clock());
	}
}

int
ha_commit_begin(struct ha *h, uint64_t next_id, char *err, size_t errlen)
{
	uint64_t now = h->c.clock();
	fly_free(h);
	h->fly_err[0] = '\0';
	if (!ha_own_may_act(&h->own, now)) {
		snprintf(err, errlen, "not the owner: %s", h->own.why ?
		    h->own.why : ha_state_names[h->own.state]);
		return -1;
	}
	if (h->nops == 0 && next_id == h->next_written)
		return 0;
	size_t n = coalesce(h);
	int rc = build_txns(h, n, next_id, now);
	h->nops = 0;
	h->vals.len = 0;
	if (rc < 0) {
		fly_free(h);
		snprintf(err, errlen, "cannot encode the txn");
		return -1;
	}
	return 1;
}

int
ha_commit_work(struct ha *h)
{
	if (h->fly_k == 0)
		return 0;
	char *err = h->fly_err;
	size_t errlen = sizeof(h->fly_err);
	int rc;
	/*
	 * etcd between leaders (an election, a member gone) answers late or
	 * not at all: the same txns again (they are idempotent puts under
	 * the fence) until the renew deadline, the lease renewed meanwhile.
	 */
	for (;;) {
		rc = write_txns(h, err, errlen);
		if (rc == 0 || h->own.state != HA_OWNER ||
		    !ha_own_may_act(&h->own, h->c.clock()))
			break;
		h->st.write_retries++;
		renew(h);
		struct timespec ts = { 0, 20 * 1000000L };
		nanosleep(&ts, NULL);
	}
	/* A write that outlived the deadline covers nothing. */
	if (rc == 0 && !ha_own_may_act(&h->own, h->c.clock())) {
		snprintf(err, errlen, "not the owner: %s", h->own.why);
		rc = -1;
	}
	/* A long stream of commits keeps the lease: renewed here when due
	 * (the loop's tick may find a commit in flight each time). */
	if (rc == 0)
		renew(h);
	return rc;
}

int
ha_commit_end(struct ha *h, int rc, char *err, size_t errlen)
{
	fly_free(h);
	if (rc < 0)
		snprintf(err, errlen, "%s", h->fly_err[0] ? h->fly_err :
		    "the commit failed");
	return rc < 0 ? -1 : 0;
}

int
ha_commit(struct ha *h, uint64_t next_id, char *err, size_t errlen)
{
	int b = ha_commit_begin(h, next_id, err, errlen);
	if (b <= 0)
		return b;
	return ha_commit_end(h, ha_commit_work(h), err, errlen);
}

/*
 * Delete the tombstones older than TOMB_MS, up to a txn's worth, under
 * the fence (a failed compare ends the ownership like any write).
 */
static int
tomb_gc(struct ha *h, char *err, size_t errlen)
{
	uint64_t now = h->c.clock();
	char key[512], okey[512];
	size_t n = 0;
	if (h->tomb0 == h->ntombs || now - h->tombs[h->tomb0].at < TOMB_MS)
		return 0;
	json_t *succ = json_array();
	while (h->tomb0 + n < h->ntombs && n < TXN_OPS &&
	    now - h->tombs[h->tomb0 + n].at >= TOMB_MS) {
		snprintf(key, sizeof(key), "%sb/%016" PRIx64, h->prefix,
		    h->tombs[h->tomb0 + n].id);
		json_array_append_new(succ, etcd_op_delete(key, strlen(key),
		    NULL, 0));
		n++;
	}
	key_of(h, "owner", okey, sizeof(okey));
	json_t *q = json_pack("{s:[o],s:o}", "compare",
	    etcd_cmp_create(okey, strlen(okey), (int64_t)h->own.epoch),
	    "success", succ);
	char e2[256];
	if (call(h, ETCD_TXN, q, e2, sizeof(e2)) < 0) {
		/* Tried again at the next tick. */
		h->st.write_failures++;
		return 0;
	}
	if (!h->r.succeeded) {
		h->st.fenced++;
		ha_own_fenced(&h->own);
		snprintf(err, errlen, "%s (epoch %" PRIu64 ")", h->own.why,
		    h->own.epoch);
		return -1;
	}
	h->tomb0 += n;
	h->st.tombs_deleted += n;
	return 0;
}

int
ha_tick(struct ha *h, char *err, size_t errlen)
{
	renew(h);
	if (!ha_own_may_act(&h->own, h->c.clock())) {
		snprintf(err, errlen, "%s (epoch %" PRIu64 ")", h->own.why ?
		    h->own.why : ha_state_names[h->own.state], h->own.epoch);
		return -1;
	}
	return tomb_gc(h, err, errlen);
}
