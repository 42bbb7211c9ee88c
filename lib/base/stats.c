/*
 * stats.c - the stats record and the Prometheus textfile (see stats.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 64;
		struct cats_kv *kv = realloc(st->kv, cap * sizeof(*kv));
		if (kv == NULL)
			return;
		st->kv = kv;
		unsigned char *kind = realloc(st->kind, cap);
		if (kind == NULL)
			return;
		st->kind = kind;
		st->cap = cap;
	}
	st->kv[st->n].k = name;
	st->kv[st->n].v = v;
	st->kind[st->n++] = (unsigned char)k;
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
cats_stats_record(const struct cats_stats_list *st, struct cats_rec *r,
    uint64_t now)
{
	cats_stats_rec(r, st->tool, st->id, st->kv, st->n, now);
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

int
cats_stats_textfile(const struct cats_stats_list *st, const char *path,
    char *err, size_t errlen)
{
	char tmp[4200];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
		snprintf(err, errlen, "%s: %s", path, strerror(ENAMETOOLONG));
		return -1;
	}
	FILE *f = fopen(tmp, "we");
	if (f == NULL) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	const char *tool = st->tool;
	const char *shrt = strncmp(tool, "cats-", 5) == 0 ? tool + 5 : tool;
	char pre[64], lab[64], id[CATS_ID + 1], name[128], labels[CATS_ID + 80];
	metric_name(tool, pre, sizeof(pre));
	metric_name(shrt, lab, sizeof(lab));
	labels[0] = '\0';
	if (st->id != NULL)
		snprintf(labels, sizeof(labels), "{%s_id=\"%s\"}", lab,
		    cats_quote(st->id, id, sizeof(id)));
	for (size_t i = 0; i < st->n; i++) {
		const char *k = metric_name(st->kv[i].k, name, sizeof(name));
		uint64_t x = st->kv[i].v;
		if (st->kind[i] == CATS_STAT_TIME) {
			fprintf(f, "# HELP %s_%s_seconds %s, Unix time\n"
			    "# TYPE %s_%s_seconds gauge\n"
			    "%s_%s_seconds%s %" PRIu64 ".%03" PRIu64 "\n",
			    pre, k, st->kv[i].k, pre, k, pre, k, labels,
			    x / 1000, x % 1000);
			continue;
		}
		bool gauge = st->kind[i] == CATS_STAT_GAUGE;
		const char *sfx = gauge ? "" : "_total";
		fprintf(f, "# HELP %s_%s%s %s(1) STATISTICS %s\n"
		    "# TYPE %s_%s%s %s\n%s_%s%s%s %" PRIu64 "\n",
		    pre, k, sfx, tool, st->kv[i].k, pre, k, sfx,
		    gauge ? "gauge" : "counter", pre, k, sfx, labels, x);
	}
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

void
cats_stats_reset(struct cats_stats_list *st)
{
	st->n = 0;
}

void
cats_stats_free(struct cats_stats_list *st)
{
	free(st->kv);
	free(st->kind);
	st->kv = NULL;
	st->kind = NULL;
	st->n = st->cap = 0;
}
