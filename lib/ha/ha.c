/*
 * ha.c - binding state in etcd under an owner's fence (ha.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/log.h"
#include "ha/ha.h"

/* etcd's --max-txn-ops is 128 by default: room for the next id. */
#define TXN_OPS 120
#define RANGE_PAGE 1000

struct op {
	uint64_t id;
	uint32_t seq;
	uint8_t kind;
	size_t off, len;	/* the value in h->vals */
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
	struct etcd_resp r;
	struct ha_stats st;
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
	etcd_free(h->e);
	etcd_resp_free(&h->r);
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

int
ha_restore(struct ha *h, struct bind_table *t, uint64_t now, char *err,
    size_t errlen)
{
	char key[512], next[512];
	uint8_t end[512];
	key_of(h, "b/", key, sizeof(key));
	size_t kl = strlen(key);
	size_t el = etcd_prefix_end(key, kl, end);
	struct cats_dec d;
	cats_dec_init(&d, NULL);
	int64_t rev = 0;
	int rc = -1;
	memcpy(next, key, kl + 1);
	size_t nl = kl;
	for (;;) {
		if (call(h, ETCD_RANGE, etcd_op_range(next, nl, end, el,
		    RANGE_PAGE, rev), err, errlen) < 0)
			goto out;
		/* Every page at the first page's revision: one snapshot. */
		if (rev == 0)
			rev = h->r.revision;
		for (size_t i = 0; i < h->r.nkvs; i++) {
			const struct etcd_kv *kv = &h->r.kvs[i];
			struct cats_rec rec;
			struct cats_err e;
			int ok = cats_rec_decode(&d, kv->value, kv->vlen, &rec,
			    &e);
			/* A commit is the manager's, whichever instance. */
			if (ok == 0 && rec.type == CATS_T_STATUS)
				rec.u.status.fwd = bind_self(t);
			if (ok < 0 || bind_restore(t, &rec, now) != BR_OK)
				h->st.restore_refused++;
			else
				h->st.restored++;
		}
		if (!h->r.more || h->r.nkvs == 0)
			break;
		const struct etcd_kv *last = &h->r.kvs[h->r.nkvs - 1];
		if (last->klen + 1 >= sizeof(next)) {
			snprintf(err, errlen, "a key longer than %zu bytes",
			    sizeof(next) - 2);
			goto out;
		}
		/* The next page starts just after the last key. */
		memcpy(next, last->key, last->klen);
		next[last->klen] = '\0';
		nl = last->klen + 1;
	}
	key_of(h, "next", key, sizeof(key));
	if (call(h, ETCD_RANGE, etcd_op_range(key, strlen(key), NULL, 0, 0,
	    rev), err, errlen) < 0)
		goto out;
	if (h->r.nkvs > 0) {
		char v[24];
		size_t n = h->r.kvs[0].vlen < sizeof(v) - 1 ? h->r.kvs[0].vlen :
		    sizeof(v) - 1;
		memcpy(v, h->r.kvs[0].value, n);
		v[n] = '\0';
		uint64_t id = strtoull(v, NULL, 10);
		if (id > 0 && id <= CATS_U53)
			bind_set_next_id(t, id);
	}
	h->next_written = bind_next_id(t);
	bind_set_epoch(t, h->own.epoch);
	rc = 0;
out:
	cats_dec_free(&d);
	return rc;
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
	if (kind != HA_OP_DELETE && cats_rec_encode(r, &h->vals, false) < 0)
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
 * Coalesce the queue in place: per binding id, the delete alone if there
 * is one (a removed id is never used again), else the last put of each
 * key.  Returns the operations kept.
 */
static size_t
coalesce(struct ha *h)
{
	qsort(h->ops, h->nops, sizeof(*h->ops), cmp_op);
	size_t out = 0;
	for (size_t i = 0; i < h->nops;) {
		size_t j = i;
		struct op *put = NULL, *commit = NULL, *del = NULL;
		for (; j < h->nops && h->ops[j].id == h->ops[i].id; j++) {
			struct op *o = &h->ops[j];
			if (o->kind == HA_OP_DELETE)
				del = o;
			else if (o->kind == HA_OP_PUT)
				put = o;
			else
				commit = o;
		}
		struct op keep[2];
		size_t nk = 0;
		if (del != NULL) {
			keep[nk++] = *del;
		} else {
			if (put != NULL)
				keep[nk++] = *put;
			if (commit != NULL)
				keep[nk++] = *commit;
		}
		h->st.coalesced += (j - i) - nk;
		for (size_t k = 0; k < nk; k++)
			h->ops[out++] = keep[k];
		i = j;
	}
	return out;
}

/* One txn of ops[0..n) (and the next id), under the fence. */
static int
write_txn(struct ha *h, const struct op *ops, size_t n, uint64_t next_id,
    char *err, size_t errlen)
{
	char key[512], okey[512], v[24];
	uint8_t end[512];
	key_of(h, "owner", okey, sizeof(okey));
	json_t *succ = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct op *o = &ops[i];
		snprintf(key, sizeof(key), "%sb/%016" PRIx64 "%s", h->prefix,
		    o->id, o->kind == HA_OP_PUT_COMMIT ? "/i" : "");
		size_t kl = strlen(key);
		if (o->kind == HA_OP_DELETE) {
			size_t el = etcd_prefix_end(key, kl, end);
			json_array_append_new(succ, etcd_op_delete(key, kl,
			    end, el));
			h->st.deletes++;
		} else {
			json_array_append_new(succ, etcd_op_put(key, kl,
			    h->vals.p + o->off, o->len, 0));
			h->st.puts++;
		}
	}
	if (next_id != h->next_written) {
		key_of(h, "next", key, sizeof(key));
		snprintf(v, sizeof(v), "%" PRIu64, next_id);
		json_array_append_new(succ, etcd_op_put(key, strlen(key), v,
		    strlen(v), 0));
	}
	json_t *q = json_pack("{s:[o],s:o}", "compare",
	    etcd_cmp_create(okey, strlen(okey), (int64_t)h->own.epoch),
	    "success", succ);
	uint64_t before = etcd_stats(h->e)->bytes_out;
	int rc = call(h, ETCD_TXN, q, err, errlen);
	h->st.txn_bytes += etcd_stats(h->e)->bytes_out - before;
	h->st.txns++;
	if (rc < 0) {
		h->st.write_failures++;
		return -1;
	}
	if (!h->r.succeeded) {
		h->st.fenced++;
		ha_own_fenced(&h->own);
		snprintf(err, errlen, "%s (epoch %" PRIu64 ")", h->own.why,
		    h->own.epoch);
		return -1;
	}
	h->next_written = next_id;
	h->st.ops += n;
	return 0;
}

int
ha_commit(struct ha *h, uint64_t next_id, char *err, size_t errlen)
{
	if (!ha_own_may_act(&h->own, h->c.clock())) {
		snprintf(err, errlen, "not the owner: %s", h->own.why ?
		    h->own.why : ha_state_names[h->own.state]);
		return -1;
	}
	if (h->nops == 0 && next_id == h->next_written)
		return 0;
	size_t n = coalesce(h);
	int rc = 0;
	for (size_t i = 0; i == 0 || i < n; i += TXN_OPS) {
		size_t k = n - i < TXN_OPS ? n - i : TXN_OPS;
		if (write_txn(h, h->ops + i, k, next_id, err, errlen) < 0) {
			rc = -1;
			break;
		}
	}
	h->nops = 0;
	h->vals.len = 0;
	/* A write that outlived the deadline covers nothing. */
	if (rc == 0 && !ha_own_may_act(&h->own, h->c.clock())) {
		snprintf(err, errlen, "not the owner: %s", h->own.why);
		rc = -1;
	}
	return rc;
}

int
ha_tick(struct ha *h, char *err, size_t errlen)
{
	uint64_t now = h->c.clock();
	/* Past the deadline (a pause, a slow call) nothing is renewed. */
	if (ha_own_may_act(&h->own, now) &&
	    ha_own_keepalive_due(&h->own, now)) {
		char e2[256];
		if (call(h, ETCD_KEEPALIVE, json_pack("{s:o}", "ID",
		    etcd_j_int(h->own.lease)), e2, sizeof(e2)) < 0) {
			ha_own_renew_failed(&h->own, h->c.clock());
			cats_warnx("etcd keepalive: %s", e2);
		} else {
			ha_own_renewed(&h->own, h->r.ttl, now, h->c.clock());
		}
	}
	if (!ha_own_may_act(&h->own, h->c.clock())) {
		snprintf(err, errlen, "%s (epoch %" PRIu64 ")", h->own.why ?
		    h->own.why : ha_state_names[h->own.state], h->own.epoch);
		return -1;
	}
	return 0;
}
