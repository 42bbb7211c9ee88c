/*
 * svc.h - the service catalogue of the C-PS: service contexts from `service`
 * records (001 §5, CMAS-style registry).
 *
 * A service context names a CS-ID, its version, the tenant it belongs to
 * (absent: every tenant), its service addresses (virtual, anycast or
 * dedicated; each optionally narrowed to a port, a protocol and a tenant),
 * the CSCI-IDs and sites authorized to serve it, default hard constraints,
 * the joint-selection policy and its version, the affinity key, the binding
 * lifetimes, the data plane and an optional fallback.
 *
 * A record replaces the context of its CS-ID unless its version is lower
 * (a lower version is ignored; the same version is applied again).  A record
 * that names an unknown policy or a malformed fallback is refused as a
 * whole, and the old context stays.
 */
#ifndef CATS_SVC_H
#define CATS_SVC_H

#include "rec/rec.h"

/* Joint-selection policies (cats-select(1) POLICIES). */
enum cats_policy {
	CATS_POL_MIN_LATENCY,	/* network delay + computing time, then GAS */
	CATS_POL_P2C_GAS,	/* GAS-weighted power of two choices */
	CATS_POL_CHEAPEST,	/* lowest price, then latency, then GAS */
	CATS_POL__N
};
extern const char *const cats_policy_names[];
int cats_policy_from_name(const char *s);

/* Fallback terms, tried in order when a selection fails (cats-select(1)). */
enum cats_fb_kind {
	CATS_FB_STALE,		/* stale:DURATION: recently expired data */
	CATS_FB_RELAX,		/* relax:FIELD[+FIELD]: drop computing limits */
	CATS_FB_CSCI,		/* csci:ID - a designated authorized instance */
};
extern const char *const cats_fb_kind_names[];

struct cats_fb_term {
	int kind;
	uint64_t ms;		/* stale */
	uint64_t relax;		/* relax: bits 1 << CATS_CON_* */
	char *csci;		/* csci */
};

#define CATS_FB_MAX 4

/* The computing constraints a relax term may drop. */
#define CATS_FB_RELAXABLE ((UINT64_C(1) << CATS_CON_max_comp_ms) | \
	(UINT64_C(1) << CATS_CON_max_price) | \
	(UINT64_C(1) << CATS_CON_min_reputation) | \
	(UINT64_C(1) << CATS_CON_min_security))

/* Parse a fallback ("none", or terms separated by ','). */
int cats_fb_parse(const char *text, struct cats_fb_term *v, size_t *n,
    struct cats_err *err);

struct cats_svc_addr {
	struct cats_ip ip;
	int kind;		/* enum cats_addr_kind, -1 if absent */
	bool has_port, has_proto;
	uint64_t port, proto;
	char *tenant;		/* NULL: the service's tenant */
};

struct cats_svc {
	char *cs_id;
	uint64_t cs_h;		/* cats_hash_str(cs_id), for the CST's lookups */
	uint64_t version;
	uint64_t has;		/* optional fields present: CATS_SVC_* bits */
	char *tenant;		/* NULL: every tenant */
	struct cats_svc_addr *addrs;
	size_t naddrs;
	char **authorized;	/* sorted */
	size_t nauth;
	char **sites;		/* sorted */
	size_t nsites;
	struct cats_constraints con;	/* arrays owned (see svc.c) */
	int policy;		/* enum cats_policy, when has policy */
	uint64_t policy_version;
	int affinity, on_failure, dataplane;
	uint64_t port, idle_ms, hard_ms;
	char *fallback;		/* the text */
	struct cats_fb_term fb[CATS_FB_MAX];
	size_t nfb;
	uint64_t max_stale_ms;	/* largest stale: term, 0 if none */
};

/* The best address matches of a destination (cats_svc_by_addr). */
#define CATS_SVC_MATCH_MAX 8
struct cats_svc_match {
	const struct cats_svc *v[CATS_SVC_MATCH_MAX];
	size_t n;		/* services at the best specificity */
	bool tenant_excluded;	/* an address matched but not for the tenant */
};

struct cats_svc_cat;

struct cats_svc_cat *cats_svc_cat_new(size_t max_services);
void cats_svc_cat_free(struct cats_svc_cat *c);

/* 1 applied, 0 ignored (older version), -1 refused with err set. */
int cats_svc_apply(struct cats_svc_cat *c, const struct cats_service *s,
    struct cats_err *err);

const struct cats_svc *cats_svc_get(const struct cats_svc_cat *c,
    const char *cs_id);

/*
 * The services whose addresses match the flow's destination for a tenant.
 * An address entry matches when its address equals the destination, its
 * port (if it names one) equals the destination port, its protocol (if
 * any) equals the flow's, and its tenant (the entry's, else the service's;
 * none: any tenant) equals the tenant.  The most specific entries win (one
 * point each for port, protocol and tenant); m->n > 1 means that several
 * services tie at the top: the address is ambiguous.
 */
void cats_svc_by_addr(const struct cats_svc_cat *c, const struct cats_flow *f,
    const char *tenant, struct cats_svc_match *m);

/*
 * Is a candidate authorized for the service: it must be named by the
 * service's `authorized` list (when present) and its site by the `sites`
 * list (when present); a service with neither list authorizes nothing.
 */
bool cats_svc_authorized(const struct cats_svc *s, const char *csci_id,
    const char *site);

size_t cats_svc_count(const struct cats_svc_cat *c);
/* Grows on every applied service record. */
uint64_t cats_svc_gen(const struct cats_svc_cat *c);
/* The largest stale: fallback tolerance of any service. */
uint64_t cats_svc_max_stale(const struct cats_svc_cat *c);

#endif
