#!/usr/bin/env bats
# cats-fwd's control channels over tls: (issue 20): a real cats-fwd (a TUN
# device for its ports, in a namespace of its own) reaches cats-select and
# cats-bind on tls: endpoints with its client certificate, verifies them by
# the CA, and a flow gets its binding.  A server of another CA is refused
# in one line, counted (ctl_tls_fail) and tried again while the forwarder
# goes on; SIGHUP reads the CA file again.  A server that never answers the
# handshake holds nothing: the handshake runs on the forwarder's loop.
# Certificates by examples/keys/make-certs.sh.

load helper

setup() {
	need_root
	[ -c /dev/net/tun ] || skip "no /dev/net/tun"
	W="$BATS_TEST_TMPDIR"
	PIDS=()
	K=$W/k
	sh "$TOP/examples/keys/make-certs.sh" "$K" srv IF-1 >/dev/null
	sh "$TOP/examples/keys/make-certs.sh" "$W/other" srv >/dev/null
	SRV=(--tls-cert "$K/srv.crt" --tls-key "$K/srv.key" --tls-ca "$K/ca.crt")
	NS=fwdtls$$
	ip netns add "$NS"
	ip netns exec "$NS" ip link set lo up
}

teardown() {
	stop_pids
	exec 5>&- 6>&-
	ip netns pids "$NS" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
	ip netns del "$NS" 2>/dev/null || true
}

xn() { ip netns exec "$NS" "$@"; }

# The C-PS as its three filters, cats-select and cats-bind listening on
# tls:127.0.0.1:$SP and :$BP (mutual TLS), the services and fresh metrics
# of tests/data/select/base.jsonl.
start_cps() {
	local sel=$DATA/select/base.jsonl now t
	now=$(date +%s%3N)
	grep '"type":"service"' "$sel" >"$W/svc.jsonl"
	for t in metric net; do
		grep "\"type\":\"$t\"" "$sel" | jq -c --argjson now "$now" \
		    '.ts = $now | .ttl_ms = 600000 |
		    if .entries then .entries |= map(.ts = $now) else . end' \
		    >"$W/$t.jsonl"
	done
	SP=$(free_port)
	BP=$(free_port)
	mkfifo "$W/f1" "$W/f2"
	exec 5<>"$W/f1" 6<>"$W/f2"	# (opened here: no open waits for its peer)
	bg ip netns exec "$NS" cats-select --listen "tls:127.0.0.1:$SP" --no-auth \
	    --services "$W/svc.jsonl" --metrics "$W/metric.jsonl" \
	    --net "$W/net.jsonl" "${SRV[@]}" </dev/null >"$W/f1" 2>"$W/sel.err"
	# (not bg: an asynchronous command's own redirection of stdin is kept,
	# one around a function that runs it is not)
	ip netns exec "$NS" cats-pce -t "$DATA/pce/lab.json" <"$W/f1" >"$W/f2" \
	    2>"$W/pce.err" &
	PIDS+=($!)
	ip netns exec "$NS" cats-bind --listen "tls:127.0.0.1:$BP" --commit ingress \
	    "${SRV[@]}" <"$W/f2" >"$W/bind.out" 2>"$W/bind.err" &
	PIDS+=($!)
	wait_for 50 grep -q serving "$W/sel.err"
}

# IF-1, its client certificate, the CA file $W/ca.crt: --select $1.
start_fwd() {
	bg ip netns exec "$NS" cats-fwd --id IF-1 --client tun:tl0 --core tun:tl0 \
	    --src6 2001:db8:1::1 --sid 2001:db8:1::1 --src4 192.0.2.1 \
	    --service S1=192.0.2.100:443/tcp --tenant t1 \
	    --select "$1" --bind "tls:127.0.0.1:$BP" \
	    --tls-cert "$K/IF-1.crt" --tls-key "$K/IF-1.key" \
	    --tls-ca "$W/ca.crt" --stats "file:$W/fwd.stats" "${@:2}" \
	    >"$W/fwd.out" 2>"$W/fwd.err"
	FWD=$LAST
	wait_for 50 grep -q forwarding "$W/fwd.err"
}

# Counter NAME of the forwarder, from a fresh stats dump (SIGUSR1).
fwd_counter() { stats_counter "$FWD" "$W/fwd.stats" "$1"; }
fwd_counter_is() { [ "$(fwd_counter "$1")" "$2" "$3" ]; }

@test "fwd tls: cats-fwd reaches cats-select and cats-bind over tls: and a flow gets its binding; a server of another CA is refused, counted and retried until SIGHUP reads the right CA" {
	start_cps
	cp "$W/other/ca.crt" "$W/ca.crt"
	start_fwd "tls:127.0.0.1:$SP"
	# Both servers refused by the forwarder, one line each, each try counted;
	# the servers see the forwarder's alert.
	wait_for 50 grep -q "^cats-fwd: select: TLS handshake with 127.0.0.1: .* (retrying)$" "$W/fwd.err"
	wait_for 50 grep -q "^cats-fwd: bind: TLS handshake with 127.0.0.1: .* (retrying)$" "$W/fwd.err"
	wait_for 50 fwd_counter_is ctl_tls_fail -ge 4
	wait_for 50 grep -q 'event=tls-refused .*unknown ca' "$W/bind.err"
	! grep -q "bindings fetched again" "$W/fwd.err" || false
	kill -0 "$FWD"
	# The right CA, read again on SIGHUP: the next try connects.
	cp "$K/ca.crt" "$W/ca.crt"
	kill -HUP "$FWD"
	wait_for 50 grep -q "event=tls-reloaded" "$W/fwd.err"
	wait_for 50 grep -q "bindings fetched again; forwarding" "$W/fwd.err"
	wait_for 50 grep -q 'event=tls-peer .*subject="CN=IF-1"' "$W/sel.err"
	grep -q 'event=tls-peer .*subject="CN=IF-1"' "$W/bind.err"
	# A TCP flow to S1's address through the TUN device: the request goes
	# to cats-select, the binding comes from cats-bind, both over TLS.
	xn ip addr add 192.0.2.10/32 dev lo
	xn ip link set tl0 up
	xn ip route add 192.0.2.100/32 dev tl0 src 192.0.2.10
	xn timeout 2 bash -c 'exec 3<>/dev/tcp/192.0.2.100/443' || true
	wait_for 50 fwd_counter_is bindings_installed -eq 1
	[ "$(fwd_counter released)" -ge 1 ]
	[ "$(fwd_counter bindings_refused)" -eq 0 ]
	grep -q "forwarder-commit" "$W/bind.err"
	[ "$(cats-cbor decode <"$W/bind.out" | jq -r 'select(.type == "binding") | .fwd.match.dport')" = 443 ]
}

@test "fwd tls: a tls: server that never answers the handshake holds nothing: the other channel syncs; it is given up after --hello-timeout, counted, retried" {
	start_cps
	cp "$K/ca.crt" "$W/ca.crt"
	# A listener that takes connections (the kernel's backlog) and never
	# reads or answers.
	MP=$(free_port)
	bg ip netns exec "$NS" python3 -c 'import socket,sys,time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
time.sleep(120)' "$MP"
	wait_for 50 xn bash -c "exec 3<>/dev/tcp/127.0.0.1/$MP"
	start_fwd "tls:127.0.0.1:$MP" --hello-timeout 2s
	# The bind channel does not wait for the mute select server.
	wait_for 30 grep -q "bindings fetched again; forwarding" "$W/fwd.err"
	! grep -q "no answer" "$W/fwd.err" || false
	wait_for 100 grep -q "^cats-fwd: select: TLS handshake with 127.0.0.1: no answer within 2 s (retrying)$" "$W/fwd.err"
	[ "$(fwd_counter ctl_tls_fail)" -ge 1 ]
	! grep -q "bind: TLS handshake" "$W/fwd.err" || false
	# The forwarder answered its stats at once all along.
	kill -0 "$FWD"
}

@test "fwd tls: servers that refuse the forwarder's certificate: each close before a record is counted, the retries back off to 1 s" {
	# The servers trust another CA only: under TLS 1.3 the forwarder's
	# handshake ends, then the server's alert closes the connection.
	SRV=(--tls-cert "$K/srv.crt" --tls-key "$K/srv.key" --tls-ca "$W/other/ca.crt")
	start_cps
	cp "$K/ca.crt" "$W/ca.crt"
	start_fwd "tls:127.0.0.1:$SP"
	wait_for 50 grep -q 'event=tls-refused' "$W/bind.err"
	wait_for 50 fwd_counter_is ctl_tls_fail -ge 2
	# Over 3 s: 200, 300, ... ms apart (at most about 7 tries), not
	# every 100 ms (about 27 before).
	n0=$(grep -cE '^cats-fwd: bind: (connection closed|TLS handshake)' "$W/fwd.err" || true)
	sleep 3
	n1=$(grep -cE '^cats-fwd: bind: (connection closed|TLS handshake)' "$W/fwd.err" || true)
	[ $((n1 - n0)) -ge 1 ] && [ $((n1 - n0)) -le 12 ]
	grep -qE '^cats-fwd: bind: connection closed.*before any record|^cats-fwd: bind: TLS handshake' "$W/fwd.err"
	kill -0 "$FWD"
}
