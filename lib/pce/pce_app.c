/*
 * pce_app.c - the running cats-pce (pce_app.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/bucket.h"
#include "base/clock.h"
#include "base/list.h"
#include "base/log.h"
#include "base/tool.h"
#include "base/stats.h"
#include "net/ep.h"
#include "net/listener.h"
#include "pce/pce_app.h"
#include "pce/pcep_srv.h"
#include "rec/json.h"

/* What a record came in on: a session (lc its place in the listener),
 * the datagram socket or stdin. */
struct cats_pce_sess {
	struct cats_sconn sc;	/* first: the stream, lc NULL off a listener */
	struct cats_pce_app *a;
};

static void pcc_submit(struct cats_pce_app *a, struct cats_stream *s,
    const struct cats_peer *peer, struct cats_pce_sess *ss,
    const struct cats_path_req *rq, struct cats_pcep_peer *pp, uint32_t pp_id);
static void pcc_forget(struct cats_pce_app *a, struct cats_pce_sess *ss);
static void pcc_forget_pcep(struct cats_pce_app *a, struct cats_pcep_peer *p);
static void pcep_relay(struct cats_pce_app *a, struct cats_pcep_peer *p,
    uint32_t id, struct cats_path_req *q, uint64_t now);
static bool pcc_idle(const struct cats_pce_app *a);

/* A session's peer said something that holds: it is past its hello. */
static void
sess_good(void *arg)
{
	struct cats_conn *lc = ((struct cats_pce_sess *)arg)->sc.lc;
	if (lc != NULL) {
		cats_conn_auth(lc);
		cats_conn_touch(lc);
	}
}

/* ---- replies ---- */

/* Send a record (encoded bytes) to where the item came from. */
static void
reply(struct cats_pce_app *a, struct cats_stream *from,
    const struct cats_peer *peer, const uint8_t *p, size_t n)
{
	struct cats_stream *to = a->out ? a->out : from;
	int rc = peer ? cats_stream_sendto(to, peer, p, n) :
	    cats_stream_send(to, p, n);
	if (rc < 0) {
		if (a->out) {
			cats_tool_output_failed("output", errno ? errno : EPIPE);
			a->exit_code = CATS_EXIT_IOERR;
			event_base_loopbreak(a->base);
		}
		return;
	}
	/* Back-pressure: stop reading until the output drains. */
	if (rc == 1)
		cats_stream_pause(from);
}

static void
reply_rec(struct cats_pce_app *a, struct cats_stream *from,
    const struct cats_peer *peer, const struct cats_rec *r0)
{
	struct cats_buf b = { 0 };
	struct cats_rec copy = *r0;
	const struct cats_rec *r = &copy;
	if (a->sign.kind >= 0 && cats_rec_sign(&copy, &a->sign) < 0) {
		cats_errorx("cannot sign a %s record", cats_type_name(r->type));
		return;
	}
	if (cats_rec_encode(r, &b, true) < 0) {
		cats_errorx("cannot encode a %s record", cats_type_name(r->type));
	} else {
		reply(a, from, peer, b.p, b.len);
	}
	cats_buf_free(&b);
}

/*
 * A path-req that does not decode: an error record carrying what can be
 * salvaged (txn, ingress or headend, flow) so that the transaction still
 * closes at the forwarder.  Built as JSON and decoded, so that whatever is
 * salvaged is validated like any record.
 */
static void
bad_request(struct cats_pce_app *a, struct cats_stream *from,
    const struct cats_peer *peer, const struct cats_tok *tk, uint64_t index,
    const struct cats_err *e)
{
	char msg[400];
	json_t *j = json_object();
	json_object_set_new(j, "type", json_string("error"));
	json_object_set_new(j, "code", json_string("bad-request"));
	json_object_set_new(j, "ts", json_integer((json_int_t)cats_clock_now()));
	json_object_set_new(j, "stage", json_string("cats-pce"));
	cats_err_fmt(e, index, msg, sizeof(msg));
	json_object_set_new(j, "msg", json_stringn(msg, strnlen(msg, 500)));
	json_object_set_new(j, "index", json_integer((json_int_t)index));
	if (e->field[0])
		json_object_set_new(j, "field", json_string(e->field));
	json_t *opt[3] = { NULL, NULL, NULL };	/* txn, ingress, flow */
	const char *names[3] = { "txn", "ingress", "flow" };
	const struct cats_tok *headend = NULL;
	if (tk != NULL && tk[0].kind == CATS_TK_MAP) {
		size_t k = 1;
		for (uint32_t i = 0; i < tk[0].n; i++) {
			size_t v = tk[k].next;
			if (tk[k].kind == CATS_TK_TEXT) {
				const char *key = (const char *)tk[k].v.p;
				size_t kn = tk[k].n;
				if (kn == 3 && memcmp(key, "txn", 3) == 0 &&
				    tk[v].kind == CATS_TK_UINT && !opt[0])
					opt[0] = json_integer(
					    (json_int_t)(tk[v].v.u & CATS_U53));
				else if (kn == 7 && memcmp(key, "ingress", 7)
				    == 0 && tk[v].kind == CATS_TK_TEXT && !opt[1])
					opt[1] = json_stringn((const char *)
					    tk[v].v.p, tk[v].n);
				else if (kn == 7 && memcmp(key, "headend", 7)
				    == 0 && tk[v].kind == CATS_TK_TEXT)
					headend = &tk[v];
				else if (kn == 4 && memcmp(key, "flow", 4) == 0
				    && tk[v].kind == CATS_TK_MAP && !opt[2])
					opt[2] = cats_toks_to_json(tk, v);
			}
			k = tk[v].next;
		}
		/* The ingress forwarder is the headend (cats(7)). */
		if (opt[1] == NULL && headend != NULL)
			opt[1] = json_stringn((const char *)headend->v.p,
			    headend->n);
	}
	/* Drop what does not validate, least useful first. */
	struct cats_rec r;
	struct cats_err e2;
	int ok = -1;
	for (int drop = 3; drop >= 0 && ok < 0; drop--) {
		for (int i = 0; i < 3; i++) {
			if (opt[i] != NULL && i < drop)
				json_object_set(j, names[i], opt[i]);
			else
				json_object_del(j, names[i]);
		}
		ok = cats_rec_from_json(&a->dec, j, &r, &e2);
	}
	if (ok == 0)
		reply_rec(a, from, peer, &r);
	for (int i = 0; i < 3; i++)
		json_decref(opt[i]);
	json_decref(j);
}

/* The value of a top-level "type" key, or -1. */
static int
peek_type(const struct cats_tok *tk)
{
	if (tk[0].kind != CATS_TK_MAP)
		return -1;
	size_t k = 1;
	for (uint32_t i = 0; i < tk[0].n; i++) {
		size_t v = tk[k].next;
		if (tk[k].kind == CATS_TK_TEXT && tk[k].n == 4 &&
		    memcmp(tk[k].v.p, "type", 4) == 0 &&
		    tk[v].kind == CATS_TK_TEXT)
			return cats_type_from_name((const char *)tk[v].v.p,
			    tk[v].n);
		k = tk[v].next;
	}
	return -1;
}

/* Count a bad record; with --strict, read nothing more. */
static void
count_bad(struct cats_pce_app *a, struct cats_stream *s)
{
	a->bad++;
	if (a->exit_code == 0)
		a->exit_code = CATS_EXIT_DATAERR;
	if (a->strict) {
		cats_stream_pause(s);
		event_base_loopexit(a->base, NULL);
	}
}

/*
 * A path request or net record on an authenticated channel: verified
 * against the keyring, inside the time window, not seen before.  A request
 * that fails gets an "unauthorized" error (fail closed: no path), and the
 * failure is audited.
 */
static bool
authentic(struct cats_pce_app *a, struct cats_stream *s,
    const struct cats_peer *peer, const struct cats_rec *r, uint64_t index)
{
	struct cats_err e;
	const struct cats_key *who = NULL;
	const char *why;
	memset(&e, 0, sizeof(e));
	uint64_t ts = r->type == CATS_T_PATH_REQ ? r->u.preq.ts : r->u.net.ts;
	if (cats_rec_verify(r, &a->keys, &who, &e) < 0) {
		why = e.reason;
	} else {
		int g = cats_tag_guard_check(a->guard, r->auth.tag,
		    r->auth.tag_len, ts, cats_clock_now());
		if (g == CATS_REPLAY_OK)
			return true;
		why = cats_replay_reason(g);
	}
	a->unauthorized++;
	cats_warnx("record %" PRIu64 ": %s refused: %s", index,
	    cats_type_name(r->type), why);
	cats_audit("auth-failure", "record=%" PRIu64 " type=%s sender=%s "
	    "reason=\"%s\"", index, cats_type_name(r->type),
	    who && who->name[0] ? who->name : "-", why);
	if (r->type != CATS_T_PATH_REQ)
		return false;
	const struct cats_path_req *q = &r->u.preq;
	struct cats_rec er;
	char msg[300];
	snprintf(msg, sizeof(msg), "path request refused: %s", why);
	cats_rec_error_init(&er, "unauthorized", "cats-pce", q->txn,
	    cats_clock_now(), msg);
	CATS_SET(&er.u.error, ERR, index, index);
	cats_rec_error_route(&er, q->ingress ? q->ingress : q->headend,
	    CATS_HAS(q, PRQ, flow) ? &q->flow : NULL);
	reply_rec(a, s, peer, &er);
	return false;
}

/* cats_pce_answer(), its time in the computation histogram. */
static int
answer(struct cats_pce_app *a, const struct cats_path_req *rq, uint64_t now,
    struct cats_rec *rep, struct cats_arena *arena)
{
	uint64_t t0 = cats_clock_mono_ns();
	int rc = cats_pce_answer(&a->pce, rq, now, rep, arena);
	cats_hist_observe(&a->h_compute, (cats_clock_mono_ns() - t0) / 1000);
	return rc;
}

/*
 * A path-req answered; a net record applied to the database.  The stream
 * decodes the item from the tokens it scanned it into (a->dec): one scan.
 */
static void
on_rec(struct cats_stream *s, struct cats_item *it, void *arg)
{
	struct cats_pce_app *a = ((struct cats_pce_sess *)arg)->a;
	const struct cats_peer *peer = it->peer;
	const uint8_t *p = it->p;
	size_t n = it->n;
	uint64_t index = it->index;
	a->records++;
	if (it->rec == NULL) {
		/* Which type was it meant to be?  Its tokens are still in
		 * a->dec: it scanned, it did not validate. */
		int type = peek_type(a->dec.toks.t);
		cats_errorx("%s", it->why);
		count_bad(a, s);
		if (type == CATS_T_PATH_REQ)
			bad_request(a, s, peer, a->dec.toks.t, index, &it->err);
		else if (type >= 0)
			reply(a, s, peer, p, n);	/* not ours to judge */
		return;
	}
	struct cats_rec *r = it->rec;
	if (cats_clock_replay()) {
		uint64_t ts = 0;
		if (r->type == CATS_T_PATH_REQ || r->type == CATS_T_NET)
			ts = cats_rec_ts(r);
		cats_clock_observe(ts);
	}
	if (a->keys.n > 0 && (r->type == CATS_T_PATH_REQ ||
	    r->type == CATS_T_NET) && !authentic(a, s, peer, r, index)) {
		/* An unauthenticated net record is not applied; it is not
		 * ours to drop either. */
		if (r->type == CATS_T_NET)
			reply(a, s, peer, p, n);
		return;
	}
	if (a->keys.n == 0 || r->type == CATS_T_PATH_REQ || r->type == CATS_T_NET)
		sess_good(arg);
	if (r->type == CATS_T_PATH_REQ && a->pcc != NULL) {
		pcc_submit(a, s, peer, arg, &r->u.preq, NULL, 0);
		return;
	}
	if (r->type == CATS_T_PATH_REQ) {
		struct cats_rec rep;
		cats_arena_reset(&a->arena);
		if (answer(a, &r->u.preq, cats_clock_now(), &rep,
		    &a->arena) < 0) {
			cats_errorx("record %" PRIu64 ": out of memory", index);
			struct cats_err oom;
			cats_err_set(&oom, "", "out of memory");
			bad_request(a, s, peer, NULL, index, &oom);
			return;
		}
		reply_rec(a, s, peer, &rep);
		return;
	}
	if (r->type == CATS_T_NET) {
		char err[300];
		int rc = cats_te_apply_net(a->pce.te, &r->u.net, err, sizeof(err));
		if (rc < 0) {
			cats_warnx("record %" PRIu64 ": net: %s", index, err);
			a->net_refused++;
			/* Invalid input as any other: counted, 65 at the end. */
			count_bad(a, s);
		} else if (rc == 0) {
			a->net_applied++;
			cats_debug("record %" PRIu64 ": net applied, generation "
			    "%" PRIu64, index, cats_te_gen(a->pce.te));
		}
	}
	a->passed++;
	reply(a, s, peer, p, n);
}

static void
on_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	struct cats_pce_app *a = ((struct cats_pce_sess *)arg)->a;
	char msg[400];
	cats_errorx("%s", cats_err_fmt(e, index, msg, sizeof(msg)));
	a->records++;
	count_bad(a, s);
}

/* ---- stdio mode ---- */

static void
on_stdin_eof(struct cats_stream *s, int error, void *arg)
{
	struct cats_pce_app *a = ((struct cats_pce_sess *)arg)->a;
	(void)s;
	if (error != 0) {
		cats_errorx("input: %s", strerror(error));
		a->exit_code = CATS_EXIT_FAIL;
	}
	/* With --pcep, the end of the records is not the end of the run:
	 * the sessions are served until SIGTERM. */
	if (a->pcep != NULL && error == 0) {
		if (a->out != NULL)
			(void)cats_stream_flush(a->out);
		return;
	}
	/* With --pce, once the requests sent are answered. */
	a->in_done = true;
	if (a->pcc != NULL && error == 0 && !pcc_idle(a))
		return;
	event_base_loopexit(a->base, NULL);
}

static void
on_out_drained(struct cats_stream *s, void *arg)
{
	struct cats_pce_app *a = arg;
	(void)s;
	if (a->in)
		cats_stream_resume(a->in);
}

static void
on_out_eof(struct cats_stream *s, int error, void *arg)
{
	struct cats_pce_app *a = arg;
	(void)s;
	cats_tool_output_failed("output", error ? error : EPIPE);
	a->exit_code = CATS_EXIT_IOERR;
	event_base_loopbreak(a->base);
}

int
cats_pce_app_stdio(struct cats_pce_app *a, int ofd)
{
	static const struct cats_stream_cbs incbs = {
		.rec = on_rec, .bad = on_bad, .eof = on_stdin_eof,
	};
	static const struct cats_stream_cbs outcbs = {
		.eof = on_out_eof, .drained = on_out_drained,
	};
	a->stdio = calloc(1, sizeof(*a->stdio));
	if (a->stdio == NULL) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	a->stdio->a = a;
	a->out = cats_stream_new(a->base, -1, ofd, false, NULL, 0, &outcbs, a);
	a->in = cats_stream_new(a->base, 0, -1, false, NULL, 0, &incbs,
	    a->stdio);
	if (a->in == NULL || a->out == NULL) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	cats_stream_decode_into(a->in, &a->dec);
	a->stdio->sc.st = a->in;
	return CATS_EXIT_OK;
}

/* ---- listen mode ---- */

static void
session_eof(struct cats_stream *s, int error, void *arg)
{
	struct cats_pce_sess *ss = arg;
	(void)s;
	if (error)
		cats_debug("session: %s", strerror(error));
	pcc_forget(ss->a, ss);
	cats_sconn_end(ss);
}

static void
session_drained(struct cats_stream *s, void *arg)
{
	(void)arg;
	cats_stream_resume(s);
}

static int
session_accept(struct cats_conn *lc, int fd, void *arg)
{
	static const struct cats_stream_cbs cbs = {
		.rec = on_rec, .bad = on_bad, .eof = session_eof,
		.drained = session_drained,
	};
	struct cats_pce_app *a = arg;
	struct cats_pce_sess *ss = cats_sconn_accept(a->base, lc, fd,
	    sizeof(*ss), &cbs, &a->dec);
	if (ss == NULL)
		return -1;
	ss->a = a;
	a->sessions++;
	return 0;
}

/* The listener ends a session (its deadline, an eviction, the end). */
static void
session_closed(struct cats_conn *lc, int why, void *arg)
{
	struct cats_pce_sess *ss = cats_conn_data(lc);
	(void)why;
	(void)arg;
	pcc_forget(ss->a, ss);
	cats_sconn_free(ss);
}

int
cats_pce_app_listener(struct cats_pce_app *a, int fd, bool dgram)
{
	if (!dgram) {
		static const struct cats_listener_cbs cbs = { session_accept,
			session_closed };
		struct cats_listener_opts o = { .name = "session",
			.hello_ms = a->hello_ms,
			.hello_when_crowded = a->hello_ms == 0 };
		if (a->lst == NULL)
			a->lst = cats_listener_new(a->base, &o, &cbs, a);
		if (a->lst == NULL || cats_listener_add(a->lst, fd, 0) < 0) {
			cats_errorx("out of memory");
			return CATS_EXIT_FAIL;
		}
		return CATS_EXIT_OK;
	}
	static const struct cats_stream_cbs dcbs = {
		.rec = on_rec, .bad = on_bad,
	};
	struct cats_pce_sess *ss = calloc(1, sizeof(*ss));
	if (ss != NULL) {
		ss->a = a;
		ss->sc.st = cats_stream_new(a->base, fd, fd, true, NULL, 0,
		    &dcbs, ss);
	}
	if (ss == NULL || ss->sc.st == NULL) {
		free(ss);
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	cats_stream_decode_into(ss->sc.st, &a->dec);
	return CATS_EXIT_OK;
}

/* ---- PCEP (--pcep) ---- */

/* The names index of the database in force (pcep.h: rebuilt when the
 * database changes). */
static const struct cats_pcep_names *
pcep_names(struct cats_pce_app *a)
{
	uint64_t gen = cats_te_gen(a->pce.te);
	if (a->names == NULL || a->names_gen != gen) {
		cats_pcep_names_free(a->names);
		a->names = cats_pcep_names_new(a->pce.te);
		a->names_gen = gen;
	}
	return a->names;
}

static void
pcep_status_text(const struct cats_pcep_status *st, char *b, size_t len)
{
	int n = snprintf(b, len, "error=%u/%u close=%u why=\"%s\"",
	    st->err_type, st->err_value, st->close_reason,
	    st->why ? st->why : "");
	if (n > 0 && (size_t)n < len && st->has_req)
		snprintf(b + n, len - (size_t)n, " req=%" PRIu32, st->req_id);
}

/*
 * May a PCEP session's log and audit line be written now?  Peers decide
 * how many there are (refused connections, garbage, sessions dropped), so
 * they go through one token bucket (PCEP_AUDIT_RATE a second, bursts of
 * PCEP_AUDIT_BURST); the lines it holds back are counted, and the first
 * line let through after them says how many there were.
 */
#define PCEP_AUDIT_RATE 20
#define PCEP_AUDIT_BURST 50
static bool
pcep_audit_ok(struct cats_pce_app *a)
{
	uint64_t now = cats_clock_now();
	if (!a->audit_init) {
		cats_bucket_init(&a->audit, PCEP_AUDIT_RATE, PCEP_AUDIT_BURST,
		    now);
		a->audit_init = true;
	}
	if (!cats_bucket_take(&a->audit, 1, now)) {
		a->audit_suppressed++;
		a->audit_held++;
		return false;
	}
	if (a->audit_held > 0) {
		cats_warnx("pcep: %" PRIu64 " session lines suppressed (at "
		    "most %d a second)", a->audit_held, PCEP_AUDIT_RATE);
		cats_audit("pcep-audit-suppressed", "lines=%" PRIu64,
		    a->audit_held);
		a->audit_held = 0;
	}
	return true;
}

static void
pcep_note(struct cats_pcep_peer *p, const char *peer, int what,
    const struct cats_pcep_status *st, void *arg)
{
	struct cats_pce_app *a = arg;
	char b[300];
	(void)p;
	if (what == CATS_PCEP_NOTE_REFUSED)
		a->pcep_refused++;
	if (!pcep_audit_ok(a))
		return;
	pcep_status_text(st, b, sizeof(b));
	cats_warnx("pcep: %s: %s: %s", peer, cats_pcep_note_names[what], b);
	cats_audit(what == CATS_PCEP_NOTE_REFUSED ? "pcep-refused" :
	    "pcep-event", "peer=%s what=%s %s", peer,
	    cats_pcep_note_names[what], b);
}

static void
pcep_up(struct cats_pcep_peer *p, void *arg)
{
	struct cats_pce_app *a = arg;
	a->sessions++;
	cats_info("pcep: %s: session up", cats_pcep_peer_name(p));
}

static void
pcep_closed(struct cats_pcep_peer *p, const struct cats_pcep_status *st,
    void *arg)
{
	struct cats_pce_app *a = arg;
	char b[300];
	pcc_forget_pcep(a, p);
	if (!pcep_audit_ok(a))
		return;
	pcep_status_text(st, b, sizeof(b));
	cats_info("pcep: %s: session closed: %s", cats_pcep_peer_name(p), b);
	/* Ended by an error (ours or the peer's): audited. */
	if (st->err_type != 0 || st->close_reason > CATS_PCEP_CLOSE_NONE)
		cats_audit("pcep-closed", "peer=%s %s", cats_pcep_peer_name(p),
		    b);
}

/*
 * The MSD the PCC advertised in its Open (SR-PCE-CAPABILITY; SRH Max SL,
 * MSD type 41, of SRv6-PCE-CAPABILITY) bounds its requests that carry no
 * SID depth bound of their own (RFC 8664 4.5, RFC 9603 4.1).
 */
static void
pcc_msd(struct cats_pcep_peer *p, struct cats_path_req *q)
{
	const struct cats_pcep_sess *s = cats_pcep_peer_sess(p);
	if (s == NULL || CATS_HAS(q, PRQ, msd))
		return;
	const struct cats_pcep_open *o = &s->peer;
	if (q->dataplane == CATS_DP_SRMPLS && o->sr && o->msd > 0)
		CATS_SET(q, PRQ, msd, o->msd);
	else if (q->dataplane == CATS_DP_SRV6 && o->srv6)
		for (size_t i = 0; i < o->nsrv6_msd; i++)
			if (o->srv6_msd[i].type == 41 &&
			    o->srv6_msd[i].value > 0)
				CATS_SET(q, PRQ, msd, o->srv6_msd[i].value);
}

/* A PCReq: every well-formed request answered, in one PCRep. */
static void
pcep_msg(struct cats_pcep_peer *p, const struct cats_pcep_msg *m, void *arg)
{
	struct cats_pce_app *a = arg;
	if (m->type != CATS_PCEP_PCREQ || m->nreqs == 0)
		return;
	const struct cats_pcep_names *names = pcep_names(a);
	cats_arena_reset(&a->parena);
	struct cats_pcep_rep *reps = cats_arena_alloc(&a->parena,
	    m->nreqs * sizeof(*reps));
	if (reps == NULL || names == NULL) {
		cats_errorx("pcep: out of memory");
		return;
	}
	size_t n = 0;
	uint64_t now = cats_clock_now();
	for (size_t i = 0; i < m->nreqs; i++) {
		const struct cats_pcep_req *r = &m->reqs[i];
		if (r->st.code != CATS_PCEP_ST_OK)
			continue;	/* the session answered it */
		a->pcep_reqs++;
		struct cats_pcep_status st;
		struct cats_path_req prq;
		struct cats_rec rep;
		if (cats_pcep_to_path_req(r, a->pce.te, names, now, &prq,
		    &a->parena, &st) < 0) {
			a->pcep_errs++;
			cats_pcep_peer_send_err(p, &r->rp.id, 1, st.err_type,
			    st.err_value);
			continue;
		}
		pcc_msd(p, &prq);
		if (a->pcc != NULL) {
			/* --pce too: the remote PCE answers, as records. */
			pcep_relay(a, p, r->rp.id, &prq, now);
			continue;
		}
		if (answer(a, &prq, now, &rep, &a->parena) < 0 ||
		    cats_pcep_from_path_rep(&rep.u.prep, r, a->pce.te, names,
		    &reps[n], &a->parena) < 0) {
			/* Out of memory: "PCE currently unavailable". */
			cats_errorx("pcep: request %" PRIu32 ": out of memory",
			    r->rp.id);
			memset(&reps[n], 0, sizeof(reps[n]));
			reps[n].rp = r->rp;
			reps[n].nopath = true;
			reps[n].vector = CATS_PCEP_NPV_PCE_UNAVAILABLE;
		}
		n++;
	}
	if (n > 0) {
		if (cats_pcep_peer_send_reps(p, reps, n) < 0)
			cats_warnx("pcep: %s: reply not sent",
			    cats_pcep_peer_name(p));
		else
			a->pcep_reps += n;
	}
}

int
cats_pce_app_pcep(struct cats_pce_app *a, int fd)
{
	static const struct cats_pcep_srv_cbs cbs = {
		pcep_up, pcep_msg, pcep_note, pcep_closed,
	};
	struct cats_pcep_srv_conf c = {
		.allow = a->pcep_allow, .nallow = a->pcep_nallow,
	};
	cats_pcep_conf_default(&c.sess, true);
	if (a->pcep == NULL)
		a->pcep = cats_pcep_srv_new(a->base, &c, &cbs, a);
	if (a->pcep == NULL || pcep_names(a) == NULL ||
	    cats_pcep_srv_listen(a->pcep, fd) < 0) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	return CATS_EXIT_OK;
}

/* ---- PCC (--pce) ---- */

#define PCC_MAX_PENDING 4096
#define PCC_TIMEOUT_MS 5000
#define PCC_CONNECT_MS 5000
#define PCC_BACKOFF_MIN 500
#define PCC_BACKOFF_MAX 30000
#define PCC_LATE 64		/* ids of expired requests remembered */

/* A request waiting for its reply: the path-req as it was decoded when it
 * came, copied into its own arena; where it came from; its request id. */
struct pcc_req {
	struct pcc_req *next, *prev;
	uint32_t id;
	bool sent;
	uint64_t expires;
	struct cats_pce_sess *ss;	/* NULL: its session went away */
	struct cats_pcep_peer *pp;	/* or the --pcep session that asked */
	uint32_t pp_id;			/* ... and its request id */
	bool from_pcep;
	bool has_peer;
	struct cats_peer peer;
	struct cats_path_req rq;
	struct cats_arena arena;	/* what rq points to */
};

struct cats_pcc {
	struct cats_pce_app *a;
	char name[300];
	struct sockaddr_storage sa;
	socklen_t salen;
	struct cats_pcep_srv *srv;
	struct cats_pcep_peer *peer;	/* the session, up or not */
	bool up;
	int cfd;			/* connecting; -1: not */
	struct event *cev, *retry, *tick;
	uint64_t backoff;
	uint32_t next_id;
	struct pcc_req *head, *tail;	/* in the order they came */
	size_t n;
	uint32_t late[PCC_LATE];
	size_t nlate;
	bool paused;			/* stdin paused: too many waiting */
	struct cats_arena arena;
	uint64_t sent, replies, failed, timeouts, connects, ups, late_replies,
	    local;
};

static bool
pcc_idle(const struct cats_pce_app *a)
{
	return a->pcc == NULL || a->pcc->n == 0;
}

static void
pcc_forget(struct cats_pce_app *a, struct cats_pce_sess *ss)
{
	if (a->pcc == NULL)
		return;
	for (struct pcc_req *q = a->pcc->head; q != NULL; q = q->next)
		if (q->ss == ss)
			q->ss = NULL;
}

static void
pcc_forget_pcep(struct cats_pce_app *a, struct cats_pcep_peer *p)
{
	if (a->pcc == NULL)
		return;
	for (struct pcc_req *q = a->pcc->head; q != NULL; q = q->next)
		if (q->pp == p)
			q->pp = NULL;
}

/*
 * The answer to a --pcep session's request that the remote PCE (--pce)
 * computed: the PCRep of the path-rep, as if computed here; a request that
 * could not be sent there, a NO-PATH (PCE currently unavailable).
 */
static void
pcep_answer(struct cats_pce_app *a, struct pcc_req *q,
    const struct cats_rec *out)
{
	const struct cats_path_req *rq = &q->rq;
	if (q->pp == NULL) {
		cats_debug("pcep: request %" PRIu32 ": its session is gone",
		    q->pp_id);
		return;
	}
	const struct cats_pcep_names *names = pcep_names(a);
	struct cats_pcep_req pr;
	struct cats_pcep_rep x;
	struct cats_pcep_status st;
	memset(&x, 0, sizeof(x));
	if (names == NULL || cats_pcep_from_path_req(rq, q->pp_id, a->pce.te,
	    names, &pr, &a->parena, &st) < 0 || out->type != CATS_T_PATH_REP ||
	    cats_pcep_from_path_rep(&out->u.prep, &pr, a->pce.te, names, &x,
	    &a->parena) < 0) {
		memset(&x, 0, sizeof(x));
		x.rp.id = q->pp_id;
		x.rp.p = true;
		x.nopath = true;
		x.vector = CATS_PCEP_NPV_PCE_UNAVAILABLE;
	}
	if (cats_pcep_peer_send_reps(q->pp, &x, 1) < 0)
		cats_warnx("pcep: %s: reply not sent",
		    cats_pcep_peer_name(q->pp));
	else
		a->pcep_reps++;
}

static void
pcc_send_rec(struct cats_pce_app *a, struct pcc_req *q,
    const struct cats_rec *out)
{
	if (q->from_pcep) {
		pcep_answer(a, q, out);
		return;
	}
	if (q->ss == NULL) {
		cats_debug("pce: request %" PRIu32 ": its session is gone",
		    q->id);
		return;
	}
	reply_rec(a, q->ss->sc.st, q->has_peer ? &q->peer : NULL, out);
}

/* Unlink and free q; with stdin at its end, the run may end. */
static void
pcc_done(struct cats_pce_app *a, struct pcc_req *q)
{
	struct cats_pcc *c = a->pcc;
	CATS_LIST_REMOVE(c->head, c->tail, q, prev, next);
	c->n--;
	cats_arena_free(&q->arena);
	free(q);
	if (c->paused && c->n < PCC_MAX_PENDING / 2 && a->in != NULL) {
		c->paused = false;
		cats_stream_resume(a->in);
	}
	if (c->n == 0 && a->in_done && a->pcep == NULL && a->stdio != NULL)
		event_base_loopexit(a->base, NULL);
}

/*
 * Answer q here, failing closed: a NO-PATH with the vector bits given
 * (PCE currently unavailable; unknown source or destination) read back as
 * a reply would be; reason (when not NULL) replaces the reason.
 */
static void
pcc_fail(struct cats_pce_app *a, struct pcc_req *q, uint32_t vector,
    const char *reason)
{
	struct cats_pcc *c = a->pcc;
	struct cats_rec out;
	const struct cats_path_req *rq = &q->rq;
	struct cats_pcep_rep x;
	memset(&x, 0, sizeof(x));
	x.rp.id = q->id;
	x.nopath = true;
	x.vector = vector;
	cats_arena_reset(&c->arena);
	if (cats_pcep_to_path_rep(&x, rq, a->pce.te, pcep_names(a),
	    cats_clock_now(), &out, &c->arena) < 0) {
		cats_errorx("pce: out of memory");
		return;
	}
	if (reason != NULL && out.u.prep.reason != NULL &&
	    strcmp(out.u.prep.reason, "deadline") != 0)
		out.u.prep.reason = reason;
	c->failed++;
	pcc_send_rec(a, q, &out);
}

/* Send q as a PCReq; false when it was answered here instead. */
static bool
pcc_send(struct cats_pce_app *a, struct pcc_req *q)
{
	struct cats_pcc *c = a->pcc;
	const struct cats_path_req *rq = &q->rq;
	struct cats_pcep_req pr;
	struct cats_pcep_status st;
	cats_arena_reset(&c->arena);
	memset(&st, 0, sizeof(st));
	if (cats_pcep_from_path_req(rq, q->id, a->pce.te, pcep_names(a), &pr,
	    &c->arena, &st) < 0) {
		const char *why = st.why ? st.why : "bad-request";
		c->local++;
		if (strcmp(why, "no-source") == 0)
			pcc_fail(a, q, CATS_PCEP_NPV_UNKNOWN_SRC, NULL);
		else if (strcmp(why, "no-destination") == 0)
			pcc_fail(a, q, CATS_PCEP_NPV_UNKNOWN_DST, NULL);
		else {
			struct cats_rec er;
			char msg[300];
			snprintf(msg, sizeof(msg), "cannot be sent to the PCE: "
			    "%s", why);
			cats_rec_error_init(&er, "bad-request", "cats-pce",
			    rq->txn, cats_clock_now(), msg);
			cats_rec_error_route(&er, rq->ingress ? rq->ingress :
			    rq->headend, CATS_HAS(rq, PRQ, flow) ? &rq->flow :
			    NULL);
			pcc_send_rec(a, q, &er);
		}
		return false;
	}
	if (cats_pcep_peer_send_reqs(c->peer, &pr, 1) < 0) {
		pcc_fail(a, q, CATS_PCEP_NPV_PCE_UNAVAILABLE, NULL);
		return false;
	}
	q->sent = true;
	c->sent++;
	return true;
}

static void pcc_connect(struct cats_pcc *c);

/* The PCE cannot be reached: what waits fails closed now. */
static void
pcc_down(struct cats_pcc *c)
{
	struct cats_pce_app *a = c->a;
	struct pcc_req *q = c->head, *next;
	for (; q != NULL; q = next) {
		next = q->next;
		pcc_fail(a, q, CATS_PCEP_NPV_PCE_UNAVAILABLE, NULL);
		pcc_done(a, q);
	}
}

static void
pcc_schedule(struct cats_pcc *c)
{
	if (c->cfd >= 0 || c->peer != NULL || evtimer_pending(c->retry, NULL))
		return;
	struct timeval tv = { (time_t)(c->backoff / 1000),
		(suseconds_t)(c->backoff % 1000) * 1000 };
	evtimer_add(c->retry, &tv);
	c->backoff = c->backoff * 2 > PCC_BACKOFF_MAX ? PCC_BACKOFF_MAX :
	    c->backoff * 2;
}

/*
 * A path-req for the remote PCE: kept (the decoded request copied, not its
 * bytes decoded again) until its reply, and sent when the session is up.
 */
static void
pcc_submit(struct cats_pce_app *a, struct cats_stream *s,
    const struct cats_peer *peer, struct cats_pce_sess *ss,
    const struct cats_path_req *rq, struct cats_pcep_peer *pp, uint32_t pp_id)
{
	struct cats_pcc *c = a->pcc;
	struct pcc_req *q = calloc(1, sizeof(*q));
	if (q == NULL || cats_struct_copy(cats_type_schema(CATS_T_PATH_REQ),
	    &q->rq, rq, &q->arena) < 0) {
		if (q != NULL)
			cats_arena_free(&q->arena);
		free(q);
		cats_errorx("pce: out of memory");
		return;
	}
	rq = &q->rq;
	q->ss = ss;
	q->pp = pp;
	q->pp_id = pp_id;
	q->from_pcep = pp != NULL;
	if (peer != NULL) {
		q->has_peer = true;
		q->peer = *peer;
	}
	if (++c->next_id == 0)
		c->next_id = 1;
	q->id = c->next_id;
	uint64_t now = cats_clock_now();
	q->expires = now + (a->pce_timeout ? a->pce_timeout : PCC_TIMEOUT_MS);
	if (CATS_HAS(rq, PRQ, deadline) && rq->deadline < q->expires)
		q->expires = rq->deadline;
	CATS_LIST_APPEND(c->head, c->tail, q, prev, next);
	c->n++;
	if (c->n > PCC_MAX_PENDING) {
		pcc_fail(a, q, CATS_PCEP_NPV_PCE_UNAVAILABLE, NULL);
		pcc_done(a, q);
		return;
	}
	/* Standard input waits rather than fail (sessions cannot). */
	if (c->n >= PCC_MAX_PENDING && s != NULL && s == a->in) {
		c->paused = true;
		cats_stream_pause(s);
	}
	if (c->up) {
		if (!pcc_send(a, q))
			pcc_done(a, q);
		return;
	}
	/* Not up: it waits for the session, at most until it expires. */
	if (c->peer == NULL && c->cfd < 0 && evtimer_pending(c->retry, NULL)) {
		/* The PCE is known to be down: fail closed now. */
		pcc_fail(a, q, CATS_PCEP_NPV_PCE_UNAVAILABLE, NULL);
		pcc_done(a, q);
		return;
	}
	pcc_schedule(c);
}

/*
 * A --pcep session's request with --pce: the path-req it reads as, with a
 * stand-in decision (the schema wants one; it never leaves), to the
 * remote PCE like a record's.
 */
static void
pcep_relay(struct cats_pce_app *a, struct cats_pcep_peer *p, uint32_t id,
    struct cats_path_req *q, uint64_t now)
{
	struct cats_rec rec;
	cats_rec_init(&rec, CATS_T_PATH_REQ);
	struct cats_decision *d = &q->decision;
	d->cs_id = d->csci_id = "pcep";
	d->locator.af = 4;
	d->egress = q->endpoint;
	d->ts = now;
	q->has |= UINT64_C(1) << CATS_PRQ_decision;
	rec.u.preq = *q;
	struct cats_err e;
	if (cats_rec_validate(&rec, &e) < 0) {
		cats_errorx("pcep: request %" PRIu32 ": cannot be relayed: "
		    "%s: %s", id, e.field, e.reason);
		return;
	}
	a->pcep_relayed++;
	pcc_submit(a, NULL, NULL, NULL, q, p, id);
}

static void
pcc_up(struct cats_pcep_peer *p, void *arg)
{
	struct cats_pce_app *a = arg;
	struct cats_pcc *c = a->pcc;
	c->up = true;
	c->ups++;
	c->backoff = PCC_BACKOFF_MIN;
	cats_info("pce: %s: session up", cats_pcep_peer_name(p));
	struct pcc_req *q = c->head, *next;
	for (; q != NULL; q = next) {
		next = q->next;
		if (q->sent)
			continue;
		if (!pcc_send(a, q))
			pcc_done(a, q);
	}
}

static struct pcc_req *
pcc_find(struct cats_pcc *c, uint32_t id)
{
	for (struct pcc_req *q = c->head; q != NULL; q = q->next)
		if (q->sent && q->id == id)
			return q;
	return NULL;
}

static bool
pcc_was_late(const struct cats_pcc *c, uint32_t id)
{
	for (size_t i = 0; i < c->nlate && i < PCC_LATE; i++)
		if (c->late[i] == id)
			return true;
	return false;
}

static void
pcc_msg(struct cats_pcep_peer *p, const struct cats_pcep_msg *m, void *arg)
{
	struct cats_pce_app *a = arg;
	struct cats_pcc *c = a->pcc;
	if (m->type == CATS_PCEP_PCERR) {
		for (size_t i = 0; i < m->err.n; i++)
			cats_warnx("pce: %s: PCErr %u/%u (%s)",
			    cats_pcep_peer_name(p), m->err.v[i].type,
			    m->err.v[i].value, cats_pcep_error_name(
			    m->err.v[i].type, m->err.v[i].value));
		for (size_t i = 0; i < m->err.nids; i++) {
			struct pcc_req *q = pcc_find(c, m->err.ids[i]);
			if (q == NULL)
				continue;
			pcc_fail(a, q, CATS_PCEP_NPV_PCE_UNAVAILABLE,
			    "pce-error");
			pcc_done(a, q);
		}
		return;
	}
	if (m->type != CATS_PCEP_PCREP)
		return;
	for (size_t i = 0; i < m->nreps; i++) {
		const struct cats_pcep_rep *r = &m->reps[i];
		struct pcc_req *q = pcc_find(c, r->rp.id);
		if (q == NULL) {
			if (pcc_was_late(c, r->rp.id))
				c->late_replies++;
			else
				cats_pcep_peer_unknown_ref(p, r->rp.id);
			continue;
		}
		struct cats_rec out;
		cats_arena_reset(&c->arena);
		if (cats_pcep_to_path_rep(r, &q->rq, a->pce.te,
		    pcep_names(a), cats_clock_now(), &out, &c->arena) == 0) {
			c->replies++;
			pcc_send_rec(a, q, &out);
		}
		pcc_done(a, q);
	}
}

static void
pcc_note(struct cats_pcep_peer *p, const char *peer, int what,
    const struct cats_pcep_status *st, void *arg)
{
	pcep_note(p, peer, what, st, arg);
}

/* The session is over: what was sent will not be answered. */
static void
pcc_closed(struct cats_pcep_peer *p, const struct cats_pcep_status *st,
    void *arg)
{
	struct cats_pce_app *a = arg;
	struct cats_pcc *c = a->pcc;
	char b[300];
	pcep_status_text(st, b, sizeof(b));
	cats_warnx("pce: %s: session closed: %s", cats_pcep_peer_name(p), b);
	cats_audit("pce-session-closed", "peer=%s %s", c->name, b);
	c->peer = NULL;
	c->up = false;
	pcc_down(c);
	pcc_schedule(c);
}

static void
pcc_connected(evutil_socket_t fd, short what, void *arg)
{
	struct cats_pcc *c = arg;
	int err = 0;
	socklen_t len = sizeof(err);
	if (what & EV_TIMEOUT)
		err = ETIMEDOUT;
	else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	event_free(c->cev);
	c->cev = NULL;
	c->cfd = -1;
	if (err != 0) {
		close(fd);
		cats_warnx("pce: %s: %s", c->name, strerror(err));
		pcc_schedule(c);
		pcc_down(c);
		return;
	}
	c->connects++;
	c->peer = cats_pcep_srv_attach(c->srv, fd, c->name);
	if (c->peer == NULL) {
		cats_errorx("pce: out of memory");
		pcc_schedule(c);
	}
}

static void
pcc_connect(struct cats_pcc *c)
{
	int fd = socket(c->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd < 0) {
		cats_warnx("pce: socket: %s", strerror(errno));
		pcc_schedule(c);
		return;
	}
	if (c->a->md5_len > 0) {
		struct cats_prefix pf;
		char err[200];
		memset(&pf, 0, sizeof(pf));
		if (c->sa.ss_family == AF_INET) {
			pf.ip.af = 4;
			pf.plen = 32;
			memcpy(pf.ip.a, &((struct sockaddr_in *)&c->sa)->sin_addr,
			    4);
		} else {
			pf.ip.af = 6;
			pf.plen = 128;
			memcpy(pf.ip.a,
			    &((struct sockaddr_in6 *)&c->sa)->sin6_addr, 16);
		}
		if (cats_pcep_md5_set(fd, &pf, c->a->md5, c->a->md5_len, err,
		    sizeof(err)) < 0) {
			cats_errorx("pce: %s", err);
			close(fd);
			pcc_schedule(c);
			pcc_down(c);
			return;
		}
	}
	if (connect(fd, (struct sockaddr *)&c->sa, c->salen) < 0 &&
	    errno != EINPROGRESS) {
		cats_warnx("pce: %s: %s", c->name, strerror(errno));
		close(fd);
		pcc_schedule(c);
		pcc_down(c);
		return;
	}
	c->cfd = fd;
	c->cev = event_new(c->a->base, fd, EV_WRITE, pcc_connected, c);
	struct timeval tv = { PCC_CONNECT_MS / 1000, 0 };
	if (c->cev == NULL || event_add(c->cev, &tv) < 0) {
		cats_errorx("pce: out of memory");
		close(fd);
		c->cfd = -1;
	}
}

static void
pcc_on_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	pcc_connect(arg);
}

/* Requests past their time fail closed. */
static void
pcc_on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct cats_pce_app *a = arg;
	struct cats_pcc *c = a->pcc;
	(void)fd;
	(void)what;
	uint64_t now = cats_clock_now();
	struct pcc_req *q = c->head, *next;
	for (; q != NULL; q = next) {
		next = q->next;
		if (now < q->expires)
			continue;
		c->timeouts++;
		if (q->sent)
			c->late[c->nlate++ % PCC_LATE] = q->id;
		pcc_fail(a, q, CATS_PCEP_NPV_PCE_UNAVAILABLE, NULL);
		pcc_done(a, q);
	}
}

int
cats_pce_app_pcc(struct cats_pce_app *a, const char *spec, bool insecure)
{
	static const struct cats_pcep_srv_cbs cbs = {
		pcc_up, pcc_msg, pcc_note, pcc_closed,
	};
	struct cats_ep ep;
	char err[512];
	if (cats_ep_parse(spec, &ep, err, sizeof(err)) < 0) {
		cats_errorx("--pce: %s", err);
		return CATS_EXIT_USAGE;
	}
	if (ep.kind != CATS_EP_TCP) {
		cats_errorx("--pce: %s: expected tcp:HOST:PORT", spec);
		return CATS_EXIT_USAGE;
	}
	if (!insecure && a->md5_len == 0) {
		cats_errorx("--pce: %s: PCEP is not authenticated: needs "
		    "--tcp-md5 (or --insecure)", spec);
		return CATS_EXIT_USAGE;
	}
	struct addrinfo hints = { 0 }, *ai;
	hints.ai_socktype = SOCK_STREAM;
	int g = getaddrinfo(ep.host, ep.port, &hints, &ai);
	if (g != 0) {
		cats_errorx("--pce: %s: %s", spec, gai_strerror(g));
		return CATS_EXIT_FAIL;
	}
	struct cats_pcc *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		freeaddrinfo(ai);
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	memcpy(&c->sa, ai->ai_addr, ai->ai_addrlen);
	c->salen = ai->ai_addrlen;
	freeaddrinfo(ai);
	cats_strlcpy(c->name, spec + 4, sizeof(c->name));
	c->a = a;
	c->cfd = -1;
	c->backoff = PCC_BACKOFF_MIN;
	a->pcc = c;
	struct cats_pcep_srv_conf sc = { .max_sessions = 1 };
	cats_pcep_conf_default(&sc.sess, false);
	c->srv = cats_pcep_srv_new(a->base, &sc, &cbs, a);
	c->retry = evtimer_new(a->base, pcc_on_retry, c);
	c->tick = event_new(a->base, -1, EV_PERSIST, pcc_on_tick, a);
	struct timeval tv = { 0, 100000 };
	if (c->srv == NULL || c->retry == NULL || c->tick == NULL ||
	    evtimer_add(c->tick, &tv) < 0 || pcep_names(a) == NULL) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	pcc_connect(c);
	return CATS_EXIT_OK;
}

static void
pcc_free(struct cats_pce_app *a)
{
	struct cats_pcc *c = a->pcc;
	if (c == NULL)
		return;
	cats_pcep_srv_free(c->srv);
	if (c->cev != NULL)
		event_free(c->cev);
	if (c->cfd >= 0)
		close(c->cfd);
	if (c->retry != NULL)
		event_free(c->retry);
	if (c->tick != NULL)
		event_free(c->tick);
	while (c->head != NULL) {
		struct pcc_req *q = c->head;
		c->head = q->next;
		cats_arena_free(&q->arena);
		free(q);
	}
	cats_arena_free(&c->arena);
	free(c);
	a->pcc = NULL;
}

/* ---- the database ---- */

int
cats_pce_app_init(struct cats_pce_app *a)
{
	char err[600];
	bool missing;
	if (a->keys.n > 0) {
		a->guard = cats_tag_guard_new(a->window, (size_t)1 << 20);
		if (a->guard == NULL) {
			cats_errorx("out of memory");
			return CATS_EXIT_FAIL;
		}
	}
	struct cats_te *te = cats_te_load(a->tedb, NULL, 1, &missing, err,
	    sizeof(err));
	if (te == NULL) {
		cats_errorx("%s", err);
		return missing ? CATS_EXIT_NOINPUT : CATS_EXIT_CONFIG;
	}
	if (cats_pce_init(&a->pce, te) < 0) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	a->pce.max_labels = a->max_labels;
	a->pce.cache_max = a->cache;
	cats_dec_init(&a->dec, NULL);
	return CATS_EXIT_OK;
}

void
cats_pce_app_reload(struct cats_pce_app *a)
{
	char err[600];
	bool missing;
	uint64_t old = a->pce.te ? cats_te_gen(a->pce.te) : 0;
	struct cats_te *te = cats_te_load(a->tedb, NULL, old + 1, &missing,
	    err, sizeof(err));
	if (te == NULL) {
		a->reload_failed++;
		cats_errorx("reload refused, keeping generation %" PRIu64 ": %s",
		    old, err);
		cats_audit("tedb-reload-refused", "file=%s gen=%" PRIu64,
		    a->tedb, old);
		return;
	}
	/* Generations never go back, whatever the file says. */
	if (te->gen <= old)
		te->gen = old + 1;
	cats_pce_set_te(&a->pce, te);
	a->reloads++;
	cats_info("reloaded %s: %" PRIu32 " nodes, %" PRIu32 " links, "
	    "generation %" PRIu64, a->tedb, cats_te_nodes(te),
	    cats_te_links(te), cats_te_gen(te));
}

int
cats_pce_check(const char *path)
{
	char err[600];
	bool missing;
	struct cats_te *te = cats_te_load(path, NULL, 1, &missing, err,
	    sizeof(err));
	if (te == NULL) {
		cats_errorx("%s", err);
		return missing ? CATS_EXIT_NOINPUT : CATS_EXIT_CONFIG;
	}
	struct cats_te_mem m;
	cats_te_mem(te, &m);
	printf("%s: %" PRIu32 " nodes, %" PRIu32 " links, %" PRIu32
	    " directions, generation %" PRIu64 ", %zu bytes (%.1f per node, "
	    "%.1f per direction)\n", path, cats_te_nodes(te), cats_te_links(te),
	    cats_te_edges(te), cats_te_gen(te), m.node_bytes + m.edge_bytes +
	    m.other_bytes, (double)m.node_bytes / (te->n ? te->n : 1),
	    (double)m.edge_bytes / (te->m ? te->m : 1));
	cats_te_free(te);
	return CATS_EXIT_OK;
}

/* ---- the end ---- */

/* The stats record's list (cats-pce(1) STATISTICS). */
static void
stats_list(struct cats_pce_app *a, struct cats_stats_list *st)
{
	const struct cats_pce_counters *c = &a->pce.c;
	uint64_t now = cats_clock_now();
	uint64_t dt = now > a->last_stats_ts ? now - a->last_stats_ts : 0;
	cats_stats_init(st, "cats-pce", NULL);
	cats_stats_add(st, "records", a->records);
	cats_stats_add(st, "bad", a->bad);
	cats_stats_add(st, "requests", c->requests);
	/* Since the last record (a scrape does not move it): 001's "PCE
	 * request rate", per second. */
	cats_stats_gauge(st, "request_rate", dt && a->last_stats_ts ?
	    (c->requests - a->last_requests) * 1000 / dt : 0);
	cats_stats_add(st, "ok", c->ok);
	cats_stats_add(st, "no_path", c->no_path);
	cats_stats_add(st, "errors", c->errors);
	cats_stats_add(st, "expired", c->expired);
	cats_stats_add(st, "exact_searches", c->exact_searches);
	cats_stats_add(st, "labels", c->labels);
	cats_stats_add(st, "settled", c->settled);
	cats_stats_add(st, "cache_hits", c->cache_hits);
	cats_stats_add(st, "passed", a->passed);
	cats_stats_add(st, "net_applied", a->net_applied);
	cats_stats_add(st, "net_refused", a->net_refused);
	cats_stats_add(st, "reloads", a->reloads);
	cats_stats_add(st, "reload_failed", a->reload_failed);
	cats_stats_add(st, "sessions", a->sessions);
	if (a->lst != NULL) {
		const struct cats_listener_stats *ls =
		    cats_listener_stats(a->lst);
		cats_stats_gauge(st, "sessions.open", ls->open);
		cats_stats_add(st, "sessions.refused", ls->refused);
		cats_stats_add(st, "sessions.evicted", ls->evicted);
		cats_stats_add(st, "sessions.hello_timeouts",
		    ls->hello_timeouts);
		cats_stats_add(st, "accept.fd_exhausted", ls->fd_exhausted);
		cats_stats_add(st, "accept.shed", ls->shed);
	}
	if (a->pcep != NULL) {
		struct cats_pcep_srv_stats ps;
		cats_pcep_srv_get_stats(a->pcep, &ps);
		cats_stats_gauge(st, "pcep.sessions", ps.sessions);
		cats_stats_gauge(st, "pcep.up", ps.up);
		cats_stats_add(st, "pcep.accepted", ps.accepted);
		cats_stats_add(st, "pcep.refused", ps.refused);
		cats_stats_add(st, "pcep.second", ps.second);
		cats_stats_add(st, "pcep.slow", ps.slow);
		cats_stats_add(st, "pcep.evicted", ps.evicted);
		cats_stats_add(st, "pcep.closed", ps.closed);
		cats_stats_add(st, "pcep.requests", a->pcep_reqs);
		cats_stats_add(st, "pcep.replies", a->pcep_reps);
		cats_stats_add(st, "pcep.errors", a->pcep_errs);
		cats_stats_add(st, "pcep.audit_suppressed",
		    a->audit_suppressed);
		cats_stats_add(st, "pcep.relayed", a->pcep_relayed);
	}
	if (a->pcc != NULL) {
		const struct cats_pcc *pc = a->pcc;
		cats_stats_gauge(st, "pce.up", pc->up);
		cats_stats_gauge(st, "pce.pending", pc->n);
		cats_stats_add(st, "pce.connects", pc->connects);
		cats_stats_add(st, "pce.sessions", pc->ups);
		cats_stats_add(st, "pce.sent", pc->sent);
		cats_stats_add(st, "pce.replies", pc->replies);
		cats_stats_add(st, "pce.failed", pc->failed);
		cats_stats_add(st, "pce.timeouts", pc->timeouts);
		cats_stats_add(st, "pce.late", pc->late_replies);
		cats_stats_add(st, "pce.local", pc->local);
	}
	cats_stats_add(st, "unauthorized", a->unauthorized);
	cats_stats_gauge(st, "generation", a->pce.te ?
	    cats_te_gen(a->pce.te) : 0);
}

int
cats_pce_app_stats_to(struct cats_pce_app *a, const char *spec)
{
	static const struct cats_stream_cbs cbs = { 0 };
	int fd = 1;
	if (strcmp(spec, "-") == 0 && a->out != NULL) {
		a->stats_out = a->out;
		return CATS_EXIT_OK;
	}
	int rc;
	if (strcmp(spec, "-") != 0 &&
	    (rc = cats_ep_open_out("--stats-to", spec, &fd)) != 0)
		return rc;
	a->stats_out = cats_stream_new(a->base, -1, fd, false,
	    &cats_limits_default, 0, &cbs, a);
	if (a->stats_out == NULL) {
		cats_errorx("--stats-to: out of memory");
		return CATS_EXIT_FAIL;
	}
	if (fd != 1)
		cats_stream_own(a->stats_out);
	return CATS_EXIT_OK;
}

void
cats_pce_app_stats(struct cats_pce_app *a)
{
	struct cats_stats_list st;
	uint64_t now = cats_clock_now();
	stats_list(a, &st);
	a->last_stats_ts = now;
	a->last_requests = a->pce.c.requests;
	if (a->stats_out != NULL)
		cats_stats_emit(&st, a->stats_out, now);
	else
		cats_stats_print(&st, stderr, now);
	cats_stats_free(&st);
}

void
cats_pce_app_stats_fill(void *arg, struct cats_stats_list *st)
{
	struct cats_pce_app *a = arg;
	stats_list(a, st);
	cats_stats_hist(st, "computation", &a->h_compute);
}

int
cats_pce_app_end(struct cats_pce_app *a)
{
	if (a->stats)
		cats_pce_app_stats(a);
	if (a->out != NULL && cats_stream_flush(a->out) < 0 &&
	    a->exit_code != CATS_EXIT_IOERR) {
		cats_tool_output_failed("output", errno);
		a->exit_code = CATS_EXIT_IOERR;
	}
	if (a->stats_out != NULL && a->stats_out != a->out)
		cats_stream_flush(a->stats_out);
	if (a->bad)
		cats_warnx("%" PRIu64 " of %" PRIu64 " records were invalid",
		    a->bad, a->records);
	return a->exit_code;
}

void
cats_pce_app_free(struct cats_pce_app *a)
{
	cats_stream_free(a->in);
	if (a->stats_out != a->out)
		cats_stream_free(a->stats_out);
	cats_stream_free(a->out);
	free(a->stdio);
	cats_listener_free(a->lst);
	cats_pcep_srv_free(a->pcep);
	pcc_free(a);
	cats_pcep_names_free(a->names);
	cats_arena_free(&a->parena);
	cats_pce_free(&a->pce);
	cats_tag_guard_free(a->guard);
	cats_keyring_free(&a->keys);
	cats_dec_free(&a->dec);
	cats_arena_free(&a->arena);
	a->in = a->out = NULL;
	a->stdio = NULL;
	a->lst = NULL;
	a->pcep = NULL;
	a->names = NULL;
	a->guard = NULL;
}
