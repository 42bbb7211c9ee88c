#!/bin/bash
# bench/ha_loop.sh - the redundant C-PS in the whole loop
# (examples/demo/loop_net.bash with LOOP_HA: two cats-cps on one real etcd
# in the C-PS's namespace, the forwarders given both, the site agents
# advertising to both).  The owning cats-cps dies (kill -9 of its parent
# and of its binding stage: a host gone, its lease left to expire) while
# two TCP downloads run and tcpload (tests/tools/tcpload.c) offers 1000
# new flows/s for 6 s from 64 addresses; the same load without a kill,
# just before, is the baseline of the failures (this machine's own).
# Rows:
#   kill -9 -> the standby owns (etcd), and -> the first new flow after
#   the kill established through it, against the goal (lease 2 s + 0.5 s);
#   established transfers broken (of 2), against 0;
#   new flows failed, with the kill against without (same load, same run);
#   requests left pending at the ingress once the load ended, against 0.
# Needs root.  Timings are never asserted.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
. "$(dirname "$0")/lib/bench.sh"
if [ "$(id -u)" != 0 ]; then
	echo "ha_loop: needs root (network namespaces); skipped" >&2
	exit 0
fi
for t in etcd tcpload; do
	command -v $t >/dev/null || { echo "ha_loop: no $t; skipped" >&2; exit 0; }
done
export LOOP_ID=hb$$
export LOOP_HA=1
. "$TOP/examples/demo/loop_net.bash"
trap 'loop_down' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
loop_up >&2 && loop_wait_ready 200 || { echo "ha_loop: the loop did not come up" >&2; exit 1; }
loop_wait 50 grep -q "standby: .* owns" "$LOOP_DIR/log/cps-b.err" ||
	{ echo "ha_loop: no standby" >&2; exit 1; }
MANY=192.0.2.11-74
RATE=${HA_LOOP_RATE:-1000}
for a in $(seq 11 74); do lx "$LC" ip addr add "192.0.2.$a/24" dev c0 2>/dev/null; done

# tcpload at RATE/s (HA_LOOP_RATE, 1000) for 6 s (flows given 6 s),
# source ports from $1, ends in $2.e; its line in $2.out.
load() {
	lx "$LC" tcpload -r "$RATE" -d 6 -p "$1" -t 6000 -e "$2.e" \
		203.0.113.100 80 "$MANY" >"$2.out" 2>&1
}
kv() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p" | head -1; }

load 20000 "$LOOP_DIR/base"
base_failed=$(kv "$LOOP_DIR/base.out" failed)
base_flows=$(kv "$LOOP_DIR/base.out" flows)

for i in 1 2; do
	lx "$LC" curl -s --speed-limit 1 --speed-time 30 -o "$LOOP_DIR/dl$i" \
	    "http://203.0.113.100/big?mb=8" &
	eval "dl$i=\$!"
done
loop_wait 100 test -s "$LOOP_DIR/dl2"
load 30000 "$LOOP_DIR/fo" &
ld=$!
sleep 1		# the kill 1 s into the load
t0=$(date +%s%3N)
kill -9 "$(loop_stage_pid bind)" "$(loop_pid cps)"
loop_wait 100 grep -q "owner of" "$LOOP_DIR/log/cps-b.err"
t1=$(date +%s%3N)
wait "$ld"
fo_failed=$(kv "$LOOP_DIR/fo.out" failed)
fo_flows=$(kv "$LOOP_DIR/fo.out" flows)
causes="refused $(kv "$LOOP_DIR/fo.out" refused), unreach $(kv "$LOOP_DIR/fo.out" unreach), timeout $(kv "$LOOP_DIR/fo.out" timeout)"
first=$(sort -n -k2 "$LOOP_DIR/fo.e" | awk -v t0="$t0" '$1 > t0 && $3 == "ok" { print $2 - t0; exit }')
broken=0
for i in 1 2; do
	wait "$(eval echo "\$dl$i")" || true
	[ "$(stat -c %s "$LOOP_DIR/dl$i" 2>/dev/null)" = $((8 << 20)) ] || broken=$((broken + 1))
done
pending=$(loop_counter IF-1 pending 2>/dev/null || echo "error: no stats")
restored=$(sed -n 's/.*restored \([0-9]*\) bindings from etcd.*/\1/p' "$LOOP_DIR/log/cps-b.err" | tail -1)
echo "ha_loop: kill -9 at $t0, b owner at $t1 (restored ${restored:-?} bindings); base: $(cat "$LOOP_DIR/base.out"); failover: $(cat "$LOOP_DIR/fo.out")" >&2

own=$((t1 - t0))
echo "ha loop: kill -9 of the owning cats-cps at $RATE new flows/s -> the standby owns | $(awk -v v="$own" 'BEGIN { printf "%.2f s", v / 1000 }') | goal 2.50 s (lease 2 s + 0.5 s) | $(ratio "$own" 2500)x"
if [ -n "$first" ]; then
	echo "ha loop: kill -9 -> the first new flow after it established (through the standby) | $(awk -v v="$first" 'BEGIN { printf "%.2f s", v / 1000 }') | goal 2.50 s | $(ratio "$first" 2500)x"
else
	echo "ha loop: kill -9 -> the first new flow after it established | error: none established | goal 2.50 s | error"
fi
echo "ha loop: established TCP transfers broken by the failover | $broken of 2 | 0 | -"
echo "ha loop: new flows failed at $RATE/s for 6 s, with the kill ($causes) | $fo_failed of $fo_flows | without: $base_failed of $base_flows | $(ratio "$fo_failed" "$((base_failed > 0 ? base_failed : 1))")x"
echo "ha loop: requests left pending at the ingress after the failover | $pending | 0 | -"
