#!/usr/bin/env bats
# Site-local steering (seed 000 §10.3, cats-sma(1) LOCAL STEERING): a real
# cats-sma co-located with egress EF-1 and a real C-PS (cats-select's
# ingest) over loopback HTTP.  While the C-PS is down the C-SMA steers a
# failed instance's flows to another instance of its site, for the
# configured service only, audited; the C-PS back, the heal is a full sync
# and the redirects end once it is acknowledged.  Bad [steer] input: one
# line, refused, counted.
load helper
load sma_helper

setup() {
	sma_setup
	cp sma.psk cps.ring
	chmod 600 cps.ring
	steer_sma_conf sma-a EF-1 "$W" "$W/sma.psk" ARS "file:$W/steer.cbor" \
	    "max = 5m" > sma.conf
}

teardown() { stop_pids; }

start_cps() {
	bg cats-select --ingest "http://127.0.0.1:$PS/" --ingest-keys cps.ring \
	    --sma 'sma-a=*' --id cps-1 --stats-to "file:$W/cps.out" \
	    < /dev/null > /dev/null 2>> "$W/cps.err"
	CPS=$LAST
	wait_for 50 sh -c "curl -s -o /dev/null http://127.0.0.1:$PS/"
}

partitioned() { [ "$(counter sync_state)" = 2 ]; }
counter_is() { [ "$(counter "$1")" = "$2" ]; }

# report CSCI CS-ID HEALTH GAS LOCATOR: one push (sequence from a file).
report() {
	local seq
	seq=$(( $(cat "$W/seq.$1" 2>/dev/null || echo 0) + 1 ))
	echo "$seq" > "$W/seq.$1"
	printf '{"type":"sci-report","csci_id":"%s","cs_id":"%s","seq":%d,"ts":%d,"health":"%s","gas":%d,"comp_time_ms":10,"locator":"%s","port":8080}\n' \
	    "$1" "$2" "$seq" "$(date +%s%3N)" "$3" "$4" "$5" | enc > "$W/r.cbor"
	curl -s -o /dev/null -w '%{http_code}' -X POST \
	    -H 'Content-Type: application/cbor-seq' --data-binary @"$W/r.cbor" \
	    "$U/reports"
}

# The steer records so far, one compact JSON line each.
steers() {
	dec "$W/steer.cbor" | jq -c '[.op, .cs_id, .from, .to, .reason]'
}

@test "sma_steer: the C-PS killed: a failed instance is steered within the site, the unconfigured service is not; the C-PS back: full sync, then the redirect ends (healed)" {
	start_cps
	start_sma
	[ "$(report a ARS HEALTHY 100 192.0.2.1)" = 200 ]
	[ "$(report b ARS HEALTHY 300 192.0.2.2)" = 200 ]
	[ "$(report d VRS HEALTHY 50 192.0.2.4)" = 200 ]
	[ "$(report e VRS HEALTHY 50 192.0.2.5)" = 200 ]
	wait_for 50 synced
	# Connected: a failure is the C-PS's to steer.
	[ "$(report e VRS UNHEALTHY 50 192.0.2.5)" = 200 ]
	wait_for 50 synced
	[ "$(counter steer_redirects)" = 0 ]
	kill -9 "$CPS"
	wait "$CPS" 2>/dev/null || true
	full0=$(counter sync_full)
	[ "$(report a ARS UNHEALTHY 100 192.0.2.1)" = 200 ]
	[ "$(report d VRS UNHEALTHY 50 192.0.2.4)" = 200 ]
	wait_for 50 partitioned
	wait_for 50 counter_is steer_active 1
	[ "$(steers)" = '["redirect","ARS","a","b","unhealthy"]' ]
	dec "$W/steer.cbor" | jq -e '.sma_id == "sma-a" and .site == "site-a" and
	    .egress == "EF-1" and .from_locator == "192.0.2.1" and
	    .locator == "192.0.2.2" and .port == 8080 and .until > .ts'
	grep -q 'event=steer-redirect sma=sma-a cs=ARS from=a from_locator=192.0.2.1 to=b locator=192.0.2.2 reason=unhealthy' sma.audit
	# The admin's view: the redirect in force, the record that made it.
	diff <(admin /steer | jq -cS 'del(.auth)') <(dec "$W/steer.cbor" | jq -cS 'del(.auth)')
	! grep -q 'event=steer-.* cs=VRS' sma.audit || false
	[ "$(counter steer_steering)" = 1 ]
	# The target fails too: no candidate left, the redirect ends.
	[ "$(report b ARS HEALTHY 0 192.0.2.2)" = 200 ]
	wait_for 50 counter_is steer_active 0
	steers | tail -1 | grep -qx '\["end","ARS","a",null,"no-candidate"\]'
	grep -q 'event=steer-refused sma=sma-a cs=ARS from=b why=no-candidate' sma.audit
	# b back: both a and nothing else go to b.
	[ "$(report b ARS HEALTHY 300 192.0.2.2)" = 200 ]
	wait_for 50 counter_is steer_active 1
	steers | tail -1 | grep -qx '\["redirect","ARS","a","b","unhealthy"\]'
	# Heal: a full sync, acknowledged, then the redirect ends.
	start_cps
	wait_for 80 synced
	wait_for 50 counter_is steer_heals 1
	[ "$(counter sync_full)" -gt "$full0" ]
	[ "$(counter steer_active)" = 0 ]
	[ "$(counter steer_steering)" = 0 ]
	steers | tail -1 | grep -qx '\["end","ARS","a",null,"healed"\]'
	grep -q 'event=steer-heal sma=sma-a ended=1 partition_ms=' sma.audit
	# Every steer record is a valid one (cats-records(5)).
	cats-cbor check -q "$W/steer.cbor"
	[ "$(counter steer_failures)" = 0 ]
}

steers_are() { [ "$(dec "$W/steer.cbor" 2>/dev/null | wc -l)" -eq "$1" ]; }

@test "sma_steer: a unix: [steer] to not listening yet: cats-sma starts, steers, and sends the redirects in force once the egress listens, in seq order" {
	sed -i "s|^to = file:.*|to = unix:$W/steer.sock|" sma.conf
	start_cps
	start_sma
	[ "$(report a ARS HEALTHY 100 192.0.2.1)" = 200 ]
	[ "$(report b ARS HEALTHY 300 192.0.2.2)" = 200 ]
	[ "$(report c ARS HEALTHY 50 192.0.2.3)" = 200 ]
	[ "$(report d ARS HEALTHY 200 192.0.2.4)" = 200 ]
	wait_for 50 synced
	grep -q '\[steer\] to: .*connecting in the background' sma.err
	kill -9 "$CPS"
	wait "$CPS" 2>/dev/null || true
	# a to b (seq 1); d is the best now, c to d (seq 2); b fails, a moves
	# to d (seq 3) and b goes to d (seq 4): the first redirect of the
	# table has a higher seq than the second.
	[ "$(report a ARS UNHEALTHY 100 192.0.2.1)" = 200 ]
	wait_for 50 partitioned
	wait_for 50 counter_is steer_redirects 1
	[ "$(report b ARS HEALTHY 150 192.0.2.2)" = 200 ]
	[ "$(report c ARS UNHEALTHY 50 192.0.2.3)" = 200 ]
	wait_for 50 counter_is steer_redirects 2
	[ "$(report b ARS UNHEALTHY 150 192.0.2.2)" = 200 ]
	wait_for 50 counter_is steer_replaced 1
	[ "$(counter steer_active)" = 3 ]
	[ "$(counter steer_failures)" = 4 ]
	# The egress listens: the redirects in force, lowest seq first.
	bg socat -u "UNIX-LISTEN:$W/steer.sock" "OPEN:$W/steer.cbor,creat"
	wait_for 50 grep -q 'event=steer-connect redirects=3' sma.audit
	wait_for 50 steers_are 3
	[ "$(dec "$W/steer.cbor" | jq -c '[.seq, .from, .to]' | tr -d '\n')" = '[2,"c","d"][3,"a","d"][4,"b","d"]' ]
	[ "$(counter steer_reconnects)" = 0 ]
	[ "$(grep -c 'connecting in the background' sma.err)" = 1 ]
}

@test "sma_steer: an end decided while the egress is gone is sent once it is back, in seq order with the redirects in force" {
	sed -i "s|^to = file:.*|to = unix:$W/steer.sock|" sma.conf
	bg socat -u "UNIX-LISTEN:$W/steer.sock" "OPEN:$W/steer.cbor,creat"
	EGRESS=$LAST
	start_cps
	start_sma
	wait_for 50 grep -q 'event=steer-connect redirects=0 ends=0' sma.audit
	[ "$(report a ARS HEALTHY 100 192.0.2.1)" = 200 ]
	[ "$(report b ARS HEALTHY 300 192.0.2.2)" = 200 ]
	[ "$(report c ARS HEALTHY 50 192.0.2.3)" = 200 ]
	wait_for 50 synced
	kill -9 "$CPS"
	wait "$CPS" 2>/dev/null || true
	# a to b (seq 1) reaches the egress.
	[ "$(report a ARS UNHEALTHY 100 192.0.2.1)" = 200 ]
	wait_for 50 partitioned
	wait_for 50 steers_are 1
	# The egress goes; meanwhile a recovers (its end: seq 2) and c
	# fails (c to b: seq 3).
	kill "$EGRESS"
	wait_for 50 grep -q '\[steer\] to: .*connecting again' sma.err
	[ "$(report a ARS HEALTHY 100 192.0.2.1)" = 200 ]
	wait_for 50 counter_is steer_ends 1
	[ "$(report c ARS UNHEALTHY 50 192.0.2.3)" = 200 ]
	wait_for 50 counter_is steer_redirects 2
	[ "$(counter steer_failures)" = 2 ]
	# The egress back: the end, then the redirect in force.
	mv "$W/steer.cbor" "$W/steer1.cbor"
	bg socat -u "UNIX-LISTEN:$W/steer.sock" "OPEN:$W/steer.cbor,creat"
	wait_for 50 grep -q 'event=steer-reconnect redirects=1 ends=1' sma.audit
	wait_for 50 steers_are 2
	[ "$(dec "$W/steer.cbor" | jq -c '[.seq, .op, .from, .reason]' | tr -d '\n')" = '[2,"end","a","recovered"][3,"redirect","c","unhealthy"]' ]
	cats-cbor check -q "$W/steer.cbor"
	[ "$(counter steer_reconnects)" = 1 ]
}

@test "sma_steer: a tcp: [steer] to whose SYNs go unanswered (its accept queue full) holds nothing: reports taken, stats answered, one warning; it connects once the egress accepts" {
	EP=$(free_port)
	mkfifo "$W/eg.go"
	# An egress that listens with a backlog of 0 and has filled it
	# itself: the kernel drops the next SYNs.  A blocking connect would
	# hold cats-sma for the kernel's SYN retries.
	bg python3 -c 'import socket, sys
l = socket.socket(); l.bind(("127.0.0.1", int(sys.argv[1]))); l.listen(0)
f = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("full", flush=True)
open(sys.argv[2]).read()
l.accept()[0].close(); f.close()
a, _ = l.accept()
print("accepted", flush=True)
open(sys.argv[2]).read()' "$EP" "$W/eg.go" >"$W/eg.out"
	wait_for 50 grep -q full "$W/eg.out"
	sed -i "s|^to = file:.*|to = tcp:127.0.0.1:$EP|" sma.conf
	start_cps
	start_sma
	wait_for 80 grep -q "\\[steer\\] to: tcp:127.0.0.1:$EP: no answer to the connect in 2000 ms (connecting in the background" sma.err
	[ "$(report a ARS HEALTHY 100 192.0.2.1)" = 200 ]
	wait_for 50 synced
	[ "$(counter steer_active)" = 0 ]
	! grep -q 'event=steer-connect' sma.audit || false
	[ "$(grep -c 'no answer to the connect' sma.err)" = 1 ]
	echo go >"$W/eg.go"
	wait_for 80 grep -q 'event=steer-connect redirects=0 ends=0' sma.audit
	grep -q accepted "$W/eg.out"
	echo go >"$W/eg.go"
}

@test "sma_steer: bad [steer] input is one line and exit 78; without a C-PS too; a reload that moves 'to' is refused and counted" {
	printf '[steer]\nmax = 10\n' >> sma.conf
	run cats-sma -c sma.conf -t "http://127.0.0.1:$PS/" < /dev/null
	[ "$status" -eq 78 ]
	# one error line (and, the audit sink not yet open, its audit line)
	[ "$(grep -vc ' audit ts=' <<<"$output")" -eq 1 ]
	[[ "$output" == "cats-sma: "*"sma.conf:"*": max: 10ms is out of range"* ]]
	sed -i '$d' sma.conf
	sed -i '$d' sma.conf
	printf 'to = http://x/\n' >> sma.conf
	run cats-sma -c sma.conf -t "http://127.0.0.1:$PS/" < /dev/null
	[ "$status" -eq 78 ]
	[ "$(grep -vc ' audit ts=' <<<"$output")" -eq 1 ]
	[[ "$output" == *": to: expected file:PATH"* ]]
	sed -i '$d' sma.conf
	printf 'to = file:%s/steer.cbor\n' "$W" >> sma.conf
	run cats-sma -c sma.conf < /dev/null
	[ "$status" -eq 78 ]
	[ "$(grep -vc ' audit ts=' <<<"$output")" -eq 1 ]
	[[ "$output" == *"[steer] steers in a partition from the C-PS: it needs -t http(s)://C-PS"* ]]
	start_cps
	start_sma
	sed -i "s|^to = file:.*|to = file:$W/other.cbor|" sma.conf
	kill -HUP "$SMA"
	wait_for 50 counter_is config_refused 1
	grep -q '\[steer\] to: reload refused' sma.err
	grep -q 'event=config-refused .*\[steer\] to changed' sma.audit
}
