#!/bin/bash
# Single-stage debugging on recorded records: every stage of the loop run
# alone, in replay mode (the records' timestamps drive the clock), so the
# same recording always gives the same answers.  See README.md here.
#
#   replay.sh [OUTDIR]        (default: a temporary directory, removed)
#
# The recording is the story of the demo in ten seconds: site1-a gets
# loaded at 3 s and idle again at 9 s, site1-b stops reporting at 3.3 s
# (STALE at 5.3 s, FAILED and withdrawn at 7.3 s); six flows arrive.
#
# Every stage's output is kept in OUTDIR: metrics1.jsonl, metrics2.jsonl
# (the site agents), select.jsonl (cats-select, with its stats record),
# path-req.jsonl and path-rep.jsonl (what cats-pce reads and writes: the
# files of the same names here are these), bind.jsonl and bind.trace
# (cats-bind).  Any stage that fails, and any jq filter that meets a
# record it does not expect, stops the run with a message and exit 1.
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
ex=$here/..
if [ $# -gt 0 ]; then
	out=$1
	mkdir -p "$out"
else
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
fi

# jq that fails on any error: jq 1.6 exits 0 when an error is not on the
# last input.
q() {
	jq "$@" 2>"$out/jq.err" && [ ! -s "$out/jq.err" ] || {
		echo "replay.sh: jq $1:" >&2
		cat "$out/jq.err" >&2
		exit 1
	}
}
trap 'echo "replay.sh: stopped at line $LINENO (exit $?)" >&2' ERR

echo "== 1. cats-sma alone: recorded SCI reports -> metric records (one agent per site)"
for n in 1 2; do
	cats-cbor encode "$here/site$n-reports.jsonl" |
		cats-sma -c "$here/sma-site$n.conf" --replay --until +3s 2>"$out/sma$n.audit" |
		cats-cbor decode >"$out/metrics$n.jsonl"
done
grep -h 'event=state' "$out"/sma*.audit | sed 's/.*csci=\([^ ]*\) .*from=\([A-Z]*\) to=\([A-Z]*\).*/   \1: \2 -> \3/'

echo "== 2. cats-select alone: catalogue, network view, metrics and requests, in time order"
cat "$ex/services.jsonl" "$here/net.jsonl" "$out/metrics1.jsonl" "$out/metrics2.jsonl" \
	"$here/requests.jsonl" | q -sc 'sort_by(.ts // 0)[]' | cats-cbor encode |
	cats-select --replay --no-auth --seed 1 --stats-at-end 2>"$out/select.err" |
	cats-cbor decode >"$out/select.jsonl"
q -c 'select(.type != "stats")' "$out/select.jsonl" >"$out/path-req.jsonl"
q -r 'select(.type == "path-req") |
	"   txn \(.txn) at +\(.decision.ts % 100000 / 1000)s: \(.decision.csci_id) at \(.decision.site), \(.decision.policy), expected \(.decision.cost_us) us"' \
	"$out/select.jsonl"
q -r 'select(.type == "error") | "   txn \(.txn): \(.code): \(.msg)"' "$out/select.jsonl"
q -r 'select(.type == "stats") | .counters | to_entries[] |
	select((.key | test("^(reject|fail)_")) and .value > 0) | "   \(.key) = \(.value)"' \
	"$out/select.jsonl"

echo "== 3. cats-pce alone: path requests -> path replies (errors pass through)"
cats-cbor encode "$out/path-req.jsonl" |
	cats-pce -t "$ex/topology.json" --replay | cats-cbor decode >"$out/path-rep.jsonl"
q -r 'select(.type == "path-rep") |
	"   txn \(.txn): \(.status) \(.path | join(" > ")) segments \([.segments[].sid] | join(","))"' \
	"$out/path-rep.jsonl"

echo "== 4. cats-bind alone: path replies -> bindings, errors to the ingress (no forwarders)"
>"$out/bind.trace"
cats-cbor encode "$out/path-rep.jsonl" |
	cats-bind --replay --commit none --trace "$out/bind.trace" |
	cats-cbor decode >"$out/bind.jsonl"
q -r 'if .type == "binding" and .op == "install" then
	"   binding \(.id) txn \(.txn): \(.fwd.match.src):\(.fwd.match.sport) -> \(.fwd.locator):\(.fwd.port) via \(.egress), srv6 \(.fwd.sids | join(","))"
	elif .type == "binding" then
	"   binding \(.id) txn \(.txn): \(.op) (\(.reason))"
	elif .type == "metric" then
	"   \(.sma_id): \(.op) \([.entries[].csci_id] | join(",")) (passed on by cats-select: the flows bound to it fail)"
	elif .type == "error" then "   error txn \(.txn): \(.code)"
	else error("a record replay.sh does not expect: \(.type)") end' "$out/bind.jsonl"
echo "   the flow state machine of txn 1001 (all of them: bind.trace):"
grep 'txn=1001 ' "$out/bind.trace" | sed 's/^/     /'
