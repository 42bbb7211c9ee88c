/*
 * cats-fwd - ingress and egress CATS-Forwarder on TUN devices and AF_PACKET
 * (TPACKET_V2 rings), steered by bindings from cats-bind (001 §8).  The
 * packet path is lib/fwd (path.h, port.h, chan.h), run on the event loop by
 * loop.h; this is its options, its endpoints and its exit codes.
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "base/clock.h"
#include "base/conf.h"
#include "base/log.h"
#include "base/opt.h"
#include "base/tool.h"
#include "fwd/chan.h"
#include "fwd/loop.h"
#include "fwd/opt.h"
#include "fwd/path.h"
#include "fwd/steer.h"
#include "net/listener.h"
#include "net/metrics.h"
#include "net/tls.h"
#include "rec/json.h"
#include "sec/crypto.h"

/* usage_text: the SYNOPSIS and OPTIONS of cats-fwd(1). */
#include "cats-fwd.help.h"

static struct cats_fwdp_conf cf;
static struct cats_fwdp fw;
static struct event_base *base;
static struct cats_fwdl loop;
static struct cats_chan ch_select = { .name = "select",
	.deadline_ms = CATS_CHAN_DEADLINE_MS }, ch_bind = { .name = "bind",
	.is_bind = true, .deadline_ms = CATS_CHAN_DEADLINE_MS };
static struct cats_dec ctl_dec;
static struct cats_key key;
static struct cats_keyring peers;
static bool has_key, has_peers;
static const char *stats_ep, *prom_ep, *steer_ep;
static struct cats_fsteer steer;
static struct cats_keyring steer_keys;

/* ---- stats, signals ---- */

/* The /metrics of --prometheus: the stats record's counters. */
static void
fill_metrics(void *arg, struct cats_stats_list *st)
{
	static struct cats_fwdp_names names;
	(void)arg;
	cats_fwdp_stats_list(&fw, st, cf.id, &names);
}

/* The stats record, one JSON line, to --stats (stderr by default): 0, -1. */
static int
dump_stats(void)
{
	static struct cats_fwdp_names names;
	struct cats_stats_list st;
	cats_stats_init(&st, "cats-fwd", cf.id);
	cats_fwdp_stats(&fw, &st, &names);
	int rc = cats_stats_print_to(&st, "--stats", stats_ep,
	    cats_clock_now());
	cats_stats_free(&st);
	return rc;
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	(void)arg;
	if (sig == SIGHUP)
		cats_tls_reload();	/* as in every tool (cats(7)) */
	else if (sig == SIGUSR1)
		(void)dump_stats();
	else if (sig == SIGUSR2)
		cats_fwdp_dump_bindings(&fw, stderr, cats_clock_now());
	else
		event_base_loopbreak(base);
}

/* ---- options ---- */

static struct cats_port *
need_port(const char *spec, int role)
{
	char err[256];
	struct cats_port *pt = cats_fwdp_port(&fw, spec, role, err,
	    sizeof(err));
	if (pt == NULL) {
		cats_errorx("%s", err);
		exit(CATS_EXIT_USAGE);
	}
	return pt;
}

/* One more endpoint of --select or --bind (repeatable: the C-PS's instances). */
static void
add_chan(struct cats_chan *c, const char *opt, const char *spec)
{
	char err[320];
	if (cats_chan_add(c, spec, err, sizeof(err)) < 0) {
		cats_errorx("%s: %s", opt, err);
		exit(CATS_EXIT_USAGE);
	}
}

static void
need_chan(struct cats_chan *c)
{
	c->w = &fw;
	c->base = base;
	c->key = has_key ? &key : NULL;
	c->peers = has_peers ? &peers : NULL;
	c->dec = &ctl_dec;
	c->now = cats_clock_now;
	cats_chan_start(c);
}

enum { O_CLIENT = 256, O_CORE, O_SITE, O_SELECT, O_BIND, O_KEY, O_PEERS,
	O_SRC4, O_SRC6, O_SID, O_OWNS, O_SERVICE, O_INTERCEPT, O_AFFINITY,
	O_MODEB, O_PREC, O_TENANT, O_DP, O_MTU, O_PFLOW, O_PPKTS, O_PFLOWS,
	O_PCLIENT, O_PTIME, O_ICMP, O_SYNCTO, O_EPOCH, O_RING, O_STATS, O_LOG,
	O_ID, O_JUMBO, O_POLL, O_RETURN, O_FAST, O_RESERVE,
	O_PATHDOWN, O_NOPATHDOWN, O_TCPSTATE, O_TCPTIME, O_FLOWLABEL, O_LABEL, O_XNULL,
	O_FALLBACK, O_FBTTL, O_LEARNREV, O_ENCAPS, O_PROM, O_MSD, O_CTLDL,
	O_STEER, O_STEERKEYS, O_HELLO };

static const struct option longopts[] = {
	{ "affinity", required_argument, NULL, O_AFFINITY },
	{ "bind", required_argument, NULL, O_BIND },
	{ "client", required_argument, NULL, O_CLIENT },
	{ "core", required_argument, NULL, O_CORE },
	{ "ctl-deadline", required_argument, NULL, O_CTLDL },
	{ "dataplane", required_argument, NULL, O_DP },
	{ "encaps", required_argument, NULL, O_ENCAPS },
	{ "epoch", required_argument, NULL, O_EPOCH },
	{ "explicit-null", no_argument, NULL, O_XNULL },
	{ "fallback", required_argument, NULL, O_FALLBACK },
	{ "fallback-ttl", required_argument, NULL, O_FBTTL },
	{ "fast-path", no_argument, NULL, O_FAST },
	{ "flow-label", required_argument, NULL, O_FLOWLABEL },
	{ "hello-timeout", required_argument, NULL, O_HELLO },
	{ "help", no_argument, NULL, 'h' },
	{ "icmp-unreach", no_argument, NULL, O_ICMP },
	{ "id", required_argument, NULL, O_ID },
	{ "intercept", required_argument, NULL, O_INTERCEPT },
	{ "jumbo-core", no_argument, NULL, O_JUMBO },
	{ "key", required_argument, NULL, O_KEY },
	{ "label", required_argument, NULL, O_LABEL },
	{ "learn-reverse", required_argument, NULL, O_LEARNREV },
	{ "log", required_argument, NULL, O_LOG },
	{ "mode-b", required_argument, NULL, O_MODEB },
	{ "msd", required_argument, NULL, O_MSD },
	{ "mtu", required_argument, NULL, O_MTU },
	{ "no-path-down", no_argument, NULL, O_NOPATHDOWN },
	{ "owns", required_argument, NULL, O_OWNS },
	{ "path-down", no_argument, NULL, O_PATHDOWN },
	{ "peer-keys", required_argument, NULL, O_PEERS },
	{ "pending-client", required_argument, NULL, O_PCLIENT },
	{ "pending-flow", required_argument, NULL, O_PFLOW },
	{ "pending-flows", required_argument, NULL, O_PFLOWS },
	{ "pending-pkts", required_argument, NULL, O_PPKTS },
	{ "pending-timeout", required_argument, NULL, O_PTIME },
	{ "poll-us", required_argument, NULL, O_POLL },
	{ "precedence", required_argument, NULL, O_PREC },
	{ "prometheus", required_argument, NULL, O_PROM },
	{ "reserve-flows", required_argument, NULL, O_RESERVE },
	{ "return", required_argument, NULL, O_RETURN },
	{ "ring-frames", required_argument, NULL, O_RING },
	{ "select", required_argument, NULL, O_SELECT },
	{ "service", required_argument, NULL, O_SERVICE },
	{ "sid", required_argument, NULL, O_SID },
	{ "site", required_argument, NULL, O_SITE },
	{ "src4", required_argument, NULL, O_SRC4 },
	{ "src6", required_argument, NULL, O_SRC6 },
	{ "stats", required_argument, NULL, O_STATS },
	{ "steer", required_argument, NULL, O_STEER },
	{ "steer-keys", required_argument, NULL, O_STEERKEYS },
	{ "sync-timeout", required_argument, NULL, O_SYNCTO },
	{ "tcp-state", required_argument, NULL, O_TCPSTATE },
	{ "tcp-timeout", required_argument, NULL, O_TCPTIME },
	{ "tenant", required_argument, NULL, O_TENANT },
	CATS_TLS_LONGOPTS,
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

int
main(int argc, char **argv)
{
	const char *client = NULL, *core = NULL, *site = NULL;
	const char *keyfile = NULL, *peerfile = NULL, *select_ep = NULL;
	const char *steerkeys = NULL;
	uint64_t hello_ms = 0;
	int verbose = 1, c;
	char err[256];
	bool fast = false;
	uint64_t sync_ms = 3000;
	unsigned ring_frames = 0, reserve_flows = 8192;
	uint64_t poll_us = 0;
	cats_tool_init(argv[0]);
	cf.dataplane = -1;
	cf.path_down = true;
	cf.epoch = 0;
	while ((c = getopt_long(argc, argv, ":hvV", longopts, NULL)) != -1) {
		switch (c) {
		case O_ID:
			if (strlen(optarg) == 0 || strlen(optarg) > CATS_ID)
				cats_opt_fail("--id", "1 to %d bytes", CATS_ID);
			cf.id = optarg;
			break;
		case O_CLIENT:
			client = optarg;
			break;
		case O_CORE:
			core = optarg;
			break;
		case O_SITE:
			site = optarg;
			break;
		case O_SELECT:
			select_ep = optarg;
			add_chan(&ch_select, "--select", optarg);
			break;
		case O_BIND:
			if (cf.bind_ep == NULL)
				cf.bind_ep = optarg;
			add_chan(&ch_bind, "--bind", optarg);
			break;
		case O_KEY:
			keyfile = optarg;
			break;
		case O_PEERS:
			peerfile = optarg;
			break;
		case O_SRC4:
			cats_fwdp_opt_src(&cf, optarg, 4);
			break;
		case O_SRC6:
			cats_fwdp_opt_src(&cf, optarg, 6);
			break;
		case O_SID:
			cats_fwdp_opt_sid(&cf, optarg);
			break;
		case O_OWNS:
			cats_fwdp_opt_owns(&cf, optarg);
			break;
		case O_LABEL:
			cats_fwdp_opt_label(&cf, optarg);
			break;
		case O_XNULL:
			cf.fc.explicit_null = true;
			break;
		case O_RETURN:
			cats_fwdp_opt_return(&cf, optarg);
			break;
		case O_SERVICE:
			cats_fwdp_opt_service(&cf, optarg, false);
			break;
		case O_INTERCEPT:
			cats_fwdp_opt_service(&cf, optarg, true);
			break;
		case O_AFFINITY:
			cats_fwdp_opt_affinity(&cf, optarg);
			break;
		case O_MODEB:
			cats_fwdp_opt_modeb(&cf, optarg);
			break;
		case O_PREC:
			cats_fwdp_opt_precedence(&cf, optarg);
			break;
		case O_TENANT:
			if (strlen(optarg) > CATS_ID)
				cats_opt_fail("--tenant", "at most %d bytes",
				    CATS_ID);
			cf.tenant = optarg;
			break;
		case O_DP:
			cats_fwdp_opt_dataplane(&cf, optarg);
			break;
		case O_MSD:
			cf.fc.msd = (unsigned)cats_opt_u64("--msd", optarg, 1,
			    CATS_PKT_MAX_SIDS);
			break;
		case O_MTU:
			cf.mtu = (uint32_t)cats_opt_u64("--mtu",
			    optarg, 576, 65535);
			break;
		case O_PFLOW:
			cf.fc.pend_pkts_flow = (unsigned)cats_opt_u64(
			    "--pending-flow", optarg, 1, 1024);
			break;
		case O_PPKTS:
			cf.fc.pend_pkts = (unsigned)cats_opt_u64(
			    "--pending-pkts", optarg, 1, 1 << 24);
			break;
		case O_PFLOWS:
			cf.fc.pend_flows = (unsigned)cats_opt_u64(
			    "--pending-flows", optarg, 1, 1 << 24);
			break;
		case O_PCLIENT:
			cf.fc.pend_client = (unsigned)cats_opt_u64(
			    "--pending-client", optarg, 1, 65535);
			break;
		case O_PTIME:
			cf.fc.pend_ms = cats_opt_ms("--pending-timeout",
			    optarg);
			break;
		case O_ICMP:
			cf.icmp_unreach = true;
			break;
		case O_JUMBO:
			cf.jumbo = true;
			break;
		case O_FAST:
			fast = true;
			break;
		case O_PATHDOWN:
			cf.path_down = true;
			break;
		case O_NOPATHDOWN:
			cf.path_down = false;
			break;
		case O_SYNCTO:
			sync_ms = cats_opt_ms("--sync-timeout", optarg);
			break;
		case O_HELLO:
			if (cats_parse_hello_ms(optarg, &hello_ms, err,
			    sizeof(err)) < 0)
				cats_opt_fail("--hello-timeout", "%s", err);
			ch_select.hello_ms = ch_bind.hello_ms = hello_ms;
			break;
		case O_CTLDL:
			ch_select.deadline_ms = ch_bind.deadline_ms =
			    cats_opt_ms("--ctl-deadline", optarg);
			break;
		case O_ENCAPS:
			cats_fwdp_opt_encaps(&cf, optarg);
			break;
		case O_FALLBACK:
			if (cats_ifb_parse(&cf.fb, optarg, err, sizeof(err)) < 0) {
				cats_errorx("%s", err);
				exit(CATS_EXIT_USAGE);
			}
			break;
		case O_FBTTL:
			cf.fb.ttl_ms = cats_opt_ms("--fallback-ttl", optarg);
			break;
		case O_LEARNREV:
			cf.learn_rev_ms = cats_opt_ms("--learn-reverse", optarg);
			break;
		case O_FLOWLABEL:
			cf.fc.flowlabel_off = !cats_opt_bool("--flow-label",
			    optarg);
			break;
		case O_TCPSTATE:
			cf.fc.tcp_off = !cats_opt_bool("--tcp-state", optarg);
			break;
		case O_TCPTIME:
			if (cats_tcp_timeout_parse(&cf.fc, optarg, err,
			    sizeof(err)) < 0) {
				cats_errorx("%s", err);
				exit(CATS_EXIT_USAGE);
			}
			break;
		case O_EPOCH:
			cf.epoch = cats_opt_u64("--epoch",
			    optarg, 1, CATS_U53 / 1000 - 1);
			break;
		case O_POLL:
			poll_us = cats_opt_u64("--poll-us", optarg, 0, 1000);
			break;
		case O_RESERVE:
			reserve_flows = (unsigned)cats_opt_u64("--reserve-flows",
			    optarg, 0, 1u << 20);
			break;
		case O_RING:
			ring_frames = (unsigned)cats_opt_u64("--ring-frames",
			    optarg, 8, 65536);
			break;
		case O_PROM:
			prom_ep = optarg;
			break;
		case O_STATS:
			stats_ep = optarg;
			break;
		case O_STEER:
			steer_ep = optarg;
			break;
		case O_STEERKEYS:
			steerkeys = optarg;
			break;
		case O_LOG:
			if (cats_log_open(optarg) < 0)
				cats_opt_fail("--log", "%s: expected stderr or "
				    "syslog", optarg);
			break;
		default:
			cats_opt_common(c, argv, usage_text, &verbose);
		}
	}
	cats_opt_no_operands(argc, argv);
	cats_fwdp_opt_check(&cf, core, client, site, steer_ep, steerkeys);
	if ((c = cats_stats_dest_check("--stats", stats_ep)) != 0)
		return c;
	cats_log_verbosity(verbose);
	if ((c = cats_tls_setup()) != 0)
		return c;
	if (keyfile != NULL) {
		cats_opt_key("--key", keyfile, -1, &key);
		has_key = true;
	}
	if (peerfile != NULL) {
		cats_opt_keyring("--peer-keys", peerfile, &peers);
		has_peers = true;
	}
	/* The binding manager MACs what it sends us with a key derived
	 * from our PSK (cats-bind(1) FORWARDERS). */
	struct cats_key down;
	if (has_peers && has_key &&
	    cats_key_derive_down(&key, "cats-bind", &down) == 0 &&
	    cats_keyring_add(&peers, &down) < 0) {
		cats_errorx("--peer-keys: out of memory");
		return CATS_EXIT_FAIL;
	}
	explicit_bzero(&down, sizeof(down));
	if (steerkeys != NULL)
		cats_opt_keyring("--steer-keys", steerkeys, &steer_keys);
	if (cf.epoch == 0)
		cf.epoch = cats_clock_now();
	if (cats_tool_reserve((size_t)reserve_flows *
	    cats_fwd_flow_bytes()) < 0)
		cats_warnx("--reserve-flows %u: out of memory; not reserved",
		    reserve_flows);
	if (cats_fwdp_init(&fw, &cf) < 0 || (base = event_base_new()) == NULL ||
	    cats_fwdl_init(&loop, &fw, base, &ch_select, &ch_bind, poll_us) < 0)
		return CATS_EXIT_FAIL;
	fw.verbosity = verbose;
	cats_dec_init(&ctl_dec, NULL);

	if (client != NULL)
		need_port(client, CATS_PORT_CLIENT);
	need_port(core, CATS_PORT_CORE);
	if (site != NULL)
		need_port(site, CATS_PORT_SITE);
	/* An ingress asks for a data plane it advertises (cats_fwdp_dataplane). */
	if (client != NULL && cats_fwdp_dataplane(&fw) < 0)
		cats_usage_fail("--encaps: no data plane left to ask for "
		    "(srv6 and ipip6 need --src6, ipip4 --src4, srmpls an "
		    "af_packet core port)");
	if (cats_fwdp_open_ports(&fw, ring_frames, err, sizeof(err)) < 0) {
		cats_errorx("%s", err);
		return CATS_EXIT_FAIL;
	}
	if (fast && cats_fwdp_fast_start(&fw, err, sizeof(err)) < 0) {
		cats_errorx("--fast-path: %s", err);
		return CATS_EXIT_FAIL;
	}
	struct cats_metrics *prom;
	if (cats_metrics_open(&prom, base, prom_ep, fill_metrics, NULL) != 0)
		return CATS_EXIT_FAIL;
	struct cats_fsteer_in *steer_in = NULL;
	if (steer_ep != NULL) {
		cats_fsteer_init(&steer, cf.id);
		cats_fwdp_steer(&fw, &steer);
		if ((steer_in = cats_fsteer_listen(base, steer_ep, &steer,
		    &steer_keys, cats_clock_now, hello_ms, err,
		    sizeof(err))) == NULL) {
			cats_errorx("--steer: %s", err);
			return CATS_EXIT_FAIL;
		}
	}
	cats_fwdp_start(&fw, sync_ms, cats_clock_now());
	cats_chan_follow(&ch_bind, &ch_select);
	if (select_ep != NULL)
		need_chan(&ch_select);
	if (cf.bind_ep != NULL)
		need_chan(&ch_bind);
	if (cats_fwdl_start(&loop) < 0)
		return CATS_EXIT_FAIL;
	int sigs[] = { SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP };
	struct event *sev[5];
	for (int i = 0; i < 5; i++) {
		sev[i] = evsignal_new(base, sigs[i], on_signal, NULL);
		event_add(sev[i], NULL);
	}
	cats_info("%s: forwarding (epoch %" PRIu64 ")", cf.id, cf.epoch);
	event_base_dispatch(base);
	int rc = dump_stats() < 0 ? CATS_EXIT_IOERR : CATS_EXIT_OK;
	cats_chan_finish(&ch_bind);
	cats_chan_finish(&ch_select);
	for (int i = 0; i < 5; i++)
		event_free(sev[i]);
	cats_fwdl_free(&loop);
	cats_metrics_free(prom);
	cats_fsteer_in_free(steer_in);
	cats_keyring_free(&steer_keys);
	cats_fwdp_fast_stop(&fw);
	cats_fwdp_free(&fw);
	cats_dec_free(&ctl_dec);
	return rc;
}
