#!/bin/sh
# Make every key and token a cats deployment like the demo's needs, with
# cats-key.  Nothing here is committed: run it, keep the secrets (mode 0600)
# where only their daemon can read them.
#
#   make-keys.sh DIR [SCI-ID:CS-ID ...]
#
# Default SCIs: the demo's four instances of S1.  Writes into DIR:
#
#   site-ca.key/.pub        issuer of SCI tokens (cats-sma [auth] issuers)
#   sci-ADDR_PORT.key/.pub  each SCI's own key; its token binds it (cnf)
#   sci-ADDR_PORT.token     the SCI's token (cats-sci -K), 24 h
#   IF-1.psk EF-1.psk EF-2.psk   forwarder PSKs (cats-fwd --key)
#   cats-bind.key/.pub      the binding manager's signing key (cats-bind
#                           --key; forwarders verify with --peer-keys)
#   sma-site1.psk sma-site2.psk  C-SMA -> C-PS northbound PSKs
#   select.ring             forwarders cats-select trusts (--keys)
#   bind.ring               forwarders cats-bind trusts (--keys)
#   sma.ring                C-SMAs the C-PS ingest trusts
#
# The tokens live 24 h: run it again (or from cron) before they expire.
set -eu
dir=${1:?usage: make-keys.sh DIR [SCI-ID:CS-ID ...]}
shift
[ $# -gt 0 ] || set -- 198.51.100.11:80:S1 198.51.100.12:80:S1 \
	198.51.101.21:80:S1 198.51.101.22:80:S1
mkdir -p "$dir"
chmod 700 "$dir"
cd "$dir"
umask 077

cats-key gen -n site-ca -o site-ca
for s in "$@"; do
	cs=${s##*:}
	sci=${s%:*}
	f=sci-$(echo "$sci" | tr ':' '_')
	cats-key gen -n "$sci" -o "$f"
	cats-key token -k site-ca.key -s "$sci" -c "$cs" -p "$f.pub" -e 24h \
		-o "$f.token"
done
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
chmod 644 ./*.pub ./*.token
