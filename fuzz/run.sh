#!/bin/sh
# Fuzz regression: every target replays its seed corpus, then fuzzes for
# FUZZ_SECONDS (new inputs go to a scratch corpus, not the repository).
# FUZZ_JOBS targets run at a time (default: one a core), each for its whole
# FUZZ_SECONDS, so a 2-core machine fuzzes every target as long in half the
# time.  Crashes are copied to fuzz/crashes/.  Prints one line a target, in
# order, then "fuzz: N targets, M failed".
FUZZ_BUILD=${FUZZ_BUILD:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1

# One target ($2): its report goes to $3/NAME.res, its last line "ok" or
# "FAILED".
if [ "$1" = --one ]; then
	f=$2
	name=${f##*/}
	res=$3/$name.res
	seeds=fuzz/corpus/$name
	work=$(mktemp -d)
	{
		if ! "$f" -runs=0 "$seeds" >"$work/replay.log" 2>&1; then
			echo "fuzz: $name: corpus replay FAILED"
			tail -20 "$work/replay.log"
			echo FAILED
		elif "$f" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -print_final_stats=1 \
		    -artifact_prefix=fuzz/crashes/"$name"- "$work" "$seeds" \
		    >"$work/fuzz.log" 2>&1; then
			execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$work/fuzz.log" | awk '{print $2}')
			echo "fuzz: $name: ok (${FUZZ_SECONDS}s${execs:+, $execs runs})"
			echo ok
		else
			echo "fuzz: $name: FAILED"
			grep -E 'ERROR|SUMMARY|artifact' "$work/fuzz.log" | head -10
			echo FAILED
		fi
	} >"$res"
	rm -rf "$work"
	exit 0
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT INT TERM
mkdir -p fuzz/crashes
n=0
for f in "$FUZZ_BUILD"/fuzz_*; do
	[ -x "$f" ] || continue
	mkdir -p "fuzz/corpus/${f##*/}"
	n=$((n + 1))
	echo "$f"
done >"$out/list"
export FUZZ_SECONDS
xargs -P "$FUZZ_JOBS" -I{} sh fuzz/run.sh --one {} "$out" <"$out/list"
failed=0
while read -r f; do
	r=$out/${f##*/}.res
	[ -s "$r" ] || printf "fuzz: %s: did not complete\nFAILED\n" "${f##*/}" >"$r"
	sed '$d' "$r"
	[ "$(tail -1 "$r")" = ok ] || failed=$((failed + 1))
done <"$out/list"
echo "fuzz: $n targets, $failed failed"
[ "$failed" -eq 0 ]
