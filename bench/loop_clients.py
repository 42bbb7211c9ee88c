#!/usr/bin/python3
"""Many concurrent TCP clients for bench/loop.sh: every connection is a new
flow (a new 5-tuple), so each one goes through the whole loop: the ingress
holds the SYN, cats-select decides, cats-pce finds the path, cats-bind
installs the binding at the egress and the ingress, and the SYN leaves.

  loop_clients.py DST PORT SECONDS SRC...

One client per SRC address, each with one connection in flight at a time
(closed loop); a connection is reset as soon as it is established.  Each
client takes its source ports in turn from LOOP_SPORT0 (20000) on, never
one twice in a run: a kernel-chosen port may repeat a 5-tuple whose
connection was just reset, and that is a reused flow, not a new one (the
ingress ends the closing binding and asks again: cats-fwd(1)).  Prints
"flows p50_us p99_us failed seconds": established connections, the connect
time (SYN to SYN-ACK through the loop) percentiles, failed or timed-out
connects, and the measured span.  With LOOP_SAMPLES set, every connect
time (us, sorted, the ones the percentiles are taken from) goes to that
file, one per line, for bench/plot.sh.
"""
import errno
import os
import selectors
import socket
import struct
import sys
import time

dst, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
srcs = sys.argv[4:]
sel = selectors.DefaultSelector()
times, failed = [], 0
LINGER0 = struct.pack("ii", 1, 0)
SPORT0 = int(os.environ.get("LOOP_SPORT0", "20000"))
nextport = {}


def start(src):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER0)
    s.setblocking(False)
    while True:
        p = nextport.get(src, SPORT0)
        if p > 65535:
            s.close()
            return False
        nextport[src] = p + 1
        try:
            s.bind((src, p))
            break
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
    t = time.perf_counter_ns()
    e = s.connect_ex((dst, port))
    if e not in (0, errno.EINPROGRESS):
        s.close()
        return False
    sel.register(s, selectors.EVENT_WRITE, (src, t))
    return True


t0 = time.perf_counter()
end = t0 + seconds
for a in srcs:
    start(a)
while True:
    now = time.perf_counter()
    if now >= end and not sel.get_map():
        break
    for key, _ in sel.select(timeout=0.5):
        s = key.fileobj
        src, t = key.data
        sel.unregister(s)
        if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
            times.append((time.perf_counter_ns() - t) / 1000)
        else:
            failed += 1
        s.close()
        if time.perf_counter() < end:
            start(src)
    # Connections that hang (a dropped SYN) time out after 3 s.
    now_ns = time.perf_counter_ns()
    for key in list(sel.get_map().values()):
        if now_ns - key.data[1] > 3e9:
            sel.unregister(key.fileobj)
            key.fileobj.close()
            failed += 1
            if time.perf_counter() < end:
                start(key.data[0])
    if time.perf_counter() > end + 5:
        break
span = time.perf_counter() - t0
times.sort()


def pct(p):
    return int(times[min(len(times) - 1, int(len(times) * p / 100))]) if times else 0


if os.environ.get("LOOP_SAMPLES"):
    with open(os.environ["LOOP_SAMPLES"], "w") as f:
        f.write("# connect time us (SYN to SYN-ACK through the loop)\n")
        f.writelines("%d\n" % int(t) for t in times)
print("%d %d %d %d %.3f" % (len(times), pct(50), pct(99), failed, span))
