/*
 * fuzz_ingest.c - the C-PS's ingest of C-SMA request bodies (ingest.h):
 * whatever arrives, every resource, a keyring with a PSK so that MACs are
 * checked, and a table that must stay consistent.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "select/ingest.h"
#include "base/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cats_key psk;
	static struct cats_keyring ring = { &psk, 1 };
	static bool init;
	if (!init) {
		cats_crypto_init();
		cats_audit_open("none");
		cats_log_verbosity(0);
		/* A fixed key, so that the seed corpus's MACs verify. */
		static const char line[] = "cats-key v1 psk "
		    "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8 sma-a\n";
		char path[] = "/tmp/fuzz_ingest.XXXXXX";
		char err[200];
		int fd = mkstemp(path);
		if (fd < 0 || write(fd, line, sizeof(line) - 1) < 0 ||
		    cats_key_load(&psk, path, CATS_KEY_PSK, err,
		    sizeof(err)) < 0)
			cats_key_gen_psk(&psk, "sma-a");
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
		init = true;
	}
	struct cats_cst *t = cats_cst_new(180000, 64);
	struct cats_ingest_conf c = { .keys = &ring, .window_ms = 30000,
		.ps_id = "fuzz", .ps_epoch = 1, .refresh = true };
	struct cats_ingest *g = cats_ingest_new(&c, t);
	const char *any[] = { "*" };
	cats_ingest_allow(g, "sma-a", any, 1);
	int op = size > 0 ? data[0] % CATS_ING__N : 0;
	/* The first byte's high bit: a client certificate naming sma-a, a
	 * CS-ID and a site (the checks of a mutual-TLS sender). */
	static const char *const uris[] = { "cats:sma:sma-a", "cats:cs:S1",
		"cats:site:site-a", "https://example.org/" };
	struct cats_ingest_cert cert;
	cats_ingest_cert_parse(&cert, uris, 4);
	bool with_cert = size > 0 && (data[0] & 0x80);
	struct cats_buf out = { 0 };
	int st = cats_ingest_handle_cert(g, op, size > 0 ? data + 1 : data,
	    size > 0 ? size - 1 : 0, "fuzz", with_cert ? &cert : NULL,
	    UINT64_C(1700000000000), &out);
	if (st < 200 || st > 499 || out.len == 0)
		__builtin_trap();
	cats_buf_free(&out);
	cats_ingest_free(g);
	cats_cst_free(t);
	return 0;
}
