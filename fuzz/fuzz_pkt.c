/*
 * fuzz_pkt.c - libFuzzer target for the packet parser and rewriter
 * (lib/fwd/pkt.c): parse, then rewrite, encapsulate, decapsulate, segment and
 * answer with ICMP; a packet whose checksums were right must stay right.
 * The input is also taken as an SR-MPLS packet (labels popped, the inner
 * packet parsed), and encapsulated in SR-MPLS and popped again; every flow
 * label is 20 bits and not 0.
 */
#include <stdlib.h>
#include <string.h>

#include "fwd/pkt.h"

static uint8_t room[CATS_PKT_HEADROOM + 70000];
static uint8_t segs[8 * 2048], seg1[2048];

/* RFC 1071 one 16-bit word at a time, against the word-wise sum. */
static uint16_t
ref_sum(const uint8_t *p, size_t n)
{
	uint64_t s = 0;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Odd labels are ours (the others someone else's). */
static bool
odd_ours(uint32_t label, void *arg)
{
	(void)arg;
	return label & 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cats_pkt pk;
	struct cats_req_meta m;
	uint8_t *p = room + CATS_PKT_HEADROOM;
	if (size > 66000)
		return 0;
	if (cats_csum_fold(cats_csum_add(0, data, size)) != ref_sum(data, size))
		abort();
	memset(&m, 0, sizeof(m));
	cats_tlv_parse(data, size, &m);
	memcpy(p, data, size);
	uint32_t fl = cats_flow_label(p, size);
	if (fl == 0 || fl > 0xfffff)
		abort();
	uint8_t *mi;
	size_t mn;
	if (cats_mpls_pop(p, size, odd_ours, NULL, &mi, &mn) == 0) {
		if (mi < p || mi + mn != p + size || (mi[0] >> 4 != 4 &&
		    mi[0] >> 4 != 6))
			abort();
		cats_pkt_parse(&pk, mi, mn);
		memcpy(p, data, size);
	}
	if (cats_pkt_parse(&pk, p, size) != 0)
		return 0;
	bool ok = cats_pkt_csum_ok(&pk);
	for (size_t off = 0; off < 16; off += 5)
		cats_modeb_parse(&pk, off, &m);
	uint8_t out[1400], src[16] = { 10, 0, 0, 1 };
	cats_pkt_icmp_error(&pk, CATS_ICMP_TOO_BIG, 1280, src, out, sizeof(out));
	/* An ICMP error to either address (the destination's own bytes). */
	struct cats_quote quote;
	if (cats_pkt_icmp_quote(&pk, cats_pkt_dst(&pk), cats_pkt_dst(&pk),
	    &quote) == 0 && quote.af != 4 && quote.af != 6)
		abort();
	size_t lens[8];
	if (pk.proto == 6)
		cats_pkt_tso(p, pk.len, 536, segs, 2048, 8, lens);
	struct cats_tso t;
	if (pk.proto == 6 && cats_tso_init(&t, p, pk.len,
	    (uint16_t)(100 + size % 1400)) == 0) {
		/* Every segment it writes has right checksums. */
		for (unsigned i = 0; i < t.nseg && i < 16; i++) {
			struct cats_pkt sp;
			size_t n = cats_tso_seg(&t, i, seg1, sizeof(seg1));
			if (n > 0 && cats_pkt_parse(&sp, seg1, n) == 0 &&
			    !cats_pkt_csum_ok(&sp))
				abort();
		}
	}
	uint8_t a[16] = { 0x20, 0x01, 0x0d, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
		11, 12 };
	cats_pkt_set_dst(&pk, a, 8443);
	uint8_t b[16] = { 10, 9, 8, 7 };
	cats_pkt_set_src(&pk, b, 0);
	cats_pkt_dec_ttl(&pk);
	cats_pkt_clamp_mss(&pk, 1200);
	if (ok && !cats_pkt_csum_ok(&pk))
		abort();	/* a rewrite broke a right checksum */
	uint8_t *inner;
	size_t ilen;
	uint8_t osrc[16];
	if (cats_decap(&pk, &inner, &ilen, osrc) == 0) {
		struct cats_pkt in;
		cats_pkt_parse(&in, inner, ilen);
	}
	struct cats_encap e;
	memset(&e, 0, sizeof(e));
	e.kind = size & 1 ? CATS_ENC_SRV6 : CATS_ENC_IPIP;
	e.outer_af = size & 2 ? 6 : 4;
	if (e.kind == CATS_ENC_SRV6)
		e.outer_af = 6;
	e.nsids = 1 + (unsigned)(size % 3);
	size_t len = pk.len;
	uint8_t *q = p;
	if (cats_encap_push(&e, &q, &len, 1) == 0) {
		struct cats_pkt o;
		if (cats_pkt_parse(&o, q, len) == 0 && cats_decap(&o, &inner,
		    &ilen, osrc) == 0 && o.srh_off == 0 && ilen != pk.len)
			abort();	/* decap(encap(x)) != x */
	}
	/* SR-MPLS: what is pushed pops again to the same packet. */
	memset(&e, 0, sizeof(e));
	e.kind = CATS_ENC_MPLS;
	e.nlabels = (unsigned)(size % 5);
	e.explicit_null = e.nlabels == 0 || (size & 4);
	for (unsigned i = 0; i < e.nlabels; i++)
		e.labels[i] = 16 + 2 * (uint32_t)(size + i) + 1;
	len = pk.len;
	q = pk.p;
	if (cats_encap_push(&e, &q, &len, 1) == 0 && (cats_mpls_pop(q, len,
	    odd_ours, NULL, &inner, &ilen) != 0 || inner != pk.p ||
	    ilen != pk.len))
		abort();	/* pop(push(x)) != x */
	return 0;
}
