/*
 * fallback.h - the configured ingress fallback of a CATS-Forwarder (001:
 * "only a fallback explicitly configured for that service"; it "MUST be
 * explicitly configured and auditable").
 *
 * For a service that configures it (--fallback CSID=MAX), when the C-PS
 * does not answer a new flow within the pending deadline or its channel is
 * down, the ingress binds the flow itself to one of the last candidates the
 * C-PS told it were eligible: the instances (locator, port) and paths of
 * the bindings it installed for that CS-ID, each eligible for the
 * candidates' soft-state lifetime (--fallback-ttl) after the last binding
 * that named it.  The choice is Maglev consistent hashing (Eisenbud et al.,
 * NSDI 2016) of the flow's 5-tuple over the candidates, so that most flows
 * keep their instance as candidates come and go.  The C-PS's silence is
 * bounded too: no fallback more than MAX after the first unanswered flow
 * or channel failure since its last answer.  Never for a service that does
 * not configure it, never without an eligible candidate.
 *
 * Pure logic: time is passed in (ms); the packet path (path.c) makes the
 * bindings, audits them and reports them when the C-PS is back.
 */
#ifndef CATS_FWD_FALLBACK_H
#define CATS_FWD_FALLBACK_H

#include "fwd/fwd.h"

#define CATS_IFB_SERVICES	16
#define CATS_IFB_CANDS		64	/* candidates per service */
#define CATS_IFB_TABLE		4093	/* Maglev lookup table (a prime) */

/* A candidate: where a flow of the service may go and by which path. */
struct cats_ifb_cand {
	uint8_t af;
	uint8_t locator[16];
	uint16_t port;			/* 0: the flow's destination port */
	struct cats_encap enc;		/* toward the egress */
	uint8_t fkind, rkind;		/* CATS_DP_* both ways */
	char egress[CATS_ID + 1];
	uint64_t idle_ms, hard_ms;	/* of the binding it came from */
	uint64_t expires;		/* ms: its soft state ends */
};

struct cats_ifb_svc {
	char cs_id[CATS_ID + 1];
	uint64_t max_ms;		/* the longest the C-PS may be silent */
	struct cats_ifb_cand c[CATS_IFB_CANDS];
	unsigned n;
	bool dirty;			/* the table is to be made again */
	uint8_t table[CATS_IFB_TABLE];	/* candidate index per slot */
	unsigned nlive;			/* candidates in the table */
};

struct cats_ifb {
	struct cats_ifb_svc s[CATS_IFB_SERVICES];
	unsigned n;
	uint64_t ttl_ms;		/* candidates' soft state (30000) */
	uint64_t silent_since;		/* 0: the C-PS answers */
};

/* Parse CSID=MAX (a duration) into fb; -1 with a message in err. */
int cats_ifb_parse(struct cats_ifb *fb, const char *arg, char *err,
    size_t errlen);
/* The service's fallback, or NULL when it configures none. */
struct cats_ifb_svc *cats_ifb_svc(struct cats_ifb *fb, const char *cs_id);

/*
 * A binding of the C-PS at this ingress (installed or refreshed) for
 * service cs_id: its instance and path become (again) a candidate of the
 * service for ttl_ms.
 */
void cats_ifb_learn(struct cats_ifb *fb, const struct cats_fbind *b,
    const char *cs_id, const char *egress, uint64_t now);
/* The C-PS answered (a binding or an error): it is not silent. */
void cats_ifb_answer(struct cats_ifb *fb);
/* A new flow went unanswered (deadline, channel down) at now. */
void cats_ifb_silent(struct cats_ifb *fb, uint64_t now);

/* Why no fallback: the reasons cats_ifb_pick() gives. */
enum { CATS_IFB_OK, CATS_IFB_NONE, CATS_IFB_TOO_LONG, CATS_IFB_NO_CAND };
extern const char *const cats_ifb_why[];

/*
 * The candidate for a flow of service s (its 5-tuple hash h) at now: the
 * Maglev table's choice among the candidates whose soft state has not
 * ended.  Returns CATS_IFB_OK with *out, or why not.
 */
int cats_ifb_pick(struct cats_ifb *fb, struct cats_ifb_svc *s, uint64_t h,
    uint64_t now, const struct cats_ifb_cand **out);
/* The flow hash the table is looked up with (stable across runs). */
uint64_t cats_ifb_flow_hash(const struct cats_fkey *k);

/* Build the Maglev table of candidates live[0..n) (indexes into s->c). */
void cats_ifb_maglev(struct cats_ifb_svc *s, const unsigned *live, unsigned n);

#endif
