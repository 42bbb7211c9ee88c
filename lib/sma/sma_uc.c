/*
 * sma_uc.c - the update controller: policy and transformations, triggers
 * and their priorities, thresholds, minimum interval, token bucket,
 * maintenance windows, dampening, batching, heartbeats and refreshes.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "base/bucket.h"
#include "base/clock.h"
#include "base/list.h"
#include "base/htab.h"
#include "base/log.h"
#include "sma/sma_uc.h"

#define SNAP_PART 256	/* entries and sites in one snapshot record */
#define PPM UINT64_C(1000000)

enum { P_NONE, P_CRIT, P_ROUTINE };
enum { C_NONE, C_MINOR, C_ROUTINE, C_CRIT };

/* Presence bits of struct vals. */
enum {
	VH_GAS = 1 << 0, VH_CT = 1 << 1, VH_PRICE = 1 << 2, VH_REP = 1 << 3,
	VH_SEC = 1 << 4, VH_PORT = 1 << 5,
};
#define VH_METRICS (VH_GAS | VH_CT | VH_PRICE | VH_REP | VH_SEC)

/* An entry's values as advertised (after policy and transformations). */
struct vals {
	uint8_t health, state, flags;
	uint8_t has;
	uint16_t port;
	uint8_t rep, sec;
	bool suppress, omit_ext;
	uint32_t gas, ct, price;
	struct cats_ip loc;
	uint64_t gen, ts, ttl, exthash;
	const struct sma_origin *origin;
};

struct site;

/* A dampening penalty (RFC 2439): decays with the half-life. */
struct damp {
	double penalty;
	uint64_t pen_at;
	bool observed;
};

struct item {
	struct item *prev, *next;	/* its pending list */
	struct item *dprev, *dnext;	/* the damped list */
	struct site *site;		/* the CS-ID of its current values */
	struct site *adv_site;		/* the CS-ID it is advertised under */
	struct vals cur, adv;
	struct cats_kv *adv_ext;	/* extensions as advertised (owned) */
	uint8_t adv_next;
	uint8_t list;			/* P_* */
	int8_t wd;			/* pending withdrawal reason, or -1 */
	bool adv_valid, accounted, gone, damped, observed;
	bool adv_acc;			/* adv counted in adv_site's sums */
	uint8_t held;			/* counted holds of this episode */
	struct damp d;
	uint64_t last_sent;
	uint64_t seen;			/* snapshot generation */
	char csci_id[];
};

/* Holds counted once per pending episode. */
enum { H_INTERVAL = 1, H_WINDOW = 2, H_DAMP = 4 };

/*
 * A site aggregate (CS-ID): the sums of its entries as advertised, so that
 * what the C-PS holds for the site always agrees with the entries it holds.
 */
struct site {
	struct site *next;		/* every site, in order of creation */
	struct site *dnext;		/* the dirty list */
	struct site *pnext;		/* the pending list */
	bool dirty, inpend, adv_valid;
	struct sma_site_acc acc;	/* over the advertised entries */
	struct sma_site_view cur, adv;
	uint64_t last_sent;
	char cs_id[];
};

struct list {
	struct item *head, *tail;
	size_t n;
};

struct sma_uc {
	const struct sma_conf *c;
	const struct sma *core;
	struct sma_policy *pol;
	uint64_t epoch, seq;
	sma_uc_emit_fn emit;
	void *arg;
	struct cats_htab items;		/* by CSCI-ID */
	struct cats_htab sites;		/* by CS-ID */
	struct site *site_head, *site_tail;
	struct site *dirty;		/* sites touched by this change set */
	struct site *spend;		/* sites with something to send */
	struct list crit, routine;
	struct item *damped;
	uint64_t routine_at, boundary_at, reuse_at, hb_at, token_at;
	struct cats_bucket tokens;	/* routine records; set up at the first */
	bool tokens_init;
	uint64_t hb_count;
	bool peer_refresh;
	uint64_t load_ppm;
	uint64_t rng;
	uint64_t snapgen;
	size_t nadv;		/* items advertised */
	bool draining;
	struct cats_arena arena;	/* copies while a record is built */
	struct sma_uc_stats st;
};

/* ---- small helpers ---- */

/*
 * Is now within the minimum interval after a send at last (0: never sent)?
 * "Within" is inclusive (cats-sma(1) TIME WINDOWS): the next routine
 * record may leave at last + interval + 1.
 */
static bool
within_interval(uint64_t last, uint64_t interval, uint64_t now)
{
	return last != 0 && interval != 0 && now <= last + interval;
}

/* interval +/- jitter, uniformly. */
static uint64_t
jittered(struct sma_uc *u, uint64_t interval, uint64_t jitter_ppm)
{
	return cats_jitter(interval, jitter_ppm, &u->rng);
}

static bool
item_eq(const void *item, const void *key)
{
	return strcmp(((const struct item *)item)->csci_id, key) == 0;
}

static bool
site_eq(const void *item, const void *key)
{
	return strcmp(((const struct site *)item)->cs_id, key) == 0;
}

static void
list_add(struct list *l, struct item *it)
{
	CATS_LIST_APPEND(l->head, l->tail, it, prev, next);
	l->n++;
}

static void
list_del(struct list *l, struct item *it)
{
	CATS_LIST_REMOVE(l->head, l->tail, it, prev, next);
	l->n--;
}

static struct list *
list_of(struct sma_uc *u, const struct item *it)
{
	return it->list == P_CRIT ? &u->crit : it->list == P_ROUTINE ?
	    &u->routine : NULL;
}

static void
unpend(struct sma_uc *u, struct item *it)
{
	struct list *l = list_of(u, it);
	if (l != NULL)
		list_del(l, it);
	it->list = P_NONE;
	it->held = 0;
}

static void
pend(struct sma_uc *u, struct item *it, int list)
{
	if (it->list == list)
		return;
	struct list *l = list_of(u, it);
	if (l != NULL)
		list_del(l, it);
	else
		it->held = 0;
	it->list = (uint8_t)list;
	list_add(list == P_CRIT ? &u->crit : &u->routine, it);
}

static void site_dirty(struct sma_uc *u, struct site *s);
static void acc(struct site *s, const struct vals *v, int sign);

/* Take the advertised share of an entry out of its site's sums. */
static void
adv_unaccount(struct sma_uc *u, struct item *it)
{
	if (!it->adv_acc)
		return;
	acc(it->adv_site, &it->adv, -1);
	site_dirty(u, it->adv_site);
	it->adv_acc = false;
}

/* ... and put it (back) in: what the C-PS now holds for the entry. */
static void
adv_account(struct sma_uc *u, struct item *it)
{
	adv_unaccount(u, it);
	if (!it->adv_valid || it->adv_site == NULL)
		return;
	acc(it->adv_site, &it->adv, 1);
	site_dirty(u, it->adv_site);
	it->adv_acc = true;
}

static void
set_adv(struct sma_uc *u, struct item *it, bool v)
{
	if (it->adv_valid != v)
		u->nadv += v ? 1 : (size_t)-1;
	it->adv_valid = v;
	if (!v)
		adv_unaccount(u, it);
}

static void
free_adv_ext(struct item *it)
{
	for (size_t i = 0; i < it->adv_next; i++)
		free((char *)it->adv_ext[i].k);
	free(it->adv_ext);
	it->adv_ext = NULL;
	it->adv_next = 0;
}

static void
damp_unlink(struct sma_uc *u, struct item *it)
{
	if (!it->damped)
		return;
	if (it->dprev)
		it->dprev->dnext = it->dnext;
	else
		u->damped = it->dnext;
	if (it->dnext)
		it->dnext->dprev = it->dprev;
	it->dprev = it->dnext = NULL;
	it->damped = false;
	u->st.damped--;
}

static void
item_free(struct sma_uc *u, struct item *it)
{
	set_adv(u, it, false);
	unpend(u, it);
	damp_unlink(u, it);
	cats_htab_del(&u->items, cats_hash_str(it->csci_id), item_eq,
	    it->csci_id);
	free_adv_ext(it);
	free(it);
}

static struct item *
get_item(struct sma_uc *u, const char *csci_id, bool create)
{
	bool made;
	struct item *it = cats_htab_str_item(&u->items, csci_id, item_eq,
	    sizeof(struct item), offsetof(struct item, csci_id), create, &made);
	if (made)
		it->wd = -1;
	return it;
}

static struct site *
get_site(struct sma_uc *u, const char *cs_id)
{
	bool made;
	struct site *s = cats_htab_str_item(&u->sites, cs_id, site_eq,
	    sizeof(struct site), offsetof(struct site, cs_id), true, &made);
	if (!made)
		return s;
	if (u->site_tail)
		u->site_tail->next = s;
	else
		u->site_head = s;
	u->site_tail = s;
	return s;
}

static void
site_dirty(struct sma_uc *u, struct site *s)
{
	if (s == NULL || s->dirty)
		return;
	s->dirty = true;
	s->dnext = u->dirty;
	u->dirty = s;
}

/* ---- the values an entry advertises ---- */

static uint64_t
ext_hash(const struct sma_entry *e)
{
	uint64_t h = e->next_n;
	for (size_t i = 0; i < e->next_n; i++)
		h = h * 1000003 ^ cats_hash_str(e->ext[i].k) ^ e->ext[i].v * 31;
	return h;
}

/* The core's entry through the policy and the transformations. */
static void
transform(struct sma_uc *u, const struct sma_entry *e, uint64_t now,
    struct vals *v)
{
	const struct sma_conf *c = u->c;
	const char *fl[SMA_NFLAGS];
	struct cats_entry ce;
	sma_entry_view(e, &ce, fl);
	memset(v, 0, sizeof(*v));
	struct sma_pmetrics m;
	memset(&m, 0, sizeof(m));
	m.health = ce.health;
	m.state = ce.state;
	m.has = SMA_PM_HEALTH | SMA_PM_STATE;
#define TAKE(f, bit, dst) \
	if (CATS_HAS(&ce, ENT, f)) { m.dst = ce.f; m.has |= bit; }
	TAKE(gas, SMA_PM_GAS, gas)
	TAKE(comp_time_ms, SMA_PM_CT, ct)
	TAKE(price, SMA_PM_PRICE, price)
	TAKE(reputation, SMA_PM_REPUTATION, reputation)
	TAKE(security_level, SMA_PM_SECURITY, security)
#undef TAKE
	if (ce.ext.n > 0)
		m.has |= SMA_PM_EXT;
	struct sma_pout po;
	memset(&po, 0, sizeof(po));
	if (u->pol != NULL && e->state != CATS_SCI_FAILED) {
		const struct sma_site_view *sv = &e->svc->view;
		struct sma_pctx ctx = { .entry = true, .cs_id = e->svc->cs_id,
			.csci_id = e->csci_id, .has_site = true,
			.site_gas = sv->gas, .site_ct = sv->ct,
			.site_has_ct = sv->has_ct, .site_healthy = sv->healthy,
			.site_total = sv->total, .site_health = sv->health,
			.now = now };
		sma_policy_eval(u->pol, &m, &ctx, &po);
	}
	/* Safety margin, then the computing-time bounds (000 §7.2). */
	if ((m.has & SMA_PM_GAS) && c->pol.gas_factor_ppm != PPM)
		m.gas = (uint64_t)((unsigned __int128)m.gas *
		    c->pol.gas_factor_ppm / PPM);
	if (m.has & SMA_PM_CT) {
		if (c->pol.has_ct_floor && m.ct < c->pol.ct_floor)
			m.ct = c->pol.ct_floor;
		if (c->pol.has_ct_ceiling && m.ct > c->pol.ct_ceiling)
			m.ct = c->pol.ct_ceiling;
	}
	/* A policy cannot make a non-contributing entry contribute GAS. */
	if (e->state == CATS_SCI_FAILED)
		m.gas = 0;
	v->health = (uint8_t)m.health;
	v->state = (uint8_t)m.state;
	v->flags = e->flags;
	if (m.has & SMA_PM_GAS) {
		v->has |= VH_GAS;
		v->gas = (uint32_t)(m.gas > CATS_U32 ? CATS_U32 : m.gas);
	}
	if (m.has & SMA_PM_CT) {
		v->has |= VH_CT;
		v->ct = (uint32_t)m.ct;
	}
	if (m.has & SMA_PM_PRICE) {
		v->has |= VH_PRICE;
		v->price = (uint32_t)m.price;
	}
	if (m.has & SMA_PM_REPUTATION) {
		v->has |= VH_REP;
		v->rep = (uint8_t)m.reputation;
	}
	if (m.has & SMA_PM_SECURITY) {
		v->has |= VH_SEC;
		v->sec = (uint8_t)m.security;
	}
	if (CATS_HAS(&ce, ENT, port)) {
		v->has |= VH_PORT;
		v->port = (uint16_t)ce.port;
	}
	v->loc = ce.locator;
	v->suppress = po.suppress;
	v->omit_ext = (po.omit & SMA_PM_EXT) != 0;
	v->exthash = v->omit_ext || e->state == CATS_SCI_FAILED ? 0 :
	    ext_hash(e);
	v->gen = ce.gen;
	v->ts = ce.ts;
	v->ttl = ce.ttl_ms;
	v->origin = e->origin;
}

/* ---- site aggregation over the advertised values ---- */

static void
acc(struct site *s, const struct vals *v, int sign)
{
	sma_site_acc(&s->acc, v->state, v->health, v->has & VH_GAS, v->gas,
	    v->has & VH_CT, v->ct, sign);
}

/* ---- classification ---- */

static bool
beyond(uint64_t old, uint64_t nw, uint64_t ppm, uint64_t abs)
{
	uint64_t d = nw > old ? nw - old : old - nw;
	if (d == 0)
		return false;
	if (abs > 0 && d > abs)
		return true;
	return (unsigned __int128)d * PPM > (unsigned __int128)old * ppm;
}

static bool
same_loc(const struct vals *a, const struct vals *b)
{
	return cats_ip_eq(&a->loc, &b->loc) && a->port == b->port &&
	    ((a->has ^ b->has) & VH_PORT) == 0;
}

/* The difference between cur and adv, as what it would trigger. */
static int
classify(const struct sma_uc *u, const struct item *it, bool any)
{
	const struct vals *c = &it->cur, *a = &it->adv;
	const struct sma_uc_conf *k = &u->c->uc;
	if (it->wd >= 0)
		return C_CRIT;
	if (!it->adv_valid)
		return c->state == CATS_SCI_FAILED ? C_NONE : C_CRIT;
	if (c->health != a->health || c->state != a->state || !same_loc(c, a))
		return C_CRIT;
	bool num = (c->has ^ a->has) & VH_METRICS;
	num |= c->price != a->price || c->rep != a->rep || c->sec != a->sec;
	if (num)
		return C_ROUTINE;
	bool gas = c->gas != a->gas, ct = c->ct != a->ct;
	if (gas && (any || beyond(a->gas, c->gas, k->gas_ppm, k->gas_abs)))
		return C_ROUTINE;
	if (ct && (any || beyond(a->ct, c->ct, k->ct_ppm, 0)))
		return C_ROUTINE;
	if (gas || ct || c->flags != a->flags || c->exthash != a->exthash ||
	    c->origin != a->origin)
		return C_MINOR;
	return C_NONE;
}

/* Worse than advertised: a damped entry sends these at once. */
static int
rank_health(int h)
{
	static const int r[] = { 0, 1, 3, 2 };	/* HEALTHY DEGRADED UNHEALTHY
						 * UNKNOWN */
	return h >= 0 && h < 4 ? r[h] : 3;
}

static int
rank_state(int s)
{
	static const int r[] = { 1, 0, 2, 3 };	/* ACTIVE HEALTHY STALE
						 * FAILED */
	return s >= 0 && s < 4 ? r[s] : 3;
}

static uint32_t
min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static uint32_t
max32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

/*
 * What a damped entry may advertise: field by field the less attractive of
 * what was advertised (adv) and what it is now (cur), so that nothing more
 * attractive than adv leaves while it is suppressed.  Worse health or
 * state, a lower GAS, reputation or security level, a higher computing
 * time or price are taken from cur; every improvement, a new locator or
 * port, metrics that appeared and the extensions stay as advertised.  A
 * metric that went counts as worse for GAS (taken as 0) and is held for
 * the others.  Report time, sequence, TTL and flags follow cur.
 */
static void
worst_of(const struct vals *a, const struct vals *c, struct vals *o)
{
	*o = *a;
	o->gen = c->gen;
	o->ts = c->ts;
	o->ttl = c->ttl;
	o->flags = c->flags;
	o->suppress = c->suppress;
	if (rank_health(c->health) > rank_health(a->health))
		o->health = c->health;
	if (rank_state(c->state) > rank_state(a->state))
		o->state = c->state;
	if (a->has & VH_GAS)
		o->gas = c->has & VH_GAS ? min32(a->gas, c->gas) : 0;
	if ((a->has & c->has) & VH_CT)
		o->ct = max32(a->ct, c->ct);
	if ((a->has & c->has) & VH_PRICE)
		o->price = max32(a->price, c->price);
	if ((a->has & c->has) & VH_REP)
		o->rep = (uint8_t)min32(a->rep, c->rep);
	if ((a->has & c->has) & VH_SEC)
		o->sec = (uint8_t)min32(a->sec, c->sec);
}

/* Is the entry damped now (dampening on, suppressing)? */
static bool
damping(const struct sma_uc *u, const struct item *it)
{
	return it->damped && u->c->uc.control && it->adv_valid;
}

/* What the entry may advertise now: cur, or worst_of() when damped. */
static void
sendable(const struct sma_uc *u, const struct item *it, struct vals *v)
{
	if (damping(u, it))
		worst_of(&it->adv, &it->cur, v);
	else
		*v = it->cur;
}

/* Something worse than advertised: a damped entry sends it at once. */
static bool
degrades(const struct sma_uc *u, const struct item *it)
{
	if (it->wd >= 0 || !it->adv_valid)
		return it->wd >= 0;
	struct vals w;
	worst_of(&it->adv, &it->cur, &w);
	const struct vals *a = &it->adv;
	(void)u;
	return w.health != a->health || w.state != a->state ||
	    w.gas != a->gas || w.ct != a->ct || w.price != a->price ||
	    w.rep != a->rep || w.sec != a->sec;
}

/* ---- dampening (RFC 2439 style) ---- */

static double
decayed(const struct sma_uc *u, const struct damp *d, uint64_t now)
{
	if (d->penalty <= 0 || now <= d->pen_at)
		return d->penalty;
	double hl = (double)u->c->uc.damp_half_life_ms;
	return d->penalty * exp2(-(double)(now - d->pen_at) / hl);
}

/* When the penalty falls below reuse. */
static uint64_t
reuse_time(const struct sma_uc *u, const struct damp *d)
{
	double p = d->penalty, r = (double)u->c->uc.damp_reuse;
	if (p < r)
		return d->pen_at;
	double hl = (double)u->c->uc.damp_half_life_ms;
	return d->pen_at + (uint64_t)ceil(hl * log2(p / r)) + 1;
}

static void
recompute_reuse(struct sma_uc *u)
{
	u->reuse_at = 0;
	for (struct item *it = u->damped; it; it = it->dnext) {
		uint64_t t = reuse_time(u, &it->d);
		if (u->reuse_at == 0 || t < u->reuse_at)
			u->reuse_at = t;
	}
}

/*
 * A flap: the penalty grows.  Returns true when it crosses the suppress
 * threshold (dampening on); observe mode audits instead.
 */
static bool
damp_add(struct sma_uc *u, struct damp *d, const char *what, const char *id,
    uint64_t now)
{
	const struct sma_uc_conf *k = &u->c->uc;
	double p = decayed(u, d, now) + (double)k->damp_penalty;
	if (p > (double)k->damp_max)
		p = (double)k->damp_max;
	d->penalty = p;
	d->pen_at = now;
	char b[CATS_ID + 1];
	if (k->damp == SMA_DAMP_OBSERVE) {
		if (d->observed && p < (double)k->damp_reuse)
			d->observed = false;
		if (!d->observed && p >= (double)k->damp_suppress) {
			d->observed = true;
			u->st.damp_observed++;
			cats_audit("damp", "%s=%s penalty=%.0f action=observe",
			    what, cats_safe(id, b, sizeof(b)), p);
		}
		return false;
	}
	return p >= (double)k->damp_suppress;
}

static bool
is_flap(const struct vals *o, const struct vals *n)
{
	bool down_o = o->state == CATS_SCI_FAILED, down_n = n->state ==
	    CATS_SCI_FAILED;
	return o->health != n->health || down_o != down_n;
}

static void
damp_note(struct sma_uc *u, struct item *it, uint64_t now)
{
	const struct sma_uc_conf *k = &u->c->uc;
	if (k->damp == SMA_DAMP_OFF || !k->control)
		return;
	bool over = damp_add(u, &it->d, "csci", it->csci_id, now);
	char b[CATS_ID + 1];
	double p = it->d.penalty;
	if (!it->damped && over) {
		it->damped = true;
		it->dprev = NULL;
		it->dnext = u->damped;
		if (u->damped)
			u->damped->dprev = it;
		u->damped = it;
		u->st.damped++;
		u->st.damp_suppressed++;
		cats_audit("damp", "csci=%s penalty=%.0f action=suppress "
		    "reuse_at=%" PRIu64, cats_safe(it->csci_id, b, sizeof(b)), p,
		    reuse_time(u, &it->d));
	}
	if (it->damped)
		recompute_reuse(u);
}

/* ---- marking what changed ---- */

/* May the C-PS receive this CS-ID ([northbound] authorized, 000 §8.2)? */
static bool
allowed(const struct sma_uc *u, const char *cs_id)
{
	const struct sma_nb_conf *n = &u->c->nb;
	if (n->nauthorized == 0)
		return true;
	for (size_t i = 0; i < n->nauthorized; i++)
		if (strcmp(n->authorized[i], cs_id) == 0)
			return true;
	return false;
}

static void
mark(struct sma_uc *u, struct item *it, uint64_t now, bool policy)
{
	if (it->site != NULL && !allowed(u, it->site->cs_id) && it->wd < 0)
		return;
	if (!u->c->uc.control) {
		if (it->wd >= 0 || classify(u, it, true) != C_NONE)
			pend(u, it, P_CRIT);
		return;
	}
	int cls = classify(u, it, policy);
	if (cls == C_CRIT) {
		if (it->wd >= 0)
			;
		else if (!it->adv_valid)
			u->st.trig_discovery++;
		else if (!same_loc(&it->cur, &it->adv))
			u->st.trig_locator++;
		else
			u->st.trig_health++;
		pend(u, it, P_CRIT);
		return;
	}
	if (cls == C_ROUTINE) {
		if (policy)
			u->st.trig_policy++;
		else
			u->st.trig_metric++;
		if (it->list == P_NONE) {
			pend(u, it, P_ROUTINE);
			uint64_t due = now + u->c->uc.batch_ms;
			if (u->routine_at == 0 || due < u->routine_at)
				u->routine_at = due;
		}
		return;
	}
	if (cls == C_MINOR && it->cur.gas != it->adv.gas)
		u->st.sup_threshold++;
	else if (cls == C_MINOR && it->cur.ct != it->adv.ct)
		u->st.sup_threshold++;
}

/* Re-read an entry from the core and mark what changed. */
static void
refresh_item(struct sma_uc *u, struct item *it, const struct sma_entry *e,
    uint64_t now, bool policy)
{
	struct site *s = get_site(u, e->svc->cs_id);
	struct vals old = it->cur;
	bool had = it->accounted;
	transform(u, e, now, &it->cur);
	if (s != NULL) {
		it->site = s;
		it->accounted = true;
	}
	if (had && is_flap(&old, &it->cur))
		damp_note(u, it, now);
	mark(u, it, now, policy);
}

/* ---- records ---- */

static void
head(struct sma_uc *u, struct cats_rec *r, int op, uint64_t now)
{
	sma_metric_head(u->c, u->epoch, ++u->seq, op, now, r);
}

static int
send(struct sma_uc *u, struct cats_rec *r, int kind)
{
	struct cats_metric *m = &r->u.metric;
	u->st.records++;
	u->st.entries_sent += m->entries.n;
	switch (m->op) {
	case CATS_OP_FULL: u->st.full++; break;
	case CATS_OP_HEARTBEAT: u->st.heartbeats++; break;
	case CATS_OP_WITHDRAW: u->st.withdraws++; break;
	case CATS_OP_REFRESH: u->st.refreshes++; break;
	default: u->st.deltas++; break;
	}
	return u->emit(u->arg, r, kind);
}

/* The flag names of a mask into fl (SMA_NFLAGS slots). */
static size_t
flag_names(uint8_t flags, const char **fl)
{
	size_t n = 0;
	for (int i = 0; i < SMA_NFLAGS; i++)
		if (flags & (1 << i))
			fl[n++] = sma_flag_names[i];
	return n;
}

/*
 * An entry as a record map from its values: what was advertised
 * (from_adv), or what it may advertise now (sendable()); ext from the core
 * or the copy kept with adv (a damped entry's extensions are held);
 * strings and flag lists go into the arena.
 */
static void
build_entry(struct sma_uc *u, const struct item *it, bool from_adv,
    bool no_ext, struct cats_entry *o)
{
	struct vals sv;
	const struct vals *v = &it->adv;
	if (!from_adv) {
		sendable(u, it, &sv);
		v = &sv;
		from_adv = damping(u, it);
	}
	const struct site *s = from_adv ? it->adv_site : it->site;
	memset(o, 0, sizeof(*o));
	o->csci_id = it->csci_id;
	o->cs_id = s ? s->cs_id : "";
	CATS_SET(o, ENT, health, v->health);
	CATS_SET(o, ENT, state, v->state);
	if (v->state != CATS_SCI_FAILED) {
		CATS_SET_IF(v->has & VH_GAS, o, ENT, gas, v->gas);
		CATS_SET_IF(v->has & VH_CT, o, ENT, comp_time_ms, v->ct);
		CATS_SET_IF(v->has & VH_PRICE, o, ENT, price, v->price);
		CATS_SET_IF(v->has & VH_REP, o, ENT, reputation, v->rep);
		CATS_SET_IF(v->has & VH_SEC, o, ENT, security_level, v->sec);
		if (from_adv) {
			o->ext.v = it->adv_ext;
			o->ext.n = it->adv_next;
		} else if (!v->omit_ext && !no_ext && u->core != NULL) {
			const struct sma_entry *e = sma_lookup(u->core,
			    it->csci_id);
			if (e != NULL && e->next_n > 0) {
				o->ext.v = e->ext;
				o->ext.n = e->next_n;
			}
		}
	} else {
		CATS_SET(o, ENT, gas, 0);
	}
	o->locator = v->loc;
	CATS_SET_IF(v->has & VH_PORT, o, ENT, port, v->port);
	CATS_SET(o, ENT, gen, v->gen);
	CATS_SET(o, ENT, ts, v->ts);
	CATS_SET(o, ENT, ttl_ms, v->ttl);
	const char **fl = cats_arena_alloc(&u->arena, SMA_NFLAGS *
	    sizeof(*fl));
	if (fl != NULL) {
		o->flags.n = flag_names(v->flags, fl);
		o->flags.v = fl;
	}
	if (v->origin != NULL) {
		o->site = v->origin->site;
		o->egress = v->origin->egress;
	}
}

/* adv = what was sent (sendable()), with a copy of the extensions. */
static void
advertise(struct sma_uc *u, struct item *it, const struct cats_entry *sent,
    uint64_t now)
{
	if (damping(u, it)) {
		/* Held: the locator, the CS-ID and the extensions too. */
		struct vals w;
		worst_of(&it->adv, &it->cur, &w);
		adv_unaccount(u, it);
		it->adv = w;
		it->last_sent = now;
		adv_account(u, it);
		return;
	}
	adv_unaccount(u, it);
	it->adv = it->cur;
	set_adv(u, it, true);
	it->adv_site = it->site;
	it->last_sent = now;
	adv_account(u, it);
	free_adv_ext(it);
	if (sent->ext.n > 0) {
		it->adv_ext = calloc(sent->ext.n, sizeof(*it->adv_ext));
		for (size_t i = 0; it->adv_ext && i < sent->ext.n; i++) {
			it->adv_ext[i].v = sent->ext.v[i].v;
			it->adv_ext[i].k = strdup(sent->ext.v[i].k);
			if (it->adv_ext[i].k == NULL)
				break;
			it->adv_next++;
		}
	}
	(void)u;
}

static void
site_map(const struct site *s, const struct sma_site_view *v,
    struct cats_site *o)
{
	memset(o, 0, sizeof(*o));
	o->cs_id = s->cs_id;
	CATS_SET(o, SITE, gas, v->gas);
	CATS_SET_IF(v->has_ct, o, SITE, comp_time_ms, v->ct);
	CATS_SET(o, SITE, health, v->health);
	CATS_SET(o, SITE, healthy, v->healthy);
	CATS_SET(o, SITE, total, v->total);
}

struct batch {
	struct cats_entry *v;
	struct item **who;
	size_t n, cap;
};

static int
batch_add(struct batch *b, struct item *it, struct cats_entry **slot)
{
	/* Two arrays of one capacity: b->cap moves with the second. */
	size_t vcap = b->cap;
	if (cats_grow((void **)&b->v, &vcap, b->n, sizeof(*b->v), 16) < 0 ||
	    cats_grow((void **)&b->who, &b->cap, b->n, sizeof(*b->who), 16) < 0)
		return -1;
	b->who[b->n] = it;
	*slot = &b->v[b->n++];
	return 0;
}

static void
batch_free(struct batch *b)
{
	free(b->v);
	free(b->who);
	memset(b, 0, sizeof(*b));
}

/*
 * Send withdrawals (one record per reason) and deltas (slices of max
 * entries), the sites riding on the last record, as sma_out did.
 */
static void
send_change(struct sma_uc *u, struct batch *wd, const int *wd_reason,
    struct batch *delta, const struct cats_site *sites, size_t ns,
    size_t max, int kind, uint64_t now)
{
	int reasons[8], nr = 0;
	for (size_t i = 0; i < wd->n; i++) {
		bool seen = false;
		for (int j = 0; j < nr; j++)
			seen |= reasons[j] == wd_reason[i];
		if (!seen && nr < 8)
			reasons[nr++] = wd_reason[i];
	}
	bool has_delta = delta->n > 0 || (nr == 0 && ns > 0);
	int nrec = nr + (has_delta ? 1 : 0);
	struct cats_entry *tmp = NULL;
	if (wd->n > 0 && (tmp = calloc(wd->n, sizeof(*tmp))) == NULL)
		return;
	for (int k = 0; k < nrec; k++) {
		bool is_wd = k < nr;
		struct cats_entry *ents = delta->v;
		size_t n = delta->n;
		if (is_wd) {
			n = 0;
			for (size_t i = 0; i < wd->n; i++)
				if (wd_reason[i] == reasons[k])
					tmp[n++] = wd->v[i];
			ents = tmp;
		}
		bool last = k == nrec - 1;
		size_t off = 0;
		do {
			size_t take = n - off > max ? max : n - off;
			bool final = last && off + take == n;
			struct cats_rec r;
			head(u, &r, is_wd ? CATS_OP_WITHDRAW : CATS_OP_DELTA,
			    now);
			r.u.metric.entries.v = ents + off;
			r.u.metric.entries.n = take;
			if (is_wd)
				r.u.metric.reason = sma_wd_names[reasons[k]];
			size_t soff = 0;
			do {
				struct cats_rec rr = r;
				size_t st = 0;
				if (final) {
					st = ns - soff > SNAP_PART ? SNAP_PART
					    : ns - soff;
					rr.u.metric.sites.v =
					    (struct cats_site *)sites + soff;
					rr.u.metric.sites.n = st;
					if (soff > 0) {
						rr.u.metric.seq = ++u->seq;
						rr.u.metric.entries.n = 0;
						rr.u.metric.op = CATS_OP_DELTA;
						rr.u.metric.reason = NULL;
					}
				}
				send(u, &rr, kind);
				soff += st;
			} while (final && soff < ns);
			off += take;
		} while (off < n);
	}
	free(tmp);
}

/* The sites with something to send (pending), taken now. */
static void min_at(uint64_t *at, uint64_t t);

/*
 * The sites whose aggregate over the advertised entries changed, taken
 * now: they travel in the record that changed them.
 */
static size_t
take_sites(struct sma_uc *u, struct cats_site **out, uint64_t now)
{
	size_t n = 0, cap = 0;
	struct cats_site *v = NULL;
	while (u->spend != NULL) {
		struct site *s = u->spend;
		if (cats_grow((void **)&v, &cap, n, sizeof(*v), 8) < 0)
			break;
		site_map(s, &s->cur, &v[n++]);
		s->adv = s->cur;
		s->adv_valid = true;
		s->last_sent = now;
		s->inpend = false;
		u->spend = s->pnext;
		s->pnext = NULL;
	}
	*out = v;
	return n;
}

static bool
same_view(const struct sma_site_view *a, const struct sma_site_view *b)
{
	return a->gas == b->gas && a->has_ct == b->has_ct && a->ct == b->ct &&
	    a->health == b->health && a->healthy == b->healthy &&
	    a->total == b->total;
}

/*
 * Sites whose sums changed: their view against what was sent.  A site has
 * no thresholds, interval, windows or dampening of its own: it follows
 * its entries as they are advertised (cats-sma(1) Site aggregation).
 */
static void
sites_commit(struct sma_uc *u, uint64_t now)
{
	(void)now;
	while (u->dirty != NULL) {
		struct site *s = u->dirty;
		u->dirty = s->dnext;
		s->dnext = NULL;
		s->dirty = false;
		sma_site_view_of(&s->acc, &s->cur);
		if (!allowed(u, s->cs_id) ||
		    (s->adv_valid && same_view(&s->cur, &s->adv)))
			continue;
		if (!s->inpend) {
			s->inpend = true;
			s->pnext = u->spend;
			u->spend = s;
		}
	}
}

/* ---- flushing ---- */

/* Take the critical list out: withdrawals, critical deltas, sites. */
static void
flush_critical(struct sma_uc *u, uint64_t now)
{
	struct batch wd = { 0 }, delta = { 0 };
	int *reasons = NULL;
	size_t nreasons = 0, capr = 0;
	struct item *gone = NULL;
	bool control = u->c->uc.control;
	for (struct item *it = u->crit.head, *next; it != NULL; it = next) {
		next = it->next;
		if (it->wd >= 0) {
			struct cats_entry *w;
			if (cats_grow((void **)&reasons, &capr, nreasons,
			    sizeof(*reasons), 16) < 0)
				break;
			if (batch_add(&wd, it, &w) < 0)
				break;
			memset(w, 0, sizeof(*w));
			w->csci_id = it->csci_id;
			w->cs_id = it->adv_site ? it->adv_site->cs_id :
			    it->site->cs_id;
			CATS_SET(w, ENT, state, it->cur.state);
			CATS_SET(w, ENT, health, it->cur.health);
			CATS_SET(w, ENT, gas, 0);
			CATS_SET(w, ENT, gen, it->cur.gen);
			CATS_SET(w, ENT, ts, it->cur.ts);
			reasons[nreasons++] = it->wd;
			it->wd = -1;
			set_adv(u, it, false);
		}
		if (it->gone) {
			unpend(u, it);
			/* Freed after the records: their strings are its. */
			it->next = gone;
			gone = it;
			continue;
		}
		int cls = classify(u, it, !control);
		if (cls == C_NONE || (control && cls == C_MINOR)) {
			unpend(u, it);
			u->st.coalesced += cls != C_NONE;
			continue;
		}
		if (control && cls == C_ROUTINE) {
			pend(u, it, P_ROUTINE);
			continue;
		}
		if (control && it->damped && !degrades(u, it)) {
			if (!(it->held & H_DAMP))
				u->st.sup_damp++;
			pend(u, it, P_ROUTINE);
			it->held |= H_DAMP;
			continue;
		}
		struct cats_entry *e;
		if (batch_add(&delta, it, &e) < 0)
			break;
		build_entry(u, it, false, false, e);
		unpend(u, it);
	}
	/*
	 * What is sent is what the C-PS holds: the sites follow, over the
	 * advertised entries, in the last record of the change.
	 */
	for (size_t i = 0; i < delta.n; i++)
		advertise(u, delta.who[i], &delta.v[i], now);
	struct cats_site *sites = NULL;
	sites_commit(u, now);
	size_t ns = take_sites(u, &sites, now);
	if (wd.n > 0 || delta.n > 0 || ns > 0)
		send_change(u, &wd, reasons, &delta, sites, ns, SNAP_PART,
		    SMA_UC_CRITICAL, now);
	while (gone != NULL) {
		struct item *n = gone->next;
		gone->next = NULL;
		gone->list = P_NONE;
		set_adv(u, gone, false);
		damp_unlink(u, gone);
		cats_htab_del(&u->items, cats_hash_str(gone->csci_id), item_eq,
		    gone->csci_id);
		free_adv_ext(gone);
		free(gone);
		gone = n;
	}
	free(sites);
	free(reasons);
	batch_free(&wd);
	batch_free(&delta);
	cats_arena_reset(&u->arena);
}

/*
 * Take a token for one routine record; false (and when) if none.  The
 * bucket follows the configuration, a reloaded one too.
 */
static bool
take_token(struct sma_uc *u, uint64_t now)
{
	const struct sma_uc_conf *k = &u->c->uc;
	if (k->rate_milli == 0 || u->draining)
		return true;
	if (!u->tokens_init) {
		u->tokens_init = true;
		cats_bucket_init_milli(&u->tokens, k->rate_milli, k->burst, now);
	}
	u->tokens.rate_milli = k->rate_milli;
	u->tokens.burst = k->burst;
	if (cats_bucket_take(&u->tokens, 1, now))
		return true;
	u->token_at = now + cats_bucket_wait(&u->tokens, 1, now);
	return false;
}

static void
min_at(uint64_t *at, uint64_t t)
{
	if (t != 0 && (*at == 0 || t < *at))
		*at = t;
}

/* Take the routine entries that are ready, batched, a token a record. */
static void
flush_routine(struct sma_uc *u, uint64_t now)
{
	const struct sma_uc_conf *k = &u->c->uc;
	struct batch ready = { 0 };
	uint64_t next = 0;
	bool under_load = k->load_ppm > 0 && u->load_ppm >= k->load_ppm;
	u->routine_at = 0;
	u->token_at = 0;
	for (struct item *it = u->routine.head, *nx; it != NULL; it = nx) {
		nx = it->next;
		int cls = classify(u, it, false);
		if (cls == C_NONE || cls == C_MINOR) {
			unpend(u, it);
			u->st.coalesced++;
			continue;
		}
		if (it->damped && !degrades(u, it)) {
			if (!(it->held & H_DAMP))
				u->st.sup_damp++;
			it->held |= H_DAMP;
			continue;
		}
		if (cls == C_CRIT) {
			pend(u, it, P_CRIT);
			continue;
		}
		if (it->cur.suppress) {
			if (!(it->held & H_WINDOW))
				u->st.sup_window++;
			it->held |= H_WINDOW;
			continue;
		}
		if (!u->draining && within_interval(it->last_sent,
		    k->min_interval_ms, now)) {
			if (!(it->held & H_INTERVAL))
				u->st.sup_interval++;
			it->held |= H_INTERVAL;
			min_at(&next, it->last_sent + k->min_interval_ms + 1);
			continue;
		}
		struct cats_entry *e;
		if (batch_add(&ready, it, &e) < 0)
			break;
	}
	size_t off = 0;
	while (off < ready.n) {
		if (!take_token(u, now)) {
			u->st.sup_bucket++;
			min_at(&next, u->token_at);
			break;
		}
		size_t take = ready.n - off > k->batch_max ? k->batch_max :
		    ready.n - off;
		for (size_t i = 0; i < take; i++) {
			struct item *it = ready.who[off + i];
			build_entry(u, it, false, under_load, &ready.v[off + i]);
			if (under_load && it->cur.exthash != 0)
				u->st.omitted++;
		}
		/* The sites these entries changed travel with them. */
		for (size_t i = 0; i < take; i++) {
			struct item *it = ready.who[off + i];
			advertise(u, it, &ready.v[off + i], now);
			unpend(u, it);
		}
		struct cats_site *sites = NULL;
		sites_commit(u, now);
		size_t ns = take_sites(u, &sites, now), soff = 0;
		struct cats_rec r;
		head(u, &r, CATS_OP_DELTA, now);
		r.u.metric.entries.v = ready.v + off;
		r.u.metric.entries.n = take;
		do {
			size_t st = ns - soff > SNAP_PART ? SNAP_PART : ns - soff;
			if (soff > 0) {
				head(u, &r, CATS_OP_DELTA, now);
				r.u.metric.entries.n = 0;
			}
			r.u.metric.sites.v = sites + soff;
			r.u.metric.sites.n = st;
			send(u, &r, SMA_UC_ROUTINE);
			soff += st;
		} while (soff < ns);
		free(sites);
		off += take;
	}
	u->routine_at = next;
	batch_free(&ready);
	cats_arena_reset(&u->arena);
	if (u->crit.n > 0)
		flush_critical(u, now);
}

/* ---- life cycle ---- */

struct sma_uc *
sma_uc_new(const struct sma_conf *c, const struct sma *core, uint64_t epoch,
    uint64_t seq, sma_uc_emit_fn emit, void *arg)
{
	struct sma_uc *u = calloc(1, sizeof(*u));
	if (u == NULL)
		return NULL;
	u->c = c;
	u->core = core;
	u->epoch = epoch;
	u->seq = seq;
	u->emit = emit;
	u->arg = arg;
	u->arena.cap = 256u << 20;
	/* The jitter is reproducible: seeded by FNV-1a of the id and the
	 * epoch, never by the process's hash key. */
	uint64_t h = UINT64_C(14695981039346656037);
	for (const char *p = c->id ? c->id : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
	u->rng = h ^ epoch;
	return u;
}

void
sma_uc_set_core(struct sma_uc *u, const struct sma *core)
{
	u->core = core;
}

void
sma_uc_free(struct sma_uc *u)
{
	if (u == NULL)
		return;
	for (size_t i = 0; i < u->items.cap; i++) {
		struct item *it = u->items.s[i].h ? u->items.s[i].item : NULL;
		if (it != NULL) {
			free_adv_ext(it);
			free(it);
		}
	}
	cats_htab_free(&u->items);
	for (struct site *s = u->site_head, *n; s; s = n) {
		n = s->next;
		free(s);
	}
	cats_htab_free(&u->sites);
	sma_policy_free(u->pol);
	cats_arena_free(&u->arena);
	free(u);
}

static void
schedule_heartbeat(struct sma_uc *u, uint64_t now)
{
	const struct sma_uc_conf *k = &u->c->uc;
	u->hb_at = k->heartbeat_ms ? now + jittered(u, k->heartbeat_ms,
	    k->jitter_ppm) : 0;
}

void
sma_uc_reconf(struct sma_uc *u, const struct sma_conf *c, uint64_t now)
{
	bool hb = c->uc.heartbeat_ms != u->c->uc.heartbeat_ms;
	u->c = c;
	if (hb)
		schedule_heartbeat(u, now);
}

/* Every entry evaluated again (a new policy, a window boundary). */
static void
reevaluate(struct sma_uc *u, uint64_t now, bool policy)
{
	if (u->core == NULL)
		return;
	for (const struct sma_svc *v = sma_services(u->core); v; v = v->next)
		for (const struct sma_entry *e = v->head; e; e = e->svc_next) {
			struct item *it = get_item(u, e->csci_id, true);
			if (it != NULL)
				refresh_item(u, it, e, now, policy);
		}
	for (struct site *s = u->site_head; s; s = s->next)
		site_dirty(u, s);
}

static void commit(struct sma_uc *u, uint64_t now);

void
sma_uc_set_policy(struct sma_uc *u, struct sma_policy *p, uint64_t now)
{
	sma_policy_free(u->pol);
	u->pol = p;
	reevaluate(u, now, true);
	u->boundary_at = sma_policy_uses_time(p) ?
	    sma_policy_next_boundary(p, now) : 0;
	commit(u, now);
}

const struct sma_policy *
sma_uc_policy(const struct sma_uc *u)
{
	return u->pol;
}

/* ---- events ---- */

static void
commit(struct sma_uc *u, uint64_t now)
{
	sites_commit(u, now);
	if (!u->c->uc.control) {
		flush_critical(u, now);
		return;
	}
	if (u->crit.n > 0 || u->spend != NULL)
		flush_critical(u, now);
	if (u->c->uc.batch_ms == 0 && (u->routine.n > 0 || u->spend != NULL))
		flush_routine(u, now);
}

static void
on_entry(struct sma_uc *u, const struct sma_entry *e, uint64_t now)
{
	struct item *it = get_item(u, e->csci_id, true);
	if (it == NULL)
		return;
	refresh_item(u, it, e, now, false);
}

static void
on_withdraw(struct sma_uc *u, const struct sma_event *ev)
{
	const struct sma_entry *e = ev->ent;
	struct item *it = get_item(u, e->csci_id, true);
	if (it == NULL)
		return;
	bool known = it->accounted || it->adv_valid;
	struct vals old = it->cur;
	it->accounted = false;
	transform(u, e, ev->now, &it->cur);
	if (ev->reason == SMA_WD_FAILED) {
		it->site = get_site(u, e->svc->cs_id);
		it->accounted = it->site != NULL;
	} else if (ev->reason != SMA_WD_MOVED) {
		it->gone = true;
	}
	if (known && is_flap(&old, &it->cur))
		damp_note(u, it, ev->now);
	if (!known && !it->adv_valid) {
		/* Restored without an event, never seen: the C-PS may hold
		 * it. */
		set_adv(u, it, true);
		it->adv_site = get_site(u, e->svc->cs_id);
	}
	if (it->adv_valid) {
		it->wd = (int8_t)ev->reason;
		u->st.trig_withdraw++;
		pend(u, it, P_CRIT);
	} else if (it->gone) {
		item_free(u, it);
	}
}

static void
on_site(struct sma_uc *u, const struct sma_svc *v, uint64_t now)
{
	if (u->pol != NULL && sma_policy_uses_site(u->pol))
		for (const struct sma_entry *e = v->head; e; e = e->svc_next) {
			struct item *it = get_item(u, e->csci_id, true);
			if (it != NULL)
				refresh_item(u, it, e, now, false);
		}
	site_dirty(u, get_site(u, v->cs_id));
}

void
sma_uc_event(void *arg, const struct sma_event *ev)
{
	struct sma_uc *u = arg;
	switch (ev->kind) {
	case SMA_EV_ADD:
	case SMA_EV_UPDATE:
		on_entry(u, ev->ent, ev->now);
		break;
	case SMA_EV_WITHDRAW:
		on_withdraw(u, ev);
		break;
	case SMA_EV_SITE:
		on_site(u, ev->svc, ev->now);
		break;
	case SMA_EV_COMMIT:
		commit(u, ev->now);
		break;
	default:
		break;
	}
}

/* ---- snapshots, heartbeats, refreshes ---- */

/* Held: what a snapshot says for an entry is its advertised value. */
static bool
held(const struct sma_uc *u, const struct item *it)
{
	if (!u->c->uc.control)
		return false;
	int cls = classify(u, it, false);
	if (cls == C_CRIT)
		return it->damped && !degrades(u, it);
	if (cls == C_ROUTINE)
		return it->cur.suppress || (it->damped && !degrades(u, it));
	return false;
}

int
sma_uc_snapshot(struct sma_uc *u, uint64_t now, int op)
{
	size_t ne = u->core ? sma_count(u->core) : 0, ns = 0;
	struct batch b = { 0 };
	struct cats_site *sites = NULL;
	int rc = -1;
	u->snapgen++;
	for (const struct sma_svc *v = u->core ? sma_services(u->core) :
	    NULL; v; v = v->next) {
		for (const struct sma_entry *e = v->head; e; e = e->svc_next) {
			struct item *it = get_item(u, e->csci_id, true);
			if (it == NULL)
				goto out;
			if (!it->accounted)
				refresh_item(u, it, e, now, false);
			it->seen = u->snapgen;
			it->wd = -1;
			if (!allowed(u, v->cs_id)) {
				unpend(u, it);
				set_adv(u, it, false);
				continue;
			}
			struct cats_entry *ce;
			if (held(u, it)) {
				if (it->adv_valid && batch_add(&b, it, &ce) == 0)
					build_entry(u, it, true, false, ce);
				continue;
			}
			unpend(u, it);
			if (it->cur.state == CATS_SCI_FAILED) {
				set_adv(u, it, false);
				continue;
			}
			if (batch_add(&b, it, &ce) < 0)
				goto out;
			build_entry(u, it, false, false, ce);
		}
	}
	ne = b.n;
	/* Entries the core no longer has (evicted, moved away) go. */
	void **dead = NULL;
	size_t nd = 0;
	for (size_t i = 0; i < u->items.cap; i++) {
		struct item *it = u->items.s[i].h ? u->items.s[i].item : NULL;
		if (it != NULL && it->seen != u->snapgen) {
			void **x = realloc(dead, (nd + 1) * sizeof(*dead));
			if (x == NULL)
				break;
			dead = x;
			dead[nd++] = it;
		}
	}
	/* What the snapshot says is what the C-PS holds: the sites are
	 * the sums of it. */
	for (size_t i = 0; i < b.n; i++) {
		struct item *it = b.who[i];
		if (!held(u, it))
			advertise(u, it, &b.v[i], now);
	}
	for (size_t i = 0; i < nd; i++)
		item_free(u, dead[i]);
	free(dead);
	dead = NULL;
	nd = 0;
	for (struct site *s = u->site_head; s; s = s->next)
		ns++;
	if ((sites = calloc(ns ? ns : 1, sizeof(*sites))) == NULL)
		goto out;
	size_t j = 0;
	for (const struct sma_svc *v = u->core ? sma_services(u->core) :
	    NULL; v && j < ns; v = v->next) {
		struct site *s = get_site(u, v->cs_id);
		if (s == NULL || !allowed(u, v->cs_id))
			continue;
		sma_site_view_of(&s->acc, &s->cur);
		site_map(s, &s->cur, &sites[j++]);
		s->adv = s->cur;
		s->adv_valid = true;
		s->last_sent = now;
	}
	ns = j;
	sites_commit(u, now);
	u->spend = NULL;
	for (struct site *s = u->site_head; s; s = s->next) {
		s->inpend = false;
		s->pnext = NULL;
	}
	size_t pe = (ne + SNAP_PART - 1) / SNAP_PART;
	size_t ps = (ns + SNAP_PART - 1) / SNAP_PART;
	size_t parts = pe > ps ? pe : ps;
	if (parts == 0)
		parts = 1;
	if (parts > 65535)
		goto out;
	rc = 0;
	for (size_t p = 0; p < parts; p++) {
		struct cats_rec r;
		head(u, &r, op, now);
		CATS_SET(&r.u.metric, MET, part, p + 1);
		CATS_SET(&r.u.metric, MET, parts, parts);
		size_t o = p * SNAP_PART;
		if (o < ne) {
			r.u.metric.entries.v = b.v + o;
			r.u.metric.entries.n = ne - o > SNAP_PART ? SNAP_PART :
			    ne - o;
		}
		if (o < ns) {
			r.u.metric.sites.v = sites + o;
			r.u.metric.sites.n = ns - o > SNAP_PART ? SNAP_PART :
			    ns - o;
		}
		if (send(u, &r, SMA_UC_SNAPSHOT) < 0)
			rc = -1;
	}
	u->st.last_full = now;
	schedule_heartbeat(u, now);
out:
	free(sites);
	batch_free(&b);
	cats_arena_reset(&u->arena);
	return rc;
}

void
sma_uc_seed(struct sma_uc *u, uint64_t now)
{
	if (u->core == NULL)
		return;
	for (const struct sma_svc *v = sma_services(u->core); v; v = v->next) {
		for (const struct sma_entry *e = v->head; e; e = e->svc_next) {
			struct item *it = get_item(u, e->csci_id, true);
			if (it == NULL)
				continue;
			struct site *s = get_site(u, v->cs_id);
			transform(u, e, now, &it->cur);
			it->site = s;
			it->accounted = true;
			adv_unaccount(u, it);
			it->adv = it->cur;
			it->adv_site = s;
			set_adv(u, it, it->cur.state != CATS_SCI_FAILED);
			adv_account(u, it);
			it->last_sent = 0;
		}
	}
	for (struct site *s = u->site_head; s; s = s->next) {
		sma_site_view_of(&s->acc, &s->cur);
		s->adv = s->cur;
		s->adv_valid = true;
	}
	u->dirty = NULL;
	for (struct site *s = u->site_head; s; s = s->next) {
		s->dirty = false;
		s->dnext = NULL;
	}
}

int
sma_uc_withdraw_saved(struct sma_uc *u, const struct cats_entry *e,
    int reason, uint64_t now)
{
	struct cats_entry w;
	struct cats_rec r;
	sma_withdrawal_entry(e, &w);
	head(u, &r, CATS_OP_WITHDRAW, now);
	r.u.metric.entries.v = &w;
	r.u.metric.entries.n = 1;
	r.u.metric.reason = sma_wd_names[reason];
	return send(u, &r, SMA_UC_CRITICAL);
}

static void
heartbeat(struct sma_uc *u, uint64_t now)
{
	const struct sma_uc_conf *k = &u->c->uc;
	bool refresh = k->refresh == SMA_REFRESH_ON ||
	    (k->refresh == SMA_REFRESH_AUTO && u->peer_refresh);
	u->hb_count++;
	if (refresh && u->hb_count % k->full_every != 0) {
		struct cats_rec r;
		head(u, &r, CATS_OP_REFRESH, now);
		send(u, &r, SMA_UC_REFRESH);
		schedule_heartbeat(u, now);
		return;
	}
	sma_uc_snapshot(u, now, CATS_OP_HEARTBEAT);
}

/* Damped entries whose penalty fell below reuse. */
static void
reuse(struct sma_uc *u, uint64_t now)
{
	char b[CATS_ID + 1];
	for (struct item *it = u->damped, *n; it != NULL; it = n) {
		n = it->dnext;
		if (reuse_time(u, &it->d) > now)
			continue;
		damp_unlink(u, it);
		u->st.damp_reused++;
		cats_audit("damp", "csci=%s penalty=%.0f action=reuse",
		    cats_safe(it->csci_id, b, sizeof(b)), decayed(u, &it->d, now));
		it->held &= (uint8_t)~H_DAMP;
		int cls = classify(u, it, false);
		if (cls == C_CRIT)
			pend(u, it, P_CRIT);
		else if (cls == C_ROUTINE && it->list == P_NONE)
			pend(u, it, P_ROUTINE);
		if (cls == C_ROUTINE)
			min_at(&u->routine_at, now);
	}
	recompute_reuse(u);
}

uint64_t
sma_uc_next_deadline(const struct sma_uc *u)
{
	uint64_t t = 0;
	min_at(&t, u->routine_at);
	min_at(&t, u->boundary_at);
	min_at(&t, u->reuse_at);
	min_at(&t, u->hb_at);
	return t;
}

uint64_t
sma_uc_tick(struct sma_uc *u, uint64_t now)
{
	if (u->boundary_at && u->boundary_at <= now) {
		reevaluate(u, now, false);
		u->boundary_at = sma_policy_next_boundary(u->pol, now);
		commit(u, now);
		min_at(&u->routine_at, now);
	}
	if (u->reuse_at && u->reuse_at <= now)
		reuse(u, now);
	if (u->crit.n > 0)
		flush_critical(u, now);
	if (u->routine_at && u->routine_at <= now)
		flush_routine(u, now);
	if (u->hb_at && u->hb_at <= now)
		heartbeat(u, now);
	return sma_uc_next_deadline(u);
}

void
sma_uc_drain(struct sma_uc *u, uint64_t now)
{
	commit(u, now);
	u->draining = true;
	if (u->routine.n > 0 || u->spend != NULL)
		flush_routine(u, now);
	u->draining = false;
}

void
sma_uc_peer_refresh(struct sma_uc *u, bool ok)
{
	u->peer_refresh = ok;
}

void
sma_uc_set_load(struct sma_uc *u, uint64_t ppm)
{
	u->load_ppm = ppm;
}

uint64_t
sma_uc_seq(const struct sma_uc *u)
{
	return u->seq;
}

void
sma_uc_renumber(struct sma_uc *u, uint64_t seq)
{
	if (seq > u->seq)
		u->seq = seq;
}

uint64_t
sma_uc_epoch(const struct sma_uc *u)
{
	return u->epoch;
}

size_t
sma_uc_count(const struct sma_uc *u)
{
	return u->nadv;
}

void
sma_uc_view(const struct sma_uc *u,
    void (*fn)(void *arg, const struct cats_entry *e), void *arg)
{
	struct sma_uc *w = (struct sma_uc *)u;	/* the arena only */
	for (size_t i = 0; i < u->items.cap; i++) {
		const struct item *it = u->items.s[i].h ? u->items.s[i].item :
		    NULL;
		if (it == NULL || !it->adv_valid)
			continue;
		struct cats_entry e;
		build_entry(w, it, true, false, &e);
		fn(arg, &e);
		cats_arena_reset(&w->arena);
	}
}

const struct sma_uc_stats *
sma_uc_stats(const struct sma_uc *u)
{
	struct sma_uc_stats *st = (struct sma_uc_stats *)&u->st;
	st->pending = u->crit.n + u->routine.n;
	return st;
}
