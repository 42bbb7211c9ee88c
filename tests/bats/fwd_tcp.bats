#!/usr/bin/env bats
# TCP connection tracking in the whole loop (examples/demo/loop_net.bash):
# real connections through cats-fwd IF-1 and EF-1 (user space and
# --fast-path) to real HTTP instances, bound by cats-select | cats-pce |
# cats-bind.  A connection closed by FINs or by a RST frees its binding at
# both forwarders and at cats-bind within the configured time; a reused
# 5-tuple is selected afresh.

load helper
load loop_helper

setup_file() { loop_file_up g; }

# The forwarders again, with these extra options: fwd_restart OPTION...
fwd_restart() {
	loop_stop IF-1
	loop_stop EF-1
	loop_stop EF-2
	loop_egress_start 1 "$@" && loop_egress_start 2 "$@" &&
	loop_ingress_start "$@"
}

# One HTTP request from client port P that the instance closes first
# (Connection: close; the client closes after the instance's FIN): conn P
# sets LOOP_BODY.  The client's socket is gone at once (no TIME_WAIT on
# its side), so the port can be used again right away.
conn() {
	LOOP_BODY=$(lx "$LC" timeout 10 $LOOP_PY -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("192.0.2.10", int(sys.argv[1])))
s.connect(("203.0.113.100", 80))
s.sendall(b"GET / HTTP/1.1\r\nHost: s1\r\nConnection: close\r\n\r\n")
got = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    got += b
s.close()
print(got.split(b"\r\n\r\n", 1)[1].decode().strip())' "$1")
}

# Counter NAME of forwarder F is at least V: ctr_ge F NAME V.
ctr_ge() { [ "$(loop_counter "$1" "$2")" -ge "$3" ]; }

# cats-bind released transaction T's binding: drained it and, once no
# forwarder held it any more, forgot it (its trace).
bind_removed() {
	grep -q "txn=$1 .*ACTIVE -> DRAINING" "$LOOP_DIR/bind.trace" &&
	grep -q "txn=$1 .*DRAINING -> ABSENT" "$LOOP_DIR/bind.trace"
}

# The bindings cats-bind installed for flows from client port P.
installs_of() {
	loop_bindout | jq -c --argjson p "$1" \
		'select(.type == "binding" and .op == "install" and .fwd.match.sport == $p)'
}

@test "fwd tcp: a connection closed by FINs frees its binding at IF-1, EF-1 and cats-bind within time-wait" {
	fwd_restart --tcp-timeout time-wait=1s
	loop_wait_ready 150
	i0=$(loop_counter IF-1 tcp_ended_time_wait)
	e0=$(loop_counter EF-1 tcp_ended_time_wait)
	conn 41001
	[ "$LOOP_BODY" = site1-a ]
	txn=$(loop_reply_of 41001 | jq -r .txn)
	# 1 s of time-wait, at most a second more until the binding is
	# visited, and the margin of a loaded machine.
	loop_wait 40 ctr_ge IF-1 tcp_ended_time_wait $((i0 + 1))
	loop_wait 40 ctr_ge EF-1 tcp_ended_time_wait $((e0 + 1))
	[ "$(loop_counter IF-1 bindings)" = 0 ]
	[ "$(loop_counter EF-1 bindings)" = 0 ]
	# The forwarders said why; cats-bind drained the binding and removed
	# it wherever it was still held.
	loop_wait 30 bind_removed "$txn"
}

@test "fwd tcp: a connection reset by a RST frees its binding at both forwarders and at cats-bind" {
	fwd_restart --tcp-timeout close=1s
	loop_wait_ready 150
	i0=$(loop_counter IF-1 tcp_ended_close)
	e0=$(loop_counter EF-1 tcp_ended_close)
	# Connect, then reset (SO_LINGER 0): the client's RST.
	lx "$LC" $LOOP_PY -c 'import socket, struct
s = socket.socket()
s.bind(("192.0.2.10", 41011))
s.connect(("203.0.113.100", 80))
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
assert s.recv(4096).startswith(b"HTTP/1.")
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()'
	txn=$(loop_reply_of 41011 | jq -r .txn)
	loop_wait 40 ctr_ge IF-1 tcp_ended_close $((i0 + 1))
	loop_wait 40 ctr_ge EF-1 tcp_ended_close $((e0 + 1))
	[ "$(loop_counter IF-1 bindings)" = 0 ]
	loop_wait 30 bind_removed "$txn"
}

@test "fwd tcp: a reused 5-tuple after a FIN is selected afresh, at the ingress and the egress" {
	fwd_restart
	loop_wait_ready 150
	r0=$(loop_counter IF-1 tcp_reused)
	q0=$(loop_counter IF-1 requests)
	conn 41021
	[ "$LOOP_BODY" = site1-a ]
	# The same client port again, within time-wait (10 s): a new SYN on
	# the closing binding.
	conn 41021
	[ "$LOOP_BODY" = site1-a ]
	[ "$(loop_counter IF-1 tcp_reused)" = $((r0 + 1)) ]
	[ "$(loop_counter IF-1 requests)" = $((q0 + 2)) ]
	# Two selections, two bindings of the one 5-tuple; the first was
	# released before the second was made.
	[ "$(installs_of 41021 | jq -s 'map(.id) | unique | length')" = 2 ]
	first=$(installs_of 41021 | head -1 | jq -r .txn)
	loop_wait 30 bind_removed "$first"
	# The egress made room for the new binding of the flow (or had the
	# old one removed first): never refused it as flow-bound.
	! grep -q "refused: flow-bound" "$LOOP_DIR/log/EF-1.err" || false
}

@test "fwd tcp: with --fast-path the kernel carries the established transfer, its FINs come to user space" {
	fwd_restart --fast-path --tcp-timeout time-wait=1s
	loop_wait_ready 150
	i0=$(loop_counter IF-1 tcp_ended_time_wait)
	e0=$(loop_counter EF-1 tcp_ended_time_wait)
	lx "$LC" curl -s -m 30 -o "$LOOP_DIR/dl" 'http://203.0.113.100/big?mb=1'
	[ "$(stat -c %s "$LOOP_DIR/dl")" = $((1 << 20)) ]
	[ "$(loop_counter IF-1 fast_hit)" -ge 20 ]
	[ "$(loop_counter EF-1 fast_hit)" -ge 20 ]
	[ "$(loop_counter IF-1 fast_fail)" = 0 ]
	loop_wait 40 ctr_ge IF-1 tcp_ended_time_wait $((i0 + 1))
	loop_wait 40 ctr_ge EF-1 tcp_ended_time_wait $((e0 + 1))
	[ "$(loop_counter IF-1 fast_keys)" = 0 ]
	[ "$(loop_counter EF-1 fast_keys)" = 0 ]
}
