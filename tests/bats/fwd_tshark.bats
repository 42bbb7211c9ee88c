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

# Count packets of all captures matching a display filter.
tcount() {
	local n=0 c
	for f in "$FWD_DIR"/cap*.pcap; do
		c=$(tshark -r "$f" -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE \
			-o udp.check_checksum:TRUE -Y "$1" 2>/dev/null | wc -l)
		n=$((n + c))
	done
	echo "$n"
}

# Show the packets matching a filter (for the log of a failed test).
tshow() {
	for f in "$FWD_DIR"/cap*.pcap; do
		tshark -r "$f" -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE \
			-o udp.check_checksum:TRUE -V -Y "$1" 2>/dev/null | head -80
	done
}

check_clean() {
	[ "$(tcount '_ws.malformed')" -eq 0 ] || { tshow '_ws.malformed'; false; }
	# Expert info of severity error (PI_ERROR 0x00800000) and above.
	[ "$(tcount '_ws.expert.severity >= 0x00800000')" -eq 0 ] ||
		{ tshow '_ws.expert.severity >= 0x00800000'; false; }
	[ "$(tcount 'ip.checksum.status == "Bad" || tcp.checksum.status == "Bad" || udp.checksum.status == "Bad"')" -eq 0 ] ||
		{ tshow 'ip.checksum.status == "Bad" || tcp.checksum.status == "Bad" || udp.checksum.status == "Bad"'; false; }
	[ "$(tcount 'tcp.checksum.status == "Good"')" -gt 5 ]
	[ "$(tcount 'ip.checksum.status == "Good"')" -gt 5 ]
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
		check_clean
		$checks
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
		[ "$(tcount 'ipv6.routing.type == 4 && ipv6.routing.segleft == 0 && ip.dst == 198.51.100.11 && tcp')" -gt 5 ]
		[ "$(tcount 'ipv6.routing.type == 4 && ip.src == 198.51.100.11 && tcp')" -gt 5 ]
		# Restored source at the client, locator at the instance.
		[ "$(tcount 'ip.src == 203.0.113.100 && tcp.srcport == 80')" -gt 5 ]
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
	srh_syn() {
		[ "$(tcount 'ipv6.routing.segleft == 2 && ipv6.routing.srh.last_entry == 2 && ipv6.dst == 2001:db8:a1::1 && ipv6.routing.srh.addr == 2001:db8:2::100 && tcp.checksum.status == "Good"')" -ge 1 ]
	}
	wait_for 50 srh_syn
	kill "$cu" 2>/dev/null || true
	wait "$cu" || true	# killed: no answer was expected
	stop cap0
	[ "$(tcount '_ws.malformed')" -eq 0 ]
	srh_syn
}

@test "fwd tshark: IPv4-in-IPv4, user space and kernel" {
	xi ip addr add 10.99.1.1/24 dev i1
	xe ip addr add 10.99.1.2/24 dev e1
	start_cps --egress EF-2 --locator 198.51.100.11 --encap ipip \
		--tunnel-dst 10.99.2.100 --rev-tunnel-dst 10.99.1.100
	ipip4_checks() {
		[ "$(tcount 'ip.proto == 4 && ip.dst == 10.99.2.100')" -gt 5 ]
		[ "$(tcount 'ip.proto == 4 && ip.dst == 10.99.1.100')" -gt 5 ]
	}
	each_mode ipip4_checks "--src4 10.99.2.100 --sid 10.99.2.100" \
		"--sid 10.99.1.100 --src4 10.99.1.100"
}

@test "fwd tshark: IPv4-in-IPv6, user space and kernel" {
	start_cps --egress EF-2 --locator 198.51.100.11 --encap ipip \
		--tunnel-dst 2001:db8:2::100 --rev-tunnel-dst 2001:db8:1::1
	ipip6_checks() {
		[ "$(tcount 'ipv6.nxt == 4 && ipv6.dst == 2001:db8:2::100 && tcp')" -gt 5 ]
		[ "$(tcount 'ipv6.nxt == 4 && ipv6.dst == 2001:db8:1::1 && tcp')" -gt 5 ]
	}
	each_mode ipip6_checks "" ""
}
