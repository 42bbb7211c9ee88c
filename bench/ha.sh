#!/bin/sh
# The redundant C-PS (cats-bind --etcd, issue 19) on a real etcd started
# here on loopback, against the same cats-bind on its local journal
# (--fsync always), measured in the same run:
#   - failover: kill -9 of the owner holding N bindings -> the standby's
#     first new binding (median of 3), against kill -9 and an immediate
#     restart on the journal; the goal is the lease TTL (2 s) + 0.5 s;
#   - bindings lost by a failover (restored of N);
#   - new bindings/s through the filter, etcd against the journal (20,000
#     flows, BENCH_HA_TP_FLOWS, three rounds in turn: the medians);
#   - bytes written to etcd per new binding, against the journal's: the
#     commits' (the log, deflated) and the fold's (chunks of 256 ids a key,
#     off the commits' path, measured on the first failover round's owner);
#   - the fold under sustained load: the records it folded a second during
#     the throughput runs against the commits' new bindings a second, and
#     the backlog (ha.log_backlog) each run left (medians);
#   - a real cats-fwd given both instances: the owner frozen (SIGSTOP) ->
#     the forwarder on the new owner (median of 3), against kill -9 of the
#     owner -> the same (the frozen owner's connection stays open: it is
#     left at the forwarder's --ctl-deadline, 3 s; needs root for the
#     forwarder's namespace and TUN device, else the row says so).
BUILD=${BUILD:-build}
N=${BENCH_HA_FLOWS:-5000}
PATH="$BUILD/bin:$PATH"
command -v etcd >/dev/null || { echo "ha.sh: no etcd (make deps installs etcd-server)" >&2; exit 0; }
W=$(mktemp -d "${TMPDIR:-/tmp}/bench-ha.XXXXXX")
pids=""
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	[ -n "$etcd_pid" ] && kill "$etcd_pid" 2>/dev/null && wait "$etcd_pid" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
cp=$(port)
pp=$(port)
E="http://127.0.0.1:$cp"
etcd --name bench --data-dir "$W/etcd" --listen-client-urls "$E" \
    --advertise-client-urls "$E" --listen-peer-urls "http://127.0.0.1:$pp" \
    --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
    --initial-cluster "bench=http://127.0.0.1:$pp" >"$W/etcd.log" 2>&1 &
etcd_pid=$!
ok=
for _ in $(seq 100); do
	curl -sf -m 1 "$E/health" >/dev/null && { ok=1; break; }
	sleep 0.1
done
[ -n "$ok" ] || { echo "ha.sh: etcd did not start" >&2; tail -5 "$W/etcd.log" >&2; exit 1; }

# Path replies FIRST..FIRST+COUNT-1, as CBOR (commit none: ACTIVE at once).
reps() { python3 tests/tools/path_reps.py "$1" "$2" 3600000 | cats-cbor encode; }
reps 1 "$N" >"$W/reps"
reps $((N + 1)) 1 >"$W/one"
ms() { echo $(( $(date +%s%N) / 1000000 )); }
counter() { cats-cbor decode <"$1" | jq -r "select(.type == \"stats\") | .counters[\"$2\"] // 0" | tail -1; }
bindings_in() { cats-cbor decode <"$1" | jq -c 'select(.type == "binding")' | wc -l; }
# The bindings the chunks under prefix $1 hold (P c/LO, each a range of
# ids: tests/tools/ha_chunks.py reads them).
etcd_count() {
	curl -s -m 5 "$E/v3/kv/range" -d "{\"key\":\"$(printf %s "$1c/" | base64 -w0)\",
	    \"range_end\":\"$(printf %s "$1c0" | base64 -w0)\"}" |
	    python3 tests/tools/ha_chunks.py "$1" records | cats-cbor decode |
	    jq -c 'select(.type == "binding")' | wc -l
}
# Wait until a command succeeds (up to 30 s).
until_ok() { for _ in $(seq 3000); do "$@" && return 0; sleep 0.01; done; return 1; }

# Throughput: TP path replies through the filter (stdin to EOF), etcd
# and the journal in turn, 3 rounds each; the medians (on a loaded
# machine one pair swings 0.4-1.2x).
TP=${BENCH_HA_TP_FLOWS:-20000}
reps 1 "$TP" >"$W/reps.tp"
te_all="" tj_all="" fr_all="" bl_all=""
for r in 1 2 3; do
	t0=$(ms)
	cats-bind -q --etcd "$E" --etcd-prefix "/bench/tp$r/" --commit none --stats \
	    <"$W/reps.tp" >"$W/tp.etcd" 2>"$W/tp.etcd.err" || { cat "$W/tp.etcd.err" >&2; exit 1; }
	te=$(( $(ms) - t0 ))
	te_all="$te_all $te"
	# The fold's rate during the run (records a second) and what it left.
	fr_all="$fr_all $(( $(counter "$W/tp.etcd" ha.folded) * 1000 / te ))"
	bl_all="$bl_all $(counter "$W/tp.etcd" ha.log_backlog)"
	t0=$(ms)
	cats-bind -q --journal "$W/j.tp$r" --fsync always --commit none --stats \
	    <"$W/reps.tp" >"$W/tp.j" 2>"$W/tp.j.err" || { cat "$W/tp.j.err" >&2; exit 1; }
	tj_all="$tj_all $(( $(ms) - t0 ))"
	b_etcd=$(bindings_in "$W/tp.etcd")
	b_j=$(bindings_in "$W/tp.j")
	[ "$b_etcd" -eq "$TP" ] && [ "$b_j" -eq "$TP" ] || { echo "ha.sh: $b_etcd and $b_j bindings of $TP" >&2; exit 1; }
done
# shellcheck disable=SC2086
t_etcd=$(printf '%s\n' $te_all | sort -n | sed -n 2p)
# shellcheck disable=SC2086
t_j=$(printf '%s\n' $tj_all | sort -n | sed -n 2p)
bytes_etcd=$(counter "$W/tp.etcd" ha.txn_bytes)
txns=$(counter "$W/tp.etcd" ha.txns)
bytes_j=$(counter "$W/tp.j" journal.bytes)
raw_etcd=$(counter "$W/tp.etcd" ha.log_raw_bytes)
# shellcheck disable=SC2086
fr=$(printf '%s\n' $fr_all | sort -n | sed -n 2p)
# shellcheck disable=SC2086
bl=$(printf '%s\n' $bl_all | sort -n | sed -n 2p)

# Failover, 3 rounds: an owner with N bindings, a standby with one new
# flow waiting in its input; kill -9 of the owner; the standby's first
# binding out.
fo=""
lost=0
for r in 1 2 3; do
	pre="/bench/fo$r/"
	mkfifo "$W/a$r" "$W/b$r"
	cats-bind --trace /dev/null --etcd "$E" --etcd-prefix "$pre" --commit none \
	    --stats --listen "unix:$W/s$r" <"$W/a$r" >"$W/a$r.out" 2>"$W/a$r.err" &
	a=$!
	exec 7>"$W/a$r"
	until_ok grep -qs "owner of" "$W/a$r.err" || { cat "$W/a$r.err" >&2; exit 1; }
	cats-bind --trace /dev/null --etcd "$E" --etcd-prefix "$pre" --commit none \
	    --listen "unix:$W/s$r" <"$W/b$r" >"$W/b$r.out" 2>"$W/b$r.err" &
	b=$!
	pids="$pids $a $b"
	exec 8>"$W/b$r"
	until_ok grep -qs "standby:" "$W/b$r.err" || { cat "$W/b$r.err" >&2; exit 1; }
	cat "$W/reps" >&7
	written() { test "$(etcd_count "$pre")" = "$N"; }
	until_ok written || { echo "ha.sh: the owner did not write $N bindings" >&2; tail -3 "$W/a$r.err" >&2; exit 1; }
	if [ "$r" = 1 ]; then
		# The fold's bytes, from the owner's stats record (SIGUSR1).
		kill -USR1 "$a"
		has_stats() { [ "$(counter "$W/a$r.out" ha.folded)" -ge "$N" ] 2>/dev/null; }
		until_ok has_stats || true
		fold_bytes=$(counter "$W/a$r.out" ha.fold_bytes)
		folded=$(counter "$W/a$r.out" ha.folded)
	fi
	cat "$W/one" >&8
	t0=$(ms)
	kill -9 "$a"
	until_ok test -s "$W/b$r.out" || { cat "$W/b$r.err" >&2; exit 1; }
	fo="$fo $(( $(ms) - t0 ))"
	got=$(sed -n 's/.*restored \([0-9]*\) bindings from etcd.*/\1/p' "$W/b$r.err")
	lost=$(( lost + N - ${got:-0} ))
	exec 7>&- 8>&-
	kill -9 "$b" 2>/dev/null
	wait "$a" "$b" 2>/dev/null
done
# shellcheck disable=SC2086
set -- $fo
fo_med=$(printf '%s\n' $fo | sort -n | sed -n 2p)

# The baseline: kill -9 of the journal's cats-bind, restarted at once.
mkfifo "$W/c" "$W/c2"
cats-bind -q --journal "$W/j.fo" --commit none <"$W/c" >/dev/null 2>"$W/c.err" &
c=$!
pids="$pids $c"
exec 7>"$W/c"
cat "$W/reps" >&7
journaled() { test "$(cats-bind --dump --journal "$W/j.fo" 2>/dev/null | cats-cbor decode | wc -l)" -ge "$N"; }
until_ok journaled
t0=$(ms)
kill -9 "$c"
wait "$c" 2>/dev/null
exec 7>&-
cats-bind -q --journal "$W/j.fo" --commit none <"$W/c2" >"$W/c2.out" 2>"$W/c2.err" &
c2=$!
pids="$pids $c2"
exec 8>"$W/c2"
cat "$W/one" >&8
until_ok test -s "$W/c2.out"
t_restart=$(( $(ms) - t0 ))
exec 8>&-

# The forwarder follows the owner: SIGSTOP (left at its deadline) against
# kill -9 (the connection ends), 3 rounds each, time to "connected to" the
# new owner's endpoint in its log.
ns=""
fwd_round() {	# fwd_round KIND ROUND: prints the ms
	pre="/bench/fw$1$2/"
	a="" b="" f=""
	mkfifo "$W/fa$1$2" "$W/fb$1$2"
	cats-bind --trace /dev/null --etcd "$E" --etcd-prefix "$pre" --commit none \
	    --listen "unix:$W/fs$1$2a" <"$W/fa$1$2" >/dev/null 2>"$W/fa$1$2.err" &
	a=$!
	exec 7>"$W/fa$1$2"
	until_ok grep -qs "owner of" "$W/fa$1$2.err" || { fwd_end; return 1; }
	cats-bind --trace /dev/null --etcd "$E" --etcd-prefix "$pre" --commit none \
	    --listen "unix:$W/fs$1$2b" <"$W/fb$1$2" >/dev/null 2>"$W/fb$1$2.err" &
	b=$!
	exec 8>"$W/fb$1$2"
	pids="$pids $a $b"
	until_ok grep -qs "standby:" "$W/fb$1$2.err" || { fwd_end; return 1; }
	ip netns exec "$ns" cats-fwd --id IF-1 --client tun:hb0 --core tun:hb0 \
	    --src6 2001:db8:1::1 --sid 2001:db8:1::1 --bind "unix:$W/fs$1$2a" \
	    --bind "unix:$W/fs$1$2b" 2>"$W/fw$1$2.err" &
	f=$!
	pids="$pids $f"
	until_ok grep -qs "bindings fetched again" "$W/fw$1$2.err" || { fwd_end; return 1; }
	t0=$(ms)
	if [ "$1" = stop ]; then kill -STOP "$a"; else kill -9 "$a"; fi
	until_ok grep -qs "connected to unix:$W/fs$1$2b" "$W/fw$1$2.err" || { fwd_end; return 1; }
	echo $(( $(ms) - t0 ))
	fwd_end
}
# The processes of a round (in its subshell: the trap does not see them).
fwd_end() {
	for p in $a $b $f; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	exec 7>&- 8>&-
	for p in $a $b $f; do wait "$p" 2>/dev/null; done
	return 0
}
fwd_row=""
if [ "$(id -u)" != 0 ] || [ ! -c /dev/net/tun ]; then
	fwd_row="ha frozen owner (SIGSTOP) -> cats-fwd on the new owner | not measured | needs root and /dev/net/tun | -"
else
	ns=benchha$$
	ip netns add "$ns" && ip netns exec "$ns" ip link set lo up
	fs="" fk=""
	for r in 1 2 3; do
		fs="$fs $(fwd_round stop $r)" || break
		fk="$fk $(fwd_round kill $r)" || break
	done
	ip netns del "$ns" 2>/dev/null
	# shellcheck disable=SC2086
	ns_n=$(printf '%s\n' $fs | grep -c .)
	# shellcheck disable=SC2086
	nk_n=$(printf '%s\n' $fk | grep -c .)
	if [ "$ns_n" -ne 3 ] || [ "$nk_n" -ne 3 ]; then
		fwd_row="ha frozen owner (SIGSTOP) -> cats-fwd on the new owner | not measured | a round failed ($fs / $fk) | -"
	else
		# shellcheck disable=SC2086
		fs_med=$(printf '%s\n' $fs | sort -n | sed -n 2p)
		# shellcheck disable=SC2086
		fk_med=$(printf '%s\n' $fk | sort -n | sed -n 2p)
		# shellcheck disable=SC2086
		fwd_row=$(awk -v s="$fs_med" -v k="$fk_med" -v l="$(echo $fs)" -v m="$(echo $fk)" 'BEGIN {
			printf "ha frozen owner (SIGSTOP) -> cats-fwd on the new owner, median of 3 (%s ms) | %.2f s | kill -9 -> cats-fwd on it %.2f s (%s ms) | %.2fx\n",
			    l, s / 1000, k / 1000, m, s / k }')
	fi
fi
echo "$fwd_row"

awk -v n="$N" -v tp="$TP" -v te="$t_etcd" -v tj="$t_j" -v fo="$fo_med" -v f1="$1" \
    -v tea="$(echo $te_all)" -v tja="$(echo $tj_all)" \
    -v f2="$2" -v f3="$3" -v tr="$t_restart" -v lost="$lost" \
    -v be="$bytes_etcd" -v bj="$bytes_j" -v tx="$txns" -v raw="$raw_etcd" \
    -v fb="${fold_bytes:-0}" -v fd="${folded:-0}" -v fr="$fr" -v bl="$bl" \
    -v fra="$(echo $fr_all)" -v bla="$(echo $bl_all)" 'BEGIN {
	printf "ha failover: kill -9 of the owner (%d bindings) -> first new binding by the standby, median of 3 (%d, %d, %d ms) | %.2f s | goal 2.50 s (lease 2 s + 0.5 s); journal restart %.2f s | %.2fx of the goal\n",
	    n, f1, f2, f3, fo / 1000, tr / 1000, fo / 2500
	printf "ha failover: bindings lost in 3 failovers | %d of %d | 0 | -\n", lost, 3 * n
	printf "ha new bindings/s, etcd replication / local journal (fsync always), %d flows, median of 3 (etcd %s ms, journal %s ms) | %.0f/s | %.0f/s | %.2fx (goal >= 0.5x)\n",
	    tp, tea, tja, tp / (te / 1000), tp / (tj / 1000), tj / te
	printf "ha bytes to etcd per new binding, the commits (%d txns for %d; records %.0f B before deflate) | %.0f B | journal %.0f B | %.2fx\n",
	    tx, tp, raw / tp, be / tp, bj / tp, be / bj
	if (fd > 0)
		printf "ha bytes to etcd per new binding, commits + fold (%d folded, off the commits path) | %.0f B | journal %.0f B | %.2fx\n",
		    fd, be / tp + fb / fd, bj / tp, (be / tp + fb / fd) / (bj / tp)
	else
		printf "ha bytes to etcd per new binding, commits + fold | error: the fold not measured | journal %.0f B | -\n", bj / tp
	printf "ha fold under sustained load, %d flows: records folded/s during the run, median of 3 (%s/s; backlog left %s) | %.0f/s | commits %.0f/s, backlog left %d records | %.2fx\n",
	    tp, fra, bla, fr, tp / (te / 1000), bl, fr / (tp / (te / 1000))
}'
