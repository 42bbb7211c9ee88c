/*
 * bench_select.c - cats-select: decisions per second and decision latency.
 *
 * World: 1,000 services x 32 candidates (32,000 CST entries at 10,000 sites),
 * a 10^4-node network view (16 ingress headends x 10,000 egress nodes =
 * 160,000 NST paths; synthetic `net` records until the TE-database provider
 * of cats-pce is plugged in), policies cycling min-latency / p2c-gas /
 * cheapest.
 *
 * Requests pick a service and an ingress at random (16,000 pairs), so
 * that each pair is seen about n / 16,000 times; the world does not change
 * while they run, so after the first request of a pair the eligibility
 * cache of select.c answers (a second row runs with it off).
 *
 * Rows ("name | value | baseline | ratio"):
 *   select decisions/s (library)     cats_sel_request() on decoded requests
 *   select decisions/s (filter)      the cats-select binary as an offline
 *                                    filter: CBOR in, decode, decide, encode
 *                                    (load time subtracted; the median of
 *                                    5 rounds), on n and on 5n requests
 *                                    and with the NST from a 10^4-node TE
 *                                    database (--tedb) instead of records
 *   against the goal of the issue, 500,000 decisions/s on one core;
 *   select p50/p99 latency (us)      requests over a unix socket to a
 *                                    cats-select daemon, 64 in flight, until
 *                                    the path-req leaves on its stdout
 *   against socat relaying the same records from a unix socket to a pipe
 *   (the transport floor).
 * The admission limits are off for the binary (the library has none by
 * default): with the defaults, a replay whose clock stands still refuses
 * all but the first 20,000 requests of the tenant, and the rows would time
 * refusals.  Every request must end in a path-req; the bench says so on
 * stderr when one does not.
 * Benchmarks never assert timings.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "sec/crypto.h"
#include "base/log.h"
#include "select/select.h"
#include "rec/seq.h"

#define NSVC 1000
#define NCAND 32
#define NEGRESS 10000
#define NINGRESS 16
#define GOAL 500000.0

static uint64_t now0;
#define PLEN 200
static char dir[PLEN];
static char bindir[PLEN];

static void
die(const char *what)
{
	fprintf(stderr, "bench_select: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* Append a record to a buffer. */
static void
put(struct cats_buf *b, const struct cats_rec *r)
{
	if (cats_rec_encode(r, b, false) < 0) {
		fprintf(stderr, "bench_select: cannot encode\n");
		exit(1);
	}
}

/*
 * Node names: the bench's own (IF-i, EF-j), or those of the synthetic TE
 * database (n<k>) for the --tedb row, whose ingresses are 16 nodes spread
 * over it.
 */
static bool te_names;
/* How the filter gets its NST: this option and file of dir. */
static const char *nst_opt = "--net", *nst_file = "net.cbor";

static char names[NSVC * NCAND][24];
static char ids[NSVC][16];
static char egress[NEGRESS][16];
static char ingress[NINGRESS][16];
static char sites[NEGRESS][16];
static char smas[NEGRESS][16];

/* Candidate c of service k sits at egress (k * 32 + c) * 7919 % 10000. */
static int
where(int k, int c)
{
	return (int)(((long)k * NCAND + c) * 7919 % NEGRESS);
}

static void
build_world(struct cats_buf *svc, struct cats_buf *met, struct cats_buf *net)
{
	static const char *const pol[] = { "min-latency", "p2c-gas",
		"cheapest" };
	const char *auth[NCAND];
	struct cats_rec r;
	for (int i = 0; i < NINGRESS; i++)
		snprintf(ingress[i], sizeof(ingress[i]), te_names ? "n%d" :
		    "IF-%d", te_names ? i * 625 + 311 : i);
	for (int j = 0; j < NEGRESS; j++) {
		snprintf(egress[j], sizeof(egress[j]), te_names ? "n%d" :
		    "EF-%d", j);
		snprintf(sites[j], sizeof(sites[j]), "site-%d", j);
		snprintf(smas[j], sizeof(smas[j]), "sma-%d", j);
	}
	for (int k = 0; k < NSVC; k++) {
		struct cats_address a;
		snprintf(ids[k], sizeof(ids[k]), "S%d", k);
		for (int c = 0; c < NCAND; c++) {
			snprintf(names[k * NCAND + c], 24, "10.%d.%d.%d:80",
			    k / 256, k % 256, c);
			auth[c] = names[k * NCAND + c];
		}
		cats_rec_init(&r, CATS_T_SERVICE);
		struct cats_service *s = &r.u.service;
		s->cs_id = ids[k];
		s->version = 1;
		memset(&a, 0, sizeof(a));
		a.addr.af = 4;
		a.addr.a[0] = 100;
		a.addr.a[1] = 64;
		a.addr.a[2] = (uint8_t)(k / 256);
		a.addr.a[3] = (uint8_t)(k % 256);
		s->addresses.v = &a;
		s->addresses.n = 1;
		s->authorized.v = auth;
		s->authorized.n = NCAND;
		s->policy = pol[k % 3];
		CATS_SET(s, SVC, policy_version, 1);
		CATS_SET(&s->constraints, CON, max_delay_us, 50000);
		s->has |= UINT64_C(1) << CATS_SVC_constraints;
		put(svc, &r);
	}
	/* One advertisement per site: the candidates placed there. */
	static struct cats_entry ents[NSVC * NCAND];
	static int count[NEGRESS], start[NEGRESS + 1];
	memset(count, 0, sizeof(count));	/* built twice: --tedb */
	for (int k = 0; k < NSVC; k++)
		for (int c = 0; c < NCAND; c++)
			count[where(k, c)]++;
	for (int j = 0; j < NEGRESS; j++)
		start[j + 1] = start[j] + count[j];
	memset(count, 0, sizeof(count));
	for (int k = 0; k < NSVC; k++) {
		for (int c = 0; c < NCAND; c++) {
			int j = where(k, c);
			struct cats_entry *e = &ents[start[j] + count[j]++];
			memset(e, 0, sizeof(*e));
			e->csci_id = names[k * NCAND + c];
			e->cs_id = ids[k];
			CATS_SET(e, ENT, health, CATS_HEALTHY);
			CATS_SET(e, ENT, gas, (uint64_t)(50 + (k * 31 + c * 17) %
			    500));
			CATS_SET(e, ENT, comp_time_ms, (uint64_t)(1 + (k + c * 3) %
			    20));
			CATS_SET(e, ENT, price, (uint64_t)(10 + (k * 7 + c) % 40));
			e->locator.af = 4;
			e->locator.a[0] = 10;
			e->locator.a[1] = (uint8_t)(k / 256);
			e->locator.a[2] = (uint8_t)(k % 256);
			e->locator.a[3] = (uint8_t)c;
			CATS_SET(e, ENT, port, 80);
		}
	}
	for (int j = 0; j < NEGRESS; j++) {
		if (count[j] == 0)
			continue;
		cats_rec_init(&r, CATS_T_METRIC);
		struct cats_metric *m = &r.u.metric;
		m->op = CATS_OP_FULL;
		m->sma_id = smas[j];
		m->epoch = 1;
		m->seq = 1;
		m->ts = now0;
		m->site = sites[j];
		m->egress = egress[j];
		CATS_SET(m, MET, ttl_ms, 3600000);
		m->entries.v = &ents[start[j]];
		m->entries.n = (size_t)count[j];
		put(met, &r);
	}
	for (int i = 0; i < NINGRESS; i++) {
		for (int j = 0; j < NEGRESS; j++) {
			cats_rec_init(&r, CATS_T_NET);
			struct cats_net *n = &r.u.net;
			n->scope = CATS_NET_PATH;
			n->ts = now0;
			n->src = ingress[i];
			n->dst = egress[j];
			CATS_SET(n, NET, ttl_ms, 3600000);
			CATS_SET(n, NET, delay_us, (uint64_t)(500 +
			    ((i * 7 + j * 13) % 40000)));
			CATS_SET(n, NET, hops, (uint64_t)(1 + (i + j) % 12));
			put(net, &r);
		}
	}
}

/* Request i: a service, an ingress, a client, a fresh transaction. */
static void
make_request(struct cats_rec *r, uint64_t i, uint64_t ts)
{
	uint64_t h = cats_mix64(i);
	int k = (int)(h % NSVC);
	cats_rec_init(r, CATS_T_REQUEST);
	struct cats_request *q = &r->u.request;
	q->txn = i + 1;
	q->ingress = ingress[(h >> 32) % NINGRESS];
	q->ts = ts;
	CATS_SET(q, REQ, gen, 1);
	q->flow.proto = 6;
	q->flow.src.af = 4;
	q->flow.src.a[0] = 192;
	q->flow.src.a[2] = (uint8_t)(i >> 8);
	q->flow.src.a[3] = (uint8_t)i;
	q->flow.dst.af = 4;
	q->flow.dst.a[0] = 100;
	q->flow.dst.a[1] = 64;
	q->flow.dst.a[2] = (uint8_t)(k / 256);
	q->flow.dst.a[3] = (uint8_t)(k % 256);
	CATS_SET(&q->flow, FLOW, sport, 1024 + i % 60000);
	CATS_SET(&q->flow, FLOW, dport, 80);
	q->has |= UINT64_C(1) << CATS_REQ_flow;
	if (i % 2 == 0)
		q->cs_id = ids[k];
}

static void
load(struct cats_svc_cat *cat, struct cats_cst *cst, struct cats_nst_rec *nr,
    const struct cats_buf *b)
{
	struct cats_seq_reader rd;
	struct cats_dec d;
	struct cats_rec r;
	struct cats_err e;
	struct cats_cst_result res;
	cats_seq_reader_init(&rd, NULL);
	cats_dec_init(&d, NULL);
	cats_seq_feed(&rd, b->p, b->len);
	rd.eof = true;
	while (cats_seq_next_rec(&rd, &d, &r, &e) == CATS_SEQ_ITEM) {
		if (r.type == CATS_T_SERVICE)
			cats_svc_apply(cat, &r.u.service, &e);
		else if (r.type == CATS_T_METRIC)
			cats_cst_apply(cst, &r.u.metric, now0, &res);
		else
			cats_nst_rec_apply(nr, &r.u.net, now0, &e);
	}
	cats_seq_reader_free(&rd);
	cats_dec_free(&d);
}

/*
 * One row.  No rate or latency here is 0 when it was measured: a 0 (a
 * drive that could not connect, a relay that did not start) says that it
 * did not measure instead of reading as a figure, and has no ratio.
 */
static void
row(const char *name, double v, double base)
{
	if (v > 0 && base > 0)
		printf("%s | %.0f | %.0f | %.2f\n", name, v, base, v / base);
	else if (v > 0)
		printf("%s | %.0f | error: the baseline did not measure | "
		    "error\n", name, v);
	else
		printf("%s | error: did not measure | %.0f | error\n", name,
		    base);
	fflush(stdout);
}

static double
bench_library(const struct cats_buf *svc, const struct cats_buf *met,
    const struct cats_buf *net, int n, bool cache)
{
	struct cats_sel_conf conf;
	cats_sel_conf_init(&conf);
	conf.insecure = true;
	conf.window_ms = 0;
	conf.no_cache = !cache;
	struct cats_svc_cat *cat = cats_svc_cat_new(0);
	struct cats_cst *cst = cats_cst_new(60000, 0);
	struct cats_nst_rec *nr = cats_nst_rec_new(60000, 0);
	struct cats_nst nst;
	cats_nst_init(&nst);
	cats_nst_add(&nst, &cats_nst_rec_provider, nr);
	load(cat, cst, nr, svc);
	load(cat, cst, nr, met);
	load(cat, cst, nr, net);
	struct cats_sel *sel = cats_sel_new(&conf, cat, cst, &nst);
	struct cats_rec *reqs = malloc((size_t)n * sizeof(*reqs));
	static struct cats_sel_out out;
	for (int i = 0; i < n; i++)
		make_request(&reqs[i], (uint64_t)i, now0 + 1000);
	int ok = 0;
	uint64_t t0 = cats_clock_mono_ns();
	for (int i = 0; i < n; i++)
		ok += cats_sel_request(sel, &reqs[i], NULL, now0 + 1000, &out) ==
		    CATS_SEL_OK;
	uint64_t dt = cats_clock_mono_ns() - t0;
	if (ok != n)
		fprintf(stderr, "bench_select: %d of %d requests failed "
		    "(last: %s)\n", n - ok, n, out.msg);
	free(reqs);
	cats_sel_free(sel);
	cats_nst_free(&nst);
	cats_cst_free(cst);
	cats_svc_cat_free(cat);
	return n * 1e9 / (double)dt;
}

static void
write_file(const char *name, const struct cats_buf *b)
{
	char path[PLEN + 32];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || cats_write_all(fd, b->p, b->len) < 0)
		die(path);
	close(fd);
}

/* Admission limits off: the rows time decisions, not refusals. */
#define NO_LIMITS "--limit global=off --limit tenant=off --limit client=off"

/* Write the first n requests of the sequence to requests.cbor. */
static void
write_requests(int n)
{
	struct cats_buf b = { 0 };
	struct cats_rec r;
	for (int i = 0; i < n; i++) {
		make_request(&r, (uint64_t)i, now0 + 1000);
		put(&b, &r);
	}
	write_file("requests.cbor", &b);
	cats_buf_free(&b);
}

/*
 * Run cats-select as a filter on requests.cbor (or on nothing: the load
 * alone); seconds of wall time.  With n > 0, every request must have
 * ended in a path-req.
 */
static double
run_filter(int n)
{
	struct cats_rec r;
	char cmd[8 * PLEN], in[PLEN + 32];
	snprintf(in, sizeof(in), "%s/requests.cbor", dir);
	snprintf(cmd, sizeof(cmd), "%s/cats-select --replay --no-auth -q "
	    NO_LIMITS " --services %s/svc.cbor --metrics %s/met.cbor "
	    "%s %s/%s < %s > %s/filter.out", bindir, dir, dir, nst_opt, dir,
	    nst_file, n > 0 ? in : "/dev/null", dir);
	uint64_t t0 = cats_clock_mono_ns();
	if (system(cmd) != 0)
		fprintf(stderr, "bench_select: the filter failed\n");
	double t = (double)(cats_clock_mono_ns() - t0) / 1e9;
	if (n == 0)
		return t;
	/* Every request decided, none refused? */
	char path[PLEN + 32];
	snprintf(path, sizeof(path), "%s/filter.out", dir);
	int fd = open(path, O_RDONLY);
	struct cats_seq_reader rd;
	struct cats_dec d;
	struct cats_err e;
	int decided = 0, other = 0;
	cats_seq_reader_init(&rd, NULL);
	cats_dec_init(&d, NULL);
	while (fd >= 0 && cats_seq_read_fd(&rd, fd) > 0)
		while (cats_seq_next_rec(&rd, &d, &r, &e) == CATS_SEQ_ITEM) {
			if (r.type == CATS_T_PATH_REQ)
				decided++;
			else
				other++;
		}
	if (fd >= 0)
		close(fd);
	cats_seq_reader_free(&rd);
	cats_dec_free(&d);
	if (decided != n)
		fprintf(stderr, "bench_select: the filter decided %d of %d "
		    "requests (%d other records)\n", decided, n, other);
	return t;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/*
 * Decisions/s of the filter on n requests: the load-only run and the full
 * run side by side, ROUNDS times, and the median of their differences (a
 * shared machine's noise moves single runs by a third).
 */
#define ROUNDS 5
static double
filter_rate(int n)
{
	double d[ROUNDS];
	write_requests(n);
	for (int i = 0; i < ROUNDS; i++) {
		double t_load = run_filter(0);
		d[i] = run_filter(n) - t_load;
	}
	qsort(d, ROUNDS, sizeof(d[0]), cmp_double);
	return d[ROUNDS / 2] > 0 ? n / d[ROUNDS / 2] : 0;
}

/* ---- latency over a unix socket ---- */

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static pid_t
spawn(char *const argv[], int *out_rd)
{
	int p[2];
	if (pipe(p) < 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 0);
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	*out_rd = p[0];
	return pid;
}

static int
connect_unix(const char *path)
{
	struct sockaddr_un sun;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	cats_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
	for (int i = 0; i < 300; i++) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&sun,
		    sizeof(sun)) == 0)
			return fd;
		if (fd >= 0)
			close(fd);
		struct timespec ts = { 0, 20000000 };
		nanosleep(&ts, NULL);
	}
	die("connect");
	return -1;
}

/*
 * Send n requests (transactions base + 1 ...), at most window in flight;
 * the latency of each is the time from its write to the record with its
 * txn on out_rd.  Fills lat[].
 */
static void
drive(int sock, int out_rd, uint64_t base, int n, int window, uint64_t *lat)
{
	uint64_t *sent = calloc((size_t)n + 1, sizeof(*sent));
	struct cats_seq_reader rd;
	struct cats_dec d;
	struct cats_rec r;
	struct cats_err e;
	struct cats_buf b = { 0 };
	cats_seq_reader_init(&rd, NULL);
	cats_dec_init(&d, NULL);
	int next = 0, done = 0, refused = 0;
	while (done < n) {
		while (next < n && next - done < window) {
			make_request(&r, base + (uint64_t)next,
			    cats_clock_now());
			cats_buf_reset(&b);
			put(&b, &r);
			sent[next + 1] = cats_clock_mono_ns();
			if (cats_write_all(sock, b.p, b.len) < 0)
				die("send");
			next++;
		}
		struct pollfd pfd = { out_rd, POLLIN, 0 };
		if (poll(&pfd, 1, 10000) <= 0) {
			fprintf(stderr, "bench_select: no answer (%d of %d)\n",
			    done, n);
			break;
		}
		if (cats_seq_read_fd(&rd, out_rd) <= 0)
			break;
		uint64_t t = cats_clock_mono_ns();
		while (cats_seq_next_rec(&rd, &d, &r, &e) == CATS_SEQ_ITEM) {
			uint64_t txn = r.type == CATS_T_PATH_REQ ?
			    r.u.preq.txn : r.type == CATS_T_REQUEST ?
			    r.u.request.txn : r.type == CATS_T_ERROR ?
			    r.u.error.txn : 0;
			if (txn > base && txn <= base + (uint64_t)n &&
			    done < n) {
				lat[done++] = (t - sent[txn - base]) / 1000;
				refused += r.type == CATS_T_ERROR;
			}
		}
	}
	if (refused > 0)
		fprintf(stderr, "bench_select: %d of %d answers were errors\n",
		    refused, n);
	cats_seq_reader_free(&rd);
	cats_dec_free(&d);
	cats_buf_free(&b);
	free(sent);
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200000;
	cats_crypto_init();
	cats_log_init("bench_select");
	cats_audit_open("none");
	now0 = cats_clock_now();
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	if (strlen(build) > PLEN - 8) {
		fprintf(stderr, "bench_select: BUILD is too long\n");
		return 1;
	}
	snprintf(bindir, sizeof(bindir), "%s/bin", build);
	snprintf(dir, sizeof(dir), "/tmp/bench_select.%d", (int)getpid());

	struct cats_buf svc = { 0 }, met = { 0 }, net = { 0 };
	build_world(&svc, &met, &net);
	if (argc > 2 && strcmp(argv[2], "nocache") == 0) {
		row("select decisions/s (library, eligibility cache off) vs goal",
		    bench_library(&svc, &met, &net, n, false), GOAL);
		return 0;
	}
	double lib = bench_library(&svc, &met, &net, n, true);
	row("select decisions/s (library, 1000x32, 10^4 nodes) vs goal", lib,
	    GOAL);
	lib = bench_library(&svc, &met, &net, n / 4, false);
	row("select decisions/s (library, eligibility cache off) vs goal", lib,
	    GOAL);
	if (argc > 2 && strcmp(argv[2], "lib") == 0)
		return 0;

	/* Only the binary's rows need files (the library rows leave none). */
	if (mkdir(dir, 0700) < 0)
		die(dir);
	write_file("svc.cbor", &svc);
	write_file("met.cbor", &met);
	write_file("net.cbor", &net);
	row("select decisions/s (offline filter, load time subtracted) vs goal",
	    filter_rate(n), GOAL);
	/*
	 * The same world at five times the requests: the first decision of
	 * each (service, ingress) pair, uncached, weighs 8% of 200,000 and
	 * 1.6% of 1,000,000 -- the steady state of a selector whose view
	 * holds still.
	 */
	row("select decisions/s (offline filter, 5x the requests) vs goal",
	    filter_rate(5 * n), GOAL);

	/* Latency: the daemon against socat relaying the same bytes. */
	char sock[PLEN + 16], svcf[PLEN + 16], metf[PLEN + 16],
	    netf[PLEN + 16], exe[PLEN + 32], lst[PLEN + 32];
	snprintf(sock, sizeof(sock), "%s/sel.sock", dir);
	snprintf(svcf, sizeof(svcf), "%s/svc.cbor", dir);
	snprintf(metf, sizeof(metf), "%s/met.cbor", dir);
	snprintf(netf, sizeof(netf), "%s/net.cbor", dir);
	snprintf(exe, sizeof(exe), "%s/cats-select", bindir);
	snprintf(lst, sizeof(lst), "unix:%s", sock);
	char *sel_argv[] = { exe, "--no-auth", "-q", "--limit", "global=off",
	    "--limit", "tenant=off", "--limit", "client=off", "--services",
	    svcf, "--metrics", metf, "--net", netf, "--listen", lst, NULL };
	char soc[PLEN + 64];
	snprintf(soc, sizeof(soc), "UNIX-LISTEN:%s,fork", sock);
	char *socat_argv[] = { "/usr/bin/socat", "-u", soc, "STDOUT", NULL };
	int m = n / 4 > 20000 ? 20000 : n / 4;
	uint64_t p[2][2];
	for (int w = 0; w < 2; w++) {
		char *const *av = w == 0 ? sel_argv : socat_argv;
		unlink(sock);
		int out_rd;
		uint64_t *lat = calloc((size_t)m, sizeof(*lat));
		pid_t pid = spawn(av, &out_rd);
		int fd = connect_unix(sock);
		drive(fd, out_rd, 0, m / 10, 64, lat);	/* warm-up */
		memset(lat, 0, (size_t)m * sizeof(*lat));
		/* New transactions: the txn window would refuse old ones. */
		drive(fd, out_rd, (uint64_t)m, m, 64, lat);
		close(fd);
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		close(out_rd);
		qsort(lat, (size_t)m, sizeof(*lat), cmp_u64);
		p[w][0] = lat[m / 2];
		p[w][1] = lat[m * 99 / 100];
		free(lat);
	}
	row("select p50 latency (us, unix socket, 64 in flight) vs socat relay",
	    (double)p[0][0], (double)p[1][0]);
	row("select p99 latency (us, unix socket, 64 in flight) vs socat relay",
	    (double)p[0][1], (double)p[1][1]);

	/*
	 * The issue's own setting: the NST from a 10^4-node TE database
	 * (--tedb: the distances cats-pce's library computes from each
	 * headend), written by tests/tools/topogen (the carrier-shaped
	 * network of te_synth.h); egresses and ingresses are its nodes.
	 */
	te_names = true;
	cats_buf_reset(&svc);
	cats_buf_reset(&met);
	cats_buf_reset(&net);
	build_world(&svc, &met, &net);
	write_file("svc.cbor", &svc);
	write_file("met.cbor", &met);
	char gen[4 * PLEN];
	snprintf(gen, sizeof(gen), "%s/tests/tools/topogen %d > %s/te.json",
	    build, NEGRESS, dir);
	if (system(gen) != 0)
		fprintf(stderr, "bench_select: topogen failed\n");
	nst_opt = "--tedb";
	nst_file = "te.json";
	row("select decisions/s (offline filter, 10^4-node TE database) vs goal",
	    filter_rate(n), GOAL);

	/* BENCH_KEEP=1 leaves the files, to profile the filter on them. */
	char cmd[PLEN + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (getenv("BENCH_KEEP") != NULL)
		fprintf(stderr, "bench_select: files kept in %s\n", dir);
	else if (system(cmd) != 0)
		fprintf(stderr, "bench_select: cannot remove %s\n", dir);
	cats_buf_free(&svc);
	cats_buf_free(&met);
	cats_buf_free(&net);
	return 0;
}
