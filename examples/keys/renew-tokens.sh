#!/bin/sh
# Renew the SCI tokens that make-keys.sh made, before they expire: each
# SCI of DIR/scis gets a new token from the same issuer (site-ca.key) for
# the same SCI key (sci-ADDR_PORT.pub), so the site agents verify it as
# they did the old one.  Nothing else changes: no key, PSK or keyring.
# (make-keys.sh -f is key rotation, which invalidates every token.)
#
#   renew-tokens.sh [-e LIFETIME] DIR          (LIFETIME: 24h)
#
# Each token is replaced atomically, with the mode and owner of the old
# one.  Hand the new tokens to the SCIs (cats-sci -K) before the old ones
# expire, e.g. from cron every day with a lifetime of a few days.
set -eu
usage() {
	echo "usage: renew-tokens.sh [-e lifetime] dir" >&2
	exit 2
}
life=24h
while getopts e: o; do
	case $o in
	e) life=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || usage
cd "$1"
[ -r site-ca.key ] && [ -r scis ] || {
	echo "renew-tokens.sh: $1: no site-ca.key or scis (made by make-keys.sh)" >&2
	exit 1
}
while read -r s; do
	cs=${s##*:}
	sci=${s%:*}
	f=sci-$(echo "$sci" | tr ':' '_')
	cats-key token -k site-ca.key -s "$sci" -c "$cs" -p "$f.pub" -e "$life" \
		-o "$f.token.new"
	if [ -e "$f.token" ]; then
		chmod "$(stat -c %a "$f.token")" "$f.token.new"
		chown "$(stat -c %u:%g "$f.token")" "$f.token.new" 2>/dev/null || true
	fi
	mv "$f.token.new" "$f.token"
	echo "$f.token: $sci for $cs, $life"
done <scis
