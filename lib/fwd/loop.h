/*
 * loop.h - the forwarder's packet path (path.h) on a libevent loop: a
 * read event per port, bounded polling of the receive rings after a batch
 * (--poll-us), one TX flush kick for the frames queued outside a receive
 * batch, the 100 ms tick, and the path's hooks: records out on the control
 * channels (chan.h), the monotonic clock of its latency histograms.
 * cats-fwd's main opens the ports and the channels; this runs them.
 *
 * Contract: cats_fwdl_init() after cats_fwdp_init() and before the ports
 * are opened (the hooks, the flush kick); cats_fwdl_start() once the ports
 * are open and the channels started, before the loop is dispatched (the
 * ports' events, the tick); cats_fwdl_free() after the loop returned.
 */
#ifndef CATS_FWD_LOOP_H
#define CATS_FWD_LOOP_H

#include "fwd/path.h"

struct event;
struct event_base;
struct cats_chan;

struct cats_fwdl {
	struct cats_fwdp *fw;
	struct event_base *base;
	struct cats_chan *select, *bind;	/* where emit sends */
	uint64_t poll_us;	/* rings watched after a batch (0: not) */
	struct event *tx_flush, *tick;
	/* The argument of each port's read event. */
	struct cats_fwdl_port {
		struct cats_fwdl *l;
		struct cats_port *pt;
	} on[CATS_FWDP_MAXPORTS];
};

/* Hook fw to the loop on base and to the two channels: 0, -1 no memory. */
int cats_fwdl_init(struct cats_fwdl *l, struct cats_fwdp *fw,
    struct event_base *base, struct cats_chan *select,
    struct cats_chan *bind, uint64_t poll_us);
/* A read event on each open port, and the tick: 0, -1 no memory. */
int cats_fwdl_start(struct cats_fwdl *l);
/* The events (not the ports, the channels or fw). */
void cats_fwdl_free(struct cats_fwdl *l);

#endif
