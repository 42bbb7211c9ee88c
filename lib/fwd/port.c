/*
 * port.c - AF_PACKET (TPACKET_V2 rings), TUN and fake ports (port.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/if_packet.h>
#include <linux/sockios.h>
#include <linux/if_tun.h>
#include <net/ethernet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/cats.h"
#include "fwd/port.h"
#include "net/ep.h"

#define TX_VNET (TPACKET2_HDRLEN - sizeof(struct sockaddr_ll))
#define TX_OFF (TX_VNET + sizeof(struct virtio_net_hdr))

size_t
cats_port_tx_off(void)
{
	return TX_OFF;
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

int
cats_port_parse(const char *spec, int role, struct cats_port *pt, char *err,
    size_t errlen)
{
	char name[IFNAMSIZ + 1], peer[32] = "";
	int kind;
	const char *rest;
	if (strncmp(spec, "af_packet:", 10) == 0) {
		kind = CATS_PORT_PACKET;
		rest = spec + 10;
	} else if (strncmp(spec, "tun:", 4) == 0) {
		kind = CATS_PORT_TUN;
		rest = spec + 4;
	} else {
		snprintf(err, errlen, "%s: a port is af_packet:IFNAME or "
		    "tun:IFNAME", spec);
		return -1;
	}
	size_t n = strcspn(rest, ",");
	if (n == 0 || n >= sizeof(name)) {
		snprintf(err, errlen, "%s: bad interface name", spec);
		return -1;
	}
	memcpy(name, rest, n);
	name[n] = '\0';
	if (rest[n] == ',') {
		if (strncmp(rest + n + 1, "peer=", 5) != 0 ||
		    strlen(rest + n + 6) >= sizeof(peer)) {
			snprintf(err, errlen, "%s: expected ,peer=MAC", spec);
			return -1;
		}
		strcpy(peer, rest + n + 6);
	}
	memset(pt, 0, sizeof(*pt));
	pt->kind = kind;
	pt->roles = role;
	cats_strlcpy(pt->name, name, sizeof(pt->name));
	pt->rxfd = pt->txfd = pt->gsofd = -1;
	if (peer[0]) {
		if (parse_mac(peer, pt->peer) < 0) {
			snprintf(err, errlen, "%s: bad MAC address", peer);
			return -1;
		}
		pt->has_peer = pt->fixed_peer = true;
	}
	return 0;
}

void
cats_port_fake(struct cats_port *pt, const char *name, int role, int ifindex,
    uint32_t mtu)
{
	memset(pt, 0, sizeof(*pt));
	pt->kind = CATS_PORT_FAKE;
	pt->roles = role;
	cats_strlcpy(pt->name, name, sizeof(pt->name));
	pt->ifindex = ifindex;
	pt->mtu = mtu;
	pt->rxfd = pt->txfd = pt->gsofd = -1;
	uint8_t mac[6] = { 2, 0, 0, 0, 0, (uint8_t)ifindex };
	uint8_t peer[6] = { 2, 0, 0, 0, 1, (uint8_t)ifindex };
	memcpy(pt->mac, mac, 6);
	memcpy(pt->peer, peer, 6);
	pt->has_peer = pt->fixed_peer = true;
	pt->sent_tail = &pt->sent;
}

void
cats_port_sent_free(struct cats_port *pt)
{
	struct cats_port_sent *s = pt->sent;
	while (s != NULL) {
		struct cats_port_sent *n = s->next;
		free(s);
		s = n;
	}
	pt->sent = NULL;
	pt->sent_tail = &pt->sent;
	pt->nsent = 0;
}

void
cats_port_l2(const struct cats_port *pt, uint8_t *d, int ipv)
{
	if (pt->has_peer)
		memcpy(d, pt->peer, 6);
	else
		memset(d, 0xff, 6);
	memcpy(d + 6, pt->mac, 6);
	d[12] = ipv == 4 ? 0x08 : ipv == CATS_L2_MPLS ? 0x88 : 0x86;
	d[13] = ipv == 4 ? 0x00 : ipv == CATS_L2_MPLS ? 0x47 : 0xdd;
}

/* ---- transmit ---- */

uint8_t *
cats_port_tx_frame(struct cats_port *pt)
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

void
cats_port_tx_flush(struct cats_port *pt)
{
	if (pt->kind == CATS_PORT_PACKET && pt->txq > 0) {
		send(pt->txfd, NULL, 0, MSG_DONTWAIT);
		pt->txq = 0;
	}
}

size_t
cats_port_tx_room(const struct cats_port *pt)
{
	return pt->kind == CATS_PORT_PACKET ? pt->txfsz - TX_OFF - 14 : 0;
}

/*
 * The virtio-net header says the whole frame is header (hdr_len): the
 * kernel copies it into the skb's linear part instead of attaching the
 * ring's pages, which a veth would copy again into fresh pages.
 */
void
cats_port_tx_commit(struct cats_port *pt, uint8_t *f, size_t len,
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
	pt->tx_bytes += len;
	if (++pt->txq >= CATS_PORT_RX_BATCH)
		cats_port_tx_flush(pt);
}

int
cats_port_send(struct cats_port *pt, const uint8_t *ip, size_t len)
{
	return cats_port_send_l2(pt, ip, len, ip[0] >> 4);
}

int
cats_port_send_l2(struct cats_port *pt, const uint8_t *ip, size_t len, int l2)
{
	if (pt->kind == CATS_PORT_FAKE) {
		struct cats_port_sent *s = malloc(sizeof(*s) + len);
		if (s == NULL)
			return -1;
		s->next = NULL;
		s->len = len;
		s->l2 = l2;
		memcpy(s->ip, ip, len);
		*pt->sent_tail = s;
		pt->sent_tail = &s->next;
		pt->nsent++;
	} else if (pt->kind == CATS_PORT_TUN) {
		if (l2 == CATS_L2_MPLS || write(pt->txfd, ip, len) < 0)
			return -1;
	} else {
		if (len + 14 > pt->txfsz - TX_OFF)
			return -2;
		uint8_t *f = cats_port_tx_frame(pt);
		if (f == NULL)
			return -1;
		uint8_t *d = f + TX_OFF;
		cats_port_l2(pt, d, l2);
		memcpy(d + 14, ip, len);
		cats_port_tx_commit(pt, f, len, NULL);
		return 0;
	}
	pt->tx_pkts++;
	pt->tx_bytes += len;
	return 0;
}

int
cats_port_send_gso(struct cats_port *pt, const struct virtio_net_hdr *vh,
    const uint8_t *ip, size_t len)
{
	uint8_t l2[14];
	if (pt->gsofd < 0)
		return -1;
	cats_port_l2(pt, l2, ip[0] >> 4);
	struct iovec iov[3] = {
		{ (void *)vh, sizeof(*vh) }, { l2, sizeof(l2) },
		{ (void *)ip, len },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 3 };
	cats_port_tx_flush(pt);
	if (sendmsg(pt->gsofd, &mh, MSG_DONTWAIT) < 0)
		return -1;
	pt->tx_pkts++;
	pt->tx_bytes += len;
	return 0;
}

/* ---- receive ---- */

static struct tpacket2_hdr *
ring_slot(const struct cats_port *pt, const struct cats_port_ring *r)
{
	return (void *)(r->rx + r->rxi * pt->rxfsz);
}

static bool
slot_ready(const struct tpacket2_hdr *h)
{
	return __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) &
	    TP_STATUS_USER;
}

bool
cats_port_ring_ready(const struct cats_port *pt)
{
	if (pt->kind != CATS_PORT_PACKET)
		return false;
	for (unsigned i = 0; i < pt->nring; i++)
		if (slot_ready(ring_slot(pt, &pt->ring[i])))
			return true;
	return false;
}

static size_t
rx_copy(struct cats_port *pt, int fd, struct virtio_net_hdr *vh,
    uint8_t *buf, size_t cap)
{
	struct iovec iov[2] = { { vh, sizeof(*vh) }, { buf, cap } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT);
	if (n < (ssize_t)sizeof(*vh) + 14 || (mh.msg_flags & MSG_TRUNC))
		return 0;
	pt->rx_copies++;
	return (size_t)n - sizeof(*vh);
}

bool
cats_port_rx_next(struct cats_port *pt, struct cats_port_frame *fr,
    uint8_t *buf, size_t cap)
{
	struct cats_port_ring *r = NULL;
	struct tpacket2_hdr *h = NULL;
	/* The ring whose turn it is, else the next with a frame. */
	for (unsigned k = 0; k < pt->nring; k++) {
		unsigned i = (pt->ring_next + k) % pt->nring;
		h = ring_slot(pt, &pt->ring[i]);
		if (slot_ready(h)) {
			r = &pt->ring[i];
			pt->ring_cur = i;
			pt->ring_next = (i + 1) % pt->nring;
			break;
		}
	}
	if (r == NULL)
		return false;
	uint32_t st = h->tp_status;
	fr->f = (uint8_t *)h + h->tp_mac;
	fr->vh = (void *)(fr->f - sizeof(*fr->vh));
	fr->len = h->tp_snaplen;
	fr->whole = h->tp_len == h->tp_snaplen;
	if (st & TP_STATUS_COPY) {
		/* The queued copy must be read even if ignored. */
		size_t n = rx_copy(pt, r->fd, &fr->vhc, buf, cap);
		fr->f = n > 0 ? buf : NULL;
		fr->vh = &fr->vhc;
		fr->whole = n > 0;
		fr->len = n > 0 ? n : h->tp_len;
	}
	pt->rx_pkts++;
	pt->rx_bytes += fr->len;
	return true;
}

void
cats_port_rx_done(struct cats_port *pt)
{
	struct cats_port_ring *r = &pt->ring[pt->ring_cur];
	__atomic_store_n(&ring_slot(pt, r)->tp_status, TP_STATUS_KERNEL,
	    __ATOMIC_RELEASE);
	r->rxi = (r->rxi + 1) % pt->rxn;
}

void
cats_port_ring_drops(struct cats_port *pt)
{
	if (pt->kind != CATS_PORT_PACKET)
		return;
	for (unsigned i = 0; i < pt->nring; i++) {
		struct tpacket_stats ts;
		socklen_t sl = sizeof(ts);
		if (getsockopt(pt->ring[i].fd, SOL_PACKET, PACKET_STATISTICS,
		    &ts, &sl) == 0)
			pt->ring_drops += ts.tp_drops;
	}
}

/* ---- opening ---- */

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

uint32_t
cats_port_if_mtu(const char *name)
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

/*
 * A receive ring of pt for ethertype et, its slots as pt->rxn and
 * pt->rxfsz say, its socket bound to the port and watched by pt->rxfd.
 */
static int
rx_ring_open(struct cats_port *pt, struct cats_port_ring *r, uint16_t et,
    char *err, size_t errlen)
{
	int rcvbuf = 32 << 20;
	r->fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(et));
	if (r->fd < 0) {
		snprintf(err, errlen, "%s: AF_PACKET: %s", pt->name,
		    strerror(errno));
		return -1;
	}
	/* The ring before the bind: no frame waits outside it. */
	if (ring_open(r->fd, PACKET_RX_RING, PACKET_COPY_THRESH, pt->rxfsz,
	    &pt->rxn, &r->rx) < 0) {
		snprintf(err, errlen, "%s: RX ring: %s", pt->name,
		    strerror(errno));
		return -1;
	}
	if (setsockopt(r->fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
	    sizeof(rcvbuf)) < 0)
		setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
		    sizeof(rcvbuf));
	struct sockaddr_ll sa = { .sll_family = AF_PACKET,
		.sll_protocol = htons(et), .sll_ifindex = pt->ifindex };
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = r->fd };
	if (bind(r->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    epoll_ctl(pt->rxfd, EPOLL_CTL_ADD, r->fd, &ev) < 0) {
		snprintf(err, errlen, "%s: bind: %s", pt->name, strerror(errno));
		return -1;
	}
	return 0;
}

static int
open_packet(struct cats_port *pt, uint32_t tx_mtu, unsigned ring_frames,
    char *err, size_t errlen)
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
	pt->txfd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	pt->rxfd = epoll_create1(EPOLL_CLOEXEC);
	if (pt->rxfd < 0 || pt->txfd < 0) {
		snprintf(err, errlen, "%s: AF_PACKET: %s", pt->name,
		    strerror(errno));
		return -1;
	}
	if (ioctl(pt->txfd, SIOCGIFHWADDR, &ifr) == 0)
		memcpy(pt->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ioctl(pt->txfd, SIOCGIFMTU, &ifr) == 0)
		pt->mtu = (uint32_t)ifr.ifr_mtu;
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	ifr.ifr_data = (void *)&di;
	pt->veth = ioctl(pt->txfd, SIOCETHTOOL, &ifr) == 0 &&
	    strcmp(di.driver, "veth") == 0;
	/*
	 * RX: virtio-net headers give GSO and CHECKSUM_PARTIAL state.  Slots
	 * hold a frame of the port's MTU (2 KiB up to 1500 bytes), so that
	 * many small packets fit; a larger frame (a GSO super-packet) leaves
	 * its head in the slot and itself on the socket's queue
	 * (COPY_THRESH), for which the receive buffer is made large.
	 */
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t hr = CATS_PORT_RX_HDROOM;
	size_t rxf = pt->mtu + 14 + 4 + hr <= CATS_PORT_RX_FRAME ?
	    CATS_PORT_RX_FRAME : (pt->mtu + 14 + 4 + hr + pg - 1) / pg * pg;
	/*
	 * TX: frames fit the largest MTU of all ports, so that a segment cut
	 * to a larger port (a jumbo core) leaves here as one GSO frame.
	 */
	size_t big = pt->mtu > tx_mtu ? pt->mtu : tx_mtu;
	size_t txf = big + 14 + TX_OFF <= 2048 ? 2048 :
	    (big + 14 + TX_OFF + pg - 1) / pg * pg;
	pt->rxfsz = rxf;
	pt->txfsz = txf;
	/*
	 * Slots: --ring-frames, or RX_RING bytes' worth; a burst of new flows
	 * is held in the ring while the forwarder sends their requests.
	 */
	pt->rxn = ring_frames ? ring_frames : CATS_PORT_RX_RING / rxf;
	pt->txn = CATS_PORT_TX_FRAMES;
	static const uint16_t types[CATS_PORT_RINGS] = { ETH_P_IP, ETH_P_IPV6,
		ETH_P_MPLS_UC };
	pt->nring = pt->roles & CATS_PORT_CORE ? 3 : 2;
	for (unsigned i = 0; i < pt->nring; i++)
		if (rx_ring_open(pt, &pt->ring[i], types[i], err, errlen) < 0)
			return -1;
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
		.sll_ifindex = pt->ifindex };
	if (bind(pt->txfd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(err, errlen, "%s: bind: %s", pt->name, strerror(errno));
		return -1;
	}
	return 0;
}

static int
open_tun(struct cats_port *pt, char *err, size_t errlen)
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

int
cats_port_open(struct cats_port *pt, uint32_t tx_mtu, unsigned ring_frames,
    char *err, size_t errlen)
{
	if (pt->kind == CATS_PORT_PACKET)
		return open_packet(pt, tx_mtu, ring_frames, err, errlen);
	if (pt->kind == CATS_PORT_TUN)
		return open_tun(pt, err, errlen);
	return 0;
}
