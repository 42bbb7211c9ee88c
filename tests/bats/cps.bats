#!/usr/bin/env bats
# cats-cps: the C-PS as one supervised service (man/cats-cps.1).

load helper

setup() {
	T=$(mktemp -d)
	EX=$TOP/examples
}

teardown() {
	if [ -f "$T/cps.pid" ]; then
		kill "$(cat "$T/cps.pid")" 2>/dev/null
		wait "$(cat "$T/cps.pid")" 2>/dev/null
	fi
	[ -f "$T/hold.pid" ] && kill "$(cat "$T/hold.pid")" 2>/dev/null
	rm -rf "$T"
}

# The live service of these tests: select with a forwarder listener (no
# auth), pce, bind with no forwarders; control input on a fifo held open.
start_live() {
	: "${TOPO:=$EX/topology.json}"
	sh "$EX/nst-from-tedb.sh" "$TOPO" IF-1 EF-1 EF-2 >"$T/nst.jsonl"
	cat >"$T/cps.conf" <<EOF
id = cps-test
stats-to = file:$T/stats.cbor
textfile = $T/cps.prom
[select]
no-auth =
services = $EX/services.jsonl
net = $T/nst.jsonl
listen = unix:$T/select.sock
state = $T/select.state
[pce]
t = $TOPO
[bind]
commit = ${COMMIT:-none}
listen = unix:$T/bind.sock
${BIND_EXTRA:-}
EOF
	mkfifo "$T/in"
	sleep 1000 >"$T/in" &
	echo $! >"$T/hold.pid"
	cats-cps -c "$T/cps.conf" "$@" <"$T/in" >"$T/out.cbor" 2>"$T/err" &
	echo $! >"$T/cps.pid"
	wait_for 50 test -S "$T/select.sock"
	wait_for 50 test -S "$T/bind.sock"
}

# A fresh metric advertisement (site1-a healthy) and a forwarder's
# request (transaction $1) to the service: helper.bash's.
metric() { s1_metric; }
request() { s1_request "unix:$T/select.sock" "$1"; }

# (slurped: jq -e alone answers for the last record only)
out_has() { cats-cbor decode "$T/out.cbor" 2>/dev/null | jq -se "[.[] | $1] | length > 0" >/dev/null; }
bound() { out_has "select(.type == \"binding\" and .op == \"install\" and .txn == $1)"; }
stage_pid() { pgrep -P "$(cat "$T/cps.pid")" -x "cats-$1"; }
# The last stats record of the service satisfies jq filter $1; false while
# there is none (jq -e alone exits 0 on no input: a check of an empty
# file passed).
stats_has() {
	cats-cbor decode "$T/stats.cbor" 2>/dev/null |
	    jq -se "length > 0 and (last | $1)" >/dev/null
}

@test "cats-cps --help prints the synopsis of the man page" {
	check_synopsis cats-cps
	run cats-cps --version
	[ "$status" -eq 0 ]
	[[ "$output" == "cats-cps (cats) "* ]]
}

@test "cats-cps: the debug recording through the service equals the three filters' pipeline" {
	cd "$EX"
	cat >"$T/replay.conf" <<EOF
[select]
replay =
no-auth =
[pce]
t = topology.json
replay =
[bind]
replay =
commit = none
q =
EOF
	input() { cat services.jsonl debug/net.jsonl debug/metrics.jsonl debug/requests.jsonl |
	    jq -sc 'sort_by(.ts // 0)[]' | cats-cbor encode; }
	input | cats-cps -q -c "$T/replay.conf" | cats-cbor decode >"$T/cps.jsonl"
	input | cats-select --replay --no-auth | cats-pce -t topology.json --replay |
	    cats-bind --replay --commit none -q | cats-cbor decode >"$T/pipe.jsonl"
	[ -s "$T/cps.jsonl" ]
	diff "$T/pipe.jsonl" "$T/cps.jsonl"
}

@test "cats-cps: a configuration refused, a stage's option refused: exit 78, 2" {
	printf '[nosuch]\nx = 1\n' >"$T/bad.conf"
	run cats-cps -c "$T/bad.conf" </dev/null
	[ "$status" -eq 78 ]
	[[ "$output" == *"bad.conf:2: x: unknown section [nosuch]"* ]]
	printf '[pce]\nno-such-option = 1\n' >"$T/bad2.conf"
	run cats-cps -c "$T/bad2.conf" </dev/null
	[ "$status" -eq 2 ]
	[[ "$output" == *"stage pce refused to start (exit 2)"* ]]
}

@test "cats-cps: requests bound; a stage killed is restarted within a second, counted with its cause" {
	start_live
	metric >"$T/in"
	request 1
	wait_for 30 bound 1
	# The CST is in cats-select's state file within a second or so.
	wait_for 30 test -s "$T/select.state"
	for s in pce bind select; do
		p=$(stage_pid $s)
		kill -9 "$p"
		wait_for 20 sh -c "pgrep -P $(cat "$T/cps.pid") -x cats-$s | grep -vx $p"
	done
	grep -q "stage pce (pid [0-9]*) killed by signal 9" "$T/err"
	# At once (0 ms) if it had run 5 s, which a loaded machine takes to
	# get here; else after the first backoff (100 ms).
	grep -qE "stage select: restart 1 in (0|100) ms" "$T/err"
	# The restarted selector has its CST back from its state file: the
	# first request after it listens again is bound, no advertisement came.
	wait_for 30 grep -q "1 CST entries restored" "$T/err"
	wait_for 30 test -S "$T/select.sock"
	request 2
	wait_for 30 bound 2
	kill -USR1 "$(cat "$T/cps.pid")"
	wait_for 30 grep -q 'select_restarts_total{cps_id="cps-test"} 1' "$T/cps.prom"
	grep -q 'pce_restarts_total{cps_id="cps-test"} 1' "$T/cps.prom"
	grep -q 'pce_last_exit{cps_id="cps-test"} 137' "$T/cps.prom"
	stats_has '.tool == "cats-cps" and .counters["bind.restarts"] == 1 and
		.counters["bind.in.records"] >= 1'
	# SIGTERM: every stage stopped, exit 0.
	kill "$(cat "$T/cps.pid")"
	wait "$(cat "$T/cps.pid")"
	rm -f "$T/cps.pid"
	! pgrep -f "cats-pce -t $EX/topology.json" -P $$ >/dev/null || false
}

@test "cats-cps: garbage and unauthenticated records on its sockets and input are refused; it keeps serving" {
	start_live
	metric >"$T/in"
	head -c 300 /dev/urandom >"$T/in"
	printf '\xa1\x64type\x67request' | select_client -t "unix:$T/select.sock" 2>/dev/null || true
	head -c 500 /dev/urandom | python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read())' "$T/bind.sock" || true
	metric >"$T/in"
	request 7
	wait_for 30 bound 7
	kill -0 "$(cat "$T/cps.pid")"
	[ "$(grep -c 'restart' "$T/err")" = 0 ]
}

@test "cats-cps --standby starts no stage; SIGTERM ends it with 0" {
	cats-cps --standby </dev/null 2>"$T/err" &
	p=$!
	# Up and serving (the event), and no stage under it.
	wait_on $p grep -q "serving as cps (standby)" "$T/err"
	! pgrep -P $p >/dev/null || false
	kill $p
	wait $p
}

# cats-select --state alone: a fresh entry survives a restart fresh, one
# that expired meanwhile comes back STALE, never fresh.
@test "cats-select --state: the CST across a restart, nothing expired resurrected" {
	now=$(date +%s%3N)
	jq -nc --argjson now "$now" '{type: "metric", op: "full",
	    sma_id: "sma-site1", epoch: 1, seq: 1, ts: $now, site: "site1",
	    egress: "EF-1", part: 1, parts: 1, entries: [
	    {csci_id: "198.51.100.11:80", cs_id: "S1", health: "HEALTHY",
	     state: "HEALTHY", gas: 100, comp_time_ms: 3, gen: 1, ts: $now,
	     locator: "198.51.100.11", port: 80, ttl_ms: 600000},
	    {csci_id: "198.51.100.12:80", cs_id: "S1", health: "HEALTHY",
	     state: "HEALTHY", gas: 100, comp_time_ms: 5, gen: 1, ts: $now,
	     locator: "198.51.100.12", port: 80, ttl_ms: 1500}]}' |
	    cats-cbor encode >"$T/met.cbor"
	sel() {
		rm -f "$T/s.sock"
		cats-select --no-auth --services "$EX/services.jsonl" \
		    --listen "unix:$T/s.sock" --state "$T/state" \
		    --stats-to "file:$T/dump$1.cbor" <"$2" 2>>"$T/sel.err" &
		echo $! >"$T/sel.pid"
		wait_for 50 test -S "$T/s.sock"
	}
	dump() {
		kill -USR2 "$(cat "$T/sel.pid")"
		# The dump is whole when its metric record decodes.
		wait_for 50 sh -c "cats-cbor decode '$T/dump$1.cbor' |
		    jq -e 'select(.type == \"metric\")' >/dev/null" 2>/dev/null
		cats-cbor decode "$T/dump$1.cbor" | jq -r 'select(.type == "metric") |
		    .entries[] | "\(.csci_id) \(.state) \(.ttl_ms > 0)"'
	}
	sel 1 "$T/met.cbor"
	[ "$(dump 1 | sort)" = "198.51.100.11:80 HEALTHY true
198.51.100.12:80 HEALTHY true" ]
	kill "$(cat "$T/sel.pid")"
	wait "$(cat "$T/sel.pid")"
	[ -s "$T/state" ] && [ ! -e "$T/state.tmp" ]
	# Past the second entry's lifetime.
	while [ "$(date +%s%3N)" -lt $((now + 1600)) ]; do sleep 0.1; done
	sel 2 /dev/null
	wait_for 50 grep -q "state $T/state: 2 CST entries restored" "$T/sel.err"
	[ "$(dump 2 | sort)" = "198.51.100.11:80 HEALTHY true
198.51.100.12:80 STALE false" ]
	kill "$(cat "$T/sel.pid")"
	wait "$(cat "$T/sel.pid")"
	# A state file that is garbage: said, and the run goes on empty.
	head -c 200 /dev/urandom >"$T/state"
	sel 3 /dev/null
	wait_for 50 grep -q "refused in part; going on" "$T/sel.err"
	kill "$(cat "$T/sel.pid")"
	wait "$(cat "$T/sel.pid")"
}

# One stats record (and textfile) for the whole service: the stages'
# counters, cats-pce's too, and 001's operator measurements (new-flow
# selection rate, PCE request rate, installation and control-channel
# latency, pending, repairs done and failed).
@test "cats-cps: one stats record and textfile hold every stage's counters and 001's measurements" {
	COMMIT=both start_live
	bind_fwdsim -c "unix:$T/bind.sock" -n EF-1 -t 20 >"$T/ef1.jsonl" &
	s1=$!
	bind_fwdsim -c "unix:$T/bind.sock" -n IF-1 -t 20 >"$T/if1.jsonl" &
	s2=$!
	wait_for 30 grep -q "forwarder IF-1 connected" "$T/err"
	wait_for 30 grep -q "forwarder EF-1 connected" "$T/err"
	metric >"$T/in"
	for t in 1 2 3; do request $t; done
	wait_for 30 bound 3
	last() { cats-cbor decode "$T/stats.cbor" | tail -1; }
	kill -USR1 "$(cat "$T/cps.pid")"
	wait_for 30 stats_has '.counters["pce.requests"] == 3 and
		.counters["bind.activated"] == 3'
	stats_has '.tool == "cats-cps" and (.counters |
	    .["select.decisions"] == 3 and has("select.decision_rate") and
	    has("pce.request_rate") and .["pce.ok"] == 3 and
	    .["bind.activation.p50_us"] > 0 and
	    .["bind.activation.p99_us"] >= .["bind.activation.p50_us"] and
	    .["bind.control.p50_us"] > 0 and .["bind.pending"] == 0 and
	    .["bind.repaired"] == 0 and .["bind.fail.repair-failed"] == 0 and
	    .["pce.waiting_bytes"] == 0)'
	# Every record from a stage came wrapped, framed by one head: none
	# walked (and none decoded: the stages decode them, once).
	stats_has '.counters | .["select.records"] > 0 and
	    .["pce.records"] > 0 and .["bind.records"] > 0 and
	    .["select.records_walked"] == 0 and .["pce.records_walked"] == 0 and
	    .["bind.records_walked"] == 0'
	# The textfile is the text of /metrics: the stages' values typed as
	# their records say, every family with its HELP and TYPE.
	wait_for 30 grep -q '^cats_cps_pce_requests_total{cps_id="cps-test"} 3$' \
	    "$T/cps.prom"
	grep -q '^# TYPE cats_cps_bind_activation_p99_seconds gauge$' \
	    "$T/cps.prom"
	grep -q '^# TYPE cats_cps_bind_pending gauge$' "$T/cps.prom"
	grep -q '^# TYPE cats_cps_select_decisions_total counter$' "$T/cps.prom"
	run grep -c ' untyped$' "$T/cps.prom"
	[ "$output" = 0 ]
	[ "$(grep -c '^# HELP ' "$T/cps.prom")" = "$(grep -c '^# TYPE ' "$T/cps.prom")" ]
	promtool check metrics <"$T/cps.prom"
	# The rates are per second over the interval between records (whole
	# ones: 16 requests in one connection, so that a loaded machine
	# still makes one a second).
	for t in $(seq 4 19); do
		jq -nc --argjson now "$(date +%s%3N)" --argjson t "$t" '{type:
		    "request", txn: $t, ingress: "IF-1", ts: $now, gen: 1,
		    flow: {proto: 6, src: "192.0.2.10", sport: (40000 + $t),
		    dst: "203.0.113.100", dport: 80}, mode: "none", held: 1,
		    dataplane: "srv6", deadline: ($now + 1000)}'
	done | select_client -t "unix:$T/select.sock" -w 50
	wait_for 30 bound 19
	kill -USR1 "$(cat "$T/cps.pid")"
	wait_for 30 stats_has '.counters["pce.requests"] == 19'
	stats_has '.counters | .["pce.request_rate"] > 0 and
	    .["select.decision_rate"] > 0'
	last | jq -r '.counters | "# 19 flows: activation p50/p99 \(.["bind.activation.p50_us"])/\(.["bind.activation.p99_us"]) us, control \(.["bind.control.p50_us"])/\(.["bind.control.p99_us"]) us, \(.["pce.request_rate"]) requests/s"' >&3
	kill $s1 $s2
}

# The parent holds the stages' listen sockets: a stage killed does not
# refuse a connect; its restart is counted and logged with its cause.
@test "cats-cps: kill -9 of each stage while clients connect in a loop: no connect refused" {
	local ps pb pi pm
	ps=$(free_port); pb=$(free_port); pi=$(free_port); pm=$(free_port)
	cats-key psk -n SMA-1 -o "$T/sma.psk" >/dev/null
	sh "$EX/nst-from-tedb.sh" "$EX/topology.json" IF-1 EF-1 EF-2 >"$T/nst.jsonl"
	cat >"$T/cps.conf" <<EOF
stats-to = file:$T/stats.cbor
[select]
no-auth =
services = $EX/services.jsonl
net = $T/nst.jsonl
listen = tcp:127.0.0.1:$ps
listen = unix:$T/select.sock
ingest = http://127.0.0.1:$pi/
ingest-keys = $T/sma.psk
[pce]
t = $EX/topology.json
prometheus = tcp:127.0.0.1:$pm
[bind]
commit = none
listen = tcp:127.0.0.1:$pb
EOF
	cats-cps -c "$T/cps.conf" </dev/null >"$T/out.cbor" 2>"$T/err" &
	echo $! >"$T/cps.pid"
	wait_for 50 test -S "$T/select.sock"
	wait_for 50 grep -q "stage bind started" "$T/err"
	# Connects in a loop to the TCP listeners - the forwarders' of
	# cats-select and cats-bind, the C-SMA ingest, cats-pce's /metrics
	# (bash's /dev/tcp: no fork
	# per connect), each failure counted, until told to stop; the count so
	# far in connects.now after each round.
	connects() {
		local ok=0 bad=0
		while [ ! -e "$T/stop" ]; do
			for p in $ps $pb $pi $pm; do
				if { exec 3<>"/dev/tcp/127.0.0.1/$p"; } 2>/dev/null; then
					exec 3>&-
					ok=$((ok + 1))
				else
					bad=$((bad + 1))
				fi
			done
			echo "$ok $bad" >"$T/connects.now"
		done
		echo "$ok $bad" >"$T/connects"
	}
	connects &
	local cpid=$!
	for s in select bind pce; do
		p=$(stage_pid $s)
		kill -9 "$p"
		wait_for 50 grep -q "stage $s (pid $p) killed by signal 9" "$T/err"
		wait_for 50 sh -c "pgrep -P $(cat "$T/cps.pid") -x cats-$s | grep -vx $p"
	done
	# And 20 rounds after the last restart.
	n=$(cut -d' ' -f1 "$T/connects.now")
	wait_on "$cpid" sh -c "[ \$(cut -d' ' -f1 '$T/connects.now') -ge $((n + 80)) ]"
	touch "$T/stop"
	wait "$cpid"
	read -r ok bad <"$T/connects"
	echo "# connects: $ok made, $bad refused" >&3
	[ "$ok" -gt 100 ] && [ "$bad" -eq 0 ]
	# Counted with their causes (the log lines above), in the record.
	kill -USR1 "$(cat "$T/cps.pid")"
	wait_for 30 stats_has '.counters | .["select.restarts"] == 1 and
		.["bind.restarts"] == 1 and .["pce.restarts"] == 1 and
		.["select.last_exit"] == 137'
	# The restarted stages took the parent's sockets (no second bind).
	! grep -q "Address already in use" "$T/err" || false
	# A clean stop: the unix socket file removed with the service.
	kill "$(cat "$T/cps.pid")"
	wait "$(cat "$T/cps.pid")"
	rm -f "$T/cps.pid"
	[ ! -e "$T/select.sock" ]
}

# Privilege separation: the parent (root here) opens the listeners; the
# stages run as the configured user, with no new privileges.
@test "cats-cps: user = nobody: the stages run as nobody with no_new_privs, on the parent's sockets" {
	[ "$(id -u)" = 0 ] || skip "needs root"
	chmod 755 "$T"
	sh "$EX/nst-from-tedb.sh" "$EX/topology.json" IF-1 EF-1 EF-2 >"$T/nst.jsonl"
	chmod 644 "$T/nst.jsonl"
	cat >"$T/cps.conf" <<EOF
user = nobody
[select]
no-auth =
services = $EX/services.jsonl
net = $T/nst.jsonl
listen = unix:$T/select.sock
[pce]
t = $EX/topology.json
[bind]
commit = none
listen = unix:$T/bind.sock
EOF
	mkfifo "$T/in"
	sleep 1000 >"$T/in" &
	echo $! >"$T/hold.pid"
	cats-cps -c "$T/cps.conf" <"$T/in" >"$T/out.cbor" 2>"$T/err" &
	echo $! >"$T/cps.pid"
	wait_for 50 grep -q "serving 1 listeners" "$T/err"
	for s in select pce bind; do
		wait_for 50 stage_pid $s
		p=$(stage_pid $s)
		[ "$(awk '/^Uid:/ {print $2 $3}' /proc/$p/status)" = 6553465534 ]
		[ "$(awk '/^NoNewPrivs:/ {print $2}' /proc/$p/status)" = 1 ]
	done
	# Its socket files are the parent's (root's), and they serve.
	[ "$(stat -c %U "$T/select.sock")" = root ]
	metric >"$T/in"
	request 1
	wait_for 30 bound 1
	# An unknown user: refused before any stage starts.
	sed -i 's/^user = nobody$/user = no-such-user-cats/' "$T/cps.conf"
	run cats-cps -c "$T/cps.conf" </dev/null
	[ "$status" -eq 78 ]
	[[ "$output" == *"user no-such-user-cats: no such user"* ]]
}

# cats-bind's per-client binding limit is a key of its section.
@test "cats-cps: [bind] limit = client-bindings=N: the client's next flow fails closed, limit-client" {
	BIND_EXTRA="limit = client-bindings=2" start_live
	metric >"$T/in"
	for t in 1 2 3; do request $t; done
	# (jq -e answers for the last record only: the whole output slurped.)
	out() { cats-cbor decode "$T/out.cbor" 2>/dev/null | jq -se "$1" >/dev/null; }
	wait_for 30 out 'any(.[]; .type == "error" and .txn == 3 and
	    .code == "limit-client")'
	out '[.[] | select(.type == "binding" and .op == "install") | .txn] ==
	    [1, 2]'
}

# The loop closed: a forwarder's path-down makes cats-bind ask for a new
# path; cats-cps routes that request to cats-pce and its reply back to
# cats-bind, which refreshes the binding (same instance, a new version).
# In the linear pipeline the request would leave on cats-bind's output.
@test "cats-cps: a path-down's repair request reaches cats-pce, the reply comes back: the binding refreshed" {
	start_live
	sed -i 's/^commit = none$/commit = both/' "$T/cps.conf"
	kill "$(cat "$T/cps.pid")"
	wait "$(cat "$T/cps.pid")" || true
	rm -f "$T/select.sock" "$T/bind.sock"
	cats-cps -c "$T/cps.conf" <"$T/in" >"$T/out.cbor" 2>"$T/err" &
	echo $! >"$T/cps.pid"
	wait_for 50 test -S "$T/select.sock"
	wait_for 50 test -S "$T/bind.sock"
	bind_fwdsim -c "unix:$T/bind.sock" -n EF-1 -t 20 >"$T/ef1.jsonl" &
	s1=$!
	bind_fwdsim -c "unix:$T/bind.sock" -n IF-1 -t 20 -P 1 >"$T/if1.jsonl" &
	s2=$!
	wait_for 30 grep -q "forwarder IF-1 connected" "$T/err"
	wait_for 30 grep -q "forwarder EF-1 connected" "$T/err"
	metric >"$T/in"
	request 1
	refreshed() { jq -se 'any(.[]; .type == "binding" and .op == "refresh" and .id == 1 and .version >= 2)' "$T/if1.jsonl"; }
	wait_for 50 refreshed
	# The same instance, its path asked again of cats-pce.
	jq -se '[.[] | select(.type == "binding" and .id == 1)] |
	    (map(.csci_id) | unique | length) == 1' "$T/if1.jsonl"
	kill -USR1 "$(cat "$T/cps.pid")"
	wait_for 30 stats_has '.counters["repairs.routed"] == 1'
	stats_has '.counters["bind.repaired"] == 1'
	# No path request left on the service's output.
	! cats-cbor decode "$T/out.cbor" | jq -e 'select(.type == "path-req")' || false
	kill $s1 $s2
	kill "$(cat "$T/cps.pid")"
	wait "$(cat "$T/cps.pid")"
	rm -f "$T/cps.pid"
}

# A request of transaction $1 for S1 asking for SRv6, with the data planes
# its forwarder advertises ($2, a JSON array; "null": none, bound by its
# --dataplane).
dp_request() {
	jq -nc --argjson now "$(date +%s%3N)" --argjson t "$1" --argjson d "$2" \
	    '{type: "request", txn: $t, ingress: "IF-1", ts: $now, flow: {proto:
	    6, src: "192.0.2.10", sport: (40000 + $t), dst: "203.0.113.100",
	    dport: 80}, mode: "none", held: 1, dataplane: "srv6",
	    deadline: ($now + 2000)} + (if $d then {dataplanes: $d} else {} end)' |
	    select_client -t "unix:$T/select.sock" -w 50
}

@test "cats-cps: an SRv6 path to an egress that advertises no SRv6 is asked again in IP-in-IP, which both advertise; bound so; with --dataplane srv6 a path-capability naming the egress" {
	start_live
	bind_fwdsim -c "unix:$T/bind.sock" -n EF-1 -t 20 \
		-C egress,af4,af6,ip,ipip6 >"$T/ef1.jsonl" &
	s1=$!
	bind_fwdsim -c "unix:$T/bind.sock" -n IF-1 -t 20 \
		-C ingress,af4,af6,ip,ipip6,srv6,srv6-msd=16 >"$T/if1.jsonl" &
	s2=$!
	wait_for 30 grep -q "forwarder IF-1 connected" "$T/err"
	wait_for 30 grep -q "forwarder EF-1 connected" "$T/err"
	metric >"$T/in"
	dp_request 1 '["srv6","ipip","ip"]'
	# (commit none: the bindings and errors on the service's output)
	wait_for 50 out_has 'select(.type == "binding" and .op == "install" and .txn == 1 and .fwd.encap == "ipip" and .fwd.tunnel_dst == "2001:db8:2::1")'
	run out_has 'select(.type == "error" and .txn == 1)'
	[ "$status" -ne 0 ]
	# Bound by --dataplane (no dataplanes): a path failure naming the egress.
	dp_request 2 null
	wait_for 50 out_has 'select(.type == "error" and .txn == 2 and .code == "path-capability" and (.msg | contains("egress EF-1 does not advertise srv6")))'
	kill -USR1 "$(cat "$T/cps.pid")"
	wait_for 30 stats_has '.counters["bind.caps.reasks"] == 1'
	# The request asked again went to cats-pce, not to the output.
	run out_has 'select(.type == "path-req")'
	[ "$status" -ne 0 ]
	kill $s1 $s2
}

# examples/topology.json with a second way to EF-1: IF-1 ALT EF-1.
two_paths() {
	jq '.nodes += [{id: "ALT", name: "second core", router_id:
	    "2001:db8:fe::1", srv6_locator: "2001:db8:fe::/48", srv6_sid:
	    "2001:db8:fe::1", caps: ["ip", "srv6"]}] | .links += [{id:
	    "if1-alt", src: "IF-1", dst: "ALT", igp_metric: 20, delay_us: 900,
	    max_bw: 10000000000}, {id: "alt-ef1", src: "ALT", dst: "EF-1",
	    igp_metric: 20, delay_us: 1500, max_bw: 10000000000}]' \
	    "$EX/topology.json" >"$T/topo2.json"
}
link_down() {
	jq -nc --argjson now "$(date +%s%3N)" --arg s "$1" --arg d "$2" \
	    '{type: "net", scope: "link", ts: $now, src: $s, dst: $d,
	    up: false}' | cats-cbor encode
}

@test "cats-cps: a net record taking a link of a flow's path down: re-pathed, same instance; none left: repair-failed" {
	two_paths
	TOPO=$T/topo2.json start_live
	metric >"$T/in"
	request 1
	wait_for 30 bound 1
	p1=$(cats-cbor decode "$T/out.cbor" | jq -r 'select(.type == "binding"
	    and .id == 1) | .path_id')
	# cats-pce applies it first (the service's stages in a line), then
	# cats-bind asks it again for a path to the same egress.
	link_down CORE EF-1 >"$T/in"
	wait_for 50 out_has 'select(.type == "binding" and .op == "refresh" and
	    .id == 1 and .version == 2)'
	# The same instance, another path (its id is of the nodes it takes).
	out_has "select(.type == \"binding\" and .op == \"refresh\" and
	    .id == 1 and .path_id != $p1 and .csci_id == \"198.51.100.11:80\")"
	link_down ALT EF-1 >"$T/in"
	wait_for 50 out_has 'select(.type == "error" and .txn == 1 and .code ==
	    "repair-failed")'
	kill -USR1 "$(cat "$T/cps.pid")"
	wait_for 30 stats_has '.counters["repairs.routed"] == 2'
	stats_has '.counters |
	    .["bind.repaired"] == 1 and .["bind.net.repairs"] == 2 and
	    .["bind.fail.repair-failed"] == 1'
	! out_has 'select(.type == "path-req")' || false
}
