/*
 * test_prom.c - cats-top's reader of the Prometheus text (view/prom.h) and
 * its screen (view/top.h): what it takes, what it refuses and why, the
 * rates and percentiles of an interval.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"
#include "view/prom.h"
#include "view/top.h"
#include "t.h"

static int
parse(struct cats_prom *p, const char *s, char *err, size_t len)
{
	return cats_prom_parse(p, s, strlen(s), err, len);
}

static void
test_parse(void)
{
	struct cats_prom p;
	char err[256], v[64];
	const char *ok =
	    "# HELP x_total a counter\n"
	    "# TYPE x_total counter\n"
	    "x_total{a=\"1\"} 3\n"
	    "x_total{a=\"2\",} 4 1700000000000\r\n"
	    "\n"
	    "# a comment\n"
	    "  g{k=\"q\\\"uo\\\\te\\n\"} -1.5e3\n"
	    "h_bucket{le=\"+Inf\"} 2\n"
	    "h_bucket{le=\"0.5\"} 1\n"
	    "n NaN\n";
	T_OK(parse(&p, ok, err, sizeof(err)) == 0, "valid text: %s", err);
	double s;
	T_OK(cats_prom_sum(&p, "x_total", &s) && s == 7, "summed over labels");
	T_OK(cats_prom_type(&p, "x_total") == CATS_PT_COUNTER &&
	    cats_prom_type(&p, "g") == CATS_PT_UNTYPED, "TYPE lines");
	size_t i, n = cats_prom_find(&p, "h_bucket", &i);
	T_OK(n == 2 && p.s[i].le == 0.5 && isinf(p.s[i + 1].le),
	    "buckets sorted by le");
	n = cats_prom_find(&p, "g", &i);
	T_OK(n == 1 && p.s[i].v == -1500 && strcmp(cats_prom_label(
	    p.s[i].labels, "k", v, sizeof(v)), "q\"uo\\te\n") == 0,
	    "a label unescaped");
	T_OK(cats_prom_label(p.s[i].labels, "z", v, sizeof(v)) == NULL,
	    "a label that is not there");
	cats_prom_free(&p);

	static const struct { const char *in, *err; } bad[] = {
		{ "<html><body>hi</body></html>\n", "line 1: not a metric name" },
		{ "x 1\ny{a=\"b} 2\n", "line 2: an unterminated label value" },
		{ "x one\n", "line 1: a bad value" },
		{ "x 0x10\n", "line 1: a bad value" },
		{ "x 1 2 3\n", "line 1: more after the timestamp" },
		{ "x{a=b} 1\n", "line 1: a quoted label value expected" },
		{ "x{a=\"\\q\"} 1\n", "line 1: a bad escape in a label value" },
		{ "x{le=\"y\"} 1\n", "line 1: a bad le value" },
		{ "# TYPE x countr\n", "line 1: an unknown TYPE" },
		{ "# TYPE \n", "line 1: a TYPE line without a metric name" },
		{ "x1\n", "line 1: a space expected after the metric name" },
		{ "\n\n", "line 2: no metrics in the text" },
		{ "", "line 1: no metrics in the text" },
	};
	for (size_t k = 0; k < CATS_ARRAY_LEN(bad); k++) {
		int rc = parse(&p, bad[k].in, err, sizeof(err));
		T_OK(rc < 0 && strcmp(err, bad[k].err) == 0 && p.n == 0,
		    "refused: %s (%s)", bad[k].err, err);
	}
	T_OK(cats_prom_parse(&p, "x 1\n\0y 2\n", 9, err, sizeof(err)) < 0 &&
	    strcmp(err, "line 2: a NUL byte") == 0, "a NUL byte: %s", err);

	/* Caps: a name, a line, the labels, the whole text. */
	size_t big = CATS_PROM_MAX_LINE + 10;
	char *b = malloc(big + 8);
	memset(b, 'a', big);
	strcpy(b + big, " 1\n");
	T_OK(parse(&p, b, err, sizeof(err)) < 0 &&
	    strcmp(err, "line 1: line too long") == 0, "a long line");
	memset(b, 'a', 300);
	strcpy(b + 300, " 1\n");
	T_OK(parse(&p, b, err, sizeof(err)) < 0 &&
	    strcmp(err, "line 1: metric name too long") == 0, "a long name");
	T_OK(cats_prom_parse(&p, b, CATS_PROM_MAX_TEXT + 1, err,
	    sizeof(err)) < 0 && strstr(err, "over ") != NULL,
	    "a text over the cap is refused before it is read");
	free(b);
}

/* The screen of two renderings of a stats list with a histogram. */
static void
test_top(void)
{
	struct cats_stats_list st;
	struct cats_hist h = { 0 };
	struct cats_buf t1 = { 0 }, t2 = { 0 }, out = { 0 };
	struct cats_prom a, b;
	char err[256];
	cats_stats_init(&st, "cats-fwd", "IF-1");
	cats_stats_add(&st, "requests", 10);
	cats_stats_add(&st, "drop_pending_timeout", 0);
	cats_stats_gauge(&st, "bindings", 4);
	cats_stats_time(&st, "start_time", 1000000);
	cats_stats_hist(&st, "first_packet", &h);
	cats_stats_render(&st, &t1);
	for (int i = 0; i < 100; i++)
		cats_hist_observe(&h, i < 90 ? 400 : 4000);
	st.kv[0].v = 30;
	st.kv[1].v = 2;
	cats_stats_render(&st, &t2);
	T_OK(cats_prom_parse(&a, (char *)t1.p, t1.len, err, sizeof(err)) ==
	    0 && cats_prom_parse(&b, (char *)t2.p, t2.len, err,
	    sizeof(err)) == 0, "the renderer's text reads back: %s", err);
	struct cats_top t = { 0 };
	T_OK(cats_top_frame(&t, &a, &b, 1010, 2, &out) == 0, "a screen");
	cats_buf_add(&out, "", 1);
	const char *s = (const char *)out.p;
	T_OK(strstr(s, "cats-fwd IF-1   up 00:00:10   interval 2.0s   "
	    "restarts 0\n") != NULL, "the header");
	T_OK(strstr(s, "  new flows (requests)                  10.0"
	    "              30\n") != NULL, "a rate over the interval");
	T_OK(strstr(s, "  active bindings                          4\n") != NULL,
	    "a gauge");
	T_OK(strstr(s, "  drop_pending_timeout_total             1.0"
	    "               2\n") != NULL, "a drop that moved");
	/* 90 at 400 us (the 250-500 us bucket), 10 at 4 ms (2.5-5 ms):
	 * interpolated in the buckets, 250 + 250 * 50 / 90 us... */
	T_OK(strstr(s, "  first_packet_seconds                  50.0    760us"
	    "    389us    500us   4.75ms\n") != NULL, "the percentiles");
	/* Counters that went back: a restart, the rates over the life. */
	out.len = 0;
	T_OK(cats_top_frame(&t, &b, &a, 1010, 2, &out) == 0 &&
	    t.restarts == 1, "a restart seen");
	cats_buf_add(&out, "", 1);
	T_OK(strstr((char *)out.p, "interval 10.0s   restarts 1") != NULL,
	    "over the process's life");
	cats_prom_free(&a);
	cats_prom_free(&b);
	cats_buf_free(&t1);
	cats_buf_free(&t2);
	cats_buf_free(&out);
	cats_stats_free(&st);
}

int
main(void)
{
	test_parse();
	test_top();
	return t_done();
}
