/*
 * fuzz_token.c - SCI token verification on arbitrary bytes.
 */
#include <string.h>

#include "sec/token.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cats_key k;
	static bool init;
	if (!init) {
		cats_crypto_init();
		/* A fixed key: its kid is 8 bytes the fuzzer can find. */
		memset(&k, 0, sizeof(k));
		k.kind = CATS_KEY_ED25519_PUBLIC;
		memcpy(k.kid, "fuzzkey!", CATS_KID_LEN);
		init = true;
	}
	struct cats_keyring kr = { &k, 1 };
	struct cats_token t;
	struct cats_err e;
	cats_token_verify(data, size, &kr, 1000000, 0, &t, &e);
	return 0;
}
