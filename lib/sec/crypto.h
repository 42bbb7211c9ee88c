/*
 * crypto.h - keys, record authentication and replay protection (libsodium).
 *
 * Key files are one line each: "cats-key v1 KIND BASE64URL [NAME]", KIND one
 * of ed25519-secret (the 32-byte seed), ed25519-public, psk (32 bytes).  A
 * keyring file holds several such lines.  A file holding a secret must not be
 * readable by group or others.  The key id (kid) is the first 8 bytes of
 * BLAKE2b-256 over the public key (Ed25519) or over "cats-psk" and the key.
 *
 * A record is authenticated by its "auth" entry: COSE_Sign1 (EdDSA) or
 * COSE_Mac0 (HMAC 256/256) with a detached payload, the payload being the
 * record's deterministic encoding without "auth" (RFC 9052 §4.4, §6.3).
 */
#ifndef CATS_CRYPTO_H
#define CATS_CRYPTO_H

#include "rec/rec.h"
#include "base/sha256.h"

enum cats_key_kind {
	CATS_KEY_ED25519_SECRET,
	CATS_KEY_ED25519_PUBLIC,
	CATS_KEY_PSK,
};

struct cats_key {
	int kind;
	uint8_t kid[CATS_KID_LEN];
	uint8_t pk[32];		/* Ed25519 public key */
	uint8_t sk[64];		/* Ed25519 secret key (seed || pk) */
	uint8_t psk[32];
	char name[CATS_ID + 1];	/* identity the key belongs to, may be "" */
	/* HMAC-SHA256 keyed with psk (its two pad blocks hashed), ready to
	 * copy for each tag; set where keys are made and loaded. */
	struct cats_hmac_sha256 hmac;
	bool hmac_ready;
};

struct cats_keyring {
	struct cats_key *v;
	size_t n;
};

/* Initialise libsodium; call once before any other function here. */
int cats_crypto_init(void);

/* Fresh keys. */
void cats_key_gen_ed25519(struct cats_key *k, const char *name);
void cats_key_gen_psk(struct cats_key *k, const char *name);
/*
 * The key a binding manager MACs its records to one forwarder with,
 * derived from that forwarder's PSK (HMAC-SHA256 over a fixed label) and
 * named name: both ends have it without another key to hand out, it is
 * the pair's alone (a forwarder cannot forge records to another), no
 * record of the forwarder's own verifies under it, and a MAC costs a
 * tenth of an Ed25519 signature and a twentieth of its check.  -1 (out
 * untouched) unless fwd is a PSK.
 */
int cats_key_derive_down(const struct cats_key *fwd, const char *name,
    struct cats_key *out);
/* The public half of an Ed25519 secret key. */
void cats_key_public(const struct cats_key *sk, struct cats_key *pk);

/* Write one key line to path with the given mode (0600 for secrets). */
int cats_key_save(const struct cats_key *k, const char *path, int mode,
    char *err, size_t errlen);
/*
 * Load every key of a key or keyring file, appending to kr.  A secret in a
 * file that group or others can read is refused.
 */
int cats_keyring_load(struct cats_keyring *kr, const char *path, char *err,
    size_t errlen);
/* Load exactly one key of the given kind (-1 for any). */
int cats_key_load(struct cats_key *k, const char *path, int kind, char *err,
    size_t errlen);
/* Append a copy of k: 0, or -1 out of memory. */
int cats_keyring_add(struct cats_keyring *kr, const struct cats_key *k);
const struct cats_key *cats_keyring_find(const struct cats_keyring *kr,
    const uint8_t kid[CATS_KID_LEN]);
void cats_keyring_free(struct cats_keyring *kr);

/*
 * COSE_Sign1 / COSE_Mac0 tag over payload with protected header prot:
 * ToBeSigned = ["Signature1" | "MAC0", prot, h'', payload].
 */
int cats_cose_tag(const struct cats_key *k, const uint8_t *prot,
    size_t protlen, const uint8_t *payload, size_t n, uint8_t tag[64],
    size_t *taglen);
/* Check a tag; constant time for MACs.  0 if valid. */
int cats_cose_check(const struct cats_key *k, int alg, const uint8_t *prot,
    size_t protlen, const uint8_t *payload, size_t n, const uint8_t *tag,
    size_t taglen);

/* Sign (Ed25519 secret) or MAC (PSK) a record: sets r->auth. */
int cats_rec_sign(struct cats_rec *r, const struct cats_key *k);

/*
 * Verify a record's auth against a keyring.  On success *who is the key
 * that verified it (its name is the sender's identity).
 */
int cats_rec_verify(const struct cats_rec *r, const struct cats_keyring *kr,
    const struct cats_key **who, struct cats_err *err);

/*
 * Replay protection (000 §8.3; seed 001 for the C-PS to PCE channel): one
 * time-window rule, three guards, one set of results (CATS_REPLAY_*, told
 * apart by cats_replay_reason()).  A refused record never changes a guard.
 *
 * - The window: a timestamp ts passes at now when |ts - now| <= window
 *   (both ends included): cats_replay_in_window().  cats_replay and
 *   cats_tag_guard apply it first and refuse with CATS_REPLAY_WINDOW.
 * - cats_replay: per sender, the window and a strictly increasing nonce: a
 *   nonce at or below the last one accepted from that sender is refused
 *   (CATS_REPLAY_NONCE), and so is one below the guard's floor (0 unless
 *   set), whoever sends it; the floor itself passes for a sender not seen
 *   yet.  Senders are remembered for the guard's life.  A guard of
 *   CATS_REPLAY_NO_WINDOW applies the nonce rule alone.
 * - Forwarders' signed hellos (cats-bind(1), cats-select(1)) are a
 *   cats_replay made by cats_hello_guard_new(started): no window, the
 *   hello's signing time as its nonce, the start of the checking process
 *   as the floor.  A hello is fresh when it was signed at or after that
 *   start and after the last hello accepted from the same forwarder, so a
 *   hello recorded on the wire and sent again (on this connection or
 *   another, before or after a restart) is refused whatever the time;
 *   forwarders sign each hello anew, so theirs pass.  The caller checks
 *   the MAC first: only forwarders of its keyring get an entry, so the
 *   guard is bounded by the keyring.
 * - cats_tag_guard: the window and the authentication tag: a tag seen
 *   within the window is refused (CATS_REPLAY_SEEN), so that a replayed
 *   record is either too old or carries a tag already seen; no nonce is
 *   needed.  A tag is forgotten once no record carrying it can pass the
 *   window (2 windows after it was accepted).  At most max tags are
 *   remembered: with all of them live the record is refused
 *   (CATS_REPLAY_FULL: fail closed).  No tag (length 0): CATS_REPLAY_UNAUTH.
 * - cats_seqwin: per sender, a sliding window of the last CATS_SEQWIN
 *   sequence numbers in a generation (RFC 4303 §3.4.3): the highest number
 *   seen moves the window; one already seen, or below the window, is
 *   refused (CATS_REPLAY_SEEN); numbers may come out of order within it.
 *   A higher generation starts a new window; a lower one is refused
 *   (CATS_REPLAY_STALE).  The caller keeps one struct per sender (zeroed:
 *   nothing seen) and its own time window.
 */
enum {
	CATS_REPLAY_OK = 0,
	CATS_REPLAY_WINDOW = 1,	/* timestamp outside now +/- window */
	CATS_REPLAY_NONCE = 2,	/* nonce not above the last accepted one */
	CATS_REPLAY_NOMEM = 3,
	CATS_REPLAY_SEEN = 4,	/* this tag or sequence number was seen */
	CATS_REPLAY_FULL = 5,	/* too many live tags */
	CATS_REPLAY_UNAUTH = 6,	/* no tag: the record is not authenticated */
	CATS_REPLAY_STALE = 7,	/* generation below the sender's current */
};

/* One line naming a CATS_REPLAY_* result. */
const char *cats_replay_reason(int code);
/* Is ts within now +/- window_ms (both ends included)? */
bool cats_replay_in_window(uint64_t ts, uint64_t now_ms, uint64_t window_ms);

struct cats_replay;
#define CATS_REPLAY_NO_WINDOW UINT64_MAX	/* every timestamp passes */
struct cats_replay *cats_replay_new(uint64_t window_ms);
/* No nonce below floor is accepted from now on, from any sender. */
void cats_replay_set_floor(struct cats_replay *g, uint64_t floor);
/* Accept (and remember) or refuse nonce from sender, sent at ts. */
int cats_replay_check(struct cats_replay *g, const char *sender, uint64_t ts,
    uint64_t nonce, uint64_t now_ms);
/* Last nonce accepted from sender (0 if none). */
uint64_t cats_replay_last(const struct cats_replay *g, const char *sender);
/* Has a nonce of sender been accepted? */
bool cats_replay_seen(const struct cats_replay *g, const char *sender);
void cats_replay_free(struct cats_replay *g);

/* The guard of forwarders' hellos checked by a process started at started. */
struct cats_replay *cats_hello_guard_new(uint64_t started);
/*
 * The hello of fwd signed at ts: CATS_REPLAY_OK (and remembered), or
 * CATS_REPLAY_NONCE with why "hello of TS not after T (the last hello
 * accepted | the start of this process): a replay", or CATS_REPLAY_NOMEM.
 */
int cats_hello_check(struct cats_replay *g, const char *fwd, uint64_t ts,
    char *why, size_t n);

struct cats_tag_guard;
/* A guard remembering at most max tags (0 is taken as 1); NULL: no memory. */
struct cats_tag_guard *cats_tag_guard_new(uint64_t window_ms, size_t max);
/* Accept (and remember) or refuse a record of tag (len <= 64) sent at ts. */
int cats_tag_guard_check(struct cats_tag_guard *g, const uint8_t *tag,
    size_t len, uint64_t ts, uint64_t now_ms);
void cats_tag_guard_free(struct cats_tag_guard *g);

#define CATS_SEQWIN 64
struct cats_seqwin {
	bool seen;		/* anything accepted yet */
	uint64_t gen;		/* current generation */
	uint64_t top;		/* highest number accepted in it */
	uint64_t bits;		/* bit d: top - d was accepted */
};
/* Accept (and remember) or refuse number seq of generation gen. */
int cats_seqwin_check(struct cats_seqwin *w, uint64_t gen, uint64_t seq);

/* Constant-time equality of two byte strings of length n. */
bool cats_ct_equal(const void *a, const void *b, size_t n);

#endif
