/*
 * sha256.h - SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) for the MACs
 * of control records (crypto.c).  Blocks are compressed with the CPU's SHA
 * extensions where it has them (x86 SHA-NI), else in portable C: every
 * record of the control loop carries a MAC, and libsodium's portable
 * SHA-256 took a third of a forwarder's work per new flow.
 */
#ifndef CATS_SHA256_H
#define CATS_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct cats_sha256 {
	uint32_t h[8];
	uint64_t bytes;		/* hashed so far */
	uint8_t buf[64];	/* the partial block: bytes % 64 of it */
};

void cats_sha256_init(struct cats_sha256 *s);
void cats_sha256_update(struct cats_sha256 *s, const void *p, size_t n);
/* The digest; s is wiped. */
void cats_sha256_final(struct cats_sha256 *s, uint8_t out[32]);

/* A keyed HMAC-SHA256: copy it to MAC many messages with one key. */
struct cats_hmac_sha256 {
	struct cats_sha256 in, out;
};

void cats_hmac_sha256_init(struct cats_hmac_sha256 *h, const uint8_t *key,
    size_t keylen);
void cats_hmac_sha256_update(struct cats_hmac_sha256 *h, const void *p,
    size_t n);
/* The tag; h is wiped. */
void cats_hmac_sha256_final(struct cats_hmac_sha256 *h, uint8_t tag[32]);

/*
 * Which block function is in use, "sha-ni" or "portable".  force 1 makes
 * it the portable one and 2 the SHA-NI one where the CPU has it (tests
 * compare both); 0 only asks.
 */
const char *cats_sha256_engine(int force);

#endif
