/*
 * tls.c - server and client TLS contexts, their reload, the handshake
 * audit, the record streams' TLS (tls.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include "base/cats.h"
#include "base/file.h"
#include "base/log.h"
#include "net/ep.h"
#include "net/tls.h"

#define PEM_MAX (1u << 20)
#define PROXY_HIGH (1u << 20)
#define MAX_LISTEN 32

static char *o_cert, *o_key, *o_ca, *o_crl;
static SSL_CTX *g_srv, *g_cli;
static int g_exidx = -1;
static struct cats_tls_stats g_st;
static int g_listen[MAX_LISTEN];
static size_t g_nlisten;

/* What a server-side connection's handshake audit needs. */
struct hs {
	char why[200];		/* the verification error or alert sent */
	char peer[80];		/* the peer's address, taken while it is known */
	bool audited, done;
	bool uris_known;	/* uris and nuris hold the certificate's */
	int nuris;		/* its SAN URIs, or -1: no certificate */
	char *uris;		/* each NUL-terminated */
};

/*
 * The peer's address for an audit line: the one given at accept, or read
 * from the socket at the first step of the handshake (a peer that reset
 * the connection has no address by the time its refusal is written).
 */
static const char *
hs_peer(struct hs *h, int fd)
{
	if (h->peer[0] == '\0' && fd >= 0) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0 &&
		    (ss.ss_family == AF_INET || ss.ss_family == AF_INET6))
			cats_ep_peer(fd, h->peer, sizeof(h->peer));
	}
	return h->peer[0] != '\0' ? h->peer : "local:0";
}

bool
cats_tls_opt(int ch, const char *arg)
{
	char **p = ch == CATS_TLS_OPT_CA ? &o_ca : ch == CATS_TLS_OPT_CERT ?
	    &o_cert : ch == CATS_TLS_OPT_CRL ? &o_crl : ch == CATS_TLS_OPT_KEY ?
	    &o_key : NULL;
	if (p == NULL)
		return false;
	free(*p);
	*p = strdup(arg);
	return true;
}

/* The first error of OpenSSL's queue, in words (and the queue emptied). */
static const char *
ssl_why(void)
{
	static char buf[200];
	unsigned long e = ERR_get_error();
	const char *r = e ? ERR_reason_error_string(e) : NULL;
	snprintf(buf, sizeof(buf), "%s", r ? r : e ? "TLS error" :
	    "connection closed");
	ERR_clear_error();
	return buf;
}

/* A PEM file into a memory BIO (secret: refused if group/others read it). */
static BIO *
pem_bio(const char *path, bool secret, char *err, size_t errlen)
{
	char why[300];
	int fd = cats_file_open(path, why, sizeof(why));
	if (fd < 0) {
		snprintf(err, errlen, "%s", why);
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size > (off_t)PEM_MAX) {
		snprintf(err, errlen, "%s: %s", path, errno ? strerror(errno) :
		    "over 1 MiB");
		close(fd);
		return NULL;
	}
	if (secret && (st.st_mode & 077) != 0) {
		snprintf(err, errlen, "%s: a private key that group or others "
		    "may read (chmod 600)", path);
		close(fd);
		return NULL;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	size_t n = 0;
	while (buf != NULL && n < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + n, (size_t)st.st_size - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	if (buf == NULL || n != (size_t)st.st_size) {
		snprintf(err, errlen, "%s: cannot read", path);
		free(buf);
		return NULL;
	}
	BIO *b = BIO_new(BIO_s_mem());
	if (b == NULL || BIO_write(b, buf, (int)n) != (int)n) {
		BIO_free(b);
		b = NULL;
		snprintf(err, errlen, "%s: out of memory", path);
	}
	OPENSSL_cleanse(buf, n);
	free(buf);
	return b;
}

/* The certificate chain and key of the tool. */
static int
load_cert(SSL_CTX *ctx, char *err, size_t errlen)
{
	BIO *b = pem_bio(o_cert, false, err, errlen);
	if (b == NULL)
		return -1;
	X509 *x = PEM_read_bio_X509_AUX(b, NULL, NULL, NULL);
	int rc = x != NULL && SSL_CTX_use_certificate(ctx, x) == 1 ? 0 : -1;
	X509_free(x);
	while (rc == 0 && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL)
		if (SSL_CTX_add0_chain_cert(ctx, x) != 1) {
			X509_free(x);
			rc = -1;
		}
	BIO_free(b);
	ERR_clear_error();
	if (rc < 0) {
		snprintf(err, errlen, "%s: no PEM certificate", o_cert);
		return -1;
	}
	if ((b = pem_bio(o_key, true, err, errlen)) == NULL)
		return -1;
	EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
	BIO_free(b);
	if (k == NULL || SSL_CTX_use_PrivateKey(ctx, k) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		EVP_PKEY_free(k);
		snprintf(err, errlen, "%s: %s", o_key, k == NULL ? "no PEM "
		    "private key" : "not the key of the certificate");
		ERR_clear_error();
		return -1;
	}
	EVP_PKEY_free(k);
	return 0;
}

/*
 * Every PEM certificate (crl false) or CRL of the file path into the
 * store: 0, or -1 when it cannot be read or holds none.
 */
static int
load_pems(X509_STORE *st, const char *path, bool crl, char *err,
    size_t errlen)
{
	BIO *b = pem_bio(path, false, err, errlen);
	if (b == NULL)
		return -1;
	size_t n = 0;
	for (;; n++) {
		if (crl) {
			X509_CRL *c = PEM_read_bio_X509_CRL(b, NULL, NULL, NULL);
			if (c == NULL)
				break;
			X509_STORE_add_crl(st, c);
			X509_CRL_free(c);
		} else {
			X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
			if (x == NULL)
				break;
			X509_STORE_add_cert(st, x);
			X509_free(x);
		}
	}
	BIO_free(b);
	ERR_clear_error();
	if (n == 0) {
		snprintf(err, errlen, "%s: no PEM %s", path, crl ? "CRL" :
		    "certificate");
		return -1;
	}
	return 0;
}

/* The CA certificates and the CRLs into the context's store. */
static int
load_trust(SSL_CTX *ctx, char *err, size_t errlen)
{
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	if (o_ca != NULL && load_pems(st, o_ca, false, err, errlen) < 0)
		return -1;
	if (o_crl != NULL) {
		if (load_pems(st, o_crl, true, err, errlen) < 0)
			return -1;
		X509_STORE_set_flags(st, X509_V_FLAG_CRL_CHECK);
	}
	return 0;
}

/* Keep the first verification error, for the audit line. */
static int
verify_cb(int ok, X509_STORE_CTX *x)
{
	if (ok)
		return 1;
	SSL *ssl = X509_STORE_CTX_get_ex_data(x,
	    SSL_get_ex_data_X509_STORE_CTX_idx());
	struct hs *h = ssl ? SSL_get_ex_data(ssl, g_exidx) : NULL;
	if (h != NULL && h->why[0] == '\0')
		snprintf(h->why, sizeof(h->why), "certificate: %s",
		    X509_verify_cert_error_string(X509_STORE_CTX_get_error(x)));
	return 0;
}

/* The subject and SAN entries of a certificate, for audit lines. */
static void
cert_names(X509 *x, char *subj, size_t slen, char *san, size_t alen)
{
	subj[0] = san[0] = '\0';
	if (x == NULL)
		return;
	BIO *b = BIO_new(BIO_s_mem());
	if (b != NULL) {
		X509_NAME_print_ex(b, X509_get_subject_name(x), 0,
		    XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
		int n = BIO_read(b, subj, (int)slen - 1);
		subj[n > 0 ? n : 0] = '\0';
		BIO_free(b);
	}
	GENERAL_NAMES *g = X509_get_ext_d2i(x, NID_subject_alt_name, NULL,
	    NULL);
	size_t at = 0;
	for (int i = 0; g != NULL && i < sk_GENERAL_NAME_num(g); i++) {
		const GENERAL_NAME *e = sk_GENERAL_NAME_value(g, i);
		char v[256] = "";
		const char *kind = NULL;
		if (e->type == GEN_DNS || e->type == GEN_URI ||
		    e->type == GEN_EMAIL) {
			const ASN1_IA5STRING *s = e->d.ia5;
			kind = e->type == GEN_DNS ? "DNS" : e->type == GEN_URI ?
			    "URI" : "email";
			snprintf(v, sizeof(v), "%.*s", s->length, s->data);
		} else if (e->type == GEN_IPADD) {
			kind = "IP";
			int fam = e->d.ip->length == 4 ? AF_INET :
			    e->d.ip->length == 16 ? AF_INET6 : 0;
			if (fam == 0 || inet_ntop(fam, e->d.ip->data, v,
			    sizeof(v)) == NULL)
				kind = NULL;
		}
		if (kind == NULL)
			continue;
		int n = snprintf(san + at, alen - at, "%s%s:%s", at ? "," : "",
		    kind, v);
		if (n < 0 || (size_t)n >= alen - at)
			break;
		at += (size_t)n;
	}
	GENERAL_NAMES_free(g);
}

/* The peer's certificate on a TLS bufferevent (a reference), or NULL. */
static X509 *
bev_cert(struct bufferevent *bev)
{
	SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
	return ssl ? SSL_get1_peer_certificate(ssl) : NULL;
}

/* "SUBJECT;SAN=..." of a certificate into buf; NULL when x has no names. */
static const char *
cert_id(X509 *x, char *buf, size_t len)
{
	char subj[256], san[512];
	cert_names(x, subj, sizeof(subj), san, sizeof(san));
	if (subj[0] == '\0' && san[0] == '\0')
		return NULL;
	snprintf(buf, len, "%s%s%s", subj, san[0] ? ";SAN=" : "", san);
	return buf;
}

/* The handshake of a server-side connection, audited once. */
static void
info_cb(const SSL *ssl, int where, int ret)
{
	if (!SSL_is_server((SSL *)ssl))
		return;
	struct hs *h = SSL_get_ex_data(ssl, g_exidx);
	if (h == NULL || h->audited)
		return;
	const char *peer = hs_peer(h, SSL_get_fd(ssl));
	char subj[256], san[512], q1[256], q2[512], q3[256];
	if (where & SSL_CB_HANDSHAKE_DONE) {
		h->audited = h->done = true;
		g_st.handshakes++;
		X509 *x = SSL_get1_peer_certificate(ssl);
		cert_names(x, subj, sizeof(subj), san, sizeof(san));
		X509_free(x);
		cats_audit("tls-peer", "src=%s subject=\"%s\" san=\"%s\" "
		    "version=%s cipher=%s", peer, cats_quote(subj, q1,
		    sizeof(q1)), cats_quote(san, q2, sizeof(q2)),
		    SSL_get_version(ssl), SSL_get_cipher_name(ssl));
		return;
	}
	if ((where & SSL_CB_ALERT) && (where & SSL_CB_WRITE) &&
	    h->why[0] == '\0') {
		const char *d = SSL_alert_desc_string_long(ret);
		if ((ret & 0xff) == 116)
			d = "certificate required";	/* TLS 1.3 */
		snprintf(h->why, sizeof(h->why), "alert %s", d);
		return;
	}
	/* A failed handshake step: an error queued, or nothing to wait for. */
	if ((where & SSL_CB_EXIT) && ret <= 0 && (ERR_peek_error() != 0 ||
	    SSL_want(ssl) == SSL_NOTHING)) {
		h->audited = true;
		g_st.refused++;
		unsigned long e = ERR_peek_error();
		const char *r = e ? ERR_reason_error_string(e) : NULL;
		char why[300];
		snprintf(why, sizeof(why), "%s%s%s", h->why, h->why[0] && r ?
		    "; " : "", r ? r : h->why[0] ? "" : "closed in the "
		    "handshake");
		/* Rate-limited: a flood of plaintext or mute peers. */
		cats_audit_limited("tls-refused", "src=%s reason=\"%s\"", peer,
		    cats_quote(why, q3, sizeof(q3)));
	}
}

static void
hs_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
    void *argp)
{
	struct hs *h = ptr;
	if (h != NULL)
		free(h->uris);
	free(h);
}

/* A new SSL of the server context, with its audit state (peer: the
 * address recorded at accept, or NULL). */
static SSL *
server_ssl(const char *peer)
{
	SSL *ssl = g_srv ? SSL_new(g_srv) : NULL;
	struct hs *h = calloc(1, sizeof(*h));
	if (ssl == NULL || h == NULL || SSL_set_ex_data(ssl, g_exidx, h) != 1) {
		free(h);
		SSL_free(ssl);
		return NULL;
	}
	if (peer != NULL)
		snprintf(h->peer, sizeof(h->peer), "%s", peer);
	return ssl;
}

/* A context: the versions, ciphers and options every cats TLS has. */
static SSL_CTX *
make_ctx(bool server, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() :
	    TLS_client_method());
	if (ctx == NULL) {
		snprintf(err, errlen, "TLS: %s", ssl_why());
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION |
	    SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
	    SSL_OP_NO_TICKET);
	SSL_CTX_clear_mode(ctx, SSL_MODE_AUTO_RETRY);
	SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_cipher_list(ctx, "ECDHE+AESGCM:ECDHE+CHACHA20");
	if (server) {
		SSL_CTX_set_num_tickets(ctx, 0);
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
		SSL_CTX_set_info_callback(ctx, info_cb);
	}
	if ((o_cert != NULL && load_cert(ctx, err, errlen) < 0) ||
	    load_trust(ctx, err, errlen) < 0) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	if (server && o_ca != NULL)
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER |
		    SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verify_cb);
	else if (!server) {
		if (o_ca == NULL)
			SSL_CTX_set_default_verify_paths(ctx);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	}
	return ctx;
}

static int
build(SSL_CTX **srv, SSL_CTX **cli, char *err, size_t errlen)
{
	*srv = *cli = NULL;
	if ((o_cert == NULL) != (o_key == NULL)) {
		snprintf(err, errlen, "--tls-cert and --tls-key go together");
		return -1;
	}
	if (o_cert != NULL && (*srv = make_ctx(true, err, errlen)) == NULL)
		return -1;
	if ((*cli = make_ctx(false, err, errlen)) == NULL) {
		SSL_CTX_free(*srv);
		*srv = NULL;
		return -1;
	}
	return 0;
}

int
cats_tls_init(char *err, size_t errlen)
{
	if (g_exidx < 0)
		g_exidx = SSL_get_ex_new_index(0, NULL, NULL, NULL, hs_free);
	if (o_cert == NULL && o_key == NULL && o_ca == NULL && o_crl == NULL)
		return 0;
	SSL_CTX *s, *c;
	if (build(&s, &c, err, errlen) < 0)
		return -1;
	SSL_CTX_free(g_srv);
	SSL_CTX_free(g_cli);
	g_srv = s;
	g_cli = c;
	return 0;
}

int
cats_tls_setup(void)
{
	char err[400];
	if (cats_tls_init(err, sizeof(err)) == 0)
		return 0;
	cats_errorx("%s", err);
	return CATS_EXIT_NOPERM;
}

bool
cats_tls_server_on(void)
{
	return g_srv != NULL;
}

int
cats_tls_reload(void)
{
	char err[400];
	SSL_CTX *s, *c;
	if (g_srv == NULL && g_cli == NULL)
		return 0;
	if (build(&s, &c, err, sizeof(err)) < 0) {
		g_st.reload_failed++;
		cats_errorx("TLS reload refused, the running certificates and "
		    "CRLs stay: %s", err);
		cats_audit("tls-reload-refused", "reason=\"%s\"", err);
		return -1;
	}
	/* Open connections hold references to the old contexts. */
	SSL_CTX_free(g_srv);
	SSL_CTX_free(g_cli);
	g_srv = s;
	g_cli = c;
	g_st.reloads++;
	cats_audit("tls-reloaded", "cert=%s crl=%s", o_cert ? o_cert : "-",
	    o_crl ? o_crl : "-");
	return 0;
}

const struct cats_tls_stats *
cats_tls_stats(void)
{
	return &g_st;
}

/* ---- listening sockets ---- */

int
cats_tls_mark_listen(int fd, bool tls)
{
	for (size_t i = 0; i < g_nlisten; i++)
		if (g_listen[i] == fd) {
			if (!tls)
				g_listen[i] = g_listen[--g_nlisten];
			return 0;
		}
	if (!tls)
		return 0;
	if (g_nlisten == MAX_LISTEN)
		return -1;
	g_listen[g_nlisten++] = fd;
	return 0;
}

bool
cats_tls_is_listen(int fd)
{
	for (size_t i = 0; i < g_nlisten; i++)
		if (g_listen[i] == fd)
			return true;
	return false;
}

/*
 * Records and answers leave in TLS records written one by one: without
 * TCP_NODELAY the last of them waits for the peer's delayed ACK.
 */
static void
nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * One TLS record for what is written together.  libevent's OpenSSL
 * bufferevent calls SSL_write once per chain of its output buffer, so an
 * evhttp answer (its head, then the body buffer moved in whole) left in
 * two records, each its own encryption and its own write(2), and an SSE
 * chunk in three.  A callback on the output keeps the first record's worth
 * (16 KiB, what the bufferevent writes in one go) contiguous as bytes are
 * added; the write runs on the next loop turn, so it finds them in one
 * chain.  The copy is of at most 16 KiB, and none once the front chain
 * holds that much.
 */
#define REC_MAX 16384

static void
coalesce_cb(struct evbuffer *out, const struct evbuffer_cb_info *info,
    void *arg)
{
	(void)arg;
	if (info->n_added == 0)
		return;
	size_t len = evbuffer_get_length(out);
	size_t want = len < REC_MAX ? len : REC_MAX;
	if (evbuffer_get_contiguous_space(out) < want)
		(void)evbuffer_pullup(out, (ev_ssize_t)want);
}

/* Write what is added to a TLS bufferevent's output in whole records. */
static void
coalesce(struct bufferevent *bev)
{
	(void)evbuffer_add_cb(bufferevent_get_output(bev), coalesce_cb, NULL);
}

/* ---- record streams, server side: a proxy on the loop ---- */

/*
 * The TLS bufferevent on the network socket and a socket bufferevent on
 * one end of a socket pair; the tool has the other end.  Bytes go across
 * both ways (at most PROXY_HIGH waiting each way: reading pauses), and an
 * end of file on one side closes the other once what it has is out.
 */
struct proxy {
	struct bufferevent *net, *app;
	int toolfd;
	bool up, net_done, net_err, app_done, app_shut;
	char *id;		/* the peer's identity, after the handshake */
	/* A client's (cats_tls_open): its handshake deadline and outcome. */
	struct event *deadline;
	uint64_t deadline_ms;
	void (*done)(void *, const char *);
	void *done_arg;
	char *host;
	int cfd;		/* the tool's descriptor */
	struct proxy *cnext;
};

static struct proxy *g_clients;	/* client proxies alive (cats_tls_open) */

static struct proxy **g_byfd;	/* by the tool's descriptor */
static size_t g_nbyfd;

static void
proxy_free(struct proxy *p)
{
	SSL *ssl = bufferevent_openssl_get_ssl(p->net);
	struct hs *h = ssl ? SSL_get_ex_data(ssl, g_exidx) : NULL;
	if (h != NULL && !h->audited) {
		/* Closed by the tool (a deadline) before the handshake. */
		h->audited = true;
		g_st.refused++;
		cats_audit_limited("tls-refused", "src=%s reason=\"closed "
		    "before the handshake finished\"",
		    hs_peer(h, bufferevent_getfd(p->net)));
	}
	if (p->toolfd >= 0 && (size_t)p->toolfd < g_nbyfd &&
	    g_byfd[p->toolfd] == p)
		g_byfd[p->toolfd] = NULL;
	if (p->host != NULL) {
		struct proxy **pp = &g_clients;
		while (*pp != NULL && *pp != p)
			pp = &(*pp)->cnext;
		if (*pp != NULL)
			*pp = p->cnext;
		if (p->deadline != NULL)
			event_free(p->deadline);
		free(p->host);
	}
	bufferevent_free(p->net);
	bufferevent_free(p->app);
	free(p->id);
	free(p);
}

/* Room in g_byfd for the descriptor fd. */
static int
byfd_room(int fd)
{
	if ((size_t)fd < g_nbyfd)
		return 0;
	size_t n = (size_t)fd * 2 + 64;
	struct proxy **v = realloc(g_byfd, n * sizeof(*v));
	if (v == NULL)
		return -1;
	memset(v + g_nbyfd, 0, (n - g_nbyfd) * sizeof(*v));
	g_byfd = v;
	g_nbyfd = n;
	return 0;
}

bool
cats_tls_fd_up(int fd)
{
	return fd >= 0 && (size_t)fd < g_nbyfd && g_byfd[fd] != NULL &&
	    g_byfd[fd]->up;
}

const char *
cats_tls_fd_peer(int fd)
{
	if (fd < 0 || (size_t)fd >= g_nbyfd || g_byfd[fd] == NULL)
		return NULL;
	return g_byfd[fd]->id;
}

/*
 * The end of a direction: the peer's close_notify (or end of file) ends
 * what the tool reads once it has all of it (a half close: the tool may
 * still answer); the tool's close ends the connection once what it wrote
 * is out.  A TLS error ends both.
 */
static void
proxy_check(struct proxy *p)
{
	size_t to_app = evbuffer_get_length(bufferevent_get_output(p->app));
	size_t to_net = evbuffer_get_length(bufferevent_get_output(p->net));
	if ((p->net_err && to_app == 0) || (p->app_done && to_net == 0) ||
	    (p->app_done && p->net_err)) {
		proxy_free(p);
		return;
	}
	if (p->net_done && to_app == 0 && !p->app_shut) {
		p->app_shut = true;
		shutdown(bufferevent_getfd(p->app), SHUT_WR);
	}
}

/*
 * What one side read goes to the other side's output (once the handshake
 * is done: the tool's bytes wait for it), reading paused past PROXY_HIGH.
 */
static void
carry(struct proxy *p, struct bufferevent *from, struct bufferevent *to)
{
	if (!p->up)
		return;
	struct evbuffer *out = bufferevent_get_output(to);
	evbuffer_add_buffer(out, bufferevent_get_input(from));
	if (evbuffer_get_length(out) > PROXY_HIGH)
		bufferevent_disable(from, EV_READ);
}

/* One side's output went out: the other side may read again. */
static void
resume(struct proxy *p, bool from_done, struct bufferevent *from)
{
	if (!from_done && p->up)
		bufferevent_enable(from, EV_READ);
	proxy_check(p);
}

static void
net_read(struct bufferevent *bev, void *arg)
{
	carry(arg, bev, ((struct proxy *)arg)->app);
}

static void
app_read(struct bufferevent *bev, void *arg)
{
	carry(arg, bev, ((struct proxy *)arg)->net);
}

static void
net_write(struct bufferevent *bev, void *arg)
{
	struct proxy *p = arg;
	(void)bev;
	resume(p, p->app_done, p->app);
}

static void
app_write(struct bufferevent *bev, void *arg)
{
	struct proxy *p = arg;
	(void)bev;
	resume(p, p->net_done, p->net);
}

/* A client's handshake ended (why NULL: the server is verified). */
static void
client_done(struct proxy *p, const char *why)
{
	void (*done)(void *, const char *) = p->done;
	p->done = NULL;
	if (p->deadline != NULL)
		event_del(p->deadline);
	if (done != NULL)
		done(p->done_arg, why);
}

/* Why a client's connect or handshake failed, in words. */
static const char *
client_why(struct proxy *p, struct bufferevent *bev, short what)
{
	static char buf[400];
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;
	unsigned long e = bufferevent_get_openssl_error(bev);
	int soerr = 0, en = errno;
	socklen_t sl = sizeof(soerr);
	int fd = bufferevent_getfd(bev);
	struct sockaddr_storage ss;
	socklen_t al = sizeof(ss);
	if (fd >= 0)
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
	/*
	 * A connect that failed reaches here as the handshake's end of file
	 * (a "dirty shutdown", allowed): errno still says why, or the socket
	 * has no peer.
	 */
	bool unconnected = fd >= 0 && getpeername(fd, (struct sockaddr *)&ss,
	    &al) < 0;
	const char *r = v != X509_V_OK ? X509_verify_cert_error_string(v) :
	    e != 0 && ERR_reason_error_string(e) ? ERR_reason_error_string(e) :
	    soerr != 0 ? strerror(soerr) : ((what & BEV_EVENT_ERROR) ||
	    unconnected) && en != 0 ? strerror(en) : unconnected ?
	    "connection not made" : "closed in the handshake";
	snprintf(buf, sizeof(buf), "TLS handshake with %s: %s", p->host, r);
	return buf;
}

static void
net_event(struct bufferevent *bev, short what, void *arg)
{
	struct proxy *p = arg;
	if (what & BEV_EVENT_CONNECTED) {
		X509 *x = bev_cert(bev);
		char id[800];
		if (cert_id(x, id, sizeof(id)) != NULL)
			p->id = strdup(id);
		X509_free(x);
		p->up = true;
		client_done(p, NULL);
		app_read(p->app, p);
		return;
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		if (!p->up && p->done != NULL)
			client_done(p, client_why(p, bev, what));
		ERR_clear_error();
		p->net_done = true;
		p->net_err |= (what & BEV_EVENT_ERROR) != 0 || !p->up;
		bufferevent_disable(bev, EV_READ);
		proxy_check(p);
	}
}

static void
app_event(struct bufferevent *bev, short what, void *arg)
{
	struct proxy *p = arg;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		p->app_done = true;
		bufferevent_disable(bev, EV_READ);
		proxy_check(p);
	}
}

/* A failed start of a connection: what it held is freed; -1. */
static int
undo(SSL *ssl, int fd, const int sp[2])
{
	SSL_free(ssl);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 2; i++)
		if (sp[i] >= 0)
			close(sp[i]);
	return -1;
}

int
cats_tls_accept(struct event_base *base, int fd, const char *peer)
{
	int sp[2] = { -1, -1 };
	SSL *ssl = server_ssl(peer);
	struct proxy *p = calloc(1, sizeof(*p));
	if (ssl == NULL || p == NULL || socketpair(AF_UNIX, SOCK_STREAM |
	    SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0 || byfd_room(sp[1]) < 0)
		goto fail;
	cats_fd_nonblock(fd);
	nodelay(fd);
	p->toolfd = sp[1];
	p->app = bufferevent_socket_new(base, sp[0], BEV_OPT_CLOSE_ON_FREE);
	if (p->app == NULL)
		goto fail;
	sp[0] = -1;
	p->net = bufferevent_openssl_socket_new(base, fd, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (p->net == NULL)
		goto fail;
	bufferevent_openssl_set_allow_dirty_shutdown(p->net, 1);
	coalesce(p->net);
	g_byfd[sp[1]] = p;
	bufferevent_setcb(p->net, net_read, net_write, net_event, p);
	bufferevent_setcb(p->app, app_read, app_write, app_event, p);
	bufferevent_enable(p->net, EV_READ | EV_WRITE);
	/* The tool's bytes wait for the handshake (app_read); its close is
	 * seen at once. */
	bufferevent_enable(p->app, EV_READ | EV_WRITE);
	return sp[1];
fail:
	if (p != NULL && p->app != NULL)
		bufferevent_free(p->app);
	free(p);
	return undo(ssl, fd, sp);
}

/* ---- HTTP servers ---- */

struct bufferevent *
cats_tls_bev(struct event_base *base)
{
	SSL *ssl = server_ssl(NULL);
	if (ssl == NULL)
		return NULL;
	struct bufferevent *b = bufferevent_openssl_socket_new(base, -1, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (b != NULL) {
		bufferevent_openssl_set_allow_dirty_shutdown(b, 1);
		coalesce(b);
	}
	return b;
}

int
cats_tls_bev_send(struct bufferevent *bev, const void *p, size_t n)
{
	SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
	if (ssl == NULL || n > INT32_MAX)
		return -1;
	int k = SSL_write(ssl, p, (int)n);
	ERR_clear_error();
	return k == (int)n ? 0 : -1;
}

/*
 * Every SAN URI of x into buf, each NUL-terminated, v[0..] at them: the
 * count, or -2 (over max entries or len bytes, or a control character).
 */
static int
san_uris(X509 *x, char *buf, size_t len, const char **v, size_t max)
{
	GENERAL_NAMES *g = X509_get_ext_d2i(x, NID_subject_alt_name, NULL,
	    NULL);
	int n = 0;
	size_t used = 0;
	for (int i = 0; g != NULL && i < sk_GENERAL_NAME_num(g); i++) {
		const GENERAL_NAME *e = sk_GENERAL_NAME_value(g, i);
		if (e->type != GEN_URI)
			continue;
		size_t k = (size_t)e->d.ia5->length;
		if ((size_t)n >= max || k + 1 > len - used) {
			n = -2;
			break;
		}
		for (size_t j = 0; j < k && n >= 0; j++)
			if (e->d.ia5->data[j] < 0x20 || e->d.ia5->data[j] == 0x7f)
				n = -2;
		if (n < 0)
			break;
		memcpy(buf + used, e->d.ia5->data, k);
		buf[used + k] = '\0';
		v[n++] = buf + used;
		used += k + 1;
	}
	GENERAL_NAMES_free(g);
	return n;
}

/*
 * The URIs of a connection's certificate are read once, after its
 * handshake (the push and ingest handlers ask on every request, and
 * decoding the extension was a per-request cost of mutual TLS): kept in
 * the connection's audit state, up to URI_MAX of them in URI_LEN bytes
 * (more are read from the certificate each time).  The certificate of a
 * connection cannot change: renegotiation is off, and so is TLS 1.3
 * post-handshake authentication.
 */
#define URI_MAX 32
#define URI_LEN 4096

static void
uris_cache(struct hs *h, const SSL *ssl)
{
	X509 *x = SSL_get0_peer_certificate(ssl);
	char tmp[URI_LEN];
	const char *tv[URI_MAX];
	int n = x != NULL ? san_uris(x, tmp, sizeof(tmp), tv, URI_MAX) : -1;
	if (n == -2)
		return;		/* not kept: asked of the certificate */
	size_t used = n > 0 ? (size_t)(tv[n - 1] - tmp) + strlen(tv[n - 1]) +
	    1 : 0;
	if (used > 0 && (h->uris = malloc(used)) == NULL)
		return;
	if (used > 0)
		memcpy(h->uris, tmp, used);
	h->nuris = n;
	h->uris_known = true;
}

int
cats_tls_bev_uris(struct bufferevent *bev, char *buf, size_t len,
    const char **v, size_t max)
{
	SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
	struct hs *h = ssl ? SSL_get_ex_data(ssl, g_exidx) : NULL;
	if (h != NULL && h->done && !h->uris_known)
		uris_cache(h, ssl);
	if (h == NULL || !h->uris_known) {
		X509 *x = bev_cert(bev);
		if (x == NULL)
			return -1;
		int n = san_uris(x, buf, len, v, max);
		X509_free(x);
		return n;
	}
	if (h->nuris < 0)
		return h->nuris;
	const char *p = h->uris;
	size_t used = 0;
	for (int i = 0; i < h->nuris; i++) {
		size_t k = strlen(p);
		if ((size_t)i >= max || k + 1 > len - used)
			return -2;
		memcpy(buf + used, p, k + 1);
		v[i] = buf + used;
		used += k + 1;
		p += k + 1;
	}
	return h->nuris;
}

/* ---- clients ---- */

/*
 * A client connection's thread: the TLS connection on net (non-blocking),
 * the plain bytes on app (blocking), carried across until either end
 * closes; then what the other still has, and a close_notify.
 */
struct pump {
	SSL *ssl;
	int net, app, toolfd;
	pthread_t th;
	struct pump *next;
};

static struct pump *g_pumps;
static pthread_mutex_t g_pump_mu = PTHREAD_MUTEX_INITIALIZER;
static bool g_atexit, g_exiting;

/* Write all of p to the TLS connection, waiting on the socket. */
static int
pump_write(struct pump *p, const char *b, size_t n)
{
	while (n > 0) {
		int k = SSL_write(p->ssl, b, (int)n);
		if (k > 0) {
			b += k;
			n -= (size_t)k;
			continue;
		}
		int e = SSL_get_error(p->ssl, k);
		struct pollfd pf = { p->net, e == SSL_ERROR_WANT_READ ? POLLIN :
			POLLOUT, 0 };
		if ((e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) ||
		    poll(&pf, 1, 30000) <= 0)
			return -1;
	}
	return 0;
}

static int
write_all(int fd, const char *b, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static void *
pump_run(void *arg)
{
	struct pump *p = arg;
	char buf[16384];
	bool app_open = true;
	for (;;) {
		struct pollfd pf[2] = { { p->net, POLLIN, 0 },
			{ p->app, app_open ? POLLIN : 0, 0 } };
		if (SSL_pending(p->ssl) == 0 && poll(pf, 2, -1) < 0 &&
		    errno != EINTR)
			break;
		if (SSL_pending(p->ssl) > 0 || pf[0].revents) {
			int k = SSL_read(p->ssl, buf, sizeof(buf));
			if (k > 0) {
				if (write_all(p->app, buf, (size_t)k) < 0)
					break;
			} else {
				int e = SSL_get_error(p->ssl, k);
				if (e != SSL_ERROR_WANT_READ &&
				    e != SSL_ERROR_WANT_WRITE)
					break;
			}
		}
		if (app_open && (pf[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			ssize_t k = read(p->app, buf, sizeof(buf));
			if (k <= 0) {
				app_open = false;
				break;
			}
			if (pump_write(p, buf, (size_t)k) < 0)
				break;
		}
	}
	SSL_shutdown(p->ssl);
	SSL_free(p->ssl);
	close(p->net);
	close(p->app);
	pthread_mutex_lock(&g_pump_mu);
	bool keep = g_exiting;
	if (!keep) {
		struct pump **pp = &g_pumps;
		while (*pp != p)
			pp = &(*pp)->next;
		*pp = p->next;
		pthread_detach(p->th);
	}
	pthread_mutex_unlock(&g_pump_mu);
	if (!keep)
		free(p);
	return NULL;
}

/* At exit: what the tool wrote goes out before the connection closes. */
static void
pump_atexit(void)
{
	pthread_mutex_lock(&g_pump_mu);
	g_exiting = true;
	struct pump *list = g_pumps;
	pthread_mutex_unlock(&g_pump_mu);
	for (struct pump *p = list; p != NULL; p = p->next) {
		shutdown(p->toolfd, SHUT_WR);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 2;
		pthread_timedjoin_np(p->th, NULL, &ts);
	}
}

/* The client context, made at the first connection without TLS options. */
static int
client_ctx(char *err, size_t errlen)
{
	char why[300];
	if (g_cli != NULL)
		return 0;
	if (g_exidx < 0)
		g_exidx = SSL_get_ex_new_index(0, NULL, NULL, NULL, hs_free);
	if ((g_cli = make_ctx(false, why, sizeof(why))) == NULL) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	return 0;
}

/* The server's name or address that its certificate must carry. */
static void
server_name(SSL *ssl, const char *host)
{
	struct in6_addr a6;
	if (inet_pton(AF_INET, host, &a6) == 1 ||
	    inet_pton(AF_INET6, host, &a6) == 1)
		X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host);
	else {
		SSL_set_tlsext_host_name(ssl, host);
		SSL_set1_host(ssl, host);
	}
}

int
cats_tls_connect(int fd, const char *host, char *err, size_t errlen)
{
	if (client_ctx(err, errlen) < 0) {
		close(fd);
		return -1;
	}
	SSL *ssl = SSL_new(g_cli);
	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1) {
		snprintf(err, errlen, "TLS: %s", ssl_why());
		SSL_free(ssl);
		close(fd);
		return -1;
	}
	server_name(ssl, host);
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	nodelay(fd);
	if (SSL_connect(ssl) != 1) {
		long v = SSL_get_verify_result(ssl);
		snprintf(err, errlen, "TLS handshake with %s: %s", host,
		    v != X509_V_OK ? X509_verify_cert_error_string(v) :
		    ssl_why());
		SSL_free(ssl);
		close(fd);
		return -1;
	}
	cats_fd_nonblock(fd);
	int sp[2];
	struct pump *p = calloc(1, sizeof(*p));
	if (p == NULL || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
	    sp) < 0) {
		snprintf(err, errlen, "TLS: %s", strerror(errno));
		free(p);
		SSL_free(ssl);
		close(fd);
		return -1;
	}
	p->ssl = ssl;
	p->net = fd;
	p->app = sp[0];
	p->toolfd = sp[1];
	if (pthread_create(&p->th, NULL, pump_run, p) != 0) {
		snprintf(err, errlen, "TLS: cannot start its thread");
		close(sp[0]);
		close(sp[1]);
		free(p);
		SSL_free(ssl);
		close(fd);
		return -1;
	}
	pthread_mutex_lock(&g_pump_mu);
	p->next = g_pumps;
	g_pumps = p;
	if (!g_atexit) {
		g_atexit = true;
		atexit(pump_atexit);
	}
	pthread_mutex_unlock(&g_pump_mu);
	cats_fd_nonblock(sp[1]);
	return sp[1];
}

/* A client's handshake took too long: refused as a failed one. */
static void
client_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *p = arg;
	char why[400];
	(void)fd;
	(void)what;
	if (p->up)
		return;
	uint64_t ms = p->deadline_ms;
	snprintf(why, sizeof(why), "TLS handshake with %s: no answer within "
	    "%" PRIu64 " %s", p->host, ms % 1000 ? ms : ms / 1000,
	    ms % 1000 ? "ms" : "s");
	client_done(p, why);
	p->net_done = p->net_err = true;
	bufferevent_disable(p->net, EV_READ | EV_WRITE);
	proxy_check(p);
}

int
cats_tls_open(struct event_base *base, const struct cats_ep *ep,
    uint64_t ms, void (*done)(void *, const char *), void *arg, char *err,
    size_t errlen)
{
	int sp[2] = { -1, -1 };
	SSL *ssl = NULL;
	if (client_ctx(err, errlen) < 0)
		return -1;
	int fd = cats_ep_connect_nb(ep, err, errlen);
	if (fd < 0)
		return -1;
	struct proxy *p = calloc(1, sizeof(*p));
	if (p == NULL || (p->host = strdup(ep->host)) == NULL) {
		free(p);
		close(fd);
		snprintf(err, errlen, "TLS: out of memory");
		return -1;
	}
	p->cnext = g_clients;
	g_clients = p;
	p->toolfd = -1;		/* not in g_byfd: the server side's map */
	p->done = done;
	p->done_arg = arg;
	p->deadline_ms = ms ? ms : CATS_TLS_OPEN_S * 1000;
	if ((ssl = SSL_new(g_cli)) == NULL || socketpair(AF_UNIX, SOCK_STREAM |
	    SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
		goto fail;
	server_name(ssl, ep->host);
	nodelay(fd);
	if ((p->app = bufferevent_socket_new(base, sp[0],
	    BEV_OPT_CLOSE_ON_FREE)) == NULL)
		goto fail;
	sp[0] = -1;
	p->net = bufferevent_openssl_socket_new(base, fd, ssl,
	    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
	fd = -1;	/* the bufferevent's now (a failure: out of memory) */
	ssl = NULL;
	if (p->net == NULL ||
	    (p->deadline = evtimer_new(base, client_deadline, p)) == NULL)
		goto fail;
	bufferevent_openssl_set_allow_dirty_shutdown(p->net, 1);
	coalesce(p->net);
	bufferevent_setcb(p->net, net_read, net_write, net_event, p);
	bufferevent_setcb(p->app, app_read, app_write, app_event, p);
	bufferevent_enable(p->net, EV_READ | EV_WRITE);
	bufferevent_enable(p->app, EV_READ | EV_WRITE);
	struct timeval tv = { (time_t)(p->deadline_ms / 1000),
		(suseconds_t)(p->deadline_ms % 1000) * 1000 };
	evtimer_add(p->deadline, &tv);
	p->cfd = sp[1];
	return sp[1];
fail:
	snprintf(err, errlen, "TLS: %s", errno ? strerror(errno) : ssl_why());
	if (p->net != NULL)
		bufferevent_free(p->net);
	if (p->app != NULL)
		bufferevent_free(p->app);
	g_clients = p->cnext;
	free(p->host);
	free(p);
	return undo(ssl, fd, sp);
}

/* A timer that only ends the loop's turn. */
static void
drain_tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/* The client proxy of the tool's descriptor fd, or NULL. */
static struct proxy *
client_of(int fd)
{
	struct proxy *p = g_clients;
	while (p != NULL && p->cfd != fd)
		p = p->cnext;
	return p;
}

int
cats_tls_drain(struct event_base *base, int fd, unsigned ms)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct event *tick = evtimer_new(base, drain_tick, NULL);
	struct timeval tv = { 0, 20000 };
	while (client_of(fd) != NULL && tick != NULL) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) /
		    1000000 >= (long)ms)
			break;
		evtimer_add(tick, &tv);
		event_base_loop(base, EVLOOP_ONCE);
	}
	if (tick != NULL)
		event_free(tick);
	return client_of(fd) != NULL ? -1 : 0;
}

void
cats_tls_curl(void *easy, const char *ca_file)
{
	CURL *e = easy;
	if (ca_file == NULL && o_ca != NULL)
		curl_easy_setopt(e, CURLOPT_CAINFO, o_ca);
	if (o_cert != NULL && o_key != NULL) {
		curl_easy_setopt(e, CURLOPT_SSLCERT, o_cert);
		curl_easy_setopt(e, CURLOPT_SSLKEY, o_key);
	}
	if (o_crl != NULL)
		curl_easy_setopt(e, CURLOPT_CRLFILE, o_crl);
	curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
}

void
cats_tls_free(void)
{
	SSL_CTX_free(g_srv);
	SSL_CTX_free(g_cli);
	g_srv = g_cli = NULL;
	free(g_byfd);
	g_byfd = NULL;
	g_nbyfd = 0;
}
