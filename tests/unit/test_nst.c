/*
 * test_nst.c - the Network Service Table: the net-record provider and the
 * provider list (a second provider stands in for the TE database).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/htab.h"
#include "rec/json.h"
#include "pce/te.h"
#include "select/nst.h"
#include "t.h"

static struct cats_dec dec;
static struct cats_rec rec;

static const struct cats_net *
net(const char *text)
{
	json_error_t je;
	struct cats_err e;
	json_t *j = json_loads(text, 0, &je);
	if (j == NULL || cats_rec_from_json(&dec, j, &rec, &e) < 0) {
		printf("# bad record: %s\n", text);
		exit(1);
	}
	json_decref(j);
	return &rec.u.net;
}

static int
apply(struct cats_nst_rec *r, uint64_t now, const char *text)
{
	struct cats_err e;
	return cats_nst_rec_apply(r, net(text), now, &e);
}

/* A stand-in for the TE-database provider: every X -> EF-9 is 777 us. */
struct fake {
	uint64_t gen;
	int lookups;
};

static int
fake_lookup(void *ctx, const char *headend, const char *egress, uint64_t now,
    struct cats_nst_path *out)
{
	struct fake *f = ctx;
	f->lookups++;
	(void)headend;
	(void)now;
	if (strcmp(egress, "EF-9") != 0)
		return CATS_NST_UNKNOWN;
	out->has_delay = true;
	out->delay_us = 777;
	out->expires = UINT64_MAX;
	out->gen = f->gen;
	out->up = true;
	out->provider = "te";
	return CATS_NST_OK;
}

static uint64_t
fake_gen(const void *ctx)
{
	return ((const struct fake *)ctx)->gen;
}

static const struct cats_nst_provider fake_provider = {
	.name = "fake-te", .lookup = fake_lookup, .gen = fake_gen,
};

static int
count_rec(const struct cats_rec *r, void *arg)
{
	int *n = arg;
	struct cats_err e;
	if (r->type == CATS_T_NET && cats_rec_validate(r, &e) == 0)
		(*n)++;
	return 0;
}

int
main(void)
{
	cats_dec_init(&dec, NULL);
	struct cats_nst_rec *r = cats_nst_rec_new(30000, 3);
	struct cats_nst n;
	struct cats_nst_path p;
	cats_nst_init(&n);
	T_OK(cats_nst_add(&n, &cats_nst_rec_provider, r) == 0, "add records");

	T_OK(apply(r, 1000, "{\"type\":\"net\",\"scope\":\"path\",\"ts\":1000,"
	    "\"gen\":5,\"src\":\"IF-1\",\"dst\":\"EF-1\",\"delay_us\":4100,"
	    "\"avail_bw\":1000,\"hops\":3,\"ttl_ms\":2000}") == 1, "applied");
	T_OK(cats_nst_lookup(&n, "IF-1", "EF-1", 1500, &p) == CATS_NST_OK &&
	    p.has_delay && p.delay_us == 4100 && p.has_bw && p.avail_bw == 1000
	    && p.hops == 3 && p.up && strcmp(p.provider, "net-records") == 0,
	    "lookup: delay, bandwidth, hops, up (absent up = reachable)");
	T_OK(cats_nst_lookup(&n, "IF-1", "EF-1", 2999, &p) == CATS_NST_OK,
	    "fresh at ts + ttl - 1");
	T_OK(cats_nst_lookup(&n, "IF-1", "EF-1", 3000, &p) == CATS_NST_STALE &&
	    p.delay_us == 4100, "stale at ts + ttl, with the last values");
	T_OK(cats_nst_lookup(&n, "EF-1", "IF-1", 1500, &p) == CATS_NST_UNKNOWN,
	    "paths are directed");
	uint64_t g = cats_nst_gen(&n);
	T_OK(apply(r, 1600, "{\"type\":\"net\",\"scope\":\"path\",\"ts\":1600,"
	    "\"gen\":4,\"src\":\"IF-1\",\"dst\":\"EF-1\",\"delay_us\":1}") == 0 &&
	    cats_nst_gen(&n) == g, "a lower gen is ignored");
	T_OK(apply(r, 1600, "{\"type\":\"net\",\"scope\":\"path\",\"ts\":900,"
	    "\"gen\":5,\"src\":\"IF-1\",\"dst\":\"EF-1\",\"delay_us\":1}") == 0,
	    "the same gen with an older ts is ignored");
	T_OK(apply(r, 1600, "{\"type\":\"net\",\"scope\":\"path\",\"ts\":1600,"
	    "\"gen\":6,\"src\":\"IF-1\",\"dst\":\"EF-1\",\"up\":false}") == 1 &&
	    cats_nst_gen(&n) == g + 1, "a newer record applies");
	T_OK(cats_nst_lookup(&n, "IF-1", "EF-1", 1700, &p) == CATS_NST_DOWN &&
	    !p.has_delay, "down, and its delay unknown now");
	T_OK(cats_nst_lookup(&n, "IF-1", "EF-1", 1600 + 30000, &p) ==
	    CATS_NST_STALE && !p.up, "a down view expires to STALE, still down "
	    "(default ttl 30000 applies)");
	T_OK(apply(r, 1700, "{\"type\":\"net\",\"scope\":\"link\",\"ts\":1700,"
	    "\"src\":\"IF-1\",\"dst\":\"P-1\",\"delay_us\":1}") == 0 &&
	    cats_nst_rec_count(r) == 1, "link records are not the NST's");
	T_OK(apply(r, 8000, "{\"type\":\"net\",\"scope\":\"path\",\"ts\":5000,"
	    "\"src\":\"IF-1\",\"dst\":\"EF-2\",\"delay_us\":9,\"ttl_ms\":1000}")
	    == 1 && cats_nst_lookup(&n, "IF-1", "EF-2", 5999, &p) ==
	    CATS_NST_OK && cats_nst_lookup(&n, "IF-1", "EF-2", 6000, &p) ==
	    CATS_NST_STALE, "an old record counts from its own ts");
	T_OK(apply(r, 8000, "{\"type\":\"net\",\"scope\":\"path\",\"ts\":4000,"
	    "\"src\":\"IF-1\",\"dst\":\"EF-2\",\"delay_us\":1}") == 0,
	    "without gens, an earlier ts is older");
	apply(r, 8000, "{\"type\":\"net\",\"scope\":\"path\",\"ts\":8000,"
	    "\"src\":\"IF-2\",\"dst\":\"EF-2\",\"delay_us\":9}");
	struct cats_err e;
	T_OK(cats_nst_rec_apply(r, net("{\"type\":\"net\",\"scope\":\"path\","
	    "\"ts\":8000,\"src\":\"IF-3\",\"dst\":\"EF-2\"}"), 8000, &e) < 0,
	    "a full NST refuses a new path: %s", e.reason);

	/* A second provider answers what the first does not know. */
	struct fake f = { .gen = 40 };
	cats_nst_add(&n, &fake_provider, &f);
	T_OK(cats_nst_lookup(&n, "IF-1", "EF-9", 8000, &p) == CATS_NST_OK &&
	    p.delay_us == 777 && strcmp(p.provider, "te") == 0,
	    "the TE stand-in answers for EF-9");
	f.lookups = 0;
	T_OK(cats_nst_lookup(&n, "IF-1", "EF-2", 8000, &p) == CATS_NST_STALE &&
	    f.lookups == 0, "the record provider answers first (even STALE)");
	T_OK(cats_nst_lookup(&n, "IF-1", "EF-7", 8000, &p) == CATS_NST_UNKNOWN,
	    "nobody knows EF-7");
	T_OK(cats_nst_gen(&n) == g + 3 + 40, "the generation sums providers");

	/* A batch answers as the lookups one by one (20: more than a batch). */
	const char *eg[20];
	uint64_t egh[20];
	struct cats_nst_path many[20], one;
	static const char *const pool[] = { "EF-1", "EF-2", "EF-9", "EF-7" };
	for (int i = 0; i < 20; i++) {
		eg[i] = pool[(i * 7) % 4];
		egh[i] = cats_hash_str(eg[i]);
	}
	cats_nst_lookup_many(&n, "IF-1", cats_hash_str("IF-1"), eg, egh, 20,
	    8000, many);
	bool same = true;
	for (int i = 0; i < 20; i++) {
		int st = cats_nst_lookup(&n, "IF-1", eg[i], 8000, &one);
		same = same && st == many[i].status &&
		    memcmp(&one, &many[i], sizeof(one)) == 0;
	}
	T_OK(same, "lookup_many = lookup for each (stale, TE, unknown)");

	int recs = 0;
	cats_nst_dump(&n, 8000, count_rec, &recs);
	T_OK(recs == 3, "the dump writes 3 valid net records");
	T_OK(cats_nst_expire(&n, 35000, 0) == 2 && cats_nst_rec_count(r) == 1,
	    "purge at 35000: IF-1->EF-1 (expired 31600), IF-1->EF-2 (6000), "
	    "not IF-2->EF-2 (38000)");
	cats_nst_free(&n);

	/*
	 * The TE-database provider: a batch answers as the lookups one by
	 * one -- reachable, unreachable (C has no link), unknown egress --
	 * and so does a batch from a headend the database lacks.
	 */
	static const char te_text[] = "{\"version\": 1, \"nodes\": ["
	    "{\"id\": \"A\"}, {\"id\": \"B\"}, {\"id\": \"C\"}], "
	    "\"links\": [{\"id\": \"l1\", \"src\": \"A\", \"dst\": \"B\", "
	    "\"igp_metric\": 10, \"delay_us\": 700, \"reverse\": {}}]}";
	char terr[200];
	struct cats_te *te = cats_te_load_mem(te_text, sizeof(te_text) - 1,
	    NULL, 1, terr, sizeof(terr));
	T_OK(te != NULL, "a three-node TE database loads");
	struct cats_nst_tedb *tp = cats_nst_tedb_new(4);
	cats_nst_tedb_set(tp, te);
	cats_nst_init(&n);
	cats_nst_add(&n, &cats_nst_tedb_provider, tp);
	static const char *const te_pool[] = { "B", "C", "Z", "A" };
	const char *heads[] = { "A", "Q" };
	bool te_same = true;
	for (int h = 0; h < 2; h++) {
		for (int i = 0; i < 20; i++) {
			eg[i] = te_pool[(i * 3) % 4];
			egh[i] = cats_hash_str(eg[i]);
		}
		cats_nst_lookup_many(&n, heads[h], cats_hash_str(heads[h]), eg,
		    egh, 20, 8000, many);
		for (int i = 0; i < 20; i++) {
			int st = cats_nst_lookup(&n, heads[h], eg[i], 8000, &one);
			te_same = te_same && st == many[i].status &&
			    memcmp(&one, &many[i], sizeof(one)) == 0;
		}
	}
	T_OK(te_same, "TE provider: lookup_many = lookup for each (reachable, "
	    "unreachable, unknown egress, unknown headend)");
	T_OK(cats_nst_lookup(&n, "A", "B", 8000, &one) == CATS_NST_OK &&
	    one.delay_us == 700 && cats_nst_lookup(&n, "A", "C", 8000,
	    &one) == CATS_NST_DOWN, "TE provider: A->B 700 us, A->C down");
	cats_nst_free(&n);
	cats_te_free(te);
	cats_dec_free(&dec);
	return t_done();
}
