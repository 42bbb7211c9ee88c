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
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/opt.h"
#include "base/tool.h"
#include "bind/bind_app.h"
#include "ha/ha_bind.h"
#include "net/ep.h"
#include "net/listener.h"
#include "net/metrics.h"
#include "net/tls.h"

/* usage_text: the SYNOPSIS and OPTIONS of cats-bind(1). */
#include "cats-bind.help.h"

static struct bind_app A;

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	bind_app_tick(arg);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	if (sig == SIGUSR1)
		bind_app_stats(arg);
	else if (sig == SIGHUP)
		cats_tls_reload();
	else
		bind_app_stop(arg, CATS_EXIT_OK);
}

/* A value of names (the --commit and --fsync policies), else exit 2. */
static int
pick(const char *opt, const char *s, const char *const *names)
{
	int i = cats_enum_index(names, s, strlen(s));
	if (i < 0)
		cats_opt_fail(opt, "unknown value \"%s\"", s);
	return i;
}

/* A lifetime: a duration of at most 2^32-1 ms, else the usage. */
static uint64_t
lifetime(const char *opt, const char *s)
{
	uint64_t v = cats_opt_ms(opt, s);
	if (v > CATS_U32)
		cats_opt_fail(opt, "at most %" PRIu64 "ms", (uint64_t)CATS_U32);
	return v;
}

/* The keys of --key (to sign with) and --keys (forwarders'). */
static void
load_keys(struct bind_app *a, const char *keyfile, const char *keysfile)
{
	if (keyfile != NULL) {
		cats_opt_key("--key", keyfile, -1, &a->key);
		a->have_key = true;
	}
	if (keysfile != NULL)
		cats_opt_keyring("--keys", keysfile, &a->keys);
}

/* The listening socket of --listen (unix: or tcp:); *path a unix one's. */
static int
listen_on(const char *spec, int *fd, char *path, size_t len)
{
	struct cats_ep ep;
	char err[512];
	if (cats_ep_parse(spec, &ep, err, sizeof(err)) < 0) {
		cats_errorx("--listen %s: %s", spec, err);
		return CATS_EXIT_USAGE;
	}
	if (ep.kind != CATS_EP_UNIX && ep.kind != CATS_EP_TCP) {
		cats_errorx("--listen %s: forwarders connect over unix:, tcp: "
		    "or tls:", spec);
		return CATS_EXIT_USAGE;
	}
	*fd = cats_ep_listen(&ep, err, sizeof(err));
	if (*fd < 0) {
		cats_errorx("--listen %s: %s", spec, err);
		return CATS_EXIT_FAIL;
	}
	if (ep.kind == CATS_EP_UNIX)
		cats_strlcpy(path, ep.path, len);
	return CATS_EXIT_OK;
}

static const char *prom_ep;	/* --prometheus */

/*
 * The run: the table and its journal, the event loop with its timer and
 * signals, the endpoints; the exit code.
 */
static int
run(struct bind_app *a, const struct bind_conf *conf, const char *journal,
    int fsync_policy, uint64_t snap_min, const char *listen_ep, bool replay,
    struct ha_conf *hc)
{
	struct event *tick_ev, *sigs[4];
	static const int signos[4] = { SIGTERM, SIGINT, SIGUSR1, SIGHUP };
	char sock_path[4096] = "";
	struct stat sock_st;
	int listen_fd = -1, rc;

	a->base = event_base_new();
	if (a->base == NULL) {
		cats_errorx("cannot create the event loop");
		return CATS_EXIT_FAIL;
	}
	if ((rc = bind_app_init(a, conf)) != CATS_EXIT_OK)
		return rc;
	/* Restore every established flow before anyone hears the new epoch. */
	if (hc->urls != NULL) {
		if ((rc = ha_bind_start(a, hc)) != CATS_EXIT_OK)
			return rc;
	} else if (journal != NULL) {
		if ((rc = bind_app_journal(a, journal, fsync_policy,
		    snap_min)) != CATS_EXIT_OK)
			return rc;
	} else {
		/* No journal: an epoch that still grows across restarts. */
		bind_set_epoch(a->t, replay ? 1 : cats_clock_now() / 1000);
	}
	/* The timer syncs under interval, and under always what no output
	 * waited for (bj_commit_begin); never has none. */
	if (fsync_policy == BJ_FSYNC_NEVER)
		a->fsync_ms = 0;
	tick_ev = event_new(a->base, -1, EV_PERSIST, on_tick, a);
	struct timeval tv = { 0, 50000 };
	event_add(tick_ev, &tv);
	for (int i = 0; i < 4; i++) {
		sigs[i] = evsignal_new(a->base, signos[i], on_signal, a);
		event_add(sigs[i], NULL);
	}
	if ((rc = bind_app_output(a)) != CATS_EXIT_OK)
		return rc;
	if (listen_ep != NULL) {
		if ((rc = listen_on(listen_ep, &listen_fd, sock_path,
		    sizeof(sock_path))) != CATS_EXIT_OK)
			return rc;
		if (sock_path[0] && stat(sock_path, &sock_st) < 0)
			sock_path[0] = '\0';
		bind_app_listener(a, listen_fd);
	}
	if ((rc = bind_app_input(a)) != CATS_EXIT_OK)
		return rc;
	struct cats_metrics *prom;
	if ((rc = cats_metrics_open(&prom, a->base, prom_ep,
	    bind_app_stats_fill, a)) != 0)
		return rc;

	event_base_dispatch(a->base);

	/* Clean stop: what is held goes out, then a snapshot. */
	rc = bind_app_end(a);
	cats_metrics_free(prom);
	bind_app_free(a);
	if (listen_fd >= 0)
		close(listen_fd);
	/* Only our own: a new owner may have taken the path over. */
	struct stat now_st;
	if (sock_path[0] && !cats_ep_inherited(listen_fd) &&
	    stat(sock_path, &now_st) == 0 &&
	    now_st.st_ino == sock_st.st_ino && now_st.st_dev == sock_st.st_dev)
		unlink(sock_path);
	event_free(tick_ev);
	for (int i = 0; i < 4; i++)
		event_free(sigs[i]);
	event_base_free(a->base);
	/* A clean stop of the owner hands over at once (the lease revoked). */
	ha_bind_end(a);
	return rc;
}

int
main(int argc, char **argv)
{
	enum {
		O_COMMIT = 256, O_COMMIT_TIMEOUT, O_DATAPLANES, O_DRAIN, O_DUMP,
		O_ETCD, O_ETCD_PREFIX, O_FSYNC, O_FSYNC_INT, O_HARD, O_HELLO, O_ID,
		O_IDLE, O_JOURNAL, O_KEY, O_KEYS, O_LEASE, O_LIMIT, O_LISTEN,
		O_PENDING, O_REPAIR, O_REPLAY, O_SNAPSHOT, O_STATS, O_STATS_INT,
		O_TRACE, O_PROM,
	};
	static const struct option longopts[] = {
		{ "commit", required_argument, NULL, O_COMMIT },
		{ "commit-timeout", required_argument, NULL, O_COMMIT_TIMEOUT },
		{ "dataplanes", required_argument, NULL, O_DATAPLANES },
		{ "drain-timeout", required_argument, NULL, O_DRAIN },
		{ "dump", no_argument, NULL, O_DUMP },
		{ "etcd", required_argument, NULL, O_ETCD },
		{ "etcd-prefix", required_argument, NULL, O_ETCD_PREFIX },
		{ "fsync", required_argument, NULL, O_FSYNC },
		{ "fsync-interval", required_argument, NULL, O_FSYNC_INT },
		{ "hard", required_argument, NULL, O_HARD },
		{ "hello-timeout", required_argument, NULL, O_HELLO },
		{ "help", no_argument, NULL, 'h' },
		{ "id", required_argument, NULL, O_ID },
		{ "idle", required_argument, NULL, O_IDLE },
		{ "journal", required_argument, NULL, O_JOURNAL },
		{ "key", required_argument, NULL, O_KEY },
		{ "keys", required_argument, NULL, O_KEYS },
		{ "lease", required_argument, NULL, O_LEASE },
		{ "limit", required_argument, NULL, O_LIMIT },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "pending-timeout", required_argument, NULL, O_PENDING },
		{ "prometheus", required_argument, NULL, O_PROM },
		{ "quiet", no_argument, NULL, 'q' },
		{ "repair-timeout", required_argument, NULL, O_REPAIR },
		{ "replay", no_argument, NULL, O_REPLAY },
		{ "snapshot-size", required_argument, NULL, O_SNAPSHOT },
		{ "stats", no_argument, NULL, O_STATS },
		{ "stats-interval", required_argument, NULL, O_STATS_INT },
		{ "strict", no_argument, NULL, 's' },
		CATS_TLS_LONGOPTS,
		{ "trace", required_argument, NULL, O_TRACE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct bind_app *a = &A;
	struct bind_conf conf;
	const char *journal = NULL, *listen_ep = NULL, *trace = NULL;
	const char *keyfile = NULL, *keysfile = NULL;
	bool dump = false, replay = false;
	int fsync_policy = BJ_FSYNC_ALWAYS, verbosity = 1, ch, rc;
	uint64_t snap_min = 0;
	char err[512], opt[600], name[300], host[128] = "";
	struct ha_conf hc = { NULL, "/cats/cps/", NULL, 2000, 0,
		cats_clock_now };

	cats_tool_init(argv[0]);
	bind_conf_default(&conf);
	a->fsync_ms = 1000;
	while ((ch = getopt_long(argc, argv, ":hqsvV", longopts, NULL)) != -1) {
		switch (ch) {
		case O_COMMIT:
			conf.commit = pick("--commit", optarg,
			    bind_commit_names);
			break;
		case O_COMMIT_TIMEOUT:
			conf.commit_ms = cats_opt_ms("--commit-timeout", optarg);
			break;
		case O_DATAPLANES:
			if (bind_conf_dataplanes(optarg, &conf.dataplanes, err,
			    sizeof(err)) < 0)
				cats_opt_fail("--dataplanes", "%s", err);
			break;
		case O_DRAIN:
			conf.drain_ms = cats_opt_ms("--drain-timeout", optarg);
			break;
		case O_DUMP:
			dump = true;
			break;
		case O_ETCD:
			hc.urls = optarg;
			break;
		case O_ETCD_PREFIX:
			if (optarg[0] != '/' || strlen(optarg) > 200)
				cats_opt_fail("--etcd-prefix", "a key prefix "
				    "starts with / and has at most 200 bytes");
			hc.prefix = optarg;
			break;
		case O_FSYNC:
			fsync_policy = pick("--fsync", optarg, bj_fsync_names);
			break;
		case O_FSYNC_INT:
			a->fsync_ms = cats_opt_ms("--fsync-interval", optarg);
			break;
		case O_HARD:
			conf.hard_ms = lifetime("--hard", optarg);
			break;
		case O_HELLO:
			if (cats_parse_hello_ms(optarg, &a->hello_ms, err,
			    sizeof(err)) < 0)
				cats_opt_fail("--hello-timeout", "%s", err);
			break;
		case O_ID:
			if (strlen(optarg) == 0 || strlen(optarg) > CATS_ID)
				cats_opt_fail("--id", "1 to %d bytes", CATS_ID);
			conf.self = optarg;
			break;
		case O_IDLE:
			conf.idle_ms = lifetime("--idle", optarg);
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
		case O_LEASE:
			hc.lease_ms = cats_opt_ms("--lease", optarg);
			if (hc.lease_ms < 2000 || hc.lease_ms > 3600000)
				cats_opt_fail("--lease", "a lease is 2 s to 1 h");
			break;
		case O_LIMIT:
			if (bind_conf_limit(&conf, optarg, err,
			    sizeof(err)) < 0) {
				snprintf(opt, sizeof(opt), "--limit %s", optarg);
				cats_opt_fail(opt, "%s", err);
			}
			break;
		case O_LISTEN:
			listen_ep = optarg;
			break;
		case O_PROM:
			prom_ep = optarg;
			break;
		case O_PENDING:
			conf.pending_ms = cats_opt_ms("--pending-timeout",
			    optarg);
			break;
		case O_REPAIR:
			conf.repair_ms = cats_opt_ms("--repair-timeout", optarg);
			break;
		case O_REPLAY:
			replay = true;
			break;
		case O_SNAPSHOT:
			snap_min = cats_opt_size("--snapshot-size", optarg);
			break;
		case O_STATS:
			a->stats_at_exit = true;
			break;
		case O_STATS_INT:
			a->stats_ms = cats_opt_ms("--stats-interval", optarg);
			break;
		case O_TRACE:
			trace = optarg;
			break;
		case 'q':
			verbosity = 0;
			break;
		case 's':
			a->strict = true;
			break;
		default:
			cats_opt_common(ch, argv, usage_text, &verbosity);
		}
	}
	cats_opt_no_operands(argc, argv);
	cats_log_verbosity(verbosity);
	if ((rc = cats_tls_setup()) != 0)
		return rc;
	if (replay)
		cats_clock_set_mode(CATS_CLOCK_REPLAY);
	if (dump) {
		if (journal == NULL) {
			cats_errorx("--dump needs --journal");
			return CATS_EXIT_USAGE;
		}
		return bind_app_dump(&conf, journal);
	}
	if (trace != NULL) {
		a->trace = fopen(trace, "a");
		if (a->trace == NULL) {
			cats_errorx("--trace: %s: %s", trace, strerror(errno));
			return CATS_EXIT_IOERR;
		}
		setvbuf(a->trace, NULL, _IOLBF, 0);
	}
	if (hc.urls != NULL && (journal != NULL || replay)) {
		cats_errorx("--etcd: the state is in etcd, not in a --journal, "
		    "and time is live, not --replay");
		return CATS_EXIT_USAGE;
	}
	/* The owner key names the instance: its id, host and pid. */
	gethostname(host, sizeof(host) - 1);
	snprintf(name, sizeof(name), "%s@%s:%ld", conf.self ? conf.self :
	    "cats-bind", host, (long)getpid());
	hc.name = name;
	load_keys(a, keyfile, keysfile);
	rc = run(a, &conf, journal, fsync_policy, snap_min, listen_ep, replay,
	    &hc);
	if (a->trace)
		fclose(a->trace);
	return rc;
}
