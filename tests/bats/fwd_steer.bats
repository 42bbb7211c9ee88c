#!/usr/bin/env bats
# Site-local steering at the egress (cats-fwd(1) LOCAL STEERING, seed 000
# §10.3): the signed steer records of a co-located C-SMA on --steer move
# the delivery of a failed instance's flows to another instance of the
# site, the client still seeing the address it sent to; an end record moves
# them back; records that are not signed by a trusted C-SMA, or expired,
# are refused with one line, counted, and change nothing.

load helper
load fwd_net

setup() {
	fwd_setup t
	cats-key gen -n SMA-1 -o "$FWD_DIR/sma" >/dev/null
	cats-key gen -n SMA-1 -o "$FWD_DIR/rogue" >/dev/null
}

teardown() {
	fwd_teardown
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# steer KEY JSON: one record, signed with KEY, to the egress's --steer.
steer() {
	echo "$2" | cats-cbor encode | pce-sign -k "$FWD_DIR/$1.key" |
		socat -u - "UNIX-CONNECT:$FWD_DIR/steer.sock"
}

rec() {	# rec OP SEQ UNTIL
	local r='"type":"steer","op":"'$1'","sma_id":"SMA-1","epoch":7,"seq":'$2
	r=$r',"ts":'$(now_ms)',"egress":"EF-2","cs_id":"S1","from":"A","from_locator":"198.51.100.11"'
	if [ "$1" = redirect ]; then
		r=$r',"to":"B","locator":"198.51.100.21","until":'$3',"reason":"unhealthy"'
	else
		r=$r',"reason":"recovered"'
	fi
	echo "{$r}"
}

page() { xc curl -s -m 5 http://203.0.113.100/; }

@test "fwd steer: a redirect record moves delivery to the second instance, an end record moves it back; bad records refused" {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_egress --steer "unix:$FWD_DIR/steer.sock" \
		--steer-keys "$FWD_DIR/sma.pub"
	start_ingress
	start_web
	run page
	[ "$output" = "instance 198.51.100.11" ]

	# Redirected: new flows to A's address are served by B, and the
	# replies carry A's address back (else the ingress drops them).
	steer sma "$(rec redirect 1 $(($(now_ms) + 60000)))"
	wait_counter egress steer_redirects -eq 1
	[ "$(counter egress steer_active)" = 1 ]
	run page
	[ "$output" = "instance 198.51.100.21" ]
	[ "$(counter egress steer_pkts)" -gt 0 ]
	[ "$(counter egress steer_rev_pkts)" -gt 0 ]
	grep -q 'event=steer-redirect sma=SMA-1 epoch=7 seq=1 cs=S1 from=A from_locator=198.51.100.11 to=B locator=198.51.100.21' "$FWD_DIR/egress.err"

	# Bad records: signed by a key the egress does not trust, a replay,
	# and an expired redirect; one line each, counted, nothing changes.
	steer rogue "$(rec end 2)"
	wait_counter egress steer_bad -eq 1
	grep -q 'steer: record 0: not verified' "$FWD_DIR/egress.err"
	steer sma "$(rec end 1)"
	steer sma "$(rec redirect 3 $(($(now_ms) - 1000)))"
	wait_counter egress steer_refused -eq 2
	grep -q 'steer: record 0 (end A seq 1): refused: replayed seq 1 (last 1)' "$FWD_DIR/egress.err"
	grep -q 'steer: record 0 (redirect A seq 3): refused: expired' "$FWD_DIR/egress.err"
	[ "$(counter egress steer_active)" = 1 ]
	run page
	[ "$output" = "instance 198.51.100.21" ]

	# Ended: A's flows are A's again.
	steer sma "$(rec end 4)"
	wait_counter egress steer_ends -eq 1
	[ "$(counter egress steer_active)" = 0 ]
	run page
	[ "$output" = "instance 198.51.100.11" ]
}
