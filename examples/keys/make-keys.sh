#!/bin/sh
# Make every key and token of a cats deployment like the demo's, with
# cats-key.  Nothing here is committed: run it, keep the secrets where only
# their daemon can read them.
#
#   make-keys.sh [-f] [-e LIFETIME] [-u USER] DIR [SCI-ID:CS-ID ...]
#
# Default SCIs: the demo's four instances of S1.  Writes into DIR:
#
#   site-ca.key/.pub        issuer of SCI tokens (cats-sma [auth] issuers)
#   sci-ADDR_PORT.key/.pub  each SCI's own key; its token binds it (cnf)
#   sci-ADDR_PORT.token     the SCI's token (cats-sci -K), LIFETIME (24h)
#   scis                    the SCI-ID:CS-ID list, for renew-tokens.sh
#   IF-1.psk EF-1.psk EF-2.psk   forwarder PSKs (cats-fwd --key)
#   cats-bind.key/.pub      the binding manager's signing key (cats-bind
#                           --key; forwarders verify with --peer-keys)
#   sma-site1.psk sma-site2.psk  C-SMA -> C-PS northbound PSKs
#   select.ring             forwarders cats-select trusts (--keys)
#   bind.ring               forwarders cats-bind trusts (--keys)
#   sma.ring                C-SMAs the C-PS ingest trusts
#
# Modes: DIR 0700, secrets 0600, public keys and tokens 0644, all owned by
# the user who runs it.  The systemd units get their secrets through
# LoadCredential=, which reads them as root, so they stay root's.  With
# -u USER (the user cats), DIR is 0750 and of USER's group (its processes
# read the public keys), and the one secret a process of USER reads itself,
# the site agent's northbound PSK (sma-*.psk: cats-sma run by cron has no
# LoadCredential=), is USER's, still 0600: the tools refuse a secret that
# group or others may read.
#
# This is key making, and, with -f over existing keys, key rotation: every
# key is new, so every token, PSK and keyring must be handed out again.
# Without -f it refuses a DIR that holds keys.  Tokens expire (LIFETIME):
# renew them with renew-tokens.sh, which changes nothing else.
set -eu
usage() {
	echo "usage: make-keys.sh [-f] [-e lifetime] [-u user] dir [sci-id:cs-id ...]" >&2
	exit 2
}
force=0 user= life=24h
while getopts fe:u: o; do
	case $o in
	f) force=1 ;;
	e) life=$OPTARG ;;
	u) user=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || usage
dir=$1
shift
[ $# -gt 0 ] || set -- 198.51.100.11:80:S1 198.51.100.12:80:S1 \
	198.51.101.21:80:S1 198.51.101.22:80:S1
if [ -e "$dir/site-ca.key" ] && [ $force = 0 ]; then
	echo "make-keys.sh: $dir holds keys already: -f makes every key anew" \
		"(key rotation: every token and PSK must be handed out again);" \
		"to renew the tokens only, run renew-tokens.sh $dir" >&2
	exit 1
fi
mkdir -p "$dir"
chmod 700 "$dir"
cd "$dir"
umask 077

cats-key gen -n site-ca -o site-ca
: >scis.new
for s in "$@"; do
	cs=${s##*:}
	sci=${s%:*}
	f=sci-$(echo "$sci" | tr ':' '_')
	cats-key gen -n "$sci" -o "$f"
	cats-key token -k site-ca.key -s "$sci" -c "$cs" -p "$f.pub" -e "$life" \
		-o "$f.token"
	echo "$s" >>scis.new
done
mv scis.new scis
for f in IF-1 EF-1 EF-2; do
	cats-key psk -n "$f" -o "$f.psk"
done
cats-key gen -n cats-bind -o cats-bind
for s in sma-site1 sma-site2; do
	cats-key psk -n "$s" -o "$s.psk"
done
cat IF-1.psk >select.ring
cat IF-1.psk EF-1.psk EF-2.psk >bind.ring
cat sma-site1.psk sma-site2.psk >sma.ring
chmod 600 ./*.psk ./*.key ./*.ring
chmod 644 ./*.pub ./*.token scis
if [ -n "$user" ]; then
	chgrp "$(id -gn "$user")" .
	chmod 750 .
	chown "$user" sma-*.psk
fi
