/*
 * sha256.c - SHA-256 and HMAC-SHA256, with the x86 SHA extensions when the
 * CPU has them.  tests/unit/test_sha256.c checks both block functions
 * against libsodium and the FIPS 180-4 / RFC 4231 vectors.
 */
#include <string.h>

#include <sodium.h>

#include "base/sha256.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_X86 1
#endif

typedef void compress_fn(uint32_t h[8], const uint8_t *p, size_t blocks);

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t
ror(uint32_t x, unsigned n)
{
	return x >> n | x << (32 - n);
}

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/* One round; the callers rotate the names instead of moving the values. */
#define ROUND(a, b, c, d, e, f, g, h, i) do {				\
	uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +	\
	    ((e & f) ^ (~e & g)) + K[i] + w[i];				\
	uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +		\
	    ((a & b) ^ (a & c) ^ (b & c));				\
	d += t1;							\
	h = t1 + t2;							\
} while (0)

static void
compress_portable(uint32_t h[8], const uint8_t *p, size_t blocks)
{
	for (; blocks > 0; blocks--, p += 64) {
		uint32_t w[64];
		for (int i = 0; i < 16; i++)
			w[i] = be32(p + 4 * i);
		for (int i = 16; i < 64; i++) {
			uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^
			    w[i - 15] >> 3;
			uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^
			    w[i - 2] >> 10;
			w[i] = w[i - 16] + s0 + w[i - 7] + s1;
		}
		uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
		uint32_t e = h[4], f = h[5], g = h[6], hh = h[7];
		for (int i = 0; i < 64; i += 8) {
			ROUND(a, b, c, d, e, f, g, hh, i);
			ROUND(hh, a, b, c, d, e, f, g, i + 1);
			ROUND(g, hh, a, b, c, d, e, f, i + 2);
			ROUND(f, g, hh, a, b, c, d, e, i + 3);
			ROUND(e, f, g, hh, a, b, c, d, i + 4);
			ROUND(d, e, f, g, hh, a, b, c, i + 5);
			ROUND(c, d, e, f, g, hh, a, b, i + 6);
			ROUND(b, c, d, e, f, g, hh, a, i + 7);
		}
		h[0] += a;
		h[1] += b;
		h[2] += c;
		h[3] += d;
		h[4] += e;
		h[5] += f;
		h[6] += g;
		h[7] += hh;
	}
}

#ifdef HAVE_X86
/*
 * The SHA-NI block function (Intel's "SHA extensions" paper): the state is
 * held as ABEF and CDGH, each sha256rnds2 does two rounds, msg1/msg2 extend
 * the message schedule four words at a time.
 */
__attribute__((target("sha,sse4.1,ssse3"))) static void
compress_shani(uint32_t h[8], const uint8_t *p, size_t blocks)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL,
	    0x0405060700010203ULL);
	__m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const void *)h),
	    0xB1);				/* CDAB */
	__m128i st1 = _mm_shuffle_epi32(_mm_loadu_si128((const void *)(h + 4)),
	    0x1B);				/* EFGH */
	__m128i st0 = _mm_alignr_epi8(tmp, st1, 8);	/* ABEF */
	st1 = _mm_blend_epi16(st1, tmp, 0xF0);		/* CDGH */
	for (; blocks > 0; blocks--, p += 64) {
		__m128i abef = st0, cdgh = st1, w[4], m;
		for (int i = 0; i < 16; i++) {
			if (i < 4)
				w[i] = _mm_shuffle_epi8(_mm_loadu_si128(
				    (const void *)(p + 16 * i)), bswap);
			__m128i cur = w[i & 3];
			m = _mm_add_epi32(cur,
			    _mm_loadu_si128((const void *)(K + 4 * i)));
			st1 = _mm_sha256rnds2_epu32(st1, st0, m);
			if (i >= 3 && i < 15) {
				__m128i *nx = &w[(i + 1) & 3];
				*nx = _mm_add_epi32(*nx, _mm_alignr_epi8(cur,
				    w[(i + 3) & 3], 4));
				*nx = _mm_sha256msg2_epu32(*nx, cur);
			}
			m = _mm_shuffle_epi32(m, 0x0E);
			st0 = _mm_sha256rnds2_epu32(st0, st1, m);
			if (i >= 1 && i < 13)
				w[(i + 3) & 3] = _mm_sha256msg1_epu32(
				    w[(i + 3) & 3], cur);
		}
		st0 = _mm_add_epi32(st0, abef);
		st1 = _mm_add_epi32(st1, cdgh);
	}
	tmp = _mm_shuffle_epi32(st0, 0x1B);		/* FEBA */
	st1 = _mm_shuffle_epi32(st1, 0xB1);		/* DCHG */
	_mm_storeu_si128((void *)h, _mm_blend_epi16(tmp, st1, 0xF0));
	_mm_storeu_si128((void *)(h + 4), _mm_alignr_epi8(st1, tmp, 8));
}

static int
cpu_has_shani(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) ||
	    !(c & bit_SSSE3))
		return 0;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return 0;
	return (b & bit_SHA) != 0;
}
#endif

static compress_fn *compress;

const char *
cats_sha256_engine(int force)
{
#ifdef HAVE_X86
	if (compress == NULL || force != 0)
		compress = force != 1 && cpu_has_shani() ? compress_shani
		    : compress_portable;
	return compress == compress_shani ? "sha-ni" : "portable";
#else
	(void)force;
	compress = compress_portable;
	return "portable";
#endif
}

void
cats_sha256_init(struct cats_sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	if (compress == NULL)
		cats_sha256_engine(0);
	memcpy(s->h, iv, sizeof(iv));
	s->bytes = 0;
}

void
cats_sha256_update(struct cats_sha256 *s, const void *data, size_t n)
{
	const uint8_t *p = data;
	size_t have = (size_t)(s->bytes % 64);
	s->bytes += n;
	if (have > 0) {
		size_t take = 64 - have < n ? 64 - have : n;
		memcpy(s->buf + have, p, take);
		p += take;
		n -= take;
		if (have + take < 64)
			return;
		compress(s->h, s->buf, 1);
	}
	if (n >= 64) {
		compress(s->h, p, n / 64);
		p += n / 64 * 64;
		n %= 64;
	}
	memcpy(s->buf, p, n);
}

void
cats_sha256_final(struct cats_sha256 *s, uint8_t out[32])
{
	uint64_t bits = s->bytes * 8;
	size_t have = (size_t)(s->bytes % 64);
	s->buf[have++] = 0x80;
	if (have > 56) {
		memset(s->buf + have, 0, 64 - have);
		compress(s->h, s->buf, 1);
		have = 0;
	}
	memset(s->buf + have, 0, 56 - have);
	for (int i = 0; i < 8; i++)
		s->buf[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
	compress(s->h, s->buf, 1);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (uint8_t)(s->h[i] >> 24);
		out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
		out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
		out[4 * i + 3] = (uint8_t)s->h[i];
	}
	sodium_memzero(s, sizeof(*s));
}

void
cats_hmac_sha256_init(struct cats_hmac_sha256 *h, const uint8_t *key,
    size_t keylen)
{
	uint8_t k[64] = { 0 }, pad[64];
	if (keylen > sizeof(k)) {
		cats_sha256_init(&h->in);
		cats_sha256_update(&h->in, key, keylen);
		cats_sha256_final(&h->in, k);
	} else if (keylen > 0) {
		memcpy(k, key, keylen);
	}
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x36;
	cats_sha256_init(&h->in);
	cats_sha256_update(&h->in, pad, sizeof(pad));
	for (int i = 0; i < 64; i++)
		pad[i] = k[i] ^ 0x5c;
	cats_sha256_init(&h->out);
	cats_sha256_update(&h->out, pad, sizeof(pad));
	sodium_memzero(k, sizeof(k));
	sodium_memzero(pad, sizeof(pad));
}

void
cats_hmac_sha256_update(struct cats_hmac_sha256 *h, const void *p, size_t n)
{
	cats_sha256_update(&h->in, p, n);
}

void
cats_hmac_sha256_final(struct cats_hmac_sha256 *h, uint8_t tag[32])
{
	uint8_t inner[32];
	cats_sha256_final(&h->in, inner);
	cats_sha256_update(&h->out, inner, sizeof(inner));
	cats_sha256_final(&h->out, tag);
	sodium_memzero(inner, sizeof(inner));
	sodium_memzero(h, sizeof(*h));
}
