/*
 * test_opt.c - option values: the value back, or "tool: --opt: reason" on
 * stderr and exit 2, at both ends of each range.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "base/opt.h"
#include "t.h"

enum { U64, MS, SIZE, BOOL, FAIL };

struct run {
	int status;		/* exit status of the child; -1: none */
	uint64_t v;		/* the value it printed on success */
	char err[256];		/* what it wrote on stderr, less the newline */
};

/* Parse in a child, so that an exit is observed, not suffered. */
static struct run
run(int kind, const char *opt, const char *v, uint64_t min, uint64_t max)
{
	struct run r = { -1, 0, "" };
	int out[2], err[2];
	if (pipe(out) < 0 || pipe(err) < 0)
		return r;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		uint64_t x = 0;
		switch (kind) {
		case U64:
			x = cats_opt_u64(opt, v, min, max);
			break;
		case MS:
			x = cats_opt_ms(opt, v);
			break;
		case SIZE:
			x = cats_opt_size(opt, v);
			break;
		case BOOL:
			x = cats_opt_bool(opt, v);
			break;
		case FAIL:
			cats_opt_fail(opt, "must be %s", v);
		}
		printf("%llu", (unsigned long long)x);
		exit(0);
	}
	close(out[1]);
	close(err[1]);
	char buf[64] = "";
	ssize_t n = read(out[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	r.v = strtoull(buf, NULL, 10);
	n = read(err[0], r.err, sizeof(r.err) - 1);
	r.err[n > 0 ? n : 0] = '\0';
	/* One line: the newline is checked here, the text by the caller. */
	if (n > 0 && r.err[n - 1] == '\n')
		r.err[n - 1] = '\0';
	else if (n > 0)
		r.status = -1;
	close(out[0]);
	close(err[0]);
	int st;
	if (waitpid(pid, &st, 0) == pid && WIFEXITED(st))
		r.status = WEXITSTATUS(st);
	return r;
}

static int
good(struct run r, uint64_t v)
{
	return r.status == 0 && r.v == v && r.err[0] == '\0';
}

static int
bad(struct run r, const char *err)
{
	return r.status == 2 && strcmp(r.err, err) == 0;
}

static void
test_u64(void)
{
	struct run r;
	T_OK(good(run(U64, "--gas", "1", 1, 4), 1), "min is in");
	T_OK(good(run(U64, "--gas", "4", 1, 4), 4), "max is in");
	r = run(U64, "--gas", "0", 1, 4);
	T_OK(bad(r, "test_opt: --gas: 0 is out of range 1..4"),
	    "below min: %s", r.err);
	r = run(U64, "--gas", "5", 1, 4);
	T_OK(bad(r, "test_opt: --gas: 5 is out of range 1..4"),
	    "above max: %s", r.err);
	T_OK(good(run(U64, "--n", "18446744073709551615", 0, UINT64_MAX),
	    UINT64_MAX), "2^64-1 with max UINT64_MAX");
	r = run(U64, "--n", "18446744073709551616", 0, UINT64_MAX);
	T_OK(bad(r, "test_opt: --n: expected a number, got "
	    "\"18446744073709551616\""), "2^64: %s", r.err);
	r = run(U64, "--n", "", 0, 9);
	T_OK(bad(r, "test_opt: --n: expected a number, got \"\""),
	    "empty: %s", r.err);
	T_OK(bad(run(U64, "--n", "-1", 0, 9), "test_opt: --n: expected a "
	    "number, got \"-1\""), "negative");
	T_OK(bad(run(U64, "--n", "1x", 0, 9), "test_opt: --n: expected a "
	    "number, got \"1x\""), "trailing garbage");
	T_OK(bad(run(U64, "--n", " 1", 0, 9), "test_opt: --n: expected a "
	    "number, got \" 1\""), "leading space");
}

static void
test_ms(void)
{
	struct run r;
	T_OK(good(run(MS, "--idle", "0", 0, 0), 0), "0 ms");
	T_OK(good(run(MS, "--idle", "250", 0, 0), 250), "bare number: ms");
	T_OK(good(run(MS, "--idle", "250ms", 0, 0), 250), "250ms");
	T_OK(good(run(MS, "--idle", "2s", 0, 0), 2000), "2s");
	T_OK(good(run(MS, "--idle", "1d", 0, 0), 86400000), "1d");
	r = run(MS, "--idle", "2x", 0, 0);
	T_OK(bad(r, "test_opt: --idle: expected a duration (500ms, 2s, 5m, "
	    "1h), got \"2x\""), "bad unit: %s", r.err);
	T_OK(good(run(MS, "--idle", "213503982334d", 0, 0),
	    UINT64_C(213503982334) * 86400000), "largest whole days");
	r = run(MS, "--idle", "213503982335d", 0, 0);
	T_OK(bad(r, "test_opt: --idle: duration (500ms, 2s, 5m, 1h) "
	    "\"213503982335d\" is too large"), "one day more: %s", r.err);
}

static void
test_size(void)
{
	struct run r;
	T_OK(good(run(SIZE, "--max", "0", 0, 0), 0), "0 bytes");
	T_OK(good(run(SIZE, "--max", "64k", 0, 0), 65536), "64k");
	T_OK(good(run(SIZE, "--max", "1G", 0, 0), UINT64_C(1) << 30), "1G");
	r = run(SIZE, "--max", "1T", 0, 0);
	T_OK(bad(r, "test_opt: --max: expected a size (512, 64k, 16M), got "
	    "\"1T\""), "unknown unit: %s", r.err);
	T_OK(good(run(SIZE, "--max", "17179869183G", 0, 0),
	    UINT64_C(17179869183) << 30), "largest whole G");
	T_OK(bad(run(SIZE, "--max", "17179869184G", 0, 0), "test_opt: --max: "
	    "size (512, 64k, 16M) \"17179869184G\" is too large"),
	    "one G more");
}

static void
test_bool(void)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };
	for (size_t i = 0; i < 4; i++) {
		T_OK(good(run(BOOL, "--x", yes[i], 0, 0), 1), "%s", yes[i]);
		T_OK(good(run(BOOL, "--x", no[i], 0, 0), 0), "%s", no[i]);
	}
	struct run r = run(BOOL, "--x", "Yes", 0, 0);
	T_OK(bad(r, "test_opt: --x: expected yes or no, got \"Yes\""),
	    "case matters: %s", r.err);
}

static void
test_fail(void)
{
	struct run r = run(FAIL, "--window", "positive", 0, 0);
	T_OK(bad(r, "test_opt: --window: must be positive"), "the caller's "
	    "reason: %s", r.err);
}

int
main(int argc, char **argv)
{
	(void)argc;
	cats_log_init(argv[0]);
	test_u64();
	test_ms();
	test_size();
	test_bool();
	test_fail();
	return t_done();
}
