/*
 * pcep.c - PCEP framing, decoding and encoding (see pcep.h).
 *
 * Decoding walks a message twice: the first pass checks the framing of
 * every object (length at least 4, a multiple of 4, within the message)
 * and counts what the second pass will store, so that every array is
 * allocated once, at its final size, after the caps were checked.
 */
#include <string.h>

#include "pce/pcep.h"

const struct cats_pcep_limits cats_pcep_limits_default = {
	.max_msg = 16384,
	.max_objs = 512,
	.max_reqs = 64,
	.max_subobjs = 64,
	.max_tlvs = 16,
	.max_metrics = 8,
	.max_errors = 16,
};

/* ---- names ---- */

const char *
cats_pcep_msg_name(int t)
{
	static const char *const names[] = { "?", "Open", "Keepalive",
	    "PCReq", "PCRep", "PCNtf", "PCErr", "Close" };
	return t > 0 && t < (int)CATS_ARRAY_LEN(names) ? names[t] : "?";
}

const char *
cats_pcep_close_name(int r)
{
	static const char *const names[] = { "?", "no-explanation",
	    "deadtimer-expired", "malformed-message", "unknown-requests",
	    "unknown-messages" };
	return r > 0 && r < (int)CATS_ARRAY_LEN(names) ? names[r] : "?";
}

struct ename {
	uint8_t type, value;
	const char *name;
};

static const struct ename enames[] = {
	{ 1, 0, "session-establishment-failure" },
	{ 1, 1, "invalid-open" },
	{ 1, 2, "openwait-expired" },
	{ 1, 3, "unacceptable-non-negotiable" },
	{ 1, 4, "unacceptable-negotiable" },
	{ 1, 5, "second-open-unacceptable" },
	{ 1, 6, "pcerr-proposal-unacceptable" },
	{ 1, 7, "keepwait-expired" },
	{ 1, 8, "version-not-supported" },
	{ 2, 0, "capability-not-supported" },
	{ 3, 0, "unknown-object" },
	{ 3, 1, "unrecognized-object-class" },
	{ 3, 2, "unrecognized-object-type" },
	{ 4, 0, "not-supported-object" },
	{ 4, 1, "not-supported-object-class" },
	{ 4, 2, "not-supported-object-type" },
	{ 4, 4, "unsupported-parameter" },
	{ 5, 0, "policy-violation" },
	{ 6, 0, "mandatory-object-missing" },
	{ 6, 1, "rp-missing" },
	{ 6, 3, "end-points-missing" },
	{ 7, 0, "synchronized-request-missing" },
	{ 8, 0, "unknown-request-reference" },
	{ 9, 0, "second-session" },
	{ 10, 0, "invalid-object" },
	{ 10, 1, "p-flag-not-set" },
	{ 10, 2, "bad-label-value" },
	{ 10, 3, "unsupported-number-of-sr-ero-subobjects" },
	{ 10, 4, "bad-label-format" },
	{ 10, 5, "ero-mixes-sr-ero" },
	{ 10, 6, "sr-ero-sid-and-nai-absent" },
	{ 10, 11, "malformed-object" },
	{ 10, 12, "missing-sr-pce-capability" },
	{ 10, 13, "unsupported-nai-type" },
	{ 10, 21, "msd-must-be-nonzero" },
	{ 10, 34, "missing-srv6-pce-capability" },
	{ 10, 37, "invalid-srv6-sid-structure" },
	{ 10, 39, "unsupported-number-of-srv6-ero-subobjects" },
	{ 10, 40, "unsupported-srv6-nai-type" },
	{ 10, 41, "srv6-ero-sid-and-nai-absent" },
	{ 10, 42, "ero-mixes-srv6-ero" },
	{ 19, 0, "invalid-operation" },
	{ 21, 0, "invalid-path-setup-type" },
	{ 21, 1, "unsupported-path-setup-type" },
	{ 21, 2, "mismatched-path-setup-type" },
};

const char *
cats_pcep_error_name(int type, int value)
{
	const char *t = NULL;
	for (size_t i = 0; i < CATS_ARRAY_LEN(enames); i++) {
		if (enames[i].type != type)
			continue;
		if (enames[i].value == value)
			return enames[i].name;
		if (enames[i].value == 0)
			t = enames[i].name;
	}
	return t ? t : "?";
}

/* ---- bytes ---- */

static inline uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

static inline float
getf(const uint8_t *p)
{
	uint32_t u = get32(p);
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

static inline void
set16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

void
cats_pcep_st(struct cats_pcep_status *st, int code, uint8_t type,
    uint8_t value, const char *why)
{
	memset(st, 0, sizeof(*st));
	st->code = code;
	st->err_type = type;
	st->err_value = value;
	st->why = why;
}

static void
set_st(struct cats_pcep_status *st, int code, uint8_t et, uint8_t ev,
    size_t off, const char *why)
{
	cats_pcep_st(st, code, et, ev, why);
	st->off = off;
}

static void
malformed(struct cats_pcep_status *st, size_t off, const char *why)
{
	set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_INVALID,
	    CATS_PCEP_EV_MALFORMED, off, why);
}

/* ---- framing ---- */

long
cats_pcep_frame(const uint8_t *p, size_t n, const struct cats_pcep_limits *lim,
    struct cats_pcep_status *st)
{
	if (lim == NULL)
		lim = &cats_pcep_limits_default;
	if (n < CATS_PCEP_HDR)
		return 0;
	if (p[0] >> 5 != CATS_PCEP_VERSION) {
		set_st(st, CATS_PCEP_ST_CLOSE, CATS_PCEP_ET_SESSION,
		    CATS_PCEP_EV_VERSION, 0, "PCEP version not 1");
		st->close_reason = CATS_PCEP_CLOSE_MALFORMED;
		return -1;
	}
	size_t len = get16(p + 2);
	size_t max = lim->max_msg < CATS_PCEP_MSG_MAX ? lim->max_msg :
	    CATS_PCEP_MSG_MAX;
	if (len < CATS_PCEP_HDR || len > max) {
		set_st(st, CATS_PCEP_ST_CLOSE, 0, 0, 2, len < CATS_PCEP_HDR ?
		    "message length below 4" : "message over max_msg");
		st->close_reason = CATS_PCEP_CLOSE_MALFORMED;
		return -1;
	}
	return n < len ? 0 : (long)len;
}

/* ---- objects and TLVs ---- */

struct obj {
	uint8_t cls, type;
	bool p, i;
	const uint8_t *b;	/* body */
	size_t n;		/* body bytes */
	size_t off;		/* of the header in the message */
};

/* The object at *pos of msg[0..len): 1, 0 at the end, -1 when framing is
 * broken. */
static int
next_obj(const uint8_t *msg, size_t len, size_t *pos, struct obj *o)
{
	if (*pos >= len)
		return 0;
	if (len - *pos < 4)
		return -1;
	const uint8_t *h = msg + *pos;
	size_t olen = get16(h + 2);
	if (olen < 4 || olen % 4 != 0 || olen > len - *pos)
		return -1;
	o->cls = h[0];
	o->type = h[1] >> 4;
	o->p = (h[1] & 0x02) != 0;
	o->i = (h[1] & 0x01) != 0;
	o->b = h + 4;
	o->n = olen - 4;
	o->off = *pos;
	*pos += olen;
	return 1;
}

struct tlv {
	uint16_t type, len;
	const uint8_t *v;
};

/* The TLV at *pos of b[0..n): 1, 0 at the end, -1 when it overruns. */
static int
next_tlv(const uint8_t *b, size_t n, size_t *pos, struct tlv *t)
{
	if (*pos >= n)
		return 0;
	if (n - *pos < 4)
		return -1;
	t->type = get16(b + *pos);
	t->len = get16(b + *pos + 2);
	size_t padded = ((size_t)t->len + 3) & ~(size_t)3;
	if (padded > n - *pos - 4)
		return -1;
	t->v = b + *pos + 4;
	*pos += 4 + padded;
	return 1;
}

/* Walk the TLVs of an object, counting them against the cap: 0, or -1
 * (malformed). */
#define TLV_LOOP(b, n, lim, t, body) do { \
	size_t tpos_ = 0, tcount_ = 0; int trc_; \
	while ((trc_ = next_tlv((b), (n), &tpos_, &(t))) == 1) { \
		if (++tcount_ > (lim)->max_tlvs) { trc_ = -1; break; } \
		body \
	} \
	if (trc_ < 0) return -1; \
} while (0)

/* Classes assigned by IANA (recognized, though not all supported). */
static bool
class_known(uint8_t c)
{
	return (c >= 1 && c <= 17) || (c >= 19 && c <= 22) ||
	    (c >= 24 && c <= 45);
}

static int
dec_sr_cap(const struct tlv *t, struct cats_pcep_open *o)
{
	if (t->len != 4)
		return -1;
	if (!o->sr) {
		o->sr = true;
		o->sr_flags = t->v[2];
		o->msd = t->v[3];
	}
	return 0;
}

static int
dec_srv6_cap(const struct tlv *t, struct cats_pcep_open *o)
{
	if (t->len < 4 || (t->len - 4) % 2 != 0)
		return -1;
	if (o->srv6)
		return 0;	/* only the first one counts (RFC 9603) */
	o->srv6 = true;
	o->srv6_flags = get16(t->v + 2);
	for (size_t i = 4; i + 1 < t->len; i += 2) {
		if (o->nsrv6_msd == CATS_ARRAY_LEN(o->srv6_msd))
			break;
		o->srv6_msd[o->nsrv6_msd].type = t->v[i];
		o->srv6_msd[o->nsrv6_msd].value = t->v[i + 1];
		o->nsrv6_msd++;
	}
	return 0;
}

static int
dec_pst_cap(const struct tlv *t, const struct cats_pcep_limits *lim,
    struct cats_pcep_open *o)
{
	if (t->len < 4)
		return -1;
	size_t np = t->v[3];
	size_t sub = 4 + ((np + 3) & ~(size_t)3);
	if (np == 0 || sub > t->len)
		return -1;
	o->pst_cap = true;
	for (size_t i = 0; i < np; i++) {
		uint8_t pst = t->v[4 + i];
		bool seen = false;
		for (size_t k = 0; k < o->npsts; k++)
			seen |= o->psts[k] == pst;
		if (!seen && o->npsts < CATS_ARRAY_LEN(o->psts))
			o->psts[o->npsts++] = pst;
	}
	struct tlv s;
	TLV_LOOP(t->v + sub, t->len - sub, lim, s, {
		if (s.type == CATS_PCEP_TLV_SR_CAP && dec_sr_cap(&s, o) < 0)
			return -1;
		if (s.type == CATS_PCEP_TLV_SRV6_CAP &&
		    dec_srv6_cap(&s, o) < 0)
			return -1;
	});
	return 0;
}

/* An OPEN object: 0, or -1 when malformed. */
static int
dec_open(const struct obj *ob, const struct cats_pcep_limits *lim,
    struct cats_pcep_open *o)
{
	memset(o, 0, sizeof(*o));
	if (ob->type != 1 || ob->n < 4)
		return -1;
	o->version = ob->b[0] >> 5;
	o->keepalive = ob->b[1];
	o->deadtimer = ob->b[2];
	o->sid = ob->b[3];
	struct tlv t;
	TLV_LOOP(ob->b + 4, ob->n - 4, lim, t, {
		switch (t.type) {
		case CATS_PCEP_TLV_STATEFUL:
			if (t.len < 4)
				return -1;
			o->stateful = true;
			break;
		case CATS_PCEP_TLV_SR_CAP:
			if (dec_sr_cap(&t, o) < 0)
				return -1;
			o->sr_legacy = true;
			break;
		case CATS_PCEP_TLV_PST_CAP:
			if (dec_pst_cap(&t, lim, o) < 0)
				return -1;
			break;
		default:
			break;	/* unknown TLVs are ignored (RFC 5440 7.1) */
		}
	});
	return 0;
}

static int
dec_rp(const struct obj *ob, const struct cats_pcep_limits *lim,
    struct cats_pcep_rp *rp)
{
	memset(rp, 0, sizeof(*rp));
	if (ob->n < 8)
		return -1;
	rp->flags = get32(ob->b);
	rp->id = get32(ob->b + 4);
	rp->p = ob->p;
	struct tlv t;
	TLV_LOOP(ob->b + 8, ob->n - 8, lim, t, {
		if (t.type == CATS_PCEP_TLV_PST) {
			if (t.len != 4)
				return -1;
			if (!rp->has_pst) {
				rp->has_pst = true;
				rp->pst = t.v[3];
			}
		}
	});
	return 0;
}

/* END-POINTS: 0, 1 when the type is not supported, -1 malformed. */
static int
dec_endpoints(const struct obj *ob, struct cats_pcep_endpoints *ep)
{
	memset(ep, 0, sizeof(*ep));
	if (ob->type == 1) {
		if (ob->n != 8)
			return -1;
		ep->src.af = ep->dst.af = 4;
		memcpy(ep->src.a, ob->b, 4);
		memcpy(ep->dst.a, ob->b + 4, 4);
		return 0;
	}
	if (ob->type == 2) {
		if (ob->n != 32)
			return -1;
		ep->src.af = ep->dst.af = 6;
		memcpy(ep->src.a, ob->b, 16);
		memcpy(ep->dst.a, ob->b + 16, 16);
		return 0;
	}
	return 1;
}

static int
dec_metric(const struct obj *ob, struct cats_pcep_metric *m)
{
	if (ob->type != 1 || ob->n != 8)
		return -1;
	m->computed = (ob->b[2] & 0x02) != 0;
	m->bound = (ob->b[2] & 0x01) != 0;
	m->type = ob->b[3];
	m->value = getf(ob->b + 4);
	return 0;
}

static int
dec_lspa(const struct obj *ob, const struct cats_pcep_limits *lim,
    struct cats_pcep_lspa *l)
{
	if (ob->type != 1 || ob->n < 16)
		return -1;
	l->exclude_any = get32(ob->b);
	l->include_any = get32(ob->b + 4);
	l->include_all = get32(ob->b + 8);
	l->setup = ob->b[12];
	l->hold = ob->b[13];
	l->local_prot = (ob->b[14] & 0x01) != 0;
	struct tlv t;
	TLV_LOOP(ob->b + 16, ob->n - 16, lim, t, { (void)t; });
	return 0;
}

/* Count the subobjects of b[0..n) (each at least 2 bytes, within n): the
 * count, or -1. */
static long
count_subobjs(const uint8_t *b, size_t n)
{
	long c = 0;
	for (size_t pos = 0; pos < n; c++) {
		if (n - pos < 2 || b[pos + 1] < 2 || b[pos + 1] > n - pos)
			return -1;
		pos += b[pos + 1];
	}
	return c;
}

static int
dec_xro(const struct obj *ob, const struct cats_pcep_limits *lim,
    struct cats_pcep_xro *x, struct cats_arena *a,
    struct cats_pcep_status *st)
{
	memset(x, 0, sizeof(*x));
	if (ob->type != 1 || ob->n < 4) {
		malformed(st, ob->off, "XRO body");
		return -1;
	}
	x->flags = get16(ob->b + 2);
	const uint8_t *b = ob->b + 4;
	size_t n = ob->n - 4;
	long c = count_subobjs(b, n);
	if (c < 0) {
		malformed(st, ob->off, "XRO subobject length");
		return -1;
	}
	if ((size_t)c > lim->max_subobjs) {
		malformed(st, ob->off, "XRO subobjects over the cap");
		return -1;
	}
	if (c == 0)
		return 0;
	x->v = cats_arena_alloc(a, (size_t)c * sizeof(*x->v));
	if (x->v == NULL) {
		set_st(st, CATS_PCEP_ST_NOMEM, 0, 0, ob->off, "out of memory");
		return -1;
	}
	memset(x->v, 0, (size_t)c * sizeof(*x->v));
	for (size_t pos = 0; pos < n; pos += b[pos + 1]) {
		const uint8_t *s = b + pos;
		struct cats_pcep_xsub *e = &x->v[x->n++];
		size_t l = s[1];
		e->desirable = (s[0] & 0x80) != 0;
		e->type = s[0] & 0x7f;
		bool ok = true;
		switch (e->type) {
		case CATS_PCEP_SO_IPV4:
			ok = l == 8 && s[6] <= 32;
			if (ok) {
				e->addr.af = 4;
				memcpy(e->addr.a, s + 2, 4);
				e->plen = s[6];
				e->attr = s[7];
			}
			break;
		case CATS_PCEP_SO_IPV6:
			ok = l == 20 && s[18] <= 128;
			if (ok) {
				e->addr.af = 6;
				memcpy(e->addr.a, s + 2, 16);
				e->plen = s[18];
				e->attr = s[19];
			}
			break;
		case CATS_PCEP_SO_UNNUM:
			ok = l == 12;
			if (ok) {
				e->attr = s[3];
				e->addr.af = 4;
				memcpy(e->addr.a, s + 4, 4);
				e->ifid = get32(s + 8);
			}
			break;
		case CATS_PCEP_SO_AS:
			/* RFC 3209's 4-byte form; also the 8-byte form with
			 * attribute and high octets of the PCEP XRO drafts. */
			ok = l == 4 || l == 8;
			if (l == 4)
				e->asn = get16(s + 2);
			else if (l == 8) {
				e->attr = s[3];
				e->asn = (uint32_t)get16(s + 4) << 16 |
				    get16(s + 6);
			}
			break;
		case CATS_PCEP_SO_SRLG:
			ok = l == 8;
			if (ok) {
				e->srlg = get32(s + 2);
				e->attr = s[7];
			}
			break;
		default:
			break;	/* kept by type; the translation decides */
		}
		if (!ok) {
			malformed(st, ob->off + 8 + pos, "XRO subobject");
			return -1;
		}
	}
	return 0;
}

/* Bytes of an SR-ERO NAI of type nt, or -1 when the type is unknown. */
static int
sr_nai_len(uint8_t nt)
{
	static const int8_t len[] = { 0, 4, 16, 8, 32, 16, 40 };
	return nt < CATS_ARRAY_LEN(len) ? len[nt] : -1;
}

static void
get_ip(struct cats_ip *ip, const uint8_t *p, int af)
{
	ip->af = (uint8_t)af;
	memset(ip->a, 0, sizeof(ip->a));
	memcpy(ip->a, p, af == 4 ? 4 : 16);
}

/* The NAI of type nt at p (len bytes known to be right). */
static void
get_nai(struct cats_pcep_hop *h, const uint8_t *p)
{
	switch (h->nt) {
	case CATS_PCEP_NAI_IPV4_NODE:
		get_ip(&h->local, p, 4);
		break;
	case CATS_PCEP_NAI_IPV6_NODE:
		get_ip(&h->local, p, 6);
		break;
	case CATS_PCEP_NAI_IPV4_ADJ:
		get_ip(&h->local, p, 4);
		get_ip(&h->remote, p + 4, 4);
		break;
	case CATS_PCEP_NAI_IPV6_ADJ:
		get_ip(&h->local, p, 6);
		get_ip(&h->remote, p + 16, 6);
		break;
	case CATS_PCEP_NAI_UNNUM_ADJ:
		get_ip(&h->local, p, 4);
		h->local_if = get32(p + 4);
		get_ip(&h->remote, p + 8, 4);
		h->remote_if = get32(p + 12);
		break;
	case CATS_PCEP_NAI_IPV6_LL_ADJ:
		get_ip(&h->local, p, 6);
		h->local_if = get32(p + 16);
		get_ip(&h->remote, p + 20, 6);
		h->remote_if = get32(p + 36);
		break;
	default:
		break;
	}
}

/* An SR-ERO subobject s[0..l): 0, or -1 with st. */
static int
dec_sr_hop(const uint8_t *s, size_t l, struct cats_pcep_hop *h, size_t off,
    struct cats_pcep_status *st)
{
	if (l < 4) {
		malformed(st, off, "SR-ERO subobject length");
		return -1;
	}
	h->nt = s[2] >> 4;
	h->flags = (uint16_t)((s[2] & 0x0f) << 8 | s[3]);
	bool sabs = h->flags & CATS_PCEP_SR_S, fabs = h->flags & CATS_PCEP_SR_F;
	if (sabs && fabs) {
		set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_INVALID,
		    CATS_PCEP_EV_SR_ABSENT, off, "SR-ERO without SID and NAI");
		return -1;
	}
	int nl = sr_nai_len(h->nt);
	if (nl < 0) {
		set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_INVALID,
		    CATS_PCEP_EV_SR_NAI_TYPE, off, "SR-ERO NAI type");
		return -1;
	}
	if ((h->nt == 0) != fabs) {
		malformed(st, off, "SR-ERO NAI type and F flag");
		return -1;
	}
	size_t want = 4 + (sabs ? 0 : 4) + (fabs ? 0 : (size_t)nl);
	if (l != want) {
		malformed(st, off, "SR-ERO length");
		return -1;
	}
	const uint8_t *p = s + 4;
	if (!sabs) {
		h->has_sid = true;
		h->sid = get32(p);
		p += 4;
		if ((h->flags & CATS_PCEP_SR_M) && (h->sid >> 12) < 16) {
			set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_INVALID,
			    CATS_PCEP_EV_BAD_LABEL, off,
			    "SR-ERO label below 16");
			return -1;
		}
	}
	if (!fabs) {
		h->has_nai = true;
		get_nai(h, p);
	}
	return 0;
}

/* An SRv6-ERO subobject (RFC 9603 section 4.3.1.1). */
static int
dec_srv6_hop(const uint8_t *s, size_t l, struct cats_pcep_hop *h, size_t off,
    struct cats_pcep_status *st)
{
	if (l < 8) {
		malformed(st, off, "SRv6-ERO subobject length");
		return -1;
	}
	h->nt = s[2] >> 4;
	h->flags = (uint16_t)((s[2] & 0x0f) << 8 | s[3]);
	h->behavior = get16(s + 6);
	bool sabs = h->flags & CATS_PCEP_SRV6_S;
	bool fabs = h->flags & CATS_PCEP_SRV6_F;
	bool t = (h->flags & CATS_PCEP_SRV6_T) && !sabs;
	if (sabs && fabs) {
		set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_INVALID,
		    CATS_PCEP_EV_SRV6_ABSENT, off,
		    "SRv6-ERO without SID and NAI");
		return -1;
	}
	int nl;
	switch (h->nt) {
	case CATS_PCEP_NAI_ABSENT:
		nl = 0;
		break;
	case CATS_PCEP_NAI_IPV6_NODE:
		nl = 16;
		break;
	case CATS_PCEP_NAI_IPV6_ADJ:
		nl = 32;
		break;
	case CATS_PCEP_NAI_IPV6_LL_ADJ:
		nl = 40;
		break;
	default:
		set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_INVALID,
		    CATS_PCEP_EV_SRV6_NAI_TYPE, off, "SRv6-ERO NAI type");
		return -1;
	}
	if ((h->nt == 0) != fabs) {
		malformed(st, off, "SRv6-ERO NAI type and F flag");
		return -1;
	}
	size_t want = 8 + (sabs ? 0 : 16) + (size_t)(fabs ? 0 : nl) +
	    (t ? 8 : 0);
	if (l != want) {
		malformed(st, off, "SRv6-ERO length");
		return -1;
	}
	const uint8_t *p = s + 8;
	if (!sabs) {
		h->has_sid = true;
		memcpy(h->sid6, p, 16);
		p += 16;
	}
	if (!fabs) {
		h->has_nai = true;
		get_nai(h, p);
		p += nl;
	}
	if (t) {
		h->has_struct = true;
		h->lb = p[0];
		h->ln = p[1];
		h->fun = p[2];
		h->arg = p[3];
		if ((unsigned)h->lb + h->ln + h->fun + h->arg > 128) {
			set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_INVALID,
			    CATS_PCEP_EV_SRV6_STRUCT, off,
			    "SRv6 SID structure over 128 bits");
			return -1;
		}
	}
	return 0;
}

/* An ERO (RFC 5440, 8664, 9603): its subobjects into *hops. */
static int
dec_ero(const struct obj *ob, const struct cats_pcep_limits *lim,
    struct cats_pcep_hop **hops, size_t *nh, struct cats_arena *a,
    struct cats_pcep_status *st)
{
	*hops = NULL;
	*nh = 0;
	if (ob->type != 1) {
		malformed(st, ob->off, "ERO type");
		return -1;
	}
	long c = count_subobjs(ob->b, ob->n);
	if (c < 0) {
		malformed(st, ob->off, "ERO subobject length");
		return -1;
	}
	if (c == 0)
		return 0;
	/* Kinds: SR-ERO, SRv6-ERO, other; a mixture is an error. */
	unsigned kinds = 0;
	for (size_t pos = 0; pos < ob->n; pos += ob->b[pos + 1]) {
		uint8_t t = ob->b[pos] & 0x7f;
		kinds |= t == CATS_PCEP_SO_SR ? 1u : t == CATS_PCEP_SO_SRV6 ?
		    2u : 4u;
	}
	if (kinds & 2 && kinds != 2) {
		set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_INVALID,
		    CATS_PCEP_EV_SRV6_MIX, ob->off, "ERO mixes SRv6-ERO");
		return -1;
	}
	if (kinds & 1 && kinds != 1) {
		set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_INVALID,
		    CATS_PCEP_EV_SR_MIX, ob->off, "ERO mixes SR-ERO");
		return -1;
	}
	if ((size_t)c > lim->max_subobjs) {
		if (kinds == 4)
			malformed(st, ob->off, "ERO subobjects over the cap");
		else
			set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_INVALID,
			    kinds == 1 ? CATS_PCEP_EV_SR_COUNT :
			    CATS_PCEP_EV_SRV6_COUNT, ob->off,
			    "ERO subobjects over the cap");
		return -1;
	}
	struct cats_pcep_hop *v = cats_arena_alloc(a, (size_t)c * sizeof(*v));
	if (v == NULL) {
		set_st(st, CATS_PCEP_ST_NOMEM, 0, 0, ob->off, "out of memory");
		return -1;
	}
	memset(v, 0, (size_t)c * sizeof(*v));
	size_t k = 0;
	for (size_t pos = 0; pos < ob->n; pos += ob->b[pos + 1], k++) {
		const uint8_t *s = ob->b + pos;
		size_t l = s[1], off = ob->off + 4 + pos;
		struct cats_pcep_hop *h = &v[k];
		h->loose = (s[0] & 0x80) != 0;
		h->type = s[0] & 0x7f;
		int rc = 0;
		switch (h->type) {
		case CATS_PCEP_SO_SR:
			rc = dec_sr_hop(s, l, h, off, st);
			break;
		case CATS_PCEP_SO_SRV6:
			rc = dec_srv6_hop(s, l, h, off, st);
			break;
		case CATS_PCEP_SO_IPV4:
			if (l != 8 || s[6] > 32) {
				malformed(st, off, "ERO IPv4 subobject");
				rc = -1;
				break;
			}
			get_ip(&h->local, s + 2, 4);
			h->has_nai = true;
			h->plen = s[6];
			break;
		case CATS_PCEP_SO_IPV6:
			if (l != 20 || s[18] > 128) {
				malformed(st, off, "ERO IPv6 subobject");
				rc = -1;
				break;
			}
			get_ip(&h->local, s + 2, 6);
			h->has_nai = true;
			h->plen = s[18];
			break;
		default:
			break;
		}
		if (rc < 0)
			return -1;
	}
	*hops = v;
	*nh = k;
	return 0;
}

/* ---- messages ---- */

/* What the first pass counted. */
struct census {
	size_t objs, rps, metrics, errors, ntfs;
};

/* Pass one: every object framed, counted.  0, or -1 with st. */
static int
census(const uint8_t *p, size_t n, const struct cats_pcep_limits *lim,
    struct census *c, struct cats_pcep_status *st)
{
	memset(c, 0, sizeof(*c));
	size_t pos = CATS_PCEP_HDR;
	struct obj o;
	int rc;
	while ((rc = next_obj(p, n, &pos, &o)) == 1) {
		if (++c->objs > lim->max_objs) {
			malformed(st, o.off, "objects over the cap");
			return -1;
		}
		switch (o.cls) {
		case CATS_PCEP_OC_RP:
			c->rps++;
			break;
		case CATS_PCEP_OC_METRIC:
			c->metrics++;
			break;
		case CATS_PCEP_OC_ERROR:
			c->errors++;
			break;
		case CATS_PCEP_OC_NOTIFICATION:
			c->ntfs++;
			break;
		default:
			break;
		}
	}
	if (rc < 0) {
		malformed(st, pos, "object length");
		return -1;
	}
	return 0;
}

static void *
alloc0(struct cats_arena *a, size_t n, size_t size)
{
	if (n == 0)
		return NULL;
	void *v = cats_arena_alloc(a, n * size);
	if (v != NULL)
		memset(v, 0, n * size);
	return v;
}

/* After a failed census: the RP ids the message carried before the fault,
 * so that the PCErr names them. */
static void
salvage_ids(const uint8_t *p, size_t n, const struct cats_pcep_limits *lim,
    struct cats_pcep_msg *m, struct cats_arena *a)
{
	size_t pos = CATS_PCEP_HDR, k = 0;
	struct obj o;
	while (next_obj(p, n, &pos, &o) == 1)
		k += o.cls == CATS_PCEP_OC_RP && o.n >= 8;
	if (k > lim->max_reqs)
		k = lim->max_reqs;
	m->reqs = alloc0(a, k, sizeof(*m->reqs));
	if (m->reqs == NULL)
		return;
	pos = CATS_PCEP_HDR;
	while (m->nreqs < k && next_obj(p, n, &pos, &o) == 1)
		if (o.cls == CATS_PCEP_OC_RP && o.n >= 8)
			m->reqs[m->nreqs++].rp.id = get32(o.b + 4);
}

/* Mark a request's first fault. */
static void
req_fault(struct cats_pcep_req *r, uint8_t et, uint8_t ev, size_t off,
    const char *why)
{
	if (r->st.code != CATS_PCEP_ST_OK)
		return;
	set_st(&r->st, CATS_PCEP_ST_PCERR, et, ev, off, why);
	r->st.has_req = true;
	r->st.req_id = r->rp.id;
}

/* An object of a class or type this speaker does not take, inside a
 * request: with the P flag an error, else ignored. */
static void
req_unknown(struct cats_pcep_req *r, const struct obj *o, bool class_ok)
{
	if (!o->p)
		return;
	if (!class_known(o->cls))
		req_fault(r, CATS_PCEP_ET_UNKNOWN_OBJ, CATS_PCEP_EV_CLASS,
		    o->off, "unrecognized object class");
	else if (class_ok)
		req_fault(r, CATS_PCEP_ET_UNKNOWN_OBJ, CATS_PCEP_EV_TYPE,
		    o->off, "unrecognized object type");
	else
		req_fault(r, CATS_PCEP_ET_UNSUPP_OBJ, CATS_PCEP_EV_CLASS,
		    o->off, "object class not supported");
}

/* Copy an object-level status into a request fault (or the message's). */
static void
req_status(struct cats_pcep_req *r, const struct cats_pcep_status *s)
{
	req_fault(r, s->err_type, s->err_value, s->off, s->why);
}

/*
 * The opening of a PCReq (req) or a PCRep: one RP at least and at most
 * max_reqs (a PCReq over the cap still gives its RP ids, for the PCErr),
 * then, from the arena, the message's c->rps requests or replies (size
 * bytes each, *items) and its metrics (*mv).
 */
static int
open_rps(const uint8_t *p, size_t n, const struct cats_pcep_limits *lim,
    const struct census *c, bool req, struct cats_pcep_msg *m,
    struct cats_arena *a, struct cats_pcep_status *st, size_t size,
    void **items, struct cats_pcep_metric **mv)
{
	if (c->rps == 0) {
		set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_MISSING,
		    CATS_PCEP_EV_RP_MISSING, CATS_PCEP_HDR, "RP missing");
		return -1;
	}
	if (c->rps > lim->max_reqs) {
		if (req)
			salvage_ids(p, n, lim, m, a);
		malformed(st, CATS_PCEP_HDR, req ? "requests over the cap" :
		    "replies over the cap");
		return -1;
	}
	*items = alloc0(a, c->rps, size);
	*mv = alloc0(a, c->metrics, sizeof(**mv));
	if (*items == NULL || (c->metrics && *mv == NULL)) {
		set_st(st, CATS_PCEP_ST_NOMEM, 0, 0, 0, "out of memory");
		return -1;
	}
	return 0;
}

static int
dec_pcreq(const uint8_t *p, size_t n, const struct cats_pcep_limits *lim,
    const struct census *c, struct cats_pcep_msg *m, struct cats_arena *a,
    struct cats_pcep_status *st)
{
	void *items;
	struct cats_pcep_metric *mv;
	if (open_rps(p, n, lim, c, true, m, a, st, sizeof(*m->reqs), &items,
	    &mv) < 0)
		return -1;
	m->reqs = items;
	size_t pos = CATS_PCEP_HDR;
	struct obj o;
	struct cats_pcep_req *r = NULL;
	bool svec_p = false;
	while (next_obj(p, n, &pos, &o) == 1) {
		struct cats_pcep_status os = { 0 };
		if (o.cls == CATS_PCEP_OC_SVEC && r == NULL) {
			svec_p |= o.p;
			continue;
		}
		if (o.cls == CATS_PCEP_OC_RP) {
			r = &m->reqs[m->nreqs++];
			if (o.type != 1 || dec_rp(&o, lim, &r->rp) < 0) {
				if (o.n >= 8)
					r->rp.id = get32(o.b + 4);
				r->a.metrics = mv;
				req_fault(r, CATS_PCEP_ET_INVALID,
				    CATS_PCEP_EV_MALFORMED, o.off, "RP");
				continue;
			}
			r->a.metrics = mv;
			if (!r->rp.p)
				req_fault(r, CATS_PCEP_ET_INVALID,
				    CATS_PCEP_EV_P_FLAG, o.off,
				    "RP without the P flag");
			if (svec_p)
				req_fault(r, CATS_PCEP_ET_UNSUPP_OBJ,
				    CATS_PCEP_EV_CLASS, o.off,
				    "SVEC not supported");
			continue;
		}
		if (r == NULL) {
			set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_MISSING,
			    CATS_PCEP_EV_RP_MISSING, o.off,
			    "object before the RP");
			m->nreqs = 0;
			return -1;
		}
		switch (o.cls) {
		case CATS_PCEP_OC_ENDPOINTS: {
			if (r->has_ep)
				break;
			int rc = dec_endpoints(&o, &r->ep);
			if (rc < 0)
				req_fault(r, CATS_PCEP_ET_INVALID,
				    CATS_PCEP_EV_MALFORMED, o.off,
				    "END-POINTS length");
			else if (rc > 0)
				req_fault(r, CATS_PCEP_ET_UNSUPP_OBJ,
				    CATS_PCEP_EV_TYPE, o.off,
				    "END-POINTS type not supported");
			else
				r->has_ep = true;
			break;
		}
		case CATS_PCEP_OC_BANDWIDTH:
			if (o.type == 1 || o.type == 2) {
				if (o.n != 4) {
					req_fault(r, CATS_PCEP_ET_INVALID,
					    CATS_PCEP_EV_MALFORMED, o.off,
					    "BANDWIDTH length");
					break;
				}
				if (o.type == 1 || !r->a.has_bw) {
					r->a.has_bw = true;
					r->a.bw_type = o.type;
					r->a.bw = getf(o.b);
				}
			} else if (o.type <= 4)
				req_fault(r, CATS_PCEP_ET_UNSUPP_OBJ,
				    CATS_PCEP_EV_TYPE, o.off,
				    "generalized BANDWIDTH not supported");
			else
				req_unknown(r, &o, true);
			break;
		case CATS_PCEP_OC_METRIC:
			if (o.type != 1) {
				req_unknown(r, &o, true);
				break;
			}
			if (r->a.nmetrics == lim->max_metrics) {
				req_fault(r, CATS_PCEP_ET_INVALID,
				    CATS_PCEP_EV_MALFORMED, o.off,
				    "METRIC objects over the cap");
				break;
			}
			if (dec_metric(&o, &r->a.metrics[r->a.nmetrics]) < 0)
				req_fault(r, CATS_PCEP_ET_INVALID,
				    CATS_PCEP_EV_MALFORMED, o.off,
				    "METRIC length");
			else {
				r->a.nmetrics++;
				mv++;
			}
			break;
		case CATS_PCEP_OC_LSPA:
			if (o.type != 1) {
				req_unknown(r, &o, true);
				break;
			}
			if (dec_lspa(&o, lim, &r->a.lspa) < 0)
				req_fault(r, CATS_PCEP_ET_INVALID,
				    CATS_PCEP_EV_MALFORMED, o.off, "LSPA");
			else
				r->a.has_lspa = true;
			break;
		case CATS_PCEP_OC_XRO:
			if (o.type != 1) {
				req_unknown(r, &o, true);
				break;
			}
			if (dec_xro(&o, lim, &r->a.xro, a, &os) < 0) {
				if (os.code == CATS_PCEP_ST_NOMEM) {
					*st = os;
					return -1;
				}
				req_status(r, &os);
			} else
				r->a.has_xro = true;
			break;
		case CATS_PCEP_OC_OF:
			if (o.type != 1 || o.n < 4) {
				req_fault(r, CATS_PCEP_ET_INVALID,
				    CATS_PCEP_EV_MALFORMED, o.off, "OF");
				break;
			}
			r->a.has_of = true;
			r->a.of = get16(o.b);
			break;
		case CATS_PCEP_OC_RRO:
			/* Reoptimization is not supported: a new path is
			 * computed; the RRO is only checked for framing. */
			if (count_subobjs(o.b, o.n) < 0)
				req_fault(r, CATS_PCEP_ET_INVALID,
				    CATS_PCEP_EV_MALFORMED, o.off, "RRO");
			break;
		case CATS_PCEP_OC_OPEN:
		case CATS_PCEP_OC_NOPATH:
		case CATS_PCEP_OC_ERO:
		case CATS_PCEP_OC_ERROR:
		case CATS_PCEP_OC_CLOSE:
		case CATS_PCEP_OC_NOTIFICATION:
		case CATS_PCEP_OC_SVEC:
			/* Objects of other messages: ignored unless P. */
			req_unknown(r, &o, false);
			break;
		default:
			req_unknown(r, &o, false);
			break;
		}
	}
	for (size_t i = 0; i < m->nreqs; i++) {
		struct cats_pcep_req *q = &m->reqs[i];
		if (!q->has_ep)
			req_fault(q, CATS_PCEP_ET_MISSING,
			    CATS_PCEP_EV_EP_MISSING, 0, "END-POINTS missing");
	}
	return 0;
}

/* The attribute objects of a reply. */
static int
rep_attr(const struct obj *o, const struct cats_pcep_limits *lim,
    struct cats_pcep_attrs *at, struct cats_pcep_metric **mv,
    struct cats_arena *a, struct cats_pcep_status *st)
{
	switch (o->cls) {
	case CATS_PCEP_OC_BANDWIDTH:
		if ((o->type != 1 && o->type != 2) || o->n != 4)
			break;
		at->has_bw = true;
		at->bw_type = o->type;
		at->bw = getf(o->b);
		break;
	case CATS_PCEP_OC_METRIC:
		if (at->nmetrics == lim->max_metrics)
			break;
		if (dec_metric(o, &at->metrics[at->nmetrics]) < 0) {
			malformed(st, o->off, "METRIC length");
			return -1;
		}
		at->nmetrics++;
		(*mv)++;
		break;
	case CATS_PCEP_OC_LSPA:
		if (dec_lspa(o, lim, &at->lspa) < 0) {
			malformed(st, o->off, "LSPA");
			return -1;
		}
		at->has_lspa = true;
		break;
	case CATS_PCEP_OC_XRO:
		if (dec_xro(o, lim, &at->xro, a, st) < 0)
			return -1;
		at->has_xro = true;
		break;
	case CATS_PCEP_OC_OF:
		if (o->n >= 4) {
			at->has_of = true;
			at->of = get16(o->b);
		}
		break;
	default:
		break;
	}
	return 0;
}

static int
dec_pcrep(const uint8_t *p, size_t n, const struct cats_pcep_limits *lim,
    const struct census *c, struct cats_pcep_msg *m, struct cats_arena *a,
    struct cats_pcep_status *st)
{
	void *items;
	struct cats_pcep_metric *mv;
	if (open_rps(p, n, lim, c, false, m, a, st, sizeof(*m->reps), &items,
	    &mv) < 0)
		return -1;
	m->reps = items;
	size_t pos = CATS_PCEP_HDR;
	struct obj o;
	struct cats_pcep_rep *r = NULL;
	bool later_path = false;	/* past the first path: ignored */
	while (next_obj(p, n, &pos, &o) == 1) {
		if (o.cls == CATS_PCEP_OC_RP) {
			r = &m->reps[m->nreps++];
			if (o.type != 1 || dec_rp(&o, lim, &r->rp) < 0) {
				malformed(st, o.off, "RP");
				return -1;
			}
			r->a.metrics = mv;
			later_path = false;
			continue;
		}
		if (r == NULL) {
			set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_MISSING,
			    CATS_PCEP_EV_RP_MISSING, o.off,
			    "object before the RP");
			return -1;
		}
		if (o.cls == CATS_PCEP_OC_NOPATH) {
			if (o.type != 1 || o.n < 4) {
				malformed(st, o.off, "NO-PATH");
				return -1;
			}
			r->nopath = true;
			r->ni = o.b[0];
			r->nopath_c = (get16(o.b + 1) & 0x8000) != 0;
			struct tlv t;
			size_t tpos = 0, tc = 0;
			int rc;
			while ((rc = next_tlv(o.b + 4, o.n - 4, &tpos, &t)) ==
			    1 && ++tc <= lim->max_tlvs)
				if (t.type == CATS_PCEP_TLV_NOPATH_VECTOR &&
				    t.len == 4)
					r->vector = get32(t.v);
			if (rc < 0 || tc > lim->max_tlvs) {
				malformed(st, o.off, "NO-PATH TLVs");
				return -1;
			}
			continue;
		}
		if (o.cls == CATS_PCEP_OC_ERO) {
			if (r->has_ero) {
				later_path = true;
				continue;
			}
			if (dec_ero(&o, lim, &r->ero, &r->nero, a, st) < 0) {
				if (st->code != CATS_PCEP_ST_NOMEM) {
					st->has_req = true;
					st->req_id = r->rp.id;
				}
				return -1;
			}
			r->has_ero = true;
			continue;
		}
		if (later_path)
			continue;
		if (rep_attr(&o, lim, &r->a, &mv, a, st) < 0) {
			if (st->code != CATS_PCEP_ST_NOMEM) {
				st->has_req = true;
				st->req_id = r->rp.id;
			}
			return -1;
		}
	}
	return 0;
}

/* PCErr and PCNtf share one body: RP objects naming requests, then
 * type/value objects of one class (PCEP-ERROR or NOTIFICATION); a PCErr
 * may also carry the Open it proposes (open != NULL). */
struct tv_list {
	uint8_t cls;
	const char *none, *cap, *obj;	/* the malformed reasons */
};

static const struct tv_list tv_pcerr = {
	CATS_PCEP_OC_ERROR, "PCErr without PCEP-ERROR", "PCErr over the cap",
	"PCEP-ERROR",
};
static const struct tv_list tv_pcntf = {
	CATS_PCEP_OC_NOTIFICATION, "PCNtf without NOTIFICATION",
	"PCNtf over the cap", "NOTIFICATION",
};

static int
dec_tv_list(const uint8_t *p, size_t n, const struct cats_pcep_limits *lim,
    const struct tv_list *k, size_t count, size_t rps,
    struct cats_pcep_error **v, size_t *nv, uint32_t **ids, size_t *nids,
    struct cats_pcep_err *open, struct cats_arena *a,
    struct cats_pcep_status *st)
{
	if (count == 0) {
		malformed(st, CATS_PCEP_HDR, k->none);
		return -1;
	}
	if (count > lim->max_errors || rps > lim->max_reqs) {
		malformed(st, CATS_PCEP_HDR, k->cap);
		return -1;
	}
	*ids = alloc0(a, rps, sizeof(**ids));
	*v = alloc0(a, count, sizeof(**v));
	if (*v == NULL || (rps && *ids == NULL)) {
		set_st(st, CATS_PCEP_ST_NOMEM, 0, 0, 0, "out of memory");
		return -1;
	}
	size_t pos = CATS_PCEP_HDR;
	struct obj o;
	while (next_obj(p, n, &pos, &o) == 1) {
		if (o.cls == CATS_PCEP_OC_RP && o.n >= 8)
			(*ids)[(*nids)++] = get32(o.b + 4);
		else if (o.cls == k->cls) {
			if (o.type != 1 || o.n < 4) {
				malformed(st, o.off, k->obj);
				return -1;
			}
			(*v)[*nv].type = o.b[2];
			(*v)[*nv].value = o.b[3];
			(*nv)++;
		} else if (o.cls == CATS_PCEP_OC_OPEN && open != NULL &&
		    !open->has_open) {
			if (dec_open(&o, lim, &open->open) < 0) {
				malformed(st, o.off, "OPEN");
				return -1;
			}
			open->has_open = true;
		}
	}
	return 0;
}

int
cats_pcep_decode(const uint8_t *p, size_t n, const struct cats_pcep_limits *lim,
    struct cats_pcep_msg *m, struct cats_arena *a, struct cats_pcep_status *st)
{
	if (lim == NULL)
		lim = &cats_pcep_limits_default;
	memset(m, 0, sizeof(*m));
	set_st(st, CATS_PCEP_ST_OK, 0, 0, 0, NULL);
	struct cats_pcep_status fs;
	long fl = cats_pcep_frame(p, n, lim, &fs);
	if (fl <= 0 || (size_t)fl != n) {
		if (fl >= 0)
			set_st(&fs, CATS_PCEP_ST_CLOSE, 0, 0, 0,
			    "message length is not the bytes given");
		fs.close_reason = CATS_PCEP_CLOSE_MALFORMED;
		*st = fs;
		return -1;
	}
	m->type = p[1];
	m->len = (uint16_t)n;
	struct census c;
	if (census(p, n, lim, &c, st) < 0) {
		if (m->type == CATS_PCEP_PCREQ)
			salvage_ids(p, n, lim, m, a);
		if (m->type == CATS_PCEP_OPEN)
			set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_SESSION,
			    CATS_PCEP_EV_BAD_OPEN, st->off, st->why);
		return -1;
	}
	size_t pos = CATS_PCEP_HDR;
	struct obj o;
	switch (m->type) {
	case CATS_PCEP_OPEN:
		while (next_obj(p, n, &pos, &o) == 1)
			if (o.cls == CATS_PCEP_OC_OPEN) {
				if (dec_open(&o, lim, &m->open) < 0) {
					set_st(st, CATS_PCEP_ST_PCERR,
					    CATS_PCEP_ET_SESSION,
					    CATS_PCEP_EV_BAD_OPEN, o.off,
					    "OPEN object malformed");
					return -1;
				}
				if (m->open.version != CATS_PCEP_VERSION) {
					set_st(st, CATS_PCEP_ST_PCERR,
					    CATS_PCEP_ET_SESSION,
					    CATS_PCEP_EV_VERSION, o.off,
					    "OPEN version not 1");
					return -1;
				}
				return 0;
			}
		set_st(st, CATS_PCEP_ST_PCERR, CATS_PCEP_ET_SESSION,
		    CATS_PCEP_EV_BAD_OPEN, CATS_PCEP_HDR,
		    "OPEN object missing");
		return -1;
	case CATS_PCEP_KEEPALIVE:
		return 0;
	case CATS_PCEP_CLOSE:
		while (next_obj(p, n, &pos, &o) == 1)
			if (o.cls == CATS_PCEP_OC_CLOSE && o.n >= 4) {
				m->close_reason = o.b[3];
				break;
			}
		return 0;
	case CATS_PCEP_PCREQ:
		return dec_pcreq(p, n, lim, &c, m, a, st);
	case CATS_PCEP_PCREP:
		return dec_pcrep(p, n, lim, &c, m, a, st);
	case CATS_PCEP_PCERR:
		return dec_tv_list(p, n, lim, &tv_pcerr, c.errors, c.rps,
		    &m->err.v, &m->err.n, &m->err.ids, &m->err.nids, &m->err,
		    a, st);
	case CATS_PCEP_PCNTF:
		return dec_tv_list(p, n, lim, &tv_pcntf, c.ntfs, c.rps,
		    &m->ntfs, &m->nntfs, &m->ntf_ids, &m->nntf_ids, NULL,
		    a, st);
	default:
		set_st(st, CATS_PCEP_ST_IGNORED, 0, 0, 1,
		    "unknown message type");
		return -1;
	}
}

/* ---- encoding ---- */

struct enc {
	struct cats_buf *b;
	size_t start;
	bool fail;
};

static void
put(struct enc *e, const void *p, size_t n)
{
	if (!e->fail && cats_buf_add(e->b, p, n) < 0)
		e->fail = true;
}

static void
put8(struct enc *e, uint8_t v)
{
	put(e, &v, 1);
}

static void
put16(struct enc *e, uint16_t v)
{
	uint8_t b[2] = { (uint8_t)(v >> 8), (uint8_t)v };
	put(e, b, 2);
}

static void
put32(struct enc *e, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16),
	    (uint8_t)(v >> 8), (uint8_t)v };
	put(e, b, 4);
}

static void
putf(struct enc *e, float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	put32(e, u);
}

static void
put_ip(struct enc *e, const struct cats_ip *ip)
{
	put(e, ip->a, ip->af == 4 ? 4 : 16);
}

static void
msg_begin(struct enc *e, struct cats_buf *b, uint8_t type)
{
	e->b = b;
	e->start = b->len;
	e->fail = false;
	put8(e, CATS_PCEP_VERSION << 5);
	put8(e, type);
	put16(e, 0);
}

static int
msg_end(struct enc *e)
{
	size_t len = e->b->len - e->start;
	if (e->fail || len > CATS_PCEP_MSG_MAX) {
		e->b->len = e->start;
		return -1;
	}
	set16(e->b->p + e->start + 2, (uint16_t)len);
	return 0;
}

/* An object header; obj_end() writes its length. */
static size_t
obj_begin(struct enc *e, uint8_t cls, uint8_t type, bool p)
{
	size_t off = e->b->len;
	put8(e, cls);
	put8(e, (uint8_t)(type << 4 | (p ? 0x02 : 0)));
	put16(e, 0);
	return off;
}

static void
obj_end(struct enc *e, size_t off)
{
	if (e->fail)
		return;
	size_t len = e->b->len - off;
	if (len > CATS_PCEP_MSG_MAX - CATS_PCEP_HDR || len % 4 != 0) {
		e->fail = true;
		return;
	}
	set16(e->b->p + off + 2, (uint16_t)len);
}

static void
put_tlv_hdr(struct enc *e, uint16_t type, uint16_t len)
{
	put16(e, type);
	put16(e, len);
}

static void
pad4(struct enc *e, size_t from)
{
	static const uint8_t z[4];
	size_t n = (e->b->len - from) % 4;
	if (n)
		put(e, z, 4 - n);
}

static void
enc_open(struct enc *e, const struct cats_pcep_open *o)
{
	size_t ob = obj_begin(e, CATS_PCEP_OC_OPEN, 1, false);
	put8(e, CATS_PCEP_VERSION << 5);
	put8(e, o->keepalive);
	put8(e, o->deadtimer);
	put8(e, o->sid);
	if (o->sr && o->sr_legacy) {
		put_tlv_hdr(e, CATS_PCEP_TLV_SR_CAP, 4);
		put16(e, 0);
		put8(e, o->sr_flags);
		put8(e, o->msd);
	}
	if (o->pst_cap && o->npsts > 0) {
		size_t psts = 4 + o->npsts;
		size_t sub = (o->sr ? 8 : 0) +
		    (o->srv6 ? 4 + ((4 + 2 * (size_t)o->nsrv6_msd + 3) & ~3u) :
		    0);
		size_t len = ((psts + 3) & ~(size_t)3) + sub;
		size_t t0 = e->b->len + 4;
		put_tlv_hdr(e, CATS_PCEP_TLV_PST_CAP, (uint16_t)len);
		put8(e, 0);
		put16(e, 0);
		put8(e, o->npsts);
		put(e, o->psts, o->npsts);
		pad4(e, t0);
		if (o->sr) {
			put_tlv_hdr(e, CATS_PCEP_TLV_SR_CAP, 4);
			put16(e, 0);
			put8(e, o->sr_flags);
			put8(e, o->msd);
		}
		if (o->srv6) {
			size_t s0 = e->b->len + 4;
			put_tlv_hdr(e, CATS_PCEP_TLV_SRV6_CAP,
			    (uint16_t)(4 + 2 * o->nsrv6_msd));
			put16(e, 0);
			put16(e, o->srv6_flags);
			for (size_t i = 0; i < o->nsrv6_msd; i++) {
				put8(e, o->srv6_msd[i].type);
				put8(e, o->srv6_msd[i].value);
			}
			pad4(e, s0);
		}
	}
	obj_end(e, ob);
}

int
cats_pcep_put_open(struct cats_buf *out, const struct cats_pcep_open *o)
{
	struct enc e;
	if (o->npsts > CATS_ARRAY_LEN(o->psts) ||
	    o->nsrv6_msd > CATS_ARRAY_LEN(o->srv6_msd))
		return -1;
	msg_begin(&e, out, CATS_PCEP_OPEN);
	enc_open(&e, o);
	return msg_end(&e);
}

int
cats_pcep_put_keepalive(struct cats_buf *out)
{
	struct enc e;
	msg_begin(&e, out, CATS_PCEP_KEEPALIVE);
	return msg_end(&e);
}

int
cats_pcep_put_close(struct cats_buf *out, uint8_t reason)
{
	struct enc e;
	msg_begin(&e, out, CATS_PCEP_CLOSE);
	size_t ob = obj_begin(&e, CATS_PCEP_OC_CLOSE, 1, false);
	put16(&e, 0);
	put8(&e, 0);
	put8(&e, reason);
	obj_end(&e, ob);
	return msg_end(&e);
}

static void
enc_rp(struct enc *e, const struct cats_pcep_rp *rp, bool p)
{
	size_t ob = obj_begin(e, CATS_PCEP_OC_RP, 1, p);
	put32(e, rp->flags);
	put32(e, rp->id);
	if (rp->has_pst) {
		put_tlv_hdr(e, CATS_PCEP_TLV_PST, 4);
		put16(e, 0);
		put8(e, 0);
		put8(e, rp->pst);
	}
	obj_end(e, ob);
}

int
cats_pcep_put_pcerr(struct cats_buf *out, const uint32_t *ids, size_t nids,
    const struct cats_pcep_error *errs, size_t nerrs,
    const struct cats_pcep_open *open)
{
	struct enc e;
	if (nerrs == 0)
		return -1;
	msg_begin(&e, out, CATS_PCEP_PCERR);
	for (size_t i = 0; i < nids; i++) {
		struct cats_pcep_rp rp = { .id = ids[i] };
		enc_rp(&e, &rp, false);
	}
	for (size_t i = 0; i < nerrs; i++) {
		size_t ob = obj_begin(&e, CATS_PCEP_OC_ERROR, 1, false);
		put16(&e, 0);
		put8(&e, errs[i].type);
		put8(&e, errs[i].value);
		obj_end(&e, ob);
	}
	if (open != NULL)
		enc_open(&e, open);
	return msg_end(&e);
}

static void
enc_metric(struct enc *e, const struct cats_pcep_metric *m, bool p)
{
	size_t ob = obj_begin(e, CATS_PCEP_OC_METRIC, 1, p);
	put16(e, 0);
	put8(e, (uint8_t)((m->computed ? 0x02 : 0) | (m->bound ? 0x01 : 0)));
	put8(e, m->type);
	putf(e, m->value);
	obj_end(e, ob);
}

static void
enc_xro(struct enc *e, const struct cats_pcep_xro *x, bool p)
{
	size_t ob = obj_begin(e, CATS_PCEP_OC_XRO, 1, p);
	put16(e, 0);
	put16(e, x->flags);
	for (size_t i = 0; i < x->n; i++) {
		const struct cats_pcep_xsub *s = &x->v[i];
		uint8_t t = (uint8_t)(s->type | (s->desirable ? 0x80 : 0));
		switch (s->type) {
		case CATS_PCEP_SO_IPV4:
		case CATS_PCEP_SO_IPV6:
			if (s->addr.af !=
			    (s->type == CATS_PCEP_SO_IPV4 ? 4 : 6))
				e->fail = true;
			put8(e, t);
			put8(e, s->addr.af == 4 ? 8 : 20);
			put_ip(e, &s->addr);
			put8(e, s->plen);
			put8(e, s->attr);
			break;
		case CATS_PCEP_SO_UNNUM:
			if (s->addr.af != 4)
				e->fail = true;
			put8(e, t);
			put8(e, 12);
			put8(e, 0);
			put8(e, s->attr);
			put(e, s->addr.a, 4);
			put32(e, s->ifid);
			break;
		case CATS_PCEP_SO_AS:
			put8(e, t);
			if (s->asn <= UINT16_MAX) {
				put8(e, 4);
				put16(e, (uint16_t)s->asn);
			} else {
				put8(e, 8);
				put8(e, 0);
				put8(e, s->attr);
				put32(e, s->asn);
			}
			break;
		case CATS_PCEP_SO_SRLG:
			put8(e, t);
			put8(e, 8);
			put32(e, s->srlg);
			put8(e, 0);
			put8(e, s->attr);
			break;
		default:
			e->fail = true;
			break;
		}
	}
	obj_end(e, ob);
}

static void
enc_attrs(struct enc *e, const struct cats_pcep_attrs *a, bool p)
{
	if (a->has_lspa) {
		size_t ob = obj_begin(e, CATS_PCEP_OC_LSPA, 1, p);
		put32(e, a->lspa.exclude_any);
		put32(e, a->lspa.include_any);
		put32(e, a->lspa.include_all);
		put8(e, a->lspa.setup);
		put8(e, a->lspa.hold);
		put8(e, a->lspa.local_prot ? 0x01 : 0);
		put8(e, 0);
		obj_end(e, ob);
	}
	if (a->has_bw) {
		size_t ob = obj_begin(e, CATS_PCEP_OC_BANDWIDTH,
		    a->bw_type == 2 ? 2 : 1, p);
		putf(e, a->bw);
		obj_end(e, ob);
	}
	for (size_t i = 0; i < a->nmetrics; i++)
		enc_metric(e, &a->metrics[i], p);
	if (a->has_xro)
		enc_xro(e, &a->xro, p);
	if (a->has_of) {
		size_t ob = obj_begin(e, CATS_PCEP_OC_OF, 1, false);
		put16(e, a->of);
		put16(e, 0);
		obj_end(e, ob);
	}
}

int
cats_pcep_put_pcreq(struct cats_buf *out, const struct cats_pcep_req *r,
    size_t n)
{
	struct enc e;
	if (n == 0)
		return -1;
	msg_begin(&e, out, CATS_PCEP_PCREQ);
	for (size_t i = 0; i < n; i++) {
		enc_rp(&e, &r[i].rp, true);
		const struct cats_pcep_endpoints *ep = &r[i].ep;
		if (!r[i].has_ep || ep->src.af != ep->dst.af ||
		    (ep->src.af != 4 && ep->src.af != 6)) {
			e.fail = true;
			break;
		}
		size_t ob = obj_begin(&e, CATS_PCEP_OC_ENDPOINTS,
		    ep->src.af == 4 ? 1 : 2, true);
		put_ip(&e, &ep->src);
		put_ip(&e, &ep->dst);
		obj_end(&e, ob);
		enc_attrs(&e, &r[i].a, true);
	}
	return msg_end(&e);
}

static void
enc_nai(struct enc *e, const struct cats_pcep_hop *h)
{
	switch (h->nt) {
	case CATS_PCEP_NAI_IPV4_NODE:
	case CATS_PCEP_NAI_IPV6_NODE:
		put_ip(e, &h->local);
		break;
	case CATS_PCEP_NAI_IPV4_ADJ:
	case CATS_PCEP_NAI_IPV6_ADJ:
		put_ip(e, &h->local);
		put_ip(e, &h->remote);
		break;
	case CATS_PCEP_NAI_UNNUM_ADJ:
	case CATS_PCEP_NAI_IPV6_LL_ADJ:
		put_ip(e, &h->local);
		put32(e, h->local_if);
		put_ip(e, &h->remote);
		put32(e, h->remote_if);
		break;
	default:
		break;
	}
}

/* Is the NAI's address family the one its type needs? */
static bool
nai_ok(const struct cats_pcep_hop *h)
{
	switch (h->nt) {
	case CATS_PCEP_NAI_IPV4_NODE:
		return h->local.af == 4;
	case CATS_PCEP_NAI_IPV6_NODE:
		return h->local.af == 6;
	case CATS_PCEP_NAI_IPV4_ADJ:
	case CATS_PCEP_NAI_UNNUM_ADJ:
		return h->local.af == 4 && h->remote.af == 4;
	case CATS_PCEP_NAI_IPV6_ADJ:
	case CATS_PCEP_NAI_IPV6_LL_ADJ:
		return h->local.af == 6 && h->remote.af == 6;
	default:
		return false;
	}
}

static void
enc_hop(struct enc *e, const struct cats_pcep_hop *h)
{
	uint8_t t = (uint8_t)(h->type | (h->loose ? 0x80 : 0));
	switch (h->type) {
	case CATS_PCEP_SO_SR: {
		int nl = h->has_nai ? sr_nai_len(h->nt) : 0;
		if ((!h->has_sid && !h->has_nai) || nl < 0 ||
		    (h->has_nai && !nai_ok(h))) {
			e->fail = true;
			return;
		}
		uint16_t fl = h->flags & (CATS_PCEP_SR_M | CATS_PCEP_SR_C);
		fl |= (h->has_sid ? 0 : CATS_PCEP_SR_S) |
		    (h->has_nai ? 0 : CATS_PCEP_SR_F);
		put8(e, t);
		put8(e, (uint8_t)(4 + (h->has_sid ? 4 : 0) + nl));
		put8(e, (uint8_t)((h->has_nai ? h->nt : 0) << 4 | fl >> 8));
		put8(e, (uint8_t)fl);
		if (h->has_sid)
			put32(e, h->sid);
		if (h->has_nai)
			enc_nai(e, h);
		return;
	}
	case CATS_PCEP_SO_SRV6: {
		int nl = 0;
		if (h->has_nai) {
			nl = h->nt == CATS_PCEP_NAI_IPV6_NODE ? 16 :
			    h->nt == CATS_PCEP_NAI_IPV6_ADJ ? 32 :
			    h->nt == CATS_PCEP_NAI_IPV6_LL_ADJ ? 40 : -1;
			if (nl < 0 || !nai_ok(h)) {
				e->fail = true;
				return;
			}
		}
		if (!h->has_sid && !h->has_nai) {
			e->fail = true;
			return;
		}
		bool st = h->has_struct && h->has_sid;
		uint16_t fl = h->flags & CATS_PCEP_SRV6_V;
		fl |= (h->has_sid ? 0 : CATS_PCEP_SRV6_S) |
		    (h->has_nai ? 0 : CATS_PCEP_SRV6_F) |
		    (st ? CATS_PCEP_SRV6_T : 0);
		put8(e, t);
		put8(e, (uint8_t)(8 + (h->has_sid ? 16 : 0) + nl +
		    (st ? 8 : 0)));
		put8(e, (uint8_t)((h->has_nai ? h->nt : 0) << 4 | fl >> 8));
		put8(e, (uint8_t)fl);
		put16(e, 0);
		put16(e, h->behavior);
		if (h->has_sid)
			put(e, h->sid6, 16);
		if (h->has_nai)
			enc_nai(e, h);
		if (st) {
			put8(e, h->lb);
			put8(e, h->ln);
			put8(e, h->fun);
			put8(e, h->arg);
			put32(e, 0);
		}
		return;
	}
	case CATS_PCEP_SO_IPV4:
	case CATS_PCEP_SO_IPV6:
		if (h->local.af != (h->type == CATS_PCEP_SO_IPV4 ? 4 : 6)) {
			e->fail = true;
			return;
		}
		put8(e, t);
		put8(e, h->local.af == 4 ? 8 : 20);
		put_ip(e, &h->local);
		put8(e, h->plen);
		put8(e, 0);
		return;
	default:
		e->fail = true;
		return;
	}
}

int
cats_pcep_put_pcrep(struct cats_buf *out, const struct cats_pcep_rep *r,
    size_t n)
{
	struct enc e;
	if (n == 0)
		return -1;
	msg_begin(&e, out, CATS_PCEP_PCREP);
	for (size_t i = 0; i < n; i++) {
		enc_rp(&e, &r[i].rp, true);
		if (r[i].nopath) {
			size_t ob = obj_begin(&e, CATS_PCEP_OC_NOPATH, 1,
			    false);
			put8(&e, r[i].ni);
			put16(&e, r[i].nopath_c ? 0x8000 : 0);
			put8(&e, 0);
			if (r[i].vector) {
				put_tlv_hdr(&e, CATS_PCEP_TLV_NOPATH_VECTOR, 4);
				put32(&e, r[i].vector);
			}
			obj_end(&e, ob);
			if (r[i].nopath_c)
				enc_attrs(&e, &r[i].a, false);
			continue;
		}
		if (r[i].has_ero) {
			size_t ob = obj_begin(&e, CATS_PCEP_OC_ERO, 1, false);
			for (size_t k = 0; k < r[i].nero; k++)
				enc_hop(&e, &r[i].ero[k]);
			obj_end(&e, ob);
		}
		enc_attrs(&e, &r[i].a, false);
	}
	return msg_end(&e);
}
