#!/usr/bin/env bats
# cats-pce --pcep: PCEP (RFC 5440) beside the record interface, the same
# answers on both; the names index follows the database; bad input through
# pcep_peer raw.  cats-pce --pce: the C-PS as a PCC of a remote PCE, the
# same answers, failing closed when the PCE is down, mute or gone.

load helper

set -o pipefail

LAB="$DATA/pce/lab.json"

setup() {
	T=$(mktemp -d "${BATS_TMPDIR:-/tmp}/pcep.XXXXXX")
}

teardown() {
	local pid
	frr_teardown
	for pid in ${PCC_PID:-} ${PCE_PID:-}; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	exec 7>&- 2>/dev/null || true
	rm -rf "$T"
}

REQ='{"type":"path-req","txn":%s,"ts":1000,"headend":"IF-1","endpoint":"EF-2","dataplane":"srmpls","decision":{"cs_id":"S1","csci_id":"c1","locator":"198.51.100.21","egress":"EF-2","ts":1000}}'

# The C-PS side: cats-pce --pce reading requests from a fifo (fd 7).
start_pcc() {	# port [more options]
	local port=$1
	shift
	mkfifo "$T/pcc.in"
	cats-pce -t "$LAB" --insecure --pce "tcp:127.0.0.1:$port" "$@" \
	    <"$T/pcc.in" >"$T/pcc.cbor" 2>"$T/pcc.err" &
	PCC_PID=$!
	exec 7>"$T/pcc.in"
}

ask_pcc() {	# txn
	printf "$REQ\n" "$1" | enc >&7
}

# The answer to txn $1 as "status reason" (empty while there is none).
pcc_answer() {
	dec "$T/pcc.cbor" 2>/dev/null |
	    jq -r --argjson t "$1" 'select(.txn == $t) | [.status, (.reason // "")] | join(" ")'
}

pcc_answered() {	# txn
	[ -n "$(pcc_answer "$1")" ]
}

# cats-pce with PCEP on a free port and records on a unix socket.
start_pce() {	# topology [more options]
	local topo=$1
	shift
	PORT=$(free_port)
	cats-pce -t "$topo" --insecure --pcep "tcp:127.0.0.1:$PORT" \
	    --listen "unix:$T/rec.sock" "$@" 2>"$T/err" &
	PCE_PID=$!
	wait_for 50 test -S "$T/rec.sock"
	wait_for 50 grep -q "PCEP on" "$T/err"
}

@test "pcep: --pcep needs tcp: and --tcp-md5 or --insecure; --pcep-allow needs --pcep" {
	run cats-pce -t "$LAB" --pcep "unix:$T/x"
	[ "$status" -eq 2 ]
	[[ "$output" == *"expected tcp:"* ]]
	run cats-pce -t "$LAB" --pcep "tcp:127.0.0.1:$(free_port)"
	[ "$status" -eq 2 ]
	[[ "$output" == *"needs --tcp-md5 (or --insecure)"* ]]
	run cats-pce -t "$LAB" --pcep-allow 127.0.0.1/32
	[ "$status" -eq 2 ]
	run cats-pce -t "$LAB" --insecure --pcep "tcp:127.0.0.1:$(free_port)" --pcep-allow 300.1/8
	[ "$status" -eq 2 ]
}

@test "pcep: the same answers over PCEP and over records (tests/data/pce)" {
	start_pce "$LAB"
	# Live clock on both sides: the fixture's absolute deadlines are gone.
	jq -c 'select(.type == "path-req") | del(.deadline)' \
	    "$DATA/pce/requests.jsonl" >"$T/rq.jsonl"
	pcep_peer pcc -c "tcp:127.0.0.1:$PORT" -T "$LAB" <"$T/rq.jsonl" \
	    >"$T/pcep.jsonl"
	enc "$T/rq.jsonl" | socat -t 5 - "UNIX-CONNECT:$T/rec.sock" |
	    dec >"$T/rec.jsonl"
	# Records: what survives a PCEP exchange (cats_pcep_rep_project).
	pcep_peer project <"$T/rec.jsonl" |
	    jq -S -c 'select(.type == "path-rep") | del(.ts)' | sort >"$T/a"
	jq -S -c 'select(.type == "path-rep") | del(.ts)' "$T/pcep.jsonl" |
	    sort >"$T/b"
	# Headends or endpoints no node has cannot be written in END-POINTS:
	# the PCC answers them itself, with the reason cats-pce gives.
	jq -S -c 'select(.type == "error") | [.txn, .code]' "$T/pcep.jsonl" |
	    sort >"$T/pcc-local"
	jq -S -c 'select(.type == "path-rep" and .status == "error" and
	    (.reason == "no-source" or .reason == "no-destination")) |
	    [.txn, .reason]' "$T/rec.jsonl" | sort >"$T/rec-local"
	diff "$T/pcc-local" "$T/rec-local"
	jq -S -c 'select(.status == "error" and
	    (.reason == "no-source" or .reason == "no-destination") | not)' \
	    "$T/a" >"$T/a2"
	diff "$T/a2" "$T/b"
	[ "$(wc -l <"$T/b")" -ge 20 ]
	grep -q '"status":"ok"' "$T/b"
	grep -q '"status":"no-path"' "$T/b"
	# The record interface went on beside it; stats count both.
	kill -USR1 "$PCE_PID"
	wait_for 50 grep -q '"type":"stats"' "$T/err"
	grep '"type":"stats"' "$T/err" | jq -e '.counters["pcep.replies"] >= 20 and .counters["pcep.up"] == 0'
	kill -TERM "$PCE_PID"
	wait "$PCE_PID" || [ $? -eq 65 ]	# the fixture's two bad requests
	PCE_PID=
}

@test "pcep: SIGHUP replaces the database and the names index with it" {
	cp "$LAB" "$T/topo.json"
	jq -c '.nodes |= map(if .id == "EF-2" then .router_id = "192.0.2.99" | .node_label = 17002 else . end)' \
	    "$LAB" >"$T/new.json"
	start_pce "$T/topo.json"
	printf '%s\n' '{"type":"path-req","txn":7,"ts":1000,"headend":"IF-1","endpoint":"EF-2","dataplane":"srmpls","decision":{"cs_id":"S1","csci_id":"c1","locator":"198.51.100.21","egress":"EF-2","ts":1000}}' >"$T/q.jsonl"
	# The PCC names EF-2 by its new address: unknown to the old database.
	pcep_peer pcc -c "tcp:127.0.0.1:$PORT" -T "$T/new.json" <"$T/q.jsonl" >"$T/1.jsonl"
	[ "$(jq -r '[.status, .reason] | join(" ")' "$T/1.jsonl")" = "error no-destination" ]
	cp "$T/new.json" "$T/topo.json"
	kill -HUP "$PCE_PID"
	wait_for 50 grep -q reloaded "$T/err"
	pcep_peer pcc -c "tcp:127.0.0.1:$PORT" -T "$T/new.json" <"$T/q.jsonl" >"$T/2.jsonl"
	[ "$(jq -r .status "$T/2.jsonl")" = ok ]
	[ "$(jq -r '.segments[-1].label' "$T/2.jsonl")" = 17002 ]
}

@test "pcep: peers outside --pcep-allow are refused and audited" {
	start_pce "$LAB" --pcep-allow 192.0.2.0/24
	printf '%s\n' '{"type":"path-req","txn":7,"ts":1000,"headend":"IF-1","endpoint":"EF-2","dataplane":"srmpls","decision":{"cs_id":"S1","csci_id":"c1","locator":"198.51.100.21","egress":"EF-2","ts":1000}}' >"$T/q.jsonl"
	run pcep_peer pcc -c "tcp:127.0.0.1:$PORT" -T "$LAB" -t 2000 <"$T/q.jsonl"
	[ "$status" -eq 1 ]
	wait_for 50 grep -q 'pcep-refused' "$T/err"
	grep 'pcep-refused' "$T/err" | grep -q 'peer=127.0.0.1:'
}

@test "pcep: a flood of refused peers: the audit is rate-limited, the suppressed lines counted and told" {
	start_pce "$LAB" --pcep-allow 192.0.2.0/24
	t0=$(date +%s%3N)
	python3 - "$PORT" <<'EOP'
import socket, sys
for i in range(300):
    socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()
EOP
	kill -USR1 "$PCE_PID"
	wait_for 50 grep -q '"type":"stats"' "$T/err"
	grep '"type":"stats"' "$T/err" | tail -1 |
	    jq -e '.counters["pcep.audit_suppressed"] > 0 and .counters["pcep.refused"] >= 250'
	t1=$(date +%s%3N)
	# At most the burst (50) and what 20 a second adds while it lasted,
	# as long as it lasted here (a fixed 150, 5 s of flood, is a budget a
	# loaded machine can overrun), and 2 s more for the windows it began
	# and ended in.
	n=$(grep -c 'event=pcep-refused' "$T/err" || true)
	[ "$n" -ge 50 ] && [ "$n" -le $((50 + 20 * ((t1 - t0) / 1000 + 2))) ]
	# The next line let through says how many were held back.
	sleep 1.1
	python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()' "$PORT"
	wait_for 50 grep -q 'event=pcep-audit-suppressed lines=' "$T/err"
}

@test "pcep: bad input is answered as RFC 5440 says; records are still served" {
	start_pce "$LAB"
	# Garbage (version 7 in the common header): PCErr 1/8, closed.
	printf 'ffffffffffff\n' >"$T/garbage"
	run pcep_peer raw -c "tcp:127.0.0.1:$PORT" -t 3000 <"$T/garbage"
	[[ "$output" == *"PCErr 1/8"* ]]
	[[ "$output" == *closed ]]
	# A PCReq before the Open: PCErr 1/1, closed.
	grep '^in:' "$DATA/pcep/s06-not-open-first.ses" | cut -d' ' -f2- >"$T/ka"
	run pcep_peer raw -c "tcp:127.0.0.1:$PORT" -t 3000 <"$T/ka"
	[[ "$output" == *"PCErr 1/1"* ]]
	[[ "$output" == *closed ]]
	# A length beyond the message once up: Close, reason 3 (malformed).
	{ grep '^hex:' "$DATA/pcep/open-pcc.vec" | cut -d' ' -f2-
	  echo 20020004; echo sleep 300; echo 2003ffff00000000; } >"$T/long"
	run pcep_peer raw -c "tcp:127.0.0.1:$PORT" -t 3000 <"$T/long"
	[[ "$output" == *"Close reason=3"* ]]
	# The record interface is unaffected.
	printf '%s\n' '{"type":"path-req","txn":7,"ts":1000,"headend":"IF-1","endpoint":"EF-2","dataplane":"srmpls","decision":{"cs_id":"S1","csci_id":"c1","locator":"198.51.100.21","egress":"EF-2","ts":1000}}' |
	    enc | socat -t 3 - "UNIX-CONNECT:$T/rec.sock" | dec >"$T/r.jsonl"
	[ "$(jq -r .status "$T/r.jsonl")" = ok ]
	grep -q 'pcep-closed' "$T/err"
}

@test "pcep: a peer that goes silent past its DeadTimer is closed (reason 2) and audited; records are still served" {
	start_pce "$LAB"
	# The PCC's Open asks for keepalive 1 s and DeadTimer 2 s; one
	# Keepalive, then nothing.
	{ grep '^hex:' "$DATA/pcep/open-pcc.vec" | cut -d' ' -f2- |
	    sed 's/ 201e7800 / 20010200 /'
	  echo 20020004; echo sleep 4000; } >"$T/dead"
	run pcep_peer raw -c "tcp:127.0.0.1:$PORT" -t 1000 <"$T/dead"
	[[ "$output" == *"Open ka=30 dt=120"* ]]
	[[ "$output" == *"Close reason=2"* ]]
	[[ "$output" == *closed ]]
	wait_for 50 grep -q 'pcep-closed.*close=2' "$T/err"
	enc <<<"$(printf "$REQ" 8)" | socat -t 3 - "UNIX-CONNECT:$T/rec.sock" | dec >"$T/r.jsonl"
	[ "$(jq -r .status "$T/r.jsonl")" = ok ]
}

@test "pcep: 1000 sessions opened and dropped; the PCE goes on serving both interfaces" {
	start_pce "$LAB"
	# Faster than the PCE notices each end: many are a second session
	# from the same address (PCErr 9), the rest sessions that end.
	python3 - "$PORT" <<'EOP'
import socket, sys
port = int(sys.argv[1])
for i in range(1000):
    s = socket.create_connection(("127.0.0.1", port))
    if i % 2:
        s.send(bytes.fromhex("ffffffff"))	# garbage, then gone
    s.close()
EOP
	printf "$REQ\n" 9 >"$T/q.jsonl"
	pcep_peer pcc -c "tcp:127.0.0.1:$PORT" -T "$LAB" <"$T/q.jsonl" >"$T/p.jsonl"
	[ "$(jq -r .status "$T/p.jsonl")" = ok ]
	enc "$T/q.jsonl" | socat -t 3 - "UNIX-CONNECT:$T/rec.sock" | dec >"$T/r.jsonl"
	[ "$(jq -r .status "$T/r.jsonl")" = ok ]
	kill -USR1 "$PCE_PID"
	wait_for 50 grep -q '"type":"stats"' "$T/err"
	grep '"type":"stats"' "$T/err" | jq -e '.counters["pcep.accepted"] + .counters["pcep.second"] >= 1001 and .counters["pcep.sessions"] <= 1'
}

@test "pcep: the C-PS as a PCC (--pce): the answers of the PCE, as if computed here" {
	start_pce "$LAB"
	jq -c 'select(.type == "path-req") | del(.deadline)' \
	    "$DATA/pce/requests.jsonl" >"$T/rq.jsonl"
	enc "$T/rq.jsonl" | cats-pce -t "$LAB" --insecure \
	    --pce "tcp:127.0.0.1:$PORT" --stats 2>"$T/pcc.err" |
	    dec >"$T/pcc.jsonl" || [ $? -eq 65 ]
	enc "$T/rq.jsonl" | cats-pce -t "$LAB" 2>/dev/null | dec >"$T/rec.jsonl" ||
	    [ $? -eq 65 ]
	pcep_peer project <"$T/rec.jsonl" |
	    jq -S -c 'select(.type == "path-rep") | del(.ts)' | sort >"$T/a"
	jq -S -c 'select(.type == "path-rep") | del(.ts)' "$T/pcc.jsonl" |
	    sort >"$T/b"
	diff "$T/a" "$T/b"
	[ "$(wc -l <"$T/b")" -eq 24 ]
	# Every request had its own request id; unknown nodes answered here.
	grep '"type":"stats"' "$T/pcc.err" | jq -e '.counters["pce.sent"] == 22 and .counters["pce.replies"] == 22 and .counters["pce.local"] == 2 and .counters.requests == 0'
	kill -USR1 "$PCE_PID"
	wait_for 50 grep -q '"type":"stats"' "$T/err"
	grep '"type":"stats"' "$T/err" | jq -e '.counters["pcep.requests"] == 22'
}

@test "pcep: --pce with --pcep: a PCEP session's requests go to the remote PCE, its answers as if asked directly" {
	start_pce "$LAB"
	jq -c 'select(.type == "path-req") | del(.deadline)' \
	    "$DATA/pce/requests.jsonl" >"$T/rq.jsonl"
	pcep_peer pcc -c "tcp:127.0.0.1:$PORT" -T "$LAB" <"$T/rq.jsonl" \
	    >"$T/direct.jsonl"
	# A cats-pce between: PCE to its PCEP peers, PCC of the first.
	MID=$(free_port)
	cats-pce -t "$LAB" --insecure --pce "tcp:127.0.0.1:$PORT" \
	    --pcep "tcp:127.0.0.1:$MID" --listen "unix:$T/mid.sock" \
	    2>"$T/mid.err" &
	PCC_PID=$!
	wait_for 50 grep -q "PCEP on" "$T/mid.err"
	pcep_peer pcc -c "tcp:127.0.0.1:$MID" -T "$LAB" <"$T/rq.jsonl" \
	    >"$T/relayed.jsonl"
	jq -S -c 'del(.ts)' "$T/direct.jsonl" | sort >"$T/a"
	jq -S -c 'del(.ts)' "$T/relayed.jsonl" | sort >"$T/b"
	diff "$T/a" "$T/b"
	grep -q '"status":"ok"' "$T/b"
	grep -q '"status":"no-path"' "$T/b"
	n=$(jq -s '[.[] | select(.type == "path-rep")] | length' "$T/b")
	[ "$n" -ge 20 ]
	kill -USR1 "$PCC_PID"
	wait_for 50 grep -q '"type":"stats"' "$T/mid.err"
	grep '"type":"stats"' "$T/mid.err" | jq -e --argjson n "$n" \
	    '.counters["pcep.relayed"] == $n and .counters["pce.replies"] == $n and .counters.requests == 0'
	# The remote PCE down: the session's requests fail closed (NO-PATH,
	# PCE currently unavailable), never a path.
	kill "$PCE_PID"
	wait "$PCE_PID" 2>/dev/null || true
	PCE_PID=
	wait_for 50 grep -q "pce: .*session closed" "$T/mid.err"
	printf "$REQ\n" 3 | pcep_peer pcc -c "tcp:127.0.0.1:$MID" -T "$LAB" >"$T/down.jsonl"
	jq -e '.status == "error" and .reason == "pce-unavailable"' "$T/down.jsonl"
}

@test "pcep: --pce fails closed: PCE down, PCE mute, session lost; then reconnects" {
	PORT=$(free_port)
	start_pcc "$PORT" --pce-timeout 1s
	# Down: refused connections, every request an error at once.
	ask_pcc 1
	wait_for 30 pcc_answered 1
	[ "$(pcc_answer 1)" = "error pce-unavailable" ]
	grep -q 'Connection refused' "$T/pcc.err"
	# The PCE comes up: the backoff finds it, answers are paths again.
	cats-pce -t "$LAB" --insecure --pcep "tcp:127.0.0.1:$PORT" </dev/null \
	    2>"$T/err" &
	PCE_PID=$!
	wait_for 150 grep -q 'session up' "$T/pcc.err"
	ask_pcc 2
	wait_for 50 pcc_answered 2
	[ "$(pcc_answer 2)" = "ok " ]
	# It goes away: the session ends, requests fail closed.
	kill "$PCE_PID"
	wait "$PCE_PID" || true
	PCE_PID=
	wait_for 50 grep -q 'session closed' "$T/pcc.err"
	grep -q 'event=pce-session-closed' "$T/pcc.err"
	ask_pcc 3
	wait_for 30 pcc_answered 3
	[ "$(pcc_answer 3)" = "error pce-unavailable" ]
	# A peer that accepts and says nothing: --pce-timeout, then an error.
	socat "TCP-LISTEN:$PORT,bind=127.0.0.1,reuseaddr" EXEC:"sleep 30" &
	PCE_PID=$!
	wait_for 150 sh -c "ss -tn state established | grep -q ':$PORT '"
	ask_pcc 4
	wait_for 50 pcc_answered 4
	[ "$(pcc_answer 4)" = "error pce-unavailable" ]
	kill -USR1 "$PCC_PID"
	wait_for 50 grep -q '"type":"stats"' "$T/pcc.err"
	grep '"type":"stats"' "$T/pcc.err" | jq -e '.counters["pce.timeouts"] == 1'
	kill "$PCE_PID"
	wait "$PCE_PID" || true
	PCE_PID=
	# The end of the input ends the run once everything is answered.
	exec 7>&-
	wait "$PCC_PID"
	PCC_PID=
	[ "$(dec "$T/pcc.cbor" | jq -s 'map(select(.status == "ok")) | length')" = 1 ]
}

@test "pcep: TCP-MD5 (--tcp-md5): unsigned or wrongly signed peers never get a session" {
	run cats-pce -t "$LAB" --tcp-md5 "$T/none" --pce tcp:127.0.0.1:1
	[ "$status" -eq 77 ]
	printf '%s\n' 'pcep-shared-secret' >"$T/md5"
	printf '%s\n' 'another-secret' >"$T/md5.bad"
	run cats-pce -t "$LAB" --tcp-md5 "$T/md5" --pcep "tcp:127.0.0.1:$(free_port)"
	[ "$status" -eq 2 ]
	[[ "$output" == *"needs --pcep-allow"* ]]
	PORT=$(free_port)
	cats-pce -t "$LAB" --tcp-md5 "$T/md5" --pcep "tcp:127.0.0.1:$PORT" \
	    --pcep-allow 127.0.0.0/8 </dev/null 2>"$T/err" &
	PCE_PID=$!
	wait_for 50 grep -q "PCEP on" "$T/err"
	printf "$REQ\n" 7 >"$T/q.jsonl"
	# Without a key: the kernel drops the SYN, the connection never opens.
	run timeout 3 pcep_peer pcc -c "tcp:127.0.0.1:$PORT" -T "$LAB" -t 2000 <"$T/q.jsonl"
	[ "$status" -ne 0 ]
	# A PCC with the wrong key fails closed; with the key it has a path.
	enc "$T/q.jsonl" | cats-pce -t "$LAB" --tcp-md5 "$T/md5.bad" \
	    --pce "tcp:127.0.0.1:$PORT" --pce-timeout 1s 2>"$T/bad.err" | dec >"$T/bad.jsonl"
	[ "$(jq -r '[.status, .reason] | join(" ")' "$T/bad.jsonl")" = "error pce-unavailable" ]
	enc "$T/q.jsonl" | cats-pce -t "$LAB" --tcp-md5 "$T/md5" \
	    --pce "tcp:127.0.0.1:$PORT" 2>"$T/good.err" | dec >"$T/good.jsonl"
	[ "$(jq -r .status "$T/good.jsonl")" = ok ]
	! grep -q 'session up' "$T/bad.err" || false
}

# ---- FRR's pathd as the PCC (root; Debian 12 frr 8.4.4) ----
#
# zebra and pathd run by hand inside a network namespace of the test, with
# their own configuration, sockets and pid files.  pathd binds source port
# 4189, so cats-pce listens on another address of the namespace.  pathd
# connects only once zebra has given it an IPv6 router id.  FRR's pceplib
# has no SRv6: this interop is SR-MPLS.  Without kernel MPLS the policy
# stays Inactive; the computed path is checked in pathd's view (the
# candidate path chosen, from the PCE's reply) and in the capture.

frr_setup() {
	need_root
	[ -x /usr/lib/frr/pathd ] && [ -f /usr/lib/x86_64-linux-gnu/frr/modules/pathd_pcep.so ] ||
	    skip "needs frr (pathd, pathd_pcep)"
	NS="catsp2-pcep-$$"
	FRR="$T/frr"
	chmod 0711 "$T"	# FRR runs as frr
	mkdir -p "$FRR"
	chmod 0777 "$FRR"
	ip netns add "$NS"
	ip -n "$NS" link set lo up
	ip -n "$NS" addr add 10.99.0.1/32 dev lo	# the router (PCC)
	ip -n "$NS" addr add 10.99.0.2/32 dev lo	# cats-pce
	ip -n "$NS" addr add fc00:99::1/128 dev lo
	printf 'hostname r1\nrouter-id 10.99.0.1\nipv6 router-id fc00:99::1\n' >"$FRR/zebra.conf"
	cat >"$FRR/pathd.conf" <<'EOC'
hostname r1
debug pathd pcep basic
segment-routing
 traffic-eng
  policy color 1 endpoint 192.0.2.2
   name cats
   binding-sid 1111
   candidate-path preference 100 name dyn dynamic
  exit
  pcep
   pce-config G
    source-address ip 10.99.0.1
   exit
   pce PCE1
    config G
    address ip 10.99.0.2
   exit
   pcc
    peer PCE1 precedence 10
   exit
  exit
 exit
exit
EOC
	chmod 0644 "$FRR"/*.conf
	# The lab with the router as IF-1: pathd's END-POINTS source.
	jq '.nodes |= map(if .id == "IF-1" then .router_id = "10.99.0.1" else . end)' \
	    "$LAB" >"$FRR/topo.json"
}

frr_teardown() {
	local pid
	for pid in ${PATHD_PID:-} ${ZEBRA_PID:-} ${DUMP_PID:-}; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	[ -n "${NS:-}" ] && ip netns del "$NS" 2>/dev/null || true
}

vty() {
	ip netns exec "$NS" vtysh --vty_socket "$FRR" -c "$1"
}

@test "pcep: FRR pathd (SR-MPLS) computes its candidate path with cats-pce; tshark decodes it all" {
	frr_setup
	ip netns exec "$NS" tcpdump -i lo --immediate-mode -U -w "$FRR/pcep.pcap" 'tcp port 4189' \
	    >"$FRR/tcpdump.out" 2>&1 &
	DUMP_PID=$!
	wait_for 50 grep -q listening "$FRR/tcpdump.out"
	ip netns exec "$NS" cats-pce -t "$FRR/topo.json" --insecure \
	    --pcep tcp:10.99.0.2:4189 </dev/null 2>"$T/err" &
	PCE_PID=$!
	wait_for 50 grep -q "PCEP on" "$T/err"
	ip netns exec "$NS" /usr/lib/frr/zebra -u frr -g frr -f "$FRR/zebra.conf" \
	    -i "$FRR/zebra.pid" -z "$FRR/zserv.api" --vty_socket "$FRR" \
	    --log "file:$FRR/zebra.log" -P 0 </dev/null >"$FRR/zebra.out" 2>&1 &
	ZEBRA_PID=$!
	wait_for 50 test -S "$FRR/zserv.api"
	ip netns exec "$NS" /usr/lib/frr/pathd -u frr -g frr -M pathd_pcep \
	    -f "$FRR/pathd.conf" -i "$FRR/pathd.pid" -z "$FRR/zserv.api" \
	    --vty_socket "$FRR" --log "file:$FRR/pathd.log" -P 0 </dev/null \
	    >"$FRR/pathd.out" 2>&1 &
	PATHD_PID=$!
	wait_for 200 grep -q 'Received computation reply 1 (no-path: false)' "$FRR/pathd.log"
	run vty 'show sr-te pcep session'
	echo "$output"
	[[ "$output" == *"Session Status UP"* ]]
	[[ "$output" == *"Message PcRep:     0      1"* ]]
	run vty 'show sr-te policy detail'
	echo "$output"
	[[ "$output" == *"Name: dyn  Type: dynamic  Segment-List: (created by PCE)"* ]]
	grep -q 'best candidate changed from none to dyn' "$FRR/pathd.log"
	grep -q 'session up' "$T/err"
	# The capture: every message decoded, none malformed; the reply's
	# SR-ERO is IF-1 P1 P2 EF-2's node SID (16002, IPv4 node NAI).
	wait_for 50 sh -c "[ \$(stat -c %s '$FRR/pcep.pcap') -gt 1000 ]"
	kill -INT "$DUMP_PID"
	wait "$DUMP_PID" || true
	DUMP_PID=
	tshark -r "$FRR/pcep.pcap" -Y pcep >"$FRR/summary" 2>"$FRR/tshark.err" || cat "$FRR/tshark.err"
	cat "$FRR/summary"
	grep -q 'Open' "$FRR/summary"
	grep -q 'Keepalive' "$FRR/summary"
	grep -q 'PCReq' "$FRR/summary"
	grep -q 'PCRep' "$FRR/summary"
	tshark -r "$FRR/pcep.pcap" -V 2>/dev/null >"$FRR/full"
	! grep -qi 'malformed\|Expert Info (Warn\|Expert Info (Error' "$FRR/full" || false
	grep -q 'Type: SUBOBJECT SR (36)' "$FRR/full"
	grep -q 'NAI Type: IPv4 Node ID (1)' "$FRR/full"
	grep -q 'Label: 16002' "$FRR/full"
}
