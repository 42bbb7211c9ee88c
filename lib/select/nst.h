/*
 * nst.h - the Network Service Table of the C-PS (001 §5): what the selector
 * knows about the network from an ingress headend to each egress.
 *
 * The NST is a small provider interface so that where the view comes from
 * does not concern the selection code.  A struct cats_nst is an ordered list
 * of providers; a lookup asks each in turn and the first that knows the pair
 * (any status but UNKNOWN) answers.  Two providers exist or are planned:
 *
 *   - the record provider below: `net` records of scope path (headend ->
 *     egress delay, bandwidth, hop count, reachability), each with its own
 *     freshness;
 *   - a TE-database provider (cats-pce's library): distance from the headend
 *     to every egress, computed once per headend and cached per TE database
 *     generation.  It implements struct cats_nst_provider and is added with
 *     cats_nst_add(); nothing in select.c changes.
 *
 * A provider never invents computing capability: it only says how the
 * network reaches an egress node (001 §5: "MUST NOT infer a computing
 * capability from a network path record").
 */
#ifndef CATS_NST_H
#define CATS_NST_H

#include "rec/rec.h"

enum cats_nst_status {
	CATS_NST_OK,		/* reachable, fresh */
	CATS_NST_UNKNOWN,	/* this provider knows nothing of the pair */
	CATS_NST_DOWN,		/* known and unreachable (fresh) */
	CATS_NST_STALE,		/* known, but the view has expired */
};
extern const char *const cats_nst_status_names[];

/* One headend -> egress view. */
struct cats_nst_path {
	int status;		/* enum cats_nst_status */
	bool up;		/* the view's reachability (also when STALE) */
	bool has_delay, has_bw, has_hops;
	uint64_t delay_us;
	uint64_t avail_bw;	/* bit/s */
	uint64_t hops;
	uint64_t ts;		/* measurement time */
	uint64_t expires;	/* fresh while now < expires (UINT64_MAX) */
	uint64_t gen;		/* provider generation of this view */
	const char *provider;	/* the provider's name */
};

struct cats_nst_provider {
	const char *name;
	/*
	 * Fill out for headend -> egress at now and return out->status.
	 * STALE is returned with the last known values filled in; a caller
	 * with a configured tolerance may use them (see cats-select(1)).
	 */
	int (*lookup)(void *ctx, const char *headend, const char *egress,
	    uint64_t now, struct cats_nst_path *out);
	/* The provider's generation: grows whenever its view changes. */
	uint64_t (*gen)(const void *ctx);
	/* Optional: the view as `net` records; non-zero from fn stops. */
	int (*dump)(const void *ctx, uint64_t now,
	    int (*fn)(const struct cats_rec *r, void *arg), void *arg);
	/* Optional: purge views expired for at least grace_ms. */
	size_t (*expire)(void *ctx, uint64_t now, uint64_t grace_ms);
	/* Optional: release ctx (called by cats_nst_free). */
	void (*free)(void *ctx);
	/*
	 * Optional: lookup for each of n egresses at once (out[i] as lookup
	 * would fill it, status in out[i].status), so that the provider can
	 * overlap their memory accesses; the names come with their
	 * cats_hash_str values.
	 */
	void (*lookup_many)(void *ctx, const char *headend, uint64_t headend_h,
	    const char *const *egress, const uint64_t *egress_h, size_t n,
	    uint64_t now, struct cats_nst_path *out);
};

#define CATS_NST_MAX_PROVIDERS 4

struct cats_nst {
	size_t n;
	struct {
		const struct cats_nst_provider *ops;
		void *ctx;
	} p[CATS_NST_MAX_PROVIDERS];
};

void cats_nst_init(struct cats_nst *n);
/* Append a provider (consulted after those added before); -1 if full. */
int cats_nst_add(struct cats_nst *n, const struct cats_nst_provider *ops,
    void *ctx);
/* Ask the providers in order; UNKNOWN if none knows the pair. */
int cats_nst_lookup(const struct cats_nst *n, const char *headend,
    const char *egress, uint64_t now, struct cats_nst_path *out);
/*
 * cats_nst_lookup for each of n egresses from one headend: out[i] and its
 * status as cats_nst_lookup(headend, egress[i]) gives them, faster where a
 * provider has lookup_many.  headend_h and egress_h[i] are the names'
 * cats_hash_str values, which the caller keeps (the CST has them).
 */
void cats_nst_lookup_many(const struct cats_nst *n, const char *headend,
    uint64_t headend_h, const char *const *egress, const uint64_t *egress_h,
    size_t k, uint64_t now, struct cats_nst_path *out);
/* The NST generation: the sum of the providers' generations. */
uint64_t cats_nst_gen(const struct cats_nst *n);
int cats_nst_dump(const struct cats_nst *n, uint64_t now,
    int (*fn)(const struct cats_rec *r, void *arg), void *arg);
size_t cats_nst_expire(struct cats_nst *n, uint64_t now, uint64_t grace_ms);
/* Free the providers that have a free function. */
void cats_nst_free(struct cats_nst *n);

/*
 * The record provider: `net` records of scope path, keyed by (src = headend,
 * dst = egress).  A record replaces the stored view unless it is older: a
 * lower gen when both carry one, else an earlier ts.  Soft state: fresh while
 * now < min(ts, now) + ttl (the record's ttl_ms, else default_ttl_ms).  A
 * record without `up` means reachable (it measured the path).  Other scopes
 * (link, node) are not for this provider and are left to the caller.
 */
struct cats_nst_rec;

struct cats_nst_rec *cats_nst_rec_new(uint64_t default_ttl_ms,
    size_t max_paths);
/* 1 applied, 0 ignored (older than the stored view, or not scope path), -1
 * refused (the table is full, or no memory) with err set. */
int cats_nst_rec_apply(struct cats_nst_rec *r, const struct cats_net *m,
    uint64_t now, struct cats_err *err);
size_t cats_nst_rec_count(const struct cats_nst_rec *r);
extern const struct cats_nst_provider cats_nst_rec_provider;

/*
 * The TE-database provider: the least-delay path over the links that are
 * up (tedist.h), from the headend to each egress; delay and hop count of
 * that path; DOWN when no path exists; UNKNOWN for nodes the database does
 * not have.  The view does not age (the database is not soft state): it
 * changes when net records of scope link or node are applied to the
 * database or a new database is set.  The generation is the database's.
 */
struct cats_te;
struct cats_nst_tedb;

struct cats_nst_tedb *cats_nst_tedb_new(unsigned max_headends);
/* Use te from now on (NULL: none); the caller owns and frees it. */
void cats_nst_tedb_set(struct cats_nst_tedb *p, const struct cats_te *te);
extern const struct cats_nst_provider cats_nst_tedb_provider;

#endif
