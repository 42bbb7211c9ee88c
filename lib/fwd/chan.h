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
 * Every connect runs on the loop (cats_ep_connect), as a tls: handshake
 * does: a tcp: one not answered within 2 s (a partitioned peer) and a
 * unix: one to a listener whose backlog is full (a stalled or overloaded
 * C-PS stage) are failed connects, never a wait of the packet path.
 *
 * Several endpoints are the instances of a redundant C-PS, of which only the
 * owner listens (cats-bind(1), REDUNDANCY): the channel connects to the
 * first and stays on whichever answers.  When the connection ends it tries
 * the others in a round, from the next: 100 ms later, each at once after
 * the one before refused, and the round again 100 ms later, 100 ms more for
 * each failed round up to a second (cats_chan_rot_fail()).  It prefers
 * none: it never leaves an endpoint that works, unless it falls silent.
 *
 * Liveness: cats-bind and cats-select send a keepalive (a status record,
 * event keepalive) every second on every forwarder connection; a stream
 * channel on which nothing arrives for its deadline (--ctl-deadline, 3 s
 * by default) is closed as dead (a frozen or partitioned C-PS keeps its
 * connections open) and the next endpoint tried, audited (ctl-silent) and
 * counted (ctl_silent; the move in ctl_switches).  The deadline holds from
 * the first connection on a channel of several endpoints, and on one of a
 * single endpoint once a keepalive came, so that a peer that sends none
 * is not cut off.  A check that comes over a second late (the forwarder
 * itself stalled) waits for the next, so that what arrived meanwhile is
 * read first.  A keepalive from a binding manager of an epoch older
 * than the highest the forwarder has seen is a fenced owner's: the channel
 * leaves it at once (audited fenced, counted ctl_fenced).
 *
 * Following: when --select and --bind have the same number of endpoints
 * (several), the i-th of each are one instance of the C-PS, and the select
 * channel follows the bind channel: once an endpoint of the binding
 * manager answers (its first record), the select channel moves to the
 * endpoint of the same rank and stays there, retrying it alone, until the
 * bind channel loses its connection.  A select channel connected again
 * (moved, or its peer back) sends every pending request again on the new
 * connection (cats_fwdp_resend_pending()), so that none waits for its
 * deadline for an answer the old one lost.
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
/* The default deadline of a silent channel (--ctl-deadline). */
#define CATS_CHAN_DEADLINE_MS 3000

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
	unsigned pin;			/* kept to this one (n: none): following */
};

/*
 * A connect to cur failed, or the connection to it ended: move to the next
 * endpoint and return the delay (ms) before trying it (0 within a round).
 */
unsigned cats_chan_rot_fail(struct cats_chan_rot *r);
/*
 * The connect to cur succeeded.  The backoff is not reset yet: a peer
 * that closes before it says anything (a TLS 1.3 server refusing the
 * client's certificate, a full server) is a failure like a refused
 * connect, and is retried ever later (cats_chan_rot_answered).
 */
void cats_chan_rot_up(struct cats_chan_rot *r);
/* The first record came from cur: the next failure waits 100 ms again. */
void cats_chan_rot_answered(struct cats_chan_rot *r);
/* n endpoints, none tried. */
void cats_chan_rot_init(struct cats_chan_rot *r, unsigned n);
/*
 * Keep to endpoint i (the one of the same rank as the channel followed):
 * it is cur, and a failure retries it alone, with the delays of one
 * endpoint.  i >= n: rotate again.
 */
void cats_chan_rot_pin(struct cats_chan_rot *r, unsigned i);

/* Whether a connection is alive; pure, time passed in (ms). */
struct cats_chan_live {
	uint64_t deadline_ms;		/* silent this long: dead; 0: never */
	bool armed;			/* held to the deadline */
	uint64_t last;			/* the last record in, or the connect */
};

/* A deadline of deadline_ms, held from the start when armed. */
void cats_chan_live_init(struct cats_chan_live *l, uint64_t deadline_ms,
    bool armed);
/* Connected at now. */
void cats_chan_live_up(struct cats_chan_live *l, uint64_t now);
/* A record came at now; a keepalive arms the deadline for good. */
void cats_chan_live_rx(struct cats_chan_live *l, bool keepalive,
    uint64_t now);
/* Silent past the deadline at now (and held to it). */
bool cats_chan_live_dead(const struct cats_chan_live *l, uint64_t now);

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
	bool dgram;
	uint64_t deadline_ms;		/* the caller's: --ctl-deadline */
	uint64_t hello_ms;		/* --hello-timeout: a tls: handshake's
					 * (0: CATS_TLS_OPEN_S) */
	struct cats_chan_live live;
	struct event *check;		/* the deadline, looked at every 100 ms */
	uint64_t last_check;		/* when it was last looked at */
	bool answered;			/* a record came on this connection */
	struct cats_chan *follower;	/* moves with this one (cats_chan_follow) */
	struct cats_chan *lead;		/* the one this follows */
	unsigned follow_to;		/* to follow once a connect ends */
	int conn_fd;			/* a connect under way, or -1 */
	uint32_t warned;		/* endpoints whose failed connect was said
					 * this outage (bit i: ep[i]) */
};

/*
 * Parse spec, one more endpoint of the channel.  -1 with err for a spec
 * that is no control channel, one of another kind than the first (stream
 * and datagram do not mix) or one too many.
 */
int cats_chan_add(struct cats_chan *c, const char *spec, char *err,
    size_t errlen);
/*
 * f follows c when both have the same number of endpoints, more than one
 * (true); else they rotate apart (false).  Before cats_chan_start.
 */
bool cats_chan_follow(struct cats_chan *c, struct cats_chan *f);
/*
 * Connect to the first endpoint (or schedule a retry).  The caller sets
 * name, is_bind, w, base, key, peers, dec, now and deadline_ms first.
 */
void cats_chan_start(struct cats_chan *c);
/* Send a record (signed when there is a key); -1 when the channel is down. */
int cats_chan_send(struct cats_chan *c, struct cats_rec *r);
/* Write all the stream batched and queued, blocking (at exit). */
void cats_chan_finish(struct cats_chan *c);

#endif
