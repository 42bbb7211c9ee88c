/*
 * test_ha.c - the etcd answer decoder on answers recorded from etcd 3.4
 * (tests/data/ha: NAME.json decoded must print NAME.out; the kind is the
 * name's first word), its caps on malformed answers, and the ownership
 * logic of ha_own.h with time passed in, and the log entries of ha_log.h
 * (sealed and decoded, deflated or not; every cap refused).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ha/etcd.h"
#include "ha/ha.h"
#include "ha/ha_log.h"
#include "ha/ha_own.h"
#include "t.h"

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return NULL;
	char *p = NULL;
	size_t cap = 0, n = 0, got;
	do {
		if (n + 4096 > cap) {
			cap = (n + 4096) * 2;
			p = realloc(p, cap);
		}
		got = fread(p + n, 1, cap - n - 1, f);
		n += got;
	} while (got > 0);
	fclose(f);
	p[n] = '\0';
	*len = n;
	return p;
}

static int
kind_of(const char *name)
{
	for (int k = 0; k < ETCD__N; k++) {
		size_t n = strlen(etcd_kind_names[k]);
		if (strncmp(name, etcd_kind_names[k], n) == 0 && name[n] == '_')
			return k;
	}
	/* error_*: an error answer, whatever the call. */
	return ETCD_PUT;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
test_fixtures(const char *dir, bool regen)
{
	DIR *d = opendir(dir);
	T_OK(d != NULL, "%s opened", dir);
	if (d == NULL)
		return;
	char *names[256];
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL && n < 256) {
		size_t l = strlen(de->d_name);
		if (l > 5 && strcmp(de->d_name + l - 5, ".json") == 0)
			names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	T_OK(n >= 15, "%zu recorded answers", n);
	struct etcd_resp r;
	etcd_resp_init(&r);
	for (size_t i = 0; i < n; i++) {
		char path[512], err[256];
		size_t len, elen;
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		char *body = slurp(path, &len);
		int rc = etcd_parse(NULL, kind_of(names[i]), body, len, &r, err,
		    sizeof(err));
		struct cats_buf got = { 0 };
		if (rc == 0)
			etcd_resp_fmt(&r, &got);
		else
			cats_buf_add(&got, err, strlen(err));
		if (got.len > 0 && got.p[got.len - 1] == '\n')
			got.len--;
		cats_buf_add(&got, "\n", 2);
		snprintf(path + strlen(path) - 5, 6, ".out");
		if (regen) {
			FILE *f = fopen(path, "w");
			fputs((char *)got.p, f);
			fclose(f);
		}
		char *want = slurp(path, &elen);
		bool same = rc == 0 && want != NULL &&
		    strcmp(want, (char *)got.p) == 0;
		got.p[got.len - 2] = '\0';
		T_OK(same, "%s: %s", names[i], (char *)got.p);
		if (!same && want != NULL)
			printf("# want %s", want);
		free(want);
		free(body);
		cats_buf_free(&got);
		free(names[i]);
	}
	etcd_resp_free(&r);
}

static int
parse(const struct etcd_limits *lim, int kind, const char *s,
    struct etcd_resp *r, char *err, size_t len)
{
	return etcd_parse(lim, kind, s, strlen(s), r, err, len);
}

static void
test_malformed(void)
{
	static const struct {
		int kind;
		const char *body, *why;
	} bad[] = {
		{ ETCD_RANGE, "", "not JSON" },
		{ ETCD_RANGE, "[1]", "not a JSON object" },
		{ ETCD_RANGE, "{\"header\":{}}", "no revision" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":\"-1\"}}",
		    "not a decimal" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":-1}}", "negative" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":"
		    "\"9223372036854775808\"}}", "out of range" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":\"1x\"}}",
		    "not a decimal" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":1.5}}", "int64" },
		{ ETCD_RANGE, "{\"header\":[],\"kvs\":[]}", "not an object" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":\"2\"},\"kvs\":{}}",
		    "not an array" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":\"2\"},\"kvs\":[1]}",
		    "not an object" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":\"2\"},\"kvs\":[{}]}",
		    "no key" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":\"2\"},\"kvs\":"
		    "[{\"key\":\"!!!!\"}]}", "bad base64" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":\"2\"},\"kvs\":"
		    "[{\"key\":5}]}", "not a base64" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":\"2\"},\"kvs\":"
		    "[{\"key\":\"YWFhYWFhYWFh\"}]}", "longer than 8" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":\"2\"},\"kvs\":"
		    "[{\"key\":\"YQ==\"},{\"key\":\"YQ==\"},{\"key\":\"YQ==\"},"
		    "{\"key\":\"YQ==\"}]}", "more than 3" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":\"2\"},"
		    "\"more\":\"yes\"}", "not a boolean" },
		{ ETCD_RANGE, "{\"header\":{\"revision\":\"2\"},"
		    "\"header\":{\"revision\":\"3\"}}", "not JSON" },
		{ ETCD_TXN, "{\"header\":{\"revision\":\"2\"},\"responses\":"
		    "[{\"response_range\":{\"kvs\":[{\"key\":\"YQ==\","
		    "\"create_revision\":\"x\"}]}}]}", "not a decimal" },
		{ ETCD_TXN, "{\"header\":{\"revision\":\"2\"},\"responses\":"
		    "[1,2,3,4,5]}", "more than 4" },
		{ ETCD_GRANT, "{\"header\":{\"revision\":\"2\"},\"TTL\":\"2\"}",
		    "no lease ID" },
		{ ETCD_KEEPALIVE, "{\"header\":{\"revision\":\"2\"}}",
		    "result: missing" },
		{ ETCD_KEEPALIVE, "{\"result\":3}", "not an object" },
		{ ETCD_PUT, "{\"error\":7}", "not a string" },
		{ ETCD_PUT, "{\"message\":\"x\",\"code\":\"3\"}",
		    "not an integer" },
		{ ETCD_PUT, "{\"header\":{\"revision\":\"2\"}} {}",
		    "not JSON" },
	};
	struct etcd_limits lim;
	etcd_limits_default(&lim);
	lim.max_kvs = 3;
	lim.max_key = 8;
	lim.max_responses = 4;
	struct etcd_resp r;
	etcd_resp_init(&r);
	for (size_t i = 0; i < CATS_ARRAY_LEN(bad); i++) {
		char err[256] = "";
		int rc = parse(&lim, bad[i].kind, bad[i].body, &r, err,
		    sizeof(err));
		T_OK(rc < 0 && strstr(err, bad[i].why) != NULL,
		    "refused %s: %s (want \"%s\")", bad[i].body, err,
		    bad[i].why);
	}
	/* The body cap comes first. */
	lim.max_body = 10;
	char err[256];
	T_OK(parse(&lim, ETCD_PUT, "{\"header\":{\"revision\":\"2\"}}", &r,
	    err, sizeof(err)) < 0 && strstr(err, "longer than 10"),
	    "an answer past max_body: %s", err);
	/* Values at the cap pass; an error's control characters do not
	 * reach the log. */
	etcd_limits_default(&lim);
	lim.max_value = 3;
	T_OK(parse(&lim, ETCD_RANGE, "{\"header\":{\"revision\":\"2\"},"
	    "\"kvs\":[{\"key\":\"YQ==\",\"value\":\"YWJj\"}]}", &r, err,
	    sizeof(err)) == 0 && r.nkvs == 1 && r.kvs[0].vlen == 3 &&
	    memcmp(r.kvs[0].value, "abc", 4) == 0, "a value at the cap");
	T_OK(parse(&lim, ETCD_RANGE, "{\"header\":{\"revision\":\"2\"},"
	    "\"kvs\":[{\"key\":\"YQ==\",\"value\":\"YWJjZA==\"}]}", &r, err,
	    sizeof(err)) < 0, "a value past it: %s", err);
	T_OK(parse(&lim, ETCD_TXN, "{\"error\":\"a\\nb\",\"code\":14}", &r,
	    err, sizeof(err)) == 0 && r.error && r.code == 14 &&
	    strcmp(r.message, "a?b") == 0, "error message made printable");
	etcd_resp_free(&r);
}

static void
test_prefix_end(void)
{
	uint8_t out[8];
	size_t n = etcd_prefix_end("/a/b/", 5, out);
	T_OK(n == 5 && memcmp(out, "/a/b0", 5) == 0, "end of /a/b/ is /a/b0");
	n = etcd_prefix_end("a\xff\xff", 3, out);
	T_OK(n == 1 && out[0] == 'b', "trailing 0xff dropped");
	n = etcd_prefix_end("\xff", 1, out);
	T_OK(n == 1 && out[0] == 0, "all 0xff: every key");
}

static void
test_own(void)
{
	struct ha_own o;
	ha_own_init(&o, 500);
	T_OK(o.ttl_ms == 2000 && o.renew_ms == 1500 && o.keepalive_ms == 500,
	    "a lease under 2 s is etcd's minimum; renew 3/4, keepalive 1/4");
	T_OK(!ha_own_may_act(&o, 0), "a standby does not act");
	/* Granted on a request sent at 1000, won at 1040. */
	ha_own_won(&o, 77, 2, 9, 1000, 1040);
	T_OK(o.state == HA_OWNER && o.epoch == 9 && o.deadline == 2500,
	    "owner, epoch 9, deadline sent + 1.5 s");
	T_OK(ha_own_may_act(&o, 2499), "acts before the deadline");
	T_OK(!ha_own_keepalive_due(&o, 1539) && ha_own_keepalive_due(&o, 1540),
	    "keepalive due a quarter TTL after the win");
	/* Renewed on a request sent at 1540: the deadline moves from there,
	 * not from when the answer came. */
	ha_own_renewed(&o, 2, 1540, 1900);
	T_OK(o.deadline == 3040 && o.next_ka == 2400, "renewed: deadline %llu",
	    (unsigned long long)o.deadline);
	/* A slow answer to an older request never moves it back. */
	ha_own_renewed(&o, 2, 1100, 2000);
	T_OK(o.deadline == 3040, "an older renewal does not shorten it");
	/* etcd answers a longer TTL than asked: ours counts. */
	ha_own_renewed(&o, 30, 2400, 2410);
	T_OK(o.deadline == 3900, "TTL capped at the one asked for");
	ha_own_renew_failed(&o, 2900);
	T_OK(o.state == HA_OWNER && o.next_ka == 3025,
	    "a failed keepalive retried sooner");
	T_OK(ha_own_may_act(&o, 3899) && !ha_own_may_act(&o, 3900) &&
	    o.state == HA_LOST && strstr(o.why, "renew deadline"),
	    "stops at the deadline, before the lease (4400) can expire");
	T_OK(!ha_own_may_act(&o, 1000), "lost for good, whatever the time");
	ha_own_renewed(&o, 2, 3950, 3960);
	T_OK(o.state == HA_LOST, "a late renewal does not bring it back");

	ha_own_init(&o, 2000);
	ha_own_won(&o, 77, 2, 9, 0, 10);
	ha_own_renewed(&o, 0, 400, 410);
	T_OK(o.state == HA_LOST && strstr(o.why, "expired"),
	    "a keepalive without TTL: the lease is gone");
	ha_own_init(&o, 2000);
	ha_own_won(&o, 77, 2, 9, 0, 10);
	ha_own_fenced(&o);
	T_OK(o.state == HA_LOST && strstr(o.why, "fenced"), "fenced");
	ha_own_init(&o, 2000);
	ha_own_won(&o, 77, 2, 9, 0, 1600);
	T_OK(o.state == HA_LOST, "a campaign slower than the renew time is "
	    "no ownership");
	ha_own_init(&o, 5000);
	T_OK(o.renew_ms == 3750 && o.keepalive_ms == 1250, "a 5 s lease");
}

static void
test_ops(void)
{
	struct cats_rec r;
	uint64_t id;
	cats_rec_init(&r, CATS_T_BINDING);
	r.u.binding.id = 42;
	r.u.binding.op = CATS_BIND_INSTALL;
	T_OK(ha_op_of(&r, "m", &id) == HA_OP_PUT && id == 42, "install: put");
	r.u.binding.op = CATS_BIND_REMOVE;
	T_OK(ha_op_of(&r, "m", &id) == HA_OP_DELETE, "remove: delete");
	cats_rec_init(&r, CATS_T_STATUS);
	r.u.status.fwd = "m";
	r.u.status.event = CATS_EV_INSTALLED;
	CATS_SET(&r.u.status, STA, id, 42);
	T_OK(ha_op_of(&r, "m", &id) == HA_OP_PUT_COMMIT && id == 42,
	    "the manager's commit: put b/ID/i");
	T_OK(ha_op_of(&r, "other", &id) == HA_OP_NONE, "not the manager's");
	r.u.status.event = CATS_EV_HELLO;
	T_OK(ha_op_of(&r, "m", &id) == HA_OP_NONE,
	    "a hello: the epoch is the owner key's");
	cats_rec_init(&r, CATS_T_PATH_REQ);
	r.u.preq.txn = 7;
	T_OK(ha_op_of(&r, "m", &id) == HA_OP_PENDING && id == 7,
	    "a path-req: a pending request, by its transaction");
}

/* What an entry's records were. */
struct seen {
	size_t n;
	uint64_t ids[8];
	int ops[8];
};

static int
seen_rec(void *arg, const struct cats_rec *r, const uint8_t *v, size_t n)
{
	struct seen *s = arg;
	(void)v;
	(void)n;
	if (s->n < 8 && r->type == CATS_T_BINDING) {
		s->ids[s->n] = r->u.binding.id;
		s->ops[s->n] = r->u.binding.op;
	}
	s->n++;
	return 0;
}

static int
log_dec(const struct cats_buf *b, struct ha_log_hdr *h, struct seen *s)
{
	struct cats_dec d;
	struct cats_buf raw = { 0 };
	struct cats_err e;
	cats_dec_init(&d, NULL);
	memset(s, 0, sizeof(*s));
	int rc = ha_log_decode(&d, b->p, b->len, &raw, h, seen_rec, s, &e);
	cats_dec_free(&d);
	cats_buf_free(&raw);
	return rc;
}

static void
test_log(void)
{
	size_t len;
	char *recs = slurp("tests/data/ha/log_records.cbor", &len);
	struct cats_buf b = { 0 }, big = { 0 };
	struct ha_log_hdr h;
	struct seen s;
	T_OK(recs != NULL, "tests/data/ha/log_records.cbor read");
	if (recs == NULL)
		return;
	for (int z = 0; z < 2; z++) {
		T_OK(ha_log_seal(&b, 77, 12, 4, (uint8_t *)recs, len, z) == 0,
		    "sealed (deflate %d)", z);
		T_OK(log_dec(&b, &h, &s) == 0 && h.seq == 77 &&
		    h.next_id == 12 && h.n == 4 && s.n == 4 && s.ids[0] == 1 &&
		    s.ids[2] == 3 && s.ops[3] == CATS_BIND_REMOVE,
		    "decoded: seq, next id, the 4 records in order");
		T_OK(z == 0 ? h.rawlen == 0 : h.rawlen == len,
		    "rawlen %llu", (unsigned long long)h.rawlen);
	}
	/* Deflated records are only smaller with more of them. */
	for (int i = 0; i < 64; i++)
		cats_buf_add(&big, recs, len);
	T_OK(ha_log_seal(&b, 1, 0, 256, big.p, big.len, true) == 0 &&
	    b.len * 4 < big.len && log_dec(&b, &h, &s) == 0 && s.n == 256,
	    "64 copies deflate to %zu of %zu bytes and decode", b.len, big.len);
	/* Broken: each refused, nothing handed on past the break. */
	ha_log_seal(&b, 5, 0, 4, (uint8_t *)recs, len, false);
	b.p[1] = 2;
	T_OK(log_dec(&b, &h, &s) < 0, "another version refused");
	ha_log_seal(&b, 5, 0, 5, (uint8_t *)recs, len, false);
	T_OK(log_dec(&b, &h, &s) < 0 && s.n == 4, "a count past the records");
	ha_log_seal(&b, 5, 0, 3, (uint8_t *)recs, len, false);
	T_OK(log_dec(&b, &h, &s) < 0, "bytes after the records");
	ha_log_seal(&b, 5, 0, 4, (uint8_t *)recs, len - 1, false);
	T_OK(log_dec(&b, &h, &s) < 0 && s.n == 3, "a record cut short");
	ha_log_seal(&b, 5, 0, 9000, (uint8_t *)recs, len, false);
	T_OK(log_dec(&b, &h, &s) < 0 && s.n == 0, "a count past the cap");
	T_OK(ha_log_seal(&b, 5, 0, 1, big.p, HA_LOG_MAX_RAW + 1, false) < 0,
	    "records past the cap are not sealed");
	ha_log_seal(&b, 5, 0, 4, (uint8_t *)recs, len, true);
	b.p[b.len - 3] ^= 0x55;
	T_OK(log_dec(&b, &h, &s) < 0 && s.n == 0, "a corrupt deflate stream");
	ha_log_seal(&b, 5, 0, 4, (uint8_t *)recs, len, true);
	/* rawlen (the header's last uint, big-endian) one more: short. */
	b.p[37]++;
	T_OK(log_dec(&b, &h, &s) < 0 && s.n == 0, "inflates short of rawlen");
	b.p[37] -= 2;
	T_OK(log_dec(&b, &h, &s) < 0 && s.n == 0, "inflates past rawlen");
	b.p[37]++;
	b.p[30] = 0x7f;
	T_OK(log_dec(&b, &h, &s) < 0, "rawlen past the cap");
	cats_buf_reset(&b);
	cats_buf_add(&b, "\x84\x01\x01\x00\x00", 5);
	T_OK(log_dec(&b, &h, &s) < 0, "a header of 4");
	cats_buf_free(&b);
	cats_buf_free(&big);
	free(recs);
}

int
main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	test_fixtures("tests/data/ha", getenv("HA_REGEN") != NULL);
	test_malformed();
	test_prefix_end();
	test_own();
	test_ops();
	test_log();
	return t_done();
}
