/*
 * fwd_fast.c - the BPF programs of the cats-fwd fast path (lib/fwd/fwd_fast.h):
 * fp_tc, a tc ingress program that applies the action installed for a
 * packet's key and redirects it.  The forwarder's AF_PACKET rings are bound
 * by ethertype, so the kernel hands them only what fp_tc passes on: a packet
 * goes one way or the other, never both and never neither, and is
 * classified once.  Built with clang -target bpf; embedded in cats-fwd.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "../fwd_fast.h"

/* Linux 6.3's flags, missing from older headers (Debian 12's). */
#ifndef BPF_F_ADJ_ROOM_DECAP_L3_IPV4
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV4 (1ULL << 7)
#define BPF_F_ADJ_ROOM_DECAP_L3_IPV6 (1ULL << 8)
#endif

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * Per CPU: an established packet takes this one lookup and writes only its
 * own CPU's counters - no atomic, no cache line shared with the other CPUs
 * forwarding the same flow (user space sums them).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 65536);	/* resized by the loader */
	__uint(map_flags, BPF_F_NO_PREALLOC);	/* memory as keys come */
	__type(key, struct cats_fp_key);
	__type(value, struct cats_fp_act);
} fp_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct cats_fp_sid);
	__type(value, __u8);
} fp_sids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CATS_FP__N);
	__type(key, __u32);
	__type(value, __u64);
} fp_ctr SEC(".maps");

/* What fp_classify learned about a packet. */
struct fp_pkt {
	__u32 outer;		/* bytes of outer headers to take off (0: none) */
	__u32 l3, l4;		/* offsets of the inner IP and L4 headers */
	__u32 iplen;		/* the inner IP packet's length */
	__u8 af, proto, ttl, tos, df;
};

static __always_inline void
count(__u32 i)
{
	__u64 *c = bpf_map_lookup_elem(&fp_ctr, &i);
	if (c != NULL)
		*c += 1;
}

/* Fold a 32-bit one's complement sum. */
static __always_inline __u16
fold(__u64 s)
{
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (__u16)s;
}

/* The one's complement sum of a 20-byte IPv4 header. */
static __always_inline __u16
sum20(const __u8 *h)
{
	__u32 s = 0;
#pragma unroll
	for (int i = 0; i < 20; i += 2)
		s += (__u32)h[i] << 8 | h[i + 1];
	return fold(s);
}

static __always_inline int
is_sid(__u8 af, const __u8 *a)
{
	struct cats_fp_sid k = { .af = af };
	if (af == 4)
		__builtin_memcpy(k.a, a, 4);
	else
		__builtin_memcpy(k.a, a, 16);
	return bpf_map_lookup_elem(&fp_sids, &k) != NULL;
}

/*
 * The key of a packet (after an encapsulation to one of our SIDs, which is
 * to be taken off) and its action, when the fast path may handle it: TCP
 * without SYN (nor FIN or RST of a tracked connection) or UDP, IPv4
 * without options or fragments with a good header checksum, IPv6 with TCP
 * or UDP right after its header, a TTL that does not run out here, and a
 * size the output takes.  NULL: user space's.
 */
static __always_inline struct cats_fp_act *
fp_classify(struct __sk_buff *skb, struct fp_pkt *p)
{
	struct cats_fp_key k = { .ifindex = skb->ifindex };
	__u8 h[40];
	__u16 eth;
	__u32 off = 14;
	__u8 inner = 0;

	if (bpf_skb_load_bytes(skb, 12, &eth, 2) < 0)
		return NULL;
	p->outer = 0;
	__u32 end = skb->len;	/* where the (outer) IP packet ends */
	if (eth == bpf_htons(ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, off, h, 40) < 0 || (h[0] >> 4) != 6)
			return NULL;
		__u8 nh = h[6];
		if ((nh == 43 || nh == 4 || nh == 41) && is_sid(6, h + 24)) {
			__u32 o = 40;
			end = off + 40 + ((__u32)h[4] << 8 | h[5]);
			if (end == off + 40 || end > skb->len)
				return NULL;
			if (nh == 43) {
				__u8 r[8];
				if (bpf_skb_load_bytes(skb, off + 40, r, 8) < 0)
					return NULL;
				/* An SRH (type 4) with no segment left whose
				 * last entry fits (RFC 8754). */
				if (r[2] != 4 || r[3] != 0 || r[1] == 0 ||
				    (r[1] & 1) ||
				    ((__u32)r[4] + 1) * 16 > (__u32)r[1] * 8)
					return NULL;
				nh = r[0];
				o += 8 + (__u32)r[1] * 8;
			}
			if (nh != 4 && nh != 41)
				return NULL;
			p->outer = o;
			inner = nh == 4 ? 4 : 6;
		} else {
			inner = 6;
		}
	} else if (eth == bpf_htons(ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, off, h, 20) < 0)
			return NULL;
		if ((h[9] == 4 || h[9] == 41) && is_sid(4, h + 16)) {
			if (h[0] != 0x45 || (h[6] & 0x3f) || h[7] ||
			    sum20(h) != 0xffff)
				return NULL;
			end = off + ((__u32)h[2] << 8 | h[3]);
			if (end > skb->len)
				return NULL;
			p->outer = 20;
			inner = h[9] == 4 ? 4 : 6;
		} else {
			inner = 4;
		}
	} else {
		return NULL;
	}
	off += p->outer;
	if (off > 14 + 40 + 8 + 255 * 8)
		return NULL;
	p->l3 = off;
	/* Not encapsulated: h holds the IP header already (one helper call
	 * less a packet, in both programs). */
	if (inner == 4) {
		if (p->outer && bpf_skb_load_bytes(skb, off, h, 20) < 0)
			return NULL;
		if (h[0] != 0x45 || (h[6] & 0x3f) || h[7])
			return NULL;	/* options, fragments */
		p->iplen = (__u32)h[2] << 8 | h[3];
		p->ttl = h[8];
		p->tos = h[1];
		p->df = h[6] & 0x40;
		k.proto = h[9];
		__builtin_memcpy(k.src, h + 12, 4);
		__builtin_memcpy(k.dst, h + 16, 4);
		p->l4 = off + 20;
	} else {
		if (p->outer && bpf_skb_load_bytes(skb, off, h, 40) < 0)
			return NULL;
		if ((h[0] >> 4) != 6)
			return NULL;
		p->iplen = 40 + ((__u32)h[4] << 8 | h[5]);
		p->ttl = h[7];
		p->tos = (__u8)(h[0] << 4 | h[1] >> 4);
		p->df = 0x40;
		k.proto = h[6];
		__builtin_memcpy(k.src, h + 8, 16);
		__builtin_memcpy(k.dst, h + 24, 16);
		p->l4 = off + 40;
	}
	p->af = inner;
	p->proto = k.proto;
	k.tun = p->outer != 0;
	k.af = inner;
	if (k.proto != 6 && k.proto != 17)
		return NULL;
	__u32 rem = p->iplen - (p->l4 - off);	/* L4 bytes */
	if (p->ttl <= 1 || p->iplen < (p->l4 - off) + 8 ||
	    off + p->iplen > end)
		return NULL;
	/* A GSO packet is whole; another loses what follows its IP length. */
	if (skb->gso_size && off + p->iplen != skb->len)
		return NULL;
	/* Ports; for TCP the data offset and the flags, for UDP the length
	 * and the checksum (an IPv6 one of 0 is user space's to count). */
	__u8 l4[8], th[2] = { 5 << 4, 0 };
	if (bpf_skb_load_bytes(skb, p->l4, l4, 8) < 0)
		return NULL;
	if (k.proto == 6) {
		if (rem < 20 || bpf_skb_load_bytes(skb, p->l4 + 12, th, 2) < 0 ||
		    (th[0] >> 4) < 5 || (__u32)(th[0] >> 4) * 4 > rem)
			return NULL;
		if (th[1] & 0x02)
			return NULL;	/* SYN: the MSS is clamped in user space */
	} else if (((__u32)l4[4] << 8 | l4[5]) != rem ||
	    (inner == 6 && l4[6] == 0 && l4[7] == 0)) {
		return NULL;
	}
	__builtin_memcpy(&k.sport, l4, 2);
	__builtin_memcpy(&k.dport, l4 + 2, 2);
	struct cats_fp_act *a = bpf_map_lookup_elem(&fp_flows, &k);
	if (a == NULL)
		return NULL;
	/* A FIN or a RST of a tracked connection changes its state. */
	if (k.proto == 6 && (a->flags & CATS_FP_F_TCP) && (th[1] & 0x05))
		return NULL;
	/* The header checksum is summed for the flows there are only: a bad
	 * one is user space's to count. */
	if (inner == 4 && sum20(h) != 0xffff)
		return NULL;
	/* The output takes it: whole, or the segments of a GSO packet (not
	 * labelled: MPLS segmentation is user space's). */
	__u32 oh = a->enc_len;
	if (skb->gso_size && a->outer_af == CATS_FP_OUTER_MPLS)
		return NULL;
	if (skb->gso_size && p->outer && (a->flags & CATS_FP_F_OLD_DECAP))
		return NULL;
	if (skb->gso_size) {
		__u32 l4h = k.proto == 6 ? (__u32)(th[0] >> 4) * 4 : 8;
		if (p->l4 - off + l4h + skb->gso_size + oh > a->mtu)
			return NULL;
	} else if (p->iplen + oh > a->mtu) {
		return NULL;
	}
	return a;
}

/* Replace 4 bytes at off of the packet, with the L4 checksum at csum. */
static __always_inline int
rw4(struct __sk_buff *skb, __u32 off, __u32 csum, __u64 flags,
    const __u8 *new, __u32 ipcsum)
{
	__be32 o, n;
	if (bpf_skb_load_bytes(skb, off, &o, 4) < 0)
		return -1;
	__builtin_memcpy(&n, new, 4);
	if (bpf_l4_csum_replace(skb, csum, o, n, flags | BPF_F_PSEUDO_HDR | 4) < 0)
		return -1;
	if (ipcsum && bpf_l3_csum_replace(skb, ipcsum, o, n, 4) < 0)
		return -1;
	return bpf_skb_store_bytes(skb, off, &n, 4, 0);
}

/* The same for 16 bytes (IPv6). */
static __always_inline int
rw16(struct __sk_buff *skb, __u32 off, __u32 csum, __u64 flags,
    const __u8 *new)
{
	__u8 o[16], n[16];
	if (bpf_skb_load_bytes(skb, off, o, 16) < 0)
		return -1;
	__builtin_memcpy(n, new, 16);
	__s64 d = bpf_csum_diff((__be32 *)o, 16, (__be32 *)n, 16, 0);
	if (d < 0 || bpf_l4_csum_replace(skb, csum, 0, (__u32)d,
	    flags | BPF_F_PSEUDO_HDR) < 0)
		return -1;
	return bpf_skb_store_bytes(skb, off, n, 16, 0);
}

/* Rewrite, hop limit, decapsulation, encapsulation, link header. */
static __always_inline int
fp_apply(struct __sk_buff *skb, struct fp_pkt *p, struct cats_fp_act *a)
{
	__u32 l3 = p->l3, l4 = p->l4;
	__u32 csum = l4 + (p->proto == 6 ? 16 : 6);
	if (skb->len > l3 + p->iplen &&
	    bpf_skb_change_tail(skb, l3 + p->iplen, 0) < 0)
		return -1;
	__u64 mangled = p->proto == 17 ? BPF_F_MARK_MANGLED_0 : 0;

	if (a->rewrite != CATS_FP_RW_NONE) {
		int dst = a->rewrite == CATS_FP_RW_DST;
		if (p->af == 4) {
			if (rw4(skb, l3 + (dst ? 16 : 12), csum, mangled,
			    a->addr, l3 + 10) < 0)
				return -1;
		} else if (rw16(skb, l3 + (dst ? 24 : 8), csum, mangled,
		    a->addr) < 0) {
			return -1;
		}
		if (a->port) {
			__be16 o;
			__u32 po = l4 + (dst ? 2 : 0);
			if (bpf_skb_load_bytes(skb, po, &o, 2) < 0 ||
			    bpf_l4_csum_replace(skb, csum, o, a->port,
			    mangled | 2) < 0 ||
			    bpf_skb_store_bytes(skb, po, &a->port, 2, 0) < 0)
				return -1;
		}
	}
	/* TTL / hop limit (checked > 1 by fp_classify). */
	if (p->af == 4) {
		__be16 o, n;
		if (bpf_skb_load_bytes(skb, l3 + 8, &o, 2) < 0)
			return -1;
		n = o;
		((__u8 *)&n)[0] = (__u8)(p->ttl - 1);
		if (bpf_l3_csum_replace(skb, l3 + 10, o, n, 2) < 0 ||
		    bpf_skb_store_bytes(skb, l3 + 8, &n, 2, 0) < 0)
			return -1;
	} else {
		__u8 hl = (__u8)(p->ttl - 1);
		if (bpf_skb_store_bytes(skb, l3 + 7, &hl, 1, 0) < 0)
			return -1;
	}
	__u64 fixed = BPF_F_ADJ_ROOM_FIXED_GSO;
	if (p->outer) {
		__u64 dec = a->flags & CATS_FP_F_OLD_DECAP ? 0 : p->af == 4 ?
		    BPF_F_ADJ_ROOM_DECAP_L3_IPV4 : BPF_F_ADJ_ROOM_DECAP_L3_IPV6;
		__s32 d = -(__s32)p->outer;
		/* Kernels before 6.3 know no DECAP flags (and GSO packets did
		 * not come this far): the link header's type, written below,
		 * is what the next device reads.  A kernel that refuses them
		 * though its version promised them gets the same. */
		if (bpf_skb_adjust_room(skb, d, BPF_ADJ_ROOM_MAC, fixed | dec) < 0 &&
		    (dec == 0 || skb->gso_size ||
		    bpf_skb_adjust_room(skb, d, BPF_ADJ_ROOM_MAC, fixed) < 0))
			return -1;
	}
	__u32 n = a->enc_len;
	if (n > 0 && a->outer_af == CATS_FP_OUTER_MPLS) {
		/* The label stack, each entry with the packet's traffic
		 * class (RFC 3032: TC bits 3..1 of the third byte). */
		__u8 lab[4 * CATS_FP_MPLS_MAX];
		__u8 tc = (__u8)((p->tos >> 5) << 1);
		if (n > 4 * CATS_FP_MPLS_MAX || (n & 3))
			return -1;
		__builtin_memcpy(lab, a->enc, 4 * CATS_FP_MPLS_MAX);
#pragma unroll
		for (int i = 2; i < 4 * CATS_FP_MPLS_MAX; i += 4)
			lab[i] = (__u8)((lab[i] & 0xf1) | tc);
		if (bpf_skb_adjust_room(skb, (__s32)n, BPF_ADJ_ROOM_MAC,
		    fixed) < 0 || bpf_skb_store_bytes(skb, 14, lab, n, 0) < 0)
			return -1;
	} else if (n > 0) {
		if (n > CATS_FP_ENC_MAX || (a->outer_af == 4 && n != 20) ||
		    (a->outer_af == 6 && n < 40))
			return -1;
		/* The template, then its first bytes patched: traffic
		 * class, lengths, and for IPv4 the id and the checksum; the
		 * IPv6 flow label is the flow's, in the template. */
		__u8 o[20];
		__u32 tot = p->iplen + n;
		__u8 np = p->af == 4 ? 4 : 41;
		__builtin_memcpy(o, a->enc, 20);
		if (a->outer_af == 4) {
			o[1] = p->tos;
			o[2] = (__u8)(tot >> 8);
			o[3] = (__u8)tot;
			/* Unique across CPUs: this CPU's count, strided. */
			__u16 id = (__u16)(a->pkts * a->ncpu +
			    bpf_get_smp_processor_id());
			o[4] = (__u8)(id >> 8);
			o[5] = (__u8)id;
			o[6] = p->af == 6 ? 0x40 : p->df;
			o[9] = np;
			o[10] = o[11] = 0;
			__u16 c = (__u16)~sum20(o);
			o[10] = (__u8)(c >> 8);
			o[11] = (__u8)c;
		} else {
			/* The flow label (o[1..3]) is the template's. */
			o[0] = (__u8)(0x60 | p->tos >> 4);
			o[1] = (__u8)(p->tos << 4 | (o[1] & 0x0f));
			o[4] = (__u8)((tot - 40) >> 8);
			o[5] = (__u8)(tot - 40);
			if (o[6] != 43)
				o[6] = np;
		}
		__u64 enc = a->outer_af == 4 ? BPF_F_ADJ_ROOM_ENCAP_L3_IPV4 :
		    BPF_F_ADJ_ROOM_ENCAP_L3_IPV6;
		if (bpf_skb_adjust_room(skb, (__s32)n, BPF_ADJ_ROOM_MAC,
		    fixed | enc) < 0)
			return -1;
		if (bpf_skb_store_bytes(skb, 14, a->enc, n, 0) < 0 ||
		    bpf_skb_store_bytes(skb, 14, o, 20, 0) < 0)
			return -1;
		/* The SRH's next header (the inner family). */
		if (a->outer_af == 6 && o[6] == 43 &&
		    bpf_skb_store_bytes(skb, 14 + 40, &np, 1, 0) < 0)
			return -1;
	}
	if (bpf_skb_store_bytes(skb, 0, a->l2, 14, 0) < 0)
		return -1;
	return 0;
}

SEC("tc")
int
fp_tc(struct __sk_buff *skb)
{
	struct fp_pkt p;
	struct cats_fp_act *a = fp_classify(skb, &p);
	if (a == NULL) {
		count(CATS_FP_PASS);
		return TC_ACT_OK;
	}
	__u32 ifindex = a->ifindex;
	int peer = a->flags & CATS_FP_F_PEER;
	__u16 type = (__u16)(a->l2[12] << 8 | a->l2[13]);
	if (fp_apply(skb, &p, a) < 0) {
		/* Taken from the rings' way: nobody else will send it. */
		count(CATS_FP_FAIL);
		return TC_ACT_SHOT;
	}
	/* This CPU's copy of the action: plain writes. */
	a->pkts += 1;
	a->bytes += p.iplen;
	a->last_ns = bpf_ktime_get_ns();
	count(CATS_FP_HIT);
	/* To the output veth's peer (CATS_FP_F_PEER), when skb->protocol is
	 * the link header's: the peer's ingress does not read it again. */
	if (peer && skb->protocol == bpf_htons(type))
		return bpf_redirect_peer(ifindex, 0);
	return bpf_redirect(ifindex, 0);
}
