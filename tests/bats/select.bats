#!/usr/bin/env bats
# cats-select: the table of selection cases (tests/data/select/cases.txt),
# the offline filter, authentication, the daemon, counters and dumps.

load helper

# A tool that fails inside a pipeline fails the test (not only the last
# command of it).
set -o pipefail

SEL="$DATA/select"
T0=1764460800000

setup() {
	TMP=$(mktemp -d "${BATS_TMPDIR:-/tmp}/select.XXXXXX")
}

teardown() {
	if [ -n "${DPID:-}" ]; then
		kill "$DPID" 2>/dev/null || true
		wait "$DPID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}

# One output record per line as ok:CSCI / fb:CSCI / err:CODE / pass:TYPE.
summarize() {
	jq -r 'if .type == "path-req" then
		(if .decision.fallback then "fb:" else "ok:" end) + .decision.csci_id
	elif .type == "error" then "err:" + .code
	else "pass:" + .type end' "$1" | tr '\n' ' ' | sed 's/ $//'
}

# jq 1.6 -e misjudges filters that output nothing for some inputs: this is
# true when FILTER outputs something and only true.
jqtrue() {
	local got
	got=$(jq -r "$1" "${2:--}" | sort -u)
	[ "$got" = true ] || { echo "jq $1: ${got:-nothing}"; return 1; }
}

field() {
	# field NAME COLUMN: a column of the case's row in cases.txt
	grep "^$1 |" "$SEL/cases.txt" | cut -d'|' -f"$2" | sed 's/^ *//; s/ *$//'
}

run_case() {
	local name=$1 args status expect rc=0
	[ -f "$SEL/cases/$name.jsonl" ] || { echo "no fixture for $name"; return 1; }
	args=$(field "$name" 2)
	status=$(field "$name" 3)
	expect=$(field "$name" 4)
	cat "$SEL/base.jsonl" "$SEL/cases/$name.jsonl" | enc >"$TMP/in"
	# shellcheck disable=SC2086
	cats-select --replay --no-auth $args <"$TMP/in" >"$TMP/out.cbor" \
	    2>"$TMP/err" || rc=$?
	dec "$TMP/out.cbor" >"$TMP/out"
	if [ "$rc" != "$status" ]; then
		echo "cats-select exited $rc, not $status"
		cat "$TMP/err"
		return 1
	fi
	if [ "$expect" != "*" ]; then
		got=$(summarize "$TMP/out")
		if [ "$got" != "$expect" ]; then
			echo "expected: $expect"
			echo "got:      $got"
			cat "$TMP/err"
			return 1
		fi
	fi
	diff -u "$SEL/cases/$name.out.jsonl" "$TMP/out"
}

@test "select table: every case has a fixture, an expected output and a test" {
	local missing=0
	while IFS='|' read -r name _; do
		name=$(echo "$name" | sed 's/ *$//')
		case "$name" in ''|'#'*) continue ;; esac
		for f in "$SEL/cases/$name.jsonl" "$SEL/cases/$name.out.jsonl"; do
			[ -f "$f" ] || { echo "missing $f"; missing=1; }
		done
		grep -q "run_case $name; }" "$BATS_TEST_FILENAME" ||
		    { echo "no test for $name"; missing=1; }
	done <"$SEL/cases.txt"
	for f in "$SEL"/cases/*.jsonl; do
		n=$(basename "$f" .jsonl); n=${n%.out}
		grep -q "^$n |" "$SEL/cases.txt" || { echo "$n not in cases.txt"; missing=1; }
	done
	[ "$missing" = 0 ]
}

@test "select case: min-latency" { run_case min-latency; }
@test "select case: tie-gas" { run_case tie-gas; }
@test "select case: cheapest" { run_case cheapest; }
@test "select case: cheapest-tie" { run_case cheapest-tie; }
@test "select case: p2c-two" { run_case p2c-two; }
@test "select case: p2c-three" { run_case p2c-three; }
@test "select case: conflict" { run_case conflict; }
@test "select case: precedence-explicit" { run_case precedence-explicit; }
@test "select case: precedence-address" { run_case precedence-address; }
@test "select case: address-only" { run_case address-only; }
@test "select case: explicit-only" { run_case explicit-only; }
@test "select case: unresolved" { run_case unresolved; }
@test "select case: unknown-cs-id" { run_case unknown-cs-id; }
@test "select case: tenant-mismatch" { run_case tenant-mismatch; }
@test "select case: ambiguous" { run_case ambiguous; }
@test "select case: cst-expiry" { run_case cst-expiry; }
@test "select case: nst-expiry" { run_case nst-expiry; }
@test "select case: freshness-independent" { run_case freshness-independent; }
@test "select case: all-stale" { run_case all-stale; }
@test "select case: gas-zero" { run_case gas-zero; }
@test "select case: max-delay" { run_case max-delay; }
@test "select case: max-comp" { run_case max-comp; }
@test "select case: max-price" { run_case max-price; }
@test "select case: min-reputation" { run_case min-reputation; }
@test "select case: min-security" { run_case min-security; }
@test "select case: no-loosening" { run_case no-loosening; }
@test "select case: fallback-stale" { run_case fallback-stale; }
@test "select case: fallback-relax" { run_case fallback-relax; }
@test "select case: fallback-csci" { run_case fallback-csci; }
@test "select case: unauthorized-candidate" { run_case unauthorized-candidate; }
@test "select case: no-reachable" { run_case no-reachable; }
@test "select case: not-inferred" { run_case not-inferred; }
@test "select case: dataplane-mismatch" { run_case dataplane-mismatch; }
@test "select case: malformed" { run_case malformed; }
@test "select case: replay" { run_case replay; }
@test "select case: metric-ops" { run_case metric-ops; }
@test "select case: pass-through" { run_case pass-through; }
@test "select case: rate-limited" { run_case rate-limited; }
@test "select case: local-site" { run_case local-site; }
@test "select case: owner-refused" { run_case owner-refused; }
@test "select case: operator-release" { run_case operator-release; }
@test "select case: scope" { run_case scope; }

@test "select: every failing request closes the loop with txn, code, ingress and flow" {
	cat "$SEL/base.jsonl" "$SEL"/cases/{conflict,unknown-cs-id,tenant-mismatch,all-stale,gas-zero,no-reachable,dataplane-mismatch,fallback-relax}.jsonl |
	    enc | cats-select --replay --no-auth 2>/dev/null | dec >"$TMP/out"
	n=$(jq -c 'select(.type == "error")' "$TMP/out" | wc -l)
	[ "$n" -ge 10 ]
	bad=$(jq -c 'select(.type == "error" and (.txn == null or .code == null
	    or .ingress != "IF-1" or .flow.src == null or .stage != "cats-select"))' "$TMP/out")
	[ -z "$bad" ]
	# A failed selection never yields a path request without a destination.
	bad=$(jq -c 'select(.type == "path-req" and (.decision.locator == null
	    or .endpoint == null))' "$TMP/out")
	[ -z "$bad" ]
}

@test "select: the same input gives the same output; the seed drives p2c draws" {
	in="$TMP/in.cbor"
	cat "$SEL/base.jsonl" "$SEL/cases/p2c-three.jsonl" | enc >"$in"
	cats-select --replay --no-auth --seed 7 <"$in" | dec >"$TMP/a"
	cats-select --replay --no-auth --seed 7 <"$in" | dec >"$TMP/b"
	cmp "$TMP/a" "$TMP/b"
	differ=0
	for seed in 1 2 3 4 5; do
		cats-select --replay --no-auth --seed $seed <"$in" | dec >"$TMP/c"
		cmp -s "$TMP/a" "$TMP/c" || differ=1
	done
	[ "$differ" = 1 ]
	# p2c never picks C (highest latency) when both drawn include another.
	! summarize "$TMP/a" | grep -q 198.51.100.31 || false
}

@test "select: offline filter from files (JSON Lines and CBOR), requests on stdin" {
	grep '"type":"service"' "$SEL/base.jsonl" >"$TMP/svc.jsonl"
	grep '"type":"metric"' "$SEL/base.jsonl" | enc >"$TMP/met.cbor"
	grep '"type":"net"' "$SEL/base.jsonl" >"$TMP/net.jsonl"
	enc <"$SEL/cases/min-latency.jsonl" |
	    cats-select --replay --no-auth --services "$TMP/svc.jsonl" \
	    --metrics "$TMP/met.cbor" --net "$TMP/net.jsonl" | dec >"$TMP/out"
	diff -u "$SEL/cases/min-latency.out.jsonl" "$TMP/out"
}

@test "select: bad input records are counted, reported and do not stop the stream; --strict stops" {
	{ cat "$SEL/base.jsonl"; echo '{"type":"metric","op":"full"}';
	  cat "$SEL/cases/min-latency.jsonl"; } | enc >"$TMP/in"
	rc=0
	cats-select --replay --no-auth --stats-at-end <"$TMP/in" >"$TMP/out.cbor" \
	    2>"$TMP/err" || rc=$?
	[ "$rc" -eq 65 ]
	dec "$TMP/out.cbor" >"$TMP/out"
	grep -q 'input: record 8: sma_id: required field missing' "$TMP/err"
	[ "$(jq -r 'select(.type == "path-req") | .txn' "$TMP/out")" = 1001 ]
	[ "$(jq -r 'select(.type == "stats") | .counters.bad_records' "$TMP/out")" = 1 ]
	rc=0
	cats-select --replay --no-auth --strict <"$TMP/in" >"$TMP/out2" \
	    2>/dev/null || rc=$?
	[ "$rc" -eq 65 ]
	[ ! -s "$TMP/out2" ]
}

@test "select: counters by reason and the CST/NST dump as records" {
	cat "$SEL/base.jsonl" "$SEL/cases/replay.jsonl" | enc |
	    cats-select --replay --no-auth --stats-at-end 2>/dev/null | dec >"$TMP/out"
	s=$(jq -c 'select(.type == "stats") | .counters' "$TMP/out")
	[ "$(echo "$s" | jq .requests)" = 8 ]
	[ "$(echo "$s" | jq .decisions)" = 4 ]
	[ "$(echo "$s" | jq .errors)" = 4 ]
	[ "$(echo "$s" | jq .fail_replay)" = 2 ]
	[ "$(echo "$s" | jq .fail_stale_generation)" = 1 ]
	[ "$(echo "$s" | jq .fail_deadline_expired)" = 1 ]
	# decisions per second of replayed time: 4 in 40.001 s rounds to 0;
	# the rate is the count over the time since the last stats record.
	[ "$(echo "$s" | jq .decision_rate)" = 0 ]
	cat "$SEL/base.jsonl" "$SEL/cases/gas-zero.jsonl" | enc |
	    cats-select --replay --no-auth --stats-at-end --dump-at-end 2>/dev/null | dec >"$TMP/out"
	s=$(jq -c 'select(.type == "stats") | .counters' "$TMP/out")
	[ "$(echo "$s" | jq .decisions)" = 1 ]
	[ "$(echo "$s" | jq .fail_no_eligible_candidate)" = 1 ]
	[ "$(echo "$s" | jq .reject_gas_zero)" = 4 ]
	[ "$(echo "$s" | jq .cst_entries)" = 4 ]
	[ "$(echo "$s" | jq .metric_records)" = 6 ]
	# The dump: one full snapshot per C-SMA and site, and the paths.
	[ "$(jq -c 'select(.type == "metric")' "$TMP/out" | wc -l)" = 3 ]
	jqtrue 'select(.type == "metric" and .sma_id == "sma-2") |
	    .op == "full" and .egress == "EF-2" and .entries[0].gas == 0 and
	    .entries[0].csci_id == "198.51.100.21:443"' "$TMP/out"
	[ "$(jq -c 'select(.type == "net" and .scope == "path")' "$TMP/out" | wc -l)" = 3 ]
	jqtrue 'select(.type == "net" and .dst == "EF-2") | .delay_us == 4100 and .up' "$TMP/out"
	# The dump is valid input: it rebuilds the same table.
	jq -c 'select(.type == "metric" or .type == "net")' "$TMP/out" >"$TMP/dump.jsonl"
	{ grep '"type":"service"' "$SEL/base.jsonl"; cat "$TMP/dump.jsonl"; } | enc |
	    cats-select --replay --no-auth --dump-at-end 2>/dev/null | dec >"$TMP/out2"
	diff <(jq -c 'select(.type == "metric") | .entries' "$TMP/out") \
	    <(jq -c 'select(.type == "metric") | .entries' "$TMP/out2")
}

@test "select: --help is the man page synopsis, --version, usage errors" {
	run cats-select --help
	[ "$status" -eq 0 ]
	[ "${lines[0]%% *}" = "usage:" ]
	check_synopsis cats-select
	# Each option is described under OPTIONS (.B or .BI).
	# Read whole: a reader that quits early makes --help's write fail (74).
	cats-select --help >"$TMP/help.txt"
	sed '/^$/q' "$TMP/help.txt" | grep -o -- '--[a-z-]*' | sort -u >"$TMP/help"
	sed 's/\\-/-/g' "$TOP/man/cats-select.1" >"$TMP/page"
	for opt in $(cat "$TMP/help"); do
		grep -qE "^\\.BI? $opt( |\$)" "$TMP/page" ||
		    { echo "$opt is not described"; return 1; }
	done
	run cats-select --version
	[ "$status" -eq 0 ]
	[[ "$output" == "cats-select (cats) "* ]]
	run cats-select --policy nonsense
	[ "$status" -eq 2 ]
	run cats-select --services /nonexistent/file </dev/null
	[ "$status" -eq 66 ]
	echo '{"type":"service","cs_id":"S1","version":1,"policy":"fastest"}' >"$TMP/svc.jsonl"
	run cats-select --services "$TMP/svc.jsonl" </dev/null
	[ "$status" -eq 65 ]
	[[ "$output" == *"policy: unknown policy"* ]]
	printf 'precedence = sometimes\n' >"$TMP/conf"
	run cats-select --config "$TMP/conf" </dev/null
	[ "$status" -eq 78 ]
	[[ "$output" == *"conf:1: precedence"* ]]
}

# ---- authentication ----

mkkeys() {
	cats-key psk -n IF-1 -o "$TMP/if1.psk" >/dev/null
	cats-key psk -n IF-2 -o "$TMP/if2.psk" >/dev/null
	cat "$TMP/if1.psk" "$TMP/if2.psk" >"$TMP/ring"
	chmod 600 "$TMP/ring"
}

@test "select: MAC'd requests with per-forwarder keys; unsigned, wrong and borrowed MACs refused" {
	mkkeys
	req=$(head -1 "$SEL/cases/min-latency.jsonl")
	{
		cat "$SEL/base.jsonl" | enc
		echo "$req" | select_client -k "$TMP/if1.psk"
		echo "$req" | jq -c '.txn = 1002' | enc
		echo "$req" | jq -c '.txn = 1003' | select_client -x -k "$TMP/if1.psk"
		echo "$req" | jq -c '.txn = 1004' | select_client -k "$TMP/if2.psk"
		echo "$req" | jq -c '.txn = 1005 | .ingress = "IF-2"' | select_client -k "$TMP/if2.psk"
	} | cats-select --replay --keys "$TMP/ring" 2>"$TMP/err" | dec >"$TMP/out"
	[ "$(summarize "$TMP/out")" = "ok:198.51.100.21:443 err:unauthenticated err:unauthenticated err:unauthorized err:no-reachable-egress" ]
	# Errors for unauthenticated requests name no forwarder to notify.
	[ "$(jq -c 'select(.code == "unauthenticated") | .ingress' "$TMP/out" | sort -u)" = null ]
	jqtrue 'select(.txn == 1003) | .msg == "MAC does not verify"' "$TMP/out"
	grep -q 'event=request-refused txn=1004 ingress=IF-1 code=unauthorized' "$TMP/err"
	# Without keys nothing is accepted.
	echo "$req" | select_client -k "$TMP/if1.psk" | cats-select --replay 2>/dev/null | dec >"$TMP/out"
	[ "$(summarize "$TMP/out")" = "err:unauthenticated" ]
	# A keyring readable by others is refused.
	chmod 644 "$TMP/ring"
	run cats-select --keys "$TMP/ring" </dev/null
	[ "$status" -eq 77 ]
}

# ---- the daemon ----

start_daemon() {
	grep '"type":"service"' "$SEL/base.jsonl" >"$TMP/svc.jsonl"
	grep '"type":"metric"' "$SEL/base.jsonl" >"$TMP/met.jsonl"
	grep '"type":"net"' "$SEL/base.jsonl" >"$TMP/net.jsonl"
	cats-select --replay --services "$TMP/svc.jsonl" --metrics "$TMP/met.jsonl" \
	    --net "$TMP/net.jsonl" "$@" </dev/null >"$TMP/dout" 2>"$TMP/derr" &
	DPID=$!
}

outputs() {
	dec <"$TMP/dout" 2>/dev/null | wc -l
}

wait_outputs() {
	wait_for 50 sh -c "[ \$(cats-cbor decode <'$TMP/dout' 2>/dev/null | wc -l) -ge $1 ]"
}

@test "select daemon: unix socket, SO_PEERCRED trusted for a configured forwarder uid" {
	mkkeys
	sock="$TMP/sel.sock"
	start_daemon --listen "unix:$sock" --keys "$TMP/ring" --peercred "IF-1=$(id -u)"
	wait_for 50 test -S "$sock"
	req=$(head -1 "$SEL/cases/min-latency.jsonl")
	# No MAC, but the peer's uid is IF-1's.
	echo "$req" | select_client -t "unix:$sock" -w 100
	wait_outputs 1
	# No MAC and IF-2 has no uid configured: refused.
	echo "$req" | jq -c '.txn = 1002 | .ingress = "IF-2"' | select_client -t "unix:$sock" -w 100
	wait_outputs 2
	# A MAC'd request from IF-2 over the same socket: accepted (no path from IF-2).
	echo "$req" | jq -c '.txn = 1003 | .ingress = "IF-2"' |
	    select_client -k "$TMP/if2.psk" -t "unix:$sock" -w 100
	wait_outputs 3
	# A bad MAC is refused even where peer credentials would do.
	echo "$req" | jq -c '.txn = 1004' | select_client -x -k "$TMP/if1.psk" -t "unix:$sock" -w 100
	wait_outputs 4
	dec <"$TMP/dout" >"$TMP/out"
	[ "$(summarize "$TMP/out")" = "ok:198.51.100.21:443 err:unauthenticated err:no-reachable-egress err:unauthenticated" ]
	kill -TERM "$DPID"
	wait "$DPID"
	DPID=
}

@test "select daemon: tcp and udp with MACs; forwarders cannot inject metrics; garbage is answered, service goes on" {
	mkkeys
	tport=$(free_port)
	uport=$(free_port)
	start_daemon --listen "tcp:127.0.0.1:$tport" --listen "udp:127.0.0.1:$uport" --keys "$TMP/ring"
	wait_for 50 socat -u /dev/null "TCP:127.0.0.1:$tport"
	req=$(head -1 "$SEL/cases/min-latency.jsonl")
	echo "$req" | select_client -k "$TMP/if1.psk" -t "tcp:127.0.0.1:$tport" -w 100
	wait_outputs 1
	echo "$req" | jq -c '.txn = 1002' | select_client -k "$TMP/if1.psk" -t "udp:127.0.0.1:$uport" -w 100
	wait_outputs 2
	# A forwarder sending a metric record (B's GAS to 0) is ignored.
	printf '%s\n' '{"type":"metric","op":"delta","sma_id":"sma-2","epoch":1,"seq":2,"ts":1764460800500,"entries":[{"csci_id":"198.51.100.21:443","cs_id":"S1","gas":0}]}' |
	    select_client -k "$TMP/if1.psk" -t "tcp:127.0.0.1:$tport" -w 100
	# Garbage on the socket: a malformed-request error; then service goes on.
	printf '\xa1\x64type\x67request' | socat -u - "TCP:127.0.0.1:$tport"
	wait_outputs 3
	echo "$req" | jq -c '.txn = 1003' | select_client -k "$TMP/if1.psk" -t "tcp:127.0.0.1:$tport" -w 100
	wait_outputs 4
	kill -USR1 "$DPID"
	wait_outputs 5
	dec <"$TMP/dout" >"$TMP/out"
	summarize "$TMP/out"
	[ "$(summarize "$TMP/out")" = "ok:198.51.100.21:443 ok:198.51.100.21:443 err:malformed-request ok:198.51.100.21:443 pass:stats" ]
	jqtrue 'select(.type == "stats") | .counters.fwd_dropped == 1 and .counters.fail_malformed_request == 1 and .counters.decisions == 3' "$TMP/out"
	grep -q 'event=forwarder-record-dropped type=metric' "$TMP/derr"
	kill -USR2 "$DPID"
	wait_outputs 11
	dec <"$TMP/dout" | jqtrue 'select(.type == "metric" and .sma_id == "sma-2") | .entries[0].gas == 100'
	kill -TERM "$DPID"
	wait "$DPID"
	DPID=
}

@test "select daemon: --dump-to takes the SIGUSR2 dump apart from the stats records (cats-cps's [select])" {
	sock="$TMP/sel.sock"
	start_daemon --listen "unix:$sock" --no-auth --dump-to "file:$TMP/dump.cbor"
	wait_for 50 grep -q "serving 1 listeners" "$TMP/derr"
	kill -USR2 "$DPID"
	wait_for 50 sh -c "cats-cbor decode '$TMP/dump.cbor' |
	    jq -se 'any(.[]; .type == \"metric\")' >/dev/null"
	kill -USR1 "$DPID"
	wait_outputs 1
	[ "$(dec <"$TMP/dout" | jq -r .type | sort -u)" = stats ]
	kill -TERM "$DPID"
	wait "$DPID"
	DPID=
}

@test "select daemon: SIGHUP reloads the services file; a bad file keeps the old catalogue" {
	sock="$TMP/sel.sock"
	start_daemon --listen "unix:$sock" --no-auth
	wait_for 50 test -S "$sock"
	req=$(head -1 "$SEL/cases/min-latency.jsonl")
	# S1 v5 with the cheapest policy: C.
	jq -c 'select(.cs_id == "S1") | .version = 5 | .policy = "cheapest"' "$TMP/svc.jsonl" >"$TMP/new.jsonl"
	cp "$TMP/new.jsonl" "$TMP/svc.jsonl"
	kill -HUP "$DPID"
	wait_for 50 grep -q reloaded "$TMP/derr"
	echo "$req" | select_client -t "unix:$sock" -w 100
	wait_outputs 1
	echo '{"type":"service","cs_id":"S1"}' >"$TMP/svc.jsonl"
	kill -HUP "$DPID"
	wait_for 50 grep -q "not reloaded" "$TMP/derr"
	echo "$req" | jq -c '.txn = 1002' | select_client -t "unix:$sock" -w 100
	wait_outputs 2
	dec <"$TMP/dout" >"$TMP/out"
	[ "$(summarize "$TMP/out")" = "ok:198.51.100.31:443 ok:198.51.100.31:443" ]
}

@test "select: configuration file: precedence, forwarder tenants, limits" {
	cat >"$TMP/conf" <<-EOF
	# cats-select configuration
	precedence = explicit
	seed = 42
	domain = core
	limit = global=1000:1000
	[forwarder "IF-1"]
	tenants = t2 t3
	EOF
	cat "$SEL/base.jsonl" "$SEL/cases/conflict.jsonl" | enc |
	    cats-select --replay --no-auth --config "$TMP/conf" 2>/dev/null | dec >"$TMP/out"
	[ "$(summarize "$TMP/out")" = "err:unauthorized" ]
	sed -i 's/tenants = t2 t3/tenants = t1/' "$TMP/conf"
	cat "$SEL/base.jsonl" "$SEL/cases/conflict.jsonl" | enc |
	    cats-select --replay --no-auth --config "$TMP/conf" 2>"$TMP/err" | dec >"$TMP/out"
	[ "$(summarize "$TMP/out")" = "ok:198.51.100.12:8080" ]
	jqtrue '.domain == "core"' "$TMP/out"
	grep -q 'event=select-precedence txn=1001 ingress=IF-1 explicit=S2 address=S1 rule=explicit chosen=S2' "$TMP/err"
	# The command line wins over the file.
	cat "$SEL/base.jsonl" "$SEL/cases/conflict.jsonl" | enc |
	    cats-select --replay --no-auth --config "$TMP/conf" --precedence reject 2>/dev/null | dec >"$TMP/out"
	[ "$(summarize "$TMP/out")" = "err:cs-id-conflict" ]
}

@test "select: pipeline cats-cbor encode | cats-select | cats-cbor decode with every record type" {
	cat "$SEL/base.jsonl" "$TOP/examples/records.jsonl" | enc |
	    cats-select --replay --no-auth 2>/dev/null | dec >"$TMP/out"
	# The example's request (S1, tenant t1) resolves against base.jsonl's S1,
	# every record of another stage passes.
	for t in sci-report sync ack path-req path-rep binding status error stats; do
		jq -c --arg t "$t" 'select(.type == $t)' "$TMP/out" | grep -q . ||
		    { echo "no $t"; return 1; }
	done
	jqtrue 'select(.type == "path-req" and .txn == 1001) | .decision.cs_id == "S1" and .decision.csci_id == "198.51.100.21:443"' "$TMP/out"
}
