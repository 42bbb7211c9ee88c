#!/usr/bin/python3
"""Write the cats-fwd packet fixtures (tests/data/fwd/*.case) with scapy.

Run once when a case is added or changed: /usr/bin/python3 gen.py [DIR].
The fixture files are the data (committed); this only builds them.  Every
expected packet here is built by scapy from what the forwarder must do
(cats-fwd(1), pkt.h), not recorded from lib/fwd: the unit test
tests/unit/test_fwd_cases.c then checks lib/fwd against them.  README
describes the format and the topology.
"""
import json
import os
import sys

from scapy.all import (ICMP, IP, TCP, UDP, IPv6, ICMPv6DestUnreach,
                       ICMPv6PacketTooBig, ICMPv6TimeExceeded, IPv6ExtHdrDestOpt,
                       IPv6ExtHdrHopByHop, IPv6ExtHdrSegmentRouting,
                       HBHOptUnknown, Raw, GRE)
from scapy.contrib.mpls import MPLS

CLI4, CLI6 = "192.0.2.10", "2001:db8:c1::10"
SVC4, SVC6 = "203.0.113.100", "2001:db8:100::100"
ICPT4 = "203.0.113.200"
LOC4, LOC6 = "198.51.100.11", "2001:db8:5::11"
ISID, ESID, CORE_SID = "2001:db8:1::1", "2001:db8:2::100", "2001:db8:cc::2"
ITUN4, ETUN4 = "10.99.0.1", "10.99.0.2"
PAY = b"cats-fixture-0123"

# ---- packets ----


def ip4(src, dst, ttl=64, tos=0, df=True, **kw):
    return IP(src=src, dst=dst, ttl=ttl, tos=tos, id=7,
              flags="DF" if df else 0, **kw)


def ip6(src, dst, hlim=64, tc=0, **kw):
    return IPv6(src=src, dst=dst, hlim=hlim, tc=tc, fl=0, **kw)


def udp(af, src, dst, sport, dport, ttl=64, payload=PAY, tos=0, df=True):
    l3 = ip4(src, dst, ttl, tos, df) if af == 4 else ip6(src, dst, ttl, tos)
    return bytes(l3 / UDP(sport=sport, dport=dport) / Raw(payload))


def tcp(af, src, dst, sport, dport, flags="A", ttl=64, mss=None, payload=b""):
    opts = [("MSS", mss)] if mss else []
    l3 = ip4(src, dst, ttl) if af == 4 else ip6(src, dst, ttl)
    t = TCP(sport=sport, dport=dport, flags=flags, seq=1000, ack=2000 if
            "A" in flags else 0, window=65000, options=opts)
    return bytes(l3 / t / Raw(payload)) if payload else bytes(l3 / t)


def rewrite(pkt, src=None, dst=None, sport=None, dport=None, ttl_dec=1,
            mss=None):
    """The packet with addresses, ports, TTL (and MSS) changed, checksums
    computed again from scratch."""
    p = IP(pkt) if pkt[0] >> 4 == 4 else IPv6(pkt)
    if src:
        p.src = src
    if dst:
        p.dst = dst
    if p.version == 4:
        p.ttl -= ttl_dec
        del p.chksum
    else:
        p.hlim -= ttl_dec
    l4 = p.payload
    while not isinstance(l4, (UDP, TCP)):
        l4 = l4.payload
    if sport:
        l4.sport = sport
    if dport:
        l4.dport = dport
    if mss is not None:
        l4.options = [("MSS", mss) if o[0] == "MSS" else o for o in l4.options]
    del l4.chksum
    return bytes(p)


def _fnv32(h, b):
    for x in b:
        h ^= x
        h = (h * 16777619) & 0xffffffff
    return h


def flow_label(inner):
    """RFC 6438 flow label of an inner packet, as cats-fwd(1) specifies
    it: FNV-1a over af, proto, src, dst, sport, dport, then the murmur3
    finalizer, the low 20 bits, 1 for 0."""
    import socket
    v = inner[0] >> 4
    if v == 4:
        proto, l4, al, so = inner[9], (inner[0] & 15) * 4, 4, 12
        if int.from_bytes(inner[6:8], "big") & 0x3fff:
            l4 = len(inner)
    else:
        proto, l4, al, so = inner[6], 40, 16, 8
    ports = b"\0\0\0\0"
    if proto in (6, 17) and l4 + 4 <= len(inner):
        ports = inner[l4:l4 + 4]
    h = _fnv32(2166136261, bytes([v, proto]) + inner[so:so + al] +
               inner[so + al:so + 2 * al] + ports)
    h ^= h >> 16
    h = (h * 0x85ebca6b) & 0xffffffff
    h ^= h >> 13
    h = (h * 0xc2b2ae35) & 0xffffffff
    h ^= h >> 16
    return (h & 0xfffff) or 1


def tos_of(inner):
    return inner[1] if inner[0] >> 4 == 4 else ((inner[0] & 0xf) << 4 |
                                                 inner[1] >> 4)


def srv6(inner, src, sids, fl=True):
    nh = 4 if inner[0] >> 4 == 4 else 41
    n = len(sids)
    o = ip6(src, sids[0], tc=tos_of(inner))
    o.fl = flow_label(inner) if fl else 0
    return bytes(o /
                 IPv6ExtHdrSegmentRouting(nh=nh, addresses=list(reversed(sids)),
                                          segleft=n - 1, lastentry=n - 1) /
                 Raw(inner))


def ipip(inner, src, dst, ipid=0, fl=True):
    v6in = inner[0] >> 4 == 6
    if ":" in dst:
        o = ip6(src, dst, tc=tos_of(inner), nh=41 if v6in else 4)
        o.fl = flow_label(inner) if fl else 0
        return bytes(o / Raw(inner))
    df = v6in or bool(inner[6] & 0x40)
    return bytes(IP(src=src, dst=dst, ttl=64, id=ipid, tos=tos_of(inner),
                    flags="DF" if df else 0, proto=41 if v6in else 4) /
                 Raw(inner))


def mpls(inner, labels, xnull=False, ttl=64, tc=None):
    """An SR-MPLS packet: the labels (top first), an explicit null under
    them (xnull), the traffic class the inner DSCP's class selector, TTL
    64 (cats-fwd(1), RFC 3032), bottom of stack on the last entry."""
    if tc is None:
        tc = tos_of(inner) >> 5
    stack = list(labels) + ([0 if inner[0] >> 4 == 4 else 2] if xnull
                            else [])
    b = b""
    for i, lb in enumerate(stack):
        b += bytes(MPLS(label=lb, cos=tc, s=int(i == len(stack) - 1),
                        ttl=ttl))[:4]
    return b + inner


def icmp_err(kind, src, pkt, mtu=0):
    """The forwarder's ICMP error about pkt (pkt.h cats_pkt_icmp_error)."""
    if pkt[0] >> 4 == 4:
        ic = {"ttl": ICMP(type=11, code=0), "big": ICMP(type=3, code=4,
              nexthopmtu=mtu), "unreach": ICMP(type=3, code=1)}[kind]
        return bytes(IP(src=src, dst=IP(pkt).src, ttl=64, id=0, flags=0) /
                     ic / Raw(pkt[:548]))
    ic = {"ttl": ICMPv6TimeExceeded(code=0), "big": ICMPv6PacketTooBig(mtu=mtu),
          "unreach": ICMPv6DestUnreach(code=3)}[kind]
    return bytes(ip6(src, IPv6(pkt).src) / ic / Raw(pkt[:1232]))


def tlvs(csid, delay=None):
    b = bytes([1, len(csid)]) + csid.encode()
    if delay is not None:
        b += bytes([2, 4]) + delay.to_bytes(4, "big")
    return b


def modea(csid, dst=SVC6, hbh=False, data=None, sport=4000, dport=53):
    opt = HBHOptUnknown(otype=0x1E, optdata=b"\x01" + (data if data is not None
                                                       else tlvs(csid)))
    ext = (IPv6ExtHdrHopByHop if hbh else IPv6ExtHdrDestOpt)(options=[opt])
    return bytes(ip6(CLI6, dst) / ext / UDP(sport=sport, dport=dport) /
                 Raw(PAY))


# ---- bindings ----


def flow(proto, src, dst, sport=None, dport=None):
    m = {"proto": proto, "src": src, "dst": dst}
    if sport is not None:
        m["sport"] = sport
    if dport is not None:
        m["dport"] = dport
    return m


def binding(af=4, proto=17, sport=4000, dport=53, bid=1, encap="srv6",
            sids=(ESID,), labels=None, tunnel=None, port=None, rev_sids=(ISID,),
            rev_tunnel=None, rev_encap=None, loc=None, cli=None, svc=None,
            idle=None):
    cli = cli or (CLI4 if af == 4 else CLI6)
    svc = svc or (SVC4 if af == 4 else SVC6)
    loc = loc or (LOC4 if af == 4 else LOC6)
    fwd = {"match": flow(proto, cli, svc, sport, dport), "locator": loc,
           "encap": encap}
    if encap == "srv6" and sids:
        fwd["sids"] = list(sids)
    if labels is not None:
        fwd["labels"] = list(labels)
    if tunnel:
        fwd["tunnel_dst"] = tunnel
    if port:
        fwd["port"] = port
    rev = {"match": flow(proto, loc, cli, port or dport, sport),
           "restore_src": svc, "restore_port": dport}
    if rev_sids:
        rev["sids"] = list(rev_sids)
    if rev_tunnel:
        rev["tunnel_dst"] = rev_tunnel
    if rev_encap:
        rev["encap"] = rev_encap
    b = {"type": "binding", "id": bid, "version": 1, "epoch": 1,
         "op": "install", "ts": 1, "txn": 1000 + bid, "ingress": "IF-1",
         "egress": "EF-2", "cs_id": "S1", "fwd": fwd, "rev": rev}
    if idle:
        b["idle_ms"] = idle
    return b


CASES = []


def case(name, doc, role="ingress", opts=(), acts=(), expect=()):
    CASES.append((name, doc, role, opts, acts, expect))


def ctl(rec):
    return ("ctl", json.dumps(rec, separators=(",", ":")))


def pin(port, pkt):
    return ("in", port, pkt)


def out(port, pkt):
    return ("out", port, pkt)


def tick(ms):
    return ("tick", ms)


def drop(name):
    return ("drop", name)


def count(name, n=1):
    return ("count", name, n)


def request(kv):
    return ("request", kv)


def status(kv):
    return ("status", kv)


def sent_binding(kv):
    return ("binding", kv)


# ---- ingress: rewrite and encapsulation ----

u4 = udp(4, CLI4, SVC4, 4000, 53)
u6 = udp(6, CLI6, SVC6, 4000, 53)
case("in_udp4_srv6", "IPv4 UDP client packet: destination rewritten to the "
     "locator, TTL - 1, SRv6 (one SID) toward the egress",
     acts=[ctl(binding()), pin("client", u4)],
     expect=[out("core", srv6(rewrite(u4, dst=LOC4), ISID, [ESID])),
             count("fwd_pkts")])
case("in_udp4_srv6_2sids", "SRv6 with two SIDs: outer destination the first, "
     "segments left 1, the list reversed",
     acts=[ctl(binding(sids=(CORE_SID, ESID))), pin("client", u4)],
     expect=[out("core", srv6(rewrite(u4, dst=LOC4), ISID, [CORE_SID, ESID])),
             count("fwd_pkts")])
u4tos = udp(4, CLI4, SVC4, 4000, 53, tos=0x28)
case("in_udp4_srv6_tos", "the inner TOS is copied to the outer traffic class",
     acts=[ctl(binding()), pin("client", u4tos)],
     expect=[out("core", srv6(rewrite(u4tos, dst=LOC4), ISID, [ESID]))])
case("in_udp6_srv6", "IPv6 UDP client packet, SRv6",
     acts=[ctl(binding(af=6)), pin("client", u6)],
     expect=[out("core", srv6(rewrite(u6, dst=LOC6), ISID, [ESID])),
             count("fwd_pkts")])
t4 = tcp(4, CLI4, SVC4, 40000, 80, "PA", payload=b"GET / HTTP/1.0\r\n\r\n")
case("in_tcp4_srv6", "IPv4 TCP segment of a bound flow, SRv6",
     acts=[ctl(binding(proto=6, sport=40000, dport=80)), pin("client", t4)],
     expect=[out("core", srv6(rewrite(t4, dst=LOC4), ISID, [ESID]))])
t6 = tcp(6, CLI6, SVC6, 40000, 80, "A")
case("in_tcp6_srv6", "IPv6 TCP ACK of a bound flow, SRv6",
     acts=[ctl(binding(af=6, proto=6, sport=40000, dport=80)),
           pin("client", t6)],
     expect=[out("core", srv6(rewrite(t6, dst=LOC6), ISID, [ESID]))])
case("in_udp4_port", "destination address and port rewritten",
     acts=[ctl(binding(port=5353)), pin("client", u4)],
     expect=[out("core", srv6(rewrite(u4, dst=LOC4, dport=5353), ISID,
                              [ESID]))])
case("in_udp4_ipip4", "IPv4 in IPv4 toward the egress's tunnel address "
     "(outer DF from the inner, identification 0)",
     acts=[ctl(binding(encap="ipip", tunnel=ETUN4)), pin("client", u4)],
     expect=[out("core", ipip(rewrite(u4, dst=LOC4), ITUN4, ETUN4))])
u4nodf = udp(4, CLI4, SVC4, 4000, 53, df=False)
case("in_udp4_ipip4_nodf", "IPv4 in IPv4: an inner packet without DF gets "
     "an outer one without DF",
     acts=[ctl(binding(encap="ipip", tunnel=ETUN4)), pin("client", u4nodf)],
     expect=[out("core", ipip(rewrite(u4nodf, dst=LOC4), ITUN4, ETUN4))])
case("in_udp6_ipip4", "IPv6 in IPv4 (protocol 41, DF)",
     acts=[ctl(binding(af=6, encap="ipip", tunnel=ETUN4)), pin("client", u6)],
     expect=[out("core", ipip(rewrite(u6, dst=LOC6), ITUN4, ETUN4))])
case("in_udp4_ipip6", "IPv4 in IPv6 (next header 4)",
     acts=[ctl(binding(encap="ipip", tunnel=ESID)), pin("client", u4)],
     expect=[out("core", ipip(rewrite(u4, dst=LOC4), ISID, ESID))])
case("in_udp6_ipip6", "IPv6 in IPv6",
     acts=[ctl(binding(af=6, encap="ipip", tunnel=ESID)), pin("client", u6)],
     expect=[out("core", ipip(rewrite(u6, dst=LOC6), ISID, ESID))])
case("in_flow_label_off", "--flow-label off: the outer flow label is 0",
     opts=["flow-label=off"], acts=[ctl(binding()), pin("client", u4)],
     expect=[out("core", srv6(rewrite(u4, dst=LOC4), ISID, [ESID], fl=False))])
case("in_flow_label_ipip6_off", "--flow-label off, IPv6 outer of ipip: 0",
     opts=["flow-label=off"],
     acts=[ctl(binding(encap="ipip", tunnel=ESID)), pin("client", u4)],
     expect=[out("core", ipip(rewrite(u4, dst=LOC4), ISID, ESID, fl=False))])
u4b = udp(4, CLI4, SVC4, 4001, 53)
case("in_flow_label_differs", "two flows between the same forwarders get "
     "their own flow labels (RFC 6438); each keeps its own",
     acts=[ctl(binding()), ctl(binding(bid=2, sport=4001)),
           pin("client", u4), pin("client", u4b), pin("client", u4)],
     expect=[out("core", srv6(rewrite(u4, dst=LOC4), ISID, [ESID])),
             out("core", srv6(rewrite(u4b, dst=LOC4), ISID, [ESID])),
             out("core", srv6(rewrite(u4, dst=LOC4), ISID, [ESID]))])
case("in_udp4_ip", "dataplane ip: rewritten, routed without encapsulation",
     acts=[ctl(binding(encap="ip")), pin("client", u4)],
     expect=[out("core", rewrite(u4, dst=LOC4)), count("fwd_pkts")])
case("in_two_packets_ipid", "IPv4 outer identification counts up per "
     "encapsulated packet",
     acts=[ctl(binding(encap="ipip", tunnel=ETUN4)), pin("client", u4),
           pin("client", u4)],
     expect=[out("core", ipip(rewrite(u4, dst=LOC4), ITUN4, ETUN4, 0)),
             out("core", ipip(rewrite(u4, dst=LOC4), ITUN4, ETUN4, 1)),
             count("fwd_pkts", 2)])

# ---- MSS clamp ----

s4 = tcp(4, CLI4, SVC4, 40000, 80, "S", mss=1460)
case("mss_clamp_tcp4", "a SYN's MSS clamped to the core MTU less the SRv6 "
     "overhead and the headers (1500 - 64 - 40)",
     acts=[ctl(binding(proto=6, sport=40000, dport=80)), pin("client", s4)],
     expect=[out("core", srv6(rewrite(s4, dst=LOC4, mss=1396), ISID, [ESID])),
             count("mss_clamped")])
s6 = tcp(6, CLI6, SVC6, 40000, 80, "S", mss=1440)
case("mss_clamp_tcp6", "IPv6 SYN clamped to 1500 - 64 - 60",
     acts=[ctl(binding(af=6, proto=6, sport=40000, dport=80)),
           pin("client", s6)],
     expect=[out("core", srv6(rewrite(s6, dst=LOC6, mss=1376), ISID, [ESID])),
             count("mss_clamped")])
s4small = tcp(4, CLI4, SVC4, 40000, 80, "S", mss=1200)
case("mss_small_kept", "a SYN whose MSS is already small is left alone",
     acts=[ctl(binding(proto=6, sport=40000, dport=80)),
           pin("client", s4small)],
     expect=[out("core", srv6(rewrite(s4small, dst=LOC4), ISID, [ESID])),
             count("mss_clamped", 0)])
s4ipip = tcp(4, CLI4, SVC4, 40000, 80, "S", mss=1460)
case("mss_clamp_ipip4", "IPv4 in IPv4: clamped to 1500 - 20 - 40",
     acts=[ctl(binding(proto=6, sport=40000, dport=80, encap="ipip",
                       tunnel=ETUN4)), pin("client", s4ipip)],
     expect=[out("core", ipip(rewrite(s4ipip, dst=LOC4, mss=1440), ITUN4,
                              ETUN4)), count("mss_clamped")])

# ---- TTL and size ----

u4ttl1 = udp(4, CLI4, SVC4, 4000, 53, ttl=1)
case("ttl_expired4", "TTL 1 at the ingress: dropped, ICMP time exceeded "
     "back to the client quoting the rewritten packet",
     acts=[ctl(binding()), pin("client", u4ttl1)],
     expect=[out("client", icmp_err("ttl", ITUN4, rewrite(u4ttl1, dst=LOC4,
                                                          ttl_dec=0))),
             drop("drop_ttl"), count("icmp_sent")])
u6ttl1 = udp(6, CLI6, SVC6, 4000, 53, ttl=1)
case("ttl_expired6", "hop limit 1 at the ingress: ICMPv6 time exceeded",
     acts=[ctl(binding(af=6)), pin("client", u6ttl1)],
     expect=[out("client", icmp_err("ttl", ISID, rewrite(u6ttl1, dst=LOC6,
                                                         ttl_dec=0))),
             drop("drop_ttl")])
big4 = udp(4, CLI4, SVC4, 4000, 53, payload=b"z" * 1450)
case("too_big4", "DF packet that does not fit the core with the SRv6 "
     "overhead: fragmentation needed, MTU 1436",
     acts=[ctl(binding()), pin("client", big4)],
     expect=[out("client", icmp_err("big", ITUN4, rewrite(big4, dst=LOC4),
                                    1436)), drop("drop_too_big")])
big6 = udp(6, CLI6, SVC6, 4000, 53, payload=b"z" * 1430)
case("too_big6", "IPv6 packet too big for the core: ICMPv6 packet too big",
     acts=[ctl(binding(af=6)), pin("client", big6)],
     expect=[out("client", icmp_err("big", ISID, rewrite(big6, dst=LOC6),
                                    1436)), drop("drop_too_big")])
big4nodf = udp(4, CLI4, SVC4, 4000, 53, payload=b"z" * 1450, df=False)
case("too_big4_nodf", "too big without DF: dropped without an ICMP error",
     acts=[ctl(binding()), pin("client", big4nodf)],
     expect=[drop("drop_too_big"), count("icmp_sent", 0)])
case("mtu_option", "--mtu 1400: what fits 1500 does not fit the core",
     opts=["mtu=1400"], acts=[ctl(binding()),
                              pin("client", udp(4, CLI4, SVC4, 4000, 53,
                                                payload=b"z" * 1350))],
     expect=[out("client", icmp_err("big", ITUN4, rewrite(
         udp(4, CLI4, SVC4, 4000, 53, payload=b"z" * 1350), dst=LOC4), 1336)),
         drop("drop_too_big")])

# ---- misses and requests (Mode A, Mode B) ----

case("miss_udp4_request", "no binding: the packet is held, one request with "
     "carriage mode none (the CS-ID stays local)",
     acts=[pin("client", u4)],
     expect=[request("mode=none held=1 cs_id="), count("misses"),
             count("requests"), count("pending_held")])
case("miss_joins", "a second packet of the same flow joins the pending "
     "record: one request",
     acts=[pin("client", u4), pin("client", u4)],
     expect=[request("mode=none held=1"), count("requests"),
             count("pending_held", 2), count("misses", 2)])
case("miss_released", "a held packet leaves, encapsulated, when its binding "
     "arrives", acts=[pin("client", u4), ctl(binding())],
     expect=[out("core", srv6(rewrite(u4, dst=LOC4), ISID, [ESID])),
             count("released"), status("event=installed")])
ERR = {"type": "error", "code": "no-instance", "stage": "cats-select",
       "ts": 2, "msg": "no instance", "flow": flow(17, CLI4, SVC4, 4000, 53)}
case("miss_error", "an error record for the pending flow drops what it "
     "held", acts=[pin("client", u4),
                   ctl(ERR)],
     expect=[drop("drop_pending_error"), count("errors_received")])
case("miss_error_unreach", "with --icmp-unreach the dropped held packet is "
     "answered with an ICMP unreachable", opts=["icmp-unreach"],
     acts=[pin("client", u4),
           ctl(ERR)],
     expect=[out("client", icmp_err("unreach", ITUN4, u4)),
             drop("drop_pending_error")])
case("miss_pending_flow_full", "--pending-flow 1: the second packet of a "
     "pending flow is dropped", opts=["pending-flow=1"],
     acts=[pin("client", u4), pin("client", u4)],
     expect=[drop("drop_pending_flow_full"), count("requests")])
case("miss_intercept", "an interception address: a request without CS-ID",
     acts=[pin("client", udp(4, CLI4, ICPT4, 4000, 53))],
     expect=[request("mode=none held=1 cs_id="), count("requests")])
case("modea_destopt", "Mode A: the CATS option in Destination Options; "
     "its CS-ID travels in the request",
     acts=[pin("client", modea("S1"))],
     expect=[request("mode=a cs_id=S1 held=1"), count("requests")])
case("modea_hbh", "Mode A in Hop-by-Hop Options",
     acts=[pin("client", modea("S1", hbh=True))],
     expect=[request("mode=a cs_id=S1")])
case("modea_delay", "Mode A with a delay constraint",
     acts=[pin("client", modea("S1", data=tlvs("S1", delay=5000)))],
     expect=[request("mode=a cs_id=S1 max_delay_us=5000")])
case("modea_mismatch", "Mode A CS-ID that disagrees with the service "
     "address: refused (--precedence refuse)",
     acts=[pin("client", modea("S2"))], expect=[drop("drop_csid_mismatch")])
case("modea_precedence_address", "--precedence address: the address's "
     "CS-ID wins", opts=["precedence=address"],
     acts=[pin("client", modea("S2"))],
     expect=[request("mode=a cs_id=S1")])
case("modea_bad_tlv", "a malformed CATS option (unknown TLV type below 128)",
     acts=[pin("client", modea("S1", data=b"\x05\x01\x00"))],
     expect=[drop("drop_bad_option")])
MB = bytes([0xCA, 0x75, 1, len(tlvs("S1"))]) + tlvs("S1")
case("modeb_request", "Mode B: the envelope at UDP payload offset 0 of "
     "port 9000 (--mode-b udp:9000:0)", opts=["mode-b=udp:9000:0"],
     acts=[pin("client", udp(4, CLI4, SVC4, 4000, 9000, payload=MB + PAY))],
     expect=[request("mode=b cs_id=S1 held=1")])
case("modeb_bad", "Mode B envelope of a bad version", opts=["mode-b=udp:9000:0"],
     acts=[pin("client", udp(4, CLI4, SVC4, 4000, 9000,
                             payload=bytes([0xCA, 0x75, 2, 0]) + PAY))],
     expect=[drop("drop_bad_modeb")])

# ---- ingress drops ----

case("not_service", "a destination that is no service address",
     acts=[pin("client", udp(4, CLI4, "203.0.113.99", 4000, 53))],
     expect=[drop("drop_not_service")])
case("tcp_no_binding", "a mid-connection TCP packet never starts a "
     "selection", acts=[pin("client", tcp(4, CLI4, SVC4, 40000, 80, "A"))],
     expect=[drop("drop_no_binding_tcp")])
case("multicast_ignored", "multicast is the kernel's",
     acts=[pin("client", udp(4, CLI4, "224.0.0.251", 5353, 5353))],
     expect=[count("ignored")])
case("bad_truncated", "an IPv4 header cut short",
     acts=[pin("client", u4[:12])], expect=[drop("drop_truncated")])
case("bad_version", "IP version 5",
     acts=[pin("client", bytes([0x55]) + u4[1:])],
     expect=[drop("drop_bad_version")])
def with_hdr_csum(b):
    """An IPv4 header with its checksum made good again."""
    b = bytearray(b)
    b[10:12] = b"\0\0"
    s = sum(int.from_bytes(b[i:i + 2], "big") for i in range(0, 20, 2))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    b[10:12] = (~s & 0xffff).to_bytes(2, "big")
    return bytes(b)


badlen = bytearray(u4)
badlen[2:4] = (200).to_bytes(2, "big")
case("bad_length", "IPv4 total length beyond the bytes there are",
     acts=[pin("client", with_hdr_csum(badlen))],
     expect=[drop("drop_bad_length")])
badsum = bytearray(u4)
badsum[10] ^= 0x55
case("bad_hdr_csum", "IPv4 header checksum wrong",
     acts=[pin("client", bytes(badsum))], expect=[drop("drop_bad_hdr_csum")])
case("bad_fragment", "a first fragment (more fragments set)",
     acts=[pin("client", bytes(IP(src=CLI4, dst=SVC4, flags="MF", id=9) /
                               UDP(sport=4000, dport=53) / Raw(PAY)))],
     expect=[drop("drop_fragment")])
ext9 = ip6(CLI6, SVC6)
for _ in range(9):
    ext9 = ext9 / IPv6ExtHdrDestOpt()
case("bad_too_many_ext", "nine extension headers (the cap is 8)",
     acts=[pin("client", bytes(ext9 / UDP(sport=4000, dport=53) / Raw(PAY)))],
     expect=[drop("drop_too_many_ext")])
case("bad_unknown_proto", "GRE from a client",
     acts=[pin("client", bytes(ip4(CLI4, SVC4) / GRE() / Raw(PAY)))],
     expect=[drop("drop_unknown_proto")])

# ---- ingress: the reverse ----

r4 = udp(4, LOC4, CLI4, 53, 4000)
case("rev_srv6_restore4", "a reply decapsulated at the ingress: the source "
     "restored to the service address, TTL - 1, out to the client",
     acts=[ctl(binding()), pin("core", srv6(r4, ESID, [ISID]))],
     expect=[out("client", rewrite(r4, src=SVC4)), count("rev_pkts")])
r4p = udp(4, LOC4, CLI4, 5353, 4000)
case("rev_restore_port", "address and port restored (the binding rewrote "
     "53 to 5353)", acts=[ctl(binding(port=5353)),
                          pin("core", srv6(r4p, ESID, [ISID]))],
     expect=[out("client", rewrite(r4p, src=SVC4, sport=53))])
r6 = udp(6, LOC6, CLI6, 53, 4000)
case("rev_srv6_restore6", "IPv6 reply restored",
     acts=[ctl(binding(af=6)), pin("core", srv6(r6, ESID, [ISID]))],
     expect=[out("client", rewrite(r6, src=SVC6)), count("rev_pkts")])
case("rev_ipip4", "a reply in IPv4-in-IPv4 to the ingress's tunnel address",
     acts=[ctl(binding(encap="ipip", tunnel=ETUN4)),
           pin("core", ipip(r4, ETUN4, ITUN4))],
     expect=[out("client", rewrite(r4, src=SVC4))])
case("rev_no_binding", "a decapsulated packet of no binding at an ingress "
     "without a site port", acts=[pin("core", srv6(r4, ESID, [ISID]))],
     expect=[drop("drop_no_reverse_binding")])
case("core_segments_left", "SRv6 to our SID with a segment still to visit",
     acts=[pin("core", bytes(ip6(ESID, ISID) / IPv6ExtHdrSegmentRouting(
         nh=4, addresses=["2001:db8:9::9", ISID], segleft=1, lastentry=1) /
         Raw(r4)))], expect=[drop("drop_segments_left")])
case("core_bad_srh", "an SRH whose segments left exceed its last entry",
     acts=[pin("core", bytes(ip6(ESID, ISID) / IPv6ExtHdrSegmentRouting(
         nh=4, addresses=[ISID], segleft=2, lastentry=0) / Raw(r4)))],
     expect=[drop("drop_bad_srh")])
case("core_not_tunnel", "a plain packet on the core", acts=[pin("core", r4)],
     expect=[drop("drop_not_tunnel")])
case("core_not_ours", "a tunnel packet to an address that is no SID of ours",
     acts=[pin("core", ipip(r4, ETUN4, "10.99.0.77"))],
     expect=[drop("drop_not_ours")])
fwd_srv6 = srv6(rewrite(u4, dst=LOC4), ISID, [ESID])
qerr = bytes(ip6("2001:db8:cc::9", ISID) / ICMPv6DestUnreach(code=0) /
             Raw(fwd_srv6))
case("icmp_quotes_tunnel", "an ICMPv6 error from a core router quoting one "
     "of our SRv6 packets: counted as a path error",
     acts=[ctl(binding()), pin("core", qerr)],
     expect=[count("path_errors"), count("path_down_sent", 0)])
case("icmp_quotes_tunnel_path_down", "with --path-down the binding whose "
     "packet it was is reported", opts=["path-down"],
     acts=[ctl(binding()), pin("core", qerr)],
     expect=[count("path_errors"), count("path_down_sent"),
             status("event=path-down unreachable=2001:db8:2::100")])
qerr4 = bytes(IP(src="10.99.0.9", dst=ITUN4, ttl=64) / ICMP(type=11) /
              Raw(ipip(rewrite(u4, dst=LOC4), ITUN4, ETUN4)[:48]))
case("icmp_quotes_ipip", "an ICMP time exceeded quoting our IPv4-in-IPv4 "
     "packet", acts=[ctl(binding(encap="ipip", tunnel=ETUN4)),
                     pin("core", qerr4)], expect=[count("path_errors")])

# ---- egress ----

e4 = rewrite(u4, dst=LOC4, ttl_dec=1)
case("eg_srv6_deliver4", "the egress decapsulates and delivers to the "
     "instance, TTL - 1", role="egress",
     acts=[ctl(binding()), pin("core", srv6(e4, ISID, [ESID]))],
     expect=[out("site", rewrite(e4)), count("eg_fwd_pkts")])
e6 = rewrite(u6, dst=LOC6, ttl_dec=1)
case("eg_srv6_deliver6", "IPv6 inner delivered", role="egress",
     acts=[ctl(binding(af=6)), pin("core", srv6(e6, ISID, [ESID]))],
     expect=[out("site", rewrite(e6)), count("eg_fwd_pkts")])
case("eg_ipip4_deliver", "IPv4-in-IPv4 to the egress's tunnel address",
     role="egress", acts=[ctl(binding(encap="ipip", tunnel=ETUN4)),
                          pin("core", ipip(e4, ITUN4, ETUN4))],
     expect=[out("site", rewrite(e4))])
case("eg_unbound_owned", "no binding, but the destination is in an owned "
     "prefix (--owns): delivered", role="egress",
     acts=[pin("core", srv6(e4, ISID, [ESID]))],
     expect=[out("site", rewrite(e4)), count("eg_unbound")])
case("eg_not_owned", "no binding, destination outside the owned prefixes",
     role="egress", acts=[pin("core", srv6(udp(4, CLI4, "192.0.2.99", 4000,
                                                53), ISID, [ESID]))],
     expect=[drop("drop_not_owned")])
er4 = udp(4, LOC4, CLI4, 53, 4000)
case("eg_reply_srv6", "an instance's reply goes back in SRv6 to the "
     "binding's return SID", role="egress",
     acts=[ctl(binding()), pin("site", er4)],
     expect=[out("core", srv6(rewrite(er4), ESID, [ISID])),
             count("eg_rev_pkts")])
er6 = udp(6, LOC6, CLI6, 53, 4000)
case("eg_reply_srv6_6", "an IPv6 reply in SRv6", role="egress",
     acts=[ctl(binding(af=6)), pin("site", er6)],
     expect=[out("core", srv6(rewrite(er6), ESID, [ISID]))])
case("eg_reply_ipip4", "a reply in IPv4-in-IPv4 to the return tunnel",
     role="egress", acts=[ctl(binding(encap="ipip", tunnel=ETUN4,
                                      rev_sids=(), rev_tunnel=ITUN4)),
                          pin("site", er4)],
     expect=[out("core", ipip(rewrite(er4), ETUN4, ITUN4))])
case("eg_reply_ipip_return", "IP-in-IP and no return path in the binding: "
     "the reply goes back IP-in-IP (the binding's data plane, no SRH) to the "
     "owner's --return address (its SID, which is its tunnel endpoint too)",
     role="egress", opts=["return=IF-1=%s" % ISID],
     acts=[ctl(binding(encap="ipip", tunnel=ESID, rev_sids=())),
           pin("site", er4)],
     expect=[out("core", ipip(rewrite(er4), ESID, ISID)),
             count("eg_rev_pkts")])
case("eg_reply_learned", "no return SID in the binding: learned from the "
     "outer source of the first forward packet", role="egress",
     acts=[ctl(binding(rev_sids=())), pin("core", srv6(e4, ISID, [ESID])),
           pin("site", er4)],
     expect=[out("site", rewrite(e4)),
             out("core", srv6(rewrite(er4), ESID, [ISID]))])
case("eg_reply_not_learned", "a reply before any forward packet taught the "
     "return path", role="egress",
     acts=[ctl(binding(rev_sids=())), pin("site", er4)],
     expect=[drop("drop_no_return_path")])
case("eg_reply_no_binding", "a reply of no binding: never to an arbitrary "
     "client", role="egress", acts=[pin("site", er4)],
     expect=[drop("drop_no_reverse_binding")])
er4ttl = udp(4, LOC4, CLI4, 53, 4000, ttl=1)
case("eg_reply_ttl", "a reply with TTL 1: ICMP time exceeded to the "
     "instance", role="egress", acts=[ctl(binding()), pin("site", er4ttl)],
     expect=[out("site", icmp_err("ttl", ETUN4, er4ttl)), drop("drop_ttl")])
case("eg_ttl_inner", "a decapsulated packet with TTL 1 is dropped",
     role="egress", acts=[ctl(binding()),
                          pin("core", srv6(udp(4, CLI4, LOC4, 4000, 53, ttl=1),
                                           ISID, [ESID]))],
     expect=[drop("drop_ttl")])

# ---- TCP connection tracking ----

TB = dict(proto=6, sport=40000, dport=80)
c_syn = tcp(4, CLI4, SVC4, 40000, 80, "S")
c_ack = tcp(4, CLI4, SVC4, 40000, 80, "A")
c_fin = tcp(4, CLI4, SVC4, 40000, 80, "FA")
c_rst = tcp(4, CLI4, SVC4, 40000, 80, "R")
i_sa = tcp(4, LOC4, CLI4, 80, 40000, "SA")
i_ack = tcp(4, LOC4, CLI4, 80, 40000, "A")
i_fin = tcp(4, LOC4, CLI4, 80, 40000, "FA")
i_rst = tcp(4, LOC4, CLI4, 80, 40000, "RA")


def to_eg(p):
    """A client's packet as the ingress sends it to the egress."""
    return srv6(rewrite(p, dst=LOC4), ISID, [ESID])


def from_eg(p):
    """An instance's packet as the egress sends it to the ingress."""
    return srv6(p, ESID, [ISID])


def at_client(p):
    return rewrite(p, src=SVC4)


HANDSHAKE = [pin("client", c_syn), pin("core", from_eg(i_sa)),
             pin("client", c_ack)]
HANDSHAKE_OUT = [out("core", to_eg(c_syn)), out("client", at_client(i_sa)),
                 out("core", to_eg(c_ack))]
CLOSE = [pin("client", c_fin), pin("core", from_eg(i_fin)),
         pin("client", c_ack)]
CLOSE_OUT = [out("core", to_eg(c_fin)), out("client", at_client(i_fin)),
             out("core", to_eg(c_ack))]

case("tcp_handshake", "TCP tracking: SYN, SYN-ACK, ACK make a bound "
     "connection established",
     acts=[ctl(binding(**TB))] + HANDSHAKE,
     expect=HANDSHAKE_OUT + [count("tcp_established"), count("tcp_none", 0),
                             count("tcp_syn_sent", 0)])
case("tcp_syn_sent", "TCP tracking: a client's SYN alone", acts=[
     ctl(binding(**TB)), pin("client", c_syn)],
     expect=[out("core", to_eg(c_syn)), count("tcp_syn_sent")])
case("tcp_syn_recv", "TCP tracking: the instance's SYN-ACK", acts=[
     ctl(binding(**TB)), pin("client", c_syn), pin("core", from_eg(i_sa))],
     expect=[out("core", to_eg(c_syn)), out("client", at_client(i_sa)),
             count("tcp_syn_recv")])
case("tcp_midstream", "TCP tracking: a binding sent again after a restart "
     "is picked up established by its first packet",
     acts=[ctl(binding(**TB)), pin("client", c_ack)],
     expect=[out("core", to_eg(c_ack)), count("tcp_established")])
case("tcp_fin_client", "TCP tracking: the client's FIN half-closes",
     acts=[ctl(binding(**TB))] + HANDSHAKE + [pin("client", c_fin)],
     expect=HANDSHAKE_OUT + [out("core", to_eg(c_fin)),
                             count("tcp_fin_wait"), count("tcp_established", 0)])
case("tcp_fin_instance", "TCP tracking: the instance's FIN (the reverse at "
     "the ingress) half-closes",
     acts=[ctl(binding(**TB))] + HANDSHAKE + [pin("core", from_eg(i_fin))],
     expect=HANDSHAKE_OUT + [out("client", at_client(i_fin)),
                             count("tcp_fin_wait")])
case("tcp_fin_both", "TCP tracking: FINs of both sides, then the last ACK: "
     "time-wait", acts=[ctl(binding(**TB))] + HANDSHAKE + CLOSE,
     expect=HANDSHAKE_OUT + CLOSE_OUT + [count("tcp_time_wait")])
case("tcp_fin_released", "TCP tracking: after both FINs the binding and its "
     "reverse state are released once time-wait (10 s) passes, reported "
     "expired, reason tcp-fin",
     acts=[ctl(binding(**TB))] + HANDSHAKE + CLOSE + [tick(11500)],
     expect=HANDSHAKE_OUT + CLOSE_OUT + [
         status("event=expired reason=tcp-fin id=1"),
         count("bindings_expired"), count("bindings", 0),
         count("tcp_time_wait", 0), count("tcp_ended_time_wait")])
case("tcp_fin_kept", "TCP tracking: within time-wait the binding stays",
     acts=[ctl(binding(**TB))] + HANDSHAKE + CLOSE + [tick(10500)],
     expect=HANDSHAKE_OUT + CLOSE_OUT + [count("bindings_expired", 0),
                                         count("tcp_time_wait")])
case("tcp_rst_instance", "TCP tracking: the instance's RST closes; released "
     "after close (10 s), reason tcp-rst",
     acts=[ctl(binding(**TB))] + HANDSHAKE + [pin("core", from_eg(i_rst)),
                                              tick(11500)],
     expect=HANDSHAKE_OUT + [out("client", at_client(i_rst)),
                             status("event=expired reason=tcp-rst"),
                             count("tcp_ended_close"), count("tcp_close", 0)])
case("tcp_rst_client", "TCP tracking: the client's RST",
     acts=[ctl(binding(**TB))] + HANDSHAKE + [pin("client", c_rst)],
     expect=HANDSHAKE_OUT + [out("core", to_eg(c_rst)), count("tcp_close")])
case("tcp_rst_refused", "TCP tracking: a connection refused (SYN, RST-ACK)",
     acts=[ctl(binding(**TB)), pin("client", c_syn),
           pin("core", from_eg(i_rst))],
     expect=[out("core", to_eg(c_syn)), out("client", at_client(i_rst)),
             count("tcp_close")])
case("tcp_syn_timeout", "TCP tracking: a SYN never answered: released after "
     "syn-sent (30 s), reason tcp-syn",
     acts=[ctl(binding(**TB)), pin("client", c_syn), tick(32000)],
     expect=[out("core", to_eg(c_syn)), status("event=expired reason=tcp-syn"),
             count("tcp_ended_syn_sent")])
case("tcp_half_closed_timeout", "TCP tracking: a half-closed connection idle "
     "for fin-wait (60 s) is released, reason tcp-fin-wait",
     acts=[ctl(binding(**TB))] + HANDSHAKE + [pin("client", c_fin),
                                              tick(62000)],
     expect=HANDSHAKE_OUT + [out("core", to_eg(c_fin)),
                             status("event=expired reason=tcp-fin-wait"),
                             count("tcp_ended_fin_wait")])
case("tcp_established_idle", "TCP tracking: an established connection lives "
     "as long as the binding's idle lifetime (5 s here), reason idle",
     acts=[ctl(binding(idle=5000, **TB))] + HANDSHAKE + [tick(7000)],
     expect=HANDSHAKE_OUT + [status("event=expired reason=idle"),
                             count("tcp_ended_established")])
case("tcp_established_no_idle", "TCP tracking: without an idle lifetime an "
     "established connection is never expired by the forwarder",
     acts=[ctl(binding(**TB))] + HANDSHAKE + [tick(10000000)],
     expect=HANDSHAKE_OUT + [count("bindings_expired", 0),
                             count("tcp_established")])
case("tcp_established_option", "--tcp-timeout established=20s caps a "
     "binding's longer idle lifetime", opts=["tcp-timeout=established=20s"],
     acts=[ctl(binding(idle=600000, **TB))] + HANDSHAKE + [tick(22500)],
     expect=HANDSHAKE_OUT + [status("event=expired reason=idle")])
case("tcp_timeout_option", "--tcp-timeout time-wait=2s",
     opts=["tcp-timeout=time-wait=2s"],
     acts=[ctl(binding(**TB))] + HANDSHAKE + CLOSE + [tick(3500)],
     expect=HANDSHAKE_OUT + CLOSE_OUT + [status("event=expired "
                                                "reason=tcp-fin")])
case("tcp_idle_bounds_state", "the binding's idle lifetime (1 s) bounds a "
     "closing state's timeout too",
     acts=[ctl(binding(idle=1000, **TB))] + HANDSHAKE + CLOSE + [tick(2500)],
     expect=HANDSHAKE_OUT + CLOSE_OUT + [status("event=expired "
                                                "reason=tcp-fin")])
case("tcp_reuse", "TCP tracking: a new SYN on the 5-tuple of a closed "
     "connection ends the old binding (expired, tcp-fin) and starts a new "
     "selection: held, one request",
     acts=[ctl(binding(**TB))] + HANDSHAKE + CLOSE + [pin("client", c_syn)],
     expect=HANDSHAKE_OUT + CLOSE_OUT + [
         status("event=expired reason=tcp-fin id=1"),
         request("mode=none held=1"), count("tcp_reused"), count("misses"),
         count("requests"), count("pending_held"), count("bindings", 0)])
case("tcp_reuse_after_rst", "TCP tracking: a new SYN after a RST: the same",
     acts=[ctl(binding(**TB))] + HANDSHAKE + [pin("client", c_rst),
                                              pin("client", c_syn)],
     expect=HANDSHAKE_OUT + [out("core", to_eg(c_rst)),
                             status("event=expired reason=tcp-rst id=1"),
                             request("mode=none held=1"), count("tcp_reused")])
case("tcp_reuse_bound", "TCP tracking: the reused 5-tuple's new binding "
     "releases the held SYN to its instance",
     acts=[ctl(binding(**TB))] + HANDSHAKE + CLOSE + [
         pin("client", c_syn),
         ctl(binding(bid=2, loc="198.51.100.21", **TB))],
     expect=HANDSHAKE_OUT + CLOSE_OUT + [
         out("core", srv6(rewrite(c_syn, dst="198.51.100.21"), ISID, [ESID])),
         status("event=installed id=2"), count("released"),
         count("tcp_syn_sent")])
case("tcp_syn_retransmit", "TCP tracking: a SYN sent again while the first "
     "is unanswered keeps its binding",
     acts=[ctl(binding(**TB)), pin("client", c_syn), pin("client", c_syn)],
     expect=[out("core", to_eg(c_syn)), out("core", to_eg(c_syn)),
             count("tcp_reused", 0), count("requests", 0)])
case("tcp_state_off", "--tcp-state off: no tracking, the binding stays "
     "after both FINs", opts=["tcp-state=off"],
     acts=[ctl(binding(**TB))] + HANDSHAKE + CLOSE + [tick(30000)],
     expect=HANDSHAKE_OUT + CLOSE_OUT + [count("bindings_expired", 0),
                                         count("tcp_time_wait", 0),
                                         count("tcp_none", 0)])
case("tcp_state_off_fin", "--tcp-state off: a FIN is an ordinary packet "
     "(the fast path takes it)", opts=["tcp-state=off"],
     acts=[ctl(binding(**TB))] + HANDSHAKE + [pin("client", c_fin)],
     expect=HANDSHAKE_OUT + [out("core", to_eg(c_fin))])
case("udp_idle", "UDP keeps idle expiry", acts=[
     ctl(binding(idle=3000)), pin("client", u4), tick(4500)],
     expect=[out("core", srv6(rewrite(u4, dst=LOC4), ISID, [ESID])),
             status("event=expired reason=idle"), count("tcp_none", 0)])

# the egress side of the same connections
e_syn, e_ack, e_fin = (rewrite(p, dst=LOC4) for p in (c_syn, c_ack, c_fin))
E_HS = [pin("core", srv6(e_syn, ISID, [ESID])), pin("site", i_sa),
        pin("core", srv6(e_ack, ISID, [ESID]))]
E_HS_OUT = [out("site", rewrite(e_syn)), out("core", from_eg(rewrite(i_sa))),
            out("site", rewrite(e_ack))]
E_CLOSE = [pin("site", i_fin), pin("core", srv6(e_fin, ISID, [ESID])),
           pin("site", i_ack)]
E_CLOSE_OUT = [out("core", from_eg(rewrite(i_fin))), out("site", rewrite(e_fin)),
               out("core", from_eg(rewrite(i_ack)))]
case("tcp_eg_handshake", "TCP tracking at the egress: the decapsulated SYN, "
     "the instance's SYN-ACK, the ACK", role="egress",
     acts=[ctl(binding(**TB))] + E_HS,
     expect=E_HS_OUT + [count("tcp_established")])
case("tcp_eg_fin_released", "TCP tracking at the egress: the instance closes "
     "first; released after time-wait, reason tcp-fin", role="egress",
     acts=[ctl(binding(**TB))] + E_HS + E_CLOSE + [tick(11500)],
     expect=E_HS_OUT + E_CLOSE_OUT + [status("event=expired reason=tcp-fin"),
                                      count("tcp_ended_time_wait")])
case("tcp_eg_rst", "TCP tracking at the egress: the instance's RST",
     role="egress", acts=[ctl(binding(**TB))] + E_HS + [pin("site", i_rst)],
     expect=E_HS_OUT + [out("core", from_eg(rewrite(i_rst))),
                        count("tcp_close")])
case("tcp_eg_displaced", "TCP tracking at the egress: a new binding of a "
     "closed connection's flow takes its place (the old one expired, "
     "tcp-fin); the new SYN goes to the new instance", role="egress",
     acts=[ctl(binding(**TB))] + E_HS + E_CLOSE + [
         ctl(binding(bid=2, **TB)), pin("core", srv6(e_syn, ISID, [ESID]))],
     expect=E_HS_OUT + E_CLOSE_OUT + [
         out("site", rewrite(e_syn)),
         status("event=expired reason=tcp-fin id=1"),
         status("event=installed id=2"), count("tcp_reused"),
         count("tcp_syn_sent"), count("bindings_refused", 0)])
case("tcp_eg_not_closed_bound", "a new binding of an open connection's flow "
     "is still refused (flow-bound)", role="egress",
     acts=[ctl(binding(**TB))] + E_HS + [ctl(binding(bid=2, **TB))],
     expect=E_HS_OUT + [status("event=failed reason=flow-bound"),
                        count("bindings_refused")])
case("tcp_eg_reopen", "TCP tracking at the egress: a SYN on a closed "
     "connection's binding (an ingress that kept it) opens it again",
     role="egress",
     acts=[ctl(binding(**TB))] + E_HS + E_CLOSE + [
         pin("core", srv6(e_syn, ISID, [ESID]))],
     expect=E_HS_OUT + E_CLOSE_OUT + [out("site", rewrite(e_syn)),
                                      count("tcp_reopened"),
                                      count("tcp_syn_sent")])

# ---- SR-MPLS ----

ELBL, ILBL, CORE_LBL = 16002, 16001, 16100
MB = dict(encap="srmpls", labels=(ELBL,), rev_sids=())
case("in_udp4_mpls", "SR-MPLS: destination rewritten, the binding's label "
     "pushed (TTL 64, bottom of stack), out as MPLS",
     acts=[ctl(binding(**MB)), pin("client", u4)],
     expect=[out("core:mpls", mpls(rewrite(u4, dst=LOC4), [ELBL])),
             count("fwd_pkts")])
case("in_udp6_mpls", "SR-MPLS, IPv6 inner",
     acts=[ctl(binding(af=6, **MB)), pin("client", u6)],
     expect=[out("core:mpls", mpls(rewrite(u6, dst=LOC6), [ELBL]))])
case("in_udp4_mpls_3labels", "SR-MPLS: a stack of three, top first",
     acts=[ctl(binding(encap="srmpls", labels=(CORE_LBL, 16200, ELBL),
                       rev_sids=())), pin("client", u4)],
     expect=[out("core:mpls", mpls(rewrite(u4, dst=LOC4),
                                   [CORE_LBL, 16200, ELBL]))])
u4ef = udp(4, CLI4, SVC4, 4000, 53, tos=0xb8)
case("in_udp4_mpls_tc", "SR-MPLS: the traffic class is the inner DSCP's "
     "class selector (EF: 5)",
     acts=[ctl(binding(**MB)), pin("client", u4ef)],
     expect=[out("core:mpls", mpls(rewrite(u4ef, dst=LOC4), [ELBL]))])
case("in_mpls_explicit_null4", "--explicit-null: an IPv4 explicit null "
     "under the stack", opts=["explicit-null"],
     acts=[ctl(binding(**MB)), pin("client", u4)],
     expect=[out("core:mpls", mpls(rewrite(u4, dst=LOC4), [ELBL],
                                   xnull=True))])
case("in_mpls_explicit_null6", "--explicit-null: an IPv6 explicit null",
     opts=["explicit-null"], acts=[ctl(binding(af=6, **MB)),
                                   pin("client", u6)],
     expect=[out("core:mpls", mpls(rewrite(u6, dst=LOC6), [ELBL],
                                   xnull=True))])
case("in_mpls_reserved_label", "a reserved label (below 16) in the stack: "
     "refused; the flow's packet is a miss",
     acts=[ctl(binding(encap="srmpls", labels=(3,), rev_sids=())),
           pin("client", u4)],
     expect=[status("event=failed reason=bad-binding"),
             count("bindings_refused"), request("mode=none held=1")])
s4m = tcp(4, CLI4, SVC4, 40000, 80, "S", mss=1460)
case("mss_clamp_mpls", "SR-MPLS: a SYN's MSS clamped to 1500 - 4 - 40",
     acts=[ctl(binding(proto=6, sport=40000, dport=80, **MB)),
           pin("client", s4m)],
     expect=[out("core:mpls", mpls(rewrite(s4m, dst=LOC4, mss=1456), [ELBL])),
             count("mss_clamped")])
rm4 = udp(4, LOC4, CLI4, 53, 4000)
case("rev_mpls_restore4", "SR-MPLS return to the ingress's label: popped, "
     "the source restored, out to the client", opts=["label=%d" % ILBL],
     acts=[ctl(binding(**MB)), pin("core:mpls", mpls(rm4, [ILBL]))],
     expect=[out("client", rewrite(rm4, src=SVC4)), count("rev_pkts")])
case("rev_mpls_php", "SR-MPLS return whose last label the hop before "
     "popped: a plain IP packet of the bound flow on the core",
     acts=[ctl(binding(**MB)), pin("core", rm4)],
     expect=[out("client", rewrite(rm4, src=SVC4)), count("rev_pkts")])
case("rev_srv6_plain_refused", "a plain IP packet on the core of a flow "
     "bound with SRv6 is no tunnel packet", acts=[ctl(binding()),
                                                 pin("core", rm4)],
     expect=[drop("drop_not_tunnel")])
em4 = rewrite(u4, dst=LOC4, ttl_dec=1)
case("eg_mpls_deliver4", "the egress pops its label and delivers",
     role="egress", opts=["label=%d" % ELBL],
     acts=[ctl(binding(**MB)), pin("core:mpls", mpls(em4, [ELBL]))],
     expect=[out("site", rewrite(em4)), count("eg_fwd_pkts")])
em6 = rewrite(u6, dst=LOC6, ttl_dec=1)
case("eg_mpls_deliver6", "the egress pops its label, IPv6 inner",
     role="egress", opts=["label=%d" % ELBL],
     acts=[ctl(binding(af=6, **MB)), pin("core:mpls", mpls(em6, [ELBL]))],
     expect=[out("site", rewrite(em6))])
case("eg_mpls_explicit_null", "an explicit null under the egress's label",
     role="egress", opts=["label=%d" % ELBL],
     acts=[ctl(binding(**MB)), pin("core:mpls", mpls(em4, [ELBL],
                                                     xnull=True))],
     expect=[out("site", rewrite(em4))])
case("eg_mpls_null_only", "an explicit null alone (the hop before popped "
     "the egress's label)", role="egress", opts=["label=%d" % ELBL],
     acts=[ctl(binding(**MB)), pin("core:mpls", mpls(em4, [], xnull=True))],
     expect=[out("site", rewrite(em4))])
case("eg_mpls_php", "a plain IP packet of a flow bound with SR-MPLS "
     "(penultimate hop popping)", role="egress",
     acts=[ctl(binding(**MB)), pin("core", em4)],
     expect=[out("site", rewrite(em4)), count("eg_fwd_pkts")])
case("eg_mpls_unbound_owned", "no binding: an owned destination is "
     "delivered as for SRv6", role="egress", opts=["label=%d" % ELBL],
     acts=[pin("core:mpls", mpls(em4, [ELBL]))],
     expect=[out("site", rewrite(em4)), count("eg_unbound")])
case("eg_mpls_not_ours", "a label that is not the egress's", role="egress",
     opts=["label=%d" % ELBL], acts=[pin("core:mpls", mpls(em4, [16999]))],
     expect=[drop("drop_not_ours")])
case("eg_mpls_entropy", "an entropy label indicator and entropy label "
     "(RFC 6790) under the egress's label are popped too", role="egress",
     opts=["label=%d" % ELBL],
     acts=[ctl(binding(**MB)),
           pin("core:mpls", bytes(MPLS(label=ELBL, s=0, ttl=60))[:4] +
               bytes(MPLS(label=7, s=0, ttl=0))[:4] +
               bytes(MPLS(label=12345, s=1, ttl=0))[:4] + em4)],
     expect=[drop("drop_ttl")])
case("eg_mpls_entropy_ok", "entropy labels popped, delivered", role="egress",
     opts=["label=%d" % ELBL],
     acts=[ctl(binding(**MB)),
           pin("core:mpls", bytes(MPLS(label=ELBL, s=0, ttl=60))[:4] +
               bytes(MPLS(label=7, s=0, ttl=60))[:4] +
               bytes(MPLS(label=12345, s=1, ttl=60))[:4] + em4)],
     expect=[out("site", rewrite(em4))])
case("eg_mpls_ttl0", "a label with TTL 0", role="egress",
     opts=["label=%d" % ELBL], acts=[pin("core:mpls", mpls(em4, [ELBL],
                                                           ttl=0))],
     expect=[drop("drop_ttl")])
case("eg_mpls_no_bottom", "a label stack without its bottom", role="egress",
     opts=["label=%d" % ELBL],
     acts=[pin("core:mpls", bytes(MPLS(label=ELBL, s=0, ttl=64))[:4])],
     expect=[drop("drop_truncated")])
case("eg_mpls_not_ip", "under the stack is no IP packet", role="egress",
     opts=["label=%d" % ELBL],
     acts=[pin("core:mpls", bytes(MPLS(label=ELBL, s=1, ttl=64))[:4] +
               b"\x55" + em4[1:])],
     expect=[drop("drop_bad_mpls")])
case("eg_mpls_null_wrong_family", "an IPv6 explicit null over an IPv4 "
     "packet", role="egress", opts=["label=%d" % ELBL],
     acts=[pin("core:mpls", bytes(MPLS(label=2, s=1, ttl=64))[:4] + em4)],
     expect=[drop("drop_bad_mpls")])
case("eg_mpls_too_many", "a label stack of 19 entries", role="egress",
     opts=["label=%d" % ELBL],
     acts=[pin("core:mpls", b"".join(bytes(MPLS(label=ELBL, s=0, ttl=64))[:4]
                                     for _ in range(18)) +
               bytes(MPLS(label=ELBL, s=1, ttl=64))[:4] + em4)],
     expect=[drop("drop_bad_mpls")])
erm4 = udp(4, LOC4, CLI4, 53, 4000)
case("eg_reply_mpls", "the instance's reply: the return label stack of the "
     "binding's owner (--return IF-1=mpls:16001)", role="egress",
     opts=["return=IF-1=mpls:%d" % ILBL],
     acts=[ctl(binding(**MB)), pin("site", erm4)],
     expect=[out("core:mpls", mpls(rewrite(erm4), [ILBL])),
             count("eg_rev_pkts")])
case("eg_reply_mpls_2labels", "a return label stack of two",
     role="egress", opts=["return=IF-1=mpls:%d/%d" % (CORE_LBL, ILBL)],
     acts=[ctl(binding(**MB)), pin("site", erm4)],
     expect=[out("core:mpls", mpls(rewrite(erm4), [CORE_LBL, ILBL]))])
case("eg_reply_mpls_no_return", "SR-MPLS and no return label stack: no "
     "return path", role="egress",
     acts=[ctl(binding(**MB)), pin("site", erm4)],
     expect=[drop("drop_no_return_path")])
case("eg_mpls_srv6_return", "forward SR-MPLS, return SRv6 (rev.encap srv6 "
     "with its SIDs)", role="egress", opts=["label=%d" % ELBL],
     acts=[ctl(binding(encap="srmpls", labels=(ELBL,), rev_encap="srv6")),
           pin("site", erm4)],
     expect=[out("core", srv6(rewrite(erm4), ESID, [ISID]))])

# ---- the configured fallback ----

u4b = udp(4, CLI4, SVC4, 4001, 53)
u4c = udp(4, CLI4, SVC4, 4002, 53)
FB = ["fallback=S1=20s"]
FB_OUT = out("core", srv6(rewrite(u4b, dst=LOC4), ISID, [ESID]))
HELLO = {"type": "status", "fwd": "cats-bind", "event": "hello", "ts": 5,
         "epoch": 1}
case("fb_deadline", "fallback: a new flow of a fallback service the C-PS "
     "does not answer within the deadline goes to the candidate its "
     "bindings named", opts=FB,
     acts=[ctl(binding()), pin("client", u4b), tick(2100)],
     expect=[FB_OUT, count("fallback_bound"), count("released"),
             count("requests"), count("drop_pending_timeout", 0),
             count("bindings", 2)])
case("fb_channel_down", "fallback: the C-PS's channel down: bound at once",
     opts=FB + ["select-down"], acts=[ctl(binding()), pin("client", u4b)],
     expect=[FB_OUT, count("fallback_bound"), count("request_fail")])
case("fb_not_configured", "no --fallback: the unanswered flow is dropped at "
     "its deadline", acts=[ctl(binding()), pin("client", u4b), tick(2100)],
     expect=[drop("drop_pending_timeout"), count("fallback_bound", 0)])
case("fb_other_service", "a flow of a service without a fallback (an "
     "interception address, no CS-ID) is never bound by it", opts=FB,
     acts=[ctl(binding()), pin("client", udp(4, CLI4, ICPT4, 4001, 53)),
           tick(2100)],
     expect=[drop("drop_pending_timeout"), count("fallback_bound", 0)])
case("fb_no_candidate", "fallback: no binding of the service was seen: no "
     "candidate", opts=FB, acts=[pin("client", u4b), tick(2100)],
     expect=[drop("drop_pending_timeout"), count("fallback_refused")])
case("fb_candidate_expired", "fallback: a candidate past its soft state "
     "(--fallback-ttl 5s) is not used", opts=FB + ["fallback-ttl=5s"],
     acts=[ctl(binding()), tick(7000), pin("client", u4b), tick(8200)],
     expect=[drop("drop_pending_timeout"), count("fallback_refused")])
case("fb_candidate_kept", "fallback: a candidate within its soft state is "
     "used", opts=FB + ["fallback-ttl=10s"],
     acts=[ctl(binding()), tick(7000), pin("client", u4b), tick(8200)],
     expect=[FB_OUT, count("fallback_bound")])
case("fb_silent_too_long", "fallback: no more than --fallback S1=3s after "
     "the first unanswered flow", opts=["fallback=S1=3s"],
     acts=[ctl(binding()), pin("client", u4b), tick(2100),
           pin("client", u4c), tick(5200)],
     expect=[FB_OUT, count("fallback_bound"), count("fallback_refused"),
             drop("drop_pending_timeout")])
case("fb_answer_resets", "fallback: the C-PS answering again ends its "
     "silence; later unanswered flows get the fallback again",
     opts=["fallback=S1=3s"],
     acts=[ctl(binding()), pin("client", u4b), tick(2100),
           ctl(binding(bid=3, sport=4003)), tick(9000), pin("client", u4c),
           tick(10100)],
     expect=[FB_OUT, out("core", srv6(rewrite(u4c, dst=LOC4), ISID, [ESID])),
             count("fallback_bound", 2)])
case("fb_reverse", "fallback: the bound flow's replies are restored at the "
     "ingress", opts=FB + ["select-down"],
     acts=[ctl(binding()), pin("client", u4b),
           pin("core", srv6(udp(4, LOC4, CLI4, 53, 4001), ESID, [ISID]))],
     expect=[FB_OUT, out("client", rewrite(udp(4, LOC4, CLI4, 53, 4001),
                                           src=SVC4)), count("rev_pkts")])
case("fb_reported", "fallback: when the binding manager is back (its "
     "hello), the binding is reported to it: a binding record, reason "
     "fallback", opts=FB + ["select-down"],
     acts=[ctl(binding()), pin("client", u4b), ctl(HELLO)],
     expect=[FB_OUT, sent_binding("op=install reason=fallback locator_af=4"),
             count("fallback_reported")])
case("fb_adopted", "fallback: the binding manager's own binding of the flow "
     "takes the fallback binding's place (adopted)", opts=FB + ["select-down"],
     acts=[ctl(binding()), pin("client", u4b),
           ctl(binding(bid=5, sport=4001, loc="198.51.100.21")),
           pin("client", u4b)],
     expect=[FB_OUT, out("core", srv6(rewrite(u4b, dst="198.51.100.21"),
                                      ISID, [ESID])),
             status("event=expired reason=fallback-adopted"),
             status("event=installed id=5"), count("bindings_refused", 0)])
case("fb_kept_over_resync", "fallback: a re-sync's fence leaves the "
     "forwarder's own bindings (they are reported instead)",
     opts=FB + ["select-down"],
     acts=[ctl(binding()), pin("client", u4b),
           ctl(dict(HELLO, epoch=2)), pin("client", u4b)],
     expect=[FB_OUT, FB_OUT, count("fallback_reported"),
             status("event=removed reason=fenced")])
e4b = rewrite(u4b, dst=LOC4, ttl_dec=1)
er4b = udp(4, LOC4, CLI4, 53, 4001)
case("eg_learn_reverse", "--learn-reverse: an unbound flow delivered to an "
     "owned destination teaches its reverse: replies go back to the outer "
     "source", role="egress", opts=["learn-reverse=30s"],
     acts=[pin("core", srv6(e4b, ISID, [ESID])), pin("site", er4b)],
     expect=[out("site", rewrite(e4b)), out("core", from_eg(rewrite(er4b))),
             count("reverse_learned"), count("eg_unbound")])
case("eg_learn_reverse_off", "without --learn-reverse the reply of an "
     "unbound flow is dropped", role="egress",
     acts=[pin("core", srv6(e4b, ISID, [ESID])), pin("site", er4b)],
     expect=[out("site", rewrite(e4b)), drop("drop_no_reverse_binding")])
case("eg_learned_replaced", "a binding of the manager for the flow takes "
     "the learned reverse's place", role="egress", opts=["learn-reverse=30s"],
     acts=[pin("core", srv6(e4b, ISID, [ESID])),
           ctl(binding(sport=4001, rev_sids=("2001:db8:1::9",)),),
           pin("site", er4b)],
     expect=[out("site", rewrite(e4b)),
             out("core", srv6(rewrite(er4b), ESID, ["2001:db8:1::9"])),
             status("event=installed"), count("bindings_refused", 0)])
case("eg_learned_idle", "a learned reverse ends after its idle time, "
     "reported to nobody", role="egress", opts=["learn-reverse=5s"],
     acts=[pin("core", srv6(e4b, ISID, [ESID])), tick(7000),
           pin("site", er4b)],
     expect=[out("site", rewrite(e4b)), drop("drop_no_reverse_binding"),
             count("bindings_expired"), count("status_sent", 0)])

# ---- capabilities ----

case("cap_encaps_refused", "--encaps srmpls,ip: an SRv6 binding is refused "
     "as unsupported-encap (a path failure for the manager)",
     opts=["encaps=srmpls,ip"], acts=[ctl(binding()), pin("client", u4)],
     expect=[status("event=failed reason=unsupported-encap"),
             count("bindings_refused"), request("mode=none held=1")])
case("cap_encaps_ok", "--encaps srmpls,ip: an SR-MPLS binding is taken",
     opts=["encaps=srmpls,ip"],
     acts=[ctl(binding(encap="srmpls", labels=(16002,), rev_sids=())),
           pin("client", u4)],
     expect=[out("core:mpls", mpls(rewrite(u4, dst=LOC4), [16002]))])

# The data plane a request asks for (cats-fwd(1) CAPABILITIES): --dataplane,
# else the first the ingress advertises of srv6, srmpls, ipip, ip.
for name, doc, opts, dp, msd, dps in (
        ("cap_dp_default", "every encapsulation: the request asks for srv6 "
         "with the MSD, and every one it advertises", [], "srv6", "16",
         "srv6,srmpls,ipip,ip"),
        ("cap_dp_srmpls", "--encaps srmpls,ip: the request asks for srmpls",
         ["encaps=srmpls,ip"], "srmpls", "16", "srmpls,ip"),
        ("cap_dp_ipip", "--encaps ipip,ip: the request asks for ipip, "
         "without an MSD", ["encaps=ipip,ip"], "ipip", "", "ipip,ip"),
        ("cap_dp_ip", "--encaps ip: the request asks for ip",
         ["encaps=ip"], "ip", "", "ip"),
        ("cap_dp_no_src6", "no --src6: no srv6 advertised, the request "
         "asks for srmpls", ["no-src6"], "srmpls", "16", "srmpls,ipip,ip"),
        ("cap_dp_no_src6_ipip", "no --src6, --encaps srv6,ipip,ip: the "
         "request asks for ipip (IPv4 outer)",
         ["no-src6", "encaps=srv6,ipip,ip"], "ipip", "", "ipip,ip"),
        ("cap_dp_given", "--dataplane ip among every encapsulation: the "
         "request asks for ip and names no other", ["dataplane=ip"], "ip", "",
         "")):
    case(name, doc, opts=opts, acts=[pin("client", u4)],
         expect=[request("mode=none held=1 dataplane=%s msd=%s "
                         "dataplanes=%s" % (dp, msd, dps)),
                 count("requests")])
case("cap_msd_request", "--msd 2: the request carries it as the MSD",
     opts=["msd=2"], acts=[pin("client", u4)],
     expect=[request("mode=none held=1 dataplane=srv6 msd=2"),
             count("requests")])
case("cap_msd_refused", "--msd 1: an SRv6 binding of 2 SIDs is refused as "
     "unsupported-encap",
     opts=["msd=1"],
     acts=[ctl(binding(sids=("2001:db8:9::1", ESID))), pin("client", u4)],
     expect=[status("event=failed reason=unsupported-encap"),
             count("bindings_refused"), request("mode=none held=1")])


def write(d):
    os.makedirs(d, exist_ok=True)
    for name, doc, role, opts, acts, expect in CASES:
        lines = ["# " + doc, "role " + role]
        lines += ["opt " + o for o in opts]
        for a in acts:
            if a[0] == "ctl":
                lines.append("ctl " + a[1])
            elif a[0] == "tick":
                lines.append("tick %d" % a[1])
            else:
                lines.append("in %s %s" % (a[1], a[2].hex()))
        for e in expect:
            if e[0] == "out":
                lines.append("out %s %s" % (e[1], e[2].hex()))
            elif e[0] == "count":
                lines.append("count %s %d" % (e[1], e[2]))
            else:
                lines.append("%s %s" % e)
        with open(os.path.join(d, name + ".case"), "w") as f:
            f.write("\n".join(lines) + "\n")
    print("%d cases" % len(CASES))


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.abspath(__file__)))
