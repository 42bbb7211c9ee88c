/*
 * cats-sci - a reference SCI reporter: signed sci-report records with the
 * metrics given on the command line, in a file or by a command; once to
 * stdout, pushed over HTTP, or served to pulls and as an SSE stream.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "base/clock.h"
#include "base/conf.h"
#include "sec/crypto.h"
#include "net/httpc.h"
#include "net/httpd.h"
#include "rec/json.h"
#include "base/log.h"
#include "rec/seq.h"
#include "base/tool.h"

static const char usage_text[] =
    "usage: cats-sci [-1jv] [-C comp-time] -c cs-id [-e command] [-g gas]\n"
    "                [-H health] [-I interval] [-K token] [-k key]\n"
    "                [-L security-level] [-l endpoint] [-m file] [-n count]\n"
    "                [-p price] [-q seq] [-R reputation] -s csci-id\n"
    "                [-T ts] [-t url] [-x name=value] [--instances n]\n"
    "                [--locator addr] [--port port]\n";

static void
usage(void)
{
	fputs(usage_text, stderr);
	exit(CATS_EXIT_USAGE);
}

#define MAX_EXT 16
#define RING 64

/* The metrics the next report carries. */
struct metrics {
	int health;
	bool has_gas, has_ct, has_price, has_rep, has_sec, has_inst;
	uint64_t gas, ct, price, rep, sec, inst;
	struct cats_kv ext[MAX_EXT];
	char extname[MAX_EXT][CATS_ID + 1];
	size_t next;
};

struct sub {
	struct httpd_sse *c;
	struct sub *next;
};

struct sci {
	const char *csci, *cs;
	struct metrics m;
	const char *metrics_file, *exec;
	uint64_t interval_ms;
	uint64_t seq;
	bool fixed_ts;
	uint64_t ts;
	uint64_t count, sent, done;
	bool json, once;
	struct cats_buf token;
	bool have_key;
	struct cats_key key;
	struct cats_ip locator;
	bool has_port;
	uint64_t port;
	const char *to, *listen;
	struct event_base *base;
	struct httpc *http;
	struct httpd *httpd;
	struct event *timer, *sigs[3];
	struct sub *subs;
	char ring_id[RING][24];
	char *ring_data[RING];
	size_t ring_pos;
	int exit_code;
};

/* ---- metrics from a file or a command ---- */

static int
set_health(struct metrics *m, const char *s)
{
	int h = cats_enum_index(cats_health_names, s, strlen(s));
	if (h < 0)
		return -1;
	m->health = h;
	return 0;
}

static int
merge_json(struct metrics *m, const char *text, size_t n, const char *where)
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
		{ "gas", offsetof(struct metrics, has_gas),
		    offsetof(struct metrics, gas) },
		{ "comp_time_ms", offsetof(struct metrics, has_ct),
		    offsetof(struct metrics, ct) },
		{ "price", offsetof(struct metrics, has_price),
		    offsetof(struct metrics, price) },
		{ "reputation", offsetof(struct metrics, has_rep),
		    offsetof(struct metrics, rep) },
		{ "security_level", offsetof(struct metrics, has_sec),
		    offsetof(struct metrics, sec) },
		{ "instances", offsetof(struct metrics, has_inst),
		    offsetof(struct metrics, inst) },
	};
	int rc = 0;
	for (size_t i = 0; i < CATS_ARRAY_LEN(nums); i++) {
		json_t *v = json_object_get(j, nums[i].k);
		if (v == NULL)
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			cats_warnx("%s: %s: expected a count", where, nums[i].k);
			rc = -1;
			continue;
		}
		*(bool *)((char *)m + nums[i].has) = true;
		*(uint64_t *)((char *)m + nums[i].val) =
		    (uint64_t)json_integer_value(v);
	}
	json_t *h = json_object_get(j, "health");
	if (h != NULL && (!json_is_string(h) || set_health(m,
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
			if (m->next == MAX_EXT || !json_is_integer(v) ||
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

/* Refresh the metrics from --metrics FILE or --exec COMMAND. */
static void
refresh(struct sci *s)
{
	char buf[65536];
	size_t n = 0;
	if (s->metrics_file != NULL) {
		FILE *f = fopen(s->metrics_file, "re");
		if (f == NULL) {
			cats_warnx("%s: %s", s->metrics_file, strerror(errno));
			return;
		}
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		merge_json(&s->m, buf, n, s->metrics_file);
	}
	if (s->exec != NULL) {
		FILE *p = popen(s->exec, "r");
		if (p == NULL) {
			cats_warnx("%s: %s", s->exec, strerror(errno));
			return;
		}
		n = fread(buf, 1, sizeof(buf), p);
		int st = pclose(p);
		if (st != 0)
			cats_warnx("%s: exit status %d", s->exec, st);
		else
			merge_json(&s->m, buf, n, s->exec);
	}
}

/* ---- reports ---- */

static int
make_report(struct sci *s, struct cats_buf *out)
{
	struct cats_rec r;
	struct cats_sci_report *p = &r.u.sci;
	refresh(s);
	cats_rec_init(&r, CATS_T_SCI_REPORT);
	p->csci_id = s->csci;
	p->cs_id = s->cs;
	p->seq = s->seq++;
	p->ts = s->fixed_ts ? s->ts : cats_clock_now();
	if (s->fixed_ts)
		s->ts += s->interval_ms;
	p->health = s->m.health;
	if (s->m.has_gas)
		CATS_SET(p, SCI, gas, s->m.gas);
	if (s->m.has_ct)
		CATS_SET(p, SCI, comp_time_ms, s->m.ct);
	if (s->m.has_price)
		CATS_SET(p, SCI, price, s->m.price);
	if (s->m.has_rep)
		CATS_SET(p, SCI, reputation, s->m.rep);
	if (s->m.has_sec)
		CATS_SET(p, SCI, security_level, s->m.sec);
	if (s->m.has_inst)
		CATS_SET(p, SCI, instances, s->m.inst);
	p->ext.v = s->m.ext;
	p->ext.n = s->m.next;
	CATS_SET(p, SCI, interval_ms, s->interval_ms);
	p->locator = s->locator;
	if (s->has_port)
		CATS_SET(p, SCI, port, s->port);
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
		return -1;
	}
	return cats_rec_encode(&r, out, true);
}

/* ---- once ---- */

static int
do_once(struct sci *s)
{
	uint64_t n = s->count ? s->count : 1;
	for (uint64_t i = 0; i < n; i++) {
		struct cats_buf b = { 0 };
		if (make_report(s, &b) < 0)
			return CATS_EXIT_DATAERR;
		if (s->json) {
			struct cats_dec d;
			struct cats_rec r;
			struct cats_err e;
			cats_dec_init(&d, NULL);
			if (cats_rec_decode(&d, b.p, b.len, &r, &e) == 0 &&
			    cats_rec_print_json(&r, stdout) < 0) {
				cats_dec_free(&d);
				return CATS_EXIT_IOERR;
			}
			cats_dec_free(&d);
		} else if (cats_write_all(1, b.p, b.len) < 0) {
			cats_errorx("stdout: %s", strerror(errno));
			return CATS_EXIT_IOERR;
		}
		cats_buf_free(&b);
	}
	if (s->json && fflush(stdout) != 0)
		return CATS_EXIT_IOERR;
	return CATS_EXIT_OK;
}

/* ---- push ---- */

static void
push_done(void *arg, const struct httpc_resp *r)
{
	struct sci *s = arg;
	s->done++;
	if (r->code != 0)
		cats_warnx("push: %s", r->error);
	else if (r->status != 200)
		cats_warnx("push: HTTP %ld: %.*s", r->status,
		    (int)(r->len > 200 ? 200 : r->len), (const char *)r->body);
	if (s->count && s->done >= s->count && s->listen == NULL)
		event_base_loopbreak(s->base);
}

static void
push_one(struct sci *s)
{
	struct cats_buf b = { 0 };
	if (make_report(s, &b) < 0) {
		s->exit_code = CATS_EXIT_DATAERR;
		event_base_loopbreak(s->base);
		return;
	}
	struct httpc_req_opts o = { .method = "POST", .url = s->to, .body = b.p,
		.len = b.len, .ctype = "application/cbor", .timeout_ms = 10000 };
	if (httpc_request(s->http, &o, push_done, s) == NULL)
		cats_warnx("push: cannot start a request");
	cats_buf_free(&b);
	s->sent++;
}

/* ---- serve ---- */

static void
remember(struct sci *s, uint64_t seq, const char *b64)
{
	free(s->ring_data[s->ring_pos]);
	snprintf(s->ring_id[s->ring_pos], sizeof(s->ring_id[0]), "%" PRIu64,
	    seq);
	s->ring_data[s->ring_pos] = strdup(b64);
	s->ring_pos = (s->ring_pos + 1) % RING;
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
	struct sci *s = arg;
	for (struct sub **pp = &s->subs; *pp; pp = &(*pp)->next) {
		if ((*pp)->c == c) {
			struct sub *d = *pp;
			*pp = d->next;
			free(d);
			return;
		}
	}
}

/* Send an event to every subscriber; one that lags is cut off. */
static void
broadcast(struct sci *s, const char *id, const char *data)
{
	for (struct sub **pp = &s->subs; *pp;) {
		struct sub *u = *pp;
		if (httpd_sse_send(u->c, "sci-report", id, data, 1u << 20) < 0) {
			httpd_sse_end(u->c);
			*pp = u->next;
			free(u);
			continue;
		}
		pp = &u->next;
	}
}

static void
serve_tick(struct sci *s)
{
	struct cats_buf b = { 0 };
	uint64_t seq = s->seq;
	if (make_report(s, &b) < 0) {
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
	struct sci *s = arg;
	struct cats_buf b = { 0 };
	if (make_report(s, &b) < 0) {
		httpd_error(req, 500, "cannot make a report");
		return;
	}
	httpd_reply(req, 200, "application/cbor", b.p, b.len);
	cats_buf_free(&b);
}

static void
on_events(struct evhttp_request *req, void *arg)
{
	struct sci *s = arg;
	const char *last = httpd_header(req, "Last-Event-ID");
	struct sub *u = calloc(1, sizeof(*u));
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
	httpd_sse_comment(u->c, "cats-sci event stream");
	/* Resume after Last-Event-ID with what the ring still holds. */
	if (last != NULL) {
		size_t at = RING;
		for (size_t i = 0; i < RING; i++)
			if (s->ring_data[i] && strcmp(s->ring_id[i], last) == 0)
				at = i;
		for (size_t k = 1; at < RING && k < RING; k++) {
			size_t i = (at + k) % RING;
			if (i == s->ring_pos || s->ring_data[i] == NULL)
				break;
			httpd_sse_send(u->c, "sci-report", s->ring_id[i],
			    s->ring_data[i], 0);
		}
	}
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct sci *s = arg;
	(void)fd;
	(void)what;
	if (s->to != NULL && (s->count == 0 || s->sent < s->count))
		push_one(s);
	if (s->listen != NULL) {
		serve_tick(s);
		for (struct sub *u = s->subs; u; u = u->next)
			httpd_sse_comment(u->c, "keepalive");
	}
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct sci *s = arg;
	(void)sig;
	(void)what;
	event_base_loopbreak(s->base);
}

static int
do_daemon(struct sci *s)
{
	char err[400];
	s->base = event_base_new();
	if (s->base == NULL)
		return CATS_EXIT_FAIL;
	if (s->to != NULL) {
		s->http = httpc_new(s->base);
		if (s->http == NULL) {
			cats_errorx("cannot start the HTTP client");
			return CATS_EXIT_FAIL;
		}
	}
	if (s->listen != NULL) {
		struct httpd_opts o = { .max_body = 4096, .timeout_ms = 10000 };
		s->httpd = httpd_new(s->base, s->listen, &o, err, sizeof(err));
		if (s->httpd == NULL) {
			cats_errorx("--listen: %s", err);
			return CATS_EXIT_FAIL;
		}
		httpd_route(s->httpd, "/report", HTTPD_GET, on_report, s);
		httpd_route(s->httpd, "/events", HTTPD_GET, on_events, s);
		/* Events start with a report, so a subscriber has one at once. */
		serve_tick(s);
	}
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	for (size_t i = 0; i < CATS_ARRAY_LEN(sigs); i++) {
		s->sigs[i] = evsignal_new(s->base, sigs[i], on_signal, s);
		evsignal_add(s->sigs[i], NULL);
	}
	s->timer = event_new(s->base, -1, EV_PERSIST, on_timer, s);
	struct timeval tv = { (time_t)(s->interval_ms / 1000),
		(suseconds_t)(s->interval_ms % 1000) * 1000 };
	evtimer_add(s->timer, &tv);
	if (s->to != NULL)
		push_one(s);
	event_base_dispatch(s->base);
	while (s->subs) {
		struct sub *u = s->subs;
		s->subs = u->next;
		httpd_sse_end(u->c);
		free(u);
	}
	httpd_free(s->httpd);
	httpc_free(s->http);
	for (size_t i = 0; i < RING; i++)
		free(s->ring_data[i]);
	return s->exit_code;
}

/* ---- options ---- */

static uint64_t
num(const char *opt, const char *v, uint64_t max)
{
	uint64_t x;
	char why[128];
	if (cats_parse_u64(v, 0, max, &x, why, sizeof(why)) < 0) {
		cats_errorx("%s: %s", opt, why);
		exit(CATS_EXIT_USAGE);
	}
	return x;
}

static void
read_token(struct sci *s, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cats_errorx("%s: %s", path, strerror(errno));
		exit(CATS_EXIT_NOINPUT);
	}
	uint8_t buf[4096];
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || n == (ssize_t)sizeof(buf)) {
		cats_errorx("%s: not a token", path);
		exit(CATS_EXIT_NOPERM);
	}
	size_t len = (size_t)n;
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		len--;
	/* base64url text (cats-key token -b), or raw CBOR. */
	if (len > 0 && strspn((const char *)buf, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789-_") >= len) {
		uint8_t bin[4096];
		long m = cats_b64url_decode((const char *)buf, len, bin,
		    sizeof(bin));
		if (m <= 0) {
			cats_errorx("%s: bad base64url", path);
			exit(CATS_EXIT_NOPERM);
		}
		cats_buf_add(&s->token, bin, (size_t)m);
	} else {
		cats_buf_add(&s->token, buf, (size_t)n);
	}
}

int
main(int argc, char **argv)
{
	enum { OPT_INSTANCES = 256, OPT_LOCATOR, OPT_PORT };
	static const struct option longopts[] = {
		{ "comp-time", required_argument, NULL, 'C' },
		{ "count", required_argument, NULL, 'n' },
		{ "cs-id", required_argument, NULL, 'c' },
		{ "csci-id", required_argument, NULL, 's' },
		{ "exec", required_argument, NULL, 'e' },
		{ "ext", required_argument, NULL, 'x' },
		{ "gas", required_argument, NULL, 'g' },
		{ "health", required_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ "instances", required_argument, NULL, OPT_INSTANCES },
		{ "interval", required_argument, NULL, 'I' },
		{ "json", no_argument, NULL, 'j' },
		{ "key", required_argument, NULL, 'k' },
		{ "listen", required_argument, NULL, 'l' },
		{ "locator", required_argument, NULL, OPT_LOCATOR },
		{ "metrics", required_argument, NULL, 'm' },
		{ "once", no_argument, NULL, '1' },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "price", required_argument, NULL, 'p' },
		{ "reputation", required_argument, NULL, 'R' },
		{ "security-level", required_argument, NULL, 'L' },
		{ "seq", required_argument, NULL, 'q' },
		{ "to", required_argument, NULL, 't' },
		{ "token", required_argument, NULL, 'K' },
		{ "ts", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	static struct sci s;
	char err[400];
	bool have_seq = false;
	int ch, verbosity = 1;

	cats_tool_init(argv[0]);
	s.m.health = CATS_HEALTHY;
	s.interval_ms = 10000;
	while ((ch = getopt_long(argc, argv, "1C:c:e:g:H:hI:jK:k:L:l:m:n:p:q:"
	    "R:s:T:t:Vvx:", longopts, NULL)) != -1) {
		switch (ch) {
		case '1':
			s.once = true;
			break;
		case 'C':
			s.m.has_ct = true;
			s.m.ct = num("--comp-time", optarg, CATS_U32);
			break;
		case 'c':
			s.cs = optarg;
			break;
		case 'e':
			s.exec = optarg;
			break;
		case 'g':
			s.m.has_gas = true;
			s.m.gas = num("--gas", optarg, CATS_U32);
			break;
		case 'H':
			if (set_health(&s.m, optarg) < 0) {
				cats_errorx("--health: expected HEALTHY, "
				    "DEGRADED, UNHEALTHY or UNKNOWN");
				return CATS_EXIT_USAGE;
			}
			break;
		case 'h':
			fputs(usage_text, stdout);
			return CATS_EXIT_OK;
		case 'I':
			if (cats_parse_ms(optarg, &s.interval_ms, err,
			    sizeof(err)) < 0 || s.interval_ms == 0 ||
			    s.interval_ms > CATS_U32) {
				cats_errorx("--interval: %s", err);
				return CATS_EXIT_USAGE;
			}
			break;
		case 'j':
			s.json = true;
			break;
		case 'K':
			read_token(&s, optarg);
			break;
		case 'k':
			if (cats_key_load(&s.key, optarg,
			    CATS_KEY_ED25519_SECRET, err, sizeof(err)) < 0) {
				cats_errorx("%s", err);
				return CATS_EXIT_NOPERM;
			}
			s.have_key = true;
			break;
		case 'L':
			s.m.has_sec = true;
			s.m.sec = num("--security-level", optarg, 255);
			break;
		case 'l':
			s.listen = optarg;
			break;
		case 'm':
			s.metrics_file = optarg;
			break;
		case 'n':
			s.count = num("--count", optarg, CATS_U53);
			break;
		case 'p':
			s.m.has_price = true;
			s.m.price = num("--price", optarg, CATS_U32);
			break;
		case 'q':
			have_seq = true;
			s.seq = num("--seq", optarg, CATS_U53);
			break;
		case 'R':
			s.m.has_rep = true;
			s.m.rep = num("--reputation", optarg, 255);
			break;
		case 's':
			s.csci = optarg;
			break;
		case 'T':
			s.fixed_ts = true;
			s.ts = num("--ts", optarg, CATS_U53);
			break;
		case 't':
			s.to = optarg;
			break;
		case 'V':
			cats_tool_version();
			return CATS_EXIT_OK;
		case 'v':
			verbosity++;
			break;
		case 'x': {
			char *eq = strchr(optarg, '=');
			if (eq == NULL || eq == optarg || s.m.next == MAX_EXT ||
			    (size_t)(eq - optarg) > CATS_ID) {
				cats_errorx("--ext: expected NAME=VALUE (at most "
				    "%d)", MAX_EXT);
				return CATS_EXIT_USAGE;
			}
			size_t i = s.m.next++;
			memcpy(s.m.extname[i], optarg, (size_t)(eq - optarg));
			s.m.extname[i][eq - optarg] = '\0';
			s.m.ext[i].k = s.m.extname[i];
			s.m.ext[i].v = num("--ext", eq + 1, CATS_U53);
			break;
		}
		case OPT_INSTANCES:
			s.m.has_inst = true;
			s.m.inst = num("--instances", optarg, CATS_U32);
			break;
		case OPT_LOCATOR:
			if (cats_ip_parse(optarg, strlen(optarg), &s.locator) < 0) {
				cats_errorx("--locator: not an IP address");
				return CATS_EXIT_USAGE;
			}
			break;
		case OPT_PORT:
			s.has_port = true;
			s.port = num("--port", optarg, 65535);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || s.csci == NULL || s.cs == NULL)
		usage();
	if (strlen(s.csci) == 0 || strlen(s.csci) > CATS_ID ||
	    strlen(s.cs) == 0 || strlen(s.cs) > CATS_ID) {
		cats_errorx("CSCI-ID and CS-ID are 1 to %d bytes", CATS_ID);
		return CATS_EXIT_USAGE;
	}
	cats_log_verbosity(verbosity);
	if (!have_seq)
		s.seq = s.fixed_ts ? 1 : cats_clock_now();
	if (s.once || (s.to == NULL && s.listen == NULL))
		return do_once(&s);
	return do_daemon(&s);
}
