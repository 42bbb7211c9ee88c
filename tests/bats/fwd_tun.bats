#!/usr/bin/env bats
# cats-fwd on a TUN device: the ingress namespace's kernel routes the
# service prefix and the ingress SID into the TUN device; cats-fwd writes
# the encapsulated packets and the restored replies back into it.

load helper
load fwd_net

setup() {
	[ -c /dev/net/tun ] || skip "no /dev/net/tun"
	fwd_setup u
}

teardown() {
	fwd_teardown
}

@test "fwd tun: curl through a TUN ingress and an AF_PACKET egress" {
	start_cps --egress EF-2 --locator 198.51.100.21 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_egress
	xi sysctl -qw net.ipv4.ip_forward=1
	xi sysctl -qw net.ipv6.conf.all.forwarding=1
	bg ingress "$NI" cats-fwd --id IF-1 -v --client tun:cfwd0 --core tun:cfwd0 \
		--src6 2001:db8:1::1 --sid 2001:db8:1::1 --src4 192.0.2.1 \
		--service S1=203.0.113.100 \
		--select "unix:$FWD_DIR/select.sock" --bind "unix:$FWD_DIR/bind.sock" \
		--key "$FWD_DIR/psk" --stats "file:$FWD_DIR/ingress.stats"
	wait_for 50 grep -q "forwarding" "$FWD_DIR/ingress.err"
	xi ip route add 203.0.113.0/24 dev cfwd0
	xi ip -6 route add 2001:db8:1::1/128 dev cfwd0
	xi ip -6 route add 2001:db8:2::/64 via 2001:db8:cc::2 dev i1
	BIG_SIZE=400000 start_web
	run xc curl -s -m 5 http://203.0.113.100/
	[ "$status" -eq 0 ]
	[ "$output" = "instance 198.51.100.21" ]
	xc curl -s --speed-limit 1 --speed-time 30 -o "$FWD_DIR/big" http://203.0.113.100/big
	cmp "$FWD_DIR/big" "$FWD_DIR/www21/big"
	[ "$(counter ingress fwd_pkts)" -gt 10 ]
	[ "$(counter ingress rev_pkts)" -gt 10 ]
}
