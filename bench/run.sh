#!/bin/sh
# Run every benchmark: the built bench_* programs, then bench/*.sh.  Each
# prints rows "name | value | baseline | ratio"; nothing is asserted.
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
rc=0
for b in "$BUILD"/bench/bench_*; do
	[ -x "$b" ] || continue
	case "$b" in *.o|*.d) continue ;; esac
	echo "# ${b##*/}"
	"$b" || rc=1
done
for s in bench/*.sh; do
	[ "$s" = bench/run.sh ] && continue
	[ -f "$s" ] || continue
	echo "# ${s##*/}"
	BUILD=$BUILD sh "$s" || rc=1
done
exit $rc
