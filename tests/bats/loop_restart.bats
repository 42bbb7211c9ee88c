#!/usr/bin/env bats
# The whole loop through process faults (examples/demo/loop_net.bash):
# every process of the loop can be killed and restarted without losing
# accepted data or leaving a flow half-bound.

load helper
load loop_helper

setup_file() { loop_file_up r; }

# A new flow is answered, within $1 tenths of a second (the forwarders
# reconnect once a second).
answered_within() {
	local n=$1
	while [ "$n" -gt 0 ]; do
		LOOP_CURL_TIMEOUT=2 loop_curl http://203.0.113.100/ && return 0
		sleep 0.2
		n=$((n - 3))
	done
	return 1
}

# A download started in the background is under way: its first bytes are
# in (curl makes the file then).  A fault injected now hits it in the
# middle (each is several MiB at about 1 MiB/s).
under_way() {
	wait_for 100 test -s "$1" || { echo "no byte of $1"; return 1; }
}

@test "loop restart: cats-bind killed (-9) during a TCP transfer: the transfer completes" {
	best_is site1-a
	lx "$LC" curl -s --speed-limit 1 --speed-time 30 -o "$LOOP_DIR/dl1" -w '%{local_port}' \
		"http://203.0.113.100/big?mb=4" >"$LOOP_DIR/dl1.port" &
	dl=$!
	under_way "$LOOP_DIR/dl1"
	loop_stop bind KILL
	loop_bind_start
	# The journal gave the flow back; both forwarders re-synced.
	grep -q "restored [1-9][0-9]* bindings" "$LOOP_DIR/log/bind.err"
	grep -q "epoch 2" "$LOOP_DIR/log/bind.err"
	resynced() {
		[ "$(grep -c "forwarder IF-1 connected" "$LOOP_DIR/log/bind.err")" -ge 2 ] &&
		[ "$(grep -c "forwarder EF-1 connected" "$LOOP_DIR/log/bind.err")" -ge 2 ]
	}
	loop_wait 50 resynced
	wait $dl
	[ "$(stat -c %s "$LOOP_DIR/dl1")" = $((4 << 20)) ]
	[ "$(sort -u "$LOOP_DIR/dl1")" = site1-a ]
	# The flow's binding survived with the new owner epoch, not half-bound:
	# cats-bind still holds it ACTIVE, and both forwarders hold it.
	txn=$(loop_reply_of "$(cat "$LOOP_DIR/dl1.port")" | jq -r .txn)
	for f in IF-1 EF-1; do
		loop_fwd_counters "$f" "$txn" | jq -e '.epoch >= 2 and .rev_pkts > 0'
	done
	# New flows are bound by the restarted manager (site1-a idle again).
	loop_wait 50 loop_ct_is 198.51.100.11:80 3
	best_is site1-a
}

@test "loop restart: the C-PS's selector and PCE killed (-9): the CST back from its state file, new flows served at once" {
	# 24 MiB at about 1 MiB/s: still running across the restart.
	lx "$LC" curl -s --speed-limit 1 --speed-time 30 -o "$LOOP_DIR/dl2" "http://203.0.113.100/big?mb=24" &
	dl=$!
	loop_wait 60 loop_ct_is 198.51.100.11:80 13
	# cats-select's state file (--state) has site1-a loaded.
	in_state() {
		cats-cbor decode "$LOOP_DIR/select.state" | jq -se 'any(.[] |
			select(.type == "metric") | .entries[];
			.csci_id == "198.51.100.11:80" and .comp_time_ms == 13)'
	}
	loop_wait 60 in_state
	r0=$(loop_log_count select "CST entries restored")
	loop_stop select KILL
	loop_stop pce KILL
	loop_stop tee KILL
	loop_select_start
	loop_pce_start
	# No advertisement needed: the restarted selector has the table back,
	# site1-a still loaded, and steers by it at once.
	[ "$(loop_log_count select "CST entries restored")" -gt "$r0" ]
	loop_cps_cst | awk '$1 == "198.51.100.11:80" && $5 == 13 { ok = 1 } END { exit !ok }'
	answered_within 30
	kill -0 $dl
	best_is site1-b
	# The transfer bound before the restart was not disturbed.
	wait $dl
	[ "$(stat -c %s "$LOOP_DIR/dl2")" = $((24 << 20)) ]
	[ "$(sort -u "$LOOP_DIR/dl2")" = site1-a ]
}

# New flows in a loop, one every 50 ms (each: "ms ok|fail"), while
# something is restarted: the longest gap between two answered flows that
# spans the restart, in ms.
flows_loop() {
	while :; do
		if LOOP_CURL_TIMEOUT=1 loop_curl http://203.0.113.100/; then r=ok; else r=fail; fi
		echo "$(date +%s%3N) $r"
		sleep 0.05
	done >"$LOOP_DIR/flows.$1" 2>/dev/null
}
flows_gap() {
	awk -v t0="$2" '$2 == "ok" { if (last && $1 > t0 && !done) { print $1 - last; done = 1 } last = $1 }
		END { if (!done) print "none" }' "$LOOP_DIR/flows.$1"
}

# The flows loop of a test that failed before it stopped it: left running,
# it held the file's output open and bats waited for it without end.
teardown() {
	local p
	for p in ${fl:-} ${tl:-} ${dl:-}; do kill "$p" 2>/dev/null || true; done
}

# How long each restart takes is bench/loop.sh's figure (its restart
# rows), printed here: a bound of 3 s failed on a loaded machine (the whole
# service back after 3707 ms with a busy loop beside it), and a restart that
# is never served again fails the wait.
@test "loop restart: each stage of cats-cps and the whole service restarted while new flows arrive: new flows served again" {
	[ "$LOOP_CPS" = cps ] || skip "cats-cps only (LOOP_CPS=$LOOP_CPS)"
	flows_loop restart 3>&- &
	fl=$!
	wait_for 50 grep -q ' ok$' "$LOOP_DIR/flows.restart"
	# Served again: a new flow answered after the restart began.
	served_again() { [ "$(flows_gap restart "$t0")" != none ]; }
	for s in select pce bind cps; do
		t0=$(date +%s%3N)
		if [ $s = cps ]; then
			loop_stop cps
			loop_cps_start
		else
			loop_stop $s KILL
			loop_${s}_start
		fi
		wait_for 100 served_again
		g=$(flows_gap restart "$t0")
		echo "# $s restarted: new flows served again after $g ms" >&3
		[ "$g" != none ]
	done
	kill $fl
	grep -q "stage bind (pid [0-9]*) killed by signal 9" "$LOOP_DIR/log/cps.err"
}

# A counter of cats-cps, from a stats record written after this call.
cps_counter() {
	local n0
	n0=$(cats-cbor decode "$LOOP_DIR/cps.stats" 2>/dev/null | wc -l)
	kill -USR1 "$(loop_pid cps)"
	loop_wait 50 sh -c "[ \$(cats-cbor decode '$LOOP_DIR/cps.stats' 2>/dev/null | wc -l) -gt $n0 ]" ||
		return 1
	cats-cbor decode "$LOOP_DIR/cps.stats" 2>/dev/null | tail -1 | jq -er ".counters[\"$1\"]"
}
# The ingress holds nothing pending (every request it sent ended).
none_pending() { [ "$(loop_counter IF-1 pending)" = 0 ]; }

# issue 18's faults: kill -9 of each stage, and of the whole service, while
# tcpload offers 1,000 new flows a second from 64 client addresses and a
# download runs.  The download completes whole (established flows keep
# forwarding); the stage runs again, its restart counted and logged with
# its cause (the whole service: started again by the harness, as systemd
# would, its bindings restored); every request in flight ended in a
# binding or an error at the ingress (its pending count back to 0).  How
# long each outage is and how many flows fail is bench/loop.sh's figure
# (its kill rows): nothing here is timed, each step waits for its event.
@test "loop restart: kill -9 of each stage and of cats-cps at 1,000 new flows/s during a transfer: it completes, the stage is back and counted, nothing left pending" {
	[ "$LOOP_CPS" = cps ] || skip "cats-cps only (LOOP_CPS=$LOOP_CPS)"
	local s old sp=20000 r0 b0 out
	for s in select pce bind cps; do
		lx "$LC" curl -s --speed-limit 1 --speed-time 30 -o "$LOOP_DIR/kd.$s" \
			"http://203.0.113.100/big?mb=4" &
		dl=$!
		under_way "$LOOP_DIR/kd.$s"
		lx "$LC" tcpload -r 1000 -d 3 -p $sp -e "$LOOP_DIR/kl.$s" \
			203.0.113.100 80 192.0.2.11-74 >"$LOOP_DIR/kl.$s.out" 2>&1 &
		tl=$!
		sp=$((sp + 1000))
		# New flows under way (the first has ended) when the kill comes.
		wait_for 100 test -s "$LOOP_DIR/kl.$s"
		if [ $s = cps ]; then
			old=$(loop_pid cps)
			b0=$(loop_log_count cps "restored [0-9]* bindings")
			kill -9 "$old"
			loop_wait 50 sh -c "! kill -0 $old"
			loop_cps_svc_start
			loop_stage_wait bind
			loop_stage_wait select
			# The new service has the bindings back from the journal.
			loop_log_more cps "restored [0-9]* bindings" "$b0"
		else
			r0=$(cps_counter "$s.restarts")
			old=$(loop_stage_pid $s)
			kill -9 "$old"
			loop_stage_wait $s "$old"
			grep -q "stage $s (pid $old) killed by signal 9" "$LOOP_DIR/log/cps.err"
			[ "$(cps_counter "$s.restarts")" -gt "$r0" ]
			[ "$(cps_counter "$s.last_exit")" = 137 ]
		fi
		wait $tl
		out=$(cat "$LOOP_DIR/kl.$s.out")
		echo "# kill -9 $s: ${out#tcpload }" | cut -c1-150 >&3
		[[ "$out" == *" flows="[1-9]* ]]
		wait $dl
		[ "$(stat -c %s "$LOOP_DIR/kd.$s")" = $((4 << 20)) ]
		[ "$(sort -u "$LOOP_DIR/kd.$s" | wc -l)" = 1 ]	# one instance
		# Every request of the ingress ended: bound, or an error (or
		# its deadline) released what it held.
		wait_for 100 none_pending
	done
	# Served again after the last one.
	answered_within 30
}

@test "loop restart: a site agent killed (-9) and restarted: new epoch, full snapshot, steering goes on" {
	e0=$(loop_metrics | jq -r 'select(.sma_id == "sma-site1") | .epoch' | tail -1)
	loop_stop sma1 KILL
	loop_sma_start 1
	new_epoch() { loop_metrics | jq -se --argjson e "$e0" 'any(.[]; .sma_id == "sma-site1" and .epoch > $e and .op == "full")'; }
	loop_wait 50 new_epoch
	loop_wait 100 loop_cst_is 198.51.100.11:80 HEALTHY HEALTHY
	# site1-a's load from the tests before may still be reported by its
	# agent for a while: steering goes back to it once it has drained.
	loop_wait 300 best_is site1-a || best_is site1-a
}

@test "loop restart: the egress forwarder restarted: established flows resume, new flows bind" {
	lx "$LC" curl -s --speed-limit 1 --speed-time 30 -o "$LOOP_DIR/dl3" "http://203.0.113.100/big?mb=4" &
	dl=$!
	under_way "$LOOP_DIR/dl3"
	loop_stop EF-1
	loop_egress_start 1
	grep -q "bindings fetched again" "$LOOP_DIR/log/EF-1.err"
	wait $dl
	[ "$(stat -c %s "$LOOP_DIR/dl3")" = $((4 << 20)) ]
	[ "$(sort -u "$LOOP_DIR/dl3")" = site1-a ]
	loop_wait 60 loop_cst_is 198.51.100.11:80 HEALTHY HEALTHY
	answered_within 30
}

@test "loop restart: the ingress forwarder restarted during a transfer: re-synced, it completes" {
	loop_wait 60 loop_ct_is 198.51.100.11:80 3
	lx "$LC" curl -s --speed-limit 1 --speed-time 30 -o "$LOOP_DIR/dl4" "http://203.0.113.100/big?mb=4" &
	dl=$!
	under_way "$LOOP_DIR/dl4"
	r0=$(grep -c "forwarder IF-1 connected" "$LOOP_DIR/log/bind.err" || true)
	loop_stop IF-1
	loop_ingress_start
	[ "$(grep -c "forwarder IF-1 connected" "$LOOP_DIR/log/bind.err")" -gt "$r0" ]
	wait $dl
	[ "$(stat -c %s "$LOOP_DIR/dl4")" = $((4 << 20)) ]
	[ "$(sort -u "$LOOP_DIR/dl4")" = site1-a ]
	# The restarted ingress asked nothing for the established flow.
	[ "$(loop_counter IF-1 drop_no_binding_tcp)" = 0 ]
	answered_within 30
}
