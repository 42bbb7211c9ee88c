/*
 * test_fwd_fast.c - the cats-fwd fast path: keys and action templates, and
 * (as root, where the kernel runs BPF) the tc program run on packets with
 * BPF_PROG_TEST_RUN, its output compared byte for byte with what the
 * user-space path (lib/fwd/pkt.c) makes of the same packet.
 */
#include <arpa/inet.h>
#include <linux/pkt_cls.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "fwd/fwd_fast.h"
#include "base/log.h"
#include "fwd/pkt.h"
#include "t.h"

#define HR CATS_PKT_HEADROOM

static const uint8_t mac_out[14] = { 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1,
	0x08, 0x00 };

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

/* Fill in the IPv4 header checksum at p (when it is IPv4 with room). */
static void
fix4(uint8_t *p, size_t room)
{
	if (room < 20 || (p[0] >> 4) != 4 || (size_t)(p[0] & 0xf) * 4 > room)
		return;
	size_t hl = (size_t)(p[0] & 0xf) * 4;
	if (hl < 20)
		return;
	p[10] = p[11] = 0;
	uint16_t c = (uint16_t)~cats_csum_fold(cats_csum_add(0, p, hl));
	p[10] = (uint8_t)(c >> 8);
	p[11] = (uint8_t)c;
}

/*
 * An IPv4 (af 4) or IPv6 packet of proto (6 or 17) with flags (TCP) and n
 * payload bytes, checksums filled; returns its length.
 */
static size_t
mkpkt(uint8_t *p, int af, int proto, const char *src, const char *dst,
    uint16_t sport, uint16_t dport, uint8_t flags, uint8_t ttl, size_t n)
{
	size_t ih = af == 4 ? 20 : 40, lh = proto == 6 ? 20 : 8;
	size_t len = ih + lh + n;
	memset(p, 0, len);
	if (af == 4) {
		p[0] = 0x45;
		p[1] = 0x10;
		p[2] = (uint8_t)(len >> 8);
		p[3] = (uint8_t)len;
		p[6] = 0x40;
		p[8] = ttl;
		p[9] = (uint8_t)proto;
		a4(p + 12, src);
		a4(p + 16, dst);
	} else {
		p[0] = 0x60;
		p[4] = (uint8_t)((len - 40) >> 8);
		p[5] = (uint8_t)(len - 40);
		p[6] = (uint8_t)proto;
		p[7] = ttl;
		a6(p + 8, src);
		a6(p + 24, dst);
	}
	uint8_t *l4 = p + ih;
	l4[0] = (uint8_t)(sport >> 8);
	l4[1] = (uint8_t)sport;
	l4[2] = (uint8_t)(dport >> 8);
	l4[3] = (uint8_t)dport;
	if (proto == 6) {
		l4[12] = 0x50;
		l4[13] = flags;
		l4[14] = 0xff;
	} else {
		l4[4] = (uint8_t)((lh + n) >> 8);
		l4[5] = (uint8_t)(lh + n);
	}
	for (size_t i = 0; i < n; i++)
		l4[lh + i] = (uint8_t)(i * 7);
	fix4(p, len);	/* the header checksum first: the parse checks it */
	struct cats_pkt pk;
	cats_pkt_parse(&pk, p, len);
	cats_pkt_csum_fill(&pk);
	return len;
}

/* Run the tc program on frame f (eth + IP, n bytes) as a GSO packet of
 * segments of gso_size bytes (0: not GSO); out gets the result. */
static int
run_gso(struct cats_fwd_fast *f, const uint8_t *fr, size_t n, uint8_t *out,
    uint32_t *outn, uint32_t gso_size)
{
	struct __sk_buff ctx = { .gso_size = gso_size,
		.gso_segs = gso_size ? 2 : 0 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = fr,
	    .data_size_in = (uint32_t)n, .data_out = out,
	    .data_size_out = 4096, .repeat = 1, .ctx_in = &ctx,
	    .ctx_size_in = sizeof(ctx));
	if (bpf_prog_test_run_opts(cats_fwd_fast_prog(f, 0), &o) < 0)
		return -1;
	*outn = o.data_size_out;
	return (int)o.retval;
}

static int
run(struct cats_fwd_fast *f, const uint8_t *fr, size_t n, uint8_t *out,
    uint32_t *outn)
{
	return run_gso(f, fr, n, out, outn, 0);
}

/* Frame an IP packet behind a link header of its family. */
static size_t
frame(uint8_t *fr, const uint8_t *ip, size_t len)
{
	memset(fr, 0, 12);
	fr[0] = 2;
	fr[12] = (ip[0] >> 4) == 4 ? 0x08 : 0x86;
	fr[13] = (ip[0] >> 4) == 4 ? 0x00 : 0xdd;
	memcpy(fr + 14, ip, len);
	return len + 14;
}

static void
test_pure(void)
{
	struct cats_fkey k;
	struct cats_fp_key fk;
	memset(&k, 0, sizeof(k));
	k.af = 4;
	k.proto = 17;
	k.sport = 4000;
	k.dport = 53;
	a4(k.src, "192.0.2.10");
	a4(k.dst, "203.0.113.100");
	T_OK(cats_fp_key_make(&fk, &k, 7) == 0 && fk.ifindex == 7 &&
	    fk.sport == htons(4000) && fk.dport == htons(53) &&
	    memcmp(fk.dst, k.dst, 4) == 0 && fk.dst[4] == 0,
	    "fp key: a UDP 5-tuple, ports in network order");
	k.wild = CATS_WILD_SPORT;
	T_OK(cats_fp_key_make(&fk, &k, 7) < 0, "fp key: wildcard refused");
	k.wild = 0;
	k.proto = 1;
	T_OK(cats_fp_key_make(&fk, &k, 7) < 0, "fp key: ICMP refused");

	struct cats_encap e;
	memset(&e, 0, sizeof(e));
	e.kind = CATS_ENC_SRV6;
	e.outer_af = 6;
	a6(e.src, "2001:db8:1::1");
	a6(e.sids[0], "2001:db8:cc::2");
	a6(e.sids[1], "2001:db8:2::100");
	e.nsids = 2;
	struct cats_fp_act a;
	uint8_t loc[4];
	a4(loc, "198.51.100.11");
	T_OK(cats_fp_act_make(&a, 3, mac_out, 1500, CATS_FP_RW_DST, loc, 4, 0,
	    &e) == 0 && a.enc_len == 40 + 8 + 32 && a.outer_af == 6 &&
	    a.l2[12] == 0x86 && a.l2[13] == 0xdd && a.enc[6] == 43 &&
	    a.enc[40 + 3] == 1, "fp action: SRv6 template, link type IPv6");
	e.nsids = 5;
	T_OK(cats_fp_act_make(&a, 3, mac_out, 1500, CATS_FP_RW_DST, loc, 4, 0,
	    &e) < 0, "fp action: 5 SIDs do not fit the fast path");
}

/*
 * A case: the packet ip (len) arrives; the expected output is what the
 * user-space path makes of it.
 */
struct fcase {
	const char *name;
	int af, proto;
	uint8_t flags, ttl;
	int rewrite;
	int enc;		/* CATS_ENC_*, outer_af 6 unless ipip4 */
	bool ipip4, decap;
	uint16_t port;
	size_t payload;		/* 0: 33 bytes */
};

/* A case set up: its action installed, its input frame. */
struct fctx {
	const struct fcase *c;
	struct cats_fp_key fk;
	struct cats_encap e;
	uint8_t addr[16];
	uint8_t fr[4096];
	size_t n;		/* bytes of fr */
	size_t len;		/* the (inner) IP packet's length */
};

static uint8_t our_sid[16];

static void
setup_case(struct cats_fwd_fast *f, struct fctx *x, const struct fcase *c)
{
	static uint8_t room[HR + 4096], room2[HR + 4096];
	uint8_t *ip = room + HR;
	const char *cli = c->af == 4 ? "192.0.2.10" : "2001:db8:c::10";
	const char *svc = c->af == 4 ? "203.0.113.100" : "2001:db8:5::100";
	const char *loc = c->af == 4 ? "198.51.100.11" : "2001:db8:9::11";
	memset(x, 0, sizeof(*x));
	x->c = c;
	(c->af == 4 ? a4 : a6)(x->addr, c->rewrite == CATS_FP_RW_SRC ? svc : loc);
	/* Forward: client -> service; reverse (decap): locator -> client. */
	size_t pl = c->payload ? c->payload : 33;
	x->len = c->decap ?
	    mkpkt(ip, c->af, c->proto, loc, cli, 80, 40000, c->flags, c->ttl, pl) :
	    mkpkt(ip, c->af, c->proto, cli, svc, 40000, 80, c->flags, c->ttl, pl);
	struct cats_pkt pk;
	cats_pkt_parse(&pk, ip, x->len);
	struct cats_fkey k;
	cats_fkey_from_pkt(&k, &pk, 0, 0);
	cats_fp_key_make(&x->fk, &k, 1);	/* test runs come in on lo */
	x->fk.tun = c->decap;

	struct cats_encap *e = &x->e;
	e->kind = c->enc;
	e->outer_af = c->ipip4 ? 4 : 6;
	if (c->ipip4) {
		a4(e->src, "10.99.0.1");
		a4(e->dst, "10.99.0.2");
	} else {
		a6(e->src, "2001:db8:1::1");
		a6(e->dst, "2001:db8:2::100");
		a6(e->sids[0], "2001:db8:cc::2");
		a6(e->sids[1], "2001:db8:2::100");
		e->nsids = 2;
	}
	uint8_t l2[14];
	memcpy(l2, mac_out, 14);
	l2[12] = c->af == 4 ? 0x08 : 0x86;
	l2[13] = c->af == 4 ? 0x00 : 0xdd;
	struct cats_fp_act a;
	T_OK(cats_fp_act_make(&a, 1, l2, 1500, c->rewrite, x->addr,
	    (uint8_t)c->af, c->port, c->decap ? NULL : e) == 0 &&
	    cats_fwd_fast_put(f, &x->fk, &a) == 0, "%s: action", c->name);

	/* The input: the packet, or (decap) the packet SRv6-encapsulated to
	 * our SID with no segment left. */
	uint8_t *in = ip;
	size_t inlen = x->len;
	if (c->decap) {
		struct cats_encap d;
		memset(&d, 0, sizeof(d));
		d.kind = CATS_ENC_SRV6;
		d.outer_af = 6;
		a6(d.src, "2001:db8:2::100");
		memcpy(d.sids[0], our_sid, 16);
		d.nsids = 1;
		in = room2 + HR;
		memcpy(in, ip, x->len);
		cats_encap_push(&d, &in, &inlen, 0);
	}
	x->n = frame(x->fr, in, inlen);
}

/*
 * What the user-space path makes of frame fr (n bytes) under the case's
 * binding: the frame it sends into exp (its length), or 0 when it would not
 * forward it with this key (a drop, another flow, the slow path's SYN or
 * last TTL).  ipid: the outer IPv4 identification (the program takes the
 * action's packet count).
 */
static size_t
reference(const struct fctx *x, const uint8_t *fr, size_t n, uint8_t *exp,
    uint16_t ipid)
{
	static uint8_t room[HR + 4096];
	if (n < 15)
		return 0;
	uint8_t *p = room + HR;
	memcpy(p, fr + 14, n - 14);
	int et = fr[12] << 8 | fr[13];
	if ((et != 0x0800 || (p[0] >> 4) != 4) &&
	    (et != 0x86dd || (p[0] >> 4) != 6))
		return 0;
	struct cats_pkt pk, ipk;
	if (cats_pkt_parse(&pk, p, n - 14) != 0)
		return 0;
	if (x->c->decap) {
		uint8_t *inner, osrc[16];
		size_t ilen;
		if ((pk.proto != 4 && pk.proto != 41) || pk.af != 6 ||
		    memcmp(cats_pkt_dst(&pk), our_sid, 16) != 0 ||
		    cats_decap(&pk, &inner, &ilen, osrc) != 0 ||
		    cats_pkt_parse(&ipk, inner, ilen) != 0)
			return 0;
	} else {
		ipk = pk;
	}
	struct cats_fkey k;
	struct cats_fp_key fk;
	cats_fkey_from_pkt(&k, &ipk, 0, 0);
	if (cats_fp_key_make(&fk, &k, 1) < 0)
		return 0;
	fk.tun = x->c->decap;
	if (memcmp(&fk, &x->fk, sizeof(fk)) != 0)
		return 0;
	if (ipk.proto == 6 && (ipk.tcp_flags & CATS_TCP_SYN))
		return 0;
	uint8_t *q = exp + 14 + HR;
	memmove(q, ipk.p, ipk.len);
	size_t elen = ipk.len;
	cats_pkt_parse(&ipk, q, elen);
	if (x->c->rewrite == CATS_FP_RW_DST)
		cats_pkt_set_dst(&ipk, x->addr, x->c->port);
	else if (x->c->rewrite == CATS_FP_RW_SRC)
		cats_pkt_set_src(&ipk, x->addr, x->c->port);
	if (cats_pkt_dec_ttl(&ipk) != 0)
		return 0;
	if (!x->c->decap && cats_encap_push(&x->e, &q, &elen, ipid) != 0)
		return 0;
	memcpy(q - 14, mac_out, 12);
	q[-2] = (q[0] >> 4) == 4 ? 0x08 : 0x86;
	q[-1] = (q[0] >> 4) == 4 ? 0x00 : 0xdd;
	memmove(exp, q - 14, elen + 14);
	return elen + 14;
}

static void
test_case(struct cats_fwd_fast *f, const struct fcase *c)
{
	static struct fctx x;
	static uint8_t out[4096], exp[4096 + HR];
	setup_case(f, &x, c);
	size_t elen = reference(&x, x.fr, x.n, exp, 0);
	uint32_t outn = 0;
	int r = run(f, x.fr, x.n, out, &outn);
	if (elen == 0) {
		T_OK(r == TC_ACT_OK && outn == x.n && memcmp(out, x.fr, x.n) == 0,
		    "%s: left to user space, unchanged (ret %d)", c->name, r);
	} else {
		bool same = r == TC_ACT_REDIRECT && outn == elen &&
		    memcmp(out, exp, elen) == 0;
		T_OK(same, "%s: redirected, the bytes user space writes "
		    "(ret %d, %u bytes, expected %zu)", c->name, r, outn, elen);
		if (!same)
			for (size_t i = 0; i < outn && i < elen; i++)
				if (out[i] != exp[i])
					printf("#   byte %zu: %02x, expected %02x\n",
					    i, out[i], exp[i]);
		struct cats_fp_act got;
		T_OK(cats_fwd_fast_get(f, &x.fk, &got) == 0 && got.pkts == 1 &&
		    got.bytes == x.len && got.last_ns > 0,
		    "%s: counted on the action", c->name);
	}
	cats_fwd_fast_del(f, &x.fk);
}

static uint64_t rng = 0x9e3779b97f4a7c15;

static uint32_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/*
 * Bad input, differentially: mutated frames of a case (bits flipped, bytes
 * replaced, headers rewritten with their IPv4 checksums made good again,
 * frames cut short).  Whatever the program redirects must be what user
 * space sends, byte for byte; it never drops (a helper failing); the rest
 * is left to user space.
 */
static void
test_mutations(struct cats_fwd_fast *f, const struct fcase *c, unsigned iters)
{
	static struct fctx x;
	static uint8_t fr[4096], out[4096], exp[4096 + HR];
	setup_case(f, &x, c);
	unsigned redirected = 0, passed = 0, bad = 0, untested = 0;
	size_t inner = c->decap ? 14 + 40 + 8 + 16 : 14;
	for (unsigned i = 0; i < iters; i++) {
		size_t n = x.n;
		memcpy(fr, x.fr, n);
		for (unsigned m = 1 + rnd() % 3; m > 0; m--) {
			size_t span = n - 12 < 100 ? n - 12 : 100;
			size_t at = 12 + rnd() % span;
			switch (rnd() % 4) {
			case 0:
				fr[at] ^= (uint8_t)(1u << (rnd() % 8));
				break;
			case 1:
				fr[at] = (uint8_t)rnd();
				break;
			case 2:
				if (n > 15)
					n = 14 + rnd() % (n - 14);
				break;
			default:
				at = (rnd() % 2 ? inner : 14) + rnd() % 40;
				if (at < n)
					fr[at] = (uint8_t)rnd();
				break;
			}
		}
		if (rnd() % 2) {
			fix4(fr + 14, n - 14);
			if (c->decap && n > inner)
				fix4(fr + inner, n - inner);
		}
		struct cats_fp_act a;
		cats_fwd_fast_get(f, &x.fk, &a);
		uint32_t outn = 0;
		int r = run(f, fr, n, out, &outn);
		if (r < 0) {
			untested++;	/* shorter than the kernel runs */
			continue;
		}
		if (r == TC_ACT_OK) {
			passed++;
			continue;
		}
		size_t elen = reference(&x, fr, n, exp, (uint16_t)a.pkts);
		if (r == TC_ACT_REDIRECT && elen == outn &&
		    memcmp(out, exp, elen) == 0) {
			redirected++;
			continue;
		}
		if (bad++ < 3) {
			printf("#   mutation %u: ret %d, %u bytes out, user space "
			    "%zu; input:", i, r, outn, elen);
			for (size_t j = 0; j < n; j++)
				printf("%s%02x", j % 32 ? "" : "\n#     ", fr[j]);
			printf("\n");
		}
	}
	T_OK(bad == 0 && redirected > 0 && passed > 0,
	    "%s: %u mutations: %u redirected as user space would send them, "
	    "%u left to it, %u wrong (%u too short to run)", c->name, iters,
	    redirected, passed, bad, untested);
	cats_fwd_fast_del(f, &x.fk);
}

static const struct fcase cases[] = {
	{ "udp4 dst rewrite, SRv6", 4, 17, 0, 64, CATS_FP_RW_DST, CATS_ENC_SRV6,
	  false, false, 0, 0 },
	{ "udp4 of 2 payload bytes (frame of 44)", 4, 17, 0, 64, CATS_FP_RW_DST,
	  CATS_ENC_SRV6, false, false, 0, 2 },
	{ "tcp4 ack, dst+port rewrite, IPv4 in IPv4", 4, 6, 0x10, 64,
	  CATS_FP_RW_DST, CATS_ENC_IPIP, true, false, 8080, 0 },
	{ "tcp4 ack, IPv4 in IPv6", 4, 6, 0x18, 9, CATS_FP_RW_DST,
	  CATS_ENC_IPIP, false, false, 0, 0 },
	{ "udp6 dst rewrite, SRv6", 6, 17, 0, 64, CATS_FP_RW_DST, CATS_ENC_SRV6,
	  false, false, 0, 0 },
	{ "tcp6 ack, dst rewrite, SRv6", 6, 6, 0x10, 3, CATS_FP_RW_DST,
	  CATS_ENC_SRV6, false, false, 0, 0 },
	{ "tcp4 reverse: SRv6 decap, src+port restore", 4, 6, 0x10, 64,
	  CATS_FP_RW_SRC, CATS_ENC_NONE, false, true, 443, 0 },
	{ "udp6 reverse: SRv6 decap, src restore", 6, 17, 0, 64,
	  CATS_FP_RW_SRC, CATS_ENC_NONE, false, true, 0, 0 },
	{ "tcp4 egress: SRv6 decap only", 4, 6, 0x10, 64, CATS_FP_RW_NONE,
	  CATS_ENC_NONE, false, true, 0, 0 },
	{ "tcp4 SYN", 4, 6, 0x02, 64, CATS_FP_RW_DST, CATS_ENC_SRV6, false,
	  false, 0, 0 },
	{ "udp4 TTL 1", 4, 17, 0, 1, CATS_FP_RW_DST, CATS_ENC_SRV6, false,
	  false, 0, 0 },
};

/* Packets the program must leave alone, whatever the map holds. */
static void
test_pass(struct cats_fwd_fast *f)
{
	static uint8_t room[HR + 4096], fr[4096], out[4096];
	uint8_t *ip = room + HR;
	size_t len = mkpkt(ip, 4, 17, "192.0.2.10", "203.0.113.100", 40000, 80,
	    0, 64, 33);
	struct cats_pkt pk;
	cats_pkt_parse(&pk, ip, len);
	struct cats_fkey k;
	cats_fkey_from_pkt(&k, &pk, 0, 0);
	struct cats_fp_key fk;
	cats_fp_key_make(&fk, &k, 1);
	struct cats_fp_act a;
	uint8_t loc[4];
	a4(loc, "198.51.100.11");
	cats_fp_act_make(&a, 1, mac_out, 100, CATS_FP_RW_DST, loc, 4, 0, NULL);
	cats_fwd_fast_put(f, &fk, &a);
	uint32_t outn;
	size_t n = frame(fr, ip, len);
	T_OK(run(f, fr, n, out, &outn) == TC_ACT_REDIRECT, "pass: fits mtu 100");
	a.mtu = 60;
	cats_fwd_fast_put(f, &fk, &a);
	T_OK(run(f, fr, n, out, &outn) == TC_ACT_OK, "pass: bigger than the mtu");
	a.mtu = 1500;
	cats_fwd_fast_put(f, &fk, &a);
	fr[14 + 10] ^= 0x40;
	T_OK(run(f, fr, n, out, &outn) == TC_ACT_OK,
	    "pass: bad IPv4 header checksum");
	fr[14 + 10] ^= 0x40;
	fr[14 + 6] |= 0x20;	/* more fragments */
	T_OK(run(f, fr, n, out, &outn) == TC_ACT_OK, "pass: a fragment");
	fr[14 + 6] &= (uint8_t)~0x20;
	T_OK(run(f, fr, 14 + 30, out, &outn) == TC_ACT_OK,
	    "pass: truncated below its IP length");
	fr[14 + 12] ^= 1;	/* another source: no key */
	T_OK(run(f, fr, n, out, &outn) == TC_ACT_OK, "pass: no action");
	fr[14 + 12] ^= 1;
	fr[12] = 0x08;
	fr[13] = 0x06;
	T_OK(run(f, fr, n, out, &outn) == TC_ACT_OK, "pass: ARP");
	cats_fwd_fast_del(f, &fk);
	uint64_t ctr[CATS_FP__N];
	cats_fwd_fast_counters(f, ctr);
	T_OK(ctr[CATS_FP_HIT] > 0 && ctr[CATS_FP_PASS] >= 6 &&
	    ctr[CATS_FP_FAIL] == 0, "program counters: %llu hit, %llu passed",
	    (unsigned long long)ctr[CATS_FP_HIT],
	    (unsigned long long)ctr[CATS_FP_PASS]);
}

/*
 * Kernels before Linux 6.3 (Debian 12's 6.1) have no DECAP flags for
 * bpf_skb_adjust_room: the decapsulating cases again with the call such a
 * kernel gets (same bytes out), and a GSO packet that arrives encapsulated
 * left to user space there, taken here (where a test run's GSO packet,
 * which has no GSO type, makes the decapsulation fail: a drop, but not
 * user space's).
 */
static void
test_old_decap(struct cats_fwd_fast *f)
{
	static struct fctx x;
	static uint8_t out[4096];
	bool was = cats_fwd_fast_old_decap(f, 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (!cases[i].decap)
			continue;
		struct fcase c = cases[i];
		char name[128];
		snprintf(name, sizeof(name), "%s, as before Linux 6.3", c.name);
		c.name = name;
		test_case(f, &c);
	}
	const struct fcase *c = &cases[6];
	uint32_t outn = 0;
	setup_case(f, &x, c);
	T_OK(run_gso(f, x.fr, x.n, out, &outn, 1000) == TC_ACT_OK &&
	    outn == x.n && memcmp(out, x.fr, x.n) == 0, "%s: a GSO packet "
	    "left to user space before Linux 6.3", c->name);
	cats_fwd_fast_del(f, &x.fk);
	cats_fwd_fast_old_decap(f, 0);
	setup_case(f, &x, c);
	int r = run_gso(f, x.fr, x.n, out, &outn, 1000);
	T_OK(r != TC_ACT_OK, "%s: a GSO packet taken with the DECAP flags "
	    "(ret %d)", c->name, r);
	cats_fwd_fast_del(f, &x.fk);
	cats_fwd_fast_old_decap(f, was);
}

int
main(void)
{
	cats_log_init("test_fwd_fast");
	test_pure();
	char err[256];
	struct cats_fwd_fast *f = geteuid() == 0 ?
	    cats_fwd_fast_open(1024, err, sizeof(err)) : NULL;
	if (f == NULL) {
		printf("ok %d - fast path test runs # SKIP %s\n", ++t_count,
		    geteuid() ? "not root" : err);
		return t_done();
	}
	a6(our_sid, "2001:db8:1::1");
	cats_fwd_fast_sid(f, 6, our_sid);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		test_case(f, &cases[i]);
	test_pass(f);
	if (cats_fwd_fast_old_decap(f, -1))
		printf("# this kernel has no DECAP flags (before Linux 6.3)\n");
	test_old_decap(f);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (cases[i].ttl > 1 && !(cases[i].flags & CATS_TCP_SYN))
			test_mutations(f, &cases[i], 3000);
	cats_fwd_fast_close(f);
	return t_done();
}
