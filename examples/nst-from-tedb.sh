#!/bin/sh
# The selector's network view from the TE database: one net record of scope
# path (cats-records(5)) per egress, with the delay and hop count of the
# least-delay path from the headend, computed by cats-pce itself.
#
#   nst-from-tedb.sh TOPOLOGY HEADEND EGRESS... > nst.jsonl
#
# They are soft state, as a network monitor's measurements are: each lives
# NST_TTL_MS (default one day) from NST_NOW (default now).  That suits a
# recording or a replay (debug/net.jsonl is this script's output with
# NST_NOW=1767225599000).  A running cats-select should not load them with
# --net: they would expire a day after they were made, and SIGHUP does not
# reload --net.  It computes the same view from the TE database itself with
# --tedb (views that do not age; SIGHUP reloads the file), as
# the [select] section of cps.conf does; or a monitor sends it fresh net records
# on its control stream before they expire.
set -eu
topo=${1:?usage: nst-from-tedb.sh TOPOLOGY HEADEND EGRESS...}
head=${2:?usage: nst-from-tedb.sh TOPOLOGY HEADEND EGRESS...}
shift 2
now=${NST_NOW:-$(date +%s%3N)}
for e in "$@"; do
	printf '{"type":"path-req","txn":1,"ts":%s,"headend":"%s","endpoint":"%s","dataplane":"srv6","constraints":{"metric":"delay"},"decision":{"cs_id":"-","csci_id":"-","locator":"::","egress":"%s","ts":%s}}\n' \
		"$now" "$head" "$e" "$e" "$now"
done | cats-cbor encode | cats-pce -t "$topo" --replay | cats-cbor decode |
	jq -c --argjson ttl "${NST_TTL_MS:-86400000}" 'select(.status == "ok") |
	{type: "net", scope: "path", ts, gen: .gen, source: "tedb", ttl_ms: $ttl,
	 src: .headend, dst: .endpoint, delay_us, hops, up: true}'
