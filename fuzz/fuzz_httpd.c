/*
 * fuzz_httpd.c - the HTTP/1.1 framing follower behind the body limits of
 * lib/httpd (httpd_framer_*), on bytes from a client: it never reads out of
 * bounds or grows, and its verdict does not depend on how the bytes were
 * split across reads (the whole input at once against pieces whose sizes
 * come from the first byte).
 */
#include <stdlib.h>
#include <string.h>

#include "net/httpd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool
feed_all(struct httpd_framer *f, const uint8_t *p, size_t n, size_t piece)
{
	while (n > 0) {
		size_t k = piece < n ? piece : n;
		if (!httpd_framer_feed(f, (const char *)p, k))
			return false;
		p += k;
		n -= k;
	}
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t piece = 1 + data[0] % 17, max = 16 + (size_t)data[0] * 4;
	data++;
	size--;
	struct httpd_framer a, b;
	httpd_framer_init(&a, max);
	httpd_framer_init(&b, max);
	bool ra = feed_all(&a, data, size, size ? size : 1);
	bool rb = feed_all(&b, data, size, piece);
	size_t kept = a.llen < sizeof(a.line) ? a.llen : sizeof(a.line);
	if (ra != rb || a.st != b.st || a.left != b.left ||
	    a.total != b.total || a.cl != b.cl || a.llen != b.llen ||
	    a.chunked != b.chunked || a.have_cl != b.have_cl ||
	    a.body_method != b.body_method ||
	    memcmp(a.line, b.line, kept) != 0)
		abort();
	if (!ra && a.st != HTTPD_FR_LOST && !(a.total > max || a.cl > max))
		abort();	/* refused, yet nothing over the limit */
	return 0;
}
