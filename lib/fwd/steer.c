/*
 * steer.c - the egress's table of site-local redirects (steer.h).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fwd/steer.h"

void
cats_fsteer_init(struct cats_fsteer *t, const char *egress)
{
	memset(t, 0, sizeof(*t));
	t->egress = egress;
}

static void
copy_id(char *dst, const char *src)
{
	snprintf(dst, CATS_ID + 1, "%s", src != NULL ? src : "");
}

static void
drop_at(struct cats_fsteer *t, unsigned i)
{
	t->ent[i] = t->ent[--t->n];
}

static int __attribute__((format(printf, 4, 5)))
refuse(struct cats_fsteer *t, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	t->st.refused++;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static struct cats_fsteer_ent *
find(struct cats_fsteer *t, const char *cs_id, const char *from)
{
	for (unsigned i = 0; i < t->n; i++)
		if (strcmp(t->ent[i].cs_id, cs_id) == 0 &&
		    strcmp(t->ent[i].from, from) == 0)
			return &t->ent[i];
	return NULL;
}

/* A higher epoch of sma_id: every redirect of a lower one ends. */
static void
fence(struct cats_fsteer *t, const char *sma_id, uint64_t epoch)
{
	for (unsigned i = 0; i < t->n;) {
		if (strcmp(t->ent[i].sma_id, sma_id) == 0 &&
		    t->ent[i].epoch < epoch) {
			drop_at(t, i);
			t->st.fenced++;
		} else {
			i++;
		}
	}
}

int
cats_fsteer_apply(struct cats_fsteer *t, const struct cats_steer *r,
    const char *signer, uint64_t now, char *err, size_t errlen)
{
	bool redirect = r->op == CATS_STEER_REDIRECT;
	if (signer == NULL || strcmp(signer, r->sma_id) != 0)
		return refuse(t, err, errlen, "signed by \"%s\", not its "
		    "sma_id %s", signer ? signer : "", r->sma_id);
	if (CATS_HAS(r, STR, egress) && t->egress != NULL &&
	    strcmp(r->egress, t->egress) != 0)
		return refuse(t, err, errlen, "for egress %s, not this one",
		    r->egress);
	if (redirect) {
		if (!CATS_HAS(r, STR, from_locator))
			return refuse(t, err, errlen, "redirect without "
			    "from_locator: nothing to match");
		if (!CATS_HAS(r, STR, until))
			return refuse(t, err, errlen, "redirect without "
			    "until: unbounded");
		if (r->until <= now)
			return refuse(t, err, errlen, "expired: until %"
			    PRIu64 " passed at %" PRIu64, r->until, now);
		if (r->locator.af != r->from_locator.af)
			return refuse(t, err, errlen, "redirect across "
			    "address families");
	}
	struct cats_fsteer_sma *s = NULL;
	for (unsigned i = 0; i < t->nsma; i++)
		if (strcmp(t->sma[i].id, r->sma_id) == 0)
			s = &t->sma[i];
	if (s != NULL && r->epoch < s->epoch)
		return refuse(t, err, errlen, "stale epoch %" PRIu64
		    " (the C-SMA is at %" PRIu64 ")", r->epoch, s->epoch);
	if (s != NULL && r->epoch == s->epoch && r->seq <= s->seq)
		return refuse(t, err, errlen, "replayed seq %" PRIu64
		    " (last %" PRIu64 ")", r->seq, s->seq);
	struct cats_fsteer_ent *e = find(t, r->cs_id, r->from);
	if (redirect && e == NULL && t->n == CATS_FSTEER_MAX)
		return refuse(t, err, errlen, "table full (%d "
		    "redirects)", CATS_FSTEER_MAX);
	if (s == NULL) {
		if (t->nsma == CATS_FSTEER_SMAS)
			return refuse(t, err, errlen, "C-SMA %s: too many "
			    "C-SMAs (%d)", r->sma_id, CATS_FSTEER_SMAS);
		s = &t->sma[t->nsma++];
		copy_id(s->id, r->sma_id);
		s->epoch = r->epoch;
	}
	if (r->epoch > s->epoch) {
		fence(t, r->sma_id, r->epoch);
		s->epoch = r->epoch;
		e = find(t, r->cs_id, r->from);
	}
	s->seq = r->seq;
	t->st.records++;
	if (!redirect) {
		t->st.ends++;
		if (e != NULL)
			drop_at(t, (unsigned)(e - t->ent));
		return 0;
	}
	t->st.redirects++;
	if (e == NULL)
		e = &t->ent[t->n++];
	memset(e, 0, sizeof(*e));
	copy_id(e->sma_id, r->sma_id);
	copy_id(e->cs_id, r->cs_id);
	copy_id(e->from, r->from);
	copy_id(e->to, r->to);
	e->epoch = r->epoch;
	e->until = r->until;
	e->from_loc = r->from_locator;
	e->to_loc = r->locator;
	e->ports = CATS_HAS(r, STR, from_port) && CATS_HAS(r, STR, port);
	e->from_port = CATS_HAS(r, STR, from_port) ? (uint16_t)r->from_port
	    : 0;
	e->to_port = e->ports ? (uint16_t)r->port : 0;
	if (t->moved != NULL)
		t->moved(e, t->moved_arg);
	return 0;
}

void
cats_fsteer_expire(struct cats_fsteer *t, uint64_t now)
{
	for (unsigned i = 0; i < t->n;) {
		if (t->ent[i].until <= now) {
			drop_at(t, i);
			t->st.expired++;
		} else {
			i++;
		}
	}
}

static bool
same(const struct cats_ip *ip, uint8_t af, const uint8_t *a)
{
	return ip->af == af && memcmp(ip->a, a, af == 4 ? 4 : 16) == 0;
}

bool
cats_fsteer_match(const struct cats_fsteer_ent *e, uint8_t af,
    const uint8_t *addr, uint16_t port)
{
	return same(&e->from_loc, af, addr) &&
	    (e->from_port == 0 || e->from_port == port);
}

const struct cats_fsteer_ent *
cats_fsteer_fwd(struct cats_fsteer *t, uint8_t af, const uint8_t *addr,
    uint16_t port, uint64_t now)
{
	for (unsigned i = 0; i < t->n; i++) {
		const struct cats_fsteer_ent *e = &t->ent[i];
		if (e->until > now && cats_fsteer_match(e, af, addr, port))
			return e;
	}
	return NULL;
}

const struct cats_fsteer_ent *
cats_fsteer_rev(struct cats_fsteer *t, uint8_t af, const uint8_t *addr,
    uint16_t port, uint64_t now, const struct cats_fsteer_ent *prev)
{
	unsigned i = prev != NULL ? (unsigned)(prev - t->ent) + 1 : 0;
	for (; i < t->n; i++) {
		const struct cats_fsteer_ent *e = &t->ent[i];
		if (e->until > now && same(&e->to_loc, af, addr) &&
		    (!e->ports || e->to_port == port))
			return e;
	}
	return NULL;
}
