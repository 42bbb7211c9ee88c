#!/bin/sh
# Run every benchmark once; each prints rows "name | value | baseline | ratio".
# Timings are noisy on a shared machine: they are reported, never asserted.
BUILD=${BUILD:-build}
export BUILD
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
rc=0
for b in "$BUILD"/bench/bench_*; do
	[ -x "$b" ] || continue
	echo "# ${b##*/}"
	"$b" || rc=1
done
for s in bench/*.sh; do
	[ "$s" = bench/run.sh ] && continue
	[ -f "$s" ] || continue
	echo "# ${s##*/}"
	sh "$s" || rc=1
done
exit $rc
