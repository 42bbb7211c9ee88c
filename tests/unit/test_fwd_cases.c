/*
 * test_fwd_cases.c - every packet fixture of tests/data/fwd (README there)
 * run through the lib/fwd packet path with fake ports: no root, no
 * namespaces.  One test per case: the packets out of each port byte for
 * byte, the drop reason, the counters and the control records it names.
 */
#include "test_fwd_cases.h"
#include "base/log.h"
#include "t.h"

int
main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "tests/data/fwd";
	static struct cats_fwdp w;
	static struct fcase c;
	char **names, path[512];
	cats_log_init("test_fwd_cases");
	cats_log_verbosity(0);
	/* The service addresses of --service and --intercept. */
	struct cats_fwd_svc sv;
	char err[320];
	T_OK(cats_fwd_svc_parse("S1=203.0.113.100:80/tcp", false, &sv, err,
	    sizeof(err)) == 0 && strcmp(sv.cs_id, "S1") == 0 &&
	    sv.addr.af == 4 && sv.port == 80 && sv.proto == 6,
	    "--service CSID=ADDR:PORT/PROTO");
	T_OK(cats_fwd_svc_parse("S2=[2001:db8::1]:53/udp", false, &sv, err,
	    sizeof(err)) == 0 && sv.addr.af == 6 && sv.port == 53 &&
	    sv.proto == 17, "--service CSID=[ADDR6]:PORT/PROTO");
	T_OK(cats_fwd_svc_parse("2001:db8::200", true, &sv, err,
	    sizeof(err)) == 0 && sv.cs_id[0] == '\0' && sv.port == 0,
	    "--intercept ADDR6 without a port");
	T_OK(cats_fwd_svc_parse("S1=1.2.3.4:0", false, &sv, err,
	    sizeof(err)) < 0 && strstr(err, "--service") != NULL,
	    "--service port 0 refused: %s", err);
	/* The hello says what the forwarder can do; --encaps narrows it. */
	static struct fcase c0;
	memset(&c0, 0, sizeof(c0));
	snprintf(c0.name, sizeof(c0.name), "hello");
	T_OK(fc_setup(&w, &c0, 0) == 0, "a forwarder with no case");
	cats_fwdp_hello(&w, 1000);
	T_OK(fc_rec_seen("status", "event=hello caps=yes") &&
	    strstr(fc_caps, " ingress ") && strstr(fc_caps, " srv6 ") &&
	    strstr(fc_caps, " srv6-msd=16 ") && strstr(fc_caps, " srmpls ") &&
	    strstr(fc_caps, " ipip4 ") && strstr(fc_caps, " ipip6 ") &&
	    strstr(fc_caps, " ip ") && strstr(fc_caps, " mode-a ") &&
	    strstr(fc_caps, " tcp-state ") && !strstr(fc_caps, " egress ") &&
	    !strstr(fc_caps, "fast-path"), "hello capabilities:%s", fc_caps);
	/* A change is told within a second (status refreshed). */
	w.tab.c.encaps = 1u << CATS_DP_SRMPLS;
	fc_seen.n = 0;
	cats_fwdp_tick(&w, 1500, true);
	T_OK(fc_seen.n == 0, "not before a second");
	cats_fwdp_tick(&w, 2100, true);
	T_OK(fc_rec_seen("status", "event=refreshed reason=capabilities "
	    "caps=yes") && !strstr(fc_caps, " srv6") && strstr(fc_caps,
	    " srmpls "), "a change of capabilities is told:%s", fc_caps);
	fc_seen.n = 0;
	cats_fwdp_tick(&w, 3200, true);
	T_OK(fc_seen.n == 0, "once");
	cats_fwdp_free(&w);
	int n = fc_list(dir, &names);
	T_OK(n >= 40, "%d fixtures in %s (at least 40)", n, dir);
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s.case", dir, names[i]);
		bool ok = fc_load(&c, path, names[i]) == 0 &&
		    fc_setup(&w, &c, 0) == 0;
		struct fc_stats before;
		if (ok) {
			fc_stats(&w, &before);
			ok = fc_run(&w, &c, c.nl) == 0 && fc_check(&w, &c, &before);
			cats_fwdp_free(&w);
		}
		T_OK(ok, "%s: %s", names[i], c.doc);
		fc_free(&c);
		free(names[i]);
	}
	free(names);
	return t_done();
}
