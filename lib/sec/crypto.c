/*
 * crypto.c - key files, COSE tags over records, replay guard.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cbor.h>
#include <sodium.h>

#include "sec/crypto.h"
#include "base/file.h"
#include "base/htab.h"
#include "rec/json.h"

static const char *const kind_names[] = { "ed25519-secret", "ed25519-public",
	"psk", NULL };

int
cats_crypto_init(void)
{
	return sodium_init() < 0 ? -1 : 0;
}

static void
set_kid(struct cats_key *k)
{
	uint8_t h[32];
	k->hmac_ready = k->kind == CATS_KEY_PSK;
	if (k->kind == CATS_KEY_PSK) {
		cats_hmac_sha256_init(&k->hmac, k->psk, sizeof(k->psk));
		crypto_generichash_state st;
		crypto_generichash_init(&st, NULL, 0, sizeof(h));
		crypto_generichash_update(&st, (const uint8_t *)"cats-psk", 8);
		crypto_generichash_update(&st, k->psk, sizeof(k->psk));
		crypto_generichash_final(&st, h, sizeof(h));
	} else {
		crypto_generichash(h, sizeof(h), k->pk, sizeof(k->pk), NULL, 0);
	}
	memcpy(k->kid, h, CATS_KID_LEN);
}

void
cats_key_gen_ed25519(struct cats_key *k, const char *name)
{
	memset(k, 0, sizeof(*k));
	k->kind = CATS_KEY_ED25519_SECRET;
	crypto_sign_keypair(k->pk, k->sk);
	cats_strlcpy(k->name, name ? name : "", sizeof(k->name));
	set_kid(k);
}

void
cats_key_gen_psk(struct cats_key *k, const char *name)
{
	memset(k, 0, sizeof(*k));
	k->kind = CATS_KEY_PSK;
	randombytes_buf(k->psk, sizeof(k->psk));
	cats_strlcpy(k->name, name ? name : "", sizeof(k->name));
	set_kid(k);
}

/* The label of the manager's key toward one forwarder (crypto.h). */
#define DOWN_LABEL "cats manager to forwarder v1"

int
cats_key_derive_down(const struct cats_key *fwd, const char *name,
    struct cats_key *out)
{
	if (fwd->kind != CATS_KEY_PSK)
		return -1;
	struct cats_hmac_sha256 h;
	uint8_t k[32];
	cats_hmac_sha256_init(&h, fwd->psk, sizeof(fwd->psk));
	cats_hmac_sha256_update(&h, DOWN_LABEL, sizeof(DOWN_LABEL) - 1);
	cats_hmac_sha256_final(&h, k);
	memset(out, 0, sizeof(*out));
	out->kind = CATS_KEY_PSK;
	memcpy(out->psk, k, sizeof(out->psk));
	sodium_memzero(k, sizeof(k));
	sodium_memzero(&h, sizeof(h));
	cats_strlcpy(out->name, name ? name : "", sizeof(out->name));
	set_kid(out);
	return 0;
}

void
cats_key_public(const struct cats_key *sk, struct cats_key *pk)
{
	*pk = *sk;
	pk->kind = CATS_KEY_ED25519_PUBLIC;
	sodium_memzero(pk->sk, sizeof(pk->sk));
}

int
cats_key_save(const struct cats_key *k, const char *path, int mode, char *err,
    size_t errlen)
{
	char b64[64];
	const uint8_t *bin = k->kind == CATS_KEY_ED25519_SECRET ? k->sk
	    : k->kind == CATS_KEY_PSK ? k->psk : k->pk;
	cats_b64url_encode(bin, 32, b64, sizeof(b64));
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	/* O_CREAT's mode does not apply to an existing file. */
	if (fchmod(fd, (mode_t)mode) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	FILE *f = fdopen(fd, "w");
	if (f == NULL) {
		close(fd);
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	fprintf(f, "cats-key v1 %s %s%s%s\n", kind_names[k->kind], b64,
	    k->name[0] ? " " : "", k->name);
	sodium_memzero(b64, sizeof(b64));
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

/* Parse one key line; -1 with a reason in err. */
static int
parse_line(char *line, struct cats_key *k, char *err, size_t errlen)
{
	char *save = NULL;
	char *magic = strtok_r(line, " \t\r\n", &save);
	char *ver = strtok_r(NULL, " \t\r\n", &save);
	char *kind = strtok_r(NULL, " \t\r\n", &save);
	char *b64 = strtok_r(NULL, " \t\r\n", &save);
	char *name = strtok_r(NULL, " \t\r\n", &save);
	memset(k, 0, sizeof(*k));
	if (magic == NULL || strcmp(magic, "cats-key") != 0 || ver == NULL ||
	    strcmp(ver, "v1") != 0 || kind == NULL || b64 == NULL) {
		snprintf(err, errlen, "not a cats-key v1 line");
		return -1;
	}
	k->kind = cats_enum_index(kind_names, kind, strlen(kind));
	if (k->kind < 0) {
		snprintf(err, errlen, "unknown key kind \"%.32s\"", kind);
		return -1;
	}
	uint8_t bin[33];
	long n = cats_b64url_decode(b64, strlen(b64), bin, sizeof(bin));
	if (n != 32) {
		snprintf(err, errlen, "key is not 32 bytes of base64url");
		return -1;
	}
	switch (k->kind) {
	case CATS_KEY_ED25519_SECRET:
		crypto_sign_seed_keypair(k->pk, k->sk, bin);
		break;
	case CATS_KEY_ED25519_PUBLIC:
		memcpy(k->pk, bin, 32);
		break;
	default:
		memcpy(k->psk, bin, 32);
		break;
	}
	sodium_memzero(bin, sizeof(bin));
	if (name != NULL && strlen(name) > CATS_ID) {
		snprintf(err, errlen, "key name longer than %d bytes", CATS_ID);
		return -1;
	}
	cats_strlcpy(k->name, name ? name : "", sizeof(k->name));
	set_kid(k);
	return 0;
}

int
cats_keyring_load(struct cats_keyring *kr, const char *path, char *err,
    size_t errlen)
{
	int fd = cats_file_open(path, err, errlen);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	FILE *f = fdopen(fd, "r");
	if (f == NULL) {
		close(fd);
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	int rc = 0, found = 0;
	while (getline(&line, &cap, f) > 0) {
		lineno++;
		char *p = line + strspn(line, " \t");
		if (*p == '#' || *p == '\n' || *p == '\0')
			continue;
		struct cats_key k;
		char why[128];
		if (parse_line(p, &k, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "%s:%u: %s", path, lineno, why);
			rc = -1;
			break;
		}
		if (k.kind != CATS_KEY_ED25519_PUBLIC && (st.st_mode & 077)) {
			snprintf(err, errlen, "%s: holds a secret key but is "
			    "readable by group or others (mode %04o); "
			    "chmod 600 it", path, (unsigned)(st.st_mode & 07777));
			sodium_memzero(&k, sizeof(k));
			rc = -1;
			break;
		}
		if (cats_keyring_add(kr, &k) < 0) {
			snprintf(err, errlen, "out of memory");
			sodium_memzero(&k, sizeof(k));
			rc = -1;
			break;
		}
		sodium_memzero(&k, sizeof(k));
		found++;
	}
	if (line != NULL) {
		sodium_memzero(line, cap);
		free(line);
	}
	fclose(f);
	if (rc == 0 && found == 0) {
		snprintf(err, errlen, "%s: no key in file", path);
		rc = -1;
	}
	return rc;
}

int
cats_key_load(struct cats_key *k, const char *path, int kind, char *err,
    size_t errlen)
{
	struct cats_keyring kr = { 0 };
	if (cats_keyring_load(&kr, path, err, errlen) < 0) {
		cats_keyring_free(&kr);
		return -1;
	}
	int rc = 0;
	if (kr.n != 1) {
		snprintf(err, errlen, "%s: holds %zu keys, expected one", path,
		    kr.n);
		rc = -1;
	} else if (kind >= 0 && kr.v[0].kind != kind) {
		snprintf(err, errlen, "%s: is a %s key, expected %s", path,
		    kind_names[kr.v[0].kind], kind_names[kind]);
		rc = -1;
	} else {
		*k = kr.v[0];
	}
	cats_keyring_free(&kr);
	return rc;
}

int
cats_keyring_add(struct cats_keyring *kr, const struct cats_key *k)
{
	struct cats_key *v = realloc(kr->v, (kr->n + 1) * sizeof(*v));
	if (v == NULL)
		return -1;
	kr->v = v;
	kr->v[kr->n++] = *k;
	return 0;
}

const struct cats_key *
cats_keyring_find(const struct cats_keyring *kr, const uint8_t kid[CATS_KID_LEN])
{
	for (size_t i = 0; i < kr->n; i++)
		if (memcmp(kr->v[i].kid, kid, CATS_KID_LEN) == 0)
			return &kr->v[i];
	return NULL;
}

void
cats_keyring_free(struct cats_keyring *kr)
{
	if (kr->v != NULL)
		sodium_memzero(kr->v, kr->n * sizeof(*kr->v));
	free(kr->v);
	kr->v = NULL;
	kr->n = 0;
}

/*
 * The head of the COSE Sig_structure / MAC_structure (RFC 9052 4.4, 6.3):
 * ["MAC0" or "Signature1", protected, external_aad = h'', payload] up to
 * the payload's own bytes, into h (room for protlen + 32); its length.
 */
static size_t
tbs_head(uint8_t *h, size_t room, bool mac, const uint8_t *prot,
    size_t protlen, size_t n)
{
	const char *ctx = mac ? "MAC0" : "Signature1";
	size_t k = cbor_encode_array_start(4, h, room);
	k += cbor_encode_string_start(strlen(ctx), h + k, room - k);
	memcpy(h + k, ctx, strlen(ctx));
	k += strlen(ctx);
	k += cbor_encode_bytestring_start(protlen, h + k, room - k);
	memcpy(h + k, prot, protlen);
	k += protlen;
	k += cbor_encode_bytestring_start(0, h + k, room - k);
	k += cbor_encode_bytestring_start(n, h + k, room - k);
	return k;
}

#define TBS_HEAD_MAX(protlen) ((protlen) + 32)

/* The HMAC-SHA256 tag of the MAC_structure, without copying the payload. */
static void
mac_tag(const struct cats_key *k, const uint8_t *prot, size_t protlen,
    const uint8_t *payload, size_t n, uint8_t tag[32])
{
	uint8_t h[TBS_HEAD_MAX(64)];
	struct cats_hmac_sha256 st;
	if (k->hmac_ready)
		st = k->hmac;
	else
		cats_hmac_sha256_init(&st, k->psk, sizeof(k->psk));
	cats_hmac_sha256_update(&st, h, tbs_head(h, sizeof(h), true,
	    prot, protlen, n));
	cats_hmac_sha256_update(&st, payload, n);
	cats_hmac_sha256_final(&st, tag);
}

/* The Sig_structure whole, for Ed25519. */
static int
to_be_signed(struct cats_buf *b, const uint8_t *prot, size_t protlen,
    const uint8_t *payload, size_t n)
{
	uint8_t h[TBS_HEAD_MAX(64)];
	if (protlen > 64)
		return -1;
	size_t k = tbs_head(h, sizeof(h), false, prot, protlen, n);
	if (cats_buf_add(b, h, k) < 0 || cats_buf_add(b, payload, n) < 0)
		return -1;
	return 0;
}

int
cats_cose_tag(const struct cats_key *k, const uint8_t *prot, size_t protlen,
    const uint8_t *payload, size_t n, uint8_t tag[64], size_t *taglen)
{
	if (k->kind == CATS_KEY_ED25519_PUBLIC || protlen > 64)
		return -1;
	if (k->kind == CATS_KEY_PSK) {
		mac_tag(k, prot, protlen, payload, n, tag);
		*taglen = 32;
		return 0;
	}
	struct cats_buf tbs = { 0 };
	int rc = -1;
	if (to_be_signed(&tbs, prot, protlen, payload, n) == 0) {
		crypto_sign_detached(tag, NULL, tbs.p, tbs.len, k->sk);
		*taglen = 64;
		rc = 0;
	}
	cats_buf_free(&tbs);
	return rc;
}

int
cats_cose_check(const struct cats_key *k, int alg, const uint8_t *prot,
    size_t protlen, const uint8_t *payload, size_t n, const uint8_t *tag,
    size_t taglen)
{
	bool mac = alg == CATS_ALG_HMAC256;
	if (mac != (k->kind == CATS_KEY_PSK) || protlen > 64)
		return -1;
	if (taglen != (mac ? 32u : 64u))
		return -1;
	if (mac) {
		uint8_t want[32];
		mac_tag(k, prot, protlen, payload, n, want);
		return crypto_verify_32(want, tag) == 0 ? 0 : -1;
	}
	struct cats_buf tbs = { 0 };
	int rc = -1;
	if (to_be_signed(&tbs, prot, protlen, payload, n) == 0)
		rc = crypto_sign_verify_detached(tag, tbs.p, tbs.len,
		    k->pk) == 0 ? 0 : -1;
	cats_buf_free(&tbs);
	return rc;
}

int
cats_rec_sign(struct cats_rec *r, const struct cats_key *k)
{
	struct cats_buf payload = { 0 };
	uint8_t prot[32];
	int alg = k->kind == CATS_KEY_PSK ? CATS_ALG_HMAC256 : CATS_ALG_EDDSA;
	size_t protlen = cats_cose_protected(alg, k->kid, prot, sizeof(prot));
	int rc = -1;
	if (protlen > 0 && cats_rec_encode(r, &payload, false) == 0 &&
	    cats_cose_tag(k, prot, protlen, payload.p, payload.len, r->auth.tag,
	    &r->auth.tag_len) == 0) {
		r->auth.alg = alg;
		memcpy(r->auth.kid, k->kid, CATS_KID_LEN);
		memcpy(r->auth.prot, prot, protlen);
		r->auth.prot_len = protlen;
		rc = 0;
	}
	cats_buf_free(&payload);
	return rc;
}

int
cats_rec_verify(const struct cats_rec *r, const struct cats_keyring *kr,
    const struct cats_key **who, struct cats_err *err)
{
	if (r->auth.alg == CATS_ALG_NONE)
		return cats_err_set(err, "auth", "record is not authenticated");
	const struct cats_key *k = cats_keyring_find(kr, r->auth.kid);
	if (k == NULL)
		return cats_err_set(err, "auth", "unknown key id");
	if ((r->auth.alg == CATS_ALG_HMAC256) != (k->kind == CATS_KEY_PSK))
		return cats_err_set(err, "auth",
		    "algorithm does not match the key");
	/*
	 * Over the protected header as it came (its parameters are the
	 * sender's word too), or as made here for a record signed here.
	 */
	struct cats_buf payload = { 0 };
	uint8_t built[32];
	const uint8_t *prot = r->auth.prot;
	size_t protlen = r->auth.prot_len;
	if (protlen == 0) {
		prot = built;
		protlen = cats_cose_protected(r->auth.alg, r->auth.kid, built,
		    sizeof(built));
	}
	int rc = -1;
	if (protlen > 0 && cats_rec_encode(r, &payload, false) == 0)
		rc = cats_cose_check(k, r->auth.alg, prot, protlen, payload.p,
		    payload.len, r->auth.tag, r->auth.tag_len);
	cats_buf_free(&payload);
	if (rc < 0)
		return cats_err_set(err, "auth", "%s does not verify",
		    r->auth.alg == CATS_ALG_HMAC256 ? "MAC" : "signature");
	if (who != NULL)
		*who = k;
	return 0;
}

bool
cats_ct_equal(const void *a, const void *b, size_t n)
{
	return sodium_memcmp(a, b, n) == 0;
}

/* ---- replay guard ---- */

struct sender {
	uint64_t last_nonce;
	char id[];
};

struct cats_replay {
	uint64_t window_ms;
	uint64_t floor;		/* no nonce below it is accepted */
	struct cats_htab tab;
};

static bool
sender_eq(const void *item, const void *key)
{
	return strcmp(((const struct sender *)item)->id, key) == 0;
}

struct cats_replay *
cats_replay_new(uint64_t window_ms)
{
	struct cats_replay *g = calloc(1, sizeof(*g));
	if (g != NULL)
		g->window_ms = window_ms;
	return g;
}

bool
cats_replay_in_window(uint64_t ts, uint64_t now, uint64_t window_ms)
{
	uint64_t diff = ts > now ? ts - now : now - ts;
	return diff <= window_ms;
}

int
cats_replay_check(struct cats_replay *g, const char *id, uint64_t ts,
    uint64_t nonce, uint64_t now)
{
	if (!cats_replay_in_window(ts, now, g->window_ms))
		return CATS_REPLAY_WINDOW;
	uint64_t h = cats_hash_str(id);
	struct sender *s = cats_htab_get(&g->tab, h, sender_eq, id);
	if ((s != NULL && nonce <= s->last_nonce) || nonce < g->floor)
		return CATS_REPLAY_NONCE;
	if (s == NULL) {
		size_t n = strlen(id) + 1;
		s = malloc(sizeof(*s) + n);
		if (s == NULL)
			return CATS_REPLAY_NOMEM;
		memcpy(s->id, id, n);
		if (cats_htab_put(&g->tab, h, s) < 0) {
			free(s);
			return CATS_REPLAY_NOMEM;
		}
	}
	s->last_nonce = nonce;
	return CATS_REPLAY_OK;
}

void
cats_replay_set_floor(struct cats_replay *g, uint64_t floor)
{
	g->floor = floor;
}

uint64_t
cats_replay_last(const struct cats_replay *g, const char *id)
{
	struct sender *s = cats_htab_get(&g->tab, cats_hash_str(id), sender_eq,
	    id);
	return s ? s->last_nonce : 0;
}

bool
cats_replay_seen(const struct cats_replay *g, const char *id)
{
	return cats_htab_get(&g->tab, cats_hash_str(id), sender_eq, id) !=
	    NULL;
}

struct cats_replay *
cats_hello_guard_new(uint64_t started)
{
	struct cats_replay *g = cats_replay_new(CATS_REPLAY_NO_WINDOW);
	if (g != NULL)
		cats_replay_set_floor(g, started);
	return g;
}

int
cats_hello_check(struct cats_replay *g, const char *fwd, uint64_t ts,
    char *why, size_t n)
{
	bool last = cats_replay_seen(g, fwd);
	uint64_t floor = last ? cats_replay_last(g, fwd) : g->floor;
	int rc = cats_replay_check(g, fwd, ts, ts, 0);
	if (rc == CATS_REPLAY_NONCE)
		snprintf(why, n, "hello of %" PRIu64 " not after %" PRIu64
		    " (%s): a replay", ts, floor, last ? "the last hello "
		    "accepted" : "the start of this process");
	else if (rc != CATS_REPLAY_OK)
		snprintf(why, n, "%s", cats_replay_reason(rc));
	return rc;
}

void
cats_replay_free(struct cats_replay *g)
{
	if (g == NULL)
		return;
	for (size_t i = 0; i < g->tab.cap; i++)
		if (g->tab.s[i].h)
			free(g->tab.s[i].item);
	cats_htab_free(&g->tab);
	free(g);
}

/* ---- the tag guard ---- */

struct tag_ent {
	uint64_t expire;
	uint64_t h;
	uint8_t tag[64];
	uint8_t len;
};

struct cats_tag_guard {
	uint64_t window;
	struct tag_ent *ring;	/* insertion order = expiry order */
	size_t cap, head, n;
	struct cats_htab seen;
};

struct tag_key {
	const uint8_t *tag;
	size_t len;
};

static bool
tag_eq(const void *item, const void *key)
{
	const struct tag_ent *e = item;
	const struct tag_key *k = key;
	return e->len == k->len && memcmp(e->tag, k->tag, k->len) == 0;
}

struct cats_tag_guard *
cats_tag_guard_new(uint64_t window_ms, size_t max)
{
	struct cats_tag_guard *g = calloc(1, sizeof(*g));
	if (g == NULL)
		return NULL;
	g->window = window_ms;
	g->cap = max ? max : 1;
	g->ring = calloc(g->cap, sizeof(*g->ring));
	if (g->ring == NULL) {
		free(g);
		return NULL;
	}
	return g;
}

void
cats_tag_guard_free(struct cats_tag_guard *g)
{
	if (g == NULL)
		return;
	cats_htab_free(&g->seen);
	free(g->ring);
	free(g);
}

int
cats_tag_guard_check(struct cats_tag_guard *g, const uint8_t *tag,
    size_t len, uint64_t ts, uint64_t now)
{
	if (len == 0 || len > sizeof(g->ring[0].tag))
		return CATS_REPLAY_UNAUTH;
	if (!cats_replay_in_window(ts, now, g->window))
		return CATS_REPLAY_WINDOW;
	/* Forget tags whose records can no longer pass the window. */
	while (g->n > 0 && g->ring[g->head].expire < now) {
		struct tag_ent *e = &g->ring[g->head];
		struct tag_key k = { e->tag, e->len };
		cats_htab_del(&g->seen, e->h, tag_eq, &k);
		g->head = (g->head + 1) % g->cap;
		g->n--;
	}
	struct tag_key k = { tag, len };
	uint64_t h = cats_hash(tag, len);
	if (cats_htab_get(&g->seen, h, tag_eq, &k) != NULL)
		return CATS_REPLAY_SEEN;
	if (g->n == g->cap)
		return CATS_REPLAY_FULL;
	struct tag_ent *e = &g->ring[(g->head + g->n) % g->cap];
	/*
	 * A record with ts <= now + window stops passing after ts + window,
	 * that is by now + 2 window at the latest: expiry follows the order
	 * of insertion.
	 */
	e->expire = now + 2 * g->window;
	e->h = h;
	e->len = (uint8_t)len;
	memcpy(e->tag, tag, len);
	if (cats_htab_put(&g->seen, h, e) < 0)
		return CATS_REPLAY_FULL;
	g->n++;
	return CATS_REPLAY_OK;
}

/* ---- the sliding window of sequence numbers ---- */

int
cats_seqwin_check(struct cats_seqwin *w, uint64_t gen, uint64_t seq)
{
	if (!w->seen || gen > w->gen) {
		w->seen = true;
		w->gen = gen;
		w->top = seq;
		w->bits = 1;
		return CATS_REPLAY_OK;
	}
	if (gen < w->gen)
		return CATS_REPLAY_STALE;
	if (seq > w->top) {
		uint64_t d = seq - w->top;
		w->bits = d >= CATS_SEQWIN ? 1 : (w->bits << d) | 1;
		w->top = seq;
		return CATS_REPLAY_OK;
	}
	uint64_t d = w->top - seq;
	if (d >= CATS_SEQWIN || ((w->bits >> d) & 1))
		return CATS_REPLAY_SEEN;
	w->bits |= UINT64_C(1) << d;
	return CATS_REPLAY_OK;
}

const char *
cats_replay_reason(int code)
{
	switch (code) {
	case CATS_REPLAY_OK: return "ok";
	case CATS_REPLAY_WINDOW: return "timestamp outside the accepted window";
	case CATS_REPLAY_NONCE: return "nonce not above the last one (replay)";
	case CATS_REPLAY_SEEN: return "replayed record";
	case CATS_REPLAY_FULL: return "too many records in the replay window";
	case CATS_REPLAY_UNAUTH: return "record is not authenticated";
	case CATS_REPLAY_STALE: return "generation below the current one";
	default: return "out of memory";
	}
}
