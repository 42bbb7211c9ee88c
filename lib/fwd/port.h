/*
 * port.h - the ports of a CATS-Forwarder: AF_PACKET interfaces with
 * TPACKET_V2 receive and transmit rings (virtio-net headers), TUN devices,
 * and fake ports that keep what is sent to them (unit tests, no root).
 *
 * A port is opened once (cats_port_open) and then only read and written by
 * the forwarder's loop: the packet path (fwd/path.h) takes frames from the
 * receive ring, fills transmit frames (cats_port_tx_frame, _tx_commit) or
 * sends whole IP packets (cats_port_send), and kicks the kernel once per
 * batch (cats_port_tx_flush).  A port counts what it received and sent; the
 * forwarder's totals are the sums over its ports.  Nothing here reads the
 * clock or exits: errors come back as -1 with a message in err.
 */
#ifndef CATS_FWD_PORT_H
#define CATS_FWD_PORT_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/virtio_net.h>

enum { CATS_PORT_CLIENT = 1, CATS_PORT_CORE = 2, CATS_PORT_SITE = 4 };
enum { CATS_PORT_PACKET, CATS_PORT_TUN, CATS_PORT_FAKE };

/*
 * What a frame carries after its link header, by the value the link
 * header functions take: 4 or 6 (IP, as the version nibble says), or an
 * MPLS label stack (ethertype 0x8847).
 */
#define CATS_L2_MPLS	0x47

/* One packet kept by a fake port: its bytes and what they are. */
struct cats_port_sent {
	struct cats_port_sent *next;
	size_t len;
	int l2;			/* 4, 6 or CATS_L2_MPLS */
	uint8_t ip[];
};

struct event;
struct cats_port;

/*
 * Metadata of a received frame.  csum_partial: a TCP super-packet whose
 * checksum is still CHECKSUM_PARTIAL (at csum_start of the IP packet),
 * left so because every way out cuts it into segments with checksums of
 * their own; whoever keeps it whole completes it first.
 */
struct cats_rxmeta {
	struct cats_port *in;
	uint16_t gso_size;
	uint8_t gso_type;
	bool csum_partial;
	uint16_t csum_start, csum_off;
};

/*
 * A receive ring of an AF_PACKET port: a socket bound to one ethertype,
 * its mapped slots and the next slot to read.
 */
struct cats_port_ring {
	int fd;
	uint8_t *rx;
	size_t rxi;
};

/* Ethertypes received, a ring each: IPv4, IPv6, MPLS (core ports). */
#define CATS_PORT_RINGS	3

struct cats_port {
	int kind;		/* CATS_PORT_* */
	int roles;		/* CATS_PORT_CLIENT | _CORE | _SITE */
	char name[IFNAMSIZ];
	int ifindex;
	uint8_t mac[6], peer[6];
	bool has_peer, fixed_peer;
	bool peer_moved;	/* learned peer changed: fast path to follow */
	uint32_t mtu;
	bool veth;		/* a veth: the fast path may hand to its peer */
	/*
	 * rxfd: what to wait on, a TUN device's fd or, for an AF_PACKET
	 * port, an epoll fd over its rings' sockets.
	 */
	int rxfd, txfd;
	int gsofd;		/* vnet-header socket for GSO sends, or -1 */
	struct cats_port_ring ring[CATS_PORT_RINGS];
	unsigned nring, ring_next, ring_cur;	/* rings; whose turn; the
						 * frame being handled's */
	uint8_t *tx;
	size_t rxn, rxfsz, txn, txfsz, txi;	/* slots per ring, their size */
	unsigned txq;
	struct event *ev;	/* the caller's read event (more to read) */
	uint64_t rx_pkts, rx_bytes, tx_pkts, tx_bytes;
	uint64_t rx_copies, ring_drops;
	/* A fake port: what was sent, oldest first (cats_port_sent_free). */
	struct cats_port_sent *sent, **sent_tail;
	size_t nsent;
};

/*
 * Receive rings are bound by ethertype (IPv4, IPv6 and, on a core port,
 * MPLS), not to every frame (ETH_P_ALL): the kernel hands a bound socket a
 * frame only after tc ingress, so a frame the fast path (fwd_fast.h)
 * redirects never reaches a ring and costs no copy and no second
 * classification.  The rings take turns, a frame each.
 *
 * Rings: receive slots of 2 KiB (a 1500-byte frame with the ring's and the
 * virtio-net header) or of the port's MTU, RX_RING bytes of them per ring by
 * default; at most RX_BATCH frames handled per wakeup; transmit frames
 * laid out as the ring's header, a virtio-net header, the frame.
 */
#define CATS_PORT_RX_FRAME	2048
#define CATS_PORT_RX_RING	(32 << 20)
#define CATS_PORT_RX_HDROOM	128
#define CATS_PORT_RX_BATCH	256
#define CATS_PORT_TX_FRAMES	1024
/* Offset of the link header in a transmit frame. */
size_t cats_port_tx_off(void);

/*
 * Parse "af_packet:IF[,peer=MAC]" or "tun:IF" into *pt (zeroed, role set,
 * not opened).  -1 with a message in err for a bad spec.
 */
int cats_port_parse(const char *spec, int role, struct cats_port *pt,
    char *err, size_t errlen);
/*
 * Open a parsed port: the rings of an AF_PACKET port (transmit frames big
 * enough for tx_mtu, the largest MTU of all ports; ring_frames receive
 * slots, 0 for the default), or the TUN device.  -1 with err.
 */
int cats_port_open(struct cats_port *pt, uint32_t tx_mtu,
    unsigned ring_frames, char *err, size_t errlen);
/* A fake port of the given roles and MTU, with link addresses set. */
void cats_port_fake(struct cats_port *pt, const char *name, int role,
    int ifindex, uint32_t mtu);
/* Free what a fake port kept; it starts empty again. */
void cats_port_sent_free(struct cats_port *pt);
/* The MTU of an interface by name, 0 if unknown. */
uint32_t cats_port_if_mtu(const char *name);

/* The link header toward the port's peer (broadcast while unknown), of
 * type ipv: 4, 6 or CATS_L2_MPLS. */
void cats_port_l2(const struct cats_port *pt, uint8_t *d, int ipv);

/*
 * A free transmit frame of an AF_PACKET port (its start; the link header
 * goes at cats_port_tx_off()), or NULL when the ring stays full.
 */
uint8_t *cats_port_tx_frame(struct cats_port *pt);
/*
 * Hand a filled transmit frame (IP length len) to the kernel, with the
 * virtio-net header gso (segmentation and partial checksum of a TCP
 * super-packet) or none.
 */
void cats_port_tx_commit(struct cats_port *pt, uint8_t *f, size_t len,
    const struct virtio_net_hdr *gso);
/* Kick the kernel to send the frames queued on the ring. */
void cats_port_tx_flush(struct cats_port *pt);
/* Room for an IP packet in a transmit frame (AF_PACKET), else 0. */
size_t cats_port_tx_room(const struct cats_port *pt);
/*
 * Send one IP packet: a transmit frame, a write to the TUN device, or (a
 * fake port) kept.  0, -1 when there was no room (ring full, write failed),
 * -2 when it does not fit a transmit frame.
 */
int cats_port_send(struct cats_port *pt, const uint8_t *ip, size_t len);
/* The same for a packet of link type l2 (CATS_L2_MPLS: a TUN device
 * cannot carry it, -1). */
int cats_port_send_l2(struct cats_port *pt, const uint8_t *p, size_t len,
    int l2);
/*
 * Send a TCP super-packet through the port's vnet-header socket with the
 * virtio-net header vh (the queued frames first).  0 or -1.
 */
int cats_port_send_gso(struct cats_port *pt, const struct virtio_net_hdr *vh,
    const uint8_t *ip, size_t len);

/* Is a received frame waiting in one of the rings? */
bool cats_port_ring_ready(const struct cats_port *pt);

/* A received frame: link header at f, len bytes, its virtio-net header. */
struct cats_port_frame {
	uint8_t *f;
	size_t len;
	const struct virtio_net_hdr *vh;
	bool whole;		/* all of it (not cut to the slot) */
	struct virtio_net_hdr vhc;
};
/*
 * The next received frame of the ring, or false when there is none.  A
 * frame whose slot was too small (a GSO super-packet, a jumbo frame) waits
 * whole, in order, on the socket's queue: it is read into buf (cap bytes)
 * instead (whole false when it cannot be).  cats_port_rx_done() gives the
 * slot back to the kernel.
 */
bool cats_port_rx_next(struct cats_port *pt, struct cats_port_frame *fr,
    uint8_t *buf, size_t cap);
void cats_port_rx_done(struct cats_port *pt);
/* Add the frames the kernel could not put in the receive rings. */
void cats_port_ring_drops(struct cats_port *pt);

#endif
