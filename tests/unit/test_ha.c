/*
 * test_ha.c - the etcd answer decoder on answers recorded from etcd 3.4
 * (tests/data/ha: NAME.json decoded must print NAME.out; the kind is the
 * name's first word), its caps on malformed answers, and the ownership
 * logic of ha_own.h with time passed in, the log entries and chunks of
 * ha_log.h (sealed and decoded, deflated or not; every cap refused), and
 * the buckets of ha_fold.h (removes folded; a restore, chunks and log in
 * either order, the same).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ha/etcd.h"
#include "ha/ha.h"
#include "ha/ha_fold.h"
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
	cats_rec_error_init(&r, "no-path", "cats-bind", 7, 1000, NULL);
	T_OK(ha_op_of(&r, "m", &id) == HA_OP_PENDING_END && id == 7,
	    "an error of a transaction: its pending request's end");
	cats_rec_init(&r, CATS_T_ERROR);
	r.u.error.code = "bad-record";
	T_OK(ha_op_of(&r, "m", &id) == HA_OP_NONE,
	    "an error of no transaction: nothing");
}

/* What an entry's or a chunk's records were. */
struct seen {
	size_t n;
	uint64_t ids[300];
	int ops[300];
};

static int
seen_rec(void *arg, const struct cats_rec *r, const uint8_t *v, size_t n)
{
	struct seen *s = arg;
	(void)v;
	(void)n;
	if (s->n < 300 && r->type == CATS_T_BINDING) {
		s->ids[s->n] = r->u.binding.id;
		s->ops[s->n] = r->u.binding.op;
	}
	s->n++;
	return 0;
}

/* The entry (h) or the chunk (ch) b decoded, its records into s. */
static int
value_dec(const struct cats_buf *b, struct ha_log_hdr *h,
    struct ha_chunk_hdr *ch, struct seen *s)
{
	struct cats_dec d;
	struct cats_buf raw = { 0 };
	struct cats_err e;
	cats_dec_init(&d, NULL);
	memset(s, 0, sizeof(*s));
	int rc = h ? ha_log_decode(&d, b->p, b->len, &raw, h, seen_rec, s,
	    &e) : ha_chunk_decode(&d, b->p, b->len, &raw, ch, seen_rec, s, &e);
	cats_dec_free(&d);
	cats_buf_free(&raw);
	return rc;
}

static int
log_dec(const struct cats_buf *b, struct ha_log_hdr *h, struct seen *s)
{
	return value_dec(b, h, NULL, s);
}

static int
chunk_dec(const struct cats_buf *b, struct ha_chunk_hdr *h, struct seen *s)
{
	return value_dec(b, NULL, h, s);
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

/* Binding id's record into out (emptied): the first of the fixture's
 * records (an install) or, when rm, its last (a remove), id changed. */
static void
bind_rec(uint64_t id, bool rm, struct cats_buf *out)
{
	static struct cats_dec d;
	static struct cats_buf recs;
	static size_t off[4], len[4];
	static int init;
	if (!init) {
		size_t n;
		char *p = slurp("tests/data/ha/log_records.cbor", &n);
		struct cats_err e;
		cats_dec_init(&d, NULL);
		cats_buf_add(&recs, p, n);
		free(p);
		size_t o = 0;
		for (int i = 0; i < 4; i++) {
			struct cats_toks t = { 0 };
			size_t used = 0;
			cats_scan(recs.p + o, recs.len - o, true, &d.lim, &t,
			    NULL, &used, NULL, &e);
			cats_toks_free(&t);
			off[i] = o;
			len[i] = used;
			o += used;
		}
		init = 1;
	}
	struct cats_rec r;
	struct cats_err e;
	int i = rm ? 3 : 0;
	out->len = 0;
	if (cats_rec_decode(&d, recs.p + off[i], len[i], &r, &e) < 0)
		return;
	r.u.binding.id = id;
	cats_rec_encode(&r, out, false);
}

/* The chunk of the records of ids[0..n) (rm: the remove's record), as
 * h says, into out. */
static int
chunk_of(const uint64_t *ids, size_t n, bool rm, struct ha_chunk_hdr h,
    struct cats_buf *out)
{
	struct cats_buf raw = { 0 }, r = { 0 };
	for (size_t i = 0; i < n; i++) {
		bind_rec(ids[i], rm, &r);
		cats_buf_add(&raw, r.p, r.len);
	}
	h.n = n;
	int rc = ha_chunk_seal(out, &h, raw.p, raw.len);
	cats_buf_free(&raw);
	cats_buf_free(&r);
	return rc;
}

static void
test_chunk(void)
{
	struct cats_buf b = { 0 };
	struct ha_chunk_hdr h;
	struct seen s;
	uint64_t ids[256];
	for (size_t i = 0; i < 256; i++)
		ids[i] = 256 + i;
	int sealed = chunk_of(ids, 256, false, (struct ha_chunk_hdr){ 9, 256,
	    512, 0, 0 }, &b);
	T_OK(sealed == 0, "a chunk of 256 bindings sealed in %zu bytes", b.len);
	T_OK(chunk_dec(&b, &h, &s) == 0 && h.seq == 9 && h.lo == 256 &&
	    h.hi == 512 && h.n == 256 && h.rawlen > b.len && s.n == 256 &&
	    s.ids[0] == 256 && s.ids[255] == 511, "decoded: seq, range, the "
	    "256 in order, deflated (%llu bytes inflated)",
	    (unsigned long long)h.rawlen);
	T_OK(chunk_of(NULL, 0, false, (struct ha_chunk_hdr){ 3, 1, 256, 0, 0 },
	    &b) == 0 && chunk_dec(&b, &h, &s) == 0 && h.n == 0 && h.lo == 1,
	    "an empty chunk (bucket 0 starts at id 1)");
	/* Refused, each: nothing handed on past the break. */
	T_OK(chunk_of(ids, 1, false, (struct ha_chunk_hdr){ 1, 256, 513, 0,
	    0 }, &b) < 0, "a range past 256 ids is not sealed");
	static const struct {
		uint64_t lo, hi;
		size_t first, n;
		bool rm;
		const char *why;
	} bad[] = {
		{ 0, 256, 0, 1, false, "a range from id 0" },
		{ 300, 600, 0, 1, false, "a range across two buckets" },
		{ 300, 520, 0, 1, false, "a range past its bucket" },
		{ 256, 300, 0, 45, false, "bindings past the range" },
		{ 300, 512, 0, 1, false, "a binding before the range" },
		{ 256, 512, 0, 1, true, "a remove record" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ha_chunk_hdr hh = { 1, bad[i].lo, bad[i].hi, 0, 0 };
		struct cats_buf raw = { 0 }, r = { 0 };
		for (size_t j = 0; j < bad[i].n; j++) {
			bind_rec(ids[bad[i].first + j], bad[i].rm, &r);
			cats_buf_add(&raw, r.p, r.len);
		}
		/* Sealed by hand past ha_chunk_seal's own checks. */
		hh.n = bad[i].n;
		uint64_t lo = hh.lo, hi = hh.hi;
		if (lo == 0 || hi - lo > HA_CHUNK_IDS) {
			hh.lo = 256;
			hh.hi = 257;
		}
		ha_chunk_seal(&b, &hh, raw.p, raw.len);
		/* lo and hi are the header's items 3 and 4 (9 bytes each,
		 * big-endian, from byte 11). */
		for (int k = 0; k < 8; k++) {
			b.p[12 + k] = (uint8_t)(lo >> (56 - 8 * k));
			b.p[21 + k] = (uint8_t)(hi >> (56 - 8 * k));
		}
		T_OK(chunk_dec(&b, &h, &s) < 0 && s.n == 0, "refused: %s",
		    bad[i].why);
		cats_buf_free(&raw);
		cats_buf_free(&r);
	}
	uint64_t twice[] = { 260, 260 }, back[] = { 261, 260 };
	chunk_of(twice, 2, false, (struct ha_chunk_hdr){ 1, 256, 512, 0, 0 },
	    &b);
	T_OK(chunk_dec(&b, &h, &s) < 0 && s.n == 1, "refused: a binding twice");
	chunk_of(back, 2, false, (struct ha_chunk_hdr){ 1, 256, 512, 0, 0 },
	    &b);
	T_OK(chunk_dec(&b, &h, &s) < 0 && s.n == 1, "refused: out of order");
	chunk_of(ids, 3, false, (struct ha_chunk_hdr){ 1, 256, 512, 0, 0 },
	    &b);
	b.p[37]++;	/* n, the header's item 5, one more than its records */
	T_OK(chunk_dec(&b, &h, &s) < 0, "refused: a count past its records");
	b.p[36] = 1;	/* 257 */
	b.p[37] = 1;
	T_OK(chunk_dec(&b, &h, &s) < 0 && s.n == 0, "refused: a count past "
	    "the range's ids");
	chunk_of(ids, 3, false, (struct ha_chunk_hdr){ 1, 256, 512, 0, 0 },
	    &b);
	b.p[0] = 0x85;
	T_OK(chunk_dec(&b, &h, &s) < 0, "refused: a log entry's header");
	b.p[0] = 0x86;
	b.p[b.len - 2] ^= 0x5a;
	T_OK(chunk_dec(&b, &h, &s) < 0 && s.n == 0, "refused: a corrupt "
	    "deflate stream");
	cats_buf_free(&b);
}

/* Does s hold binding id, not removed? */
static bool
holds(struct ha_fold_set *s, uint64_t id)
{
	struct ha_bucket *b = ha_fold_bucket(s, ha_bucket_of(id));
	for (size_t i = 0; b != NULL && i < b->n; i++)
		if (b->e[i].id == id)
			return !b->e[i].rm;
	return false;
}

/* Bucket b of s sealed as of seq, its first chunk into out (nparts in
 * *np), and written. */
static void
seal_one(struct ha_fold_set *s, uint64_t b, uint64_t seq, struct cats_buf *out,
    size_t *np)
{
	struct ha_bucket *k = ha_fold_bucket(s, b);
	struct ha_part *parts = NULL;
	*np = 0;
	out->len = 0;
	if (k == NULL || ha_fold_seal(k, seq, &parts, np) < 0)
		return;
	cats_buf_add(out, parts[0].v.p, parts[0].v.len);
	ha_fold_written(s, k, seq, (uint32_t)*np);
	ha_parts_free(parts, *np);
}

static void
test_fold(void)
{
	struct ha_fold_set f = { 0 }, w = { 0 };
	struct cats_buf r = { 0 }, c = { 0 }, raw = { 0 };
	struct cats_dec d;
	struct cats_err e;
	struct ha_chunk_hdr h;
	struct seen s;
	size_t np;
	cats_dec_init(&d, NULL);
	/* Entry 1: bindings 1, 2, 3 and 300; entry 2 removes 2. */
	for (uint64_t id = 1; id <= 3; id++) {
		bind_rec(id, false, &r);
		ha_fold_put(&f, id, 1, false, r.p, r.len);
	}
	bind_rec(300, false, &r);
	ha_fold_put(&f, 300, 1, false, r.p, r.len);
	bind_rec(2, true, &r);
	T_OK(ha_fold_put(&f, 2, 2, true, r.p, r.len) == 1 && f.live == 3,
	    "a remove folded: 3 bindings live");
	size_t nb;
	struct ha_bucket **bs = ha_fold_buckets(&f, true, &nb);
	T_OK(nb == 2 && bs[0]->b == 0 && bs[1]->b == 1, "two buckets dirty");
	free(bs);
	seal_one(&f, 0, 2, &c, &np);
	T_OK(np == 1 && chunk_dec(&c, &h, &s) == 0 && s.n == 2 &&
	    s.ids[0] == 1 && s.ids[1] == 3 && h.seq == 2, "bucket 0's chunk "
	    "as of 2: bindings 1 and 3, not the removed 2");
	struct ha_bucket *b0 = ha_fold_bucket(&f, 0);
	T_OK(b0->n == 2 && !b0->dirty, "written: the remove record dropped");
	bind_rec(2, false, &r);
	T_OK(ha_fold_put(&f, 2, 1, false, r.p, r.len) == 0 && !holds(&f, 2),
	    "entry 1 folded again (a fold cut short): 2 stays removed");
	bind_rec(3, true, &r);
	ha_fold_put(&f, 3, 3, true, r.p, r.len);
	bind_rec(1, true, &r);
	ha_fold_put(&f, 1, 3, true, r.p, r.len);
	struct cats_buf empty = { 0 };
	seal_one(&f, 0, 3, &empty, &np);
	T_OK(np == 1 && chunk_dec(&empty, &h, &s) == 0 && h.n == 0 &&
	    ha_fold_bucket(&f, 0)->live == 0, "every binding of bucket 0 "
	    "removed: one empty chunk as of 3");
	struct cats_buf c300 = { 0 };
	seal_one(&f, 1, 3, &c300, &np);

	/*
	 * A standby: the log entry 4 (binding 5) seen by its watch first,
	 * then bucket 0's chunks as of 2 (1 and 3) and of 3 (empty): 5 is
	 * of a later entry and stays; the removed go.  Then entry 2 read
	 * again (a full read: the log is read after the chunks): older than
	 * the chunk, 2 does not come back.
	 */
	bind_rec(5, false, &r);
	ha_fold_put(&w, 5, 4, false, r.p, r.len);
	T_OK(ha_fold_chunk(&w, &d, c.p, c.len, 1, &raw, &h, &e) == 0 &&
	    holds(&w, 1) && holds(&w, 3) && holds(&w, 5), "chunk as of 2: "
	    "1, 3 and the later 5");
	T_OK(ha_fold_chunk(&w, &d, c300.p, c300.len, 256, &raw, &h, &e) == 0 &&
	    holds(&w, 300), "bucket 1's chunk: 300");
	bind_rec(2, false, &r);
	T_OK(ha_fold_put(&w, 2, 1, false, r.p, r.len) == 0 && !holds(&w, 2),
	    "entry 1 after the chunk: 2 not brought back");
	T_OK(ha_fold_chunk(&w, &d, empty.p, empty.len, 1, &raw, &h, &e) == 0 &&
	    !holds(&w, 1) && !holds(&w, 3) && holds(&w, 5) && w.live == 2,
	    "the empty chunk as of 3: 1 and 3 gone, 5 and 300 restored");
	T_OK(ha_fold_chunk(&w, &d, empty.p, empty.len, 256, &raw, &h, &e) ==
	    -1 && holds(&w, 300), "a chunk at another range's key: refused, "
	    "nothing changed");
	/* The other order: the chunks first, then the log. */
	struct ha_fold_set w2 = { 0 };
	ha_fold_chunk(&w2, &d, c.p, c.len, 1, &raw, &h, &e);
	ha_fold_chunk(&w2, &d, empty.p, empty.len, 1, &raw, &h, &e);
	ha_fold_chunk(&w2, &d, c300.p, c300.len, 256, &raw, &h, &e);
	bind_rec(5, false, &r);
	ha_fold_put(&w2, 5, 4, false, r.p, r.len);
	bind_rec(3, false, &r);
	ha_fold_put(&w2, 3, 1, false, r.p, r.len);
	T_OK(w2.live == 2 && holds(&w2, 5) && holds(&w2, 300) &&
	    !holds(&w2, 3), "chunks then the log: the same 2 bindings");
	/* A bucket past HA_LOG_TARGET bytes of records: several chunks. */
	struct ha_fold_set big = { 0 };
	for (uint64_t id = 512; id < 768; id++) {
		bind_rec(id, false, &r);
		/* Records padded past 2 KiB (sealing does not decode them):
		 * 256 of them pass 512 KiB. */
		ha_fold_put(&big, id, 7, false, r.p, r.len);
		struct ha_bucket *k = ha_fold_bucket(&big, 2);
		struct ha_fent *en = &k->e[k->n - 1];
		uint8_t *v = realloc(en->v, en->len + 2100);
		memset(v + en->len, 0xf6, 2100);	/* CBOR null, trailing */
		en->v = v;
		en->len += 2100;
	}
	struct ha_part *parts;
	int split = ha_fold_seal(ha_fold_bucket(&big, 2), 7, &parts, &np);
	T_OK(split == 0 && np >= 2 && parts[0].lo == 512 && parts[np - 1].hi == 768 &&
	    parts[0].hi == parts[1].lo, "a bucket of %zu KiB of records: %zu "
	    "chunks, consecutive", (size_t)256 * (r.len + 2100) >> 10, np);
	ha_parts_free(parts, np);
	ha_fold_free(&big);
	ha_fold_free(&f);
	ha_fold_free(&w);
	ha_fold_free(&w2);
	cats_buf_free(&r);
	cats_buf_free(&c);
	cats_buf_free(&c300);
	cats_buf_free(&empty);
	cats_buf_free(&raw);
	cats_dec_free(&d);
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
	test_chunk();
	test_fold();
	return t_done();
}
