#!/usr/bin/env python3
"""ha_chunks.py PREFIX [records|keys] - etcd's keys under PREFIX as
`etcdctl get --prefix PREFIX -w json` prints them (stdin), read as
cats-bind --etcd lays them out (cats-bind(1), REDUNDANCY; lib/ha/ha_log.h):
records: the binding records the chunks (PREFIX c/LO) hold, inflated, as
one CBOR sequence on stdout (for cats-cbor decode); keys: one line
"chunks N log N old N other N" counting the keys of each kind.  Used by
tests/bats/ha.bats and bench/ha.sh."""
import base64
import json
import sys
import zlib

prefix = sys.argv[1].encode()
mode = sys.argv[2] if len(sys.argv) > 2 else "records"
doc = json.load(sys.stdin)
counts = {"chunks": 0, "log": 0, "old": 0, "other": 0}
out = sys.stdout.buffer


def u64(v, off):
    """The 9-byte uint (0x1b, big-endian) cats-bind writes at off."""
    if v[off] != 0x1b:
        raise ValueError("not a 9-byte uint at %d" % off)
    return int.from_bytes(v[off + 1:off + 9], "big")


for kv in doc.get("kvs", []):
    k = base64.b64decode(kv["key"])
    v = base64.b64decode(kv.get("value", ""))
    rest = k[len(prefix):]
    if rest.startswith(b"c/"):
        counts["chunks"] += 1
        # [1, seq, lo, hi, n, rawlen] then the records or their zlib bytes.
        if v[0] != 0x86 or v[1] != 1:
            raise ValueError("%r: not a chunk" % k)
        rawlen = u64(v, 38)
        recs = v[47:]
        if rawlen:
            if recs[0] != 0x5a:
                raise ValueError("%r: no byte string" % k)
            recs = zlib.decompress(recs[5:5 + int.from_bytes(recs[1:5], "big")])
        if mode == "records":
            out.write(recs)
    elif rest.startswith(b"l/"):
        counts["log"] += 1
    elif rest.startswith(b"b/"):
        counts["old"] += 1
    else:
        counts["other"] += 1
if mode == "keys":
    print(" ".join("%s %d" % (n, counts[n]) for n in counts))
