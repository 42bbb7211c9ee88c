#!/usr/bin/python3
"""Packets for the cats-fwd tests, built with scapy (code nobody here wrote).

  fwd_pkt.py tcp-ack DST                      TCP ACK without a connection
  fwd_pkt.py modea CSID DST DPORT [SRC] [TAG] IPv6 UDP with the CATS Request
                                              option (0x1E) in Dest. Options
  fwd_pkt.py modea-hbh CSID DST DPORT         the same in Hop-by-Hop Options
  fwd_pkt.py modea-bad DST DPORT              a CATS option with a bad TLV
  fwd_pkt.py modeb CSID DST DPORT             IPv4 UDP, envelope at offset 0
  fwd_pkt.py srv6-stray IFACE DSTMAC          SRv6 to the ingress SID with an
                                              inner packet nobody bound
  fwd_pkt.py icmp6-unreach IFACE DSTMAC SPORT DPORT [N]
                                              a core router's ICMPv6 unreachable
                                              to the ingress about its SRv6
                                              packet of 192.0.2.10:SPORT ->
                                              198.51.100.11:DPORT (UDP); N
                                              copies back to back (1)
  fwd_pkt.py flood DST DPORT N                N UDP flows (distinct ports)
  fwd_pkt.py udp DST DPORT TEXT [SPORT]       one plain UDP datagram
  fwd_pkt.py seq-send DST DPORT SPORT N [I0]  N numbered datagrams (from I0)
                                              of one flow, back to back
  fwd_pkt.py seq-recv ADDR PORT N SECONDS     receive numbered datagrams until
                                              N or SECONDS: prints "got
                                              in_order" (in_order: no number
                                              below one seen before)
  fwd_pkt.py flows DST DPORT N SPORT0         N one-datagram flows at once
                                              (source ports SPORT0...)
  fwd_pkt.py flows-recv ADDR PORT N SECONDS   count distinct flows received
"""
import socket
import struct
import sys

def tlvs(csid, delay=None):
    b = bytes([1, len(csid)]) + csid.encode()
    if delay is not None:
        b += bytes([2, 4]) + struct.pack("!I", delay)
    return b

def raw_send(pkt, v6):
    fam = socket.AF_INET6 if v6 else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_RAW, socket.IPPROTO_RAW)
    dst = pkt.dst
    s.sendto(bytes(pkt), (dst, 0))

def recv_sock(addr, port, seconds):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE
    except OSError:
        pass
    s.bind((addr, port))
    s.settimeout(float(seconds))
    return s

def main(a):
    if a[0] == "seq-send":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("", int(a[3])))
        start = int(a[5]) if len(a) > 5 else 0
        for i in range(start, start + int(a[4])):
            s.sendto(struct.pack("!I", i) + b"x" * 60, (a[1], int(a[2])))
        return
    if a[0] == "seq-recv":
        s = recv_sock(a[1], int(a[2]), a[4])
        n, got, last, ok = int(a[3]), 0, -1, 1
        try:
            while got < n:
                d = s.recv(2048)
                i = struct.unpack("!I", d[:4])[0]
                if i < last:
                    ok = 0
                last = max(last, i)
                got += 1
        except socket.timeout:
            pass
        print(got, ok)
        return
    if a[0] == "flows":
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        da = socket.inet_aton(a[1])
        sa = socket.inet_aton("192.0.2.10")
        for i in range(int(a[3])):
            udp = struct.pack("!HHHH", int(a[4]) + i, int(a[2]), 12, 0) + b"flow"
            ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0,
                             64, 17, 0, sa, da)
            s.sendto(ip + udp, (a[1], 0))
        return
    if a[0] == "flows-recv":
        s = recv_sock(a[1], int(a[2]), a[4])
        seen = set()
        try:
            while len(seen) < int(a[3]):
                seen.add(s.recvfrom(64)[1])
        except socket.timeout:
            pass
        print(len(seen))
        return
    if a[0] in ("flood", "udp"):
        fam = socket.AF_INET6 if ":" in a[1] else socket.AF_INET
        if a[0] == "udp":
            s = socket.socket(fam, socket.SOCK_DGRAM)
            if len(a) > 4:
                s.bind(("", int(a[4])))
            s.sendto(a[3].encode(), (a[1], int(a[2])))
            return
        for _ in range(int(a[3])):
            s = socket.socket(fam, socket.SOCK_DGRAM)
            s.sendto(b"flood", (a[1], int(a[2])))
            s.close()
        return
    from scapy.all import (IP, IPv6, TCP, UDP, Raw, Ether, HBHOptUnknown,
                           ICMPv6DestUnreach, IPv6ExtHdrDestOpt,
                           IPv6ExtHdrHopByHop, IPv6ExtHdrSegmentRouting)
    if a[0] == "tcp-ack":
        raw_send(IP(dst=a[1]) / TCP(sport=40000, dport=80, flags="A",
                                    seq=1000, ack=2000), False)
    elif a[0] in ("modea", "modea-hbh", "modea-bad"):
        if a[0] == "modea-bad":
            dst, dport, data = a[1], int(a[2]), bytes([1, 1, 9, ord("S")])
            csid = "bad"
        else:
            csid, dst, dport = a[1], a[2], int(a[3])
            data = bytes([1]) + tlvs(csid, 15000)
        src = a[4] if len(a) > 4 else "2001:db8:c1::10"
        tag = a[5] if len(a) > 5 else csid
        opt = HBHOptUnknown(otype=0x1E, optdata=data)
        ext = (IPv6ExtHdrHopByHop(options=[opt]) if a[0] == "modea-hbh"
               else IPv6ExtHdrDestOpt(options=[opt]))
        p = IPv6(src=src, dst=dst) / ext / UDP(sport=4242, dport=dport) / \
            Raw(("modea " + tag + "\n").encode())
        raw_send(IPv6(bytes(p)), True)
    elif a[0] == "modeb":
        csid, dst, dport = a[1], a[2], int(a[3])
        body = tlvs(csid)
        env = bytes([0xCA, 0x75, 1, len(body)]) + body
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(env + ("modeb " + csid + "\n").encode(), (dst, dport))
    elif a[0] == "srv6-stray":
        iface, mac = a[1], a[2]
        inner = IP(src="198.51.100.21", dst="192.0.2.10") / \
            UDP(sport=80, dport=5556) / Raw(b"stray")
        p = Ether(dst=mac) / IPv6(src="2001:db8:2::100", dst="2001:db8:1::1") / \
            IPv6ExtHdrSegmentRouting(addresses=["2001:db8:1::1"], segleft=0,
                                     lastentry=0, nh=4) / inner
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((iface, 0))
        s.send(bytes(p))
    elif a[0] == "icmp6-unreach":
        iface, mac, sport, dport = a[1], a[2], int(a[3]), int(a[4])
        quoted = IPv6(src="2001:db8:1::1", dst="2001:db8:2::100") / \
            IPv6ExtHdrSegmentRouting(addresses=["2001:db8:2::100"],
                                     segleft=0, lastentry=0, nh=4) / \
            IP(src="192.0.2.10", dst="198.51.100.11") / \
            UDP(sport=sport, dport=dport) / Raw(b"payload")
        p = Ether(dst=mac) / IPv6(src="2001:db8:cc::7", dst="2001:db8:1::1") / \
            ICMPv6DestUnreach(code=0) / quoted
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        s.bind((iface, 0))
        for _ in range(int(a[5]) if len(a) > 5 else 1):
            s.send(bytes(p))
    else:
        sys.exit("unknown mode " + a[0])

if __name__ == "__main__":
    main(sys.argv[1:])
