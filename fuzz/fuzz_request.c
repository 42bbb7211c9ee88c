/*
 * fuzz_request.c - libFuzzer target for cats-select's request path.
 *
 * The input is a CBOR Sequence of up to 64 records applied in order to a
 * fresh selector world (three candidates, two services, three paths):
 * requests are answered, service, metric and net records change the
 * catalogue, the CST and the NST, undecodable items get the malformed
 * error.  Every answer must be a valid record, and a decision must name an
 * authorized candidate with the CST's own locator: otherwise abort().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sec/crypto.h"
#include "rec/json.h"
#include "base/log.h"
#include "select/select.h"
#include "rec/seq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const base_json[] = {
	"{\"type\":\"service\",\"cs_id\":\"S1\",\"version\":1,\"tenant\":\"t1\","
	"\"addresses\":[{\"addr\":\"192.0.2.100\",\"port\":443,\"proto\":6}],"
	"\"authorized\":[\"A\",\"B\",\"C\"],\"constraints\":{\"max_delay_us\":"
	"20000,\"exclude_nodes\":[\"P-1\"]},\"policy\":\"p2c-gas\","
	"\"fallback\":\"stale:5s,relax:max_price,csci:C\"}",
	"{\"type\":\"service\",\"cs_id\":\"S2\",\"version\":1,\"addresses\":"
	"[{\"addr\":\"192.0.2.200\"}],\"sites\":[\"site2\"]}",
	"{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":\"m1\",\"epoch\":1,"
	"\"seq\":1,\"ts\":1764460800000,\"site\":\"site1\",\"egress\":\"EF-1\","
	"\"ttl_ms\":60000,\"entries\":[{\"csci_id\":\"A\",\"cs_id\":\"S1\","
	"\"health\":\"HEALTHY\",\"gas\":400,\"comp_time_ms\":5,\"price\":20,"
	"\"locator\":\"198.51.100.11\"},{\"csci_id\":\"X\",\"cs_id\":\"S1\","
	"\"health\":\"HEALTHY\",\"gas\":9000,\"comp_time_ms\":0,"
	"\"locator\":\"203.0.113.66\"}]}",
	"{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":\"m2\",\"epoch\":1,"
	"\"seq\":1,\"ts\":1764460800000,\"site\":\"site2\",\"egress\":\"EF-2\","
	"\"ttl_ms\":60000,\"entries\":[{\"csci_id\":\"B\",\"cs_id\":\"S1\","
	"\"health\":\"HEALTHY\",\"gas\":100,\"comp_time_ms\":2,\"price\":30,"
	"\"locator\":\"198.51.100.21\"},{\"csci_id\":\"D\",\"cs_id\":\"S2\","
	"\"health\":\"HEALTHY\",\"gas\":1,\"comp_time_ms\":1,"
	"\"locator\":\"198.51.100.22\"}]}",
	"{\"type\":\"net\",\"scope\":\"path\",\"ts\":1764460800000,\"src\":\"IF-1\","
	"\"dst\":\"EF-1\",\"delay_us\":6000}",
	"{\"type\":\"net\",\"scope\":\"path\",\"ts\":1764460800000,\"src\":\"IF-1\","
	"\"dst\":\"EF-2\",\"delay_us\":4100}",
};

static struct cats_buf base;

static void
init(void)
{
	struct cats_dec d;
	struct cats_rec r;
	struct cats_err e;
	cats_crypto_init();
	cats_audit_open("none");
	cats_log_verbosity(0);
	cats_dec_init(&d, NULL);
	for (size_t i = 0; i < sizeof(base_json) / sizeof(base_json[0]); i++) {
		json_error_t je;
		json_t *j = json_loads(base_json[i], 0, &je);
		if (j == NULL || cats_rec_from_json(&d, j, &r, &e) < 0 ||
		    cats_rec_encode(&r, &base, false) < 0)
			abort();
		json_decref(j);
	}
	cats_dec_free(&d);
}

struct world {
	struct cats_svc_cat *cat;
	struct cats_cst *cst;
	struct cats_nst_rec *nrec;
	struct cats_nst nst;
	struct cats_sel *sel;
};

static void
check(const struct world *w, const struct cats_sel_out *out)
{
	struct cats_err e;
	if (cats_rec_validate(&out->rec, &e) < 0) {
		fprintf(stderr, "invalid answer: %s: %s\n", e.field, e.reason);
		abort();
	}
	if (out->code != CATS_SEL_OK)
		return;
	const struct cats_decision *d = &out->rec.u.preq.decision;
	const struct cats_svc *s = cats_svc_get(w->cat, d->cs_id);
	const struct cats_cst_entry *c = cats_cst_get(w->cst, d->cs_id,
	    d->csci_id);
	if (s == NULL || c == NULL || !cats_svc_authorized(s, d->csci_id,
	    c->site) || !cats_ip_eq(&c->locator, &d->locator))
		abort();
}

static void
apply(struct world *w, const struct cats_rec *r, uint64_t now,
    struct cats_sel_out *out)
{
	struct cats_err e;
	struct cats_cst_result res;
	struct cats_sel_origin o = { .peercred = true, .uid = 7 };
	switch (r->type) {
	case CATS_T_SERVICE:
		cats_svc_apply(w->cat, &r->u.service, &e);
		break;
	case CATS_T_METRIC:
		cats_cst_apply(w->cst, &r->u.metric, now, &res);
		break;
	case CATS_T_NET:
		cats_nst_rec_apply(w->nrec, &r->u.net, now, &e);
		break;
	case CATS_T_REQUEST:
		cats_sel_request(w->sel, r, &o, now, out);
		check(w, out);
		break;
	default:
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	static struct cats_sel_out out;
	if (!ready) {
		init();
		ready = true;
	}
	struct world w;
	struct cats_sel_conf conf;
	cats_sel_conf_init(&conf);
	conf.insecure = true;
	conf.window_ms = 0;
	conf.rate_client.per_s = 5;
	conf.rate_client.burst = 5;
	w.cat = cats_svc_cat_new(64);
	w.cst = cats_cst_new(30000, 256);
	w.nrec = cats_nst_rec_new(30000, 256);
	cats_nst_init(&w.nst);
	cats_nst_add(&w.nst, &cats_nst_rec_provider, w.nrec);
	w.sel = cats_sel_new(&conf, w.cat, w.cst, &w.nst);
	cats_sel_forwarder(w.sel, "IF-1", true, 7, NULL, 0);

	struct cats_dec d;
	struct cats_rec r;
	struct cats_err e;
	struct cats_seq_reader rd;
	cats_dec_init(&d, NULL);
	cats_seq_reader_init(&rd, NULL);
	cats_seq_feed(&rd, base.p, base.len);
	cats_seq_feed(&rd, data, size);
	rd.eof = true;
	uint64_t now = UINT64_C(1764460800000);
	for (int i = 0; i < 64 + 6; i++) {
		memset(&e, 0, sizeof(e));
		int s = cats_seq_next_rec(&rd, &d, &r, &e);
		if (s == CATS_SEQ_NEED)
			break;
		if (s == CATS_SEQ_BAD) {
			cats_sel_malformed(w.sel, &e, rd.index - 1, false, 0, now,
			    &out);
			check(&w, &out);
			continue;
		}
		/* Time moves with the records, as in replay mode. */
		if (r.type == CATS_T_REQUEST && r.u.request.ts > now)
			now = r.u.request.ts;
		apply(&w, &r, now, &out);
	}
	cats_seq_reader_free(&rd);
	cats_dec_free(&d);
	cats_sel_free(w.sel);
	cats_nst_free(&w.nst);
	cats_cst_free(w.cst);
	cats_svc_cat_free(w.cat);
	return 0;
}
