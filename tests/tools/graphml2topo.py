#!/usr/bin/env python3
"""graphml2topo - convert an Internet Topology Zoo GraphML file into a
cats-topology(5) JSON document, deterministically (same input, same output).

usage: graphml2topo.py FILE.graphml > NAME.json

The Zoo files give node names, most coordinates, and little about links.
Everything else is assigned by the rules below (also in cats-topology(5),
section CONVERTED TOPOLOGIES):

  node id        the node label as a slug ("New York" -> "new-york"),
                 "-2", "-3" ... appended to repeated labels
  router_id      198.18.X.Y, the i-th node in GraphML order (RFC 2544 range)
  node_label     16000 + i (one SRGB starting at 16000)
  srv6_locator   fc00:0:I::/48 with I = i + 1 in hex; srv6_sid fc00:0:I::1
  msd            10
  delay_us       10 + ceil(5 us/km x 1.2 x great-circle km): light in fibre
                 takes about 5 us per km and fibre routes run about 20 %
                 longer than the great circle; 10 us of equipment.  A link
                 with an end without coordinates gets the median delay of
                 the links that have both.
  igp_metric     max(1, round(delay_us / 100)): a delay-proportional IGP
  max_bw         the Zoo's LinkSpeedRaw when given, else by the degrees of
                 the ends: both >= 4: 100 Gbit/s, both >= 3: 40 Gbit/s,
                 otherwise 10 Gbit/s
  te_metric      max(1, 10 x 100 Gbit/s / max_bw): a bandwidth-based TE metric
  avail_bw       max_bw x (1 - u), u in [0.10, 0.70) from a hash of the link id
  admin_groups   bit 0 "long-haul" when longer than 500 km, bit 1 "core"
                 when both ends have degree >= 3
  srlgs          links leaving a node within the same 45-degree bearing
                 sector are assumed to share a duct: each such group of two
                 or more gets the SRLG 1000 x (i + 1) + sector
  adj_label      24000 + k at each end (k counts that node's adjacencies);
                 adj_sid its locator with function 0xe000 + k
"""
import hashlib
import json
import math
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://graphml.graphdrawing.org/xmlns}"


def slug(s):
    s = re.sub(r"[^A-Za-z0-9]+", "-", s.strip()).strip("-").lower()
    return s or "node"


def km(a, b):
    la1, lo1, la2, lo2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = (math.sin((la2 - la1) / 2) ** 2 +
         math.cos(la1) * math.cos(la2) * math.sin((lo2 - lo1) / 2) ** 2)
    return 2 * 6371.0 * math.asin(min(1.0, math.sqrt(h)))


def bearing(a, b):
    la1, lo1, la2, lo2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    y = math.sin(lo2 - lo1) * math.cos(la2)
    x = (math.cos(la1) * math.sin(la2) -
         math.sin(la1) * math.cos(la2) * math.cos(lo2 - lo1))
    return (math.degrees(math.atan2(y, x)) + 360) % 360


def unit(link_id):
    h = hashlib.sha256(link_id.encode()).digest()
    return int.from_bytes(h[:8], "big") / 2 ** 64


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: graphml2topo.py FILE.graphml")
    root = ET.parse(sys.argv[1]).getroot()
    keys = {k.get("id"): (k.get("attr.name"), k.get("for"))
            for k in root.findall(NS + "key")}
    graph = root.find(NS + "graph")

    def data(el):
        return {keys[d.get("key")][0]: d.text for d in el.findall(NS + "data")}

    gdata = data(graph)
    network = gdata.get("Network") or gdata.get("label") or "topology"
    nodes, index, used = [], {}, {}
    for i, n in enumerate(graph.findall(NS + "node")):
        d = data(n)
        name = d.get("label") or "node %s" % n.get("id")
        s = slug(name)
        used[s] = used.get(s, 0) + 1
        if used[s] > 1:
            s = "%s-%d" % (s, used[s])
        pos = None
        if d.get("Latitude") and d.get("Longitude"):
            pos = (float(d["Latitude"]), float(d["Longitude"]))
        index[n.get("id")] = i
        nodes.append({"gid": n.get("id"), "id": s, "name": name, "pos": pos})
    edges = []
    for e in graph.findall(NS + "edge"):
        a, b = index[e.get("source")], index[e.get("target")]
        if a == b:
            continue
        edges.append((a, b, data(e)))
    deg = [0] * len(nodes)
    for a, b, _ in edges:
        deg[a] += 1
        deg[b] += 1
    dist = []
    for a, b, _ in edges:
        pa, pb = nodes[a]["pos"], nodes[b]["pos"]
        dist.append(km(pa, pb) if pa and pb else None)
    known = sorted(10 + math.ceil(5 * 1.2 * x) for x in dist if x is not None)
    median = known[len(known) // 2] if known else 1000

    # Shared ducts: links leaving a node in the same bearing sector.
    srlg = [[] for _ in edges]
    for v in range(len(nodes)):
        sectors = {}
        for j, (a, b, _) in enumerate(edges):
            if v not in (a, b):
                continue
            u = b if v == a else a
            if nodes[v]["pos"] and nodes[u]["pos"]:
                sec = int(bearing(nodes[v]["pos"], nodes[u]["pos"]) // 45)
                sectors.setdefault(sec, []).append(j)
        for sec, js in sorted(sectors.items()):
            if len(js) >= 2:
                for j in js:
                    srlg[j].append(1000 * (v + 1) + sec)

    out_nodes = []
    for i, n in enumerate(nodes):
        o = {"id": n["id"], "name": n["name"],
             "router_id": "198.18.%d.%d" % ((i + 1) >> 8, (i + 1) & 255),
             "node_label": 16000 + i,
             "srv6_locator": "fc00:0:%x::/48" % (i + 1),
             "srv6_sid": "fc00:0:%x::1" % (i + 1),
             "msd": 10}
        if n["pos"]:
            o["lat"], o["lon"] = n["pos"]
        out_nodes.append(o)

    adj = [0] * len(nodes)
    out_links, ids = [], {}
    for j, (a, b, d) in enumerate(edges):
        na, nb = nodes[a]["id"], nodes[b]["id"]
        lid = "%s--%s" % (na, nb)
        ids[lid] = ids.get(lid, 0) + 1
        if ids[lid] > 1:
            lid = "%s-%d" % (lid, ids[lid])
        delay = 10 + math.ceil(5 * 1.2 * dist[j]) if dist[j] is not None \
            else median
        raw = d.get("LinkSpeedRaw")
        if raw and float(raw) > 0:
            bw = int(float(raw))
        elif deg[a] >= 4 and deg[b] >= 4:
            bw = 100 * 10 ** 9
        elif deg[a] >= 3 and deg[b] >= 3:
            bw = 40 * 10 ** 9
        else:
            bw = 10 * 10 ** 9
        ag = (1 if dist[j] is not None and dist[j] > 500 else 0) | \
            (2 if deg[a] >= 3 and deg[b] >= 3 else 0)
        adj[a] += 1
        adj[b] += 1
        link = {"id": lid, "src": na, "dst": nb,
                "igp_metric": max(1, round(delay / 100)),
                "te_metric": max(1, round(10 * 100 * 10 ** 9 / bw)),
                "delay_us": delay, "max_bw": bw,
                "avail_bw": int(bw * (1 - (0.10 + 0.60 * unit(lid))))}
        if ag:
            link["admin_groups"] = ag
        if srlg[j]:
            link["srlgs"] = sorted(srlg[j])
        link["adj_label"] = 24000 + adj[a]
        link["adj_sid"] = "fc00:0:%x::%x" % (a + 1, 0xe000 + adj[a])
        link["reverse"] = {"adj_label": 24000 + adj[b],
                           "adj_sid": "fc00:0:%x::%x" % (b + 1, 0xe000 + adj[b])}
        out_links.append(link)

    doc = {
        "name": network,
        "source": "Internet Topology Zoo, %s" % sys.argv[1].split("/")[-1],
        "license": "CC BY 4.0",
        "attribution": "The Internet Topology Zoo: S. Knight, H. X. Nguyen, "
                       "N. Falkner, R. Bowden, M. Roughan, IEEE JSAC 29(9), "
                       "2011; converted by tests/tools/graphml2topo.py "
                       "(metrics, bandwidths and SIDs are assigned, see "
                       "cats-topology(5))",
        "version": 1,
        "nodes": out_nodes,
        "links": out_links,
    }
    json.dump(doc, sys.stdout, indent=1, sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
