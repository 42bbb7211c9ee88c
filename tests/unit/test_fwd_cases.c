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
