/*
 * cats-sma - the CATS Service Metric Agent: SCI reports in (stdin, HTTP
 * push, SSE, pull), metric records out.  The agent runs in lib/sma
 * (sma_app.h, sma_http.h); this main parses the options, opens the
 * endpoints, runs the loop and maps the result to an exit code.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/opt.h"
#include "base/tool.h"
#include "net/listener.h"
#include "net/metrics.h"
#include "net/tls.h"
#include "sma/sma_app.h"
#include "sma/sma_http.h"

/* usage_text: the SYNOPSIS and OPTIONS of cats-sma(1). */
#include "cats-sma.help.h"

#define MAX_LISTEN SMA_MAX_LISTEN
#define MAX_URLS SMA_MAX_URLS

static void
on_prom(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	sma_app_textfile(arg);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct sma_app *a = arg;
	(void)what;
	switch (sig) {
	case SIGHUP:
		sma_app_reload(a);
		cats_tls_reload();
		break;
	/*
	 * SIGUSR1 is the stats record and SIGUSR2 the dump of the state (a
	 * full snapshot), as in every tool (cats(7)).  Until the next
	 * release each also does what it did before (SIGUSR1 a snapshot,
	 * SIGUSR2 the stats), so that no script loses what it asked for.
	 */
	case SIGUSR1:
	case SIGUSR2:
		sma_app_print_stats(a);
		sma_app_textfile(a);
		sma_app_start(a);
		sma_uc_snapshot(a->uc, cats_clock_now(), CATS_OP_FULL);
		break;
	default:
		cats_info("stopping on signal %d", (int)sig);
		sma_app_finish(a);
		break;
	}
}

static void
open_output(struct sma_app *a, const char *spec)
{
	char err[300];
	if (spec == NULL && a->nurls > 0)
		return;		/* only the C-PS */
	if (cats_ep_parse(spec ? spec : "-", &a->to, err, sizeof(err)) < 0) {
		cats_errorx("--to: %s", err);
		exit(CATS_EXIT_USAGE);
	}
	int fd = cats_ep_open(&a->to, true, err, sizeof(err));
	if (fd < 0) {
		cats_errorx("--to: %s", err);
		exit(CATS_EXIT_IOERR);
	}
	if (sma_app_output(a, fd) != 0)
		exit(CATS_EXIT_FAIL);
}

/* [steer] to: where the site-local steering decisions go. */
static int
open_steer(struct sma_app *a)
{
	char err[300];
	struct cats_ep ep;
	if (a->c->steer.nservices == 0)
		return 0;
	if (cats_ep_parse(a->c->steer.to, &ep, err, sizeof(err)) < 0) {
		cats_errorx("%s: [steer] to: %s", a->c->path, err);
		return CATS_EXIT_CONFIG;
	}
	/* A unix: or tcp: egress is connected on the loop, when it is up. */
	if (ep.kind == CATS_EP_UNIX || (ep.kind == CATS_EP_TCP && !ep.tls))
		return sma_app_steer(a, &ep, -1);
	int fd = cats_ep_open(&ep, true, err, sizeof(err));
	if (fd < 0) {
		cats_errorx("[steer] to: %s", err);
		return CATS_EXIT_IOERR;
	}
	return sma_app_steer(a, &ep, fd);
}

static void
open_listeners(struct sma_app *a, const char *const *listen,
    const char *admin_ep)
{
	char err[400];
	struct httpd_opts ho = { .max_body = a->c->max_body,
		.timeout_ms = a->c->http_timeout_ms };
	for (size_t i = 0; i < a->nlisten; i++) {
		struct cats_ep ep;
		if (cats_ep_parse(listen[i], &ep, err, sizeof(err)) < 0) {
			cats_errorx("--listen: %s", err);
			exit(CATS_EXIT_USAGE);
		}
		if (ep.kind == CATS_EP_HTTP || ep.kind == CATS_EP_HTTPS) {
			struct httpd *h = httpd_new(a->base, listen[i], &ho,
			    err, sizeof(err));
			if (h == NULL) {
				cats_errorx("--listen: %s", err);
				exit(CATS_EXIT_FAIL);
			}
			sma_http_push_routes(a, h);
			a->push[i] = h;
			continue;
		}
		if (ep.kind != CATS_EP_UNIX && ep.kind != CATS_EP_TCP) {
			cats_errorx("--listen: %s: expected http://, unix: or "
			    "tcp:", listen[i]);
			exit(CATS_EXIT_USAGE);
		}
		int fd = cats_ep_listen(&ep, err, sizeof(err));
		if (fd < 0) {
			cats_errorx("--listen: %s", err);
			exit(CATS_EXIT_FAIL);
		}
		if (sma_app_stream_listener(a, fd) < 0)
			exit(CATS_EXIT_FAIL);
	}
	if (admin_ep != NULL) {
		a->admin = httpd_new(a->base, admin_ep, &ho, err,
		    sizeof(err));
		if (a->admin == NULL) {
			cats_errorx("--admin: %s", err);
			exit(CATS_EXIT_FAIL);
		}
		sma_http_admin_routes(a, a->admin);
	}
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "admin", required_argument, NULL, 'a' },
		{ "config", required_argument, NULL, 'c' },
		{ "epoch", required_argument, NULL, 'E' },
		{ "hello-timeout", required_argument, NULL, 'H' | 0x100 },
		{ "help", no_argument, NULL, 'h' },
		{ "listen", required_argument, NULL, 'l' },
		{ "now", required_argument, NULL, 'N' },
		{ "once", no_argument, NULL, '1' },
		{ "prometheus", required_argument, NULL, 'P' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "replay", no_argument, NULL, 'r' },
		{ "state", required_argument, NULL, 'T' },
		{ "stats", no_argument, NULL, 's' | 0x100 },
		{ "stdin", no_argument, NULL, 'i' },
		{ "strict", no_argument, NULL, 'S' | 0x100 },
		CATS_TLS_LONGOPTS,
		{ "to", required_argument, NULL, 't' },
		{ "until", required_argument, NULL, 'u' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct sma_app app;
	struct sma_app *a = &app;
	const char *to = NULL, *admin_ep = NULL, *listen[MAX_LISTEN];
	const char *prom_ep = NULL;
	bool force_stdin = false, have_now = false, have_epoch = false;
	bool stats = false;
	uint64_t start_now = 0, epoch_opt = 0;
	int ch, verbosity = 1;

	cats_tool_init(argv[0]);
	while ((ch = getopt_long(argc, argv, ":1a:c:E:hil:N:P:qrSsT:t:u:vV",
	    longopts, NULL)) != -1) {
		switch (ch) {
		case '1':
			a->once = true;
			break;
		case 'a':
			admin_ep = optarg;
			break;
		case 'c':
			a->conf_path = optarg;
			break;
		case 'E':
			have_epoch = true;
			epoch_opt = cats_opt_u64("--epoch", optarg, 0,
			    CATS_U53);
			break;
		case 'H' | 0x100: {
			char herr[200];
			if (cats_parse_hello_ms(optarg, &a->hello_ms, herr,
			    sizeof(herr)) < 0)
				cats_opt_fail("--hello-timeout", "%s", herr);
			break;
		}
		case 'i':
			force_stdin = true;
			break;
		case 'l':
			if (a->nlisten == MAX_LISTEN) {
				cats_errorx("at most %d --listen", MAX_LISTEN);
				return CATS_EXIT_USAGE;
			}
			listen[a->nlisten++] = optarg;
			break;
		case 'N':
			have_now = true;
			start_now = cats_opt_u64("--now", optarg, 1, CATS_U53);
			break;
		case 'P':
			prom_ep = optarg;
			break;
		case 'q':
			verbosity = 0;
			break;
		case 'r':
			a->replay = true;
			break;
		case 'S':
			/* Deprecated: -s is --strict in every other tool. */
			cats_warnx("-S is deprecated: write --strict (-s means "
			    "--strict in the next release, as in every other "
			    "tool)");
			/* FALLTHROUGH */
		case 'S' | 0x100:
			a->strict = true;
			break;
		case 's':
			cats_warnx("-s is deprecated: write --stats (-s means "
			    "--strict in the next release, as in every other "
			    "tool)");
			/* FALLTHROUGH */
		case 's' | 0x100:
			stats = true;
			break;
		case 'T':
			a->state_path = optarg;
			break;
		case 't':
			if (strncmp(optarg, "http://", 7) == 0 ||
			    strncmp(optarg, "https://", 8) == 0) {
				struct cats_ep url;
				char why[400];
				if (cats_ep_parse(optarg, &url, why,
				    sizeof(why)) < 0)
					cats_opt_fail("--to", "%s", why);
				if (a->nurls == MAX_URLS) {
					cats_errorx("at most %d C-PS URLs",
					    MAX_URLS);
					return CATS_EXIT_USAGE;
				}
				a->urls[a->nurls++] = optarg;
			} else if (to != NULL) {
				cats_errorx("--to: one stream output (and any "
				    "number of C-PS URLs)");
				return CATS_EXIT_USAGE;
			} else {
				to = optarg;
			}
			break;
		case 'u':
			a->until = optarg;
			break;
		default:
			cats_opt_common(ch, argv, usage_text, &verbosity);
		}
	}
	cats_opt_no_operands(argc, argv);
	if (a->conf_path == NULL)
		cats_usage_fail("needs -c config");
	cats_log_verbosity(verbosity);
	int code = cats_tls_setup();
	if (code != 0)
		return code;
	if (a->replay) {
		cats_clock_set_mode(CATS_CLOCK_REPLAY);
		if (have_now)
			cats_clock_set(start_now);
	} else if (have_now || a->until) {
		cats_errorx("--now and --until go with --replay");
		return CATS_EXIT_USAGE;
	}
	if (a->replay && a->nurls > 0) {
		cats_errorx("--replay writes to a stream, not to a C-PS");
		return CATS_EXIT_USAGE;
	}
	if (a->replay && (a->nlisten > 0 || admin_ep != NULL ||
	    prom_ep != NULL)) {
		cats_errorx("--replay reads recorded reports from stdin only: "
		    "drop %s (a live run takes them), or record what they "
		    "receive and replay it", a->nlisten > 0 ? "--listen" :
		    admin_ep != NULL ? "--admin" : "--prometheus");
		return CATS_EXIT_USAGE;
	}

	if ((code = sma_app_load_config(a)) != 0)
		return code;
	if (a->once)
		/* Each run sends every change. */
		a->c->uc.control = false;
	if ((code = sma_app_load_policy(a)) != 0)
		return code;
	if (a->c->nb.key != NULL) {
		cats_opt_key("[northbound] key", a->c->nb.key, -1,
		    &a->nbkey);
		a->has_nbkey = true;
	}
	if (a->c->audit && cats_audit_open(a->c->audit) < 0) {
		cats_errorx("%s: audit: %s: %s", a->conf_path, a->c->audit,
		    strerror(errno));
		return CATS_EXIT_CONFIG;
	}
	if (a->state_path != NULL) {
		char err[600];
		int rc = sma_state_load(&a->state, a->state_path, err,
		    sizeof(err));
		if (rc < 0) {
			cats_errorx("%s", err);
			return CATS_EXIT_NOINPUT;
		}
		a->have_state = rc == 0;
	}
	/*
	 * Cron runs continue the saved epoch and sequence.  A daemon starts
	 * a new epoch (its start snapshot is full): a state saved by the
	 * periodic save before a kill -9 is behind what was sent since.
	 */
	uint64_t epoch = a->replay ? 1 : cats_clock_now(), seq = 0;
	if (a->have_state && a->once) {
		epoch = a->state.epoch;
		seq = a->state.seq;
	}
	if (have_epoch)
		epoch = epoch_opt;

	a->base = event_base_new();
	a->http = httpc_new(a->base);
	if (a->base == NULL || a->http == NULL) {
		cats_errorx("cannot set up the event loop");
		return CATS_EXIT_FAIL;
	}
	open_output(a, to);
	if ((code = sma_app_core(a, epoch, seq)) != 0 ||
	    (code = sma_app_northbound(a, epoch)) != 0 ||
	    (code = open_steer(a)) != 0 ||
	    (code = sma_app_hierarchy(a)) != 0)
		return code;
	static const int sigs[] = { SIGHUP, SIGUSR1, SIGUSR2, SIGTERM, SIGINT };
	for (size_t i = 0; i < CATS_ARRAY_LEN(sigs); i++)
		evsignal_add(evsignal_new(a->base, sigs[i], on_signal, a),
		    NULL);
	if (sma_http_scis_start(a, NULL) < 0) {
		cats_errorx("out of memory");
		return CATS_EXIT_FAIL;
	}
	open_listeners(a, listen, admin_ep);
	struct cats_metrics *metrics;
	if ((code = cats_metrics_open(&metrics, a->base, prom_ep,
	    sma_app_stats_fill, a)) != 0)
		return code;
	if ((code = sma_app_mqtt(a)) != 0)
		return code;
	if (a->c->nb.prometheus != NULL && !a->replay && !a->once) {
		struct event *prom = event_new(a->base, -1, EV_PERSIST, on_prom,
		    a);
		uint64_t ms = a->c->nb.stats_interval_ms;
		struct timeval tv = { (time_t)(ms / 1000),
			(suseconds_t)(ms % 1000) * 1000 };
		if (prom != NULL)
			event_add(prom, &tv);
	}

	bool pulls = false;
	for (size_t i = 0; i < a->nscis; i++)
		pulls |= a->scis[i].pull_url != NULL;
	/* Replay reads stdin whatever [sci] sections say (no pull, no
	 * stream of theirs is made). */
	bool use_stdin = force_stdin || a->replay || (a->nlisten == 0 &&
	    admin_ep == NULL && a->mqtt == NULL &&
	    (a->once ? !pulls : a->nscis == 0));
	if (!a->replay || have_now)
		sma_app_start(a);
	if (use_stdin && sma_app_stdin(a) < 0) {
		cats_errorx("stdin: cannot read");
		return CATS_EXIT_NOINPUT;
	}
	if (a->once) {
		for (size_t i = 0; i < a->nscis; i++) {
			if (a->scis[i].pull_url == NULL || a->replay)
				continue;
			a->pulls_pending++;
			sma_http_pull(&a->scis[i]);
		}
		if (a->pulls_pending == 0 && a->in == NULL)
			sma_app_finish(a);
	}
	if (!a->stopping)
		event_base_dispatch(a->base);
	int rc = sma_app_end(a);
	if (stats)
		sma_app_print_stats(a);
	cats_metrics_free(metrics);
	return rc;
}
