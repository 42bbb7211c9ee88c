#!/usr/bin/env bats
# cats-fwd end to end: client ns -> ingress cats-fwd -> core -> egress
# cats-fwd -> instance ns, with real curl over real TCP, bindings from the
# fake control plane (tests/tools/fake-cps.c).

load helper
load fwd_net

setup_file() {
	[ "$(id -u)" = 0 ] || return 0
	FWD_ID=l$$
	export FWD_ID
	. "$BATS_TEST_DIRNAME/fwd_net.bash"
	fwd_up
	echo "$FWD_DIR" >"$BATS_FILE_TMPDIR/dir"
	echo "$FWD_ID" >"$BATS_FILE_TMPDIR/id"
	echo 198.51.100.11 >"$FWD_DIR/choose"
	start_cps --egress EF-2 --locator 198.51.100.11 --choose "$FWD_DIR/choose" \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_egress
	start_ingress --path-down
	BIG_SIZE=3000000 start_web || { cat $FWD_DIR/web*.err $FWD_DIR/ingress.err >&3; xs ss -ltn >&3; false; }
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

@test "fwd: curl to the service address gets the chosen instance's page" {
	run xc curl -s -m 5 http://203.0.113.100/
	[ "$status" -eq 0 ]
	[ "$output" = "instance 198.51.100.11" ]
	echo 198.51.100.21 >"$FWD_DIR/choose"
	run xc curl -s -m 5 http://203.0.113.100/
	[ "$output" = "instance 198.51.100.21" ]
	echo 198.51.100.11 >"$FWD_DIR/choose"
}

@test "fwd: one request per flow, the binding carries it, status goes back" {
	n0=$(grep -c '"type":"request"' "$FWD_DIR/cps.log" || true)
	run xc curl -s -m 5 -o /dev/null -w '%{local_port}' http://203.0.113.100/
	[ "$status" -eq 0 ]
	port=$output
	[ $(grep -c '"type":"request"' "$FWD_DIR/cps.log") -eq $((n0 + 1)) ]
	grep '"type":"request"' "$FWD_DIR/cps.log" | tail -1 >"$FWD_DIR/req"
	[ "$(jq -r .flow.sport "$FWD_DIR/req")" = "$port" ]
	[ "$(jq -r .flow.dst "$FWD_DIR/req")" = 203.0.113.100 ]
	[ "$(jq -r .ingress "$FWD_DIR/req")" = IF-1 ]
	[ "$(jq -r '.auth | length' "$FWD_DIR/req")" = 4 ]   # COSE_Mac0
	jq -e 'has("constraints") | not' "$FWD_DIR/req"
	# No client metadata: mode none, and the C-PS resolves the address
	# (a CS-ID with mode none is malformed for cats-select).
	jq -e '.mode == "none" and (has("cs_id") | not)' "$FWD_DIR/req"
	# Both forwarders reported the install.
	wait_for 100 grep -q '"fwd":"IF-1","event":"installed"' "$FWD_DIR/cps.log"
	grep -q '"fwd":"EF-2","event":"installed"' "$FWD_DIR/cps.log"
}

@test "fwd: a long download keeps its instance while new flows go elsewhere; survives an ingress restart" {
	echo 198.51.100.11 >"$FWD_DIR/choose"
	xc curl -s --speed-limit 1 --speed-time 30 --limit-rate 600k -o "$FWD_DIR/dl" http://203.0.113.100/big &
	dl=$!
	# The download's flow bound (its first bytes in) before the choice changes.
	wait_for 100 test -s "$FWD_DIR/dl"
	echo 198.51.100.21 >"$FWD_DIR/choose"
	run xc curl -s -m 5 http://203.0.113.100/
	[ "$output" = "instance 198.51.100.21" ]
	# Restart the ingress forwarder in the middle of the download: it must
	# fetch the active bindings again before forwarding the flow.
	stop ingress
	start_ingress --path-down	# as setup_file started it
	grep -q "bindings fetched again" "$FWD_DIR/ingress.err"
	wait $dl
	cmp "$FWD_DIR/dl" "$FWD_DIR/www11/big"
	# The restarted forwarder got the active bindings back from cats-bind.
	[ "$(counter ingress bindings_installed)" -ge 1 ]
	# The restarted forwarder sent no request for the established flow.
	[ "$(counter ingress drop_no_binding_tcp)" = 0 ]
	echo 198.51.100.11 >"$FWD_DIR/choose"
}

@test "fwd: a reverse packet without a binding is dropped, never delivered" {
	before=$(counter egress drop_no_reverse_binding)
	xc timeout 3 socat -u UDP-RECV:5555 CREATE:"$FWD_DIR/got" &
	rcv=$!
	wait_udp xc 5555
	n0=$(grep -c '"type":"request"' "$FWD_DIR/cps.log" || true)
	echo stray | xs socat -u - UDP:192.0.2.10:5555,bind=198.51.100.21:80
	# Dropped (the proof it arrived), then: never delivered, no request.
	wait_counter egress drop_no_reverse_binding -gt "$before"
	wait $rcv || true	# the receiver's timeout: it got nothing
	[ ! -s "$FWD_DIR/got" ]
	[ $(grep -c '"type":"request"' "$FWD_DIR/cps.log") -eq "$n0" ]
	# A forged return packet at the ingress (outer SRv6 to its SID):
	b2=$(counter ingress drop_no_reverse_binding)
	xe $PY "$TOP/tests/tools/fwd_pkt.py" srv6-stray e1 "$(mac_of "$NI" i1)"
	wait_counter ingress drop_no_reverse_binding -gt "$b2"
}

@test "fwd: an ICMP error from the core about a bound flow's packet reports its path down, once" {
	echo 198.51.100.11 >"$FWD_DIR/choose"	# the quoted packet's locator
	xc $PY "$TOP/tests/tools/fwd_pkt.py" udp 203.0.113.100 7400 hello 42300
	wait_for 50 sh -c "grep '\"type\":\"status\"' '$FWD_DIR/cps.log' |
		grep '\"event\":\"installed\"' | grep -q '\"fwd\":\"IF-1\"' &&
		grep '\"type\":\"binding\"' '$FWD_DIR/cps.log' | grep -q 42300"
	id=$(grep '"type":"binding"' "$FWD_DIR/cps.log" | grep 42300 | tail -1 | jq .id)
	e0=$(counter ingress path_errors)
	d0=$(counter ingress path_down_sent)
	# Two at once (one sender, back to back: the second well inside the
	# 5 s however slow a loaded machine starts the sender): both counted,
	# the path reported down once (once per 5 s).
	xe $PY "$TOP/tests/tools/fwd_pkt.py" icmp6-unreach e1 "$(mac_of "$NI" i1)" 42300 7400 2
	wait_for 50 sh -c "grep '\"event\":\"path-down\"' '$FWD_DIR/cps.log' |
		grep -q '\"id\":$id,'"
	grep '"event":"path-down"' "$FWD_DIR/cps.log" | grep "\"id\":$id," |
		grep -q '"reason":"unreachable"'
	wait_counter ingress path_errors -ge $((e0 + 2))
	[ "$(counter ingress path_errors)" -eq $((e0 + 2)) ]
	[ "$(counter ingress path_down_sent)" -eq $((d0 + 1)) ]
	# About a flow nobody bound: counted, nothing reported.
	xe $PY "$TOP/tests/tools/fwd_pkt.py" icmp6-unreach e1 "$(mac_of "$NI" i1)" 42399 7400
	wait_counter ingress path_errors -ge $((e0 + 3))
	[ "$(counter ingress path_errors)" -eq $((e0 + 3)) ]
	[ "$(counter ingress path_down_sent)" -eq $((d0 + 1)) ]
}

@test "fwd: established flows need a binding; an unknown TCP mid-flow packet is refused" {
	before=$(counter ingress drop_no_binding_tcp)
	xc $PY "$TOP/tests/tools/fwd_pkt.py" tcp-ack 203.0.113.100
	wait_counter ingress drop_no_binding_tcp -gt "$before"
}

@test "fwd: SIGUSR2 dumps per-binding counters" {
	rm -f "$FWD_DIR/ingress.err.mark"
	# A connection just ended: its binding is in time-wait (10 s), with
	# the packets of both directions (the earlier ones are released).
	run xc curl -s -m 5 http://203.0.113.100/
	[ "$output" = "instance 198.51.100.11" ]
	kill -USR2 "$(cat "$FWD_DIR/ingress.pid")"
	wait_for 50 grep -q '"reason":"counters"' "$FWD_DIR/ingress.err"
	grep '"reason":"counters"' "$FWD_DIR/ingress.err" |
		jq -es 'any(.[]; .pkts > 0 and .rev_pkts > 0 and .id > 0)'
}
