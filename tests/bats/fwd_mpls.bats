#!/usr/bin/env bats
# SR-MPLS through cats-fwd: the ingress pushes the binding's label stack,
# the egress pops its label and delivers, replies come back on the return
# label stack (--return IF-1=mpls:...) and the ingress pops its own: curl
# answered by the chosen instance, a larger transfer whole, UDP both ways,
# with and without --fast-path (whose BPF program pushes the labels of
# established flows; what comes labelled is popped in user space); tshark
# decodes every packet on the core without a malformed one.  With the Linux
# kernel's MPLS (mpls_router, mpls_iptunnel) as the core and as the egress,
# both ways, in a VM running Debian 12's kernel (vm.bash; see the section
# below).
#
# The bindings come from a static binding manager: a socket that sends
# every forwarder that connects the same records (cats-cbor encode), then
# the hello that ends its re-sync.

load helper
load fwd_net

setup() {
	need_root
	fwd_setup p
}

teardown() {
	fwd_teardown
	[ -n "${NR:-}" ] && ip netns del "$NR" 2>/dev/null
	true
}

# A binding of TCP port 80 or UDP port 7300 from the client (any client
# port) to instance 198.51.100.11, forward labels $2 (a JSON list):
# binding ID PROTO PORT LABELS [EGRESS].
binding() {
	cat <<-EOF
	{"type":"binding","id":$1,"version":1,"epoch":1,"op":"install","ts":1,
	 "ingress":"IF-1","egress":"${5:-EF-2}","cs_id":"S1",
	 "fwd":{"match":{"proto":$2,"src":"192.0.2.10","dst":"203.0.113.100","dport":$3},
	  "locator":"198.51.100.11","encap":"srmpls","labels":$4,"egress":"${5:-EF-2}"},
	 "rev":{"match":{"proto":$2,"src":"198.51.100.11","sport":$3,"dst":"192.0.2.10"},
	  "restore_src":"203.0.113.100","restore_port":$3,"owner":"IF-1"}}
	EOF
}

# Serve the bindings on stdin (JSON) to every forwarder that connects.
static_bind() {
	{ cat; echo '{"type":"status","fwd":"cats-bind","event":"hello","ts":1,"epoch":1}'; } |
		jq -c . | cats-cbor encode >"$FWD_DIR/bindings.cbor"
	bg bindsrv "$NI" socat "UNIX-LISTEN:$FWD_DIR/bind.sock,fork" \
		"SYSTEM:cat $FWD_DIR/bindings.cbor; sleep 3600"
	wait_for 50 test -S "$FWD_DIR/bind.sock"
}

# The forwarders of fwd_net.bash with SR-MPLS labels: IF-1 pops 16001,
# EF-2 pops 16002 and returns to IF-1 on 16001.
mpls_ingress() {
	start_ingress --label 16001 --dataplane srmpls "$@"
}
# The ingress with its core port's peer MAC $1 (a kernel router's).
mpls_ingress_via() {
	local peer=$1
	shift
	bg ingress "$NI" cats-fwd --id IF-1 -v \
		--client "af_packet:i0,peer=$(mac_of "$NC" c0)" \
		--core "af_packet:i1,peer=$peer" \
		--src6 2001:db8:1::1 --sid 2001:db8:1::1 --src4 192.0.2.1 \
		--label 16001 --service S1=203.0.113.100 \
		--bind "unix:$FWD_DIR/bind.sock" \
		--stats "file:$FWD_DIR/ingress.stats" "$@"
	wait_for 50 grep -q "forwarding" "$FWD_DIR/ingress.err"
}
mpls_egress() {
	start_egress --label 16002 --return IF-1=mpls:16001 "$@"
}

cap_start() {
	bg capi "$NI" tcpdump --immediate-mode -Q in -U -n -s 0 -i i1 -w "$FWD_DIR/core_i.pcap"
	bg cape "$NE" tcpdump --immediate-mode -Q in -U -n -s 0 -i e1 -w "$FWD_DIR/core_e.pcap"
	# Capturing once it says so.
	wait_for 50 grep -q "listening on" "$FWD_DIR/capi.err"
	wait_for 50 grep -q "listening on" "$FWD_DIR/cape.err"
}

# The last packets may still be on their way from the kernel to tcpdump
# (no event says it has read them all: its own counts on Linux's
# TPACKET_V3 do not add up): a short drain before the stop.
cap_stop() {
	sleep 0.5
	stop capi
	stop cape
}

# Packets of both core captures matching a display filter.
tcount() {
	local n=0 c
	for f in "$FWD_DIR"/core_*.pcap; do
		c=$(tshark -r "$f" -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE \
			-o udp.check_checksum:TRUE -Y "$1" 2>/dev/null | wc -l)
		n=$((n + c))
	done
	echo "$n"
}

# Packets of both core captures matching each display filter given, one
# count a line in their order: one tshark pass a file for all of them (its
# io,stat table, a column per filter), where tcount runs one a filter (a
# second or more each on a loaded machine).  Filters without commas.
tcounts() {
	local f filters="" n
	for n; do filters="$filters,$n"; done
	for f in "$FWD_DIR"/core_*.pcap; do
		tshark -q -r "$f" -o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE \
			-o udp.check_checksum:TRUE -z "io,stat,0$filters" 2>/dev/null |
			awk -F'|' -v n=$# '/<>/ { for (i = 1; i <= n; i++) print $(2 * i + 1) + 0; got = 1 }
				END { if (!got) for (i = 1; i <= n; i++) print 0 }'
	done | awk -v n=$# '{ c[(NR - 1) % n] += $1 } END { for (i = 0; i < n; i++) print c[i] + 0 }'
}

@test "fwd mpls: cats-fwd ingress and egress over SR-MPLS: curl answered by the chosen instance, a transfer whole, UDP both ways" {
	{ binding 1 6 80 '[16002]'; binding 2 17 7300 '[16002]'; } | static_bind
	BIG_SIZE=2000000 start_web
	bg echo7300 "$NS" socat UDP4-RECVFROM:7300,bind=198.51.100.11,fork EXEC:cat
	for mode in "" --fast-path; do
		mpls_egress $mode
		mpls_ingress $mode
		command -v tshark >/dev/null && cap_start
		run xc curl -s -m 5 http://203.0.113.100/
		[ "$status" -eq 0 ]
		[ "$output" = "instance 198.51.100.11" ]
		xc curl -s --speed-limit 1 --speed-time 30 -o "$FWD_DIR/big" http://203.0.113.100/big
		cmp "$FWD_DIR/big" "$FWD_DIR/www11/big"
		run xc sh -c 'echo mpls-udp | socat -t 2 - UDP4:203.0.113.100:7300'
		[ "$output" = mpls-udp ]
		[ "$(counter ingress mss_clamped)" -ge 1 ]
		[ "$(counter ingress rev_pkts)" -ge 10 ]
		[ "$(counter egress eg_fwd_pkts)" -ge 10 ]
		[ "$(counter egress eg_rev_pkts)" -ge 10 ]
		[ "$(counter ingress drop_not_ours)" = 0 ]
		[ "$(counter egress drop_bad_mpls)" = 0 ]
		if [ -n "$mode" ]; then
			# Wildcard bindings (any client port): user space's.
			[ "$(counter ingress fast_keys)" = 0 ]
			[ "$(counter ingress fast_fail)" = 0 ]
		fi
		if command -v tshark >/dev/null; then
			cap_stop
			# Every packet on the core is SR-MPLS, labels 16002 toward
			# the egress and 16001 back, and decodes cleanly.
			[ "$(tcount 'mpls.label == 16002 && mpls.bottom == 1 && mpls.ttl == 64 && tcp')" -ge 10 ]
			[ "$(tcount 'mpls.label == 16001 && mpls.bottom == 1 && tcp')" -ge 10 ]
			[ "$(tcount 'mpls.label == 16001 && udp.port == 7300')" -ge 1 ]
			[ "$(tcount '(ip.dst == 198.51.100.11 || ip.src == 198.51.100.11) && !mpls')" -eq 0 ]
			[ "$(tcount '_ws.malformed')" -eq 0 ]
			[ "$(tcount '_ws.expert.severity >= 0x00800000')" -eq 0 ]
		fi
		stop ingress
		stop egress
	done
}

@test "fwd mpls: --fast-path: the kernel pushes the labels of an established flow; the burst arrives whole" {
	# One exact UDP flow (a wildcard binding stays in user space).
	cat <<-EOF | static_bind
	{"type":"binding","id":1,"version":1,"epoch":1,"op":"install","ts":1,
	 "ingress":"IF-1","egress":"EF-2","cs_id":"S1",
	 "fwd":{"match":{"proto":17,"src":"192.0.2.10","sport":41000,"dst":"203.0.113.100","dport":9300},
	  "locator":"198.51.100.11","encap":"srmpls","labels":[16002],"egress":"EF-2"},
	 "rev":{"match":{"proto":17,"src":"198.51.100.11","sport":9300,"dst":"192.0.2.10","dport":41000},
	  "restore_src":"203.0.113.100","restore_port":9300,"owner":"IF-1"}}
	EOF
	# The egress is user space: a ring of 4096 holds the whole burst while
	# a loaded machine keeps it from running (with 512, 2136 of the 3000
	# arrived beside a busy loop).
	FWD_RING=4096 mpls_egress
	FWD_RING=4096 mpls_ingress --fast-path
	xs $PY "$TOP/tests/tools/fwd_pkt.py" seq-recv 198.51.100.11 9300 3000 15 \
		>"$FWD_DIR/seq.out" &
	rcv=$!
	wait_udp xs 9300
	xc $PY "$TOP/tests/tools/fwd_pkt.py" seq-send 203.0.113.100 9300 41000 3000 0
	wait $rcv
	cat "$FWD_DIR/seq.out"
	# Whole but for what a loaded machine's socket buffers and rings may
	# drop of an unpaced burst (the checksum bug this guards lost most).
	[ "$(cut -d' ' -f1 "$FWD_DIR/seq.out")" -ge 2970 ] || {
		echo "egress rx_ring_drops $(counter egress rx_ring_drops)" \
		    "eg_fwd_pkts $(counter egress eg_fwd_pkts)"
		false
	}
	# Most of it was labelled by the kernel, none of it wrongly (the
	# checksums it leaves to the hardware are completed at the egress).
	[ "$(counter ingress fast_hit)" -gt 1000 ]
	[ "$(counter ingress fast_fail)" = 0 ]
	[ "$(counter egress drop_bad_mpls)" = 0 ]
	[ "$(counter egress eg_fwd_pkts)" -ge 2970 ]
}

@test "fwd mpls: an explicit null under the stack; a binding with a reserved label is refused" {
	{ binding 1 6 80 '[16002]'; binding 3 17 7301 '[3]'; } | static_bind
	start_web
	mpls_egress --explicit-null
	mpls_ingress --explicit-null
	command -v tshark >/dev/null && cap_start
	run xc curl -s -m 5 http://203.0.113.100/
	[ "$output" = "instance 198.51.100.11" ]
	grep -q "binding 3: refused: bad-binding" "$FWD_DIR/ingress.err"
	if command -v tshark >/dev/null; then
		cap_stop
		[ "$(tcount 'mpls.label == 0 && mpls.bottom == 1 && tcp')" -ge 4 ]
		[ "$(tcount 'mpls.label == 16002 && mpls.bottom == 0')" -ge 2 ]
		[ "$(tcount '_ws.malformed')" -eq 0 ]
	fi
}

# ---- the Linux kernel's MPLS ----
#
# In a VM (vm.bash): this machine's kernel has no MPLS routing (no
# CONFIG_MPLS_ROUTING, no modules), Debian 12's has mpls_router and
# mpls_iptunnel.  The VM runs Debian's kernel with a busybox initramfs
# under qemu (KVM where the CPU has it, else TCG), its NICs on taps that
# stand where the kernel's namespace was.  The first run on a machine
# downloads the kernel package (apt-get download, not installed) into
# /var/cache/cats-test.  Alone, as root:
#   BATS_FILTER=fwd_mpls make check
# or, after make, with the PATH tests/run.sh sets:
#   bats -f 'the Linux kernel' tests/bats/fwd_mpls.bats

vm_or_skip() {
	load vm
	local why
	why=$(vm_prepare) || skip "no VM for the kernel's MPLS: $why"
}

@test "fwd mpls: the Linux kernel as the SR-MPLS core, both ways (mpls_router, in a VM)" {
	vm_or_skip
	# ingress I --i1/r0-- kernel LSR (the VM) --r1/e1-- egress E,
	# instead of the veth i1/e1.
	xi ip link del i1
	VM_NICS="r0=$NI:i1 r1=$NE:e1"
	# 16100 is the LSR's own node SID: popped, the next label forwarded;
	# 16002 toward the egress swapped to itself, 16001 back to the ingress
	# the same way; 16003 popped before the egress (penultimate hop
	# popping): the egress gets plain IP packets of the bound flow.
	cat >"$FWD_DIR/lsr.sh" <<-EOF
	ip addr add 10.98.1.2/24 dev r0
	ip addr add 10.98.2.1/24 dev r1
	ip neigh replace 10.98.1.1 lladdr $(vm_tap_mac r0) dev r0
	ip neigh replace 10.98.2.2 lladdr $(vm_tap_mac r1) dev r1
	ip -f mpls route add 16100 via inet 10.98.2.2 dev r1
	ip -f mpls route add 16002 as 16002 via inet 10.98.2.2 dev r1
	ip -f mpls route add 16003 via inet 10.98.2.2 dev r1
	ip -f mpls route add 16001 as 16001 via inet 10.98.1.1 dev r0
	EOF
	vm_start "$NI" "$FWD_DIR/lsr.sh"
	xi ip addr add 10.98.1.1/24 dev i1
	xe ip addr add 10.98.2.2/24 dev e1
	# TCP with a stack of two (the LSR pops its 16100, forwards 16002),
	# UDP with 16002 alone (swapped, then popped by the egress), UDP
	# 7301 with 16003 (popped by the LSR).
	{ binding 1 6 80 '[16100,16002]'; binding 2 17 7300 '[16002]'
	  binding 3 17 7301 '[16003]'; } | static_bind
	# 1 MB: the LSR is an emulated CPU on a loaded machine.
	BIG_SIZE=1000000 start_web
	bg echo7300 "$NS" socat UDP4-RECVFROM:7300,bind=198.51.100.11,fork EXEC:cat
	bg echo7301 "$NS" socat UDP4-RECVFROM:7301,bind=198.51.100.11,fork EXEC:cat
	bg egress "$NE" cats-fwd --id EF-2 -v \
		--core "af_packet:e1,peer=$(vm_mac r1)" \
		--site "af_packet:e2,peer=$(mac_of "$NS" s0)" \
		--src6 2001:db8:2::100 --sid 2001:db8:2::100 --label 16002 \
		--return IF-1=mpls:16001 --owns 198.51.100.0/24 \
		--bind "unix:$FWD_DIR/bind.sock" --stats "file:$FWD_DIR/egress.stats"
	wait_for 50 grep -q "forwarding" "$FWD_DIR/egress.err"
	mpls_ingress_via "$(vm_mac r0)"
	vm_wait
	echo "# VM ready in $VM_BOOT s" >&3
	cap_start
	run xc curl -s -m 10 http://203.0.113.100/
	[ "$status" -eq 0 ]
	[ "$output" = "instance 198.51.100.11" ]
	xc curl -s --speed-limit 1 --speed-time 30 -o "$FWD_DIR/big" http://203.0.113.100/big
	cmp "$FWD_DIR/big" "$FWD_DIR/www11/big"
	run xc sh -c 'echo via-lsr | socat -t 5 - UDP4:203.0.113.100:7300'
	[ "$output" = via-lsr ]
	cap_stop
	# What the LSR sent on: to the egress its 16100 popped and 16002
	# below, the UDP's 16002 swapped (TTL 64 less one); back to the
	# ingress 16001; every packet labelled and decoded cleanly.
	set -- $(tcounts 'mpls.label == 16002 && mpls.bottom == 1 && tcp' \
		'mpls.label == 16100' \
		'mpls.label == 16002 && mpls.ttl == 63 && udp.port == 7300' \
		'mpls.label == 16001 && mpls.bottom == 1 && tcp' \
		'mpls.label == 16001 && udp.port == 7300' \
		'(ip.dst == 198.51.100.11 || ip.src == 198.51.100.11) && !mpls' \
		'_ws.malformed' '_ws.expert.severity >= 0x00800000')
	echo "counts: $*"
	[ "$1" -ge 10 ]
	[ "$2" -eq 0 ]
	[ "$3" -ge 1 ]
	[ "$4" -ge 10 ]
	[ "$5" -ge 1 ]
	[ "$6" -eq 0 ]
	[ "$7" -eq 0 ]
	[ "$8" -eq 0 ]
	# Penultimate hop popping.
	p0=$(counter egress eg_fwd_pkts)
	run xc sh -c 'echo php | socat -t 5 - UDP4:203.0.113.100:7301'
	[ "$output" = php ]
	[ "$(counter egress eg_fwd_pkts)" -gt "$p0" ]
	[ "$(counter egress drop_not_tunnel)" = 0 ]
	[ "$(counter egress drop_bad_mpls)" = 0 ]
	[ "$(counter ingress drop_not_ours)" = 0 ]
}

@test "fwd mpls: the Linux kernel as the SR-MPLS egress, both ways (mpls_iptunnel, in a VM)" {
	vm_or_skip
	# ingress I --i1/e1-- kernel egress (the VM) --e2/s0-- server S,
	# instead of the egress namespace: the VM pops 16002 and delivers to
	# the instance; its replies go back with label 16001 (encap mpls).
	xi ip link del i1
	xs ip link del s0
	VM_NICS="e1=$NI:i1 e2=$NS:s0"
	# Both directions of the core, as the VM's NIC sees them (qemu's).
	VM_DUMP=e1
	cat >"$FWD_DIR/egress.sh" <<-EOF
	ip addr add 10.98.2.2/24 dev e1
	ip addr add 198.51.100.1/24 dev e2
	ip neigh replace 10.98.2.1 lladdr $(vm_tap_mac e1) dev e1
	ip -f mpls route add 16002 via inet 198.51.100.11 dev e2
	ip route add 192.0.2.0/24 encap mpls 16001 via inet 10.98.2.1 dev e1
	EOF
	vm_start "$NI" "$FWD_DIR/egress.sh"
	xi ip addr add 10.98.2.1/24 dev i1
	xs ip addr add 198.51.100.11/24 dev s0
	xs ip addr add 198.51.100.21/24 dev s0
	xs ip route add default via 198.51.100.1
	{ binding 1 6 80 '[16002]'; binding 2 17 7300 '[16002]'; } | static_bind
	BIG_SIZE=1000000 start_web
	bg echo7300 "$NS" socat UDP4-RECVFROM:7300,bind=198.51.100.11,fork EXEC:cat
	mpls_ingress_via "$(vm_mac e1)"
	vm_wait
	echo "# VM ready in $VM_BOOT s" >&3
	run xc curl -s -m 10 http://203.0.113.100/
	[ "$status" -eq 0 ]
	[ "$output" = "instance 198.51.100.11" ]
	xc curl -s --speed-limit 1 --speed-time 30 -o "$FWD_DIR/big" http://203.0.113.100/big
	cmp "$FWD_DIR/big" "$FWD_DIR/www11/big"
	run xc sh -c 'echo kernel-egress | socat -t 5 - UDP4:203.0.113.100:7300'
	[ "$output" = kernel-egress ]
	[ "$(counter ingress rev_pkts)" -ge 10 ]
	[ "$(counter ingress drop_not_ours)" = 0 ]
	# Ours toward the VM with 16002, the kernel's back with 16001 (its
	# TTL from the IP header the kernel forwarded: 63), all decoded.
	set -- $(tcounts 'mpls.label == 16002 && mpls.bottom == 1 && tcp' \
		'mpls.label == 16001 && mpls.bottom == 1 && tcp' \
		'mpls.label == 16001 && udp.port == 7300' \
		'(ip.dst == 198.51.100.11 || ip.src == 198.51.100.11) && !mpls' \
		'_ws.malformed' '_ws.expert.severity >= 0x00800000')
	echo "counts: $*"
	[ "$1" -ge 10 ]
	[ "$2" -ge 10 ]
	[ "$3" -ge 1 ]
	[ "$4" -eq 0 ]
	[ "$5" -eq 0 ]
	[ "$6" -eq 0 ]
}
