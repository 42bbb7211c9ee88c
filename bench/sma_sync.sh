#!/bin/sh
# cats-sma to cats-select over loopback HTTP (cats-northbound(7)) with
# 100k SCIs: the time of a full sync, and the steady state with 10 % of the
# SCIs changing every second, with and without batching (advertisements/s,
# bytes/s, cats-sma CPU per thousand updates).
# Rows: name | value | baseline | ratio.  Timings are printed, not asserted.
# A figure that did not measure is "error: ... did not measure: WHY", and
# its ratio "error", never a number.
set -e
. "$(dirname "$0")/lib/bench.sh"
SECS=${BENCH_SECONDS:-5}
N=${BENCH_SCIS:-100000}
bench_workdir
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
stat() { curl -s --unix-socket "$W/admin.sock" http://x/stats | jq -r ".counters.$1"; }
wait_until() { # jq condition on the stats counters, tenths of a second
	i=0
	while [ $i -lt "$2" ]; do
		curl -s --unix-socket "$W/admin.sock" http://x/stats |
		    jq -e ".counters | $1" > /dev/null 2>&1 && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# Reports: round 0 discovers every SCI; round r changes 10 % of them by
# 25 % (beyond the 10 % threshold).  Timestamps are "now + r seconds".
gen() { # file first-round last-round
	python3 - "$N" "$2" "$3" "$(date +%s%3N)" > "$W/gen.jsonl" <<'PY'
import json, sys
n, r0, r1, t0 = map(int, sys.argv[1:])
for r in range(r0, r1 + 1):
    ids = range(n) if r == 0 else range((r - 1) * n // 10 % n, (r - 1) * n // 10 % n + n // 10)
    for i in ids:
        gas = 400 + (i % 50) if r == 0 else 500 + (i % 50) + 100 * (r % 2)
        print(json.dumps({"type": "sci-report", "csci_id": "10.%d.%d.%d:80" % (i >> 16, (i >> 8) & 255, i & 255),
            "cs_id": "S%d" % (i % 16), "seq": r + 1, "ts": t0 + r * 1000, "health": "HEALTHY",
            "gas": gas, "comp_time_ms": 5 + i % 7, "locator": "198.51.%d.%d" % ((i >> 8) & 255, i & 255), "port": 80}))
PY
	cats-cbor encode < "$W/gen.jsonl" > "$1"
}

cats-key psk -n bench -o "$W/sma.psk"
PS=$(port)
cats-select --ingest "http://127.0.0.1:$PS/" --ingest-keys "$W/sma.psk" \
    --sma 'bench=*' --metric-ttl 10m --audit none < /dev/null \
    > /dev/null 2> "$W/cps.err" &
cps=$!
PIDS="$PIDS $cps"
i=0
until curl -s -o /dev/null "http://127.0.0.1:$PS/" || [ $i -gt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done

run_sma() { # batch
	cat > "$W/sma.conf" <<CONF
id = bench
audit = none
[auth]
mode = none
skew = 10m
[timing]
interval = 60s
confirm = 1
[validate]
healthy-after = 1
gas-jump = 1000%
[cache]
max-entries = 200000
[update]
min-interval = 0
rate = 0
batch = $1
heartbeat = 0
[northbound]
key = $W/sma.psk
queue-max = 1000000
notify = none
CONF
	rm -f "$W/admin.sock"
	mkfifo "$W/in.$1"
	cats-sma -c "$W/sma.conf" -q -i -a "unix:$W/admin.sock" \
	    -t "http://127.0.0.1:$PS/" < "$W/in.$1" 2> "$W/sma.err" &
	sma=$!
	PIDS="$PIDS $sma"
	exec 7> "$W/in.$1"
	i=0
	until [ -S "$W/admin.sock" ] || [ $i -gt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

stop_sma() {
	exec 7>&-
	kill "$sma" 2>/dev/null || true
	wait "$sma" 2>/dev/null || true
}

# ---- a full sync of 100k SCIs ----
gen "$W/discover.cbor" 0 0
run_sma 100ms
cat "$W/discover.cbor" >&7
full=
wait_until ".entries == $N and .sync_queued == 0 and .sync_state == 0" 600 ||
	full="error: the discovery did not settle in 60 s: $(stat entries) entries, $(stat sync_queued) queued"
before=$(stat sync_last_full)
kill -USR1 "$sma"
wait_until ".sync_last_full > $before and .sync_queued == 0" 600 ||
	full=${full:-"error: the full sync did not finish in 60 s"}
snap=$(stat last_full)
acked=$(stat sync_last_full)
full=${full:-$((acked - snap))}
echo "sma full sync of ${N} SCIs over loopback HTTP (snapshot to last ack) | $(cell "$full" ms "the full sync") | 1000 ms goal | $(ratio "$full" 1000)"

# ---- steady state: 10 % of the SCIs change every second ----
steady() { # batch -> sets rate, bps, cpu_per_k
	gen "$W/steady.cbor" 1 "$SECS"
	r0=$(stat sync_records_acked)
	b0=$(stat sync_bytes_sent)
	u0=$(stat reports)
	c0=$(cpu "$sma")
	t0=$(date +%s.%N)
	# One second of reports a second (the file is in round order).
	python3 - "$W/steady.cbor" "$SECS" "$N" <<'PY' >&7
import sys, time
data = open(sys.argv[1], "rb").read()
secs, n = int(sys.argv[2]), int(sys.argv[3])
# Split at record boundaries: every record starts with the map header a9..ab
# followed by "dtype"; find them.
starts, i = [], 0
while True:
    j = data.find(b"dtypejsci-report", i)
    if j < 0:
        break
    starts.append(j - 1)
    i = j + 1
per = len(starts) // secs
t = time.time()
for s in range(secs):
    a = starts[s * per]
    b = starts[(s + 1) * per] if s + 1 < secs else len(data)
    sys.stdout.buffer.write(data[a:b])
    sys.stdout.flush()
    t += 1
    time.sleep(max(0, t - time.time()))
PY
	settled=
	wait_until ".reports >= $((u0 + N / 10 * SECS)) and .sync_queued == 0 and .pending == 0" 300 ||
	    settled="error: the steady state did not settle in 30 s ($(stat sync_queued) queued)"
	t1=$(date +%s.%N)
	c1=$(cpu "$sma")
	r1=$(stat sync_records_acked)
	b1=$(stat sync_bytes_sent)
	u1=$(stat reports)
	el=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
	rate=$(awk -v r=$((r1 - r0)) -v t="$el" 'BEGIN { printf "%.0f", r / t }')
	bps=$(awk -v r=$((b1 - b0)) -v t="$el" 'BEGIN { printf "%.0f", r / t }')
	cpu_per_k=$(awk -v c=$((c1 - c0)) -v hz="$hz" -v u=$((u1 - u0)) 'BEGIN {
		if (u > 0) printf "%.2f", c * 1000 / hz / (u / 1000)
		else print "error: no report was taken" }')
	if [ -n "$settled$discovery" ]; then
		rate=${discovery:-$settled} bps=$rate cpu_per_k=$rate
	fi
	[ "$rate" != 0 ] || rate="error: no advertisement was acknowledged"
}
discovery=
steady 100ms
rate_b=$rate
bps_b=$bps
cpu_b=$cpu_per_k
stop_sma
run_sma 0
cat "$W/discover.cbor" >&7
wait_until ".entries == $N and .sync_queued == 0 and .sync_state == 0" 600 ||
	discovery="error: the unbatched discovery did not settle in 60 s"
steady 0
stop_sma
echo "sma advertisements/s, 10% of ${N} SCIs changing each second, batched 100 ms | $(cell "$rate_b" adv/s "batched") | $(cell "$rate" "adv/s unbatched" "the unbatched baseline") | $(ratio "$rate_b" "$rate")"
echo "sma northbound bytes/s, same load, batched | $(cell "$bps_b" B/s batched) | $(cell "$bps" "B/s unbatched" "the unbatched baseline") | $(ratio "$bps_b" "$bps")"
echo "sma CPU ms per 1000 updates (collection to acked advertisement), batched | $(cell "$cpu_b" ms batched) | $(cell "$cpu_per_k" "ms unbatched" "the unbatched baseline") | $(ratio "$cpu_b" "$cpu_per_k")"
