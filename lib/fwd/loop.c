/*
 * loop.c - the forwarder's packet path on a libevent loop (see loop.h).
 */
#include <sched.h>
#include <stdbool.h>

#include <event2/event.h>

#include "base/clock.h"
#include "fwd/chan.h"
#include "fwd/loop.h"

static int
emit(void *arg, int chan, struct cats_rec *r)
{
	struct cats_fwdl *l = arg;
	return cats_chan_send(chan == CATS_FWDP_BIND ? l->bind : l->select, r);
}

/*
 * Frames queued outside a receive batch (held packets released by the
 * bindings of one read): one kick per port once the callbacks that were
 * ready have run.
 */
static void
flush_later(void *arg)
{
	struct cats_fwdl *l = arg;
	event_active(l->tx_flush, EV_TIMEOUT, 0);
}

static void
on_tx_flush(evutil_socket_t fd, short what, void *arg)
{
	struct cats_fwdl *l = arg;
	(void)fd;
	(void)what;
	cats_fwdp_tx_flush(l->fw);
}

static uint64_t
mono_us(void)
{
	return cats_clock_mono_ns() / 1000;
}

/*
 * Bounded polling: after a batch, watch the receive rings for up to
 * poll_us, yielding the CPU to any other task, before going back to
 * sleep in the event loop.  While packets keep coming the forwarder is not
 * woken for each (a wakeup and a context switch cost more than a packet);
 * when they stop, it sleeps after the bound.
 */
static void
poll_rings(struct cats_fwdl *l)
{
	struct cats_fwdp *fw = l->fw;
	uint64_t until = cats_clock_mono_ns() + l->poll_us * 1000;
	for (;;) {
		for (int i = 0; i < fw->nports; i++) {
			if (cats_port_ring_ready(&fw->ports[i])) {
				event_active(fw->ports[i].ev, EV_READ, 0);
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
on_port(evutil_socket_t fd, short what, void *arg)
{
	struct cats_fwdl_port *on = arg;
	struct cats_fwdl *l = on->l;
	struct cats_port *pt = on->pt;
	(void)fd;
	(void)what;
	uint64_t now = cats_clock_now();
	unsigned n = cats_fwdp_rx(l->fw, pt, now);
	if (pt->kind != CATS_PORT_PACKET)
		return;
	cats_fwdp_fast_offer_queued(l->fw, now, false);
	if (n > 0 && n <= CATS_PORT_RX_BATCH && l->poll_us > 0)
		poll_rings(l);
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct cats_fwdl *l = arg;
	(void)fd;
	(void)what;
	cats_fwdp_tick(l->fw, cats_clock_now(), l->bind->s != NULL);
}

int
cats_fwdl_init(struct cats_fwdl *l, struct cats_fwdp *fw,
    struct event_base *base, struct cats_chan *select,
    struct cats_chan *bind, uint64_t poll_us)
{
	*l = (struct cats_fwdl){ .fw = fw, .base = base, .select = select,
		.bind = bind, .poll_us = poll_us };
	fw->emit = emit;
	fw->flush_later = flush_later;
	fw->hook_arg = l;
	fw->clock_us = mono_us;
	l->tx_flush = event_new(base, -1, 0, on_tx_flush, l);
	return l->tx_flush != NULL ? 0 : -1;
}

int
cats_fwdl_start(struct cats_fwdl *l)
{
	struct cats_fwdp *fw = l->fw;
	for (int i = 0; i < fw->nports; i++) {
		struct cats_port *pt = &fw->ports[i];
		l->on[i].l = l;
		l->on[i].pt = pt;
		pt->ev = event_new(l->base, pt->rxfd, EV_READ | EV_PERSIST,
		    on_port, &l->on[i]);
		if (pt->ev == NULL)
			return -1;
		event_add(pt->ev, NULL);
	}
	struct timeval tv = { 0, 100000 };
	l->tick = event_new(l->base, -1, EV_PERSIST, on_tick, l);
	if (l->tick == NULL)
		return -1;
	event_add(l->tick, &tv);
	return 0;
}

void
cats_fwdl_free(struct cats_fwdl *l)
{
	struct cats_fwdp *fw = l->fw;
	for (int i = 0; i < fw->nports; i++) {
		if (fw->ports[i].ev != NULL)
			event_free(fw->ports[i].ev);
		fw->ports[i].ev = NULL;
	}
	if (l->tick != NULL)
		event_free(l->tick);
	if (l->tx_flush != NULL)
		event_free(l->tx_flush);
	l->tick = l->tx_flush = NULL;
}
