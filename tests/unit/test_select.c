/*
 * test_select.c - the selector: policy statistics and determinism,
 * authentication, replay windows, admission limits, constraint merging, and
 * that nothing in a request reaches outside the authorized candidates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec/json.h"
#include "base/log.h"
#include "select/select.h"
#include "t.h"

#define T0 UINT64_C(1764460800000)

static struct cats_dec dec;
static struct cats_rec rec;

struct world {
	struct cats_svc_cat *cat;
	struct cats_cst *cst;
	struct cats_nst_rec *nrec;
	struct cats_nst nst;
	struct cats_sel *sel;
	struct cats_sel_out out;
};

static const struct cats_rec *
parse(const char *text)
{
	json_error_t je;
	struct cats_err e;
	json_t *j = json_loads(text, 0, &je);
	if (j == NULL || cats_rec_from_json(&dec, j, &rec, &e) < 0) {
		printf("# bad record (%s: %s): %s\n", e.field, e.reason, text);
		exit(1);
	}
	json_decref(j);
	return &rec;
}

/* Feed a service, metric or net record at time now. */
static void
feed_at(struct world *w, const char *text, uint64_t now)
{
	const struct cats_rec *r = parse(text);
	struct cats_err e;
	struct cats_cst_result res;
	if (r->type == CATS_T_SERVICE && cats_svc_apply(w->cat, &r->u.service,
	    &e) < 0)
		printf("# service refused: %s\n", e.reason);
	if (r->type == CATS_T_METRIC)
		cats_cst_apply(w->cst, &r->u.metric, now, &res);
	if (r->type == CATS_T_NET)
		cats_nst_rec_apply(w->nrec, &r->u.net, now, &e);
}

static void
feed(struct world *w, const char *text)
{
	feed_at(w, text, T0);
}

/* The three instances of the bats base (cases.txt). */
static const char *const base[] = {
	"{\"type\":\"service\",\"cs_id\":\"S1\",\"version\":1,\"tenant\":\"t1\","
	"\"addresses\":[{\"addr\":\"192.0.2.100\",\"port\":443,\"proto\":6}],"
	"\"authorized\":[\"A\",\"B\",\"C\"],\"constraints\":{\"max_delay_us\":"
	"20000,\"exclude_nodes\":[\"P-1\",\"P-2\"],\"include_any\":6},"
	"\"policy\":\"p2c-gas\",\"dataplane\":\"srv6\"}",
	"{\"type\":\"service\",\"cs_id\":\"S2\",\"version\":1,\"addresses\":"
	"[{\"addr\":\"192.0.2.200\"}],\"sites\":[\"site2\"]}",
	"{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":\"m1\",\"epoch\":1,"
	"\"seq\":1,\"ts\":1764460800000,\"site\":\"site1\",\"egress\":\"EF-1\","
	"\"ttl_ms\":3600000,\"entries\":[{\"csci_id\":\"A\",\"cs_id\":\"S1\","
	"\"health\":\"HEALTHY\",\"gas\":400,\"comp_time_ms\":5,\"price\":20,"
	"\"locator\":\"198.51.100.11\"},{\"csci_id\":\"X\",\"cs_id\":\"S1\","
	"\"health\":\"HEALTHY\",\"gas\":9000,\"comp_time_ms\":0,\"price\":0,"
	"\"locator\":\"203.0.113.66\"}]}",
	"{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":\"m2\",\"epoch\":1,"
	"\"seq\":1,\"ts\":1764460800000,\"site\":\"site2\",\"egress\":\"EF-2\","
	"\"ttl_ms\":3600000,\"entries\":[{\"csci_id\":\"B\",\"cs_id\":\"S1\","
	"\"health\":\"HEALTHY\",\"gas\":100,\"comp_time_ms\":2,\"price\":30,"
	"\"locator\":\"198.51.100.21\"},{\"csci_id\":\"D\",\"cs_id\":\"S2\","
	"\"health\":\"HEALTHY\",\"gas\":1,\"comp_time_ms\":1,"
	"\"locator\":\"198.51.100.22\"}]}",
	"{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":\"m3\",\"epoch\":1,"
	"\"seq\":1,\"ts\":1764460800000,\"site\":\"site3\",\"egress\":\"EF-3\","
	"\"ttl_ms\":3600000,\"entries\":[{\"csci_id\":\"C\",\"cs_id\":\"S1\","
	"\"health\":\"HEALTHY\",\"gas\":600,\"comp_time_ms\":8,\"price\":10,"
	"\"locator\":\"198.51.100.31\"},{\"csci_id\":\"X\",\"cs_id\":\"S2\","
	"\"health\":\"HEALTHY\",\"gas\":9000,\"comp_time_ms\":0,"
	"\"locator\":\"203.0.113.66\"}]}",
	"{\"type\":\"net\",\"scope\":\"path\",\"ts\":1764460800000,\"ttl_ms\":"
	"3600000,\"src\":\"IF-1\",\"dst\":\"EF-1\",\"delay_us\":6000}",
	"{\"type\":\"net\",\"scope\":\"path\",\"ts\":1764460800000,\"ttl_ms\":"
	"3600000,\"src\":\"IF-1\",\"dst\":\"EF-2\",\"delay_us\":4100}",
	"{\"type\":\"net\",\"scope\":\"path\",\"ts\":1764460800000,\"ttl_ms\":"
	"3600000,\"src\":\"IF-1\",\"dst\":\"EF-3\",\"delay_us\":12000}",
};

static void
world_init(struct world *w, const struct cats_sel_conf *conf)
{
	memset(w, 0, sizeof(*w));
	w->cat = cats_svc_cat_new(0);
	w->cst = cats_cst_new(60000, 0);
	w->nrec = cats_nst_rec_new(60000, 0);
	cats_nst_init(&w->nst);
	cats_nst_add(&w->nst, &cats_nst_rec_provider, w->nrec);
	for (size_t i = 0; i < CATS_ARRAY_LEN(base); i++)
		feed(w, base[i]);
	w->sel = cats_sel_new(conf, w->cat, w->cst, &w->nst);
}

static void
world_free(struct world *w)
{
	cats_sel_free(w->sel);
	cats_nst_free(&w->nst);
	cats_cst_free(w->cst);
	cats_svc_cat_free(w->cat);
}

/* A request record: the template with printf-style extras appended. */
static struct cats_rec req;
static struct cats_dec reqdec;

static const struct cats_rec *
request(uint64_t txn, uint64_t ts, const char *extra)
{
	char text[2048];
	snprintf(text, sizeof(text), "{\"type\":\"request\",\"txn\":%llu,"
	    "\"ingress\":\"IF-1\",\"ts\":%llu,\"gen\":1,\"tenant\":\"t1\","
	    "\"flow\":{\"proto\":6,\"src\":\"192.0.2.10\",\"sport\":5000,"
	    "\"dst\":\"192.0.2.100\",\"dport\":443}%s%s}",
	    (unsigned long long)txn, (unsigned long long)ts, extra ? "," : "",
	    extra ? extra : "");
	json_error_t je;
	struct cats_err e = { 0 };
	json_t *j = json_loads(text, 0, &je);
	if (j == NULL || cats_rec_from_json(&reqdec, j, &req, &e) < 0) {
		printf("# bad request (%s: %s): %s\n", e.field, e.reason, text);
		exit(1);
	}
	json_decref(j);
	return &req;
}

static int
decide(struct world *w, uint64_t txn, uint64_t ts, const char *extra)
{
	return cats_sel_request(w->sel, request(txn, ts, extra), NULL, ts,
	    &w->out);
}

static const char *
chosen(const struct world *w)
{
	return w->out.code == CATS_SEL_OK ? w->out.rec.u.preq.decision.csci_id
	    : cats_sel_code_names[w->out.code];
}

static void
test_p2c_distribution(void)
{
	struct cats_sel_conf conf;
	struct world w;
	cats_sel_conf_init(&conf);
	conf.insecure = true;
	world_init(&w, &conf);
	int a = 0, b = 0, c = 0, other = 0, n = 6000;
	for (int i = 0; i < n; i++) {
		decide(&w, (uint64_t)i + 1, T0 + 1000, NULL);
		const char *x = chosen(&w);
		a += strcmp(x, "A") == 0;
		b += strcmp(x, "B") == 0;
		c += strcmp(x, "C") == 0;
		other += x[1] != '\0';
	}
	/*
	 * GAS 400/100/600, latency 11000/6100/20000.  B wins when drawn:
	 * P(B in the pair) = 1 - P({A,C}) = 1 - (400/1100 * 600/700 +
	 * 600/1100 * 400/500) = 0.2519; A wins otherwise; C never.
	 */
	double pa = (double)a / n, pb = (double)b / n;
	T_OK(other == 0, "every request decided (%d failed)", other);
	T_OK(c == 0, "C (worst latency) is never chosen (%d)", c);
	T_OK(pb > 0.2519 - 0.025 && pb < 0.2519 + 0.025,
	    "B chosen with p = %.4f (expected 0.2519)", pb);
	T_OK(pa > 0.7481 - 0.025 && pa < 0.7481 + 0.025,
	    "A chosen with p = %.4f (expected 0.7481)", pa);
	T_OK(strcmp(w.out.rec.u.preq.decision.policy, "p2c-gas") == 0,
	    "the decision names the policy");
	world_free(&w);
}

static void
test_tiebreak(void)
{
	struct cats_sel_conf conf;
	struct world w1, w2;
	cats_sel_conf_init(&conf);
	conf.insecure = true;
	conf.seed = 11;
	world_init(&w1, &conf);
	conf.seed = 12;
	world_init(&w2, &conf);
	/* Twin instances (same latency and GAS) under min-latency. */
	const char *twins[] = {
		"{\"type\":\"service\",\"cs_id\":\"S1\",\"version\":2,"
		"\"tenant\":\"t1\",\"addresses\":[{\"addr\":\"192.0.2.100\"}],"
		"\"authorized\":[\"T1\",\"T2\"],\"policy\":\"min-latency\"}",
		"{\"type\":\"metric\",\"op\":\"delta\",\"sma_id\":\"m1\","
		"\"epoch\":1,\"seq\":2,\"ts\":1764460800000,\"egress\":\"EF-1\","
		"\"entries\":[{\"csci_id\":\"T1\",\"cs_id\":\"S1\",\"health\":"
		"\"HEALTHY\",\"gas\":5,\"comp_time_ms\":1,\"locator\":\"192.0.2.7\"},"
		"{\"csci_id\":\"T2\",\"cs_id\":\"S1\",\"health\":\"HEALTHY\","
		"\"gas\":5,\"comp_time_ms\":1,\"locator\":\"192.0.2.8\"}]}",
	};
	for (size_t i = 0; i < 2; i++) {
		feed(&w1, twins[i]);
		feed(&w2, twins[i]);
	}
	int t1 = 0, n = 4000, same_seed = 1, diff = 0;
	char first[4000];
	for (int i = 0; i < n; i++) {
		decide(&w1, (uint64_t)i + 1, T0 + 1000, NULL);
		first[i] = chosen(&w1)[1];
		t1 += first[i] == '1';
		decide(&w2, (uint64_t)i + 1, T0 + 1000, NULL);
		diff += chosen(&w2)[1] != first[i];
	}
	T_OK(t1 > n * 45 / 100 && t1 < n * 55 / 100,
	    "ties split evenly: T1 %d of %d", t1, n);
	T_OK(diff > n / 4, "another seed breaks ties differently (%d of %d)",
	    diff, n);
	/*
	 * The same seed and transaction give the same choice, in any order
	 * (each request its own generation, or the txn window refuses them).
	 */
	struct world w3;
	conf.seed = 11;
	world_init(&w3, &conf);
	for (size_t i = 0; i < 2; i++)
		feed(&w3, twins[i]);
	for (int i = n - 1; i >= 0; i--) {
		char gen[32];
		snprintf(gen, sizeof(gen), "\"gen\":%d", n - i);
		decide(&w3, (uint64_t)i + 1, T0 + 1000, gen);
		same_seed &= chosen(&w3)[1] == first[i];
	}
	T_OK(same_seed, "a replay in reverse order reproduces every choice");
	world_free(&w1);
	world_free(&w2);
	world_free(&w3);
}

static void
test_auth(void)
{
	struct cats_keyring kr = { 0 };
	struct cats_key k1, k2, k3;
	cats_key_gen_psk(&k1, "IF-1");
	cats_key_gen_psk(&k2, "IF-2");
	cats_key_gen_psk(&k3, "IF-1");	/* not in the ring */
	kr.v = calloc(2, sizeof(*kr.v));
	kr.v[0] = k1;
	kr.v[1] = k2;
	kr.n = 2;
	struct cats_sel_conf conf;
	struct world w;
	cats_sel_conf_init(&conf);
	conf.keys = &kr;
	world_init(&w, &conf);
	T_OK(cats_sel_forwarder(w.sel, "IF-1", true, 1001, NULL, 0) == 0,
	    "IF-1 trusted as uid 1001");
	struct cats_sel_origin unixo = { .peercred = true, .uid = 1001 };
	struct cats_sel_origin other = { .peercred = true, .uid = 1002 };
	struct cats_rec r;

	r = *request(1, T0 + 10, NULL);
	cats_rec_sign(&r, &k1);
	T_OK(cats_sel_request(w.sel, &r, NULL, T0 + 10, &w.out) == CATS_SEL_OK,
	    "MAC by IF-1's key: accepted");
	r = *request(2, T0 + 10, NULL);
	T_OK(cats_sel_request(w.sel, &r, NULL, T0 + 10, &w.out) ==
	    CATS_SEL_UNAUTHENTICATED && !w.out.routable &&
	    w.out.rec.u.error.ingress == NULL,
	    "no MAC on a stream: unauthenticated, not routable");
	T_OK(cats_sel_request(w.sel, &r, &unixo, T0 + 10, &w.out) ==
	    CATS_SEL_OK, "no MAC, unix peer uid 1001 = IF-1's: accepted");
	r = *request(3, T0 + 10, NULL);
	T_OK(cats_sel_request(w.sel, &r, &other, T0 + 10, &w.out) ==
	    CATS_SEL_UNAUTHENTICATED, "another uid: unauthenticated (%s)",
	    w.out.msg);
	r = *request(4, T0 + 10, NULL);
	cats_rec_sign(&r, &k2);
	T_OK(cats_sel_request(w.sel, &r, &unixo, T0 + 10, &w.out) ==
	    CATS_SEL_UNAUTHORIZED && !w.out.routable,
	    "IF-2's key for ingress IF-1: unauthorized, and the error does not "
	    "go to IF-1 (%s)", w.out.msg);
	r = *request(5, T0 + 10, NULL);
	cats_rec_sign(&r, &k3);
	T_OK(cats_sel_request(w.sel, &r, &unixo, T0 + 10, &w.out) ==
	    CATS_SEL_UNAUTHENTICATED, "an unknown key, even from the trusted "
	    "uid: unauthenticated (%s)", w.out.msg);
	r = *request(6, T0 + 10, NULL);
	cats_rec_sign(&r, &k1);
	r.u.request.txn = 7;	/* tampered after signing */
	T_OK(cats_sel_request(w.sel, &r, NULL, T0 + 10, &w.out) ==
	    CATS_SEL_UNAUTHENTICATED, "a tampered record: %s", w.out.msg);
	world_free(&w);
	free(kr.v);
}

static void
test_replay_window(void)
{
	struct cats_sel_conf conf;
	struct world w;
	cats_sel_conf_init(&conf);
	conf.insecure = true;
	world_init(&w, &conf);
	uint64_t now = T0 + 1000;
	T_OK(decide(&w, 100, now, NULL) == CATS_SEL_OK, "txn 100");
	T_OK(decide(&w, 90, now, NULL) == CATS_SEL_OK, "txn 90 (reordered, "
	    "within 64)");
	T_OK(decide(&w, 90, now, NULL) == CATS_SEL_REPLAY, "txn 90 again");
	T_OK(decide(&w, 100, now, NULL) == CATS_SEL_REPLAY, "txn 100 again");
	T_OK(decide(&w, 36, now, NULL) == CATS_SEL_REPLAY,
	    "txn 36: 64 behind the newest, outside the window");
	T_OK(decide(&w, 37, now, NULL) == CATS_SEL_OK, "txn 37: 63 behind");
	T_OK(decide(&w, 500, now, NULL) == CATS_SEL_OK &&
	    decide(&w, 99, now, NULL) == CATS_SEL_REPLAY,
	    "a jump forward slides the window");
	T_OK(decide(&w, 100, now, "\"gen\":2") == CATS_SEL_OK,
	    "a new generation starts afresh");
	T_OK(decide(&w, 101, now, "\"gen\":1") == CATS_SEL_STALE_GEN,
	    "the old generation is refused");
	T_OK(decide(&w, 102, now - 30001, "\"gen\":2") == CATS_SEL_OK,
	    "decide() passes ts as now, so no window here");
	T_OK(cats_sel_request(w.sel, request(103, now - 30001, "\"gen\":2"),
	    NULL, now, &w.out) == CATS_SEL_REPLAY &&
	    cats_sel_request(w.sel, request(104, now + 30000, "\"gen\":2"),
	    NULL, now, &w.out) == CATS_SEL_OK,
	    "timestamps: 30001 ms old refused, 30000 ms ahead accepted");
	world_free(&w);
}

static void
test_limits(void)
{
	struct cats_sel_conf conf;
	struct world w;
	cats_sel_conf_init(&conf);
	conf.insecure = true;
	conf.rate_global.per_s = 2;
	conf.rate_global.burst = 2;
	conf.rate_tenant.per_s = 1000;
	conf.rate_tenant.burst = 1000;
	world_init(&w, &conf);
	uint64_t now = T0 + 1000;
	int ok = 0;
	for (int i = 0; i < 3; i++)
		ok += decide(&w, (uint64_t)i + 1, now, NULL) == CATS_SEL_OK;
	T_OK(ok == 2 && w.out.code == CATS_SEL_RATE, "burst 2: the third "
	    "request in the same ms is refused");
	T_OK(decide(&w, 10, now + 499, NULL) == CATS_SEL_RATE,
	    "499 ms later: not a whole token yet");
	T_OK(decide(&w, 11, now + 500, NULL) == CATS_SEL_OK,
	    "500 ms later at 2/s: one more");
	world_free(&w);

	/* Client buckets: 65536 tracked at most; idle ones are forgotten. */
	cats_sel_conf_init(&conf);
	conf.insecure = true;
	conf.window_ms = 0;
	conf.rate_client.per_s = 1;
	conf.rate_client.burst = 1;
	world_init(&w, &conf);
	struct cats_rec q = *request(1, now, NULL);
	int admitted = 0;
	for (uint32_t i = 0; i < 65536; i++) {
		q.u.request.txn = i + 1;
		q.u.request.flow.src.a[2] = (uint8_t)(i >> 8);
		q.u.request.flow.src.a[3] = (uint8_t)i;
		q.u.request.flow.src.a[1] = 1;
		admitted += cats_sel_request(w.sel, &q, NULL, now, &w.out) ==
		    CATS_SEL_OK;
	}
	q.u.request.flow.src.a[1] = 2;
	q.u.request.txn = 70000;
	int full = cats_sel_request(w.sel, &q, NULL, now, &w.out);
	q.u.request.txn = 70001;
	int later = cats_sel_request(w.sel, &q, NULL, now + 1000, &w.out);
	T_OK(admitted == 65536 && full == CATS_SEL_RATE && later == CATS_SEL_OK,
	    "65536 clients fill the table; a new one is refused while they are "
	    "busy and admitted once they are idle (%d admitted)", admitted);
	world_free(&w);
}

static void
test_constraints_and_records(void)
{
	struct cats_sel_conf conf;
	struct world w;
	struct cats_err e;
	cats_sel_conf_init(&conf);
	conf.insecure = true;
	conf.domain = "core";
	world_init(&w, &conf);
	decide(&w, 1, T0 + 1000, "\"constraints\":{\"max_delay_us\":900000,"
	    "\"min_bw\":5,\"exclude_nodes\":[\"P-2\",\"P-3\"],\"include_any\":3,"
	    "\"max_comp_ms\":7,\"metric\":\"delay\"},\"deadline\":1764460802000");
	const struct cats_path_req *p = &w.out.rec.u.preq;
	T_OK(w.out.code == CATS_SEL_OK, "decided: %s", chosen(&w));
	T_OK(p->constraints.max_delay_us == 20000,
	    "the service's max_delay_us stands against 900000");
	T_OK(p->constraints.exclude_nodes.n == 3 && CATS_HAS(&p->constraints,
	    CON, min_bw) && p->constraints.include_any == 2 &&
	    p->constraints.metric == CATS_METRIC_DELAY,
	    "exclusions united, include_any 6 & 3 = 2, min_bw and metric kept");
	T_OK(!CATS_HAS(&p->constraints, CON, max_comp_ms),
	    "computing constraints are not passed to the PCE");
	T_OK(strcmp(p->headend, "IF-1") == 0 && strcmp(p->domain, "core") == 0
	    && p->dataplane == CATS_DP_SRV6 && p->deadline == T0 + 2000 &&
	    p->decision.ts == T0 + 1000, "headend, domain, data plane, deadline");
	T_OK(cats_rec_validate(&w.out.rec, &e) == 0, "the path-req is valid: %s",
	    e.reason);

	/* Long multibyte names: an error message truncated on a character. */
	char name[200], text[1024];
	name[0] = '\0';
	for (int i = 0; i < 42; i++)
		strcat(name, "\xe2\x82\xac");	/* the euro sign, 3 bytes */
	snprintf(text, sizeof(text), "{\"type\":\"service\",\"cs_id\":\"%s\","
	    "\"version\":1,\"tenant\":\"%s\",\"authorized\":[\"A\"]}", name,
	    name);
	feed(&w, text);
	snprintf(text, sizeof(text), "\"cs_id\":\"%s\",\"tenant\":\"%sx\","
	    "\"flow\":{\"proto\":6,\"src\":\"192.0.2.10\",\"dst\":"
	    "\"192.0.2.99\",\"tenant\":\"%sx\"}", name, name, name);
	T_OK(decide(&w, 2, T0 + 1000, text) == CATS_SEL_TENANT,
	    "tenant mismatch with long names");
	T_OK(strlen(w.out.msg) < 256 && cats_rec_validate(&w.out.rec, &e) == 0,
	    "the truncated message is valid UTF-8: %s", e.reason);
	struct cats_err bad;
	cats_err_set(&bad, "flow.dst", "not an address");
	cats_sel_malformed(w.sel, &bad, 17, true, 42, T0, &w.out);
	T_OK(w.out.code == CATS_SEL_MALFORMED &&
	    w.out.rec.u.error.index == 17 && w.out.rec.u.error.txn == 42 &&
	    cats_rec_validate(&w.out.rec, &e) == 0,
	    "a malformed request's error names index, txn and field");
	world_free(&w);
}

/*
 * Whatever a request says (CS-ID, constraints, tenant, destination), a
 * decision only ever names a candidate authorized for the resolved service,
 * with the CST's own locator.
 */
static void
test_never_unauthorized(void)
{
	struct cats_sel_conf conf;
	struct world w;
	cats_sel_conf_init(&conf);
	conf.insecure = true;
	conf.precedence = CATS_PREC_EXPLICIT;
	world_init(&w, &conf);
	const char *ids[] = { "S1", "S2", "S9", NULL };
	const char *dsts[] = { "192.0.2.100", "192.0.2.200", "203.0.113.66" };
	const char *tenants[] = { "t1", "t2", NULL };
	uint64_t st = 99;
	int decisions = 0, violations = 0;
	for (int i = 0; i < 3000; i++) {
		char extra[512];
		uint64_t r = cats_mix64(st++);
		const char *cs = ids[r % 4];
		const char *dst = dsts[(r >> 8) % 3];
		const char *ten = tenants[(r >> 16) % 3];
		snprintf(extra, sizeof(extra), "\"gen\":%d%s%s%s%s%s%s"
		    ",\"flow\":{\"proto\":6,\"src\":\"192.0.2.10\",\"dst\":"
		    "\"%s\",\"dport\":443},\"constraints\":{\"max_delay_us\":%llu,"
		    "\"max_price\":%llu}", 1, cs ? ",\"cs_id\":\"" : "",
		    cs ? cs : "", cs ? "\"" : "", ten ? ",\"tenant\":\"" : "",
		    ten ? ten : "", ten ? "\"" : "", dst,
		    (unsigned long long)((r >> 24) % 30000),
		    (unsigned long long)((r >> 40) % 40));
		/* Drop the template's tenant when ten is NULL. */
		const struct cats_rec *q = request((uint64_t)i + 1, T0 + 1000,
		    extra);
		struct cats_rec copy = *q;
		if (ten == NULL)
			copy.u.request.tenant = NULL;
		if (cats_sel_request(w.sel, &copy, NULL, T0 + 1000, &w.out) !=
		    CATS_SEL_OK)
			continue;
		decisions++;
		const struct cats_decision *d = &w.out.rec.u.preq.decision;
		const struct cats_svc *s = cats_svc_get(w.cat, d->cs_id);
		const struct cats_cst_entry *e = cats_cst_get(w.cst, d->cs_id,
		    d->csci_id);
		if (s == NULL || e == NULL || !cats_svc_authorized(s,
		    d->csci_id, e->site) || !cats_ip_eq(&e->locator,
		    &d->locator) || strcmp(d->csci_id, "X") == 0)
			violations++;
	}
	T_OK(decisions > 100, "%d of 3000 random requests decided", decisions);
	T_OK(violations == 0, "no decision outside the authorized candidates "
	    "(%d)", violations);
	world_free(&w);
}

/*
 * The eligibility cache changes no answer: two worlds fed the same random
 * stream of requests, metric updates, path updates and clock steps (past
 * soft-state expiry too), one with the cache and one without, answer alike.
 */
static void
test_cache_equivalence(void)
{
	struct cats_sel_conf conf;
	struct world a, b, c;
	cats_sel_conf_init(&conf);
	conf.insecure = true;
	conf.window_ms = 0;
	world_init(&a, &conf);
	conf.cache_max = 2;	/* evicts all the time */
	world_init(&c, &conf);
	conf.no_cache = true;
	world_init(&b, &conf);
	const char *cands[] = { "A", "B", "C" };
	const char *sites[] = { "EF-1", "EF-2", "EF-3" };
	const char *smas[] = { "m1", "m2", "m3" };
	uint64_t seq[3] = { 1, 1, 1 }, ngen = 1, now = T0 + 1000, st = 5;
	int same = 1, hits = 0, n = 4000, fails = 0;
	char text[1024];
	for (int i = 0; i < n; i++) {
		uint64_t r = cats_mix64(st++);
		int what = (int)(r % 10);
		if (what == 0) {
			int k = (int)((r >> 8) % 3);
			snprintf(text, sizeof(text), "{\"type\":\"metric\","
			    "\"op\":\"delta\",\"sma_id\":\"%s\",\"epoch\":1,"
			    "\"seq\":%llu,\"ts\":%llu,\"ttl_ms\":%llu,"
			    "\"entries\":[{\"csci_id\":\"%s\",\"cs_id\":\"S1\","
			    "\"health\":\"%s\",\"gas\":%llu,\"comp_time_ms\":"
			    "%llu}]}", smas[k], (unsigned long long)++seq[k],
			    (unsigned long long)now,
			    (unsigned long long)(2000 + (r >> 16) % 20000),
			    cands[k], (r >> 24) % 5 ? "HEALTHY" : "UNHEALTHY",
			    (unsigned long long)((r >> 28) % 4 * 100),
			    (unsigned long long)((r >> 32) % 10));
			feed_at(&a, text, now);
			feed_at(&b, text, now);
			feed_at(&c, text, now);
		} else if (what == 1) {
			snprintf(text, sizeof(text), "{\"type\":\"net\","
			    "\"scope\":\"path\",\"ts\":%llu,\"gen\":%llu,"
			    "\"ttl_ms\":%llu,\"src\":\"IF-%d\",\"dst\":\"%s\","
			    "\"delay_us\":%llu,\"up\":%s}",
			    (unsigned long long)now, (unsigned long long)++ngen,
			    (unsigned long long)(2000 + (r >> 16) % 20000),
			    1 + (int)((r >> 8) % 2), sites[(r >> 12) % 3],
			    (unsigned long long)((r >> 24) % 15000),
			    (r >> 40) % 6 ? "true" : "false");
			feed_at(&a, text, now);
			feed_at(&b, text, now);
			feed_at(&c, text, now);
		} else if (what == 2) {
			now += (r >> 8) % 1500;
		} else if (what == 3 && (r >> 8) % 4 == 0) {
			/* A new service version authorizes a subset. */
			static const char *const subsets[] = {
				"\"A\",\"B\",\"C\"",
				"\"A\",\"C\"",
				"\"B\"",
				"\"C\",\"B\"",
			};
			snprintf(text, sizeof(text), "{\"type\":\"service\","
			    "\"cs_id\":\"S1\",\"version\":%d,\"tenant\":\"t1\","
			    "\"addresses\":[{\"addr\":\"192.0.2.100\"}],"
			    "\"authorized\":[%s],\"policy\":\"%s\"}", 10 + i,
			    subsets[(r >> 12) % 4], (r >> 16) % 2 ? "p2c-gas" :
			    "min-latency");
			feed_at(&a, text, now);
			feed_at(&b, text, now);
			feed_at(&c, text, now);
		} else {
			const char *ing = (r >> 8) % 3 ? "IF-1" : "IF-2";
			char extra[256];
			snprintf(extra, sizeof(extra), "\"ingress\":\"%s\"%s",
			    ing, (r >> 12) % 4 == 0 ?
			    ",\"constraints\":{\"max_delay_us\":7000}" : "");
			struct cats_rec q = *request((uint64_t)i + 1, now, extra);
			int ca = cats_sel_request(a.sel, &q, NULL, now, &a.out);
			q = *request((uint64_t)i + 1, now, extra);
			int cb = cats_sel_request(b.sel, &q, NULL, now, &b.out);
			q = *request((uint64_t)i + 1, now, extra);
			int cc = cats_sel_request(c.sel, &q, NULL, now, &c.out);
			fails += ca != CATS_SEL_OK;
			if (cc != cb || strcmp(chosen(&c), chosen(&b)) != 0)
				same = 0;
			if (ca != cb || strcmp(chosen(&a), chosen(&b)) != 0 ||
			    (ca != CATS_SEL_OK && strcmp(a.out.msg, b.out.msg)
			    != 0) || (ca == CATS_SEL_OK &&
			    a.out.rec.u.preq.decision.cost_us !=
			    b.out.rec.u.preq.decision.cost_us)) {
				if (same)
					printf("# step %d: %s (%s) vs %s (%s)\n", i,
					    chosen(&a), a.out.msg, chosen(&b),
					    b.out.msg);
				same = 0;
			}
		}
	}
	hits = (int)cats_sel_counters(a.sel)->cache_hits;
	T_OK(same, "with the cache, a 2-entry cache and none, every answer is "
	    "the same");
	T_OK(hits > 100 && fails > 100 && fails < n / 2,
	    "the cache was used (%d hits), and answers varied (%d failures)",
	    hits, fails);
	T_OK(cats_sel_counters(b.sel)->cache_hits == 0,
	    "no_cache means no hits");
	world_free(&a);
	world_free(&b);
	world_free(&c);
}

/* The tie key of select.c: seeded by the ingress and the transaction. */
static uint64_t
ref_key(const char *ingress, uint64_t txn, const char *csci)
{
	uint64_t seed = cats_mix64(0 ^ cats_mix64(cats_fnv1a(ingress) ^
	    cats_mix64(txn)));
	return cats_mix64(seed ^ cats_fnv1a(csci));
}

/*
 * min-latency and cheapest against a plain reference, on candidates made
 * to tie often (few distinct delays, GAS, computing times and prices): the
 * best by latency, more GAS, then the lowest tie key (cheapest: the lower
 * price first), whether the cache answers or not.
 */
static void
test_ranking_reference(void)
{
	struct cats_sel_conf conf;
	struct world w[2];
	cats_sel_conf_init(&conf);
	conf.insecure = true;
	conf.window_ms = 0;
	world_init(&w[0], &conf);
	conf.no_cache = true;
	world_init(&w[1], &conf);
	enum { NC = 12 };
	uint64_t delay[4], gas[NC], comp[NC], price[NC], st = 77, txn = 0;
	char text[4096];
	int wrong = 0, rounds = 300, ties = 0;
	for (int round = 0; round < rounds; round++) {
		bool cheap = round % 2;
		for (int k = 0; k < 4; k++) {
			delay[k] = 1000 * (1 + cats_mix64(st++) % 2);
			snprintf(text, sizeof(text), "{\"type\":\"net\","
			    "\"scope\":\"path\",\"ts\":%llu,\"src\":\"IF-1\","
			    "\"dst\":\"EQ-%d\",\"delay_us\":%llu}",
			    (unsigned long long)(T0 + round), k,
			    (unsigned long long)delay[k]);
			for (int i = 0; i < 2; i++)
				feed_at(&w[i], text, T0 + round);
		}
		snprintf(text, sizeof(text), "{\"type\":\"service\","
		    "\"cs_id\":\"S9\",\"version\":%d,\"tenant\":\"t1\","
		    "\"addresses\":[{\"addr\":\"192.0.2.90\"}],\"authorized\":"
		    "[\"K0\",\"K1\",\"K2\",\"K3\",\"K4\",\"K5\",\"K6\",\"K7\","
		    "\"K8\",\"K9\",\"K10\",\"K11\"],\"policy\":\"%s\"}",
		    round + 1, cheap ? "cheapest" : "min-latency");
		for (int i = 0; i < 2; i++)
			feed_at(&w[i], text, T0 + round);
		size_t off = (size_t)snprintf(text, sizeof(text),
		    "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":\"m9\","
		    "\"epoch\":1,\"seq\":%d,\"ts\":%llu,\"site\":\"s9\","
		    "\"ttl_ms\":3600000,\"entries\":[", round + 1,
		    (unsigned long long)(T0 + round));
		for (int c = 0; c < NC; c++) {
			uint64_t r = cats_mix64(st++);
			gas[c] = 100 * (1 + r % 2);
			comp[c] = 1 + (r >> 8) % 2;
			price[c] = 10 * (1 + (r >> 16) % 2);
			off += (size_t)snprintf(text + off, sizeof(text) - off,
			    "%s{\"csci_id\":\"K%d\",\"cs_id\":\"S9\","
			    "\"health\":\"HEALTHY\",\"gas\":%llu,"
			    "\"comp_time_ms\":%llu,\"price\":%llu,\"locator\":"
			    "\"198.51.100.%d\",\"egress\":\"EQ-%d\"}",
			    c ? "," : "", c, (unsigned long long)gas[c],
			    (unsigned long long)comp[c],
			    (unsigned long long)price[c], c + 1, c % 4);
		}
		snprintf(text + off, sizeof(text) - off, "]}");
		for (int i = 0; i < 2; i++)
			feed_at(&w[i], text, T0 + round);
		for (int q = 0; q < 4; q++) {
			txn++;
			int best = -1, tied = 0;
			uint64_t bl = 0, bk = 0;
			for (int c = 0; c < NC; c++) {
				char id[16];
				snprintf(id, sizeof(id), "K%d", c);
				uint64_t l = delay[c % 4] + comp[c] * 1000;
				uint64_t k = ref_key("IF-1", txn, id);
				int cmp = 0;
				if (best >= 0 && cheap && price[c] != price[best])
					cmp = price[c] < price[best] ? -1 : 1;
				else if (best >= 0 && l != bl)
					cmp = l < bl ? -1 : 1;
				else if (best >= 0 && gas[c] != gas[best])
					cmp = gas[c] > gas[best] ? -1 : 1;
				else if (best >= 0)
					tied++, cmp = k < bk ? -1 : 1;
				if (best < 0 || cmp < 0) {
					best = c;
					bl = l;
					bk = k;
				}
			}
			ties += tied > 0;
			char want[16];
			snprintf(want, sizeof(want), "K%d", best);
			for (int i = 0; i < 2; i++) {
				char rq[512];
				snprintf(rq, sizeof(rq), "{\"type\":\"request\","
				    "\"txn\":%llu,\"ingress\":\"IF-1\",\"ts\":%llu,"
				    "\"gen\":1,\"tenant\":\"t1\",\"flow\":{"
				    "\"proto\":6,\"src\":\"192.0.2.10\",\"sport\":"
				    "5000,\"dst\":\"192.0.2.90\",\"dport\":443}}",
				    (unsigned long long)txn,
				    (unsigned long long)(T0 + round));
				struct cats_rec r = *parse(rq);
				cats_sel_request(w[i].sel, &r, NULL, T0 + round,
				    &w[i].out);
				if (strcmp(chosen(&w[i]), want) != 0) {
					if (wrong++ == 0)
						printf("# round %d txn %llu: %s, "
						    "want %s\n", round,
						    (unsigned long long)txn,
						    chosen(&w[i]), want);
				}
			}
		}
	}
	T_OK(wrong == 0 && ties > rounds, "min-latency and cheapest choose as "
	    "the reference, with and without the cache (%d requests with "
	    "ties)", ties);
	T_OK(cats_sel_counters(w[0].sel)->cache_hits > 0, "the cache answered");
	world_free(&w[0]);
	world_free(&w[1]);
}

int
main(void)
{
	cats_crypto_init();
	cats_audit_open("none");
	cats_dec_init(&dec, NULL);
	cats_dec_init(&reqdec, NULL);
	test_p2c_distribution();
	test_tiebreak();
	test_auth();
	test_replay_window();
	test_limits();
	test_constraints_and_records();
	test_never_unauthorized();
	test_cache_equivalence();
	test_ranking_reference();
	cats_dec_free(&dec);
	cats_dec_free(&reqdec);
	return t_done();
}
