#!/bin/bash
# bench/loop.sh - the whole loop (examples/demo/loop_net.bash): new TCP flows
# from 64 concurrent clients (one client address each, one connection in
# flight each), every one a new 5-tuple through cats-fwd, cats-select,
# cats-pce, cats-bind (journal synced) and back to the forwarders; the
# connect time is the first packet's delay from SYN to binding installed,
# plus the SYN-ACK's way back.  Baseline: the same forwarders, clients and
# namespaces with fake-cps, a stand-in that binds every request at once
# (no selection, no path, no journal, no authentication).
#
# Then the time a restart of cats-select is an outage, with its state file
# against without (the agents' full sync); then the 64 clients again with
# cats-bind's journal synced at an interval and never, against always.
#
# Rows: "name | value | baseline | ratio".  Timings are never asserted.
# A measurement that failed is an "error: ... did not measure: WHY" cell
# and the ratio "error", never a number; a loop that does not come up
# exits 1.  LOOP_BENCH_SECONDS (3) sets each measurement's length.  Needs
# root.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
. "$(dirname "$0")/lib/bench.sh"
DUR=${LOOP_BENCH_SECONDS:-3}
if [ "$(id -u)" != 0 ]; then
	echo "loop: needs root (network namespaces); skipped" >&2
	exit 0
fi
command -v fake-cps >/dev/null || { echo "loop: no fake-cps; skipped" >&2; exit 0; }
LOOP_ID=b$$
LOOP_PEER_KEYS=	# fake-cps signs nothing; both runs alike
LOOP_RING=256	# 64-frame rings drop SYNs in bursts of 64 clients
. "$TOP/examples/demo/loop_net.bash"
trap 'loop_down' EXIT INT TERM

loop_up >&2 && loop_wait_ready 200 || { echo "loop: the loop did not come up" >&2; exit 1; }
# site1-a (the best instance: every flow goes there) becomes an accept
# sink with a deep backlog; its SCI goes on reporting it idle.
loop_stop site1-a
loop_bg sink "$LS1" - - $LOOP_PY -c 'import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.51.100.11", 80))
s.listen(4096)
while True:
    s.accept()[0].close()'
sleep 0.5
srcs=$(for i in $(seq 11 74); do echo 192.0.2.$i; done)

# "flows|p50|p99|failed|span" of the clients, or the reason there is none
# in each field: a failure never reads as a number.  With BENCH_DATA set
# (bench/run.sh), SAMPLES names the file of the connect times there.
# SPORT0 is the clients' first source port: the C-PS's run and the
# baseline's use ports of their own, so that no flow of one is a 5-tuple
# the forwarders still hold from the other.
measure() {
	local out n f e
	out=$(LOOP_SAMPLES=${BENCH_DATA:+$BENCH_DATA/loop.$SAMPLES.tsv} \
		LOOP_SPORT0=$SPORT0 \
		lx "$LC" $LOOP_PY "$TOP/bench/loop_clients.py" 203.0.113.100 80 \
		"$DUR" "$@" 2>&1)
	read -r n _ _ f _ <<<"$out"
	if ! [[ $n =~ ^[0-9]+$ ]]; then
		e="error: the clients gave no result: $(tr '\n|' ' /' <<<"$out" | cut -c1-120)"
	elif [ "$n" = 0 ]; then
		e="error: no connection completed ($f failed)"
	else
		tr ' ' '|' <<<"$out"
		return
	fi
	echo "$e|$e|$e|$e|$e"
}
IFS='|' read -r C_FLOWS C_P50 C_P99 C_FAIL C_SPAN <<<"$(SPORT0=20000 SAMPLES=delay-cps measure $srcs)"
IFS='|' read -r C1_FLOWS C1_P50 C1_P99 C1_FAIL C1_SPAN <<<"$(SPORT0=20000 SAMPLES=delay-cps-1 measure 192.0.2.10)"
if [ "$LOOP_CPS" = cps ]; then
	act=$(kill -USR1 "$(loop_pid cps)"; sleep 0.8; cats-cbor decode "$LOOP_DIR/cps.stats" 2>/dev/null |
		jq -r 'select(.type == "stats") | .counters["bind.activated"] // empty' | tail -1)
else
	act=$(kill -USR1 "$(loop_pid bind)"; sleep 0.5; cats-cbor decode "$LOOP_DIR/bind.cbor" 2>/dev/null |
		jq -r 'select(.type == "stats") | .counters.activated // empty' | tail -1)
fi

# A restart of cats-select (killed, -9, and restarted by cats-cps): the
# longest gap between two new flows that completed, connects every 20 ms
# (source addresses in turn), with its CST kept in its state file
# (--state) against the same restart without it (the state file removed
# just before the kill: the table comes back with the agents' next full
# snapshot, up to a keep-alive, LOOP_KEEPALIVE s).
restart_gap() {
	local f=$LOOP_DIR/restart.$1 p old t0 g
	[ "$LOOP_CPS" = cps ] || { echo "error: LOOP_CPS=$LOOP_CPS, not cats-cps"; return; }
	lx "$LC" $LOOP_PY -c 'import socket, sys, time
end = time.time() + float(sys.argv[1])
i = 0
while time.time() < end:
    s = socket.socket()
    s.bind(("192.0.2.%d" % (11 + i % 64), 0))
    s.settimeout(0.5)
    i += 1
    try:
        s.connect(("203.0.113.100", 80))
        print("%d ok" % (time.time() * 1000), flush=True)
    except OSError:
        print("%d fail" % (time.time() * 1000), flush=True)
    s.close()
    time.sleep(0.02)' "$((LOOP_KEEPALIVE + 6))" >"$f" 2>/dev/null &
	p=$!
	sleep 1
	old=$(loop_pid select)
	t0=$(date +%s%3N)
	[ "$1" = nostate ] && rm -f "$LOOP_DIR/select.state"
	kill -9 "$old"
	loop_wait 50 sh -c "awk -v t0=$t0 '\$1 > t0 && \$2 == \"ok\"' '$f' | grep -q ."
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	g=$(awk -v t0="$t0" '$2 == "ok" { if (last && $1 > t0 && !done) { print $1 - last; done = 1 } last = $1 }' "$f")
	echo "${g:-error: no new flow completed within $((LOOP_KEEPALIVE + 5)) s of the restart}"
	loop_select_start >/dev/null 2>&1
	sleep 0.5
}
R_STATE=$(restart_gap state)
loop_wait_ready 200 >/dev/null 2>&1
R_NOSTATE=$(restart_gap nostate)

# The journal's durability (cats-bind --fsync, in cats-cps's [bind]
# section): cats-cps started again with each policy, the 64 clients again,
# against the run above with the default (always: each group commit synced
# before its bindings leave).
fsync_run() {
	local n0
	loop_stop cps
	n0=$(grep -c 'forwarder .* connected' "$LOOP_DIR/log/cps.err")
	if ! LOOP_FSYNC=$1 loop_cps_svc_start >/dev/null 2>&1 ||
		! loop_wait 100 sh -c "[ \$(grep -c 'forwarder .* connected' '$LOOP_DIR/log/cps.err') -ge $((n0 + 3)) ]"; then
		e="error: cats-cps with --fsync $1 did not come back"
		echo "$e|$e|$e|$e|$e"
		return
	fi
	sleep 1
	SPORT0=$2 SAMPLES=delay-cps-fsync-$1 measure $srcs
}
IFS='|' read -r I_FLOWS _ _ I_FAIL I_SPAN <<<"$(fsync_run interval 30000)"
IFS='|' read -r N_FLOWS _ _ N_FAIL N_SPAN <<<"$(fsync_run never 35000)"
IFS='|' read -r _ N1_P50 N1_P99 _ _ <<<"$(SPORT0=35000 SAMPLES=delay-cps-fsync-never-1 measure 192.0.2.10)"

# The baseline: fake-cps on the same sockets, a newer epoch than cats-bind's.
loop_stop cps
loop_stop bind
loop_stop select
loop_stop pce
loop_stop tee
loop_bg fakecps "$LM" - - fake-cps --select "unix:$LOOP_DIR/select.sock" \
	--bind "unix:$LOOP_DIR/bind.sock" --egress EF-1 --locator 198.51.100.11 \
	--sids 2001:db8:2::1 --epoch 1000000000 \
	--log "$LOOP_DIR/fakecps.log"
for f in IF-1 EF-1; do
	loop_wait 50 grep -q "\"fwd\":\"$f\",\"event\":\"hello\"" "$LOOP_DIR/fakecps.log"
done
# Its newer epoch fences every binding of cats-bind's at the forwarders
# (thousands, each reported removed): that burst ends before the clients
# start, or the baseline's first connects wait behind it (up to 3 s under
# load: a failed connect a client).
for f in IF-1 EF-1; do
	for i in $(seq 50); do
		[ "$(loop_counter "$f" bindings)" = 0 ] && break
		sleep 0.2
	done
done
sleep 0.5
IFS='|' read -r F_FLOWS F_P50 F_P99 F_FAIL F_SPAN <<<"$(SPORT0=10000 SAMPLES=delay-fakecps measure $srcs)"
IFS='|' read -r F1_FLOWS F1_P50 F1_P99 F1_FAIL F1_SPAN <<<"$(SPORT0=10000 SAMPLES=delay-fakecps-1 measure 192.0.2.10)"

# A value or baseline that did not measure says so; then no ratio.
row() {
	local v=$2 b=$3 ratio
	case $v in error:*) v="error: the loop did not measure: ${v#error: }" ;; esac
	case $b in error:*) b="error: the fake-cps baseline did not measure: ${b#error: }" ;; esac
	case "$v$b" in
	*error:*) ratio=error ;;
	*) ratio=$(awk -v a="$v" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }') ;;
	esac
	printf '%s | %s | %s | %s\n' "$1" "$v" "$b" "$ratio"
}
rate() {
	case $1 in error:*) echo "$1"; return ;; esac
	awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%d", n / s; else print "error: the flows took no time" }'
}
row "loop new flows/s, SYN to binding installed, 64 clients (C-PS vs fake-cps)" \
	"$(rate "$C_FLOWS" "$C_SPAN")" "$(rate "$F_FLOWS" "$F_SPAN")"
row "loop first-packet delay p50 us (connect: SYN held, decided, bound, SYN-ACK back)" "$C_P50" "$F_P50"
row "loop first-packet delay p99 us" "$C_P99" "$F_P99"
row "loop failed connects in ${DUR}s" "$C_FAIL" "$F_FAIL"
row "loop new flows/s, one client" "$(rate "$C1_FLOWS" "$C1_SPAN")" "$(rate "$F1_FLOWS" "$F1_SPAN")"
row "loop first-packet delay p50 us, one client" "$C1_P50" "$F1_P50"
row "loop first-packet delay p99 us, one client" "$C1_P99" "$F1_P99"
# One client address: past 4096 bindings in the idle time cats-bind's
# client-bindings limit refuses (cats-bind(1) LIMITS); fake-cps has none.
row "loop failed connects in ${DUR}s, one client" "$C1_FAIL" "$F1_FAIL"
row "loop new flows/s, 64 clients, cats-bind --fsync interval (vs always)" \
	"$(rate "$I_FLOWS" "$I_SPAN")" "$(rate "$C_FLOWS" "$C_SPAN")"
row "loop new flows/s, 64 clients, cats-bind --fsync never (vs always)" \
	"$(rate "$N_FLOWS" "$N_SPAN")" "$(rate "$C_FLOWS" "$C_SPAN")"
row "loop first-packet delay p50 us, one client, --fsync never (vs fake-cps)" "$N1_P50" "$F1_P50"
row "loop first-packet delay p99 us, one client, --fsync never (vs fake-cps)" "$N1_P99" "$F1_P99"
row "loop failed connects in ${DUR}s, --fsync interval (vs always)" "$I_FAIL" "$C_FAIL"
row "loop failed connects in ${DUR}s, --fsync never (vs always)" "$N_FAIL" "$C_FAIL"
case "$R_STATE$R_NOSTATE" in
*error:*) r_ratio=error ;;
*) r_ratio=$(awk -v a="$R_STATE" -v b="$R_NOSTATE" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }') ;;
esac
case $R_NOSTATE in error:*) R_NOSTATE="error: the restart without --state did not measure: ${R_NOSTATE#error: }" ;; esac
printf '%s | %s | %s | %s\n' "loop cats-select restarted (-9): new flows served again after, ms (--state vs none)" \
	"$R_STATE" "$R_NOSTATE" "$r_ratio"
[ -n "$act" ] && echo "loop: cats-bind activated $act bindings" >&2
true
