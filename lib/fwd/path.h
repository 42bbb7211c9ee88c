/*
 * path.h - the packet path of a CATS-Forwarder (cats-fwd(1), 001 §8): what
 * happens to each packet and each control record, in one context struct
 * (struct cats_fwdp) instead of globals.
 *
 * Contract:
 * - Every entry point takes `now` (ms); nothing here reads the clock.  The
 *   context keeps the latest `now` it was given for the table's callbacks.
 * - Packets come in as IP packets on a port (cats_fwdp_packet) or as the
 *   frames of a port's receive ring or TUN device (cats_fwdp_rx); they leave
 *   through the ports (port.h), cut into segments by the one segmentation
 *   loop of out.c where a TCP super-packet or a segment exceeds the way out.
 * - Control records that leave (request to the C-PS, status to the binding
 *   manager) go through the caller's emit hook, which returns -1 when that
 *   channel is down; held packets released outside a receive batch ask the
 *   caller to kick the ports once its ready callbacks have run
 *   (flush_later).  With fake ports (port.h) and these hooks the whole path
 *   runs in a unit test (tests/unit/test_fwd_cases.c).
 * - Each packet that is not forwarded is counted under one drop reason: a
 *   counter of enum cats_fwdp_ctr or of enum cats_drop (pkt.h) or a pending
 *   refusal (enum cats_fwd_reason); cats_fwdp_stats() lists them by the
 *   names the stats record has.
 */
#ifndef CATS_FWD_PATH_H
#define CATS_FWD_PATH_H

#include <stdio.h>

#include "base/bucket.h"
#include "base/stats.h"
#include "fwd/fallback.h"
#include "fwd/fwd.h"
#include "fwd/fwd_fast.h"
#include "fwd/pkt.h"
#include "fwd/port.h"
#include "fwd/steer.h"
#include "rec/rec.h"

/* The forwarder's counters, in the order of its stats record. */
#define CATS_FWDP_CTRS(X) \
	X(rx_pkts) X(rx_bytes) X(tx_pkts) X(tx_bytes) X(tx_full) \
	X(fwd_pkts) X(rev_pkts) X(eg_fwd_pkts) X(eg_rev_pkts) \
	X(eg_unbound) X(misses) X(requests) X(request_fail) X(released) \
	X(drop_not_service) X(drop_csid_mismatch) X(drop_no_binding_tcp) \
	X(drop_no_reverse_binding) X(drop_not_owned) X(drop_no_return_path) \
	X(drop_pending_timeout) X(drop_pending_error) X(drop_not_synced) \
	X(drop_bad_modeb) X(drop_truncated_frame) X(drop_gso) X(ignored) \
	X(icmp_sent) X(icmp_limited) X(mss_clamped) X(tso_segments) X(gso_sends) \
	X(bindings_installed) X(bindings_refreshed) X(bindings_removed) \
	X(bindings_expired) X(bindings_refused) X(ctl_bad) X(ctl_auth_fail) \
	X(errors_received) X(status_sent) X(bind_connects) X(ctl_switches) \
	X(ctl_tls_fail) X(ctl_connect_fail) X(ctl_silent) X(ctl_fenced) X(rx_ring_drops) \
	X(rx_copies) X(fast_pkts) X(path_errors) X(path_down_sent) \
	X(tcp_reopened) X(fallback_bound) X(fallback_refused) \
	X(fallback_reported) X(reverse_learned) X(requests_resent)

#define CATS_FWDP_X_ENUM(n) CATS_FC_##n,
enum cats_fwdp_ctr { CATS_FWDP_CTRS(CATS_FWDP_X_ENUM) CATS_FC__N };
extern const char *const cats_fwdp_ctr_names[];

/* A service address (--service CSID=ADDR) or interception address. */
struct cats_fwd_svc {
	char cs_id[CATS_ID + 1];	/* "" for an interception address */
	struct cats_ip addr;
	uint16_t port;			/* 0: any */
	uint8_t proto;			/* 0: any */
};

/*
 * Parse a service address CSID=ADDR[:PORT][/PROTO] (IPv6 with a port:
 * CSID=[ADDR]:PORT/PROTO; PROTO tcp, udp or a number), or with intercept an
 * interception address without the CSID=.  -1 with a message in err.
 */
int cats_fwd_svc_parse(const char *arg, bool intercept, struct cats_fwd_svc *s,
    char *err, size_t errlen);

/* The forwarder's configuration (its options). */
struct cats_fwdp_conf {
	const char *id;
	const char *bind_ep;		/* for messages only */
	struct cats_fwd_svc svc[64];
	size_t nsvc;
	struct cats_ip sids[16];
	size_t nsids;
	uint32_t labels[16];		/* SR-MPLS labels popped at the core */
	size_t nlabels;
	struct cats_prefix owns[16];
	size_t nowns;
	struct cats_fwd_ret ret[64];
	size_t nret;
	int affinity;			/* CATS_AFF_* */
	int modeb_proto, modeb_port, modeb_off;
	int precedence;			/* 0 refuse, 1 csid, 2 address */
	const char *tenant;
	int dataplane;			/* CATS_DP_*, -1: cats_fwdp_dataplane() */
	uint32_t mtu;			/* core MTU; 0: the port's */
	bool icmp_unreach;
	bool jumbo;
	bool path_down;
	uint64_t epoch;
	struct cats_fwd_conf fc;
	/* The configured fallback (fallback.h; its candidates are state). */
	struct cats_ifb fb;
	/* Egress: learn the reverse of unbound flows for this idle time. */
	uint64_t learn_rev_ms;
};

/* The channels a control record leaves by. */
enum { CATS_FWDP_SELECT, CATS_FWDP_BIND };

#define CATS_FWDP_MAXPORTS	3
#define CATS_FWDP_FP_QUEUE	4096
#define CATS_FWDP_SEG_STRIDE	16384

struct cats_fwdp {
	struct cats_fwdp_conf cf;
	uint64_t tenant_h;
	struct cats_fwd tab;
	struct cats_port ports[CATS_FWDP_MAXPORTS];
	int nports;
	struct cats_port *client, *core, *site;
	struct cats_fsteer *steer;	/* --steer: site-local redirects, or NULL */
	uint32_t tx_mtu;		/* the largest MTU of all ports */
	uint64_t ctr[CATS_FC__N];
	uint64_t drop_pkt[CATS_DROP__N];
	uint64_t drop_pend[CATS_FR__N];
	bool synced;
	uint64_t sync_deadline;
	uint16_t ipid;			/* outer IPv4 identification */
	int verbosity;
	uint64_t now;			/* the latest now passed in */
	struct cats_bucket icmp;		/* ICMP errors: 100/s, burst 100 */
	size_t tick_pos;		/* expiry walk of the binding table */
	uint64_t local_id;		/* ids of bindings made here */
	uint64_t caps_hash, caps_at;	/* capabilities last told, when */
	uint64_t fb_unreported;		/* fallback bindings not yet reported */
	/* The fast path (fwd_fast.h), or NULL. */
	struct cats_fwd_fast *fp;
	uint64_t fp_keys;		/* keys in the kernel's map */
	uint64_t fp_queue[CATS_FWDP_FP_QUEUE];
	size_t fp_nqueue;
	uint64_t fp_queued_at;
	/* The caller's hooks (see the contract above). */
	int (*emit)(void *arg, int chan, struct cats_rec *r);
	void (*flush_later)(void *arg);
	void *hook_arg;
	/*
	 * The caller's monotonic clock in microseconds, read once per new
	 * flow for the latency histograms (NULL: not measured): the first
	 * packet's wait (held until its binding or fallback released it) and
	 * the C-PS's answer to a request (a binding or an error).
	 */
	uint64_t (*clock_us)(void);
	struct cats_hist h_first, h_cps;
	/*
	 * Work buffers: one packet with headroom (held packets being
	 * released, a frame read from a socket queue), and one TSO segment
	 * where a transmit frame cannot take it.
	 */
	uint8_t wroom[CATS_PKT_HEADROOM + 65536 + 256];
	uint8_t ewroom[CATS_PKT_HEADROOM + CATS_FWDP_SEG_STRIDE];
};

/*
 * Set up a context for conf (copied; the strings it points to must stay),
 * no ports yet, synced when there is no binding manager (bind_ep NULL).
 * -1 when the tables cannot be had.
 */
int cats_fwdp_init(struct cats_fwdp *w, const struct cats_fwdp_conf *conf);
/*
 * Start at now, once the ports are open: the ICMP bucket full (100 a second, burst 100), the binding
 * manager given sync_ms to send the bindings again.
 */
void cats_fwdp_start(struct cats_fwdp *w, uint64_t sync_ms, uint64_t now);
/* Free the tables and what fake ports kept (the ports stay open). */
void cats_fwdp_free(struct cats_fwdp *w);

/*
 * The port of spec (port.h syntax) in role (CATS_PORT_*), shared by name
 * with another role; NULL with err for a bad spec or too many ports.
 */
struct cats_port *cats_fwdp_port(struct cats_fwdp *w, const char *spec,
    int role, char *err, size_t errlen);
/* Add a fake port in role (tests); it is returned. */
struct cats_port *cats_fwdp_port_fake(struct cats_fwdp *w, const char *name,
    int role, int ifindex, uint32_t mtu);
/* Open every port (port.h); -1 with err. */
int cats_fwdp_open_ports(struct cats_fwdp *w, unsigned ring_frames,
    char *err, size_t errlen);

/* One IP packet ip[0..len) received on m->in (ip has headroom before it). */
void cats_fwdp_packet(struct cats_fwdp *w, uint8_t *ip, size_t len,
    const struct cats_rxmeta *m, uint64_t now);
/* One MPLS packet (label stack first) received on m->in, a core port. */
void cats_fwdp_mpls(struct cats_fwdp *w, uint8_t *p, size_t len,
    const struct cats_rxmeta *m, uint64_t now);
/*
 * One frame of a receive ring (link header first): the link header judged
 * (multicast, not IP: ignored; the peer learned), the virtio-net
 * header's GSO and partial checksum state taken, then the IP packet.
 */
void cats_fwdp_frame(struct cats_fwdp *w, struct cats_port *pt,
    const struct cats_port_frame *fr, uint64_t now);
/*
 * What waits on port pt: up to a batch of the ring's frames (then the
 * ports are kicked; the port's event made active again when more wait), or
 * the TUN device's packets.  Returns the frames handled, a batch + 1 when
 * more wait.
 */
unsigned cats_fwdp_rx(struct cats_fwdp *w, struct cats_port *pt,
    uint64_t now);
/* Kick every port to send what it queued. */
void cats_fwdp_tx_flush(struct cats_fwdp *w);

/*
 * A control record (decoded, verified) from the C-PS or, from_bind, the
 * binding manager: a binding to apply, an error ending a pending flow, a
 * hello answered after a re-sync.
 */
void cats_fwdp_ctl(struct cats_fwdp *w, const struct cats_rec *r,
    bool from_bind, uint64_t now);
/* The hello that opens a connection to the binding manager, with the
 * forwarder's capabilities. */
void cats_fwdp_hello(struct cats_fwdp *w, uint64_t now);
/* The hello of a (re)connection to the C-PS (cats-select(1) FORWARDERS):
 * the status "hello" that proves who is on the channel, signed as every
 * record out. */
void cats_fwdp_hello_select(struct cats_fwdp *w, uint64_t now);
/*
 * The select channel connected again (a new owner after a takeover, or
 * its selector restarted): what it was asked before may be lost with the
 * old connection, so every pending request is sent again, on it, with
 * its txn and deadline (a flow the binding manager already bound is a
 * duplicate it refuses; requests_resent counts them).
 */
void cats_fwdp_resend_pending(struct cats_fwdp *w, uint64_t now);
/*
 * The forwarder's capabilities (cats-fwd(1) CAPABILITIES), one token each,
 * into v (room for CATS_FWDP_NCAPS), their text in buf.  Returns how many.
 */
#define CATS_FWDP_NCAPS	32
size_t cats_fwdp_caps(const struct cats_fwdp *w, const char **v,
    char (*buf)[40]);
/*
 * The data planes the forwarder advertises (its caps), a bit per enum
 * cats_dataplane; the one its requests ask for: --dataplane
 * (cf.dataplane >= 0), else the first it advertises in the order srv6, srmpls,
 * ipip, ip (cats-fwd(1) CAPABILITIES); -1 when it advertises none.
 */
unsigned cats_fwdp_dataplanes(const struct cats_fwdp *w);
int cats_fwdp_dataplane(const struct cats_fwdp *w);
/*
 * The 100 ms tick: fast path peers, the sync deadline, activity reports
 * (when report: the binding manager is connected), expiry, queued fast
 * path offers.
 */
void cats_fwdp_tick(struct cats_fwdp *w, uint64_t now, bool report);

/*
 * The stats counters, appended to st (cats_stats_init()ed by the caller:
 * "cats-fwd" and the forwarder's id) under the names the stats record has:
 * packet and drop counts as counters, table sizes, TCP states and
 * "synced" as gauges.  names is the caller's room for the composed names:
 * it must outlive st.
 */
struct cats_fwdp_names {
	char n[CATS_DROP__N + CATS_FR__N + 2 * CATS_TCPS__N][48];
};
void cats_fwdp_stats(struct cats_fwdp *w, struct cats_stats_list *st,
    struct cats_fwdp_names *names);
/*
 * The stats list (initialized here: tool cats-fwd, id) and the latency
 * histograms first_packet and cps_answer: /metrics (net/metrics.h).
 */
void cats_fwdp_stats_list(struct cats_fwdp *w, struct cats_stats_list *st,
    const char *id, struct cats_fwdp_names *names);
/* One status record per binding (event refreshed, "counters") to f. */
void cats_fwdp_dump_bindings(struct cats_fwdp *w, FILE *f, uint64_t now);

/* ---- the fast path (fast.c) ---- */

/* Load the fast path and attach it to every AF_PACKET port; -1 with err. */
int cats_fwdp_fast_start(struct cats_fwdp *w, char *err, size_t errlen);
/* Detach it (the table's hooks first: no map edits after). */
void cats_fwdp_fast_stop(struct cats_fwdp *w);
/*
 * The map key and action of binding b's key d, as the packet path would
 * apply it: 0 (FP_OK), 1 not yet (a link peer or the return tunnel still to
 * be learned, a site-local redirect of its instance in force), 2 never (a wildcard, a TUN port, another tenant, an
 * encapsulation too long).
 */
enum { CATS_FWDP_FP_OK, CATS_FWDP_FP_LATER, CATS_FWDP_FP_NEVER };
int cats_fwdp_fast_entry(struct cats_fwdp *w, const struct cats_fbind *b,
    int d, struct cats_fp_key *k, struct cats_fp_act *a);
/*
 * Site-local steering (--steer, steer.h): the packet path applies t's
 * redirects, and each redirect that comes into force takes the flows to
 * its failed instance off the fast path at once (fast_drop), so that
 * their next packets are steered in user space; while it lasts they are
 * not offered again (FP_LATER), and once it ends they are, as any flow.
 */
void cats_fwdp_steer(struct cats_fwdp *w, struct cats_fsteer *t);
/* Offer the bindings queued for the fast path: when the rings are empty
 * (or FP_WAIT_MS passed), or force. */
void cats_fwdp_fast_offer_queued(struct cats_fwdp *w, uint64_t now,
    bool force);

#endif
