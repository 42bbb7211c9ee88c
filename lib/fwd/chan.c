/*
 * chan.c - the control channels of a CATS-Forwarder (chan.h).
 */
#include <inttypes.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "base/log.h"
#include "fwd/chan.h"
#include "net/tls.h"

/* A check this late after the one before: the forwarder stalled. */
#define CHECK_STALL_MS 1000
/* A connect not answered in this long is given up (one SYN resent). */
#define CONNECT_MS 2000

static void chan_connect(struct cats_chan *c);
static void chan_drop(struct cats_chan *c);
static void chan_follow(struct cats_chan *c, struct cats_chan *f,
    unsigned i);

int
cats_chan_send(struct cats_chan *c, struct cats_rec *r)
{
	if (c->s == NULL)
		return -1;
	if (c->key != NULL && cats_rec_sign(r, c->key) < 0) {
		cats_warnx("cannot sign a %s record", cats_type_name(r->type));
		return 0;
	}
	if (cats_stream_send_rec(c->s, r) < 0)
		cats_warnx("%s: cannot send", c->name);
	return 0;
}

/* A control record; the stream scanned it into the decoder's tokens. */
static void
on_rec(struct cats_stream *s, struct cats_item *it, void *arg)
{
	struct cats_chan *c = arg;
	struct cats_rec *r = it->rec;
	struct cats_err e;
	uint64_t index = it->index;
	(void)s;
	memset(&e, 0, sizeof(e));
	if (r == NULL) {
		c->w->ctr[CATS_FC_ctl_bad]++;
		cats_warnx("%s: %s", c->name, it->why);
		return;
	}
	bool ka = r->type == CATS_T_STATUS &&
	    r->u.status.event == CATS_EV_KEEPALIVE;
	/* cats-select signs nothing: its keepalive carries no state. */
	if (c->peers != NULL && (c->is_bind || !ka)) {
		const struct cats_key *who;
		if (cats_rec_verify(r, c->peers, &who, &e) < 0) {
			c->w->ctr[CATS_FC_ctl_auth_fail]++;
			cats_audit_limited("auth-fail", "channel=%s record=%"
			    PRIu64
			    " reason=\"%s\"", c->name, index, e.reason);
			return;
		}
	}
	uint64_t now = c->now();
	/* An owner of an older epoch is alive, but fenced: not used. */
	uint64_t hi = c->w->tab.epoch_max;
	if (ka && c->is_bind && CATS_HAS(&r->u.status, STA, epoch) &&
	    r->u.status.epoch < hi) {
		char eps[4400];
		c->w->ctr[CATS_FC_ctl_fenced]++;
		cats_warnx("%s: %s: a keepalive of epoch %" PRIu64 ", older "
		    "than %" PRIu64 ": a fenced owner, left", c->name,
		    cats_ep_str(&c->ep[c->rot.cur], eps, sizeof(eps)),
		    r->u.status.epoch, hi);
		cats_audit("fenced", "channel=%s endpoint=%s epoch=%" PRIu64
		    " highest=%" PRIu64, c->name, eps, r->u.status.epoch, hi);
		chan_drop(c);
		return;
	}
	cats_chan_live_rx(&c->live, ka, now);
	if (!c->answered) {
		c->answered = true;
		cats_chan_rot_answered(&c->rot);
		if (c->follower != NULL)
			chan_follow(c, c->follower, c->rot.cur);
	}
	if (!ka)
		cats_fwdp_ctl(c->w, r, c->is_bind, now);
}


void
cats_chan_rot_init(struct cats_chan_rot *r, unsigned n)
{
	memset(r, 0, sizeof(*r));
	r->n = n > 0 ? n : 1;
	r->retry_ms = 100;
	r->last_up = r->pin = r->n;
}

void
cats_chan_rot_pin(struct cats_chan_rot *r, unsigned i)
{
	if (i >= r->n) {
		r->pin = r->n;
		return;
	}
	r->pin = r->cur = r->first = i;
}

void
cats_chan_live_init(struct cats_chan_live *l, uint64_t deadline_ms,
    bool armed)
{
	memset(l, 0, sizeof(*l));
	l->deadline_ms = deadline_ms;
	l->armed = armed;
}

void
cats_chan_live_up(struct cats_chan_live *l, uint64_t now)
{
	l->last = now;
}

void
cats_chan_live_rx(struct cats_chan_live *l, bool keepalive, uint64_t now)
{
	if (now > l->last)
		l->last = now;
	if (keepalive)
		l->armed = true;
}

bool
cats_chan_live_dead(const struct cats_chan_live *l, uint64_t now)
{
	return l->armed && l->deadline_ms > 0 && now >= l->last &&
	    now - l->last >= l->deadline_ms;
}

/*
 * Try again soon: 100 ms after a connection ended or a round of connects
 * failed, 100 ms more for each failed round after it up to a second, so that
 * a C-PS stage restarted by cats-cps is reached again within its restart,
 * and one that stays down is asked once a second.  A round tries every
 * endpoint once, from the one after the last that answered, the next at
 * once when one refuses: after a failover the new owner is reached within
 * the round's delay of its takeover, however many endpoints there are.
 */
unsigned
cats_chan_rot_fail(struct cats_chan_rot *r)
{
	r->fails++;
	if (r->pin < r->n) {		/* following: this one alone */
		r->up = false;
		r->cur = r->first = r->pin;
	} else {
		r->cur = (r->cur + 1) % r->n;
		if (r->up) {		/* lost: a new round, from the next */
			r->up = false;
			r->first = r->cur;
		} else if (r->cur != r->first)
			return 0;	/* the round goes on at once */
	}
	if (r->retry_ms < 100)
		r->retry_ms = 100;
	unsigned ms = r->retry_ms;
	if ((r->retry_ms += 100) > 1000)
		r->retry_ms = 1000;
	return ms;
}

void
cats_chan_rot_answered(struct cats_chan_rot *r)
{
	r->retry_ms = 100;
}

void
cats_chan_rot_up(struct cats_chan_rot *r)
{
	r->up = true;
	if (r->last_up != r->n && r->last_up != r->cur)
		r->switches++;
	r->last_up = r->cur;
}

static void
retry_later(struct cats_chan *c)
{
	unsigned ms = cats_chan_rot_fail(&c->rot);
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	evtimer_add(c->retry, &tv);
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	chan_connect(arg);
}

/* The connection is over (closed, silent or fenced): the next endpoint. */
static void
chan_drop(struct cats_chan *c)
{
	cats_stream_free(c->s);
	c->s = NULL;
	c->answered = false;
	/* The channel followed is gone: its follower rotates again. */
	if (c->follower != NULL) {
		cats_chan_rot_pin(&c->follower->rot, CATS_CHAN_EPS);
		c->follower->follow_to = CATS_CHAN_EPS;
	}
	retry_later(c);
}

static void
on_eof(struct cats_stream *s, int error, void *arg)
{
	struct cats_chan *c = arg;
	(void)s;
	/* Under TLS 1.3 a server's refusal of this forwarder's certificate
	 * comes after the handshake, as a close before any record. */
	bool refused = !c->answered && c->ep[c->rot.cur].tls;
	if (refused)
		c->w->ctr[CATS_FC_ctl_tls_fail]++;
	cats_warnx("%s: connection closed%s%s%s", c->name, error ? ": " : "",
	    error ? strerror(error) : "", refused ? " before any record "
	    "(the server may refuse this forwarder's certificate)" : "");
	chan_drop(c);
}

/* The deadline: a connection silent past it is dead (a frozen peer). */
static void
on_check(evutil_socket_t fd, short what, void *arg)
{
	struct cats_chan *c = arg;
	(void)fd;
	(void)what;
	uint64_t now = c->now(), last = c->last_check;
	c->last_check = now;
	/* This loop stalled itself: what came meanwhile is read first. */
	if (now - last > CHECK_STALL_MS)
		return;
	if (c->s == NULL || !cats_chan_live_dead(&c->live, now))
		return;
	char eps[4400];
	cats_ep_str(&c->ep[c->rot.cur], eps, sizeof(eps));
	c->w->ctr[CATS_FC_ctl_silent]++;
	cats_warnx("%s: %s: nothing for %" PRIu64 " ms (deadline %" PRIu64
	    " ms): dead, closed%s", c->name, eps, now - c->live.last,
	    c->live.deadline_ms, c->nep > 1 && c->rot.pin >= c->rot.n ?
	    "; trying the next endpoint" : "");
	cats_audit("ctl-silent", "channel=%s endpoint=%s ms=%" PRIu64,
	    c->name, eps, now - c->live.last);
	chan_drop(c);
}

/*
 * f follows c onto its endpoint i: it leaves another one at once (what it
 * had queued there was for an instance that does not own) and connects to
 * i now, unless it is on i already or retrying it.
 */
static void
chan_follow(struct cats_chan *c, struct cats_chan *f, unsigned i)
{
	char eps[4400];
	if (f->rot.pin == i || f->retry == NULL)
		return;
	if (f->conn_fd >= 0) {
		/* A connect under way: followed once it ends (connect_done). */
		f->follow_to = i;
		f->lead = c;
		return;
	}
	bool on_it = f->s != NULL && f->rot.cur == i;
	cats_chan_rot_pin(&f->rot, i);
	if (on_it)
		return;
	cats_info("%s: following %s to %s", f->name, c->name,
	    cats_ep_str(&f->ep[i], eps, sizeof(eps)));
	if (f->s != NULL) {
		cats_stream_free(f->s);
		f->s = NULL;
		f->answered = false;
		f->rot.up = false;
	}
	evtimer_del(f->retry);
	chan_connect(f);
}

/* The connection to the current endpoint is made: records flow. */
static void
chan_up(struct cats_chan *c, int fd)
{
	char eps[4400];
	const struct cats_ep *ep = &c->ep[c->rot.cur];
	if (c->nep > 1)
		cats_info("%s: connected to %s", c->name,
		    cats_ep_str(ep, eps, sizeof(eps)));
	uint64_t sw = c->rot.switches;
	bool again = c->rot.last_up != c->rot.n;
	cats_chan_rot_up(&c->rot);
	cats_chan_live_up(&c->live, c->now());
	c->warned = 0;
	c->answered = false;
	if (c->rot.switches != sw)
		c->w->ctr[CATS_FC_ctl_switches]++;
	static const struct cats_stream_cbs cbs = { .rec = on_rec,
		.eof = on_eof };
	c->s = cats_stream_new(c->base, fd, fd, c->dgram, NULL, 0, &cbs, c);
	if (c->s == NULL) {
		close(fd);
		return;
	}
	c->fd = fd;
	cats_stream_own(c->s);
	cats_stream_decode_into(c->s, c->dec);
	if (!c->dgram && cats_stream_batch(c->s, 0) < 0)
		cats_warnx("%s: records are written one by one", c->name);
	if (c->is_bind)
		cats_fwdp_hello(c->w, c->now());
	else if (!c->dgram)
		cats_fwdp_hello_select(c->w, c->now());
	/* The requests the old connection may have lost, on this one. */
	if (!c->is_bind && again)
		cats_fwdp_resend_pending(c->w, c->now());
}

/*
 * A connect failed: counted each time, said once per endpoint and outage
 * (a peer that stays down is not a line a second), and tried again.
 */
static void
connect_failed(struct cats_chan *c, const char *why)
{
	uint32_t bit = UINT32_C(1) << c->rot.cur;
	c->w->ctr[CATS_FC_ctl_connect_fail]++;
	if (!(c->warned & bit))
		cats_warnx("%s: %s (retrying%s)", c->name, why,
		    c->nep > 1 ? " the next endpoint" : "");
	c->warned |= bit;
	retry_later(c);
}

/*
 * A connect ended (cats_ep_connect): up, or failed (refused, a full
 * backlog, no answer within CONNECT_MS, a refused TLS handshake) and
 * tried again as any failed connect is.
 */
static void
connect_done(void *arg, int fd, const char *why)
{
	struct cats_chan *c = arg;
	c->conn_fd = -1;
	if (c->follow_to < c->nep) {
		/* Followed meanwhile: kept if it is the one, else left. */
		unsigned i = c->follow_to;
		c->follow_to = CATS_CHAN_EPS;
		if (why == NULL && c->rot.cur == i) {
			cats_chan_rot_pin(&c->rot, i);
			chan_up(c, fd);
		} else {
			if (fd >= 0)
				close(fd);
			chan_follow(c->lead, c, i);
		}
		return;
	}
	if (why == NULL) {
		chan_up(c, fd);
		return;
	}
	if (c->ep[c->rot.cur].tls)
		c->w->ctr[CATS_FC_ctl_tls_fail]++;
	connect_failed(c, why);
}

/*
 * Connect to the current endpoint on the loop, never waiting there: a
 * partitioned tcp: peer would hold it for the kernel's SYN retries (two
 * minutes), a unix: listener with a full backlog until it accepts.
 */
static void
chan_connect(struct cats_chan *c)
{
	char err[400];
	const struct cats_ep *ep = &c->ep[c->rot.cur];
	/* A tls: endpoint's deadline covers its handshake (--hello-timeout,
	 * 0: 5 s). */
	c->conn_fd = cats_ep_connect(c->base, ep, ep->tls ? c->hello_ms :
	    CONNECT_MS, connect_done, c, err, sizeof(err));
	if (c->conn_fd >= 0)
		return;
	connect_failed(c, err);
}

int
cats_chan_add(struct cats_chan *c, const char *spec, char *err,
    size_t errlen)
{
	char e[256];
	if (c->nep == CATS_CHAN_EPS) {
		snprintf(err, errlen, "%s: more than %d endpoints for one "
		    "channel", spec, CATS_CHAN_EPS);
		return -1;
	}
	struct cats_ep *ep = &c->ep[c->nep];
	if (cats_ep_parse(spec, ep, e, sizeof(e)) < 0) {
		snprintf(err, errlen, "%s: %s", spec, e);
		return -1;
	}
	if (ep->kind != CATS_EP_TCP && ep->kind != CATS_EP_UNIX &&
	    ep->kind != CATS_EP_UDP) {
		snprintf(err, errlen, "%s: a control channel is tcp:, tls:, "
		    "unix: or udp:", spec);
		return -1;
	}
	if (c->nep > 0 && cats_ep_is_dgram(ep) != c->dgram) {
		snprintf(err, errlen, "%s: stream and datagram endpoints in "
		    "one channel", spec);
		return -1;
	}
	c->dgram = cats_ep_is_dgram(ep);
	c->nep++;
	return 0;
}

bool
cats_chan_follow(struct cats_chan *c, struct cats_chan *f)
{
	if (c->nep < 2 || c->nep != f->nep)
		return false;
	c->follower = f;
	f->lead = c;
	return true;
}

void
cats_chan_start(struct cats_chan *c)
{
	cats_chan_rot_init(&c->rot, c->nep);
	c->conn_fd = -1;
	c->warned = 0;
	c->follow_to = CATS_CHAN_EPS;
	/* Several endpoints are cats-bind or cats-select instances, which
	 * send keepalives: held to the deadline from the start. */
	cats_chan_live_init(&c->live, c->dgram ? 0 : c->deadline_ms,
	    c->nep > 1);
	c->retry = evtimer_new(c->base, on_retry, c);
	if (!c->dgram && c->deadline_ms > 0) {
		struct timeval tv = { 0, 100000 };
		c->last_check = c->now();
		c->check = event_new(c->base, -1, EV_PERSIST, on_check, c);
		if (c->check != NULL)
			event_add(c->check, &tv);
	}
	chan_connect(c);
}

void
cats_chan_finish(struct cats_chan *c)
{
	if (c->s != NULL)
		cats_stream_flush(c->s);
	if (c->s != NULL && c->ep[c->rot.cur].tls) {
		/* What went into the TLS connection's socket pair goes out. */
		shutdown(c->fd, SHUT_WR);
		cats_tls_drain(c->base, c->fd, 1000);
	}
}
