/*
 * test_httpd.c - net/httpd.h: the framing follower on the requests of RFC
 * 9112 §6 an attacker sends (whole and a byte at a time), and a server on
 * loopback counting, answering in one line and routing by decoded path.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "base/cats.h"
#include "net/ep.h"
#include "net/httpd.h"
#include "t.h"

#define H "Host: x\r\n"

static const struct {
	const char *in;
	int code;
} cases[] = {
	{ "GET / HTTP/1.1\r\n" H "\r\n", 0 },
	{ "GET / HTTP/1.0\r\n\r\n", 0 },
	{ "\r\nGET / HTTP/1.1\n" H "\n", 0 },
	{ "POST /r HTTP/1.1\r\n" H "Content-Length: 3\r\n\r\nabc"
	  "GET / HTTP/1.1\r\n" H "\r\n", 0 },
	{ "POST /r HTTP/1.1\r\n" H "Transfer-Encoding: Chunked\r\n\r\n"
	  "3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n", 0 },
	{ "POST /r HTTP/1.1\r\n" H "Content-Length: 0\r\n\r\n", 0 },
	{ "GET / HTTP/1.1\r\n" H "X: \x80\xff\t.\r\n\r\n", 0 },
	{ "POST /r HTTP/1.1\r\n" H "Content-Length: 3\r\n"
	  "Content-Length: 3\r\n\r\n", 400 },
	{ "POST /r HTTP/1.1\r\n" H "Content-Length: +3\r\n\r\n", 400 },
	{ "POST /r HTTP/1.1\r\n" H "Content-Length: -1\r\n\r\n", 400 },
	{ "POST /r HTTP/1.1\r\n" H "Content-Length: 03\r\n\r\n", 400 },
	{ "POST /r HTTP/1.1\r\n" H "Content-Length: 1234567890123456789\r\n"
	  "\r\n", 400 },
	{ "POST /r HTTP/1.1\r\n" H "Transfer-Encoding: gzip\r\n\r\n", 400 },
	{ "POST /r HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n"
	  "Transfer-Encoding: chunked\r\n\r\n", 400 },
	{ "POST /r HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n"
	  "Content-Length: 3\r\n\r\n", 400 },
	{ "POST /r HTTP/1.1\r\n" H "X: 1\r\n 2\r\n\r\n", 400 },
	{ "POST /r HTTP/1.1\r\n" H "Content-Length : 3\r\n\r\n", 400 },
	{ "GET / HTTP/1.1\r\n" H "Content-Length: 1\r\n\r\nG", 400 },
	{ "GET / HTTP/1.1\r\n" H "X: a\rb\r\n\r\n", 400 },
	{ "GET / HTTP/1.1\r\n\r\n", 400 },
	{ "GET / HTTP/1.1\r\n" H H "\r\n", 400 },
	{ "GET / HTTP/1.2\r\n" H "\r\n", 400 },
	{ "GET /  HTTP/1.1\r\n" H "\r\n", 400 },
	{ "GET /\tHTTP/1.1\r\n" H "\r\n", 400 },
	{ "GET / x HTTP/1.1\r\n" H "\r\n", 400 },
	{ "POST /r HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n"
	  "3;a=b\r\nabc\r\n0\r\n\r\n", 400 },
	{ "POST /r HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n"
	  "3\r\nabcX\r\n0\r\n\r\n", 400 },
	{ "POST /r HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n"
	  "3 \r\nabc\r\n0\r\n\r\n", 400 },
	{ "GET http://a.b:80/x?y HTTP/1.1\r\n" H "\r\n", 0 },
	{ "GET http://a/ HTTP/1.1\r\n" H "\r\n", 0 },
	{ "GET http://[::1/ HTTP/1.1\r\n" H "\r\n", 400 },
	{ "GET http://a:8x/ HTTP/1.1\r\n" H "\r\n", 400 },
	{ "GET http://u@a/ HTTP/1.1\r\n" H "\r\n", 400 },
	{ "GET x HTTP/1.1\r\n" H "\r\n", 400 },
	{ "POST /r HTTP/1.1\r\n" H "Expect: 100-continue\r\n"
	  "Content-Length: 1\r\n\r\nx", 0 },
	{ "POST /r HTTP/1.1\r\n" H "Expect: 200-ok\r\n\r\n", 417 },
	{ "PUT /r HTTP/1.1\r\n" H "\r\n", 405 },
	{ "get / HTTP/1.1\r\n" H "\r\n", 405 },
	{ "POST /r HTTP/1.1\r\n" H "Content-Length: 101\r\n\r\n", 413 },
	{ "POST /r HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n"
	  "40\r\n", 0 },
	{ "POST /r HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n"
	  "65\r\n", 413 },
};

static int
feed_bytes(const char *p, size_t n, bool one)
{
	struct httpd_framer f;
	httpd_framer_init(&f, 100);
	if (!one)
		return httpd_framer_feed(&f, p, n);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = httpd_framer_feed(&f, p + i, 1);
	return rc;
}

static struct event_base *base;
static int hits;

static void
h_ok(struct evhttp_request *req, void *arg)
{
	(void)arg;
	hits++;
	httpd_reply(req, 200, "text/plain", "ok\n", 3);
}

/* Send a request, turn the loop, read the answer until the close. */
static size_t
exchange(const struct cats_ep *ep, const char *req, size_t n, char *out,
    size_t cap)
{
	char err[256];
	int fd = cats_ep_open(ep, false, err, sizeof(err));
	size_t got = 0;
	if (fd < 0)
		return 0;
	(void)!send(fd, req, n, MSG_NOSIGNAL);
	for (int i = 0; i < 200 && got + 1 < cap; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		struct pollfd p = { fd, POLLIN, 0 };
		if (poll(&p, 1, 10) <= 0)
			continue;
		ssize_t r = recv(fd, out + got, cap - 1 - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	out[got] = '\0';
	close(fd);
	return got;
}

int
main(void)
{
	for (size_t i = 0; i < CATS_ARRAY_LEN(cases); i++) {
		size_t n = strlen(cases[i].in);
		int a = feed_bytes(cases[i].in, n, false);
		int b = feed_bytes(cases[i].in, n, true);
		T_OK(a == cases[i].code && b == a, "case %zu: %d (%d a byte at a "
		    "time), expected %d", i, a, b, cases[i].code);
	}
	/* A NUL inside a header value (strlen would stop at it). */
	static const char nul[] = "GET / HTTP/1.1\r\nHost: x\r\nX: a\0b\r\n\r\n";
	T_OK(feed_bytes(nul, sizeof(nul) - 1, false) == 400, "a NUL in a value");

	base = event_base_new();
	char err[256];
	struct httpd_opts o = { .max_body = 100, .timeout_ms = 2000 };
	struct httpd *h = httpd_new(base, "http://127.0.0.1:0/", &o, err,
	    sizeof(err));
	T_OK(h != NULL, "listening (%s)", h ? "ok" : err);
	httpd_route(h, "/ok", HTTPD_GET | HTTPD_POST, h_ok, NULL);
	struct cats_ep ep;
	cats_ep_parse("tcp:127.0.0.1:0", &ep, err, sizeof(err));
	snprintf(ep.port, sizeof(ep.port), "%d", httpd_port(h));
	char ans[4096];
	const struct httpd_stats *st = httpd_stats(h);

	static const char smuggle[] = "GET /ok HTTP/1.1\r\nHost: x\r\n"
	    "Content-Length: 29\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n";
	exchange(&ep, smuggle, sizeof(smuggle) - 1, ans, sizeof(ans));
	T_OK(strncmp(ans, "HTTP/1.1 400 ", 13) == 0 && hits == 0 &&
	    st->bad == 1 && strstr(ans, "Connection: close") &&
	    strstr(ans, "\r\n\r\na body on a GET or HEAD request\n"),
	    "a body on a GET: 400 in one line, nothing served, counted");
	static const char put[] = "PUT /ok HTTP/1.1\r\nHost: x\r\n\r\n";
	exchange(&ep, put, sizeof(put) - 1, ans, sizeof(ans));
	T_OK(strncmp(ans, "HTTP/1.1 405 ", 13) == 0 && st->not_allowed == 1,
	    "PUT: 405, counted");
	char big[20000];
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /ok HTTP/1.1\r\nX: ", 21);
	exchange(&ep, big, sizeof(big), ans, sizeof(ans));
	T_OK(strncmp(ans, "HTTP/1.1 431 ", 13) == 0 &&
	    st->head_too_large == 1 && strstr(ans, "<") == NULL,
	    "a head over the limit: 431 of ours, counted");
	static const char nulpath[] = "GET /ok%00.html HTTP/1.1\r\nHost: x\r\n"
	    "\r\n";
	exchange(&ep, nulpath, sizeof(nulpath) - 1, ans, sizeof(ans));
	T_OK(strncmp(ans, "HTTP/1.1 400 ", 13) == 0 && hits == 0 &&
	    st->bad == 2 && strstr(ans, "NUL in the path\n"),
	    "%%00 in the path: 400, not the route");
	static const char esc[] = "GET /%6fk HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n";
	exchange(&ep, esc, sizeof(esc) - 1, ans, sizeof(ans));
	T_OK(strncmp(ans, "HTTP/1.1 200 ", 13) == 0 && hits == 1,
	    "an escaped name of the route: the route");
	static const char absf[] = "GET http://h:1/ok?x=1 HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n";
	exchange(&ep, absf, sizeof(absf) - 1, ans, sizeof(ans));
	T_OK(strncmp(ans, "HTTP/1.1 200 ", 13) == 0 && hits == 2,
	    "absolute-form: the same route");
	static const char other[] = "GET /ok/ HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n";
	exchange(&ep, other, sizeof(other) - 1, ans, sizeof(ans));
	T_OK(strncmp(ans, "HTTP/1.1 404 ", 13) == 0 && hits == 2,
	    "another name: 404");
	httpd_free(h);
	event_base_free(base);
	return t_done();
}
