/*
 * fuzz_metrics.c - the Prometheus text reader of cats-top (view/prom.h)
 * and the screen made from what it read (view/top.h), two reads apart.
 */
#include <math.h>
#include <string.h>

#include "view/prom.h"
#include "view/top.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cats_prom a, b;
	char err[256];
	size_t half = size / 2;
	if (cats_prom_parse(&a, (const char *)data, size, err,
	    sizeof(err)) < 0)
		return 0;
	/* The second read: the first half of the input, when it parses. */
	bool two = cats_prom_parse(&b, (const char *)data, half, err,
	    sizeof(err)) == 0;
	struct cats_top t = { .all = size & 1 };
	struct cats_buf out = { 0 };
	cats_top_frame(&t, NULL, &a, 1.8e9, 0, &out);
	if (two)
		cats_top_frame(&t, &b, &a, 1.8e9 + 1, 1, &out);
	char v[64];
	for (size_t i = 0; i < a.n; i++)
		cats_prom_label(a.s[i].labels, "le", v, sizeof(v));
	cats_buf_free(&out);
	cats_prom_free(&a);
	if (two)
		cats_prom_free(&b);
	return 0;
}
