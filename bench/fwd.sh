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
# A measurement that failed is an "error: ... did not measure: WHY" cell
# and the ratio "error", never a number.  FWD_BENCH_SECONDS (3) sets each
# measurement's length.  FWD_BENCH_PATHS (default "kernel cats fast")
# picks the paths measured and FWD_BENCH_ROWS (default "tcp pps latency
# flows ppsr") the measures: tcp (-P1, -P4), pps (one 5-tuple, and for cats
# at nice -10), latency (RTT), flows (new flows: burst, paced, offered),
# ppsr (random source ports); rows of what was not measured are left out,
# e.g. FWD_BENCH_PATHS="kernel fast" FWD_BENCH_ROWS="tcp pps" for the fast
# path's ratios alone.  FWD_BENCH_ROUNDS (1) measures every path that
# many times, the order of the paths reversed every other round (kernel
# first, then last: a machine that warms up or slows down during a run
# favours neither), and each cell is the median of its rounds (an error
# in any round is the cell's error).  Needs root.  The one setting of the machine it
# needs, net.netfilter.nf_hooks_lwtunnel=1, it sets itself and puts back
# on exit (the kernel may refuse to turn it off again: then it says so).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
. "$(dirname "$0")/lib/bench.sh"
bench_fwd_net fwd b$$ iperf3 trafgen nft
UDP="$TOP/bench/fwd_udp.py"

# Sysctls of the machine set for the benchmark, and their values before.
SYSCTL_WHO=fwd
. "$TOP/bench/lib/sysctl.bash"

cleanup() {
	fwd_down
	[ -n "${FWD_DIR:-}" ] && rm -rf "$FWD_DIR"
	restore_sysctls
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The kernel path: the DNAT's conntrack entry is confirmed, and the reply
# un-NATed, only if netfilter sees the packets seg6 encapsulates and
# decapsulates.  That is off by default; without it no reply comes back
# (no TCP, no RTT).  The sysctl is nf_conntrack's.
[ -e /proc/sys/net/netfilter/nf_hooks_lwtunnel ] || modprobe nf_conntrack 2>/dev/null
need_sysctl net.netfilter.nf_hooks_lwtunnel 1
KERNEL_WHY=$SYSCTL_WHY

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
	# IP at prerouting, after the rings (bound by ethertype, they get
	# frames after tc and netdev ingress; ARP and neighbour discovery pass).
	for x in "$NI i0 i1" "$NE e1 e2"; do
		set -- $x
		ip netns exec "$1" nft -f - <<EOF
table inet catsfwd {
	chain a {
		type filter hook prerouting priority raw;
		meta nfproto ipv4 drop
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
	# The hosts' stacks back for the kernel path (a later round's).
	xi nft delete table inet catsfwd
	xe nft delete table inet catsfwd
	rm -f "$FWD_DIR/select.sock" "$FWD_DIR/bind.sock" "$FWD_DIR/cps.log"
}

# Each measurement (and tcp_gbps, bench/lib/bench.sh) prints its figures, or
# one line "error: WHY": a failure never reads as a number.
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
		>/dev/null 2>"$FWD_DIR/tg.err"
	local rc=$? n
	sleep 0.3
	n=$(xs nft -j list counter inet bench udp9 | jq '.nftables[1].counter.packets')
	if [ "$rc" != 124 ] && [ "$rc" != 0 ]; then
		echo "error: trafgen exited $rc: $(head -c 120 "$FWD_DIR/tg.err" | tr '\n' ' ')"
	elif ! [ "${n:-0}" -gt 0 ] 2>/dev/null; then
		echo "error: no packet reached the server"
	else
		echo $((n / DUR))
	fi
}

# New flows through the whole loop: 5000 one-packet flows from flowgen, a C
# sender (an interpreter would take a fifth of the two CPUs the forwarders
# share); flowsink in the server namespace reports
# flows, first-packet delay p50/p99 and the span, from the kernel's receive
# times.  With BENCH_DATA set (bench/run.sh), the delays themselves go to
# fwd.delay-burst-WHO.tsv there (WHO: kernel, cats, fast), those of the
# paced flows to fwd.delay-paced-WHO.tsv, for bench/plot.sh.
samples() { [ -n "${BENCH_DATA:-}" ] && echo "$BENCH_DATA/fwd.delay-$1-$WHO.tsv"; }
new_flows() {
	xs flowsink 198.51.100.11 9100 $((DUR + 3)) $(samples burst) >"$FWD_DIR/sink.out" &
	local sk=$!
	sleep 0.5
	xc flowgen 192.0.2.10 203.0.113.100 9100 5000
	wait $sk
	flows_of "$FWD_DIR/sink.out"
}

# flowsink's "flows p50 p99 span", or why there is none.
flows_of() {
	local n
	read -r n _ <"$1"
	if [ -z "${n:-}" ]; then
		echo "error: flowsink reported nothing"
	elif [ "$n" = 0 ]; then
		echo "error: no flow reached the server"
	else
		cat "$1"
	fi
}

# The same one flow at a time (flowgen paced at 500/s: 2 ms apart, source
# ports of their own): the
# first-packet delay of the control loop without queueing behind a burst.
paced_flows() {
	xs flowsink 198.51.100.11 9101 3 $(samples paced) >"$FWD_DIR/sink2.out" &
	local sk=$!
	sleep 0.5
	xc flowgen 192.0.2.10 203.0.113.100 9101 200 30000 500
	wait $sk
	flows_of "$FWD_DIR/sink2.out"
}

# New flows delivered against the load offered: flowgen paced at each
# rate of OFFERED (flows/s) for half a second, source ports of their own
# (31000 up), flowsink counting; into ARRAY[ofRATE] (flows) and
# ARRAY[ofspanRATE] (seconds, first to last arrival).
OFFERED="1000 2000 5000 10000 20000"
offered_flows() {
	local -n O=$1
	local r n sp=31000 sk
	for r in $OFFERED; do
		n=$((r / 2))
		xs flowsink 198.51.100.11 9102 2 >"$FWD_DIR/sink3.out" &
		sk=$!
		sleep 0.3
		xc flowgen 192.0.2.10 203.0.113.100 9102 $n $sp $r
		wait $sk
		fields O "$(flows_of "$FWD_DIR/sink3.out")" "of$r" _ _ "ofspan$r"
		sp=$((sp + n))
	done
}

# "p50 p99 lost" of 2000 round trips on one flow, or why there is none.
latency() {
	local out rc=0
	out=$(xc timeout 60 $PY "$UDP" ping 203.0.113.100 7 2000 2>&1) || rc=$?
	case $rc in
	0) echo "$out" ;;
	124) echo "error: 2000 round trips took over 60 s" ;;
	*) echo "error: ${out:-the ping exited $rc}" ;;
	esac
}

# fields ARRAY OUTPUT KEY...: the words of OUTPUT into ARRAY[KEY]..., or,
# when OUTPUT is an error, that error into each.
fields() {
	local -n A=$1
	local out=$2 k i=0 w
	shift 2
	case $out in
	error:*)
		for k; do A[$k]=$out; done ;;
	*)
		read -ra w <<<"$out"
		for k; do A[$k]=${w[i]:-error: no $k in "$out"}; i=$((i + 1)); done ;;
	esac
}

PATHS=${FWD_BENCH_PATHS:-kernel cats fast}
ROWS=${FWD_BENCH_ROWS:-tcp pps latency flows ppsr}
# want WORD LIST: is WORD one of LIST's words?
want() { case " $2 " in *" $1 "*) return 0 ;; esac; return 1; }
KEYS="tcp1 tcp4 pps1 pps1n ppsr lat50 lat99 lost flows fp50 fp99 span
    pflows pfp50 pfp99 pspan $(for r in $OFFERED; do echo of$r ofspan$r; done)"
declare -A K C F
# Every cell starts as "skip" (not selected): its rows are left out.
for k in $KEYS; do K[$k]=skip C[$k]=skip F[$k]=skip; done
measure() {
	local -n R=$1
	case $1 in K) WHO=kernel ;; C) WHO=cats ;; F) WHO=fast ;; esac
	if want tcp "$ROWS"; then
		R[tcp1]=$(tcp_gbps 1)
		R[tcp4]=$(tcp_gbps 4)
	fi
	want pps "$ROWS" && R[pps1]=$(udp_pps 4242)
	if [ "$1" = C ] && want pps "$ROWS"; then
		# The forwarders share the CPUs with the load generator, whereas
		# the kernel forwards in softirq, ahead of every process: the
		# same flow with cats-fwd ahead of the generator (nice -10).
		renice -n -10 -p "$(cat "$FWD_DIR/ingress.pid")" \
		    "$(cat "$FWD_DIR/egress.pid")" >/dev/null
		R[pps1n]=$(udp_pps 4242)
		renice 0 -p "$(cat "$FWD_DIR/ingress.pid")" \
		    "$(cat "$FWD_DIR/egress.pid")" >/dev/null
	fi
	want latency "$ROWS" && fields R "$(latency)" lat50 lat99 lost
	if want flows "$ROWS"; then
		fields R "$(new_flows)" flows fp50 fp99 span
		fields R "$(paced_flows)" pflows pfp50 pfp99 pspan
		offered_flows R
	fi
	# Last: random source ports fill the pending pool (new flows).
	want ppsr "$ROWS" && R[ppsr]=$(udp_pps 'drnd(1024, 65535)')
	return 0
}

# One path's measurement: kernel into K, cats into C, fast into F.
measure_path() {
	case $1 in
	kernel)
		if [ -z "$KERNEL_WHY" ]; then
			kernel_up
			measure K
			kernel_down
		else
			# (a row whose cats-fwd cells were not selected stays out)
			for k in $KEYS; do K[$k]="error: $KERNEL_WHY"; done
		fi ;;
	cats)
		cats_up
		measure C
		counter ingress rx_pkts >/dev/null
		cp "$FWD_DIR/ingress.stats" "${FWD_BENCH_STATS:-/dev/null}" 2>/dev/null
		cats_down ;;
	fast)
		# The same with established flows forwarded by cats-fwd's tc
		# programs.
		cats_up --fast-path
		measure F
		counter ingress rx_pkts >/dev/null
		cp "$FWD_DIR/ingress.stats" "${FWD_BENCH_STATS:-/dev/null}.fast" 2>/dev/null
		cats_down ;;
	esac
}

ROUNDS=${FWD_BENCH_ROUNDS:-1}
case $ROUNDS in ''|*[!0-9]*|0) echo "fwd: FWD_BENCH_ROUNDS: not a count: $ROUNDS" >&2; exit 2 ;; esac
want kernel "$PATHS" && [ -n "$KERNEL_WHY" ] &&
	echo "fwd: the kernel path is not measured: $KERNEL_WHY" >&2
ORDER=""
for p in kernel cats fast; do want $p "$PATHS" && ORDER="$ORDER $p"; done
REVERSED=""
for p in $ORDER; do REVERSED=" $p$REVERSED"; done
declare -A KA CA FA
for ((round = 1; round <= ROUNDS; round++)); do
	order=$ORDER
	[ $((round % 2)) = 0 ] && order=$REVERSED
	[ "$ROUNDS" -gt 1 ] && echo "fwd: round $round of $ROUNDS:$order" >&2
	for p in $order; do measure_path "$p"; done
	for k in $KEYS; do
		KA[$k]+="${K[$k]}"$'\n' CA[$k]+="${C[$k]}"$'\n' FA[$k]+="${F[$k]}"$'\n'
	done
done
for k in $KEYS; do
	K[$k]=$(median "${KA[$k]}") C[$k]=$(median "${CA[$k]}") F[$k]=$(median "${FA[$k]}")
done

# row NAME WHAT VALUE BASELINE: a value or baseline that did not measure
# says so (WHAT names the measure), and then the ratio is "error"; a row
# of a path or measure not selected is left out.
row() {
	local name=$1 what=$2 v=$3 b=$4 who=cats-fwd ratio
	[ "$v" = skip ] || [ "$b" = skip ] && return 0
	case $name in *--fast-path*) who="cats-fwd --fast-path" ;; esac
	case $v in error:*) v="error: $who $what did not measure: ${v#error: }" ;; esac
	case $b in error:*) b="error: kernel $what baseline did not measure: ${b#error: }" ;; esac
	v=${v//|//} b=${b//|//}	# the table's separator
	case "$v$b" in
	*error:*) ratio=error ;;
	*) ratio=$(awk -v a="$v" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }') ;;
	esac
	printf '%s | %s | %s | %s\n' "$name" "$v" "$b" "$ratio"
}
# Flows over seconds, or the error of either.
rate() {
	case $1$2 in *skip*) echo skip; return ;; esac
	case $1 in error:*) echo "$1"; return ;; esac
	case $2 in error:*) echo "$2"; return ;; esac
	awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%d", n / s; else print "error: the flows took no time" }'
}
# RTT minus the kernel's, or why not.
added() {
	case $1$2 in *skip*) echo skip; return ;; esac
	case $1 in error:*) echo "$1"; return ;; esac
	case $2 in error:*) echo "error: no kernel RTT to subtract: ${2#error: }"; return ;; esac
	echo $(($1 - $2))
}
row "fwd tcp -P1 Gbit/s (cats-fwd vs the kernel path)" "TCP" "${C[tcp1]}" "${K[tcp1]}"
row "fwd tcp -P4 Gbit/s" "TCP" "${C[tcp4]}" "${K[tcp4]}"
row "fwd udp64 pps one 5-tuple (established)" "UDP pps" "${C[pps1]}" "${K[pps1]}"
row "fwd udp64 pps one 5-tuple, cats-fwd at nice -10" "UDP pps" "${C[pps1n]}" "${K[pps1]}"
row "fwd udp64 pps random source ports (new flows)" "UDP pps" "${C[ppsr]}" "${K[ppsr]}"
row "fwd new flows/s through the loop (fake-cps)" "new flows" "$(rate "${C[flows]}" "${C[span]}")" "$(rate "${K[flows]}" "${K[span]}")"
row "fwd new flows delivered of 5000" "new flows" "${C[flows]}" "${K[flows]}"
row "fwd first-packet delay p50 us" "first-packet delay" "${C[fp50]}" "${K[fp50]}"
row "fwd first-packet delay p99 us" "first-packet delay" "${C[fp99]}" "${K[fp99]}"
row "fwd first-packet delay p50 us, flows 2 ms apart" "first-packet delay" "${C[pfp50]}" "${K[pfp50]}"
row "fwd first-packet delay p99 us, flows 2 ms apart" "first-packet delay" "${C[pfp99]}" "${K[pfp99]}"
row "fwd established RTT p50 us" "RTT" "${C[lat50]}" "${K[lat50]}"
row "fwd established RTT p99 us" "RTT" "${C[lat99]}" "${K[lat99]}"
row "fwd added latency p50 us (RTT - kernel RTT)" "added latency" "$(added "${C[lat50]}" "${K[lat50]}")" 0
row "fwd added latency p99 us (RTT - kernel RTT)" "added latency" "$(added "${C[lat99]}" "${K[lat99]}")" 0
row "fwd --fast-path tcp -P1 Gbit/s" "TCP" "${F[tcp1]}" "${K[tcp1]}"
row "fwd --fast-path tcp -P4 Gbit/s" "TCP" "${F[tcp4]}" "${K[tcp4]}"
row "fwd --fast-path udp64 pps one 5-tuple (established)" "UDP pps" "${F[pps1]}" "${K[pps1]}"
row "fwd --fast-path udp64 pps random source ports (new flows)" "UDP pps" "${F[ppsr]}" "${K[ppsr]}"
row "fwd --fast-path new flows/s through the loop" "new flows" "$(rate "${F[flows]}" "${F[span]}")" "$(rate "${K[flows]}" "${K[span]}")"
row "fwd --fast-path new flows delivered of 5000" "new flows" "${F[flows]}" "${K[flows]}"
row "fwd --fast-path first-packet delay p99 us" "first-packet delay" "${F[fp99]}" "${K[fp99]}"
row "fwd --fast-path established RTT p50 us" "RTT" "${F[lat50]}" "${K[lat50]}"
row "fwd --fast-path established RTT p99 us" "RTT" "${F[lat99]}" "${K[lat99]}"
row "fwd --fast-path added latency p50 us" "added latency" "$(added "${F[lat50]}" "${K[lat50]}")" 0
row "fwd --fast-path added latency p99 us" "added latency" "$(added "${F[lat99]}" "${K[lat99]}")" 0
for r in $OFFERED; do
	row "fwd new flows/s delivered at $r/s offered" "new flows" "$(rate "${C[of$r]}" "${C[ofspan$r]}")" "$(rate "${K[of$r]}" "${K[ofspan$r]}")"
done
for r in $OFFERED; do
	row "fwd --fast-path new flows/s delivered at $r/s offered" "new flows" "$(rate "${F[of$r]}" "${F[ofspan$r]}")" "$(rate "${K[of$r]}" "${K[ofspan$r]}")"
done
