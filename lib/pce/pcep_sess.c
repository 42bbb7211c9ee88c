/*
 * pcep_sess.c - the PCEP session state machine (RFC 5440 section 6 and
 * Appendix A), stateless, for a PCE or a PCC (see pcep.h).
 *
 * Both sides send an Open as the connection opens.  RemoteOK is set when
 * the peer's Open is acceptable (a Keepalive acknowledges it), LocalOK when
 * the peer acknowledges ours; the session is up when both are.  The state
 * is OpenWait until RemoteOK, then KeepWait until LocalOK.  An Open whose
 * timers are out of range is negotiable: PCErr 1/4 proposes ours, and a
 * second unacceptable Open gets 1/5 and the end; capability faults are
 * not negotiable (10/12, 10/21, 10/34, 1/1).  Once up, the dead timer is
 * the peer's DeadTimer, our keepalive interval ours (or the one the peer
 * proposed with 1/4 and we accepted).
 */
#include <string.h>

#include "pce/pcep.h"

#define MINUTE_MS 60000u

const char *
cats_pcep_state_name(int st)
{
	static const char *const names[] = { "openwait", "keepwait", "up",
	    "closed" };
	return st >= 0 && st < (int)CATS_ARRAY_LEN(names) ? names[st] : "?";
}

void
cats_pcep_conf_default(struct cats_pcep_conf *c, bool pce)
{
	memset(c, 0, sizeof(*c));
	c->pce = pce;
	c->keepalive = 30;
	c->deadtimer = 120;
	c->peer_ka_min = 1;
	c->peer_ka_max = 255;
	c->peer_dt_min = 1;
	c->peer_dt_max = 240;
	c->openwait_ms = 60000;
	c->keepwait_ms = 60000;
	c->sr = c->srv6 = true;
	c->msd = pce ? 0 : CATS_TE_MSD_DEFAULT;
	c->max_unknown = 5;
	c->max_malformed = 5;
	c->lim = cats_pcep_limits_default;
}

/* Our Open, from the configuration and what was negotiated. */
static void
build_open(struct cats_pcep_sess *s)
{
	const struct cats_pcep_conf *c = &s->conf;
	struct cats_pcep_open *o = &s->local;
	uint8_t ka = o->keepalive, dt = o->deadtimer;
	bool renego = s->renegotiated > 0;
	memset(o, 0, sizeof(*o));
	o->version = CATS_PCEP_VERSION;
	o->keepalive = renego ? ka : c->keepalive;
	o->deadtimer = renego ? dt : c->deadtimer;
	o->sid = c->sid;
	if (c->sr || c->srv6) {
		o->pst_cap = true;
		if (c->sr)
			o->psts[o->npsts++] = CATS_PCEP_PST_SR;
		if (c->srv6)
			o->psts[o->npsts++] = CATS_PCEP_PST_SRV6;
	}
	if (c->sr) {
		o->sr = true;
		/* A PCE sends flags and MSD zero (RFC 8664 section 4.1.2). */
		if (!c->pce) {
			o->msd = c->msd;
			o->sr_flags = c->msd == 0 ? CATS_PCEP_SRCAP_X : 0;
			o->sr_legacy = c->sr_legacy;
		}
	}
	if (c->srv6) {
		o->srv6 = true;
		if (!c->pce && c->srv6_msd) {
			o->srv6_msd[0].type = 41;	/* SRH Max SL */
			o->srv6_msd[0].value = c->srv6_msd;
			o->nsrv6_msd = 1;
		}
	}
	s->ka_tx = o->keepalive;
}

static void
sent(struct cats_pcep_sess *s, size_t before, uint64_t now)
{
	if (s->out.len > before) {
		s->c.tx_msgs++;
		s->c.tx_bytes += s->out.len - before;
		s->t_tx = now;
	}
}

int
cats_pcep_sess_init(struct cats_pcep_sess *s, const struct cats_pcep_conf *c,
    uint64_t now)
{
	memset(s, 0, sizeof(*s));
	s->conf = *c;
	if (s->conf.lim.max_msg == 0)
		s->conf.lim = cats_pcep_limits_default;
	if (s->conf.lim.max_msg > CATS_PCEP_MSG_MAX)
		s->conf.lim.max_msg = CATS_PCEP_MSG_MAX;
	s->arena.cap = 4 * s->conf.lim.max_msg + 65536;
	s->state = CATS_PCEP_S_OPENWAIT;
	s->t_start = s->t_rx = s->t_tx = s->win_start = now;
	build_open(s);
	if (cats_pcep_put_open(&s->out, &s->local) < 0)
		return -1;
	sent(s, 0, now);
	return 0;
}

void
cats_pcep_sess_free(struct cats_pcep_sess *s)
{
	cats_buf_free(&s->in);
	cats_buf_free(&s->out);
	cats_arena_free(&s->arena);
	memset(s, 0, sizeof(*s));
	s->state = CATS_PCEP_S_CLOSED;
}

int
cats_pcep_sess_feed(struct cats_pcep_sess *s, const void *p, size_t n)
{
	if (s->state == CATS_PCEP_S_CLOSED)
		return 0;
	if (s->in.len + n > 2 * s->conf.lim.max_msg)
		return -1;
	if (cats_buf_add(&s->in, p, n) < 0)
		return -1;
	s->c.rx_bytes += n;
	return 0;
}

/* The session ends; ev says why. */
static int
end(struct cats_pcep_sess *s, struct cats_pcep_ev *ev,
    const struct cats_pcep_status *st)
{
	s->state = CATS_PCEP_S_CLOSED;
	s->closed_st = *st;
	ev->kind = CATS_PCEP_EV_CLOSED;
	ev->msg = NULL;
	ev->st = *st;
	return 1;
}

/* Send PCErr type/value (about ids), then end the session. */
static int
fail(struct cats_pcep_sess *s, uint64_t now, struct cats_pcep_ev *ev,
    uint8_t et, uint8_t evl, const char *why)
{
	struct cats_pcep_status st;
	cats_pcep_st(&st, CATS_PCEP_ST_CLOSE, et, evl, why);
	size_t before = s->out.len;
	struct cats_pcep_error e = { et, evl };
	(void)cats_pcep_put_pcerr(&s->out, NULL, 0, &e, 1, NULL);
	sent(s, before, now);
	s->c.tx_errs++;
	return end(s, ev, &st);
}

/* Send Close with reason, then end the session. */
static int
close_with(struct cats_pcep_sess *s, uint64_t now, struct cats_pcep_ev *ev,
    uint8_t reason, const char *why)
{
	struct cats_pcep_status st;
	cats_pcep_st(&st, CATS_PCEP_ST_CLOSE, 0, 0, why);
	st.close_reason = reason;
	size_t before = s->out.len;
	(void)cats_pcep_put_close(&s->out, reason);
	sent(s, before, now);
	return end(s, ev, &st);
}

void
cats_pcep_sess_close(struct cats_pcep_sess *s, uint8_t reason, uint64_t now,
    struct cats_pcep_ev *ev)
{
	if (s->state == CATS_PCEP_S_CLOSED) {
		ev->kind = CATS_PCEP_EV_NONE;
		return;
	}
	close_with(s, now, ev, reason, "closed by this side");
}

void
cats_pcep_sess_eof(struct cats_pcep_sess *s, struct cats_pcep_ev *ev)
{
	struct cats_pcep_status st;
	cats_pcep_st(&st, CATS_PCEP_ST_CLOSE, 0, 0,
	    "connection closed by the peer");
	if (s->state == CATS_PCEP_S_CLOSED) {
		ev->kind = CATS_PCEP_EV_NONE;
		return;
	}
	end(s, ev, &st);
}

/* Rate counters: one minute at a time. */
static void
window(struct cats_pcep_sess *s, uint64_t now)
{
	if (now - s->win_start >= MINUTE_MS) {
		s->win_start = now;
		s->win_unknown = s->win_refs = s->win_malformed = 0;
	}
}

static uint64_t
openwait_end(const struct cats_pcep_sess *s)
{
	return s->t_start + s->conf.openwait_ms;
}

static uint64_t
keepwait_end(const struct cats_pcep_sess *s)
{
	return s->t_keepwait + s->conf.keepwait_ms;
}

uint64_t
cats_pcep_sess_deadline(const struct cats_pcep_sess *s)
{
	uint64_t d = UINT64_MAX;
	switch (s->state) {
	case CATS_PCEP_S_OPENWAIT:
		d = openwait_end(s);
		break;
	case CATS_PCEP_S_KEEPWAIT:
		d = keepwait_end(s);
		break;
	case CATS_PCEP_S_UP:
		if (s->dt_rx)
			d = s->t_rx + (uint64_t)s->dt_rx * 1000;
		if (s->ka_tx) {
			uint64_t k = s->t_tx + (uint64_t)s->ka_tx * 1000;
			d = k < d ? k : d;
		}
		break;
	default:
		break;
	}
	return d;
}

/* Timers: 1 with ev when the session ended. */
static int
timers(struct cats_pcep_sess *s, uint64_t now, struct cats_pcep_ev *ev)
{
	switch (s->state) {
	case CATS_PCEP_S_OPENWAIT:
		if (now >= openwait_end(s))
			return fail(s, now, ev, CATS_PCEP_ET_SESSION,
			    CATS_PCEP_EV_OPENWAIT, "no Open before OpenWait");
		return 0;
	case CATS_PCEP_S_KEEPWAIT:
		if (now >= keepwait_end(s))
			return fail(s, now, ev, CATS_PCEP_ET_SESSION,
			    CATS_PCEP_EV_KEEPWAIT,
			    "no Keepalive before KeepWait");
		return 0;
	case CATS_PCEP_S_UP:
		if (s->dt_rx && now >= s->t_rx + (uint64_t)s->dt_rx * 1000)
			return close_with(s, now, ev, CATS_PCEP_CLOSE_DEADTIMER,
			    "dead timer expired");
		if (s->ka_tx && now >= s->t_tx + (uint64_t)s->ka_tx * 1000) {
			size_t before = s->out.len;
			(void)cats_pcep_put_keepalive(&s->out);
			sent(s, before, now);
			s->c.keepalives_tx++;
		}
		return 0;
	default:
		return 0;
	}
}

static bool
has_pst(const struct cats_pcep_open *o, uint8_t pst)
{
	for (size_t i = 0; i < o->npsts; i++)
		if (o->psts[i] == pst)
			return true;
	return false;
}

static bool
srv6_msd_type(uint8_t t)
{
	return t == 41 || t == 42 || t == 44 || t == 45;
}

/*
 * Is the peer's Open acceptable: 0 yes, 1 negotiable (timers), -1 not
 * (et/ev say which PCErr).
 */
static int
check_open(const struct cats_pcep_sess *s, const struct cats_pcep_open *o,
    uint8_t *et, uint8_t *ev, const char **why)
{
	const struct cats_pcep_conf *c = &s->conf;
	*et = CATS_PCEP_ET_INVALID;
	if (o->pst_cap && has_pst(o, CATS_PCEP_PST_SR) && !o->sr) {
		*ev = CATS_PCEP_EV_SR_CAP_MISSING;
		*why = "PST 1 without SR-PCE-CAPABILITY";
		return -1;
	}
	if (o->pst_cap && has_pst(o, CATS_PCEP_PST_SRV6) && !o->srv6) {
		*ev = CATS_PCEP_EV_SRV6_CAP_MISSING;
		*why = "PST 3 without SRv6-PCE-CAPABILITY";
		return -1;
	}
	if (c->pce && o->sr && (!o->pst_cap || has_pst(o, CATS_PCEP_PST_SR))
	    && !(o->sr_flags & CATS_PCEP_SRCAP_X) && o->msd == 0 &&
	    !o->sr_legacy) {
		*ev = CATS_PCEP_EV_MSD_ZERO;
		*why = "MSD 0 without the X flag";
		return -1;
	}
	if (c->pce && o->srv6 && has_pst(o, CATS_PCEP_PST_SRV6))
		for (size_t i = 0; i < o->nsrv6_msd; i++)
			if (!srv6_msd_type(o->srv6_msd[i].type)) {
				*et = CATS_PCEP_ET_SESSION;
				*ev = CATS_PCEP_EV_BAD_OPEN;
				*why = "SRv6 MSD type not an SRv6 one";
				return -1;
			}
	if (o->keepalive < c->peer_ka_min || o->keepalive > c->peer_ka_max ||
	    o->deadtimer < c->peer_dt_min || o->deadtimer > c->peer_dt_max ||
	    (o->deadtimer != 0 && o->deadtimer < o->keepalive)) {
		*et = CATS_PCEP_ET_SESSION;
		*ev = CATS_PCEP_EV_NEG;
		*why = "keepalive or deadtimer out of range";
		return 1;
	}
	return 0;
}

static uint8_t
clamp8(unsigned v, unsigned lo, unsigned hi)
{
	return (uint8_t)(v < lo ? lo : v > hi ? hi : v);
}

/* The Open we propose to a peer whose timers we refused. */
static void
proposal(const struct cats_pcep_sess *s, const struct cats_pcep_open *peer,
    struct cats_pcep_open *p)
{
	const struct cats_pcep_conf *c = &s->conf;
	*p = s->local;
	unsigned ka = peer->keepalive ? peer->keepalive : c->keepalive;
	p->keepalive = clamp8(ka, c->peer_ka_min, c->peer_ka_max);
	unsigned dt = 4u * p->keepalive;
	if (dt < p->keepalive)
		dt = p->keepalive;
	p->deadtimer = clamp8(dt, c->peer_dt_min > p->keepalive ?
	    c->peer_dt_min : p->keepalive, c->peer_dt_max);
}

/* A proposal for our own Open (the peer's PCErr 1/4): acceptable when the
 * keepalive is at least 1 and the deadtimer covers it. */
static bool
proposal_ok(const struct cats_pcep_open *o)
{
	return o->keepalive >= 1 && o->deadtimer >= o->keepalive;
}

static int
up(struct cats_pcep_sess *s, struct cats_pcep_ev *ev)
{
	s->state = CATS_PCEP_S_UP;
	ev->kind = CATS_PCEP_EV_UP;
	ev->msg = NULL;
	cats_pcep_st(&ev->st, CATS_PCEP_ST_OK, 0, 0, "session up");
	return 1;
}

static int
answered(struct cats_pcep_ev *ev, const struct cats_pcep_status *st)
{
	ev->kind = CATS_PCEP_EV_ANSWERED;
	ev->msg = NULL;
	ev->st = *st;
	return 1;
}

/* A message before the session is up. */
static int
establishing(struct cats_pcep_sess *s, uint64_t now, int rc,
    const struct cats_pcep_status *dst, struct cats_pcep_ev *ev)
{
	const struct cats_pcep_msg *m = &s->msg;
	uint8_t et, evl;
	const char *why;
	switch (m->type) {
	case CATS_PCEP_OPEN:
		if (s->remote_ok)
			return fail(s, now, ev, CATS_PCEP_ET_SESSION,
			    CATS_PCEP_EV_BAD_OPEN, "second Open");
		if (rc < 0)
			return fail(s, now, ev, dst->err_type ?
			    dst->err_type : CATS_PCEP_ET_SESSION,
			    dst->err_value ? dst->err_value :
			    CATS_PCEP_EV_BAD_OPEN, dst->why);
		switch (check_open(s, &m->open, &et, &evl, &why)) {
		case 0: {
			s->peer = m->open;
			s->remote_ok = true;
			s->dt_rx = m->open.deadtimer;
			size_t before = s->out.len;
			(void)cats_pcep_put_keepalive(&s->out);
			sent(s, before, now);
			s->c.keepalives_tx++;
			if (s->local_ok)
				return up(s, ev);
			s->state = CATS_PCEP_S_KEEPWAIT;
			s->t_keepwait = now;
			return 0;
		}
		case 1: {
			if (++s->open_retry >= 2)
				return fail(s, now, ev, CATS_PCEP_ET_SESSION,
				    CATS_PCEP_EV_SECOND_OPEN,
				    "second Open still unacceptable");
			struct cats_pcep_open p;
			proposal(s, &m->open, &p);
			struct cats_pcep_error e = { et, evl };
			size_t b4 = s->out.len;
			(void)cats_pcep_put_pcerr(&s->out, NULL, 0, &e, 1, &p);
			sent(s, b4, now);
			s->c.tx_errs++;
			struct cats_pcep_status st;
			cats_pcep_st(&st, CATS_PCEP_ST_PCERR, et, evl, why);
			return answered(ev, &st);
		}
		default:
			return fail(s, now, ev, et, evl, why);
		}
	case CATS_PCEP_KEEPALIVE:
		s->c.keepalives_rx++;
		s->local_ok = true;
		return s->remote_ok ? up(s, ev) : 0;
	case CATS_PCEP_PCERR: {
		if (rc < 0)
			return fail(s, now, ev, CATS_PCEP_ET_SESSION,
			    CATS_PCEP_EV_BAD_OPEN, "malformed PCErr");
		s->c.rx_errs++;
		const struct cats_pcep_err *e = &m->err;
		bool nego = false;
		for (size_t i = 0; i < e->n; i++)
			nego |= e->v[i].type == CATS_PCEP_ET_SESSION &&
			    e->v[i].value == CATS_PCEP_EV_NEG;
		if (!nego || s->local_ok) {
			struct cats_pcep_status st;
			cats_pcep_st(&st, CATS_PCEP_ST_CLOSE, e->v[0].type,
			    e->v[0].value, "the peer refused the session");
			return end(s, ev, &st);
		}
		if (!e->has_open || !proposal_ok(&e->open) ||
		    s->renegotiated >= 2)
			return fail(s, now, ev, CATS_PCEP_ET_SESSION,
			    CATS_PCEP_EV_PCERR_UNACC,
			    "the peer proposed unacceptable timers");
		s->renegotiated++;
		s->local.keepalive = e->open.keepalive;
		s->local.deadtimer = e->open.deadtimer;
		build_open(s);
		size_t before = s->out.len;
		(void)cats_pcep_put_open(&s->out, &s->local);
		sent(s, before, now);
		if (s->remote_ok)
			s->t_keepwait = now;
		struct cats_pcep_status st;
		cats_pcep_st(&st, CATS_PCEP_ST_OK, CATS_PCEP_ET_SESSION,
		    CATS_PCEP_EV_NEG, "our Open renegotiated");
		return answered(ev, &st);
	}
	case CATS_PCEP_CLOSE: {
		struct cats_pcep_status st;
		cats_pcep_st(&st, CATS_PCEP_ST_CLOSE, 0, 0,
		    "Close from the peer");
		st.close_reason = m->close_reason;
		return end(s, ev, &st);
	}
	default:
		return fail(s, now, ev, CATS_PCEP_ET_SESSION,
		    CATS_PCEP_EV_BAD_OPEN,
		    "a message before the session is up");
	}
}

/* Count one malformed message; 1 with ev when that closes the session. */
static int
count_malformed(struct cats_pcep_sess *s, uint64_t now,
    struct cats_pcep_ev *ev)
{
	s->c.malformed++;
	if (++s->win_malformed > s->conf.max_malformed)
		return close_with(s, now, ev, CATS_PCEP_CLOSE_MALFORMED,
		    "too many malformed messages");
	return 0;
}

static int
count_unknown(struct cats_pcep_sess *s, uint64_t now, struct cats_pcep_ev *ev,
    const struct cats_pcep_status *st)
{
	s->c.unknown_msgs++;
	if (++s->win_unknown > s->conf.max_unknown)
		return close_with(s, now, ev, CATS_PCEP_CLOSE_UNKNOWN_MSG,
		    "too many unknown messages");
	return answered(ev, st);
}

/* PCErr for a refused message (the ids of the requests it carried). */
static void
refuse(struct cats_pcep_sess *s, uint64_t now, const struct cats_pcep_msg *m,
    uint8_t et, uint8_t evl)
{
	uint32_t ids[64];
	size_t n = 0;
	for (size_t i = 0; i < m->nreqs && n < CATS_ARRAY_LEN(ids); i++)
		ids[n++] = m->reqs[i].rp.id;
	struct cats_pcep_error e = { et, evl };
	size_t before = s->out.len;
	(void)cats_pcep_put_pcerr(&s->out, ids, n, &e, 1, NULL);
	sent(s, before, now);
	s->c.tx_errs++;
}

/* A message once the session is up. */
static int
established(struct cats_pcep_sess *s, uint64_t now, int rc,
    const struct cats_pcep_status *dst, struct cats_pcep_ev *ev)
{
	struct cats_pcep_msg *m = &s->msg;
	if (rc < 0) {
		if (dst->code == CATS_PCEP_ST_IGNORED)
			return count_unknown(s, now, ev, dst);
		if (dst->code == CATS_PCEP_ST_NOMEM)
			return close_with(s, now, ev, CATS_PCEP_CLOSE_NONE,
			    "out of memory");
		if (dst->code == CATS_PCEP_ST_CLOSE)
			return close_with(s, now, ev, CATS_PCEP_CLOSE_MALFORMED,
			    dst->why);
		/* A message of a known type the speaker refuses. */
		if (m->type == CATS_PCEP_CLOSE || m->type == CATS_PCEP_PCERR ||
		    m->type == CATS_PCEP_PCNTF || m->type == CATS_PCEP_OPEN ||
		    m->type == CATS_PCEP_KEEPALIVE) {
			if (count_malformed(s, now, ev))
				return 1;
			return answered(ev, dst);
		}
		refuse(s, now, m, dst->err_type, dst->err_value);
		if (dst->err_value == CATS_PCEP_EV_MALFORMED &&
		    dst->err_type == CATS_PCEP_ET_INVALID &&
		    count_malformed(s, now, ev))
			return 1;
		struct cats_pcep_status st = *dst;
		st.code = CATS_PCEP_ST_PCERR;
		return answered(ev, &st);
	}
	switch (m->type) {
	case CATS_PCEP_KEEPALIVE:
		s->c.keepalives_rx++;
		return 0;
	case CATS_PCEP_CLOSE: {
		struct cats_pcep_status st;
		cats_pcep_st(&st, CATS_PCEP_ST_CLOSE, 0, 0,
		    "Close from the peer");
		st.close_reason = m->close_reason;
		return end(s, ev, &st);
	}
	case CATS_PCEP_PCREQ: {
		if (!s->conf.pce) {
			struct cats_pcep_status st;
			cats_pcep_st(&st, CATS_PCEP_ST_IGNORED, 0, 0,
			    "PCReq to a PCC");
			return count_unknown(s, now, ev, &st);
		}
		s->c.rx_reqs += m->nreqs;
		bool malf = false;
		for (size_t i = 0; i < m->nreqs; i++) {
			const struct cats_pcep_req *r = &m->reqs[i];
			if (r->st.code == CATS_PCEP_ST_OK)
				continue;
			s->c.bad_reqs++;
			malf |= r->st.err_type == CATS_PCEP_ET_INVALID &&
			    r->st.err_value == CATS_PCEP_EV_MALFORMED;
			struct cats_pcep_error e = { r->st.err_type,
			    r->st.err_value };
			size_t before = s->out.len;
			(void)cats_pcep_put_pcerr(&s->out, &r->rp.id, 1, &e, 1,
			    NULL);
			sent(s, before, now);
			s->c.tx_errs++;
		}
		if (malf && count_malformed(s, now, ev))
			return 1;
		break;
	}
	case CATS_PCEP_PCREP:
		if (s->conf.pce) {
			struct cats_pcep_status st;
			cats_pcep_st(&st, CATS_PCEP_ST_IGNORED, 0, 0,
			    "PCRep to a PCE");
			return count_unknown(s, now, ev, &st);
		}
		s->c.rx_reps += m->nreps;
		break;
	case CATS_PCEP_PCERR:
		s->c.rx_errs++;
		break;
	case CATS_PCEP_PCNTF:
		break;
	default: {
		/* An Open once up: not part of the session any more. */
		struct cats_pcep_status st;
		cats_pcep_st(&st, CATS_PCEP_ST_IGNORED, 0, 0,
		    "Open on an established session");
		return count_unknown(s, now, ev, &st);
	}
	}
	ev->kind = CATS_PCEP_EV_MSG;
	ev->msg = m;
	cats_pcep_st(&ev->st, CATS_PCEP_ST_OK, 0, 0, NULL);
	return 1;
}

int
cats_pcep_sess_next(struct cats_pcep_sess *s, uint64_t now,
    struct cats_pcep_ev *ev)
{
	memset(ev, 0, sizeof(*ev));
	for (;;) {
		if (s->state == CATS_PCEP_S_CLOSED)
			return 0;
		window(s, now);
		if (timers(s, now, ev))
			return 1;
		struct cats_pcep_status st;
		long fl = cats_pcep_frame(s->in.p, s->in.len, &s->conf.lim,
		    &st);
		if (fl == 0)
			return 0;
		if (fl < 0) {
			s->c.malformed++;
			if (s->state == CATS_PCEP_S_UP)
				return close_with(s, now, ev,
				    CATS_PCEP_CLOSE_MALFORMED, st.why);
			return fail(s, now, ev, CATS_PCEP_ET_SESSION,
			    st.err_value == CATS_PCEP_EV_VERSION ?
			    CATS_PCEP_EV_VERSION : CATS_PCEP_EV_BAD_OPEN,
			    st.why);
		}
		cats_arena_reset(&s->arena);
		int rc = cats_pcep_decode(s->in.p, (size_t)fl, &s->conf.lim,
		    &s->msg, &s->arena, &st);
		cats_buf_consume(&s->in, (size_t)fl);
		s->t_rx = now;
		s->c.rx_msgs++;
		int r = s->state == CATS_PCEP_S_UP ?
		    established(s, now, rc, &st, ev) :
		    establishing(s, now, rc, &st, ev);
		if (r)
			return 1;
	}
}

static int
may_send(const struct cats_pcep_sess *s)
{
	return s->state == CATS_PCEP_S_UP ? 0 : -1;
}

int
cats_pcep_sess_send_reqs(struct cats_pcep_sess *s,
    const struct cats_pcep_req *r, size_t n, uint64_t now)
{
	size_t before = s->out.len;
	if (may_send(s) < 0 || cats_pcep_put_pcreq(&s->out, r, n) < 0)
		return -1;
	sent(s, before, now);
	s->c.tx_reqs += n;
	return 0;
}

int
cats_pcep_sess_send_reps(struct cats_pcep_sess *s,
    const struct cats_pcep_rep *r, size_t n, uint64_t now)
{
	size_t before = s->out.len;
	if (may_send(s) < 0 || cats_pcep_put_pcrep(&s->out, r, n) < 0)
		return -1;
	sent(s, before, now);
	s->c.tx_reps += n;
	return 0;
}

int
cats_pcep_sess_send_err(struct cats_pcep_sess *s, const uint32_t *ids,
    size_t nids, uint8_t type, uint8_t value, uint64_t now)
{
	struct cats_pcep_error e = { type, value };
	size_t before = s->out.len;
	if (may_send(s) < 0 ||
	    cats_pcep_put_pcerr(&s->out, ids, nids, &e, 1, NULL) < 0)
		return -1;
	sent(s, before, now);
	s->c.tx_errs++;
	return 0;
}

int
cats_pcep_sess_unknown_ref(struct cats_pcep_sess *s, uint32_t id,
    uint64_t now, struct cats_pcep_ev *ev)
{
	memset(ev, 0, sizeof(*ev));
	if (s->state != CATS_PCEP_S_UP)
		return 0;
	window(s, now);
	s->c.unknown_refs++;
	(void)cats_pcep_sess_send_err(s, &id, 1, CATS_PCEP_ET_UNKNOWN_REF, 0,
	    now);
	if (++s->win_refs > s->conf.max_unknown)
		return close_with(s, now, ev, CATS_PCEP_CLOSE_UNKNOWN_REQ,
		    "too many unknown request references");
	return 0;
}
