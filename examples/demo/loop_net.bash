# loop_net.bash - the whole cats loop in network namespaces: the one harness
# of `make demo` (examples/demo/demo.sh), the loop tests
# (tests/bats/loop*.bats) and the loop benchmark (bench/loop.sh).
#
#   client ──c0/i0── ingress IF-1 ──i1/x0── core ──x1/e1── egress EF-1 ──e2/s0── site 1
#   192.0.2.10       cats-fwd               Linux  ──x2/e1── egress EF-2 ──e2/s0── site 2
#                                           SRv6             cats-fwd
#   C-PS ──m1/m0── site 1, C-PS ──m2/m0── site 2 (management links)
#   C-PS ──m3/m0── IF-1, ──m4/m0── EF-1, ──m5/m0── EF-2 (control links)
#
# Namespaces (names end in $LOOP_ID so that runs do not collide):
#   lpc  client 192.0.2.10/24 (+ .11-.74 for the benchmark), gateway .1
#   lpi  ingress cats-fwd IF-1 (AF_PACKET): clients on i0, core on i1
#   lpx  core router: the Linux kernel, IPv6 forwarding, SRv6 End SID
#   lpe1, lpe2  egress cats-fwd EF-1, EF-2: core on e1, site on e2
#   lps1, lps2  sites: two instances each (examples/demo/instance.py, a real
#        HTTP server answering its own name), one cats-sci per instance
#        whose reports follow the instance's active connections, and the
#        site's cats-sma
#   lpm  the C-PS: cats-cps running cats-select (with its C-SMA ingest,
#        see loop_northbound), cats-pce and cats-bind; or, with
#        LOOP_CPS=filters, the three filters joined by fifos (for
#        debugging one stage)
#
# Addresses: service S1 = 203.0.113.100:80 (tcp); the ingress also
# intercepts 203.0.113.99, which no service of the catalogue has, and reads
# Mode B envelopes (explicit CS-IDs) at the start of UDP datagrams to port
# 7100.  Instances 198.51.100.11/.12 (site 1: site1-a, site1-b),
# 198.51.101.21/.22 (site 2: site2-a, site2-b).  SRv6 SIDs:
# IF-1 2001:db8:1::1, CORE 2001:db8:ff::1, EF-1 2001:db8:2::1,
# EF-2 2001:db8:3::1.  The TE database is examples/topology.json, the
# catalogue examples/services.jsonl.  The forwarders reach the C-PS on unix
# sockets in $LOOP_DIR, or with LOOP_TLS over tls: on the control links
# (loop_chan); the site agents reach it over the management links.
#
# Use: . loop_net.bash; loop_up; ...; loop_down.  loop_down removes every
# namespace, process, socket and file of the run, also after a failure.

LOOP_TOP=${LOOP_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
LOOP_EX=$LOOP_TOP/examples
LOOP_ID=${LOOP_ID:-$$}
LOOP_PY=${LOOP_PY:-/usr/bin/python3}
# Timing of the site agents (seconds): report interval, STALE after two
# missed reports, FAILED after the grace; a full snapshot as a keep-alive.
LOOP_INTERVAL=${LOOP_INTERVAL:-1}
LOOP_GRACE=${LOOP_GRACE:-2}
LOOP_KEEPALIVE=${LOOP_KEEPALIVE:-10}
LOOP_NB_PORT=8401
# Forwarders verify what cats-bind sends them (its Ed25519 key); the
# benchmark turns it off to compare with a stand-in that signs nothing.
LOOP_PEER_KEYS=${LOOP_PEER_KEYS-1}
# The C-PS: cps (cats-cps, one supervised service) or filters
# (cats-select | cats-pce | cats-bind on fifos).
LOOP_CPS=${LOOP_CPS:-cps}
# LOOP_TLS=1: the management links speak https with mutual TLS (see
# loop_northbound), and the forwarders' control channels tls: with mutual
# TLS on the control links (loop_chan); make demo runs so.
LOOP_TLS=${LOOP_TLS:-}
# LOOP_FSYNC: cats-bind's journal sync policy (--fsync always, interval or
# never); unset, its default (always).
LOOP_FSYNC=${LOOP_FSYNC:-}
# LOOP_CLIENT_BINDINGS: cats-bind's per-client binding limit (--limit
# client-bindings=N, cats-bind(1) LIMITS); empty: its default, 4096.
LOOP_CLIENT_BINDINGS=${LOOP_CLIENT_BINDINGS:-}
# LOOP_HA=1: a redundant C-PS (cats-cps(1), REDUNDANCY) on an etcd member
# of its own in the C-PS's namespace (loop_etcd_start; etcd-server): the
# binding stage on etcd (no journal), and a second
# cats-cps, instance b (loop_cps_b_start: its files and sockets end in -b,
# its C-SMA ingest on port LOOP_NB_PORT + 10, which the agents also
# advertise to); the forwarders are given both instances' endpoints.
LOOP_HA=${LOOP_HA:-}
# The instance whose files a function names: "" (the first) or -b.
LOOP_INST=${LOOP_INST:-}

LC=lpc$LOOP_ID LI=lpi$LOOP_ID LX=lpx$LOOP_ID LM=lpm$LOOP_ID
LE1=lpe1$LOOP_ID LE2=lpe2$LOOP_ID LS1=lps1$LOOP_ID LS2=lps2$LOOP_ID
LOOP_NS="$LC $LI $LX $LE1 $LE2 $LS1 $LS2 $LM"

# The instances: name site address base-computing-time(ms) capacity.
# min-latency ranks by network delay + computing time: site1-a (1.5 + 3 ms)
# before site1-b (1.5 + 5), site2-a (4 + 3), site2-b (4 + 5); every active
# connection adds 10 ms.
LOOP_INSTANCES="site1-a:1:198.51.100.11:3:8 site1-b:1:198.51.100.12:5:8
site2-a:2:198.51.101.21:3:8 site2-b:2:198.51.101.22:5:8"

lx() { local n=$1; shift; ip netns exec "$n" "$@"; }
loop_mac() { lx "$1" cat "/sys/class/net/$2/address"; }

# Wait until a command succeeds, up to $1 tenths of a second.
loop_wait() {
	local n=$1; shift
	while [ "$n" -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# ---- processes ----

# Start a daemon: loop_bg NAME NS STDIN STDOUT CMD...; STDIN/STDOUT are
# files (stdout appended), "-" for /dev/null and log/NAME.out.
loop_bg() {
	local name=$1 ns=$2 in=$3 out=$4
	shift 4
	[ "$in" = - ] && in=/dev/null
	[ "$out" = - ] && out=$LOOP_DIR/log/$name.out
	ip netns exec "$ns" "$@" <"$in" >>"$out" 2>>"$LOOP_DIR/log/$name.err" &
	echo $! >"$LOOP_DIR/pid/$name"
	disown $!	# no "Killed" notices: loop_stop and loop_down end them
}

loop_pid() {
	if [ "${LOOP_CPS:-cps}" = cps ]; then
		case $1 in select|pce|bind) loop_stage_pid "$1"; return ;; esac
	fi
	cat "$LOOP_DIR/pid/$1" 2>/dev/null
}

# With LOOP_PROM set, daemon NAME serves /metrics on unix:LOOP_DIR/NAME.prom
# (cats(7) METRICS); the option words for its command line.
loop_prom() {
	[ -z "${LOOP_PROM:-}" ] || echo "--prometheus unix:$LOOP_DIR/$1.prom"
}

# Lines of daemon NAME's log matching PATTERN (logs are appended across
# restarts): loop_log_count NAME PATTERN.
loop_log_count() {
	local c
	c=$(grep -c "$2" "$LOOP_DIR/log/$1.err" 2>/dev/null)
	echo "${c:-0}"
}
# Wait until NAME's log has more than N lines matching PATTERN.
loop_log_more() { [ "$(loop_log_count "$1" "$2")" -gt "$3" ]; }
loop_alive() { local p; p=$(loop_pid "$1") && kill -0 "$p" 2>/dev/null; }

# Stop a daemon (SIGTERM, then SIGKILL after 3 s): loop_stop NAME [SIG].
loop_stop() {
	local p n=30
	if [ "${LOOP_CPS:-cps}" = cps ]; then
		case $1 in
		select|pce|bind)
			# A stage of cats-cps: it is started again by cats-cps.
			p=$(loop_stage_pid "$1") || return 0
			echo "$p" >"$LOOP_DIR/stopped.$1"
			kill -"${2:-TERM}" "$p" 2>/dev/null || true
			loop_wait 30 sh -c "! kill -0 $p" || kill -9 "$p" 2>/dev/null
			return 0
			;;
		tee) return 0 ;;
		esac
	fi
	p=$(cat "$LOOP_DIR/pid/$1" 2>/dev/null) || return 0
	kill -"${2:-TERM}" "$p" 2>/dev/null || true
	while kill -0 "$p" 2>/dev/null && [ $n -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	kill -9 "$p" 2>/dev/null || true
	rm -f "$LOOP_DIR/pid/$1"
}

# ---- the network ----

loop_net_up() {
	local n
	for n in $LOOP_NS; do
		ip netns del "$n" 2>/dev/null	# left by a run killed with -9
		ip netns add "$n" || return 1
		lx "$n" ip link set lo up
	done
	ip link add c0 netns "$LC" type veth peer name i0 netns "$LI"
	ip link add i1 netns "$LI" type veth peer name x0 netns "$LX"
	ip link add x1 netns "$LX" type veth peer name e1 netns "$LE1"
	ip link add x2 netns "$LX" type veth peer name e1 netns "$LE2"
	ip link add e2 netns "$LE1" type veth peer name s0 netns "$LS1"
	ip link add e2 netns "$LE2" type veth peer name s0 netns "$LS2"
	ip link add m1 netns "$LM" type veth peer name m0 netns "$LS1"
	ip link add m2 netns "$LM" type veth peer name m0 netns "$LS2"
	ip link add m3 netns "$LM" type veth peer name m0 netns "$LI"
	ip link add m4 netns "$LM" type veth peer name m0 netns "$LE1"
	ip link add m5 netns "$LM" type veth peer name m0 netns "$LE2"
	lx "$LC" ip addr add 192.0.2.10/24 dev c0
	for n in $(seq 11 74); do
		lx "$LC" ip addr add 192.0.2.$n/24 dev c0
	done
	lx "$LI" ip addr add 192.0.2.1/24 dev i0
	lx "$LI" ip addr add 2001:db8:f0::1/64 dev i1 nodad
	lx "$LX" ip addr add 2001:db8:f0::2/64 dev x0 nodad
	lx "$LX" ip addr add 2001:db8:f1::1/64 dev x1 nodad
	lx "$LX" ip addr add 2001:db8:f2::1/64 dev x2 nodad
	lx "$LE1" ip addr add 2001:db8:f1::2/64 dev e1 nodad
	lx "$LE2" ip addr add 2001:db8:f2::2/64 dev e1 nodad
	lx "$LE1" ip addr add 198.51.100.1/24 dev e2
	lx "$LE2" ip addr add 198.51.101.1/24 dev e2
	lx "$LS1" ip addr add 198.51.100.11/24 dev s0
	lx "$LS1" ip addr add 198.51.100.12/24 dev s0
	lx "$LS2" ip addr add 198.51.101.21/24 dev s0
	lx "$LS2" ip addr add 198.51.101.22/24 dev s0
	lx "$LM" ip addr add 10.255.1.1/30 dev m1
	lx "$LM" ip addr add 10.255.2.1/30 dev m2
	lx "$LS1" ip addr add 10.255.1.2/30 dev m0
	lx "$LS2" ip addr add 10.255.2.2/30 dev m0
	for n in 3 4 5; do
		lx "$LM" ip addr add "10.255.$n.1/30" dev "m$n"
	done
	lx "$LI" ip addr add 10.255.3.2/30 dev m0
	lx "$LE1" ip addr add 10.255.4.2/30 dev m0
	lx "$LE2" ip addr add 10.255.5.2/30 dev m0
	for n in "$LC c0" "$LI i0" "$LI i1" "$LX x0" "$LX x1" "$LX x2" \
	    "$LE1 e1" "$LE1 e2" "$LE2 e1" "$LE2 e2" "$LS1 s0" "$LS2 s0" \
	    "$LS1 m0" "$LS2 m0" "$LM m1" "$LM m2" "$LM m3" "$LM m4" "$LM m5" \
	    "$LI m0" "$LE1 m0" "$LE2 m0"; do
		set -- $n
		lx "$1" ip link set "$2" up
	done
	lx "$LC" ip route add default via 192.0.2.1
	lx "$LS1" ip route add default via 198.51.100.1
	lx "$LS2" ip route add default via 198.51.101.1
	# The forwarders' own kernels must not forward what cats-fwd handles.
	for n in "$LI" "$LE1" "$LE2"; do
		lx "$n" sysctl -qw net.ipv4.ip_forward=0
		lx "$n" sysctl -qw net.ipv6.conf.all.forwarding=0
	done
	# The core is a plain IPv6 router toward the SIDs' locators, with
	# an SRv6 End SID of its own (the Linux kernel's seg6local).
	lx "$LX" sysctl -qw net.ipv6.conf.all.forwarding=1
	lx "$LX" sysctl -qw net.ipv6.conf.all.seg6_enabled=1
	for n in x0 x1 x2; do
		lx "$LX" sysctl -qw "net.ipv6.conf.$n.seg6_enabled=1"
	done
	lx "$LX" ip -6 route add 2001:db8:1::/48 via 2001:db8:f0::1 dev x0
	lx "$LX" ip -6 route add 2001:db8:2::/48 via 2001:db8:f1::2 dev x1
	lx "$LX" ip -6 route add 2001:db8:3::/48 via 2001:db8:f2::2 dev x2
	lx "$LX" ip -6 route add 2001:db8:ff::1/128 encap seg6local action End dev x0
	# Neighbours known up front (cats-fwd sends to fixed peers).
	lx "$LC" ip neigh replace 192.0.2.1 lladdr "$(loop_mac "$LI" i0)" dev c0
	lx "$LX" ip -6 neigh replace 2001:db8:f0::1 lladdr "$(loop_mac "$LI" i1)" dev x0
	lx "$LX" ip -6 neigh replace 2001:db8:f1::2 lladdr "$(loop_mac "$LE1" e1)" dev x1
	lx "$LX" ip -6 neigh replace 2001:db8:f2::2 lladdr "$(loop_mac "$LE2" e1)" dev x2
	lx "$LS1" ip neigh replace 198.51.100.1 lladdr "$(loop_mac "$LE1" e2)" dev s0
	lx "$LS2" ip neigh replace 198.51.101.1 lladdr "$(loop_mac "$LE2" e2)" dev s0
}

# ---- configuration: keys, site agents, the network view ----

loop_files() {
	local s n
	sh "$LOOP_EX/keys/make-keys.sh" "$LOOP_DIR/keys" >/dev/null || return 1
	for n in 1 2; do
		cat >"$LOOP_DIR/sma$n.conf" <<EOF
# cats-sma of site $n (written by loop_net.bash)
id = sma-site$n
site = site$n
egress = EF-$n
audit = file:$LOOP_DIR/log/sma$n.audit
[auth]
mode = token
issuers = $LOOP_DIR/keys/site-ca.pub
[timing]
interval = ${LOOP_INTERVAL}s
ttl = 2x
grace = ${LOOP_GRACE}s
confirm = 2
advert-ttl = $((3 * LOOP_KEEPALIVE))s
[update]
heartbeat = ${LOOP_KEEPALIVE}s
# Load is measured every second; steering follows it within a second or two.
min-interval = 1s
# Instances are killed and restarted seconds apart here: a returning one
# would stay damped for minutes.  The penalties are still audited.
dampening = observe
[northbound]
key = $LOOP_DIR/keys/sma-site$n.psk
[validate]
healthy-after = 2
unhealthy-after = 2
EOF
		for s in $LOOP_INSTANCES; do
			IFS=: read -r _ site addr _ _ <<<"$s"
			[ "$site" = "$n" ] || continue
			printf '[sci "%s:80"]\ncs-id = S1\n' "$addr" \
				>>"$LOOP_DIR/sma$n.conf"
		done
	done
	loop_nst >"$LOOP_DIR/nst.jsonl"
	[ -z "$LOOP_TLS" ] || loop_certs
}

# The certificates of the management and control links
# (examples/keys/make-certs.sh): cats-select's (the C-PS's, every stage's)
# names the C-PS's addresses on all five links; each site agent's names its
# C-SMA, the CS-ID and the site it may report (cats-select(1) THE C-SMA
# INGEST); each forwarder has its own; sma-old is another of site 2's,
# which the demo revokes.
loop_certs() {
	sh "$LOOP_EX/keys/make-certs.sh" "$LOOP_DIR/tls" \
		"cats-select=IP:10.255.1.1,IP:10.255.2.1,IP:10.255.3.1,IP:10.255.4.1,IP:10.255.5.1" \
		"sma-site1=URI:cats:sma:sma-site1,URI:cats:cs:S1,URI:cats:site:site1" \
		"sma-site2=URI:cats:sma:sma-site2,URI:cats:cs:S1,URI:cats:site:site2" \
		"sma-old=URI:cats:sma:sma-site2,URI:cats:cs:S1,URI:cats:site:site2" \
		IF-1 EF-1 EF-2 >/dev/null || return 1
	printf '[http]\nca-file = %s\n' "$LOOP_DIR/tls/ca.crt" \
		>>"$LOOP_DIR/sma1.conf"
	printf '[http]\nca-file = %s\n' "$LOOP_DIR/tls/ca.crt" \
		>>"$LOOP_DIR/sma2.conf"
}

# The C-PS's TLS files, one option a line (cats-cps gives them to its
# stages; the filters' cats-select takes them itself).
loop_tls_opts() {
	[ -n "$LOOP_TLS" ] || return 0
	printf '%s\n' "--tls-cert=$LOOP_DIR/tls/cats-select.crt" \
		"--tls-key=$LOOP_DIR/tls/cats-select.key" \
		"--tls-ca=$LOOP_DIR/tls/ca.crt" "--tls-crl=$LOOP_DIR/tls/crl.pem"
}

# ---- the forwarders' control channels ----
#
# Without LOOP_TLS, unix sockets in $LOOP_DIR (select.sock, bind.sock);
# with it, tls: on the control links: cats-select on port 8402, cats-bind
# on 8403, the forwarders presenting their own certificates.
#   loop_chan listen NAME       the --listen of select or bind
#   loop_chan to NAME FWD       what forwarder FWD (IF-1, EF-1, EF-2) dials
#   loop_chan probe NAME        it listens (from the C-PS's host)
#   loop_chan tls FWD           the forwarder's --tls-* options
loop_chan() {
	local port=8402 k i=${LOOP_INST:-}
	[ "$2" = bind ] && port=8403
	# Instance b of a redundant C-PS (LOOP_HA): ports 10 above.
	[ -z "$i" ] || port=$((port + 10))
	case $1 in
	listen)
		if [ -n "$LOOP_TLS" ]; then echo "tls:0.0.0.0:$port"
		else echo "unix:$LOOP_DIR/$2$i.sock"; fi
		;;
	to)
		case $3 in IF-1) k=3 ;; EF-1) k=4 ;; *) k=5 ;; esac
		if [ -n "$LOOP_TLS" ]; then echo "tls:10.255.$k.1:$port"
		else echo "unix:$LOOP_DIR/$2$i.sock"; fi
		;;
	probe)
		if [ -n "$LOOP_TLS" ]; then
			lx "$LM" ss -Hltn "sport = :$port" | grep -q .
		else
			python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' "$LOOP_DIR/$2$i.sock"
		fi
		;;
	tls)
		[ -z "$LOOP_TLS" ] ||
			echo "--tls-cert $LOOP_DIR/tls/$2.crt --tls-key $LOOP_DIR/tls/$2.key" \
				"--tls-ca $LOOP_DIR/tls/ca.crt --tls-crl $LOOP_DIR/tls/crl.pem"
		;;
	esac
}

# The selector's network view, IF-1 to each egress, derived from the TE
# database by cats-pce itself (examples/nst-from-tedb.sh).
loop_nst() {
	sh "$LOOP_EX/nst-from-tedb.sh" "$LOOP_EX/topology.json" IF-1 EF-1 EF-2
}

# ---- the C-SMA -> C-PS northbound ----

# The one place where site agents are wired to the C-PS: each cats-sma
# sends its advertisements over HTTP (cats-northbound(7)), MAC'd with its
# PSK (keys/sma-siteN.psk), to cats-select's C-SMA ingest on the management
# link; cats-select knows their keys (keys/sma.ring) and lets each
# advertise S1 only, with locators and the egress of its own site.  A heartbeat every $LOOP_KEEPALIVE s keeps the
# entries (advert-ttl is three times that); a restarted C-PS asks the
# agents for a full sync in its acks.  Each agent also writes a copy of
# what it queued to $LOOP_DIR/metricsN.cbor (loop_metrics reads them).
# With LOOP_TLS, the links speak https: the C-PS's ingest requires a
# client certificate of the loop's CA, and each agent's certificate limits
# it to its own C-SMA, CS-ID and site.
#   loop_northbound url N       the --to of site N's cats-sma
#   loop_northbound select-args cats-select's ingest options
#   loop_northbound probe       the ingest answers (from the C-PS's host)
loop_northbound() {
	local sch=http
	[ -z "$LOOP_TLS" ] || sch=https
	case $1 in
	url)
		echo "$sch://10.255.$2.1:$LOOP_NB_PORT/"
		;;
	probe)
		if [ -n "$LOOP_TLS" ]; then
			lx "$LM" curl -s -o /dev/null --cacert "$LOOP_DIR/tls/ca.crt" \
				--cert "$LOOP_DIR/tls/sma-site1.crt" \
				--key "$LOOP_DIR/tls/sma-site1.key" \
				"https://127.0.0.1:$LOOP_NB_PORT/"
		else
			lx "$LM" curl -s -o /dev/null "http://127.0.0.1:$LOOP_NB_PORT/"
		fi
		;;
	select-args)
		echo "--ingest $sch://0.0.0.0:$LOOP_NB_PORT/" \
			"--ingest-keys $LOOP_DIR/keys/sma.ring" \
			"--sma sma-site1=S1 --sma sma-site2=S1" \
			"--sma-locators sma-site1=198.51.100.0/24" \
			"--sma-locators sma-site2=198.51.101.0/24" \
			"--sma-egresses sma-site1=EF-1 --sma-egresses sma-site2=EF-2"
		;;
	esac
}

# ---- the C-PS ----
#
# LOOP_CPS=cps: one cats-cps (log/cps.err, which log/select.err, pce.err
# and bind.err name too), its control input on fifo f0, its output in
# bind.cbor, cats-pce's output tapped into cps.cbor (the path replies, for
# traces).  A stage stopped with loop_stop is restarted by cats-cps;
# loop_select_start, loop_pce_start and loop_bind_start then wait for it.
#
# LOOP_CPS=filters: cats-select | cats-pce | tee | cats-bind, joined by
# fifos that one idle process holds open at both ends, so that each stage
# can be stopped and started alone (no EOF, no SIGPIPE for its neighbours;
# what a stopped stage has not read waits in the fifo).  The tee keeps the
# path replies (decision + path) for traces.

loop_fifos() {
	local f
	for f in f0 f1 f2 f3; do
		mkfifo "$LOOP_DIR/$f"
	done
	sleep 2147483647 0<>"$LOOP_DIR/f0" 3<>"$LOOP_DIR/f1" \
		4<>"$LOOP_DIR/f2" 5<>"$LOOP_DIR/f3" >/dev/null 2>&1 &
	echo $! >"$LOOP_DIR/pid/holder"
}

# The options of each stage, one a line (loop_cps_conf writes them as the
# sections of cats-cps's file; the filters get them as arguments).
loop_select_opts() {
	printf '%s\n' --id=cps --seed=1 "--services=$LOOP_EX/services.jsonl" \
		"--net=$LOOP_DIR/nst.jsonl" "--keys=$LOOP_DIR/keys/select.ring" \
		"--listen=$(loop_chan listen select)" \
		"--audit=file:$LOOP_DIR/log/select$LOOP_INST.audit" \
		"$([ "${LOOP_CPS:-cps}" = cps ] && echo --dump-to ||
			echo --stats-to)=file:$LOOP_DIR/select$LOOP_INST.stats" \
		"--state=$LOOP_DIR/select$LOOP_INST.state" $(loop_prom select | tr ' ' =) \
		$(loop_northbound select-args | sed 's/--\([a-z-]*\) /--\1=/g')
}
loop_pce_opts() {
	printf '%s\n' "-t" "$LOOP_EX/topology.json" $(loop_prom pce | tr ' ' =)
}
loop_bind_opts() {
	if [ -n "$LOOP_HA" ]; then
		printf '%s\n' "--etcd=$LOOP_ETCD" "--etcd-prefix=/loop/$LOOP_ID/"
	else
		echo "--journal=$LOOP_DIR/journal"
	fi
	printf '%s\n' --id=cats-bind \
		$(loop_prom bind | tr ' ' =) \
		"--listen=$(loop_chan listen bind)" \
		"--keys=$LOOP_DIR/keys/bind.ring" "--key=$LOOP_DIR/keys/cats-bind.key" \
		"--trace=$LOOP_DIR/bind$LOOP_INST.trace" --idle=30s \
		${LOOP_FSYNC:+"--fsync=$LOOP_FSYNC"} \
		${LOOP_CLIENT_BINDINGS:+"--limit=client-bindings=$LOOP_CLIENT_BINDINGS"}
}

# cats-cps's configuration: a section per stage, each option a line.
loop_cps_conf() {
	local s o
	echo "# cats-cps of the loop (written by loop_net.bash)"
	echo "id = cps$LOOP_INST"
	echo "tap = file:$LOOP_DIR/cps$LOOP_INST.cbor"
	echo "stats-to = file:$LOOP_DIR/cps$LOOP_INST.stats"
	loop_tls_opts | sed 's/^--\([a-z-]*\)=/\1 = /'
	for s in select pce bind; do
		printf '[%s]\n' "$s"
		"loop_${s}_opts" | while IFS= read -r o; do
			case $o in
			--*=*) o=${o#--}; printf '%s = %s\n' "${o%%=*}" "${o#*=}" ;;
			--*) printf '%s =\n' "${o#--}" ;;
			-?) printf '%s = ' "${o#-}" ;;
			*) printf '%s\n' "$o" ;;
			esac
		done
	done
}

# The pid of a stage of cats-cps (select, pce, bind).
loop_stage_pid() {
	local p
	p=$(cat "$LOOP_DIR/pid/cps$LOOP_INST" 2>/dev/null) || return 1
	pgrep -P "$p" -x "cats-$1"
}

# Wait until cats-cps runs stage $1 (not pid $2) and its sockets answer.
loop_stage_wait() {
	local p
	loop_wait 50 sh -c "p=\$(pgrep -P $(cat "$LOOP_DIR/pid/cps$LOOP_INST") -x cats-$1) && [ \"\$p\" != '${2:-}' ]" || return 1
	case $1 in
	select)
		loop_wait 50 loop_northbound probe &&
		loop_wait 50 loop_chan probe select
		;;
	bind)
		# A standby's binding stage opens nothing.
		[ -z "$LOOP_HA" ] || return 0
		loop_wait 50 loop_chan probe bind
		;;
	esac
}

loop_cps_svc_start() {
	local s
	local i=$LOOP_INST
	loop_cps_conf >"$LOOP_DIR/cps$i.conf"
	[ -p "$LOOP_DIR/f0$i" ] || mkfifo "$LOOP_DIR/f0$i"
	if ! loop_alive "holder$i"; then
		sleep 2147483647 0<>"$LOOP_DIR/f0$i" >/dev/null 2>&1 &
		echo $! >"$LOOP_DIR/pid/holder$i"
	fi
	for s in select pce bind; do
		ln -sf "cps$i.err" "$LOOP_DIR/log/$s$i.err"
	done
	loop_bg "cps$i" "$LM" "$LOOP_DIR/f0$i" "$LOOP_DIR/bind$i.cbor" cats-cps \
		-c "$LOOP_DIR/cps$i.conf" "$@"
	for s in select pce bind; do
		loop_stage_wait "$s" || return 1
	done
}

loop_select_start() {
	if [ "$LOOP_CPS" = cps ]; then
		loop_stage_wait select "$(cat "$LOOP_DIR/stopped.select" 2>/dev/null)"
		return
	fi
	rm -f "$LOOP_DIR/select.sock"	# left by a killed one
	local o=() a
	while IFS= read -r a; do o+=("$a"); done < <(loop_select_opts; loop_tls_opts)
	loop_bg select "$LM" "$LOOP_DIR/f0" "$LOOP_DIR/f1" cats-select \
		"${o[@]}" "$@"
	loop_wait 50 loop_chan probe select &&
	loop_wait 50 loop_northbound probe
}

loop_pce_start() {
	if [ "$LOOP_CPS" = cps ]; then
		loop_stage_wait pce "$(cat "$LOOP_DIR/stopped.pce" 2>/dev/null)"
		return
	fi
	loop_bg pce "$LM" "$LOOP_DIR/f1" "$LOOP_DIR/f2" cats-pce \
		-t "$LOOP_EX/topology.json"
	loop_bg tee "$LM" "$LOOP_DIR/f2" "$LOOP_DIR/f3" tee -a "$LOOP_DIR/cps.cbor"
}

loop_bind_start() {
	if [ "$LOOP_CPS" = cps ]; then
		loop_stage_wait bind "$(cat "$LOOP_DIR/stopped.bind" 2>/dev/null)"
		return
	fi
	rm -f "$LOOP_DIR/bind.sock"
	local o=() a
	while IFS= read -r a; do o+=("$a"); done < <(loop_bind_opts; loop_tls_opts)
	loop_bg bind "$LM" "$LOOP_DIR/f3" "$LOOP_DIR/bind.cbor" cats-bind \
		"${o[@]}" "$@"
	loop_wait 50 loop_chan probe bind
}

# The etcd of a redundant C-PS (LOOP_HA): one member on the C-PS's
# loopback, its data in the run's directory.
LOOP_ETCD=http://127.0.0.1:2379
loop_etcd_start() {
	loop_bg etcd "$LM" - - etcd --name loop --data-dir "$LOOP_DIR/etcd" \
		--listen-client-urls "$LOOP_ETCD" --advertise-client-urls "$LOOP_ETCD" \
		--listen-peer-urls http://127.0.0.1:2380 \
		--initial-advertise-peer-urls http://127.0.0.1:2380 \
		--initial-cluster loop=http://127.0.0.1:2380
	loop_wait 100 lx "$LM" curl -sf -m 1 "$LOOP_ETCD/health"
}

# Instance b of a redundant C-PS (LOOP_HA): the same service, its own
# files, sockets and ingest port; its binding stage a standby.
loop_cps_b_start() {
	LOOP_INST=-b LOOP_NB_PORT=$((LOOP_NB_PORT + 10)) loop_cps_svc_start "$@"
}

# The --select and --bind options of forwarder $2 ($1 all, or bind only):
# both instances' with LOOP_HA (select follows bind: the same order).
loop_ctl_eps() {
	local i
	for i in "" ${LOOP_HA:+-b}; do
		[ "$1" = bind ] || echo "--select $(LOOP_INST=$i loop_chan to select "$2")"
		echo "--bind $(LOOP_INST=$i loop_chan to bind "$2")"
	done
}

loop_cps_start() {
	if [ "$LOOP_CPS" = cps ]; then
		[ -z "$LOOP_HA" ] || loop_etcd_start || return 1
		loop_cps_svc_start || return 1
		[ -z "$LOOP_HA" ] || loop_cps_b_start
		return
	fi
	loop_fifos &&
	loop_select_start &&
	loop_pce_start &&
	loop_bind_start
}

# ---- forwarders ----

loop_peer_keys() {
	[ -z "$LOOP_PEER_KEYS" ] || echo "--peer-keys $LOOP_DIR/keys/cats-bind.pub"
}

loop_ingress_start() {
	local n0
	n0=$(loop_log_count IF-1 forwarding)
	loop_bg IF-1 "$LI" - - cats-fwd --id IF-1 -v \
		--client "af_packet:i0,peer=$(loop_mac "$LC" c0)" \
		--core "af_packet:i1,peer=$(loop_mac "$LX" x0)" \
		--src6 2001:db8:1::1 --sid 2001:db8:1::1 --src4 192.0.2.1 \
		--service S1=203.0.113.100 --intercept 203.0.113.99 \
		--mode-b udp:7100:0 \
		$(loop_ctl_eps all IF-1) $(loop_chan tls IF-1) \
		--key "$LOOP_DIR/keys/IF-1.psk" $(loop_peer_keys) \
		--stats "file:$LOOP_DIR/IF-1.stats" --icmp-unreach \
		$([ "$LOOP_CPS" = cps ] || echo --no-path-down) \
		--ring-frames "${LOOP_RING:-64}" $(loop_prom IF-1) "$@"
	loop_wait 50 loop_log_more IF-1 forwarding "$n0"
}

loop_egress_start() {
	local n=$1 ns nets n0
	shift
	n0=$(loop_log_count "EF-$n" forwarding)
	if [ "$n" = 1 ]; then ns=$LE1 nets=198.51.100.0/24; else ns=$LE2 nets=198.51.101.0/24; fi
	loop_bg "EF-$n" "$ns" - - cats-fwd --id "EF-$n" -v \
		--core "af_packet:e1,peer=$(loop_mac "$LX" x$n)" \
		--site "af_packet:e2,peer=$(loop_mac "$([ "$n" = 1 ] && echo "$LS1" || echo "$LS2")" s0)" \
		--src6 "2001:db8:$((n + 1))::1" --sid "2001:db8:$((n + 1))::1" \
		--owns "$nets" $(loop_ctl_eps bind "EF-$n") \
		$(loop_chan tls "EF-$n") \
		--return "IF-1=$(jq -r '.nodes[] | select(.id == "IF-1") | .srv6_sid' \
			"$LOOP_EX/topology.json")" \
		--key "$LOOP_DIR/keys/EF-$n.psk" $(loop_peer_keys) \
		--stats "file:$LOOP_DIR/EF-$n.stats" --ring-frames "${LOOP_RING:-64}" \
		$(loop_prom "EF-$n") "$@"
	loop_wait 50 loop_log_more "EF-$n" forwarding "$n0"
}

# Counter NAME of a forwarder (IF-1, EF-1, EF-2), from a fresh stats record.
loop_counter() {
	rm -f "$LOOP_DIR/$1.stats"
	kill -USR1 "$(loop_pid "$1")"
	loop_wait 30 test -s "$LOOP_DIR/$1.stats"
	sleep 0.1
	jq -r ".counters.$2" "$LOOP_DIR/$1.stats" | tail -1
}

# ---- sites: instances, SCIs, site agents ----

loop_inst() { local s; for s in $LOOP_INSTANCES; do [ "${s%%:*}" = "$1" ] && echo "$s"; done; }

# Start instance NAME and its SCI reporter.
loop_instance_start() {
	local name site addr base cap ns key
	IFS=: read -r name site addr base cap <<<"$(loop_inst "$1")"
	[ "$site" = 1 ] && ns=$LS1 || ns=$LS2
	key=$LOOP_DIR/keys/sci-${addr}_80
	loop_bg "$name" "$ns" - - $LOOP_PY "$LOOP_EX/demo/instance.py" \
		"$name" "$addr" 80 "$LOOP_DIR/$name.load"
	loop_wait 100 lx "$ns" curl -sf -o /dev/null "http://$addr/" || return 1
	loop_bg "sci-$name" "$ns" - - cats-sci -s "$addr:80" -c S1 \
		-K "$key.token" -k "$key.key" --locator "$addr" --port 80 \
		-I "${LOOP_INTERVAL}s" -t "http://127.0.0.1:840$site/reports" \
		-e "sh $LOOP_EX/demo/sci-metrics.sh $LOOP_DIR/$name.load $base $cap"
}

# Kill instance NAME and its SCI (the instance's host is gone).
loop_instance_kill() {
	loop_stop "sci-$1" KILL
	loop_stop "$1" KILL
}

loop_sma_start() {
	local n=$1 ns
	[ "$n" = 1 ] && ns=$LS1 || ns=$LS2
	local tls=() b=()
	[ -z "$LOOP_TLS" ] || tls=(--tls-cert "$LOOP_DIR/tls/sma-site$n.crt"
		--tls-key "$LOOP_DIR/tls/sma-site$n.key")
	# Instance b's ingest too: the agents advertise to every instance.
	[ -z "$LOOP_HA" ] ||
		b=(-t "$(LOOP_NB_PORT=$((LOOP_NB_PORT + 10)) loop_northbound url "$n")")
	loop_bg "sma$n" "$ns" - - cats-sma -c "$LOOP_DIR/sma$n.conf" \
		-T "$LOOP_DIR/sma$n.state" "${tls[@]}" \
		-l "http://127.0.0.1:840$n/" -a "unix:$LOOP_DIR/sma$n.admin" \
		-t "$(loop_northbound url "$n")" "${b[@]}" \
		-t "file:$LOOP_DIR/metrics$n.cbor"
	loop_wait 50 lx "$ns" curl -sf "http://127.0.0.1:840$n/health"
}

loop_sites_start() {
	local s
	loop_sma_start 1 && loop_sma_start 2 || return 1
	for s in $LOOP_INSTANCES; do
		loop_instance_start "${s%%:*}" || return 1
	done
}

# ---- what the C-PS was told and what it decided (JSON Lines) ----

loop_metrics() { cat "$LOOP_DIR"/metrics[12].cbor 2>/dev/null | cats-cbor decode 2>/dev/null; }
loop_replies() { cats-cbor decode "$LOOP_DIR/cps.cbor" 2>/dev/null | jq -c 'select(.type == "path-rep")'; }
loop_bindout() { cats-cbor decode "$LOOP_DIR/bind.cbor" 2>/dev/null; }

# What the agents advertised, applied the way the C-PS applies it (a full
# snapshot replaces the agent's entries, deltas and withdrawals update
# them): one line per SCI, "csci state health gas ct", tab-separated.
loop_cst() {
	loop_metrics | jq -rs 'reduce (.[] | select(.type == "metric")) as $r ({};
		(if $r.op == "full" and ($r.part // 1) == 1 then .[$r.sma_id] = {} else . end) |
		reduce ($r.entries // [])[] as $e (.; .[$r.sma_id][$e.csci_id] = $e)) |
		[.[][]] | sort_by(.csci_id)[] |
		[.csci_id, .state, .health, .gas, .comp_time_ms] | @tsv'
}

# The C-PS's own table (cats-select dumps it on SIGUSR2), in loop_cst's
# format.
loop_cps_cst() {
	local n0 p
	p=$(loop_pid select) || return 1
	n0=$(cats-cbor decode "$LOOP_DIR/select.stats" 2>/dev/null | wc -l)
	kill -USR2 "$p"
	loop_wait 30 sh -c "cats-cbor decode '$LOOP_DIR/select.stats' 2>/dev/null |
		tail -n +$((n0 + 1)) | grep -q '\"type\":\"net\"'" || return 1
	cats-cbor decode "$LOOP_DIR/select.stats" 2>/dev/null | tail -n +$((n0 + 1)) |
		jq -r 'select(.type == "metric") | .entries[]? |
		[.csci_id, .state, .health, .gas, .comp_time_ms] | @tsv'
}

# True when SCI CSCI was last advertised with state STATE (and health).
loop_cst_is() {
	loop_cst | awk -v c="$1" -v s="$2" -v h="${3:-}" \
		'$1 == c && $2 == s && (h == "" || $3 == h) { ok = 1 } END { exit !ok }'
}

# True when SCI CSCI was last advertised with computing time MS.
loop_ct_is() {
	loop_cst | awk -v c="$1" -v t="$2" '$1 == c && $5 == t { ok = 1 } END { exit !ok }'
}

# Wait until every instance is advertised HEALTHY.
loop_wait_ready() {
	local s name addr
	for s in $LOOP_INSTANCES; do
		IFS=: read -r name _ addr _ <<<"$s"
		loop_wait "${1:-150}" loop_cst_is "$addr:80" HEALTHY HEALTHY || return 1
	done
}

# ---- clients ----

# curl from the client namespace: loop_curl URL [curl options].  Sets
# LOOP_BODY (the answer), LOOP_PORT (the client's TCP port: the flow) and
# LOOP_RC (curl's exit status, also returned); curl's error in LOOP_ERR.
loop_curl() {
	LOOP_PORT=$(lx "$LC" curl -sS -m "${LOOP_CURL_TIMEOUT:-5}" \
		-o "$LOOP_DIR/body" -w '%{local_port}' "$@" 2>"$LOOP_DIR/curl.err")
	LOOP_RC=$?
	LOOP_BODY=$(cat "$LOOP_DIR/body" 2>/dev/null)
	LOOP_ERR=$(cat "$LOOP_DIR/curl.err")
	rm -f "$LOOP_DIR/body" "$LOOP_DIR/curl.err"
	return $LOOP_RC
}

# One UDP datagram with a Mode B request envelope (CS-ID) at offset 0:
# loop_modeb CSID DST PORT TEXT.
loop_modeb() {
	lx "$LC" $LOOP_PY -c 'import socket, sys
cs = sys.argv[1].encode()
tlv = bytes([1, len(cs)]) + cs
env = bytes([0xCA, 0x75, 1, len(tlv)]) + tlv
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(
    env + sys.argv[4].encode(), (sys.argv[2], int(sys.argv[3])))' "$@"
}

# ---- what the C-PS decided, by client port or transaction ----

# The path reply (the decision and its path) of the flow from client port P.
loop_reply_of() {
	loop_replies | jq -c --argjson p "$1" 'select(.flow.sport == $p)' | tail -1
}
# The last error record that ended a flow from client port P, or to
# destination address A: loop_error_of P | loop_error_to A.
loop_error_of() {
	loop_bindout | jq -c --argjson p "$1" \
		'select(.type == "error" and .flow.sport == $p)' | tail -1
}
loop_error_to() {
	loop_bindout | jq -c --arg a "$1" \
		'select(.type == "error" and .flow.dst == $a)' | tail -1
}
# The forwarder's own counters of the binding of transaction T (a status
# record, written on SIGUSR2): loop_fwd_counters FWD T.
loop_fwd_counters() {
	local n
	n=$(wc -l <"$LOOP_DIR/log/$1.err")
	kill -USR2 "$(loop_pid "$1")"
	loop_wait 20 sh -c "tail -n +$((n + 1)) '$LOOP_DIR/log/$1.err' | grep -q '\"txn\":$2,'"
	tail -n +$((n + 1)) "$LOOP_DIR/log/$1.err" | grep "\"txn\":$2," | tail -1
}
# The binding installed for transaction T.
loop_binding_of() {
	loop_bindout | jq -c --argjson t "$1" \
		'select(.type == "binding" and .txn == $t and .op == "install")' | head -1
}
# The instance name of a locator or CSCI-ID.
loop_name_of() {
	local s name addr
	for s in $LOOP_INSTANCES; do
		IFS=: read -r name _ addr _ <<<"$s"
		[ "$addr" = "${1%:*}" ] && echo "$name" && return
	done
	echo "$1"
}

# ---- the whole loop ----

loop_up() {
	LOOP_DIR=$(mktemp -d "/tmp/cats-loop.$LOOP_ID.XXXXXX")
	export LOOP_DIR
	mkdir -p "$LOOP_DIR/log" "$LOOP_DIR/pid"
	loop_net_up &&
	loop_files &&
	loop_cps_start &&
	loop_egress_start 1 && loop_egress_start 2 &&
	loop_ingress_start &&
	loop_sites_start
}

# Remove everything loop_up made; safe to call twice, and with half a loop.
# Each step may fail (a process already gone, a namespace never made):
# under bats's errexit (setup_file, teardown_file) a failed step ended it
# there, and the fifo holder left running kept the file's output open, so
# bats waited for it until the runner's timeout.
loop_down() {
	local f n
	if [ -n "${LOOP_DIR:-}" ] && [ -d "$LOOP_DIR/pid" ]; then
		for f in "$LOOP_DIR"/pid/*; do
			[ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
		done
		sleep 0.3
		for f in "$LOOP_DIR"/pid/*; do
			[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
		done
	fi
	for n in $LOOP_NS; do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "$n" 2>/dev/null || true
	done
	if [ -n "${LOOP_DIR:-}" ] && [ -d "$LOOP_DIR" ] && [ -z "${LOOP_KEEP:-}" ]; then
		rm -rf "$LOOP_DIR"
	fi
	true
}
