/*
 * test_cst.c - the Computing Service Table: operations, ordering, soft
 * state, snapshots, caps, dumps.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "select/cst.h"
#include "rec/json.h"
#include "rec/seq.h"
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
	T_OK(res.result == CATS_ACK_BAD && res.conflict &&
	    strcmp(res.owner, "s1") == 0 && cats_cst_count(t) == 1,
	    "another C-SMA cannot withdraw: %s", res.reason);
	apply(t, 4200, &res, "{\"type\":\"metric\",\"op\":\"withdraw\","
	    "\"sma_id\":\"s1\",\"epoch\":1,\"seq\":8,\"ts\":4200,\"entries\":["
	    "{\"csci_id\":\"a\",\"cs_id\":\"S\"},{\"csci_id\":\"q\","
	    "\"cs_id\":\"S\"}]}");
	T_OK(res.result == CATS_ACK_OK && res.removed == 1 &&
	    cats_cst_count(t) == 0, "the owner withdraws (an unknown one is "
	    "ignored)");

	/* Re-reported by another C-SMA while fresh, an entry stays. */
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
	T_OK(res.result == CATS_ACK_BAD && res.conflict &&
	    strcmp(x->sma_id, "s2") == 0 && strcmp(x->site, "site2") == 0 &&
	    p2.entries == 1 && !cats_cst_peer(t, "s3", &p3),
	    "x stays with s2; s3's snapshot is refused whole (%s)", res.reason);
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

/* A metric record with one entry: op, C-SMA, epoch, seq, ts, entry. */
static int
one(struct cats_cst *t, uint64_t now, struct cats_cst_result *res,
    const char *op, const char *sma, int epoch, int seq, const char *ent)
{
	char buf[1024];
	snprintf(buf, sizeof(buf), "{\"type\":\"metric\",\"op\":\"%s\","
	    "\"sma_id\":\"%s\",\"epoch\":%d,\"seq\":%d,\"ts\":%llu,"
	    "\"egress\":\"EF-%s\",\"ttl_ms\":5000,\"entries\":[%s]}", op, sma,
	    epoch, seq, (unsigned long long)now, sma, ent);
	return apply(t, now, res, buf);
}

#define E(csci, loc) "{\"csci_id\":\"" csci "\",\"cs_id\":\"S1\"," \
	"\"health\":\"HEALTHY\",\"gas\":10,\"locator\":\"" loc "\"}"

/* What the table holds of (S1, csci): owner and locator, or "-". */
static const char *
held(const struct cats_cst *t, const char *csci)
{
	static char buf[200];
	const struct cats_cst_entry *e = cats_cst_get(t, "S1", csci);
	char a[48];
	if (e == NULL)
		return "-";
	snprintf(buf, sizeof(buf), "%s %s", e->sma_id,
	    cats_ip_fmt(&e->locator, a, sizeof(a)));
	return buf;
}

static void
test_ownership(void)
{
	struct cats_cst *t = cats_cst_new(9000, 0);
	struct cats_cst_result res;
	struct cats_cst_peer p;
	one(t, 1000, &res, "full", "a", 1, 1, E("web-1", "10.1.0.5") ","
	    E("web-2", "10.1.0.6"));
	uint64_t g = cats_cst_gen(t);

	/* The attack of the issue: another C-SMA's delta with its locator. */
	one(t, 1100, &res, "delta", "e", 1, 1, E("web-1", "10.9.0.9"));
	T_OK(res.result == CATS_ACK_BAD && res.conflict &&
	    strcmp(res.owner, "a") == 0 && strcmp(held(t, "web-1"),
	    "a 10.1.0.5") == 0 && cats_cst_gen(t) == g,
	    "another C-SMA's delta for a's instance is refused, nothing "
	    "changes (%s)", res.reason);
	T_OK(!cats_cst_peer(t, "e", &p), "the refused sender's position is "
	    "not moved");
	one(t, 1100, &res, "delta", "e", 7, 1, E("web-1", "10.9.0.9"));
	T_OK(res.conflict && strcmp(held(t, "web-1"), "a 10.1.0.5") == 0,
	    "a new epoch does not help");
	one(t, 1100, &res, "full", "e", 8, 1, E("web-9", "10.9.0.9") ","
	    E("web-2", "10.9.0.9"));
	T_OK(res.conflict && strcmp(held(t, "web-9"), "-") == 0 &&
	    strcmp(held(t, "web-2"), "a 10.1.0.6") == 0,
	    "a full sync with one foreign instance is refused whole: its own "
	    "web-9 is not inserted either");
	one(t, 1100, &res, "heartbeat", "e", 8, 1, E("web-2", "10.9.0.9"));
	T_OK(res.conflict, "a heartbeat with entries (a snapshot) likewise");
	one(t, 1100, &res, "refresh", "e", 8, 1, "{\"csci_id\":\"web-1\","
	    "\"cs_id\":\"S1\"}");
	T_OK(res.conflict && strcmp(res.owner, "a") == 0,
	    "a refresh naming a's instance is refused");
	one(t, 1100, &res, "withdraw", "e", 8, 1, "{\"csci_id\":\"web-1\","
	    "\"cs_id\":\"S1\"}");
	T_OK(res.conflict && strcmp(held(t, "web-1"), "a 10.1.0.5") == 0,
	    "a withdrawal of a's instance is refused");
	const char *variants[] = { "WEB-1", "Web-1", " web-1", "web-1 ",
	    "\tweb-1\n", "wEb-1  " };
	for (size_t i = 0; i < sizeof(variants) / sizeof(*variants); i++) {
		char ent[256];
		snprintf(ent, sizeof(ent), "{\"csci_id\":\"%s\",\"cs_id\":"
		    "\"S1\",\"gas\":99,\"locator\":\"10.9.0.9\"}",
		    variants[i][0] == '\t' ? "\\tweb-1\\n" : variants[i]);
		one(t, 1100, &res, "delta", "e", 9, (int)i + 1, ent);
		T_OK(res.conflict && cats_cst_count(t) == 2 &&
		    strchr(res.reason, '\n') == NULL,
		    "the spelling \"%s\" is the same instance: refused (%s)",
		    variants[i][0] == '\t' ? "\\tweb-1\\n" : variants[i],
		    res.reason);
	}
	one(t, 1100, &res, "delta", "e", 9, 10, E("web-1x", "10.9.0.9"));
	T_OK(res.result == CATS_ACK_OK && strcmp(held(t, "web-1x"),
	    "e 10.9.0.9") == 0, "another CSCI-ID is e's own instance");
	one(t, 1100, &res, "delta", "e", 9, 11, "{\"csci_id\":\"web-1\","
	    "\"cs_id\":\"S2\",\"gas\":1,\"locator\":\"10.9.0.9\"}");
	T_OK(res.result == CATS_ACK_OK && cats_cst_get(t, "S2", "web-1") &&
	    strcmp(held(t, "web-1"), "a 10.1.0.5") == 0,
	    "the same CSCI-ID under another CS-ID is another instance; S1's "
	    "stays a's");
	one(t, 1100, &res, "delta", "a", 1, 2, E("WEB-1", "10.1.0.7"));
	T_OK(res.result == CATS_ACK_OK, "the owner may use another spelling");

	/* Expired: taken over (audited by the caller), then owned by e. */
	one(t, 6000, &res, "delta", "e", 9, 12, E("web-2", "10.9.0.2"));
	T_OK(res.result == CATS_ACK_OK && res.taken_over == 1 &&
	    strcmp(res.owner, "a") == 0 && strcmp(held(t, "web-2"),
	    "e 10.9.0.2") == 0, "an expired entry is taken over (from %s)",
	    res.owner);
	one(t, 6100, &res, "delta", "a", 1, 3, E("web-2", "10.1.0.6"));
	T_OK(res.conflict && strcmp(res.owner, "e") == 0 &&
	    strcmp(held(t, "web-2"), "e 10.9.0.2") == 0,
	    "the old owner now meets the new one's claim");
	one(t, 6099, &res, "delta", "a", 1, 3, E("web-1", "10.1.0.8"));
	T_OK(res.result == CATS_ACK_OK, "the refused record did not use up "
	    "a's sequence 3");

	/* The owner withdraws: the instance is free. */
	one(t, 6200, &res, "withdraw", "a", 1, 4, "{\"csci_id\":\"web-1\","
	    "\"cs_id\":\"S1\"},{\"csci_id\":\"WEB-1\",\"cs_id\":\"S1\"}");
	T_OK(res.result == CATS_ACK_OK && res.removed == 2, "a withdraws "
	    "web-1 in both spellings");
	one(t, 6300, &res, "delta", "e", 9, 13, E("web-1", "10.9.0.1"));
	T_OK(res.result == CATS_ACK_OK && strcmp(held(t, "web-1"),
	    "e 10.9.0.1") == 0, "then e may advertise it");

	/* The operator's release, and op release refused elsewhere. */
	one(t, 6400, &res, "release", "e", 9, 14, E("web-1", "10.9.0.1"));
	T_OK(res.result == CATS_ACK_BAD && strcmp(held(t, "web-1"),
	    "e 10.9.0.1") == 0, "op release is not taken by the table");
	const struct cats_metric *m = met("{\"type\":\"metric\",\"op\":"
	    "\"release\",\"sma_id\":\"operator\",\"epoch\":0,\"seq\":0,\"ts\":"
	    "0,\"entries\":[{\"csci_id\":\"web-1\",\"cs_id\":\"S1\"},"
	    "{\"csci_id\":\"nope\",\"cs_id\":\"S1\"}]}");
	cats_cst_release(t, m, &res);
	T_OK(res.removed == 1 && res.refused == 1 && strcmp(res.owner, "e") ==
	    0 && strcmp(held(t, "web-1"), "-") == 0,
	    "cats_cst_release removes e's entry (%s)", res.reason);
	one(t, 6500, &res, "delta", "a", 1, 5, E("web-1", "10.1.0.5"));
	T_OK(res.result == CATS_ACK_OK && strcmp(held(t, "web-1"),
	    "a 10.1.0.5") == 0, "a may advertise it again");
	cats_cst_free(t);
}

static void
test_scope(void)
{
	struct cats_cst *t = cats_cst_new(9000, 0);
	struct cats_cst_result res;
	char err[200] = "";
	T_OK(cats_cst_scope(t, "a", "10.1.0.0/24, 2001:db8:a::/48",
	    "EF-a EF-a2", err, sizeof(err)) == 0, "a's scope: %s", err);
	T_OK(cats_cst_scope(t, "any", "*", NULL, err, sizeof(err)) == 0,
	    "\"*\": any locator");
	static const struct { const char *loc; bool ok; } cases[] = {
		{ "10.1.0.0", true }, { "10.1.0.255", true },
		{ "10.0.255.255", false }, { "10.1.1.0", false },
		{ "2001:db8:a::1", true }, { "2001:db8:a:ffff:ffff:ffff:ffff:ffff",
		true }, { "2001:db8:b::", false }, { "::ffff:10.1.0.5", false },
		{ "10.9.0.9", false },
	};
	int seq = 1;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char ent[256];
		snprintf(ent, sizeof(ent), "{\"csci_id\":\"i%zu\",\"cs_id\":"
		    "\"S1\",\"locator\":\"%s\"}", i, cases[i].loc);
		one(t, 1000, &res, "delta", "a", 1, seq, ent);
		if (res.result == CATS_ACK_OK)
			seq++;
		T_OK(cases[i].ok ? res.result == CATS_ACK_OK :
		    res.forbidden && cats_cst_get(t, "S1", ent) == NULL,
		    "locator %s: %s (%s)", cases[i].loc, cases[i].ok ?
		    "inside" : "outside, refused", res.reason);
	}
	/* The record's egress is EF-<sma>; an entry's own wins. */
	cats_cst_scope(t, "b", NULL, "EF-x", err, sizeof(err));
	one(t, 1000, &res, "delta", "b", 1, 1, E("j1", "10.9.9.9"));
	T_OK(res.forbidden && cats_cst_count(t) == 4, "egress EF-b outside "
	    "b's scope: refused (%s)", res.reason);
	one(t, 1000, &res, "delta", "b", 1, 1, "{\"csci_id\":\"j1\","
	    "\"cs_id\":\"S1\",\"egress\":\"EF-x\"}");
	T_OK(res.result == CATS_ACK_OK, "the entry's own egress EF-x: inside");
	one(t, 1000, &res, "full", "a", 1, seq, E("k1", "10.1.0.1") ","
	    "{\"csci_id\":\"k2\",\"cs_id\":\"S1\",\"egress\":\"EF-b\"}");
	T_OK(res.forbidden && cats_cst_get(t, "S1", "k1") == NULL,
	    "one entry with a foreign egress refuses the whole snapshot");
	one(t, 1000, &res, "delta", "any", 1, 1, E("z", "192.0.2.1"));
	T_OK(res.result == CATS_ACK_OK, "a C-SMA with locators * may "
	    "advertise any");
	one(t, 1000, &res, "delta", "unscoped", 1, 1, E("u", "192.0.2.1"));
	T_OK(res.result == CATS_ACK_OK, "a C-SMA without a scope is not "
	    "limited");

	static const char *const bad[] = { "10.1.0.0/33", "10.1.0.1/24",
	    "10.1.0.0/", "10.1.0.0/2x", "nope/8", "2001:db8::/129",
	    "2001:db8::1/64", "10.1.0.0/0024" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		err[0] = '\0';
		T_OK(cats_cst_scope(t, "c", bad[i], NULL, err, sizeof(err)) < 0
		    && strstr(err, "locators: ") == err,
		    "prefix %s refused: %s", bad[i], err);
	}
	static const char *const good[] = { "0.0.0.0/0", "::/0",
	    "10.1.0.1/32", "10.1.0.1", "2001:db8::1/128", "10.0.0.0/8" };
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		T_OK(cats_cst_scope(t, "c", good[i], NULL, err, sizeof(err)) ==
		    0, "prefix %s taken", good[i]);
	struct cats_prefix pf;
	cats_prefix_parse("0.0.0.0/0", 9, false, &pf, err, sizeof(err));
	struct cats_ip ip6, ip4;
	cats_ip_parse("2001:db8::1", 11, &ip6);
	cats_ip_parse("1.2.3.4", 7, &ip4);
	T_OK(cats_prefix_has(&pf, &ip4) && !cats_prefix_has(&pf, &ip6),
	    "0.0.0.0/0 holds every IPv4 address and no IPv6 one");
	T_OK(cats_prefix_parse("10.0.0.1", 8, false, &pf, err, sizeof(err)) < 0,
	    "a bare address where a prefix is required: %s", err);
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
	test_ownership();
	test_scope();
	cats_dec_free(&dec);
	return t_done();
}
