#!/usr/bin/env python3
"""ha_chunks.py PREFIX [records|keys|to-old URL] - etcd's keys under
PREFIX as `etcdctl get --prefix PREFIX -w json` prints them (stdin), read
as cats-bind --etcd lays them out (cats-bind(1), REDUNDANCY;
lib/ha/ha_log.h): records: the binding records the chunks (PREFIX c/LO)
hold, inflated, as one CBOR sequence on stdout (for cats-cbor decode);
keys: one line "chunks N log N old N other N" counting the keys of each
kind; to-old: the chunks rewritten, through etcd's gateway at URL, as an
older cats-bind wrote its bindings, a key each (PREFIX b/ID, a one-record
log entry), the chunks deleted.  Used by tests/bats/ha.bats and
bench/ha.sh."""
import base64
import json
import sys
import urllib.request
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


def item(b, off):
    """The CBOR item at off (definite lengths, as cats writes them): its
    value (maps as dicts, text as str) and the offset after it."""
    mt, ai = b[off] >> 5, b[off] & 31
    off += 1
    if ai < 24:
        n = ai
    else:
        w = 1 << (ai - 24)
        n = int.from_bytes(b[off:off + w], "big")
        off += w
    if mt in (0, 1):
        return (n if mt == 0 else -1 - n), off
    if mt in (2, 3):
        v = b[off:off + n]
        return (v.decode() if mt == 3 else v), off + n
    if mt == 4:
        v = []
        for _ in range(n):
            x, off = item(b, off)
            v.append(x)
        return v, off
    if mt == 5:
        v = {}
        for _ in range(n):
            k, off = item(b, off)
            v[k], off = item(b, off)
        return v, off
    if mt == 6:
        return item(b, off)
    return None, off    # simple values and floats: not needed here


def gateway(url, call, body):
    req = urllib.request.Request(url + "/v3/kv/" + call,
                                 data=json.dumps(body).encode())
    with urllib.request.urlopen(req, timeout=5) as r:
        r.read()


def b64(b):
    return base64.b64encode(b).decode()


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
        if mode == "to-old":
            seq, off = u64(v, 2), 0
            while off < len(recs):
                r, end = item(recs, off)
                # [1, seq, next_id 0, n 1, rawlen 0], then the record.
                val = (b"\x85\x01\x1b" + seq.to_bytes(8, "big") +
                       b"\x1b" + bytes(8) + b"\x1b" + (1).to_bytes(8, "big") +
                       b"\x1b" + bytes(8) + recs[off:end])
                key = prefix + b"b/%016x" % r["id"]
                gateway(sys.argv[3], "put", {"key": b64(key), "value": b64(val)})
                off = end
            gateway(sys.argv[3], "deleterange", {"key": kv["key"]})
    elif rest.startswith(b"l/"):
        counts["log"] += 1
    elif rest.startswith(b"b/"):
        counts["old"] += 1
    else:
        counts["other"] += 1
if mode == "keys":
    print(" ".join("%s %d" % (n, counts[n]) for n in counts))
