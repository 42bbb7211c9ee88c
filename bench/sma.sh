#!/bin/sh
# cats-sma benchmarks that need the tools: the HTTP push path beside a
# do-nothing evhttp handler under the same load generator, and the tool
# reading reports from stdin beside cats-cbor check on the same bytes.
# Rows: name | value | baseline | ratio.  Timings are printed, not asserted.
set -e
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$(pwd)/$BUILD" ;; esac
PATH="$BUILD/bin:$BUILD/tests/tools:$BUILD/bench:$PATH"
SECS=${BENCH_SECONDS:-5}
W=$(mktemp -d)
PIDS=""
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	rm -rf "$W"
}
trap cleanup EXIT INT TERM
port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
up() { # wait until a port answers
	i=0
	while [ $i -lt 50 ]; do
		curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}
# The ratio of two figures; "error" when either did not measure (a
# failure is never printed as a number).
ratio() {
	case "$1$2" in *error*|"") echo error; return ;; esac
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "error" }'
}
# cell FIGURE TEXT WHO: "FIGURE TEXT", or "error: WHO did not measure: WHY".
cell() {
	case $1 in
	error:*) echo "error: $3 did not measure: ${1#error: }" ;;
	*) echo "$1 $2" ;;
	esac
}
# Requests per CPU second, or why not.
per_cpu() { # requests ticks
	awk -v r="$1" -v t="$2" -v hz="$hz" 'BEGIN {
		if (t > 0 && r > 0) printf "%.0f", r * hz / t
		else if (r > 0) print "error: the server used no measurable CPU time"
		else print "error: no request was answered" }'
}
# A rate from httpload's output, or why not.
req_rate() {
	case $1 in
	''|0|0.*) echo "error: httpload completed no request" ;;
	*) echo "$1" ;;
	esac
}

cats-key gen -n issuer -o "$W/iss" >/dev/null
cat > "$W/sma.conf" <<CONF
id = bench
audit = none
[auth]
issuers = $W/iss.pub
[cache]
max-entries = 200000
[http]
max-body = 64k
CONF

# HTTP push: cats-sma (tokens checked, cached after the first report of
# each SCI) against a handler that does nothing, same load generator.  On a
# shared machine the rate moves with the neighbours' load, so the servers'
# own CPU time per request is reported too.
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
P=$(port)
cats-sma -c "$W/sma.conf" -q -l "http://127.0.0.1:$P/" -t file:/dev/null &
spid=$!
PIDS="$PIDS $spid"
up "$P"
c0=$(cpu "$spid")
out=$(httpload push "http://127.0.0.1:$P/reports" -c 16 -d "$SECS" -n 1000 \
    -k "$W/iss.key")
c1=$(cpu "$spid")
sma=$(req_rate "$(echo "$out" | awk '{ print $2 }')")
sreq=$(echo "$out" | awk '{ print $4 + $6 }')
[ "$(echo "$out" | awk '{ print $6 }')" = 0 ] ||
	echo "# cats-sma answered with errors: $out"
Q=$(port)
httpload serve "$Q" &
npid=$!
PIDS="$PIDS $npid"
up "$Q"
c2=$(cpu "$npid")
out=$(httpload push "http://127.0.0.1:$Q/reports" -c 16 -d "$SECS" -n 1000 \
    -k "$W/iss.key")
c3=$(cpu "$npid")
base=$(req_rate "$(echo "$out" | awk '{ print $2 }')")
nreq=$(echo "$out" | awk '{ print $4 + $6 }')
echo "sma HTTP push requests/s (16 conns, tokens) | $(cell "$sma" req/s cats-sma) | $(cell "$base" "req/s do-nothing evhttp" "the do-nothing evhttp baseline") | $(ratio "$sma" "$base")"
scpu=$(per_cpu "$sreq" $((c1 - c0)))
ncpu=$(per_cpu "$nreq" $((c3 - c2)))
echo "sma HTTP push requests per server CPU second | $(cell "$scpu" req/cpu-s cats-sma) | $(cell "$ncpu" "req/cpu-s do-nothing evhttp" "the do-nothing evhttp baseline") | $(ratio "$scpu" "$ncpu")"

# The tool from stdin: 100k SCIs x 3 rounds, no auth, to /dev/null.
printf 'id = bench\naudit = none\n[auth]\nmode = none\n[timing]\ninterval = 60s\n[cache]\nmax-entries = 200000\n[validate]\nhealthy-after = 1\n[timing]\nconfirm = 1\n' > "$W/none.conf"
bench_sma 100000 dump > "$W/reports.cbor"
n=$(cats-cbor decode < "$W/reports.cbor" | wc -l)
t0=$(date +%s.%N)
cats-cbor check -q < "$W/reports.cbor"
t1=$(date +%s.%N)
cats-sma -c "$W/none.conf" --replay -q < "$W/reports.cbor" > /dev/null
t2=$(date +%s.%N)
check=$(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
tool=$(awk -v n="$n" -v a="$t1" -v b="$t2" 'BEGIN { printf "%.0f", n / (b - a) }')
echo "cats-sma reports/s from stdin (tool, no auth, 100k SCIs) | $tool rep/s | $check rep/s cats-cbor check | $(ratio "$tool" "$check")"
