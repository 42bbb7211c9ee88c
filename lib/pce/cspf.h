/*
 * cspf.h - constrained shortest path first over a TE database, and the
 * segment list that realizes the path (cats-pce(1)).
 *
 * What is computed.  The path from the headend to the endpoint that
 * minimizes the chosen metric (IGP, TE, delay or hops) over the links that
 * are up and pass every link and node constraint (data plane, excluded
 * nodes, links and SRLGs, affinities, minimum available bandwidth), subject
 * to the additive bounds max_delay and max_hops.
 *
 * How, and what is guaranteed.  First Dijkstra on the chosen metric over
 * the filtered graph, with an indexed binary heap (true decrease-key) and an
 * early exit when the endpoint is settled; per-node arrays are stamped, so a
 * query costs what it touches, not O(nodes).  If that path meets the
 * bounds it is optimal.  Otherwise an exact label-setting search runs:
 * labels (cost, delay, hops) per node, kept only while no other label of the
 * node is at least as good in every bounded dimension (Pareto dominance),
 * popped in cost order from a binary heap, pruned when the delay or hops so
 * far plus the least delay or hops still needed to reach the endpoint
 * (backward searches, bounded by the limits) exceeds a bound, and pruned
 * when they cannot beat the best feasible path known (the least-delay path
 * when it meets the hop limit).  The first label popped at the endpoint is a
 * minimum-cost path meeting every bound: the answer is exact.  The label
 * count is capped (max_labels); past the cap the result is CATS_CSPF_BUDGET,
 * never a suboptimal path.
 *
 * Why a path was refused.  With no feasible path, `pruned` names the
 * constraint that removed the last one: constraints are applied in the
 * order of enum cats_cspf_prune, and pruned is the first k such that no path
 * satisfies constraints 1..k (topology: no path even without constraints).
 *
 * Realizing the path.  SR-MPLS and SRv6: the path is compressed greedily
 * into node SIDs wherever the rest of a stretch is the unique IGP shortest
 * path between its ends (routers forward a node SID along the IGP shortest
 * path, so an ECMP stretch is pinned with adjacency SIDs), and adjacency
 * SIDs elsewhere; greedy farthest-reach is optimal because a stretch of a
 * unique shortest path is itself one.  An SRv6 list always ends with the
 * endpoint's node SID (its End/decapsulation SID).  More segments than the
 * headend's maximum SID depth is a failure (CATS_CSPF_SID_DEPTH).  ip and
 * ipip cannot steer: the path is the IGP shortest path, which must be
 * unique (else CATS_CSPF_ECMP) and meet every constraint.
 */
#ifndef CATS_CSPF_H
#define CATS_CSPF_H

#include "pce/te.h"

/* Status, the reason code of a path reply (cats_cspf_status_name()). */
enum cats_cspf_status {
	CATS_CSPF_OK,
	CATS_CSPF_NO_SOURCE,		/* "no-source": headend unknown */
	CATS_CSPF_NO_DEST,		/* "no-destination" */
	CATS_CSPF_SAME,			/* "same-node": headend is endpoint */
	CATS_CSPF_HEADEND_DP,		/* "headend-dataplane" */
	CATS_CSPF_ENDPOINT_DP,		/* "endpoint-dataplane" */
	CATS_CSPF_NO_PATH,		/* "no-path": see pruned */
	CATS_CSPF_ECMP,			/* "ecmp": ip path not unique */
	CATS_CSPF_SID_DEPTH,		/* "sid-depth": more than the MSD */
	CATS_CSPF_NO_SID,		/* "no-sid": a needed SID is missing */
	CATS_CSPF_BUDGET,		/* "budget": label cap reached */
	CATS_CSPF__N
};

/* Constraints in the order they are applied (names: the request fields). */
enum cats_cspf_prune {
	CATS_PRUNE_TOPOLOGY,	/* "topology": unreachable over links up */
	CATS_PRUNE_DATAPLANE,	/* "dataplane": a node lacks the data plane */
	CATS_PRUNE_EXCLUDE_NODES,
	CATS_PRUNE_EXCLUDE_LINKS,
	CATS_PRUNE_EXCLUDE_SRLGS,
	CATS_PRUNE_EXCLUDE_ANY,
	CATS_PRUNE_INCLUDE_ANY,
	CATS_PRUNE_INCLUDE_ALL,
	CATS_PRUNE_MIN_BW,
	CATS_PRUNE_MAX_HOPS,
	CATS_PRUNE_MAX_DELAY,
	CATS_PRUNE__N
};

const char *cats_cspf_status_name(int status);
const char *cats_cspf_prune_name(int con);
/* Does this status mean "no path" (rather than a bad request)? */
bool cats_cspf_status_is_nopath(int status);

#define CATS_CSPF_MAX_LABELS_DEFAULT ((size_t)1 << 22)
#define CATS_CSPF_MAX_SEGS 32

struct cats_cspf_req {
	uint32_t src, dst;		/* node indexes (CATS_TE_NONE: unknown) */
	int metric;			/* enum cats_path_metric */
	int dataplane;			/* enum cats_dataplane */
	uint64_t max_delay_us;		/* UINT64_MAX: none */
	uint32_t max_hops;		/* UINT32_MAX: none */
	uint64_t min_bw;		/* 0: none */
	uint32_t include_any, include_all, exclude_any;
	const uint32_t *ex_nodes;	/* node indexes */
	size_t n_ex_nodes;
	const uint32_t *ex_links;	/* link id indexes */
	size_t n_ex_links;
	const uint32_t *ex_srlgs;
	size_t n_ex_srlgs;
	size_t max_labels;		/* 0: CATS_CSPF_MAX_LABELS_DEFAULT */
	size_t msd;			/* the headend's advertised MSD (the
					   path-req's msd): below the TE
					   database's, it counts; 0: none */
	bool path_only;			/* no segment list (benchmarks) */
};

/* Fill r with "no constraints": metric te, data plane ip. */
void cats_cspf_req_init(struct cats_cspf_req *r, uint32_t src, uint32_t dst);

/* One segment: the node SID of `node`, or the adjacency SID of `edge`. */
struct cats_cspf_seg {
	bool adj;
	uint32_t node;		/* node SID target; adjacency: its tail */
	uint32_t edge;		/* adjacency: the link direction */
};

struct cats_cspf_res {
	int status;			/* enum cats_cspf_status */
	int pruned;			/* enum cats_cspf_prune, for NO_PATH */
	uint64_t cost, delay_us;
	uint32_t hops;
	/* The path (also set on SID_DEPTH / NO_SID): hops+1 nodes, hops
	 * directions; valid until the next call with the same workspace. */
	const uint32_t *nodes, *edges;
	struct cats_cspf_seg segs[CATS_CSPF_MAX_SEGS];
	size_t nsegs;
	/* Work done: nodes settled and labels made. */
	size_t settled, labels;
	bool exact_search;		/* the label-setting search ran */
};

/* Per-thread scratch memory, sized to the largest database seen. */
struct cats_cspf_ws;
struct cats_cspf_ws *cats_cspf_ws_new(void);
void cats_cspf_ws_free(struct cats_cspf_ws *ws);
/* Bytes the workspace holds. */
size_t cats_cspf_ws_bytes(const struct cats_cspf_ws *ws);

/*
 * Compute a path and, for SR data planes, its segment list.  Returns 0, or
 * -1 when out of memory; the outcome is in res->status.
 */
int cats_cspf(const struct cats_te *te, struct cats_cspf_ws *ws,
    const struct cats_cspf_req *rq, struct cats_cspf_res *res);

/*
 * The shortest-path tree from src on a metric over every link that is up
 * (no other constraint), all nodes, one run: cost[v], delay_us[v] and
 * hops[v] along the tree path; UINT64_MAX / UINT32_MAX when unreachable.
 * Arrays hold cats_te_nodes(te) entries.  Used by tedist.c.
 */
int cats_cspf_tree(const struct cats_te *te, struct cats_cspf_ws *ws,
    uint32_t src, int metric, uint64_t *cost, uint64_t *delay_us,
    uint32_t *hops);

#endif
