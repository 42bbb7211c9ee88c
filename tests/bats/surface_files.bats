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
