/*
 * pcep_srv.c - PCEP sessions on TCP connections, libevent (pcep_srv.h).
 *
 * A peer's life: its session's Open is queued at once; each read feeds
 * the session and drains its events (callbacks may send); the bytes the
 * session queued are moved to the bufferevent after every event; a timer
 * follows cats_pcep_sess_deadline().  When the session ends, reading
 * stops, what is queued is flushed (at most GRACE_MS), and the peer is
 * freed.  Callbacks may end a session: the peer is freed only once the
 * outermost call returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <sodium.h>

#include "base/clock.h"
#include "net/listener.h"
#include "pce/pcep_srv.h"

#define READ_CHUNK 65536
#define GRACE_MS 2000
#define MAX_OUT_DEFAULT ((size_t)1 << 20)

const char *const cats_pcep_note_names[] = { "answered", "refused",
	"second-session", "slow-peer", "evicted" };

struct cats_pcep_peer {
	struct cats_pcep_srv *srv;
	struct cats_conn *conn;		/* NULL: attached by the caller */
	struct bufferevent *bev;
	struct event *timer;
	struct cats_pcep_sess s;
	struct cats_ip ip;
	char name[64];
	void *data;
	bool closing;			/* the session is over: flushing */
	bool notified;			/* closed() was called */
	bool dead;			/* free once depth is 0 */
	int depth;			/* calls into this peer under way */
	struct cats_pcep_peer *prev, *next;
};

struct cats_pcep_srv {
	struct event_base *base;
	struct cats_pcep_srv_conf c;
	struct cats_pcep_srv_cbs cb;
	void *arg;
	struct cats_listener *lis;
	struct cats_pcep_peer *head;
	uint8_t next_sid;
	struct cats_pcep_srv_stats st;
};

static void peer_free(struct cats_pcep_peer *p);

static void
note(struct cats_pcep_srv *srv, struct cats_pcep_peer *p, const char *name,
    int what, const struct cats_pcep_status *st)
{
	if (srv->cb.note)
		srv->cb.note(p, name, what, st, srv->arg);
}

/* The session is over: closed() once, reading stops. */
static void
finish(struct cats_pcep_peer *p, const struct cats_pcep_status *st)
{
	p->closing = true;
	if (p->bev)
		bufferevent_disable(p->bev, EV_READ);
	if (!p->notified) {
		p->notified = true;
		p->srv->st.closed++;
		if (p->srv->cb.closed)
			p->srv->cb.closed(p, st, p->srv->arg);
	}
}

/* Move what the session queued to the socket; a peer that does not read
 * is dropped. */
static void
flush(struct cats_pcep_peer *p)
{
	struct cats_buf *o = &p->s.out;
	if (o->len == 0 || p->dead)
		return;
	struct evbuffer *out = bufferevent_get_output(p->bev);
	if (evbuffer_get_length(out) + o->len > p->srv->c.max_out) {
		struct cats_pcep_status st;
		cats_pcep_st(&st, CATS_PCEP_ST_CLOSE, 0, 0,
		    "the peer does not read");
		p->srv->st.slow++;
		note(p->srv, p, p->name, CATS_PCEP_NOTE_SLOW, &st);
		cats_buf_reset(o);
		finish(p, &st);
		p->dead = true;
		return;
	}
	if (bufferevent_write(p->bev, o->p, o->len) < 0)
		p->dead = true;
	cats_buf_reset(o);
}

static void
arm(struct cats_pcep_peer *p, uint64_t delay_ms)
{
	struct timeval tv = { (time_t)(delay_ms / 1000),
	    (suseconds_t)(delay_ms % 1000) * 1000 };
	evtimer_add(p->timer, &tv);
}

/* After a call into the peer: free it, start its flush, or set its timer. */
static void
settle(struct cats_pcep_peer *p)
{
	if (p->depth > 0)
		return;
	if (p->dead) {
		peer_free(p);
		return;
	}
	if (p->closing) {
		if (evbuffer_get_length(bufferevent_get_output(p->bev)) == 0)
			peer_free(p);
		else
			arm(p, GRACE_MS);	/* then freed, flushed or not */
		return;
	}
	uint64_t d = cats_pcep_sess_deadline(&p->s), now = cats_clock_now();
	if (d == UINT64_MAX)
		evtimer_del(p->timer);
	else
		arm(p, d > now ? d - now : 0);
}

/* Drain the session's events. */
static void
run(struct cats_pcep_peer *p)
{
	struct cats_pcep_srv *srv = p->srv;
	struct cats_pcep_ev ev;
	p->depth++;
	while (!p->closing && !p->dead &&
	    cats_pcep_sess_next(&p->s, cats_clock_now(), &ev) == 1) {
		switch (ev.kind) {
		case CATS_PCEP_EV_UP:
			if (p->conn)
				cats_conn_auth(p->conn);
			if (srv->cb.up)
				srv->cb.up(p, srv->arg);
			break;
		case CATS_PCEP_EV_MSG:
			if (srv->cb.msg)
				srv->cb.msg(p, ev.msg, srv->arg);
			break;
		case CATS_PCEP_EV_ANSWERED:
			note(srv, p, p->name, CATS_PCEP_NOTE_ANSWERED, &ev.st);
			break;
		case CATS_PCEP_EV_CLOSED:
			flush(p);
			finish(p, &ev.st);
			break;
		default:
			break;
		}
		flush(p);
	}
	flush(p);
	p->depth--;
	settle(p);
}

static void
on_read(struct bufferevent *bev, void *arg)
{
	struct cats_pcep_peer *p = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t max = p->s.conf.lim.max_msg;
	if (p->conn)
		cats_conn_touch(p->conn);
	p->depth++;
	size_t len;
	while (!p->closing && !p->dead && (len = evbuffer_get_length(in)) > 0) {
		size_t n = len < max ? len : max;
		unsigned char *b = evbuffer_pullup(in, (ev_ssize_t)n);
		if (b == NULL || cats_pcep_sess_feed(&p->s, b, n) < 0)
			break;
		evbuffer_drain(in, n);
		run(p);
	}
	if (p->closing)
		evbuffer_drain(in, evbuffer_get_length(in));
	p->depth--;
	settle(p);
}

static void
on_write(struct bufferevent *bev, void *arg)
{
	struct cats_pcep_peer *p = arg;
	if (p->closing && p->depth == 0 &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		peer_free(p);
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	struct cats_pcep_peer *p = arg;
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)))
		return;
	struct cats_pcep_ev ev;
	cats_pcep_sess_eof(&p->s, &ev);
	struct cats_pcep_status st;
	cats_pcep_st(&st, CATS_PCEP_ST_CLOSE, 0, 0, what & BEV_EVENT_EOF ?
	    "connection closed by the peer" : "connection error");
	finish(p, &st);
	p->dead = true;
	settle(p);
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct cats_pcep_peer *p = arg;
	if (p->closing) {
		p->dead = true;		/* the grace is over */
		settle(p);
		return;
	}
	run(p);
}

static struct cats_pcep_peer *
peer_new(struct cats_pcep_srv *srv, int fd, const char *name,
    const struct cats_ip *ip, struct cats_conn *conn)
{
	struct cats_pcep_peer *p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->srv = srv;
	p->conn = conn;
	if (ip)
		p->ip = *ip;
	cats_strlcpy(p->name, name ? name : "?", sizeof(p->name));
	p->bev = bufferevent_socket_new(srv->base, fd, BEV_OPT_CLOSE_ON_FREE);
	p->timer = evtimer_new(srv->base, on_timer, p);
	struct cats_pcep_conf c = srv->c.sess;
	c.sid = srv->next_sid++;
	if (p->bev == NULL || p->timer == NULL ||
	    cats_pcep_sess_init(&p->s, &c, cats_clock_now()) < 0) {
		if (p->bev)
			bufferevent_free(p->bev);
		else
			close(fd);
		if (p->timer)
			event_free(p->timer);
		cats_pcep_sess_free(&p->s);
		free(p);
		return NULL;
	}
	bufferevent_setcb(p->bev, on_read, on_write, on_event, p);
	bufferevent_setwatermark(p->bev, EV_READ, 0, READ_CHUNK);
	bufferevent_enable(p->bev, EV_READ | EV_WRITE);
	p->next = srv->head;
	if (srv->head)
		srv->head->prev = p;
	srv->head = p;
	srv->st.accepted++;
	flush(p);
	settle(p);
	return p;
}

static void
peer_free(struct cats_pcep_peer *p)
{
	if (p->depth > 0) {
		p->dead = true;
		return;
	}
	struct cats_pcep_srv *srv = p->srv;
	if (!p->notified) {
		struct cats_pcep_status st;
		cats_pcep_st(&st, CATS_PCEP_ST_CLOSE, 0, 0, "freed");
		finish(p, &st);
	}
	if (p->prev)
		p->prev->next = p->next;
	else
		srv->head = p->next;
	if (p->next)
		p->next->prev = p->prev;
	if (p->conn)
		cats_conn_release(p->conn);
	bufferevent_free(p->bev);
	event_free(p->timer);
	cats_pcep_sess_free(&p->s);
	free(p);
}

/* The peer's address of a socket: text and a cats_ip (IPv4-mapped IPv6
 * as IPv4). */
static void
peer_addr(int fd, char *name, size_t len, struct cats_ip *ip)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	memset(ip, 0, sizeof(*ip));
	cats_strlcpy(name, "?", len);
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		return;
	char a[INET6_ADDRSTRLEN];
	unsigned port = 0;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		ip->af = 4;
		memcpy(ip->a, &s4->sin_addr, 4);
		port = ntohs(s4->sin_port);
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			ip->af = 4;
			memcpy(ip->a, s6->sin6_addr.s6_addr + 12, 4);
		} else {
			ip->af = 6;
			memcpy(ip->a, &s6->sin6_addr, 16);
		}
		port = ntohs(s6->sin6_port);
	} else
		return;
	const char *t = cats_ip_fmt(ip, a, sizeof(a));
	snprintf(name, len, ip->af == 6 ? "[%s]:%u" : "%s:%u", t ? t : "?",
	    port);
}

static bool
allowed(const struct cats_pcep_srv *srv, const struct cats_ip *ip)
{
	if (srv->c.nallow == 0)
		return true;
	for (size_t i = 0; i < srv->c.nallow; i++)
		if (cats_prefix_has(&srv->c.allow[i], ip))
			return true;
	return false;
}

static int
on_accept(struct cats_conn *c, int fd, void *arg)
{
	struct cats_pcep_srv *srv = arg;
	char name[64];
	struct cats_ip ip;
	peer_addr(fd, name, sizeof(name), &ip);
	struct cats_pcep_status st;
	if (!allowed(srv, &ip)) {
		cats_pcep_st(&st, CATS_PCEP_ST_CLOSE, 0, 0,
		    "peer not allowed");
		srv->st.refused++;
		note(srv, NULL, name, CATS_PCEP_NOTE_REFUSED, &st);
		return -1;
	}
	for (struct cats_pcep_peer *q = srv->head; q && !srv->c.many_per_peer;
	    q = q->next) {
		if (q->closing || !cats_ip_eq(&q->ip, &ip))
			continue;
		struct cats_buf b = { 0 };
		struct cats_pcep_error e = { CATS_PCEP_ET_SECOND, 0 };
		if (cats_pcep_put_pcerr(&b, NULL, 0, &e, 1, NULL) == 0)
			(void)send(fd, b.p, b.len, MSG_DONTWAIT | MSG_NOSIGNAL);
		cats_buf_free(&b);
		cats_pcep_st(&st, CATS_PCEP_ST_CLOSE, CATS_PCEP_ET_SECOND, 0,
		    "a second session from this address");
		srv->st.second++;
		note(srv, q, name, CATS_PCEP_NOTE_SECOND, &st);
		return -1;
	}
	struct cats_pcep_peer *p = peer_new(srv, fd, name, &ip, c);
	if (p == NULL)
		return 0;	/* fd is closed; the listener forgets it */
	cats_conn_set_data(c, p);
	return 0;
}

static void
on_close(struct cats_conn *c, int why, void *arg)
{
	struct cats_pcep_srv *srv = arg;
	struct cats_pcep_peer *p = cats_conn_data(c);
	if (p == NULL)
		return;
	p->conn = NULL;		/* the listener is closing it */
	struct cats_pcep_status st;
	cats_pcep_st(&st, CATS_PCEP_ST_CLOSE, 0, 0, cats_conn_why_names[why]);
	if (why != CATS_CONN_SHUTDOWN) {
		srv->st.evicted++;
		note(srv, p, p->name, CATS_PCEP_NOTE_EVICTED, &st);
	}
	finish(p, &st);
	peer_free(p);
}

struct cats_pcep_srv *
cats_pcep_srv_new(struct event_base *base, const struct cats_pcep_srv_conf *c,
    const struct cats_pcep_srv_cbs *cbs, void *arg)
{
	struct cats_pcep_srv *srv = calloc(1, sizeof(*srv));
	if (srv == NULL)
		return NULL;
	srv->base = base;
	srv->c = *c;
	if (srv->c.max_sessions == 0)
		srv->c.max_sessions = 256;
	if (srv->c.max_unauth == 0)
		srv->c.max_unauth = srv->c.max_sessions / 4 ?
		    srv->c.max_sessions / 4 : 1;
	if (srv->c.max_out == 0)
		srv->c.max_out = MAX_OUT_DEFAULT;
	srv->cb = *cbs;
	srv->arg = arg;
	srv->next_sid = 1;
	return srv;
}

int
cats_pcep_srv_listen(struct cats_pcep_srv *srv, int fd)
{
	if (srv->lis == NULL) {
		const struct cats_pcep_conf *sc = &srv->c.sess;
		struct cats_listener_opts o = {
			.name = "PCEP peer",
			.max_conns = srv->c.max_sessions,
			.max_unauth = srv->c.max_unauth,
			/* The session's own timers end it first. */
			.hello_ms = (uint64_t)sc->openwait_ms + sc->keepwait_ms +
			    5000,
		};
		struct cats_listener_cbs cb = { on_accept, on_close };
		srv->lis = cats_listener_new(srv->base, &o, &cb, srv);
		if (srv->lis == NULL)
			return -1;
	}
	return cats_listener_add(srv->lis, fd, 0);
}

struct cats_pcep_peer *
cats_pcep_srv_attach(struct cats_pcep_srv *srv, int fd, const char *name)
{
	char n[64];
	struct cats_ip ip;
	peer_addr(fd, n, sizeof(n), &ip);
	return peer_new(srv, fd, name ? name : n, &ip, NULL);
}

void
cats_pcep_srv_free(struct cats_pcep_srv *srv)
{
	if (srv == NULL)
		return;
	/* Say Close to everyone, as far as the sockets take it now. */
	for (struct cats_pcep_peer *p = srv->head; p; p = p->next) {
		if (p->closing)
			continue;
		struct cats_pcep_ev ev;
		cats_pcep_sess_close(&p->s, CATS_PCEP_CLOSE_NONE,
		    cats_clock_now(), &ev);
		p->depth++;
		flush(p);
		finish(p, &ev.st);
		p->depth--;
		/* The bufferevent is freed next: its output, unfrozen, is
		 * written now, as far as the socket takes it. */
		struct evbuffer *out = bufferevent_get_output(p->bev);
		evbuffer_unfreeze(out, 1);
		(void)evbuffer_write(out, bufferevent_getfd(p->bev));
	}
	if (srv->lis)
		cats_listener_free(srv->lis);
	while (srv->head) {
		srv->head->depth = 0;
		peer_free(srv->head);
	}
	free(srv);
}

void
cats_pcep_srv_get_stats(const struct cats_pcep_srv *srv,
    struct cats_pcep_srv_stats *st)
{
	*st = srv->st;
	st->sessions = st->up = 0;
	for (const struct cats_pcep_peer *p = srv->head; p; p = p->next) {
		st->sessions++;
		st->up += p->s.state == CATS_PCEP_S_UP;
	}
}

struct cats_pcep_sess *
cats_pcep_peer_sess(struct cats_pcep_peer *p)
{
	return &p->s;
}

const char *
cats_pcep_peer_name(const struct cats_pcep_peer *p)
{
	return p->name;
}

void
cats_pcep_peer_set_data(struct cats_pcep_peer *p, void *data)
{
	p->data = data;
}

void *
cats_pcep_peer_data(const struct cats_pcep_peer *p)
{
	return p->data;
}

/* After a send from outside the peer's own calls: flush and settle. */
static int
sent(struct cats_pcep_peer *p, int rc)
{
	p->depth++;
	flush(p);
	p->depth--;
	settle(p);
	return rc;
}

int
cats_pcep_peer_send_reqs(struct cats_pcep_peer *p,
    const struct cats_pcep_req *r, size_t n)
{
	if (p->closing || p->dead)
		return -1;
	return sent(p, cats_pcep_sess_send_reqs(&p->s, r, n,
	    cats_clock_now()));
}

int
cats_pcep_peer_send_reps(struct cats_pcep_peer *p,
    const struct cats_pcep_rep *r, size_t n)
{
	if (p->closing || p->dead)
		return -1;
	return sent(p, cats_pcep_sess_send_reps(&p->s, r, n,
	    cats_clock_now()));
}

int
cats_pcep_peer_send_err(struct cats_pcep_peer *p, const uint32_t *ids,
    size_t nids, uint8_t type, uint8_t value)
{
	if (p->closing || p->dead)
		return -1;
	return sent(p, cats_pcep_sess_send_err(&p->s, ids, nids, type, value,
	    cats_clock_now()));
}

void
cats_pcep_peer_unknown_ref(struct cats_pcep_peer *p, uint32_t id)
{
	if (p->closing || p->dead)
		return;
	struct cats_pcep_ev ev;
	p->depth++;
	if (cats_pcep_sess_unknown_ref(&p->s, id, cats_clock_now(), &ev)) {
		flush(p);
		finish(p, &ev.st);
	}
	flush(p);
	p->depth--;
	settle(p);
}

void
cats_pcep_peer_close(struct cats_pcep_peer *p, uint8_t reason)
{
	if (p->closing || p->dead)
		return;
	struct cats_pcep_ev ev;
	cats_pcep_sess_close(&p->s, reason, cats_clock_now(), &ev);
	p->depth++;
	flush(p);
	finish(p, &ev.st);
	p->depth--;
	settle(p);
}

/* ---- TCP-MD5 ---- */

int
cats_pcep_md5_load(const char *path, uint8_t *key, size_t *len, char *err,
    size_t errlen)
{
	uint8_t b[CATS_PCEP_MD5_MAX + 2];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	ssize_t n = read(fd, b, sizeof(b));
	int e = errno;
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -1;
	}
	if (n > 0 && b[n - 1] == '\n')
		n--;
	if (n > 0 && b[n - 1] == '\r')
		n--;
	if (n == 0 || n > CATS_PCEP_MD5_MAX) {
		snprintf(err, errlen, "%s: a TCP-MD5 key has 1 to %d bytes",
		    path, CATS_PCEP_MD5_MAX);
		return -1;
	}
	memcpy(key, b, (size_t)n);
	*len = (size_t)n;
	sodium_memzero(b, sizeof(b));
	return 0;
}

int
cats_pcep_md5_set(int fd, const struct cats_prefix *prefix,
    const uint8_t *key, size_t len, char *err, size_t errlen)
{
	struct sockaddr_storage own;
	socklen_t olen = sizeof(own);
	if (getsockname(fd, (struct sockaddr *)&own, &olen) < 0) {
		snprintf(err, errlen, "TCP-MD5: %s", strerror(errno));
		return -1;
	}
	struct tcp_md5sig m;
	memset(&m, 0, sizeof(m));
	uint8_t plen = prefix->plen;
	if (own.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&m.tcpm_addr;
		a->sin6_family = AF_INET6;
		if (prefix->ip.af == 4) {	/* a v4 peer on a v6 socket */
			a->sin6_addr.s6_addr[10] = 0xff;
			a->sin6_addr.s6_addr[11] = 0xff;
			memcpy(&a->sin6_addr.s6_addr[12], prefix->ip.a, 4);
			plen = (uint8_t)(plen + 96);
		} else
			memcpy(&a->sin6_addr, prefix->ip.a, 16);
	} else if (prefix->ip.af == 4) {
		struct sockaddr_in *a = (struct sockaddr_in *)&m.tcpm_addr;
		a->sin_family = AF_INET;
		memcpy(&a->sin_addr, prefix->ip.a, 4);
	} else {
		snprintf(err, errlen, "TCP-MD5: an IPv6 peer on an IPv4 "
		    "socket");
		return -1;
	}
	m.tcpm_flags = TCP_MD5SIG_FLAG_PREFIX;
	m.tcpm_prefixlen = plen;
	m.tcpm_keylen = (uint16_t)len;
	memcpy(m.tcpm_key, key, len);
	int rc = setsockopt(fd, IPPROTO_TCP, TCP_MD5SIG_EXT, &m, sizeof(m));
	int e = errno;
	sodium_memzero(&m, sizeof(m));
	if (rc < 0) {
		snprintf(err, errlen, "TCP-MD5: %s%s", strerror(e), e ==
		    ENOPROTOOPT || e == ENOENT ? " (no TCP-MD5 in this kernel)" :
		    "");
		return -1;
	}
	return 0;
}
