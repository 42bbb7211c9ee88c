/*
 * cats-top - a live look at a running cats daemon: its /metrics (or a
 * textfile) read every few seconds, one screen of rates, state, drops and
 * latencies between two reads (cats-top(1), lib/view/top.h).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/clock.h"
#include "base/file.h"
#include "base/log.h"
#include "base/opt.h"
#include "base/tool.h"
#include "net/httpc.h"
#include "net/tls.h"
#include "view/prom.h"
#include "view/top.h"

/* usage_text: the SYNOPSIS and OPTIONS of cats-top(1). */
#include "cats-top.help.h"

/* What a read ended with: 0, or the exit code of cats-top(1). */
struct fetch {
	struct event_base *base;
	struct httpc *http;
	const char *url;	/* NULL: a file */
	const char *path;
	size_t max_body;
	struct cats_prom p;
	char err[600];
	int rc;
};

static volatile sig_atomic_t stop, hup;

static void
on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static void
on_hup(int sig)
{
	(void)sig;
	hup = 1;
}

static void
on_done(void *arg, const struct httpc_resp *r)
{
	struct fetch *f = arg;
	event_base_loopbreak(f->base);
	if (r->code != 0) {
		snprintf(f->err, sizeof(f->err), "%s: %s", f->url, r->error ?
		    r->error : "no answer");
		f->rc = r->too_big ? CATS_EXIT_DATAERR : CATS_EXIT_NOINPUT;
		if (r->too_big)
			snprintf(f->err, sizeof(f->err), "%s: the answer is over "
			    "%zu bytes", f->url, f->max_body);
		return;
	}
	if (r->status != 200) {
		snprintf(f->err, sizeof(f->err), "%s: HTTP status %ld", f->url,
		    r->status);
		f->rc = CATS_EXIT_NOINPUT;
		return;
	}
	char why[300];
	if (cats_prom_parse(&f->p, (const char *)r->body, r->len, why,
	    sizeof(why)) < 0) {
		snprintf(f->err, sizeof(f->err), "%s: not Prometheus metrics: "
		    "%s", f->url, why);
		f->rc = CATS_EXIT_DATAERR;
		return;
	}
	f->rc = 0;
}

/* A textfile (base/file.h: a regular file, at most max_body bytes). */
static int
read_file(struct fetch *f)
{
	char *buf, why[300];
	size_t n;
	if (cats_file_read(f->path, f->max_body, &buf, &n, f->err,
	    sizeof(f->err)) < 0)
		return strstr(f->err, ": over ") != NULL ? CATS_EXIT_DATAERR :
		    CATS_EXIT_NOINPUT;
	int rc = 0;
	if (cats_prom_parse(&f->p, buf, n, why, sizeof(why)) < 0) {
		snprintf(f->err, sizeof(f->err), "%s: not Prometheus metrics: "
		    "%s", f->path, why);
		rc = CATS_EXIT_DATAERR;
	}
	free(buf);
	return rc;
}

/* One read of the source into f->p: 0 or an exit code (f->err says). */
static int
fetch(struct fetch *f)
{
	cats_prom_free(&f->p);
	if (f->url == NULL)
		return read_file(f);
	struct httpc_req_opts o = { .url = f->url, .timeout_ms = 5000,
		.connect_timeout_ms = 2000, .max_body = f->max_body };
	f->rc = CATS_EXIT_NOINPUT;
	snprintf(f->err, sizeof(f->err), "%s: cannot start the request",
	    f->url);
	if (httpc_request(f->http, &o, on_done, f) == NULL)
		return CATS_EXIT_FAIL;
	event_base_dispatch(f->base);
	return f->rc;
}

/* The source as a URL (tcp:HOST:PORT is http://HOST:PORT/metrics) or a
 * file (file:PATH, or a path). */
static void
source(struct fetch *f, const char *s, char *url, size_t len)
{
	if (strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0) {
		f->url = s;
	} else if (strncmp(s, "tcp:", 4) == 0) {
		snprintf(url, len, "http://%s/metrics", s + 4);
		f->url = url;
	} else if (strncmp(s, "file:", 5) == 0) {
		f->path = s + 5;
	} else if (strchr(s, ':') != NULL && s[0] != '/' && s[0] != '.') {
		cats_usage_fail("%s: a source is http(s)://..., tcp:HOST:PORT, "
		    "file:PATH or a path", s);
	} else {
		f->path = s;
	}
}

static void
sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - floor(s)) * 1e9) };
	while (!stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "all", no_argument, NULL, 'a' },
		{ "batch", no_argument, NULL, 'b' },
		{ "count", required_argument, NULL, 'n' },
		{ "delay", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "max-body", required_argument, NULL, 'M' },
		{ "version", no_argument, NULL, 'V' },
		CATS_TLS_LONGOPTS,
		{ NULL, 0, NULL, 0 },
	};
	struct cats_top t = { 0 };
	static struct fetch f;
	bool batch = false;
	uint64_t count = 0, delay_ms = 2000;
	char url[4200];
	int ch;

	cats_tool_init(argv[0]);
	f.max_body = 4u << 20;
	while ((ch = getopt_long(argc, argv, ":abd:hn:V", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'a':
			t.all = true;
			break;
		case 'b':
			batch = true;
			break;
		case 'd': {
			char *end;
			double d = strtod(optarg, &end);
			if (*end != '\0' || !(d >= 0.01 && d <= 86400))
				cats_opt_fail("--delay", "expected seconds "
				    "(0.01 to 86400), got \"%s\"", optarg);
			delay_ms = (uint64_t)(d * 1000 + 0.5);
			break;
		}
		case 'M':
			f.max_body = cats_opt_size("--max-body", optarg);
			if (f.max_body == 0 || f.max_body > CATS_PROM_MAX_TEXT)
				cats_opt_fail("--max-body", "1 to %u bytes",
				    CATS_PROM_MAX_TEXT);
			break;
		case 'n':
			count = cats_opt_u64("--count", optarg, 1, UINT32_MAX);
			break;
		default:
			cats_opt_common(ch, argv, usage_text, NULL);
		}
	}
	if (optind + 1 != argc)
		cats_usage_fail(optind == argc ? "a source is needed "
		    "(http://HOST:PORT/metrics, tcp:HOST:PORT or a file)" :
		    "one source only");
	source(&f, argv[optind], url, sizeof(url));
	int trc = cats_tls_setup();
	if (trc != 0)
		return trc;
	bool tty = !batch && isatty(STDOUT_FILENO);
	if (f.url != NULL) {
		f.base = event_base_new();
		f.http = f.base ? httpc_new(f.base) : NULL;
		if (f.http == NULL) {
			cats_errorx("cannot set up the HTTP client");
			return CATS_EXIT_FAIL;
		}
	}
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	signal(SIGHUP, on_hup);

	struct cats_prom prev = { 0 };
	struct cats_buf out = { 0 };
	bool have_prev = false;
	uint64_t t_prev = 0;
	int rc = CATS_EXIT_OK;
	for (uint64_t i = 0; !stop && (count == 0 || i < count); i++) {
		if (i > 0)
			sleep_s((double)delay_ms / 1000);
		if (stop)
			break;
		if (hup) {
			hup = 0;
			cats_tls_reload();	/* as in every tool (cats(7)) */
		}
		if ((rc = fetch(&f)) != CATS_EXIT_OK) {
			cats_errorx("%s", f.err);
			break;
		}
		uint64_t t_now = cats_clock_mono_ns();
		double dt = have_prev ? (double)(t_now - t_prev) / 1e9 : 0;
		cats_buf_reset(&out);
		if (tty)
			cats_buf_add(&out, "\033[H\033[2J", 7);
		else if (i > 0)
			cats_buf_add(&out, "\n", 1);
		if (cats_top_frame(&t, have_prev ? &prev : NULL, &f.p,
		    (double)cats_clock_now() / 1000, dt, &out) < 0) {
			cats_errorx("out of memory");
			rc = CATS_EXIT_FAIL;
			break;
		}
		if (fwrite(out.p, 1, out.len, stdout) != out.len ||
		    fflush(stdout) != 0) {
			rc = cats_tool_output_failed("stdout", errno);
			break;
		}
		cats_prom_free(&prev);
		prev = f.p;
		memset(&f.p, 0, sizeof(f.p));
		have_prev = true;
		t_prev = t_now;
	}
	cats_prom_free(&prev);
	cats_prom_free(&f.p);
	cats_buf_free(&out);
	if (f.http != NULL)
		httpc_free(f.http);
	if (f.base != NULL)
		event_base_free(f.base);
	cats_tls_free();
	return rc;
}
