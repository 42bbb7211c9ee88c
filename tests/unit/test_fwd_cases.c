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
