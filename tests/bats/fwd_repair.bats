#!/usr/bin/env bats
# A path repaired under a running TCP transfer (examples/demo/repair_net.bash):
# real cats-fwd forwarders, cats-cps, and Linux routers with SRv6 SIDs, in
# namespaces of the test's own.  The TE path IF-1 P1 P2 EF-1 is pinned by
# P1's adjacency SID over the TE link P1-P2; taking that link down (both
# ends) leaves P1 no route for the SID and the flow stalls until the C-PS
# gives it the path over P3, to the same instance, as a new binding
# version.  The C-PS is told by a net record, or only by P1's ICMP errors:
# the ingress's path-down names the unreachable SID and cats-pce's repair
# avoids it.

load helper

setup() {
	need_root
	RP_ID=$$
	. "$TOP/examples/demo/repair_net.bash"
}

teardown() {
	[ "$(id -u)" = 0 ] || return 0
	rp_down
}

no_routes_above() { [ "$(rp_snmp6 1 Ip6InNoRoutes)" -gt "$1" ]; }

# The transfer up to its first half over the TE link, then that link down
# and the flow stalled at P1.
transfer_until_down() {
	rp_client_bg
	wait_for 100 test -f "$RP_DIR/half"
	wait_for 50 rp_on_path '["IF-1","P1","P2","EF-1"]'
	V1=$(rp_flow_binding | jq .version)
	CSCI=$(rp_flow_binding | jq -r .csci_id)
	[ "$CSCI" = 198.51.100.11:80 ]
	P3RX=$(rp_rx_bytes 3 c0)
	n0=$(rp_snmp6 1 Ip6InNoRoutes)
	rp_link_down
	touch "$RP_DIR/go"
	# P1 has no route for its adjacency SID any more: the flow stalls.
	wait_for 50 no_routes_above "$n0"
}

# The transfer ends, whole, over P3, on the same instance, a new version.
transfer_repaired() {
	wait_progress 150 "cat '$RP_DIR/got' 2>/dev/null; rp_rx_bytes 3 c0" \
	    test -s "$RP_DIR/got"
	wait "$RP_CLIENT"
	[ "$(cat "$RP_DIR/got")" = "$(cat "$RP_DIR/want")" ]
	rp_on_path '["IF-1","P1","P3","P2","EF-1"]'
	rp_flow_binding | jq -e --arg c "$CSCI" --argjson v "$V1" \
	    '.op == "refresh" and .csci_id == $c and .version > $v'
	# The second half went over P3 (2 MB and more through it).
	[ $(($(rp_rx_bytes 3 c0) - P3RX)) -gt 2000000 ]
}

# The service's counters (a stats record on SIGUSR1) satisfy jq filter $1.
cps_counters() {
	kill -USR1 "$(cat "$RP_DIR/pid/cps")"
	wait_for 50 sh -c "cats-cbor decode '$RP_DIR/stats.cbor' | jq -se 'any(.[]; .counters | $1)'"
}

@test "fwd repair: a net record takes the TE link of a TCP transfer's path down: cats-cps re-paths it over P3, same instance, and the transfer completes whole" {
	rp_up --no-path-down
	transfer_until_down
	rp_net_record
	transfer_repaired
	cps_counters '.["bind.net.repairs"] >= 1'
}

@test "fwd repair: the same link down told only by P1's ICMP errors: the ingress's path-down names the unreachable adjacency SID, the repair avoids it, the transfer completes whole" {
	rp_up
	transfer_until_down
	transfer_repaired
	# The repair was the path-down's (no net record): cats-pce kept the
	# TE link up and left it out of this one request.
	cps_counters '.["bind.repaired"] >= 1 and .["bind.net.repairs"] == 0'
}
