/*
 * cps.c - the C-PS as one supervised service: the stages as processes on
 * socketpairs, their records relayed, restarts, the end of the input passed
 * along the chain, one stats record (cps.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/stats.h"
#include "cps/cps.h"
#include "net/ep.h"
#include "net/httpd.h"
#include "net/tls.h"
#include "rec/seq.h"

const char *const cps_stage_names[CPS_NSTAGE] = { "select", "pce", "bind" };
const char *const cps_tls_keys[CPS_NTLS] = { "tls-cert", "tls-key", "tls-ca",
	"tls-crl" };
/* Their option codes (net/tls.h), in the same order. */
static const int tls_codes[CPS_NTLS] = { CATS_TLS_OPT_CERT, CATS_TLS_OPT_KEY,
	CATS_TLS_OPT_CA, CATS_TLS_OPT_CRL };

#define PENDING_MAX (16u << 20)	/* bytes waiting for a stage that is down */
#define BACKOFF_MIN 100		/* ms */
#define BACKOFF_MAX 10000
#define HEALTHY_MS 5000		/* a stage that ran this long restarts at once */
#define KILL_MS 5000		/* SIGTERM, then SIGKILL */

static uint64_t
mono_ms(void)
{
	return cats_clock_mono_ns() / 1000000;
}

/* ---- configuration ---- */

void
cps_conf_init(struct cps_conf *c)
{
	memset(c, 0, sizeof(*c));
	c->id = "cps";
}

static int
stage_of(const char *section)
{
	for (int i = 0; i < CPS_NSTAGE; i++)
		if (strcmp(section, cps_stage_names[i]) == 0)
			return i;
	return -1;
}

bool
cps_conf_etcd(const struct cps_conf *c)
{
	for (size_t k = 0; k < c->nargs[CPS_BIND]; k++)
		if (strncmp(c->args[CPS_BIND][k], "--etcd=", 7) == 0)
			return true;
	return false;
}

static int
add_arg(struct cps_conf *c, int st, char *s)
{
	char **v = realloc(c->args[st], (c->nargs[st] + 1) * sizeof(*v));
	if (v == NULL) {
		free(s);
		return -1;
	}
	c->args[st] = v;
	v[c->nargs[st]++] = s;
	return 0;
}

/*
 * A stage's entry KEY = VALUE as its option: "--KEY=VALUE", "--KEY" when
 * the value is empty, "-K VALUE" for a one-letter key.
 */
static int
stage_option(struct cps_conf *c, int st, const char *key, const char *val)
{
	char *s;
	if (strlen(key) == 1) {
		if (asprintf(&s, "-%s", key) < 0 || add_arg(c, st, s) < 0)
			return -1;
		if (*val == '\0')
			return 0;
		if ((s = strdup(val)) == NULL)
			return -1;
		return add_arg(c, st, s);
	}
	if ((*val == '\0' ? asprintf(&s, "--%s", key) :
	    asprintf(&s, "--%s=%s", key, val)) < 0)
		return -1;
	return add_arg(c, st, s);
}

int
cps_conf_set(struct cps_conf *c, const char *key, const char *val, char *err,
    size_t errlen)
{
	if (strcmp(key, "id") == 0) {
		if (*val == '\0' || strlen(val) > CATS_ID) {
			snprintf(err, errlen, "1 to %d characters", CATS_ID);
			return -1;
		}
		c->id = val;
	} else if (strcmp(key, "bin") == 0) {
		c->bin = val;
	} else if (strcmp(key, "to") == 0 || strcmp(key, "stats-to") == 0 ||
	    strcmp(key, "tap") == 0) {
		struct cats_ep ep;
		if (cats_ep_parse(val, &ep, err, errlen) < 0)
			return -1;
		if (ep.kind == CATS_EP_HTTP || ep.kind == CATS_EP_HTTPS) {
			snprintf(err, errlen, "a stream endpoint, not http");
			return -1;
		}
		if (strcmp(key, "to") == 0)
			c->to = val;
		else if (strcmp(key, "tap") == 0)
			c->tap = val;
		else
			c->stats_to = val;
	} else if (strcmp(key, "textfile") == 0) {
		c->textfile = val;
	} else if (strcmp(key, "user") == 0) {
		if (*val == '\0') {
			snprintf(err, errlen, "a user name");
			return -1;
		}
		c->user = val;
	} else if (strcmp(key, "prometheus") == 0) {
		c->prometheus = val;
	} else if (strcmp(key, "stats-interval") == 0) {
		if (cats_parse_ms(val, &c->stats_ms, err, errlen) < 0)
			return -1;
	} else {
		for (int i = 0; i < CPS_NTLS; i++) {
			if (strcmp(key, cps_tls_keys[i]) != 0)
				continue;
			if (*val == '\0') {
				snprintf(err, errlen, "a file name");
				return -1;
			}
			c->tls[i] = val;
			return 0;
		}
		snprintf(err, errlen, "unknown key");
		return -1;
	}
	return 0;
}

static int
conf_apply(struct cps_conf *c, char *err, size_t errlen)
{
	for (size_t i = 0; i < c->cf.n; i++) {
		const struct cats_conf_ent *e = &c->cf.v[i];
		char why[256];
		if (e->section[0] == '\0') {
			if (cps_conf_set(c, e->key, e->val, why,
			    sizeof(why)) < 0) {
				cats_conf_errf(&c->cf, e, err, errlen, "%s", why);
				return -1;
			}
			continue;
		}
		int st = stage_of(e->section);
		if (st < 0 || e->arg[0] != '\0') {
			cats_conf_errf(&c->cf, e, err, errlen,
			    "unknown section [%s%s%s%s] (select, pce, bind)",
			    e->section, e->arg[0] ? " \"" : "", e->arg,
			    e->arg[0] ? "\"" : "");
			return -1;
		}
		if (stage_option(c, st, e->key, e->val) < 0) {
			snprintf(err, errlen, "%s: out of memory", c->cf.path);
			return -1;
		}
	}
	return 0;
}

int
cps_conf_parse(struct cps_conf *c, const char *name, const char *text,
    size_t len, char *err, size_t errlen)
{
	if (cats_conf_parse(&c->cf, name, text, len, err, errlen) < 0)
		return -1;
	return conf_apply(c, err, errlen);
}

int
cps_conf_load(struct cps_conf *c, const char *path)
{
	char err[512];
	if (cats_conf_load(&c->cf, path, err, sizeof(err)) < 0 ||
	    conf_apply(c, err, sizeof(err)) < 0) {
		cats_errorx("%s", err);
		return CATS_EXIT_CONFIG;
	}
	return CATS_EXIT_OK;
}

int
cps_conf_finish(struct cps_conf *c)
{
	bool tls = false;
	if (c->user != NULL) {
		struct passwd *pw = getpwnam(c->user);
		if (pw == NULL) {
			cats_errorx("user %s: no such user", c->user);
			return CATS_EXIT_CONFIG;
		}
		c->uid = pw->pw_uid;
		c->gid = pw->pw_gid;
		if (geteuid() != 0 && geteuid() != c->uid) {
			cats_errorx("user %s: the stages can change user only "
			    "when cats-cps runs as root", c->user);
			return CATS_EXIT_CONFIG;
		}
	}
	for (int i = 0; i < CPS_NTLS; i++)
		if (c->tls[i] != NULL) {
			cats_tls_opt(tls_codes[i], c->tls[i]);
			tls = true;
		}
	int rc;
	if (tls && (rc = cats_tls_setup()) != 0)
		return rc;
	if (c->bin != NULL)
		return CATS_EXIT_OK;
	ssize_t n = readlink("/proc/self/exe", c->binbuf,
	    sizeof(c->binbuf) - 1);
	if (n <= 0) {
		cats_errorx("cannot find the stages: /proc/self/exe: %s; "
		    "set bin", strerror(errno));
		return CATS_EXIT_CONFIG;
	}
	c->binbuf[n] = '\0';
	char *slash = strrchr(c->binbuf, '/');
	if (slash != NULL)
		*slash = '\0';
	c->bin = c->binbuf;
	return CATS_EXIT_OK;
}

void
cps_conf_free(struct cps_conf *c)
{
	for (int i = 0; i < CPS_NSTAGE; i++) {
		for (size_t k = 0; k < c->nargs[i]; k++)
			free(c->args[i][k]);
		free(c->args[i]);
	}
	cats_conf_free(&c->cf);
}

/* ---- routing ---- */

static void stage_start(struct cps_stage *s);
static void stage_shut(struct cps_stage *s);
static void maybe_exit(struct cps *p);

/* The source whose output feeds a destination (for back-pressure): the
 * service's input feeds select, select feeds pce, pce feeds bind.  Bind's
 * path requests to pce are never held back: that is the loop's cycle. */
static struct cats_stream *
feeder(struct cps *p, int dst)
{
	switch (dst) {
	case CPS_SELECT: return p->in;
	case CPS_PCE: return p->st[CPS_SELECT].s;
	case CPS_BIND: return p->st[CPS_PCE].s;
	default: return p->st[CPS_BIND].s;	/* the service's output */
	}
}

static void
to_stage(struct cps *p, int dst, const uint8_t *b, size_t n)
{
	struct cps_stage *d = &p->st[dst];
	if (d->s == NULL) {
		if (d->pending.len + n > PENDING_MAX ||
		    cats_buf_add(&d->pending, b, n) < 0)
			d->lost++;
		return;
	}
	d->items_out++;
	int r = cats_stream_send(d->s, b, n);
	if (r < 0) {
		d->lost++;
	} else if (r > 0 && !d->congested) {
		d->congested = true;
		struct cats_stream *f = feeder(p, dst);
		if (f != NULL)
			cats_stream_pause(f);
	}
}

static void
to_output(struct cps *p, const uint8_t *b, size_t n)
{
	if (p->out == NULL) {
		p->out_lost++;
		return;
	}
	p->out_items++;
	int r = cats_stream_send(p->out, b, n);
	if (r < 0)
		p->out_lost++;
	else if (r > 0 && p->st[CPS_BIND].s != NULL)
		cats_stream_pause(p->st[CPS_BIND].s);
}

/* A stage's stats record: its counters kept as "STAGE.NAME".  The one
 * kind of record the parent decodes: it is for the parent alone. */
static void
keep_stats(struct cps_stage *s, const uint8_t *b, size_t n)
{
	struct cats_rec r;
	struct cats_err e;
	if (cats_rec_decode(&s->dec, b, n, &r, &e) < 0 ||
	    r.type != CATS_T_STATS) {
		s->bad++;
		return;
	}
	const struct cats_arr_kv *c = &r.u.stats.counters;
	const char *name = cps_stage_names[s->which];
	size_t bytes = 0;
	for (size_t i = 0; i < c->n; i++)
		bytes += strlen(name) + 1 + strlen(c->v[i].k) + 1;
	char *names = malloc(bytes ? bytes : 1);
	struct cats_kv *kv = calloc(c->n ? c->n : 1, sizeof(*kv));
	unsigned char *kind = malloc(c->n ? c->n : 1);
	if (names == NULL || kv == NULL || kind == NULL) {
		free(names);
		free(kv);
		free(kind);
		return;
	}
	char *q = names;
	for (size_t i = 0; i < c->n; i++) {
		int w = sprintf(q, "%s.%s", name, c->v[i].k);
		kv[i].k = q;
		kv[i].v = c->v[i].v;
		kind[i] = (unsigned char)cats_stats_rec_kind(&r.u.stats, i);
		q += w + 1;
	}
	free(s->names);
	free(s->kv);
	free(s->kind);
	s->names = names;
	s->kv = kv;
	s->kind = kind;
	s->nkv = c->n;
	s->p->stats_records++;
}

static void
on_stage_item(struct cats_stream *str, const uint8_t *b, size_t n,
    uint64_t index, const struct cats_peer *peer, void *arg)
{
	struct cps_stage *s = arg;
	struct cps *p = s->p;
	(void)str;
	(void)index;
	(void)peer;
	s->items_in++;
	/* Framed, not scanned: the type routes it; the stage it goes to
	 * decodes it, once. */
	int type = cats_stream_item_type(str);
	if (type == CATS_T_STATS) {
		keep_stats(s, b, n);
		return;
	}
	switch (s->which) {
	case CPS_SELECT:
		/* On etcd the binding stage replicates each request admitted
		 * as it leaves the selection, so that a new owner completes
		 * it (cats-bind(1), REDUNDANCY): a copy, ahead of the PCE's
		 * reply. */
		if (p->etcd && type == CATS_T_PATH_REQ) {
			p->routed_pending++;
			to_stage(p, CPS_BIND, b, n);
		}
		to_stage(p, CPS_PCE, b, n);
		break;
	case CPS_PCE:
		if (p->tap != NULL)
			cats_stream_send(p->tap, b, n);
		to_stage(p, CPS_BIND, b, n);
		break;
	default:
		if (type == CATS_T_PATH_REQ) {
			p->routed_repairs++;
			to_stage(p, CPS_PCE, b, n);
		} else {
			to_output(p, b, n);
		}
	}
}

static void
on_stage_bad(struct cats_stream *str, uint64_t index,
    const struct cats_err *err, void *arg)
{
	struct cps_stage *s = arg;
	char msg[300];
	(void)str;
	s->bad++;
	cats_warnx("stage %s: output %s", cps_stage_names[s->which],
	    cats_err_fmt(err, index, msg, sizeof(msg)));
}

static void
stage_fin_cb(evutil_socket_t fd, short what, void *arg);

static void
on_stage_eof(struct cats_stream *str, int error, void *arg)
{
	struct cps_stage *s = arg;
	(void)error;
	cats_stream_pause(str);
	s->closed = true;
	/* Freed outside its own callback, once the process is reaped too. */
	struct timeval tv = { 0, 0 };
	event_base_once(s->p->base, -1, EV_TIMEOUT, stage_fin_cb, s, &tv);
}

static void
on_stage_drained(struct cats_stream *str, void *arg)
{
	struct cps_stage *s = arg;
	struct cps *p = s->p;
	(void)str;
	if (!s->congested)
		return;
	s->congested = false;
	struct cats_stream *f = feeder(p, s->which);
	if (f != NULL)
		cats_stream_resume(f);
}

static const struct cats_stream_cbs stage_cbs = {
	.item = on_stage_item,
	.bad = on_stage_bad,
	.eof = on_stage_eof,
	.drained = on_stage_drained,
};

/* ---- the service's input and output ---- */

static void
on_in_item(struct cats_stream *str, const uint8_t *b, size_t n,
    uint64_t index, const struct cats_peer *peer, void *arg)
{
	struct cps *p = arg;
	(void)str;
	(void)index;
	(void)peer;
	p->in_items++;
	to_stage(p, CPS_SELECT, b, n);
}

static void
on_in_bad(struct cats_stream *str, uint64_t index, const struct cats_err *err,
    void *arg)
{
	struct cps *p = arg;
	char msg[300];
	(void)str;
	p->in_bad++;
	cats_warnx("input %s", cats_err_fmt(err, index, msg, sizeof(msg)));
}

static void
on_in_eof(struct cats_stream *str, int error, void *arg)
{
	struct cps *p = arg;
	if (error != 0)
		cats_warnx("input: %s", strerror(error));
	cats_stream_pause(str);
	p->in_eof = true;
	p->st[CPS_SELECT].eof = true;
	stage_shut(&p->st[CPS_SELECT]);
}

static void
on_out_drained(struct cats_stream *str, void *arg)
{
	struct cps *p = arg;
	(void)str;
	if (p->st[CPS_BIND].s != NULL)
		cats_stream_resume(p->st[CPS_BIND].s);
}

static void
on_out_eof(struct cats_stream *str, int error, void *arg)
{
	(void)str;
	(void)arg;
	if (error != 0)
		cats_warnx("output: %s", strerror(error));
}

static const struct cats_stream_cbs in_cbs = {
	.item = on_in_item, .bad = on_in_bad, .eof = on_in_eof,
};
static const struct cats_stream_cbs out_cbs = {
	.eof = on_out_eof, .drained = on_out_drained,
};

/* ---- stages ---- */

/* Shut a stage's input once what was queued for it is written. */
static void
stage_shut(struct cps_stage *s)
{
	if (!s->eof || s->shut || s->s == NULL || s->pending.len > 0)
		return;
	if (cats_stream_queued(s->s) > 0 || cats_stream_batched(s->s) > 0)
		return;	/* the tick looks again */
	shutdown(s->fd, SHUT_WR);
	s->shut = true;
}

static void
on_restart(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	stage_start(arg);
}

static const char *
cause(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
		    strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "ended (status %#x)", status);
	return buf;
}

/* A code that a restart will not change: usage, configuration, keys, a
 * missing file, a tool that cannot be run. */
static bool
fatal_code(int code)
{
	return code == CATS_EXIT_USAGE || code == CATS_EXIT_NOINPUT ||
	    code == CATS_EXIT_NOPERM || code == CATS_EXIT_CONFIG ||
	    code == 126 || code == 127;
}

/* Of a stage's output, the items that came bare (walked) so far. */
static uint64_t
stream_walked(const struct cats_stream *str)
{
	struct cats_stream_stats st;
	if (str == NULL)
		return 0;
	cats_stream_stats(str, &st);
	return st.walked;
}

/* The process reaped and its output read to the end: restart, or done. */
static void
stage_finish(struct cps_stage *s)
{
	struct cps *p = s->p;
	if (s->pid != 0 || s->s == NULL || !s->closed)
		return;
	s->walked += stream_walked(s->s);
	cats_stream_free(s->s);
	s->s = NULL;
	close(s->fd);
	s->fd = -1;
	s->congested = false;
	struct cats_stream *f = feeder(p, s->which);
	if (f != NULL && !(s->which == CPS_SELECT && p->in_eof))
		cats_stream_resume(f);
	const char *name = cps_stage_names[s->which];
	if (p->stopping || !p->active) {
		s->done = p->stopping;
		maybe_exit(p);
		return;
	}
	if (s->eof) {
		/* Its input ended: a filter stage is done; pass the end on. */
		s->done = true;
		if (s->last_exit != 0 && p->rc == 0)
			p->rc = s->last_exit;
		if (s->which + 1 < CPS_NSTAGE) {
			struct cps_stage *n = &p->st[s->which + 1];
			n->eof = true;
			stage_shut(n);
		}
		maybe_exit(p);
		return;
	}
	uint64_t ran = mono_ms() - s->started_ms;
	if (s->starts == 1 && ran < 1000 && fatal_code(s->last_exit)) {
		cats_errorx("stage %s refused to start (exit %d): stopping",
		    name, s->last_exit);
		p->fatal++;
		cps_stop(p, s->last_exit >= 126 ? CATS_EXIT_FAIL : s->last_exit);
		return;
	}
	if (ran >= HEALTHY_MS)
		s->backoff_ms = 0;
	else if (s->backoff_ms == 0)
		s->backoff_ms = BACKOFF_MIN;
	else if ((s->backoff_ms *= 2) > BACKOFF_MAX)
		s->backoff_ms = BACKOFF_MAX;
	s->restarts++;
	cats_info("stage %s: restart %llu in %llu ms", name,
	    (unsigned long long)s->restarts, (unsigned long long)s->backoff_ms);
	struct timeval tv = { (time_t)(s->backoff_ms / 1000),
		(suseconds_t)(s->backoff_ms % 1000) * 1000 };
	event_add(s->timer, &tv);
}

static void
stage_fin_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	stage_finish(arg);
}

static void
stage_start(struct cps_stage *s)
{
	struct cps *p = s->p;
	const char *name = cps_stage_names[s->which];
	int sv[2];
	if (s->pid != 0 || s->s != NULL || p->stopping || !p->active)
		return;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		cats_errorx("stage %s: socketpair: %s", name, strerror(errno));
		goto retry;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		cats_errorx("stage %s: fork: %s", name, strerror(errno));
		close(sv[0]);
		close(sv[1]);
		goto retry;
	}
	if (pid == 0) {
		/* The child: the socket on stdin and stdout; it ends with us. */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		if (dup2(sv[1], 0) < 0 || dup2(sv[1], 1) < 0)
			_exit(126);
		/* Its listeners, held by us (hold_listeners()). */
		for (size_t k = 0; k < s->nls; k++)
			if (s->ls[k].fd >= 0)
				fcntl(s->ls[k].fd, F_SETFD, 0);
		if (s->lenv != NULL)
			setenv(CATS_LISTEN_FDS, s->lenv, 1);
		else
			unsetenv(CATS_LISTEN_FDS);
		/* Its records come wrapped: framed here by one head. */
		setenv(CATS_WRAP_FD, "1", 1);
		/* Privilege separation: the sockets are open (held above);
		 * the stage runs as user, with no way to gain privileges. */
		if (p->c->user != NULL && geteuid() == 0 &&
		    (setgroups(1, &p->c->gid) < 0 || setgid(p->c->gid) < 0 ||
		    setuid(p->c->uid) < 0 || setuid(0) == 0)) {
			fprintf(stderr, "cats-cps: stage %s: cannot become "
			    "%s\n", name, p->c->user);
			_exit(126);
		}
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(126);
		execv(s->argv[0], s->argv);
		fprintf(stderr, "cats-cps: %s: %s\n", s->argv[0],
		    strerror(errno));
		_exit(127);
	}
	close(sv[1]);
	s->fd = sv[0];
	cats_fd_nonblock(s->fd);
	s->s = cats_stream_new(p->base, s->fd, s->fd, false,
	    &cats_limits_default, 0, &stage_cbs, s);
	if (s->s == NULL) {
		cats_errorx("stage %s: out of memory", name);
		kill(pid, SIGKILL);
		s->pid = pid;
		return;
	}
	cats_stream_frame(s->s);
	cats_stream_batch(s->s, 0);
	s->pid = pid;
	s->starts++;
	s->shut = false;
	s->closed = false;
	s->started_ms = mono_ms();
	cats_info("stage %s started (pid %d)", name, (int)pid);
	if (s->pending.len > 0) {
		/* What came while it was down, whole items in order. */
		struct cats_buf b = s->pending;
		memset(&s->pending, 0, sizeof(s->pending));
		if (cats_stream_send(s->s, b.p, b.len) > 0 && !s->congested) {
			s->congested = true;
			struct cats_stream *f = feeder(p, s->which);
			if (f != NULL)
				cats_stream_pause(f);
		}
		cats_buf_free(&b);
	}
	/* Back-pressure as it stands. */
	if (s->which == CPS_BIND && p->out != NULL &&
	    cats_stream_queued(p->out) > (1u << 20))
		cats_stream_pause(s->s);
	stage_shut(s);
	return;
retry:
	s->backoff_ms = s->backoff_ms ? s->backoff_ms : BACKOFF_MIN;
	struct timeval tv = { (time_t)(s->backoff_ms / 1000),
		(suseconds_t)(s->backoff_ms % 1000) * 1000 };
	event_add(s->timer, &tv);
}

void
cps_reap(struct cps *p)
{
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int i = 0; i < CPS_NSTAGE; i++) {
			struct cps_stage *s = &p->st[i];
			if (s->pid != pid)
				continue;
			char why[96];
			s->pid = 0;
			if (s->s != NULL)	/* read what it wrote, to its end */
				cats_stream_resume(s->s);
			s->last_exit = WIFEXITED(status) ? WEXITSTATUS(status) :
			    WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
			if (p->stopping || s->eof)
				cats_info("stage %s (pid %d) %s",
				    cps_stage_names[i], (int)pid,
				    cause(status, why, sizeof(why)));
			else
				cats_warnx("stage %s (pid %d) %s",
				    cps_stage_names[i], (int)pid,
				    cause(status, why, sizeof(why)));
			stage_finish(s);
		}
	}
}

/* ---- stop, stats, the tick ---- */

static bool
any_running(const struct cps *p)
{
	for (int i = 0; i < CPS_NSTAGE; i++)
		if (p->st[i].pid != 0 || p->st[i].s != NULL)
			return true;
	return false;
}

static void
maybe_exit(struct cps *p)
{
	if (any_running(p))
		return;
	bool all_done = true;
	for (int i = 0; i < CPS_NSTAGE; i++)
		all_done = all_done && p->st[i].done;
	if (p->stopping || all_done) {
		if (p->kill_ev != NULL)
			event_del(p->kill_ev);
		event_base_loopexit(p->base, NULL);
	}
}

static void
on_kill(evutil_socket_t fd, short what, void *arg)
{
	struct cps *p = arg;
	(void)fd;
	(void)what;
	for (int i = 0; i < CPS_NSTAGE; i++)
		if (p->st[i].pid != 0) {
			cats_warnx("stage %s did not stop in %d s: SIGKILL",
			    cps_stage_names[i], KILL_MS / 1000);
			kill(p->st[i].pid, SIGKILL);
		}
}

static void
stop_stages(struct cps *p)
{
	for (int i = 0; i < CPS_NSTAGE; i++) {
		struct cps_stage *s = &p->st[i];
		event_del(s->timer);
		if (s->pid != 0)
			kill(s->pid, SIGTERM);
	}
	struct timeval tv = { KILL_MS / 1000, 0 };
	event_add(p->kill_ev, &tv);
}

void
cps_stop(struct cps *p, int rc)
{
	if (p->rc == 0)
		p->rc = rc;
	if (p->stopping)
		return;
	p->stopping = true;
	stop_stages(p);
	maybe_exit(p);
}

/*
 * The stages' listen endpoints opened here and kept open while the
 * service is active: a stage takes its own (cats_ep_listen() finds it in
 * CATS_LISTEN_FDS), and while it restarts connections wait in the backlog
 * instead of being refused.  One the parent cannot open is left to the
 * stage (which says why when it cannot either).
 */
static void
hold_listeners(struct cps *p)
{
	for (int i = 0; i < CPS_NSTAGE; i++) {
		struct cps_stage *s = &p->st[i];
		struct cats_buf env = { 0 };
		for (size_t k = 0; k < s->nls; k++) {
			struct cps_listen *l = &s->ls[k];
			struct cats_ep ep;
			char err[512];
			if (l->fd < 0 && cats_ep_parse(l->name, &ep, err,
			    sizeof(err)) == 0 &&
			    (l->fd = cats_ep_bind(&ep, err, sizeof(err))) < 0)
				cats_warnx("stage %s: %s: not held across its "
				    "restarts: %s", cps_stage_names[i],
				    l->name, err);
			struct stat sb;
			if (l->fd >= 0 && l->path != NULL &&
			    stat(l->path, &sb) == 0)
				l->ino = (unsigned long)sb.st_ino;
			char line[400];
			if (l->fd >= 0)
				cats_buf_add(&env, line, (size_t)snprintf(line,
				    sizeof(line), "%s%d=%s", env.len ? "\n" : "",
				    l->fd, l->name));
		}
		free(s->lenv);
		s->lenv = NULL;
		if (env.len > 0 && cats_buf_add(&env, "", 1) == 0)
			s->lenv = strdup((const char *)env.p);
		cats_buf_free(&env);
	}
}

/* Closed (when standby or at the end): connects are refused again, and
 * a unix socket file that is still ours is removed. */
static void
release_listeners(struct cps *p)
{
	for (int i = 0; i < CPS_NSTAGE; i++) {
		struct cps_stage *s = &p->st[i];
		for (size_t k = 0; k < s->nls; k++) {
			struct cps_listen *l = &s->ls[k];
			struct stat sb;
			if (l->fd < 0)
				continue;
			close(l->fd);
			l->fd = -1;
			if (l->path != NULL && stat(l->path, &sb) == 0 &&
			    S_ISSOCK(sb.st_mode) &&
			    (unsigned long)sb.st_ino == l->ino)
				unlink(l->path);
		}
		free(s->lenv);
		s->lenv = NULL;
	}
}

int
cps_set_active(struct cps *p, bool active)
{
	if (p->stopping)
		return 0;
	p->active = active;
	if (!active) {
		stop_stages(p);
		release_listeners(p);
		return 0;
	}
	event_del(p->kill_ev);
	hold_listeners(p);
	int rc = 0;
	for (int i = 0; i < CPS_NSTAGE; i++) {
		struct cps_stage *s = &p->st[i];
		s->backoff_ms = 0;
		stage_start(s);
		if (s->pid == 0)
			rc = -1;
	}
	return rc;
}

/* The service's own counters (cps_stats_fill()). */
static void
own_stats(struct cps *p, struct cats_stats_list *st)
{
	cats_stats_init(st, "cats-cps", p->c->id);
	cats_stats_gauge(st, "active", p->active);
	cats_stats_add(st, "in.records", p->in_items);
	cats_stats_add(st, "in.bad", p->in_bad);
	cats_stats_add(st, "out.records", p->out_items);
	cats_stats_add(st, "out.lost", p->out_lost);
	cats_stats_add(st, "repairs.routed", p->routed_repairs);
	cats_stats_add(st, "pending.routed", p->routed_pending);
	static const char *const k[CPS_NSTAGE][9] = {
		{ "select.running", "select.starts", "select.restarts",
		  "select.records", "select.lost", "select.bad",
		  "select.last_exit", "select.waiting_bytes",
		  "select.records_walked" },
		{ "pce.running", "pce.starts", "pce.restarts", "pce.records",
		  "pce.lost", "pce.bad", "pce.last_exit", "pce.waiting_bytes",
		  "pce.records_walked" },
		{ "bind.running", "bind.starts", "bind.restarts",
		  "bind.records", "bind.lost", "bind.bad", "bind.last_exit",
		  "bind.waiting_bytes", "bind.records_walked" },
	};
	for (int i = 0; i < CPS_NSTAGE; i++) {
		const struct cps_stage *s = &p->st[i];
		cats_stats_gauge(st, k[i][0], s->pid != 0);
		cats_stats_add(st, k[i][1], s->starts);
		cats_stats_add(st, k[i][2], s->restarts);
		cats_stats_add(st, k[i][3], s->items_in);
		cats_stats_add(st, k[i][4], s->lost);
		cats_stats_add(st, k[i][5], s->bad);
		cats_stats_gauge(st, k[i][6], (uint64_t)s->last_exit);
		/* What waits for it while it is down, or queued on its
		 * socket: the parent's buffer. */
		cats_stats_gauge(st, k[i][7], s->pending.len +
		    (s->s != NULL ? cats_stream_queued(s->s) : 0));
		/* Of its records, those framed by a walk: 0 while it wraps
		 * them as it should (seq.h CATS_WRAP_FD). */
		cats_stats_add(st, k[i][8], s->walked + stream_walked(s->s));
	}
}

void
cps_stats_fill(void *arg, struct cats_stats_list *st)
{
	struct cps *p = arg;
	own_stats(p, st);
	/* The stages' last records, typed as they said. */
	for (int i = 0; i < CPS_NSTAGE; i++)
		for (size_t j = 0; j < p->st[i].nkv; j++)
			cats_stats_put(st, p->st[i].kv[j].k, p->st[i].kv[j].v,
			    (enum cats_stat_kind)p->st[i].kind[j]);
}

void
cps_stats(struct cps *p)
{
	struct cats_stats_list st;
	char err[512];
	/* The one list of /metrics too: the textfile is the same text. */
	cps_stats_fill(p, &st);
	if (p->stats != NULL)
		cats_stats_emit(&st, p->stats, cats_clock_now());
	if (p->c->textfile != NULL &&
	    cats_stats_textfile(&st, p->c->textfile, err, sizeof(err)) < 0)
		cats_warnx("textfile: %s", err);
	cats_stats_free(&st);
}

static void
on_stats_due(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	cps_stats(arg);
}

/* Ask the stages for their stats records; the whole is written a moment
 * later, with what they answered. */
static void
stats_request(struct cps *p)
{
	for (int i = 0; i < CPS_NSTAGE; i++)
		if (p->st[i].pid != 0)
			kill(p->st[i].pid, SIGUSR1);
	struct timeval tv = { 0, 300000 };
	event_add(p->stats_ev, &tv);
}

static void
on_tick(evutil_socket_t fd, short what, void *arg)
{
	struct cps *p = arg;
	static uint64_t last;
	(void)fd;
	(void)what;
	for (int i = 0; i < CPS_NSTAGE; i++)
		stage_shut(&p->st[i]);
	uint64_t now = mono_ms();
	if (p->c->stats_ms > 0 && now - last >= p->c->stats_ms) {
		if (last != 0)
			stats_request(p);
		last = now;
	}
}

void
cps_signal(struct cps *p, int sig)
{
	switch (sig) {
	case SIGHUP:
		/* select and pce read their files again, every stage its TLS
		 * files (cats-bind has nothing else to reload). */
		for (int i = 0; i < CPS_NSTAGE; i++)
			if (p->st[i].pid != 0)
				kill(p->st[i].pid, SIGHUP);
		cats_tls_reload();
		cats_info("reload: SIGHUP to every stage");
		break;
	case SIGUSR2:
		if (p->st[CPS_SELECT].pid != 0)
			kill(p->st[CPS_SELECT].pid, SIGUSR2);
		break;
	case SIGUSR1:
		stats_request(p);
		break;
	default:
		cps_stop(p, CATS_EXIT_OK);
	}
}

/* ---- life ---- */

int
cps_init(struct cps *p, struct cps_conf *c, struct event_base *base)
{
	memset(p, 0, sizeof(*p));
	p->c = c;
	p->base = base;
	p->etcd = cps_conf_etcd(c);
	p->started_ms = mono_ms();
	for (int i = 0; i < CPS_NSTAGE; i++) {
		struct cps_stage *s = &p->st[i];
		s->which = i;
		s->p = p;
		s->fd = -1;
		cats_dec_init(&s->dec, &cats_limits_default);
		s->timer = evtimer_new(base, on_restart, s);
		s->argv = calloc(CPS_NTLS + c->nargs[i] + 3, sizeof(char *));
		if (s->timer == NULL || s->argv == NULL ||
		    asprintf(&s->argv[0], "%s/cats-%s", c->bin,
		    cps_stage_names[i]) < 0) {
			cats_errorx("out of memory");
			return CATS_EXIT_FAIL;
		}
		/* The service's TLS files first: the section's own after
		 * them win (the last of an option is the one taken). */
		size_t k0 = 1;
		for (int t = 0; t < CPS_NTLS; t++) {
			if (c->tls[t] == NULL)
				continue;
			if (asprintf(&s->argv[k0], "--%s=%s", cps_tls_keys[t],
			    c->tls[t]) < 0) {
				s->argv[k0] = NULL;
				cats_errorx("out of memory");
				return CATS_EXIT_FAIL;
			}
			k0++;
		}
		/* cats-pce's stats records on its output, to the parent,
		 * as cats-select's and cats-bind's are by default. */
		if (i == CPS_PCE && (s->argv[k0++] = strdup("--stats-to=-"))
		    == NULL) {
			cats_errorx("out of memory");
			return CATS_EXIT_FAIL;
		}
		s->ntls = k0 - 1;
		for (size_t k = 0; k < c->nargs[i]; k++) {
			s->argv[k0 + k] = c->args[i][k];
			const char *a = c->args[i][k];
			struct cats_ep ep, lep;
			char name[300], err[512];
			/* Its record listeners; its HTTP servers (the C-SMA
			 * ingest, /metrics) at their listen endpoints. */
			bool http = strncmp(a, "--prometheus=", 13) == 0 ||
			    (i == CPS_SELECT && strncmp(a, "--ingest=", 9) == 0);
			const char *v = strchr(a, '=');
			if ((!http && strncmp(a, "--listen=", 9) != 0) ||
			    s->nls == CPS_MAX_LISTEN ||
			    cats_ep_parse(v + 1, &ep, err, sizeof(err)) < 0 ||
			    (http && httpd_listen_ep(&ep, &lep) < 0))
				continue;	/* the stage says why */
			if (http)
				ep = lep;
			struct cps_listen *l = &s->ls[s->nls++];
			l->fd = -1;
			l->name = strdup(cats_ep_str(&ep, name, sizeof(name)));
			l->path = ep.kind == CATS_EP_UNIX ? strdup(ep.path) :
			    NULL;
			if (l->name == NULL) {
				cats_errorx("out of memory");
				return CATS_EXIT_FAIL;
			}
		}
		if (access(s->argv[0], X_OK) < 0) {
			cats_errorx("stage %s: %s: %s", cps_stage_names[i],
			    s->argv[0], strerror(errno));
			return CATS_EXIT_CONFIG;
		}
	}
	int ofd = 1, sfd = -1, tfd = -1, rc;
	if ((c->to != NULL &&
	    (rc = cats_ep_open_out("--to", c->to, &ofd)) != 0) ||
	    (c->stats_to != NULL &&
	    (rc = cats_ep_open_out("--stats-to", c->stats_to, &sfd)) != 0) ||
	    (c->tap != NULL &&
	    (rc = cats_ep_open_out("--tap", c->tap, &tfd)) != 0))
		return rc;
	if (tfd >= 0) {
		/* A copy for people: it never holds the service back. */
		p->tap = cats_stream_new(base, -1, tfd, false,
		    &cats_limits_default, 64u << 20, &out_cbs, p);
		if (p->tap == NULL)
			return CATS_EXIT_FAIL;
		cats_stream_own(p->tap);
		/* The replies of a turn in one write, not a write(2) each. */
		cats_stream_batch(p->tap, 0);
	}
	p->out = cats_stream_new(base, -1, ofd, false, &cats_limits_default, 0,
	    &out_cbs, p);
	if (p->out == NULL)
		return CATS_EXIT_FAIL;
	if (ofd != 1)
		cats_stream_own(p->out);
	cats_stream_batch(p->out, 0);
	if (sfd >= 0) {
		p->stats = cats_stream_new(base, -1, sfd, false,
		    &cats_limits_default, 0, &out_cbs, p);
		if (p->stats == NULL)
			return CATS_EXIT_FAIL;
		cats_stream_own(p->stats);
	}
	/* The control input: none when stdin is a character device that is
	 * no terminal (/dev/null). */
	struct stat sb;
	if (fstat(0, &sb) == 0 && !(S_ISCHR(sb.st_mode) && !isatty(0))) {
		p->in = cats_stream_new(base, 0, -1, false, &cats_limits_default,
		    0, &in_cbs, p);
		if (p->in == NULL)
			return CATS_EXIT_FAIL;
		cats_stream_frame(p->in);	/* cats-select reads it */
	} else {
		p->in_eof = true;
	}
	p->tick = event_new(base, -1, EV_PERSIST, on_tick, p);
	p->stats_ev = evtimer_new(base, on_stats_due, p);
	p->kill_ev = evtimer_new(base, on_kill, p);
	if (p->tick == NULL || p->stats_ev == NULL || p->kill_ev == NULL)
		return CATS_EXIT_FAIL;
	struct timeval tv = { 0, 50000 };
	event_add(p->tick, &tv);
	return CATS_EXIT_OK;
}

int
cps_end(struct cps *p)
{
	if (p->c->stats_ms > 0 || p->c->textfile != NULL)
		cps_stats(p);
	if (p->out != NULL && cats_stream_flush(p->out) < 0 && p->rc == 0)
		p->rc = CATS_EXIT_IOERR;
	if (p->stats != NULL)
		cats_stream_flush(p->stats);
	if (p->tap != NULL)
		cats_stream_flush(p->tap);
	return p->rc;
}

void
cps_free(struct cps *p)
{
	release_listeners(p);
	for (int i = 0; i < CPS_NSTAGE; i++) {
		struct cps_stage *s = &p->st[i];
		if (s->pid != 0) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, NULL, 0);
		}
		if (s->s != NULL)
			cats_stream_free(s->s);
		if (s->fd >= 0)
			close(s->fd);
		if (s->timer != NULL)
			event_free(s->timer);
		if (s->argv != NULL)
			for (size_t k = 0; k <= s->ntls; k++)
				free(s->argv[k]);
		free(s->argv);
		cats_dec_free(&s->dec);
		cats_buf_free(&s->pending);
		for (size_t k = 0; k < s->nls; k++) {
			if (s->ls[k].fd >= 0)
				close(s->ls[k].fd);
			free(s->ls[k].name);
			free(s->ls[k].path);
		}
		free(s->lenv);
		free(s->kv);
		free(s->kind);
		free(s->names);
	}
	if (p->in != NULL)
		cats_stream_free(p->in);
	if (p->out != NULL)
		cats_stream_free(p->out);
	if (p->stats != NULL)
		cats_stream_free(p->stats);
	if (p->tap != NULL)
		cats_stream_free(p->tap);
	if (p->tick != NULL)
		event_free(p->tick);
	if (p->stats_ev != NULL)
		event_free(p->stats_ev);
	if (p->kill_ev != NULL)
		event_free(p->kill_ev);
}
