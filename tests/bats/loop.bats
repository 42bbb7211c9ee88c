#!/usr/bin/env bats
# The whole loop (examples/demo/loop_net.bash, the harness of `make demo`):
# real curl from a client namespace through cats-fwd, cats-select | cats-pce
# | cats-bind, the kernel's SRv6 core and cats-fwd egresses to real HTTP
# instances whose SCIs report their real load to cats-sma.

load helper
load loop_helper

setup_file() { loop_file_up t; }

@test "loop: the instance with the lowest latency answers; the decision says why" {
	best_is site1-a
	r=$(loop_reply_of "$LOOP_PORT")
	[ "$(jq -r .status <<<"$r")" = ok ]
	[ "$(jq -r .decision.csci_id <<<"$r")" = 198.51.100.11:80 ]
	[ "$(jq -r .decision.policy <<<"$r")" = min-latency ]
	# 1.5 ms from IF-1 to EF-1 (the TE database) + 3 ms computing time.
	[ "$(jq -r .decision.cost_us <<<"$r")" = 4500 ]
	[ "$(jq -c .path <<<"$r")" = '["IF-1","CORE","EF-1"]' ]
	[ "$(jq -c '[.segments[].sid]' <<<"$r")" = '["2001:db8:2::1"]' ]
}

@test "loop: steering by metrics: load on the best instance moves new flows, and back" {
	loop_wait 50 loop_ct_is 198.51.100.11:80 3
	lx "$LC" curl -s --speed-limit 1 --speed-time 30 -o "$LOOP_DIR/dl1" "http://203.0.113.100/big?mb=3" &
	dl=$!
	# site1-a's SCI reports the connection: 13 ms, so site1-b (6.5 ms) wins.
	loop_wait 60 loop_ct_is 198.51.100.11:80 13
	best_is site1-b
	r=$(loop_reply_of "$LOOP_PORT")
	[ "$(jq -r .decision.cost_us <<<"$r")" = 6500 ]
	wait $dl
	loop_wait 60 loop_ct_is 198.51.100.11:80 3
	best_is site1-a
}

@test "loop: affinity: a running transfer keeps its instance and binding while metrics change" {
	loop_wait 50 loop_ct_is 198.51.100.11:80 3
	req0=$(loop_counter IF-1 requests)
	lx "$LC" curl -s --speed-limit 1 --speed-time 30 -o "$LOOP_DIR/dl2" -w '%{local_port}' \
		"http://203.0.113.100/big?mb=4" >"$LOOP_DIR/dl2.port" &
	dl=$!
	loop_wait 60 loop_ct_is 198.51.100.11:80 13
	# The metrics changed; new flows go elsewhere ...
	best_is site1-b
	best_is site1-b
	# ... and the transfer is not moved.
	wait $dl
	port=$(cat "$LOOP_DIR/dl2.port")
	[ "$(stat -c %s "$LOOP_DIR/dl2")" = $((4 << 20)) ]
	[ "$(sort -u "$LOOP_DIR/dl2")" = site1-a ]
	txn=$(loop_reply_of "$port" | jq -r .txn)
	[ "$(loop_reply_of "$port" | jq -r .decision.csci_id)" = 198.51.100.11:80 ]
	# One binding, installed once, never refreshed or removed meanwhile.
	[ "$(loop_bindout | jq -c --argjson t "$txn" 'select(.type == "binding" and .txn == $t)' | wc -l)" = 1 ]
	[ "$(grep -c "txn=$txn " "$LOOP_DIR/bind.trace")" = 4 ]
	# Three new flows, three requests: the transfer's packets asked nothing.
	[ "$(loop_counter IF-1 requests)" = $((req0 + 3)) ]
}

@test "loop: SCI death: STALE, FAILED, withdrawn; new flows avoid it; it comes back" {
	loop_wait 50 loop_ct_is 198.51.100.11:80 3
	best_is site1-a
	loop_instance_kill site1-a
	loop_wait 100 loop_cst_is 198.51.100.11:80 STALE
	grep -q 'csci=198.51.100.11:80 .*from=HEALTHY to=STALE' "$LOOP_DIR/log/sma1.audit"
	best_is site1-b
	loop_wait 100 loop_cst_is 198.51.100.11:80 FAILED
	grep -q 'csci=198.51.100.11:80 .*from=STALE to=FAILED' "$LOOP_DIR/log/sma1.audit"
	loop_metrics | jq -se 'any(.[] | select(.op == "withdraw" and .reason == "failed") |
		.entries[]; .csci_id == "198.51.100.11:80" and .gas == 0)'
	# The withdrawal reached cats-bind through the C-PS: the flow bound to
	# site1-a a moment ago (idle, not expired) failed with its instance.
	loop_wait 50 grep -q 'ACTIVE -> FAILED (instance-failure)' "$LOOP_DIR/bind.trace"
	# The C-PS no longer has the entry (its CST, dumped on SIGUSR2).
	n0=$(cats-cbor decode "$LOOP_DIR/select.stats" | wc -l)
	kill -USR2 "$(loop_pid select)"
	loop_wait 100 sh -c "cats-cbor decode '$LOOP_DIR/select.stats' | tail -n +$((n0 + 1)) | grep -q sma-site2"
	cats-cbor decode "$LOOP_DIR/select.stats" | tail -n +$((n0 + 1)) |
		jq -se '[.[] | select(.type == "metric") | .entries[]?.csci_id] |
		(index("198.51.100.12:80") != null) and (index("198.51.100.11:80") == null)'
	for i in 1 2 3 4; do
		best_is site1-b
	done
	# Restarted, it reports again: ACTIVE, HEALTHY, and selected again.
	loop_instance_start site1-a
	loop_wait 100 loop_cst_is 198.51.100.11:80 HEALTHY HEALTHY
	best_is site1-a
}

@test "loop: an unknown service fails closed: no connection, the pending record released" {
	b0=$(loop_bindout | jq -s '[.[] | select(.type == "binding" and .op == "install")] | length')
	run loop_curl http://203.0.113.99/
	[ "$status" -ne 0 ]
	has_error_to() { [ -n "$(loop_error_to "$1")" ]; }
	loop_wait 100 has_error_to 203.0.113.99
	e=$(loop_error_to 203.0.113.99)
	[ "$(jq -r .code <<<"$e")" = unresolved-service ]
	[ "$(jq -r .ingress <<<"$e")" = IF-1 ]
	# An explicit CS-ID the catalogue does not know (Mode B, UDP).
	loop_modeb S9 203.0.113.99 7100 hello
	loop_wait 100 sh -c "cats-cbor decode '$LOOP_DIR/bind.cbor' | grep -q '\"code\":\"unknown-cs-id\"'"
	[ "$(loop_counter IF-1 pending)" = 0 ]
	[ "$(loop_counter IF-1 pending_held)" = 0 ]
	[ "$(loop_counter IF-1 errors_received)" -ge 2 ]
	[ "$(loop_counter IF-1 drop_pending_error)" -ge 2 ]
	# No binding was made for either.
	[ "$(loop_bindout | jq -s '[.[] | select(.type == "binding" and .op == "install")] | length')" = "$b0" ]
	best_is site1-a
}

@test "loop: one flow's correlation id from request to decision, path, binding and counters" {
	best_is site1-a
	r=$(loop_reply_of "$LOOP_PORT")
	txn=$(jq -r .txn <<<"$r")
	# The request: the ingress numbers its transactions epoch * 1000 + n.
	epoch=$(sed -n 's/.*IF-1: forwarding (epoch \([0-9]*\)).*/\1/p' "$LOOP_DIR/log/IF-1.err" | tail -1)
	[ $((txn / 1000)) = "$epoch" ]
	jq -e --argjson p "$LOOP_PORT" '.ingress == "IF-1" and .flow.sport == $p and
		.flow.dst == "203.0.113.100" and .decision.cs_id == "S1"' <<<"$r"
	# The binding carries the decision and the path.
	b=$(loop_binding_of "$txn")
	[ "$(jq -r .csci_id <<<"$b")" = "$(jq -r .decision.csci_id <<<"$r")" ]
	[ "$(jq -r .fwd.locator <<<"$b")" = "$(jq -r .decision.locator <<<"$r")" ]
	[ "$(jq -c .fwd.sids <<<"$b")" = "$(jq -c '[.segments[].sid]' <<<"$r")" ]
	[ "$(jq -r .path_id <<<"$b")" = "$(jq -r .path_id <<<"$r")" ]
	[ "$(jq -r .fwd.match.sport <<<"$b")" = "$LOOP_PORT" ]
	id=$(jq -r .id <<<"$b")
	# The flow state machine, by transaction and binding id.
	grep -q "txn=$txn id=$id PENDING -> DESTINATION_SELECTED" "$LOOP_DIR/bind.trace"
	grep -q "txn=$txn id=$id BINDING_READY -> ACTIVE" "$LOOP_DIR/bind.trace"
	# Both forwarders count the flow's packets under that binding.
	for f in IF-1 EF-1; do
		c=$(loop_fwd_counters "$f" "$txn")
		jq -e --argjson id "$id" '.id == $id and .pkts > 0 and .rev_pkts > 0' <<<"$c"
	done
}

@test "loop: garbage on the C-PS sockets is refused, the loop keeps serving" {
	head -c 3000 /dev/urandom | lx "$LM" socat -u - "UNIX-CONNECT:$LOOP_DIR/select.sock" || true
	head -c 3000 /dev/urandom | lx "$LM" socat -u - "UNIX-CONNECT:$LOOP_DIR/bind.sock" || true
	printf '\xa1\x64type\x67binding' | lx "$LM" socat -u - "UNIX-CONNECT:$LOOP_DIR/bind.sock" || true
	# A site agent's push endpoint: refused with 400 or 415, still serving.
	code=$(head -c 2000 /dev/urandom | lx "$LS1" curl -s -o /dev/null -w '%{http_code}' \
		-H 'Content-Type: application/cbor' --data-binary @- http://127.0.0.1:8401/reports)
	[ "$code" = 400 ]
	code=$(lx "$LS1" curl -s -o /dev/null -w '%{http_code}' -d 'x=1' http://127.0.0.1:8401/reports)
	[ "$code" = 415 ]
	sleep 0.3
	loop_alive select
	loop_alive bind
	loop_alive sma1
	loop_wait 100 loop_cst_is 198.51.100.11:80 HEALTHY HEALTHY
	best_is site1-a
}

# A metric record as site 2's agent, MAC'd with its real key, POSTed to the
# C-PS's ingest from site 2: prints the HTTP status.  $1 is the JSON of one
# entry.
rogue_post() {
	local now
	now=$(date +%s%3N)
	printf '{"type":"metric","op":"delta","sma_id":"sma-site2","epoch":%s,"seq":1,"ts":%s,"nonce":%s,"site":"site2","egress":"EF-2","ttl_ms":600000,"entries":[%s]}\n' \
		$((now * 10)) "$now" $((now * 1000 + 999)) "$1" |
		cats-cbor encode | pce-sign -k "$LOOP_DIR/keys/sma-site2.psk" |
		lx "$LS2" curl -s -o /dev/null -w '%{http_code}' \
			-H 'Content-Type: application/cbor-seq' --data-binary @- \
			"$(loop_northbound url 2)metrics"
}

# Packets that reached 198.51.101.99, the rogue locator inside site 2.
rogue_packets() {
	lx "$LS2" nft -j list counter inet "rogue$LOOP_ID" hits |
		jq '.nftables[] | select(.counter) | .counter.packets'
}

@test "loop: a site agent cannot take over another site's instance or point outside its site" {
	best_is site1-a
	lx "$LS2" ip addr add 198.51.101.99/24 dev s0
	lx "$LS2" nft -f - <<EOF
table inet rogue$LOOP_ID {
	counter hits { }
	chain pre { type filter hook prerouting priority -300; ip daddr 198.51.101.99 counter name hits; }
}
EOF
	a0=$(grep -c 'event=ingest-refused sma=sma-site2 owner=sma-site1 ' "$LOOP_DIR/log/select.audit" || true)
	# Site 2's agent (a valid key, allowed S1) claims site1-a, the best
	# instance, with a locator of its own site.
	code=$(rogue_post '{"csci_id":"198.51.100.11:80","cs_id":"S1","health":"HEALTHY","state":"HEALTHY","gas":1000,"comp_time_ms":0,"locator":"198.51.101.99","port":80}')
	[ "$code" = 409 ]
	# The same under another spelling of the CSCI-ID.
	code=$(rogue_post '{"csci_id":" 198.51.100.11:80 ","cs_id":"S1","health":"HEALTHY","state":"HEALTHY","gas":1000,"comp_time_ms":0,"locator":"198.51.101.99","port":80}')
	[ "$code" = 409 ]
	# A first advertisement of a new instance cannot point into site 1.
	code=$(rogue_post '{"csci_id":"rogue:80","cs_id":"S1","health":"HEALTHY","state":"HEALTHY","gas":1000,"comp_time_ms":0,"locator":"198.51.100.12","port":80}')
	[ "$code" = 403 ]
	grep -q 'event=ingest-refused sma=sma-site2 owner=sma-site1 .*status=409' "$LOOP_DIR/log/select.audit"
	[ "$(grep -c 'event=ingest-refused sma=sma-site2 owner=sma-site1 ' "$LOOP_DIR/log/select.audit")" -ge $((a0 + 2)) ]
	grep -q 'event=ingest-refused sma=sma-site2 owner=- .*status=403 .*locator 198.51.100.12 is outside the site of sma-site2' "$LOOP_DIR/log/select.audit"
	# New flows still reach the real instance; nothing reached the rogue
	# locator (the counter is alive: a datagram to it from site 2 counts).
	for i in 1 2 3; do
		best_is site1-a
		[ "$(jq -r .decision.locator <<<"$(loop_reply_of "$LOOP_PORT")")" = 198.51.100.11 ]
	done
	[ "$(rogue_packets)" = 0 ]
	lx "$LS2" bash -c "echo probe >/dev/udp/198.51.101.99/9"
	[ "$(rogue_packets)" -ge 1 ]
	lx "$LS2" nft delete table inet "rogue$LOOP_ID"
	lx "$LS2" ip addr del 198.51.101.99/24 dev s0
}
