/*
 * pkt.h - IP packet parsing and rewriting for the CATS-Forwarders.
 *
 * Every function works on a packet that starts at its IP header (no link
 * header) in a caller's buffer with headroom in front (encapsulation writes
 * there) and tailroom behind.  Parsing never trusts a length: every header
 * is bounded by the bytes there are and by the caps below; a packet that
 * cannot be handled gets a drop reason (enum cats_drop) that the caller
 * counts.  Rewrites update checksums incrementally (RFC 1624); a packet
 * whose checksum is only partial (CHECKSUM_PARTIAL from a veth) is first
 * completed with cats_pkt_csum_complete().
 *
 * Request carriage (cats-fwd(1) documents the wire formats):
 *   Mode A: the CATS Request option, type 0x1E (RFC 4727 experimental;
 *           act 00 = skip when unknown, chg 0), in an IPv6 Hop-by-Hop or
 *           Destination Options header.  Its data is a version byte (1)
 *           followed by TLVs (type, length, value).
 *   Mode B: an envelope at a configured payload offset of a configured
 *           protocol and port: magic 0xCA 0x75, version 1, length, TLVs.
 * TLVs: 1 CS-ID (UTF-8, 1..64 bytes), 2 max_delay_us (u32), 3 max_comp_ms
 * (u32), 4 min_bw (u64 bit/s), 5 max_price (u32), 6 min_security (u8),
 * 7 min_reputation (u8); unknown types >= 128 are skipped, below 128
 * refused.
 */
#ifndef CATS_PKT_H
#define CATS_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CATS_PKT_MAX_EXT	8	/* IPv6 extension headers walked */
#define CATS_PKT_MAX_SIDS	16	/* SRv6 segments, SR-MPLS labels */
#define CATS_PKT_HEADROOM	(40 + 8 + 16 * CATS_PKT_MAX_SIDS)
#define CATS_PKT_CSID_MAX	64
#define CATS_OPT_CATS		0x1E	/* the CATS Request option type */
#define CATS_MODEB_MAGIC0	0xCA
#define CATS_MODEB_MAGIC1	0x75

/* Why a packet was dropped; names in cats_drop_names[]. */
enum cats_drop {
	CATS_DROP_NONE = 0,
	CATS_DROP_TRUNCATED,	/* a header runs past the packet */
	CATS_DROP_BAD_VERSION,	/* not IPv4 or IPv6 */
	CATS_DROP_BAD_LENGTH,	/* IP length fields disagree with the packet */
	CATS_DROP_BAD_HDR_CSUM,	/* IPv4 header checksum wrong */
	CATS_DROP_FRAGMENT,	/* fragments are not steered */
	CATS_DROP_TOO_MANY_EXT,	/* extension header chain over the cap */
	CATS_DROP_BAD_OPTION,	/* malformed options or CATS request TLVs */
	CATS_DROP_BAD_SRH,	/* malformed segment routing header */
	CATS_DROP_UNKNOWN_PROTO,	/* not TCP, UDP, ICMP or a tunnel */
	CATS_DROP_TTL,		/* TTL / hop limit exhausted */
	CATS_DROP_TOO_BIG,	/* does not fit the path MTU */
	CATS_DROP_NO_ROOM,	/* no headroom for the encapsulation */
	CATS_DROP_NOT_TUNNEL,	/* not an encapsulation this forwarder ends */
	CATS_DROP_NOT_OURS,	/* outer destination is not a local SID */
	CATS_DROP_SEGMENTS_LEFT,	/* SRH still has segments to visit */
	CATS_DROP_BAD_MPLS,	/* label stack without bottom, too long, no IP */
	CATS_DROP__N
};
extern const char *const cats_drop_names[];

/* CATS request metadata from Mode A or Mode B. */
struct cats_req_meta {
	bool present;
	char cs_id[CATS_PKT_CSID_MAX + 1];	/* "" if absent */
	uint64_t has;	/* bit per CATS_TLV_* present */
	uint32_t max_delay_us, max_comp_ms, max_price;
	uint64_t min_bw;
	uint8_t min_security, min_reputation;
};

enum {
	CATS_TLV_CSID = 1,
	CATS_TLV_MAX_DELAY = 2,
	CATS_TLV_MAX_COMP = 3,
	CATS_TLV_MIN_BW = 4,
	CATS_TLV_MAX_PRICE = 5,
	CATS_TLV_MIN_SECURITY = 6,
	CATS_TLV_MIN_REPUTATION = 7,
};

/* A parsed packet: offsets into p. */
struct cats_pkt {
	uint8_t *p;
	size_t len;		/* bytes of the IP packet (trimmed to IP length) */
	uint8_t af;		/* 4 or 6 */
	uint8_t proto;		/* upper-layer protocol */
	uint16_t l4off;		/* offset of the upper-layer header */
	uint16_t srh_off;	/* offset of an SRH, 0 if none */
	uint16_t nh_off;	/* offset of the byte naming proto */
	uint16_t sport, dport;	/* ports; ICMP echo: id in both */
	uint8_t tcp_flags;
	bool has_ports;
	struct cats_req_meta meta;	/* Mode A */
};

/* Which headers a flow key or rewrite touches. */
enum { CATS_TCP_FIN = 0x01, CATS_TCP_SYN = 0x02, CATS_TCP_RST = 0x04,
	CATS_TCP_ACK = 0x10 };

/*
 * Parse p[0..len).  Trims len to the IP length.  Returns CATS_DROP_NONE or
 * the reason.  Mode A metadata, when present, is parsed into pk->meta.
 */
int cats_pkt_parse(struct cats_pkt *pk, uint8_t *p, size_t len);

/* Source and destination address (4 or 16 bytes) of a parsed packet. */
uint8_t *cats_pkt_src(const struct cats_pkt *pk);
uint8_t *cats_pkt_dst(const struct cats_pkt *pk);

/*
 * Parse CATS request TLVs (Mode A option data after the version byte, or a
 * Mode B envelope body).  0 or -1 for malformed TLVs.
 */
int cats_tlv_parse(const uint8_t *p, size_t n, struct cats_req_meta *m);
/* Write TLVs for m; returns their size or 0 if cap is too small. */
size_t cats_tlv_write(const struct cats_req_meta *m, uint8_t *out, size_t cap);

/*
 * Mode B: look for an envelope at payload offset off of a parsed TCP or UDP
 * packet.  Returns 1 with m filled, 0 when no envelope is there, -1 for a
 * malformed one.
 */
int cats_modeb_parse(const struct cats_pkt *pk, size_t off,
    struct cats_req_meta *m);

/* RFC 1071 sum of n bytes, added to sum (not folded, not inverted). */
uint32_t cats_csum_add(uint32_t sum, const void *p, size_t n);
uint16_t cats_csum_fold(uint32_t sum);
/* RFC 1624 incremental update of checksum field *c for old -> new bytes. */
void cats_csum_replace(uint8_t *c, const void *old, const void *new_,
    size_t n);

/*
 * Complete a partial checksum (CHECKSUM_PARTIAL): the field at
 * p[start + off] holds the pseudo-header sum; sum from start to the end.
 */
int cats_pkt_csum_complete(uint8_t *p, size_t len, size_t start, size_t off);
/* Verify the IPv4 header and upper-layer checksums (tests, fuzzing). */
bool cats_pkt_csum_ok(const struct cats_pkt *pk);
/* Recompute every checksum from scratch (the packets this module builds). */
void cats_pkt_csum_fill(struct cats_pkt *pk);

/*
 * Rewrite the destination (or source) address and, if port is nonzero, the
 * port, updating the IPv4 header, TCP, UDP and ICMPv6 checksums.  addr has
 * the packet's family.
 */
void cats_pkt_set_dst(struct cats_pkt *pk, const uint8_t *addr, uint16_t port);
void cats_pkt_set_src(struct cats_pkt *pk, const uint8_t *addr, uint16_t port);

/* Decrement TTL / hop limit; CATS_DROP_TTL when it would reach zero. */
int cats_pkt_dec_ttl(struct cats_pkt *pk);

/* Clamp the MSS option of a TCP SYN to mss; returns 1 if changed. */
int cats_pkt_clamp_mss(struct cats_pkt *pk, uint16_t mss);

/*
 * Build an ICMP error about the packet pk (time exceeded, unreachable,
 * fragmentation needed / packet too big with mtu) from src into out.
 * Returns its length, or 0 if none may be sent (an ICMP error, a
 * non-first fragment, a multicast source).
 */
enum { CATS_ICMP_TIME_EXCEEDED, CATS_ICMP_UNREACH, CATS_ICMP_TOO_BIG };
size_t cats_pkt_icmp_error(const struct cats_pkt *pk, int kind, uint32_t mtu,
    const uint8_t *src, uint8_t *out, size_t cap);

/* The flow of a packet quoted by an ICMP error (cats_pkt_icmp_quote). */
struct cats_quote {
	const char *what;	/* "unreachable", "time-exceeded", ... */
	uint8_t af, proto;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
	/* The quoted outer header's destination (the segment or tunnel end
	 * the router was sending to), of pk's family. */
	uint8_t outer_dst[16];
};

/*
 * Whether pk is an ICMP or ICMPv6 error sent to this forwarder (src4 or
 * src6, NULL for a family it has no address of) about a packet it
 * encapsulated from there (IPv4 or IPv6 outer, extension headers such as
 * an SRH skipped): then 0, with the inner TCP or UDP packet's flow in q.
 * The quote may end anywhere after the inner ports.  -1 for anything else:
 * Packet Too Big (a size, not a path, problem), redirects, source quench.
 */
int cats_pkt_icmp_quote(const struct cats_pkt *pk, const uint8_t *src4,
    const uint8_t *src6, struct cats_quote *q);

/* Encapsulation headers. */
struct cats_encap {
	int kind;		/* CATS_ENC_* */
	uint8_t outer_af;	/* IPIP: 4 or 6; SRv6: 6; SR-MPLS: 0 */
	uint8_t src[16], dst[16];	/* outer src; IPIP destination */
	uint8_t sids[CATS_PKT_MAX_SIDS][16];	/* SRv6, first segment first */
	unsigned nsids;
	uint8_t hop_limit;	/* 0: 64 */
	bool flowlabel;		/* IPv6 outer: label of the inner flow */
	/* SR-MPLS: the label stack, top first, and an explicit null
	 * (0 for IPv4, 2 for IPv6, RFC 3032) below it. */
	uint32_t labels[CATS_PKT_MAX_SIDS];
	unsigned nlabels;
	bool explicit_null;
};
enum { CATS_ENC_NONE, CATS_ENC_IPIP, CATS_ENC_SRV6, CATS_ENC_MPLS };
#define CATS_MPLS_IPV4_NULL	0
#define CATS_MPLS_IPV6_NULL	2
#define CATS_MPLS_ELI		7	/* entropy label indicator (RFC 6790) */
#define CATS_MPLS_FIRST		16	/* the first unreserved label */
#define CATS_MPLS_MAX		1048575

/* Does e know where to send to (SRv6 SIDs, a tunnel, labels)? */
static inline bool
cats_encap_ready(const struct cats_encap *e)
{
	return e->kind == CATS_ENC_NONE || (e->kind == CATS_ENC_SRV6 ?
	    e->nsids > 0 : e->kind == CATS_ENC_IPIP ? e->outer_af != 0 :
	    e->nlabels > 0 || e->explicit_null);
}

/*
 * The flow label of an outer IPv6 header from the inner flow (RFC 6438):
 * 20 bits, never 0, of a hash of the inner packet's addresses, protocol
 * and (TCP, UDP) ports, so that routers that hash the flow label spread
 * the flows of one tunnel over their equal-cost paths while each flow
 * keeps one.  The hash is FNV-1a over af, proto, src, dst, sport, dport
 * (ports in network order), then the murmur3 finalizer; the same function
 * gives the label of a 5-tuple (the fast path's templates).
 */
uint32_t cats_flow_label(const uint8_t *ip, size_t len);
uint32_t cats_flow_label5(uint8_t af, uint8_t proto, const uint8_t *src,
    const uint8_t *dst, uint16_t sport, uint16_t dport);

/* Bytes the encapsulation adds. */
size_t cats_encap_overhead(const struct cats_encap *e);

/*
 * Prepend the outer headers in front of the packet at *p (which has at least
 * CATS_PKT_HEADROOM bytes before it).  *p and *len then describe the outer
 * packet.  ipid is the IPv4 outer identification; an IPv6 outer header gets
 * the inner flow's label when e->flowlabel (else 0).  Returns 0 or a
 * reason.
 */
int cats_encap_push(const struct cats_encap *e, uint8_t **p, size_t *len,
    uint16_t ipid);

/*
 * SR-MPLS (RFC 8660) on the wire, an MPLS unicast frame's payload (RFC
 * 3032): the label stack, each entry label (20 bits), traffic class (3),
 * bottom of stack (1), TTL (8), then the IP packet.  cats_encap_push()
 * writes the labels with TTL 64 (the pipe model of RFC 3443, as the SRv6
 * outer hop limit) and the traffic class of the inner DSCP's class
 * selector (its top 3 bits), S on the last entry.
 *
 * Pop the label stack of p[0..len): every label must be the forwarder's
 * own (ours(label, arg)), an explicit null, or an entropy label indicator
 * and the entropy label after it (RFC 6790), down to the bottom of the
 * stack; then *inner and *inner_len describe the IP packet.  Returns 0, or
 * CATS_DROP_NOT_OURS (a label of someone else), CATS_DROP_TRUNCATED,
 * CATS_DROP_TTL (a TTL of 0), CATS_DROP_BAD_MPLS (more than
 * CATS_PKT_MAX_SIDS + 2 entries, or what is under the stack is no IP
 * packet, or not of the family an explicit null named).
 */
int cats_mpls_pop(uint8_t *p, size_t len, bool (*ours)(uint32_t, void *),
    void *arg, uint8_t **inner, size_t *inner_len);

/*
 * Decapsulate a parsed outer packet (IP-in-IP, IPv6-in-IP, or IPv6 + SRH
 * with segments left 0 carrying IPv4 or IPv6).  On success *inner and
 * *inner_len describe the inner packet and outer_src receives the outer
 * source (16 bytes, IPv4 in the first 4).
 */
int cats_decap(const struct cats_pkt *pk, uint8_t **inner, size_t *inner_len,
    uint8_t *outer_src);

/*
 * TCP segmentation in software: split the TCP packet p[0..len) (one IP
 * header, payload larger than mss) into segments of mss payload bytes, each
 * written with its headers to out + i * stride.  Returns the number of
 * segments (at most max), 0 if it cannot.  Checksums are filled.
 */
unsigned cats_pkt_tso(const uint8_t *p, size_t len, uint16_t mss,
    uint8_t *out, size_t stride, unsigned max, size_t *lens);

/*
 * The same one segment at a time, for callers that write each segment to
 * its own place (a transmit ring frame): cats_tso_init() plans (0, or -1
 * when p is not a TCP packet it can cut) and cats_tso_seg() writes segment
 * i < nseg to out (cap bytes), returning its length or 0.  p must stay
 * valid and unchanged in between.
 */
struct cats_tso {
	struct cats_pkt pk;	/* offsets of the headers */
	const uint8_t *p;
	size_t len, hdr;	/* hdr: bytes of IP and TCP headers */
	uint16_t mss;
	unsigned nseg;
	uint32_t seq;
	uint8_t flags;
};
int cats_tso_init(struct cats_tso *t, const uint8_t *p, size_t len,
    uint16_t mss);
size_t cats_tso_seg(const struct cats_tso *t, unsigned i, uint8_t *out,
    size_t cap);

/* Build a Mode A Destination Options header for m (tests, tools). */
size_t cats_modea_build(const struct cats_req_meta *m, uint8_t next,
    uint8_t *out, size_t cap);

#endif
