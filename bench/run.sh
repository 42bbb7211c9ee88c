#!/bin/sh
# make bench: run every benchmark and print one table.  Each benchmark (a
# bench_* program or a bench/*.sh script) prints rows
#   name | value | baseline | ratio
# on stdout; anything else it prints is kept out of the table.
BUILD=${BUILD:-build}
export BUILD
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
rows=$(mktemp)
trap 'rm -f "$rows"' EXIT
for b in bench/*.sh; do
	[ "$b" = bench/run.sh ] && continue
	[ -n "$BENCH_FILTER" ] && ! echo "$b" | grep -Eq "$BENCH_FILTER" && continue
	echo "# $b" >&2
	sh "$b" 2>&2 | grep ' | .* | .* | ' | grep -v '^name *| value *|' >>"$rows"
done
for b in "$BUILD"/bench/bench_*; do
	[ -x "$b" ] || continue
	# A program that a script drives (its line "# drives: bench_NAME") is
	# not run twice; the others run alone too.
	grep -qx "# drives: ${b##*/}" bench/*.sh && continue
	[ -n "$BENCH_FILTER" ] && ! echo "$b" | grep -Eq "$BENCH_FILTER" && continue
	echo "# $b" >&2
	"$b" 2>&2 | grep ' | .* | .* | ' | grep -v '^name *| value *|' >>"$rows"
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
