/*
 * tool.h - what every cats main does the same way.
 */
#ifndef CATS_TOOL_H
#define CATS_TOOL_H

#include "rec/rec.h"

/*
 * Name the tool for messages, ignore SIGPIPE (a closed pipe is an error
 * return, not a death), initialise libsodium.  Exits 1 if that fails.
 * Silences getopt (opterr = 0: the tool reports with cats_opt_refused())
 * and checks stdout at exit: if what stdio holds cannot be written (ENOSPC,
 * EPIPE) or an earlier write failed, one line and exit 74 (cats(7)).
 */
void cats_tool_init(const char *argv0);
/*
 * A write to what ("stdout", "--to", a path) failed with errno err (0:
 * unknown): "tool: what: write error: reason" once per run (later failures
 * of the same run are not repeated), returns CATS_EXIT_IOERR (74).
 */
int cats_tool_output_failed(const char *what, int err);
/*
 * Back the heap with transparent huge pages (MADV_HUGEPAGE), as glibc's
 * glibc.malloc.hugetlb=1 tunable would: the large tables (CST, NST,
 * bindings) are read in random order, and on a virtual machine each TLB
 * miss walks two page tables.  The first call makes the heap grow in steps
 * of 64 MiB; each later call advises what the heap grew by since (a
 * compare when it did not), so that a tool calls it as it loads and runs.
 * CATS_HUGEPAGES=0 in the environment turns it off; where the kernel has no
 * THP the advice is ignored.
 */
void cats_tool_hugepages(void);
/*
 * Take bytes of heap now, touch every page of it and give it back to
 * malloc, which then keeps it (no trimming) and serves later allocations
 * of the tool from it: a burst of new state (bindings, pending flows, the
 * tables that index them) then takes no page faults.  On a virtual machine
 * with shadow page tables a fault costs 10-15 us, as much as the rest of a
 * new flow's work.  The heap is advised huge pages as cats_tool_hugepages()
 * does.  Returns -1 if the memory could not be had (none is touched).
 */
int cats_tool_reserve(size_t bytes);
/* "TOOL (cats) VERSION" on stdout. */
void cats_tool_version(void);
/*
 * --help: text on stdout, then exit 0.  A reader that is gone (EPIPE:
 * "cats-x --help | head -1") is no failure, the reader had what it wanted;
 * any other write error is one line and 74.
 */
void cats_tool_help(const char *text) __attribute__((noreturn));
/* Fill r as a stats record from name/value pairs. */
void cats_stats_rec(struct cats_rec *r, const char *tool, const char *id,
    struct cats_kv *kv, size_t n, uint64_t now);

#endif
