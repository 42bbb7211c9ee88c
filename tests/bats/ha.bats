#!/usr/bin/env bats
# The redundant C-PS (cats-bind(1), REDUNDANCY): two cats-bind instances on
# one real etcd (Debian's etcd-server 3.4, started here on loopback), one
# owner; kill -9 of the owner, the standby takes over, restores every
# binding and fences the old owner at the store and at the data plane.
# A real cats-fwd given both instances' endpoints follows the owner and
# refuses the records of an older epoch.

load helper

setup_file() {
	command -v etcd >/dev/null || skip "no etcd (make deps installs etcd-server)"
	export ETCD_DIR
	ETCD_DIR=$(mktemp -d "${BATS_TMPDIR:-/tmp}/ha-etcd.$$.XXXXXX")
	etcd_up "$ETCD_DIR"
}

teardown_file() {
	etcd_down "$ETCD_DIR"
	rm -rf "$ETCD_DIR"
}

setup() {
	W=$(mktemp -d "${BATS_TMPDIR:-/tmp}/ha.$$.XXXXXX")
	P="/ha-test/$BATS_TEST_NUMBER.$$/"
	PIDS=""
}

teardown() {
	[ -n "${NSF:-}" ] && ip netns del "$NSF" 2>/dev/null
	[ -n "${NFT:-}" ] && nft delete table inet "$NFT" 2>/dev/null
	for p in $PIDS; do
		kill -CONT "$p" 2>/dev/null || true
		kill -9 "$p" 2>/dev/null || true
	done
	exec 7>&- 8>&- 2>/dev/null || true
	# The stages of a killed cats-cps leave on their SIGTERM, a moment
	# later: their files go once they have.
	local i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		rm -rf "$W" 2>/dev/null && break
		sleep 0.2
	done
	# The cut test's cgroup, once its processes have left.
	if [ -n "${CUT_CG:-}" ] && [ -d "$CUT_CG" ]; then
		for p in $(cat "$CUT_CG/cgroup.procs"); do kill -9 "$p"; done
		for i in 1 2 3 4 5 6 7 8 9 10; do
			rmdir "$CUT_CG" 2>/dev/null && break
			sleep 0.2
		done
	fi
	rm -rf "$W"
}

# N path replies from txn FIRST (commit none: each is ACTIVE when written).
gen_reps() { python3 "$TOP/tests/tools/path_reps.py" "${2:-1}" "$1"; }

enc() { cats-cbor encode; }

# Start instance NAME (a or b) on fifo $W/NAME.in, fd $2, extra args after;
# it listens on CPS_LISTEN (unix:$W/sock, shared by both, by default).
start_cps() {
	local n=$1 fd=$2
	shift 2
	mkfifo "$W/$n.in"
	cats-bind --etcd "$ETCD" --etcd-prefix "$P" --id cps --commit none \
	    --listen "${CPS_LISTEN:-unix:$W/sock}" "$@" <"$W/$n.in" >"$W/$n.out" \
	    2>"$W/$n.err" &
	PIDS="$PIDS $!"
	eval "pid_$n=$!"
	eval "exec $fd>\"$W/$n.in\""
}

# The keys under the prefix, as JSON; the binding records the chunks
# (c/LO) hold, as JSON Lines; how many; the keys of each kind.
etcd_json() { ETCDCTL_API=3 etcdctl --endpoints "$ETCD" get --prefix "$P" -w json; }
etcd_chunked() {
	etcd_json | python3 "$TOP/tests/tools/ha_chunks.py" "$P" records |
	    cats-cbor decode | jq -c 'select(.type == "binding")'
}
etcd_bindings() { etcd_chunked | wc -l; }
etcd_keys() { etcd_json | python3 "$TOP/tests/tools/ha_chunks.py" "$P" keys; }

# wait_for runs its command again, not its arguments: these count anew.
etcd_has() { [ "$(etcd_bindings)" -eq "$1" ]; }
bindings_are() { [ "$(jq -c 'select(.type == "binding")' "$1" | wc -l)" -eq "$2" ]; }
out_bindings_are() { [ "$(cats-cbor decode <"$1" | jq -c 'select(.type == "binding")' | wc -l)" -eq "$2" ]; }

epoch_of() { sed -n 's/.*owner of .*, epoch \([0-9]*\) .*/\1/p' "$1"; }

@test "ha: --help shows --etcd; --etcd with --journal is refused" {
	cats-bind --help >"$W/help.txt"
	grep -q -- "--etcd urls" "$W/help.txt"
	run cats-bind --etcd "$ETCD" --journal "$W/j"
	[ "$status" -eq 2 ]
	[[ "$output" == *"not in a --journal"* ]]
	run cats-bind --etcd "$ETCD" --lease 1s
	[ "$status" -eq 2 ]
}

@test "ha: one owner, one standby; kill -9 of the owner: the standby restores every binding under a higher epoch" {
	start_cps a 7
	wait_for 50 grep -q "owner of $P" "$W/a.err"
	start_cps b 8
	wait_for 50 grep -q "standby: cps@.* owns $P" "$W/b.err"
	gen_reps 50 1 | enc >&7
	wait_for 50 etcd_has 50
	# A forwarder of the owner gets the 50 bindings, under its epoch.
	bind_fwdsim -c "unix:$W/sock" -n IF-1 -t 5 -x 51 >"$W/f1"
	e1=$(epoch_of "$W/a.err")
	[ "$(jq -c "select(.type == \"binding\" and .epoch == $e1)" "$W/f1" |
	    wc -l)" -eq 50 ]
	kill -9 "$pid_a"
	wait_for 60 grep -q "owner of $P" "$W/b.err"
	grep -q "restored 50 bindings from etcd" "$W/b.err"
	e2=$(epoch_of "$W/b.err")
	[ "$e2" -gt "$e1" ]
	# The forwarder reconnects to the new owner: the same 50, re-sent
	# under the new epoch, then the end-of-sync marker with it.
	wait_for 50 test -S "$W/sock"
	bind_fwdsim -c "unix:$W/sock" -n IF-1 -e 2 -t 5 -x 51 >"$W/f2"
	[ "$(jq -c "select(.type == \"binding\" and .epoch == $e2)" "$W/f2" |
	    wc -l)" -eq 50 ]
	diff <(jq -r 'select(.type == "binding") | .id' "$W/f1" | sort -n) \
	    <(jq -r 'select(.type == "binding") | .id' "$W/f2" | sort -n)
	jq -e "select(.type == \"status\") | .event == \"hello\" and
	    .epoch == $e2" "$W/f2"
	# New flows bind on the new owner; binding ids go on from the last.
	gen_reps 5 51 | enc >&8
	wait_for 50 etcd_has 55
	wait_for 50 out_bindings_are "$W/b.out" 5
	cats-cbor decode <"$W/b.out" | jq -se "map(select(.type == \"binding\"))
	    | all(.id > 50 and .epoch == $e2)"
}

@test "ha: the owner frozen past its lease (SIGSTOP), then resumed: it installs nothing" {
	# The ingress's install commits a binding (its status is replicated).
	start_cps a 7 --commit ingress
	wait_for 50 grep -q "owner of $P" "$W/a.err"
	start_cps b 8 --commit ingress
	wait_for 50 grep -q "standby:" "$W/b.err"
	# A forwarder stays connected to the owner through it all.
	bind_fwdsim -c "unix:$W/sock" -n IF-1 -t 20 >"$W/fa" &
	fa=$!
	gen_reps 5 1 | enc >&7
	wait_for 50 bindings_are "$W/fa" 5
	kill -STOP "$pid_a"
	wait_for 60 grep -q "owner of $P" "$W/b.err"
	grep -q "restored 5 bindings" "$W/b.err"
	# New work reaches the frozen owner, which then resumes.
	gen_reps 5 6 | enc >&7
	kill -CONT "$pid_a"
	st=0
	wait "$pid_a" || st=$?
	[ "$st" -eq 1 ]
	grep -q "replica: the renew deadline passed (epoch [0-9]*): stopping" "$W/a.err"
	# It sent nothing for them, to the forwarder or to its output, and
	# wrote nothing: etcd holds the 5 of before.
	wait "$fa" || true
	[ "$(jq -c 'select(.type == "binding")' "$W/fa" | wc -l)" -eq 5 ]
	[ "$(cats-cbor decode <"$W/a.out" | jq -c 'select(.type == "binding"
	    and .txn > 5)' | wc -l)" -eq 0 ]
	[ "$(etcd_bindings)" -eq 5 ]
	# The new owner serves them all under its epoch.
	bind_fwdsim -c "unix:$W/sock" -n IF-1 -e 2 -t 5 -x 6 >"$W/fb"
	e2=$(epoch_of "$W/b.err")
	[ "$(jq -c "select(.type == \"binding\" and .epoch == $e2)" "$W/fb" |
	    wc -l)" -eq 5 ]
}

@test "ha: the owner's lease revoked under it: its next write fails the compare at the store" {
	# A long lease: the next keepalive is 5 s away, so the write finds out.
	start_cps a 7 --lease 20s
	wait_for 50 grep -q "owner of $P" "$W/a.err"
	gen_reps 3 1 | enc >&7
	wait_for 50 etcd_has 3
	# (The lease ID passes 2^53: python reads it, not jq.)
	lease=$(ETCDCTL_API=3 etcdctl --endpoints "$ETCD" get "${P}owner" -w json |
	    python3 -c 'import json, sys; print("%x" % json.load(sys.stdin)["kvs"][0]["lease"])')
	ETCDCTL_API=3 etcdctl --endpoints "$ETCD" lease revoke "$lease"
	start_cps b 8
	wait_for 50 grep -q "owner of $P" "$W/b.err"
	gen_reps 2 4 | enc >&7
	st=0
	wait "$pid_a" || st=$?
	[ "$st" -eq 1 ]
	grep -q "replica: fenced: the owner key is not ours any more" "$W/a.err"
	[ "$(cats-cbor decode <"$W/a.out" | jq -c 'select(.type == "binding"
	    and .txn > 3)' | wc -l)" -eq 0 ]
	[ "$(etcd_bindings)" -eq 3 ]
}

@test "ha: a clean stop hands over at once; etcd frozen: the owner stops at its renew deadline" {
	# The owner's lease is long: the standby owning before it could run
	# out proves it was revoked (a clock budget of 1.5 s against a TTL of
	# 2 s was one a loaded machine can miss).
	start_cps a 7 --lease 30s
	wait_for 50 grep -q "owner of $P" "$W/a.err"
	start_cps b 8
	wait_for 50 grep -q "standby:" "$W/b.err"
	kill -TERM "$pid_a"
	wait "$pid_a"
	wait_for 100 grep -q "owner of $P" "$W/b.err"
	# etcd stops answering: new flows fail closed (the owner leaves with
	# the reason) before its lease could run out on the server.
	e=$(cat "$ETCD_DIR/pid")
	kill -STOP "$e"
	st=0
	wait "$pid_b" || st=$?
	kill -CONT "$e"
	[ "$st" -eq 1 ]
	grep -q "renew deadline passed" "$W/b.err"
	grep -q "etcd keepalive: .*timed out\|etcd keepalive: .*Timeout" "$W/b.err"
}

@test "ha: removals are folded: the chunks lose them, the standby's warm copy too; it restores none of them" {
	# Hard lifetime 1 s, removals 100 ms later: the 5 bindings come and go.
	start_cps a 7 --hard 1s --drain-timeout 100ms
	wait_for 50 grep -q "owner of $P" "$W/a.err"
	start_cps b 8 --hard 1s --drain-timeout 100ms
	wait_for 50 grep -q "standby:" "$W/b.err"
	gen_reps 5 1 | enc >&7
	wait_for 50 etcd_has 5
	# Their removes folded: bucket 0's chunk holds none, the log is
	# empty, and no key is left per binding.
	folded_away() { [ "$(etcd_keys)" = "chunks 1 log 0 old 0 other 2" ]; }
	wait_for 50 etcd_has 0
	wait_for 50 folded_away
	gen_reps 1 6 | enc >&7
	wait_for 50 grep -q "txn=6 id=6 .*-> ACTIVE" "$W/a.err"
	# Binding 6 in its chunk before the owner dies.
	wait_for 50 etcd_has 1
	kill -9 "$pid_a"
	wait_for 60 grep -q "owner of $P" "$W/b.err"
	grep -q "restored [01] bindings from etcd" "$W/b.err"
}

@test "ha: 3,000 bindings folded into chunks (a key per 256 ids, not per binding); kill -9 of the owner: the standby restores every one" {
	start_cps a 7
	wait_for 50 grep -q "owner of $P" "$W/a.err"
	start_cps b 8
	wait_for 50 grep -q "standby: cps@.* owns $P" "$W/b.err"
	gen_reps 3000 1 | enc >&7
	wait_for 200 etcd_has 3000
	# Ids 1..3000: 12 ranges of 256 ids, a chunk each; the log folded;
	# the owner key and the next id beside them.
	all_folded() { [ "$(etcd_keys)" = "chunks 12 log 0 old 0 other 2" ]; }
	wait_for 100 all_folded
	diff <(etcd_chunked | jq -r .id) <(seq 1 3000)
	kill -9 "$pid_a"
	wait_for 60 grep -q "owner of $P" "$W/b.err"
	grep -q "restored 3000 bindings from etcd" "$W/b.err"
	# Every one of them re-sent to a forwarder by the new owner.
	wait_for 50 test -S "$W/sock"
	bind_fwdsim -c "unix:$W/sock" -n IF-1 -e 2 -t 10 -x 3001 >"$W/f2"
	diff <(jq -r 'select(.type == "binding") | .id' "$W/f2" | sort -n) \
	    <(seq 1 3000)
}

@test "ha: a store of an older cats-bind (a key per binding, b/ID) restores, and the new owner folds it into chunks" {
	start_cps a 7
	wait_for 50 grep -q "owner of $P" "$W/a.err"
	gen_reps 300 1 | enc >&7
	two_chunks() { [ "$(etcd_keys)" = "chunks 2 log 0 old 0 other 2" ]; }
	wait_for 100 two_chunks
	[ "$(etcd_bindings)" -eq 300 ]
	kill -9 "$pid_a"
	# The same 300 bindings as the older layout held them, then no chunk.
	etcd_json | python3 "$TOP/tests/tools/ha_chunks.py" "$P" to-old "$ETCD"
	etcd_keys | grep -q "^chunks 0 log 0 old 300 "
	start_cps b 8
	wait_for 60 grep -q "owner of $P" "$W/b.err"
	grep -q "restored 300 bindings from etcd" "$W/b.err"
	# Folded into chunks by its first fold, the old keys deleted.
	wait_for 100 two_chunks
	diff <(etcd_chunked | jq -r .id) <(seq 1 300)
}

# A cats-cps instance NAME (a or b): its own selector socket, the shared
# binding socket (SVC_BIND=bind-NAME: one of its own), the binding stage on
# etcd (commit SVC_COMMIT, none by default); control input on a fifo;
# cats-cps options after NAME.
start_service() {
	local n=$1
	[ -f "$W/nst.jsonl" ] || sh "$TOP/examples/nst-from-tedb.sh" \
	    "$TOP/examples/topology.json" IF-1 EF-1 EF-2 >"$W/nst.jsonl"
	cat >"$W/$n.conf" <<CONF
id = cps-$n
stats-to = file:$W/$n.stats
[select]
no-auth =
services = $TOP/examples/services.jsonl
net = $W/nst.jsonl
listen = unix:$W/select-$n.sock
state = $W/select-$n.state
[pce]
t = $TOP/examples/topology.json
[bind]
commit = ${SVC_COMMIT:-none}
listen = unix:$W/${SVC_BIND:-bind}.sock
etcd = $ETCD
etcd-prefix = $P
CONF
	mkfifo "$W/$n.ctl"
	shift
	cats-cps -c "$W/$n.conf" "$@" <"$W/$n.ctl" >"$W/$n.out" 2>"$W/$n.err" &
	PIDS="$PIDS $!"
	eval "cps_$n=$!"
}

# A forwarder's request for S1, transaction $2, to instance $1's selector.
request() { s1_request "unix:$W/select-$1.sock" "$2" >/dev/null; }

bound_by() {
	cats-cbor decode "$W/$1.out" 2>/dev/null |
	    jq -e "select(.type == \"binding\" and .txn == $2)" >/dev/null
}

# cps-a the owner, cps-b its --standby on etcd (every stage runs, the
# election decides), the agents advertising to both (fds 7 and 8), and
# request 1 bound by the owner.
start_owner_and_standby() {
	start_service a
	exec 7>"$W/a.ctl"
	wait_for 50 grep -q "owner of $P" "$W/a.err"
	start_service b --standby
	exec 8>"$W/b.ctl"
	wait_for 50 grep -q "standby: .* owns $P" "$W/b.err"
	s1_metric >&7
	s1_metric >&8
	wait_for 50 test -S "$W/select-a.sock"
	wait_for 50 test -S "$W/select-b.sock"
	request a 1
	wait_for 50 bound_by a 1
}

@test "ha: two cats-cps on etcd, one --standby: the owner's parent killed, the other's binding stage takes over with every binding" {
	start_owner_and_standby
	grep -q "serving as cps-b (etcd elects the owner)" "$W/b.err"
	e1=$(epoch_of "$W/a.err")
	# The owner's parent dies: its binding stage leaves (SIGTERM) and
	# hands over at once.
	kill -9 "$cps_a"
	wait_for 50 grep -q "owner of $P" "$W/b.err"
	# Told by its watch, not a poll.
	grep -q "standby: the owner key of $P went (watch)" "$W/b.err"
	grep -q "restored 1 bindings from etcd" "$W/b.err"
	e2=$(epoch_of "$W/b.err")
	[ "$e2" -gt "$e1" ]
	# New flows bind on the other instance, under its epoch.
	request b 2
	wait_for 50 bound_by b 2
	cats-cbor decode "$W/b.out" | jq -e "select(.type == \"binding\" and
	    .txn == 2) | .epoch == $e2 and .id == 2"
}

# The pending requests (path-reqs) in the log entries under $P (l/SEQ),
# their records inflated (lib/ha/ha_log.h).
# etcd_count TEXT: how many times TEXT is in those records.
etcd_count() {
	ETCDCTL_API=3 etcdctl --endpoints "$ETCD" get --prefix "${P}l/" -w json |
	    python3 -c 'import base64, json, sys, zlib
n = 0
for kv in json.load(sys.stdin).get("kvs", []):
    v = base64.b64decode(kv["value"])
    raw = int.from_bytes(v[30:38], "big")
    recs = zlib.decompress(v[43:]) if raw else v[38:]
    n += recs.count(sys.argv[1].encode())
print(n)' "$1"
}
etcd_pending() { etcd_count path-req; }
pending_in_etcd() { [ "$(etcd_pending)" -ge 1 ]; }

@test "ha: a request pending when the owner dies (its cats-pce stopped) is replicated, taken again by the standby, asked of its PCE and bound" {
	start_owner_and_standby
	# The owner's PCE stops: the next request waits inside the owner.
	pce_a=$(pgrep -P "$cps_a" -f cats-pce)
	[ -n "$pce_a" ]
	PIDS="$PIDS $pce_a"
	kill -STOP "$pce_a"
	jq -nc --argjson now "$(date +%s%3N)" '{type: "request", txn: 2,
	    ingress: "IF-1", ts: $now, gen: 1, flow: {proto: 6, src:
	    "192.0.2.10", sport: 40002, dst: "203.0.113.100", dport: 80}, mode:
	    "none", held: 1, dataplane: "srv6", deadline: ($now + 30000)}' |
	    select_client -t "unix:$W/select-a.sock" -w 50 >/dev/null
	# Replicated while it waits: its path-req in the log in etcd.
	wait_for 100 pending_in_etcd
	! bound_by a 2 || false
	kill -9 "$cps_a"
	wait_for 50 grep -q "owner of $P" "$W/b.err"
	# The standby takes it again and asks its own PCE: bound there.
	wait_for 100 bound_by b 2
	grep -q "etcd: 1 pending requests of the last owner taken again (1 asked of the PCE again)" "$W/b.err"
	cats-cbor decode "$W/b.out" | jq -e 'select(.type == "binding" and
	    .txn == 2) | .op == "install"'
	# Counted by the binding stage (its stats record, through the parent).
	reasked() {
		kill -USR1 "$cps_b"
		cats-cbor decode "$W/b.stats" 2>/dev/null | tail -1 |
		    jq -e '.counters["bind.pending.reasked"] == 1' >/dev/null
	}
	wait_for 50 reasked
	# Nothing of it is left pending in etcd once it is bound.
	no_pending() { [ "$(etcd_pending)" -eq 0 ]; }
	wait_for 100 no_pending
}

@test "ha: a replicated request whose path fails (no-path) leaves its end in the log: the next owner does not ask its path again" {
	start_cps a 7
	wait_for 50 grep -q "owner of $P" "$W/a.err"
	local ts common
	ts=$(date +%s%3N)
	common='"txn":5,"ts":'$ts',"headend":"IF-1","endpoint":"EF-2","ingress":"IF-1","dataplane":"srv6","decision":{"cs_id":"S1","csci_id":"B","locator":"198.51.100.21","egress":"EF-2","ts":'$ts',"cst_gen":5,"nst_gen":6},"flow":{"proto":6,"src":"10.0.0.5","sport":1029,"dst":"192.0.2.100","dport":443},"deadline":'$((ts + 600000))
	# Its path asked, and replicated while it waits (deadline 10 min).
	echo '{"type":"path-req",'"$common"'}' | enc >&7
	wait_for 100 pending_in_etcd
	# Its path fails long before its deadline: its end is written too.
	echo '{"type":"path-rep","status":"no-path","reason":"no-route",'"$common"'}' | enc >&7
	ended() { [ "$(etcd_count no-path)" -ge 1 ]; }
	wait_for 100 ended
	grep -q "txn=5 .*DESTINATION_SELECTED -> FAILED (no-path)" "$W/a.err"
	kill -9 "$pid_a"
	start_cps b 8
	wait_for 100 grep -q "owner of $P" "$W/b.err"
	# b is on its loop (its first turn, which takes the last owner's
	# pending requests again, is over): a new binding of its own.
	gen_reps 1 10 | enc >&8
	wait_for 50 out_bindings_are "$W/b.out" 1
	# The failed request is not asked again.
	! grep -q "pending requests of the last owner taken again" "$W/b.err"
	run sh -c "cats-cbor decode <'$W/b.out' | jq -c 'select(.type == \"path-req\")'"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "ha: three etcd members: the leader killed, the owner goes on; quorum lost, it stops at its renew deadline" {
	local d="$W/cluster" i urls="" peers="" cps=() pps=()
	for i in 1 2 3; do
		cps[$i]=$(free_port)
		pps[$i]=$(free_port)
		peers="$peers${peers:+,}m$i=http://127.0.0.1:${pps[$i]}"
		urls="$urls${urls:+,}http://127.0.0.1:${cps[$i]}"
	done
	# Elections well inside the renew deadline (1.5 s of a 2 s lease).
	for i in 1 2 3; do
		etcd --name "m$i" --data-dir "$d/m$i" \
		    --heartbeat-interval 50 --election-timeout 300 \
		    --listen-client-urls "http://127.0.0.1:${cps[$i]}" \
		    --advertise-client-urls "http://127.0.0.1:${cps[$i]}" \
		    --listen-peer-urls "http://127.0.0.1:${pps[$i]}" \
		    --initial-advertise-peer-urls "http://127.0.0.1:${pps[$i]}" \
		    --initial-cluster "$peers" --initial-cluster-state new \
		    >"$W/m$i.log" 2>&1 &
		eval "m$i=$!"
		PIDS="$PIDS $!"
	done
	for i in 1 2 3; do
		wait_for 100 curl -sf -m 1 "http://127.0.0.1:${cps[$i]}/health"
	done
	mkfifo "$W/a.in"
	cats-bind --etcd "$urls" --etcd-prefix "$P" --commit none \
	    <"$W/a.in" >"$W/a.out" 2>"$W/a.err" &
	pid_a=$!
	PIDS="$PIDS $!"
	exec 7>"$W/a.in"
	wait_for 50 grep -q "owner of $P" "$W/a.err"
	gen_reps 3 1 | enc >&7
	wait_for 50 out_bindings_are "$W/a.out" 3
	# The leader goes: the two others elect one, the lease lives on
	# (etcd extends leases across a leader change), the owner writes on.
	leader_port() {
		ETCDCTL_API=3 etcdctl --endpoints "$urls" endpoint status -w json \
		    2>/dev/null | python3 -c 'import json, sys
for e in json.load(sys.stdin):
    if e["Status"]["header"]["member_id"] == e["Status"]["leader"]:
        print(e["Endpoint"].rsplit(":", 1)[1])'
	}
	l=$(leader_port)
	for i in 1 2 3; do
		[ "${cps[$i]}" = "$l" ] && { eval "kill -9 \$m$i"; gone=$i; }
	done
	[ -n "$gone" ]
	gen_reps 3 4 | enc >&7
	wait_for 80 out_bindings_are "$W/a.out" 6 || { grep -v "txn=" "$W/a.err"; false; }
	kill -0 "$pid_a"
	! grep -q "renew deadline passed" "$W/a.err" || false
	# One more goes: no quorum.  The owner stops before its lease could
	# run out, having sent nothing etcd does not hold.
	for i in 1 2 3; do
		[ "$i" != "$gone" ] && { eval "kill -9 \$m$i"; break; }
	done
	st=0
	wait "$pid_a" || st=$?
	[ "$st" -eq 1 ]
	grep -q "renew deadline passed" "$W/a.err"
	[ "$(cats-cbor decode <"$W/a.out" | jq -c 'select(.type == "binding")' | wc -l)" -eq 6 ]
}

# A real cats-fwd IF-1 in a namespace of its own (a TUN device for its
# ports; the control channels are unix sockets, reachable from any
# namespace), given the endpoints of both instances: --bind "$@" (or, with
# FWD_ARGS set, those options as they are, and --service S1); FWD_NS, a
# command run in the namespace before it starts.
start_fwd() {
	need_root
	[ -c /dev/net/tun ] || skip "no /dev/net/tun"
	NSF=hafwd$$
	ip netns add "$NSF"
	ip netns exec "$NSF" ip link set lo up
	[ -z "${FWD_NS:-}" ] || ip netns exec "$NSF" sh -c "$FWD_NS"
	local b=()
	if [ -n "${FWD_ARGS:-}" ]; then
		b=("$@" --service S1=203.0.113.100)
	else
		for e in "$@"; do b+=(--bind "$e"); done
	fi
	ip netns exec "$NSF" cats-fwd --id IF-1 --client tun:hf0 --core tun:hf0 \
	    --src6 2001:db8:1::1 --sid 2001:db8:1::1 --src4 192.0.2.1 \
	    "${b[@]}" --stats "file:$W/fwd.stats" \
	    >"$W/fwd.out" 2>"$W/fwd.err" &
	pid_f=$!
	PIDS="$PIDS $!"
}

# A new TCP flow from the forwarder's namespace to S1's address (a SYN
# routed into the TUN device: a miss, a request), source port $1.
new_flow() {
	ip netns exec "$NSF" python3 -c 'import socket, sys
s = socket.socket(); s.setblocking(False)
s.bind(("192.0.2.10", int(sys.argv[1])))
try: s.connect(("203.0.113.100", 80))
except BlockingIOError: pass' "$1"
}

stop_fwd() {
	[ -n "${pid_f:-}" ] && kill -9 "$pid_f" 2>/dev/null
	[ -n "${NSF:-}" ] && ip netns del "$NSF" 2>/dev/null
	true
}

# Counter NAME of the forwarder, from a fresh stats dump (SIGUSR1).
fwd_counter() { stats_counter "$pid_f" "$W/fwd.stats" "$1"; }
fwd_counter_is() { [ "$(fwd_counter "$1")" "$2" "$3" ]; }

# Two instances with endpoints of their own: unix:$W/a.sock, unix:$W/b.sock.
start_pair() {
	CPS_LISTEN="unix:$W/a.sock" start_cps a 7 "$@"
	wait_for 50 grep -q "owner of $P" "$W/a.err"
	CPS_LISTEN="unix:$W/b.sock" start_cps b 8 "$@"
	wait_for 50 grep -q "standby: .* owns $P" "$W/b.err"
	# The standby opens nothing: no socket of its own.
	[ ! -e "$W/b.sock" ]
}

@test "ha: a real cats-fwd given both endpoints: kill -9 of the owner, it is on the new owner and installs its new bindings" {
	# The ingress's install commits a binding: cats-bind sends it there.
	start_pair --commit ingress
	start_fwd "unix:$W/a.sock" "unix:$W/b.sock"
	wait_for 50 grep -q "connected to unix:$W/a.sock" "$W/fwd.err"
	wait_for 50 grep -q "forwarding" "$W/fwd.err"
	gen_reps 5 1 | enc >&7
	wait_for 50 fwd_counter_is bindings_installed -eq 5
	e1=$(epoch_of "$W/a.err")
	t0=$(date +%s%3N)
	kill -9 "$pid_a"
	wait_for 60 grep -q "owner of $P" "$W/b.err"
	t1=$(date +%s%3N)
	wait_for 50 grep -q "connected to unix:$W/b.sock" "$W/fwd.err"
	t2=$(date +%s%3N)
	echo "# kill -9 -> new owner $((t1 - t0)) ms -> forwarder on it $((t2 - t0)) ms" >&3
	e2=$(epoch_of "$W/b.err")
	[ "$e2" -gt "$e1" ]
	# Re-synced: the 5 again under the new epoch (refreshed), none lost.
	wait_for 50 fwd_counter_is bindings_refreshed -ge 5
	[ "$(fwd_counter bindings_removed)" -eq 0 ]
	# New flows get bindings from the new owner, installed.
	gen_reps 5 6 | enc >&8
	wait_for 50 fwd_counter_is bindings_installed -eq 10
	[ "$(fwd_counter bindings_refused)" -eq 0 ]
	[ "$(fwd_counter ctl_switches)" -eq 1 ]
	stop_fwd
}

@test "ha: the owner frozen (SIGSTOP): a real cats-fwd leaves it at its deadline for the new owner; resumed, it installs nothing; its epoch replayed is refused, fenced" {
	start_pair --commit ingress
	start_fwd "unix:$W/a.sock" "unix:$W/b.sock"
	wait_for 50 grep -q "forwarding" "$W/fwd.err"
	gen_reps 5 1 | enc >&7
	wait_for 50 fwd_counter_is bindings_installed -eq 5
	e1=$(epoch_of "$W/a.err")
	t0=$(date +%s%3N)
	kill -STOP "$pid_a"
	wait_for 60 grep -q "owner of $P" "$W/b.err"
	t1=$(date +%s%3N)
	e2=$(epoch_of "$W/b.err")
	# Its connection stays open, its keepalives stop: the forwarder
	# leaves it at its deadline and is on the new owner while the old
	# one is still frozen.
	wait_for 80 grep -q "connected to unix:$W/b.sock" "$W/fwd.err"
	t2=$(date +%s%3N)
	echo "# SIGSTOP -> new owner $((t1 - t0)) ms -> forwarder on it $((t2 - t0)) ms" >&3
	[ "$(ps -o stat= -p "$pid_a" | cut -c1)" = T ]
	grep -q "bind: unix:$W/a.sock: nothing for [0-9]* ms (deadline 3000 ms): dead" "$W/fwd.err"
	grep -q "audit .*event=ctl-silent channel=bind endpoint=unix:$W/a.sock" "$W/fwd.err"
	wait_for 50 fwd_counter_is bindings_refreshed -ge 5
	# New flows get bindings from the new owner, the old one frozen.
	gen_reps 2 11 | enc >&8
	wait_for 50 fwd_counter_is bindings_installed -eq 7
	# Work for the frozen owner, which then resumes: it stops at its
	# renew deadline, sending nothing; the forwarder stays where it is.
	gen_reps 5 6 | enc >&7
	kill -CONT "$pid_a"
	st=0
	wait "$pid_a" || st=$?
	[ "$st" -eq 1 ]
	[ "$(fwd_counter bindings_installed)" -eq 7 ]
	[ "$(fwd_counter bindings_refused)" -eq 0 ]
	[ "$(fwd_counter ctl_silent)" -ge 1 ]
	[ "$(fwd_counter ctl_switches)" -eq 1 ]
	# An old owner that did not fence itself (a clock that jumped): its
	# records, as it sent them, on its endpoint; the new owner gone, the
	# forwarder reaches it and refuses every one.
	# Then its keepalive, of its epoch: the forwarder leaves it.
	{ cats-cbor decode <"$W/a.out" | jq -c 'select(.type == "binding")'
	  jq -nc --argjson e "$e1" --argjson now "$(date +%s%3N)" '{type:
	    "status", fwd: "IF-1", event: "keepalive", ts: $now, epoch: $e}'
	} | enc >"$W/stale.cbor"
	[ "$(cats-cbor decode <"$W/stale.cbor" | jq -c "select(.epoch == $e1)" |
	    wc -l)" -eq 6 ]
	python3 -c 'import os, socket, sys, time
p, f = sys.argv[1], sys.argv[2]
if os.path.exists(p): os.unlink(p)
s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(1)
c, _ = s.accept(); c.sendall(open(f, "rb").read()); time.sleep(30)' \
	    "$W/a.sock" "$W/stale.cbor" &
	PIDS="$PIDS $!"
	wait_for 50 test -S "$W/a.sock"
	kill -9 "$pid_b"
	wait_for 50 fwd_counter_is bindings_refused -eq 5
	[ "$(grep -c "refused: fenced" "$W/fwd.err")" -eq 5 ]
	[ "$(grep -c "audit .*event=fenced binding=.*epoch=$e1 highest=$e2" "$W/fwd.err")" -eq 5 ]
	wait_for 50 fwd_counter_is ctl_fenced -eq 1
	grep -q "audit .*event=fenced channel=bind endpoint=unix:$W/a.sock epoch=$e1 highest=$e2" "$W/fwd.err"
	[ "$(fwd_counter bindings_installed)" -eq 7 ]
	# a -> b -> a: two moves.
	[ "$(fwd_counter ctl_switches)" -eq 2 ]
	stop_fwd
}

# Two cats-cps (a: owner, b: standby), each with a selector and a binding
# socket of its own, and a real cats-fwd on both; with CUT_CG set, a (its
# parent and stages) runs in that cgroup v2 group; cats-fwd options after.
start_two() {
	[ -z "${CUT_CG:-}" ] || echo $$ >"$CUT_CG/cgroup.procs"
	SVC_BIND=bind-a SVC_COMMIT=ingress start_service a
	[ -z "${CUT_CG:-}" ] || echo $$ >"${CUT_CG%/*}/cgroup.procs"
	exec 7>"$W/a.ctl"
	wait_for 50 grep -q "owner of $P" "$W/a.err"
	SVC_BIND=bind-b SVC_COMMIT=ingress start_service b
	exec 8>"$W/b.ctl"
	wait_for 50 grep -q "standby: .* owns $P" "$W/b.err"
	s1_metric >&7
	s1_metric >&8
	wait_for 50 test -S "$W/select-a.sock"
	wait_for 50 test -S "$W/select-b.sock"
	FWD_ARGS=1 start_fwd --select "unix:$W/select-a.sock" \
	    --select "unix:$W/select-b.sock" --bind "unix:$W/bind-a.sock" \
	    --bind "unix:$W/bind-b.sock" "$@"
	wait_for 50 grep -q "forwarding" "$W/fwd.err"
	ip netns exec "$NSF" ip addr add 192.0.2.10/32 dev lo
	ip netns exec "$NSF" ip route add 203.0.113.0/24 dev hf0 src 192.0.2.10
}

stage_pid() { sed -n "s/.*stage $2 started (pid \([0-9]*\)).*/\1/p" "$W/$1.err" | tail -1; }

@test "ha: two cats-cps, a real cats-fwd on both: the owner's binding stage frozen, both channels move to the new owner (select follows bind), the request pending at the ingress is sent again and bound there, and new flows too" {
	# A pending deadline longer than the failover: a request left
	# unanswered would wait for it.
	start_two --pending-timeout 20000
	# A new flow: its request to instance a's selector, bound by a.
	new_flow 41001
	wait_for 50 fwd_counter_is bindings_installed -eq 1
	# Only the owner's binding stage freezes; its selector lives on
	# (and keeps its keepalives coming).
	bind_a=$(stage_pid a bind)
	[ -n "$bind_a" ]
	kill -STOP "$bind_a"
	PIDS="$PIDS $bind_a"
	# A flow whose request a's selector takes but whose binding never
	# comes: pending at the ingress.
	new_flow 41004
	wait_for 50 fwd_counter_is requests -eq 2
	wait_for 60 grep -q "owner of $P" "$W/b.err"
	wait_for 80 grep -q "bind: connected to unix:$W/bind-b.sock" "$W/fwd.err"
	wait_for 50 grep -q "select: following bind to unix:$W/select-b.sock" "$W/fwd.err"
	grep -q "event=ctl-silent channel=bind endpoint=unix:$W/bind-a.sock" "$W/fwd.err"
	[ "$(grep -c "event=ctl-silent channel=select" "$W/fwd.err")" -eq 0 ]
	wait_for 50 fwd_counter_is bindings_refreshed -ge 1
	# The select channel moved: the pending request went again, to b,
	# and b bound it, long before its deadline.
	wait_for 50 fwd_counter_is bindings_installed -eq 2
	[ "$(fwd_counter requests_resent)" -ge 1 ]
	[ "$(fwd_counter drop_pending_timeout)" -eq 0 ]
	cats-cbor decode "$W/b.out" | jq -e 'select(.type == "binding" and
	    .fwd.match.sport == 41004)' >/dev/null
	# A new flow: to instance b's selector, bound by b's binding stage.
	new_flow 41002
	wait_for 50 fwd_counter_is bindings_installed -eq 3
	cats-cbor decode "$W/b.out" | jq -e 'select(.type == "binding" and
	    .fwd.match.sport == 41002)' >/dev/null
	# The old binding stage resumed: it stops at its renew deadline (its
	# parent starts it again as a standby); the forwarder stays on b.
	kill -CONT "$bind_a"
	wait_for 50 grep -q "renew deadline passed" "$W/a.err"
	new_flow 41003
	wait_for 50 fwd_counter_is bindings_installed -eq 4
	[ "$(fwd_counter bindings_refused)" -eq 0 ]
	# bind a -> b, select a -> b.
	[ "$(fwd_counter ctl_switches)" -eq 2 ]
	stop_fwd
}

@test "ha: a real cats-fwd: an endpoint whose connect is never answered (a partition) does not hold it: given up after 2 s, the next one used" {
	mkfifo "$W/c.in"
	cats-bind --commit none --listen "unix:$W/c.sock" <"$W/c.in" \
	    >"$W/c.out" 2>"$W/c.err" &
	PIDS="$PIDS $!"
	exec 7>"$W/c.in"
	wait_for 50 test -S "$W/c.sock"
	# 10.9.9.2 is behind a veth pair of the namespace whose other end has
	# no address: its SYNs go nowhere.  A blocking connect would hold the
	# forwarder for the kernel's SYN retries (two minutes).
	FWD_NS="ip link add hv0 type veth peer name hv1 &&
	    ip addr add 10.9.9.1/24 dev hv0 && ip link set hv0 up &&
	    ip link set hv1 up &&
	    ip neigh add 10.9.9.2 lladdr 02:00:00:00:00:01 dev hv0" \
	    FWD_ARGS=1 start_fwd --bind tcp:10.9.9.2:7 \
	    --bind "unix:$W/c.sock"
	wait_for 80 grep -q "bind: connected to unix:$W/c.sock" "$W/fwd.err"
	grep -q "bind: tcp:10.9.9.2:7: no answer to the connect in 2000 ms (retrying the next endpoint)" "$W/fwd.err"
	wait_for 50 grep -q "bindings fetched again; forwarding" "$W/fwd.err"
	stop_fwd
}


@test "ha: a real cats-fwd: a unix: C-PS listener whose backlog is full (it accepts nothing) holds nothing: the other channel is served, stats answered, one warning; it connects once the listener accepts" {
	mkfifo "$W/c.in" "$W/full.go"
	cats-bind --commit none --listen "unix:$W/c.sock" <"$W/c.in" \
	    >"$W/c.out" 2>"$W/c.err" &
	PIDS="$PIDS $!"
	exec 7>"$W/c.in"
	wait_for 50 test -S "$W/c.sock"
	# A selector that listens with a backlog of 0 and has filled it
	# itself: a blocking connect would wait there until it accepts.
	python3 -c 'import socket, sys
p = sys.argv[1]
l = socket.socket(socket.AF_UNIX); l.bind(p); l.listen(0)
fill = []
while True:
    c = socket.socket(socket.AF_UNIX); c.setblocking(False)
    try: c.connect(p)
    except BlockingIOError: break
    fill.append(c)
print("full", len(fill), flush=True)
open(sys.argv[2]).read()
# Room again: the fillers leave (EOF, nothing sent); the first connection
# that sends something is the forwarder.
for c in fill: c.close()
while True:
    a, _ = l.accept()
    b = a.recv(4096)
    if b:
        print("forwarder connected, sent", len(b), flush=True)
        fill.append(a)
        open(sys.argv[2]).read()
        break' "$W/full.sock" "$W/full.go" >"$W/full.out" 2>&1 &
	PIDS="$PIDS $!"
	wait_for 50 grep -q "^full [1-9]" "$W/full.out"
	FWD_ARGS=1 start_fwd --select "unix:$W/full.sock" --bind "unix:$W/c.sock"
	wait_for 80 grep -q "forwarding" "$W/fwd.err"
	wait_for 50 grep -q "select: unix:$W/full.sock: Resource temporarily unavailable (its listener's backlog is full) (retrying)" "$W/fwd.err"
	# The bind channel is served and the stats answered meanwhile.
	wait_for 50 grep -q "bindings fetched again; forwarding" "$W/fwd.err"
	[ "$(fwd_counter ctl_bad)" -eq 0 ]
	# The retries (100 ms growing to 1 s apart) go on, counted, said once.
	wait_for 80 fwd_counter_is ctl_connect_fail -ge 3
	[ "$(grep -c "backlog is full" "$W/fwd.err")" -eq 1 ]
	! grep -q "forwarder connected" "$W/full.out" || false
	# The listener accepts again: the forwarder connects and says hello.
	echo go >"$W/full.go"
	wait_for 80 grep -q "forwarder connected, sent [1-9]" "$W/full.out"
	kill -0 "$pid_f"
	echo go >"$W/full.go"
	stop_fwd
}

@test "ha: both cats-cps killed at once (parents and binding stages, kill -9) and started again: the state in etcd restores every established flow, none removed at the forwarder" {
	start_two
	for p in 42001 42002 42003; do new_flow "$p"; done
	wait_for 50 fwd_counter_is bindings_installed -eq 3
	e1=$(epoch_of "$W/a.err")
	# The whole C-PS goes down at once, its owner's lease left to expire.
	kill -9 "$(stage_pid a bind)" "$(stage_pid b bind)" "$cps_a" "$cps_b"
	exec 7>&- 8>&-
	rm -f "$W/a.ctl" "$W/b.ctl" "$W"/bind-?.sock
	mv "$W/a.err" "$W/a1.err"
	mv "$W/b.err" "$W/b1.err"
	SVC_BIND=bind-a SVC_COMMIT=ingress start_service a
	exec 7>"$W/a.ctl"
	SVC_BIND=bind-b SVC_COMMIT=ingress start_service b
	exec 8>"$W/b.ctl"
	s1_metric >&7
	s1_metric >&8
	wait_for 80 grep -q "owner of $P" "$W/a.err" "$W/b.err"
	w=$(grep -l "owner of $P" "$W/a.err" "$W/b.err")
	grep -q "restored 3 bindings from etcd" "$w"
	[ "$(epoch_of "$w")" -gt "$e1" ]
	# The forwarder on the new owner, re-synced: the three flows sent
	# again under the new epoch, none removed or refused.
	wait_for 80 fwd_counter_is bindings_refreshed -ge 3
	[ "$(fwd_counter bindings_removed)" -eq 0 ]
	[ "$(fwd_counter bindings_refused)" -eq 0 ]
	[ "$(fwd_counter bindings)" -eq 3 ]
	# And a new flow is bound.
	new_flow 42004
	wait_for 50 fwd_counter_is bindings_installed -eq 4
	stop_fwd
}

@test "ha: the owner cut from etcd by nftables (its cgroup's packets to etcd's port dropped) while it still reaches the forwarder: it stops at its renew deadline, before its lease ends; the standby takes over and binds the new flows" {
	need_root
	[ -d /sys/fs/cgroup/unified ] || skip "no cgroup2 at /sys/fs/cgroup/unified"
	command -v nft >/dev/null || skip "no nft"
	CG=hacut$$
	NFT=hacut$$
	CUT_CG=/sys/fs/cgroup/unified/$CG
	mkdir "$CUT_CG"
	# Instance a and its stages in the cgroup.
	start_two
	new_flow 43001
	wait_for 50 fwd_counter_is bindings_installed -eq 1
	grep -q "^0::/$CG\$" "/proc/$(stage_pid a bind)/cgroup"
	[ "$(grep -c "^0::/$CG\$" "/proc/$(stage_pid b bind)/cgroup")" -eq 0 ]
	nft add table inet "$NFT"
	nft add chain inet "$NFT" out '{ type filter hook output priority 0; }'
	nft add rule inet "$NFT" out tcp dport "${ETCD##*:}" \
	    socket cgroupv2 level 1 "unified/$CG" counter drop
	# Its keepalives get no answer: it stops acting at its renew deadline
	# (1.5 s), while its lease (2 s) still holds b off.
	wait_for 50 grep -q "renew deadline passed" "$W/a.err"
	[ "$(grep -c "owner of $P" "$W/b.err")" -eq 0 ]
	wait_for 60 grep -q "owner of $P" "$W/b.err"
	# The forwarder moves (the old binding stage left), is re-synced, and
	# new flows are bound by b.
	wait_for 80 grep -q "bind: connected to unix:$W/bind-b.sock" "$W/fwd.err"
	wait_for 50 fwd_counter_is bindings_refreshed -ge 1
	new_flow 43002
	wait_for 50 fwd_counter_is bindings_installed -eq 2
	cats-cbor decode "$W/b.out" | jq -e 'select(.type == "binding" and
	    .fwd.match.sport == 43002)' >/dev/null
	[ "$(fwd_counter bindings_refused)" -eq 0 ]
	# The cut was real: packets of its cgroup to etcd dropped.
	nft list table inet "$NFT" | grep -q "counter packets [1-9]"
	# a, still cut off, waits as a standby.
	wait_for 50 grep -q "etcd: .*retrying" "$W/a.err"
	stop_fwd
}
