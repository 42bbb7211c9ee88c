/*
 * test_tls.c - cats_tls_open (net/tls.h), the client of a tool that must
 * never wait, against cats_tls_accept on the same libevent loop and
 * against servers that are not TLS or not of the CA: one thread, so a
 * handshake that blocked would hang here.  The CAs and certificates are
 * made here (OpenSSL), in a temporary directory.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "base/cats.h"
#include "net/ep.h"
#include "net/tls.h"
#include "t.h"

static char dir[64];
static long serial = 1;

/* ---- certificates ---- */

static void
ext(X509 *x, X509 *issuer, int nid, const char *v)
{
	X509V3_CTX c;
	X509V3_set_ctx_nodb(&c);
	X509V3_set_ctx(&c, issuer, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &c, nid, v);
	if (e != NULL)
		X509_add_ext(x, e, -1);
	X509_EXTENSION_free(e);
}

/* A certificate for key k named cn, signed by ca (NULL: self-signed, a CA). */
static X509 *
mkcert(const char *cn, EVP_PKEY *k, X509 *ca, EVP_PKEY *cak, const char *san)
{
	X509 *x = X509_new();
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
	X509_gmtime_adj(X509_getm_notBefore(x), -3600);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, k);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC,
	    (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, ca ? X509_get_subject_name(ca) : n);
	X509 *is = ca ? ca : x;
	ext(x, is, NID_basic_constraints, ca ? "critical,CA:FALSE" :
	    "critical,CA:TRUE");
	ext(x, is, NID_key_usage, ca ? "critical,digitalSignature" :
	    "critical,keyCertSign,cRLSign");
	ext(x, is, NID_subject_key_identifier, "hash");
	ext(x, is, NID_authority_key_identifier, "keyid:always");
	if (san != NULL)
		ext(x, is, NID_subject_alt_name, san);
	X509_sign(x, ca ? cak : k, EVP_sha256());
	return x;
}

static const char *
path(const char *name)
{
	static char buf[8][128];
	static int i;
	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

static void
save(const char *name, X509 *x, EVP_PKEY *k)
{
	FILE *f = fopen(path(name), "w");
	if (x != NULL)
		PEM_write_X509(f, x);
	else
		PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	if (k != NULL)
		chmod(path(name), 0600);
}

/* ca1 with leaf1 (127.0.0.1, cats:sci:t1), ca2 with leaf2 (127.0.0.1). */
static void
make_certs(void)
{
	EVP_PKEY *k1 = EVP_EC_gen("P-256"), *k2 = EVP_EC_gen("P-256");
	EVP_PKEY *l1 = EVP_EC_gen("P-256"), *l2 = EVP_EC_gen("P-256");
	X509 *c1 = mkcert("test CA 1", k1, NULL, NULL, NULL);
	X509 *c2 = mkcert("test CA 2", k2, NULL, NULL, NULL);
	X509 *x1 = mkcert("leaf1", l1, c1, k1, "IP:127.0.0.1,URI:cats:sci:t1");
	X509 *x2 = mkcert("leaf2", l2, c2, k2, "IP:127.0.0.1");
	save("ca1.crt", c1, NULL);
	save("leaf1.crt", x1, NULL);
	save("leaf1.key", NULL, l1);
	save("leaf2.crt", x2, NULL);
	save("leaf2.key", NULL, l2);
	X509_free(c1);
	X509_free(c2);
	X509_free(x1);
	X509_free(x2);
	EVP_PKEY_free(k1);
	EVP_PKEY_free(k2);
	EVP_PKEY_free(l1);
	EVP_PKEY_free(l2);
}

static int
use(const char *cert, const char *key, const char *ca)
{
	cats_tls_opt(CATS_TLS_OPT_CERT, path(cert));
	cats_tls_opt(CATS_TLS_OPT_KEY, path(key));
	cats_tls_opt(CATS_TLS_OPT_CA, path(ca));
	return cats_tls_reload();
}

/* ---- a server on the loop ---- */

enum { SRV_TLS, SRV_PLAIN, SRV_MUTE };

static struct event_base *base;
static int srv_mode, srv_fd = -1, mute_fd = -1;

static void
on_accept(evutil_socket_t lfd, short what, void *arg)
{
	(void)what;
	(void)arg;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	if (srv_mode == SRV_TLS) {
		srv_fd = cats_tls_accept(base, fd, "127.0.0.1:test");
	} else if (srv_mode == SRV_PLAIN) {
		static const char a[] = "HTTP/1.1 400 Bad Request\r\n\r\n";
		(void)!write(fd, a, sizeof(a) - 1);
		close(fd);
	} else {
		mute_fd = fd;	/* says nothing */
	}
}

/* A listening socket on ip, port 0, its port in *port. */
static int
listen_on(const char *ip, unsigned *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	inet_pton(AF_INET, ip, &sa.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 8) < 0 || getsockname(fd, (struct sockaddr *)&sa,
	    &sl) < 0)
		return -1;
	*port = ntohs(sa.sin_port);
	return fd;
}

/* ---- the client ---- */

struct res {
	int calls;
	char why[400];
};

static void
on_done(void *arg, const char *why)
{
	struct res *r = arg;
	r->calls++;
	snprintf(r->why, sizeof(r->why), "%s", why ? why : "");
}

static void
tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(*(int *)arg)++;
}

/* Run the loop until cond(arg) or ms passed; the ticks (10 ms) counted. */
static int
run(bool (*cond)(void *), void *arg, int ms)
{
	int ticks = 0;
	struct event *t = event_new(base, -1, EV_PERSIST, tick, &ticks);
	struct timeval tv = { 0, 10000 };
	event_add(t, &tv);
	while ((cond == NULL || !cond(arg)) && ticks < ms / 10)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(t);
	return ticks;
}

static bool
called(void *arg)
{
	return ((struct res *)arg)->calls > 0;
}

struct rd {
	int fd;
	char buf[64];
	ssize_t n;
};

/* Something (or the end) read from rd->fd. */
static bool
readable(void *arg)
{
	struct rd *r = arg;
	ssize_t k = read(r->fd, r->buf, sizeof(r->buf) - 1);
	if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return false;
	r->n = k;
	r->buf[k > 0 ? k : 0] = '\0';
	return true;
}

static bool
srv_up(void *arg)
{
	(void)arg;
	return srv_fd >= 0;
}

/* A client to ip:port: its descriptor (or -1) and its outcome in *r. */
static int
open_to(const char *ip, unsigned port, struct res *r, char *err,
    size_t errlen)
{
	char spec[64];
	struct cats_ep ep;
	memset(r, 0, sizeof(*r));
	snprintf(spec, sizeof(spec), "tls:%s:%u", ip, port);
	if (cats_ep_parse(spec, &ep, err, errlen) < 0)
		return -1;
	return cats_tls_open(base, &ep, 0, on_done, r, err, errlen);
}

int
main(void)
{
	char err[400] = "";
	struct res r;
	unsigned port, p2;

	snprintf(dir, sizeof(dir), "/tmp/test_tls.XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 1;
	make_certs();
	base = event_base_new();
	cats_tls_opt(CATS_TLS_OPT_CERT, path("leaf1.crt"));
	cats_tls_opt(CATS_TLS_OPT_KEY, path("leaf1.key"));
	cats_tls_opt(CATS_TLS_OPT_CA, path("ca1.crt"));
	T_OK(cats_tls_init(err, sizeof(err)) == 0, "the files are taken%s%s",
	    err[0] ? ": " : "", err);
	int lfd = listen_on("127.0.0.1", &port);
	struct event *lev = event_new(base, lfd, EV_READ | EV_PERSIST,
	    on_accept, NULL);
	event_add(lev, NULL);

	/* 1. Both ends of the CA on one loop: the handshake runs on it. */
	srv_mode = SRV_TLS;
	int cfd = open_to("127.0.0.1", port, &r, err, sizeof(err));
	T_OK(cfd >= 0 && r.calls == 0, "cats_tls_open returns at once, "
	    "before the handshake: %s", cfd < 0 ? err : "");
	T_OK(write(cfd, "ping", 4) == 4, "bytes written before the handshake "
	    "are taken");
	run(called, &r, 3000);
	T_OK(r.calls == 1 && r.why[0] == '\0', "the server is verified: done "
	    "once, no reason (%d, %s)", r.calls, r.why);
	run(srv_up, NULL, 2000);
	struct rd sr = { .fd = srv_fd };
	run(readable, &sr, 2000);
	T_OK(sr.n == 4 && strcmp(sr.buf, "ping") == 0, "the server reads what "
	    "was written before the handshake ended");
	T_OK(cats_tls_fd_up(srv_fd) && cats_tls_fd_peer(srv_fd) != NULL &&
	    strstr(cats_tls_fd_peer(srv_fd), "URI:cats:sci:t1") != NULL,
	    "the server knows the client's certificate: %s",
	    cats_tls_fd_peer(srv_fd) ? cats_tls_fd_peer(srv_fd) : "none");
	T_OK(write(srv_fd, "pong", 4) == 4, "the server answers");
	struct rd cr = { .fd = cfd };
	run(readable, &cr, 2000);
	T_OK(cr.n == 4 && strcmp(cr.buf, "pong") == 0, "the client reads "
	    "the answer");
	close(cfd);
	sr.n = -2;
	run(readable, &sr, 2000);
	T_OK(sr.n == 0, "the client's close is the server's end of file");
	close(srv_fd);
	srv_fd = -1;
	T_OK(cats_tls_stats()->handshakes == 1, "one handshake counted");

	/* 2. A server whose certificate is of another CA. */
	T_OK(use("leaf2.crt", "leaf2.key", "ca1.crt") == 0, "reloaded with a "
	    "certificate of CA 2, trusting CA 1");
	cfd = open_to("127.0.0.1", port, &r, err, sizeof(err));
	run(called, &r, 3000);
	T_OK(r.calls == 1 && strstr(r.why, "TLS handshake with 127.0.0.1: ") ==
	    r.why && strstr(r.why, "unable to get local issuer certificate"),
	    "a server of another CA: refused, said why (%s)", r.why);
	cr.fd = cfd;
	cr.n = -2;
	run(readable, &cr, 2000);
	T_OK(cr.n == 0, "the descriptor reads end of file");
	close(cfd);
	run(NULL, NULL, 50);
	if (srv_fd >= 0)
		close(srv_fd);
	srv_fd = -1;
	T_OK(use("leaf1.crt", "leaf1.key", "ca1.crt") == 0, "CA 1's again");

	/* 3. The server's address is not its certificate's. */
	int lfd2 = listen_on("127.0.0.2", &p2);
	struct event *lev2 = event_new(base, lfd2, EV_READ | EV_PERSIST,
	    on_accept, NULL);
	event_add(lev2, NULL);
	cfd = open_to("127.0.0.2", p2, &r, err, sizeof(err));
	run(called, &r, 3000);
	T_OK(r.calls == 1 && strstr(r.why, "mismatch") != NULL, "a "
	    "certificate for another address: refused (%s)", r.why);
	close(cfd);
	run(NULL, NULL, 50);
	if (srv_fd >= 0)
		close(srv_fd);
	srv_fd = -1;
	event_free(lev2);
	close(lfd2);

	/* 4. A plaintext server. */
	srv_mode = SRV_PLAIN;
	cfd = open_to("127.0.0.1", port, &r, err, sizeof(err));
	run(called, &r, 3000);
	T_OK(r.calls == 1 && strstr(r.why, "TLS handshake with 127.0.0.1: ") ==
	    r.why, "a plaintext server: refused (%s)", r.why);
	close(cfd);

	/* 5. Nobody listening: refused at once, or by the callback. */
	int dead = listen_on("127.0.0.1", &p2);
	close(dead);
	cfd = open_to("127.0.0.1", p2, &r, err, sizeof(err));
	if (cfd >= 0)
		run(called, &r, 3000);
	T_OK(cfd < 0 ? strstr(err, "refused") != NULL : r.calls == 1 &&
	    strstr(r.why, "refused") != NULL, "no server: connection refused "
	    "(%s)", cfd < 0 ? err : r.why);
	if (cfd >= 0)
		close(cfd);

	/* 6. A mute server: the loop goes on; a close ends the attempt. */
	srv_mode = SRV_MUTE;
	cfd = open_to("127.0.0.1", port, &r, err, sizeof(err));
	int ticks = run(NULL, NULL, 300);
	T_OK(ticks >= 25 && r.calls == 0, "a server that never answers: the "
	    "loop runs on (%d ticks), no outcome yet", ticks);
	close(cfd);
	run(NULL, NULL, 100);
	T_OK(r.calls == 0, "closed before the outcome: no call");
	if (mute_fd >= 0)
		close(mute_fd);

	event_free(lev);
	close(lfd);
	cats_tls_free();
	event_base_free(base);
	const char *files[] = { "ca1.crt", "leaf1.crt", "leaf1.key",
		"leaf2.crt", "leaf2.key" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		unlink(path(files[i]));
	rmdir(dir);
	return t_done();
}
