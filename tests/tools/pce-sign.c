/*
 * pce-sign - sign a CBOR record stream with a key, or verify one against a
 * keyring (tests of authenticated channels).
 *
 * usage: pce-sign -k key  <records >signed
 *        pce-sign -v keyring <records    (prints "ok TYPE" or "bad TYPE:
 *                                          reason" per record; exit 1 if any
 *                                          is bad)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sec/crypto.h"
#include "rec/seq.h"

int
main(int argc, char **argv)
{
	struct cats_key key;
	struct cats_keyring kr = { 0 };
	const char *kpath = NULL, *vpath = NULL;
	char err[300];
	int ch, bad = 0;
	while ((ch = getopt(argc, argv, "k:v:")) != -1) {
		if (ch == 'k')
			kpath = optarg;
		else if (ch == 'v')
			vpath = optarg;
		else
			goto usage;
	}
	if ((kpath == NULL) == (vpath == NULL) || optind != argc)
		goto usage;
	cats_crypto_init();
	if (kpath && cats_key_load(&key, kpath, -1, err, sizeof(err)) < 0) {
		fprintf(stderr, "pce-sign: %s\n", err);
		return 1;
	}
	if (vpath && cats_keyring_load(&kr, vpath, err, sizeof(err)) < 0) {
		fprintf(stderr, "pce-sign: %s\n", err);
		return 1;
	}
	struct cats_seq_reader rd;
	struct cats_dec d;
	struct cats_rec r;
	cats_seq_reader_init(&rd, NULL);
	cats_dec_init(&d, NULL);
	for (;;) {
		struct cats_err e;
		memset(&e, 0, sizeof(e));
		int s = cats_seq_next_rec(&rd, &d, &r, &e);
		if (s == CATS_SEQ_NEED) {
			if (rd.eof)
				break;
			if (cats_seq_read_fd(&rd, 0) < 0 && errno != EINTR)
				return 1;
			continue;
		}
		if (s == CATS_SEQ_BAD) {
			printf("bad record: %s\n", e.reason);
			bad++;
			continue;
		}
		if (vpath) {
			if (cats_rec_verify(&r, &kr, NULL, &e) < 0) {
				printf("bad %s: %s\n", cats_type_name(r.type),
				    e.reason);
				bad++;
			} else {
				printf("ok %s\n", cats_type_name(r.type));
			}
			continue;
		}
		struct cats_buf b = { 0 };
		if (cats_rec_sign(&r, &key) < 0 ||
		    cats_rec_encode(&r, &b, true) < 0 ||
		    cats_write_all(1, b.p, b.len) < 0)
			return 1;
		cats_buf_free(&b);
	}
	cats_seq_reader_free(&rd);
	cats_dec_free(&d);
	cats_keyring_free(&kr);
	return bad ? 1 : 0;
usage:
	fprintf(stderr, "usage: pce-sign -k key | -v keyring\n");
	return 2;
}
