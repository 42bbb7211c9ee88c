/*
 * top.c - one screen of cats-top(1) from two scrapes (see top.h).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view/top.h"

struct row {
	const char *metric;	/* after the tool's prefix */
	const char *label;
};

struct view {
	const char *tool;	/* "fwd": the cats_fwd_ prefix */
	const struct row *rates, *state;
};

static const struct row fwd_rates[] = {
	{ "requests_total", "new flows (requests)" },
	{ "rx_pkts_total", "packets in" },
	{ "tx_pkts_total", "packets out" },
	{ "fwd_pkts_total", "steered to the core" },
	{ "rev_pkts_total", "reverse to clients" },
	{ "eg_fwd_pkts_total", "delivered to sites" },
	{ "released_total", "held packets released" },
	{ "bindings_installed_total", "bindings installed" },
	{ "bindings_removed_total", "bindings removed" },
	{ "bindings_expired_total", "bindings expired" },
	{ "fast_hit_total", "fast path hits" },
	{ NULL, NULL },
};
static const struct row fwd_state[] = {
	{ "bindings", "active bindings" },
	{ "pending", "pending flows" },
	{ "pending_held", "pending packets" },
	{ "synced", "synced with cats-bind" },
	{ "fast_keys", "fast path keys" },
	{ NULL, NULL },
};
static const struct row select_rates[] = {
	{ "requests_total", "requests" },
	{ "decisions_total", "decisions (new flows)" },
	{ "errors_total", "errors" },
	{ "fallbacks_total", "fallbacks" },
	{ "cache_hits_total", "cache hits" },
	{ "metric_records_total", "metric records" },
	{ "ingest_requests_total", "ingest requests" },
	{ NULL, NULL },
};
static const struct row select_state[] = {
	{ "connections", "forwarders connected" },
	{ "services", "services" },
	{ "cst_entries", "CST entries" },
	{ "nst_paths", "NST paths" },
	{ NULL, NULL },
};
static const struct row pce_rates[] = {
	{ "requests_total", "PCE requests" },
	{ "ok_total", "paths found" },
	{ "no_path_total", "no path" },
	{ "cache_hits_total", "cache hits" },
	{ "pcep_requests_total", "PCEP requests" },
	{ NULL, NULL },
};
static const struct row pce_state[] = {
	{ "sessions_open", "sessions" },
	{ "pcep_up", "PCEP sessions up" },
	{ "generation", "TE database generation" },
	{ NULL, NULL },
};
static const struct row bind_rates[] = {
	{ "created_total", "flows created" },
	{ "activated_total", "bindings activated" },
	{ "sent_install_total", "installs sent" },
	{ "repaired_total", "paths repaired" },
	{ "expired_idle_total", "idle expiries" },
	{ "in_records_total", "records in" },
	{ NULL, NULL },
};
static const struct row bind_state[] = {
	{ "bindings", "active bindings" },
	{ "pending", "pending transactions" },
	{ "forwarders", "forwarders" },
	{ "conns", "connections" },
	{ "memory", "memory (bytes)" },
	{ NULL, NULL },
};
static const struct row cps_rates[] = {
	{ "in_records_total", "records in" },
	{ "out_records_total", "records out" },
	{ "select_decisions_total", "decisions (select)" },
	{ "select_restarts_total", "select restarts" },
	{ "pce_restarts_total", "pce restarts" },
	{ "bind_restarts_total", "bind restarts" },
	{ NULL, NULL },
};
static const struct row cps_state[] = {
	{ "active", "active (owner)" },
	{ "select_running", "select running" },
	{ "pce_running", "pce running" },
	{ "bind_running", "bind running" },
	{ "bind_bindings", "active bindings (bind)" },
	{ NULL, NULL },
};
static const struct row sma_rates[] = {
	{ "reports_total", "reports" },
	{ "accepted_total", "accepted" },
	{ "flagged_total", "flagged" },
	{ "quarantined_total", "quarantined" },
	{ "rejected_total", "rejected" },
	{ NULL, NULL },
};
static const struct row sma_state[] = {
	{ "entries", "cache entries" },
	{ "sync_state", "sync state" },
	{ NULL, NULL },
};
static const struct row sci_rates[] = {
	{ "reports_sent_total", "reports sent" },
	{ "pulls_total", "pulls" },
	{ "streams_total", "event streams" },
	{ NULL, NULL },
};
static const struct row sci_state[] = {
	{ "subscribers", "subscribers" },
	{ "seq", "sequence" },
	{ NULL, NULL },
};

static const struct view views[] = {
	{ "fwd", fwd_rates, fwd_state },
	{ "select", select_rates, select_state },
	{ "pce", pce_rates, pce_state },
	{ "bind", bind_rates, bind_state },
	{ "cps", cps_rates, cps_state },
	{ "sma", sma_rates, sma_state },
	{ "sci", sci_rates, sci_state },
};

/* Words of a counter's name that say it counts drops or refusals. */
static const char *const drop_words[] = {
	"drop", "fail", "refus", "reject", "bad", "error", "lost", "evict",
	"timeout", "expired", "unauth", "replay", "limited", "too_", NULL,
};

static bool
has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static bool
has_suffix(const char *s, const char *x)
{
	size_t n = strlen(s), m = strlen(x);
	return n >= m && strcmp(s + n - m, x) == 0;
}

/* The view whose prefix most samples have (NULL: none of cats). */
static const struct view *
which(const struct cats_prom *p, char *pre, size_t len)
{
	const struct view *best = NULL;
	size_t most = 0;
	for (size_t v = 0; v < CATS_ARRAY_LEN(views); v++) {
		char x[32];
		snprintf(x, sizeof(x), "cats_%s_", views[v].tool);
		size_t n = 0;
		for (size_t i = 0; i < p->n; i++)
			n += has_prefix(p->s[i].name, x);
		if (n > most) {
			most = n;
			best = &views[v];
		}
	}
	snprintf(pre, len, "cats_%s_", best ? best->tool : "");
	if (best == NULL)
		pre[0] = '\0';
	return best;
}

static double
value(const struct cats_prom *p, const char *pre, const char *m, bool *ok)
{
	char name[CATS_PROM_MAX_NAME + 64];
	double v;
	snprintf(name, sizeof(name), "%s%s", pre, m);
	*ok = cats_prom_sum(p, name, &v);
	return v;
}

/* A rate as text: "-" when there is no interval. */
static const char *
rate(double d, double dt, char *buf, size_t len)
{
	if (dt <= 0 || !isfinite(d))
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f", d / dt);
	return buf;
}

/* Seconds as a duration (us, ms, s). */
static const char *
dur(double s, char *buf, size_t len)
{
	if (!isfinite(s))
		snprintf(buf, len, "-");
	else if (s < 0.001)
		snprintf(buf, len, "%.0fus", s * 1e6);
	else if (s < 1)
		snprintf(buf, len, "%.2fms", s * 1e3);
	else
		snprintf(buf, len, "%.2fs", s);
	return buf;
}

/* A family's name is a counter's (by TYPE, or by its _total). */
static bool
is_counter(const struct cats_prom *p, const char *name)
{
	enum cats_prom_type t = cats_prom_type(p, name);
	return t == CATS_PT_COUNTER || (t == CATS_PT_UNTYPED &&
	    has_suffix(name, "_total"));
}

static bool
is_hist_part(const char *name)
{
	return has_suffix(name, "_bucket") || has_suffix(name, "_sum") ||
	    has_suffix(name, "_count");
}

static void
header(struct cats_out *o, const struct cats_top *t, const struct cats_prom *cur,
    const char *pre, double now, double dt)
{
	char tool[64] = "metrics", id[128] = "", lab[80], up[64] = "";
	if (pre[0] != '\0') {
		snprintf(tool, sizeof(tool), "cats-%.*s", (int)strlen(pre) - 6,
		    pre + 5);
		snprintf(lab, sizeof(lab), "%.*s_id", (int)strlen(pre) - 6,
		    pre + 5);
		for (size_t i = 0; i < cur->n; i++)
			if (has_prefix(cur->s[i].name, pre) &&
			    cats_prom_label(cur->s[i].labels, lab, id,
			    sizeof(id)) != NULL)
				break;
	}
	bool ok;
	double start = value(cur, pre, "start_time_seconds", &ok);
	if (ok && start > 0 && now >= start) {
		unsigned long s = (unsigned long)(now - start);
		if (s >= 86400)
			snprintf(up, sizeof(up), "   up %lud %02lu:%02lu:%02lu",
			    s / 86400, s / 3600 % 24, s / 60 % 60, s % 60);
		else
			snprintf(up, sizeof(up), "   up %02lu:%02lu:%02lu",
			    s / 3600, s / 60 % 60, s % 60);
	}
	cats_outf(o, "%s%s%s%s   interval %.1fs   restarts %u\n", tool,
	    id[0] ? " " : "", id, up, dt, t->restarts);
}

static void
section(struct cats_out *o, const char *title, const char *cols)
{
	if (cols[0] == '\0')
		cats_outf(o, "%s\n", title);
	else
		cats_outf(o, "%-34s%s\n", title, cols);
}

#define RATE_COLS "        /s           total"
#define LAT_COLS "     obs/s     mean      p50      p90      p99"

static void
rates(struct cats_out *o, const struct cats_top *t, const struct view *v,
    const struct cats_prom *prev, const struct cats_prom *cur,
    const char *pre, double dt)
{
	char r[32];
	section(o, "RATES", RATE_COLS);
	if (v != NULL && !t->all) {
		for (const struct row *w = v->rates; w->metric; w++) {
			bool ok, pok = false;
			double c = value(cur, pre, w->metric, &ok), q = 0;
			if (!ok)
				continue;
			if (prev != NULL)
				q = value(prev, pre, w->metric, &pok);
			cats_outf(o, "  %-32s%10s %15.0f\n", w->label,
			    rate(c - q, dt, r, sizeof(r)), c);
		}
		return;
	}
	for (size_t i = 0; i < cur->n; i++) {
		const char *name = cur->s[i].name;
		if ((i > 0 && strcmp(cur->s[i - 1].name, name) == 0) ||
		    !has_prefix(name, pre) || !is_counter(cur, name) ||
		    is_hist_part(name))
			continue;
		double c, q = 0;
		cats_prom_sum(cur, name, &c);
		if (prev != NULL)
			cats_prom_sum(prev, name, &q);
		cats_outf(o, "  %-32s%10s %15.0f\n", name + strlen(pre),
		    rate(c - q, dt, r, sizeof(r)), c);
	}
}

static void
state(struct cats_out *o, const struct cats_top *t, const struct view *v,
    const struct cats_prom *cur, const char *pre)
{
	section(o, "STATE", "");
	if (v != NULL && !t->all) {
		for (const struct row *w = v->state; w->metric; w++) {
			bool ok;
			double c = value(cur, pre, w->metric, &ok);
			if (ok)
				cats_outf(o, "  %-32s%10.0f\n", w->label, c);
		}
		return;
	}
	for (size_t i = 0; i < cur->n; i++) {
		const char *name = cur->s[i].name;
		if ((i > 0 && strcmp(cur->s[i - 1].name, name) == 0) ||
		    !has_prefix(name, pre) ||
		    cats_prom_type(cur, name) != CATS_PT_GAUGE)
			continue;
		double c;
		cats_prom_sum(cur, name, &c);
		cats_outf(o, "  %-32s%10.0f\n", name + strlen(pre), c);
	}
}

struct drop {
	const char *name;
	double d, total;
};

static int
by_rate(const void *a, const void *b)
{
	const struct drop *x = a, *y = b;
	if (x->d != y->d)
		return x->d < y->d ? 1 : -1;
	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int
drops(struct cats_out *o, const struct cats_prom *prev, const struct cats_prom *cur,
    const char *pre, double dt)
{
	size_t n = 0, cap = 0;
	struct drop *v = NULL;
	for (size_t i = 0; i < cur->n; i++) {
		const char *name = cur->s[i].name;
		if ((i > 0 && strcmp(cur->s[i - 1].name, name) == 0) ||
		    !has_prefix(name, pre) || is_hist_part(name) ||
		    (!is_counter(cur, name) && cats_prom_type(cur, name) !=
		    CATS_PT_UNTYPED))
			continue;
		bool word = false;
		for (size_t w = 0; drop_words[w] && !word; w++)
			word = strstr(name + strlen(pre), drop_words[w]) != NULL;
		double c, q = 0;
		cats_prom_sum(cur, name, &c);
		if (!word || c == 0)
			continue;
		if (prev != NULL)
			cats_prom_sum(prev, name, &q);
		if (cats_grow((void **)&v, &cap, n, sizeof(*v), 16) < 0) {
			free(v);
			return -1;
		}
		v[n].name = name + strlen(pre);
		v[n].d = c - q;
		v[n++].total = c;
	}
	section(o, "DROPS AND REFUSALS", RATE_COLS);
	if (n > 0)
		qsort(v, n, sizeof(*v), by_rate);
	char r[32];
	for (size_t i = 0; i < n && i < 20; i++)
		cats_outf(o, "  %-32s%10s %15.0f\n", v[i].name,
		    rate(v[i].d, dt, r, sizeof(r)), v[i].total);
	if (n > 20)
		cats_outf(o, "  (%zu more)\n", n - 20);
	if (n == 0)
		cats_outf(o, "  none\n");
	free(v);
	return 0;
}

/* Bucket le of family base in p (summed over label sets); false if none. */
static bool
bucket(const struct cats_prom *p, const char *base, double le, double *v)
{
	char name[CATS_PROM_MAX_NAME + 16];
	snprintf(name, sizeof(name), "%s_bucket", base);
	size_t i, n = cats_prom_find(p, name, &i);
	bool found = false;
	*v = 0;
	for (size_t j = 0; j < n; j++)
		if (p->s[i + j].le == le ||
		    (isinf(le) && isinf(p->s[i + j].le))) {
			*v += p->s[i + j].v;
			found = true;
		}
	return found;
}

/* Quantile q of the interval's observations of family base. */
static double
quantile(const struct cats_prom *prev, const struct cats_prom *cur,
    const char *base, size_t first, size_t n, double q, double count)
{
	double rank = q * count, lower = 0, below = 0;
	for (size_t j = 0; j < n; j++) {
		double le = cur->s[first + j].le;
		if (j > 0 && le == cur->s[first + j - 1].le)
			continue;
		double c, pc = 0;
		bucket(cur, base, le, &c);
		if (prev != NULL)
			bucket(prev, base, le, &pc);
		double cum = c - pc;
		if (cum >= rank && cum > 0) {
			if (isinf(le))
				return lower;
			return lower + (le - lower) * (rank - below) /
			    (cum - below > 0 ? cum - below : 1);
		}
		lower = le;
		below = cum;
	}
	return NAN;
}

static void
latency(struct cats_out *o, const struct cats_prom *prev,
    const struct cats_prom *cur, const char *pre, double dt)
{
	char a[24], b[24], c[24], d[24], r[32];
	section(o, "LATENCY", LAT_COLS);
	bool any = false;
	for (size_t i = 0; i < cur->n; i++) {
		const char *name = cur->s[i].name;
		if ((i > 0 && strcmp(cur->s[i - 1].name, name) == 0) ||
		    !has_prefix(name, pre) || !has_suffix(name, "_bucket"))
			continue;
		char base[CATS_PROM_MAX_NAME + 1];
		snprintf(base, sizeof(base), "%.*s", (int)(strlen(name) - 7),
		    name);
		size_t first, n = cats_prom_find(cur, name, &first);
		double cnt = 0, pcnt = 0, sum = 0, psum = 0;
		char k[CATS_PROM_MAX_NAME + 16];
		snprintf(k, sizeof(k), "%s_count", base);
		cats_prom_sum(cur, k, &cnt);
		if (prev != NULL)
			cats_prom_sum(prev, k, &pcnt);
		snprintf(k, sizeof(k), "%s_sum", base);
		cats_prom_sum(cur, k, &sum);
		if (prev != NULL)
			cats_prom_sum(prev, k, &psum);
		double dc = cnt - pcnt;
		any = true;
		if (dc <= 0) {
			cats_outf(o, "  %-32s%10s %8s %8s %8s %8s\n",
			    base + strlen(pre), rate(0, dt, r, sizeof(r)), "-",
			    "-", "-", "-");
			continue;
		}
		cats_outf(o, "  %-32s%10s %8s %8s %8s %8s\n", base + strlen(pre),
		    rate(dc, dt, r, sizeof(r)), dur((sum - psum) / dc, a,
		    sizeof(a)), dur(quantile(prev, cur, base, first, n, 0.5,
		    dc), b, sizeof(b)), dur(quantile(prev, cur, base, first, n,
		    0.9, dc), c, sizeof(c)), dur(quantile(prev, cur, base,
		    first, n, 0.99, dc), d, sizeof(d)));
	}
	if (!any)
		cats_outf(o, "  none\n");
}

/* A restart between the scrapes: start_time moved, or a counter fell. */
static bool
restarted(const struct cats_prom *prev, const struct cats_prom *cur,
    const char *pre)
{
	bool a, b;
	double s0 = value(prev, pre, "start_time_seconds", &a);
	double s1 = value(cur, pre, "start_time_seconds", &b);
	if (a && b && s0 != s1)
		return true;
	for (size_t i = 0; i < cur->n; i++) {
		const char *name = cur->s[i].name;
		if ((i > 0 && strcmp(cur->s[i - 1].name, name) == 0) ||
		    !is_counter(cur, name))
			continue;
		double c, q;
		cats_prom_sum(cur, name, &c);
		if (cats_prom_sum(prev, name, &q) && c < q)
			return true;
	}
	return false;
}

int
cats_top_frame(struct cats_top *t, const struct cats_prom *prev,
    const struct cats_prom *cur, double now, double dt, struct cats_buf *out)
{
	struct cats_out o = { out, 0 };
	char pre[32];
	const struct view *v = which(cur, pre, sizeof(pre));
	if (prev != NULL && restarted(prev, cur, pre)) {
		t->restarts++;
		prev = NULL;
	}
	if (prev == NULL) {
		/* Over the process's life, when it says when it started. */
		bool ok;
		double start = value(cur, pre, "start_time_seconds", &ok);
		dt = ok && start > 0 && now > start ? now - start : 0;
	}
	t->frames++;
	header(&o, t, cur, pre, now, dt);
	rates(&o, t, v, prev, cur, pre, dt);
	state(&o, t, v, cur, pre);
	if (drops(&o, prev, cur, pre, dt) < 0)
		return -1;
	latency(&o, prev, cur, pre, dt);
	return o.err;
}
