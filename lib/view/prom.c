/*
 * prom.c - the Prometheus text exposition reader (see prom.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cats.h"
#include "view/prom.h"

static const char *const type_names[] = {
	"untyped", "counter", "gauge", "histogram", "summary",
};

static bool
name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	    c == ':';
}

static bool
name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

static bool
blank(char c)
{
	return c == ' ' || c == '\t';
}

/* A metric name at *p: its length (0: none), *p moved past it. */
static size_t
scan_name(char **p, bool metric)
{
	char *s = *p;
	if (!name_start(*s) || (!metric && *s == ':'))
		return 0;
	while (name_char(*s) && (metric || *s != ':'))
		s++;
	size_t n = (size_t)(s - *p);
	*p = s;
	return n;
}

/* A number (Prometheus's float, or +Inf/-Inf/NaN) that is all of s. */
static int
number(const char *s, double *v)
{
	if (strcmp(s, "+Inf") == 0 || strcmp(s, "Inf") == 0) {
		*v = INFINITY;
		return 0;
	}
	if (strcmp(s, "-Inf") == 0) {
		*v = -INFINITY;
		return 0;
	}
	if (strcmp(s, "NaN") == 0) {
		*v = NAN;
		return 0;
	}
	/* Digits, sign, point, exponent only: no hex, no "inf" spelled
	 * otherwise, no locale. */
	if (*s == '\0' || strspn(s, "0123456789+-.eE") != strlen(s))
		return -1;
	char *end;
	errno = 0;
	*v = strtod(s, &end);
	return *end == '\0' && errno != ERANGE ? 0 : -1;
}

/*
 * The labels at *p (just past '{'): checked, their end ('}') made a NUL,
 * *p past it; the le label's value in *le.  NULL, or the reason.
 */
static const char *
scan_labels(char **p, double *le)
{
	char *s = *p, *start = s;
	*le = NAN;
	for (;;) {
		while (blank(*s))
			s++;
		if (*s == '}')
			break;
		char *k = s;
		size_t kn = scan_name(&s, false);
		if (kn == 0)
			return "a label name expected";
		while (blank(*s))
			s++;
		if (*s++ != '=')
			return "'=' expected after a label name";
		while (blank(*s))
			s++;
		if (*s++ != '"')
			return "a quoted label value expected";
		char *v = s;
		while (*s != '"') {
			if (*s == '\0')
				return "an unterminated label value";
			if (*s == '\\') {
				s++;
				if (*s != '\\' && *s != '"' && *s != 'n')
					return "a bad escape in a label value";
			}
			s++;
		}
		if (kn == 2 && k[0] == 'l' && k[1] == 'e') {
			char buf[64];
			size_t vn = (size_t)(s - v);
			if (vn >= sizeof(buf))
				return "a bad le value";
			memcpy(buf, v, vn);
			buf[vn] = '\0';
			if (number(buf, le) < 0)
				return "a bad le value";
		}
		s++;
		while (blank(*s))
			s++;
		if (*s == ',') {
			s++;
			continue;
		}
		if (*s != '}')
			return "',' or '}' expected after a label";
	}
	if ((size_t)(s - start) > CATS_PROM_MAX_LABELS)
		return "labels too long";
	*s = '\0';
	*p = s + 1;
	return NULL;
}

static int
fail(struct cats_prom *p, char *err, size_t errlen, size_t line,
    const char *why)
{
	snprintf(err, errlen, "line %zu: %s", line, why);
	cats_prom_free(p);
	return -1;
}

/* A comment line (past '#'): a TYPE line is kept; NULL or the reason. */
static const char *
comment(struct cats_prom *p, char *s)
{
	while (blank(*s))
		s++;
	bool help = strncmp(s, "HELP", 4) == 0 && blank(s[4]);
	bool type = strncmp(s, "TYPE", 4) == 0 && blank(s[4]);
	if (!help && !type)
		return NULL;	/* another comment */
	s += 4;
	while (blank(*s))
		s++;
	char *name = s;
	size_t n = scan_name(&s, true);
	if (n == 0 || n > CATS_PROM_MAX_NAME || (*s != '\0' && !blank(*s)))
		return help ? "a HELP line without a metric name" :
		    "a TYPE line without a metric name";
	if (help)
		return NULL;
	char *end = s;
	while (blank(*s))
		s++;
	*end = '\0';
	size_t len = strcspn(s, " \t");
	for (size_t i = len; s[i] != '\0'; i++)
		if (!blank(s[i]))
			return "a TYPE line with more than a type";
	s[len] = '\0';
	size_t t = 0;
	while (t < 5 && strcmp(s, type_names[t]) != 0)
		t++;
	if (t == 5)
		return "an unknown TYPE";
	if (p->nt == CATS_PROM_MAX_SAMPLES)
		return "too many TYPE lines";
	/* Two arrays of one capacity: p->tcap moves with the second. */
	size_t tncap = p->tcap;
	if (cats_grow((void **)&p->tname, &tncap, p->nt, sizeof(*p->tname),
	    16) < 0 || cats_grow((void **)&p->ttype, &p->tcap, p->nt,
	    sizeof(*p->ttype), 16) < 0)
		return "out of memory";
	p->tname[p->nt] = name;
	p->ttype[p->nt++] = (uint8_t)t;
	return NULL;
}

/* A sample line: kept; NULL or the reason. */
static const char *
sample(struct cats_prom *p, char *s, size_t *cap)
{
	struct cats_prom_sample x;
	char *name = s;
	size_t n = scan_name(&s, true);
	if (n == 0)
		return "not a metric name";
	if (n > CATS_PROM_MAX_NAME)
		return "metric name too long";
	x.labels = "";
	x.le = NAN;
	if (*s == '{') {
		*s++ = '\0';
		char *labels = s;
		const char *why = scan_labels(&s, &x.le);
		if (why != NULL)
			return why;
		x.labels = labels;
	} else if (blank(*s)) {
		*s++ = '\0';
	} else {
		return "a space expected after the metric name";
	}
	while (blank(*s))
		s++;
	char *v = s;
	s += strcspn(s, " \t");
	bool more = *s != '\0';
	*s = '\0';
	if (number(v, &x.v) < 0)
		return "a bad value";
	if (more) {
		s++;
		while (blank(*s))
			s++;
		char *ts = s;
		if (*s == '-')
			s++;
		size_t d = strspn(s, "0123456789");
		if (d > 0 && d <= 19) {
			s += d;
			while (blank(*s))
				s++;
		} else if (*ts != '\0') {
			return "a bad timestamp";
		}
		if (*s != '\0')
			return "more after the timestamp";
	}
	x.name = name;
	if (p->n == CATS_PROM_MAX_SAMPLES)
		return "too many samples";
	if (cats_grow((void **)&p->s, cap, p->n, sizeof(*p->s), 64) < 0)
		return "out of memory";
	p->s[p->n++] = x;
	return NULL;
}

static int
by_name(const void *a, const void *b)
{
	const struct cats_prom_sample *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	if (c != 0)
		return c;
	bool xn = isnan(x->le), yn = isnan(y->le);
	if (xn || yn)
		return (int)yn - (int)xn;
	return x->le < y->le ? -1 : x->le > y->le;
}

int
cats_prom_parse(struct cats_prom *p, const char *text, size_t len, char *err,
    size_t errlen)
{
	memset(p, 0, sizeof(*p));
	if (len > CATS_PROM_MAX_TEXT) {
		snprintf(err, errlen, "over %u bytes", CATS_PROM_MAX_TEXT);
		return -1;
	}
	if (memchr(text, '\0', len) != NULL) {
		const char *z = memchr(text, '\0', len);
		size_t line = 1;
		for (const char *q = text; q < z; q++)
			line += *q == '\n';
		return fail(p, err, errlen, line, "a NUL byte");
	}
	if ((p->text = malloc(len + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	memcpy(p->text, text, len);
	p->text[len] = '\0';
	size_t cap = 0, line = 0;
	char *s = p->text, *end = p->text + len;
	while (s < end) {
		char *nl = memchr(s, '\n', (size_t)(end - s));
		char *e = nl ? nl : end;
		line++;
		if ((size_t)(e - s) > CATS_PROM_MAX_LINE)
			return fail(p, err, errlen, line, "line too long");
		*e = '\0';
		if (e > s && e[-1] == '\r')
			e[-1] = '\0';
		char *q = s;
		while (blank(*q))
			q++;
		const char *why = NULL;
		if (*q == '#')
			why = comment(p, q + 1);
		else if (*q != '\0')
			why = sample(p, q, &cap);
		if (why != NULL)
			return fail(p, err, errlen, line, why);
		s = e + 1;
	}
	if (p->n == 0 && p->nt == 0)
		return fail(p, err, errlen, line ? line : 1,
		    "no metrics in the text");
	qsort(p->s, p->n, sizeof(*p->s), by_name);
	return 0;
}

void
cats_prom_free(struct cats_prom *p)
{
	free(p->s);
	free(p->text);
	free(p->tname);
	free(p->ttype);
	memset(p, 0, sizeof(*p));
}

size_t
cats_prom_find(const struct cats_prom *p, const char *name, size_t *first)
{
	size_t lo = 0, hi = p->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(p->s[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t n = 0;
	while (lo + n < p->n && strcmp(p->s[lo + n].name, name) == 0)
		n++;
	*first = lo;
	return n;
}

bool
cats_prom_sum(const struct cats_prom *p, const char *name, double *v)
{
	size_t i, n = cats_prom_find(p, name, &i);
	*v = 0;
	for (size_t j = 0; j < n; j++)
		*v += p->s[i + j].v;
	return n > 0;
}

enum cats_prom_type
cats_prom_type(const struct cats_prom *p, const char *name)
{
	for (size_t i = 0; i < p->nt; i++)
		if (strcmp(p->tname[i], name) == 0)
			return (enum cats_prom_type)p->ttype[i];
	return CATS_PT_UNTYPED;
}

const char *
cats_prom_label(const char *labels, const char *key, char *buf, size_t len)
{
	size_t kn = strlen(key);
	const char *s = labels;
	while (*s != '\0') {
		while (blank(*s) || *s == ',')
			s++;
		const char *k = s;
		while (*s != '\0' && *s != '=' && !blank(*s))
			s++;
		bool match = (size_t)(s - k) == kn && memcmp(k, key, kn) == 0;
		while (*s != '\0' && *s != '"')
			s++;
		if (*s == '\0')
			return NULL;
		s++;
		size_t o = 0;
		while (*s != '\0' && *s != '"') {
			char c = *s++;
			if (c == '\\' && *s != '\0') {
				c = *s++;
				if (c == 'n')
					c = '\n';
			}
			if (match && o + 1 < len)
				buf[o++] = c;
		}
		if (*s == '"')
			s++;
		if (match) {
			if (len > 0)
				buf[o] = '\0';
			return buf;
		}
	}
	return NULL;
}
