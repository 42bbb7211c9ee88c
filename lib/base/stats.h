/*
 * stats.h - the one stats writer of the tools: a list of named counters
 * that becomes the stats record (cats-records(5): tool, ts, id, counters)
 * and, for node_exporter, a Prometheus textfile.
 *
 * Contract:
 * - A tool fills a struct cats_stats_list each time it reports (init, add...,
 *   then emit/print/textfile, then free or reset).  The names are not
 *   copied: they must outlive the struct (string literals do).  Entries
 *   keep the order they were added in; an entry that cannot be stored
 *   (out of memory) is left out and the rest is still written.
 * - A counter only grows; a gauge goes both ways (states, sizes); a time
 *   is a gauge in ms since the epoch.  The record does not tell them
 *   apart; the textfile does (see cats_stats_textfile()).
 */
#ifndef CATS_STATS_H
#define CATS_STATS_H

#include <stdio.h>

#include "rec/rec.h"

struct cats_stream;

enum cats_stat_kind { CATS_STAT_COUNTER, CATS_STAT_GAUGE, CATS_STAT_TIME };

struct cats_stats_list {
	const char *tool;	/* "cats-sma" */
	const char *id;		/* instance identity; NULL: none */
	struct cats_kv *kv;	/* name and value, in the order added */
	unsigned char *kind;	/* enum cats_stat_kind of each */
	size_t n, cap;
};

/* An empty list for tool (and instance id, NULL: none). */
void cats_stats_init(struct cats_stats_list *st, const char *tool,
    const char *id);
/* Add a counter (only grows). */
void cats_stats_add(struct cats_stats_list *st, const char *name, uint64_t v);
/* Add a gauge (a state or a size: goes both ways). */
void cats_stats_gauge(struct cats_stats_list *st, const char *name, uint64_t v);
/* Add a time, ms since the epoch (0: never). */
void cats_stats_time(struct cats_stats_list *st, const char *name, uint64_t ms);
/* Add n pairs of a module's own table as counters. */
void cats_stats_add_kv(struct cats_stats_list *st, const struct cats_kv *kv,
    size_t n);
/* r becomes the stats record at now; it points into st (keep st). */
void cats_stats_record(const struct cats_stats_list *st, struct cats_rec *r,
    uint64_t now);
/* Send the stats record on a stream: what cats_stream_send() returns. */
int cats_stats_emit(const struct cats_stats_list *st, struct cats_stream *s,
    uint64_t now);
/* Write the stats record as one JSON line to f and flush f: 0 or -1. */
int cats_stats_print(const struct cats_stats_list *st, FILE *f, uint64_t now);
/*
 * Write the list as a node_exporter textfile at path, atomically: to
 * PATH.tmp, then renamed over path.  Each entry NAME of tool cats-x and
 * instance ID is one metric with its HELP and TYPE lines:
 *   cats_x_NAME_total{x_id="ID"} V       (counter; HELP "cats-x(1)
 *                                          STATISTICS NAME")
 *   cats_x_NAME{x_id="ID"} V             (gauge; the same HELP)
 *   cats_x_NAME_seconds{x_id="ID"} S.mmm (time, a gauge; HELP "NAME,
 *                                          Unix time")
 * The prefix is the tool's name with '-' as '_', the label the tool's name
 * without "cats-" and "_id"; a character of NAME outside [A-Za-z0-9_] is
 * written '_'; ID is written as cats_quote() does; without an id there is
 * no label.  Returns 0, or -1 with "FILE: reason" in err (PATH.tmp
 * removed).
 */
int cats_stats_textfile(const struct cats_stats_list *st, const char *path,
    char *err, size_t errlen);
/* Empty the list for the next report, keeping its memory. */
void cats_stats_reset(struct cats_stats_list *st);
void cats_stats_free(struct cats_stats_list *st);

#endif
