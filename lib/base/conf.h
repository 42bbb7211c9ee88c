/*
 * conf.h - the one configuration file syntax of cats, and value parsers
 * shared with command-line options.
 *
 *   # comment
 *   key = value
 *   [section]
 *   [section "argument"]
 *   key = value
 *
 * Keys and section names are [A-Za-z0-9_-]; a value runs to the end of the
 * line (trimmed), or is a "double-quoted" string with \" and \\ escapes.
 * Repeated keys are kept in order.  Errors name file:line.
 */
#ifndef CATS_CONF_H
#define CATS_CONF_H

#include "base/cats.h"

struct cats_conf_ent {
	const char *section;	/* "" before any section */
	const char *arg;	/* section argument, "" if none */
	const char *key;
	const char *val;
	unsigned line;
};

struct cats_conf {
	char *path;
	struct cats_conf_ent *v;
	size_t n;
	char *text;		/* the file, cut into the strings above */
};

/* Load a file; -1 with "path:line: reason" in err.  Files over 4 MiB are
 * refused. */
int cats_conf_load(struct cats_conf *c, const char *path, char *err,
    size_t errlen);
/* Parse text already in memory (tests, fuzzing). */
int cats_conf_parse(struct cats_conf *c, const char *name, const char *text,
    size_t len, char *err, size_t errlen);
void cats_conf_free(struct cats_conf *c);

/* Value parsers: 0 or -1 with a reason ("expected ...") in err. */
int cats_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out,
    char *err, size_t errlen);
/* Duration: "250ms", "2s", "5m", "1h", "1d"; a bare number is ms. */
int cats_parse_ms(const char *s, uint64_t *out, char *err, size_t errlen);
/* Size: "512", "64k", "16M", "1G" (powers of 1024). */
int cats_parse_size(const char *s, uint64_t *out, char *err, size_t errlen);
/* "yes/no/true/false/on/off/1/0". */
int cats_parse_bool(const char *s, bool *out, char *err, size_t errlen);
/* A decimal fraction "0.8" as parts per million (0.8 -> 800000). */
int cats_parse_ppm(const char *s, uint64_t max_ppm, uint64_t *out, char *err,
    size_t errlen);

/* "path:line: key: reason" for a bad value of entry e. */
void cats_conf_errf(const struct cats_conf *c, const struct cats_conf_ent *e,
    char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
