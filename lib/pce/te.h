/*
 * te.h - the traffic-engineering database of the PCE (cats-topology(5)).
 *
 * A TE database is an immutable-shape graph: nodes with their router id,
 * SR-MPLS node SID label, SRv6 locator and node SID, data-plane capabilities
 * and maximum SID depth; directed links (a link given "both ways" is two
 * directions sharing one link id) with IGP metric, TE metric, delay,
 * maximum and available bandwidth, admin groups, SRLGs and adjacency SIDs.
 *
 * Storage is compressed sparse rows: the out-links of node v are the link
 * directions row[v] .. row[v+1]-1, kept in parallel arrays (structure of
 * arrays, so that a search touches only the attributes it needs), plus an
 * in-link index for backward searches.  cats_te_mem() reports the bytes.
 *
 * `net` records change link attributes (metrics, delay, bandwidth, up/down)
 * in place; every applied change bumps the generation, which path replies
 * carry and caches compare.  The shape (nodes, links, SIDs) only changes by
 * loading a new database: a reload builds a new one beside the old, and the
 * caller swaps them when the load succeeded.
 *
 * Stable API (used by cats-pce and by cats-select through tedist.h):
 * cats_te_load(), cats_te_free(), cats_te_apply_net(), cats_te_gen(),
 * cats_te_node(), cats_te_node_id(), cats_te_nodes().
 */
#ifndef CATS_TE_H
#define CATS_TE_H

#include "rec/rec.h"

/* Data-plane capabilities of a node. */
enum {
	CATS_TE_CAP_IP = 1,	/* IPv4/IPv6 forwarding, IP-in-IP decap */
	CATS_TE_CAP_SRMPLS = 2,	/* SR-MPLS (node and adjacency labels) */
	CATS_TE_CAP_SRV6 = 4,	/* SRv6 (End and End.X SIDs) */
};

/* Ranges a topology is checked against ("absurd" values are refused). */
#define CATS_TE_METRIC_MAX UINT32_C(16777215)	/* IGP/TE metric, 24 bits */
#define CATS_TE_DELAY_MAX UINT32_C(16777215)	/* us, 24 bits (RFC 8570) */
#define CATS_TE_BW_MAX UINT64_C(1000000000000000)	/* 1 Pbit/s */
#define CATS_TE_LABEL_MIN 16u
#define CATS_TE_LABEL_MAX 1048575u
#define CATS_TE_MSD_MAX 16u	/* a binding carries at most 16 segments */
#define CATS_TE_MSD_DEFAULT 10u
#define CATS_TE_SRLG_MAX 64u	/* SRLGs of one link */
#define CATS_TE_NONE UINT32_MAX	/* "no node", "no link" */

/* Caps on what a topology file may declare. */
struct cats_te_limits {
	size_t max_file;	/* bytes of the file (default 1 GiB) */
	uint32_t max_nodes;	/* default 2^21 */
	uint32_t max_links;	/* link ids, each one or two directions (2^22) */
};

extern const struct cats_te_limits cats_te_limits_default;

struct cats_te;

/*
 * Load a topology file (either form of cats-topology(5)).  Returns the
 * database, or NULL with one line in err naming the element and the reason
 * ("links[3] \"ny-chi\": delay_us: 0 is out of range 1..16777215").
 * *missing is set when the file could not be opened (exit 66 rather than
 * 78).  gen0 is the generation given to the new database when the file
 * names none (a reload passes the old generation + 1).
 */
struct cats_te *cats_te_load(const char *path, const struct cats_te_limits *lim,
    uint64_t gen0, bool *missing, char *err, size_t errlen);
/* The same from memory (tests, fuzzing); name is used in messages. */
struct cats_te *cats_te_load_mem(const char *text, size_t len,
    const struct cats_te_limits *lim, uint64_t gen0, char *err,
    size_t errlen);
void cats_te_free(struct cats_te *te);

/* Generation: bumped by every applied update. */
uint64_t cats_te_gen(const struct cats_te *te);
/* A number unique to this database object in the process (cache keys). */
uint64_t cats_te_uid(const struct cats_te *te);
uint32_t cats_te_nodes(const struct cats_te *te);
/* Link directions (the number of CSR entries). */
uint32_t cats_te_edges(const struct cats_te *te);
/* Link ids. */
uint32_t cats_te_links(const struct cats_te *te);

/* Node index of an id, or CATS_TE_NONE. */
uint32_t cats_te_node(const struct cats_te *te, const char *id);
uint32_t cats_te_node_n(const struct cats_te *te, const char *id, size_t n);
/* The same, with cats_hash_str(id) at hand (the CST keeps its egresses'). */
uint32_t cats_te_node_h(const struct cats_te *te, const char *id, uint64_t h);
const char *cats_te_node_id(const struct cats_te *te, uint32_t v);
/* Link index of a link id, or CATS_TE_NONE. */
uint32_t cats_te_link(const struct cats_te *te, const char *id);
const char *cats_te_link_id(const struct cats_te *te, uint32_t l);

/*
 * Apply a `net` record.  Scope link: src/dst (and link_id when there are
 * parallel links) name one direction; delay_us, igp_metric, te_metric,
 * max_bw, avail_bw and up replace that direction's values.  Scope node:
 * `up` false takes every link of the node down, true brings them up.
 * Scope path carries measurements for the NST, not the TE database: it is
 * accepted and ignored (returns 1).  Returns 0 when applied (generation
 * bumped), 1 when ignored, -1 with err naming the field when refused (the
 * database is unchanged).
 */
int cats_te_apply_net(struct cats_te *te, const struct cats_net *n, char *err,
    size_t errlen);

/* Bytes of the database: per-node arrays, per-direction arrays, the rest. */
struct cats_te_mem {
	size_t node_bytes, edge_bytes, other_bytes;
};
void cats_te_mem(const struct cats_te *te, struct cats_te_mem *m);

/* ---- building (the loader, the synthetic generator, tests) ---- */

/* One direction of a link. */
struct cats_te_dir {
	uint32_t igp, te, delay_us;	/* te 0: same as igp */
	uint64_t max_bw, avail_bw;	/* avail_bw UINT64_MAX: same as max */
	uint32_t adj_label;		/* 0: none */
	struct cats_ip adj_sid;		/* af 0: none */
	bool down;
};

struct cats_te_node_spec {
	const char *id;
	struct cats_ip router_id;	/* af 0: none */
	uint32_t label;			/* SR-MPLS node SID label, 0: none */
	struct cats_ip srv6_sid;	/* SRv6 node (End) SID, af 0: none */
	struct cats_ip srv6_locator;	/* af 0: none */
	uint8_t srv6_plen;
	uint8_t caps;			/* 0: derived from the SIDs */
	uint8_t msd;			/* 0: CATS_TE_MSD_DEFAULT */
};

struct cats_te_link_spec {
	const char *id, *src, *dst;
	bool directed;			/* false: both ways */
	uint32_t admin_groups;
	const uint32_t *srlgs;
	size_t nsrlgs;
	struct cats_te_dir fwd, rev;	/* rev used when !directed */
};

struct cats_te_builder;

struct cats_te_builder *cats_te_builder_new(const struct cats_te_limits *lim);
/* Add a node / a link; -1 with "field: reason" in err (nothing added). */
int cats_te_add_node(struct cats_te_builder *b,
    const struct cats_te_node_spec *n, char *err, size_t errlen);
int cats_te_add_link(struct cats_te_builder *b,
    const struct cats_te_link_spec *l, char *err, size_t errlen);
/* Build the database (the builder is freed either way). */
struct cats_te *cats_te_build(struct cats_te_builder *b, uint64_t gen,
    char *err, size_t errlen);
void cats_te_builder_free(struct cats_te_builder *b);

/* ---- the graph, for the path computation (cspf.c, tedist.c) ---- */

enum { CATS_TE_W_IGP, CATS_TE_W_TE, CATS_TE_W_DELAY, CATS_TE_W__N };

struct cats_te {
	uint32_t n;		/* nodes */
	uint32_t m;		/* link directions */
	uint32_t nlinks;	/* link ids */
	uint64_t gen, uid;
	/* nodes */
	uint32_t *row;		/* n+1: out-directions of v are row[v]..row[v+1]-1 */
	uint32_t *rrow;		/* n+1: in-directions of v: rin[rrow[v]..] */
	uint32_t *rin;		/* m: direction indexes, grouped by head */
	uint32_t *rsrc;		/* m: tail of direction rin[k] */
	uint32_t *name_off;	/* n: node id at names + name_off[v] */
	uint8_t *caps, *msd;
	uint8_t allcaps;	/* capabilities every node has */
	uint32_t *label;	/* 0: none */
	struct cats_ip *router_id;	/* NULL if no node has one */
	uint8_t (*sid6)[16];	/* NULL if no node has one; zero: none */
	/* link directions, CSR order */
	uint32_t *dst;
	uint32_t *w[CATS_TE_W__N];
	uint64_t *max_bw, *avail_bw;
	uint32_t *ag;		/* admin groups */
	uint32_t *srlg_row;	/* m+1 into srlg */
	uint32_t *srlg;
	uint32_t *adj_label;	/* 0: none */
	uint8_t (*adj6)[16];	/* NULL if no direction has one */
	uint32_t *link;		/* link id index of each direction */
	uint8_t *up;
	/* link ids */
	uint32_t *link_off;	/* nlinks: link id at names + link_off[l] */
	char *names;
	size_t names_len;
	struct cats_htab *node_ids, *link_ids;
};

/* Tail node of direction e (binary search over row). */
uint32_t cats_te_edge_src(const struct cats_te *te, uint32_t e);

#endif
