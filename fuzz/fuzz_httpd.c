/*
 * fuzz_httpd.c - the HTTP/1.1 framing follower in front of evhttp
 * (net/httpd.h, httpd_framer_*), on bytes from a client: it never reads
 * out of bounds or grows, its verdict does not depend on how the bytes
 * were split across reads (the whole input at once against pieces whose
 * sizes come from the first byte), and it refuses with a status only.
 */
#include <stdlib.h>
#include <string.h>

#include "net/httpd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
feed_all(struct httpd_framer *f, const uint8_t *p, size_t n, size_t piece)
{
	while (n > 0) {
		size_t k = piece < n ? piece : n;
		int code = httpd_framer_feed(f, (const char *)p, k);
		if (code != 0)
			return code;
		p += k;
		n -= k;
	}
	return 0;
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
	int ra = feed_all(&a, data, size, size ? size : 1);
	int rb = feed_all(&b, data, size, piece);
	size_t kept = a.llen < sizeof(a.line) ? a.llen : sizeof(a.line);
	if (ra != rb || a.st != b.st)
		abort();
	/* Where a refusal stops within the line may differ, not that it is. */
	if (ra == 0 && (a.left != b.left ||
	    a.total != b.total || a.cl != b.cl || a.llen != b.llen ||
	    a.chunked != b.chunked || a.have_cl != b.have_cl ||
	    a.body_method != b.body_method || a.head != b.head ||
	    memcmp(a.line, b.line, kept) != 0))
		abort();
	if ((ra != 0) != (a.st == HTTPD_FR_REFUSED) || (ra != 0 &&
	    (a.why == NULL || (ra != 400 && ra != 405 && ra != 413 &&
	    ra != 417 && ra != 431))))
		abort();	/* a refusal is a state, a status and a reason */
	return 0;
}
