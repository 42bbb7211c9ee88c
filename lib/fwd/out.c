/*
 * out.c - the ways out of the packet path: one IP packet out of a port,
 * encapsulation toward the core, TCP super-packets handed to the kernel
 * whole (GSO) or cut in software by the one segmentation loop, ICMP
 * errors back to the sender.
 */
#include <string.h>

#include "fwd/path_int.h"

#define HR CATS_PKT_HEADROOM

void
cats_out_ip(struct cats_fwdp *w, struct cats_port *pt, const uint8_t *ip,
    size_t len)
{
	cats_out_l2(w, pt, ip, len, ip[0] >> 4);
}

void
cats_out_l2(struct cats_fwdp *w, struct cats_port *pt, const uint8_t *ip,
    size_t len, int l2)
{
	int r = cats_port_send_l2(pt, ip, len, l2);
	if (r == -2)
		w->drop_pkt[CATS_DROP_TOO_BIG]++;
	else if (r < 0)
		w->ctr[CATS_FC_tx_full]++;
}

void
cats_out_icmp(struct cats_fwdp *w, struct cats_port *in,
    const struct cats_pkt *pk, int kind, uint32_t mtu, uint64_t now)
{
	uint8_t out[1300], src[16];
	if (!cats_bucket_take(&w->icmp, 1, now)) {
		w->ctr[CATS_FC_icmp_limited]++;
		return;
	}
	memset(src, 0, sizeof(src));
	if (pk->af == 4)
		memcpy(src, w->cf.fc.src4, 4);
	else
		memcpy(src, w->cf.fc.src6, 16);
	size_t n = cats_pkt_icmp_error(pk, kind, mtu, src, out, sizeof(out));
	if (n > 0) {
		cats_out_ip(w, in, out, n);
		w->ctr[CATS_FC_icmp_sent]++;
	}
}

static size_t
l3l4_hdr(const struct cats_pkt *pk)
{
	size_t h = pk->l4off;
	if (pk->proto == 6)
		h += (size_t)(pk->p[pk->l4off + 12] >> 4) * 4;
	else
		h += 8;
	return h;
}

/* The link type of packet p after encapsulation enc (or none). */
static int
enc_l2(const struct cats_encap *enc, const uint8_t *p)
{
	return enc != NULL && enc->kind == CATS_ENC_MPLS ? CATS_L2_MPLS :
	    p[0] >> 4;
}

/*
 * Write a packet straight into a transmit frame of port pt: fill(arg, q,
 * room) writes the IP packet at q (at most room bytes) and returns its
 * length (0: nothing to send); with enc, the outer headers go in front.
 */
static void
tx_fill(struct cats_fwdp *w, struct cats_port *pt, const struct cats_encap *enc,
    size_t (*fill)(void *, uint8_t *, size_t), void *arg)
{
	size_t oh = enc != NULL ? cats_encap_overhead(enc) : 0;
	uint8_t *f = cats_port_tx_frame(pt);
	if (f == NULL) {
		w->ctr[CATS_FC_tx_full]++;
		return;
	}
	uint8_t *d = f + cats_port_tx_off();
	uint8_t *q = d + 14 + oh;
	size_t len = fill(arg, q, cats_port_tx_room(pt) - oh);
	if (len == 0)
		return;
	int r = enc != NULL ? cats_encap_push(enc, &q, &len, w->ipid++) : 0;
	if (r) {
		w->drop_pkt[r]++;
		return;
	}
	cats_port_l2(pt, d, enc_l2(enc, q));
	cats_port_tx_commit(pt, f, len, NULL);
}

struct fill_seg {
	const struct cats_tso *t;
	unsigned i;
};

static size_t
fill_seg(void *arg, uint8_t *q, size_t room)
{
	struct fill_seg *fs = arg;
	return cats_tso_seg(fs->t, fs->i, q, room);
}

static size_t
fill_copy(void *arg, uint8_t *q, size_t room)
{
	const struct cats_pkt *pk = arg;
	if (pk->len > room)
		return 0;
	memcpy(q, pk->p, pk->len);
	return pk->len;
}

/*
 * The one segmentation loop: cut the TCP packet pk into segments of mss
 * payload bytes, put the outer headers of enc (or none) in front of each
 * and send them out of pt, each written with its checksums straight into
 * a transmit frame where one can take it, else built in the segment
 * buffer.
 */
static void
out_segments(struct cats_fwdp *w, struct cats_port *pt, struct cats_pkt *pk,
    const struct cats_encap *enc, size_t mss)
{
	size_t hdr = l3l4_hdr(pk);
	size_t oh = enc != NULL ? cats_encap_overhead(enc) : 0;
	struct cats_tso t;
	if (mss == 0 || cats_tso_init(&t, pk->p, pk->len, (uint16_t)mss) < 0) {
		w->ctr[CATS_FC_drop_gso]++;
		return;
	}
	w->ctr[CATS_FC_tso_segments] += t.nseg;
	for (unsigned i = 0; i < t.nseg; i++) {
		struct fill_seg fs = { &t, i };
		if (hdr + mss + oh <= cats_port_tx_room(pt)) {
			tx_fill(w, pt, enc, fill_seg, &fs);
			continue;
		}
		uint8_t *p = w->ewroom + HR;
		size_t len = cats_tso_seg(&t, i, p, CATS_FWDP_SEG_STRIDE);
		if (len > 0 && (enc == NULL || cats_encap_push(enc, &p, &len,
		    w->ipid++) == 0))
			cats_out_l2(w, pt, p, len, enc_l2(enc, p));
	}
}

/* Is pk a TCP super-packet with more payload than one of m's segments? */
static bool
is_gso(const struct cats_pkt *pk, const struct cats_rxmeta *m)
{
	return m != NULL && m->gso_size && pk->proto == 6 &&
	    pk->len > l3l4_hdr(pk) + m->gso_size;
}

static uint32_t
core_mtu(const struct cats_fwdp *w)
{
	return w->cf.mtu ? w->cf.mtu : w->core->mtu;
}

/* May pk be answered with Packet Too Big / Fragmentation Needed? */
static bool
df_set(const struct cats_pkt *pk)
{
	return pk->af == 6 || (pk->p[6] & 0x40);
}

void
cats_out_encap(struct cats_fwdp *w, const struct cats_encap *enc,
    struct cats_pkt *pk, const struct cats_rxmeta *m, uint64_t now)
{
	size_t oh = cats_encap_overhead(enc);
	uint32_t mtu = core_mtu(w);
	struct cats_port *pt = w->core;
	/*
	 * A GSO super-packet is cut into the sender's segment size even when
	 * it fits the core: the far side's links are no bigger than the
	 * sender's.
	 */
	if (is_gso(pk, m)) {
		size_t hdr = l3l4_hdr(pk);
		size_t mss = w->cf.jumbo ? mtu : m->gso_size;
		if (hdr + oh + mss > mtu)
			mss = mtu > hdr + oh ? mtu - hdr - oh : 0;
		out_segments(w, pt, pk, enc, mss);
		return;
	}
	if (pk->len + oh > mtu) {
		w->drop_pkt[CATS_DROP_TOO_BIG]++;
		if (m != NULL && df_set(pk))
			cats_out_icmp(w, m->in, pk, CATS_ICMP_TOO_BIG,
			    (uint32_t)(mtu - oh), now);
		return;
	}
	if (pk->len + oh <= cats_port_tx_room(pt)) {
		/* Build the packet in the transmit frame: one copy. */
		tx_fill(w, pt, enc, fill_copy, pk);
		return;
	}
	uint8_t *wbuf = w->wroom + HR;
	uint8_t *p = pk->p;
	size_t len = pk->len;
	if (p != wbuf) {
		memcpy(wbuf, p, len);
		p = wbuf;
	}
	int r = cats_encap_push(enc, &p, &len, w->ipid++);
	if (r) {
		w->drop_pkt[r]++;
		return;
	}
	cats_out_l2(w, pt, p, len, enc_l2(enc, p));
}

/*
 * Hand a TCP super-packet to the kernel with a virtio-net header so that
 * the port (or its peer) segments it: one packet instead of one per
 * segment.  Its checksum field becomes the pseudo-header sum of
 * CHECKSUM_PARTIAL.  It goes through the transmit ring when it fits a
 * frame (in order with the other frames, no system call of its own), else
 * through the port's vnet-header socket after the frames queued before it.
 * Returns 0, or -1 when the caller must segment in software.
 */
static int
out_gso(struct cats_fwdp *w, struct cats_port *pt, struct cats_pkt *pk,
    size_t mss)
{
	if (pt->kind != CATS_PORT_PACKET || pk->len > 65535 - 14 || mss == 0 ||
	    mss > 65535)
		return -1;
	bool ring = pk->len <= cats_port_tx_room(pt);
	if (!ring && pt->gsofd < 0)
		return -1;
	size_t hdr = l3l4_hdr(pk);
	struct virtio_net_hdr vh;
	memset(&vh, 0, sizeof(vh));
	vh.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	vh.gso_type = pk->af == 4 ? VIRTIO_NET_HDR_GSO_TCPV4 :
	    VIRTIO_NET_HDR_GSO_TCPV6;
	vh.gso_size = (uint16_t)mss;
	vh.hdr_len = (uint16_t)(14 + hdr);
	vh.csum_start = (uint16_t)(14 + pk->l4off);
	vh.csum_offset = 16;
	uint8_t *ip = pk->p;
	size_t l4len = pk->len - pk->l4off, al = pk->af == 4 ? 4 : 16;
	uint32_t ps = cats_csum_add(0, ip + (pk->af == 4 ? 12 : 8), 2 * al);
	ps += 6 + (uint32_t)(l4len >> 16) + (uint32_t)(l4len & 0xffff);
	uint16_t f = cats_csum_fold(ps);
	ip[pk->l4off + 16] = (uint8_t)(f >> 8);
	ip[pk->l4off + 17] = (uint8_t)f;
	if (ring) {
		uint8_t *fr = cats_port_tx_frame(pt);
		if (fr == NULL) {
			w->ctr[CATS_FC_tx_full]++;
			return 0;
		}
		uint8_t *d = fr + cats_port_tx_off();
		cats_port_l2(pt, d, pk->af);
		memcpy(d + 14, pk->p, pk->len);
		cats_port_tx_commit(pt, fr, pk->len, &vh);
		w->ctr[CATS_FC_gso_sends]++;
		return 0;
	}
	if (cats_port_send_gso(pt, &vh, pk->p, pk->len) < 0)
		return -1;
	w->ctr[CATS_FC_gso_sends]++;
	return 0;
}

void
cats_out_big(struct cats_fwdp *w, struct cats_port *pt, struct cats_pkt *pk,
    const struct cats_rxmeta *m, uint64_t now)
{
	uint32_t mtu = pt->mtu ? pt->mtu : 1500;
	bool gso = is_gso(pk, m);
	if (pk->len <= mtu && !gso) {
		cats_out_ip(w, pt, pk->p, pk->len);
		return;
	}
	/* A TCP segment cut to a jumbo core MTU is cut again to this port. */
	if (gso || pk->proto == 6) {
		size_t hdr = l3l4_hdr(pk);
		size_t mss = gso ? m->gso_size : mtu;
		if (hdr + mss > mtu)
			mss = mtu > hdr ? mtu - hdr : 0;
		if (out_gso(w, pt, pk, mss) == 0)
			return;
		out_segments(w, pt, pk, NULL, mss);
		return;
	}
	w->drop_pkt[CATS_DROP_TOO_BIG]++;
	if (m != NULL && df_set(pk))
		cats_out_icmp(w, m->in, pk, CATS_ICMP_TOO_BIG, mtu, now);
}

uint16_t
cats_out_clamp(const struct cats_fwdp *w, const struct cats_encap *enc,
    uint8_t af)
{
	uint32_t mtu = core_mtu(w);
	size_t oh = cats_encap_overhead(enc) + (af == 4 ? 40 : 60);
	return mtu > oh ? (uint16_t)(mtu - oh) : 536;
}

bool
cats_out_gso_cut(const struct cats_rxmeta *m, const uint8_t *ip, size_t len)
{
	uint8_t t = m->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
	if ((t != VIRTIO_NET_HDR_GSO_TCPV4 && t != VIRTIO_NET_HDR_GSO_TCPV6) ||
	    m->gso_size == 0 || m->csum_off != 16 ||
	    (size_t)m->csum_start + 20 > len)
		return false;
	size_t hdr = m->csum_start + (size_t)(ip[m->csum_start + 12] >> 4) * 4;
	return len > hdr + m->gso_size;
}

void
cats_out_csum_fix(struct cats_rxmeta *m, struct cats_pkt *pk)
{
	if (m->csum_partial && cats_pkt_csum_complete(pk->p, pk->len,
	    m->csum_start, m->csum_off) == 0)
		m->csum_partial = false;
}
