/*
 * cats-pce - the PCE function: path-req records in, path-rep records out,
 * over a TE database (cats-pce(1), cats-topology(5)).
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/opt.h"
#include "base/tool.h"
#include "net/ep.h"
#include "net/listener.h"
#include "net/metrics.h"
#include "net/tls.h"
#include "pce/pce_app.h"
#include "pce/pcep_srv.h"

/* usage_text: the SYNOPSIS and OPTIONS of cats-pce(1). */
#include "cats-pce.help.h"

static struct cats_pce_app A;

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct cats_pce_app *a = arg;
	(void)what;
	switch (sig) {
	case SIGHUP:
		cats_pce_app_reload(a);
		cats_tls_reload();
		break;
	case SIGUSR1:
		cats_pce_app_stats(a);
		break;
	default:
		event_base_loopexit(a->base, NULL);
		break;
	}
}

/* The keys of --keys (senders accepted) and --key (replies signed). */
static void
load_keys(struct cats_pce_app *a, const char *keys_path, const char *key_path)
{
	a->sign.kind = -1;
	if (keys_path != NULL)
		cats_opt_keyring("--keys", keys_path, &a->keys);
	if (key_path != NULL)
		cats_opt_key("--key", key_path, -1, &a->sign);
}

/*
 * --listen: the socket (unix:, tcp: or udp:; a network one only with
 * --keys or --insecure), served by the module; the fd in *lfd.
 */
static int
listen_on(struct cats_pce_app *a, const char *spec, bool insecure, int *lfd)
{
	struct cats_ep ep;
	char err[512];
	if (cats_ep_parse(spec, &ep, err, sizeof(err)) < 0) {
		cats_errorx("--listen: %s", err);
		return CATS_EXIT_USAGE;
	}
	if (ep.kind != CATS_EP_UNIX && ep.kind != CATS_EP_TCP &&
	    ep.kind != CATS_EP_UDP) {
		cats_errorx("--listen: %s: expected unix:, tcp:, tls: or udp:",
		    spec);
		return CATS_EXIT_USAGE;
	}
	/* A network channel to the C-PS must be authenticated. */
	if (ep.kind != CATS_EP_UNIX && a->keys.n == 0 && !insecure) {
		cats_errorx("--listen: %s: a network channel needs --keys (or "
		    "--insecure)", spec);
		return CATS_EXIT_USAGE;
	}
	*lfd = cats_ep_listen(&ep, err, sizeof(err));
	if (*lfd < 0) {
		cats_errorx("--listen: %s", err);
		return CATS_EXIT_FAIL;
	}
	int rc = cats_pce_app_listener(a, *lfd, cats_ep_is_dgram(&ep));
	if (rc == CATS_EXIT_OK)
		cats_info("listening on %s, %" PRIu32 " nodes, generation %"
		    PRIu64, spec, cats_te_nodes(a->pce.te),
		    cats_te_gen(a->pce.te));
	return rc;
}

/*
 * --pcep: a TCP socket for PCEP sessions (pcep_srv.h).  PCEP carries no
 * record keys: a network channel needs --tcp-md5 (a key for each prefix
 * of --pcep-allow) or --insecure.
 */
static int
pcep_on(struct cats_pce_app *a, const char *spec, bool insecure, int *pfd)
{
	struct cats_ep ep;
	char err[512];
	if (cats_ep_parse(spec, &ep, err, sizeof(err)) < 0) {
		cats_errorx("--pcep: %s", err);
		return CATS_EXIT_USAGE;
	}
	if (ep.kind != CATS_EP_TCP) {
		cats_errorx("--pcep: %s: expected tcp:HOST:PORT (PCEP is TCP, "
		    "port 4189)", spec);
		return CATS_EXIT_USAGE;
	}
	if (!insecure && a->md5_len == 0) {
		cats_errorx("--pcep: %s: PCEP is not authenticated: needs "
		    "--tcp-md5 (or --insecure)", spec);
		return CATS_EXIT_USAGE;
	}
	if (a->md5_len > 0 && a->pcep_nallow == 0) {
		cats_errorx("--tcp-md5: the keys are per peer: needs "
		    "--pcep-allow");
		return CATS_EXIT_USAGE;
	}
	*pfd = cats_ep_listen(&ep, err, sizeof(err));
	if (*pfd < 0) {
		cats_errorx("--pcep: %s", err);
		return CATS_EXIT_FAIL;
	}
	for (size_t i = 0; a->md5_len > 0 && i < a->pcep_nallow; i++)
		if (cats_pcep_md5_set(*pfd, &a->pcep_allow[i], a->md5,
		    a->md5_len, err, sizeof(err)) < 0) {
			cats_errorx("--tcp-md5: %s", err);
			return CATS_EXIT_FAIL;
		}
	int rc = cats_pce_app_pcep(a, *pfd);
	if (rc == CATS_EXIT_OK)
		cats_info("PCEP on %s", spec);
	return rc;
}

/* stdio mode: requests on stdin, everything out on stdout or --to. */
static int
stdio_to(struct cats_pce_app *a, const char *to_ep)
{
	int ofd = 1;
	if (to_ep != NULL) {
		struct cats_ep ep;
		char err[512];
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
	return cats_pce_app_stdio(a, ofd);
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "cache", required_argument, NULL, 'C' },
		{ "check", no_argument, NULL, 'c' },
		{ "hello-timeout", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ "insecure", no_argument, NULL, 'I' },
		{ "key", required_argument, NULL, 'K' },
		{ "keys", required_argument, NULL, 'k' },
		{ "listen", required_argument, NULL, 'l' },
		{ "max-labels", required_argument, NULL, 'L' },
		{ "pce", required_argument, NULL, 'p' },
		{ "pce-timeout", required_argument, NULL, 'T' },
		{ "pcep", required_argument, NULL, 'P' },
		{ "pcep-allow", required_argument, NULL, 'A' },
		{ "prometheus", required_argument, NULL, 'R' },
		{ "replay", no_argument, NULL, 'r' },
		{ "stats", no_argument, NULL, 'S' },
		{ "stats-to", required_argument, NULL, 'O' },
		{ "strict", no_argument, NULL, 's' },
		{ "tcp-md5", required_argument, NULL, 'M' },
		{ "tedb", required_argument, NULL, 't' },
		CATS_TLS_LONGOPTS,
		{ "to", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "window", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	struct cats_pce_app *a = &A;
	const char *listen_ep = NULL, *to_ep = NULL, *pcep_ep = NULL;
	const char *pce_ep = NULL, *md5_path = NULL, *prom_ep = NULL;
	const char *stats_ep = NULL;
	static struct cats_prefix allow[64];
	size_t nallow = 0;
	char perr[200];
	const char *keys_path = NULL, *key_path = NULL;
	bool check = false, insecure = false, replay = false;
	int verbose = 1, ch, rc, lfd = -1, pfd = -1;

	cats_tool_init(argv[0]);
	a->window = 30000;
	a->cache = CATS_PCE_CACHE_DEFAULT;
	while ((ch = getopt_long(argc, argv, ":A:C:chIK:k:l:L:M:P:p:rSso:T:t:vVw:", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'O':
			stats_ep = optarg;
			break;
		case 'R':
			prom_ep = optarg;
			break;
		case 'A':
			if (nallow == CATS_ARRAY_LEN(allow))
				cats_opt_fail("--pcep-allow", "at most 64");
			if (cats_prefix_parse(optarg, strlen(optarg), true,
			    &allow[nallow], perr, sizeof(perr)) < 0)
				cats_opt_fail("--pcep-allow", "%s", perr);
			nallow++;
			break;
		case 'C':
			a->cache = (size_t)cats_opt_u64("--cache", optarg, 0,
			    1000000);
			break;
		case 'c':
			check = true;
			break;
		case 'H':
			if (cats_parse_hello_ms(optarg, &a->hello_ms, perr,
			    sizeof(perr)) < 0)
				cats_opt_fail("--hello-timeout", "%s", perr);
			break;
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
			a->max_labels = (size_t)cats_opt_u64("--max-labels",
			    optarg, 1, UINT32_MAX - 1);
			break;
		case 'o':
			to_ep = optarg;
			break;
		case 'M':
			md5_path = optarg;
			break;
		case 'P':
			pcep_ep = optarg;
			break;
		case 'p':
			pce_ep = optarg;
			break;
		case 'T':
			a->pce_timeout = cats_opt_ms("--pce-timeout", optarg);
			if (a->pce_timeout == 0)
				cats_opt_fail("--pce-timeout", "must be positive");
			break;
		case 'r':
			replay = true;
			break;
		case 'S':
			a->stats = true;
			break;
		case 's':
			a->strict = true;
			break;
		case 't':
			a->tedb = optarg;
			break;
		case 'w':
			a->window = cats_opt_ms("--window", optarg);
			if (a->window == 0)
				cats_opt_fail("--window", "must be positive");
			break;
		default:
			cats_opt_common(ch, argv, usage_text, &verbose);
		}
	}
	cats_opt_no_operands(argc, argv);
	if (a->tedb == NULL)
		cats_usage_fail("needs -t file (the TE database)");
	if (listen_ep && to_ep)
		cats_usage_fail("--listen and --to exclude each other");
	if (nallow > 0 && pcep_ep == NULL)
		cats_usage_fail("--pcep-allow needs --pcep");
	if (a->hello_ms && listen_ep == NULL)
		cats_usage_fail("--hello-timeout needs --listen");
	if (a->pce_timeout && pce_ep == NULL)
		cats_usage_fail("--pce-timeout needs --pce");
	if (md5_path && pce_ep == NULL && pcep_ep == NULL)
		cats_usage_fail("--tcp-md5 needs --pce or --pcep");
	if (md5_path != NULL && cats_pcep_md5_load(md5_path, a->md5,
	    &a->md5_len, perr, sizeof(perr)) < 0) {
		cats_errorx("--tcp-md5: %s", perr);
		return CATS_EXIT_NOPERM;
	}
	a->pcep_allow = allow;
	a->pcep_nallow = nallow;
	cats_log_verbosity(verbose);
	if ((rc = cats_tls_setup()) != 0)
		return rc;
	if (check)
		return cats_pce_check(a->tedb);
	load_keys(a, keys_path, key_path);
	if ((rc = cats_pce_app_init(a)) != CATS_EXIT_OK)
		return rc;
	if (replay)
		cats_clock_set_mode(CATS_CLOCK_REPLAY);
	a->base = event_base_new();
	if (a->base == NULL) {
		cats_errorx("cannot create the event loop");
		return CATS_EXIT_FAIL;
	}
	struct event *sigs[4];
	static const int signos[4] = { SIGHUP, SIGUSR1, SIGTERM, SIGINT };
	for (int i = 0; i < 4; i++) {
		sigs[i] = evsignal_new(a->base, signos[i], on_signal, a);
		event_add(sigs[i], NULL);
	}
	if (pcep_ep != NULL &&
	    (rc = pcep_on(a, pcep_ep, insecure, &pfd)) != CATS_EXIT_OK)
		return rc;
	rc = listen_ep != NULL ? listen_on(a, listen_ep, insecure, &lfd) :
	    stdio_to(a, to_ep);
	if (rc != CATS_EXIT_OK)
		return rc;
	if (pce_ep != NULL &&
	    (rc = cats_pce_app_pcc(a, pce_ep, insecure)) != CATS_EXIT_OK)
		return rc;
	if (stats_ep != NULL &&
	    (rc = cats_pce_app_stats_to(a, stats_ep)) != CATS_EXIT_OK)
		return rc;
	a->last_stats_ts = cats_clock_now();
	struct cats_metrics *prom;
	if ((rc = cats_metrics_open(&prom, a->base, prom_ep,
	    cats_pce_app_stats_fill, a)) != 0)
		return rc;

	event_base_dispatch(a->base);

	rc = cats_pce_app_end(a);
	cats_metrics_free(prom);
	cats_pce_app_free(a);
	for (int i = 0; i < 4; i++)
		event_free(sigs[i]);
	if (lfd >= 0)
		close(lfd);
	if (pfd >= 0)
		close(pfd);
	event_base_free(a->base);
	return rc;
}
