/*
 * pcep_srv.h - PCEP on TCP (port 4189) on a libevent loop: one
 * cats_pcep_sess per connection, accepted through net/listener.h or
 * connected by the caller (a PCC), with the bytes moved, the timers armed
 * and the bounds kept here.
 *
 * Bounds.  At most max_sessions connections, of which at most max_unauth
 * are not up yet (the listener's caps: an excess connection evicts the
 * oldest session not up, or is refused); a session not up within OpenWait
 * + KeepWait is ended by the session itself (PCErr 1/2 or 1/7), and by the
 * listener a few seconds later if it still holds the descriptor; once up,
 * the dead timer.  Per peer: max_out bytes may wait to be sent (a peer
 * that does not read is dropped), the input is read at most 64 KiB at a
 * time and drained before more is read.  Peers outside allow are refused
 * at accept; a second session from an address that has one gets PCErr 9
 * (attempt to establish a second PCEP session, RFC 5440 section 6.1) and
 * is closed.  Everything refused or answered is reported to note() for
 * the audit.
 *
 * The clock is cats_clock_now() (base/clock.h): this is the loop's glue,
 * the protocol underneath takes `now`.
 */
#ifndef CATS_PCEP_SRV_H
#define CATS_PCEP_SRV_H

#include "pce/pcep.h"

struct event_base;
struct cats_pcep_srv;
struct cats_pcep_peer;

struct cats_pcep_srv_conf {
	struct cats_pcep_conf sess;	/* every session: role, timers, caps */
	size_t max_sessions;		/* 0: 256 */
	size_t max_unauth;		/* not up yet; 0: max_sessions / 4 */
	size_t max_out;			/* bytes queued to a peer; 0: 1 MiB */
	const struct cats_prefix *allow;	/* peers allowed (none: any) */
	size_t nallow;
	bool many_per_peer;		/* allow several sessions per address */
};

/* What note() reports. */
enum {
	CATS_PCEP_NOTE_ANSWERED,	/* the speaker answered by itself (st) */
	CATS_PCEP_NOTE_REFUSED,		/* a peer outside allow */
	CATS_PCEP_NOTE_SECOND,		/* a second session: PCErr 9 */
	CATS_PCEP_NOTE_SLOW,		/* max_out exceeded: dropped */
	CATS_PCEP_NOTE_EVICTED,		/* the listener closed it (caps) */
};
extern const char *const cats_pcep_note_names[];

struct cats_pcep_srv_cbs {
	/* The session is up. */
	void (*up)(struct cats_pcep_peer *p, void *arg);
	/* A PCReq, PCRep, PCErr or PCNtf (valid during the call). */
	void (*msg)(struct cats_pcep_peer *p, const struct cats_pcep_msg *m,
	    void *arg);
	/* For audit lines (p may be NULL: refused before a session). */
	void (*note)(struct cats_pcep_peer *p, const char *peer, int what,
	    const struct cats_pcep_status *st, void *arg);
	/* The session is over (st says why); p is freed on return. */
	void (*closed)(struct cats_pcep_peer *p,
	    const struct cats_pcep_status *st, void *arg);
};

struct cats_pcep_srv_stats {
	uint64_t accepted, refused, second, slow, evicted, closed;
	size_t sessions, up;
};

struct cats_pcep_srv *cats_pcep_srv_new(struct event_base *base,
    const struct cats_pcep_srv_conf *c, const struct cats_pcep_srv_cbs *cbs,
    void *arg);
/* Accept on a listening TCP socket (cats_ep_listen; the caller's fd).
 * -1 when out of memory. */
int cats_pcep_srv_listen(struct cats_pcep_srv *srv, int fd);
/* A session on a connected socket (a PCC's, from cats_ep_open): the
 * server owns fd from now on.  NULL when out of memory (fd closed). */
struct cats_pcep_peer *cats_pcep_srv_attach(struct cats_pcep_srv *srv,
    int fd, const char *name);
/* Close every session (Close, reason 1) and free. */
void cats_pcep_srv_free(struct cats_pcep_srv *srv);
void cats_pcep_srv_get_stats(const struct cats_pcep_srv *srv,
    struct cats_pcep_srv_stats *st);

struct cats_pcep_sess *cats_pcep_peer_sess(struct cats_pcep_peer *p);
/* "ADDR:PORT" of the peer. */
const char *cats_pcep_peer_name(const struct cats_pcep_peer *p);
void cats_pcep_peer_set_data(struct cats_pcep_peer *p, void *data);
void *cats_pcep_peer_data(const struct cats_pcep_peer *p);
/* Send (the session must be up); -1 when it is not or cannot encode. */
int cats_pcep_peer_send_reqs(struct cats_pcep_peer *p,
    const struct cats_pcep_req *r, size_t n);
int cats_pcep_peer_send_reps(struct cats_pcep_peer *p,
    const struct cats_pcep_rep *r, size_t n);
int cats_pcep_peer_send_err(struct cats_pcep_peer *p, const uint32_t *ids,
    size_t nids, uint8_t type, uint8_t value);
/* A reply named no request of ours (PCC): PCErr 8, counted (pcep.h). */
void cats_pcep_peer_unknown_ref(struct cats_pcep_peer *p, uint32_t id);
/* End the session with a Close (reason); closed() follows. */
void cats_pcep_peer_close(struct cats_pcep_peer *p, uint8_t reason);

/*
 * TCP-MD5 (RFC 2385, RFC 5440 section 10.2), as the kernel provides it.
 * The key file holds the key as text (1 to 80 bytes, one trailing newline
 * dropped).  cats_pcep_md5_set() installs the key on fd (a listening
 * socket: for peers in prefix; a socket about to connect: prefix is the
 * peer's host prefix); a segment without the right signature never
 * reaches the session.  Each returns 0, or -1 with err.
 */
#define CATS_PCEP_MD5_MAX 80
int cats_pcep_md5_load(const char *path, uint8_t *key, size_t *len,
    char *err, size_t errlen);
int cats_pcep_md5_set(int fd, const struct cats_prefix *prefix,
    const uint8_t *key, size_t len, char *err, size_t errlen);

#endif
