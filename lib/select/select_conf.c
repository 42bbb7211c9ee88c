/*
 * select_conf.c - cats-select's options and configuration file (see
 * select_conf.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "select/cst.h"
#include "net/ep.h"
#include "net/listener.h"
#include "select/select_conf.h"

/* Admission limits when none is given (001 section 9: MUST). */
static const struct cats_rate default_limits[3] = {
	{ 50000, 100000 },	/* global */
	{ 10000, 20000 },	/* per tenant */
	{ 1000, 2000 },		/* per client address */
};

void
cats_sel_opts_init(struct cats_sel_opts *o)
{
	cats_sel_conf_init(&o->sel);
	o->metric_ttl = 180000;
	o->net_ttl = 30000;
	o->purge_ms = 600000;
	o->verbose = 1;
}

void
cats_sel_opts_defaults(struct cats_sel_opts *o)
{
	struct cats_rate *rates[3] = { &o->sel.rate_global,
		&o->sel.rate_tenant, &o->sel.rate_client };
	for (int i = 0; i < 3; i++)
		if (!o->lim_set[i])
			*rates[i] = default_limits[i];
	if (!o->set_ingest_window)
		o->ingest_window = 30000;
	if (!o->set_hello)
		o->hello_ms = CATS_HELLO_MS;
}

static int
parse_limit(const char *s, struct cats_sel_opts *o, bool from_conf, char *err,
    size_t errlen)
{
	struct cats_sel_conf *c = &o->sel;
	const char *eq = strchr(s, '=');
	struct cats_rate *r;
	int scope;
	if (eq == NULL) {
		snprintf(err, errlen, "expected SCOPE=RATE[:BURST]");
		return -1;
	}
	size_t n = (size_t)(eq - s);
	if (n == 6 && strncmp(s, "global", 6) == 0)
		r = &c->rate_global, scope = 0;
	else if (n == 6 && strncmp(s, "tenant", 6) == 0)
		r = &c->rate_tenant, scope = 1;
	else if (n == 6 && strncmp(s, "client", 6) == 0)
		r = &c->rate_client, scope = 2;
	else {
		snprintf(err, errlen, "scope is global, tenant or client");
		return -1;
	}
	/* The command line wins over the file. */
	if (from_conf && o->lim_cli[scope])
		return 0;
	o->lim_set[scope] = true;
	if (!from_conf)
		o->lim_cli[scope] = true;
	if (strcmp(eq + 1, "off") == 0) {
		r->per_s = 0;
		r->burst = 0;
		return 0;
	}
	char buf[64];
	cats_strlcpy(buf, eq + 1, sizeof(buf));
	char *colon = strchr(buf, ':');
	if (colon != NULL)
		*colon++ = '\0';
	if (cats_parse_u64(buf, 1, 1000000000, &r->per_s, err, errlen) < 0)
		return -1;
	r->burst = r->per_s;
	if (colon != NULL &&
	    cats_parse_u64(colon, 1, 1000000000, &r->burst, err, errlen) < 0)
		return -1;
	return 0;
}

/*
 * "ID=LIST" (or ID with LIST, a config section) for one of a C-SMA's lists:
 * what 's' is the CS-IDs it may advertise ("*": any), 'l' its locator
 * prefixes, 'e' its egress nodes.  The C-SMA's slot is found or added.
 */
static int
parse_sma(struct cats_sel_opts *o, int what, const char *v, const char *id,
    char *err, size_t errlen)
{
	const char *list = v;
	size_t n;
	if (id == NULL) {
		const char *eq = strchr(v, '=');
		if (eq == NULL || eq == v || eq[1] == '\0') {
			snprintf(err, errlen, "expected SMA-ID=%s[,...] or "
			    "SMA-ID=*", what == 's' ? "CS-ID" : what == 'l' ?
			    "PREFIX" : "NODE");
			return -1;
		}
		n = (size_t)(eq - v);
		list = eq + 1;
	} else {
		n = strlen(id);
		v = id;
	}
	if (n > CATS_ID) {
		snprintf(err, errlen, "an id longer than %d bytes", CATS_ID);
		return -1;
	}
	struct cats_sel_sma *s = NULL;
	for (size_t i = 0; i < o->nsmas && s == NULL; i++)
		if (strlen(o->smas[i].id) == n &&
		    memcmp(o->smas[i].id, v, n) == 0)
			s = &o->smas[i];
	if (s == NULL) {
		if (o->nsmas == CATS_SEL_MAX_SMA) {
			snprintf(err, errlen, "at most %d C-SMAs",
			    CATS_SEL_MAX_SMA);
			return -1;
		}
		s = &o->smas[o->nsmas++];
		memset(s, 0, sizeof(*s));
		memcpy(s->id, v, n);
		s->id[n] = '\0';
	}
	if (what != 's') {
		/* Checked now, so that the error names its option or line. */
		struct cats_cst *scratch = cats_cst_new(0, 1);
		int rc = scratch == NULL ? -1 : cats_cst_scope(scratch, "-",
		    what == 'l' ? list : NULL, what == 'e' ? list : NULL, err,
		    errlen);
		cats_cst_free(scratch);
		if (rc < 0)
			return -1;
	}
	if (what == 's')
		s->cs = list;
	else if (what == 'l')
		s->locators = list;
	else
		s->egresses = list;
	return 0;
}

int
cats_sel_opts_peercred(struct cats_sel_opts *o, const char *s, char *err,
    size_t errlen)
{
	const char *eq = strrchr(s, '=');
	uint64_t uid;
	if (eq == NULL || eq == s || (size_t)(eq - s) > CATS_ID) {
		snprintf(err, errlen, "expected FORWARDER-ID=UID");
		return -1;
	}
	if (cats_parse_u64(eq + 1, 0, UINT32_MAX - 1, &uid, err, errlen) < 0)
		return -1;
	if (o->npc == CATS_SEL_MAX_PEERCRED) {
		snprintf(err, errlen, "at most %d forwarders",
		    CATS_SEL_MAX_PEERCRED);
		return -1;
	}
	struct cats_sel_peer *p = &o->pc[o->npc++];
	memset(p, 0, sizeof(*p));
	memcpy(p->id, s, (size_t)(eq - s));
	p->uid = (uint32_t)uid;
	return 0;
}

static int
parse_enum_opt(const char *const *names, const char *v, int *out)
{
	int i = cats_enum_index(names, v, strlen(v));
	if (i < 0)
		return -1;
	*out = i;
	return 0;
}

/* A value of the config file or of the command line. */
int
cats_sel_opts_set(struct cats_sel_opts *o, const char *key, const char *v,
    bool from_conf, char *err, size_t errlen)
{
	struct cats_sel_conf *c = &o->sel;
#define ONCE(flag) if (from_conf && o->flag) return 0; o->flag = true;
	if (strcmp(key, "precedence") == 0) {
		ONCE(set_prec)
		if (parse_enum_opt(cats_precedence_names, v,
		    &c->precedence) < 0)
			goto bad_enum;
	} else if (strcmp(key, "policy") == 0) {
		ONCE(set_policy)
		if (parse_enum_opt(cats_policy_names, v, &c->policy) < 0)
			goto bad_enum;
	} else if (strcmp(key, "dataplane") == 0) {
		ONCE(set_dp)
		if (parse_enum_opt(cats_dataplane_names, v, &c->dataplane) < 0)
			goto bad_enum;
	} else if (strcmp(key, "seed") == 0) {
		ONCE(set_seed)
		return cats_parse_u64(v, 0, UINT64_MAX, &c->seed, err, errlen);
	} else if (strcmp(key, "window") == 0) {
		ONCE(set_window)
		return cats_parse_ms(v, &c->window_ms, err, errlen);
	} else if (strcmp(key, "metric-ttl") == 0) {
		ONCE(set_metric_ttl)
		return cats_parse_ms(v, &o->metric_ttl, err, errlen);
	} else if (strcmp(key, "net-ttl") == 0) {
		ONCE(set_net_ttl)
		return cats_parse_ms(v, &o->net_ttl, err, errlen);
	} else if (strcmp(key, "purge-after") == 0) {
		ONCE(set_purge)
		return cats_parse_ms(v, &o->purge_ms, err, errlen);
	} else if (strcmp(key, "stats-interval") == 0) {
		ONCE(set_stats_ms)
		return cats_parse_ms(v, &o->stats_ms, err, errlen);
	} else if (strcmp(key, "insecure") == 0) {
		ONCE(set_insecure)
		return cats_parse_bool(v, &c->insecure, err, errlen);
	} else if (strcmp(key, "limit") == 0) {
		return parse_limit(v, o, from_conf, err, errlen);
	} else if (strcmp(key, "hello-timeout") == 0) {
		ONCE(set_hello)
		return cats_parse_hello_ms(v, &o->hello_ms, err, errlen);
	} else if (strcmp(key, "ingest-window") == 0) {
		ONCE(set_ingest_window)
		return cats_parse_ms(v, &o->ingest_window, err, errlen);
	} else if (strcmp(key, "sma") == 0) {
		return parse_sma(o, 's', v, NULL, err, errlen);
	} else if (strcmp(key, "sma-locators") == 0) {
		return parse_sma(o, 'l', v, NULL, err, errlen);
	} else if (strcmp(key, "sma-egresses") == 0) {
		return parse_sma(o, 'e', v, NULL, err, errlen);
	} else if (strcmp(key, "listen") == 0) {
		if (o->nlisten == CATS_SEL_MAX_LISTEN) {
			snprintf(err, errlen, "at most %d",
			    CATS_SEL_MAX_LISTEN);
			return -1;
		}
		o->listen[o->nlisten++] = v;
	} else {
		const char **slot = strcmp(key, "domain") == 0 ? &c->domain
		    : strcmp(key, "keys") == 0 ? &o->keys
		    : strcmp(key, "services") == 0 ? &o->services
		    : strcmp(key, "metrics") == 0 ? &o->metrics
		    : strcmp(key, "state") == 0 ? &o->state
		    : strcmp(key, "net") == 0 ? &o->net
		    : strcmp(key, "to") == 0 ? &o->to
		    : strcmp(key, "stats-to") == 0 ? &o->stats_to
		    : strcmp(key, "dump-to") == 0 ? &o->dump_to
		    : strcmp(key, "prometheus") == 0 ? &o->prometheus
		    : strcmp(key, "audit") == 0 ? &o->audit
		    : strcmp(key, "ingest") == 0 ? &o->ingest
		    : strcmp(key, "ingest-keys") == 0 ? &o->ingest_keys
		    : strcmp(key, "ingest-key") == 0 ? &o->ingest_key
		    : strcmp(key, "tedb") == 0 ? &o->tedb
		    : strcmp(key, "log") == 0 ? &o->log
		    : strcmp(key, "id") == 0 ? &o->id : NULL;
		if (slot == NULL) {
			snprintf(err, errlen, "unknown key");
			return -1;
		}
		if (from_conf && *slot != NULL)
			return 0;
		if (strcmp(key, "domain") == 0 && strlen(v) > CATS_ID) {
			snprintf(err, errlen, "longer than %d bytes", CATS_ID);
			return -1;
		}
		/* An endpoint that cannot be one is refused here, as a
		 * usage or configuration error, not later as a failure. */
		struct cats_ep ep;
		if ((slot == &o->ingest || slot == &o->to ||
		    slot == &o->stats_to || slot == &o->dump_to) &&
		    cats_ep_parse(v, &ep, err,
		    errlen) < 0)
			return -1;
		*slot = v;
	}
	return 0;
#undef ONCE
bad_enum:
	snprintf(err, errlen, "unknown value \"%s\"", v);
	return -1;
}

int
cats_sel_opts_conf(struct cats_sel_opts *o, const struct cats_conf *cf,
    char *err, size_t errlen)
{
	for (size_t i = 0; i < cf->n; i++) {
		const struct cats_conf_ent *e = &cf->v[i];
		char why[256];
		if (e->section[0] == '\0') {
			if (cats_sel_opts_set(o, e->key, e->val, true, why,
			    sizeof(why)) < 0)
				goto bad;
			continue;
		}
		if (strcmp(e->section, "sma") == 0 && e->arg[0] != '\0') {
			int what = strcmp(e->key, "cs-ids") == 0 ? 's' :
			    strcmp(e->key, "locators") == 0 ? 'l' :
			    strcmp(e->key, "egresses") == 0 ? 'e' : 0;
			if (what == 0) {
				snprintf(why, sizeof(why), "unknown key "
				    "(cs-ids, locators, egresses)");
				goto bad;
			}
			if (parse_sma(o, what, e->val, e->arg, why,
			    sizeof(why)) < 0)
				goto bad;
			continue;
		}
		if (strcmp(e->section, "forwarder") != 0 || e->arg[0] == '\0' ||
		    strlen(e->arg) > CATS_ID) {
			snprintf(why, sizeof(why), "unknown section [%s] (use "
			    "[forwarder \"ID\"] or [sma \"ID\"])", e->section);
			goto bad;
		}
		struct cats_sel_peer *p = NULL;
		for (size_t k = 0; k < o->npc; k++)
			if (strcmp(o->pc[k].id, e->arg) == 0)
				p = &o->pc[k];
		if (p == NULL) {
			if (o->npc == CATS_SEL_MAX_PEERCRED) {
				snprintf(why, sizeof(why), "at most %d "
				    "forwarders", CATS_SEL_MAX_PEERCRED);
				goto bad;
			}
			p = &o->pc[o->npc++];
			memset(p, 0, sizeof(*p));
			cats_strlcpy(p->id, e->arg, sizeof(p->id));
			p->uid = UINT32_MAX;
		}
		if (strcmp(e->key, "uid") == 0) {
			uint64_t uid;
			if (cats_parse_u64(e->val, 0, UINT32_MAX - 1, &uid, why,
			    sizeof(why)) < 0)
				goto bad;
			p->uid = (uint32_t)uid;
		} else if (strcmp(e->key, "tenants") == 0) {
			p->tenants = (char *)e->val;
		} else {
			snprintf(why, sizeof(why),
			    "unknown key (uid, tenants)");
			goto bad;
		}
		continue;
bad:
		cats_conf_errf(cf, e, err, errlen, "%s", why);
		return -1;
	}
	return 0;
}
