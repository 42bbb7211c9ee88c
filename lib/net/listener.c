/*
 * listener.c - accepting, the connection list, caps and deadlines
 * (listener.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "base/clock.h"
#include "base/conf.h"
#include "base/list.h"
#include "base/log.h"
#include "net/listener.h"
#include "net/tls.h"

#define ACCEPTS_PER_TURN 64
#define PAUSE_MS 100
#define LOG_EVERY_MS 10000
#define MAX_LFDS 8

const char *const cats_conn_why_names[] = { "", "evicted", "hello-timeout",
	"idle", "shutdown" };

/*
 * A connection is on the listener's list of all (accept order) and on one
 * queue: the unauthenticated in accept order (their deadline is the
 * accept time plus hello_ms), or the authenticated in the order of their
 * last touch (the idle deadline).  Both queues are in deadline order, so
 * the tick looks only at their heads.
 */
struct cats_conn {
	struct cats_listener *l;
	struct cats_conn *prev, *next;		/* all */
	struct cats_conn *qprev, *qnext;	/* unauth or lru */
	void *data;
	uint64_t since;		/* accept or last touch, ms */
	int tag;
	uint8_t fds;		/* descriptors it takes: 1, or 3 with TLS */
	int tlsfd;		/* TLS: the owner's descriptor; -1 */
	bool authed, closing, released;
	struct sockaddr_storage peer;
	socklen_t peerlen;
};

struct queue {
	struct cats_conn *head, *tail;
};

/* A rate-limited log line: once per interval, with the count since. */
struct ratelog {
	uint64_t last, more;
	bool ever;
};

struct lfd {
	struct cats_listener *l;
	int fd, tag;
	bool tls;		/* a tls: endpoint: TLS on its connections */
	struct event *ev;
};

struct cats_listener {
	struct event_base *base;
	struct cats_listener_opts o;
	struct cats_listener_cbs cbs;
	void *arg;
	struct lfd lfd[MAX_LFDS];
	size_t nlfd;
	struct cats_conn *first, *last;
	struct queue unauth, lru;
	struct event *timer;
	bool paused, held;
	uint64_t resume_at;
	struct cats_listener_stats st;
	struct ratelog log_fd, log_refused, log_evicted, log_timeout;
};

/* Process-wide: every listener's connections against RLIMIT_NOFILE. */
static size_t g_open;
static size_t g_budget;
static int g_reserve = -1;

static uint64_t
mono_ms(void)
{
	return cats_clock_mono_ns() / 1000000;
}

static uint64_t
now_ms(const struct cats_listener *l)
{
	return l->o.clock ? l->o.clock() : mono_ms();
}

static void
ratelog(struct ratelog *r, uint64_t now, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
ratelog(struct ratelog *r, uint64_t now, const char *fmt, ...)
{
	char line[300];
	va_list ap;
	if (r->ever && now - r->last < LOG_EVERY_MS) {
		r->more++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (r->more)
		cats_warnx("%s (%" PRIu64 " more in the last %u s)", line,
		    r->more, LOG_EVERY_MS / 1000);
	else
		cats_warnx("%s", line);
	r->ever = true;
	r->last = now;
	r->more = 0;
}

long
cats_fd_limit(void)
{
	static long soft;
	if (soft != 0)
		return soft;
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		soft = 1024;
		return soft;
	}
	if (rl.rlim_cur < rl.rlim_max) {
		struct rlimit want = rl;
		/* select(2) is not used here; still, no more than 1M. */
		want.rlim_cur = rl.rlim_max > (1u << 20) ? (1u << 20) :
		    rl.rlim_max;
		if (want.rlim_cur > rl.rlim_cur &&
		    setrlimit(RLIMIT_NOFILE, &want) == 0)
			rl.rlim_cur = want.rlim_cur;
	}
	soft = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 30) ?
	    (1L << 30) : (long)rl.rlim_cur;
	return soft;
}

/* The budget of all listeners' connections, and the reserve descriptor. */
static void
fd_setup(void)
{
	if (g_budget == 0) {
		long soft = cats_fd_limit();
		long head = soft / 16 > 32 ? soft / 16 : 32;
		g_budget = soft > head + 1 ? (size_t)(soft - head) : 1;
	}
	if (g_reserve < 0)
		g_reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/*
 * Accept the connection waiting on fd on the reserve descriptor and close
 * it: the peer sees a close rather than waiting in the backlog.
 */
static bool
shed_one(int fd)
{
	if (g_reserve < 0)
		return false;
	close(g_reserve);
	g_reserve = -1;
	int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
	if (c >= 0)
		close(c);
	g_reserve = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return c >= 0;
}

static bool
fd_exhausted(int e)
{
	return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

/* ---- the lists ---- */

static void
q_push(struct queue *q, struct cats_conn *c)
{
	CATS_LIST_APPEND(q->head, q->tail, c, qprev, qnext);
}

static void
q_del(struct queue *q, struct cats_conn *c)
{
	CATS_LIST_REMOVE(q->head, q->tail, c, qprev, qnext);
}

static void
unlink_conn(struct cats_conn *c)
{
	struct cats_listener *l = c->l;
	CATS_LIST_REMOVE(l->first, l->last, c, prev, next);
	q_del(c->authed ? &l->lru : &l->unauth, c);
	l->st.open--;
	if (!c->authed)
		l->st.unauth--;
	g_open -= c->fds;
}

/* The listener closes c: its owner frees it, then the listener does. */
static void
close_conn(struct cats_conn *c, int why)
{
	struct cats_listener *l = c->l;
	unlink_conn(c);
	c->closing = true;
	if (l->cbs.close)
		l->cbs.close(c, why, l->arg);
	free(c);
}

void
cats_conn_release(struct cats_conn *c)
{
	if (c == NULL || c->closing)
		return;
	unlink_conn(c);
	free(c);
}

/* Close the oldest unauthenticated connection; false if there is none. */
static bool
evict_one(struct cats_listener *l, uint64_t now)
{
	struct cats_conn *c = l->unauth.head;
	if (c == NULL)
		return false;
	char peer[64];
	l->st.evicted++;
	ratelog(&l->log_evicted, now, "%s connections: %zu unauthenticated "
	    "of %zu open; the oldest (%s) closed for a newer one",
	    l->o.name, l->st.unauth, l->st.open,
	    cats_conn_peer(c, peer, sizeof(peer)));
	close_conn(c, CATS_CONN_EVICTED);
	return true;
}

/* ---- accepting ---- */

/* The accept events on or off: off while paused or held. */
static void
accept_events(struct cats_listener *l)
{
	for (size_t i = 0; i < l->nlfd; i++) {
		if (l->paused || l->held)
			event_del(l->lfd[i].ev);
		else
			event_add(l->lfd[i].ev, NULL);
	}
}

static void
pause_accept(struct cats_listener *l, uint64_t now)
{
	if (l->paused)
		return;
	l->paused = true;
	l->resume_at = now + PAUSE_MS;
	accept_events(l);
}

static void
resume_accept(struct cats_listener *l)
{
	l->paused = false;
	accept_events(l);
}

void
cats_listener_hold(struct cats_listener *l, bool hold)
{
	if (l == NULL || l->held == hold)
		return;
	l->held = hold;
	accept_events(l);
}

/*
 * A TCP connection's options: keep-alives, and no Nagle: a record stream
 * writes a batch a loop turn, and without TCP_NODELAY a batch written
 * while the last is unacknowledged waits for the peer's delayed ACK.
 */
static void
tcp_opts(int fd, const struct sockaddr_storage *ss)
{
	if (ss->ss_family != AF_INET && ss->ss_family != AF_INET6)
		return;
	int one = 1, idle = 60, intvl = 10, cnt = 3;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

static bool
full(const struct cats_listener *l)
{
	return l->st.open >= l->o.max_conns ||
	    l->st.unauth >= l->o.max_unauth || g_open >= g_budget;
}

/* A connection accepted on fd: room made for it, then its owner's. */
static void
take(struct cats_listener *l, int fd, const struct lfd *lf,
    const struct sockaddr_storage *ss, socklen_t sl, uint64_t now)
{
	int tag = lf->tag;
	while (full(l))
		if (!evict_one(l, now))
			break;
	if (full(l)) {
		l->st.refused++;
		ratelog(&l->log_refused, now, "%s connections: %zu open, %zu "
		    "unauthenticated (caps %zu, %zu; %zu descriptors for "
		    "connections): one refused", l->o.name, l->st.open,
		    l->st.unauth, l->o.max_conns, l->o.max_unauth, g_budget);
		close(fd);
		return;
	}
	struct cats_conn *c = calloc(1, sizeof(*c));
	if (c == NULL) {
		l->st.refused++;
		close(fd);
		return;
	}
	c->l = l;
	c->tag = tag;
	c->fds = lf->tls ? 3 : 1;
	c->tlsfd = -1;
	c->since = now;
	memcpy(&c->peer, ss, sizeof(c->peer));
	c->peerlen = sl;
	CATS_LIST_APPEND(l->first, l->last, c, prev, next);
	q_push(&l->unauth, c);
	l->st.open++;
	l->st.unauth++;
	g_open += c->fds;
	tcp_opts(fd, ss);
	if (lf->tls) {
		/* The owner gets the plain side; the handshake runs on. */
		char peer[64];
		int pfd = cats_tls_accept(l->base, fd, cats_conn_peer(c, peer,
		    sizeof(peer)));
		if (pfd < 0) {
			l->st.refused++;
			cats_conn_release(c);
			return;
		}
		fd = c->tlsfd = pfd;
	}
	l->st.accepted++;
	if (l->cbs.accept(c, fd, l->arg) < 0) {
		cats_conn_release(c);
		close(fd);
	}
}

static void
on_accept(evutil_socket_t fd, short what, void *arg)
{
	struct lfd *lf = arg;
	struct cats_listener *l = lf->l;
	(void)what;
	uint64_t now = now_ms(l);
	bool tight = false;
	for (int k = 0; k < ACCEPTS_PER_TURN && !l->paused && !l->held; k++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int c = accept4(fd, (struct sockaddr *)&ss, &sl,
		    SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (c >= 0) {
			take(l, c, lf, &ss, sl, now);
			/*
			 * At the descriptor limit accept(2) fails before it
			 * looks for a connection: trying again now would
			 * evict the one just taken.  The loop calls back if
			 * more are waiting.
			 */
			if (tight)
				return;
			continue;
		}
		int e = errno;
		if (e == EAGAIN || e == EWOULDBLOCK)
			return;
		if (e == EINTR || e == ECONNABORTED || e == EPROTO ||
		    e == ENETDOWN || e == ENOPROTOOPT || e == EHOSTDOWN ||
		    e == ENONET || e == EHOSTUNREACH || e == EOPNOTSUPP ||
		    e == ENETUNREACH || e == EPERM)
			continue;	/* that connection's trouble */
		if (!fd_exhausted(e)) {
			l->st.accept_errors++;
			ratelog(&l->log_fd, now, "%s connections: accept: %s; "
			    "pausing %u ms", l->o.name, strerror(e), PAUSE_MS);
			pause_accept(l, now);
			return;
		}
		l->st.fd_exhausted++;
		if (evict_one(l, now)) {
			tight = true;	/* a descriptor is free again */
			continue;
		}
		ratelog(&l->log_fd, now, "%s connections: accept: %s (%zu "
		    "open, %" PRIu64 " times so far); pausing %u ms",
		    l->o.name, strerror(e), l->st.open, l->st.fd_exhausted,
		    PAUSE_MS);
		if (shed_one(fd))
			l->st.shed++;
		pause_accept(l, now);
		return;
	}
}

/* ---- deadlines ---- */

void
cats_listener_tick(struct cats_listener *l)
{
	uint64_t now = now_ms(l);
	if (l->paused && now >= l->resume_at)
		resume_accept(l);
	/*
	 * The unauthenticated past their deadline are a prefix of the queue
	 * (accept order).  With hello_when_crowded, only a flood closes
	 * them, except those still in their TLS handshake: a TLS
	 * connection's hello deadline holds whatever the crowd.
	 */
	struct cats_conn *c, *next;
	for (c = l->unauth.head; c != NULL && now - c->since >= l->o.hello_ms;
	    c = next) {
		/* (down to half the cap: counted again after each close) */
		bool lax = l->o.hello_when_crowded ||
		    (l->o.hello_when_crowded_tagged && c->tag);
		bool crowded = !lax || l->st.unauth > l->o.max_unauth / 2;
		next = c->qnext;
		if (!crowded && (c->tlsfd < 0 || cats_tls_fd_up(c->tlsfd)))
			continue;
		char peer[64];
		l->st.hello_timeouts++;
		ratelog(&l->log_timeout, now, "%s connection from %s: not "
		    "authenticated within %" PRIu64 " ms, closed", l->o.name,
		    cats_conn_peer(c, peer, sizeof(peer)), l->o.hello_ms);
		close_conn(c, CATS_CONN_HELLO_TIMEOUT);
	}
	while (l->o.idle_ms && (c = l->lru.head) != NULL &&
	    now - c->since >= l->o.idle_ms) {
		char peer[64];
		l->st.idle_timeouts++;
		cats_info("%s connection from %s: idle for %" PRIu64 " ms, "
		    "closed", l->o.name, cats_conn_peer(c, peer, sizeof(peer)),
		    l->o.idle_ms);
		close_conn(c, CATS_CONN_IDLE);
	}
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	cats_listener_tick(arg);
}

/* ---- the listener ---- */

struct cats_listener *
cats_listener_new(struct event_base *base, const struct cats_listener_opts *o,
    const struct cats_listener_cbs *cbs, void *arg)
{
	struct cats_listener *l = calloc(1, sizeof(*l));
	if (l == NULL)
		return NULL;
	fd_setup();
	l->base = base;
	l->o = *o;
	l->cbs = *cbs;
	l->arg = arg;
	if (l->o.name == NULL)
		l->o.name = "client";
	if (l->o.max_conns == 0)
		l->o.max_conns = 1024;
	if (l->o.max_unauth == 0)
		l->o.max_unauth = l->o.max_conns / 4;
	if (l->o.max_unauth == 0)
		l->o.max_unauth = 1;
	if (l->o.max_unauth > l->o.max_conns)
		l->o.max_unauth = l->o.max_conns;
	if (l->o.hello_ms == 0)
		l->o.hello_ms = 10000;
	/* A tick a quarter of the shortest deadline, 20 ms to 1 s. */
	uint64_t t = l->o.hello_ms;
	if (l->o.idle_ms && l->o.idle_ms < t)
		t = l->o.idle_ms;
	t /= 4;
	t = t < 20 ? 20 : t > 1000 ? 1000 : t;
	if (t > PAUSE_MS)
		t = PAUSE_MS;
	struct timeval tv = { (time_t)(t / 1000), (suseconds_t)(t % 1000) *
		1000 };
	l->timer = event_new(base, -1, EV_PERSIST, on_timer, l);
	if (l->timer == NULL || event_add(l->timer, &tv) < 0) {
		if (l->timer)
			event_free(l->timer);
		free(l);
		return NULL;
	}
	return l;
}

int
cats_listener_add(struct cats_listener *l, int fd, int tag)
{
	if (l->nlfd == MAX_LFDS)
		return -1;
	struct lfd *lf = &l->lfd[l->nlfd];
	lf->l = l;
	lf->fd = fd;
	lf->tag = tag;
	lf->tls = cats_tls_is_listen(fd);
	lf->ev = event_new(l->base, fd, EV_READ | EV_PERSIST, on_accept, lf);
	if (lf->ev == NULL)
		return -1;
	l->nlfd++;
	accept_events(l);
	return 0;
}

void
cats_listener_free(struct cats_listener *l)
{
	if (l == NULL)
		return;
	while (l->first)
		close_conn(l->first, CATS_CONN_SHUTDOWN);
	for (size_t i = 0; i < l->nlfd; i++)
		event_free(l->lfd[i].ev);
	event_free(l->timer);
	free(l);
}

const struct cats_listener_stats *
cats_listener_stats(const struct cats_listener *l)
{
	return &l->st;
}

struct cats_conn *
cats_listener_first(struct cats_listener *l)
{
	return l->first;
}

struct cats_conn *
cats_conn_next(const struct cats_conn *c)
{
	return c->next;
}

void
cats_conn_set_data(struct cats_conn *c, void *data)
{
	c->data = data;
}

void *
cats_conn_data(const struct cats_conn *c)
{
	return c->data;
}

int
cats_conn_tag(const struct cats_conn *c)
{
	return c->tag;
}

const char *
cats_conn_peer(const struct cats_conn *c, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "local";
	unsigned port = 0;
	if (c->peer.ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)&c->peer;
		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		port = ntohs(s4->sin_port);
	} else if (c->peer.ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)&c->peer;
		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		port = ntohs(s6->sin6_port);
	} else {
		snprintf(buf, len, "local");
		return buf;
	}
	snprintf(buf, len, c->peer.ss_family == AF_INET6 ? "[%s]:%u" :
	    "%s:%u", a, port);
	return buf;
}

void
cats_conn_auth(struct cats_conn *c)
{
	if (c->authed || c->closing)
		return;
	struct cats_listener *l = c->l;
	q_del(&l->unauth, c);
	c->authed = true;
	l->st.unauth--;
	c->since = now_ms(l);
	q_push(&l->lru, c);
}

bool
cats_conn_authed(const struct cats_conn *c)
{
	return c->authed;
}

void
cats_conn_touch(struct cats_conn *c)
{
	struct cats_listener *l = c->l;
	if (!c->authed || c->closing || l->o.idle_ms == 0)
		return;
	c->since = now_ms(l);
	if (l->lru.tail != c) {
		q_del(&l->lru, c);
		q_push(&l->lru, c);
	}
}

/* ---- evconnlistener (evhttp) ---- */

/*
 * An evconnlistener's error callback gets the listener's own argument
 * (evhttp's), not ours: the guards are found by listener, on a short list.
 */
struct cats_evguard {
	struct cats_evguard *next;
	struct evconnlistener *lev;
	struct event *resume, *turn;
	const char *name;
	uint64_t *exhausted;
	struct ratelog log;
	unsigned taken;		/* accepted since the last turn */
	bool paused;		/* for want of descriptors */
	bool full;		/* this turn's accepts taken */
};

static struct cats_evguard *g_guards;

static void
evguard_resume(evutil_socket_t fd, short what, void *arg)
{
	struct cats_evguard *g = arg;
	(void)fd;
	(void)what;
	g->paused = false;
	if (!g->full)
		evconnlistener_enable(g->lev);
}

/* The next turn of the loop: accepting again. */
static void
evguard_turn(evutil_socket_t fd, short what, void *arg)
{
	struct cats_evguard *g = arg;
	(void)fd;
	(void)what;
	g->taken = 0;
	if (g->full) {
		g->full = false;
		if (!g->paused)
			evconnlistener_enable(g->lev);
	}
}

void
cats_evguard_accepted(struct cats_evguard *g)
{
	if (g == NULL)
		return;
	if (g->taken++ == 0) {
		/* (a 0 s timer runs after the reads of the next turn;
		 * event_active would run in this one) */
		struct timeval tv = { 0, 0 };
		evtimer_add(g->turn, &tv);
	}
	if (g->taken >= ACCEPTS_PER_TURN && !g->full) {
		g->full = true;
		evconnlistener_disable(g->lev);
	}
}

static void
evguard_error(struct evconnlistener *lev, void *arg)
{
	int e = EVUTIL_SOCKET_ERROR();
	struct cats_evguard *g = g_guards;
	(void)arg;
	while (g != NULL && g->lev != lev)
		g = g->next;
	if (g == NULL)
		return;
	if (fd_exhausted(e)) {
		(*g->exhausted)++;
		shed_one(evconnlistener_get_fd(lev));
	}
	ratelog(&g->log, mono_ms(), "%s connections: accept: %s (%" PRIu64
	    " times so far); pausing %u ms", g->name, strerror(e),
	    *g->exhausted, PAUSE_MS);
	evconnlistener_disable(lev);
	g->paused = true;
	struct timeval tv = { 0, PAUSE_MS * 1000 };
	evtimer_add(g->resume, &tv);
}

struct cats_evguard *
cats_evguard_new(struct event_base *base, struct evconnlistener *lev,
    const char *name, uint64_t *exhausted)
{
	struct cats_evguard *g = calloc(1, sizeof(*g));
	if (g == NULL)
		return NULL;
	fd_setup();
	g->lev = lev;
	g->name = name;
	g->exhausted = exhausted;
	g->resume = evtimer_new(base, evguard_resume, g);
	g->turn = evtimer_new(base, evguard_turn, g);
	if (g->resume == NULL || g->turn == NULL) {
		if (g->resume)
			event_free(g->resume);
		free(g);
		return NULL;
	}
	evconnlistener_set_error_cb(lev, evguard_error);
	g->next = g_guards;
	g_guards = g;
	return g;
}

void
cats_evguard_free(struct cats_evguard *g)
{
	if (g == NULL)
		return;
	struct cats_evguard **pp = &g_guards;
	while (*pp && *pp != g)
		pp = &(*pp)->next;
	if (*pp)
		*pp = g->next;
	event_free(g->resume);
	event_free(g->turn);
	free(g);
}

int
cats_parse_hello_ms(const char *s, uint64_t *ms, char *err, size_t errlen)
{
	uint64_t v;
	if (cats_parse_ms(s, &v, err, errlen) < 0)
		return -1;
	if (v < 100 || v > 300000) {
		snprintf(err, errlen, "a hello deadline is 100ms to 5m");
		return -1;
	}
	*ms = v;
	return 0;
}
