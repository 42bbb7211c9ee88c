/*
 * bind_fwdsim - a stand-in forwarder for cats-bind tests: connects, says
 * hello, answers every binding (installed, or failed with -f; removed for a
 * remove), prints every record it receives as a JSON line (but keepalives,
 * which it drops), and stops after -x records, at EOF, or after -t seconds.
 *
 *   bind_fwdsim -c ENDPOINT -n NAME [-C CAPS] [-e EPOCH] [-f] [-g] [-q]
 *               [-t SEC] [-x N] [-E ID] [-k KEY] [-P ID]
 *
 * -C: the capabilities its hello advertises (comma-separated tokens,
 * cats-fwd(1) CAPABILITIES; none without it).
 * -q: do not answer (a forwarder that never commits).  -E ID: after the
 * first binding, report binding ID expired.  -P ID: the same, path-down
 * (a path repair).  -k: sign (or MAC) what it sends.  -g: at the end, the
 * longest silence of the channel on stderr ("silence N ms": the longest
 * time from the hello to a record, or between two, keepalives too).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "sec/crypto.h"
#include "net/ep.h"
#include "rec/json.h"
#include "rec/seq.h"

static int fd = -1;
static const char *caps_v[32];
static size_t caps_n;
static struct cats_key key;
static bool have_key;

static void
send_rec(const struct cats_rec *in)
{
	struct cats_buf b = { 0 };
	struct cats_rec copy = *in;
	if (have_key && cats_rec_sign(&copy, &key) < 0) {
		fprintf(stderr, "bind_fwdsim: cannot sign\n");
		exit(1);
	}
	const struct cats_rec *r = &copy;
	if (cats_rec_encode(r, &b, true) < 0 ||
	    cats_write_all(fd, b.p, b.len) < 0) {
		fprintf(stderr, "bind_fwdsim: send: %s\n", strerror(errno));
		exit(1);
	}
	cats_buf_free(&b);
}

static void
status(const char *name, int event, uint64_t id, uint64_t version,
    uint64_t epoch)
{
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_STATUS);
	r.u.status.fwd = name;
	r.u.status.event = event;
	r.u.status.ts = cats_clock_now();
	if (id)
		CATS_SET(&r.u.status, STA, id, id);
	CATS_SET(&r.u.status, STA, epoch, epoch);
	if (event != CATS_EV_HELLO)
		CATS_SET(&r.u.status, STA, version, version);
	if (event == CATS_EV_HELLO && caps_n > 0) {
		r.u.status.caps.v = caps_v;
		r.u.status.caps.n = caps_n;
		r.u.status.has |= UINT64_C(1) << CATS_STA_caps;
	}
	send_rec(&r);
}

int
main(int argc, char **argv)
{
	const char *ep_s = NULL, *name = NULL;
	uint64_t epoch = 1, expire = 0, down = 0;
	long max = -1, secs = 10;
	bool fail = false, quiet = false, gaps = false;
	int ch;
	char kerr[256];
	cats_crypto_init();
	while ((ch = getopt(argc, argv, "C:c:e:E:fgk:n:P:qt:x:")) != -1) {
		switch (ch) {
		case 'k':
			if (cats_key_load(&key, optarg, -1, kerr,
			    sizeof(kerr)) < 0) {
				fprintf(stderr, "bind_fwdsim: %s\n", kerr);
				return 1;
			}
			have_key = true;
			break;
		case 'C':
			for (char *w = strtok(optarg, ","); w != NULL &&
			    caps_n < 32; w = strtok(NULL, ","))
				caps_v[caps_n++] = w;
			break;
		case 'c': ep_s = optarg; break;
		case 'e': epoch = strtoull(optarg, NULL, 10); break;
		case 'E': expire = strtoull(optarg, NULL, 10); break;
		case 'f': fail = true; break;
		case 'g': gaps = true; break;
		case 'n': name = optarg; break;
		case 'P': down = strtoull(optarg, NULL, 10); break;
		case 'q': quiet = true; break;
		case 't': secs = strtol(optarg, NULL, 10); break;
		case 'x': max = strtol(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: bind_fwdsim -c ep -n name [-C caps] [-e "
			    "epoch] [-f] [-g] [-q] [-t sec] [-x n] [-E id] [-P id]\n");
			return 2;
		}
	}
	if (ep_s == NULL || name == NULL)
		return 2;
	struct cats_ep ep;
	char err[256];
	if (cats_ep_parse(ep_s, &ep, err, sizeof(err)) < 0 ||
	    (fd = cats_ep_open(&ep, true, err, sizeof(err))) < 0) {
		fprintf(stderr, "bind_fwdsim: %s: %s\n", ep_s, err);
		return 1;
	}
	status(name, CATS_EV_HELLO, 0, 0, epoch);
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct cats_seq_reader rd;
	struct cats_dec d;
	cats_seq_reader_init(&rd, NULL);
	cats_dec_init(&d, NULL);
	uint64_t end = cats_clock_mono_ns() + (uint64_t)secs * 1000000000u;
	long got = 0;
	uint64_t last = cats_clock_mono_ns(), silence = 0;
	bool expired = false, downed = false;
	while (max < 0 || got < max) {
		struct cats_rec r;
		struct cats_err e;
		int s = cats_seq_next_rec(&rd, &d, &r, &e);
		if (s == CATS_SEQ_BAD) {
			fprintf(stderr, "bind_fwdsim: bad record: %s\n", e.reason);
			continue;
		}
		if (s == CATS_SEQ_NEED) {
			if (rd.eof)
				break;
			uint64_t now = cats_clock_mono_ns();
			if (now >= end)
				break;
			struct pollfd p = { fd, POLLIN, 0 };
			if (poll(&p, 1, (int)((end - now) / 1000000 + 1)) <= 0)
				continue;
			if (cats_seq_read_fd(&rd, fd) < 0 && errno != EAGAIN &&
			    errno != EINTR)
				break;
			continue;
		}
		uint64_t t = cats_clock_mono_ns();
		if (t - last > silence)
			silence = t - last;
		last = t;
		/* The channel's, as in cats-fwd: neither printed nor counted. */
		if (r.type == CATS_T_STATUS &&
		    r.u.status.event == CATS_EV_KEEPALIVE)
			continue;
		got++;
		cats_rec_print_json(&r, stdout);
		if (quiet || r.type != CATS_T_BINDING)
			continue;
		const struct cats_binding *b = &r.u.binding;
		if (b->op == CATS_BIND_REMOVE)
			status(name, CATS_EV_REMOVED, b->id, b->version, b->epoch);
		else
			status(name, fail ? CATS_EV_FAILED : CATS_EV_INSTALLED,
			    b->id, b->version, b->epoch);
		if (expire && !expired) {
			status(name, CATS_EV_EXPIRED, expire, b->version,
			    b->epoch);
			expired = true;
		}
		if (down && !downed) {
			status(name, CATS_EV_PATH_DOWN, down, b->version,
			    b->epoch);
			downed = true;
		}
	}
	if (gaps)
		fprintf(stderr, "silence %llu ms\n",
		    (unsigned long long)(silence / 1000000));
	cats_seq_reader_free(&rd);
	cats_dec_free(&d);
	close(fd);
	return 0;
}
