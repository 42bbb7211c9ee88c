#!/bin/sh
# Make the TLS certificates of a cats deployment with openssl: a small CA,
# and one certificate for each NAME (a tool, a forwarder, an SCI), good as
# a server's and as a client's (--tls-cert/--tls-key of every tool), with
# the CA file and a CRL every tool checks its peers against (--tls-ca,
# --tls-crl).
#
#   make-certs.sh [-d DAYS] DIR [NAME[=SAN,...] ...]
#   make-certs.sh -r NAME DIR       revoke NAME's certificate, new CRL
#
# Default NAMEs: cats-sma cats-select cats-pce cats-bind cats-sci IF-1 EF-1
# EF-2.  Each certificate's subject is CN=NAME, and its subjectAltName
# DNS:NAME, DNS:localhost, IP:127.0.0.1, IP:::1 and the SAN entries given
# after '=' (URI:..., DNS:..., IP:...; an SCI's is its CSCI-ID, e.g.
# sci1=URI:cats:sci:198.51.100.11:80; a C-SMA's its name and what it may
# report, e.g. sma-a=URI:cats:sma:sma-a,URI:cats:cs:ARS, cats-select(1)).
# Writes into DIR:
#
#   ca.crt ca.key      the CA (ca.key stays here, 0600)
#   crl.pem            its CRL (renewed by every run; DAYS valid)
#   NAME.crt NAME.key  a certificate (DAYS, 825 by default) and its key
#
# Running it again makes only what is missing: the CA, the keys and the
# certificates that exist are kept (no rotation; to renew one, remove its
# .crt and .key first, or revoke it with -r), and the CRL is made anew.
# After -r, every tool that loaded crl.pem reads it again on SIGHUP.
set -eu
usage() {
	echo "usage: make-certs.sh [-d days] [-r name] dir [name[=san,...] ...]" >&2
	exit 2
}
days=825 revoke=
while getopts d:r: o; do
	case $o in
	d) days=$OPTARG ;;
	r) revoke=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || usage
dir=$1
shift
[ $# -gt 0 ] || set -- cats-sma cats-select cats-pce cats-bind cats-sci \
	IF-1 EF-1 EF-2
mkdir -p "$dir"
cd "$dir"
umask 077
cat >ca.cnf <<EOF
[ca]
default_ca = cats
[cats]
dir = .
database = ca.db
new_certs_dir = .
serial = ca.serial
crlnumber = ca.crlnumber
certificate = ca.crt
private_key = ca.key
default_md = sha256
default_days = $days
default_crl_days = $days
policy = any
copy_extensions = copy
unique_subject = no
[any]
commonName = supplied
[leaf]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth,clientAuth
EOF
[ -e ca.db ] || : >ca.db
[ -e ca.serial ] || echo 1000 >ca.serial
[ -e ca.crlnumber ] || echo 1000 >ca.crlnumber
if [ ! -e ca.crt ]; then
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=cats CA" \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
fi
if [ -n "$revoke" ]; then
	[ -e "$revoke.crt" ] || { echo "make-certs.sh: no $revoke.crt" >&2; exit 1; }
	openssl ca -config ca.cnf -batch -revoke "$revoke.crt" 2>/dev/null
else
	for s in "$@"; do
		n=${s%%=*}
		extra=
		[ "$n" = "$s" ] || extra=,${s#*=}
		[ -e "$n.crt" ] && continue
		openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
			-nodes -keyout "$n.key" -out "$n.csr" -subj "/CN=$n" \
			-addext "subjectAltName=DNS:$n,DNS:localhost,IP:127.0.0.1,IP:::1$extra" \
			2>/dev/null
		openssl ca -config ca.cnf -batch -notext -extensions leaf \
			-in "$n.csr" -out "$n.crt" 2>/dev/null
		rm -f "$n.csr" ./[0-9A-F]*.pem
	done
fi
openssl ca -config ca.cnf -gencrl -out crl.pem 2>/dev/null
rm -f ./[0-9A-F]*.pem
chmod 600 ./*.key
chmod 644 ./*.crt crl.pem
