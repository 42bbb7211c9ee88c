/*
 * ingest.h - the C-PS's end of the C-SMA synchronization (seed 000 §6.1,
 * §8.2, §8.3, §9.3; cats-northbound(7)): metric records arrive in request
 * bodies (application/cbor-seq), are authenticated, checked for replays and
 * for the CS-IDs their sender may advertise, and applied to a Computing
 * Service Table; the answer is an `ack` record, followed by a `sync` record
 * when the C-PS wants a full snapshot.  Pure: the transport is the
 * caller's, time comes in as `now`.
 *
 * Per record, in this order (the first failure ends the body; the records
 * before it stand):
 *   1. decoding (400), one C-SMA per body (400);
 *   2. authentication: a COSE_Mac0 (PSK) or COSE_Sign1 (Ed25519) by a key
 *      of the keyring (401), whose name is the record's sma_id (403);
 *   3. freshness: ts within +/- window of now, nonce present and above the
 *      last accepted from that C-SMA (409, result replay);
 *   2b. the client certificate, when the request came with one that names
 *      C-SMAs (SAN URIs cats:sma:ID): the record's sma_id is one of them
 *      (403, result unauthorized);
 *   4. authorization: every entry's and site's CS-ID allowed for the C-SMA
 *      (403, result unauthorized), and, when the certificate names them,
 *      among its CS-IDs (cats:cs:CS-ID) and the record's and entries' sites
 *      among its sites (cats:site:SITE) (403);
 *   5. the resource's operation (update: a delta of one entry; withdraw:
 *      withdrawals) (400);
 *   6. the table: epoch and sequence order, full / delta / withdraw /
 *      heartbeat / refresh (cst.h).  Stale records are harmless (200, result
 *      stale); a new epoch without a snapshot, a gap, a broken snapshot or
 *      the refresh of expired entries sets `want full` until a whole
 *      snapshot arrives.
 * Every refusal is audited and leaves the table as it was.
 *
 * A retrieval (op RETRIEVE) is a `sync` record from the C-SMA, authenticated
 * the same way; the answer is the ack (what the C-PS holds of that C-SMA:
 * epoch, last sequence) and, for mode full, its entries as metric records.
 */
#ifndef CATS_INGEST_H
#define CATS_INGEST_H

#include "sec/crypto.h"
#include "select/cst.h"

struct cats_ingest_conf {
	const struct cats_keyring *keys;	/* C-SMA keys, named by sma_id */
	uint64_t window_ms;	/* timestamp window +/- (30 s), 0: off */
	const char *ps_id;	/* the C-PS's identity in answers */
	uint64_t ps_epoch;	/* grows on every restart */
	bool refresh;		/* refresh records are taken */
	const struct cats_key *sign;	/* Ed25519 secret signing answers to
					 * senders without a PSK, or NULL */
	size_t max_records;	/* records in one body (0: 4096) */
	/* Called with each record applied to the table, or NULL. */
	void (*applied)(const struct cats_metric *m, void *arg);
	void *applied_arg;
};

enum cats_ingest_op {
	CATS_ING_METRICS,	/* POST /metrics: publish (any metric op) */
	CATS_ING_UPDATE,	/* POST /update: a delta of one CSCI-ID */
	CATS_ING_WITHDRAW,	/* POST /withdraw: withdrawals */
	CATS_ING_RETRIEVE,	/* POST /retrieve: a sync record */
	CATS_ING__N
};
/* The resources, by op: "/metrics", "/update", "/withdraw", "/retrieve". */
extern const char *const cats_ingest_paths[];

struct cats_ingest_stats {
	uint64_t requests, records, applied, stale, resync;
	uint64_t bad, unauthenticated, unauthorized, replays, conflicts;
	uint64_t cert_refused;	/* refused by the client certificate (also
				 * counted as unauthorized) */
	uint64_t entries_applied, entries_removed, retrievals, full_wanted;
};

struct cats_ingest;

struct cats_ingest *cats_ingest_new(const struct cats_ingest_conf *c,
    struct cats_cst *cst);
void cats_ingest_free(struct cats_ingest *g);

/*
 * The CS-IDs a C-SMA may advertise ("*": any), replacing what it had.  A
 * C-SMA with none may advertise nothing (fail closed).
 */
int cats_ingest_allow(struct cats_ingest *g, const char *sma_id,
    const char *const *cs_ids, size_t n);

/*
 * Handle one request body of a resource; returns the HTTP status and
 * appends the answer (an ack, maybe a sync; metric records for a full
 * retrieval) to out.  peer names the sender in audit lines.
 */
int cats_ingest_handle(struct cats_ingest *g, int op, const uint8_t *p,
    size_t n, const char *peer, uint64_t now, struct cats_buf *out);

/*
 * What the sender's client certificate names, from its SAN URIs: the
 * C-SMAs it speaks for (cats:sma:ID), the sites (cats:site:SITE) and the
 * CS-IDs (cats:cs:CS-ID) it may report.  A kind the certificate names none
 * of limits nothing (the keys and the configuration still do); what it
 * names limits on top of them.
 */
#define CATS_INGEST_CERT_MAX 32	/* URIs of one kind */
struct cats_ingest_cert {
	const char *sma[CATS_INGEST_CERT_MAX];
	const char *site[CATS_INGEST_CERT_MAX];
	const char *cs[CATS_INGEST_CERT_MAX];
	size_t nsma, nsite, ncs;
};
/*
 * The certificate's scope from its SAN URIs (v[0..n), other URIs
 * ignored): 0, or -1 when a kind has more than CATS_INGEST_CERT_MAX.
 */
int cats_ingest_cert_parse(struct cats_ingest_cert *c, const char *const *v,
    size_t n);
/* cats_ingest_handle for a sender with a client certificate (or NULL). */
int cats_ingest_handle_cert(struct cats_ingest *g, int op, const uint8_t *p,
    size_t n, const char *peer, const struct cats_ingest_cert *cert,
    uint64_t now, struct cats_buf *out);

struct evhttp_request;
/*
 * Serve one HTTP request of the resources above (an httpd route's body):
 * the resource from the path, CBOR bodies only (415 otherwise), the
 * client certificate's scope (a certificate whose SAN URIs do not fit the
 * caps is refused, 403), the answer of cats_ingest_handle_cert as an
 * application/cbor-seq reply.
 */
void cats_ingest_serve(struct cats_ingest *g, struct evhttp_request *req,
    uint64_t now);

/* Ask a C-SMA for a full snapshot in its next answer. */
void cats_ingest_want_full(struct cats_ingest *g, const char *sma_id);

const struct cats_ingest_stats *cats_ingest_stats(const struct cats_ingest *g);

#endif
