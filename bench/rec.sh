#!/bin/sh
# The record layer beside cat(1): the same bytes through the same pipe.
# drives: bench_rec
BUILD=${BUILD:-build}
N=${BENCH_RECORDS:-1000000}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$BUILD/bench/bench_rec" "$N" "$tmp" || exit 1
bytes=$(stat -c %s "$tmp")
t() { # seconds for a command, best of 3
	best=
	for i in 1 2 3; do
		s=$(date +%s%N); sh -c "$1" >/dev/null 2>&1; e=$(date +%s%N)
		d=$((e - s)); [ -z "$best" ] || [ "$d" -lt "$best" ] && best=$d
	done
	echo "$best"
}
cat_ns=$(t "cat '$tmp' | cat > /dev/null")
chk_ns=$(t "cat '$tmp' | $BUILD/bin/cats-cbor check -q")
awk -v n="$N" -v b="$bytes" -v c="$cat_ns" -v k="$chk_ns" 'BEGIN {
	printf "cats-cbor check through a pipe | %.0f rec/s, %.0f MB/s | cat: %.0f MB/s | %.3fx\n",
	    n / (k / 1e9), b / 1e6 / (k / 1e9), b / 1e6 / (c / 1e9), c / k }'
