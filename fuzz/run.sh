#!/bin/sh
# Run every built libFuzzer target for FUZZ_SECONDS on a copy of its seed
# corpus (the seeds in fuzz/corpus/ stay as committed).
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
rc=0
for f in "$FUZZ_BUILD"/fuzz_*; do
	[ -x "$f" ] || continue
	name=${f##*/}
	work=$(mktemp -d)
	[ -d "fuzz/corpus/$name" ] && cp -r "fuzz/corpus/$name/." "$work/"
	echo "# $name: $FUZZ_SECONDS s"
	if ! "$f" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 \
	    -artifact_prefix="$FUZZ_BUILD/$name-" "$work" >"$FUZZ_BUILD/$name.log" 2>&1; then
		echo "not ok - $name (see $FUZZ_BUILD/$name.log)"
		rc=1
	else
		echo "ok - $name $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$FUZZ_BUILD/$name.log")"
	fi
	rm -rf "$work"
done
exit $rc
