#!/usr/bin/env bats
# Files as an attacker (or a mistake) gives them (issue 20 §1): a FIFO, a
# device or a directory where a key, a configuration, a topology or a
# journal segment is expected is refused at once with one line, never
# opened into a blocking read, never read as empty.
load helper

setup() {
	W="$BATS_TEST_TMPDIR"
	cd "$W"
	mkfifo fifo
	mkdir dir
}

# refused CODE LINE-PART CMD...: CMD exits CODE within 5 s, and says so.
refused() {
	local code=$1 part=$2 rc=0
	shift 2
	timeout 5 "$@" </dev/null >out 2>err || rc=$?
	[ "$rc" -eq "$code" ] || { echo "$* exited $rc, not $code"; cat err; return 1; }
	grep -q -- "$part" err || { cat err; return 1; }
}

@test "surface_files: a FIFO, a device or a directory as a configuration file" {
	refused 78 "fifo: not a regular file (a FIFO)" cats-sma -c fifo -1
	refused 78 "/dev/zero: not a regular file (a character device)" \
	    cats-sma -c /dev/zero -1
	refused 78 "dir: not a regular file (a directory)" cats-sma -c dir -1
}

@test "surface_files: a FIFO or a device as a key or keyring" {
	refused 77 "fifo: not a regular file (a FIFO)" cats-bind --keys fifo
	refused 77 "fifo: not a regular file (a FIFO)" cats-bind --key fifo
	refused 77 "/dev/null: not a regular file (a character device)" \
	    cats-pce -t /dev/null --keys /dev/null
}

@test "surface_files: a FIFO or a device as a topology" {
	refused 78 "fifo: not a regular file (a FIFO)" cats-pce -t fifo
	refused 78 "/dev/zero: not a regular file (a character device)" \
	    cats-pce -t /dev/zero
	refused 78 "fifo: not a regular file (a FIFO)" cats-pce -t fifo --check
}

@test "surface_files: a journal segment or snapshot that is a device or a FIFO" {
	cats-bind --journal j </dev/null >/dev/null
	ls j/journal.* >/dev/null
	# A segment that is /dev/zero is not taken as an empty one.
	rm -f j/journal.*
	ln -s /dev/zero j/journal.0000000000000007
	refused 1 "j/journal.0000000000000007: not a regular file (a character device)" \
	    cats-bind --journal j
	run timeout 5 cats-bind --dump --journal j
	[ "$status" -ne 0 ]
	[[ "$output" == *"not a regular file (a character device)"* ]]
	rm -f j/journal.*
	rm -f j/snapshot
	mkfifo j/snapshot
	refused 1 "j/snapshot: not a regular file (a FIFO)" cats-bind --journal j
	rm -f j/snapshot
	mkfifo j/journal.0000000000000009
	refused 1 "j/journal.0000000000000009: not a regular file (a FIFO)" \
	    cats-bind --journal j
}

@test "surface_files: start-up record files: not regular, lines over the cap, endless bad records" {
	SEL="$DATA/select"
	grep '"type":"service"' "$SEL/base.jsonl" >svc.jsonl
	refused 66 "fifo: not a regular file (a FIFO)" \
	    cats-select --replay --no-auth --services fifo
	# A line over 4 x the record cap is refused before it is parsed; the
	# good records around it are loaded.
	{
		head -1 svc.jsonl
		python3 -c 'print("{\"type\":\"service\",\"x\":\"" + "a" * 300000 + "\"}")'
		tail -n +2 svc.jsonl
	} >long.jsonl
	refused 65 "long.jsonl: record 1: a line over 262144 bytes" \
	    cats-select --replay --no-auth --services long.jsonl
	[ "$(grep -c 'long.jsonl' err)" -eq 1 ]
	# 10,000 bad records: given up after 100, 100 lines and one more.
	python3 -c 'print("{\"type\":\"service\"}\n" * 10000, end="")' >bad.jsonl
	refused 65 "bad.jsonl: given up after 100 bad records" \
	    cats-select --replay --no-auth --services bad.jsonl
	[ "$(wc -l <err)" -le 102 ]
	# The same in CBOR: maps that are no valid record.
	python3 -c 'import sys; sys.stdout.buffer.write(b"\xa1\x64type\x67service" * 10000)' >bad.cbor
	refused 65 "bad.cbor: given up after 100 bad records" \
	    cats-select --replay --no-auth --services bad.cbor
	[ "$(wc -l <err)" -le 102 ]
}
