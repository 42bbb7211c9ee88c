#!/bin/sh
# Run every libFuzzer target of $FUZZ_BUILD for $FUZZ_SECONDS seconds on a
# working copy of its seed corpus (fuzz/corpus/<target>/).  Exit 1 if any
# target found a crash.
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
status=0
for f in "$FUZZ_BUILD"/fuzz_*; do
	[ -x "$f" ] || continue
	name=${f##*/}
	work="$FUZZ_BUILD/corpus/$name"
	mkdir -p "$work" "$FUZZ_BUILD/crashes/$name"
	[ -d "fuzz/corpus/$name" ] && cp -R "fuzz/corpus/$name/." "$work/"
	echo "# $name: $FUZZ_SECONDS s"
	if ! "$f" -max_total_time="$FUZZ_SECONDS" -print_final_stats=1 \
	    -artifact_prefix="$FUZZ_BUILD/crashes/$name/" "$work" \
	    >"$FUZZ_BUILD/$name.log" 2>&1; then
		echo "not ok - $name: see $FUZZ_BUILD/$name.log"
		status=1
	fi
	grep -E '^stat::number_of_executed_units|^Done' "$FUZZ_BUILD/$name.log"
done
exit $status
