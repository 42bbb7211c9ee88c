/*
 * test_pkt.c - packet parsing, rewriting with incremental checksums,
 * encapsulation, Mode A / Mode B request carriage, ICMP errors, TSO.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "fwd/pkt.h"
#include "t.h"

#define HR CATS_PKT_HEADROOM

static uint8_t room[HR + 70000];
static uint8_t *const buf = room + HR;

static void
a4(uint8_t *p, const char *s)
{
	inet_pton(AF_INET, s, p);
}

static void
a6(uint8_t *p, const char *s)
{
	inet_pton(AF_INET6, s, p);
}

/* Fill the checksums of a plain IPv4 packet. */
static void
fill4(uint8_t *p, size_t len)
{
	struct cats_pkt pk;
	memset(&pk, 0, sizeof(pk));
	pk.p = p;
	pk.af = 4;
	pk.proto = p[9];
	pk.l4off = (uint16_t)((p[0] & 0xf) * 4);
	pk.len = len;
	cats_pkt_csum_fill(&pk);
}

/* IPv4 + TCP or UDP with a payload of n bytes; checksums filled. */
static size_t
mk4(uint8_t *p, int proto, const char *src, const char *dst, uint16_t sp,
    uint16_t dp, size_t n, uint8_t flags)
{
	size_t l4 = proto == 6 ? 20 : 8, len = 20 + l4 + n;
	memset(p, 0, len);
	p[0] = 0x45;
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	p[6] = 0x40;
	p[8] = 64;
	p[9] = (uint8_t)proto;
	a4(p + 12, src);
	a4(p + 16, dst);
	uint8_t *t = p + 20;
	t[0] = (uint8_t)(sp >> 8); t[1] = (uint8_t)sp;
	t[2] = (uint8_t)(dp >> 8); t[3] = (uint8_t)dp;
	if (proto == 6) {
		t[4] = 0x12; t[7] = 0x34;
		t[12] = 0x50;
		t[13] = flags;
		t[14] = 0xff;
	} else {
		t[4] = (uint8_t)((8 + n) >> 8);
		t[5] = (uint8_t)(8 + n);
	}
	for (size_t i = 0; i < n; i++)
		p[20 + l4 + i] = (uint8_t)(i * 7 + 3);
	fill4(p, len);
	return len;
}

/* IPv6 + UDP, with an optional extension header of ext bytes in front. */
static size_t
mk6(uint8_t *p, const char *src, const char *dst, uint16_t sp, uint16_t dp,
    const uint8_t *ext, size_t extn, size_t n)
{
	size_t len = 40 + extn + 8 + n;
	memset(p, 0, len);
	p[0] = 0x60;
	p[4] = (uint8_t)((len - 40) >> 8);
	p[5] = (uint8_t)(len - 40);
	p[6] = extn ? 60 : 17;
	p[7] = 64;
	a6(p + 8, src);
	a6(p + 24, dst);
	if (extn)
		memcpy(p + 40, ext, extn);
	uint8_t *u = p + 40 + extn;
	u[0] = (uint8_t)(sp >> 8); u[1] = (uint8_t)sp;
	u[2] = (uint8_t)(dp >> 8); u[3] = (uint8_t)dp;
	u[4] = (uint8_t)((8 + n) >> 8); u[5] = (uint8_t)(8 + n);
	for (size_t i = 0; i < n; i++)
		u[8 + i] = (uint8_t)i;
	struct cats_pkt pk;
	if (cats_pkt_parse(&pk, p, len) == 0)
		cats_pkt_csum_fill(&pk);
	return len;
}

static void
test_parse_rewrite(void)
{
	struct cats_pkt pk;
	size_t len = mk4(buf, 6, "192.0.2.10", "192.0.2.100", 51000, 443, 100,
	    CATS_TCP_SYN);
	T_OK(cats_pkt_parse(&pk, buf, len) == 0, "parse IPv4 TCP");
	T_OK(pk.af == 4 && pk.proto == 6 && pk.sport == 51000 &&
	    pk.dport == 443 && pk.l4off == 20, "fields");
	T_OK(cats_pkt_csum_ok(&pk), "built checksums are right");
	uint8_t loc[4];
	a4(loc, "198.51.100.21");
	cats_pkt_set_dst(&pk, loc, 8443);
	T_OK(cats_pkt_csum_ok(&pk) && pk.dport == 8443 &&
	    memcmp(buf + 16, loc, 4) == 0, "set_dst: checksums still right");
	a4(loc, "192.0.2.100");
	cats_pkt_set_src(&pk, loc, 443);
	T_OK(cats_pkt_csum_ok(&pk), "set_src: checksums right");
	T_OK(cats_pkt_dec_ttl(&pk) == 0 && buf[8] == 63 && cats_pkt_csum_ok(&pk),
	    "ttl decrement keeps the header checksum");
	buf[8] = 1;
	cats_pkt_csum_fill(&pk);
	T_OK(cats_pkt_dec_ttl(&pk) == CATS_DROP_TTL, "ttl 1 -> drop ttl");
	uint8_t out[1500], me[4];
	a4(me, "192.0.2.1");
	size_t n = cats_pkt_icmp_error(&pk, CATS_ICMP_TIME_EXCEEDED, 0, me, out,
	    sizeof(out));
	struct cats_pkt e;
	T_OK(n > 28 && cats_pkt_parse(&e, out, n) == 0 && e.proto == 1 &&
	    out[20] == 11 && cats_pkt_csum_ok(&e),
	    "ICMP time exceeded is valid");
	T_OK(cats_pkt_icmp_error(&e, CATS_ICMP_UNREACH, 0, me, out + 600,
	    600) == 0, "no ICMP error about an ICMP error");

	/* UDP over IPv4 without a checksum keeps none. */
	len = mk4(buf, 17, "192.0.2.10", "192.0.2.100", 5000, 53, 10, 0);
	buf[26] = buf[27] = 0;
	cats_pkt_parse(&pk, buf, len);
	a4(loc, "10.9.8.7");
	cats_pkt_set_dst(&pk, loc, 5353);
	T_OK(buf[26] == 0 && buf[27] == 0 && cats_pkt_csum_ok(&pk),
	    "UDP zero checksum stays zero");

	/* IPv6 UDP: the pseudo-header. */
	len = mk6(buf, "2001:db8::10", "2001:db8::100", 4000, 5000, NULL, 0, 33);
	T_OK(cats_pkt_parse(&pk, buf, len) == 0 && cats_pkt_csum_ok(&pk),
	    "IPv6 UDP parses");
	uint8_t l6[16];
	a6(l6, "2001:db8:99::21");
	cats_pkt_set_dst(&pk, l6, 0);
	T_OK(cats_pkt_csum_ok(&pk), "IPv6 set_dst keeps the UDP checksum");
	T_OK(cats_pkt_dec_ttl(&pk) == 0 && buf[7] == 63, "hop limit");

	/* Random rewrites never leave a wrong checksum. */
	srand(7);
	int bad = 0;
	for (int i = 0; i < 2000; i++) {
		char s[32], d[32];
		snprintf(s, sizeof(s), "10.%d.%d.%d", rand() & 255, rand() & 255,
		    rand() & 255);
		snprintf(d, sizeof(d), "172.16.%d.%d", rand() & 255,
		    rand() & 255);
		len = mk4(buf, (i & 1) ? 6 : 17, s, d, (uint16_t)rand(),
		    (uint16_t)rand(), (size_t)(rand() % 300), 0x10);
		cats_pkt_parse(&pk, buf, len);
		uint8_t x[4] = { (uint8_t)rand(), (uint8_t)rand(),
		    (uint8_t)rand(), (uint8_t)rand() };
		cats_pkt_set_dst(&pk, x, (uint16_t)rand());
		cats_pkt_set_src(&pk, x, (uint16_t)rand());
		cats_pkt_dec_ttl(&pk);
		bad += !cats_pkt_csum_ok(&pk);
	}
	T_OK(bad == 0, "2000 random rewrites: checksums right (%d bad)", bad);
}

static void
test_bad_input(void)
{
	struct cats_pkt pk;
	size_t len = mk4(buf, 6, "192.0.2.10", "192.0.2.100", 1, 2, 0, 0);
	T_OK(cats_pkt_parse(&pk, buf, 30) == CATS_DROP_BAD_LENGTH,
	    "short buffer -> bad length");
	buf[6] = 0x20;	/* MF */
	fill4(buf, len);
	T_OK(cats_pkt_parse(&pk, buf, len) == CATS_DROP_FRAGMENT,
	    "IPv4 fragment -> dropped");
	len = mk4(buf, 6, "192.0.2.10", "192.0.2.100", 1, 2, 0, 0);
	buf[10] ^= 1;
	T_OK(cats_pkt_parse(&pk, buf, len) == CATS_DROP_BAD_HDR_CSUM,
	    "bad IPv4 header checksum");
	len = mk4(buf, 6, "192.0.2.10", "192.0.2.100", 1, 2, 0, 0);
	buf[32] = 0xf0;	/* data offset 60 > segment */
	T_OK(cats_pkt_parse(&pk, buf, len) == CATS_DROP_BAD_LENGTH,
	    "TCP data offset past the end");
	buf[0] = 0x55;
	T_OK(cats_pkt_parse(&pk, buf, len) == CATS_DROP_BAD_VERSION,
	    "version 5");
	len = mk4(buf, 47, "192.0.2.10", "192.0.2.100", 1, 2, 0, 0);
	T_OK(cats_pkt_parse(&pk, buf, len) == CATS_DROP_UNKNOWN_PROTO,
	    "GRE -> unknown protocol");
	/* IPv6 fragment header. */
	uint8_t fr[8] = { 17, 0, 0, 1, 0, 0, 0, 1 };
	len = mk6(buf, "2001:db8::1", "2001:db8::2", 1, 2, fr, 8, 4);
	buf[6] = 44;
	T_OK(cats_pkt_parse(&pk, buf, len) == CATS_DROP_FRAGMENT,
	    "IPv6 fragment -> dropped");
	/* A chain of nine destination options headers. */
	uint8_t chain[72];
	for (int i = 0; i < 9; i++) {
		chain[i * 8] = i < 8 ? 60 : 17;
		chain[i * 8 + 1] = 0;
		chain[i * 8 + 2] = 1;
		chain[i * 8 + 3] = 4;
		memset(chain + i * 8 + 4, 0, 4);
	}
	len = mk6(buf, "2001:db8::1", "2001:db8::2", 1, 2, chain, 72, 4);
	T_OK(cats_pkt_parse(&pk, buf, len) == CATS_DROP_TOO_MANY_EXT,
	    "extension header chain over the cap");
	/* An option whose length runs past its header. */
	uint8_t bo[8] = { 17, 0, 0x1E, 9, 1, 1, 1, 'S' };
	len = mk6(buf, "2001:db8::1", "2001:db8::2", 1, 2, bo, 8, 4);
	T_OK(cats_pkt_parse(&pk, buf, len) == CATS_DROP_BAD_OPTION,
	    "option length past the header");
}

static void
test_mode_a_b(void)
{
	struct cats_req_meta m;
	memset(&m, 0, sizeof(m));
	strcpy(m.cs_id, "S1");
	m.has = 1u << CATS_TLV_MAX_DELAY;
	m.max_delay_us = 15000;
	uint8_t ext[64];
	size_t en = cats_modea_build(&m, 17, ext, sizeof(ext));
	T_OK(en == 16 && ext[2] == 0x1E, "Mode A header of %zu bytes", en);
	struct cats_pkt pk;
	size_t len = mk6(buf, "2001:db8::10", "2001:db8::100", 4000, 5000, ext,
	    en, 20);
	T_OK(cats_pkt_parse(&pk, buf, len) == 0 && pk.proto == 17 &&
	    pk.dport == 5000, "Mode A packet parses to UDP");
	T_OK(pk.meta.present && strcmp(pk.meta.cs_id, "S1") == 0 &&
	    pk.meta.max_delay_us == 15000, "CS-ID and constraint read");
	T_OK(cats_pkt_csum_ok(&pk), "checksum over the options packet");
	/* Duplicate CS-ID TLV. */
	uint8_t tl[] = { 1, 2, 'S', '1', 1, 2, 'S', '2' };
	memset(&m, 0, sizeof(m));
	T_OK(cats_tlv_parse(tl, sizeof(tl), &m) < 0, "duplicate CS-ID refused");
	uint8_t t2[] = { 2, 3, 0, 0, 1 };
	memset(&m, 0, sizeof(m));
	T_OK(cats_tlv_parse(t2, sizeof(t2), &m) < 0, "bad TLV length refused");
	uint8_t t3[] = { 200, 1, 9, 1, 1, 'X' };
	memset(&m, 0, sizeof(m));
	T_OK(cats_tlv_parse(t3, sizeof(t3), &m) == 0 &&
	    strcmp(m.cs_id, "X") == 0, "unknown TLV >= 128 skipped");
	uint8_t t4[] = { 1, 2, 0xc3, 0x28 };
	memset(&m, 0, sizeof(m));
	T_OK(cats_tlv_parse(t4, sizeof(t4), &m) < 0, "non-UTF-8 CS-ID refused");

	/* Mode B at UDP payload offset 0. */
	len = mk4(buf, 17, "192.0.2.10", "192.0.2.100", 5000, 7000, 16, 0);
	uint8_t env[] = { 0xCA, 0x75, 1, 4, 1, 2, 'S', '2' };
	memcpy(buf + 28, env, sizeof(env));
	cats_pkt_parse(&pk, buf, len);
	memset(&m, 0, sizeof(m));
	T_OK(cats_modeb_parse(&pk, 0, &m) == 1 && strcmp(m.cs_id, "S2") == 0,
	    "Mode B envelope read");
	T_OK(cats_modeb_parse(&pk, 4, &m) == 0, "no envelope elsewhere");
	buf[31] = 40;
	T_OK(cats_modeb_parse(&pk, 0, &m) == -1, "envelope length too long");
}

static void
test_encap(void)
{
	struct cats_pkt pk;
	size_t len = mk4(buf, 6, "192.0.2.10", "198.51.100.21", 51000, 443, 50,
	    0x10);
	uint8_t orig[200];
	memcpy(orig, buf, len);
	struct cats_encap e;
	memset(&e, 0, sizeof(e));
	e.kind = CATS_ENC_SRV6;
	e.outer_af = 6;
	a6(e.src, "2001:db8:1::1");
	a6(e.sids[0], "2001:db8:a1::1");
	a6(e.sids[1], "2001:db8:a2::1");
	a6(e.sids[2], "2001:db8:e2::d4");
	e.nsids = 3;
	uint8_t *p = buf;
	size_t n = len;
	T_OK(cats_encap_push(&e, &p, &n, 0) == 0 && n == len + 96,
	    "SRv6 encap adds 96 bytes");
	T_OK(cats_pkt_parse(&pk, p, n) == 0 && pk.proto == 4 && pk.srh_off == 40,
	    "outer IPv6 + SRH parses, next header IPv4");
	T_OK(memcmp(p + 24, e.sids[0], 16) == 0 && p[43] == 2 &&
	    memcmp(p + 48, e.sids[2], 16) == 0 &&
	    memcmp(p + 80, e.sids[0], 16) == 0,
	    "destination = first SID, segments left 2, list reversed");
	uint8_t *in;
	size_t inl;
	uint8_t osrc[16];
	T_OK(cats_decap(&pk, &in, &inl, osrc) == CATS_DROP_SEGMENTS_LEFT,
	    "decap refuses segments left > 0");
	p[43] = 0;
	cats_pkt_parse(&pk, p, n);
	T_OK(cats_decap(&pk, &in, &inl, osrc) == 0 && inl == len &&
	    memcmp(in, orig, len) == 0 && memcmp(osrc, e.src, 16) == 0,
	    "decap returns the inner packet and the outer source");

	memcpy(buf, orig, len);
	memset(&e, 0, sizeof(e));
	e.kind = CATS_ENC_IPIP;
	e.outer_af = 4;
	a4(e.src, "10.0.0.1");
	a4(e.dst, "10.0.0.2");
	p = buf;
	n = len;
	T_OK(cats_encap_push(&e, &p, &n, 77) == 0 && n == len + 20,
	    "IPv4-in-IPv4");
	T_OK(cats_pkt_parse(&pk, p, n) == 0 && pk.proto == 4 &&
	    cats_pkt_csum_ok(&pk) && (p[6] & 0x40), "outer header valid, DF");
	T_OK(cats_decap(&pk, &in, &inl, osrc) == 0 &&
	    memcmp(in, orig, len) == 0, "decap IPIP");

	len = mk6(buf, "2001:db8::10", "2001:db8::100", 1, 2, NULL, 0, 9);
	memcpy(orig, buf, len);
	e.outer_af = 6;
	a6(e.src, "2001:db8:c::1");
	a6(e.dst, "2001:db8:c::2");
	p = buf;
	n = len;
	T_OK(cats_encap_push(&e, &p, &n, 0) == 0 && p[6] == 41 &&
	    cats_pkt_parse(&pk, p, n) == 0 && pk.proto == 41,
	    "IPv6-in-IPv6");
	T_OK(cats_decap(&pk, &in, &inl, osrc) == 0 && inl == len &&
	    memcmp(in, orig, len) == 0, "decap IPv6-in-IPv6");
	cats_pkt_parse(&pk, orig, len);
	T_OK(cats_decap(&pk, &in, &inl, osrc) == CATS_DROP_NOT_TUNNEL,
	    "plain UDP is not a tunnel");
}

static void
test_mss_tso_partial(void)
{
	struct cats_pkt pk;
	size_t len = mk4(buf, 6, "192.0.2.10", "192.0.2.100", 1000, 80, 0,
	    CATS_TCP_SYN);
	/* Give the SYN options: NOP, MSS 1460 at an odd offset, pad. */
	memmove(buf + 44, buf + 40, 0);
	buf[3] = 48;
	buf[32] = 0x70;
	uint8_t opt[8] = { 1, 2, 4, 0x05, 0xb4, 1, 1, 0 };
	memcpy(buf + 40, opt, 8);
	len = 48;
	fill4(buf, len);
	cats_pkt_parse(&pk, buf, len);
	T_OK(cats_pkt_clamp_mss(&pk, 1400) == 1 && buf[43] == 0x05 &&
	    buf[44] == 0x78 && cats_pkt_csum_ok(&pk),
	    "MSS at an odd offset clamped to 1400, checksum right");
	T_OK(cats_pkt_clamp_mss(&pk, 1440) == 0, "no clamp upward");

	/* CHECKSUM_PARTIAL: the field holds the pseudo-header sum only. */
	len = mk4(buf, 17, "192.0.2.10", "192.0.2.100", 5000, 53, 31, 0);
	cats_pkt_parse(&pk, buf, len);
	uint32_t ps = cats_csum_add(0, buf + 12, 8) + 17 + (len - 20);
	uint16_t f = cats_csum_fold(ps);
	buf[26] = (uint8_t)(f >> 8);
	buf[27] = (uint8_t)f;
	T_OK(!cats_pkt_csum_ok(&pk), "partial checksum is not final");
	cats_pkt_csum_complete(buf, len, 20, 6);
	T_OK(cats_pkt_csum_ok(&pk), "completed partial checksum is right");

	/* Software segmentation. */
	static uint8_t big[5000], segs[4 * 2048];
	len = mk4(big, 6, "192.0.2.10", "192.0.2.100", 1000, 80, 4000, 0x18);
	size_t lens[8];
	unsigned ns = cats_pkt_tso(big, len, 1448, segs, 2048, 8, lens);
	int ok = ns == 3;
	uint32_t seq0 = 0x12000034;
	for (unsigned i = 0; ok && i < ns; i++) {
		struct cats_pkt s;
		ok = cats_pkt_parse(&s, segs + i * 2048, lens[i]) == 0 &&
		    cats_pkt_csum_ok(&s);
		uint8_t *t = segs + i * 2048 + 20;
		uint32_t seq = (uint32_t)t[4] << 24 | (uint32_t)t[5] << 16 |
		    (uint32_t)t[6] << 8 | t[7];
		ok = ok && seq == seq0 + i * 1448;
		ok = ok && ((t[13] & 0x08) != 0) == (i == ns - 1);
	}
	T_OK(ok && lens[2] == 40 + 4000 - 2 * 1448,
	    "TSO: 3 valid segments, sequence numbers, PSH on the last");
}

/* RFC 1071 in network byte order, one 16-bit word at a time. */
static uint32_t
ref_sum(uint32_t sum, const uint8_t *p, size_t n)
{
	uint64_t s = sum;
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)p[n - 1] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint32_t)s;
}

static void
test_csum(void)
{
	static uint8_t b[4096 + 8];
	uint32_t x = 12345;
	for (size_t i = 0; i < sizeof(b); i++) {
		x = x * 1103515245 + 12345;
		b[i] = (uint8_t)(x >> 16);
	}
	int bad = 0;
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; n < 300; n++)
			bad += cats_csum_fold(cats_csum_add(off * 977, b + off,
			    n)) != ref_sum((uint32_t)(off * 977), b + off, n);
	T_OK(bad == 0, "fast checksum equals RFC 1071 word by word at every "
	    "length and alignment");
	memset(b, 0xff, sizeof(b));
	T_OK(cats_csum_fold(cats_csum_add(0xffff, b, 4096)) ==
	    ref_sum(0xffff, b, 4096), "all-ones buffer: no lost carry");
}

static void
test_tso_seg(void)
{
	static uint8_t big[9000], seg[2048];
	size_t len = mk4(big, 6, "192.0.2.10", "192.0.2.100", 1000, 80, 8000,
	    0x19);
	struct cats_tso t;
	T_OK(cats_tso_init(&t, big, len, 1460) == 0 && t.nseg == 6 &&
	    t.hdr == 40, "TSO plan: 8000 bytes in 6 segments of 1460");
	int ok = 1;
	size_t total = 0;
	for (unsigned i = 0; i < t.nseg && ok; i++) {
		struct cats_pkt s;
		size_t n = cats_tso_seg(&t, i, seg, sizeof(seg));
		ok = n > 40 && cats_pkt_parse(&s, seg, n) == 0 &&
		    cats_pkt_csum_ok(&s) && seg[4] == big[4] &&
		    seg[5] == (uint8_t)(big[5] + i) &&
		    memcmp(seg + 40, big + 40 + i * 1460, n - 40) == 0 &&
		    ((seg[33] & 0x01) != 0) == (i == t.nseg - 1);
		total += n - 40;
	}
	T_OK(ok && total == 8000, "TSO segments one by one: payload in order, "
	    "checksums, IP ids, FIN only on the last");
	T_OK(cats_tso_seg(&t, 0, seg, 100) == 0 && cats_tso_seg(&t, 6, seg,
	    sizeof(seg)) == 0, "TSO segment: no room or past the end, none");
	len = mk4(big, 17, "192.0.2.10", "192.0.2.100", 1000, 80, 3000, 0);
	T_OK(cats_tso_init(&t, big, len, 1460) < 0, "TSO refuses UDP");
}

/*
 * ICMP errors about encapsulated packets: the core router's error quotes
 * the outer header (and SRH) the forwarder wrote and the inner packet; the
 * quote names the inner flow.  Errors of other kinds, about other senders'
 * packets, to other addresses, or cut before the inner ports, do not.
 */
static void
test_icmp_quote(void)
{
	static uint8_t out[2000];
	uint8_t me6[16], me4[4], router6[16], router4[4], other[16];
	a6(me6, "2001:db8:1::1");
	a4(me4, "10.0.0.1");
	a6(router6, "2001:db8:cc::7");
	a4(router4, "10.0.0.9");
	a6(other, "2001:db8:1::2");
	struct cats_pkt pk, e;
	struct cats_quote q;
	size_t len = mk4(buf, 17, "192.0.2.10", "198.51.100.11", 41000, 9300,
	    900, 0);
	struct cats_encap en;
	memset(&en, 0, sizeof(en));
	en.kind = CATS_ENC_SRV6;
	en.outer_af = 6;
	memcpy(en.src, me6, 16);
	a6(en.sids[0], "2001:db8:cc::2");
	a6(en.sids[1], "2001:db8:2::100");
	en.nsids = 2;
	uint8_t *p = buf;
	size_t n = len;
	cats_encap_push(&en, &p, &n, 0);
	cats_pkt_parse(&pk, p, n);
	size_t el = cats_pkt_icmp_error(&pk, CATS_ICMP_UNREACH, 0, router6, out,
	    sizeof(out));
	T_OK(el > 0 && cats_pkt_parse(&e, out, el) == 0 &&
	    cats_pkt_icmp_quote(&e, me4, me6, &q) == 0 && q.af == 4 &&
	    q.proto == 17 && q.sport == 41000 && q.dport == 9300 &&
	    memcmp(q.dst, buf + 16, 4) == 0 && strcmp(q.what, "unreachable") ==
	    0, "ICMPv6 unreachable about an SRv6 packet: the inner flow");
	T_OK(cats_pkt_icmp_quote(&e, me4, NULL, &q) < 0 &&
	    cats_pkt_icmp_quote(&e, me4, other, &q) < 0,
	    "not to one of our addresses: nothing");
	/* Cut after the inner ports (a router quoting little), then before. */
	size_t cut = 48 + 40 + 40 + 20 + 4;
	out[4] = (uint8_t)((cut - 40) >> 8);
	out[5] = (uint8_t)(cut - 40);
	T_OK(cats_pkt_parse(&e, out, cut) == 0 &&
	    cats_pkt_icmp_quote(&e, me4, me6, &q) == 0 && q.dport == 9300,
	    "a quote that ends after the inner ports");
	out[5] = (uint8_t)(cut - 41);
	T_OK(cats_pkt_parse(&e, out, cut - 1) == 0 &&
	    cats_pkt_icmp_quote(&e, me4, me6, &q) < 0,
	    "one that ends before them: nothing");
	el = cats_pkt_icmp_error(&pk, CATS_ICMP_TOO_BIG, 1280, router6, out,
	    sizeof(out));
	T_OK(cats_pkt_parse(&e, out, el) == 0 &&
	    cats_pkt_icmp_quote(&e, me4, me6, &q) < 0,
	    "Packet Too Big is not a path down");
	el = cats_pkt_icmp_error(&pk, CATS_ICMP_TIME_EXCEEDED, 0, router6, out,
	    sizeof(out));
	memcpy(out + 48 + 8, other, 16);	/* someone else's packet */
	T_OK(cats_pkt_parse(&e, out, el) == 0 &&
	    cats_pkt_icmp_quote(&e, me4, me6, &q) < 0,
	    "an error about another sender's packet: nothing");
	memcpy(out + 48 + 8, me6, 16);
	T_OK(cats_pkt_parse(&e, out, el) == 0 &&
	    cats_pkt_icmp_quote(&e, me4, me6, &q) == 0 &&
	    strcmp(q.what, "time-exceeded") == 0, "time exceeded");

	/* IPv4 in IPv4: an ICMP unreachable quoting the outer header. */
	len = mk4(buf, 6, "192.0.2.10", "198.51.100.11", 41001, 443, 10, 0x10);
	memset(&en, 0, sizeof(en));
	en.kind = CATS_ENC_IPIP;
	en.outer_af = 4;
	memcpy(en.src, me4, 4);
	a4(en.dst, "10.0.0.2");
	p = buf;
	n = len;
	cats_encap_push(&en, &p, &n, 1);
	cats_pkt_parse(&pk, p, n);
	el = cats_pkt_icmp_error(&pk, CATS_ICMP_UNREACH, 0, router4, out,
	    sizeof(out));
	T_OK(cats_pkt_parse(&e, out, el) == 0 &&
	    cats_pkt_icmp_quote(&e, me4, me6, &q) == 0 && q.af == 4 &&
	    q.proto == 6 && q.sport == 41001 && q.dport == 443,
	    "ICMP unreachable about IPv4 in IPv4: the inner flow");
	el = cats_pkt_icmp_error(&pk, CATS_ICMP_TOO_BIG, 1400, router4, out,
	    sizeof(out));
	T_OK(cats_pkt_parse(&e, out, el) == 0 &&
	    cats_pkt_icmp_quote(&e, me4, me6, &q) < 0,
	    "fragmentation needed is not a path down");
	/* An error about a plain, unencapsulated packet of ours. */
	len = mk4(buf, 17, "10.0.0.1", "192.0.2.10", 1, 2, 4, 0);
	cats_pkt_parse(&pk, buf, len);
	el = cats_pkt_icmp_error(&pk, CATS_ICMP_UNREACH, 0, router4, out,
	    sizeof(out));
	T_OK(cats_pkt_parse(&e, out, el) == 0 &&
	    cats_pkt_icmp_quote(&e, me4, me6, &q) < 0,
	    "an error about a packet that was not a tunnel: nothing");
}

/*
 * RFC 6438 flow labels: one per flow (the same at every packet, in the
 * outer header only with flowlabel set), never 0, spread over the 20 bits
 * and over two paths for flows that differ in a source port only.
 */
static void
test_flow_label(void)
{
	uint8_t a[200], b[200];
	size_t la = mk4(a, 17, "192.0.2.10", "198.51.100.11", 4000, 53, 10, 0);
	size_t lb = mk4(b, 17, "192.0.2.10", "198.51.100.11", 4001, 53, 20, 0);
	uint32_t fa = cats_flow_label(a, la), fb = cats_flow_label(b, lb);
	uint8_t s4[4], d4[4];
	a4(s4, "192.0.2.10");
	a4(d4, "198.51.100.11");
	T_OK(fa != fb && fa <= 0xfffff && fa == cats_flow_label5(4, 17, s4, d4,
	    4000, 53), "a label per flow, 20 bits, the 5-tuple's (0x%05x, "
	    "0x%05x)", (unsigned)fa, (unsigned)fb);
	a[20 + 8] ^= 0xff;	/* the payload: not part of the flow */
	T_OK(cats_flow_label(a, la) == fa, "the same flow, the same label");
	unsigned odd = 0, zero = 0, seen[32] = { 0 };
	for (unsigned i = 0; i < 4096; i++) {
		uint32_t f = cats_flow_label5(4, 6, s4, d4, (uint16_t)(20000 + i),
		    80);
		odd += f & 1;
		zero += f == 0;
		seen[f >> 15]++;
	}
	unsigned lo = 4096, hi = 0;
	for (int i = 0; i < 32; i++) {
		lo = seen[i] < lo ? seen[i] : lo;
		hi = seen[i] > hi ? seen[i] : hi;
	}
	T_OK(zero == 0 && odd > 1848 && odd < 2248 && lo > 64 && hi < 192,
	    "4096 source ports: never 0, %u odd, %u..%u per 32nd of the range",
	    odd, lo, hi);
	struct cats_encap e;
	memset(&e, 0, sizeof(e));
	e.kind = CATS_ENC_SRV6;
	e.outer_af = 6;
	e.nsids = 1;
	e.flowlabel = true;
	uint8_t *p = buf;
	size_t n = mk4(buf, 17, "192.0.2.10", "198.51.100.11", 4000, 53, 10, 0);
	T_OK(cats_encap_push(&e, &p, &n, 0) == 0 &&
	    ((uint32_t)(p[1] & 0xf) << 16 | (uint32_t)p[2] << 8 | p[3]) == fa,
	    "SRv6 outer header: the inner flow's label");
	e.flowlabel = false;
	p = buf + 100;
	n = mk4(p, 17, "192.0.2.10", "198.51.100.11", 4000, 53, 10, 0);
	T_OK(cats_encap_push(&e, &p, &n, 0) == 0 && (p[1] & 0xf) == 0 &&
	    p[2] == 0 && p[3] == 0, "flowlabel off: 0");
}

int
main(void)
{
	test_csum();
	test_tso_seg();
	test_parse_rewrite();
	test_bad_input();
	test_mode_a_b();
	test_encap();
	test_mss_tso_partial();
	test_icmp_quote();
	test_flow_label();
	return t_done();
}
