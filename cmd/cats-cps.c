/*
 * cats-cps - the C-PS as one supervised service: cats-select, cats-pce and
 * cats-bind run as its stages, joined by socketpairs, their loop closed,
 * each restarted when it dies (cats-cps(1), lib/cps/cps.h).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <event2/event.h>

#include "base/log.h"
#include "base/opt.h"
#include "base/stats.h"
#include "base/tool.h"
#include "cps/cps.h"
#include "net/metrics.h"
#include "net/tls.h"

/* usage_text: the SYNOPSIS and OPTIONS of cats-cps(1). */
#include "cats-cps.help.h"

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	if (sig == SIGCHLD)
		cps_reap(arg);
	else
		cps_signal(arg, sig);
}

static int
run(struct cps *p, struct cps_conf *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "bin", required_argument, NULL, 'b' },
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ "id", required_argument, NULL, 'I' },
		{ "log", required_argument, NULL, 'G' },
		{ "prometheus", required_argument, NULL, 'P' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "standby", no_argument, NULL, 'S' },
		{ "stats-interval", required_argument, NULL, 'i' },
		{ "stats-to", required_argument, NULL, 'O' },
		{ "tap", required_argument, NULL, 'a' },
		{ "textfile", required_argument, NULL, 'T' },
		CATS_TLS_LONGOPTS,
		{ "to", required_argument, NULL, 'o' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = NULL, *log = NULL;
	const char *set[64][2];
	size_t nset = 0;
	bool standby = false;
	int ch, rc, verbose = 1;
	char err[512];

	cats_tool_init(argv[0]);
	cps_conf_init(c);
	while ((ch = getopt_long(argc, argv, ":c:hqvV", longopts, NULL)) != -1) {
		const char *key = NULL;
		switch (ch) {
		case 'b': key = "bin"; break;
		case 'c': config = optarg; break;
		case 'G': log = optarg; break;
		case 'I': key = "id"; break;
		case 'i': key = "stats-interval"; break;
		case 'O': key = "stats-to"; break;
		case 'P': key = "prometheus"; break;
		case 'o': key = "to"; break;
		case 'q': verbose = 0; break;
		case 'S': standby = true; break;
		case 'a': key = "tap"; break;
		case 'T': key = "textfile"; break;
		/* The stages' TLS files (and the parent's --prometheus). */
		case CATS_TLS_OPT_CA: key = "tls-ca"; break;
		case CATS_TLS_OPT_CERT: key = "tls-cert"; break;
		case CATS_TLS_OPT_CRL: key = "tls-crl"; break;
		case CATS_TLS_OPT_KEY: key = "tls-key"; break;
		default:
			cats_opt_common(ch, argv, usage_text, &verbose);
		}
		if (key != NULL && nset == CATS_ARRAY_LEN(set))
			cats_usage_fail("more than %zu options to hand on: "
			    "put them in the --config file",
			    CATS_ARRAY_LEN(set));
		if (key != NULL) {
			set[nset][0] = key;
			set[nset++][1] = optarg;
		}
	}
	cats_opt_no_operands(argc, argv);
	cats_log_verbosity(verbose);
	if (log != NULL && cats_log_open(log) < 0) {
		cats_errorx("--log: stderr or syslog");
		return CATS_EXIT_USAGE;
	}
	if (config != NULL && (rc = cps_conf_load(c, config)) != CATS_EXIT_OK)
		return rc;
	/* The command line over the file. */
	for (size_t i = 0; i < nset; i++)
		if (cps_conf_set(c, set[i][0], set[i][1], err,
		    sizeof(err)) < 0) {
			cats_errorx("--%s: %s", set[i][0], err);
			return CATS_EXIT_USAGE;
		}
	if ((rc = cps_conf_finish(c)) != CATS_EXIT_OK)
		return rc;
	if (c->textfile != NULL && (rc = cats_stats_textfile_check("--textfile",
	    c->textfile)) != CATS_EXIT_OK)
		return rc;

	p->base = event_base_new();
	if (p->base == NULL) {
		cats_errorx("cannot create the event loop");
		return CATS_EXIT_FAIL;
	}
	struct event_base *base = p->base;
	if ((rc = cps_init(p, c, base)) != CATS_EXIT_OK)
		return rc;
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP,
		SIGUSR1, SIGUSR2 };
	struct event *sev[CATS_ARRAY_LEN(sigs)];
	for (size_t i = 0; i < CATS_ARRAY_LEN(sigs); i++) {
		sev[i] = evsignal_new(base, sigs[i], on_signal, p);
		if (sev[i] != NULL)
			event_add(sev[i], NULL);
	}
	struct cats_metrics *prom;
	if (cats_metrics_open(&prom, base, c->prometheus, cps_stats_fill,
	    p) != 0)
		return CATS_EXIT_FAIL;
	/* On etcd, the election makes an instance active, not the operator. */
	bool etcd = cps_conf_etcd(c);
	if (!standby || etcd)
		cps_set_active(p, true);
	cats_info("serving as %s (%s)", c->id, etcd ? "etcd elects the owner" :
	    standby ? "standby" : "active");
	event_base_dispatch(base);
	rc = cps_end(p);
	cats_metrics_free(prom);
	cps_free(p);
	cats_tls_free();
	for (size_t i = 0; i < CATS_ARRAY_LEN(sigs); i++)
		if (sev[i] != NULL)
			event_free(sev[i]);
	return rc;
}

int
main(int argc, char **argv)
{
	static struct cps p;
	static struct cps_conf c;
	int rc = run(&p, &c, argc, argv);
	if (p.base != NULL)
		event_base_free(p.base);
	cps_conf_free(&c);
	return rc;
}
