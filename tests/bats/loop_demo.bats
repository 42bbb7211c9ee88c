#!/usr/bin/env bats
# make demo as a test: the script runs every step, checks each one, and
# leaves nothing behind, also when it is interrupted.

load helper

setup() {
	need_root
}

# Namespaces, processes and directories a demo run with id $1 left.
leftovers() {
	local n
	n=$(ip netns list | grep -c "$1\b\|^rp$1")
	n=$((n + $(ps -eo args | grep -c "[c]ats-loop\.$1\.\|[c]ats-repair\.$1\.")))
	echo "$n"
}

@test "demo: every step behaves as described and nothing is left" {
	run timeout 300 bash "$TOP/examples/demo/demo.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	# The management links over https, mutual TLS (make-certs.sh's).
	[[ "$output" == *"the site agents reach the C-PS over https with mutual TLS (TLS 1."* ]]
	# The forwarders' control channels over tls:, mutual TLS; a revoked
	# certificate refused after a CRL reload (SIGHUP).
	[[ "$output" == *"the forwarders reach cats-select (IF-1) and cats-bind (IF-1, EF-1, EF-2) over tls: with mutual TLS"* ]]
	[[ "$output" == *"reason=\"certificate: certificate revoked"* ]]
	[[ "$output" == *"1. curl to the service address is answered by the best instance"* ]]
	[[ "$output" == *"->  site1-a"* ]]
	[[ "$output" == *"198.51.100.12:80 STALE -> FAILED (no-report-within-grace)"* ]]
	[[ "$output" == *"withdraw 198.51.100.12:80 (reason failed)"* ]]
	[[ "$output" == *"error unknown-cs-id"* ]]
	[[ "$output" == *"repaired: binding 1 version 2 (refresh), same instance 198.51.100.11:80, path IF-1 P1 P3 P2 EF-1"* ]]
	[[ "$output" == *"upload complete: the instance's SHA-256 of the 4 MB is the client's"* ]]
	[[ "$output" == *"nothing left behind"* ]]
	id=$(echo "$output" | sed -n 's/.*namespaces lpc\([0-9]*\) .*/\1/p')
	[ -n "$id" ]
	[ "$(leftovers "$id")" = 0 ]
}

@test "demo: interrupted (SIGINT), it tears everything down" {
	# Ctrl-C in a terminal sends SIGINT to the whole foreground process
	# group (the demo and whatever it waits for), so the demo runs in its
	# own group here and the group gets it.  A background job ignores
	# SIGINT unless told otherwise.
	setsid env --default-signal=INT bash "$TOP/examples/demo/demo.sh" \
		>"$BATS_TEST_TMPDIR/out" 2>&1 &
	pid=$!
	# The start prints a line a step: slow on a loaded machine, stuck
	# only when nothing new comes for 30 s.
	wait_progress 300 "wc -c <'$BATS_TEST_TMPDIR/out'" \
		grep -q "^== 1\." "$BATS_TEST_TMPDIR/out"
	id=$(sed -n 's/.*namespaces lpc\([0-9]*\) .*/\1/p' "$BATS_TEST_TMPDIR/out")
	[ -n "$id" ]
	[ "$(ip netns list | grep -c "$id\b")" = 8 ]
	kill -INT -- -"$pid"
	st=0
	wait "$pid" || st=$?
	cat "$BATS_TEST_TMPDIR/out"
	[ "$st" -eq 130 ]
	grep -q "interrupted" "$BATS_TEST_TMPDIR/out"
	[ "$(leftovers "$id")" = 0 ]
}
