#!/usr/bin/env bats
# The binding manager in the whole loop (examples/demo/loop_net.bash) with
# real forwarders: the capabilities they advertise decide what cats-bind
# binds (cats-bind(1) Capabilities), and the bindings an ingress made by
# its configured fallback while cats-select was killed are adopted at heal
# (cats-bind(1) Fallback bindings).

load helper
load loop_helper

# The three filters: a cats-select killed stays down until the test starts
# it again (under cats-cps it is back within a second, before the ingress
# turns to its fallback).
setup_file() { export LOOP_CPS=filters; loop_file_up k; }

teardown() {
	local f
	for f in "$LOOP_DIR"/held.pid "$LOOP_DIR"/fb.pid; do
		[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
		rm -f "$f"
	done
	true
}

installs() {
	loop_bindout | jq -s '[.[] | select(.type == "binding" and .op == "install")] | length'
}

capability_error() {
	loop_bindout | jq -c 'select(.type == "error" and .code == "path-capability")' | tail -1
}

@test "loop caps: an ingress that advertises no SRv6 never gets an SRv6 binding (path-capability); with SRv6 again it does" {
	best_is site1-a
	loop_stop IF-1
	loop_ingress_start --encaps ipip,ip
	b0=$(installs)
	LOOP_CURL_TIMEOUT=3 run loop_curl http://203.0.113.100/
	[ "$status" -ne 0 ]
	loop_wait 50 sh -c "cats-cbor decode '$LOOP_DIR/bind.cbor' | grep -q '\"code\":\"path-capability\"'"
	e=$(capability_error)
	[ "$(jq -r .ingress <<<"$e")" = IF-1 ]
	[[ "$(jq -r .msg <<<"$e")" == *"headend IF-1 does not advertise srv6"* ]]
	# Nothing was sent for the forwarder to refuse.
	[ "$(installs)" = "$b0" ]
	[ "$(loop_counter IF-1 bindings_installed)" = 0 ]
	! grep -q unsupported-encap "$LOOP_DIR/log/IF-1.err"
	loop_stop IF-1
	loop_ingress_start
	best_is site1-a
}

# A TCP connection to the service held open for $1 seconds (a flow that
# stays bound); its pid in $LOOP_DIR/$2.pid, its port in $2.port.
hold_conn() {
	lx "$LC" $LOOP_PY -c 'import socket, sys, time
s = socket.create_connection(("203.0.113.100", 80), timeout=5)
open(sys.argv[2], "w").write("%d\n" % s.getsockname()[1])
time.sleep(float(sys.argv[1]))' "$1" "$LOOP_DIR/$2.port" &
	echo $! >"$LOOP_DIR/$2.pid"
}

@test "loop caps: flows the ingress bound by its fallback while cats-select was killed are adopted by cats-bind when it answers again" {
	loop_stop IF-1
	loop_ingress_start --fallback S1=60s
	loop_stop EF-1
	loop_egress_start 1 --learn-reverse 60s
	best_is site1-a
	# A connection bound by the C-PS, still open: cats-bind knows site1-a.
	b0=$(installs)
	hold_conn 60 held
	held_bound() { [ "$(installs)" -gt "$b0" ]; }
	loop_wait 50 held_bound
	loop_stop select KILL
	loop_wait 50 grep -q "select: connection closed" "$LOOP_DIR/log/IF-1.err"
	# Without the selector: a new connection bound by the ingress itself.
	hold_conn 60 fb
	fb_bound() { [ "$(loop_counter IF-1 fallback_bound)" -ge 1 ]; }
	loop_wait 50 fb_bound
	grep -q 'event=fallback-bind cs_id=S1 .*locator=198.51.100.11' "$LOOP_DIR/log/IF-1.err"
	loop_wait 50 test -s "$LOOP_DIR/fb.port"
	port=$(cat "$LOOP_DIR/fb.port")
	# The selector is back; its first answer (a decision or an error) makes
	# the ingress report what it bound, and cats-bind adopts it.  (A client
	# that comes before the ingress reconnected is bound by the fallback
	# too: hence the retries.)
	loop_select_start
	adopted() {
		LOOP_CURL_TIMEOUT=2 loop_curl http://203.0.113.100/ || true
		grep -q 'event=fallback-adopted fwd=IF-1' "$LOOP_DIR/log/bind.err"
	}
	loop_wait 100 adopted
	grep -q 'event=fallback-adopted fwd=IF-1 .*cs_id=S1 csci_id=198.51.100.11:80' "$LOOP_DIR/log/bind.err"
	# The manager's binding of the held connection took the fallback
	# binding's place at the ingress, after the egress installed it: ACTIVE.
	b=$(loop_bindout | jq -c --argjson p "$port" 'select(.type == "binding" and
		.op == "install" and .txn >= 4503599627370496 and .fwd.match.sport == $p)' | head -1)
	[ -n "$b" ]
	[ "$(jq -r .csci_id <<<"$b")" = 198.51.100.11:80 ]
	[ "$(jq -r .id <<<"$b")" -lt 4503599627370496 ]
	txn=$(jq -r .txn <<<"$b") id=$(jq -r .id <<<"$b")
	loop_wait 50 grep -qi "txn=$txn id=$id .*-> active" "$LOOP_DIR/bind.trace"
	# The connection the fallback bound lives on.
	kill -0 "$(cat "$LOOP_DIR/fb.pid")"
}
