/*
 * log.c - messages and audit lines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void
cats_audit(const char *event, const char *fmt, ...)
{
	char body[768];
	va_list ap;
	audit_lines++;
	if (audit_off)
		return;
	va_start(ap, fmt);
	vsnprintf(body, sizeof(body), fmt, ap);
	va_end(ap);
	for (char *p = body; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	if (audit_syslog) {
		syslog(LOG_NOTICE, "audit event=%s %s", event, body);
		return;
	}
	FILE *f = audit_file ? audit_file : stderr;
	fprintf(f, "%s: audit ts=%llu event=%s %s\n", tool,
	    (unsigned long long)cats_clock_now(), event, body);
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
