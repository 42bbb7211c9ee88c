#!/bin/sh
# Single-stage debugging on recorded records: every stage of the loop run
# alone, in replay mode (the records' timestamps drive the clock), so the
# same recording always gives the same answers.  See README.md here.
#
#   replay.sh [OUTDIR]        (default: a temporary directory, removed)
#
# The recording is the story of the demo in ten seconds: site1-a gets
# loaded at 3 s and idle again at 9 s, site1-b stops reporting at 3.3 s
# (STALE at 5.3 s, FAILED and withdrawn at 7.3 s); six flows arrive.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ex=$here/..
if [ $# -gt 0 ]; then
	out=$1
	mkdir -p "$out"
else
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi

echo "== 1. cats-sma alone: recorded SCI reports -> metric records (one agent per site)"
for n in 1 2; do
	cats-cbor encode "$here/site$n-reports.jsonl" |
		cats-sma -c "$here/sma-site$n.conf" --replay --until +3s 2>"$out/sma$n.audit" |
		cats-cbor decode >"$out/metrics$n.jsonl"
done
grep -h 'event=state' "$out"/sma*.audit | sed 's/.*csci=\([^ ]*\) .*from=\([A-Z]*\) to=\([A-Z]*\).*/   \1: \2 -> \3/'

echo "== 2. cats-select alone: catalogue, network view, metrics and requests, in time order"
cat "$ex/services.jsonl" "$here/net.jsonl" "$out/metrics1.jsonl" "$out/metrics2.jsonl" \
	"$here/requests.jsonl" | jq -sc 'sort_by(.ts // 0)[]' | cats-cbor encode |
	cats-select --replay --no-auth --seed 1 --stats-at-end 2>"$out/select.err" |
	cats-cbor decode >"$out/select.jsonl"
jq -r 'select(.type == "path-req") |
	"   txn \(.txn) at +\(.decision.ts % 100000 / 1000)s: \(.decision.csci_id) at \(.decision.site), \(.decision.policy), expected \(.decision.cost_us) us"' \
	"$out/select.jsonl"
jq -r 'select(.type == "error") | "   txn \(.txn): \(.code): \(.msg)"' "$out/select.jsonl"
jq -r 'select(.type == "stats") | .counters | to_entries[] |
	select((.key | test("^(reject|fail)_")) and .value > 0) | "   \(.key) = \(.value)"' \
	"$out/select.jsonl"

echo "== 3. cats-pce alone: path requests -> path replies (errors pass through)"
jq -c 'select(.type != "stats")' "$out/select.jsonl" | cats-cbor encode |
	cats-pce -t "$ex/topology.json" --replay | cats-cbor decode >"$out/pce.jsonl"
jq -r 'select(.type == "path-rep") |
	"   txn \(.txn): \(.status) \(.path | join(" > ")) segments \([.segments[].sid] | join(","))"' \
	"$out/pce.jsonl"

echo "== 4. cats-bind alone: path replies -> bindings, errors to the ingress (no forwarders)"
cats-cbor encode "$out/pce.jsonl" |
	cats-bind --replay --commit none --trace "$out/bind.trace" |
	cats-cbor decode >"$out/bind.jsonl"
jq -r 'if .type == "binding" then
	"   binding \(.id) txn \(.txn): \(.fwd.match.src):\(.fwd.match.sport) -> \(.fwd.locator):\(.fwd.port) via \(.egress), srv6 \(.fwd.sids | join(","))"
	elif .type == "metric" then
	"   \(.sma_id): \(.op) \([.entries[].csci_id] | join(",")) (passed on by cats-select: the flows bound to it fail)"
	else "   \(.type) txn \(.txn): \(.code)" end' "$out/bind.jsonl"
echo "   the flow state machine of txn 1001 (all of them: bind.trace):"
grep 'txn=1001 ' "$out/bind.trace" | sed 's/^/     /'
