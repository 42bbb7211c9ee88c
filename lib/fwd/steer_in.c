/*
 * steer_in.c - the local channel of steer records into the egress's table
 * (steer.h): a listener, one record stream per connection.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "fwd/steer.h"
#include "net/ep.h"
#include "net/listener.h"
#include "rec/seq.h"
#include "sec/crypto.h"

struct cats_fsteer_in {
	struct cats_fsteer *t;
	const struct cats_keyring *kr;
	uint64_t (*now)(void);
	struct event_base *base;
	struct cats_listener *lst;
	struct cats_dec dec;
	int fd;
};

struct steer_conn {
	struct cats_sconn sc;	/* first: the listener's stream */
	struct cats_fsteer_in *in;
};

static void
conn_rec(struct cats_stream *s, struct cats_item *it, void *arg)
{
	struct steer_conn *c = arg;
	struct cats_fsteer_in *in = c->in;
	struct cats_rec *r = it->rec;
	struct cats_err e;
	const struct cats_key *who = NULL;
	uint64_t index = it->index;
	char msg[400];
	(void)s;
	memset(&e, 0, sizeof(e));
	if (r == NULL) {
		in->t->st.bad++;
		cats_warnx("steer: %s", it->why);
		return;
	}
	if (r->type != CATS_T_STEER) {
		in->t->st.bad++;
		cats_warnx("steer: record %" PRIu64 ": a %s record, not steer",
		    index, cats_type_name(r->type));
		return;
	}
	if (cats_rec_verify(r, in->kr, &who, &e) < 0) {
		in->t->st.bad++;
		cats_warnx("steer: record %" PRIu64 ": not verified: %s",
		    index, e.reason);
		cats_audit_limited("auth-fail", "channel=steer "
		    "record=%" PRIu64
		    " reason=\"%s\"", index, e.reason);
		return;
	}
	cats_conn_auth(c->sc.lc);
	cats_conn_touch(c->sc.lc);
	const struct cats_steer *sr = &r->u.steer;
	if (cats_fsteer_apply(in->t, sr, who->name, in->now(), msg,
	    sizeof(msg)) < 0) {
		cats_warnx("steer: record %" PRIu64 " (%s %s seq %" PRIu64
		    "): refused: %s", index, cats_steer_op_names[sr->op],
		    sr->from, sr->seq, msg);
		return;
	}
	char a[64], b[64];
	if (sr->op == CATS_STEER_REDIRECT)
		cats_audit("steer-redirect", "sma=%s epoch=%" PRIu64 " seq=%"
		    PRIu64 " cs=%s from=%s from_locator=%s to=%s locator=%s "
		    "until=%" PRIu64, sr->sma_id, sr->epoch, sr->seq, sr->cs_id,
		    sr->from, cats_ip_fmt(&sr->from_locator, a, sizeof(a)),
		    sr->to, cats_ip_fmt(&sr->locator, b, sizeof(b)), sr->until);
	else
		cats_audit("steer-end", "sma=%s epoch=%" PRIu64 " seq=%" PRIu64
		    " cs=%s from=%s reason=%s", sr->sma_id, sr->epoch, sr->seq,
		    sr->cs_id, sr->from, CATS_HAS(sr, STR, reason) ?
		    sr->reason : "-");
}


static int
conn_accept(struct cats_conn *lc, int fd, void *arg)
{
	static const struct cats_stream_cbs cbs = { .rec = conn_rec,
		.eof = cats_sconn_eof };
	struct cats_fsteer_in *in = arg;
	struct steer_conn *c = cats_sconn_accept(in->base, lc, fd, sizeof(*c),
	    &cbs, &in->dec);
	if (c == NULL)
		return -1;
	c->in = in;
	return 0;
}

struct cats_fsteer_in *
cats_fsteer_listen(struct event_base *base, const char *spec,
    struct cats_fsteer *t, const struct cats_keyring *kr,
    uint64_t (*now)(void), uint64_t hello_ms, char *err, size_t errlen)
{
	static const struct cats_listener_cbs cbs = { conn_accept,
		cats_sconn_closed };
	/* A C-SMA connects and says nothing until it steers: no hello
	 * deadline but under a flood, unless one is given; a connection
	 * counts as authenticated from its first verified record. */
	struct cats_listener_opts o = { .name = "steer", .max_conns = 16,
		.max_unauth = 16, .hello_ms = hello_ms,
		.hello_when_crowded = hello_ms == 0 };
	struct cats_ep ep;
	if (cats_ep_parse(spec, &ep, err, errlen) < 0)
		return NULL;
	if ((ep.kind != CATS_EP_UNIX && ep.kind != CATS_EP_TCP) || ep.tls) {
		snprintf(err, errlen, "%s: a unix: or tcp: endpoint", spec);
		return NULL;
	}
	struct cats_fsteer_in *in = calloc(1, sizeof(*in));
	if (in == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	in->base = base;
	in->t = t;
	in->kr = kr;
	in->now = now;
	cats_dec_init(&in->dec, NULL);
	if ((in->fd = cats_ep_listen(&ep, err, errlen)) < 0) {
		cats_dec_free(&in->dec);
		free(in);
		return NULL;
	}
	in->lst = cats_listener_new(base, &o, &cbs, in);
	if (in->lst == NULL || cats_listener_add(in->lst, in->fd, 0) < 0) {
		snprintf(err, errlen, "out of memory");
		cats_fsteer_in_free(in);
		return NULL;
	}
	return in;
}

void
cats_fsteer_in_free(struct cats_fsteer_in *in)
{
	if (in == NULL)
		return;
	if (in->lst != NULL)
		cats_listener_free(in->lst);
	close(in->fd);
	cats_dec_free(&in->dec);
	free(in);
}
