/*
 * token.h - signed SCI tokens: a CWT (RFC 8392) in an untagged COSE_Sign1
 * (RFC 9052) signed by the issuer's Ed25519 key.
 *
 * Claims: 1 iss (text, the issuer), 2 sub (text, the CSCI-ID), 4 exp and
 * 6 iat (NumericDate, seconds), 7 cti (bytes, the token id), "cs" (array of
 * the CS-IDs the SCI may report for), and optionally 8 cnf {1: COSE_Key}
 * holding the SCI's own Ed25519 key (RFC 8747) when reports must be signed.
 */
#ifndef CATS_TOKEN_H
#define CATS_TOKEN_H

#include "sec/crypto.h"

#define CATS_TOKEN_MAX_CS 32
#define CATS_TOKEN_CTI_LEN 16

struct cats_token {
	char iss[CATS_ID + 1];
	char sub[CATS_ID + 1];
	uint64_t exp;			/* seconds since the epoch */
	uint64_t iat;
	uint8_t cti[CATS_TOKEN_CTI_LEN];
	size_t ncs;
	char cs[CATS_TOKEN_MAX_CS][CATS_ID + 1];
	bool has_cnf;
	uint8_t cnf[32];		/* Ed25519 public key of the SCI */
};

enum cats_token_status {
	CATS_TOKEN_OK,
	CATS_TOKEN_MALFORMED,
	CATS_TOKEN_UNKNOWN_KEY,
	CATS_TOKEN_BAD_SIGNATURE,
	CATS_TOKEN_WRONG_ISSUER,
	CATS_TOKEN_EXPIRED,
	CATS_TOKEN_NOT_YET_VALID,
};

const char *cats_token_status_name(enum cats_token_status s);

/* Sign claims with the issuer's Ed25519 secret key; appends to out. */
int cats_token_make(const struct cats_token *claims,
    const struct cats_key *issuer, struct cats_buf *out);

/*
 * Check a token: structure, signature by a key of the keyring, the issuer
 * (iss must equal the verifying key's name when that name is set), expiry
 * against now_ms with skew_ms of tolerance for iat.  Claims are filled in
 * as far as they could be read, also on failure.
 */
enum cats_token_status cats_token_verify(const uint8_t *p, size_t n,
    const struct cats_keyring *issuers, uint64_t now_ms, uint64_t skew_ms,
    struct cats_token *out, struct cats_err *err);

/* May the token's holder report for cs_id? */
bool cats_token_allows(const struct cats_token *t, const char *cs_id);

#endif
