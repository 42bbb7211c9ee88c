/*
 * select.c - request validation, CS-ID resolution, candidate eligibility,
 * joint selection, fallbacks and the decision record.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bucket.h"
#include "base/clock.h"
#include "base/htab.h"
#include "base/log.h"
#include "select/select.h"

const char *const cats_sel_code_names[] = { "ok", "malformed-request",
	"unauthenticated", "unauthorized", "replay", "stale-generation",
	"deadline-expired", "rate-limited", "tenant-mismatch",
	"unresolved-service", "unknown-cs-id", "ambiguous-address",
	"cs-id-conflict", "dataplane-mismatch", "no-candidate",
	"no-eligible-candidate", "no-reachable-egress", "stale-data", NULL };
const char *const cats_rej_names[] = { "ok", "unauthorized", "incomplete",
	"cst-stale", "unhealthy", "gas-zero", "max-comp", "max-price",
	"min-reputation", "min-security", "unreachable", "nst-stale",
	"max-delay", "min-bw", "max-hops", "missing-metric", NULL };
const char *const cats_precedence_names[] = { "reject", "explicit", "address",
	NULL };

/* Forwarders and rate-limit keys tracked at most. */
#define MAX_TRACKED 65536

struct fwd {
	char *id;
	uint64_t h;		/* cats_hash_str(id) */
	bool configured;
	bool has_uid;
	uint32_t uid;
	char **tenants;
	size_t ntenants;
	/* Transactions seen, per generation (crypto.h's sliding window). */
	struct cats_seqwin txns;
};

/* The admission bucket of one tenant or client address. */
struct kbucket {
	struct cats_bucket b;
	char key[];
};

struct cand {
	struct cats_cst_entry *e;
	uint64_t lat_us;	/* UINT64_MAX: unknown */
	uint64_t gas, price;	/* copies: ranking touches no entry */
};

/*
 * The eligibility cache: the eligible candidates of a (service, headend,
 * constraints) with their latency, and the rejection counts, valid while
 * the catalogue, the CS-ID's CST generation and the NST generation stay and
 * until the earliest soft-state expiry among what was evaluated.  Ranking
 * (seeded per request) runs on every request; only the per-candidate
 * eligibility and NST work is reused.  For p2c-gas every eligible candidate
 * is kept, in order; for the other policies only those that rank first (see
 * front_rank), the only ones that can win, and one of them is kept in the
 * entry itself.  At most cache_max entries and
 * ECACHE_CANDS candidates in all: a new key in a full cache evicts entries
 * at pseudo-random slots.
 */
#define ECACHE_MAX 65536
/* Candidates held by the whole cache at most (32 bytes each). */
#define ECACHE_CANDS (2u << 20)

/* The constraint fields eligibility reads. */
#define ELIG_CON ((UINT64_C(1) << CATS_CON_max_delay_us) | \
	(UINT64_C(1) << CATS_CON_max_comp_ms) | \
	(UINT64_C(1) << CATS_CON_max_price) | \
	(UINT64_C(1) << CATS_CON_min_reputation) | \
	(UINT64_C(1) << CATS_CON_min_security) | \
	(UINT64_C(1) << CATS_CON_min_bw) | (UINT64_C(1) << CATS_CON_max_hops))

/*
 * The headend is its forwarder's entry (one per ingress id, kept until
 * cats_sel_free), so that a key is a few words to hash and compare.
 */
struct ekey {
	const struct cats_svc *svc;
	const struct fwd *headend;
	uint64_t own;		/* 1: the request brought constraints */
	uint64_t has;
	uint64_t v[7];
};

struct eslot {
	struct ekey k;
	uint64_t memo_epoch, bgen, ngen, until;
	int furthest;
	uint32_t rej[CATS_REJ__N];
	size_t n;		/* eligible candidates */
	size_t ntop;		/* how many rank first (front_rank) */
	uint64_t gas;		/* the GAS of the eligible, for p2c-gas */
	size_t kept;		/* the first kept of them, in top or v */
	struct cand top;	/* the one kept, when kept is 1 */
	struct cand *v;
	size_t cap;
};

struct cats_sel {
	struct cats_sel_conf conf;
	const struct cats_svc_cat *cat;
	const struct cats_cst *cst;
	const struct cats_nst *nst;
	struct cats_htab fwds;
	size_t nfwds;
	struct cats_bucket global;	/* set up at the first request */
	bool global_init;
	struct cats_htab tenants, clients;
	struct cand *cands;
	size_t ncap;
	/* Authorization memo: valid while the catalogue and its gen stay. */
	const struct cats_svc_cat *memo_cat;
	uint64_t memo_gen, memo_epoch;
	struct cats_htab cache;
	size_t cached;		/* candidates held by the cache */
	uint64_t evict;
	struct cats_sel_counters c;
};

void
cats_sel_conf_init(struct cats_sel_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->precedence = CATS_PREC_REJECT;
	c->policy = CATS_POL_MIN_LATENCY;
	c->dataplane = CATS_DP_IP;
	c->window_ms = 30000;
}

/* Uniform in [0, n) (n > 0), by multiply-shift. */
static uint64_t
rng_below(uint64_t *st, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)cats_rand_next(st) * n) >> 64);
}

static bool
eq_fwd(const void *item, const void *key)
{
	return strcmp(((const struct fwd *)item)->id, key) == 0;
}

static bool
eq_kb(const void *item, const void *key)
{
	return strcmp(((const struct kbucket *)item)->key, key) == 0;
}

struct cats_sel *
cats_sel_new(const struct cats_sel_conf *conf, const struct cats_svc_cat *cat,
    const struct cats_cst *cst, const struct cats_nst *nst)
{
	struct cats_sel *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->conf = *conf;
	s->cat = cat;
	s->cst = cst;
	s->nst = nst;
	return s;
}

static void
free_fwd(struct fwd *f)
{
	for (size_t i = 0; i < f->ntenants; i++)
		free(f->tenants[i]);
	free(f->tenants);
	free(f->id);
	free(f);
}

static void
free_kb(struct cats_htab *t)
{
	for (size_t i = 0; i < t->cap; i++)
		if (t->s[i].h)
			free(t->s[i].item);
	cats_htab_free(t);
}

void
cats_sel_free(struct cats_sel *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->fwds.cap; i++)
		if (s->fwds.s[i].h)
			free_fwd(s->fwds.s[i].item);
	cats_htab_free(&s->fwds);
	free_kb(&s->tenants);
	free_kb(&s->clients);
	free(s->cands);
	for (size_t i = 0; i < s->cache.cap; i++) {
		if (s->cache.s[i].h) {
			struct eslot *e = s->cache.s[i].item;
			free(e->v);
			free(e);
		}
	}
	cats_htab_free(&s->cache);
	free(s);
}

void
cats_sel_set_catalogue(struct cats_sel *s, const struct cats_svc_cat *cat)
{
	s->cat = cat;
}

const struct cats_sel_counters *
cats_sel_counters(const struct cats_sel *s)
{
	return &s->c;
}

static struct fwd *
get_fwd(struct cats_sel *s, const char *id, bool create)
{
	uint64_t h = cats_hash_str(id);
	struct fwd *f = cats_htab_get(&s->fwds, h, eq_fwd, id);
	if (f != NULL || !create || s->nfwds >= MAX_TRACKED)
		return f;
	if ((f = calloc(1, sizeof(*f))) == NULL ||
	    (f->id = strdup(id)) == NULL || cats_htab_put(&s->fwds, h, f) < 0) {
		if (f)
			free(f->id);
		free(f);
		return NULL;
	}
	f->h = h;
	s->nfwds++;
	return f;
}

int
cats_sel_forwarder(struct cats_sel *s, const char *id, bool has_uid,
    uint32_t uid, const char *const *tenants, size_t ntenants)
{
	struct fwd *f = get_fwd(s, id, true);
	if (f == NULL)
		return -1;
	f->configured = true;
	f->has_uid = has_uid;
	f->uid = uid;
	for (size_t i = 0; i < ntenants; i++) {
		char **v = realloc(f->tenants, (f->ntenants + 1) * sizeof(*v));
		if (v == NULL)
			return -1;
		f->tenants = v;
		if ((v[f->ntenants] = strdup(tenants[i])) == NULL)
			return -1;
		f->ntenants++;
	}
	return 0;
}

/* ---- answers ---- */

/* Cut s back to whole UTF-8 characters (after a truncating printf). */
static void
utf8_trim(char *s)
{
	size_t n = strlen(s);
	size_t i = n;
	while (i > 0 && ((uint8_t)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0)
		return;
	uint8_t lead = (uint8_t)s[i - 1];
	size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 :
	    lead >= 0xc0 ? 2 : 1;
	if (n - (i - 1) < want)
		s[i - 1] = '\0';
}

static int fail(struct cats_sel *s, struct cats_sel_out *out,
    const struct cats_request *rq, uint64_t now, int code, const char *field,
    const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static int
fail(struct cats_sel *s, struct cats_sel_out *out,
    const struct cats_request *rq, uint64_t now, int code, const char *field,
    const char *fmt, ...)
{
	va_list ap;
	out->code = code;
	s->c.fail[code]++;
	va_start(ap, fmt);
	vsnprintf(out->msg, sizeof(out->msg), fmt, ap);
	va_end(ap);
	utf8_trim(out->msg);
	cats_rec_error_init(&out->rec, cats_sel_code_names[code], "cats-select",
	    rq != NULL ? rq->txn : 0, now, out->msg);
	if (field != NULL) {
		cats_strlcpy(out->field, field, sizeof(out->field));
		out->rec.u.error.field = out->field;
	}
	if (rq != NULL && out->routable)
		cats_rec_error_route(&out->rec, rq->ingress, &rq->flow);
	return code;
}

void
cats_sel_malformed(struct cats_sel *s, const struct cats_err *e,
    uint64_t index, bool has_txn, uint64_t txn, uint64_t now,
    struct cats_sel_out *out)
{
	struct cats_request rq;
	memset(&rq, 0, sizeof(rq));
	rq.txn = txn;
	out->routable = false;
	out->fallback = false;
	s->c.requests++;
	fail(s, out, has_txn ? &rq : NULL, now, CATS_SEL_MALFORMED,
	    e->field[0] ? e->field : NULL, "%s", e->reason);
	CATS_SET(&out->rec.u.error, ERR, index, index);
}

/* ---- admission ---- */

/* Is the bucket full again (idle)? */
static bool
kb_idle(const void *item, void *arg)
{
	const struct kbucket *k = item;
	const uint64_t *now = arg;
	return cats_bucket_full(&k->b, *now);
}

/*
 * Forget the keys whose buckets are full again (idle), in one pass over
 * the table (rescanning it from the start after each removal made a full
 * table of idle keys quadratic).
 */
static void
sweep(struct cats_htab *t, uint64_t now)
{
	size_t n;
	void **v = cats_htab_select(t, kb_idle, &now, &n);
	for (size_t i = 0; i < n; i++) {
		struct kbucket *k = v[i];
		cats_htab_del(t, cats_hash_str(k->key), eq_kb, k->key);
		free(k);
	}
	free(v);
}

static bool
take_keyed(struct cats_htab *t, const char *key, const struct cats_rate *r,
    uint64_t now)
{
	uint64_t h = cats_hash_str(key);
	struct kbucket *k = cats_htab_get(t, h, eq_kb, key);
	if (k == NULL) {
		if (t->n >= MAX_TRACKED)
			sweep(t, now);
		if (t->n >= MAX_TRACKED)
			return false;
		size_t n = strlen(key);
		if ((k = calloc(1, sizeof(*k) + n + 1)) == NULL)
			return false;
		memcpy(k->key, key, n + 1);
		cats_bucket_init(&k->b, r->per_s, r->burst, now);
		if (cats_htab_put(t, h, k) < 0) {
			free(k);
			return false;
		}
	}
	return cats_bucket_take(&k->b, 1, now);
}

/* ---- request checks ---- */

/* f: the forwarder of the request's ingress if it is known, else NULL. */
static int
check_auth(struct cats_sel *s, const struct cats_rec *r, const struct fwd *f,
    const struct cats_sel_origin *o, struct cats_sel_out *out,
    uint64_t now)
{
	const struct cats_request *rq = &r->u.request;
	if (r->auth.alg != CATS_ALG_NONE) {
		const struct cats_key *who = NULL;
		struct cats_err e;
		if (s->conf.keys == NULL || s->conf.keys->n == 0) {
			if (s->conf.insecure)
				return CATS_SEL_OK;
			return fail(s, out, rq, now, CATS_SEL_UNAUTHENTICATED,
			    "auth", "no forwarder keys are configured");
		}
		if (cats_rec_verify(r, s->conf.keys, &who, &e) < 0)
			return fail(s, out, rq, now, CATS_SEL_UNAUTHENTICATED,
			    "auth", "%s", e.reason);
		if (strcmp(who->name, rq->ingress) != 0)
			return fail(s, out, rq, now, CATS_SEL_UNAUTHORIZED,
			    "ingress", "the key of \"%s\" speaks for \"%s\"",
			    who->name, rq->ingress);
		return CATS_SEL_OK;
	}
	if (o != NULL && o->peercred && f != NULL && f->has_uid) {
		if (f->uid == o->uid)
			return CATS_SEL_OK;
		if (!s->conf.insecure)
			return fail(s, out, rq, now, CATS_SEL_UNAUTHENTICATED,
			    "ingress", "peer uid %" PRIu32 " is not the uid of "
			    "forwarder \"%s\"", o->uid, rq->ingress);
	}
	if (s->conf.insecure)
		return CATS_SEL_OK;
	return fail(s, out, rq, now, CATS_SEL_UNAUTHENTICATED, "auth",
	    "the request carries no MAC%s", o != NULL && o->peercred ?
	    " and the peer is not a configured forwarder uid" : "");
}

/* ---- constraints ---- */

#define BIT(P, f) (UINT64_C(1) << CATS_##P##_##f)

/* dst ∪= src (elements of esz bytes, eq decides a repeat): -1 when the
 * union would pass cap. */
static int
union_into(void *dst, size_t esz, size_t cap, size_t *n, const void *src,
    size_t sn, bool (*eq)(const void *, const void *))
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	for (size_t i = 0; i < sn; i++) {
		bool dup = false;
		for (size_t k = 0; k < *n && !dup; k++)
			dup = eq(d + k * esz, s + i * esz);
		if (dup)
			continue;
		if (*n == cap)
			return -1;
		memcpy(d + (*n)++ * esz, s + i * esz, esz);
	}
	return 0;
}

static bool
eq_text(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b) == 0;
}

static bool
eq_u64(const void *a, const void *b)
{
	return *(const uint64_t *)a == *(const uint64_t *)b;
}

/*
 * The effective constraints: the service's, tightened by the request's.
 * A request can lower a maximum, raise a minimum, add exclusions and admin
 * groups; it cannot loosen anything.  Returns the field that overflowed, or
 * NULL.
 */
static const char *
merge_constraints(const struct cats_constraints *sv, bool has_sv,
    const struct cats_constraints *rq, bool has_rq, struct cats_sel_out *out,
    struct cats_constraints *o)
{
	static const struct cats_constraints none;
	if (!has_sv)
		sv = &none;
	if (!has_rq)
		rq = &none;
	memset(o, 0, sizeof(*o));
#define MAXF(f) \
	if (CATS_HAS(sv, CON, f) && CATS_HAS(rq, CON, f)) \
		CATS_SET(o, CON, f, sv->f < rq->f ? sv->f : rq->f); \
	else if (CATS_HAS(sv, CON, f)) CATS_SET(o, CON, f, sv->f); \
	else if (CATS_HAS(rq, CON, f)) CATS_SET(o, CON, f, rq->f);
#define MINF(f) \
	if (CATS_HAS(sv, CON, f) && CATS_HAS(rq, CON, f)) \
		CATS_SET(o, CON, f, sv->f > rq->f ? sv->f : rq->f); \
	else if (CATS_HAS(sv, CON, f)) CATS_SET(o, CON, f, sv->f); \
	else if (CATS_HAS(rq, CON, f)) CATS_SET(o, CON, f, rq->f);
#define ORF(f) \
	if (CATS_HAS(sv, CON, f) || CATS_HAS(rq, CON, f)) \
		CATS_SET(o, CON, f, (CATS_HAS(sv, CON, f) ? sv->f : 0) | \
		    (CATS_HAS(rq, CON, f) ? rq->f : 0));
	MAXF(max_delay_us)
	MAXF(max_comp_ms)
	MAXF(max_price)
	MINF(min_reputation)
	MINF(min_security)
	MINF(min_bw)
	MAXF(max_hops)
	ORF(include_all)
	ORF(exclude_any)
#undef MAXF
#undef MINF
#undef ORF
	/* A link must carry a group of each include_any set: their meet. */
	if (CATS_HAS(sv, CON, include_any) && CATS_HAS(rq, CON, include_any))
		CATS_SET(o, CON, include_any,
		    sv->include_any & rq->include_any);
	else if (CATS_HAS(sv, CON, include_any))
		CATS_SET(o, CON, include_any, sv->include_any);
	else if (CATS_HAS(rq, CON, include_any))
		CATS_SET(o, CON, include_any, rq->include_any);
	/* The service's metric choice stands; else the client's. */
	if (CATS_HAS(sv, CON, metric))
		CATS_SET(o, CON, metric, sv->metric);
	else if (CATS_HAS(rq, CON, metric))
		CATS_SET(o, CON, metric, rq->metric);
	/* Exclusions: the union of both sides, capped at 64 each. */
#define XUNION(eq, buf, f)						\
	do {								\
		size_t n_ = 0;						\
		if (union_into(out->buf, sizeof(out->buf[0]), 64, &n_,	\
		    sv->f.v, sv->f.n, eq) < 0 ||			\
		    union_into(out->buf, sizeof(out->buf[0]), 64, &n_,	\
		    rq->f.v, rq->f.n, eq) < 0)				\
			return "constraints." #f;			\
		o->f.v = out->buf;					\
		o->f.n = n_;						\
	} while (0)
	XUNION(eq_text, xnodes, exclude_nodes);
	XUNION(eq_text, xlinks, exclude_links);
	XUNION(eq_u64, xsrlgs, exclude_srlgs);
#undef XUNION
	return NULL;
}

/* ---- eligibility and ranking ---- */

struct rctx {
	struct cats_sel *s;
	const struct cats_request *rq;
	const struct cats_svc *svc;
	int policy;
	struct cats_constraints con;
	uint64_t now;
	uint64_t seed;
	uint64_t memo_tag;
	const struct fwd *fwd;	/* the forwarder of rq->ingress */
	uint64_t until;		/* earliest soft-state change seen by eval */
	struct cats_sel_out *out;
};

struct eopts {
	uint64_t stale_ms;	/* tolerated age past expiry (stale:) */
	uint64_t relax;		/* computing constraints dropped (relax:) */
	const char *only;	/* this CSCI-ID only, leniently (csci:) */
	bool count;		/* count rejections (the first pass only) */
};

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

#define EHAS(e, f) (((e)->has >> CATS_ENT_##f) & 1)

/*
 * Eligibility of a candidate, in two halves: eval_cst runs the checks on the
 * entry, up to min-security; eval_net, for an entry that passed them, those
 * on the NST view of its path (p, as cats_nst_lookup gives it; NULL when
 * the site is at the ingress itself).
 */
static int
eval_cst(struct rctx *c, struct cats_cst_entry *e, const struct eopts *o)
{
	const struct cats_constraints *k = &c->con;
	bool lenient = o->only != NULL;
	if ((e->memo & ~UINT64_C(1)) != c->memo_tag)
		e->memo = c->memo_tag |
		    cats_svc_authorized(c->svc, e->csci_id, e->site);
	if (!(e->memo & 1))
		return CATS_REJ_UNAUTHORIZED;
	if (e->locator.af == 0 || e->egress == NULL)
		return CATS_REJ_INCOMPLETE;
	if (!lenient && c->now >= sat_add(e->expires, o->stale_ms))
		return CATS_REJ_CST_STALE;
	if (e->expires < c->until)
		c->until = e->expires;
	if (!EHAS(e, health) || (e->health != CATS_HEALTHY &&
	    e->health != CATS_DEGRADED))
		return CATS_REJ_UNHEALTHY;
	if (EHAS(e, state) && (e->state == CATS_SCI_FAILED ||
	    e->state == CATS_SCI_STALE))
		return CATS_REJ_UNHEALTHY;
	if (!lenient) {
		if (!EHAS(e, gas) || e->gas == 0)
			return CATS_REJ_GAS_ZERO;
		uint64_t on = k->has & ~o->relax;
		if (((on >> CATS_CON_max_comp_ms) & 1) &&
		    (!EHAS(e, comp_time_ms) ||
		    e->comp_time_ms > k->max_comp_ms))
			return CATS_REJ_MAX_COMP;
		if (((on >> CATS_CON_max_price) & 1) &&
		    (!EHAS(e, price) || e->price > k->max_price))
			return CATS_REJ_MAX_PRICE;
		if (((on >> CATS_CON_min_reputation) & 1) &&
		    (!EHAS(e, reputation) || e->reputation < k->min_reputation))
			return CATS_REJ_MIN_REPUTATION;
		if (((on >> CATS_CON_min_security) & 1) &&
		    (!EHAS(e, security_level) ||
		    e->security_level < k->min_security))
			return CATS_REJ_MIN_SECURITY;
	}
	return CATS_REJ_OK;
}

/* Does the candidate's site hang off the ingress itself (no network leg)? */
static bool
at_ingress(const struct rctx *c, const struct cats_cst_entry *e)
{
	return e->egress_h == c->fwd->h && strcmp(e->egress, c->fwd->id) == 0;
}

static int
eval_net(struct rctx *c, struct cats_cst_entry *e, const struct eopts *o,
    struct cats_nst_path *p, struct cand *cd)
{
	const struct cats_constraints *k = &c->con;
	bool lenient = o->only != NULL;
	struct cats_nst_path here;
	if (p == NULL) {
		/* No network leg: no delay, no hops. */
		p = &here;
		memset(p, 0, sizeof(*p));
		p->status = CATS_NST_OK;
		p->has_delay = p->has_hops = true;
	} else {
		int st = p->status;
		if ((st == CATS_NST_OK || st == CATS_NST_DOWN) &&
		    p->expires < c->until)
			c->until = p->expires;
		if (st == CATS_NST_UNKNOWN || st == CATS_NST_DOWN)
			return CATS_REJ_UNREACHABLE;
		if (st == CATS_NST_STALE) {
			if (lenient ||
			    c->now >= sat_add(p->expires, o->stale_ms))
				return CATS_REJ_NST_STALE;
			if (!p->up)
				return CATS_REJ_UNREACHABLE;
		}
	}
	if (CATS_HAS(k, CON, max_delay_us) &&
	    (!p->has_delay || p->delay_us > k->max_delay_us))
		return CATS_REJ_MAX_DELAY;
	if (CATS_HAS(k, CON, min_bw) && p->has_bw &&
	    p->avail_bw < k->min_bw)
		return CATS_REJ_MIN_BW;
	if (CATS_HAS(k, CON, max_hops) && p->has_hops &&
	    p->hops > k->max_hops)
		return CATS_REJ_MAX_HOPS;
	cd->e = e;
	cd->gas = e->gas;
	cd->price = e->price;
	cd->lat_us = p->has_delay && EHAS(e, comp_time_ms) ?
	    p->delay_us + e->comp_time_ms * 1000 : UINT64_MAX;
	if (!lenient) {
		if (c->policy == CATS_POL_CHEAPEST && !EHAS(e, price))
			return CATS_REJ_METRIC;
		if (c->policy != CATS_POL_CHEAPEST && cd->lat_us == UINT64_MAX)
			return CATS_REJ_METRIC;
	}
	return CATS_REJ_OK;
}

static uint64_t
tie_key(const struct rctx *c, const struct cand *cd)
{
	return cats_mix64(c->seed ^ cats_fnv1a(cd->e->csci_id));
}

/* Is a better than b: lower latency, then more GAS, then the lower key. */
static bool
better_lat(const struct rctx *c, const struct cand *a, const struct cand *b)
{
	if (a->lat_us != b->lat_us)
		return a->lat_us < b->lat_us;
	if (a->gas != b->gas)
		return a->gas > b->gas;
	return tie_key(c, a) < tie_key(c, b);
}

/*
 * Two GAS-weighted draws without replacement (total: the GAS of v); the
 * better of the two.
 */
static size_t
pick_p2c(const struct rctx *c, const struct cand *v, size_t n, uint64_t total)
{
	if (n == 1)
		return 0;
	uint64_t st = c->seed;
	uint64_t r = rng_below(&st, total);
	size_t a = 0;
	while (r >= v[a].gas)
		r -= v[a++].gas;
	r = rng_below(&st, total - v[a].gas);
	size_t b = 0;
	for (;; b++) {
		if (b == a)
			continue;
		if (r < v[b].gas)
			break;
		r -= v[b].gas;
	}
	return better_lat(c, &v[b], &v[a]) ? b : a;
}

/*
 * The ranking of a pass, without the seeded tie-break: latency then more
 * GAS (RANK_LAT), price first (RANK_PRICE), or draws (RANK_P2C).
 */
enum { RANK_LAT, RANK_PRICE, RANK_P2C };

static int
rank_of(const struct rctx *c, const struct eopts *o)
{
	if (o->only != NULL)
		return RANK_LAT;
	return c->policy == CATS_POL_P2C_GAS ? RANK_P2C :
	    c->policy == CATS_POL_CHEAPEST ? RANK_PRICE : RANK_LAT;
}

/* Is a ranked before b (RANK_LAT or RANK_PRICE), the tie-break aside? */
static bool
ranks_before(int rank, const struct cand *a, const struct cand *b)
{
	if (rank == RANK_PRICE && a->price != b->price)
		return a->price < b->price;
	if (a->lat_us != b->lat_us)
		return a->lat_us < b->lat_us;
	return a->gas > b->gas;
}

/*
 * The candidates that rank first (the tie-break aside) moved to the front
 * of v, in their order; returns how many.  Only they can win: the first
 * with the lowest tie key among them is the best of v (for RANK_LAT the one
 * better_lat prefers; for RANK_PRICE the lower price first).  For RANK_P2C
 * nothing moves: the draws walk v in its order.
 */
static size_t
front_rank(int rank, struct cand *v, size_t n)
{
	if (rank == RANK_P2C || n == 0)
		return n;
	size_t best = 0;
	for (size_t i = 1; i < n; i++)
		if (ranks_before(rank, &v[i], &v[best]))
			best = i;
	struct cand top = v[best];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (ranks_before(rank, &top, &v[i]))
			continue;
		struct cand t = v[k];
		v[k++] = v[i];
		v[i] = t;
	}
	return k;
}

static int
reason_code(int furthest)
{
	switch (furthest) {
	case CATS_REJ_OK:
		return CATS_SEL_NO_CANDIDATE;
	case CATS_REJ_CST_STALE:
	case CATS_REJ_NST_STALE:
		return CATS_SEL_STALE;
	case CATS_REJ_UNREACHABLE:
		return CATS_SEL_NO_REACHABLE;
	default:
		return CATS_SEL_NO_ELIGIBLE;
	}
}

/*
 * The key of the request's eligibility and its hash.  Without constraints
 * of its own the key is the pair (service, forwarder), both configured or
 * authenticated, and its hash joins their names' (keyed) hashes; values a
 * request brings are hashed whole.
 */
static uint64_t
ekey_make(const struct rctx *c, struct ekey *k)
{
	const struct cats_constraints *x = &c->con;
	memset(k, 0, sizeof(*k));
	k->svc = c->svc;
	k->headend = c->fwd;
	k->own = CATS_HAS(c->rq, REQ, constraints);
	k->has = x->has & ELIG_CON;
#define K(i, f) if (CATS_HAS(x, CON, f)) k->v[i] = x->f;
	K(0, max_delay_us)
	K(1, max_comp_ms)
	K(2, max_price)
	K(3, min_reputation)
	K(4, min_security)
	K(5, min_bw)
	K(6, max_hops)
#undef K
	return k->own ? cats_hash(k, sizeof(*k)) :
	    cats_hash_join(c->svc->cs_h, c->fwd->h);
}

static bool
eq_eslot(const void *item, const void *key)
{
	return memcmp(&((const struct eslot *)item)->k, key,
	    sizeof(struct ekey)) == 0;
}

static void
free_eslot(struct eslot *e)
{
	free(e->v);
	free(e);
}

/* Drop the entry at a pseudo-random slot, unless it is keep. */
static void
evict_one(struct cats_sel *s, const struct eslot *keep)
{
	size_t mask = s->cache.cap - 1;
	size_t i = cats_mix64(++s->evict) & mask;
	while (s->cache.s[i].h == 0 || s->cache.s[i].item == keep)
		i = (i + 1) & mask;
	struct eslot *victim = s->cache.s[i].item;
	cats_htab_del(&s->cache, s->cache.s[i].h, eq_eslot, &victim->k);
	s->cached -= victim->cap;
	free_eslot(victim);
}

/* The cache slot of a key, made (evicting another if full) if absent. */
static struct eslot *
cache_slot(struct cats_sel *s, const struct ekey *k, uint64_t h)
{
	struct eslot *e = cats_htab_get(&s->cache, h, eq_eslot, k);
	if (e != NULL)
		return e;
	size_t max = s->conf.cache_max ? s->conf.cache_max : ECACHE_MAX;
	if (s->cache.n >= max)
		evict_one(s, NULL);
	if ((e = calloc(1, sizeof(*e))) == NULL)
		return NULL;
	e->k = *k;
	e->bgen = UINT64_MAX;	/* not valid yet */
	if (cats_htab_put(&s->cache, h, e) < 0) {
		free(e);
		return NULL;
	}
	return e;
}

/* Candidates evaluated together (their NST lookups overlap). */
#define CHUNK 16

/* Ask for every line of the entries from..to (eval reads all over them). */
static void
fetch_entries(struct cats_cst_entry *const *v, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		for (size_t k = 0; k < sizeof(*v[i]); k += 64)
			__builtin_prefetch((const char *)v[i] + k);
}
/* One selection pass; *best is the choice when CATS_SEL_OK. */
static int
select_pass(struct rctx *c, const struct eopts *o, struct cand *best,
    int *furthest)
{
	struct cats_sel *s = c->s;
	struct cats_cst_entry *const *v;
	uint64_t bgen, ngen = 0;
	size_t n = cats_cst_candidates(s->cst, c->svc->cs_id, c->svc->cs_h, &v,
	    &bgen);
	bool cacheable = o->count && o->only == NULL && o->stale_ms == 0 &&
	    o->relax == 0 && !s->conf.no_cache;
	struct eslot *slot = NULL;
	const struct cand *cv;
	size_t ne = 0, ntop;
	uint64_t gas = 0;
	int rank = rank_of(c, o);
	*furthest = CATS_REJ_OK;
	if (cacheable) {
		struct ekey key;
		ngen = cats_nst_gen(s->nst);
		slot = cache_slot(s, &key, ekey_make(c, &key));
		if (slot != NULL && slot->memo_epoch == s->memo_epoch &&
		    slot->bgen == bgen && slot->ngen == ngen &&
		    c->now < slot->until) {
			for (int i = 0; i < CATS_REJ__N; i++) {
				c->out->rej[i] += slot->rej[i];
				s->c.reject[i] += slot->rej[i];
			}
			s->c.cache_hits++;
			*furthest = slot->furthest;
			cv = slot->kept == 1 ? &slot->top : slot->v;
			ne = slot->n;
			ntop = slot->ntop;
			gas = slot->gas;
			goto pick;
		}
	}
	if (n > s->ncap) {
		struct cand *nc = realloc(s->cands, n * sizeof(*nc));
		if (nc == NULL) {
			n = s->ncap;
			slot = NULL;	/* a partial result is not cached */
		} else {
			s->cands = nc;
			s->ncap = n;
		}
	}
	c->until = UINT64_MAX;
	/*
	 * By chunks: the entry checks, then one NST lookup for those that
	 * passed them, then the network checks, in candidate order.
	 */
	int why[CHUNK];
	bool near[CHUNK];	/* at the ingress: no NST lookup */
	const char *eg[CHUNK];
	uint64_t egh[CHUNK];
	struct cats_nst_path path[CHUNK];
	fetch_entries(v, 0, n < CHUNK ? n : CHUNK);
	for (size_t b = 0; b < n; b += CHUNK) {
		size_t m = n - b < CHUNK ? n - b : CHUNK, k = 0;
		fetch_entries(v, b + m, n - b - m < CHUNK ? n : b + m + CHUNK);
		for (size_t i = 0; i < m; i++) {
			struct cats_cst_entry *e = v[b + i];
			why[i] = o->only != NULL &&
			    strcmp(e->csci_id, o->only) != 0 ? -1 :
			    eval_cst(c, e, o);
			near[i] = why[i] == CATS_REJ_OK && at_ingress(c, e);
			if (why[i] == CATS_REJ_OK && !near[i]) {
				egh[k] = e->egress_h;
				eg[k++] = e->egress;
			}
		}
		if (k > 0)
			cats_nst_lookup_many(s->nst, c->fwd->id, c->fwd->h,
			    eg, egh, k, c->now, path);
		k = 0;
		for (size_t i = 0; i < m; i++) {
			struct cats_cst_entry *e = v[b + i];
			int w = why[i];
			if (w < 0)
				continue;	/* not the csci: term */
			if (w == CATS_REJ_OK)
				w = eval_net(c, e, o, near[i] ? NULL : &path[k++],
				    &s->cands[ne]);
			if (o->count) {
				c->out->rej[w]++;
				s->c.reject[w]++;
			}
			if (w != CATS_REJ_OK) {
				if (w > *furthest)
					*furthest = w;
				continue;
			}
			gas += s->cands[ne].gas;
			ne++;
		}
	}
	cv = s->cands;
	ntop = front_rank(rank, s->cands, ne);
	if (slot != NULL) {
		size_t keep = rank == RANK_P2C ? ne : ntop;
		slot->bgen = UINT64_MAX;	/* invalid until whole */
		if (keep > ECACHE_CANDS / 4)
			goto pick;
		while (keep > 1 && keep > slot->cap && s->cached - slot->cap +
		    keep > ECACHE_CANDS && s->cache.n > 1)
			evict_one(s, slot);
		if (keep > 1 && keep > slot->cap) {
			struct cand *nv = realloc(slot->v, keep * sizeof(*nv));
			if (nv == NULL)
				goto pick;
			s->cached += keep - slot->cap;
			slot->v = nv;
			slot->cap = keep;
		}
		if (keep == 1)
			slot->top = s->cands[0];
		else if (keep > 1)
			memcpy(slot->v, s->cands, keep * sizeof(*slot->v));
		slot->kept = keep;
		slot->n = ne;
		slot->ntop = ntop;
		slot->gas = gas;
		slot->memo_epoch = s->memo_epoch;
		slot->bgen = bgen;
		slot->ngen = ngen;
		slot->until = c->until;
		slot->furthest = *furthest;
		memcpy(slot->rej, c->out->rej, sizeof(slot->rej));
	}
pick:
	if (ne == 0)
		return reason_code(*furthest);
	size_t bi = 0;
	if (rank == RANK_P2C) {
		bi = pick_p2c(c, cv, ne, gas);
	} else {
		/* Among those that rank first, the lowest tie key. */
		uint64_t bk = ntop > 1 ? tie_key(c, &cv[0]) : 0;
		for (size_t i = 1; i < ntop; i++) {
			uint64_t k = tie_key(c, &cv[i]);
			if (k < bk) {
				bk = k;
				bi = i;
			}
		}
	}
	*best = cv[bi];
	return CATS_SEL_OK;
}

static void
summary(const struct cats_sel_out *out, char *buf, size_t len)
{
	size_t off = 0;
	buf[0] = '\0';
	for (int i = 1; i < CATS_REJ__N; i++) {
		if (out->rej[i] == 0)
			continue;
		int w = snprintf(buf + off, len - off, "%s%" PRIu32 " %s",
		    off ? ", " : "", out->rej[i], cats_rej_names[i]);
		if (w < 0 || (size_t)w >= len - off)
			break;
		off += (size_t)w;
	}
}

static void
fb_text(const struct cats_fb_term *t, char *buf, size_t len)
{
	switch (t->kind) {
	case CATS_FB_STALE:
		snprintf(buf, len, "stale:%" PRIu64 "ms", t->ms);
		break;
	case CATS_FB_RELAX: {
		size_t off = (size_t)snprintf(buf, len, "relax:");
		for (size_t i = 0; i < cats_schema_constraints.nfields; i++)
			if (((t->relax >> i) & 1) && off < len)
				off += (size_t)snprintf(buf + off, len - off,
				    "%s%s", buf[off - 1] == ':' ? "" : "+",
				    cats_schema_constraints.fields[i].name);
		break;
	}
	default:
		snprintf(buf, len, "csci:%s", t->csci);
	}
}

/* The network constraints the PCE must still honour. */
#define NET_CON (BIT(CON, max_delay_us) | BIT(CON, min_bw) | \
	BIT(CON, max_hops) | BIT(CON, metric) | BIT(CON, include_any) | \
	BIT(CON, include_all) | BIT(CON, exclude_any))

/* Does the request name dp among the data planes its forwarder has? */
static bool
offers_dataplane(const struct cats_request *rq, int dp)
{
	if (!CATS_HAS(rq, REQ, dataplanes))
		return false;
	for (size_t i = 0; i < rq->dataplanes.n; i++)
		if (strcmp(rq->dataplanes.v[i], cats_dataplane_names[dp]) == 0)
			return true;
	return false;
}

static void
decision(struct rctx *c, const struct cand *b, int dataplane, bool fallback)
{
	struct cats_sel *s = c->s;
	const struct cats_request *rq = c->rq;
	const struct cats_svc *svc = c->svc;
	struct cats_sel_out *out = c->out;
	out->code = CATS_SEL_OK;
	out->fallback = fallback;
	cats_rec_init(&out->rec, CATS_T_PATH_REQ);
	struct cats_path_req *p = &out->rec.u.preq;
	p->txn = rq->txn;
	p->ts = c->now;
	p->headend = rq->ingress;
	p->endpoint = b->e->egress;
	p->domain = s->conf.domain;
	p->dataplane = dataplane;
	/* The headend's depth, when its request named this data plane. */
	if (CATS_HAS(rq, REQ, msd) && CATS_HAS(rq, REQ, dataplane) &&
	    rq->dataplane == dataplane)
		CATS_SET(p, PRQ, msd, rq->msd);
	p->constraints = c->con;
	p->constraints.has &= NET_CON;
	if (p->constraints.has != 0 || p->constraints.exclude_nodes.n ||
	    p->constraints.exclude_links.n || p->constraints.exclude_srlgs.n)
		p->has |= BIT(PRQ, constraints);
	p->flow = rq->flow;
	p->has |= BIT(PRQ, flow);
	p->ingress = rq->ingress;
	CATS_SET_IF(CATS_HAS(rq, REQ, deadline), p, PRQ, deadline,
	    rq->deadline);
	/* Neither the forwarder (--dataplane) nor the service chose: the
	 * binding manager may take another the egress has too. */
	if (!CATS_HAS(svc, SVC, dataplane) && CATS_HAS(rq, REQ, dataplanes)) {
		p->dataplanes = rq->dataplanes;
		p->has |= BIT(PRQ, dataplanes);
	}
	struct cats_decision *d = &p->decision;
	const struct cats_cst_entry *e = b->e;
	d->cs_id = svc->cs_id;
	d->csci_id = e->csci_id;
	d->locator = e->locator;
	if (EHAS(e, port))
		CATS_SET(d, DEC, port, e->port);
	else if (CATS_HAS(svc, SVC, port))
		CATS_SET(d, DEC, port, svc->port);
	d->egress = e->egress;
	d->site = e->site;
	d->policy = cats_policy_names[c->policy];
	CATS_SET_IF(CATS_HAS(svc, SVC, policy_version), d, DEC, policy_version,
	    svc->policy_version);
	CATS_SET(d, DEC, service_version, svc->version);
	CATS_SET(d, DEC, cst_gen, cats_cst_gen(s->cst));
	CATS_SET(d, DEC, nst_gen, cats_nst_gen(s->nst));
	d->ts = c->now;
	CATS_SET_IF(b->lat_us != UINT64_MAX && b->lat_us <= CATS_U53, d, DEC,
	    cost_us, b->lat_us);
	CATS_SET_IF(fallback, d, DEC, fallback, true);
	CATS_SET_IF(CATS_HAS(svc, SVC, on_failure), d, DEC, on_failure,
	    svc->on_failure);
	CATS_SET_IF(CATS_HAS(svc, SVC, idle_ms), d, DEC, idle_ms, svc->idle_ms);
	CATS_SET_IF(CATS_HAS(svc, SVC, hard_ms), d, DEC, hard_ms, svc->hard_ms);
	CATS_SET_IF(CATS_HAS(svc, SVC, affinity), d, DEC, affinity,
	    svc->affinity);
	s->c.decisions++;
}

/* Which service does the request name?  Returns a code; *out_svc on OK. */
static int
resolve(struct cats_sel *s, const struct cats_request *rq, const char *tenant,
    uint64_t now, struct cats_sel_out *out, const struct cats_svc **out_svc)
{
	const struct cats_svc *ex = NULL, *ad = NULL, *svc = NULL;
	if (rq->cs_id != NULL) {
		ex = cats_svc_get(s->cat, rq->cs_id);
		if (ex == NULL)
			return fail(s, out, rq, now, CATS_SEL_UNKNOWN_CSID,
			    "cs_id", "CS-ID %s is not in the service catalogue",
			    rq->cs_id);
	}
	struct cats_svc_match m;
	cats_svc_by_addr(s->cat, &rq->flow, tenant, &m);
	bool ambiguous = m.n > 1;
	if (m.n == 1)
		ad = m.v[0];
	for (size_t i = 0; ambiguous && ex != NULL && i < m.n; i++)
		if (m.v[i] == ex) {
			/* The explicit CS-ID is one of the tied services. */
			ambiguous = false;
			ad = ex;
		}
	/* The destination as text, for the error messages only. */
	char dst[64] = "";
#define DST (dst[0] ? dst : cats_ip_fmt(&rq->flow.dst, dst, sizeof(dst)))
	if (ex != NULL && (ad != NULL || ambiguous)) {
		if (ad == ex) {
			svc = ex;
		} else {
			const char *as = ambiguous ? "several services" :
			    ad->cs_id;
			switch (s->conf.precedence) {
			case CATS_PREC_EXPLICIT:
				svc = ex;
				break;
			case CATS_PREC_ADDRESS:
				if (ambiguous)
					return fail(s, out, rq, now,
					    CATS_SEL_AMBIGUOUS, "flow.dst",
					    "%s maps to several services", DST);
				svc = ad;
				break;
			default:
				return fail(s, out, rq, now, CATS_SEL_CONFLICT,
				    "cs_id", "explicit CS-ID %s and "
				    "destination "
				    "%s (%s) disagree", ex->cs_id, DST, as);
			}
			s->c.precedence++;
			cats_audit("select-precedence", "txn=%" PRIu64
			    " ingress=%s explicit=%s address=%s rule=%s "
			    "chosen=%s", rq->txn, rq->ingress, ex->cs_id,
			    ambiguous ? "-" : ad->cs_id,
			    cats_precedence_names[s->conf.precedence],
			    svc->cs_id);
		}
	} else if (ex != NULL) {
		svc = ex;
	} else if (ad != NULL) {
		svc = ad;
	} else if (ambiguous) {
		return fail(s, out, rq, now, CATS_SEL_AMBIGUOUS, "flow.dst",
		    "%s maps to several services", DST);
	} else if (m.tenant_excluded) {
		return fail(s, out, rq, now, CATS_SEL_TENANT, "tenant",
		    "%s is a service address of another tenant", DST);
	} else {
		return fail(s, out, rq, now, CATS_SEL_UNRESOLVED, "flow.dst",
		    "no CS-ID and %s is no service address", DST);
	}
	if (svc->tenant != NULL && (tenant == NULL ||
	    strcmp(svc->tenant, tenant) != 0))
		return fail(s, out, rq, now, CATS_SEL_TENANT, "tenant",
		    "service %s belongs to tenant %s, not %s", svc->cs_id,
		    svc->tenant, tenant ? tenant : "(none)");
#undef DST
	*out_svc = svc;
	return CATS_SEL_OK;
}

int
cats_sel_request(struct cats_sel *s, const struct cats_rec *r,
    const struct cats_sel_origin *o, uint64_t now, struct cats_sel_out *out)
{
	const struct cats_request *rq = &r->u.request;
	out->routable = false;
	out->fallback = false;
	memset(out->rej, 0, sizeof(out->rej));
	s->c.requests++;

	/* Only an authenticated request makes a forwarder known. */
	struct fwd *f = get_fwd(s, rq->ingress, false);
	int rc = check_auth(s, r, f, o, out, now);
	if (rc != CATS_SEL_OK)
		return rc;
	out->routable = true;

	if (s->conf.window_ms > 0 &&
	    !cats_replay_in_window(rq->ts, now, s->conf.window_ms))
		return fail(s, out, rq, now, CATS_SEL_REPLAY, "ts",
		    "timestamp %" PRIu64 " is outside now %" PRIu64 " +/- %"
		    PRIu64 " ms", rq->ts, now, s->conf.window_ms);
	if (f == NULL && (f = get_fwd(s, rq->ingress, true)) == NULL)
		return fail(s, out, rq, now, CATS_SEL_UNAUTHORIZED, "ingress",
		    "too many forwarders tracked");
	uint64_t gen = CATS_HAS(rq, REQ, gen) ? rq->gen : 0;
	uint64_t fgen = f->txns.gen;
	rc = cats_seqwin_check(&f->txns, gen, rq->txn);
	if (rc == CATS_REPLAY_STALE)
		return fail(s, out, rq, now, CATS_SEL_STALE_GEN, "gen",
		    "generation %" PRIu64 " of %s is below its current %"
		    PRIu64, gen, rq->ingress, fgen);
	if (rc == CATS_REPLAY_SEEN)
		return fail(s, out, rq, now, CATS_SEL_REPLAY, "txn",
		    "transaction %" PRIu64 " of %s was seen already", rq->txn,
		    rq->ingress);
	if (CATS_HAS(rq, REQ, deadline) && rq->deadline <= now)
		return fail(s, out, rq, now, CATS_SEL_EXPIRED, "deadline",
		    "the deadline %" PRIu64 " has passed", rq->deadline);

	if (CATS_HAS(rq, REQ, mode) && rq->mode == CATS_MODE_NONE &&
	    (rq->cs_id != NULL || CATS_HAS(rq, REQ, constraints)))
		return fail(s, out, rq, now, CATS_SEL_MALFORMED, "mode",
		    "explicit metadata with carriage mode none");
	if (rq->tenant != NULL && rq->flow.tenant != NULL &&
	    strcmp(rq->tenant, rq->flow.tenant) != 0)
		return fail(s, out, rq, now, CATS_SEL_TENANT, "flow.tenant",
		    "request tenant %s and flow tenant %s differ", rq->tenant,
		    rq->flow.tenant);
	const char *tenant = rq->tenant ? rq->tenant : rq->flow.tenant;
	if (f->ntenants > 0) {
		bool ok = false;
		for (size_t i = 0; i < f->ntenants && !ok && tenant; i++)
			ok = strcmp(f->tenants[i], tenant) == 0;
		if (!ok)
			return fail(s, out, rq, now, CATS_SEL_UNAUTHORIZED,
			    "tenant", "forwarder %s may not request for tenant "
			    "%s", rq->ingress, tenant ? tenant : "(none)");
	}
	if (s->conf.rate_global.per_s && !s->global_init) {
		cats_bucket_init(&s->global, s->conf.rate_global.per_s,
		    s->conf.rate_global.burst, now);
		s->global_init = true;
	}
	if (s->conf.rate_global.per_s && !cats_bucket_take(&s->global, 1, now))
		return fail(s, out, rq, now, CATS_SEL_RATE, NULL,
		    "global admission limit");
	if (s->conf.rate_tenant.per_s && !take_keyed(&s->tenants,
	    tenant ? tenant : "", &s->conf.rate_tenant, now))
		return fail(s, out, rq, now, CATS_SEL_RATE, "tenant",
		    "admission limit of tenant %s", tenant ? tenant : "(none)");
	if (s->conf.rate_client.per_s) {
		char src[64];
		cats_ip_fmt(&rq->flow.src, src, sizeof(src));
		if (!take_keyed(&s->clients, src, &s->conf.rate_client, now))
			return fail(s, out, rq, now, CATS_SEL_RATE, "flow.src",
			    "admission limit of client %s", src);
	}

	const struct cats_svc *svc = NULL;
	if ((rc = resolve(s, rq, tenant, now, out, &svc)) != CATS_SEL_OK)
		return rc;

	bool sdp = CATS_HAS(svc, SVC, dataplane);
	bool rdp = CATS_HAS(rq, REQ, dataplane);
	if (sdp && rdp && svc->dataplane != rq->dataplane &&
	    !offers_dataplane(rq, svc->dataplane))
		return fail(s, out, rq, now, CATS_SEL_DATAPLANE, "dataplane",
		    "service %s uses %s, forwarder %s supports %s", svc->cs_id,
		    cats_dataplane_names[svc->dataplane], rq->ingress,
		    cats_dataplane_names[rq->dataplane]);
	int dp = sdp ? svc->dataplane : rdp ? rq->dataplane :
	    s->conf.dataplane;

	struct rctx c = { .s = s, .rq = rq, .svc = svc, .now = now,
	    .out = out, .fwd = f };
	c.policy = CATS_HAS(svc, SVC, policy) ? svc->policy : s->conf.policy;
	const char *over = merge_constraints(&svc->con,
	    CATS_HAS(svc, SVC, constraints), &rq->constraints,
	    CATS_HAS(rq, REQ, constraints), out, &c.con);
	if (over != NULL)
		return fail(s, out, rq, now, CATS_SEL_MALFORMED, over,
		    "more than 64 exclusions with the service's");
	c.seed = cats_mix64(s->conf.seed ^ cats_mix64(cats_fnv1a(rq->ingress) ^
	    cats_mix64(rq->txn)));
	if (s->memo_cat != s->cat || s->memo_gen != cats_svc_gen(s->cat)) {
		s->memo_cat = s->cat;
		s->memo_gen = cats_svc_gen(s->cat);
		s->memo_epoch++;
	}
	c.memo_tag = s->memo_epoch << 1;

	struct cand best;
	struct eopts eo = { .count = true };
	int furthest;
	rc = select_pass(&c, &eo, &best, &furthest);
	if (rc == CATS_SEL_OK) {
		decision(&c, &best, dp, false);
		return CATS_SEL_OK;
	}
	char why[160];
	summary(out, why, sizeof(why));
	for (size_t i = 0; i < svc->nfb; i++) {
		const struct cats_fb_term *t = &svc->fb[i];
		struct eopts fo = { 0 };
		int fr;
		if (t->kind == CATS_FB_STALE)
			fo.stale_ms = t->ms;
		else if (t->kind == CATS_FB_RELAX)
			fo.relax = t->relax;
		else
			fo.only = t->csci;
		char term[96];
		fb_text(t, term, sizeof(term));
		if (select_pass(&c, &fo, &best, &fr) != CATS_SEL_OK)
			continue;
		s->c.fallbacks++;
		cats_audit("select-fallback", "txn=%" PRIu64 " ingress=%s "
		    "cs_id=%s failure=%s term=%s csci_id=%s", rq->txn,
		    rq->ingress, svc->cs_id, cats_sel_code_names[rc], term,
		    best.e->csci_id);
		decision(&c, &best, dp, true);
		return CATS_SEL_OK;
	}
	if (svc->nfb > 0)
		cats_audit("select-fallback-failed", "txn=%" PRIu64
		    " ingress=%s cs_id=%s failure=%s fallback=%s", rq->txn,
		    rq->ingress, svc->cs_id, cats_sel_code_names[rc],
		    svc->fallback);
	size_t total = 0;
	for (int i = 1; i < CATS_REJ__N; i++)
		total += out->rej[i];
	if (rc == CATS_SEL_NO_CANDIDATE)
		return fail(s, out, rq, now, rc, "cs_id", "the CST has no "
		    "candidate for %s", svc->cs_id);
	return fail(s, out, rq, now, rc, NULL, "%s: %zu candidates, none "
	    "eligible (%s)%s", svc->cs_id, total, why,
	    svc->nfb > 0 ? "; fallback failed" : "");
}
