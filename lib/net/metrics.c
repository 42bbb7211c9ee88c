/*
 * metrics.c - the /metrics endpoint (see metrics.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/log.h"
#include "net/httpd.h"
#include "net/metrics.h"
#include "net/tls.h"

struct cats_metrics {
	struct httpd *h;
	cats_metrics_fill_fn fill;
	void *arg;
	uint64_t start_ms;
	uint64_t scrapes;
	struct cats_buf out;	/* kept between scrapes: its memory */
};

static void
on_metrics(struct evhttp_request *req, void *arg)
{
	struct cats_metrics *m = arg;
	struct cats_stats_list st;
	m->scrapes++;
	m->fill(m->arg, &st);
	cats_stats_time(&st, "start_time", m->start_ms);
	cats_stats_add(&st, "scrapes", m->scrapes);
	if (cats_tls_server_on()) {
		const struct cats_tls_stats *t = cats_tls_stats();
		cats_stats_add(&st, "tls.handshakes", t->handshakes);
		cats_stats_add(&st, "tls.refused", t->refused);
		cats_stats_add(&st, "tls.reloads", t->reloads);
		cats_stats_add(&st, "tls.reload_failed", t->reload_failed);
	}
	cats_buf_reset(&m->out);
	if (cats_stats_render(&st, &m->out) < 0)
		httpd_error(req, 500, "out of memory");
	else
		httpd_reply(req, 200, "text/plain; version=0.0.4; "
		    "charset=utf-8", m->out.p, m->out.len);
	cats_stats_free(&st);
}

struct cats_metrics *
cats_metrics_new(struct event_base *base, const char *endpoint,
    cats_metrics_fill_fn fill, void *arg, char *err, size_t errlen)
{
	struct cats_metrics *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		snprintf(err, errlen, "%s: out of memory", endpoint);
		return NULL;
	}
	struct httpd_opts o = { .max_body = 1, .timeout_ms = 10000 };
	char why[512];
	m->h = httpd_new(base, endpoint, &o, why, sizeof(why));
	if (m->h == NULL) {
		snprintf(err, errlen, "%s", why);
		free(m);
		return NULL;
	}
	if (httpd_route(m->h, "/metrics", HTTPD_GET, on_metrics, m) < 0) {
		snprintf(err, errlen, "%s: out of memory", endpoint);
		httpd_free(m->h);
		free(m);
		return NULL;
	}
	m->fill = fill;
	m->arg = arg;
	m->start_ms = cats_clock_now();
	return m;
}

int
cats_metrics_open(struct cats_metrics **m, struct event_base *base,
    const char *endpoint, cats_metrics_fill_fn fill, void *arg)
{
	char err[600];
	*m = NULL;
	if (endpoint == NULL)
		return CATS_EXIT_OK;
	if ((*m = cats_metrics_new(base, endpoint, fill, arg, err,
	    sizeof(err))) == NULL) {
		cats_errorx("--prometheus: %s", err);
		return CATS_EXIT_FAIL;
	}
	return CATS_EXIT_OK;
}

int
cats_metrics_port(const struct cats_metrics *m)
{
	return httpd_port(m->h);
}

void
cats_metrics_free(struct cats_metrics *m)
{
	if (m == NULL)
		return;
	httpd_free(m->h);
	cats_buf_free(&m->out);
	free(m);
}
