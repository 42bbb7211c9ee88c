/*
 * ha.c - binding state in etcd under an owner's fence (ha.h).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "base/htab.h"
#include "base/log.h"
#include "ha/ha.h"
#include "ha/ha_fold.h"
#include "ha/ha_log.h"

/* etcd's --max-txn-ops is 128 by default: a txn holds this many
 * operations; and a fold's txn this many bytes of values (its request,
 * in base64, stays under --max-request-bytes, 1.5 MiB by default). */
#define TXN_OPS 118
#define TXN_MAX_OPS 126
#define TXN_BYTES ((size_t)768 << 10)
#define RANGE_PAGE 1000
/* Log entries are up to HA_LOG_MAX_VALUE: a page of them fits the body. */
#define LOG_PAGE 8
/*
 * An empty bucket's chunk lives TOMB_MS before it is deleted; a standby
 * whose last sync is older than WARM_MS reads everything again, so it
 * never misses one (both are durations, each on its own clock).
 */
#define TOMB_MS 30000
#define WARM_MS 10000
/*
 * The fold: once the commits have been quiet FOLD_IDLE_MS, or FOLD_HIGH
 * records wait, up to FOLD_ROUND records (whole entries) a round: a few
 * buckets' chunks rewritten for thousands of records.
 */
#define FOLD_IDLE_MS 50
#define FOLD_HIGH 8192
#define FOLD_ROUND 4096
/* Entries a round deletes, one operation each, in its last txn. */
#define FOLD_ENTRIES 64
/* A pending request's op is keyed by its transaction, apart. */
#define PEND_BIT (UINT64_C(1) << 63)

struct op {
	uint64_t id;
	uint32_t seq;
	uint8_t kind;
	size_t off, len;	/* a tombstone's value in h->vals */
};

/* A pending request as the log holds it (its record and the entry it
 * came from), in the standby's warm copy. */
struct warm {
	uint64_t id, seq, gen;
	uint64_t dl;		/* a pending request's deadline */
	size_t len;
	uint8_t v[];
};

/* A log entry in etcd, not folded yet: the standby's copy, then the
 * fold's queue. */
struct lent {
	uint64_t seq, next_id, gen;
	size_t nrec, len;
	uint8_t *v;
};

/* A pending request carried by the fold (its entry's). */
struct pin {
	uint64_t seq, txn, dl;
	bool done;
};

/* A bucket written empty, its chunk deleted after TOMB_MS. */
struct tomb {
	uint64_t id, at;
};

/*
 * The fold, a thread of the owner with its own etcd client: the log
 * entries the commits wrote, folded into the chunks (c/LO) off the
 * commits' path, then deleted; and the empty chunks' deletion.  The queue
 * and the counters are under mu; the buckets (set: every binding, as the
 * chunks and the log hold it), the empty ones and through (the highest
 * seq folded) are the thread's; migrate says the old per-binding keys
 * (b/ID) are to be folded into chunks and deleted.
 */
struct fold {
	pthread_t th;
	bool running, stop, fenced;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct lent *q;
	size_t nq, capq, qrecs;
	uint64_t last_in;
	struct etcd *e;
	struct etcd_resp r;
	struct tomb *tombs;
	size_t ntombs, captombs, tomb0;
	/* entries the fold wrote of the pending requests it carried: each
	 * deleted once they are all bound or past their deadline */
	struct pin *pins;
	size_t npins;
	struct ha_fold_set set;
	uint64_t through;
	bool migrate;
	uint64_t rounds, folded, txns, bytes, failures, tombs_deleted;
	uint64_t carried, chunks;
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
	uint64_t seq;		/* the next log entry's */
	struct bind_table *t;	/* the live table, once restored */
	struct etcd_resp r;
	struct ha_stats st;
	struct cats_dec dec;
	struct cats_buf raw;	/* an entry read, inflated */
	/* the standby's warm copy: the bindings (chunks and log merged), the
	 * log entries by seq, the pending requests, at revision rev; old_keys
	 * counts the per-binding keys (b/ID) of an older cats-bind seen */
	struct ha_fold_set wset;
	struct cats_htab log, pend;
	uint64_t old_keys;
	/* the pending requests a restore found (path-reqs) */
	struct cats_buf *live;
	size_t nlive;
	uint64_t gen, synced_at, next_seen, seq_seen;
	int64_t rev;
	/* the txns of a commit begun (ha_commit_begin) and not ended, and
	 * their entries */
	json_t **fly_q;
	struct lent *fly_e;
	size_t fly_k, fly_n;
	uint64_t fly_next;
	char fly_err[512];
	struct fold f;
};

static void
key_of(const struct ha *h, const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", h->prefix, suffix);
}

static void
lkey_of(const struct ha *h, uint64_t seq, char *buf, size_t len)
{
	snprintf(buf, len, "%sl/%016" PRIx64, h->prefix, seq);
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
	pthread_mutex_init(&h->f.mu, NULL);
	pthread_cond_init(&h->f.cv, NULL);
	etcd_resp_init(&h->r);
	etcd_resp_init(&h->f.r);
	cats_dec_init(&h->dec, NULL);
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
	struct etcd_limits lim;
	etcd_limits_default(&lim);
	lim.max_value = HA_LOG_MAX_VALUE;
	lim.max_body = (size_t)16 << 20;
	h->e = etcd_new(c->urls, h->c.timeout_ms, &lim, err, errlen);
	if (h->e == NULL)
		goto fail;
	return h;
fail:
	ha_free(h);
	return NULL;
}

static void fly_free(struct ha *h);

static void
warm_clear(struct ha *h)
{
	ha_fold_free(&h->wset);
	for (size_t i = 0; i < h->log.cap; i++)
		if (h->log.s[i].h) {
			struct lent *l = h->log.s[i].item;
			free(l->v);
			free(l);
		}
	cats_htab_free(&h->log);
	memset(&h->log, 0, sizeof(h->log));
	for (size_t i = 0; i < h->pend.cap; i++)
		if (h->pend.s[i].h)
			free(h->pend.s[i].item);
	cats_htab_free(&h->pend);
	memset(&h->pend, 0, sizeof(h->pend));
}

static void
fold_stop(struct ha *h)
{
	struct fold *f = &h->f;
	if (f->running) {
		pthread_mutex_lock(&f->mu);
		f->stop = true;
		pthread_cond_signal(&f->cv);
		pthread_mutex_unlock(&f->mu);
		pthread_join(f->th, NULL);
		f->running = false;
	}
	for (size_t i = 0; i < f->nq; i++)
		free(f->q[i].v);
	free(f->q);
	f->q = NULL;
	f->nq = f->capq = 0;
	free(f->tombs);
	f->tombs = NULL;
	free(f->pins);
	f->pins = NULL;
	f->npins = 0;
	ha_fold_free(&f->set);
	etcd_free(f->e);
	f->e = NULL;
}

void
ha_free(struct ha *h)
{
	if (h == NULL)
		return;
	/* The fold first: what it has not folded stays in the log. */
	fold_stop(h);
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
	etcd_resp_free(&h->f.r);
	cats_dec_free(&h->dec);
	cats_buf_free(&h->raw);
	ha_pending_clear(h);
	warm_clear(h);
	free(h->ops);
	cats_buf_free(&h->vals);
	pthread_mutex_destroy(&h->f.mu);
	pthread_cond_destroy(&h->f.cv);
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
ha_stats(struct ha *h)
{
	pthread_mutex_lock(&h->f.mu);
	h->st.folds = h->f.rounds;
	h->st.folded = h->f.folded;
	h->st.fold_txns = h->f.txns;
	h->st.fold_bytes = h->f.bytes;
	h->st.fold_failures = h->f.failures;
	h->st.tombs_deleted = h->f.tombs_deleted;
	h->st.log_backlog = h->f.qrecs;
	h->st.pending_carried = h->f.carried;
	h->st.fold_chunks = h->f.chunks;
	pthread_mutex_unlock(&h->f.mu);
	return &h->st;
}

const struct etcd_stats *
ha_etcd_stats(const struct ha *h)
{
	return etcd_stats(h->e);
}

/* A call whose error answer is a failure too. */
static int
call_on(struct etcd *e, struct etcd_resp *r, int kind, json_t *q, char *err,
    size_t errlen)
{
	int rc = etcd_call(e, kind, q, r, err, errlen);
	json_decref(q);
	if (rc == 0 && r->error) {
		snprintf(err, errlen, "etcd %s: %s (code %d)",
		    etcd_kind_names[kind], r->message, r->code);
		return -1;
	}
	return rc;
}

static int
call(struct ha *h, int kind, json_t *q, char *err, size_t errlen)
{
	return call_on(h->e, &h->r, kind, q, err, errlen);
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

static bool
lent_eq(const void *item, const void *key)
{
	return ((const struct lent *)item)->seq == *(const uint64_t *)key;
}

/* The number of key k (P S/N, N 16 hex digits), 0 if none. */
static uint64_t
num_of_key(const struct ha *h, const char *sub, const uint8_t *k, size_t n)
{
	size_t pl = strlen(h->prefix);
	if (n != pl + 2 + 16 || memcmp(k, h->prefix, pl) != 0 ||
	    memcmp(k + pl, sub, 2) != 0)
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
tomb_add(struct fold *f, uint64_t id, uint64_t at)
{
	if (f->ntombs == f->captombs) {
		/* Drop what was deleted before growing. */
		if (f->tomb0 > 0) {
			memmove(f->tombs, f->tombs + f->tomb0, (f->ntombs -
			    f->tomb0) * sizeof(*f->tombs));
			f->ntombs -= f->tomb0;
			f->tomb0 = 0;
		}
		if (f->ntombs == f->captombs) {
			size_t cap = f->captombs ? f->captombs * 2 : 256;
			struct tomb *v = realloc(f->tombs, cap * sizeof(*v));
			if (v == NULL)
				return;	/* it stays in etcd: harmless */
			f->tombs = v;
			f->captombs = cap;
		}
	}
	f->tombs[f->ntombs].id = id;
	f->tombs[f->ntombs].at = at;
	f->ntombs++;
}

/*
 * Binding id's record v[0..n), from entry seq, into the warm copy, unless
 * it holds a later state (a fold of older entries seen after the log):
 * 0 or -1.
 */
static int
tab_put(struct ha *h, struct cats_htab *tab, uint64_t id, uint64_t seq,
    uint64_t dl, const uint8_t *v, size_t n)
{
	struct warm *w = cats_htab_get(tab, ha_num_hash(id), warm_eq, &id);
	if (w != NULL && w->seq > seq) {
		w->gen = h->gen;
		return 0;
	}
	free(cats_htab_del(tab, ha_num_hash(id), warm_eq, &id));
	if ((w = malloc(sizeof(*w) + n)) == NULL)
		return -1;
	w->id = id;
	w->seq = seq;
	w->gen = h->gen;
	w->dl = dl;
	w->len = n;
	memcpy(w->v, v, n);
	if (cats_htab_put(tab, ha_num_hash(id), w) < 0) {
		free(w);
		return -1;
	}
	return 0;
}

/* A pending request's deadline (its decision's time + 2 s without one). */
static uint64_t
pend_dl(const struct cats_path_req *q)
{
	return CATS_HAS(q, PRQ, deadline) ? q->deadline : q->decision.ts +
	    2000;
}

/* Drop the pending requests of the warm copy past their deadline, or
 * (gen != 0) not seen by the sync of that generation. */
static void
pend_prune(struct ha *h, uint64_t now, uint64_t gen)
{
	for (size_t i = 0; i < h->pend.cap;) {
		struct warm *w = h->pend.s[i].item;
		if (h->pend.s[i].h && (w->dl <= now || (gen != 0 &&
		    w->gen != gen))) {
			cats_htab_del(&h->pend, h->pend.s[i].h, warm_eq, &w->id);
			free(w);
			continue;
		}
		i++;
	}
}

static void
next_see(struct ha *h, uint64_t next)
{
	if (next <= CATS_U53 && next > h->next_seen)
		h->next_seen = next;
}

/* An entry's records into the warm copy. */
struct wput {
	struct ha *h;
	uint64_t seq;
	int oom;
};

static int
on_rec(void *arg, const struct cats_rec *r, const uint8_t *v, size_t n)
{
	struct wput *p = arg;
	struct ha *h = p->h;
	if (r->type == CATS_T_PATH_REQ) {
		/* A pending request, until its binding is seen. */
		if (tab_put(h, &h->pend, r->u.preq.txn, p->seq,
		    pend_dl(&r->u.preq), v, n) < 0) {
			p->oom = 1;
			return 1;
		}
		return 0;
	}
	if (r->type == CATS_T_ERROR && CATS_HAS(&r->u.error, ERR, txn)) {
		/* A pending request's end: nothing to take again. */
		uint64_t txn = r->u.error.txn;
		free(cats_htab_del(&h->pend, ha_num_hash(txn), warm_eq, &txn));
		return 0;
	}
	if (r->type != CATS_T_BINDING || r->u.binding.id == 0) {
		h->st.restore_refused++;
		return 0;
	}
	if (ha_fold_put(&h->wset, r->u.binding.id, p->seq, r->u.binding.op ==
	    CATS_BIND_REMOVE, v, n) < 0) {
		p->oom = 1;
		return 1;
	}
	uint64_t txn = r->u.binding.txn;
	free(cats_htab_del(&h->pend, ha_num_hash(txn), warm_eq, &txn));
	return 0;
}

/*
 * The value v[0..n) of key k into the warm copy: a chunk's (P c/LO), a
 * log entry's (P l/SEQ, kept too: a new owner folds it) or an older
 * cats-bind's binding (P b/ID, a one-record entry: a new owner folds it
 * into its chunk); anything else is not ours.  A value that is not one is
 * counted and left out.  0, or -1 out of memory.
 */
static int
warm_value(struct ha *h, const uint8_t *k, size_t kl, const uint8_t *v,
    size_t n)
{
	uint64_t lo = num_of_key(h, "c/", k, kl);
	if (lo != 0) {
		struct ha_chunk_hdr ch;
		struct cats_err e;
		int rc = ha_fold_chunk(&h->wset, &h->dec, v, n, lo, &h->raw,
		    &ch, &e);
		if (rc == -2)
			return -1;
		if (rc < 0)
			h->st.restore_refused++;
		else if (ch.seq > h->seq_seen)
			h->seq_seen = ch.seq;
		return 0;
	}
	uint64_t id = num_of_key(h, "b/", k, kl);
	uint64_t seq = id ? 0 : num_of_key(h, "l/", k, kl);
	if (id == 0 && seq == 0)
		return 0;
	h->old_keys += id != 0;
	struct ha_log_hdr hd;
	struct cats_err e;
	size_t used;
	/* The header first: a binding's holds one record, an entry's seq is
	 * its key's. */
	if (ha_log_header(v, n, &hd, &used, &e) < 0 || (id != 0 && hd.n != 1) ||
	    (seq != 0 && hd.seq != seq)) {
		h->st.restore_refused++;
		return 0;
	}
	struct wput p = { h, hd.seq, 0 };
	if (hd.seq > h->seq_seen)
		h->seq_seen = hd.seq;
	if (ha_log_decode(&h->dec, v, n, &h->raw, &hd, on_rec, &p, &e) != 0) {
		if (p.oom)
			return -1;
		h->st.restore_refused++;
		return 0;
	}
	next_see(h, hd.next_id);
	if (seq == 0)
		return 0;
	struct lent *l = cats_htab_get(&h->log, ha_num_hash(seq), lent_eq, &seq);
	if (l != NULL) {
		l->gen = h->gen;
		return 0;
	}
	if ((l = calloc(1, sizeof(*l))) == NULL || (l->v = malloc(n)) == NULL) {
		free(l);
		return -1;
	}
	memcpy(l->v, v, n);
	l->seq = seq;
	l->next_id = hd.next_id;
	l->nrec = hd.n;
	l->len = n;
	l->gen = h->gen;
	if (cats_htab_put(&h->log, ha_num_hash(seq), l) < 0) {
		free(l->v);
		free(l);
		return -1;
	}
	return 0;
}

static void
log_drop(struct ha *h, uint64_t seq)
{
	struct lent *l = cats_htab_del(&h->log, ha_num_hash(seq), lent_eq, &seq);
	if (l != NULL) {
		free(l->v);
		free(l);
	}
}

/*
 * Range [key, end) at revision *rev (0: the first page's), changed after
 * min (0: all), page by page, each value into the warm copy: 0 or -1.
 */
static int
warm_range(struct ha *h, const char *key, const uint8_t *end, size_t el,
    int64_t limit, int64_t min, int64_t *rev, char *err, size_t errlen)
{
	char next[512];
	size_t nl = strlen(key);
	memcpy(next, key, nl + 1);
	for (;;) {
		json_t *q = etcd_op_range(next, nl, end, el, limit, *rev);
		if (min != 0)
			json_object_set_new(q, "min_mod_revision",
			    etcd_j_int(min));
		if (call(h, ETCD_RANGE, q, err, errlen) < 0)
			return -1;
		if (*rev == 0)
			*rev = h->r.revision;
		for (size_t i = 0; i < h->r.nkvs; i++) {
			const struct etcd_kv *kv = &h->r.kvs[i];
			if (warm_value(h, kv->key, kv->klen, kv->value,
			    kv->vlen) < 0) {
				snprintf(err, errlen, "out of memory");
				return -1;
			}
		}
		if (!h->r.more || h->r.nkvs == 0)
			return 0;
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
}

/*
 * Bring the warm copy up to etcd, at one revision: the chunks and an
 * older cats-bind's per-binding keys (all when full, or when the last
 * sync is older than WARM_MS, else those changed since the last
 * revision), the log whole (an entry folded meanwhile is gone from it,
 * its effect in the chunks) and the next id.  The rules of ha_fold.h
 * merge them whatever the order they are read in.  0, or -1 with err.
 */
static int
warm_sync(struct ha *h, uint64_t now, char *err, size_t errlen)
{
	char key[512];
	uint8_t end[512];
	bool full = h->rev == 0 || now - h->synced_at > WARM_MS;
	int64_t rev = 0;
	h->gen++;
	/* A full read starts again from nothing (again if it fails). */
	if (full) {
		ha_fold_free(&h->wset);
		h->rev = 0;
	}
	static const char *const keyed[] = { "b/", "c/" };
	for (size_t i = 0; i < 2; i++) {
		key_of(h, keyed[i], key, sizeof(key));
		size_t el = etcd_prefix_end(key, strlen(key), end);
		/* Chunks are up to HA_LOG_MAX_VALUE: a page of them fits. */
		if (warm_range(h, key, end, el, i ? LOG_PAGE : RANGE_PAGE,
		    full ? 0 : h->rev + 1, &rev, err, errlen) < 0)
			return -1;
	}
	key_of(h, "l/", key, sizeof(key));
	size_t el = etcd_prefix_end(key, strlen(key), end);
	if (warm_range(h, key, end, el, LOG_PAGE, 0, &rev, err, errlen) < 0)
		return -1;
	/* An entry a full read did not see is gone; the log is read whole. */
	for (size_t i = 0; i < h->log.cap;) {
		struct lent *l = h->log.s[i].item;
		if (h->log.s[i].h && l->gen != h->gen) {
			log_drop(h, l->seq);
			continue;
		}
		i++;
	}
	/* Pending requests are in the log only: read whole too. */
	pend_prune(h, now, h->gen);
	key_of(h, "next", key, sizeof(key));
	if (call(h, ETCD_RANGE, etcd_op_range(key, strlen(key), NULL, 0, 0,
	    rev), err, errlen) < 0)
		return -1;
	if (h->r.nkvs > 0)
		next_see(h, strtoull((const char *)h->r.kvs[0].value, NULL,
		    10));
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

/* One message of the standby's watch into the warm copy, in revision
 * order: the log entries as the owner wrote them, the folds' chunks
 * after. */
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
				next_see(h, strtoull((const char *)kv->value,
				    NULL, 10));
			continue;
		}
		if (kv->deleted) {
			uint64_t lo = num_of_key(h, "c/", kv->key, kv->klen);
			uint64_t seq = num_of_key(h, "l/", kv->key, kv->klen);
			/*
			 * An entry folded.  A chunk deleted is an empty
			 * bucket's (what it dropped went when it was written)
			 * or one a bucket's new chunks cover; a per-binding
			 * key deleted is one folded into its chunk.
			 */
			struct ha_bucket *b = lo ? ha_fold_bucket(&h->wset,
			    ha_bucket_of(lo)) : NULL;
			if (b != NULL && b->n == 0)
				ha_fold_drop(&h->wset, b->b);
			if (seq != 0)
				log_drop(h, seq);
			continue;
		}
		if (warm_value(h, kv->key, kv->klen, kv->value, kv->vlen) < 0) {
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
	pend_prune(h, now, 0);
	struct wctx w = { .h = h, .err = err, .errlen = errlen };
	uint8_t end[512];
	key_of(h, "owner", w.okey, sizeof(w.okey));
	key_of(h, "next", w.nkey, sizeof(w.nkey));
	w.ol = strlen(w.okey);
	w.nl = strlen(w.nkey);
	size_t pl = strlen(h->prefix);
	size_t el = etcd_prefix_end(h->prefix, pl, end);
	/* Every change after the warm copy's revision, the prefix whole:
	 * the owner key, the next id, the log, the bindings. */
	json_t *q = json_pack("{s:{s:o,s:o,s:o}}", "create_request", "key",
	    etcd_j_bytes(h->prefix, pl), "range_end", etcd_j_bytes(end, el),
	    "start_revision", etcd_j_int(h->rev + 1));
	h->st.watches++;
	int rc = etcd_watch(h->e, q, ms, on_watch, &w, &h->r, err, errlen);
	json_decref(q);
	/* A failed watch (a message past a cap among them) is not made
	 * again from the same revision: everything is read again, a page
	 * at a time. */
	if (rc < 0 || w.rc < 0 || w.restart)
		h->rev = 0;
	if (rc < 0 || w.rc < 0)
		return -1;
	return w.owner_gone ? 1 : 0;
}

static int
cmp_lent(const void *a, const void *b)
{
	uint64_t x = (*(struct lent *const *)a)->seq;
	uint64_t y = (*(struct lent *const *)b)->seq;
	return x < y ? -1 : x > y;
}

static bool
keep_all(const void *item, void *arg)
{
	(void)item;
	(void)arg;
	return true;
}

static void *fold_run(void *arg);

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

size_t
ha_pending_count(const struct ha *h)
{
	return h->nlive;
}

const uint8_t *
ha_pending_at(const struct ha *h, size_t i, size_t *len)
{
	*len = h->live[i].len;
	return h->live[i].p;
}

void
ha_pending_clear(struct ha *h)
{
	for (size_t i = 0; i < h->nlive; i++)
		cats_buf_free(&h->live[i]);
	free(h->live);
	h->live = NULL;
	h->nlive = 0;
}

/*
 * The pending requests of the warm copy that are still pending: not bound
 * (no binding of their transaction among txns[0..n), sorted) and before
 * their deadline, into h->live.
 */
static void
pend_live(struct ha *h, const uint64_t *txns, size_t n, uint64_t now)
{
	size_t np;
	void **v = cats_htab_select(&h->pend, keep_all, NULL, &np);
	h->live = np ? calloc(np, sizeof(*h->live)) : NULL;
	for (size_t i = 0; h->live != NULL && i < np; i++) {
		const struct warm *w = v[i];
		if (w->dl <= now || (n > 0 && bsearch(&w->id, txns, n,
		    sizeof(*txns), cmp_u64) != NULL)) {
			h->st.pending_dropped++;
			continue;
		}
		if (cats_buf_add(&h->live[h->nlive], w->v, w->len) == 0) {
			h->nlive++;
			h->st.pending_restored++;
		}
	}
	free(v);
}

int
ha_restore(struct ha *h, struct bind_table *t, uint64_t now, char *err,
    size_t errlen)
{
	/* The last changes (or everything, for a cold standby). */
	if (warm_sync(h, now, err, errlen) < 0)
		return -1;
	size_t nb, nl, n = 0;
	struct ha_bucket **v = ha_fold_buckets(&h->wset, false, &nb);
	void **lv = cats_htab_select(&h->log, keep_all, NULL, &nl);
	if ((v == NULL && nb > 0) || (lv == NULL && nl > 0)) {
		free(v);
		free(lv);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < nb; i++)
		n += v[i]->n;
	/* In id order, as the journal would replay them. */
	struct cats_dec d;
	cats_dec_init(&d, NULL);
	bind_reserve(t, h->wset.live);
	uint64_t *txns = n ? malloc(n * sizeof(*txns)) : NULL;
	size_t ntx = 0;
	for (size_t i = 0; i < nb; i++) {
		struct ha_bucket *b = v[i];
		for (size_t j = 0; j < b->n; j++) {
			const struct ha_fent *w = &b->e[j];
			struct cats_rec rec;
			struct cats_err e;
			int ok = cats_rec_decode(&d, w->v, w->len, &rec, &e);
			if (ok == 0 && rec.type == CATS_T_BINDING &&
			    txns != NULL)
				txns[ntx++] = rec.u.binding.txn;
			/* A removed binding is kept in the set only to keep
			 * its older records out. */
			if (ok == 0 && w->rm)
				continue;
			if (ok < 0 || rec.type != CATS_T_BINDING ||
			    bind_restore(t, &rec, now) != BR_OK)
				h->st.restore_refused++;
			else
				h->st.restored++;
		}
		/* An empty bucket's chunk goes in its time; the old keys'
		 * buckets are folded into chunks by the first round. */
		if (b->live == 0)
			tomb_add(&h->f, b->b, now);
		b->dirty = h->old_keys > 0;
	}
	cats_dec_free(&d);
	free(v);
	h->f.migrate = h->old_keys > 0;
	h->f.set = h->wset;
	memset(&h->wset, 0, sizeof(h->wset));
	h->f.through = h->seq_seen;
	if (ntx > 1)
		qsort(txns, ntx, sizeof(*txns), cmp_u64);
	pend_live(h, txns, ntx, now);
	free(txns);
	/* The log not folded yet is ours to fold, in its order. */
	if (nl > 1)
		qsort(lv, nl, sizeof(*lv), cmp_lent);
	h->f.q = nl ? calloc(nl, sizeof(*h->f.q)) : NULL;
	for (size_t i = 0; h->f.q != NULL && i < nl; i++) {
		struct lent *l = lv[i];
		h->f.q[h->f.nq++] = *l;
		h->f.qrecs += l->nrec;
		l->v = NULL;
	}
	h->f.capq = h->f.nq;
	free(lv);
	warm_clear(h);
	if (h->next_seen > 0)
		bind_set_next_id(t, h->next_seen);
	h->next_written = bind_next_id(t);
	h->seq = h->seq_seen + 1;
	bind_set_epoch(t, h->own.epoch);
	h->t = t;
	struct etcd_limits lim;
	etcd_limits_default(&lim);
	h->f.e = etcd_new(h->c.urls, h->c.timeout_ms, &lim, err, errlen);
	if (h->f.e == NULL)
		return -1;
	h->f.last_in = h->c.clock();
	if (pthread_create(&h->f.th, NULL, fold_run, h) != 0) {
		snprintf(err, errlen, "cannot start the fold thread");
		return -1;
	}
	h->f.running = true;
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
	if (r->type == CATS_T_PATH_REQ) {
		*id = r->u.preq.txn;
		return HA_OP_PENDING;
	}
	if (r->type == CATS_T_ERROR && CATS_HAS(&r->u.error, ERR, txn)) {
		*id = r->u.error.txn;
		return HA_OP_PENDING_END;
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
	bool pend = kind == HA_OP_PENDING || kind == HA_OP_PENDING_END;
	o->id = pend ? id | PEND_BIT : id;
	o->seq = (uint32_t)h->nops;
	o->kind = (uint8_t)kind;
	o->off = h->vals.len;
	/* A removed binding's tombstone is its remove record; the others'
	 * values are read from the table at the commit. */
	if ((kind == HA_OP_DELETE || pend) &&
	    cats_rec_encode(r, &h->vals, false) < 0)
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

/* The txn of the operations succ under the fence. */
static json_t *
fenced_txn(const struct ha *h, json_t *succ)
{
	char okey[512];
	key_of(h, "owner", okey, sizeof(okey));
	return json_pack("{s:[o],s:o}", "compare",
	    etcd_cmp_create(okey, strlen(okey), (int64_t)h->own.epoch),
	    "success", succ);
}

/* The records in b (a slice of the commit) as its next entry. */
static int
fly_add(struct ha *h, struct cats_buf *b, uint64_t n, uint64_t next_id,
    size_t cap)
{
	if (h->fly_k == cap)
		return -1;
	struct lent *l = &h->fly_e[h->fly_k++];
	l->seq = __atomic_fetch_add(&h->seq, 1, __ATOMIC_RELAXED);
	l->next_id = next_id;
	l->nrec = n;
	l->len = b->len;
	l->v = b->p;
	*b = (struct cats_buf){ 0 };
	return 0;
}

/*
 * The entries of ops[0..n), built on the loop from the table as it is
 * now: the records in slices of up to HA_LOG_TARGET bytes (h->fly_e; the
 * txns are made from them by ha_commit_work()); every entry says the
 * next id.  0, or -1 out of memory.
 */
static int
build_txns(struct ha *h, size_t n, uint64_t next_id, uint64_t now)
{
	struct cats_buf val = { 0 }, ent = { 0 };
	uint64_t nrec = 0;
	/* At least a record an entry, or one empty entry. */
	size_t cap = n + 1;
	int rc = -1;
	h->fly_e = calloc(cap, sizeof(*h->fly_e));
	if (h->fly_e == NULL)
		goto out;
	h->fly_n = n;
	h->fly_next = next_id;
	for (size_t i = 0; i < n; i++) {
		const struct op *o = &h->ops[i];
		const uint8_t *p;
		size_t len;
		if (o->kind == HA_OP_DELETE) {
			p = h->vals.p + o->off;
			len = o->len;
			h->st.deletes++;
		} else if (o->kind == HA_OP_PENDING) {
			/* Still waiting for its path (else its binding, or
			 * its end, is what counts). */
			struct bind_info bi;
			if (h->t == NULL || bind_get_txn(h->t, o->id & ~PEND_BIT,
			    &bi) < 0 || (bi.state != CATS_FS_PENDING &&
			    bi.state != CATS_FS_DESTINATION_SELECTED))
				continue;
			p = h->vals.p + o->off;
			len = o->len;
			h->st.pending_written++;
		} else if (o->kind == HA_OP_PENDING_END) {
			/* (A request that ended in the commit that would
			 * have written it needs none, but costs only this.) */
			p = h->vals.p + o->off;
			len = o->len;
			h->st.pending_ended++;
		} else {
			/* The binding as it is now; an active one's time is
			 * the start of its lifetime (as in a journal
			 * snapshot). */
			struct bind_info bi;
			struct cats_rec rec;
			if (h->t == NULL || bind_get(h->t, o->id, &bi) < 0 ||
			    bind_record(h->t, o->id, CATS_BIND_INSTALL,
			    bi.state == CATS_FS_ACTIVE ? bi.t_start : now,
			    &rec) < 0)
				continue;
			val.len = 0;
			if (cats_rec_encode(&rec, &val, false) < 0)
				continue;
			p = val.p;
			len = val.len;
			h->st.puts++;
		}
		if (cats_buf_add(&ent, p, len) < 0)
			goto out;
		if (++nrec == HA_LOG_MAX_RECS || ent.len >= HA_LOG_TARGET) {
			if (fly_add(h, &ent, nrec, next_id, cap) < 0)
				goto out;
			nrec = 0;
		}
	}
	/* The last entry; an empty one when only the next id moved. */
	if ((nrec > 0 || h->fly_k == 0) && fly_add(h, &ent, nrec, next_id,
	    cap) < 0)
		goto out;
	rc = 0;
out:
	cats_buf_free(&val);
	cats_buf_free(&ent);
	return rc;
}

/*
 * The txns of the entries built (on the commit's thread): each sealed
 * (deflated) in place, one put under the fence.  0, or -1.
 */
static int
seal_txns(struct ha *h, char *err, size_t errlen)
{
	char key[512];
	struct cats_buf out = { 0 };
	if ((h->fly_q = calloc(h->fly_k, sizeof(*h->fly_q))) == NULL)
		goto fail;
	for (size_t i = 0; i < h->fly_k; i++) {
		struct lent *l = &h->fly_e[i];
		if (ha_log_seal(&out, l->seq, l->next_id, l->nrec, l->v, l->len,
		    true) < 0)
			goto fail;
		h->st.log_raw_bytes += l->len;
		free(l->v);
		l->v = out.p;
		l->len = out.len;
		out = (struct cats_buf){ 0 };
		lkey_of(h, l->seq, key, sizeof(key));
		if ((h->fly_q[i] = fenced_txn(h, json_pack("[o]",
		    etcd_op_put(key, strlen(key), l->v, l->len, 0)))) == NULL)
			goto fail;
	}
	return 0;
fail:
	cats_buf_free(&out);
	snprintf(err, errlen, "cannot encode the txn");
	return -1;
}

static void
fly_free(struct ha *h)
{
	for (size_t i = 0; i < h->fly_k; i++) {
		if (h->fly_q != NULL)
			json_decref(h->fly_q[i]);
		free(h->fly_e[i].v);
	}
	free(h->fly_q);
	free(h->fly_e);
	h->fly_q = NULL;
	h->fly_e = NULL;
	h->fly_k = h->fly_n = 0;
}

/* Was the fold fenced?  Then so are we (on the caller's thread). */
static bool
fold_fenced(struct ha *h, char *err, size_t errlen)
{
	pthread_mutex_lock(&h->f.mu);
	bool f = h->f.fenced;
	pthread_mutex_unlock(&h->f.mu);
	if (!f)
		return false;
	if (h->own.state == HA_OWNER) {
		h->st.fenced++;
		ha_own_fenced(&h->own);
	}
	snprintf(err, errlen, "%s (epoch %" PRIu64 ")", h->own.why,
	    h->own.epoch);
	return true;
}

/*
 * The answers rs[0..k) of fenced txns: 0, or -1 with err (an error answer,
 * or a failed compare: *fenced).
 */
static int
check_txns(const struct etcd_resp *rs, size_t k, bool *fenced, char *err,
    size_t errlen)
{
	for (size_t i = 0; i < k; i++) {
		if (rs[i].error) {
			snprintf(err, errlen, "etcd txn: %s (code %d)",
			    rs[i].message, rs[i].code);
			return -1;
		}
		if (!rs[i].succeeded) {
			*fenced = true;
			snprintf(err, errlen, "fenced");
			return -1;
		}
	}
	return 0;
}

/*
 * The txns built at once (distinct keys: their order does not matter).
 * 0, or -1 with err: one got no answer, an error answer, or failed its
 * compare (fenced).
 */
static int
write_txns(struct ha *h, char *err, size_t errlen)
{
	size_t k = h->fly_k;
	struct etcd_resp *rs = calloc(k, sizeof(*rs));
	int rc = -1;
	bool fenced = false;
	if (rs == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	uint64_t before = etcd_stats(h->e)->bytes_out;
	int crc = etcd_call_many(h->e, ETCD_TXN, h->fly_q, k, rs, err,
	    errlen);
	h->st.txn_bytes += etcd_stats(h->e)->bytes_out - before;
	h->st.txns += k;
	if (crc < 0 || check_txns(rs, k, &fenced, err, errlen) < 0) {
		if (fenced) {
			h->st.fenced++;
			ha_own_fenced(&h->own);
			snprintf(err, errlen, "%s (epoch %" PRIu64 ")",
			    h->own.why, h->own.epoch);
		} else {
			h->st.write_failures++;
		}
		goto out;
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
	if (fold_fenced(h, err, errlen))
		return -1;
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
	if (h->fly_q == NULL && seal_txns(h, err, errlen) < 0)
		return -1;
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

/* The entries of a commit written, to the fold's queue. */
static void
fold_enqueue(struct ha *h)
{
	struct fold *f = &h->f;
	pthread_mutex_lock(&f->mu);
	for (size_t i = 0; i < h->fly_k; i++) {
		/* Out of memory: left in the log, folded by the next owner. */
		if (cats_grow((void **)&f->q, &f->capq, f->nq, sizeof(*f->q),
		    64) < 0)
			break;
		f->q[f->nq++] = h->fly_e[i];
		f->qrecs += h->fly_e[i].nrec;
		h->fly_e[i].v = NULL;
	}
	f->last_in = h->c.clock();
	if (f->qrecs >= FOLD_HIGH)
		pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

int
ha_commit_end(struct ha *h, int rc, char *err, size_t errlen)
{
	if (rc >= 0 && h->f.running)
		fold_enqueue(h);
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

/* ---- the fold (its own thread) ---- */

/* A record of the entries folded: the latest per binding id wins. */
struct fop {
	uint64_t id, seq;
	size_t off, len;	/* in fctx's recs */
	bool rm;
};

/* A pending request of the entries folded. */
struct fpend {
	uint64_t txn, dl;
	size_t off, len;	/* in fctx's recs */
};

struct fctx {
	struct fop *v;
	size_t n, cap;
	struct fpend *p;
	size_t np, capp;
	uint64_t *btxn;		/* the transactions bound or ended */
	size_t nbt, capbt;
	uint64_t seq;
	bool oom;
	struct cats_buf recs, raw;
};

static int
fold_rec(void *arg, const struct cats_rec *r, const uint8_t *v, size_t n)
{
	struct fctx *c = arg;
	if (r->type == CATS_T_PATH_REQ) {
		if (cats_grow((void **)&c->p, &c->capp, c->np, sizeof(*c->p),
		    64) < 0 ||
		    cats_buf_add(&c->recs, v, n) < 0) {
			c->oom = true;
			return 1;
		}
		c->p[c->np++] = (struct fpend){ r->u.preq.txn,
			pend_dl(&r->u.preq), c->recs.len - n, n };
		return 0;
	}
	if (r->type == CATS_T_ERROR && CATS_HAS(&r->u.error, ERR, txn)) {
		/* A pending request's end: over, as if bound. */
		if (cats_grow((void **)&c->btxn, &c->capbt, c->nbt,
		    sizeof(*c->btxn), 1024) < 0) {
			c->oom = true;
			return 1;
		}
		c->btxn[c->nbt++] = r->u.error.txn;
		return 0;
	}
	if (r->type != CATS_T_BINDING || r->u.binding.id == 0)
		return 0;
	if (cats_grow((void **)&c->v, &c->cap, c->n, sizeof(*c->v), 1024) < 0 ||
	    cats_grow((void **)&c->btxn, &c->capbt, c->nbt, sizeof(*c->btxn),
	    1024) < 0 || cats_buf_add(&c->recs, v, n) < 0) {
		c->oom = true;
		return 1;
	}
	c->v[c->n++] = (struct fop){ r->u.binding.id, c->seq,
		c->recs.len - n, n, r->u.binding.op == CATS_BIND_REMOVE };
	c->btxn[c->nbt++] = r->u.binding.txn;
	return 0;
}

/* Is pending request txn (deadline dl) over: bound in this round, or
 * past its deadline? */
static bool
pend_over(const struct fctx *c, uint64_t txn, uint64_t dl, uint64_t now)
{
	return dl <= now || (c->nbt > 0 && bsearch(&txn, c->btxn, c->nbt,
	    sizeof(*c->btxn), cmp_u64) != NULL);
}

/* The key of the chunk starting at id lo. */
static size_t
ckey_of(const struct ha *h, uint64_t lo, char *buf, size_t len)
{
	return (size_t)snprintf(buf, len, "%sc/%016" PRIx64, h->prefix, lo);
}

/* A fold's operations, in groups that go into one txn together (a
 * bucket's chunks), packed into txns of TXN_MAX_OPS and TXN_BYTES. */
struct fpack {
	json_t **q;		/* the txns' success arrays */
	size_t nq, capq, bytes;
};

/* A new txn when ops more operations (and bytes) would not fit the last:
 * 0 or -1. */
static int
pack_room(struct fpack *p, size_t ops, size_t bytes)
{
	if (p->nq > 0 && json_array_size(p->q[p->nq - 1]) + ops <=
	    TXN_MAX_OPS && p->bytes + bytes <= TXN_BYTES) {
		p->bytes += bytes;
		return 0;
	}
	if (cats_grow((void **)&p->q, &p->capq, p->nq, sizeof(*p->q), 4) < 0 ||
	    (p->q[p->nq] = json_array()) == NULL)
		return -1;
	p->nq++;
	p->bytes = bytes;
	return 0;
}

static void
pack_add(struct fpack *p, json_t *op)
{
	json_array_append_new(p->q[p->nq - 1], op);
}

/*
 * Bucket b's chunks as of seq into p, one group: a put of each, and the
 * deletion of the chunks it had that these do not replace (the keys
 * between them and up to the bucket's end), unless it was and is one
 * chunk.  The number of chunks, or -1.
 */
static long
pack_bucket(struct ha *h, struct fpack *p, const struct ha_bucket *b,
    uint64_t seq)
{
	struct ha_part *parts;
	size_t np, bytes = 0;
	char key[512], end[512];
	if (ha_fold_seal(b, seq, &parts, &np) < 0)
		return -1;
	bool gaps = b->nparts != 1 || np != 1;
	for (size_t i = 0; i < np; i++)
		bytes += parts[i].v.len;
	if (pack_room(p, np * (1 + gaps), bytes) < 0) {
		ha_parts_free(parts, np);
		return -1;
	}
	for (size_t i = 0; i < np; i++) {
		size_t kl = ckey_of(h, parts[i].lo, key, sizeof(key));
		pack_add(p, etcd_op_put(key, kl, parts[i].v.p, parts[i].v.len,
		    0));
		if (!gaps)
			continue;
		/* The keys after this chunk's, before the next one's. */
		size_t el = ckey_of(h, parts[i].hi, end, sizeof(end));
		key[kl++] = '\0';
		pack_add(p, etcd_op_delete(key, kl, end, el));
	}
	ha_parts_free(parts, np);
	return (long)np;
}

/*
 * Fold the entries e[0..k) (the queue's head) into the buckets, and write
 * the chunks of each bucket they changed, as of the head's last seq (or,
 * with no entries, of the last folded), under the fence; the last txn
 * also deletes the entries, writes the next id, carries the pending
 * requests still waiting into an entry of their own (pinned: deleted by a
 * later round once they are all bound or past their deadline), deletes
 * the pinned entries that are over and, when migrating, an older
 * cats-bind's per-binding keys.  A round is one txn unless its chunks
 * pass TXN_MAX_OPS or TXN_BYTES: then those txns go first, the last
 * after.  A fold cut short leaves the entries, whose replay gives the
 * same state.  0; -1 etcd did not take it (again later); -2 fenced.
 */
static int
fold_write(struct ha *h, struct cats_dec *d, const struct lent *e, size_t k)
{
	struct fold *f = &h->f;
	struct fctx c = { 0 };
	struct fpack pk = { 0 };
	uint64_t next = 0, now = h->c.clock(), cseq = 0;
	uint64_t seq = k > 0 ? e[k - 1].seq : f->through;
	char key[512], err[512];
	int rc = -1;
	size_t applied = 0, nb = 0, nch = 0;
	struct ha_bucket **bs = NULL;
	long *nparts = NULL;
	for (size_t i = 0; i < k; i++) {
		struct ha_log_hdr hd;
		struct cats_err ce;
		c.seq = e[i].seq;
		if (e[i].seq > seq)
			seq = e[i].seq;
		/* Checked when it was read (or ours): one that does not
		 * decode now is deleted with the others, unfolded. */
		if (ha_log_decode(d, e[i].v, e[i].len, &c.raw, &hd, fold_rec,
		    &c, &ce) != 0) {
			if (c.oom)
				goto out;
			continue;
		}
		if (hd.next_id > next)
			next = hd.next_id;
	}
	if (c.nbt > 1)
		qsort(c.btxn, c.nbt, sizeof(*c.btxn), cmp_u64);
	/* Into the buckets, each binding's latest record kept. */
	for (size_t i = 0; i < c.n; i++) {
		int r = ha_fold_put(&f->set, c.v[i].id, c.v[i].seq, c.v[i].rm,
		    c.recs.p + c.v[i].off, c.v[i].len);
		if (r < 0)
			goto out;
		applied += (size_t)r;
	}
	/* The pinned entries' requests over now; this round's to carry. */
	for (size_t i = 0; i < f->npins; i++)
		if (!f->pins[i].done && pend_over(&c, f->pins[i].txn,
		    f->pins[i].dl, now))
			f->pins[i].done = true;
	struct cats_buf carry = { 0 }, cval = { 0 };
	size_t ncarry = 0;
	json_t **q = NULL;
	struct etcd_resp *rs = NULL;
	for (size_t i = 0; i < c.np; i++) {
		if (pend_over(&c, c.p[i].txn, c.p[i].dl, now))
			continue;
		if (cats_buf_add(&carry, c.recs.p + c.p[i].off, c.p[i].len) < 0)
			goto done;
		c.p[ncarry++] = c.p[i];
	}
	/* The chunks of the buckets changed, each bucket's in one txn. */
	bs = ha_fold_buckets(&f->set, true, &nb);
	nparts = nb ? calloc(nb, sizeof(*nparts)) : NULL;
	if ((bs == NULL || nparts == NULL) && nb > 0)
		goto done;
	for (size_t i = 0; i < nb; i++) {
		uint64_t bseq = bs[i]->seq > seq ? bs[i]->seq : seq;
		if ((nparts[i] = pack_bucket(h, &pk, bs[i], bseq)) < 0)
			goto done;
		nch += (size_t)nparts[i];
	}
	/*
	 * The last txn: the entries' deletion, the pinned entries over, the
	 * next id, the carried, the old keys; with the last of the chunks
	 * when they fit (a fold is then one txn, all or nothing).
	 */
	size_t nfin = k + (next != 0) + (ncarry > 0) + f->migrate;
	for (size_t i = 0; i < f->npins; i++) {
		bool all = true;
		size_t j = i;
		for (; j < f->npins && f->pins[j].seq == f->pins[i].seq; j++)
			all = all && f->pins[j].done;
		nfin += all;
		i = j - 1;
	}
	if (nfin > 0 && pack_room(&pk, nfin, 0) < 0)
		goto done;
	for (size_t i = 0; i < k; i++) {
		lkey_of(h, e[i].seq, key, sizeof(key));
		pack_add(&pk, etcd_op_delete(key, strlen(key), NULL, 0));
	}
	for (size_t i = 0; i < f->npins; i++) {
		bool all = true;
		size_t j = i;
		for (; j < f->npins && f->pins[j].seq == f->pins[i].seq; j++)
			all = all && f->pins[j].done;
		if (all) {
			lkey_of(h, f->pins[i].seq, key, sizeof(key));
			pack_add(&pk, etcd_op_delete(key, strlen(key), NULL, 0));
		}
		i = j - 1;
	}
	if (next != 0) {
		char v[24];
		key_of(h, "next", key, sizeof(key));
		snprintf(v, sizeof(v), "%" PRIu64, next);
		pack_add(&pk, etcd_op_put(key, strlen(key), v, strlen(v), 0));
	}
	if (ncarry > 0) {
		cseq = __atomic_fetch_add(&h->seq, 1, __ATOMIC_RELAXED);
		if (ha_log_seal(&cval, cseq, 0, ncarry, carry.p, carry.len,
		    true) < 0)
			goto done;
		lkey_of(h, cseq, key, sizeof(key));
		pack_add(&pk, etcd_op_put(key, strlen(key), cval.p, cval.len,
		    0));
	}
	if (f->migrate) {
		uint8_t end[512];
		key_of(h, "b/", key, sizeof(key));
		size_t el = etcd_prefix_end(key, strlen(key), end);
		pack_add(&pk, etcd_op_delete(key, strlen(key), end, el));
	}
	if (pk.nq == 0) {
		rc = 0;
		goto done;
	}
	size_t ntx = pk.nq;
	q = calloc(ntx, sizeof(*q));
	rs = calloc(ntx, sizeof(*rs));
	if (q == NULL || rs == NULL)
		goto done;
	for (size_t t = 0; t < ntx; t++) {
		q[t] = fenced_txn(h, pk.q[t]);
		pk.q[t] = NULL;
	}
	uint64_t before = etcd_stats(f->e)->bytes_out;
	bool fenced = false;
	/* The chunks first (in parallel), the log's deletion last. */
	if (ntx > 1 && (etcd_call_many(f->e, ETCD_TXN, q, ntx - 1, rs, err,
	    sizeof(err)) < 0 || check_txns(rs, ntx - 1, &fenced, err,
	    sizeof(err)) < 0))
		goto sent;
	if (etcd_call(f->e, ETCD_TXN, q[ntx - 1], &rs[ntx - 1], err,
	    sizeof(err)) < 0 || check_txns(&rs[ntx - 1], 1, &fenced, err,
	    sizeof(err)) < 0)
		goto sent;
	rc = 0;
sent:
	if (fenced)
		rc = -2;
	pthread_mutex_lock(&f->mu);
	f->bytes += etcd_stats(f->e)->bytes_out - before;
	f->txns += ntx;
	if (rc == 0) {
		f->rounds++;
		f->folded += applied;
		f->carried += ncarry;
		f->chunks += nch;
	} else {
		f->failures++;
	}
	pthread_mutex_unlock(&f->mu);
	if (rc == 0) {
		if (seq > f->through)
			f->through = seq;
		f->migrate = false;
		for (size_t i = 0; i < nb; i++) {
			uint64_t bseq = bs[i]->seq > seq ? bs[i]->seq : seq;
			ha_fold_written(&f->set, bs[i], bseq,
			    (uint32_t)nparts[i]);
			if (bs[i]->live == 0)
				tomb_add(f, bs[i]->b, now);
		}
		/* The pins deleted go; the carried come. */
		size_t o = 0;
		for (size_t i = 0; i < f->npins;) {
			bool all = true;
			size_t j = i;
			for (; j < f->npins && f->pins[j].seq == f->pins[i].seq;
			    j++)
				all = all && f->pins[j].done;
			for (; !all && i < j; i++)
				f->pins[o++] = f->pins[i];
			i = j;
		}
		f->npins = o;
		struct pin *pv = ncarry ? realloc(f->pins, (o + ncarry) *
		    sizeof(*pv)) : f->pins;
		if (pv != NULL) {
			f->pins = pv;
			for (size_t i = 0; i < ncarry; i++)
				f->pins[f->npins++] = (struct pin){ cseq,
					c.p[i].txn, c.p[i].dl, false };
		}
	}
done:
	for (size_t t = 0; q != NULL && t < pk.nq; t++)
		json_decref(q[t]);
	for (size_t t = 0; t < pk.nq; t++)
		json_decref(pk.q[t]);
	for (size_t t = 0; rs != NULL && t < pk.nq; t++)
		etcd_resp_free(&rs[t]);
	free(pk.q);
	free(q);
	free(rs);
	free(bs);
	free(nparts);
	cats_buf_free(&cval);
	cats_buf_free(&carry);
out:
	free(c.v);
	free(c.p);
	free(c.btxn);
	cats_buf_free(&c.recs);
	cats_buf_free(&c.raw);
	return rc;
}

/* Has a pinned entry's request passed its deadline (a round to do)? */
static bool
pins_due(const struct fold *f, uint64_t now)
{
	for (size_t i = 0; i < f->npins; i++)
		if (!f->pins[i].done && f->pins[i].dl <= now)
			return true;
	return false;
}

/*
 * Delete the chunks of the buckets written empty TOMB_MS ago and empty
 * still, up to a txn's worth, under the fence; the buckets go from the
 * set (what they held up to their chunk's seq is folded: nothing older
 * comes).  0 (done, or tried again later), -2 fenced.
 */
static int
tomb_gc(struct ha *h)
{
	struct fold *f = &h->f;
	uint64_t now = h->c.clock();
	char key[512], end[512], err[256];
	size_t n = 0;
	if (f->tomb0 == f->ntombs || now - f->tombs[f->tomb0].at < TOMB_MS)
		return 0;
	json_t *succ = json_array();
	uint64_t *gone = calloc(TXN_OPS, sizeof(*gone));
	size_t ng = 0;
	if (gone == NULL) {
		json_decref(succ);
		return 0;
	}
	while (f->tomb0 + n < f->ntombs && n < TXN_OPS &&
	    now - f->tombs[f->tomb0 + n].at >= TOMB_MS) {
		uint64_t b = f->tombs[f->tomb0 + n].id;
		const struct ha_bucket *k = ha_fold_bucket(&f->set, b);
		n++;
		if (k == NULL || k->live > 0 || k->dirty)
			continue;
		size_t kl = ckey_of(h, ha_bucket_lo(b), key, sizeof(key));
		size_t el = ckey_of(h, ha_bucket_hi(b), end, sizeof(end));
		json_array_append_new(succ, etcd_op_delete(key, kl, end, el));
		gone[ng++] = b;
	}
	if (ng == 0) {
		json_decref(succ);
		free(gone);
		f->tomb0 += n;
		return 0;
	}
	if (call_on(f->e, &f->r, ETCD_TXN, fenced_txn(h, succ), err,
	    sizeof(err)) < 0) {
		free(gone);
		pthread_mutex_lock(&f->mu);
		f->failures++;
		pthread_mutex_unlock(&f->mu);
		return 0;
	}
	if (!f->r.succeeded) {
		free(gone);
		return -2;
	}
	for (size_t i = 0; i < ng; i++)
		ha_fold_drop(&f->set, gone[i]);
	free(gone);
	f->tomb0 += n;
	pthread_mutex_lock(&f->mu);
	f->tombs_deleted += ng;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

/*
 * The fold's loop: a round when the commits have been quiet a moment or
 * the queue is long, the tombstones' deletion when due, until stopped or
 * fenced (then ha_commit_begin() and ha_tick() end the ownership).
 */
static void *
fold_run(void *arg)
{
	struct ha *h = arg;
	struct fold *f = &h->f;
	struct cats_dec d;
	uint64_t retry_at = 0;
	cats_dec_init(&d, NULL);
	pthread_mutex_lock(&f->mu);
	while (!f->stop && !f->fenced) {
		uint64_t now = h->c.clock();
		size_t k = 0, recs = 0;
		if (f->nq > 0 && now >= retry_at && (f->qrecs >= FOLD_HIGH ||
		    now - f->last_in >= FOLD_IDLE_MS))
			while (k < f->nq && k < FOLD_ENTRIES && (k == 0 ||
			    recs + f->q[k].nrec <= FOLD_ROUND))
				recs += f->q[k++].nrec;
		/* The head is the fold's alone: the loop appends. */
		struct lent *head = k ? malloc(k * sizeof(*head)) : NULL;
		if (head != NULL)
			memcpy(head, f->q, k * sizeof(*head));
		/* A round of no entries: pinned requests over, or the old
		 * keys to fold into chunks. */
		bool pins = k == 0 && now >= retry_at && (pins_due(f, now) ||
		    f->migrate);
		pthread_mutex_unlock(&f->mu);
		int rc = head != NULL || pins ? fold_write(h, &d, head,
		    head != NULL ? k : 0) : 0;
		if (rc == 0 && tomb_gc(h) == -2)
			rc = -2;
		pthread_mutex_lock(&f->mu);
		if (head != NULL && rc == 0) {
			for (size_t i = 0; i < k; i++)
				free(f->q[i].v);
			memmove(f->q, f->q + k, (f->nq - k) * sizeof(*f->q));
			f->nq -= k;
			f->qrecs -= recs;
		}
		free(head);
		if (rc == -2) {
			f->fenced = true;
			break;
		}
		if (rc == -1)
			retry_at = h->c.clock() + 100;
		if (rc == 0 && head != NULL)
			continue;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += FOLD_IDLE_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!f->stop)
			pthread_cond_timedwait(&f->cv, &f->mu, &ts);
	}
	pthread_mutex_unlock(&f->mu);
	cats_dec_free(&d);
	return NULL;
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
	return fold_fenced(h, err, errlen) ? -1 : 0;
}
