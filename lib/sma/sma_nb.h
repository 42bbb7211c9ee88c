/*
 * sma_nb.h - the C-SMA's northbound sender (seed 000 §6.1, §8.2, §8.3,
 * §9.3, §10.2, §10.3; cats-northbound(7)): the update controller's records
 * queue here and leave in HTTP requests to the C-PS, stamped with the send
 * time and a strictly increasing nonce and MAC'd (PSK) or signed (Ed25519).
 * Pure: the caller does the I/O through struct sma_nb_io and passes the
 * time in.
 *
 *   CONNECTED --failure--> PARTITION (read-only: nothing is sent, records
 *   buffer in the bounded queue, the oldest dropped first and counted)
 *   --backoff 1, 2, 4 .. 60 s, jittered, through the fallback URLs-->
 *   RECONCILE (POST /retrieve: what does the C-PS hold of us?) --the C-PS
 *   kept our epoch up to a sequence the queue continues, nothing dropped-->
 *   incremental sync: the queue from there; --else--> full sync: the queue
 *   is dropped and the controller makes a snapshot (the C-SMA's view wins).
 *
 * A failure is: no answer (connection, TLS, timeout), a 5xx, 408 or 429,
 * an answer that is not an ack from the C-PS (garbage, wrong MAC), or
 * 401 (our key refused).  A 400, 403 or 409 conflict refuses one record:
 * it is dropped (counted, audited) and the rest goes on.  A 413 halves the
 * request size.  Nothing is lost on a failure: the records in flight stay
 * queued.  A full snapshot in the queue supersedes everything queued before
 * it; the queue bound never cuts a snapshot.
 */
#ifndef CATS_SMA_NB_H
#define CATS_SMA_NB_H

#include "sec/crypto.h"
#include "sma/sma.h"

struct sma_nb_io {
	/*
	 * Start a POST of body (application/cbor-seq) to url; the caller
	 * calls sma_nb_done() when it ends.  -1 if it could not start.
	 */
	int (*post)(void *arg, const char *url, const uint8_t *body,
	    size_t len);
	/* Make the controller send a full snapshot (through sma_nb_push). */
	void (*snapshot)(void *arg, uint64_t now);
	/* The C-PS does (not) take refresh records. */
	void (*refresh)(void *arg, bool ok);
	/* The queue's fill in ppm (selective reporting under load). */
	void (*load)(void *arg, uint64_t ppm);
	/* An operator notification (syslog): reachability changes. */
	void (*notify)(void *arg, int prio, const char *msg);
	/*
	 * The C-PS holds a sequence of this epoch above any we know of (a
	 * state file older than what was sent): number from above it.
	 */
	void (*renumber)(void *arg, uint64_t above);
};

enum sma_nb_state { SMA_NB_CONNECTED, SMA_NB_RECONCILE, SMA_NB_PARTITION };
extern const char *const sma_nb_state_names[];

struct sma_nb_params {
	const char *const *urls;	/* base URLs, the primary first */
	size_t nurls;
	const char *sma_id;
	uint64_t epoch;
	uint64_t seq;			/* the last sequence sent before (a
					 * cron run's state file) */
	const struct cats_key *key;	/* PSK or Ed25519 secret, or NULL */
	const struct cats_keyring *ps_keys;	/* verify the C-PS's answers */
	const struct sma_nb_conf *c;
	uint64_t seed;			/* backoff jitter */
};

struct sma_nb;

struct sma_nb *sma_nb_new(const struct sma_nb_params *p,
    const struct sma_nb_io *io, void *arg);
void sma_nb_free(struct sma_nb *nb);
/* A new configuration (SIGHUP): timeouts, backoff, bounds. */
void sma_nb_reconf(struct sma_nb *nb, const struct sma_nb_conf *c);
/* The first reconciliation (call once the first records are queued). */
void sma_nb_start(struct sma_nb *nb, uint64_t now);
/* A record of the controller (kind: enum sma_uc_kind). */
int sma_nb_push(struct sma_nb *nb, const struct cats_rec *r, int kind,
    uint64_t now);
/*
 * The request started by post() ended: code is 0 when an answer came
 * (status, body), else error says why.
 */
void sma_nb_done(struct sma_nb *nb, int code, long status,
    const uint8_t *body, size_t len, const char *error, uint64_t now);
/* Retries due at now; returns the next deadline (0: none). */
uint64_t sma_nb_tick(struct sma_nb *nb, uint64_t now);
uint64_t sma_nb_next_deadline(const struct sma_nb *nb);
/* The next reconciliation is a full sync (local steering happened in the
 * partition: 000 §10.3 Partition Healing). */
void sma_nb_want_full(struct sma_nb *nb);
/* Nothing queued and nothing in flight. */
bool sma_nb_idle(const struct sma_nb *nb);

/* Sync status (cats-sma(1) SYNC STATUS). */
struct sma_nb_status {
	int state;		/* enum sma_nb_state */
	size_t url;		/* index of the URL in use */
	uint64_t queued, queue_max, dropped, superseded, refused;
	uint64_t requests, failures, partitions, attempts;
	uint64_t backoff_ms;	/* the current wait, 0 when connected */
	uint64_t retry_at;
	uint64_t partition_since;
	uint64_t records_acked, deltas_acked, withdrawals_acked,
	    snapshots_acked, refreshes_acked, bytes_sent;
	uint64_t full_syncs, incremental_syncs, full_requested;
	uint64_t last_ack, last_full;	/* times */
	uint64_t acked_seq;	/* the C-PS's position for us */
	uint64_t ps_epoch;	/* the C-PS's epoch, 0: not known */
	uint64_t ps_restarts;	/* ps_epoch changes seen */
};
const struct sma_nb_status *sma_nb_status(const struct sma_nb *nb);

/* The delay before retry round r (1, 2, 4 .. max, +/- jitter). */
uint64_t sma_nb_backoff(const struct sma_nb_conf *c, unsigned round,
    uint64_t *rng);

#endif
