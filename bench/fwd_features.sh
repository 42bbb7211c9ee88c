#!/bin/bash
# bench/fwd_features.sh - what cats-fwd's connection tracking and SR-MPLS
# cost, each against the same forwarders without it, in the same run, in
# the namespaces of tests/bats/fwd_net.bash (issue 22's benchmarks):
#
#   TCP throughput (iperf3 -P1, -P4) with --tcp-state on against off, in
#   user space and with --fast-path (bindings from the fake control plane),
#   measured on, off, off, on, FWD_BENCH_CYCLES times (1), after a run not
#   counted, each the median of its runs;
#   64-byte UDP pps of one established flow with --tcp-state on against
#   off (UDP is never tracked: the cost of the check alone);
#   the same with --fast-path;
#   64-byte UDP pps over SR-MPLS against SRv6 (static bindings; the egress
#   is a cats-fwd with --label, as this kernel may have no MPLS routing);
#   bindings freed per second at connection end: N connections closed at
#   once, then the time until both forwarders freed all N (time-wait 1 s).
#
# Rows: "name | value | baseline | ratio"; timings are never asserted; a
# measurement that failed is an "error: ..." cell and the ratio "error".
# FWD_BENCH_SECONDS (3) sets each measurement's length; FWD_BENCH_ROWS
# (default "user fast freed mpls") the rows measured: user (tracking on
# against off in user space), fast (the same with --fast-path), freed
# (bindings freed per second), mpls (SR-MPLS against SRv6); the rows of
# the others are left out.  Needs root.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
. "$(dirname "$0")/lib/bench.sh"
bench_fwd_net fwd_features x$$ iperf3 trafgen nft socat
NCONN=${FWD_BENCH_CONNS:-400}
trap 'fwd_down; rm -rf "${FWD_DIR:-/nonexistent}"' EXIT
fwd_up >/dev/null 2>&1 || { echo "fwd_features: namespaces: failed" >&2; exit 1; }
xs iperf3 -s -D -B 198.51.100.11 >/dev/null 2>&1
xs nft -f - <<EOF
table inet bench {
	counter udp9 { }
	chain in { type filter hook input priority 0; udp dport 9 counter name udp9 drop; }
}
EOF

fwds_down() {
	stop ingress
	stop egress
	stop cps
	stop bindsrv
	rm -f "$FWD_DIR/select.sock" "$FWD_DIR/bind.sock" "$FWD_DIR/cps.log"
}

# The forwarders with the fake control plane; extra options for both.
fwds_cps() {
	CPS_NOLOG=1 start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1 >/dev/null
	start_egress "$@" >/dev/null
	start_ingress --pending-flows 65536 --pending-client 65535 "$@" >/dev/null
}

# The forwarders with one static binding of UDP port 9 from the client
# (any port) over ENCAP (srv6 or srmpls): fwds_static ENCAP.
fwds_static() {
	local path='"sids":["2001:db8:2::100"]' rev='"sids":["2001:db8:1::1"]'
	[ "$1" = srmpls ] && path='"labels":[16002]' rev='"owner":"IF-1"'
	{ printf '%s\n' "{\"type\":\"binding\",\"id\":1,\"version\":1,\"epoch\":1,\"op\":\"install\",\"ts\":1,\"ingress\":\"IF-1\",\"egress\":\"EF-2\",\"fwd\":{\"match\":{\"proto\":17,\"src\":\"192.0.2.10\",\"dst\":\"203.0.113.100\",\"dport\":9},\"locator\":\"198.51.100.11\",\"encap\":\"$1\",$path,\"egress\":\"EF-2\"},\"rev\":{\"match\":{\"proto\":17,\"src\":\"198.51.100.11\",\"sport\":9,\"dst\":\"192.0.2.10\"},\"restore_src\":\"203.0.113.100\",\"restore_port\":9,$rev}}"
	  echo '{"type":"status","fwd":"cats-bind","event":"hello","ts":1,"epoch":1}'; } |
		cats-cbor encode >"$FWD_DIR/bindings.cbor"
	bg bindsrv "$NI" socat "UNIX-LISTEN:$FWD_DIR/bind.sock,fork" \
		"SYSTEM:cat $FWD_DIR/bindings.cbor; sleep 3600"
	wait_for 50 test -S "$FWD_DIR/bind.sock"
	start_egress --label 16002 --return IF-1=mpls:16001 >/dev/null
	start_ingress --label 16001 >/dev/null
}

# 64-byte UDP frames of one 5-tuple from trafgen, counted at the server.
udp_pps() {
	cat >"$FWD_DIR/tg.cfg" <<EOF
{
  eth(da=$(mac_of "$NI" i0), sa=$(mac_of "$NC" c0), type=0x0800),
  ipv4(saddr=192.0.2.10, daddr=203.0.113.100, ttl=64),
  udp(sp=4242, dp=9),
  fill(0x41, 18)
}
EOF
	# One packet first: the binding is made (fake control plane) and
	# offered to the fast path before the count starts.
	xc sh -c 'echo x | socat -u - UDP4:203.0.113.100:9,sourceport=4242' 2>/dev/null
	sleep 0.5
	xs nft reset counter inet bench udp9 >/dev/null
	xc timeout "$DUR" trafgen --dev c0 --conf "$FWD_DIR/tg.cfg" --cpus 2 -q \
		>/dev/null 2>&1
	sleep 0.3
	local n
	n=$(xs nft -j list counter inet bench udp9 | jq '.nftables[1].counter.packets')
	if [ "${n:-0}" -gt 0 ] 2>/dev/null; then
		echo $((n / DUR))
	else
		echo "error: no packet reached the server"
	fi
}

# N TCP connections to a listener behind the forwarders, all closed at
# once; the bindings both forwarders freed per second from the last close
# until all N are gone (time-wait 1 s and the expiry scan included).
freed_per_s() {
	bg listen "$NS" socat TCP4-LISTEN:7400,bind=198.51.100.11,fork,reuseaddr SYSTEM:true
	sleep 0.3
	local i0 e0 t0 t1
	i0=$(counter ingress tcp_ended_time_wait) e0=$(counter egress tcp_ended_time_wait)
	xc /usr/bin/python3 -c 'import socket, sys
n = int(sys.argv[1])
socks = [socket.create_connection(("203.0.113.100", 7400), 5) for _ in range(n)]
for s in socks:
    s.recv(16)
    s.close()' "$NCONN" || { echo "error: the connections failed"; stop listen; return; }
	t0=$(date +%s.%N)
	done_() {
		[ "$(counter ingress tcp_ended_time_wait)" -ge $((i0 + NCONN)) ] &&
		[ "$(counter egress tcp_ended_time_wait)" -ge $((e0 + NCONN)) ]
	}
	if wait_for 200 done_; then
		t1=$(date +%s.%N)
		awk -v n="$NCONN" -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", n / (b - a) }'
	else
		echo "error: not every binding was freed within 20 s"
	fi
	stop listen
}

ROWS=${FWD_BENCH_ROWS:-user fast freed mpls}
# want WORD: is WORD one of the selected rows?
want() { case " $ROWS " in *" $1 "*) return 0 ;; esac; return 1; }
declare -A R
# Every cell starts as "skip" (not selected): its row is left out.
for k in tcp1on tcp4on udpon tcp1off tcp4off udpoff ftcp1on ftcp4on fudpon \
    ftcp1off ftcp4off fudpoff freed srv6 mpls; do R[$k]=skip; done
# Tracking on, off, off, on (ABBA), FWD_BENCH_CYCLES times (1), with the
# forwarders' extra options, into R[PREFIX{tcp1,tcp4,udp}{on,off}], each
# the median of its runs: neither state gains from going first (on the
# shared machine the first of an on/off pair measured higher in 13 of 18
# rows, whichever it was), and one slow run does not decide (the same
# code, UDP's, read 0.87-1.07 on/off in single cycles).
CYCLES=${FWD_BENCH_CYCLES:-1}
case $CYCLES in ''|*[!0-9]*|0) echo "fwd_features: FWD_BENCH_CYCLES: not a count: $CYCLES" >&2; exit 2 ;; esac
abba() {
	local p=$1 s m c
	shift
	local -A v=()
	# A first run, not counted: the first iperf3 and trafgen through
	# new namespaces measured low.
	fwds_cps "$@" --tcp-state on
	tcp_gbps 1 >/dev/null
	udp_pps >/dev/null
	fwds_down
	for ((c = 0; c < CYCLES; c++)); do
		for s in on off off on; do
			fwds_cps "$@" --tcp-state $s
			v[tcp1$s]+="$(tcp_gbps 1)"$'\n'
			v[tcp4$s]+="$(tcp_gbps 4)"$'\n'
			v[udp$s]+="$(udp_pps)"$'\n'
			fwds_down
		done
	done
	for s in on off; do
		for m in tcp1 tcp4 udp; do
			R[$p$m$s]=$(median "${v[$m$s]}")
		done
	done
}
want user && abba ""
want fast && abba f --fast-path
if want freed; then
	fwds_cps --tcp-timeout time-wait=1s
	R[freed]=$(freed_per_s)
	fwds_down
fi
if want mpls; then
	fwds_static srv6
	R[srv6]=$(udp_pps)
	fwds_down
	fwds_static srmpls
	R[mpls]=$(udp_pps)
	fwds_down
fi

row() {
	local name=$1 v=$2 b=$3 ratio
	[ "$v" = skip ] || [ "$b" = skip ] && return 0
	v=${v//|//} b=${b//|//}
	case "$v$b" in
	*error:*) ratio=error ;;
	*-) ratio=- ;;
	*) ratio=$(awk -v a="$v" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }') ;;
	esac
	printf '%s | %s | %s | %s\n' "$name" "$v" "$b" "$ratio"
}
row "fwd tcp -P1 Gbit/s, --tcp-state on vs off (goal >= 0.95)" "${R[tcp1on]}" "${R[tcp1off]}"
row "fwd tcp -P4 Gbit/s, --tcp-state on vs off (goal >= 0.95)" "${R[tcp4on]}" "${R[tcp4off]}"
row "fwd udp64 pps established, --tcp-state on vs off (goal >= 0.95)" "${R[udpon]}" "${R[udpoff]}"
row "fwd --fast-path tcp -P1 Gbit/s, --tcp-state on vs off (goal >= 0.95)" "${R[ftcp1on]}" "${R[ftcp1off]}"
row "fwd --fast-path tcp -P4 Gbit/s, --tcp-state on vs off (goal >= 0.95)" "${R[ftcp4on]}" "${R[ftcp4off]}"
row "fwd --fast-path udp64 pps established, --tcp-state on vs off (goal >= 0.95)" "${R[fudpon]}" "${R[fudpoff]}"
row "fwd udp64 pps established, SR-MPLS vs SRv6 (cats-fwd egress pops)" "${R[mpls]}" "${R[srv6]}"
row "fwd bindings freed/s at connection end ($NCONN, time-wait 1 s, both forwarders)" "${R[freed]}" -
