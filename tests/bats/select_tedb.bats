#!/usr/bin/env bats
# cats-select with a TE database for its network view (--tedb), and the
# admission limits it applies by default (seed 001 section 9: MUST).
load helper

setup() {
	D="$DATA/select/tedb"
	W="$BATS_TEST_TMPDIR"
}

decide() { # extra args; the fixture's decisions as "txn csci|code cost"
	enc "$D/in.jsonl" | cats-select --replay --no-auth "$@" 2> "$W/err" |
	    dec | jq -r 'select(.type == "path-req" or .type == "error") |
	    "\(.txn) \(.decision.csci_id // .code) \(.decision.cost_us)"'
}

@test "select_tedb: the TE database gives the delay to each egress; link records change it" {
	run decide --tedb "$D/te.json"
	# IF-1 -> EF-2: 1000 + 1000 us + 3 ms = 5000; -> EF-1: 1000 + 5000 us
	# + 2 ms = 8000: b.  P1-EF-2 down: a.  P1-EF-1 down too: none.
	[ "${lines[0]}" = "1 b:443 5000" ]
	[ "${lines[1]}" = "2 a:443 8000" ]
	[ "${lines[2]}" = "3 no-reachable-egress null" ]
	# Without it there is no network view at all.
	run decide
	[ "${lines[0]}" = "1 no-reachable-egress null" ]
	# A measured path record wins over the database's estimate.
	{ head -3 "$D/in.jsonl"
	  echo '{"type":"net","scope":"path","ts":1764460800500,"src":"IF-1","dst":"EF-1","delay_us":100,"ttl_ms":60000}'
	  sed -n 4p "$D/in.jsonl"; } | enc | cats-select --replay --no-auth \
	    --tedb "$D/te.json" 2>/dev/null | dec |
	    jq -e 'select(.type == "path-req") | .decision.csci_id == "a:443"
	    and .decision.cost_us == 2100'
}

@test "select_tedb: a bad or missing TE database: exit 65 / 66; SIGHUP keeps the old one on error" {
	run cats-select --tedb /nonexistent.json --replay < /dev/null
	[ "$status" -eq 66 ]
	echo '{"nodes": [' > "$W/bad.json"
	run cats-select --tedb "$W/bad.json" --replay < /dev/null
	[ "$status" -eq 65 ]
	cp "$D/te.json" "$W/te.json"
	P=$(free_port)
	mkfifo "$W/in"
	cats-select --no-auth --tedb "$W/te.json" --listen "tcp:127.0.0.1:$P" \
	    --stats-to "file:$W/stats" --audit "file:$W/audit" \
	    < "$W/in" > /dev/null 2> "$W/err" &
	pid=$!
	exec 7> "$W/in"
	wait_for 50 grep -q serving "$W/err"
	echo '{"nodes": [' > "$W/te.json"
	kill -HUP "$pid"
	wait_for 50 grep -q 'tedb-reload-refused' "$W/audit"
	grep -q 'the old TE database stays' "$W/err"
	cp "$D/te.json" "$W/te.json"
	kill -HUP "$pid"
	wait_for 50 grep -q 'tedb-reloaded file=.* nodes=4' "$W/audit"
	kill -USR1 "$pid"
	wait_for 50 test -s "$W/stats"
	dec < "$W/stats" | jq -e '.counters.tedb_nodes == 4 and
	    .counters.tedb_gen == 2'
	exec 7>&-
	kill "$pid"
	wait "$pid"	# a clean stop: exit 0
}

@test "select_tedb: admission limits are on by default: a client gets 2000 at once, then rate-limited" {
	{ head -3 "$D/in.jsonl"
	  for i in $(seq 1 2001); do
		echo "{\"type\":\"request\",\"txn\":$i,\"ingress\":\"IF-1\",\"ts\":1764460801000,\"flow\":{\"proto\":6,\"src\":\"192.0.2.10\",\"sport\":$((10000 + i)),\"dst\":\"192.0.2.100\",\"dport\":443}}"
	  done; } | enc > "$W/burst.cbor"
	count() { cats-select --replay --no-auth --tedb "$D/te.json" "$@" \
	    < "$W/burst.cbor" 2>/dev/null | dec | jq -r '.type, .code' |
	    grep -v null | sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 }'; }
	[ "$(count)" = "error=1 path-req=2000 rate-limited=1 " ]
	[ "$(count --limit client=off)" = "path-req=2001 " ]
	[ "$(count --limit client=10:10)" = "error=1991 path-req=10 rate-limited=1991 " ]
	# The file's limit is overridden by the command line.
	printf 'limit = client=5:5\n' > "$W/c.conf"
	[ "$(count --config "$W/c.conf")" = "error=1996 path-req=5 rate-limited=1996 " ]
	[ "$(count --config "$W/c.conf" --limit client=off)" = "path-req=2001 " ]
}
