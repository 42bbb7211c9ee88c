/*
 * bind_app.c - the running cats-bind (bind_app.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/tool.h"
#include "base/stats.h"
#include "bind/bind_app.h"
#include "net/listener.h"

#define AUTH_WINDOW_MS 30000
#define HELLO_TAGS 65536
#define HELD_FLUSH (1u << 20)
#define CONN_QUEUE_MAX (UINT64_C(1) << 30)
#define KEEPALIVE_MS 1000

/* A forwarder's connection; its place in the listener is lc. */
struct bind_app_conn {
	struct cats_conn *lc;
	struct bind_app *a;
	struct cats_stream *s;
	char *fwd;		/* after its hello */
	bool named;		/* holds the name in a->byname */
	/* What this manager MACs its records to it with: derived from the
	 * PSK its hello verified with (cats_key_derive_down). */
	struct cats_key down;
	bool has_down;
};

/*
 * The latency samples (bind_app.h): a transaction's first record
 * (ABSENT -> PENDING, its trace) to ACTIVE; an install released to a
 * forwarder (the commit that let it out) to that forwarder's installed.
 */
#define LAT_N 4096
#define LAT_COMMITS 256
struct bind_app_lat {
	struct { uint64_t id, ns; } act[LAT_N];
	struct { uint64_t id, seq; const struct bind_app_conn *c; } ctl[LAT_N];
	uint64_t released[LAT_COMMITS];	/* mono ns of each commit */
};

static size_t
lat_slot(uint64_t id, const void *c)
{
	return (size_t)((id ^ ((uintptr_t)c >> 4)) & (LAT_N - 1));
}

static void
lat_trace(struct bind_app *a, const struct bind_trace *tr)
{
	struct bind_app_lat *l = a->lat;
	if (l == NULL || tr->refused)
		return;
	size_t i = lat_slot(tr->id, NULL);
	if (tr->from == CATS_FS_ABSENT) {
		l->act[i].id = tr->id;
		l->act[i].ns = cats_clock_mono_ns();
	} else if (tr->from == CATS_FS_BINDING_READY &&
	    tr->to == CATS_FS_ACTIVE && l->act[i].id == tr->id &&
	    l->act[i].ns != 0) {
		cats_hist_observe(&a->h_activate, (cats_clock_mono_ns() -
		    l->act[i].ns) / 1000);
		l->act[i].ns = 0;
	}
}

static void
lat_sent(struct bind_app *a, const struct bind_app_conn *c,
    const struct cats_rec *r)
{
	struct bind_app_lat *l = a->lat;
	if (l == NULL || r->type != CATS_T_BINDING ||
	    r->u.binding.op != CATS_BIND_INSTALL)
		return;
	size_t i = lat_slot(r->u.binding.id, c);
	l->ctl[i].id = r->u.binding.id;
	l->ctl[i].c = c;
	l->ctl[i].seq = a->commits;	/* released by the next commit */
}

static void
lat_status(struct bind_app *a, const struct bind_app_conn *c,
    const struct cats_status *st)
{
	struct bind_app_lat *l = a->lat;
	if (l == NULL || st->event != CATS_EV_INSTALLED ||
	    !CATS_HAS(st, STA, id))
		return;
	size_t i = lat_slot(st->id, c);
	if (l->ctl[i].c != c || l->ctl[i].id != st->id ||
	    l->ctl[i].seq >= a->commits ||
	    a->commits - l->ctl[i].seq > LAT_COMMITS)
		return;
	cats_hist_observe(&a->h_control, (cats_clock_mono_ns() -
	    l->released[l->ctl[i].seq % LAT_COMMITS]) / 1000);
	l->ctl[i].c = NULL;
}

static bool
conn_eq(const void *item, const void *key)
{
	return strcmp(((const struct bind_app_conn *)item)->fwd, key) == 0;
}

static struct bind_app_conn *
conn_by_name(struct bind_app *a, const char *name)
{
	return cats_htab_get(&a->byname, cats_hash_str(name), conn_eq, name);
}

/* The connections, for loops that may drop the one they are at. */
#define FOREACH_CONN(a, c, lc, nx) \
	for (struct cats_conn *lc = (a)->lst ? cats_listener_first((a)->lst) : \
	    NULL, *nx = lc ? cats_conn_next(lc) : NULL; lc != NULL; \
	    lc = nx, nx = lc ? cats_conn_next(lc) : NULL) \
		for (struct bind_app_conn *c = cats_conn_data(lc); c != NULL; \
		    c = NULL)

void
bind_app_stop(struct bind_app *a, int code)
{
	if (a->exit_code == 0)
		a->exit_code = code;
	a->stopping = true;
	event_base_loopbreak(a->base);
}

/*
 * ---- output: held until the journal covers it, then sent ----
 *
 * Every output stream holds behind one commit point (seq.h): at the end of
 * the loop turn, or as soon as 1 MiB is held, commit() writes the journal
 * records (synced under --fsync always), then the replica's, and only then
 * is the output they cover released (the group commit).
 */

static void drop_conn(struct bind_app_conn *c);

/* The replica refused: what is held is dropped, never sent; the run ends. */
static void
repl_failed(struct bind_app *a, const char *what, const char *err)
{
	if (!a->stopping)
		cats_errorx("replica: %s: %s", what, err);
	cats_commit_discard(a->cm);
	bind_app_stop(a, CATS_EXIT_FAIL);
}

/*
 * A commit (seq.h, pipelined): begin takes the journal's records and the
 * replica's txns on the loop; work writes the journal (synced under
 * --fsync always), then the replica's, on the commit's worker when one of
 * them is slow (a sync, an etcd call), else here; end says whether the
 * output they cover may leave.  A failure stops the run, as before.
 */
static int
commit_begin(void *arg)
{
	struct bind_app *a = arg;
	char err[512];
	int slow = 0;
	a->cm_j = a->cm_repl = false;
	a->cm_jrc = a->cm_rrc = 0;
	if (a->j != NULL) {
		/* Synced only when output waits for it (bj_commit_begin). */
		int b = bj_commit_begin(a->j, cats_commit_held(a->cm) > 0);
		if (b < 0) {
			bj_commit_end(a->j, -1);
			cats_errorx("journal: %s: refusing to send what it does "
			    "not hold", strerror(ENOMEM));
			bind_app_stop(a, CATS_EXIT_FAIL);
			return -1;
		}
		a->cm_j = true;
		slow |= b;
	}
	if (a->repl != NULL) {
		int b = a->repl->begin(a->repl->arg, bind_next_id(a->t), err,
		    sizeof(err));
		if (b < 0) {
			/* The journal holds its records all the same. */
			if (a->cm_j)
				bj_commit_end(a->j, bj_commit_work(a->j));
			a->cm_j = false;
			repl_failed(a, err, "refusing to send what it does not "
			    "hold");
			return -1;
		}
		a->cm_repl = b > 0;
		slow |= b > 0;
	}
	return slow;
}

/* Off the loop when slow: touches the journal's and the replica's batch. */
static int
commit_work(void *arg)
{
	struct bind_app *a = arg;
	if (a->cm_j && (a->cm_jrc = bj_commit_work(a->j)) < 0)
		return -1;	/* nothing sent to the replica either */
	if (a->cm_repl && (a->cm_rrc = a->repl->work(a->repl->arg)) < 0)
		return -1;
	return 0;
}

static int
commit_end(void *arg, int rc)
{
	struct bind_app *a = arg;
	char err[512];
	bool failed = false;
	(void)rc;
	if (a->cm_j) {
		a->cm_j = false;
		if (bj_commit_end(a->j, a->cm_jrc) < 0) {
			cats_errorx("journal: %s: refusing to send what it "
			    "does not hold", strerror(errno));
			bind_app_stop(a, CATS_EXIT_FAIL);
			failed = true;
		}
	}
	if (a->cm_repl) {
		a->cm_repl = false;
		if (a->repl->end(a->repl->arg, failed ? -1 : a->cm_rrc, err,
		    sizeof(err)) < 0 && !failed) {
			repl_failed(a, err, "refusing to send what it does not "
			    "hold");
			failed = true;
		}
	}
	if (failed)
		return -1;
	FOREACH_CONN(a, c, lc, nx) {
		if (cats_stream_queued(c->s) > CONN_QUEUE_MAX) {
			cats_warnx("forwarder %s: %zu bytes queued, dropped",
			    c->fwd ? c->fwd : "?", cats_stream_queued(c->s));
			drop_conn(c);
		}
	}
	if (a->lat != NULL)
		a->lat->released[a->commits % LAT_COMMITS] =
		    cats_clock_mono_ns();
	a->commits++;
	return 0;
}

static const struct cats_commit_ops COMMIT = { commit_begin, commit_work,
	commit_end };

static void resync_kick(struct bind_app *a);

/* Hold an item on s; stdout above its high-water mark pauses the inputs. */
static void
send_held(struct bind_app *a, struct cats_stream *s, const uint8_t *p,
    size_t n)
{
	int rc = cats_stream_send(s, p, n);
	if (rc > 0 && s == a->out && !a->paused) {
		/* Back-pressure: stop reading until the output drains. */
		a->paused = true;
		if (a->in)
			cats_stream_pause(a->in);
		FOREACH_CONN(a, c, lc, nx)
			cats_stream_pause(c->s);
	}
}

/*
 * Encode r (signed or MAC'd with key, NULL: neither) and hold it on s;
 * ahead: past the commit when nothing is held on s
 * (cats_stream_send_ahead).
 */
static void
hold_rec(struct bind_app *a, struct cats_stream *s, const struct cats_rec *r,
    const struct cats_key *key, bool ahead)
{
	struct cats_rec copy;
	const struct cats_rec *x = r;
	if (key != NULL) {
		copy = *r;
		if (cats_rec_sign(&copy, key) == 0)
			x = &copy;
	}
	cats_buf_reset(&a->enc);
	if (cats_rec_encode(x, &a->enc, true) < 0) {
		cats_warnx("cannot encode a %s record", cats_type_name(r->type));
		return;
	}
	if (ahead)
		cats_stream_send_ahead(s, a->enc.p, a->enc.len);
	else
		send_held(a, s, a->enc.p, a->enc.len);
}

/* A record for the output stream: unsigned (a pipe of this host's). */
static void
hold_out(struct bind_app *a, const struct cats_rec *r)
{
	hold_rec(a, a->out, r, NULL, false);
}

/*
 * A record for a forwarder: MAC'd with the key derived from the PSK it
 * authenticated with (cats_key_derive_down), else signed with --key.
 */
static void
hold_conn(struct bind_app_conn *c, const struct cats_rec *r, bool ahead)
{
	struct bind_app *a = c->a;
	const struct cats_key *k = c->has_down ? &c->down :
	    a->have_key ? &a->key : NULL;
	hold_rec(a, c->s, r, k, ahead);
	if (c->has_down)
		a->sent_mac++;
}

static void
io_send(void *arg, const struct cats_rec *r, const char *to)
{
	struct bind_app *a = arg;
	if (to == NULL) {
		hold_out(a, r);
		return;
	}
	struct bind_app_conn *c = conn_by_name(a, to);
	if (c == NULL) {
		a->dropped_sends++;	/* a forwarder known only from stdin */
		return;
	}
	hold_conn(c, r, false);
	lat_sent(a, c, r);
}

/*
 * An egress's copy of a new binding (bind.h send_ahead): it leaves before
 * the journal's sync, but never before what its channel holds.  With a
 * replica (--etcd) it is held like the rest: an owner whose txn fails may
 * not act at all.
 */
static void
io_send_ahead(void *arg, const struct cats_rec *r, const char *to)
{
	struct bind_app *a = arg;
	struct bind_app_conn *c = conn_by_name(a, to);
	if (a->repl != NULL || c == NULL) {
		io_send(arg, r, to);
		return;
	}
	hold_conn(c, r, true);
	lat_sent(a, c, r);
	a->sent_ahead++;
}

static void
io_journal(void *arg, const struct cats_rec *r)
{
	struct bind_app *a = arg;
	if (a->j != NULL && bj_append(a->j, r) < 0) {
		a->journal_errors++;
		cats_errorx("journal: %s", strerror(errno));
	}
	if (a->repl != NULL && a->repl->append(a->repl->arg, r) < 0) {
		a->journal_errors++;
		cats_errorx("replica: out of memory");
	}
	/* Even a record no output waits for is written with this batch. */
	cats_commit_due(a->cm);
}

static void
io_trace(void *arg, const struct bind_trace *tr)
{
	struct bind_app *a = arg;
	char line[256];
	lat_trace(a, tr);
	bind_trace_fmt(tr, line, sizeof(line));
	if (a->trace != NULL)
		fprintf(a->trace, "ts=%" PRIu64 " %s\n", tr->now, line);
	else
		cats_log(LOG_INFO, "%s", line);
}

/* ---- stats ---- */

/* The counters of the stats record. */
static void
stats_list(struct bind_app *a, struct cats_stats_list *st)
{
	/* Sizes and states of the table; the rest only grows. */
	static const char *const gauges[] = { "bindings", "pending", "entries",
		"paths", "classes", "clients", "strings", "epoch", "memory",
		"state.*", NULL };
	size_t n;
	const struct cats_kv *kv = bind_counters_kv(a->t, &n);
	/* The journal's and the replica's counters, with no batch flying. */
	cats_commit_wait(a->cm);
	cats_stats_init(st, "cats-bind", bind_self(a->t));
	cats_stats_add_kv_gauges(st, kv, n, gauges);
	cats_stats_add(st, "in.records", a->in_records);
	cats_stats_add(st, "in.bad", a->in_bad);
	cats_stats_add(st, "passed", a->passed);
	cats_stats_add(st, "sent.dropped", a->dropped_sends);
	cats_stats_add(st, "sent.ahead", a->sent_ahead);
	cats_stats_add(st, "sent.mac", a->sent_mac);
	cats_stats_add(st, "sent.keepalives", a->keepalives);
	/* 001's binding installation and control-channel latencies, as
	 * the record has no place for the histograms (those on /metrics). */
	cats_stats_gauge(st, "activation.p50_us",
	    cats_hist_quantile(&a->h_activate, 500));
	cats_stats_gauge(st, "activation.p99_us",
	    cats_hist_quantile(&a->h_activate, 990));
	cats_stats_gauge(st, "control.p50_us",
	    cats_hist_quantile(&a->h_control, 500));
	cats_stats_gauge(st, "control.p99_us",
	    cats_hist_quantile(&a->h_control, 990));
	cats_stats_gauge(st, "forwarders", a->byname.n);
	if (a->lst != NULL) {
		const struct cats_listener_stats *ls =
		    cats_listener_stats(a->lst);
		cats_stats_gauge(st, "conns", ls->open);
		cats_stats_gauge(st, "conns.unauth", ls->unauth);
		cats_stats_add(st, "conns.accepted", ls->accepted);
		cats_stats_add(st, "conns.refused", ls->refused +
		    a->conns_refused);
		cats_stats_add(st, "conns.evicted", ls->evicted);
		cats_stats_add(st, "conns.hello_timeouts", ls->hello_timeouts);
		cats_stats_add(st, "conns.idle_timeouts", ls->idle_timeouts);
		cats_stats_add(st, "accept.fd_exhausted", ls->fd_exhausted);
		cats_stats_add(st, "accept.shed", ls->shed);
	}
	cats_stats_add(st, "auth.refused", a->auth_refused);
	cats_stats_add(st, "hello.replayed", a->hello_replayed);
	cats_stats_add(st, "impersonation", a->imperson);
	cats_stats_add(st, "journal.errors", a->journal_errors);
	if (a->j != NULL) {
		const struct bj_stats *s = bj_stats(a->j);
		cats_stats_add(st, "journal.records", s->records);
		cats_stats_add(st, "journal.bytes", s->bytes);
		cats_stats_add(st, "journal.fsyncs", s->fsyncs);
		cats_stats_add(st, "journal.snapshots", s->snapshots);
		cats_stats_add(st, "journal.restored", s->restored);
		cats_stats_add(st, "journal.refused", s->refused);
		cats_stats_add(st, "journal.torn", s->torn);
		cats_stats_add(st, "journal.torn_bytes", s->torn_bytes);
	}
	if (a->repl != NULL && a->repl->stats != NULL)
		a->repl->stats(a->repl->arg, st);
}

void
bind_app_stats_fill(void *arg, struct cats_stats_list *st)
{
	struct bind_app *a = arg;
	stats_list(a, st);
	cats_stats_hist(st, "installation", &a->h_install);
	cats_stats_hist(st, "activation", &a->h_activate);
	cats_stats_hist(st, "control", &a->h_control);
}

void
bind_app_stats(struct bind_app *a)
{
	struct cats_stats_list st;
	stats_list(a, &st);
	struct cats_rec r;
	cats_stats_record(&st, &r, cats_clock_now());
	hold_out(a, &r);
	cats_stats_free(&st);
}

/* ---- input ---- */

static void
refused(const char *where, uint64_t index, int rc)
{
	if (rc != BR_OK)
		cats_debug("%s record %" PRIu64 ": refused: %s", where, index,
		    bind_reason_names[rc]);
}

/* The record of an input item no longer decodes: counted, and the end
 * with --strict. */
static void
bad_input(struct bind_app *a)
{
	a->in_bad++;
	if (a->strict)
		bind_app_stop(a, CATS_EXIT_DATAERR);
}

/*
 * One record from the pipeline (stdin); scanned into a->dec's tokens
 * (cats_stream_decode_into), as are the forwarders'.  What the table
 * does not take is passed on unchanged, after it for a metric.
 */
static void
in_rec(struct cats_stream *s, struct cats_item *it, void *arg)
{
	struct bind_app *a = arg;
	struct cats_rec *r = it->rec;
	(void)s;
	a->in_records++;
	if (r == NULL) {
		cats_errorx("%s", it->why);
		bad_input(a);
		return;
	}
	int kind = bind_input_kind(r->type);
	if (kind != BIND_IN_PASS && cats_clock_replay())
		cats_clock_observe(cats_rec_ts(r));
	uint64_t t0 = cats_clock_mono_ns();
	int rc = bind_input(a->t, r, cats_clock_now());
	resync_kick(a);
	if (r->type == CATS_T_PATH_REP)
		cats_hist_observe(&a->h_install, (cats_clock_mono_ns() - t0) /
		    1000);
	if (kind != BIND_IN_TAKE) {
		send_held(a, a->out, it->p, it->n);
		a->passed++;
	}
	refused("input", it->index, rc);
}


static void
in_eof(struct cats_stream *s, int error, void *arg)
{
	struct bind_app *a = arg;
	(void)s;
	if (error)
		cats_errorx("input: %s", strerror(error));
	a->stdin_eof = true;
	cats_commit_run(a->cm);
	if (!a->listening)
		bind_app_stop(a, error ? CATS_EXIT_FAIL : CATS_EXIT_OK);
}

static void
out_drained(struct cats_stream *s, void *arg)
{
	struct bind_app *a = arg;
	(void)s;
	if (!a->paused)
		return;
	a->paused = false;
	if (a->in && !a->stdin_eof)
		cats_stream_resume(a->in);
	FOREACH_CONN(a, c, lc, nx)
		cats_stream_resume(c->s);
}

static void
out_eof(struct cats_stream *s, int error, void *arg)
{
	(void)s;
	if (error) {
		cats_tool_output_failed("output", error);
		bind_app_stop(arg, CATS_EXIT_IOERR);
	}
}

/* ---- forwarders ---- */

/* A connection's end, whoever closed it. */
static void
conn_gone(struct bind_app_conn *c)
{
	struct bind_app *a = c->a;
	if (c->named) {
		cats_htab_del(&a->byname, cats_hash_str(c->fwd), conn_eq, c->fwd);
		bind_fwd_gone(a->t, c->fwd);
		cats_info("forwarder %s disconnected", c->fwd);
	}
	cats_stream_free(c->s);
	free(c->fwd);
	explicit_bzero(&c->down, sizeof(c->down));
	free(c);
}

/* This module closes a connection. */
static void
drop_conn(struct bind_app_conn *c)
{
	cats_conn_release(c->lc);
	conn_gone(c);
}

/* The listener closes one (a deadline, an eviction, the end). */
static void
conn_closed(struct cats_conn *lc, int why, void *arg)
{
	struct bind_app_conn *c = cats_conn_data(lc);
	(void)arg;
	if (c != NULL) {
		if (c->fwd != NULL)
			cats_info("forwarder %s: connection closed: %s", c->fwd,
			    cats_conn_why_names[why]);
		conn_gone(c);
	}
}

/* An authentication refused (audited already): counted, and a connection
 * that has not said hello is dropped. */
static void
auth_refused(struct bind_app_conn *c)
{
	c->a->auth_refused++;
	if (c->fwd == NULL)
		drop_conn(c);
}

/*
 * A signed hello is fresh (sec/crypto.h, cats_hello_guard_new): signed
 * after this process started and after the last hello accepted from that
 * forwarder.
 */
static bool
hello_fresh(struct bind_app *a, const struct cats_status *st)
{
	if (a->keys.n == 0 || cats_clock_replay())
		return true;
	char why[200];
	int rc = cats_hello_check(a->hellos, st->fwd, st->ts, why, sizeof(why));
	if (rc == CATS_REPLAY_NONCE) {
		a->hello_replayed++;
		cats_audit_limited("auth-refused", "fwd=%s reason=\"%s\"",
		    st->fwd, why);
	}
	return rc == CATS_REPLAY_OK;
}

/* A forwarder's first record, its hello: the connection takes its name. */
static bool
hello(struct bind_app_conn *c, const struct cats_status *st, uint64_t index)
{
	struct bind_app *a = c->a;
	if (st->event != CATS_EV_HELLO) {
		cats_warnx("connection: record %" PRIu64 ": the first record "
		    "must be a hello", index);
		drop_conn(c);
		return false;
	}
	if (!hello_fresh(a, st)) {
		auth_refused(c);
		return false;
	}
	struct bind_app_conn *old = conn_by_name(a, st->fwd);
	if (old != NULL) {
		/* The newer connection owns the name. */
		cats_warnx("forwarder %s reconnected; the older connection is "
		    "dropped", st->fwd);
		drop_conn(old);
	}
	c->fwd = strdup(st->fwd);
	if (c->fwd == NULL || cats_htab_put(&a->byname, cats_hash_str(c->fwd),
	    c) < 0) {
		drop_conn(c);
		return false;
	}
	c->named = true;
	cats_conn_auth(c->lc);
	cats_info("forwarder %s connected (epoch %" PRIu64 ")", c->fwd,
	    CATS_HAS(st, STA, epoch) ? st->epoch : 0);
	return true;
}

/*
 * The re-syncs under way (bind_fwd_hello) go on a slice a turn: between
 * two, the loop commits and writes what was held, sends keepalives and
 * reads.  Replayed input (--replay) has no turns to keep: at once.
 */
/* A timer of 0, not event_active: libevent runs what a callback makes
 * active in the same pass, before it polls again. */
static void
resync_next(struct bind_app *a)
{
	static const struct timeval now0 = { 0, 0 };
	if (a->resync != NULL && !evtimer_pending(a->resync, NULL))
		evtimer_add(a->resync, &now0);
}

static void
on_resync(evutil_socket_t fd, short what, void *arg)
{
	struct bind_app *a = arg;
	(void)fd;
	(void)what;
	if (bind_fwd_resync(a->t, BIND_RESYNC_SLICE, cats_clock_now()))
		resync_next(a);
}

static void
resync_kick(struct bind_app *a)
{
	if (cats_clock_replay()) {
		while (bind_fwd_resync(a->t, SIZE_MAX, cats_clock_now()))
			;
		return;
	}
	if (bind_fwd_resync_pending(a->t))
		resync_next(a);
}

/*
 * A binding record from a named forwarder: one it made by its fallback
 * (cats-fwd(1) FALLBACK), to adopt or end.  Signed by that forwarder's key
 * with --keys, as its status records are.
 */
static void
fwd_binding(struct bind_app_conn *c, struct cats_rec *r, uint64_t index)
{
	struct bind_app *a = c->a;
	const struct cats_binding *b = &r->u.binding;
	struct cats_err e;
	memset(&e, 0, sizeof(e));
	if (a->keys.n > 0) {
		const struct cats_key *who = NULL;
		if (cats_rec_verify(r, &a->keys, &who, &e) < 0 ||
		    strcmp(who->name, c->fwd) != 0) {
			cats_audit_limited("auth-refused", "fwd=%s reason=%s",
			    c->fwd, who ? "key of another forwarder" : e.reason);
			auth_refused(c);
			return;
		}
	}
	if (cats_clock_replay())
		cats_clock_observe(b->ts);
	cats_conn_touch(c->lc);
	refused(c->fwd, index, bind_fwd_binding(a->t, c->fwd, b,
	    cats_clock_now()));
}

/* A status record from a forwarder: authenticated, then the table's. */
static void
conn_rec(struct cats_stream *s, struct cats_item *it, void *arg)
{
	struct bind_app_conn *c = arg;
	struct bind_app *a = c->a;
	struct cats_rec *r = it->rec;
	struct cats_err e;
	uint64_t index = it->index;
	(void)s;
	memset(&e, 0, sizeof(e));
	if (r == NULL) {
		cats_errorx("forwarder %s: %s", c->fwd ? c->fwd : "?",
		    it->why);
		a->in_bad++;
		return;
	}
	if (r->type == CATS_T_BINDING && c->fwd != NULL) {
		fwd_binding(c, r, index);
		return;
	}
	if (r->type != CATS_T_STATUS) {
		cats_warnx("forwarder %s: record %" PRIu64 ": a %s record, "
		    "expected status%s", c->fwd ? c->fwd : "?", index,
		    cats_type_name(r->type), c->fwd ? " or binding" : "");
		a->in_bad++;
		return;
	}
	const struct cats_status *st = &r->u.status;
	const struct cats_key *who = NULL;
	if (a->keys.n > 0) {
		/* Signed by the key of the forwarder it names. */
		if (cats_rec_verify(r, &a->keys, &who, &e) < 0 ||
		    strcmp(who->name, st->fwd) != 0) {
			cats_audit_limited("auth-refused", "fwd=%s reason=%s",
			    st->fwd, who ? "key of another forwarder" : e.reason);
			auth_refused(c);
			return;
		}
	}
	if (cats_clock_replay())
		cats_clock_observe(st->ts);
	uint64_t now = cats_clock_now();
	/* Authenticated channels: a recorded session replayed later is stale. */
	if (a->keys.n > 0 && !cats_clock_replay() &&
	    !cats_replay_in_window(st->ts, now, AUTH_WINDOW_MS)) {
		cats_audit_limited("auth-refused", "fwd=%s reason=timestamp "
		    "%" PRIu64 " outside now +/- %d ms", st->fwd, st->ts,
		    AUTH_WINDOW_MS);
		auth_refused(c);
		return;
	}
	if (c->fwd == NULL) {
		/* Before the hello's re-sync: every record to it is MAC'd. */
		c->has_down = who != NULL &&
		    cats_key_derive_down(who, "cats-bind", &c->down) == 0;
		if (!hello(c, st, index))
			return;
	} else if (strcmp(st->fwd, c->fwd) != 0) {
		cats_audit("impersonation", "conn=%s claimed=%s", c->fwd,
		    st->fwd);
		a->imperson++;
		return;
	}
	cats_conn_touch(c->lc);
	lat_status(a, c, st);
	refused(c->fwd, index, bind_status(a->t, st, now));
	resync_kick(a);
}


static void
conn_eof(struct cats_stream *s, int error, void *arg)
{
	(void)s;
	(void)error;
	drop_conn(arg);
}

static int
conn_accept(struct cats_conn *lc, int fd, void *arg)
{
	struct bind_app *a = arg;
	static const struct cats_stream_cbs cbs = { .rec = conn_rec,
		.eof = conn_eof };
	struct bind_app_conn *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return -1;
	c->a = a;
	c->lc = lc;
	c->s = cats_stream_new(a->base, fd, fd, false, NULL, 0, &cbs, c);
	if (c->s == NULL) {
		free(c);
		a->conns_refused++;
		return -1;
	}
	cats_stream_own(c->s);
	if (cats_stream_hold(c->s, a->cm) < 0) {
		cats_stream_free(c->s);
		free(c);
		a->conns_refused++;
		return -1;
	}
	cats_stream_decode_into(c->s, &a->dec);
	if (a->paused)
		cats_stream_pause(c->s);
	cats_conn_set_data(lc, c);
	return 0;
}

void
bind_app_listener(struct bind_app *a, int fd)
{
	static const struct cats_listener_cbs cbs = { conn_accept,
		conn_closed };
	struct cats_listener_opts o = { .name = "forwarder",
		.max_conns = a->max_conns, .max_unauth = a->max_unauth,
		.hello_ms = a->hello_ms ? a->hello_ms : CATS_HELLO_MS,
		.idle_ms = a->idle_ms };
	if (a->lst == NULL)
		a->lst = cats_listener_new(a->base, &o, &cbs, a);
	if (a->lst == NULL || cats_listener_add(a->lst, fd, 0) < 0) {
		cats_errorx("--listen: out of memory");
		bind_app_stop(a, CATS_EXIT_FAIL);
		return;
	}
	a->listening = true;
}

/* ---- the run ---- */

int
bind_app_init(struct bind_app *a, const struct bind_conf *c)
{
	struct bind_io io = { io_send, io_journal, io_trace, a, io_send_ahead };
	a->cm = cats_commit_new(a->base, &COMMIT, a, HELD_FLUSH);
	a->t = bind_new(c, &io);
	a->resync = evtimer_new(a->base, on_resync, a);
	if (a->cm == NULL || a->t == NULL || a->resync == NULL) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	cats_dec_init(&a->dec, NULL);
	/* Not measured without it: nothing else depends on it. */
	a->lat = calloc(1, sizeof(*a->lat));
	if ((a->hellos = cats_hello_guard_new(cats_clock_now())) == NULL) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	return CATS_EXIT_OK;
}

int
bind_app_journal(struct bind_app *a, const char *dir, int fsync_policy,
    uint64_t snap_min)
{
	char err[512];
	uint64_t now = cats_clock_now();
	a->j = bj_open(dir, false, fsync_policy, err, sizeof(err));
	if (a->j == NULL) {
		cats_errorx("%s", err);
		return CATS_EXIT_FAIL;
	}
	if (snap_min)
		bj_set_snapshot_min(a->j, snap_min);
	if (bj_restore(a->j, a->t, now, err, sizeof(err)) < 0 ||
	    bj_start(a->j, a->t, now, err, sizeof(err)) < 0) {
		cats_errorx("%s", err);
		return CATS_EXIT_FAIL;
	}
	const struct bj_stats *s = bj_stats(a->j);
	if (s->torn)
		cats_warnx("%s: dropped a torn tail of %" PRIu64 " bytes", dir,
		    s->torn_bytes);
	cats_info("restored %zu bindings from %s, epoch %" PRIu64,
	    bind_count(a->t), dir, bind_epoch(a->t));
	return CATS_EXIT_OK;
}

int
bind_app_output(struct bind_app *a)
{
	static const struct cats_stream_cbs cbs = { .eof = out_eof,
		.drained = out_drained };
	a->out = cats_stream_new(a->base, -1, 1, false, NULL, 0, &cbs, a);
	if (a->out == NULL || cats_stream_hold(a->out, a->cm) < 0) {
		cats_tool_output_failed("output", errno);
		return CATS_EXIT_IOERR;
	}
	return CATS_EXIT_OK;
}

int
bind_app_input(struct bind_app *a)
{
	static const struct cats_stream_cbs cbs = { .rec = in_rec,
		.eof = in_eof };
	a->in = cats_stream_new(a->base, 0, -1, false, NULL, 0, &cbs, a);
	if (a->in == NULL) {
		cats_errorx("input: %s", strerror(errno));
		return CATS_EXIT_NOINPUT;
	}
	cats_stream_decode_into(a->in, &a->dec);
	a->last_fsync = a->last_stats = cats_clock_now();
	return CATS_EXIT_OK;
}

/* To each forwarder that said hello: this manager is alive, at its epoch. */
static void
keepalive(struct bind_app *a, uint64_t now)
{
	struct cats_rec r;
	cats_rec_keepalive_init(&r, now);
	CATS_SET(&r.u.status, STA, epoch, bind_epoch(a->t));
	FOREACH_CONN(a, c, lc, nx) {
		if (c->fwd == NULL)
			continue;
		r.u.status.fwd = c->fwd;
		hold_conn(c, &r, false);
		a->keepalives++;
	}
}

void
bind_app_tick(struct bind_app *a)
{
	uint64_t now = cats_clock_now();
	char rerr[512];
	/* What the commit's work touches is touched here only between
	 * batches: the replica (its tick, the lease), the counters, a
	 * snapshot's cut of the segment. */
	if ((a->repl != NULL || (a->stats_ms &&
	    now - a->last_stats >= a->stats_ms) ||
	    (a->j != NULL && bj_snapshot_due(a->j))) &&
	    cats_commit_wait(a->cm) < 0)
		return;		/* the batch's end stopped the run */
	if (a->repl != NULL && a->repl->tick != NULL &&
	    a->repl->tick(a->repl->arg, rerr, sizeof(rerr)) < 0) {
		repl_failed(a, rerr, "stopping");
		return;
	}
	if (!cats_clock_replay())
		bind_tick(a->t, now);
	if (a->j != NULL && a->fsync_ms && now - a->last_fsync >= a->fsync_ms) {
		/* --fsync interval (under always: what no output waited
		 * for): the next batch syncs, off the loop. */
		bj_want_sync(a->j);
		cats_commit_due(a->cm);
		a->last_fsync = now;
	}
	if (a->stats_ms && now - a->last_stats >= a->stats_ms) {
		bind_app_stats(a);
		a->last_stats = now;
	}
	if (a->listening && !cats_clock_replay() &&
	    now - a->last_keepalive >= KEEPALIVE_MS) {
		keepalive(a, now);
		a->last_keepalive = now;
	}
	if (a->j != NULL && bj_snapshot_wait(a->j, false) < 0)
		cats_errorx("journal: the background snapshot failed; the "
		    "segments stay");
	if (a->j != NULL && bj_snapshot_due(a->j)) {
		char err[512] = "";
		cats_commit_run(a->cm);
		if (bj_snapshot_async(a->j, a->t, now, err, sizeof(err)) < 0)
			cats_errorx("%s", err);
	}
}

int
bind_app_end(struct bind_app *a)
{
	char err[512];
	cats_commit_run(a->cm);
	if (a->stats_at_exit)
		bind_app_stats(a);
	cats_commit_run(a->cm);
	/* What the end released must be written: else 74, not 0. */
	if (cats_stream_flush(a->out) < 0) {
		int io = cats_tool_output_failed("output", errno);
		if (a->exit_code == CATS_EXIT_OK ||
		    a->exit_code == CATS_EXIT_DATAERR)
			a->exit_code = io;
	}
	FOREACH_CONN(a, c, lc, nx)
		cats_stream_flush(c->s);
	if (a->j != NULL) {
		if (a->exit_code != CATS_EXIT_FAIL && bj_snapshot(a->j, a->t,
		    cats_clock_now(), err, sizeof(err)) < 0)
			cats_errorx("%s", err);
		bj_close(a->j);
		a->j = NULL;
	}
	int rc = a->exit_code;
	if (rc == CATS_EXIT_OK && a->in_bad > 0)
		rc = CATS_EXIT_DATAERR;
	return rc;
}

void
bind_app_free(struct bind_app *a)
{
	cats_listener_free(a->lst);
	a->lst = NULL;
	cats_stream_free(a->in);
	cats_stream_free(a->out);
	if (a->resync != NULL)
		event_free(a->resync);
	a->resync = NULL;
	cats_commit_free(a->cm);
	if (a->j != NULL)
		bj_close(a->j);
	cats_htab_free(&a->byname);
	cats_replay_free(a->hellos);
	cats_keyring_free(&a->keys);
	cats_buf_free(&a->enc);
	cats_dec_free(&a->dec);
	bind_free(a->t);
	a->t = NULL;
	free(a->lat);
	a->lat = NULL;
}

/* ---- --dump ---- */

static void
dump_one(void *arg, const struct cats_rec *r)
{
	struct cats_buf *b = arg;
	cats_rec_encode(r, b, false);
	if (b->len >= HELD_FLUSH) {
		if (cats_write_all(1, b->p, b->len) < 0) {
			cats_tool_output_failed("output", errno);
			exit(CATS_EXIT_IOERR);
		}
		b->len = 0;
	}
}

int
bind_app_dump(const struct bind_conf *c, const char *dir)
{
	char err[512] = "";
	struct bj *j = bj_open(dir, true, BJ_FSYNC_NEVER, err, sizeof(err));
	if (j == NULL) {
		cats_errorx("%s", err);
		return CATS_EXIT_NOINPUT;
	}
	uint64_t now = cats_clock_now();
	struct bind_table *t = bind_new(c, NULL);
	if (t == NULL || bj_restore(j, t, now, err, sizeof(err)) < 0) {
		cats_errorx("%s", err[0] ? err : "out of memory");
		return CATS_EXIT_FAIL;
	}
	const struct bj_stats *s = bj_stats(j);
	if (s->segments == 0 && s->snapshot_bytes == 0) {
		cats_errorx("--journal %s: no journal there (no snapshot, no "
		    "segment)", dir);
		bind_free(t);
		bj_close(j);
		return CATS_EXIT_NOINPUT;
	}
	if (s->torn)
		cats_warnx("%s: a torn tail of %" PRIu64 " bytes (left in place)",
		    dir, s->torn_bytes);
	struct cats_buf b = { 0 };
	bind_foreach(t, (1u << CATS_FS_BINDING_READY) | (1u << CATS_FS_ACTIVE),
	    cats_clock_now(), dump_one, &b);
	if (cats_write_all(1, b.p, b.len) < 0)
		return cats_tool_output_failed("stdout", errno);
	cats_buf_free(&b);
	cats_info("%zu bindings, epoch %" PRIu64, bind_count(t), bind_epoch(t));
	bind_free(t);
	bj_close(j);
	return CATS_EXIT_OK;
}
