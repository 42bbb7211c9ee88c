/*
 * sma_conf.c - cats-sma.conf(5): the C-SMA configuration, its defaults (the
 * example values of seed 000) and the keys it names.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "base/file.h"
#include "base/htab.h"
#include "select/cst.h"
#include "sma/sma.h"

void
sma_conf_defaults(struct sma_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->auth = SMA_AUTH_TOKEN;
	c->skew_ms = 30000;
	c->interval_ms = 10000;
	c->max_interval_ms = 3600000;
	c->ttl.mult_ppm = 2000000;
	c->ttl_static.mult_ppm = 2000000;
	c->grace_ms = 10000;
	c->confirm = 2;
	c->advert_ttl_ms = 180000;
	c->gas = (struct sma_range){ 0, CATS_U32 };
	c->comp_time = (struct sma_range){ 0, 3600000 };
	c->price = (struct sma_range){ 0, CATS_U32 };
	c->reputation = (struct sma_range){ 0, 10 };
	c->security = (struct sma_range){ 0, 10 };
	c->gas_jump_ppm = 500000;
	c->gas_jump_ms = 1000;
	c->ct_jump_ppm = 1000000;
	c->ct_jump_ms = 1000;
	c->flap_max = 3;
	c->flap_ms = 10000;
	c->anomaly = SMA_ANOMALY_FLAG;
	c->healthy_after = 2;
	c->unhealthy_after = 2;
	c->smoothing = 1;
	c->quarantine_max = 1024;
	c->max_entries = 100000;
	c->max_services = 4096;
	c->save_interval_ms = 10000;
	c->in_sci_milli = 50000;
	c->in_sci_burst = 100;
	c->in_all_milli = 50000000;
	c->in_all_burst = 100000;
	c->audit_burst = 20;
	c->audit_window_ms = 1000;
	c->mqtt.qos = 1;
	c->mqtt.keepalive_ms = 30000;
	c->mqtt.backoff_min_ms = 500;
	c->mqtt.backoff_max_ms = 30000;
	c->max_body = 1u << 20;
	c->http_timeout_ms = 10000;
	c->pull_timeout_ms = 5000;
	c->stall_ms = 30000;
	c->backoff_max_ms = 60000;
	c->pol.gas_factor_ppm = 1000000;
	c->pol.ema_alpha_ppm = 300000;
	c->uc.control = true;
	c->uc.gas_ppm = 100000;
	c->uc.gas_abs = 50;
	c->uc.ct_ppm = 200000;
	c->uc.heartbeat_ms = 60000;
	c->uc.jitter_ppm = 100000;
	c->uc.refresh = SMA_REFRESH_AUTO;
	c->uc.full_every = 10;
	c->uc.min_interval_ms = 5000;
	c->uc.rate_milli = 10000;
	c->uc.burst = 20;
	c->uc.damp = SMA_DAMP_ON;
	c->uc.damp_penalty = 1000;
	c->uc.damp_suppress = 2000;
	c->uc.damp_reuse = 750;
	c->uc.damp_max = 6000;
	c->uc.damp_half_life_ms = 60000;
	c->uc.batch_ms = 100;
	c->uc.batch_max = 256;
	c->uc.load_ppm = 500000;
	c->nb.timeout_ms = 10000;
	c->nb.backoff_min_ms = 1000;
	c->nb.backoff_max_ms = 60000;
	c->nb.jitter_ppm = 200000;
	c->nb.queue_max = 10000;
	c->nb.max_post = 1u << 20;
	c->nb.stats_interval_ms = 10000;
	c->nb.notify = true;
	c->sub_window_ms = 30000;
	c->steer.max_ms = 300000;
	c->steer.max_redirects = 1024;
}

static void
free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void
sma_conf_free(struct sma_conf *c)
{
	free(c->path);
	free(c->id);
	free(c->site);
	free(c->egress);
	free(c->audit);
	free(c->issuers);
	free(c->revoked);
	free(c->ca_file);
	free(c->pol.rules);
	free_list(c->nb.fallback, c->nb.nfallback);
	free(c->nb.key);
	free(c->nb.ps_keys);
	free_list(c->nb.authorized, c->nb.nauthorized);
	free(c->nb.prometheus);
	free(c->sub_keys);
	free_list(c->steer.services, c->steer.nservices);
	free(c->steer.to);
	free(c->mqtt.broker);
	free(c->mqtt.topic);
	free(c->mqtt.client_id);
	free(c->mqtt.ca_file);
	free(c->mqtt.cert);
	free(c->mqtt.key);
	free(c->mqtt.username);
	free(c->mqtt.password);
	for (size_t i = 0; i < c->nsubs; i++) {
		free(c->subs[i].sma_id);
		free_list(c->subs[i].cs_ids, c->subs[i].ncs_ids);
		free(c->subs[i].locators);
		free(c->subs[i].egresses);
	}
	free(c->subs);
	for (size_t i = 0; i < c->nscis; i++) {
		free(c->scis[i].csci_id);
		free(c->scis[i].cs_id);
		free(c->scis[i].pull);
		free(c->scis[i].sse);
	}
	free(c->scis);
	for (size_t i = 0; i < c->nsvcs; i++)
		free(c->svcs[i].cs_id);
	free(c->svcs);
	cats_htab_free(&c->sci_index);
	memset(c, 0, sizeof(*c));
}

static bool
sci_eq(const void *item, const void *key)
{
	return strcmp(((const struct sma_cfg_sci *)item)->csci_id, key) == 0;
}

const struct sma_cfg_sci *
sma_conf_sci(const struct sma_conf *c, const char *csci_id)
{
	if (c->sci_index.n == 0)
		return NULL;
	return cats_htab_get(&c->sci_index, cats_hash_str(csci_id), sci_eq,
	    csci_id);
}

/* ---- value parsers ---- */

struct ctx {
	const struct cats_conf *cf;
	const struct cats_conf_ent *e;
	char *err;
	size_t errlen;
};

static int
bad(struct ctx *x, const char *why)
{
	cats_conf_errf(x->cf, x->e, x->err, x->errlen, "%s", why);
	return -1;
}

static int
set_str(struct ctx *x, char **dst, size_t maxlen)
{
	const char *v = x->e->val;
	if (strlen(v) == 0 || strlen(v) > maxlen)
		return bad(x, "expected 1 to a few hundred characters");
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p < 0x20)
			return bad(x, "control character in value");
	char *s = strdup(v);
	if (s == NULL)
		return bad(x, "out of memory");
	free(*dst);
	*dst = s;
	return 0;
}

/* An identifier: 1..128 bytes of printable text without spaces. */
static int
set_id(struct ctx *x, char **dst)
{
	const char *v = x->e->val;
	size_t n = strlen(v);
	if (n == 0 || n > CATS_ID)
		return bad(x, "expected an identifier of 1 to 128 bytes");
	for (const char *p = v; *p; p++)
		if ((unsigned char)*p <= 0x20 || *p == '"' || *p == 0x7f)
			return bad(x, "identifier with a space, quote or "
			    "control character");
	return set_str(x, dst, CATS_ID);
}

static int
set_u64(struct ctx *x, uint64_t *dst, uint64_t min, uint64_t max)
{
	char why[160];
	if (cats_parse_u64(x->e->val, min, max, dst, why, sizeof(why)) < 0)
		return bad(x, why);
	return 0;
}

static int
set_ms(struct ctx *x, uint64_t *dst, uint64_t min, uint64_t max)
{
	char why[160];
	uint64_t v;
	if (cats_parse_ms(x->e->val, &v, why, sizeof(why)) < 0)
		return bad(x, why);
	if (v < min || v > max) {
		snprintf(why, sizeof(why), "%llums is out of range %llu..%llums",
		    (unsigned long long)v, (unsigned long long)min,
		    (unsigned long long)max);
		return bad(x, why);
	}
	*dst = v;
	return 0;
}

static int
set_size(struct ctx *x, uint64_t *dst, uint64_t min, uint64_t max)
{
	char why[160];
	uint64_t v;
	if (cats_parse_size(x->e->val, &v, why, sizeof(why)) < 0)
		return bad(x, why);
	if (v < min || v > max) {
		snprintf(why, sizeof(why), "%llu is out of range %llu..%llu",
		    (unsigned long long)v, (unsigned long long)min,
		    (unsigned long long)max);
		return bad(x, why);
	}
	*dst = v;
	return 0;
}

/* A fraction "0.5" or a percentage "50%", as parts per million. */
static int
set_ppm(struct ctx *x, uint64_t *dst, uint64_t max)
{
	char why[160], tmp[64];
	const char *v = x->e->val;
	size_t n = strlen(v);
	if (n > 0 && n < sizeof(tmp) && v[n - 1] == '%') {
		memcpy(tmp, v, n - 1);
		tmp[n - 1] = '\0';
		uint64_t pct;
		if (cats_parse_ppm(tmp, max > UINT64_MAX / 100 ? UINT64_MAX
		    : max * 100, &pct, why, sizeof(why)) < 0)
			return bad(x, why);
		*dst = pct / 100;
		return 0;
	}
	if (cats_parse_ppm(v, max, dst, why, sizeof(why)) < 0)
		return bad(x, why);
	return 0;
}

/* A TTL: "2x", "2.5x" (times the interval) or a duration. */
static int
set_ttl(struct ctx *x, struct sma_ttl *t)
{
	char why[160], tmp[64];
	const char *v = x->e->val;
	size_t n = strlen(v);
	if (n > 1 && n < sizeof(tmp) && v[n - 1] == 'x') {
		memcpy(tmp, v, n - 1);
		tmp[n - 1] = '\0';
		uint64_t ppm;
		if (cats_parse_ppm(tmp, 1000000000, &ppm, why, sizeof(why)) < 0)
			return bad(x, why);
		if (ppm < 1000000)
			return bad(x, "a TTL below 1x the interval");
		t->mult_ppm = ppm;
		t->ms = 0;
		return 0;
	}
	uint64_t ms;
	if (cats_parse_ms(v, &ms, why, sizeof(why)) < 0)
		return bad(x, "expected 2x (times the interval) or a duration");
	if (ms < 1 || ms > CATS_U32)
		return bad(x, "TTL out of range 1ms..49d");
	t->mult_ppm = 0;
	t->ms = ms;
	return 0;
}

/* An http:// or https:// URL. */
static int
set_url(struct ctx *x, char **dst)
{
	const char *v = x->e->val;
	if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
		return bad(x, "expected an http:// or https:// URL");
	return set_str(x, dst, 4000);
}

static int
set_bool(struct ctx *x, bool *dst)
{
	char why[160];
	if (cats_parse_bool(x->e->val, dst, why, sizeof(why)) < 0)
		return bad(x, why);
	return 0;
}

/* A list of identifiers separated by spaces or commas (replaces). */
/* A subordinate's site (cats_cst_scope's lists), checked here so that the
 * error names its line. */
static int
check_scope(struct ctx *x, const char *locators, const char *egresses)
{
	char why[200] = "out of memory";
	struct cats_cst *scratch = cats_cst_new(0, 1);
	int rc = scratch == NULL ? -1 : cats_cst_scope(scratch, "-",
	    locators, egresses, why, sizeof(why));
	cats_cst_free(scratch);
	return rc < 0 ? bad(x, why) : 0;
}

static int
set_list(struct ctx *x, char ***dst, size_t *n, size_t max)
{
	char *copy = strdup(x->e->val), *save = NULL;
	char **v = NULL;
	size_t k = 0;
	if (copy == NULL)
		return bad(x, "out of memory");
	for (char *t = strtok_r(copy, " \t,", &save); t != NULL;
	    t = strtok_r(NULL, " \t,", &save)) {
		size_t len = strlen(t);
		bool ok = len > 0 && len <= CATS_ID && k < max;
		for (const char *p = t; ok && *p; p++)
			ok = (unsigned char)*p > 0x20 && *p != '"' && *p != 0x7f;
		char **nv = ok ? realloc(v, (k + 1) * sizeof(*v)) : NULL;
		if (nv == NULL || (nv[k] = strdup(t)) == NULL) {
			if (nv != NULL)
				v = nv;
			free_list(v, k);
			free(copy);
			return bad(x, ok ? "out of memory" : "expected "
			    "identifiers of 1 to 128 bytes");
		}
		v = nv;
		k++;
	}
	free(copy);
	if (k == 0)
		return bad(x, "expected a list of identifiers");
	free_list(*dst, *n);
	*dst = v;
	*n = k;
	return 0;
}

/* ---- sections ---- */

static int
top_key(struct ctx *x, struct sma_conf *c)
{
	const char *k = x->e->key;
	if (strcmp(k, "id") == 0)
		return set_id(x, &c->id);
	if (strcmp(k, "site") == 0)
		return set_id(x, &c->site);
	if (strcmp(k, "egress") == 0)
		return set_id(x, &c->egress);
	if (strcmp(k, "audit") == 0) {
		const char *v = x->e->val;
		if (strcmp(v, "stderr") != 0 && strcmp(v, "syslog") != 0 &&
		    strcmp(v, "none") != 0 && strncmp(v, "file:", 5) != 0)
			return bad(x, "expected stderr, syslog, none or "
			    "file:PATH");
		return set_str(x, &c->audit, 4000);
	}
	return bad(x, "unknown key");
}

static int
auth_key(struct ctx *x, struct sma_conf *c)
{
	const char *k = x->e->key, *v = x->e->val;
	if (strcmp(k, "mode") == 0) {
		if (strcmp(v, "token") == 0)
			c->auth = SMA_AUTH_TOKEN;
		else if (strcmp(v, "none") == 0)
			c->auth = SMA_AUTH_NONE;
		else
			return bad(x, "expected token or none");
		return 0;
	}
	if (strcmp(k, "issuers") == 0)
		return set_str(x, &c->issuers, 4000);
	if (strcmp(k, "revoked") == 0)
		return set_str(x, &c->revoked, 4000);
	if (strcmp(k, "skew") == 0)
		return set_ms(x, &c->skew_ms, 0, 86400000);
	return bad(x, "unknown key");
}

static int
timing_key(struct ctx *x, struct sma_conf *c)
{
	const char *k = x->e->key;
	if (strcmp(k, "interval") == 0)
		return set_ms(x, &c->interval_ms, 1, CATS_U32);
	if (strcmp(k, "max-interval") == 0)
		return set_ms(x, &c->max_interval_ms, 1, CATS_U32);
	if (strcmp(k, "ttl") == 0)
		return set_ttl(x, &c->ttl);
	if (strcmp(k, "ttl-static") == 0)
		return set_ttl(x, &c->ttl_static);
	if (strcmp(k, "grace") == 0)
		return set_ms(x, &c->grace_ms, 0, CATS_U32);
	if (strcmp(k, "confirm") == 0)
		return set_u64(x, &c->confirm, 1, 100);
	if (strcmp(k, "advert-ttl") == 0)
		return set_ms(x, &c->advert_ttl_ms, 0, CATS_U32);
	return bad(x, "unknown key");
}

static int
validate_key(struct ctx *x, struct sma_conf *c)
{
	static const struct {
		const char *name;
		size_t off;
		uint64_t max;
	} ranges[] = {
		{ "gas", offsetof(struct sma_conf, gas), CATS_U32 },
		{ "comp-time", offsetof(struct sma_conf, comp_time), CATS_U32 },
		{ "price", offsetof(struct sma_conf, price), CATS_U32 },
		{ "reputation", offsetof(struct sma_conf, reputation), 255 },
		{ "security-level", offsetof(struct sma_conf, security), 255 },
	};
	const char *k = x->e->key, *v = x->e->val;
	for (size_t i = 0; i < CATS_ARRAY_LEN(ranges); i++) {
		size_t n = strlen(ranges[i].name);
		if (strncmp(k, ranges[i].name, n) != 0 || k[n] != '-')
			continue;
		struct sma_range *r = (struct sma_range *)((char *)c +
		    ranges[i].off);
		bool ms = i == 1;
		if (strcmp(k + n, "-min") == 0)
			return ms ? set_ms(x, &r->min, 0, ranges[i].max)
			    : set_u64(x, &r->min, 0, ranges[i].max);
		if (strcmp(k + n, "-max") == 0)
			return ms ? set_ms(x, &r->max, 0, ranges[i].max)
			    : set_u64(x, &r->max, 0, ranges[i].max);
	}
	if (strcmp(k, "gas-jump") == 0)
		return set_ppm(x, &c->gas_jump_ppm, 1000000000);
	if (strcmp(k, "gas-jump-window") == 0)
		return set_ms(x, &c->gas_jump_ms, 0, CATS_U32);
	if (strcmp(k, "comp-time-jump") == 0)
		return set_ppm(x, &c->ct_jump_ppm, 1000000000);
	if (strcmp(k, "comp-time-jump-window") == 0)
		return set_ms(x, &c->ct_jump_ms, 0, CATS_U32);
	if (strcmp(k, "flap-transitions") == 0)
		return set_u64(x, &c->flap_max, 1, 15);
	if (strcmp(k, "flap-window") == 0)
		return set_ms(x, &c->flap_ms, 0, CATS_U32);
	if (strcmp(k, "anomaly") == 0) {
		if (strcmp(v, "flag") == 0)
			c->anomaly = SMA_ANOMALY_FLAG;
		else if (strcmp(v, "quarantine") == 0)
			c->anomaly = SMA_ANOMALY_QUARANTINE;
		else
			return bad(x, "expected flag or quarantine");
		return 0;
	}
	if (strcmp(k, "healthy-after") == 0)
		return set_u64(x, &c->healthy_after, 1, 100);
	if (strcmp(k, "unhealthy-after") == 0)
		return set_u64(x, &c->unhealthy_after, 1, 100);
	if (strcmp(k, "smoothing") == 0)
		return set_u64(x, &c->smoothing, 1, 16);
	if (strcmp(k, "quarantine-max") == 0)
		return set_u64(x, &c->quarantine_max, 0, 1000000);
	return bad(x, "unknown key");
}

static int
cache_key(struct ctx *x, struct sma_conf *c)
{
	const char *k = x->e->key;
	if (strcmp(k, "max-entries") == 0)
		return set_u64(x, &c->max_entries, 1, 100000000);
	if (strcmp(k, "max-services") == 0)
		return set_u64(x, &c->max_services, 1, 10000000);
	if (strcmp(k, "save-interval") == 0)
		return set_ms(x, &c->save_interval_ms, 0, 86400000);
	return bad(x, "unknown key");
}

/* A rate "20" or "0.5" a second, in thousandths; 0: off. */
static int
set_rate(struct ctx *x, uint64_t *milli)
{
	uint64_t ppm;
	char why[160];
	if (cats_parse_ppm(x->e->val, UINT64_C(1000000000000), &ppm, why,
	    sizeof(why)) < 0)
		return bad(x, why);
	if (ppm > 0 && ppm < 1000)
		return bad(x, "a rate below 0.001 a second");
	*milli = ppm / 1000;
	return 0;
}

/* A topic filter with one "+" level (the CSCI-ID) and no "#". */
static int
set_topic(struct ctx *x, char **dst)
{
	const char *v = x->e->val;
	size_t plus = 0;
	for (const char *p = v; *p; p++) {
		if (*p == '#')
			return bad(x, "a topic with # cannot name the CSCI-ID");
		if (*p == '+') {
			if ((p != v && p[-1] != '/') ||
			    (p[1] != '/' && p[1] != '\0'))
				return bad(x, "+ must be a whole level");
			plus++;
		}
	}
	if (plus != 1)
		return bad(x, "expected one + level, where the CSCI-ID is "
		    "(e.g. cats/sci/+/report)");
	return set_str(x, dst, 1024);
}

static int
mqtt_key(struct ctx *x, struct sma_conf *c)
{
	const char *k = x->e->key, *v = x->e->val;
	struct sma_mqtt_conf *m = &c->mqtt;
	if (strcmp(k, "broker") == 0) {
		if (strncmp(v, "mqtt://", 7) != 0 && strncmp(v, "mqtts://", 8))
			return bad(x, "expected mqtt://HOST[:PORT] or "
			    "mqtts://HOST[:PORT]");
		return set_str(x, &m->broker, 1024);
	}
	if (strcmp(k, "topic") == 0)
		return set_topic(x, &m->topic);
	if (strcmp(k, "client-id") == 0)
		return set_id(x, &m->client_id);
	if (strcmp(k, "ca-file") == 0)
		return set_str(x, &m->ca_file, 4000);
	if (strcmp(k, "cert") == 0)
		return set_str(x, &m->cert, 4000);
	if (strcmp(k, "key") == 0)
		return set_str(x, &m->key, 4000);
	if (strcmp(k, "username") == 0)
		return set_str(x, &m->username, 1024);
	if (strcmp(k, "password") == 0)
		return set_str(x, &m->password, 1024);
	if (strcmp(k, "qos") == 0)
		return set_u64(x, &m->qos, 0, 2);
	if (strcmp(k, "keepalive") == 0)
		return set_ms(x, &m->keepalive_ms, 5000, 3600000);
	if (strcmp(k, "backoff-min") == 0)
		return set_ms(x, &m->backoff_min_ms, 1, 3600000);
	if (strcmp(k, "backoff-max") == 0)
		return set_ms(x, &m->backoff_max_ms, 1, 3600000);
	return bad(x, "unknown key");
}

static int
limits_key(struct ctx *x, struct sma_conf *c)
{
	const char *k = x->e->key;
	if (strcmp(k, "sci-rate") == 0)
		return set_rate(x, &c->in_sci_milli);
	if (strcmp(k, "sci-burst") == 0)
		return set_u64(x, &c->in_sci_burst, 1, 100000000);
	if (strcmp(k, "rate") == 0)
		return set_rate(x, &c->in_all_milli);
	if (strcmp(k, "burst") == 0)
		return set_u64(x, &c->in_all_burst, 1, 1000000000);
	if (strcmp(k, "audit-burst") == 0)
		return set_u64(x, &c->audit_burst, 0, 1000000);
	if (strcmp(k, "audit-window") == 0)
		return set_ms(x, &c->audit_window_ms, 1, 86400000);
	return bad(x, "unknown key");
}

static int
http_key(struct ctx *x, struct sma_conf *c)
{
	const char *k = x->e->key;
	if (strcmp(k, "max-body") == 0)
		return set_size(x, &c->max_body, 64, 1u << 30);
	if (strcmp(k, "timeout") == 0)
		return set_ms(x, &c->http_timeout_ms, 1000, 86400000);
	if (strcmp(k, "pull-timeout") == 0)
		return set_ms(x, &c->pull_timeout_ms, 1, 86400000);
	if (strcmp(k, "stall") == 0)
		return set_ms(x, &c->stall_ms, 1000, 86400000);
	if (strcmp(k, "backoff-max") == 0)
		return set_ms(x, &c->backoff_max_ms, 1, 86400000);
	if (strcmp(k, "ca-file") == 0)
		return set_str(x, &c->ca_file, 4000);
	return bad(x, "unknown key");
}

static int
policy_key(struct ctx *x, struct sma_conf *c)
{
	const char *k = x->e->key;
	struct sma_pol_conf *p = &c->pol;
	if (strcmp(k, "rules") == 0)
		return set_str(x, &p->rules, 4000);
	if (strcmp(k, "safety-margin") == 0) {
		uint64_t m;
		if (set_ppm(x, &m, 1000000) < 0)
			return -1;
		p->gas_factor_ppm = 1000000 - m;
		return 0;
	}
	if (strcmp(k, "gas-factor") == 0)
		return set_ppm(x, &p->gas_factor_ppm, 1000000);
	if (strcmp(k, "comp-time-floor") == 0) {
		p->has_ct_floor = true;
		return set_ms(x, &p->ct_floor, 0, CATS_U32);
	}
	if (strcmp(k, "comp-time-ceiling") == 0) {
		p->has_ct_ceiling = true;
		return set_ms(x, &p->ct_ceiling, 0, CATS_U32);
	}
	if (strcmp(k, "ema") == 0)
		return set_bool(x, &p->ema);
	if (strcmp(k, "ema-alpha") == 0) {
		if (set_ppm(x, &p->ema_alpha_ppm, 1000000) < 0)
			return -1;
		if (p->ema_alpha_ppm == 0)
			return bad(x, "alpha 0 would never move");
		return 0;
	}
	return bad(x, "unknown key");
}

static int
update_key(struct ctx *x, struct sma_conf *c)
{
	const char *k = x->e->key, *v = x->e->val;
	struct sma_uc_conf *u = &c->uc;
	if (strcmp(k, "control") == 0)
		return set_bool(x, &u->control);
	if (strcmp(k, "gas-threshold") == 0)
		return set_ppm(x, &u->gas_ppm, 1000000000);
	if (strcmp(k, "gas-threshold-abs") == 0)
		return set_u64(x, &u->gas_abs, 0, CATS_U32);
	if (strcmp(k, "comp-time-threshold") == 0)
		return set_ppm(x, &u->ct_ppm, 1000000000);
	if (strcmp(k, "heartbeat") == 0)
		return set_ms(x, &u->heartbeat_ms, 0, 86400000);
	if (strcmp(k, "heartbeat-jitter") == 0)
		return set_ppm(x, &u->jitter_ppm, 500000);
	if (strcmp(k, "refresh") == 0) {
		if (strcmp(v, "auto") == 0)
			u->refresh = SMA_REFRESH_AUTO;
		else if (strcmp(v, "on") == 0)
			u->refresh = SMA_REFRESH_ON;
		else if (strcmp(v, "off") == 0)
			u->refresh = SMA_REFRESH_OFF;
		else
			return bad(x, "expected auto, on or off");
		return 0;
	}
	if (strcmp(k, "full-every") == 0)
		return set_u64(x, &u->full_every, 1, 1000000);
	if (strcmp(k, "min-interval") == 0)
		return set_ms(x, &u->min_interval_ms, 0, 86400000);
	if (strcmp(k, "rate") == 0) {
		uint64_t ppm;
		char why[160];
		if (cats_parse_ppm(v, UINT64_C(1000000000000), &ppm, why,
		    sizeof(why)) < 0)
			return bad(x, why);
		u->rate_milli = ppm / 1000;
		if (ppm > 0 && u->rate_milli == 0)
			return bad(x, "a rate below 0.001 a second");
		return 0;
	}
	if (strcmp(k, "burst") == 0)
		return set_u64(x, &u->burst, 1, 1000000);
	if (strcmp(k, "dampening") == 0) {
		if (strcmp(v, "on") == 0)
			u->damp = SMA_DAMP_ON;
		else if (strcmp(v, "off") == 0)
			u->damp = SMA_DAMP_OFF;
		else if (strcmp(v, "observe") == 0)
			u->damp = SMA_DAMP_OBSERVE;
		else
			return bad(x, "expected on, off or observe");
		return 0;
	}
	if (strcmp(k, "damp-penalty") == 0)
		return set_u64(x, &u->damp_penalty, 1, 1000000);
	if (strcmp(k, "damp-suppress") == 0)
		return set_u64(x, &u->damp_suppress, 1, 1000000);
	if (strcmp(k, "damp-reuse") == 0)
		return set_u64(x, &u->damp_reuse, 1, 1000000);
	if (strcmp(k, "damp-max") == 0)
		return set_u64(x, &u->damp_max, 1, 1000000);
	if (strcmp(k, "damp-half-life") == 0)
		return set_ms(x, &u->damp_half_life_ms, 1, 86400000);
	if (strcmp(k, "batch") == 0)
		return set_ms(x, &u->batch_ms, 0, 60000);
	if (strcmp(k, "batch-max") == 0)
		return set_u64(x, &u->batch_max, 1, 256);
	if (strcmp(k, "load") == 0)
		return set_ppm(x, &u->load_ppm, 1000000);
	return bad(x, "unknown key");
}

static int
northbound_key(struct ctx *x, struct sma_conf *c)
{
	const char *k = x->e->key;
	struct sma_nb_conf *n = &c->nb;
	if (strcmp(k, "fallback") == 0) {
		if (n->nfallback >= 16)
			return bad(x, "at most 16 fallback URLs");
		char *u = NULL;
		if (set_url(x, &u) < 0)
			return -1;
		char **v = realloc(n->fallback, (n->nfallback + 1) *
		    sizeof(*v));
		if (v == NULL) {
			free(u);
			return bad(x, "out of memory");
		}
		n->fallback = v;
		n->fallback[n->nfallback++] = u;
		return 0;
	}
	if (strcmp(k, "key") == 0)
		return set_str(x, &n->key, 4000);
	if (strcmp(k, "ps-keys") == 0)
		return set_str(x, &n->ps_keys, 4000);
	if (strcmp(k, "timeout") == 0)
		return set_ms(x, &n->timeout_ms, 100, 86400000);
	if (strcmp(k, "backoff-min") == 0)
		return set_ms(x, &n->backoff_min_ms, 1, 86400000);
	if (strcmp(k, "backoff-max") == 0)
		return set_ms(x, &n->backoff_max_ms, 1, 86400000);
	if (strcmp(k, "backoff-jitter") == 0)
		return set_ppm(x, &n->jitter_ppm, 500000);
	if (strcmp(k, "queue-max") == 0)
		return set_u64(x, &n->queue_max, 1, 10000000);
	if (strcmp(k, "max-post") == 0)
		return set_size(x, &n->max_post, 65536, 1u << 30);
	if (strcmp(k, "authorized") == 0)
		return set_list(x, &n->authorized, &n->nauthorized, 4096);
	if (strcmp(k, "prometheus") == 0)
		return set_str(x, &n->prometheus, 4000);
	if (strcmp(k, "stats-interval") == 0)
		return set_ms(x, &n->stats_interval_ms, 100, 86400000);
	if (strcmp(k, "notify") == 0) {
		if (strcmp(x->e->val, "syslog") == 0) {
			n->notify = true;
			return 0;
		}
		if (strcmp(x->e->val, "none") == 0) {
			n->notify = false;
			return 0;
		}
		return bad(x, "expected syslog or none");
	}
	return bad(x, "unknown key");
}

/* [steer]: which services, where the decisions go, how long. */
static int
steer_key(struct ctx *x, struct sma_conf *c)
{
	const char *k = x->e->key, *v = x->e->val;
	struct sma_steer_conf *s = &c->steer;
	if (strcmp(k, "services") == 0)
		return set_list(x, &s->services, &s->nservices, 64);
	if (strcmp(k, "to") == 0) {
		if (strncmp(v, "file:", 5) != 0 && strncmp(v, "unix:", 5) != 0 &&
		    strncmp(v, "tcp:", 4) != 0 && strncmp(v, "udp:", 4) != 0 &&
		    strncmp(v, "tls:", 4) != 0)
			return bad(x, "expected file:PATH, unix:PATH, "
			    "tcp:HOST:PORT, tls:HOST:PORT or udp:HOST:PORT");
		return set_str(x, &s->to, 4000);
	}
	if (strcmp(k, "max") == 0)
		return set_ms(x, &s->max_ms, 1000, 86400000);
	if (strcmp(k, "max-redirects") == 0)
		return set_u64(x, &s->max_redirects, 1, 65536);
	return bad(x, "unknown key (services, to, max, max-redirects)");
}

static int
hierarchy_key(struct ctx *x, struct sma_conf *c)
{
	const char *k = x->e->key;
	if (strcmp(k, "keys") == 0)
		return set_str(x, &c->sub_keys, 4000);
	if (strcmp(k, "window") == 0)
		return set_ms(x, &c->sub_window_ms, 0, 86400000);
	return bad(x, "unknown key");
}

static int
sci_key(struct ctx *x, struct sma_cfg_sci *s)
{
	const char *k = x->e->key;
	if (strcmp(k, "cs-id") == 0)
		return set_id(x, &s->cs_id);
	if (strcmp(k, "pull") == 0)
		return set_url(x, &s->pull);
	if (strcmp(k, "sse") == 0)
		return set_url(x, &s->sse);
	if (strcmp(k, "interval") == 0)
		return set_ms(x, &s->interval_ms, 1, CATS_U32);
	if (strcmp(k, "pull-interval") == 0)
		return set_ms(x, &s->pull_interval_ms, 0, CATS_U32);
	return bad(x, "unknown key");
}

static int
svc_key(struct ctx *x, struct sma_cfg_svc *s)
{
	const char *k = x->e->key;
	if (strcmp(k, "interval") == 0)
		return set_ms(x, &s->interval_ms, 1, CATS_U32);
	if (strcmp(k, "ttl") == 0)
		return set_ttl(x, &s->ttl);
	if (strcmp(k, "ttl-static") == 0)
		return set_ttl(x, &s->ttl_static);
	if (strcmp(k, "grace") == 0)
		return set_ms(x, &s->grace_ms, 1, CATS_U32);
	return bad(x, "unknown key");
}

/* Check a section argument as an identifier. */
static int
check_arg(const struct cats_conf *cf, const struct cats_conf_ent *e,
    const char *what, char *err, size_t errlen)
{
	size_t n = strlen(e->arg);
	bool ok = n > 0 && n <= CATS_ID;
	for (const char *p = e->arg; ok && *p; p++)
		ok = (unsigned char)*p > 0x20 && *p != '"' && *p != 0x7f;
	if (!ok) {
		snprintf(err, errlen, "%s:%u: [%s \"%.40s\"]: expected an "
		    "identifier of 1 to 128 bytes", cf->path, e->line, what,
		    e->arg);
		return -1;
	}
	return 0;
}

/*
 * The sections of one kind with an argument ([sci "ID"], [service "ID"],
 * [subordinate "ID"]): which element of its array a name has.  A hash of
 * the names and arrays grown by doubling keep a load of many sections
 * linear (a scan per entry and a realloc by one were quadratic: 100k
 * [sci] sections took 20 s).
 */
struct named {
	struct cats_htab t;	/* name -> struct slot */
	struct slot { const char *name; size_t idx; } *v;
	size_t nv, cap;		/* slots; the array's capacity */
};

static bool
slot_eq(const void *item, const void *key)
{
	return strcmp(((const struct slot *)item)->name, key) == 0;
}

/*
 * The element named name of *arr (n elements of size sz, zeroed when
 * new; *isnew says so), or NULL when memory ran out.  The slots are
 * allocated once for the file's entries (max), so they never move.
 */
static void *
named_get(struct named *nm, size_t max, void **arr, size_t *n, size_t sz,
    const char *name, bool *isnew)
{
	uint64_t h = cats_hash_str(name);
	struct slot *sl = cats_htab_get(&nm->t, h, slot_eq, name);
	*isnew = false;
	if (sl != NULL)
		return (char *)*arr + sl->idx * sz;
	if (nm->v == NULL && (nm->v = calloc(max ? max : 1,
	    sizeof(*nm->v))) == NULL)
		return NULL;
	if (*n == nm->cap || *arr == NULL) {
		size_t cap = nm->cap ? nm->cap * 2 : 8;
		if (cap < *n + 1)
			cap = *n + 1;
		void *v = realloc(*arr, cap * sz);
		if (v == NULL)
			return NULL;
		*arr = v;
		nm->cap = cap;
	}
	sl = &nm->v[nm->nv++];
	sl->name = name;
	sl->idx = *n;
	if (cats_htab_put(&nm->t, h, sl) < 0) {
		nm->nv--;
		return NULL;
	}
	void *e = (char *)*arr + (*n)++ * sz;
	memset(e, 0, sz);
	*isnew = true;
	return e;
}

static void
named_free(struct named *nm)
{
	cats_htab_free(&nm->t);
	free(nm->v);
}

int
sma_conf_from(struct sma_conf *c, const struct cats_conf *cf, char *err,
    size_t errlen)
{
	sma_conf_defaults(c);
	c->path = strdup(cf->path ? cf->path : "");
	struct ctx x = { .cf = cf, .err = err, .errlen = errlen };
	struct named nsci = { 0 }, nsvc = { 0 }, nsub = { 0 };
	bool isnew;
	for (size_t i = 0; i < cf->n; i++) {
		const struct cats_conf_ent *e = &cf->v[i];
		const char *sec = e->section;
		int rc;
		x.e = e;
		if (e->arg[0] && strcmp(sec, "sci") != 0 &&
		    strcmp(sec, "service") != 0 &&
		    strcmp(sec, "subordinate") != 0) {
			bad(&x, "this section takes no argument");
			goto fail;
		}
		if (sec[0] == '\0' || strcmp(sec, "sma") == 0) {
			rc = top_key(&x, c);
		} else if (strcmp(sec, "auth") == 0) {
			rc = auth_key(&x, c);
		} else if (strcmp(sec, "timing") == 0) {
			rc = timing_key(&x, c);
		} else if (strcmp(sec, "validate") == 0) {
			rc = validate_key(&x, c);
		} else if (strcmp(sec, "cache") == 0) {
			rc = cache_key(&x, c);
		} else if (strcmp(sec, "limits") == 0) {
			rc = limits_key(&x, c);
		} else if (strcmp(sec, "mqtt") == 0) {
			rc = mqtt_key(&x, c);
		} else if (strcmp(sec, "http") == 0) {
			rc = http_key(&x, c);
		} else if (strcmp(sec, "policy") == 0) {
			rc = policy_key(&x, c);
		} else if (strcmp(sec, "update") == 0) {
			rc = update_key(&x, c);
		} else if (strcmp(sec, "northbound") == 0) {
			rc = northbound_key(&x, c);
		} else if (strcmp(sec, "hierarchy") == 0) {
			rc = hierarchy_key(&x, c);
		} else if (strcmp(sec, "steer") == 0) {
			rc = steer_key(&x, c);
		} else if (strcmp(sec, "subordinate") == 0) {
			if (check_arg(cf, e, "subordinate", err, errlen) < 0)
				goto fail;
			struct sma_cfg_sub *s = named_get(&nsub, cf->n,
			    (void **)&c->subs, &c->nsubs, sizeof(*c->subs), e->arg,
			    &isnew);
			if (s == NULL || (isnew && (s->sma_id = strdup(e->arg)) ==
			    NULL)) {
				bad(&x, "out of memory");
				goto fail;
			}
			if (strcmp(e->key, "cs-ids") == 0) {
				rc = set_list(&x, &s->cs_ids, &s->ncs_ids, 4096);
			} else if (strcmp(e->key, "locators") == 0 ||
			    strcmp(e->key, "egresses") == 0) {
				bool loc = e->key[0] == 'l';
				rc = set_str(&x, loc ? &s->locators :
				    &s->egresses, 16384);
				if (rc == 0 && check_scope(&x, loc ? e->val :
				    NULL, loc ? NULL : e->val) < 0)
					rc = -1;
			} else {
				bad(&x, "unknown key (cs-ids, locators, "
				    "egresses)");
				goto fail;
			}
		} else if (strcmp(sec, "sci") == 0) {
			if (check_arg(cf, e, "sci", err, errlen) < 0)
				goto fail;
			struct sma_cfg_sci *s = named_get(&nsci, cf->n,
			    (void **)&c->scis, &c->nscis, sizeof(*c->scis), e->arg,
			    &isnew);
			if (s == NULL || (isnew && (s->csci_id = strdup(e->arg)) ==
			    NULL)) {
				bad(&x, "out of memory");
				goto fail;
			}
			rc = sci_key(&x, s);
		} else if (strcmp(sec, "service") == 0) {
			if (check_arg(cf, e, "service", err, errlen) < 0)
				goto fail;
			struct sma_cfg_svc *s = named_get(&nsvc, cf->n,
			    (void **)&c->svcs, &c->nsvcs, sizeof(*c->svcs), e->arg,
			    &isnew);
			if (s == NULL || (isnew && (s->cs_id = strdup(e->arg)) ==
			    NULL)) {
				bad(&x, "out of memory");
				goto fail;
			}
			rc = svc_key(&x, s);
		} else {
			snprintf(err, errlen, "%s:%u: unknown section [%.40s]",
			    cf->path, e->line, sec);
			goto fail;
		}
		if (rc < 0)
			goto fail;
	}
	/* Cross-key rules, reported at the end of the file. */
	const char *why = NULL;
	if (c->gas.min > c->gas.max || c->comp_time.min > c->comp_time.max ||
	    c->price.min > c->price.max ||
	    c->reputation.min > c->reputation.max ||
	    c->security.min > c->security.max)
		why = "a -min above its -max";
	else if (c->auth == SMA_AUTH_TOKEN && c->issuers == NULL)
		why = "[auth] mode = token needs issuers = KEYRING";
	else if (c->interval_ms > c->max_interval_ms)
		why = "interval above max-interval";
	else if (c->uc.damp_reuse >= c->uc.damp_suppress ||
	    c->uc.damp_suppress > c->uc.damp_max)
		why = "[update] needs damp-reuse < damp-suppress <= damp-max";
	else if (c->nb.backoff_min_ms > c->nb.backoff_max_ms)
		why = "[northbound] backoff-min above backoff-max";
	else if (c->pol.has_ct_floor && c->pol.has_ct_ceiling &&
	    c->pol.ct_floor > c->pol.ct_ceiling)
		why = "[policy] comp-time-floor above comp-time-ceiling";
	else if (c->pol.ema && c->smoothing > 1)
		why = "[policy] ema and [validate] smoothing exclude each other";
	else if (c->nsubs > 0 && c->sub_keys == NULL)
		why = "[subordinate] sections need [hierarchy] keys = KEYRING";
	else if (c->mqtt.broker != NULL && c->mqtt.topic == NULL)
		why = "[mqtt] broker needs topic = FILTER (e.g. "
		    "cats/sci/+/report)";
	else if (c->mqtt.backoff_min_ms > c->mqtt.backoff_max_ms)
		why = "[mqtt] backoff-min above backoff-max";
	else if ((c->mqtt.cert == NULL) != (c->mqtt.key == NULL))
		why = "[mqtt] cert and key go together";
	else if ((c->steer.nservices > 0) != (c->steer.to != NULL))
		why = "[steer] services and to go together";
	else if (c->steer.nservices > 0 && c->egress == NULL)
		why = "[steer] needs egress = ID (the egress forwarder it is "
		    "co-located with)";
	for (size_t j = 0; why == NULL && j < c->nscis; j++)
		if (c->scis[j].pull_interval_ms && c->scis[j].pull == NULL)
			why = "an [sci] with pull-interval needs pull = URL";
	for (size_t j = 0; why == NULL && j < c->nsubs; j++)
		if (c->subs[j].ncs_ids == 0)
			why = "a [subordinate] needs cs-ids = LIST (or *)";
	if (why != NULL) {
		snprintf(err, errlen, "%s: %s", cf->path, why);
		goto fail;
	}
	if (c->id == NULL)
		c->id = strdup("cats-sma");
	/* The [sci] array is complete: index it. */
	for (size_t j = 0; j < c->nscis; j++) {
		if (c->scis[j].csci_id == NULL || cats_htab_put(&c->sci_index,
		    cats_hash_str(c->scis[j].csci_id), &c->scis[j]) < 0) {
			snprintf(err, errlen, "%s: out of memory", cf->path);
			goto fail;
		}
	}
	named_free(&nsci);
	named_free(&nsvc);
	named_free(&nsub);
	return 0;
fail:
	named_free(&nsci);
	named_free(&nsvc);
	named_free(&nsub);
	sma_conf_free(c);
	return -1;
}

int
sma_conf_load(struct sma_conf *c, const char *path, char *err, size_t errlen)
{
	struct cats_conf cf;
	if (cats_conf_load(&cf, path, err, errlen) < 0)
		return -1;
	int rc = sma_conf_from(c, &cf, err, errlen);
	cats_conf_free(&cf);
	return rc;
}

/* ---- keys ---- */

/* The revocation list: one token id (32 hex digits) a line, # comments. */
static int
load_revoked(struct sma_keys *k, const char *path, char *err, size_t errlen)
{
	int fd = cats_file_open(path, err, errlen);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (f == NULL) {
		if (fd >= 0) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			close(fd);
		}
		return -1;
	}
	char line[256];
	unsigned lineno = 0;
	int rc = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		lineno++;
		char *p = line + strspn(line, " \t");
		size_t n = strcspn(p, " \t\r\n#");
		if (n == 0)
			continue;
		uint8_t cti[CATS_TOKEN_CTI_LEN];
		size_t got = 0;
		if (n != 2 * CATS_TOKEN_CTI_LEN || sodium_hex2bin(cti,
		    sizeof(cti), p, n, NULL, &got, NULL) != 0 ||
		    got != sizeof(cti)) {
			snprintf(err, errlen, "%s:%u: expected a token id of "
			    "32 hex digits", path, lineno);
			rc = -1;
			break;
		}
		if (k->nrevoked >= 1000000) {
			snprintf(err, errlen, "%s:%u: more than a million "
			    "revoked tokens", path, lineno);
			rc = -1;
			break;
		}
		void *v = realloc(k->revoked, (k->nrevoked + 1) *
		    sizeof(*k->revoked));
		if (v == NULL) {
			snprintf(err, errlen, "%s: out of memory", path);
			rc = -1;
			break;
		}
		k->revoked = v;
		memcpy(k->revoked[k->nrevoked++], cti, sizeof(cti));
	}
	fclose(f);
	return rc;
}

static int
cti_cmp(const void *a, const void *b)
{
	return memcmp(a, b, CATS_TOKEN_CTI_LEN);
}

int
sma_keys_load(struct sma_keys *k, const struct sma_conf *c, char *err,
    size_t errlen)
{
	memset(k, 0, sizeof(*k));
	if (c->issuers != NULL &&
	    cats_keyring_load(&k->issuers, c->issuers, err, errlen) < 0)
		goto fail;
	if (c->revoked != NULL && load_revoked(k, c->revoked, err, errlen) < 0)
		goto fail;
	/* Sorted, for a binary search per verification. */
	if (k->nrevoked > 1)
		qsort(k->revoked, k->nrevoked, sizeof(*k->revoked), cti_cmp);
	return 0;
fail:
	sma_keys_free(k);
	return -1;
}

void
sma_keys_free(struct sma_keys *k)
{
	cats_keyring_free(&k->issuers);
	free(k->revoked);
	memset(k, 0, sizeof(*k));
}
