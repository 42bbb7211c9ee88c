/*
 * path_int.h - what the files of the packet path (path.c, out.c, fast.c)
 * share and nobody else calls.
 */
#ifndef CATS_FWD_PATH_INT_H
#define CATS_FWD_PATH_INT_H

#include "fwd/path.h"

/* ---- out.c: the ways out ---- */

/* Send one IP packet out of pt (counted: tx_full, drop too-big). */
void cats_out_ip(struct cats_fwdp *w, struct cats_port *pt, const uint8_t *ip,
    size_t len);
/* The same for a packet of link type l2 (port.h: an MPLS label stack). */
void cats_out_l2(struct cats_fwdp *w, struct cats_port *pt, const uint8_t *ip,
    size_t len, int l2);
/* Encapsulate the (already rewritten) packet pk and send it to the core. */
void cats_out_encap(struct cats_fwdp *w, const struct cats_encap *enc,
    struct cats_pkt *pk, const struct cats_rxmeta *m, uint64_t now);
/*
 * Send a plain IP packet that may be a GSO super-packet (from a peer that
 * offloads segmentation): segment it in software when it exceeds the port.
 */
void cats_out_big(struct cats_fwdp *w, struct cats_port *pt,
    struct cats_pkt *pk, const struct cats_rxmeta *m, uint64_t now);
/* ICMP error about pk back out of the port it came in on (rate limited). */
void cats_out_icmp(struct cats_fwdp *w, struct cats_port *in,
    const struct cats_pkt *pk, int kind, uint32_t mtu, uint64_t now);
/* The MSS a SYN is clamped to under encapsulation enc. */
uint16_t cats_out_clamp(const struct cats_fwdp *w, const struct cats_encap *enc,
    uint8_t af);
/*
 * Will this received packet be cut into segments on every way out?  A TCP
 * super-packet (GSO) with more payload than one segment.
 */
bool cats_out_gso_cut(const struct cats_rxmeta *m, const uint8_t *ip,
    size_t len);
/* Complete a checksum left partial at receive (struct cats_rxmeta). */
void cats_out_csum_fix(struct cats_rxmeta *m, struct cats_pkt *pk);

/* ---- fast.c: the fast path's map, kept in step ---- */

/* Queue b to be offered to the fast path if it wants to be. */
void cats_fast_maybe(struct cats_fwdp *w, struct cats_fbind *b, uint64_t now);
/* Add what the kernel forwarded for b since the last call to its counters. */
void cats_fast_sync(struct cats_fbind *b, uint64_t now, void *arg);
/* Follow learned link peers that changed (from the tick). */
void cats_fast_follow_peers(struct cats_fwdp *w);

#endif
