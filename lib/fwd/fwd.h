/*
 * fwd.h - the flow and binding table of a CATS-Forwarder (001 §8).
 *
 * A binding from the binding manager has a forward half (client-side match,
 * new destination, encapsulation toward the egress) and a reverse half
 * (service-side match, source to restore, return path).  A forwarder plays
 * the ingress role for bindings whose "ingress" is its id and the egress
 * role for those whose "egress" is its id (or both).  Each binding is
 * indexed under up to four keys:
 *
 *   CATS_DIR_IN_FWD   client packets at the ingress (match = fwd.match)
 *   CATS_DIR_IN_REV   decapsulated return packets at the ingress (rev.match)
 *   CATS_DIR_EG_FWD   decapsulated packets at the egress (fwd.match with the
 *                     destination replaced by the locator)
 *   CATS_DIR_EG_REV   instance replies at the egress (rev.match)
 *
 * A miss at CATS_DIR_IN_FWD creates a pending record: bounded packets per
 * flow, a global pool of held packets, a cap on pending flows in all and per
 * client (hashed buckets).  Later packets of the same key join it; one
 * request per pending record, never two selections for one flow.  A binding
 * install releases the held packets; an error or the deadline drops them.
 *
 * Ownership epochs: the highest manager epoch seen fences every binding
 * message of a lower epoch; per binding, a lower version of the same epoch
 * is refused.  Library code never reads the clock: `now` is in ms.
 */
#ifndef CATS_FWD_H
#define CATS_FWD_H

#include "base/htab.h"
#include "fwd/pkt.h"
#include "rec/rec.h"

enum { CATS_DIR_IN_FWD, CATS_DIR_IN_REV, CATS_DIR_EG_FWD, CATS_DIR_EG_REV,
	CATS_DIR__N };

/* A flow key; memcmp-comparable (always built with cats_fkey_*). */
struct cats_fkey {
	uint8_t af, proto, wild, dir;	/* wild: 1 any sport, 2 any dport */
	uint16_t sport, dport;
	uint8_t src[16], dst[16];
	uint64_t tenant;		/* hash of the tenant, 0 if none */
};
#define CATS_WILD_SPORT 1
#define CATS_WILD_DPORT 2

/* A held packet. */
struct cats_held {
	struct cats_held *next;
	uint32_t port;		/* input port of the caller */
	uint32_t len;
	uint64_t arrived;	/* ms */
	/* The flow's first packet (the head): the caller's microseconds at
	 * its arrival and at its request (path.h clock_us; 0: unknown). */
	uint64_t arrived_us, asked_us;
	uint8_t data[];
};

struct cats_pend {
	struct cats_pend *older, *newer;	/* by creation (= deadline) */
	struct cats_fkey key;
	uint64_t txn;
	uint64_t created, deadline;
	struct cats_held *head, *tail;
	unsigned npkts;
	uint32_t bucket;	/* per-client bucket */
	bool sent;		/* request sent */
	bool established;	/* first packet was a TCP non-SYN */
	struct cats_req_meta meta;
};

/*
 * TCP connection state of a binding (tcp.c), tracked from the flags of the
 * packets both forwarders see in both directions ("orig": the client's,
 * "reply": the instance's), as conntrack and IPVS do but without sequence
 * numbers.  Every state has an idle timeout (struct cats_fwd_conf tcp_ms):
 * the binding expires when no packet came for that long in that state.
 */
enum cats_tcps {
	CATS_TCPS_NONE,		/* installed, no TCP packet yet */
	CATS_TCPS_SYN_SENT,	/* the client's SYN */
	CATS_TCPS_SYN_RECV,	/* the instance's SYN-ACK */
	CATS_TCPS_ESTABLISHED,	/* the client's ACK of it, or picked up */
	CATS_TCPS_FIN_WAIT,	/* a FIN from one side */
	CATS_TCPS_TIME_WAIT,	/* FINs from both sides */
	CATS_TCPS_CLOSE,	/* a RST */
	CATS_TCPS__N
};
extern const char *const cats_tcps_names[];
#define CATS_TCP_FIN_ORIG	1
#define CATS_TCP_FIN_REPLY	2
/* A new SYN of the client on a binding that is closing (tcp.c). */
#define CATS_TCP_REOPEN		(-1)

struct cats_fbind {
	uint64_t id, version, epoch, txn;
	uint64_t idle_ms, hard_ms, installed, last;
	bool ingress, egress;
	/*
	 * Made here, not by the binding manager (ids from CATS_FWD_LOCAL_ID):
	 * fallback, the ingress bound a flow itself (fallback.h); learned,
	 * the egress learned the reverse of an unbound flow; reported, the
	 * binding manager was told of the fallback.
	 */
	bool fallback, learned, reported_fb;
	char *fb_egress;		/* fallback: the candidate's egress */
	uint8_t fkind, rkind;		/* CATS_DP_* forward and reverse */
	uint8_t tcp;			/* enum cats_tcps (TCP, tracked) */
	uint8_t tcp_fin;		/* CATS_TCP_FIN_* seen */
	struct cats_fkey keys[CATS_DIR__N];
	bool keyed[CATS_DIR__N];
	uint8_t af;			/* inner family */
	uint8_t locator[16];		/* forward: new destination */
	uint16_t port;			/* 0: unchanged */
	struct cats_encap enc;		/* forward: toward the egress */
	uint8_t restore[16];		/* reverse: source to restore */
	uint16_t restore_port;
	struct cats_encap renc;		/* reverse: toward the ingress */
	bool renc_learn;		/* take the ingress from outer sources */
	uint64_t pkts, bytes, rpkts, rbytes;
	uint64_t reported;		/* last activity report (ms) */
	uint64_t path_down_at;		/* last path-down report (ms), 0 */
	uint64_t rep_pkts;		/* pkts + rpkts at that report */
	char cs_id[CATS_ID + 1];
	/* The caller's fast path (fwd_fast.h): keys whose packets the kernel
	 * forwards and those it never can (bit per CATS_DIR_*), whether the
	 * binding waits to be offered, and the kernel's counters already added
	 * to pkts, bytes, rpkts, rbytes. */
	uint8_t fast, fast_never;
	bool fast_queued;
	uint64_t fast_pkts[CATS_DIR__N], fast_bytes[CATS_DIR__N];
};

/* The return tunnel destination of an ingress forwarder (--return). */
struct cats_fwd_ret {
	const char *id;			/* the ingress's node id */
	struct cats_ip addr;		/* its SRv6 SID or tunnel endpoint */
	uint32_t labels[CATS_PKT_MAX_SIDS];	/* or its SR-MPLS label stack */
	unsigned nlabels;
};

struct cats_fwd_conf {
	const char *id;			/* this forwarder's node id */
	unsigned pend_pkts_flow;	/* held packets per flow (8) */
	unsigned pend_pkts;		/* held packets in all (4096) */
	unsigned pend_flows;		/* pending flows in all (4096) */
	unsigned pend_client;		/* pending flows per client (64) */
	uint64_t pend_ms;		/* pending deadline (1000) */
	unsigned max_bindings;		/* (1048576) */
	size_t max_pkt;			/* largest packet held (65536) */
	uint8_t src4[4], src6[16];	/* outer sources */
	bool has_src4, has_src6;
	/* Return tunnels of bindings that name no reverse path, by their
	 * owner (the ingress); without one it is learned from the outer
	 * source of the flow's forward packets. */
	const struct cats_fwd_ret *ret;
	size_t nret;
	/*
	 * TCP connection tracking of bound TCP flows (on unless tcp_off), and
	 * the idle timeout of each state in ms (0: tcp.c's default; for
	 * ESTABLISHED, the binding's idle_ms, which this caps).
	 */
	bool tcp_off;
	uint64_t tcp_ms[CATS_TCPS__N];
	/* Outer IPv6 flow labels are 0 instead of the inner flow's. */
	bool flowlabel_off;
	/*
	 * SR-MPLS: pushed label stacks end with an explicit null; no_mpls:
	 * the core cannot carry MPLS (a TUN device), such bindings are
	 * refused.
	 */
	bool explicit_null, no_mpls;
	/*
	 * The encapsulations this forwarder does (--encaps, a bit per
	 * CATS_DP_*; 0: every one it can).  A binding that needs another,
	 * or more SIDs or labels than msd, or an outer family it has no
	 * source address of, is refused as unsupported-encap.
	 */
	uint32_t encaps;
	/* The most SRv6 SIDs or SR-MPLS labels it pushes, its advertised
	 * MSD (--msd; 1 to CATS_PKT_MAX_SIDS, 0: CATS_PKT_MAX_SIDS). */
	unsigned msd;
};

enum {
	CATS_PEND_NEW = 1,	/* new pending record: send a request */
	CATS_PEND_JOINED = 2,	/* joined an existing one */
};

/* Why a packet or a binding was refused; names in cats_fwd_reason_names. */
enum cats_fwd_reason {
	CATS_FR_NONE,
	CATS_FR_PEND_FLOW_FULL,	/* this flow holds enough packets */
	CATS_FR_PEND_POOL_FULL,	/* the global packet pool is full */
	CATS_FR_PEND_FLOWS_FULL,	/* too many pending flows */
	CATS_FR_PEND_CLIENT_FULL,	/* too many pending flows of a client */
	CATS_FR_FENCED,		/* binding of an older epoch */
	CATS_FR_STALE_VERSION,	/* older version of a known binding */
	CATS_FR_FLOW_BOUND,	/* the flow already has another binding */
	CATS_FR_UNKNOWN,	/* refresh or remove of an unknown binding */
	CATS_FR_NOT_MINE,	/* neither the ingress nor the egress */
	CATS_FR_BAD,		/* unusable fields (families, encapsulation) */
	CATS_FR_UNSUPPORTED,	/* an encapsulation this forwarder cannot do */
	CATS_FR_FULL,		/* binding table full */
	CATS_FR_NOMEM,
	CATS_FR__N
};
extern const char *const cats_fwd_reason_names[];

struct cats_fwd_stats {
	uint64_t bindings, pending, held;
	uint64_t installed, refreshed, removed, expired, refused;
	uint64_t pend_new, pend_joined, pend_timeout, pend_errors;
	uint64_t pend_refused[CATS_FR__N];
	uint64_t tcp[CATS_TCPS__N];	/* bindings now in each TCP state */
	uint64_t tcp_released[CATS_TCPS__N];	/* ended in that state */
	uint64_t tcp_reused;		/* closing, ended by a new SYN */
};

struct cats_fwd {
	struct cats_fwd_conf c;
	struct cats_htab bind_by_key;	/* fkey -> binding */
	struct cats_htab bind_by_id;	/* id -> binding */
	struct cats_htab pend_by_key;	/* fkey -> pending */
	struct cats_htab pend_by_txn;	/* txn -> pending */
	uint16_t *client_pend;		/* per-client pending counts */
	uint64_t epoch_max;		/* highest manager epoch seen */
	uint64_t next_txn;
	uint64_t wild_keys;		/* bindings with wildcard ports */
	struct cats_pend *oldest, *newest;	/* pending records by deadline */
	struct cats_fwd_stats st;
	/*
	 * A caller with a fast path (b->fast set) is called to add its
	 * counters to b before b's idle time is judged (fast_sync), and
	 * before b's keys leave the table, to take them out of the fast path
	 * too (fast_drop).
	 */
	void (*fast_sync)(struct cats_fbind *b, uint64_t now, void *arg);
	void (*fast_drop)(struct cats_fbind *b, void *arg);
	void *fast_arg;
	/*
	 * A binding whose TCP connection is closing gives way to a new
	 * binding of the same flow (a reused 5-tuple selected afresh): the
	 * caller reports it (gone_cb, with the reason cats_fbind_tcp_why())
	 * before it leaves the table.
	 */
	void (*gone_cb)(struct cats_fbind *b, const char *why, void *arg);
	void *gone_arg;
};

int cats_fwd_init(struct cats_fwd *t, const struct cats_fwd_conf *c);
/*
 * Heap bytes one new flow takes at most, for sizing a reserve
 * (cats_tool_reserve): its binding, its pending record and a held first
 * packet of up to 256 bytes, and its slots in the tables at their lowest
 * load, with malloc's overhead.
 */
size_t cats_fwd_flow_bytes(void);
void cats_fwd_free(struct cats_fwd *t);

/* Build a key from a packet (dir sets which addresses go where). */
void cats_fkey_from_pkt(struct cats_fkey *k, const struct cats_pkt *pk,
    int dir, uint64_t tenant);
/* Build a key from a record's flow map. */
int cats_fkey_from_flow(struct cats_fkey *k, const struct cats_flow *f,
    int dir);
/* Fill a record's flow map from a key (text points into tenant). */
void cats_fkey_to_flow(const struct cats_fkey *k, struct cats_flow *f,
    const char *tenant);

/* The binding for a key: exact ports first, then the wildcards. */
struct cats_fbind *cats_fwd_lookup(struct cats_fwd *t,
    const struct cats_fkey *k);
struct cats_fbind *cats_fwd_by_id(struct cats_fwd *t, uint64_t id);
struct cats_pend *cats_fwd_pending(struct cats_fwd *t,
    const struct cats_fkey *k);

/*
 * Hold a packet for key k (CATS_DIR_IN_FWD).  Returns CATS_PEND_NEW (the
 * caller sends a request for *out, whose txn is set), CATS_PEND_JOINED, or
 * -reason (enum cats_fwd_reason) when the packet must be dropped.
 */
int cats_fwd_hold(struct cats_fwd *t, const struct cats_fkey *k,
    const uint8_t *pkt, size_t len, uint32_t port, uint64_t now,
    struct cats_pend **out);

/* Remove a pending record; its held packets are returned (caller frees). */
struct cats_held *cats_fwd_pend_take(struct cats_fwd *t, struct cats_pend *p);
void cats_fwd_held_free(struct cats_fwd *t, struct cats_held *h);

/*
 * Apply a binding record.  On success (0) *out is the binding (NULL after a
 * remove) and *released the packets held for its forward key, in arrival
 * order, to be sent now; *event is CATS_EV_INSTALLED, _REFRESHED or
 * _REMOVED.  On refusal returns the reason (> 0).
 */
int cats_fwd_apply(struct cats_fwd *t, const struct cats_binding *b,
    uint64_t now, struct cats_fbind **out, struct cats_held **released,
    int *event);

/*
 * Insert a binding made by this forwarder (nb: id, keys and actions set;
 * a fallback or a learned reverse), installed at now; *out is the
 * binding.  0 or the reason (a key taken, the table full).
 */
#define CATS_FWD_LOCAL_ID	(UINT64_C(1) << 52)
int cats_fwd_insert(struct cats_fwd *t, const struct cats_fbind *nb,
    uint64_t now, struct cats_fbind **out);

/* An error record: the pending record it ends (by txn, then flow), or NULL. */
struct cats_pend *cats_fwd_error(struct cats_fwd *t, const struct cats_error *e);

/* Remove a binding (after reporting it). */
void cats_fwd_remove(struct cats_fwd *t, struct cats_fbind *b);

/*
 * Expiry: calls pend_cb for each pending record past its deadline (the
 * callback takes its packets with cats_fwd_pend_take) and bind_cb for each
 * binding idle or past its hard lifetime (then removes it).
 */
void cats_fwd_expire(struct cats_fwd *t, uint64_t now,
    void (*pend_cb)(struct cats_pend *, void *),
    void (*bind_cb)(struct cats_fbind *, const char *why, void *), void *arg);

/*
 * The same in steps, for a caller that ticks often: the pending records past
 * their deadline (found from the oldest on: every record waits the same
 * pend_ms, so creation order is deadline order), and the bindings in n
 * slots of the id table from *pos on (*pos moves on, wrapping), so that a
 * tick costs the same whatever the size of the table, which is covered every
 * cap / n ticks.  A binding moved by a removal may wait a round more.
 */
void cats_fwd_expire_step(struct cats_fwd *t, uint64_t now, size_t *pos,
    size_t n, void (*pend_cb)(struct cats_pend *, void *),
    void (*bind_cb)(struct cats_fbind *, const char *why, void *), void *arg);

/* A status record about binding b (id, epoch, version, counters). */
void cats_fwd_status(const struct cats_fwd *t, const struct cats_fbind *b,
    int event, const char *reason, uint64_t now, struct cats_rec *r);

/* ---- TCP connection tracking (tcp.c) ---- */

/*
 * Defaults of the per-state idle timeouts, in ms (cats-fwd(1) gives them
 * beside conntrack's and IPVS's); 0 for ESTABLISHED: the binding's idle_ms.
 */
extern const uint64_t cats_tcp_default_ms[CATS_TCPS__N];
/* Parse STATE=DURATION into conf's timeouts; -1 with a message in err. */
int cats_tcp_timeout_parse(struct cats_fwd_conf *c, const char *arg,
    char *err, size_t errlen);
/* Is b a TCP binding of one connection (exact ports) whose connection
 * tracking is on? */
static inline bool
cats_fbind_tracked(const struct cats_fwd *t, const struct cats_fbind *b)
{
	const struct cats_fkey *k = &b->keys[b->ingress ? CATS_DIR_IN_FWD :
	    CATS_DIR_EG_FWD];
	return !t->c.tcp_off && k->proto == 6 && k->wild == 0;
}
/*
 * A TCP packet of b with flags (reply: from the instance's side) moves its
 * state; returns the new state, or CATS_TCP_REOPEN for a SYN of the client
 * on a closing binding (state unchanged: the caller decides).
 */
int cats_fbind_tcp(struct cats_fwd *t, struct cats_fbind *b, bool reply,
    uint8_t flags);
/* Put b in state s (counted). */
void cats_fbind_tcp_set(struct cats_fwd *t, struct cats_fbind *b, int s);
/* Is the connection of b closing (FIN, both FINs, RST)? */
static inline bool
cats_fbind_closing(const struct cats_fbind *b)
{
	return b->tcp >= CATS_TCPS_FIN_WAIT;
}
/* The idle timeout of b now (ms, 0: none) and the reason its expiry or
 * end gets in the status record. */
uint64_t cats_fbind_idle_ms(const struct cats_fwd *t, const struct cats_fbind *b);
const char *cats_fbind_tcp_why(const struct cats_fwd *t,
    const struct cats_fbind *b);

/* Count a packet on a binding in a direction. */
static inline void
cats_fbind_count(struct cats_fbind *b, int rev, size_t len, uint64_t now)
{
	if (rev) {
		b->rpkts++;
		b->rbytes += len;
	} else {
		b->pkts++;
		b->bytes += len;
	}
	b->last = now;
}

#endif
