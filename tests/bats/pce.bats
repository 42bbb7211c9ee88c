#!/usr/bin/env bats
# cats-pce: the filter, its answers, pass-through, bad input, reloads,
# net updates, sockets.

load helper

# A tool that fails inside a pipeline fails the test (not only the last
# command of it).
set -o pipefail

LAB="$DATA/pce/lab.json"

setup() {
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/pce.XXXXXX")
}

teardown() {
	if [ -n "${PCE_PID:-}" ]; then
		kill "$PCE_PID" 2>/dev/null || true
		wait "$PCE_PID" 2>/dev/null || true
	fi
	exec 7>&- 2>/dev/null || true
	rm -rf "$T"
}

# One request as JSON, answered; prints the reply as JSON.
ask() {
	printf '%s\n' "$1" | enc | cats-pce -t "${2:-$LAB}" --replay | dec
}

req() {	# txn headend endpoint dataplane [constraints]
	printf '{"type":"path-req","txn":%s,"ts":1000,"headend":"%s","endpoint":"%s","dataplane":"%s","constraints":%s,"decision":{"cs_id":"S1","csci_id":"c1","locator":"198.51.100.21","egress":"%s","ts":1000}}' \
	    "$1" "$2" "$3" "$4" "${5:-{\}}" "$3"
}

@test "--help prints the synopsis of the man page, --version the version" {
	run cats-pce --help
	[ "$status" -eq 0 ]
	check_synopsis cats-pce
	run cats-pce --version
	[ "$status" -eq 0 ]
	[[ "$output" == "cats-pce (cats) "* ]]
}

@test "usage errors exit 2" {
	run cats-pce
	[ "$status" -eq 2 ]
	run cats-pce -t "$LAB" --bogus
	[ "$status" -eq 2 ]
	run cats-pce -t "$LAB" --listen unix:/x --to -
	[ "$status" -eq 2 ]
	run cats-pce -t "$LAB" --max-labels 0
	[ "$status" -eq 2 ]
}

@test "a missing database exits 66, a bad one 78 naming the element" {
	run cats-pce -t "$T/none.json" --check
	[ "$status" -eq 66 ]
	printf '{"nodes":[{"id":"A"}],"links":[{"id":"l1","src":"A","dst":"B","igp_metric":1,"delay_us":5}]}' >"$T/bad.json"
	run cats-pce -t "$T/bad.json" </dev/null
	[ "$status" -eq 78 ]
	[[ "$output" == *'links[0] "l1": dst: no node "B" (dangling link)'* ]]
	printf '{"nodes":[{"id":"A"},{"id":"B"}],"links":[{"id":"l1","src":"A","dst":"B","igp_metric":-3,"delay_us":5}]}' >"$T/neg.json"
	run cats-pce -t "$T/neg.json" --check
	[ "$status" -eq 78 ]
	[[ "$output" == *'links[0] "l1": igp_metric: -3 is negative'* ]]
}

@test "--check summarizes a database" {
	run cats-pce -t "$LAB" --check
	[ "$status" -eq 0 ]
	[[ "$output" == *"13 nodes, 16 links, 32 directions, generation 1"* ]]
}

@test "every answer kind, pass-through, bad requests and a net update (fixture)" {
	enc "$DATA/pce/requests.jsonl" >"$T/in.cbor"
	run sh -c "cats-pce -t '$LAB' --replay <'$T/in.cbor' >'$T/out.cbor' 2>'$T/err'"
	[ "$status" -eq 65 ]	# two requests did not decode
	dec "$T/out.cbor" | jq -c . >"$T/got.jsonl"
	jq -c . "$DATA/pce/replies.jsonl" >"$T/want.jsonl"
	diff -u "$T/want.jsonl" "$T/got.jsonl"
	grep -q 'record 25: headend: required field missing' "$T/err"
	grep -q '2 of 29 records were invalid' "$T/err"
}

@test "replies carry the transaction, decision, flow, ingress and deadline" {
	enc "$DATA/pce/requests.jsonl" >"$T/in.cbor"
	rc=0
	cats-pce -t "$LAB" --replay <"$T/in.cbor" >"$T/out.cbor" 2>/dev/null || rc=$?
	[ "$rc" -eq 65 ]	# two requests did not decode
	dec "$T/out.cbor" >"$T/out.jsonl"
	first=$(head -1 "$T/out.jsonl")
	[ "$(jq -r .txn <<<"$first")" = 1 ]
	[ "$(jq -r .decision.csci_id <<<"$first")" = csci-b ]
	[ "$(jq -r .flow.sport <<<"$first")" = 51000 ]
	[ "$(jq -r .ingress <<<"$first")" = IF-1 ]
	[ "$(jq -r .deadline <<<"$first")" = 99999 ]
	# Every path request got exactly one reply with its txn.
	want=$(jq -r 'select(.type=="path-req") | .txn' "$DATA/pce/requests.jsonl" | sort -n | tr '\n' ' ')
	got=$(jq -r 'select(.type=="path-rep" or (.type=="error" and .stage=="cats-pce")) | .txn' "$T/out.jsonl" | sort -n | tr '\n' ' ')
	[ "$want" = "$got" ]
}

@test "records of other types pass through byte for byte" {
	cat >"$T/other.jsonl" <<-'EOF'
	{"type":"binding","id":7,"version":1,"epoch":2,"op":"remove","ts":5,"reason":"idle"}
	{"type":"error","code":"no-candidate","txn":3,"ingress":"IF-1"}
	{"type":"metric","op":"heartbeat","sma_id":"sma-1","epoch":1,"seq":9,"ts":7}
	{"type":"stats","tool":"x","ts":1,"counters":{"a":1}}
	EOF
	enc "$T/other.jsonl" >"$T/in.cbor"
	cats-pce -t "$LAB" <"$T/in.cbor" >"$T/out.cbor"
	cmp "$T/in.cbor" "$T/out.cbor"
}

@test "a label budget too small for the exact search is an error, not a path" {
	run ask "$(req 5 IF-1 EF-2 srmpls '{"max_delay_us":1300}')"
	[ "$(jq -r .status <<<"$output")" = ok ]
	printf '%s\n' "$(req 5 IF-1 EF-2 srmpls '{"max_delay_us":1300}')" | enc |
	    cats-pce -t "$LAB" --max-labels 2 | dec >"$T/out"
	[ "$(jq -r .status "$T/out")" = error ]
	[ "$(jq -r .reason "$T/out")" = budget ]
}

@test "--strict stops at the first bad record" {
	{
		req 1 IF-1 EF-2 srmpls; echo
		echo '{"type":"path-req","txn":2}'
		req 3 IF-1 EF-2 srmpls; echo
	} | enc >"$T/in.cbor"
	run sh -c "cats-pce -t '$LAB' --strict <'$T/in.cbor' | cats-cbor decode"
	[ "$(grep -c path-rep <<<"$output")" -eq 1 ]
	run sh -c "cats-pce -t '$LAB' --strict <'$T/in.cbor' >/dev/null"
	[ "$status" -eq 65 ]
}

@test "garbage between records is reported and skipped" {
	{ req 1 IF-1 EF-2 srmpls; echo; } | enc >"$T/in.cbor"
	printf '\377\377\034' >>"$T/in.cbor"
	{ req 2 IF-1 EF-2 srv6; echo; } | enc >>"$T/in.cbor"
	run sh -c "cats-pce -t '$LAB' <'$T/in.cbor' 2>'$T/err' | cats-cbor decode | jq -r .txn"
	[ "$output" = "1
2" ]
	grep -q 'record 1' "$T/err"
}

@test "a real network: Abilene, SR-MPLS and SRv6" {
	topo="$TOP/tests/topologies/abilene.json"
	run ask "$(req 1 seattle new-york srmpls)" "$topo"
	[ "$(jq -r .status <<<"$output")" = ok ]
	[ "$(jq -r '.path[0]' <<<"$output")" = seattle ]
	[ "$(jq -r '.path[-1]' <<<"$output")" = new-york ]
	[ "$(jq -r '.segments | length' <<<"$output")" -ge 1 ]
	run ask "$(req 2 seattle new-york srv6 '{"max_delay_us":5000}')" "$topo"
	[ "$(jq -r .status <<<"$output")" = no-path ]
	[ "$(jq -r .pruned <<<"$output")" = max_delay ]
}

# Start cats-pce on a FIFO kept open on fd 7; replies go to $T/out.cbor.
start_fifo() {
	mkfifo "$T/in"
	cats-pce -t "$1" --replay "${@:2}" <"$T/in" >"$T/out.cbor" 2>"$T/err" &
	PCE_PID=$!
	exec 7>"$T/in"
}

replies() {
	dec "$T/out.cbor" 2>/dev/null | grep -c '"type":"path-rep"' || true
}

# At least $1 replies (a function: wait_for counts them anew each time).
replies_ge() {
	[ "$(replies)" -ge "$1" ]
}

@test "SIGHUP reloads the database; a bad one is refused and the old one kept" {
	cp "$LAB" "$T/topo.json"
	start_fifo "$T/topo.json"
	{ req 1 IF-1 EF-2 srmpls; echo; } | enc >&7
	wait_for 50 replies_ge 1
	[ "$(dec "$T/out.cbor" | jq -s -r '.[0].gen')" = 1 ]
	[ "$(dec "$T/out.cbor" | jq -s -r '.[0].path | join(" ")')" = "IF-1 P1 P2 EF-2" ]
	# The new database has no a2: the answer moves, the generation grows.
	jq '.links |= map(select(.id != "a2"))' "$LAB" >"$T/new.json"
	mv "$T/new.json" "$T/topo.json"
	kill -HUP "$PCE_PID"
	wait_for 50 grep -q reloaded "$T/err"
	{ req 2 IF-1 EF-2 srmpls; echo; } | enc >&7
	wait_for 50 replies_ge 2
	[ "$(dec "$T/out.cbor" | jq -s -r '.[1].gen')" = 2 ]
	[ "$(dec "$T/out.cbor" | jq -s -r '.[1].path | join(" ")')" = "IF-1 P1 P3 EF-2" ]
	# A broken file: refused, the running database stays.
	echo '{"nodes":[{"id":"A"},{"id":"A"}]}' >"$T/topo.json"
	kill -HUP "$PCE_PID"
	wait_for 50 grep -q 'reload refused' "$T/err"
	grep -q 'nodes\[1\] "A": id: duplicate node id' "$T/err"
	{ req 3 IF-1 EF-2 srmpls; echo; } | enc >&7
	wait_for 50 replies_ge 3
	[ "$(dec "$T/out.cbor" | jq -s -r '.[2].gen')" = 2 ]
	[ "$(dec "$T/out.cbor" | jq -s -r '.[2].path | join(" ")')" = "IF-1 P1 P3 EF-2" ]
	# Stats on SIGUSR1, on stderr.
	kill -USR1 "$PCE_PID"
	wait_for 50 grep -q '"type":"stats"' "$T/err"
	grep '"type":"stats"' "$T/err" | jq -e '.counters.reloads == 1 and .counters.reload_failed == 1 and .counters.requests == 3'
	exec 7>&-
	wait "$PCE_PID"
	PCE_PID=
}

@test "net records update the database between requests; bad ones are refused" {
	{
		req 1 IF-1 EF-2 srmpls; echo
		echo '{"type":"net","scope":"link","ts":1001,"src":"P1","dst":"P2","te_metric":100}'
		req 2 IF-1 EF-2 srmpls; echo
		echo '{"type":"net","scope":"link","ts":1002,"src":"P1","dst":"P2","delay_us":0}'
		echo '{"type":"net","scope":"link","ts":1003,"src":"P1","dst":"ZZ","delay_us":5}'
		req 3 IF-1 EF-2 srmpls; echo
		echo '{"type":"net","scope":"node","ts":1004,"node":"P1","up":false}'
		req 4 IF-1 EF-2 srmpls; echo
	} | enc >"$T/in.cbor"
	# The refused ones make the exit status 65 (invalid input).
	local rc=0
	cats-pce -t "$LAB" --replay --stats <"$T/in.cbor" 2>"$T/err" >"$T/out.cbor" || rc=$?
	[ "$rc" -eq 65 ]
	dec <"$T/out.cbor" |
	    jq -c 'select(.type=="path-rep") | [.txn, .gen, (.path|join(" "))]' >"$T/got"
	cat >"$T/want" <<-'EOF'
	[1,1,"IF-1 P1 P2 EF-2"]
	[2,2,"IF-1 P1 P3 EF-2"]
	[3,2,"IF-1 P1 P3 EF-2"]
	[4,3,"IF-1 P3 EF-2"]
	EOF
	diff -u "$T/want" "$T/got"
	grep -q 'net: delay_us: 0 is out of range' "$T/err"
	grep -q 'net: dst: no node "ZZ"' "$T/err"
	grep '"type":"stats"' "$T/err" | jq -e '.counters.net_applied == 2 and .counters.net_refused == 2'
}

@test "the same request again is answered from the cache until the database changes" {
	{
		req 1 IF-1 EF-2 srmpls '{"max_delay_us":1300}'; echo
		req 2 IF-1 EF-2 srmpls '{"max_delay_us":1300}'; echo
		echo '{"type":"net","scope":"link","ts":1001,"src":"P3","dst":"EF-2","delay_us":900}'
		req 3 IF-1 EF-2 srmpls '{"max_delay_us":1300}'; echo
	} | enc >"$T/in.cbor"
	cats-pce -t "$LAB" --replay --stats <"$T/in.cbor" 2>"$T/err" | dec |
	    jq -c '[.txn, .gen, (.path|join(" "))]' >"$T/got"
	cat >"$T/want" <<-'EOF'
	[1,1,"IF-1 P3 EF-2"]
	[2,1,"IF-1 P3 EF-2"]
	[3,2,"IF-1 P4 P5 EF-2"]
	EOF
	diff -u "$T/want" "$T/got"
	grep '"type":"stats"' "$T/err" | jq -e '.counters.cache_hits == 1'
	cats-pce -t "$LAB" --replay --stats --cache 0 <"$T/in.cbor" 2>"$T/err" >/dev/null
	grep '"type":"stats"' "$T/err" | jq -e '.counters.cache_hits == 0'
}

@test "--listen unix: each connection gets its own replies; SIGTERM stops cleanly" {
	sock="$T/pce.sock"
	cats-pce -t "$LAB" --listen "unix:$sock" 2>"$T/err" &
	PCE_PID=$!
	wait_for 50 test -S "$sock"
	{ req 7 IF-1 EF-2 srv6; echo; } | enc >"$T/q.cbor"
	socat -t 2 - "UNIX-CONNECT:$sock" <"$T/q.cbor" >"$T/a.cbor"
	[ "$(dec "$T/a.cbor" | jq -r '[.txn, .status] | join(" ")')" = "7 ok" ]
	{ req 8 IF-1 IF-1 srv6; echo; } | enc >"$T/q.cbor"
	socat -t 2 - "UNIX-CONNECT:$sock" <"$T/q.cbor" >"$T/b.cbor"
	[ "$(dec "$T/b.cbor" | jq -r '[.txn, .reason] | join(" ")')" = "8 same-node" ]
	kill -TERM "$PCE_PID"
	wait "$PCE_PID"
	PCE_PID=
}

@test "--listen tcp and udp" {
	port=$(free_port)
	run cats-pce -t "$LAB" --listen "tcp:127.0.0.1:$port"
	[ "$status" -eq 2 ]
	[[ "$output" == *"a network channel needs --keys"* ]]
	cats-pce -t "$LAB" --insecure --listen "tcp:127.0.0.1:$port" 2>"$T/err" &
	PCE_PID=$!
	{ req 9 IF-1 EF-2 srmpls; echo; } | enc >"$T/q.cbor"
	wait_for 50 sh -c "socat -t 2 - TCP:127.0.0.1:$port <'$T/q.cbor' >'$T/a.cbor' && test -s '$T/a.cbor'"
	[ "$(dec "$T/a.cbor" | jq -r .txn)" = 9 ]
	kill "$PCE_PID"
	wait "$PCE_PID"	# SIGTERM stops it cleanly: exit 0
	port=$(free_port)
	cats-pce -t "$LAB" --insecure --listen "udp:127.0.0.1:$port" 2>"$T/err" &
	PCE_PID=$!
	# Until it listens, a datagram is lost: ask again until answered.
	wait_for 100 sh -c "socat -t 1 - UDP:127.0.0.1:$port <'$T/q.cbor' >'$T/u.cbor' && test -s '$T/u.cbor'"
	[ "$(dec "$T/u.cbor" | jq -r .txn)" = 9 ]
}

@test "a synthetic 10^4-node network through the filter" {
	topogen -s 3 10000 >"$T/syn.json"
	run cats-pce -t "$T/syn.json" --check
	[ "$status" -eq 0 ]
	[[ "$output" == *"10000 nodes"* ]]
	for i in 1 2 3 4 5 6 7 8; do
		req "$i" "n$((i * 997))" "n$((i * 1231 + 5))" srmpls '{"max_delay_us":60000}'; echo
	done | enc | cats-pce -t "$T/syn.json" | dec >"$T/out"
	[ "$(jq -r .status "$T/out" | grep -c -e ok -e no-path)" -eq 8 ]
}

@test "an authenticated channel: keys, replies signed, unsigned and replayed requests refused" {
	cats-key psk -n cps -o "$T/cps.psk"
	cats-key psk -n pce -o "$T/pce.psk"
	cats-key psk -n other -o "$T/other.psk"
	{ req 1 IF-1 EF-2 srmpls; echo; } | enc | pce-sign -k "$T/cps.psk" >"$T/a.cbor"
	{ req 2 IF-1 EF-2 srmpls; echo; } | enc >"$T/b.cbor"
	{ req 3 IF-1 EF-2 srmpls; echo; } | enc | pce-sign -k "$T/other.psk" >"$T/c.cbor"
	echo '{"type":"net","scope":"link","ts":1000,"src":"P1","dst":"P2","up":false}' |
	    enc >"$T/n.cbor"
	{ req 4 IF-1 EF-2 srmpls; echo; } | enc | pce-sign -k "$T/cps.psk" >"$T/d.cbor"
	# txn 5: 100 s older than what came before, outside the 30 s window
	{ req 5 IF-1 EF-2 srmpls | sed 's/"ts":1000,/"ts":0,/'; echo; } | enc |
	    pce-sign -k "$T/cps.psk" >"$T/e.cbor"
	{ req 6 IF-1 EF-2 srmpls | sed 's/"ts":1000,/"ts":101000,/'; echo; } | enc |
	    pce-sign -k "$T/cps.psk" >"$T/f.cbor"
	cat "$T/a.cbor" "$T/b.cbor" "$T/c.cbor" "$T/a.cbor" "$T/n.cbor" "$T/d.cbor" \
	    "$T/f.cbor" "$T/e.cbor" >"$T/in.cbor"
	cats-pce -t "$LAB" --replay --keys "$T/cps.psk" --key "$T/pce.psk" --stats \
	    <"$T/in.cbor" >"$T/out.cbor" 2>"$T/err"
	dec "$T/out.cbor" | jq -c '[.type, .txn, .status // .code, .gen // 0]' >"$T/got"
	cat >"$T/want" <<-'EOF'
	["path-rep",1,"ok",1]
	["error",2,"unauthorized",0]
	["error",3,"unauthorized",0]
	["error",1,"unauthorized",0]
	["net",null,null,0]
	["path-rep",4,"ok",1]
	["path-rep",6,"ok",1]
	["error",5,"unauthorized",0]
	EOF
	diff -u "$T/want" "$T/got"
	# The unsigned net record was not applied (gen 1), but passed on.
	grep -q 'record 1: path-req refused: record is not authenticated' "$T/err"
	grep -q 'record 2: path-req refused: unknown key id' "$T/err"
	grep -q 'record 3: path-req refused: replayed record' "$T/err"
	grep -q 'record 7: path-req refused: timestamp outside the accepted window' "$T/err"
	grep -q 'event=auth-failure' "$T/err"
	grep '"type":"stats"' "$T/err" | jq -e '.counters.unauthorized == 5'
	# What cats-pce made is signed with its key; the net record is as it came.
	run sh -c "pce-sign -v '$T/pce.psk' <'$T/out.cbor'"
	[ "$(grep -c '^ok' <<<"$output")" -eq 7 ]
	[ "$(grep -c '^bad net' <<<"$output")" -eq 1 ]
	# Keys that cannot be read are refused.
	run cats-pce -t "$LAB" --keys "$T/none.psk" </dev/null
	[ "$status" -eq 77 ]
}
