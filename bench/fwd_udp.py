#!/usr/bin/python3
"""UDP helpers for bench/fwd.sh (timestamps in the payload; one clock, the
machine's, shared by every namespace).

  fwd_udp.py echo ADDR PORT            echo server
  fwd_udp.py ping DST PORT N           N request/reply round trips on one
                                       flow: prints "p50_us p99_us lost"
                                       (no reply at all: exits 1)
"""
import socket
import struct
import sys
import time


def pct(v, p):
    if not v:
        return 0
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))]


def main(a):
    if a[0] == "echo":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((a[1], int(a[2])))
        while True:
            d, peer = s.recvfrom(2048)
            s.sendto(d, peer)
    elif a[0] == "ping":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(0.5)
        s.connect((a[1], int(a[2])))
        rtt, lost = [], 0
        for i in range(int(a[3])):
            t = time.perf_counter_ns()
            s.send(struct.pack("!Q", i))
            try:
                while struct.unpack("!Q", s.recv(64)[:8])[0] != i:
                    pass
                if i >= 10:     # the first ones wait for the binding
                    rtt.append((time.perf_counter_ns() - t) / 1000)
            except socket.timeout:
                lost += 1
                if lost >= 20 and not rtt:
                    break
        if not rtt:
            sys.exit("no reply to %d requests" % (i + 1))
        print("%d %d %d" % (pct(rtt, 50), pct(rtt, 99), lost))
    else:
        sys.exit("unknown mode")


if __name__ == "__main__":
    main(sys.argv[1:])
