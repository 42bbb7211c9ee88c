/*
 * cats-key - Ed25519 key pairs, pre-shared keys and signed SCI tokens.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "base/clock.h"
#include "rec/json.h"
#include "base/log.h"
#include "base/opt.h"
#include "rec/seq.h"
#include "sec/token.h"
#include "base/tool.h"

/* usage_text: the SYNOPSIS and OPTIONS of cats-key(1). */
#include "cats-key.help.h"

/* A command missing what it needs: "tool: CMD: needs OPTION", exit 2. */
static void
needs(const char *cmd, const char *what)
{
	cats_usage_fail("%s: needs %s", cmd, what);
}

/*
 * The output prefix of gen, checked before anything is written: not a
 * directory (which would write DIR.key beside it), in a directory that
 * exists.
 */
static int
check_prefix(const char *prefix)
{
	struct stat st;
	size_t n = strlen(prefix);
	if (n == 0 || prefix[n - 1] == '/' || (stat(prefix, &st) == 0 &&
	    S_ISDIR(st.st_mode)))
		cats_usage_fail("gen: -o %s: a directory; give a prefix such as "
		    "%s%ssite (writes site.key and site.pub)", prefix, prefix,
		    n > 0 && prefix[n - 1] == '/' ? "" : "/");
	char dir[4096];
	const char *slash = strrchr(prefix, '/');
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == prefix ? 1
		    : (int)(slash - prefix), prefix);
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		cats_errorx("gen: -o %s: %s: %s", prefix, dir, stat(dir, &st) < 0
		    ? strerror(errno) : "not a directory");
		return CATS_EXIT_IOERR;
	}
	return CATS_EXIT_OK;
}

struct opts {
	bool base64;
	const char *cs[CATS_TOKEN_MAX_CS];
	size_t ncs;
	uint64_t lifetime_ms;
	const char *issuer;
	const char *key;
	const char *name;
	const char *out;
	const char *cnf;
	const char *csci;
	uint64_t now_ms;
};

static int
do_gen(const struct opts *o)
{
	struct cats_key sk, pk;
	char path[4096], err[512];
	if (o->out == NULL)
		needs("gen", "-o prefix");
	int rc = check_prefix(o->out);
	if (rc != CATS_EXIT_OK)
		return rc;
	cats_key_gen_ed25519(&sk, o->name);
	cats_key_public(&sk, &pk);
	snprintf(path, sizeof(path), "%s.key", o->out);
	if (cats_key_save(&sk, path, 0600, err, sizeof(err)) < 0) {
		cats_errorx("%s", err);
		return CATS_EXIT_IOERR;
	}
	snprintf(path, sizeof(path), "%s.pub", o->out);
	if (cats_key_save(&pk, path, 0644, err, sizeof(err)) < 0) {
		cats_errorx("%s", err);
		return CATS_EXIT_IOERR;
	}
	sodium_memzero(&sk, sizeof(sk));
	return CATS_EXIT_OK;
}

static int
do_psk(const struct opts *o)
{
	struct cats_key k;
	char err[512];
	if (o->out == NULL)
		needs("psk", "-o file");
	cats_key_gen_psk(&k, o->name);
	int rc = cats_key_save(&k, o->out, 0600, err, sizeof(err));
	sodium_memzero(&k, sizeof(k));
	if (rc < 0) {
		cats_errorx("%s", err);
		return CATS_EXIT_IOERR;
	}
	return CATS_EXIT_OK;
}

static int
do_pub(const struct opts *o)
{
	struct cats_key sk, pk;
	char b64[64];
	if (o->key == NULL)
		needs("pub", "-k key");
	cats_opt_key("--key", o->key, CATS_KEY_ED25519_SECRET, &sk);
	cats_key_public(&sk, &pk);
	cats_b64url_encode(pk.pk, 32, b64, sizeof(b64));
	printf("cats-key v1 ed25519-public %s%s%s\n", b64, pk.name[0] ? " " : "",
	    pk.name);
	sodium_memzero(&sk, sizeof(sk));
	return CATS_EXIT_OK;
}

static int
write_file(const char *path, const uint8_t *p, size_t n)
{
	int fd = strcmp(path, "-") == 0 ? 1 : open(path, O_WRONLY | O_CREAT |
	    O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		cats_errorx("%s: %s", path, strerror(errno));
		return -1;
	}
	if (cats_write_all(fd, p, n) < 0 || (fd != 1 && close(fd) < 0)) {
		cats_tool_output_failed(fd == 1 ? "stdout" : path, errno);
		return -1;
	}
	return 0;
}

static int
do_token(const struct opts *o)
{
	struct cats_key issuer;
	struct cats_token c;
	struct cats_buf b = { 0 };
	if (o->key == NULL || o->csci == NULL || o->ncs == 0 || o->out == NULL)
		needs("token", o->key == NULL ? "-k issuer.key" : o->csci == NULL
		    ? "-s csci-id" : o->ncs == 0 ? "-c cs-id" : "-o file");
	cats_opt_key("--key", o->key, CATS_KEY_ED25519_SECRET, &issuer);
	memset(&c, 0, sizeof(c));
	const char *iss = o->issuer ? o->issuer : issuer.name;
	if (iss[0] == '\0') {
		cats_errorx("the issuer key has no name; give -i issuer");
		return CATS_EXIT_USAGE;
	}
	if (strlen(iss) > CATS_ID || strlen(o->csci) > CATS_ID) {
		cats_errorx("issuer or CSCI-ID longer than %d bytes", CATS_ID);
		return CATS_EXIT_USAGE;
	}
	cats_strlcpy(c.iss, iss, sizeof(c.iss));
	cats_strlcpy(c.sub, o->csci, sizeof(c.sub));
	uint64_t now = o->now_ms ? o->now_ms : cats_clock_now();
	c.iat = now / 1000;
	c.exp = (now + o->lifetime_ms) / 1000;
	randombytes_buf(c.cti, sizeof(c.cti));
	for (size_t i = 0; i < o->ncs; i++) {
		if (strlen(o->cs[i]) == 0 || strlen(o->cs[i]) > CATS_ID) {
			cats_errorx("-c: CS-ID must be 1..%d bytes", CATS_ID);
			return CATS_EXIT_USAGE;
		}
		cats_strlcpy(c.cs[i], o->cs[i], sizeof(c.cs[i]));
	}
	c.ncs = o->ncs;
	if (o->cnf != NULL) {
		struct cats_key pk;
		cats_opt_key("--cnf", o->cnf, CATS_KEY_ED25519_PUBLIC, &pk);
		memcpy(c.cnf, pk.pk, 32);
		c.has_cnf = true;
	}
	if (cats_token_make(&c, &issuer, &b) < 0) {
		cats_errorx("cannot sign the token");
		return CATS_EXIT_FAIL;
	}
	sodium_memzero(&issuer, sizeof(issuer));
	int rc;
	if (o->base64) {
		size_t cap = sodium_base64_ENCODED_LEN(b.len,
		    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
		char *s = malloc(cap + 1);
		if (s == NULL)
			return CATS_EXIT_FAIL;
		cats_b64url_encode(b.p, b.len, s, cap);
		size_t n = strlen(s);
		s[n] = '\n';
		rc = write_file(o->out, (uint8_t *)s, n + 1);
		free(s);
	} else {
		rc = write_file(o->out, b.p, b.len);
	}
	cats_buf_free(&b);
	return rc < 0 ? CATS_EXIT_IOERR : CATS_EXIT_OK;
}

/* Read a token file: raw CBOR, or base64url text. */
static int
read_token(const char *path, struct cats_buf *b)
{
	int fd = path == NULL || strcmp(path, "-") == 0 ? 0
	    : open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		cats_errorx("%s: %s", path, strerror(errno));
		return CATS_EXIT_NOINPUT;
	}
	uint8_t chunk[4096];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		if (b->len + (size_t)n > 16384) {
			cats_errorx("token file larger than 16 KiB");
			return CATS_EXIT_DATAERR;
		}
		cats_buf_add(b, chunk, (size_t)n);
	}
	if (fd != 0)
		close(fd);
	size_t len = b->len;
	while (len > 0 && (b->p[len - 1] == '\n' || b->p[len - 1] == '\r'))
		len--;
	if (len > 0 && strspn((const char *)b->p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789-_") >= len) {
		uint8_t *bin = malloc(len);
		long m = bin ? cats_b64url_decode((const char *)b->p, len, bin,
		    len) : -1;
		if (m < 0) {
			free(bin);
			cats_errorx("token is not valid base64url");
			return CATS_EXIT_DATAERR;
		}
		cats_buf_reset(b);
		cats_buf_add(b, bin, (size_t)m);
		free(bin);
	}
	return CATS_EXIT_OK;
}

static int
do_verify(const struct opts *o, const char *file)
{
	struct cats_keyring kr = { 0 };
	struct cats_buf b = { 0 };
	struct cats_token c;
	struct cats_err e;
	if (o->key == NULL)
		needs("verify", "-k keyring");
	cats_opt_keyring("--key", o->key, &kr);
	int rc = read_token(file, &b);
	if (rc != CATS_EXIT_OK) {
		cats_keyring_free(&kr);
		cats_buf_free(&b);
		return rc;
	}
	memset(&e, 0, sizeof(e));
	uint64_t now = o->now_ms ? o->now_ms : cats_clock_now();
	enum cats_token_status st = cats_token_verify(b.p, b.len, &kr, now,
	    30000, &c, &e);
	if (st == CATS_TOKEN_OK && o->csci && strcmp(o->csci, c.sub) != 0) {
		cats_errorx("token is for CSCI-ID \"%s\", not \"%s\"", c.sub,
		    o->csci);
		rc = CATS_EXIT_DATAERR;
	} else if (st == CATS_TOKEN_OK && o->ncs > 0 &&
	    !cats_token_allows(&c, o->cs[0])) {
		cats_errorx("token does not authorize CS-ID \"%s\"", o->cs[0]);
		rc = CATS_EXIT_DATAERR;
	} else if (st != CATS_TOKEN_OK) {
		cats_errorx("%s", e.reason[0] ? e.reason
		    : cats_token_status_name(st));
		rc = CATS_EXIT_DATAERR;
	}
	if (st == CATS_TOKEN_OK || st == CATS_TOKEN_EXPIRED) {
		char cti[2 * CATS_TOKEN_CTI_LEN + 1];
		sodium_bin2hex(cti, sizeof(cti), c.cti, sizeof(c.cti));
		json_t *cs = json_array();
		for (size_t i = 0; i < c.ncs; i++)
			json_array_append_new(cs, json_string(c.cs[i]));
		json_t *j = json_pack("{s:s,s:s,s:I,s:I,s:s,s:o,s:b}",
		    "iss", c.iss, "sub", c.sub, "exp", (json_int_t)c.exp,
		    "iat", (json_int_t)c.iat, "cti", cti, "cs", cs,
		    "cnf", c.has_cnf);
		json_dumpf(j, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(j);
	}
	cats_keyring_free(&kr);
	cats_buf_free(&b);
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "base64", no_argument, NULL, 'b' },
		{ "cs-id", required_argument, NULL, 'c' },
		{ "csci-id", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "issuer", required_argument, NULL, 'i' },
		{ "key", required_argument, NULL, 'k' },
		{ "lifetime", required_argument, NULL, 'e' },
		{ "name", required_argument, NULL, 'n' },
		{ "now", required_argument, NULL, 'T' },
		{ "output", required_argument, NULL, 'o' },
		{ "sci-key", required_argument, NULL, 'p' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .lifetime_ms = 86400000 };
	int ch;

	cats_tool_init(argv[0]);
	while ((ch = getopt_long(argc, argv, ":bc:e:hi:k:n:o:p:s:T:V", longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'b':
			o.base64 = true;
			break;
		case 'c':
			if (o.ncs == CATS_TOKEN_MAX_CS) {
				cats_errorx("at most %d CS-IDs",
				    CATS_TOKEN_MAX_CS);
				return CATS_EXIT_USAGE;
			}
			o.cs[o.ncs++] = optarg;
			break;
		case 'e':
			o.lifetime_ms = cats_opt_ms("--lifetime", optarg);
			break;
		case 'i':
			o.issuer = optarg;
			break;
		case 'k':
			o.key = optarg;
			break;
		case 'n':
			if (strlen(optarg) > CATS_ID ||
			    strpbrk(optarg, " \t\n") != NULL) {
				cats_errorx("--name: at most %d bytes, no "
				    "spaces", CATS_ID);
				return CATS_EXIT_USAGE;
			}
			o.name = optarg;
			break;
		case 'o':
			o.out = optarg;
			break;
		case 'p':
			o.cnf = optarg;
			break;
		case 's':
			o.csci = optarg;
			break;
		case 'T':
			o.now_ms = cats_opt_u64("--now", optarg, 1, CATS_U53);
			break;
		default:
			cats_opt_common(ch, argv, usage_text, NULL);
		}
	}
	const char *cmd = cats_opt_command(&argc, &argv,
	    "gen, psk, pub, token or verify");
	if (strcmp(cmd, "verify") == 0 && argc <= 2)
		return do_verify(&o, argv[1]);
	if (strcmp(cmd, "gen") != 0 && strcmp(cmd, "psk") != 0 &&
	    strcmp(cmd, "pub") != 0 && strcmp(cmd, "token") != 0 &&
	    strcmp(cmd, "verify") != 0)
		cats_usage_fail("%s: unknown command (gen, psk, pub, token, "
		    "verify)", cmd);
	if (argc != 1)
		cats_usage_fail("%s: unexpected operand %s", cmd, argv[argc - 1]);
	if (strcmp(cmd, "gen") == 0)
		return do_gen(&o);
	if (strcmp(cmd, "psk") == 0)
		return do_psk(&o);
	if (strcmp(cmd, "pub") == 0)
		return do_pub(&o);
	return do_token(&o);
}
