#!/usr/bin/env bats
# A flood of distinct new flows stays within the pending limits (global and
# per client) while an established flow keeps flowing.

load helper
load fwd_net

setup() {
	fwd_setup f
	# Requests for port 9999 are never answered: their flows stay pending.
	start_cps --egress EF-2 --locator 198.51.100.11 --ignore-port 9999 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_egress
	BIG_SIZE=1500000 start_web
}

teardown() {
	fwd_teardown
}

flood_during_download() {
	xc curl -s --speed-limit 1 --speed-time 30 --limit-rate 400k -o "$FWD_DIR/dl" http://203.0.113.100/big &
	dl=$!
	# The download under way (its first bytes in) before the flood.
	wait_for 100 test -s "$FWD_DIR/dl"
	xc $PY "$TOP/tests/tools/fwd_pkt.py" flood 203.0.113.200 9999 3000
	[ "$(counter ingress pending)" -le "$1" ]
	wait $dl
	cmp "$FWD_DIR/dl" "$FWD_DIR/www11/big"
}

@test "fwd flood: ICMP errors from the core are counted, not reported, with --no-path-down" {
	start_ingress --no-path-down
	xc $PY "$TOP/tests/tools/fwd_pkt.py" udp 203.0.113.100 7400 hello 42300
	wait_for 50 grep -q '"fwd":"IF-1","event":"installed"' "$FWD_DIR/cps.log"
	xe $PY "$TOP/tests/tools/fwd_pkt.py" icmp6-unreach e1 "$(mac_of "$NI" i1)" 42300 7400
	wait_counter ingress path_errors -ge 1
	[ "$(counter ingress path_errors)" -eq 1 ]
	[ "$(counter ingress path_down_sent)" -eq 0 ]
	! grep -q '"event":"path-down"' "$FWD_DIR/cps.log" || false
}

@test "fwd flood: the global pending limit holds, the established download completes" {
	start_ingress --pending-flows 64 --pending-client 1000 --pending-timeout 60s --ring-frames 512
	flood_during_download 64
	[ "$(counter ingress pending)" -eq 64 ]
	[ "$(counter ingress pending_held)" -ge 64 ]
	[ "$(counter ingress drop_pending_flows_full)" -ge 1500 ]
	# One request per pending flow, none for the refused ones.
	[ "$(grep -c '"dport":9999' "$FWD_DIR/cps.log")" -le 64 ]
}

@test "fwd flood: the per-client limit holds before the global one" {
	start_ingress --pending-flows 4096 --pending-client 20 --pending-timeout 60s --ring-frames 512
	flood_during_download 20
	[ "$(counter ingress drop_pending_client_full)" -ge 1500 ]
	# Another client still gets through.
	xc ip addr add 192.0.2.11/24 dev c0
	run xc curl -s -m 5 --interface 192.0.2.11 http://203.0.113.100/
	[ "$output" = "instance 198.51.100.11" ]
}

@test "fwd flood: packets per flow are bounded; later packets join one pending record" {
	start_ingress --pending-flow 3 --pending-timeout 60s
	for i in 1 2 3 4 5 6; do
		xc $PY "$TOP/tests/tools/fwd_pkt.py" udp 203.0.113.200 9999 "p$i" 40123
	done
	wait_counter ingress drop_pending_flow_full -ge 3
	[ "$(counter ingress pending)" -eq 1 ]
	[ "$(counter ingress pending_held)" -eq 3 ]
	[ "$(counter ingress drop_pending_flow_full)" -eq 3 ]
	[ "$(grep -c '"sport":40123' "$FWD_DIR/cps.log")" -eq 1 ]
}
