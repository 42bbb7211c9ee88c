/*
 * log.c - messages and audit lines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/bucket.h"
#include "base/cats.h"
#include "base/clock.h"
#include "base/log.h"

static const char *tool = "cats";
static int use_syslog;
static int verbosity = 1;
static FILE *audit_file;	/* NULL: stderr */
static int audit_syslog, audit_off;
static uint64_t audit_lines;

void
cats_log_init(const char *name)
{
	const char *slash = strrchr(name, '/');
	tool = slash ? slash + 1 : name;
}

const char *
cats_log_tool(void)
{
	return tool;
}

int
cats_log_open(const char *spec)
{
	if (strcmp(spec, "stderr") == 0) {
		use_syslog = 0;
		return 0;
	}
	if (strcmp(spec, "syslog") == 0) {
		openlog(tool, LOG_PID, LOG_DAEMON);
		use_syslog = 1;
		return 0;
	}
	return -1;
}

void
cats_log_verbosity(int level)
{
	verbosity = level;
}

void
cats_vlog(int prio, const char *fmt, va_list ap)
{
	if ((prio == LOG_DEBUG && verbosity < 2) ||
	    (prio > LOG_WARNING && prio != LOG_DEBUG && verbosity < 1))
		return;
	if (use_syslog) {
		vsyslog(prio, fmt, ap);
		return;
	}
	char line[1024];
	vsnprintf(line, sizeof(line), fmt, ap);
	/* One line per message, whatever the input put in it. */
	for (char *p = line; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	fprintf(stderr, "%s: %s\n", tool, line);
}

void
cats_log(int prio, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cats_vlog(prio, fmt, ap);
	va_end(ap);
}

int
cats_audit_open(const char *spec)
{
	/* A sink refused leaves the one in use as it was (a reload). */
	FILE *f = NULL;
	if (strncmp(spec, "file:", 5) == 0) {
		if ((f = fopen(spec + 5, "a")) == NULL)
			return -1;
		setvbuf(f, NULL, _IOLBF, 0);
	} else if (strcmp(spec, "stderr") != 0 && strcmp(spec, "none") != 0 &&
	    strcmp(spec, "syslog") != 0) {
		errno = EINVAL;
		return -1;
	}
	if (audit_file != NULL)
		fclose(audit_file);
	audit_file = f;
	audit_off = strcmp(spec, "none") == 0;
	audit_syslog = strcmp(spec, "syslog") == 0;
	if (audit_syslog)
		openlog(tool, LOG_PID, LOG_AUTH);
	return 0;
}

/* Write one audit line: body from fmt, then more (may be ""). */
static void
vaudit(const char *event, const char *more, const char *fmt, va_list ap)
{
	char body[768];
	audit_lines++;
	if (audit_off)
		return;
	vsnprintf(body, sizeof(body), fmt, ap);
	for (char *p = body; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	if (audit_syslog) {
		syslog(LOG_NOTICE, "audit event=%s %s%s", event, body, more);
		return;
	}
	FILE *f = audit_file ? audit_file : stderr;
	fprintf(f, "%s: audit ts=%llu event=%s %s%s\n", tool,
	    (unsigned long long)cats_clock_now(), event, body, more);
}

void
cats_audit(const char *event, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vaudit(event, "", fmt, ap);
	va_end(ap);
}

/*
 * The limiter of cats_audit_limited(): a bucket per event, found by name
 * in a small table (the events are a handful of constants); kinds beyond
 * the table share its last slot.
 */
#define LIMIT_KINDS 16
static struct limit_kind {
	char event[32];
	struct cats_bucket b;
	uint64_t unlogged;	/* left out since the last line written */
} limits[LIMIT_KINDS];
static size_t nlimits;

static struct limit_kind *
limit_find(const char *event, uint64_t now)
{
	for (size_t i = 0; i < nlimits; i++)
		if (strcmp(limits[i].event, event) == 0)
			return &limits[i];
	if (nlimits == LIMIT_KINDS)
		return &limits[LIMIT_KINDS - 1];
	struct limit_kind *k = &limits[nlimits++];
	snprintf(k->event, sizeof(k->event), "%s", event);
	cats_bucket_init(&k->b, CATS_AUDIT_LIMIT_RATE, CATS_AUDIT_LIMIT_BURST,
	    now);
	return k;
}

void
cats_audit_limited(const char *event, const char *fmt, ...)
{
	uint64_t now = cats_clock_now();
	struct limit_kind *k = limit_find(event, now);
	if (!cats_bucket_take(&k->b, 1, now)) {
		k->unlogged++;
		return;
	}
	char more[40] = "";
	if (k->unlogged)
		snprintf(more, sizeof(more), " unlogged=%llu",
		    (unsigned long long)k->unlogged);
	k->unlogged = 0;
	va_list ap;
	va_start(ap, fmt);
	vaudit(event, more, fmt, ap);
	va_end(ap);
}

uint64_t
cats_audit_count(void)
{
	return audit_lines;
}

const char *
cats_safe(const char *s, char *buf, size_t len)
{
	size_t i = 0;
	if (len == 0)
		return "";
	for (; s != NULL && s[i] && i + 1 < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		buf[i] = ch <= 0x20 || ch == '"' || ch == 0x7f || ch == '\\' ?
		    '?' : (char)ch;
	}
	buf[i] = '\0';
	return buf;
}

const char *
cats_quote(const char *s, char *buf, size_t len)
{
	size_t i = 0;
	if (len == 0)
		return "";
	for (; s != NULL && s[i] && i + 1 < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		buf[i] = ch == '"' ? '\'' : ch < 0x20 || ch == 0x7f ? '?'
		    : (char)ch;
	}
	buf[i] = '\0';
	return buf;
}
