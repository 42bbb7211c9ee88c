#!/usr/bin/env bats
# The whole loop (examples/demo/loop_net.bash) with a redundant C-PS
# (LOOP_HA): two cats-cps on one real etcd (a member in the C-PS's
# namespace), the forwarders given both
# instances' endpoints, the site agents advertising to both.  The owner
# dies (kill -9 of its parent and its binding stage: a host gone, its
# lease left to expire) under TCP transfers and new flows at 1,000/s.

load helper
load loop_helper

setup_file() {
	[ "$(id -u)" = 0 ] || return 0
	command -v etcd >/dev/null || skip "no etcd (make deps installs etcd-server)"
	export LOOP_HA=1
	loop_file_up h
}

@test "loop ha: kill -9 of the owning cats-cps during TCP transfers and 1,000 new flows/s: every transfer completes, the standby binds the new flows, the transfers' bindings kept under its epoch" {
	grep -q "owner of /loop/$LOOP_ID/" "$LOOP_DIR/log/cps.err"
	loop_wait 50 grep -q "standby: .* owns /loop/$LOOP_ID/" "$LOOP_DIR/log/cps-b.err"
	best_is site1-a
	# Two downloads of 6 MiB at about 1 MiB/s: running across the kill.
	dl() {
		lx "$LC" curl -s --speed-limit 1 --speed-time 30 -o "$LOOP_DIR/dl$1" \
		    -w '%{local_port}' "http://203.0.113.100/big?mb=6" >"$LOOP_DIR/dl$1.port"
	}
	dl 1 &
	dl1=$!
	dl 2 &
	dl2=$!
	wait_for 100 test -s "$LOOP_DIR/dl1"
	wait_for 100 test -s "$LOOP_DIR/dl2"
	# New flows at 1,000/s for 6 s from 64 addresses; the kill 1 s in.
	lx "$LC" tcpload -r 1000 -d 6 -p 30000 -t 6000 -e "$LOOP_DIR/load.e" \
	    203.0.113.100 80 192.0.2.11-74 >"$LOOP_DIR/load.out" 2>&1 &
	ld=$!
	wait_for 50 sh -c "[ \$(wc -l <'$LOOP_DIR/load.e' 2>/dev/null || echo 0) -ge 500 ]"
	e1=$(sed -n 's/.*owner of .*, epoch \([0-9]*\) .*/\1/p' "$LOOP_DIR/log/cps.err" | tail -1)
	t0=$(date +%s%3N)
	kill -9 "$(loop_stage_pid bind)" "$(loop_pid cps)"
	loop_wait 60 grep -q "owner of /loop/$LOOP_ID/" "$LOOP_DIR/log/cps-b.err"
	t1=$(date +%s%3N)
	e2=$(sed -n 's/.*owner of .*, epoch \([0-9]*\) .*/\1/p' "$LOOP_DIR/log/cps-b.err" | tail -1)
	[ "$e2" -gt "$e1" ]
	grep "restored [0-9]* bindings from etcd" "$LOOP_DIR/log/cps-b.err"
	wait "$ld"
	out=$(cat "$LOOP_DIR/load.out")
	# New flows: the first bound by the standby, and those that failed.
	first=$(sort -n "$LOOP_DIR/load.e" | awk -v t0="$t0" '$1 > t0 && $3 == "ok" { print $2 - t0; exit }')
	echo "# kill -9 -> owner b $((t1 - t0)) ms; first new flow after the kill done at +${first} ms; $out" >&3
	# New flows resume on b: flows started after the kill established,
	# which only b could bind (how many fail besides is this machine's
	# load: bench/ha_loop.sh counts them against the same load without a
	# kill), and none is left pending at the ingress.
	[ -n "$first" ]
	# (Requests still in flight when the load ends are answered, or end
	# at their pending deadline, 2 s: a wait for the count to drain.)
	no_pending() { [ "$(loop_counter IF-1 pending)" -eq 0 ]; }
	wait_progress 50 "loop_counter IF-1 pending" no_pending
	# Every transfer completes, whole.
	wait "$dl1"
	wait "$dl2"
	[ "$(stat -c %s "$LOOP_DIR/dl1")" = $((6 << 20)) ]
	[ "$(stat -c %s "$LOOP_DIR/dl2")" = $((6 << 20)) ]
	# Their bindings were restored and sent again under the new epoch:
	# both forwarders hold them, none was lost.
	for i in 1 2; do
		txn=$(loop_reply_of "$(cat "$LOOP_DIR/dl$i.port")" | jq -r .txn)
		for f in IF-1 EF-1; do
			loop_fwd_counters "$f" "$txn" | jq -e ".epoch == $e2 and .rev_pkts > 0"
		done
	done
	# And new flows are served.
	best_is site1-a
}
