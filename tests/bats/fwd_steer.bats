#!/usr/bin/env bats
# Site-local steering at the egress (cats-fwd(1) LOCAL STEERING, seed 000
# §10.3): the signed steer records of a co-located C-SMA on --steer move
# the delivery of a failed instance's flows to another instance of the
# site, the client still seeing the address it sent to; an end record moves
# them back; records that are not signed by a trusted C-SMA, or expired,
# are refused with one line, counted, and change nothing.  End to end: a
# real cats-sma's records (its [steer] to the egress's --steer) in a
# partition from its C-PS, said again when the egress restarts, and their
# end on the heal.

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

# steer_egress KEY [OPTION...]: the egress EF-2 with OPTION... and its
# --steer on $FWD_DIR/steer.sock, trusting $FWD_DIR/KEY.
steer_egress() {
	local k=$1
	shift
	start_egress "$@" --steer "unix:$FWD_DIR/steer.sock" \
		--steer-keys "$FWD_DIR/$k"
}
# steer_up KEY [OPTION...]: the C-PS binding S1's flows to instance A
# (198.51.100.11) behind EF-2, that egress (steer_egress), the ingress.
steer_up() {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	steer_egress "$@"
	start_ingress
}

page() { xc curl -s -m 5 http://203.0.113.100/; }
# served_by ADDR: the service's page comes from instance ADDR.
served_by() {
	run page
	[ "$output" = "instance $1" ] || { echo "served by: $output" >&2; return 1; }
}

@test "fwd steer: a redirect record moves delivery to the second instance, an end record moves it back; bad records refused" {
	steer_up sma.pub
	start_web
	served_by 198.51.100.11

	# Redirected: new flows to A's address are served by B, and the
	# replies carry A's address back (else the ingress drops them).
	steer sma "$(rec redirect 1 $(($(now_ms) + 60000)))"
	wait_counter egress steer_redirects -eq 1
	[ "$(counter egress steer_active)" = 1 ]
	served_by 198.51.100.21
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
	served_by 198.51.100.21

	# Ended: A's flows are A's again.
	steer sma "$(rec end 4)"
	wait_counter egress steer_ends -eq 1
	[ "$(counter egress steer_active)" = 0 ]
	served_by 198.51.100.11
}

# Datagrams PREFIX I..J of one UDP flow (source port 42100) to the service,
# back to back; and those of PREFIX instance 11 or 21 received.
dgrams() {
	xc $PY -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("", 42100))
for i in range(int(sys.argv[2]), int(sys.argv[3]) + 1):
    s.sendto(("%s%d." % (sys.argv[1], i)).encode(), ("203.0.113.100", 7300))' "$@"
}
got() { grep -o "$1[0-9]*\\." "$FWD_DIR/got$2" 2>/dev/null | sort -u | wc -l; }
got_is() { [ "$(got "$1" "$2")" -eq "$3" ]; }

@test "fwd steer: with --fast-path, a flow the kernel forwards at the egress is steered once the redirect is in force, and goes back to the kernel after its end" {
	steer_up sma.pub --fast-path
	for i in 11 21; do
		bg "sink$i" "$NS" socat -u UDP4-RECV:7300,bind=198.51.100.$i \
			"OPEN:$FWD_DIR/got$i,creat,append"
	done
	wait_udp xs 7300 2
	# The flow bound, then on the egress's fast path (its keys in the
	# kernel's map, packets counted there).
	dgrams d 1 1
	wait_for 50 grep -q '"fwd":"IF-1","event":"installed"' "$FWD_DIR/cps.log"
	dgrams d 2 10
	wait_counter egress fast_keys -ge 1
	dgrams d 11 20
	wait_counter egress fast_pkts -ge 1
	wait_for 50 got_is d 11 20

	# Redirected: the flow's keys leave the map at once, and its next
	# datagrams are steered to the second instance.
	steer sma "$(rec redirect 1 $(($(now_ms) + 60000)))"
	wait_counter egress steer_redirects -eq 1
	[ "$(counter egress fast_keys)" -eq 0 ]
	dgrams e 1 10
	wait_for 50 got_is e 21 10
	[ "$(got e 11)" -eq 0 ]
	[ "$(counter egress steer_pkts)" -ge 10 ]
	[ "$(counter egress fast_keys)" -eq 0 ]

	# Ended: the first instance again, through the kernel again.
	steer sma "$(rec end 2)"
	wait_counter egress steer_ends -eq 1
	dgrams g 1 10
	wait_counter egress fast_keys -ge 1
	dgrams g 11 20
	wait_for 50 got_is g 11 20
	[ "$(got g 21)" -eq 0 ]
}

# A real cats-sma (sma_steer.bats's setup) co-located with EF-2, reporting
# to a cats-select's ingest on loopback; its [steer] to is the egress's
# --steer, its [northbound] key (a PSK) the egress's --steer-keys.
start_select() {
	cats-select --ingest "http://127.0.0.1:$PS/" \
		--ingest-keys "$FWD_DIR/smak.psk" --sma 'SMA-1=*' --id cps-1 \
		</dev/null >/dev/null 2>>"$FWD_DIR/select.err" &
	echo $! >"$FWD_DIR/select.pid"
	wait_for 50 sh -c "curl -s -o /dev/null http://127.0.0.1:$PS/"
}
sadmin() { curl -s --unix-socket "$FWD_DIR/admin.sock" "http://x$1"; }
sma_is() { [ "$(sadmin /stats | jq -r ".counters.$1")" = "$2" ]; }
sma_synced() {
	[ "$(sadmin /stats | jq -r '.counters.sync_state == 0 and
	    .counters.sync_queued == 0')" = true ]
}
report() {	# report CSCI HEALTH GAS LOCATOR
	local seq	# (a file: report runs in a command substitution)
	seq=$(($(cat "$FWD_DIR/seq.$1" 2>/dev/null || echo 0) + 1))
	echo "$seq" >"$FWD_DIR/seq.$1"
	printf '{"type":"sci-report","csci_id":"%s","cs_id":"S1","seq":%d,"ts":%d,"health":"%s","gas":%d,"comp_time_ms":10,"locator":"%s","port":80}\n' \
	    "$1" "$seq" "$(date +%s%3N)" "$2" "$3" "$4" | enc >"$FWD_DIR/r.cbor"
	curl -s -o /dev/null -w '%{http_code}' -X POST \
	    -H 'Content-Type: application/cbor-seq' \
	    --data-binary @"$FWD_DIR/r.cbor" "http://127.0.0.1:$SP/reports"
}

@test "fwd steer: a real cats-sma partitioned from its C-PS steers a failed instance's new flows to the other at the egress; healed, they go back" {
	cats-key psk -n SMA-1 -o "$FWD_DIR/smak.psk" >/dev/null
	PS=$(free_port)
	SP=$(free_port)
	steer_sma_conf SMA-1 EF-2 "$FWD_DIR" "$FWD_DIR/smak.psk" S1 \
	    "unix:$FWD_DIR/steer.sock" >"$FWD_DIR/sma.conf"
	steer_up smak.psk
	start_web
	start_select
	cats-sma -c "$FWD_DIR/sma.conf" -l "http://127.0.0.1:$SP/" \
		-a "unix:$FWD_DIR/admin.sock" -t "http://127.0.0.1:$PS/" \
		</dev/null >/dev/null 2>>"$FWD_DIR/sma.err" &
	echo $! >"$FWD_DIR/sma.pid"
	wait_for 50 curl -sf "http://127.0.0.1:$SP/health"
	[ "$(report a HEALTHY 100 198.51.100.11)" = 200 ]
	[ "$(report b HEALTHY 300 198.51.100.21)" = 200 ]
	wait_for 50 sma_synced
	served_by 198.51.100.11

	# The C-PS gone and a failed: the C-SMA's signed redirect applies.
	kill -9 "$(cat "$FWD_DIR/select.pid")"
	[ "$(report a UNHEALTHY 100 198.51.100.11)" = 200 ]
	wait_for 50 sma_is sync_state 2
	wait_counter egress steer_redirects -eq 1
	grep -q 'event=steer-redirect sma=SMA-1 .* cs=S1 from=a from_locator=198.51.100.11 to=b locator=198.51.100.21' "$FWD_DIR/egress.err"
	served_by 198.51.100.21

	# The egress restarts in the partition: its redirects are gone with
	# it; the C-SMA sees the close, connects again and says the redirect
	# in force again.
	E=$(cat "$FWD_DIR/egress.pid")
	kill "$E"
	wait_for 50 sh -c "! kill -0 $E 2>/dev/null"
	steer_egress smak.psk
	wait_for 80 sma_is steer_reconnects 1
	wait_counter egress steer_redirects -eq 1
	grep -q 'event=steer-reconnect redirects=1' "$FWD_DIR/sma.audit"
	served_by 198.51.100.21

	# Healed: a full sync, the redirect ends, a's address is a's again.
	start_select
	wait_for 80 sma_is steer_heals 1
	wait_counter egress steer_ends -eq 1
	[ "$(counter egress steer_active)" = 0 ]
	[ "$(counter egress steer_bad)" = 0 ]
	[ "$(counter egress steer_refused)" = 0 ]
	served_by 198.51.100.11
}
