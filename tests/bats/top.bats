#!/usr/bin/env bats
# cats-top: the live look at a running daemon's /metrics (man/cats-top.1),
# in batch mode against a real cats-select, and its refusals of bad input.
load helper

setup() {
	W="$BATS_TEST_TMPDIR"
	PIDS=()
}

teardown() {
	stop_pids
}

# cats-select with one healthy instance, its forwarder listener and
# /metrics; MPORT the metrics port.
start_select() {
	local EX=$TOP/examples
	MPORT=$(free_port)
	sh "$EX/nst-from-tedb.sh" "$EX/topology.json" IF-1 EF-1 EF-2 >"$W/nst.jsonl"
	mkfifo "$W/in"
	cats-select --no-auth --services "$EX/services.jsonl" \
	    --net "$W/nst.jsonl" --listen "unix:$W/sel.sock" \
	    --prometheus "tcp:127.0.0.1:$MPORT" <"$W/in" >"$W/out" 2>"$W/err" &
	PIDS+=($!)
	exec 7>"$W/in"
	s1_metric >&7
	wait_for 50 test -S "$W/sel.sock"
	wait_for 50 curl -sf -o /dev/null "http://127.0.0.1:$MPORT/metrics"
}

request() { s1_request "unix:$W/sel.sock" "$1"; }

@test "top: --help is the man page synopsis; --version; usage errors" {
	check_synopsis cats-top
	run cats-top --version
	[ "$status" -eq 0 ]
	[[ "$output" == "cats-top (cats) "* ]]
	run cats-top
	[ "$status" -eq 2 ]
	[[ "$output" == "cats-top: a source is needed"* ]]
	run cats-top -n 0 tcp:127.0.0.1:1
	[ "$status" -eq 2 ]
	run cats-top -d x tcp:127.0.0.1:1
	[ "$status" -eq 2 ]
	[[ "$output" == "cats-top: --delay: "* ]]
	run cats-top udp:127.0.0.1:1
	[ "$status" -eq 2 ]
}

@test "top: batch mode against cats-select: rates between two scrapes, state, latency" {
	start_select
	request 1
	request 2
	wait_for 50 sh -c "curl -sf http://127.0.0.1:$MPORT/metrics |
	    grep -q '^cats_select_decisions_total 2$'"
	cats-top -b -n 2 -d 0.2 "tcp:127.0.0.1:$MPORT" >"$W/top" 2>"$W/top.err"
	cat "$W/top"
	[ ! -s "$W/top.err" ]
	# Two screens, plain text (no terminal codes), a blank line between.
	[ "$(grep -c '^cats-select ' "$W/top")" -eq 2 ]
	! grep -q $'\033' "$W/top" || false
	grep -Eq '^  decisions \(new flows\) +[0-9.]+ +2$' "$W/top"
	grep -Eq '^  requests +[0-9.]+ +2$' "$W/top"
	# The second screen's rate is over its interval: nothing moved.
	sed -n '/^$/,$p' "$W/top" | grep -Eq '^  decisions \(new flows\) +0\.0 +2$'
	grep -Eq '^  services +1$' "$W/top"
	# The first screen is over the process's life: two selections timed.
	sed '/^$/q' "$W/top" | grep -Eq '^  selection_seconds +[0-9.]+ +[0-9.]+(us|ms) '
	sed -n '/^$/,$p' "$W/top" | grep -Eq '^  selection_seconds +0\.0 +- +- '
}

@test "top: a restart between two scrapes is seen, and counted" {
	start_select
	cats-top -b -n 1 "tcp:127.0.0.1:$MPORT" | grep -q 'restarts 0'
	# Two scrapes of a textfile: the second one from a process started
	# later (start_time moved) is a restart.
	curl -sf "http://127.0.0.1:$MPORT/metrics" >"$W/a.prom"
	awk '$1 == "cats_select_start_time_seconds" { printf "%s %.3f\n", $1,
	    $2 + 5; next } { print }' "$W/a.prom" >"$W/b.prom"
	cp "$W/a.prom" "$W/cur.prom"
	( sleep 0.3; cp "$W/b.prom" "$W/cur.prom" ) &
	run cats-top -b -n 2 -d 0.6 "file:$W/cur.prom"
	[ "$status" -eq 0 ]
	[[ "${lines[*]}" == *"restarts 1"* ]]
}

@test "top: a body that is not metrics, a huge body, an unreachable endpoint: one line, exit 65 or 66" {
	local port
	port=$(free_port)
	# A real server's non-metrics answer: cats-sci's CBOR report.
	cats-sci -c svc -s sci-1 -g 5 -l "http://127.0.0.1:$port/" 2>/dev/null &
	PIDS+=($!)
	wait_for 50 curl -sf -o /dev/null "http://127.0.0.1:$port/report"
	run cats-top -b -n 1 "http://127.0.0.1:$port/report"
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "cats-top: http://127.0.0.1:$port/report: not Prometheus metrics: line 1: "* ]]
	run cats-top -b -n 1 "http://127.0.0.1:$port/nothing"
	[ "$status" -eq 66 ]
	[[ "$output" == *"HTTP status 404" ]]
	# Over --max-body: refused, not read whole.
	start_select
	run cats-top -b -n 1 --max-body 100 "tcp:127.0.0.1:$MPORT"
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"over 100 bytes"* ]]
	head -c 300000 /dev/zero | tr '\0' 'x' >"$W/big.prom"
	run cats-top -b -n 1 --max-body 200k "$W/big.prom"
	[ "$status" -eq 65 ]
	[[ "$output" == "cats-top: $W/big.prom: over 204800 bytes" ]]
	# Unreachable, missing.
	run cats-top -b -n 1 "tcp:127.0.0.1:1"
	[ "$status" -eq 66 ]
	[ "${#lines[@]}" -eq 1 ]
	run cats-top -b -n 1 "$W/none.prom"
	[ "$status" -eq 66 ]
	[[ "$output" == "cats-top: $W/none.prom: "* ]]
	# Binary, and a text that is almost metrics.
	head -c 4096 /dev/urandom >"$W/rand.prom"
	run cats-top -b -n 1 "$W/rand.prom"
	[ "$status" -eq 65 ]
	[ "${#lines[@]}" -eq 1 ]
	printf 'cats_x_total 1\ncats_x_y{a="b} 2\n' >"$W/bad.prom"
	run cats-top -b -n 1 "$W/bad.prom"
	[ "$status" -eq 65 ]
	[ "$output" = "cats-top: $W/bad.prom: not Prometheus metrics: line 2: an unterminated label value" ]
}

@test "top: a textfile (cats-sma's), and every counter with --all" {
	start_select
	curl -sf "http://127.0.0.1:$MPORT/metrics" >"$W/s.prom"
	run cats-top -b -a -n 1 "$W/s.prom"
	[ "$status" -eq 0 ]
	[[ "$output" == *"  bad_records_total "* ]]
	[[ "$output" == *"  cst_gen "* ]]
}

@test "top: SIGHUP does not stop it (it reads its TLS files again); SIGTERM ends it in 0" {
	local st=0 n
	cats-top -b -d 0.05 "$DATA/exit/top.prom" >"$W/out" 2>"$W/err" &
	PIDS+=($!)
	wait_for 50 grep -q '^RATES' "$W/out"
	kill -HUP "${PIDS[0]}"
	# Alive after the HUP: two more screens come.
	n=$(grep -c '^RATES' "$W/out" || true)
	wait_for 50 sh -c "[ \$(grep -c '^RATES' $W/out) -ge $((n + 2)) ]"
	kill -TERM "${PIDS[0]}"
	wait "${PIDS[0]}" || st=$?
	PIDS=()
	[ "$st" -eq 0 ]
	[ ! -s "$W/err" ]
}
