#!/usr/bin/env bats
# The deployment of examples/ tested as deployed: `make install DESTDIR=`
# and examples/install.sh into a scratch root, users of their own, then
# the units' ExecStart and the cron entry's command run as those users
# (tests/tools/unit-run, setpriv) in namespaces where the scratch root lies
# over / (tests/tools/deploy-ns): the C-PS under systemd, the site agent
# under cron, by its timer and as a daemon, a forwarder's request through
# the C-PS's socket to a binding.  Everything is removed at the end: the
# users, the scratch root; the namespaces end with their processes.

load helper

setup_file() {
	[ "$(id -u)" = 0 ] || return 0
	export DROOT=$(mktemp -d /tmp/cats-deploy.XXXXXX)
	export DU=catsd$$ DFU=catsf$$
	make -s -C "$TOP" install BUILD="$BUILD" DESTDIR="$DROOT" >"$DROOT.make" 2>&1
	useradd --system --user-group --no-create-home --home-dir /var/lib/cats \
		--shell /usr/sbin/nologin "$DU"
	useradd --system --user-group --groups "$DU" --no-create-home \
		--home-dir /nonexistent --shell /usr/sbin/nologin "$DFU"
	PATH=$DROOT/usr/local/bin:/usr/bin:/bin DESTDIR=$DROOT CATS_USER=$DU \
		CATS_FWD_USER=$DFU sh "$TOP/examples/install.sh" cps fwd site site-cron
}

teardown_file() {
	[ -n "${DROOT:-}" ] || return 0
	userdel "$DFU" 2>/dev/null
	userdel "$DU" 2>/dev/null
	groupdel "$DFU" 2>/dev/null
	groupdel "$DU" 2>/dev/null
	rm -rf "$DROOT" "$DROOT.make"
	true
}

setup() {
	need_root
	T=$(mktemp -d)
	PATH=$TOP/tests/tools:$PATH
}

teardown() {
	rm -rf "$T"
	true
}

# Run the script on stdin in the scratch root (deploy-ns), with the
# helpers below; its output is the test's.
in_root() {
	{
		declare -f wait_progress wait_for runs wait_on dump_whole start_units \
			unit_pid sci_serve cron_run cps_table
		echo "B=$BUILD U=$DU FU=$DFU CBOR=$BUILD/bin/cats-cbor"
		echo 'trap '"'"'echo "in_root: line $LINENO: $BASH_COMMAND: exit $?" >&2'"'"' ERR'
		cat
	} >"$T/script"
	DEPLOY_KEEP="$TOP $BUILD" deploy-ns "$DROOT" "$T/script"
}

# Start the units named, as systemd would start them (unit-run); what
# they write on standard error (the journal) is in /run/log/UNIT.err,
# unit-run's output (the main process's pid first) in /run/log/UNIT.out
# (for wait_on: unit_pid UNIT).
start_units() {
	local u
	mkdir -p /run/log
	for u in "$@"; do
		case $u in
		*@*) unit-run "/etc/systemd/system/${u%%@*}@.${u##*.}" \
			"$(echo "${u#*@}" | sed 's/\.[a-z]*$//')" ;;
		*) unit-run "/etc/systemd/system/$u" ;;
		esac >"/run/log/$u.out" 2>>"/run/log/$u.err"
	done
}
unit_pid() { sed -n 1p "/run/log/$1.out"; }

# The demo's SCIs 198.51.100.11 and .12 serving their reports for pulls,
# with the keys and tokens of make-keys.sh (the SCIs' hosts are not part
# of this deployment: they run as root here).
sci_serve() {
	local a k=/etc/cats/keys
	for a in 198.51.100.11 198.51.100.12; do
		/usr/local/bin/cats-sci -s "$a:80" -c S1 -K "$k/sci-${a}_80.token" \
			-k "$k/sci-${a}_80.key" --locator "$a" --port 80 -g 8 -C 3 \
			-I 60s -l "http://$a:8500/" "$@" 2>>/tmp/sci.err &
	done
	for a in 198.51.100.11 198.51.100.12; do
		wait_on cats-sci curl -sf -o /dev/null "http://$a:8500/report"
	done
}

# The command of /etc/cron.d/cats-sma, run as cron runs it: as the user it
# names, by its SHELL, with its PATH.
cron_run() {
	local f=/etc/cron.d/cats-sma user cmd
	user=$(sed -n 's/^\* \* \* \* \* \([^ ]*\) .*/\1/p' "$f")
	cmd=$(sed -n 's/^\* \* \* \* \* [^ ]* //p' "$f")
	[ "$user" = "$U" ] && [ -n "$cmd" ]
	env -i "$(grep '^PATH=' "$f")" HOME=/var/lib/cats \
		setpriv --reuid="$user" --regid="$user" --init-groups \
		"$(sed -n 's/^SHELL=//p' "$f")" -c "$cmd"
}

# The C-PS's table: cats-select writes it to its --dump-to file on
# SIGUSR2 (the unit's /run/cats/select.stats), read once it is whole.
cps_table() {
	local f=/run/cats/select.stats n0
	n0=$(stat -c %s "$f")
	pkill -USR2 -x cats-select
	dump_whole cats-select "$f" "$n0"
	tail -c +$((n0 + 1)) "$f" | "$B/bin/cats-cbor" decode |
		jq -c 'select(.type == "metric") | .entries[]?'
}

@test "deploy: make install and install.sh give every file its owner and mode" {
	R=$DROOT
	[ -x "$R/usr/local/bin/cats-select" ]
	[ -f "$R/usr/local/share/man/man7/cats.7" ]
	[ "$(stat -c '%U:%G %a' "$R/etc/cats")" = "root:$DU 750" ]
	[ "$(stat -c '%U:%G %a' "$R/etc/cats/keys")" = "root:$DU 750" ]
	[ "$(stat -c '%U:%G %a' "$R/etc/cats/sma-cron.conf")" = "root:$DU 640" ]
	[ "$(stat -c '%U:%G %a %s' "$R/etc/cats/revoked.txt")" = "root:$DU 640 0" ]
	# The site agent's PSK is its user's; every other secret root's.
	[ "$(stat -c '%U %a' "$R/etc/cats/keys/sma-site1.psk")" = "$DU 600" ]
	for f in site-ca.key cats-bind.key IF-1.psk bind.ring select.ring sma.ring; do
		[ "$(stat -c '%U %a' "$R/etc/cats/keys/$f")" = "root 600" ]
	done
	[ "$(stat -c '%U:%G %a' "$R/var/lib/cats")" = "$DU:$DU 750" ]
	[ "$(stat -c '%U:%G %a' "$R/var/log/cats")" = "$DU:$DU 750" ]
	grep -qx "d /var/lib/cats 0750 $DU $DU -" "$R/etc/tmpfiles.d/cats.conf"
	grep -q "^\* \* \* \* \* $DU /usr/local/bin/cats-sma " "$R/etc/cron.d/cats-sma"
	grep -qx "User=$DU" "$R/etc/systemd/system/cats-cps.service"
	grep -qx "User=$DFU" "$R/etc/systemd/system/cats-fwd@.service"
	# Every file a unit or the cron entry names is there.
	for f in "$R"/etc/systemd/system/*.service "$R/etc/cron.d/cats-sma" \
	    "$R/etc/cats/sma.conf" "$R/etc/cats/sma-cron.conf"; do
		for p in $(grep -v "^#" "$f" | grep -o "/etc/cats/[A-Za-z0-9./_-]*" | sort -u); do
			case $p in */fwd-*|*/keys/|*%i*) continue ;; esac
			[ -e "$R$p" ] || { echo "$f names $p, not installed"; false; }
		done
	done
	# Again: the same files, the keys kept.
	cp "$R/etc/cats/keys/site-ca.key" "$T/ca"
	PATH=$R/usr/local/bin:/usr/bin:/bin DESTDIR=$R CATS_USER=$DU \
		CATS_FWD_USER=$DFU sh "$TOP/examples/install.sh" cps site-cron
	cmp "$T/ca" "$R/etc/cats/keys/site-ca.key"
}

@test "deploy: the C-PS units, the cron site agent and a forwarder's request, as their users" {
	run in_root <<'EOF'
start_units cats-cps.service
wait_on "$(unit_pid cats-cps.service)" test -S /run/cats/select.sock
wait_on "$(unit_pid cats-cps.service)" test -S /run/cats/bind.sock
wait_on "$(unit_pid cats-cps.service)" curl -s -o /dev/null http://cps.example:8401/
ps -o user= -C cats-select,cats-pce,cats-bind | sort -u | grep -qx "$U"
sci_serve
# Every minute, by cron: the first run syncs fully, the next goes on.
cron_run
test -s /var/lib/cats/sma.state
test "$(stat -c %U /var/lib/cats/sma.state)" = "$U"
cps_table | jq -se 'length == 2 and all(.[]; .state == "ACTIVE")'
grep -q 'full sync' /var/log/cats/sma-cron.log
grep 'sync_last_full' /var/lib/cats/cats-sma.prom
grep -q '^cats_sma_sync_last_full_seconds{sma_id="sma-site1"} [1-9]' /var/lib/cats/cats-sma.prom
cron_run
cps_table | jq -se 'any(.[]; .csci_id == "198.51.100.11:80" and .state == "HEALTHY")'
grep -q 'incremental sync' /var/log/cats/sma-cron.log
# A forwarder (user cats-fwd, group cats) asks the C-PS's socket with its
# PSK; the decision goes through cats-pce and cats-bind to a binding.  It
# stays connected until the binding is there (not for a fixed while).
install -m 0600 -o "$FU" /etc/cats/keys/IF-1.psk /tmp/if1.psk
now=$(date +%s%3N)
printf '{"type":"request","txn":7,"ingress":"IF-1","ts":%s,"gen":1,"flow":{"proto":6,"src":"192.0.2.10","sport":40001,"dst":"203.0.113.100","dport":80},"mode":"none","held":1,"dataplane":"srv6","deadline":%s}\n' "$now" $((now + 5000)) |
	setpriv --reuid="$FU" --regid="$FU" --init-groups \
	"$B/tests/tools/select_client" -k /tmp/if1.psk -t unix:/run/cats/select.sock -w 600000 &
client=$!
wait_on "$(unit_pid cats-cps.service)" test -s /var/log/cats/bind.cbor
kill "$client"
"$B/bin/cats-cbor" decode /var/log/cats/bind.cbor |
	jq -e -c 'select(.type == "binding") | {op, txn, csci_id, sids: .fwd.sids}'
test "$(stat -c %U /var/lib/cats/bind)" = "$U"
EOF
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *'{"op":"install","txn":7,"csci_id":"198.51.100.11:80","sids":["2001:db8:2::1"]}'* ]]
}

@test "deploy: the site agent as a daemon and by its timer, as its user" {
	run in_root <<'EOF'
start_units cats-cps.service
wait_on "$(unit_pid cats-cps.service)" curl -s -o /dev/null http://cps.example:8401/
# cats-sma-once.service (the timer's): one pull of every SCI, then exit 0.
sci_serve
unit-run -w /etc/systemd/system/cats-sma-once.service >/dev/null
test "$(stat -c %U /var/lib/cats/sma.state)" = "$U"
cps_table | jq -se 'length == 2'
pkill -x cats-sci
# cats-sma.service: SCIs push to it (the state of the timer's run kept).
start_units cats-sma.service
wait_on "$(unit_pid cats-sma.service)" curl -s -o /dev/null http://sma.example:8400/
ps -o user= -C cats-sma | grep -qx "$U"
wait_on "$(unit_pid cats-sma.service)" test -S /run/cats-sma/admin.sock
a=198.51.100.11 k=/etc/cats/keys
/usr/local/bin/cats-sci -s "$a:80" -c S1 -K "$k/sci-${a}_80.token" \
	-k "$k/sci-${a}_80.key" --locator "$a" --port 80 -g 2 -C 40 -n 1 \
	-t http://sma.example:8400/reports
pushed() {
	cps_table | jq -se 'any(.[]; .csci_id == "198.51.100.11:80" and .comp_time_ms == 40)'
}
wait_on "$(unit_pid cats-sma.service)" pushed
EOF
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "deploy: the forwarders as cats-fwd@IF-1 and cats-fwd@EF-1, their user and capabilities, steering a flow" {
	run in_root <<'EOF2'
# The ports: a client namespace behind the ingress's i0; its core port i1
# wired straight to the egress's e1; the egress's site port e2 before a
# site namespace with the instance site1-a (198.51.100.11:80).
ip netns add cl
ip netns add site
ip link add i0 type veth peer name c0 netns cl
ip link add i1 type veth peer name e1
ip link add e2 type veth peer name s0 netns site
for l in i0 i1 e1 e2; do ip link set "$l" up; done
sysctl -qw net.ipv4.ip_forward=0
sysctl -qw net.ipv6.conf.all.forwarding=0
ip netns exec cl sh -e -c 'ip link set lo up; ip link set c0 up
	ip addr add 192.0.2.10/24 dev c0; ip route add default via 192.0.2.1'
ip netns exec cl ip neigh replace 192.0.2.1 lladdr "$(cat /sys/class/net/i0/address)" dev c0
ip netns exec site sh -e -c 'ip link set lo up; ip link set s0 up
	ip addr add 198.51.100.11/24 dev s0; ip route add default via 198.51.100.1'
ip netns exec site ip neigh replace 198.51.100.1 lladdr "$(cat /sys/class/net/e2/address)" dev s0
mkdir /tmp/www && echo site1-a >/tmp/www/index.html
ip netns exec site python3 -m http.server -b 198.51.100.11 -d /tmp/www 80 >/dev/null 2>&1 &
mac() { cat "/sys/class/net/$1/address"; }
macns() { ip netns exec "$1" cat "/sys/class/net/$2/address"; }
# What the operator writes (systemd/cats-fwd@.service says so).
echo "CATS_FWD_ARGS=\"--client af_packet:i0,peer=$(macns cl c0) --core af_packet:i1,peer=$(mac e1) --src6 2001:db8:1::1 --sid 2001:db8:1::1 --src4 192.0.2.1 --service S1=203.0.113.100 --select unix:/run/cats/select.sock --bind unix:/run/cats/bind.sock\"" >/etc/cats/fwd-IF-1.env
echo "CATS_FWD_ARGS=\"--core af_packet:e1,peer=$(mac i1) --site af_packet:e2,peer=$(macns site s0) --src6 2001:db8:2::1 --sid 2001:db8:2::1 --owns 198.51.100.0/24 --return IF-1=2001:db8:1::1 --bind unix:/run/cats/bind.sock\"" >/etc/cats/fwd-EF-1.env
# A fresh site and C-PS: the earlier tests' soft state (both instances
# HEALTHY, kept by -T and --state) would be advertised and chosen until
# its TTL ran out, though site1-b is not there in this test.
rm -f /var/lib/cats/sma.state /var/lib/cats/select.state
start_units cats-cps.service
wait_on "$(unit_pid cats-cps.service)" curl -s -o /dev/null http://cps.example:8401/
# Only site1-a reports: it is the one instance the C-PS may choose.
sci_serve
pkill -f 'cats-sci -s 198.51.100.12:80'
# Two runs, as two minutes of cron: an instance is HEALTHY, and chosen, after
# two reports (cats-sma healthy-after 2; the streak is in the -T state).
cron_run
cron_run
start_units cats-fwd@IF-1.service cats-fwd@EF-1.service
wait_on cats-fwd sh -c '[ "$(pgrep -c -x cats-fwd)" = 2 ]'
test "$(ps -o user= -C cats-fwd | sort -u)" = "$FU"
for p in $(pgrep -x cats-fwd); do grep -q '^CapAmb:.*3000$' "/proc/$p/status"; done
# A client's flow to S1: its first packet becomes the ingress's request,
# the C-PS's decision a binding both forwarders commit, and the flow is
# steered to site1-a and back.
wait_on "$(unit_pid cats-cps.service)" grep -q 'forwarder IF-1 connected' /run/log/cats-cps.service.err
wait_on "$(unit_pid cats-cps.service)" grep -q 'forwarder EF-1 connected' /run/log/cats-cps.service.err
steered() { ip netns exec cl curl -sf -m 2 -o /tmp/answer http://203.0.113.100/; }
wait_on cats-fwd steered || { cat /run/log/*.err; false; }
cat /tmp/answer
"$B/bin/cats-cbor" decode /var/log/cats/bind.cbor |
	jq -c 'select(.type == "binding" and .op == "install") | {ingress, egress, csci_id}' | sort -u
EOF2
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *site1-a* ]]
	[[ "$output" == *'{"ingress":"IF-1","egress":"EF-1","csci_id":"198.51.100.11:80"}'* ]]
}

@test "deploy: the C-PS's configuration keeps steering two days on (replay): its network view does not expire" {
	# The debug recording, then the same metrics and requests two days
	# later, through cats-select with the start-up files of its unit.
	jq -c '.ts += 172800000 | if .deadline then .deadline += 172800000 else . end |
		if .seq then .seq += 1000 else . end |
		if .entries then .entries |= map(if .ts then .ts += 172800000 else . end) else . end' \
		"$TOP/examples/debug/metrics.jsonl" "$TOP/examples/debug/requests.jsonl" |
		jq -sc 'sort_by(.ts)[]' >"$T/later.jsonl"
	cat "$TOP/examples/debug/metrics.jsonl" "$T/later.jsonl" >"$DROOT/var/lib/cats/replay.jsonl"
	run in_root <<'EOF2'
# The selector's start-up options in the service's configuration
# (configuration, catalogue, network view), without its sockets and keys,
# in replay, as the unit's user.
cmd=(/usr/local/bin/cats-select)
while read -r k _ v; do
	case $k in
	config|services|net|tedb|net-ttl|metric-ttl|policy|seed) cmd+=("--$k" "$v") ;;
	esac
done < <(awk '/^\[/ { s = $0; next } s == "[select]" && / = /' /etc/cats/cps.conf)
echo "${cmd[*]}" >&2
"$B/bin/cats-cbor" encode /var/lib/cats/replay.jsonl |
	setpriv --reuid="$U" --regid="$U" --init-groups "${cmd[@]}" --replay --no-auth |
	"$B/bin/cats-cbor" decode |
	jq -c 'select(.type == "path-req" or .type == "error") | [.txn, .decision.csci_id // .code]'
EOF2
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"--tedb /etc/cats/topology.json"* ]]
	# The requests two days on are steered as those of the recording.
	[[ "$output" == *'[1001,"198.51.100.11:80"]
[1002,"198.51.100.12:80"]
[1003,"198.51.101.21:80"]
[1004,"198.51.101.21:80"]
[1005,"198.51.100.11:80"]
[1006,"unresolved-service"]'* ]]
}
