/*
 * token.c - CWT claims in COSE_Sign1, made and checked.
 */
#include <stdio.h>
#include <string.h>

#include <cbor.h>

#include "sec/token.h"

const char *
cats_token_status_name(enum cats_token_status s)
{
	switch (s) {
	case CATS_TOKEN_OK: return "ok";
	case CATS_TOKEN_MALFORMED: return "malformed token";
	case CATS_TOKEN_UNKNOWN_KEY: return "token signed by an unknown key";
	case CATS_TOKEN_BAD_SIGNATURE: return "token signature does not verify";
	case CATS_TOKEN_WRONG_ISSUER: return "token issuer does not match its key";
	case CATS_TOKEN_EXPIRED: return "token expired";
	case CATS_TOKEN_NOT_YET_VALID: return "token issued in the future";
	}
	return "?";
}

#define H 9

static int
put_uint(struct cats_buf *b, uint64_t v)
{
	if (cats_buf_reserve(b, H) < 0)
		return -1;
	b->len += cbor_encode_uint(v, b->p + b->len, H);
	return 0;
}

static int
put_head(struct cats_buf *b, size_t (*fn)(size_t, unsigned char *, size_t),
    size_t n)
{
	if (cats_buf_reserve(b, H) < 0)
		return -1;
	b->len += fn(n, b->p + b->len, H);
	return 0;
}

static int
put_text(struct cats_buf *b, const char *s)
{
	size_t n = strlen(s);
	return put_head(b, cbor_encode_string_start, n) < 0 ? -1
	    : cats_buf_add(b, s, n);
}

static int
put_bytes(struct cats_buf *b, const uint8_t *p, size_t n)
{
	return put_head(b, cbor_encode_bytestring_start, n) < 0 ? -1
	    : cats_buf_add(b, p, n);
}

static int
put_negint(struct cats_buf *b, int64_t v)
{
	if (cats_buf_reserve(b, H) < 0)
		return -1;
	b->len += cbor_encode_negint((uint64_t)(-1 - v), b->p + b->len, H);
	return 0;
}

static int
encode_claims(const struct cats_token *c, struct cats_buf *b)
{
	size_t n = 6 + (c->has_cnf ? 1 : 0);
	int r = put_head(b, cbor_encode_map_start, n);
	r |= put_uint(b, 1) | put_text(b, c->iss);
	r |= put_uint(b, 2) | put_text(b, c->sub);
	r |= put_uint(b, 4) | put_uint(b, c->exp);
	r |= put_uint(b, 6) | put_uint(b, c->iat);
	r |= put_uint(b, 7) | put_bytes(b, c->cti, CATS_TOKEN_CTI_LEN);
	if (c->has_cnf) {
		/* 8: {1: {1: 1 (OKP), -1: 6 (Ed25519), -2: x}} */
		r |= put_uint(b, 8) | put_head(b, cbor_encode_map_start, 1);
		r |= put_uint(b, 1) | put_head(b, cbor_encode_map_start, 3);
		r |= put_uint(b, 1) | put_uint(b, 1);
		r |= put_negint(b, -1) | put_uint(b, 6);
		r |= put_negint(b, -2) | put_bytes(b, c->cnf, 32);
	}
	r |= put_text(b, "cs") | put_head(b, cbor_encode_array_start, c->ncs);
	for (size_t i = 0; i < c->ncs; i++)
		r |= put_text(b, c->cs[i]);
	return r ? -1 : 0;
}

int
cats_token_make(const struct cats_token *claims, const struct cats_key *issuer,
    struct cats_buf *out)
{
	struct cats_buf payload = { 0 };
	uint8_t prot[32], sig[64];
	size_t siglen;
	int rc = -1;
	if (issuer->kind != CATS_KEY_ED25519_SECRET)
		return -1;
	size_t protlen = cats_cose_protected(CATS_ALG_EDDSA, issuer->kid, prot,
	    sizeof(prot));
	if (protlen && encode_claims(claims, &payload) == 0 &&
	    cats_cose_tag(issuer, prot, protlen, payload.p, payload.len, sig,
	    &siglen) == 0) {
		rc = put_head(out, cbor_encode_array_start, 4);
		rc |= put_bytes(out, prot, protlen);
		rc |= put_head(out, cbor_encode_map_start, 0);
		rc |= put_bytes(out, payload.p, payload.len);
		rc |= put_bytes(out, sig, siglen);
	}
	cats_buf_free(&payload);
	return rc ? -1 : 0;
}

static const struct cats_limits token_limits = {
	.max_record = 4096, .max_depth = 4, .max_tokens = 128,
	.max_string = 2048, .max_count = 64,
};

static bool
is_uint_key(const struct cats_tok *k, uint64_t v)
{
	return k->kind == CATS_TK_UINT && k->v.u == v;
}

static bool
is_nint_key(const struct cats_tok *k, int64_t v)
{
	return k->kind == CATS_TK_NINT && (int64_t)(-1 - (int64_t)k->v.u) == v;
}

static int
copy_text(const struct cats_tok *v, char *dst, size_t cap)
{
	if (v->kind != CATS_TK_TEXT || v->n >= cap || v->n == 0 ||
	    memchr(v->v.p, '\0', v->n))
		return -1;
	memcpy(dst, v->v.p, v->n);
	dst[v->n] = '\0';
	return 0;
}

static int
parse_cnf(const struct cats_tok *t, size_t i, struct cats_token *c)
{
	if (t[i].kind != CATS_TK_MAP || t[i].n != 1 || !is_uint_key(&t[i + 1], 1))
		return -1;
	size_t key = t[i + 1].next;
	if (t[key].kind != CATS_TK_MAP)
		return -1;
	size_t j = key + 1;
	bool okp = false, ed = false;
	for (uint32_t p = 0; p < t[key].n; p++) {
		const struct cats_tok *k = &t[j], *v = &t[k->next];
		if (is_uint_key(k, 1))
			okp = v->kind == CATS_TK_UINT && v->v.u == 1;
		else if (is_nint_key(k, -1))
			ed = v->kind == CATS_TK_UINT && v->v.u == 6;
		else if (is_nint_key(k, -2) && v->kind == CATS_TK_BYTES &&
		    v->n == 32) {
			memcpy(c->cnf, v->v.p, 32);
			c->has_cnf = true;
		}
		j = v->next;
	}
	return okp && ed && c->has_cnf ? 0 : -1;
}

static int
parse_claims(const uint8_t *p, size_t n, struct cats_token *c,
    struct cats_err *err)
{
	struct cats_toks t = { 0 };
	size_t used;
	int rc = -1;
	unsigned seen = 0;
	if (cats_scan(p, n, true, &token_limits, &t, NULL, &used, NULL, err) !=
	    CATS_SCAN_OK || used != n || t.t[0].kind != CATS_TK_MAP) {
		cats_err_set(err, "token", "claims are not a CBOR map");
		goto out;
	}
	size_t j = 1;
	for (uint32_t i = 0; i < t.t[0].n; i++) {
		const struct cats_tok *k = &t.t[j];
		size_t vi = k->next;
		const struct cats_tok *v = &t.t[vi];
		int bad = 0;
		if (is_uint_key(k, 1)) {
			bad = copy_text(v, c->iss, sizeof(c->iss));
			seen |= 1;
		} else if (is_uint_key(k, 2)) {
			bad = copy_text(v, c->sub, sizeof(c->sub));
			seen |= 2;
		} else if (is_uint_key(k, 4)) {
			bad = v->kind != CATS_TK_UINT;
			c->exp = v->v.u;
			seen |= 4;
		} else if (is_uint_key(k, 6)) {
			bad = v->kind != CATS_TK_UINT;
			c->iat = v->v.u;
		} else if (is_uint_key(k, 7)) {
			bad = v->kind != CATS_TK_BYTES ||
			    v->n != CATS_TOKEN_CTI_LEN;
			if (!bad)
				memcpy(c->cti, v->v.p, CATS_TOKEN_CTI_LEN);
			seen |= 8;
		} else if (is_uint_key(k, 8)) {
			bad = parse_cnf(t.t, vi, c);
		} else if (k->kind == CATS_TK_TEXT && k->n == 2 &&
		    memcmp(k->v.p, "cs", 2) == 0) {
			bad = v->kind != CATS_TK_ARRAY || v->n > CATS_TOKEN_MAX_CS;
			size_t e = vi + 1;
			for (uint32_t m = 0; !bad && m < v->n; m++) {
				bad = copy_text(&t.t[e], c->cs[m],
				    sizeof(c->cs[m]));
				e = t.t[e].next;
			}
			c->ncs = bad ? 0 : v->n;
			seen |= 16;
		}
		if (bad) {
			cats_err_set(err, "token", "bad claim");
			goto out;
		}
		j = v->next;
	}
	if (seen != 31) {
		cats_err_set(err, "token", "missing claim (iss, sub, exp, cti "
		    "and cs are required)");
		goto out;
	}
	rc = 0;
out:
	cats_toks_free(&t);
	return rc;
}

enum cats_token_status
cats_token_verify(const uint8_t *p, size_t n, const struct cats_keyring *kr,
    uint64_t now_ms, uint64_t skew_ms, struct cats_token *c,
    struct cats_err *err)
{
	struct cats_toks t = { 0 };
	size_t used;
	enum cats_token_status st = CATS_TOKEN_MALFORMED;
	memset(c, 0, sizeof(*c));
	if (cats_scan(p, n, true, &token_limits, &t, NULL, &used, NULL, err) !=
	    CATS_SCAN_OK || used != n) {
		cats_err_set(err, "token", "not a CBOR item");
		goto out;
	}
	const struct cats_tok *a = t.t;
	if (a[0].kind != CATS_TK_ARRAY || a[0].n != 4) {
		cats_err_set(err, "token", "not a COSE_Sign1 array");
		goto out;
	}
	size_t pi = 1, ui = a[pi].next, li = a[ui].next, si = a[li].next;
	if (a[pi].kind != CATS_TK_BYTES || a[ui].kind != CATS_TK_MAP ||
	    a[li].kind != CATS_TK_BYTES || a[si].kind != CATS_TK_BYTES) {
		cats_err_set(err, "token", "not a COSE_Sign1 array");
		goto out;
	}
	/* The kid comes from the protected header; accept only EdDSA. */
	struct cats_toks ht = { 0 };
	uint8_t kid[CATS_KID_LEN];
	bool have_kid = false, eddsa = false;
	if (cats_scan(a[pi].v.p, a[pi].n, true, &token_limits, &ht, NULL, &used,
	    NULL, err) == CATS_SCAN_OK && ht.t[0].kind == CATS_TK_MAP) {
		size_t j = 1;
		for (uint32_t i = 0; i < ht.t[0].n; i++) {
			const struct cats_tok *k = &ht.t[j], *v = &ht.t[k->next];
			if (is_uint_key(k, 1) && v->kind == CATS_TK_NINT &&
			    v->v.u == 7)
				eddsa = true;
			if (is_uint_key(k, 4) && v->kind == CATS_TK_BYTES &&
			    v->n == CATS_KID_LEN) {
				memcpy(kid, v->v.p, CATS_KID_LEN);
				have_kid = true;
			}
			j = v->next;
		}
	}
	cats_toks_free(&ht);
	if (!have_kid || !eddsa) {
		cats_err_set(err, "token", "protected header needs alg EdDSA "
		    "and a kid");
		goto out;
	}
	if (parse_claims(a[li].v.p, a[li].n, c, err) < 0)
		goto out;
	const struct cats_key *k = cats_keyring_find(kr, kid);
	if (k == NULL || k->kind == CATS_KEY_PSK) {
		st = CATS_TOKEN_UNKNOWN_KEY;
		cats_err_set(err, "token", "%s", cats_token_status_name(st));
		goto out;
	}
	if (cats_cose_check(k, CATS_ALG_EDDSA, a[pi].v.p, a[pi].n, a[li].v.p,
	    a[li].n, a[si].v.p, a[si].n) < 0) {
		st = CATS_TOKEN_BAD_SIGNATURE;
		cats_err_set(err, "token", "%s", cats_token_status_name(st));
		goto out;
	}
	if (k->name[0] && strcmp(k->name, c->iss) != 0) {
		st = CATS_TOKEN_WRONG_ISSUER;
		cats_err_set(err, "token", "issuer \"%s\" signed with the key "
		    "of \"%s\"", c->iss, k->name);
		goto out;
	}
	if (c->exp <= now_ms / 1000) {
		st = CATS_TOKEN_EXPIRED;
		cats_err_set(err, "token", "%s", cats_token_status_name(st));
		goto out;
	}
	if (c->iat > (now_ms + skew_ms) / 1000) {
		st = CATS_TOKEN_NOT_YET_VALID;
		cats_err_set(err, "token", "%s", cats_token_status_name(st));
		goto out;
	}
	st = CATS_TOKEN_OK;
out:
	cats_toks_free(&t);
	return st;
}

bool
cats_token_allows(const struct cats_token *t, const char *cs_id)
{
	for (size_t i = 0; i < t->ncs; i++)
		if (strcmp(t->cs[i], cs_id) == 0)
			return true;
	return false;
}
