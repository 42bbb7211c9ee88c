#!/bin/sh
# Run every benchmark: build/bench/bench_* programs, then bench/*.sh
# scripts.  Each prints rows "name | value | baseline | ratio".
BUILD=${BUILD:-build}
export BUILD
status=0
for b in "$BUILD"/bench/bench_*; do
	[ -x "$b" ] || continue
	echo "# ${b##*/}"
	"$b" || status=1
done
for s in bench/*.sh; do
	case "$s" in */run.sh) continue ;; esac
	echo "# ${s##*/}"
	sh "$s" || status=1
done
exit $status
