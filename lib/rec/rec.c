/*
 * rec.c - record schema tables, table-driven decoding, validation and
 * deterministic encoding.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec/rec.h"

const char *const cats_health_names[] = { "HEALTHY", "DEGRADED", "UNHEALTHY",
	"UNKNOWN", NULL };
const char *const cats_sci_state_names[] = { "ACTIVE", "HEALTHY", "STALE",
	"FAILED", NULL };
const char *const cats_metric_op_names[] = { "full", "delta", "withdraw",
	"heartbeat", "refresh", "release", NULL };
const char *const cats_sync_mode_names[] = { "none", "full", "incremental",
	NULL };
const char *const cats_ack_result_names[] = { "ok", "stale", "replay",
	"unauthorized", "bad", "resync", NULL };
const char *const cats_net_scope_names[] = { "link", "path", "node", NULL };
const char *const cats_addr_kind_names[] = { "virtual", "anycast",
	"dedicated", NULL };
const char *const cats_affinity_names[] = { "5tuple", "client",
	"tenant-client", NULL };
const char *const cats_on_failure_names[] = { "fail", "reconnect", NULL };
const char *const cats_steer_op_names[] = { "redirect", "end", NULL };
const char *const cats_dataplane_names[] = { "ip", "ipip", "srv6", "srmpls",
	NULL };
const char *const cats_path_metric_names[] = { "igp", "te", "delay", "hops",
	NULL };
const char *const cats_path_status_names[] = { "ok", "no-path", "error",
	NULL };
const char *const cats_seg_kind_names[] = { "node", "adj", NULL };
const char *const cats_bind_op_names[] = { "install", "refresh", "remove",
	NULL };
const char *const cats_flow_state_names[] = { "ABSENT", "PENDING",
	"DESTINATION_SELECTED", "BINDING_READY", "ACTIVE", "DRAINING", "FAILED",
	"RECONNECT_REQUIRED", NULL };
const char *const cats_status_event_names[] = { "installed", "refreshed",
	"failed", "expired", "removed", "hello", "path-down", "path-up",
	"keepalive", NULL };
const char *const cats_req_mode_names[] = { "none", "a", "b", NULL };

/* ---- cross-field rules ---- */

static int
check_flow(const void *p, struct cats_err *e)
{
	const struct cats_flow *f = p;
	if (f->src.af != f->dst.af)
		return cats_err_set(e, "dst",
		    "source and destination are of different families");
	return 0;
}

static int
check_segment(const void *p, struct cats_err *e)
{
	const struct cats_segment *s = p;
	if (!CATS_HAS(s, SEG, label) && s->sid.af == 0)
		return cats_err_set(e, "label", "a segment needs a label or a sid");
	if (s->sid.af == 4)
		return cats_err_set(e, "sid", "an SRv6 SID is an IPv6 address");
	return 0;
}

static int
check_bind_fwd(const void *p, struct cats_err *e)
{
	const struct cats_bind_fwd *f = p;
	if (f->encap == CATS_DP_SRV6 && f->sids.n == 0)
		return cats_err_set(e, "sids", "srv6 encapsulation needs sids");
	if (f->encap == CATS_DP_SRMPLS && f->labels.n == 0)
		return cats_err_set(e, "labels", "srmpls needs labels");
	if (f->encap == CATS_DP_IPIP && f->tunnel_dst.af == 0)
		return cats_err_set(e, "tunnel_dst", "ipip needs tunnel_dst");
	for (size_t i = 0; i < f->sids.n; i++)
		if (f->sids.v[i].af != 6)
			return cats_err_set(e, "sids",
			    "an SRv6 SID is an IPv6 address");
	return 0;
}

static int
check_metric(const void *p, struct cats_err *e)
{
	const struct cats_metric *m = p;
	if (CATS_HAS(m, MET, part) != CATS_HAS(m, MET, parts))
		return cats_err_set(e, "parts", "part and parts go together");
	if (CATS_HAS(m, MET, part) && m->part > m->parts)
		return cats_err_set(e, "part", "part %" PRIu64 " of %" PRIu64,
		    m->part, m->parts);
	if ((m->op == CATS_OP_WITHDRAW || m->op == CATS_OP_RELEASE) &&
	    m->entries.n == 0)
		return cats_err_set(e, "entries", "%s names no entry",
		    cats_metric_op_names[m->op]);
	return 0;
}

static int
check_net(const void *p, struct cats_err *e)
{
	const struct cats_net *n = p;
	if (n->scope == CATS_NET_NODE) {
		if (n->node == NULL)
			return cats_err_set(e, "node", "required for scope node");
	} else {
		if (n->src == NULL)
			return cats_err_set(e, "src", "required for scope %s",
			    cats_net_scope_names[n->scope]);
		if (n->dst == NULL)
			return cats_err_set(e, "dst", "required for scope %s",
			    cats_net_scope_names[n->scope]);
	}
	return 0;
}

static int
check_path_rep(const void *p, struct cats_err *e)
{
	const struct cats_path_rep *r = p;
	if (r->status == CATS_PATH_OK && r->endpoint == NULL)
		return cats_err_set(e, "endpoint", "required when status is ok");
	if (r->status != CATS_PATH_OK && r->reason == NULL)
		return cats_err_set(e, "reason", "required when status is %s",
		    cats_path_status_names[r->status]);
	return 0;
}

static int
check_binding(const void *p, struct cats_err *e)
{
	const struct cats_binding *b = p;
	if (b->op != CATS_BIND_REMOVE) {
		if (!CATS_HAS(b, BND, fwd))
			return cats_err_set(e, "fwd", "required for %s",
			    cats_bind_op_names[b->op]);
		if (!CATS_HAS(b, BND, rev))
			return cats_err_set(e, "rev", "required for %s",
			    cats_bind_op_names[b->op]);
	}
	return 0;
}

static int
check_steer(const void *p, struct cats_err *e)
{
	const struct cats_steer *s = p;
	if (s->op == CATS_STEER_REDIRECT) {
		if (s->to == NULL)
			return cats_err_set(e, "to", "required for redirect");
		if (s->locator.af == 0)
			return cats_err_set(e, "locator",
			    "required for redirect");
	}
	return 0;
}

/* ---- schema tables, generated from the field lists of rec.h ---- */

#define CATS_X_FIELD(P, fname, K, ctype, req, lo, hi, subs, en, un, dc) \
	{ .name = #fname, .namelen = sizeof(#fname) - 1, .kind = CATS_F_##K, .required = req, \
	  .off = offsetof(CATS_STRUCT_##P, fname), .min = lo, .max = hi, \
	  .sub = subs, .enums = en, .unit = un, .doc = dc },

#define CATS_STRUCT_CON struct cats_constraints
#define CATS_STRUCT_FLOW struct cats_flow
#define CATS_STRUCT_ENT struct cats_entry
#define CATS_STRUCT_SITE struct cats_site
#define CATS_STRUCT_ADR struct cats_address
#define CATS_STRUCT_DEC struct cats_decision
#define CATS_STRUCT_SEG struct cats_segment
#define CATS_STRUCT_BFW struct cats_bind_fwd
#define CATS_STRUCT_BRV struct cats_bind_rev
#define CATS_STRUCT_SCI struct cats_sci_report
#define CATS_STRUCT_MET struct cats_metric
#define CATS_STRUCT_SYNC struct cats_sync
#define CATS_STRUCT_ACK struct cats_ack
#define CATS_STRUCT_NET struct cats_net
#define CATS_STRUCT_SVC struct cats_service
#define CATS_STRUCT_REQ struct cats_request
#define CATS_STRUCT_PRQ struct cats_path_req
#define CATS_STRUCT_PRP struct cats_path_rep
#define CATS_STRUCT_BND struct cats_binding
#define CATS_STRUCT_STA struct cats_status
#define CATS_STRUCT_ERR struct cats_error
#define CATS_STRUCT_STS struct cats_stats
#define CATS_STRUCT_STR struct cats_steer

#define CATS_X_REQUIRED(P, fname, K, ctype, req, ...) \
	| ((uint64_t)(req) << CATS_##P##_##fname)

/* Kinds whose presence is their has bit (the others: a pointer or count). */
#define CATS_BY_HAS_U64 1
#define CATS_BY_HAS_BOOL 1
#define CATS_BY_HAS_ENUM 1
#define CATS_BY_HAS_MAP 1
#define CATS_BY_HAS_TEXT 0
#define CATS_BY_HAS_BYTES 0
#define CATS_BY_HAS_ADDR 0
#define CATS_BY_HAS_ARR_U64 0
#define CATS_BY_HAS_ARR_TEXT 0
#define CATS_BY_HAS_ARR_ADDR 0
#define CATS_BY_HAS_ARR_MAP 0
#define CATS_BY_HAS_KV 0
#define CATS_X_BY_HAS(P, fname, K, ...) \
	| ((uint64_t)CATS_BY_HAS_##K << CATS_##P##_##fname)

#define CATS_X_NAME_OVER(P, fname, ...) \
	+ (sizeof(#fname) > CATS_FIELD_NAME)

#define CATS_SCHEMA(var, P, label, chk, dc) \
	_Static_assert((0 CATS_##P##_FIELDS(CATS_X_NAME_OVER)) == 0, \
	    "a field name of " label " is over 15 characters"); \
	static const struct cats_field var##_fields[] = { \
		CATS_##P##_FIELDS(CATS_X_FIELD) }; \
	const struct cats_schema var = { label, sizeof(CATS_STRUCT_##P), \
		CATS_ARRAY_LEN(var##_fields), var##_fields, chk, dc, \
		0 CATS_##P##_FIELDS(CATS_X_REQUIRED), \
		0 CATS_##P##_FIELDS(CATS_X_BY_HAS) };

CATS_SCHEMA(cats_schema_constraints, CON, "constraints", NULL,
    "hard constraints of a service, request or path request")
CATS_SCHEMA(cats_schema_flow, FLOW, "flow", check_flow, "a flow key")
CATS_SCHEMA(cats_schema_entry, ENT, "entry", NULL,
    "one SCI in a metric advertisement")
CATS_SCHEMA(cats_schema_site, SITE, "site", NULL, "a site aggregate per CS-ID")
CATS_SCHEMA(cats_schema_address, ADR, "address", NULL, "a service address")
CATS_SCHEMA(cats_schema_decision, DEC, "decision", NULL,
    "the C-PS service decision")
CATS_SCHEMA(cats_schema_segment, SEG, "segment", check_segment,
    "one segment of a path")
CATS_SCHEMA(cats_schema_bind_fwd, BFW, "fwd", check_bind_fwd,
    "forward half of a binding")
CATS_SCHEMA(cats_schema_bind_rev, BRV, "rev", NULL,
    "reverse half of a binding")
CATS_SCHEMA(schema_sci, SCI, "sci-report", NULL, "an SCI report to the C-SMA")
CATS_SCHEMA(schema_metric, MET, "metric", check_metric,
    "a C-SMA advertisement to the C-PS")
CATS_SCHEMA(schema_sync, SYNC, "sync", NULL, "the C-PS asks for a sync")
CATS_SCHEMA(schema_ack, ACK, "ack", NULL, "the C-PS acknowledges")
CATS_SCHEMA(schema_net, NET, "net", check_net, "network or path metrics")
CATS_SCHEMA(schema_service, SVC, "service", NULL, "a service context")
CATS_SCHEMA(schema_request, REQ, "request", NULL,
    "an ingress forwarder's service request")
CATS_SCHEMA(schema_path_req, PRQ, "path-req", NULL, "a path request")
CATS_SCHEMA(schema_path_rep, PRP, "path-rep", check_path_rep, "a path reply")
CATS_SCHEMA(schema_binding, BND, "binding", check_binding,
    "a steering binding")
CATS_SCHEMA(schema_status, STA, "status", NULL, "a forwarder's binding status")
CATS_SCHEMA(schema_error, ERR, "error", NULL, "a failed transaction or record")
CATS_SCHEMA(schema_stats, STS, "stats", NULL, "a tool's counters")
CATS_SCHEMA(schema_steer, STR, "steer", check_steer,
    "a C-SMA's site-local steering decision in a partition")

static const struct cats_schema *const type_schemas[CATS_T__N] = {
	[CATS_T_SCI_REPORT] = &schema_sci,
	[CATS_T_METRIC] = &schema_metric,
	[CATS_T_SYNC] = &schema_sync,
	[CATS_T_ACK] = &schema_ack,
	[CATS_T_NET] = &schema_net,
	[CATS_T_SERVICE] = &schema_service,
	[CATS_T_REQUEST] = &schema_request,
	[CATS_T_PATH_REQ] = &schema_path_req,
	[CATS_T_PATH_REP] = &schema_path_rep,
	[CATS_T_BINDING] = &schema_binding,
	[CATS_T_STATUS] = &schema_status,
	[CATS_T_ERROR] = &schema_error,
	[CATS_T_STATS] = &schema_stats,
	[CATS_T_STEER] = &schema_steer,
};

const struct cats_schema *
cats_type_schema(enum cats_type t)
{
	return (unsigned)t < CATS_T__N ? type_schemas[t] : NULL;
}

const char *
cats_type_name(enum cats_type t)
{
	return (unsigned)t < CATS_T__N ? type_schemas[t]->name : "?";
}

/* Is the C string name exactly s[0..n)?  The first byte decides most. */
static inline bool
name_is(const char *name, const char *s, size_t n)
{
	if (n == 0)
		return name[0] == '\0';
	return name[0] == s[0] && strlen(name) == n &&
	    memcmp(name, s, n) == 0;
}

int
cats_type_from_name(const char *s, size_t n)
{
	for (int t = 0; t < CATS_T__N; t++)
		if (name_is(type_schemas[t]->name, s, n))
			return t;
	return -1;
}

int
cats_enum_index(const char *const *names, const char *s, size_t n)
{
	for (int i = 0; names[i] != NULL; i++)
		if (name_is(names[i], s, n))
			return i;
	return -1;
}

/* ---- addresses ---- */

/*
 * The address parsers and formatters below give exactly what inet_pton(3)
 * and inet_ntop(3) of glibc give (tests/unit/test_rec.c compares them),
 * without the copy, the locale-free sprintf and the calls.
 */

/* A dotted quad: four decimal parts 0..255, no leading zeros. */
static bool
parse_v4(const char *s, const char *end, uint8_t out[4])
{
	uint8_t tmp[4];
	for (int i = 0; i < 4; i++) {
		if (i > 0 && (s == end || *s++ != '.'))
			return false;
		if (s == end || (unsigned)(*s - '0') > 9)
			return false;
		unsigned v = (unsigned)(*s++ - '0');
		if (s < end && (unsigned)(*s - '0') <= 9) {
			if (v == 0)
				return false;
			v = v * 10 + (unsigned)(*s++ - '0');
			if (s < end && (unsigned)(*s - '0') <= 9) {
				v = v * 10 + (unsigned)(*s++ - '0');
				if (v > 255 || (s < end &&
				    (unsigned)(*s - '0') <= 9))
					return false;
			}
		}
		tmp[i] = (uint8_t)v;
	}
	if (s != end)
		return false;
	memcpy(out, tmp, 4);
	return true;
}

static int
hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* RFC 4291 text: groups of up to four hex digits, one "::", a dotted tail. */
static bool
parse_v6(const char *s, const char *end, uint8_t out[16])
{
	uint8_t tmp[16] = { 0 }, *tp = tmp, *tend = tmp + 16, *colonp = NULL;
	const char *curtok;
	size_t xdigits = 0;
	unsigned val = 0;
	if (s == end)
		return false;
	if (*s == ':' && (++s == end || *s != ':'))
		return false;
	curtok = s;
	while (s < end) {
		unsigned char c = (unsigned char)*s++;
		int d = hexval(c);
		if (d >= 0) {
			if (xdigits == 4)
				return false;
			val = (val << 4) | (unsigned)d;
			xdigits++;
			continue;
		}
		if (c == ':') {
			curtok = s;
			if (xdigits == 0) {
				if (colonp != NULL)
					return false;
				colonp = tp;
				continue;
			}
			if (s == end || tp + 2 > tend)
				return false;
			*tp++ = (uint8_t)(val >> 8);
			*tp++ = (uint8_t)val;
			xdigits = 0;
			val = 0;
			continue;
		}
		if (c == '.' && tp + 4 <= tend && parse_v4(curtok, end, tp)) {
			tp += 4;
			xdigits = 0;
			break;
		}
		return false;
	}
	if (xdigits > 0) {
		if (tp + 2 > tend)
			return false;
		*tp++ = (uint8_t)(val >> 8);
		*tp++ = (uint8_t)val;
	}
	if (colonp != NULL) {
		if (tp == tend)
			return false;
		size_t n = (size_t)(tp - colonp);
		memmove(tend - n, colonp, n);
		memset(colonp, 0, (size_t)(tend - n - colonp));
		tp = tend;
	}
	if (tp != tend)
		return false;
	memcpy(out, tmp, 16);
	return true;
}

int
cats_ip_parse(const char *s, size_t n, struct cats_ip *ip)
{
	if (n == 0 || n >= INET6_ADDRSTRLEN)
		return -1;
	memset(ip, 0, sizeof(*ip));
	/* Most are plain dotted quads: no colon, no NUL, nothing else. */
	if (parse_v4(s, s + n, ip->a)) {
		ip->af = 4;
		return 0;
	}
	/* The family by a colon anywhere; the text ends at a NUL (C string). */
	const char *nul = memchr(s, '\0', n);
	const char *end = nul ? nul : s + n;
	if (memchr(s, ':', n) != NULL) {
		if (!parse_v6(s, end, ip->a))
			return -1;
		ip->af = 6;
	} else {
		if (!parse_v4(s, end, ip->a))
			return -1;
		ip->af = 4;
	}
	return 0;
}

/* Dotted quad of a[0..4) at p; returns the end. */
static char *
fmt_v4(const uint8_t *a, char *p)
{
	for (int i = 0; i < 4; i++) {
		unsigned v = a[i];
		if (v >= 100) {
			unsigned h = v / 100, r = v - h * 100, t = r / 10;
			p[0] = (char)('0' + h);
			p[1] = (char)('0' + t);
			p[2] = (char)('0' + (r - t * 10));
			p += 3;
		} else if (v >= 10) {
			unsigned t = v / 10;
			p[0] = (char)('0' + t);
			p[1] = (char)('0' + (v - t * 10));
			p += 2;
		} else {
			*p++ = (char)('0' + v);
		}
		*p++ = '.';
	}
	*--p = '\0';
	return p;
}

/* RFC 5952 text as glibc writes it: the first longest zero run is "::". */
static char *
fmt_v6(const uint8_t *a, char *p)
{
	static const char hex[] = "0123456789abcdef";
	unsigned w[8];
	int best = -1, blen = 0, cur = -1, clen = 0;
	for (int i = 0; i < 8; i++) {
		w[i] = (unsigned)a[2 * i] << 8 | a[2 * i + 1];
		if (w[i] == 0) {
			if (cur == -1)
				cur = i, clen = 1;
			else
				clen++;
		} else if (cur != -1) {
			if (best == -1 || clen > blen)
				best = cur, blen = clen;
			cur = -1;
		}
	}
	if (cur != -1 && (best == -1 || clen > blen))
		best = cur, blen = clen;
	if (best != -1 && blen < 2)
		best = -1;
	for (int i = 0; i < 8; i++) {
		if (best != -1 && i >= best && i < best + blen) {
			if (i == best)
				*p++ = ':';
			continue;
		}
		if (i != 0)
			*p++ = ':';
		if (i == 6 && best == 0 && (blen == 6 ||
		    (blen == 5 && w[5] == 0xffff)))
			return fmt_v4(a + 12, p);
		/* The digits without leading zeros. */
		unsigned v = w[i];
		int nd = v >= 0x1000 ? 4 : v >= 0x100 ? 3 : v >= 0x10 ? 2 : 1;
		for (int d = nd - 1; d >= 0; d--)
			p[d] = hex[(v >> (4 * (nd - 1 - d))) & 15];
		p += nd;
	}
	if (best != -1 && best + blen == 8)
		*p++ = ':';
	*p = '\0';
	return p;
}

/* The text of an address into out (>= INET6_ADDRSTRLEN); its length. */
static size_t
ip_text(const struct cats_ip *ip, char *out)
{
	if (ip->af == 0) {
		out[0] = '-';
		out[1] = '\0';
		return 1;
	}
	return (size_t)((ip->af == 4 ? fmt_v4(ip->a, out) : fmt_v6(ip->a,
	    out)) - out);
}

const char *
cats_ip_fmt(const struct cats_ip *ip, char *buf, size_t len)
{
	char tmp[INET6_ADDRSTRLEN];
	if (ip->af == 0) {
		cats_strlcpy(buf, "-", len);
		return buf;
	}
	if (ip->af == 4 && len >= 16) {
		fmt_v4(ip->a, buf);
		return buf;
	}
	char *e = ip->af == 4 ? fmt_v4(ip->a, tmp) : fmt_v6(ip->a, tmp);
	size_t n = (size_t)(e - tmp);
	if (n + 1 > len)
		cats_strlcpy(buf, "-", len);
	else
		memcpy(buf, tmp, n + 1);
	return buf;
}

bool
cats_ip_eq(const struct cats_ip *a, const struct cats_ip *b)
{
	return a->af == b->af &&
	    memcmp(a->a, b->a, a->af == 4 ? 4 : 16) == 0;
}

bool
cats_bits_match(const uint8_t *a, const uint8_t *pfx, unsigned plen)
{
	unsigned full = plen / 8, rest = plen % 8;
	if (memcmp(a, pfx, full) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (pfx[full] & mask);
}

bool
cats_prefix_has(const struct cats_prefix *p, const struct cats_ip *ip)
{
	return p->ip.af == ip->af && cats_bits_match(ip->a, p->ip.a, p->plen);
}

int
cats_prefix_parse(const char *s, size_t n, bool host_ok,
    struct cats_prefix *p, char *err, size_t errlen)
{
	const char *slash = memchr(s, '/', n);
	size_t alen = slash ? (size_t)(slash - s) : n;
	memset(p, 0, sizeof(*p));
	if (slash == NULL && !host_ok) {
		snprintf(err, errlen, "\"%.*s\": expected ADDRESS/LENGTH",
		    (int)(n > 64 ? 64 : n), s);
		return -1;
	}
	if (cats_ip_parse(s, alen, &p->ip) < 0) {
		snprintf(err, errlen, "\"%.*s\" is not an IP address",
		    (int)(alen > 64 ? 64 : alen), s);
		return -1;
	}
	unsigned max = p->ip.af == 4 ? 32 : 128, len = max;
	if (slash != NULL) {
		const char *d = slash + 1, *end = s + n;
		len = 0;
		if (d == end || end - d > 3)
			goto bad_len;
		for (; d < end; d++) {
			if (*d < '0' || *d > '9')
				goto bad_len;
			len = len * 10 + (unsigned)(*d - '0');
		}
		if (len > max)
			goto bad_len;
	}
	p->plen = (uint8_t)len;
	/* Bits past the length set: a typo more likely than a wish. */
	for (unsigned i = len; i < max; i++)
		if (p->ip.a[i / 8] & (0x80 >> (i % 8))) {
			snprintf(err, errlen, "\"%.*s\": bits set past the "
			    "prefix length", (int)(n > 64 ? 64 : n), s);
			return -1;
		}
	return 0;
bad_len:
	snprintf(err, errlen, "\"%.*s\": bad prefix length (0..%u)",
	    (int)(n > 64 ? 64 : n), s, max);
	return -1;
}

/* ---- decoding ---- */

void
cats_dec_init(struct cats_dec *d, const struct cats_limits *lim)
{
	memset(d, 0, sizeof(*d));
	d->lim = lim ? *lim : cats_limits_default;
	/* A record never needs more arena than a few times its size. */
	d->arena.cap = d->lim.max_record * 16 + (1u << 20);
}

void
cats_dec_free(struct cats_dec *d)
{
	cats_toks_free(&d->toks);
	cats_arena_free(&d->arena);
	cats_buf_free(&d->scratch);
}

void
cats_rec_init(struct cats_rec *r, enum cats_type t)
{
	memset(r, 0, sizeof(*r));
	r->type = t;
}

void
cats_rec_error_init(struct cats_rec *r, const char *code, const char *stage,
    uint64_t txn, uint64_t ts, const char *msg)
{
	cats_rec_init(r, CATS_T_ERROR);
	struct cats_error *e = &r->u.error;
	e->code = code;
	e->stage = stage;
	CATS_SET(e, ERR, ts, ts);
	CATS_SET_IF(txn != 0, e, ERR, txn, txn);
	e->msg = msg != NULL && msg[0] != '\0' ? msg : NULL;
}

void
cats_rec_keepalive_init(struct cats_rec *r, uint64_t ts)
{
	cats_rec_init(r, CATS_T_STATUS);
	r->u.status.event = CATS_EV_KEEPALIVE;
	r->u.status.ts = ts;
}

void
cats_rec_error_route(struct cats_rec *r, const char *ingress,
    const struct cats_flow *flow)
{
	struct cats_error *e = &r->u.error;
	e->ingress = ingress;
	if (flow != NULL) {
		e->flow = *flow;
		e->has |= UINT64_C(1) << CATS_ERR_flow;
	} else {
		e->has &= ~(UINT64_C(1) << CATS_ERR_flow);
	}
}

uint64_t
cats_rec_ts(const struct cats_rec *r)
{
	switch (r->type) {
	case CATS_T_SCI_REPORT: return r->u.sci.ts;
	case CATS_T_METRIC: return r->u.metric.ts;
	case CATS_T_SYNC: return r->u.sync.ts;
	case CATS_T_ACK: return r->u.ack.ts;
	case CATS_T_NET: return r->u.net.ts;
	case CATS_T_SERVICE:
		return CATS_HAS(&r->u.service, SVC, ts) ? r->u.service.ts : 0;
	case CATS_T_REQUEST: return r->u.request.ts;
	case CATS_T_PATH_REQ: return r->u.preq.ts;
	case CATS_T_PATH_REP: return r->u.prep.ts;
	case CATS_T_BINDING: return r->u.binding.ts;
	case CATS_T_STATUS: return r->u.status.ts;
	case CATS_T_ERROR:
		return CATS_HAS(&r->u.error, ERR, ts) ? r->u.error.ts : 0;
	case CATS_T_STATS: return r->u.stats.ts;
	case CATS_T_STEER: return r->u.steer.ts;
	case CATS_T__N: break;
	}
	return 0;
}

/*
 * The walk keeps the path to the current field as a stack of names and
 * indexes; the text "entries[2].gas" is only built when something fails.
 */
struct walk {
	struct cats_dec *d;
	const struct cats_tok *t;
	struct cats_err *err;
	unsigned depth;
	const char *name[24];
	long idx[24];
	char *pool;		/* text copies are cut from arena blocks */
	size_t pool_left;
};

static const char *
kind_name(uint8_t k)
{
	switch (k) {
	case CATS_TK_UINT: return "unsigned integer";
	case CATS_TK_NINT: return "negative integer";
	case CATS_TK_BYTES: return "byte string";
	case CATS_TK_TEXT: return "text";
	case CATS_TK_ARRAY: return "array";
	case CATS_TK_MAP: return "map";
	case CATS_TK_TAG: return "tag";
	case CATS_TK_FALSE: case CATS_TK_TRUE: return "boolean";
	case CATS_TK_NULL: return "null";
	case CATS_TK_UNDEF: return "undefined";
	case CATS_TK_FLOAT: return "float";
	default: return "simple value";
	}
}

/* Enter a field (name) or an array element (idx >= 0); returns the depth. */
static size_t
path_push(struct walk *w, const char *name, long idx)
{
	size_t depth = w->depth;
	if (idx < 0 && (name == NULL || name[0] == '\0'))
		return depth;
	if (w->depth < CATS_ARRAY_LEN(w->name)) {
		w->name[w->depth] = name;
		w->idx[w->depth] = idx;
	}
	w->depth++;
	return depth;
}

/* Leave back to a depth path_push() returned. */
#define path_pop(w, saved) ((w)->depth = (unsigned)(saved))

static void
path_text(const struct walk *w, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < w->depth && i < CATS_ARRAY_LEN(w->name); i++) {
		if (n >= len)
			break;
		if (w->idx[i] >= 0)
			n += (size_t)snprintf(buf + n, len - n, "[%ld]", w->idx[i]);
		else
			n += (size_t)snprintf(buf + n, len - n, "%s%s",
			    n ? "." : "", w->name[i]);
	}
}

static int
fail(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
fail(struct walk *w, const char *fmt, ...)
{
	char reason[160];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	char path[96];
	path_text(w, path, sizeof(path));
	return cats_err_set(w->err, path, "%s", reason);
}

static int __attribute__((noinline))
want_fail(struct walk *w, size_t i, uint8_t kind)
{
	return fail(w, "expected %s, got %s", kind_name(kind),
	    kind_name(w->t[i].kind));
}

static inline int
want(struct walk *w, size_t i, uint8_t kind)
{
	uint8_t k = w->t[i].kind;
	if (k == kind || (kind == CATS_TK_TRUE && k == CATS_TK_FALSE))
		return 0;
	return want_fail(w, i, kind);
}

/* A NUL-terminated copy of p[0..n) in the record's arena. */
static char *
walk_strndup(struct walk *w, const uint8_t *p, size_t n)
{
	if (n + 1 > w->pool_left) {
		size_t block = n + 1 > 2048 ? n + 1 : 2048;
		char *q = cats_arena_alloc(&w->d->arena, block);
		if (q == NULL && block > n + 1)
			q = cats_arena_alloc(&w->d->arena, block = n + 1);
		if (q == NULL)
			return NULL;
		w->pool = q;
		w->pool_left = block;
	}
	char *q = w->pool;
	memcpy(q, p, n);
	q[n] = '\0';
	w->pool += n + 1;
	w->pool_left -= n + 1;
	return q;
}

static int
get_u64(struct walk *w, size_t i, const struct cats_field *f, uint64_t *out)
{
	if (want(w, i, CATS_TK_UINT) < 0)
		return -1;
	uint64_t v = w->t[i].v.u;
	if (v < f->min || v > f->max)
		return fail(w, "%" PRIu64 " is out of range %" PRIu64 "..%" PRIu64,
		    v, f->min, f->max);
	*out = v;
	return 0;
}

static int
get_text(struct walk *w, size_t i, uint64_t minlen, uint64_t maxlen,
    const char **out)
{
	if (want(w, i, CATS_TK_TEXT) < 0)
		return -1;
	const struct cats_tok *k = &w->t[i];
	if (k->n < minlen)
		return fail(w, "empty");
	if (k->n > maxlen)
		return fail(w, "%u bytes exceed the limit of %" PRIu64, k->n,
		    maxlen);
	if (k->flags & CATS_TKF_NUL)
		return fail(w, "text contains a NUL character");
	*out = walk_strndup(w, k->v.p, k->n);
	return *out ? 0 : fail(w, "out of memory");
}

static int
get_addr(struct walk *w, size_t i, struct cats_ip *ip)
{
	if (want(w, i, CATS_TK_TEXT) < 0)
		return -1;
	const struct cats_tok *k = &w->t[i];
	if (cats_ip_parse((const char *)k->v.p, k->n, ip) < 0)
		return fail(w, "\"%.*s\" is not an IPv4 or IPv6 address",
		    k->n > 48 ? 48 : (int)k->n, (const char *)k->v.p);
	return 0;
}

static int
get_enum(struct walk *w, size_t i, const char *const *names, int *out)
{
	if (want(w, i, CATS_TK_TEXT) < 0)
		return -1;
	const struct cats_tok *k = &w->t[i];
	int v = cats_enum_index(names, (const char *)k->v.p, k->n);
	if (v < 0) {
		char list[128] = "";
		for (int j = 0; names[j] != NULL; j++) {
			size_t len = strlen(list);
			snprintf(list + len, sizeof(list) - len, "%s%s",
			    j ? ", " : "", names[j]);
		}
		return fail(w, "\"%.*s\" is not one of %s",
		    k->n > 32 ? 32 : (int)k->n, (const char *)k->v.p, list);
	}
	*out = v;
	return 0;
}

static int decode_map(struct walk *w, size_t i, const struct cats_schema *s,
    void *out);

/* The size of one element of an array field (every array is { v, n }). */
static size_t
array_elem_size(const struct cats_field *f)
{
	switch (f->kind) {
	case CATS_F_ARR_U64: return sizeof(uint64_t);
	case CATS_F_ARR_TEXT: return sizeof(char *);
	case CATS_F_ARR_ADDR: return sizeof(struct cats_ip);
	default: return f->sub->size;
	}
}

/* Decode the array at token i into a freshly allocated vector. */
static int
decode_array(struct walk *w, size_t i, const struct cats_field *f, void *slot)
{
	if (want(w, i, CATS_TK_ARRAY) < 0)
		return -1;
	size_t n = w->t[i].n;
	if (n > f->max)
		return fail(w, "%zu elements exceed the limit of %" PRIu64, n,
		    f->max);
	size_t elem = array_elem_size(f);
	/* n is bounded by the token count, so this is bounded by the input. */
	uint8_t *v = n ? cats_arena_alloc(&w->d->arena, n * elem) : NULL;
	if (n && v == NULL)
		return fail(w, "out of memory");
	if (n)
		memset(v, 0, n * elem);
	size_t j = i + 1;
	for (size_t k = 0; k < n; k++) {
		size_t saved = path_push(w, NULL, (long)k);
		int r;
		void *e = v + k * elem;
		switch (f->kind) {
		case CATS_F_ARR_U64: {
			struct cats_field one = *f;
			one.min = 0;
			one.max = UINT64_MAX;
			r = get_u64(w, j, &one, e);
			break;
		}
		case CATS_F_ARR_TEXT:
			r = get_text(w, j, 0, CATS_ID * 2, e);
			break;
		case CATS_F_ARR_ADDR:
			r = get_addr(w, j, e);
			break;
		default:
			r = decode_map(w, j, f->sub, e);
			break;
		}
		if (r < 0)
			return -1;
		path_pop(w, saved);
		j = w->t[j].next;
	}
	struct { void *v; size_t n; } *arr = slot;
	arr->v = v;
	arr->n = n;
	return 0;
}

static int
decode_kv(struct walk *w, size_t i, const struct cats_field *f,
    struct cats_arr_kv *out)
{
	if (want(w, i, CATS_TK_MAP) < 0)
		return -1;
	size_t n = w->t[i].n;
	if (n > f->max)
		return fail(w, "%zu entries exceed the limit of %" PRIu64, n,
		    f->max);
	struct cats_kv *v = n ? cats_arena_alloc(&w->d->arena, n * sizeof(*v))
	    : NULL;
	if (n && v == NULL)
		return fail(w, "out of memory");
	size_t j = i + 1;
	for (size_t k = 0; k < n; k++) {
		size_t val = w->t[j].next;
		if (get_text(w, j, 1, CATS_ID, &v[k].k) < 0)
			return -1;
		for (size_t m = 0; m < k; m++)
			if (strcmp(v[m].k, v[k].k) == 0)
				return fail(w, "duplicate key \"%s\"", v[k].k);
		size_t saved = path_push(w, v[k].k, -1);
		if (want(w, val, CATS_TK_UINT) < 0)
			return -1;
		path_pop(w, saved);
		v[k].v = w->t[val].v.u;
		j = w->t[val].next;
	}
	out->v = v;
	out->n = n;
	return 0;
}

static int
decode_field(struct walk *w, size_t i, const struct cats_field *f, void *base)
{
	void *slot = (char *)base + f->off;
	switch (f->kind) {
	case CATS_F_U64:
		return get_u64(w, i, f, slot);
	case CATS_F_BOOL:
		if (want(w, i, CATS_TK_TRUE) < 0)
			return -1;
		*(bool *)slot = w->t[i].kind == CATS_TK_TRUE;
		return 0;
	case CATS_F_TEXT:
		return get_text(w, i, f->min, f->max, slot);
	case CATS_F_BYTES: {
		if (want(w, i, CATS_TK_BYTES) < 0)
			return -1;
		const struct cats_tok *k = &w->t[i];
		if (k->n > f->max)
			return fail(w, "%u bytes exceed the limit of %" PRIu64,
			    k->n, f->max);
		struct cats_bytes *b = slot;
		b->p = cats_arena_memdup(&w->d->arena, k->v.p, k->n);
		b->n = k->n;
		return b->p ? 0 : fail(w, "out of memory");
	}
	case CATS_F_ENUM:
		return get_enum(w, i, f->enums, slot);
	case CATS_F_ADDR:
		return get_addr(w, i, slot);
	case CATS_F_MAP:
		return decode_map(w, i, f->sub, slot);
	case CATS_F_KV:
		return decode_kv(w, i, f, slot);
	default:
		return decode_array(w, i, f, slot);
	}
}

static int decode_auth(struct walk *w, size_t i, struct cats_auth *a);

/*
 * The token after item i: i + 1 unless it is a container.  Without the
 * load of .next for scalars, the walk over a map's pairs is no chain of
 * dependent loads.
 */
static inline size_t
tok_next(const struct cats_tok *t, size_t i)
{
	return (unsigned)t[i].kind - CATS_TK_ARRAY <= CATS_TK_TAG - CATS_TK_ARRAY
	    ? t[i].next : i + 1;
}

/*
 * Are a[0..n) and b[0..n) equal?  Word loads that may overlap but never
 * leave either; the field names are short.
 */
static inline bool
same_bytes(const void *a, const void *b, size_t n)
{
	const uint8_t *p = a, *q = b;
	uint64_t x, y;
	uint32_t u, v;
	if (n >= 8) {
		for (size_t i = 0; i + 8 <= n; i += 8) {
			memcpy(&x, p + i, 8);
			memcpy(&y, q + i, 8);
			if (x != y)
				return false;
		}
		memcpy(&x, p + n - 8, 8);
		memcpy(&y, q + n - 8, 8);
		return x == y;
	}
	if (n >= 4) {
		memcpy(&u, p, 4);
		memcpy(&v, q, 4);
		if (u != v)
			return false;
		memcpy(&u, p + n - 4, 4);
		memcpy(&v, q + n - 4, 4);
		return u == v;
	}
	for (size_t i = 0; i < n; i++)
		if (p[i] != q[i])
			return false;
	return true;
}

/*
 * Decode the map at token i into the struct out of schema s.  At the top
 * level, rec is set and "type"/"auth" are handled by the caller.
 */
static int
decode_fields(struct walk *w, size_t i, const struct cats_schema *s,
    void *out, struct cats_rec *rec)
{
	if (want(w, i, CATS_TK_MAP) < 0)
		return -1;
	const struct cats_tok *t = w->t;
	const struct cats_field *fields = s->fields;
	uint64_t *has = out, hv = *has;
	size_t j = i + 1, cursor = 0, nf = s->nfields;
	uint32_t npairs = t[i].n;
	for (uint32_t p = 0; p < npairs; p++) {
		size_t key = j, val = tok_next(t, j);
		j = tok_next(t, val);
		if (t[key].kind != CATS_TK_TEXT)
			continue;	/* unknown key */
		const char *k = (const char *)t[key].v.p;
		size_t kn = t[key].n;
		if (rec != NULL && kn == 4 && memcmp(k, "type", 4) == 0)
			continue;
		if (rec != NULL && kn == 4 && memcmp(k, "auth", 4) == 0) {
			if (rec->auth.alg != CATS_ALG_NONE) {
				*has = hv;
				return cats_err_set(w->err, "auth",
				    "duplicate key");
			}
			size_t saved = path_push(w, "auth", -1);
			if (decode_auth(w, val, &rec->auth) < 0) {
				*has = hv;
				return -1;
			}
			path_pop(w, saved);
			continue;
		}
		/*
		 * Our encoder writes fields in schema order, so try the field
		 * after the last one found first.
		 */
		size_t fi = cursor;
		for (size_t step = 0; step < nf; step++, fi++) {
			if (fi >= nf)
				fi = 0;
			const struct cats_field *f = &fields[fi];
			if (f->namelen != kn || f->name[0] != k[0] ||
			    !same_bytes(f->name, k, kn))
				continue;
			cursor = fi + 1;
			size_t saved = path_push(w, f->name, -1);
			if (hv & (UINT64_C(1) << fi)) {
				*has = hv;
				return fail(w, "duplicate key");
			}
			if (decode_field(w, val, f, out) < 0) {
				*has = hv;
				return -1;
			}
			hv |= UINT64_C(1) << fi;
			path_pop(w, saved);
			break;
		}
	}
	*has = hv;
	uint64_t missing = s->required & ~hv;
	if (missing != 0) {
		size_t fi = (size_t)__builtin_ctzll(missing);
		size_t saved = path_push(w, fields[fi].name, -1);
		fail(w, "required field missing");
		path_pop(w, saved);
		return -1;
	}
	if (s->check != NULL) {
		struct cats_err e2;
		e2.offset = 0;
		e2.field[0] = e2.reason[0] = '\0';
		if (s->check(out, &e2) < 0) {
			size_t saved = path_push(w, e2.field, -1);
			fail(w, "%s", e2.reason);
			path_pop(w, saved);
			return -1;
		}
	}
	return 0;
}

static int
decode_map(struct walk *w, size_t i, const struct cats_schema *s, void *out)
{
	return decode_fields(w, i, s, out, NULL);
}

/*
 * auth = [protected: bstr .cbor {1: alg, 4: kid}, unprotected: {},
 *         payload: null, tag: bstr]
 */
static int
decode_auth(struct walk *w, size_t i, struct cats_auth *a)
{
	const struct cats_tok *t = w->t;
	if (want(w, i, CATS_TK_ARRAY) < 0)
		return -1;
	if (t[i].n != 4)
		return fail(w, "expected [protected, unprotected, null, tag]");
	size_t prot = i + 1, unprot = t[prot].next, payload = t[unprot].next,
	    tag = t[payload].next;
	if (t[prot].kind != CATS_TK_BYTES || t[unprot].kind != CATS_TK_MAP ||
	    t[payload].kind != CATS_TK_NULL || t[tag].kind != CATS_TK_BYTES)
		return fail(w, "expected [protected, unprotected, null, tag]");
	/* No "crit" (label 2) outside the protected header. */
	for (uint32_t p = 0, j = unprot + 1; p < t[unprot].n; p++) {
		if (t[j].kind == CATS_TK_UINT && t[j].v.u == 2)
			return fail(w, "crit in the unprotected header");
		j = t[t[j].next].next;
	}
	/* The protected header is itself a small CBOR map. */
	struct cats_toks ht = { 0 };
	struct cats_limits hl = { .max_record = CATS_PROT_MAX, .max_depth = 2,
		.max_tokens = 16, .max_string = 32, .max_count = 8 };
	struct cats_err e2;
	size_t used = 0;
	memset(&e2, 0, sizeof(e2));
	int64_t alg = 0;
	bool have_kid = false, have_alg = false, have_crit = false;
	const char *why = NULL;
	int r = cats_scan(t[prot].v.p, t[prot].n, true, &hl, &ht, NULL, &used,
	    NULL, &e2);
	if (r != CATS_SCAN_OK || used != t[prot].n || ht.t[0].kind != CATS_TK_MAP) {
		cats_toks_free(&ht);
		return fail(w, "protected header is not a CBOR map");
	}
	size_t j = 1;
	for (uint32_t p = 0; p < ht.t[0].n && why == NULL; p++) {
		const struct cats_tok *k = &ht.t[j], *v = &ht.t[k->next];
		bool label = k->kind == CATS_TK_UINT;
		if (label && k->v.u == 1) {
			if (have_alg)
				why = "alg twice in the protected header";
			have_alg = true;
			if (v->kind == CATS_TK_UINT && v->v.u < 256)
				alg = (int64_t)v->v.u;
			else if (v->kind == CATS_TK_NINT && v->v.u < 256)
				alg = -1 - (int64_t)v->v.u;
		} else if (label && k->v.u == 4) {
			if (have_kid)
				why = "kid twice in the protected header";
			else if (v->kind == CATS_TK_BYTES && v->n ==
			    CATS_KID_LEN) {
				memcpy(a->kid, v->v.p, CATS_KID_LEN);
				have_kid = true;
			}
		} else if (label && k->v.u == 2) {
			/* crit: labels a verifier must understand; ours
			 * are alg and kid (RFC 9052 §3.1). */
			if (have_crit || v->kind != CATS_TK_ARRAY || v->n == 0)
				why = "crit is not a non-empty array of labels";
			have_crit = true;
			for (uint32_t c = 0, q = (uint32_t)(k->next + 1);
			    why == NULL && c < v->n; c++, q = ht.t[q].next)
				if (ht.t[q].kind != CATS_TK_UINT ||
				    (ht.t[q].v.u != 1 && ht.t[q].v.u != 4))
					why = "a critical header parameter that "
					    "is not understood";
		}
		j = v->next;
	}
	cats_toks_free(&ht);
	if (why != NULL)
		return fail(w, "%s", why);
	if (alg != CATS_ALG_HMAC256 && alg != CATS_ALG_EDDSA)
		return fail(w, "unsupported algorithm %lld (5 HMAC 256/256, "
		    "-8 EdDSA)", (long long)alg);
	if (!have_kid)
		return fail(w, "protected header has no %d-byte kid",
		    CATS_KID_LEN);
	size_t taglen = alg == CATS_ALG_HMAC256 ? 32 : 64;
	if (t[tag].n != taglen)
		return fail(w, "tag of %u bytes, expected %zu", t[tag].n, taglen);
	a->alg = (int)alg;
	memcpy(a->tag, t[tag].v.p, t[tag].n);
	a->tag_len = t[tag].n;
	memcpy(a->prot, t[prot].v.p, t[prot].n);
	a->prot_len = t[prot].n;
	return 0;
}

/*
 * The type of the record at t[0]: 0 and *type, or -1 with err.  The
 * scanner noted the top-level "type" keys (cats_toks.ntype): the first
 * one's value is checked before a second one is a duplicate, as a walk
 * over the keys in order would find them.
 */
static int
rec_type(const struct cats_toks *toks, int *type, struct cats_err *err)
{
	const struct cats_tok *t = toks->t;
	if (t[0].kind != CATS_TK_MAP)
		return cats_err_set(err, "", "a record is a map, got %s",
		    kind_name(t[0].kind));
	if (toks->ntype == 0)
		return cats_err_set(err, "type", "required field missing");
	const struct cats_tok *v = &t[toks->type_val];
	if (v->kind != CATS_TK_TEXT)
		return cats_err_set(err, "type", "expected text, got %s",
		    kind_name(v->kind));
	*type = cats_type_from_name((const char *)v->v.p, v->n);
	if (*type < 0)
		return cats_err_set(err, "type", "unknown record type \"%.*s\"",
		    v->n > 32 ? 32 : (int)v->n, (const char *)v->v.p);
	if (toks->ntype > 1)
		return cats_err_set(err, "type", "duplicate key");
	return 0;
}

int
cats_rec_from_toks(struct cats_dec *d, struct cats_rec *r, struct cats_err *err)
{
	int type = -1;
	if (rec_type(&d->toks, &type, err) < 0) {
		memset(r, 0, sizeof(*r));
		return -1;
	}
	/* Zero the header and the struct of this type, not the whole union. */
	const struct cats_schema *s = type_schemas[type];
	memset(r, 0, offsetof(struct cats_rec, u));
	memset(&r->u, 0, s->size);
	r->type = (enum cats_type)type;
	/* The path arrays are written before they are read: not zeroed. */
	struct walk w;
	w.d = d;
	w.t = d->toks.t;
	w.err = err;
	w.depth = 0;
	w.pool = NULL;
	w.pool_left = 0;
	return decode_fields(&w, 0, s, &r->u, r);
}

/* The text *t (NULL: none) copied into a, in place. */
static int
copy_text(const char **t, struct cats_arena *a)
{
	if (*t != NULL && (*t = cats_arena_strndup(a, *t, strlen(*t))) == NULL)
		return -1;
	return 0;
}

/* One field's owned parts copied into a: the slot already holds src's. */
static int
copy_field(const struct cats_field *f, void *slot, struct cats_arena *a)
{
	switch (f->kind) {
	case CATS_F_TEXT:
		return copy_text(slot, a);
	case CATS_F_BYTES: {
		struct cats_bytes *b = slot;
		if (b->p != NULL && (b->p = cats_arena_memdup(a, b->p,
		    b->n)) == NULL)
			return -1;
		return 0;
	}
	case CATS_F_MAP:
		return cats_struct_copy(f->sub, slot, slot, a);
	case CATS_F_KV: {
		struct cats_arr_kv *kv = slot;
		if (kv->n == 0)
			return 0;
		if ((kv->v = cats_arena_memdup(a, kv->v, kv->n *
		    sizeof(*kv->v))) == NULL)
			return -1;
		for (size_t k = 0; k < kv->n; k++)
			if (copy_text(&kv->v[k].k, a) < 0)
				return -1;
		return 0;
	}
	case CATS_F_ARR_U64:
	case CATS_F_ARR_TEXT:
	case CATS_F_ARR_ADDR:
	case CATS_F_ARR_MAP: {
		/* Every array is { pointer, count }, as decode_array fills. */
		struct cats_arr_u64 *arr = slot;
		size_t elem = array_elem_size(f);
		if (arr->n == 0)
			return 0;
		uint8_t *v = cats_arena_memdup(a, arr->v, arr->n * elem);
		if (v == NULL)
			return -1;
		arr->v = (uint64_t *)(void *)v;
		for (size_t k = 0; k < arr->n; k++) {
			void *e = v + k * elem;
			if (f->kind == CATS_F_ARR_TEXT ? copy_text(e, a) < 0 :
			    f->kind == CATS_F_ARR_MAP &&
			    cats_struct_copy(f->sub, e, e, a) < 0)
				return -1;
		}
		return 0;
	}
	default:
		return 0;
	}
}

int
cats_struct_copy(const struct cats_schema *s, void *dst, const void *src,
    struct cats_arena *a)
{
	if (dst != src)
		memcpy(dst, src, s->size);
	for (size_t i = 0; i < s->nfields; i++)
		if (copy_field(&s->fields[i], (char *)dst + s->fields[i].off,
		    a) < 0)
			return -1;
	return 0;
}

int
cats_rec_decode(struct cats_dec *d, const uint8_t *p, size_t n,
    struct cats_rec *r, struct cats_err *err)
{
	size_t used = 0;
	cats_arena_reset(&d->arena);
	if (n > d->lim.max_record)
		return cats_err_set(err, "", "record of %zu bytes exceeds the "
		    "%zu-byte limit", n, d->lim.max_record);
	int s = cats_scan(p, n, true, &d->lim, &d->toks, &d->arena, &used,
	    NULL, err);
	if (s != CATS_SCAN_OK)
		return -1;
	if (used != n)
		return cats_err_set(err, "", "%zu bytes after the record",
		    n - used);
	return cats_rec_from_toks(d, r, err);
}

/* ---- encoding ---- */

/*
 * The deterministic encoding: every head in its shortest form (RFC 8949
 * 4.2.1), as libcbor's cbor_encode_* write it.  A head is at most 9 bytes.
 */
#define HEAD 9

static inline size_t
put_head(uint8_t *p, unsigned major, uint64_t v)
{
	uint8_t m = (uint8_t)(major << 5);
	if (v < 24) {
		p[0] = (uint8_t)(m | v);
		return 1;
	}
	size_t k = v <= 0xff ? 1 : v <= 0xffff ? 2 : v <= 0xffffffff ? 4 : 8;
	p[0] = (uint8_t)(m | (k == 1 ? 24 : k == 2 ? 25 : k == 4 ? 26 : 27));
	for (size_t i = k; i > 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
	return 1 + k;
}

/* Room for n more bytes: a compare, and a call only to grow. */
static inline int
room_for(struct cats_buf *b, size_t n)
{
	return n <= b->cap - b->len ? 0 : cats_buf_reserve(b, n);
}

static inline int
enc_head(struct cats_buf *b, unsigned major, uint64_t n)
{
	if (room_for(b, HEAD) < 0)
		return -1;
	b->len += put_head(b->p + b->len, major, n);
	return 0;
}

static inline int
enc_uint(struct cats_buf *b, uint64_t v)
{
	return enc_head(b, 0, v);
}

/* A head and n bytes of major type 2 (bytes) or 3 (text). */
static inline int
enc_str(struct cats_buf *b, unsigned major, const void *s, size_t n)
{
	if (n > SIZE_MAX - HEAD || room_for(b, HEAD + n) < 0)
		return -1;
	b->len += put_head(b->p + b->len, major, n);
	if (n)
		memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

static inline int
enc_text(struct cats_buf *b, const char *s, size_t n)
{
	return enc_str(b, 3, s, n);
}

static inline int
enc_cstr(struct cats_buf *b, const char *s)
{
	return enc_text(b, s, strlen(s));
}

static inline int
enc_bytes(struct cats_buf *b, const uint8_t *p, size_t n)
{
	return enc_str(b, 2, p, n);
}

static int
enc_addr(struct cats_buf *b, const struct cats_ip *ip)
{
	char s[INET6_ADDRSTRLEN];
	size_t n = ip_text(ip, s);
	return enc_text(b, s, n);
}

static int enc_map(struct cats_buf *b, const struct cats_schema *s,
    const void *in, const struct cats_rec *rec, bool with_auth);

/* A field's name as a map key: a one-byte head (names are under 24
 * characters) and the padded name, copied whole. */
static inline int
enc_key(struct cats_buf *b, const struct cats_field *f)
{
	if (room_for(b, 1 + CATS_FIELD_NAME) < 0)
		return -1;
	uint8_t *p = b->p + b->len;
	p[0] = (uint8_t)(0x60 | f->namelen);
	memcpy(p + 1, f->name, CATS_FIELD_NAME);
	b->len += 1 + (size_t)f->namelen;
	return 0;
}

/*
 * Is field f of the struct at base present (to be encoded)?  For the kinds
 * not in schema.by_has: a pointer, an address family, a count.
 */
static inline bool
field_present(const struct cats_field *f, const void *base)
{
	const void *slot = (const char *)base + f->off;
	switch (f->kind) {
	case CATS_F_TEXT:
		return *(const char *const *)slot != NULL;
	case CATS_F_BYTES:
		return ((const struct cats_bytes *)slot)->p != NULL;
	case CATS_F_ADDR:
		return ((const struct cats_ip *)slot)->af != 0;
	default:
		return ((const struct cats_arr_u64 *)slot)->n != 0;
	}
}

static int
enc_field(struct cats_buf *b, const struct cats_field *f, const void *base)
{
	const void *slot = (const char *)base + f->off;
	switch (f->kind) {
	case CATS_F_U64:
		return enc_uint(b, *(const uint64_t *)slot);
	case CATS_F_BOOL:
		if (room_for(b, 1) < 0)
			return -1;
		b->p[b->len++] = *(const bool *)slot ? 0xf5 : 0xf4;
		return 0;
	case CATS_F_TEXT:
		return enc_cstr(b, *(const char *const *)slot);
	case CATS_F_BYTES: {
		const struct cats_bytes *x = slot;
		return enc_bytes(b, x->p, x->n);
	}
	case CATS_F_ENUM: {
		int v = *(const int *)slot;
		if (v < 0)
			return -1;
		for (int i = 0; i <= v; i++)
			if (f->enums[i] == NULL)
				return -1;
		return enc_cstr(b, f->enums[v]);
	}
	case CATS_F_ADDR:
		return enc_addr(b, slot);
	case CATS_F_MAP:
		return enc_map(b, f->sub, slot, NULL, false);
	case CATS_F_KV: {
		const struct cats_arr_kv *kv = slot;
		if (enc_head(b, 5, kv->n) < 0)
			return -1;
		for (size_t i = 0; i < kv->n; i++)
			if (enc_cstr(b, kv->v[i].k) < 0 ||
			    enc_uint(b, kv->v[i].v) < 0)
				return -1;
		return 0;
	}
	default: {
		const struct { const void *v; size_t n; } *arr = slot;
		if (enc_head(b, 4, arr->n) < 0)
			return -1;
		for (size_t i = 0; i < arr->n; i++) {
			int r;
			switch (f->kind) {
			case CATS_F_ARR_U64:
				r = enc_uint(b, ((const uint64_t *)arr->v)[i]);
				break;
			case CATS_F_ARR_TEXT:
				r = enc_cstr(b, ((const char *const *)arr->v)[i]);
				break;
			case CATS_F_ARR_ADDR:
				r = enc_addr(b, &((const struct cats_ip *)arr->v)[i]);
				break;
			default:
				r = enc_map(b, f->sub, (const char *)arr->v +
				    i * f->sub->size, NULL, false);
				break;
			}
			if (r < 0)
				return -1;
		}
		return 0;
	}
	}
}

static int
enc_auth(struct cats_buf *b, const struct cats_auth *a)
{
	uint8_t built[32];
	const uint8_t *prot = a->prot;
	size_t n = a->prot_len;
	if (n == 0) {
		prot = built;
		n = cats_cose_protected(a->alg, a->kid, built, sizeof(built));
	}
	if (n == 0 || enc_head(b, 4, 4) < 0 || enc_bytes(b, prot, n) < 0 ||
	    enc_head(b, 5, 0) < 0)
		return -1;
	if (room_for(b, 1) < 0)
		return -1;
	b->p[b->len++] = 0xf6;
	return enc_bytes(b, a->tag, a->tag_len);
}

static int
enc_map(struct cats_buf *b, const struct cats_schema *s, const void *in,
    const struct cats_rec *rec, bool with_auth)
{
	uint64_t has = *(const uint64_t *)in;
	uint64_t present = (has | s->required) & s->by_has;
	uint64_t all = s->nfields >= 64 ? UINT64_MAX :
	    (UINT64_C(1) << s->nfields) - 1;
	for (uint64_t m = all & ~s->by_has; m != 0; m &= m - 1) {
		size_t fi = (size_t)__builtin_ctzll(m);
		if (field_present(&s->fields[fi], in))
			present |= UINT64_C(1) << fi;
	}
	size_t n = (size_t)__builtin_popcountll(present);
	bool auth = rec != NULL && with_auth && rec->auth.alg != CATS_ALG_NONE;
	if (rec != NULL)
		n += 1 + auth;
	if (enc_head(b, 5, n) < 0)
		return -1;
	if (rec != NULL && (enc_text(b, "type", 4) < 0 ||
	    enc_cstr(b, s->name) < 0))
		return -1;
	for (; present != 0; present &= present - 1) {
		const struct cats_field *f =
		    &s->fields[__builtin_ctzll(present)];
		if (enc_key(b, f) < 0 || enc_field(b, f, in) < 0)
			return -1;
	}
	if (auth && (enc_text(b, "auth", 4) < 0 || enc_auth(b, &rec->auth) < 0))
		return -1;
	return 0;
}

int
cats_rec_encode(const struct cats_rec *r, struct cats_buf *out, bool with_auth)
{
	const struct cats_schema *s = cats_type_schema(r->type);
	if (s == NULL)
		return -1;
	size_t start = out->len;
	if (enc_map(out, s, &r->u, r, with_auth) < 0) {
		out->len = start;
		return -1;
	}
	return 0;
}

size_t
cats_cose_protected(int alg, const uint8_t kid[CATS_KID_LEN], uint8_t *out,
    size_t cap)
{
	/* {1: alg, 4: kid} */
	size_t n = 0;
	if (cap < 16)
		return 0;
	n += put_head(out + n, 5, 2);
	n += put_head(out + n, 0, 1);
	if (alg < 0)
		n += put_head(out + n, 1, (uint64_t)(-1 - (int64_t)alg));
	else
		n += put_head(out + n, 0, (uint64_t)alg);
	n += put_head(out + n, 0, 4);
	n += put_head(out + n, 2, CATS_KID_LEN);
	if (cap - n < CATS_KID_LEN)
		return 0;
	memcpy(out + n, kid, CATS_KID_LEN);
	return n + CATS_KID_LEN;
}

int
cats_rec_validate(const struct cats_rec *r, struct cats_err *err)
{
	struct cats_buf b = { 0 };
	struct cats_dec d;
	struct cats_rec copy;
	int rc;
	if (cats_rec_encode(r, &b, true) < 0) {
		cats_buf_free(&b);
		return cats_err_set(err, "", "record cannot be encoded "
		    "(an enum value out of range?)");
	}
	cats_dec_init(&d, NULL);
	rc = cats_rec_decode(&d, b.p, b.len, &copy, err);
	cats_dec_free(&d);
	cats_buf_free(&b);
	return rc;
}

const char *
cats_err_fmt(const struct cats_err *e, uint64_t index, char *buf, size_t len)
{
	if (e->field[0])
		snprintf(buf, len, "record %" PRIu64 ": %s: %s", index, e->field,
		    e->reason);
	else
		snprintf(buf, len, "record %" PRIu64 ": %s", index, e->reason);
	return buf;
}
