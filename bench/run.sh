#!/bin/sh
# Run every benchmark: the bench_* binaries, then the bench/*.sh scripts.
# Each prints rows "name | value | baseline | ratio".
BUILD=${BUILD:-build}
export BUILD
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
for b in "$BUILD"/bench/bench_*; do
	[ -x "$b" ] || continue
	echo "# ${b##*/}"
	"$b" || echo "# ${b##*/} failed"
done
for s in bench/*.sh; do
	[ -f "$s" ] || continue
	[ "${s##*/}" = run.sh ] && continue
	echo "# ${s##*/}"
	sh "$s" || echo "# ${s##*/} failed"
done
