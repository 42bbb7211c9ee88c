/*
 * log.h - the one log and audit function of cats.
 *
 * Messages go to stderr as "tool: message" (err(3) style), or to syslog.
 * Audit events (000 §12: authentication failures, policy violations,
 * anomalous metric changes, rejections, state changes) are one line each:
 *   ts=MS tool=NAME event=EVENT key=value ...
 * to stderr, syslog or a file.
 */
#ifndef CATS_LOG_H
#define CATS_LOG_H

#include <stdarg.h>
#include <stdint.h>
#include <syslog.h>

void cats_log_init(const char *tool);
const char *cats_log_tool(void);
/* Where messages go: "stderr" (default) or "syslog". */
int cats_log_open(const char *spec);
/* 0 quiet (errors only), 1 normal (warnings, notices), 2+ debug. */
void cats_log_verbosity(int level);
void cats_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cats_vlog(int prio, const char *fmt, va_list ap);

#define cats_warnx(...) cats_log(LOG_WARNING, __VA_ARGS__)
#define cats_errorx(...) cats_log(LOG_ERR, __VA_ARGS__)
#define cats_info(...) cats_log(LOG_NOTICE, __VA_ARGS__)
#define cats_debug(...) cats_log(LOG_DEBUG, __VA_ARGS__)

/* Audit sink: "stderr" (default), "syslog", "file:PATH" or "none". */
int cats_audit_open(const char *spec);
/* One audit line; fmt gives the "key=value ..." part. */
void cats_audit(const char *event, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * An audit line for a refusal of unauthenticated input (a bad handshake,
 * framing, hello or record: what a flood can make at line rate): written
 * as cats_audit() does while the event's bucket has tokens, a burst of
 * CATS_AUDIT_LIMIT_BURST then CATS_AUDIT_LIMIT_RATE a second per event
 * for the process; the lines left out are not written, and the next one
 * of that event written ends with unlogged=N (how many since).  The
 * caller counts every refusal in its own counter all the same.
 */
#define CATS_AUDIT_LIMIT_BURST 32
#define CATS_AUDIT_LIMIT_RATE 10
void cats_audit_limited(const char *event, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Audit lines written so far (those left out by the limiter are not). */
uint64_t cats_audit_count(void);

/* Copy text for an audit or log line: controls, spaces, quotes as '?'. */
const char *cats_safe(const char *s, char *buf, size_t len);
/* Copy text for a quoted audit value: '"' as "'", controls as '?'. */
const char *cats_quote(const char *s, char *buf, size_t len);

#endif
