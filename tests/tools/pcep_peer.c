/*
 * pcep_peer - a PCEP speaker for tests, on lib/pce/pcep_srv.h.
 *
 *   pcep_peer pce -l ENDPOINT -T TOPOLOGY [-m MAX] [-a PREFIX]... [-k S]
 *                 [-d S] [-x N]
 *       A PCE: answers every PCReq from the topology with cats_pce_answer()
 *       through the translation of pcep.h.  One line on stderr per event
 *       (up, answered, refused, closed).  Stops on SIGINT/SIGTERM, or after
 *       -x sessions have closed.
 *   pcep_peer pcc -c ENDPOINT [-T TOPOLOGY] [-t MS] [-k S] [-d S]
 *       A PCC: reads path-req JSON lines on stdin, sends each as a PCReq
 *       once the session is up (request id = txn), prints each reply as a
 *       path-rep JSON line; exits 0 when every request has its reply, 1
 *       when the session ends first or -t ms pass (default 10000).
 *   pcep_peer project
 *       Reads path-rep JSON lines on stdin and prints each as
 *       cats_pcep_rep_project() makes it (what survives a PCEP exchange),
 *       other records as they are: the record interface's answers made
 *       comparable with the answers over PCEP.
 *   pcep_peer raw -c ENDPOINT [-t MS] [-b ADDRESS]
 *       Bytes: reads lines of hex on stdin (one message or fragment a
 *       line; "sleep MS" waits; "#" comments), sends them as they are, and
 *       prints every message received as "TYPE [details]" until the peer
 *       closes or -t ms pass without input (default 2000); "closed" last
 *       when the peer closed.  -b: connect from this local IPv4 address
 *       (many sessions from one host, each its own peer).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/clock.h"
#include "net/ep.h"
#include "pce/pce.h"
#include "pce/pcep_srv.h"
#include "rec/json.h"

static struct event_base *base;
static struct cats_te *te;
static struct cats_pcep_names *names;
static struct cats_pce pce;
static unsigned closed, exit_after;
static int status = 1;

static void
die(const char *fmt, const char *what)
{
	fprintf(stderr, "pcep_peer: ");
	fprintf(stderr, fmt, what);
	fprintf(stderr, "\n");
	exit(2);
}

static const char *
st_text(const struct cats_pcep_status *st, char *buf, size_t len)
{
	size_t n = 0;
	if (st->err_type)
		n = (size_t)snprintf(buf, len, "pcerr=%u/%u(%s) ", st->err_type,
		    st->err_value, cats_pcep_error_name(st->err_type,
		    st->err_value));
	if (st->close_reason && n < len)
		n += (size_t)snprintf(buf + n, len - n, "close=%u(%s) ",
		    st->close_reason, cats_pcep_close_name(st->close_reason));
	if (n < len)
		snprintf(buf + n, len - n, "why=\"%s\"", st->why ? st->why : "");
	return buf;
}

static void
on_note(struct cats_pcep_peer *p, const char *peer, int what,
    const struct cats_pcep_status *st, void *arg)
{
	char b[256];
	fprintf(stderr, "pcep_peer: %s %s %s\n", peer,
	    cats_pcep_note_names[what], st_text(st, b, sizeof(b)));
}

static void
on_closed(struct cats_pcep_peer *p, const struct cats_pcep_status *st,
    void *arg)
{
	char b[256];
	fprintf(stderr, "pcep_peer: %s closed %s\n", cats_pcep_peer_name(p),
	    st_text(st, b, sizeof(b)));
	closed++;
	if (arg != NULL || (exit_after && closed >= exit_after))
		event_base_loopbreak(base);
}

static void
on_up(struct cats_pcep_peer *p, void *arg)
{
	fprintf(stderr, "pcep_peer: %s up\n", cats_pcep_peer_name(p));
}

/* ---- pce ---- */

static void
pce_msg(struct cats_pcep_peer *p, const struct cats_pcep_msg *m, void *arg)
{
	if (m->type != CATS_PCEP_PCREQ)
		return;
	struct cats_arena a = { 0 };
	struct cats_pcep_rep *reps = calloc(m->nreqs ? m->nreqs : 1,
	    sizeof(*reps));
	size_t n = 0;
	for (size_t i = 0; reps && i < m->nreqs; i++) {
		const struct cats_pcep_req *r = &m->reqs[i];
		if (r->st.code != CATS_PCEP_ST_OK)
			continue;	/* the session answered it */
		struct cats_pcep_status st;
		struct cats_path_req prq;
		struct cats_rec rep;
		if (cats_pcep_to_path_req(r, te, names, cats_clock_now(), &prq,
		    &a, &st) < 0) {
			cats_pcep_peer_send_err(p, &r->rp.id, 1, st.err_type,
			    st.err_value);
			continue;
		}
		if (cats_pce_answer(&pce, &prq, cats_clock_now(), &rep,
		    &a) < 0 || cats_pcep_from_path_rep(&rep.u.prep, r, te,
		    names, &reps[n], &a) < 0)
			continue;
		n++;
	}
	if (n > 0 && cats_pcep_peer_send_reps(p, reps, n) < 0)
		fprintf(stderr, "pcep_peer: %s: reply not sent\n",
		    cats_pcep_peer_name(p));
	free(reps);
	cats_arena_free(&a);
}

static void
on_signal(evutil_socket_t s, short w, void *arg)
{
	event_base_loopbreak(base);
}

/* ---- pcc ---- */

struct pending {
	struct cats_dec dec;
	struct cats_rec rec;
	bool done;
};

static struct pending *pend;
static size_t npend, ndone;

static void
pcc_up(struct cats_pcep_peer *p, void *arg)
{
	on_up(p, arg);
	struct cats_arena a = { 0 };
	for (size_t i = 0; i < npend; i++) {
		struct cats_pcep_req q;
		struct cats_pcep_status st;
		const struct cats_path_req *rq = &pend[i].rec.u.preq;
		cats_arena_reset(&a);
		if (cats_pcep_from_path_req(rq, (uint32_t)rq->txn, te, names,
		    &q, &a, &st) < 0) {
			/* Answered here, as the PCC would. */
			struct cats_rec r;
			cats_rec_error_init(&r, st.why, "pcep_peer", rq->txn,
			    cats_clock_now(), NULL);
			cats_rec_print_json(&r, stdout);
			pend[i].done = true;
			ndone++;
			continue;
		}
		if (cats_pcep_peer_send_reqs(p, &q, 1) < 0)
			fprintf(stderr, "pcep_peer: request %zu not sent\n", i);
	}
	cats_arena_free(&a);
	fflush(stdout);
	if (ndone == npend) {
		status = 0;
		event_base_loopbreak(base);
	}
}

static void
pcc_msg(struct cats_pcep_peer *p, const struct cats_pcep_msg *m, void *arg)
{
	struct cats_arena a = { 0 };
	if (m->type == CATS_PCEP_PCERR)
		for (size_t i = 0; i < m->err.n; i++)
			fprintf(stderr, "pcep_peer: PCErr %u/%u (%s)\n",
			    m->err.v[i].type, m->err.v[i].value,
			    cats_pcep_error_name(m->err.v[i].type,
			    m->err.v[i].value));
	for (size_t i = 0; m->type == CATS_PCEP_PCREP && i < m->nreps; i++) {
		const struct cats_pcep_rep *r = &m->reps[i];
		struct pending *x = NULL;
		for (size_t k = 0; k < npend && x == NULL; k++)
			if (!pend[k].done && pend[k].rec.u.preq.txn == r->rp.id)
				x = &pend[k];
		if (x == NULL) {
			cats_pcep_peer_unknown_ref(p, r->rp.id);
			continue;
		}
		struct cats_rec out;
		cats_arena_reset(&a);
		if (cats_pcep_to_path_rep(r, &x->rec.u.preq, te, names,
		    cats_clock_now(), &out, &a) == 0)
			cats_rec_print_json(&out, stdout);
		x->done = true;
		ndone++;
	}
	fflush(stdout);
	cats_arena_free(&a);
	if (ndone == npend) {
		status = 0;
		event_base_loopbreak(base);
	}
}

static void
on_timeout(evutil_socket_t s, short w, void *arg)
{
	fprintf(stderr, "pcep_peer: timeout\n");
	event_base_loopbreak(base);
}

static void
read_requests(void)
{
	char line[16384];
	while (fgets(line, sizeof(line), stdin) != NULL) {
		json_error_t je;
		json_t *j = json_loads(line, 0, &je);
		if (j == NULL)
			continue;
		pend = realloc(pend, (npend + 1) * sizeof(*pend));
		if (pend == NULL)
			die("%s", "out of memory");
		struct pending *x = &pend[npend];
		memset(x, 0, sizeof(*x));
		cats_dec_init(&x->dec, NULL);
		struct cats_err e;
		if (cats_rec_from_json(&x->dec, j, &x->rec, &e) == 0 &&
		    x->rec.type == CATS_T_PATH_REQ)
			npend++;
		else
			cats_dec_free(&x->dec);
		json_decref(j);
	}
}

/* ---- project ---- */

static int
project(void)
{
	static char line[1 << 20];
	struct cats_dec dec;
	cats_dec_init(&dec, NULL);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		json_error_t je;
		json_t *j = json_loads(line, 0, &je);
		if (j == NULL)
			continue;
		struct cats_rec r;
		struct cats_err e;
		if (cats_rec_from_json(&dec, j, &r, &e) == 0) {
			if (r.type == CATS_T_PATH_REP) {
				struct cats_path_rep out;
				cats_pcep_rep_project(&r.u.prep, &out);
				r.u.prep = out;
			}
			cats_rec_print_json(&r, stdout);
		}
		json_decref(j);
	}
	cats_dec_free(&dec);
	return 0;
}

/* ---- raw ---- */

static long
unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1;
	for (; *s; s++) {
		int v;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
			continue;
		else
			return -1;
		if (hi < 0) {
			hi = v;
			continue;
		}
		if (n == cap)
			return -1;
		out[n++] = (uint8_t)(hi << 4 | v);
		hi = -1;
	}
	return (long)n;
}

/* One received message as a line. */
static void
print_msg(const uint8_t *p, size_t n)
{
	struct cats_arena a = { 0 };
	struct cats_pcep_msg m;
	struct cats_pcep_status st;
	int rc = cats_pcep_decode(p, n, NULL, &m, &a, &st);
	printf("%s", cats_pcep_msg_name(p[1]));
	if (rc < 0)
		printf(" undecodable");
	else if (m.type == CATS_PCEP_PCERR) {
		for (size_t i = 0; i < m.err.nids; i++)
			printf(" id=%u", m.err.ids[i]);
		for (size_t i = 0; i < m.err.n; i++)
			printf(" %u/%u", m.err.v[i].type, m.err.v[i].value);
	} else if (m.type == CATS_PCEP_CLOSE)
		printf(" reason=%u", m.close_reason);
	else if (m.type == CATS_PCEP_OPEN)
		printf(" ka=%u dt=%u", m.open.keepalive, m.open.deadtimer);
	else if (m.type == CATS_PCEP_PCREP)
		for (size_t i = 0; i < m.nreps; i++)
			printf(" id=%u%s", m.reps[i].rp.id, m.reps[i].nopath ?
			    " nopath" : m.reps[i].has_ero ? " ero" : "");
	printf("\n");
	fflush(stdout);
	cats_arena_free(&a);
}

static int
raw(int fd, int idle_ms)
{
	static uint8_t in[2 * CATS_PCEP_MSG_MAX], msg[CATS_PCEP_MSG_MAX];
	size_t have = 0;
	char line[200000];
	bool eof = false;
	for (;;) {
		if (!eof) {
			if (fgets(line, sizeof(line), stdin) == NULL)
				eof = true;
			else if (line[0] == '#' || line[0] == '\n')
				continue;
			else if (strncmp(line, "sleep ", 6) == 0) {
				int ms = atoi(line + 6);
				struct pollfd pf = { fd, POLLIN, 0 };
				uint64_t end = cats_clock_mono_ns() / 1000000 +
				    (uint64_t)ms;
				for (;;) {
					uint64_t t = cats_clock_mono_ns() /
					    1000000;
					if (t >= end)
						break;
					if (poll(&pf, 1, (int)(end - t)) <= 0)
						break;
					ssize_t r = read(fd, in + have,
					    sizeof(in) - have);
					if (r <= 0) {
						printf("closed\n");
						return 0;
					}
					have += (size_t)r;
					long fl;
					struct cats_pcep_status st;
					while ((fl = cats_pcep_frame(in, have,
					    NULL, &st)) > 0) {
						print_msg(in, (size_t)fl);
						memmove(in, in + fl, have -
						    (size_t)fl);
						have -= (size_t)fl;
					}
				}
				continue;
			} else {
				long n = unhex(line, msg, sizeof(msg));
				if (n < 0)
					die("bad hex: %s", line);
				if (write(fd, msg, (size_t)n) != n) {
					printf("closed\n");
					return 0;
				}
				continue;
			}
		}
		struct pollfd pf = { fd, POLLIN, 0 };
		int r = poll(&pf, 1, idle_ms);
		if (r <= 0)
			return 0;
		ssize_t k = read(fd, in + have, sizeof(in) - have);
		if (k <= 0) {
			printf("closed\n");
			return 0;
		}
		have += (size_t)k;
		long fl;
		struct cats_pcep_status st;
		while ((fl = cats_pcep_frame(in, have, NULL, &st)) > 0) {
			print_msg(in, (size_t)fl);
			memmove(in, in + fl, have - (size_t)fl);
			have -= (size_t)fl;
		}
		if (fl < 0) {
			printf("garbage\n");
			return 0;
		}
	}
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		die("%s", "usage: pcep_peer pce|pcc|raw [options]");
	const char *mode = argv[1];
	if (strcmp(mode, "project") == 0)
		return project();
	const char *listen_ep = NULL, *connect_ep = NULL, *topo = NULL;
	const char *bind_addr = NULL;
	int ka = 30, dt = 120, timeout = -1;
	size_t maxs = 0;
	static struct cats_prefix allow[16];
	size_t nallow = 0;
	int c;
	optind = 2;
	while ((c = getopt(argc, argv, "a:b:c:d:k:l:m:T:t:x:")) != -1) {
		char err[128];
		switch (c) {
		case 'a':
			if (nallow == CATS_ARRAY_LEN(allow) ||
			    cats_prefix_parse(optarg, strlen(optarg), true,
			    &allow[nallow], err, sizeof(err)) < 0)
				die("-a %s: bad prefix", optarg);
			nallow++;
			break;
		case 'b':
			bind_addr = optarg;
			break;
		case 'c':
			connect_ep = optarg;
			break;
		case 'd':
			dt = atoi(optarg);
			break;
		case 'k':
			ka = atoi(optarg);
			break;
		case 'l':
			listen_ep = optarg;
			break;
		case 'm':
			maxs = (size_t)atoi(optarg);
			break;
		case 'T':
			topo = optarg;
			break;
		case 't':
			timeout = atoi(optarg);
			break;
		case 'x':
			exit_after = (unsigned)atoi(optarg);
			break;
		default:
			die("%s", "bad option");
		}
	}
	signal(SIGPIPE, SIG_IGN);
	char err[256];
	struct cats_ep ep;
	if (strcmp(mode, "raw") == 0) {
		if (connect_ep == NULL || cats_ep_parse(connect_ep, &ep, err,
		    sizeof(err)) < 0)
			die("%s", "raw needs -c ENDPOINT");
		int fd;
		if (bind_addr != NULL) {
			struct sockaddr_in src = { .sin_family = AF_INET };
			struct sockaddr_in dst = { .sin_family = AF_INET,
				.sin_port = htons((uint16_t)atoi(ep.port)) };
			if (inet_pton(AF_INET, bind_addr, &src.sin_addr) != 1 ||
			    inet_pton(AF_INET, ep.host, &dst.sin_addr) != 1)
				die("%s", "-b needs IPv4 addresses");
			fd = socket(AF_INET, SOCK_STREAM, 0);
			if (fd < 0 || bind(fd, (struct sockaddr *)&src,
			    sizeof(src)) < 0 || connect(fd,
			    (struct sockaddr *)&dst, sizeof(dst)) < 0)
				die("connect: %s", strerror(errno));
		} else if ((fd = cats_ep_open(&ep, true, err, sizeof(err))) < 0)
			die("connect: %s", err);
		/* Blocking reads and writes, by poll. */
		int fl = fcntl(fd, F_GETFL);
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
		return raw(fd, timeout < 0 ? 2000 : timeout);
	}
	if (topo != NULL) {
		bool missing;
		te = cats_te_load(topo, NULL, 1, &missing, err, sizeof(err));
		if (te == NULL)
			die("topology: %s", err);
		names = cats_pcep_names_new(te);
		cats_pce_init(&pce, te);
	}
	base = event_base_new();
	struct cats_pcep_srv_conf conf = { .max_sessions = maxs,
	    .allow = allow, .nallow = nallow };
	bool is_pce = strcmp(mode, "pce") == 0;
	cats_pcep_conf_default(&conf.sess, is_pce);
	conf.sess.keepalive = (uint8_t)ka;
	conf.sess.deadtimer = (uint8_t)dt;
	struct cats_pcep_srv_cbs cbs = { on_up, pce_msg, on_note, on_closed };
	if (is_pce) {
		if (listen_ep == NULL || te == NULL ||
		    cats_ep_parse(listen_ep, &ep, err, sizeof(err)) < 0)
			die("%s", "pce needs -l ENDPOINT and -T TOPOLOGY");
		int fd = cats_ep_listen(&ep, err, sizeof(err));
		if (fd < 0)
			die("listen: %s", err);
		struct cats_pcep_srv *srv = cats_pcep_srv_new(base, &conf, &cbs,
		    NULL);
		if (srv == NULL || cats_pcep_srv_listen(srv, fd) < 0)
			die("%s", "out of memory");
		struct event *s1 = evsignal_new(base, SIGINT, on_signal, NULL);
		struct event *s2 = evsignal_new(base, SIGTERM, on_signal, NULL);
		event_add(s1, NULL);
		event_add(s2, NULL);
		fprintf(stderr, "pcep_peer: listening\n");
		event_base_dispatch(base);
		cats_pcep_srv_free(srv);
		event_free(s1);
		event_free(s2);
		close(fd);
		status = 0;
	} else if (strcmp(mode, "pcc") == 0) {
		if (connect_ep == NULL || cats_ep_parse(connect_ep, &ep, err,
		    sizeof(err)) < 0)
			die("%s", "pcc needs -c ENDPOINT");
		read_requests();
		int fd = cats_ep_open(&ep, true, err, sizeof(err));
		if (fd < 0)
			die("connect: %s", err);
		cbs.up = pcc_up;
		cbs.msg = pcc_msg;
		struct cats_pcep_srv *srv = cats_pcep_srv_new(base, &conf, &cbs,
		    "pcc");
		if (srv == NULL || cats_pcep_srv_attach(srv, fd, connect_ep) ==
		    NULL)
			die("%s", "out of memory");
		struct event *t = evtimer_new(base, on_timeout, NULL);
		struct timeval tv = { (timeout < 0 ? 10000 : timeout) / 1000,
		    ((timeout < 0 ? 10000 : timeout) % 1000) * 1000 };
		evtimer_add(t, &tv);
		event_base_dispatch(base);
		event_free(t);
		cats_pcep_srv_free(srv);
	} else
		die("unknown mode %s", mode);
	event_base_free(base);
	return status;
}
