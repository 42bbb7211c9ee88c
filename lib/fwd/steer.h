/*
 * steer.h - site-local steering at the egress (seed 000 §10.3; cats-sma(1)
 * LOCAL STEERING, cats-fwd(1) LOCAL STEERING): the table of the redirects
 * a co-located C-SMA decided while it was partitioned from the C-PS, kept
 * from its steer records (cats-records(5)), and the rewrite of the packets
 * they move.  Pure: the caller passes the time in (wall ms, the clock of
 * the records' until) and the identity that signed each record.
 *
 * Rules (cats-records(5) steer): one redirect per cs_id and from; a
 * redirect replaces the one before, an end removes it, a redirect is over
 * at its until without a record; a record of a higher epoch of the same
 * sma_id ends every redirect of a lower one, a record of a lower epoch is
 * refused (stale), and within an epoch seq is strictly increasing (a
 * replay is refused).  A record is refused too when it is signed by
 * another identity than its sma_id, names another egress, is a redirect
 * without from_locator or until, whose until has passed (expired), whose
 * two locators are of different families, or when the table is full.
 * A refused record changes nothing.
 *
 * Rewrite: a packet from the core to the failed instance's locator (and
 * from_port, when the record has one) goes to the redirect's locator
 * instead (and its port, when the record has both ports); a reply of the
 * site from that target to a flow that was moved has its source put back
 * (the client sees the address it sent to).
 */
#ifndef CATS_FWD_STEER_H
#define CATS_FWD_STEER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/cats.h"
#include "rec/rec.h"

#define CATS_FSTEER_MAX 256	/* redirects in force */
#define CATS_FSTEER_SMAS 16	/* C-SMAs (sma_id) remembered */

struct cats_fsteer_ent {
	char sma_id[CATS_ID + 1], cs_id[CATS_ID + 1], from[CATS_ID + 1],
	    to[CATS_ID + 1];
	uint64_t epoch, until;
	struct cats_ip from_loc, to_loc;
	uint16_t from_port, to_port;
	bool ports;		/* both ports given: the port is rewritten too */
};

struct cats_fsteer_sma {
	char id[CATS_ID + 1];
	uint64_t epoch, seq;
};

struct cats_fsteer_stats {
	uint64_t records;	/* accepted */
	uint64_t refused;	/* refused by the rules (one line each) */
	uint64_t bad;		/* undecodable, not steer, or not verified */
	uint64_t redirects, ends;	/* accepted, by op */
	uint64_t expired;	/* redirects over at their until */
	uint64_t fenced;	/* redirects ended by a higher epoch */
	uint64_t fwd_pkts;	/* packets delivered to a redirect's target */
	uint64_t rev_pkts;	/* replies whose source was put back */
};

struct cats_fsteer {
	const char *egress;	/* this forwarder's --id: records for another are refused */
	struct cats_fsteer_ent ent[CATS_FSTEER_MAX];
	unsigned n;
	struct cats_fsteer_sma sma[CATS_FSTEER_SMAS];
	unsigned nsma;
	struct cats_fsteer_stats st;
	/*
	 * Called with each redirect that comes into force (accepted, new or
	 * replacing one), before the next packet: the packet path takes the
	 * flows it matches off its fast path (cats_fwdp_steer()).  NULL:
	 * nobody is told.
	 */
	void (*moved)(const struct cats_fsteer_ent *e, void *arg);
	void *moved_arg;
};

void cats_fsteer_init(struct cats_fsteer *t, const char *egress);
/*
 * Apply a verified steer record signed by signer (the key's identity) at
 * now: 0 when accepted, -1 with a one-line reason in err when refused
 * (counted).
 */
int cats_fsteer_apply(struct cats_fsteer *t, const struct cats_steer *r,
    const char *signer, uint64_t now, char *err, size_t errlen);
/* Drop the redirects whose until has passed at now (counted expired). */
void cats_fsteer_expire(struct cats_fsteer *t, uint64_t now);
/* Whether redirect e moves packets to addr:port (af 4 or 6). */
bool cats_fsteer_match(const struct cats_fsteer_ent *e, uint8_t af,
    const uint8_t *addr, uint16_t port);
/* The redirect of packets to addr:port (af 4 or 6), or NULL. */
const struct cats_fsteer_ent *cats_fsteer_fwd(struct cats_fsteer *t,
    uint8_t af, const uint8_t *addr, uint16_t port, uint64_t now);
/* A redirect whose target is addr:port (its replies), the next one after
 * prev (NULL: the first), or NULL: several instances may be redirected to
 * one target, the caller tries each. */
const struct cats_fsteer_ent *cats_fsteer_rev(struct cats_fsteer *t,
    uint8_t af, const uint8_t *addr, uint16_t port, uint64_t now,
    const struct cats_fsteer_ent *prev);

/*
 * The local channel the records come in on (--steer ENDPOINT): a unix: or
 * tcp: endpoint listened on through net/listener.h, each connection a
 * CBOR record stream (rec/seq.h).  Each record must be a steer record
 * signed by a key of kr (--steer-keys; cats_rec_verify) whose identity is its sma_id;
 * one that is not, or that the table refuses, is one line (steer: ...),
 * counted (steer_bad, steer_refused).  now is the wall clock (ms).
 * A connection is authenticated by its first verified record; hello_ms
 * (--hello-timeout) closes one that has sent none by then, 0 only under
 * a flood (more than 8 of 16 unauthenticated), after 10 s.
 */
struct event_base;
struct cats_keyring;
struct cats_fsteer_in;
struct cats_fsteer_in *cats_fsteer_listen(struct event_base *base,
    const char *spec, struct cats_fsteer *t, const struct cats_keyring *kr,
    uint64_t (*now)(void), uint64_t hello_ms, char *err, size_t errlen);
void cats_fsteer_in_free(struct cats_fsteer_in *in);

#endif
