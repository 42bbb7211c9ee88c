/*
 * t.h - a tiny TAP producer for the C unit tests.
 */
#ifndef CATS_T_H
#define CATS_T_H

#include <stdarg.h>
#include <stdio.h>

static int t_count, t_failed;

__attribute__((format(printf, 4, 5))) static int
t_ok(int ok, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	printf("%sok %d - ", ok ? "" : "not ", ++t_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok) {
		t_failed++;
		printf("#   at %s:%d\n", file, line);
	}
	fflush(stdout);
	return ok;
}

#define T_OK(cond, ...) t_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

static int
t_done(void)
{
	printf("1..%d\n", t_count);
	return t_failed ? 1 : 0;
}

#endif
