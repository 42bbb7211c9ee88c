/*
 * tool.c - shared start-up of the cats tools.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "crypto.h"
#include "log.h"
#include "tool.h"

void
cats_tool_init(const char *argv0)
{
	cats_log_init(argv0);
	signal(SIGPIPE, SIG_IGN);
	if (cats_crypto_init() < 0) {
		cats_errorx("cannot initialise libsodium");
		exit(CATS_EXIT_FAIL);
	}
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
