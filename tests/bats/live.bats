#!/usr/bin/env bats
# Live pipelines: the filters write what a slow stream gave them at once,
# not at 4 KiB or at the end of the input, and a stop signal keeps what was
# decoded (issue 25).

load helper

setup() { T=$(mktemp -d); }
teardown() { rm -rf "$T"; }

# Keep the fifo $1 open at both ends on fd 7 of this shell: what the test
# writes to fd 7 reaches the reader at once and the input then goes idle
# (readers started in the background close fd 7, or they would never see
# the end of their input).
hold_fifo() {
	mkfifo "$1"
	exec 7<>"$1"
}

@test "live: a slow producer's first record comes out of cats-cbor decode before the second is written" {
	head -1 "$TOP/examples/records.jsonl" | enc >"$T/one.cbor"
	sed -n 2p "$TOP/examples/records.jsonl" | enc >"$T/two.cbor"
	# The producer writes the second record only once the test has seen
	# the first one out (the flag), or gives up after 10 s.
	{ cat "$T/one.cbor"; wait_for 100 test -e "$T/flag"; cat "$T/two.cbor"; } |
	    cats-cbor decode >"$T/out" 3>&- &
	pid=$!
	wait_for 50 test -s "$T/out"
	[ ! -e "$T/flag" ]
	[ "$(wc -l <"$T/out")" = 1 ]
	jq -e 'select(.type == "sci-report")' "$T/out"
	touch "$T/flag"
	wait "$pid"
	[ "$(wc -l <"$T/out")" = 2 ]
}

@test "live: SIGTERM and SIGINT to cats-cbor decode keep every record decoded so far, in order, none cut" {
	enc "$TOP/examples/records.jsonl" >"$T/r.cbor"
	for i in $(seq 100); do cat "$T/r.cbor"; done >"$T/many.cbor"
	dec "$T/many.cbor" >"$T/many.jsonl"
	for sig in TERM INT; do
		decode_killed "$T/many.cbor" "$sig" "$T/out.$sig"
		# The output is the decoded stream from its start, cut only
		# between two lines: nothing lost, nothing half-written.
		n=$(wc -l <"$T/out.$sig")
		[ "$n" -gt 0 ]
		while :; do cat "$T/many.jsonl"; done 2>/dev/null | head -n "$n" |
		    cmp - "$T/out.$sig"
	done
}

# The other filters, on a stream held open: each answer is out before the
# input ends (lib/rec/seq.c writes a batch at the end of each turn).
live_filter() {
	local in=$1
	shift
	rm -f "$T/in" "$T/out"
	hold_fifo "$T/in"
	"$@" <"$T/in" >"$T/out" 2>/dev/null 3>&- 7>&- &
	pid=$!
	cat "$in" >&7
	wait_for 50 test -s "$T/out"
	kill -0 "$pid"
	exec 7>&-
	wait "$pid" || true
}

@test "live: cats-select, cats-pce and cats-bind answer a held-open stream before its end" {
	cat "$DATA/select/base.jsonl" "$DATA/select/cases/min-latency.jsonl" |
	    enc >"$T/sel.cbor"
	live_filter "$T/sel.cbor" cats-select --replay --no-auth
	dec "$T/out" | jq -e 'select(.type == "path-req")' >/dev/null
	enc "$DATA/pce/requests.jsonl" >"$T/pce.cbor"
	live_filter "$T/pce.cbor" cats-pce -t "$DATA/pce/lab.json" --replay
	dec "$T/out" | jq -e . >/dev/null
	enc "$DATA/bind/replay.jsonl" >"$T/bind.cbor"
	live_filter "$T/bind.cbor" cats-bind --replay -q
	dec "$T/out" | jq -e . >/dev/null
}
