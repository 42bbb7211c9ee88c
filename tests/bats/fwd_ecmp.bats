#!/usr/bin/env bats
# Entropy for the core's ECMP (RFC 6438): flows between the same two
# forwarders, SRv6-encapsulated by cats-fwd, spread over two equal-cost
# core links of a Linux router hashing the outer flow label; with
# --flow-label off they all take one.
#
#   client C --c0/i0-- ingress I --i1/r0-- router R1 ==ra/xa, rb/xb== router R2 --xe/e1-- egress E --e2/s0-- server S
#
# R1 and R2 route the SIDs over both links (multipath); the forwarders'
# own kernels forward nothing.

load helper
load fwd_net

setup() {
	need_root
	FWD_ID=m$$
	. "$BATS_TEST_DIRNAME/fwd_net.bash"
	NR1=fwdr1$FWD_ID NR2=fwdr2$FWD_ID
	ecmp_up
}

teardown() {
	[ "$(id -u)" = 0 ] || return 0
	fwd_down
	ip netns del "$NR1" 2>/dev/null || true
	ip netns del "$NR2" 2>/dev/null || true
	[ -n "$FWD_DIR" ] && rm -rf "$FWD_DIR"
	true
}

r1() { ip netns exec "$NR1" "$@"; }
r2() { ip netns exec "$NR2" "$@"; }

ecmp_up() {
	fwd_down
	for n in "$NC" "$NI" "$NE" "$NS" "$NR1" "$NR2"; do
		ip netns del "$n" 2>/dev/null || true
		ip netns add "$n"
		ip netns exec "$n" ip link set lo up
	done
	ip link add c0 netns "$NC" type veth peer name i0 netns "$NI"
	ip link add i1 netns "$NI" type veth peer name r0 netns "$NR1"
	ip link add ra netns "$NR1" type veth peer name xa netns "$NR2"
	ip link add rb netns "$NR1" type veth peer name xb netns "$NR2"
	ip link add xe netns "$NR2" type veth peer name e1 netns "$NE"
	ip link add e2 netns "$NE" type veth peer name s0 netns "$NS"
	xc ip addr add 192.0.2.10/24 dev c0
	xi ip addr add 192.0.2.1/24 dev i0
	xi ip addr add 2001:db8:cc::1/64 dev i1 nodad
	r1 ip addr add 2001:db8:cc::2/64 dev r0 nodad
	r1 ip addr add 2001:db8:ca::1/64 dev ra nodad
	r1 ip addr add 2001:db8:cb::1/64 dev rb nodad
	r2 ip addr add 2001:db8:ca::2/64 dev xa nodad
	r2 ip addr add 2001:db8:cb::2/64 dev xb nodad
	r2 ip addr add 2001:db8:ce::1/64 dev xe nodad
	xe ip addr add 2001:db8:ce::2/64 dev e1 nodad
	xe ip addr add 198.51.100.1/24 dev e2
	xs ip addr add 198.51.100.11/24 dev s0
	for x in "xc c0" "xi i0" "xi i1" "r1 r0" "r1 ra" "r1 rb" "r2 xa" \
	    "r2 xb" "r2 xe" "xe e1" "xe e2" "xs s0"; do
		set -- $x
		$1 ip link set "$2" up
	done
	xc ip route add default via 192.0.2.1
	xs ip route add default via 198.51.100.1
	for n in "$NI" "$NE"; do
		ip netns exec "$n" sysctl -qw net.ipv4.ip_forward=0
		ip netns exec "$n" sysctl -qw net.ipv6.conf.all.forwarding=0
	done
	for r in r1 r2; do
		$r sysctl -qw net.ipv6.conf.all.forwarding=1
		# Layer 3: addresses, flow label and next header (the default,
		# said out loud).
		$r sysctl -qw net.ipv6.fib_multipath_hash_policy=0
	done
	r1 ip -6 route add 2001:db8:2::/64 nexthop via 2001:db8:ca::2 dev ra \
		nexthop via 2001:db8:cb::2 dev rb
	r1 ip -6 route add 2001:db8:1::/64 via 2001:db8:cc::1 dev r0
	r2 ip -6 route add 2001:db8:2::/64 via 2001:db8:ce::2 dev xe
	r2 ip -6 route add 2001:db8:1::/64 nexthop via 2001:db8:ca::1 dev xa \
		nexthop via 2001:db8:cb::1 dev xb
	xc ip neigh replace 192.0.2.1 lladdr "$(mac_of "$NI" i0)" dev c0
	xs ip neigh replace 198.51.100.1 lladdr "$(mac_of "$NE" e2)" dev s0
	# Packets to the egress SID, counted per core link at R1.
	r1 nft -f - <<-EOF
	table inet ecmp {
		chain fw {
			type filter hook forward priority 0;
			oifname "ra" ip6 daddr 2001:db8:2::100 counter
			oifname "rb" ip6 daddr 2001:db8:2::100 counter
		}
	}
	EOF
	FWD_DIR=$(mktemp -d /tmp/fwd-test.XXXXXX)
	export FWD_DIR
	cats-key psk -n IF-1 -o "$FWD_DIR/psk" >/dev/null
}

# The packets R1 sent to the egress SID over link $1 (ra or rb).
link_pkts() {
	r1 nft -j list chain inet ecmp fw | jq --arg l "$1" \
		'[.nftables[] | select(.rule) | .rule |
		  select(.expr[0].match.right == $l) |
		  .expr[] | select(.counter) | .counter.packets] | add'
}

start_fwds() {
	bg egress "$NE" cats-fwd --id EF-2 -v \
		--core "af_packet:e1,peer=$(mac_of "$NR2" xe)" \
		--site "af_packet:e2,peer=$(mac_of "$NS" s0)" \
		--src6 2001:db8:2::100 --sid 2001:db8:2::100 \
		--owns 198.51.100.0/24 \
		--bind "unix:$FWD_DIR/bind.sock" --key "$FWD_DIR/psk" \
		--stats "file:$FWD_DIR/egress.stats" --ring-frames 512
	wait_for 50 grep -q "forwarding" "$FWD_DIR/egress.err"
	bg ingress "$NI" cats-fwd --id IF-1 -v \
		--client "af_packet:i0,peer=$(mac_of "$NC" c0)" \
		--core "af_packet:i1,peer=$(mac_of "$NR1" r0)" \
		--src6 2001:db8:1::1 --sid 2001:db8:1::1 \
		--service S1=203.0.113.100 \
		--select "unix:$FWD_DIR/select.sock" \
		--bind "unix:$FWD_DIR/bind.sock" --key "$FWD_DIR/psk" \
		--stats "file:$FWD_DIR/ingress.stats" --ring-frames 512 "$@"
	wait_for 50 grep -q "forwarding" "$FWD_DIR/ingress.err"
}

# N UDP flows from client ports BASE..BASE+N-1, 4 datagrams each, all
# received by the instance: flows BASE N.
flows() {
	local base=$1 n=$2
	bg sink "$NS" socat -u UDP4-RECV:7300,bind=198.51.100.11 \
		"OPEN:$FWD_DIR/got.$base,creat,append"
	wait_udp xs 7300
	xc $PY -c 'import socket, sys, time
base, n = int(sys.argv[1]), int(sys.argv[2])
socks = []
for i in range(n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("192.0.2.10", base + i))
    socks.append(s)
for k in range(4):
    for i, s in enumerate(socks):
        s.sendto(b"flow %d pkt %d\n" % (base + i, k), ("203.0.113.100", 7300))
    time.sleep(0.2)' "$base" "$n"
	wait_for 50 sh -c "[ \$(grep -c . '$FWD_DIR/got.$base') -ge $((n * 4 - n)) ]"
	stop sink
}

@test "fwd ecmp: flows between two forwarders take both equal-cost core links by their flow labels" {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_fwds
	a0=$(link_pkts ra) b0=$(link_pkts rb)
	flows 41000 16
	a=$(( $(link_pkts ra) - a0 )) b=$(( $(link_pkts rb) - b0 ))
	echo "link ra: $a packets, link rb: $b packets"
	# 64 packets of 16 flows; each link carries some of the flows (all on
	# one: 2 in 65536 for labels that are hashed).
	[ $((a + b)) -ge 48 ]
	[ "$a" -ge 4 ]
	[ "$b" -ge 4 ]
	# The ingress sent every flow with its own label: more than one.
	[ "$(counter ingress fwd_pkts)" -ge 48 ]
}

@test "fwd ecmp: with --flow-label off every flow of the tunnel takes one link" {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_fwds --flow-label off
	a0=$(link_pkts ra) b0=$(link_pkts rb)
	flows 42000 16
	a=$(( $(link_pkts ra) - a0 )) b=$(( $(link_pkts rb) - b0 ))
	echo "link ra: $a packets, link rb: $b packets"
	[ $((a + b)) -ge 48 ]
	[ "$a" -eq 0 ] || [ "$b" -eq 0 ]
}
