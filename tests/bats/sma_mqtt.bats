#!/usr/bin/env bats
# cats-sma and cats-sci over MQTT (seed 000 §4.1): a real mosquitto 2.0 on
# loopback, TLS with client certificates (a CA made here with openssl),
# per-client ACLs by certificate name, QoS 1, and the broker restarted.
load helper

setup_file() {
	command -v mosquitto >/dev/null || skip "no mosquitto (make deps)"
}

setup() {
	W="$BATS_TEST_TMPDIR"
	PIDS=()
	cd "$W"
	make_certs
	cats-key gen -n issuer -o iss >/dev/null
	cats-key token -k iss.key -s sci-A -c ARS -o A.tok
	cats-key token -k iss.key -s sci-B -c ARS -o B.tok
	MP=$(free_port)
	B=mqtts://127.0.0.1:$MP
	# Each SCI may publish to its own topic only; cats-sma reads them
	# all; "admin" (a misconfigured or hostile client) may write anywhere.
	cat > acl <<-EOF
	user cats-sma
	topic read cats/sci/+/report
	user admin
	topic readwrite cats/sci/#
	pattern write cats/sci/%u/report
	EOF
	cat > mosq.conf <<-EOF
	per_listener_settings false
	allow_anonymous false
	acl_file $W/acl
	persistence true
	persistence_location $W/
	log_dest file $W/mosq.log
	log_type all
	user root
	listener $MP 127.0.0.1
	cafile $W/ca.crt
	certfile $W/server.crt
	keyfile $W/server.key
	require_certificate true
	use_identity_as_username true
	EOF
	cat > sma.conf <<-EOF
	id = sma-mqtt
	site = site-a
	[auth]
	issuers = $W/iss.pub
	[timing]
	interval = 10s
	[mqtt]
	broker = $B
	topic = cats/sci/+/report
	ca-file = $W/ca.crt
	cert = $W/sma.crt
	key = $W/sma.key
	backoff-min = 100ms
	backoff-max = 1s
	EOF
}

teardown() { stop_pids; }

# A test CA, the broker's certificate for 127.0.0.1, and one client
# certificate per name (the broker takes its CN as the user name).
make_certs() {
	key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
	    -out "$1.key" 2>/dev/null; }
	key ca
	openssl req -x509 -key ca.key -days 2 -subj /CN=cats-test-ca \
	    -out ca.crt 2>/dev/null
	cert() {
		key "$1"
		openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr" \
		    2>/dev/null
		if [ -n "${3:-}" ]; then
			printf 'subjectAltName=%s\n' "$3" > "$1.ext"
		else
			: > "$1.ext"
		fi
		openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key \
		    -CAcreateserial -days 2 -extfile "$1.ext" -out "$1.crt" \
		    2>/dev/null
	}
	cert server localhost IP:127.0.0.1,DNS:localhost
	cert sma cats-sma
	cert a sci-A
	cert b sci-B
	cert adm admin
}

listening() { ss -ltn "sport = :$MP" | grep -q LISTEN; }

start_broker() {
	bg mosquitto -c "$W/mosq.conf"
	BROKER=$LAST
	wait_for 50 listening
}

stop_broker() {
	kill "$BROKER"
	wait "$BROKER" 2>/dev/null || true
}

start_sma() {
	bg cats-sma -c sma.conf -a "unix:$W/admin.sock" \
	    -t "file:$W/out.cbor" "$@" 2> "$W/sma.err"
	SMA=$LAST
	wait_for 50 grep -q 'event=mqtt .*state=up' "$W/sma.err"
}

admin() { curl -s --unix-socket "$W/admin.sock" "$@"; }
counter() { admin http://x/stats | jq ".counters.$1"; }
out() { dec < "$W/out.cbor"; }

# cats-sci publishing as $1 (certificate a, b or adm) to topic $2 (empty:
# its own); the rest are cats-sci options.
pub() {
	local who=$1 topic=$2
	shift 2
	cats-sci -g 100 -C 5 -t "$B/$topic" --ca-file ca.crt \
	    --cert "$who.crt" --cert-key "$who.key" "$@"
}

@test "sma_mqtt: signed reports published over TLS reach cats-sma, QoS 1, with the token checks of an HTTP push" {
	start_broker
	start_sma
	run pub a "" -s sci-A -c ARS -K A.tok -I 100ms -n 3
	[ "$status" -eq 0 ]
	wait_for 50 sh -c "[ \$(cats-cbor decode < '$W/out.cbor' |
	    jq -s '[.[].entries[]? | select(.csci_id == \"sci-A\")] |
	    length') -ge 2 ]"
	[ "$(counter accepted)" -eq 3 ]
	[ "$(counter mqtt_messages)" -eq 3 ]
	# (confirmed HEALTHY by the second; STALE 200 ms after the last, as
	# its 100 ms interval says)
	out | jq -e -s '[.[].entries[]? | select(.csci_id == "sci-A" and
	    .state == "HEALTHY")][0] | .gas == 100 and .health == "HEALTHY"'
	# No token: refused as an HTTP push would be (401), audited.
	run pub a "" -s sci-A -c ARS -q 99999999999999 -n 1
	[ "$status" -eq 0 ]
	wait_for 50 grep -q 'event=auth-fail csci=sci-A cs=ARS src=mqtt:cats/sci/sci-A/report .*status=401 field=token' "$W/sma.err"
	# A token for another CS-ID: 403.
	run pub a "" -s sci-A -c VRS -K A.tok -n 1
	wait_for 50 grep -q 'event=auth-fail csci=sci-A cs=VRS .*status=403 field=cs_id' "$W/sma.err"
	[ "$(counter rejected_auth)" -eq 2 ]
	# TLS to the broker is verified: against another CA the broker's
	# certificate is refused and nothing is published (cats-sci keeps
	# trying, and says why once).
	mkdir other && (cd other && make_certs)
	run timeout 3 cats-sci -s sci-A -c ARS -K A.tok -g 1 -n 1 -I 200ms \
	    -t "$B/" --ca-file other/ca.crt --cert a.crt --cert-key a.key
	[ "$status" -eq 124 ]
	[ "$(grep -c 'cats-sci: mqtt: ' <<< "$output")" -eq 1 ]
	[ "$(counter mqtt_messages)" -eq 5 ]
}

@test "sma_mqtt: the broker's ACL refuses another SCI's topic; a report on the wrong topic that gets through is refused by cats-sma" {
	start_broker
	start_sma
	# sci-A (its certificate) publishing to sci-B's topic: the broker
	# refuses (MQTT v5 PUBACK 0x87), cats-sci says so and exits 77.
	run pub a cats/sci/sci-B/report -s sci-A -c ARS -K A.tok -n 1
	[ "$status" -eq 77 ]
	[[ "$output" == *"the broker refused the report on cats/sci/sci-B/report: Not authorized"* ]]
	# The same with sci-B's own token (stolen): refused alike.
	run pub a cats/sci/sci-B/report -s sci-B -c ARS -K B.tok -n 1
	[ "$status" -eq 77 ]
	[ "$(counter mqtt_messages)" -eq 0 ]
	# A client the ACL lets write anywhere puts sci-A's signed report on
	# sci-B's topic: it reaches cats-sma, which refuses it (the report
	# and its token say sci-A; the topic sci-B): 403, audited.
	run pub adm cats/sci/sci-B/report -s sci-A -c ARS -K A.tok -n 1
	[ "$status" -eq 0 ]
	wait_for 50 grep -q 'event=auth-fail csci=sci-A cs=ARS src=mqtt:cats/sci/sci-B/report index=0 status=403 field=csci_id reason="this connection belongs to CSCI-ID sci-B"' "$W/sma.err"
	[ "$(counter mqtt_messages)" -eq 1 ]
	[ "$(counter accepted)" -eq 0 ]
	# ... and a report of sci-B with sci-A's token on sci-B's topic: the
	# token's CSCI-ID decides (403).
	run pub adm cats/sci/sci-B/report -s sci-B -c ARS -K A.tok -n 1
	wait_for 50 grep -q 'event=auth-fail csci=sci-B cs=ARS src=mqtt:cats/sci/sci-B/report .*status=403 field=csci_id reason="the token is for CSCI-ID sci-A"' "$W/sma.err"
	# The right SCI on its own topic is taken.
	run pub b "" -s sci-B -c ARS -K B.tok -n 1
	[ "$status" -eq 0 ]
	wait_for 50 sh -c "[ \$(curl -s --unix-socket '$W/admin.sock' \
	    http://x/stats | jq .counters.accepted) -eq 1 ]"
	# cats-sma itself may not publish (read-only in the ACL): the broker
	# logs the denial.
	run cats-sci -s sci-A -c ARS -K A.tok -g 1 -n 1 -t "$B/" \
	    --ca-file ca.crt --cert sma.crt --cert-key sma.key
	[ "$status" -eq 77 ]
	grep -q "Denied PUBLISH from sci-A (d0, q1, r0, m1, 'cats/sci/sci-A/report'" \
	    mosq.log
}

@test "sma_mqtt: the broker restarts: cats-sma backs off, reconnects, subscribes again and takes reports" {
	start_broker
	# -v: each failed try is a debug line.
	start_sma -v
	run pub a "" -s sci-A -c ARS -K A.tok -n 1
	[ "$status" -eq 0 ]
	wait_for 50 sh -c "[ \$(curl -s --unix-socket '$W/admin.sock' \
	    http://x/stats | jq .counters.mqtt_messages) -eq 1 ]"
	stop_broker
	wait_for 50 grep -q 'event=mqtt .*state=down' "$W/sma.err"
	# Down for a while: told once, not at every try (100 ms .. 1 s):
	# three tries failed since.
	wait_for 50 sh -c "[ \$(grep -c 'mqtt: 127.0.0.1:$MP: ' '$W/sma.err') -ge 3 ]"
	[ "$(grep -c 'event=mqtt .*state=down' "$W/sma.err")" -eq 1 ]
	start_broker
	wait_for 100 sh -c "[ \$(grep -c 'event=mqtt .*state=up' \
	    '$W/sma.err') -eq 2 ]"
	run pub b "" -s sci-B -c ARS -K B.tok -n 1
	[ "$status" -eq 0 ]
	wait_for 50 sh -c "[ \$(curl -s --unix-socket '$W/admin.sock' \
	    http://x/stats | jq .counters.mqtt_messages) -eq 2 ]"
	[ "$(counter mqtt_connects)" -eq 2 ]
	[ "$(counter mqtt_disconnects)" -eq 1 ]
	[ "$(counter accepted)" -eq 2 ]
	# A reporter started while the broker is down waits and publishes
	# once it is back.
	stop_broker
	bg pub a "" -s sci-A -c ARS -K A.tok -n 1 -I 200ms -q 99999999999990 \
	    2>"$W/rep.err"
	REP=$LAST
	# It tried, and found no broker.
	wait_for 50 grep -q 'cats-sci: mqtt: ' "$W/rep.err"
	start_broker
	wait "$REP"
	wait_for 100 sh -c "[ \$(curl -s --unix-socket '$W/admin.sock' \
	    http://x/stats | jq .counters.mqtt_messages) -ge 3 ]"
}

@test "sma_mqtt: a bad [mqtt] section is refused with file:line, exit 78" {
	printf '[mqtt]\nbroker = tcp://x\n' > bad.conf
	run cats-sma -c bad.conf
	[ "$status" -eq 78 ]
	[[ "$output" == *"bad.conf:2: broker: expected mqtt://HOST[:PORT] or mqtts://HOST[:PORT]"* ]]
	printf '[auth]\nmode = none\n[mqtt]\nbroker = mqtt://127.0.0.1:1\ntopic = cats/sci/#\n' > bad.conf
	run cats-sma -c bad.conf
	[ "$status" -eq 78 ]
	[[ "$output" == *"bad.conf:5: topic: a topic with # cannot name the CSCI-ID"* ]]
	printf '[auth]\nmode = none\n[mqtt]\nbroker = mqtt://127.0.0.1:1\n' > bad.conf
	run cats-sma -c bad.conf
	[ "$status" -eq 78 ]
	[[ "$output" == *"[mqtt] broker needs topic"* ]]
}
