/*
 * test_misc.c - configuration syntax, value parsers, endpoints, hash table,
 * arena, clock, the rate-limited audit line, the heap reserve, connects on
 * a running loop.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/clock.h"
#include "base/conf.h"
#include "net/ep.h"
#include "base/htab.h"
#include "base/log.h"
#include "t.h"
#include "base/tool.h"

static void
test_conf(void)
{
	struct cats_conf c;
	char err[256];
	const char *text =
	    "# site agent\n"
	    "id = sma-1\n"
	    "ttl = 2s   # comment\n"
	    "\n"
	    "[sci \"188.3.67.3:67\"]\n"
	    "url = \"http://127.0.0.1:8080/m#x\"\n"
	    "cs = ARS\n"
	    "cs = VRS\n"
	    "[limits]\n"
	    "max = 64k\n";
	T_OK(cats_conf_parse(&c, "t.conf", text, strlen(text), err,
	    sizeof(err)) == 0, "config parses");
	T_OK(c.n == 6, "six entries (%zu)", c.n);
	T_OK(strcmp(c.v[1].val, "2s") == 0 && c.v[1].line == 3,
	    "trailing comment stripped, line kept");
	T_OK(strcmp(c.v[2].section, "sci") == 0 &&
	    strcmp(c.v[2].arg, "188.3.67.3:67") == 0 &&
	    strcmp(c.v[2].val, "http://127.0.0.1:8080/m#x") == 0,
	    "section argument and quoted value");
	T_OK(strcmp(c.v[4].val, "VRS") == 0, "repeated keys kept in order");
	uint64_t v;
	T_OK(cats_parse_size(c.v[5].val, &v, err, sizeof(err)) == 0 &&
	    v == 65536, "64k");
	cats_conf_errf(&c, &c.v[5], err, sizeof(err), "too big");
	T_OK(strcmp(err, "t.conf:10: max: too big") == 0, "error names "
	    "file:line: key (%s)", err);
	cats_conf_free(&c);
	static const struct { const char *text, *where; } bad[] = {
		{ "[sci\n", "t.conf:1:" },
		{ "a = 1\nnovalue\n", "t.conf:2:" },
		{ "= 1\n", "t.conf:1:" },
		{ "a b = 1\n", "t.conf:1:" },
		{ "[sci x]\n", "t.conf:1:" },
		{ "a = \"open\n", "t.conf:1:" },
		{ "[]\n", "t.conf:1:" },
	};
	for (size_t i = 0; i < CATS_ARRAY_LEN(bad); i++) {
		int rc = cats_conf_parse(&c, "t.conf", bad[i].text,
		    strlen(bad[i].text), err, sizeof(err));
		T_OK(rc < 0 && strncmp(err, bad[i].where,
		    strlen(bad[i].where)) == 0, "bad config %zu: %s", i, err);
	}
}

static void
test_parsers(void)
{
	uint64_t v;
	bool b;
	char err[128];
	T_OK(cats_parse_ms("250ms", &v, err, sizeof(err)) == 0 && v == 250,
	    "250ms");
	T_OK(cats_parse_ms("2s", &v, err, sizeof(err)) == 0 && v == 2000, "2s");
	T_OK(cats_parse_ms("5m", &v, err, sizeof(err)) == 0 && v == 300000,
	    "5m");
	T_OK(cats_parse_ms("100", &v, err, sizeof(err)) == 0 && v == 100,
	    "bare ms");
	T_OK(cats_parse_ms("2x", &v, err, sizeof(err)) < 0, "bad unit");
	T_OK(cats_parse_ms("-1s", &v, err, sizeof(err)) < 0, "negative");
	T_OK(cats_parse_ms("99999999999999999999h", &v, err, sizeof(err)) < 0,
	    "overflow");
	T_OK(cats_parse_u64("70000", 0, 65535, &v, err, sizeof(err)) < 0 &&
	    strstr(err, "out of range"), "range: %s", err);
	T_OK(cats_parse_bool("off", &b, err, sizeof(err)) == 0 && !b, "off");
	T_OK(cats_parse_ppm("0.8", 1000000, &v, err, sizeof(err)) == 0 &&
	    v == 800000, "0.8 = 800000 ppm");
	T_OK(cats_parse_ppm("1.5", 1000000, &v, err, sizeof(err)) < 0,
	    "above the maximum");
	T_OK(cats_parse_ppm(".5", 1000000, &v, err, sizeof(err)) < 0,
	    "needs a leading digit");
}

static void
test_endpoints(void)
{
	struct cats_ep ep;
	char err[256], buf[300];
	T_OK(cats_ep_parse("-", &ep, err, sizeof(err)) == 0 &&
	    ep.kind == CATS_EP_STDIO, "-");
	T_OK(cats_ep_parse("unix:/run/cats/bind.sock", &ep, err,
	    sizeof(err)) == 0 && ep.kind == CATS_EP_UNIX &&
	    strcmp(ep.path, "/run/cats/bind.sock") == 0, "unix:PATH");
	T_OK(cats_ep_parse("tcp:127.0.0.1:9000", &ep, err, sizeof(err)) == 0 &&
	    strcmp(ep.host, "127.0.0.1") == 0 && strcmp(ep.port, "9000") == 0,
	    "tcp:HOST:PORT");
	T_OK(cats_ep_parse("udp:[::1]:53", &ep, err, sizeof(err)) == 0 &&
	    ep.kind == CATS_EP_UDP && strcmp(ep.host, "::1") == 0 &&
	    strcmp(cats_ep_str(&ep, buf, sizeof(buf)), "udp:[::1]:53") == 0,
	    "udp:[v6]:PORT and back");
	T_OK(cats_ep_parse("https://cps.example/metrics", &ep, err,
	    sizeof(err)) == 0 && ep.kind == CATS_EP_HTTPS, "https URL");
	T_OK(cats_ep_parse("file:/tmp/x", &ep, err, sizeof(err)) == 0 &&
	    ep.kind == CATS_EP_FILE, "file:PATH");
	static const char *const bad[] = { "tcp:1.2.3.4", "tcp::80",
		"tcp:host:99999", "udp:::1:53", "unix:", "ftp://x", "tcp:h:8x",
		"/tmp/sock" };
	for (size_t i = 0; i < CATS_ARRAY_LEN(bad); i++)
		T_OK(cats_ep_parse(bad[i], &ep, err, sizeof(err)) < 0,
		    "refused \"%s\": %s", bad[i], err);
	/* Listen and connect on a unix socket. */
	T_OK(cats_ep_parse("unix:/tmp/cats-test-ep.sock", &ep, err,
	    sizeof(err)) == 0, "parse");
	int l = cats_ep_listen(&ep, err, sizeof(err));
	int c = cats_ep_open(&ep, true, err, sizeof(err));
	T_OK(l >= 0 && c >= 0, "listen and connect on unix");
	close(c);
	close(l);
	l = cats_ep_listen(&ep, err, sizeof(err));
	T_OK(l >= 0, "a stale socket file is replaced");
	close(l);
	unlink("/tmp/cats-test-ep.sock");
	T_OK(cats_ep_parse("udp:127.0.0.1:0", &ep, err, sizeof(err)) == 0 &&
	    (l = cats_ep_listen(&ep, err, sizeof(err))) >= 0, "udp bind");
	close(l);
}

struct item {
	uint64_t key;
};

static bool
item_eq(const void *a, const void *key)
{
	return ((const struct item *)a)->key == *(const uint64_t *)key;
}

static void
test_htab(void)
{
	struct cats_htab t = { 0 };
	enum { N = 20000 };
	struct item *items = calloc(N, sizeof(*items));
	for (uint64_t i = 0; i < N; i++) {
		items[i].key = i * 7919;
		cats_htab_put(&t, cats_hash(&items[i].key, 8), &items[i]);
	}
	T_OK(t.n == N, "%d items in", N);
	int found = 0;
	for (uint64_t i = 0; i < N; i++) {
		uint64_t k = i * 7919;
		found += cats_htab_get(&t, cats_hash(&k, 8), item_eq, &k) ==
		    &items[i];
	}
	T_OK(found == N, "all found");
	/* Delete every other one; the rest stay reachable. */
	for (uint64_t i = 0; i < N; i += 2) {
		uint64_t k = i * 7919;
		cats_htab_del(&t, cats_hash(&k, 8), item_eq, &k);
	}
	found = 0;
	int gone = 0;
	for (uint64_t i = 0; i < N; i++) {
		uint64_t k = i * 7919;
		void *p = cats_htab_get(&t, cats_hash(&k, 8), item_eq, &k);
		if (i % 2)
			found += p == &items[i];
		else
			gone += p == NULL;
	}
	T_OK(found == N / 2 && gone == N / 2 && t.n == N / 2,
	    "backward-shift deletion keeps the rest reachable");
	cats_htab_free(&t);
	free(items);
}

static void
test_arena_clock(void)
{
	struct cats_arena a = { .cap = 1 << 16 };
	T_OK(cats_arena_alloc(&a, 1 << 17) == NULL, "arena cap holds");
	char *s = cats_arena_strndup(&a, "hello", 5);
	T_OK(s && strcmp(s, "hello") == 0, "strndup");
	cats_arena_reset(&a);
	T_OK(a.used == 0, "reset");
	cats_arena_free(&a);
	cats_clock_set_mode(CATS_CLOCK_REPLAY);
	cats_clock_set(100);
	cats_clock_observe(90);
	T_OK(cats_clock_now() == 100, "replay clock never goes back");
	cats_clock_observe(150);
	T_OK(cats_clock_now() == 150, "replay clock follows records");
	cats_clock_set_mode(CATS_CLOCK_REAL);
	T_OK(cats_clock_now() > 1700000000000ull, "real clock in ms");
}

/* Count the lines of path that contain needle. */
static int
lines_with(const char *path, const char *needle)
{
	char line[1024];
	int n = 0;
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/*
 * cats_audit_limited(): a burst, then the rate; the lines left out are
 * said by the next line written; another event has its own bucket.
 */
static void
test_audit_limited(void)
{
	char path[] = "/tmp/cats-test-audit-XXXXXX", spec[64];
	int fd = mkstemp(path);
	T_OK(fd >= 0, "audit file");
	close(fd);
	snprintf(spec, sizeof(spec), "file:%s", path);
	T_OK(cats_audit_open(spec) == 0, "audit to a file");
	cats_clock_set_mode(CATS_CLOCK_REPLAY);
	cats_clock_set(1000000);
	uint64_t c0 = cats_audit_count();
	for (int i = 0; i < 100; i++)
		cats_audit_limited("t-refused", "i=%d", i);
	cats_audit_limited("t-other", "i=0");
	T_OK(cats_audit_count() - c0 == CATS_AUDIT_LIMIT_BURST + 1,
	    "a burst of %d written, then none; another event its own",
	    CATS_AUDIT_LIMIT_BURST);
	cats_clock_set(1000000 + 1000 / CATS_AUDIT_LIMIT_RATE);
	cats_audit_limited("t-refused", "i=100");
	cats_audit_limited("t-refused", "i=101");
	cats_audit_limited("t-other", "i=1");
	cats_audit_open("stderr");
	cats_clock_set_mode(CATS_CLOCK_REAL);
	T_OK(lines_with(path, "event=t-refused") == CATS_AUDIT_LIMIT_BURST + 1,
	    "a token a tenth of a second later: one more line");
	T_OK(lines_with(path, "event=t-refused i=100 unlogged=68") == 1,
	    "which says the 68 left out");
	T_OK(lines_with(path, "unlogged") == 1, "and no other line does");
	T_OK(lines_with(path, "event=t-other") == 2, "t-other not limited");
	unlink(path);
}

#if defined(__SANITIZE_ADDRESS__)
#define T_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define T_ASAN 1
#endif
#endif

#ifndef T_ASAN
static long
minor_faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}
#endif

/*
 * After cats_tool_reserve, allocating that much in bindings' sizes takes
 * no page faults (a reserve that is not touched, say because the compiler
 * dropped a memset before free, would take one per page).
 */
static void
test_reserve(void)
{
#ifdef T_ASAN
	printf("# ok - skipped: the sanitizer's allocator has no reserve\n");
#else
	enum { SIZE = 1168, N = 6000 };
	static void *p[N];
	T_OK(cats_tool_reserve((size_t)N * (SIZE + 64)) == 0, "reserve taken");
	long before = minor_faults();
	for (int i = 0; i < N; i++)
		p[i] = malloc(SIZE);
	long faults = minor_faults() - before;
	T_OK(faults < N * SIZE / 4096 / 20, "%d allocations of %d bytes "
	    "from the reserve: %ld page faults (%d pages)", N, SIZE, faults,
	    N * SIZE / 4096);
	for (int i = 0; i < N; i++)
		free(p[i]);
	T_OK(cats_tool_reserve(0) == 0, "an empty reserve is nothing to do");
#endif
}

/* What cats_ep_connect's callback said. */
struct conn_seen {
	int calls, fd;
	char why[400];
};

static void
conn_done(void *arg, int fd, const char *why)
{
	struct conn_seen *r = arg;
	r->calls++;
	r->fd = fd;
	snprintf(r->why, sizeof(r->why), "%s", why ? why : "");
}

/* Run base until the callback came (a guard of 100 turns of 100 ms). */
static void
conn_wait(struct event_base *base, const struct conn_seen *r)
{
	struct timeval tv = { 0, 100000 };
	for (int i = 0; i < 100 && r->calls == 0; i++) {
		event_base_loopexit(base, &tv);
		event_base_dispatch(base);
	}
}

/*
 * cats_ep_connect: a unix: listener whose backlog is full, and a tcp:
 * one whose accept queue is full (the kernel drops the SYNs), never hold
 * the caller; each connects once there is room again.
 */
static void
test_connect(void)
{
	struct event_base *base = event_base_new();
	struct cats_ep ep;
	char err[400];
	struct conn_seen r;
	T_OK(base != NULL, "an event base");
	char path[64], spec0[80];
	snprintf(path, sizeof(path), "/tmp/cats-test-conn.%d.sock",
	    (int)getpid());
	snprintf(spec0, sizeof(spec0), "unix:%s", path);
	unlink(path);
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	int l = socket(AF_UNIX, SOCK_STREAM, 0);
	T_OK(l >= 0 && bind(l, (struct sockaddr *)&sun, sizeof(sun)) == 0 &&
	    listen(l, 0) == 0, "a unix listener of backlog 0");
	/* Fill its backlog: a non-blocking connect says EAGAIN once full. */
	int fill[8], nfill = 0;
	while (nfill < 8) {
		int f = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (connect(f, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
			T_OK(errno == EAGAIN, "the backlog fills (%s)",
			    strerror(errno));
			close(f);
			break;
		}
		fill[nfill++] = f;
	}
	T_OK(nfill >= 1 && nfill < 8, "%d connects fill it", nfill);
	cats_ep_parse(spec0, &ep, err, sizeof(err));
	memset(&r, 0, sizeof(r));
	int fd = cats_ep_connect(base, &ep, 200, conn_done, &r, err,
	    sizeof(err));
	T_OK(fd < 0 && strstr(err, "backlog is full") != NULL && r.calls == 0,
	    "a full backlog fails at once: %s", err);
	/* Room again: connected, said from the loop, not from the call. */
	int a = accept(l, NULL, NULL);
	T_OK(a >= 0, "one accepted");
	close(a);
	fd = cats_ep_connect(base, &ep, 200, conn_done, &r, err, sizeof(err));
	T_OK(fd >= 0 && r.calls == 0, "room again: under way (%s)",
	    fd < 0 ? err : "");
	conn_wait(base, &r);
	T_OK(r.calls == 1 && r.fd == fd && r.why[0] == '\0',
	    "connected, from the loop (%s)", r.why);
	if (r.fd >= 0)
		close(r.fd);
	for (int i = 0; i < nfill; i++)
		close(fill[i]);
	close(l);
	unlink(path);
	memset(&r, 0, sizeof(r));
	fd = cats_ep_connect(base, &ep, 200, conn_done, &r, err, sizeof(err));
	T_OK(fd < 0 && r.calls == 0, "nobody listening: at once: %s", err);

	/* tcp: an accept queue of one, full: the next SYN is dropped. */
	struct sockaddr_in sin = { .sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sin);
	l = socket(AF_INET, SOCK_STREAM, 0);
	T_OK(l >= 0 && bind(l, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    listen(l, 0) == 0 && getsockname(l, (struct sockaddr *)&sin,
	    &sl) == 0, "a tcp listener of backlog 0");
	int f = socket(AF_INET, SOCK_STREAM, 0);
	T_OK(connect(f, (struct sockaddr *)&sin, sizeof(sin)) == 0,
	    "its queue filled");
	char spec[64];
	snprintf(spec, sizeof(spec), "tcp:127.0.0.1:%u", ntohs(sin.sin_port));
	cats_ep_parse(spec, &ep, err, sizeof(err));
	memset(&r, 0, sizeof(r));
	fd = cats_ep_connect(base, &ep, 200, conn_done, &r, err, sizeof(err));
	T_OK(fd >= 0 && r.calls == 0, "a tcp: connect under way (%s)",
	    fd < 0 ? err : "");
	conn_wait(base, &r);
	T_OK(r.calls == 1 && r.fd < 0 && strstr(r.why, "no answer to the "
	    "connect in 200 ms") != NULL, "given up at its deadline: %s",
	    r.why);
	/* Room again: the next try connects. */
	a = accept(l, NULL, NULL);
	close(a);
	close(f);
	memset(&r, 0, sizeof(r));
	fd = cats_ep_connect(base, &ep, 2000, conn_done, &r, err, sizeof(err));
	conn_wait(base, &r);
	T_OK(r.calls == 1 && r.fd >= 0, "room again: connected (%s)", r.why);
	if (r.fd >= 0)
		close(r.fd);
	close(l);
	cats_ep_parse("file:/tmp/x", &ep, err, sizeof(err));
	T_OK(cats_ep_connect(base, &ep, 200, conn_done, &r, err,
	    sizeof(err)) < 0, "a file: is no socket: %s", err);
	event_base_free(base);
}

int
main(void)
{
	test_conf();
	test_parsers();
	test_endpoints();
	test_htab();
	test_arena_clock();
	test_audit_limited();
	test_reserve();
	test_connect();
	return t_done();
}
