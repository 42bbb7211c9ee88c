/*
 * tcpload - a TCP load generator for bench/loop.sh (and tests): one
 * process, epoll, every connection a new flow (a new 5-tuple), so that each
 * one goes through the whole loop (the ingress holds the SYN until its
 * binding is installed) or the kernel's conntrack path; and the sink it
 * talks to.
 *
 *   tcpload sink ADDR PORT
 *       Accept on ADDR:PORT (backlog 65535); a connection that sends a
 *       request gets "HTTP/1.0 200 OK ... ok" and is closed, one that sends
 *       nothing is closed when the client goes.
 *   tcpload [-c N | -r RATE | -b N] [-d SEC] [-n FLOWS] [-p SPORT0] [-q]
 *           [-t MS] [-o FILE] [-e FILE] DST PORT SRC...
 *       -c N     closed loop: N clients, each with one connection in flight
 *                at a time, the next one started as soon as it ends (1; a
 *                client whose connect() fails at once, or that is out of
 *                ports, stops: counted, not retried in a spin);
 *       -r RATE  open loop: a new flow every 1/RATE s (timerfd), however
 *                many are still in flight (flows 2 ms apart: -r 500);
 *       -b N     a burst: N flows started at once, then their ends awaited;
 *       -d SEC   how long flows are started (3; -c and -r);
 *       -n FLOWS stop starting flows after FLOWS (-c and -r);
 *       -p PORT  each source address takes its ports in turn from PORT on
 *                (20000), never one twice in a run: a repeated 5-tuple is
 *                a reused flow, not a new one (cats-fwd(1));
 *       -q       each connection sends a request and waits for the first
 *                byte of the answer before it closes (connect/request/close);
 *       -t MS    a connect (or, with -q, an answer) not done by then fails
 *                as a timeout (3000);
 *       -o FILE  every connect delay (us, sorted), one a line, for
 *                bench/plot.sh;
 *       -e FILE  every flow as it ends, one a line: "START END RESULT",
 *                wall-clock ms (date +%s%3N) of connect() and of its end,
 *                RESULT ok, refused, unreach, timeout or other (a
 *                restart's outage against the moment of the kill).
 *       SRC is an address or a range A.B.C.D-E; client i (flow i with -r
 *       and -b) uses the sources in turn.  Connections are reset when done
 *       (SO_LINGER 0: no TIME_WAIT).
 *
 * The delay is the connect time: connect() called to the connection
 * established (SYN sent, SYN-ACK back, as the client's event loop sees it:
 * through the loop, the first packet's delay plus the way back).  With -q
 * resp_p50/p99 are connect() called to the first byte of the answer.
 *
 * One line on stdout, key=value:
 *   tcpload mode=M flows=STARTED ok=DONE failed=F refused=R unreach=U
 *   timeout=T other=O noport=P rate=OK_PER_S span_s=S delay=connect
 *   p50_us= p99_us= max_us= [resp_p50_us= resp_p99_us=] gap_ms=G
 * flows = ok + failed, always (nothing in flight at the end is dropped from
 * the count: the run waits for it, up to -t); failed = refused (RST:
 * ECONNREFUSED/ECONNRESET), unreach (an ICMP error: EHOSTUNREACH,
 * ENETUNREACH, ...), timeout, other (any other error, e.g. the answer cut
 * short) and noport (a source address out of ports).  rate is ok / span;
 * span from the first start to the last end.  gap_ms is the longest time
 * between two successive connects established (the first start counts as
 * one): a restart's outage under -r (a run that ends in failures does not
 * count the end as one: see -e).  p50 etc. are of the established connects;
 * "none" when there is none.  Exit 0 when it ran (whatever failed), 2 on
 * bad arguments, 1 when it could not run at all.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define MAXSRC 1024
#define REQ "GET / HTTP/1.0\r\nHost: s1\r\n\r\n"
#define ANSWER "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n"

static int64_t
now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* ---- the sink ---- */

static int
sink(const char *addr, const char *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int one = 1;
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1 || atoi(port) <= 0 ||
	    atoi(port) > 65535) {
		fprintf(stderr, "tcpload: sink: bad address %s:%s\n", addr, port);
		return 2;
	}
	sa.sin_port = htons((uint16_t)atoi(port));
	raise_nofile();
	int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 65535)) {
		fprintf(stderr, "tcpload: sink: %s:%s: %s\n", addr, port,
		    strerror(errno));
		return 1;
	}
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = l };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev)) {
		perror("tcpload: sink: epoll");
		return 1;
	}
	struct epoll_event evs[256];
	for (;;) {
		int n = epoll_wait(ep, evs, 256, -1);
		if (n < 0 && errno != EINTR) {
			perror("tcpload: sink: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == l) {
				int c;
				while ((c = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					ev.events = EPOLLIN;
					ev.data.fd = c;
					if (epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev))
						close(c);
				}
				continue;
			}
			char b[512];
			ssize_t r = read(fd, b, sizeof(b));
			if (r < 0 && errno == EAGAIN)
				continue;
			if (r > 0 && write(fd, ANSWER, sizeof(ANSWER) - 1) < 0) {
				/* the client went: nothing to answer */
			}
			close(fd);
		}
	}
}

/* ---- the generator ---- */

enum { F_FREE, F_CONNECT, F_ANSWER };

struct flow {
	int64_t t0;		/* connect() called */
	int state;
	unsigned client;	/* closed loop: whose flow */
	int prev, next;		/* the in-flight list, oldest first (fds) */
};

struct samples {
	uint32_t *v;
	size_t n, cap;
};

static struct {
	struct sockaddr_in dst;
	struct in_addr src[MAXSRC];
	unsigned nsrc;
	unsigned nextport[MAXSRC];
	unsigned sport0;
	int request;
	int64_t timeout_ns;
	int ep;
	struct flow *f;		/* indexed by fd */
	int nf;
	int head, tail;		/* in-flight list */
	unsigned inflight;
	uint64_t started, ok, refused, unreach, timeouts, other, noport;
	struct samples conn, resp;
	int64_t tstart, tlast, lastok, gap;
	FILE *events;		/* -e */
	int64_t wall0;		/* wall-clock ms - monotonic ms */
} G;

static void
push(struct samples *s, int64_t ns)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4096;
		s->v = realloc(s->v, s->cap * sizeof(*s->v));
		if (!s->v) {
			perror("tcpload: samples");
			exit(1);
		}
	}
	int64_t us = ns / 1000;
	s->v[s->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static void
list_del(int fd)
{
	struct flow *f = &G.f[fd];
	if (f->prev >= 0)
		G.f[f->prev].next = f->next;
	else
		G.head = f->next;
	if (f->next >= 0)
		G.f[f->next].prev = f->prev;
	else
		G.tail = f->prev;
}

/* What ended a flow (0: done): a cause of the summary line. */
enum { C_OK, C_REFUSED, C_UNREACH, C_TIMEOUT, C_OTHER };
static const char *const cause_name[] = { "ok", "refused", "unreach",
	"timeout", "other" };

static int
cause(int err)
{
	switch (err) {
	case 0:
		return C_OK;
	case ECONNREFUSED:
	case ECONNRESET:
		return C_REFUSED;
	case EHOSTUNREACH:
	case ENETUNREACH:
	case EHOSTDOWN:
	case ENETDOWN:
	case EACCES:
	case EPERM:
	case EPROTO:
		return C_UNREACH;
	case ETIMEDOUT:
		return C_TIMEOUT;
	default:
		return C_OTHER;
	}
}

/* A flow ends: counted under what ended it, its socket reset. */
static void
flow_end(int fd, int err, int64_t now)
{
	struct flow *f = &G.f[fd];
	int c = cause(err);
	list_del(fd);
	f->state = F_FREE;
	G.inflight--;
	G.tlast = now;
	if (G.events)
		fprintf(G.events, "%" PRId64 " %" PRId64 " %s\n",
		    f->t0 / 1000000 + G.wall0, now / 1000000 + G.wall0,
		    cause_name[c]);
	uint64_t *n[] = { &G.ok, &G.refused, &G.unreach, &G.timeouts, &G.other };
	(*n[c])++;
	close(fd);
}

/* Start one flow from source S; false when it could not (counted). */
static int
flow_start(unsigned s, unsigned client)
{
	static const struct linger lz = { 1, 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		static int told;
		if (told++ < 3)
			fprintf(stderr, "tcpload: socket: %s\n", strerror(errno));
		G.started++;
		G.other++;
		return 0;
	}
	if (fd >= G.nf) {
		fprintf(stderr, "tcpload: more sockets than the table (%d)\n", G.nf);
		close(fd);
		G.started++;
		G.other++;
		return 0;
	}
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lz, sizeof(lz));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr = G.src[s] };
	for (;;) {
		if (G.nextport[s] > 65535) {
			close(fd);
			G.started++;
			G.noport++;
			return 0;
		}
		sa.sin_port = htons((uint16_t)G.nextport[s]++);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		if (errno != EADDRINUSE) {
			static int told;	/* the first few: all are counted */
			if (told++ < 3)
				fprintf(stderr, "tcpload: bind %s: %s\n",
				    inet_ntoa(G.src[s]), strerror(errno));
			close(fd);
			G.started++;
			G.other++;
			return 0;
		}
	}
	struct flow *f = &G.f[fd];
	f->t0 = now_ns();
	f->client = client;
	f->state = F_CONNECT;
	f->next = -1;
	f->prev = G.tail;
	if (G.tail >= 0)
		G.f[G.tail].next = fd;
	else
		G.head = fd;
	G.tail = fd;
	G.inflight++;
	G.started++;
	if (!G.tstart)
		G.tstart = G.lastok = f->t0;
	int r = connect(fd, (struct sockaddr *)&G.dst, sizeof(G.dst));
	if (r < 0 && errno != EINPROGRESS) {
		flow_end(fd, errno, now_ns());
		return 1;
	}
	struct epoll_event ev = { .events = EPOLLOUT, .data.fd = fd };
	if (epoll_ctl(G.ep, EPOLL_CTL_ADD, fd, &ev)) {
		flow_end(fd, errno, now_ns());
		return 1;
	}
	return 1;
}

/* An event on flow FD; returns true when the flow ended. */
static int
flow_event(int fd, uint32_t events)
{
	struct flow *f = &G.f[fd];
	int64_t now = now_ns();
	int err = 0;
	socklen_t l = sizeof(err);
	if (f->state == F_CONNECT) {
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
			err = errno;
		if (!err && (events & (EPOLLERR | EPOLLHUP)))
			err = ECONNRESET;
		if (err) {
			flow_end(fd, err, now);
			return 1;
		}
		push(&G.conn, now - f->t0);
		if (now - G.lastok > G.gap)
			G.gap = now - G.lastok;
		G.lastok = now;
		if (!G.request) {
			flow_end(fd, 0, now);
			return 1;
		}
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
		errno = 0;
		if (write(fd, REQ, sizeof(REQ) - 1) != sizeof(REQ) - 1 ||
		    epoll_ctl(G.ep, EPOLL_CTL_MOD, fd, &ev)) {
			flow_end(fd, errno ? errno : EPROTO, now);
			return 1;
		}
		f->state = F_ANSWER;
		return 0;
	}
	char b[512];
	ssize_t r = read(fd, b, sizeof(b));
	if (r < 0 && errno == EAGAIN)
		return 0;
	if (r > 0) {
		push(&G.resp, now - f->t0);
		flow_end(fd, 0, now);
	} else {
		/* EOF before any byte: the answer cut short. */
		flow_end(fd, r == 0 ? EPIPE : errno, now);
	}
	return 1;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The sorted sample n * p / 100 (bench/plot.sh takes the same). */
static void
pct(char *out, size_t len, const struct samples *s, int p)
{
	if (!s->n) {
		snprintf(out, len, "none");
		return;
	}
	size_t i = s->n * (size_t)p / 100;
	snprintf(out, len, "%" PRIu32, s->v[i < s->n ? i : s->n - 1]);
}

static int
add_src(const char *a)
{
	char buf[64];
	const char *dash = strchr(a, '-');
	unsigned lo, hi;
	if (strlen(a) >= sizeof(buf))
		return -1;
	strcpy(buf, a);
	if (dash) {
		buf[dash - a] = 0;
		hi = (unsigned)atoi(dash + 1);
	}
	struct in_addr in;
	if (inet_pton(AF_INET, buf, &in) != 1)
		return -1;
	lo = ntohl(in.s_addr) & 0xff;
	if (!dash)
		hi = lo;
	if (hi < lo || hi > 255)
		return -1;
	for (unsigned i = lo; i <= hi; i++) {
		if (G.nsrc == MAXSRC)
			return -1;
		G.src[G.nsrc].s_addr = htonl((ntohl(in.s_addr) & ~0xffu) | i);
		G.nsrc++;
	}
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: tcpload sink ADDR PORT\n"
	    "       tcpload [-c N | -r RATE | -b N] [-d SEC] [-n FLOWS] "
	    "[-p SPORT0] [-q] [-t MS] [-o FILE] [-e FILE] DST PORT SRC...\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "sink") == 0) {
		if (argc != 4)
			usage();
		return sink(argv[2], argv[3]);
	}
	unsigned clients = 1, burst = 0;
	double rate = 0, secs = 3;
	uint64_t maxflows = 0;
	const char *out = NULL, *evfile = NULL, *mode = "closed";
	long tmo = 3000;
	int c;
	G.sport0 = 20000;
	while ((c = getopt(argc, argv, "b:c:d:e:n:o:p:qr:t:")) != -1) {
		switch (c) {
		case 'b': burst = (unsigned)atoi(optarg); mode = "burst"; break;
		case 'c': clients = (unsigned)atoi(optarg); mode = "closed"; break;
		case 'd': secs = atof(optarg); break;
		case 'e': evfile = optarg; break;
		case 'n': maxflows = strtoull(optarg, NULL, 10); break;
		case 'o': out = optarg; break;
		case 'p': G.sport0 = (unsigned)atoi(optarg); break;
		case 'q': G.request = 1; break;
		case 'r': rate = atof(optarg); mode = "open"; break;
		case 't': tmo = atol(optarg); break;
		default: usage();
		}
	}
	if (argc - optind < 3)
		usage();
	G.dst.sin_family = AF_INET;
	int dport = atoi(argv[optind + 1]);
	if (inet_pton(AF_INET, argv[optind], &G.dst.sin_addr) != 1 ||
	    dport <= 0 || dport > 65535) {
		fprintf(stderr, "tcpload: bad destination %s %s\n",
		    argv[optind], argv[optind + 1]);
		return 2;
	}
	G.dst.sin_port = htons((uint16_t)dport);
	for (int i = optind + 2; i < argc; i++)
		if (add_src(argv[i]) < 0) {
			fprintf(stderr, "tcpload: bad source %s\n", argv[i]);
			return 2;
		}
	if ((!strcmp(mode, "closed") && clients == 0) ||
	    (!strcmp(mode, "open") && rate <= 0) ||
	    (!strcmp(mode, "burst") && burst == 0) || secs <= 0 || tmo <= 0 ||
	    G.sport0 == 0 || G.sport0 > 65535) {
		fprintf(stderr, "tcpload: bad arguments\n");
		return 2;
	}
	for (unsigned i = 0; i < G.nsrc; i++)
		G.nextport[i] = G.sport0;
	G.timeout_ns = (int64_t)tmo * 1000000;
	if (evfile) {
		struct timespec w;
		if (!(G.events = fopen(evfile, "w"))) {
			fprintf(stderr, "tcpload: %s: %s\n", evfile, strerror(errno));
			return 1;
		}
		clock_gettime(CLOCK_REALTIME, &w);
		G.wall0 = (int64_t)w.tv_sec * 1000 + w.tv_nsec / 1000000 -
		    now_ns() / 1000000;
	}
	raise_nofile();
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	G.nf = rl.rlim_cur > 1 << 20 ? 1 << 20 : (int)rl.rlim_cur;
	G.f = calloc((size_t)G.nf, sizeof(*G.f));
	G.ep = epoll_create1(0);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
	if (!G.f || G.ep < 0 || tfd < 0) {
		perror("tcpload: setup");
		return 1;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = tfd };
	epoll_ctl(G.ep, EPOLL_CTL_ADD, tfd, &ev);
	G.head = G.tail = -1;

	int64_t t0 = now_ns(), end = t0 + (int64_t)(secs * 1e9);
	uint64_t nopen = 0;	/* open loop: flows started */
	int starting = 1;
	unsigned nburst = 0;	/* burst: flows started */
	if (!strcmp(mode, "burst")) {
		/* started 64 at a time below, the events of the ones started
		 * read in between: a connect's end is timed when it comes, not
		 * after the last of the burst has been started. */
	} else if (!strcmp(mode, "closed")) {
		for (unsigned i = 0; i < clients; i++)
			flow_start(i % G.nsrc, i);
	} else {
		struct itimerspec its = { .it_value = { 0, 1 } };
		timerfd_settime(tfd, 0, &its, NULL);
	}
	struct epoll_event evs[512];
	for (;;) {
		int64_t now = now_ns();
		if (burst) {
			for (unsigned k = 0; k < 64 && nburst < burst; k++, nburst++)
				flow_start(nburst % G.nsrc, nburst);
			starting = nburst < burst;
			now = now_ns();
		} else if (starting && (now >= end || (maxflows && G.started >= maxflows)))
			starting = 0;
		/* Flows not done in time fail (oldest first). */
		while (G.head >= 0 && now - G.f[G.head].t0 >= G.timeout_ns) {
			int fd = G.head;
			unsigned cl = G.f[fd].client;
			flow_end(fd, ETIMEDOUT, now);
			if (starting && !strcmp(mode, "closed"))
				flow_start(cl % G.nsrc, cl);
		}
		if (!starting && G.inflight == 0)
			break;
		int wait_ms = 1000;
		if (G.head >= 0) {
			int64_t d = G.f[G.head].t0 + G.timeout_ns - now;
			wait_ms = (int)(d / 1000000) + 1;
		}
		if (starting && (end - now) / 1000000 + 1 < wait_ms)
			wait_ms = (int)((end - now) / 1000000) + 1;
		if (burst && starting)
			wait_ms = 0;
		int n = epoll_wait(G.ep, evs, 512, wait_ms);
		if (n < 0 && errno != EINTR) {
			perror("tcpload: epoll_wait");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			if (fd == tfd) {
				uint64_t x;
				if (read(tfd, &x, sizeof(x)) < 0) {
					/* spurious */
				}
				now = now_ns();
				/* Every flow due by now, then the next one's time. */
				while (starting && nopen < (uint64_t)((double)(now - t0) / 1e9 * rate) + 1 &&
				    (!maxflows || G.started < maxflows) && now < end) {
					flow_start((unsigned)(nopen % G.nsrc), 0);
					nopen++;
				}
				if (starting) {
					int64_t due = t0 + (int64_t)((double)nopen / rate * 1e9);
					struct itimerspec its = {
						.it_value = { due / 1000000000, due % 1000000000 } };
					if (due <= now)
						its.it_value = (struct timespec){ 0, 1 };
					timerfd_settime(tfd, due <= now ? 0 : TFD_TIMER_ABSTIME,
					    &its, NULL);
				}
				continue;
			}
			if (G.f[fd].state == F_FREE)
				continue;	/* ended by an earlier event */
			unsigned cl = G.f[fd].client;
			if (flow_event(fd, evs[i].events) && !strcmp(mode, "closed") &&
			    starting && now_ns() < end &&
			    (!maxflows || G.started < maxflows))
				flow_start(cl % G.nsrc, cl);
		}
	}
	if (G.events)
		fclose(G.events);

	qsort(G.conn.v, G.conn.n, sizeof(uint32_t), cmp_u32);
	qsort(G.resp.v, G.resp.n, sizeof(uint32_t), cmp_u32);
	if (out) {
		FILE *o = fopen(out, "w");
		if (!o) {
			fprintf(stderr, "tcpload: %s: %s\n", out, strerror(errno));
		} else {
			fprintf(o, "# connect time us (connect() to established)\n");
			for (size_t i = 0; i < G.conn.n; i++)
				fprintf(o, "%" PRIu32 "\n", G.conn.v[i]);
			fclose(o);
		}
	}
	double span = G.tstart && G.tlast > G.tstart ?
	    (double)(G.tlast - G.tstart) / 1e9 : 0;
	uint64_t failed = G.refused + G.unreach + G.timeouts + G.other + G.noport;
	char p50[24], p99[24], mx[24], r50[24], r99[24];
	pct(p50, sizeof(p50), &G.conn, 50);
	pct(p99, sizeof(p99), &G.conn, 99);
	pct(mx, sizeof(mx), &G.conn, 100);
	printf("tcpload mode=%s flows=%" PRIu64 " ok=%" PRIu64 " failed=%" PRIu64
	    " refused=%" PRIu64 " unreach=%" PRIu64 " timeout=%" PRIu64
	    " other=%" PRIu64 " noport=%" PRIu64 " rate=%.0f span_s=%.3f"
	    " delay=connect p50_us=%s p99_us=%s max_us=%s",
	    mode, G.started, G.ok, failed, G.refused, G.unreach, G.timeouts,
	    G.other, G.noport, span > 0 ? (double)G.ok / span : 0, span,
	    p50, p99, mx);
	if (G.request) {
		pct(r50, sizeof(r50), &G.resp, 50);
		pct(r99, sizeof(r99), &G.resp, 99);
		printf(" resp_p50_us=%s resp_p99_us=%s", r50, r99);
	}
	printf(" gap_ms=%.1f\n", G.lastok ? (double)G.gap / 1e6 : 0.0);
	return 0;
}
