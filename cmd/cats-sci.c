/*
 * cats-sci - a reference SCI reporter: signed sci-report records with the
 * metrics given on the command line, in a file or by a command; once to
 * stdout, pushed over HTTP, or served to pulls and as an SSE stream.  The
 * reporter is lib/sci (sci.h); this main parses the options, opens the
 * endpoints, runs the loop and returns the exit code.
 */
#include <getopt.h>
#include <inttypes.h>
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
#include "sci/sci.h"
#include "sci/sci_mqtt.h"

/* usage_text: the SYNOPSIS and OPTIONS of cats-sci(1). */
#include "cats-sci.help.h"

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	sci_tick(arg);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct sci_reporter *s = arg;
	(void)what;
	if (sig == SIGHUP)
		cats_tls_reload();
	else
		event_base_loopbreak(s->base);
}

static const char *prom_ep;	/* --prometheus */

static int
do_daemon(struct sci_reporter *s)
{
	char err[400];
	s->base = event_base_new();
	if (s->base == NULL)
		return CATS_EXIT_FAIL;
	if (s->to != NULL && sci_mqtt_is_url(s->to)) {
		int rc = sci_mqtt_start(s);
		if (rc != CATS_EXIT_OK)
			return rc;
	} else if (s->to != NULL) {
		s->http = httpc_new(s->base);
		if (s->http == NULL) {
			cats_errorx("cannot start the HTTP client");
			return CATS_EXIT_FAIL;
		}
	}
	if (s->listen != NULL) {
		struct httpd_opts o = { .max_body = 4096, .timeout_ms = 10000 };
		s->httpd = httpd_new(s->base, s->listen, &o, err, sizeof(err));
		if (s->httpd == NULL) {
			cats_errorx("--listen: %s", err);
			return CATS_EXIT_FAIL;
		}
		sci_serve(s);
	}
	struct cats_metrics *prom;
	if (cats_metrics_open(&prom, s->base, prom_ep, sci_stats_fill, s) != 0)
		return CATS_EXIT_FAIL;
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	for (size_t i = 0; i < CATS_ARRAY_LEN(sigs); i++) {
		evsignal_add(evsignal_new(s->base, sigs[i], on_signal, s),
		    NULL);
	}
	struct event *timer = event_new(s->base, -1, EV_PERSIST, on_timer, s);
	struct timeval tv = { (time_t)(s->interval_ms / 1000),
		(suseconds_t)(s->interval_ms % 1000) * 1000 };
	evtimer_add(timer, &tv);
	/* (MQTT: the first push once the broker took the connection) */
	if (s->to != NULL && s->mqtt == NULL)
		sci_push(s);
	event_base_dispatch(s->base);
	sci_end(s);
	cats_metrics_free(prom);
	return s->exit_code;
}

int
main(int argc, char **argv)
{
	enum { OPT_INSTANCES = 256, OPT_LOCATOR, OPT_PORT, OPT_CA, OPT_CERT,
		OPT_CERT_KEY, OPT_PROM };
	static const struct option longopts[] = {
		{ "ca-file", required_argument, NULL, OPT_CA },
		{ "cert", required_argument, NULL, OPT_CERT },
		{ "cert-key", required_argument, NULL, OPT_CERT_KEY },
		{ "comp-time", required_argument, NULL, 'C' },
		{ "count", required_argument, NULL, 'n' },
		{ "cs-id", required_argument, NULL, 'c' },
		{ "csci-id", required_argument, NULL, 's' },
		{ "exec", required_argument, NULL, 'e' },
		{ "ext", required_argument, NULL, 'x' },
		{ "gas", required_argument, NULL, 'g' },
		{ "health", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ "instances", required_argument, NULL, OPT_INSTANCES },
		{ "interval", required_argument, NULL, 'I' },
		{ "json", no_argument, NULL, 'j' },
		{ "key", required_argument, NULL, 'k' },
		{ "listen", required_argument, NULL, 'l' },
		{ "locator", required_argument, NULL, OPT_LOCATOR },
		{ "metrics", required_argument, NULL, 'm' },
		{ "once", no_argument, NULL, '1' },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "price", required_argument, NULL, 'p' },
		{ "prometheus", required_argument, NULL, OPT_PROM },
		{ "reputation", required_argument, NULL, 'R' },
		{ "security-level", required_argument, NULL, 'L' },
		{ "seq", required_argument, NULL, 'q' },
		CATS_TLS_LONGOPTS,
		{ "to", required_argument, NULL, 't' },
		{ "token", required_argument, NULL, 'K' },
		{ "ts", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct sci_reporter s;
	char err[400];
	bool have_seq = false, once = false;
	int ch, rc, verbosity = 1;

	cats_tool_init(argv[0]);
	s.m.health = CATS_HEALTHY;
	s.interval_ms = 10000;
	while ((ch = getopt_long(argc, argv, ":1C:c:e:g:H:hI:jK:k:L:l:m:n:p:q:"
	    "R:s:T:t:Vvx:", longopts, NULL)) != -1) {
		switch (ch) {
		case '1':
			once = true;
			break;
		case 'C':
			s.m.has_ct = true;
			s.m.ct = cats_opt_u64("--comp-time",
			    optarg, 0, CATS_U32);
			break;
		case 'c':
			s.cs = optarg;
			break;
		case 'e':
			s.exec = optarg;
			break;
		case 'g':
			s.m.has_gas = true;
			s.m.gas = cats_opt_u64("--gas", optarg, 0, CATS_U32);
			break;
		case 'H':
			if (sci_set_health(&s.m, optarg) < 0) {
				cats_errorx("--health: expected HEALTHY, "
				    "DEGRADED, UNHEALTHY or UNKNOWN");
				return CATS_EXIT_USAGE;
			}
			break;
		case 'I':
			s.interval_ms = cats_opt_ms("--interval", optarg);
			if (s.interval_ms == 0 || s.interval_ms > CATS_U32)
				cats_opt_fail("--interval", "%s is out of "
				    "range 1ms..%" PRIu64 "ms", optarg,
				    CATS_U32);
			break;
		case 'j':
			s.json = true;
			break;
		case 'K':
			if ((rc = sci_token_load(&s.token, optarg, err,
			    sizeof(err))) != CATS_EXIT_OK) {
				cats_errorx("%s", err);
				return rc;
			}
			break;
		case 'k':
			cats_opt_key("--key", optarg, CATS_KEY_ED25519_SECRET,
			    &s.key);
			s.have_key = true;
			break;
		case 'L':
			s.m.has_sec = true;
			s.m.sec = cats_opt_u64("--security-level",
			    optarg, 0, 255);
			break;
		case 'l':
			s.listen = optarg;
			break;
		case 'm':
			s.metrics_file = optarg;
			break;
		case 'n':
			s.count = cats_opt_u64("--count", optarg, 0, CATS_U53);
			break;
		case 'p':
			s.m.has_price = true;
			s.m.price = cats_opt_u64("--price",
			    optarg, 0, CATS_U32);
			break;
		case 'q':
			have_seq = true;
			s.seq = cats_opt_u64("--seq", optarg, 0, CATS_U53);
			break;
		case 'R':
			s.m.has_rep = true;
			s.m.rep = cats_opt_u64("--reputation", optarg, 0, 255);
			break;
		case 's':
			s.csci = optarg;
			break;
		case 'T':
			s.fixed_ts = true;
			s.ts = cats_opt_u64("--ts", optarg, 0, CATS_U53);
			break;
		case 't':
			s.to = optarg;
			break;
		case 'x': {
			char *eq = strchr(optarg, '=');
			if (eq == NULL || eq == optarg ||
			    s.m.next == SCI_MAX_EXT ||
			    (size_t)(eq - optarg) > CATS_ID) {
				cats_errorx("--ext: expected NAME=VALUE (at "
				    "most %d)", SCI_MAX_EXT);
				return CATS_EXIT_USAGE;
			}
			size_t i = s.m.next++;
			memcpy(s.m.extname[i], optarg, (size_t)(eq - optarg));
			s.m.extname[i][eq - optarg] = '\0';
			s.m.ext[i].k = s.m.extname[i];
			s.m.ext[i].v = cats_opt_u64("--ext",
			    eq + 1, 0, CATS_U53);
			break;
		}
		case OPT_CA:
			s.ca_file = optarg;
			break;
		case OPT_CERT:
			s.cert = optarg;
			break;
		case OPT_CERT_KEY:
			s.cert_key = optarg;
			break;
		case OPT_INSTANCES:
			s.m.has_inst = true;
			s.m.inst = cats_opt_u64("--instances",
			    optarg, 0, CATS_U32);
			break;
		case OPT_LOCATOR:
			if (cats_ip_parse(optarg, strlen(optarg),
			    &s.locator) < 0) {
				cats_errorx("--locator: not an IP address");
				return CATS_EXIT_USAGE;
			}
			break;
		case OPT_PROM:
			prom_ep = optarg;
			break;
		case OPT_PORT:
			s.has_port = true;
			s.port = cats_opt_u64("--port", optarg, 0, 65535);
			break;
		default:
			cats_opt_common(ch, argv, usage_text, &verbosity);
		}
	}
	cats_opt_no_operands(argc, argv);
	struct cats_ep ep;
	if (s.to != NULL && !sci_mqtt_is_url(s.to)) {
		if (cats_ep_parse(s.to, &ep, err, sizeof(err)) < 0)
			cats_opt_fail("--to", "%s", err);
		if (ep.kind != CATS_EP_HTTP && ep.kind != CATS_EP_HTTPS)
			cats_opt_fail("--to", "%s: expected an http://, "
			    "https://, mqtt:// or mqtts:// URL", s.to);
	}
	if (s.listen != NULL && cats_ep_parse(s.listen, &ep, err,
	    sizeof(err)) < 0)
		cats_opt_fail("--listen", "%s", err);
	if (s.csci == NULL || s.cs == NULL)
		cats_usage_fail("needs %s", s.csci == NULL ? "-s csci-id"
		    : "-c cs-id");
	if (strlen(s.csci) == 0 || strlen(s.csci) > CATS_ID ||
	    strlen(s.cs) == 0 || strlen(s.cs) > CATS_ID) {
		cats_errorx("CSCI-ID and CS-ID are 1 to %d bytes", CATS_ID);
		return CATS_EXIT_USAGE;
	}
	cats_log_verbosity(verbosity);
	if ((rc = cats_tls_setup()) != 0)
		return rc;
	if (!have_seq)
		s.seq = s.fixed_ts ? 1 : cats_clock_now();
	if (once || (s.to == NULL && s.listen == NULL)) {
		if (prom_ep != NULL) {
			cats_errorx("--prometheus: a running reporter's "
			    "(--listen or --to, without --once)");
			return CATS_EXIT_USAGE;
		}
		return sci_once(&s);
	}
	return do_daemon(&s);
}
