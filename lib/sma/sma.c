/*
 * sma.c - the C-SMA core: authentication, validation, the metric cache,
 * the per-SCI state machine, site aggregation and the quarantine.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "base/htab.h"
#include "base/list.h"
#include "base/log.h"
#include "sma/sma.h"

const char *const sma_flag_names[] = { "gas-jump", "ct-jump", "flap",
	"ct-zero", "released", NULL };
const char *const sma_wd_names[] = { "failed", "evicted", "expired", "moved",
	"withdrawn", NULL };

#define NO_HEAP UINT32_MAX
#define RING 16
#define ANOMALIES (SMA_FL_GAS_JUMP | SMA_FL_CT_JUMP | SMA_FL_FLAP)

struct sma {
	const struct sma_conf *c;
	const struct sma_keys *k;
	sma_event_fn fn;
	void *arg;
	struct cats_htab ents;		/* by CSCI-ID */
	struct cats_htab svcs;		/* by CS-ID */
	struct sma_svc *svc_head, *svc_tail;
	size_t nsvcs;
	struct sma_entry *lru_head, *lru_tail;
	size_t n;
	struct sma_entry **heap;
	size_t nheap, capheap;
	struct sma_qitem *q;		/* quarantine, oldest first */
	size_t nq;
	uint64_t qid;
	struct sma_svc *dirty[8];	/* services touched by a change set */
	size_t ndirty;
	bool dirty_all;
	uint8_t tokkey[crypto_shorthash_siphashx24_KEYBYTES];
	struct cats_dec dec;		/* for released reports */
	struct sma_origin *origins;	/* of imported entries */
	size_t norigins;
	struct cats_bucket in_all;	/* [limits] rate, burst */
	bool in_all_init;
	struct aud_slot *aud;		/* the audit limiter's kinds */
	uint64_t aud_due;		/* the first window to close, 0: none */
	struct sma_stats st;
};

/* ---- the audit limiter ---- */

#define AUD_SLOTS 64

/* One kind of audit line and its window. */
struct aud_slot {
	uint64_t h;		/* hash of event and kind, 0: free */
	uint64_t start;		/* the window's start */
	uint64_t lines;		/* written in it */
	uint64_t more;		/* held back in it */
	char event[24];
	char kind[104];
};

static uint64_t
aud_hash(const char *event, const char *kind)
{
	uint64_t h = UINT64_C(14695981039346656037);
	for (const char *p = event; *p; p++)
		h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
	h = (h ^ '/') * UINT64_C(1099511628211);
	for (const char *p = kind; *p; p++)
		h = (h ^ (unsigned char)*p) * UINT64_C(1099511628211);
	return h ? h : 1;
}

/* The line that closes a window: "N more like this". */
static void
aud_close(struct sma *s, struct aud_slot *a)
{
	if (a->more > 0)
		cats_audit(a->event, "%s%smore=%" PRIu64 " window_ms=%" PRIu64
		    " note=\"%" PRIu64 " more like this\"", a->kind,
		    a->kind[0] ? " " : "", a->more, s->c->audit_window_ms,
		    a->more);
	memset(a, 0, sizeof(*a));
}

static void
aud_recompute(struct sma *s)
{
	s->aud_due = 0;
	for (size_t i = 0; s->aud != NULL && i < AUD_SLOTS; i++) {
		struct aud_slot *a = &s->aud[i];
		uint64_t t = a->start + s->c->audit_window_ms + 1;
		if (a->h && a->more > 0 && (s->aud_due == 0 || t < s->aud_due))
			s->aud_due = t;
	}
}

void
sma_audit_flush(struct sma *s, uint64_t now, bool all)
{
	if (s->aud == NULL || (!all && (s->aud_due == 0 || s->aud_due > now)))
		return;
	for (size_t i = 0; i < AUD_SLOTS; i++) {
		struct aud_slot *a = &s->aud[i];
		if (a->h && (all || a->start + s->c->audit_window_ms < now))
			aud_close(s, a);
	}
	aud_recompute(s);
}

/* The slot of a kind, a free one, or (all taken) the oldest, closed. */
static struct aud_slot *
aud_slot(struct sma *s, uint64_t h, uint64_t now)
{
	struct aud_slot *oldest = NULL;
	for (size_t i = 0; i < AUD_SLOTS; i++) {
		struct aud_slot *a = &s->aud[(h + i) % AUD_SLOTS];
		if (a->h == h)
			return a;
		if (a->h == 0 || (a->more == 0 &&
		    a->start + s->c->audit_window_ms < now)) {
			memset(a, 0, sizeof(*a));
			return a;
		}
		if (oldest == NULL || a->start < oldest->start)
			oldest = a;
	}
	aud_close(s, oldest);
	aud_recompute(s);
	return oldest;
}

static void vaudit(struct sma *s, uint64_t now, uint64_t burst,
    const char *event, const char *kind, const char *fmt, va_list ap)
    __attribute__((format(printf, 6, 0)));

void
sma_audit(struct sma *s, uint64_t now, const char *event, const char *kind,
    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vaudit(s, now, s->c->audit_burst, event, kind, fmt, ap);
	va_end(ap);
}

/* An audit line of a kind, at most burst of them a window (0: all). */
static void
vaudit(struct sma *s, uint64_t now, uint64_t burst, const char *event,
    const char *kind, const char *fmt, va_list ap)
{
	char line[1024];
	vsnprintf(line, sizeof(line), fmt, ap);
	if (burst == 0) {
		cats_audit(event, "%s", line);
		return;
	}
	if (s->aud == NULL &&
	    (s->aud = calloc(AUD_SLOTS, sizeof(*s->aud))) == NULL) {
		cats_audit(event, "%s", line);
		return;
	}
	uint64_t h = aud_hash(event, kind);
	struct aud_slot *a = aud_slot(s, h, now);
	if (a->h == h && a->start + s->c->audit_window_ms < now) {
		aud_close(s, a);
		aud_recompute(s);
	}
	if (a->h != h) {
		a->h = h;
		a->start = now;
		cats_strlcpy(a->event, event, sizeof(a->event));
		cats_strlcpy(a->kind, kind, sizeof(a->kind));
	}
	if (a->lines < burst) {
		a->lines++;
		cats_audit(event, "%s", line);
		return;
	}
	if (a->more++ == 0) {
		uint64_t t = a->start + s->c->audit_window_ms + 1;
		if (s->aud_due == 0 || t < s->aud_due)
			s->aud_due = t;
	}
	s->st.audit_suppressed++;
}

/* ---- lookups ---- */

static bool
ent_eq(const void *item, const void *key)
{
	return strcmp(((const struct sma_entry *)item)->csci_id, key) == 0;
}

static bool
svc_eq(const void *item, const void *key)
{
	return strcmp(((const struct sma_svc *)item)->cs_id, key) == 0;
}

const struct sma_entry *
sma_lookup(const struct sma *s, const char *csci_id)
{
	return cats_htab_get(&s->ents, cats_hash_str(csci_id), ent_eq, csci_id);
}

static struct sma_entry *
lookup(struct sma *s, const char *csci_id, uint64_t h)
{
	return cats_htab_get(&s->ents, h, ent_eq, csci_id);
}

const struct sma_svc *
sma_service(const struct sma *s, const char *cs_id)
{
	return cats_htab_get(&s->svcs, cats_hash_str(cs_id), svc_eq, cs_id);
}

const struct sma_svc *
sma_services(const struct sma *s)
{
	return s->svc_head;
}

const struct sma_entry *
sma_lru_first(const struct sma *s)
{
	return s->lru_head;
}

size_t
sma_count(const struct sma *s)
{
	return s->n;
}

const struct sma_stats *
sma_stats(const struct sma *s)
{
	return &s->st;
}

static const struct sma_cfg_svc *
svc_cfg(const struct sma_conf *c, const char *cs_id)
{
	for (size_t i = 0; i < c->nsvcs; i++)
		if (strcmp(c->svcs[i].cs_id, cs_id) == 0)
			return &c->svcs[i];
	return NULL;
}

static struct sma_svc *
svc_get(struct sma *s, const char *cs_id, bool create)
{
	bool made;
	struct sma_svc *v = cats_htab_str_item(&s->svcs, cs_id, svc_eq,
	    sizeof(struct sma_svc), offsetof(struct sma_svc, cs_id),
	    create && s->nsvcs < s->c->max_services, &made);
	if (!made)
		return v;
	v->cfg = svc_cfg(s->c, cs_id);
	v->view.health = CATS_UNKNOWN;
	if (s->svc_tail)
		s->svc_tail->next = v;
	else
		s->svc_head = v;
	s->svc_tail = v;
	s->nsvcs++;
	return v;
}

/* ---- the deadline heap ---- */

static bool
before(const struct sma_entry *a, const struct sma_entry *b)
{
	return a->deadline < b->deadline;
}

static void
heap_set(struct sma *s, size_t i, struct sma_entry *e)
{
	s->heap[i] = e;
	e->heap = (uint32_t)i;
}

static void
heap_up(struct sma *s, size_t i)
{
	struct sma_entry *e = s->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!before(e, s->heap[p]))
			break;
		heap_set(s, i, s->heap[p]);
		i = p;
	}
	heap_set(s, i, e);
}

static void
heap_down(struct sma *s, size_t i)
{
	struct sma_entry *e = s->heap[i];
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		const struct sma_entry *best = e;
		if (l < s->nheap && before(s->heap[l], best)) {
			m = l;
			best = s->heap[l];
		}
		if (l + 1 < s->nheap && before(s->heap[l + 1], best))
			m = l + 1;
		if (m == i)
			break;
		heap_set(s, i, s->heap[m]);
		i = m;
	}
	heap_set(s, i, e);
}

static void
heap_del(struct sma *s, struct sma_entry *e)
{
	if (e->heap == NO_HEAP)
		return;
	size_t i = e->heap;
	e->heap = NO_HEAP;
	struct sma_entry *last = s->heap[--s->nheap];
	if (i == s->nheap)
		return;
	heap_set(s, i, last);
	heap_up(s, i);
	heap_down(s, last->heap);
}

/* Set an entry's deadline (0: none) and its place in the heap. */
static void
set_deadline(struct sma *s, struct sma_entry *e, uint64_t t)
{
	e->deadline = t;
	if (t == 0) {
		heap_del(s, e);
		return;
	}
	if (e->heap == NO_HEAP) {
		if (s->nheap == s->capheap) {
			size_t cap = s->capheap ? s->capheap * 2 : 64;
			void *v = realloc(s->heap, cap * sizeof(*s->heap));
			if (v == NULL)
				abort();	/* no way to keep a timer */
			s->heap = v;
			s->capheap = cap;
		}
		heap_set(s, s->nheap++, e);
		heap_up(s, e->heap);
		return;
	}
	heap_up(s, e->heap);
	heap_down(s, e->heap);
}

uint64_t
sma_next_deadline(const struct sma *s)
{
	uint64_t t = s->nheap ? s->heap[0]->deadline : 0;
	if (s->aud_due != 0 && (t == 0 || s->aud_due < t))
		t = s->aud_due;
	return t;
}

/* ---- LRU ---- */

static void
lru_unlink(struct sma *s, struct sma_entry *e)
{
	CATS_LIST_REMOVE(s->lru_head, s->lru_tail, e, lru_prev, lru_next);
}

static void
lru_touch(struct sma *s, struct sma_entry *e)
{
	if (s->lru_tail == e)
		return;
	if (e->lru_prev || e->lru_next || s->lru_head == e)
		lru_unlink(s, e);
	CATS_LIST_APPEND(s->lru_head, s->lru_tail, e, lru_prev, lru_next);
}

/* ---- site aggregation ---- */

static bool
contributes(int state, int health, bool has_gas)
{
	return state != CATS_SCI_FAILED && has_gas &&
	    (health == CATS_HEALTHY || health == CATS_DEGRADED);
}

void
sma_site_acc(struct sma_site_acc *a, int state, int health, bool has_gas,
    uint64_t gas, bool has_ct, uint64_t ct, int sign)
{
	uint64_t one = sign > 0 ? 1 : (uint64_t)-1;
	a->n += one;
	if (state == CATS_SCI_FAILED)
		a->n_failed += one;
	else if (health == CATS_HEALTHY)
		a->n_healthy += one;
	else if (health == CATS_DEGRADED)
		a->n_degraded += one;
	else if (health == CATS_UNHEALTHY)
		a->n_unhealthy += one;
	else
		a->n_unknown += one;
	if (!contributes(state, health, has_gas))
		return;
	if (sign > 0) {
		a->sum_gas += gas;
		if (has_ct) {
			a->sum_gw += gas;
			a->sum_gct += (unsigned __int128)gas * ct;
		}
	} else {
		a->sum_gas -= gas;
		if (has_ct) {
			a->sum_gw -= gas;
			a->sum_gct -= (unsigned __int128)gas * ct;
		}
	}
}

static bool
entry_contributes(const struct sma_entry *e)
{
	return contributes(e->state, e->health, e->has & SMA_HAS_GAS);
}

/* Add (sign 1) or remove (sign -1) an entry's share of its service. */
static void
account(struct sma_svc *v, const struct sma_entry *e, int sign)
{
	sma_site_acc(&v->acc, e->state, e->health, e->has & SMA_HAS_GAS, e->gas,
	    e->has & SMA_HAS_CT, e->ct, sign);
}

void
sma_metric_head(const struct sma_conf *c, uint64_t epoch, uint64_t seq,
    int op, uint64_t now, struct cats_rec *r)
{
	cats_rec_init(r, CATS_T_METRIC);
	struct cats_metric *m = &r->u.metric;
	m->op = op;
	m->sma_id = c->id;
	m->epoch = epoch;
	m->seq = seq;
	m->ts = now;
	m->site = c->site;
	m->egress = c->egress;
	CATS_SET_IF(c->advert_ttl_ms, m, MET, ttl_ms, c->advert_ttl_ms);
}

void
sma_withdrawal_entry(const struct cats_entry *e, struct cats_entry *w)
{
	memset(w, 0, sizeof(*w));
	w->csci_id = e->csci_id;
	w->cs_id = e->cs_id;
	CATS_SET(w, ENT, state, CATS_HAS(e, ENT, state) ? e->state
	    : CATS_SCI_STALE);
	CATS_SET(w, ENT, health, CATS_HAS(e, ENT, health) ? e->health
	    : CATS_UNKNOWN);
	CATS_SET(w, ENT, gas, 0);
	CATS_SET_IF(CATS_HAS(e, ENT, gen), w, ENT, gen, e->gen);
	CATS_SET_IF(CATS_HAS(e, ENT, ts), w, ENT, ts, e->ts);
}

void
sma_site_view_of(const struct sma_site_acc *a, struct sma_site_view *out)
{
	memset(out, 0, sizeof(*out));
	out->total = a->n;
	out->healthy = a->n_healthy;
	out->gas = a->n_healthy > 0 ? a->sum_gas : 0;
	if (out->gas > 0 && a->sum_gw > 0) {
		out->has_ct = true;
		out->ct = (uint64_t)((a->sum_gct + a->sum_gw / 2) / a->sum_gw);
	}
	uint64_t live = a->n - a->n_failed;
	if (a->n == 0)
		out->health = CATS_UNKNOWN;
	else if (live == 0)
		out->health = CATS_UNHEALTHY;
	else if (a->n_healthy == live)
		out->health = CATS_HEALTHY;
	else if (a->n_healthy + a->n_degraded > 0)
		out->health = CATS_DEGRADED;
	else if (a->n_unknown == live)
		out->health = CATS_UNKNOWN;
	else
		out->health = CATS_UNHEALTHY;
}

static void
mark_dirty(struct sma *s, struct sma_svc *v)
{
	for (size_t i = 0; i < s->ndirty; i++)
		if (s->dirty[i] == v)
			return;
	if (s->ndirty < CATS_ARRAY_LEN(s->dirty))
		s->dirty[s->ndirty++] = v;
	else
		s->dirty_all = true;
}

static void
emit(struct sma *s, const struct sma_event *ev)
{
	if (s->fn != NULL)
		s->fn(s->arg, ev);
}

static void
site_check(struct sma *s, struct sma_svc *v, uint64_t now)
{
	struct sma_site_view nv;
	sma_site_view_of(&v->acc, &nv);
	if (memcmp(&nv, &v->view, sizeof(nv)) == 0)
		return;
	v->view = nv;
	struct sma_event ev = { .kind = SMA_EV_SITE, .now = now, .svc = v };
	emit(s, &ev);
}

/* End a change set: site events for the services touched, then COMMIT. */
static void
commit(struct sma *s, uint64_t now)
{
	if (s->dirty_all) {
		for (struct sma_svc *v = s->svc_head; v; v = v->next)
			site_check(s, v, now);
	} else {
		for (size_t i = 0; i < s->ndirty; i++)
			site_check(s, s->dirty[i], now);
	}
	s->ndirty = 0;
	s->dirty_all = false;
	struct sma_event ev = { .kind = SMA_EV_COMMIT, .now = now };
	emit(s, &ev);
}

/* ---- entries ---- */

static void
clear_ext(struct sma_entry *e)
{
	for (size_t i = 0; i < e->next_n; i++)
		free((char *)e->ext[i].k);
	free(e->ext);
	e->ext = NULL;
	e->next_n = 0;
}

static void
svc_unlink(struct sma_entry *e)
{
	struct sma_svc *v = e->svc;
	CATS_LIST_REMOVE(v->head, v->tail, e, svc_prev, svc_next);
}

static void
svc_link(struct sma_svc *v, struct sma_entry *e)
{
	e->svc = v;
	CATS_LIST_APPEND(v->head, v->tail, e, svc_prev, svc_next);
}

static void
entry_free(struct sma_entry *e)
{
	clear_ext(e);
	free(e->smooth);
	free(e->flap);
	free(e->tok_cnf);
	free(e);
}

/* Take an entry out of the cache entirely. */
static void
entry_remove(struct sma *s, struct sma_entry *e)
{
	account(e->svc, e, -1);
	mark_dirty(s, e->svc);
	svc_unlink(e);
	lru_unlink(s, e);
	heap_del(s, e);
	cats_htab_del(&s->ents, cats_hash_str(e->csci_id), ent_eq, e->csci_id);
	s->n--;
}

static void
withdraw_event(struct sma *s, struct sma_entry *e, int reason, uint64_t now)
{
	struct sma_event ev = { .kind = SMA_EV_WITHDRAW, .now = now, .ent = e,
		.svc = e->svc, .reason = reason, .critical = true };
	emit(s, &ev);
}

/* An SCI that now reports another CS-ID: withdrawn from the old one and
 * moved to v as FAILED, until its report is taken again. */
static void
move_entry(struct sma *s, struct sma_entry *e, struct sma_svc *v, uint64_t now)
{
	char b[CATS_ID + 1];
	sma_audit(s, now, "move", "", "csci=%s from=%s to=%s",
	    cats_safe(e->csci_id, b, sizeof(b)), e->svc->cs_id, v->cs_id);
	account(e->svc, e, -1);
	mark_dirty(s, e->svc);
	if (e->state != CATS_SCI_FAILED)
		withdraw_event(s, e, SMA_WD_MOVED, now);
	svc_unlink(e);
	svc_link(v, e);
	e->state = CATS_SCI_FAILED;
	account(v, e, 1);
}

/* Evict the least recently updated entry: a withdrawal. */
static void
evict_one(struct sma *s, uint64_t now)
{
	struct sma_entry *e = s->lru_head;
	char b[CATS_ID + 1];
	if (e == NULL)
		return;
	sma_audit(s, now, "evict", "reason=cache-full", "csci=%s cs=%s "
	    "reason=cache-full", cats_safe(e->csci_id, b, sizeof(b)),
	    e->svc->cs_id);
	s->st.evicted++;
	entry_remove(s, e);
	if (e->state != CATS_SCI_FAILED)
		withdraw_event(s, e, SMA_WD_EVICTED, now);
	entry_free(e);
}

static struct sma_entry *
entry_new(struct sma *s, const char *csci_id, uint64_t h, struct sma_svc *v)
{
	size_t n = strlen(csci_id) + 1;
	struct sma_entry *e = calloc(1, sizeof(*e) + n);
	if (e == NULL)
		return NULL;
	memcpy(e->csci_id, csci_id, n);
	e->heap = NO_HEAP;
	e->state = CATS_SCI_ACTIVE;
	e->health = CATS_UNKNOWN;
	e->rhealth = CATS_UNKNOWN;
	if (cats_htab_put(&s->ents, h, e) < 0) {
		free(e);
		return NULL;
	}
	svc_link(v, e);
	lru_touch(s, e);
	s->n++;
	return e;
}

/* What an entry advertises, for change detection. */
struct adv {
	uint64_t gas;
	uint32_t ct, price;
	uint8_t rep, sec, health, state, flags, has;
	uint16_t port;
	struct cats_ip loc;
	uint64_t exthash;
};

static void
adv_of(const struct sma_entry *e, struct adv *a)
{
	memset(a, 0, sizeof(*a));
	a->gas = entry_contributes(e) ? e->gas : 0;
	a->ct = e->ct;
	a->price = e->price;
	a->rep = e->rep;
	a->sec = e->sec;
	a->health = e->health;
	a->state = e->state;
	a->flags = e->flags;
	a->has = e->has;
	a->port = e->port;
	a->loc = e->locator;
	uint64_t h = e->next_n;
	for (size_t i = 0; i < e->next_n; i++)
		h = h * 1000003 ^ cats_hash_str(e->ext[i].k) ^ e->ext[i].v * 31;
	a->exthash = h;
}

static uint32_t
adv_diff(const struct adv *a, const struct adv *b)
{
	uint32_t m = 0;
	if (a->gas != b->gas || ((a->has ^ b->has) & SMA_HAS_GAS))
		m |= SMA_CH_GAS;
	if (a->ct != b->ct || ((a->has ^ b->has) & SMA_HAS_CT))
		m |= SMA_CH_CT;
	if (a->price != b->price || ((a->has ^ b->has) & SMA_HAS_PRICE))
		m |= SMA_CH_PRICE;
	if (a->rep != b->rep || ((a->has ^ b->has) & SMA_HAS_REPUTATION))
		m |= SMA_CH_REPUTATION;
	if (a->sec != b->sec || ((a->has ^ b->has) & SMA_HAS_SECURITY))
		m |= SMA_CH_SECURITY;
	if (a->exthash != b->exthash)
		m |= SMA_CH_EXT;
	if (a->health != b->health)
		m |= SMA_CH_HEALTH;
	if (a->state != b->state)
		m |= SMA_CH_STATE;
	if (a->flags != b->flags)
		m |= SMA_CH_FLAGS;
	if (a->port != b->port || !cats_ip_eq(&a->loc, &b->loc) ||
	    ((a->has ^ b->has) & SMA_HAS_PORT))
		m |= SMA_CH_LOCATOR;
	return m;
}

static void
update_event(struct sma *s, struct sma_entry *e, const struct adv *old,
    uint64_t now)
{
	struct adv nw;
	adv_of(e, &nw);
	uint32_t m = adv_diff(old, &nw);
	if (m == 0)
		return;
	struct sma_event ev = { .kind = SMA_EV_UPDATE, .now = now, .ent = e,
		.svc = e->svc, .changed = m, .old_health = old->health,
		.old_state = old->state,
		.critical = (m & (SMA_CH_HEALTH | SMA_CH_STATE)) != 0 };
	emit(s, &ev);
}

/* ---- timing ---- */

static uint64_t
ttl_of(const struct sma_ttl *t, const struct sma_ttl *dflt, uint64_t interval)
{
	if (t == NULL || (t->mult_ppm == 0 && t->ms == 0))
		t = dflt;
	if (t->ms)
		return t->ms;
	uint64_t v = interval * t->mult_ppm / 1000000;
	return v ? v : 1;
}

/* The entry's interval and TTLs from the report, the SCI and the service. */
static void
set_timing(struct sma *s, struct sma_entry *e, uint64_t reported)
{
	const struct sma_conf *c = s->c;
	const struct sma_cfg_sci *ci = sma_conf_sci(c, e->csci_id);
	const struct sma_cfg_svc *cv = e->svc->cfg;
	uint64_t iv = c->interval_ms;
	if (cv && cv->interval_ms)
		iv = cv->interval_ms;
	if (ci && ci->interval_ms)
		iv = ci->interval_ms;
	if (reported)
		iv = reported;
	if (iv > c->max_interval_ms)
		iv = c->max_interval_ms;
	if (iv == 0)
		iv = 1;
	e->interval_ms = (uint32_t)iv;
	uint64_t t = ttl_of(cv ? &cv->ttl : NULL, &c->ttl, iv);
	e->ttl_ms = (uint32_t)(t > CATS_U32 ? CATS_U32 : t);
	t = ttl_of(cv ? &cv->ttl_static : NULL, &c->ttl_static, iv);
	e->ttl_static_ms = (uint32_t)(t > CATS_U32 ? CATS_U32 : t);
}

static uint64_t
grace_of(const struct sma *s, const struct sma_entry *e)
{
	const struct sma_cfg_svc *cv = e->svc->cfg;
	return cv && cv->grace_ms ? cv->grace_ms : s->c->grace_ms;
}

#define STATIC_HAS (SMA_HAS_PRICE | SMA_HAS_REPUTATION | SMA_HAS_SECURITY)

/*
 * "Within D" is inclusive everywhere (cats-sma(1) TIME WINDOWS): a report
 * exactly D after the last one is within D, so a timer of length D fires
 * at the first millisecond past it, ref + D + 1.
 */
static bool
past(uint64_t ref, uint64_t d, uint64_t now)
{
	return now > ref + d;
}

/* When the entry's next timer is really due (0: none). */
static uint64_t
due_at(const struct sma *s, const struct sma_entry *e)
{
	uint64_t t = 0;
	switch (e->state) {
	case CATS_SCI_ACTIVE:
	case CATS_SCI_HEALTHY:
		t = e->updated + e->ttl_ms + 1;
		break;
	case CATS_SCI_STALE:
		t = e->since + grace_of(s, e) + 1;
		break;
	default:
		break;
	}
	if (e->state != CATS_SCI_FAILED &&
	    ((e->has & STATIC_HAS) || e->next_n)) {
		uint64_t st = e->static_at + e->ttl_static_ms + 1;
		if (t == 0 || st < t)
			t = st;
	}
	return t;
}

/*
 * The heap is lazy: a report that pushes the entry's deadline later leaves
 * its heap key alone (the report path then touches no other entry); when
 * the old key comes up, the timer finds nothing due and files the entry
 * under its real deadline.  Keys are never later than the real deadline,
 * so every timer still fires at its own time.
 */
static void
reschedule(struct sma *s, struct sma_entry *e)
{
	uint64_t t = due_at(s, e);
	if (t == 0 || e->heap == NO_HEAP || t < e->deadline)
		set_deadline(s, e, t);
}

/* ---- authentication ---- */

static int
rej(struct sma_result *res, int status, const char *field, const char *fmt,
    ...) __attribute__((format(printf, 4, 5)));

static int
rej(struct sma_result *res, int status, const char *field, const char *fmt,
    ...)
{
	va_list ap;
	res->verdict = SMA_REJECTED;
	res->status = status;
	cats_strlcpy(res->err.field, field ? field : "", sizeof(res->err.field));
	va_start(ap, fmt);
	vsnprintf(res->err.reason, sizeof(res->err.reason), fmt, ap);
	va_end(ap);
	return -1;
}

static int
cti_cmp(const void *a, const void *b)
{
	return memcmp(a, b, CATS_TOKEN_CTI_LEN);
}

static bool
revoked(const struct sma_keys *k, const uint8_t cti[CATS_TOKEN_CTI_LEN])
{
	return k->nrevoked && bsearch(cti, k->revoked, k->nrevoked,
	    sizeof(*k->revoked), cti_cmp) != NULL;
}

/* What authentication found out, applied to the entry on acceptance. */
struct authinfo {
	bool fresh;		/* verified now: cache it */
	uint8_t hash[16];
	uint8_t cti[CATS_TOKEN_CTI_LEN];
	uint64_t exp;
	bool has_cnf;
	uint8_t cnf[32];
};

static int
check_record_sig(const struct cats_rec *r, const uint8_t cnf[32],
    struct sma_result *res)
{
	struct cats_key k;
	uint8_t h[32];
	memset(&k, 0, sizeof(k));
	k.kind = CATS_KEY_ED25519_PUBLIC;
	memcpy(k.pk, cnf, 32);
	/* The kid of an Ed25519 key (crypto.h): BLAKE2b-256 of it, 8 bytes. */
	crypto_generichash(h, sizeof(h), cnf, 32, NULL, 0);
	memcpy(k.kid, h, CATS_KID_LEN);
	struct cats_keyring kr = { &k, 1 };
	struct cats_err e;
	memset(&e, 0, sizeof(e));
	if (r->auth.alg != CATS_ALG_EDDSA)
		return rej(res, 401, "auth", "the token binds a key: the "
		    "report must be signed with it");
	if (cats_rec_verify(r, &kr, NULL, &e) < 0)
		return rej(res, 401, "auth", "%s", e.reason);
	return 0;
}

static int
authenticate(struct sma *s, const struct cats_rec *r, struct sma_entry *e,
    uint64_t now, struct authinfo *ai, struct sma_result *res)
{
	const struct cats_sci_report *sr = &r->u.sci;
	memset(ai, 0, sizeof(*ai));
	if (sr->token.p == NULL)
		return rej(res, 401, "token", "missing (reports must carry a "
		    "token made by cats-key token)");
	crypto_shorthash_siphashx24(ai->hash, sr->token.p, sr->token.n,
	    s->tokkey);
	const uint8_t *cnf = NULL;
	if (e != NULL && e->tok_ok && e->svc != NULL &&
	    strcmp(e->svc->cs_id, sr->cs_id) == 0 &&
	    sodium_memcmp(e->tok_hash, ai->hash, 16) == 0) {
		if (e->tok_exp <= now / 1000) {
			e->tok_ok = false;
			return rej(res, 401, "token", "%s",
			    cats_token_status_name(CATS_TOKEN_EXPIRED));
		}
		s->st.tok_cached++;
		cnf = e->tok_cnf;
	} else {
		struct cats_token t;
		struct cats_err err;
		memset(&err, 0, sizeof(err));
		s->st.tok_verified++;
		enum cats_token_status st = cats_token_verify(sr->token.p,
		    sr->token.n, &s->k->issuers, now, s->c->skew_ms, &t, &err);
		if (st != CATS_TOKEN_OK)
			return rej(res, 401, "token", "%s", err.reason[0] ?
			    err.reason : cats_token_status_name(st));
		if (revoked(s->k, t.cti))
			return rej(res, 403, "token", "token revoked");
		if (strcmp(t.sub, sr->csci_id) != 0) {
			char b[CATS_ID + 1];
			return rej(res, 403, "csci_id", "the token is for "
			    "CSCI-ID %s", cats_safe(t.sub, b, sizeof(b)));
		}
		if (!cats_token_allows(&t, sr->cs_id))
			return rej(res, 403, "cs_id", "the token does not "
			    "authorize this CS-ID");
		ai->fresh = true;
		memcpy(ai->cti, t.cti, sizeof(ai->cti));
		ai->exp = t.exp;
		ai->has_cnf = t.has_cnf;
		memcpy(ai->cnf, t.cnf, 32);
		if (t.has_cnf)
			cnf = ai->cnf;
	}
	if (cnf != NULL) {
		s->st.sig_verified++;
		if (check_record_sig(r, cnf, res) < 0)
			return -1;
	}
	return 0;
}

static void
cache_token(struct sma_entry *e, const struct authinfo *ai)
{
	if (!ai->fresh)
		return;
	e->tok_ok = true;
	memcpy(e->tok_hash, ai->hash, 16);
	memcpy(e->tok_cti, ai->cti, sizeof(e->tok_cti));
	e->tok_exp = ai->exp;
	if (ai->has_cnf) {
		if (e->tok_cnf == NULL)
			e->tok_cnf = malloc(32);
		if (e->tok_cnf == NULL)
			e->tok_ok = false;
		else
			memcpy(e->tok_cnf, ai->cnf, 32);
	} else {
		free(e->tok_cnf);
		e->tok_cnf = NULL;
	}
}

/* ---- validation ---- */

static int
check_ranges(const struct sma_conf *c, const struct cats_sci_report *r,
    struct sma_result *res)
{
	static const struct {
		int bit;
		const char *name;
		size_t off, roff;
	} m[] = {
		{ CATS_SCI_gas, "gas", offsetof(struct cats_sci_report, gas),
		    offsetof(struct sma_conf, gas) },
		{ CATS_SCI_comp_time_ms, "comp_time_ms",
		    offsetof(struct cats_sci_report, comp_time_ms),
		    offsetof(struct sma_conf, comp_time) },
		{ CATS_SCI_price, "price",
		    offsetof(struct cats_sci_report, price),
		    offsetof(struct sma_conf, price) },
		{ CATS_SCI_reputation, "reputation",
		    offsetof(struct cats_sci_report, reputation),
		    offsetof(struct sma_conf, reputation) },
		{ CATS_SCI_security_level, "security_level",
		    offsetof(struct cats_sci_report, security_level),
		    offsetof(struct sma_conf, security) },
	};
	for (size_t i = 0; i < CATS_ARRAY_LEN(m); i++) {
		if (!((r->has >> m[i].bit) & 1))
			continue;
		uint64_t v = *(const uint64_t *)((const char *)r + m[i].off);
		const struct sma_range *g = (const struct sma_range *)
		    ((const char *)c + m[i].roff);
		if (v < g->min || v > g->max)
			return rej(res, 400, m[i].name, "%" PRIu64 " is out of "
			    "range %" PRIu64 "..%" PRIu64, v, g->min, g->max);
	}
	return 0;
}

/* Did v change by more than ppm of old? */
static bool
jumped(uint64_t old, uint64_t v, uint64_t ppm)
{
	uint64_t d = v > old ? v - old : old - v;
	if (d == 0)
		return false;
	if (old == 0)
		return true;
	return (unsigned __int128)d * 1000000 > (unsigned __int128)old * ppm;
}

static int
flap_count(const struct sma *s, const struct sma_entry *e, uint64_t ts)
{
	int n = 0;
	if (e->flap == NULL)
		return 0;
	for (size_t i = 0; i < RING; i++)
		if (e->flap[i] && e->flap[i] + s->c->flap_ms >= ts &&
		    e->flap[i] <= ts)
			n++;
	return n;
}

/* Rate of change and flapping against the last accepted report. */
static uint8_t
anomalies(const struct sma *s, const struct sma_entry *e,
    const struct cats_sci_report *r)
{
	const struct sma_conf *c = s->c;
	uint8_t fl = 0;
	if (e == NULL || e->state == CATS_SCI_FAILED || r->ts < e->rts)
		return 0;
	uint64_t dt = r->ts - e->rts;
	if (CATS_HAS(r, SCI, gas) && (e->has & SMA_HAS_GAS) &&
	    dt <= c->gas_jump_ms && (int)r->health == e->rhealth &&
	    jumped(e->raw_gas, r->gas, c->gas_jump_ppm))
		fl |= SMA_FL_GAS_JUMP;
	if (CATS_HAS(r, SCI, comp_time_ms) && (e->has & SMA_HAS_CT) &&
	    dt <= c->ct_jump_ms &&
	    jumped(e->raw_ct, r->comp_time_ms, c->ct_jump_ppm))
		fl |= SMA_FL_CT_JUMP;
	if ((int)r->health != e->rhealth &&
	    (uint64_t)flap_count(s, e, r->ts) + 1 > c->flap_max)
		fl |= SMA_FL_FLAP;
	return fl;
}

/* ---- quarantine ---- */

/* "gas-jump,flap" */
static const char *
flag_list(uint8_t fl, char *buf, size_t len)
{
	buf[0] = '\0';
	for (int i = 0; i < SMA_NFLAGS; i++)
		if (fl & (1 << i))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s",
			    buf[0] ? "," : "", sma_flag_names[i]);
	return buf;
}

static void
q_free_item(struct sma_qitem *q)
{
	free(q->raw);
	memset(q, 0, sizeof(*q));
}

static int
quarantine(struct sma *s, struct sma_entry *e, const struct cats_rec *r,
    const uint8_t *raw, size_t rawlen, uint8_t fl, uint64_t now,
    struct sma_result *res)
{
	const struct cats_sci_report *sr = &r->u.sci;
	char b[CATS_ID + 1];
	struct cats_buf enc = { 0 };
	if (s->c->quarantine_max == 0) {
		rej(res, 409, "", "anomalous report and the quarantine holds "
		    "nothing");
		return SMA_REJECTED;
	}
	if (raw == NULL) {
		if (cats_rec_encode(r, &enc, true) < 0) {
			rej(res, 503, "", "out of memory");
			return SMA_REJECTED;
		}
		raw = enc.p;
		rawlen = enc.len;
	}
	if (s->nq >= s->c->quarantine_max) {
		char bq[CATS_ID + 1];
		sma_audit(s, now, "quarantine-drop", "reason=full", "id=%" PRIu64
		    " csci=%s reason=full", s->q[0].id, cats_safe(
		    s->q[0].csci_id, bq, sizeof(bq)));
		q_free_item(&s->q[0]);
		memmove(s->q, s->q + 1, (s->nq - 1) * sizeof(*s->q));
		s->nq--;
		s->st.dropped_q++;
	}
	void *v = realloc(s->q, (s->nq + 1) * sizeof(*s->q));
	uint8_t *copy = malloc(rawlen ? rawlen : 1);
	if (v == NULL || copy == NULL) {
		free(copy);
		if (v != NULL)
			s->q = v;
		cats_buf_free(&enc);
		rej(res, 503, "", "out of memory");
		return SMA_REJECTED;
	}
	s->q = v;
	memcpy(copy, raw, rawlen);
	cats_buf_free(&enc);
	struct sma_qitem *q = &s->q[s->nq++];
	memset(q, 0, sizeof(*q));
	q->id = ++s->qid;
	q->at = now;
	q->flags = fl;
	cats_strlcpy(q->csci_id, sr->csci_id, sizeof(q->csci_id));
	q->seq = sr->seq;
	q->raw = copy;
	q->len = rawlen;
	if (sr->seq > e->qseq)
		e->qseq = sr->seq;
	char why[64];
	flag_list(fl, why, sizeof(why));
	char qk[80];
	snprintf(qk, sizeof(qk), "anomaly=%s", why);
	sma_audit(s, now, "quarantine", qk, "id=%" PRIu64 " csci=%s cs=%s "
	    "seq=%" PRIu64 " anomaly=%s", q->id, cats_safe(sr->csci_id, b, sizeof(b)),
	    e->svc->cs_id, sr->seq, why);
	s->st.quarantined++;
	res->verdict = SMA_QUARANTINED;
	res->status = 202;
	res->flags = fl;
	res->qid = q->id;
	cats_strlcpy(res->err.reason, why, sizeof(res->err.reason));
	return SMA_QUARANTINED;
}

const struct sma_qitem *
sma_quarantine(const struct sma *s, size_t *n)
{
	*n = s->nq;
	return s->q;
}

static int
q_find(const struct sma *s, uint64_t id)
{
	for (size_t i = 0; i < s->nq; i++)
		if (s->q[i].id == id)
			return (int)i;
	return -1;
}

static void
q_remove(struct sma *s, size_t i)
{
	q_free_item(&s->q[i]);
	memmove(s->q + i, s->q + i + 1, (s->nq - i - 1) * sizeof(*s->q));
	s->nq--;
}

static int release_one(struct sma *s, size_t i, uint64_t now);

int
sma_quarantine_release(struct sma *s, uint64_t id, uint64_t now)
{
	if (id == 0) {
		int n = 0;
		while (s->nq > 0) {
			release_one(s, 0, now);
			n++;
		}
		return n;
	}
	int i = q_find(s, id);
	if (i < 0)
		return -1;
	release_one(s, (size_t)i, now);
	return 1;
}

int
sma_quarantine_drop(struct sma *s, uint64_t id)
{
	if (id == 0) {
		int n = (int)s->nq;
		while (s->nq > 0) {
			cats_audit("quarantine-drop", "id=%" PRIu64 " csci=%s "
			    "reason=operator", s->q[0].id, s->q[0].csci_id);
			q_remove(s, 0);
		}
		return n;
	}
	int i = q_find(s, id);
	if (i < 0)
		return -1;
	cats_audit("quarantine-drop", "id=%" PRIu64 " csci=%s reason=operator",
	    s->q[i].id, s->q[i].csci_id);
	q_remove(s, (size_t)i);
	return 1;
}

/* ---- applying a report ---- */

static void
note_flap(struct sma_entry *e, uint64_t ts)
{
	if (e->flap == NULL) {
		e->flap = calloc(RING, sizeof(*e->flap));
		if (e->flap == NULL)
			return;
	}
	e->flap[e->flap_pos] = ts;
	e->flap_pos = (uint8_t)((e->flap_pos + 1) % RING);
}

/* Health through hysteresis: N reports to enter HEALTHY, M to leave it. */
static void
apply_health(const struct sma_conf *c, struct sma_entry *e, int h)
{
	bool side = h == CATS_HEALTHY;
	if (e->streak > 0 && (e->rhealth == CATS_HEALTHY) == side)
		e->streak = e->streak < 255 ? e->streak + 1 : 255;
	else
		e->streak = 1;
	e->rhealth = (uint8_t)h;
	if (e->health == CATS_HEALTHY) {
		if (!side && e->streak >= c->unhealthy_after)
			e->health = (uint8_t)h;
	} else if (side) {
		if (e->streak >= c->healthy_after)
			e->health = CATS_HEALTHY;
	} else {
		e->health = (uint8_t)h;
	}
}

/* Moving average over the last k raw values of a metric. */
static uint32_t
smooth(struct sma_entry *e, int which, uint32_t v, uint64_t k)
{
	if (k <= 1)
		return v;
	if (e->smooth == NULL) {
		e->smooth = calloc(2 * RING, sizeof(*e->smooth));
		if (e->smooth == NULL)
			return v;
	}
	uint32_t *ring = e->smooth + which * RING;
	size_t pos = e->smooth_pos % RING;
	ring[pos] = v;
	size_t have = (uint64_t)e->nsmooth + 1 < k ? e->nsmooth + 1u : (size_t)k;
	uint64_t sum = 0;
	for (size_t i = 0; i < have; i++)
		sum += ring[(pos + RING - i) % RING];
	return (uint32_t)((sum + have / 2) / have);
}

/*
 * Exponential moving average (000 §7.2): S(t) = alpha x raw(t) + (1 -
 * alpha) x S(t-1), kept in thousandths, the first value taken as it is.
 */
static uint32_t
ema(uint64_t *acc, uint8_t *init, uint8_t bit, uint32_t v, uint64_t alpha)
{
	if (!(*init & bit)) {
		*acc = (uint64_t)v * 1000;
		*init |= bit;
	} else {
		*acc = (uint64_t)(((unsigned __int128)alpha * v * 1000 +
		    (unsigned __int128)(1000000 - alpha) * *acc) / 1000000);
	}
	return (uint32_t)((*acc + 500) / 1000);
}

/* Take a report's metrics; raw: as they are (no smoothing). */
static void
take_metrics(struct sma *s, struct sma_entry *e,
    const struct cats_sci_report *r, uint64_t now, bool raw)
{
	const struct sma_conf *c = s->c;
	uint64_t k = raw ? 1 : c->smoothing;
	bool use_ema = c->pol.ema && !raw;
	bool any = false;
	if (CATS_HAS(r, SCI, gas)) {
		e->raw_gas = (uint32_t)r->gas;
		e->gas = smooth(e, 0, (uint32_t)r->gas, k);
		if (use_ema)
			e->gas = ema(&e->ema_gas, &e->ema_init, 1, e->gas,
			    c->pol.ema_alpha_ppm);
		e->has |= SMA_HAS_GAS;
		any = true;
	}
	if (CATS_HAS(r, SCI, comp_time_ms)) {
		e->raw_ct = (uint32_t)r->comp_time_ms;
		e->ct = smooth(e, 1, (uint32_t)r->comp_time_ms, k);
		if (use_ema)
			e->ct = ema(&e->ema_ct, &e->ema_init, 2, e->ct,
			    c->pol.ema_alpha_ppm);
		e->has |= SMA_HAS_CT;
		any = true;
	}
	if (any && k > 1) {
		e->smooth_pos = (uint8_t)((e->smooth_pos + 1) % RING);
		if (e->nsmooth < RING)
			e->nsmooth++;
	}
	bool st = false;
	if (CATS_HAS(r, SCI, price)) {
		e->price = (uint32_t)r->price;
		e->has |= SMA_HAS_PRICE;
		st = true;
	}
	if (CATS_HAS(r, SCI, reputation)) {
		e->rep = (uint8_t)r->reputation;
		e->has |= SMA_HAS_REPUTATION;
		st = true;
	}
	if (CATS_HAS(r, SCI, security_level)) {
		e->sec = (uint8_t)r->security_level;
		e->has |= SMA_HAS_SECURITY;
		st = true;
	}
	if (r->ext.n > 0) {
		struct cats_kv *v = calloc(r->ext.n, sizeof(*v));
		size_t i = 0;
		for (; v != NULL && i < r->ext.n; i++) {
			v[i].k = strdup(r->ext.v[i].k);
			v[i].v = r->ext.v[i].v;
			if (v[i].k == NULL)
				break;
		}
		if (v != NULL && i == r->ext.n) {
			clear_ext(e);
			e->ext = v;
			e->next_n = (uint8_t)i;
		} else if (v != NULL) {
			while (i-- > 0)
				free((char *)v[i].k);
			free(v);
		}
		st = true;
	}
	if (st)
		e->static_at = now;
	if (r->locator.af) {
		e->locator = r->locator;
	}
	if (CATS_HAS(r, SCI, port)) {
		e->port = (uint16_t)r->port;
		e->has |= SMA_HAS_PORT;
	}
}

static void
apply_metrics(struct sma *s, struct sma_entry *e,
    const struct cats_sci_report *r, uint64_t now)
{
	take_metrics(s, e, r, now, false);
}

static const char *
state_name(int st)
{
	return cats_sci_state_names[st];
}

static void
audit_state(struct sma *s, uint64_t now, const struct sma_entry *e, int from,
    const char *why)
{
	char b[CATS_ID + 1], k[96];
	snprintf(k, sizeof(k), "from=%s to=%s reason=%s", state_name(from),
	    state_name(e->state), why);
	sma_audit(s, now, "state", k, "csci=%s cs=%s %s",
	    cats_safe(e->csci_id, b, sizeof(b)), e->svc->cs_id, k);
}

/* A token of the SCI's input bucket ([limits] sci-rate, sci-burst). */
static bool
sci_token(struct sma *s, struct sma_entry *e, uint64_t now)
{
	const struct sma_conf *c = s->c;
	if (e->in_b.rate_milli == 0)
		cats_bucket_init_milli(&e->in_b, c->in_sci_milli,
		    c->in_sci_burst, now);
	e->in_b.rate_milli = c->in_sci_milli;
	e->in_b.burst = c->in_sci_burst;
	return cats_bucket_take(&e->in_b, 1, now);
}

static void aud_limit(struct sma *s, uint64_t now, const char *kind,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* A limit's audit line: one a window, whatever audit-burst says. */
static void
aud_limit(struct sma *s, uint64_t now, const char *kind, const char *fmt,
    ...)
{
	va_list ap;
	va_start(ap, fmt);
	vaudit(s, now, 1, "limit", kind, fmt, ap);
	va_end(ap);
}

/* cs_id is one of the CS-IDs the connection's certificate names. */
static bool
cs_named(const struct sma_src *src, const char *cs_id)
{
	for (size_t i = 0; i < src->ncs; i++)
		if (strcmp(src->cs_ids[i], cs_id) == 0)
			return true;
	return false;
}

int
sma_report(struct sma *s, const struct cats_rec *r, const uint8_t *raw,
    size_t rawlen, const struct sma_src *src, uint64_t now,
    struct sma_result *res)
{
	const struct sma_conf *c = s->c;
	const struct cats_sci_report *sr = &r->u.sci;
	struct sma_src dsrc = { 0 };
	char b1[CATS_ID + 1], b2[CATS_ID + 1], why[sizeof(res->err.reason)];
	char kind[200];
	struct sma_entry *e = NULL;
	memset(res, 0, sizeof(*res));
	if (src == NULL)
		src = &dsrc;
	bool released = src->kind == SMA_SRC_RELEASE;
	s->st.reports++;
	if (r->type != CATS_T_SCI_REPORT) {
		rej(res, 400, "type", "expected an sci-report");
		goto rejected;
	}
	/* [limits] rate: every report, before anything costs more. */
	if (c->in_all_milli && !released) {
		if (!s->in_all_init) {
			cats_bucket_init_milli(&s->in_all, c->in_all_milli,
			    c->in_all_burst, now);
			s->in_all_init = true;
		}
		s->in_all.rate_milli = c->in_all_milli;
		s->in_all.burst = c->in_all_burst;
		if (!cats_bucket_take(&s->in_all, 1, now)) {
			rej(res, 429, "", "over the input limit of the C-SMA "
			    "([limits] rate)");
			s->st.limited_all++;
			goto limited;
		}
	}
	uint64_t h = cats_hash_str(sr->csci_id);
	e = lookup(s, sr->csci_id, h);

	/* The connection's identity, then the hard-state mapping. */
	if (src->expect && strcmp(src->expect, sr->csci_id) != 0) {
		rej(res, 403, "csci_id", "this connection belongs to CSCI-ID "
		    "%s", src->expect);
		s->st.rej_auth++;
		goto audit_auth;
	}
	if (src->ncs > 0 && !cs_named(src, sr->cs_id)) {
		rej(res, 403, "cs_id", "this connection's certificate does not "
		    "name CS-ID %s", cats_safe(sr->cs_id, b2, sizeof(b2)));
		s->st.rej_auth++;
		goto audit_auth;
	}
	const struct sma_cfg_sci *ci = sma_conf_sci(c, sr->csci_id);
	if (ci && ci->cs_id && strcmp(ci->cs_id, sr->cs_id) != 0) {
		rej(res, 403, "cs_id", "CSCI-ID is configured for CS-ID %s",
		    ci->cs_id);
		s->st.rej_auth++;
		goto audit_auth;
	}
	struct authinfo ai;
	memset(&ai, 0, sizeof(ai));
	if (c->auth == SMA_AUTH_TOKEN &&
	    authenticate(s, r, e, now, &ai, res) < 0) {
		s->st.rej_auth++;
		goto audit_auth;
	}
	if (check_ranges(c, sr, res) < 0) {
		s->st.rej_range++;
		goto rejected;
	}
	if (!released && c->skew_ms && (sr->ts + c->skew_ms < now ||
	    sr->ts > now + c->skew_ms)) {
		int64_t off = (int64_t)(sr->ts - now);
		/* Hours away: a recording read on the live clock. */
		if (off < -3600000 || off > 3600000)
			rej(res, 400, "ts", "report time %" PRIu64 " is %+"
			    PRId64 "ms from the live clock (window %" PRIu64
			    "ms): a recording needs --replay", sr->ts, off,
			    c->skew_ms);
		else
			rej(res, 400, "ts", "report time %" PRIu64 " outside "
			    "now %+" PRId64 "ms (window %" PRIu64 "ms): "
			    "replayed, or clock skew", sr->ts, off, c->skew_ms);
		s->st.rej_seq++;
		goto rejected;
	}
	if (e != NULL) {
		/* A restarted SCI (sequence back to low numbers) is taken
		 * back once it is FAILED and its reports are newer. */
		bool restart = e->state == CATS_SCI_FAILED && sr->ts > e->rts;
		uint64_t last = e->seq;
		if (!released && e->qseq > last)
			last = e->qseq;
		if (!restart && sr->seq <= last) {
			rej(res, 409, "seq", "%s report (sequence %" PRIu64
			    ", last %" PRIu64 ")", sr->seq == e->seq ||
			    sr->seq == e->qseq ? "duplicate" :
			    "out-of-order or replayed", sr->seq, last);
			s->st.rej_seq++;
			goto rejected;
		}
		/*
		 * [limits] sci-rate: only new reports of an authenticated SCI
		 * spend its tokens (replays of its old ones cannot starve
		 * it).
		 */
		if (c->in_sci_milli && !released && !sci_token(s, e, now)) {
			rej(res, 429, "", "over the input limit of this SCI "
			    "([limits] sci-rate)");
			s->st.limited_sci++;
			goto limited;
		}
	}
	uint8_t fl = 0;
	if (!released)
		fl = anomalies(s, e, sr);
	if ((fl & ANOMALIES) && c->anomaly == SMA_ANOMALY_QUARANTINE) {
		if (quarantine(s, e, r, raw, rawlen, fl, now, res) ==
		    SMA_QUARANTINED)
			return SMA_QUARANTINED;
		s->st.rej_other++;
		goto rejected;
	}
	if (CATS_HAS(sr, SCI, gas) && sr->gas > 0 &&
	    CATS_HAS(sr, SCI, comp_time_ms) && sr->comp_time_ms == 0)
		fl |= SMA_FL_CT_ZERO;
	if (released)
		fl |= SMA_FL_RELEASED;

	/* Accepted: into the cache. */
	struct sma_svc *v = e != NULL && strcmp(e->svc->cs_id, sr->cs_id) == 0 ?
	    e->svc : svc_get(s, sr->cs_id, true);
	if (v == NULL) {
		rej(res, 503, "cs_id", "too many CS-IDs (max-services %" PRIu64
		    ")", c->max_services);
		s->st.rej_other++;
		goto rejected;
	}
	bool added = false;
	struct adv old;
	if (e != NULL && e->svc != v) {
		move_entry(s, e, v, now);
		e->health = CATS_UNKNOWN;
	}
	if (e == NULL) {
		if (s->n >= c->max_entries)
			evict_one(s, now);
		e = entry_new(s, sr->csci_id, h, v);
		if (e == NULL) {
			rej(res, 503, "", "out of memory");
			s->st.rej_other++;
			goto rejected;
		}
		added = true;
		s->st.added++;
		e->since = now;
		if (c->in_sci_milli)
			sci_token(s, e, now);
		account(v, e, 1);
		sma_audit(s, now, "state", "from=NONE to=ACTIVE "
		    "reason=discovered", "csci=%s cs=%s from=NONE to=ACTIVE "
		    "reason=discovered", cats_safe(e->csci_id, b1, sizeof(b1)),
		    v->cs_id);
	}
	adv_of(e, &old);
	int from = e->state;
	account(v, e, -1);
	if ((int)sr->health != e->rhealth && !added)
		note_flap(e, sr->ts);
	if (from == CATS_SCI_FAILED)
		e->streak = 0;
	apply_health(c, e, (int)sr->health);
	apply_metrics(s, e, sr, now);
	e->flags = fl;
	e->seq = sr->seq;
	e->rts = sr->ts;
	e->updated = now;
	set_timing(s, e, CATS_HAS(sr, SCI, interval_ms) ? sr->interval_ms : 0);
	if (from == CATS_SCI_STALE || from == CATS_SCI_FAILED) {
		e->state = CATS_SCI_ACTIVE;
		e->since = now;
		e->confirmed = 1;
		s->st.recovered++;
		audit_state(s, now, e, from, "report");
	} else if (added) {
		e->confirmed = 1;
	} else if (from == CATS_SCI_ACTIVE && e->confirmed < 255) {
		e->confirmed++;
	}
	if (e->state == CATS_SCI_ACTIVE && e->confirmed >= c->confirm) {
		e->state = CATS_SCI_HEALTHY;
		e->since = now;
		audit_state(s, now, e, CATS_SCI_ACTIVE, "confirmed");
	}
	cache_token(e, &ai);
	account(v, e, 1);
	mark_dirty(s, v);
	lru_touch(s, e);
	reschedule(s, e);
	if (fl & ANOMALIES) {
		char list[64];
		char ak[80];
		snprintf(ak, sizeof(ak), "anomaly=%s action=flag",
		    flag_list(fl & ANOMALIES, list, sizeof(list)));
		sma_audit(s, now, "anomaly", ak, "csci=%s cs=%s seq=%" PRIu64
		    " %s", cats_safe(e->csci_id, b1, sizeof(b1)), v->cs_id,
		    sr->seq, ak);
	}
	if (added || from == CATS_SCI_FAILED) {
		struct sma_event ev = { .kind = SMA_EV_ADD, .now = now,
			.ent = e, .svc = v, .critical = true,
			.changed = UINT32_MAX, .old_health = CATS_UNKNOWN,
			.old_state = from };
		emit(s, &ev);
	} else {
		update_event(s, e, &old, now);
	}
	commit(s, now);
	res->verdict = fl ? SMA_FLAGGED : SMA_ACCEPTED;
	res->status = 200;
	res->flags = fl;
	if (fl)
		s->st.flagged++;
	else
		s->st.accepted++;
	if (released)
		s->st.released++;
	return res->verdict;

audit_auth:
	cats_quote(res->err.reason, why, sizeof(why));
	snprintf(kind, sizeof(kind), "status=%d field=%s", res->status,
	    res->err.field);
	sma_audit(s, now, "auth-fail", kind, "csci=%s cs=%s src=%s index=%"
	    PRIu64 " %s reason=\"%s\"", cats_safe(sr->csci_id, b1,
	    sizeof(b1)), cats_safe(sr->cs_id, b2, sizeof(b2)),
	    src->peer ? src->peer : "-", src->index, kind, why);
	s->st.rejected++;
	return SMA_REJECTED;
limited:
	/* Once a window for each limit, then "N more like this". */
	snprintf(kind, sizeof(kind), "status=429 scope=%s%s%s", e == NULL ?
	    "all" : "sci", e == NULL ? "" : " csci=", e == NULL ? "" :
	    cats_safe(sr->csci_id, b1, sizeof(b1)));
	aud_limit(s, now, kind, "csci=%s cs=%s src=%s index=%" PRIu64
	    " status=429 scope=%s reason=\"%s\"", cats_safe(sr->csci_id, b1,
	    sizeof(b1)), cats_safe(sr->cs_id, b2, sizeof(b2)), src->peer ?
	    src->peer : "-", src->index, e == NULL ? "all" : "sci",
	    res->err.reason);
	s->st.rejected++;
	return SMA_REJECTED;
rejected:
	cats_quote(res->err.reason, why, sizeof(why));
	snprintf(kind, sizeof(kind), "status=%d field=%s", res->status,
	    res->err.field);
	sma_audit(s, now, "reject", kind, "csci=%s cs=%s src=%s index=%" PRIu64
	    " %s reason=\"%s\"", r->type == CATS_T_SCI_REPORT ?
	    cats_safe(sr->csci_id, b1, sizeof(b1)) : "-",
	    r->type == CATS_T_SCI_REPORT ? cats_safe(sr->cs_id, b2, sizeof(b2))
	    : "-", src->peer ? src->peer : "-", src->index, kind, why);
	s->st.rejected++;
	return SMA_REJECTED;
}

static int
release_one(struct sma *s, size_t i, uint64_t now)
{
	struct sma_qitem q = s->q[i];
	memmove(s->q + i, s->q + i + 1, (s->nq - i - 1) * sizeof(*s->q));
	s->nq--;
	struct cats_rec r;
	struct cats_err err;
	struct sma_result res;
	memset(&err, 0, sizeof(err));
	int rc = -1;
	if (cats_rec_decode(&s->dec, q.raw, q.len, &r, &err) == 0) {
		struct sma_src src = { .kind = SMA_SRC_RELEASE, .peer =
			"quarantine", .index = q.id };
		rc = sma_report(s, &r, q.raw, q.len, &src, now, &res);
		char why[sizeof(res.err.reason)];
		cats_audit("release", "id=%" PRIu64 " csci=%s result=%s%s%s%s",
		    q.id, q.csci_id, rc == SMA_REJECTED ? "refused" : "applied",
		    rc == SMA_REJECTED ? " reason=\"" : "",
		    rc == SMA_REJECTED ? cats_quote(res.err.reason, why,
		    sizeof(why)) : "", rc == SMA_REJECTED ? "\"" : "");
	}
	free(q.raw);
	return rc;
}

/* ---- timers ---- */

static void
to_failed(struct sma *s, struct sma_entry *e, uint64_t t)
{
	char b[CATS_ID + 1];
	account(e->svc, e, -1);
	e->state = CATS_SCI_FAILED;
	e->since = t;
	e->health = CATS_UNHEALTHY;
	e->streak = 0;
	e->flags = 0;
	account(e->svc, e, 1);
	mark_dirty(s, e->svc);
	set_deadline(s, e, 0);
	s->st.failed++;
	sma_audit(s, t, "state", "from=STALE to=FAILED "
	    "reason=no-report-within-grace", "csci=%s cs=%s from=STALE "
	    "to=FAILED reason=no-report-within-grace", cats_safe(e->csci_id, b,
	    sizeof(b)), e->svc->cs_id);
	cats_info("SCI %s (CS-ID %s) failed: no report since %" PRIu64,
	    cats_safe(e->csci_id, b, sizeof(b)), e->svc->cs_id, e->updated);
	withdraw_event(s, e, SMA_WD_FAILED, t);
}

static void
run_timer(struct sma *s, struct sma_entry *e, uint64_t t)
{
	bool static_due = ((e->has & STATIC_HAS) || e->next_n) &&
	    e->state != CATS_SCI_FAILED && past(e->static_at,
	    e->ttl_static_ms, t);
	bool stale_due = (e->state == CATS_SCI_ACTIVE ||
	    e->state == CATS_SCI_HEALTHY) && past(e->updated, e->ttl_ms, t);
	bool fail_due = e->state == CATS_SCI_STALE &&
	    past(e->since, grace_of(s, e), t);
	if (!static_due && !stale_due && !fail_due) {
		/* A lazy key: reports came; file it under its real time. */
		set_deadline(s, e, due_at(s, e));
		return;
	}
	struct adv old;
	adv_of(e, &old);
	/* Static metrics past their TTL go first. */
	if (static_due) {
		account(e->svc, e, -1);
		e->has &= (uint8_t)~STATIC_HAS;
		clear_ext(e);
		account(e->svc, e, 1);
		mark_dirty(s, e->svc);
	}
	if (stale_due) {
		int from = e->state;
		account(e->svc, e, -1);
		e->state = CATS_SCI_STALE;
		e->since = t;
		account(e->svc, e, 1);
		mark_dirty(s, e->svc);
		s->st.stale++;
		audit_state(s, t, e, from, "no-report-within-ttl");
		update_event(s, e, &old, t);
		s->st.pulls++;
		struct sma_event ev = { .kind = SMA_EV_PULL, .now = t, .ent = e,
			.svc = e->svc };
		emit(s, &ev);
	} else if (fail_due) {
		to_failed(s, e, t);
	} else {
		update_event(s, e, &old, t);
	}
	set_deadline(s, e, due_at(s, e));
	commit(s, t);
}

uint64_t
sma_tick(struct sma *s, uint64_t now)
{
	sma_audit_flush(s, now, false);
	while (s->nheap > 0 && s->heap[0]->deadline <= now) {
		struct sma_entry *e = s->heap[0];
		uint64_t t = e->deadline;
		run_timer(s, e, t);
		/* A timer always moves on, so the loop ends. */
		if (e->deadline != 0 && e->deadline <= t)
			set_deadline(s, e, t + 1);
	}
	return sma_next_deadline(s);
}

/* ---- life cycle ---- */

struct sma *
sma_new(const struct sma_conf *c, const struct sma_keys *k, sma_event_fn fn,
    void *arg)
{
	struct sma *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->c = c;
	s->k = k;
	s->fn = fn;
	s->arg = arg;
	randombytes_buf(s->tokkey, sizeof(s->tokkey));
	cats_dec_init(&s->dec, NULL);
	return s;
}

void
sma_free(struct sma *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->ents.cap; i++)
		if (s->ents.s[i].h)
			entry_free(s->ents.s[i].item);
	cats_htab_free(&s->ents);
	for (struct sma_svc *v = s->svc_head, *n; v; v = n) {
		n = v->next;
		free(v);
	}
	cats_htab_free(&s->svcs);
	for (size_t i = 0; i < s->nq; i++)
		q_free_item(&s->q[i]);
	free(s->q);
	free(s->heap);
	for (struct sma_origin *o = s->origins, *n; o; o = n) {
		n = o->next;
		free(o->site);
		free(o->egress);
		free(o);
	}
	cats_dec_free(&s->dec);
	free(s->aud);
	free(s);
}

void
sma_reconf(struct sma *s, const struct sma_conf *c, const struct sma_keys *k,
    uint64_t now)
{
	s->c = c;
	s->k = k;
	for (struct sma_svc *v = s->svc_head; v; v = v->next)
		v->cfg = svc_cfg(c, v->cs_id);
	for (struct sma_entry *e = s->lru_head; e; e = e->lru_next) {
		e->tok_ok = false;
		set_timing(s, e, e->interval_ms);
		reschedule(s, e);
	}
	if (s->n > c->max_entries) {
		while (s->n > c->max_entries)
			evict_one(s, now);
		commit(s, now);
	}
}

int
sma_restore(struct sma *s, const struct cats_entry *ce, uint64_t now)
{
	if (!CATS_HAS(ce, ENT, ts) || !CATS_HAS(ce, ENT, ttl_ms) ||
	    !CATS_HAS(ce, ENT, state) || !CATS_HAS(ce, ENT, health))
		return -1;
	if (ce->state != CATS_SCI_ACTIVE && ce->state != CATS_SCI_HEALTHY)
		return 0;
	if (past(ce->ts, ce->ttl_ms, now))
		return 0;
	uint64_t h = cats_hash_str(ce->csci_id);
	if (lookup(s, ce->csci_id, h) != NULL || s->n >= s->c->max_entries)
		return -1;
	struct sma_svc *v = svc_get(s, ce->cs_id, true);
	if (v == NULL)
		return -1;
	struct sma_entry *e = entry_new(s, ce->csci_id, h, v);
	if (e == NULL)
		return -1;
	e->state = (uint8_t)ce->state;
	e->health = (uint8_t)ce->health;
	e->rhealth = CATS_HAS(ce, ENT, reported) ? (uint8_t)ce->reported
	    : (uint8_t)ce->health;
	e->streak = CATS_HAS(ce, ENT, streak) ? (uint8_t)ce->streak : 1;
	e->confirmed = CATS_HAS(ce, ENT, confirmed) ? (uint8_t)ce->confirmed
	    : 1;
	if (CATS_HAS(ce, ENT, gas)) {
		e->gas = e->raw_gas = (uint32_t)ce->gas;
		e->has |= SMA_HAS_GAS;
	}
	if (CATS_HAS(ce, ENT, comp_time_ms)) {
		e->ct = e->raw_ct = (uint32_t)ce->comp_time_ms;
		e->has |= SMA_HAS_CT;
	}
	e->ema_gas = (uint64_t)e->gas * 1000;
	e->ema_ct = (uint64_t)e->ct * 1000;
	e->ema_init = (uint8_t)((e->has & SMA_HAS_GAS ? 1 : 0) |
	    (e->has & SMA_HAS_CT ? 2 : 0));
	if (CATS_HAS(ce, ENT, price)) {
		e->price = (uint32_t)ce->price;
		e->has |= SMA_HAS_PRICE;
	}
	if (CATS_HAS(ce, ENT, reputation)) {
		e->rep = (uint8_t)ce->reputation;
		e->has |= SMA_HAS_REPUTATION;
	}
	if (CATS_HAS(ce, ENT, security_level)) {
		e->sec = (uint8_t)ce->security_level;
		e->has |= SMA_HAS_SECURITY;
	}
	if (CATS_HAS(ce, ENT, port)) {
		e->port = (uint16_t)ce->port;
		e->has |= SMA_HAS_PORT;
	}
	e->locator = ce->locator;
	if (ce->ext.n > 0) {
		struct cats_sci_report tmp;
		memset(&tmp, 0, sizeof(tmp));
		tmp.ext = ce->ext;
		apply_metrics(s, e, &tmp, ce->ts);
	}
	e->seq = CATS_HAS(ce, ENT, gen) ? ce->gen : 0;
	e->rts = ce->ts;
	e->updated = ce->ts;
	e->static_at = ce->ts;
	e->since = ce->ts;
	e->interval_ms = CATS_HAS(ce, ENT, interval_ms) ?
	    (uint32_t)ce->interval_ms : (uint32_t)ce->ttl_ms;
	e->ttl_ms = (uint32_t)ce->ttl_ms;
	e->ttl_static_ms = (uint32_t)ce->ttl_ms;
	account(v, e, 1);
	sma_site_view_of(&v->acc, &v->view);
	reschedule(s, e);
	return 1;
}

/* ---- hierarchical aggregation ---- */

static bool
same_opt(const char *a, const char *b)
{
	return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

static const struct sma_origin *
origin_of(struct sma *s, const char *site, const char *egress)
{
	if (site == NULL && egress == NULL)
		return NULL;
	for (struct sma_origin *o = s->origins; o; o = o->next)
		if (same_opt(o->site, site) && same_opt(o->egress, egress))
			return o;
	if (s->norigins >= 65536)
		return NULL;
	struct sma_origin *o = calloc(1, sizeof(*o));
	if (o == NULL || (site && (o->site = strdup(site)) == NULL) ||
	    (egress && (o->egress = strdup(egress)) == NULL)) {
		if (o != NULL) {
			free(o->site);
			free(o);
		}
		return NULL;
	}
	o->next = s->origins;
	s->origins = o;
	s->norigins++;
	return o;
}

int
sma_import(struct sma *s, const struct cats_entry *ce, const char *site,
    const char *egress, uint64_t now)
{
	char b[CATS_ID + 1];
	uint64_t h = cats_hash_str(ce->csci_id);
	struct sma_entry *e = lookup(s, ce->csci_id, h);
	struct sma_svc *v = e != NULL && strcmp(e->svc->cs_id, ce->cs_id) == 0
	    ? e->svc : svc_get(s, ce->cs_id, true);
	if (v == NULL)
		return -1;
	s->st.reports++;
	bool added = false;
	if (e != NULL && e->svc != v)
		move_entry(s, e, v, now);
	if (e == NULL) {
		if (s->n >= s->c->max_entries)
			evict_one(s, now);
		if ((e = entry_new(s, ce->csci_id, h, v)) == NULL)
			return -1;
		added = true;
		s->st.added++;
		e->since = now;
		account(v, e, 1);
	}
	int from = e->state;
	struct adv old;
	adv_of(e, &old);
	account(v, e, -1);
	int st = CATS_HAS(ce, ENT, state) ? ce->state : CATS_SCI_HEALTHY;
	if (st == CATS_SCI_FAILED)
		st = CATS_SCI_STALE;
	if (st != e->state)
		e->since = now;
	e->state = (uint8_t)st;
	e->health = e->rhealth = CATS_HAS(ce, ENT, health) ?
	    (uint8_t)ce->health : CATS_UNKNOWN;
	e->confirmed = (uint8_t)s->c->confirm;
	/* The subordinate's entry is whole: what it lacks is gone. */
	e->has = 0;
	memset(&e->locator, 0, sizeof(e->locator));
	struct cats_sci_report tmp;
	memset(&tmp, 0, sizeof(tmp));
#define IMP(f, F) if (CATS_HAS(ce, ENT, f)) CATS_SET(&tmp, SCI, F, ce->f);
	IMP(gas, gas)
	IMP(comp_time_ms, comp_time_ms)
	IMP(price, price)
	IMP(reputation, reputation)
	IMP(security_level, security_level)
	IMP(port, port)
#undef IMP
	tmp.ext = ce->ext;
	tmp.locator = ce->locator;
	if (ce->ext.n == 0)
		clear_ext(e);
	/* The subordinate already smoothed: no smoothing here. */
	take_metrics(s, e, &tmp, now, true);
	e->flags = 0;
	e->seq = CATS_HAS(ce, ENT, gen) ? ce->gen : e->seq;
	e->rts = now;
	e->updated = now;
	e->origin = origin_of(s, site, egress);
	uint64_t ttl = CATS_HAS(ce, ENT, ttl_ms) && ce->ttl_ms > 0 ?
	    ce->ttl_ms : 0;
	set_timing(s, e, ttl ? (ttl + 1) / 2 : 0);
	if (ttl) {
		e->ttl_ms = (uint32_t)ttl;
		e->ttl_static_ms = (uint32_t)ttl;
	}
	e->static_at = now;
	account(v, e, 1);
	mark_dirty(s, v);
	lru_touch(s, e);
	reschedule(s, e);
	if (added || from == CATS_SCI_FAILED) {
		cats_audit("state", "csci=%s cs=%s from=%s to=%s "
		    "reason=imported", cats_safe(e->csci_id, b, sizeof(b)),
		    v->cs_id, added ? "NONE" : "FAILED",
		    cats_sci_state_names[e->state]);
		struct sma_event ev = { .kind = SMA_EV_ADD, .now = now,
			.ent = e, .svc = v, .critical = true,
			.changed = UINT32_MAX, .old_health = CATS_UNKNOWN,
			.old_state = from };
		emit(s, &ev);
	} else {
		update_event(s, e, &old, now);
	}
	commit(s, now);
	s->st.accepted++;
	return 0;
}

void
sma_import_refresh(struct sma *s, const char *csci_id, uint64_t now)
{
	struct sma_entry *e = lookup(s, csci_id, cats_hash_str(csci_id));
	if (e == NULL || e->state == CATS_SCI_FAILED ||
	    e->state == CATS_SCI_STALE)
		return;
	e->updated = now;
	e->static_at = now;
	lru_touch(s, e);
	reschedule(s, e);
}

int
sma_remove(struct sma *s, const char *csci_id, int reason, uint64_t now)
{
	char b[CATS_ID + 1];
	struct sma_entry *e = lookup(s, csci_id, cats_hash_str(csci_id));
	if (e == NULL)
		return 0;
	cats_audit("state", "csci=%s cs=%s from=%s to=NONE reason=%s",
	    cats_safe(e->csci_id, b, sizeof(b)), e->svc->cs_id,
	    cats_sci_state_names[e->state], sma_wd_names[reason]);
	entry_remove(s, e);
	if (e->state != CATS_SCI_FAILED)
		withdraw_event(s, e, reason, now);
	entry_free(e);
	commit(s, now);
	return 1;
}

/* ---- views ---- */

void
sma_entry_view(const struct sma_entry *e, struct cats_entry *o,
    const char **flagbuf)
{
	memset(o, 0, sizeof(*o));
	o->csci_id = e->csci_id;
	o->cs_id = e->svc->cs_id;
	CATS_SET(o, ENT, health, e->health);
	CATS_SET(o, ENT, state, e->state);
	if (e->state != CATS_SCI_FAILED) {
		CATS_SET_IF(e->has & SMA_HAS_GAS, o, ENT, gas, flagbuf == NULL ?
		    e->gas : entry_contributes(e) ? e->gas : 0);
		CATS_SET_IF(e->has & SMA_HAS_CT, o, ENT, comp_time_ms, e->ct);
		CATS_SET_IF(e->has & SMA_HAS_PRICE, o, ENT, price, e->price);
		CATS_SET_IF(e->has & SMA_HAS_REPUTATION, o, ENT, reputation,
		    e->rep);
		CATS_SET_IF(e->has & SMA_HAS_SECURITY, o, ENT, security_level,
		    e->sec);
		o->ext.v = e->ext;
		o->ext.n = e->next_n;
	} else {
		CATS_SET(o, ENT, gas, 0);
	}
	o->locator = e->locator;
	CATS_SET_IF(e->has & SMA_HAS_PORT, o, ENT, port, e->port);
	CATS_SET(o, ENT, gen, e->seq);
	CATS_SET(o, ENT, ts, e->updated);
	CATS_SET(o, ENT, ttl_ms, e->ttl_ms);
	if (e->origin != NULL) {
		o->site = e->origin->site;
		o->egress = e->origin->egress;
	}
	if (flagbuf == NULL) {
		/* The state file: what restoring needs besides the view. */
		CATS_SET(o, ENT, reported, e->rhealth);
		CATS_SET(o, ENT, streak, e->streak);
		CATS_SET(o, ENT, confirmed, e->confirmed);
		CATS_SET(o, ENT, interval_ms, e->interval_ms);
		return;
	}
	size_t n = 0;
	for (int i = 0; i < SMA_NFLAGS; i++)
		if (e->flags & (1 << i))
			flagbuf[n++] = sma_flag_names[i];
	o->flags.v = flagbuf;
	o->flags.n = n;
}

void
sma_site_view(const struct sma_svc *v, struct cats_site *o)
{
	memset(o, 0, sizeof(*o));
	o->cs_id = v->cs_id;
	CATS_SET(o, SITE, gas, v->view.gas);
	CATS_SET_IF(v->view.has_ct, o, SITE, comp_time_ms, v->view.ct);
	CATS_SET(o, SITE, health, v->view.health);
	CATS_SET(o, SITE, healthy, v->view.healthy);
	CATS_SET(o, SITE, total, v->view.total);
}

/* ---- records that did not decode ---- */

/* A top-level text value of the map in t (NUL-terminated into buf). */
static const char *
tok_text(const struct cats_toks *t, const char *key, char *buf, size_t len)
{
	if (t == NULL || t->n == 0 || t->t[0].kind != CATS_TK_MAP)
		return NULL;
	size_t i = 1, klen = strlen(key);
	for (uint32_t k = 0; k < t->t[0].n && i + 1 < t->n; k++) {
		const struct cats_tok *kt = &t->t[i], *vt = &t->t[i + 1];
		if (kt->kind == CATS_TK_TEXT && kt->n == klen &&
		    memcmp(kt->v.p, key, klen) == 0) {
			if (vt->kind != CATS_TK_TEXT || vt->n >= len)
				return NULL;
			memcpy(buf, vt->v.p, vt->n);
			buf[vt->n] = '\0';
			return buf;
		}
		i = vt->next;
	}
	return NULL;
}

uint64_t
sma_toks_u64(const struct cats_toks *t, const char *key)
{
	if (t == NULL || t->n == 0 || t->t[0].kind != CATS_TK_MAP)
		return 0;
	size_t i = 1, klen = strlen(key);
	for (uint32_t k = 0; k < t->t[0].n && i + 1 < t->n; k++) {
		const struct cats_tok *kt = &t->t[i], *vt = &t->t[i + 1];
		if (kt->kind == CATS_TK_TEXT && kt->n == klen &&
		    memcmp(kt->v.p, key, klen) == 0)
			return vt->kind == CATS_TK_UINT && vt->v.u <= CATS_U53 ?
			    vt->v.u : 0;
		i = vt->next;
	}
	return 0;
}

int
sma_undecoded(struct sma *s, const struct cats_toks *t,
    const struct cats_err *err, const struct sma_src *src, uint64_t now,
    bool count, struct sma_result *res)
{
	static const char *const metrics[] = { "gas", "comp_time_ms", "price",
		"reputation", "security_level", NULL };
	char type[32], csci[CATS_ID + 1], cs[CATS_ID + 1], b1[CATS_ID + 1];
	char b2[CATS_ID + 1], why[400], kind[200];
	struct sma_src dsrc = { 0 };
	if (src == NULL)
		src = &dsrc;
	memset(res, 0, sizeof(*res));
	res->verdict = SMA_REJECTED;
	res->status = 400;
	res->err = *err;
	const char *ty = tok_text(t, "type", type, sizeof(type));
	const char *ci = tok_text(t, "csci_id", csci, sizeof(csci));
	const char *cv = tok_text(t, "cs_id", cs, sizeof(cs));
	bool range = false;
	for (size_t i = 0; metrics[i] != NULL; i++)
		range |= strcmp(err->field, metrics[i]) == 0;
	range = range && ty != NULL && strcmp(ty, "sci-report") == 0 &&
	    strstr(err->reason, "out of range") != NULL;
	if (range || count) {
		s->st.reports++;
		s->st.rejected++;
	}
	if (range) {
		/* The path of check_ranges(), whoever caught it, with the
		 * configured range in its reason. */
		const struct sma_range *g[] = { &s->c->gas, &s->c->comp_time,
			&s->c->price, &s->c->reputation, &s->c->security };
		char *end;
		unsigned long long v = strtoull(err->reason, &end, 10);
		for (size_t i = 0; metrics[i] != NULL; i++)
			if (strcmp(err->field, metrics[i]) == 0 &&
			    end != err->reason && *end == ' ')
				snprintf(res->err.reason,
				    sizeof(res->err.reason), "%llu is out of "
				    "range %" PRIu64 "..%" PRIu64, v, g[i]->min,
				    g[i]->max);
		s->st.rej_range++;
		cats_quote(res->err.reason, why, sizeof(why));
		snprintf(kind, sizeof(kind), "status=400 field=%s", err->field);
		sma_audit(s, now, "reject", kind, "csci=%s cs=%s src=%s index=%"
		    PRIu64 " %s reason=\"%s\"", ci ? cats_safe(ci, b1,
		    sizeof(b1)) : "-", cv ? cats_safe(cv, b2, sizeof(b2)) : "-",
		    src->peer ? src->peer : "-", src->index, kind, why);
		return 1;
	}
	if (count)
		s->st.rej_other++;
	char msg[400];
	cats_quote(cats_err_fmt(err, src->index, msg, sizeof(msg)), why,
	    sizeof(why));
	sma_audit(s, now, "reject", "status=400 malformed", "csci=%s cs=%s "
	    "src=%s index=%" PRIu64 " status=400 reason=\"%s\"", ci ?
	    cats_safe(ci, b1, sizeof(b1)) : "-", cv ? cats_safe(cv, b2,
	    sizeof(b2)) : "-", src->peer ? src->peer : "-", src->index, why);
	return 0;
}

/* ---- bodies ---- */

size_t
sma_ingest(struct sma *s, struct cats_dec *d, const uint8_t *p, size_t n,
    const struct sma_src *src, uint64_t now, sma_result_fn fn, void *arg)
{
	size_t off = 0, count = 0;
	struct sma_src sc = src ? *src : (struct sma_src){ 0 };
	uint64_t base = sc.index;
	while (off < n) {
		struct sma_result res;
		struct cats_rec r;
		size_t used = 0;
		memset(&res, 0, sizeof(res));
		sc.index = base + count;
		cats_arena_reset(&d->arena);
		int sc_rc = cats_scan(p + off, n - off, true, &d->lim, &d->toks,
		    &d->arena, &used, NULL, &res.err);
		if (sc_rc != CATS_SCAN_OK) {
			struct cats_err err = res.err;
			sma_undecoded(s, NULL, &err, &sc, now, true, &res);
			if (fn)
				fn(arg, sc.index, &res);
			count++;
			break;
		}
		if (cats_rec_from_toks(d, &r, &res.err) < 0) {
			/* A metric out of range is a rejection like any other
			 * (the body goes on); anything else ends it. */
			struct cats_err err = res.err;
			int range = sma_undecoded(s, &d->toks, &err, &sc, now,
			    true, &res);
			if (fn)
				fn(arg, sc.index, &res);
			count++;
			if (!range)
				break;
			off += used;
			continue;
		}
		sma_report(s, &r, p + off, used, &sc, now, &res);
		if (fn)
			fn(arg, sc.index, &res);
		off += used;
		count++;
	}
	return count;
}
