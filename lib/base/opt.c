/*
 * opt.c - option values: parse or exit (see opt.h for the contract).
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cats.h"
#include "base/conf.h"
#include "base/log.h"
#include "base/opt.h"
#include "base/tool.h"
#include "net/tls.h"
#include "sec/crypto.h"

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

void
cats_usage_fail(const char *fmt, ...)
{
	char why[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	cats_errorx("%s", why);
	exit(CATS_EXIT_USAGE);
}

void
cats_opt_refused(int ch, char *const argv[])
{
	const char *arg = optind > 0 ? argv[optind - 1] : NULL;
	char name[64];
	bool is_long = arg != NULL && strncmp(arg, "--", 2) == 0;
	if (is_long)
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg, "="),
		    arg);
	else if (optopt > 0 && optopt < 128 && optopt > ' ')
		snprintf(name, sizeof(name), "-%c", optopt);
	else
		snprintf(name, sizeof(name), "%s", arg != NULL ? arg : "?");
	if (ch == ':')
		cats_opt_fail(name, "needs a value");
	if (is_long && optopt != 0 && strchr(arg, '=') != NULL)
		cats_opt_fail(name, "takes no value");
	cats_opt_fail(name, "unknown option");
}

void
cats_opt_common(int ch, char *const argv[], const char *usage,
    int *verbosity)
{
	if (ch == 'h')
		cats_tool_help(usage);
	if (ch == 'v' && verbosity != NULL) {
		(*verbosity)++;
		return;
	}
	if (ch == 'V') {
		cats_tool_version();
		exit(CATS_EXIT_OK);
	}
	if (!cats_tls_opt(ch, optarg))
		cats_opt_refused(ch, argv);
}

void
cats_opt_no_operands(int argc, char *const argv[])
{
	if (optind != argc)
		cats_usage_fail("unexpected operand %s", argv[optind]);
}

const char *
cats_opt_command(int *argc, char ***argv, const char *list)
{
	*argc -= optind;
	*argv += optind;
	if (*argc < 1)
		cats_usage_fail("needs a command: %s", list);
	return (*argv)[0];
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

/*
 * cats_opt_NAME(opt, v): the value of v as cats_parse_NAME() of conf.h
 * reads it, or exit 2 with its reason (cats_opt_fail).  One body for the
 * parsers that take no range.
 */
#define OPT_PARSE(name, type)						\
type									\
cats_opt_##name(const char *opt, const char *v)			\
{									\
	type x;								\
	char why[128];							\
	if (cats_parse_##name(v, &x, why, sizeof(why)) < 0)		\
		cats_opt_fail(opt, "%s", why);				\
	return x;							\
}

OPT_PARSE(ms, uint64_t)
OPT_PARSE(size, uint64_t)
OPT_PARSE(bool, bool)

void
cats_opt_key(const char *opt, const char *path, int kind, struct cats_key *k)
{
	char err[600];
	if (cats_key_load(k, path, kind, err, sizeof(err)) < 0) {
		cats_errorx("%s: %s", opt, err);
		exit(CATS_EXIT_NOPERM);
	}
	if (kind < 0 && k->kind == CATS_KEY_ED25519_PUBLIC) {
		cats_errorx("%s: %s: a public key cannot sign", opt, path);
		exit(CATS_EXIT_NOPERM);
	}
}

void
cats_opt_keyring(const char *opt, const char *path, struct cats_keyring *kr)
{
	char err[600];
	if (cats_keyring_load(kr, path, err, sizeof(err)) < 0) {
		cats_errorx("%s: %s", opt, err);
		exit(CATS_EXIT_NOPERM);
	}
}
