#!/bin/sh
# Install the Debian packages given as arguments that are not installed yet.
# As root this runs apt-get; otherwise it says what is missing and fails.
# One dpkg-query for all of them (one a package took seconds of each make
# check, make deb and make check-unit).
installed=" "$(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null |
	awk '/ install ok installed$/ { printf "%s ", $1 }')
missing=""
for p in "$@"; do
	case "$installed" in
	*" $p "*) ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing Debian packages:$missing (run 'make deps' as root)" >&2
	exit 1
fi
echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# The package lists may be stale or absent on a fresh machine.
if ! apt-get install -y --no-install-recommends $missing >/dev/null 2>&1; then
	apt-get update -qq >/dev/null 2>&1
	# tshark asks whether non-root users may capture; answer no.
	echo "wireshark-common wireshark-common/install-setuid boolean false" |
		debconf-set-selections 2>/dev/null
	apt-get install -y --no-install-recommends $missing >&2 || {
		echo "deps: apt-get install failed" >&2
		exit 1
	}
fi
