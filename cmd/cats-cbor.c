/*
 * cats-cbor - CBOR Sequences to JSON Lines and back, and record checking.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "rec/json.h"
#include "rec/schema.h"
#include "base/log.h"
#include "base/opt.h"
#include "rec/seq.h"
#include "base/tool.h"

/* usage_text: the SYNOPSIS and OPTIONS of cats-cbor(1). */
#include "cats-cbor.help.h"

struct opts {
	bool json;
	bool quiet;
	bool strict;
	int type;		/* -1: any */
	struct cats_limits lim;
};

static int
open_input(const char *path)
{
	if (path == NULL || strcmp(path, "-") == 0)
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cats_errorx("%s: %s", path, strerror(errno));
		exit(CATS_EXIT_NOINPUT);
	}
	return fd;
}

/*
 * Live pipelines.  decode and encode keep their output in out and write it
 * when it is 64 KiB, when the input goes idle (nothing more to read at
 * once: a record from a slow stream comes out at once), and at the end.
 * SIGINT and SIGTERM are blocked but while waiting for input or for room
 * to write: the first one stops the reading, what was decoded is written
 * (check: its summary line), and the tool ends by that signal; a second
 * one ends it at once.
 */
static struct cats_buf out;
static bool out_file;		/* stdout a regular file: a write never waits */
static volatile sig_atomic_t stop_sig, stop_count;
static sigset_t stop_mask;

/* check's count so far, for its summary line (also at a stop signal). */
static struct {
	bool on;
	uint64_t records, bad;
} tally;

static void
summary(void)
{
	if (tally.on)
		fprintf(stderr, "cats-cbor: %" PRIu64 " records, %" PRIu64
		    " valid, %" PRIu64 " invalid\n", tally.records,
		    tally.records - tally.bad, tally.bad);
}

static void
on_stop(int sig)
{
	stop_sig = sig;
	stop_count++;
}

static void
live_init(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	/* A signal ignored by whoever started us (a background job of a
	 * script and SIGINT) stays ignored. */
	struct sigaction old;
	if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler != SIG_IGN)
		sigaction(SIGINT, &sa, NULL);
	if (sigaction(SIGTERM, NULL, &old) == 0 && old.sa_handler != SIG_IGN)
		sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&stop_mask);
	sigaddset(&stop_mask, SIGINT);
	sigaddset(&stop_mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop_mask, NULL);
	struct stat st;
	out_file = fstat(1, &st) == 0 && S_ISREG(st.st_mode);
}

/* The end by the signal that stopped us, as if it had not been caught. */
static void
die_by_signal(void)
{
	int sig = stop_sig;
	signal(sig, SIG_DFL);
	sigprocmask(SIG_UNBLOCK, &stop_mask, NULL);
	raise(sig);
	_exit(128 + sig);
}

/* Wait until fd is ready for events, the stop signals deliverable
 * meanwhile: 1 ready, 0 a signal came. */
static int
wait_fd(int fd, short events)
{
	struct pollfd pf = { .fd = fd, .events = events };
	sigset_t none;
	sigemptyset(&none);
	for (;;) {
		int r = ppoll(&pf, 1, NULL, &none);
		if (r > 0)
			return 1;
		if (r < 0 && errno == EINTR)
			return 0;
		if (r < 0)
			return 1;	/* let read or write say what is wrong */
	}
}

/* Whether fd has input now (or its end, or an error to report). */
static bool
input_waiting(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	return poll(&pf, 1, 0) != 0;
}

static void
out_flush(void)
{
	size_t off = 0;
	while (off < out.len) {
		if (out_file) {
			/* A file takes it whole, at once: no wait, no cap. */
			ssize_t w = write(1, out.p + off, out.len - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				exit(cats_tool_output_failed("stdout", errno));
			off += (size_t)w;
			continue;
		}
		if (!wait_fd(1, POLLOUT)) {
			if (stop_count > 1)
				die_by_signal();
			continue;
		}
		/* At most PIPE_BUF after POLLOUT: a pipe takes it whole. */
		size_t n = out.len - off < 4096 ? out.len - off : 4096;
		ssize_t w = write(1, out.p + off, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			exit(cats_tool_output_failed("stdout", errno));
		off += (size_t)w;
	}
	cats_buf_reset(&out);
}

static void
write_out(const void *p, size_t n)
{
	if (cats_buf_add(&out, p, n) < 0) {
		cats_errorx("out of memory");
		exit(CATS_EXIT_FAIL);
	}
	if (out.len >= 65536)
		out_flush();
}

/* Before a read that may block: write what waits if the input is idle,
 * then wait for input; false when a stop signal came instead. */
static bool
await_input(int fd)
{
	if (stop_sig)
		return false;
	if (out.len > 0 && !input_waiting(fd))
		out_flush();
	return stop_sig == 0 && wait_fd(fd, POLLIN);
}

/* Write what was decoded (or the summary) and end, after a stop signal. */
static void
stop_now(void)
{
	out_flush();
	summary();
	die_by_signal();
}

static void
report_bad(uint64_t index, const struct cats_err *e)
{
	char msg[400];
	cats_errorx("%s", cats_err_fmt(e, index, msg, sizeof(msg)));
}

/* Feed the reader until an item or the end; returns cats_seq_next's code. */
static int
read_item(struct cats_seq_reader *rd, int fd, const uint8_t **p, size_t *n,
    struct cats_err *e)
{
	for (;;) {
		int r = cats_seq_next(rd, p, n, e);
		if (r != CATS_SEQ_NEED || rd->eof)
			return r;
		if (!await_input(fd))
			stop_now();
		ssize_t got = cats_seq_read_fd(rd, fd);
		if (got < 0 && errno != EINTR) {
			cats_errorx("read error: %s", strerror(errno));
			exit(CATS_EXIT_FAIL);
		}
	}
}

static int
do_decode(const struct opts *o, int fd)
{
	struct cats_seq_reader rd;
	const uint8_t *p;
	size_t n;
	int bad = 0;
	live_init();
	cats_seq_reader_init(&rd, &o->lim);
	for (;;) {
		struct cats_err e;
		memset(&e, 0, sizeof(e));
		int r = read_item(&rd, fd, &p, &n, &e);
		if (r == CATS_SEQ_NEED)
			break;
		if (r == CATS_SEQ_BAD) {
			report_bad(rd.index - 1, &e);
			bad++;
			if (o->strict)
				break;
			continue;
		}
		json_t *j = cats_toks_to_json(rd.toks.t, 0);
		char *s = j ? json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		if (s == NULL) {
			cats_errorx("out of memory");
			exit(CATS_EXIT_FAIL);
		}
		write_out(s, strlen(s));
		write_out("\n", 1);
		free(s);
		json_decref(j);
	}
	cats_seq_reader_free(&rd);
	out_flush();
	return bad ? CATS_EXIT_DATAERR : CATS_EXIT_OK;
}

/* The next line of fd (with its newline, if it has one) in *line and
 * *len, valid until the next call; false at the end of the input. */
static bool
next_line(int fd, struct cats_buf *in, size_t *start, char **line,
    size_t *len, bool *eof)
{
	for (;;) {
		char *b = (char *)in->p + *start;
		size_t left = in->len - *start;
		char *nl = left ? memchr(b, '\n', left) : NULL;
		if (nl != NULL || (*eof && left > 0)) {
			*line = b;
			*len = nl ? (size_t)(nl - b) + 1 : left;
			*start += *len;
			return true;
		}
		if (*eof)
			return false;
		cats_buf_consume(in, *start);
		*start = 0;
		if (!await_input(fd))
			stop_now();
		if (cats_buf_reserve(in, 65536) < 0) {
			cats_errorx("out of memory");
			exit(CATS_EXIT_FAIL);
		}
		ssize_t got = read(fd, in->p + in->len, 65536);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			cats_errorx("read error: %s", strerror(errno));
			exit(CATS_EXIT_FAIL);
		}
		if (got == 0)
			*eof = true;
		in->len += (size_t)got;
	}
}

/* Whether a line (not NUL-terminated) holds only white space. */
static bool
blank(const char *line, size_t len)
{
	for (size_t k = 0; k < len; k++)
		if (line[k] != ' ' && line[k] != '\t' && line[k] != '\r' &&
		    line[k] != '\n')
			return false;
	return true;
}

static int
do_encode(const struct opts *o, int fd)
{
	struct cats_buf in = { 0 };
	size_t start = 0, len;
	char *line;
	bool eof = false;
	uint64_t lineno = 0;
	int bad = 0;
	struct cats_buf rec = { 0 };
	live_init();
	while (next_line(fd, &in, &start, &line, &len, &eof)) {
		lineno++;
		json_error_t je;
		if (blank(line, len))
			continue;
		json_t *j = json_loadb(line, len, JSON_DECODE_ANY |
		    JSON_ALLOW_NUL, &je);
		struct cats_err e;
		memset(&e, 0, sizeof(e));
		cats_buf_reset(&rec);
		if (j == NULL) {
			cats_errorx("line %" PRIu64 ": %s", lineno, je.text);
		} else if (cats_json_to_cbor(j, &rec, &e) < 0) {
			cats_errorx("line %" PRIu64 ": %s%s%s", lineno, e.field,
			    e.field[0] ? ": " : "", e.reason);
		} else {
			write_out(rec.p, rec.len);
			json_decref(j);
			continue;
		}
		json_decref(j);
		bad++;
		if (o->strict)
			break;
	}
	cats_buf_free(&in);
	cats_buf_free(&rec);
	out_flush();
	return bad ? CATS_EXIT_DATAERR : CATS_EXIT_OK;
}

static int
check_one(const struct opts *o, const struct cats_rec *r, uint64_t index)
{
	if (o->type >= 0 && (int)r->type != o->type) {
		struct cats_err e;
		cats_err_set(&e, "type", "is %s, expected %s",
		    cats_type_name(r->type), cats_type_name(o->type));
		report_bad(index, &e);
		return 1;
	}
	return 0;
}

static int
do_check(const struct opts *o, int fd)
{
	struct cats_dec d;
	struct cats_rec r;
	cats_dec_init(&d, &o->lim);
	live_init();
	tally.on = !o->quiet;
	if (o->json) {
		struct cats_buf in = { 0 };
		size_t start = 0, len;
		char *line;
		bool eof = false;
		while (next_line(fd, &in, &start, &line, &len, &eof)) {
			if (blank(line, len))
				continue;
			uint64_t index = tally.records++;
			json_error_t je;
			json_t *j = json_loadb(line, len, JSON_DECODE_ANY, &je);
			struct cats_err e;
			memset(&e, 0, sizeof(e));
			if (j == NULL) {
				cats_err_set(&e, "", "not JSON: %s", je.text);
				report_bad(index, &e);
				tally.bad++;
			} else if (cats_rec_from_json(&d, j, &r, &e) < 0) {
				report_bad(index, &e);
				tally.bad++;
			} else {
				tally.bad += check_one(o, &r, index);
			}
			json_decref(j);
			if (tally.bad && o->strict)
				break;
		}
		cats_buf_free(&in);
	} else {
		struct cats_seq_reader rd;
		cats_seq_reader_init(&rd, &o->lim);
		for (;;) {
			struct cats_err e;
			memset(&e, 0, sizeof(e));
			int s = cats_seq_next_rec(&rd, &d, &r, &e);
			if (s == CATS_SEQ_NEED) {
				if (rd.eof)
					break;
				if (!await_input(fd))
					stop_now();
				if (cats_seq_read_fd(&rd, fd) < 0 &&
				    errno != EINTR) {
					cats_errorx("read error: %s",
					    strerror(errno));
					exit(CATS_EXIT_FAIL);
				}
				continue;
			}
			tally.records++;
			if (s == CATS_SEQ_BAD) {
				report_bad(rd.index - 1, &e);
				tally.bad++;
			} else {
				tally.bad += check_one(o, &r, rd.index - 1);
			}
			if (tally.bad && o->strict)
				break;
		}
		cats_seq_reader_free(&rd);
	}
	cats_dec_free(&d);
	summary();
	return tally.bad ? CATS_EXIT_DATAERR : CATS_EXIT_OK;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "json", no_argument, NULL, 'j' },
		{ "max-record", required_argument, NULL, 'm' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "strict", no_argument, NULL, 's' },
		{ "type", required_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .type = -1, .lim = cats_limits_default };
	uint64_t v;
	int ch;

	cats_tool_init(argv[0]);
	while ((ch = getopt_long(argc, argv, ":hjm:qst:V", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			o.json = true;
			break;
		case 'm':
			v = cats_opt_size("--max-record", optarg);
			if (v < 16 || v > (64u << 20))
				cats_opt_fail("--max-record", "between 16 and "
				    "64M");
			o.lim.max_record = v;
			if (o.lim.max_string > v)
				o.lim.max_string = v;
			break;
		case 'q':
			o.quiet = true;
			break;
		case 's':
			o.strict = true;
			break;
		case 't':
			o.type = cats_type_from_name(optarg, strlen(optarg));
			if (o.type < 0) {
				cats_errorx("--type: unknown record type \"%s\"",
				    optarg);
				return CATS_EXIT_USAGE;
			}
			break;
		default:
			cats_opt_common(ch, argv, usage_text, NULL);
		}
	}
	const char *cmd = cats_opt_command(&argc, &argv,
	    "decode, encode, check or schema");
	if (argc > 2)
		cats_usage_fail("%s: unexpected operand %s", cmd, argv[2]);
	int rc = CATS_EXIT_OK;
	if (strcmp(cmd, "schema") == 0) {
		if (cats_schema_print(stdout, argv[1]) < 0)
			cats_usage_fail("unknown record type or map \"%s\"",
			    argv[1]);
	} else if (strcmp(cmd, "decode") == 0)
		rc = do_decode(&o, open_input(argv[1]));
	else if (strcmp(cmd, "encode") == 0)
		rc = do_encode(&o, open_input(argv[1]));
	else if (strcmp(cmd, "check") == 0)
		rc = do_check(&o, open_input(argv[1]));
	else
		cats_usage_fail("%s: unknown command (decode, encode, check, "
		    "schema)", cmd);
	if (fflush(stdout) != 0)
		return cats_tool_output_failed("stdout", errno);
	return rc;
}
