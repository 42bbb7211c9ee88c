/*
 * test_sha256.c - SHA-256 and HMAC-SHA256 with each block function (the
 * SHA-NI one where this CPU has it, and the portable one): the FIPS 180-4
 * and RFC 4231 vectors, then every length from 0 to 1100 bytes, fed whole
 * and in uneven pieces, against libsodium.
 */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "base/sha256.h"
#include "t.h"

static void
hex(const char *s, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sscanf(s + 2 * i, "%2hhx", &out[i]);
}

static void
sha(const void *p, size_t n, uint8_t out[32])
{
	struct cats_sha256 s;
	cats_sha256_init(&s);
	cats_sha256_update(&s, p, n);
	cats_sha256_final(&s, out);
}

static void
vectors(const char *engine)
{
	uint8_t d[32], want[32];
	sha("abc", 3, d);
	hex("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	    want, 32);
	T_OK(memcmp(d, want, 32) == 0, "%s: SHA-256(\"abc\")", engine);
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnop"
	    "nopq";
	sha(two, strlen(two), d);
	hex("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
	    want, 32);
	T_OK(memcmp(d, want, 32) == 0, "%s: SHA-256 of the two-block message",
	    engine);
	sha("", 0, d);
	hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	    want, 32);
	T_OK(memcmp(d, want, 32) == 0, "%s: SHA-256 of nothing", engine);

	/* RFC 4231 test cases 1 and 6 (a key longer than a block). */
	uint8_t key[131], tag[32];
	struct cats_hmac_sha256 h;
	memset(key, 0x0b, 20);
	cats_hmac_sha256_init(&h, key, 20);
	cats_hmac_sha256_update(&h, "Hi There", 8);
	cats_hmac_sha256_final(&h, tag);
	hex("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
	    want, 32);
	T_OK(memcmp(tag, want, 32) == 0, "%s: RFC 4231 case 1", engine);
	memset(key, 0xaa, sizeof(key));
	const char *msg = "Test Using Larger Than Block-Size Key - Hash Key First";
	cats_hmac_sha256_init(&h, key, sizeof(key));
	cats_hmac_sha256_update(&h, msg, strlen(msg));
	cats_hmac_sha256_final(&h, tag);
	hex("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
	    want, 32);
	T_OK(memcmp(tag, want, 32) == 0, "%s: RFC 4231 case 6", engine);
}

/* Every length, whole and in pieces of 1, 63, 64 and 65 bytes. */
static void
against_libsodium(const char *engine)
{
	static uint8_t buf[1100];
	uint8_t key[32], want[32], got[32];
	randombytes_buf(buf, sizeof(buf));
	randombytes_buf(key, sizeof(key));
	size_t bad_hash = 0, bad_mac = 0, bad_split = 0;
	for (size_t n = 0; n <= sizeof(buf); n++) {
		crypto_hash_sha256(want, buf, n);
		sha(buf, n, got);
		bad_hash += memcmp(want, got, 32) != 0;
		static const size_t steps[] = { 1, 63, 64, 65 };
		for (size_t s = 0; s < 4; s++) {
			struct cats_sha256 st;
			cats_sha256_init(&st);
			for (size_t off = 0; off < n; off += steps[s])
				cats_sha256_update(&st, buf + off,
				    n - off < steps[s] ? n - off : steps[s]);
			cats_sha256_final(&st, got);
			bad_split += memcmp(want, got, 32) != 0;
		}
		crypto_auth_hmacsha256(want, buf, n, key);
		struct cats_hmac_sha256 h;
		cats_hmac_sha256_init(&h, key, sizeof(key));
		cats_hmac_sha256_update(&h, buf, n);
		cats_hmac_sha256_final(&h, got);
		bad_mac += memcmp(want, got, 32) != 0;
	}
	T_OK(bad_hash == 0, "%s: SHA-256 of 0..1100 bytes as libsodium's "
	    "(%zu differ)", engine, bad_hash);
	T_OK(bad_split == 0, "%s: the same fed in pieces (%zu differ)", engine,
	    bad_split);
	T_OK(bad_mac == 0, "%s: HMAC-SHA256 as libsodium's (%zu differ)",
	    engine, bad_mac);
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	const char *first = cats_sha256_engine(2);
	vectors(first);
	against_libsodium(first);
	if (strcmp(first, "portable") != 0) {
		T_OK(strcmp(cats_sha256_engine(1), "portable") == 0,
		    "the portable block function can be chosen");
		vectors("portable");
		against_libsodium("portable");
	} else {
		printf("# this CPU has no SHA extensions: portable only\n");
	}
	return t_done();
}
