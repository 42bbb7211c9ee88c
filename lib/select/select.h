/*
 * select.h - C-PS service selection (001 §4-§8): from a forwarder's
 * `request` to a `path-req` carrying the decision, or to an `error` that
 * closes the transaction.
 *
 * For each request, in this order (cats-select(1) describes every rule):
 *
 *  1. Authentication: a COSE_Mac0/Sign1 over the record by the key whose
 *     name is the request's ingress, or, on a unix socket without a MAC,
 *     peer credentials that match the forwarder's configured uid.  A MAC
 *     that does not verify is refused even where none is needed.
 *  2. Freshness: the timestamp within +/- window of now; the request
 *     generation not below the forwarder's last one; the transaction id not
 *     seen before in this generation (a 64-transaction sliding window);
 *     the deadline not passed.
 *  3. Metadata: tenant of the request and of the flow agree; explicit
 *     metadata only with carriage mode a or b; the forwarder may speak for
 *     the tenant; admission limits (global, per tenant, per client).
 *  4. CS-ID resolution: explicit CS-ID and/or the destination-address
 *     mapping.  When both resolve and disagree, the request is refused
 *     unless the configured precedence (explicit or address) picks one.
 *     Service tenant and request tenant must agree.
 *  5. Eligibility of each CST candidate, in the order of enum cats_rej.
 *  6. Joint selection by the service's policy, ties broken by a seeded key.
 *  7. A fallback configured for the service, if selection failed.
 *
 * Randomness (p2c-gas draws, tie-breaks) comes from a per-request seed
 * derived from the configured seed, the ingress and the transaction id, so
 * that a replay of the same records reproduces the same decisions whatever
 * the interleaving of forwarders.
 */
#ifndef CATS_SELECT_H
#define CATS_SELECT_H

#include "sec/crypto.h"
#include "select/cst.h"
#include "base/htab.h"
#include "select/nst.h"
#include "select/svc.h"

/* Reason codes of error records (cats-select(1) REASON CODES). */
enum cats_sel_code {
	CATS_SEL_OK,
	CATS_SEL_MALFORMED,		/* malformed-request */
	CATS_SEL_UNAUTHENTICATED,	/* unauthenticated */
	CATS_SEL_UNAUTHORIZED,		/* unauthorized */
	CATS_SEL_REPLAY,		/* replay */
	CATS_SEL_STALE_GEN,		/* stale-generation */
	CATS_SEL_EXPIRED,		/* deadline-expired */
	CATS_SEL_RATE,			/* rate-limited */
	CATS_SEL_TENANT,		/* tenant-mismatch */
	CATS_SEL_UNRESOLVED,		/* unresolved-service */
	CATS_SEL_UNKNOWN_CSID,		/* unknown-cs-id */
	CATS_SEL_AMBIGUOUS,		/* ambiguous-address */
	CATS_SEL_CONFLICT,		/* cs-id-conflict */
	CATS_SEL_DATAPLANE,		/* dataplane-mismatch */
	CATS_SEL_NO_CANDIDATE,		/* no-candidate */
	CATS_SEL_NO_ELIGIBLE,		/* no-eligible-candidate */
	CATS_SEL_NO_REACHABLE,		/* no-reachable-egress */
	CATS_SEL_STALE,			/* stale-data */
	CATS_SEL__N
};
extern const char *const cats_sel_code_names[];

/*
 * Why a candidate is not eligible, in the order the checks run.  When no
 * candidate is eligible, the error code follows the candidate that got
 * furthest: cst-stale and nst-stale give stale-data, unreachable gives
 * no-reachable-egress, the others no-eligible-candidate.
 */
enum cats_rej {
	CATS_REJ_OK,
	CATS_REJ_UNAUTHORIZED,	/* CSCI-ID or site not authorized */
	CATS_REJ_INCOMPLETE,	/* no locator or no egress */
	CATS_REJ_CST_STALE,	/* soft state expired */
	CATS_REJ_UNHEALTHY,	/* not HEALTHY/DEGRADED, or FAILED/STALE */
	CATS_REJ_GAS_ZERO,	/* GAS 0 or not reported */
	CATS_REJ_MAX_COMP,	/* computing time over max_comp_ms, unknown */
	CATS_REJ_MAX_PRICE,
	CATS_REJ_MIN_REPUTATION,
	CATS_REJ_MIN_SECURITY,
	CATS_REJ_UNREACHABLE,	/* no NST view of headend -> egress, or down */
	CATS_REJ_NST_STALE,	/* the NST view expired */
	CATS_REJ_MAX_DELAY,	/* network delay over max_delay_us, unknown */
	CATS_REJ_MIN_BW,	/* known available bandwidth below min_bw */
	CATS_REJ_MAX_HOPS,	/* known hop count above max_hops */
	CATS_REJ_METRIC,	/* lacks a metric the policy ranks on */
	CATS_REJ__N
};
extern const char *const cats_rej_names[];

enum cats_precedence {
	CATS_PREC_REJECT,	/* disagreement is refused (default) */
	CATS_PREC_EXPLICIT,	/* the explicit CS-ID wins */
	CATS_PREC_ADDRESS,	/* the address mapping wins */
};
extern const char *const cats_precedence_names[];

/* A token bucket rate: per_s requests a second, bursts of burst. */
struct cats_rate {
	uint64_t per_s;		/* 0: no limit */
	uint64_t burst;
};

struct cats_sel_conf {
	int precedence;			/* enum cats_precedence */
	int policy;			/* when the service names none */
	uint64_t seed;
	const char *domain;		/* routing domain of path requests */
	int dataplane;			/* when neither service nor request */
	uint64_t window_ms;		/* request timestamp window, 0: off */
	bool insecure;			/* accept unauthenticated requests */
	bool no_cache;			/* no eligibility cache */
	size_t cache_max;		/* cache entries (0: 65536) */
	const struct cats_keyring *keys;	/* names = forwarder ids */
	struct cats_rate rate_global, rate_tenant, rate_client;
};

void cats_sel_conf_init(struct cats_sel_conf *c);

/* How a request arrived. */
struct cats_sel_origin {
	bool peercred;		/* a unix socket with known peer credentials */
	uint32_t uid;
};

/* The answer to one request; records point into out, the request, the
 * catalogue and the tables, valid until any of them changes. */
struct cats_sel_out {
	int code;		/* CATS_SEL_OK: a path-req; else an error */
	bool fallback;		/* a configured fallback was used */
	bool routable;		/* the error names ingress and flow */
	struct cats_rec rec;
	char msg[256];
	char field[64];
	uint32_t rej[CATS_REJ__N];	/* candidates rejected, by reason */
	const char *xnodes[128], *xlinks[128];
	uint64_t xsrlgs[128];
};

struct cats_sel_counters {
	uint64_t requests;
	uint64_t decisions;
	uint64_t fallbacks;
	uint64_t precedence;	/* disagreements settled by precedence */
	uint64_t cache_hits;	/* eligibility reused (see select.c) */
	uint64_t fail[CATS_SEL__N];
	uint64_t reject[CATS_REJ__N];
};

struct cats_sel;

/* A selector over a catalogue and the two tables (not owned). */
struct cats_sel *cats_sel_new(const struct cats_sel_conf *conf,
    const struct cats_svc_cat *cat, const struct cats_cst *cst,
    const struct cats_nst *nst);
void cats_sel_free(struct cats_sel *s);
/* Swap the catalogue (a reload). */
void cats_sel_set_catalogue(struct cats_sel *s, const struct cats_svc_cat *cat);

/*
 * A configured forwarder: the uid its unix-socket connections must have to
 * be trusted without a MAC (has_uid), and the tenants it may request for
 * (none: any).  Returns -1 on allocation failure.
 */
int cats_sel_forwarder(struct cats_sel *s, const char *id, bool has_uid,
    uint32_t uid, const char *const *tenants, size_t ntenants);

/* Answer one request record (r->type must be CATS_T_REQUEST). */
int cats_sel_request(struct cats_sel *s, const struct cats_rec *r,
    const struct cats_sel_origin *o, uint64_t now, struct cats_sel_out *out);

/*
 * The error for a request that could not be decoded: the index of the bad
 * record, the field and reason, the transaction id if one could be read.
 */
void cats_sel_malformed(struct cats_sel *s, const struct cats_err *e,
    uint64_t index, bool has_txn, uint64_t txn, uint64_t now,
    struct cats_sel_out *out);

const struct cats_sel_counters *cats_sel_counters(const struct cats_sel *s);


#endif
