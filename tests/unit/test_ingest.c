/*
 * test_ingest.c - the C-PS's end of the C-SMA synchronization: acks,
 * replays, windows, wrong MACs, bad signatures, unauthorized CS-IDs, keys
 * of another C-SMA, resources, resync and full-sync requests, retrieval,
 * soft state, the CST hook and entry-level site/egress.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "select/ingest.h"
#include "rec/json.h"
#include "base/log.h"
#include "t.h"

#define NOW UINT64_C(1700000000000)

static struct cats_dec dec, adec;
static struct cats_key psk, edsk, edpk, other;
static struct cats_keyring ring;
static uint64_t nonce = 1;
/* The client certificate of the requests send_body makes, or NULL. */
static const struct cats_ingest_cert *g_cert;

/* A metric record from JSON, with ts, a fresh nonce, signed by k. */
static void
body_add(struct cats_buf *b, const char *json, uint64_t ts,
    const struct cats_key *k)
{
	json_error_t je;
	struct cats_err e;
	struct cats_rec r;
	json_t *j = json_loads(json, 0, &je);
	if (j == NULL || cats_rec_from_json(&dec, j, &r, &e) < 0) {
		printf("# bad fixture: %s\n", json);
		exit(1);
	}
	json_decref(j);
	if (r.type == CATS_T_METRIC) {
		r.u.metric.ts = ts;
		CATS_SET(&r.u.metric, MET, nonce, nonce++);
	} else {
		r.u.sync.ts = ts;
		CATS_SET(&r.u.sync, SYNC, nonce, nonce++);
	}
	if (k != NULL)
		cats_rec_sign(&r, k);
	cats_rec_encode(&r, b, true);
}

/* The answer's records: ack into *ack (copied fields), sync present? */
struct ans {
	int status;
	int result, want;
	uint64_t epoch, seq, ps_epoch;
	bool refresh, has_sync, mac_ok;
	size_t metrics, entries;
	char reason[256];
};

static struct ans
send_body(struct cats_ingest *g, int op, struct cats_buf *b, uint64_t now)
{
	struct ans a;
	struct cats_buf out = { 0 };
	memset(&a, 0, sizeof(a));
	a.status = cats_ingest_handle_cert(g, op, b->p, b->len, "test", g_cert,
	    now, &out);
	size_t off = 0;
	while (off < out.len) {
		struct cats_rec r;
		struct cats_err e;
		size_t used;
		cats_arena_reset(&adec.arena);
		if (cats_scan(out.p + off, out.len - off, true, &adec.lim,
		    &adec.toks, &adec.arena, &used, NULL, &e) != CATS_SCAN_OK ||
		    cats_rec_from_toks(&adec, &r, &e) < 0) {
			/* The rest of the answer would be lost unseen. */
			T_OK(0, "the answer decodes at byte %zu of %zu: %s",
			    off, out.len, e.reason);
			break;
		}
		off += used;
		if (r.type == CATS_T_ACK) {
			a.result = r.u.ack.result;
			a.want = r.u.ack.want;
			a.epoch = r.u.ack.epoch;
			a.seq = r.u.ack.seq;
			a.ps_epoch = r.u.ack.ps_epoch;
			a.refresh = r.u.ack.refresh;
			if (r.u.ack.reason)
				cats_strlcpy(a.reason, r.u.ack.reason,
				    sizeof(a.reason));
			struct cats_keyring one = { &psk, 1 };
			a.mac_ok = cats_rec_verify(&r, &one, NULL, &e) == 0;
		} else if (r.type == CATS_T_SYNC) {
			a.has_sync = r.u.sync.mode == CATS_SYNC_FULL;
		} else if (r.type == CATS_T_METRIC) {
			a.metrics++;
			a.entries += r.u.metric.entries.n;
		}
	}
	cats_buf_free(&out);
	cats_buf_reset(b);
	return a;
}

#define ENT(csci, cs, gas) "{\"csci_id\":\"" csci "\",\"cs_id\":\"" cs \
	"\",\"health\":\"HEALTHY\",\"state\":\"HEALTHY\",\"gas\":" #gas \
	",\"locator\":\"192.0.2.1\"}"
#define MET(op, sma, seq, ents) "{\"type\":\"metric\",\"op\":\"" op \
	"\",\"sma_id\":\"" sma "\",\"epoch\":7,\"seq\":" #seq \
	",\"ts\":1,\"site\":\"site-a\",\"egress\":\"EF-1\",\"ttl_ms\":5000" \
	",\"entries\":[" ents "]}"

/* What the table says, as "csci:gas ..." in CS-ID order. */
static const char *
table(struct cats_cst *t)
{
	static char buf[512];
	const char *cs[] = { "ARS", "VRS" };
	buf[0] = '\0';
	for (size_t k = 0; k < 2; k++) {
		struct cats_cst_entry *const *v;
		size_t n = cats_cst_lookup(t, cs[k], &v);
		for (size_t i = 0; i < n; i++) {
			char one[64];
			snprintf(one, sizeof(one), "%s%s:%llu", buf[0] ? " " :
			    "", v[i]->csci_id, (unsigned long long)v[i]->gas);
			strncat(buf, one, sizeof(buf) - strlen(buf) - 1);
		}
	}
	return buf;
}

static int hook_up, hook_refresh, hook_rm;

static void
hook(void *arg, int what, const struct cats_cst_entry *e)
{
	(void)arg;
	(void)e;
	if (what == CATS_CST_UPSERT)
		hook_up++;
	else if (what == CATS_CST_REFRESH)
		hook_refresh++;
	else
		hook_rm++;
}

/* The audit lines written since off, into buf. */
static const char *
audit_since(const char *path, long *off, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	buf[0] = '\0';
	if (f == NULL)
		return buf;
	fseek(f, *off, SEEK_SET);
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = '\0';
	*off = ftell(f);
	fclose(f);
	return buf;
}

/*
 * Instance takeover (issue 16): sma-b, allowed every CS-ID and holding a
 * valid key, advertises sma-a's instance with its own locator.
 */
/* sma-b's metric record (epoch 1, ts now), signed, sent to /metrics. */
static struct ans
as_b(struct cats_ingest *g, const char *op, int seq, const char *egress,
    const char *entries, uint64_t now)
{
	char j[1024];
	struct cats_buf b = { 0 };
	snprintf(j, sizeof(j), "{\"type\":\"metric\",\"op\":\"%s\",\"sma_id\":"
	    "\"sma-b\",\"epoch\":1,\"seq\":%d,\"ts\":1,%s%s%s\"entries\":[%s]}",
	    op, seq, egress ? "\"egress\":\"" : "", egress ? egress : "",
	    egress ? "\"," : "", entries);
	body_add(&b, j, now, &edsk);
	struct ans a = send_body(g, CATS_ING_METRICS, &b, now);
	cats_buf_free(&b);
	return a;
}

static void
test_takeover(void)
{
	char path[] = "/tmp/cats-test-ingest-audit-XXXXXX", au[4096];
	int fd = mkstemp(path);
	long off = 0;
	close(fd);
	char spec[64];
	snprintf(spec, sizeof(spec), "file:%s", path);
	cats_audit_open(spec);
	struct cats_cst *t = cats_cst_new(180000, 0);
	struct cats_ingest_conf c = { .keys = &ring, .window_ms = 30000,
		.ps_id = "cps-1", .ps_epoch = 42, .refresh = true };
	struct cats_ingest *g = cats_ingest_new(&c, t);
	const char *ars[] = { "ARS" }, *any[] = { "*" };
	cats_ingest_allow(g, "sma-a", ars, 1);
	cats_ingest_allow(g, "sma-b", any, 1);
	char err[200] = "";
	cats_cst_scope(t, "sma-b", "198.51.100.0/24", "EF-1 EF-b", err,
	    sizeof(err));
	struct cats_buf b = { 0 };
	struct ans a;
	body_add(&b, MET("full", "sma-a", 1, ENT("a1", "ARS", 400)), NOW, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 200, "sma-a advertises a1");
	uint64_t gen = cats_cst_gen(t);
	a = as_b(g, "delta", 1, "EF-b",
	    "{\"csci_id\":\"a1\",\"cs_id\":\"ARS\",\"gas\":9999,"
	    "\"locator\":\"198.51.100.66\"}", NOW);
	const struct cats_cst_entry *e = cats_cst_get(t, "ARS", "a1");
	char ip[48];
	T_OK(a.status == 409 && a.result == CATS_ACK_BAD &&
	    strstr(a.reason, "owned by C-SMA sma-a") != NULL &&
	    strcmp(e->sma_id, "sma-a") == 0 && e->gas == 400 &&
	    strcmp(cats_ip_fmt(&e->locator, ip, sizeof(ip)), "192.0.2.1") == 0
	    && cats_cst_gen(t) == gen, "another C-SMA's delta for a1: 409, "
	    "the table as it was (%s)", a.reason);
	audit_since(path, &off, au, sizeof(au));
	T_OK(strstr(au, "event=ingest-refused sma=sma-b owner=sma-a ") !=
	    NULL && strstr(au, "status=409") != NULL,
	    "audited with both identities: %s", au);
	body_add(&b, MET("full", "sma-b", 2, ENT("a1", "ARS", 1)), NOW, &edsk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 409 && cats_cst_get(t, "ARS", "a1")->gas == 400,
	    "a full sync naming it: 409");
	a = as_b(g, "refresh", 3, NULL,
	    "{\"csci_id\":\"a1\",\"cs_id\":\"ARS\"}", NOW);
	T_OK(a.status == 409, "a refresh naming it: 409");
	a = as_b(g, "withdraw", 4, NULL,
	    "{\"csci_id\":\"A1 \",\"cs_id\":\"ARS\"}", NOW);
	T_OK(a.status == 200 && cats_cst_get(t, "ARS", "a1") != NULL,
	    "withdrawing another spelling removes nothing of sma-a's");
	/* Scope: a first advertisement cannot point outside the site. */
	a = as_b(g, "delta", 5, "EF-b",
	    "{\"csci_id\":\"b9\",\"cs_id\":\"ARS\",\"gas\":9999,"
	    "\"locator\":\"192.0.2.1\"}", NOW);
	T_OK(a.status == 403 && a.result == CATS_ACK_UNAUTHORIZED &&
	    cats_cst_get(t, "ARS", "b9") == NULL, "a locator outside sma-b's "
	    "prefixes: 403 (%s)", a.reason);
	a = as_b(g, "delta", 5, "EF-2",
	    "{\"csci_id\":\"b9\",\"cs_id\":\"ARS\","
	    "\"locator\":\"198.51.100.9\"}", NOW);
	T_OK(a.status == 403 && strstr(a.reason, "egress EF-2") != NULL,
	    "an egress not sma-b's: 403 (%s)", a.reason);
	a = as_b(g, "delta", 5, "EF-b",
	    "{\"csci_id\":\"b9\",\"cs_id\":\"ARS\","
	    "\"locator\":\"198.51.100.9\"}", NOW);
	T_OK(a.status == 200 && cats_cst_get(t, "ARS", "b9") != NULL,
	    "inside both: 200");
	a = as_b(g, "release", 6, NULL,
	    "{\"csci_id\":\"a1\",\"cs_id\":\"ARS\"}", NOW);
	T_OK(a.status == 400 && cats_cst_get(t, "ARS", "a1") != NULL,
	    "op release from a C-SMA: 400 (%s)", a.reason);
	audit_since(path, &off, au, sizeof(au));
	T_OK(strstr(au, "event=ingest-refused sma=sma-b peer=test status=400 "
	    "reason=\"record 0: op release") != NULL, "the 400 is audited "
	    "(%s)", au);
	struct cats_buf junk = { 0 };
	cats_buf_add(&junk, "\xa1\x61", 2);
	a = send_body(g, CATS_ING_METRICS, &junk, NOW);
	cats_buf_free(&junk);
	audit_since(path, &off, au, sizeof(au));
	T_OK(a.status == 400 && strstr(au, "event=ingest-refused sma=- "
	    "peer=test status=400") != NULL, "a malformed body's 400 is "
	    "audited too, once (%s)", au);
	int n400 = 0;
	for (const char *p = au; (p = strstr(p, "status=400")) != NULL; p++)
		n400++;
	T_OK(n400 == 1, "one audit line per refused body (%d)", n400);
	/* After expiry sma-b may take it over, and that is audited. */
	a = as_b(g, "delta", 7, "EF-b",
	    "{\"csci_id\":\"a1\",\"cs_id\":\"ARS\","
	    "\"locator\":\"198.51.100.1\"}", NOW + 5000);
	audit_since(path, &off, au, sizeof(au));
	T_OK(a.status == 200 && strcmp(cats_cst_get(t, "ARS", "a1")->sma_id,
	    "sma-b") == 0 && strstr(au, "event=instance-takeover sma=sma-b "
	    "from=sma-a") != NULL, "expired: taken over, audited (%s)", au);
	cats_ingest_free(g);
	cats_cst_free(t);
	cats_buf_free(&b);
	cats_audit_open("none");
	unlink(path);
}

/* A client certificate's SAN URIs limit what its peer may say. */
static void
test_cert(void)
{
	struct cats_cst *t = cats_cst_new(180000, 0);
	struct cats_ingest_conf c = { .keys = &ring, .window_ms = 30000,
		.ps_id = "cps-1" };
	struct cats_ingest *g = cats_ingest_new(&c, t);
	const char *any[] = { "*" };
	cats_ingest_allow(g, "sma-a", any, 1);
	cats_ingest_allow(g, "sma-b", any, 1);
	struct cats_buf b = { 0 };
	struct ans a;
	struct cats_ingest_cert cert, plain;
	const char *uris[] = { "cats:sma:sma-a", "cats:cs:ARS",
		"cats:site:site-a", "https://example.org/" };
	T_OK(cats_ingest_cert_parse(&cert, uris, 4) == 0 && cert.nsma == 1 &&
	    cert.ncs == 1 && cert.nsite == 1 &&
	    strcmp(cert.sma[0], "sma-a") == 0, "a certificate's cats: URIs");
	const char *many[CATS_INGEST_CERT_MAX + 1];
	for (size_t i = 0; i < CATS_ARRAY_LEN(many); i++)
		many[i] = "cats:cs:X";
	T_OK(cats_ingest_cert_parse(&plain, many, CATS_ARRAY_LEN(many)) < 0,
	    "more than %d of a kind: refused", CATS_INGEST_CERT_MAX);

	g_cert = &cert;
	body_add(&b, MET("full", "sma-a", 1, ENT("a1", "ARS", 400)), NOW, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 200 && strcmp(table(t), "a1:400") == 0,
	    "what the certificate names: taken (%d %s)", a.status, a.reason);
	body_add(&b, MET("full", "sma-b", 1, ENT("b1", "ARS", 1)), NOW, &edsk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 403 && a.result == CATS_ACK_UNAUTHORIZED &&
	    strstr(a.reason, "does not name C-SMA sma-b") != NULL &&
	    strcmp(table(t), "a1:400") == 0, "another C-SMA's records, its "
	    "key valid, on this certificate: 403 (%s)", a.reason);
	body_add(&b, MET("delta", "sma-a", 2, ENT("a2", "VRS", 1)), NOW, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 403 && strstr(a.reason, "does not name CS-ID VRS") &&
	    strcmp(table(t), "a1:400") == 0, "a CS-ID it does not name: 403 "
	    "(%s)", a.reason);
	body_add(&b, "{\"type\":\"metric\",\"op\":\"delta\",\"sma_id\":"
	    "\"sma-a\",\"epoch\":7,\"seq\":2,\"ts\":1,\"site\":\"site-a\","
	    "\"entries\":[{\"csci_id\":\"a3\",\"cs_id\":\"ARS\",\"gas\":1,"
	    "\"site\":\"s2\"}]}", NOW, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 403 && strstr(a.reason, "does not name site s2") &&
	    strcmp(table(t), "a1:400") == 0, "an entry's site it does not "
	    "name: 403 (%s)", a.reason);
	body_add(&b, MET("delta", "sma-a", 2, ENT("a1", "ARS", 7)), NOW, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 200 && strcmp(table(t), "a1:7") == 0,
	    "the refusals moved no sequence: seq 2 taken (%s)", a.reason);
	const char *other_uris[] = { "https://example.org/" };
	cats_ingest_cert_parse(&plain, other_uris, 1);
	g_cert = &plain;
	body_add(&b, MET("full", "sma-b", 1, ENT("b1", "VRS", 1)), NOW, &edsk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 200, "a certificate naming no C-SMA limits nothing "
	    "(%d %s)", a.status, a.reason);
	g_cert = NULL;
	body_add(&b, MET("delta", "sma-b", 2, ENT("b2", "VRS", 1)), NOW, &edsk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 200, "no certificate: the keys and configuration "
	    "only (%d %s)", a.status, a.reason);
	const struct cats_ingest_stats *st = cats_ingest_stats(g);
	T_OK(st->cert_refused == 3 && st->unauthorized == 3,
	    "counted: %llu refused by the certificate",
	    (unsigned long long)st->cert_refused);
	cats_ingest_free(g);
	cats_cst_free(t);
	cats_buf_free(&b);
}

int
main(void)
{
	cats_crypto_init();
	cats_audit_open("none");
	cats_dec_init(&dec, NULL);
	cats_dec_init(&adec, NULL);
	cats_key_gen_psk(&psk, "sma-a");
	cats_key_gen_ed25519(&edsk, "sma-b");
	cats_key_public(&edsk, &edpk);
	cats_key_gen_psk(&other, "sma-a");	/* same name, another key */
	struct cats_key keys[2] = { psk, edpk };
	ring.v = keys;
	ring.n = 2;

	struct cats_cst *t = cats_cst_new(180000, 0);
	cats_cst_set_hook(t, hook, NULL);
	struct cats_ingest_conf c = { .keys = &ring, .window_ms = 30000,
		.ps_id = "cps-1", .ps_epoch = 42, .refresh = true };
	struct cats_ingest *g = cats_ingest_new(&c, t);
	const char *ars[] = { "ARS" }, *any[] = { "*" };
	cats_ingest_allow(g, "sma-a", ars, 1);
	cats_ingest_allow(g, "sma-b", any, 1);
	struct cats_buf b = { 0 };
	struct ans a;

	/* A full snapshot, MAC'd with sma-a's PSK. */
	body_add(&b, MET("full", "sma-a", 1, ENT("a1", "ARS", 400) ","
	    ENT("a2", "ARS", 600)), NOW, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 200 && a.result == CATS_ACK_OK && a.seq == 1 &&
	    a.epoch == 7 && a.ps_epoch == 42 && a.refresh && !a.has_sync &&
	    a.want == CATS_SYNC_NONE, "a full snapshot: 200, ack seq 1 "
	    "(status %d, %s)", a.status, a.reason);
	T_OK(a.mac_ok, "the ack is MAC'd with the sender's PSK (the C-PS "
	    "authenticates itself)");
	T_OK(strcmp(table(t), "a1:400 a2:600") == 0, "the table holds both");
	T_OK(hook_up == 2, "the hook saw two upserts");

	/* The same bytes again: a replay. */
	body_add(&b, MET("delta", "sma-a", 2, ENT("a1", "ARS", 100)), NOW,
	    &psk);
	struct cats_buf copy = { 0 };
	cats_buf_add(&copy, b.p, b.len);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 200 && strcmp(table(t), "a1:100 a2:600") == 0,
	    "a delta applies");
	uint64_t gen = cats_cst_gen(t);
	a = send_body(g, CATS_ING_METRICS, &copy, NOW + 10);
	T_OK(a.status == 409 && a.result == CATS_ACK_REPLAY &&
	    strstr(a.reason, "nonce") != NULL && cats_cst_gen(t) == gen,
	    "a replayed advertisement: 409 replay, table unchanged (%s)",
	    a.reason);
	cats_buf_free(&copy);

	/* Out of the window, either way. */
	body_add(&b, MET("delta", "sma-a", 3, ENT("a1", "ARS", 1)), NOW -
	    30001, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 409 && a.result == CATS_ACK_REPLAY &&
	    cats_cst_gen(t) == gen, "ts 30.001 s old: 409 (%s)", a.reason);
	body_add(&b, MET("delta", "sma-a", 3, ENT("a1", "ARS", 1)), NOW +
	    30001, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 409 && cats_cst_gen(t) == gen, "ts 30.001 s ahead: "
	    "409");
	body_add(&b, MET("delta", "sma-a", 3, ENT("a1", "ARS", 2)), NOW +
	    30000, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 200 && strcmp(table(t), "a1:2 a2:600") == 0,
	    "ts 30 s ahead: inside the window");

	/* A wrong MAC: another key with the same name and key id? No: a
	 * different key has another kid; flip a byte of a good tag. */
	body_add(&b, MET("delta", "sma-a", 4, ENT("a1", "ARS", 3)), NOW,
	    &psk);
	b.p[b.len - 5] ^= 0x01;
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 401 && a.result == CATS_ACK_UNAUTHORIZED &&
	    strstr(a.reason, "MAC does not verify") != NULL &&
	    cats_cst_gen(t) == gen + 1 && !a.mac_ok, "a wrong MAC: 401, "
	    "table unchanged, the answer is not MAC'd (%s)", a.reason);
	body_add(&b, MET("delta", "sma-a", 4, ENT("a1", "ARS", 3)), NOW,
	    &other);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 401 && strstr(a.reason, "unknown key") != NULL,
	    "an unknown key: 401 (%s)", a.reason);
	body_add(&b, MET("delta", "sma-a", 4, ENT("a1", "ARS", 3)), NOW,
	    NULL);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 401 && strstr(a.reason, "not authenticated") !=
	    NULL, "no MAC at all: 401");

	/* Ed25519: a bad signature, then sma-b's key speaking for sma-a. */
	body_add(&b, MET("full", "sma-b", 1, ENT("b1", "VRS", 50)), NOW,
	    &edsk);
	b.p[b.len - 3] ^= 0x80;
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 401 && strstr(a.reason, "signature does not verify")
	    != NULL && strcmp(table(t), "a1:2 a2:600") == 0,
	    "a bad signature: 401, table unchanged (%s)", a.reason);
	body_add(&b, MET("delta", "sma-a", 4, ENT("a1", "ARS", 9)), NOW,
	    &edsk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 403 && a.result == CATS_ACK_UNAUTHORIZED &&
	    strstr(a.reason, "the key of sma-b cannot speak for sma-a") !=
	    NULL && strcmp(table(t), "a1:2 a2:600") == 0,
	    "another C-SMA's key: 403 (%s)", a.reason);

	/* sma-a may advertise ARS only. */
	body_add(&b, MET("delta", "sma-a", 4, ENT("v1", "VRS", 5)), NOW, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 403 && strstr(a.reason, "may not advertise CS-ID "
	    "VRS") != NULL && strcmp(table(t), "a1:2 a2:600") == 0,
	    "an unauthorized CS-ID: 403, table unchanged (%s)", a.reason);
	/* A C-SMA nobody allowed may advertise nothing. */
	struct cats_key zz;
	cats_key_gen_psk(&zz, "sma-z");
	struct cats_key keys3[3] = { psk, edpk, zz };
	ring.v = keys3;
	ring.n = 3;
	body_add(&b, MET("full", "sma-z", 1, ENT("z1", "ARS", 5)), NOW, &zz);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 403, "a C-SMA without allowed CS-IDs: 403");

	/* Resources. */
	body_add(&b, MET("delta", "sma-a", 4, ENT("a1", "ARS", 5) ","
	    ENT("a2", "ARS", 5)), NOW, &psk);
	a = send_body(g, CATS_ING_UPDATE, &b, NOW);
	T_OK(a.status == 400 && strstr(a.reason, "/update takes a delta of "
	    "one entry") != NULL, "/update with two entries: 400");
	body_add(&b, MET("delta", "sma-a", 4, ENT("a1", "ARS", 5)), NOW, &psk);
	a = send_body(g, CATS_ING_WITHDRAW, &b, NOW);
	T_OK(a.status == 400, "/withdraw with a delta: 400");
	body_add(&b, MET("delta", "sma-a", 4, ENT("a1", "ARS", 5)), NOW, &psk);
	a = send_body(g, CATS_ING_UPDATE, &b, NOW);
	T_OK(a.status == 200 && strcmp(table(t), "a1:5 a2:600") == 0,
	    "/update with one entry");
	body_add(&b, MET("withdraw", "sma-a", 5, ENT("a2", "ARS", 0)), NOW,
	    &psk);
	a = send_body(g, CATS_ING_WITHDRAW, &b, NOW);
	T_OK(a.status == 200 && strcmp(table(t), "a1:5") == 0 && hook_rm == 1,
	    "/withdraw removes; the hook saw it");

	/* Stale and out of order: harmless, not applied. */
	body_add(&b, MET("delta", "sma-a", 5, ENT("a1", "ARS", 77)), NOW, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 200 && a.result == CATS_ACK_STALE && a.seq == 5 &&
	    strcmp(table(t), "a1:5") == 0, "a sequence already applied: "
	    "stale, ack says 5");

	/* A gap: applied, and the C-PS asks for a full sync. */
	body_add(&b, MET("delta", "sma-a", 9, ENT("a1", "ARS", 8)), NOW, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 200 && a.result == CATS_ACK_RESYNC &&
	    a.want == CATS_SYNC_FULL && a.has_sync, "a gap: want full, and a "
	    "sync record");
	body_add(&b, MET("refresh", "sma-a", 10, ""), NOW, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.want == CATS_SYNC_FULL && a.has_sync, "still wanted until a "
	    "whole snapshot comes");
	T_OK(hook_refresh == 1, "a refresh reaches the hook");
	body_add(&b, MET("full", "sma-a", 11, ENT("a1", "ARS", 1) ","
	    ENT("a3", "ARS", 3)), NOW, &psk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 200 && a.want == CATS_SYNC_NONE && !a.has_sync &&
	    strcmp(table(t), "a1:1 a3:3") == 0, "the snapshot: nothing more "
	    "wanted");

	/* A C-PS that restarted knows nothing: a delta asks for a full. */
	struct cats_cst *t2 = cats_cst_new(180000, 0);
	struct cats_ingest *g2 = cats_ingest_new(&c, t2);
	cats_ingest_allow(g2, "sma-a", ars, 1);
	body_add(&b, MET("delta", "sma-a", 12, ENT("a1", "ARS", 4)), NOW, &psk);
	a = send_body(g2, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 200 && a.want == CATS_SYNC_FULL && a.has_sync,
	    "an unknown C-SMA's delta: applied, full sync wanted");
	cats_ingest_free(g2);
	cats_cst_free(t2);

	/* Retrieval for reconciliation. */
	body_add(&b, "{\"type\":\"sync\",\"mode\":\"incremental\",\"ts\":1,"
	    "\"sma_id\":\"sma-a\",\"epoch\":7}", NOW, &psk);
	a = send_body(g, CATS_ING_RETRIEVE, &b, NOW);
	T_OK(a.status == 200 && a.epoch == 7 && a.seq == 11 && a.metrics == 0
	    && a.mac_ok, "retrieve: the position the C-PS holds");
	body_add(&b, "{\"type\":\"sync\",\"mode\":\"full\",\"ts\":1,"
	    "\"sma_id\":\"sma-a\",\"epoch\":7}", NOW, &psk);
	a = send_body(g, CATS_ING_RETRIEVE, &b, NOW);
	T_OK(a.status == 200 && a.metrics == 1 && a.entries == 2,
	    "retrieve full: the entries too");
	body_add(&b, MET("delta", "sma-a", 12, ENT("a1", "ARS", 4)), NOW, &psk);
	a = send_body(g, CATS_ING_RETRIEVE, &b, NOW);
	T_OK(a.status == 400, "retrieve takes sync records");

	/* Malformed bodies. */
	uint8_t junk[] = { 0xa1, 0x61, 'x' };
	cats_buf_add(&b, junk, sizeof(junk));
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 400 && a.result == CATS_ACK_BAD, "a truncated item: "
	    "400");
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	T_OK(a.status == 400, "an empty body: 400");

	/* Entry-level site and egress win over the record's. */
	body_add(&b, "{\"type\":\"metric\",\"op\":\"delta\",\"sma_id\":\"sma-b\","
	    "\"epoch\":1,\"seq\":1,\"ts\":1,\"site\":\"domain\",\"entries\":["
	    "{\"csci_id\":\"b2\",\"cs_id\":\"VRS\",\"gas\":1,\"site\":\"s2\","
	    "\"egress\":\"EF-2\"}]}", NOW, &edsk);
	a = send_body(g, CATS_ING_METRICS, &b, NOW);
	const struct cats_cst_entry *e = cats_cst_get(t, "VRS", "b2");
	T_OK(a.status == 200 && e != NULL && strcmp(e->site, "s2") == 0 &&
	    strcmp(e->egress, "EF-2") == 0, "an entry's own site and egress");

	/* Soft state: heartbeats stop, entries age out on their own. */
	e = cats_cst_get(t, "ARS", "a1");
	T_OK(cats_cst_fresh(e, NOW + 4999) && !cats_cst_fresh(e, NOW + 5000),
	    "ttl_ms 5000: fresh until then");
	size_t purged = cats_cst_expire(t, NOW + 5000 + 600000, 600000);
	T_OK(purged == 2 && cats_cst_count(t) == 1, "purged after the grace; "
	    "b2 (the default 180 s ttl) stays (%zu)", purged);

	const struct cats_ingest_stats *st = cats_ingest_stats(g);
	T_OK(st->replays == 3 && st->unauthenticated == 4 &&
	    st->unauthorized == 3 && st->retrievals == 2, "counters: %llu "
	    "replays, %llu unauthenticated, %llu unauthorized",
	    (unsigned long long)st->replays,
	    (unsigned long long)st->unauthenticated,
	    (unsigned long long)st->unauthorized);
	cats_ingest_free(g);
	cats_cst_free(t);
	cats_buf_free(&b);
	test_takeover();
	test_cert();
	cats_dec_free(&dec);
	cats_dec_free(&adec);
	return t_done();
}
