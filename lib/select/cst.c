/*
 * cst.c - the Computing Service Table: entries by (CS-ID, CSCI-ID), lists by
 * CS-ID and by C-SMA, per-C-SMA ordering and multi-part snapshots.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "select/cst.h"
#include "base/cats.h"
#include "base/htab.h"
#include "base/log.h"

struct plist {
	struct cats_cst_entry **v;
	size_t n, cap;
};

/* The CS-ID follows the header, so that a lookup's compare reads the
 * bucket's own line. */
struct bucket {
	struct plist l;
	uint64_t gen;		/* changes with any entry of the CS-ID */
	char cs_id[];
};

/* The entries of one CSCI-ID under every CS-ID and in every spelling of
 * case and surrounding white space, by its folded form. */
struct inst {
	struct plist l;
	char key[];
};

/* What a C-SMA may advertise; a list not limited: anything. */
struct scope {
	struct cats_prefix *pfx;
	size_t npfx;
	bool locators_limited;
	char **egress;
	size_t negress;
	bool egresses_limited;
};

struct sma {
	char *id;
	struct cats_cst_peer pos;
	struct plist l;
	bool snap_active;
	uint64_t snap_id, snap_parts, snap_next, snap_epoch;
	struct scope scope;
};

struct cats_cst {
	struct cats_htab byk;		/* entries by (cs_id, csci_id) */
	struct cats_htab bycs;		/* struct bucket by cs_id */
	struct cats_htab bysma;		/* struct sma by sma_id */
	struct cats_htab byinst;	/* struct inst by folded CSCI-ID */
	size_t n;
	size_t max;
	uint64_t default_ttl;
	uint64_t gen;
	uint64_t snap_ctr;
	uint64_t bucket_ctr;
	cats_cst_hook_fn hook;
	void *hook_arg;
};

void
cats_cst_set_hook(struct cats_cst *t, cats_cst_hook_fn fn, void *arg)
{
	t->hook = fn;
	t->hook_arg = arg;
}

struct ekey {
	const char *cs, *csci;
};

static bool
eq_entry(const void *item, const void *key)
{
	const struct cats_cst_entry *e = item;
	const struct ekey *k = key;
	return strcmp(e->cs_id, k->cs) == 0 && strcmp(e->csci_id, k->csci) == 0;
}

static bool
eq_bucket(const void *item, const void *key)
{
	return strcmp(((const struct bucket *)item)->cs_id, key) == 0;
}

static bool
eq_sma(const void *item, const void *key)
{
	return strcmp(((const struct sma *)item)->id, key) == 0;
}

static bool
eq_inst(const void *item, const void *key)
{
	return strcmp(((const struct inst *)item)->key, key) == 0;
}

/*
 * The instance key of a CSCI-ID: ASCII lower case, without surrounding
 * white space, so that "Web-1 " cannot pass for another instance than
 * "web-1".  buf has CATS_ID + 1 bytes (the records' limit).
 */
static const char *
inst_key(const char *csci_id, char *buf)
{
	while (isspace((unsigned char)*csci_id))
		csci_id++;
	size_t n = 0;
	for (; csci_id[n] != '\0' && n < CATS_ID; n++)
		buf[n] = (char)tolower((unsigned char)csci_id[n]);
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		n--;
	buf[n] = '\0';
	return buf;
}

static int
plist_add(struct plist *l, struct cats_cst_entry *e, size_t *pos)
{
	if (cats_grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v), 4) < 0)
		return -1;
	*pos = l->n;
	l->v[l->n++] = e;
	return 0;
}

/* Remove by position, keeping the order (candidate order is input order). */
static void
plist_del_cs(struct plist *l, size_t pos)
{
	memmove(&l->v[pos], &l->v[pos + 1], (l->n - pos - 1) * sizeof(*l->v));
	l->n--;
	for (size_t i = pos; i < l->n; i++)
		l->v[i]->cs_pos = i;
}

static void
plist_del_sma(struct plist *l, size_t pos)
{
	l->v[pos] = l->v[--l->n];
	if (pos < l->n)
		l->v[pos]->sma_pos = pos;
}

static void
plist_del_inst(struct plist *l, size_t pos)
{
	l->v[pos] = l->v[--l->n];
	if (pos < l->n)
		l->v[pos]->inst_pos = pos;
}

struct cats_cst *
cats_cst_new(uint64_t default_ttl_ms, size_t max_entries)
{
	struct cats_cst *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return NULL;
	t->default_ttl = default_ttl_ms;
	t->max = max_entries ? max_entries : 1000000;
	return t;
}

static void
free_ext(struct cats_cst_entry *e)
{
	for (size_t i = 0; i < e->next; i++)
		free((char *)e->ext[i].k);
	free(e->ext);
	e->ext = NULL;
	e->next = 0;
	for (size_t i = 0; i < e->nflags; i++)
		free(e->flags[i]);
	free(e->flags);
	e->flags = NULL;
	e->nflags = 0;
}

static void
free_entry(struct cats_cst_entry *e)
{
	free_ext(e);
	free(e->cs_id);
	free(e->sma_id);
	free(e->site);
	free(e);
}

static void
scope_clear(struct scope *sc)
{
	free(sc->pfx);
	for (size_t i = 0; i < sc->negress; i++)
		free(sc->egress[i]);
	free(sc->egress);
	memset(sc, 0, sizeof(*sc));
}

void
cats_cst_free(struct cats_cst *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->byk.cap; i++)
		if (t->byk.s[i].h)
			free_entry(t->byk.s[i].item);
	for (size_t i = 0; i < t->bycs.cap; i++) {
		if (t->bycs.s[i].h) {
			struct bucket *b = t->bycs.s[i].item;
			free(b->l.v);
			free(b);
		}
	}
	for (size_t i = 0; i < t->bysma.cap; i++) {
		if (t->bysma.s[i].h) {
			struct sma *s = t->bysma.s[i].item;
			scope_clear(&s->scope);
			free(s->id);
			free(s->l.v);
			free(s);
		}
	}
	for (size_t i = 0; i < t->byinst.cap; i++) {
		if (t->byinst.s[i].h) {
			struct inst *in = t->byinst.s[i].item;
			free(in->l.v);
			free(in);
		}
	}
	cats_htab_free(&t->byk);
	cats_htab_free(&t->bycs);
	cats_htab_free(&t->bysma);
	cats_htab_free(&t->byinst);
	free(t);
}

static struct bucket *
get_bucket(struct cats_cst *t, const char *cs_id, bool create)
{
	return cats_htab_str_item(&t->bycs, cs_id, eq_bucket,
	    sizeof(struct bucket), offsetof(struct bucket, cs_id), create, NULL);
}

static struct sma *
get_sma(struct cats_cst *t, const char *id, bool create)
{
	uint64_t h = cats_hash_str(id);
	struct sma *s = cats_htab_get(&t->bysma, h, eq_sma, id);
	if (s != NULL || !create)
		return s;
	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->id = strdup(id)) == NULL ||
	    cats_htab_put(&t->bysma, h, s) < 0) {
		if (s)
			free(s->id);
		free(s);
		return NULL;
	}
	return s;
}

static struct inst *
get_inst(struct cats_cst *t, const char *csci_id, bool create)
{
	char kb[CATS_ID + 1];
	const char *key = inst_key(csci_id, kb);
	return cats_htab_str_item(&t->byinst, key, eq_inst,
	    sizeof(struct inst), offsetof(struct inst, key), create, NULL);
}

static void
remove_entry(struct cats_cst *t, struct cats_cst_entry *e)
{
	if (t->hook != NULL)
		t->hook(t->hook_arg, CATS_CST_REMOVE, e);
	struct ekey k = { e->cs_id, e->csci_id };
	cats_htab_del(&t->byk, cats_hash_pair(e->cs_id, e->csci_id), eq_entry,
	    &k);
	struct bucket *b = get_bucket(t, e->cs_id, false);
	if (b != NULL) {
		b->gen = ++t->bucket_ctr;
		plist_del_cs(&b->l, e->cs_pos);
		if (b->l.n == 0) {
			cats_htab_del(&t->bycs, cats_hash_str(b->cs_id),
			    eq_bucket, b->cs_id);
			free(b->l.v);
			free(b);
		}
	}
	struct sma *s = get_sma(t, e->sma_id, false);
	if (s != NULL) {
		plist_del_sma(&s->l, e->sma_pos);
		s->pos.entries = s->l.n;
	}
	struct inst *in = get_inst(t, e->csci_id, false);
	if (in != NULL) {
		plist_del_inst(&in->l, e->inst_pos);
		if (in->l.n == 0) {
			cats_htab_del(&t->byinst, cats_hash_str(in->key),
			    eq_inst, in->key);
			free(in->l.v);
			free(in);
		}
	}
	t->n--;
	free_entry(e);
}

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static int
set_str(char **dst, const char *src)
{
	if (src == NULL) {
		free(*dst);
		*dst = NULL;
		return 0;
	}
	if (*dst != NULL && strcmp(*dst, src) == 0)
		return 0;
	char *c = strdup(src);
	if (c == NULL)
		return -1;
	free(*dst);
	*dst = c;
	return 0;
}

static int
copy_ext(struct cats_cst_entry *e, const struct cats_entry *in)
{
	if (in->ext.n > 0) {
		struct cats_kv *v = calloc(in->ext.n, sizeof(*v));
		if (v == NULL)
			return -1;
		for (size_t i = 0; i < e->next; i++)
			free((char *)e->ext[i].k);
		free(e->ext);
		e->ext = v;
		e->next = 0;
		for (size_t i = 0; i < in->ext.n; i++) {
			if ((v[i].k = strdup(in->ext.v[i].k)) == NULL)
				return -1;
			v[i].v = in->ext.v[i].v;
			e->next++;
		}
	}
	if (in->flags.n > 0) {
		char **f = calloc(in->flags.n, sizeof(*f));
		if (f == NULL)
			return -1;
		for (size_t i = 0; i < e->nflags; i++)
			free(e->flags[i]);
		free(e->flags);
		e->flags = f;
		e->nflags = 0;
		for (size_t i = 0; i < in->flags.n; i++) {
			if ((f[i] = strdup(in->flags.v[i])) == NULL)
				return -1;
			e->nflags++;
		}
	}
	return 0;
}

/* The metric presence bits the table keeps. */
#define KEPT_BITS ((UINT64_C(1) << CATS_ENT_health) | \
	(UINT64_C(1) << CATS_ENT_state) | (UINT64_C(1) << CATS_ENT_gas) | \
	(UINT64_C(1) << CATS_ENT_comp_time_ms) | \
	(UINT64_C(1) << CATS_ENT_price) | \
	(UINT64_C(1) << CATS_ENT_reputation) | \
	(UINT64_C(1) << CATS_ENT_security_level) | \
	(UINT64_C(1) << CATS_ENT_port) | (UINT64_C(1) << CATS_ENT_gen) | \
	(UINT64_C(1) << CATS_ENT_ts))

/* Write in's fields into e: all of them (replace) or the present ones. */
static int
write_fields(struct cats_cst_entry *e, const struct cats_entry *in,
    bool replace)
{
	if (replace) {
		e->has = 0;
		e->health = e->state = 0;
		e->gas = e->comp_time_ms = e->price = e->reputation = 0;
		e->security_level = e->port = e->sci_gen = e->sci_ts = 0;
		memset(&e->locator, 0, sizeof(e->locator));
		free_ext(e);
	}
#define W(name, dst) \
	if (CATS_HAS(in, ENT, name)) { e->dst = in->name; \
	    e->has |= UINT64_C(1) << CATS_ENT_##name; }
	W(health, health)
	W(state, state)
	W(gas, gas)
	W(comp_time_ms, comp_time_ms)
	W(price, price)
	W(reputation, reputation)
	W(security_level, security_level)
	W(port, port)
	W(gen, sci_gen)
	W(ts, sci_ts)
#undef W
	e->has &= KEPT_BITS;
	if (in->locator.af != 0)
		e->locator = in->locator;
	return copy_ext(e, in);
}

struct ctx {
	struct cats_cst *t;
	const struct cats_metric *m;
	struct sma *s;
	uint64_t now;
	uint64_t base;
	struct cats_cst_result *res;
	bool changed;
	size_t full;
};

static uint64_t
entry_ttl(const struct ctx *c, const struct cats_entry *in)
{
	if (CATS_HAS(c->m, MET, ttl_ms))
		return c->m->ttl_ms;
	if (in != NULL && CATS_HAS(in, ENT, ttl_ms))
		return in->ttl_ms;
	return c->t->default_ttl;
}

static void
move_to_sma(struct cats_cst *t, struct cats_cst_entry *e, struct sma *to)
{
	struct sma *from = get_sma(t, e->sma_id, false);
	if (from != NULL) {
		plist_del_sma(&from->l, e->sma_pos);
		from->pos.entries = from->l.n;
	}
	/* The caller checked the allocation of a slot in to->l. */
	plist_add(&to->l, e, &e->sma_pos);
	to->pos.entries = to->l.n;
}

static int
reserve(struct plist *l)
{
	return cats_grow((void **)&l->v, &l->cap, l->n, sizeof(*l->v), 4);
}

/* Insert or update one entry; replace: a snapshot entry (all fields). */
static int
upsert(struct ctx *c, const struct cats_entry *in, bool replace, uint64_t snap)
{
	struct cats_cst *t = c->t;
	const struct cats_metric *m = c->m;
	struct ekey k = { in->cs_id, in->csci_id };
	uint64_t h = cats_hash_pair(in->cs_id, in->csci_id);
	struct cats_cst_entry *e = cats_htab_get(&t->byk, h, eq_entry, &k);
	if (reserve(&c->s->l) < 0)
		return -1;
	if (e == NULL) {
		if (t->n >= t->max) {
			c->full++;
			return 0;
		}
		struct bucket *b = get_bucket(t, in->cs_id, true);
		if (b == NULL || reserve(&b->l) < 0)
			return -1;
		struct inst *ins = get_inst(t, in->csci_id, true);
		if (ins == NULL || reserve(&ins->l) < 0)
			return -1;
		/* The CSCI-ID, the key, never changes: it follows the
		 * entry, near egress_buf, which a decision reads too. */
		size_t ln = strlen(in->csci_id) + 1;
		if ((e = calloc(1, sizeof(*e) + ln)) == NULL)
			return -1;
		e->csci_id = memcpy((char *)(e + 1), in->csci_id, ln);
		if ((e->cs_id = strdup(in->cs_id)) == NULL ||
		    (e->sma_id = strdup(c->s->id)) == NULL ||
		    cats_htab_put(&t->byk, h, e) < 0) {
			free_entry(e);
			return -1;
		}
		plist_add(&b->l, e, &e->cs_pos);
		plist_add(&c->s->l, e, &e->sma_pos);
		plist_add(&ins->l, e, &e->inst_pos);
		c->s->pos.entries = c->s->l.n;
		t->n++;
		replace = true;
	} else if (strcmp(e->sma_id, c->s->id) != 0) {
		/* The owner's entry has expired (check_record refused any
		 * other case): the reporting C-SMA takes it over. */
		char *id = strdup(c->s->id);
		if (id == NULL)
			return -1;
		cats_strlcpy(c->res->owner, e->sma_id, sizeof(c->res->owner));
		move_to_sma(t, e, c->s);
		free(e->sma_id);
		e->sma_id = id;
		c->res->taken_over++;
		replace = true;
	}
	if (write_fields(e, in, replace) < 0)
		return -1;
	const char *site = in->site ? in->site : m->site;
	const char *egress = in->egress ? in->egress : m->egress;
	if (replace || site != NULL)
		if (set_str(&e->site, site) < 0)
			return -1;
	if (replace || egress != NULL) {
		/* Inline: the selector reads it for every candidate. */
		e->egress = egress ? e->egress_buf : NULL;
		cats_strlcpy(e->egress_buf, egress ? egress : "",
		    sizeof(e->egress_buf));
		e->egress_h = egress ? cats_hash_str(e->egress_buf) : 0;
	}
	e->epoch = m->epoch;
	e->base = c->base;
	e->ttl_ms = entry_ttl(c, in);
	e->expires = sat_add(e->base, e->ttl_ms);
	e->snap = snap;
	e->memo = 0;
	e->gen = t->gen + 1;
	struct bucket *b = get_bucket(t, e->cs_id, false);
	if (b != NULL)
		b->gen = ++t->bucket_ctr;
	c->changed = true;
	c->res->applied++;
	if (t->hook != NULL)
		t->hook(t->hook_arg, CATS_CST_UPSERT, e);
	return 0;
}

static void
refresh(struct ctx *c, struct cats_cst_entry *e)
{
	if (!cats_cst_fresh(e, c->now)) {
		c->res->refused++;
		c->res->resync = true;
		return;
	}
	e->base = c->base;
	if (CATS_HAS(c->m, MET, ttl_ms))
		e->ttl_ms = c->m->ttl_ms;
	e->expires = sat_add(e->base, e->ttl_ms);
	c->res->applied++;
	if (c->t->hook != NULL)
		c->t->hook(c->t->hook_arg, CATS_CST_REFRESH, e);
}

static struct cats_cst_entry *
find_entry(const struct cats_cst *t, const char *cs_id, const char *csci_id)
{
	struct ekey k = { cs_id, csci_id };
	return cats_htab_get(&t->byk, cats_hash_pair(cs_id, csci_id),
	    eq_entry, &k);
}

/* An entry of the service's instance (its CSCI-ID folded), fresh at now,
 * that a C-SMA other than sma_id owns; NULL if there is none. */
static const struct cats_cst_entry *
fresh_other(struct cats_cst *t, const char *cs_id, const char *csci_id,
    const char *sma_id, uint64_t now)
{
	const struct inst *in = get_inst(t, csci_id, false);
	for (size_t i = 0; in != NULL && i < in->l.n; i++) {
		const struct cats_cst_entry *e = in->l.v[i];
		if (cats_cst_fresh(e, now) && strcmp(e->sma_id, sma_id) != 0 &&
		    strcmp(e->cs_id, cs_id) == 0)
			return e;
	}
	return NULL;
}

static bool
scope_locator(const struct scope *sc, const struct cats_ip *ip)
{
	if (!sc->locators_limited || ip->af == 0)
		return true;
	for (size_t i = 0; i < sc->npfx; i++)
		if (cats_prefix_has(&sc->pfx[i], ip))
			return true;
	return false;
}

static bool
scope_egress(const struct scope *sc, const char *egress)
{
	if (!sc->egresses_limited || egress == NULL)
		return true;
	for (size_t i = 0; i < sc->negress; i++)
		if (strcmp(sc->egress[i], egress) == 0)
			return true;
	return false;
}

/*
 * Before anything of the record is applied: does it name another C-SMA's
 * instance, or a locator or egress outside the sender's scope?  Either
 * refuses the whole record (the caller returns BAD without a change).
 */
static bool
record_refused(struct cats_cst *t, const struct sma *s,
    const struct cats_metric *m, uint64_t now, struct cats_cst_result *res)
{
	char a[48], q1[65], q2[65], q3[65];
	bool names_only = m->op == CATS_OP_WITHDRAW || m->op == CATS_OP_REFRESH ||
	    (m->op == CATS_OP_HEARTBEAT && m->entries.n == 0);
	for (size_t i = 0; i < m->entries.n; i++) {
		const struct cats_entry *in = &m->entries.v[i];
		const struct cats_cst_entry *o;
		if (names_only) {
			o = find_entry(t, in->cs_id, in->csci_id);
			if (o == NULL || strcmp(o->sma_id, s->id) == 0)
				continue;
		} else if ((o = fresh_other(t, in->cs_id, in->csci_id, s->id,
		    now)) ==
		    NULL) {
			const char *eg = in->egress ? in->egress : m->egress;
			if (!scope_locator(&s->scope, &in->locator)) {
				snprintf(res->reason, sizeof(res->reason),
				    "entry %zu (%s): locator %s is outside "
				    "the site of %s", i, cats_safe(in->csci_id,
				    q1, sizeof(q1)), cats_ip_fmt(&in->locator,
				    a, sizeof(a)), cats_safe(s->id, q2,
				    sizeof(q2)));
				res->forbidden = true;
				return true;
			}
			if (!scope_egress(&s->scope, eg)) {
				snprintf(res->reason, sizeof(res->reason),
				    "entry %zu (%s): egress %s is not one of "
				    "%s", i, cats_safe(in->csci_id, q1,
				    sizeof(q1)), cats_safe(eg, q2, sizeof(q2)),
				    cats_safe(s->id, q3, sizeof(q3)));
				res->forbidden = true;
				return true;
			}
			continue;
		}
		cats_strlcpy(res->owner, o->sma_id, sizeof(res->owner));
		snprintf(res->reason, sizeof(res->reason), "entry %zu: instance "
		    "%s (CS-ID %s) is owned by C-SMA %s", i,
		    cats_safe(in->csci_id, q1, sizeof(q1)), cats_safe(o->cs_id,
		    q2, sizeof(q2)), cats_safe(o->sma_id, q3, sizeof(q3)));
		res->conflict = true;
		return true;
	}
	return false;
}

/* One item of a list separated by commas or white space, or NULL at its
 * end; *p moves past it. */
static const char *
list_next(const char **p, size_t *n)
{
	const char *s = *p;
	while (*s == ',' || isspace((unsigned char)*s))
		s++;
	if (*s == '\0')
		return NULL;
	const char *b = s;
	while (*s != '\0' && *s != ',' && !isspace((unsigned char)*s))
		s++;
	*n = (size_t)(s - b);
	*p = s;
	return b;
}

#define SCOPE_MAX 256

int
cats_cst_scope(struct cats_cst *t, const char *sma_id, const char *locators,
    const char *egresses, char *err, size_t errlen)
{
	struct scope sc = { .locators_limited = locators != NULL,
	    .egresses_limited = egresses != NULL };
	bool any_locator = false, any_egress = false;
	const char *p = locators, *it;
	size_t n;
	while (p != NULL && (it = list_next(&p, &n)) != NULL) {
		if (n == 1 && it[0] == '*') {
			any_locator = true;
			continue;
		}
		if (sc.npfx == SCOPE_MAX) {
			snprintf(err, errlen, "locators: more than %d",
			    SCOPE_MAX);
			goto fail;
		}
		if (sc.pfx == NULL &&
		    (sc.pfx = calloc(SCOPE_MAX, sizeof(*sc.pfx))) == NULL)
			goto oom;
		char why[160];
		if (cats_prefix_parse(it, n, true, &sc.pfx[sc.npfx], why,
		    sizeof(why)) < 0) {
			snprintf(err, errlen, "locators: %s", why);
			goto fail;
		}
		sc.npfx++;
	}
	p = egresses;
	while (p != NULL && (it = list_next(&p, &n)) != NULL) {
		if (n == 1 && it[0] == '*') {
			any_egress = true;
			continue;
		}
		if (sc.negress == SCOPE_MAX || n > CATS_ID) {
			snprintf(err, errlen, "egresses: %s", n > CATS_ID ?
			    "a name longer than 128 bytes" : "more than 256");
			goto fail;
		}
		if (sc.egress == NULL &&
		    (sc.egress = calloc(SCOPE_MAX, sizeof(*sc.egress))) == NULL)
			goto oom;
		if ((sc.egress[sc.negress] = strndup(it, n)) == NULL)
			goto oom;
		sc.negress++;
	}
	if (any_locator)
		sc.locators_limited = false;
	if (any_egress)
		sc.egresses_limited = false;
	struct sma *s = get_sma(t, sma_id, true);
	if (s == NULL)
		goto oom;
	scope_clear(&s->scope);
	s->scope = sc;
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
fail:
	scope_clear(&sc);
	return -1;
}

int
cats_cst_release(struct cats_cst *t, const struct cats_metric *m,
    struct cats_cst_result *res)
{
	memset(res, 0, sizeof(*res));
	res->result = CATS_ACK_OK;
	for (size_t i = 0; i < m->entries.n; i++) {
		struct cats_cst_entry *e = find_entry(t, m->entries.v[i].cs_id,
		    m->entries.v[i].csci_id);
		if (e == NULL) {
			res->refused++;
			continue;
		}
		cats_strlcpy(res->owner, e->sma_id, sizeof(res->owner));
		remove_entry(t, e);
		res->removed++;
	}
	if (res->removed > 0)
		t->gen++;
	if (res->refused > 0)
		snprintf(res->reason, sizeof(res->reason), "%zu entries not in "
		    "the table", res->refused);
	return res->result;
}

static int
oom(struct cats_cst_result *res)
{
	snprintf(res->reason, sizeof(res->reason), "out of memory");
	return res->result = CATS_ACK_BAD;
}

int
cats_cst_apply(struct cats_cst *t, const struct cats_metric *m, uint64_t now,
    struct cats_cst_result *res)
{
	memset(res, 0, sizeof(*res));
	res->result = CATS_ACK_OK;
	struct sma *s = get_sma(t, m->sma_id, false);
	bool known = s != NULL;
	if (known && m->epoch < s->pos.epoch) {
		snprintf(res->reason, sizeof(res->reason), "epoch %" PRIu64
		    " is older than %" PRIu64, m->epoch, s->pos.epoch);
		res->epoch = s->pos.epoch;
		res->seq = s->pos.seq;
		return res->result = CATS_ACK_STALE;
	}
	if (known && m->epoch == s->pos.epoch && s->pos.has_seq &&
	    m->seq <= s->pos.seq) {
		snprintf(res->reason, sizeof(res->reason), "sequence %" PRIu64
		    " is not above %" PRIu64, m->seq, s->pos.seq);
		res->epoch = s->pos.epoch;
		res->seq = s->pos.seq;
		return res->result = CATS_ACK_STALE;
	}
	if (m->op == CATS_OP_RELEASE) {
		snprintf(res->reason, sizeof(res->reason), "op release is the "
		    "operator's, on cats-select's control stream");
		return res->result = CATS_ACK_BAD;
	}
	if (!known && (s = get_sma(t, m->sma_id, true)) == NULL)
		return oom(res);
	if (record_refused(t, s, m, now, res)) {
		res->epoch = s->pos.epoch;
		res->seq = s->pos.seq;
		return res->result = CATS_ACK_BAD;
	}
	bool new_epoch = !known || m->epoch != s->pos.epoch || !s->pos.has_seq;
	bool gap = !new_epoch && m->seq != s->pos.seq + 1;
	uint64_t prev_seq = s->pos.seq;

	struct ctx c = { .t = t, .m = m, .s = s, .now = now,
	    .base = m->ts < now ? m->ts : now, .res = res };
	bool snapshot = m->op == CATS_OP_FULL ||
	    (m->op == CATS_OP_HEARTBEAT && m->entries.n > 0);
	int rc = 0;

	if (snapshot) {
		uint64_t part = CATS_HAS(m, MET, part) ? m->part : 1;
		uint64_t parts = CATS_HAS(m, MET, parts) ? m->parts : 1;
		if (part == 1) {
			s->snap_active = true;
			s->snap_id = ++t->snap_ctr;
			s->snap_parts = parts;
			s->snap_next = 2;
			s->snap_epoch = m->epoch;
		} else if (s->snap_active && s->snap_parts == parts &&
		    s->snap_next == part && s->snap_epoch == m->epoch &&
		    !new_epoch && m->seq == prev_seq + 1) {
			s->snap_next++;
		} else {
			s->snap_active = false;
			res->resync = true;
		}
		uint64_t snap = s->snap_active ? s->snap_id : 0;
		for (size_t i = 0; i < m->entries.n && rc == 0; i++)
			rc = upsert(&c, &m->entries.v[i], true, snap);
		if (rc == 0 && s->snap_active && part == parts) {
			/* The snapshot is whole: drop what it did not name. */
			for (size_t i = 0; i < s->l.n;) {
				struct cats_cst_entry *e = s->l.v[i];
				if (e->snap != s->snap_id) {
					remove_entry(t, e);
					res->removed++;
					c.changed = true;
				} else {
					i++;
				}
			}
			s->snap_active = false;
		}
	} else {
		if (new_epoch || gap)
			res->resync = true;
		switch (m->op) {
		case CATS_OP_DELTA:
			for (size_t i = 0; i < m->entries.n && rc == 0; i++)
				rc = upsert(&c, &m->entries.v[i], false, 0);
			break;
		case CATS_OP_WITHDRAW:
			for (size_t i = 0; i < m->entries.n; i++) {
				const struct cats_entry *in = &m->entries.v[i];
				struct ekey k = { in->cs_id, in->csci_id };
				struct cats_cst_entry *e = cats_htab_get(
				    &t->byk, cats_hash_pair(in->cs_id,
				    in->csci_id), eq_entry, &k);
				if (e == NULL)
					continue;
				remove_entry(t, e);
				res->removed++;
				c.changed = true;
			}
			break;
		default:	/* refresh, heartbeat without entries */
			if (m->entries.n > 0) {
				for (size_t i = 0; i < m->entries.n; i++) {
					const struct cats_entry *in =
					    &m->entries.v[i];
					struct ekey k = { in->cs_id,
					    in->csci_id };
					struct cats_cst_entry *e =
					    cats_htab_get(&t->byk,
					    cats_hash_pair(in->cs_id,
					    in->csci_id),
					    eq_entry, &k);
					if (e == NULL) {
						res->refused++;
						res->resync = true;
						continue;
					}
					refresh(&c, e);
				}
			} else {
				for (size_t i = 0; i < s->l.n; i++)
					refresh(&c, s->l.v[i]);
			}
			break;
		}
	}
	/* The position moves even if entries were refused: it was seen. */
	s->pos.epoch = m->epoch;
	s->pos.seq = m->seq;
	s->pos.has_seq = true;
	s->pos.last_ts = m->ts;
	if (c.changed)
		t->gen++;
	res->epoch = s->pos.epoch;
	res->seq = s->pos.seq;
	if (rc < 0)
		return oom(res);
	if (c.full > 0) {
		res->refused += c.full;
		snprintf(res->reason, sizeof(res->reason),
		    "%zu entries refused: the table is full (%zu)", c.full,
		    t->max);
		return res->result = CATS_ACK_BAD;
	}
	if (res->resync)
		snprintf(res->reason, sizeof(res->reason), "%s",
		    new_epoch && !snapshot ? "new epoch without a full snapshot"
		    : gap ? "sequence gap" : res->refused ?
		    "refresh of expired or unknown entries" :
		    "broken multi-part snapshot");
	return res->result;
}

/* now and grace of a purge, for the selection of dead entries */
struct purge {
	uint64_t now, grace;
};

static bool
entry_dead(const void *item, void *arg)
{
	const struct purge *p = arg;
	return sat_add(((const struct cats_cst_entry *)item)->expires,
	    p->grace) <= p->now;
}

size_t
cats_cst_expire(struct cats_cst *t, uint64_t now, uint64_t grace_ms)
{
	struct purge p = { now, grace_ms };
	size_t n;
	void **dead = cats_htab_select(&t->byk, entry_dead, &p, &n);
	for (size_t i = 0; i < n; i++)
		remove_entry(t, dead[i]);
	free(dead);
	if (n > 0)
		t->gen++;
	return n;
}

size_t
cats_cst_candidates(const struct cats_cst *t, const char *cs_id,
    uint64_t cs_h, struct cats_cst_entry *const **v, uint64_t *gen)
{
	const struct bucket *b = cats_htab_get(&t->bycs, cs_h, eq_bucket,
	    cs_id);
	if (b == NULL) {
		*v = NULL;
		*gen = 0;
		return 0;
	}
	*v = b->l.v;
	*gen = b->gen;
	return b->l.n;
}

size_t
cats_cst_lookup(const struct cats_cst *t, const char *cs_id,
    struct cats_cst_entry *const **v)
{
	uint64_t gen;
	return cats_cst_candidates(t, cs_id, cats_hash_str(cs_id), v, &gen);
}

const struct cats_cst_entry *
cats_cst_get(const struct cats_cst *t, const char *cs_id, const char *csci_id)
{
	struct ekey k = { cs_id, csci_id };
	return cats_htab_get(&t->byk, cats_hash_pair(cs_id, csci_id), eq_entry,
	    &k);
}

bool
cats_cst_peer(const struct cats_cst *t, const char *sma_id,
    struct cats_cst_peer *p)
{
	const struct sma *s = cats_htab_get(&t->bysma, cats_hash_str(sma_id),
	    eq_sma, sma_id);
	if (s == NULL || (!s->pos.has_seq && s->l.n == 0))
		return false;
	*p = s->pos;
	return true;
}

uint64_t
cats_cst_gen(const struct cats_cst *t)
{
	return t->gen;
}

size_t
cats_cst_count(const struct cats_cst *t)
{
	return t->n;
}

static int
cmp_opt(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

static int
cmp_dump(const void *pa, const void *pb)
{
	const struct cats_cst_entry *a = *(struct cats_cst_entry *const *)pa;
	const struct cats_cst_entry *b = *(struct cats_cst_entry *const *)pb;
	int r;
	if ((r = strcmp(a->sma_id, b->sma_id)) != 0 ||
	    (r = cmp_opt(a->site, b->site)) != 0 ||
	    (r = cmp_opt(a->egress, b->egress)) != 0 ||
	    (r = strcmp(a->cs_id, b->cs_id)) != 0)
		return r;
	return strcmp(a->csci_id, b->csci_id);
}

static bool
same_group(const struct cats_cst_entry *a, const struct cats_cst_entry *b)
{
	return strcmp(a->sma_id, b->sma_id) == 0 &&
	    cmp_opt(a->site, b->site) == 0 &&
	    cmp_opt(a->egress, b->egress) == 0;
}

static void
fill_entry(struct cats_entry *o, const struct cats_cst_entry *e, uint64_t now)
{
	memset(o, 0, sizeof(*o));
	o->cs_id = e->cs_id;
	o->csci_id = e->csci_id;
	o->has = e->has;
	o->health = e->health;
	o->state = e->state;
	o->gas = e->gas;
	o->comp_time_ms = e->comp_time_ms;
	o->price = e->price;
	o->reputation = e->reputation;
	o->security_level = e->security_level;
	o->port = e->port;
	o->gen = e->sci_gen;
	o->ts = e->sci_ts;
	o->locator = e->locator;
	o->ext.v = e->ext;
	o->ext.n = e->next;
	o->flags.v = (const char **)e->flags;
	o->flags.n = e->nflags;
	bool fresh = cats_cst_fresh(e, now);
	CATS_SET_IF(!fresh, o, ENT, state, CATS_SCI_STALE);
	CATS_SET(o, ENT, ttl_ms, fresh ? e->expires - now : 0);
	/* The decoder caps the lifetime at 2^32-1 ms. */
	if (o->ttl_ms > CATS_U32)
		o->ttl_ms = CATS_U32;
}

#define DUMP_PART 1024

int
cats_cst_dump(const struct cats_cst *t, uint64_t now,
    int (*fn)(const struct cats_rec *r, void *arg), void *arg)
{
	struct cats_cst_entry **all = NULL;
	struct cats_entry *ents = NULL;
	size_t n = 0;
	int rc = 0;
	if (t->n > 0) {
		all = malloc(t->n * sizeof(*all));
		ents = malloc(DUMP_PART * sizeof(*ents));
		if (all == NULL || ents == NULL) {
			free(all);
			free(ents);
			return -1;
		}
	}
	for (size_t i = 0; i < t->byk.cap; i++)
		if (t->byk.s[i].h)
			all[n++] = t->byk.s[i].item;
	if (n > 1)
		qsort(all, n, sizeof(*all), cmp_dump);
	for (size_t g = 0; g < n && rc == 0;) {
		size_t end = g + 1;
		while (end < n && same_group(all[g], all[end]))
			end++;
		const struct cats_cst_entry *first = all[g];
		const struct sma *s = cats_htab_get(&t->bysma,
		    cats_hash_str(first->sma_id), eq_sma, first->sma_id);
		uint64_t parts = (end - g + DUMP_PART - 1) / DUMP_PART;
		for (uint64_t part = 1; part <= parts && rc == 0; part++) {
			struct cats_rec r;
			cats_rec_init(&r, CATS_T_METRIC);
			struct cats_metric *m = &r.u.metric;
			m->op = CATS_OP_FULL;
			m->sma_id = first->sma_id;
			m->epoch = s ? s->pos.epoch : first->epoch;
			uint64_t seq = s ? s->pos.seq : 0;
			m->seq = seq >= parts - part ? seq - (parts - part) : 0;
			m->ts = now;
			m->site = first->site;
			m->egress = first->egress;
			CATS_SET(m, MET, part, part);
			CATS_SET(m, MET, parts, parts);
			size_t from = g + (part - 1) * DUMP_PART;
			size_t k = 0;
			for (size_t i = from; i < end && k < DUMP_PART; i++)
				fill_entry(&ents[k++], all[i], now);
			m->entries.v = ents;
			m->entries.n = k;
			rc = fn(&r, arg);
		}
		g = end;
	}
	free(all);
	free(ents);
	return rc;
}
