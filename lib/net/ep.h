/*
 * ep.h - the one endpoint syntax of every cats tool:
 *
 *   -                stdin (reading) or stdout (writing)
 *   file:PATH        a file
 *   unix:PATH        a unix stream socket
 *   tcp:HOST:PORT    TCP (HOST may be [v6addr])
 *   tls:HOST:PORT    TCP with TLS (net/tls.h: --tls-cert, --tls-key,
 *                    --tls-ca, --tls-crl); kind CATS_EP_TCP, tls set
 *   udp:HOST:PORT    UDP, one record per datagram
 *   http://...       HTTP (libcurl clients, evhttp servers)
 *   https://...      HTTPS
 *
 * A tool that listens says --listen ENDPOINT; one that sends says
 * --to ENDPOINT.
 */
#ifndef CATS_EP_H
#define CATS_EP_H

#include <stdbool.h>
#include <stddef.h>

enum cats_ep_kind {
	CATS_EP_STDIO,
	CATS_EP_FILE,
	CATS_EP_UNIX,
	CATS_EP_TCP,
	CATS_EP_UDP,
	CATS_EP_HTTP,
	CATS_EP_HTTPS,
};

struct cats_ep {
	int kind;
	bool tls;		/* tls:HOST:PORT (kind CATS_EP_TCP) */
	char host[256];
	char port[8];
	char path[4096];	/* file and unix paths; the URL for http(s) */
};

/* Parse an endpoint; -1 with the reason in err. */
int cats_ep_parse(const char *s, struct cats_ep *ep, char *err, size_t errlen);
/* Back to text. */
const char *cats_ep_str(const struct cats_ep *ep, char *buf, size_t len);
bool cats_ep_is_dgram(const struct cats_ep *ep);

/*
 * Open for listening: a listening stream socket (unix, tcp; a stale unix
 * socket file is replaced) or a bound datagram socket (udp).  Non-blocking,
 * close-on-exec.  Returns the fd or -1 with err set.  A tls: socket is
 * marked as such (cats_tls_mark_listen: net/listener.h runs TLS on its
 * connections); without a TLS certificate it is refused.
 */
int cats_ep_listen(const struct cats_ep *ep, char *err, size_t errlen);
/*
 * A listening socket handed down: when the environment variable
 * CATS_LISTEN_FDS names ep ("FD=ENDPOINT" lines, ENDPOINT as cats_ep_str()
 * writes it), cats_ep_listen() takes that descriptor instead of opening one
 * (TLS marked the same way), so that a parent (cats-cps) holds the socket
 * across the tool's restarts: connections wait in its backlog, none is
 * refused.  cats_ep_inherited(fd): fd came so (the tool must not unlink
 * its unix socket file).
 */
#define CATS_LISTEN_FDS "CATS_LISTEN_FDS"
bool cats_ep_inherited(int fd);
/* The socket alone, listening (or bound, udp), no TLS marking and no
 * inheritance: for the parent that hands it down.  -1 with err set. */
int cats_ep_bind(const struct cats_ep *ep, char *err, size_t errlen);
/*
 * Open for talking: stdin/stdout (for_write picks which), a file (read, or
 * write/create/truncate), or a connected socket (blocking connect, then
 * non-blocking).  A tls: endpoint is TLS over the connection (the TLS
 * handshake done before it returns, the descriptor a plain one:
 * cats_tls_connect).  Returns the fd or -1 with err set.
 */
int cats_ep_open(const struct cats_ep *ep, bool for_write, char *err,
    size_t errlen);
/*
 * Start a TCP connect to a tcp: or tls: endpoint without waiting: a
 * non-blocking socket, connected or connecting (writable once the connect
 * ended; SO_ERROR says how), or -1 with err set.
 */
int cats_ep_connect_nb(const struct cats_ep *ep, char *err, size_t errlen);
/*
 * Connect to a unix:, tcp:, tls: or udp: endpoint on the running loop
 * base without ever waiting: every outgoing record connection of a tool
 * whose loop must go on (a forwarder's control channels, cats-sma's
 * [steer] to) goes through here.  The socket is non-blocking from the
 * start; a tcp: connect ends on EV_WRITE with SO_ERROR or fails when it
 * has not ended within ms (a peer whose SYNs are dropped), a unix:
 * listener with a full backlog fails at once (EAGAIN) instead of holding
 * the loop until it accepts, and a tls: endpoint's handshake runs on the
 * loop (cats_tls_open: ms covers connect and handshake, 0 there meaning
 * CATS_TLS_OPEN_S).  Returns the descriptor under
 * way, not to be used before done, or -1 with err set (done is not
 * called).  done(arg, fd, why) is called once, from the loop, never from
 * here: fd connected and non-blocking (the caller's), or -1 and why.
 */
struct event_base;
typedef void cats_ep_done_fn(void *arg, int fd, const char *why);
int cats_ep_connect(struct event_base *base, const struct cats_ep *ep,
    unsigned ms, cats_ep_done_fn *done, void *arg, char *err, size_t errlen);
/*
 * Parse spec, the value of option what ("--stats-to"), and open it for
 * writing into *fd: 0, or the exit code said in one line ("what: reason"):
 * 2 for a spec that is no endpoint, 74 for one that cannot be opened.
 */
int cats_ep_open_out(const char *what, const char *spec, int *fd);
/* The peer of a connected socket as "ADDR:PORT" ("local:0" otherwise). */
const char *cats_ep_peer(int fd, char *buf, size_t len);

int cats_fd_nonblock(int fd);

#endif
