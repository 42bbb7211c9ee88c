/*
 * test_svc.c - the service catalogue: versions, the address index and its
 * specificity rule, authorization lists, fallback parsing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec/json.h"
#include "select/svc.h"
#include "t.h"

static struct cats_dec dec;
static struct cats_rec rec;

static const struct cats_rec *
parse(const char *text)
{
	json_error_t je;
	struct cats_err e;
	json_t *j = json_loads(text, 0, &je);
	if (j == NULL || cats_rec_from_json(&dec, j, &rec, &e) < 0) {
		printf("# bad record: %s\n", text);
		exit(1);
	}
	json_decref(j);
	return &rec;
}

static int
apply(struct cats_svc_cat *c, const char *text, struct cats_err *e)
{
	memset(e, 0, sizeof(*e));
	return cats_svc_apply(c, &parse(text)->u.service, e);
}

/* Which services does a destination map to (as "S1 S2", or "-")? */
static const char *
by_addr(struct cats_svc_cat *c, const char *dst, int dport, int proto,
    const char *tenant, bool *excluded)
{
	static char out[256];
	struct cats_flow f;
	struct cats_svc_match m;
	memset(&f, 0, sizeof(f));
	cats_ip_parse(dst, strlen(dst), &f.dst);
	cats_ip_parse("192.0.2.10", 10, &f.src);
	f.proto = (uint64_t)proto;
	if (dport >= 0)
		CATS_SET(&f, FLOW, dport, (uint64_t)dport);
	cats_svc_by_addr(c, &f, tenant, &m);
	out[0] = '\0';
	for (size_t i = 0; i < m.n; i++) {
		strcat(out, i ? " " : "");
		strcat(out, m.v[i]->cs_id);
	}
	if (m.n == 0)
		strcpy(out, "-");
	if (excluded)
		*excluded = m.tenant_excluded;
	return out;
}

static void
test_catalogue(void)
{
	struct cats_svc_cat *c = cats_svc_cat_new(3);
	struct cats_err e;
	T_OK(apply(c, "{\"type\":\"service\",\"cs_id\":\"S1\",\"version\":2,"
	    "\"addresses\":[{\"addr\":\"192.0.2.100\",\"port\":443,\"proto\":6}],"
	    "\"authorized\":[\"b\",\"a\",\"c\"],\"sites\":[\"s1\"],"
	    "\"constraints\":{\"max_comp_ms\":9,\"exclude_nodes\":[\"P-1\"]},"
	    "\"policy\":\"p2c-gas\",\"fallback\":\"stale:5s,csci:a:1\"}", &e)
	    == 1, "S1 v2 applied");
	const struct cats_svc *s = cats_svc_get(c, "S1");
	T_OK(s && s->version == 2 && s->policy == CATS_POL_P2C_GAS &&
	    s->nauth == 3 && strcmp(s->authorized[0], "a") == 0 &&
	    s->con.max_comp_ms == 9 && s->con.exclude_nodes.n == 1 &&
	    strcmp(s->con.exclude_nodes.v[0], "P-1") == 0,
	    "fields copied, authorized sorted, constraints deep-copied");
	T_OK(s->nfb == 2 && s->fb[0].kind == CATS_FB_STALE &&
	    s->fb[0].ms == 5000 && s->fb[1].kind == CATS_FB_CSCI &&
	    strcmp(s->fb[1].csci, "a:1") == 0 && s->max_stale_ms == 5000 &&
	    cats_svc_max_stale(c) == 5000, "fallback parsed");
	uint64_t g = cats_svc_gen(c);
	T_OK(apply(c, "{\"type\":\"service\",\"cs_id\":\"S1\",\"version\":1}",
	    &e) == 0 && cats_svc_gen(c) == g && cats_svc_get(c, "S1")->version
	    == 2, "an older version is ignored");
	T_OK(apply(c, "{\"type\":\"service\",\"cs_id\":\"S1\",\"version\":3,"
	    "\"policy\":\"fastest\"}", &e) < 0 && strcmp(e.field, "policy") == 0
	    && cats_svc_get(c, "S1")->version == 2,
	    "an unknown policy is refused, the old context stays: %s", e.reason);
	T_OK(apply(c, "{\"type\":\"service\",\"cs_id\":\"S1\",\"version\":3,"
	    "\"fallback\":\"relax:max_delay_us\"}", &e) < 0 &&
	    strcmp(e.field, "fallback") == 0,
	    "relaxing a network constraint is refused: %s", e.reason);
	T_OK(strcmp(by_addr(c, "192.0.2.100", 443, 6, NULL, NULL), "S1") == 0,
	    "192.0.2.100:443/tcp is S1");
	/* S1 v3 moves to another address: the index follows. */
	T_OK(apply(c, "{\"type\":\"service\",\"cs_id\":\"S1\",\"version\":3,"
	    "\"addresses\":[{\"addr\":\"2001:db8::1\"}],\"authorized\":[\"a\"]}",
	    &e) == 1, "S1 v3 (same version again later is applied too)");
	T_OK(strcmp(by_addr(c, "192.0.2.100", 443, 6, NULL, NULL), "-") == 0 &&
	    strcmp(by_addr(c, "2001:db8::1", 1, 17, NULL, NULL), "S1") == 0,
	    "the old address is gone, the new one maps (any port, any protocol)");
	T_OK(cats_svc_get(c, "S1")->nfb == 0 && cats_svc_max_stale(c) == 0,
	    "the new version has no fallback");
	T_OK(apply(c, "{\"type\":\"service\",\"cs_id\":\"S1\",\"version\":3,"
	    "\"authorized\":[\"q\"]}", &e) == 1 && cats_svc_count(c) == 1,
	    "the same version is applied again");
	apply(c, "{\"type\":\"service\",\"cs_id\":\"S2\",\"version\":1}", &e);
	apply(c, "{\"type\":\"service\",\"cs_id\":\"S3\",\"version\":1}", &e);
	T_OK(apply(c, "{\"type\":\"service\",\"cs_id\":\"S4\",\"version\":1}",
	    &e) < 0 && cats_svc_count(c) == 3, "a full catalogue refuses S4");
	cats_svc_cat_free(c);
}

static void
test_addresses(void)
{
	struct cats_svc_cat *c = cats_svc_cat_new(0);
	struct cats_err e;
	bool ex;
	apply(c, "{\"type\":\"service\",\"cs_id\":\"ANY\",\"version\":1,"
	    "\"addresses\":[{\"addr\":\"192.0.2.1\"}]}", &e);
	apply(c, "{\"type\":\"service\",\"cs_id\":\"WEB\",\"version\":1,"
	    "\"addresses\":[{\"addr\":\"192.0.2.1\",\"port\":443,\"proto\":6}]}",
	    &e);
	apply(c, "{\"type\":\"service\",\"cs_id\":\"T1WEB\",\"version\":1,"
	    "\"tenant\":\"t1\",\"addresses\":[{\"addr\":\"192.0.2.1\","
	    "\"port\":443,\"proto\":6}]}", &e);
	apply(c, "{\"type\":\"service\",\"cs_id\":\"DNS\",\"version\":1,"
	    "\"addresses\":[{\"addr\":\"192.0.2.1\",\"port\":53,\"proto\":17},"
	    "{\"addr\":\"192.0.2.2\",\"port\":53,\"proto\":17,"
	    "\"tenant\":\"t2\"}]}", &e);
	apply(c, "{\"type\":\"service\",\"cs_id\":\"DNS2\",\"version\":1,"
	    "\"addresses\":[{\"addr\":\"192.0.2.1\",\"port\":53,\"proto\":17}]}",
	    &e);
	T_OK(strcmp(by_addr(c, "192.0.2.1", 80, 6, NULL, NULL), "ANY") == 0,
	    "port 80: only the address-only entry matches");
	T_OK(strcmp(by_addr(c, "192.0.2.1", 443, 6, NULL, NULL), "WEB") == 0,
	    "443/tcp without tenant: WEB (port+proto beats address only)");
	T_OK(strcmp(by_addr(c, "192.0.2.1", 443, 6, "t1", NULL), "T1WEB") == 0,
	    "443/tcp for t1: T1WEB (a tenant point more)");
	T_OK(strcmp(by_addr(c, "192.0.2.1", 443, 17, NULL, NULL), "ANY") == 0,
	    "443/udp: the protocol must match");
	T_OK(strcmp(by_addr(c, "192.0.2.1", -1, 6, NULL, NULL), "ANY") == 0,
	    "no destination port: port entries do not match");
	T_OK(strcmp(by_addr(c, "192.0.2.1", 53, 17, NULL, NULL), "DNS DNS2") ==
	    0, "53/udp: DNS and DNS2 tie: ambiguous");
	T_OK(strcmp(by_addr(c, "192.0.2.2", 53, 17, "t1", &ex), "-") == 0 && ex,
	    "192.0.2.2 is t2's: t1 gets nothing, and is told");
	T_OK(strcmp(by_addr(c, "192.0.2.2", 53, 17, "t2", &ex), "DNS") == 0 &&
	    !ex, "t2 gets DNS");
	T_OK(strcmp(by_addr(c, "198.51.100.1", 53, 17, NULL, &ex), "-") == 0 &&
	    !ex, "an unknown address maps to nothing");
	cats_svc_cat_free(c);
}

static void
test_authorized(void)
{
	struct cats_svc_cat *c = cats_svc_cat_new(0);
	struct cats_err e;
	apply(c, "{\"type\":\"service\",\"cs_id\":\"N\",\"version\":1}", &e);
	apply(c, "{\"type\":\"service\",\"cs_id\":\"A\",\"version\":1,"
	    "\"authorized\":[\"x\",\"y\"]}", &e);
	apply(c, "{\"type\":\"service\",\"cs_id\":\"S\",\"version\":1,"
	    "\"sites\":[\"s1\"]}", &e);
	apply(c, "{\"type\":\"service\",\"cs_id\":\"B\",\"version\":1,"
	    "\"authorized\":[\"x\"],\"sites\":[\"s1\"]}", &e);
	T_OK(!cats_svc_authorized(cats_svc_get(c, "N"), "x", "s1"),
	    "neither list: nothing is authorized");
	T_OK(cats_svc_authorized(cats_svc_get(c, "A"), "y", NULL) &&
	    !cats_svc_authorized(cats_svc_get(c, "A"), "z", "s1"),
	    "CSCI-ID list only");
	T_OK(cats_svc_authorized(cats_svc_get(c, "S"), "anything", "s1") &&
	    !cats_svc_authorized(cats_svc_get(c, "S"), "x", NULL) &&
	    !cats_svc_authorized(cats_svc_get(c, "S"), "x", "s2"),
	    "site list only (no site: not authorized)");
	T_OK(cats_svc_authorized(cats_svc_get(c, "B"), "x", "s1") &&
	    !cats_svc_authorized(cats_svc_get(c, "B"), "x", "s2") &&
	    !cats_svc_authorized(cats_svc_get(c, "B"), "y", "s1"),
	    "both lists must agree");
	cats_svc_cat_free(c);
}

static void
test_fallback_parse(void)
{
	struct cats_fb_term v[CATS_FB_MAX];
	size_t n;
	struct cats_err e;
	T_OK(cats_fb_parse("none", v, &n, &e) == 0 && n == 0, "none");
	T_OK(cats_fb_parse("relax:max_price+min_security", v, &n, &e) == 0 &&
	    n == 1 && v[0].relax == ((UINT64_C(1) << CATS_CON_max_price) |
	    (UINT64_C(1) << CATS_CON_min_security)), "relax: two fields");
	const char *bad[] = { "stale", "stale:", "stale:0", "stale:2x",
	    "stale:2d", "relax:", "relax:max_price+", "relax:min_bw",
	    "nearest:1", "csci:", ":x",
	    "stale:1s,stale:1s,stale:1s,stale:1s,stale:1s" };
	for (size_t i = 0; i < CATS_ARRAY_LEN(bad); i++) {
		memset(&e, 0, sizeof(e));
		T_OK(cats_fb_parse(bad[i], v, &n, &e) < 0 && n == 0,
		    "\"%s\" refused: %s", bad[i], e.reason);
	}
	T_OK(cats_fb_parse("csci:a,stale:1h", v, &n, &e) == 0 && n == 2 &&
	    v[1].ms == 3600000, "two terms");
	free(v[0].csci);
	T_OK(cats_fb_parse("csci:a,bogus:1", v, &n, &e) < 0 && n == 0,
	    "a bad second term frees the first");
}

int
main(void)
{
	cats_dec_init(&dec, NULL);
	test_catalogue();
	test_addresses();
	test_authorized();
	test_fallback_parse();
	cats_dec_free(&dec);
	return t_done();
}
