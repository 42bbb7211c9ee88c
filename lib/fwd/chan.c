/*
 * chan.c - the control channels of a CATS-Forwarder (chan.h).
 */
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "fwd/chan.h"

static void chan_connect(struct cats_chan *c);

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
on_item(struct cats_stream *s, const uint8_t *p, size_t n, uint64_t index,
    const struct cats_peer *peer, void *arg)
{
	struct cats_chan *c = arg;
	struct cats_rec r;
	struct cats_err e;
	(void)s;
	(void)p;
	(void)n;
	(void)peer;
	memset(&e, 0, sizeof(e));
	if (cats_rec_from_toks(c->dec, &r, &e) < 0) {
		char msg[400];
		c->w->ctr[CATS_FC_ctl_bad]++;
		cats_warnx("%s: %s", c->name, cats_err_fmt(&e, index, msg,
		    sizeof(msg)));
		return;
	}
	if (c->peers != NULL) {
		const struct cats_key *who;
		if (cats_rec_verify(&r, c->peers, &who, &e) < 0) {
			c->w->ctr[CATS_FC_ctl_auth_fail]++;
			cats_audit("auth-fail", "channel=%s record=%" PRIu64
			    " reason=\"%s\"", c->name, index, e.reason);
			return;
		}
	}
	cats_fwdp_ctl(c->w, &r, c->is_bind, c->now());
}

static void
on_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	struct cats_chan *c = arg;
	char msg[400];
	(void)s;
	c->w->ctr[CATS_FC_ctl_bad]++;
	cats_warnx("%s: %s", c->name, cats_err_fmt(e, index, msg, sizeof(msg)));
}

/*
 * Try again soon: 100 ms after a connection ended or a connect failed,
 * 100 ms more for each failure after it up to a second, so that a C-PS stage
 * restarted by cats-cps is reached again within its restart, and one that
 * stays down is asked once a second.
 */
static void
retry_later(struct cats_chan *c)
{
	if (c->retry_ms < 100)
		c->retry_ms = 100;
	struct timeval tv = { c->retry_ms / 1000, (c->retry_ms % 1000) * 1000 };
	evtimer_add(c->retry, &tv);
	if ((c->retry_ms += 100) > 1000)
		c->retry_ms = 1000;
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	chan_connect(arg);
}

static void
on_eof(struct cats_stream *s, int error, void *arg)
{
	struct cats_chan *c = arg;
	(void)s;
	cats_warnx("%s: connection closed%s%s", c->name, error ? ": " : "",
	    error ? strerror(error) : "");
	cats_stream_free(c->s);
	c->s = NULL;
	retry_later(c);
}

static void
chan_connect(struct cats_chan *c)
{
	char err[256];
	int fd = cats_ep_open(&c->ep, true, err, sizeof(err));
	if (fd < 0) {
		cats_warnx("%s: %s (retrying)", c->name, err);
		retry_later(c);
		return;
	}
	c->retry_ms = 100;
	static const struct cats_stream_cbs cbs = { .item = on_item,
		.bad = on_bad, .eof = on_eof };
	c->s = cats_stream_new(c->base, fd, fd, c->dgram, NULL, 0, &cbs, c);
	if (c->s == NULL) {
		close(fd);
		return;
	}
	cats_stream_own(c->s);
	cats_stream_decode_into(c->s, c->dec);
	if (!c->dgram && cats_stream_batch(c->s, 0) < 0)
		cats_warnx("%s: records are written one by one", c->name);
	if (c->is_bind)
		cats_fwdp_hello(c->w, c->now());
}

int
cats_chan_open(struct cats_chan *c, const char *spec, char *err,
    size_t errlen)
{
	char e[256];
	if (cats_ep_parse(spec, &c->ep, e, sizeof(e)) < 0) {
		snprintf(err, errlen, "%s: %s", spec, e);
		return -1;
	}
	if (c->ep.kind != CATS_EP_TCP && c->ep.kind != CATS_EP_UNIX &&
	    c->ep.kind != CATS_EP_UDP) {
		snprintf(err, errlen, "%s: a control channel is tcp:, unix: or "
		    "udp:", spec);
		return -1;
	}
	c->dgram = cats_ep_is_dgram(&c->ep);
	c->retry = evtimer_new(c->base, on_retry, c);
	chan_connect(c);
	return 0;
}

void
cats_chan_finish(struct cats_chan *c)
{
	if (c->s != NULL)
		cats_stream_flush(c->s);
}
