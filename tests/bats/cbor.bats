#!/usr/bin/env bats
# cats-cbor: decode, encode, check, schema; bad input never stops a stream.

load helper

setup() { T=$(mktemp -d); }
teardown() { rm -rf "$T"; }

@test "cbor: encode | decode gives back the same JSON for every record type" {
	cats-cbor encode "$TOP/examples/records.jsonl" > "$T/r.cbor"
	cats-cbor decode "$T/r.cbor" > "$T/r.jsonl"
	diff <(jq -cS . "$TOP/examples/records.jsonl") <(jq -cS . "$T/r.jsonl")
	n=$(jq -r .type "$TOP/examples/records.jsonl" | sort -u | wc -l)
	[ "$n" -eq 14 ]
}

@test "cbor: works as a filter on pipes" {
	run bash -c "cat '$TOP/examples/records.jsonl' | cats-cbor encode | cats-cbor decode | jq -r .type | head -1"
	[ "$status" -eq 0 ]
	[ "$output" = "sci-report" ]
}

@test "cbor: check accepts the examples, CBOR and JSON" {
	cats-cbor encode "$TOP/examples/records.jsonl" | cats-cbor check -q
	cats-cbor check -jq "$TOP/examples/records.jsonl"
}

@test "cbor: check names record, field and reason, and goes on" {
	cats-cbor encode "$DATA/cbor/bad.jsonl" > "$T/bad.cbor"
	run cats-cbor check "$T/bad.cbor"
	[ "$status" -eq 65 ]
	diff <(echo "$output") "$DATA/cbor/bad.expected"
}

@test "cbor: check --strict stops at the first bad record" {
	cats-cbor encode "$DATA/cbor/bad.jsonl" > "$T/bad.cbor"
	run cats-cbor check --strict "$T/bad.cbor"
	[ "$status" -eq 65 ]
	[[ "$output" == *"2 records, 1 valid, 1 invalid"* ]]
}

@test "cbor: check --type insists on one record type" {
	run bash -c "cats-cbor encode '$TOP/examples/records.jsonl' | cats-cbor check -q -t metric"
	[ "$status" -eq 65 ]
	[[ "$output" == *"record 0: type: is sci-report, expected metric"* ]]
}

@test "cbor: byte strings are {\"\$bytes\": base64url} both ways" {
	printf '\x43\x01\x02\xff' > "$T/b.cbor"
	run cats-cbor decode "$T/b.cbor"
	[ "$output" = '{"$bytes":"AQL_"}' ]
	run bash -c "echo '{\"\$bytes\":\"AQL_\"}' | cats-cbor encode | od -An -tx1"
	[ "$(echo $output)" = "43 01 02 ff" ]
}

@test "cbor: malformed items get one line each and the stream goes on" {
	{ echo '{"type":"error","code":"a"}' | cats-cbor encode
	  printf '\x1c\xff'
	  echo '{"type":"error","code":"b"}' | cats-cbor encode
	  printf '\x9a\x10\x00\x00\x00'
	  echo '{"type":"error","code":"c"}' | cats-cbor encode; } > "$T/mixed.cbor"
	run cats-cbor decode "$T/mixed.cbor"
	[ "$status" -eq 65 ]
	[[ "$output" == *"record 1: reserved additional information 28 at offset 0"* ]]
	[[ "$output" == *"record 3: array of 268435456 elements exceeds the limit of 4096"* ]]
	[ "$(echo "$output" | grep -c '"code"')" -eq 3 ]
}

@test "cbor: bombs and deep nesting are refused without a big allocation" {
	ulimit -v 262144
	printf '\x9b\x00\x00\x00\x01\x00\x00\x00\x00' > "$T/bomb"
	run cats-cbor decode "$T/bomb"
	[ "$status" -eq 65 ]
	[[ "$output" == *"exceeds the limit"* ]]
	python3 -c "import sys; sys.stdout.buffer.write(b'\x81'*3000+b'\x00')" > "$T/deep"
	run cats-cbor decode "$T/deep"
	[ "$status" -eq 65 ]
	[[ "$output" == *"nesting deeper than 16"* ]]
	printf '\x5a\x7f\xff\xff\xff' > "$T/str"
	run cats-cbor check "$T/str"
	[ "$status" -eq 65 ]
	[[ "$output" == *"record limit"* || "$output" == *"exceeds"* ]]
}

@test "cbor: --max-record lowers the record cap" {
	echo '{"type":"error","code":"x","msg":"0123456789012345678901234567890123456789"}' |
		cats-cbor encode > "$T/r.cbor"
	run cats-cbor check -m 32 "$T/r.cbor"
	[ "$status" -eq 65 ]
	[[ "$output" == *"32-byte"* ]]
}

@test "cbor: truncated input at the end is reported" {
	echo '{"type":"error","code":"x"}' | cats-cbor encode | head -c 10 > "$T/t.cbor"
	run cats-cbor decode "$T/t.cbor"
	[ "$status" -eq 65 ]
	[[ "$output" == *"record 0: truncated"* || "$output" == *"cannot fit"* || "$output" == *"left"* ]]
}

@test "cbor: encode reports bad JSON lines and goes on" {
	printf '{"a":1}\nnot json\n{"b":{"$bytes":"!!"}}\n{"c":3}\n' > "$T/in.jsonl"
	run cats-cbor encode "$T/in.jsonl"
	[ "$status" -eq 65 ]
	[[ "$output" == *"line 2:"* ]]
	[[ "$output" == *"line 3: \$bytes: not base64url"* ]]
	cats-cbor encode "$T/in.jsonl" 2>/dev/null | cats-cbor decode > "$T/out"
	[ "$(cat "$T/out")" = '{"a":1}
{"c":3}' ]
}

@test "cbor: schema documents every type" {
	run cats-cbor schema
	[ "$status" -eq 0 ]
	for t in sci-report metric sync ack net service request path-req path-rep binding status error stats; do
		[[ "$output" == *"record $t:"* ]]
	done
	run cats-cbor schema nosuch
	[ "$status" -eq 2 ]
}

@test "cbor: cats-records(5) lists exactly the schema (regenerate with man/records.sh)" {
	diff <(sh "$TOP/man/records.sh") \
	     <(sed -n '/^\.\\" BEGIN SCHEMA/,/^\.\\" END SCHEMA/p' "$TOP/man/cats-records.5")
}

@test "cbor: usage errors exit 2; missing input exits 66; --help and --version" {
	run cats-cbor
	[ "$status" -eq 2 ]
	run cats-cbor frob
	[ "$status" -eq 2 ]
	run cats-cbor decode "$T/nope"
	[ "$status" -eq 66 ]
	[[ "$output" == "cats-cbor: $T/nope: No such file or directory" ]]
	run cats-cbor --help
	[ "$status" -eq 0 ]
	[[ "$output" == usage:* ]]
	run cats-cbor --version
	[[ "$output" == "cats-cbor (cats) "* ]]
}

@test "cbor: --help equals the man page SYNOPSIS" {
	check_synopsis cats-cbor
}

# Keep the fifo $1 open at both ends on fd 7 of this shell: what the test
# writes to fd 7 reaches the reader at once, and the input goes idle
# (background readers close fd 7, or they would never see its end).
hold_fifo() {
	mkfifo "$1"
	exec 7<>"$1"
}

@test "cbor: decode and encode write each record of a slow stream at once, not at 4 KiB or the end" {
	hold_fifo "$T/in"
	cats-cbor decode <"$T/in" >"$T/out.jsonl" 3>&- 7>&- &
	pid=$!
	cats-cbor encode "$TOP/examples/records.jsonl" >"$T/r.cbor"
	head -c "$(cats-cbor encode <(head -1 "$TOP/examples/records.jsonl") | wc -c)" "$T/r.cbor" >&7
	# The first record is out while its writer still holds the stream.
	wait_for 50 test -s "$T/out.jsonl"
	[ "$(wc -l <"$T/out.jsonl")" = 1 ]
	kill -0 "$pid"
	exec 7>&-
	wait "$pid"
	# encode alike: one JSON line in, its record out at once.
	hold_fifo "$T/in2"
	cats-cbor encode <"$T/in2" >"$T/out.cbor" 3>&- 7>&- &
	pid=$!
	head -1 "$TOP/examples/records.jsonl" >&7
	wait_for 50 test -s "$T/out.cbor"
	cats-cbor decode "$T/out.cbor" | jq -e 'select(.type == "sci-report")'
	exec 7>&-
	wait "$pid"
}

@test "cbor: SIGTERM and SIGINT write what was decoded, whole lines, then end by the signal" {
	cats-cbor encode "$TOP/examples/records.jsonl" >"$T/r.cbor"
	for i in $(seq 200); do cat "$T/r.cbor"; done >"$T/many.cbor"
	for sig in TERM INT; do
		decode_killed "$T/many.cbor" "$sig" "$T/out.$sig"
		# Every line whole and valid, the last one too.
		jq -e . "$T/out.$sig" >/dev/null
	done
}

@test "cbor: check stopped by SIGTERM or SIGINT says its summary, then ends by the signal" {
	printf '{"type":"metric"}\n' >"$T/bad.jsonl"
	cats-cbor encode "$T/bad.jsonl" >"$T/bad.cbor"
	mkfifo "$T/in"
	for mode in cbor json; do
		for sig in TERM INT; do
			local opt= err=$T/err.$mode.$sig st=0 pid
			[ "$mode" = json ] && opt=-j
			exec 7<>"$T/in"		# the writer stays: no end of input
			env --default-signal=INT cats-cbor check $opt <"$T/in" 2>"$err" 7>&- &
			pid=$!
			cat "$T/bad.$([ "$mode" = json ] && echo jsonl || echo cbor)" >&7
			# Its error line says it read the record; then the signal.
			wait_for 50 grep -q 'record 0:' "$err"
			kill -"$sig" "$pid"
			wait "$pid" || st=$?
			exec 7>&-
			[ "$st" -eq $((128 + $(kill -l "$sig"))) ]
			[ "$(tail -1 "$err")" = "cats-cbor: 1 records, 0 valid, 1 invalid" ]
		done
	done
}
