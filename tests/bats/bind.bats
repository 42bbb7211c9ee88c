#!/usr/bin/env bats
# cats-bind: the filter in replay time, the journal across kill -9 and torn
# tails, forwarders on the socket (commit order, re-sync, restart epoch).

load helper

setup() {
	W=$(mktemp -d "${BATS_TMPDIR:-/tmp}/bind.$$.XXXXXX")
	BIND_PIDS=""
}

teardown() {
	for p in $BIND_PIDS; do
		kill -9 "$p" 2>/dev/null || true
	done
	exec 7>&- 2>/dev/null || true
	rm -rf "$W"
}

# N path replies (commit none makes each one ACTIVE at once).
gen_reps() {
	python3 - "$1" "${2:-1000}" <<'EOF'
import sys
n, ts = int(sys.argv[1]), int(sys.argv[2])
for i in range(n):
    src = "10.%d.%d.%d" % ((i >> 16) & 255, (i >> 8) & 255, i & 255)
    print('{"type":"path-rep","txn":%d,"ts":%d,"status":"ok","headend":"IF-1",'
          '"endpoint":"EF-2","dataplane":"srv6","segments":[{"kind":"node",'
          '"node":"EF-2","sid":"fc00:2::%x"}],"path_id":%d,"gen":3,'
          '"decision":{"cs_id":"S1","csci_id":"B","locator":"198.51.100.21",'
          '"egress":"EF-2","ts":%d,"cst_gen":5,"nst_gen":6},'
          '"flow":{"proto":6,"src":"%s","sport":%d,"dst":"192.0.2.100",'
          '"dport":443},"ingress":"IF-1","deadline":%d}'
          % (i + 1, ts, i % 7 + 1, i % 7, ts, src, 1024 + i % 50000,
             ts + 10 ** 9))
EOF
}

# At least one JSON line of FILE satisfies COND (jq).
has() {
	[ "$(jq -c "select($2)" "$1" | wc -l)" -ge 1 ]
}

# Every binding of a dump is whole: both directions, validated.
all_whole() {
	cats-cbor check -q -t binding "$1" &&
	[ "$(dec "$1" | jq -c 'select(.fwd == null or .rev == null or
	    .fwd.match == null or .rev.match == null or .fwd.sids == null)' |
	    wc -l)" -eq 0 ]
}

@test "cats-bind: --help is the synopsis of the man page; --version" {
	run cats-bind --help
	[ "$status" -eq 0 ]
	check_synopsis cats-bind
	run cats-bind --version
	[ "$status" -eq 0 ]
	[[ "$output" == "cats-bind (cats) "* ]]
	run cats-bind --bogus
	[ "$status" -eq 2 ]
	run cats-bind --dump
	[ "$status" -eq 2 ]
}

@test "cats-bind: replay fixture: join, commit, no-path, passed error, late reply, hard expiry" {
	enc "$DATA/bind/replay.jsonl" >"$W/in"
	cats-bind --replay -q --trace "$W/trace" <"$W/in" >"$W/out"
	dec "$W/out" >"$W/out.jsonl"
	diff -u "$DATA/bind/replay.out.jsonl" "$W/out.jsonl"
	diff -u "$DATA/bind/replay.trace" "$W/trace"
	# The same input gives the same output, byte for byte.
	cats-bind --replay -q <"$W/in" | cmp - "$W/out"
	# The binding: forward (match, locator, SRv6 segment list, egress) and
	# reverse (service-side tuple, client, source restoration, owner).
	has "$W/out.jsonl" '.op == "install" and .fwd.locator ==
	    "198.51.100.21" and .fwd.sids == ["fc00:1::1", "fc00:2::100"] and
	    .fwd.egress == "EF-2" and .rev.match.src == "198.51.100.21" and
	    .rev.match.sport == 443 and .rev.match.dst == "192.0.2.10" and
	    .rev.match.dport == 51000 and .rev.restore_src == "192.0.2.100" and
	    .rev.owner == "IF-1" and .path_id == 7 and .cst_gen == 5 and
	    .nst_gen == 6 and .epoch == 1 and .version == 1'
	# The late reply made nothing; its transaction failed at the deadline.
	[ "$(jq -c 'select(.txn == 4)' "$W/out.jsonl" | jq -r .code)" = timeout ]
	grep -q 'txn=1 id=1 ACTIVE -> DRAINING (expiry) reason=hard' "$W/trace"
}

@test "cats-bind: stats counts the late reply, states and failures by reason" {
	enc "$DATA/bind/replay.jsonl" | cats-bind --replay -q --stats |
	    dec >"$W/out"
	has "$W/out" '.type == "stats" and (.counters |
	    .["refused.late-reply"] == 1 and .["fail.no-path"] == 1 and
	    .["fail.timeout"] == 1 and .["fail.hard"] == 1 and
	    .["expired.hard"] == 1 and .activated == 1 and .bindings == 0 and
	    .["status.installed"] == 2 and .passed == 1)'
}

@test "cats-bind: bad input is one line each, counted, and the rest goes on" {
	{
		printf '\x1c\xff'
		echo '{"type":"path-rep","txn":0,"ts":1,"status":"ok"}' | enc
		echo '{"type":"status","fwd":"IF-1","event":"installed","id":99,"ts":5}' | enc
		gen_reps 2 | enc
	} >"$W/in"
	run cats-bind --replay --commit none --stats <"$W/in"
	[ "$status" -eq 65 ]
	[ "$(echo "$output" | grep -c 'cats-bind: record [01]:')" -eq 2 ]
	cats-bind --replay -q --commit none --stats <"$W/in" 2>/dev/null |
	    dec >"$W/out"
	has "$W/out" '.type == "stats" and (.counters | .["in.bad"] == 2 and
	    .["refused.unknown-binding"] == 1 and .activated == 2)'
	run cats-bind --replay --strict --commit none <"$W/in"
	[ "$status" -eq 65 ]
}

@test "cats-bind: admission limits fail closed with a reason" {
	gen_reps 3 | sed 's/"src":"10\.0\.0\.[0-9]*"/"src":"10.9.9.9"/' | enc >"$W/in"
	cats-bind --replay -q --commit none --limit client-bindings=2 \
	    <"$W/in" | dec >"$W/out"
	[ "$(jq -c 'select(.type == "binding")' "$W/out" | wc -l)" -eq 2 ]
	has "$W/out" '.type == "error" and .code == "limit-client" and .txn == 3'
	[ "$(jq -c 'select(.type == "error")' "$W/out" | wc -l)" -eq 1 ]
	gen_reps 3 | enc | cats-bind --replay -q --commit none \
	    --limit bindings=1 | dec >"$W/out"
	[ "$(jq -c 'select(.code == "limit-global")' "$W/out" | wc -l)" -eq 2 ]
	run cats-bind --limit nonsense=1
	[ "$status" -eq 2 ]
}

@test "cats-bind: restart restores from the journal; a torn tail is dropped whole" {
	gen_reps 50 | enc >"$W/in"
	cats-bind --replay -q --commit none --journal "$W/j" <"$W/in" >"$W/out1"
	cats-bind --dump --journal "$W/j" >"$W/d1"
	[ "$(dec "$W/d1" | wc -l)" -eq 50 ]
	all_whole "$W/d1"
	# The journal alone (no snapshot: killed, not stopped) restores the
	# same table.
	mkfifo "$W/fifo"
	cats-bind --replay -q --commit none --journal "$W/j2" --listen \
	    "unix:$W/sock" <"$W/fifo" >"$W/out2" &
	BIND_PIDS=$!
	cat "$W/in" >"$W/fifo"
	wait_for 100 sh -c "[ \$(cats-cbor decode '$W/out2' | wc -l) -eq 50 ]"
	kill -9 "$BIND_PIDS"
	rc=0
	wait "$BIND_PIDS" || rc=$?
	[ "$rc" -eq 137 ]	# alive until the kill, not dead before
	[ ! -e "$W/j2/snapshot" ]
	cats-bind --dump --journal "$W/j2" >"$W/d2"
	[ "$(dec "$W/d2" | wc -l)" -eq 50 ]
	cmp "$W/d1" "$W/d2"
	# Tear the tail of the last segment.
	seg=$(ls "$W/j2"/journal.* | xargs ls -S | head -1)
	size=$(stat -c %s "$seg")
	truncate -s $((size - 9)) "$seg"
	cats-bind --dump --journal "$W/j2" 2>"$W/err" >"$W/d3"
	grep -q "torn tail of [0-9]* bytes" "$W/err"
	# The torn record was the last commit: dropped whole, that binding is
	# back as BINDING_READY (to be committed again), never half.
	dec "$W/d3" >"$W/d3.jsonl"
	[ "$(wc -l <"$W/d3.jsonl")" -eq 50 ]
	[ "$(jq -c 'select(.state == "ACTIVE")' "$W/d3.jsonl" | wc -l)" -eq 49 ]
	has "$W/d3.jsonl" '.id == 50 and .state == "BINDING_READY"'
	all_whole "$W/d3"
	# A restart truncates the torn record away, and the epoch grows.
	e1=$(dec "$W/d3" | jq -s 'map(.epoch) | max')
	echo -n | cats-bind --replay -q --journal "$W/j2" 2>"$W/err" >/dev/null
	grep -q "dropped a torn tail of [0-9]* bytes" "$W/err"
	cats-bind --dump --journal "$W/j2" 2>"$W/err" >"$W/d4"
	grep -q "epoch $((e1 + 1))" "$W/err"
	! grep -q torn "$W/err" || false
	[ "$(dec "$W/d4" | wc -l)" -eq 50 ]
}

@test "cats-bind: kill -9 in the middle of a burst: every binding whole or absent" {
	gen_reps 20000 | enc >"$W/in"
	mkfifo "$W/fifo"
	# Small snapshots: background snapshots run during the burst too.
	cats-bind --replay -q --commit none --journal "$W/j" \
	    --snapshot-size 256k <"$W/fifo" >"$W/out" 2>"$W/err" &
	pid=$!
	BIND_PIDS="$pid"
	cat "$W/in" >"$W/fifo" &
	# Wait until some bindings are out, then kill it mid-stream.
	wait_for 100 test -s "$W/out"
	kill -9 "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 137 ]	# alive until the kill, not dead before
	n_out=$(dec "$W/out" 2>/dev/null | jq -c 'select(.type == "binding")' |
	    wc -l)
	cats-bind --dump --journal "$W/j" >"$W/d" 2>"$W/err2"
	n_dump=$(dec "$W/d" | wc -l)
	echo "out $n_out dump $n_dump" >&3
	[ "$n_dump" -ge 1 ] && [ "$n_dump" -le 20000 ]
	all_whole "$W/d"
	# Journal before output: whatever left the process is restored.
	[ "$n_dump" -ge "$n_out" ]
	dec "$W/out" 2>/dev/null | jq -r 'select(.type == "binding") | .id' |
	    sort -n >"$W/ids.out"
	dec "$W/d" | jq -r .id | sort -n >"$W/ids.dump"
	[ -z "$(comm -23 "$W/ids.out" "$W/ids.dump")" ]
	# And the next owner starts from there, one epoch later.
	echo -n | cats-bind --replay --journal "$W/j" 2>"$W/err3" >/dev/null
	grep -q "restored $n_dump bindings" "$W/err3"
}

@test "cats-bind: forwarders: egress first, then ingress; re-sync on reconnect" {
	mkfifo "$W/fifo"
	cats-bind --listen "unix:$W/sock" --journal "$W/j" --trace "$W/trace" \
	    <"$W/fifo" >"$W/out" 2>"$W/err" &
	BIND_PIDS=$!
	exec 7>"$W/fifo"
	wait_for 50 test -S "$W/sock"
	bind_fwdsim -c "unix:$W/sock" -n EF-2 -t 5 -x 2 >"$W/ef" &
	efp=$!
	bind_fwdsim -c "unix:$W/sock" -n IF-1 -t 5 -x 2 >"$W/if" &
	ifp=$!
	wait_for 50 grep -q "IF-1 connected" "$W/err"
	wait_for 50 grep -q "EF-2 connected" "$W/err"
	now=$(date +%s%3N)
	gen_reps 1 "$now" | enc >&7
	wait "$efp" "$ifp"
	wait_for 50 grep -q "BINDING_READY -> ACTIVE" "$W/trace"
	# Each got the end-of-sync marker at hello, then the binding.
	has "$W/ef" '.type == "binding" and .id == 1 and .op == "install"'
	has "$W/if" '.type == "binding" and .id == 1'
	has "$W/if" '.type == "status" and .event == "hello" and
	    .fwd == "cats-bind"'
	# The egress had it before the ingress did.
	t_ef=$(jq 'select(.type == "binding") | .ts' "$W/ef")
	t_if=$(jq 'select(.type == "binding") | .ts' "$W/if")
	[ "$t_ef" -le "$t_if" ]
	# The ingress reconnects (a new forwarder epoch): it is re-synced.
	bind_fwdsim -c "unix:$W/sock" -n IF-1 -e 2 -t 5 -x 2 >"$W/if2"
	has "$W/if2" '.type == "binding" and .id == 1 and .version == 1'
	# The binding first, then the end-of-sync marker.
	[ "$(jq -r .type "$W/if2" | tr '\n' ' ')" = "binding status " ]
	# A clean stop, a restart: the binding is restored before any
	# forwarder hears of the new epoch, and re-sent with it.
	exec 7>&-
	kill -TERM "$BIND_PIDS"
	wait "$BIND_PIDS"	# a clean stop: exit 0
	e1=$(jq 'select(.type == "binding") | .epoch' "$W/if2")
	[ ! -e "$W/sock" ]
	mkfifo "$W/fifo2"
	cats-bind --listen "unix:$W/sock" --journal "$W/j" <"$W/fifo2" \
	    >/dev/null 2>"$W/err2" &
	BIND_PIDS=$!
	exec 7>"$W/fifo2"
	wait_for 50 test -S "$W/sock"
	grep -q "restored 1 bindings" "$W/err2"
	bind_fwdsim -c "unix:$W/sock" -n EF-2 -e 3 -t 5 -x 2 >"$W/ef3"
	e2=$(jq 'select(.type == "binding") | .epoch' "$W/ef3")
	[ "$e2" -eq $((e1 + 1)) ]
	has "$W/ef3" '.type == "binding" and .id == 1 and .fwd.locator ==
	    "198.51.100.21" and .rev.restore_src == "192.0.2.100" and
	    .fwd.sids == ["fc00:2::1"] and .path_id == 0'
}

@test "cats-bind: kill -9 with forwarders: every binding an ingress got is in the journal; the egress's may go ahead" {
	mkfifo "$W/fifo"
	cats-bind --listen "unix:$W/sock" --journal "$W/j" <"$W/fifo" \
	    >/dev/null 2>"$W/err" &
	pid=$!
	BIND_PIDS=$pid
	exec 7>"$W/fifo"
	wait_for 50 test -S "$W/sock"
	bind_fwdsim -c "unix:$W/sock" -n EF-2 -t 20 >"$W/ef" &
	efp=$!
	bind_fwdsim -c "unix:$W/sock" -n IF-1 -t 20 >"$W/if" &
	ifp=$!
	wait_for 50 grep -q "IF-1 connected" "$W/err"
	wait_for 50 grep -q "EF-2 connected" "$W/err"
	gen_reps 20000 "$(date +%s%3N)" | enc >"$W/in"
	cat "$W/in" >&7 &
	wait_for 100 sh -c "[ \$(grep -c '\"binding\"' '$W/if') -ge 200 ]"
	kill -9 "$pid"
	wait "$pid" || true
	exec 7>&-
	wait "$efp" "$ifp" || true
	wait	# the feeder, its pipe broken
	cats-bind --dump --journal "$W/j" >"$W/d" 2>"$W/err2"
	dec "$W/d" | jq -r .id | sort -n >"$W/ids.dump"
	jq -r 'select(.type == "binding") | .id' "$W/if" | sort -nu >"$W/ids.if"
	jq -r 'select(.type == "binding") | .id' "$W/ef" | sort -nu >"$W/ids.ef"
	echo "ingress $(wc -l <"$W/ids.if") egress $(wc -l <"$W/ids.ef")" \
	    "journal $(wc -l <"$W/ids.dump")" \
	    "egress only $(comm -23 "$W/ids.ef" "$W/ids.dump" | wc -l)" >&3
	[ -s "$W/ids.if" ]
	# What released a first packet is durable, whatever the egress got.
	[ -z "$(comm -23 "$W/ids.if" "$W/ids.dump")" ]
	# The ingress never had one the egress had not installed first.
	[ -z "$(comm -23 "$W/ids.if" "$W/ids.ef")" ]
}

@test "cats-bind: a restart restoring 30k bindings: their re-sync leaves no channel silent" {
	# The bench's restart restored ~18k and sent them all in the hello's
	# turn: over a second of nothing on every other channel, a forwarder's
	# --ctl-deadline closed it, its hello began the re-sync again.
	now=$(date +%s%3N)
	gen_reps 30000 "$now" | enc >"$W/reps"
	cats-bind --journal "$W/j" --commit none <"$W/reps" >/dev/null 2>&1
	cats-key gen -n cats-bind -o "$W/bind" >/dev/null
	mkfifo "$W/fifo"
	cats-bind --listen "unix:$W/sock" --journal "$W/j" --key "$W/bind.key" \
	    <"$W/fifo" >/dev/null 2>"$W/err" &
	BIND_PIDS=$!
	exec 7>"$W/fifo"
	wait_for 100 test -S "$W/sock"
	grep -q "restored 30000 bindings" "$W/err"
	# A forwarder of none of them, on the socket first: it hears the
	# keepalives, one a second, whatever the others' re-syncs.
	bind_fwdsim -c "unix:$W/sock" -n EF-1 -g -q -t 6 >/dev/null \
	    2>"$W/ef1.gap" &
	p1=$!
	wait_for 50 grep -q "EF-1 connected" "$W/err"
	# Each stops at its re-sync's last record (-x); -t only ends a hang
	# (the old 8 s was a budget a loaded machine overran, at load 12).
	bind_fwdsim -c "unix:$W/sock" -n IF-1 -q -t 120 -x 30001 >"$W/if" &
	p2=$!
	bind_fwdsim -c "unix:$W/sock" -n EF-2 -g -q -t 120 -x 30001 \
	    >"$W/ef2" 2>"$W/ef2.gap" &
	p3=$!
	wait "$p1" "$p2" "$p3"
	cat "$W/ef1.gap" "$W/ef2.gap"
	s1=$(sed -n 's/^silence \([0-9]*\) ms$/\1/p' "$W/ef1.gap")
	s2=$(sed -n 's/^silence \([0-9]*\) ms$/\1/p' "$W/ef2.gap")
	echo "# the longest silence: $s1 ms (EF-1), $s2 ms (EF-2)" >&3
	# EF-1: a keepalive a second; EF-2: its re-sync flows from its hello
	# (in one turn: EF-1 1418 ms, EF-2 1368 ms, the length of IF-1's).
	[ "$s1" -lt 2000 ] && [ "$s2" -lt 1000 ]
	# Each re-synced whole: every binding, then the marker.
	for f in if ef2; do
		[ "$(jq -c 'select(.type == "binding")' "$W/$f" | wc -l)" -eq 30000 ]
		[ "$(tail -1 "$W/$f" | jq -r '.type + " " + .event')" = "status hello" ]
	done
	# None was closed or came again.
	[ "$(grep -c "connected (epoch" "$W/err")" -eq 3 ]
}

@test "cats-bind: a failed install at the egress: the ingress never sees it" {
	mkfifo "$W/fifo"
	cats-bind --listen "unix:$W/sock" --trace "$W/trace" <"$W/fifo" \
	    >"$W/out" 2>"$W/err" &
	BIND_PIDS=$!
	exec 7>"$W/fifo"
	wait_for 50 test -S "$W/sock"
	bind_fwdsim -c "unix:$W/sock" -n EF-2 -f -t 5 -x 2 >"$W/ef" &
	efp=$!
	bind_fwdsim -c "unix:$W/sock" -n IF-1 -t 3 -x 2 >"$W/if" &
	ifp=$!
	wait_for 50 grep -q "IF-1 connected" "$W/err"
	wait_for 50 grep -q "EF-2 connected" "$W/err"
	gen_reps 1 "$(date +%s%3N)" | enc >&7
	wait "$efp" "$ifp"
	wait_for 50 grep -q "BINDING_READY -> FAILED" "$W/trace"
	! has "$W/if" '.type == "binding"' || false
	has "$W/if" '.type == "error" and .code == "commit-failed" and
	    .txn == 1'
}

@test "cats-bind: --keys: a forwarder must authenticate as itself; SIGUSR1 writes stats" {
	cats-key psk -n IF-1 -o "$W/if1.psk"
	cats-key psk -n EF-2 -o "$W/ef2.psk"
	cat "$W/if1.psk" "$W/ef2.psk" >"$W/ring"
	chmod 600 "$W/ring"
	mkfifo "$W/fifo"
	cats-bind --listen "unix:$W/sock" --keys "$W/ring" <"$W/fifo" \
	    >"$W/out" 2>"$W/err" &
	BIND_PIDS=$!
	exec 7>"$W/fifo"
	wait_for 50 test -S "$W/sock"
	# Signed by its own key: accepted, re-synced (the marker).
	bind_fwdsim -c "unix:$W/sock" -n IF-1 -k "$W/if1.psk" -t 3 -x 1 \
	    >"$W/ok"
	has "$W/ok" '.type == "status" and .event == "hello"'
	# MAC'd (protected header {1: 5, 4: kid}: HMAC 256/256) with the key
	# derived from IF-1's PSK, though cats-bind has no --key: cats-fwd
	# checks it in the loop tests (--peer-keys).
	has "$W/ok" '.type == "status" and (.auth[0]["$bytes"] |
	    startswith("ogEF"))'
	# Unsigned, or signed with another forwarder's key: refused.
	bind_fwdsim -c "unix:$W/sock" -n IF-1 -t 2 -x 1 >"$W/bad1"
	bind_fwdsim -c "unix:$W/sock" -n IF-1 -k "$W/ef2.psk" -t 2 -x 1 \
	    >"$W/bad2"
	[ ! -s "$W/bad1" ] && [ ! -s "$W/bad2" ]
	grep -q "event=auth-refused fwd=IF-1" "$W/err"
	kill -USR1 "$BIND_PIDS"
	wait_for 50 sh -c "cats-cbor decode '$W/out' | grep -q stats"
	dec "$W/out" >"$W/out.jsonl"
	has "$W/out.jsonl" '.type == "stats" and .tool == "cats-bind" and
	    .counters["auth.refused"] == 2 and .counters.resyncs == 1'
}

@test "cats-bind: a net record taking a link down re-paths its flows; no path left: repair-failed" {
	# Flow 1 over IF-1 A EF-1, flow 2 over IF-1 C EF-2; link A->EF-1
	# down: flow 1 asked again (same instance), the reply over B is a
	# refresh, version 2; node B down: asked again, no path: it fails.
	enc "$DATA/bind/net.jsonl" | cats-bind --replay -q --commit none \
	    --stats | dec >"$W/out"
	[ "$(jq -c 'select(.type == "path-req")' "$W/out" | wc -l)" -eq 2 ]
	has "$W/out" '.type == "path-req" and .txn == 1 and .endpoint ==
	    "EF-1" and .decision.csci_id == "X"'
	! has "$W/out" '.type == "path-req" and .txn == 2' || false
	has "$W/out" '.type == "binding" and .op == "refresh" and .id == 1 and
	    .version == 2 and .csci_id == "X" and .path_id == 2 and
	    .fwd.sids == ["fc00:b::1", "fc00:1::1"]'
	has "$W/out" '.type == "error" and .txn == 1 and .code ==
	    "repair-failed" and .msg == "repair: no-path"'
	! has "$W/out" '.type == "binding" and .id == 2 and .op != "install"' || false
	has "$W/out" '.type == "stats" and (.counters | .["net.downs"] == 2 and
	    .["net.repairs"] == 2 and .["repair.requests"] == 2 and
	    .repaired == 1 and .["fail.repair-failed"] == 1 and .bindings == 1)'
	# The net records are passed on (to whoever is after cats-bind).
	[ "$(jq -c 'select(.type == "net")' "$W/out" | wc -l)" -eq 2 ]
}
