#!/bin/sh
# TLS against cleartext on the same server (issue 20 §2): cats-sci's pull
# server (lib/net/httpd over evhttp) answering GET /report on one kept-alive
# connection (curl, N requests in a row), over https:// with a client
# certificate against plain http://; full handshakes per second (openssl
# s_time -new) with a client certificate required against without; and a
# record channel (cats-pce --listen) over tls: against tcp:, path requests
# answered per second on one connection.  Certificates by
# examples/keys/make-certs.sh.  Also cats-sma's HTTP push face (POST
# /reports, one report each) over https with a client certificate against
# http, kept alive (httpload, the same C client both ways), and the
# server's CPU time per report each way.  Rows: name | value | baseline |
# ratio;
# timings are printed, never asserted.
set -e
. "$(dirname "$0")/lib/bench.sh"
SECS=${BENCH_SECONDS:-3}
N=${BENCH_TLS_REQUESTS:-2000}
bench_workdir
up() { # wait until a port takes connections
	i=0
	while [ $i -lt 50 ]; do
		bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
now_ms() { date +%s%3N; }

if ! sh "$(dirname "$0")/../examples/keys/make-certs.sh" "$W/k" srv cli >/dev/null; then
	for r in "TLS requests/s, kept-alive, mutual TLS" \
	    "TLS HTTP push reports/s, kept-alive, mutual TLS" \
	    "TLS HTTP push reports per server CPU second" \
	    "TLS full handshakes/s with a client certificate" \
	    "TLS record channel answers/s" "TLS request p99 under attack"; do
		echo "$r | error: make-certs.sh failed | error | error"
	done
	exit 0
fi
K=$W/k
SRV="--tls-cert $K/srv.crt --tls-key $K/srv.key"
CLI="--cacert $K/ca.crt --cert $K/cli.crt --key $K/cli.key"

# N requests on one connection: requests/s, or why not.
reqs() { # URL
	t0=$(now_ms)
	# shellcheck disable=SC2086
	if ! curl -sf -o /dev/null $CLI "$1/report?[1-$N]"; then
		echo "error: curl failed on $1"
		return
	fi
	t1=$(now_ms)
	awk -v n="$N" -v ms=$((t1 - t0)) 'BEGIN { if (ms > 0) printf "%.0f", n * 1000 / ms; else print "error: no time measured" }'
}
# Full handshakes per second for SECS, or why not.
shakes() { # PORT [s_time options]
	p=$1
	shift
	out=$(openssl s_time -connect "127.0.0.1:$p" -new -time "$SECS" \
	    -CAfile "$K/ca.crt" "$@" 2>&1 | grep 'real seconds' || true)
	echo "$out" | awk '{ if ($1 > 0 && $4 > 0) printf "%.0f", $1 / $4; else print "error: no handshake completed" }'
}

P1=$(port)
P2=$(port)
P3=$(port)
# shellcheck disable=SC2086
cats-sci -c S1 -s 10.0.0.1:80 --listen "https://127.0.0.1:$P1/" $SRV \
    --tls-ca "$K/ca.crt" 2>/dev/null &
PIDS="$PIDS $!"
cats-sci -c S1 -s 10.0.0.1:80 --listen "http://127.0.0.1:$P2/" 2>/dev/null &
PIDS="$PIDS $!"
# shellcheck disable=SC2086
cats-sci -c S1 -s 10.0.0.1:80 --listen "https://127.0.0.1:$P3/" $SRV \
    2>/dev/null &
PIDS="$PIDS $!"
up "$P1" && up "$P2" && up "$P3" || true	# a server that is not up: its row says error
tls=$(reqs "https://127.0.0.1:$P1")
plain=$(reqs "http://127.0.0.1:$P2")
echo "TLS requests/s, kept-alive, mutual TLS (cats-sci GET, curl, $N in a row) | $(cell "$tls" req/s https) | $(cell "$plain" "req/s http" "plain http") | $(ratio "$tls" "$plain")"

# HTTP push (issue 20's row): cats-sma's push face taking one report per
# POST /reports on CONNS kept-alive connections for SECS, https with a
# client certificate against http.  The client is httpload (C, OpenSSL),
# the same program, connections and request stream both ways, so that the
# ratio is what the server pays for TLS; the servers' CPU time per request
# is the second row (on a loaded machine the rate moves with the
# neighbours, the CPU time much less).
CONNS=${BENCH_TLS_CONNS:-4}
printf 'id = bench\naudit = none\n[auth]\nmode = none\nskew = 0\n[timing]\ninterval = 60s\n[cache]\nmax-entries = 200000\n[limits]\nrate = 0\nsci-rate = 0\n' >"$W/push.conf"
# httpload push to URL: "RATE REQUESTS", or "error: ..." (its error line:
# a server not up, a certificate refused; or answers other than 2xx).
pushes() { # URL [httpload options]
	u=$1
	shift
	if ! out=$(httpload push "$u" -c "$CONNS" -d "$SECS" -n 1000 "$@" 2>&1); then
		echo "error: $(printf '%s\n' "$out" | tail -n 1 | sed 's/^httpload: //')"
		return
	fi
	printf '%s\n' "$out" | awk '$1 == "requests/s" { f = 1
		if ($6 > 0) printf "error: %d answers not 2xx\n", $6
		else if ($4 > 0) print $2, $4
		else print "error: no request answered" }
	    END { if (!f) print "error: no figure from httpload" }'
}
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# Requests per CPU second of the server: REQUESTS TICKS, or why not.
per_cpu() { # "RATE REQUESTS"|error TICKS
	case $1 in error:*) echo "$1"; return ;; esac
	awk -v r="${1#* }" -v t="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN {
		if (t > 0) printf "%.0f", r * hz / t
		else print "error: the server used no measurable CPU time" }'
}
P6=$(port)
P7=$(port)
# shellcheck disable=SC2086
cats-sma -c "$W/push.conf" -q -l "https://127.0.0.1:$P6/" $SRV \
    --tls-ca "$K/ca.crt" -t file:/dev/null 2>/dev/null &
S6=$!
PIDS="$PIDS $S6"
cats-sma -c "$W/push.conf" -q -l "http://127.0.0.1:$P7/" -t file:/dev/null \
    2>/dev/null &
S7=$!
PIDS="$PIDS $S7"
up "$P6" && up "$P7" || true	# a server that is not up: its row says error
rate() { case $1 in error:*) echo "$1" ;; *) echo "${1% *}" ;; esac; }
c0=$(cpu "$S6")
# shellcheck disable=SC2086
pt=$(pushes "https://127.0.0.1:$P6/reports" $CLI)
c1=$(cpu "$S6")
c2=$(cpu "$S7")
pp=$(pushes "http://127.0.0.1:$P7/reports")
c3=$(cpu "$S7")
ct=$(per_cpu "$pt" $((c1 - c0)))
cp=$(per_cpu "$pp" $((c3 - c2)))
tr=$(rate "$pt")
pr=$(rate "$pp")
echo "TLS HTTP push reports/s, kept-alive, mutual TLS (cats-sma POST /reports, httpload, $CONNS connections, ${SECS} s; goal >= 0.7x) | $(cell "$tr" rep/s https) | $(cell "$pr" "rep/s http" "plain http") | $(ratio "$tr" "$pr")"
echo "TLS HTTP push reports per server CPU second (the same runs: what cats-sma pays) | $(cell "$ct" rep/cpu-s https) | $(cell "$cp" "rep/cpu-s http" "plain http") | $(ratio "$ct" "$cp")"

mut=$(shakes "$P1" -cert "$K/cli.crt" -key "$K/cli.key")
one=$(shakes "$P3")
echo "TLS full handshakes/s with a client certificate (openssl s_time -new) | $(cell "$mut" handshakes/s "mutual TLS") | $(cell "$one" "handshakes/s server-only TLS" "server-only TLS") | $(ratio "$mut" "$one")"

# Records: cats-pce answering path requests on one connection, tls: against
# tcp: (the same Python client, with and without ssl).
LAB=$(dirname "$0")/../tests/data/pce/lab.json
i=0
while [ $i -lt "$N" ]; do
	printf '{"type":"path-req","txn":%d,"ts":1000,"headend":"IF-1","endpoint":"EF-2","dataplane":"srmpls","constraints":{},"decision":{"cs_id":"S1","csci_id":"c1","locator":"198.51.100.21","egress":"EF-2","ts":1000}}\n' $((i + 1))
	i=$((i + 1))
done | cats-cbor encode >"$W/q.cbor"
P4=$(port)
P5=$(port)
# shellcheck disable=SC2086
cats-pce -t "$LAB" --insecure --cache 0 --listen "tls:127.0.0.1:$P4" $SRV \
    --tls-ca "$K/ca.crt" 2>/dev/null &
PIDS="$PIDS $!"
cats-pce -t "$LAB" --insecure --cache 0 --listen "tcp:127.0.0.1:$P5" 2>/dev/null &
PIDS="$PIDS $!"
up "$P4" && up "$P5" || true	# a server that is not up: its row says error
# Answers per second until the last of N came back (a Python client:
# the requests sent from a thread, the answers counted), or why not.
recs() { # PORT tls|tcp
	python3 - "$1" "$2" "$N" "$W/q.cbor" "$K" <<'PY' || echo "error: the client failed"
import socket, ssl, sys, threading, time
port, mode, n, q, k = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
s = socket.create_connection(("127.0.0.1", port))
if mode == "tls":
    ctx = ssl.create_default_context(cafile=k + "/ca.crt")
    ctx.load_cert_chain(k + "/cli.crt", k + "/cli.key")
    s = ctx.wrap_socket(s, server_hostname="127.0.0.1")
data = open(q, "rb").read()
t0 = time.monotonic()
threading.Thread(target=s.sendall, args=(data,), daemon=True).start()
got, tail = 0, b""
while got < n:
    b = s.recv(65536)
    if not b:
        break
    # (a word split across two reads is counted once: the tail is shorter)
    got += (tail + b).count(b"path-rep")
    tail = (tail + b)[-7:]
dt = time.monotonic() - t0
print("%.0f" % (n / dt) if got >= n and dt > 0 else "error: %d of %d answers" % (got, n))
PY
}
rt=$(recs "$P4" tls)
rp=$(recs "$P5" tcp)
echo "TLS record channel answers/s (cats-pce --listen tls:, one connection, $N path requests) | $(cell "$rt" answers/s tls:) | $(cell "$rp" "answers/s tcp:" "the tcp: channel") | $(ratio "$rt" "$rp")"

# A valid client's request latency under attack against quiet (issue 20:
# p99 within 10x): 300 requests on new mutual-TLS connections (a handshake
# each) to cats-sci, alone, then while an attacker holds 500 connections
# that never start a handshake and keeps opening connections that send
# plaintext garbage.  p99 of each, and their ratio (goal: at most 10).
# The quiet figure (~45-65 ms) is mostly one delayed ACK: the client
# (Python's ssl, no TCP_NODELAY) holds its request behind its unacknowledged
# Finished, and the server, which sends no session tickets, has nothing to
# carry the ACK for 40 ms (with TCP_NODELAY on the client, p50 7 ms).  The
# attacker runs on the same two cores: an attacked run also measures the
# machine (the attack aimed at a second cats-sci instead: p99 ~90 ms).
lat() { # PORT: the p99 in ms of 300 requests, or why not
	python3 - "$1" "$K" <<'PY' || echo "error: the client failed"
import socket, ssl, sys, time
port, k = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context(cafile=k + "/ca.crt")
ctx.load_cert_chain(k + "/cli.crt", k + "/cli.key")
ts = []
for i in range(300):
    t0 = time.monotonic()
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
        server_hostname="127.0.0.1")
    s.sendall(b"GET /report HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    while s.recv(65536):
        pass
    s.close()
    ts.append(time.monotonic() - t0)
ts.sort()
print("%.1f" % (ts[int(len(ts) * 0.99) - 1] * 1000))
PY
}
quiet=$(lat "$P1")
python3 - "$P1" <<'PY' &
import resource, socket, sys, time
port = int(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(500)]
while True:
    try:
        g = socket.create_connection(("127.0.0.1", port), timeout=1)
        g.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" * 4)
        g.close()
    except OSError:
        time.sleep(0.01)
PY
ATT=$!
PIDS="$PIDS $ATT"
sleep 1
attacked=$(lat "$P1")
kill "$ATT" 2>/dev/null || true
echo "TLS request p99 under attack (500 mute connections, a plaintext flood; cats-sci https, new mutual-TLS connection each) | $(cell "$attacked" "ms p99 attacked" attacked) | $(cell "$quiet" "ms p99 quiet (goal: attacked <= 10x)" quiet) | $(ratio "$attacked" "$quiet")"
