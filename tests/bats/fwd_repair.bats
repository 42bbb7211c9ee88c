#!/usr/bin/env bats
# A path repaired under a running TCP transfer: real cats-fwd forwarders,
# cats-cps, and Linux routers with SRv6 SIDs, in namespaces of the test's
# own (tests/data/repair/topology.json):
#
#   client --c0/i0-- IF-1 --i1/a0-- P1 ==a1/b0 (TE link)== P2 --b2/e1-- EF-1 --e2/s0-- server
#   192.0.2.10       cats-fwd        \--a2/c0-- P3 --c1/b1--/            cats-fwd   198.51.100.11
#
# The routers' routes are the IGP's (P1 P3 P2: P1-P2 has a high IGP
# metric); the TE path IF-1 P1 P2 EF-1 is pinned by P1's adjacency SID
# (End.X over a1).  Taking the P1-P2 link down (both ends) leaves P1 no
# route for that SID: the flow stalls until the C-PS gives it the path
# over P3, to the same instance, as a new binding version.  The C-PS is
# told by a net record, or only by P1's ICMP errors: the ingress's
# path-down names the unreachable SID and cats-pce's repair avoids it.

load helper

setup() {
	need_root
	R=rp$$
	NSS="${R}c ${R}i ${R}1 ${R}2 ${R}3 ${R}e ${R}s"
	T=$(mktemp -d /tmp/fwd-repair.XXXXXX)
	TOPO=$DATA/repair/topology.json
	net_up
}

teardown() {
	[ "$(id -u)" = 0 ] || return 0
	stop_pids
	for n in $NSS; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$n" 2>/dev/null
	done
	rm -rf "$T"
	true
}

x() { local n=$1; shift; ip netns exec "$R$n" "$@"; }
mac() { x "$1" cat "/sys/class/net/$2/address"; }

net_up() {
	local n
	for n in $NSS; do
		ip netns add "$n"
		ip netns exec "$n" ip link set lo up
	done
	ip link add c0 netns "${R}c" type veth peer name i0 netns "${R}i"
	ip link add i1 netns "${R}i" type veth peer name a0 netns "${R}1"
	ip link add a1 netns "${R}1" type veth peer name b0 netns "${R}2"
	ip link add a2 netns "${R}1" type veth peer name c0 netns "${R}3"
	ip link add c1 netns "${R}3" type veth peer name b1 netns "${R}2"
	ip link add b2 netns "${R}2" type veth peer name e1 netns "${R}e"
	ip link add e2 netns "${R}e" type veth peer name s0 netns "${R}s"
	x c ip addr add 192.0.2.10/24 dev c0
	x i ip addr add 192.0.2.1/24 dev i0
	x i ip addr add 2001:db8:f0::1/64 dev i1 nodad
	x 1 ip addr add 2001:db8:f0::2/64 dev a0 nodad
	x 1 ip addr add 2001:db8:12::1/64 dev a1 nodad
	x 1 ip addr add 2001:db8:13::1/64 dev a2 nodad
	x 2 ip addr add 2001:db8:12::2/64 dev b0 nodad
	x 2 ip addr add 2001:db8:32::2/64 dev b1 nodad
	x 2 ip addr add 2001:db8:f1::1/64 dev b2 nodad
	x 3 ip addr add 2001:db8:13::3/64 dev c0 nodad
	x 3 ip addr add 2001:db8:32::3/64 dev c1 nodad
	x e ip addr add 2001:db8:f1::2/64 dev e1 nodad
	x e ip addr add 198.51.100.1/24 dev e2
	x s ip addr add 198.51.100.11/24 dev s0
	# The core's MTU leaves room for three SIDs (the access links' 1500
	# plus 96 bytes of encapsulation).
	for n in "i i1" "1 a0" "1 a1" "1 a2" "2 b0" "2 b1" "2 b2" "3 c0" \
	    "3 c1" "e e1"; do
		set -- $n
		x "$1" ip link set "$2" mtu 1600
	done
	for n in "c c0" "i i0" "i i1" "1 a0" "1 a1" "1 a2" "2 b0" "2 b1" \
	    "2 b2" "3 c0" "3 c1" "e e1" "e e2" "s s0"; do
		set -- $n
		x "$1" ip link set "$2" up
	done
	x c ip route add default via 192.0.2.1
	x s ip route add default via 198.51.100.1
	for n in i e; do
		x $n sysctl -qw net.ipv4.ip_forward=0
		x $n sysctl -qw net.ipv6.conf.all.forwarding=0
	done
	for n in 1 2 3; do
		x $n sysctl -qw net.ipv6.conf.all.forwarding=1
		x $n sysctl -qw net.ipv6.conf.all.seg6_enabled=1
		for d in $(x $n ls /sys/class/net); do
			x $n sysctl -qw "net.ipv6.conf.$d.seg6_enabled=1"
		done
	done
	# The IGP's routes: P1 P3 P2 between P1 and P2; locators /48.
	x 1 ip -6 route add 2001:db8:1::/48 via 2001:db8:f0::1 dev a0
	x 1 ip -6 route add 2001:db8:a3::/48 via 2001:db8:13::3 dev a2
	x 1 ip -6 route add 2001:db8:a2::/48 via 2001:db8:13::3 dev a2
	x 1 ip -6 route add 2001:db8:2::/48 via 2001:db8:13::3 dev a2
	x 3 ip -6 route add 2001:db8:1::/48 via 2001:db8:13::1 dev c0
	x 3 ip -6 route add 2001:db8:a1::/48 via 2001:db8:13::1 dev c0
	x 3 ip -6 route add 2001:db8:a2::/48 via 2001:db8:32::2 dev c1
	x 3 ip -6 route add 2001:db8:2::/48 via 2001:db8:32::2 dev c1
	x 2 ip -6 route add 2001:db8:2::/48 via 2001:db8:f1::2 dev b2
	x 2 ip -6 route add 2001:db8:1::/48 via 2001:db8:32::3 dev b1
	x 2 ip -6 route add 2001:db8:a1::/48 via 2001:db8:32::3 dev b1
	x 2 ip -6 route add 2001:db8:a3::/48 via 2001:db8:32::3 dev b1
	# The SIDs: End at each router, End.X of P1 over the TE link.
	x 1 ip -6 route add 2001:db8:a1::1/128 encap seg6local action End dev a0
	x 1 ip -6 route add 2001:db8:a1::12/128 encap seg6local action End.X \
		nh6 2001:db8:12::2 dev a1
	x 2 ip -6 route add 2001:db8:a2::1/128 encap seg6local action End dev b1
	x 3 ip -6 route add 2001:db8:a3::1/128 encap seg6local action End dev c0
	# Neighbours known up front (cats-fwd sends to fixed peers, and the
	# routers' next hops need no discovery).
	x c ip neigh replace 192.0.2.1 lladdr "$(mac i i0)" dev c0
	x s ip neigh replace 198.51.100.1 lladdr "$(mac e e2)" dev s0
	x 1 ip -6 neigh replace 2001:db8:f0::1 lladdr "$(mac i i1)" dev a0
	x 1 ip -6 neigh replace 2001:db8:12::2 lladdr "$(mac 2 b0)" dev a1
	x 1 ip -6 neigh replace 2001:db8:13::3 lladdr "$(mac 3 c0)" dev a2
	x 3 ip -6 neigh replace 2001:db8:13::1 lladdr "$(mac 1 a2)" dev c0
	x 3 ip -6 neigh replace 2001:db8:32::2 lladdr "$(mac 2 b1)" dev c1
	x 2 ip -6 neigh replace 2001:db8:32::3 lladdr "$(mac 3 c1)" dev b1
	x 2 ip -6 neigh replace 2001:db8:f1::2 lladdr "$(mac e e1)" dev b2
}

# The C-PS (in the test's own namespace: the forwarders reach it on unix
# sockets), its control input on a fifo held open.
cps_up() {
	sh "$TOP/examples/nst-from-tedb.sh" "$TOPO" IF-1 EF-1 >"$T/nst.jsonl"
	cat >"$T/cps.conf" <<EOF
id = cps-repair
stats-to = file:$T/stats.cbor
[select]
no-auth =
services = $TOP/examples/services.jsonl
net = $T/nst.jsonl
listen = unix:$T/select.sock
[pce]
t = $TOPO
[bind]
listen = unix:$T/bind.sock
EOF
	mkfifo "$T/in"
	sleep 1000 >"$T/in" &
	PIDS+=($!)
	cats-cps -c "$T/cps.conf" <"$T/in" >"$T/out.cbor" 2>"$T/cps.err" &
	CPS=$!
	PIDS+=($!)
	wait_for 50 test -S "$T/select.sock"
	wait_for 50 test -S "$T/bind.sock"
	s1_metric >"$T/in"
}

# The forwarders; extra options go to the ingress.
fwd_up() {
	bg x e cats-fwd --id EF-1 -v \
		--core "af_packet:e1,peer=$(mac 2 b2)" \
		--site "af_packet:e2,peer=$(mac s s0)" \
		--src6 2001:db8:2::1 --sid 2001:db8:2::1 --owns 198.51.100.0/24 \
		--return IF-1=2001:db8:1::1 --bind "unix:$T/bind.sock" \
		--ring-frames 256 2>"$T/EF-1.err"
	bg x i cats-fwd --id IF-1 -v \
		--client "af_packet:i0,peer=$(mac c c0)" \
		--core "af_packet:i1,peer=$(mac 1 a0)" \
		--src6 2001:db8:1::1 --sid 2001:db8:1::1 --src4 192.0.2.1 \
		--service S1=203.0.113.100 --select "unix:$T/select.sock" \
		--bind "unix:$T/bind.sock" --ring-frames 256 "$@" 2>"$T/IF-1.err"
	wait_for 50 grep -q forwarding "$T/EF-1.err"
	wait_for 50 grep -q forwarding "$T/IF-1.err"
	wait_for 50 grep -q "forwarder IF-1 connected" "$T/cps.err"
	wait_for 50 grep -q "forwarder EF-1 connected" "$T/cps.err"
}

# The instance: one TCP connection on 198.51.100.11:80, the SHA-256 of
# what it received written to $T/got once the client closed.
server_up() {
	bg x s python3 -c 'import hashlib, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.51.100.11", 80))
s.listen(1)
c, _ = s.accept()
h = hashlib.sha256()
while True:
    b = c.recv(65536)
    if not b:
        break
    h.update(b)
open(sys.argv[1], "w").write(h.hexdigest() + "\n")' "$T/got"
	wait_for 50 sh -c "ip netns exec ${R}s ss -Hltn 'sport = :80' | grep -q ."
}

# The client: $T/data to the service address in two halves; after the
# first it writes $T/half and waits for $T/go.  Its port in $T/port.
client_bg() {
	head -c 4000000 /dev/urandom >"$T/data"
	sha256sum <"$T/data" | cut -d' ' -f1 >"$T/want"
	bg x c timeout 60 python3 -c 'import os, socket, sys, time
d = open(sys.argv[1], "rb").read()
s = socket.create_connection(("203.0.113.100", 80), 5)
s.settimeout(50)
open(sys.argv[2] + "/port", "w").write("%d\n" % s.getsockname()[1])
s.sendall(d[:len(d) // 2])
open(sys.argv[2] + "/half", "w").close()
while not os.path.exists(sys.argv[2] + "/go"):
    time.sleep(0.02)
s.sendall(d[len(d) // 2:])
s.close()' "$T/data" "$T"
	CLIENT=$LAST
}

out() { cats-cbor decode "$T/out.cbor" 2>/dev/null; }
# The last binding record of the client's flow that has a path.
flow_binding() {
	out | jq -c --argjson p "$(cat "$T/port")" 'select(.type == "binding"
	    and .fwd.match.sport == $p and .path != null)' | tail -1
}
on_path() { flow_binding | jq -e --argjson w "$1" '.path == $w' >/dev/null; }
snmp6() { x "$1" awk -v k="$2" '$1 == k { print $2 }' /proc/net/snmp6; }
no_routes_above() { [ "$(snmp6 1 Ip6InNoRoutes)" -gt "$1" ]; }
rx_bytes() { x "$1" cat "/sys/class/net/$2/statistics/rx_bytes"; }

# The transfer up to its first half over the TE link, then that link down
# (both ends) and the flow stalled at P1; $1 says how the C-PS is told.
transfer_until_down() {
	client_bg
	wait_for 100 test -f "$T/half"
	wait_for 50 on_path '["IF-1","P1","P2","EF-1"]'
	V1=$(flow_binding | jq .version)
	CSCI=$(flow_binding | jq -r .csci_id)
	[ "$CSCI" = 198.51.100.11:80 ]
	P3RX=$(rx_bytes 3 c0)
	n0=$(snmp6 1 Ip6InNoRoutes)
	x 1 ip link set a1 down
	x 2 ip link set b0 down
	touch "$T/go"
	# P1 has no route for its adjacency SID any more: the flow stalls.
	wait_for 50 no_routes_above "$n0"
}

# The transfer ends, whole, over P3, on the same instance, a new version.
transfer_repaired() {
	wait_progress 150 "cat '$T/got' 2>/dev/null; rx_bytes 3 c0" test -s "$T/got"
	wait "$CLIENT"
	[ "$(cat "$T/got")" = "$(cat "$T/want")" ]
	on_path '["IF-1","P1","P3","P2","EF-1"]'
	flow_binding | jq -e --arg c "$CSCI" --argjson v "$V1" \
	    '.op == "refresh" and .csci_id == $c and .version > $v'
	# The second half went over P3 (2 MB and more through it).
	[ $(($(rx_bytes 3 c0) - P3RX)) -gt 2000000 ]
}

@test "fwd repair: a net record takes the TE link of a TCP transfer's path down: cats-cps re-paths it over P3, same instance, and the transfer completes whole" {
	cps_up
	fwd_up --no-path-down
	server_up
	transfer_until_down
	jq -nc --argjson now "$(date +%s%3N)" '{type: "net", scope: "link",
	    ts: $now, src: "P1", dst: "P2", up: false}' | cats-cbor encode >"$T/in"
	transfer_repaired
	kill -USR1 "$CPS"
	wait_for 50 sh -c "cats-cbor decode '$T/stats.cbor' | jq -se 'any(.[]; .counters[\"bind.net.repairs\"] >= 1)'"
}

@test "fwd repair: the same link down told only by P1's ICMP errors: the ingress's path-down names the unreachable adjacency SID, the repair avoids it, the transfer completes whole" {
	cps_up
	fwd_up
	server_up
	transfer_until_down
	transfer_repaired
	# The repair was the path-down's (no net record): cats-pce kept the
	# TE link up and left it out of this one request.
	kill -USR1 "$CPS"
	wait_for 50 sh -c "cats-cbor decode '$T/stats.cbor' | jq -se 'any(.[]; .counters[\"bind.repaired\"] >= 1)'"
	cats-cbor decode "$T/stats.cbor" | tail -1 | jq -e '.counters |
	    .["bind.net.repairs"] == 0 and .["bind.repaired"] >= 1'
}
