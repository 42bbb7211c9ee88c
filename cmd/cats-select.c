/*
 * cats-select - the C-PS service selection stage: service, metric and net
 * records build the catalogue, the CST and the NST; forwarders' requests
 * become path requests carrying the decision, or errors.
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
#include "net/ep.h"
#include "net/metrics.h"
#include "net/tls.h"
#include "select/select_app.h"

/* usage_text: the SYNOPSIS and OPTIONS of cats-select(1). */
#include "cats-select.help.h"

/* The main's events: signals and the once-a-second timer; --prometheus. */
static struct event *sev[5], *timer;
static struct cats_metrics *prom;

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	cats_sel_app_tick(arg);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct cats_sel_app *a = arg;
	(void)what;
	switch (sig) {
	case SIGUSR1:
		cats_sel_app_stats(a);
		break;
	case SIGUSR2:
		cats_sel_app_dump(a);
		break;
	case SIGHUP:
		cats_sel_app_reload(a);
		cats_tls_reload();
		break;
	default:
		cats_sel_app_stop(a, CATS_EXIT_OK);
	}
}

static int
load_config(struct cats_sel_opts *o, struct cats_conf *cf)
{
	char err[512];
	if (cats_conf_load(cf, o->config, err, sizeof(err)) < 0 ||
	    cats_sel_opts_conf(o, cf, err, sizeof(err)) < 0) {
		cats_errorx("%s", err);
		return CATS_EXIT_CONFIG;
	}
	return CATS_EXIT_OK;
}

static int
setup_listeners(struct cats_sel_app *a)
{
	for (size_t i = 0; i < a->o.nlisten; i++) {
		struct cats_ep ep;
		char err[512];
		if (cats_ep_parse(a->o.listen[i], &ep, err, sizeof(err)) < 0) {
			cats_errorx("--listen: %s", err);
			return CATS_EXIT_USAGE;
		}
		if (ep.kind != CATS_EP_UNIX && ep.kind != CATS_EP_TCP &&
		    ep.kind != CATS_EP_UDP) {
			cats_errorx("--listen: %s: unix, tcp or udp",
			    a->o.listen[i]);
			return CATS_EXIT_USAGE;
		}
		int fd = cats_ep_listen(&ep, err, sizeof(err));
		if (fd < 0) {
			cats_errorx("%s", err);
			return CATS_EXIT_FAIL;
		}
		if (cats_sel_app_listener(a, fd, ep.kind == CATS_EP_UDP,
		    ep.kind == CATS_EP_UNIX) < 0)
			return CATS_EXIT_FAIL;
	}
	return CATS_EXIT_OK;
}

static int
run(struct cats_sel_app *a, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "audit", required_argument, NULL, 'A' },
		{ "config", required_argument, NULL, 'c' },
		{ "dataplane", required_argument, NULL, 'D' },
		{ "domain", required_argument, NULL, 'd' },
		{ "dump-at-end", no_argument, NULL, 'U' },
		{ "dump-to", required_argument, NULL, 'Y' },
		{ "hello-timeout", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ "id", required_argument, NULL, 'I' },
		{ "ingest", required_argument, NULL, 'g' },
		{ "ingest-key", required_argument, NULL, 'K' },
		{ "ingest-keys", required_argument, NULL, 'j' },
		{ "ingest-window", required_argument, NULL, 'W' },
		{ "keys", required_argument, NULL, 'k' },
		{ "limit", required_argument, NULL, 'L' },
		{ "listen", required_argument, NULL, 'l' },
		{ "log", required_argument, NULL, 'G' },
		{ "metric-ttl", required_argument, NULL, 'T' },
		{ "metrics", required_argument, NULL, 'm' },
		{ "net", required_argument, NULL, 'n' },
		{ "net-ttl", required_argument, NULL, 'N' },
		{ "no-auth", no_argument, NULL, 'a' },
		{ "peercred", required_argument, NULL, 'P' },
		{ "policy", required_argument, NULL, 'p' },
		{ "precedence", required_argument, NULL, 'e' },
		{ "prometheus", required_argument, NULL, 'R' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "replay", no_argument, NULL, 'r' },
		{ "seed", required_argument, NULL, 'S' },
		{ "services", required_argument, NULL, 'F' },
		{ "sma", required_argument, NULL, 'M' },
		{ "sma-egresses", required_argument, NULL, 'X' },
		{ "sma-locators", required_argument, NULL, 'C' },
		{ "state", required_argument, NULL, 'E' },
		{ "stats-at-end", no_argument, NULL, 'Z' },
		{ "stats-interval", required_argument, NULL, 'i' },
		{ "stats-to", required_argument, NULL, 'O' },
		{ "strict", no_argument, NULL, 's' },
		{ "tedb", required_argument, NULL, 'B' },
		CATS_TLS_LONGOPTS,
		{ "to", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "window", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	struct cats_sel_opts *o = &a->o;
	char err[512];
	int ch, rc;

	cats_tool_init(argv[0]);
	cats_sel_opts_init(o);
	while ((ch = getopt_long(argc, argv, ":hqsvV", longopts, NULL)) != -1) {
		const char *key = NULL;
		switch (ch) {
		case 'A': key = "audit"; break;
		case 'c': o->config = optarg; break;
		case 'D': key = "dataplane"; break;
		case 'd': key = "domain"; break;
		case 'G': key = "log"; break;
		case 'H': key = "hello-timeout"; break;
		case 'I': key = "id"; break;
		case 'g': key = "ingest"; break;
		case 'K': key = "ingest-key"; break;
		case 'j': key = "ingest-keys"; break;
		case 'W': key = "ingest-window"; break;
		case 'M': key = "sma"; break;
		case 'X': key = "sma-egresses"; break;
		case 'C': key = "sma-locators"; break;
		case 'E': key = "state"; break;
		case 'B': key = "tedb"; break;
		case 'i': key = "stats-interval"; break;
		case 'k': key = "keys"; break;
		case 'L': key = "limit"; break;
		case 'l': key = "listen"; break;
		case 'm': key = "metrics"; break;
		case 'N': key = "net-ttl"; break;
		case 'n': key = "net"; break;
		case 'O': key = "stats-to"; break;
		case 'Y': key = "dump-to"; break;
		case 'o': key = "to"; break;
		case 'P':
			if (cats_sel_opts_peercred(o, optarg, err,
			    sizeof(err)) < 0)
				cats_opt_fail("--peercred", "%s", err);
			break;
		case 'p': key = "policy"; break;
		case 'e': key = "precedence"; break;
		case 'R': key = "prometheus"; break;
		case 'q': o->verbose = 0; break;
		case 'r': o->replay = true; break;
		case 'S': key = "seed"; break;
		case 's': o->strict = true; break;
		case 'F': key = "services"; break;
		case 'T': key = "metric-ttl"; break;
		case 'U': o->dump_at_end = true; break;
		case 'w': key = "window"; break;
		case 'Z': o->stats_at_end = true; break;
		case 'a':
			o->sel.insecure = true;
			o->set_insecure = true;
			break;
		default:
			cats_opt_common(ch, argv, usage_text, &o->verbose);
		}
		/* The file's setter; a refusal said as opt.h says it. */
		if (key != NULL && cats_sel_opts_set(o, key, optarg, false, err,
		    sizeof(err)) < 0) {
			char opt[64];
			snprintf(opt, sizeof(opt), "--%s", key);
			cats_opt_fail(opt, "%s", err);
		}
	}
	cats_opt_no_operands(argc, argv);
	if (o->config != NULL && (rc = load_config(o, &a->cf)) != CATS_EXIT_OK)
		return rc;
	cats_log_verbosity(o->verbose);
	if (o->log != NULL && cats_log_open(o->log) < 0)
		cats_opt_fail("--log", "stderr or syslog");
	if (o->audit != NULL && cats_audit_open(o->audit) < 0) {
		if (errno == EINVAL)
			cats_opt_fail("--audit", "%s: expected stderr, syslog, "
			    "file:PATH or none", o->audit);
		cats_errorx("--audit: %s: %s", o->audit, strerror(errno));
		return CATS_EXIT_IOERR;
	}
	if ((rc = cats_tls_setup()) != 0)
		return rc;
	if (o->replay)
		cats_clock_set_mode(CATS_CLOCK_REPLAY);
	a->daemon = o->nlisten > 0 || o->ingest != NULL;
	cats_sel_opts_defaults(o);
	if (o->ingest != NULL && o->ingest_keys == NULL) {
		cats_errorx("--ingest needs --ingest-keys (the C-SMAs' keys)");
		return CATS_EXIT_USAGE;
	}

	if (o->keys != NULL) {
		cats_opt_keyring("--keys", o->keys, &a->keys);
		o->sel.keys = &a->keys;
	}
	if (o->keys == NULL && o->npc == 0 && !o->sel.insecure)
		cats_warnx("no --keys, --peercred or --no-auth: every request "
		    "will be refused as unauthenticated");

	if ((rc = cats_sel_app_init(a)) != CATS_EXIT_OK ||
	    (rc = cats_sel_app_load_files(a)) != CATS_EXIT_OK)
		return rc;

	a->base = event_base_new();
	if (a->base == NULL) {
		cats_errorx("cannot create the event loop");
		return CATS_EXIT_FAIL;
	}
	int ofd = 1, sfd = -1, dfd = -1;
	if ((o->to != NULL &&
	    (rc = cats_ep_open_out("--to", o->to, &ofd)) != 0) ||
	    (o->stats_to != NULL &&
	    (rc = cats_ep_open_out("--stats-to", o->stats_to, &sfd)) != 0) ||
	    (o->dump_to != NULL &&
	    (rc = cats_ep_open_out("--dump-to", o->dump_to, &dfd)) != 0))
		return rc;
	if ((rc = cats_sel_app_output(a, ofd, sfd, dfd)) != CATS_EXIT_OK ||
	    (rc = cats_sel_app_input(a)) != CATS_EXIT_OK ||
	    (rc = setup_listeners(a)) != CATS_EXIT_OK ||
	    (rc = cats_sel_app_ingest(a)) != CATS_EXIT_OK)
		return rc;
	if ((rc = cats_metrics_open(&prom, a->base, o->prometheus,
	    cats_sel_app_stats_fill, a)) != 0)
		return rc;
	int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2 };
	for (size_t i = 0; i < 5; i++) {
		sev[i] = evsignal_new(a->base, sigs[i], on_signal, a);
		if (sev[i] != NULL)
			event_add(sev[i], NULL);
	}
	if (a->daemon && !o->replay) {
		struct timeval tv = { 1, 0 };
		timer = event_new(a->base, -1, EV_PERSIST, on_timer, a);
		if (timer != NULL)
			event_add(timer, &tv);
	}
	a->last_stats_ts = cats_clock_now();
	if (a->daemon)
		cats_info("serving %zu listeners, %zu services, "
		    "%zu CST entries",
		    a->nls, cats_svc_count(a->cat), cats_cst_count(a->cst));

	if (a->in == NULL && !a->daemon)
		cats_sel_app_finish(a);
	else
		event_base_dispatch(a->base);
	return cats_sel_app_end(a);
}

int
main(int argc, char **argv)
{
	static struct cats_sel_app app;
	int rc = run(&app, argc, argv);
	for (size_t i = 0; i < 5; i++)
		if (sev[i] != NULL)
			event_free(sev[i]);
	if (timer != NULL)
		event_free(timer);
	cats_metrics_free(prom);
	cats_sel_app_free(&app);
	if (app.base != NULL)
		event_base_free(app.base);
	return rc;
}
