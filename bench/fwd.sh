#!/bin/bash
# bench/fwd.sh - cats-fwd against the kernel path, side by side, in the same
# namespaces (tests/bats/fwd_net.bash):
#
#   kernel:   nftables DNAT at the ingress + seg6 encapsulation, seg6local
#             End.DX4 at the egress, the reply routed back over the core and
#             un-NATed by conntrack;
#   cats-fwd: cats-fwd ingress and egress on AF_PACKET rings, SRv6 both
#             ways, bindings from the fake control plane (fake-cps).
#
# Rows: "name | value | baseline | ratio" (ratio = value / baseline; for
# latencies and delays smaller is better).  Timings are never asserted.
# FWD_BENCH_SECONDS (3) sets each measurement's length.  Needs root.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
export PATH="$BUILD/bin:$BUILD/tests/tools:$PATH"
BATS_TEST_DIRNAME=$TOP/tests/bats
. "$TOP/tests/bats/helper.bash"
FWD_ID=b$$
FWD_RING=	# the forwarders' default receive rings
. "$TOP/tests/bats/fwd_net.bash"
DUR=${FWD_BENCH_SECONDS:-3}
UDP="$TOP/bench/fwd_udp.py"

if [ "$(id -u)" != 0 ]; then
	echo "fwd: needs root (network namespaces); skipped" >&2
	exit 0
fi
for t in iperf3 trafgen nft; do
	command -v $t >/dev/null || { echo "fwd: no $t; skipped" >&2; exit 0; }
done

cleanup() {
	fwd_down
	[ -n "${FWD_DIR:-}" ] && rm -rf "$FWD_DIR"
}
trap cleanup EXIT INT TERM

fwd_up
# Core links carry the encapsulation overhead on both paths.
xi ip link set i1 mtu 9000
xe ip link set e1 mtu 9000
xi ip addr add 10.99.0.1/24 dev i1
xe ip addr add 10.99.0.2/24 dev e1
xs $PY "$UDP" echo 198.51.100.11 7 >/dev/null 2>&1 &
echo $! >"$FWD_DIR/echo.pid"
xs iperf3 -s -B 198.51.100.11 -D --logfile "$FWD_DIR/iperf3.log" \
	--pidfile "$FWD_DIR/iperf3.pid"
sleep 0.3
# The server counts what arrives (the pps measure).
xs nft -f - <<'EOF'
table inet bench {
	counter udp9 { }
	chain pre {
		type filter hook prerouting priority -300;
		udp dport 9 counter name udp9 drop
	}
}
EOF

kernel_up() {
	xi sysctl -qw net.ipv4.ip_forward=1
	xi sysctl -qw net.ipv6.conf.all.forwarding=1
	xi nft -f - <<'EOF'
table ip benchnat {
	chain pre {
		type nat hook prerouting priority dstnat;
		ip daddr 203.0.113.100 dnat to 198.51.100.11
	}
}
EOF
	xi ip -6 route add 2001:db8:2::/64 via 2001:db8:cc::2 dev i1
	xi ip route add 198.51.100.0/24 encap seg6 mode encap segs 2001:db8:2::100 dev i1
	xe sysctl -qw net.ipv4.ip_forward=1
	xe sysctl -qw net.ipv6.conf.all.forwarding=1
	xe sysctl -qw net.ipv6.conf.all.seg6_enabled=1
	xe sysctl -qw net.ipv6.conf.e1.seg6_enabled=1
	xe ip -6 route add 2001:db8:2::100/128 encap seg6local action End.DX4 \
		nh4 198.51.100.11 dev e2
	xe ip route add 192.0.2.0/24 via 10.99.0.1 dev e1
}

kernel_down() {
	xi nft delete table ip benchnat
	xi ip route del 198.51.100.0/24
	xi ip -6 route del 2001:db8:2::/64
	xe ip -6 route del 2001:db8:2::100/128
	xe ip route del 192.0.2.0/24
	for n in "$NI" "$NE"; do
		ip netns exec "$n" sysctl -qw net.ipv4.ip_forward=0
		ip netns exec "$n" sysctl -qw net.ipv6.conf.all.forwarding=0
		ip netns exec "$n" conntrack -F >/dev/null 2>&1 || true
	done
}

cats_up() {
	local extra=("$@")	# the loop below sets the positional parameters
	# The forwarders' kernels need not look at what cats-fwd handles: drop
	# IP after the packet taps (ARP and neighbour discovery pass).
	for x in "$NI i0 i1" "$NE e1 e2"; do
		set -- $x
		ip netns exec "$1" nft -f - <<EOF
table netdev catsfwd {
	chain a {
		type filter hook ingress device $2 priority 0;
		meta protocol ip drop
		ip6 nexthdr != ipv6-icmp drop
		icmpv6 type != { nd-neighbor-solicit, nd-neighbor-advert } drop
	}
	chain b {
		type filter hook ingress device $3 priority 0;
		meta protocol ip drop
		ip6 nexthdr != ipv6-icmp drop
		icmpv6 type != { nd-neighbor-solicit, nd-neighbor-advert } drop
	}
}
EOF
	done
	# fake-cps stands in for the control plane and shares the CPUs: its
	# memory is touched at start, as cats-fwd's is by default.
	CPS_NOLOG=1 start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1 \
		--reserve-flows 8192
	start_egress --jumbo-core "${extra[@]}"
	start_ingress --jumbo-core --pending-flows 65536 \
		--pending-pkts 65536 --pending-client 65535 --pending-timeout 5s \
		"${extra[@]}"
}

cats_down() {
	stop ingress
	stop egress
	stop cps
	rm -f "$FWD_DIR/select.sock" "$FWD_DIR/bind.sock" "$FWD_DIR/cps.log"
}

tcp_gbps() {
	xc iperf3 -c 203.0.113.100 -t "$DUR" -P "$1" -J 2>/dev/null |
		jq -r '(.end.sum_received.bits_per_second // 0) / 1e9 * 100 | floor / 100'
}

# 64-byte UDP frames from trafgen on both CPUs; one 5-tuple or random
# source ports; the rate is what the server's nftables counter saw.
udp_pps() {
	local sp=$1 mac
	mac=$(mac_of "$NI" i0)
	cat >"$FWD_DIR/tg.cfg" <<EOF
{
  eth(da=$mac, sa=$(mac_of "$NC" c0), type=0x0800),
  ipv4(saddr=192.0.2.10, daddr=203.0.113.100, ttl=64),
  udp(sp=$sp, dp=9),
  fill(0x41, 18)
}
EOF
	xs nft reset counter inet bench udp9 >/dev/null
	xc timeout "$DUR" trafgen --dev c0 --conf "$FWD_DIR/tg.cfg" --cpus 2 -q \
		>/dev/null 2>&1
	sleep 0.3
	local n
	n=$(xs nft -j list counter inet bench udp9 | jq '.nftables[1].counter.packets')
	echo $((n / DUR))
}

# New flows through the whole loop: 5000 one-packet flows from flowgen, a C
# sender (the interpreter of fwd_udp.py newflows would take a fifth of the
# two CPUs the forwarders share); flowsink in the server namespace reports
# flows, first-packet delay p50/p99 and the span, from the kernel's receive
# times.
new_flows() {
	xs flowsink 198.51.100.11 9100 $((DUR + 3)) >"$FWD_DIR/sink.out" &
	local sk=$!
	sleep 0.5
	xc flowgen 192.0.2.10 203.0.113.100 9100 5000
	wait $sk
	cat "$FWD_DIR/sink.out"
}

# The same one flow at a time (2 ms apart, source ports of their own): the
# first-packet delay of the control loop without queueing behind a burst.
paced_flows() {
	xs flowsink 198.51.100.11 9101 3 >"$FWD_DIR/sink2.out" &
	local sk=$!
	sleep 0.5
	xc $PY "$UDP" newflows 192.0.2.10 203.0.113.100 9101 200 2000 30000
	wait $sk
	cat "$FWD_DIR/sink2.out"
}

latency() {
	xc timeout 60 $PY "$UDP" ping 203.0.113.100 7 2000 || echo "0 0 2000"
}

declare -A K C
measure() {
	local -n R=$1
	R[tcp1]=$(tcp_gbps 1)
	R[tcp4]=$(tcp_gbps 4)
	R[pps1]=$(udp_pps 4242)
	if [ "$1" = C ]; then
		# The forwarders share the CPUs with the load generator, whereas
		# the kernel forwards in softirq, ahead of every process: the
		# same flow with cats-fwd ahead of the generator (nice -10).
		renice -n -10 -p "$(cat "$FWD_DIR/ingress.pid")" \
		    "$(cat "$FWD_DIR/egress.pid")" >/dev/null
		R[pps1n]=$(udp_pps 4242)
		renice 0 -p "$(cat "$FWD_DIR/ingress.pid")" \
		    "$(cat "$FWD_DIR/egress.pid")" >/dev/null
	fi
	read -r R[lat50] R[lat99] R[lost] <<<"$(latency)"
	read -r R[flows] R[fp50] R[fp99] R[span] <<<"$(new_flows)"
	read -r R[pflows] R[pfp50] R[pfp99] R[pspan] <<<"$(paced_flows)"
	# Last: random source ports fill the pending pool (new flows).
	R[ppsr]=$(udp_pps 'drnd(1024, 65535)')
}

declare -A F
kernel_up
measure K
kernel_down
cats_up
measure C
counter ingress rx_pkts >/dev/null
cp "$FWD_DIR/ingress.stats" "${FWD_BENCH_STATS:-/dev/null}" 2>/dev/null
cats_down
# The same with established flows forwarded by cats-fwd's tc programs.
cats_up --fast-path
measure F
counter ingress rx_pkts >/dev/null
cp "$FWD_DIR/ingress.stats" "${FWD_BENCH_STATS:-/dev/null}.fast" 2>/dev/null
cats_down

row() {
	local ratio
	ratio=$(awk -v a="$2" -v b="$3" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
	printf '%s | %s | %s | %s\n' "$1" "$2" "$3" "$ratio"
}
rate() {
	awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%d", n / s; else print 0 }'
}
row "fwd tcp -P1 Gbit/s (cats-fwd vs the kernel path)" "${C[tcp1]}" "${K[tcp1]}"
row "fwd tcp -P4 Gbit/s" "${C[tcp4]}" "${K[tcp4]}"
row "fwd udp64 pps one 5-tuple (established)" "${C[pps1]}" "${K[pps1]}"
row "fwd udp64 pps one 5-tuple, cats-fwd at nice -10" "${C[pps1n]}" "${K[pps1]}"
row "fwd udp64 pps random source ports (new flows)" "${C[ppsr]}" "${K[ppsr]}"
row "fwd new flows/s through the loop (fake-cps)" "$(rate "${C[flows]}" "${C[span]}")" "$(rate "${K[flows]}" "${K[span]}")"
row "fwd new flows delivered of 5000" "${C[flows]}" "${K[flows]}"
row "fwd first-packet delay p50 us" "${C[fp50]}" "${K[fp50]}"
row "fwd first-packet delay p99 us" "${C[fp99]}" "${K[fp99]}"
row "fwd first-packet delay p50 us, flows 2 ms apart" "${C[pfp50]}" "${K[pfp50]}"
row "fwd first-packet delay p99 us, flows 2 ms apart" "${C[pfp99]}" "${K[pfp99]}"
row "fwd established RTT p50 us" "${C[lat50]}" "${K[lat50]}"
row "fwd established RTT p99 us" "${C[lat99]}" "${K[lat99]}"
row "fwd added latency p50 us (RTT - kernel RTT)" "$((C[lat50] - K[lat50]))" 0
row "fwd added latency p99 us (RTT - kernel RTT)" "$((C[lat99] - K[lat99]))" 0
row "fwd --fast-path tcp -P1 Gbit/s" "${F[tcp1]}" "${K[tcp1]}"
row "fwd --fast-path tcp -P4 Gbit/s" "${F[tcp4]}" "${K[tcp4]}"
row "fwd --fast-path udp64 pps one 5-tuple (established)" "${F[pps1]}" "${K[pps1]}"
row "fwd --fast-path udp64 pps random source ports (new flows)" "${F[ppsr]}" "${K[ppsr]}"
row "fwd --fast-path new flows/s through the loop" "$(rate "${F[flows]}" "${F[span]}")" "$(rate "${K[flows]}" "${K[span]}")"
row "fwd --fast-path new flows delivered of 5000" "${F[flows]}" "${K[flows]}"
row "fwd --fast-path first-packet delay p99 us" "${F[fp99]}" "${K[fp99]}"
row "fwd --fast-path established RTT p50 us" "${F[lat50]}" "${K[lat50]}"
row "fwd --fast-path established RTT p99 us" "${F[lat99]}" "${K[lat99]}"
row "fwd --fast-path added latency p50 us" "$((F[lat50] - K[lat50]))" 0
row "fwd --fast-path added latency p99 us" "$((F[lat99] - K[lat99]))" 0
