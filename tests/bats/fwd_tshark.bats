#!/usr/bin/env bats
# tshark decodes captures of every encapsulation cats-fwd writes (SRv6 with
# one and with three segments, IPv4-in-IPv4, IPv4-in-IPv6) with no
# malformed packets and with correct IPv4, TCP and UDP checksums, written
# by user space and, with --fast-path, by the kernel programs.  Captures
# are taken on the receiving side of each veth (cats-fwd sends with
# PACKET_QDISC_BYPASS, which taps on the sender do not see).

load helper
load fwd_net

setup() {
	need_root
	command -v tshark >/dev/null || skip "no tshark"
	fwd_setup t
}

teardown() {
	fwd_teardown
}

cap_start() {
	local i=0
	for x in "$NI i1" "$NE e1" "$NC c0" "$NS s0"; do
		set -- $x
		bg "cap$i" "$1" tcpdump --immediate-mode -Q in -U -n -s 0 -i "$2" -w "$FWD_DIR/cap$i.pcap" ip or ip6
		i=$((i + 1))
	done
	# Capturing once each says so.
	for i in 0 1 2 3; do cap_listening "$i"; done
}
cap_listening() {
	wait_for 50 grep -q "listening on" "$FWD_DIR/cap$1.err"
}

# The last packets may still be on their way from the kernel to tcpdump
# (no event says it has read them all: its own counts on Linux's
# TPACKET_V3 do not add up): a short drain before the stop.
cap_stop() {
	sleep 0.5
	for i in 0 1 2 3; do stop "cap$i"; done
}

# tshark with the checksums checked.
tsh() {
	tshark -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE \
		-o udp.check_checksum:TRUE "$@"
}

# The frames of all captures that match each display filter given, one
# count a line in the order given: one tshark pass a capture (io,stat, the
# captures in parallel) for every filter at once, where one pass a filter
# and a capture took most of this file's time.  A tshark that fails (a
# filter it refuses) fails the count: it never reads as 0 frames.
tcounts() {
	local f pids=() spec=io,stat,0 rc=0
	for f in "$@"; do spec+=",$f"; done
	for f in "$FWD_DIR"/cap*.pcap; do
		tsh -q -r "$f" -z "$spec" >"$f.stat" 2>"$f.stat.err" &
		pids+=($!)
	done
	for f in "${pids[@]}"; do wait "$f" || rc=1; done
	[ "$rc" -eq 0 ] || { cat "$FWD_DIR"/cap*.pcap.stat.err >&2; return 1; }
	# The one row of interval 0: | start <> end | frames | bytes | ...
	awk -F'|' -v n=$# '/<>/ { for (i = 3; i < NF; i += 2) s[(i - 1) / 2] += $i }
		END { for (k = 1; k <= n; k++) print s[k] + 0 }' "$FWD_DIR"/cap*.pcap.stat
}
tcount() {
	tcounts "$1"
}

# Show the packets matching a filter (for the log of a failed test).
tshow() {
	for f in "$FWD_DIR"/cap*.pcap; do
		tsh -r "$f" -V -Y "$1" 2>/dev/null | head -80
	done
}

# The checks of one capture: expect OP N FILTER says that the frames
# matching FILTER number OP N (an operator of test(1)); check_expected
# counts them all at once and shows the frames of each check that fails.
EXP_OP=() EXP_N=() EXP_F=()
expect() {
	EXP_OP+=("$1") EXP_N+=("$2") EXP_F+=("$3")
}
check_expected() {
	local c i bad=0
	tcounts "${EXP_F[@]}" >"$FWD_DIR/counts" || return 1
	mapfile -t c <"$FWD_DIR/counts"
	[ "${#c[@]}" -eq "${#EXP_F[@]}" ] ||
		{ echo "${#c[@]} counts for ${#EXP_F[@]} filters"; return 1; }
	for i in "${!EXP_F[@]}"; do
		[ "${c[i]}" "${EXP_OP[i]}" "${EXP_N[i]}" ] && continue
		echo "${c[i]} frames, not ${EXP_OP[i]} ${EXP_N[i]}, match ${EXP_F[i]}"
		tshow "${EXP_F[i]}"
		bad=1
	done
	EXP_OP=() EXP_N=() EXP_F=()
	return "$bad"
}

clean_checks() {
	expect -eq 0 '_ws.malformed'
	# Expert info of severity error (PI_ERROR 0x00800000) and above.
	expect -eq 0 '_ws.expert.severity >= 0x00800000'
	expect -eq 0 'ip.checksum.status == "Bad" || tcp.checksum.status == "Bad" || udp.checksum.status == "Bad"'
	expect -gt 5 'tcp.checksum.status == "Good"'
	expect -gt 5 'ip.checksum.status == "Good"'
}

# Each case runs in user space, then with the fast path (whose output the
# checks must see: fast_used).  In the kernel a packet the client's or the
# instance's own stack left CHECKSUM_PARTIAL (veth's checksum offload) stays
# so, as in the kernel's own forwarding, and is completed where it leaves
# the machine: captures on a veth would show its partial sum.  So for the
# fast path the two stacks compute their checksums themselves.
fast_mode() {
	xc ethtool -K c0 tx off >/dev/null
	xs ethtool -K s0 tx off >/dev/null
}

fast_used() {
	[ "$(counter ingress fast_hit)" -gt 10 ]
	[ "$(counter egress fast_hit)" -gt 10 ]
	[ "$(counter ingress fast_fail)" -eq 0 ]
	[ "$(counter egress fast_fail)" -eq 0 ]
}

# A case in both modes: CHECKS names the case's own checks, EARGS and IARGS
# are the egress's and the ingress's arguments.
each_mode() {
	local checks=$1 eargs=$2 iargs=$3 mode
	BIG_SIZE=200000 start_web
	for mode in "" --fast-path; do
		[ -n "$mode" ] && fast_mode
		start_egress $eargs $mode
		start_ingress $iargs $mode
		run_curl
		clean_checks
		$checks
		check_expected
		[ -z "$mode" ] || fast_used
		stop ingress
		stop egress
	done
}

run_curl() {
	cap_start
	xc curl -s --speed-limit 1 --speed-time 30 -o "$FWD_DIR/big" http://203.0.113.100/big
	run xc curl -s -m 5 http://203.0.113.100/
	cap_stop
	cmp "$FWD_DIR/big" "$FWD_DIR/www11/big"
	[ "$output" = "instance 198.51.100.11" ]
}

@test "fwd tshark: SRv6 (outer IPv6 + SRH) both directions, user space and kernel" {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	srv6_checks() {
		expect -gt 5 'ipv6.routing.type == 4 && ipv6.routing.segleft == 0 && ip.dst == 198.51.100.11 && tcp'
		expect -gt 5 'ipv6.routing.type == 4 && ip.src == 198.51.100.11 && tcp'
		# Restored source at the client, locator at the instance.
		expect -gt 5 'ip.src == 203.0.113.100 && tcp.srcport == 80'
	}
	each_mode srv6_checks "" ""
}

@test "fwd tshark: SRv6 with three segments decodes (segment list reversed)" {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:a1::1,2001:db8:a2::1,2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_egress
	start_ingress
	bg cap0 "$NE" tcpdump --immediate-mode -Q in -U -n -s 0 -i e1 -w "$FWD_DIR/cap0.pcap" ip6
	cap_listening 0
	# Only the SYN's encapsulation is looked at: the first segment is no
	# node here, nothing can answer, so curl never connects; it is
	# stopped once the SYN is in the capture.
	xc curl -s -m 10 http://203.0.113.100/ &
	cu=$!
	srh='ipv6.routing.segleft == 2 && ipv6.routing.srh.last_entry == 2 && ipv6.dst == 2001:db8:a1::1 && ipv6.routing.srh.addr == 2001:db8:2::100 && tcp.checksum.status == "Good"'
	srh_syn() {
		[ "$(tcount "$srh")" -ge 1 ]
	}
	wait_for 50 srh_syn
	kill "$cu" 2>/dev/null || true
	wait "$cu" || true	# killed: no answer was expected
	stop cap0
	expect -eq 0 '_ws.malformed'
	expect -ge 1 "$srh"
	check_expected
}

@test "fwd tshark: IPv4-in-IPv4, user space and kernel" {
	xi ip addr add 10.99.1.1/24 dev i1
	xe ip addr add 10.99.1.2/24 dev e1
	start_cps --egress EF-2 --locator 198.51.100.11 --encap ipip \
		--tunnel-dst 10.99.2.100 --rev-tunnel-dst 10.99.1.100
	ipip4_checks() {
		expect -gt 5 'ip.proto == 4 && ip.dst == 10.99.2.100'
		expect -gt 5 'ip.proto == 4 && ip.dst == 10.99.1.100'
	}
	each_mode ipip4_checks "--src4 10.99.2.100 --sid 10.99.2.100" \
		"--sid 10.99.1.100 --src4 10.99.1.100"
}

@test "fwd tshark: IPv4-in-IPv6, user space and kernel" {
	start_cps --egress EF-2 --locator 198.51.100.11 --encap ipip \
		--tunnel-dst 2001:db8:2::100 --rev-tunnel-dst 2001:db8:1::1
	ipip6_checks() {
		expect -gt 5 'ipv6.nxt == 4 && ipv6.dst == 2001:db8:2::100 && tcp'
		expect -gt 5 'ipv6.nxt == 4 && ipv6.dst == 2001:db8:1::1 && tcp'
	}
	each_mode ipip6_checks "" ""
}
