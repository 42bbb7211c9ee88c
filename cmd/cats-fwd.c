/*
 * cats-fwd - ingress and egress CATS-Forwarder on TUN devices and AF_PACKET
 * (TPACKET_V2 rings), steered by bindings from cats-bind (001 §8).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/clock.h"
#include "base/conf.h"
#include "sec/crypto.h"
#include "net/ep.h"
#include "fwd/fwd.h"
#include "fwd/fwd_fast.h"
#include "rec/json.h"
#include "base/log.h"
#include "fwd/pkt.h"
#include "rec/seq.h"
#include "base/tool.h"

static const char usage_text[] =
    "usage: cats-fwd --id ID [--client PORT] [--core PORT] [--site PORT]\n"
    "         [--select ENDPOINT] [--bind ENDPOINT] [--key FILE]\n"
    "         [--peer-keys FILE] [--src4 ADDR] [--src6 ADDR]\n"
    "         [--sid ADDR]... [--owns PREFIX]... [--return ID=ADDR]...\n"
    "         [--service CSID=ADDR]...\n"
    "         [--intercept ADDR]... [--affinity 5tuple|client]\n"
    "         [--mode-b PROTO:PORT:OFFSET] [--precedence refuse|csid|address]\n"
    "         [--tenant NAME] [--dataplane srv6|ipip|ip] [--mtu N]\n"
    "         [--pending-flow N] [--pending-pkts N] [--pending-flows N]\n"
    "         [--pending-client N] [--pending-timeout MS] [--poll-us N]\n"
    "         [--icmp-unreach]\n"
    "         [--sync-timeout MS] [--epoch N] [--ring-frames N] [--jumbo-core]\n"
    "         [--fast-path] [--path-down] [--reserve-flows N]\n"
    "         [--stats ENDPOINT] [--log SPEC] [-v] [--help] [--version]\n"
    "  PORT: af_packet:IFNAME[,peer=MAC] | tun:IFNAME\n";

static void
usage(int code)
{
	fputs(usage_text, code ? stderr : stdout);
	exit(code);
}

/* ---- counters ---- */

#define CTRS(X) \
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
	X(errors_received) X(status_sent) X(bind_connects) X(rx_ring_drops) \
	X(rx_copies) X(fast_pkts) X(path_errors) X(path_down_sent)

#define X_ENUM(n) C_##n,
enum { CTRS(X_ENUM) C__N };
#define X_NAME(n) #n,
static const char *const ctr_names[] = { CTRS(X_NAME) NULL };
static uint64_t ctr[C__N];
static uint64_t drop_pkt[CATS_DROP__N];
static uint64_t drop_pend[CATS_FR__N];

/* ---- ports ---- */

enum { PORT_CLIENT = 1, PORT_CORE = 2, PORT_SITE = 4 };
enum { K_PACKET, K_TUN };

struct port {
	int kind;
	int roles;
	char name[IFNAMSIZ];
	int ifindex;
	uint8_t mac[6], peer[6];
	bool has_peer, fixed_peer;
	bool peer_moved;	/* learned peer changed: fast path to follow */
	uint32_t mtu;
	int rxfd, txfd;
	int gsofd;		/* vnet-header socket for GSO sends, or -1 */
	uint8_t *rx, *tx;
	size_t rxn, rxfsz, rxi, txn, txfsz, txi;
	unsigned txq;
	struct event *ev;
	uint64_t rx_pkts, tx_pkts;
};

#define MAXPORTS 3
static struct port ports[MAXPORTS];
static int nports;
static struct port *p_client, *p_core, *p_site;

/*
 * Metadata of a received frame.  csum_partial: a TCP super-packet whose
 * checksum is still CHECKSUM_PARTIAL (at csum_start of the IP packet),
 * left so because every way out cuts it into segments with checksums of
 * their own; whoever keeps it whole completes it first (rx_csum_fix).
 */
struct rxmeta {
	struct port *in;
	uint16_t gso_size;
	uint8_t gso_type;
	bool csum_partial;
	uint16_t csum_start, csum_off;
};

/* ---- configuration ---- */

struct svc {
	char cs_id[CATS_ID + 1];	/* "" for an interception address */
	struct cats_ip addr;
	uint16_t port;
	uint8_t proto;
};

struct prefix {
	struct cats_ip a;
	unsigned len;
};

static struct {
	const char *id;
	const char *select_ep, *bind_ep, *stats_ep;
	struct cats_key key;
	bool has_key;
	struct cats_keyring peers;
	bool has_peers;
	struct svc svc[64];
	size_t nsvc;
	struct cats_ip sids[16];
	size_t nsids;
	struct prefix owns[16];
	size_t nowns;
	struct cats_fwd_ret ret[64];
	size_t nret;
	int affinity;
	int modeb_proto, modeb_port, modeb_off;
	int precedence;		/* 0 refuse, 1 csid, 2 address */
	const char *tenant;
	uint64_t tenant_h;
	int dataplane;
	uint32_t mtu;
	bool icmp_unreach;
	bool jumbo;
	bool fast;
	uint64_t sync_ms;
	uint64_t epoch;
	unsigned ring_frames;
	unsigned reserve_flows;
	bool path_down;
	uint64_t poll_us;
	struct cats_fwd_conf fc;
} cf;

static struct cats_fwd tab;
static struct event_base *base;
static bool synced;
static uint64_t sync_deadline;
static uint16_t ipid;
static uint32_t tx_mtu;		/* the largest MTU of all ports */
static int verbosity;
static struct event *tx_flush_ev;
static uint64_t icmp_tokens, icmp_last;

/* ---- control channels ---- */

/*
 * A control channel.  On a stream socket, records sent while handling a
 * batch (requests for a ring's worth of new flows, statuses for the
 * bindings of one read) are gathered in out and written with one system
 * call when the event loop has run the callbacks that were ready (flush);
 * datagram sockets send one record per datagram at once.
 */
struct chan {
	const char *name;
	const char *spec;
	struct cats_ep ep;
	struct cats_stream *s;
	int fd;
	struct event *retry;
	struct event *flush;
	struct cats_buf out;
	bool dgram;
	bool is_bind;
};
static struct chan ch_select = { .name = "select" }, ch_bind = { .name =
	"bind", .is_bind = true };
static struct cats_dec ctl_dec;

static void chan_connect(struct chan *c);

/*
 * Rings: receive slots of 2 KiB (a 1500-byte frame with the ring's and the
 * virtio-net header) or of the port's MTU, RX_RING bytes of them by
 * default; at most RX_BATCH frames handled per wakeup; transmit frames
 * laid out as the ring's header, a virtio-net header, the frame.
 */
#define RX_FRAME 2048
#define RX_RING (32 << 20)
#define RX_HDROOM 128
#define RX_BATCH 256
#define TX_VNET (TPACKET2_HDRLEN - sizeof(struct sockaddr_ll))
#define TX_OFF (TX_VNET + sizeof(struct virtio_net_hdr))
#define TX_FRAMES 1024

/*
 * Work buffers: one packet with headroom (held packets being released, a
 * frame read from a socket queue), and one TSO segment where a transmit
 * frame cannot take it.
 */
static uint8_t wroom[CATS_PKT_HEADROOM + 65536 + 256];
static uint8_t *const wbuf = wroom + CATS_PKT_HEADROOM;
#define SEG_STRIDE 16384
static uint8_t ewroom[CATS_PKT_HEADROOM + SEG_STRIDE];

/* ---- output ---- */

static uint8_t *
tx_frame(struct port *pt)
{
	for (int tries = 0; tries < 2; tries++) {
		struct tpacket2_hdr *h = (void *)(pt->tx + pt->txi * pt->txfsz);
		if (h->tp_status == TP_STATUS_AVAILABLE)
			return (uint8_t *)h;
		if (tries == 0 && pt->txq > 0) {
			send(pt->txfd, NULL, 0, MSG_DONTWAIT);
			pt->txq = 0;
		} else if (tries == 0) {
			/* The kernel may still be sending: wait briefly. */
			struct pollfd pf = { pt->txfd, POLLOUT, 0 };
			poll(&pf, 1, 1);
		}
	}
	return NULL;
}

static void
tx_flush(struct port *pt)
{
	if (pt->kind == K_PACKET && pt->txq > 0) {
		send(pt->txfd, NULL, 0, MSG_DONTWAIT);
		pt->txq = 0;
	}
}

static void
tx_flush_all(void)
{
	for (int i = 0; i < nports; i++)
		tx_flush(&ports[i]);
}

static void
on_tx_flush(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	tx_flush_all();
}

/*
 * Frames queued outside a receive batch (held packets released by the
 * bindings of one read): one kick per port once the callbacks that were
 * ready have run.
 */
static void
tx_flush_later(void)
{
	event_active(tx_flush_ev, EV_TIMEOUT, 0);
}

static void
l2_header(const struct port *pt, uint8_t *d, int ipv)
{
	if (pt->has_peer)
		memcpy(d, pt->peer, 6);
	else
		memset(d, 0xff, 6);
	memcpy(d + 6, pt->mac, 6);
	d[12] = ipv == 4 ? 0x08 : 0x86;
	d[13] = ipv == 4 ? 0x00 : 0xdd;
}

/*
 * Hand a filled transmit frame (IP length len) to the kernel, with the
 * virtio-net header gso (segmentation and partial checksum of a TCP
 * super-packet) or none.  The header says the whole frame is header
 * (hdr_len): the kernel copies it into the skb's linear part instead of
 * attaching the ring's pages, which a veth would copy again into fresh
 * pages.
 */
static void
tx_commit_gso(struct port *pt, uint8_t *f, size_t len,
    const struct virtio_net_hdr *gso)
{
	struct tpacket2_hdr *h = (void *)f;
	struct virtio_net_hdr *vh = (void *)(f + TX_VNET);
	if (gso != NULL)
		memcpy(vh, gso, sizeof(*vh));
	else
		memset(vh, 0, sizeof(*vh));
	vh->hdr_len = (uint16_t)(len + 14);
	h->tp_len = (uint32_t)(len + 14 + sizeof(*vh));
	__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST,
	    __ATOMIC_RELEASE);
	pt->txi = (pt->txi + 1) % pt->txn;
	pt->tx_pkts++;
	ctr[C_tx_pkts]++;
	ctr[C_tx_bytes] += len;
	if (++pt->txq >= RX_BATCH)
		tx_flush(pt);
}

static void
tx_commit(struct port *pt, uint8_t *f, size_t len)
{
	tx_commit_gso(pt, f, len, NULL);
}

/* Send one IP packet out of a port. */
static void
out_ip(struct port *pt, const uint8_t *ip, size_t len)
{
	if (pt->kind == K_TUN) {
		if (write(pt->txfd, ip, len) < 0) {
			ctr[C_tx_full]++;
			return;
		}
	} else {
		if (len + 14 > pt->txfsz - TX_OFF) {
			drop_pkt[CATS_DROP_TOO_BIG]++;
			return;
		}
		uint8_t *f = tx_frame(pt);
		if (f == NULL) {
			ctr[C_tx_full]++;
			return;
		}
		uint8_t *d = f + TX_OFF;
		l2_header(pt, d, ip[0] >> 4);
		memcpy(d + 14, ip, len);
		tx_commit(pt, f, len);
		return;
	}
	pt->tx_pkts++;
	ctr[C_tx_pkts]++;
	ctr[C_tx_bytes] += len;
}

/* ICMP error about pk back out of the port it came in on. */
static void
send_icmp(struct port *in, const struct cats_pkt *pk, int kind, uint32_t mtu)
{
	uint8_t out[1300], src[16];
	uint64_t now = cats_clock_now();
	/* Token bucket: 100 per second, burst 100. */
	icmp_tokens += (now - icmp_last) / 10;
	icmp_last = now;
	if (icmp_tokens > 100)
		icmp_tokens = 100;
	if (icmp_tokens == 0) {
		ctr[C_icmp_limited]++;
		return;
	}
	icmp_tokens--;
	memset(src, 0, sizeof(src));
	if (pk->af == 4)
		memcpy(src, cf.fc.src4, 4);
	else
		memcpy(src, cf.fc.src6, 16);
	size_t n = cats_pkt_icmp_error(pk, kind, mtu, src, out, sizeof(out));
	if (n > 0) {
		out_ip(in, out, n);
		ctr[C_icmp_sent]++;
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

/*
 * Write a packet straight into a transmit frame of port pt: fill(arg, q,
 * room) writes the IP packet at q (at most room bytes) and returns its
 * length (0: nothing to send); with enc, the outer headers go in front.
 * Returns 0, or -1 when the frame cannot be had or the packet built.
 */
static int
tx_fill(struct port *pt, const struct cats_encap *enc,
    size_t (*fill)(void *, uint8_t *, size_t), void *arg)
{
	size_t oh = enc != NULL ? cats_encap_overhead(enc) : 0;
	uint8_t *f = tx_frame(pt);
	if (f == NULL) {
		ctr[C_tx_full]++;
		return -1;
	}
	uint8_t *d = f + TX_OFF;
	uint8_t *q = d + 14 + oh;
	size_t len = fill(arg, q, pt->txfsz - TX_OFF - 14 - oh);
	if (len == 0)
		return -1;
	int r = enc != NULL ? cats_encap_push(enc, &q, &len, ipid++) : 0;
	if (r) {
		drop_pkt[r]++;
		return -1;
	}
	l2_header(pt, d, q[0] >> 4);
	tx_commit(pt, f, len);
	return 0;
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

/* Encapsulate the (already rewritten) packet pk and send it to the core. */
static void
send_encap(const struct cats_encap *enc, struct cats_pkt *pk,
    const struct rxmeta *m)
{
	size_t oh = cats_encap_overhead(enc);
	uint32_t mtu = cf.mtu ? cf.mtu : p_core->mtu;
	struct port *pt = p_core;
	bool ring = pt->kind == K_PACKET;
	/*
	 * A GSO super-packet is cut into the sender's segment size even when
	 * it fits the core: the far side's links are no bigger than the
	 * sender's.  Each segment is written into its transmit frame, with
	 * its checksums, in one pass.
	 */
	bool gso = m != NULL && m->gso_size && pk->proto == 6 &&
	    pk->len > l3l4_hdr(pk) + m->gso_size;
	if (gso) {
		size_t hdr = l3l4_hdr(pk);
		size_t mss = cf.jumbo ? mtu : m->gso_size;
		if (hdr + oh + mss > mtu)
			mss = mtu > hdr + oh ? mtu - hdr - oh : 0;
		struct cats_tso t;
		if (mss == 0 || cats_tso_init(&t, pk->p, pk->len,
		    (uint16_t)mss) < 0) {
			ctr[C_drop_gso]++;
			return;
		}
		ctr[C_tso_segments] += t.nseg;
		for (unsigned i = 0; i < t.nseg; i++) {
			struct fill_seg fs = { &t, i };
			if (ring && hdr + mss + oh + 14 <= pt->txfsz - TX_OFF) {
				tx_fill(pt, enc, fill_seg, &fs);
				continue;
			}
			uint8_t *p = ewroom + CATS_PKT_HEADROOM;
			size_t len = cats_tso_seg(&t, i, p, SEG_STRIDE);
			if (len > 0 && cats_encap_push(enc, &p, &len,
			    ipid++) == 0)
				out_ip(pt, p, len);
		}
		return;
	}
	if (pk->len + oh > mtu) {
		drop_pkt[CATS_DROP_TOO_BIG]++;
		if (m != NULL && (pk->af == 6 || (pk->p[6] & 0x40)))
			send_icmp(m->in, pk, CATS_ICMP_TOO_BIG,
			    (uint32_t)(mtu - oh));
		return;
	}
	if (ring && pk->len + oh + 14 <= pt->txfsz - TX_OFF) {
		/* Build the packet in the transmit frame: one copy. */
		tx_fill(pt, enc, fill_copy, pk);
		return;
	}
	uint8_t *p = pk->p;
	size_t len = pk->len;
	if (p != wbuf) {
		memcpy(wbuf, p, len);
		p = wbuf;
	}
	int r = cats_encap_push(enc, &p, &len, ipid++);
	if (r) {
		drop_pkt[r]++;
		return;
	}
	out_ip(pt, p, len);
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
out_gso(struct port *pt, struct cats_pkt *pk, size_t mss)
{
	if (pt->kind != K_PACKET || pk->len > 65535 - 14 || mss == 0 ||
	    mss > 65535)
		return -1;
	bool ring = pk->len + 14 <= pt->txfsz - TX_OFF;
	if (!ring && pt->gsofd < 0)
		return -1;
	size_t hdr = l3l4_hdr(pk);
	struct virtio_net_hdr vh;
	uint8_t l2[14];
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
		uint8_t *fr = tx_frame(pt);
		if (fr == NULL) {
			ctr[C_tx_full]++;
			return 0;
		}
		uint8_t *d = fr + TX_OFF;
		l2_header(pt, d, pk->af);
		memcpy(d + 14, pk->p, pk->len);
		tx_commit_gso(pt, fr, pk->len, &vh);
		ctr[C_gso_sends]++;
		return 0;
	}
	l2_header(pt, l2, pk->af);
	struct iovec iov[3] = {
		{ &vh, sizeof(vh) }, { l2, sizeof(l2) }, { pk->p, pk->len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 3 };
	tx_flush(pt);
	if (sendmsg(pt->gsofd, &mh, MSG_DONTWAIT) < 0)
		return -1;
	pt->tx_pkts++;
	ctr[C_tx_pkts]++;
	ctr[C_tx_bytes] += pk->len;
	ctr[C_gso_sends]++;
	return 0;
}

/*
 * Send a plain IP packet that may be a GSO super-packet (from a peer that
 * offloads segmentation): segment it in software when it exceeds the port.
 */
static void
out_big(struct port *pt, struct cats_pkt *pk, const struct rxmeta *m)
{
	uint32_t mtu = pt->mtu ? pt->mtu : 1500;
	bool gso = m != NULL && m->gso_size && pk->proto == 6 &&
	    pk->len > l3l4_hdr(pk) + m->gso_size;
	if (pk->len <= mtu && !gso) {
		out_ip(pt, pk->p, pk->len);
		return;
	}
	/* A TCP segment cut to a jumbo core MTU is cut again to this port. */
	if (gso || pk->proto == 6) {
		size_t hdr = l3l4_hdr(pk);
		size_t mss = gso ? m->gso_size : mtu;
		if (hdr + mss > mtu)
			mss = mtu > hdr ? mtu - hdr : 0;
		if (out_gso(pt, pk, mss) == 0)
			return;
		struct cats_tso t;
		if (mss == 0 || cats_tso_init(&t, pk->p, pk->len,
		    (uint16_t)mss) < 0) {
			ctr[C_drop_gso]++;
			return;
		}
		ctr[C_tso_segments] += t.nseg;
		for (unsigned i = 0; i < t.nseg; i++) {
			struct fill_seg fs = { &t, i };
			if (pt->kind == K_PACKET &&
			    hdr + mss + 14 <= pt->txfsz - TX_OFF) {
				tx_fill(pt, NULL, fill_seg, &fs);
				continue;
			}
			uint8_t *p = ewroom + CATS_PKT_HEADROOM;
			size_t len = cats_tso_seg(&t, i, p, SEG_STRIDE);
			if (len > 0)
				out_ip(pt, p, len);
		}
		return;
	}
	drop_pkt[CATS_DROP_TOO_BIG]++;
	if (m != NULL && (pk->af == 6 || (pk->p[6] & 0x40)))
		send_icmp(m->in, pk, CATS_ICMP_TOO_BIG, mtu);
}

static uint16_t
clamp_for(const struct cats_encap *enc, uint8_t af)
{
	uint32_t mtu = cf.mtu ? cf.mtu : p_core->mtu;
	size_t oh = cats_encap_overhead(enc) + (af == 4 ? 40 : 60);
	return mtu > oh ? (uint16_t)(mtu - oh) : 536;
}

/*
 * Will this received packet be cut into segments on every way out?  A TCP
 * super-packet (GSO) with more payload than one segment.
 */
static bool
gso_cut(const struct rxmeta *m, const uint8_t *ip, size_t len)
{
	uint8_t t = m->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
	if ((t != VIRTIO_NET_HDR_GSO_TCPV4 && t != VIRTIO_NET_HDR_GSO_TCPV6) ||
	    m->gso_size == 0 || m->csum_off != 16 ||
	    (size_t)m->csum_start + 20 > len)
		return false;
	size_t hdr = m->csum_start + (size_t)(ip[m->csum_start + 12] >> 4) * 4;
	return len > hdr + m->gso_size;
}

/* Complete a checksum left partial at receive (see struct rxmeta). */
static void
rx_csum_fix(struct rxmeta *m, struct cats_pkt *pk)
{
	if (m->csum_partial && cats_pkt_csum_complete(pk->p, pk->len,
	    m->csum_start, m->csum_off) == 0)
		m->csum_partial = false;
}

/* ---- the fast path (--fast-path, fwd_fast.h) ---- */

static struct cats_fwd_fast *fp;
static uint64_t fp_keys;	/* keys in the kernel's map */

enum { FP_OK, FP_LATER, FP_NEVER };

/* The port the packets of a binding's key d come in on (NULL: none). */
static struct port *
fp_port_in(int d)
{
	return d == CATS_DIR_IN_FWD ? p_client : d == CATS_DIR_EG_REV ?
	    p_site : p_core;
}

/* The port the packets of a binding's key d leave by (NULL: none). */
static struct port *
fp_port_out(int d)
{
	return d == CATS_DIR_IN_FWD || d == CATS_DIR_EG_REV ? p_core :
	    d == CATS_DIR_IN_REV ? p_client : p_site;
}

/* The map key of binding b's key d: the port it comes in on, whether it
 * comes encapsulated (the reverse at the ingress, the forward at the egress),
 * the 5-tuple.  -1 when there is no such port or the key has wildcards. */
static int
fp_key(const struct cats_fbind *b, int d, struct cats_fp_key *k)
{
	const struct port *in = fp_port_in(d);
	if (in == NULL || cats_fp_key_make(k, &b->keys[d], in->ifindex) < 0)
		return -1;
	k->tun = d == CATS_DIR_IN_REV || d == CATS_DIR_EG_FWD;
	return 0;
}

/*
 * Put key d of binding b into the kernel's map: its input and output ports,
 * its rewrite and encapsulation, as the user-space path would apply them.
 * FP_LATER: not yet (the output's link peer or the return tunnel is still to
 * be learned, the map is full); FP_NEVER: not this key (a wildcard, a TUN
 * port, another tenant, an encapsulation too long).
 */
static int
fp_put(struct cats_fbind *b, int d)
{
	struct port *in = fp_port_in(d), *out = fp_port_out(d);
	int rw = CATS_FP_RW_NONE;
	const uint8_t *addr = NULL;
	uint16_t port = 0;
	const struct cats_encap *enc = NULL;
	if (d == CATS_DIR_IN_FWD) {
		rw = CATS_FP_RW_DST;
		addr = b->locator, port = b->port, enc = &b->enc;
	} else if (d == CATS_DIR_IN_REV) {
		rw = CATS_FP_RW_SRC;
		addr = b->restore, port = b->restore_port;
	} else if (d == CATS_DIR_EG_REV) {
		enc = &b->renc;
	}
	if (in == NULL || out == NULL || in->kind != K_PACKET ||
	    out->kind != K_PACKET ||
	    (d == CATS_DIR_IN_FWD && b->keys[d].tenant != cf.tenant_h))
		return FP_NEVER;
	/* The egress learns the return tunnel from the first forward packet,
	 * in user space. */
	if (d >= CATS_DIR_EG_FWD && b->renc.kind != CATS_ENC_NONE &&
	    b->renc.nsids == 0 && b->renc.outer_af == 0)
		return FP_LATER;
	if (!out->has_peer)
		return FP_LATER;
	struct cats_fp_key k;
	if (fp_key(b, d, &k) < 0)
		return FP_NEVER;
	uint8_t l2[14];
	l2_header(out, l2, b->af);
	uint32_t mtu = out == p_core && cf.mtu ? cf.mtu : out->mtu;
	struct cats_fp_act a;
	if (cats_fp_act_make(&a, out->ifindex, l2, mtu, rw, addr, b->af, port,
	    enc != NULL && enc->kind != CATS_ENC_NONE ? enc : NULL) < 0)
		return FP_NEVER;
	if (cats_fwd_fast_put(fp, &k, &a) < 0)
		return FP_LATER;
	return FP_OK;
}

/* Offer the keys of b the kernel does not forward yet. */
static void
fp_offer(struct cats_fbind *b)
{
	for (int d = 0; d < CATS_DIR__N; d++) {
		uint8_t bit = (uint8_t)(1u << d);
		if (!b->keyed[d])
			b->fast_never |= bit;
		if ((b->fast | b->fast_never) & bit)
			continue;
		int r = fp_put(b, d);
		if (r == FP_OK) {
			b->fast |= bit;
			b->fast_pkts[d] = b->fast_bytes[d] = 0;
			fp_keys++;
		} else if (r == FP_NEVER) {
			b->fast_never |= bit;
		}
	}
}

/*
 * Does b have keys the fast path could still take, and has it carried
 * FP_AFTER packets in user space?  A flow of a packet or two (a DNS query,
 * a flood of new source ports) costs no map updates; a longer one goes to
 * the kernel after its first packets.
 */
#define FP_AFTER 4
static inline bool
fp_wants(const struct cats_fbind *b)
{
	return fp != NULL && !b->fast_queued &&
	    (b->fast | b->fast_never) != 0x0f && b->pkts + b->rpkts >= FP_AFTER;
}

/*
 * Bindings (by id) to offer once the receive rings are empty, so that the
 * packets of a flow already in a ring leave before the kernel forwards the
 * flow's next ones; under a load that never lets the rings empty, after
 * FP_WAIT_MS all the same (and on every tick).
 */
#define FP_QUEUE 4096
#define FP_WAIT_MS 2
static uint64_t fp_queue[FP_QUEUE];
static size_t fp_nqueue;
static uint64_t fp_queued_at;

static void
fp_enqueue(struct cats_fbind *b, uint64_t now)
{
	if (fp_nqueue == FP_QUEUE)
		return;		/* offered at one of its next packets */
	if (fp_nqueue == 0)
		fp_queued_at = now;
	fp_queue[fp_nqueue++] = b->id;
	b->fast_queued = true;
}

static bool ring_ready(const struct port *pt);
static unsigned rx_packet_ring(struct port *pt, uint64_t now);

/* Offer the queued bindings: when the rings are empty, or force. */
static void
fp_offer_queued(uint64_t now, bool force)
{
	if (fp_nqueue == 0)
		return;
	if (!force && now < fp_queued_at + FP_WAIT_MS)
		for (int i = 0; i < nports; i++)
			if (ports[i].kind == K_PACKET && ring_ready(&ports[i]))
				return;
	tx_flush_all();
	for (size_t i = 0; i < fp_nqueue; i++) {
		struct cats_fbind *b = cats_fwd_by_id(&tab, fp_queue[i]);
		if (b == NULL)
			continue;
		b->fast_queued = false;
		fp_offer(b);
	}
	fp_nqueue = 0;
	/* What reached the rings before the map changed leaves now, close
	 * behind: the kernel forwards the flows' next packets already. */
	for (int i = 0; i < nports; i++)
		if (ports[i].kind == K_PACKET)
			rx_packet_ring(&ports[i], now);
	tx_flush_all();
}

/* Add what the kernel forwarded for b since the last call to its counters. */
static void
fp_sync(struct cats_fbind *b, uint64_t now, void *arg)
{
	(void)arg;
	for (int d = 0; d < CATS_DIR__N; d++) {
		struct cats_fp_key k;
		struct cats_fp_act a;
		if (!(b->fast & (1u << d)) || fp_key(b, d, &k) < 0 ||
		    cats_fwd_fast_get(fp, &k, &a) < 0 ||
		    a.pkts == b->fast_pkts[d])
			continue;
		bool rev = d == CATS_DIR_IN_REV || d == CATS_DIR_EG_REV;
		uint64_t dp = a.pkts - b->fast_pkts[d];
		uint64_t db = a.bytes - b->fast_bytes[d];
		*(rev ? &b->rpkts : &b->pkts) += dp;
		*(rev ? &b->rbytes : &b->bytes) += db;
		ctr[rev ? (d == CATS_DIR_IN_REV ? C_rev_pkts : C_eg_rev_pkts) :
		    (d == CATS_DIR_IN_FWD ? C_fwd_pkts : C_eg_fwd_pkts)] += dp;
		ctr[C_fast_pkts] += dp;
		b->fast_pkts[d] = a.pkts;
		b->fast_bytes[d] = a.bytes;
		if (now > b->last)
			b->last = now;
	}
}

/* Take b's keys out of the kernel's map (its counters added first). */
static void
fp_drop(struct cats_fbind *b, void *arg)
{
	fp_sync(b, cats_clock_now(), arg);
	for (int d = 0; d < CATS_DIR__N; d++) {
		struct cats_fp_key k;
		if (!(b->fast & (1u << d)) || fp_key(b, d, &k) < 0)
			continue;
		cats_fwd_fast_del(fp, &k);
		fp_keys--;
	}
	b->fast = 0;
}

/*
 * A learned link peer changed (a neighbour replaced, its MAC changed): the
 * kernel's actions toward that port still carry the old one.  Their
 * bindings leave the map; user space forwards their next packets with the
 * new peer and offers them again.  Called from the tick, so that a port
 * whose peer flaps costs one walk of the bindings per tick at most.
 */
static void
fp_follow_peers(void)
{
	bool moved = false;
	for (int i = 0; i < nports; i++)
		moved |= ports[i].peer_moved;
	if (fp == NULL || !moved)
		return;
	for (size_t i = 0; i < tab.bind_by_id.cap; i++) {
		struct cats_fbind *b = tab.bind_by_id.s[i].item;
		if (tab.bind_by_id.s[i].h == 0 || b->fast == 0)
			continue;
		for (int d = 0; d < CATS_DIR__N; d++)
			if ((b->fast & (1u << d)) && fp_port_out(d) != NULL &&
			    fp_port_out(d)->peer_moved) {
				fp_drop(b, NULL);
				break;
			}
	}
	for (int i = 0; i < nports; i++)
		ports[i].peer_moved = false;
}

/* Load the fast path and attach it to every AF_PACKET port. */
static int
fp_start(char *err, size_t errlen)
{
	fp = cats_fwd_fast_open((size_t)tab.c.max_bindings * 2, err, errlen);
	if (fp == NULL)
		return -1;
	for (size_t i = 0; i < cf.nsids; i++)
		if (cats_fwd_fast_sid(fp, cf.sids[i].af, cf.sids[i].a) < 0) {
			snprintf(err, errlen, "SID map: %s", strerror(errno));
			return -1;
		}
	for (int i = 0; i < nports; i++) {
		char e[200];
		if (ports[i].kind == K_PACKET && cats_fwd_fast_port(fp,
		    ports[i].ifindex, ports[i].rxfd, e, sizeof(e)) < 0) {
			snprintf(err, errlen, "%s: %s", ports[i].name, e);
			return -1;
		}
	}
	tab.fast_sync = fp_sync;
	tab.fast_drop = fp_drop;
	return 0;
}

/* ---- the forward and reverse actions ---- */

/*
 * A steered packet toward the core: hop limit (ICMP time exceeded at zero),
 * the MSS of a SYN clamped to the encapsulation, counted, encapsulated.
 */
static void
to_core(struct cats_pkt *pk, const struct rxmeta *m,
    const struct cats_encap *enc, int counter)
{
	if (cats_pkt_dec_ttl(pk)) {
		drop_pkt[CATS_DROP_TTL]++;
		if (m != NULL)
			send_icmp(m->in, pk, CATS_ICMP_TIME_EXCEEDED, 0);
		return;
	}
	if (pk->proto == 6 && (pk->tcp_flags & CATS_TCP_SYN) &&
	    cats_pkt_clamp_mss(pk, clamp_for(enc, pk->af)))
		ctr[C_mss_clamped]++;
	ctr[counter]++;
	if (enc->kind == CATS_ENC_NONE)
		out_big(p_core, pk, m);
	else
		send_encap(enc, pk, m);
}

static void
ingress_forward(struct cats_fbind *b, struct cats_pkt *pk,
    const struct rxmeta *m, uint64_t now)
{
	cats_fbind_count(b, 0, pk->len, now);
	cats_pkt_set_dst(pk, b->locator, b->port);
	to_core(pk, m, &b->enc, C_fwd_pkts);
	if (fp_wants(b))
		fp_enqueue(b, now);
}

static void
release_held(struct cats_fbind *b, struct cats_held *h, uint64_t now)
{
	while (h != NULL) {
		struct cats_held *n = h->next;
		struct cats_pkt pk;
		memcpy(wbuf, h->data, h->len);
		if (cats_pkt_parse(&pk, wbuf, h->len) == 0) {
			struct rxmeta m = { .in = &ports[h->port] };
			ctr[C_released]++;
			ingress_forward(b, &pk, &m, now);
		}
		free(h);
		h = n;
	}
	tx_flush_later();
}

static void
drop_held(struct cats_held *h, uint64_t *counter)
{
	while (h != NULL) {
		struct cats_held *n = h->next;
		(*counter)++;
		if (cf.icmp_unreach) {
			struct cats_pkt pk;
			memcpy(wbuf, h->data, h->len);
			if (cats_pkt_parse(&pk, wbuf, h->len) == 0)
				send_icmp(&ports[h->port], &pk,
				    CATS_ICMP_UNREACH, 0);
		}
		free(h);
		h = n;
	}
	tx_flush_later();
}

/* ---- control records out ---- */

static void
chan_flush(struct chan *c)
{
	if (c->s != NULL && c->out.len > 0 &&
	    cats_stream_send(c->s, c->out.p, c->out.len) < 0)
		cats_warnx("%s: cannot send", c->name);
	cats_buf_reset(&c->out);
}

static void
on_flush(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	chan_flush(arg);
}

static void
send_rec(struct chan *c, struct cats_rec *r)
{
	if (c->s == NULL)
		return;
	if (cf.has_key && cats_rec_sign(r, &cf.key) < 0) {
		cats_warnx("cannot sign a %s record", cats_type_name(r->type));
		return;
	}
	if (c->dgram) {
		if (cats_stream_send_rec(c->s, r) < 0)
			cats_warnx("%s: cannot send", c->name);
		return;
	}
	if (cats_rec_encode(r, &c->out, true) < 0) {
		cats_warnx("cannot encode a %s record", cats_type_name(r->type));
		return;
	}
	if (c->out.len >= 65536)
		chan_flush(c);
	else
		event_active(c->flush, EV_TIMEOUT, 0);
}

static void
send_status(const struct cats_fbind *b, int ev, const char *reason,
    uint64_t id, uint64_t epoch)
{
	struct cats_rec r;
	cats_fwd_status(&tab, b, ev, reason, cats_clock_now(), &r);
	if (b == NULL && id)
		CATS_SET(&r.u.status, STA, id, id);
	if (b == NULL && ev != CATS_EV_HELLO && epoch)
		CATS_SET(&r.u.status, STA, epoch, epoch);
	if (ev == CATS_EV_HELLO)
		CATS_SET(&r.u.status, STA, epoch, cf.epoch);
	ctr[C_status_sent]++;
	send_rec(&ch_bind, &r);
}

static void
send_request(struct cats_pend *p, const struct cats_pkt *pk, uint64_t now)
{
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_REQUEST);
	struct cats_request *q = &r.u.request;
	q->txn = p->txn;
	q->ingress = cf.id;
	q->ts = p->created;
	q->has = UINT64_C(1) << CATS_REQ_txn | UINT64_C(1) << CATS_REQ_ingress |
	    UINT64_C(1) << CATS_REQ_ts | UINT64_C(1) << CATS_REQ_flow;
	CATS_SET(q, REQ, gen, cf.epoch);
	cats_fkey_to_flow(&p->key, &q->flow, cf.tenant);
	if (cf.tenant != NULL) {
		q->tenant = cf.tenant;
		q->has |= UINT64_C(1) << CATS_REQ_tenant;
	}
	const struct cats_req_meta *m = &p->meta;
	/*
	 * A CS-ID only travels as the client's metadata (Mode A or B); with
	 * carriage mode none the C-PS resolves the destination address with
	 * its own catalogue (001 §6), so the --service mapping stays local.
	 */
	if (m->cs_id[0] && m->present) {
		q->cs_id = m->cs_id;
		q->has |= UINT64_C(1) << CATS_REQ_cs_id;
	}
	if (m->present) {
		struct cats_constraints *c = &q->constraints;
		if (m->has & (1u << CATS_TLV_MAX_DELAY))
			CATS_SET(c, CON, max_delay_us, m->max_delay_us);
		if (m->has & (1u << CATS_TLV_MAX_COMP))
			CATS_SET(c, CON, max_comp_ms, m->max_comp_ms);
		if (m->has & (1u << CATS_TLV_MAX_PRICE))
			CATS_SET(c, CON, max_price, m->max_price);
		if (m->has & (1u << CATS_TLV_MIN_BW))
			CATS_SET(c, CON, min_bw, m->min_bw);
		if (m->has & (1u << CATS_TLV_MIN_SECURITY))
			CATS_SET(c, CON, min_security, m->min_security);
		if (m->has & (1u << CATS_TLV_MIN_REPUTATION))
			CATS_SET(c, CON, min_reputation, m->min_reputation);
		if (c->has)
			q->has |= UINT64_C(1) << CATS_REQ_constraints;
	}
	CATS_SET(q, REQ, mode, pk != NULL && pk->meta.present ? CATS_MODE_A :
	    m->present ? CATS_MODE_B : CATS_MODE_NONE);
	CATS_SET(q, REQ, held, p->npkts);
	CATS_SET(q, REQ, dataplane, cf.dataplane);
	CATS_SET(q, REQ, deadline, p->deadline);
	(void)now;
	p->sent = true;
	if (ch_select.s == NULL) {
		ctr[C_request_fail]++;
		return;
	}
	ctr[C_requests]++;
	send_rec(&ch_select, &r);
}

/* ---- classification ---- */

static bool
prefix_has(const struct prefix *px, uint8_t af, const uint8_t *a)
{
	if (px->a.af != af)
		return false;
	unsigned bits = px->len, i = 0;
	for (; bits >= 8; bits -= 8, i++)
		if (px->a.a[i] != a[i])
			return false;
	if (bits == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - bits));
	return (px->a.a[i] & mask) == (a[i] & mask);
}

static bool
is_sid(uint8_t af, const uint8_t *a)
{
	for (size_t i = 0; i < cf.nsids; i++)
		if (cf.sids[i].af == af && memcmp(cf.sids[i].a, a,
		    af == 4 ? 4 : 16) == 0)
			return true;
	return false;
}

static const struct svc *
find_svc(const struct cats_pkt *pk)
{
	const uint8_t *d = cats_pkt_dst(pk);
	for (size_t i = 0; i < cf.nsvc; i++) {
		const struct svc *s = &cf.svc[i];
		if (s->addr.af != pk->af || memcmp(s->addr.a, d,
		    pk->af == 4 ? 4 : 16) != 0)
			continue;
		if (s->proto && s->proto != pk->proto)
			continue;
		if (s->port && (!pk->has_ports || s->port != pk->dport))
			continue;
		return s;
	}
	return NULL;
}

/* A client packet at the ingress. */
static void
on_client(struct cats_pkt *pk, const struct rxmeta *m, uint64_t now)
{
	struct cats_fkey k;
	cats_fkey_from_pkt(&k, pk, CATS_DIR_IN_FWD, cf.tenant_h);
	struct cats_fbind *b = cats_fwd_lookup(&tab, &k);
	if (b != NULL) {
		ingress_forward(b, pk, m, now);
		return;
	}
	const struct svc *s = find_svc(pk);
	if (s == NULL) {
		ctr[C_drop_not_service]++;
		return;
	}
	ctr[C_misses]++;
	if (cf.affinity == CATS_AFF_CLIENT) {
		k.sport = 0;
		k.wild |= CATS_WILD_SPORT;
	}
	/* Request metadata: Mode A from the parse, Mode B where configured. */
	struct cats_req_meta meta = pk->meta;
	if (!meta.present && cf.modeb_proto && pk->proto == cf.modeb_proto &&
	    pk->dport == cf.modeb_port) {
		int r = cats_modeb_parse(pk, (size_t)cf.modeb_off, &meta);
		if (r < 0) {
			ctr[C_drop_bad_modeb]++;
			return;
		}
	}
	if (meta.cs_id[0] && s->cs_id[0] && strcmp(meta.cs_id, s->cs_id) != 0) {
		/* 001 §6: never silently combine two services. */
		if (cf.precedence == 0) {
			ctr[C_drop_csid_mismatch]++;
			char a[64];
			struct cats_ip ip = { .af = pk->af };
			memcpy(ip.a, cats_pkt_dst(pk), pk->af == 4 ? 4 : 16);
			cats_audit("csid-mismatch", "cs_id=%s addr=%s addr_cs_id=%s",
			    meta.cs_id, cats_ip_fmt(&ip, a, sizeof(a)), s->cs_id);
			return;
		}
		if (cf.precedence == 2)
			cats_strlcpy(meta.cs_id, s->cs_id, sizeof(meta.cs_id));
	}
	if (!meta.cs_id[0] && s->cs_id[0])
		cats_strlcpy(meta.cs_id, s->cs_id, sizeof(meta.cs_id));
	bool established = pk->proto == 6 && !(pk->tcp_flags & CATS_TCP_SYN);
	if (established && synced) {
		/* A mid-connection packet never starts a selection. */
		ctr[C_drop_no_binding_tcp]++;
		return;
	}
	struct cats_pend *p;
	struct rxmeta mm = *m;
	rx_csum_fix(&mm, pk);	/* a held packet is sent whole */
	int r = cats_fwd_hold(&tab, &k, pk->p, pk->len,
	    (uint32_t)(m->in - ports), now, &p);
	if (r < 0) {
		drop_pend[-r]++;
		return;
	}
	if (r == CATS_PEND_NEW) {
		p->meta = meta;
		p->established = established;
		if (synced)
			send_request(p, pk, now);
	}
}

/* A decapsulated packet from the core. */
static void
on_core_inner(struct cats_pkt *pk, const uint8_t *outer_src, uint8_t outer_af,
    const struct rxmeta *m, uint64_t now)
{
	struct cats_fkey k;
	if (p_client != NULL) {
		cats_fkey_from_pkt(&k, pk, CATS_DIR_IN_REV, 0);
		struct cats_fbind *b = cats_fwd_lookup(&tab, &k);
		if (b != NULL) {
			cats_fbind_count(b, 1, pk->len, now);
			cats_pkt_set_src(pk, b->restore, b->restore_port);
			if (cats_pkt_dec_ttl(pk)) {
				drop_pkt[CATS_DROP_TTL]++;
				return;
			}
			ctr[C_rev_pkts]++;
			out_big(p_client, pk, m);
			if (fp_wants(b))
				fp_enqueue(b, now);
			return;
		}
	}
	if (p_site != NULL) {
		cats_fkey_from_pkt(&k, pk, CATS_DIR_EG_FWD, 0);
		struct cats_fbind *b = cats_fwd_lookup(&tab, &k);
		if (b != NULL) {
			cats_fbind_count(b, 0, pk->len, now);
			if (b->renc_learn && b->renc.nsids == 0 &&
			    b->renc.outer_af == 0) {
				/* Return toward the ingress that sent it. */
				if (b->renc.kind == CATS_ENC_SRV6 &&
				    outer_af == 6) {
					memcpy(b->renc.sids[0], outer_src, 16);
					b->renc.nsids = 1;
					b->renc.outer_af = 6;
					memcpy(b->renc.src, cf.fc.src6, 16);
				} else if (b->renc.kind == CATS_ENC_IPIP) {
					size_t alen = outer_af == 4 ? 4 : 16;
					memcpy(b->renc.dst, outer_src, alen);
					b->renc.outer_af = outer_af;
					memcpy(b->renc.src, outer_af == 4 ?
					    cf.fc.src4 : cf.fc.src6, alen);
				}
			}
		} else {
			bool owned = false;
			for (size_t i = 0; i < cf.nowns && !owned; i++)
				owned = prefix_has(&cf.owns[i], pk->af,
				    cats_pkt_dst(pk));
			if (!owned) {
				ctr[C_drop_not_owned]++;
				return;
			}
			ctr[C_eg_unbound]++;
		}
		if (cats_pkt_dec_ttl(pk)) {
			drop_pkt[CATS_DROP_TTL]++;
			return;
		}
		ctr[C_eg_fwd_pkts]++;
		out_big(p_site, pk, m);
		if (b != NULL && fp_wants(b))
			fp_enqueue(b, now);
		return;
	}
	ctr[C_drop_no_reverse_binding]++;
}

/* A dropped packet, with -v: formatted only then (floods stay cheap). */
static void
debug_pkt(const char *what, const struct cats_pkt *pk)
{
	char a[64], b[64];
	if (verbosity < 2)
		return;
	struct cats_ip s = { .af = pk->af }, d = { .af = pk->af };
	memcpy(s.a, cats_pkt_src(pk), pk->af == 4 ? 4 : 16);
	memcpy(d.a, cats_pkt_dst(pk), pk->af == 4 ? 4 : 16);
	cats_debug("%s: proto %u %s:%u -> %s:%u", what, pk->proto,
	    cats_ip_fmt(&s, a, sizeof(a)), pk->sport,
	    cats_ip_fmt(&d, b, sizeof(b)), pk->dport);
}

/* An instance's reply at the egress. */
static void
on_site(struct cats_pkt *pk, const struct rxmeta *m, uint64_t now)
{
	struct cats_fkey k;
	cats_fkey_from_pkt(&k, pk, CATS_DIR_EG_REV, 0);
	struct cats_fbind *b = cats_fwd_lookup(&tab, &k);
	if (b == NULL) {
		/* Never a selection, never to an arbitrary client. */
		ctr[C_drop_no_reverse_binding]++;
		debug_pkt("no reverse binding", pk);
		return;
	}
	if (b->renc.kind != CATS_ENC_NONE && b->renc.nsids == 0 &&
	    b->renc.outer_af == 0) {
		ctr[C_drop_no_return_path]++;
		return;
	}
	cats_fbind_count(b, 1, pk->len, now);
	to_core(pk, m, &b->renc, C_eg_rev_pkts);
	if (fp_wants(b))
		fp_enqueue(b, now);
}

/* The binding of the quoted flow by its key of direction dir, the flow
 * turned round (turn) or not. */
static struct cats_fbind *
quote_lookup(const struct cats_quote *q, int dir, bool turn)
{
	struct cats_fkey k;
	size_t al = q->af == 4 ? 4 : 16;
	memset(&k, 0, sizeof(k));
	k.af = q->af;
	k.proto = q->proto;
	k.dir = (uint8_t)dir;
	memcpy(k.src, turn ? q->dst : q->src, al);
	memcpy(k.dst, turn ? q->src : q->dst, al);
	k.sport = turn ? q->dport : q->sport;
	k.dport = turn ? q->sport : q->dport;
	return cats_fwd_lookup(&tab, &k);
}

/*
 * An ICMP error from the core about a packet this forwarder encapsulated
 * (a router on the path found no route, the hop limit ran out) is counted;
 * with --path-down the binding whose packet it was is reported with a
 * path-down status, at most once per PATH_DOWN_MS, for the control plane
 * to repair its path.  The forwarder itself changes nothing: the error is
 * unauthenticated, and the binding stays until the control plane says
 * otherwise.
 */
#define PATH_DOWN_MS 5000
static bool
on_core_icmp(const struct cats_pkt *pk, uint64_t now)
{
	struct cats_quote q;
	if (cats_pkt_icmp_quote(pk, cf.fc.has_src4 ? cf.fc.src4 : NULL,
	    cf.fc.has_src6 ? cf.fc.src6 : NULL, &q) < 0)
		return false;
	ctr[C_path_errors]++;
	if (!cf.path_down)
		return true;
	/* A client's packet, rewritten, at the ingress: its binding's reverse
	 * key; an instance's reply at the egress: its own. */
	struct cats_fbind *b = p_client != NULL ?
	    quote_lookup(&q, CATS_DIR_IN_REV, true) : NULL;
	if (b == NULL && p_site != NULL)
		b = quote_lookup(&q, CATS_DIR_EG_REV, false);
	if (b == NULL || (b->path_down_at != 0 &&
	    now - b->path_down_at < PATH_DOWN_MS))
		return true;
	b->path_down_at = now;
	ctr[C_path_down_sent]++;
	send_status(b, CATS_EV_PATH_DOWN, q.what, 0, 0);
	return true;
}

/* One IP packet from a port. */
static void
on_packet(uint8_t *ip, size_t len, const struct rxmeta *m, uint64_t now)
{
	struct cats_pkt pk;
	int r = cats_pkt_parse(&pk, ip, len);
	if (r) {
		drop_pkt[r]++;
		return;
	}
	struct port *in = m->in;
	const uint8_t *d = cats_pkt_dst(&pk);
	if ((in->roles & PORT_CORE) && (pk.proto == 4 || pk.proto == 41) &&
	    is_sid(pk.af, d)) {
		uint8_t *inner, osrc[16];
		size_t ilen;
		r = cats_decap(&pk, &inner, &ilen, osrc);
		if (r) {
			drop_pkt[r]++;
			return;
		}
		struct cats_pkt ip2;
		r = cats_pkt_parse(&ip2, inner, ilen);
		if (r) {
			drop_pkt[r]++;
			return;
		}
		on_core_inner(&ip2, osrc, pk.af, m, now);
		return;
	}
	if ((pk.af == 6 && (d[0] == 0xff || (d[0] == 0xfe &&
	    (d[1] & 0xc0) == 0x80))) || (pk.af == 4 && d[0] >= 224)) {
		ctr[C_ignored]++;	/* multicast, link-local: the kernel's */
		return;
	}
	if (in->roles & PORT_CLIENT) {
		on_client(&pk, m, now);
		return;
	}
	if (in->roles & PORT_SITE) {
		on_site(&pk, m, now);
		return;
	}
	if ((in->roles & PORT_CORE) && (pk.proto == 1 || pk.proto == 58) &&
	    on_core_icmp(&pk, now))
		return;
	if (in->roles & PORT_CORE) {
		drop_pkt[(pk.proto == 4 || pk.proto == 41) ?
		    CATS_DROP_NOT_OURS : CATS_DROP_NOT_TUNNEL]++;
		return;
	}
}

/* ---- packet I/O ---- */

/*
 * A frame whose ring slot was too small (a GSO super-packet, a jumbo frame):
 * the slot holds the first bytes with TP_STATUS_COPY and the whole packet
 * waits, in order, on the socket's queue (PACKET_COPY_THRESH).  Read it with
 * its virtio-net header into the work buffer, IP header at wbuf.
 */
static uint8_t *
rx_copy(struct port *pt, struct virtio_net_hdr *vh, size_t *len)
{
	struct iovec iov[2] = {
		{ vh, sizeof(*vh) },
		{ wbuf - 14, 14 + 65536 + 256 },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n = recvmsg(pt->rxfd, &mh, MSG_DONTWAIT);
	if (n < (ssize_t)sizeof(*vh) + 14 || (mh.msg_flags & MSG_TRUNC))
		return NULL;
	*len = (size_t)n - sizeof(*vh);
	ctr[C_rx_copies]++;
	return wbuf - 14;
}

static unsigned
rx_packet_ring(struct port *pt, uint64_t now)
{
	unsigned budget = RX_BATCH;
	while (budget-- > 0) {
		struct tpacket2_hdr *h = (void *)(pt->rx + pt->rxi * pt->rxfsz);
		uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
		if (!(st & TP_STATUS_USER))
			break;
		uint8_t *f = (uint8_t *)h + h->tp_mac;
		struct virtio_net_hdr vhc, *vh = (void *)(f - sizeof(*vh));
		struct sockaddr_ll *sll = (void *)((uint8_t *)h +
		    TPACKET_ALIGN(sizeof(*h)));
		size_t len = h->tp_snaplen;
		struct rxmeta m = { .in = pt };
		bool whole = h->tp_len == h->tp_snaplen;
		if (st & TP_STATUS_COPY) {
			/* The queued copy must be read even if ignored. */
			f = rx_copy(pt, &vhc, &len);
			vh = &vhc;
			whole = f != NULL;
			if (f == NULL)
				len = h->tp_len;
		}
		ctr[C_rx_pkts]++;
		ctr[C_rx_bytes] += len;
		pt->rx_pkts++;
		if (sll->sll_pkttype == PACKET_OUTGOING) {
			ctr[C_ignored]++;
		} else if (!whole || len < 14) {
			ctr[C_drop_truncated_frame]++;
		} else if (f[0] & 1) {
			ctr[C_ignored]++;	/* L2 multicast / broadcast */
		} else {
			uint16_t et = (uint16_t)(f[12] << 8 | f[13]);
			if (!pt->fixed_peer && (!pt->has_peer ||
			    memcmp(pt->peer, f + 6, 6) != 0)) {
				pt->peer_moved |= pt->has_peer;
				memcpy(pt->peer, f + 6, 6);
				pt->has_peer = true;
			}
			if (et != 0x0800 && et != 0x86dd) {
				ctr[C_ignored]++;
			} else {
				bool ok = true;
				if (vh->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
					m.gso_size = vh->gso_size;
					m.gso_type = vh->gso_type;
				}
				if (vh->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
					m.csum_start = (uint16_t)(vh->csum_start
					    - 14u);
					m.csum_off = vh->csum_offset;
					if (gso_cut(&m, f + 14, len - 14))
						m.csum_partial = true;
					else
						ok = cats_pkt_csum_complete(
						    f + 14, len - 14,
						    m.csum_start,
						    m.csum_off) == 0;
				}
				if (!ok)
					drop_pkt[CATS_DROP_TRUNCATED]++;
				else
					on_packet(f + 14, len - 14, &m, now);
			}
		}
		__atomic_store_n(&h->tp_status, TP_STATUS_KERNEL,
		    __ATOMIC_RELEASE);
		pt->rxi = (pt->rxi + 1) % pt->rxn;
	}
	tx_flush_all();
	/* More frames waiting: come back after other events. */
	if (budget == (unsigned)-1) {
		event_active(pt->ev, EV_READ, 0);
		return RX_BATCH + 1;
	}
	return RX_BATCH - 1 - budget;
}

static bool
ring_ready(const struct port *pt)
{
	const struct tpacket2_hdr *h = (const void *)(pt->rx + pt->rxi *
	    pt->rxfsz);
	return __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) &
	    TP_STATUS_USER;
}

/*
 * Bounded polling: after a batch, watch the receive rings for up to
 * --poll-us, yielding the CPU to any other task, before going back to
 * sleep in the event loop.  While packets keep coming the forwarder is not
 * woken for each (a wakeup and a context switch cost more than a packet);
 * when they stop, it sleeps after the bound.
 */
static void
poll_rings(void)
{
	uint64_t until = cats_clock_mono_ns() + cf.poll_us * 1000;
	for (;;) {
		for (int i = 0; i < nports; i++) {
			if (ports[i].kind == K_PACKET && ring_ready(&ports[i])) {
				event_active(ports[i].ev, EV_READ, 0);
				return;
			}
		}
		/* Whoever else wants this CPU gets it first. */
		sched_yield();
		if (cats_clock_mono_ns() >= until)
			return;
	}
}

static void
rx_tun(struct port *pt, uint64_t now)
{
	for (int i = 0; i < 64; i++) {
		ssize_t n = read(pt->rxfd, wbuf, 65536);
		if (n <= 0)
			break;
		struct rxmeta m = { .in = pt };
		ctr[C_rx_pkts]++;
		ctr[C_rx_bytes] += (size_t)n;
		pt->rx_pkts++;
		on_packet(wbuf, (size_t)n, &m, now);
	}
}

static void
on_port(evutil_socket_t fd, short what, void *arg)
{
	struct port *pt = arg;
	(void)fd;
	(void)what;
	uint64_t now = cats_clock_now();
	if (pt->kind != K_PACKET) {
		rx_tun(pt, now);
		return;
	}
	unsigned n = rx_packet_ring(pt, now);
	fp_offer_queued(now, false);
	if (n > 0 && n <= RX_BATCH && cf.poll_us > 0)
		poll_rings();
}

static int
parse_mac(const char *s, uint8_t *mac)
{
	unsigned v[6];
	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4],
	    &v[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 255)
			return -1;
		mac[i] = (uint8_t)v[i];
	}
	return 0;
}

static int
ring_setup(int fd, int which, size_t fsz, size_t *np, uint8_t **map)
{
	size_t n = *np;
	/*
	 * Blocks are whole pages holding whole frames back to back (frame i
	 * is at i * fsz), as many as fit 64 KiB: the kernel allocates a block
	 * as a power of two of pages, so a 48 KiB block would waste 16.
	 * Frames are 2 KiB or whole pages.
	 */
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t bs = fsz >= 65536 ? fsz : 65536 / fsz * fsz;
	while (bs > fsz && bs % pg != 0)
		bs -= fsz;
	if (bs % pg != 0) {
		errno = EINVAL;
		return -1;
	}
	size_t fpb = bs / fsz;
	n = (n + fpb - 1) / fpb * fpb;
	struct tpacket_req req = {
		.tp_block_size = (unsigned)bs,
		.tp_block_nr = (unsigned)(n / fpb),
		.tp_frame_size = (unsigned)fsz,
		.tp_frame_nr = (unsigned)n,
	};
	if (setsockopt(fd, SOL_PACKET, which, &req, sizeof(req)) < 0)
		return -1;
	*np = n;
	void *m = mmap(NULL, fsz * n, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_POPULATE, fd, 0);
	if (m == MAP_FAILED)
		return -1;
	/*
	 * Write to every page now (an atomic or of 0 changes nothing the
	 * kernel may be writing): in a virtual machine the first write to a
	 * page can trap to the hypervisor, which costs more than a packet.
	 */
	for (size_t off = 0; off < fsz * n; off += pg)
		__atomic_fetch_or((uint32_t *)((uint8_t *)m + off), 0,
		    __ATOMIC_RELAXED);
	*map = m;
	return 0;
}

/*
 * A TPACKET_V2 ring with virtio-net headers on fd, with socket option opt
 * set to 1 (PACKET_COPY_THRESH for receive, PACKET_LOSS for transmit: a
 * frame the kernel refuses is skipped instead of stopping the ring).
 */
static int
ring_open(int fd, int which, int opt, size_t fsz, size_t *np, uint8_t **map)
{
	int one = 1, v2 = TPACKET_V2;
	if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &v2, sizeof(v2)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one,
	    sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_PACKET, opt, &one, sizeof(one)) < 0)
		return -1;
	return ring_setup(fd, which, fsz, np, map);
}

/* The MTU of an interface, 0 if unknown. */
static uint32_t
if_mtu(const char *name)
{
	struct ifreq ifr;
	uint32_t mtu = 0;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return 0;
	memset(&ifr, 0, sizeof(ifr));
	cats_strlcpy(ifr.ifr_name, name, sizeof(ifr.ifr_name));
	if (ioctl(s, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0 &&
	    ifr.ifr_mtu <= 65535)
		mtu = (uint32_t)ifr.ifr_mtu;
	close(s);
	return mtu;
}

static int
open_packet(struct port *pt, char *err, size_t errlen)
{
	int one = 1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	cats_strlcpy(ifr.ifr_name, pt->name, sizeof(ifr.ifr_name));
	pt->ifindex = (int)if_nametoindex(pt->name);
	if (pt->ifindex == 0) {
		snprintf(err, errlen, "%s: no such interface", pt->name);
		return -1;
	}
	pt->rxfd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	pt->txfd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (pt->rxfd < 0 || pt->txfd < 0) {
		snprintf(err, errlen, "%s: AF_PACKET: %s", pt->name,
		    strerror(errno));
		return -1;
	}
	if (ioctl(pt->rxfd, SIOCGIFHWADDR, &ifr) == 0)
		memcpy(pt->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(pt->rxfd, SIOCGIFMTU, &ifr) == 0)
		pt->mtu = (uint32_t)ifr.ifr_mtu;
	/*
	 * RX: virtio-net headers give GSO and CHECKSUM_PARTIAL state.  Slots
	 * hold a frame of the port's MTU (2 KiB up to 1500 bytes), so that
	 * many small packets fit; a larger frame (a GSO super-packet) leaves
	 * its head in the slot and itself on the socket's queue
	 * (COPY_THRESH), for which the receive buffer is made large.
	 */
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t rxf = pt->mtu + 14 + 4 + RX_HDROOM <= RX_FRAME ? RX_FRAME :
	    (pt->mtu + 14 + 4 + RX_HDROOM + pg - 1) / pg * pg;
	/*
	 * TX: frames fit the largest MTU of all ports, so that a segment cut
	 * to a larger port (a jumbo core) leaves here as one GSO frame.
	 */
	size_t big = pt->mtu > tx_mtu ? pt->mtu : tx_mtu;
	size_t txf = big + 14 + TX_OFF <= 2048 ? 2048 :
	    (big + 14 + TX_OFF + pg - 1) / pg * pg;
	int rcvbuf = 32 << 20;
	pt->rxfsz = rxf;
	pt->txfsz = txf;
	/*
	 * Slots: --ring-frames, or RX_RING bytes' worth; a burst of new flows
	 * is held in the ring while the forwarder sends their requests.
	 */
	pt->rxn = cf.ring_frames ? cf.ring_frames : RX_RING / rxf;
	pt->txn = TX_FRAMES;
	if (ring_open(pt->rxfd, PACKET_RX_RING, PACKET_COPY_THRESH, rxf,
	    &pt->rxn, &pt->rx) < 0) {
		snprintf(err, errlen, "%s: RX ring: %s", pt->name,
		    strerror(errno));
		return -1;
	}
	if (setsockopt(pt->rxfd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
	    sizeof(rcvbuf)) < 0)
		setsockopt(pt->rxfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
		    sizeof(rcvbuf));
	setsockopt(pt->rxfd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one,
	    sizeof(one));
	if (ring_open(pt->txfd, PACKET_TX_RING, PACKET_LOSS, txf, &pt->txn,
	    &pt->tx) < 0) {
		snprintf(err, errlen, "%s: TX ring: %s", pt->name,
		    strerror(errno));
		return -1;
	}
	setsockopt(pt->txfd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	/* TCP super-packets go out whole through a vnet-header socket. */
	pt->gsofd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (pt->gsofd >= 0 && (setsockopt(pt->gsofd, SOL_PACKET,
	    PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
	    bind(pt->gsofd, (struct sockaddr *)&(struct sockaddr_ll){
	    .sll_family = AF_PACKET, .sll_ifindex = pt->ifindex },
	    sizeof(struct sockaddr_ll)) < 0)) {
		close(pt->gsofd);
		pt->gsofd = -1;
	}
	if (pt->gsofd >= 0) {
		int sb = 4 << 20;
		setsockopt(pt->gsofd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
	}
	struct sockaddr_ll sa = { .sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_ALL), .sll_ifindex = pt->ifindex };
	if (bind(pt->rxfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(err, errlen, "%s: bind: %s", pt->name, strerror(errno));
		return -1;
	}
	sa.sll_protocol = 0;
	if (bind(pt->txfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(err, errlen, "%s: bind: %s", pt->name, strerror(errno));
		return -1;
	}
	return 0;
}

static int
open_tun(struct port *pt, char *err, size_t errlen)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "/dev/net/tun: %s", strerror(errno));
		return -1;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	cats_strlcpy(ifr.ifr_name, pt->name, sizeof(ifr.ifr_name));
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		snprintf(err, errlen, "%s: TUNSETIFF: %s", pt->name,
		    strerror(errno));
		close(fd);
		return -1;
	}
	cats_fd_nonblock(fd);
	pt->rxfd = pt->txfd = fd;
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s >= 0) {
		/* Bring it up; the caller adds addresses and routes. */
		if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
			ifr.ifr_flags |= IFF_UP;
			ioctl(s, SIOCSIFFLAGS, &ifr);
		}
		if (ioctl(s, SIOCGIFMTU, &ifr) == 0)
			pt->mtu = (uint32_t)ifr.ifr_mtu;
		close(s);
	}
	return 0;
}

/* A port from "af_packet:IF[,peer=MAC]" or "tun:IF"; shared by name. */
static struct port *
port_get(const char *spec, int role)
{
	char name[IFNAMSIZ + 1], peer[32] = "";
	int kind;
	const char *rest;
	if (strncmp(spec, "af_packet:", 10) == 0) {
		kind = K_PACKET;
		rest = spec + 10;
	} else if (strncmp(spec, "tun:", 4) == 0) {
		kind = K_TUN;
		rest = spec + 4;
	} else {
		cats_errorx("%s: a port is af_packet:IFNAME or tun:IFNAME", spec);
		exit(CATS_EXIT_USAGE);
	}
	size_t n = strcspn(rest, ",");
	if (n == 0 || n >= sizeof(name)) {
		cats_errorx("%s: bad interface name", spec);
		exit(CATS_EXIT_USAGE);
	}
	memcpy(name, rest, n);
	name[n] = '\0';
	if (rest[n] == ',') {
		if (strncmp(rest + n + 1, "peer=", 5) != 0 ||
		    strlen(rest + n + 6) >= sizeof(peer)) {
			cats_errorx("%s: expected ,peer=MAC", spec);
			exit(CATS_EXIT_USAGE);
		}
		strcpy(peer, rest + n + 6);
	}
	for (int i = 0; i < nports; i++) {
		if (strcmp(ports[i].name, name) == 0) {
			if (ports[i].kind != kind) {
				cats_errorx("%s: used as two kinds of port",
				    name);
				exit(CATS_EXIT_USAGE);
			}
			ports[i].roles |= role;
			return &ports[i];
		}
	}
	if (nports == MAXPORTS) {
		cats_errorx("too many ports");
		exit(CATS_EXIT_USAGE);
	}
	struct port *pt = &ports[nports++];
	memset(pt, 0, sizeof(*pt));
	pt->kind = kind;
	pt->roles = role;
	cats_strlcpy(pt->name, name, sizeof(pt->name));
	pt->rxfd = pt->txfd = pt->gsofd = -1;
	if (peer[0]) {
		if (parse_mac(peer, pt->peer) < 0) {
			cats_errorx("%s: bad MAC address", peer);
			exit(CATS_EXIT_USAGE);
		}
		pt->has_peer = pt->fixed_peer = true;
	}
	return pt;
}

/* ---- control input ---- */

static void
after_sync(uint64_t now)
{
	/* Pending records held while the bindings were fetched again. */
	size_t n = 0;
	struct cats_pend **v = malloc(tab.st.pending * sizeof(*v) + 1);
	if (v == NULL)
		return;
	for (size_t i = 0; i < tab.pend_by_key.cap; i++)
		if (tab.pend_by_key.s[i].h)
			v[n++] = tab.pend_by_key.s[i].item;
	for (size_t i = 0; i < n; i++) {
		struct cats_pend *p = v[i];
		if (p->sent)
			continue;
		struct cats_fbind *b = cats_fwd_lookup(&tab, &p->key);
		if (b != NULL) {
			release_held(b, cats_fwd_pend_take(&tab, p), now);
		} else if (p->established) {
			drop_held(cats_fwd_pend_take(&tab, p),
			    &ctr[C_drop_not_synced]);
		} else {
			send_request(p, NULL, now);
		}
	}
	free(v);
}

/*
 * The end of a re-sync at manager epoch e: bindings of older epochs that
 * were not sent again belong to a fenced owner and go.
 */
static void
fence_older(uint64_t e)
{
	size_t n = 0;
	struct cats_fbind **v = malloc((tab.st.bindings + 1) * sizeof(*v));
	if (v == NULL)
		return;
	if (e > tab.epoch_max)
		tab.epoch_max = e;
	for (size_t i = 0; i < tab.bind_by_id.cap; i++) {
		struct cats_fbind *b = tab.bind_by_id.s[i].item;
		if (tab.bind_by_id.s[i].h && b->epoch < e)
			v[n++] = b;
	}
	for (size_t i = 0; i < n; i++) {
		ctr[C_bindings_removed]++;
		send_status(v[i], CATS_EV_REMOVED, "fenced", 0, 0);
		cats_fwd_remove(&tab, v[i]);
	}
	free(v);
}

static void
on_binding(const struct cats_binding *b, uint64_t now)
{
	struct cats_fbind *fb;
	struct cats_held *rel;
	int ev = 0;
	int r = cats_fwd_apply(&tab, b, now, &fb, &rel, &ev);
	if (r) {
		ctr[C_bindings_refused]++;
		cats_warnx("binding %" PRIu64 ": refused: %s", b->id,
		    cats_fwd_reason_names[r]);
		send_status(NULL, CATS_EV_FAILED, cats_fwd_reason_names[r],
		    b->id, b->epoch);
		return;
	}
	if (ev == CATS_EV_REMOVED) {
		ctr[C_bindings_removed]++;
		send_status(fb, CATS_EV_REMOVED, b->reason, 0, 0);
		cats_fwd_remove(&tab, fb);
		return;
	}
	ctr[ev == CATS_EV_INSTALLED ? C_bindings_installed :
	    C_bindings_refreshed]++;
	/* Forward and reverse state are in; now the held packets go. */
	release_held(fb, rel, now);
	send_status(fb, ev, NULL, 0, 0);
}

/* A control record; the stream scanned it into ctl_dec's tokens. */
static void
on_ctl_item(struct cats_stream *s, const uint8_t *p, size_t n, uint64_t index,
    const struct cats_peer *peer, void *arg)
{
	struct chan *c = arg;
	struct cats_rec r;
	struct cats_err e;
	(void)s;
	(void)peer;
	memset(&e, 0, sizeof(e));
	if (cats_rec_from_toks(&ctl_dec, &r, &e) < 0) {
		char msg[400];
		ctr[C_ctl_bad]++;
		cats_warnx("%s: %s", c->name, cats_err_fmt(&e, index, msg,
		    sizeof(msg)));
		return;
	}
	if (cf.has_peers) {
		const struct cats_key *who;
		if (cats_rec_verify(&r, &cf.peers, &who, &e) < 0) {
			ctr[C_ctl_auth_fail]++;
			cats_audit("auth-fail", "channel=%s record=%" PRIu64
			    " reason=\"%s\"", c->name, index, e.reason);
			return;
		}
	}
	uint64_t now = cats_clock_now();
	switch (r.type) {
	case CATS_T_BINDING:
		on_binding(&r.u.binding, now);
		break;
	case CATS_T_ERROR: {
		ctr[C_errors_received]++;
		struct cats_pend *pd = cats_fwd_error(&tab, &r.u.error);
		if (pd != NULL) {
			tab.st.pend_errors++;
			drop_held(cats_fwd_pend_take(&tab, pd),
			    &ctr[C_drop_pending_error]);
		}
		break;
	}
	case CATS_T_STATUS:
		/* cats-bind answers a hello after it re-sent the bindings. */
		if (c->is_bind && r.u.status.event == CATS_EV_HELLO) {
			if (CATS_HAS(&r.u.status, STA, epoch))
				fence_older(r.u.status.epoch);
			if (!synced) {
				synced = true;
				cats_info("bindings fetched again; forwarding");
				after_sync(now);
			}
		}
		break;
	default:
		break;
	}
}

static void
on_ctl_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	char msg[400];
	(void)s;
	ctr[C_ctl_bad]++;
	cats_warnx("%s: %s", ((struct chan *)arg)->name, cats_err_fmt(e, index,
	    msg, sizeof(msg)));
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	chan_connect(arg);
}

static void
on_ctl_eof(struct cats_stream *s, int error, void *arg)
{
	struct chan *c = arg;
	(void)s;
	cats_warnx("%s: connection closed%s%s", c->name, error ? ": " : "",
	    error ? strerror(error) : "");
	cats_stream_free(c->s);
	c->s = NULL;
	cats_buf_reset(&c->out);
	struct timeval tv = { 1, 0 };
	evtimer_add(c->retry, &tv);
}

static void
chan_connect(struct chan *c)
{
	char err[256];
	int fd = cats_ep_open(&c->ep, true, err, sizeof(err));
	if (fd < 0) {
		cats_warnx("%s: %s (retrying)", c->name, err);
		struct timeval tv = { 1, 0 };
		evtimer_add(c->retry, &tv);
		return;
	}
	static const struct cats_stream_cbs cbs = { .item = on_ctl_item,
		.bad = on_ctl_bad, .eof = on_ctl_eof };
	c->s = cats_stream_new(base, fd, fd, cats_ep_is_dgram(&c->ep), NULL, 0,
	    &cbs, c);
	if (c->s == NULL) {
		close(fd);
		return;
	}
	cats_stream_own(c->s);
	cats_stream_decode_into(c->s, &ctl_dec);
	if (c->is_bind) {
		ctr[C_bind_connects]++;
		send_status(NULL, CATS_EV_HELLO, NULL, 0, 0);
	}
}

static void
chan_init(struct chan *c, const char *spec)
{
	char err[256];
	c->spec = spec;
	if (cats_ep_parse(spec, &c->ep, err, sizeof(err)) < 0) {
		cats_errorx("%s: %s", spec, err);
		exit(CATS_EXIT_USAGE);
	}
	if (c->ep.kind != CATS_EP_TCP && c->ep.kind != CATS_EP_UNIX &&
	    c->ep.kind != CATS_EP_UDP) {
		cats_errorx("%s: a control channel is tcp:, unix: or udp:", spec);
		exit(CATS_EXIT_USAGE);
	}
	c->dgram = cats_ep_is_dgram(&c->ep);
	c->retry = evtimer_new(base, on_retry, c);
	c->flush = event_new(base, -1, 0, on_flush, c);
	chan_connect(c);
}

/* ---- timers, signals, stats ---- */

static void
pend_expired(struct cats_pend *p, void *arg)
{
	(void)arg;
	drop_held(cats_fwd_pend_take(&tab, p), &ctr[C_drop_pending_timeout]);
}

static void
bind_expired(struct cats_fbind *b, const char *why, void *arg)
{
	(void)arg;
	ctr[C_bindings_expired]++;
	send_status(b, CATS_EV_EXPIRED, why, 0, 0);
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	uint64_t now = cats_clock_now();
	fp_follow_peers();
	if (!synced && now >= sync_deadline) {
		cats_warnx("no binding sync from %s; forwarding anyway",
		    cf.bind_ep ? cf.bind_ep : "(none)");
		synced = true;
		after_sync(now);
	}
	/*
	 * Bindings are visited a tenth of the table per tick (100 ms), the
	 * whole once a second, whatever their number: a refreshed status
	 * (reason activity) for those that carried traffic, then expiry.
	 */
	static size_t pos;
	size_t cap = tab.bind_by_id.cap, n = cap / 10 + 1;
	for (size_t j = 0; ch_bind.s != NULL && j < n && j < cap; j++) {
		size_t i = (pos + j) & (cap - 1);
		struct cats_fbind *b = tab.bind_by_id.s[i].item;
		if (tab.bind_by_id.s[i].h == 0)
			continue;
		if (b->fast)
			fp_sync(b, now, NULL);
		if (b->pkts + b->rpkts == b->rep_pkts)
			continue;
		uint64_t every = b->idle_ms ? b->idle_ms / 3 : 10000;
		if (now - b->reported < every)
			continue;
		b->reported = now;
		b->rep_pkts = b->pkts + b->rpkts;
		send_status(b, CATS_EV_REFRESHED, "activity", 0, 0);
	}
	cats_fwd_expire_step(&tab, now, &pos, n, pend_expired, bind_expired,
	    NULL);
	fp_offer_queued(now, true);
	tx_flush_all();
}

/* Frames the kernel could not put in the receive rings (ring full). */
static void
ring_drops(void)
{
	for (int i = 0; i < nports; i++) {
		struct tpacket_stats ts;
		socklen_t sl = sizeof(ts);
		if (ports[i].kind == K_PACKET && getsockopt(ports[i].rxfd,
		    SOL_PACKET, PACKET_STATISTICS, &ts, &sl) == 0)
			ctr[C_rx_ring_drops] += ts.tp_drops;
	}
}

static void
dump_stats(void)
{
	ring_drops();
	struct cats_kv kv[C__N + CATS_DROP__N + CATS_FR__N + 16];
	char names[CATS_DROP__N + CATS_FR__N][48];
	size_t n = 0, nn = 0;
	for (int i = 0; i < C__N; i++) {
		kv[n].k = ctr_names[i];
		kv[n++].v = ctr[i];
	}
	for (int i = 1; i < CATS_DROP__N; i++) {
		snprintf(names[nn], sizeof(names[nn]), "drop_%s",
		    cats_drop_names[i]);
		kv[n].k = names[nn++];
		kv[n++].v = drop_pkt[i];
	}
	for (int i = 1; i < CATS_FR__N; i++) {
		if (i > CATS_FR_PEND_CLIENT_FULL && i != CATS_FR_NOMEM &&
		    i != CATS_FR_BAD)
			continue;
		snprintf(names[nn], sizeof(names[nn]), "drop_%s",
		    cats_fwd_reason_names[i]);
		for (char *q = names[nn]; *q; q++)
			if (*q == '-')
				*q = '_';
		kv[n].k = names[nn++];
		kv[n++].v = drop_pend[i];
	}
	kv[n].k = "bindings";
	kv[n++].v = tab.st.bindings;
	kv[n].k = "pending";
	kv[n++].v = tab.st.pending;
	kv[n].k = "pending_held";
	kv[n++].v = tab.st.held;
	kv[n].k = "synced";
	kv[n++].v = synced;
	if (fp != NULL) {
		uint64_t fc[CATS_FP__N];
		cats_fwd_fast_counters(fp, fc);
		kv[n].k = "fast_keys";
		kv[n++].v = fp_keys;
		kv[n].k = "fast_hit";
		kv[n++].v = fc[CATS_FP_HIT];
		kv[n].k = "fast_pass";
		kv[n++].v = fc[CATS_FP_PASS];
		kv[n].k = "fast_fail";
		kv[n++].v = fc[CATS_FP_FAIL];
	}
	struct cats_rec r;
	cats_stats_rec(&r, "cats-fwd", cf.id, kv, n, cats_clock_now());
	FILE *f = stderr;
	if (cf.stats_ep != NULL && strcmp(cf.stats_ep, "-") == 0)
		f = stdout;
	else if (cf.stats_ep != NULL && strncmp(cf.stats_ep, "file:", 5) == 0)
		f = fopen(cf.stats_ep + 5, "a");
	if (f == NULL)
		return;
	cats_rec_print_json(&r, f);
	fflush(f);
	if (f != stderr && f != stdout)
		fclose(f);
}

/* Per-binding counters: one status record per binding, event refreshed. */
static void
dump_bindings(void)
{
	for (size_t i = 0; i < tab.bind_by_id.cap; i++) {
		if (tab.bind_by_id.s[i].h == 0)
			continue;
		struct cats_fbind *b = tab.bind_by_id.s[i].item;
		if (b->fast)
			fp_sync(b, cats_clock_now(), NULL);
		struct cats_rec r;
		cats_fwd_status(&tab, b,
		    CATS_EV_REFRESHED, "counters", cats_clock_now(), &r);
		cats_rec_print_json(&r, stderr);
	}
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	(void)arg;
	if (sig == SIGUSR1) {
		dump_stats();
	} else if (sig == SIGUSR2) {
		dump_bindings();
	} else {
		event_base_loopbreak(base);
	}
}

/* ---- options ---- */

static void
need_ip(const char *s, struct cats_ip *ip, const char *what)
{
	if (cats_ip_parse(s, strlen(s), ip) < 0) {
		cats_errorx("%s: bad %s address", s, what);
		exit(CATS_EXIT_USAGE);
	}
}

static uint64_t
need_u64(const char *s, uint64_t min, uint64_t max, const char *opt)
{
	char err[128];
	uint64_t v;
	if (cats_parse_u64(s, min, max, &v, err, sizeof(err)) < 0) {
		cats_errorx("--%s: %s", opt, err);
		exit(CATS_EXIT_USAGE);
	}
	return v;
}

static uint64_t
need_ms(const char *s, const char *opt)
{
	char err[128];
	uint64_t v;
	if (cats_parse_ms(s, &v, err, sizeof(err)) < 0) {
		cats_errorx("--%s: %s", opt, err);
		exit(CATS_EXIT_USAGE);
	}
	return v;
}

/* CSID=ADDR[:PORT][/PROTO] (IPv6: CSID=[ADDR]:PORT/PROTO). */
static void
add_service(const char *arg, bool intercept)
{
	if (cf.nsvc == CATS_ARRAY_LEN(cf.svc)) {
		cats_errorx("too many services");
		exit(CATS_EXIT_USAGE);
	}
	struct svc *s = &cf.svc[cf.nsvc++];
	memset(s, 0, sizeof(*s));
	char buf[256];
	const char *a = arg;
	if (!intercept) {
		const char *eq = strchr(arg, '=');
		if (eq == NULL || eq == arg || (size_t)(eq - arg) > CATS_ID) {
			cats_errorx("--service %s: expected CSID=ADDR", arg);
			exit(CATS_EXIT_USAGE);
		}
		memcpy(s->cs_id, arg, (size_t)(eq - arg));
		a = eq + 1;
	}
	if (cats_strlcpy(buf, a, sizeof(buf)) >= sizeof(buf))
		exit(CATS_EXIT_USAGE);
	char *slash = strchr(buf, '/');
	if (slash != NULL) {
		*slash = '\0';
		const char *pr = slash + 1;
		s->proto = strcmp(pr, "tcp") == 0 ? 6 : strcmp(pr, "udp") == 0 ?
		    17 : (uint8_t)need_u64(pr, 1, 255, "service");
	}
	char *host = buf, *port = NULL;
	if (buf[0] == '[') {
		char *rb = strchr(buf, ']');
		if (rb == NULL)
			exit(CATS_EXIT_USAGE);
		*rb = '\0';
		host = buf + 1;
		if (rb[1] == ':')
			port = rb + 2;
	} else if (strchr(buf, ':') == strrchr(buf, ':') && strchr(buf, ':')) {
		port = strchr(buf, ':');
		*port++ = '\0';
	}
	need_ip(host, &s->addr, "service");
	if (port != NULL)
		s->port = (uint16_t)need_u64(port, 1, 65535, "service");
}

static void
add_prefix(const char *arg)
{
	if (cf.nowns == CATS_ARRAY_LEN(cf.owns))
		exit(CATS_EXIT_USAGE);
	struct prefix *px = &cf.owns[cf.nowns++];
	char buf[64];
	cats_strlcpy(buf, arg, sizeof(buf));
	char *sl = strchr(buf, '/');
	if (sl != NULL)
		*sl++ = '\0';
	need_ip(buf, &px->a, "prefix");
	unsigned max = px->a.af == 4 ? 32 : 128;
	px->len = sl ? (unsigned)need_u64(sl, 0, max, "owns") : max;
}

enum { O_CLIENT = 256, O_CORE, O_SITE, O_SELECT, O_BIND, O_KEY, O_PEERS,
	O_SRC4, O_SRC6, O_SID, O_OWNS, O_SERVICE, O_INTERCEPT, O_AFFINITY,
	O_MODEB, O_PREC, O_TENANT, O_DP, O_MTU, O_PFLOW, O_PPKTS, O_PFLOWS,
	O_PCLIENT, O_PTIME, O_ICMP, O_SYNCTO, O_EPOCH, O_RING, O_STATS, O_LOG,
	O_ID, O_VERSION, O_JUMBO, O_POLL, O_RETURN, O_FAST, O_RESERVE,
	O_PATHDOWN };

static const struct option longopts[] = {
	{ "affinity", required_argument, NULL, O_AFFINITY },
	{ "bind", required_argument, NULL, O_BIND },
	{ "client", required_argument, NULL, O_CLIENT },
	{ "core", required_argument, NULL, O_CORE },
	{ "dataplane", required_argument, NULL, O_DP },
	{ "epoch", required_argument, NULL, O_EPOCH },
	{ "fast-path", no_argument, NULL, O_FAST },
	{ "help", no_argument, NULL, 'h' },
	{ "icmp-unreach", no_argument, NULL, O_ICMP },
	{ "id", required_argument, NULL, O_ID },
	{ "intercept", required_argument, NULL, O_INTERCEPT },
	{ "jumbo-core", no_argument, NULL, O_JUMBO },
	{ "key", required_argument, NULL, O_KEY },
	{ "log", required_argument, NULL, O_LOG },
	{ "mode-b", required_argument, NULL, O_MODEB },
	{ "mtu", required_argument, NULL, O_MTU },
	{ "owns", required_argument, NULL, O_OWNS },
	{ "path-down", no_argument, NULL, O_PATHDOWN },
	{ "peer-keys", required_argument, NULL, O_PEERS },
	{ "pending-client", required_argument, NULL, O_PCLIENT },
	{ "pending-flow", required_argument, NULL, O_PFLOW },
	{ "pending-flows", required_argument, NULL, O_PFLOWS },
	{ "pending-pkts", required_argument, NULL, O_PPKTS },
	{ "pending-timeout", required_argument, NULL, O_PTIME },
	{ "poll-us", required_argument, NULL, O_POLL },
	{ "precedence", required_argument, NULL, O_PREC },
	{ "reserve-flows", required_argument, NULL, O_RESERVE },
	{ "return", required_argument, NULL, O_RETURN },
	{ "ring-frames", required_argument, NULL, O_RING },
	{ "select", required_argument, NULL, O_SELECT },
	{ "service", required_argument, NULL, O_SERVICE },
	{ "sid", required_argument, NULL, O_SID },
	{ "site", required_argument, NULL, O_SITE },
	{ "src4", required_argument, NULL, O_SRC4 },
	{ "src6", required_argument, NULL, O_SRC6 },
	{ "stats", required_argument, NULL, O_STATS },
	{ "sync-timeout", required_argument, NULL, O_SYNCTO },
	{ "tenant", required_argument, NULL, O_TENANT },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, O_VERSION },
	{ NULL, 0, NULL, 0 },
};

int
main(int argc, char **argv)
{
	const char *client = NULL, *core = NULL, *site = NULL;
	const char *keyfile = NULL, *peerfile = NULL;
	int verbose = 1, c;
	char err[256];
	cats_tool_init(argv[0]);
	cf.dataplane = CATS_DP_SRV6;
	cf.sync_ms = 3000;
	cf.poll_us = 0;
	cf.epoch = 0;
	cf.reserve_flows = 8192;
	while ((c = getopt_long(argc, argv, "hv", longopts, NULL)) != -1) {
		struct cats_ip ip;
		switch (c) {
		case 'h':
			usage(CATS_EXIT_OK);
			break;
		case 'v':
			verbose++;
			break;
		case O_VERSION:
			cats_tool_version();
			return CATS_EXIT_OK;
		case O_ID:
			if (strlen(optarg) == 0 || strlen(optarg) > CATS_ID)
				usage(CATS_EXIT_USAGE);
			cf.id = optarg;
			break;
		case O_CLIENT:
			client = optarg;
			break;
		case O_CORE:
			core = optarg;
			break;
		case O_SITE:
			site = optarg;
			break;
		case O_SELECT:
			cf.select_ep = optarg;
			break;
		case O_BIND:
			cf.bind_ep = optarg;
			break;
		case O_KEY:
			keyfile = optarg;
			break;
		case O_PEERS:
			peerfile = optarg;
			break;
		case O_SRC4:
			need_ip(optarg, &ip, "source");
			if (ip.af != 4)
				usage(CATS_EXIT_USAGE);
			memcpy(cf.fc.src4, ip.a, 4);
			cf.fc.has_src4 = true;
			break;
		case O_SRC6:
			need_ip(optarg, &ip, "source");
			if (ip.af != 6)
				usage(CATS_EXIT_USAGE);
			memcpy(cf.fc.src6, ip.a, 16);
			cf.fc.has_src6 = true;
			break;
		case O_SID:
			if (cf.nsids == CATS_ARRAY_LEN(cf.sids))
				usage(CATS_EXIT_USAGE);
			need_ip(optarg, &cf.sids[cf.nsids++], "SID");
			break;
		case O_OWNS:
			add_prefix(optarg);
			break;
		case O_RETURN: {
			char *eq = strchr(optarg, '=');
			if (eq == NULL || eq == optarg ||
			    cf.nret == CATS_ARRAY_LEN(cf.ret)) {
				cats_errorx("--return %s: expected ID=ADDR "
				    "(at most %zu)", optarg,
				    CATS_ARRAY_LEN(cf.ret));
				exit(CATS_EXIT_USAGE);
			}
			*eq = '\0';
			cf.ret[cf.nret].id = optarg;
			need_ip(eq + 1, &cf.ret[cf.nret].addr, "return");
			cf.nret++;
			break;
		}
		case O_SERVICE:
			add_service(optarg, false);
			break;
		case O_INTERCEPT:
			add_service(optarg, true);
			break;
		case O_AFFINITY:
			if (strcmp(optarg, "5tuple") == 0)
				cf.affinity = CATS_AFF_5TUPLE;
			else if (strcmp(optarg, "client") == 0)
				cf.affinity = CATS_AFF_CLIENT;
			else
				usage(CATS_EXIT_USAGE);
			break;
		case O_MODEB: {
			unsigned pr, po, off;
			char t[8];
			if (sscanf(optarg, "%7[a-z]:%u:%u", t, &po, &off) == 3)
				pr = strcmp(t, "tcp") == 0 ? 6 :
				    strcmp(t, "udp") == 0 ? 17 : 0;
			else if (sscanf(optarg, "%u:%u:%u", &pr, &po, &off) != 3)
				pr = 0;
			if ((pr != 6 && pr != 17) || po == 0 || po > 65535 ||
			    off > 1400) {
				cats_errorx("--mode-b %s: expected "
				    "tcp|udp:PORT:OFFSET", optarg);
				exit(CATS_EXIT_USAGE);
			}
			cf.modeb_proto = (int)pr;
			cf.modeb_port = (int)po;
			cf.modeb_off = (int)off;
			break;
		}
		case O_PREC:
			cf.precedence = strcmp(optarg, "refuse") == 0 ? 0 :
			    strcmp(optarg, "csid") == 0 ? 1 :
			    strcmp(optarg, "address") == 0 ? 2 : -1;
			if (cf.precedence < 0)
				usage(CATS_EXIT_USAGE);
			break;
		case O_TENANT:
			if (strlen(optarg) > CATS_ID)
				usage(CATS_EXIT_USAGE);
			cf.tenant = optarg;
			break;
		case O_DP:
			cf.dataplane = cats_enum_index(cats_dataplane_names,
			    optarg, strlen(optarg));
			if (cf.dataplane < 0 || cf.dataplane == CATS_DP_SRMPLS)
				usage(CATS_EXIT_USAGE);
			break;
		case O_MTU:
			cf.mtu = (uint32_t)need_u64(optarg, 576, 65535, "mtu");
			break;
		case O_PFLOW:
			cf.fc.pend_pkts_flow = (unsigned)need_u64(optarg, 1,
			    1024, "pending-flow");
			break;
		case O_PPKTS:
			cf.fc.pend_pkts = (unsigned)need_u64(optarg, 1, 1 << 24,
			    "pending-pkts");
			break;
		case O_PFLOWS:
			cf.fc.pend_flows = (unsigned)need_u64(optarg, 1, 1 << 24,
			    "pending-flows");
			break;
		case O_PCLIENT:
			cf.fc.pend_client = (unsigned)need_u64(optarg, 1, 65535,
			    "pending-client");
			break;
		case O_PTIME:
			cf.fc.pend_ms = need_ms(optarg, "pending-timeout");
			break;
		case O_ICMP:
			cf.icmp_unreach = true;
			break;
		case O_JUMBO:
			cf.jumbo = true;
			break;
		case O_FAST:
			cf.fast = true;
			break;
		case O_PATHDOWN:
			cf.path_down = true;
			break;
		case O_SYNCTO:
			cf.sync_ms = need_ms(optarg, "sync-timeout");
			break;
		case O_EPOCH:
			cf.epoch = need_u64(optarg, 1, CATS_U53 / 1000 - 1,
			    "epoch");
			break;
		case O_POLL:
			cf.poll_us = need_u64(optarg, 0, 1000, "poll-us");
			break;
		case O_RESERVE:
			cf.reserve_flows = (unsigned)need_u64(optarg, 0, 1u << 20,
			    "reserve-flows");
			break;
		case O_RING:
			cf.ring_frames = (unsigned)need_u64(optarg, 8, 65536,
			    "ring-frames");
			break;
		case O_STATS:
			cf.stats_ep = optarg;
			break;
		case O_LOG:
			if (cats_log_open(optarg) < 0)
				usage(CATS_EXIT_USAGE);
			break;
		default:
			usage(CATS_EXIT_USAGE);
		}
	}
	if (optind != argc || cf.id == NULL || core == NULL ||
	    (client == NULL && site == NULL)) {
		cats_errorx("--id, --core and --client or --site are required");
		usage(CATS_EXIT_USAGE);
	}
	cats_log_verbosity(verbose);
	verbosity = verbose;
	if (keyfile != NULL) {
		if (cats_key_load(&cf.key, keyfile, -1, err, sizeof(err)) < 0 ||
		    cf.key.kind == CATS_KEY_ED25519_PUBLIC) {
			cats_errorx("%s", keyfile ? err : "bad key");
			return CATS_EXIT_NOPERM;
		}
		cf.has_key = true;
	}
	if (peerfile != NULL) {
		if (cats_keyring_load(&cf.peers, peerfile, err,
		    sizeof(err)) < 0) {
			cats_errorx("%s", err);
			return CATS_EXIT_NOPERM;
		}
		cf.has_peers = true;
	}
	if (cf.tenant != NULL)
		cf.tenant_h = cats_hash_str(cf.tenant);
	if (cf.epoch == 0)
		cf.epoch = cats_clock_now();
	cf.fc.id = cf.id;
	cf.fc.ret = cf.ret;
	cf.fc.nret = cf.nret;
	if (cats_tool_reserve((size_t)cf.reserve_flows *
	    cats_fwd_flow_bytes()) < 0)
		cats_warnx("--reserve-flows %u: out of memory; not reserved",
		    cf.reserve_flows);
	if (cats_fwd_init(&tab, &cf.fc) < 0)
		return CATS_EXIT_FAIL;
	tab.next_txn = cf.epoch * 1000 % (CATS_U53 / 2);
	cats_dec_init(&ctl_dec, NULL);

	if (client != NULL)
		p_client = port_get(client, PORT_CLIENT);
	p_core = port_get(core, PORT_CORE);
	if (site != NULL)
		p_site = port_get(site, PORT_SITE);
	base = event_base_new();
	if (base == NULL)
		return CATS_EXIT_FAIL;
	tx_flush_ev = event_new(base, -1, 0, on_tx_flush, NULL);
	tx_mtu = cf.mtu;
	for (int i = 0; i < nports; i++) {
		uint32_t mtu = if_mtu(ports[i].name);
		if (mtu > tx_mtu)
			tx_mtu = mtu;
	}
	for (int i = 0; i < nports; i++) {
		struct port *pt = &ports[i];
		int r = pt->kind == K_PACKET ? open_packet(pt, err, sizeof(err))
		    : open_tun(pt, err, sizeof(err));
		if (r < 0) {
			cats_errorx("%s", err);
			return CATS_EXIT_FAIL;
		}
		pt->ev = event_new(base, pt->rxfd, EV_READ | EV_PERSIST, on_port,
		    pt);
		event_add(pt->ev, NULL);
	}
	if (cf.fast && fp_start(err, sizeof(err)) < 0) {
		cats_errorx("--fast-path: %s", err);
		return CATS_EXIT_FAIL;
	}
	icmp_tokens = 100;
	icmp_last = cats_clock_now();
	synced = cf.bind_ep == NULL;
	sync_deadline = cats_clock_now() + cf.sync_ms;
	if (cf.select_ep != NULL)
		chan_init(&ch_select, cf.select_ep);
	if (cf.bind_ep != NULL)
		chan_init(&ch_bind, cf.bind_ep);

	struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
	struct timeval tv = { 0, 100000 };
	event_add(tick, &tv);
	int sigs[] = { SIGTERM, SIGINT, SIGUSR1, SIGUSR2 };
	struct event *sev[4];
	for (int i = 0; i < 4; i++) {
		sev[i] = evsignal_new(base, sigs[i], on_signal, NULL);
		event_add(sev[i], NULL);
	}
	cats_info("%s: forwarding (epoch %" PRIu64 ")", cf.id, cf.epoch);
	event_base_dispatch(base);
	dump_stats();
	chan_flush(&ch_bind);
	chan_flush(&ch_select);
	if (ch_bind.s != NULL)
		cats_stream_flush(ch_bind.s);
	if (ch_select.s != NULL)
		cats_stream_flush(ch_select.s);
	for (int i = 0; i < 4; i++)
		event_free(sev[i]);
	event_free(tick);
	/* The kernel stops forwarding with the program gone: no map edits. */
	tab.fast_sync = NULL;
	tab.fast_drop = NULL;
	cats_fwd_fast_close(fp);
	cats_fwd_free(&tab);
	cats_dec_free(&ctl_dec);
	return CATS_EXIT_OK;
}
