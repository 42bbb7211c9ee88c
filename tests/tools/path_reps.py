#!/usr/bin/env python3
"""path_reps.py FIRST COUNT [TTL_MS] - COUNT path replies as JSON Lines,
transactions FIRST.., one client each (10.x.y.z), stamped now, their
deadline TTL_MS later (600000): the input of cats-bind in tests/bats/ha.bats
and bench/ha.sh."""
import sys
import time

first, n = int(sys.argv[1]), int(sys.argv[2])
ttl = int(sys.argv[3]) if len(sys.argv) > 3 else 600000
ts = int(time.time() * 1000)
for i in range(first, first + n):
    src = "10.%d.%d.%d" % ((i >> 16) & 255, (i >> 8) & 255, i & 255)
    print('{"type":"path-rep","txn":%d,"ts":%d,"status":"ok","headend":"IF-1",'
          '"endpoint":"EF-2","dataplane":"srv6","segments":[{"kind":"node",'
          '"node":"EF-2","sid":"fc00:2::%x"}],"path_id":%d,"gen":3,'
          '"decision":{"cs_id":"S1","csci_id":"B","locator":"198.51.100.21",'
          '"egress":"EF-2","ts":%d,"cst_gen":5,"nst_gen":6},'
          '"flow":{"proto":6,"src":"%s","sport":%d,"dst":"192.0.2.100",'
          '"dport":443},"ingress":"IF-1","deadline":%d}'
          % (i, ts, i % 7 + 1, i % 7, ts, src, 1024 + i % 50000, ts + ttl))
