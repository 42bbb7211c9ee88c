#!/usr/bin/env bats
# The listeners as an attacker sees them (issue 20 §1), on loopback only:
# thousands of idle connections under a 1,024 descriptor limit, idle
# unauthenticated connections against forwarders, a hello sent again.
# Each flood is bounded in count and in time.

load helper

setup() {
	W=$(mktemp -d "${BATS_TMPDIR:-/tmp}/surface.$$.XXXXXX")
	PIDS=""
	cat >"$W/flood.py" <<'EOF'
# flood.py PORT N HOLD: N idle TCP connections to 127.0.0.1:PORT, held for
# HOLD seconds (or until killed); prints "connected K" once all are tried.
import resource, select, socket, sys, time
port, n, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
want = min(hard, n + 64)
if soft < want:
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
socks = []
for i in range(n):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", port))
    socks.append(s)
end = time.time() + 10
ep = select.epoll()
for s in socks:
    ep.register(s.fileno(), select.EPOLLOUT)
pending = set(s.fileno() for s in socks)
while pending and time.time() < end:
    for fd, _ in ep.poll(0.5):
        ep.unregister(fd)
        pending.discard(fd)
ok = n - len(pending)
print("connected %d" % ok, flush=True)
time.sleep(hold)
EOF
}

teardown() {
	[ -n "$NS" ] && ip netns del "$NS" 2>/dev/null
	for p in $PIDS; do
		kill "$p" 2>/dev/null || true
	done
	for p in $PIDS; do
		wait "$p" 2>/dev/null || true
	done
	exec 7>&- 2>/dev/null || true
	rm -rf "$W"
}

# CPU ticks (user + system) a process has used.
ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# The process does not spin: under 50 of 100 ticks a second over 2 s.
quiet_cpu() {
	local t0 t1
	t0=$(ticks "$1")
	sleep 2
	t1=$(ticks "$1")
	echo "cpu ticks in 2 s: $((t1 - t0))"
	[ $((t1 - t0)) -lt 100 ]
}

# hold ADDR FILE: to ADDR (tcp:PORT or unix:PATH) a working connection
# that sends FILE first and a mute one; once the mute one is closed (the
# deadline passed), whether the working one is still open.
hold() {
	python3 - "$@" <<'EOF'
import socket, sys
addr, data = sys.argv[1], open(sys.argv[2], "rb").read()
def conn():
    if addr.startswith("unix:"):
        s = socket.socket(socket.AF_UNIX)
        s.connect(addr[5:])
    else:
        s = socket.create_connection(("127.0.0.1", int(addr[4:])))
    return s
work = conn()
work.sendall(data)
mute = conn()
mute.settimeout(60)	# (a hang guard, not a measure)
print("mute closed" if mute.recv(1) == b"" else "mute got bytes", flush=True)
work.settimeout(0.5)
try:
    while True:
        if work.recv(65536) == b"":
            print("working closed")
            break
except (socket.timeout, TimeoutError):
    print("working open")
EOF
}

keys() {
	cats-key psk -n IF-1 -o "$W/if1.psk" >/dev/null
	cats-key psk -n EF-2 -o "$W/ef2.psk" >/dev/null
	cat "$W/if1.psk" "$W/ef2.psk" >"$W/ring"
	chmod 600 "$W/ring"
}

# cats-bind on tcp: under a soft and hard limit of 1,024 descriptors.
start_bind() {
	port=$(free_port)
	mkfifo "$W/fifo"
	sh -c 'ulimit -n 1024 && exec "$@"' sh cats-bind \
	    --listen "tcp:127.0.0.1:$port" "$@" <"$W/fifo" >"$W/out" \
	    2>"$W/err" &
	BPID=$!
	PIDS="$PIDS $BPID"
	exec 7>"$W/fifo"
	wait_for 50 socat -u /dev/null "TCP:127.0.0.1:$port"
}

@test "surface: 2,000 idle connections to cats-bind under a 1,024 limit; a forwarder still served, no spin, bounded log" {
	[ "$(ulimit -Hn)" -ge 2100 ] || skip "the flood needs 2,100 descriptors"
	start_bind
	python3 "$W/flood.py" "$port" 2000 20 >"$W/flood" &
	PIDS="$PIDS $!"
	wait_for 150 grep -q connected "$W/flood"
	quiet_cpu "$BPID"
	bind_fwdsim -c "tcp:127.0.0.1:$port" -n IF-1 -t 5 -x 1 >"$W/ok"
	grep -q '"event":"hello"' "$W/ok"
	kill -USR1 "$BPID"
	wait_for 50 sh -c "cats-cbor decode '$W/out' | grep -q stats"
	cats-cbor decode "$W/out" | grep stats >"$W/stats"
	jq -e '.counters["conns.evicted"] >= 1000 and
	    .counters["conns.unauth"] <= 256' "$W/stats"
	# A line per interval, not one per refused connection.
	[ "$(wc -c <"$W/err")" -lt 20000 ]
	kill -0 "$BPID"
}

@test "surface: 1,024 idle unauthenticated connections do not lock out a forwarder" {
	keys
	start_bind --keys "$W/ring" --hello-timeout 2s
	# One forwarder connected before the flood stays connected.
	bind_fwdsim -c "tcp:127.0.0.1:$port" -n EF-2 -k "$W/ef2.psk" -t 30 \
	    -x 100 >"$W/ef" &
	PIDS="$PIDS $!"
	wait_for 50 grep -q "EF-2 connected" "$W/err"
	python3 "$W/flood.py" "$port" 1024 20 >"$W/flood" &
	PIDS="$PIDS $!"
	wait_for 150 grep -q connected "$W/flood"
	# A forwarder connecting during the flood gets in at once.
	bind_fwdsim -c "tcp:127.0.0.1:$port" -n IF-1 -k "$W/if1.psk" -t 5 \
	    -x 1 >"$W/if"
	grep -q '"event":"hello"' "$W/if"
	! grep -q "EF-2 disconnected" "$W/err" || false
	# The idle ones are gone after the hello deadline (--hello-timeout 2s:
	# 5 s without it): stats asked for until they say so.
	wait_for 100 grep -q "not authenticated within 2000 ms" "$W/err"
	wait_for 100 idle_gone
	jq -e '.counters["conns.unauth"] == 0 and
	    .counters["conns.hello_timeouts"] >= 1 and
	    .counters.forwarders >= 1' "$W/stats"
}

# A fresh stats record of cats-bind (SIGUSR1) in $W/stats says that no
# unauthenticated connection is left and the hello deadline closed some.
idle_gone() {
	local n
	n=$(cats-cbor decode "$W/out" 2>/dev/null | grep -c stats)
	kill -USR1 "$BPID" || return 1
	wait_for 50 sh -c "[ \$(cats-cbor decode '$W/out' 2>/dev/null | grep -c stats) -gt $n ]" ||
	    return 1
	cats-cbor decode "$W/out" 2>/dev/null | grep stats | tail -1 >"$W/stats"
	jq -e '.counters["conns.unauth"] == 0 and
	    .counters["conns.hello_timeouts"] >= 1' "$W/stats"
}

@test "surface: a recorded hello sent again does not take the forwarder's name" {
	keys
	start_bind --keys "$W/ring"
	# The forwarder's session goes through a recording relay.
	rport=$(free_port)
	socat -r "$W/rec" "TCP-LISTEN:$rport,bind=127.0.0.1,reuseaddr" \
	    "TCP:127.0.0.1:$port" &
	PIDS="$PIDS $!"
	wait_for 50 sh -c "ss -ltn | grep -q ':$rport '"
	bind_fwdsim -c "tcp:127.0.0.1:$rport" -n IF-1 -k "$W/if1.psk" -t 30 \
	    -x 100 >"$W/if" &
	PIDS="$PIDS $!"
	wait_for 50 grep -q "IF-1 connected" "$W/err"
	wait_for 50 test -s "$W/rec"
	# The recording (its hello first) sent again on a new connection,
	# within the window.
	socat -u "OPEN:$W/rec" "TCP:127.0.0.1:$port"
	wait_for 50 grep -q "event=auth-refused fwd=IF-1 reason=\"hello of" \
	    "$W/err"
	grep "a replay" "$W/err"
	! grep -q "IF-1 reconnected" "$W/err" || false
	! grep -q "IF-1 disconnected" "$W/err" || false
	# After a restart too: the hello was signed before it.
	kill "$BPID"
	wait "$BPID" || true
	exec 7>&-
	rm -f "$W/fifo"
	start_bind --keys "$W/ring"
	socat -u "OPEN:$W/rec" "TCP:127.0.0.1:$port"
	wait_for 50 grep -q "not after .* (the start of this process)" "$W/err"
	! grep -q "IF-1 connected" "$W/err" || false
	kill -USR1 "$BPID"
	wait_for 50 sh -c "cats-cbor decode '$W/out' | grep -q stats"
	cats-cbor decode "$W/out" | grep stats | jq -e \
	    '.counters["hello.replayed"] == 1'
	# A fresh hello from the forwarder is taken.
	bind_fwdsim -c "tcp:127.0.0.1:$port" -n IF-1 -k "$W/if1.psk" -t 5 \
	    -x 1 >"$W/if2"
	grep -q '"event":"hello"' "$W/if2"
}

@test "surface: 2,000 idle connections to cats-select under a 1,024 limit; a request still answered" {
	[ "$(ulimit -Hn)" -ge 2100 ] || skip "the flood needs 2,100 descriptors"
	SEL="$DATA/select"
	grep '"type":"service"' "$SEL/base.jsonl" >"$W/svc.jsonl"
	grep '"type":"metric"' "$SEL/base.jsonl" >"$W/met.jsonl"
	grep '"type":"net"' "$SEL/base.jsonl" >"$W/net.jsonl"
	port=$(free_port)
	sh -c 'ulimit -n 1024 && exec "$@"' sh cats-select --replay --no-auth \
	    --services "$W/svc.jsonl" --metrics "$W/met.jsonl" \
	    --net "$W/net.jsonl" --listen "tcp:127.0.0.1:$port" </dev/null \
	    >"$W/out" 2>"$W/err" &
	SPID=$!
	PIDS="$PIDS $SPID"
	wait_for 50 socat -u /dev/null "TCP:127.0.0.1:$port"
	python3 "$W/flood.py" "$port" 2000 20 >"$W/flood" &
	PIDS="$PIDS $!"
	wait_for 150 grep -q connected "$W/flood"
	quiet_cpu "$SPID"
	head -1 "$SEL/cases/min-latency.jsonl" |
	    select_client -t "tcp:127.0.0.1:$port" -w 100
	wait_for 50 sh -c "cats-cbor decode '$W/out' | grep -q path-req"
	[ "$(wc -c <"$W/err")" -lt 20000 ]
	kill -0 "$SPID"
}

# cats-select with --keys on tcp:, its forwarder port in $port.
start_select() {
	port=$(free_port)
	cats-select --keys "$W/ring" --listen "tcp:127.0.0.1:$port" "$@" \
	    </dev/null >"$W/out" 2>"$W/err" &
	SPID=$!
	PIDS="$PIDS $SPID"
	wait_for 50 sh -c "ss -ltn | grep -q ':$port '"
}

select_stats() {
	kill -USR1 "$SPID"
	wait_for 50 sh -c "[ \$(cats-cbor decode '$W/out' | grep -c stats) -ge $1 ]"
	cats-cbor decode "$W/out" | grep stats | tail -1
}

@test "surface: cats-select closes a mute forwarder connection at the hello deadline, keeps one that said hello" {
	keys
	# The deadline from the configuration file (hello-timeout, as
	# --hello-timeout; 5 s without either).
	printf 'hello-timeout = 1500ms\n' >"$W/sel.conf"
	start_select --config "$W/sel.conf"
	# A forwarder says its signed hello, then nothing for 5 s.
	bind_fwdsim -c "tcp:127.0.0.1:$port" -n IF-1 -k "$W/if1.psk" -t 5 \
	    -x 100 >"$W/if" &
	FPID=$!
	PIDS="$PIDS $FPID"
	# A mute connection that never says hello.
	python3 "$W/flood.py" "$port" 1 5 >"$W/flood" &
	PIDS="$PIDS $!"
	wait_for 50 grep -q "connected 1" "$W/flood"
	wait_for 100 grep -q "not authenticated within 1500 ms, closed" "$W/err"
	select_stats 1 >"$W/stats"
	cat "$W/stats"
	jq -e '.counters.connections_hello_timeouts == 1 and
	    .counters.hellos == 1 and .counters.connections == 1' "$W/stats"
	# The forwarder is still connected: its own -t ends it, not us.
	kill -0 "$FPID"
}

@test "surface: cats-select refuses a hello of another key, unsigned, or replayed, audited and counted" {
	keys
	start_select
	# Signed by EF-2's key, naming IF-1.
	bind_fwdsim -c "tcp:127.0.0.1:$port" -n IF-1 -k "$W/ef2.psk" -t 3 \
	    -x 100 >"$W/bad" || true
	wait_for 50 grep -q 'event=hello-refused fwd=IF-1 .*the key of EF-2 speaks for IF-1' "$W/err"
	# No MAC at all.
	bind_fwdsim -c "tcp:127.0.0.1:$port" -n IF-1 -t 3 -x 100 \
	    >"$W/nomac" || true
	wait_for 50 grep -q 'event=hello-refused fwd=IF-1 .*carries no MAC' "$W/err"
	# A hello recorded on the wire and sent again on a new connection.
	rport=$(free_port)
	socat -r "$W/rec" "TCP-LISTEN:$rport,bind=127.0.0.1,reuseaddr" \
	    "TCP:127.0.0.1:$port" &
	PIDS="$PIDS $!"
	wait_for 50 sh -c "ss -ltn | grep -q ':$rport '"
	bind_fwdsim -c "tcp:127.0.0.1:$rport" -n IF-1 -k "$W/if1.psk" -t 30 \
	    -x 100 >"$W/if" &
	PIDS="$PIDS $!"
	wait_for 50 test -s "$W/rec"
	socat -u "OPEN:$W/rec" "TCP:127.0.0.1:$port"
	wait_for 50 grep -q 'event=hello-refused fwd=IF-1 .*a replay' "$W/err"
	select_stats 1 >"$W/stats"
	cat "$W/stats"
	jq -e '.counters.hello_refused == 3 and .counters.hello_replayed == 1
	    and .counters.hellos == 1' "$W/stats"
}

@test "surface: --hello-timeout on cats-pce's and cats-sma's stream listeners and cats-fwd's steer listener: a quiet connection is closed at the deadline, a working one is not" {
	# cats-pce: the working session sends a path request.
	port=$(free_port)
	printf '{"type":"path-req","txn":1,"ts":1000,"headend":"IF-1","endpoint":"EF-2","dataplane":"srmpls","constraints":{},"decision":{"cs_id":"S1","csci_id":"c1","locator":"198.51.100.21","egress":"EF-2","ts":1000}}\n' |
	    cats-cbor encode >"$W/req.cbor"
	cats-pce -t "$DATA/pce/lab.json" --insecure --listen "tcp:127.0.0.1:$port" \
	    --hello-timeout 1500ms 2>"$W/pce.err" &
	PIDS="$PIDS $!"
	wait_for 50 socat -u /dev/null "TCP:127.0.0.1:$port"
	hold "tcp:$port" "$W/req.cbor" >"$W/pce.out"
	cat "$W/pce.out"
	grep -qx "mute closed" "$W/pce.out"
	grep -qx "working open" "$W/pce.out"
	grep -q "session connection from 127.0.0.1:[0-9]*: not authenticated within 1500 ms, closed" "$W/pce.err"
	# cats-sma: the working connection sends an SCI report.
	port=$(free_port)
	printf 'id = s\naudit = none\n[auth]\nmode = none\nskew = 0\n' >"$W/sma.conf"
	cats-sci -1 -c S1 -s 10.0.0.1:80 >"$W/rep.cbor"
	cats-sma -c "$W/sma.conf" -l "tcp:127.0.0.1:$port" -t file:/dev/null \
	    --hello-timeout 1s 2>"$W/sma.err" &
	PIDS="$PIDS $!"
	wait_for 50 socat -u /dev/null "TCP:127.0.0.1:$port"
	hold "tcp:$port" "$W/rep.cbor" >"$W/sma.out"
	cat "$W/sma.out"
	grep -qx "mute closed" "$W/sma.out"
	grep -qx "working open" "$W/sma.out"
	grep -q "stream connection from 127.0.0.1:[0-9]*: not authenticated within 1000 ms, closed" "$W/sma.err"
	# Bad values are refused by the one parser, as cats-select's.
	run cats-pce -t "$DATA/pce/lab.json" --insecure \
	    --listen "tcp:127.0.0.1:$port" --hello-timeout 50ms
	[ "$status" -eq 2 ]
	[[ "$output" == *"--hello-timeout"*"100ms to 5m"* ]]
	# cats-fwd (in a namespace of its own, its ports TUN devices): the
	# working connection sends a signed steer record.
	need_root
	NS=cats-hello-$$
	ip netns add "$NS"
	cats-key psk -n SMA-1 -o "$W/sma.psk" >/dev/null
	chmod 600 "$W/sma.psk"
	printf '{"type":"steer","op":"end","sma_id":"SMA-1","epoch":7,"seq":1,"ts":%s,"egress":"EF-2","cs_id":"S1","from":"A","from_locator":"198.51.100.11","reason":"recovered"}\n' \
	    "$(date +%s%3N)" | cats-cbor encode | pce-sign -k "$W/sma.psk" >"$W/steer.cbor"
	ip netns exec "$NS" cats-fwd --id EF-2 --core tun:hc0 --site tun:hs0 \
	    --steer "unix:$W/steer.sock" --steer-keys "$W/sma.psk" \
	    --hello-timeout 1s 2>"$W/fwd.err" &
	PIDS="$PIDS $!"
	wait_for 50 test -S "$W/steer.sock"
	hold "unix:$W/steer.sock" "$W/steer.cbor" >"$W/fwd.out"
	cat "$W/fwd.out"
	grep -qx "mute closed" "$W/fwd.out"
	grep -qx "working open" "$W/fwd.out"
	grep -q "steer connection from local: not authenticated within 1000 ms, closed" "$W/fwd.err"
	grep -q "event=steer-end sma=SMA-1 epoch=7 seq=1" "$W/fwd.err"
}
