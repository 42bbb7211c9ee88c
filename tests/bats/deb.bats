#!/usr/bin/env bats
# The Debian package (debian/, make deb): built once (nocheck), lintian
# without errors, unpacked into a throwaway root (dpkg -x) where every tool
# answers --version and --help and the man pages, units, tmpfiles.d and
# sysusers.d entries are where Debian looks for them; then installed and
# purged for real (dpkg -i, dpkg -P, the maintainer scripts run) in a
# chroot over a copy-on-write overlay of this host's / (a mount namespace
# of its own; what dpkg writes goes to a tmpfs), where after the purge
# nothing of the package is left but its users.

load helper

setup_file() {
	command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || return 0
	export DEB_DIR="$BUILD/deb"
	if [ -n "${DEB_BUILDING:-}" ]; then
		# tests/run.sh started make deb as this file's own build, at
		# its start, with these options (see there); its exit status
		# is written to $DEB_BUILDING when it ends.  Niced, on a
		# machine loaded by others it may be far from done: from now on
		# it is this file's only work, at the priority of the tests.
		[ -f "$DEB_BUILDING" ] || [ -z "${DEB_BUILD_PGID:-}" ] ||
			renice -n 0 -g "$DEB_BUILD_PGID" >/dev/null 2>&1 || true
		while [ ! -f "$DEB_BUILDING" ]; do sleep 0.5; done
		[ "$(cat "$DEB_BUILDING")" = 0 ] ||
			{ cat "$DEB_BUILDING.log" >&2; return 1; }
	else
		DEB_BUILD_OPTIONS="nocheck parallel=2" make -s -C "$TOP" \
			BUILD="$BUILD" deb >"$BATS_FILE_TMPDIR/make-deb.log" 2>&1 ||
			{ cat "$BATS_FILE_TMPDIR/make-deb.log" >&2; return 1; }
	fi
	export DEB=$(ls "$DEB_DIR"/cats_*_*.deb)
	export XR="$BATS_FILE_TMPDIR/root"
	dpkg -x "$DEB" "$XR"
	# lintian (most of what is left of this file's time) runs while the
	# tests before its own look at the package; its test is the last.
	if command -v lintian >/dev/null; then
		L=$BATS_FILE_TMPDIR/lintian
		{ lintian --fail-on error --tag-display-limit 0 "$DEB" >"$L.out" 2>&1
		  echo $? >"$L.tmp"; mv "$L.tmp" "$L.status"; } 3>&- &
	fi
}

setup() {
	command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null ||
		skip "no dpkg-buildpackage or debhelper (make deps installs them)"
	T=$(mktemp -d)
}

teardown() {
	rm -rf "$T"
}

@test "deb: make deb leaves the .deb and .changes in build/deb and the tree clean" {
	ls "$DEB_DIR"/cats_*.changes
	[ -f "$DEB" ]
	[ ! -e "$DEB_DIR/src" ]
	# Nothing of the build in the tree or beside it.
	[ ! -e "$TOP/debian/build" ] && [ ! -e "$TOP/debian/cats" ] &&
		[ ! -e "$TOP/debian/files" ] && [ ! -e "$TOP/debian/.debhelper" ]
	[ -z "$(ls "$TOP"/../cats_*.deb 2>/dev/null)" ]
	# The version is the changelog's and the tools'.
	v=$(dpkg-parsechangelog -l "$TOP/debian/changelog" -S Version)
	[ "$(dpkg-deb -f "$DEB" Version)" = "$v" ]
	grep -q "CATS_VERSION \"$v\"" "$TOP/lib/base/cats.h"
	# The runtime libraries come from shlibs.
	dpkg-deb -f "$DEB" Depends | grep -q 'libsodium'
}

@test "deb: every tool make install installs is in the package and answers --version and --help" {
	v=$(dpkg-deb -f "$DEB" Version)
	n=0
	for c in "$TOP"/cmd/cats-*.c; do
		t=$(basename "$c" .c)
		[ -x "$XR/usr/bin/$t" ] || { echo "$t: not in /usr/bin"; return 1; }
		run "$XR/usr/bin/$t" --version
		[ "$status" -eq 0 ] || { echo "$t --version: $status $output"; return 1; }
		[ "$output" = "$t (cats) $v" ] || { echo "$t --version: $output"; return 1; }
		run "$XR/usr/bin/$t" --help
		[ "$status" -eq 0 ] || { echo "$t --help: $status $output"; return 1; }
		grep -q "$t" <<<"$output"
		n=$((n + 1))
	done
	[ "$n" -ge 8 ]
	# Nothing else in /usr/bin.
	[ "$(ls "$XR/usr/bin" | wc -l)" -eq "$n" ]
}

@test "deb: man pages, units, tmpfiles.d, sysusers.d and examples where Debian looks" {
	for m in "$TOP"/man/*.[1-8]; do
		s=${m##*.}
		[ -f "$XR/usr/share/man/man$s/${m##*/}.gz" ] || { echo "no ${m##*/}"; return 1; }
		zcat "$XR/usr/share/man/man$s/${m##*/}.gz" | cmp - "$m"
	done
	for u in "$TOP"/examples/systemd/*; do
		f=$XR/lib/systemd/system/${u##*/}
		[ -f "$f" ] || { echo "no unit ${u##*/}"; return 1; }
		# The tools are the package's, in /usr/bin.
		run grep -n /usr/local "$f"
		[ "$status" -eq 1 ] || { echo "${u##*/}: $output"; return 1; }
		for x in $(grep -o '/usr/bin/cats-[a-z]*' "$f"); do
			[ -x "$XR$x" ] || { echo "${u##*/}: $x not in the package"; return 1; }
		done
	done
	# Not enabled: no links of the package's own.
	[ ! -e "$XR/etc/systemd" ]
	cmp "$XR/usr/lib/tmpfiles.d/cats.conf" "$TOP/examples/tmpfiles/cats.conf"
	grep -q '^u cats ' "$XR/usr/lib/sysusers.d/cats.conf"
	grep -q '^u cats-fwd ' "$XR/usr/lib/sysusers.d/cats.conf"
	grep -q '^m cats-fwd cats' "$XR/usr/lib/sysusers.d/cats.conf"
	[ -f "$XR/usr/share/doc/cats/examples/install.sh" ]
	[ -f "$XR/usr/share/doc/cats/examples/systemd/cats-cps.service" ]
	[ -f "$XR/usr/share/doc/cats/copyright" ]
}

# Run the script on stdin chrooted into an overlay of / whose writes go to
# $T/ov/upper (a tmpfs), in a mount namespace of its own: the host is not
# touched.  The package is /tmp/cats.deb there.  man-db's trigger does not
# rebuild the host's whole index of man pages there (no auto-update: that
# took a minute of the two of dpkg -i and dpkg -P, and is man-db's work,
# not the package's); man -w finds the pages without it.
in_overlay() {
	unshare --mount --fork bash -eu -c '
	T=$1
	mount --make-rprivate /
	mkdir -p "$T/ov"
	mount -t tmpfs -o mode=0755 tmpfs "$T/ov"
	mkdir "$T/ov/upper" "$T/ov/work" "$T/ov/root"
	mount -t overlay overlay \
		-o "lowerdir=/,upperdir=$T/ov/upper,workdir=$T/ov/work" "$T/ov/root"
	R=$T/ov/root
	mount --bind /proc "$R/proc"
	mount --bind /dev "$R/dev"
	mount -t tmpfs tmpfs "$R/run"
	mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
	cp "$DEB" "$R/tmp/cats.deb"
	rm -f "$R/var/lib/man-db/auto-update"
	chroot "$R" /bin/bash -eu /dev/fd/9 9<&0 </dev/null
	umount "$R/tmp" "$R/run" "$R/dev" "$R/proc"
	# What the package left: every file or link in the upper layer, and
	# every directory of it that the host does not have.
	cd "$T/ov/upper"
	find . -mindepth 1 \( -type d -o -type l -o -type f -o -type c \) -printf "%y %p\n" |
	while read -r y p; do
		[ "$y" = d ] && [ -d "/$p" ] && continue
		[ "$p" = ./var/lib/man-db/auto-update ] && continue
		echo "$y ${p#.}"
	done >"$T/left"
	' in_overlay "$T"
}

@test "deb: dpkg -i then dpkg -P in an overlay of this host leaves nothing behind but the users" {
	need_root
	grep -qw overlay /proc/filesystems || skip "no overlayfs"
	in_overlay <<'EOF'
export DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin
dpkg -i /tmp/cats.deb >/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; exit 1; }
dpkg-query -W -f '${Status}\n' cats | grep -qx 'install ok installed'
# The users and the directories of the user cats.
getent passwd cats >/dev/null
getent passwd cats-fwd >/dev/null
id -nG cats-fwd | grep -qw cats
[ "$(stat -c %U:%a /var/lib/cats)" = cats:750 ]
[ "$(stat -c %U:%a /var/log/cats)" = cats:750 ]
# Installed, neither enabled nor started.
for u in cats-cps.service cats-sma.service cats-sma-once.timer; do
	[ -f "/lib/systemd/system/$u" ]
	s=$(systemctl --root=/ is-enabled "$u" 2>&1 || true)
	[ "$s" = disabled ] || { echo "$u: $s"; exit 1; }
done
[ -z "$(ls /etc/systemd/system/*/cats-* 2>/dev/null)" ]
cats-key --version >/dev/null
man -w cats-fwd >/dev/null
# examples/install.sh from the package writes units that run its tools.
DESTDIR=/tmp/d sh /usr/share/doc/cats/examples/install.sh cps fwd >/tmp/inst.log 2>&1 ||
	{ cat /tmp/inst.log; exit 1; }
grep -q '^ExecStart=/usr/bin/cats-cps ' /tmp/d/etc/systemd/system/cats-cps.service
grep -q '^ExecStart=/usr/bin/cats-fwd ' /tmp/d/etc/systemd/system/cats-fwd@.service
rm -rf /tmp/d /tmp/inst.log
# A state file of a run, which the purge removes with its directory.
echo x >/var/lib/cats/sma.state
dpkg -P cats >>/tmp/dpkg.log 2>&1 || { cat /tmp/dpkg.log; exit 1; }
if dpkg-query -W cats 2>/dev/null; then exit 1; fi
[ ! -e /usr/bin/cats-key ] && [ ! -e /var/lib/cats ] && [ ! -e /var/log/cats ]
rm -f /tmp/cats.deb /tmp/dpkg.log
EOF
	# Left: dpkg's own records and logs, the caches its triggers (man-db)
	# rebuilt, and the users (sysusers.d(5): never removed).
	run grep -Ev '^[a-z] /(var/lib/dpkg(/|$)|var/log/(dpkg|alternatives)\.log$|var/cache/(man|debconf|ldconfig)(/|$)|etc/(passwd|group|shadow|gshadow)-?$|etc/\.pwd\.lock$|var/lib/systemd/deb-systemd-helper-(enabled|masked)$)' "$T/left"
	echo "$output"
	[ -z "$output" ]
}

@test "deb: lintian finds no errors" {
	command -v lintian >/dev/null || skip "no lintian"
	L=$BATS_FILE_TMPDIR/lintian
	while [ ! -f "$L.status" ]; do sleep 0.2; done
	cat "$L.out"
	[ "$(cat "$L.status")" -eq 0 ]
	run grep -c '^E: ' "$L.out"
	[ "$output" = 0 ]
}
