/*
 * chan.h - the control channels of a CATS-Forwarder: to the C-PS (requests
 * out, errors in) and to the binding manager (bindings in, statuses out),
 * each one or more tcp:, tls:, unix: or udp: endpoints (ep.h, up to
 * CATS_CHAN_EPS) reconnected while it is down.  A tls: endpoint's connect and
 * handshake run on the loop (cats_tls_open): the forwarder never waits for
 * them; a handshake refused (the server's certificate not of --tls-ca, its
 * name not the endpoint's, no answer in 5 s) is one line, counted
 * (ctl_tls_fail), and tried again as a failed connect is.
 *
 * Several endpoints are the instances of a redundant C-PS, of which only the
 * owner listens (cats-bind(1), REDUNDANCY): the channel connects to the
 * first and stays on whichever answers.  When the connection ends it tries
 * the others in a round, from the next: 100 ms later, each at once after
 * the one before refused, and the round again 100 ms later, 100 ms more for
 * each failed round up to a second (cats_chan_rot_fail()).  It prefers
 * none: it never leaves an endpoint that works.
 *
 * On a stream socket, records sent while handling a batch (requests for a
 * ring's worth of new flows, statuses for the bindings of one read) are
 * gathered and written with one system call at the end of the loop's turn
 * (cats_stream_batch(), 64 KiB at most a write); datagram sockets send one
 * record per datagram at once.  Records out are signed with key when there is one;
 * records in are verified against peers when there are peers, then handed
 * to the packet path (cats_fwdp_ctl).  A (re)connection to the binding
 * manager sends the hello that asks it for the bindings again; one to the
 * C-PS over a stream sends the same hello, which authenticates the
 * connection before its first request (cats-select(1) FORWARDERS).
 */
#ifndef CATS_FWD_CHAN_H
#define CATS_FWD_CHAN_H

#include <event2/event.h>

#include "base/cats.h"
#include "fwd/path.h"
#include "net/ep.h"
#include "rec/seq.h"
#include "sec/crypto.h"

#define CATS_CHAN_EPS 8

/* Which endpoint to try and when; pure, so that the rotation is tested. */
struct cats_chan_rot {
	unsigned n;			/* endpoints, 1 to CATS_CHAN_EPS */
	unsigned cur;			/* the one tried or connected */
	unsigned first;			/* the one this round began with */
	bool up;			/* cur is connected */
	unsigned retry_ms;		/* the next retry's delay: 100 ms, +100 to 1 s */
	uint64_t fails;			/* connects failed and connections lost */
	uint64_t switches;		/* connections made to another endpoint */
	unsigned last_up;		/* the endpoint last connected (n: none) */
};

/*
 * A connect to cur failed, or the connection to it ended: move to the next
 * endpoint and return the delay (ms) before trying it (0 within a round).
 */
unsigned cats_chan_rot_fail(struct cats_chan_rot *r);
/* The connect to cur succeeded: the next failure waits 100 ms again. */
void cats_chan_rot_up(struct cats_chan_rot *r);
/* n endpoints, none tried. */
void cats_chan_rot_init(struct cats_chan_rot *r, unsigned n);

struct cats_chan {
	const char *name;		/* "select", "bind" */
	bool is_bind;
	struct cats_fwdp *w;
	struct event_base *base;
	const struct cats_key *key;	/* sign with, or NULL */
	const struct cats_keyring *peers;	/* verify with, or NULL */
	struct cats_dec *dec;		/* records in are decoded into */
	uint64_t (*now)(void);		/* the clock (cats_clock_now) */
	struct cats_ep ep[CATS_CHAN_EPS];
	unsigned nep;
	struct cats_chan_rot rot;
	struct cats_stream *s;		/* NULL while down */
	int fd;				/* its descriptor */
	struct event *retry;
	int tls_fd;			/* a tls: handshake under way, or -1 */
	bool dgram;
};

/*
 * Parse spec, one more endpoint of the channel.  -1 with err for a spec
 * that is no control channel, one of another kind than the first (stream
 * and datagram do not mix) or one too many.
 */
int cats_chan_add(struct cats_chan *c, const char *spec, char *err,
    size_t errlen);
/*
 * Connect to the first endpoint (or schedule a retry).  The caller sets
 * name, is_bind, w, base, key, peers, dec and now first.
 */
void cats_chan_start(struct cats_chan *c);
/* Send a record (signed when there is a key); -1 when the channel is down. */
int cats_chan_send(struct cats_chan *c, struct cats_rec *r);
/* Write all the stream batched and queued, blocking (at exit). */
void cats_chan_finish(struct cats_chan *c);

#endif
