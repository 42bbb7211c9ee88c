/*
 * conf.c - configuration files and value parsers.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/conf.h"
#include "base/file.h"

#define CONF_MAX (4u << 20)

static bool
name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

static char *
trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

/* Unquote "..." in place; returns NULL on a bad string. */
static char *
unquote(char *s)
{
	char *out = s, *p = s + 1;
	for (;;) {
		if (*p == '\0')
			return NULL;
		if (*p == '"')
			break;
		if (*p == '\\') {
			p++;
			if (*p != '"' && *p != '\\')
				return NULL;
		}
		*out++ = *p++;
	}
	p++;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != '\0' && *p != '#')
		return NULL;
	*out = '\0';
	return s;
}

int
cats_conf_parse(struct cats_conf *c, const char *name, const char *text,
    size_t len, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->path = strdup(name);
	c->text = malloc(len + 1);
	if (c->path == NULL || c->text == NULL) {
		snprintf(err, errlen, "%s: out of memory", name);
		cats_conf_free(c);
		return -1;
	}
	memcpy(c->text, text, len);
	c->text[len] = '\0';
	if (memchr(c->text, '\0', len) != NULL) {
		snprintf(err, errlen, "%s: file contains a NUL byte", name);
		cats_conf_free(c);
		return -1;
	}
	const char *section = "", *arg = "";
	size_t cap = 0;
	unsigned lineno = 0;
	char *line = c->text;
	while (line != NULL) {
		char *nl = strchr(line, '\n');
		if (nl != NULL)
			*nl = '\0';
		lineno++;
		char *p = trim(line);
		line = nl ? nl + 1 : NULL;
		if (*p == '\0' || *p == '#')
			continue;
		if (*p == '[') {
			char *end = strrchr(p, ']');
			if (end == NULL || trim(end + 1)[0] != '\0') {
				snprintf(err, errlen, "%s:%u: section header "
				    "without ]", name, lineno);
				goto fail;
			}
			*end = '\0';
			char *s = trim(p + 1);
			char *q = s;
			while (name_char(*q))
				q++;
			if (q == s) {
				snprintf(err, errlen, "%s:%u: empty section name",
				    name, lineno);
				goto fail;
			}
			char *rest = q;
			while (*rest == ' ' || *rest == '\t')
				rest++;
			if (rest == q && *rest != '\0') {
				snprintf(err, errlen, "%s:%u: bad section name",
				    name, lineno);
				goto fail;
			}
			*q = '\0';
			section = s;
			arg = "";
			if (*rest == '"') {
				arg = unquote(rest);
				if (arg == NULL) {
					snprintf(err, errlen, "%s:%u: bad quoted "
					    "section argument", name, lineno);
					goto fail;
				}
			} else if (*rest != '\0') {
				snprintf(err, errlen, "%s:%u: section argument "
				    "must be quoted", name, lineno);
				goto fail;
			}
			continue;
		}
		char *eq = strchr(p, '=');
		if (eq == NULL) {
			snprintf(err, errlen, "%s:%u: expected key = value",
			    name, lineno);
			goto fail;
		}
		*eq = '\0';
		char *key = trim(p), *val = trim(eq + 1);
		if (*key == '\0') {
			snprintf(err, errlen, "%s:%u: missing key", name, lineno);
			goto fail;
		}
		for (char *q = key; *q; q++) {
			if (!name_char(*q)) {
				snprintf(err, errlen, "%s:%u: bad character in "
				    "key \"%.40s\"", name, lineno, key);
				goto fail;
			}
		}
		if (*val == '"') {
			val = unquote(val);
			if (val == NULL) {
				snprintf(err, errlen, "%s:%u: %s: bad quoted "
				    "value", name, lineno, key);
				goto fail;
			}
		} else {
			char *hash = strstr(val, " #");
			if (hash != NULL)
				*hash = '\0';
			val = trim(val);
		}
		if (cats_grow((void **)&c->v, &cap, c->n, sizeof(*c->v),
		    32) < 0) {
			snprintf(err, errlen, "%s: out of memory", name);
			goto fail;
		}
		c->v[c->n++] = (struct cats_conf_ent){ section, arg, key, val,
			lineno };
	}
	return 0;
fail:
	cats_conf_free(c);
	return -1;
}

int
cats_conf_load(struct cats_conf *c, const char *path, char *err, size_t errlen)
{
	char *buf;
	size_t len;
	if (cats_file_read(path, CONF_MAX, &buf, &len, err, errlen) < 0)
		return -1;
	int rc = cats_conf_parse(c, path, buf, len, err, errlen);
	free(buf);
	return rc;
}

void
cats_conf_free(struct cats_conf *c)
{
	free(c->path);
	free(c->v);
	free(c->text);
	memset(c, 0, sizeof(*c));
}

void
cats_conf_errf(const struct cats_conf *c, const struct cats_conf_ent *e,
    char *err, size_t errlen, const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%s:%u: %s: %s", c->path, e->line, e->key, why);
}

int
cats_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out,
    char *err, size_t errlen)
{
	char *end;
	if (!isdigit((unsigned char)*s)) {
		snprintf(err, errlen, "expected a number, got \"%.40s\"", s);
		return -1;
	}
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end != '\0') {
		snprintf(err, errlen, "expected a number, got \"%.40s\"", s);
		return -1;
	}
	if (v < min || v > max) {
		snprintf(err, errlen, "%llu is out of range %llu..%llu", v,
		    (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 0;
}

/* A number followed by a unit from the table. */
static int
parse_unit(const char *s, const char *const *units, const uint64_t *mult,
    uint64_t *out, const char *what, char *err, size_t errlen)
{
	char *end;
	if (!isdigit((unsigned char)*s)) {
		snprintf(err, errlen, "expected a %s, got \"%.40s\"", what, s);
		return -1;
	}
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno) {
		snprintf(err, errlen, "%s \"%.40s\" is too large", what, s);
		return -1;
	}
	for (size_t i = 0; units[i] != NULL; i++) {
		if (strcmp(end, units[i]) != 0)
			continue;
		if (v > UINT64_MAX / mult[i]) {
			snprintf(err, errlen, "%s \"%.40s\" is too large", what,
			    s);
			return -1;
		}
		*out = v * mult[i];
		return 0;
	}
	snprintf(err, errlen, "expected a %s, got \"%.40s\"", what, s);
	return -1;
}

int
cats_parse_ms(const char *s, uint64_t *out, char *err, size_t errlen)
{
	static const char *const u[] = { "", "ms", "s", "m", "h", "d", NULL };
	static const uint64_t m[] = { 1, 1, 1000, 60000, 3600000, 86400000 };
	return parse_unit(s, u, m, out, "duration (500ms, 2s, 5m, 1h)", err,
	    errlen);
}

int
cats_parse_size(const char *s, uint64_t *out, char *err, size_t errlen)
{
	static const char *const u[] = { "", "k", "K", "M", "G", NULL };
	static const uint64_t m[] = { 1, 1024, 1024, 1u << 20, 1u << 30 };
	return parse_unit(s, u, m, out, "size (512, 64k, 16M)", err, errlen);
}

int
cats_parse_bool(const char *s, bool *out, char *err, size_t errlen)
{
	static const char *const yes[] = { "yes", "true", "on", "1", NULL };
	static const char *const no[] = { "no", "false", "off", "0", NULL };
	for (size_t i = 0; yes[i]; i++) {
		if (strcmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	snprintf(err, errlen, "expected yes or no, got \"%.40s\"", s);
	return -1;
}

int
cats_parse_ppm(const char *s, uint64_t max_ppm, uint64_t *out, char *err,
    size_t errlen)
{
	uint64_t whole = 0, frac = 0, scale = 1000000;
	const char *p = s;
	if (!isdigit((unsigned char)*p))
		goto bad;
	while (isdigit((unsigned char)*p)) {
		whole = whole * 10 + (uint64_t)(*p++ - '0');
		if (whole > 1000000)
			goto bad;
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			goto bad;
		while (isdigit((unsigned char)*p)) {
			if (scale > 1) {
				scale /= 10;
				frac += (uint64_t)(*p - '0') * scale;
			}
			p++;
		}
	}
	if (*p != '\0')
		goto bad;
	uint64_t v = whole * 1000000 + frac;
	if (v > max_ppm) {
		snprintf(err, errlen, "%s is above %llu.%06llu", s,
		    (unsigned long long)(max_ppm / 1000000),
		    (unsigned long long)(max_ppm % 1000000));
		return -1;
	}
	*out = v;
	return 0;
bad:
	snprintf(err, errlen, "expected a decimal number, got \"%.40s\"", s);
	return -1;
}
