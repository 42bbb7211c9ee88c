/*
 * te_synth.h - large synthetic TE topologies (10^4 to 10^6 nodes) with the
 * shape of a carrier network, for benchmarks and tests (cats-topology(5),
 * section SYNTHETIC TOPOLOGIES).
 *
 * Metros are scattered over a 4000 x 2500 km plane with Zipf-like sizes.
 * Each metro has two core routers (two planes); the core meshes each metro
 * to its three nearest metros and along a spanning tree, plane by plane.
 * Aggregation routers (about n/20) are dual-homed to their metro's core
 * pair; the rest are access routers in rings of 4 to 10 hanging between two
 * aggregation routers.  Average degree comes out near 2.3, like the
 * Topology Zoo networks; the diameter stays in the tens of hops.
 *
 * Delay: 10 us + 5 us/km x 1.2 x distance.  IGP metric: reference
 * bandwidth (1 Tbit/s / bandwidth) plus delay/100.  TE metric: delay/10.
 * Bandwidth: 100 or 400 Gbit/s core, 100 Gbit/s core-aggregation,
 * 10 Gbit/s aggregation-access, 1 or 10 Gbit/s in rings; 5 to 95 % of it
 * available.  Admin groups: bit 0 long-haul (> 500 km), bit 1 core, bit 2
 * (30 % of links) "encrypted", bit 3 (20 %) "low-latency".  SRLGs: half of
 * the metro pairs carry both planes in one duct; both uplinks of a fifth of
 * the rings share one.  Node i is "n<i>", node label 16000 + i, SRv6
 * locator fc00:hi:lo::/48 (i = hi:lo) and SID <locator>::1; adjacency k of
 * a node has the label 16001 + n + k (a local block above the node labels)
 * and the SRv6 SID <locator>::e000:0 + k.  MSD 10.  Same seed, same network.
 */
#ifndef CATS_TE_SYNTH_H
#define CATS_TE_SYNTH_H

#include "pce/te.h"

struct cats_synth {
	uint32_t nodes;		/* 16 .. 1032575 */
	uint64_t seed;
};

struct cats_synth_cbs {
	int (*node)(const struct cats_te_node_spec *n, void *arg);
	int (*link)(const struct cats_te_link_spec *l, void *arg);
};

/* Emit every node, then every link; stops at the first callback that
 * returns < 0 and returns that.  0 when done, -1 on a bad size. */
int cats_te_synth(const struct cats_synth *p, const struct cats_synth_cbs *cbs,
    void *arg);

/* The same, straight into a database. */
struct cats_te *cats_te_synth_build(const struct cats_synth *p, char *err,
    size_t errlen);

#endif
