#!/usr/bin/env bats
# cats-fwd --fast-path: established flows forwarded by the kernel (the tc
# BPF program, lib/fwd/bpf/fwd_fast.c) in the test's namespaces.
# The rewrite itself is checked byte for byte in tests/unit/test_fwd_fast.c;
# here: real flows, ordering across the move to the kernel, counters and
# idle expiry from the kernel's counts, the unbound reverse packet, and the
# programs leaving with the forwarder.

load helper
load fwd_net

setup() {
	# Rings that hold a burst until the flow moves to the kernel (as
	# fwd_batch.bats).
	FWD_RING=4096
	fwd_setup f
}

teardown() {
	fwd_teardown
}

@test "fwd fast: a burst of one flow arrives complete; the kernel carried it" {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_egress --fast-path
	start_ingress --fast-path
	tx0=$(tx_packets "$NI" i1)
	# Back to back: the flow moves to the kernel in the middle of it.
	# Complete (the order of the few packets around the move is not
	# promised: cats-fwd(1) FAST PATH).
	run burst_one_flow 3000
	echo "$output"
	[ "${output%% *}" = 3001 ]
	# The kernel's packets went to the core veth's peer at once
	# (bpf_redirect_peer): the veth's own transmit counted only user
	# space's.
	[ $(($(tx_packets "$NI" i1) - tx0)) -lt 2000 ]
	[ "$(counter ingress rx_ring_drops)" -eq 0 ]
	# Most of the burst never reached user space.
	[ "$(counter ingress fast_hit)" -gt 1000 ]
	[ "$(counter ingress fast_keys)" -ge 1 ]
	[ "$(counter ingress fast_fail)" -eq 0 ]
	[ "$(counter egress fast_hit)" -gt 1000 ]
	[ "$(counter ingress rx_pkts)" -lt 2000 ]
	# The binding's own counters include the kernel's packets: a dump
	# (SIGUSR2) reads them from the kernel's map, asked again until they
	# are all there.
	wait_for 50 binding_pkts_ge 3001
	cat "$FWD_DIR/st"
}

# The packets interface $2 of namespace $1 transmitted.
tx_packets() {
	ip netns exec "$1" ip -j -s link show "$2" | jq '.[0].stats64.tx.packets'
}

# A fresh dump of the ingress's bindings (SIGUSR2) says its one binding
# counted at least $1 packets; the dump's line in $FWD_DIR/st.
binding_pkts_ge() {
	local err=$FWD_DIR/ingress.err n0
	n0=$(grep -c '"reason":"counters"' "$err" || true)
	kill -USR2 "$(cat "$FWD_DIR/ingress.pid")" || return 1
	wait_for 50 sh -c "[ \$(grep -c '\"reason\":\"counters\"' '$err') -gt $n0 ]" ||
		return 1
	grep '"reason":"counters"' "$err" | tail -1 >"$FWD_DIR/st"
	[ "$(jq -r '.pkts // .counters.pkts // 0' "$FWD_DIR/st")" -ge "$1" ]
}

@test "fwd fast: curl and a download through the kernel; TCP SYNs still clamped in user space" {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_egress --fast-path
	start_ingress --fast-path
	BIG_SIZE=3000000 start_web
	run xc curl -s -m 5 http://203.0.113.100/
	[ "$output" = "instance 198.51.100.11" ]
	xc curl -s --speed-limit 1 --speed-time 30 -o "$FWD_DIR/big" http://203.0.113.100/big
	cmp "$FWD_DIR/big" "$FWD_DIR/www11/big"
	[ "$(counter ingress mss_clamped)" -ge 2 ]
	[ "$(counter ingress fast_hit)" -gt 100 ]
	[ "$(counter egress fast_hit)" -gt 100 ]
	[ "$(counter ingress fast_fail)" -eq 0 ]
	[ "$(counter egress fast_fail)" -eq 0 ]
}

@test "fwd fast: a binding the kernel keeps busy does not expire; idle, it does" {
	start_cps --egress EF-2 --locator 198.51.100.11 --idle-ms 1500 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_egress --fast-path
	start_ingress --fast-path
	bg sink "$NS" socat -u UDP4-RECV:7300,bind=198.51.100.11 \
		"OPEN:$FWD_DIR/got,creat,append"
	wait_udp xs 7300
	# One datagram every 100 ms for 3.5 s, twice the idle time, one flow.
	for i in $(seq 35); do
		xc $PY "$TOP/tests/tools/fwd_pkt.py" udp 203.0.113.100 7300 "d$i" 42100
		sleep 0.1
	done
	# Delivered through the kernel (the forwarder is alive and counting),
	# and the binding is still there.
	wait_for 50 sh -c "[ \$(grep -o 'd[0-9]*' '$FWD_DIR/got' | sort -u | wc -l) -eq 35 ]"
	[ "$(counter ingress fast_pkts)" -ge 20 ]
	[ "$(counter ingress bindings_expired)" -eq 0 ]
	# Quiet now: expired within idle time plus a round of the table.
	wait_for 40 sh -c "[ \"\$(jq -r .counters.bindings_expired \
		\"$FWD_DIR/ingress.stats\" 2>/dev/null | tail -1)\" = 1 ] ||
		{ kill -USR1 $(cat "$FWD_DIR/ingress.pid"); false; }"
	[ "$(counter ingress fast_keys)" -eq 0 ]
	grep -q '"event":"expired"' "$FWD_DIR/cps.log"
	# A new datagram of the flow is a new flow: a new request.
	n0=$(grep -c '"type":"request"' "$FWD_DIR/cps.log" || true)
	xc $PY "$TOP/tests/tools/fwd_pkt.py" udp 203.0.113.100 7300 again 42100
	wait_for 100 grep -q again "$FWD_DIR/got"
	[ "$(grep -c '"type":"request"' "$FWD_DIR/cps.log")" -eq $((n0 + 1)) ]
}

@test "fwd fast: a learned peer MAC that changes is followed by the kernel's actions" {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	# The site port learns its peer (no peer=) from the server's frames.
	start_egress --fast-path --site af_packet:e2
	start_ingress --fast-path
	# A frame of the server's to a client without a binding: the egress
	# learns the MAC from it, then drops it (counted: the proof it was
	# seen).
	to_client() {
		local b0
		b0=$(counter egress drop_no_reverse_binding)
		xs $PY -c 'import socket; socket.socket(socket.AF_INET,
			socket.SOCK_DGRAM).sendto(b"x", ("192.0.2.10", 9))'
		wait_counter egress drop_no_reverse_binding -gt "$b0"
	}
	to_client
	run burst_one_flow 3000
	echo "first: $output"
	[ "${output%% *}" = 3001 ]
	[ "$(counter egress fast_hit)" -gt 1000 ]
	# The server's MAC changes; its next frame teaches the egress.
	xs ip link set s0 address 02:ca:75:00:00:01
	to_client
	run burst_one_flow 3000
	echo "after the change: $output"
	[ "${output%% *}" = 3001 ]
	[ "$(counter egress fast_fail)" -eq 0 ]
}

@test "fwd fast: a reverse packet without a binding is dropped, never delivered" {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_egress --fast-path
	start_ingress --fast-path
	before=$(counter egress drop_no_reverse_binding)
	xc timeout 3 socat -u UDP-RECV:5555 CREATE:"$FWD_DIR/got" &
	rcv=$!
	wait_udp xc 5555
	echo stray | xs socat -u - UDP:192.0.2.10:5555,bind=198.51.100.21:80
	# Dropped (the proof each arrived), then: never delivered.
	wait_counter egress drop_no_reverse_binding -gt "$before"
	b2=$(counter ingress drop_no_reverse_binding)
	xe $PY "$TOP/tests/tools/fwd_pkt.py" srv6-stray e1 "$(mac_of "$NI" i1)"
	wait_counter ingress drop_no_reverse_binding -gt "$b2"
	wait $rcv || true	# the receiver's timeout: it got nothing
	[ ! -s "$FWD_DIR/got" ]
}

@test "fwd fast: the tc programs leave with the forwarder; a refused load exits 1" {
	start_cps --egress EF-2 --locator 198.51.100.11
	start_ingress --fast-path
	xi tc filter show dev i0 ingress | grep -q 'fp_tc'
	xi tc filter show dev i1 ingress | grep -q 'fp_tc'
	stop ingress
	! xi tc filter show dev i0 ingress | grep -q 'fp_tc' || false
	! xi tc filter show dev i1 ingress | grep -q 'fp_tc' || false
	# Without the right to load BPF, as an unprivileged user
	# (packet sockets allowed, BPF not), a clear error and exit 1.
	run ip netns exec "$NI" setpriv --reuid=65534 --regid=65534 --clear-groups \
		--inh-caps=+net_raw --ambient-caps=+net_raw \
		"$(command -v cats-fwd)" --id X --client af_packet:i0 \
		--core af_packet:i1 --fast-path
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"cats-fwd: --fast-path: "* ]]
}
