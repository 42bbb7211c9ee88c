#!/bin/sh
# cats-sma benchmarks that need the tools: the HTTP push path beside a
# do-nothing evhttp handler under the same load generator; reports through
# MQTT (a mosquitto on loopback) against HTTP push into the same cats-sma;
# the tool reading reports from stdin beside cats-cbor check on the same
# bytes, with the input limits on against off; the audit bytes a replay
# flood of duplicates writes, with the audit limiter against without.
# Rows: name | value | baseline | ratio.  Timings are printed, not asserted.
set -e
. "$(dirname "$0")/lib/bench.sh"
SECS=${BENCH_SECONDS:-5}
bench_workdir
up() { # wait until a port answers
	i=0
	while [ $i -lt 50 ]; do
		curl -s -o /dev/null "http://127.0.0.1:$1/" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
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
# push_load PID PORT: httpload's push load on the server PID, once it
# answers at PORT: out (httpload's line), rate (req/s, or why not), nreq
# (requests answered) and ticks (the server's CPU time meanwhile).
push_load() {
	up "$2"
	_c0=$(cpu "$1")
	out=$(httpload push "http://127.0.0.1:$2/reports" -c 16 -d "$SECS" \
	    -n 1000 -k "$W/iss.key")
	ticks=$(($(cpu "$1") - _c0))
	rate=$(req_rate "$(echo "$out" | awk '{ print $2 }')")
	nreq=$(echo "$out" | awk '{ print $4 + $6 }')
}
P=$(port)
cats-sma -c "$W/sma.conf" -q -l "http://127.0.0.1:$P/" -t file:/dev/null &
spid=$!
PIDS="$PIDS $spid"
push_load "$spid" "$P"
sma=$rate sreq=$nreq sticks=$ticks
[ "$(echo "$out" | awk '{ print $6 }')" = 0 ] ||
	echo "# cats-sma answered with errors: $out"
Q=$(port)
httpload serve "$Q" &
npid=$!
PIDS="$PIDS $npid"
push_load "$npid" "$Q"
base=$rate
echo "sma HTTP push requests/s (16 conns, tokens) | $(cell "$sma" req/s cats-sma) | $(cell "$base" "req/s do-nothing evhttp" "the do-nothing evhttp baseline") | $(ratio "$sma" "$base")"
scpu=$(per_cpu "$sreq" "$sticks")
ncpu=$(per_cpu "$nreq" "$ticks")
echo "sma HTTP push requests per server CPU second | $(cell "$scpu" req/cpu-s cats-sma) | $(cell "$ncpu" "req/cpu-s do-nothing evhttp" "the do-nothing evhttp baseline") | $(ratio "$scpu" "$ncpu")"

# MQTT against HTTP push, the same run of cats-sma, the same SCIs and
# tokens (load-0 .. load-999, made alike by httpload and bench_sma mqtt):
# reports accepted per second by cats-sma while each load runs.  Plain
# mqtt:// and http:// on loopback (neither side pays for TLS here); the
# input limits off, so that both count what cats-sma takes.
if command -v mosquitto >/dev/null 2>&1; then
	M=$(port)
	cat > "$W/mosq.conf" <<MOSQ
per_listener_settings false
allow_anonymous true
persistence false
log_dest none
user root
max_queued_messages 1000000
max_inflight_messages 0
listener $M 127.0.0.1
MOSQ
	mosquitto -c "$W/mosq.conf" &
	PIDS="$PIDS $!"
	P=$(port)
	{ cat "$W/sma.conf"; printf '[limits]\nrate = 0\nsci-rate = 0\n'
	  printf '[mqtt]\nbroker = mqtt://127.0.0.1:%s\ntopic = cats/sci/+/report\n' "$M"; } \
	    > "$W/mq.conf"
	i=0
	while ! ss -ltn "sport = :$M" | grep -q LISTEN && [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1))
	done
	cats-sma -c "$W/mq.conf" -q -l "http://127.0.0.1:$P/" \
	    -a "unix:$W/adm.sock" -t file:/dev/null 2>"$W/mq.err" &
	PIDS="$PIDS $!"
	up "$P"
	accepted() {
		curl -s --unix-socket "$W/adm.sock" http://x/stats |
		    jq '.counters.accepted + .counters.flagged'
	}
	a0=$(accepted)
	t0=$(date +%s.%N)
	httpload push "http://127.0.0.1:$P/reports" -c 16 -d "$SECS" -n 1000 \
	    -k "$W/iss.key" > /dev/null
	t1=$(date +%s.%N)
	a1=$(accepted)
	bench_sma mqtt "mqtt://127.0.0.1:$M" "$SECS" 1000 "$W/iss.key" \
	    > "$W/mq.out"
	t2=$(date +%s.%N)
	a2=$(accepted)
	h=$(awk -v a="$a0" -v b="$a1" -v x="$t0" -v y="$t1" 'BEGIN {
	    if (b > a) printf "%.0f", (b - a) / (y - x); else print "error: none accepted" }')
	q=$(awk -v a="$a1" -v b="$a2" -v x="$t1" -v y="$t2" 'BEGIN {
	    if (b > a) printf "%.0f", (b - a) / (y - x); else print "error: none accepted" }')
	echo "# mqtt publisher: $(cat "$W/mq.out"); http accepted $((a1 - a0)), mqtt accepted $((a2 - a1))"
	echo "sma reports/s through MQTT vs HTTP push (same cats-sma, 1000 SCIs, tokens) | $(cell "$q" "rep/s MQTT QoS 1" "MQTT") | $(cell "$h" "rep/s HTTP push" "HTTP push") | $(ratio "$q" "$h")"
else
	echo "sma reports/s through MQTT vs HTTP push | skipped: no mosquitto (make deps) | skipped | skipped"
fi

# The tool from stdin: 100k SCIs x 3 rounds, no auth, to /dev/null; the
# same with the input limits on (checked for every report, set high enough
# that none is dropped: every report of a round has the same time).
printf 'id = bench\naudit = none\n[auth]\nmode = none\n[timing]\ninterval = 60s\n[cache]\nmax-entries = 200000\n[validate]\nhealthy-after = 1\n[timing]\nconfirm = 1\n' > "$W/none.conf"
cp "$W/none.conf" "$W/lim.conf"
printf '[limits]\nrate = 0\nsci-rate = 0\n' >> "$W/none.conf"
printf '[limits]\nrate = 1000000\nburst = 1000000000\nsci-rate = 1000\nsci-burst = 1000\n' >> "$W/lim.conf"
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
# Limits on against off: the best of five runs each, alternated (a shared
# machine's load moves single runs by more than the checks cost).
best_on=0
best_off=0
for k in 1 2 3 4 5; do
	for c in lim none; do
		t0=$(date +%s.%N)
		cats-sma -c "$W/$c.conf" --replay -q --stats < "$W/reports.cbor" \
		    > /dev/null 2> "$W/$c.stats"
		t1=$(date +%s.%N)
		r=$(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
		if [ "$c" = lim ]; then
			[ "$r" -gt "$best_on" ] && best_on=$r
		else
			[ "$r" -gt "$best_off" ] && best_off=$r
		fi
	done
done
dropped=$(grep '"type":"stats"' "$W/lim.stats" |
    jq '.counters.limited_sci + .counters.limited_total')
[ "$dropped" = 0 ] || best_on="error: $dropped reports dropped by the limits"
echo "cats-sma reports/s from stdin, input limits on (not reached) vs off | $(cell "$best_on" rep/s "limits on") | $best_off rep/s limits off | $(ratio "$best_on" "$best_off")"

# The audit under a replay flood: 100000 duplicates of one report, one a
# millisecond (100 s of replay), audited to a file: with the audit limiter
# (20 lines a kind a second, then "N more like this") against without.
awk 'BEGIN { for (i = 0; i < 100000; i++) printf "{\"type\":\"sci-report\",\"csci_id\":\"A\",\"cs_id\":\"ARS\",\"seq\":1,\"ts\":%.0f,\"health\":\"HEALTHY\",\"gas\":1}\n", 1700000000000 + i }' |
    cats-cbor encode > "$W/flood.cbor"
for b in 20 0; do
	printf 'id = bench\naudit = file:%s\n[auth]\nmode = none\n[limits]\naudit-burst = %s\n' \
	    "$W/audit.$b" "$b" > "$W/flood.conf"
	cats-sma -c "$W/flood.conf" --replay -q < "$W/flood.cbor" > /dev/null 2>&1
done
lim=$(wc -c < "$W/audit.20")
all=$(wc -c < "$W/audit.0")
echo "# audit lines: $(wc -l < "$W/audit.20") with the limiter, $(wc -l < "$W/audit.0") without"
echo "sma audit bytes, a replay flood of 100000 duplicates (100 s) | $lim B limiter (audit-burst 20) | $all B audit-burst 0 | $(ratio "$lim" "$all")"
