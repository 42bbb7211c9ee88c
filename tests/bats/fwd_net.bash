# Network namespaces for the cats-fwd tests (load after helper).
#
#   client ns C --c0/i0-- ingress ns I --i1/e1 (core)-- egress ns E --e2/s0-- server ns S
#
# C 192.0.2.10/24 2001:db8:c1::10/64 -> I 192.0.2.1 2001:db8:c1::1
# core: I 2001:db8:cc::1/64, E 2001:db8:cc::2/64
# E 198.51.100.1/24 2001:db8:5::1/64 -> S .11 .21, 2001:db8:5::11 ::21
# service addresses: 203.0.113.100 (S1), 2001:db8:100::100 (S1),
# interception addresses 203.0.113.200, 2001:db8:100::200.
# SIDs: ingress 2001:db8:1::1, egress 2001:db8:2::100.
#
# Names carry the PID of the bats run, so parallel runs do not collide;
# fwd_down removes everything, also after a failure.

FWD_ID=${FWD_ID:-$$}
# Receive ring slots of the forwarders (small for tests; empty: the default).
FWD_RING=${FWD_RING-512}
NC=fwdc$FWD_ID NI=fwdi$FWD_ID NE=fwde$FWD_ID NS=fwds$FWD_ID
PY=/usr/bin/python3
export NC NI NE NS PY

xc() { ip netns exec "$NC" "$@"; }
xi() { ip netns exec "$NI" "$@"; }
xe() { ip netns exec "$NE" "$@"; }
xs() { ip netns exec "$NS" "$@"; }

mac_of() { ip netns exec "$1" cat "/sys/class/net/$2/address"; }

# Namespaces of a test's own: setup() calls fwd_setup with a letter that
# names the file's namespaces (with the PID), teardown() fwd_teardown.
fwd_setup() {
	need_root
	FWD_ID=$1$$
	. "$BATS_TEST_DIRNAME/fwd_net.bash"
	fwd_up
}

fwd_teardown() {
	[ "$(id -u)" = 0 ] || return 0
	fwd_down
	[ -n "$FWD_DIR" ] && rm -rf "$FWD_DIR"
	true
}

fwd_up() {
	fwd_down
	for n in "$NC" "$NI" "$NE" "$NS"; do
		ip netns add "$n"
		ip netns exec "$n" ip link set lo up
	done
	ip link add c0 netns "$NC" type veth peer name i0 netns "$NI"
	ip link add i1 netns "$NI" type veth peer name e1 netns "$NE"
	ip link add e2 netns "$NE" type veth peer name s0 netns "$NS"
	xc ip addr add 192.0.2.10/24 dev c0
	xc ip addr add 2001:db8:c1::10/64 dev c0 nodad
	xi ip addr add 192.0.2.1/24 dev i0
	xi ip addr add 2001:db8:c1::1/64 dev i0 nodad
	xi ip addr add 2001:db8:cc::1/64 dev i1 nodad
	xe ip addr add 2001:db8:cc::2/64 dev e1 nodad
	xe ip addr add 198.51.100.1/24 dev e2
	xe ip addr add 2001:db8:5::1/64 dev e2 nodad
	xs ip addr add 198.51.100.11/24 dev s0
	xs ip addr add 198.51.100.21/24 dev s0
	xs ip addr add 2001:db8:5::11/64 dev s0 nodad
	xs ip addr add 2001:db8:5::21/64 dev s0 nodad
	for x in "xc c0" "xi i0" "xi i1" "xe e1" "xe e2" "xs s0"; do
		set -- $x
		$1 ip link set "$2" up
	done
	xc ip route add default via 192.0.2.1
	xc ip -6 route add default via 2001:db8:c1::1
	xs ip route add default via 198.51.100.1
	xs ip -6 route add default via 2001:db8:5::1
	# The forwarders' own kernels must not forward what cats-fwd handles.
	for n in "$NI" "$NE"; do
		ip netns exec "$n" sysctl -qw net.ipv4.ip_forward=0
		ip netns exec "$n" sysctl -qw net.ipv6.conf.all.forwarding=0
	done
	# Neighbours are known up front (cats-fwd sends to fixed peers).
	xc ip neigh replace 192.0.2.1 lladdr "$(mac_of "$NI" i0)" dev c0
	xc ip -6 neigh replace 2001:db8:c1::1 lladdr "$(mac_of "$NI" i0)" dev c0
	xs ip neigh replace 198.51.100.1 lladdr "$(mac_of "$NE" e2)" dev s0
	xs ip -6 neigh replace 2001:db8:5::1 lladdr "$(mac_of "$NE" e2)" dev s0
	FWD_DIR=$(mktemp -d /tmp/fwd-test.XXXXXX)
	export FWD_DIR
	cats-key psk -n IF-1 -o "$FWD_DIR/psk" >/dev/null
}

fwd_down() {
	if [ -n "${FWD_DIR:-}" ] && [ -d "$FWD_DIR" ]; then
		for f in "$FWD_DIR"/*.pid; do
			[ -f "$f" ] || continue
			kill "$(cat "$f")" 2>/dev/null || true
		done
		sleep 0.2
		for f in "$FWD_DIR"/*.pid; do
			[ -f "$f" ] || continue
			kill -9 "$(cat "$f")" 2>/dev/null || true
		done
	fi
	for n in "$NC" "$NI" "$NE" "$NS"; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "$n" 2>/dev/null || true
	done
	true
}

# Run a daemon in the background in a namespace: bg NAME NS CMD...
bg() {
	local name=$1 ns=$2
	shift 2
	ip netns exec "$ns" "$@" >"$FWD_DIR/$name.out" 2>"$FWD_DIR/$name.err" &
	echo $! >"$FWD_DIR/$name.pid"
}

stop() {
	[ -f "$FWD_DIR/$1.pid" ] || return 0
	kill "$(cat "$FWD_DIR/$1.pid")" 2>/dev/null
	local n=30
	while kill -0 "$(cat "$FWD_DIR/$1.pid")" 2>/dev/null && [ $n -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	rm -f "$FWD_DIR/$1.pid"
}

# Wait until a receiver started in the background is bound: N (default 1)
# UDP sockets on PORT in the namespace X (xc, xs, ...) runs commands in.
# A datagram sent before would be lost, and a loaded machine can take
# longer than any fixed sleep to start the receiver.
udp_bound() {
	[ "$("$1" ss -Hlun "sport = :$2" | wc -l)" -ge "${3:-1}" ]
}
wait_udp() {
	wait_for 100 udp_bound "$@" || { echo "no UDP receiver on port $2 ($1)"; return 1; }
}

# The fake control plane.  Extra arguments are passed on.
start_cps() {
	local log="--log=$FWD_DIR/cps.log"
	[ -n "${CPS_NOLOG:-}" ] && log=--epoch=1
	bg cps "$NI" fake-cps --select "unix:$FWD_DIR/select.sock" \
		--bind "unix:$FWD_DIR/bind.sock" "$log" \
		--key "$FWD_DIR/psk" "$@"
	wait_for 100 test -S "$FWD_DIR/bind.sock"
}

# The ingress forwarder IF-1.  Extra arguments are passed on.
start_ingress() {
	bg ingress "$NI" cats-fwd --id IF-1 -v \
		--client "af_packet:i0,peer=$(mac_of "$NC" c0)" \
		--core "af_packet:i1,peer=$(mac_of "$NE" e1)" \
		--src6 2001:db8:1::1 --sid 2001:db8:1::1 --src4 192.0.2.1 \
		--service S1=203.0.113.100 --service S1=2001:db8:100::100 \
		--intercept 203.0.113.200 --intercept 2001:db8:100::200 \
		--select "unix:$FWD_DIR/select.sock" \
		--bind "unix:$FWD_DIR/bind.sock" --key "$FWD_DIR/psk" \
		--stats "file:$FWD_DIR/ingress.stats" \
		${FWD_RING:+--ring-frames $FWD_RING} "$@"
	wait_for 50 grep -q "forwarding" "$FWD_DIR/ingress.err"
}

# The egress forwarder EF-2.
start_egress() {
	bg egress "$NE" cats-fwd --id EF-2 -v \
		--core "af_packet:e1,peer=$(mac_of "$NI" i1)" \
		--site "af_packet:e2,peer=$(mac_of "$NS" s0)" \
		--src6 2001:db8:2::100 --sid 2001:db8:2::100 \
		--owns 198.51.100.0/24 --owns 2001:db8:5::/64 \
		--bind "unix:$FWD_DIR/bind.sock" --key "$FWD_DIR/psk" \
		--stats "file:$FWD_DIR/egress.stats" \
		${FWD_RING:+--ring-frames $FWD_RING} "$@"
	wait_for 50 grep -q "forwarding" "$FWD_DIR/egress.err"
}

# Counter NAME of a forwarder (ingress|egress), from a fresh stats dump
# (helper.bash's stats_counter).
counter() {
	stats_counter "$(cat "$FWD_DIR/$1.pid" 2>/dev/null)" \
	    "$FWD_DIR/$1.stats" "$2"
}

# Wait until counter NAME of forwarder WHO compares to VALUE with OP (an
# operator of test(1): -eq -ge -gt ...): wait_counter WHO NAME OP VALUE.
# This is the proof that a packet was seen before asserting what did not
# happen to it.
counter_is() {
	local v
	v=$(counter "$1" "$2") && [ "$v" "$3" "$4" ]
}
wait_counter() {
	wait_for 100 counter_is "$@" || {
		echo "$1 $2 is $(counter "$1" "$2"), not $3 $4"
		return 1
	}
}

# A burst of one UDP flow to the service: its first datagram makes the
# binding, then N more follow back to back; prints what the instance got,
# "received in_order" (fwd_pkt.py seq-recv).
burst_one_flow() {
	local n=$1 rcv
	xs $PY "$TOP/tests/tools/fwd_pkt.py" seq-recv 198.51.100.11 9300 \
		$((n + 1)) 15 >"$FWD_DIR/seq.out" &
	rcv=$!
	wait_udp xs 9300
	xc $PY "$TOP/tests/tools/fwd_pkt.py" seq-send 203.0.113.100 9300 41000 1 0
	wait_for 50 grep -q '"fwd":"IF-1","event":"installed"' "$FWD_DIR/cps.log"
	xc $PY "$TOP/tests/tools/fwd_pkt.py" seq-send 203.0.113.100 9300 41000 "$n" 1
	wait $rcv
	cat "$FWD_DIR/seq.out"
}

# Two web servers, one per instance address, each with its own page:
# http.server's ThreadingHTTPServer without its server_bind's reverse DNS
# lookup of the address (socket.getfqdn), which in these namespaces goes
# out by the default route to a core that drops it, and took the resolver's
# 10 s of timeouts before each server listened (as examples/demo/
# instance.py says too).
start_web() {
	for i in 11 21; do
		mkdir -p "$FWD_DIR/www$i"
		echo "instance 198.51.100.$i" >"$FWD_DIR/www$i/index.html"
		head -c "${BIG_SIZE:-3000000}" /dev/urandom >"$FWD_DIR/www$i/big"
		bg "web$i" "$NS" $PY -c 'import functools, http.server as h, socketserver, sys
class S(h.ThreadingHTTPServer):
	def server_bind(self):
		socketserver.TCPServer.server_bind(self)
		self.server_name, self.server_port = self.server_address[:2]
S((sys.argv[1], 80), functools.partial(h.SimpleHTTPRequestHandler,
	directory=sys.argv[2])).serve_forever()' "198.51.100.$i" "$FWD_DIR/www$i"
	done
	wait_for 150 tcp_bound xs 80 2 || { echo "no web servers"; cat "$FWD_DIR"/web*.err; return 1; }
}
tcp_bound() {
	[ "$("$1" ss -Hltn "sport = :$2" | wc -l)" -ge "${3:-1}" ]
}
