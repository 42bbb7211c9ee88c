/*
 * cats-bind - the binding manager: path replies joined with their decisions
 * become steering bindings, committed at the forwarders, kept through their
 * lifetimes and restored after a restart (cats-bind(1)).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "bind/bind.h"
#include "bind/bind_journal.h"
#include "base/clock.h"
#include "base/conf.h"
#include "sec/crypto.h"
#include "net/ep.h"
#include "base/htab.h"
#include "base/log.h"
#include "rec/seq.h"
#include "base/tool.h"

static const char usage_text[] =
    "usage: cats-bind [-qsv] [--commit both|ingress|none] "
    "[--commit-timeout dur]\n"
    "                 [--dataplanes list] [--drain-timeout dur] [--dump]\n"
    "                 [--fsync always|interval|never] [--fsync-interval dur]\n"
    "                 [--hard dur] [--id name] [--idle dur] [--journal dir]\n"
    "                 [--key file] [--keys file] [--limit name=n]\n"
    "                 [--listen endpoint] [--pending-timeout dur]\n"
    "                 [--repair-timeout dur] [--replay] [--snapshot-size size]\n"
    "                 [--stats] [--stats-interval dur] [--trace file]\n";

static void
usage(void)
{
	fputs(usage_text, stderr);
	exit(CATS_EXIT_USAGE);
}

#define MAX_CONNS 1024
#define AUTH_WINDOW_MS 30000
#define HELD_FLUSH (1u << 20)
#define CONN_QUEUE_MAX (UINT64_C(1) << 30)

struct conn {
	struct conn *next;
	struct cats_stream *s;
	char *fwd;		/* after its hello */
	bool named;		/* holds the name in the forwarder table */
	struct cats_buf held;	/* output waiting for the journal */
	uint64_t index;
};

static struct {
	struct event_base *base;
	struct bind_table *t;
	struct bj *j;
	struct cats_stream *in, *out;
	struct cats_buf held;	/* stdout output waiting for the journal */
	struct conn *conns;
	size_t nconns;
	struct cats_htab byname;
	struct event *flush_ev, *tick_ev, *listen_ev, *sig_term, *sig_int,
	    *sig_usr1;
	int listen_fd;
	char sock_path[4096];	/* unix socket to remove at a clean stop */
	struct cats_dec dec;
	FILE *trace;
	struct cats_key key;
	bool have_key;
	struct cats_keyring keys;
	bool paused, stdin_eof, listening, stats_at_exit, strict, stopping;
	uint64_t fsync_ms, stats_ms, last_fsync, last_stats;
	int exit_code;
	/* counters of the tool itself */
	uint64_t in_records, in_bad, passed, dropped_sends, conns_accepted,
	    conns_refused, auth_refused, imperson, journal_errors;
} g;

static uint64_t
now_ms(void)
{
	return cats_clock_now();
}

static bool
conn_eq(const void *item, const void *key)
{
	return strcmp(((const struct conn *)item)->fwd, key) == 0;
}

static struct conn *
conn_by_name(const char *name)
{
	return cats_htab_get(&g.byname, cats_hash_str(name), conn_eq, name);
}

/* ---- output: held until the journal covers it, then sent ---- */

static void schedule_flush(void);

static void
hold(struct cats_buf *b, const struct cats_rec *r, bool sign)
{
	struct cats_rec copy;
	const struct cats_rec *x = r;
	if (sign && g.have_key) {
		copy = *r;
		if (cats_rec_sign(&copy, &g.key) == 0)
			x = &copy;
	}
	if (cats_rec_encode(x, b, true) < 0)
		cats_warnx("cannot encode a %s record", cats_type_name(r->type));
	schedule_flush();
}

static void
io_send(void *arg, const struct cats_rec *r, const char *to)
{
	(void)arg;
	if (to == NULL) {
		hold(&g.held, r, false);
		return;
	}
	struct conn *c = conn_by_name(to);
	if (c == NULL) {
		g.dropped_sends++;	/* a forwarder known only from stdin */
		return;
	}
	hold(&c->held, r, true);
}

static void
io_journal(void *arg, const struct cats_rec *r)
{
	(void)arg;
	if (g.j != NULL && bj_append(g.j, r) < 0) {
		g.journal_errors++;
		cats_errorx("journal: %s", strerror(errno));
	}
	/* Even a record no output waits for is written with this batch. */
	event_active(g.flush_ev, 0, 0);
}

static void
io_trace(void *arg, const struct bind_trace *tr)
{
	(void)arg;
	char line[256];
	snprintf(line, sizeof(line), "txn=%" PRIu64 " id=%" PRIu64 " %s%s -> %s"
	    " (%s)%s%s", tr->txn, tr->id, tr->refused ? "refused " : "",
	    cats_flow_state_names[tr->from], cats_flow_state_names[tr->to],
	    tr->event, tr->reason ? " reason=" : "",
	    tr->reason ? bind_reason_names[tr->reason] : "");
	if (g.trace != NULL)
		fprintf(g.trace, "ts=%" PRIu64 " %s\n", tr->now, line);
	else
		cats_log(LOG_INFO, "%s", line);
}

static void
stop(int code)
{
	if (g.exit_code == 0)
		g.exit_code = code;
	g.stopping = true;
	event_base_loopbreak(g.base);
}

static void
send_held(struct cats_stream *s, struct cats_buf *b, bool is_out)
{
	if (b->len == 0)
		return;
	int rc = cats_stream_send(s, b->p, b->len);
	b->len = 0;
	if (rc < 0 && is_out) {
		cats_errorx("output: %s", strerror(errno ? errno : EPIPE));
		stop(CATS_EXIT_IOERR);
	} else if (rc > 0 && is_out && !g.paused) {
		/* Back-pressure: stop reading until the output drains. */
		g.paused = true;
		if (g.in)
			cats_stream_pause(g.in);
		for (struct conn *c = g.conns; c; c = c->next)
			cats_stream_pause(c->s);
	}
}

static void drop_conn(struct conn *c);

/*
 * Group commit: the journal records written (and synced, under fsync
 * always) first, then every output they cover.
 */
static void
flush_all(void)
{
	if (g.j != NULL && bj_commit(g.j) < 0) {
		cats_errorx("journal: %s: refusing to send what it does not "
		    "hold", strerror(errno));
		stop(CATS_EXIT_FAIL);
		return;
	}
	send_held(g.out, &g.held, true);
	for (struct conn *c = g.conns, *n; c; c = n) {
		n = c->next;
		send_held(c->s, &c->held, false);
		if (cats_stream_queued(c->s) > CONN_QUEUE_MAX) {
			cats_warnx("forwarder %s: %zu bytes queued, dropped",
			    c->fwd ? c->fwd : "?", cats_stream_queued(c->s));
			drop_conn(c);
		}
	}
}

static void
on_flush(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	flush_all();
}

static void
schedule_flush(void)
{
	size_t n = g.held.len;
	for (struct conn *c = g.conns; c; c = c->next)
		n += c->held.len;
	if (n >= HELD_FLUSH)
		flush_all();
	else
		event_active(g.flush_ev, 0, 0);
}

/* ---- stats ---- */

static void
emit_stats(void)
{
	size_t n;
	struct cats_kv *kv = bind_counters_kv(g.t, &n);
	struct cats_kv all[512];
	size_t m = 0;
	for (size_t i = 0; i < n && m < CATS_ARRAY_LEN(all) - 24; i++)
		all[m++] = kv[i];
	struct cats_kv mine[] = {
		{ "in.records", g.in_records }, { "in.bad", g.in_bad },
		{ "passed", g.passed }, { "sent.dropped", g.dropped_sends },
		{ "forwarders", g.byname.n }, { "conns", g.nconns },
		{ "conns.accepted", g.conns_accepted },
		{ "conns.refused", g.conns_refused },
		{ "auth.refused", g.auth_refused },
		{ "impersonation", g.imperson },
		{ "journal.errors", g.journal_errors },
	};
	for (size_t i = 0; i < CATS_ARRAY_LEN(mine); i++)
		all[m++] = mine[i];
	if (g.j != NULL) {
		const struct bj_stats *s = bj_stats(g.j);
		struct cats_kv js[] = {
			{ "journal.records", s->records },
			{ "journal.bytes", s->bytes },
			{ "journal.fsyncs", s->fsyncs },
			{ "journal.snapshots", s->snapshots },
			{ "journal.restored", s->restored },
			{ "journal.refused", s->refused },
			{ "journal.torn", s->torn },
			{ "journal.torn_bytes", s->torn_bytes },
		};
		for (size_t i = 0; i < CATS_ARRAY_LEN(js); i++)
			all[m++] = js[i];
	}
	struct cats_rec r;
	cats_stats_rec(&r, "cats-bind", bind_self(g.t), all, m, now_ms());
	hold(&g.held, &r, false);
}

/* ---- input ---- */

static uint64_t
rec_ts(const struct cats_rec *r, bool *has)
{
	*has = true;
	switch (r->type) {
	case CATS_T_PATH_REP: return r->u.prep.ts;
	case CATS_T_PATH_REQ: return r->u.preq.ts;
	case CATS_T_REQUEST: return r->u.request.ts;
	case CATS_T_STATUS: return r->u.status.ts;
	case CATS_T_METRIC: return r->u.metric.ts;
	case CATS_T_ERROR:
		*has = CATS_HAS(&r->u.error, ERR, ts);
		return r->u.error.ts;
	default:
		*has = false;
		return 0;
	}
}

static void
refused(const char *where, uint64_t index, int rc)
{
	if (rc != BR_OK)
		cats_debug("%s record %" PRIu64 ": refused: %s", where, index,
		    bind_reason_names[rc]);
}

/* One record from the pipeline (stdin); scanned into g.dec's tokens
 * (cats_stream_decode_into), as are the forwarders'. */
static void
in_item(struct cats_stream *s, const uint8_t *p, size_t n, uint64_t index,
    const struct cats_peer *peer, void *arg)
{
	(void)s;
	(void)peer;
	(void)arg;
	struct cats_rec r;
	struct cats_err e;
	memset(&e, 0, sizeof(e));
	g.in_records++;
	if (cats_rec_from_toks(&g.dec, &r, &e) < 0) {
		char msg[400];
		cats_errorx("%s", cats_err_fmt(&e, index, msg, sizeof(msg)));
		g.in_bad++;
		if (g.strict)
			stop(CATS_EXIT_DATAERR);
		return;
	}
	bool has;
	uint64_t ts = rec_ts(&r, &has);
	if (has && cats_clock_replay())
		cats_clock_observe(ts);
	uint64_t now = now_ms();
	int rc = BR_OK;
	switch (r.type) {
	case CATS_T_PATH_REP:
		rc = bind_path_rep(g.t, &r.u.prep, now);
		break;
	case CATS_T_ERROR:
		rc = bind_error(g.t, &r.u.error, now);
		break;
	case CATS_T_STATUS:
		rc = bind_status(g.t, &r.u.status, now);
		break;
	case CATS_T_PATH_REQ:
		rc = bind_path_req(g.t, &r.u.preq, now);
		break;
	case CATS_T_REQUEST:
		rc = bind_request(g.t, &r.u.request, now);
		break;
	case CATS_T_METRIC:
		rc = bind_metric(g.t, &r.u.metric, now);
		/* A metric is also for whoever is after us. */
		cats_buf_add(&g.held, p, n);
		g.passed++;
		schedule_flush();
		break;
	default:
		/* Not ours: passed on unchanged. */
		cats_buf_add(&g.held, p, n);
		g.passed++;
		schedule_flush();
		break;
	}
	refused("input", index, rc);
}

static void
in_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	(void)s;
	(void)arg;
	char msg[400];
	cats_errorx("%s", cats_err_fmt(e, index, msg, sizeof(msg)));
	g.in_records++;
	g.in_bad++;
	if (g.strict)
		stop(CATS_EXIT_DATAERR);
}

static void
in_eof(struct cats_stream *s, int error, void *arg)
{
	(void)s;
	(void)arg;
	if (error)
		cats_errorx("input: %s", strerror(error));
	g.stdin_eof = true;
	flush_all();
	if (!g.listening)
		stop(error ? CATS_EXIT_FAIL : CATS_EXIT_OK);
}

static void
out_drained(struct cats_stream *s, void *arg)
{
	(void)s;
	(void)arg;
	if (!g.paused)
		return;
	g.paused = false;
	if (g.in && !g.stdin_eof)
		cats_stream_resume(g.in);
	for (struct conn *c = g.conns; c; c = c->next)
		cats_stream_resume(c->s);
}

static void
out_eof(struct cats_stream *s, int error, void *arg)
{
	(void)s;
	(void)arg;
	if (error) {
		cats_errorx("output: %s", strerror(error));
		stop(CATS_EXIT_IOERR);
	}
}

/* ---- forwarders ---- */

static void
drop_conn(struct conn *c)
{
	struct conn **pp = &g.conns;
	while (*pp && *pp != c)
		pp = &(*pp)->next;
	if (*pp)
		*pp = c->next;
	g.nconns--;
	if (c->named) {
		cats_htab_del(&g.byname, cats_hash_str(c->fwd), conn_eq, c->fwd);
		bind_fwd_gone(g.t, c->fwd);
		cats_info("forwarder %s disconnected", c->fwd);
	}
	cats_stream_free(c->s);
	cats_buf_free(&c->held);
	free(c->fwd);
	free(c);
}

static void
conn_item(struct cats_stream *s, const uint8_t *p, size_t n, uint64_t index,
    const struct cats_peer *peer, void *arg)
{
	struct conn *c = arg;
	struct cats_rec r;
	struct cats_err e;
	(void)s;
	(void)peer;
	memset(&e, 0, sizeof(e));
	if (cats_rec_from_toks(&g.dec, &r, &e) < 0) {
		char msg[400];
		cats_errorx("forwarder %s: %s", c->fwd ? c->fwd : "?",
		    cats_err_fmt(&e, index, msg, sizeof(msg)));
		g.in_bad++;
		return;
	}
	if (r.type != CATS_T_STATUS) {
		cats_warnx("forwarder %s: record %" PRIu64 ": a %s record, "
		    "expected status", c->fwd ? c->fwd : "?", index,
		    cats_type_name(r.type));
		g.in_bad++;
		return;
	}
	const struct cats_status *st = &r.u.status;
	if (g.keys.n > 0) {
		const struct cats_key *who = NULL;
		if (cats_rec_verify(&r, &g.keys, &who, &e) < 0 ||
		    strcmp(who->name, st->fwd) != 0) {
			cats_audit("auth-refused", "fwd=%s reason=%s", st->fwd,
			    who ? "key of another forwarder" : e.reason);
			g.auth_refused++;
			if (c->fwd == NULL)
				drop_conn(c);
			return;
		}
	}
	if (cats_clock_replay())
		cats_clock_observe(st->ts);
	uint64_t now = now_ms();
	/* Authenticated channels: a recorded session replayed later is stale. */
	if (g.keys.n > 0 && !cats_clock_replay() &&
	    (st->ts + AUTH_WINDOW_MS < now || st->ts > now + AUTH_WINDOW_MS)) {
		cats_audit("auth-refused", "fwd=%s reason=timestamp %" PRIu64
		    " outside now +/- %d ms", st->fwd, st->ts, AUTH_WINDOW_MS);
		g.auth_refused++;
		if (c->fwd == NULL)
			drop_conn(c);
		return;
	}
	if (c->fwd == NULL) {
		if (st->event != CATS_EV_HELLO) {
			cats_warnx("connection: record %" PRIu64 ": the first "
			    "record must be a hello", index);
			drop_conn(c);
			return;
		}
		struct conn *old = conn_by_name(st->fwd);
		if (old != NULL) {
			/* The newer connection owns the name. */
			cats_warnx("forwarder %s reconnected; the older "
			    "connection is dropped", st->fwd);
			drop_conn(old);
		}
		c->fwd = strdup(st->fwd);
		if (c->fwd == NULL || cats_htab_put(&g.byname,
		    cats_hash_str(c->fwd), c) < 0) {
			drop_conn(c);
			return;
		}
		c->named = true;
		cats_info("forwarder %s connected (epoch %" PRIu64 ")", c->fwd,
		    CATS_HAS(st, STA, epoch) ? st->epoch : 0);
	} else if (strcmp(st->fwd, c->fwd) != 0) {
		cats_audit("impersonation", "conn=%s claimed=%s", c->fwd,
		    st->fwd);
		g.imperson++;
		return;
	}
	refused(c->fwd, index, bind_status(g.t, st, now));
}

static void
conn_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	struct conn *c = arg;
	char msg[400];
	(void)s;
	cats_errorx("forwarder %s: %s", c->fwd ? c->fwd : "?",
	    cats_err_fmt(e, index, msg, sizeof(msg)));
	g.in_bad++;
}

static void
conn_eof(struct cats_stream *s, int error, void *arg)
{
	(void)s;
	(void)error;
	drop_conn(arg);
}

static void
on_accept(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	(void)arg;
	for (int k = 0; k < 16; k++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (cfd < 0)
			return;
		if (g.nconns >= MAX_CONNS) {
			close(cfd);
			g.conns_refused++;
			continue;
		}
		struct conn *c = calloc(1, sizeof(*c));
		static const struct cats_stream_cbs cbs = { conn_item, conn_bad,
			conn_eof, NULL };
		if (c == NULL || (c->s = cats_stream_new(g.base, cfd, cfd,
		    false, NULL, 0, &cbs, c)) == NULL) {
			free(c);
			close(cfd);
			g.conns_refused++;
			continue;
		}
		cats_stream_own(c->s);
		cats_stream_decode_into(c->s, &g.dec);
		if (g.paused)
			cats_stream_pause(c->s);
		c->next = g.conns;
		g.conns = c;
		g.nconns++;
		g.conns_accepted++;
	}
}

/* ---- time and signals ---- */

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	uint64_t now = now_ms();
	if (!cats_clock_replay())
		bind_tick(g.t, now);
	if (g.j != NULL && g.fsync_ms && now - g.last_fsync >= g.fsync_ms) {
		bj_commit(g.j);
		bj_sync(g.j);
		g.last_fsync = now;
	}
	if (g.stats_ms && now - g.last_stats >= g.stats_ms) {
		emit_stats();
		g.last_stats = now;
	}
	if (g.j != NULL && bj_snapshot_wait(g.j, false) < 0)
		cats_errorx("journal: the background snapshot failed; the "
		    "segments stay");
	if (g.j != NULL && bj_snapshot_due(g.j)) {
		char err[512] = "";
		flush_all();
		if (bj_snapshot_async(g.j, g.t, now, err, sizeof(err)) < 0)
			cats_errorx("%s", err);
	}
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	(void)arg;
	if (sig == SIGUSR1) {
		emit_stats();
		return;
	}
	stop(CATS_EXIT_OK);
}

/* ---- setup ---- */

static int
parse_dur(const char *opt, const char *s, uint64_t *out)
{
	char err[128];
	if (cats_parse_ms(s, out, err, sizeof(err)) < 0) {
		cats_errorx("--%s: %s", opt, err);
		exit(CATS_EXIT_USAGE);
	}
	return 0;
}

static void
parse_limit(struct bind_conf *c, const char *s)
{
	static const struct { const char *name; size_t off; } names[] = {
		{ "pending", offsetof(struct bind_conf, max_pending) },
		{ "bindings", offsetof(struct bind_conf, max_bindings) },
		{ "tenant-pending", offsetof(struct bind_conf, tenant_pending) },
		{ "tenant-bindings", offsetof(struct bind_conf,
		    tenant_bindings) },
		{ "client-pending", offsetof(struct bind_conf, client_pending) },
		{ "client-bindings", offsetof(struct bind_conf,
		    client_bindings) },
	};
	const char *eq = strchr(s, '=');
	char err[128];
	uint64_t v;
	for (size_t i = 0; eq && i < CATS_ARRAY_LEN(names); i++) {
		if (strlen(names[i].name) != (size_t)(eq - s) ||
		    strncmp(names[i].name, s, (size_t)(eq - s)) != 0)
			continue;
		if (cats_parse_u64(eq + 1, 0, CATS_U32, &v, err,
		    sizeof(err)) < 0) {
			cats_errorx("--limit %s: %s", s, err);
			exit(CATS_EXIT_USAGE);
		}
		*(uint32_t *)((char *)c + names[i].off) = (uint32_t)v;
		return;
	}
	cats_errorx("--limit %s: expected NAME=N, NAME one of pending, "
	    "bindings, tenant-pending, tenant-bindings, client-pending, "
	    "client-bindings", s);
	exit(CATS_EXIT_USAGE);
}

static unsigned
parse_dataplanes(const char *s)
{
	unsigned mask = 0;
	char *dup = strdup(s), *save = NULL;
	for (char *w = strtok_r(dup, ",", &save); w; w = strtok_r(NULL, ",",
	    &save)) {
		int i = cats_enum_index(cats_dataplane_names, w, strlen(w));
		if (i < 0) {
			cats_errorx("--dataplanes: unknown data plane \"%s\" "
			    "(ip, ipip, srv6, srmpls)", w);
			exit(CATS_EXIT_USAGE);
		}
		mask |= 1u << i;
	}
	free(dup);
	return mask;
}

static int
pick(const char *opt, const char *s, const char *const *names)
{
	int i = cats_enum_index(names, s, strlen(s));
	if (i < 0) {
		cats_errorx("--%s: unknown value \"%s\"", opt, s);
		exit(CATS_EXIT_USAGE);
	}
	return i;
}

static void
dump_one(void *arg, const struct cats_rec *r)
{
	struct cats_buf *b = arg;
	cats_rec_encode(r, b, false);
	if (b->len >= HELD_FLUSH) {
		if (cats_write_all(1, b->p, b->len) < 0) {
			cats_errorx("output: %s", strerror(errno));
			exit(CATS_EXIT_IOERR);
		}
		b->len = 0;
	}
}

static int
do_dump(struct bind_conf *c, const char *dir)
{
	char err[512] = "";
	struct bj *j = bj_open(dir, true, BJ_FSYNC_NEVER, err, sizeof(err));
	if (j == NULL) {
		cats_errorx("%s", err);
		return CATS_EXIT_NOINPUT;
	}
	struct bind_table *t = bind_new(c, NULL);
	if (t == NULL || bj_restore(j, t, now_ms(), err, sizeof(err)) < 0) {
		cats_errorx("%s", err[0] ? err : "out of memory");
		return CATS_EXIT_FAIL;
	}
	const struct bj_stats *s = bj_stats(j);
	if (s->torn)
		cats_warnx("%s: a torn tail of %" PRIu64 " bytes (left in place)",
		    dir, s->torn_bytes);
	struct cats_buf b = { 0 };
	bind_foreach(t, (1u << CATS_FS_BINDING_READY) | (1u << CATS_FS_ACTIVE),
	    now_ms(), dump_one, &b);
	if (cats_write_all(1, b.p, b.len) < 0) {
		cats_errorx("output: %s", strerror(errno));
		return CATS_EXIT_IOERR;
	}
	cats_buf_free(&b);
	cats_info("%zu bindings, epoch %" PRIu64, bind_count(t), bind_epoch(t));
	bind_free(t);
	bj_close(j);
	return CATS_EXIT_OK;
}

int
main(int argc, char **argv)
{
	enum {
		O_COMMIT = 256, O_COMMIT_TIMEOUT, O_DATAPLANES, O_DRAIN, O_DUMP,
		O_FSYNC, O_FSYNC_INT, O_HARD, O_ID, O_IDLE, O_JOURNAL, O_KEY,
		O_KEYS, O_LIMIT, O_LISTEN, O_PENDING, O_REPAIR, O_REPLAY,
		O_SNAPSHOT, O_STATS, O_STATS_INT, O_TRACE,
	};
	static const struct option longopts[] = {
		{ "commit", required_argument, NULL, O_COMMIT },
		{ "commit-timeout", required_argument, NULL, O_COMMIT_TIMEOUT },
		{ "dataplanes", required_argument, NULL, O_DATAPLANES },
		{ "drain-timeout", required_argument, NULL, O_DRAIN },
		{ "dump", no_argument, NULL, O_DUMP },
		{ "fsync", required_argument, NULL, O_FSYNC },
		{ "fsync-interval", required_argument, NULL, O_FSYNC_INT },
		{ "hard", required_argument, NULL, O_HARD },
		{ "help", no_argument, NULL, 'h' },
		{ "id", required_argument, NULL, O_ID },
		{ "idle", required_argument, NULL, O_IDLE },
		{ "journal", required_argument, NULL, O_JOURNAL },
		{ "key", required_argument, NULL, O_KEY },
		{ "keys", required_argument, NULL, O_KEYS },
		{ "limit", required_argument, NULL, O_LIMIT },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "pending-timeout", required_argument, NULL, O_PENDING },
		{ "quiet", no_argument, NULL, 'q' },
		{ "repair-timeout", required_argument, NULL, O_REPAIR },
		{ "replay", no_argument, NULL, O_REPLAY },
		{ "snapshot-size", required_argument, NULL, O_SNAPSHOT },
		{ "stats", no_argument, NULL, O_STATS },
		{ "stats-interval", required_argument, NULL, O_STATS_INT },
		{ "strict", no_argument, NULL, 's' },
		{ "trace", required_argument, NULL, O_TRACE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct bind_conf conf;
	const char *journal = NULL, *listen_ep = NULL, *trace = NULL;
	const char *keyfile = NULL, *keysfile = NULL;
	bool dump = false, replay = false;
	int fsync_policy = BJ_FSYNC_ALWAYS, verbosity = 1, ch;
	uint64_t snap_min = 0, v;
	char err[512];

	cats_tool_init(argv[0]);
	bind_conf_default(&conf);
	g.fsync_ms = 1000;
	g.listen_fd = -1;
	while ((ch = getopt_long(argc, argv, "hqsvV", longopts, NULL)) != -1) {
		switch (ch) {
		case O_COMMIT:
			conf.commit = pick("commit", optarg, bind_commit_names);
			break;
		case O_COMMIT_TIMEOUT:
			parse_dur("commit-timeout", optarg, &conf.commit_ms);
			break;
		case O_DATAPLANES:
			conf.dataplanes = parse_dataplanes(optarg);
			break;
		case O_DRAIN:
			parse_dur("drain-timeout", optarg, &conf.drain_ms);
			break;
		case O_DUMP:
			dump = true;
			break;
		case O_FSYNC:
			fsync_policy = pick("fsync", optarg, bj_fsync_names);
			break;
		case O_FSYNC_INT:
			parse_dur("fsync-interval", optarg, &g.fsync_ms);
			break;
		case O_HARD:
			parse_dur("hard", optarg, &v);
			if (v > CATS_U32)
				usage();
			conf.hard_ms = v;
			break;
		case O_ID:
			if (strlen(optarg) == 0 || strlen(optarg) > CATS_ID)
				usage();
			conf.self = optarg;
			break;
		case O_IDLE:
			parse_dur("idle", optarg, &v);
			if (v > CATS_U32)
				usage();
			conf.idle_ms = v;
			break;
		case O_JOURNAL:
			journal = optarg;
			break;
		case O_KEY:
			keyfile = optarg;
			break;
		case O_KEYS:
			keysfile = optarg;
			break;
		case O_LIMIT:
			parse_limit(&conf, optarg);
			break;
		case O_LISTEN:
			listen_ep = optarg;
			break;
		case O_PENDING:
			parse_dur("pending-timeout", optarg, &conf.pending_ms);
			break;
		case O_REPAIR:
			parse_dur("repair-timeout", optarg, &conf.repair_ms);
			break;
		case O_REPLAY:
			replay = true;
			break;
		case O_SNAPSHOT:
			if (cats_parse_size(optarg, &snap_min, err,
			    sizeof(err)) < 0) {
				cats_errorx("--snapshot-size: %s", err);
				return CATS_EXIT_USAGE;
			}
			break;
		case O_STATS:
			g.stats_at_exit = true;
			break;
		case O_STATS_INT:
			parse_dur("stats-interval", optarg, &g.stats_ms);
			break;
		case O_TRACE:
			trace = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return CATS_EXIT_OK;
		case 'q':
			verbosity = 0;
			break;
		case 's':
			g.strict = true;
			break;
		case 'v':
			verbosity++;
			break;
		case 'V':
			cats_tool_version();
			return CATS_EXIT_OK;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	cats_log_verbosity(verbosity);
	if (replay)
		cats_clock_set_mode(CATS_CLOCK_REPLAY);
	if (dump) {
		if (journal == NULL) {
			cats_errorx("--dump needs --journal");
			return CATS_EXIT_USAGE;
		}
		return do_dump(&conf, journal);
	}
	if (trace != NULL) {
		g.trace = fopen(trace, "a");
		if (g.trace == NULL) {
			cats_errorx("%s: %s", trace, strerror(errno));
			return CATS_EXIT_NOINPUT;
		}
		setvbuf(g.trace, NULL, _IOLBF, 0);
	}
	if (keyfile != NULL) {
		if (cats_key_load(&g.key, keyfile, -1, err, sizeof(err)) < 0 ||
		    g.key.kind == CATS_KEY_ED25519_PUBLIC) {
			cats_errorx("--key %s: %s", keyfile, g.key.kind ==
			    CATS_KEY_ED25519_PUBLIC ? "a public key cannot sign"
			    : err);
			return CATS_EXIT_NOPERM;
		}
		g.have_key = true;
	}
	if (keysfile != NULL && cats_keyring_load(&g.keys, keysfile, err,
	    sizeof(err)) < 0) {
		cats_errorx("--keys %s: %s", keysfile, err);
		return CATS_EXIT_NOPERM;
	}

	struct bind_io io = { io_send, io_journal, io_trace, NULL };
	g.t = bind_new(&conf, &io);
	if (g.t == NULL) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	cats_dec_init(&g.dec, NULL);
	/* Restore every established flow before anyone hears the new epoch. */
	uint64_t now = now_ms();
	if (journal != NULL) {
		g.j = bj_open(journal, false, fsync_policy, err, sizeof(err));
		if (g.j == NULL) {
			cats_errorx("%s", err);
			return CATS_EXIT_FAIL;
		}
		if (snap_min)
			bj_set_snapshot_min(g.j, snap_min);
		if (bj_restore(g.j, g.t, now, err, sizeof(err)) < 0 ||
		    bj_start(g.j, g.t, now, err, sizeof(err)) < 0) {
			cats_errorx("%s", err);
			return CATS_EXIT_FAIL;
		}
		const struct bj_stats *s = bj_stats(g.j);
		if (s->torn)
			cats_warnx("%s: dropped a torn tail of %" PRIu64
			    " bytes", journal, s->torn_bytes);
		cats_info("restored %zu bindings from %s, epoch %" PRIu64,
		    bind_count(g.t), journal, bind_epoch(g.t));
	} else {
		/* No journal: an epoch that still grows across restarts. */
		bind_set_epoch(g.t, replay ? 1 : now / 1000);
	}
	if (fsync_policy != BJ_FSYNC_INTERVAL)
		g.fsync_ms = 0;

	g.base = event_base_new();
	if (g.base == NULL) {
		cats_errorx("cannot create the event loop");
		return CATS_EXIT_FAIL;
	}
	g.flush_ev = event_new(g.base, -1, 0, on_flush, NULL);
	g.tick_ev = event_new(g.base, -1, EV_PERSIST, on_tick, NULL);
	g.sig_term = evsignal_new(g.base, SIGTERM, on_signal, NULL);
	g.sig_int = evsignal_new(g.base, SIGINT, on_signal, NULL);
	g.sig_usr1 = evsignal_new(g.base, SIGUSR1, on_signal, NULL);
	struct timeval tv = { 0, 50000 };
	event_add(g.tick_ev, &tv);
	event_add(g.sig_term, NULL);
	event_add(g.sig_int, NULL);
	event_add(g.sig_usr1, NULL);
	static const struct cats_stream_cbs out_cbs = { NULL, NULL, out_eof,
		out_drained };
	static const struct cats_stream_cbs in_cbs = { in_item, in_bad, in_eof,
		NULL };
	g.out = cats_stream_new(g.base, -1, 1, false, NULL, 0, &out_cbs, NULL);
	if (g.out == NULL) {
		cats_errorx("output: %s", strerror(errno));
		return CATS_EXIT_IOERR;
	}
	if (listen_ep != NULL) {
		struct cats_ep ep;
		if (cats_ep_parse(listen_ep, &ep, err, sizeof(err)) < 0) {
			cats_errorx("--listen %s: %s", listen_ep, err);
			return CATS_EXIT_USAGE;
		}
		if (ep.kind != CATS_EP_UNIX && ep.kind != CATS_EP_TCP) {
			cats_errorx("--listen %s: forwarders connect over unix: "
			    "or tcp:", listen_ep);
			return CATS_EXIT_USAGE;
		}
		g.listen_fd = cats_ep_listen(&ep, err, sizeof(err));
		if (g.listen_fd < 0) {
			cats_errorx("--listen %s: %s", listen_ep, err);
			return CATS_EXIT_FAIL;
		}
		if (ep.kind == CATS_EP_UNIX)
			cats_strlcpy(g.sock_path, ep.path, sizeof(g.sock_path));
		g.listen_ev = event_new(g.base, g.listen_fd, EV_READ |
		    EV_PERSIST, on_accept, NULL);
		event_add(g.listen_ev, NULL);
		g.listening = true;
	}
	g.in = cats_stream_new(g.base, 0, -1, false, NULL, 0, &in_cbs, NULL);
	if (g.in == NULL) {
		cats_errorx("input: %s", strerror(errno));
		return CATS_EXIT_NOINPUT;
	}
	cats_stream_decode_into(g.in, &g.dec);
	g.last_fsync = g.last_stats = now_ms();

	event_base_dispatch(g.base);

	/* Clean stop: what is held goes out, then a snapshot. */
	flush_all();
	if (g.stats_at_exit)
		emit_stats();
	flush_all();
	cats_stream_flush(g.out);
	for (struct conn *c = g.conns; c; c = c->next)
		cats_stream_flush(c->s);
	if (g.j != NULL) {
		if (g.exit_code != CATS_EXIT_FAIL &&
		    bj_snapshot(g.j, g.t, now_ms(), err, sizeof(err)) < 0)
			cats_errorx("%s", err);
		bj_close(g.j);
	}
	int rc = g.exit_code;
	if (rc == CATS_EXIT_OK && g.in_bad > 0)
		rc = CATS_EXIT_DATAERR;
	while (g.conns)
		drop_conn(g.conns);
	cats_stream_free(g.in);
	cats_stream_free(g.out);
	if (g.listen_ev)
		event_free(g.listen_ev);
	if (g.listen_fd >= 0)
		close(g.listen_fd);
	if (g.sock_path[0])
		unlink(g.sock_path);
	event_free(g.flush_ev);
	event_free(g.tick_ev);
	event_free(g.sig_term);
	event_free(g.sig_int);
	event_free(g.sig_usr1);
	event_base_free(g.base);
	cats_htab_free(&g.byname);
	cats_keyring_free(&g.keys);
	cats_buf_free(&g.held);
	cats_dec_free(&g.dec);
	bind_free(g.t);
	if (g.trace)
		fclose(g.trace);
	return rc;
}
