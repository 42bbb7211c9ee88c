/*
 * chan.h - the control channels of a CATS-Forwarder: to the C-PS (requests
 * out, errors in) and to the binding manager (bindings in, statuses out),
 * each a tcp:, unix: or udp: endpoint (ep.h) reconnected every second while
 * it is down.
 *
 * On a stream socket, records sent while handling a batch (requests for a
 * ring's worth of new flows, statuses for the bindings of one read) are
 * gathered and written with one system call at the end of the loop's turn
 * (cats_stream_batch(), 64 KiB at most a write); datagram sockets send one
 * record per datagram at once.  Records out are signed with key when there is one;
 * records in are verified against peers when there are peers, then handed
 * to the packet path (cats_fwdp_ctl).  A (re)connection to the binding
 * manager sends the hello that asks it for the bindings again.
 */
#ifndef CATS_FWD_CHAN_H
#define CATS_FWD_CHAN_H

#include <event2/event.h>

#include "base/cats.h"
#include "fwd/path.h"
#include "net/ep.h"
#include "rec/seq.h"
#include "sec/crypto.h"

struct cats_chan {
	const char *name;		/* "select", "bind" */
	bool is_bind;
	struct cats_fwdp *w;
	struct event_base *base;
	const struct cats_key *key;	/* sign with, or NULL */
	const struct cats_keyring *peers;	/* verify with, or NULL */
	struct cats_dec *dec;		/* records in are decoded into */
	uint64_t (*now)(void);		/* the clock (cats_clock_now) */
	struct cats_ep ep;
	struct cats_stream *s;		/* NULL while down */
	struct event *retry;
	unsigned retry_ms;		/* the next retry's delay: 100 ms, +100 to 1 s */
	bool dgram;
};

/*
 * Parse spec and connect (or schedule a retry).  The caller sets name,
 * is_bind, w, base, key, peers, dec and now first.  -1 with err for a spec that
 * is no control channel.
 */
int cats_chan_open(struct cats_chan *c, const char *spec, char *err,
    size_t errlen);
/* Send a record (signed when there is a key); -1 when the channel is down. */
int cats_chan_send(struct cats_chan *c, struct cats_rec *r);
/* Write all the stream batched and queued, blocking (at exit). */
void cats_chan_finish(struct cats_chan *c);

#endif
