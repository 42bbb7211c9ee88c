#!/bin/sh
# Run the C unit tests and the bats tests; print their TAP, then one line:
# "N passed, N failed".  Skipped tests are reported on the line before.
# UNIT_ONLY=1 runs the unit tests only; BATS_FILTER=regex narrows bats files.
# After each test program and bats file a line "# time NAME: Ns" says how long
# it took, so a slow file shows in the CI log.
BUILD=${BUILD:-build}
export BUILD
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	name=${t##*/}
	echo "# $name"
	t0=$(date +%s)
	if ! timeout 300 "$t" >"$out.u" 2>&1; then
		grep -q '^not ok' "$out.u" || echo "not ok - $name exited with failure" >>"$out.u"
	fi
	sed "s/^\(not ok\|ok\) [0-9]* /\1 $name: /" "$out.u" | tee -a "$out"
	rm -f "$out.u"
	echo "# time $name: $(( $(date +%s) - t0 ))s"
done

if [ -z "$UNIT_ONLY" ]; then
	for f in tests/bats/*.bats; do
		[ -f "$f" ] || continue
		if [ -n "$BATS_FILTER" ] && ! echo "$f" | grep -Eq "$BATS_FILTER"; then
			continue
		fi
		name=${f##*/}
		echo "# $name"
		t0=$(date +%s)
		timeout 1200 bats --tap "$f" >"$out.b" 2>&1 ||
			grep -q '^not ok' "$out.b" ||
			echo "not ok - $name did not complete" >>"$out.b"
		sed "s/^\(not ok\|ok\) [0-9]* /\1 ${name%.bats}: /" "$out.b" | tee -a "$out"
		rm -f "$out.b"
		echo "# time $name: $(( $(date +%s) - t0 ))s"
	done
fi

skipped=$(grep -c '^ok .*# [Ss][Kk][Ii][Pp]' "$out")
passed=$(grep '^ok ' "$out" | grep -vc '# [Ss][Kk][Ii][Pp]')
failed=$(grep -c '^not ok' "$out")
[ "$skipped" -gt 0 ] && echo "$skipped skipped"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
