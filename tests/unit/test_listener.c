/*
 * test_listener.c - net/listener.h: caps, eviction, deadlines, descriptor
 * exhaustion, on loopback with a clock of the test's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <event2/event.h>

#include "net/ep.h"
#include "net/listener.h"
#include "t.h"

static uint64_t fake_now = 1000000;

static uint64_t
fake_clock(void)
{
	return fake_now;
}

/* The owner's side: one object per connection, holding the fd. */
struct obj {
	int fd;
	int closed_why;
};

static int nobj, nclosed, last_why;
static bool refuse_next;

static int
on_accept(struct cats_conn *c, int fd, void *arg)
{
	(void)arg;
	if (refuse_next) {
		refuse_next = false;
		return -1;
	}
	struct obj *o = calloc(1, sizeof(*o));
	o->fd = fd;
	cats_conn_set_data(c, o);
	nobj++;
	return 0;
}

static void
on_close(struct cats_conn *c, int why, void *arg)
{
	struct obj *o = cats_conn_data(c);
	(void)arg;
	close(o->fd);
	free(o);
	nobj--;
	nclosed++;
	last_why = why;
	/* Releasing inside close() is allowed and does nothing. */
	cats_conn_release(c);
}

static int
connect_to(const struct cats_ep *ep)
{
	char err[256];
	return cats_ep_open(ep, false, err, sizeof(err));
}

/* Turn the loop until nothing is ready. */
static void
spin(struct event_base *b)
{
	for (int i = 0; i < 20; i++)
		event_base_loop(b, EVLOOP_NONBLOCK);
}

/* Has the server closed this client (EOF or reset)? */
static bool
closed_by_server(int fd)
{
	struct pollfd p = { fd, POLLIN, 0 };
	if (poll(&p, 1, 200) <= 0)
		return false;
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno == ECONNRESET);
}

static struct cats_conn *
nth(struct cats_listener *l, int k)
{
	struct cats_conn *c = cats_listener_first(l);
	while (c && k-- > 0)
		c = cats_conn_next(c);
	return c;
}

int
main(void)
{
	struct event_base *base = event_base_new();
	struct cats_ep ep;
	char err[256];
	cats_ep_parse("tcp:127.0.0.1:0", &ep, err, sizeof(err));
	int lfd = cats_ep_listen(&ep, err, sizeof(err));
	T_OK(lfd >= 0, "listening: %s", lfd < 0 ? err : "ok");
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	getsockname(lfd, (struct sockaddr *)&ss, &sl);
	snprintf(ep.port, sizeof(ep.port), "%u",
	    ntohs(((struct sockaddr_in *)&ss)->sin_port));

	static const struct cats_listener_cbs cbs = { on_accept, on_close };
	struct cats_listener_opts o = { .name = "test", .max_conns = 6,
		.max_unauth = 3, .hello_ms = 500, .idle_ms = 2000,
		.clock = fake_clock };
	struct cats_listener *l = cats_listener_new(base, &o, &cbs, NULL);
	T_OK(l != NULL && cats_listener_add(l, lfd, 7) == 0, "listener made");
	const struct cats_listener_stats *st = cats_listener_stats(l);

	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	T_OK(rl.rlim_cur == rl.rlim_max || rl.rlim_max > (1u << 20),
	    "the soft descriptor limit was raised to the hard one (%llu of "
	    "%llu)", (unsigned long long)rl.rlim_cur,
	    (unsigned long long)rl.rlim_max);

	/* Five unauthenticated clients, cap 3: the two oldest evicted. */
	int cl[16];
	for (int i = 0; i < 5; i++) {
		cl[i] = connect_to(&ep);
		fake_now += 10;
		spin(base);
	}
	T_OK(st->accepted == 5 && st->evicted == 2 && st->open == 3 &&
	    st->unauth == 3 && nobj == 3, "unauthenticated cap: %llu accepted, "
	    "%llu evicted, %zu open", (unsigned long long)st->accepted,
	    (unsigned long long)st->evicted, st->open);
	T_OK(closed_by_server(cl[0]) && closed_by_server(cl[1]) &&
	    !closed_by_server(cl[2]), "the oldest two were closed");
	T_OK(last_why == CATS_CONN_EVICTED, "closed as evicted");
	T_OK(cats_conn_tag(nth(l, 0)) == 7, "the connection's tag");
	char peer[64];
	cats_conn_peer(nth(l, 0), peer, sizeof(peer));
	T_OK(strncmp(peer, "127.0.0.1:", 10) == 0, "peer %s", peer);
	/* Both ends of a tcp: record stream without Nagle (a batch a turn
	 * waited for the peer's delayed ACK behind an unacknowledged one). */
	{
		int on_c = 0, on_s = 0;
		socklen_t ol = sizeof(on_c);
		struct cats_conn *cn = nth(l, 2);
		struct obj *ob = cn ? cats_conn_data(cn) : NULL;
		getsockopt(cl[4], IPPROTO_TCP, TCP_NODELAY, &on_c, &ol);
		ol = sizeof(on_s);
		if (ob != NULL)
			getsockopt(ob->fd, IPPROTO_TCP, TCP_NODELAY, &on_s,
			    &ol);
		T_OK(on_c && on_s, "TCP_NODELAY on the connecting (%d) and the "
		    "accepted (%d) socket", on_c, on_s);
	}

	/* Authenticate the oldest left (cl[2]); the deadline passes for the
	 * other two. */
	struct cats_conn *c2 = nth(l, 0);
	cats_conn_auth(c2);
	T_OK(cats_conn_authed(c2) && st->unauth == 2, "authenticated");
	fake_now += 400;
	cats_listener_tick(l);
	T_OK(st->hello_timeouts == 0, "not before the hello deadline");
	fake_now += 100;
	cats_listener_tick(l);
	T_OK(st->hello_timeouts == 2 && st->open == 1 &&
	    last_why == CATS_CONN_HELLO_TIMEOUT, "hello deadline: %llu closed",
	    (unsigned long long)st->hello_timeouts);
	T_OK(closed_by_server(cl[3]) && closed_by_server(cl[4]) &&
	    !closed_by_server(cl[2]), "the unauthenticated ones were closed");

	/* Authenticated connections are never evicted: fill the cap of 6
	 * with authenticated ones, the next is refused. */
	for (int i = 5; i < 10; i++) {
		cl[i] = connect_to(&ep);
		spin(base);
		cats_conn_auth(nth(l, (int)st->open - 1));
	}
	T_OK(st->open == 6 && st->unauth == 0, "six authenticated");
	cl[10] = connect_to(&ep);
	spin(base);
	T_OK(st->refused == 1 && st->open == 6 && closed_by_server(cl[10]),
	    "the seventh refused: %llu", (unsigned long long)st->refused);

	/* Idle: touched ones stay, the others go. */
	fake_now += 1500;
	for (struct cats_conn *c = nth(l, 1); c != NULL; c = cats_conn_next(c))
		cats_conn_touch(c);
	fake_now += 600;
	cats_listener_tick(l);
	T_OK(st->idle_timeouts == 1 && st->open == 5 &&
	    last_why == CATS_CONN_IDLE && closed_by_server(cl[2]),
	    "idle timeout: the untouched one closed");

	/* The owner closes one itself. */
	struct cats_conn *c5 = nth(l, 0);
	struct obj *ob = cats_conn_data(c5);
	close(ob->fd);
	free(ob);
	nobj--;
	cats_conn_release(c5);
	T_OK(st->open == 4, "released by its owner");

	/* An owner that refuses: closed, not kept. */
	refuse_next = true;
	cl[11] = connect_to(&ep);
	spin(base);
	T_OK(st->open == 4 && closed_by_server(cl[11]), "refused by its owner");

	/*
	 * Descriptors exhausted: with one unauthenticated connection to give
	 * up, accept evicts it and goes on; with none, the waiting one is
	 * shed on the reserve descriptor and accepting pauses (no spin).
	 */
	cl[12] = connect_to(&ep);
	spin(base);
	T_OK(st->unauth == 1, "one unauthenticated");
	struct rlimit low = rl;
	int top;
	/* The client needs a descriptor; then the server has none. */
	cl[13] = connect_to(&ep);
	top = dup(0);
	close(top);
	low.rlim_cur = (rlim_t)top;
	setrlimit(RLIMIT_NOFILE, &low);
	uint64_t ev0 = st->evicted;
	spin(base);
	T_OK(st->fd_exhausted >= 1 && st->evicted == ev0 + 1,
	    "EMFILE: the unauthenticated one evicted (%llu exhausted, %llu "
	    "evicted, %zu open, %llu shed)",
	    (unsigned long long)st->fd_exhausted,
	    (unsigned long long)(st->evicted - ev0), st->open,
	    (unsigned long long)st->shed);
	T_OK(st->open == 5 && st->unauth == 1, "and the new one taken");
	/* Now nothing to evict: authenticate it, exhaust again. */
	cats_conn_auth(nth(l, (int)st->open - 1));
	setrlimit(RLIMIT_NOFILE, &rl);
	cl[14] = connect_to(&ep);
	cl[15] = connect_to(&ep);
	top = dup(0);
	close(top);
	low.rlim_cur = (rlim_t)top;
	setrlimit(RLIMIT_NOFILE, &low);
	uint64_t ex0 = st->fd_exhausted;
	spin(base);
	T_OK(st->fd_exhausted == ex0 + 1 && st->shed == 1,
	    "EMFILE, nothing to evict: one shed, accepting paused "
	    "(%llu exhausted, %llu shed)",
	    (unsigned long long)(st->fd_exhausted - ex0),
	    (unsigned long long)st->shed);
	setrlimit(RLIMIT_NOFILE, &rl);
	T_OK(closed_by_server(cl[14]), "the shed client sees a close");
	spin(base);
	T_OK(st->open == 5, "paused: the other waits in the backlog");
	fake_now += 100;
	cats_listener_tick(l);
	spin(base);
	T_OK(st->open == 6 && !closed_by_server(cl[15]),
	    "after the pause it is accepted");

	cats_listener_free(l);
	T_OK(nobj == 0, "every connection closed at the end (%d left)", nobj);

	/* A protocol without a hello: quiet ones wait unless crowded. */
	struct cats_listener_opts q = { .name = "quiet", .max_conns = 8,
		.max_unauth = 4, .hello_ms = 500, .clock = fake_clock,
		.hello_when_crowded = true };
	l = cats_listener_new(base, &q, &cbs, NULL);
	cats_listener_add(l, lfd, 0);
	st = cats_listener_stats(l);
	int qc[3];
	for (int i = 0; i < 2; i++)
		qc[i] = connect_to(&ep);
	spin(base);
	fake_now += 10000;
	cats_listener_tick(l);
	T_OK(st->open == 2 && st->hello_timeouts == 0,
	    "two quiet ones of a cap of 4 stay past the deadline");
	qc[2] = connect_to(&ep);
	spin(base);
	fake_now += 600;
	cats_listener_tick(l);
	T_OK(st->open == 2 && st->hello_timeouts == 1 &&
	    closed_by_server(qc[0]) && !closed_by_server(qc[1]),
	    "crowded: the oldest closed at its deadline, down to half the cap");
	cats_listener_free(l);
	for (int i = 0; i < 3; i++)
		close(qc[i]);
	T_OK(nobj == 0, "all closed");
	for (int i = 0; i < 16; i++)
		if (cl[i] >= 0)
			close(cl[i]);
	close(lfd);
	event_base_free(base);
	return t_done();
}
