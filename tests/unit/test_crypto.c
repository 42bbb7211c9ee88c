/*
 * test_crypto.c - key files, tokens, replay guard.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "sec/crypto.h"
#include "sec/token.h"
#include "t.h"

static char dir[] = "/tmp/cats-test-crypto-XXXXXX";

static const char *
path(const char *name)
{
	static char buf[256];
	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

static void
test_key_files(void)
{
	struct cats_key sk, pk, loaded;
	char err[512];
	cats_key_gen_ed25519(&sk, "issuer-1");
	cats_key_public(&sk, &pk);
	T_OK(cats_key_save(&sk, path("a.key"), 0600, err, sizeof(err)) == 0,
	    "secret key saved");
	T_OK(cats_key_save(&pk, path("a.pub"), 0644, err, sizeof(err)) == 0,
	    "public key saved");
	struct stat st;
	stat(path("a.key"), &st);
	T_OK((st.st_mode & 0777) == 0600, "secret key file is 0600");
	T_OK(cats_key_load(&loaded, path("a.key"), CATS_KEY_ED25519_SECRET, err,
	    sizeof(err)) == 0 && memcmp(loaded.pk, sk.pk, 32) == 0 &&
	    memcmp(loaded.kid, sk.kid, CATS_KID_LEN) == 0 &&
	    strcmp(loaded.name, "issuer-1") == 0, "secret key loads back");
	T_OK(cats_key_load(&loaded, path("a.pub"), CATS_KEY_ED25519_PUBLIC, err,
	    sizeof(err)) == 0 && memcmp(loaded.kid, sk.kid, CATS_KID_LEN) == 0,
	    "public key has the same kid");
	chmod(path("a.key"), 0640);
	T_OK(cats_key_load(&loaded, path("a.key"), -1, err, sizeof(err)) < 0 &&
	    strstr(err, "readable by group or others"),
	    "group-readable secret refused: %s", err);
	chmod(path("a.key"), 0604);
	T_OK(cats_key_load(&loaded, path("a.key"), -1, err, sizeof(err)) < 0,
	    "world-readable secret refused");
	T_OK(cats_key_load(&loaded, path("a.pub"), CATS_KEY_ED25519_SECRET, err,
	    sizeof(err)) < 0 && strstr(err, "expected ed25519-secret"),
	    "wrong kind refused: %s", err);
	T_OK(cats_key_load(&loaded, path("missing"), -1, err, sizeof(err)) < 0 &&
	    strstr(err, "No such file"), "missing file: %s", err);
	FILE *f = fopen(path("bad"), "w");
	fputs("cats-key v1 psk AAAA\n", f);
	fclose(f);
	chmod(path("bad"), 0600);
	T_OK(cats_key_load(&loaded, path("bad"), -1, err, sizeof(err)) < 0 &&
	    strstr(err, ":1:"), "short key refused with its line: %s", err);
	/* A keyring of several keys. */
	f = fopen(path("ring"), "w");
	fputs("# keyring\n", f);
	fclose(f);
	struct cats_keyring kr = { 0 };
	T_OK(cats_keyring_load(&kr, path("ring"), err, sizeof(err)) < 0,
	    "empty keyring refused");
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "cat %s/a.pub %s/a.pub > %s/ring", dir, dir,
	    dir);
	T_OK(system(cmd) == 0, "keyring written");
	T_OK(cats_keyring_load(&kr, path("ring"), err, sizeof(err)) == 0 &&
	    kr.n == 2 && cats_keyring_find(&kr, sk.kid) != NULL,
	    "keyring of two keys; find by kid");
	cats_keyring_free(&kr);
}

static void
test_tokens(void)
{
	struct cats_key sk, pk, other;
	struct cats_token c, out;
	struct cats_buf b = { 0 };
	struct cats_err e;
	cats_key_gen_ed25519(&sk, "site-ca");
	cats_key_public(&sk, &pk);
	cats_key_gen_ed25519(&other, "site-ca");
	struct cats_keyring kr = { &pk, 1 };
	memset(&c, 0, sizeof(c));
	strcpy(c.iss, "site-ca");
	strcpy(c.sub, "188.3.67.3:67");
	c.iat = 1000;
	c.exp = 2000;
	c.ncs = 2;
	strcpy(c.cs[0], "ARS");
	strcpy(c.cs[1], "VRS");
	memset(c.cti, 7, sizeof(c.cti));
	T_OK(cats_token_make(&c, &sk, &b) == 0, "token made");
	enum cats_token_status st = cats_token_verify(b.p, b.len, &kr, 1500000,
	    0, &out, &e);
	T_OK(st == CATS_TOKEN_OK && strcmp(out.sub, c.sub) == 0 &&
	    out.ncs == 2 && cats_token_allows(&out, "VRS") &&
	    !cats_token_allows(&out, "LLMS") && !out.has_cnf,
	    "token verifies and says what it authorizes");
	st = cats_token_verify(b.p, b.len, &kr, 2000000, 0, &out, &e);
	T_OK(st == CATS_TOKEN_EXPIRED, "expired at exp");
	st = cats_token_verify(b.p, b.len, &kr, 900000, 0, &out, &e);
	T_OK(st == CATS_TOKEN_NOT_YET_VALID, "issued in the future");
	st = cats_token_verify(b.p, b.len, &kr, 900000, 200000, &out, &e);
	T_OK(st == CATS_TOKEN_OK, "within the clock skew");
	b.p[b.len - 3] ^= 0x40;
	st = cats_token_verify(b.p, b.len, &kr, 1500000, 0, &out, &e);
	T_OK(st == CATS_TOKEN_BAD_SIGNATURE, "tampered signature");
	b.p[b.len - 3] ^= 0x40;
	/* Change a claim byte inside the payload: "ARS" -> "BRS". */
	for (size_t i = 0; i + 3 < b.len; i++)
		if (memcmp(b.p + i, "ARS", 3) == 0)
			b.p[i] = 'B';
	st = cats_token_verify(b.p, b.len, &kr, 1500000, 0, &out, &e);
	T_OK(st == CATS_TOKEN_BAD_SIGNATURE, "tampered claims");
	cats_buf_reset(&b);
	cats_token_make(&c, &other, &b);
	st = cats_token_verify(b.p, b.len, &kr, 1500000, 0, &out, &e);
	T_OK(st == CATS_TOKEN_UNKNOWN_KEY, "signed by another key");
	/* Issuer name must match the verifying key's name. */
	cats_buf_reset(&b);
	strcpy(c.iss, "mallory");
	cats_token_make(&c, &sk, &b);
	st = cats_token_verify(b.p, b.len, &kr, 1500000, 0, &out, &e);
	T_OK(st == CATS_TOKEN_WRONG_ISSUER, "wrong issuer: %s", e.reason);
	/* A confirmation key travels. */
	cats_buf_reset(&b);
	strcpy(c.iss, "site-ca");
	c.has_cnf = true;
	memset(c.cnf, 9, 32);
	cats_token_make(&c, &sk, &b);
	st = cats_token_verify(b.p, b.len, &kr, 1500000, 0, &out, &e);
	T_OK(st == CATS_TOKEN_OK && out.has_cnf && out.cnf[31] == 9,
	    "cnf key carried");
	/* Garbage and truncations never verify: every length is tried, the
	 * first one that verifies is named. */
	size_t n;
	for (n = 0; n < b.len; n++) {
		st = cats_token_verify(b.p, n, &kr, 1500000, 0, &out, &e);
		if (st == CATS_TOKEN_OK)
			break;
	}
	T_OK(b.len > 0 && n == b.len, "no truncation verifies (%s %zu of "
	    "%zu bytes)", n == b.len ? "all refused, up to" : "verified at",
	    n == b.len ? n - 1 : n, b.len);
	cats_buf_free(&b);
}

/* The one window rule: |ts - now| <= window, both ends in. */
static void
test_replay_window(void)
{
	T_OK(cats_replay_in_window(1000, 1000, 0), "window 0: ts == now passes");
	T_OK(!cats_replay_in_window(1001, 1000, 0) &&
	    !cats_replay_in_window(999, 1000, 0), "window 0: 1 ms off fails");
	T_OK(cats_replay_in_window(500, 1000, 500) &&
	    cats_replay_in_window(1500, 1000, 500), "both ends are in");
	T_OK(!cats_replay_in_window(499, 1000, 500) &&
	    !cats_replay_in_window(1501, 1000, 500), "1 ms past either end "
	    "is out");
	T_OK(cats_replay_in_window(0, UINT64_MAX, UINT64_MAX) &&
	    !cats_replay_in_window(UINT64_MAX, 0, UINT64_MAX - 1),
	    "no overflow at the extremes");
}

/* The tag guard: the window, replays, expiry, the cap (fail closed). */
static void
test_tag_guard(void)
{
	struct cats_tag_guard *g = cats_tag_guard_new(1000, 2);
	uint8_t a[32] = { 1 }, b[32] = { 2 }, c[32] = { 3 }, big[65] = { 4 };
	T_OK(cats_tag_guard_check(g, a, 0, 5000, 5000) == CATS_REPLAY_UNAUTH,
	    "no tag: not authenticated");
	T_OK(cats_tag_guard_check(g, big, 65, 5000, 5000) ==
	    CATS_REPLAY_UNAUTH && cats_tag_guard_check(g, big, 64, 5000,
	    5000) == CATS_REPLAY_OK, "64 bytes at most");
	cats_tag_guard_free(g);
	g = cats_tag_guard_new(1000, 2);
	T_OK(cats_tag_guard_check(g, a, 32, 3999, 5000) == CATS_REPLAY_WINDOW &&
	    cats_tag_guard_check(g, a, 32, 6001, 5000) == CATS_REPLAY_WINDOW,
	    "1 ms outside the window either way");
	T_OK(cats_tag_guard_check(g, a, 32, 4000, 5000) == CATS_REPLAY_OK,
	    "at the window's edge: accepted");
	T_OK(cats_tag_guard_check(g, a, 32, 5000, 5500) == CATS_REPLAY_SEEN,
	    "the same tag again: replay");
	T_OK(cats_tag_guard_check(g, a, 31, 5500, 5500) == CATS_REPLAY_OK,
	    "a tag is its bytes and its length");
	T_OK(cats_tag_guard_check(g, b, 32, 5500, 5500) == CATS_REPLAY_FULL,
	    "full: fails closed");
	/* Accepted at 5000 and 5500: forgotten after 7000 and 7500. */
	T_OK(cats_tag_guard_check(g, b, 32, 7000, 7000) == CATS_REPLAY_FULL,
	    "at now + 2 windows the tag is still remembered");
	T_OK(cats_tag_guard_check(g, b, 32, 7001, 7001) == CATS_REPLAY_OK,
	    "1 ms later it is forgotten");
	T_OK(cats_tag_guard_check(g, a, 32, 7001, 7001) == CATS_REPLAY_FULL &&
	    cats_tag_guard_check(g, a, 32, 7501, 7501) == CATS_REPLAY_OK,
	    "an old tag is new again once no record can carry it in");
	T_OK(cats_tag_guard_check(g, c, 32, 7501, 7501) == CATS_REPLAY_FULL,
	    "full again with two live tags");
	cats_tag_guard_free(g);
	g = cats_tag_guard_new(10, 0);
	T_OK(cats_tag_guard_check(g, a, 32, 0, 0) == CATS_REPLAY_OK &&
	    cats_tag_guard_check(g, b, 32, 0, 0) == CATS_REPLAY_FULL,
	    "max 0 is taken as 1");
	cats_tag_guard_free(g);
}

/* The sliding window of sequence numbers, per generation. */
static void
test_seqwin(void)
{
	struct cats_seqwin w = { 0 };
	T_OK(cats_seqwin_check(&w, 5, 100) == CATS_REPLAY_OK, "first number");
	T_OK(cats_seqwin_check(&w, 5, 100) == CATS_REPLAY_SEEN, "again: seen");
	T_OK(cats_seqwin_check(&w, 5, 37) == CATS_REPLAY_OK,
	    "63 below the top, out of order: accepted");
	T_OK(cats_seqwin_check(&w, 5, 36) == CATS_REPLAY_SEEN,
	    "64 below the top: outside the window");
	T_OK(cats_seqwin_check(&w, 5, 37) == CATS_REPLAY_SEEN,
	    "out-of-order numbers are remembered");
	T_OK(cats_seqwin_check(&w, 5, 101) == CATS_REPLAY_OK &&
	    cats_seqwin_check(&w, 5, 37) == CATS_REPLAY_SEEN &&
	    cats_seqwin_check(&w, 5, 38) == CATS_REPLAY_OK,
	    "the window moves with the top");
	T_OK(cats_seqwin_check(&w, 5, 165) == CATS_REPLAY_OK &&
	    cats_seqwin_check(&w, 5, 101) == CATS_REPLAY_SEEN &&
	    cats_seqwin_check(&w, 5, 102) == CATS_REPLAY_OK,
	    "a jump of 64: only the top is kept");
	T_OK(cats_seqwin_check(&w, 4, 1000) == CATS_REPLAY_STALE &&
	    w.gen == 5 && w.top == 165, "a lower generation: stale, no change");
	T_OK(cats_seqwin_check(&w, 6, 1) == CATS_REPLAY_OK &&
	    cats_seqwin_check(&w, 6, 165) == CATS_REPLAY_OK &&
	    cats_seqwin_check(&w, 6, 1) == CATS_REPLAY_SEEN,
	    "a higher generation starts a new window");
	T_OK(cats_seqwin_check(&w, 5, 200) == CATS_REPLAY_STALE,
	    "and the old one stays refused");
	struct cats_seqwin z = { 0 };
	T_OK(cats_seqwin_check(&z, 0, 0) == CATS_REPLAY_OK &&
	    cats_seqwin_check(&z, 0, 0) == CATS_REPLAY_SEEN &&
	    cats_seqwin_check(&z, 0, UINT64_MAX) == CATS_REPLAY_OK,
	    "0 and 2^64-1");
	T_OK(strcmp(cats_replay_reason(CATS_REPLAY_SEEN), "replayed record") ==
	    0 && strcmp(cats_replay_reason(CATS_REPLAY_FULL), "too many records "
	    "in the replay window") == 0 && strcmp(cats_replay_reason(
	    CATS_REPLAY_UNAUTH), "record is not authenticated") == 0 &&
	    strcmp(cats_replay_reason(CATS_REPLAY_WINDOW), "timestamp outside "
	    "the accepted window") == 0, "reasons as cats-pce said them");
}

/* Forwarders' hellos: the signing time against the start, then the last. */
static void
test_hello_guard(void)
{
	struct cats_replay *g = cats_hello_guard_new(1000);
	char why[200] = "";
	T_OK(g != NULL, "hello guard");
	T_OK(cats_hello_check(g, "IF-1", 999, why, sizeof(why)) ==
	    CATS_REPLAY_NONCE && strcmp(why, "hello of 999 not after 1000 (the "
	    "start of this process): a replay") == 0,
	    "a hello signed before the start refused: %s", why);
	T_OK(cats_hello_check(g, "IF-1", 1000, why, sizeof(why)) ==
	    CATS_REPLAY_OK, "a hello signed at the start is fresh");
	T_OK(cats_hello_check(g, "IF-1", 1000, why, sizeof(why)) ==
	    CATS_REPLAY_NONCE && strcmp(why, "hello of 1000 not after 1000 (the "
	    "last hello accepted): a replay") == 0,
	    "the same hello again refused: %s", why);
	T_OK(cats_hello_check(g, "IF-1", 1001, why, sizeof(why)) ==
	    CATS_REPLAY_OK, "the next millisecond is fresh");
	T_OK(cats_hello_check(g, "IF-2", 1000, why, sizeof(why)) ==
	    CATS_REPLAY_OK, "per forwarder");
	T_OK(cats_hello_check(g, "IF-2", UINT64_C(1) << 52, why, sizeof(why)) ==
	    CATS_REPLAY_OK, "no time window on hellos");
	cats_replay_free(g);
}

static void
test_replay(void)
{
	struct cats_replay *g = cats_replay_new(30000);
	uint64_t now = 1000000;
	T_OK(cats_replay_check(g, "sma-1", now, 10, now) == CATS_REPLAY_OK,
	    "first nonce accepted");
	T_OK(cats_replay_check(g, "sma-1", now, 10, now) == CATS_REPLAY_NONCE,
	    "repeated nonce refused");
	T_OK(cats_replay_check(g, "sma-1", now, 9, now) == CATS_REPLAY_NONCE,
	    "older nonce refused");
	T_OK(cats_replay_check(g, "sma-2", now, 9, now) == CATS_REPLAY_OK,
	    "nonces are per sender");
	T_OK(cats_replay_check(g, "sma-1", now + 30001, 11, now) ==
	    CATS_REPLAY_WINDOW, "31 s in the future refused");
	T_OK(cats_replay_check(g, "sma-1", now - 30001, 11, now) ==
	    CATS_REPLAY_WINDOW, "31 s in the past refused");
	T_OK(cats_replay_check(g, "sma-1", now - 30000, 11, now) ==
	    CATS_REPLAY_OK, "30 s in the past is within the window");
	T_OK(cats_replay_check(g, "sma-2", now + 30000, 10, now) ==
	    CATS_REPLAY_OK, "30 s in the future is within the window");
	T_OK(cats_replay_last(g, "sma-1") == 11, "last nonce remembered");
	T_OK(cats_replay_check(g, "sma-1", now + 30001, 12, now) ==
	    CATS_REPLAY_WINDOW && cats_replay_last(g, "sma-1") == 11,
	    "a refused record does not move the nonce");
	T_OK(cats_replay_check(g, "sma-1", now, 12, now) == CATS_REPLAY_OK,
	    "the nonce just above the last one accepted");
	cats_replay_free(g);

	/* The floor: at it passes, below it refused, for every sender. */
	g = cats_replay_new(CATS_REPLAY_NO_WINDOW);
	cats_replay_set_floor(g, 500);
	T_OK(cats_replay_check(g, "a", 0, 499, now) == CATS_REPLAY_NONCE &&
	    !cats_replay_seen(g, "a"), "below the floor refused, not kept");
	T_OK(cats_replay_check(g, "a", 0, 500, now) == CATS_REPLAY_OK &&
	    cats_replay_seen(g, "a"), "the floor itself passes (no window)");
	T_OK(cats_replay_check(g, "a", UINT64_MAX, 500, now) ==
	    CATS_REPLAY_NONCE, "then the floor is the last nonce: refused");
	T_OK(cats_replay_check(g, "b", UINT64_MAX, 501, 0) == CATS_REPLAY_OK,
	    "no window: any timestamp");
	cats_replay_free(g);
	T_OK(cats_ct_equal("abc", "abc", 3) && !cats_ct_equal("abc", "abd", 3),
	    "constant-time compare");
}

/*
 * The MAC tag is HMAC-SHA256 of the COSE MAC_structure (RFC 9052 6.3),
 * the same whether the key's HMAC state was made at load or not.
 */
static void
test_mac_structure(void)
{
	struct cats_key k, raw;
	cats_key_gen_psk(&k, "p");
	memset(&raw, 0, sizeof(raw));
	raw.kind = CATS_KEY_PSK;
	memcpy(raw.psk, k.psk, sizeof(raw.psk));
	const uint8_t prot[] = { 0xa1, 0x01, 0x05 };	/* {1: 5} HMAC 256/256 */
	uint8_t payload[300];
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)i;
	/* ["MAC0", h'a10105', h'', h'00 01 ...'] */
	uint8_t tbs[400];
	size_t n = 0;
	const uint8_t head[] = { 0x84, 0x64, 'M', 'A', 'C', '0', 0x43, 0xa1,
		0x01, 0x05, 0x40, 0x59, 0x01, 0x2c };
	memcpy(tbs, head, sizeof(head));
	n = sizeof(head);
	memcpy(tbs + n, payload, sizeof(payload));
	n += sizeof(payload);
	uint8_t want[32], tag[64], tag2[64];
	size_t tl = 0, tl2 = 0;
	crypto_auth_hmacsha256(want, tbs, n, k.psk);
	T_OK(cats_cose_tag(&k, prot, sizeof(prot), payload, sizeof(payload),
	    tag, &tl) == 0 && tl == 32 && memcmp(tag, want, 32) == 0,
	    "MAC tag: HMAC-SHA256 of the MAC_structure");
	T_OK(cats_cose_tag(&raw, prot, sizeof(prot), payload, sizeof(payload),
	    tag2, &tl2) == 0 && tl2 == 32 && memcmp(tag2, want, 32) == 0,
	    "MAC tag: the same from a key made by hand");
	T_OK(cats_cose_check(&raw, CATS_ALG_HMAC256, prot, sizeof(prot), payload,
	    sizeof(payload), tag, 32) == 0, "MAC tag checks");
	tag[31] ^= 1;
	T_OK(cats_cose_check(&k, CATS_ALG_HMAC256, prot, sizeof(prot), payload,
	    sizeof(payload), tag, 32) < 0, "a changed MAC tag fails");
}

/* A status record of fwd, MAC'd or signed with k, encoded and decoded
 * back (as a receiver has it): 0 if it verifies against kr. */
static int
verify_from(const struct cats_key *k, const struct cats_keyring *kr,
    const struct cats_key **who)
{
	struct cats_rec r, back;
	struct cats_buf b = { 0 };
	struct cats_dec d;
	struct cats_err e;
	cats_rec_init(&r, CATS_T_STATUS);
	r.u.status.fwd = "IF-1";
	r.u.status.event = CATS_EV_KEEPALIVE;
	r.u.status.ts = 1764460800000;
	cats_dec_init(&d, NULL);
	int rc = -1;
	if (cats_rec_sign(&r, k) == 0 && cats_rec_encode(&r, &b, true) == 0 &&
	    cats_rec_decode(&d, b.p, b.len, &back, &e) == 0)
		rc = cats_rec_verify(&back, kr, who, &e);
	cats_dec_free(&d);
	cats_buf_free(&b);
	return rc;
}

/*
 * The binding manager's key toward one forwarder, derived from that
 * forwarder's PSK: the same at both ends, the pair's alone, and no record
 * of the forwarder's own (nor of another's key) verifies under it.
 */
static void
test_derive_down(void)
{
	struct cats_key f, f2, ed, d, d2, other;
	cats_key_gen_psk(&f, "IF-1");
	cats_key_gen_psk(&f2, "IF-2");
	cats_key_gen_ed25519(&ed, "cats-bind");
	T_OK(cats_key_derive_down(&f, "cats-bind", &d) == 0 &&
	    cats_key_derive_down(&f, "cats-bind", &d2) == 0 &&
	    d.kind == CATS_KEY_PSK && memcmp(d.psk, d2.psk, 32) == 0 &&
	    memcmp(d.kid, d2.kid, CATS_KID_LEN) == 0 &&
	    strcmp(d.name, "cats-bind") == 0,
	    "derive: both ends get the same key, named for the manager");
	T_OK(memcmp(d.psk, f.psk, 32) != 0 &&
	    memcmp(d.kid, f.kid, CATS_KID_LEN) != 0,
	    "derive: not the forwarder's own key, nor its key id");
	T_OK(cats_key_derive_down(&f2, "cats-bind", &other) == 0 &&
	    memcmp(other.psk, d.psk, 32) != 0, "derive: each forwarder's "
	    "its own");
	T_OK(cats_key_derive_down(&ed, "cats-bind", &d2) == -1,
	    "derive: only from a PSK (an Ed25519 key: -1)");
	struct cats_keyring kr = { 0 };
	const struct cats_key *who = NULL;
	T_OK(cats_keyring_add(&kr, &d) == 0 && kr.n == 1 &&
	    verify_from(&d, &kr, &who) == 0 && who == &kr.v[0],
	    "a record MAC'd with it verifies at the forwarder");
	T_OK(verify_from(&f, &kr, NULL) < 0, "the forwarder's own record "
	    "reflected back does not");
	T_OK(verify_from(&other, &kr, NULL) < 0, "nor one MAC'd for another "
	    "forwarder");
	cats_keyring_free(&kr);
}

int
main(void)
{
	cats_crypto_init();
	if (mkdtemp(dir) == NULL)
		return 1;
	test_key_files();
	test_tokens();
	test_replay();
	test_hello_guard();
	test_replay_window();
	test_tag_guard();
	test_seqwin();
	test_mac_structure();
	test_derive_down();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return t_done();
}
