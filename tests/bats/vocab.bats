#!/usr/bin/env bats
# One vocabulary across tools (cats(7) COMMON OPTIONS, SIGNALS): the same
# page header everywhere, -h/--help, -V/--version in every tool, --help
# equal to the page's SYNOPSIS, every option of the code documented in the
# page's OPTIONS and every option there one the tool takes, -s --strict.

load helper

TOOLS="cats-bind cats-cbor cats-cps cats-fwd cats-key cats-pce cats-sci cats-select cats-sma cats-top"

# The long options of a tool's getopt_long table (cmd/TOOL.c), one a line.
# (and of the shared tables it names: CATS_TLS_LONGOPTS of net/tls.h).
code_opts() {
	local files=$TOP/cmd/$1.c
	grep -q CATS_TLS_LONGOPTS "$files" && files="$files $TOP/lib/net/tls.h"
	# shellcheck disable=SC2086
	cat $files | grep -oE '\{ *"[a-z0-9-]+", *(no|required|optional)_argument' |
	    sed -E 's/\{ *"([^"]*)".*/--\1/' | sort -u
}

# The OPTIONS section of man/TOOL.1, fonts and \- undone.
man_options() {
	sed -n '/^\.SH OPTIONS/,/^\.SH [A-Z]/p' "$TOP/man/$1.1" |
	    sed 's/\\-/-/g; s/\\f[BIRP]//g'
}

@test "vocab: every page has the same header: date, \"cats VERSION\", \"cats manual\"" {
	local v
	v=$(sed -n 's/^#define CATS_VERSION "\(.*\)"/\1/p' "$TOP/lib/base/cats.h")
	sed -n 1p "$TOP"/man/*.[157] | sed -E 's/^\.TH [A-Z.-]+ [0-9] //' |
	    sort -u >"$BATS_TEST_TMPDIR/th"
	cat "$BATS_TEST_TMPDIR/th"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/th")" -eq 1 ]
	grep -qE "^[0-9]{4}-[0-9]{2}-[0-9]{2} \"cats $v\" \"cats manual\"$" "$BATS_TEST_TMPDIR/th"
}

@test "vocab: -V and --version, -h and --help in every tool" {
	for t in $TOOLS; do
		[ "$("$t" -V)" = "$t (cats) $("$t" --version | sed 's/.* //')" ] ||
		    { echo "$t -V"; false; }
		[[ "$("$t" --version)" == "$t (cats) "* ]] || { echo "$t --version"; false; }
		[ "$("$t" -h)" = "$("$t" --help)" ] || { echo "$t -h"; false; }
	done
}

@test "vocab: --help equals the man page SYNOPSIS, in every tool" {
	for t in $TOOLS; do
		check_synopsis "$t" || { echo "in $t"; false; }
	done
}

@test "vocab: every option of the code is in the page's OPTIONS, every option there is one the tool takes" {
	local bad=0
	for t in $TOOLS; do
		code_opts "$t" >"$BATS_TEST_TMPDIR/code"
		man_options "$t" | grep -oE -- '--[a-z0-9][a-z0-9-]*[a-z0-9]' |
		    sort -u >"$BATS_TEST_TMPDIR/page"
		# The options an OPTIONS entry is about (its .TP tag).
		man_options "$t" | awk '/^\.TP/ { getline; print }' |
		    grep -oE -- '(^|[ ",])--[a-z0-9][a-z0-9-]*[a-z0-9]' |
		    grep -oE -- '--[a-z0-9-]+' | sort -u >"$BATS_TEST_TMPDIR/tags"
		for o in $(comm -23 "$BATS_TEST_TMPDIR/code" "$BATS_TEST_TMPDIR/page"); do
			echo "$t: $o is not in OPTIONS of $t(1)"; bad=1
		done
		for o in $(comm -13 "$BATS_TEST_TMPDIR/code" "$BATS_TEST_TMPDIR/tags"); do
			echo "$t: $t(1) documents $o, which $t does not take"; bad=1
		done
	done
	[ "$bad" -eq 0 ]
}

@test "vocab: --help lists every option of the code, one a line after the synopsis (man/help.awk)" {
	local bad=0
	for t in $TOOLS; do
		"$t" --help | sed '1,/^$/d' >"$BATS_TEST_TMPDIR/opts"
		[ -s "$BATS_TEST_TMPDIR/opts" ] || { echo "$t: no options"; bad=1; }
		for o in $(code_opts "$t"); do
			grep -qE -- "^  (-[A-Za-z0-9], )?.*$o\b" "$BATS_TEST_TMPDIR/opts" ||
			    { echo "$t --help: no line for $o"; bad=1; }
		done
		# One line each: nothing wider than 80 columns.
		awk -v t="$t" 'length > 80 { print t ": too wide: " $0; bad = 1 }
		    END { exit bad }' "$BATS_TEST_TMPDIR/opts" || bad=1
	done
	[ "$bad" -eq 0 ]
}

@test "vocab: -s is --strict wherever there is a --strict; cats-sma's old -s and -S warn" {
	for t in $TOOLS; do
		grep -qE '\{ *"strict",' "$TOP/cmd/$t.c" || continue
		[ "$t" = cats-sma ] && continue
		grep -qE "\{ *\"strict\", *no_argument, *NULL, *'s' *\}" "$TOP/cmd/$t.c" ||
		    { echo "$t: -s is not --strict"; false; }
	done
	# cats-sma until the next release: -s is --stats, -S --strict, each
	# said to be deprecated; the long spellings are silent.
	run cats-sma -s -c /nonexistent
	[[ "$output" == *"-s is deprecated: write --stats"* ]]
	run cats-sma -S -c /nonexistent
	[[ "$output" == *"-S is deprecated: write --strict"* ]]
	run cats-sma --stats --strict -c /nonexistent
	[[ "$output" != *deprecated* ]]
}

@test "vocab: every page has SIGNALS naming SIGHUP; cats-key says it has no long-running mode (nothing to reload)" {
	local t sec bad=0
	for t in $TOOLS; do
		sec=$(sed -n '/^\.SH SIGNALS/,/^\.SH [A-Z]/p' "$TOP/man/$t.1")
		if [ -z "$sec" ]; then
			echo "$t(1): no SIGNALS"; bad=1
		elif ! grep -q SIGHUP <<<"$sec"; then
			echo "$t(1) SIGNALS: SIGHUP not named"; bad=1
		fi
	done
	# cats-key runs once: its SIGHUP reloads nothing, and it says so.
	sed -n '/^\.SH SIGNALS/,/^\.SH [A-Z]/p' "$TOP/man/cats-key.1" |
	    grep -q 'no long-running mode' ||
	    { echo "cats-key(1) SIGNALS: does not say it runs once"; bad=1; }
	[ "$bad" -eq 0 ]
}

@test "vocab: SIGHUP does not stop cats-fwd (it reads its TLS files again, as every tool does)" {
	need_root
	local ns=vocab$$ p
	ip netns add "$ns"
	ip netns exec "$ns" cats-fwd --id IF-1 --core tun:vh0 --client tun:vh1 \
	    2>"$BATS_TEST_TMPDIR/err" &
	p=$!
	wait_for 50 grep -q forwarding "$BATS_TEST_TMPDIR/err" ||
	    { kill "$p"; ip netns del "$ns"; false; }
	# Alive after the HUP: it answers a SIGUSR1 sent after it.
	kill -HUP "$p"
	kill -USR1 "$p"
	local alive=0
	wait_for 50 grep -q '"type":"stats"' "$BATS_TEST_TMPDIR/err" && alive=1
	kill "$p" 2>/dev/null; wait "$p" || true
	ip netns del "$ns"
	[ "$alive" -eq 1 ]
}
