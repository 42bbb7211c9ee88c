#!/usr/bin/env bash
# make demo: the whole cats loop in network namespaces, with a short trace
# of what the control plane decided and why.  Needs root (Debian 12: `make
# demo` installs what is missing and builds first).  Exits 0 when every step
# behaved as described, 1 otherwise (130 after Ctrl-C); everything it made
# is removed at the end, also after a failure or Ctrl-C.  DEMO_KEEP=1 keeps the logs
# ($LOOP_DIR) for a look afterwards.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
export PATH="$BUILD/bin:$PATH"
# The management links (C-SMA -> C-PS ingest) over https with mutual TLS,
# and the forwarders' control channels over tls: with mutual TLS,
# certificates by examples/keys/make-certs.sh; LOOP_TLS= runs them plain
# (the forwarders on unix sockets).
export LOOP_TLS=${LOOP_TLS-1}
. "$TOP/examples/demo/loop_net.bash"
RP_ID=$LOOP_ID
. "$TOP/examples/demo/repair_net.bash"

if [ "$(id -u)" != 0 ]; then
	echo "demo: needs root (network namespaces): sudo make demo" >&2
	exit 1
fi
for t in cats-select cats-pce cats-bind cats-fwd cats-sma cats-sci cats-key cats-cbor; do
	command -v $t >/dev/null || { echo "demo: $t not built: run make demo" >&2; exit 1; }
done
for t in jq curl python3 ip openssl; do
	command -v $t >/dev/null || { echo "demo: $t missing: run make deps" >&2; exit 1; }
done

T0=$(date +%s%3N)
FAILED=0
finish() {
	local rc=$?
	trap - EXIT INT TERM
	[ -n "${DL:-}" ] && kill "$DL" 2>/dev/null
	if [ -n "${DEMO_KEEP:-}" ]; then
		LOOP_KEEP=1
		echo "logs kept in ${LOOP_DIR:-?}"
	fi
	local pids left p
	pids=$(cat "${LOOP_DIR:-/nonexistent}"/pid/* "${RP_DIR:-/nonexistent}"/pid/* 2>/dev/null)
	[ -n "${DEMO_KEEP:-}" ] && RP_KEEP=1 && echo "repair step's logs kept in ${RP_DIR:-?}"
	rp_down
	loop_down
	wait 2>/dev/null
	# Check that nothing is left: namespaces, processes, files, sockets.
	left=$(ip netns list | grep -c "$LOOP_ID\b\|^$RP")
	for p in $pids; do
		kill -0 "$p" 2>/dev/null && left=$((left + 1))
	done
	[ -z "${DEMO_KEEP:-}" ] && [ -e "${LOOP_DIR:-/nonexistent}" ] && left=$((left + 1))
	[ -z "${DEMO_KEEP:-}" ] && [ -e "${RP_DIR:-/nonexistent}" ] && left=$((left + 1))
	[ "$left" = 0 ] || echo "== $left namespaces, processes or files were left behind"
	if [ "$FAILED" = 0 ] && [ "$rc" = 0 ] && [ "$left" = 0 ]; then
		echo "== done: every step behaved as described; nothing left behind"
	else
		echo "== the demo FAILED (see above); everything it made was removed"
		[ "$rc" = 130 ] || rc=1
	fi
	exit $rc
}
trap finish EXIT
trap 'echo; echo "== interrupted"; FAILED=1; exit 130' INT TERM

t() { awk -v n="$(date +%s%3N)" -v t0="$T0" 'BEGIN { printf "%6.1fs", (n - t0) / 1000 }'; }
say() { echo "$(t)  $*"; }
step() { echo; echo "== $*"; }
fail() { echo "$(t)  FAILED: $*"; FAILED=1; exit 1; }
ms() { awk -v u="$1" 'BEGIN { printf "%.1f ms", u / 1000 }'; }

# The C-PS's view: what the site agents advertise, joined with the path
# delay from IF-1 (the selector's network view), ranked as min-latency does.
view() {
	local line name site
	echo "        instance  site   state    health    slots  computing  path    latency"
	loop_cst | while IFS=$'\t' read -r csci state health gas ct; do
		IFS=: read -r name site _ <<<"$(loop_inst "$(loop_name_of "$csci")")"
		d=$(jq -r --arg e "EF-$site" 'select(.dst == $e) | .delay_us' "$LOOP_DIR/nst.jsonl")
		if [ "$state" = HEALTHY ] || [ "$state" = ACTIVE ] && [ "$gas" != 0 ]; then
			lat=$(ms $((d + ct * 1000)))
		else
			lat="(not eligible)"
		fi
		printf '        %-9s site%s  %-8s %-9s %-6s %-10s %-7s %s\n' "$name" "$site" \
			"$state" "$health" "$gas" "${ct:--} ms" "$(ms "$d")" "$lat"
	done
}

# The site agent's audit line of SCI $1 entering state $2, for people.
audit_state() {
	grep "csci=$1 .*to=$2" "$LOOP_DIR/log/sma1.audit" | tail -1 |
		sed 's/.*csci=\([^ ]*\) .*from=\([A-Z]*\) to=\([A-Z]*\) reason=\(.*\)/\1 \2 -> \3 (\4)/'
}

# The control plane's account of the flow from client port $1.
explain() {
	local r=""
	loop_wait 20 test -n "$(loop_reply_of "$1")"
	r=$(loop_reply_of "$1")
	[ -n "$r" ] || { say "   (no decision found for port $1)"; return 1; }
	local txn name
	txn=$(jq -r .txn <<<"$r")
	name=$(loop_name_of "$(jq -r .decision.csci_id <<<"$r")")
	jq -r --arg n "$name" --arg t "$(t)" '"\($t)     txn \(.txn): \(.flow.src):\(.flow.sport) -> \(.flow.dst):\(.flow.dport) = \(.decision.cs_id) -> \($n) (\(.decision.csci_id) at \(.decision.site), egress \(.decision.egress)), \(.decision.policy), expected \(.decision.cost_us / 1000) ms"' <<<"$r"
	jq -r --arg t "$(t)" '"\($t)       path \(.path | join(" > ")), \(.dataplane) segments [\([.segments[].sid] | join(", "))], delay \(.delay_us / 1000) ms"' <<<"$r"
	loop_wait 20 grep -q "txn=$txn .*-> ACTIVE" "$LOOP_DIR/bind.trace"
	local b
	b=$(grep "txn=$txn " "$LOOP_DIR/bind.trace" | awk '{ print $6 }' | paste -sd' ')
	say "     binding $(grep -m1 "txn=$txn " "$LOOP_DIR/bind.trace" | sed 's/.* id=\([0-9]*\).*/\1/'): ABSENT > $(echo "$b" | tr ' ' '\n' | awk '{ printf "%s%s", sep, $0; sep = " > " }')"
	LAST_TXN=$txn
}

curl_best() {
	loop_curl http://203.0.113.100/ || fail "curl: $LOOP_ERR"
	say "\$ curl http://203.0.113.100/  ->  $LOOP_BODY"
	explain "$LOOP_PORT"
}

echo "== cats demo: the whole loop in network namespaces"
echo "   client -> ingress IF-1 (cats-fwd) -> core (Linux, SRv6) -> egress EF-1 (cats-fwd) -> site1: site1-a, site1-b"
echo "                                                           -> egress EF-2 (cats-fwd) -> site2: site2-a, site2-b"
echo "   C-PS: cats-select | cats-pce | cats-bind; per site: cats-sma and one cats-sci per instance"
[ -z "$LOOP_TLS" ] || echo "   management links: each cats-sma to the C-PS's ingest over https, mutual TLS"
[ -z "$LOOP_TLS" ] || echo "   control links: each cats-fwd to cats-select and cats-bind over tls:, mutual TLS"
echo "   service S1 = http://203.0.113.100/; instances report active connections as computing time (+10 ms each) and slots"
step "starting"
loop_up || fail "the loop did not come up"
say "namespaces $LOOP_NS"
loop_wait_ready 200 || fail "the instances were not advertised HEALTHY"
if [ -n "$LOOP_TLS" ]; then
	for n in 1 2; do
		grep -q "event=tls-peer .*subject=\"CN=sma-site$n\".*URI:cats:sma:sma-site$n" \
			"$LOOP_DIR/log/select.audit" ||
			fail "sma-site$n did not reach the C-PS over mutual TLS"
	done
	say "the site agents reach the C-PS over https with mutual TLS (TLS $(sed -n 's/.*event=tls-peer .*version=TLSv\([0-9.]*\).*/\1/p' "$LOOP_DIR/log/select.audit" | tail -1));"
	say "   each certificate names its C-SMA, CS-ID and site (cats:sma:sma-site1, cats:cs:S1, cats:site:site1), which the ingest holds it to"
	# The forwarders' channels: cats-select's audit in select.audit,
	# cats-bind's on cats-cps's stderr.
	loop_wait 100 grep -q 'event=tls-peer .*subject="CN=IF-1"' "$LOOP_DIR/log/select.audit" ||
		fail "IF-1 did not reach cats-select over mutual TLS"
	for f in IF-1 EF-1 EF-2; do
		loop_wait 100 grep -q "event=tls-peer .*subject=\"CN=$f\"" "$LOOP_DIR/log/cps.err" ||
			fail "$f did not reach cats-bind over mutual TLS"
	done
	say "the forwarders reach cats-select (IF-1) and cats-bind (IF-1, EF-1, EF-2) over tls: with mutual TLS, each with its own certificate"
	# A certificate revoked: make-certs.sh -r writes the CRL, SIGHUP to
	# cats-cps makes every stage read it again; the next handshake with it
	# is refused.
	sh "$LOOP_EX/keys/make-certs.sh" -r sma-old "$LOOP_DIR/tls" >/dev/null ||
		fail "make-certs.sh -r failed"
	n=$(grep -c 'event=tls-reloaded' "$LOOP_DIR/log/select.audit")
	kill -HUP "$(cat "$LOOP_DIR/pid/cps")"
	loop_wait 50 sh -c "[ \$(grep -c 'event=tls-reloaded' '$LOOP_DIR/log/select.audit') -gt $n ]" ||
		fail "cats-select did not reload its TLS files"
	if lx "$LS2" curl -s -o /dev/null -m 5 --cacert "$LOOP_DIR/tls/ca.crt" \
		--cert "$LOOP_DIR/tls/sma-old.crt" --key "$LOOP_DIR/tls/sma-old.key" \
		"$(loop_northbound url 2)"; then
		fail "a revoked certificate was taken"
	fi
	loop_wait 50 grep -q 'event=tls-refused .*certificate revoked' "$LOOP_DIR/log/select.audit" ||
		fail "the revoked certificate's refusal was not audited"
	say "a second certificate of site 2 revoked (make-certs.sh -r sma-old, SIGHUP to cats-cps): refused at the handshake:"
	say "   $(grep 'event=tls-refused .*certificate revoked' "$LOOP_DIR/log/select.audit" | tail -1 | sed 's/.*event=tls-refused //')"
fi
say "every instance is advertised HEALTHY; the C-PS's view (latency = path delay + computing time):"
view

step "1. curl to the service address is answered by the best instance"
curl_best
[ "$LOOP_BODY" = site1-a ] || fail "expected site1-a, the lowest latency"

step "2. load on site1-a: a long download there; new flows go elsewhere, the download stays"
lx "$LC" curl -sS -m 60 -o "$LOOP_DIR/download" -D "$LOOP_DIR/download.h" \
	-w '%{local_port}' "http://203.0.113.100/big?mb=16" >"$LOOP_DIR/download.port" &
DL=$!
loop_wait 50 test -s "$LOOP_DIR/download.h" || fail "the download did not start"
DLPORT=$(lx "$LC" ss -Htn state established dst 203.0.113.100 | awk '{ split($3, a, ":"); print a[2] }' | head -1)
say "\$ curl http://203.0.113.100/big?mb=16 &  (16 MiB at about 1 MiB/s)  ->  $(sed -n 's/^X-Instance: *//Ip' "$LOOP_DIR/download.h" | tr -d '\r')"
[ -n "$DLPORT" ] && explain "$DLPORT"
DLTXN=${LAST_TXN:-}
loop_wait 80 loop_ct_is 198.51.100.11:80 13 || fail "site1-a's load was not advertised"
say "site1-a's SCI now reports 1 active connection; the C-PS's view:"
view
curl_best
[ "$LOOP_BODY" = site1-b ] || fail "expected site1-b while site1-a is loaded"
curl_best
[ "$LOOP_BODY" = site1-b ] || fail "expected site1-b while site1-a is loaded"
kill -0 "$DL" 2>/dev/null || fail "the download ended early"
say "the download still runs on site1-a ($(du -k "$LOOP_DIR/download" | cut -f1) KiB so far): an established flow is never moved"

step "3. site1-b is killed (the instance and its SCI): STALE, FAILED, withdrawn, avoided"
loop_instance_kill site1-b
say "killed site1-b"
loop_wait 100 loop_cst_is 198.51.100.12:80 STALE || fail "site1-b did not go STALE"
say "sma-site1: $(audit_state 198.51.100.12:80 STALE)"
say "   the C-PS does not select a STALE instance:"
curl_best
[ "$LOOP_BODY" != site1-b ] || fail "a new flow went to a STALE instance"
loop_wait 100 loop_cst_is 198.51.100.12:80 FAILED || fail "site1-b did not go FAILED"
say "sma-site1: $(audit_state 198.51.100.12:80 FAILED)"
say "sma-site1: $(loop_metrics | jq -r 'select(.op == "withdraw") | "withdraw \(.entries | map(.csci_id) | join(",")) (reason \(.reason))"' | tail -1)"
view
for i in 1 2 3; do
	curl_best
	[ "$LOOP_BODY" != site1-b ] || fail "a new flow went to the dead instance"
done
say "waiting for the download on site1-a to finish"
wait "$DL" || fail "the download failed"
DL=
size=$(stat -c %s "$LOOP_DIR/download")
first=$(head -c 64 "$LOOP_DIR/download" | head -1)
[ "$size" = $((16 << 20)) ] && [ "$first" = site1-a ] ||
	fail "the download is $size bytes from $first"
say "download complete: $size bytes, all from $first"
for f in IF-1 EF-1; do
	loop_fwd_counters "$f" "$DLTXN" | jq -r --arg t "$(t)" --arg f "$f" '"\($t)     \($f), binding \(.id) (txn \(.txn)): \(.pkts) packets toward the instance, \(.rev_pkts) packets, \(.rev_bytes) bytes back"'
done

step "4. a request for an unknown service fails closed"
if loop_curl http://203.0.113.99/; then
	fail "a connection to an unknown service was made"
fi
say "\$ curl http://203.0.113.99/  ->  $LOOP_ERR"
loop_wait 20 test -n "$(loop_error_to 203.0.113.99)"
loop_error_to 203.0.113.99 | jq -r --arg t "$(t)" '"\($t)     txn \(.txn): error \(.code) from \(.stage): \(.msg); sent to \(.ingress)"'
loop_modeb S9 203.0.113.99 7100 hello
loop_wait 30 sh -c "cats-cbor decode '$LOOP_DIR/bind.cbor' | grep -q unknown-cs-id" ||
	fail "no error for the unknown CS-ID"
say "\$ a UDP datagram naming CS-ID S9 in a Mode B envelope  ->  dropped at the ingress"
loop_bindout | jq -r --arg t "$(t)" 'select(.code == "unknown-cs-id") | "\($t)     txn \(.txn): error \(.code) from \(.stage): \(.msg)"' | tail -1
p=$(loop_counter IF-1 pending)
e=$(loop_counter IF-1 drop_pending_error)
say "ingress IF-1: $p pending flows; packets released by an error: $e; no binding was made"
[ "$p" = 0 ] || fail "the ingress still holds pending flows"

step "5. a link of a flow's path goes down: the C-PS repairs the path, same instance, the transfer completes"
# A network of its own (examples/demo/repair_net.bash): a TE path pinned
# over the link P1-P2, the routers' own routes going P1 P3 P2.
rp_up --no-path-down || fail "the repair network did not come up"
say "a second network: IF-1 - P1 = P2 - EF-1, and P1 - P3 - P2 (Linux routers, SRv6)"
rp_client_bg
loop_wait 100 test -f "$RP_DIR/half" || fail "the transfer did not start"
rp_flow_binding | jq -r --arg t "$(t)" '"\($t)  a 4 MB upload to \(.csci_id): binding \(.id) version \(.version), path \(.path | join(" ")), SIDs \(.fwd.sids | join(" "))"'
n0=$(rp_snmp6 1 Ip6InNoRoutes)
rp_link_down
touch "$RP_DIR/go"
say "\$ ip link set a1 down (P1), ip link set b0 down (P2): the TE link P1-P2 is gone"
loop_wait 50 sh -c "[ \$(ip netns exec ${RP}1 awk '\$1 == \"Ip6InNoRoutes\" { print \$2 }' /proc/net/snmp6) -gt $n0 ]" ||
	fail "the flow did not reach the broken link"
say "P1 has no route for its adjacency SID: the upload stalls"
rp_net_record
say "the C-PS is told: {type: net, scope: link, src: P1, dst: P2, up: false}"
loop_wait 100 rp_on_path '["IF-1","P1","P3","P2","EF-1"]' || fail "no repaired path"
rp_flow_binding | jq -r --arg t "$(t)" '"\($t)  repaired: binding \(.id) version \(.version) (\(.op)), same instance \(.csci_id), path \(.path | join(" ")), SIDs \(.fwd.sids | join(" "))"'
loop_wait 150 test -s "$RP_DIR/got" || fail "the upload did not complete"
wait "$RP_CLIENT"
[ "$(cat "$RP_DIR/got")" = "$(cat "$RP_DIR/want")" ] || fail "the instance got other bytes"
say "upload complete: the instance's SHA-256 of the 4 MB is the client's"
rp_down

step "teardown"
