#!/bin/sh
# Path requests per second through the cats-pce process (decode, compute,
# encode, pipes), on a synthetic network of BENCH_PCE_NODES nodes (10^4):
# the CATS pattern (8 ingress forwarders, 8 egress sites, 4 constraint
# sets, 20000 requests), with the answer cache and without it.
BUILD=${BUILD:-build}
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
