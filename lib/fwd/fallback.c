/*
 * fallback.c - the configured ingress fallback: candidates, their soft
 * state, the C-PS's silence and the Maglev table (fallback.h).
 */
#include <stdio.h>
#include <string.h>

#include "base/conf.h"
#include "fwd/fallback.h"

const char *const cats_ifb_why[] = {
	"ok", "not-configured", "cps-silent-too-long", "no-candidate", NULL
};

int
cats_ifb_parse(struct cats_ifb *fb, const char *arg, char *err, size_t errlen)
{
	const char *eq = strchr(arg, '=');
	char e[128];
	uint64_t ms;
	if (eq == NULL || eq == arg || (size_t)(eq - arg) > CATS_ID) {
		snprintf(err, errlen, "--fallback %s: expected CSID=DURATION", arg);
		return -1;
	}
	if (cats_parse_ms(eq + 1, &ms, e, sizeof(e)) < 0 || ms == 0 ||
	    ms > UINT32_MAX) {
		snprintf(err, errlen, "--fallback %s: %s", arg, ms == 0 ?
		    "a duration of 0" : e);
		return -1;
	}
	if (fb->n == CATS_IFB_SERVICES) {
		snprintf(err, errlen, "--fallback: at most %d services",
		    CATS_IFB_SERVICES);
		return -1;
	}
	struct cats_ifb_svc *s = &fb->s[fb->n++];
	memset(s, 0, sizeof(*s));
	memcpy(s->cs_id, arg, (size_t)(eq - arg));
	s->max_ms = ms;
	return 0;
}

struct cats_ifb_svc *
cats_ifb_svc(struct cats_ifb *fb, const char *cs_id)
{
	for (unsigned i = 0; cs_id != NULL && i < fb->n; i++)
		if (strcmp(fb->s[i].cs_id, cs_id) == 0)
			return &fb->s[i];
	return NULL;
}

static uint64_t
fnv64(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= UINT64_C(1099511628211);
	}
	return h;
}

#define FNV_BASIS UINT64_C(14695981039346656037)

uint64_t
cats_ifb_flow_hash(const struct cats_fkey *k)
{
	uint8_t h[6] = { k->af, k->proto, (uint8_t)(k->sport >> 8),
		(uint8_t)k->sport, (uint8_t)(k->dport >> 8), (uint8_t)k->dport };
	uint64_t x = fnv64(FNV_BASIS, h, sizeof(h));
	x = fnv64(x, k->src, 16);
	return cats_mix64(fnv64(x, k->dst, 16));
}

/* A candidate's identity (its instance), the seed of its permutation. */
static uint64_t
cand_hash(const struct cats_ifb_cand *c)
{
	uint8_t h[3] = { c->af, (uint8_t)(c->port >> 8), (uint8_t)c->port };
	return cats_mix64(fnv64(fnv64(FNV_BASIS, h, sizeof(h)), c->locator,
	    16));
}

void
cats_ifb_maglev(struct cats_ifb_svc *s, const unsigned *live, unsigned n)
{
	uint32_t off[CATS_IFB_CANDS], skip[CATS_IFB_CANDS], next[CATS_IFB_CANDS];
	bool set[CATS_IFB_TABLE];
	s->nlive = n;
	if (n == 0)
		return;
	for (unsigned i = 0; i < n; i++) {
		uint64_t h = cand_hash(&s->c[live[i]]);
		off[i] = (uint32_t)(h % CATS_IFB_TABLE);
		skip[i] = (uint32_t)(cats_mix64(h ^ UINT64_C(0x9e3779b97f4a7c15)) %
		    (CATS_IFB_TABLE - 1)) + 1;
		next[i] = 0;
	}
	memset(set, 0, sizeof(set));
	/* Each candidate in turn takes the next free slot of its
	 * permutation, until the table is full (Maglev, section 3.4). */
	for (unsigned filled = 0;;) {
		for (unsigned i = 0; i < n; i++) {
			uint32_t c;
			do {
				c = (uint32_t)((off[i] + (uint64_t)next[i] *
				    skip[i]) % CATS_IFB_TABLE);
				next[i]++;
			} while (set[c]);
			set[c] = true;
			s->table[c] = (uint8_t)live[i];
			if (++filled == CATS_IFB_TABLE)
				return;
		}
	}
}

void
cats_ifb_learn(struct cats_ifb *fb, const struct cats_fbind *b,
    const char *cs_id, const char *egress, uint64_t now)
{
	struct cats_ifb_svc *s = cats_ifb_svc(fb, cs_id);
	if (s == NULL || !b->ingress)
		return;
	struct cats_ifb_cand nc;
	memset(&nc, 0, sizeof(nc));
	nc.af = b->af;
	memcpy(nc.locator, b->locator, 16);
	nc.port = b->port;
	nc.enc = b->enc;
	nc.fkind = b->fkind;
	nc.rkind = b->rkind;
	cats_strlcpy(nc.egress, egress ? egress : "", sizeof(nc.egress));
	nc.idle_ms = b->idle_ms;
	nc.hard_ms = b->hard_ms;
	nc.expires = now + (fb->ttl_ms ? fb->ttl_ms : 30000);
	unsigned i, oldest = 0;
	for (i = 0; i < s->n; i++) {
		const struct cats_ifb_cand *c = &s->c[i];
		if (c->af == nc.af && c->port == nc.port &&
		    memcmp(c->locator, nc.locator, 16) == 0)
			break;
		if (c->expires < s->c[oldest].expires)
			oldest = i;
	}
	/* The table keys instances: it is made again when one comes (or
	 * comes back), not when a known one's path or lifetime changes. */
	if (i == s->n && s->n == CATS_IFB_CANDS) {
		i = oldest;		/* the one whose soft state ends first */
		s->dirty = true;
	} else if (i == s->n) {
		s->n++;
		s->dirty = true;
	} else if (s->c[i].expires <= now) {
		s->dirty = true;
	}
	s->c[i] = nc;
}

void
cats_ifb_answer(struct cats_ifb *fb)
{
	fb->silent_since = 0;
}

void
cats_ifb_silent(struct cats_ifb *fb, uint64_t now)
{
	if (fb->silent_since == 0)
		fb->silent_since = now ? now : 1;
}

int
cats_ifb_pick(struct cats_ifb *fb, struct cats_ifb_svc *s, uint64_t h,
    uint64_t now, const struct cats_ifb_cand **out)
{
	if (s == NULL)
		return CATS_IFB_NONE;
	if (fb->silent_since && now > fb->silent_since + s->max_ms)
		return CATS_IFB_TOO_LONG;
	/* The candidates still eligible; the table again when they changed
	 * (one whose soft state ended leaves it). */
	unsigned live[CATS_IFB_CANDS], n = 0;
	for (unsigned i = 0; i < s->n; i++)
		if (s->c[i].expires > now)
			live[n++] = i;
	if (n != s->nlive)
		s->dirty = true;
	if (s->dirty) {
		cats_ifb_maglev(s, live, n);
		s->dirty = false;
	}
	if (n == 0)
		return CATS_IFB_NO_CAND;
	*out = &s->c[s->table[h % CATS_IFB_TABLE]];
	return CATS_IFB_OK;
}
