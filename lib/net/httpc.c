/*
 * httpc.c - libcurl multi driven by libevent: requests and SSE streams.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <event2/event.h>
#include <sodium.h>

#include "base/clock.h"
#include "net/httpc.h"
#include "net/tls.h"

struct sockev {
	struct event *ev;
	struct httpc *c;
	curl_socket_t fd;
};

struct httpc_req {
	struct httpc *c;
	struct httpc_req *prev, *next;
	CURL *easy;
	struct curl_slist *hdrs;
	struct cats_buf body;
	uint8_t *post;
	size_t max_body;
	bool too_big, cancelled;
	httpc_done_fn fn;
	void *arg;
	struct httpc_sse *sse;		/* set for event-stream transfers */
	bool pending;			/* not yet in the multi handle */
	uint64_t t0;
	char errbuf[CURL_ERROR_SIZE];
};

struct httpc_sse {
	struct httpc *c;
	char *url, *ca_file;
	char **headers;
	size_t nheaders;
	uint64_t stall_ms, connect_ms, bmin, bmax, backoff;
	struct httpc_sse_parser p;
	struct httpc_req *cur;
	struct event *retry;
	struct event *stall;		/* no byte for stall_ms: cut */
	struct httpc_sse_cbs cbs;
	void *arg;
	uint64_t attempts;
	bool connected, got_event, closing, refused;
	char why[256];
};

struct httpc {
	struct event_base *base;
	CURLM *multi;
	struct event *timer;
	struct httpc_req *reqs;		/* transfers in the multi handle */
	size_t nreqs;
	int depth;			/* inside our own dispatch */
	bool in_curl;			/* inside curl_multi_socket_action */
	bool dead;			/* freed while inside */
};

static bool curl_ready;

static void check_done(struct httpc *c);
static void really_free(struct httpc *c);

/* ---- the libevent side of the multi handle ---- */

static void
enter(struct httpc *c)
{
	c->depth++;
}

/* Leave a dispatch; true if the client was freed meanwhile. */
static bool
leave(struct httpc *c)
{
	if (--c->depth == 0 && c->dead) {
		really_free(c);
		return true;
	}
	return false;
}

/* Hand the multi handle what was started inside its callbacks. */
static void
add_pending(struct httpc *c)
{
	for (struct httpc_req *r = c->reqs; r != NULL; r = r->next) {
		if (!r->pending)
			continue;
		r->pending = false;
		if (curl_multi_add_handle(c->multi, r->easy) != CURLM_OK)
			r->pending = true;	/* tried again next turn */
	}
}

static void
on_socket_event(evutil_socket_t fd, short what, void *arg)
{
	struct sockev *se = arg;
	struct httpc *c = se->c;
	int running, action = 0;
	if (what & EV_READ)
		action |= CURL_CSELECT_IN;
	if (what & EV_WRITE)
		action |= CURL_CSELECT_OUT;
	enter(c);
	c->in_curl = true;
	curl_multi_socket_action(c->multi, fd, action, &running);
	c->in_curl = false;
	add_pending(c);
	check_done(c);
	leave(c);
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct httpc *c = arg;
	int running;
	(void)fd;
	(void)what;
	enter(c);
	c->in_curl = true;
	curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	c->in_curl = false;
	add_pending(c);
	check_done(c);
	leave(c);
}

static int
socket_cb(CURL *e, curl_socket_t fd, int what, void *cbp, void *sockp)
{
	struct httpc *c = cbp;
	struct sockev *se = sockp;
	(void)e;
	if (what == CURL_POLL_REMOVE) {
		if (se != NULL) {
			event_free(se->ev);
			free(se);
			curl_multi_assign(c->multi, fd, NULL);
		}
		return 0;
	}
	short kind = EV_PERSIST;
	if (what & CURL_POLL_IN)
		kind |= EV_READ;
	if (what & CURL_POLL_OUT)
		kind |= EV_WRITE;
	if (se == NULL) {
		se = calloc(1, sizeof(*se));
		if (se == NULL)
			return -1;
		se->c = c;
		se->fd = fd;
		curl_multi_assign(c->multi, fd, se);
	} else {
		event_free(se->ev);
	}
	se->ev = event_new(c->base, fd, kind, on_socket_event, se);
	if (se->ev == NULL)
		return -1;
	event_add(se->ev, NULL);
	return 0;
}

static int
timer_cb(CURLM *m, long ms, void *arg)
{
	struct httpc *c = arg;
	(void)m;
	if (ms < 0) {
		evtimer_del(c->timer);
		return 0;
	}
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	evtimer_add(c->timer, &tv);
	return 0;
}

struct httpc *
httpc_new(struct event_base *base)
{
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
			return NULL;
		curl_ready = true;
	}
	struct httpc *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return NULL;
	c->base = base;
	c->multi = curl_multi_init();
	c->timer = evtimer_new(base, on_timer, c);
	if (c->multi == NULL || c->timer == NULL) {
		if (c->multi)
			curl_multi_cleanup(c->multi);
		if (c->timer)
			event_free(c->timer);
		free(c);
		return NULL;
	}
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	return c;
}

size_t
httpc_active(const struct httpc *c)
{
	return c->nreqs;
}

/* ---- transfers ---- */

static void
req_unlink(struct httpc_req *r)
{
	struct httpc *c = r->c;
	if (r->prev)
		r->prev->next = r->next;
	else
		c->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	c->nreqs--;
}

static void
req_free(struct httpc_req *r)
{
	if (r->easy) {
		if (!r->pending)
			curl_multi_remove_handle(r->c->multi, r->easy);
		curl_easy_cleanup(r->easy);
	}
	curl_slist_free_all(r->hdrs);
	cats_buf_free(&r->body);
	free(r->post);
	free(r);
}

static size_t
write_body(char *p, size_t size, size_t nmemb, void *arg)
{
	struct httpc_req *r = arg;
	size_t n = size * nmemb;
	if (r->cancelled)
		return 0;
	if (r->body.len + n > r->max_body) {
		r->too_big = true;
		return 0;
	}
	if (cats_buf_add(&r->body, p, n) < 0)
		return 0;
	return n;
}

/* Options every transfer gets. */
static void
common_opts(struct httpc_req *r, const char *url, uint64_t connect_ms,
    const char *ca_file)
{
	CURL *e = r->easy;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PRIVATE, r);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
	    (long)(connect_ms ? connect_ms : 10000));
	curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
	if (ca_file != NULL)
		curl_easy_setopt(e, CURLOPT_CAINFO, ca_file);
	cats_tls_curl(e, ca_file);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "cats/" CATS_VERSION);
}

static struct httpc_req *
req_new(struct httpc *c)
{
	struct httpc_req *r = calloc(1, sizeof(*r));
	if (r == NULL)
		return NULL;
	r->c = c;
	r->easy = curl_easy_init();
	if (r->easy == NULL) {
		free(r);
		return NULL;
	}
	r->t0 = cats_clock_mono_ns();
	return r;
}

static int
req_start(struct httpc_req *r)
{
	struct httpc *c = r->c;
	/* libcurl does not take new handles from inside its callbacks. */
	if (c->in_curl)
		r->pending = true;
	else if (curl_multi_add_handle(c->multi, r->easy) != CURLM_OK)
		return -1;
	r->next = c->reqs;
	if (c->reqs)
		c->reqs->prev = r;
	c->reqs = r;
	c->nreqs++;
	return 0;
}

struct httpc_req *
httpc_request(struct httpc *c, const struct httpc_req_opts *o,
    httpc_done_fn fn, void *arg)
{
	struct httpc_req *r = req_new(c);
	if (r == NULL)
		return NULL;
	r->fn = fn;
	r->arg = arg;
	r->max_body = o->max_body ? o->max_body : (1u << 20);
	CURL *e = r->easy;
	common_opts(r, o->url, o->connect_timeout_ms, o->ca_file);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
	    (long)(o->timeout_ms ? o->timeout_ms : 30000));
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	for (size_t i = 0; o->headers && o->headers[i]; i++)
		r->hdrs = curl_slist_append(r->hdrs, o->headers[i]);
	if (o->method != NULL && strcmp(o->method, "POST") == 0) {
		char ct[256];
		r->post = malloc(o->len ? o->len : 1);
		if (r->post == NULL) {
			req_free(r);
			return NULL;
		}
		memcpy(r->post, o->body, o->len);
		curl_easy_setopt(e, CURLOPT_POST, 1L);
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->post);
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)o->len);
		snprintf(ct, sizeof(ct), "Content-Type: %s",
		    o->ctype ? o->ctype : "application/octet-stream");
		r->hdrs = curl_slist_append(r->hdrs, ct);
		/* No 100-continue round trip. */
		r->hdrs = curl_slist_append(r->hdrs, "Expect:");
	}
	if (r->hdrs)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
	if (req_start(r) < 0) {
		req_free(r);
		return NULL;
	}
	return r;
}

void
httpc_cancel(struct httpc_req *r)
{
	if (r == NULL)
		return;
	if (r->c->in_curl) {
		/* Inside curl: stop the callback, let the transfer end. */
		r->cancelled = true;
		r->fn = NULL;
		return;
	}
	req_unlink(r);
	req_free(r);
}

static void sse_done(struct httpc_sse *s, struct httpc_req *r, CURLcode rc);

/* Hand every finished transfer to its owner. */
static void
check_done(struct httpc *c)
{
	CURLMsg *m;
	int left;
	while (!c->dead && (m = curl_multi_info_read(c->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		struct httpc_req *r = NULL;
		CURLcode rc = m->data.result;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		if (r == NULL)
			continue;
		req_unlink(r);
		curl_multi_remove_handle(c->multi, r->easy);
		if (r->sse != NULL) {
			sse_done(r->sse, r, rc);
			req_free(r);
			continue;
		}
		if (r->fn != NULL && !r->cancelled) {
			struct httpc_resp resp;
			memset(&resp, 0, sizeof(resp));
			resp.code = rc;
			curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE,
			    &resp.status);
			char *ct = NULL;
			curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
			resp.ctype = ct;
			resp.body = r->body.p;
			resp.len = r->body.len;
			resp.too_big = r->too_big;
			resp.ms = (cats_clock_mono_ns() - r->t0) / 1000000;
			if (rc != CURLE_OK)
				resp.error = r->too_big ? "response body too "
				    "large" : r->errbuf[0] ? r->errbuf
				    : curl_easy_strerror(rc);
			r->fn(r->arg, &resp);
		}
		req_free(r);
	}
}

static void
really_free(struct httpc *c)
{
	while (c->reqs != NULL) {
		struct httpc_req *r = c->reqs;
		req_unlink(r);
		if (r->sse != NULL) {
			r->sse->cur = NULL;
			r->sse->c = NULL;
		}
		req_free(r);
	}
	curl_multi_cleanup(c->multi);
	event_free(c->timer);
	free(c);
}

void
httpc_free(struct httpc *c)
{
	if (c == NULL)
		return;
	if (c->depth > 0) {
		c->dead = true;
		for (struct httpc_req *r = c->reqs; r; r = r->next) {
			r->fn = NULL;
			r->cancelled = true;
		}
		return;
	}
	really_free(c);
}

/* ---- the event-stream parser ---- */

void
httpc_sse_parser_init(struct httpc_sse_parser *p, size_t max_event)
{
	memset(p, 0, sizeof(*p));
	p->max_event = max_event ? max_event : 65536;
}

void
httpc_sse_parser_free(struct httpc_sse_parser *p)
{
	cats_buf_free(&p->line);
	cats_buf_free(&p->data);
}

static void
dispatch(struct httpc_sse_parser *p, httpc_sse_fn fn, void *arg)
{
	if (p->skip_event) {
		p->skip_event = false;
		p->data.len = 0;
		p->type[0] = '\0';
		return;
	}
	if (p->data.len == 0) {
		p->type[0] = '\0';
		return;
	}
	/* Drop the newline after the last data line; NUL-end the data. */
	p->data.p[p->data.len - 1] = '\0';
	struct httpc_sse_event ev = {
		.type = p->type[0] ? p->type : "message",
		.id = p->id,
		.data = (const char *)p->data.p,
		.len = p->data.len - 1,
	};
	p->events++;
	if (fn != NULL)
		fn(arg, &ev);
	p->data.len = 0;
	p->type[0] = '\0';
}

static void
field(struct httpc_sse_parser *p, const char *l, size_t n)
{
	if (n > 0 && l[0] == ':')
		return;
	size_t k = 0;
	while (k < n && l[k] != ':')
		k++;
	const char *v = l + k;
	size_t vn = 0;
	if (k < n) {
		v = l + k + 1;
		vn = n - k - 1;
		if (vn > 0 && v[0] == ' ') {
			v++;
			vn--;
		}
	}
	if (k == 4 && memcmp(l, "data", 4) == 0) {
		if (p->data.len + vn + 1 > p->max_event) {
			p->skip_event = true;
			p->overflows++;
			p->data.len = 0;
			return;
		}
		if (!p->skip_event && (cats_buf_add(&p->data, v, vn) < 0 ||
		    cats_buf_add(&p->data, "\n", 1) < 0))
			p->skip_event = true;
	} else if (k == 5 && memcmp(l, "event", 5) == 0) {
		if (vn < sizeof(p->type)) {
			memcpy(p->type, v, vn);
			p->type[vn] = '\0';
		} else {
			p->skip_event = true;
			p->overflows++;
		}
	} else if (k == 2 && memcmp(l, "id", 2) == 0) {
		if (memchr(v, '\0', vn) == NULL && vn < sizeof(p->id)) {
			memcpy(p->id, v, vn);
			p->id[vn] = '\0';
		}
	} else if (k == 5 && memcmp(l, "retry", 5) == 0) {
		uint64_t ms = 0;
		size_t i = 0;
		for (; i < vn && v[i] >= '0' && v[i] <= '9' && ms < 4294967295u;
		    i++)
			ms = ms * 10 + (uint64_t)(v[i] - '0');
		if (i == vn && vn > 0)
			p->retry_ms = ms;
	}
}

static void
end_line(struct httpc_sse_parser *p, httpc_sse_fn fn, void *arg)
{
	if (p->skip_line) {
		p->skip_line = false;
		p->line.len = 0;
		return;
	}
	const char *l = (const char *)p->line.p;
	size_t n = p->line.len;
	/* One UTF-8 BOM may open the stream. */
	if (!p->started && n >= 3 && memcmp(l, "\xef\xbb\xbf", 3) == 0) {
		l += 3;
		n -= 3;
	}
	p->started = true;
	if (n == 0)
		dispatch(p, fn, arg);
	else
		field(p, l, n);
	p->line.len = 0;
}

void
httpc_sse_feed(struct httpc_sse_parser *p, const char *buf, size_t n,
    httpc_sse_fn fn, void *arg)
{
	for (size_t i = 0; i < n; i++) {
		char ch = buf[i];
		if (ch == '\n' && p->cr) {
			p->cr = false;
			continue;
		}
		p->cr = ch == '\r';
		if (ch == '\n' || ch == '\r') {
			end_line(p, fn, arg);
			continue;
		}
		if (p->skip_line)
			continue;
		/* A run of plain bytes at once. */
		size_t j = i;
		while (j < n && buf[j] != '\n' && buf[j] != '\r')
			j++;
		if (p->line.len + (j - i) > p->max_event) {
			p->skip_line = true;
			p->skip_event = true;
			p->overflows++;
			p->line.len = 0;
		} else if (cats_buf_add(&p->line, buf + i, j - i) < 0) {
			p->skip_line = true;
		}
		i = j - 1;
	}
}

/* ---- event-stream subscriptions ---- */

static void sse_connect(struct httpc_sse *s);

static void
sse_event(void *arg, const struct httpc_sse_event *ev)
{
	struct httpc_sse *s = arg;
	s->got_event = true;
	if (s->cbs.event && !s->closing)
		s->cbs.event(s->arg, ev);
}

static void
arm_stall(struct httpc_sse *s)
{
	struct timeval tv = { (time_t)(s->stall_ms / 1000),
		(suseconds_t)(s->stall_ms % 1000) * 1000 };
	evtimer_add(s->stall, &tv);
}

static size_t
sse_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct httpc_req *r = arg;
	struct httpc_sse *s = r->sse;
	size_t n = size * nmemb;
	if (s == NULL || s->closing)
		return 0;
	arm_stall(s);
	if (!s->connected) {
		long status = 0;
		char *ct = NULL;
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
		curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
		if (status != 200) {
			snprintf(s->why, sizeof(s->why), "HTTP status %ld",
			    status);
			s->refused = true;
			return 0;
		}
		if (ct == NULL || strncasecmp(ct, "text/event-stream", 17) != 0) {
			snprintf(s->why, sizeof(s->why), "not an event stream "
			    "(Content-Type %.60s)", ct ? ct : "none");
			s->refused = true;
			return 0;
		}
		s->connected = true;
		if (s->cbs.state)
			s->cbs.state(s->arg, true, "connected", 0);
		if (s->closing)
			return 0;
	}
	httpc_sse_feed(&s->p, p, n, sse_event, s);
	return s->closing ? 0 : n;
}

static void
sse_free(struct httpc_sse *s)
{
	if (s->retry)
		event_free(s->retry);
	if (s->stall)
		event_free(s->stall);
	httpc_sse_parser_free(&s->p);
	for (size_t i = 0; i < s->nheaders; i++)
		free(s->headers[i]);
	free(s->headers);
	free(s->url);
	free(s->ca_file);
	free(s);
}

static void
sse_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	sse_connect(arg);
}

/* Schedule the next attempt after a failure or an end of stream. */
static void
sse_schedule(struct httpc_sse *s)
{
	if (s->got_event)
		s->backoff = s->bmin;
	uint64_t base = s->backoff;
	if (s->p.retry_ms > base && s->p.retry_ms <= s->bmax)
		base = s->p.retry_ms;
	/* Jitter: 75 % to 125 % of the step. */
	uint64_t delay = base * 3 / 4 + randombytes_uniform(
	    (uint32_t)(base / 2 > 0 ? base / 2 : 1));
	s->backoff = s->backoff * 2 > s->bmax ? s->bmax : s->backoff * 2;
	struct timeval tv = { (time_t)(delay / 1000),
		(suseconds_t)(delay % 1000) * 1000 };
	evtimer_add(s->retry, &tv);
	if (s->cbs.state)
		s->cbs.state(s->arg, false, s->why, delay);
}

/* The connection is gone: forget its half-read event, try again later. */
static void
sse_lost(struct httpc_sse *s)
{
	evtimer_del(s->stall);
	s->connected = false;
	s->p.line.len = 0;
	s->p.data.len = 0;
	s->p.type[0] = '\0';
	s->p.cr = s->p.skip_line = s->p.skip_event = false;
	s->p.started = false;
	sse_schedule(s);
}

/*
 * Nothing for stall_ms.  CURLOPT_LOW_SPEED_* would notice too, but only
 * once its 5-second speed window has drained; this timer is exact.
 */
static void
sse_stalled(evutil_socket_t fd, short what, void *arg)
{
	struct httpc_sse *s = arg;
	(void)fd;
	(void)what;
	if (s->cur == NULL || s->closing)
		return;
	req_unlink(s->cur);
	req_free(s->cur);
	s->cur = NULL;
	snprintf(s->why, sizeof(s->why), "stalled: nothing for %llu ms",
	    (unsigned long long)s->stall_ms);
	sse_lost(s);
}

static void
sse_done(struct httpc_sse *s, struct httpc_req *r, CURLcode rc)
{
	s->cur = NULL;
	if (s->closing) {
		sse_free(s);
		return;
	}
	if (!s->refused) {
		if (rc == CURLE_OPERATION_TIMEDOUT && s->connected)
			snprintf(s->why, sizeof(s->why), "stalled: nothing for "
			    "%llu ms", (unsigned long long)s->stall_ms);
		else if (rc != CURLE_OK)
			snprintf(s->why, sizeof(s->why), "%s", r->errbuf[0] ?
			    r->errbuf : curl_easy_strerror(rc));
		else
			snprintf(s->why, sizeof(s->why), "the server ended the "
			    "stream");
	}
	sse_lost(s);
}

static void
sse_connect(struct httpc_sse *s)
{
	struct httpc_req *r = req_new(s->c);
	char h[300];
	s->attempts++;
	s->connected = s->got_event = s->refused = false;
	s->why[0] = '\0';
	if (r == NULL) {
		snprintf(s->why, sizeof(s->why), "out of memory");
		sse_schedule(s);
		return;
	}
	r->sse = s;
	CURL *e = r->easy;
	common_opts(r, s->url, s->connect_ms, s->ca_file);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, sse_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	/* libcurl does not notice a silent drop: a stream that sends less
	 * than a byte a second for stall_ms is cut. */
	long stall = (long)((s->stall_ms + 999) / 1000);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, stall > 0 ? stall : 1L);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	r->hdrs = curl_slist_append(r->hdrs, "Accept: text/event-stream");
	r->hdrs = curl_slist_append(r->hdrs, "Cache-Control: no-cache");
	if (s->p.id[0]) {
		snprintf(h, sizeof(h), "Last-Event-ID: %s", s->p.id);
		r->hdrs = curl_slist_append(r->hdrs, h);
	}
	for (size_t i = 0; i < s->nheaders; i++)
		r->hdrs = curl_slist_append(r->hdrs, s->headers[i]);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
	if (req_start(r) < 0) {
		req_free(r);
		snprintf(s->why, sizeof(s->why), "cannot start the transfer");
		sse_schedule(s);
		return;
	}
	s->cur = r;
	arm_stall(s);
}

struct httpc_sse *
httpc_sse_open(struct httpc *c, const struct httpc_sse_opts *o,
    const struct httpc_sse_cbs *cbs, void *arg)
{
	struct httpc_sse *s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->c = c;
	s->url = strdup(o->url);
	s->ca_file = o->ca_file ? strdup(o->ca_file) : NULL;
	s->stall_ms = o->stall_ms ? o->stall_ms : 30000;
	s->connect_ms = o->connect_timeout_ms;
	s->bmin = o->backoff_min_ms ? o->backoff_min_ms : 1000;
	s->bmax = o->backoff_max_ms ? o->backoff_max_ms : 60000;
	if (s->bmax < s->bmin)
		s->bmax = s->bmin;
	s->backoff = s->bmin;
	if (cbs)
		s->cbs = *cbs;
	s->arg = arg;
	httpc_sse_parser_init(&s->p, o->max_event);
	if (o->last_id)
		cats_strlcpy(s->p.id, o->last_id, sizeof(s->p.id));
	size_t nh = 0;
	while (o->headers && o->headers[nh])
		nh++;
	s->headers = calloc(nh ? nh : 1, sizeof(*s->headers));
	s->retry = evtimer_new(c->base, sse_retry, s);
	s->stall = evtimer_new(c->base, sse_stalled, s);
	if (s->url == NULL || s->headers == NULL || s->retry == NULL ||
	    s->stall == NULL) {
		sse_free(s);
		return NULL;
	}
	for (; s->nheaders < nh; s->nheaders++)
		if ((s->headers[s->nheaders] = strdup(o->headers[s->nheaders]))
		    == NULL)
			break;
	sse_connect(s);
	return s;
}

void
httpc_sse_close(struct httpc_sse *s)
{
	if (s == NULL)
		return;
	evtimer_del(s->retry);
	evtimer_del(s->stall);
	if (s->cur == NULL) {
		sse_free(s);
		return;
	}
	if (s->c != NULL && s->c->in_curl) {
		/* Inside curl: the transfer ends and sse_done frees s. */
		s->closing = true;
		return;
	}
	req_unlink(s->cur);
	req_free(s->cur);
	sse_free(s);
}

const char *
httpc_sse_last_id(const struct httpc_sse *s)
{
	return s->p.id;
}

uint64_t
httpc_sse_attempts(const struct httpc_sse *s)
{
	return s->attempts;
}
