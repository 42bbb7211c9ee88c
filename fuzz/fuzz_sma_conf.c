/*
 * fuzz_sma_conf.c - the cats-sma configuration: the file syntax and every
 * key and section of cats-sma.conf(5).
 */
#include <stdint.h>
#include <string.h>

#include "sma/sma.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cats_conf cf;
	struct sma_conf c;
	char err[512];
	if (cats_conf_parse(&cf, "fuzz.conf", (const char *)data, size, err,
	    sizeof(err)) < 0)
		return 0;
	if (sma_conf_from(&c, &cf, err, sizeof(err)) == 0) {
		/* What the core reads of it. */
		for (size_t i = 0; i < c.nscis; i++)
			(void)sma_conf_sci(&c, c.scis[i].csci_id);
		sma_conf_free(&c);
	} else if (strlen(err) >= sizeof(err)) {
		__builtin_trap();
	}
	cats_conf_free(&cf);
	return 0;
}
