/*
 * prom.h - a reader of the Prometheus text exposition format (0.0.4), for
 * cats-top(1): a scrape of a daemon's /metrics or a node_exporter
 * textfile, read as untrusted input.
 *
 * Contract:
 * - The whole text is checked before it is used: a line is empty, a
 *   comment ("# HELP NAME ...", "# TYPE NAME TYPE" with a known type, or
 *   any other "#" line), or a sample "NAME[{LABELS}] VALUE [TIMESTAMP]";
 *   anything else (an HTML page, binary data, a NUL byte) refuses the
 *   whole text with "line N: reason".
 * - Caps, checked before any allocation: the text at most
 *   CATS_PROM_MAX_TEXT bytes, a line CATS_PROM_MAX_LINE, a name
 *   CATS_PROM_MAX_NAME, the labels of a sample CATS_PROM_MAX_LABELS bytes,
 *   at most CATS_PROM_MAX_SAMPLES samples.
 * - The samples are kept sorted by name (then by le), their strings in one
 *   copy of the text; a parse that fails leaves p empty.
 */
#ifndef CATS_VIEW_PROM_H
#define CATS_VIEW_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CATS_PROM_MAX_TEXT (16u << 20)
#define CATS_PROM_MAX_LINE 65536
#define CATS_PROM_MAX_NAME 256
#define CATS_PROM_MAX_LABELS 4096
#define CATS_PROM_MAX_SAMPLES 200000

enum cats_prom_type {
	CATS_PT_UNTYPED, CATS_PT_COUNTER, CATS_PT_GAUGE, CATS_PT_HISTOGRAM,
	CATS_PT_SUMMARY,
};

struct cats_prom_sample {
	const char *name;
	const char *labels;	/* as written between the braces ("": none) */
	double le;		/* the le label's value; NaN: none */
	double v;
};

struct cats_prom {
	struct cats_prom_sample *s;
	size_t n;
	char *text;		/* the copy the strings point into */
	/* TYPE lines: family names and their types */
	const char **tname;
	uint8_t *ttype;
	size_t nt, tcap;
};

/* Read text (len bytes): 0, or -1 with "line N: reason" in err. */
int cats_prom_parse(struct cats_prom *p, const char *text, size_t len,
    char *err, size_t errlen);
void cats_prom_free(struct cats_prom *p);
/* The samples named name: the index of the first, and their count (0). */
size_t cats_prom_find(const struct cats_prom *p, const char *name,
    size_t *first);
/* The sum of the samples named name (over their labels); false if none. */
bool cats_prom_sum(const struct cats_prom *p, const char *name, double *v);
/* The type of family name (its TYPE line; untyped if none). */
enum cats_prom_type cats_prom_type(const struct cats_prom *p,
    const char *name);
/*
 * The value of label key in labels (as written in a sample) into buf,
 * unescaped; NULL if it is not there.
 */
const char *cats_prom_label(const char *labels, const char *key, char *buf,
    size_t len);

#endif
