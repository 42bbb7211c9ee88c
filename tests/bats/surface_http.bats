#!/usr/bin/env bats
# HTTP framing as an attacker writes it (RFC 9112 §6, issue 20 §1), against
# cats-sma's report listener on loopback: each refusal is one line of ours
# (never evhttp's page), a close, an audit line; nothing is read as a
# second request from a body; paths are compared decoded and exactly.
load helper

setup() {
	W="$BATS_TEST_TMPDIR"
	cd "$W"
	P=$(free_port)
	cats-key gen -n issuer -o iss >/dev/null
	cat >sma.conf <<-EOF
	id = sma-surface
	site = site-a
	egress = EF-1
	[auth]
	issuers = $W/iss.pub
	[http]
	max-body = 4k
	timeout = 2s
	EOF
	cat >raw.py <<'EOF'
# raw.py PORT: stdin's bytes (printf escapes already applied) to the port;
# everything the server answers until it closes, on stdout.  Exit 3 if it
# does not close within 5 s.
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.stdin.buffer.read())
s.settimeout(5)
out = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
except (socket.timeout, TimeoutError):
    sys.stdout.buffer.write(out)
    sys.exit(3)
except ConnectionResetError:
    pass
sys.stdout.buffer.write(out)
EOF
	cats-sma -c sma.conf -l "http://127.0.0.1:$P/" -a "unix:$W/admin.sock" \
	    -t "file:$W/out.cbor" 2>"$W/sma.err" &
	SMA=$!
	wait_for 50 curl -sf "http://127.0.0.1:$P/health"
}

teardown() {
	kill "$SMA" 2>/dev/null || true
	wait "$SMA" 2>/dev/null || true
}

# send FORMAT: the request (printf format) on a new connection; the answer
# in $W/ans; fails unless the server closed the connection.
send() {
	# shellcheck disable=SC2059
	printf "$1" | python3 raw.py "$P" >ans
}

# refused STATUS REASON-PART: the answer is our one line, and audited.
refused() {
	head -1 ans | grep -q "^HTTP/1.1 $1 " || { cat ans; return 1; }
	grep -qi '^Connection: close' ans
	! grep -qi '<html' ans || false
	[ "$(sed '1,/^\r$/d' ans | wc -l)" -eq 1 ]
	sed '1,/^\r$/d' ans | grep -q -- "$2" || { cat ans; return 1; }
	grep -q "event=reject src=127.0.0.1:[0-9]* index=0 status=$1 reason=\".*$2" sma.err
}

H='Host: x\r\nContent-Type: application/cbor\r\n'

@test "surface_http: Content-Length twice, conflicting, signed, with leading zeros, not a number" {
	send "POST /reports HTTP/1.1\r\n${H}Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc"
	refused 400 "Content-Length twice"
	send "POST /reports HTTP/1.1\r\n${H}Content-Length: 3\r\nContent-Length: 40\r\n\r\nabc"
	refused 400 "Content-Length twice"
	for v in +3 -3 03 000 3x 0x3 '3 3' ''; do
		send "POST /reports HTTP/1.1\r\n${H}Content-Length: $v\r\n\r\nabc"
		refused 400 "Content-Length other than digits"
	done
}

@test "surface_http: Transfer-Encoding unknown, twice, listed, beside Content-Length" {
	for v in gzip identity 'chunked, chunked' 'gzip, chunked' 'chunked;x=1' xchunked; do
		send "POST /reports HTTP/1.1\r\n${H}Transfer-Encoding: $v\r\n\r\n0\r\n\r\n"
		refused 400 "Transfer-Encoding other than chunked"
	done
	send "POST /reports HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	refused 400 "Transfer-Encoding twice"
	send "POST /reports HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n"
	refused 400 "both Content-Length and Transfer-Encoding"
	# Chunk extensions and junk after a chunk: no longer left to evhttp.
	send "POST /reports HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\n\r\n"
	refused 400 "chunk extensions"
	send "POST /reports HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n3\r\nabcGET /health HTTP/1.1\r\n\r\n"
	refused 400 "chunk data not followed by CRLF"
}

@test "surface_http: folded headers, white space before the colon, bare CR, control bytes" {
	send "POST /reports HTTP/1.1\r\n${H}X-A: 1\r\n 2\r\nContent-Length: 3\r\n\r\nabc"
	refused 400 "folded header"
	send "POST /reports HTTP/1.1\r\n${H}X-A: 1\r\n\t2\r\nContent-Length: 3\r\n\r\nabc"
	refused 400 "folded header"
	send "POST /reports HTTP/1.1\r\n${H}Content-Length : 3\r\n\r\nabc"
	refused 400 "white space before the colon"
	send "GET /health HTTP/1.1\r\nHost: x\rX-A: 1\r\n\r\n"
	refused 400 "a CR inside a line"
	send "GET /health HTTP/1.1\r\nHost: x\r\nX-A: a\001b\r\n\r\n"
	refused 400 "malformed header line"
	send "GET /health HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n"
	refused 400 "malformed header line"
}

@test "surface_http: no second request from a body; request lines, methods and heads refused in one line" {
	# A GET whose body would be a second request to evhttp.
	send "GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 38\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n"
	refused 400 "a body on a GET or HEAD request"
	[ "$(grep -c '^HTTP/1.1' ans)" -eq 1 ]
	send "GET /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	refused 400 "a body on a GET or HEAD request"
	send "GET /health HTTP/2.0\r\nHost: x\r\n\r\n"
	refused 400 "expected HTTP/1.0 or HTTP/1.1"
	send "GET  /health HTTP/1.1\r\nHost: x\r\n\r\n"
	refused 400 "malformed request line"
	send "GET /health HTTP/1.1\r\n\r\n"
	refused 400 "without Host"
	send "GET /health HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n"
	refused 400 "Host twice"
	send "PUT /reports HTTP/1.1\r\nHost: x\r\n\r\n"
	refused 405 "method not allowed"
	grep -q '^Allow: GET, HEAD, POST' ans
	send "get /health HTTP/1.1\r\nHost: x\r\n\r\n"
	refused 405 "method not allowed"
	big=$(head -c 20000 /dev/zero | tr '\0' a)
	send "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: $big\r\n\r\n"
	refused 431 "request head over 16384 bytes"
	# Over max-body: ours, not evhttp's.
	send "POST /reports HTTP/1.1\r\n${H}Content-Length: 5000\r\n\r\n"
	refused 413 "body over 4096 bytes"
	send "POST /reports HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n2000\r\n"
	refused 413 "body over 4096 bytes"
	# Expectations other than 100-continue: ours too, not evhttp's page.
	send "POST /reports HTTP/1.1\r\n${H}Expect: 200-ok\r\nContent-Length: 1\r\n\r\nx"
	refused 417 "an expectation other than 100-continue"
	send "GET http://[::1/health HTTP/1.1\r\nHost: x\r\n\r\n"
	refused 400 "absolute-form target without a host"
	# A well-framed pipeline is still served, both requests.
	send "GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
	[ "$(grep -c '^HTTP/1.1 200' ans)" -eq 2 ]
}

@test "surface_http: paths compared decoded and exactly: %00, escapes, absolute-form" {
	send "GET /health%%00x HTTP/1.1\r\nHost: x\r\n\r\n"
	refused 400 "NUL in the path"
	send "GET /health%%0a HTTP/1.1\r\nHost: x\r\n\r\n"
	refused 400 "control character in the path"
	send "GET /health%%zz HTTP/1.1\r\nHost: x\r\n\r\n"
	refused 400 "malformed percent-encoding"
	send "GET /health#x HTTP/1.1\r\nHost: x\r\n\r\n"
	refused 400 "fragment"
	send "GET * HTTP/1.1\r\nHost: x\r\n\r\n"
	refused 400 "neither a path nor an http URI"
	# Another name is another resource: 404, never the route's.
	for t in /health/ /health/. //health /health%2f /x/../health /HEALTH \
	    http://x/health/; do
		code=$(printf 'GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' "$t" |
		    python3 raw.py "$P" | head -1 | cut -d' ' -f2)
		[ "$code" = 404 ] || { echo "$t: $code"; return 1; }
	done
	# The same name, escaped or absolute: that resource.
	for t in /%68ealth http://x/health http://x/%68ealth?a=b; do
		code=$(printf 'GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' "$t" |
		    python3 raw.py "$P" | head -1 | cut -d' ' -f2)
		[ "$code" = 200 ] || { echo "$t: $code"; return 1; }
	done
}

@test "surface_http: a request that trickles after odd input still meets the 408 deadline" {
	# Unknown headers are followed, not given up on: the deadline runs.
	exec 5<>"/dev/tcp/127.0.0.1/$P"
	printf 'POST /reports HTTP/1.1\r\nHost: x\r\nX-Odd: \200\377\r\nContent-Length: 100\r\n\r\n' >&5
	for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do
		sleep 0.5
		printf x >&5 2>/dev/null || break
	done
	timeout 5 cat <&5 >ans || true
	exec 5<&-
	refused 408 "request not complete within 6000 ms"
}

@test "surface_http: a flood of 300 framing refusals: each answered 400 and counted, their audit lines rate-limited with unlogged=N" {
	python3 - "$P" >flood <<'PY'
import socket, sys
port = int(sys.argv[1])
req = (b"POST /reports HTTP/1.1\r\nHost: x\r\nContent-Type: application/cbor"
       b"\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc")
n = 0
for i in range(300):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(req)
    out = b""
    try:
        while True:
            b = s.recv(4096)
            if not b:
                break
            out += b
    except ConnectionResetError:
        pass
    s.close()
    if out.startswith(b"HTTP/1.1 400 "):
        n += 1
print("refused %d" % n)
PY
	cat flood
	grep -qx "refused 300" flood
	# Every one counted; fewer lines than refusals.
	kill -0 "$SMA"
	curl -sf --unix-socket "$W/admin.sock" http://x/stats >stats
	jq -e '.counters.http_bad == 300' stats
	lines=$(grep -c 'event=reject .*status=400 reason=".*Content-Length twice' sma.err || true)
	echo "lines $lines"
	[ "$lines" -ge 1 ]
	[ "$lines" -lt 300 ]
	# Once the bucket refills, the next line says how many it left out.
	wait_for 50 sh -c "printf 'POST /reports HTTP/1.1\r\n${H}Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc' |
	    python3 raw.py $P >/dev/null; grep -q 'event=reject .* unlogged=[1-9]' sma.err"
	kill -0 "$SMA"
}
