#!/usr/bin/env bats
# The fast path's batching keeps what the forwarders promise: a burst of one
# flow arrives complete and in order through batched receive and transmit
# rings (also with bounded polling); a burst of new flows gets one request
# each and is delivered although requests and statuses are written in
# batches; TCP through a jumbo core (segments cut into transmit frames,
# super-packets through the copy queue, GSO frames through the transmit
# ring) arrives intact both ways.

load helper
load fwd_net

setup() {
	FWD_RING=4096
	fwd_setup k
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
}

teardown() {
	fwd_teardown
}

@test "fwd batch: a burst of one flow arrives complete and in order" {
	start_egress
	start_ingress --poll-us 100
	# The burst takes the established path.
	run burst_one_flow 3000
	[ "$output" = "3001 1" ]
	[ "$(counter ingress rx_ring_drops)" -eq 0 ]
	[ "$(counter egress rx_ring_drops)" -eq 0 ]
}

@test "fwd batch: a burst of new flows gets one request each and is delivered" {
	start_egress
	start_ingress --pending-client 2000
	xs $PY "$TOP/tests/tools/fwd_pkt.py" flows-recv 198.51.100.11 9400 1000 20 \
		>"$FWD_DIR/flows.out" &
	rcv=$!
	wait_udp xs 9400
	xc $PY "$TOP/tests/tools/fwd_pkt.py" flows 203.0.113.100 9400 1000 20000
	wait $rcv
	cat "$FWD_DIR/flows.out"
	[ "$(cat "$FWD_DIR/flows.out")" -eq 1000 ]
	[ "$(grep -c '"type":"request".*"dport":9400' "$FWD_DIR/cps.log")" -eq 1000 ]
	[ "$(counter ingress requests)" -eq 1000 ]
	[ "$(counter ingress released)" -eq 1000 ]
	# Every binding reported installed by both forwarders: wait while the
	# reports keep coming.
	installed() { [ "$(grep -c '"fwd":"IF-1","event":"installed"' "$FWD_DIR/cps.log")" -eq 1000 ]; }
	wait_progress 100 "grep -c '\"event\":\"installed\"' '$FWD_DIR/cps.log'" installed
	[ "$(grep -c '"fwd":"EF-2","event":"installed"' "$FWD_DIR/cps.log")" -eq 1000 ]
}

@test "fwd batch: TCP both ways through a jumbo core arrives intact" {
	xi ip link set i1 mtu 9000
	xe ip link set e1 mtu 9000
	start_egress --jumbo-core
	start_ingress --jumbo-core
	BIG_SIZE=4000000 start_web
	head -c 4000000 /dev/urandom >"$FWD_DIR/up"
	bg sink "$NS" socat -u TCP-LISTEN:9500,bind=198.51.100.11,reuseaddr \
		CREATE:"$FWD_DIR/got"
	wait_for 50 xs sh -c "ss -ltnH 'sport = :9500' | grep -q 9500"
	# Upload: client super-packets come through the ingress's copy queue,
	# are cut to the core MTU in transmit frames, and leave the egress as
	# GSO frames.
	# socat gives up only when nothing moved for 30 s (-T), and the wait for
	# the sink goes on while bytes keep arriving: under load this is slower,
	# not a failure.
	xc socat -T 30 -u FILE:"$FWD_DIR/up" TCP:203.0.113.100:9500,connect-timeout=30
	wait_progress 100 "stat -c %s '$FWD_DIR/got'" \
		sh -c "[ \"\$(stat -c %s '$FWD_DIR/got')\" = 4000000 ]"
	cmp "$FWD_DIR/up" "$FWD_DIR/got"
	[ "$(counter ingress rx_copies)" -gt 0 ]
	[ "$(counter ingress tso_segments)" -gt 0 ]
	[ "$(counter egress gso_sends)" -gt 0 ]
	# Download: the other way round.
	xc curl -s --speed-limit 1 --speed-time 30 -o "$FWD_DIR/dl" http://203.0.113.100/big
	cmp "$FWD_DIR/dl" "$FWD_DIR/www11/big"
	[ "$(counter egress tso_segments)" -gt 0 ]
	[ "$(counter ingress gso_sends)" -gt 0 ]
	[ "$(counter ingress drop_gso)" = 0 ]
	[ "$(counter egress drop_gso)" = 0 ]
}
