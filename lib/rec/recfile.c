/*
 * recfile.c - start-up record files (recfile.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/file.h"
#include "base/log.h"
#include "rec/json.h"
#include "rec/recfile.h"
#include "rec/seq.h"

struct ctx {
	const char *path;
	struct cats_dec *d;
	uint64_t max_bad;
	cats_recfile_fn fn;
	void *arg;
	struct cats_recfile_res *res;
};

/* Count a bad record; false once there are too many. */
static bool
count_bad(struct ctx *x)
{
	x->res->bad++;
	if (x->res->bad >= x->max_bad) {
		x->res->gave_up = true;
		return false;
	}
	return true;
}

static bool
one(struct ctx *x, const struct cats_rec *r, uint64_t index)
{
	x->res->records++;
	if (x->fn(r, index, x->arg) < 0)
		return count_bad(x);
	return true;
}

/* A JSON line (without its newline). */
static bool
json_line(struct ctx *x, const char *p, size_t n, uint64_t index)
{
	json_error_t je;
	struct cats_err e;
	struct cats_rec r;
	memset(&e, 0, sizeof(e));
	json_t *j = json_loadb(p, n, 0, &je);
	if (j == NULL) {
		cats_errorx("%s: record %" PRIu64 ": not JSON: %s", x->path,
		    index, je.text);
		return count_bad(x);
	}
	bool go;
	if (cats_rec_from_json(x->d, j, &r, &e) < 0) {
		char msg[400];
		cats_errorx("%s: %s", x->path, cats_err_fmt(&e, index, msg,
		    sizeof(msg)));
		go = count_bad(x);
	} else {
		go = one(x, &r, index);
	}
	json_decref(j);
	return go;
}

static int
json_lines(struct ctx *x, int fd, char *err, size_t errlen)
{
	size_t cap = 4 * x->d->lim.max_record, len = 0;
	char *buf = malloc(cap + 1);
	bool skipping = false, go = true;
	uint64_t index = 0;
	if (buf == NULL) {
		snprintf(err, errlen, "%s: out of memory", x->path);
		return -1;
	}
	for (;;) {
		ssize_t got = read(fd, buf + len, cap + 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			snprintf(err, errlen, "%s: %s", x->path,
			    strerror(errno));
			free(buf);
			return -1;
		}
		size_t end = len + (size_t)got, start = 0;
		/* The last line needs no newline. */
		if (got == 0 && len > 0 && !skipping)
			buf[end++] = '\n';
		for (char *nl; go && (nl = memchr(buf + start, '\n',
		    end - start)) != NULL; start = (size_t)(nl - buf) + 1) {
			size_t n = (size_t)(nl - buf) - start;
			const char *l = buf + start;
			if (skipping) {
				skipping = false;
				continue;
			}
			if (n == strspn(l, " \t\r"))
				continue;	/* blank */
			go = json_line(x, l, n, index++);
		}
		if (!go)
			break;
		len = end - start;
		memmove(buf, buf + start, len);
		if (len > cap) {
			/* A line over the cap: refused unread, once. */
			bool first = !skipping;
			len = 0;
			skipping = true;
			if (first) {
				cats_errorx("%s: record %" PRIu64 ": a line over "
				    "%zu bytes", x->path, index++, cap);
				if (!count_bad(x))
					break;
			}
		}
		if (got == 0)
			break;
	}
	free(buf);
	return 0;
}

static int
cbor_seq(struct ctx *x, int fd, char *err, size_t errlen)
{
	struct cats_seq_reader rd;
	struct cats_rec r;
	cats_seq_reader_init(&rd, &x->d->lim);
	int rc = 0;
	for (bool go = true; go;) {
		struct cats_err e;
		memset(&e, 0, sizeof(e));
		int s = cats_seq_next_rec(&rd, x->d, &r, &e);
		if (s == CATS_SEQ_NEED) {
			if (rd.eof)
				break;
			if (cats_seq_read_fd(&rd, fd) < 0 && errno != EINTR) {
				snprintf(err, errlen, "%s: %s", x->path,
				    strerror(errno));
				rc = -1;
				break;
			}
			continue;
		}
		if (s == CATS_SEQ_BAD) {
			char msg[400];
			cats_errorx("%s: %s", x->path, cats_err_fmt(&e,
			    rd.index - 1, msg, sizeof(msg)));
			go = count_bad(x);
		} else {
			go = one(x, &r, rd.index - 1);
		}
	}
	cats_seq_reader_free(&rd);
	return rc;
}

int
cats_recfile_load(const char *path, struct cats_dec *d, uint64_t max_bad,
    cats_recfile_fn fn, void *arg, struct cats_recfile_res *res, char *err,
    size_t errlen)
{
	struct ctx x = { path, d, max_bad ? max_bad : 1, fn, arg, res };
	memset(res, 0, sizeof(*res));
	int fd = cats_file_open(path, err, errlen);
	if (fd < 0)
		return -1;
	res->opened = true;
	uint8_t first = 0;
	ssize_t got = pread(fd, &first, 1, 0);
	int rc = got == 1 && (first == '{' || first == ' ' || first == '\n' ||
	    first == '\t' || first == '\r') ? json_lines(&x, fd, err, errlen) :
	    cbor_seq(&x, fd, err, errlen);
	close(fd);
	if (rc == 0 && res->gave_up) {
		snprintf(err, errlen, "%s: given up after %" PRIu64 " bad "
		    "records", path, res->bad);
		rc = -1;
	}
	return rc;
}
