/*
 * svc.c - the service catalogue: contexts by CS-ID, an address index, sorted
 * authorization lists, fallback parsing.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/cats.h"
#include "base/conf.h"
#include "base/htab.h"
#include "select/svc.h"

const char *const cats_policy_names[] = { "min-latency", "p2c-gas",
	"cheapest", NULL };
const char *const cats_fb_kind_names[] = { "stale", "relax", "csci", NULL };

int
cats_policy_from_name(const char *s)
{
	return cats_enum_index(cats_policy_names, s, strlen(s));
}

/* Services that list one address, in the order they were added. */
struct abucket {
	struct cats_ip ip;
	struct cats_svc **v;
	size_t n, cap;
};

struct cats_svc_cat {
	struct cats_htab bycs;
	struct cats_htab byaddr;
	size_t n, max;
	uint64_t gen;
};

static bool
eq_svc(const void *item, const void *key)
{
	return strcmp(((const struct cats_svc *)item)->cs_id, key) == 0;
}

static bool
eq_addr(const void *item, const void *key)
{
	return cats_ip_eq(&((const struct abucket *)item)->ip, key);
}

static uint64_t
hash_ip(const struct cats_ip *ip)
{
	uint8_t k[17];
	k[0] = ip->af;
	memcpy(k + 1, ip->a, 16);
	return cats_hash(k, ip->af == 4 ? 5 : 17);
}

struct cats_svc_cat *
cats_svc_cat_new(size_t max_services)
{
	struct cats_svc_cat *c = calloc(1, sizeof(*c));
	if (c != NULL)
		c->max = max_services ? max_services : 1000000;
	return c;
}

static void
free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void
free_svc(struct cats_svc *s)
{
	if (s == NULL)
		return;
	free(s->cs_id);
	free(s->tenant);
	for (size_t i = 0; i < s->naddrs; i++)
		free(s->addrs[i].tenant);
	free(s->addrs);
	free_strv(s->authorized, s->nauth);
	free_strv(s->sites, s->nsites);
	free_strv((char **)s->con.exclude_nodes.v, s->con.exclude_nodes.n);
	free_strv((char **)s->con.exclude_links.v, s->con.exclude_links.n);
	free(s->con.exclude_srlgs.v);
	free(s->fallback);
	for (size_t i = 0; i < s->nfb; i++)
		free(s->fb[i].csci);
	free(s);
}

void
cats_svc_cat_free(struct cats_svc_cat *c)
{
	if (c == NULL)
		return;
	for (size_t i = 0; i < c->bycs.cap; i++)
		if (c->bycs.s[i].h)
			free_svc(c->bycs.s[i].item);
	for (size_t i = 0; i < c->byaddr.cap; i++) {
		if (c->byaddr.s[i].h) {
			struct abucket *b = c->byaddr.s[i].item;
			free(b->v);
			free(b);
		}
	}
	cats_htab_free(&c->bycs);
	cats_htab_free(&c->byaddr);
	free(c);
}

/* ---- fallback ---- */

static int
parse_relax(const char *s, size_t n, uint64_t *bits, struct cats_err *err)
{
	*bits = 0;
	while (n > 0) {
		const char *plus = memchr(s, '+', n);
		size_t len = plus ? (size_t)(plus - s) : n;
		int f = -1;
		for (size_t i = 0; i < cats_schema_constraints.nfields; i++) {
			const char *name =
			    cats_schema_constraints.fields[i].name;
			if (strlen(name) == len && memcmp(name, s, len) == 0)
				f = (int)i;
		}
		if (f < 0 || !((CATS_FB_RELAXABLE >> f) & 1))
			return cats_err_set(err, "fallback",
			    "relax: \"%.*s\" is "
			    "not max_comp_ms, max_price, min_reputation or "
			    "min_security", (int)len, s);
		*bits |= UINT64_C(1) << f;
		s += len;
		n -= len;
		if (plus) {
			s++;
			n--;
			if (n == 0)
				return cats_err_set(err, "fallback",
				    "relax: trailing '+'");
		}
	}
	if (*bits == 0)
		return cats_err_set(err, "fallback", "relax: no field");
	return 0;
}

static int
fb_parse(const char *text, struct cats_fb_term *v, size_t *n,
    struct cats_err *err)
{
	const char *s = text;
	for (;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		const char *colon = memchr(s, ':', len);
		if (*n == CATS_FB_MAX)
			return cats_err_set(err, "fallback",
			    "more than %d terms", CATS_FB_MAX);
		if (colon == NULL || colon == s ||
		    (size_t)(colon - s) + 1 == len)
			return cats_err_set(err, "fallback", "\"%.*s\" is not "
			    "KIND:VALUE", (int)len, s);
		size_t klen = (size_t)(colon - s);
		const char *val = colon + 1;
		size_t vlen = len - klen - 1;
		int kind = cats_enum_index(cats_fb_kind_names, s, klen);
		struct cats_fb_term *t = &v[*n];
		memset(t, 0, sizeof(*t));
		t->kind = kind;
		char buf[CATS_ID + 1], msg[128];
		switch (kind) {
		case CATS_FB_STALE:
			if (vlen >= sizeof(buf))
				return cats_err_set(err, "fallback",
				    "stale: duration too long");
			memcpy(buf, val, vlen);
			buf[vlen] = '\0';
			if (cats_parse_ms(buf, &t->ms, msg, sizeof(msg)) < 0 ||
			    t->ms == 0 || t->ms > 86400000)
				return cats_err_set(err, "fallback", "stale: "
				    "expected a duration from 1ms to 1d");
			break;
		case CATS_FB_RELAX:
			if (parse_relax(val, vlen, &t->relax, err) < 0)
				return -1;
			break;
		case CATS_FB_CSCI:
			if (vlen > CATS_ID)
				return cats_err_set(err, "fallback",
				    "csci: identifier too long");
			if ((t->csci = strndup(val, vlen)) == NULL)
				return cats_err_set(err, "fallback",
				    "out of memory");
			break;
		default:
			return cats_err_set(err, "fallback", "unknown kind "
			    "\"%.*s\" (stale, relax or csci)", (int)klen, s);
		}
		(*n)++;
		if (comma == NULL)
			return 0;
		s = comma + 1;
	}
}

int
cats_fb_parse(const char *text, struct cats_fb_term *v, size_t *n,
    struct cats_err *err)
{
	*n = 0;
	if (text == NULL || strcmp(text, "none") == 0 || text[0] == '\0')
		return 0;
	if (fb_parse(text, v, n, err) == 0)
		return 0;
	for (size_t i = 0; i < *n; i++) {
		free(v[i].csci);
		v[i].csci = NULL;
	}
	*n = 0;
	return -1;
}

/* ---- building a context ---- */

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
copy_strv(char ***dst, size_t *dn, const struct cats_arr_text *src, bool sort)
{
	*dn = 0;
	*dst = NULL;
	if (src->n == 0)
		return 0;
	if ((*dst = calloc(src->n, sizeof(char *))) == NULL)
		return -1;
	for (size_t i = 0; i < src->n; i++) {
		if (((*dst)[i] = strdup(src->v[i])) == NULL)
			return -1;
		(*dn)++;
	}
	if (sort && *dn > 1)
		qsort(*dst, *dn, sizeof(char *), cmp_str);
	return 0;
}

static struct cats_svc *
build(const struct cats_service *r, struct cats_err *err)
{
	struct cats_svc *s = calloc(1, sizeof(*s));
	if (s == NULL)
		goto oom;
	s->has = r->has;
	s->version = r->version;
	if ((s->cs_id = strdup(r->cs_id)) == NULL)
		goto oom;
	s->cs_h = cats_hash_str(s->cs_id);
	if (r->tenant && (s->tenant = strdup(r->tenant)) == NULL)
		goto oom;
	if (r->addresses.n > 0) {
		s->addrs = calloc(r->addresses.n, sizeof(*s->addrs));
		if (s->addrs == NULL)
			goto oom;
		for (size_t i = 0; i < r->addresses.n; i++) {
			const struct cats_address *a = &r->addresses.v[i];
			struct cats_svc_addr *o = &s->addrs[i];
			o->ip = a->addr;
			o->kind = CATS_HAS(a, ADR, kind) ? a->kind : -1;
			o->has_port = CATS_HAS(a, ADR, port);
			o->port = a->port;
			o->has_proto = CATS_HAS(a, ADR, proto);
			o->proto = a->proto;
			s->naddrs++;
			if (a->tenant &&
			    (o->tenant = strdup(a->tenant)) == NULL)
				goto oom;
		}
	}
	if (copy_strv(&s->authorized, &s->nauth, &r->authorized, true) < 0 ||
	    copy_strv(&s->sites, &s->nsites, &r->sites, true) < 0)
		goto oom;
	if (CATS_HAS(r, SVC, constraints)) {
		s->con = r->constraints;
		s->con.exclude_nodes.v = NULL;
		s->con.exclude_nodes.n = 0;
		s->con.exclude_links.v = NULL;
		s->con.exclude_links.n = 0;
		s->con.exclude_srlgs.v = NULL;
		s->con.exclude_srlgs.n = 0;
		char **v;
		size_t n;
		int rc = copy_strv(&v, &n, &r->constraints.exclude_nodes,
		    false);
		s->con.exclude_nodes.v = (const char **)v;
		s->con.exclude_nodes.n = n;
		if (rc < 0)
			goto oom;
		rc = copy_strv(&v, &n, &r->constraints.exclude_links, false);
		s->con.exclude_links.v = (const char **)v;
		s->con.exclude_links.n = n;
		if (rc < 0)
			goto oom;
		n = r->constraints.exclude_srlgs.n;
		if (n > 0) {
			if ((s->con.exclude_srlgs.v = malloc(n *
			    sizeof(uint64_t))) == NULL)
				goto oom;
			memcpy(s->con.exclude_srlgs.v,
			    r->constraints.exclude_srlgs.v,
			    n * sizeof(uint64_t));
			s->con.exclude_srlgs.n = n;
		}
	}
	if (r->policy != NULL) {
		s->policy = cats_policy_from_name(r->policy);
		if (s->policy < 0) {
			cats_err_set(err, "policy", "unknown policy \"%s\" "
			    "(min-latency, p2c-gas or cheapest)", r->policy);
			free_svc(s);
			return NULL;
		}
	}
	s->policy_version = r->policy_version;
	s->affinity = r->affinity;
	s->on_failure = r->on_failure;
	s->dataplane = r->dataplane;
	s->port = r->port;
	s->idle_ms = r->idle_ms;
	s->hard_ms = r->hard_ms;
	if (r->fallback != NULL) {
		if ((s->fallback = strdup(r->fallback)) == NULL)
			goto oom;
		if (cats_fb_parse(r->fallback, s->fb, &s->nfb, err) < 0) {
			free_svc(s);
			return NULL;
		}
		for (size_t i = 0; i < s->nfb; i++)
			if (s->fb[i].kind == CATS_FB_STALE &&
			    s->fb[i].ms > s->max_stale_ms)
				s->max_stale_ms = s->fb[i].ms;
	}
	return s;
oom:
	free_svc(s);
	cats_err_set(err, "", "out of memory");
	return NULL;
}

static struct abucket *
addr_bucket(struct cats_svc_cat *c, const struct cats_ip *ip, bool create)
{
	uint64_t h = hash_ip(ip);
	struct abucket *b = cats_htab_get(&c->byaddr, h, eq_addr, ip);
	if (b != NULL || !create)
		return b;
	if ((b = calloc(1, sizeof(*b))) == NULL)
		return NULL;
	b->ip = *ip;
	if (cats_htab_put(&c->byaddr, h, b) < 0) {
		free(b);
		return NULL;
	}
	return b;
}

static void
unindex(struct cats_svc_cat *c, const struct cats_svc *s)
{
	for (size_t i = 0; i < s->naddrs; i++) {
		struct abucket *b = addr_bucket(c, &s->addrs[i].ip, false);
		if (b == NULL)
			continue;
		for (size_t k = 0; k < b->n;) {
			if (b->v[k] == s) {
				memmove(&b->v[k], &b->v[k + 1],
				    (b->n - k - 1) * sizeof(*b->v));
				b->n--;
			} else {
				k++;
			}
		}
		if (b->n == 0) {
			cats_htab_del(&c->byaddr, hash_ip(&b->ip), eq_addr,
			    &b->ip);
			free(b->v);
			free(b);
		}
	}
}

static int
index_svc(struct cats_svc_cat *c, struct cats_svc *s)
{
	for (size_t i = 0; i < s->naddrs; i++) {
		struct abucket *b = addr_bucket(c, &s->addrs[i].ip, true);
		if (b == NULL)
			return -1;
		bool dup = false;
		for (size_t k = 0; k < b->n; k++)
			dup |= b->v[k] == s;
		if (dup)
			continue;
		if (cats_grow((void **)&b->v, &b->cap, b->n, sizeof(*b->v),
		    2) < 0)
			return -1;
		b->v[b->n++] = s;
	}
	return 0;
}

int
cats_svc_apply(struct cats_svc_cat *c, const struct cats_service *r,
    struct cats_err *err)
{
	uint64_t h = cats_hash_str(r->cs_id);
	struct cats_svc *old = cats_htab_get(&c->bycs, h, eq_svc, r->cs_id);
	if (old != NULL && r->version < old->version)
		return 0;
	if (old == NULL && c->n >= c->max)
		return cats_err_set(err, "cs_id", "the catalogue is full (%zu "
		    "services)", c->max);
	struct cats_svc *s = build(r, err);
	if (s == NULL)
		return -1;
	if (old != NULL) {
		unindex(c, old);
		cats_htab_del(&c->bycs, h, eq_svc, r->cs_id);
		free_svc(old);
		c->n--;
	}
	if (cats_htab_put(&c->bycs, h, s) < 0) {
		free_svc(s);
		return cats_err_set(err, "", "out of memory");
	}
	c->n++;
	c->gen++;
	if (index_svc(c, s) < 0) {
		unindex(c, s);
		cats_htab_del(&c->bycs, h, eq_svc, r->cs_id);
		free_svc(s);
		c->n--;
		return cats_err_set(err, "", "out of memory");
	}
	return 1;
}

const struct cats_svc *
cats_svc_get(const struct cats_svc_cat *c, const char *cs_id)
{
	return cats_htab_get(&c->bycs, cats_hash_str(cs_id), eq_svc, cs_id);
}

void
cats_svc_by_addr(const struct cats_svc_cat *c, const struct cats_flow *f,
    const char *tenant, struct cats_svc_match *m)
{
	memset(m, 0, sizeof(*m));
	const struct abucket *b = cats_htab_get(&c->byaddr, hash_ip(&f->dst),
	    eq_addr, &f->dst);
	if (b == NULL)
		return;
	int best = -1;
	for (size_t k = 0; k < b->n; k++) {
		const struct cats_svc *s = b->v[k];
		int score = -1;
		for (size_t i = 0; i < s->naddrs; i++) {
			const struct cats_svc_addr *a = &s->addrs[i];
			if (!cats_ip_eq(&a->ip, &f->dst))
				continue;
			if (a->has_port && (!CATS_HAS(f, FLOW, dport) ||
			    f->dport != a->port))
				continue;
			if (a->has_proto && f->proto != a->proto)
				continue;
			const char *t = a->tenant ? a->tenant : s->tenant;
			if (t != NULL && (tenant == NULL ||
			    strcmp(t, tenant) != 0)) {
				m->tenant_excluded = true;
				continue;
			}
			int sc = a->has_port + a->has_proto + (t != NULL);
			if (sc > score)
				score = sc;
		}
		if (score < 0)
			continue;
		if (score > best) {
			best = score;
			m->n = 0;
		}
		if (score == best && m->n < CATS_SVC_MATCH_MAX)
			m->v[m->n++] = s;
	}
}

static bool
in_sorted(char *const *v, size_t n, const char *key)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(key, v[mid]);
		if (c == 0)
			return true;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return false;
}

bool
cats_svc_authorized(const struct cats_svc *s, const char *csci_id,
    const char *site)
{
	if (s->nauth == 0 && s->nsites == 0)
		return false;
	if (s->nauth > 0 && !in_sorted(s->authorized, s->nauth, csci_id))
		return false;
	if (s->nsites > 0 && (site == NULL ||
	    !in_sorted(s->sites, s->nsites, site)))
		return false;
	return true;
}

size_t
cats_svc_count(const struct cats_svc_cat *c)
{
	return c->n;
}

uint64_t
cats_svc_gen(const struct cats_svc_cat *c)
{
	return c->gen;
}

uint64_t
cats_svc_max_stale(const struct cats_svc_cat *c)
{
	uint64_t m = 0;
	for (size_t i = 0; i < c->bycs.cap; i++) {
		if (c->bycs.s[i].h == 0)
			continue;
		const struct cats_svc *s = c->bycs.s[i].item;
		if (s->max_stale_ms > m)
			m = s->max_stale_ms;
	}
	return m;
}
