#!/usr/bin/env bats
# cats-sma over loopback with real processes: HTTP push, pull, SSE, the
# hybrid STALE pull, tokens, the admin interface, reloads and limits.
load helper

setup() {
	W="$BATS_TEST_TMPDIR"
	PIDS=()
	cd "$W"
	cats-key gen -n issuer -o iss >/dev/null
	cats-key gen -n sci -o scik >/dev/null
	# The tokens of the tests.
	cats-key token -k iss.key -s sci-A -c ARS -o A.tok
	cats-key token -k iss.key -s sci-B -c ARS -o B.tok
	cats-key token -k iss.key -s sci-C -c ARS -p scik.pub -o C.tok
	cats-key token -k iss.key -s sci-E -c ARS -e 1s -T 1000000000000 \
	    -o E.tok
	P=$(free_port)
	U=http://127.0.0.1:$P
	cat > sma.conf <<-EOF
	id = sma-http
	site = site-a
	egress = EF-1
	[auth]
	issuers = $W/iss.pub
	revoked = $W/revoked
	[timing]
	interval = 1s
	[http]
	max-body = 4k
	timeout = 1s
	stall = 1500ms
	EOF
	: > revoked
}

teardown() { stop_pids; }

start_sma() {
	bg cats-sma -c sma.conf -l "$U/" -a "unix:$W/admin.sock" \
	    -t "file:$W/out.cbor" "$@" 2> "$W/sma.err"
	SMA=$LAST
	wait_for 50 curl -sf "$U/health"
}

admin() { curl -s --unix-socket "$W/admin.sock" "$@"; }
out() { dec < "$W/out.cbor"; }

# POST a file; prints "STATUS BODY".
post() {
	curl -s -o "$W/body" -w '%{http_code}' -X POST \
	    -H "Content-Type: ${2:-application/cbor}" --data-binary "@$1" \
	    "$U/reports" > "$W/code"
	echo "$(cat "$W/code") $(cat "$W/body")"
}

report() { # csci cs token [more cats-sci args]
	local s=$1 c=$2 t=$3
	shift 3
	cats-sci -s "$s" -c "$c" -K "$t" -g 100 -C 5 -1 "$@"
}

@test "sma_http: push: signed reports in, deltas out; 200 with a one-line body" {
	start_sma
	cats-sci -s sci-A -c ARS -K A.tok -g 100 -C 5 -I 100ms -n 3 \
	    -t "$U/reports"
	wait_for 30 sh -c "cats-cbor decode < $W/out.cbor | grep -q HEALTHY"
	out | jq -e -s '.[0].op == "full" and
	    ([.[] | .entries[]? | select(.csci_id == "sci-A")] | length) >= 2'
	report sci-A ARS A.tok -q 99999999999999 > a.cbor
	[ "$(post a.cbor)" = "200 1 accepted" ]
	# Several reports in one cbor-seq body.
	{ report sci-B ARS B.tok -q 1; report sci-B ARS B.tok -q 2; } > b.cbor
	[ "$(post b.cbor application/cbor-seq)" = "200 2 accepted" ]
}

@test "sma_http: bad pushes: 400 401 403 409 413 415 405, audited, cache untouched" {
	start_sma
	report sci-A ARS A.tok -q 10 > good.cbor
	[ "$(post good.cbor)" = "200 1 accepted" ]
	printf 'garbage' > junk
	r=$(post junk)
	[[ "$r" == "400 0 accepted, 0 quarantined, 1 rejected; record 0: "* ]]
	cats-sci -s sci-A -c ARS -g 1 -C 1 -1 -q 11 > notoken.cbor
	[[ "$(post notoken.cbor)" == "401 "*"token: missing"* ]]
	report sci-A VRS A.tok -q 12 > othercs.cbor
	[[ "$(post othercs.cbor)" == "403 "*"cs_id: the token does not authorize"* ]]
	report sci-X ARS A.tok -q 13 > othersci.cbor
	[[ "$(post othersci.cbor)" == "403 "*"token is for CSCI-ID sci-A"* ]]
	report sci-E ARS E.tok -q 14 > expired.cbor
	[[ "$(post expired.cbor)" == "401 "*"token expired"* ]]
	# A token whose signature does not verify.
	# (flip a bit: overwriting with a fixed byte is a no-op 1 time in 256)
	python3 -c 'import sys; b = bytearray(open("A.tok", "rb").read()); b[-3] ^= 1; open("bad.tok", "wb").write(b)'
	report sci-A ARS bad.tok -q 15 > badsig.cbor
	[[ "$(post badsig.cbor)" == "401 "*"signature"* ]]
	# A token that binds a key, report not signed with it.
	report sci-C ARS C.tok -q 16 > unsigned.cbor
	[[ "$(post unsigned.cbor)" == "401 "*"must be signed"* ]]
	report sci-C ARS C.tok -q 17 -k scik.key > signed.cbor
	[ "$(post signed.cbor)" = "200 1 accepted" ]
	[[ "$(post good.cbor)" == "409 "*"duplicate"* ]]
	head -c 5000 /dev/zero > big
	[ "$(post big)" = "413 body over 4096 bytes" ]
	[[ "$(post good.cbor text/plain)" == "415 expected application/cbor"* ]]
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$U/reports")" = 405 ]
	# One audit line per refusal (405 and 415 say nothing about a report).
	[ "$(grep -c 'event=auth-fail' sma.err)" -eq 6 ]
	[ "$(grep -c 'event=reject' sma.err)" -eq 3 ]
	# The cache has what was accepted, nothing else.
	admin http://x/cache > cache.jsonl
	jq -e -s 'length == 2 and (map(.csci_id) | sort) == ["sci-A","sci-C"]
	    and (.[] | select(.csci_id == "sci-A") | .gen) == 10' cache.jsonl
	# Every body is one line.
	[ "$(wc -l < body)" -le 1 ]
}

@test "sma_http: revocation list reloaded on SIGHUP; a bad file keeps the old config" {
	start_sma
	report sci-A ARS A.tok -q 1 > r1.cbor
	[ "$(post r1.cbor)" = "200 1 accepted" ]
	cti=$(cats-key verify -k iss.pub A.tok | jq -r .cti)
	echo "$cti" > revoked
	# A broken configuration first: refused, the old one stays.
	cp sma.conf good.conf
	printf '[validate]\nanomaly = sometimes\n' >> sma.conf
	kill -HUP "$SMA"
	wait_for 30 grep -q 'reload refused' sma.err
	grep -q 'sma.conf:1[0-9]: anomaly: expected flag or quarantine' sma.err
	grep -q 'event=config-refused' sma.err
	report sci-A ARS A.tok -q 2 > r2.cbor
	[ "$(post r2.cbor)" = "200 1 accepted" ]
	# The good one: the token is now revoked, the cached verification gone.
	cp good.conf sma.conf
	kill -HUP "$SMA"
	wait_for 30 grep -q 'event=config file=' sma.err
	report sci-A ARS A.tok -q 3 > r3.cbor
	[[ "$(post r3.cbor)" == "403 "*"token revoked"* ]]
}

@test "sma_http: pull: periodic GET of a configured SCI, its own reports only" {
	Q=$(free_port)
	bg cats-sci -s sci-B -c ARS -K B.tok -g 300 -C 7 -I 10s \
	    -l "http://127.0.0.1:$Q/"
	wait_for 50 curl -sf -o /dev/null "http://127.0.0.1:$Q/report"
	# A second SCI answers with somebody else's reports.
	R=$(free_port)
	bg cats-sci -s sci-A -c ARS -K A.tok -g 1 -C 1 -I 10s \
	    -l "http://127.0.0.1:$R/"
	wait_for 50 curl -sf -o /dev/null "http://127.0.0.1:$R/report"
	cat >> sma.conf <<-EOF
	[sci "sci-B"]
	pull = http://127.0.0.1:$Q/report
	pull-interval = 200ms
	[sci "sci-Z"]
	pull = http://127.0.0.1:$R/report
	pull-interval = 200ms
	EOF
	start_sma
	wait_for 50 sh -c "cats-cbor decode < $W/out.cbor | grep -q '\"state\":\"HEALTHY\"'"
	out | jq -e -s '[.[] | .entries[]? | select(.csci_id == "sci-B")][-1] |
	    .gas == 300 and .comp_time_ms == 7'
	wait_for 30 grep -q 'this connection belongs to CSCI-ID sci-Z' sma.err
	! out | grep -q '"csci_id":"sci-A"' || false
}

@test "sma_http: hybrid: a STALE SCI is pulled at once and comes back" {
	Q=$(free_port)
	# The SCI's own server; its sequence numbers go on from the push.
	bg cats-sci -s sci-B -c ARS -K B.tok -g 300 -C 7 -I 500ms -q 100 \
	    -l "http://127.0.0.1:$Q/"
	wait_for 50 curl -sf -o /dev/null "http://127.0.0.1:$Q/report"
	cat >> sma.conf <<-EOF
	[sci "sci-B"]
	pull = http://127.0.0.1:$Q/report
	EOF
	start_sma
	# One push discovers it; no pull-interval: only the STALE pull.
	cats-sci -s sci-B -c ARS -K B.tok -g 300 -C 7 -I 500ms -n 1 -q 1 \
	    -t "$U/reports"
	wait_for 60 sh -c "cats-cbor decode < $W/out.cbor | grep -q STALE"
	wait_for 30 sh -c "cats-cbor decode < $W/out.cbor | jq -s -e '
	    [.[] | .entries[]? | .state] | index(\"STALE\") as \$i |
	    \$i != null and (.[\$i+1:] | index(\"ACTIVE\")) != null' >/dev/null"
	grep -q 'from=STALE to=ACTIVE reason=report' sma.err
	! grep -q 'to=FAILED' sma.err || false
}

@test "sma_http: SSE: stream, resume with Last-Event-ID, stall, reconnect" {
	Q=$(free_port)
	# A scripted event server: the first connection sends reports 7 and
	# 8 and ends; the second records Last-Event-ID and sends 9.
	for s in 7 8 9; do
		cats-sci -s sci-A -c ARS -K A.tok -g $((s * 10)) -C 5 -q $s -1 |
		    basenc --base64url -w0 | tr -d = > ev$s
	done
	cat > sse.py <<-'EOF'
	import http.server, sys, os
	n = [0]
	class H(http.server.BaseHTTPRequestHandler):
	    protocol_version = "HTTP/1.0"
	    def log_message(self, *a): pass
	    def do_GET(self):
	        n[0] += 1
	        open("lastid.%d" % n[0], "w").write(
	            self.headers.get("Last-Event-ID", "none"))
	        self.send_response(200)
	        self.send_header("Content-Type", "text/event-stream")
	        self.end_headers()
	        ids = [7, 8] if n[0] == 1 else [9]
	        for i in ids:
	            d = open("ev%d" % i).read()
	            self.wfile.write(("id: %d\r\nevent: sci-report\r\n"
	                "data: %s\r\n\r\n" % (i, d)).encode())
	            self.wfile.flush()
	        if n[0] == 1:
	            return
	        self.wfile.write(b": then silence\n")
	        self.wfile.flush()
	        import time
	        time.sleep(30)
	http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
	EOF
	bg python3 sse.py "$Q"
	wait_for 50 python3 -c "import socket; socket.create_connection(('127.0.0.1', $Q))"
	cat >> sma.conf <<-EOF
	[sci "sci-A"]
	sse = http://127.0.0.1:$Q/events
	EOF
	start_sma
	wait_for 80 sh -c "cats-cbor decode < $W/out.cbor | grep -q '\"gen\":9'"
	[ "$(cat lastid.1)" = none ]
	[ "$(cat lastid.2)" = 8 ]
	out | jq -e -s '[.[] | .entries[]? | .gen] == [7, 8, 9]'
	grep -q 'sse sci-A: the server ended the stream; retrying' sma.err
	# The second connection goes silent: cut after the stall time.
	wait_for 60 grep -q 'sse sci-A: stalled: nothing for 1500 ms' sma.err
	wait_for 40 test -f lastid.3
	[ "$(cat lastid.3)" = 9 ]
}

@test "sma_http: SSE from cats-sci, reconnect after the reporter restarts" {
	Q=$(free_port)
	bg cats-sci -s sci-A -c ARS -K A.tok -g 100 -C 5 -I 200ms \
	    -l "http://127.0.0.1:$Q/"
	SCI=$LAST
	wait_for 50 curl -sf -o /dev/null "http://127.0.0.1:$Q/report"
	cat >> sma.conf <<-EOF
	[sci "sci-A"]
	sse = http://127.0.0.1:$Q/events
	EOF
	start_sma
	wait_for 50 grep -q 'sse sci-A: connected' sma.err
	kill "$SCI"
	wait_for 50 grep -q 'sse sci-A: .*retrying in' sma.err
	bg cats-sci -s sci-A -c ARS -K A.tok -g 222 -C 5 -I 200ms \
	    -l "http://127.0.0.1:$Q/"
	wait_for 100 sh -c "cats-cbor decode < $W/out.cbor | grep -q '\"gas\":222'"
	[ "$(grep -c 'sse sci-A: connected' sma.err)" -ge 2 ]
}

@test "sma_http: quarantine listed and released through the admin socket" {
	printf '[validate]\nanomaly = quarantine\nhealthy-after = 1\n' >> sma.conf
	start_sma
	cats-sci -s sci-A -c ARS -K A.tok -g 100 -C 5 -q 1 -1 > q1.cbor
	cats-sci -s sci-A -c ARS -K A.tok -g 900 -C 5 -q 2 -1 > q2.cbor
	[ "$(post q1.cbor)" = "200 1 accepted" ]
	[ "$(post q2.cbor)" = "202 0 accepted, 1 quarantined (first as 1)" ]
	admin http://x/quarantine > q.jsonl
	jq -e -s 'length == 1 and .[0].id == 1 and .[0].seq == 2 and
	    .[0].anomalies == ["gas-jump"] and .[0].report.gas == 900' q.jsonl
	grep -q 'event=quarantine id=1 csci=sci-A' sma.err
	[ "$(admin -X POST 'http://x/quarantine/release?id=1')" = "released 1" ]
	grep -q 'event=release id=1 csci=sci-A result=applied' sma.err
	admin http://x/cache | jq -e '.gas == 900 and .flags == ["released"]'
	[ "$(admin http://x/quarantine | wc -c)" -eq 0 ]
	[ "$(admin -X POST 'http://x/quarantine/drop?id=7')" = "no quarantined report 7" ]
	admin http://x/stats | jq -e '.counters.released == 1'
}

@test "sma_http: snapshot on SIGUSR1 and POST /snapshot" {
	start_sma
	report sci-A ARS A.tok -q 1 > a.cbor
	post a.cbor > /dev/null
	kill -USR1 "$SMA"
	wait_for 30 sh -c "[ \$(cats-cbor decode < $W/out.cbor | grep -c '\"op\":\"full\"') -ge 2 ]"
	admin -X POST http://x/snapshot
	wait_for 30 sh -c "[ \$(cats-cbor decode < $W/out.cbor | grep -c '\"op\":\"full\"') -ge 3 ]"
	out | jq -e -s '[.[] | select(.op == "full")][-1].entries[0].csci_id == "sci-A"'
}

@test "sma_http: CBOR stream listener answers rejections with error records" {
	S=$W/in.sock
	bg cats-sma -c sma.conf -l "unix:$S" -t "file:$W/out.cbor" 2> sma.err
	wait_for 50 test -S "$S"
	{ report sci-A ARS A.tok -q 1; report sci-A VRS A.tok -q 2; } > two.cbor
	socat -t 1 - "UNIX-CONNECT:$S" < two.cbor > back.cbor
	dec < back.cbor | jq -e '.type == "error" and .code == "unauthorized" and
	    .index == 1 and .field == "cs_id"'
	wait_for 30 sh -c "cats-cbor decode < $W/out.cbor | grep -q sci-A"
	# The closed connection left the listener's list: the next is served.
	report sci-A VRS A.tok -q 3 > one.cbor
	socat -t 1 - "UNIX-CONNECT:$S" < one.cbor > back2.cbor
	dec < back2.cbor | jq -e '.code == "unauthorized" and .index == 0'
}

@test "sma_http: a stream peer whose report was accepted outlives a connection flood" {
	S=$W/in.sock
	bg cats-sma -c sma.conf -l "unix:$S" -t "file:$W/out.cbor" 2> sma.err
	wait_for 50 test -S "$S"
	report sci-A ARS A.tok -q 1 > good.cbor
	report sci-A VRS A.tok -q 2 > bad.cbor
	# The peer's first report is accepted; then 1,100 silent connections
	# (past the 1,024 cap) take the places of the oldest unauthenticated
	# ones; the peer is still served: its next, refused, record is
	# answered on the same connection.
	python3 - "$S" good.cbor bad.cbor "$W/out.cbor" > flood.out <<'PY'
import socket, sys, time, os
path, good, bad, out = sys.argv[1:]
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s
peer = conn()
peer.sendall(open(good, "rb").read())
for _ in range(300):
    if os.path.exists(out) and os.path.getsize(out) > 0:
        break
    time.sleep(0.05)
flood = [conn() for _ in range(1100)]
time.sleep(0.5)
peer.sendall(open(bad, "rb").read())
peer.settimeout(5)
print(len(peer.recv(4096)))
PY
	[ "$(cat flood.out)" -gt 0 ]
	wait_for 30 sh -c "cats-cbor decode < $W/out.cbor | grep -q sci-A"
}

# A raw request on a fresh connection; what comes back, until the server
# closes, is in $W/raw.
raw() {
	exec 5<>"/dev/tcp/127.0.0.1/$P"
	printf "$1" >&5
	timeout 5 cat <&5 > "$W/raw"
	exec 5<&-
}

@test "sma_http: oversized bodies: 413 with one line, audited, counted, never read" {
	start_sma
	report sci-A ARS A.tok -q 10 > good.cbor
	[ "$(post good.cbor)" = "200 1 accepted" ]
	# max-body = 4k: 4096 bytes are read (and are not CBOR), 4097 are not.
	head -c 4096 /dev/zero > edge
	[[ "$(post edge)" == "400 "* ]]
	head -c 4097 /dev/zero > big
	[ "$(post big)" = "413 body over 4096 bytes" ]
	[ "$(wc -l < body)" -eq 1 ]
	grep -q 'event=reject src=127.0.0.1:[0-9]* index=0 status=413 reason="body over 4096 bytes"' sma.err
	# A declared 1 GiB, no body sent: answered at once (before the 1 s
	# idle timeout), one line, the connection closed.
	raw 'POST /reports HTTP/1.1\r\nHost: x\r\nContent-Type: application/cbor\r\nContent-Length: 1073741824\r\n\r\n'
	head -1 raw | grep -q '^HTTP/1.1 413 '
	grep -q '^Connection: close' raw
	[ "$(sed '1,/^\r$/d' raw)" = "body over 4096 bytes" ]
	# The same with curl's Expect: 100-continue: no 100, the 413.
	head -c 3000000 /dev/zero > huge
	[ "$(post huge)" = "413 body over 4096 bytes" ]
	# Chunked: the chunk sizes add up past the limit.
	curl -s -o body -w '%{http_code}' -H 'Transfer-Encoding: chunked' \
	    -H 'Content-Type: application/cbor' --data-binary @big \
	    "$U/reports" > code
	[ "$(cat code) $(cat body)" = "413 body over 4096 bytes" ]
	# Chunked within the limit, on a kept-alive connection after a 200.
	report sci-B ARS B.tok -q 1 > b.cbor
	report sci-B ARS B.tok -q 2 > b2.cbor
	curl -s -w '%{http_code}\n' -H 'Content-Type: application/cbor' \
	    --data-binary @b.cbor "$U/reports" --next -s -w '%{http_code}\n' \
	    -H 'Transfer-Encoding: chunked' -H 'Content-Type: application/cbor' \
	    --data-binary @b2.cbor "$U/reports" > both
	[ "$(grep -c '^1 accepted$' both)" -eq 2 ]
	[ "$(grep -c '^200$' both)" -eq 2 ]
	# Audited and counted, and what was accepted before is still there.
	[ "$(grep -c 'status=413' sma.err)" -eq 4 ]
	admin http://x/stats | jq -e '.counters.http_too_large == 4'
	admin http://x/cache > cache.jsonl
	jq -e -s '(map(.csci_id) | sort) == ["sci-A","sci-B"]' cache.jsonl
}

@test "sma_http: a stalled body is cut by the timeout, a trickled one gets 408" {
	start_sma
	# Headers and part of the body, then nothing: closed after 1 s.
	SECONDS=0
	raw 'POST /reports HTTP/1.1\r\nHost: x\r\nContent-Type: application/cbor\r\nContent-Length: 100\r\n\r\nabc'
	[ ! -s raw ]
	[ "$SECONDS" -le 3 ]
	# A byte every 0.5 s keeps the idle timer quiet; the request is not
	# whole 3 x timeout after it began: 408, one line, audited, counted.
	exec 5<>"/dev/tcp/127.0.0.1/$P"
	printf 'POST /reports HTTP/1.1\r\nHost: x\r\nContent-Type: application/cbor\r\nContent-Length: 100\r\n\r\n' >&5
	for i in 1 2 3 4 5 6 7 8; do
		sleep 0.5
		printf x >&5 2>/dev/null || break
	done
	timeout 5 cat <&5 > raw
	exec 5<&-
	head -1 raw | grep -q '^HTTP/1.1 408 '
	[ "$(sed '1,/^\r$/d' raw)" = "request not complete within 3000 ms" ]
	grep -q 'status=408 reason="request not complete within 3000 ms"' sma.err
	admin http://x/stats | jq -e '.counters.http_too_slow == 1'
}

@test "sma_http: idle connections are cut after the timeout" {
	start_sma
	exec 5<>"/dev/tcp/127.0.0.1/$P"
	printf 'POST /reports HTTP/1.1\r\nHost: x\r\n' >&5
	# timeout = 1s: the server closes the connection (cat sees the end).
	run timeout 5 cat <&5
	[ "$status" -eq 0 ]
	exec 5<&-
}

@test "sma_http: input limits: one SCI's burst is 429 past sci-burst, every report's past burst" {
	printf '[limits]\nsci-rate = 0.001\nsci-burst = 3\n' >> sma.conf
	start_sma
	for q in 1 2 3 4 5; do report sci-A ARS A.tok -q $q; done > a.cbor
	[ "$(post a.cbor application/cbor-seq)" = "429 3 accepted, 0 quarantined, 2 rejected; record 3: over the input limit of this SCI ([limits] sci-rate)" ]
	# Another SCI is not touched by A's limit.
	report sci-B ARS B.tok -q 1 > b.cbor
	[ "$(post b.cbor)" = "200 1 accepted" ]
	admin http://x/stats | jq -e '.counters.limited_sci == 2'
	grep -q 'event=limit csci=sci-A cs=ARS .* status=429 scope=sci' sma.err
	kill "$SMA"; wait "$SMA" || true
	printf 'rate = 0.001\nburst = 2\n' >> sma.conf
	start_sma
	{ report sci-A ARS A.tok -q 10; report sci-B ARS B.tok -q 10;
	    report sci-C ARS C.tok -k scik.key -q 10; } > c.cbor
	[ "$(post c.cbor application/cbor-seq)" = "429 2 accepted, 0 quarantined, 1 rejected; record 2: over the input limit of the C-SMA ([limits] rate)" ]
	admin http://x/stats | jq -e '.counters.limited_total == 1'
}

# Entries in the state file $1 (0 if it does not decode).
state_entries() {
	dec < "$1" 2>/dev/null | jq -s '[.[].entries[]?] | length' 2>/dev/null ||
	    echo 0
}
saved_at_least() { [ "$(state_entries "$W/state")" -ge "$1" ]; }
snapshot_has() {
	[ "$(dec < "$W/out2.cbor" | jq -s '[.[] | select(.op == "full") |
	    .entries[]] | length')" -eq "$1" ]
}

@test "sma_http: durable soft state: a kill -9 in a push burst loses at most save-interval, the file is whole, fresh entries come back" {
	cat > st.conf <<-EOF
	id = sma-st
	[auth]
	mode = none
	[timing]
	interval = 60s
	[cache]
	save-interval = 200ms
	[limits]
	rate = 0
	EOF
	bg cats-sma -c st.conf -l "$U/" -T "$W/state" -t "file:$W/out1.cbor" \
	    2> sma1.err
	SMA=$LAST
	wait_for 50 curl -sf "$U/health"
	# 300 bodies of 20 new SCIs each, pushed one after another.
	now=$(date +%s%3N)
	awk -v t="$now" 'BEGIN { for (b = 0; b < 300; b++) for (i = 0; i < 20; i++)
	    printf "{\"type\":\"sci-report\",\"csci_id\":\"s%d-%d\",\"cs_id\":" \
	    "\"ARS\",\"seq\":1,\"ts\":%.0f,\"health\":\"HEALTHY\",\"gas\":%d," \
	    "\"comp_time_ms\":5}\n", b, i, t, 100 + i }' | enc > all.cbor
	# (split into bodies of 20 records: cats-cbor keeps one a line)
	dec < all.cbor | split -l 20 - body.
	for f in body.*; do enc "$f" > "$f.cbor"; done
	( for f in body.*.cbor; do post "$f" application/cbor-seq; done ) \
	    > posts.log 2>&1 &
	PUSHER=$!
	PIDS+=($PUSHER)
	# Killed once a periodic save holds some of them, the burst going on.
	wait_for 200 saved_at_least 400
	kill -9 "$SMA"
	wait "$SMA" || true
	wait "$PUSHER" || true
	pushed=$(grep -c '^200 20 accepted' posts.log || true)
	[ "$pushed" -lt 300 ]
	# The file is whole (never torn): a full snapshot that decodes.
	dec < state | jq -e -s 'length >= 1 and all(.op == "full")'
	n=$(state_entries state)
	[ "$n" -ge 400 ]
	[ "$n" -le $((pushed * 20)) ]
	# Restart: every saved entry is fresh, restored and in the start
	# snapshot, with its values; a new epoch.
	bg cats-sma -c st.conf -l "$U/" -T "$W/state" -t "file:$W/out2.cbor" \
	    2> sma2.err
	SMA=$LAST
	wait_for 50 curl -sf "$U/health"
	grep -q "state $W/state: $n entries restored, 0 too old" sma2.err
	wait_for 50 snapshot_has "$n"
	dec < state | jq -e -s '[.[].entries[]] | map(select(.csci_id ==
	    "s0-7")) | .[0].gas == 107'
	dec < out2.cbor | jq -e -s '
	    [.[] | select(.op == "full") | .entries[]] |
	    map(select(.csci_id == "s0-7")) | .[0].comp_time_ms == 5'
	e1=$(dec < out1.cbor | head -1 | jq .epoch)
	e2=$(dec < out2.cbor | head -1 | jq .epoch)
	[ "$e2" -gt "$e1" ]
	# SIGTERM saves too: one more SCI, then stop.
	echo "{\"type\":\"sci-report\",\"csci_id\":\"late\",\"cs_id\":\"ARS\",\"seq\":1,\"ts\":$(date +%s%3N),\"health\":\"HEALTHY\",\"gas\":1}" |
	    enc > late.cbor
	[ "$(post late.cbor)" = "200 1 accepted" ]
	kill -TERM "$SMA"
	wait "$SMA"
	[ "$(state_entries state)" -eq $((n + 1)) ]
}
