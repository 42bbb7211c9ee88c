/*
 * cats-pce - the PCE function: path-req records in, path-rep records out,
 * over a TE database (cats-pce(1), cats-topology(5)).
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

#include "base/clock.h"
#include "base/conf.h"
#include "sec/crypto.h"
#include "net/ep.h"
#include "rec/json.h"
#include "base/log.h"
#include "pce/pce.h"
#include "rec/seq.h"
#include "base/tool.h"

static const char usage_text[] =
    "usage: cats-pce -t file [-v] [--listen endpoint | --to endpoint]\n"
    "                [--keys keyring [--window duration]] [--key key]\n"
    "                [--insecure] [--cache n] [--max-labels n] [--replay]\n"
    "                [--stats] [--strict]\n"
    "       cats-pce -t file --check\n"
    "       cats-pce --help | --version\n";

static void
usage(void)
{
	fputs(usage_text, stderr);
	exit(CATS_EXIT_USAGE);
}

struct session;

struct pce_tool {
	struct event_base *base;
	struct cats_pce pce;
	const char *tedb;
	bool strict, stats, replay;
	/* stdio mode: two one-way streams; listen mode: sessions */
	struct cats_stream *in, *out;
	int lfd;
	bool dgram;
	struct event *lev;
	struct cats_dec dec;
	struct cats_arena arena;
	struct cats_toks toks;
	/* channel security */
	struct cats_keyring keys;	/* accepted senders; n == 0: none */
	struct cats_key sign;		/* kind -1: do not sign */
	struct cats_pce_guard *guard;
	/* counters */
	uint64_t records, bad, passed, net_applied, net_refused, reloads,
	    reload_failed, sessions, unauthorized;
	int exit_code;
};

struct session {
	struct pce_tool *t;
	struct cats_stream *s;
};

static struct pce_tool T;

/* ---- replies ---- */

/* Send a record (encoded bytes) to where the item came from. */
static void
reply(struct cats_stream *from, const struct cats_peer *peer,
    const uint8_t *p, size_t n)
{
	struct pce_tool *t = &T;
	struct cats_stream *to = t->out ? t->out : from;
	int rc = peer ? cats_stream_sendto(to, peer, p, n) :
	    cats_stream_send(to, p, n);
	if (rc < 0) {
		if (t->out) {
			cats_errorx("output failed");
			t->exit_code = CATS_EXIT_IOERR;
			event_base_loopbreak(t->base);
		}
		return;
	}
	/* Back-pressure: stop reading until the output drains. */
	if (rc == 1)
		cats_stream_pause(from);
}

static void
reply_rec(struct cats_stream *from, const struct cats_peer *peer,
    const struct cats_rec *r0)
{
	struct cats_buf b = { 0 };
	struct cats_rec copy = *r0;
	const struct cats_rec *r = &copy;
	if (T.sign.kind >= 0 && cats_rec_sign(&copy, &T.sign) < 0) {
		cats_errorx("cannot sign a %s record", cats_type_name(r->type));
		return;
	}
	if (cats_rec_encode(r, &b, true) < 0) {
		cats_errorx("cannot encode a %s record", cats_type_name(r->type));
	} else {
		reply(from, peer, b.p, b.len);
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
bad_request(struct cats_stream *from, const struct cats_peer *peer,
    const struct cats_tok *tk, uint64_t index, const struct cats_err *e)
{
	struct pce_tool *t = &T;
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
		ok = cats_rec_from_json(&t->dec, j, &r, &e2);
	}
	if (ok == 0)
		reply_rec(from, peer, &r);
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
count_bad(struct pce_tool *t, struct cats_stream *s)
{
	t->bad++;
	if (t->exit_code == 0)
		t->exit_code = CATS_EXIT_DATAERR;
	if (t->strict) {
		cats_stream_pause(s);
		event_base_loopexit(t->base, NULL);
	}
}

/*
 * A path request or net record on an authenticated channel: verified
 * against the keyring, inside the time window, not seen before.  A request
 * that fails gets an "unauthorized" error (fail closed: no path), and the
 * failure is audited.
 */
static bool
authentic(struct pce_tool *t, struct cats_stream *s,
    const struct cats_peer *peer, const struct cats_rec *r, uint64_t index)
{
	struct cats_err e;
	const struct cats_key *who = NULL;
	const char *why;
	memset(&e, 0, sizeof(e));
	uint64_t ts = r->type == CATS_T_PATH_REQ ? r->u.preq.ts : r->u.net.ts;
	if (cats_rec_verify(r, &t->keys, &who, &e) < 0) {
		why = e.reason;
	} else {
		int g = cats_pce_guard_check(t->guard, r, ts, cats_clock_now());
		if (g == CATS_GUARD_OK)
			return true;
		why = cats_pce_guard_reason(g);
	}
	t->unauthorized++;
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
	cats_rec_init(&er, CATS_T_ERROR);
	er.u.error.code = "unauthorized";
	CATS_SET(&er.u.error, ERR, ts, cats_clock_now());
	CATS_SET(&er.u.error, ERR, txn, q->txn);
	CATS_SET(&er.u.error, ERR, index, index);
	er.u.error.stage = "cats-pce";
	snprintf(msg, sizeof(msg), "path request refused: %s", why);
	er.u.error.msg = msg;
	er.u.error.ingress = q->ingress ? q->ingress : q->headend;
	if (CATS_HAS(q, PRQ, flow)) {
		er.u.error.flow = q->flow;
		er.u.error.has |= UINT64_C(1) << CATS_ERR_flow;
	}
	reply_rec(s, peer, &er);
	return false;
}

static void
on_item(struct cats_stream *s, const uint8_t *p, size_t n, uint64_t index,
    const struct cats_peer *peer, void *arg)
{
	struct pce_tool *t = &T;
	struct cats_rec r;
	struct cats_err e;
	char msg[400];
	(void)arg;
	t->records++;
	memset(&e, 0, sizeof(e));
	if (cats_rec_decode(&t->dec, p, n, &r, &e) < 0) {
		/* Which type was it meant to be? */
		size_t used = 0;
		struct cats_err e2;
		int type = -1;
		if (cats_scan(p, n, true, &t->dec.lim, &t->toks, NULL, &used,
		    NULL, &e2) == CATS_SCAN_OK)
			type = peek_type(t->toks.t);
		cats_errorx("%s", cats_err_fmt(&e, index, msg, sizeof(msg)));
		count_bad(t, s);
		if (type == CATS_T_PATH_REQ)
			bad_request(s, peer, t->toks.t, index, &e);
		else if (type >= 0)
			reply(s, peer, p, n);	/* not ours to judge */
		return;
	}
	if (t->replay) {
		uint64_t ts = 0;
		if (r.type == CATS_T_PATH_REQ)
			ts = r.u.preq.ts;
		else if (r.type == CATS_T_NET)
			ts = r.u.net.ts;
		cats_clock_observe(ts);
	}
	if (t->keys.n > 0 && (r.type == CATS_T_PATH_REQ ||
	    r.type == CATS_T_NET) && !authentic(t, s, peer, &r, index)) {
		/* An unauthenticated net record is not applied; it is not
		 * ours to drop either. */
		if (r.type == CATS_T_NET)
			reply(s, peer, p, n);
		return;
	}
	if (r.type == CATS_T_PATH_REQ) {
		struct cats_rec rep;
		cats_arena_reset(&t->arena);
		if (cats_pce_answer(&t->pce, &r.u.preq, cats_clock_now(), &rep,
		    &t->arena) < 0) {
			cats_errorx("record %" PRIu64 ": out of memory", index);
			struct cats_err oom;
			cats_err_set(&oom, "", "out of memory");
			bad_request(s, peer, NULL, index, &oom);
			return;
		}
		reply_rec(s, peer, &rep);
		return;
	}
	if (r.type == CATS_T_NET) {
		char err[300];
		int rc = cats_te_apply_net(t->pce.te, &r.u.net, err, sizeof(err));
		if (rc < 0) {
			cats_warnx("record %" PRIu64 ": net: %s", index, err);
			t->net_refused++;
		} else if (rc == 0) {
			t->net_applied++;
			cats_debug("record %" PRIu64 ": net applied, generation "
			    "%" PRIu64, index, cats_te_gen(t->pce.te));
		}
	}
	t->passed++;
	reply(s, peer, p, n);
}

static void
on_bad(struct cats_stream *s, uint64_t index, const struct cats_err *e,
    void *arg)
{
	char msg[400];
	(void)s;
	(void)arg;
	cats_errorx("%s", cats_err_fmt(e, index, msg, sizeof(msg)));
	T.records++;
	count_bad(&T, s);
}

static void
on_stdin_eof(struct cats_stream *s, int error, void *arg)
{
	(void)s;
	(void)arg;
	if (error != 0) {
		cats_errorx("input: %s", strerror(error));
		T.exit_code = CATS_EXIT_FAIL;
	}
	event_base_loopexit(T.base, NULL);
}

static void
on_out_drained(struct cats_stream *s, void *arg)
{
	(void)s;
	(void)arg;
	if (T.in)
		cats_stream_resume(T.in);
}

static void
on_out_eof(struct cats_stream *s, int error, void *arg)
{
	(void)s;
	(void)arg;
	cats_errorx("output: %s", strerror(error ? error : EPIPE));
	T.exit_code = CATS_EXIT_IOERR;
	event_base_loopbreak(T.base);
}

/* ---- listen mode ---- */

static void
session_eof(struct cats_stream *s, int error, void *arg)
{
	struct session *ss = arg;
	(void)s;
	if (error)
		cats_debug("session: %s", strerror(error));
	cats_stream_flush(ss->s);
	cats_stream_free(ss->s);
	free(ss);
}

static void
session_drained(struct cats_stream *s, void *arg)
{
	(void)arg;
	cats_stream_resume(s);
}

static const struct cats_stream_cbs session_cbs = {
	.item = on_item, .bad = on_bad, .eof = session_eof,
	.drained = session_drained,
};

static void
on_accept(evutil_socket_t fd, short what, void *arg)
{
	struct pce_tool *t = arg;
	(void)what;
	int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (c < 0)
		return;
	struct session *ss = calloc(1, sizeof(*ss));
	if (ss == NULL) {
		close(c);
		return;
	}
	ss->t = t;
	ss->s = cats_stream_new(t->base, c, c, false, NULL, 0, &session_cbs,
	    ss);
	if (ss->s == NULL) {
		close(c);
		free(ss);
		return;
	}
	cats_stream_own(ss->s);
	t->sessions++;
}

/* ---- signals ---- */

static void
print_stats(struct pce_tool *t)
{
	const struct cats_pce_counters *c = &t->pce.c;
	struct cats_kv kv[] = {
		{ "records", t->records }, { "bad", t->bad },
		{ "requests", c->requests }, { "ok", c->ok },
		{ "no_path", c->no_path }, { "errors", c->errors },
		{ "expired", c->expired }, { "exact_searches", c->exact_searches },
		{ "labels", c->labels }, { "settled", c->settled },
		{ "cache_hits", c->cache_hits },
		{ "passed", t->passed }, { "net_applied", t->net_applied },
		{ "net_refused", t->net_refused }, { "reloads", t->reloads },
		{ "reload_failed", t->reload_failed },
		{ "sessions", t->sessions },
		{ "unauthorized", t->unauthorized },
		{ "generation", t->pce.te ? cats_te_gen(t->pce.te) : 0 },
	};
	struct cats_rec r;
	cats_stats_rec(&r, "cats-pce", NULL, kv, CATS_ARRAY_LEN(kv),
	    cats_clock_now());
	cats_rec_print_json(&r, stderr);
	fflush(stderr);
}

/* Load the database again; keep the old one when the new one is bad. */
static void
reload(struct pce_tool *t)
{
	char err[600];
	bool missing;
	uint64_t old = t->pce.te ? cats_te_gen(t->pce.te) : 0;
	struct cats_te *te = cats_te_load(t->tedb, NULL, old + 1, &missing,
	    err, sizeof(err));
	if (te == NULL) {
		t->reload_failed++;
		cats_errorx("reload refused, keeping generation %" PRIu64 ": %s",
		    old, err);
		cats_audit("tedb-reload-refused", "file=%s gen=%" PRIu64,
		    t->tedb, old);
		return;
	}
	/* Generations never go back, whatever the file says. */
	if (te->gen <= old)
		te->gen = old + 1;
	cats_pce_set_te(&t->pce, te);
	t->reloads++;
	cats_info("reloaded %s: %" PRIu32 " nodes, %" PRIu32 " links, "
	    "generation %" PRIu64, t->tedb, cats_te_nodes(te),
	    cats_te_links(te), cats_te_gen(te));
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct pce_tool *t = arg;
	(void)what;
	switch (sig) {
	case SIGHUP:
		reload(t);
		break;
	case SIGUSR1:
		print_stats(t);
		break;
	default:
		event_base_loopexit(t->base, NULL);
		break;
	}
}

static int
check_only(const char *path)
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

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cache", required_argument, NULL, 'C' },
		{ "check", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "insecure", no_argument, NULL, 'I' },
		{ "key", required_argument, NULL, 'K' },
		{ "keys", required_argument, NULL, 'k' },
		{ "listen", required_argument, NULL, 'l' },
		{ "max-labels", required_argument, NULL, 'L' },
		{ "replay", no_argument, NULL, 'r' },
		{ "stats", no_argument, NULL, 'S' },
		{ "strict", no_argument, NULL, 's' },
		{ "tedb", required_argument, NULL, 't' },
		{ "to", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "window", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	struct pce_tool *t = &T;
	const char *listen_ep = NULL, *to_ep = NULL;
	bool check = false, insecure = false;
	const char *keys_path = NULL, *key_path = NULL;
	uint64_t window = 30000;
	size_t cache = CATS_PCE_CACHE_DEFAULT;
	int verbose = 1, ch;
	uint64_t v;
	char err[512];

	cats_tool_init(argv[0]);
	t->lfd = -1;
	while ((ch = getopt_long(argc, argv, "C:chIK:k:l:L:rSso:t:vVw:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'C':
			if (cats_parse_u64(optarg, 0, 1000000, &v, err,
			    sizeof(err)) < 0) {
				cats_errorx("--cache: %s", err);
				return CATS_EXIT_USAGE;
			}
			cache = (size_t)v;
			break;
		case 'c':
			check = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return CATS_EXIT_OK;
		case 'I':
			insecure = true;
			break;
		case 'K':
			key_path = optarg;
			break;
		case 'k':
			keys_path = optarg;
			break;
		case 'l':
			listen_ep = optarg;
			break;
		case 'L':
			if (cats_parse_u64(optarg, 1, UINT32_MAX - 1, &v, err,
			    sizeof(err)) < 0) {
				cats_errorx("--max-labels: %s", err);
				return CATS_EXIT_USAGE;
			}
			t->pce.max_labels = (size_t)v;
			break;
		case 'o':
			to_ep = optarg;
			break;
		case 'r':
			t->replay = true;
			break;
		case 'S':
			t->stats = true;
			break;
		case 's':
			t->strict = true;
			break;
		case 't':
			t->tedb = optarg;
			break;
		case 'v':
			verbose++;
			break;
		case 'V':
			cats_tool_version();
			return CATS_EXIT_OK;
		case 'w':
			if (cats_parse_ms(optarg, &window, err,
			    sizeof(err)) < 0 || window == 0) {
				cats_errorx("--window: %s", window ? err :
				    "must be positive");
				return CATS_EXIT_USAGE;
			}
			break;
		default:
			usage();
		}
	}
	if (optind != argc || t->tedb == NULL || (listen_ep && to_ep))
		usage();
	cats_log_verbosity(verbose);
	if (check)
		return check_only(t->tedb);
	t->sign.kind = -1;
	if (keys_path != NULL) {
		if (cats_keyring_load(&t->keys, keys_path, err,
		    sizeof(err)) < 0) {
			cats_errorx("--keys: %s", err);
			return CATS_EXIT_NOPERM;
		}
		if (t->keys.n == 0) {
			cats_errorx("--keys: %s: no key", keys_path);
			return CATS_EXIT_NOPERM;
		}
		t->guard = cats_pce_guard_new(window, (size_t)1 << 20);
		if (t->guard == NULL) {
			cats_errorx("out of memory");
			return CATS_EXIT_FAIL;
		}
	}
	if (key_path != NULL) {
		if (cats_key_load(&t->sign, key_path, -1, err,
		    sizeof(err)) < 0) {
			cats_errorx("--key: %s", err);
			return CATS_EXIT_NOPERM;
		}
		if (t->sign.kind == CATS_KEY_ED25519_PUBLIC) {
			cats_errorx("--key: %s: a public key cannot sign",
			    key_path);
			return CATS_EXIT_NOPERM;
		}
	}

	size_t max_labels = t->pce.max_labels;
	bool missing;
	struct cats_te *te = cats_te_load(t->tedb, NULL, 1, &missing, err,
	    sizeof(err));
	if (te == NULL) {
		cats_errorx("%s", err);
		return missing ? CATS_EXIT_NOINPUT : CATS_EXIT_CONFIG;
	}
	if (cats_pce_init(&t->pce, te) < 0) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	t->pce.max_labels = max_labels;
	t->pce.cache_max = cache;
	if (t->replay)
		cats_clock_set_mode(CATS_CLOCK_REPLAY);
	cats_dec_init(&t->dec, NULL);
	t->base = event_base_new();
	if (t->base == NULL) {
		cats_errorx("cannot create the event loop");
		return CATS_EXIT_FAIL;
	}
	struct event *sigs[4];
	int signos[4] = { SIGHUP, SIGUSR1, SIGTERM, SIGINT };
	for (int i = 0; i < 4; i++) {
		sigs[i] = evsignal_new(t->base, signos[i], on_signal, t);
		event_add(sigs[i], NULL);
	}

	if (listen_ep != NULL) {
		struct cats_ep ep;
		if (cats_ep_parse(listen_ep, &ep, err, sizeof(err)) < 0) {
			cats_errorx("--listen: %s", err);
			return CATS_EXIT_USAGE;
		}
		if (ep.kind != CATS_EP_UNIX && ep.kind != CATS_EP_TCP &&
		    ep.kind != CATS_EP_UDP) {
			cats_errorx("--listen: %s: expected unix:, tcp: or udp:",
			    listen_ep);
			return CATS_EXIT_USAGE;
		}
		/* A network channel to the C-PS must be authenticated. */
		if (ep.kind != CATS_EP_UNIX && keys_path == NULL && !insecure) {
			cats_errorx("--listen: %s: a network channel needs "
			    "--keys (or --insecure)", listen_ep);
			return CATS_EXIT_USAGE;
		}
		t->lfd = cats_ep_listen(&ep, err, sizeof(err));
		if (t->lfd < 0) {
			cats_errorx("--listen: %s", err);
			return CATS_EXIT_FAIL;
		}
		t->dgram = cats_ep_is_dgram(&ep);
		if (t->dgram) {
			struct session *ss = calloc(1, sizeof(*ss));
			static const struct cats_stream_cbs dcbs = {
				.item = on_item, .bad = on_bad,
			};
			ss->t = t;
			ss->s = cats_stream_new(t->base, t->lfd, t->lfd, true,
			    NULL, 0, &dcbs, ss);
			if (ss->s == NULL) {
				cats_errorx("out of memory");
				return CATS_EXIT_FAIL;
			}
		} else {
			t->lev = event_new(t->base, t->lfd, EV_READ |
			    EV_PERSIST, on_accept, t);
			event_add(t->lev, NULL);
		}
		cats_info("listening on %s, %" PRIu32 " nodes, generation %"
		    PRIu64, listen_ep, cats_te_nodes(te), cats_te_gen(te));
	} else {
		int ofd = 1;
		if (to_ep != NULL) {
			struct cats_ep ep;
			if (cats_ep_parse(to_ep, &ep, err, sizeof(err)) < 0) {
				cats_errorx("--to: %s", err);
				return CATS_EXIT_USAGE;
			}
			ofd = cats_ep_open(&ep, true, err, sizeof(err));
			if (ofd < 0) {
				cats_errorx("--to: %s", err);
				return CATS_EXIT_FAIL;
			}
		}
		static const struct cats_stream_cbs incbs = {
			.item = on_item, .bad = on_bad, .eof = on_stdin_eof,
		};
		static const struct cats_stream_cbs outcbs = {
			.eof = on_out_eof, .drained = on_out_drained,
		};
		t->out = cats_stream_new(t->base, -1, ofd, false, NULL, 0,
		    &outcbs, t);
		t->in = cats_stream_new(t->base, 0, -1, false, NULL, 0, &incbs,
		    t);
		if (t->in == NULL || t->out == NULL) {
			cats_errorx("out of memory");
			return CATS_EXIT_FAIL;
		}
	}

	event_base_dispatch(t->base);

	if (t->out != NULL && cats_stream_flush(t->out) < 0 &&
	    t->exit_code != CATS_EXIT_IOERR) {
		cats_errorx("output: %s", strerror(errno));
		t->exit_code = CATS_EXIT_IOERR;
	}
	if (t->stats)
		print_stats(t);
	if (t->bad)
		cats_warnx("%" PRIu64 " of %" PRIu64 " records were invalid",
		    t->bad, t->records);
	cats_stream_free(t->in);
	cats_stream_free(t->out);
	for (int i = 0; i < 4; i++)
		event_free(sigs[i]);
	if (t->lev)
		event_free(t->lev);
	if (t->lfd >= 0)
		close(t->lfd);
	cats_pce_free(&t->pce);
	cats_pce_guard_free(t->guard);
	cats_keyring_free(&t->keys);
	cats_dec_free(&t->dec);
	cats_arena_free(&t->arena);
	cats_toks_free(&t->toks);
	event_base_free(t->base);
	return t->exit_code;
}
