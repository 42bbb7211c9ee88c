/*
 * stats.c - the stats record and the Prometheus textfile (see stats.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "base/log.h"
#include "base/stats.h"
#include "base/tool.h"
#include "rec/json.h"
#include "rec/seq.h"

void
cats_stats_init(struct cats_stats_list *st, const char *tool, const char *id)
{
	memset(st, 0, sizeof(*st));
	st->tool = tool;
	st->id = id;
}

static void
put(struct cats_stats_list *st, const char *name, uint64_t v,
    enum cats_stat_kind k)
{
	/* Two arrays of one capacity: st->cap moves with the second. */
	size_t kvcap = st->cap;
	if (cats_grow((void **)&st->kv, &kvcap, st->n, sizeof(*st->kv),
	    64) < 0 || cats_grow((void **)&st->kind, &st->cap, st->n,
	    sizeof(*st->kind), 64) < 0)
		return;
	if ((k == CATS_STAT_GAUGE || k == CATS_STAT_TIME) &&
	    cats_grow((void **)&st->gname, &st->gcap, st->ng,
	    sizeof(*st->gname), 16) < 0)
		return;
	st->kv[st->n].k = name;
	st->kv[st->n].v = v;
	st->kind[st->n++] = (unsigned char)k;
	if (k == CATS_STAT_GAUGE || k == CATS_STAT_TIME)
		st->gname[st->ng++] = name;
}

void
cats_stats_add(struct cats_stats_list *st, const char *name, uint64_t v)
{
	put(st, name, v, CATS_STAT_COUNTER);
}

void
cats_stats_gauge(struct cats_stats_list *st, const char *name, uint64_t v)
{
	put(st, name, v, CATS_STAT_GAUGE);
}

void
cats_stats_untyped(struct cats_stats_list *st, const char *name, uint64_t v)
{
	put(st, name, v, CATS_STAT_UNTYPED);
}

void
cats_stats_time(struct cats_stats_list *st, const char *name, uint64_t ms)
{
	put(st, name, ms, CATS_STAT_TIME);
}

void
cats_stats_add_kv(struct cats_stats_list *st, const struct cats_kv *kv,
    size_t n)
{
	for (size_t i = 0; i < n; i++)
		put(st, kv[i].k, kv[i].v, CATS_STAT_COUNTER);
}

void
cats_stats_add_kv_gauges(struct cats_stats_list *st,
    const struct cats_kv *kv, size_t n, const char *const *gauges)
{
	for (size_t i = 0; i < n; i++) {
		enum cats_stat_kind k = CATS_STAT_COUNTER;
		for (size_t j = 0; gauges[j] != NULL; j++) {
			size_t len = strlen(gauges[j]);
			bool pre = len > 0 && gauges[j][len - 1] == '*';
			if (pre ? strncmp(kv[i].k, gauges[j], len - 1) == 0 :
			    strcmp(kv[i].k, gauges[j]) == 0) {
				k = CATS_STAT_GAUGE;
				break;
			}
		}
		put(st, kv[i].k, kv[i].v, k);
	}
}

void
cats_stats_record(const struct cats_stats_list *st, struct cats_rec *r,
    uint64_t now)
{
	cats_stats_rec(r, st->tool, st->id, st->kv, st->n, now);
	r->u.stats.gauges.v = st->gname;
	r->u.stats.gauges.n = st->ng;
	r->u.stats.has |= UINT64_C(1) << CATS_STS_gauges;
}

enum cats_stat_kind
cats_stats_rec_kind(const struct cats_stats *r, size_t i)
{
	if (!(r->has & (UINT64_C(1) << CATS_STS_gauges)))
		return CATS_STAT_UNTYPED;
	for (size_t j = 0; j < r->gauges.n; j++)
		if (strcmp(r->gauges.v[j], r->counters.v[i].k) == 0)
			return CATS_STAT_GAUGE;
	return CATS_STAT_COUNTER;
}

void
cats_stats_put(struct cats_stats_list *st, const char *name, uint64_t v,
    enum cats_stat_kind k)
{
	put(st, name, v, k);
}

int
cats_stats_emit(const struct cats_stats_list *st, struct cats_stream *s,
    uint64_t now)
{
	struct cats_rec r;
	cats_stats_record(st, &r, now);
	return cats_stream_send_rec(s, &r);
}

int
cats_stats_print(const struct cats_stats_list *st, FILE *f, uint64_t now)
{
	struct cats_rec r;
	cats_stats_record(st, &r, now);
	int rc = cats_rec_print_json(&r, f);
	if (fflush(f) != 0)
		rc = -1;
	return rc;
}

/* The stream of a destination spec (opened for a file); NULL, errno. */
static FILE *
dest_open(const char *spec)
{
	if (spec == NULL || strcmp(spec, "stderr") == 0)
		return stderr;
	if (strcmp(spec, "-") == 0)
		return stdout;
	if (strncmp(spec, "file:", 5) == 0 && spec[5] != '\0')
		return fopen(spec + 5, "a");
	errno = EINVAL;
	return NULL;
}

int
cats_stats_dest_check(const char *what, const char *spec)
{
	FILE *f = dest_open(spec);
	if (f == NULL && errno == EINVAL) {
		cats_errorx("%s: %s: expected stderr, - or file:PATH", what,
		    spec);
		return CATS_EXIT_USAGE;
	}
	if (f == NULL) {
		cats_errorx("%s: %s: %s", what, spec, strerror(errno));
		return CATS_EXIT_IOERR;
	}
	if (f != stderr && f != stdout)
		fclose(f);
	return CATS_EXIT_OK;
}

int
cats_stats_print_to(const struct cats_stats_list *st, const char *what,
    const char *spec, uint64_t now)
{
	FILE *f = dest_open(spec);
	if (f == NULL) {
		cats_errorx("%s: %s: %s", what, spec, strerror(errno));
		return -1;
	}
	int rc = cats_stats_print(st, f, now);
	int e = errno;
	if (f != stderr && f != stdout && fclose(f) != 0 && rc == 0) {
		rc = -1;
		e = errno;
	}
	if (rc < 0)
		cats_errorx("%s: %s: write error: %s", what, spec ? spec :
		    "stderr", strerror(e));
	return rc;
}

/* s with every character outside [A-Za-z0-9_] as '_'. */
static const char *
metric_name(const char *s, char *buf, size_t len)
{
	size_t i = 0;
	for (; s[i] != '\0' && i + 1 < len; i++) {
		char c = s[i];
		buf[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') ? c : '_';
	}
	buf[i] = '\0';
	return buf;
}

const uint64_t cats_hist_le_us[CATS_HIST_NB] = {
	10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000,
	100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
};

void
cats_hist_observe(struct cats_hist *h, uint64_t us)
{
	size_t i = 0;
	while (i < CATS_HIST_NB && us > cats_hist_le_us[i])
		i++;
	h->n[i]++;
	h->count++;
	h->sum_us += us;
}

uint64_t
cats_hist_quantile(const struct cats_hist *h, unsigned q)
{
	if (h->count == 0)
		return 0;
	if (q > 1000)
		q = 1000;
	/* The rank, 1 to count. */
	uint64_t rank = (h->count * q + 999) / 1000, cum = 0;
	if (rank == 0)
		rank = 1;
	for (size_t i = 0; i < CATS_HIST_NB; i++) {
		if (cum + h->n[i] >= rank) {
			uint64_t lo = i ? cats_hist_le_us[i - 1] : 0;
			uint64_t hi = cats_hist_le_us[i];
			return lo + (hi - lo) * (rank - cum) / h->n[i];
		}
		cum += h->n[i];
	}
	return cats_hist_le_us[CATS_HIST_NB - 1];
}

void
cats_stats_hist(struct cats_stats_list *st, const char *name,
    const struct cats_hist *h)
{
	size_t hncap = st->hcap;
	if (cats_grow((void **)&st->hname, &hncap, st->nh, sizeof(*st->hname),
	    8) < 0 || cats_grow((void **)&st->hist, &st->hcap, st->nh,
	    sizeof(*st->hist), 8) < 0)
		return;
	st->hname[st->nh] = name;
	st->hist[st->nh++] = h;
}

/* Microseconds as decimal seconds, without trailing zeros. */
static const char *
seconds(uint64_t us, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%" PRIu64 ".%06" PRIu64, us / 1000000,
	    us % 1000000);
	while (n > 0 && buf[n - 1] == '0')
		buf[--n] = '\0';
	if (n > 0 && buf[n - 1] == '.')
		buf[--n] = '\0';
	return buf;
}

/* A duration in milliseconds (NAME_ms, 1000) or microseconds (NAME_us,
 * 1000000): exported in seconds; 0: neither. */
static uint64_t
in_ms(const char *k)
{
	size_t n = strlen(k);
	if (n > 3 && strcmp(k + n - 3, "_ms") == 0)
		return 1000;
	return n > 3 && strcmp(k + n - 3, "_us") == 0 ? 1000000 : 0;
}

/* The metric name of entry i of the list (kv entries, then histograms). */
static const char *
family(const struct cats_stats_list *st, size_t i, char *buf, size_t len)
{
	char k[128];
	if (i >= st->n) {
		metric_name(st->hname[i - st->n], k, sizeof(k));
		snprintf(buf, len, "%s_seconds", k);
		return buf;
	}
	metric_name(st->kv[i].k, k, sizeof(k));
	bool ms = in_ms(k) != 0;
	if (ms)
		k[strlen(k) - 3] = '\0';
	bool plain = st->kind[i] == CATS_STAT_GAUGE ||
	    st->kind[i] == CATS_STAT_UNTYPED;
	const char *sfx = st->kind[i] == CATS_STAT_TIME ? "_seconds" :
	    plain ? (ms ? "_seconds" : "") : ms ? "_seconds_total" : "_total";
	snprintf(buf, len, "%s%s", k, sfx);
	return buf;
}

/* Whether an entry before i has the metric name of entry i. */
static bool
seen(const struct cats_stats_list *st, size_t i, const char *name)
{
	char other[160];
	for (size_t j = 0; j < i; j++)
		if (strcmp(family(st, j, other, sizeof(other)), name) == 0)
			return true;
	return false;
}

int
cats_stats_render(const struct cats_stats_list *st, struct cats_buf *b)
{
	struct cats_out o = { b, 0 };
	const char *tool = st->tool;
	const char *shrt = strncmp(tool, "cats-", 5) == 0 ? tool + 5 : tool;
	char pre[64], lab[64], id[CATS_ID + 1], name[160], labels[CATS_ID + 80];
	char lb[CATS_ID + 80], num[32];
	metric_name(tool, pre, sizeof(pre));
	metric_name(shrt, lab, sizeof(lab));
	labels[0] = lb[0] = '\0';
	if (st->id != NULL) {
		cats_quote(st->id, id, sizeof(id));
		snprintf(labels, sizeof(labels), "{%s_id=\"%s\"}", lab, id);
		snprintf(lb, sizeof(lb), "%s_id=\"%s\",", lab, id);
	}
	for (size_t i = 0; i < st->n + st->nh; i++) {
		const char *k = family(st, i, name, sizeof(name));
		if (seen(st, i, k))
			continue;
		if (i >= st->n) {
			const struct cats_hist *h = st->hist[i - st->n];
			cats_outf(&o, "# HELP %s_%s %s, seconds\n"
			    "# TYPE %s_%s histogram\n",
			    pre, k, st->hname[i - st->n], pre, k);
			uint64_t cum = 0;
			for (size_t j = 0; j <= CATS_HIST_NB; j++) {
				cum += h->n[j];
				cats_outf(&o, "%s_%s_bucket{%sle=\"%s\"} %" PRIu64
				    "\n", pre, k, lb, j < CATS_HIST_NB ?
				    seconds(cats_hist_le_us[j], num,
				    sizeof(num)) : "+Inf", cum);
			}
			cats_outf(&o, "%s_%s_sum%s %s\n%s_%s_count%s %" PRIu64 "\n",
			    pre, k, labels, seconds(h->sum_us, num, sizeof(num)),
			    pre, k, labels, h->count);
			continue;
		}
		uint64_t x = st->kv[i].v;
		if (st->kind[i] == CATS_STAT_TIME) {
			cats_outf(&o, "# HELP %s_%s %s, Unix time\n"
			    "# TYPE %s_%s gauge\n"
			    "%s_%s%s %" PRIu64 ".%03" PRIu64 "\n",
			    pre, k, st->kv[i].k, pre, k, pre, k, labels,
			    x / 1000, x % 1000);
			continue;
		}
		int kind = st->kind[i];
		cats_outf(&o, "# HELP %s_%s %s(1) STATISTICS %s\n"
		    "# TYPE %s_%s %s\n",
		    pre, k, tool, st->kv[i].k, pre, k,
		    kind == CATS_STAT_GAUGE ? "gauge" : kind ==
		    CATS_STAT_UNTYPED ? "untyped" : "counter");
		char raw[128];
		uint64_t unit = in_ms(metric_name(st->kv[i].k, raw,
		    sizeof(raw)));
		if (unit == 1000)
			cats_outf(&o, "%s_%s%s %" PRIu64 ".%03" PRIu64 "\n", pre, k,
			    labels, x / 1000, x % 1000);
		else if (unit != 0)
			cats_outf(&o, "%s_%s%s %s\n", pre, k, labels,
			    seconds(x, num, sizeof(num)));
		else
			cats_outf(&o, "%s_%s%s %" PRIu64 "\n", pre, k, labels, x);
	}
	return o.err;
}

int
cats_stats_textfile(const struct cats_stats_list *st, const char *path,
    char *err, size_t errlen)
{
	char tmp[4200];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		snprintf(err, errlen, "%s: %s", path, strerror(ENAMETOOLONG));
		return -1;
	}
	struct cats_buf b = { 0 };
	if (cats_stats_render(st, &b) < 0) {
		cats_buf_free(&b);
		snprintf(err, errlen, "%s: %s", path, strerror(ENOMEM));
		return -1;
	}
	FILE *f = fopen(tmp, "we");
	if (f == NULL) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		cats_buf_free(&b);
		return -1;
	}
	size_t w = b.len ? fwrite(b.p, 1, b.len, f) : 0;
	int bad = w != b.len;
	cats_buf_free(&b);
	if (fclose(f) != 0 || bad || rename(tmp, path) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno :
		    EIO));
		unlink(tmp);
		return -1;
	}
	return 0;
}

int
cats_stats_textfile_check(const char *what, const char *path)
{
	char tmp[4200];
	struct stat sb;
	int e = 0;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		e = ENAMETOOLONG;
	else if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
		e = EISDIR;
	else {
		FILE *f = fopen(tmp, "we");
		if (f == NULL)
			e = errno;
		else {
			fclose(f);
			unlink(tmp);
		}
	}
	if (e == 0)
		return CATS_EXIT_OK;
	cats_errorx("%s: %s: %s", what, path, strerror(e));
	return CATS_EXIT_IOERR;
}

void
cats_stats_reset(struct cats_stats_list *st)
{
	st->n = 0;
	st->ng = 0;
	st->nh = 0;
}

void
cats_stats_free(struct cats_stats_list *st)
{
	free(st->kv);
	free(st->kind);
	free(st->gname);
	st->gname = NULL;
	st->ng = st->gcap = 0;
	free(st->hname);
	free(st->hist);
	st->kv = NULL;
	st->kind = NULL;
	st->hname = NULL;
	st->hist = NULL;
	st->n = st->cap = 0;
	st->nh = st->hcap = 0;
}
