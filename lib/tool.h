/*
 * tool.h - what every cats main does the same way.
 */
#ifndef CATS_TOOL_H
#define CATS_TOOL_H

#include "rec.h"

/*
 * Name the tool for messages, ignore SIGPIPE (a closed pipe is an error
 * return, not a death), initialise libsodium.  Exits 1 if that fails.
 */
void cats_tool_init(const char *argv0);
/* "TOOL (cats) VERSION" on stdout. */
void cats_tool_version(void);
/* Fill r as a stats record from name/value pairs. */
void cats_stats_rec(struct cats_rec *r, const char *tool, const char *id,
    struct cats_kv *kv, size_t n, uint64_t now);

#endif
