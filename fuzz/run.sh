#!/bin/sh
# Fuzz regression: every target replays its seed corpus, then fuzzes for
# FUZZ_SECONDS (new inputs go to a scratch corpus, not the repository).
# Crashes are copied to fuzz/crashes/.  Prints "fuzz: N targets, M failed".
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
failed=0
n=0
for f in "$FUZZ_BUILD"/fuzz_*; do
	[ -x "$f" ] || continue
	name=${f##*/}
	n=$((n + 1))
	seeds=fuzz/corpus/$name
	mkdir -p "$seeds"
	work=$(mktemp -d)
	mkdir -p fuzz/crashes
	if ! "$f" -runs=0 "$seeds" >"$work/replay.log" 2>&1; then
		echo "fuzz: $name: corpus replay FAILED"
		tail -20 "$work/replay.log"
		failed=$((failed + 1))
		rm -rf "$work"
		continue
	fi
	if "$f" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=fuzz/crashes/"$name"- "$work" "$seeds" \
	    >"$work/fuzz.log" 2>&1; then
		execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/fuzz.log" | awk '{print $2}')
		echo "fuzz: $name: ok (${FUZZ_SECONDS}s${execs:+, $execs runs})"
	else
		echo "fuzz: $name: FAILED"
		grep -E 'ERROR|SUMMARY|artifact' "$work/fuzz.log" | head -10
		failed=$((failed + 1))
	fi
	rm -rf "$work"
done
echo "fuzz: $n targets, $failed failed"
[ "$failed" -eq 0 ]
