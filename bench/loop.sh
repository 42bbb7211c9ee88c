#!/bin/bash
# bench/loop.sh - the whole loop (examples/demo/loop_net.bash): new TCP
# flows, every one a new 5-tuple through cats-fwd, cats-select, cats-pce,
# cats-bind (journal synced) and back to the forwarders, from tcpload
# (tests/tools/tcpload.c: a C generator, one process, epoll) in the client
# namespace against tcpload's sink at site1-a (the best instance: every
# flow goes there).  Each measure runs three times, in the same harness:
#
#   C-PS:     cats-cps, the real C-PS, its journal synced (--fsync always);
#   fake-cps: the same forwarders with fake-cps, a stand-in that binds every
#             request at once (no selection, no path, no journal, no
#             authentication): the C-PS's cost;
#   kernel:   the forwarders stopped and the kernel doing their work in the
#             same namespaces (nftables DNAT and conntrack at the ingress,
#             seg6 encapsulation over the core, End.DX4 at the egress, the
#             replies routed back and un-NATed): the whole price of steering
#             in user space with a control loop, against none.
#
# The measures (the delay is the connect time: connect() to established,
# the SYN held at the ingress, decided, bound, released, the SYN-ACK back):
#   64 clients  one client address each, one connection in flight each,
#               connect/request/close as fast as they go, LOOP_BENCH_SECONDS;
#   paced       1000 flows 2 ms apart (an open loop from the 64 addresses):
#               the first-packet delay without queueing;
#   burst       5000 new flows at once (from the 64 addresses): its p99
#               (a flow not established in 10 s fails);
#   one client  one client address, connect/request/close in a loop: p50.
# With the C-PS only: a restart of cats-select (-9) while flows arrive
# every 20 ms: new flows served again after (ms), with its CST kept in its
# state file against without; kill -9 of each stage of cats-cps (and of the
# whole service, started again at once, as systemd would) while new
# flows arrive at 1000/s for 5 s: failed flows and the gap; and the 64 clients
# with cats-bind's journal synced at an interval and never, against always
# (with never also one client and the paced flows, against fake-cps: the
# sync's share of the first-packet delay).
#
# The ingress runs with pending limits above the burst's (--pending-flows,
# --pending-client, and a deadline of 5 s: a burst of 5000 takes seconds
# to bind) and 4096-frame rings (the harness's 64 drop a burst's SYNs): the
# limits measured are the C-PS's, not the forwarders' tables'.  Every run takes source ports of its own: no flow of one is a
# 5-tuple the forwarders still hold from another.
#
# Rows: "name | value | baseline | ratio".  Timings are never asserted.
# A measurement that failed is an "error: ... did not measure: WHY" cell
# and the ratio "error", never a number; a loop that does not come up
# exits 1.  The one setting of the machine it needs (the kernel path's
# net.netfilter.nf_hooks_lwtunnel=1) it sets itself and puts back on exit.
# Needs root.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
. "$(dirname "$0")/lib/bench.sh"
DUR=${LOOP_BENCH_SECONDS:-3}
if [ "$(id -u)" != 0 ]; then
	echo "loop: needs root (network namespaces); skipped" >&2
	exit 0
fi
for t in fake-cps tcpload; do
	command -v $t >/dev/null || { echo "loop: no $t; skipped" >&2; exit 0; }
done
SYSCTL_WHO=loop
. "$TOP/bench/lib/sysctl.bash"
LOOP_ID=b$$
LOOP_PEER_KEYS=	# fake-cps signs nothing; both runs alike
LOOP_RING=4096	# smaller rings drop the SYNs of a burst (8 MiB each)
# One client address makes thousands of bindings in the idle time (30 s):
# above cats-bind's default per-client limit (4096, cats-bind(1) LIMITS),
# which would cap the one-client rows; fake-cps has none.
LOOP_CLIENT_BINDINGS=65536
. "$TOP/examples/demo/loop_net.bash"
trap 'loop_down; restore_sysctls' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "loop: load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
loop_up >&2 && loop_wait_ready 200 || { echo "loop: the loop did not come up" >&2; exit 1; }
loop_stop IF-1
loop_ingress_start --pending-flows 16384 --pending-pkts 16384 \
	--pending-client 8192 --pending-timeout 5s >&2 || { echo "loop: the ingress did not come back" >&2; exit 1; }
# site1-a becomes tcpload's sink, with a backlog above the burst (the
# site's own namespace); its SCI goes on reporting it idle.
loop_stop site1-a
lx "$LS1" sysctl -qw net.core.somaxconn=65535 net.ipv4.tcp_max_syn_backlog=65535
loop_bg sink "$LS1" - - tcpload sink 198.51.100.11 80
# One client address of its own for each one-client run (cats-bind counts
# bindings by client address): .10 the C-PS's, .75-.77 the others'; .78
# the probes of serving.
for a in 75 76 77 78; do
	lx "$LC" ip addr add 192.0.2.$a/24 dev c0
done
MANY=192.0.2.11-74
sleep 0.5

# serving WHO: after a switch of the C-PS (cats-cps started again, fake-cps
# in its place), wait until one new flow is established (a probe a half
# second, up to 15 s; the time it took goes to stderr), so that a
# throughput run measures the loop serving, not its start; the start's
# outage is the restart rows' figure.  Ports of their own (40000 up).
PROBE=40000
serving() {
	local t0 i
	t0=$(date +%s%3N)
	for i in $(seq 30); do
		PROBE=$((PROBE + 1))
		if lx "$LC" tcpload -c 1 -n 1 -t 500 -p $PROBE 203.0.113.100 80 \
			192.0.2.78 2>/dev/null | grep -q ' ok=1 '; then
			echo "loop: $1 served a new flow $(($(date +%s%3N) - t0)) ms after the probes began" >&2
			return 0
		fi
	done
	echo "loop: $1 served no new flow in 15 s of probes" >&2
}

# tcpload's line as "flows|ok|failed|rate|p50|p99|detail" (detail: the
# failures by cause), or the reason there is none in each field: a failure
# never reads as a number.  gen NAME SPORT0 TCPLOAD-OPTIONS... SRC; with
# BENCH_DATA set (bench/run.sh) the connect times go to loop.NAME.tsv there.
gen() {
	local name=$1 sp=$2 out e
	shift 2
	out=$(lx "$LC" tcpload -p "$sp" \
		${BENCH_DATA:+-o "$BENCH_DATA/loop.$name.tsv"} "${@:1:$#-1}" \
		203.0.113.100 80 "${!#}" 2>&1)
	echo "loop: $name: $(tr '\n' ' ' <<<"$out")" >&2
	local line
	line=$(grep '^tcpload ' <<<"$out" | tail -1)
	if [ -z "$line" ]; then
		e="error: tcpload gave no result: $(tr '\n|' ' /' <<<"$out" | cut -c1-120)"
		echo "$e|$e|$e|$e|$e|$e|$e"
		return
	fi
	local -A k
	local w
	for w in $line; do
		case $w in *=*) k[${w%%=*}]=${w#*=} ;; esac
	done
	if [ "${k[ok]:-0}" = 0 ]; then
		e="error: no connection completed (${k[failed]:-?} of ${k[flows]:-?} failed)"
		echo "$e|$e|${k[failed]:-$e}|$e|$e|$e|$e"
		return
	fi
	echo "${k[flows]}|${k[ok]}|${k[failed]}|${k[rate]}|${k[p50_us]}|${k[p99_us]}|refused ${k[refused]}, unreach ${k[unreach]}, timeout ${k[timeout]}, other ${k[other]}, noport ${k[noport]}"
}

# The four measures of one configuration WHO (cps, fakecps, kernel) into
# the array of that name: many_*, paced_*, burst_*, one_* (flows ok failed
# rate p50 p99 detail).  PORTS: the first source port of its runs (each
# run of the 64 addresses takes 2000 ports an address).
declare -A cps fakecps kernel never interval
measures() {
	local -n M=$1
	local p=$2 one=$3 r
	IFS='|' read -r M[many_flows] M[many_ok] M[many_failed] M[many_rate] \
		M[many_p50] M[many_p99] M[many_detail] \
		<<<"$(gen "delay-$1" "$p" -c 64 -d "$DUR" -q "$MANY")"
	IFS='|' read -r M[paced_flows] M[paced_ok] M[paced_failed] r \
		M[paced_p50] M[paced_p99] M[paced_detail] \
		<<<"$(gen "delay-paced-$1" $((p + 2000)) -r 500 -n 1000 -d 3 "$MANY")"
	sleep 0.5
	IFS='|' read -r M[burst_flows] M[burst_ok] M[burst_failed] M[burst_rate] \
		M[burst_p50] M[burst_p99] M[burst_detail] \
		<<<"$(gen "delay-burst-$1" $((p + 4000)) -b 5000 -t 10000 "$MANY")"
	sleep 0.5
	IFS='|' read -r M[one_flows] M[one_ok] M[one_failed] M[one_rate] \
		M[one_p50] M[one_p99] M[one_detail] \
		<<<"$(gen "delay-$1-1" 10000 -c 1 -d "$DUR" -q "$one")"
}
serving cats-cps
measures cps 10000 192.0.2.10
if [ "$LOOP_CPS" = cps ]; then
	act=$(kill -USR1 "$(loop_pid cps)"; sleep 0.8; cats-cbor decode "$LOOP_DIR/cps.stats" 2>/dev/null |
		jq -r 'select(.type == "stats") | .counters["bind.activated"] // empty' | tail -1)
else
	act=$(kill -USR1 "$(loop_pid bind)"; sleep 0.5; cats-cbor decode "$LOOP_DIR/bind.cbor" 2>/dev/null |
		jq -r 'select(.type == "stats") | .counters.activated // empty' | tail -1)
fi

# The outage of a kill (-9) of stage S while tcpload offers RATE new flows
# a second from the 64 addresses for SECS s, the kill 1 s in: "gap|failed
# |flows|back|detail", the gap the time from the kill until flows are served
# again (ms: the first established of the flows started after the last
# one that failed, or after the kill when none failed), failed the
# flows that did not complete (refused, unreachable or not established in
# 3 s, after two SYN retransmissions; each counted), back the time until
# the stage ran again (ms).
# The killed stage is restarted by cats-cps; the whole service (S=cps) is
# started again at once by the harness.
outage() {
	local s=$1 rate=$2 secs=$3 sp=$4 f=$LOOP_DIR/outage.$1.$4 p old t0 g out
	[ "$LOOP_CPS" = cps ] || { e="error: LOOP_CPS=$LOOP_CPS, not cats-cps"; echo "$e|$e|$e|$e|"; return; }
	lx "$LC" tcpload -r "$rate" -d "$secs" -p "$sp" -e "$f" \
		203.0.113.100 80 "$MANY" >"$f.out" 2>&1 &
	p=$!
	sleep 1
	t0=$(date +%s%3N)
	case $s in
	nostate) rm -f "$LOOP_DIR/select.state"; old=$(loop_pid select); kill -9 "$old" ;;
	state) old=$(loop_pid select); kill -9 "$old" ;;
	cps)
		# The whole service, started again at once, as systemd's
		# Restart= would (its stages die with it).
		old=$(loop_pid cps)
		kill -9 "$old"
		loop_wait 30 sh -c "! kill -0 $old"
		loop_cps_svc_start >/dev/null 2>&1 &
		;;
	*) old=$(loop_pid "$s"); kill -9 "$old" ;;
	esac
	# The stage running again (a new pid under cats-cps; for the whole
	# service, its cats-bind under a new cats-cps), to 10 ms.
	local n=500 back= np
	while [ $n -gt 0 ]; do
		case $s in
		cps) np=$(loop_pid cps) && [ "$np" != "$old" ] && loop_stage_pid bind >/dev/null ;;
		*) np=$(loop_stage_pid "${s/*state/select}") && [ "$np" != "$old" ] ;;
		esac && { back=$(($(date +%s%3N) - t0)); break; }
		sleep 0.01
		n=$((n - 1))
	done
	wait "$p"
	out=$(cat "$f.out")
	echo "loop: kill -9 $s at $rate/s: $(tr '\n' ' ' <<<"$out")" >&2
	g=$(sort -n "$f" | awk -v t0="$t0" '$1 <= t0 { next }
		$3 != "ok" { first = 0; next }
		!first || $2 < first { first = $2 }
		END { if (first) print first - t0 }')
	case $s in
	state|nostate) loop_stage_wait select "$old" >/dev/null 2>&1 ;;
	cps) wait ;;	# loop_cps_svc_start
	*) loop_stage_wait "$s" "$old" >/dev/null 2>&1 ;;
	esac
	local -A k
	local w
	for w in $(grep '^tcpload ' <<<"$out"); do
		case $w in *=*) k[${w%%=*}]=${w#*=} ;; esac
	done
	[ -n "${k[flows]:-}" ] || { e="error: tcpload gave no result: $(tr '\n|' ' /' <<<"$out" | cut -c1-100)"; echo "$e|$e|$e|$e|"; return; }
	echo "${g:-error: no new flow completed within $((secs - 1)) s of the kill}|${k[failed]}|${k[flows]}|${back:-error: cats-cps did not start cats-$s again within 5 s}|refused ${k[refused]}, unreach ${k[unreach]}, timeout ${k[timeout]}, other ${k[other]}"
}
# A restart of cats-select, with its CST kept in its state file (--state)
# against the same restart without it (removed just before the kill: the
# table comes back with the agents' next full snapshot, up to a
# keep-alive, LOOP_KEEPALIVE s); flows every 20 ms.
IFS='|' read -r R_STATE _ _ _ _ <<<"$(outage state 50 4 16000)"
loop_wait_ready 200 >/dev/null 2>&1
IFS='|' read -r R_NOSTATE _ _ _ _ <<<"$(outage nostate 50 $((LOOP_KEEPALIVE + 4)) 16500)"
loop_wait_ready 200 >/dev/null 2>&1
declare -A K
sp=17000
for s in select pce bind cps; do
	IFS='|' read -r K[${s}_gap] K[${s}_failed] K[${s}_flows] K[${s}_back] K[${s}_detail] \
		<<<"$(outage "$s" 1000 5 $sp)"
	sp=$((sp + 500))	# 5000 flows: 79 ports an address
	sleep 0.5
done

# The journal's durability (cats-bind --fsync, in cats-cps's [bind]
# section): cats-cps started again with each policy, the 64 clients again,
# against the run above with the default (always: each group commit synced
# before its bindings leave).
fsync_run() {
	local -n M=$1
	local n0 e
	loop_stop cps
	n0=$(grep -c 'forwarder .* connected' "$LOOP_DIR/log/cps.err")
	if ! LOOP_FSYNC=$1 loop_cps_svc_start >/dev/null 2>&1 ||
		! loop_wait 100 sh -c "[ \$(grep -c 'forwarder .* connected' '$LOOP_DIR/log/cps.err') -ge $((n0 + 3)) ]"; then
		e="error: cats-cps with --fsync $1 did not come back"
		M[many_rate]=$e M[many_failed]=$e M[one_p50]=$e M[one_p99]=$e
		M[paced_p50]=$e M[paced_p99]=$e
		return
	fi
	serving "cats-cps --fsync $1"
	IFS='|' read -r _ _ M[many_failed] M[many_rate] _ _ _ \
		<<<"$(gen "delay-cps-fsync-$1" "$2" -c 64 -d "$DUR" -q "$MANY")"
	[ -n "${3:-}" ] || return 0
	IFS='|' read -r _ _ _ _ M[one_p50] M[one_p99] _ \
		<<<"$(gen "delay-cps-fsync-$1-1" 10000 -c 1 -d "$DUR" -q "$3")"
	IFS='|' read -r _ _ _ _ M[paced_p50] M[paced_p99] _ \
		<<<"$(gen "delay-paced-cps-fsync-$1" $(($2 + 1000)) -r 500 -n 1000 -d 3 "$MANY")"
}
fsync_run interval 20000
fsync_run never 22000 192.0.2.75	# and 23000 (paced)

# The baseline: fake-cps on the same sockets, a newer epoch than cats-bind's.
loop_stop cps
loop_stop bind
loop_stop select
loop_stop pce
loop_stop tee
loop_bg fakecps "$LM" - - fake-cps --select "unix:$LOOP_DIR/select.sock" \
	--bind "unix:$LOOP_DIR/bind.sock" --egress EF-1 --locator 198.51.100.11 \
	--sids 2001:db8:2::1 --epoch 1000000000 \
	--log "$LOOP_DIR/fakecps.log"
for f in IF-1 EF-1; do
	loop_wait 50 grep -q "\"fwd\":\"$f\",\"event\":\"hello\"" "$LOOP_DIR/fakecps.log"
done
# Its newer epoch fences every binding of cats-bind's at the forwarders
# (thousands, each reported removed): that burst ends before the clients
# start, or the baseline's first connects wait behind it.
for f in IF-1 EF-1; do
	for i in $(seq 50); do
		[ "$(loop_counter "$f" bindings)" = 0 ] && break
		sleep 0.2
	done
done
serving fake-cps
measures fakecps 24000 192.0.2.76

# The kernel path in the same namespaces: the forwarders stopped, their
# kernels forward.  The DNAT's conntrack entry is confirmed, and the reply
# un-NATed, only if netfilter sees the packets seg6 encapsulates: that is
# the machine's nf_hooks_lwtunnel (nf_conntrack's, off by default).  The
# replies come back over the core in plain IPv4 (10.98.0.0/16 links).
kernel_up() {
	[ -e /proc/sys/net/netfilter/nf_hooks_lwtunnel ] || modprobe nf_conntrack 2>/dev/null
	need_sysctl net.netfilter.nf_hooks_lwtunnel 1 || return 1
	local f
	for f in IF-1 EF-1 EF-2 fakecps; do loop_stop $f; done
	lx "$LI" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 &&
	lx "$LI" nft -f - <<'EOF' &&
table ip benchnat {
	chain pre {
		type nat hook prerouting priority dstnat;
		ip daddr 203.0.113.100 dnat to 198.51.100.11
	}
}
EOF
	lx "$LI" ip addr add 10.98.1.1/24 dev i1 &&
	lx "$LI" ip -6 route add 2001:db8:2::/48 via 2001:db8:f0::2 dev i1 &&
	lx "$LI" ip route add 198.51.100.0/24 encap seg6 mode encap \
		segs 2001:db8:2::100 dev i1 &&
	lx "$LX" ip addr add 10.98.1.2/24 dev x0 &&
	lx "$LX" ip addr add 10.98.2.1/24 dev x1 &&
	lx "$LX" sysctl -qw net.ipv4.ip_forward=1 &&
	lx "$LX" ip route add 192.0.2.0/24 via 10.98.1.1 &&
	lx "$LE1" ip addr add 10.98.2.2/24 dev e1 &&
	lx "$LE1" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
		net.ipv6.conf.all.seg6_enabled=1 net.ipv6.conf.e1.seg6_enabled=1 &&
	lx "$LE1" ip -6 route add 2001:db8:2::100/128 encap seg6local \
		action End.DX4 nh4 198.51.100.11 dev e2 &&
	lx "$LE1" ip route add 192.0.2.0/24 via 10.98.2.1 dev e1
}
KERNEL_WHY=
if ! kernel_up >&2; then
	KERNEL_WHY=${SYSCTL_WHY:-the kernel path could not be set up (above)}
elif ! lx "$LC" curl -s -m 3 -o /dev/null http://203.0.113.100/; then
	KERNEL_WHY="no answer through the kernel path"
fi
if [ -z "$KERNEL_WHY" ]; then
	serving "the kernel path"
	measures kernel 30000 192.0.2.77
else
	echo "loop: the kernel path is not measured: $KERNEL_WHY" >&2
	for k in many_rate many_failed paced_p50 paced_p99 burst_p99 one_p50; do
		kernel[$k]="error: $KERNEL_WHY"
	done
fi

# A value or baseline that did not measure says so; then no ratio.
# row NAME VALUE BASELINE [WHO]: WHO names the baseline (fake-cps).
row() {
	local v=$2 b=$3 who=${4:-the fake-cps baseline} ratio
	case $v in error:*) v="error: the loop did not measure: ${v#error: }" ;; esac
	case $b in error:*) b="error: $who did not measure: ${b#error: }" ;; esac
	v=${v//|//} b=${b//|//}	# the table's separator
	case "$v$b" in
	*error:*|*none*) ratio=error ;;
	*) ratio=$(awk -v a="$v" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }') ;;
	esac
	printf '%s | %s | %s | %s\n' "$1" "$v" "$b" "$ratio"
}
K_="the kernel path"
row "loop new flows/s, 64 clients connect/request/close (C-PS vs fake-cps)" "${cps[many_rate]}" "${fakecps[many_rate]}"
row "loop new flows/s, 64 clients (forwarders + C-PS vs the kernel conntrack path)" "${cps[many_rate]}" "${kernel[many_rate]}" "$K_"
row "loop first-packet delay p50 us (connect: SYN held, decided, bound, SYN-ACK back)" "${cps[many_p50]}" "${fakecps[many_p50]}"
row "loop first-packet delay p99 us" "${cps[many_p99]}" "${fakecps[many_p99]}"
row "loop failed connects, 64 clients in ${DUR}s" "${cps[many_failed]}" "${fakecps[many_failed]}"
row "loop failed connects, 64 clients, kernel path (vs fake-cps)" "${kernel[many_failed]:-error: not run}" "${fakecps[many_failed]}"
row "loop first-packet delay p50 us, flows 2 ms apart (C-PS vs fake-cps)" "${cps[paced_p50]}" "${fakecps[paced_p50]}"
row "loop first-packet delay p99 us, flows 2 ms apart (C-PS vs fake-cps)" "${cps[paced_p99]}" "${fakecps[paced_p99]}"
row "loop first-packet delay p50 us, flows 2 ms apart (C-PS vs kernel)" "${cps[paced_p50]}" "${kernel[paced_p50]}" "$K_"
row "loop first-packet delay p99 us, flows 2 ms apart (C-PS vs kernel)" "${cps[paced_p99]}" "${kernel[paced_p99]}" "$K_"
row "loop first-packet delay p99 us, burst of 5000 new flows (C-PS vs fake-cps)" "${cps[burst_p99]}" "${fakecps[burst_p99]}"
row "loop first-packet delay p99 us, burst of 5000 (C-PS vs kernel)" "${cps[burst_p99]}" "${kernel[burst_p99]}" "$K_"
row "loop burst of 5000: failed flows (C-PS vs fake-cps)" "${cps[burst_failed]}" "${fakecps[burst_failed]}"
row "loop burst of 5000: new flows/s (C-PS vs fake-cps)" "${cps[burst_rate]}" "${fakecps[burst_rate]}"
row "loop first-packet delay p50 us, one client (C-PS vs fake-cps)" "${cps[one_p50]}" "${fakecps[one_p50]}"
row "loop first-packet delay p99 us, one client" "${cps[one_p99]}" "${fakecps[one_p99]}"
row "loop new flows/s, one client" "${cps[one_rate]}" "${fakecps[one_rate]}"
# One client address: its bindings are below LOOP_CLIENT_BINDINGS (above).
row "loop failed connects in ${DUR}s, one client" "${cps[one_failed]}" "${fakecps[one_failed]}"
row "loop first-packet delay p50 us, one client, kernel path (vs fake-cps)" "${kernel[one_p50]:-error: not run}" "${fakecps[one_p50]}"
row "loop new flows/s, 64 clients, cats-bind --fsync interval (vs always)" "${interval[many_rate]}" "${cps[many_rate]}" "the --fsync always run"
row "loop new flows/s, 64 clients, cats-bind --fsync never (vs always)" "${never[many_rate]}" "${cps[many_rate]}" "the --fsync always run"
row "loop failed connects in ${DUR}s, --fsync interval (vs always)" "${interval[many_failed]}" "${cps[many_failed]}" "the --fsync always run"
row "loop failed connects in ${DUR}s, --fsync never (vs always)" "${never[many_failed]}" "${cps[many_failed]}" "the --fsync always run"
row "loop first-packet delay p50 us, one client, --fsync never (vs fake-cps)" "${never[one_p50]}" "${fakecps[one_p50]}"
row "loop first-packet delay p99 us, one client, --fsync never (vs fake-cps)" "${never[one_p99]}" "${fakecps[one_p99]}"
row "loop first-packet delay p50 us, flows 2 ms apart, --fsync never (vs fake-cps)" "${never[paced_p50]}" "${fakecps[paced_p50]}"
row "loop first-packet delay p99 us, flows 2 ms apart, --fsync never (vs fake-cps)" "${never[paced_p99]}" "${fakecps[paced_p99]}"
row "loop cats-select restarted (-9): new flows served again after, ms (--state vs none)" \
	"$R_STATE" "$R_NOSTATE" "the restart without --state"
for s in select pce bind cps; do
	row "loop cats-$s killed (-9) at 1000 new flows/s: new flows served again after, ms (vs the goal, 1 s)" \
		"${K[${s}_gap]}" 1000 "the goal"
	row "loop cats-$s killed (-9) at 1000 new flows/s: failed flows (of all started)" \
		"${K[${s}_failed]}" "${K[${s}_flows]}" "the count of flows"
	row "loop cats-$s killed (-9) at 1000 new flows/s: the stage running again after, ms (vs the goal, 1 s)" \
		"${K[${s}_back]}" 1000 "the goal"
	echo "loop: cats-$s killed: failed flows by cause: ${K[${s}_detail]:-}" >&2
done
for w in cps fakecps kernel; do
	declare -n M=$w
	echo "loop: $w failures: 64 clients ${M[many_detail]:-}; paced ${M[paced_detail]:-}; burst ${M[burst_detail]:-}; one ${M[one_detail]:-}" >&2
done
[ -n "$act" ] && echo "loop: cats-bind activated $act bindings" >&2
echo "loop: load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
true
