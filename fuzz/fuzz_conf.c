/*
 * fuzz_conf.c - the configuration syntax and value parsers.
 */
#include <string.h>

#include "base/conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cats_conf c;
	char err[256];
	if (cats_conf_parse(&c, "fuzz.conf", (const char *)data, size, err,
	    sizeof(err)) < 0)
		return 0;
	for (size_t i = 0; i < c.n; i++) {
		uint64_t v;
		bool b;
		cats_parse_ms(c.v[i].val, &v, err, sizeof(err));
		cats_parse_size(c.v[i].val, &v, err, sizeof(err));
		cats_parse_bool(c.v[i].val, &b, err, sizeof(err));
		cats_parse_ppm(c.v[i].val, 1000000, &v, err, sizeof(err));
		cats_parse_u64(c.v[i].val, 0, UINT64_MAX, &v, err, sizeof(err));
		cats_conf_errf(&c, &c.v[i], err, sizeof(err), "x");
	}
	cats_conf_free(&c);
	return 0;
}
