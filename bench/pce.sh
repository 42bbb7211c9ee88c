#!/bin/sh
# Path requests per second through the cats-pce process (decode, compute,
# encode, pipes), on a synthetic network of BENCH_PCE_NODES nodes (10^4):
# the CATS pattern (8 ingress forwarders, 8 egress sites, 4 constraint
# sets, 20000 requests), with the answer cache and without it; then the
# same requests over PCEP (one session) against the record interface, the
# session setup time and the memory a session takes.
BUILD=${BUILD:-build}
TOP=$(cd "$(dirname "$0")/.." && pwd)
N=${BENCH_PCE_NODES:-10000}
R=${BENCH_PCE_REQUESTS:-20000}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT INT TERM
PATH="$BUILD/bin:$BUILD/tests/tools:$PATH"
topogen -s 5 "$N" >"$T/topo.json" || exit 1
awk -v n="$N" -v r="$R" 'BEGIN {
	srand(11);
	for (i = 0; i < 8; i++) { ing[i] = int(rand() * n); egr[i] = int(rand() * n); }
	prof[0] = "{}";
	prof[1] = "{\"max_delay_us\":40000}";
	prof[2] = "{\"min_bw\":100000000,\"exclude_any\":8}";
	prof[3] = "{\"metric\":\"delay\",\"max_hops\":40}";
	for (i = 1; i <= r; i++) {
		a = ing[int(rand() * 8)]; b = egr[int(rand() * 8)];
		if (a == b) b = (b + 1) % n;
		printf "{\"type\":\"path-req\",\"txn\":%d,\"ts\":%d,\"headend\":\"n%d\",\"endpoint\":\"n%d\",\"dataplane\":\"srmpls\",\"constraints\":%s,\"decision\":{\"cs_id\":\"S1\",\"csci_id\":\"c1\",\"locator\":\"198.51.100.21\",\"egress\":\"n%d\",\"ts\":1000},\"ingress\":\"n%d\"}\n", i, 1000 + i, a, b, prof[int(rand() * 4)], b, a;
	}
}' | cats-cbor encode >"$T/reqs.cbor" || exit 1
# Loading the topology is part of each run: measure it alone, and take
# it out of the rates.
t0=$(date +%s%N)
: | cats-pce -t "$T/topo.json" >/dev/null ||
	{ echo "pce: cats-pce did not load the topology" >&2; exit 1; }
t1=$(date +%s%N)
load=$((t1 - t0))
rate() {
	s0=$(date +%s%N)
	cats-pce -t "$T/topo.json" --replay "$@" <"$T/reqs.cbor" >"$T/out.cbor" || return 1
	s1=$(date +%s%N)
	echo "$R $s0 $s1 $load" | awk '{ printf "%.0f", $1 / (($3 - $2 - $4) / 1e9) }'
}
cached=$(rate) || exit 1
cold=$(rate --cache 0) || exit 1
printf 'filter-cats-%s | %s req/s | %s req/s --cache 0 | %s\n' "$N" "$cached" \
    "$cold" "$(echo "$cached $cold" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else print "error" }')"
printf 'load-%s | %s ms | no baseline | n/a\n' "$N" "$(echo "$t0 $t1" | awk '{ printf "%.0f", ($2 - $1) / 1e6 }')"

# PCEP (cats-pce --pcep) against the record interface, same run, same
# requests: the C-PS side is cats-pce --pce (records in, PCReq/PCRep over
# one session, records out), so both rates include the record work and
# one load of the topology (the PCC's names; the filter's database).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cats-pce -t "$T/topo.json" --insecure --pcep "tcp:127.0.0.1:$port" \
    </dev/null 2>"$T/pce.err" &
pce_pid=$!
i=0
while ! grep -q 'PCEP on' "$T/pce.err" 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -gt 600 ] && { echo "pce: --pcep did not start" >&2; kill "$pce_pid"; exit 1; }
	sleep 0.1
done
s0=$(date +%s%N)
cats-pce -t "$T/topo.json" --insecure --pce "tcp:127.0.0.1:$port" \
    --pce-timeout 60s <"$T/reqs.cbor" >"$T/pcep.cbor" 2>"$T/pcc.err" ||
	{ echo "pce: --pce failed" >&2; kill "$pce_pid"; exit 1; }
s1=$(date +%s%N)
ok=$(cats-cbor decode "$T/pcep.cbor" | grep -c '"status":"ok"')
r0=$(date +%s%N)
cats-pce -t "$T/topo.json" <"$T/reqs.cbor" >"$T/rec.cbor" ||
	{ kill "$pce_pid"; exit 1; }
r1=$(date +%s%N)
ok_rec=$(cats-cbor decode "$T/rec.cbor" | grep -c '"status":"ok"')
rec=$(echo "$R $r0 $r1" | awk '{ printf "%.0f", $1 / (($3 - $2) / 1e9) }')
pcep=$(echo "$R $s0 $s1" | awk '{ printf "%.0f", $1 / (($3 - $2) / 1e9) }')
printf 'pcep-cats-%s | %s req/s (%s ok) | %s req/s records (%s ok) | %s\n' \
    "$N" "$pcep" "$ok" "$rec" "$ok_rec" \
    "$(echo "$pcep $rec" | awk '{ if ($2 > 0) printf "%.2f", $1 / $2; else print "error" }')"
# Session setup: connect, Open, Keepalive both ways, over 50 sessions.
: >"$T/empty"
u0=$(date +%s%N)
for i in $(seq 50); do
	pcep_peer pcc -c "tcp:127.0.0.1:$port" -t 5000 <"$T/empty" 2>/dev/null ||
		{ echo "pce: a session did not come up" >&2; kill "$pce_pid"; exit 1; }
done
u1=$(date +%s%N)
printf 'pcep-session-setup | %s ms | no baseline | n/a\n' \
    "$(echo "$u0 $u1" | awk '{ printf "%.2f", ($2 - $1) / 50 / 1e6 }')"
# Memory per session: the PCE's resident set with 200 sessions up (each
# from its own loopback address: one session per peer), against none.
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$pce_pid/status"; }
open=$(grep '^hex:' "$TOP/tests/data/pcep/open-pcc.vec" | cut -d' ' -f2-)
m0=$(rss)
for i in $(seq 200); do
	printf '%s\n20020004\nsleep 4000\n' "$open" |
	    pcep_peer raw -b "127.0.$((i / 250 + 1)).$((i % 250 + 1))" \
	    -c "tcp:127.0.0.1:$port" -t 100 >/dev/null 2>&1 &
done
sleep 2
m1=$(rss)
up=$(kill -USR1 "$pce_pid"; sleep 0.5; grep '"type":"stats"' "$T/pce.err" |
    tail -1 | sed 's/.*"pcep.up":\([0-9]*\).*/\1/')
wait_sessions=$(jobs -p)
printf 'pcep-session-memory | %s KiB/session (%s up) | no baseline | n/a\n' \
    "$(echo "$m0 $m1 $up" | awk '{ if ($3 > 0) printf "%.1f", ($2 - $1) / $3; else print "error" }')" "$up"
kill "$pce_pid"
wait "$pce_pid" 2>/dev/null
for p in $wait_sessions; do wait "$p" 2>/dev/null; done
