/*
 * test_stats.c - the stats writer: the record, its JSON line, the
 * Prometheus textfile (names, kinds, label, atomic write, errors).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/stats.h"
#include "rec/seq.h"
#include "t.h"

/* The whole of a small file, or "" (static buffer). */
static const char *
slurp(const char *path)
{
	static char buf[8192];
	buf[0] = '\0';
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return buf;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void
test_record(void)
{
	struct cats_stats_list st;
	struct cats_rec r;
	cats_stats_init(&st, "cats-x", "x-1");
	cats_stats_add(&st, "a", 1);
	cats_stats_gauge(&st, "b", 2);
	cats_stats_time(&st, "c", 3);
	struct cats_kv more[] = { { "d", 4 }, { "e", 5 } };
	cats_stats_add_kv(&st, more, 2);
	cats_stats_record(&st, &r, 99);
	const struct cats_stats *s = &r.u.stats;
	T_OK(r.type == CATS_T_STATS && strcmp(s->tool, "cats-x") == 0 &&
	    strcmp(s->id, "x-1") == 0 && s->ts == 99, "tool, id, ts");
	int order = s->counters.n == 5;
	for (size_t i = 0; order && i < 5; i++)
		order = s->counters.v[i].k[0] == (char)('a' + i) &&
		    s->counters.v[i].v == i + 1;
	T_OK(order, "counters of every kind, in the order added");
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	T_OK(cats_stats_print(&st, f, 99) == 0, "printed");
	fclose(f);
	T_OK(strcmp(text, "{\"type\":\"stats\",\"tool\":\"cats-x\",\"ts\":99,"
	    "\"id\":\"x-1\",\"counters\":{\"a\":1,\"b\":2,\"c\":3,\"d\":4,"
	    "\"e\":5},\"gauges\":[\"b\",\"c\"]}\n") == 0, "one JSON line, "
	    "its gauges named");
	free(text);
	/* On a stream: the record, CBOR. */
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	struct event_base *base = event_base_new();
	struct cats_stream *out = cats_stream_new(base, -1, sv[1], false, NULL,
	    0, NULL, NULL);
	T_OK(cats_stats_emit(&st, out, 99) == 0, "emitted");
	uint8_t buf[512];
	ssize_t n = read(sv[0], buf, sizeof(buf));
	struct cats_dec d;
	struct cats_rec back;
	struct cats_err e;
	cats_dec_init(&d, NULL);
	T_OK(n > 0 && cats_rec_decode(&d, buf, (size_t)n, &back, &e) == 0 &&
	    back.type == CATS_T_STATS && back.u.stats.counters.n == 5 &&
	    back.u.stats.counters.v[4].v == 5 && back.u.stats.ts == 99,
	    "the stream carries the stats record");
	cats_dec_free(&d);
	cats_stream_free(out);
	event_base_free(base);
	close(sv[0]);
	close(sv[1]);
	cats_stats_reset(&st);
	cats_stats_record(&st, &r, 1);
	T_OK(st.n == 0 && r.u.stats.counters.n == 0, "reset empties it");
	/* Past the first allocation (64 entries). */
	static char names[65][16];
	for (int i = 0; i < 65; i++) {
		snprintf(names[i], sizeof(names[i]), "n%d", i);
		cats_stats_add(&st, names[i], (uint64_t)i);
	}
	T_OK(st.n == 65 && st.kv[63].v == 63 && st.kv[64].v == 64 &&
	    strcmp(st.kv[64].k, "n64") == 0 && st.kind[64] == CATS_STAT_COUNTER,
	    "64 and 65 entries");
	cats_stats_free(&st);
	cats_stats_init(&st, "cats-x", NULL);
	cats_stats_record(&st, &r, 1);
	T_OK(r.u.stats.id == NULL && r.u.stats.counters.n == 0,
	    "no id, no counters");
	cats_stats_free(&st);
}

static void
test_textfile(void)
{
	char dir[] = "/tmp/test_stats_XXXXXX", path[64], tmp[128], err[256];
	if (mkdtemp(dir) == NULL) {
		T_OK(0, "mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/x.prom", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	struct cats_stats_list st;
	cats_stats_init(&st, "cats-sma", "sma-\"a\"");
	cats_stats_add(&st, "reports", 7);
	cats_stats_gauge(&st, "sync_state", 0);
	cats_stats_time(&st, "last_full", 1234);
	cats_stats_time(&st, "sync_last_ack", 5);
	cats_stats_time(&st, "never", 0);
	T_OK(cats_stats_textfile(&st, path, err, sizeof(err)) == 0,
	    "textfile written");
	/* As cats-sma's own writer had it, byte for byte. */
	const char *want =
	    "# HELP cats_sma_reports_total cats-sma(1) STATISTICS reports\n"
	    "# TYPE cats_sma_reports_total counter\n"
	    "cats_sma_reports_total{sma_id=\"sma-'a'\"} 7\n"
	    "# HELP cats_sma_sync_state cats-sma(1) STATISTICS sync_state\n"
	    "# TYPE cats_sma_sync_state gauge\n"
	    "cats_sma_sync_state{sma_id=\"sma-'a'\"} 0\n"
	    "# HELP cats_sma_last_full_seconds last_full, Unix time\n"
	    "# TYPE cats_sma_last_full_seconds gauge\n"
	    "cats_sma_last_full_seconds{sma_id=\"sma-'a'\"} 1.234\n"
	    "# HELP cats_sma_sync_last_ack_seconds sync_last_ack, Unix time\n"
	    "# TYPE cats_sma_sync_last_ack_seconds gauge\n"
	    "cats_sma_sync_last_ack_seconds{sma_id=\"sma-'a'\"} 0.005\n"
	    "# HELP cats_sma_never_seconds never, Unix time\n"
	    "# TYPE cats_sma_never_seconds gauge\n"
	    "cats_sma_never_seconds{sma_id=\"sma-'a'\"} 0.000\n";
	const char *got = slurp(path);
	T_OK(strcmp(got, want) == 0, "counter, gauge and times as cats-sma "
	    "wrote them");
	if (strcmp(got, want) != 0)
		printf("# got:\n%s", got);
	T_OK(access(tmp, F_OK) < 0, "no .tmp left");
	cats_stats_free(&st);

	/* Other tools: names made valid, the label from the tool's name. */
	cats_stats_init(&st, "cats-bind", NULL);
	cats_stats_add(&st, "in.records", 3);
	T_OK(cats_stats_textfile(&st, path, err, sizeof(err)) == 0 &&
	    strcmp(slurp(path), "# HELP cats_bind_in_records_total "
	    "cats-bind(1) STATISTICS in.records\n"
	    "# TYPE cats_bind_in_records_total counter\n"
	    "cats_bind_in_records_total 3\n") == 0,
	    "'.' as '_', no id: no label, the file replaced");
	cats_stats_free(&st);
	cats_stats_init(&st, "tool-2", "i");
	cats_stats_gauge(&st, "g", UINT64_C(9007199254740991));
	T_OK(cats_stats_textfile(&st, path, err, sizeof(err)) == 0 &&
	    strcmp(slurp(path), "# HELP tool_2_g tool-2(1) STATISTICS g\n"
	    "# TYPE tool_2_g gauge\ntool_2_g{tool_2_id=\"i\"} "
	    "9007199254740991\n") == 0, "a tool not named cats-");
	cats_stats_free(&st);
	cats_stats_init(&st, "cats-x", NULL);
	T_OK(cats_stats_textfile(&st, path, err, sizeof(err)) == 0 &&
	    slurp(path)[0] == '\0', "an empty list: an empty file");

	/* Errors name the file; nothing is left behind. */
	char bad[128];
	snprintf(bad, sizeof(bad), "%s/no/x.prom", dir);
	T_OK(cats_stats_textfile(&st, bad, err, sizeof(err)) < 0 &&
	    strstr(err, "/no/x.prom.tmp: No such file or directory") != NULL,
	    "a missing directory: %s", err);
	char sub[80];
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	mkdir(sub, 0700);
	char subf[96];
	snprintf(subf, sizeof(subf), "%s/f", sub);
	fclose(fopen(subf, "w"));
	T_OK(cats_stats_textfile(&st, sub, err, sizeof(err)) < 0 &&
	    strncmp(err, sub, strlen(sub)) == 0 && strstr(err, ".tmp") == NULL,
	    "a rename that fails names the file: %s", err);
	snprintf(tmp, sizeof(tmp), "%s.tmp", sub);
	T_OK(access(tmp, F_OK) < 0, "and removes the .tmp");
	cats_stats_free(&st);
	unlink(subf);
	rmdir(sub);
	unlink(path);
	rmdir(dir);
}

static void
test_render(void)
{
	struct cats_hist h = { 0 };
	cats_hist_observe(&h, 0);
	cats_hist_observe(&h, 10);
	cats_hist_observe(&h, 11);
	cats_hist_observe(&h, 2500000);
	cats_hist_observe(&h, 60000000);
	T_OK(h.count == 5 && h.sum_us == 62500021 && h.n[0] == 2 &&
	    h.n[1] == 1 && h.n[16] == 1 && h.n[CATS_HIST_NB] == 1,
	    "observations counted in their buckets, the bound included");
	/* Quantiles: 5 observations, ranks 1..5; p50 is rank 3 (bucket
	 * 10-25 us, its only one: 25), p99 rank 5 (+Inf: the last bound). */
	struct cats_hist z = { 0 }, u = { 0 };
	for (int i = 0; i < 100; i++)
		cats_hist_observe(&u, i < 90 ? 600 : 3000);
	T_OK(cats_hist_quantile(&z, 500) == 0 && cats_hist_quantile(&h, 500)
	    == 25 && cats_hist_quantile(&h, 990) == 10000000 &&
	    cats_hist_quantile(&h, 0) == 5, "quantiles: empty 0, p50 within "
	    "its bucket, p99 in +Inf the last bound");
	T_OK(cats_hist_quantile(&u, 500) == 500 + 500 * 50 / 90 &&
	    cats_hist_quantile(&u, 990) == 2500 + 2500 * 9 / 10,
	    "quantiles interpolate linearly in the bucket (%" PRIu64 ", %"
	    PRIu64 ")", cats_hist_quantile(&u, 500),
	    cats_hist_quantile(&u, 990));
	struct cats_stats_list st;
	cats_stats_init(&st, "cats-pce", "p");
	cats_stats_add(&st, "a.b", 1);
	cats_stats_gauge(&st, "lat.p50_us", 1500);
	cats_stats_add(&st, "a_b", 2);
	cats_stats_hist(&st, "computation", &h);
	cats_stats_hist(&st, "computation", &h);
	struct cats_buf b = { 0 };
	T_OK(cats_stats_render(&st, &b) == 0, "rendered");
	cats_buf_add(&b, "", 1);
	const char *got = (const char *)b.p;
	T_OK(strstr(got, "# TYPE cats_pce_lat_p50_seconds gauge\n"
	    "cats_pce_lat_p50_seconds{pce_id=\"p\"} 0.0015\n") != NULL,
	    "a gauge NAME_us in seconds, to the microsecond");
	T_OK(strstr(got, "cats_pce_a_b_total{pce_id=\"p\"} 1\n") != NULL &&
	    strstr(got, "_a_b_total{pce_id=\"p\"} 2") == NULL, "a second entry of one name is left "
	    "out");
	T_OK(strstr(got, "# HELP cats_pce_computation_seconds computation, "
	    "seconds\n# TYPE cats_pce_computation_seconds histogram\n"
	    "cats_pce_computation_seconds_bucket{pce_id=\"p\",le=\"0.00001\"}"
	    " 2\ncats_pce_computation_seconds_bucket{pce_id=\"p\","
	    "le=\"0.000025\"} 3\n") != NULL, "a histogram: HELP, TYPE, "
	    "cumulative buckets in seconds");
	T_OK(strstr(got, "le=\"10\"} 4\ncats_pce_computation_seconds_bucket"
	    "{pce_id=\"p\",le=\"+Inf\"} 5\n"
	    "cats_pce_computation_seconds_sum{pce_id=\"p\"} 62.500021\n"
	    "cats_pce_computation_seconds_count{pce_id=\"p\"} 5\n") != NULL,
	    "+Inf, _sum and _count");
	const char *once = strstr(got, "# TYPE cats_pce_computation_seconds");
	T_OK(once != NULL && strstr(once + 1, "# TYPE cats_pce_computation")
	    == NULL, "one family per name");
	cats_stats_reset(&st);
	T_OK(st.n == 0 && st.nh == 0, "reset empties histograms too");
	cats_buf_free(&b);
	cats_stats_free(&st);
}

/*
 * The record names its gauges and times; a relay reads each counter's
 * kind back from the decoded record (cats-cps), untyped from a record
 * that does not say.
 */
static void
test_record_kinds(void)
{
	struct cats_stats_list st;
	cats_stats_init(&st, "cats-x", "x1");
	cats_stats_add(&st, "requests", 7);
	cats_stats_gauge(&st, "pending", 2);
	cats_stats_time(&st, "last_ms", 1000);
	cats_stats_add(&st, "bad", 0);
	struct cats_rec r, back;
	cats_stats_record(&st, &r, 5);
	struct cats_buf b = { 0 };
	struct cats_dec d;
	struct cats_err e;
	cats_dec_init(&d, NULL);
	T_OK(cats_rec_encode(&r, &b, false) == 0 &&
	    cats_rec_decode(&d, b.p, b.len, &back, &e) == 0 &&
	    back.type == CATS_T_STATS, "the stats record round-trips");
	const struct cats_stats *x = &back.u.stats;
	T_OK(x->gauges.n == 2 && strcmp(x->gauges.v[0], "pending") == 0 &&
	    strcmp(x->gauges.v[1], "last_ms") == 0, "its gauges: the gauge "
	    "and the time");
	T_OK(x->counters.n == 4 &&
	    cats_stats_rec_kind(x, 0) == CATS_STAT_COUNTER &&
	    cats_stats_rec_kind(x, 1) == CATS_STAT_GAUGE &&
	    cats_stats_rec_kind(x, 2) == CATS_STAT_GAUGE &&
	    cats_stats_rec_kind(x, 3) == CATS_STAT_COUNTER,
	    "each counter's kind read back");
	back.u.stats.has &= ~(UINT64_C(1) << CATS_STS_gauges);
	T_OK(cats_stats_rec_kind(x, 1) == CATS_STAT_UNTYPED,
	    "a record that does not say: untyped");
	cats_stats_reset(&st);
	cats_stats_add(&st, "requests", 8);
	cats_stats_record(&st, &r, 6);
	T_OK(r.u.stats.gauges.n == 0 && (r.u.stats.has &
	    (UINT64_C(1) << CATS_STS_gauges)), "after a reset: no gauge, "
	    "and said so");
	cats_dec_free(&d);
	cats_buf_free(&b);
	cats_stats_free(&st);
}

int
main(void)
{
	test_record();
	test_textfile();
	test_render();
	test_record_kinds();
	return t_done();
}
