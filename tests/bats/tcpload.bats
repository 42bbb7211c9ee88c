#!/usr/bin/env bats
# tcpload (tests/tools/tcpload.c), the load generator of bench/loop.sh: its
# figures are counts, and a failure is counted by its cause, never hidden
# (flows = ok + failed).  In a namespace of its own, on addresses of its lo.

load helper

setup() {
	need_root
	NS=tcpload$$
	ip netns add "$NS"
	ip -n "$NS" link set lo up
	for i in 1 2 3; do ip -n "$NS" addr add 10.77.0.$i/32 dev lo; done
	PIDS=()
}

teardown() {
	stop_pids
	ip netns del "$NS" 2>/dev/null || true
}

# The value of KEY in tcpload's line $output.
field() { tr ' ' '\n' <<<"$output" | sed -n "s/^$1=//p"; }

@test "tcpload: closed loop, open loop and burst against its sink: every flow ok, one line each" {
	bg ip netns exec "$NS" tcpload sink 10.77.0.1 80
	wait_for 50 sh -c "ip netns exec $NS tcpload -c 1 -n 1 10.77.0.1 80 10.77.0.2 | grep -q ' ok=1 '"
	run ip netns exec "$NS" tcpload -c 4 -d 0.3 -q -p 30000 10.77.0.1 80 10.77.0.2-3
	[ "$status" = 0 ]
	[ "$(field mode)" = closed ]
	[ "$(field failed)" = 0 ]
	[ "$(field ok)" = "$(field flows)" ]
	[ "$(field ok)" -gt 10 ]
	[[ "$(field resp_p50_us)" =~ ^[0-9]+$ ]]
	run ip netns exec "$NS" tcpload -r 500 -n 50 -p 40000 -o "$BATS_TEST_TMPDIR/d" \
		-e "$BATS_TEST_TMPDIR/e" 10.77.0.1 80 10.77.0.2-3
	[ "$(field mode)" = open ]
	[ "$(field ok)" = 50 ]
	# The samples file: a comment, then every connect time, sorted.
	[ "$(grep -vc '^#' "$BATS_TEST_TMPDIR/d")" = 50 ]
	sort -nc <(grep -v '^#' "$BATS_TEST_TMPDIR/d")
	[ "$(grep -c ' ok$' "$BATS_TEST_TMPDIR/e")" = 50 ]
	run ip netns exec "$NS" tcpload -b 500 -p 45000 10.77.0.1 80 10.77.0.2-3
	[ "$(field mode)" = burst ]
	[ "$(field ok)" = 500 ]
}

@test "tcpload: refused, unreachable, timed out and out of ports are counted, flows = ok + failed" {
	run ip netns exec "$NS" tcpload -c 2 -n 20 10.77.0.1 81 10.77.0.2
	[ "$(field flows)" = 20 ]
	[ "$(field refused)" = 20 ]
	[ "$(field failed)" = 20 ]
	[ "$(field p50_us)" = none ]
	# A SYN dropped: a timeout, after -t; an ICMP error: unreachable.
	ip netns exec "$NS" nft add table ip t
	ip netns exec "$NS" nft add chain ip t o '{ type filter hook output priority 0; }'
	ip netns exec "$NS" nft add rule ip t o tcp dport 82 drop
	ip netns exec "$NS" nft add rule ip t o tcp dport 83 reject with icmp type host-unreachable
	run ip netns exec "$NS" tcpload -c 1 -n 2 -t 200 10.77.0.1 82 10.77.0.2
	[ "$(field timeout)" = 2 ]
	[ "$(field failed)" = 2 ]
	run ip netns exec "$NS" tcpload -c 1 -n 3 10.77.0.1 83 10.77.0.2
	[ "$(field unreach)" = 3 ]
	# The last source port: one flow, then the client is out of ports.
	run ip netns exec "$NS" tcpload -c 1 -n 5 -p 65535 10.77.0.1 81 10.77.0.2
	[ "$(field flows)" = 2 ]
	[ "$(field refused)" = 1 ]
	[ "$(field noport)" = 1 ]
	run ip netns exec "$NS" tcpload -c 1 10.77.0.1 80
	[ "$status" = 2 ]
}
