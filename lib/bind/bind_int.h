/*
 * bind_int.h - the binding table's private header: what the files of
 * lib/bind share and nothing outside it includes (bind.h is the contract).
 *
 * Layout.  A flow is one 64-byte entry (struct bent) in a chunked slab, so
 * entries never move and a 32-bit entry number names one.  What many flows
 * share is interned once and reference-counted: strings (forwarder ids,
 * CS-IDs, tenants), "classes" (the decision and the flow's service side:
 * ingress, egress, instance, locator, service address, lifetimes,
 * generations) and paths (encapsulation, segment list, tunnel destination,
 * path id).  The client's source address is in the entry: an IPv4 one
 * inline, whose client's admission counts are kept, keyed by (tenant,
 * address), only while it has pending or bound flows; an IPv6 one as the
 * handle of an interned client (tenant, address, counts).  Entries are
 * found by binding id and by flow key through compact Robin Hood indexes
 * of entry numbers (8 bytes a slot with a hash tag, up to 7/8 full,
 * growing in steps of a quarter); transactions in flight and the interned
 * objects, which are few, use cats_htab.  Arrays of 2 MiB and more are
 * mapped on huge pages.  The containers, and why they are not cats_htab,
 * are in bind_store.h.  Deadlines and lifetimes sit on a hashed timing
 * wheel (doubly linked through the entries), so that a tick costs what is
 * due, not the table size.
 *
 * The files: bind.c (the table, accessors, invariants), bind_obj.c
 * (interned objects), bind_index.c (indexes and the timing wheel),
 * bind_fsm.c (the state machine), bind_input.c (the records in),
 * bind_restore.c (restore), bind_journal.c (the journal), bind_store.c
 * (the containers).  Functions one file lends another are bt_*; the inline
 * accessors below are not linked and keep short names.
 */
#ifndef CATS_BIND_INT_H
#define CATS_BIND_INT_H

#include "bind/bind.h"
#include "base/htab.h"
#include "bind/bind_store.h"

/* The states of 001, short. */
enum {
	S_ABSENT = CATS_FS_ABSENT,
	S_PENDING = CATS_FS_PENDING,
	S_DS = CATS_FS_DESTINATION_SELECTED,
	S_READY = CATS_FS_BINDING_READY,
	S_ACTIVE = CATS_FS_ACTIVE,
	S_DRAINING = CATS_FS_DRAINING,
	S_FAILED = CATS_FS_FAILED,
	S_RECONNECT = CATS_FS_RECONNECT_REQUIRED,
	S__N = 8
};

/* An interned string: a forwarder, a tenant, a CS-ID... (bind_obj.c). */
struct bstr {
	uint64_t h;
	uint32_t refs, len;
	uint32_t npend, nbind;	/* as a tenant */
	uint64_t fwd_epoch;	/* as a forwarder */
	/* As a forwarder re-synced in slices (bind_fwd_resync): the entries
	 * [rs_at, rs_end) are still to be visited; rs_next links the table's
	 * list of those under way. */
	struct bstr *rs_next;
	uint32_t rs_at, rs_end;
	bool rs_on;
	uint32_t id;		/* handle, unique among live strings */
	bool connected;
	uint8_t caps;		/* as a forwarder: what it advertised (CAP_*) */
	uint8_t srv6_msd, mpls_msd;
	char s[];
};

/* A forwarder's advertised capabilities (status caps, cats-fwd(1)). */
enum {
	CAP_KNOWN = 1, CAP_IP = 2, CAP_IPIP4 = 4, CAP_IPIP6 = 8, CAP_SRV6 = 16,
	CAP_SRMPLS = 32,
};

enum {
	K_DPORT = 1, K_PORT = 2, K_CST = 4, K_NST = 8, K_DECIDED = 16,
	K_ONFAIL = 32,
};

/* The decision and the service side of a flow; shared by many flows. */
struct bclass_key {
	struct bstr *ingress, *egress, *cs_id, *csci_id, *tenant;
	uint64_t cst_gen, nst_gen;
	uint32_t idle_ms, hard_ms;
	struct cats_ip dst, locator;
	uint16_t dport, port;
	uint8_t proto, on_failure, has;
};

struct bclass {
	struct bclass_key k;
	uint64_t h;
	uint32_t refs, handle;
};

enum { P_PID = 1, P_GEN = 2 };

/* An interned path (bind_obj.c). */
struct bpath {
	uint64_t h;
	uint32_t refs, handle;
	uint64_t path_id, gen;
	struct cats_ip tunnel_dst;
	uint8_t encap, n, has;
	struct cats_ip *sids;
	uint64_t *labels;
	/* The nodes of the path as "\0A\0B\0" (headend first), nlen 0: not
	 * known; a net record taking a link or node down finds it by them.
	 * names: the nn nodes, pointing into it (the binding's path list). */
	char *nodes;
	const char **names;
	uint16_t nlen, nn;
	bool mark;	/* bind_net(): a link or node of it went down */
};

/* What a path is interned by. */
struct pkey {
	uint8_t encap, n, has;
	const struct cats_ip *sids;
	const uint64_t *labels;
	struct cats_ip tunnel_dst;
	uint64_t path_id, gen;
	const char *nodes;	/* as in struct bpath */
	uint16_t nlen;
};

/*
 * A client is a tenant and a source address.  An entry keeps the address
 * itself (e->client): an IPv4 address inline, an IPv6 client as the handle
 * of an interned struct bv6 with its admission counts.  An IPv4 client's
 * counts live in struct bs_ctab, and only while it has pending or bound flows.
 */
struct bv6 {
	uint8_t a[16];		/* the free link when free */
	uint32_t tid;		/* tenant id */
	uint32_t refs;		/* entries */
	uint32_t npend, nbind;
};

/* One flow, forward and reverse. */
struct bent {
	uint32_t wnext, wprev;	/* timing wheel; wnext is the free link */
	uint64_t id, txn;
	uint64_t t0;		/* ACTIVE: since (hard lifetime base) */
	uint64_t t1;		/* ACTIVE: last activity / repair deadline;
				   other states: the state's deadline */
	uint32_t cls, path;
	uint32_t client;	/* IPv4 source address, or IPv6 handle */
	uint32_t version, epoch;
	uint16_t sport;
	uint8_t state, flags;
};
_Static_assert(sizeof(struct bent) == 64, "an entry is 64 bytes");

enum {
	F_SPORT = 1,		/* the flow has a source port */
	F_SENT_ING = 2,		/* the ingress holds it (sent) */
	F_SENT_EGR = 4,
	F_OK_ING = 8,		/* the ingress installed it */
	F_OK_EGR = 16,
	F_REPAIR = 32,		/* a path repair is outstanding */
	F_FLOWIDX = 64,		/* in the flow index */
	F_TXNIDX = 128,		/* in the transaction index */
};

/* The timing wheel: W_SIZE buckets of W_GRAN ms (bind_index.c). */
/* Longest node list kept of a path (bytes, "\0A\0B\0"). */
#define BIND_PATH_NODES_MAX 1024

#define W_BITS 13
#define W_SIZE (1u << W_BITS)
#define W_GRAN 16		/* ms per bucket */
#define W_UNLINKED UINT32_MAX
#define W_HEAD UINT32_C(0x80000000)

/* A flow key: what the flow index hashes and compares. */
struct fkey {
	const struct bstr *ingress, *tenant;
	struct cats_ip src, dst;
	uint16_t sport, dport;
	uint8_t proto, fl;
};

/* How a recently closed transaction ended (bind_index.c). */
enum { CLOSED_DONE = 1, CLOSED_TIMEOUT = 2 };
#define CLOSED_SHIFT 56
#define TXN_MASK ((UINT64_C(1) << CLOSED_SHIFT) - 1)

/* The table. */
struct bind_table {
	struct bind_conf c;
	struct bind_io io;
	struct bind_counters k;
	uint64_t epoch, next_id;
	bool journal_pending;
	struct cats_htab strs, classes, paths, txns, closed;
	struct bs_hvec hstr, hclass, hpath;
	struct bs_slab ents, v6s;
	struct bs_cidx by_id, by_flow, by_v6;
	struct bs_ctab counts;
	struct bstr *resyncing;	/* forwarders whose re-sync is under way */
	uint32_t *wheel;
	uint64_t wheel_at;	/* last tick */
	bool ticking;
	uint64_t *ring;		/* recently closed transactions */
	size_t ring_pos;
	uint64_t npend, nbind;
	struct bstr *empty, *self;
	struct bstr *mru[8];	/* recently interned strings */
	unsigned mru_pos;
	struct bclass *cmru[4];	/* recently used classes */
	struct bpath *pcache[64];	/* paths by pkey_slot() */
	unsigned cmru_pos;
	struct fkey pf_key;	/* the flow key bind_restore_prefetch() hashed */
	uint64_t pf_hash;
	uint64_t ck_key;	/* the client key ckey_tag() hashed last */
	uint32_t ck_tag;
	char msg[256];
	struct cats_kv *kv;
	char *kv_names;
	size_t kv_n;
};

/* ---- accessors and keys, inline: every lookup goes through them ---- */

static inline struct bent *
ent(const struct bind_table *t, uint32_t i)
{
	return bs_slab_at(&t->ents, i);
}

/* An entry's number, from its aligned chunk and the chunk's header. */
static inline uint32_t
ent_no(const struct bind_table *t, const struct bent *e)
{
	const size_t bytes = (size_t)BS_SLAB_CHUNK * sizeof(struct bent);
	uintptr_t base = (uintptr_t)e & ~(uintptr_t)(bytes - 1);
	uint32_t c;
	(void)t;
	memcpy(&c, (const void *)base, sizeof(c));
	return (c << BS_SLAB_SHIFT) | (uint32_t)(((uintptr_t)e - base) /
	    sizeof(struct bent));
}

static inline struct bclass *
cls(const struct bind_table *t, const struct bent *e)
{
	return t->hclass.v[e->cls];
}

static inline struct bpath *
path_of(const struct bind_table *t, const struct bent *e)
{
	return e->path ? t->hpath.v[e->path] : NULL;
}

static inline const char *
str_text(const struct bstr *b)
{
	return b != NULL && b->len > 0 ? b->s : NULL;
}

static inline struct bv6 *
v6_at(const struct bind_table *t, uint32_t i)
{
	return bs_slab_at(&t->v6s, i);
}

/* Is the class of e an IPv6 one (and so its client a handle)? */
static inline bool
is_v6(const struct bind_table *t, const struct bent *e)
{
	return cls(t, e)->k.dst.af == 6;
}

/* The source address of e. */
static inline void
src_of(const struct bind_table *t, const struct bent *e, struct cats_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	ip->af = cls(t, e)->k.dst.af;
	if (ip->af == 6)
		memcpy(ip->a, v6_at(t, e->client)->a, 16);
	else
		memcpy(ip->a, &e->client, 4);
}

static inline struct bs_ckey
ckey_make(const struct bstr *tenant, uint32_t ref)
{
	struct bs_ckey k = { tenant->id, ref };
	return k;
}

/* The tag of a client key; the last one is remembered (a flow's several
   transitions count the same client). */
static inline uint32_t
ckey_tag(const struct bind_table *t0, const struct bs_ckey *k)
{
	struct bind_table *t = (struct bind_table *)t0;
	uint64_t v;
	memcpy(&v, k, sizeof(v));
	if (v != t->ck_key || t->ck_tag == 0) {
		t->ck_key = v;
		t->ck_tag = (uint32_t)cats_hash(k, sizeof(*k)) | 1;
	}
	return t->ck_tag;
}

static inline uint64_t
fkey_hash(const struct fkey *k)
{
	return cats_hash(k, sizeof(*k));
}

static inline void
fkey_of(const struct bind_table *t, const struct bent *e, struct fkey *k)
{
	const struct bclass *c = cls(t, e);
	memset(k, 0, sizeof(*k));
	k->ingress = c->k.ingress;
	k->tenant = c->k.tenant;
	src_of(t, e, &k->src);
	k->dst = c->k.dst;
	k->sport = (e->flags & F_SPORT) ? e->sport : 0;
	k->dport = (c->k.has & K_DPORT) ? c->k.dport : 0;
	k->proto = c->k.proto;
	k->fl = (uint8_t)(((e->flags & F_SPORT) ? 1 : 0) |
	    ((c->k.has & K_DPORT) ? 2 : 0));
}

static inline bool
flow_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct bind_table *t = ctx;
	struct fkey k;
	fkey_of(t, ent(t, i), &k);
	return memcmp(&k, key, sizeof(k)) == 0;
}

/*
 * Ids are ours, handed out in sequence, never chosen by the input: the id
 * is its own hash, so that new bindings fill the index in order.
 */
static inline uint64_t
id_mix(const struct bind_table *t, uint64_t id)
{
	(void)t;
	return id;
}

static inline bool
id_eq(const void *ctx, uint32_t i, const void *key)
{
	const struct bind_table *t = ctx;
	return ent(t, i)->id == *(const uint64_t *)key;
}

static inline uint32_t
find_id(const struct bind_table *t, uint64_t id)
{
	return bs_cidx_find(&t->by_id, id_mix(t, id), id_eq, t, &id);
}

static inline bool
txn_eq(const void *item, const void *key)
{
	return ((const struct bent *)item)->txn == *(const uint64_t *)key;
}

static inline struct bent *
find_txn(const struct bind_table *t, uint64_t txn)
{
	if (t->txns.n == 0)
		return NULL;	/* no hash to compute */
	return cats_htab_get(&t->txns, cats_hash(&txn, 8), txn_eq, &txn);
}

static inline bool
holds(const struct bent *e)
{
	return (e->flags & (F_SENT_ING | F_SENT_EGR)) != 0;
}

static inline bool
egress_is_ingress(const struct bclass *c)
{
	return c->k.egress == c->k.ingress;
}

/* ---- interned objects (bind_obj.c) ---- */

struct bstr *bt_str_find(const struct bind_table *t, const char *s);
struct bstr *bt_str_get(struct bind_table *t, const char *s);
void bt_str_put(struct bind_table *t, struct bstr *b);
uint32_t bt_class_get(struct bind_table *t, struct bclass_key *k);
void bt_class_put(struct bind_table *t, uint32_t handle);
void bt_key_release(struct bind_table *t, struct bclass_key *k);
int bt_class_key(struct bind_table *t, struct bclass_key *k,
    const char *ingress, const struct cats_flow *f,
    const struct cats_decision *d);
bool bt_same_instance(const struct bclass *c, const struct cats_decision *d);
bool bt_same_decision(const struct bclass *c, const struct cats_decision *d);
uint32_t bt_path_get(struct bind_table *t, const struct pkey *k);
void bt_path_put(struct bind_table *t, uint32_t handle);
/* Forwarder f advertised caps (a status's caps): its CAP_* and MSDs. */
void bt_caps_set(struct bstr *f, const struct cats_arr_text *caps);
/* The MSD fwd advertised for data plane dp, or -1 (none known). */
int bt_caps_msd(const struct bind_table *t, const char *fwd, int dp);
/*
 * A path reply in data plane dp (IP-in-IP: outer family outer_af) that the
 * egress does not advertise: the first of dps (the selection's choices,
 * preferred first) other than dp that headend and egress both advertise,
 * to ask again in; -1 when there is none or nothing is judged (a
 * forwarder that advertised nothing, --dataplanes).
 */
int bt_caps_reask(const struct bind_table *t, const char *headend,
    const char *egress, int dp, int outer_af, const struct cats_arr_text *dps);
/* A node list as a path keeps it ("\0A\0B\0") in buf; its length, 0 for
 * none or one too long to keep. */
uint16_t bt_nodes_join(const struct cats_arr_text *path, char *buf,
    size_t cap);
/*
 * The rest of a path's key, from a reply or a binding: its path id and
 * generation (when has_pid, has_gen) and its nodes, joined into nodes
 * (BIND_PATH_NODES_MAX bytes, which must live as long as k).
 */
void bt_pkey_finish(struct pkey *k, bool has_pid, uint64_t pid,
    bool has_gen, uint64_t gen, const struct cats_arr_text *path,
    char *nodes);
int bt_path_from_rep(struct bind_table *t, const struct cats_path_rep *r,
    uint32_t *handle);
uint32_t bt_v6_find(const struct bind_table *t, const struct bstr *tenant,
    const uint8_t a[16]);
void bt_v6_put(struct bind_table *t, uint32_t i);
int bt_src_ref(struct bind_table *t, const struct bstr *tenant,
    const struct cats_ip *src, uint32_t *ref);
void bt_src_unref(struct bind_table *t, const struct bent *e);
uint32_t bt_client_nbind(const struct bind_table *t, const struct bent *e);

/* ---- indexes and the timing wheel (bind_index.c) ---- */

void bt_txn_index(struct bind_table *t, struct bent *e);
void bt_txn_unindex(struct bind_table *t, struct bent *e);
void bt_flow_unindex(struct bind_table *t, struct bent *e, uint32_t i);
void bt_closed_add(struct bind_table *t, uint64_t txn, int how);
int bt_closed_how(const struct bind_table *t, uint64_t txn);
uint64_t bt_deadline(const struct bind_table *t, const struct bent *e);
void bt_wheel_unlink(struct bind_table *t, struct bent *e);
void bt_wheel_link(struct bind_table *t, struct bent *e, uint32_t i);
bool bt_fkey_from(const struct bind_table *t, const char *ingress,
    const struct cats_flow *f, struct fkey *k);

/* ---- the state machine and the records it sends (bind_fsm.c) ---- */

int bt_category(int s);
void bt_account(struct bind_table *t, struct bent *e, int from, int to);
int bt_transition(struct bind_table *t, struct bent *e, int to, int reason,
    uint64_t now);
void bt_flow_of(const struct bind_table *t, const struct bent *e,
    struct cats_flow *f);
void bt_decision_of(const struct bclass *c, uint64_t now,
    struct cats_decision *d);
void bt_make_binding(const struct bind_table *t, const struct bent *e, int op,
    uint64_t epoch, uint64_t now, int reason, struct cats_rec *r);
void bt_send_rec(struct bind_table *t, const struct cats_rec *r,
    const struct bstr *to);
void bt_journal_rec(struct bind_table *t, const struct cats_rec *r);
void bt_send_binding(struct bind_table *t, struct bent *e, int op,
    struct bstr *to, uint64_t now);
void bt_send_error(struct bind_table *t, uint64_t txn, const char *code,
    const struct bstr *ingress, const struct cats_flow *flow, const char *msg,
    uint64_t now);
void bt_entry_release(struct bind_table *t, struct bent *e);
void bt_cleanup(struct bind_table *t, struct bent *e, uint64_t now);
void bt_fail(struct bind_table *t, struct bent *e, int to, int reason,
    bool quiet, uint64_t now);
void bt_drain(struct bind_table *t, struct bent *e, int reason, uint64_t now);
void bt_push(struct bind_table *t, struct bent *e, uint64_t now);
void bt_activate(struct bind_table *t, struct bent *e, uint64_t now);
bool bt_committed(const struct bind_table *t, const struct bent *e);

#endif
