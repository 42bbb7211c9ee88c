/*
 * opt.c - option values: parse or exit (see opt.h for the contract).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/cats.h"
#include "base/conf.h"
#include "base/log.h"
#include "base/opt.h"

void
cats_opt_fail(const char *opt, const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	cats_errorx("%s: %s", opt, why);
	exit(CATS_EXIT_USAGE);
}

uint64_t
cats_opt_u64(const char *opt, const char *v, uint64_t min, uint64_t max)
{
	uint64_t x;
	char why[128];
	if (cats_parse_u64(v, min, max, &x, why, sizeof(why)) < 0)
		cats_opt_fail(opt, "%s", why);
	return x;
}

uint64_t
cats_opt_ms(const char *opt, const char *v)
{
	uint64_t x;
	char why[128];
	if (cats_parse_ms(v, &x, why, sizeof(why)) < 0)
		cats_opt_fail(opt, "%s", why);
	return x;
}

uint64_t
cats_opt_size(const char *opt, const char *v)
{
	uint64_t x;
	char why[128];
	if (cats_parse_size(v, &x, why, sizeof(why)) < 0)
		cats_opt_fail(opt, "%s", why);
	return x;
}

bool
cats_opt_bool(const char *opt, const char *v)
{
	bool x;
	char why[128];
	if (cats_parse_bool(v, &x, why, sizeof(why)) < 0)
		cats_opt_fail(opt, "%s", why);
	return x;
}
