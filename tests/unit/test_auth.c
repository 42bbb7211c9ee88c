/*
 * test_auth.c - a record's auth as an attacker edits it: the tag is
 * checked over the protected header bytes that came, and critical header
 * parameters (RFC 9052 §3.1) a verifier does not understand are refused.
 */
#include <stdlib.h>
#include <string.h>

#include "sec/crypto.h"
#include "t.h"

/* A signed status record, encoded with its auth. */
static void
signed_status(const struct cats_key *k, struct cats_buf *b)
{
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_STATUS);
	r.u.status.fwd = "IF-1";
	r.u.status.event = CATS_EV_HELLO;
	r.u.status.ts = 1764460800000;
	cats_rec_sign(&r, k);
	b->len = 0;
	cats_rec_encode(&r, b, true);
}

/*
 * The record of b with its protected header (bstr of 13 bytes: {1: alg,
 * 4: kid}) replaced by prot (n bytes), into out.
 */
static bool
splice_prot(const struct cats_buf *b, const uint8_t *prot, size_t n,
    struct cats_buf *out)
{
	for (size_t i = 0; i + 3 < b->len; i++) {
		if (b->p[i] == 0x84 && b->p[i + 1] == 0x4d &&
		    b->p[i + 2] == 0xa2 && b->p[i + 3] == 0x01) {
			uint8_t head = (uint8_t)(0x40 | n);
			out->len = 0;
			cats_buf_add(out, b->p, i + 1);
			cats_buf_add(out, &head, 1);
			cats_buf_add(out, prot, n);
			cats_buf_add(out, b->p + i + 15, b->len - i - 15);
			return n < 24;
		}
	}
	return false;
}

/* {1: alg, ...more, 4: kid} with count pairs in all. */
static size_t
prot_with(const struct cats_key *k, int alg, const uint8_t *more, size_t mn,
    unsigned pairs, uint8_t *out)
{
	size_t n = 0;
	out[n++] = (uint8_t)(0xa0 | pairs);
	out[n++] = 0x01;
	out[n++] = alg < 0 ? (uint8_t)(0x20 | (-1 - alg)) : (uint8_t)alg;
	memcpy(out + n, more, mn);
	n += mn;
	out[n++] = 0x04;
	out[n++] = 0x48;
	memcpy(out + n, k->kid, CATS_KID_LEN);
	return n + CATS_KID_LEN;
}

static int
decode(struct cats_dec *d, const struct cats_buf *b, struct cats_rec *r,
    struct cats_err *e)
{
	memset(e, 0, sizeof(*e));
	return cats_rec_decode(d, b->p, b->len, r, e);
}

int
main(void)
{
	cats_crypto_init();
	struct cats_key psk, ed, edpub;
	cats_key_gen_psk(&psk, "IF-1");
	cats_key_gen_ed25519(&ed, "IF-1");
	cats_key_public(&ed, &edpub);
	struct cats_keyring kr = { 0 };
	kr.v = calloc(2, sizeof(*kr.v));
	kr.v[0] = psk;
	kr.v[1] = edpub;
	kr.n = 2;
	struct cats_dec d;
	cats_dec_init(&d, NULL);
	struct cats_buf b = { 0 }, x = { 0 }, again = { 0 };
	struct cats_rec r;
	struct cats_err e;
	const struct cats_key *who;
	uint8_t prot[40];

	for (int i = 0; i < 2; i++) {
		const struct cats_key *k = i ? &ed : &psk;
		const char *kind = i ? "EdDSA" : "HMAC";
		int alg = i ? CATS_ALG_EDDSA : CATS_ALG_HMAC256;
		signed_status(k, &b);
		T_OK(decode(&d, &b, &r, &e) == 0 && cats_rec_verify(&r, &kr,
		    &who, &e) == 0, "%s: as signed, verified", kind);
		/* Decoded and encoded again: the same bytes. */
		again.len = 0;
		cats_rec_encode(&r, &again, true);
		T_OK(again.len == b.len && memcmp(again.p, b.p, b.len) == 0,
		    "%s: encoded again byte for byte", kind);

		/* A parameter added to the protected header, tag kept. */
		static const uint8_t ctype[] = { 0x03, 0x00 };
		size_t n = prot_with(k, alg, ctype, sizeof(ctype), 3, prot);
		T_OK(splice_prot(&b, prot, n, &x) && decode(&d, &x, &r, &e) == 0,
		    "%s: an added content-type parameter decodes", kind);
		T_OK(cats_rec_verify(&r, &kr, &who, &e) < 0,
		    "%s: and no longer verifies: %s", kind, e.reason);

		/* The same alg written in two bytes: another header. */
		uint8_t wide[14] = { 0xa2, 0x01, alg < 0 ? 0x38 : 0x18,
			(uint8_t)(alg < 0 ? -1 - alg : alg), 0x04, 0x48 };
		memcpy(wide + 6, k->kid, CATS_KID_LEN);
		T_OK(splice_prot(&b, wide, sizeof(wide), &x) &&
		    decode(&d, &x, &r, &e) == 0 &&
		    cats_rec_verify(&r, &kr, &who, &e) < 0,
		    "%s: alg in a longer encoding: refused (%s)", kind,
		    e.reason);

		/* crit naming a parameter nobody here understands. */
		static const uint8_t crit3[] = { 0x02, 0x81, 0x03, 0x03, 0x00 };
		n = prot_with(k, alg, crit3, sizeof(crit3), 4, prot);
		T_OK(splice_prot(&b, prot, n, &x) && decode(&d, &x, &r, &e) < 0 &&
		    strstr(e.reason, "critical header parameter"),
		    "%s: crit [3] refused: %s", kind, e.reason);
		static const uint8_t critx[] = { 0x02, 0x80 };
		n = prot_with(k, alg, critx, sizeof(critx), 3, prot);
		T_OK(splice_prot(&b, prot, n, &x) && decode(&d, &x, &r, &e) < 0,
		    "%s: an empty crit refused: %s", kind, e.reason);
		static const uint8_t dup[] = { 0x01, 0x05 };
		n = prot_with(k, alg, dup, sizeof(dup), 3, prot);
		T_OK(splice_prot(&b, prot, n, &x) && decode(&d, &x, &r, &e) < 0 &&
		    strstr(e.reason, "twice"), "%s: alg twice refused: %s",
		    kind, e.reason);

		/* crit [1], and a tag made over that header: verified. */
		static const uint8_t crit1[] = { 0x02, 0x81, 0x01 };
		n = prot_with(k, alg, crit1, sizeof(crit1), 3, prot);
		T_OK(splice_prot(&b, prot, n, &x) && decode(&d, &x, &r, &e) == 0,
		    "%s: crit [1] (alg, understood) decodes", kind);
		struct cats_buf pay = { 0 };
		cats_rec_encode(&r, &pay, false);
		cats_cose_tag(k, prot, n, pay.p, pay.len, r.auth.tag,
		    &r.auth.tag_len);
		cats_buf_free(&pay);
		T_OK(cats_rec_verify(&r, &kr, &who, &e) == 0,
		    "%s: and verifies over the header that came", kind);
	}

	/* crit in the unprotected header. */
	signed_status(&psk, &b);
	for (size_t i = 0; i + 1 < b.len; i++) {
		if (b.p[i] == 0xa0 && b.p[i + 1] == 0xf6) {
			static const uint8_t un[] = { 0xa1, 0x02, 0x81, 0x01 };
			x.len = 0;
			cats_buf_add(&x, b.p, i);
			cats_buf_add(&x, un, sizeof(un));
			cats_buf_add(&x, b.p + i + 1, b.len - i - 1);
			break;
		}
	}
	T_OK(decode(&d, &x, &r, &e) < 0 && strstr(e.reason, "unprotected"),
	    "crit in the unprotected header refused: %s", e.reason);

	cats_buf_free(&b);
	cats_buf_free(&x);
	cats_buf_free(&again);
	cats_dec_free(&d);
	cats_keyring_free(&kr);
	return t_done();
}
