/*
 * pkt.c - IP packet parsing, rewriting, encapsulation (see pkt.h).
 */
#include <string.h>

#include "rec/cbor_scan.h"
#include "fwd/pkt.h"

const char *const cats_drop_names[] = {
	"none", "truncated", "bad_version", "bad_length", "bad_hdr_csum",
	"fragment", "too_many_ext", "bad_option", "bad_srh", "unknown_proto",
	"ttl", "too_big", "no_room", "not_tunnel", "not_ours",
	"segments_left", "bad_mpls", NULL
};

static inline uint16_t
rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void
wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint32_t
rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/* ---- checksums ---- */

/*
 * The one's complement sum does not depend on byte order (RFC 1071 2(B)):
 * add native 32-bit words into a 64-bit accumulator, fold, and swap the
 * 16-bit result to network order at the end.
 */
uint32_t
cats_csum_add(uint32_t sum, const void *vp, size_t n)
{
	const uint8_t *p = vp;
	uint64_t a = 0, b = 0, c = 0, d = 0;
	uint32_t w32;
	uint16_t w16;
	while (n >= 32) {
		uint64_t x[4];
		memcpy(x, p, sizeof(x));
		a += (x[0] & 0xffffffff) + (x[0] >> 32);
		b += (x[1] & 0xffffffff) + (x[1] >> 32);
		c += (x[2] & 0xffffffff) + (x[2] >> 32);
		d += (x[3] & 0xffffffff) + (x[3] >> 32);
		p += 32;
		n -= 32;
	}
	while (n >= 4) {
		memcpy(&w32, p, 4);
		a += w32;
		p += 4;
		n -= 4;
	}
	if (n >= 2) {
		memcpy(&w16, p, 2);
		b += w16;
		p += 2;
		n -= 2;
	}
	if (n) {
		/* A last odd byte is the high byte of a network-order word. */
		uint8_t t[2] = { p[0], 0 };
		memcpy(&w16, t, 2);
		c += w16;
	}
	/* Each accumulator is below 2^40: the sum cannot overflow. */
	uint64_t s = a + b + c + d;
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	uint16_t f = (uint16_t)s;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	f = (uint16_t)(f << 8 | f >> 8);
#endif
	return sum + f;
}

uint16_t
cats_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

void
cats_csum_replace(uint8_t *c, const void *oldv, const void *newv, size_t n)
{
	const uint8_t *o = oldv, *nw = newv;
	/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'). */
	uint32_t sum = (uint16_t)~rd16(c);
	for (size_t i = 0; i + 1 < n; i += 2) {
		sum += (uint16_t)~rd16(o + i);
		sum += rd16(nw + i);
	}
	wr16(c, (uint16_t)~cats_csum_fold(sum));
}

/* Sum of the pseudo-header (RFC 768, RFC 8200 8.1) of pk's addresses. */
static uint32_t
pseudo_sum(const uint8_t *src, const uint8_t *dst, uint8_t af, uint8_t proto,
    size_t l4len)
{
	size_t al = af == 4 ? 4 : 16;
	uint32_t s = cats_csum_add(0, src, al);
	s = cats_csum_add(s, dst, al);
	s += proto;
	s += (uint32_t)(l4len >> 16) + (uint32_t)(l4len & 0xffff);
	return s;
}

/* Offset of the upper-layer checksum field, or 0 if it has none we keep. */
static size_t
l4_csum_off(const struct cats_pkt *pk)
{
	switch (pk->proto) {
	case 6:
		return pk->l4off + 16u;
	case 17:
		return pk->l4off + 6u;
	case 1:
	case 58:
		return pk->l4off + 2u;
	default:
		return 0;
	}
}

static bool
l4_has_pseudo(const struct cats_pkt *pk)
{
	return pk->proto == 6 || pk->proto == 17 || pk->proto == 58;
}

int
cats_pkt_csum_complete(uint8_t *p, size_t len, size_t start, size_t off)
{
	if (start > len || off + 2 > len - start)
		return -1;
	uint16_t c = (uint16_t)~cats_csum_fold(cats_csum_add(0, p + start,
	    len - start));
	/* UDP (and zero results in general): 0 means "none", send 0xffff. */
	if (c == 0 && off == 6)
		c = 0xffff;
	wr16(p + start + off, c);
	return 0;
}

void
cats_pkt_csum_fill(struct cats_pkt *pk)
{
	if (pk->af == 4) {
		size_t hl = (size_t)(pk->p[0] & 0xf) * 4;
		wr16(pk->p + 10, 0);
		wr16(pk->p + 10, (uint16_t)~cats_csum_fold(cats_csum_add(0,
		    pk->p, hl)));
	}
	size_t co = l4_csum_off(pk);
	if (co == 0 || co + 2 > pk->len)
		return;
	size_t l4len = pk->len - pk->l4off;
	wr16(pk->p + co, 0);
	uint32_t s = l4_has_pseudo(pk) ? pseudo_sum(cats_pkt_src(pk),
	    cats_pkt_dst(pk), pk->af, pk->proto, l4len) : 0;
	s = cats_csum_add(s, pk->p + pk->l4off, l4len);
	uint16_t c = (uint16_t)~cats_csum_fold(s);
	if (c == 0 && pk->proto == 17)
		c = 0xffff;
	wr16(pk->p + co, c);
}

bool
cats_pkt_csum_ok(const struct cats_pkt *pk)
{
	if (pk->af == 4) {
		size_t hl = (size_t)(pk->p[0] & 0xf) * 4;
		if (cats_csum_fold(cats_csum_add(0, pk->p, hl)) != 0xffff)
			return false;
	}
	size_t co = l4_csum_off(pk);
	if (co == 0 || co + 2 > pk->len)
		return true;
	if (pk->proto == 17 && pk->af == 4 && rd16(pk->p + co) == 0)
		return true;
	size_t l4len = pk->len - pk->l4off;
	uint32_t s = l4_has_pseudo(pk) ? pseudo_sum(cats_pkt_src(pk),
	    cats_pkt_dst(pk), pk->af, pk->proto, l4len) : 0;
	s = cats_csum_add(s, pk->p + pk->l4off, l4len);
	return cats_csum_fold(s) == 0xffff;
}

/* ---- CATS request TLVs ---- */

int
cats_tlv_parse(const uint8_t *p, size_t n, struct cats_req_meta *m)
{
	size_t i = 0;
	while (i < n) {
		if (n - i < 2)
			return -1;
		uint8_t t = p[i], l = p[i + 1];
		const uint8_t *v = p + i + 2;
		if ((size_t)l > n - i - 2)
			return -1;
		i += 2 + (size_t)l;
		if (t >= 128)
			continue;	/* skippable extension */
		if (t == 0 || t > CATS_TLV_MIN_REPUTATION)
			return -1;
		if (m->has & (UINT64_C(1) << t))
			return -1;	/* duplicate */
		m->has |= UINT64_C(1) << t;
		switch (t) {
		case CATS_TLV_CSID:
			if (l == 0 || l > CATS_PKT_CSID_MAX ||
			    memchr(v, 0, l) != NULL || !cats_utf8_valid(v, l))
				return -1;
			memcpy(m->cs_id, v, l);
			m->cs_id[l] = '\0';
			break;
		case CATS_TLV_MAX_DELAY:
		case CATS_TLV_MAX_COMP:
		case CATS_TLV_MAX_PRICE:
			if (l != 4)
				return -1;
			if (t == CATS_TLV_MAX_DELAY)
				m->max_delay_us = rd32(v);
			else if (t == CATS_TLV_MAX_COMP)
				m->max_comp_ms = rd32(v);
			else
				m->max_price = rd32(v);
			break;
		case CATS_TLV_MIN_BW:
			if (l != 8)
				return -1;
			m->min_bw = (uint64_t)rd32(v) << 32 | rd32(v + 4);
			if (m->min_bw > UINT64_C(9007199254740991))
				return -1;
			break;
		case CATS_TLV_MIN_SECURITY:
		case CATS_TLV_MIN_REPUTATION:
			if (l != 1)
				return -1;
			if (t == CATS_TLV_MIN_SECURITY)
				m->min_security = v[0];
			else
				m->min_reputation = v[0];
			break;
		}
	}
	m->present = true;
	return 0;
}

static size_t
tlv_put(uint8_t *out, size_t cap, size_t at, uint8_t t, const void *v,
    size_t l)
{
	if (at + 2 + l > cap)
		return 0;
	out[at] = t;
	out[at + 1] = (uint8_t)l;
	memcpy(out + at + 2, v, l);
	return at + 2 + l;
}

size_t
cats_tlv_write(const struct cats_req_meta *m, uint8_t *out, size_t cap)
{
	size_t at = 0;
	uint8_t b[8];
#define PUT(t, v, l) do { at = tlv_put(out, cap, at, (t), (v), (l)); \
	if (at == 0) return 0; } while (0)
	if (m->cs_id[0])
		PUT(CATS_TLV_CSID, m->cs_id, strnlen(m->cs_id,
		    CATS_PKT_CSID_MAX));
	if (m->has & (1u << CATS_TLV_MAX_DELAY)) {
		b[0] = (uint8_t)(m->max_delay_us >> 24);
		b[1] = (uint8_t)(m->max_delay_us >> 16);
		b[2] = (uint8_t)(m->max_delay_us >> 8);
		b[3] = (uint8_t)m->max_delay_us;
		PUT(CATS_TLV_MAX_DELAY, b, 4);
	}
	if (m->has & (1u << CATS_TLV_MAX_COMP)) {
		b[0] = (uint8_t)(m->max_comp_ms >> 24);
		b[1] = (uint8_t)(m->max_comp_ms >> 16);
		b[2] = (uint8_t)(m->max_comp_ms >> 8);
		b[3] = (uint8_t)m->max_comp_ms;
		PUT(CATS_TLV_MAX_COMP, b, 4);
	}
	if (m->has & (1u << CATS_TLV_MIN_SECURITY))
		PUT(CATS_TLV_MIN_SECURITY, &m->min_security, 1);
#undef PUT
	return at;
}

/* Walk the options of a Hop-by-Hop or Destination Options header. */
static int
parse_opts(const uint8_t *p, size_t n, struct cats_req_meta *m)
{
	size_t i = 2;
	while (i < n) {
		if (p[i] == 0) {	/* Pad1 */
			i++;
			continue;
		}
		if (n - i < 2 || (size_t)p[i + 1] > n - i - 2)
			return -1;
		uint8_t t = p[i], l = p[i + 1];
		if (t == CATS_OPT_CATS) {
			if (m->present || l < 1 || p[i + 2] != 1)
				return -1;
			if (cats_tlv_parse(p + i + 3, (size_t)l - 1, m) < 0)
				return -1;
			m->present = true;
		}
		i += 2 + (size_t)l;
	}
	return 0;
}

/* ---- parsing ---- */

uint8_t *
cats_pkt_src(const struct cats_pkt *pk)
{
	return pk->p + (pk->af == 4 ? 12 : 8);
}

uint8_t *
cats_pkt_dst(const struct cats_pkt *pk)
{
	return pk->p + (pk->af == 4 ? 16 : 24);
}

static int
parse_l4(struct cats_pkt *pk)
{
	size_t off = pk->l4off, rem = pk->len - off;
	const uint8_t *l4 = pk->p + off;
	switch (pk->proto) {
	case 6:
		if (rem < 20)
			return CATS_DROP_TRUNCATED;
		if ((l4[12] >> 4) < 5 || (size_t)(l4[12] >> 4) * 4 > rem)
			return CATS_DROP_BAD_LENGTH;
		pk->sport = rd16(l4);
		pk->dport = rd16(l4 + 2);
		pk->tcp_flags = l4[13];
		pk->has_ports = true;
		return 0;
	case 17:
		if (rem < 8)
			return CATS_DROP_TRUNCATED;
		if (rd16(l4 + 4) != rem)
			return CATS_DROP_BAD_LENGTH;
		pk->sport = rd16(l4);
		pk->dport = rd16(l4 + 2);
		pk->has_ports = true;
		return 0;
	case 1:
	case 58:
		if ((pk->proto == 1) != (pk->af == 4))
			return CATS_DROP_UNKNOWN_PROTO;
		if (rem < 8)
			return CATS_DROP_TRUNCATED;
		/* Echo request/reply: the identifier plays the port. */
		if (l4[0] == 8 || l4[0] == 0 || l4[0] == 128 || l4[0] == 129) {
			pk->sport = pk->dport = rd16(l4 + 4);
			pk->has_ports = true;
		}
		return 0;
	case 4:
	case 41:
		return 0;
	default:
		return CATS_DROP_UNKNOWN_PROTO;
	}
}

static int
parse_v6_ext(struct cats_pkt *pk)
{
	size_t off = 40;
	uint8_t nh = pk->p[6];
	size_t nhoff = 6;
	for (int n = 0;; n++) {
		if (nh != 0 && nh != 60 && nh != 43 && nh != 44 && nh != 51)
			break;
		if (n >= CATS_PKT_MAX_EXT)
			return CATS_DROP_TOO_MANY_EXT;
		if (nh == 0 && n != 0)
			return CATS_DROP_BAD_OPTION;	/* HBH only first */
		if (nh == 44)
			return CATS_DROP_FRAGMENT;
		if (pk->len - off < 8)
			return CATS_DROP_TRUNCATED;
		const uint8_t *h = pk->p + off;
		size_t hl = nh == 51 ? ((size_t)h[1] + 2) * 4
		    : ((size_t)h[1] + 1) * 8;
		if (hl > pk->len - off)
			return CATS_DROP_TRUNCATED;
		if (nh == 0 || nh == 60) {
			if (parse_opts(h, hl, &pk->meta) < 0)
				return CATS_DROP_BAD_OPTION;
		} else if (nh == 43 && h[2] == 4) {
			/* RFC 8754 SRH: last entry and segments left fit. */
			size_t nseg = (size_t)h[4] + 1;
			if (pk->srh_off || h[1] == 0 || (h[1] & 1) ||
			    nseg * 16 > hl - 8 || h[3] > h[4])
				return CATS_DROP_BAD_SRH;
			pk->srh_off = (uint16_t)off;
		}
		nhoff = off;
		nh = h[0];
		off += hl;
	}
	pk->proto = nh;
	pk->nh_off = (uint16_t)nhoff;
	pk->l4off = (uint16_t)off;
	return 0;
}

int
cats_pkt_parse(struct cats_pkt *pk, uint8_t *p, size_t len)
{
	memset(pk, 0, sizeof(*pk));
	pk->p = p;
	if (len < 1)
		return CATS_DROP_TRUNCATED;
	if (len > 65535 + 40)
		return CATS_DROP_BAD_LENGTH;
	int v = p[0] >> 4;
	if (v == 4) {
		if (len < 20)
			return CATS_DROP_TRUNCATED;
		size_t hl = (size_t)(p[0] & 0xf) * 4, tl = rd16(p + 2);
		if (hl < 20 || hl > len)
			return CATS_DROP_TRUNCATED;
		if (tl < hl || tl > len)
			return CATS_DROP_BAD_LENGTH;
		if (cats_csum_fold(cats_csum_add(0, p, hl)) != 0xffff)
			return CATS_DROP_BAD_HDR_CSUM;
		pk->af = 4;
		pk->len = tl;
		if (rd16(p + 6) & 0x3fff)
			return CATS_DROP_FRAGMENT;
		pk->proto = p[9];
		pk->nh_off = 9;
		pk->l4off = (uint16_t)hl;
	} else if (v == 6) {
		if (len < 40)
			return CATS_DROP_TRUNCATED;
		size_t pl = rd16(p + 4);
		if (pl == 0 || pl + 40 > len)
			return CATS_DROP_BAD_LENGTH;
		pk->af = 6;
		pk->len = pl + 40;
		int r = parse_v6_ext(pk);
		if (r)
			return r;
	} else {
		return CATS_DROP_BAD_VERSION;
	}
	return parse_l4(pk);
}

int
cats_modeb_parse(const struct cats_pkt *pk, size_t off,
    struct cats_req_meta *m)
{
	size_t hl;
	if (pk->proto == 6)
		hl = (size_t)(pk->p[pk->l4off + 12] >> 4) * 4;
	else if (pk->proto == 17)
		hl = 8;
	else
		return 0;
	size_t start = pk->l4off + hl;
	if (start > pk->len || off > pk->len - start ||
	    pk->len - start - off < 4)
		return 0;
	const uint8_t *e = pk->p + start + off;
	if (e[0] != CATS_MODEB_MAGIC0 || e[1] != CATS_MODEB_MAGIC1)
		return 0;
	if (e[2] != 1 || (size_t)e[3] > pk->len - start - off - 4)
		return -1;
	memset(m, 0, sizeof(*m));
	if (cats_tlv_parse(e + 4, e[3], m) < 0)
		return -1;
	return 1;
}

/* ---- rewriting ---- */

/*
 * Replace n bytes at p[off] (off relative to the start base of a checksummed
 * region) with nw, updating the checksum at c over the enclosing words.
 */
static void
replace_in(uint8_t *base, size_t off, const uint8_t *nw, size_t n, uint8_t *c)
{
	size_t lo = off & ~(size_t)1, hi = (off + n + 1) & ~(size_t)1;
	uint8_t oldw[20], neww[20];
	memcpy(oldw, base + lo, hi - lo);
	memcpy(base + off, nw, n);
	memcpy(neww, base + lo, hi - lo);
	if (c != NULL)
		cats_csum_replace(c, oldw, neww, hi - lo);
}

/* The upper-layer checksum field, or NULL if none is to be updated. */
static uint8_t *
l4_csum(const struct cats_pkt *pk, bool pseudo)
{
	size_t co = l4_csum_off(pk);
	if (co == 0 || co + 2 > pk->len)
		return NULL;
	if (pseudo && !l4_has_pseudo(pk))
		return NULL;
	if (pk->proto == 17 && pk->af == 4 && rd16(pk->p + co) == 0)
		return NULL;	/* no UDP checksum */
	if (pk->proto == 6 && pk->len - pk->l4off < 20)
		return NULL;
	return pk->p + co;
}

static void
udp_zero_fix(const struct cats_pkt *pk, uint8_t *c)
{
	if (c != NULL && pk->proto == 17 && rd16(c) == 0)
		wr16(c, 0xffff);
}

static void
set_addr(struct cats_pkt *pk, uint8_t *a, const uint8_t *addr, uint16_t port,
    size_t poff)
{
	size_t al = pk->af == 4 ? 4 : 16;
	uint8_t *c = l4_csum(pk, true);
	if (c != NULL)
		cats_csum_replace(c, a, addr, al);
	if (pk->af == 4)
		cats_csum_replace(pk->p + 10, a, addr, 4);
	memcpy(a, addr, al);
	if (port && (pk->proto == 6 || pk->proto == 17)) {
		uint8_t pb[2] = { (uint8_t)(port >> 8), (uint8_t)port };
		replace_in(pk->p + pk->l4off, poff, pb, 2, c);
		if (poff == 0)
			pk->sport = port;
		else
			pk->dport = port;
	}
	udp_zero_fix(pk, c);
}

void
cats_pkt_set_dst(struct cats_pkt *pk, const uint8_t *addr, uint16_t port)
{
	set_addr(pk, cats_pkt_dst(pk), addr, port, 2);
}

void
cats_pkt_set_src(struct cats_pkt *pk, const uint8_t *addr, uint16_t port)
{
	set_addr(pk, cats_pkt_src(pk), addr, port, 0);
}

int
cats_pkt_dec_ttl(struct cats_pkt *pk)
{
	if (pk->af == 4) {
		if (pk->p[8] <= 1)
			return CATS_DROP_TTL;
		uint8_t o[2] = { pk->p[8], pk->p[9] };
		pk->p[8]--;
		cats_csum_replace(pk->p + 10, o, pk->p + 8, 2);
	} else {
		if (pk->p[7] <= 1)
			return CATS_DROP_TTL;
		pk->p[7]--;
	}
	return 0;
}

int
cats_pkt_clamp_mss(struct cats_pkt *pk, uint16_t mss)
{
	if (pk->proto != 6 || !(pk->tcp_flags & CATS_TCP_SYN))
		return 0;
	uint8_t *t = pk->p + pk->l4off;
	size_t hl = (size_t)(t[12] >> 4) * 4;
	for (size_t i = 20; i < hl;) {
		uint8_t k = t[i];
		if (k == 0)
			break;
		if (k == 1) {
			i++;
			continue;
		}
		if (i + 1 >= hl || t[i + 1] < 2 || t[i + 1] > hl - i)
			break;
		if (k == 2 && t[i + 1] == 4) {
			if (rd16(t + i + 2) <= mss)
				return 0;
			uint8_t nb[2] = { (uint8_t)(mss >> 8), (uint8_t)mss };
			replace_in(t, i + 2, nb, 2, t + 16);
			return 1;
		}
		i += t[i + 1];
	}
	return 0;
}

/* ---- ICMP errors ---- */

static bool
is_icmp_error(const struct cats_pkt *pk)
{
	if (pk->len < (size_t)pk->l4off + 1)
		return false;
	uint8_t t = pk->p[pk->l4off];
	if (pk->proto == 1)
		return t == 3 || t == 4 || t == 5 || t == 11 || t == 12;
	if (pk->proto == 58)
		return t < 128;
	return false;
}

size_t
cats_pkt_icmp_error(const struct cats_pkt *pk, int kind, uint32_t mtu,
    const uint8_t *src, uint8_t *out, size_t cap)
{
	if (is_icmp_error(pk))
		return 0;
	const uint8_t *s = cats_pkt_src(pk);
	if (pk->af == 4) {
		if (s[0] == 0 || s[0] >= 224 || memcmp(s, "\xff\xff\xff\xff",
		    4) == 0)
			return 0;
		size_t body = pk->len < 548 ? pk->len : 548;
		size_t n = 28 + body;
		if (n > cap)
			return 0;
		memset(out, 0, 28);
		out[0] = 0x45;
		wr16(out + 2, (uint16_t)n);
		out[8] = 64;
		out[9] = 1;
		memcpy(out + 12, src, 4);
		memcpy(out + 16, s, 4);
		uint8_t *ic = out + 20;
		if (kind == CATS_ICMP_TIME_EXCEEDED) {
			ic[0] = 11;
		} else if (kind == CATS_ICMP_TOO_BIG) {
			ic[0] = 3;
			ic[1] = 4;
			wr16(ic + 6, (uint16_t)(mtu > 65535 ? 65535 : mtu));
		} else {
			ic[0] = 3;
			ic[1] = 1;
		}
		memcpy(out + 28, pk->p, body);
	} else {
		if (s[0] == 0xff || memcmp(s, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
		    15) == 0)
			return 0;
		size_t body = pk->len < 1232 ? pk->len : 1232;
		size_t n = 48 + body;
		if (n > cap)
			return 0;
		memset(out, 0, 48);
		out[0] = 0x60;
		wr16(out + 4, (uint16_t)(n - 40));
		out[6] = 58;
		out[7] = 64;
		memcpy(out + 8, src, 16);
		memcpy(out + 24, s, 16);
		uint8_t *ic = out + 40;
		if (kind == CATS_ICMP_TIME_EXCEEDED) {
			ic[0] = 3;
		} else if (kind == CATS_ICMP_TOO_BIG) {
			ic[0] = 2;
			ic[4] = (uint8_t)(mtu >> 24);
			ic[5] = (uint8_t)(mtu >> 16);
			ic[6] = (uint8_t)(mtu >> 8);
			ic[7] = (uint8_t)mtu;
		} else {
			ic[0] = 1;
			ic[1] = 3;
		}
		memcpy(out + 48, pk->p, body);
	}
	struct cats_pkt e;
	memset(&e, 0, sizeof(e));
	e.p = out;
	e.af = pk->af;
	e.proto = pk->af == 4 ? 1 : 58;
	e.l4off = pk->af == 4 ? 20 : 40;
	e.len = pk->af == 4 ? rd16(out + 2) : (size_t)rd16(out + 4) + 40;
	cats_pkt_csum_fill(&e);
	return e.len;
}

int
cats_pkt_icmp_quote(const struct cats_pkt *pk, const uint8_t *src4,
    const uint8_t *src6, struct cats_quote *q)
{
	const uint8_t *ours = pk->af == 4 ? src4 : src6;
	size_t al = pk->af == 4 ? 4 : 16;
	if (ours == NULL || !is_icmp_error(pk) ||
	    memcmp(cats_pkt_dst(pk), ours, al) != 0 ||
	    pk->len < (size_t)pk->l4off + 8)
		return -1;
	const uint8_t *ic = pk->p + pk->l4off, *p = ic + 8;
	size_t n = pk->len - pk->l4off - 8, off;
	memset(q, 0, sizeof(*q));
	if (pk->proto == 1) {
		if (ic[0] == 3 && ic[1] == 4)
			return -1;	/* fragmentation needed */
		q->what = ic[0] == 3 ? "unreachable" : ic[0] == 11 ?
		    "time-exceeded" : ic[0] == 12 ? "parameter-problem" : NULL;
	} else {
		if (ic[0] == 2)
			return -1;	/* packet too big */
		q->what = ic[0] == 1 ? "unreachable" : ic[0] == 3 ?
		    "time-exceeded" : ic[0] == 4 ? "parameter-problem" : NULL;
	}
	if (q->what == NULL)
		return -1;	/* a redirect, a source quench */
	/* The quoted outer header: from us, of our family, encapsulating. */
	uint8_t nh;
	if (pk->af == 4) {
		if (n < 20 || (p[0] >> 4) != 4 || memcmp(p + 12, ours, 4) != 0)
			return -1;
		off = (size_t)(p[0] & 15) * 4;
		nh = p[9];
		memcpy(q->outer_dst, p + 16, 4);
	} else {
		if (n < 40 || (p[0] >> 4) != 6 || memcmp(p + 8, ours, 16) != 0)
			return -1;
		off = 40;
		nh = p[6];
		memcpy(q->outer_dst, p + 24, 16);
		for (int i = 0; i < 4 && (nh == 0 || nh == 43 || nh == 60); i++) {
			if (n < off + 8)
				return -1;
			nh = p[off];
			off += ((size_t)p[off + 1] + 1) * 8;
		}
	}
	if ((nh != 4 && nh != 41) || off < 20 || n < off)
		return -1;
	p += off;
	n -= off;
	/* The inner header and its ports. */
	size_t l4;
	if (nh == 4 && n >= 20 && (p[0] >> 4) == 4 && (p[0] & 15) >= 5 &&
	    (rd16(p + 6) & 0x1fff) == 0) {
		q->af = 4;
		q->proto = p[9];
		memcpy(q->src, p + 12, 4);
		memcpy(q->dst, p + 16, 4);
		l4 = (size_t)(p[0] & 15) * 4;
	} else if (nh == 41 && n >= 40 && (p[0] >> 4) == 6) {
		q->af = 6;
		q->proto = p[6];
		memcpy(q->src, p + 8, 16);
		memcpy(q->dst, p + 24, 16);
		l4 = 40;
	} else {
		return -1;
	}
	if ((q->proto != 6 && q->proto != 17) || n < l4 + 4)
		return -1;
	q->sport = rd16(p + l4);
	q->dport = rd16(p + l4 + 2);
	return 0;
}

/* ---- encapsulation ---- */

static uint32_t
fnv32(uint32_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

uint32_t
cats_flow_label5(uint8_t af, uint8_t proto, const uint8_t *src,
    const uint8_t *dst, uint16_t sport, uint16_t dport)
{
	uint8_t h2[2] = { af, proto };
	uint8_t pt[4] = { (uint8_t)(sport >> 8), (uint8_t)sport,
		(uint8_t)(dport >> 8), (uint8_t)dport };
	size_t al = af == 4 ? 4 : 16;
	uint32_t h = fnv32(2166136261u, h2, 2);
	h = fnv32(h, src, al);
	h = fnv32(h, dst, al);
	h = fnv32(h, pt, 4);
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	h &= 0xfffff;
	return h ? h : 1;
}

uint32_t
cats_flow_label(const uint8_t *ip, size_t len)
{
	uint8_t proto;
	size_t l4;
	if (len >= 20 && (ip[0] >> 4) == 4) {
		proto = ip[9];
		l4 = (size_t)(ip[0] & 0xf) * 4;
		if (rd16(ip + 6) & 0x3fff)
			l4 = len;	/* a fragment: no ports */
	} else if (len >= 40 && (ip[0] >> 4) == 6) {
		proto = ip[6];
		l4 = 40;
	} else {
		return 1;
	}
	uint8_t af = (ip[0] >> 4) == 4 ? 4 : 6;
	const uint8_t *src = ip + (af == 4 ? 12 : 8), *dst = ip + (af == 4 ?
	    16 : 24);
	uint16_t sport = 0, dport = 0;
	if ((proto == 6 || proto == 17) && l4 + 4 <= len) {
		sport = rd16(ip + l4);
		dport = rd16(ip + l4 + 2);
	}
	return cats_flow_label5(af, proto, src, dst, sport, dport);
}

size_t
cats_encap_overhead(const struct cats_encap *e)
{
	switch (e->kind) {
	case CATS_ENC_SRV6:
		return 40 + 8 + 16 * (size_t)e->nsids;
	case CATS_ENC_IPIP:
		return e->outer_af == 4 ? 20 : 40;
	case CATS_ENC_MPLS:
		return 4 * ((size_t)e->nlabels + e->explicit_null);
	default:
		return 0;
	}
}

static void
wr_label(uint8_t *o, uint32_t label, uint8_t tc, bool bottom, uint8_t ttl)
{
	uint32_t v = label << 12 | (uint32_t)(tc & 7) << 9 |
	    (uint32_t)bottom << 8 | ttl;
	o[0] = (uint8_t)(v >> 24);
	o[1] = (uint8_t)(v >> 16);
	o[2] = (uint8_t)(v >> 8);
	o[3] = (uint8_t)v;
}

int
cats_mpls_pop(uint8_t *p, size_t len, bool (*ours)(uint32_t, void *),
    void *arg, uint8_t **inner, size_t *inner_len)
{
	size_t off = 0;
	int fam = 0;
	for (unsigned n = 0;; n++) {
		if (n >= CATS_PKT_MAX_SIDS + 2)
			return CATS_DROP_BAD_MPLS;
		if (len - off < 4)
			return CATS_DROP_TRUNCATED;
		uint32_t v = rd32(p + off);
		uint32_t label = v >> 12;
		bool bottom = (v >> 8) & 1;
		if ((v & 0xff) == 0)
			return CATS_DROP_TTL;
		off += 4;
		if (label == CATS_MPLS_IPV4_NULL || label == CATS_MPLS_IPV6_NULL) {
			fam = label == CATS_MPLS_IPV4_NULL ? 4 : 6;
		} else if (label == CATS_MPLS_ELI && !bottom) {
			/* The entropy label under it goes with it. */
			if (len - off < 4)
				return CATS_DROP_TRUNCATED;
			bottom = (rd32(p + off) >> 8) & 1;
			off += 4;
		} else if (label < CATS_MPLS_FIRST || !ours(label, arg)) {
			return CATS_DROP_NOT_OURS;
		}
		if (bottom)
			break;
	}
	if (len == off || ((p[off] >> 4) != 4 && (p[off] >> 4) != 6) ||
	    (fam && (p[off] >> 4) != fam))
		return CATS_DROP_BAD_MPLS;
	*inner = p + off;
	*inner_len = len - off;
	return 0;
}

int
cats_encap_push(const struct cats_encap *e, uint8_t **pp, size_t *lenp,
    uint16_t ipid)
{
	uint8_t *in = *pp;
	size_t len = *lenp, oh = cats_encap_overhead(e);
	if (e->kind == CATS_ENC_NONE)
		return 0;
	if (e->kind == CATS_ENC_SRV6 && (e->nsids == 0 ||
	    e->nsids > CATS_PKT_MAX_SIDS))
		return CATS_DROP_BAD_SRH;
	if (e->kind == CATS_ENC_MPLS && (e->nlabels > CATS_PKT_MAX_SIDS ||
	    (e->nlabels == 0 && !e->explicit_null)))
		return CATS_DROP_BAD_MPLS;
	if (oh > CATS_PKT_HEADROOM)
		return CATS_DROP_NO_ROOM;
	if (len + oh > 65535 + (e->outer_af == 6 || e->kind == CATS_ENC_MPLS ?
	    40 : 0))
		return CATS_DROP_TOO_BIG;
	uint8_t inner = (in[0] >> 4) == 4 ? 4 : 41;
	uint8_t tos = inner == 4 ? in[1] : (uint8_t)(rd16(in) >> 4);
	uint8_t hl = e->hop_limit ? e->hop_limit : 64;
	uint8_t *o = in - oh;
	if (e->kind == CATS_ENC_MPLS) {
		uint8_t tc = tos >> 5;
		for (unsigned i = 0; i < e->nlabels; i++)
			wr_label(o + 4 * i, e->labels[i], tc, i + 1 == e->nlabels &&
			    !e->explicit_null, hl);
		if (e->explicit_null)
			wr_label(o + 4 * e->nlabels, inner == 4 ?
			    CATS_MPLS_IPV4_NULL : CATS_MPLS_IPV6_NULL, tc, true, hl);
	} else if (e->kind == CATS_ENC_IPIP && e->outer_af == 4) {
		memset(o, 0, 20);
		o[0] = 0x45;
		o[1] = tos;
		wr16(o + 2, (uint16_t)(len + 20));
		wr16(o + 4, ipid);
		/* DF unless the inner IPv4 packet may be fragmented. */
		if (inner == 41 || (in[6] & 0x40))
			o[6] = 0x40;
		o[8] = hl;
		o[9] = inner;
		memcpy(o + 12, e->src, 4);
		memcpy(o + 16, e->dst, 4);
		wr16(o + 10, (uint16_t)~cats_csum_fold(cats_csum_add(0, o,
		    20)));
	} else {
		memset(o, 0, 40);
		uint32_t fl = e->flowlabel ? cats_flow_label(in, len) : 0;
		o[0] = (uint8_t)(0x60 | tos >> 4);
		o[1] = (uint8_t)(tos << 4 | fl >> 16);
		o[2] = (uint8_t)(fl >> 8);
		o[3] = (uint8_t)fl;
		wr16(o + 4, (uint16_t)(len + oh - 40));
		o[7] = hl;
		memcpy(o + 8, e->src, 16);
		if (e->kind == CATS_ENC_IPIP) {
			o[6] = inner;
			memcpy(o + 24, e->dst, 16);
		} else {
			unsigned n = e->nsids;
			o[6] = 43;
			memcpy(o + 24, e->sids[0], 16);
			uint8_t *s = o + 40;
			s[0] = inner;
			s[1] = (uint8_t)(2 * n);
			s[2] = 4;
			s[3] = (uint8_t)(n - 1);	/* segments left */
			s[4] = (uint8_t)(n - 1);	/* last entry */
			s[5] = 0;
			s[6] = s[7] = 0;
			/* Segment List[0] is the last segment (RFC 8754). */
			for (unsigned i = 0; i < n; i++)
				memcpy(s + 8 + 16 * i, e->sids[n - 1 - i], 16);
		}
	}
	*pp = o;
	*lenp = len + oh;
	return 0;
}

int
cats_decap(const struct cats_pkt *pk, uint8_t **inner, size_t *inner_len,
    uint8_t *outer_src)
{
	if (pk->proto != 4 && pk->proto != 41)
		return CATS_DROP_NOT_TUNNEL;
	if (pk->srh_off && pk->p[pk->srh_off + 3] != 0)
		return CATS_DROP_SEGMENTS_LEFT;
	size_t n = pk->len - pk->l4off;
	uint8_t *p = pk->p + pk->l4off;
	if (n < 1 || (p[0] >> 4) != (pk->proto == 4 ? 4 : 6))
		return CATS_DROP_BAD_VERSION;
	memset(outer_src, 0, 16);
	memcpy(outer_src, cats_pkt_src(pk), pk->af == 4 ? 4 : 16);
	*inner = p;
	*inner_len = n;
	return 0;
}

/* ---- software segmentation ---- */

int
cats_tso_init(struct cats_tso *t, const uint8_t *p, size_t len, uint16_t mss)
{
	uint8_t tmp[128];
	memset(t, 0, sizeof(*t));
	if (mss == 0 || len < 40)
		return -1;
	/* Parse a copy of the headers with a length that satisfies parse. */
	size_t hl0 = (p[0] >> 4) == 4 ? (size_t)(p[0] & 0xf) * 4 : 40;
	if (hl0 + 20 > len || hl0 + 60 > sizeof(tmp))
		return -1;
	size_t cp = len < sizeof(tmp) ? len : sizeof(tmp);
	memcpy(tmp, p, cp);
	if ((tmp[0] >> 4) == 4) {
		wr16(tmp + 2, (uint16_t)cp);
		wr16(tmp + 10, 0);
		wr16(tmp + 10, (uint16_t)~cats_csum_fold(cats_csum_add(0, tmp,
		    hl0)));
	} else {
		wr16(tmp + 4, (uint16_t)(cp - 40));
	}
	if (cats_pkt_parse(&t->pk, tmp, cp) != 0 || t->pk.proto != 6)
		return -1;
	t->pk.p = NULL;
	size_t hdr = t->pk.l4off + (size_t)(tmp[t->pk.l4off + 12] >> 4) * 4;
	if (hdr > len)
		return -1;
	t->p = p;
	t->len = len;
	t->hdr = hdr;
	t->mss = mss;
	t->nseg = (unsigned)((len - hdr + mss - 1) / mss);
	t->seq = rd32(p + t->pk.l4off + 4);
	t->flags = p[t->pk.l4off + 13];
	return t->nseg > 0 ? 0 : -1;
}

size_t
cats_tso_seg(const struct cats_tso *t, unsigned i, uint8_t *o, size_t cap)
{
	size_t pay = t->len - t->hdr, off = (size_t)i * t->mss;
	if (i >= t->nseg)
		return 0;
	size_t n = pay - off < t->mss ? pay - off : t->mss;
	size_t sl = t->hdr + n;
	if (sl > cap)
		return 0;
	memcpy(o, t->p, t->hdr);
	memcpy(o + t->hdr, t->p + t->hdr + off, n);
	if (t->pk.af == 4) {
		wr16(o + 2, (uint16_t)sl);
		wr16(o + 4, (uint16_t)(rd16(t->p + 4) + i));
	} else {
		wr16(o + 4, (uint16_t)(sl - 40));
	}
	uint8_t *th = o + t->pk.l4off;
	uint32_t s = t->seq + (uint32_t)off;
	th[4] = (uint8_t)(s >> 24);
	th[5] = (uint8_t)(s >> 16);
	th[6] = (uint8_t)(s >> 8);
	th[7] = (uint8_t)s;
	uint8_t f = t->flags;
	if (i + 1 < t->nseg)
		f &= (uint8_t)~(0x01 | 0x08);	/* FIN, PSH last */
	if (i > 0)
		f &= (uint8_t)~0x80;		/* CWR first */
	th[13] = f;
	struct cats_pkt sp = t->pk;
	sp.p = o;
	sp.len = sl;
	cats_pkt_csum_fill(&sp);
	return sl;
}

unsigned
cats_pkt_tso(const uint8_t *p, size_t len, uint16_t mss, uint8_t *out,
    size_t stride, unsigned max, size_t *lens)
{
	struct cats_tso t;
	if (cats_tso_init(&t, p, len, mss) < 0 || t.nseg > max ||
	    t.hdr + mss > stride)
		return 0;
	for (unsigned i = 0; i < t.nseg; i++)
		if ((lens[i] = cats_tso_seg(&t, i, out + (size_t)i * stride,
		    stride)) == 0)
			return 0;
	return t.nseg;
}

size_t
cats_modea_build(const struct cats_req_meta *m, uint8_t next, uint8_t *out,
    size_t cap)
{
	uint8_t tlv[255];
	size_t tl = cats_tlv_write(m, tlv, sizeof(tlv) - 1);
	if (tl == 0 && m->cs_id[0])
		return 0;
	size_t raw = 2 + 2 + 1 + tl;
	size_t total = (raw + 7) & ~(size_t)7;
	if (total > cap || total > 2048)
		return 0;
	memset(out, 0, total);
	out[0] = next;
	out[1] = (uint8_t)(total / 8 - 1);
	out[2] = CATS_OPT_CATS;
	out[3] = (uint8_t)(1 + tl);
	out[4] = 1;
	memcpy(out + 5, tlv, tl);
	size_t pad = total - raw;
	if (pad == 1) {
		out[raw] = 0;		/* Pad1 */
	} else if (pad > 1) {
		out[raw] = 1;		/* PadN */
		out[raw + 1] = (uint8_t)(pad - 2);
	}
	return total;
}
