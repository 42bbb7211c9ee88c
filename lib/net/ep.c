/*
 * ep.c - endpoint parsing and sockets.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "base/cats.h"
#include "base/log.h"
#include "net/ep.h"
#include "net/tls.h"

static int
host_port(const char *s, struct cats_ep *ep, char *err, size_t errlen)
{
	const char *colon;
	if (*s == '[') {
		const char *end = strchr(s, ']');
		if (end == NULL || end[1] != ':') {
			snprintf(err, errlen, "expected [ADDR]:PORT in \"%s\"", s);
			return -1;
		}
		if ((size_t)(end - s - 1) >= sizeof(ep->host)) {
			snprintf(err, errlen, "host too long");
			return -1;
		}
		memcpy(ep->host, s + 1, (size_t)(end - s - 1));
		ep->host[end - s - 1] = '\0';
		colon = end + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL || colon == s) {
			snprintf(err, errlen, "expected HOST:PORT in \"%s\"", s);
			return -1;
		}
		if ((size_t)(colon - s) >= sizeof(ep->host)) {
			snprintf(err, errlen, "host too long");
			return -1;
		}
		memcpy(ep->host, s, (size_t)(colon - s));
		ep->host[colon - s] = '\0';
		if (strchr(ep->host, ':') != NULL) {
			snprintf(err, errlen, "write an IPv6 host as [ADDR]:PORT");
			return -1;
		}
	}
	const char *port = colon + 1;
	size_t n = strlen(port);
	if (n == 0 || n >= sizeof(ep->port) ||
	    strspn(port, "0123456789") != n || atoi(port) > 65535) {
		snprintf(err, errlen, "bad port \"%s\"", port);
		return -1;
	}
	memcpy(ep->port, port, n + 1);
	return 0;
}

int
cats_ep_parse(const char *s, struct cats_ep *ep, char *err, size_t errlen)
{
	memset(ep, 0, sizeof(*ep));
	if (strcmp(s, "-") == 0) {
		ep->kind = CATS_EP_STDIO;
		return 0;
	}
	if (strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0) {
		ep->kind = s[4] == 's' ? CATS_EP_HTTPS : CATS_EP_HTTP;
		if (strlen(s) >= sizeof(ep->path)) {
			snprintf(err, errlen, "URL too long");
			return -1;
		}
		/* A URL curl cannot parse is a usage error now, not an
		 * unreachable peer later. */
		CURLU *u = curl_url();
		CURLUcode uc = u == NULL ? CURLUE_OUT_OF_MEMORY
		    : curl_url_set(u, CURLUPART_URL, s, 0);
		char *host = NULL;
		if (uc == CURLUE_OK)
			uc = curl_url_get(u, CURLUPART_HOST, &host, 0);
		curl_free(host);
		curl_url_cleanup(u);
		if (uc != CURLUE_OK) {
			snprintf(err, errlen, "%s: not a URL (%s)", s,
			    curl_url_strerror(uc));
			return -1;
		}
		cats_strlcpy(ep->path, s, sizeof(ep->path));
		return 0;
	}
	static const struct { const char *pfx; int kind; } schemes[] = {
		{ "file:", CATS_EP_FILE }, { "unix:", CATS_EP_UNIX },
		{ "tcp:", CATS_EP_TCP }, { "udp:", CATS_EP_UDP },
		{ "tls:", CATS_EP_TCP },
	};
	for (size_t i = 0; i < CATS_ARRAY_LEN(schemes); i++) {
		size_t n = strlen(schemes[i].pfx);
		if (strncmp(s, schemes[i].pfx, n) != 0)
			continue;
		ep->kind = schemes[i].kind;
		ep->tls = strncmp(s, "tls:", 4) == 0;
		const char *rest = s + n;
		if (ep->kind == CATS_EP_FILE || ep->kind == CATS_EP_UNIX) {
			size_t max = ep->kind == CATS_EP_UNIX
			    ? sizeof(((struct sockaddr_un *)0)->sun_path)
			    : sizeof(ep->path);
			if (*rest == '\0' || strlen(rest) >= max) {
				snprintf(err, errlen, "bad path in \"%s\"", s);
				return -1;
			}
			cats_strlcpy(ep->path, rest, sizeof(ep->path));
			return 0;
		}
		return host_port(rest, ep, err, errlen);
	}
	snprintf(err, errlen, "unknown endpoint \"%s\" (use -, file:PATH, "
	    "unix:PATH, tcp:HOST:PORT, tls:HOST:PORT, udp:HOST:PORT, "
	    "http(s)://...)", s);
	return -1;
}

const char *
cats_ep_str(const struct cats_ep *ep, char *buf, size_t len)
{
	switch (ep->kind) {
	case CATS_EP_STDIO: snprintf(buf, len, "-"); break;
	case CATS_EP_FILE: snprintf(buf, len, "file:%s", ep->path); break;
	case CATS_EP_UNIX: snprintf(buf, len, "unix:%s", ep->path); break;
	case CATS_EP_TCP:
	case CATS_EP_UDP:
		snprintf(buf, len, strchr(ep->host, ':') ? "%s:[%s]:%s"
		    : "%s:%s:%s", ep->tls ? "tls" : ep->kind == CATS_EP_TCP ?
		    "tcp" : "udp",
		    ep->host, ep->port);
		break;
	default: snprintf(buf, len, "%s", ep->path); break;
	}
	return buf;
}

bool
cats_ep_is_dgram(const struct cats_ep *ep)
{
	return ep->kind == CATS_EP_UDP;
}

int
cats_fd_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/*
 * A socket on the first address of tcp: or udp: ep that takes it: bound,
 * and listening for tcp, when passive (non-blocking, SO_REUSEADDR), else
 * connected (blocking).  -1 with err naming the last failure.
 */
/* Listen (passive), connect, or start a connect (nb: a non-blocking
 * socket, EINPROGRESS taken) to the first address of ep that takes it. */
static int
inet_socket(const struct cats_ep *ep, bool passive, bool nb, const char *name,
    char *err, size_t errlen)
{
	struct addrinfo hints = { 0 }, *res, *ai;
	hints.ai_socktype = ep->kind == CATS_EP_UDP ? SOCK_DGRAM : SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	int r = getaddrinfo(ep->host, ep->port, &hints, &res);
	if (r != 0) {
		snprintf(err, errlen, "%s:%s: %s", ep->host, ep->port,
		    gai_strerror(r));
		return -1;
	}
	int fd = -1, saved = 0, one = 1;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC |
		    (passive || nb ? SOCK_NONBLOCK : 0), ai->ai_protocol);
		if (fd < 0) {
			saved = errno;
			continue;
		}
		if (passive)
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
			    sizeof(one));
		else if (ep->kind != CATS_EP_UDP)
			/* No Nagle (a batch a turn: listener.c tcp_opts). */
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
			    sizeof(one));
		if (passive ? bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    (ep->kind == CATS_EP_UDP || listen(fd, 1024) == 0) :
		    connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ||
		    (nb && errno == EINPROGRESS))
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(err, errlen, "%s: %s", name, strerror(saved));
	return fd;
}

static int
unix_addr(const struct cats_ep *ep, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	cats_strlcpy(sun->sun_path, ep->path, sizeof(sun->sun_path));
	return 0;
}

/* The descriptors taken from CATS_LISTEN_FDS (cats_ep_inherited()). */
static int inherited_fds[16];
static size_t ninherited;

/*
 * The listening socket of endpoint name handed down in CATS_LISTEN_FDS
 * ("FD=ENDPOINT", one a line), made close-on-exec again; -1: none.
 */
static int
inherited(const char *name)
{
	const char *env = getenv(CATS_LISTEN_FDS);
	size_t nl = strlen(name);
	while (env != NULL && *env != '\0') {
		char *end;
		long fd = strtol(env, &end, 10);
		const char *eol = strchr(env, '\n');
		size_t len = eol ? (size_t)(eol - end) : strlen(end);
		int type;
		socklen_t tl = sizeof(type);
		if (end != env && *end == '=' && len == nl + 1 &&
		    memcmp(end + 1, name, nl) == 0 && fd > 2 && fd < 65536 &&
		    getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0) {
			fcntl((int)fd, F_SETFD, FD_CLOEXEC);
			if (ninherited < CATS_ARRAY_LEN(inherited_fds))
				inherited_fds[ninherited++] = (int)fd;
			return (int)fd;
		}
		env = eol ? eol + 1 : NULL;
	}
	return -1;
}

bool
cats_ep_inherited(int fd)
{
	for (size_t i = 0; i < ninherited; i++)
		if (inherited_fds[i] == fd)
			return true;
	return false;
}

int
cats_ep_listen(const struct cats_ep *ep, char *err, size_t errlen)
{
	char name[300];
	cats_ep_str(ep, name, sizeof(name));
	if (ep->tls && !cats_tls_server_on()) {
		snprintf(err, errlen, "%s: TLS needs --tls-cert and --tls-key",
		    name);
		return -1;
	}
	/* Held by the parent (cats-cps) across our restarts, or our own. */
	int fd = inherited(name);
	if (fd < 0 && (fd = cats_ep_bind(ep, err, errlen)) < 0)
		return -1;
	/* (unix, plain tcp: unmarked, as a number may be used again) */
	if (cats_tls_mark_listen(fd, ep->tls) < 0) {
		snprintf(err, errlen, "%s: more than 32 TLS listeners", name);
		if (!cats_ep_inherited(fd))
			close(fd);
		return -1;
	}
	return fd;
}

int
cats_ep_bind(const struct cats_ep *ep, char *err, size_t errlen)
{
	int fd = -1;
	char name[300];
	cats_ep_str(ep, name, sizeof(name));
	if (ep->kind == CATS_EP_UNIX) {
		struct sockaddr_un sun;
		struct stat st;
		unix_addr(ep, &sun);
		/* Replace a stale socket, never another kind of file. */
		if (lstat(ep->path, &st) == 0) {
			if (!S_ISSOCK(st.st_mode)) {
				snprintf(err, errlen, "%s: exists and is not a "
				    "socket", name);
				return -1;
			}
			unlink(ep->path);
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
		    listen(fd, 1024) < 0) {
			snprintf(err, errlen, "%s: %s", name, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		return fd;
	}
	if (ep->kind != CATS_EP_TCP && ep->kind != CATS_EP_UDP) {
		snprintf(err, errlen, "%s: cannot listen on this endpoint", name);
		return -1;
	}
	return inet_socket(ep, true, false, name, err, errlen);
}

int
cats_ep_connect_nb(const struct cats_ep *ep, char *err, size_t errlen)
{
	char name[300];
	cats_ep_str(ep, name, sizeof(name));
	if (ep->kind != CATS_EP_TCP) {
		snprintf(err, errlen, "%s: not a tcp: or tls: endpoint", name);
		return -1;
	}
	return inet_socket(ep, false, true, name, err, errlen);
}

/* A connect under way (cats_ep_connect). */
struct ep_conn {
	cats_ep_done_fn *done;
	void *arg;
	int fd;			/* the tool's descriptor (tls:) */
	unsigned ms;
	char name[300];
};

/* A unix:, tcp: or udp: connect ended, or not within its deadline. */
static void
conn_end(evutil_socket_t fd, short what, void *arg)
{
	struct ep_conn *k = arg;
	char why[400];
	int e = 0;
	socklen_t len = sizeof(e);
	if (!(what & EV_WRITE))
		snprintf(why, sizeof(why), "%s: no answer to the connect in "
		    "%u ms", k->name, k->ms);
	else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0 || e)
		snprintf(why, sizeof(why), "%s: %s", k->name,
		    strerror(e ? e : errno));
	else {
		k->done(k->arg, fd, NULL);
		free(k);
		return;
	}
	close(fd);
	k->done(k->arg, -1, why);
	free(k);
}

/* A tls: endpoint's handshake ended (cats_tls_open). */
static void
conn_tls(void *arg, const char *why)
{
	struct ep_conn *k = arg;
	if (why != NULL)
		close(k->fd);
	k->done(k->arg, why == NULL ? k->fd : -1, why);
	free(k);
}

int
cats_ep_connect(struct event_base *base, const struct cats_ep *ep,
    unsigned ms, cats_ep_done_fn *done, void *arg, char *err, size_t errlen)
{
	struct ep_conn *k = calloc(1, sizeof(*k));
	if (k == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	k->done = done;
	k->arg = arg;
	k->ms = ms;
	cats_ep_str(ep, k->name, sizeof(k->name));
	int fd = -1;
	if (ep->kind == CATS_EP_TCP && ep->tls) {
		if ((fd = cats_tls_open(base, ep, ms, conn_tls, k, err,
		    errlen)) < 0)
			free(k);
		else
			k->fd = fd;
		return fd;
	}
	if (ep->kind == CATS_EP_UNIX) {
		struct sockaddr_un sun;
		unix_addr(ep, &sun);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
		if (fd < 0 || (connect(fd, (struct sockaddr *)&sun,
		    sizeof(sun)) < 0 && errno != EINPROGRESS)) {
			/* EAGAIN: the listener's backlog is full (a stalled
			 * or overloaded peer); tried again as a refusal. */
			snprintf(err, errlen, "%s: %s%s", k->name,
			    strerror(errno), errno == EAGAIN ? " (its "
			    "listener's backlog is full)" : "");
			if (fd >= 0)
				close(fd);
			free(k);
			return -1;
		}
	} else if (ep->kind == CATS_EP_TCP || ep->kind == CATS_EP_UDP) {
		if ((fd = inet_socket(ep, false, true, k->name, err,
		    errlen)) < 0) {
			free(k);
			return -1;
		}
	} else {
		snprintf(err, errlen, "%s: not a socket endpoint", k->name);
		free(k);
		return -1;
	}
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	if (event_base_once(base, fd, EV_WRITE, conn_end, k, &tv) < 0) {
		snprintf(err, errlen, "%s: out of memory", k->name);
		close(fd);
		free(k);
		return -1;
	}
	return fd;
}

int
cats_ep_open(const struct cats_ep *ep, bool for_write, char *err,
    size_t errlen)
{
	char name[300];
	cats_ep_str(ep, name, sizeof(name));
	switch (ep->kind) {
	case CATS_EP_STDIO:
		return for_write ? 1 : 0;
	case CATS_EP_FILE: {
		int fd = for_write
		    ? open(ep->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
		    : open(ep->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			snprintf(err, errlen, "%s: %s", ep->path, strerror(errno));
		return fd;
	}
	case CATS_EP_UNIX: {
		struct sockaddr_un sun;
		unix_addr(ep, &sun);
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sun,
		    sizeof(sun)) < 0) {
			snprintf(err, errlen, "%s: %s", name, strerror(errno));
			if (fd >= 0)
				close(fd);
			return -1;
		}
		cats_fd_nonblock(fd);
		return fd;
	}
	case CATS_EP_TCP:
	case CATS_EP_UDP: {
		int fd = inet_socket(ep, false, false, name, err, errlen);
		if (fd < 0)
			return -1;
		if (ep->tls)
			return cats_tls_connect(fd, ep->host, err, errlen);
		cats_fd_nonblock(fd);
		return fd;
	}
	default:
		snprintf(err, errlen, "%s: not a record stream endpoint (HTTP "
		    "endpoints are handled by the tool)", name);
		return -1;
	}
}

int
cats_ep_open_out(const char *what, const char *spec, int *fd)
{
	struct cats_ep ep;
	char err[512];
	if (cats_ep_parse(spec, &ep, err, sizeof(err)) < 0) {
		cats_errorx("%s: %s", what, err);
		return CATS_EXIT_USAGE;
	}
	if ((*fd = cats_ep_open(&ep, true, err, sizeof(err))) < 0) {
		cats_errorx("%s: %s", what, err);
		return CATS_EXIT_IOERR;
	}
	return 0;
}

const char *
cats_ep_peer(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char a[INET6_ADDRSTRLEN] = "local";
	unsigned port = 0;
	if (fd >= 0 && getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
			port = ntohs(s4->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
			port = ntohs(s6->sin6_port);
		}
	}
	snprintf(buf, len, "%s:%u", a, port);
	return buf;
}
