#!/bin/sh
# What `make install` does not install: the users, /etc/cats with the
# configuration and the keys, the directories of the user cats, the systemd
# units and the cron entry, for the roles of this host.
#
#   sh examples/install.sh ROLE...        (as root, after make install or
#                                         with the Debian package, make deb)
#
#   cps        the C-PS: cats-cps (cats-select, cats-pce, cats-bind as its
#              stages) under systemd (topology.json, services.jsonl,
#              policy.conf, cps.conf; systemd/cats-cps.service)
#   fwd        a forwarder, cats-fwd@ID (the unit; /etc/cats/fwd-ID.env is
#              yours to write, see systemd/cats-fwd@.service)
#   site       a site agent as a daemon (sma.conf, systemd/cats-sma.service)
#   site-cron  a site agent run every minute by cron (cron/sma-cron.conf,
#              /etc/cron.d/cats-sma; or systemd/cats-sma-once.timer)
#
# Every role gets: the system user cats (and cats-fwd for fwd, in group
# cats), /etc/cats (root:cats 0750, files 0640), /etc/cats/revoked.txt
# (empty), /var/lib/cats and /var/log/cats (cats 0750, also made at boot by
# /etc/tmpfiles.d/cats.conf), and /etc/cats/keys: made by
# keys/make-keys.sh -u cats when it holds no keys (a one-host trial; with
# several hosts, make the keys once and copy to each what it needs, see
# README.md).  Files already installed are replaced, keys never: rotate
# them with keys/make-keys.sh -f, renew the tokens with
# keys/renew-tokens.sh.
#
# DESTDIR installs into a staging root, as make install does; CATS_USER
# and CATS_FWD_USER name the users (cats, cats-fwd), which must exist on
# this host for the files to be theirs (they are made when missing).
set -eu
ex=$(cd "$(dirname "$0")" && pwd)
R=${DESTDIR:-}
u=${CATS_USER:-cats}
fu=${CATS_FWD_USER:-cats-fwd}
PATH=$R/usr/local/bin:/usr/local/bin:$PATH	# cats-key, cats-pce
[ $# -gt 0 ] || {
	echo "usage: install.sh cps|fwd|site|site-cron ..." >&2
	exit 2
}
cps=0 fwd=0 site=0 cron=0
for r in "$@"; do
	case $r in
	cps) cps=1 ;;
	fwd) fwd=1 ;;
	site) site=1 ;;
	site-cron) cron=1 ;;
	*) echo "install.sh: $r: no such role (cps, fwd, site, site-cron)" >&2
	   exit 2 ;;
	esac
done

# The tools' directory in the units: /usr/local/bin (make install), or
# /usr/bin when the tools found are the Debian package's.
bin=/usr/local/bin
case $(command -v cats-pce) in /usr/bin/*) bin=/usr/bin ;; esac

# Install the file SRC of the examples as DEST (mode MODE, group GROUP),
# with the user names and the tools' directory of this installation:
# put MODE GROUP SRC DEST.
put() {
	mkdir -p "$(dirname "$R$4")"
	sed -e "s,/usr/local/bin/,$bin/,g" \
	    -e "s/^\(User\|Group\|SocketUser\|SocketGroup\|SupplementaryGroups\)=cats\$/\1=$u/" \
	    -e "s/^User=cats-fwd\$/User=$fu/; s/^Group=cats-fwd\$/Group=$fu/" \
	    -e "s/^\(d [^ ]* [0-7]*\) cats cats /\1 $u $u /" \
	    -e "s/^\(\* \* \* \* \*\) cats /\1 $u /" "$ex/$3" >"$R$4.new"
	chmod "$1" "$R$4.new"
	chgrp "$2" "$R$4.new"
	mv "$R$4.new" "$R$4"
}

# 1. The users: cats runs every daemon but the forwarders; cats-fwd is in
# its group to reach the C-PS's sockets and read cats-bind.pub.
getent passwd "$u" >/dev/null ||
	useradd --system --user-group --home-dir /var/lib/cats --no-create-home \
		--shell /usr/sbin/nologin "$u"
if [ $fwd = 1 ]; then
	getent passwd "$fu" >/dev/null ||
		useradd --system --user-group --groups "$u" --no-create-home \
			--home-dir /nonexistent --shell /usr/sbin/nologin "$fu"
fi

# 2. /etc/cats: root's, readable by the group cats.
install -d -m 0750 -o root -g "$u" "$R/etc/cats"
if [ $cps = 1 ]; then
	cats-pce -t "$ex/topology.json" --check >/dev/null
	for f in topology.json services.jsonl policy.conf cps.conf; do
		put 0640 "$u" "$f" "/etc/cats/$f"
	done
fi
[ $site = 1 ] && put 0640 "$u" sma.conf /etc/cats/sma.conf
[ $cron = 1 ] && put 0640 "$u" cron/sma-cron.conf /etc/cats/sma-cron.conf
if [ $site = 1 ] || [ $cron = 1 ]; then
	[ -e "$R/etc/cats/revoked.txt" ] ||
		install -m 0640 -o root -g "$u" /dev/null "$R/etc/cats/revoked.txt"
fi

# 3. The keys, once (make-keys.sh refuses to overwrite them).
[ -e "$R/etc/cats/keys/site-ca.key" ] ||
	sh "$ex/keys/make-keys.sh" -u "$u" "$R/etc/cats/keys"

# 4. The directories of the user cats, now and at boot.
install -d -m 0750 -o "$u" -g "$u" "$R/var/lib/cats" "$R/var/log/cats"
put 0644 root tmpfiles/cats.conf /etc/tmpfiles.d/cats.conf

# 5. The units and the cron entry.
sd=/etc/systemd/system
if [ $cps = 1 ]; then
	put 0644 root systemd/cats-cps.service "$sd/cats-cps.service"
fi
[ $fwd = 1 ] && put 0644 root systemd/cats-fwd@.service "$sd/cats-fwd@.service"
[ $site = 1 ] && put 0644 root systemd/cats-sma.service "$sd/cats-sma.service"
if [ $cron = 1 ]; then
	put 0644 root systemd/cats-sma-once.service "$sd/cats-sma-once.service"
	put 0644 root systemd/cats-sma-once.timer "$sd/cats-sma-once.timer"
	put 0644 root cron/cats-sma.cron /etc/cron.d/cats-sma
fi
if [ -z "$R" ] && [ -d /run/systemd/system ]; then
	systemctl daemon-reload
fi
