#!/usr/bin/env bats
# SRv6 interoperability with the Linux kernel, code nobody here wrote:
# cats-fwd ingress -> kernel egress (seg6local End.DX4), and kernel seg6
# encapsulation -> cats-fwd egress.

load helper
load fwd_net

setup() {
	fwd_setup k
}

teardown() {
	fwd_teardown
}

@test "fwd srv6: cats-fwd ingress (user space, then --fast-path) -> kernel End.DX4 egress delivers, kernel seg6 return is restored" {
	xe sysctl -qw net.ipv4.ip_forward=1
	xe sysctl -qw net.ipv6.conf.all.forwarding=1
	xe sysctl -qw net.ipv6.conf.all.seg6_enabled=1
	xe sysctl -qw net.ipv6.conf.e1.seg6_enabled=1
	xe ip -6 route add 2001:db8:2::100/128 encap seg6local action End.DX4 \
		nh4 198.51.100.11 dev e2
	xe ip -6 route add 2001:db8:1::/64 via 2001:db8:cc::1 dev e1
	xe ip route add 192.0.2.0/24 encap seg6 mode encap segs 2001:db8:1::1 dev e1
	start_cps --egress EF-K --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	BIG_SIZE=300000 start_web
	# In user space, then with established flows in cats-fwd's kernel
	# programs (--fast-path).
	for mode in "" --fast-path; do
		start_ingress $mode
		run xc curl -s -m 5 http://203.0.113.100/
		[ "$status" -eq 0 ]
		[ "$output" = "instance 198.51.100.11" ]
		# A larger transfer: MSS clamping keeps the SRv6 packets
		# within the MTU.
		xc curl -s --speed-limit 1 --speed-time 30 -o "$FWD_DIR/big" http://203.0.113.100/big
		cmp "$FWD_DIR/big" "$FWD_DIR/www11/big"
		[ "$(counter ingress mss_clamped)" -ge 1 ]
		if [ -n "$mode" ]; then
			[ "$(counter ingress fast_hit)" -ge 10 ]
			[ "$(counter ingress fast_fail)" -eq 0 ]
		else
			[ "$(counter ingress rev_pkts)" -ge 10 ]
		fi
		stop ingress
	done
}

@test "fwd srv6: kernel seg6 encapsulation -> cats-fwd egress decapsulates and delivers" {
	xi sysctl -qw net.ipv4.ip_forward=1
	xi sysctl -qw net.ipv6.conf.all.forwarding=1
	xi ip -6 route add 2001:db8:2::/64 via 2001:db8:cc::2 dev i1
	xi ip route add 198.51.100.0/24 encap seg6 mode encap segs 2001:db8:2::100 dev i1
	xi ip -6 route add 2001:db8:5::/64 encap seg6 mode encap segs 2001:db8:2::100 dev i1
	start_cps --egress EF-2 --locator 198.51.100.11
	start_egress
	bg sink4 "$NS" socat -u UDP4-RECV:7200,bind=198.51.100.21 "OPEN:$FWD_DIR/got4,creat,append"
	bg sink6 "$NS" socat -u "UDP6-RECV:7200,bind=[2001:db8:5::21]" "OPEN:$FWD_DIR/got6,creat,append"
	wait_udp xs 7200 2
	xc $PY "$TOP/tests/tools/fwd_pkt.py" udp 198.51.100.21 7200 "kernel-seg6-v4"
	xc $PY "$TOP/tests/tools/fwd_pkt.py" udp 2001:db8:5::21 7200 "kernel-seg6-v6"
	wait_for 100 grep -q kernel-seg6-v4 "$FWD_DIR/got4"
	wait_for 100 grep -q kernel-seg6-v6 "$FWD_DIR/got6"
	[ "$(counter egress eg_unbound)" -ge 2 ]
	# An address the egress does not own is not delivered.
	xi ip route add 203.0.113.0/24 encap seg6 mode encap segs 2001:db8:2::100 dev i1
	before=$(counter egress drop_not_owned)
	xc $PY "$TOP/tests/tools/fwd_pkt.py" udp 203.0.113.9 7200 "not-owned"
	wait_counter egress drop_not_owned -ge $((before + 1))
	[ "$(counter egress drop_not_owned)" -eq $((before + 1)) ]
}
