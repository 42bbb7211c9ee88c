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
debpid=
trap 'rm -f "$out"; [ -z "$debpid" ] || kill -TERM "-$debpid" 2>/dev/null' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# deb.bats needs the Debian package, a build of every tool again (most of
# its minute): it is started here, niced, in its own process group, so that
# it runs on the CPU the unit tests and the namespace tests leave idle (one
# core of two while a unit test runs, most of both while a test waits on
# the network), and deb.bats runs last and waits for it (DEB_BUILDING, the
# file its exit status goes to; it renices what is left of the build to 0,
# DEB_BUILD_PGID, since on a machine loaded by others a niced build may not
# have got far).  Alone, deb.bats builds the package itself.
deb_selected() {
	[ -z "$UNIT_ONLY" ] && [ -f tests/bats/deb.bats ] &&
	    command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null &&
	    { [ -z "$BATS_FILTER" ] || echo tests/bats/deb.bats | grep -Eq "$BATS_FILTER"; }
}
if deb_selected; then
	mkdir -p "$BUILD"
	case $BUILD in /*) DEB_BUILDING=$BUILD ;; *) DEB_BUILDING=$top/$BUILD ;; esac
	DEB_BUILDING=$DEB_BUILDING/deb.status
	rm -f "$DEB_BUILDING"
	export DEB_BUILDING
	DEB_BUILD_OPTIONS="nocheck parallel=2" setsid nice -n 19 sh -c \
	    'make -s -C "$1" BUILD="$2" deb >"$3.log" 2>&1; echo $? >"$3.tmp"; mv "$3.tmp" "$3"' \
	    deb "$top" "$BUILD" "$DEB_BUILDING" </dev/null &
	debpid=$!
	DEB_BUILD_PGID=$debpid
	export DEB_BUILD_PGID
fi

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
	for f in $(ls tests/bats/*.bats | grep -vx tests/bats/deb.bats) \
	    tests/bats/deb.bats; do
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

# -a: a test's output with a byte that is no text (a unit test printing
# garbage) made grep stop at it, and the passes after it went uncounted.
skipped=$(grep -ac '^ok .*# [Ss][Kk][Ii][Pp]' "$out")
passed=$(grep -a '^ok ' "$out" | grep -vc '# [Ss][Kk][Ii][Pp]')
failed=$(grep -ac '^not ok' "$out")
[ "$skipped" -gt 0 ] && echo "$skipped skipped"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
