/*
 * select_client - a test forwarder for cats-select: JSON Lines records on
 * stdin, each optionally MAC'd or signed with a key (-k) and optionally
 * corrupted (-x: one bit of the tag flipped), written as CBOR to stdout or
 * sent to an endpoint (-t; one datagram per record on udp:).  -w MS waits
 * before closing so that a daemon reads everything first.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sec/crypto.h"
#include "net/ep.h"
#include "rec/json.h"
#include "base/log.h"
#include "rec/seq.h"
#include "base/tool.h"

int
main(int argc, char **argv)
{
	const char *keyfile = NULL, *to = "-";
	bool corrupt = false;
	long wait_ms = 0;
	int ch;
	cats_tool_init(argv[0]);
	while ((ch = getopt(argc, argv, "k:t:w:x")) != -1) {
		switch (ch) {
		case 'k': keyfile = optarg; break;
		case 't': to = optarg; break;
		case 'w': wait_ms = atol(optarg); break;
		case 'x': corrupt = true; break;
		default:
			fprintf(stderr, "usage: select_client [-x] [-k key] "
			    "[-t endpoint] [-w ms]\n");
			return 2;
		}
	}
	struct cats_key key;
	char err[512];
	if (keyfile != NULL && cats_key_load(&key, keyfile, -1, err,
	    sizeof(err)) < 0) {
		cats_errorx("%s", err);
		return 77;
	}
	struct cats_ep ep;
	if (cats_ep_parse(to, &ep, err, sizeof(err)) < 0) {
		cats_errorx("%s", err);
		return 2;
	}
	int fd = cats_ep_open(&ep, true, err, sizeof(err));
	if (fd < 0) {
		cats_errorx("%s", err);
		return 1;
	}
	bool dgram = cats_ep_is_dgram(&ep);
	struct cats_dec d;
	struct cats_buf out = { 0 };
	cats_dec_init(&d, NULL);
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;
	while (getline(&line, &cap, stdin) > 0) {
		if (line[strspn(line, " \t\r\n")] == '\0')
			continue;
		json_error_t je;
		json_t *j = json_loads(line, 0, &je);
		struct cats_rec r;
		struct cats_err e;
		cats_buf_reset(&out);
		if (j == NULL) {
			cats_errorx("not JSON: %s", je.text);
			rc = 65;
			continue;
		}
		if (keyfile == NULL) {
			/* Unsigned: the JSON as is (may be an invalid record). */
			cats_json_to_cbor(j, &out, &e);
		} else if (cats_rec_from_json(&d, j, &r, &e) < 0 ||
		    cats_rec_sign(&r, &key) < 0 ||
		    cats_rec_encode(&r, &out, true) < 0) {
			cats_errorx("cannot sign: %s: %s", e.field, e.reason);
			rc = 65;
		}
		json_decref(j);
		if (out.len == 0)
			continue;
		if (corrupt)
			out.p[out.len - 1] ^= 1;	/* the tag is last */
		if (dgram ? send(fd, out.p, out.len, 0) < 0 :
		    cats_write_all(fd, out.p, out.len) < 0) {
			cats_errorx("send: %s", strerror(errno));
			rc = 1;
			break;
		}
	}
	if (wait_ms > 0) {
		struct timespec ts = { wait_ms / 1000, (wait_ms % 1000) * 1000000 };
		nanosleep(&ts, NULL);
	}
	free(line);
	cats_buf_free(&out);
	cats_dec_free(&d);
	if (fd > 1)
		close(fd);
	return rc;
}
