/*
 * sma_steer.c - site-local steering in a partition (seed 000 §10.3); see
 * sma_steer.h for the rules.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "sma/sma_steer.h"

/* One instance steered away from (or refused: no record was sent). */
struct redir {
	char *cs_id, *from;
	char *to;			/* NULL: refused, nothing in force */
	struct cats_ip from_loc, loc;
	uint16_t from_port, port;
	bool has_from_port, has_port;
	const char *why;		/* the redirect's reason (static) */
	uint64_t seq, at;		/* the record that made it */
};

struct sma_steer {
	const struct sma_conf *c;
	uint64_t epoch, seq;
	sma_steer_emit_fn emit;
	void *arg;
	struct redir *v;
	size_t n, cap;
	/* Ends that did not leave (no connection to the egress), each as the
	 * instance it ended (to NULL, why its reason), said on the next one:
	 * one per instance, the latest. */
	struct redir *ends;
	size_t nends, capends;
	bool in_partition, expired, healing, want_full, dirty, bound_said;
	uint64_t since;
	struct sma_steer_stats st;
};

struct sma_steer *
sma_steer_new(const struct sma_conf *c, uint64_t epoch,
    sma_steer_emit_fn emit, void *arg)
{
	struct sma_steer *st = calloc(1, sizeof(*st));
	if (st == NULL)
		return NULL;
	st->c = c;
	st->epoch = epoch;
	st->emit = emit;
	st->arg = arg;
	return st;
}

static void
redir_free(struct redir *r)
{
	free(r->cs_id);
	free(r->from);
	free(r->to);
}

void
sma_steer_free(struct sma_steer *st)
{
	if (st == NULL)
		return;
	for (size_t i = 0; i < st->n; i++)
		redir_free(&st->v[i]);
	for (size_t i = 0; i < st->nends; i++)
		redir_free(&st->ends[i]);
	free(st->v);
	free(st->ends);
	free(st);
}

void
sma_steer_reconf(struct sma_steer *st, const struct sma_conf *c)
{
	st->c = c;
	st->dirty = true;
}

static bool
configured(const struct sma_steer *st, const char *cs_id)
{
	for (size_t i = 0; i < st->c->steer.nservices; i++)
		if (strcmp(st->c->steer.services[i], cs_id) == 0)
			return true;
	return false;
}

void
sma_steer_note(struct sma_steer *st, const struct sma_event *ev)
{
	if (ev->kind == SMA_EV_ADD || ev->kind == SMA_EV_UPDATE ||
	    ev->kind == SMA_EV_WITHDRAW)
		st->dirty |= configured(st, ev->svc->cs_id);
}

/* An instance of this site (not a subordinate's) whose fault is why. */
static const char *
fault(const struct sma_entry *e)
{
	if (e == NULL)
		return "gone";
	if (e->state == CATS_SCI_FAILED)
		return "failed";
	if (e->state == CATS_SCI_STALE)
		return "stale";
	if (e->health == CATS_UNHEALTHY)
		return "unhealthy";
	if ((e->has & SMA_HAS_GAS) && e->gas == 0)
		return "gas-zero";
	return NULL;
}

/* A candidate: its soft state holds, it serves, it has room. */
static bool
eligible(const struct sma_entry *e)
{
	return e->origin == NULL && e->state == CATS_SCI_HEALTHY &&
	    (e->health == CATS_HEALTHY || e->health == CATS_DEGRADED) &&
	    (e->has & SMA_HAS_GAS) && e->gas > 0 && e->locator.af != 0;
}

/* The most GAS, then the least computing time, then the CSCI-ID. */
static const struct sma_entry *
best(const struct sma_svc *svc)
{
	const struct sma_entry *b = NULL;
	for (const struct sma_entry *e = svc ? svc->head : NULL; e != NULL;
	    e = e->svc_next) {
		if (!eligible(e))
			continue;
		if (b == NULL || e->gas > b->gas || (e->gas == b->gas &&
		    (e->ct < b->ct || (e->ct == b->ct &&
		    strcmp(e->csci_id, b->csci_id) < 0))))
			b = e;
	}
	return b;
}

/* The steer record of r (seq left to the caller). */
static void
fill(const struct sma_steer *st, const struct redir *r, int op,
    const char *reason, uint64_t now, struct cats_rec *rec)
{
	cats_rec_init(rec, CATS_T_STEER);
	struct cats_steer *s = &rec->u.steer;
	s->op = op;
	s->sma_id = st->c->id;
	s->epoch = st->epoch;
	s->ts = now;
	s->site = st->c->site;
	s->egress = st->c->egress;
	s->cs_id = r->cs_id;
	s->from = r->from;
	s->from_locator = r->from_loc;
	CATS_SET_IF(r->has_from_port, s, STR, from_port, r->from_port);
	if (op == CATS_STEER_REDIRECT) {
		s->to = r->to;
		s->locator = r->loc;
		CATS_SET_IF(r->has_port, s, STR, port, r->port);
		CATS_SET(s, STR, until, st->since + st->c->steer.max_ms);
	}
	s->reason = reason;
}

/* The ends kept to say again that end r's instance: the latest alone. */
static void
unsent_forget(struct sma_steer *st, const struct redir *r)
{
	for (size_t i = 0; i < st->nends; i++) {
		struct redir *e = &st->ends[i];
		if (strcmp(e->from, r->from) != 0 ||
		    strcmp(e->cs_id, r->cs_id) != 0)
			continue;
		redir_free(e);
		st->ends[i] = st->ends[--st->nends];
		return;
	}
}

/*
 * An end of r that did not leave: kept, to be said on the next connection
 * (sma_steer_resend), or the egress would keep steering the instance
 * until the redirect's until.  At most max_redirects of them (one per
 * instance); beyond, the end is lost (counted in failures already).
 */
static void
unsent_end(struct sma_steer *st, const struct redir *r, const char *reason,
    uint64_t now)
{
	unsent_forget(st, r);
	if (st->nends >= st->c->steer.max_redirects ||
	    cats_grow((void **)&st->ends, &st->capends, st->nends,
	    sizeof(*st->ends), 16) < 0)
		return;
	struct redir *e = &st->ends[st->nends];
	*e = *r;
	e->to = NULL;
	e->cs_id = strdup(r->cs_id);
	e->from = strdup(r->from);
	if (e->cs_id == NULL || e->from == NULL) {
		redir_free(e);
		return;
	}
	e->why = reason;
	e->seq = st->seq;
	e->at = now;
	st->nends++;
}

static int
record(struct sma_steer *st, const struct redir *r, int op,
    const char *reason, uint64_t now)
{
	struct cats_rec rec;
	fill(st, r, op, reason, now, &rec);
	rec.u.steer.seq = ++st->seq;
	if (st->emit(st->arg, &rec) < 0) {
		st->st.failures++;
		if (op == CATS_STEER_END)
			unsent_end(st, r, reason, now);
		return -1;
	}
	unsent_forget(st, r);	/* said since: what was kept is older */
	return 0;
}

/* Steer r's instance to e (a new redirect or a new target). */
static void
redirect(struct sma_steer *st, struct redir *r, const struct sma_entry *e,
    const char *reason, uint64_t now)
{
	bool moved = r->to != NULL;
	char *to = strdup(e->csci_id);
	if (to == NULL) {
		st->st.failures++;
		return;
	}
	char *old = r->to;
	r->to = to;
	r->loc = e->locator;
	r->has_port = (e->has & SMA_HAS_PORT) != 0;
	r->port = e->port;
	record(st, r, CATS_STEER_REDIRECT, reason, now);
	r->why = reason;
	r->seq = st->seq;
	r->at = now;
	char b1[CATS_ID + 1], b2[CATS_ID + 1], b3[CATS_ID + 1],
	    b4[CATS_ID + 1], b5[CATS_ID + 1], l1[64], l2[64];
	cats_audit("steer-redirect", "sma=%s cs=%s from=%s from_locator=%s "
	    "to=%s locator=%s reason=%s%s%s partition_ms=%" PRIu64 " seq=%"
	    PRIu64, cats_safe(st->c->id, b1, sizeof(b1)),
	    cats_safe(r->cs_id, b2, sizeof(b2)),
	    cats_safe(r->from, b3, sizeof(b3)),
	    r->from_loc.af ? cats_ip_fmt(&r->from_loc, l1, sizeof(l1)) : "-",
	    cats_safe(to, b4, sizeof(b4)), cats_ip_fmt(&r->loc, l2,
	    sizeof(l2)), reason, moved ? " was=" : "",
	    moved ? cats_safe(old, b5, sizeof(b5)) : "", now - st->since,
	    st->seq);
	free(old);
	st->st.redirects++;
	st->st.replaced += moved;
	st->st.active += !moved;
	st->want_full = true;
}

/* End what is in force for r (nothing when it was refused). */
static void
end(struct sma_steer *st, struct redir *r, const char *reason, uint64_t now)
{
	if (r->to == NULL)
		return;
	record(st, r, CATS_STEER_END, reason, now);
	char b1[CATS_ID + 1], b2[CATS_ID + 1], b3[CATS_ID + 1],
	    b4[CATS_ID + 1];
	cats_audit("steer-end", "sma=%s cs=%s from=%s to=%s reason=%s seq=%"
	    PRIu64, cats_safe(st->c->id, b1, sizeof(b1)),
	    cats_safe(r->cs_id, b2, sizeof(b2)),
	    cats_safe(r->from, b3, sizeof(b3)),
	    cats_safe(r->to, b4, sizeof(b4)), reason, st->seq);
	free(r->to);
	r->to = NULL;
	st->st.ends++;
	st->st.active--;
}

static void
refused(struct sma_steer *st, const struct redir *r, const char *why)
{
	char b1[CATS_ID + 1], b2[CATS_ID + 1], b3[CATS_ID + 1];
	cats_audit("steer-refused", "sma=%s cs=%s from=%s why=%s",
	    cats_safe(st->c->id, b1, sizeof(b1)),
	    cats_safe(r->cs_id, b2, sizeof(b2)),
	    cats_safe(r->from, b3, sizeof(b3)), why);
	st->st.refused++;
}

static void
drop(struct sma_steer *st, size_t i)
{
	redir_free(&st->v[i]);
	st->v[i] = st->v[--st->n];
}

static void
end_all(struct sma_steer *st, const char *reason, uint64_t now)
{
	while (st->n > 0) {
		end(st, &st->v[st->n - 1], reason, now);
		drop(st, st->n - 1);
	}
}

static struct redir *
find(struct sma_steer *st, const char *cs_id, const char *from)
{
	for (size_t i = 0; i < st->n; i++)
		if (strcmp(st->v[i].from, from) == 0 &&
		    strcmp(st->v[i].cs_id, cs_id) == 0)
			return &st->v[i];
	return NULL;
}

static struct redir *
add(struct sma_steer *st, const char *cs_id, const struct sma_entry *e)
{
	if (cats_grow((void **)&st->v, &st->cap, st->n, sizeof(*st->v), 16) < 0)
		return NULL;
	struct redir *r = &st->v[st->n];
	memset(r, 0, sizeof(*r));
	r->cs_id = strdup(cs_id);
	r->from = strdup(e->csci_id);
	if (r->cs_id == NULL || r->from == NULL) {
		redir_free(r);
		return NULL;
	}
	r->from_loc = e->locator;
	r->has_from_port = (e->has & SMA_HAS_PORT) != 0;
	r->from_port = e->port;
	st->n++;
	return r;
}

/* The redirects of one service looked at again, then its new faults. */
static void
eval_service(struct sma_steer *st, const struct sma *core, const char *cs_id,
    uint64_t now)
{
	const struct sma_svc *svc = sma_service(core, cs_id);
	for (size_t i = 0; i < st->n; i++) {
		struct redir *r = &st->v[i];
		if (strcmp(r->cs_id, cs_id) != 0)
			continue;
		const struct sma_entry *e = sma_lookup(core, r->from);
		if (e != NULL && (e->svc != svc || e->origin != NULL))
			e = NULL;	/* moved to another CS-ID: gone here */
		if (e != NULL && fault(e) == NULL) {
			end(st, r, "recovered", now);
			drop(st, i--);
			continue;
		}
		if (r->to != NULL) {
			const struct sma_entry *t = sma_lookup(core, r->to);
			if (t != NULL && t->svc == svc && eligible(t))
				continue;
		}
		const struct sma_entry *b = best(svc);
		if (b != NULL)
			redirect(st, r, b, r->to != NULL ? "replaced" :
			    fault(e), now);
		else if (r->to != NULL)
			end(st, r, "no-candidate", now);
	}
	for (const struct sma_entry *e = svc ? svc->head : NULL; e != NULL;
	    e = e->svc_next) {
		if (e->origin != NULL || e->locator.af == 0 ||
		    fault(e) == NULL || find(st, cs_id, e->csci_id) != NULL)
			continue;
		if (st->n >= st->c->steer.max_redirects) {
			if (!st->bound_said) {
				struct redir tmp = { .cs_id = (char *)cs_id,
					.from = (char *)e->csci_id };
				refused(st, &tmp, "max-redirects");
				st->bound_said = true;
			}
			continue;
		}
		struct redir *r = add(st, cs_id, e);
		if (r == NULL) {
			st->st.failures++;
			continue;
		}
		const struct sma_entry *b = best(svc);
		if (b != NULL)
			redirect(st, r, b, fault(e), now);
		else
			refused(st, r, "no-candidate");
	}
}

void
sma_steer_update(struct sma_steer *st, const struct sma *core,
    const struct sma_steer_nb *nb, uint64_t now)
{
	if (st->dirty) {
		/* Services no longer configured (a reload) end first. */
		for (size_t i = 0; i < st->n; i++) {
			if (configured(st, st->v[i].cs_id))
				continue;
			end(st, &st->v[i], "unconfigured", now);
			drop(st, i--);
		}
	}
	if (!nb->partitioned) {
		if (st->in_partition) {
			st->in_partition = false;
			st->healing = st->n > 0;
		}
		st->st.steering = false;
		if (st->healing && nb->synced) {
			size_t active = st->st.active;
			end_all(st, "healed", now);
			char b1[CATS_ID + 1];
			cats_audit("steer-heal", "sma=%s ended=%zu "
			    "partition_ms=%" PRIu64, cats_safe(st->c->id, b1,
			    sizeof(b1)), active, now - st->since);
			st->st.heals++;
			st->healing = false;
		}
		st->dirty = false;
		return;
	}
	if (!st->in_partition) {
		st->in_partition = true;
		st->since = nb->since;
		st->expired = false;
		st->bound_said = false;
		st->dirty = true;
	}
	if (st->expired)
		return;
	if (now >= st->since + st->c->steer.max_ms) {
		st->expired = true;
		st->st.expired++;
		st->st.steering = false;
		end_all(st, "max-duration", now);
		return;
	}
	st->st.steering = st->c->steer.nservices > 0;
	if (!st->dirty)
		return;
	st->dirty = false;
	for (size_t i = 0; i < st->c->steer.nservices; i++)
		eval_service(st, core, st->c->steer.services[i], now);
}

uint64_t
sma_steer_next_deadline(const struct sma_steer *st)
{
	if (!st->in_partition || st->expired || st->c->steer.nservices == 0)
		return 0;
	return st->since + st->c->steer.max_ms;
}

static int
by_seq(const void *x, const void *y)
{
	const struct redir *a = *(const struct redir *const *)x,
	    *b = *(const struct redir *const *)y;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

void
sma_steer_view(const struct sma_steer *st,
    void (*fn)(void *arg, const struct cats_rec *r), void *arg)
{
	/* In seq order: an egress that starts afresh refuses a seq below
	 * one it has taken (a redirect moved since has a higher one). */
	const struct redir **o = st->n ? malloc(st->n * sizeof(*o)) : NULL;
	size_t n = 0;
	for (size_t i = 0; o != NULL && i < st->n; i++)
		if (st->v[i].to != NULL)
			o[n++] = &st->v[i];
	if (o != NULL)
		qsort(o, n, sizeof(*o), by_seq);
	for (size_t i = 0; i < (o != NULL ? n : st->n); i++) {
		const struct redir *r = o != NULL ? o[i] : &st->v[i];
		if (r->to == NULL)
			continue;
		struct cats_rec rec;
		fill(st, r, CATS_STEER_REDIRECT, r->why, r->at, &rec);
		rec.u.steer.seq = r->seq;
		fn(arg, &rec);
	}
	free(o);
}

size_t
sma_steer_resend(struct sma_steer *st)
{
	size_t all = st->n + st->nends, n = 0, sent = 0;
	const struct redir **o = all ? malloc(all * sizeof(*o)) : NULL;
	bool *left = st->nends ? calloc(st->nends, sizeof(*left)) : NULL;
	if (o == NULL || (st->nends > 0 && left == NULL)) {
		free(o);
		free(left);
		return 0;
	}
	for (size_t i = 0; i < st->n; i++)
		if (st->v[i].to != NULL)
			o[n++] = &st->v[i];
	for (size_t i = 0; i < st->nends; i++)
		o[n++] = &st->ends[i];
	qsort(o, n, sizeof(*o), by_seq);
	for (size_t i = 0; i < n; i++) {
		const struct redir *r = o[i];
		struct cats_rec rec;
		fill(st, r, r->to != NULL ? CATS_STEER_REDIRECT :
		    CATS_STEER_END, r->why, r->at, &rec);
		rec.u.steer.seq = r->seq;
		if (st->emit(st->arg, &rec) < 0)
			break;		/* gone again: the rest next time */
		if (r->to == NULL) {
			left[r - st->ends] = true;
			sent++;
		}
	}
	free(o);
	/* The ends that left are forgotten (from the last: the swap with
	 * the last entry keeps the marks of those not looked at yet). */
	for (size_t i = st->nends; i-- > 0;) {
		if (!left[i])
			continue;
		redir_free(&st->ends[i]);
		st->ends[i] = st->ends[--st->nends];
		left[i] = left[st->nends];
	}
	free(left);
	return sent;
}

bool
sma_steer_wants_full(struct sma_steer *st)
{
	bool w = st->want_full;
	st->want_full = false;
	return w;
}

const struct sma_steer_stats *
sma_steer_stats(const struct sma_steer *st)
{
	return &st->st;
}
