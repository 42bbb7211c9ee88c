/*
 * fwd_fast.h - the in-kernel fast path of cats-fwd (--fast-path).
 *
 * Established flows need not cross to user space: for every binding key the
 * forwarder can apply without asking anyone (exact 5-tuple, TCP or UDP, a
 * learned return path), it writes an action into a BPF hash map.  A tc
 * ingress program on each port (lib/fwd/bpf/fwd_fast.c) looks every packet
 * up there - after taking off an encapsulation addressed to one of the
 * forwarder's SIDs - and applies the action: address and port rewrite with
 * incremental checksums, TTL / hop limit, the outer headers of the binding's
 * encapsulation, the link header, and a redirect to the output port; the
 * kernel hands the port's AF_PACKET rings (bound by ethertype, port.h) only
 * the packets it passes on.  Everything else - first packets, SYNs (and the
 * FINs and RSTs of tracked TCP connections), TTL about to run out, packets
 * too big for the output, fragments, IP options, extension headers - goes
 * on to user space as before, which stays the reference: the program's
 * output is byte for byte what the user-space path writes.
 *
 * The structures below are shared with the BPF program (so: fixed-width
 * types only, ports and lengths in network order where the program copies
 * them into packets).
 */
#ifndef CATS_FWD_FAST_H
#define CATS_FWD_FAST_H

#include <linux/types.h>

#define CATS_FP_ENC_MAX	(40 + 8 + 16 * 4)	/* SRv6 with up to 4 SIDs */

/* A map key: the input port and the (inner) 5-tuple. */
struct cats_fp_key {
	__u32 ifindex;
	__u8 af, proto;
	__u16 sport, dport;	/* network order */
	__u8 tun;		/* 1: came decapsulated */
	__u8 pad;
	__u8 src[16], dst[16];	/* IPv4 in the first 4 bytes, rest 0 */
};

enum { CATS_FP_RW_NONE, CATS_FP_RW_DST, CATS_FP_RW_SRC };

/* A map value: what to do with a packet of the key, and its counters. */
struct cats_fp_act {
	__u32 ifindex;		/* output port */
	__u16 mtu;		/* largest IP packet out of it */
	__u8 rewrite;		/* CATS_FP_RW_* */
	__u8 enc_len;		/* bytes of enc[]; 0: no encapsulation */
	__u16 port;		/* new port, network order; 0: unchanged */
	__u8 outer_af;		/* 4, 6 or CATS_FP_OUTER_MPLS when enc_len > 0 */
	__u8 flags;		/* CATS_FP_F_* */
	__u8 addr[16];		/* the new address */
	__u8 l2[14];		/* the output link header */
	__u16 ncpu;		/* possible CPUs (set by cats_fwd_fast_put) */
	__u8 enc[CATS_FP_ENC_MAX];	/* outer headers (lengths patched) */
	/* Counters: each CPU's own in the kernel's per-CPU map (the outer
	 * IPv4 id is pkts * ncpu + the CPU), summed by cats_fwd_fast_get. */
	__u64 pkts, bytes;	/* inner IP bytes */
	__u64 last_ns;		/* CLOCK_MONOTONIC of the last packet (latest) */
};

/*
 * The kernel has no BPF_F_ADJ_ROOM_DECAP flags (before Linux 6.3):
 * decapsulate without them, and leave a GSO packet that arrives
 * encapsulated to user space (its GSO type would keep the tunnel's).
 */
#define CATS_FP_F_OLD_DECAP 1
/* A tracked TCP connection: its FINs and RSTs go to user space. */
#define CATS_FP_F_TCP 2
/*
 * The output port is a veth: the packet goes to its peer's ingress at once
 * (bpf_redirect_peer), not through the veth's transmit and the peer's
 * backlog queue.  The output veth's own taps and qdisc do not see it (the
 * peer's do).  Only when skb->protocol is the link header's type: the
 * peer does not read the link header again, and a decapsulation without
 * the DECAP flags or an SR-MPLS push leaves the protocol as it came.
 */
#define CATS_FP_F_PEER 4
/*
 * outer_af of an SR-MPLS push: enc holds the label stack (TTL set, traffic
 * class 0, bottom of stack on the last), the program puts the packet's
 * traffic class (its TOS >> 5) in each entry, as lib/fwd does.  GSO
 * packets are user space's.
 */
#define CATS_FP_OUTER_MPLS 0x47
/* The deepest stack the program pushes (longer ones: user space). */
#define CATS_FP_MPLS_MAX 8

/* A SID (or tunnel endpoint address) the forwarder decapsulates. */
struct cats_fp_sid {
	__u8 af;
	__u8 pad[3];
	__u8 a[16];
};

/* Program counters (a per-CPU array), by index. */
enum {
	CATS_FP_HIT,		/* applied and redirected */
	CATS_FP_PASS,		/* left to user space */
	CATS_FP_FAIL,		/* a helper failed: dropped */
	CATS_FP__N
};

#ifndef __bpf__
#include <stddef.h>
#include <stdint.h>

#include "fwd/fwd.h"

struct cats_fwd_fast;

/*
 * Load the program and its maps (room for max_keys actions, each held once
 * per possible CPU, memory as keys come).  Returns NULL
 * with a message in err when the kernel or the privileges do not allow it.
 */
struct cats_fwd_fast *cats_fwd_fast_open(size_t max_keys, char *err,
    size_t errlen);
/* Detach from every port and free. */
void cats_fwd_fast_close(struct cats_fwd_fast *f);
/*
 * Attach to a port: the tc ingress program on ifindex (replacing one left
 * by an earlier run).  The port's rings, bound by ethertype (port.h), see
 * only the packets it passes on.
 */
int cats_fwd_fast_port(struct cats_fwd_fast *f, int ifindex, char *err,
    size_t errlen);
/* Decapsulate packets to this address (af 4 or 6). */
int cats_fwd_fast_sid(struct cats_fwd_fast *f, uint8_t af, const uint8_t *a);
/*
 * Whether the kernel lacks the decapsulation flags of Linux 6.3 (as open
 * found from its version); on changes it for the actions put from then on
 * (tests run the older kernels' way on a newer one).
 */
bool cats_fwd_fast_old_decap(struct cats_fwd_fast *f, int on);
/* Install, read back (counters summed over the CPUs, last_ns the latest)
 * and remove one action. */
int cats_fwd_fast_put(struct cats_fwd_fast *f, const struct cats_fp_key *k,
    const struct cats_fp_act *a);
int cats_fwd_fast_get(struct cats_fwd_fast *f, const struct cats_fp_key *k,
    struct cats_fp_act *a);
int cats_fwd_fast_del(struct cats_fwd_fast *f, const struct cats_fp_key *k);
/* The program's counters, summed over the CPUs. */
void cats_fwd_fast_counters(struct cats_fwd_fast *f, uint64_t out[CATS_FP__N]);
/* The fd of the tc program (tests run it on packets). */
int cats_fwd_fast_prog(const struct cats_fwd_fast *f);

/*
 * The map key of a binding key seen on input port ifindex; -1 when the
 * fast path cannot match it (wildcard ports, not TCP or UDP).
 */
int cats_fp_key_make(struct cats_fp_key *out, const struct cats_fkey *k,
    int ifindex);
/*
 * The action that sends a packet out of port ifindex, link header l2 (14
 * bytes), packets up to mtu: rewrite (CATS_FP_RW_*) to addr / port (host
 * order, 0 unchanged), then the encapsulation enc (or NULL).  -1 when the
 * encapsulation does not fit the fast path.
 */
int cats_fp_act_make(struct cats_fp_act *out, int ifindex, const uint8_t *l2,
    uint32_t mtu, int rewrite, const uint8_t *addr, uint8_t af,
    uint16_t port, const struct cats_encap *enc);
/* Put flow label fl (cats_flow_label5) in an action's IPv6 outer header. */
void cats_fp_act_flowlabel(struct cats_fp_act *a, uint32_t fl);
#endif

#endif
