#!/bin/sh
# make bench: run every benchmark and print one table.  Each benchmark (a
# bench_* program or a bench/*.sh script) prints rows
#   name | value | baseline | ratio
# on stdout; anything else it prints is kept out of the table.  A benchmark
# that fails (exit status not 0) gets an error row saying so, and one that
# prints no row at all a row saying it was skipped: a missing figure never
# goes unseen.
#
# The figures are also data files in BENCH_DATA ($BUILD/bench): each
# benchmark's rows as NAME.rows.tsv (name, value, baseline, ratio; NAME
# is the script's or program's, without .sh), the samples some scripts
# write beside them (NAME.*.tsv), and table.txt, the table printed below.
# bench/plot.sh then draws the PNGs from those files: the plots and the
# table are the same numbers of the same run.  The data of an earlier
# run is removed first.
BUILD=${BUILD:-build}
export BUILD
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
BENCH_DATA=${BENCH_DATA:-$BUILD/bench}
case "$BENCH_DATA" in /*) ;; *) BENCH_DATA=$top/$BENCH_DATA ;; esac
export BENCH_DATA
mkdir -p "$BENCH_DATA" || exit 1
rm -f "$BENCH_DATA"/*.tsv "$BENCH_DATA"/*.png "$BENCH_DATA/table.txt"
rows=$(mktemp)
out=$(mktemp)
trap 'rm -f "$rows" "$out"' EXIT
# One benchmark: bench NAME CMD...: keep its rows (also in
# $BENCH_DATA/NAME.rows.tsv), and say when it failed or printed none.
bench() {
	name=$1
	shift
	echo "# $name" >&2
	"$@" >"$out"
	rc=$?
	n0=$(wc -l <"$rows")
	grep ' | .* | .* | ' "$out" | grep -v '^name *| value *|' >>"$rows"
	f=${name##*/}
	tail -n +$((n0 + 1)) "$rows" |
		sed 's/ *| */\t/g; s/^ *//; s/ *$//' >"$BENCH_DATA/${f%.sh}.rows.tsv"
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
		print line } }' | tee "$BENCH_DATA/table.txt"
echo
if command -v gnuplot >/dev/null; then
	sh bench/plot.sh "$BENCH_DATA" "$BENCH_DATA" >&2 ||
		echo "plots: bench/plot.sh failed (above); the table stands" >&2
else
	echo "plots: no gnuplot (make deps installs gnuplot-nox); none drawn" >&2
fi
