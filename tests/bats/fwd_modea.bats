#!/usr/bin/env bats
# Request carriage: Mode A (the CATS Request option 0x1E in IPv6 Destination
# Options or Hop-by-Hop Options, built by scapy) and Mode B (an envelope at
# a configured UDP payload offset).  Packets are steered by their CS-ID; a
# CS-ID that disagrees with the service address is refused.

load helper
load fwd_net

setup_file() {
	[ "$(id -u)" = 0 ] || return 0
	FWD_ID=a$$
	export FWD_ID
	. "$BATS_TEST_DIRNAME/fwd_net.bash"
	fwd_up
	echo "$FWD_DIR" >"$BATS_FILE_TMPDIR/dir"
	echo "$FWD_ID" >"$BATS_FILE_TMPDIR/id"
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--csid S1=2001:db8:5::11 --csid S2=2001:db8:5::21 \
		--csid S1=198.51.100.11 --csid S2=198.51.100.21 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_egress
	start_ingress --mode-b udp:7100:0
	for i in 11 12 13 14; do
		xc ip -6 addr add "2001:db8:c1::$i/64" dev c0 nodad
	done
	for i in 11 21; do
		bg "sink6_$i" "$NS" socat -u "UDP6-RECV:7000,bind=[2001:db8:5::$i]" \
			"OPEN:$FWD_DIR/got6_$i,creat,append"
		bg "sink4_$i" "$NS" socat -u "UDP4-RECV:7100,bind=198.51.100.$i" \
			"OPEN:$FWD_DIR/got4_$i,creat,append"
	done
	wait_udp xs 7000 2
	wait_udp xs 7100 2
}

teardown_file() {
	[ "$(id -u)" = 0 ] || return 0
	FWD_ID=$(cat "$BATS_FILE_TMPDIR/id" 2>/dev/null)
	FWD_DIR=$(cat "$BATS_FILE_TMPDIR/dir" 2>/dev/null)
	. "$BATS_TEST_DIRNAME/fwd_net.bash"
	fwd_down
	[ -n "$FWD_DIR" ] && rm -rf "$FWD_DIR"
	true
}

setup() {
	need_root
	FWD_ID=$(cat "$BATS_FILE_TMPDIR/id")
	. "$BATS_TEST_DIRNAME/fwd_net.bash"
	FWD_DIR=$(cat "$BATS_FILE_TMPDIR/dir")
	export FWD_DIR
}

pkt() { xc $PY "$TOP/tests/tools/fwd_pkt.py" "$@"; }

@test "fwd Mode A: the CS-ID in Destination Options steers the flow" {
	pkt modea S2 2001:db8:100::200 7000
	pkt modea S1 2001:db8:100::200 7000 2001:db8:c1::11 S1b
	wait_for 100 grep -q "modea S2" "$FWD_DIR/got6_21"
	wait_for 100 grep -q "modea S1b" "$FWD_DIR/got6_11"
	! grep -q "modea S2" "$FWD_DIR/got6_11" || false
	# The request carried the CS-ID, the constraint and the mode.
	grep '"type":"request"' "$FWD_DIR/cps.log" | grep '"cs_id":"S2"' |
		jq -e '.mode == "a" and .constraints.max_delay_us == 15000 and .flow.dst == "2001:db8:100::200"'
}

@test "fwd Mode A: the option in Hop-by-Hop Options works too" {
	pkt modea-hbh S2 2001:db8:100::200 7000 2001:db8:c1::12 HBH
	wait_for 100 grep -q "modea HBH" "$FWD_DIR/got6_21"
	[ "$(grep -c '"mode":"a"' "$FWD_DIR/cps.log")" -ge 2 ]
}

@test "fwd Mode A: a CS-ID that disagrees with the service address is refused" {
	n0=$(grep -c '"type":"request"' "$FWD_DIR/cps.log" || true)
	before=$(counter ingress drop_csid_mismatch)
	pkt modea S2 2001:db8:100::100 7000 2001:db8:c1::10 MISMATCH
	# Seen and dropped (the proof it was handled), then nothing else.
	wait_counter ingress drop_csid_mismatch -ge $((before + 1))
	[ "$(counter ingress drop_csid_mismatch)" -eq $((before + 1)) ]
	[ "$(grep -c '"type":"request"' "$FWD_DIR/cps.log")" -eq "$n0" ]
	! grep -q MISMATCH "$FWD_DIR/got6_11" "$FWD_DIR/got6_21" || false
	grep -q "event=csid-mismatch" "$FWD_DIR/ingress.err"
	# The same CS-ID as the address's service is accepted.
	pkt modea S1 2001:db8:100::100 7000 2001:db8:c1::14 AGREE
	wait_for 100 grep -q "modea AGREE" "$FWD_DIR/got6_11"
}

@test "fwd Mode A: an unknown CS-ID ends in an error that releases the packets" {
	before=$(counter ingress drop_pending_error)
	pkt modea S9 2001:db8:100::200 7000 2001:db8:c1::13 UNKNOWN
	wait_counter ingress drop_pending_error -ge $((before + 1))
	[ "$(counter ingress drop_pending_error)" -eq $((before + 1)) ]
	[ "$(counter ingress pending)" -eq 0 ]
}

@test "fwd Mode A: a malformed CATS option is dropped and counted" {
	before=$(counter ingress drop_bad_option)
	pkt modea-bad 2001:db8:100::200 7000
	wait_counter ingress drop_bad_option -ge $((before + 1))
	[ "$(counter ingress drop_bad_option)" -eq $((before + 1)) ]
}

@test "fwd Mode B: the envelope at the configured UDP offset steers the flow" {
	pkt modeb S2 203.0.113.200 7100
	wait_for 100 grep -q "modeb S2" "$FWD_DIR/got4_21"
	grep '"type":"request"' "$FWD_DIR/cps.log" | grep '"mode":"b"' |
		jq -e '.cs_id == "S2"'
	# Another port is not searched for an envelope: the datagram is a new
	# flow like any other, its request (the proof the forwarder saw it)
	# has no CS-ID and mode none, and no Mode B request is added.
	n0=$(grep -c '"mode":"b"' "$FWD_DIR/cps.log" || true)
	pkt modeb S2 203.0.113.200 7101
	wait_for 100 grep -q '"type":"request".*"dport":7101' "$FWD_DIR/cps.log"
	grep '"type":"request"' "$FWD_DIR/cps.log" | grep '"dport":7101' |
		jq -e '.mode == "none" and (has("cs_id") | not)'
	[ "$(grep -c '"mode":"b"' "$FWD_DIR/cps.log")" -eq "$n0" ]
}
