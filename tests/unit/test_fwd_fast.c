/*
 * test_fwd_fast.c - the cats-fwd fast path: keys and action templates, and
 * (as root, where the kernel runs BPF) the tc program run with
 * BPF_PROG_TEST_RUN on the packets of the fixtures (tests/data/fwd), its
 * output compared byte for byte with what the lib/fwd packet path makes of
 * the same packet under the same bindings.
 */
#include <arpa/inet.h>
#include <linux/pkt_cls.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "test_fwd_cases.h"
#include "fwd/fwd_fast.h"
#include "base/log.h"
#include "fwd/pkt.h"
#include "t.h"

#define HR CATS_PKT_HEADROOM

/* The CPU the test runs the program on (pinned) and the possible CPUs:
 * the program's outer IPv4 id is its CPU's packet count times ncpu plus
 * the CPU. */
static int cpu, ncpu = 1;

static uint16_t
ipid_of(uint64_t pkts_here)
{
	return (uint16_t)(pkts_here * (uint64_t)ncpu + (uint64_t)cpu);
}

/* Run on CPU c from now on; -1 when not allowed. */
static int
pin(int c)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(c, &s);
	if (sched_setaffinity(0, sizeof(s), &s) < 0)
		return -1;
	cpu = c;
	return 0;
}

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
	if (bpf_prog_test_run_opts(cats_fwd_fast_prog(f), &o) < 0)
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

/* Frame an IP packet behind a link header of its family (l2: 4, 6, or
 * CATS_L2_MPLS for a label stack). */
static size_t
frame_l2(uint8_t *fr, const uint8_t *ip, size_t len, int l2)
{
	memset(fr, 0, 12);
	fr[0] = 2;
	fr[12] = l2 == 4 ? 0x08 : l2 == CATS_L2_MPLS ? 0x88 : 0x86;
	fr[13] = l2 == 4 ? 0x00 : l2 == CATS_L2_MPLS ? 0x47 : 0xdd;
	memcpy(fr + 14, ip, len);
	return len + 14;
}

static size_t
frame(uint8_t *fr, const uint8_t *ip, size_t len)
{
	return frame_l2(fr, ip, len, ip[0] >> 4);
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
 * A fixture (tests/data/fwd) set up for the fast path: the lib/fwd packet
 * path has run every line before the case's last input (bindings applied,
 * return paths learned), every binding key it would give the kernel is in
 * the map, and the last input is framed as the port receives it.  Every
 * fake port has ifindex 1: test runs come in on lo.
 */
struct fx {
	struct fcase c;
	struct cats_fwdp w;
	struct cats_port *in;
	struct cats_fp_key keys[16];
	int nkeys;
	uint8_t fr[FC_PKT + 14];
	size_t n;
	size_t len;		/* the input's IP length */
};

static const char *dir = "tests/data/fwd";

static int
fx_setup(struct cats_fwd_fast *f, struct fx *x, const char *name)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.case", dir, name);
	memset(x->keys, 0, sizeof(x->keys));
	x->nkeys = 0;
	if (fc_load(&x->c, path, name) < 0 || fc_setup(&x->w, &x->c, 1) < 0)
		return -1;
	int last = -1;
	for (int i = 0; i < x->c.nl; i++)
		if (x->c.l[i].kind == FC_IN)
			last = i;
	if (last < 0 || fc_run(&x->w, &x->c, last) < 0)
		return -1;
	struct cats_htab *h = &x->w.tab.bind_by_id;
	for (size_t i = 0; i < h->cap; i++) {
		struct cats_fbind *b = h->s[i].item;
		if (h->s[i].h == 0)
			continue;
		for (int d = 0; d < CATS_DIR__N && x->nkeys < 16; d++) {
			struct cats_fp_act a;
			struct cats_fp_key *k = &x->keys[x->nkeys];
			if (b->keyed[d] && cats_fwdp_fast_entry(&x->w, b, d, k,
			    &a) == CATS_FWDP_FP_OK && cats_fwd_fast_put(f, k,
			    &a) == 0)
				x->nkeys++;
		}
	}
	const struct fc_line *l = &x->c.l[last];
	x->in = fc_port(&x->w, l->port);
	x->len = l->len;
	x->n = frame_l2(x->fr, l->pkt, l->len, fc_mpls(l->port) ? CATS_L2_MPLS :
	    l->pkt[0] >> 4);
	memcpy(x->fr, x->in->mac, 6);
	memcpy(x->fr + 6, x->in->peer, 6);
	return 0;
}

static void
fx_done(struct cats_fwd_fast *f, struct fx *x)
{
	for (int i = 0; i < x->nkeys; i++)
		cats_fwd_fast_del(f, &x->keys[i]);
	cats_fwdp_free(&x->w);
	fc_free(&x->c);
}

/* Packets the kernel counted on the fixture's actions. */
static uint64_t
fx_counted(struct cats_fwd_fast *f, const struct fx *x, uint64_t *bytes)
{
	uint64_t n = 0;
	*bytes = 0;
	for (int i = 0; i < x->nkeys; i++) {
		struct cats_fp_act a;
		if (cats_fwd_fast_get(f, &x->keys[i], &a) == 0) {
			n += a.pkts;
			*bytes += a.bytes;
		}
	}
	return n;
}

/*
 * What the lib/fwd packet path makes of frame fr (n bytes) received on the
 * fixture's input port, with ipid the outer IPv4 identification (the
 * program takes its action's packet count): when it sends exactly one
 * packet, that packet framed for its port into exp (its length), else 0.
 */
static size_t
fx_lib(struct fx *x, const uint8_t *fr, size_t n, uint8_t *exp, uint16_t ipid)
{
	static uint8_t room[CATS_PKT_HEADROOM + FC_PKT + 14];
	struct cats_port_frame pf;
	memset(&pf, 0, sizeof(pf));
	uint8_t *p = room + CATS_PKT_HEADROOM - 14 + 14;
	memcpy(p, fr, n);
	pf.f = p;
	pf.len = n;
	pf.vh = &pf.vhc;
	pf.whole = true;
	for (int i = 0; i < x->w.nports; i++)
		cats_port_sent_free(&x->w.ports[i]);
	x->w.ipid = ipid;
	cats_fwdp_frame(&x->w, x->in, &pf, 5000);
	struct cats_port *out = NULL;
	size_t sent = 0;
	for (int i = 0; i < x->w.nports; i++) {
		sent += x->w.ports[i].nsent;
		if (x->w.ports[i].nsent)
			out = &x->w.ports[i];
	}
	if (sent != 1)
		return 0;
	const struct cats_port_sent *s = out->sent;
	cats_port_l2(out, exp, s->l2);
	memcpy(exp + 14, s->ip, s->len);
	return s->len + 14;
}

/*
 * A fixture's last input through the program: redirected, it is what the
 * lib/fwd path sends, byte for byte, counted on the action; else left to
 * user space unchanged.  Returns 1 when redirected.
 */
static int
test_case(struct cats_fwd_fast *f, const char *name, const char *what)
{
	static struct fx x;
	static uint8_t out[FC_PKT + 14], exp[FC_PKT + 14];
	if (fx_setup(f, &x, name) < 0) {
		T_OK(0, "%s%s: fixture set up", name, what);
		fx_done(f, &x);
		return 0;
	}
	uint32_t outn = 0;
	int r = run(f, x.fr, x.n, out, &outn);
	int redirected = r == TC_ACT_REDIRECT;
	if (r < 0) {
		/* Shorter than the kernel runs (a truncated header). */
		T_OK(x.n < 14 + 20, "%s%s: too short for a test run (%zu "
		    "bytes)", name, what, x.n);
	} else if (!redirected) {
		T_OK(r == TC_ACT_OK && outn == x.n && memcmp(out, x.fr, x.n) == 0,
		    "%s%s: left to user space, unchanged (ret %d)", name, what,
		    r);
	} else {
		size_t elen = fx_lib(&x, x.fr, x.n, exp, ipid_of(0));
		bool same = outn == elen && memcmp(out, exp, elen) == 0;
		T_OK(same, "%s%s: redirected, the bytes lib/fwd writes (%u "
		    "bytes, lib/fwd %zu)", name, what, outn, elen);
		if (!same)
			fc_hexdiff(out, outn, exp, elen);
		uint64_t bytes, pkts = fx_counted(f, &x, &bytes);
		/* Inner IP bytes: the smaller of what came in and went out. */
		size_t inner = elen - 14 < x.len ? elen - 14 : x.len;
		T_OK(pkts == 1 && bytes == inner, "%s%s: counted on the action "
		    "(%llu packets, %llu bytes)", name, what,
		    (unsigned long long)pkts, (unsigned long long)bytes);
	}
	fx_done(f, &x);
	return redirected;
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
 * Bad input, differentially: mutated frames of a fixture's last input (bits
 * flipped, bytes replaced, headers rewritten with their IPv4 checksums made
 * good again, frames cut short).  Whatever the program redirects must be
 * what the lib/fwd path sends, byte for byte; it never drops (a helper
 * failing); the rest is left to user space.
 */
static void
test_mutations(struct cats_fwd_fast *f, const char *name, unsigned iters)
{
	static struct fx x;
	static uint8_t fr[FC_PKT + 14], out[FC_PKT + 14], exp[FC_PKT + 14];
	if (fx_setup(f, &x, name) < 0) {
		T_OK(0, "%s: mutations: fixture set up", name);
		fx_done(f, &x);
		return;
	}
	unsigned redirected = 0, passed = 0, bad = 0, untested = 0;
	bool tun = x.fr[14 + (x.fr[12] == 0x86 ? 6 : 9)] == 41 ||
	    x.fr[14 + (x.fr[12] == 0x86 ? 6 : 9)] == 4 ||
	    x.fr[14 + (x.fr[12] == 0x86 ? 6 : 9)] == 43;
	size_t inner = tun ? x.n - x.len + 14 : 14;
	if (tun) {
		/* The inner packet starts where the last outer header ends. */
		struct cats_pkt pk;
		static uint8_t tmp[FC_PKT];
		memcpy(tmp, x.fr + 14, x.n - 14);
		if (cats_pkt_parse(&pk, tmp, x.n - 14) == 0)
			inner = 14 + pk.l4off;
	}
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
			if (tun && n > inner)
				fix4(fr + inner, n - inner);
		}
		uint64_t bytes, pkts = fx_counted(f, &x, &bytes);
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
		size_t elen = fx_lib(&x, fr, n, exp, ipid_of(pkts));
		if (r == TC_ACT_REDIRECT && elen == outn &&
		    memcmp(out, exp, elen) == 0) {
			redirected++;
			continue;
		}
		if (bad++ < 3) {
			printf("#   mutation %u: ret %d, %u bytes out, lib/fwd "
			    "%zu; input:", i, r, outn, elen);
			for (size_t j = 0; j < n; j++)
				printf("%s%02x", j % 32 ? "" : "\n#     ", fr[j]);
			printf("\n");
		}
	}
	T_OK(bad == 0 && redirected > 0 && passed > 0,
	    "%s: %u mutations: %u redirected as lib/fwd would send them, "
	    "%u left to it, %u wrong (%u too short to run)", name, iters,
	    redirected, passed, bad, untested);
	fx_done(f, &x);
}

/*
 * The same flow forwarded on two CPUs: each CPU counts in its own copy of
 * the action (no shared write), the counts come back summed, and the
 * outer IPv4 ids of the two CPUs differ (pkts * ncpu + CPU), each what
 * lib/fwd writes with that id.  Needs two CPUs the test may run on.
 */
static void
test_percpu(struct cats_fwd_fast *f)
{
	static struct fx x;
	static uint8_t out[2][FC_PKT + 14], exp[FC_PKT + 14];
	int was = cpu, other = -1;
	cpu_set_t s;
	CPU_ZERO(&s);
	if (sched_getaffinity(0, sizeof(s), &s) == 0)
		for (int c = 0; c < ncpu && c < CPU_SETSIZE; c++)
			if (c != was && CPU_ISSET(c, &s))
				other = c;
	/* Pinned to one CPU, the affinity lists that one only: ask again. */
	for (int c = 0; c < ncpu && c < CPU_SETSIZE && other < 0; c++)
		if (c != was && pin(c) == 0)
			other = c;
	pin(was);
	if (other < 0) {
		printf("ok %d - per-CPU counters # SKIP one CPU\n", ++t_count);
		return;
	}
	if (fx_setup(f, &x, "in_udp4_ipip4") < 0) {
		T_OK(0, "per-CPU: fixture set up");
		fx_done(f, &x);
		return;
	}
	uint32_t outn[2];
	int cpus[2] = { was, other };
	bool ok = true;
	for (int i = 0; i < 2; i++) {
		pin(cpus[i]);
		ok &= run(f, x.fr, x.n, out[i], &outn[i]) == TC_ACT_REDIRECT;
		size_t elen = fx_lib(&x, x.fr, x.n, exp, ipid_of(0));
		ok &= elen == outn[i] && memcmp(out[i], exp, elen) == 0;
	}
	pin(was);
	T_OK(ok, "per-CPU: CPUs %d and %d both redirect what lib/fwd writes "
	    "with their ids", was, other);
	uint16_t id0 = (uint16_t)(out[0][14 + 4] << 8 | out[0][14 + 5]);
	uint16_t id1 = (uint16_t)(out[1][14 + 4] << 8 | out[1][14 + 5]);
	T_OK(id0 != id1, "per-CPU: the outer ids differ (%u, %u)", id0, id1);
	uint64_t bytes, pkts = fx_counted(f, &x, &bytes);
	T_OK(pkts == 2, "per-CPU: both counted, summed (%llu)",
	    (unsigned long long)pkts);
	fx_done(f, &x);
}

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
 * bpf_skb_adjust_room: the fixtures that come encapsulated again with the
 * call such a kernel gets (same bytes out), and a GSO packet that arrives
 * encapsulated left to user space there, taken here (where a test run's
 * GSO packet, which has no GSO type, makes the decapsulation fail: a drop,
 * but not user space's).
 */
static void
test_old_decap(struct cats_fwd_fast *f, char **names, int n)
{
	static struct fx x;
	static uint8_t out[FC_PKT + 14];
	bool was = cats_fwd_fast_old_decap(f, 1);
	for (int i = 0; i < n; i++)
		if (strncmp(names[i], "rev_", 4) == 0 ||
		    strncmp(names[i], "eg_srv6", 7) == 0 ||
		    strncmp(names[i], "eg_ipip", 7) == 0)
			test_case(f, names[i], ", as before Linux 6.3");
	const char *c = "rev_srv6_restore4";
	uint32_t outn = 0;
	if (fx_setup(f, &x, c) == 0)
		T_OK(run_gso(f, x.fr, x.n, out, &outn, 1000) == TC_ACT_OK &&
		    outn == x.n && memcmp(out, x.fr, x.n) == 0, "%s: a GSO packet "
		    "left to user space before Linux 6.3", c);
	fx_done(f, &x);
	cats_fwd_fast_old_decap(f, 0);
	if (fx_setup(f, &x, c) == 0) {
		int r = run_gso(f, x.fr, x.n, out, &outn, 1000);
		T_OK(r != TC_ACT_OK, "%s: a GSO packet taken with the DECAP "
		    "flags (ret %d)", c, r);
	}
	fx_done(f, &x);
	cats_fwd_fast_old_decap(f, was);
}

/* The fast path's stand-in for the steering test: keys taken out. */
static int steer_drops;
static void
steer_drop(struct cats_fbind *b, void *arg)
{
	(void)arg;
	b->fast = 0;
	steer_drops++;
}

static void
steer_rec(struct cats_steer *s, int op, uint64_t seq, const char *fl)
{
	memset(s, 0, sizeof(*s));
	s->op = op;
	s->sma_id = "SMA-1";
	s->epoch = 1;
	s->seq = seq;
	s->ts = 1000;
	s->cs_id = "S1";
	s->from = "A";
	if (op != CATS_STEER_REDIRECT)
		return;
	cats_ip_parse(fl, strlen(fl), &s->from_locator);
	CATS_SET(s, STR, from_locator, s->from_locator);
	s->to = "B";
	CATS_SET(s, STR, to, s->to);
	cats_ip_parse("198.51.100.21", 13, &s->locator);
	CATS_SET(s, STR, locator, s->locator);
	CATS_SET(s, STR, until, 1000000);
}

/*
 * Site-local steering and the fast path (no kernel needed): a redirect
 * that comes into force takes the flows to its failed instance out of the
 * map at once, and only those; while it lasts they are not offered again;
 * ended, they are.
 */
static void
test_steer(void)
{
	static struct fcase c;
	static struct cats_fwdp w;
	static struct cats_fsteer t;
	char path[512], err[200];
	snprintf(path, sizeof(path), "%s/eg_srv6_deliver4.case", dir);
	if (fc_load(&c, path, "eg_srv6_deliver4") < 0 ||
	    fc_setup(&w, &c, 1) < 0 || fc_run(&w, &c, c.nl) < 0) {
		T_OK(0, "steer: fixture set up");
		fc_free(&c);
		return;
	}
	struct cats_fbind *b = cats_fwd_by_id(&w.tab, 1);
	struct cats_fp_key k;
	struct cats_fp_act a;
	T_OK(b != NULL && cats_fwdp_fast_entry(&w, b, CATS_DIR_EG_FWD, &k,
	    &a) == CATS_FWDP_FP_OK, "steer: the egress's flow may go fast");
	if (b == NULL)
		goto out;
	cats_fsteer_init(&t, "EF-2");
	cats_fwdp_steer(&w, &t);
	w.tab.fast_drop = steer_drop;
	b->fast = 1u << CATS_DIR_EG_FWD | 1u << CATS_DIR_EG_REV;
	struct cats_steer r;
	steer_rec(&r, CATS_STEER_REDIRECT, 1, "198.51.100.31");
	T_OK(cats_fsteer_apply(&t, &r, "SMA-1", 2000, err, sizeof(err)) == 0 &&
	    steer_drops == 0 && b->fast != 0,
	    "steer: a redirect of another instance leaves the flow in the map");
	r.from = "A2";
	steer_rec(&r, CATS_STEER_REDIRECT, 2, "198.51.100.11");
	T_OK(cats_fsteer_apply(&t, &r, "SMA-1", 2000, err, sizeof(err)) == 0 &&
	    steer_drops == 1 && b->fast == 0,
	    "steer: a redirect of its instance takes it out at once");
	T_OK(cats_fwdp_fast_entry(&w, b, CATS_DIR_EG_FWD, &k, &a) ==
	    CATS_FWDP_FP_LATER && cats_fwdp_fast_entry(&w, b, CATS_DIR_EG_REV,
	    &k, &a) == CATS_FWDP_FP_LATER,
	    "steer: not offered again while the redirect lasts");
	steer_rec(&r, CATS_STEER_END, 3, NULL);
	T_OK(cats_fsteer_apply(&t, &r, "SMA-1", 2000, err, sizeof(err)) == 0 &&
	    steer_drops == 1 && cats_fwdp_fast_entry(&w, b, CATS_DIR_EG_FWD,
	    &k, &a) == CATS_FWDP_FP_OK,
	    "steer: ended, the flow may go fast again");
out:
	w.tab.fast_drop = NULL;
	cats_fwdp_free(&w);
	fc_free(&c);
}

int
main(int argc, char **argv)
{
	cats_log_init("test_fwd_fast");
	cats_log_verbosity(0);
	if (argc > 1)
		dir = argv[1];
	test_pure();
	test_steer();
	char err[256];
	struct cats_fwd_fast *f = geteuid() == 0 ?
	    cats_fwd_fast_open(1024, err, sizeof(err)) : NULL;
	if (f == NULL) {
		printf("ok %d - fast path test runs # SKIP %s\n", ++t_count,
		    geteuid() ? "not root" : err);
		return t_done();
	}
	/* One CPU for the runs: the counters (and ids) are per CPU. */
	ncpu = libbpf_num_possible_cpus();
	if (sched_getcpu() < 0 || pin(sched_getcpu()) < 0)
		T_OK(0, "pinned to a CPU");
	/* The SIDs of both forwarders of the fixtures. */
	const char *sids[] = { "2001:db8:1::1", "2001:db8:2::100" };
	const char *sids4[] = { "10.99.0.1", "10.99.0.2" };
	for (int i = 0; i < 2; i++) {
		uint8_t a[16];
		a6(a, sids[i]);
		cats_fwd_fast_sid(f, 6, a);
		memset(a, 0, sizeof(a));
		a4(a, sids4[i]);
		cats_fwd_fast_sid(f, 4, a);
	}
	char **names;
	int n = fc_list(dir, &names), redirected = 0;
	for (int i = 0; i < n; i++)
		redirected += test_case(f, names[i], "");
	T_OK(redirected >= 20, "%d of %d fixtures taken by the fast path",
	    redirected, n);
	test_pass(f);
	test_percpu(f);
	if (cats_fwd_fast_old_decap(f, -1))
		printf("# this kernel has no DECAP flags (before Linux 6.3)\n");
	test_old_decap(f, names, n);
	const char *mutate[] = { "in_udp4_srv6", "in_tcp4_srv6", "in_udp6_srv6",
		"in_udp4_ipip4", "in_udp6_ipip6", "in_udp4_port",
		"rev_srv6_restore4", "rev_restore_port", "rev_srv6_restore6",
		"eg_srv6_deliver4", "eg_reply_srv6", "eg_reply_ipip4",
		"in_udp4_mpls_tc", "in_mpls_explicit_null6",
		"eg_reply_mpls_2labels" };
	for (size_t i = 0; i < sizeof(mutate) / sizeof(mutate[0]); i++)
		test_mutations(f, mutate[i], 2000);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	cats_fwd_fast_close(f);
	return t_done();
}
