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

# The path-capability error of the flow from local port $1, if any.
capability_error_of() {
	loop_bindout | jq -c --argjson p "$1" 'select(.type == "error" and
		.code == "path-capability" and .flow.sport == $p)' | tail -1
}

# The last binding installed for a flow from local port $1.
binding_of_port() {
	loop_bindout | jq -c --argjson p "$1" 'select(.type == "binding" and
		.op == "install" and .fwd.match.sport == $p)' | tail -1
}

@test "loop caps: an ingress that advertises no SRv6 (--encaps ipip,ip) asks for IP-in-IP and its flows are bound and answered that way; with SRv6 again it gets SRv6" {
	best_is site1-a
	loop_stop IF-1
	loop_ingress_start --encaps ipip,ip
	loop_curl http://203.0.113.100/ || { echo "curl: $LOOP_ERR"; false; }
	[ "$LOOP_BODY" = site1-a ]
	b=$(binding_of_port "$LOOP_PORT")
	[ -n "$b" ]
	# Both ends advertise ipip6 (the egress has only an IPv6 source).
	[ "$(jq -r .fwd.encap <<<"$b")" = ipip ]
	[ "$(jq -r .fwd.tunnel_dst <<<"$b")" = 2001:db8:2::1 ]
	# No path failure for it.
	[ -z "$(capability_error_of "$LOOP_PORT")" ]
	[ "$(loop_counter IF-1 bindings_installed)" -ge 1 ]
	# The new flow's binding is not refused.  (The binding made before the
	# restart, in SRv6, is re-synced to the ingress, refused by it as
	# unsupported-encap - a path it can no longer realize - and removed by
	# cats-bind.)
	! grep -q "binding $(jq -r .id <<<"$b"): refused" "$LOOP_DIR/log/IF-1.err" || false
	loop_stop IF-1
	loop_ingress_start
	loop_curl http://203.0.113.100/ || { echo "curl: $LOOP_ERR"; false; }
	[ "$LOOP_BODY" = site1-a ]
	[ "$(jq -r .fwd.encap <<<"$(binding_of_port "$LOOP_PORT")")" = srv6 ]
}

@test "loop caps: an explicit --dataplane srv6 toward an egress that advertises no SRv6 is a path-capability refusal naming the egress" {
	best_is site1-a
	loop_stop EF-1
	loop_egress_start 1 --encaps ipip,ip
	loop_stop IF-1
	loop_ingress_start --dataplane srv6
	LOOP_CURL_TIMEOUT=3 run loop_curl http://203.0.113.100/
	[ "$status" -ne 0 ]
	refused() {
		loop_bindout | jq -e -s 'any(.[]; .type == "error" and
			.code == "path-capability" and
			(.msg | contains("egress EF-1 does not advertise srv6")))' >/dev/null
	}
	loop_wait 50 refused
	e=$(loop_bindout | jq -c 'select(.type == "error" and
		.code == "path-capability" and
		(.msg | contains("egress EF-1 does not advertise srv6")))' | tail -1)
	[ "$(jq -r .ingress <<<"$e")" = IF-1 ]
	# Nothing was sent for a forwarder to refuse.
	[ -z "$(binding_of_port "$(jq -r .flow.sport <<<"$e")")" ]
	loop_stop IF-1
	loop_ingress_start
	loop_stop EF-1
	loop_egress_start 1
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
