#!/usr/bin/env bats
# Exit codes and messages that scripts can trust (cats(7) EXIT STATUS):
# every case of tests/data/exit/TOOL.cases is run and must end in its exit
# code with its message on stderr: the first line "TOOL: ..." matching its
# pattern, every line "TOOL: ..." (a stream tool may add a summary, "3 of 9
# records were invalid"), a usage error (2) in exactly one line.
#
# A case is one line of four fields separated by tabs:
#   ARGS  STDIN  EXIT  STDERR
# ARGS is shell text run as "TOOL ARGS" by bash in a directory of fixtures
# (below), so it may redirect (">/dev/full"); STDIN is "-" (/dev/null) or a
# file of that directory (tests/data/exit/NAME, and NAME.cbor for each
# NAME.jsonl there); EXIT the status; STDERR an extended regular
# expression the first line of the message must match ("" when nothing may be
# said).  No arguments is written (none); ARGS starting "@epipe " run the
# tool with stdout a pipe whose reader is gone (EPIPE on the first write).  Lines starting with '#' and empty lines are skipped.  Audit lines
# ("TOOL: audit ...") are a channel of their own and not counted.  Run with
# BUILD=build-san to see the same cases under ASan and UBSan.

load helper

setup_file() {
	FIX=$BATS_FILE_TMPDIR/fix
	mkdir -p "$FIX" && cd "$FIX"
	cats-key gen -n ca -o ca
	cats-key gen -n sci -o sci
	cats-key psk -n p -o p.psk
	cp ca.key open.key && chmod 644 open.key
	cats-key token -k ca.key -c cs1 -s sci1 -o tok.cbor
	printf '{"type":"metric"}\n' >json.jsonl
	printf 'not a key\n' >junk.key && chmod 600 junk.key
	: >empty.keys
	mkdir -p dir
	# The fixtures of tests/data/exit, and each .jsonl as .cbor too.
	cp "$DATA"/exit/*.json* "$DATA"/exit/*.conf "$DATA"/exit/*.prom .
	for f in *.jsonl; do cats-cbor encode "$f" >"${f%.jsonl}.cbor"; done
	cp "$DATA/pce/lab.json" lab.json
	# epipe CMD...: CMD with stdout a pipe nobody reads any more.
	mkdir -p bin
	cat >bin/epipe <<-'EOF'
	#!/usr/bin/env python3
	import os, sys
	r, w = os.pipe()
	os.close(r)
	os.dup2(w, 1)
	os.execvp(sys.argv[1], sys.argv[1:])
	EOF
	chmod +x bin/epipe
	PATH=$FIX/bin:$PATH
	export FIX PATH
}

# Run every case of $DATA/exit/$1.cases; print each that fails, fail if any.
run_cases() {
	local tool=$1 file=$DATA/exit/$1.cases args in want pat n=0 bad=0
	[ -f "$file" ] || { echo "no $file"; return 1; }
	while IFS=$'\t' read -r args in want pat; do
		case $args in '' | '#'*) continue ;; esac
		n=$((n + 1))
		[ "$args" = "(none)" ] && args=
		[ "$in" = - ] && in=/dev/null || in=$FIX/$in
		local err=$BATS_TEST_TMPDIR/err rc=0
		local pre="timeout 20"
		case $args in '@epipe '*) pre="$pre epipe"; args=${args#@epipe } ;; esac
		(cd "$FIX" && eval "$pre $tool $args" <"$in" >/dev/null 2>"$err") || rc=$?
		local lines
		lines=$(grep -v "^$tool: audit " "$err" || true)
		local why=
		if [ "$rc" != "$want" ]; then
			why="exit $rc, not $want"
		elif [ -z "$pat" ]; then
			[ -z "$lines" ] || why="said something"
		elif [ -z "$lines" ] || { [ "$want" = 2 ] &&
		    [ "$(printf '%s\n' "$lines" | wc -l)" -ne 1 ]; }; then
			why="not one line"
		elif printf '%s\n' "$lines" | grep -qvE "^$tool: "; then
			why="a line not of the form '$tool: ...'"
		elif ! printf '%s\n' "$lines" | head -1 | grep -qE -- "$pat"; then
			why="first line does not match /$pat/"
		fi
		if [ -n "$why" ]; then
			bad=$((bad + 1))
			echo "FAIL $tool $args: $why"
			sed 's/^/    | /' "$err" | head -5
		fi
	done <"$file"
	echo "$tool: $n cases, $bad failed"
	[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
}

@test "exit: every status a tool's cases show is in its page's EXIT STATUS" {
	local bad=0
	for f in "$DATA"/exit/cats-*.cases; do
		local t page codes
		t=$(basename "$f" .cases)
		page=$TOP/man/$t.1
		codes=$(sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$page" |
		    grep -oE '(^|[^0-9.])(0|1|2|65|66|74|77|78)([^0-9]|$)' |
		    grep -oE '[0-9]+' | sort -u)
		for c in $(grep -v '^#' "$f" | cut -f3 | grep -E '^[0-9]+$' | sort -u); do
			grep -qx "$c" <<<"$codes" ||
			    { echo "$t: exit $c (a case) is not in $t(1) EXIT STATUS"; bad=1; }
		done
	done
	[ "$bad" -eq 0 ]
}

@test "exit: cats-bind" { run_cases cats-bind; }
@test "exit: cats-cbor" { run_cases cats-cbor; }
@test "exit: cats-cps" { run_cases cats-cps; }
@test "exit: cats-fwd" { run_cases cats-fwd; }
@test "exit: cats-key" { run_cases cats-key; }
@test "exit: cats-pce" { run_cases cats-pce; }
@test "exit: cats-sci" { run_cases cats-sci; }
@test "exit: cats-select" { run_cases cats-select; }
@test "exit: cats-sma" { run_cases cats-sma; }
@test "exit: cats-top" { run_cases cats-top; }
