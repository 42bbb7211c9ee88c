#!/bin/sh
# make bench: run every benchmark and print one table.  Each benchmark (a
# bench_* program or a bench/*.sh script) prints rows
#   name | value | baseline | ratio
# on stdout; anything else it prints is kept out of the table.  A benchmark
# that fails (exit status not 0) gets an error row saying so, and one that
# prints no row at all a row saying it was skipped: a missing figure never
# goes unseen.
BUILD=${BUILD:-build}
export BUILD
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
rows=$(mktemp)
out=$(mktemp)
trap 'rm -f "$rows" "$out"' EXIT
# One benchmark: bench NAME CMD...: keep its rows, and say when it failed
# or printed none.
bench() {
	name=$1
	shift
	echo "# $name" >&2
	"$@" >"$out"
	rc=$?
	n0=$(wc -l <"$rows")
	grep ' | .* | .* | ' "$out" | grep -v '^name *| value *|' >>"$rows"
	if [ "$rc" -ne 0 ]; then
		echo "$name | error: $name exited $rc: its figures are missing or incomplete (its messages are above) | error | error" >>"$rows"
	elif [ "$(wc -l <"$rows")" -eq "$n0" ]; then
		echo "$name | skipped: no figures (the reason is above) | skipped | skipped" >>"$rows"
	fi
}
for b in bench/*.sh; do
	[ "$b" = bench/run.sh ] && continue
	[ -n "$BENCH_FILTER" ] && ! echo "$b" | grep -Eq "$BENCH_FILTER" && continue
	bench "$b" sh "$b"
done
for b in "$BUILD"/bench/bench_*; do
	[ -x "$b" ] || continue
	# A program that a script drives (its line "# drives: bench_NAME") is
	# not run twice; the others run alone too.
	grep -qx "# drives: ${b##*/}" bench/*.sh && continue
	[ -n "$BENCH_FILTER" ] && ! echo "$b" | grep -Eq "$BENCH_FILTER" && continue
	bench "$b" "$b"
done
echo
{ echo "benchmark | measured | baseline / goal | ratio"
  echo "--- | --- | --- | ---"
  cat "$rows"; } | awk -F' \\| ' '
	{ for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n = NR }
	END { for (r = 1; r <= n; r++) { line = ""
		for (i = 1; i <= 4; i++) { v = c[r, i]; if (r == 2) { v = ""; while (length(v) < w[i]) v = v "-" }
			line = line sprintf("%-" w[i] "s", v) (i < 4 ? " | " : "") }
		print line } }'
