/*
 * test_select_conf.c - cats-select's options and configuration file: every
 * key and section, the command line winning over the file, the defaults,
 * and bad lines refused as "file:line: key: reason".
 */
#include <stdio.h>
#include <string.h>

#include "select/select_conf.h"
#include "t.h"

static struct cats_sel_opts o;
static struct cats_conf cf;

/* Parse text as the file "t.conf" into o (after what options set); -1 with
 * the error in err. */
static int
conf(const char *text, char *err, size_t errlen)
{
	cats_conf_free(&cf);
	memset(&cf, 0, sizeof(cf));
	if (cats_conf_parse(&cf, "t.conf", text, strlen(text), err,
	    errlen) < 0)
		return -1;
	return cats_sel_opts_conf(&o, &cf, err, errlen);
}

static void
fresh(void)
{
	memset(&o, 0, sizeof(o));
	cats_sel_opts_init(&o);
}

static void
test_defaults(void)
{
	fresh();
	cats_sel_opts_defaults(&o);
	T_OK(o.metric_ttl == 180000 && o.net_ttl == 30000 &&
	    o.purge_ms == 600000 && o.verbose == 1 && o.ingest_window == 30000,
	    "defaults: TTLs, purge, verbosity, ingest window");
	T_OK(o.sel.rate_global.per_s == 50000 &&
	    o.sel.rate_global.burst == 100000 &&
	    o.sel.rate_tenant.per_s == 10000 &&
	    o.sel.rate_client.per_s == 1000 &&
	    o.sel.rate_client.burst == 2000,
	    "admission limits of 001 section 9 when none is given");
	T_OK(o.sel.precedence == CATS_PREC_REJECT &&
	    o.sel.policy == CATS_POL_MIN_LATENCY && o.sel.window_ms == 30000,
	    "the selector's defaults");
}

static void
test_good(void)
{
	char err[512];
	fresh();
	int rc = conf("# cats-select\n"
	    "precedence = address\npolicy = cheapest\ndataplane = srv6\n"
	    "seed = 7\nwindow = 2s\nmetric-ttl = 1m\nnet-ttl = 5s\n"
	    "purge-after = 1h\nstats-interval = 10s\ninsecure = yes\n"
	    "limit = global=100:200\nlimit = tenant=off\nlimit = client=5\n"
	    "ingest-window = 3s\ndomain = d1\nkeys = /k\nservices = /s\n"
	    "metrics = /m\nnet = /n\nto = -\nstats-to = file:/st\naudit = stderr\n"
	    "ingest = http://127.0.0.1:0\ningest-keys = /ik\n"
	    "ingest-key = /isk\ntedb = /te\nlog = stderr\nid = ps-1\n"
	    "listen = unix:/a\nlisten = tcp:127.0.0.1:1\n"
	    "sma = S1=A,B\nsma-locators = S1=2001:db8::/32\n"
	    "[sma \"S2\"]\ncs-ids = *\nlocators = 10.0.0.0/8\n"
	    "egresses = EF-1 EF-2\n"
	    "[forwarder \"IF-1\"]\nuid = 1000\ntenants = t1 t2\n"
	    "[forwarder \"IF-2\"]\ntenants = t3\n", err, sizeof(err));
	T_OK(rc == 0, "a file with every key and section (%s)",
	    rc ? err : "ok");
	cats_sel_opts_defaults(&o);
	T_OK(o.sel.precedence == CATS_PREC_ADDRESS &&
	    o.sel.policy == CATS_POL_CHEAPEST &&
	    o.sel.dataplane == CATS_DP_SRV6 && o.sel.seed == 7 &&
	    o.sel.window_ms == 2000 && o.sel.insecure,
	    "selector keys: precedence, policy, dataplane, seed, window, "
	    "insecure");
	T_OK(o.metric_ttl == 60000 && o.net_ttl == 5000 &&
	    o.purge_ms == 3600000 && o.stats_ms == 10000 &&
	    o.ingest_window == 3000, "durations");
	T_OK(o.sel.rate_global.per_s == 100 && o.sel.rate_global.burst == 200 &&
	    o.sel.rate_tenant.per_s == 0 && o.sel.rate_client.per_s == 5 &&
	    o.sel.rate_client.burst == 5,
	    "limits: RATE:BURST, off, a burst of RATE");
	T_OK(strcmp(o.sel.domain, "d1") == 0 && strcmp(o.keys, "/k") == 0 &&
	    strcmp(o.services, "/s") == 0 && strcmp(o.metrics, "/m") == 0 &&
	    strcmp(o.net, "/n") == 0 && strcmp(o.to, "-") == 0 &&
	    strcmp(o.stats_to, "file:/st") == 0 && strcmp(o.audit, "stderr") == 0 &&
	    strcmp(o.ingest_keys, "/ik") == 0 &&
	    strcmp(o.ingest_key, "/isk") == 0 && strcmp(o.tedb, "/te") == 0 &&
	    strcmp(o.log, "stderr") == 0 && strcmp(o.id, "ps-1") == 0 &&
	    o.ingest != NULL, "file and endpoint keys");
	T_OK(o.nlisten == 2 && strcmp(o.listen[1], "tcp:127.0.0.1:1") == 0,
	    "listen adds");
	T_OK(o.nsmas == 2 && strcmp(o.smas[0].id, "S1") == 0 &&
	    strcmp(o.smas[0].cs, "A,B") == 0 &&
	    strcmp(o.smas[0].locators, "2001:db8::/32") == 0 &&
	    o.smas[0].egresses == NULL && strcmp(o.smas[1].id, "S2") == 0 &&
	    strcmp(o.smas[1].cs, "*") == 0 &&
	    strcmp(o.smas[1].egresses, "EF-1 EF-2") == 0,
	    "C-SMAs by key and by [sma] section, one slot each");
	T_OK(o.npc == 2 && strcmp(o.pc[0].id, "IF-1") == 0 &&
	    o.pc[0].uid == 1000 && strcmp(o.pc[0].tenants, "t1 t2") == 0 &&
	    o.pc[1].uid == UINT32_MAX && strcmp(o.pc[1].tenants, "t3") == 0,
	    "[forwarder] sections: uid (none: UINT32_MAX), tenants");
}

static void
test_precedence(void)
{
	char err[512];
	fresh();
	T_OK(cats_sel_opts_set(&o, "precedence", "explicit", false, err,
	    sizeof(err)) == 0 && cats_sel_opts_set(&o, "limit",
	    "global=9", false, err, sizeof(err)) == 0 &&
	    cats_sel_opts_set(&o, "services", "/cli", false, err,
	    sizeof(err)) == 0 && cats_sel_opts_set(&o, "listen", "unix:/c",
	    false, err, sizeof(err)) == 0, "options set");
	int rc = conf("precedence = address\nlimit = global=1\n"
	    "limit = client=3\nservices = /file\nlisten = unix:/f\n", err,
	    sizeof(err));
	cats_sel_opts_defaults(&o);
	T_OK(rc == 0 && o.sel.precedence == CATS_PREC_EXPLICIT &&
	    strcmp(o.services, "/cli") == 0, "an option wins over the file");
	T_OK(o.sel.rate_global.per_s == 9 && o.sel.rate_client.per_s == 3 &&
	    o.sel.rate_tenant.per_s == 10000,
	    "limits: per scope, the option's scope kept, the file's other "
	    "scope taken, the default for the third");
	T_OK(o.nlisten == 2, "listen of both");
	T_OK(cats_sel_opts_set(&o, "precedence", "address", false, err,
	    sizeof(err)) == 0 && o.sel.precedence == CATS_PREC_ADDRESS,
	    "a later option overrides an earlier one");
}

/* 129 bytes: one more than an identifier may have. */
#define D16 "0123456789abcdef"
#define D129 D16 D16 D16 D16 D16 D16 D16 D16 "x"

static void
test_bad(void)
{
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "precedence = sometimes\n",
		    "t.conf:1: precedence: unknown value \"sometimes\"" },
		{ "# x\npolicy = best\n", "t.conf:2: policy: unknown value" },
		{ "dataplane = mpls\n", "t.conf:1: dataplane: unknown value" },
		{ "seed = -1\n", "t.conf:1: seed: " },
		{ "window = soon\n", "t.conf:1: window: " },
		{ "insecure = maybe\n", "t.conf:1: insecure: " },
		{ "bogus = 1\n", "t.conf:1: bogus: unknown key" },
		{ "limit = global\n",
		    "t.conf:1: limit: expected SCOPE=RATE[:BURST]" },
		{ "limit = site=1\n",
		    "t.conf:1: limit: scope is global, tenant or client" },
		{ "limit = global=0\n", "t.conf:1: limit: " },
		{ "limit = global=5:x\n", "t.conf:1: limit: " },
		{ "sma = S1\n",
		    "t.conf:1: sma: expected SMA-ID=CS-ID[,...] or SMA-ID=*" },
		{ "sma-locators = =10.0.0.0/8\n",
		    "t.conf:1: sma-locators: expected SMA-ID=PREFIX" },
		{ "sma-egresses = S1=\n",
		    "t.conf:1: sma-egresses: expected SMA-ID=NODE" },
		{ "sma-locators = S1=not-a-prefix\n", "t.conf:1: sma-locators: " },
		{ "domain = " D129 "\n", "t.conf:1: domain: longer than 128 "
		    "bytes" },
		{ "sma = " D129 "=A\n", "t.conf:1: sma: an id longer than 128 "
		    "bytes" },
		{ "listen = a\nlisten = b\nlisten = c\nlisten = d\nlisten = e\n"
		    "listen = f\nlisten = g\nlisten = h\nlisten = i\n",
		    "t.conf:9: listen: at most 8" },
		{ "[sma \"S1\"]\nsites = x\n", "t.conf:2: sites: unknown key "
		    "(cs-ids, locators, egresses)" },
		{ "[sma \"S1\"]\nlocators = 300.0.0.0/8\n",
		    "t.conf:2: locators: " },
		{ "[nosuch]\nx = 1\n", "t.conf:2: x: unknown section [nosuch] "
		    "(use [forwarder \"ID\"] or [sma \"ID\"])" },
		{ "[forwarder]\nuid = 1\n", "t.conf:2: uid: unknown section" },
		{ "[forwarder \"F\"]\nuid = root\n", "t.conf:2: uid: " },
		{ "[forwarder \"F\"]\nuid = 4294967295\n", "t.conf:2: uid: " },
		{ "[forwarder \"F\"]\nkey = /k\n",
		    "t.conf:2: key: unknown key (uid, tenants)" },
	};
	char err[512];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fresh();
		int rc = conf(bad[i].text, err, sizeof(err));
		T_OK(rc < 0 && strncmp(err, bad[i].err, strlen(bad[i].err)) == 0,
		    "refused as \"%s\" (%s)", bad[i].err, rc < 0 ? err : "taken");
	}
	fresh();
	T_OK(cats_sel_opts_set(&o, "nosuch", "1", false, err,
	    sizeof(err)) < 0 && strcmp(err, "unknown key") == 0,
	    "an unknown option key (%s)", err);
}

static void
test_peercred(void)
{
	char err[256];
	fresh();
	T_OK(cats_sel_opts_peercred(&o, "IF-1=1000", err, sizeof(err)) == 0 &&
	    o.npc == 1 && strcmp(o.pc[0].id, "IF-1") == 0 &&
	    o.pc[0].uid == 1000 && o.pc[0].tenants == NULL, "--peercred ID=UID");
	T_OK(cats_sel_opts_peercred(&o, "a=b=7", err, sizeof(err)) == 0 &&
	    strcmp(o.pc[1].id, "a=b") == 0 && o.pc[1].uid == 7,
	    "the last = splits");
	T_OK(cats_sel_opts_peercred(&o, "=5", err, sizeof(err)) < 0 &&
	    strcmp(err, "expected FORWARDER-ID=UID") == 0, "no id (%s)", err);
	T_OK(cats_sel_opts_peercred(&o, "IF-1", err, sizeof(err)) < 0,
	    "no uid");
	T_OK(cats_sel_opts_peercred(&o, "IF-1=x", err, sizeof(err)) < 0,
	    "a uid that is no number (%s)", err);
	/* A forwarder of the file after one of --peercred: its own entry. */
	char cerr[512];
	T_OK(conf("[forwarder \"IF-1\"]\ntenants = t1\n", cerr,
	    sizeof(cerr)) == 0 && o.npc == 2 && o.pc[0].uid == 1000 &&
	    strcmp(o.pc[0].tenants, "t1") == 0,
	    "[forwarder] of an id given by --peercred adds its tenants");
}

int
main(void)
{
	test_defaults();
	test_good();
	test_precedence();
	test_bad();
	test_peercred();
	cats_conf_free(&cf);
	return t_done();
}
