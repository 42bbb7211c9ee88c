/*
 * bench_rec.c - record layer throughput: decode+validate and encode of a
 * mixed stream (every type of examples/records.jsonl, cycled), in process.
 * Prints rows "name | value | baseline | ratio".  The pipe comparison with
 * cat(1) is in bench/rec.sh.
 *
 * usage: bench_rec [records] [stream-file-to-write]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "base/clock.h"
#include "sec/crypto.h"
#include "rec/json.h"
#include "rec/seq.h"

/* Tags per second of cats_cose_tag and of libsodium over the same bytes. */
static void
mac_row(void)
{
	enum { N = 200000, PAYLOAD = 300 };
	static const uint8_t prot[] = { 0xa1, 0x01, 0x05 };
	uint8_t payload[PAYLOAD], tag[64];
	static volatile uint8_t sink;
	size_t tl;
	struct cats_key k;
	if (cats_crypto_init() < 0)
		return;
	cats_key_gen_psk(&k, "bench");
	randombytes_buf(payload, sizeof(payload));
	uint64_t t0 = cats_clock_mono_ns();
	for (int i = 0; i < N; i++) {
		payload[0] = (uint8_t)i;
		cats_cose_tag(&k, prot, sizeof(prot), payload, PAYLOAD, tag, &tl);
		sink ^= tag[0];
	}
	uint64_t ours = cats_clock_mono_ns() - t0;
	crypto_auth_hmacsha256_state keyed, st;
	crypto_auth_hmacsha256_init(&keyed, k.psk, sizeof(k.psk));
	uint8_t head[16] = { 0x84, 0x64, 'M', 'A', 'C', '0', 0x43, 0xa1, 0x01,
		0x05, 0x40, 0x59, PAYLOAD >> 8, PAYLOAD & 0xff };
	t0 = cats_clock_mono_ns();
	for (int i = 0; i < N; i++) {
		payload[0] = (uint8_t)i;
		st = keyed;
		crypto_auth_hmacsha256_update(&st, head, 14);
		crypto_auth_hmacsha256_update(&st, payload, PAYLOAD);
		crypto_auth_hmacsha256_final(&st, tag);
		sink ^= tag[0];
	}
	uint64_t sodium = cats_clock_mono_ns() - t0;
	printf("record MAC tag, %d B payload (%s) | %.0f tags/s | libsodium "
	    "HMAC-SHA256: %.0f tags/s | %.2fx\n", PAYLOAD,
	    cats_sha256_engine(0), N / (ours / 1e9), N / (sodium / 1e9),
	    (double)sodium / (double)ours);
}

int
main(int argc, char **argv)
{
	size_t want = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
	FILE *f = fopen("examples/records.jsonl", "r");
	if (f == NULL) {
		perror("examples/records.jsonl");
		return 1;
	}
	struct cats_buf one = { 0 }, stream = { 0 };
	char *line = NULL;
	size_t cap = 0, kinds = 0;
	while (getline(&line, &cap, f) > 0) {
		json_error_t je;
		json_t *j = json_loads(line, 0, &je);
		struct cats_err e;
		cats_json_to_cbor(j, &one, &e);
		json_decref(j);
		kinds++;
	}
	fclose(f);
	free(line);
	/* The mixed stream: the examples back to back, repeated. */
	size_t per = kinds, reps = (want + per - 1) / per;
	for (size_t i = 0; i < reps; i++)
		cats_buf_add(&stream, one.p, one.len);
	size_t records = reps * per;
	if (argc > 2) {
		FILE *o = fopen(argv[2], "w");
		fwrite(stream.p, 1, stream.len, o);
		fclose(o);
	}

	struct cats_dec d;
	struct cats_rec r;
	struct cats_err e;
	struct cats_seq_reader rd;
	cats_dec_init(&d, NULL);
	cats_seq_reader_init(&rd, NULL);
	cats_seq_feed(&rd, stream.p, stream.len);
	rd.eof = true;
	size_t ok = 0;
	struct cats_buf out = { 0 };
	cats_buf_reserve(&out, stream.len + 4096);
	uint64_t enc_ns = 0;
	uint64_t t0 = cats_clock_mono_ns();
	int s;
	while ((s = cats_seq_next_rec(&rd, &d, &r, &e)) != CATS_SEQ_NEED)
		ok += s == CATS_SEQ_ITEM;
	uint64_t dec_ns = cats_clock_mono_ns() - t0;
	/* Encode: decode each distinct record once, encode many times. */
	struct cats_seq_reader rd2;
	cats_seq_reader_init(&rd2, NULL);
	cats_seq_feed(&rd2, one.p, one.len);
	rd2.eof = true;
	struct cats_rec recs[64];
	struct cats_dec decs[64];
	size_t nrec = 0;
	while (nrec < 64) {
		cats_dec_init(&decs[nrec], NULL);
		if (cats_seq_next_rec(&rd2, &decs[nrec], &recs[nrec], &e) !=
		    CATS_SEQ_ITEM)
			break;
		nrec++;
	}
	t0 = cats_clock_mono_ns();
	for (size_t i = 0; i < records; i++) {
		if (out.len > (64u << 20))
			out.len = 0;
		cats_rec_encode(&recs[i % nrec], &out, true);
	}
	enc_ns = cats_clock_mono_ns() - t0;
	if (ok != records) {
		fprintf(stderr, "bench_rec: %zu of %zu records decoded\n", ok,
		    records);
		return 1;
	}
	double mb = stream.len / 1e6;
	double dec_rps = records / (dec_ns / 1e9), enc_rps = records / (enc_ns / 1e9);
	printf("record decode+validate (%zu mixed, %.0f B avg) | %.0f rec/s, %.0f MB/s | goal 1000000 rec/s | %.2fx\n",
	    records, (double)stream.len / records, dec_rps, mb / (dec_ns / 1e9),
	    dec_rps / 1e6);
	printf("record encode (%zu mixed) | %.0f rec/s, %.0f MB/s | decode+validate | %.2fx\n",
	    records, enc_rps, mb / (enc_ns / 1e9), enc_rps / dec_rps);
	mac_row();
	return 0;
}
