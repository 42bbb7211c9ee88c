/*
 * listener.h - the one listener of the cats daemons: accepting on stream
 * sockets (ep.h's cats_ep_listen), the list of open connections, their
 * caps and their deadlines, on a libevent loop.
 *
 * Caps.  At most max_conns connections are open on a listener, and of them
 * at most max_unauth have not authenticated yet (cats_conn_auth: a valid
 * hello, a first record that verified); all listeners of the process
 * together keep their connections max(32, soft limit / 16) descriptors
 * below RLIMIT_NOFILE.  A connection that would pass a cap takes the place
 * of the oldest unauthenticated one, which is closed (evicted); with none
 * to evict it is closed at once (refused).  An authenticated connection is
 * never closed for a newer one: idle unauthenticated connections, however
 * many, do not lock authenticated peers out.
 *
 * Deadlines.  An unauthenticated connection is closed hello_ms after it
 * was accepted (with hello_when_crowded, only while the unauthenticated
 * are more than half their cap); an authenticated one after idle_ms
 * without cats_conn_touch (0: never).  The listener's clock is monotonic milliseconds (opts.clock,
 * for tests; default the monotonic clock); the deadlines are checked by a
 * timer of the loop, or by cats_listener_tick().
 *
 * Descriptors.  The first listener made raises the soft RLIMIT_NOFILE to
 * the hard limit (cats_fd_limit).  When accept(2) fails for want of
 * descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), the oldest
 * unauthenticated connection is evicted and accept tried again; with none,
 * the waiting connection is accepted on a reserve descriptor and closed at
 * once (the peer sees a close, not a hang), and accepting pauses for
 * 100 ms (no busy loop).  Each is counted, and logged at most once every
 * 10 s with the count since; evictions, refusals and timeouts too.
 *
 * A connection's owner (the tool) gets it in accept(), with its descriptor,
 * and owns the descriptor from then on (it usually gives it to a
 * cats_stream).  When the listener closes a connection (a deadline, an
 * eviction, cats_listener_free) it calls close(), in which the owner frees
 * its object and closes the descriptor; when the owner closes one itself
 * (end of file, an error, a refused hello) it calls cats_conn_release().
 * Accepted TCP sockets get keepalives (60 s idle, 3 probes 10 s apart).
 */
#ifndef CATS_LISTENER_H
#define CATS_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evconnlistener;
struct cats_listener;
struct cats_conn;

/* Why the listener closes a connection. */
enum {
	CATS_CONN_EVICTED = 1,	/* a newer one took its unauthenticated place */
	CATS_CONN_HELLO_TIMEOUT,	/* not authenticated within hello_ms */
	CATS_CONN_IDLE,		/* nothing for idle_ms */
	CATS_CONN_SHUTDOWN,	/* cats_listener_free */
};
extern const char *const cats_conn_why_names[];

/*
 * The one parser of every tool's --hello-timeout DURATION, the deadline of
 * a connection not yet authenticated: 100 ms to 5 min (a value parsed by
 * cats_parse_ms; 0, or -1 with err).  cats-select and cats-bind, whose
 * forwarders say hello, hold it always (5 s unless given); cats-pce,
 * cats-sma and cats-fwd's steer listener, whose peers may say nothing for
 * long, only when given (hello_ms, hello_when_crowded off); cats-fwd's
 * tls: control channels hold their handshake to it (cats_tls_open).
 */
#define CATS_HELLO_MS 5000
int cats_parse_hello_ms(const char *s, uint64_t *ms, char *err,
    size_t errlen);

struct cats_listener_opts {
	const char *name;	/* what connects, for log lines: "forwarder" */
	size_t max_conns;	/* 0: 1024 */
	size_t max_unauth;	/* 0: max_conns / 4 (at least 1) */
	uint64_t hello_ms;	/* 0: 10 s */
	uint64_t idle_ms;	/* 0: no idle timeout */
	/*
	 * For protocols without a hello, whose peers may rightly say
	 * nothing for long after they connect: the hello deadline holds only
	 * while more than half of max_unauth is taken (under a flood);
	 * otherwise quiet unauthenticated connections wait, within the cap.
	 */
	bool hello_when_crowded;
	/*
	 * The same, only for connections accepted on a tagged socket
	 * (cats_listener_add: a unix socket, whose peers the file's mode
	 * and SO_PEERCRED already tell); the others keep their deadline.
	 */
	bool hello_when_crowded_tagged;
	uint64_t (*clock)(void);	/* monotonic ms; NULL: the system's */
};

struct cats_listener_cbs {
	/*
	 * A new connection on descriptor fd: 0 when the owner took it
	 * (cats_conn_set_data for its object), -1 to refuse it (the
	 * listener closes fd).
	 */
	int (*accept)(struct cats_conn *c, int fd, void *arg);
	/* The listener closes c (why: CATS_CONN_*): free, close the fd. */
	void (*close)(struct cats_conn *c, int why, void *arg);
};

struct cats_listener_stats {
	uint64_t accepted;	/* connections handed to accept() */
	uint64_t refused;	/* closed at once: a cap, nobody to evict */
	uint64_t evicted;	/* unauthenticated, closed for a newer one */
	uint64_t hello_timeouts, idle_timeouts;
	uint64_t fd_exhausted;	/* accept(2) failed: EMFILE, ENFILE, ... */
	uint64_t shed;		/* closed on the reserve descriptor */
	uint64_t accept_errors;	/* other accept(2) failures */
	size_t open, unauth;	/* now */
};

struct cats_listener *cats_listener_new(struct event_base *base,
    const struct cats_listener_opts *o, const struct cats_listener_cbs *cbs,
    void *arg);
/*
 * Accept on the listening stream socket fd (non-blocking; the caller's,
 * closed by the caller after cats_listener_free); tag is given back by
 * cats_conn_tag() for its connections.  -1 if out of memory.
 */
int cats_listener_add(struct cats_listener *l, int fd, int tag);
/* Close every connection (close(), CATS_CONN_SHUTDOWN) and free. */
void cats_listener_free(struct cats_listener *l);
const struct cats_listener_stats *cats_listener_stats(
    const struct cats_listener *l);
/* Stop accepting (hold, for back-pressure), or start again; NULL: none. */
void cats_listener_hold(struct cats_listener *l, bool hold);
/* Run the deadlines now (the loop's timer does it every tick). */
void cats_listener_tick(struct cats_listener *l);

/* The connections, oldest first: for (c = first; c; c = next(c)). */
struct cats_conn *cats_listener_first(struct cats_listener *l);
struct cats_conn *cats_conn_next(const struct cats_conn *c);

void cats_conn_set_data(struct cats_conn *c, void *data);
void *cats_conn_data(const struct cats_conn *c);
int cats_conn_tag(const struct cats_conn *c);
/* The peer as "ADDR:PORT" ("local" for unix sockets). */
const char *cats_conn_peer(const struct cats_conn *c, char *buf, size_t len);
/* The peer authenticated: out of the unauthenticated cap and deadline. */
void cats_conn_auth(struct cats_conn *c);
bool cats_conn_authed(const struct cats_conn *c);
/* Something came from the peer: the idle timeout starts again. */
void cats_conn_touch(struct cats_conn *c);
/*
 * The owner closed the connection (its descriptor is closed or about to
 * be): the listener forgets it.  Inside close() it does nothing.
 */
void cats_conn_release(struct cats_conn *c);

/*
 * Raise the soft RLIMIT_NOFILE to the hard limit (once; only when it is
 * lower, so that a limit set by the service manager is kept) and return
 * the soft limit.
 */
long cats_fd_limit(void);
/*
 * The EMFILE treatment above for a libevent evconnlistener (evhttp's):
 * counted in *exhausted, logged once per interval, one connection shed on
 * the reserve descriptor, accepting paused for 100 ms.  Free it before
 * the base.
 */
struct cats_evguard;
struct cats_evguard *cats_evguard_new(struct event_base *base,
    struct evconnlistener *lev, const char *name, uint64_t *exhausted);
void cats_evguard_free(struct cats_evguard *g);
/*
 * One connection accepted on the guard's listener (its owner's accept or
 * bufferevent callback says so): as cats_listener's, at most 64 a turn of
 * the loop, so that a flood of new connections does not keep the loop in
 * accept(2) while those already open wait (libevent's evconnlistener
 * accepts until the queue is empty).  NULL: nothing.
 */
void cats_evguard_accepted(struct cats_evguard *g);

#endif
