# repair_net.bash - a path repaired under a running TCP transfer, in
# network namespaces: the harness of the repair step of `make demo`
# (examples/demo/demo.sh) and of tests/bats/fwd_repair.bats.
#
#   client --c0/i0-- IF-1 --i1/a0-- P1 ==a1/b0 (TE link)== P2 --b2/e1-- EF-1 --e2/s0-- server
#   192.0.2.10       cats-fwd        \--a2/c0-- P3 --c1/b1--/            cats-fwd   198.51.100.11
#
# The TE database is examples/demo/repair-topology.json.  The routers are
# Linux kernels with SRv6 End SIDs (P1 also an End.X over the TE link);
# their routes are the IGP's, which goes P1 P3 P2 (P1-P2 has a high IGP
# metric and a low TE metric).  The TE path IF-1 P1 P2 EF-1 is pinned by
# P1's adjacency SID, so with the P1-P2 link down (both ends) P1 has no
# route for that SID and the flow stalls until the C-PS gives it the path
# over P3 (the egress's SID alone), to the same instance, as a new binding
# version.  The C-PS is one cats-cps (its control input on the fifo in,
# its output in out.cbor, both in $RP_DIR); the forwarders reach it on
# unix sockets.  Service S1 (examples/services.jsonl) is 203.0.113.100:80;
# its instance 198.51.100.11:80 is a small receiver that writes the
# SHA-256 of what one connection sent to $RP_DIR/got.
#
# Use: . repair_net.bash; rp_up [INGRESS OPTION...]; rp_client_bg; ...;
# rp_down removes every namespace, process and file, also after a failure.

RP_TOP=${RP_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
RP_ID=${RP_ID:-$$}
RP=rp$RP_ID
RP_NS="${RP}c ${RP}i ${RP}1 ${RP}2 ${RP}3 ${RP}e ${RP}s"
RP_TOPO=$RP_TOP/examples/demo/repair-topology.json
# loop_wait (the waits of the loop's harness).
command -v loop_wait >/dev/null || . "$RP_TOP/examples/demo/loop_net.bash"

rpx() { local n=$1; shift; ip netns exec "$RP$n" "$@"; }
rp_mac() { rpx "$1" cat "/sys/class/net/$2/address"; }

# A daemon: rp_bg NAME CMD... (its pid in $RP_DIR/pid/NAME, its stderr in
# $RP_DIR/NAME.err).
rp_bg() {
	local name=$1; shift
	"$@" </dev/null 2>"$RP_DIR/$name.err" &
	echo $! >"$RP_DIR/pid/$name"
	disown $!
}

rp_net_up() {
	local n
	for n in $RP_NS; do
		ip netns del "$n" 2>/dev/null
		ip netns add "$n" || return 1
		ip netns exec "$n" ip link set lo up
	done
	ip link add c0 netns "${RP}c" type veth peer name i0 netns "${RP}i"
	ip link add i1 netns "${RP}i" type veth peer name a0 netns "${RP}1"
	ip link add a1 netns "${RP}1" type veth peer name b0 netns "${RP}2"
	ip link add a2 netns "${RP}1" type veth peer name c0 netns "${RP}3"
	ip link add c1 netns "${RP}3" type veth peer name b1 netns "${RP}2"
	ip link add b2 netns "${RP}2" type veth peer name e1 netns "${RP}e"
	ip link add e2 netns "${RP}e" type veth peer name s0 netns "${RP}s"
	rpx c ip addr add 192.0.2.10/24 dev c0
	rpx i ip addr add 192.0.2.1/24 dev i0
	rpx i ip addr add 2001:db8:f0::1/64 dev i1 nodad
	rpx 1 ip addr add 2001:db8:f0::2/64 dev a0 nodad
	rpx 1 ip addr add 2001:db8:12::1/64 dev a1 nodad
	rpx 1 ip addr add 2001:db8:13::1/64 dev a2 nodad
	rpx 2 ip addr add 2001:db8:12::2/64 dev b0 nodad
	rpx 2 ip addr add 2001:db8:32::2/64 dev b1 nodad
	rpx 2 ip addr add 2001:db8:f1::1/64 dev b2 nodad
	rpx 3 ip addr add 2001:db8:13::3/64 dev c0 nodad
	rpx 3 ip addr add 2001:db8:32::3/64 dev c1 nodad
	rpx e ip addr add 2001:db8:f1::2/64 dev e1 nodad
	rpx e ip addr add 198.51.100.1/24 dev e2
	rpx s ip addr add 198.51.100.11/24 dev s0
	# The core's MTU leaves room for three SIDs (the access links' 1500
	# plus 96 bytes of encapsulation).
	for n in "i i1" "1 a0" "1 a1" "1 a2" "2 b0" "2 b1" "2 b2" "3 c0" \
	    "3 c1" "e e1"; do
		set -- $n
		rpx "$1" ip link set "$2" mtu 1600
	done
	for n in "c c0" "i i0" "i i1" "1 a0" "1 a1" "1 a2" "2 b0" "2 b1" \
	    "2 b2" "3 c0" "3 c1" "e e1" "e e2" "s s0"; do
		set -- $n
		rpx "$1" ip link set "$2" up
	done
	rpx c ip route add default via 192.0.2.1
	rpx s ip route add default via 198.51.100.1
	for n in i e; do
		rpx $n sysctl -qw net.ipv4.ip_forward=0
		rpx $n sysctl -qw net.ipv6.conf.all.forwarding=0
	done
	for n in 1 2 3; do
		rpx $n sysctl -qw net.ipv6.conf.all.forwarding=1
		rpx $n sysctl -qw net.ipv6.conf.all.seg6_enabled=1
		for d in $(rpx $n ls /sys/class/net); do
			rpx $n sysctl -qw "net.ipv6.conf.$d.seg6_enabled=1"
		done
	done
	# The IGP's routes: P1 P3 P2 between P1 and P2; locators /48.
	rpx 1 ip -6 route add 2001:db8:1::/48 via 2001:db8:f0::1 dev a0
	rpx 1 ip -6 route add 2001:db8:a3::/48 via 2001:db8:13::3 dev a2
	rpx 1 ip -6 route add 2001:db8:a2::/48 via 2001:db8:13::3 dev a2
	rpx 1 ip -6 route add 2001:db8:2::/48 via 2001:db8:13::3 dev a2
	rpx 3 ip -6 route add 2001:db8:1::/48 via 2001:db8:13::1 dev c0
	rpx 3 ip -6 route add 2001:db8:a1::/48 via 2001:db8:13::1 dev c0
	rpx 3 ip -6 route add 2001:db8:a2::/48 via 2001:db8:32::2 dev c1
	rpx 3 ip -6 route add 2001:db8:2::/48 via 2001:db8:32::2 dev c1
	rpx 2 ip -6 route add 2001:db8:2::/48 via 2001:db8:f1::2 dev b2
	rpx 2 ip -6 route add 2001:db8:1::/48 via 2001:db8:32::3 dev b1
	rpx 2 ip -6 route add 2001:db8:a1::/48 via 2001:db8:32::3 dev b1
	rpx 2 ip -6 route add 2001:db8:a3::/48 via 2001:db8:32::3 dev b1
	# The SIDs: End at each router, End.X of P1 over the TE link.
	rpx 1 ip -6 route add 2001:db8:a1::1/128 encap seg6local action End dev a0
	rpx 1 ip -6 route add 2001:db8:a1::12/128 encap seg6local action End.X \
		nh6 2001:db8:12::2 dev a1
	rpx 2 ip -6 route add 2001:db8:a2::1/128 encap seg6local action End dev b1
	rpx 3 ip -6 route add 2001:db8:a3::1/128 encap seg6local action End dev c0
	# Neighbours known up front (cats-fwd sends to fixed peers, and the
	# routers' next hops need no discovery).
	rpx c ip neigh replace 192.0.2.1 lladdr "$(rp_mac i i0)" dev c0
	rpx s ip neigh replace 198.51.100.1 lladdr "$(rp_mac e e2)" dev s0
	rpx 1 ip -6 neigh replace 2001:db8:f0::1 lladdr "$(rp_mac i i1)" dev a0
	rpx 1 ip -6 neigh replace 2001:db8:12::2 lladdr "$(rp_mac 2 b0)" dev a1
	rpx 1 ip -6 neigh replace 2001:db8:13::3 lladdr "$(rp_mac 3 c0)" dev a2
	rpx 3 ip -6 neigh replace 2001:db8:13::1 lladdr "$(rp_mac 1 a2)" dev c0
	rpx 3 ip -6 neigh replace 2001:db8:32::2 lladdr "$(rp_mac 2 b1)" dev c1
	rpx 2 ip -6 neigh replace 2001:db8:32::3 lladdr "$(rp_mac 3 c1)" dev b1
	rpx 2 ip -6 neigh replace 2001:db8:f1::2 lladdr "$(rp_mac e e1)" dev b2
}
# The C-PS, told of the instance by one metric advertisement.
rp_cps_up() {
	sh "$RP_TOP/examples/nst-from-tedb.sh" "$RP_TOPO" IF-1 EF-1 >"$RP_DIR/nst.jsonl"
	printf '%s\n' "id = cps-repair" "stats-to = file:$RP_DIR/stats.cbor" \
		"[select]" "no-auth =" "services = $RP_TOP/examples/services.jsonl" \
		"net = $RP_DIR/nst.jsonl" "listen = unix:$RP_DIR/select.sock" \
		"[pce]" "t = $RP_TOPO" "[bind]" "listen = unix:$RP_DIR/bind.sock" \
		>"$RP_DIR/cps.conf"
	mkfifo "$RP_DIR/in"
	sleep 2147483647 >"$RP_DIR/in" &
	echo $! >"$RP_DIR/pid/holder"
	disown $!
	cats-cps -c "$RP_DIR/cps.conf" <"$RP_DIR/in" >"$RP_DIR/out.cbor" \
		2>"$RP_DIR/cps.err" &
	echo $! >"$RP_DIR/pid/cps"
	disown $!
	loop_wait 50 test -S "$RP_DIR/select.sock" &&
	loop_wait 50 test -S "$RP_DIR/bind.sock" || return 1
	jq -nc --argjson now "$(date +%s%3N)" \
		-f "$RP_TOP/examples/demo/s1-metric.jq" | cats-cbor encode \
		>"$RP_DIR/in"
}

# The forwarders; extra options go to the ingress.
rp_fwd_up() {
	rp_bg EF-1 rpx e cats-fwd --id EF-1 -v \
		--core "af_packet:e1,peer=$(rp_mac 2 b2)" \
		--site "af_packet:e2,peer=$(rp_mac s s0)" \
		--src6 2001:db8:2::1 --sid 2001:db8:2::1 --owns 198.51.100.0/24 \
		--return IF-1=2001:db8:1::1 --bind "unix:$RP_DIR/bind.sock" \
		--ring-frames 256
	rp_bg IF-1 rpx i cats-fwd --id IF-1 -v \
		--client "af_packet:i0,peer=$(rp_mac c c0)" \
		--core "af_packet:i1,peer=$(rp_mac 1 a0)" \
		--src6 2001:db8:1::1 --sid 2001:db8:1::1 --src4 192.0.2.1 \
		--service S1=203.0.113.100 --select "unix:$RP_DIR/select.sock" \
		--bind "unix:$RP_DIR/bind.sock" --ring-frames 256 "$@"
	loop_wait 50 grep -q forwarding "$RP_DIR/EF-1.err" &&
	loop_wait 50 grep -q forwarding "$RP_DIR/IF-1.err" &&
	loop_wait 50 grep -q "forwarder IF-1 connected" "$RP_DIR/cps.err" &&
	loop_wait 50 grep -q "forwarder EF-1 connected" "$RP_DIR/cps.err"
}

# The instance: one TCP connection on 198.51.100.11:80, the SHA-256 of
# what it received written to $RP_DIR/got once the client closed.
rp_server_up() {
	rp_bg server rpx s python3 -c 'import hashlib, socket, sys
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
open(sys.argv[1], "w").write(h.hexdigest() + "\n")' "$RP_DIR/got"
	loop_wait 50 sh -c "ip netns exec ${RP}s ss -Hltn 'sport = :80' | grep -q ."
}

# Everything but the client: rp_up [INGRESS OPTION...].
rp_up() {
	RP_DIR=$(mktemp -d "/tmp/cats-repair.$RP_ID.XXXXXX")
	export RP_DIR
	mkdir -p "$RP_DIR/pid"
	rp_net_up && rp_cps_up && rp_fwd_up "$@" && rp_server_up
}

# The client: 4 MB to the service address in two halves; after the first
# it writes $RP_DIR/half and waits for $RP_DIR/go.  Its port in
# $RP_DIR/port, the SHA-256 of what it sends in $RP_DIR/want, its pid in
# RP_CLIENT.
rp_client_bg() {
	head -c 4000000 /dev/urandom >"$RP_DIR/data"
	sha256sum <"$RP_DIR/data" | cut -d' ' -f1 >"$RP_DIR/want"
	rpx c timeout 60 python3 -c 'import os, socket, sys, time
d = open(sys.argv[1], "rb").read()
s = socket.create_connection(("203.0.113.100", 80), 5)
s.settimeout(50)
open(sys.argv[2] + "/port", "w").write("%d\n" % s.getsockname()[1])
s.sendall(d[:len(d) // 2])
open(sys.argv[2] + "/half", "w").close()
while not os.path.exists(sys.argv[2] + "/go"):
    time.sleep(0.02)
s.sendall(d[len(d) // 2:])
s.close()' "$RP_DIR/data" "$RP_DIR" </dev/null &
	RP_CLIENT=$!
}

rp_out() { cats-cbor decode "$RP_DIR/out.cbor" 2>/dev/null; }
# The last binding record of the client's flow that names its path.
rp_flow_binding() {
	rp_out | jq -c --argjson p "$(cat "$RP_DIR/port")" 'select(.type ==
	    "binding" and .fwd.match.sport == $p and .path != null)' | tail -1
}
rp_on_path() { rp_flow_binding | jq -e --argjson w "$1" '.path == $w' >/dev/null; }
rp_snmp6() { rpx "$1" awk -v k="$2" '$1 == k { print $2 }' /proc/net/snmp6; }
rp_rx_bytes() { rpx "$1" cat "/sys/class/net/$2/statistics/rx_bytes"; }
# The P1-P2 link down, at both ends.
rp_link_down() {
	rpx 1 ip link set a1 down
	rpx 2 ip link set b0 down
}
# A net record saying so, to the C-PS.
rp_net_record() {
	jq -nc --argjson now "$(date +%s%3N)" '{type: "net", scope: "link",
	    ts: $now, src: "P1", dst: "P2", up: false}' |
		cats-cbor encode >"$RP_DIR/in"
}

# Remove everything rp_up made; safe to call twice, and with half of it.
rp_down() {
	local f n
	[ -n "${RP_CLIENT:-}" ] && kill "$RP_CLIENT" 2>/dev/null
	if [ -n "${RP_DIR:-}" ] && [ -d "$RP_DIR/pid" ]; then
		for f in "$RP_DIR"/pid/*; do
			[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
		done
	fi
	for n in $RP_NS; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$n" 2>/dev/null
	done
	if [ -n "${RP_DIR:-}" ] && [ -d "$RP_DIR/pid" ]; then
		for f in "$RP_DIR"/pid/*; do
			[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
		done
	fi
	if [ -n "${RP_DIR:-}" ] && [ -d "$RP_DIR" ] && [ -z "${RP_KEEP:-}" ]; then
		rm -rf "$RP_DIR"
	fi
	true
}
