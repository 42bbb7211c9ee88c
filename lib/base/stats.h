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
 *   is a gauge in ms since the epoch.  The record names its gauges and
 *   times (gauges), so that a tool that relays another's counters
 *   (cats-cps) types them as the textfile does (cats_stats_textfile()).
 * - A histogram (struct cats_hist, a latency in fixed buckets) is kept by
 *   its module and added by pointer; it is in the Prometheus text, not in
 *   the record (which has no place for one).
 * - One renderer, cats_stats_render(), writes the Prometheus text
 *   exposition (format 0.0.4) of a list: the textfile and the /metrics
 *   endpoint (net/metrics.h) are the same text.
 */
#ifndef CATS_STATS_H
#define CATS_STATS_H

#include <stdio.h>

#include "base/cats.h"
#include "rec/rec.h"

struct cats_stream;

enum cats_stat_kind { CATS_STAT_COUNTER, CATS_STAT_GAUGE, CATS_STAT_TIME,
	CATS_STAT_UNTYPED };

/*
 * A latency histogram: observations in microseconds, counted in fixed
 * buckets whose upper bounds are cats_hist_le_us[] (10 us to 10 s, in
 * 1-2.5-5 steps), the last bucket +Inf.  Zero it to start.
 */
#define CATS_HIST_NB 19
extern const uint64_t cats_hist_le_us[CATS_HIST_NB];
struct cats_hist {
	uint64_t n[CATS_HIST_NB + 1];	/* per bucket, not cumulative */
	uint64_t count;
	uint64_t sum_us;
};
/* Count one observation of us microseconds. */
void cats_hist_observe(struct cats_hist *h, uint64_t us);
/*
 * The q-quantile of h in microseconds, q in thousandths (500: the median,
 * 990: p99), as Prometheus's histogram_quantile() estimates it: linear
 * within the bucket the rank falls in; in the +Inf bucket, the last
 * bound.  0 when h is empty.  For the stats record, which has no place
 * for a histogram (a gauge NAME.p50_us, say).
 */
uint64_t cats_hist_quantile(const struct cats_hist *h, unsigned q);

struct cats_stats_list {
	const char *tool;	/* "cats-sma" */
	const char *id;		/* instance identity; NULL: none */
	struct cats_kv *kv;	/* name and value, in the order added */
	unsigned char *kind;	/* enum cats_stat_kind of each */
	size_t n, cap;
	const char **gname;	/* the gauges' and times' names, in order */
	size_t ng, gcap;
	const char **hname;	/* histograms: names */
	const struct cats_hist **hist;	/* and the histograms (not copied) */
	size_t nh, hcap;
};

/* An empty list for tool (and instance id, NULL: none). */
void cats_stats_init(struct cats_stats_list *st, const char *tool,
    const char *id);
/* Add a counter (only grows). */
void cats_stats_add(struct cats_stats_list *st, const char *name, uint64_t v);
/* Add a gauge (a state or a size: goes both ways). */
void cats_stats_gauge(struct cats_stats_list *st, const char *name, uint64_t v);
/* Add a value of unknown kind (relayed from another tool's record). */
void cats_stats_untyped(struct cats_stats_list *st, const char *name,
    uint64_t v);
/* Add a time, ms since the epoch (0: never). */
void cats_stats_time(struct cats_stats_list *st, const char *name, uint64_t ms);
/* Add n pairs of a module's own table as counters. */
void cats_stats_add_kv(struct cats_stats_list *st, const struct cats_kv *kv,
    size_t n);
/*
 * Add n pairs of a module's own table: those whose name is in gauges
 * (NULL-terminated; an entry ending in '*' names a prefix) as gauges, the
 * others as counters.
 */
void cats_stats_add_kv_gauges(struct cats_stats_list *st,
    const struct cats_kv *kv, size_t n, const char *const *gauges);
/*
 * Add a histogram of a latency NAME (its unit, seconds, is added to the
 * metric name).  h is not copied: it must outlive the rendering.
 */
void cats_stats_hist(struct cats_stats_list *st, const char *name,
    const struct cats_hist *h);
/*
 * For a tool that relays another's counters (cats-cps): the kind of
 * counter i of stats record r, as r says (a gauge if named in its gauges,
 * else a counter; untyped when r has no gauges), and a value added with
 * its kind.
 */
enum cats_stat_kind cats_stats_rec_kind(const struct cats_stats *r, size_t i);
void cats_stats_put(struct cats_stats_list *st, const char *name,
    uint64_t v, enum cats_stat_kind k);
/* r becomes the stats record at now, its gauges named; it points into st
 * (keep st). */
void cats_stats_record(const struct cats_stats_list *st, struct cats_rec *r,
    uint64_t now);
/* Send the stats record on a stream: what cats_stream_send() returns. */
int cats_stats_emit(const struct cats_stats_list *st, struct cats_stream *s,
    uint64_t now);
/* Write the stats record as one JSON line to f and flush f: 0 or -1. */
int cats_stats_print(const struct cats_stats_list *st, FILE *f, uint64_t now);
/*
 * A stats line's destination by its option (what, "--stats"): spec NULL or
 * "stderr", "-" (stdout) or "file:PATH" (appended to at each record).
 * cats_stats_dest_check(), at start: 0, or the exit code said in one line
 * ("what: spec: reason"): 2 for another spec, 74 for a file that cannot be
 * opened for appending.  cats_stats_print_to(): the record written there:
 * 0, or -1 said in one line (a file gone since, a write that failed).
 */
int cats_stats_dest_check(const char *what, const char *spec);
int cats_stats_print_to(const struct cats_stats_list *st, const char *what,
    const char *spec, uint64_t now);
/*
 * Append the Prometheus text exposition of the list to b: 0, or -1 out
 * of memory.  Each entry NAME of tool cats-x and instance ID is one
 * metric with its HELP and TYPE lines:
 *   cats_x_NAME_total{x_id="ID"} V       (counter; HELP "cats-x(1)
 *                                          STATISTICS NAME")
 *   cats_x_NAME{x_id="ID"} V             (gauge, or untyped; the same
 *                                          HELP)
 *   cats_x_NAME_seconds{x_id="ID"} S.mmm (time, a gauge; HELP "NAME,
 *                                          Unix time")
 * The prefix is the tool's name with '-' as '_', the label the tool's name
 * without "cats-" and "_id"; a character of NAME outside [A-Za-z0-9_] is
 * written '_'; ID is written as cats_quote() does; without an id there is
 * no label.  A counter or gauge NAME_ms (a duration in ms) is written in
 * the base unit: cats_x_NAME_seconds (gauge), cats_x_NAME_seconds_total
 * (counter), S.mmm; one NAME_us (in us) the same way, S.uuuuuu (trailing
 * zeros left out).  A histogram NAME is
 *   cats_x_NAME_seconds_bucket{x_id="ID",le="0.00001"} N  (cumulative,
 *                                          ... le="+Inf"), then
 *   cats_x_NAME_seconds_sum{x_id="ID"} S and _count{x_id="ID"} N
 *                                          (HELP "NAME, seconds").
 * An entry whose metric name another entry already has is left out (the
 * format allows one family per name).
 */
int cats_stats_render(const struct cats_stats_list *st, struct cats_buf *b);
/*
 * Write the list as a node_exporter textfile at path, atomically: to
 * PATH.tmp, then renamed over path; the text is cats_stats_render()'s.
 * Returns 0, or -1 with "FILE: reason" in err (PATH.tmp removed).
 */
int cats_stats_textfile(const struct cats_stats_list *st, const char *path,
    char *err, size_t errlen);
/*
 * At start, for the option what ("--textfile"): whether the textfile at
 * path can be written as cats_stats_textfile() writes it (PATH.tmp created
 * and removed; path no directory).  0, or 74 said in one line ("what: path:
 * reason").
 */
int cats_stats_textfile_check(const char *what, const char *path);
/* Empty the list for the next report, keeping its memory. */
void cats_stats_reset(struct cats_stats_list *st);
void cats_stats_free(struct cats_stats_list *st);

#endif
