/*
 * httpload - a small HTTP/1.1 load generator for the push benchmarks, and
 * the do-nothing evhttp server it is compared with.
 *
 *   httpload serve PORT
 *       evhttp on 127.0.0.1:PORT answering every request 200 "ok".
 *   httpload push URL [options]
 *       POST one sci-report per request over kept-alive connections, the
 *       SCIs in turn, sequence numbers increasing (the same request stream
 *       over http:// and https://).  Prints "requests/s R ok O other X"
 *       (X: answers other than 2xx).  Exit 0, or 1 with one line on stderr
 *       when a connection cannot be made, a TLS handshake fails (the
 *       server's certificate not verified, the client's refused) or the
 *       server closes a connection; 2 for bad usage.
 *
 * Options of push (sorted):
 *   --cacert FILE       https://: the CA certificates the server's chain is
 *                       verified against (PEM; without: the system's).
 *   --cert FILE         https://: the client certificate (PEM) presented.
 *   -c, --conns N       kept-alive connections, each with one request in
 *                       flight (16).
 *   -d, --duration S    seconds of load (5), after every connection is up.
 *   --key FILE          https://: the client certificate's private key.
 *   -k, --issuer-key F  an issuer's Ed25519 secret key (cats-key): each SCI
 *                       gets a token (subject load-I, CS-ID ARS).
 *   -n, --scis N        SCIs reporting, load-0 .. load-(N-1) (1000).
 *   --servername NAME   https://: the name sent as SNI and checked against
 *                       the server's certificate (default: the URL's host;
 *                       an IP literal is checked as an address and sent no
 *                       SNI, RFC 6066 §3).
 *
 * The https:// handshakes are made before the timed part (full ones, TLS
 * 1.2 or 1.3 as the server prefers); the load then counts requests only.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "base/cats.h"
#include "base/clock.h"
#include "net/ep.h"
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
	SSL *ssl;		/* https:// */
	bool want_out;		/* EPOLLOUT asked */
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
	int ep;
	uint64_t ok, other;
};

struct tlsopt {
	const char *cacert, *cert, *key, *servername;
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
	for (char *p = c->in; p < c->in + head; p++)
		if (strncasecmp(p, "\r\ncontent-length:", 17) == 0) {
			clen = strtoul(p + 17, NULL, 10);
			break;
		}
	if (c->inlen < head + clen)
		return 0;
	*status = atoi(c->in + 9);
	return head + clen;
}

/* Why the last TLS call on c failed, in words. */
static const char *
tls_why(struct conn *c)
{
	static char buf[256];
	long v = SSL_get_verify_result(c->ssl);
	unsigned long e = ERR_get_error();
	const char *r = v != X509_V_OK ? X509_verify_cert_error_string(v) :
	    e != 0 && ERR_reason_error_string(e) ? ERR_reason_error_string(e) :
	    errno != 0 ? strerror(errno) : "connection closed";
	snprintf(buf, sizeof(buf), "%s", r);
	ERR_clear_error();
	return buf;
}

/* Ask EPOLLOUT on c's socket, or stop asking. */
static void
want_out(struct load *l, struct conn *c, bool on)
{
	if (c->want_out == on)
		return;
	c->want_out = on;
	struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0),
		.data.ptr = c };
	epoll_ctl(l->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/*
 * Send what is left of c's request: 0 (all sent, or the rest waits for the
 * socket), -1 with why.
 */
static int
send_out(struct load *l, struct conn *c, const char **why)
{
	while (c->outoff < c->outlen) {
		size_t n = c->outlen - c->outoff;
		ssize_t w;
		if (c->ssl != NULL) {
			ERR_clear_error();
			int k = SSL_write(c->ssl, c->out + c->outoff, (int)n);
			if (k <= 0) {
				int e = SSL_get_error(c->ssl, k);
				if (e == SSL_ERROR_WANT_READ)
					return 0;	/* the next read */
				if (e == SSL_ERROR_WANT_WRITE) {
					want_out(l, c, true);
					return 0;
				}
				*why = tls_why(c);
				/* The server's alert says more than the
				 * broken pipe (a refused certificate). */
				char b[64];
				if (e == SSL_ERROR_SYSCALL &&
				    SSL_read(c->ssl, b, sizeof(b)) <= 0 &&
				    ERR_peek_error() != 0)
					*why = tls_why(c);
				return -1;
			}
			w = k;
		} else {
			w = write(c->fd, c->out + c->outoff, n);
			if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
				want_out(l, c, true);
				return 0;
			}
			if (w < 0) {
				*why = strerror(errno);
				return -1;
			}
		}
		c->outoff += (size_t)w;
	}
	want_out(l, c, false);
	return 0;
}

/*
 * Read what c's socket has (through TLS: every record that came), count
 * each whole response and send the next request: 0, or -1 with why.
 */
static int
take_in(struct load *l, struct conn *c, const char **why)
{
	for (;;) {
		if (c->inlen == sizeof(c->in)) {
			*why = "a response over 4 KiB";
			return -1;
		}
		ssize_t r;
		size_t room = sizeof(c->in) - c->inlen;
		if (c->ssl != NULL) {
			ERR_clear_error();
			errno = 0;
			int k = SSL_read(c->ssl, c->in + c->inlen, (int)room);
			if (k <= 0) {
				int e = SSL_get_error(c->ssl, k);
				if (e == SSL_ERROR_WANT_READ)
					break;
				if (e == SSL_ERROR_WANT_WRITE) {
					want_out(l, c, true);
					break;
				}
				*why = e == SSL_ERROR_ZERO_RETURN ? "connection "
				    "closed by the server" : tls_why(c);
				return -1;
			}
			r = k;
		} else {
			r = read(c->fd, c->in + c->inlen, room);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				break;
			if (r <= 0) {
				*why = r == 0 ? "connection closed by the "
				    "server" : strerror(errno);
				return -1;
			}
		}
		c->inlen += (size_t)r;
		int st;
		size_t used;
		while ((used = response(c, &st)) > 0) {
			if (st >= 200 && st < 300)
				l->ok++;
			else
				l->other++;
			memmove(c->in, c->in + used, c->inlen - used);
			c->inlen -= used;
			next_request(l, c);
		}
		if (c->ssl == NULL && (size_t)r < room)
			break;	/* the socket is empty */
	}
	return send_out(l, c, why);
}

/* The client context of https://, or NULL after one line. */
static SSL_CTX *
client_ctx(const struct tlsopt *t)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	const char *bad = NULL;
	if (ctx == NULL)
		bad = "TLS";
	else {
		SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
		if (t->cacert != NULL ? SSL_CTX_load_verify_locations(ctx,
		    t->cacert, NULL) != 1 : SSL_CTX_set_default_verify_paths(
		    ctx) != 1)
			bad = t->cacert ? t->cacert : "the system's CAs";
		else if (t->cert != NULL && SSL_CTX_use_certificate_chain_file(
		    ctx, t->cert) != 1)
			bad = t->cert;
		else if (t->key != NULL && (SSL_CTX_use_PrivateKey_file(ctx,
		    t->key, SSL_FILETYPE_PEM) != 1 ||
		    SSL_CTX_check_private_key(ctx) != 1))
			bad = t->key;
	}
	if (bad != NULL) {
		unsigned long e = ERR_get_error();
		fprintf(stderr, "httpload: %s: %s\n", bad, e &&
		    ERR_reason_error_string(e) ? ERR_reason_error_string(e) :
		    "cannot be used");
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/*
 * Connect c to the address (and over TLS with ctx, the handshake done,
 * the server verified as name), then make it non-blocking: 0, or -1 with
 * why.
 */
static int
conn_open(struct conn *c, const struct addrinfo *ai, SSL_CTX *ctx,
    const char *name, const char **why)
{
	c->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	static char buf[300];
	if (c->fd < 0 || connect(c->fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		snprintf(buf, sizeof(buf), "connect: %s", strerror(errno));
		*why = buf;
		return -1;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (ctx != NULL) {
		unsigned char ip[16];
		bool lit = inet_pton(AF_INET, name, ip) == 1 ||
		    inet_pton(AF_INET6, name, ip) == 1;
		c->ssl = SSL_new(ctx);
		if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1 ||
		    (lit ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl),
		    name) != 1 : SSL_set1_host(c->ssl, name) != 1) ||
		    (!lit && SSL_set_tlsext_host_name(c->ssl, name) != 1)) {
			*why = "cannot set up TLS";
			return -1;
		}
		ERR_clear_error();
		errno = 0;
		if (SSL_connect(c->ssl) != 1) {
			snprintf(buf, sizeof(buf), "TLS handshake: %s",
			    tls_why(c));
			*why = buf;
			return -1;
		}
	}
	cats_fd_nonblock(c->fd);
	return 0;
}

/* URL's parts: https or not, host (brackets of an IPv6 one taken off),
 * port, path.  -1 for a URL of another form. */
static int
parse_url(const char *url, bool *tls, char *host, size_t hlen, char *port,
    size_t plen, const char **path)
{
	const char *p;
	if (strncmp(url, "http://", 7) == 0)
		p = url + 7, *tls = false;
	else if (strncmp(url, "https://", 8) == 0)
		p = url + 8, *tls = true;
	else
		return -1;
	const char *e = *p == '[' ? strchr(p, ']') : p + strcspn(p, ":/");
	if (e == NULL)
		return -1;
	const char *h = *p == '[' ? p + 1 : p;
	if (e == h || (size_t)(e - h) >= hlen)
		return -1;
	snprintf(host, hlen, "%.*s", (int)(e - h), h);
	if (*e == ']')
		e++;
	snprintf(port, plen, "%s", *tls ? "443" : "80");
	if (*e == ':') {
		size_t n = strcspn(e + 1, "/");
		if (n == 0 || n >= plen)
			return -1;
		snprintf(port, plen, "%.*s", (int)n, e + 1);
		e += 1 + n;
	}
	if (*e != '/' && *e != '\0')
		return -1;
	*path = *e == '/' ? e : "/";
	return 0;
}

static int
push(const char *url, int conns, int secs, int nsci, const char *keyfile,
    const struct tlsopt *to)
{
	struct load l = { .nsci = nsci };
	char host[256], port[16];
	bool tls;
	if (parse_url(url, &tls, host, sizeof(host), port, sizeof(port),
	    &l.path) < 0) {
		fprintf(stderr, "httpload: %s: not http://HOST[:PORT][/PATH] "
		    "or https://...\n", url);
		return 2;
	}
	if (!tls && (to->cacert || to->cert || to->key || to->servername)) {
		fprintf(stderr, "httpload: %s: TLS options need https://\n",
		    url);
		return 2;
	}
	l.host = host;
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
	SSL_CTX *ctx = tls ? client_ctx(to) : NULL;
	if (tls && ctx == NULL)
		return 1;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int gai = getaddrinfo(host, port, &hints, &ai);
	if (gai != 0) {
		fprintf(stderr, "httpload: %s: %s\n", host, gai_strerror(gai));
		return 1;
	}
	l.ep = epoll_create1(EPOLL_CLOEXEC);
	struct conn *cs = calloc((size_t)conns, sizeof(*cs));
	const char *name = to->servername ? to->servername : host;
	for (int i = 0; i < conns; i++) {
		const char *why = NULL;
		if (conn_open(&cs[i], ai, ctx, name, &why) < 0) {
			fprintf(stderr, "httpload: %s: %s\n", url, why);
			return 1;
		}
		struct epoll_event ev = { .events = EPOLLIN,
			.data.ptr = &cs[i] };
		epoll_ctl(l.ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
	}
	freeaddrinfo(ai);
	uint64_t t0 = cats_clock_mono_ns(), end = t0 + (uint64_t)secs *
	    1000000000u;
	for (int i = 0; i < conns; i++) {
		const char *why = NULL;
		next_request(&l, &cs[i]);
		if (send_out(&l, &cs[i], &why) < 0) {
			fprintf(stderr, "httpload: %s: %s\n", url, why);
			return 1;
		}
	}
	struct epoll_event evs[64];
	while (cats_clock_mono_ns() < end) {
		int n = epoll_wait(l.ep, evs, 64, 100);
		for (int k = 0; k < n; k++) {
			struct conn *c = evs[k].data.ptr;
			const char *why = NULL;
			int rc = 0;
			if (evs[k].events & (EPOLLIN | EPOLLERR | EPOLLHUP))
				rc = take_in(&l, c, &why);
			else if (evs[k].events & EPOLLOUT)
				rc = send_out(&l, c, &why);
			if (rc < 0) {
				fprintf(stderr, "httpload: %s: %s\n", url, why);
				return 1;
			}
		}
	}
	double dt = (double)(cats_clock_mono_ns() - t0) / 1e9;
	printf("requests/s %.0f ok %" PRIu64 " other %" PRIu64 "\n",
	    (double)(l.ok + l.other) / dt, l.ok, l.other);
	for (int i = 0; i < conns; i++) {
		if (cs[i].ssl != NULL) {
			SSL_shutdown(cs[i].ssl);
			SSL_free(cs[i].ssl);
		}
		close(cs[i].fd);
		free(cs[i].out);
	}
	SSL_CTX_free(ctx);
	return 0;
}

static void
usage(void)
{
	fprintf(stderr, "usage: httpload serve PORT\n"
	    "       httpload push URL [--cacert file] [--cert file] "
	    "[-c conns] [-d secs]\n"
	    "                [--key file] [-k issuer.key] [-n scis] "
	    "[--servername name]\n");
}

int
main(int argc, char **argv)
{
	cats_crypto_init();
	signal(SIGPIPE, SIG_IGN);	/* a closed connection is an error line */
	if (argc >= 3 && strcmp(argv[1], "serve") == 0)
		return serve(atoi(argv[2]));
	if (argc < 3 || strcmp(argv[1], "push") != 0) {
		usage();
		return 2;
	}
	enum { O_CACERT = 0x100, O_CERT, O_KEY, O_SERVERNAME };
	static const struct option lo[] = {
		{ "cacert", required_argument, NULL, O_CACERT },
		{ "cert", required_argument, NULL, O_CERT },
		{ "conns", required_argument, NULL, 'c' },
		{ "duration", required_argument, NULL, 'd' },
		{ "issuer-key", required_argument, NULL, 'k' },
		{ "key", required_argument, NULL, O_KEY },
		{ "scis", required_argument, NULL, 'n' },
		{ "servername", required_argument, NULL, O_SERVERNAME },
		{ NULL, 0, NULL, 0 },
	};
	int conns = 16, secs = 5, nsci = 1000, ch;
	const char *key = NULL;
	struct tlsopt to = { 0 };
	optind = 3;
	while ((ch = getopt_long(argc, argv, "c:d:k:n:", lo, NULL)) != -1) {
		switch (ch) {
		case O_CACERT: to.cacert = optarg; break;
		case O_CERT: to.cert = optarg; break;
		case 'c': conns = atoi(optarg); break;
		case 'd': secs = atoi(optarg); break;
		case 'k': key = optarg; break;
		case O_KEY: to.key = optarg; break;
		case 'n': nsci = atoi(optarg); break;
		case O_SERVERNAME: to.servername = optarg; break;
		default: usage(); return 2;
		}
	}
	if (conns < 1 || secs < 1 || nsci < 1 || optind != argc ||
	    (to.cert == NULL) != (to.key == NULL)) {
		usage();
		return 2;
	}
	return push(argv[2], conns, secs, nsci, key, &to);
}
