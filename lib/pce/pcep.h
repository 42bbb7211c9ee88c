/*
 * pcep.h - a PCEP speaker (RFC 5440), stateless, for cats-pce(1) as a PCE
 * and for the C-PS as a PCC: message framing, the objects of path
 * computation requests and replies, and the session state machine.
 *
 * Pure: no sockets, no clock.  Bytes go in (cats_pcep_sess_feed()), events
 * come out (cats_pcep_sess_next()), bytes to send accumulate in the
 * session's out buffer, and every timed behaviour takes `now` (ms).
 *
 * What is implemented.  Open, Keepalive, PCReq, PCRep, PCErr, Close and
 * (decoded only) PCNtf; the objects OPEN, RP, NO-PATH (with the
 * NO-PATH-VECTOR TLV), END-POINTS (IPv4, IPv6), BANDWIDTH, METRIC (IGP, TE,
 * hop count, and the path delay of RFC 8233; the bound and computed
 * flags), ERO (SR-ERO of RFC 8664 with node and adjacency SIDs and every
 * NAI type; SRv6-ERO of RFC 9603 with its SID structure; IPv4 and IPv6
 * prefix hops), LSPA (exclude-any, include-any, include-all), XRO (RFC
 * 5521: IPv4 and IPv6 prefixes, unnumbered interfaces, SRLGs, AS
 * numbers), OF (RFC 5541, decoded), PCEP-ERROR, CLOSE, NOTIFICATION; the
 * TLVs PATH-SETUP-TYPE (RFC 8408), PATH-SETUP-TYPE-CAPABILITY with the
 * SR-PCE-CAPABILITY (RFC 8664, MSD and the N and X flags; also accepted in
 * the older draft form, as a TLV of its own) and SRv6-PCE-CAPABILITY (RFC
 * 9603, MSD types and values) sub-TLVs, and STATEFUL-PCE-CAPABILITY
 * (recognized only: the speaker is stateless and never advertises it).
 * Not implemented: stateful PCEP (RFC 8231: PCRpt, PCUpd, PCInitiate),
 * SVEC synchronization, IRO, load balancing, reoptimization with RRO,
 * PCEPS (RFC 8253; the transport is the caller's).
 *
 * Bad input.  Every length is checked against the bytes that hold it and
 * against struct cats_pcep_limits before anything is allocated.  A broken
 * common header or a message over max_msg closes the session (CLOSE
 * reason 3, malformed message).  A message whose own length is sound but
 * whose objects are not is answered with PCErr 10/11 (malformed object,
 * RFC 8408) naming the requests it carried, and the session goes on unless
 * that happens more than max_malformed times a minute.  Per request:
 * unknown object class or type with the P flag, PCErr 3/1 or 3/2 (without
 * the P flag the object is ignored); a known object the speaker does not
 * support with the P flag, PCErr 4/1; RP without its P flag, 10/1;
 * END-POINTS missing, 6/3; RP missing, 6/1.  Unknown message types are
 * ignored and counted: more than max_unknown a minute close the session
 * (reason 5); so do unknown request references (reason 4).  Session
 * establishment follows RFC 5440 section 6 and Appendix A (PCErr 1/1 to
 * 1/7, 10/12, 10/21, 10/34 as the RFCs name them).
 */
#ifndef CATS_PCEP_H
#define CATS_PCEP_H

#include "pce/te.h"

#define CATS_PCEP_PORT 4189
#define CATS_PCEP_VERSION 1
#define CATS_PCEP_HDR 4			/* common header bytes */
#define CATS_PCEP_MSG_MAX 65535		/* the 16-bit Message-Length */

/* Message types (RFC 5440 section 6). */
enum {
	CATS_PCEP_OPEN = 1,
	CATS_PCEP_KEEPALIVE = 2,
	CATS_PCEP_PCREQ = 3,
	CATS_PCEP_PCREP = 4,
	CATS_PCEP_PCNTF = 5,
	CATS_PCEP_PCERR = 6,
	CATS_PCEP_CLOSE = 7,
};

/* Object classes. */
enum {
	CATS_PCEP_OC_OPEN = 1,
	CATS_PCEP_OC_RP = 2,
	CATS_PCEP_OC_NOPATH = 3,
	CATS_PCEP_OC_ENDPOINTS = 4,
	CATS_PCEP_OC_BANDWIDTH = 5,
	CATS_PCEP_OC_METRIC = 6,
	CATS_PCEP_OC_ERO = 7,
	CATS_PCEP_OC_RRO = 8,
	CATS_PCEP_OC_LSPA = 9,
	CATS_PCEP_OC_IRO = 10,
	CATS_PCEP_OC_SVEC = 11,
	CATS_PCEP_OC_NOTIFICATION = 12,
	CATS_PCEP_OC_ERROR = 13,
	CATS_PCEP_OC_LOAD_BALANCING = 14,
	CATS_PCEP_OC_CLOSE = 15,
	CATS_PCEP_OC_XRO = 17,
	CATS_PCEP_OC_OF = 21,
};

/* TLV types. */
enum {
	CATS_PCEP_TLV_NOPATH_VECTOR = 1,
	CATS_PCEP_TLV_STATEFUL = 16,
	CATS_PCEP_TLV_SR_CAP = 26,
	CATS_PCEP_TLV_SRV6_CAP = 27,
	CATS_PCEP_TLV_PST = 28,
	CATS_PCEP_TLV_PST_CAP = 34,
};

/* Path setup types (RFC 8408, 8664, 9603). */
enum {
	CATS_PCEP_PST_RSVP = 0,
	CATS_PCEP_PST_SR = 1,
	CATS_PCEP_PST_SRV6 = 3,
};

/* METRIC types (RFC 5440, 8664, 8233). */
enum {
	CATS_PCEP_MT_IGP = 1,
	CATS_PCEP_MT_TE = 2,
	CATS_PCEP_MT_HOPS = 3,
	CATS_PCEP_MT_SID_DEPTH = 11,
	CATS_PCEP_MT_DELAY = 12,	/* microseconds */
};

/* NO-PATH-VECTOR TLV bits (RFC 5440 section 7.5). */
#define CATS_PCEP_NPV_PCE_UNAVAILABLE 0x1u
#define CATS_PCEP_NPV_UNKNOWN_DST 0x2u
#define CATS_PCEP_NPV_UNKNOWN_SRC 0x4u

/* RP flags (the low bits of the 32-bit flags field). */
#define CATS_PCEP_RP_PRI 0x07u
#define CATS_PCEP_RP_R 0x08u
#define CATS_PCEP_RP_B 0x10u
#define CATS_PCEP_RP_O 0x20u

/* SR-ERO flags (RFC 8664 section 4.3.1) and SRv6-ERO flags (RFC 9603). */
#define CATS_PCEP_SR_M 0x001u
#define CATS_PCEP_SR_C 0x002u
#define CATS_PCEP_SR_S 0x004u
#define CATS_PCEP_SR_F 0x008u
#define CATS_PCEP_SRV6_S 0x001u
#define CATS_PCEP_SRV6_F 0x002u
#define CATS_PCEP_SRV6_T 0x004u
#define CATS_PCEP_SRV6_V 0x008u
/* SR-PCE-CAPABILITY flags; SRv6-PCE-CAPABILITY N flag. */
#define CATS_PCEP_SRCAP_X 0x01u
#define CATS_PCEP_SRCAP_N 0x02u
#define CATS_PCEP_SRV6CAP_N 0x0002u

/* ERO and XRO subobject types. */
enum {
	CATS_PCEP_SO_IPV4 = 1,
	CATS_PCEP_SO_IPV6 = 2,
	CATS_PCEP_SO_UNNUM = 4,
	CATS_PCEP_SO_AS = 32,
	CATS_PCEP_SO_SRLG = 34,
	CATS_PCEP_SO_SR = 36,
	CATS_PCEP_SO_SRV6 = 40,
};

/* NAI types (RFC 8664 section 4.3.1). */
enum {
	CATS_PCEP_NAI_ABSENT = 0,
	CATS_PCEP_NAI_IPV4_NODE = 1,
	CATS_PCEP_NAI_IPV6_NODE = 2,
	CATS_PCEP_NAI_IPV4_ADJ = 3,
	CATS_PCEP_NAI_IPV6_ADJ = 4,
	CATS_PCEP_NAI_UNNUM_ADJ = 5,
	CATS_PCEP_NAI_IPV6_LL_ADJ = 6,
};

/* XRO subobject attribute (RFC 5521). */
enum {
	CATS_PCEP_XA_INTERFACE = 0,
	CATS_PCEP_XA_NODE = 1,
	CATS_PCEP_XA_SRLG = 2,
};

/* PCEP-ERROR types and the values this speaker sends or names. */
enum {
	CATS_PCEP_ET_SESSION = 1,	/* session establishment failure */
	CATS_PCEP_ET_CAPABILITY = 2,
	CATS_PCEP_ET_UNKNOWN_OBJ = 3,
	CATS_PCEP_ET_UNSUPP_OBJ = 4,
	CATS_PCEP_ET_POLICY = 5,
	CATS_PCEP_ET_MISSING = 6,	/* mandatory object missing */
	CATS_PCEP_ET_UNKNOWN_REF = 8,	/* unknown request reference */
	CATS_PCEP_ET_SECOND = 9,	/* attempt to establish a 2nd session */
	CATS_PCEP_ET_INVALID = 10,	/* reception of an invalid object */
	CATS_PCEP_ET_INVALID_OP = 19,
	CATS_PCEP_ET_PST = 21,		/* invalid path setup type */
};
enum {
	/* type 1 */
	CATS_PCEP_EV_BAD_OPEN = 1,	/* invalid Open or a non-Open message */
	CATS_PCEP_EV_OPENWAIT = 2,	/* no Open before OpenWait expired */
	CATS_PCEP_EV_NONNEG = 3,	/* unacceptable, non-negotiable */
	CATS_PCEP_EV_NEG = 4,		/* unacceptable but negotiable */
	CATS_PCEP_EV_SECOND_OPEN = 5,	/* second Open still unacceptable */
	CATS_PCEP_EV_PCERR_UNACC = 6,	/* PCErr proposing unacceptable */
	CATS_PCEP_EV_KEEPWAIT = 7,	/* no Keepalive/PCErr before KeepWait */
	CATS_PCEP_EV_VERSION = 8,	/* PCEP version not supported */
	/* types 3, 4 */
	CATS_PCEP_EV_CLASS = 1,		/* unrecognized/unsupported class */
	CATS_PCEP_EV_TYPE = 2,		/* unrecognized/unsupported type */
	CATS_PCEP_EV_PARAM = 4,		/* unsupported parameter */
	/* type 6 */
	CATS_PCEP_EV_RP_MISSING = 1,
	CATS_PCEP_EV_EP_MISSING = 3,
	/* type 10 */
	CATS_PCEP_EV_P_FLAG = 1,
	CATS_PCEP_EV_BAD_LABEL = 2,
	CATS_PCEP_EV_SR_COUNT = 3,	/* too many SR-ERO subobjects */
	CATS_PCEP_EV_SR_MIX = 5,	/* ERO mixes SR-ERO and others */
	CATS_PCEP_EV_SR_ABSENT = 6,	/* both SID and NAI absent */
	CATS_PCEP_EV_MALFORMED = 11,	/* malformed object (RFC 8408) */
	CATS_PCEP_EV_SR_CAP_MISSING = 12,
	CATS_PCEP_EV_SR_NAI_TYPE = 13,
	CATS_PCEP_EV_MSD_ZERO = 21,
	CATS_PCEP_EV_SRV6_CAP_MISSING = 34,
	CATS_PCEP_EV_SRV6_STRUCT = 37,
	CATS_PCEP_EV_SRV6_COUNT = 39,
	CATS_PCEP_EV_SRV6_NAI_TYPE = 40,
	CATS_PCEP_EV_SRV6_ABSENT = 41,
	CATS_PCEP_EV_SRV6_MIX = 42,
	/* type 21 */
	CATS_PCEP_EV_PST_UNSUPP = 1,
	CATS_PCEP_EV_PST_MISMATCH = 2,
};

/* CLOSE reasons (RFC 5440 section 7.17). */
enum {
	CATS_PCEP_CLOSE_NONE = 1,	/* no explanation provided */
	CATS_PCEP_CLOSE_DEADTIMER = 2,
	CATS_PCEP_CLOSE_MALFORMED = 3,
	CATS_PCEP_CLOSE_UNKNOWN_REQ = 4,
	CATS_PCEP_CLOSE_UNKNOWN_MSG = 5,
};

/* Names of message types, error types/values and close reasons, for
 * logs and audit lines ("?" when unknown). */
const char *cats_pcep_msg_name(int type);
const char *cats_pcep_error_name(int type, int value);
const char *cats_pcep_close_name(int reason);

/*
 * Caps on what one message may hold, checked before anything is
 * allocated.  cats_pcep_limits_default: max_msg 16384 (configurable up to
 * CATS_PCEP_MSG_MAX), 512 objects, 64 requests or replies, 64 subobjects
 * per ERO or XRO, 16 TLVs per object, 8 METRIC objects per request, 16
 * PCEP-ERROR objects per PCErr.
 */
struct cats_pcep_limits {
	size_t max_msg;
	size_t max_objs;
	size_t max_reqs;
	size_t max_subobjs;
	size_t max_tlvs;
	size_t max_metrics;
	size_t max_errors;
};
extern const struct cats_pcep_limits cats_pcep_limits_default;

/* ---- the outcome of decoding or processing ---- */

/* A status: what the speaker answers, or answered, and why. */
enum {
	CATS_PCEP_ST_OK = 0,
	CATS_PCEP_ST_PCERR = 1,		/* answered: PCErr err_type/value */
	CATS_PCEP_ST_CLOSE = 2,		/* the session closes (close_reason) */
	CATS_PCEP_ST_IGNORED = 3,	/* message ignored (unknown type) */
	CATS_PCEP_ST_NOMEM = 4,
};

struct cats_pcep_status {
	int code;			/* CATS_PCEP_ST_* */
	uint8_t err_type, err_value;	/* PCERR, or the one before CLOSE */
	uint8_t close_reason;		/* Close sent with it; 0: none */
	bool has_req;
	uint32_t req_id;		/* the request it is about */
	size_t off;			/* byte offset in the message */
	const char *why;		/* one phrase for logs */
};

/* Fill st: code, PCEP-ERROR type and value, the phrase; the rest zero. */
void cats_pcep_st(struct cats_pcep_status *st, int code, uint8_t type,
    uint8_t value, const char *why);

/* ---- the objects ---- */

struct cats_pcep_msd {
	uint8_t type, value;
};

/* An OPEN object and the capabilities its TLVs carry. */
struct cats_pcep_open {
	uint8_t version;		/* 1 */
	uint8_t keepalive, deadtimer;	/* seconds; 0: none */
	uint8_t sid;			/* session id */
	bool stateful;			/* STATEFUL-PCE-CAPABILITY seen */
	bool pst_cap;			/* PATH-SETUP-TYPE-CAPABILITY present */
	uint8_t npsts;
	uint8_t psts[8];
	bool sr;			/* SR-PCE-CAPABILITY present */
	bool sr_legacy;			/* ... as an OPEN TLV (draft form) */
	uint8_t sr_flags;		/* CATS_PCEP_SRCAP_N, _X */
	uint8_t msd;
	bool srv6;			/* SRv6-PCE-CAPABILITY present */
	uint16_t srv6_flags;		/* CATS_PCEP_SRV6CAP_N */
	uint8_t nsrv6_msd;
	struct cats_pcep_msd srv6_msd[8];
};

struct cats_pcep_rp {
	uint32_t flags;			/* priority, R, B, O, ... */
	uint32_t id;			/* Request-ID-number */
	bool p;				/* the object's P flag */
	bool has_pst;
	uint8_t pst;			/* PATH-SETUP-TYPE TLV */
};

struct cats_pcep_endpoints {
	struct cats_ip src, dst;	/* both IPv4 or both IPv6 */
};

struct cats_pcep_metric {
	uint8_t type;			/* CATS_PCEP_MT_* */
	bool bound;			/* B: an upper bound */
	bool computed;			/* C: the computed value is wanted */
	float value;
};

struct cats_pcep_lspa {
	uint32_t exclude_any, include_any, include_all;
	uint8_t setup, hold;
	bool local_prot;		/* L */
};

/* One XRO subobject. */
struct cats_pcep_xsub {
	uint8_t type;			/* CATS_PCEP_SO_* */
	bool desirable;			/* X: 1 desirable, 0 mandatory */
	uint8_t attr;			/* CATS_PCEP_XA_* */
	struct cats_ip addr;		/* prefix; unnumbered: router id */
	uint8_t plen;
	uint32_t ifid;			/* unnumbered interface id */
	uint32_t srlg;
	uint32_t asn;			/* 2 or 4 octets */
};

struct cats_pcep_xro {
	uint16_t flags;			/* F = 0x0001 */
	size_t n;
	struct cats_pcep_xsub *v;
};

/*
 * One ERO subobject: an SR-ERO (type 36), an SRv6-ERO (40), or an IPv4 /
 * IPv6 prefix hop (1, 2).  The NAI: node types use local; adjacency
 * types local and remote (and the interface ids for types 5 and 6).
 */
struct cats_pcep_hop {
	uint8_t type;
	bool loose;			/* L */
	uint8_t nt;			/* NAI type */
	uint16_t flags;			/* the 12 flag bits */
	bool has_sid;
	uint32_t sid;			/* M: label << 12 | TC | S | TTL */
	uint8_t sid6[16];		/* SRv6 */
	uint16_t behavior;		/* SRv6 behavior (0xffff opaque) */
	bool has_nai;
	struct cats_ip local, remote;
	uint32_t local_if, remote_if;
	bool has_struct;		/* SRv6 SID structure */
	uint8_t lb, ln, fun, arg;
	uint8_t plen;			/* prefix hops */
};

/* The attribute objects of a request, or of a reply (a path's
 * attributes, or with NO-PATH's C flag the constraints not met). */
struct cats_pcep_attrs {
	bool has_bw;
	uint8_t bw_type;		/* 1 requested, 2 of an existing LSP */
	float bw;			/* bytes per second */
	size_t nmetrics;
	struct cats_pcep_metric *metrics;
	bool has_lspa;
	struct cats_pcep_lspa lspa;
	bool has_xro;
	struct cats_pcep_xro xro;
	bool has_of;
	uint16_t of;			/* objective function code */
};

/* One request of a PCReq: st says whether it was well formed. */
struct cats_pcep_req {
	struct cats_pcep_rp rp;
	bool has_ep;
	struct cats_pcep_endpoints ep;
	struct cats_pcep_attrs a;
	struct cats_pcep_status st;
};

/* One reply of a PCRep. */
struct cats_pcep_rep {
	struct cats_pcep_rp rp;
	bool nopath;
	uint8_t ni;			/* 0 no path, 1 PCE chain broken */
	bool nopath_c;			/* C: the unmet constraints follow */
	uint32_t vector;		/* NO-PATH-VECTOR bits (0: no TLV) */
	bool has_ero;
	size_t nero;
	struct cats_pcep_hop *ero;
	struct cats_pcep_attrs a;
};

struct cats_pcep_error {
	uint8_t type, value;
};

struct cats_pcep_err {
	size_t nids;
	uint32_t *ids;			/* request ids the errors name */
	size_t n;
	struct cats_pcep_error *v;
	bool has_open;			/* 1/4: the Open proposed */
	struct cats_pcep_open open;
};

/* A decoded message.  Arrays live in the arena given to the decoder. */
struct cats_pcep_msg {
	uint8_t type;
	uint16_t len;
	struct cats_pcep_open open;
	size_t nreqs;
	struct cats_pcep_req *reqs;
	size_t nreps;
	struct cats_pcep_rep *reps;
	struct cats_pcep_err err;
	size_t nntfs;
	struct cats_pcep_error *ntfs;	/* NOTIFICATION type/value pairs */
	size_t nntf_ids;
	uint32_t *ntf_ids;
	uint8_t close_reason;
};

/* ---- framing and the codec ---- */

/*
 * Frame the message at the head of p[0..n): returns 0 when more bytes are
 * needed, the message length when it is complete, or -1 with st (CLOSE,
 * malformed) when the common header is broken (version not 1, length
 * below 4 or over lim->max_msg).  Only the 4 header bytes are read.
 */
long cats_pcep_frame(const uint8_t *p, size_t n,
    const struct cats_pcep_limits *lim, struct cats_pcep_status *st);

/*
 * Decode one framed message p[0..n).  Returns 0 with m filled (a PCReq's
 * requests each carry their own status), or -1 with st saying what the
 * speaker answers.  Unknown message types return -1 with ST_IGNORED.
 */
int cats_pcep_decode(const uint8_t *p, size_t n,
    const struct cats_pcep_limits *lim, struct cats_pcep_msg *m,
    struct cats_arena *arena, struct cats_pcep_status *st);

/*
 * Append one message to out.  Each returns 0, or -1 when the message would
 * exceed CATS_PCEP_MSG_MAX, an object its 16-bit length, or a field its
 * range (out is left as it was).
 */
int cats_pcep_put_open(struct cats_buf *out, const struct cats_pcep_open *o);
int cats_pcep_put_keepalive(struct cats_buf *out);
int cats_pcep_put_close(struct cats_buf *out, uint8_t reason);
/* PCErr: the request ids (RP objects, P clear), then one PCEP-ERROR per
 * error, then the proposed Open (may be NULL). */
int cats_pcep_put_pcerr(struct cats_buf *out, const uint32_t *ids,
    size_t nids, const struct cats_pcep_error *errs, size_t nerrs,
    const struct cats_pcep_open *open);
int cats_pcep_put_pcreq(struct cats_buf *out, const struct cats_pcep_req *r,
    size_t n);
int cats_pcep_put_pcrep(struct cats_buf *out, const struct cats_pcep_rep *r,
    size_t n);

/* ---- the session ---- */

enum cats_pcep_state {
	CATS_PCEP_S_OPENWAIT,	/* waiting for the peer's Open */
	CATS_PCEP_S_KEEPWAIT,	/* the peer's Open accepted */
	CATS_PCEP_S_UP,
	CATS_PCEP_S_CLOSED,
};
const char *cats_pcep_state_name(int s);

struct cats_pcep_conf {
	bool pce;			/* a PCE (answers PCReqs), or a PCC */
	uint8_t keepalive;		/* ours, seconds (30) */
	uint8_t deadtimer;		/* ours, advertised (120) */
	/* Acceptable values in the peer's Open (1..255 and 1..240); outside,
	 * PCErr 1/4 proposes ours, once. */
	uint8_t peer_ka_min, peer_ka_max;
	uint8_t peer_dt_min, peer_dt_max;
	uint32_t openwait_ms;		/* 60000 */
	uint32_t keepwait_ms;		/* 60000 */
	uint8_t sid;			/* our session id */
	bool sr, srv6;			/* path setup types offered */
	uint8_t msd;			/* PCC: SR MSD (0: no limit, X) */
	uint8_t srv6_msd;		/* PCC: SRH Max SL (MSD type 41) */
	bool sr_legacy;			/* PCC: the draft SR cap TLV too */
	unsigned max_unknown;		/* unknown msgs or refs a minute */
	unsigned max_malformed;		/* malformed messages a minute (5) */
	struct cats_pcep_limits lim;
};

void cats_pcep_conf_default(struct cats_pcep_conf *c, bool pce);

struct cats_pcep_counters {
	uint64_t rx_msgs, tx_msgs, rx_bytes, tx_bytes;
	uint64_t rx_reqs, rx_reps, rx_errs, tx_reqs, tx_reps, tx_errs;
	uint64_t keepalives_rx, keepalives_tx;
	uint64_t malformed, unknown_msgs, unknown_refs, bad_reqs;
};

struct cats_pcep_sess {
	struct cats_pcep_conf conf;
	int state;
	bool remote_ok;			/* the peer's Open accepted */
	bool local_ok;			/* our Open acknowledged */
	unsigned open_retry;		/* unacceptable Opens received */
	unsigned renegotiated;		/* our Open changed on the peer's 1/4 */
	struct cats_pcep_open local, peer;
	uint8_t ka_tx;			/* our keepalive interval in force */
	uint8_t dt_rx;			/* the peer's deadtimer in force */
	uint64_t t_start, t_keepwait, t_rx, t_tx;
	uint64_t win_start;		/* the minute the rate counters count */
	unsigned win_unknown, win_refs, win_malformed;
	struct cats_pcep_status closed_st;	/* why the session closed */
	struct cats_buf in, out;	/* bytes received, bytes to send */
	struct cats_arena arena;	/* the last message delivered */
	struct cats_pcep_msg msg;
	struct cats_pcep_counters c;
};

/* Session events. */
enum {
	CATS_PCEP_EV_NONE,
	CATS_PCEP_EV_UP,	/* the session is up */
	CATS_PCEP_EV_MSG,	/* a PCReq, PCRep, PCErr or PCNtf in ev->msg */
	CATS_PCEP_EV_ANSWERED,	/* the speaker answered by itself (ev->st) */
	CATS_PCEP_EV_CLOSED,	/* the session is over (ev->st); flush out */
};

struct cats_pcep_ev {
	int kind;
	const struct cats_pcep_msg *msg;	/* valid until the next call */
	struct cats_pcep_status st;
};

/* Start a session on a connection that just opened: our Open is queued
 * in s->out.  Returns 0, or -1 when out of memory. */
int cats_pcep_sess_init(struct cats_pcep_sess *s,
    const struct cats_pcep_conf *c, uint64_t now);
void cats_pcep_sess_free(struct cats_pcep_sess *s);

/* Bytes received.  At most lim.max_msg bytes wait in s->in beyond those
 * cats_pcep_sess_next() has not consumed: -1 when n would exceed that
 * (call next until it returns 0, then feed again). */
int cats_pcep_sess_feed(struct cats_pcep_sess *s, const void *p, size_t n);
/* The peer closed the connection (EOF or error): the session is over. */
void cats_pcep_sess_eof(struct cats_pcep_sess *s, struct cats_pcep_ev *ev);

/*
 * Run the timers (OpenWait, KeepWait, dead timer, keepalives due), then
 * process one received message.  Returns 1 with an event, 0 when there is
 * nothing more to do until more bytes or cats_pcep_sess_deadline().
 */
int cats_pcep_sess_next(struct cats_pcep_sess *s, uint64_t now,
    struct cats_pcep_ev *ev);
/* When cats_pcep_sess_next() must run again (UINT64_MAX: only on input). */
uint64_t cats_pcep_sess_deadline(const struct cats_pcep_sess *s);

/* Queue messages (only when the session is up; -1 otherwise or when
 * the message cannot be encoded). */
int cats_pcep_sess_send_reqs(struct cats_pcep_sess *s,
    const struct cats_pcep_req *r, size_t n, uint64_t now);
int cats_pcep_sess_send_reps(struct cats_pcep_sess *s,
    const struct cats_pcep_rep *r, size_t n, uint64_t now);
int cats_pcep_sess_send_err(struct cats_pcep_sess *s, const uint32_t *ids,
    size_t nids, uint8_t type, uint8_t value, uint64_t now);
/* Close the session with a Close message (reason). */
void cats_pcep_sess_close(struct cats_pcep_sess *s, uint8_t reason,
    uint64_t now, struct cats_pcep_ev *ev);
/*
 * A reply or notification named a request this side does not know (a PCC
 * calls this for a PCRep of no pending request): PCErr 8 is queued, and
 * more than max_unknown a minute close the session (reason 4, returns 1
 * with ev CLOSED).  Returns 0 when the session goes on.
 */
int cats_pcep_sess_unknown_ref(struct cats_pcep_sess *s, uint32_t id,
    uint64_t now, struct cats_pcep_ev *ev);

/* ---- PCEP and the path records (pcep_rec.c) ---- */

/*
 * Names: node ids and link ids of a TE database as PCEP sees them.  A node
 * is its router id (cats-topology(5) router_id); a node without one, and a
 * node whose id is itself an address, is named by that address.  A link
 * is an unnumbered interface (RFC 3477, 5521): the router id of its
 * source node and the interface id 1 + the link's index in the database
 * (both directions of a link share it).  The index is built once (sorted
 * router ids); rebuild it when the database is replaced.
 */
struct cats_pcep_names;
struct cats_pcep_names *cats_pcep_names_new(const struct cats_te *te);
void cats_pcep_names_free(struct cats_pcep_names *n);
/* Node index of an address, or CATS_TE_NONE. */
uint32_t cats_pcep_names_node(const struct cats_pcep_names *n,
    const struct cats_ip *a);
/* The address of node v: false when it has none. */
bool cats_pcep_names_addr(const struct cats_pcep_names *n, uint32_t v,
    struct cats_ip *a);

/*
 * PCE side: a request as a path-req for cats_pce_answer().  The result
 * has txn (the request id, or 1 when it is 0), ts (now), headend and
 * endpoint (node ids; an address no node has becomes its text, which
 * cats_pce_answer() answers no-source / no-destination), dataplane (PST 1
 * srmpls, 3 srv6, 0 or absent ip) and constraints: METRIC without B is the
 * metric minimized (IGP igp, TE te, hop count hops, delay delay), with B a
 * bound (hop count max_hops, delay max_delay_us); BANDWIDTH (bytes/s) is
 * min_bw (bit/s); LSPA the affinities; XRO the exclusions (mandatory and
 * desirable alike; unknown addresses name nothing to avoid).  No decision:
 * the path-req is an input of cats_pce_answer(), not a record.  Returns 0,
 * or -1 with st (PCERR) when the request cannot be honoured as asked (a
 * mandatory XRO subobject of a kind not supported: 4/4; a bound or a
 * metric of a type not supported with the P flag: 4/4; a PST the PCE does
 * not offer: 21/1).  Strings and arrays live in arena.
 */
int cats_pcep_to_path_req(const struct cats_pcep_req *r,
    const struct cats_te *te, const struct cats_pcep_names *names,
    uint64_t now, struct cats_path_req *out, struct cats_arena *arena,
    struct cats_pcep_status *st);

/*
 * PCE side: the reply to request r from the answer rep (cats_pce_answer()).
 * ok: the ERO (SR-ERO or SRv6-ERO subobjects, NAIs from names; prefix hops
 * of the path's router ids for ip and ipip) and METRIC objects with the
 * cost in the minimized metric, the hop count and the delay.  Otherwise
 * NO-PATH, the reason mapped as cats-pce(1) documents:
 *   no-source            NO-PATH-VECTOR unknown source
 *   no-destination       unknown destination
 *   no-database, budget, path-too-long, deadline
 *                        PCE currently unavailable
 *   no-path, pruned topology, same-node
 *                        NI 0, no flags
 *   no-path, pruned X    C flag and the constraint X of the request:
 *                        XRO (exclude_nodes, _links, _srlgs: the
 *                        exclusions of that kind), LSPA (exclude_any,
 *                        include_any, include_all: that field alone),
 *                        BANDWIDTH (min_bw), METRIC hop count (max_hops)
 *                        or delay (max_delay) with B
 *   no-path, pruned dataplane, headend-dataplane, endpoint-dataplane,
 *   ecmp, no-sid         C flag, no constraint object
 *   sid-depth            C flag, METRIC SID depth (11) with B, the MSD
 * Returns 0, or -1 when out of memory.
 */
int cats_pcep_from_path_rep(const struct cats_path_rep *rep,
    const struct cats_pcep_req *r, const struct cats_te *te,
    const struct cats_pcep_names *names, struct cats_pcep_rep *out,
    struct cats_arena *arena);

/*
 * PCC side: the request for path-req rq, with request id id: RP (PST 1
 * for srmpls, 3 for srv6, none for ip and ipip), END-POINTS, the
 * objective METRIC (te when rq names none) with C, the bounds as METRIC
 * with B, BANDWIDTH, LSPA, XRO (nodes as host prefixes, links as
 * unnumbered interfaces, SRLGs; exclusions naming nothing in te are
 * dropped, as cats-pce drops them).  Node ids become addresses through
 * names (without te, a node id that is an address stands for itself).
 * Returns 0, or -1 with st->why the reason the PCC answers with itself,
 * without asking: "no-source" or "no-destination" (a node with no
 * address), or a phrase (an exclusion that cannot be written).
 */
int cats_pcep_from_path_req(const struct cats_path_req *rq, uint32_t id,
    const struct cats_te *te, const struct cats_pcep_names *names,
    struct cats_pcep_req *out, struct cats_arena *arena,
    struct cats_pcep_status *st);

/*
 * PCC side: the path-rep for reply r to the request rq (which gives txn,
 * decision, flow, ingress, deadline and data plane back).  The reverse of
 * the mapping above: the reason of a NO-PATH is the one the table names
 * first for its form (PCE currently unavailable: error, reason
 * pce-unavailable; C flag without objects: no-path, pruned dataplane).
 * A reply after rq's deadline is an error, reason deadline.  A reply that
 * cannot be read as a path (an ERO of the wrong kind for the data plane, a
 * segment without a label or SID, over 32 segments) is an error, reason
 * bad-reply.  names and te may be NULL (segments then carry no node
 * names).  Returns 0, or -1 when out of memory.
 */
int cats_pcep_to_path_rep(const struct cats_pcep_rep *r,
    const struct cats_path_req *rq, const struct cats_te *te,
    const struct cats_pcep_names *names, uint64_t now, struct cats_rec *out,
    struct cats_arena *arena);

/*
 * What of a path-rep survives a PCEP exchange: out becomes rep as
 * cats_pcep_to_path_rep() rebuilds it from cats_pcep_from_path_rep(): the
 * reason and pruned mapped through the table (deadline stays: the PCC
 * keeps its own), cost, delay_us and hops through 32-bit floats, no path,
 * path_id or gen, and on failure no segments, metrics or endpoint_addr.
 * Segments keep their node names when every node has an address or an
 * SRv6 SID.  For tests holding the two interfaces equal.
 */
void cats_pcep_rep_project(const struct cats_path_rep *rep,
    struct cats_path_rep *out);

#endif
