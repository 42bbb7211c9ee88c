/*
 * sci.c - the reference SCI reporter (see sci.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>
#include <mosquitto.h>

#include "base/clock.h"
#include "base/file.h"
#include "base/log.h"
#include "rec/json.h"
#include "rec/seq.h"
#include "base/tool.h"
#include "sci/sci.h"
#include "sci/sci_mqtt.h"

static void push_answered(struct sci_reporter *s);

/* A subscriber of the event stream. */
struct sci_sub {
	struct httpd_sse *c;
	struct sci_sub *next;
};

/* ---- metrics from a file or a command ---- */

int
sci_set_health(struct sci_metrics *m, const char *s)
{
	int h = cats_enum_index(cats_health_names, s, strlen(s));
	if (h < 0)
		return -1;
	m->health = h;
	return 0;
}

static int
merge_json(struct sci_metrics *m, const char *text, size_t n,
    const char *where)
{
	json_error_t je;
	json_t *j = json_loadb(text, n, 0, &je);
	if (j == NULL || !json_is_object(j)) {
		cats_warnx("%s: expected a JSON object of metrics (%s)", where,
		    j ? "not an object" : je.text);
		json_decref(j);
		return -1;
	}
	static const struct {
		const char *k;
		size_t has, val;
	} nums[] = {
		{ "gas", offsetof(struct sci_metrics, has_gas),
		    offsetof(struct sci_metrics, gas) },
		{ "comp_time_ms", offsetof(struct sci_metrics, has_ct),
		    offsetof(struct sci_metrics, ct) },
		{ "price", offsetof(struct sci_metrics, has_price),
		    offsetof(struct sci_metrics, price) },
		{ "reputation", offsetof(struct sci_metrics, has_rep),
		    offsetof(struct sci_metrics, rep) },
		{ "security_level", offsetof(struct sci_metrics, has_sec),
		    offsetof(struct sci_metrics, sec) },
		{ "instances", offsetof(struct sci_metrics, has_inst),
		    offsetof(struct sci_metrics, inst) },
	};
	int rc = 0;
	for (size_t i = 0; i < CATS_ARRAY_LEN(nums); i++) {
		json_t *v = json_object_get(j, nums[i].k);
		if (v == NULL)
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			cats_warnx("%s: %s: expected a count", where,
			    nums[i].k);
			rc = -1;
			continue;
		}
		*(bool *)((char *)m + nums[i].has) = true;
		*(uint64_t *)((char *)m + nums[i].val) =
		    (uint64_t)json_integer_value(v);
	}
	json_t *h = json_object_get(j, "health");
	if (h != NULL && (!json_is_string(h) || sci_set_health(m,
	    json_string_value(h)) < 0)) {
		cats_warnx("%s: health: expected HEALTHY, DEGRADED, UNHEALTHY "
		    "or UNKNOWN", where);
		rc = -1;
	}
	json_t *ext = json_object_get(j, "ext");
	if (ext != NULL && json_is_object(ext)) {
		const char *k;
		json_t *v;
		m->next = 0;
		json_object_foreach(ext, k, v) {
			if (m->next == SCI_MAX_EXT || !json_is_integer(v) ||
			    json_integer_value(v) < 0 || strlen(k) > CATS_ID)
				continue;
			cats_strlcpy(m->extname[m->next], k, CATS_ID + 1);
			m->ext[m->next].k = m->extname[m->next];
			m->ext[m->next].v = (uint64_t)json_integer_value(v);
			m->next++;
		}
	}
	json_decref(j);
	return rc;
}

/*
 * Refresh the metrics from --metrics FILE or --exec COMMAND: 0, or the exit
 * code of why not (66 no file, 65 invalid metrics, 1 the command failed),
 * said in one line.  A report is not made from metrics that failed.
 */
static int
refresh(struct sci_reporter *s)
{
	char buf[65536];
	size_t n = 0;
	if (s->metrics_file != NULL) {
		char why[300];
		int fd = cats_file_open(s->metrics_file, why, sizeof(why));
		FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
		if (f == NULL) {
			if (fd >= 0) {
				snprintf(why, sizeof(why), "%s: %s",
				    s->metrics_file, strerror(errno));
				close(fd);
			}
			cats_warnx("%s", why);
			return CATS_EXIT_NOINPUT;
		}
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		if (merge_json(&s->m, buf, n, s->metrics_file) < 0)
			return CATS_EXIT_DATAERR;
	}
	if (s->exec != NULL) {
		FILE *p = popen(s->exec, "r");
		if (p == NULL) {
			cats_warnx("%s: %s", s->exec, strerror(errno));
			return CATS_EXIT_FAIL;
		}
		n = fread(buf, 1, sizeof(buf), p);
		int st = pclose(p);
		if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			if (st != -1 && WIFSIGNALED(st))
				cats_warnx("--exec %s: killed by signal %d",
				    s->exec, WTERMSIG(st));
			else if (st != -1 && WIFEXITED(st))
				cats_warnx("--exec %s: exited with status %d",
				    s->exec, WEXITSTATUS(st));
			else
				cats_warnx("--exec %s: %s", s->exec,
				    strerror(errno));
			return CATS_EXIT_FAIL;
		}
		if (merge_json(&s->m, buf, n, s->exec) < 0)
			return CATS_EXIT_DATAERR;
	}
	return 0;
}

/* ---- reports ---- */

int
sci_report(struct sci_reporter *s, struct cats_buf *out)
{
	struct cats_rec r;
	struct cats_sci_report *p = &r.u.sci;
	s->refresh_failed = false;
	if ((s->report_rc = refresh(s)) != 0) {
		s->refresh_failed = true;
		return -1;
	}
	s->report_rc = CATS_EXIT_DATAERR;
	cats_rec_init(&r, CATS_T_SCI_REPORT);
	p->csci_id = s->csci;
	p->cs_id = s->cs;
	p->seq = s->seq++;
	p->ts = s->fixed_ts ? s->ts : cats_clock_now();
	if (s->fixed_ts)
		s->ts += s->interval_ms;
	p->health = s->m.health;
	CATS_SET_IF(s->m.has_gas, p, SCI, gas, s->m.gas);
	CATS_SET_IF(s->m.has_ct, p, SCI, comp_time_ms, s->m.ct);
	CATS_SET_IF(s->m.has_price, p, SCI, price, s->m.price);
	CATS_SET_IF(s->m.has_rep, p, SCI, reputation, s->m.rep);
	CATS_SET_IF(s->m.has_sec, p, SCI, security_level, s->m.sec);
	CATS_SET_IF(s->m.has_inst, p, SCI, instances, s->m.inst);
	p->ext.v = s->m.ext;
	p->ext.n = s->m.next;
	CATS_SET(p, SCI, interval_ms, s->interval_ms);
	p->locator = s->locator;
	CATS_SET_IF(s->has_port, p, SCI, port, s->port);
	if (s->token.len > 0) {
		p->token.p = s->token.p;
		p->token.n = s->token.len;
	}
	struct cats_err e;
	memset(&e, 0, sizeof(e));
	if (cats_rec_validate(&r, &e) < 0) {
		cats_errorx("report: %s: %s", e.field, e.reason);
		return -1;
	}
	if (s->have_key && cats_rec_sign(&r, &s->key) < 0) {
		cats_errorx("cannot sign the report");
		s->report_rc = CATS_EXIT_FAIL;
		return -1;
	}
	return cats_rec_encode(&r, out, true);
}

/* ---- once ---- */

int
sci_once(struct sci_reporter *s)
{
	uint64_t n = s->count ? s->count : 1;
	for (uint64_t i = 0; i < n; i++) {
		struct cats_buf b = { 0 };
		if (sci_report(s, &b) < 0) {
			cats_buf_free(&b);
			return s->report_rc;
		}
		if (s->json) {
			struct cats_dec d;
			struct cats_rec r;
			struct cats_err e;
			cats_dec_init(&d, NULL);
			if (cats_rec_decode(&d, b.p, b.len, &r, &e) == 0 &&
			    cats_rec_print_json(&r, stdout) < 0) {
				int err = errno;
				cats_dec_free(&d);
				cats_buf_free(&b);
				return cats_tool_output_failed("stdout", err);
			}
			cats_dec_free(&d);
		} else if (cats_write_all(1, b.p, b.len) < 0) {
			int err = errno;
			cats_buf_free(&b);
			return cats_tool_output_failed("stdout", err);
		}
		cats_buf_free(&b);
	}
	if (s->json && fflush(stdout) != 0)
		return cats_tool_output_failed("stdout", errno);
	return CATS_EXIT_OK;
}

/* ---- push ---- */

static void
push_done(void *arg, const struct httpc_resp *r)
{
	struct sci_reporter *s = arg;
	if (r->code != 0)
		cats_warnx("push: %s: %s", s->to, r->error);
	else if (r->status != 200)
		cats_warnx("push: %s: HTTP %ld: %.*s", s->to, r->status,
		    (int)(r->len > 200 ? 200 : r->len), (const char *)r->body);
	/* A counted run ends in 1 if a report was not delivered. */
	if ((r->code != 0 || r->status != 200) && s->count != 0 &&
	    s->exit_code == CATS_EXIT_OK)
		s->exit_code = CATS_EXIT_FAIL;
	push_answered(s);
}

/* A count of pushes is over once every one is answered. */
static void
push_answered(struct sci_reporter *s)
{
	s->done++;
	if (s->count && s->done >= s->count && s->listen == NULL)
		event_base_loopbreak(s->base);
}

static void
mqtt_published(void *arg, int mid, int reason)
{
	struct sci_reporter *s = arg;
	(void)mid;
	if (reason >= 0x80) {
		cats_warnx("push: the broker refused the report on %s: %s",
		    s->topic, mosquitto_reason_string(reason));
		s->refused++;
		s->exit_code = CATS_EXIT_NOPERM;
	}
	push_answered(s);
}

static void
mqtt_state(void *arg, bool up, const char *why)
{
	struct sci_reporter *s = arg;
	if (up) {
		cats_debug("mqtt: connected");
		if (s->sent == 0)
			sci_push(s);
	} else {
		cats_warnx("mqtt: %s", why);
	}
}

int
sci_mqtt_start(struct sci_reporter *s)
{
	char err[400], host[300];
	const char *p = strstr(s->to, "://") + 3;
	const char *path = strchr(p, '/');
	if (path != NULL && path[1] != '\0')
		snprintf(s->topic, sizeof(s->topic), "%s", path + 1);
	else
		snprintf(s->topic, sizeof(s->topic), "cats/sci/%s/report",
		    s->csci);
	snprintf(host, sizeof(host), "%.*s", (int)(path ? (size_t)(path -
	    s->to) : strlen(s->to)), s->to);
	struct sci_mqtt_conf c = { .broker = host, .client_id = s->csci,
		.ca_file = s->ca_file, .cert = s->cert, .key = s->cert_key,
		.qos = 1, .clean = true };
	static const struct sci_mqtt_cbs cbs = { NULL, mqtt_state,
		mqtt_published };
	if ((s->mqtt = sci_mqtt_new(s->base, &c, &cbs, s, err,
	    sizeof(err))) == NULL) {
		cats_errorx("--to: %s", err);
		return CATS_EXIT_CONFIG;
	}
	return CATS_EXIT_OK;
}

void
sci_push(struct sci_reporter *s)
{
	struct cats_buf b = { 0 };
	/* MQTT: nothing is made while the broker is away (the next push
	 * is the first one after it is back). */
	if (s->mqtt != NULL && !sci_mqtt_connected(s->mqtt))
		return;
	if (sci_report(s, &b) < 0) {
		/* Metrics that failed to refresh skip this report (the
		 * C-SMA sees it late); a report that is invalid stops. */
		if (s->refresh_failed)
			return;
		s->exit_code = s->report_rc;
		event_base_loopbreak(s->base);
		return;
	}
	if (s->mqtt != NULL) {
		char err[300];
		int mid;
		s->sent++;
		if (sci_mqtt_publish(s->mqtt, s->topic, b.p, b.len, &mid, err,
		    sizeof(err)) < 0) {
			/* (refused by libmosquitto itself: counted done) */
			cats_warnx("push: %s", err);
			push_answered(s);
		}
		cats_buf_free(&b);
		return;
	}
	struct httpc_req_opts o = { .method = "POST", .url = s->to,
		.body = b.p, .len = b.len, .ctype = "application/cbor",
		.timeout_ms = 10000 };
	if (httpc_request(s->http, &o, push_done, s) == NULL)
		cats_warnx("push: cannot start a request");
	cats_buf_free(&b);
	s->sent++;
}

/* ---- serve ---- */

static void
remember(struct sci_reporter *s, uint64_t seq, const char *b64)
{
	free(s->ring_data[s->ring_pos]);
	snprintf(s->ring_id[s->ring_pos], sizeof(s->ring_id[0]), "%" PRIu64,
	    seq);
	s->ring_data[s->ring_pos] = strdup(b64);
	s->ring_pos = (s->ring_pos + 1) % SCI_RING;
}

static char *
b64_of(const struct cats_buf *b)
{
	size_t cap = 4 * ((b->len + 2) / 3) + 1;
	char *t = malloc(cap);
	if (t != NULL)
		cats_b64url_encode(b->p, b->len, t, cap);
	return t;
}

static void
sub_closed(void *arg, struct httpd_sse *c)
{
	struct sci_reporter *s = arg;
	for (struct sci_sub **pp = &s->subs; *pp; pp = &(*pp)->next) {
		if ((*pp)->c == c) {
			struct sci_sub *d = *pp;
			*pp = d->next;
			free(d);
			return;
		}
	}
}

/* Send an event to every subscriber; one that lags is cut off. */
static void
broadcast(struct sci_reporter *s, const char *id, const char *data)
{
	for (struct sci_sub **pp = &s->subs; *pp;) {
		struct sci_sub *u = *pp;
		if (httpd_sse_send(u->c, "sci-report", id, data,
		    1u << 20) < 0) {
			httpd_sse_end(u->c);
			*pp = u->next;
			free(u);
			continue;
		}
		pp = &u->next;
	}
}

static void
serve_tick(struct sci_reporter *s)
{
	struct cats_buf b = { 0 };
	uint64_t seq = s->seq;
	if (sci_report(s, &b) < 0) {
		cats_buf_free(&b);
		return;
	}
	char *t = b64_of(&b);
	cats_buf_free(&b);
	if (t == NULL)
		return;
	char id[24];
	snprintf(id, sizeof(id), "%" PRIu64, seq);
	remember(s, seq, t);
	broadcast(s, id, t);
	free(t);
}

static void
on_report(struct evhttp_request *req, void *arg)
{
	struct sci_reporter *s = arg;
	struct cats_buf b = { 0 };
	s->pulls++;
	if (sci_report(s, &b) < 0) {
		httpd_error(req, 500, "cannot make a report");
		return;
	}
	httpd_reply(req, 200, "application/cbor", b.p, b.len);
	cats_buf_free(&b);
}

static void
on_events(struct evhttp_request *req, void *arg)
{
	struct sci_reporter *s = arg;
	const char *last = httpd_header(req, "Last-Event-ID");
	struct sci_sub *u = calloc(1, sizeof(*u));
	if (u == NULL) {
		httpd_error(req, 503, "out of memory");
		return;
	}
	u->c = httpd_sse_start(req, sub_closed, s);
	if (u->c == NULL) {
		free(u);
		return;
	}
	u->next = s->subs;
	s->subs = u;
	s->streams++;
	httpd_sse_comment(u->c, "cats-sci event stream");
	/* Resume after Last-Event-ID with what the ring still holds. */
	if (last != NULL) {
		size_t at = SCI_RING;
		for (size_t i = 0; i < SCI_RING; i++)
			if (s->ring_data[i] && strcmp(s->ring_id[i], last) == 0)
				at = i;
		for (size_t k = 1; at < SCI_RING && k < SCI_RING; k++) {
			size_t i = (at + k) % SCI_RING;
			if (i == s->ring_pos || s->ring_data[i] == NULL)
				break;
			httpd_sse_send(u->c, "sci-report", s->ring_id[i],
			    s->ring_data[i], 0);
		}
	}
}

void
sci_serve(struct sci_reporter *s)
{
	httpd_route(s->httpd, "/report", HTTPD_GET, on_report, s);
	httpd_route(s->httpd, "/events", HTTPD_GET, on_events, s);
	serve_tick(s);
}

void
sci_tick(struct sci_reporter *s)
{
	if (s->to != NULL && (s->count == 0 || s->sent < s->count))
		sci_push(s);
	if (s->listen != NULL) {
		serve_tick(s);
		for (struct sci_sub *u = s->subs; u; u = u->next)
			httpd_sse_comment(u->c, "keepalive");
	}
}

void
sci_end(struct sci_reporter *s)
{
	while (s->subs) {
		struct sci_sub *u = s->subs;
		s->subs = u->next;
		httpd_sse_end(u->c);
		free(u);
	}
	httpd_free(s->httpd);
	httpc_free(s->http);
	sci_mqtt_free(s->mqtt);
	s->httpd = NULL;
	s->http = NULL;
	s->mqtt = NULL;
	for (size_t i = 0; i < SCI_RING; i++) {
		free(s->ring_data[i]);
		s->ring_data[i] = NULL;
	}
}

/* ---- the token ---- */

int
sci_token_load(struct cats_buf *tok, const char *path, char *err,
    size_t errlen)
{
	int fd = cats_file_open(path, err, errlen);
	if (fd < 0)
		return CATS_EXIT_NOINPUT;
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || n == (ssize_t)sizeof(buf)) {
		snprintf(err, errlen, "%s: not a token", path);
		return CATS_EXIT_NOPERM;
	}
	buf[n] = '\0';
	size_t len = (size_t)n;
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	/* base64url text (cats-key token -b), or raw CBOR. */
	if (len > 0 && strspn(buf, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789-_") >= len) {
		uint8_t bin[4096];
		long m = cats_b64url_decode(buf, len, bin, sizeof(bin));
		if (m <= 0) {
			snprintf(err, errlen, "%s: bad base64url", path);
			return CATS_EXIT_NOPERM;
		}
		cats_buf_add(tok, bin, (size_t)m);
	} else if ((uint8_t)buf[0] == 0x84 || (uint8_t)buf[0] == 0xd2) {
		cats_buf_add(tok, buf, (size_t)n);
	} else {
		/* Neither text nor a COSE_Sign1 array (tagged or not). */
		snprintf(err, errlen, "%s: not a token (base64url text or "
		    "COSE_Sign1 CBOR, as cats-key token writes)", path);
		return CATS_EXIT_NOPERM;
	}
	return CATS_EXIT_OK;
}

void
sci_stats_fill(void *arg, struct cats_stats_list *st)
{
	struct sci_reporter *s = arg;
	uint64_t subs = 0;
	for (struct sci_sub *u = s->subs; u != NULL; u = u->next)
		subs++;
	cats_stats_init(st, "cats-sci", s->csci);
	cats_stats_add(st, "reports_sent", s->sent);
	cats_stats_add(st, "reports_answered", s->done);
	cats_stats_add(st, "reports_refused", s->refused);
	cats_stats_add(st, "pulls", s->pulls);
	cats_stats_add(st, "streams", s->streams);
	cats_stats_gauge(st, "subscribers", subs);
	cats_stats_gauge(st, "seq", s->seq);
}
