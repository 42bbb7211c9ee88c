#!/bin/sh
# Rebuild man/cats-records.5 from its template and the schema.
top=$(cd "$(dirname "$0")/.." && pwd)
sh "$top/man/records.sh" > "$top/man/.schema.tmp" || exit 1
awk -v f="$top/man/.schema.tmp" '/^@SCHEMA@$/ { while ((getline l < f) > 0) print l; next } { print }' \
	"$top/man/cats-records.5.in" > "$top/man/cats-records.5"
rm -f "$top/man/.schema.tmp"
