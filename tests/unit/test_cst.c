/*
 * test_cst.c - the Computing Service Table: operations, ordering, soft
 * state, snapshots, caps, dumps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cst.h"
#include "json.h"
#include "seq.h"
#include "t.h"

static struct cats_dec dec;
static struct cats_rec rec;

/* A metric record from JSON. */
static const struct cats_metric *
met(const char *text)
{
	json_error_t je;
	struct cats_err e;
	json_t *j = json_loads(text, 0, &je);
	if (j == NULL) {
		printf("# bad JSON: %s: %s\n", je.text, text);
		exit(1);
	}
	if (cats_rec_from_json(&dec, j, &rec, &e) < 0) {
		printf("# bad record: %s: %s: %s\n", e.field, e.reason, text);
		exit(1);
	}
	json_decref(j);
	return &rec.u.metric;
}

static int
apply(struct cats_cst *t, uint64_t now, struct cats_cst_result *res,
    const char *text)
{
	return cats_cst_apply(t, met(text), now, res);
}

#define FULL1 "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":\"s1\"," \
	"\"epoch\":1,\"seq\":1,\"ts\":1000,\"site\":\"site1\",\"egress\":\"EF-1\"," \
	"\"ttl_ms\":5000,\"entries\":[" \
	"{\"csci_id\":\"a\",\"cs_id\":\"S\",\"health\":\"HEALTHY\",\"gas\":10," \
	"\"comp_time_ms\":3,\"price\":7,\"locator\":\"192.0.2.1\",\"port\":80}," \
	"{\"csci_id\":\"b\",\"cs_id\":\"S\",\"health\":\"HEALTHY\",\"gas\":20}," \
	"{\"csci_id\":\"c\",\"cs_id\":\"T\",\"health\":\"DEGRADED\",\"gas\":5}]}"

static void
test_full_delta(void)
{
	struct cats_cst *t = cats_cst_new(9000, 0);
	struct cats_cst_result res;
	struct cats_cst_entry *const *v;
	T_OK(apply(t, 1000, &res, FULL1) == CATS_ACK_OK && res.applied == 3 &&
	    !res.resync, "a first full snapshot applies 3 entries, no resync");
	T_OK(cats_cst_count(t) == 3 && cats_cst_gen(t) == 1, "3 entries, gen 1");
	size_t n = cats_cst_lookup(t, "S", &v);
	T_OK(n == 2 && strcmp(v[0]->csci_id, "a") == 0 &&
	    strcmp(v[1]->csci_id, "b") == 0, "S has a then b, in input order");
	T_OK(strcmp(v[0]->egress, "EF-1") == 0 && strcmp(v[0]->site, "site1")
	    == 0 && strcmp(v[0]->sma_id, "s1") == 0,
	    "site, egress and owner come from the record");
	T_OK(v[0]->price == 7 && v[0]->port == 80 && v[0]->locator.af == 4,
	    "metrics and locator stored");
	T_OK(cats_cst_lookup(t, "nope", &v) == 0, "an unknown CS-ID has none");

	/* A delta changes GAS only: the other fields stay. */
	T_OK(apply(t, 1100, &res, "{\"type\":\"metric\",\"op\":\"delta\","
	    "\"sma_id\":\"s1\",\"epoch\":1,\"seq\":2,\"ts\":1100,\"entries\":["
	    "{\"csci_id\":\"a\",\"cs_id\":\"S\",\"gas\":0}]}") == CATS_ACK_OK &&
	    !res.resync, "a delta applies");
	const struct cats_cst_entry *a = cats_cst_get(t, "S", "a");
	T_OK(a->gas == 0 && a->price == 7 && a->comp_time_ms == 3 &&
	    a->locator.af == 4 && strcmp(a->egress, "EF-1") == 0,
	    "delta: GAS 0, price, computing time, locator, egress kept");
	T_OK(a->expires == 1100 + 9000, "delta without ttl: the default ttl "
	    "from base 1100 (%llu)", (unsigned long long)a->expires);
	T_OK(cats_cst_gen(t) == 2 && a->gen == 2, "gen 2");

	/* Replayed and old records are stale and change nothing. */
	T_OK(apply(t, 1200, &res, "{\"type\":\"metric\",\"op\":\"delta\","
	    "\"sma_id\":\"s1\",\"epoch\":1,\"seq\":2,\"ts\":1200,\"entries\":["
	    "{\"csci_id\":\"a\",\"cs_id\":\"S\",\"gas\":99}]}") == CATS_ACK_STALE,
	    "the same sequence again is stale: %s", res.reason);
	T_OK(apply(t, 1200, &res, "{\"type\":\"metric\",\"op\":\"delta\","
	    "\"sma_id\":\"s1\",\"epoch\":0,\"seq\":50,\"ts\":1200,\"entries\":["
	    "{\"csci_id\":\"a\",\"cs_id\":\"S\",\"gas\":99}]}") == CATS_ACK_STALE,
	    "an older epoch is stale: %s", res.reason);
	T_OK(cats_cst_get(t, "S", "a")->gas == 0 && cats_cst_gen(t) == 2,
	    "nothing changed");
	struct cats_cst_peer p;
	T_OK(cats_cst_peer(t, "s1", &p) && p.epoch == 1 && p.seq == 2 &&
	    p.entries == 3, "peer position epoch 1 seq 2, 3 entries");

	/* A gap applies and asks for a resync; so does a new epoch's delta. */
	T_OK(apply(t, 1300, &res, "{\"type\":\"metric\",\"op\":\"delta\","
	    "\"sma_id\":\"s1\",\"epoch\":1,\"seq\":5,\"ts\":1300,\"entries\":["
	    "{\"csci_id\":\"a\",\"cs_id\":\"S\",\"gas\":4}]}") == CATS_ACK_OK &&
	    res.resync && cats_cst_get(t, "S", "a")->gas == 4,
	    "a sequence gap is applied and wants a resync: %s", res.reason);
	T_OK(apply(t, 1400, &res, "{\"type\":\"metric\",\"op\":\"delta\","
	    "\"sma_id\":\"s1\",\"epoch\":2,\"seq\":1,\"ts\":1400,\"entries\":["
	    "{\"csci_id\":\"a\",\"cs_id\":\"S\",\"gas\":6}]}") == CATS_ACK_OK &&
	    res.resync, "a new epoch without a full snapshot wants a resync");
	T_OK(apply(t, 1500, &res, "{\"type\":\"metric\",\"op\":\"delta\","
	    "\"sma_id\":\"s9\",\"epoch\":1,\"seq\":7,\"ts\":1500,\"entries\":["
	    "{\"csci_id\":\"z\",\"cs_id\":\"S\",\"gas\":6}]}") == CATS_ACK_OK &&
	    res.resync, "a delta from an unknown C-SMA wants a resync");
	cats_cst_free(t);
}

static void
test_snapshots(void)
{
	struct cats_cst *t = cats_cst_new(9000, 0);
	struct cats_cst_result res;
	apply(t, 1000, &res, FULL1);
	uint64_t g = cats_cst_gen(t);
	/* Part 1 of 2 names a only: b and c stay until the snapshot is whole. */
	apply(t, 2000, &res, "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":"
	    "\"s1\",\"epoch\":1,\"seq\":2,\"ts\":2000,\"part\":1,\"parts\":2,"
	    "\"entries\":[{\"csci_id\":\"a\",\"cs_id\":\"S\",\"health\":"
	    "\"HEALTHY\",\"gas\":11}]}");
	T_OK(res.result == CATS_ACK_OK && res.removed == 0 &&
	    cats_cst_count(t) == 3, "part 1 of 2: upserted, nothing removed");
	T_OK(cats_cst_get(t, "S", "a")->price == 0 &&
	    !((cats_cst_get(t, "S", "a")->has >> CATS_ENT_price) & 1),
	    "a snapshot entry replaces all fields (price gone)");
	apply(t, 2100, &res, "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":"
	    "\"s1\",\"epoch\":1,\"seq\":3,\"ts\":2100,\"part\":2,\"parts\":2,"
	    "\"entries\":[{\"csci_id\":\"c\",\"cs_id\":\"T\",\"health\":"
	    "\"HEALTHY\",\"gas\":12}]}");
	T_OK(res.result == CATS_ACK_OK && res.removed == 1 &&
	    cats_cst_count(t) == 2 && cats_cst_get(t, "S", "b") == NULL,
	    "part 2 of 2 completes: b, not named, is removed");
	T_OK(cats_cst_gen(t) == g + 2, "each part is one generation");

	/* A broken snapshot (part 2 after a lost sequence) removes nothing. */
	apply(t, 3000, &res, "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":"
	    "\"s1\",\"epoch\":1,\"seq\":4,\"ts\":3000,\"part\":1,\"parts\":2,"
	    "\"entries\":[{\"csci_id\":\"a\",\"cs_id\":\"S\",\"health\":"
	    "\"HEALTHY\",\"gas\":11}]}");
	apply(t, 3100, &res, "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":"
	    "\"s1\",\"epoch\":1,\"seq\":6,\"ts\":3100,\"part\":2,\"parts\":2,"
	    "\"entries\":[]}");
	T_OK(res.resync && res.removed == 0 && cats_cst_count(t) == 2,
	    "a broken snapshot removes nothing and wants a resync: %s",
	    res.reason);

	/* A heartbeat with entries is a full snapshot. */
	apply(t, 4000, &res, "{\"type\":\"metric\",\"op\":\"heartbeat\","
	    "\"sma_id\":\"s1\",\"epoch\":1,\"seq\":7,\"ts\":4000,\"entries\":["
	    "{\"csci_id\":\"a\",\"cs_id\":\"S\",\"health\":\"HEALTHY\","
	    "\"gas\":1}]}");
	T_OK(res.removed == 1 && cats_cst_count(t) == 1,
	    "a heartbeat with entries is a snapshot (c removed)");

	/* Withdraw removes only the sender's own entries. */
	apply(t, 4100, &res, "{\"type\":\"metric\",\"op\":\"withdraw\","
	    "\"sma_id\":\"s2\",\"epoch\":1,\"seq\":1,\"ts\":4100,\"entries\":["
	    "{\"csci_id\":\"a\",\"cs_id\":\"S\"}]}");
	T_OK(res.result == CATS_ACK_BAD && res.refused == 1 &&
	    cats_cst_count(t) == 1, "another C-SMA cannot withdraw: %s",
	    res.reason);
	apply(t, 4200, &res, "{\"type\":\"metric\",\"op\":\"withdraw\","
	    "\"sma_id\":\"s1\",\"epoch\":1,\"seq\":8,\"ts\":4200,\"entries\":["
	    "{\"csci_id\":\"a\",\"cs_id\":\"S\"},{\"csci_id\":\"q\","
	    "\"cs_id\":\"S\"}]}");
	T_OK(res.result == CATS_ACK_OK && res.removed == 1 &&
	    cats_cst_count(t) == 0, "the owner withdraws (an unknown one is "
	    "ignored)");

	/* Re-reported by another C-SMA, an entry moves. */
	apply(t, 5000, &res, FULL1);
	T_OK(res.result == CATS_ACK_STALE, "FULL1 again (seq 1) is stale");
	apply(t, 5000, &res, "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":"
	    "\"s2\",\"epoch\":1,\"seq\":2,\"ts\":5000,\"site\":\"site2\","
	    "\"entries\":[{\"csci_id\":\"x\",\"cs_id\":\"S\",\"health\":"
	    "\"HEALTHY\",\"gas\":1}]}");
	apply(t, 5100, &res, "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":"
	    "\"s3\",\"epoch\":1,\"seq\":1,\"ts\":5100,\"site\":\"site3\","
	    "\"entries\":[{\"csci_id\":\"x\",\"cs_id\":\"S\",\"health\":"
	    "\"HEALTHY\",\"gas\":2}]}");
	const struct cats_cst_entry *x = cats_cst_get(t, "S", "x");
	struct cats_cst_peer p2, p3;
	cats_cst_peer(t, "s2", &p2);
	cats_cst_peer(t, "s3", &p3);
	T_OK(strcmp(x->sma_id, "s3") == 0 && strcmp(x->site, "site3") == 0 &&
	    p2.entries == 0 && p3.entries == 1, "x moved from s2 to s3");
	cats_cst_free(t);
}

static void
test_soft_state(void)
{
	struct cats_cst *t = cats_cst_new(9000, 0);
	struct cats_cst_result res;
	/* Record ttl wins over entry ttl wins over the default. */
	apply(t, 1000, &res, "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":"
	    "\"s1\",\"epoch\":1,\"seq\":1,\"ts\":1000,\"entries\":["
	    "{\"csci_id\":\"a\",\"cs_id\":\"S\",\"ttl_ms\":2000},"
	    "{\"csci_id\":\"b\",\"cs_id\":\"S\"}]}");
	T_OK(cats_cst_get(t, "S", "a")->expires == 3000 &&
	    cats_cst_get(t, "S", "b")->expires == 10000,
	    "entry ttl_ms 2000, else the default 9000");
	const struct cats_cst_entry *a = cats_cst_get(t, "S", "a");
	T_OK(cats_cst_fresh(a, 2999) && !cats_cst_fresh(a, 3000),
	    "fresh at base + ttl - 1, expired at base + ttl");
	apply(t, 1000, &res, "{\"type\":\"metric\",\"op\":\"delta\",\"sma_id\":"
	    "\"s1\",\"epoch\":1,\"seq\":2,\"ts\":1000,\"ttl_ms\":500,\"entries\":["
	    "{\"csci_id\":\"a\",\"cs_id\":\"S\",\"ttl_ms\":2000}]}");
	T_OK(cats_cst_get(t, "S", "a")->expires == 1500,
	    "the record's ttl_ms wins over the entry's");
	/* An advertisement older than now counts from its own time. */
	apply(t, 8000, &res, "{\"type\":\"metric\",\"op\":\"delta\",\"sma_id\":"
	    "\"s1\",\"epoch\":1,\"seq\":3,\"ts\":5000,\"ttl_ms\":4000,"
	    "\"entries\":[{\"csci_id\":\"a\",\"cs_id\":\"S\"}]}");
	T_OK(cats_cst_get(t, "S", "a")->expires == 9000,
	    "base = min(ts 5000, now 8000)");
	/* One from the future counts from now. */
	apply(t, 8000, &res, "{\"type\":\"metric\",\"op\":\"delta\",\"sma_id\":"
	    "\"s1\",\"epoch\":1,\"seq\":4,\"ts\":60000,\"ttl_ms\":4000,"
	    "\"entries\":[{\"csci_id\":\"a\",\"cs_id\":\"S\"}]}");
	T_OK(cats_cst_get(t, "S", "a")->expires == 12000,
	    "base = min(ts 60000, now 8000)");

	/* Refresh: fresh entries extended, expired ones not revived. */
	uint64_t g = cats_cst_gen(t);
	apply(t, 11000, &res, "{\"type\":\"metric\",\"op\":\"refresh\","
	    "\"sma_id\":\"s1\",\"epoch\":1,\"seq\":5,\"ts\":11000,"
	    "\"ttl_ms\":3000}");
	T_OK(cats_cst_get(t, "S", "a")->expires == 14000 && res.applied == 1 &&
	    res.refused == 1 && res.resync, "refresh extends a (fresh), not b "
	    "(expired at 10000), and wants a resync");
	T_OK(cats_cst_get(t, "S", "b")->expires == 10000,
	    "b stays expired");
	T_OK(cats_cst_gen(t) == g, "a refresh changes no content: same gen");
	apply(t, 12000, &res, "{\"type\":\"metric\",\"op\":\"heartbeat\","
	    "\"sma_id\":\"s1\",\"epoch\":1,\"seq\":6,\"ts\":12000}");
	T_OK(cats_cst_get(t, "S", "a")->expires == 15000,
	    "a heartbeat without entries refreshes (keeping ttl 3000)");

	/* Purge: expired for at least the grace. */
	T_OK(cats_cst_expire(t, 10999, 1000) == 0, "b expired 999 ms ago stays");
	T_OK(cats_cst_expire(t, 11000, 1000) == 1 &&
	    cats_cst_get(t, "S", "b") == NULL && cats_cst_gen(t) == g + 1,
	    "b purged at expiry + grace; the generation moves");
	cats_cst_free(t);
}

static void
test_cap(void)
{
	struct cats_cst *t = cats_cst_new(9000, 2);
	struct cats_cst_result res;
	apply(t, 1000, &res, FULL1);
	T_OK(res.result == CATS_ACK_BAD && res.applied == 2 &&
	    res.refused == 1 && cats_cst_count(t) == 2,
	    "a full table refuses the third entry: %s", res.reason);
	cats_cst_free(t);
}

struct dumped {
	struct cats_buf b;
	int records;
};

static int
collect(const struct cats_rec *r, void *arg)
{
	struct dumped *d = arg;
	d->records++;
	return cats_rec_encode(r, &d->b, false);
}

static void
test_dump(void)
{
	struct cats_cst *t = cats_cst_new(9000, 0);
	struct cats_cst_result res;
	apply(t, 1000, &res, FULL1);
	apply(t, 1000, &res, "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":"
	    "\"s0\",\"epoch\":3,\"seq\":9,\"ts\":900,\"egress\":\"EF-0\","
	    "\"ttl_ms\":100,\"entries\":[{\"csci_id\":\"z\",\"cs_id\":\"S\","
	    "\"health\":\"HEALTHY\",\"gas\":1,\"ext\":{\"gpu\":3},"
	    "\"flags\":[\"gas-jump\"]}]}");
	struct dumped d = { { 0 }, 0 };
	cats_cst_dump(t, 1500, collect, &d);
	T_OK(d.records == 2, "two C-SMAs: two records");
	/* Apply the dump to a new table at the same time. */
	struct cats_cst *u = cats_cst_new(1, 0);
	struct cats_seq_reader rd;
	struct cats_dec d2;
	struct cats_rec r;
	struct cats_err e;
	cats_seq_reader_init(&rd, NULL);
	cats_dec_init(&d2, NULL);
	cats_seq_feed(&rd, d.b.p, d.b.len);
	rd.eof = true;
	int n = 0, first_stale = 0;
	while (cats_seq_next_rec(&rd, &d2, &r, &e) == CATS_SEQ_ITEM) {
		if (n++ == 0)
			first_stale = r.u.metric.entries.v[0].state ==
			    CATS_SCI_STALE && strcmp(r.u.metric.sma_id, "s0") == 0;
		cats_cst_apply(u, &r.u.metric, 1500, &res);
	}
	T_OK(n == 2 && first_stale, "sorted by C-SMA; an expired entry reads "
	    "STALE");
	int same = cats_cst_count(u) == cats_cst_count(t);
	const char *ids[][2] = { { "S", "a" }, { "S", "b" }, { "T", "c" },
		{ "S", "z" } };
	for (size_t i = 0; i < 4; i++) {
		const struct cats_cst_entry *x = cats_cst_get(t, ids[i][0],
		    ids[i][1]);
		const struct cats_cst_entry *y = cats_cst_get(u, ids[i][0],
		    ids[i][1]);
		same &= x && y && x->gas == y->gas && x->price == y->price &&
		    (x->expires > 1500 ? x->expires == y->expires :
		    y->expires <= 1500) && cats_ip_eq(&x->locator, &y->locator)
		    && !strcmp(x->sma_id, y->sma_id) &&
		    (x->egress == NULL) == (y->egress == NULL) &&
		    x->next == y->next && x->nflags == y->nflags;
	}
	T_OK(same, "the dump rebuilds the entries, owners and soft state");
	cats_seq_reader_free(&rd);
	cats_dec_free(&d2);
	cats_buf_free(&d.b);
	cats_cst_free(u);
	cats_cst_free(t);
}

int
main(void)
{
	cats_dec_init(&dec, NULL);
	test_full_delta();
	test_snapshots();
	test_soft_state();
	test_cap();
	test_dump();
	cats_dec_free(&dec);
	return t_done();
}
