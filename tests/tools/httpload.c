/*
 * httpload - a small HTTP/1.1 load generator for the push benchmark, and
 * the do-nothing evhttp server it is compared with.
 *
 *   httpload serve PORT
 *       evhttp on 127.0.0.1:PORT answering every request 200 "ok".
 *   httpload push URL [-c conns] [-d seconds] [-n scis] [-k issuer.key]
 *       POST one sci-report per request over keep-alive connections, the
 *       SCIs in turn, sequence numbers increasing; with -k each SCI gets a
 *       token.  Prints "requests/s R ok O other X".
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "base/clock.h"
#include "sec/crypto.h"
#include "sec/token.h"

static void
ok_cb(struct evhttp_request *req, void *arg)
{
	(void)arg;
	struct evbuffer *b = evbuffer_new();
	evbuffer_add(b, "ok\n", 3);
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

static int
serve(int port)
{
	struct event_base *base = event_base_new();
	struct evhttp *h = evhttp_new(base);
	evhttp_set_gencb(h, ok_cb, NULL);
	if (evhttp_bind_socket(h, "127.0.0.1", (ev_uint16_t)port) != 0) {
		fprintf(stderr, "httpload: cannot listen on %d\n", port);
		return 1;
	}
	event_base_dispatch(base);
	return 0;
}

struct conn {
	int fd;
	char in[4096];
	size_t inlen;
	char *out;
	size_t outlen, outoff;
};

struct load {
	int nsci;
	struct cats_buf *tok;
	uint64_t *seq;
	int next;
	const char *host, *path;
	int port;
	uint64_t ok, other;
};

/* The next request: a report of the next SCI. */
static void
next_request(struct load *l, struct conn *c)
{
	int i = l->next++ % l->nsci;
	char id[32];
	struct cats_rec r;
	struct cats_buf b = { 0 };
	snprintf(id, sizeof(id), "load-%d", i);
	cats_rec_init(&r, CATS_T_SCI_REPORT);
	r.u.sci.csci_id = id;
	r.u.sci.cs_id = "ARS";
	r.u.sci.seq = ++l->seq[i];
	r.u.sci.ts = cats_clock_now();
	r.u.sci.health = CATS_HEALTHY;
	CATS_SET(&r.u.sci, SCI, gas, 100);
	CATS_SET(&r.u.sci, SCI, comp_time_ms, 5);
	CATS_SET(&r.u.sci, SCI, interval_ms, 60000);
	if (l->tok) {
		r.u.sci.token.p = l->tok[i].p;
		r.u.sci.token.n = l->tok[i].len;
	}
	cats_rec_encode(&r, &b, true);
	free(c->out);
	c->out = malloc(b.len + 256);
	int h = snprintf(c->out, 256, "POST %s HTTP/1.1\r\nHost: %s\r\n"
	    "Content-Type: application/cbor\r\nContent-Length: %zu\r\n\r\n",
	    l->path, l->host, b.len);
	memcpy(c->out + h, b.p, b.len);
	c->outlen = (size_t)h + b.len;
	c->outoff = 0;
	cats_buf_free(&b);
}

/* A whole response in c->in? Returns its length, 0 if not yet. */
static size_t
response(struct conn *c, int *status)
{
	char *end = memmem(c->in, c->inlen, "\r\n\r\n", 4);
	if (end == NULL)
		return 0;
	size_t head = (size_t)(end - c->in) + 4;
	size_t clen = 0;
	char *cl = memmem(c->in, head, "Content-Length:", 15);
	if (cl == NULL)
		cl = memmem(c->in, head, "content-length:", 15);
	if (cl != NULL)
		clen = strtoul(cl + 15, NULL, 10);
	if (c->inlen < head + clen)
		return 0;
	*status = atoi(c->in + 9);
	return head + clen;
}

static int
push(const char *url, int conns, int secs, int nsci, const char *keyfile)
{
	struct load l = { .nsci = nsci };
	char host[256];
	int port = 80;
	if (sscanf(url, "http://%255[^:/]:%d", host, &port) < 1) {
		fprintf(stderr, "httpload: bad URL\n");
		return 2;
	}
	const char *p = strchr(url + 7, '/');
	l.path = p ? p : "/";
	l.host = host;
	l.port = port;
	l.seq = calloc((size_t)nsci, sizeof(*l.seq));
	if (keyfile != NULL) {
		struct cats_key k;
		char err[256];
		if (cats_key_load(&k, keyfile, CATS_KEY_ED25519_SECRET, err,
		    sizeof(err)) < 0) {
			fprintf(stderr, "httpload: %s\n", err);
			return 1;
		}
		l.tok = calloc((size_t)nsci, sizeof(*l.tok));
		uint64_t now = cats_clock_now();
		for (int i = 0; i < nsci; i++) {
			struct cats_token t;
			memset(&t, 0, sizeof(t));
			cats_strlcpy(t.iss, k.name, sizeof(t.iss));
			snprintf(t.sub, sizeof(t.sub), "load-%d", i);
			t.iat = now / 1000 - 1;
			t.exp = now / 1000 + 3600;
			memcpy(t.cti, &i, sizeof(i));
			t.ncs = 1;
			cats_strlcpy(t.cs[0], "ARS", sizeof(t.cs[0]));
			cats_token_make(&t, &k, &l.tok[i]);
		}
	}
	/* The sequence numbers start where a previous run cannot be. */
	for (int i = 0; i < nsci; i++)
		l.seq[i] = cats_clock_now();
	int ep = epoll_create1(0);
	struct conn *cs = calloc((size_t)conns, sizeof(*cs));
	struct sockaddr_in sa = { .sin_family = AF_INET,
		.sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, host, &sa.sin_addr);
	for (int i = 0; i < conns; i++) {
		cs[i].fd = socket(AF_INET, SOCK_STREAM, 0);
		int one = 1;
		setsockopt(cs[i].fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(cs[i].fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			fprintf(stderr, "httpload: connect: %s\n",
			    strerror(errno));
			return 1;
		}
		next_request(&l, &cs[i]);
		struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT,
			.data.ptr = &cs[i] };
		epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
	}
	uint64_t t0 = cats_clock_mono_ns(), end = t0 + (uint64_t)secs *
	    1000000000u;
	struct epoll_event evs[64];
	while (cats_clock_mono_ns() < end) {
		int n = epoll_wait(ep, evs, 64, 100);
		for (int k = 0; k < n; k++) {
			struct conn *c = evs[k].data.ptr;
			if ((evs[k].events & EPOLLOUT) && c->outoff < c->outlen) {
				ssize_t w = write(c->fd, c->out + c->outoff,
				    c->outlen - c->outoff);
				if (w > 0)
					c->outoff += (size_t)w;
			}
			if (evs[k].events & EPOLLIN) {
				ssize_t r = read(c->fd, c->in + c->inlen,
				    sizeof(c->in) - c->inlen);
				if (r <= 0) {
					fprintf(stderr, "httpload: connection "
					    "closed\n");
					return 1;
				}
				c->inlen += (size_t)r;
				int st;
				size_t used;
				while ((used = response(c, &st)) > 0) {
					if (st >= 200 && st < 300)
						l.ok++;
					else
						l.other++;
					memmove(c->in, c->in + used, c->inlen -
					    used);
					c->inlen -= used;
					next_request(&l, c);
				}
			}
		}
	}
	double dt = (double)(cats_clock_mono_ns() - t0) / 1e9;
	printf("requests/s %.0f ok %" PRIu64 " other %" PRIu64 "\n",
	    (double)(l.ok + l.other) / dt, l.ok, l.other);
	return 0;
}

int
main(int argc, char **argv)
{
	cats_crypto_init();
	if (argc >= 3 && strcmp(argv[1], "serve") == 0)
		return serve(atoi(argv[2]));
	if (argc >= 3 && strcmp(argv[1], "push") == 0) {
		int conns = 16, secs = 5, nsci = 1000, ch;
		const char *key = NULL;
		optind = 3;
		while ((ch = getopt(argc, argv, "c:d:k:n:")) != -1) {
			switch (ch) {
			case 'c': conns = atoi(optarg); break;
			case 'd': secs = atoi(optarg); break;
			case 'k': key = optarg; break;
			case 'n': nsci = atoi(optarg); break;
			default: return 2;
			}
		}
		if (conns < 1 || secs < 1 || nsci < 1)
			return 2;
		return push(argv[2], conns, secs, nsci, key);
	}
	fprintf(stderr, "usage: httpload serve PORT\n"
	    "       httpload push URL [-c conns] [-d secs] [-n scis] "
	    "[-k issuer.key]\n");
	return 2;
}
