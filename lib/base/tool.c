/*
 * tool.c - shared start-up of the cats tools.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sec/crypto.h"
#include "base/log.h"
#include "base/tool.h"
#include "rec/seq.h"

static bool output_reported;

int
cats_tool_output_failed(const char *what, int err)
{
	if (!output_reported) {
		output_reported = true;
		if (err != 0)
			cats_errorx("%s: write error: %s", what, strerror(err));
		else
			cats_errorx("%s: write error", what);
	}
	return CATS_EXIT_IOERR;
}

/*
 * At exit, what stdio still holds for stdout is written: a full disk, a
 * closed pipe or an earlier failed write ends the run in 74 with one line,
 * whatever main returned (a lost output is never a success).
 */
static void
check_stdout(void)
{
	errno = 0;
	bool failed = fflush(stdout) != 0;
	int err = errno;
	if (!failed && ferror(stdout)) {
		failed = true;
		err = 0;
	}
	if (failed) {
		cats_tool_output_failed("stdout", err);
		_exit(CATS_EXIT_IOERR);
	}
}

void
cats_tool_init(const char *argv0)
{
	cats_log_init(argv0);
	signal(SIGPIPE, SIG_IGN);
	/* Options are refused by cats_opt_refused(), in the tools' words. */
	opterr = 0;
	atexit(check_stdout);
	if (cats_crypto_init() < 0) {
		cats_errorx("cannot initialise libsodium");
		exit(CATS_EXIT_FAIL);
	}
}

void
cats_tool_help(const char *text)
{
	/* Straight to the descriptor: no stdio error left for the exit
	 * check to report. */
	if (fflush(stdout) != 0 ||
	    cats_write_all(STDOUT_FILENO, text, strlen(text)) < 0) {
		if (errno != EPIPE)
			_exit(cats_tool_output_failed("stdout", errno));
		clearerr(stdout);
	}
	exit(CATS_EXIT_OK);
}

#define HUGE_PAGE ((uintptr_t)2 << 20)
#define HEAP_STEP (64 << 20)

void
cats_tool_hugepages(void)
{
	static int state;	/* 0 unset, 1 on, -1 off */
	static uintptr_t done;	/* the heap is advised up to here */
	if (state == 0) {
		const char *v = getenv("CATS_HUGEPAGES");
		state = v != NULL && strcmp(v, "0") == 0 ? -1 : 1;
		if (state < 0)
			return;
		mallopt(M_TOP_PAD, HEAP_STEP);
		/* Tables' arrays on the heap too, not in mmap'd chunks. */
		mallopt(M_MMAP_THRESHOLD, HEAP_STEP / 2);
		done = ((uintptr_t)sbrk(0) + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
		free(malloc(1));	/* the first step of growth */
	}
	if (state < 0)
		return;
	uintptr_t top = (uintptr_t)sbrk(0) & ~(HUGE_PAGE - 1);
	if (top <= done)
		return;
	/* An error (no THP, old kernel) only means small pages. */
	(void)madvise((void *)done, top - done, MADV_HUGEPAGE);
	done = top;
}

#define RESERVE_PIECE ((size_t)16 << 20)	/* below the mmap threshold */
#define RESERVE_PIECES 256

int
cats_tool_reserve(size_t bytes)
{
	if (bytes == 0)
		return 0;
	if (bytes > RESERVE_PIECE * RESERVE_PIECES)
		bytes = RESERVE_PIECE * RESERVE_PIECES;
	cats_tool_hugepages();
	/* Tables' arrays on the heap too, and what is freed stays there. */
	mallopt(M_MMAP_THRESHOLD, HEAP_STEP / 2);
	mallopt(M_TRIM_THRESHOLD, bytes < INT_MAX - HEAP_STEP ?
	    (int)(bytes + HEAP_STEP) : INT_MAX);
	char *piece[RESERVE_PIECES];
	size_t len[RESERVE_PIECES];
	size_t n = 0, left = bytes, page = (size_t)sysconf(_SC_PAGESIZE);
	for (; left > 0; n++) {
		len[n] = left < RESERVE_PIECE ? left : RESERVE_PIECE;
		if ((piece[n] = malloc(len[n])) == NULL)
			break;
		left -= len[n];
	}
	/* Advise before the first touch, so that faults map huge pages. */
	cats_tool_hugepages();
	for (size_t i = 0; i < n && left == 0; i++)
		for (size_t off = 0; off < len[i]; off += page)
			((volatile char *)piece[i])[off] = 0;
	while (n > 0)
		free(piece[--n]);
	return left == 0 ? 0 : -1;
}

void
cats_tool_version(void)
{
	printf("%s (cats) %s\n", cats_log_tool(), CATS_VERSION);
}

void
cats_stats_rec(struct cats_rec *r, const char *tool, const char *id,
    struct cats_kv *kv, size_t n, uint64_t now)
{
	cats_rec_init(r, CATS_T_STATS);
	r->u.stats.tool = tool;
	r->u.stats.id = id;
	r->u.stats.ts = now;
	r->u.stats.counters.v = kv;
	r->u.stats.counters.n = n;
}
