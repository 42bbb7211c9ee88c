/*
 * test_rec.c - every record type round-trips; every validation rule
 * rejects what it must, naming the field.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "sec/crypto.h"
#include "rec/json.h"
#include "t.h"

/* Decode a JSON text as a record; returns 0 or -1 with e set. */
static int
from_json(struct cats_dec *d, const char *text, struct cats_rec *r,
    struct cats_err *e)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	memset(e, 0, sizeof(*e));
	if (j == NULL) {
		cats_err_set(e, "", "bad JSON in test: %s", je.text);
		return -1;
	}
	int rc = cats_rec_from_json(d, j, r, e);
	json_decref(j);
	return rc;
}

static void
test_examples_round_trip(void)
{
	FILE *f = fopen("examples/records.jsonl", "r");
	T_OK(f != NULL, "examples/records.jsonl opens");
	if (f == NULL)
		return;
	bool seen[CATS_T__N] = { false };
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0;
	struct cats_dec d, d2;
	cats_dec_init(&d, NULL);
	cats_dec_init(&d2, NULL);
	while (getline(&line, &cap, f) > 0) {
		lineno++;
		struct cats_rec r, r2;
		struct cats_err e;
		if (from_json(&d, line, &r, &e) < 0) {
			T_OK(0, "line %d decodes: %s: %s", lineno, e.field,
			    e.reason);
			continue;
		}
		seen[r.type] = true;
		/* CBOR -> record -> CBOR is byte-identical. */
		struct cats_buf a = { 0 }, b = { 0 };
		cats_rec_encode(&r, &a, true);
		int rc = cats_rec_decode(&d2, a.p, a.len, &r2, &e);
		cats_rec_encode(&r2, &b, true);
		T_OK(rc == 0 && a.len == b.len && memcmp(a.p, b.p, a.len) == 0,
		    "line %d (%s) round-trips byte for byte", lineno,
		    cats_type_name(r.type));
		/* record -> JSON equals the input JSON. */
		json_error_t je;
		json_t *in = json_loads(line, 0, &je);
		json_t *out = cats_rec_to_json(&r2);
		T_OK(json_equal(in, out), "line %d JSON round-trips", lineno);
		json_t *ts = json_object_get(in, "ts");
		T_OK(cats_rec_ts(&r2) == (ts ? (uint64_t)json_integer_value(ts) :
		    0), "line %d (%s): cats_rec_ts is its ts", lineno,
		    cats_type_name(r.type));
		json_decref(in);
		json_decref(out);
		T_OK(cats_rec_validate(&r2, &e) == 0, "line %d validates",
		    lineno);
		/* A copy outlives its decoder's memory, written over here. */
		struct cats_rec c = r2;
		struct cats_arena ca = { 0 };
		struct cats_buf cb = { 0 };
		int crc = cats_struct_copy(cats_type_schema(r2.type), &c.u,
		    &r2.u, &ca);
		cats_arena_reset(&d2.arena);
		for (void *junk; d2.arena.used < (256u << 10) &&
		    (junk = cats_arena_alloc(&d2.arena, 64)) != NULL;)
			memset(junk, 0x5a, 64);
		memset(&r2, 0xa5, sizeof(r2));
		cats_rec_encode(&c, &cb, true);
		T_OK(crc == 0 && cb.len == a.len && memcmp(cb.p, a.p, a.len) ==
		    0, "line %d (%s): a copy encodes as the original", lineno,
		    cats_type_name(c.type));
		cats_arena_free(&ca);
		cats_buf_free(&cb);
		cats_buf_free(&a);
		cats_buf_free(&b);
	}
	for (int t = 0; t < CATS_T__N; t++)
		T_OK(seen[t], "examples have a %s record", cats_type_name(t));
	free(line);
	fclose(f);
	cats_dec_free(&d);
	cats_dec_free(&d2);
}

#define SCI "{\"type\":\"sci-report\",\"csci_id\":\"a:1\",\"cs_id\":\"S\"," \
	"\"seq\":1,\"ts\":1,\"health\":\"HEALTHY\""
#define FLOW "{\"proto\":6,\"src\":\"192.0.2.1\",\"dst\":\"192.0.2.2\"}"
#define DECISION "{\"cs_id\":\"S\",\"csci_id\":\"c\",\"locator\":\"198.51.100.1\"," \
	"\"egress\":\"E\",\"ts\":1}"

static const struct {
	const char *json, *field, *why;
} rejects[] = {
	{ "[]", "", "a record is a map" },
	{ "{\"csci_id\":\"x\"}", "type", "required" },
	{ "{\"type\":7}", "type", "expected text" },
	{ "{\"type\":\"bogus\"}", "type", "unknown record type" },
	{ "{\"type\":\"sci-report\",\"cs_id\":\"S\",\"seq\":1,\"ts\":1,"
	  "\"health\":\"HEALTHY\"}", "csci_id", "required field missing" },
	{ SCI ",\"gas\":4294967296}", "gas", "out of range" },
	{ SCI ",\"gas\":-1}", "gas", "expected unsigned integer" },
	{ SCI ",\"gas\":1.5}", "gas", "expected unsigned integer" },
	{ SCI ",\"gas\":\"400\"}", "gas", "expected unsigned integer" },
	{ SCI ",\"reputation\":256}", "reputation", "out of range" },
	{ SCI ",\"seq\":9007199254740992}", "seq", "out of range" },
	{ SCI ",\"port\":65536}", "port", "out of range" },
	{ "{\"type\":\"sci-report\",\"csci_id\":\"\",\"cs_id\":\"S\",\"seq\":1,"
	  "\"ts\":1,\"health\":\"HEALTHY\"}", "csci_id", "empty" },
	{ SCI ",\"locator\":\"198.51.100\"}", "locator", "not an IPv4 or IPv6" },
	{ SCI ",\"locator\":\"2001:db8:zz::1\"}", "locator", "not an IPv4" },
	{ SCI ",\"locator\":7}", "locator", "expected text" },
	{ "{\"type\":\"sci-report\",\"csci_id\":\"a\",\"cs_id\":\"S\",\"seq\":1,"
	  "\"ts\":1,\"health\":\"OK\"}", "health", "is not one of" },
	{ SCI ",\"ext\":{\"a\":\"b\"}}", "ext.a", "expected unsigned integer" },
	{ SCI ",\"ext\":[1]}", "ext", "expected map" },
	{ SCI ",\"token\":\"abc\"}", "token", "expected byte string" },
	{ SCI ",\"interval_ms\":true}", "interval_ms", "expected unsigned" },
	{ "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":\"m\",\"epoch\":1,"
	  "\"seq\":1,\"ts\":1,\"entries\":[{\"csci_id\":\"a\",\"cs_id\":\"S\","
	  "\"gas\":5000000000}]}", "entries[0].gas", "out of range" },
	{ "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":\"m\",\"epoch\":1,"
	  "\"seq\":1,\"ts\":1,\"entries\":[{\"csci_id\":\"a\"}]}",
	  "entries[0].cs_id", "required" },
	{ "{\"type\":\"metric\",\"op\":\"withdraw\",\"sma_id\":\"m\",\"epoch\":1,"
	  "\"seq\":1,\"ts\":1}", "entries", "withdraw names no entry" },
	{ "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":\"m\",\"epoch\":1,"
	  "\"seq\":1,\"ts\":1,\"part\":3,\"parts\":2}", "part", "part 3 of 2" },
	{ "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":\"m\",\"epoch\":1,"
	  "\"seq\":1,\"ts\":1,\"part\":1}", "parts", "go together" },
	{ "{\"type\":\"metric\",\"op\":\"full\",\"sma_id\":\"m\",\"epoch\":1,"
	  "\"seq\":1,\"ts\":1,\"entries\":[{\"csci_id\":\"a\",\"cs_id\":\"S\","
	  "\"flags\":[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\"]}]}",
	  "entries[0].flags", "exceed the limit" },
	{ "{\"type\":\"net\",\"scope\":\"link\",\"ts\":1,\"src\":\"A\"}", "dst",
	  "required for scope link" },
	{ "{\"type\":\"net\",\"scope\":\"node\",\"ts\":1}", "node",
	  "required for scope node" },
	{ "{\"type\":\"request\",\"txn\":0,\"ingress\":\"I\",\"ts\":1,\"flow\":"
	  FLOW "}", "txn", "out of range" },
	{ "{\"type\":\"request\",\"txn\":1,\"ingress\":\"I\",\"ts\":1,\"flow\":"
	  "{\"proto\":6,\"src\":\"192.0.2.1\",\"dst\":\"2001:db8::1\"}}",
	  "flow.dst", "different families" },
	{ "{\"type\":\"request\",\"txn\":1,\"ingress\":\"I\",\"ts\":1,\"flow\":"
	  "{\"proto\":6,\"src\":\"192.0.2.1\",\"dst\":\"192.0.2.2\","
	  "\"dport\":70000}}", "flow.dport", "out of range" },
	{ "{\"type\":\"path-req\",\"txn\":1,\"ts\":1,\"headend\":\"I\","
	  "\"endpoint\":\"E\",\"dataplane\":\"srv6\"}", "decision",
	  "required field missing" },
	{ "{\"type\":\"path-req\",\"txn\":1,\"ts\":1,\"headend\":\"I\","
	  "\"endpoint\":\"E\",\"dataplane\":\"mpls\",\"decision\":" DECISION "}",
	  "dataplane", "is not one of" },
	{ "{\"type\":\"path-req\",\"txn\":1,\"ts\":1,\"headend\":\"I\","
	  "\"endpoint\":\"E\",\"dataplane\":\"srv6\",\"decision\":{\"cs_id\":"
	  "\"S\",\"csci_id\":\"c\",\"egress\":\"E\",\"ts\":1}}",
	  "decision.locator", "required" },
	{ "{\"type\":\"path-rep\",\"txn\":1,\"ts\":1,\"status\":\"no-path\"}",
	  "reason", "required when status is no-path" },
	{ "{\"type\":\"path-rep\",\"txn\":1,\"ts\":1,\"status\":\"ok\"}",
	  "endpoint", "required when status is ok" },
	{ "{\"type\":\"path-rep\",\"txn\":1,\"ts\":1,\"status\":\"ok\","
	  "\"endpoint\":\"E\",\"segments\":[{\"kind\":\"node\"}]}",
	  "segments[0].label", "needs a label or a sid" },
	{ "{\"type\":\"path-rep\",\"txn\":1,\"ts\":1,\"status\":\"ok\","
	  "\"endpoint\":\"E\",\"segments\":[{\"kind\":\"node\",\"label\":3}]}",
	  "segments[0].label", "out of range" },
	{ "{\"type\":\"path-rep\",\"txn\":1,\"ts\":1,\"status\":\"ok\","
	  "\"endpoint\":\"E\",\"segments\":[{\"kind\":\"node\","
	  "\"sid\":\"10.0.0.1\"}]}", "segments[0].sid", "IPv6" },
	{ "{\"type\":\"binding\",\"id\":1,\"version\":1,\"epoch\":1,"
	  "\"op\":\"install\",\"ts\":1}", "fwd", "required for install" },
	{ "{\"type\":\"binding\",\"id\":1,\"version\":1,\"epoch\":1,"
	  "\"op\":\"install\",\"ts\":1,\"fwd\":{\"match\":" FLOW ",\"locator\":"
	  "\"198.51.100.1\",\"encap\":\"srv6\"},\"rev\":{\"match\":" FLOW
	  ",\"restore_src\":\"192.0.2.2\"}}", "fwd.sids", "srv6 encapsulation" },
	{ "{\"type\":\"binding\",\"id\":1,\"version\":1,\"epoch\":1,"
	  "\"op\":\"install\",\"ts\":1,\"fwd\":{\"match\":" FLOW ",\"locator\":"
	  "\"198.51.100.1\",\"encap\":\"ipip\"},\"rev\":{\"match\":" FLOW
	  ",\"restore_src\":\"192.0.2.2\"}}", "fwd.tunnel_dst", "ipip" },
	{ "{\"type\":\"status\",\"fwd\":\"F\",\"event\":\"exploded\",\"ts\":1}",
	  "event", "is not one of" },
	{ "{\"type\":\"error\",\"ts\":1}", "code", "required" },
	{ "{\"type\":\"error\",\"code\":\"x\",\"msg\":\"a\\u0000b\"}", "msg",
	  "NUL" },
	{ "{\"type\":\"stats\",\"tool\":\"t\",\"ts\":1,\"counters\":"
	  "{\"a\":1,\"a\":2}}", "", "" },	/* jansson keeps the last "a" */
	{ "{\"type\":\"error\",\"code\":\"x\",\"auth\":[1,2,3]}", "auth",
	  "expected [protected" },
	{ "{\"type\":\"error\",\"code\":\"x\",\"auth\":[{\"$bytes\":\"oQEn\"},{},"
	  "null,{\"$bytes\":\"AA\"}]}", "auth", "no 8-byte kid" },
	{ "{\"type\":\"error\",\"code\":\"x\",\"auth\":[{\"$bytes\":\"oQEA\"},{},"
	  "null,{\"$bytes\":\"AA\"}]}", "auth", "unsupported algorithm" },
};

static void
test_rejects(void)
{
	struct cats_dec d;
	cats_dec_init(&d, NULL);
	for (size_t i = 0; i < CATS_ARRAY_LEN(rejects); i++) {
		struct cats_rec r;
		struct cats_err e;
		int rc = from_json(&d, rejects[i].json, &r, &e);
		if (rejects[i].why[0] == '\0') {
			T_OK(rc == 0, "case %zu accepted", i);
			continue;
		}
		T_OK(rc < 0 && strcmp(e.field, rejects[i].field) == 0 &&
		    strstr(e.reason, rejects[i].why) != NULL,
		    "case %zu refused at \"%s\" (%s): got \"%s\" (%s)", i,
		    rejects[i].field, rejects[i].why, e.field, e.reason);
	}
	cats_dec_free(&d);
}

static void
test_cbor_level(void)
{
	struct cats_dec d;
	struct cats_rec r;
	struct cats_err e;
	cats_dec_init(&d, NULL);
	/* {"type":"error","code":"x"} then one stray byte. */
	uint8_t trailing[] = { 0xa2, 0x64, 't', 'y', 'p', 'e', 0x65, 'e', 'r',
		'r', 'o', 'r', 0x64, 'c', 'o', 'd', 'e', 0x61, 'x', 0x00 };
	T_OK(cats_rec_decode(&d, trailing, sizeof(trailing), &r, &e) < 0 &&
	    strstr(e.reason, "after the record"), "trailing bytes refused");
	T_OK(cats_rec_decode(&d, trailing, sizeof(trailing) - 1, &r, &e) == 0,
	    "the record alone decodes");
	/* An unknown key, and a non-text key, are ignored. */
	uint8_t unknown[] = { 0xa4, 0x64, 't', 'y', 'p', 'e', 0x65, 'e', 'r',
		'r', 'o', 'r', 0x64, 'c', 'o', 'd', 'e', 0x61, 'x', 0x63, 'n',
		'e', 'w', 0x82, 1, 2, 0x01, 0x02 };
	T_OK(cats_rec_decode(&d, unknown, sizeof(unknown), &r, &e) == 0,
	    "unknown keys are ignored");
	/* A key given twice, in CBOR. */
	uint8_t dup[] = { 0xa3, 0x64, 't', 'y', 'p', 'e', 0x65, 'e', 'r', 'r',
		'o', 'r', 0x64, 'c', 'o', 'd', 'e', 0x61, 'x', 0x64, 'c', 'o',
		'd', 'e', 0x61, 'y' };
	T_OK(cats_rec_decode(&d, dup, sizeof(dup), &r, &e) < 0 &&
	    strcmp(e.field, "code") == 0 && strstr(e.reason, "duplicate"),
	    "duplicate key refused");
	uint8_t duptype[] = { 0xa3, 0x64, 't', 'y', 'p', 'e', 0x65, 'e', 'r',
		'r', 'o', 'r', 0x64, 't', 'y', 'p', 'e', 0x65, 'e', 'r', 'r',
		'o', 'r', 0x64, 'c', 'o', 'd', 'e', 0x61, 'x' };
	T_OK(cats_rec_decode(&d, duptype, sizeof(duptype), &r, &e) < 0 &&
	    strstr(e.reason, "duplicate"), "duplicate type refused");
	/* A record bigger than the cap is refused before scanning. */
	struct cats_limits small = cats_limits_default;
	small.max_record = 16;
	struct cats_dec d2;
	cats_dec_init(&d2, &small);
	T_OK(cats_rec_decode(&d2, unknown, sizeof(unknown), &r, &e) < 0 &&
	    strstr(e.reason, "limit"), "record size cap: %s", e.reason);
	cats_dec_free(&d2);
	cats_dec_free(&d);
}

static void
test_build_and_set(void)
{
	struct cats_rec r;
	struct cats_err e;
	cats_rec_init(&r, CATS_T_SCI_REPORT);
	r.u.sci.csci_id = "a:1";
	r.u.sci.cs_id = "S";
	r.u.sci.seq = 3;
	r.u.sci.ts = 10;
	r.u.sci.health = CATS_DEGRADED;
	CATS_SET(&r.u.sci, SCI, gas, 0);
	T_OK(cats_rec_validate(&r, &e) == 0, "built record validates");
	struct cats_buf b = { 0 };
	cats_rec_encode(&r, &b, true);
	struct cats_dec d;
	struct cats_rec back;
	cats_dec_init(&d, NULL);
	T_OK(cats_rec_decode(&d, b.p, b.len, &back, &e) == 0 &&
	    CATS_HAS(&back.u.sci, SCI, gas) && back.u.sci.gas == 0 &&
	    !CATS_HAS(&back.u.sci, SCI, price),
	    "an optional zero survives; an absent field stays absent");
	r.u.sci.health = 9;
	T_OK(cats_rec_validate(&r, &e) < 0, "an enum out of range is refused");
	cats_dec_free(&d);
	cats_buf_free(&b);
}

/* r as compact JSON, for comparing (static buffer). */
static const char *
js(const struct cats_rec *r)
{
	static char buf[1024];
	json_t *j = cats_rec_to_json(r);
	char *t = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	cats_strlcpy(buf, t ? t : "", sizeof(buf));
	free(t);
	json_decref(j);
	return buf;
}

static void
test_error_builder(void)
{
	struct cats_rec r, h;
	struct cats_err e;
	cats_rec_error_init(&r, "malformed", "cats-x", 0, 0, NULL);
	T_OK(strcmp(js(&r), "{\"type\":\"error\",\"code\":\"malformed\","
	    "\"ts\":0,\"stage\":\"cats-x\"}") == 0,
	    "txn 0 and msg NULL absent, ts 0 kept: %s", js(&r));
	T_OK(cats_rec_validate(&r, &e) == 0, "it validates");
	cats_rec_error_init(&r, "x", NULL, 1, 1, "");
	T_OK(strcmp(js(&r), "{\"type\":\"error\",\"code\":\"x\",\"ts\":1,"
	    "\"txn\":1}") == 0, "txn 1 kept, msg \"\" and stage NULL absent: %s",
	    js(&r));
	cats_rec_error_init(&r, "x", "s", CATS_U53, CATS_U53, "m");
	T_OK(strcmp(js(&r), "{\"type\":\"error\",\"code\":\"x\",\"ts\":"
	    "9007199254740991,\"txn\":9007199254740991,\"stage\":\"s\","
	    "\"msg\":\"m\"}") == 0 && cats_rec_validate(&r, &e) == 0,
	    "2^53-1 for txn and ts: %s", js(&r));
	T_OK(cats_rec_ts(&r) == CATS_U53, "cats_rec_ts of an error");

	/* The route, and the same record as one built field by field. */
	struct cats_flow f = { 0 };
	f.proto = 6;
	cats_ip_parse("192.0.2.1", 9, &f.src);
	cats_ip_parse("192.0.2.2", 9, &f.dst);
	cats_rec_error_init(&r, "unauthorized", "cats-pce", 7, 5,
	    "path request refused: bad tag");
	CATS_SET(&r.u.error, ERR, index, 3);
	cats_rec_error_route(&r, "F1", &f);
	cats_rec_init(&h, CATS_T_ERROR);
	h.u.error.code = "unauthorized";
	CATS_SET(&h.u.error, ERR, ts, 5);
	CATS_SET(&h.u.error, ERR, txn, 7);
	CATS_SET(&h.u.error, ERR, index, 3);
	h.u.error.stage = "cats-pce";
	h.u.error.msg = "path request refused: bad tag";
	h.u.error.ingress = "F1";
	h.u.error.flow = f;
	h.u.error.has |= UINT64_C(1) << CATS_ERR_flow;
	struct cats_buf a = { 0 }, b = { 0 };
	cats_rec_encode(&r, &a, true);
	cats_rec_encode(&h, &b, true);
	T_OK(a.len == b.len && memcmp(a.p, b.p, a.len) == 0,
	    "builder and route equal the record built by hand: %s", js(&r));
	cats_rec_error_route(&r, NULL, NULL);
	T_OK(r.u.error.ingress == NULL && !CATS_HAS(&r.u.error, ERR, flow),
	    "a NULL route clears ingress and flow");
	cats_rec_error_init(&r, "x", NULL, 0, 0, NULL);
	T_OK(cats_rec_ts(&r) == 0 && CATS_HAS(&r.u.error, ERR, ts),
	    "ts 0 set reads 0");
	r.u.error.has = 0;
	r.u.error.ts = 9;
	T_OK(cats_rec_ts(&r) == 0, "an absent ts reads 0 whatever is stored");
	cats_rec_init(&r, CATS_T_SERVICE);
	r.u.service.ts = 9;
	T_OK(cats_rec_ts(&r) == 0, "a service without ts reads 0");
	CATS_SET(&r.u.service, SVC, ts, 9);
	T_OK(cats_rec_ts(&r) == 9, "a service with ts reads it");
	cats_buf_free(&a);
	cats_buf_free(&b);
}

static void
test_auth(void)
{
	struct cats_key sk, pk, psk;
	struct cats_keyring kr = { 0 };
	struct cats_rec r, back;
	struct cats_err e;
	struct cats_dec d;
	const struct cats_key *who = NULL;
	cats_crypto_init();
	cats_key_gen_ed25519(&sk, "sma-1");
	cats_key_public(&sk, &pk);
	cats_key_gen_psk(&psk, "fwd-1");
	struct cats_key keys[2] = { pk, psk };
	kr.v = keys;
	kr.n = 2;
	cats_dec_init(&d, NULL);
	for (int k = 0; k < 2; k++) {
		const struct cats_key *key = k ? &psk : &sk;
		cats_rec_init(&r, CATS_T_ERROR);
		r.u.error.code = "x";
		CATS_SET(&r.u.error, ERR, txn, 5);
		T_OK(cats_rec_sign(&r, key) == 0, "%s signs", k ? "psk" : "ed25519");
		struct cats_buf b = { 0 };
		cats_rec_encode(&r, &b, true);
		T_OK(cats_rec_decode(&d, b.p, b.len, &back, &e) == 0 &&
		    cats_rec_verify(&back, &kr, &who, &e) == 0 &&
		    strcmp(who->name, k ? "fwd-1" : "sma-1") == 0,
		    "%s verifies and names its sender",
		    k ? "COSE_Mac0" : "COSE_Sign1");
		/* Change one field: the tag no longer verifies. */
		back.u.error.txn = 6;
		T_OK(cats_rec_verify(&back, &kr, NULL, &e) < 0 &&
		    strstr(e.reason, "does not verify"), "tampered record: %s",
		    e.reason);
		/* Flip a bit of the tag. */
		b.p[b.len - 1] ^= 1;
		T_OK(cats_rec_decode(&d, b.p, b.len, &back, &e) == 0 &&
		    cats_rec_verify(&back, &kr, NULL, &e) < 0,
		    "tampered tag refused");
		cats_buf_free(&b);
	}
	struct cats_keyring empty = { 0 };
	cats_rec_init(&r, CATS_T_ERROR);
	r.u.error.code = "x";
	cats_rec_sign(&r, &psk);
	T_OK(cats_rec_verify(&r, &empty, NULL, &e) < 0 &&
	    strstr(e.reason, "unknown key"), "unknown key id refused");
	cats_rec_init(&r, CATS_T_ERROR);
	r.u.error.code = "x";
	T_OK(cats_rec_verify(&r, &kr, NULL, &e) < 0, "unsigned record refused");
	cats_dec_free(&d);
}


static uint64_t addr_rng = 0x9e3779b97f4a7c15;

static uint64_t
addr_rand(void)
{
	addr_rng ^= addr_rng << 13;
	addr_rng ^= addr_rng >> 7;
	addr_rng ^= addr_rng << 17;
	return addr_rng;
}

/* What cats_ip_parse() must say: inet_pton(3) of the text up to a NUL. */
static int
ref_parse(const char *s, size_t n, struct cats_ip *ip)
{
	char buf[INET6_ADDRSTRLEN];
	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	memset(ip, 0, sizeof(*ip));
	int af = memchr(buf, ':', n) != NULL ? AF_INET6 : AF_INET;
	if (inet_pton(af, buf, ip->a) != 1)
		return -1;
	ip->af = af == AF_INET6 ? 6 : 4;
	return 0;
}

/*
 * The hand-written address parser and formatter against inet_pton(3) and
 * inet_ntop(3): fixed cases, then random texts and addresses that favour
 * the corners (zero runs, embedded IPv4, leading zeros, stray separators).
 */
static void
test_addresses(void)
{
	static const char *const fixed[] = {
		"0.0.0.0", "255.255.255.255", "1.2.3.4", "01.2.3.4", "1.2.3",
		"1.2.3.4.", "1.2.3.4.5", "256.1.1.1", "1..2.3", ".1.2.3.4",
		"1.2.3.04", "1.2.3.4 ", "::", "::1", "1::", ":::", "::1:",
		"1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7::",
		"::ffff:1.2.3.4", "::1.2.3.4", "1:2:3:4:5:6:1.2.3.4",
		"1:2:3:4:5:6:7:1.2.3.4", "fe80::1%eth0", "FFFF::", "12345::",
		"1::2::3", ":1::2", "1:2:3:4:5:6:7:8:", "::ffff:1.2.3", "0::0",
		"0000:0000::00000", "1.2.3.4\0", "1.2.3.4\0:", "a:b\0c:d",
		"::ffff:255.255.255.255", "1:2::3.4.5.6", "1:2:3:4:5::1.2.3.4",
	};
	int bad = 0;
	for (size_t i = 0; i < CATS_ARRAY_LEN(fixed); i++) {
		const char *s = fixed[i];
		size_t n = strlen(s);
		struct cats_ip a, b;
		memset(&a, 0x5a, sizeof(a));
		memset(&b, 0x5a, sizeof(b));
		int ra = cats_ip_parse(s, n, &a), rb = ref_parse(s, n, &b);
		if (ra != rb || (ra == 0 && memcmp(&a, &b, sizeof(a)) != 0)) {
			bad++;
			printf("# parse \"%s\": %d, inet_pton %d\n", s, ra, rb);
		}
	}
	/* Texts with an embedded NUL: the C string ends there. */
	struct cats_ip a, b;
	T_OK(cats_ip_parse("1.2.3.4\0x", 9, &a) == 0 && a.af == 4 &&
	    cats_ip_parse("1.2.3.4\0:", 9, &b) < 0,
	    "an address ends at a NUL; a colon after it still means IPv6");
	static const char alpha[] = "0123456789abcdefABCDEF:::::...x\0";
	for (int i = 0; i < 400000; i++) {
		char s[48];
		size_t n = addr_rand() % 47;
		uint64_t kind = addr_rand() % 4;
		for (size_t j = 0; j < n; j++) {
			uint64_t r = addr_rand();
			if (kind == 0)
				s[j] = alpha[r % (sizeof(alpha) - 1)];
			else if (kind == 1)
				s[j] = "0123456789."[r % 11];
			else
				s[j] = "0f1:::.9"[r % 8];
		}
		if (kind == 3 && n > 0) {
			/* A formatted address, damaged in one place. */
			struct cats_ip x = { 6, { 0 } };
			for (int k = 0; k < 16; k++)
				x.a[k] = addr_rand() % 3 ? 0 : (uint8_t)addr_rand();
			char t[INET6_ADDRSTRLEN];
			inet_ntop(AF_INET6, x.a, t, sizeof(t));
			n = strlen(t);
			memcpy(s, t, n);
			s[addr_rand() % n] = alpha[addr_rand() % (sizeof(alpha) - 1)];
		}
		memset(&a, 0x5a, sizeof(a));
		memset(&b, 0x5a, sizeof(b));
		int ra = cats_ip_parse(s, n, &a), rb = ref_parse(s, n, &b);
		if (ra != rb || (ra == 0 && memcmp(&a, &b, sizeof(a)) != 0)) {
			if (bad++ < 10)
				printf("# parse \"%.*s\": %d, inet_pton %d\n",
				    (int)n, s, ra, rb);
		}
	}
	T_OK(bad == 0, "cats_ip_parse agrees with inet_pton (%d differ)", bad);
	bad = 0;
	for (int i = 0; i < 400000; i++) {
		struct cats_ip x;
		memset(&x, 0, sizeof(x));
		x.af = i % 5 == 0 ? 4 : 6;
		uint64_t pat = addr_rand();
		for (int k = 0; k < 16; k += 2) {
			/* Whole zero groups often, to make runs of every length. */
			if ((pat >> k) & 1) {
				x.a[k] = (uint8_t)addr_rand();
				x.a[k + 1] = (uint8_t)addr_rand();
				if (addr_rand() % 3 == 0)
					x.a[k] = 0;
			}
		}
		if (i % 7 == 0) {
			memset(x.a, 0, 10);
			x.a[10] = x.a[11] = i % 2 ? 0xff : 0;
		}
		char mine[INET6_ADDRSTRLEN], ref[INET6_ADDRSTRLEN];
		size_t len = i % 11 == 0 ? addr_rand() % 48 : sizeof(mine);
		memset(mine, 'x', sizeof(mine));
		cats_ip_fmt(&x, mine, len);
		if (inet_ntop(x.af == 4 ? AF_INET : AF_INET6, x.a, ref,
		    (socklen_t)len) == NULL)
			cats_strlcpy(ref, "-", len);
		if (len > 0 && strcmp(mine, ref) != 0) {
			if (bad++ < 10)
				printf("# fmt: \"%s\", inet_ntop \"%s\"\n", mine,
				    ref);
		}
		if (len == sizeof(mine)) {
			struct cats_ip y;
			if (cats_ip_parse(mine, strlen(mine), &y) < 0 ||
			    !cats_ip_eq(&x, &y))
				bad++;
		}
	}
	T_OK(bad == 0, "cats_ip_fmt agrees with inet_ntop and parses back "
	    "(%d differ)", bad);
}

/*
 * The record's type from the top-level keys the scanner notes: wherever
 * "type" stands, errors in the order a walk over the keys finds them.
 */
static void
test_type_key(void)
{
	static const struct {
		const char *name, *cbor;
		size_t n;
		const char *why;
	} cases[] = {
		{ "type key after the others", "\xa2\x64\x63\x6f\x64\x65\x61\x78\x64\x74\x79\x70\x65\x65\x65\x72\x72\x6f\x72", 19, NULL },
		{ "a bad second type key is a duplicate", "\xa3\x64\x74\x79\x70\x65\x65\x65\x72\x72\x6f\x72\x64\x63\x6f\x64\x65\x61\x78\x64\x74\x79\x70\x65\x65\x62\x6f\x67\x75\x73", 30, "duplicate key" },
		{ "the first type key is judged first", "\xa2\x64\x74\x79\x70\x65\x65\x62\x6f\x67\x75\x73\x64\x74\x79\x70\x65\x65\x65\x72\x72\x6f\x72", 23, "unknown record type" },
		{ "a first type key that is not text", "\xa2\x64\x74\x79\x70\x65\x07\x64\x74\x79\x70\x65\x65\x65\x72\x72\x6f\x72", 18, "expected text" },
		{ "a nested type key does not count", "\xa3\x64\x74\x79\x70\x65\x65\x65\x72\x72\x6f\x72\x64\x63\x6f\x64\x65\x61\x78\x62\x7a\x7a\xa1\x64\x74\x79\x70\x65\x01", 29, NULL },
		{ "a type value does not count", "\xa2\x64\x63\x6f\x64\x65\x64\x74\x79\x70\x65\x64\x74\x79\x70\x65\x65\x65\x72\x72\x6f\x72", 22, NULL },
		{ "indefinite map", "\xbf\x64\x74\x79\x70\x65\x65\x65\x72\x72\x6f\x72\x64\x63\x6f\x64\x65\x61\x78\xff", 20, NULL },
		{ "indefinite map, duplicate type", "\xbf\x64\x74\x79\x70\x65\x65\x65\x72\x72\x6f\x72\x64\x63\x6f\x64\x65\x61\x78\x64\x74\x79\x70\x65\x65\x65\x72\x72\x6f\x72\xff", 31, "duplicate key" },
		{ "indefinite map, type as a value", "\xbf\x64\x63\x6f\x64\x65\x64\x74\x79\x70\x65\x64\x74\x79\x70\x65\x65\x65\x72\x72\x6f\x72\xff", 23, NULL },
		{ "chunked type key", "\xa2\x7f\x62\x74\x79\x62\x70\x65\xff\x65\x65\x72\x72\x6f\x72\x64\x63\x6f\x64\x65\x61\x78", 22, NULL },
		{ "top-level array", "\x82\x64\x74\x79\x70\x65\x65\x65\x72\x72\x6f\x72", 12, "a record is a map" },
	};
	struct cats_dec d;
	cats_dec_init(&d, NULL);
	for (size_t i = 0; i < CATS_ARRAY_LEN(cases); i++) {
		struct cats_rec r;
		struct cats_err e;
		memset(&e, 0, sizeof(e));
		int rc = cats_rec_decode(&d, (const uint8_t *)cases[i].cbor,
		    cases[i].n, &r, &e);
		if (cases[i].why == NULL)
			T_OK(rc == 0 && r.type == CATS_T_ERROR, "%s: decodes (%s)",
			    cases[i].name, e.reason);
		else
			T_OK(rc < 0 && strstr(e.reason, cases[i].why) != NULL,
			    "%s: %s", cases[i].name, e.reason);
	}
	cats_dec_free(&d);
}

int
main(void)
{
	test_examples_round_trip();
	test_rejects();
	test_cbor_level();
	test_type_key();
	test_build_and_set();
	test_error_builder();
	test_auth();
	test_addresses();
	return t_done();
}
