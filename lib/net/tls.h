/*
 * tls.h - TLS for every listener and every outgoing connection of a tool
 * (OpenSSL; libevent's OpenSSL bufferevents on the servers' loops).
 *
 * Configuration.  One set per process, the same four options in every
 * tool (CATS_TLS_LONGOPTS): --tls-cert FILE (the tool's certificate chain,
 * PEM), --tls-key FILE (its private key, PEM; refused when group or others
 * may read it), --tls-ca FILE (the CA certificates peers are checked
 * against), --tls-crl FILE (certificate revocation lists, PEM, checked for
 * the peer's certificate).  Every file is read through base/file.h
 * (regular files only).
 *
 * Servers.  An https:// HTTP endpoint or a tls:HOST:PORT record endpoint
 * (net/ep.h) speaks TLS with the certificate and key: TLS 1.2 or 1.3 (1.3
 * preferred), TLS 1.2 with ECDHE and AEAD ciphers only, no compression, no
 * renegotiation, session tickets off.  With --tls-ca, a client certificate
 * is required and verified (chain to the CA, validity, the CRLs): a client
 * without one, with one of another CA, expired or revoked is refused at
 * the handshake.  Every handshake is an audit line: tls-peer (src, subject,
 * the SAN entries, version, cipher) or tls-refused (src, reason: the alert
 * sent, the verification error, or what the client sent instead of a
 * handshake: a plaintext client on a TLS port is refused and closed).
 * tls-refused lines are rate-limited (cats_audit_limited(): 32 at once,
 * then 10 a second, for the process); the next one written has
 * unlogged=N, the refusals left out since; tls.refused counts them all.
 *
 * Reload.  cats_tls_reload() (the tools call it on SIGHUP) reads every
 * file again into a new context: new connections use it (a new CRL, a
 * renewed certificate), open ones keep theirs.  A reload that fails
 * keeps the old context and says why.
 *
 * Clients.  A tls:HOST:PORT endpoint opened for talking (cats_ep_open)
 * connects, verifies the server (chain to --tls-ca, else the system's
 * trust anchors; its name or address against HOST; the CRLs) and presents
 * --tls-cert/--tls-key when given.  The caller gets a plain descriptor
 * (one end of a socket pair); a thread of this module carries the bytes
 * between it and the TLS connection, and at exit what was written is
 * sent before the connection is closed.  cats_tls_open does the same on a
 * libevent loop, for a tool that must never wait (cats-fwd): the connect
 * and the handshake run on the loop, the outcome comes as a callback.
 * libcurl (net/httpc.h) gets the same files for https:// (CURLOPT_SSLCERT,
 * _SSLKEY, _CAINFO, _CRLFILE).
 */
#ifndef CATS_TLS_H
#define CATS_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct bufferevent;
struct cats_ep;

/* getopt_long codes of the options, and their table entries. */
enum {
	CATS_TLS_OPT_CA = 0x7401,
	CATS_TLS_OPT_CERT,
	CATS_TLS_OPT_CRL,
	CATS_TLS_OPT_KEY,
};
#define CATS_TLS_LONGOPTS \
	{ "tls-ca", required_argument, NULL, CATS_TLS_OPT_CA }, \
	{ "tls-cert", required_argument, NULL, CATS_TLS_OPT_CERT }, \
	{ "tls-crl", required_argument, NULL, CATS_TLS_OPT_CRL }, \
	{ "tls-key", required_argument, NULL, CATS_TLS_OPT_KEY }
/* The usage() line of the options. */
#define CATS_TLS_USAGE "[--tls-cert file --tls-key file [--tls-ca file] " \
	"[--tls-crl file]]"

/* An option of CATS_TLS_LONGOPTS: taken (true), or not one of them. */
bool cats_tls_opt(int ch, const char *arg);
/*
 * Read the files of the options into the server and client contexts (once,
 * after the options): 0, also when no option was given; -1 with err
 * ("FILE: reason").
 */
int cats_tls_init(char *err, size_t errlen);
/* cats_tls_init for a main: 0, or the exit code after one line. */
int cats_tls_setup(void);
/* A certificate and key are configured: TLS endpoints may listen. */
bool cats_tls_server_on(void);
/* Read the files again (SIGHUP): 0, or -1 (the old contexts stay; logged). */
int cats_tls_reload(void);
/* Free the contexts (at exit; also ends the client threads). */
void cats_tls_free(void);

/* ---- servers ---- */

/*
 * Mark a listening socket as a TLS one or not (cats_ep_listen does: a
 * descriptor number used again is marked anew), or ask.  -1 when 32 TLS
 * listening sockets are marked already.
 */
int cats_tls_mark_listen(int fd, bool tls);
bool cats_tls_is_listen(int fd);

/*
 * An accepted connection on a TLS listening socket: the handshake is run
 * on the loop, and the caller gets the plain descriptor of the
 * connection (a socket pair's end, non-blocking; closing it closes the
 * connection) or -1.  Bytes reach it only after the handshake succeeded;
 * a refused handshake closes it.  fd is taken (closed on failure).
 */
int cats_tls_accept(struct event_base *base, int fd, const char *peer);
/* The peer's identity on a descriptor cats_tls_accept gave (or NULL). */
const char *cats_tls_fd_peer(int fd);
/* The handshake on such a descriptor is done. */
bool cats_tls_fd_up(int fd);

/* An OpenSSL bufferevent for evhttp (evhttp_set_bevcb), or NULL. */
struct bufferevent *cats_tls_bev(struct event_base *base);
/*
 * Write a short answer on such a bufferevent now, around its buffers
 * (evhttp has its writing off while it reads): what send(MSG_DONTWAIT)
 * is to a plain socket.  -1 if the TLS connection did not take it whole.
 */
int cats_tls_bev_send(struct bufferevent *bev, const void *p, size_t n);
/*
 * Every SAN URI of the peer's certificate on such a bufferevent, each
 * NUL-terminated in buf and pointed at by v[0..]: the count, -1 when the
 * peer sent no certificate, -2 when the URIs do not fit in max entries or
 * len bytes, or one holds a control character (a caller that limits by
 * them refuses the peer rather than read part of them).
 */
int cats_tls_bev_uris(struct bufferevent *bev, char *buf, size_t len,
    const char **v, size_t max);

/* ---- clients ---- */

/*
 * TLS over the connected socket fd to host (blocking handshake, then the
 * plain descriptor as above; fd is taken).  -1 with err.
 */
int cats_tls_connect(int fd, const char *host, char *err, size_t errlen);
/*
 * The same on the loop, for a tool that must not wait (cats-fwd's control
 * channels): a tls: endpoint ep (kind CATS_EP_TCP, tls) connected without
 * blocking (its name resolved first), the handshake run on base, and the
 * plain descriptor returned at once.  done(arg, NULL) is called when the
 * server is verified (bytes written before wait for it), done(arg, why)
 * when the connect or the handshake failed or did not end within ms
 * (0: CATS_TLS_OPEN_S seconds; "TLS handshake with HOST: reason"; the
 * descriptor then reads end of file).  Closing the descriptor before
 * done was called ends the attempt without a call.  -1 with err when no
 * attempt could start (the name, or a connect refused at once).
 */
#define CATS_TLS_OPEN_S 5
int cats_tls_open(struct event_base *base, const struct cats_ep *ep,
    uint64_t ms, void (*done)(void *, const char *), void *arg, char *err,
    size_t errlen);
/*
 * At exit, run base until the connection of cats_tls_open whose
 * descriptor fd the caller shut for writing has sent what was written to
 * it and ended, for at most ms: 0, or -1 when it had not.
 */
int cats_tls_drain(struct event_base *base, int fd, unsigned ms);
/* The options of an https:// transfer (a CURL easy handle). */
void cats_tls_curl(void *easy, const char *ca_file);

struct cats_tls_stats {
	uint64_t handshakes, refused, reloads, reload_failed;
};
const struct cats_tls_stats *cats_tls_stats(void);

#endif
