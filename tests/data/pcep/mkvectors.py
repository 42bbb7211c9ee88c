#!/usr/bin/env python3
"""mkvectors.py - write the PCEP test vectors of this directory (README).

The bytes are built here with struct, from the figures of RFC 5440, 5521,
8233, 8408, 8664 and 9603, independently of lib/pce/pcep.c; the expected
decoded forms are written out by hand next to them.  Run from this
directory: python3 mkvectors.py (it rewrites every *.vec and *.ses).
"""
import ipaddress
import os
import struct

OUT = os.path.dirname(os.path.abspath(__file__))
SEEDS = os.path.join(OUT, '..', '..', '..', 'fuzz', 'corpus', 'fuzz_pcep')


def ipb(s):
    return ipaddress.ip_address(s).packed


def tlv(t, v):
    return struct.pack('>HH', t, len(v)) + v + b'\0' * ((-len(v)) % 4)


def obj(cls, typ, body, p=False, i=False, length=None):
    n = 4 + len(body) if length is None else length
    return struct.pack('>BBH', cls, (typ << 4) | (2 if p else 0) |
                       (1 if i else 0), n) + body


def msg(t, *objs, ver=1, length=None):
    body = b''.join(objs)
    n = 4 + len(body) if length is None else length
    return struct.pack('>BBH', ver << 5, t, n) + body


def f32(x):
    return struct.pack('>f', x)


def g(x):
    return '%g' % struct.unpack('>f', struct.pack('>f', x))[0]


# ---- objects ----

def open_obj(ka, dt, sid, tlvs=b'', ver=1):
    return obj(1, 1, bytes([ver << 5, ka, dt, sid]) + tlvs)


def pst_cap(psts, subs=b''):
    n = len(psts)
    return tlv(34, b'\0\0\0' + bytes([n]) + bytes(psts) +
               b'\0' * ((-n) % 4) + subs)


def sr_cap(flags, msd):
    return tlv(26, b'\0\0' + bytes([flags, msd]))


def srv6_cap(flags, msds=()):
    return tlv(27, b'\0\0' + struct.pack('>H', flags) +
               b''.join(bytes([t, v]) for t, v in msds))


def stateful(flags):
    return tlv(16, struct.pack('>I', flags))


def rp(rid, flags=0, pst=None, p=True, extra=b''):
    body = struct.pack('>II', flags, rid)
    if pst is not None:
        body += tlv(28, b'\0\0\0' + bytes([pst]))
    return obj(2, 1, body + extra, p)


def ep4(s, d, p=True):
    return obj(4, 1, ipb(s) + ipb(d), p)


def ep6(s, d, p=True):
    return obj(4, 2, ipb(s) + ipb(d), p)


def bw(v, typ=1, p=True):
    return obj(5, typ, f32(v), p)


def metric(t, v, b=False, c=False, p=True):
    return obj(6, 1, b'\0\0' + bytes([(2 if c else 0) | (1 if b else 0), t]) +
               f32(v), p)


def lspa(ex, ia, il, setup=7, hold=7, lflag=False, p=True):
    return obj(9, 1, struct.pack('>III', ex, ia, il) +
               bytes([setup, hold, 1 if lflag else 0, 0]), p)


def xro(subs, flags=0, p=True):
    return obj(17, 1, b'\0\0' + struct.pack('>H', flags) + b''.join(subs), p)


def x_ip(addr, plen, attr, x=False):
    a = ipaddress.ip_address(addr)
    t = 1 if a.version == 4 else 2
    return bytes([(0x80 if x else 0) | t, 8 if t == 1 else 20]) + a.packed + \
        bytes([plen, attr])


def x_unnum(rid, ifid, attr, x=False):
    return bytes([(0x80 if x else 0) | 4, 12, 0, attr]) + ipb(rid) + \
        struct.pack('>I', ifid)


def x_srlg(sid, attr=2, x=False):
    return bytes([(0x80 if x else 0) | 34, 8]) + struct.pack('>I', sid) + \
        bytes([0, attr])


def x_as(asn, x=False):
    return bytes([(0x80 if x else 0) | 32, 4]) + struct.pack('>H', asn)


def x_as8(asn, attr, x=False):
    return bytes([(0x80 if x else 0) | 32, 8, 0, attr]) + \
        struct.pack('>I', asn)


def of(code, p=False):
    return obj(21, 1, struct.pack('>HH', code, 0), p)


def nopath(ni=0, c=False, vector=None):
    body = bytes([ni]) + struct.pack('>H', 0x8000 if c else 0) + b'\0'
    if vector is not None:
        body += tlv(1, struct.pack('>I', vector))
    return obj(3, 1, body)


def ero(*subs):
    return obj(7, 1, b''.join(subs))


def sr(nt, sid=None, nai=b'', m=True, c=False, loose=False, flags=None,
       length=None):
    fl = (1 if m else 0) | (2 if c else 0) | (4 if sid is None else 0) | \
        (8 if not nai else 0)
    if flags is not None:
        fl = flags
    body = (struct.pack('>I', sid) if sid is not None else b'') + nai
    n = 4 + len(body) if length is None else length
    return bytes([(0x80 if loose else 0) | 36, n, nt << 4 | fl >> 8,
                  fl & 0xff]) + body


def srv6(nt, sid=None, nai=b'', behavior=1, st=None, v=False, loose=False,
         flags=None):
    fl = (1 if sid is None else 0) | (2 if not nai else 0) | \
        (4 if st is not None else 0) | (8 if v else 0)
    if flags is not None:
        fl = flags
    body = b'\0\0' + struct.pack('>H', behavior)
    if sid is not None:
        body += ipb(sid)
    body += nai
    if st is not None:
        body += bytes(st) + b'\0\0\0\0'
    return bytes([(0x80 if loose else 0) | 40, 4 + len(body),
                  nt << 4 | fl >> 8, fl & 0xff]) + body


def hop4(addr, plen=32, loose=False):
    return bytes([(0x80 if loose else 0) | 1, 8]) + ipb(addr) + \
        bytes([plen, 0])


def err(t, v):
    return obj(13, 1, bytes([0, 0, t, v]))


def close(reason):
    return obj(15, 1, bytes([0, 0, 0, reason]))


def ntf(t, v):
    return obj(12, 1, bytes([0, 0, t, v]))


def label(lbl):
    return lbl << 12


# ---- files ----

def hexlines(b):
    h = b.hex()
    words = [h[i:i + 8] for i in range(0, len(h), 8)]
    lines = [' '.join(words[i:i + 8]) for i in range(0, len(words), 8)]
    return lines or ['']


written = []
seeds = {}


def vec(name, desc, data, expect, dump=None, roundtrip=False, max_msg=None):
    path = os.path.join(OUT, name + '.vec')
    seeds[name] = data
    with open(path, 'w') as f:
        f.write('# %s\n' % desc)
        if max_msg is not None:
            f.write('max_msg: %d\n' % max_msg)
        f.write('hex: ' + ' '.join(hexlines(data)) + '\n')
        f.write('expect: %s\n' % expect)
        if roundtrip:
            f.write('roundtrip: yes\n')
        if dump is not None:
            f.write('dump:\n' + dump.replace('{len}', str(len(data))) +
                    'end\n')
    written.append(path)


def ses(name, desc, role, steps, conf=None):
    path = os.path.join(OUT, name + '.ses')
    # The fuzz seed: a first byte (PCE role, pieces of 8 bytes), then what
    # the peer sends.
    seeds[name] = b'\x0f' + b''.join(v for k, v in steps
                                     if k == 'in' and isinstance(v, bytes))
    with open(path, 'w') as f:
        f.write('# %s\n' % desc)
        f.write('role: %s\n' % role)
        if conf:
            f.write('conf: %s\n' % conf)
        for k, v in steps:
            if isinstance(v, bytes):
                v = ' '.join(hexlines(v)) if v else '-'
            f.write('%s: %s\n' % (k, v))
    written.append(path)



# ---- Open messages and their decoded forms ----

PCE_TLVS = pst_cap([1, 3], sr_cap(0, 0) + srv6_cap(0))
PCE_OPEN = msg(1, open_obj(30, 120, 0, PCE_TLVS))
PCC_TLVS = pst_cap([1, 3], sr_cap(0, 10) + srv6_cap(0))
PCC_OPEN = msg(1, open_obj(30, 120, 0, PCC_TLVS))
FRR_OPEN = msg(1, open_obj(30, 120, 1, stateful(0x1) +
                           pst_cap([1], sr_cap(0x02, 4))))
KA = msg(2)


def pcerr(t, v, ids=(), proposal=None):
    objs = [rp(i, p=False) for i in ids] + [err(t, v)]
    if proposal is not None:
        objs.append(proposal)
    return msg(6, *objs)


def closemsg(r):
    return msg(7, close(r))


def write_vectors():
    vec('msg-keepalive', 'Keepalive: the common header alone', KA, 'ok',
        'msg Keepalive len={len}\n', True)
    vec('msg-version-2', 'common header version 2', msg(2, ver=2), 'close 3')
    vec('msg-length-3', 'message length 3: below the header',
        msg(2, length=3), 'close 3')
    vec('msg-length-4-incomplete', 'length 8 but 4 bytes: waits',
        msg(2, length=8), 'incomplete')
    vec('msg-at-max', 'a message of exactly max_msg (16384) bytes, header '
        'only given: framed, waits for its bytes', msg(3, length=16384),
        'incomplete')
    vec('msg-over-max', 'max_msg + 1 bytes: refused from the header',
        msg(3, length=16385), 'close 3')
    vec('msg-over-small-max', 'max_msg 64: a 68-byte message refused',
        msg(3, length=68), 'close 3', max_msg=64)
    vec('msg-unknown-type', 'message type 99: ignored', msg(99), 'ignored')

    # Open
    vec('open-pce', 'the Open cats-pce sends: PST 1 and 3, SR and SRv6 '
        'capabilities with flags and MSD zero (RFC 8664 4.1.2, RFC 9603 '
        '4.1.1)', PCE_OPEN, 'ok',
        'msg Open len={len}\nopen ver=1 ka=30 dt=120 sid=0 pst=1,3 sr=00/0 '
        'srv6=0000\n', True)
    vec('open-pcc', 'the Open the C-PS as a PCC sends (MSD 10)', PCC_OPEN,
        'ok', 'msg Open len={len}\nopen ver=1 ka=30 dt=120 sid=0 pst=1,3 '
        'sr=00/10 srv6=0000\n', True)
    vec('open-frr', 'an Open as FRR pathd sends it: stateful capability, '
        'PST 1 with SR-PCE-CAPABILITY N flag, MSD 4', FRR_OPEN, 'ok',
        'msg Open len={len}\nopen ver=1 ka=30 dt=120 sid=1 stateful pst=1 '
        'sr=02/4\n')
    legacy = msg(1, open_obj(30, 120, 2, sr_cap(0, 4) + pst_cap([1])))
    vec('open-sr-legacy', 'the draft form: SR-PCE-CAPABILITY as an OPEN '
        'TLV of its own (FRR with draft 07)', legacy, 'ok',
        'msg Open len={len}\nopen ver=1 ka=30 dt=120 sid=2 pst=1 '
        'sr=00/4/legacy\n')
    v6 = msg(1, open_obj(20, 80, 3, pst_cap([3], srv6_cap(0x0002, [(41, 8)]))))
    vec('open-srv6-msd', 'SRv6-PCE-CAPABILITY with the N flag and one MSD '
        'pair (length 6, padded to 8)', v6, 'ok',
        'msg Open len={len}\nopen ver=1 ka=20 dt=80 sid=3 pst=3 '
        'srv6=0002/41:8\n', True)
    v6b = msg(1, open_obj(20, 80, 3, pst_cap([3], srv6_cap(0, [(41, 8),
                                                               (42, 2)]))))
    vec('open-srv6-msd2', 'two MSD pairs (length 8, no padding)', v6b, 'ok',
        'msg Open len={len}\nopen ver=1 ka=20 dt=80 sid=3 pst=3 '
        'srv6=0000/41:8/42:2\n', True)
    vec('open-unknown-tlv', 'an unknown OPEN TLV is ignored (RFC 5440 7.1)',
        msg(1, open_obj(30, 120, 0, tlv(0x7777, b'abc'))), 'ok',
        'msg Open len={len}\nopen ver=1 ka=30 dt=120 sid=0\n')
    vec('open-version-2', 'OPEN object version 2: PCErr 1/8',
        msg(1, open_obj(30, 120, 0, ver=2)), 'pcerr 1/8')
    vec('open-no-object', 'an Open without an OPEN object: PCErr 1/1',
        msg(1, ep4('192.0.2.1', '192.0.2.2')), 'pcerr 1/1')
    vec('open-body-3', 'OPEN object of 7 bytes: framing broken, 1/1',
        msg(1, obj(1, 1, b'\x20\x1e\x78', length=7)), 'pcerr 1/1')
    vec('open-body-0', 'OPEN object with an empty body: 1/1',
        msg(1, obj(1, 1, b'')), 'pcerr 1/1')
    over = open_obj(30, 120, 0)[:4 + 4] + struct.pack('>HH', 34, 8)
    over = struct.pack('>BBH', 1, 0x10, len(over)) + over[4:]
    vec('open-tlv-overrun', 'a TLV whose length runs past its object: 1/1',
        msg(1, over), 'pcerr 1/1')
    vec('open-pst-cap-empty', 'PATH-SETUP-TYPE-CAPABILITY with no PST: 1/1',
        msg(1, open_obj(30, 120, 0, tlv(34, b'\0\0\0\0'))), 'pcerr 1/1')
    vec('open-srv6-odd', 'SRv6-PCE-CAPABILITY value of 5 bytes: 1/1',
        msg(1, open_obj(30, 120, 0, pst_cap([3], tlv(27, b'\0\0\0\0\x29'))))
        , 'pcerr 1/1')
    tl16 = b''.join(tlv(0x7000 + i, b'') for i in range(16))
    vec('open-tlvs-16', '16 TLVs in one object: the cap, decoded',
        msg(1, open_obj(30, 120, 0, tl16)), 'ok',
        'msg Open len={len}\nopen ver=1 ka=30 dt=120 sid=0\n')
    tl17 = tl16 + tlv(0x7010, b'')
    vec('open-tlvs-17', '17 TLVs in one object: over the cap, 1/1',
        msg(1, open_obj(30, 120, 0, tl17)), 'pcerr 1/1')

    # PCReq
    r1 = msg(3, rp(1, pst=1), ep4('192.0.2.1', '192.0.2.2'))
    vec('pcreq-min-v4', 'RP (PST 1) and END-POINTS IPv4', r1, 'ok',
        'msg PCReq len={len}\nreq id=1 flags=00000000 p=1 pst=1 st=ok\n'
        ' ep 192.0.2.1 192.0.2.2\n', True)
    r6 = msg(3, rp(2, flags=0x13, pst=3),
             ep6('2001:db8::1', '2001:db8::2'))
    vec('pcreq-min-v6', 'END-POINTS IPv6, RP priority 3 and B flag', r6,
        'ok', 'msg PCReq len={len}\nreq id=2 flags=00000013 p=1 pst=3 st=ok\n'
        ' ep 2001:db8::1 2001:db8::2\n', True)
    full = msg(3, rp(7, pst=1), ep4('192.0.2.1', '192.0.2.2'),
               lspa(0x1, 0x2, 0x4), bw(125000.0),
               metric(2, 0, c=True), metric(3, 4, b=True),
               metric(12, 1500, b=True),
               xro([x_ip('192.0.2.11', 32, 1), x_unnum('192.0.2.1', 3, 0),
                    x_srlg(100), x_ip('2001:db8::9', 128, 1),
                    x_as(65000, x=True)]),
               of(1))
    vec('pcreq-full', 'every constraint object: LSPA, BANDWIDTH, METRIC '
        '(TE objective, hop and delay bounds), XRO (node, unnumbered '
        'interface, SRLG, IPv6 node, desirable AS), OF', full, 'ok',
        'msg PCReq len={len}\nreq id=7 flags=00000000 p=1 pst=1 st=ok\n'
        ' ep 192.0.2.1 192.0.2.2\n'
        ' lspa 00000001 00000002 00000004 7 7 0\n'
        ' bw 1 125000\n'
        ' metric 2 b=0 c=1 0\n metric 3 b=1 c=0 4\n'
        ' metric 12 b=1 c=0 1500\n'
        ' xro 0000\n'
        '  x ip 0 192.0.2.11/32 1\n  x unnum 0 192.0.2.1 3 0\n'
        '  x srlg 0 100 2\n  x ip 0 2001:db8::9/128 1\n  x as 1 65000\n'
        ' of 1\n', True)
    two = msg(3, rp(1), ep4('192.0.2.1', '192.0.2.2'), rp(2),
              ep4('192.0.2.1', '192.0.2.3'))
    as8 = msg(3, rp(7), ep4('192.0.2.1', '192.0.2.2'),
              xro([x_as8(4200000000, 0)]))
    vec('pcreq-xro-as8', 'an XRO AS subobject in its 8-byte form (4-octet '
        'AS number)', as8, 'ok',
        'msg PCReq len={len}\nreq id=7 flags=00000000 p=1 st=ok\n'
        ' ep 192.0.2.1 192.0.2.2\n xro 0000\n  x as 0 4200000000\n', True)
    vec('pcreq-two', 'two requests in one PCReq', two, 'ok',
        'msg PCReq len={len}\nreq id=1 flags=00000000 p=1 st=ok\n'
        ' ep 192.0.2.1 192.0.2.2\nreq id=2 flags=00000000 p=1 st=ok\n'
        ' ep 192.0.2.1 192.0.2.3\n', True)
    vec('pcreq-no-endpoints', 'END-POINTS missing: that request 6/3',
        msg(3, rp(3), rp(4), ep4('192.0.2.1', '192.0.2.2')), 'ok',
        'msg PCReq len={len}\nreq id=3 flags=00000000 p=1 st=6/3\n'
        'req id=4 flags=00000000 p=1 st=ok\n ep 192.0.2.1 192.0.2.2\n')
    vec('pcreq-rp-no-p', 'RP without the P flag: 10/1',
        msg(3, rp(5, p=False), ep4('192.0.2.1', '192.0.2.2')), 'ok',
        'msg PCReq len={len}\nreq id=5 flags=00000000 p=0 st=10/1\n'
        ' ep 192.0.2.1 192.0.2.2\n')
    vec('pcreq-no-rp', 'END-POINTS without an RP: PCErr 6/1',
        msg(3, ep4('192.0.2.1', '192.0.2.2')), 'pcerr 6/1')
    vec('pcreq-before-rp', 'an object before the first RP: PCErr 6/1',
        msg(3, bw(1.0), rp(6), ep4('192.0.2.1', '192.0.2.2')), 'pcerr 6/1')
    base = [rp(8), ep4('192.0.2.1', '192.0.2.2')]
    d8 = 'req id=8 flags=00000000 p=1 st=%s\n ep 192.0.2.1 192.0.2.2\n'
    vec('pcreq-unknown-class-p', 'unknown object class 99 with P: 3/1',
        msg(3, *base, obj(99, 1, b'\0' * 4, p=True)), 'ok',
        'msg PCReq len={len}\n' + d8 % '3/1')
    vec('pcreq-unknown-class', 'unknown object class 99 without P: ignored',
        msg(3, *base, obj(99, 1, b'\0' * 4)), 'ok',
        'msg PCReq len={len}\n' + d8 % 'ok')
    vec('pcreq-unknown-type-p', 'METRIC object type 2 with P: 3/2',
        msg(3, *base, obj(6, 2, b'\0' * 8, p=True)), 'ok',
        'msg PCReq len={len}\n' + d8 % '3/2')
    vec('pcreq-unknown-type', 'METRIC object type 2 without P: ignored',
        msg(3, *base, obj(6, 2, b'\0' * 8)), 'ok',
        'msg PCReq len={len}\n' + d8 % 'ok')
    vec('pcreq-iro-p', 'IRO (not supported) with P: 4/1',
        msg(3, *base, obj(10, 1, hop4('192.0.2.11'), p=True)), 'ok',
        'msg PCReq len={len}\n' + d8 % '4/1')
    vec('pcreq-iro', 'IRO without P: ignored',
        msg(3, *base, obj(10, 1, hop4('192.0.2.11'))), 'ok',
        'msg PCReq len={len}\n' + d8 % 'ok')
    vec('pcreq-svec-p', 'SVEC (not supported) with P: 4/1 for the request',
        msg(3, obj(11, 1, b'\0\0\0\x01' + struct.pack('>I', 8), p=True),
            *base), 'ok', 'msg PCReq len={len}\n' + d8 % '4/1')
    vec('pcreq-ep-p2mp', 'END-POINTS type 3 (P2MP): 4/2',
        msg(3, rp(9), obj(4, 3, b'\0\0\0\x01' + ipb('192.0.2.1') +
                          ipb('192.0.2.2'), p=True)), 'ok',
        'msg PCReq len={len}\nreq id=9 flags=00000000 p=1 st=4/2\n')
    vec('pcreq-ep-8', 'END-POINTS IPv4, body 8 bytes: the boundary, ok',
        msg(3, rp(10), ep4('192.0.2.1', '192.0.2.2')), 'ok',
        'msg PCReq len={len}\nreq id=10 flags=00000000 p=1 st=ok\n'
        ' ep 192.0.2.1 192.0.2.2\n', True)
    vec('pcreq-ep-12', 'END-POINTS IPv4, body 12 bytes: 10/11',
        msg(3, rp(10), obj(4, 1, ipb('192.0.2.1') + ipb('192.0.2.2') +
                           b'\0' * 4, p=True)), 'ok',
        'msg PCReq len={len}\nreq id=10 flags=00000000 p=1 st=10/11\n')
    vec('pcreq-ep6-28', 'END-POINTS IPv6, body 28 bytes: 10/11',
        msg(3, rp(11), obj(4, 2, b'\0' * 28, p=True)), 'ok',
        'msg PCReq len={len}\nreq id=11 flags=00000000 p=1 st=10/11\n')
    vec('pcreq-rp-8', 'RP of 8 bytes (body 4): 10/11',
        msg(3, obj(2, 1, b'\0\0\0\0', p=True),
            ep4('192.0.2.1', '192.0.2.2')), 'ok',
        'msg PCReq len={len}\nreq id=0 flags=00000000 p=0 st=10/11\n'
        ' ep 192.0.2.1 192.0.2.2\n')
    vec('pcreq-metric-12', 'METRIC of 16 bytes: 10/11',
        msg(3, *base, obj(6, 1, b'\0\0\0\x02' + f32(1) + b'\0' * 4, p=True)),
        'ok', 'msg PCReq len={len}\n' + d8 % '10/11')
    vec('pcreq-bw-8', 'BANDWIDTH of 8 bytes: the boundary, ok',
        msg(3, *base, bw(1000.0)), 'ok',
        'msg PCReq len={len}\n' + d8 % 'ok' + ' bw 1 1000\n', True)
    vec('pcreq-bw-12', 'BANDWIDTH of 12 bytes: 10/11',
        msg(3, *base, obj(5, 1, f32(1000.0) + b'\0' * 4, p=True)), 'ok',
        'msg PCReq len={len}\n' + d8 % '10/11')
    vec('pcreq-bw-generalized', 'BANDWIDTH type 3 (generalized): 4/2',
        msg(3, *base, obj(5, 3, b'\0' * 8, p=True)), 'ok',
        'msg PCReq len={len}\n' + d8 % '4/2')
    vec('pcreq-lspa-16', 'LSPA of 16 bytes (body 12): 10/11',
        msg(3, *base, obj(9, 1, b'\0' * 12, p=True)), 'ok',
        'msg PCReq len={len}\n' + d8 % '10/11')
    vec('pcreq-xro-ip-12', 'XRO IPv4 subobject of length 12: 10/11',
        msg(3, *base, xro([b'\x01\x0c' + ipb('192.0.2.1') + b'\x20\x01' +
                           b'\0' * 4])), 'ok',
        'msg PCReq len={len}\n' + d8 % '10/11')
    vec('pcreq-xro-overrun', 'XRO subobject running past its object: 10/11',
        msg(3, *base, xro([b'\x22\x10\0\0\0\x01\0\x02'])), 'ok',
        'msg PCReq len={len}\n' + d8 % '10/11')
    vec('pcreq-xro-plen-33', 'XRO IPv4 prefix length 33: 10/11',
        msg(3, *base, xro([x_ip('192.0.2.1', 33, 1)])), 'ok',
        'msg PCReq len={len}\n' + d8 % '10/11')
    vec('pcreq-obj-13', 'an object length not a multiple of 4: PCErr 10/11'
        ' naming the request read so far',
        msg(3, *base, obj(5, 1, f32(1.0) + b'\0', p=True)), 'pcerr 10/11 ids 8')
    vec('pcreq-obj-past-end', 'an object length past the message: PCErr '
        '10/11', msg(3, rp(12), obj(4, 1, ipb('192.0.2.1'), p=True,
                                     length=40)), 'pcerr 10/11 ids 12')
    vec('pcreq-obj-3', 'an object length of 3: PCErr 10/11',
        msg(3, rp(13), b'\x04\x12\x00\x03'), 'pcerr 10/11 ids 13')

    # PCRep: SR-ERO (RFC 8664)
    rep_h = [rp(7, pst=1)]
    nai_n4 = ipb('192.0.2.11')
    nai_a4 = ipb('192.0.2.11') + ipb('192.0.2.12')
    nai_u = ipb('192.0.2.11') + struct.pack('>I', 4) + ipb('192.0.2.12') + \
        struct.pack('>I', 4)
    nai_n6 = ipb('2001:db8::11')
    nai_a6 = ipb('2001:db8::11') + ipb('2001:db8::12')
    nai_ll = ipb('2001:db8::11') + struct.pack('>I', 5) + \
        ipb('2001:db8::12') + struct.pack('>I', 6)
    srero = ero(sr(1, label(16011), nai_n4), sr(5, label(24004), nai_u),
                sr(0, label(16002)), sr(3, label(24005), nai_a4),
                sr(2, label(16012), nai_n6), sr(4, label(24006), nai_a6),
                sr(6, label(24007), nai_ll), sr(1, None, nai_n4, m=False))
    d_rep = 'msg PCRep len={len}\nrep id=7 flags=00000000 p=1 pst=1\n'
    srd = (' ero 8\n'
           '  sr l=0 nt=1 f=001 sid=03e8b000 nai=192.0.2.11\n'
           '  sr l=0 nt=5 f=001 sid=05dc4000 nai=192.0.2.11:4,192.0.2.12:4\n'
           '  sr l=0 nt=0 f=009 sid=03e82000\n'
           '  sr l=0 nt=3 f=001 sid=05dc5000 nai=192.0.2.11,192.0.2.12\n'
           '  sr l=0 nt=2 f=001 sid=03e8c000 nai=2001:db8::11\n'
           '  sr l=0 nt=4 f=001 sid=05dc6000 nai=2001:db8::11,2001:db8::12\n'
           '  sr l=0 nt=6 f=001 sid=05dc7000 '
           'nai=2001:db8::11:5,2001:db8::12:6\n'
           '  sr l=0 nt=1 f=004 nai=192.0.2.11\n')
    mets = [metric(2, 30, p=False), metric(3, 3, p=False),
            metric(12, 1100, p=False)]
    m_d = ' metric 2 b=0 c=0 30\n metric 3 b=0 c=0 3\n metric 12 b=0 c=0 1100\n'
    p1 = msg(4, *rep_h, srero, *mets)
    vec('pcrep-sr-ero', 'SR-ERO with every NAI type 0-6 and a SID-less '
        'subobject, then the path metrics', p1, 'ok',
        d_rep + srd + m_d, True)
    vec('pcrep-sr-both-absent', 'SR-ERO with S and F set: 10/6',
        msg(4, *rep_h, ero(sr(0, flags=0x00c))), 'pcerr 10/6 id 7')
    vec('pcrep-sr-nt7', 'SR-ERO NAI type 7: 10/13',
        msg(4, *rep_h, ero(sr(7, label(16001), nai_n4))), 'pcerr 10/13 id 7')
    vec('pcrep-sr-nt1-len8', 'SR-ERO NAI type 1 with length 8: 10/11',
        msg(4, *rep_h, ero(sr(1, label(16001), flags=0x001, length=8))),
        'pcerr 10/11 id 7')
    vec('pcrep-sr-nt0-nai', 'SR-ERO NAI type 0 with F clear: 10/11',
        msg(4, *rep_h, ero(sr(0, label(16001), flags=0x001))),
        'pcerr 10/11 id 7')
    vec('pcrep-sr-label-15', 'SR-ERO label 15: 10/2',
        msg(4, *rep_h, ero(sr(0, label(15)))), 'pcerr 10/2 id 7')
    vec('pcrep-sr-label-16', 'SR-ERO label 16: the boundary, ok',
        msg(4, *rep_h, ero(sr(0, label(16)))), 'ok',
        d_rep + ' ero 1\n  sr l=0 nt=0 f=009 sid=00010000\n', True)
    vec('pcrep-sr-mix', 'SR-ERO and an IPv4 hop in one ERO: 10/5',
        msg(4, *rep_h, ero(sr(0, label(16001)), hop4('192.0.2.1'))),
        'pcerr 10/5 id 7')
    sr64 = ero(*[sr(0, label(16000 + i)) for i in range(64)])
    p64 = msg(4, *rep_h, sr64)
    vec('pcrep-sr-64', '64 SR-ERO subobjects: the cap, decoded', p64, 'ok',
        d_rep + ' ero 64\n' + ''.join(
            '  sr l=0 nt=0 f=009 sid=%08x\n' % label(16000 + i)
            for i in range(64)), True)
    vec('pcrep-sr-65', '65 SR-ERO subobjects: 10/3',
        msg(4, *rep_h, ero(*[sr(0, label(16000 + i)) for i in range(65)])),
        'pcerr 10/3 id 7')

    # PCRep: SRv6-ERO (RFC 9603)
    r6h = [rp(7, pst=3)]
    d6 = 'msg PCRep len={len}\nrep id=7 flags=00000000 p=1 pst=3\n'
    e6 = ero(srv6(2, 'fc00:0:b::1', nai_n6, behavior=1, st=(32, 16, 16, 0)),
             srv6(0, 'fc00:0:c::1', behavior=0xffff),
             srv6(4, None, nai_a6, behavior=5),
             srv6(6, 'fc00:0:c::e1', nai_ll, behavior=5),
             srv6(4, 'fc00:0:c::e2', nai_a6, behavior=6, v=True))
    p6 = msg(4, *r6h, e6)
    vec('pcrep-srv6-ero', 'SRv6-ERO: node with SID structure, SID only '
        '(opaque behavior), adjacency without SID, link-local adjacency, '
        'verified adjacency', p6, 'ok', d6 +
        ' ero 5\n'
        '  srv6 l=0 nt=2 f=004 b=1 sid=fc00:0:b::1 nai=2001:db8::11 '
        'st=32,16,16,0\n'
        '  srv6 l=0 nt=0 f=002 b=65535 sid=fc00:0:c::1\n'
        '  srv6 l=0 nt=4 f=001 b=5 nai=2001:db8::11,2001:db8::12\n'
        '  srv6 l=0 nt=6 f=000 b=5 sid=fc00:0:c::e1 '
        'nai=2001:db8::11:5,2001:db8::12:6\n'
        '  srv6 l=0 nt=4 f=008 b=6 sid=fc00:0:c::e2 '
        'nai=2001:db8::11,2001:db8::12\n', True)
    vec('pcrep-srv6-len24', 'SRv6-ERO NAI type 0 with SID: length 24, the '
        'minimum (RFC 9603 4.3.1.1)', msg(4, *r6h, ero(srv6(0, 'fc00::1'))),
        'ok', d6 + ' ero 1\n  srv6 l=0 nt=0 f=002 b=1 sid=fc00::1\n',
        True)
    vec('pcrep-srv6-nt1', 'SRv6-ERO NAI type 1 (SR-MPLS only): 10/40',
        msg(4, *r6h, ero(srv6(1, 'fc00::1', nai_n4))), 'pcerr 10/40 id 7')
    vec('pcrep-srv6-nt3', 'SRv6-ERO NAI type 3: 10/40',
        msg(4, *r6h, ero(srv6(3, 'fc00::1', nai_a4))), 'pcerr 10/40 id 7')
    vec('pcrep-srv6-both-absent', 'SRv6-ERO with S and F set: 10/41',
        msg(4, *r6h, ero(srv6(0, flags=0x003))), 'pcerr 10/41 id 7')
    vec('pcrep-srv6-struct-129', 'SID structure of 129 bits: 10/37',
        msg(4, *r6h, ero(srv6(0, 'fc00::1', st=(64, 32, 32, 1)))),
        'pcerr 10/37 id 7')
    vec('pcrep-srv6-struct-128', 'SID structure of 128 bits: the boundary',
        msg(4, *r6h, ero(srv6(0, 'fc00::1', st=(64, 32, 32, 0)))), 'ok',
        d6 + ' ero 1\n  srv6 l=0 nt=0 f=006 b=1 sid=fc00::1 '
        'st=64,32,32,0\n', True)
    vec('pcrep-srv6-t-without-sid', 'T with S set: T ignored, so length '
        'must exclude the structure (RFC 9603): length 24 is right',
        msg(4, *r6h, ero(srv6(2, None, nai_n6, flags=0x005))), 'ok',
        d6 + ' ero 1\n  srv6 l=0 nt=2 f=005 b=1 nai=2001:db8::11\n')
    vec('pcrep-srv6-len-bad', 'SRv6-ERO NAI type 2 with a SID, length 24: '
        '10/11', msg(4, *r6h, ero(srv6(2, 'fc00::1', flags=0x000))),
        'pcerr 10/11 id 7')
    vec('pcrep-srv6-mix', 'SRv6-ERO and SR-ERO in one ERO: 10/42',
        msg(4, *r6h, ero(srv6(0, 'fc00::1'), sr(0, label(16001)))),
        'pcerr 10/42 id 7')
    vec('pcrep-srv6-65', '65 SRv6-ERO subobjects: 10/39',
        msg(4, *r6h, ero(*[srv6(0, 'fc00::%x' % (i + 1)) for i in range(65)])),
        'pcerr 10/39 id 7')

    # PCRep: IPv4 hops, NO-PATH
    iph = msg(4, rp(5), ero(hop4('192.0.2.1'), hop4('192.0.2.11'),
                             hop4('192.0.2.2', loose=True)), metric(1, 30, p=False))
    vec('pcrep-ip-ero', 'an ERO of IPv4 hops (strict, strict, loose)', iph,
        'ok', 'msg PCRep len=%d\nrep id=5 flags=00000000 p=1\n ero 3\n'
        '  ip l=0 192.0.2.1/32\n  ip l=0 192.0.2.11/32\n'
        '  ip l=1 192.0.2.2/32\n metric 1 b=0 c=0 30\n' % len(iph), True)
    np1 = msg(4, rp(8, pst=1), nopath(vector=4))
    vec('pcrep-nopath-unknown-src', 'NO-PATH with NO-PATH-VECTOR unknown '
        'source', np1, 'ok', 'msg PCRep len=%d\nrep id=8 flags=00000000 '
        'p=1 pst=1\n nopath ni=0 c=0 vector=4\n' % len(np1), True)
    np2 = msg(4, rp(15, pst=1), nopath(c=True),
              metric(12, 500, b=True, p=False))
    vec('pcrep-nopath-delay', 'NO-PATH with C: the delay bound not met',
        np2, 'ok', 'msg PCRep len=%d\nrep id=15 flags=00000000 p=1 pst=1\n'
        ' nopath ni=0 c=1 vector=0\n metric 12 b=1 c=0 500\n' % len(np2),
        True)
    np3 = msg(4, rp(20, pst=1), nopath(c=True),
              xro([x_unnum('192.0.2.1', 1, 0)], p=False))
    vec('pcrep-nopath-xro', 'NO-PATH with C: the link exclusion', np3, 'ok',
        'msg PCRep len=%d\nrep id=20 flags=00000000 p=1 pst=1\n'
        ' nopath ni=0 c=1 vector=0\n xro 0000\n  x unnum 0 192.0.2.1 1 0\n'
        % len(np3), True)
    vec('pcrep-nopath-4', 'NO-PATH of 4 bytes (body 0): 10/11',
        msg(4, rp(8), obj(3, 1, b'')), 'pcerr 10/11')
    vec('pcrep-no-rp', 'PCRep without an RP: 6/1', msg(4, nopath()),
        'pcerr 6/1')

    # PCErr, Close, PCNtf
    e1 = pcerr(10, 11, ids=(7, 8))
    vec('pcerr-ids', 'PCErr naming two requests', e1, 'ok',
        'msg PCErr len=%d\nerr ids=7,8\n error 10/11\n' % len(e1), True)
    prop = open_obj(10, 40, 0, PCE_TLVS)
    e2 = pcerr(1, 4, proposal=prop)
    vec('pcerr-proposal', 'PCErr 1/4 with the Open proposed', e2, 'ok',
        'msg PCErr len=%d\nerr ids=\n error 1/4\n proposal ver=1 ka=10 '
        'dt=40 sid=0 pst=1,3 sr=00/0 srv6=0000\n' % len(e2), True)
    vec('pcerr-none', 'PCErr without a PCEP-ERROR object: 10/11',
        msg(6, rp(1, p=False)), 'pcerr 10/11')
    e16 = msg(6, *[err(10, i) for i in range(16)])
    vec('pcerr-16', '16 PCEP-ERROR objects: the cap', e16, 'ok',
        'msg PCErr len={len}\nerr ids=\n' +
        ''.join(' error 10/%d\n' % i for i in range(16)), True)
    vec('pcerr-17', '17 PCEP-ERROR objects: 10/11',
        msg(6, *[err(10, i) for i in range(17)]), 'pcerr 10/11')
    vec('close-2', 'Close, reason 2 (DeadTimer expired)', closemsg(2), 'ok',
        'msg Close len={len}\nclose reason=2\n', True)
    vec('pcntf', 'PCNtf: request 9 cancelled by the PCC',
        msg(5, rp(9, p=False), ntf(1, 1)), 'ok',
        'msg PCNtf len={len}\nntf ids=9\n ntf 1/1\n')


def write_sessions():
    pce_up = [('out', PCE_OPEN), ('state', 'openwait'),
              ('in', FRR_OPEN), ('event', 'none'), ('state', 'keepwait'),
              ('out', KA), ('in', KA), ('event', 'up'), ('state', 'up'),
              ('out', b'')]
    req = msg(3, rp(1, pst=1), ep4('192.0.2.1', '192.0.2.2'))
    ses('s01-pce-up', 'a PCC brings the session up, asks, then goes silent:'
        ' keepalives every 30 s, Close reason 2 at 120 s', 'pce',
        pce_up + [('deadline', '30000'), ('at', '30000'),
                  ('event', 'none'), ('out', KA), ('deadline', '60000'),
                  ('in', req), ('at', '45000'), ('event', 'msg PCReq'),
                  ('out', b''), ('deadline', '60000'), ('at', '165000'),
                  ('event', 'closed close 2'), ('out', closemsg(2)),
                  ('state', 'closed'), ('deadline', 'none')])
    ses('s02-openwait', 'no Open within 60 s: PCErr 1/2', 'pce',
        [('out', PCE_OPEN), ('deadline', '60000'), ('at', '59999'),
         ('event', 'none'), ('at', '60000'),
         ('event', 'closed pcerr 1/2'), ('out', pcerr(1, 2))])
    ses('s03-keepwait', 'an Open but no Keepalive within 60 s: 1/7', 'pce',
        [('out', PCE_OPEN), ('at', '1000'), ('in', FRR_OPEN),
         ('event', 'none'), ('out', KA), ('deadline', '61000'),
         ('at', '61000'), ('event', 'closed pcerr 1/7'),
         ('out', pcerr(1, 7))])
    bad = msg(1, open_obj(30, 250, 1, pst_cap([1], sr_cap(0, 4))))
    ses('s04-negotiate-fail', 'a deadtimer of 250 s: 1/4 proposing 30/120, '
        'then 1/5 for a second one', 'pce',
        [('out', PCE_OPEN), ('in', bad), ('event', 'answered 1/4'),
         ('out', pcerr(1, 4, proposal=open_obj(30, 120, 0, PCE_TLVS))),
         ('state', 'openwait'), ('in', bad),
         ('event', 'closed pcerr 1/5'), ('out', pcerr(1, 5))])
    zero = msg(1, open_obj(0, 0, 1, pst_cap([1], sr_cap(0, 4))))
    ses('s05-negotiate-ok', 'keepalive 0: 1/4 proposes 30/120, the peer '
        'agrees', 'pce',
        [('out', PCE_OPEN), ('in', zero), ('event', 'answered 1/4'),
         ('out', pcerr(1, 4, proposal=open_obj(30, 120, 0, PCE_TLVS))),
         ('in', FRR_OPEN), ('event', 'none'), ('out', KA), ('in', KA),
         ('event', 'up')])
    ses('s06-not-open-first', 'a PCReq before any Open: 1/1', 'pce',
        [('out', PCE_OPEN), ('in', req), ('event', 'closed pcerr 1/1'),
         ('out', pcerr(1, 1))])
    ses('s07-sr-cap-missing', 'PST 1 without SR-PCE-CAPABILITY: 10/12 '
        '(RFC 8664)', 'pce',
        [('out', PCE_OPEN), ('in', msg(1, open_obj(30, 120, 1,
                                                    pst_cap([1])))),
         ('event', 'closed pcerr 10/12'), ('out', pcerr(10, 12))])
    ses('s08-msd-zero', 'SR MSD 0 without the X flag: 10/21 (RFC 8664)',
        'pce', [('out', PCE_OPEN),
                ('in', msg(1, open_obj(30, 120, 1,
                                       pst_cap([1], sr_cap(0, 0))))),
                ('event', 'closed pcerr 10/21'), ('out', pcerr(10, 21))])
    ses('s09-msd-x', 'SR MSD 0 with the X flag (no limit): accepted', 'pce',
        [('out', PCE_OPEN),
         ('in', msg(1, open_obj(30, 120, 1, pst_cap([1], sr_cap(1, 0))))),
         ('event', 'none'), ('out', KA), ('in', KA), ('event', 'up')])
    ses('s10-srv6-cap-missing', 'PST 3 without SRv6-PCE-CAPABILITY: 10/34 '
        '(RFC 9603)', 'pce',
        [('out', PCE_OPEN),
         ('in', msg(1, open_obj(30, 120, 1, pst_cap([1, 3],
                                                     sr_cap(0, 4))))),
         ('event', 'closed pcerr 10/34'), ('out', pcerr(10, 34))])
    ses('s11-srv6-msd-type', 'an SRv6 MSD type that is not one (1): 1/1 '
        '(RFC 9603)', 'pce',
        [('out', PCE_OPEN),
         ('in', msg(1, open_obj(30, 120, 1, pst_cap([3], srv6_cap(0, [(1, 4)]))))),
         ('event', 'closed pcerr 1/1'), ('out', pcerr(1, 1))])
    ses('s12-peer-proposes', 'the peer proposes 10/40 for our Open: a new '
        'Open, then keepalives every 10 s', 'pce',
        [('out', PCE_OPEN),
         ('in', pcerr(1, 4, proposal=open_obj(10, 40, 0))),
         ('event', 'answered 1/4'),
         ('out', msg(1, open_obj(10, 40, 0, PCE_TLVS))),
         ('in', FRR_OPEN), ('event', 'none'), ('out', KA), ('in', KA),
         ('event', 'up'), ('deadline', '10000'), ('at', '10000'),
         ('event', 'none'), ('out', KA)])
    ses('s13-peer-proposal-bad', 'the peer proposes keepalive 0: 1/6', 'pce',
        [('out', PCE_OPEN),
         ('in', pcerr(1, 4, proposal=open_obj(0, 40, 0))),
         ('event', 'closed pcerr 1/6'), ('out', pcerr(1, 6))])
    ses('s14-peer-refuses', 'the peer refuses our Open (1/3): over, nothing '
        'sent', 'pce',
        [('out', PCE_OPEN), ('in', pcerr(1, 3)),
         ('event', 'closed pcerr 1/3'), ('out', b'')])
    ses('s15-version-2', 'a common header of version 2 before the session '
        'is up: 1/8', 'pce',
        [('out', PCE_OPEN), ('in', msg(1, open_obj(30, 120, 1), ver=2)),
         ('event', 'closed pcerr 1/8'), ('out', pcerr(1, 8))])
    ses('s16-header-broken-up', 'once up, a message length of 2: Close '
        'reason 3', 'pce',
        pce_up + [('in', b'\x20\x02\x00\x02'),
                  ('event', 'closed close 3'), ('out', closemsg(3))])
    ses('s17-malformed-up', 'once up, an object past the end of its PCReq: '
        'PCErr 10/11 naming request 7, the session goes on', 'pce',
        pce_up + [('in', msg(3, rp(7), obj(4, 1, ipb('192.0.2.1'), p=True,
                                         length=40))),
                  ('event', 'answered 10/11'), ('out', pcerr(10, 11, [7])),
                  ('in', req), ('event', 'msg PCReq'), ('state', 'up')])
    ses('s18-bad-request', 'one request without END-POINTS, one good: 6/3 '
        'for the first, the second delivered', 'pce',
        pce_up + [('in', msg(3, rp(1), rp(2),
                             ep4('192.0.2.1', '192.0.2.2'))),
                  ('event', 'msg PCReq'), ('out', pcerr(6, 3, [1]))])
    ses('s19-unknown-object-p', 'an unknown object with P: 3/1 for its '
        'request', 'pce',
        pce_up + [('in', msg(3, rp(4), ep4('192.0.2.1', '192.0.2.2'),
                             obj(99, 1, b'', p=True))),
                  ('event', 'msg PCReq'), ('out', pcerr(3, 1, [4]))])
    ses('s20-peer-close', 'Close from the peer', 'pce',
        pce_up + [('in', closemsg(1)), ('event', 'closed close 1'),
                  ('out', b'')])
    ses('s21-second-open', 'a second Open while waiting for the Keepalive: '
        '1/1', 'pce',
        [('out', PCE_OPEN), ('in', FRR_OPEN), ('event', 'none'),
         ('out', KA), ('in', FRR_OPEN), ('event', 'closed pcerr 1/1'),
         ('out', pcerr(1, 1))])
    ses('s22-open-when-up', 'an Open once up: ignored and counted', 'pce',
        pce_up + [('in', FRR_OPEN), ('event', 'answered'), ('state', 'up')])
    pce_open = msg(1, open_obj(30, 120, 0, PCE_TLVS))
    rep = msg(4, rp(1, pst=1), ero(sr(1, label(16002), ipb('192.0.2.2'))))
    ses('s23-pcc', 'the C-PS as a PCC: its Open (MSD 10), the PCE\'s, a '
        'PCRep delivered; a PCReq from the PCE ignored', 'pcc',
        [('out', PCC_OPEN), ('in', pce_open), ('event', 'none'),
         ('out', KA), ('in', KA), ('event', 'up'), ('in', rep),
         ('event', 'msg PCRep'), ('in', req), ('event', 'answered')])
    ses('s24-keepalive-first', 'the Keepalive before the Open (RFC 5440 '
        'Appendix A: LocalOK first)', 'pce',
        [('out', PCE_OPEN), ('in', KA), ('event', 'none'),
         ('state', 'openwait'), ('in', FRR_OPEN), ('event', 'up'),
         ('out', KA)])


def main():
    for f in os.listdir(OUT):
        if f.endswith('.vec') or f.endswith('.ses'):
            os.unlink(os.path.join(OUT, f))
    write_vectors()
    write_sessions()
    os.makedirs(SEEDS, exist_ok=True)
    for f in os.listdir(SEEDS):
        os.unlink(os.path.join(SEEDS, f))
    for name, data in seeds.items():
        with open(os.path.join(SEEDS, name), 'wb') as f:
            f.write(data)
    print('%d files, %d seeds' % (len(written), len(seeds)))


if __name__ == '__main__':
    main()
