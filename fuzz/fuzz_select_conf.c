/*
 * fuzz_select_conf.c - the cats-select configuration: the file syntax and
 * every key and section of cats-select(1) CONFIGURATION.
 */
#include <stdint.h>
#include <string.h>

#include "select/select_conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cats_sel_opts o;
	struct cats_conf cf;
	char err[512];
	if (cats_conf_parse(&cf, "fuzz.conf", (const char *)data, size, err,
	    sizeof(err)) < 0)
		return 0;
	memset(&o, 0, sizeof(o));
	cats_sel_opts_init(&o);
	if (cats_sel_opts_conf(&o, &cf, err, sizeof(err)) == 0) {
		/* What the main reads of it. */
		cats_sel_opts_defaults(&o);
		for (size_t i = 0; i < o.nsmas; i++)
			if (o.smas[i].id[0] == '\0' ||
			    strlen(o.smas[i].id) > CATS_ID)
				__builtin_trap();
		for (size_t i = 0; i < o.npc; i++)
			if (o.pc[i].id[0] == '\0' || strlen(o.pc[i].id) > CATS_ID)
				__builtin_trap();
		if (o.nlisten > CATS_SEL_MAX_LISTEN ||
		    o.nsmas > CATS_SEL_MAX_SMA || o.npc > CATS_SEL_MAX_PEERCRED)
			__builtin_trap();
	} else if (strlen(err) >= sizeof(err)) {
		__builtin_trap();
	}
	cats_conf_free(&cf);
	return 0;
}
