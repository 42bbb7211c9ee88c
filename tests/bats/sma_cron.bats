#!/usr/bin/env bats
# cats-sma --once --state: the cron-driven site agent across runs.
load helper

setup() {
	W="$BATS_TEST_TMPDIR"
	PIDS=()
	cd "$W"
	cat > sma.conf <<-'EOF'
	id = sma-cron
	site = site-a
	egress = EF-1
	[auth]
	mode = none
	[timing]
	interval = 10s
	confirm = 1
	[validate]
	healthy-after = 2
	EOF
	T=1700000000000
}

teardown() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}

# One report as JSON: csci seq ts interval_ms gas
rep() {
	printf '{"type":"sci-report","csci_id":"%s","cs_id":"ARS","seq":%s,"ts":%s,"health":"HEALTHY","gas":%s,"comp_time_ms":5,"interval_ms":%s}\n' \
	    "$1" "$2" "$3" "$5" "$4"
}

run_once() { # now, then the reports on stdin
	enc | cats-sma -c sma.conf --once --replay --now "$1" -T state \
	    2>> err | dec
}

@test "sma_cron: two runs: a fresh entry restored with its remaining TTL, a stale one withdrawn" {
	# Run 1 at T: A announces a 20 s interval (TTL 40 s), B 5 s (TTL 10 s).
	{ rep A 1 "$T" 20000 400; rep B 1 "$T" 5000 600; } |
	    run_once "$T" > out1
	[ -f state ]
	# No start snapshot in cron mode: the deltas of what was learned.
	jq -e -s 'length == 2 and all(.op == "delta") and .[0].epoch == 1 and
	    .[1].seq == 2' out1
	# Run 2, 15 s later, with no reports: B is past its TTL, A is not.
	: | run_once $((T + 15000)) > out2
	jq -e -s 'length == 1 and .[0].op == "withdraw" and
	    .[0].reason == "expired" and .[0].entries[0].csci_id == "B" and
	    .[0].seq == 3' out2
	grep -q 'state .*: 1 entries restored, 1 too old' err
	# Run 3: A reports again; its second HEALTHY report makes it HEALTHY
	# (the hysteresis count survived the runs).
	rep A 2 $((T + 30000)) 20000 400 | run_once $((T + 30000)) > out3
	jq -e -s 'length == 1 and .[0].op == "delta" and
	    .[0].entries[0].health == "HEALTHY" and .[0].entries[0].gas == 400
	    and .[0].seq == 4' out3
	# Run 4 at +70 s: A (last report +30 s, TTL 40 s) still fresh (its
	# last millisecond is within the TTL).
	: | run_once $((T + 70000)) > out4
	[ ! -s out4 ]
	# Run 5 at +70.001 s: its TTL has run out in the state file: withdrawn.
	: | run_once $((T + 70001)) > out5
	jq -e -s 'length == 1 and .[0].op == "withdraw" and
	    .[0].entries[0].csci_id == "A"' out5
	# The epoch stayed, the sequence went on.
	jq -e -s 'all(.epoch == 1)' out1 out2 out3 out5
}

@test "sma_cron: a stale saved entry that reports again is not withdrawn" {
	rep B 1 "$T" 5000 600 | run_once "$T" > out1
	rep B 2 $((T + 15000)) 5000 700 | run_once $((T + 15000)) > out2
	jq -e -s 'length == 1 and .[0].op == "delta" and
	    .[0].entries[0].gas == 0 and .[0].entries[0].gen == 2' out2
	! grep -q withdraw out2 || false
}

@test "sma_cron: a replayed report is refused across runs" {
	rep A 5 "$T" 20000 400 | run_once "$T" > out1
	rep A 5 $((T + 1000)) 20000 999 | run_once $((T + 1000)) > out2
	[ ! -s out2 ]
	grep -q 'seq: duplicate report' err
}

@test "sma_cron: the state file is replaced atomically and is private" {
	rep A 1 "$T" 20000 400 | run_once "$T" > /dev/null
	[ "$(stat -c %a state)" = 600 ]
	[ ! -e state.tmp ]
	dec < state | jq -e -s '.[0].type == "metric" and .[0].op == "full"
	    and .[0].entries[0].csci_id == "A" and .[0].entries[0].streak == 1'
	# A corrupt state file is refused, not silently dropped.
	printf 'garbage' > state
	run cats-sma -c sma.conf --once --replay --now "$T" -T state < /dev/null
	[ "$status" -eq 66 ]
}

@test "sma_cron: real pulls from configured SCIs, then exit" {
	cats-key gen -n issuer -o iss >/dev/null
	cats-key token -k iss.key -s sci-A -c ARS -o A.tok
	cats-key token -k iss.key -s sci-B -c ARS -o B.tok
	Q=$(free_port)
	R=$(free_port)
	cats-sci -s sci-A -c ARS -K A.tok -g 111 -C 5 -l "http://127.0.0.1:$Q/" &
	PIDS+=($!)
	cats-sci -s sci-B -c ARS -K B.tok -g 222 -C 5 -l "http://127.0.0.1:$R/" &
	PIDS+=($!)
	wait_for 50 curl -sf -o /dev/null "http://127.0.0.1:$Q/report"
	wait_for 50 curl -sf -o /dev/null "http://127.0.0.1:$R/report"
	D=$(free_port)
	cat > pull.conf <<-EOF
	id = sma-cron
	[auth]
	issuers = $W/iss.pub
	[sci "sci-A"]
	pull = http://127.0.0.1:$Q/report
	[sci "sci-B"]
	pull = http://127.0.0.1:$R/report
	[sci "sci-dead"]
	pull = http://127.0.0.1:$D/report
	[http]
	pull-timeout = 2s
	EOF
	run cats-sma -c pull.conf --once -T pstate -t "file:$W/pout"
	[ "$status" -eq 0 ]
	[[ "$output" == *"pull sci-dead: "* ]]
	dec < pout | jq -e -s '[.[] | .entries[] | .csci_id] | sort ==
	    ["sci-A", "sci-B"]'
	# Second run: both restored (fresh), pulled again: confirmed.
	run cats-sma -c pull.conf --once -T pstate -t "file:$W/pout2"
	[ "$status" -eq 0 ]
	[[ "$output" == *"2 entries restored, 0 too old"* ]]
	dec < pout2 | jq -e -s '[.[] | .entries[] | select(.state ==
	    "HEALTHY")] | length == 2'
}

@test "sma_cron: stdin at /dev/null (as under cron) ends the run" {
	rep A 1 "$T" 20000 400 | run_once "$T" > /dev/null
	run timeout 10 cats-sma -c sma.conf --once --replay --now $((T + 1000)) \
	    -T state < /dev/null
	[ "$status" -eq 0 ]
	run timeout 10 cats-sma -c sma.conf --replay < /dev/null
	[ "$status" -eq 0 ]
}
