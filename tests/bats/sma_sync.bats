#!/usr/bin/env bats
# cats-sma and the C-PS ingest of cats-select, real processes over
# loopback HTTP (cats-northbound(7)): kill -9 of the C-PS while reports
# flow, rejected advertisements, a partition with its backoff schedule,
# mutual TLS (the C-PS's ingest speaking it itself), the Prometheus
# textfile, a policy reload, hierarchical aggregation.
load helper
load sma_helper

setup() {
	sma_setup
	cats-key gen -n sma-b -o smab >/dev/null
	# The C-PS's keyring: sma-a's PSK and sma-b's public key.
	cat sma.psk smab.pub > cps.ring
	chmod 600 cps.ring
	cat > sma.conf <<-EOF
	id = sma-a
	site = site-a
	egress = EF-1
	audit = file:$W/sma.audit
	[auth]
	mode = none
	[validate]
	healthy-after = 1
	[timing]
	confirm = 1
	[update]
	min-interval = 0
	batch = 0
	rate = 0
	[northbound]
	key = $W/sma.psk
	backoff-min = 200ms
	backoff-max = 1600ms
	backoff-jitter = 10%
	timeout = 2s
	prometheus = $W/sma.prom
	stats-interval = 200ms
	EOF
}

teardown() { stop_pids; }

start_cps() {
	bg cats-select --ingest "http://127.0.0.1:$PS/" --ingest-keys cps.ring \
	    --sma sma-a=ARS,VRS --sma 'sma-b=*' --id cps-1 \
	    --stats-to "file:$W/cps.out" --audit "file:$W/cps.audit" "$@" \
	    < /dev/null > /dev/null 2>> "$W/cps.err"
	CPS=$LAST
	wait_for 50 sh -c "curl -s -o /dev/null http://127.0.0.1:$PS/"
}

# One round of reports from SCIs 1..$1 (odd: ARS, even: VRS), GAS from $2.
round() {
	local n=$1 g=$2 h=${3:-HEALTHY} ts
	# (a subshell runs this: the sequence lives in a file)
	SEQ=$(( $(cat "$W/seq" 2>/dev/null || echo 0) + 1 ))
	echo "$SEQ" > "$W/seq"
	ts=$(date +%s%3N)
	for i in $(seq 1 "$n"); do
		printf '{"type":"sci-report","csci_id":"10.0.0.%d:80","cs_id":"%s","seq":%d,"ts":%d,"health":"%s","gas":%d,"comp_time_ms":%d,"locator":"192.0.2.%d","port":80}\n' \
		    "$i" "$( [ $((i % 2)) = 1 ] && echo ARS || echo VRS)" \
		    "$SEQ" "$ts" "$h" $((g + 10 * i)) $((5 + i)) "$i"
	done | enc > "$W/r.cbor"
	curl -s -o /dev/null -w '%{http_code}' -X POST \
	    -H 'Content-Type: application/cbor-seq' --data-binary @"$W/r.cbor" \
	    "$U/reports"
}

# The C-PS's table (a SIGUSR2 dump) and cats-sma's advertised view, as
# sorted lines of the fields that matter.
FIELDS='[.csci_id, .cs_id, .health, .state, .gas, .comp_time_ms, .locator, .port]'
cps_table() {
	local before
	before=$(stat -c %s "$W/cps.out" 2>/dev/null || echo 0)
	kill -USR2 "$CPS"
	# An empty table dumps nothing: no event to wait on (see dump_whole).
	wait_for 30 sh -c "[ \$(stat -c %s $W/cps.out) -gt $before ]"
	sleep 0.2
	tail -c +$((before + 1)) "$W/cps.out" | dec |
	    jq -c "select(.type == \"metric\") | .entries[] | $FIELDS" | sort
}
sma_view() { admin /advertised | jq -c "$FIELDS" | sort; }

@test "sma_sync: kill -9 the C-PS while reports flow; after restart its table equals the C-SMA's view" {
	start_cps
	start_sma
	for g in 100 200 300; do
		[ "$(round 6 $g)" = 200 ]
	done
	wait_for 50 synced
	diff <(cps_table) <(sma_view)
	[ "$(cps_table | wc -l)" -eq 6 ]
	# kill -9 while reports keep coming: new SCIs, new values.
	kill -9 "$CPS"
	wait "$CPS" 2>/dev/null || true
	for g in 400 500 600 700; do
		[ "$(round 8 $g)" = 200 ]
		sleep 0.2
	done
	wait_for 50 sh -c "curl -s --unix-socket $W/admin.sock http://x/stats |
	    jq -e '.counters.sync_state == 2 and .counters.sync_queued > 0'"
	# Read-only: the cache goes on, the C-PS hears nothing.
	[ "$(admin /cache | wc -l)" -eq 8 ]
	start_cps
	wait_for 80 synced
	diff <(cps_table) <(sma_view)
	[ "$(cps_table | wc -l)" -eq 8 ]
	cps_table | grep -q '"10.0.0.8:80","VRS","HEALTHY","HEALTHY",780'
	# A restarted C-PS knows nothing: a full sync; nothing was dropped.
	[ "$(counter sync_dropped)" -eq 0 ]
	[ "$(counter sync_full)" -ge 2 ]
	[ "$(counter sync_peer_restarts)" -ge 1 ]
	grep -q 'unreachable' "$W/sma.err"
	grep -q 'reachable again after' "$W/sma.err"
	grep -q 'event=northbound state=partition' "$W/sma.audit"
}

@test "sma_sync: the ingest's answers to what is no advertisement (cats-northbound(7) STATUS CODES): an empty body 400 with its reason, another resource 404, another method 405, another type 415" {
	start_cps
	post() { # path [curl options]: the status, the body in $W/body
		local p=$1
		shift
		curl -s -o "$W/body" -w '%{http_code}' -X POST "$@" \
		    --data-binary '' "http://127.0.0.1:$PS$p"
	}
	local p
	for p in /metrics /update /withdraw /retrieve; do
		[ "$(post "$p" -H 'Content-Type: application/cbor-seq')" = 400 ]
		dec "$W/body" | jq -e '.type == "ack" and .result == "bad" and
		    .reason == "empty body"'
	done
	[ "$(grep -c 'event=ingest-refused .*status=400 reason="empty body"' "$W/cps.audit")" -eq 4 ]
	# The root and any other path are no resource of the ingest.
	for p in / /nosuch /metrics/; do
		[ "$(post "$p" -H 'Content-Type: application/cbor-seq')" = 404 ]
		grep -q 'no such resource' "$W/body"
	done
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PS/metrics")" = 405 ]
	[ "$(post /metrics -H 'Content-Type: text/plain')" = 415 ]
	kill -0 "$CPS"
}

# A signed advertisement from JSON: ts (ms) and nonce, key file.
advert() { # json ts nonce key
	echo "$1" | jq -c ".ts = $2 | .nonce = $3" | enc | pce-sign -k "$4"
}
cpost() { # file [resource] -> HTTP status
	curl -s -o "$W/ans" -w '%{http_code}' -X POST \
	    -H 'Content-Type: application/cbor-seq' --data-binary @"$1" \
	    "http://127.0.0.1:$PS/${2:-metrics}"
}

@test "sma_sync: replayed, out-of-window, wrong MAC, bad signature, unauthorized CS-ID: refused, audited, table unchanged" {
	start_cps
	now=$(date +%s%3N)
	full='{"type":"metric","op":"full","sma_id":"sma-a","epoch":9,"seq":1,"ts":0,"site":"site-a","egress":"EF-1","entries":[{"csci_id":"a1","cs_id":"ARS","health":"HEALTHY","gas":400,"locator":"192.0.2.1"}]}'
	advert "$full" "$now" 1 sma.psk > full.cbor
	[ "$(cpost full.cbor)" = 200 ]
	dec < ans | jq -e 'select(.type == "ack") | .result == "ok" and
	    .seq == 1 and .ps_id == "cps-1" and .refresh == true and
	    .auth != null'
	table0=$(cps_table)
	[ "$(echo "$table0" | wc -l)" -eq 1 ]
	delta() { echo "{\"type\":\"metric\",\"op\":\"delta\",\"sma_id\":\"$1\",\"epoch\":9,\"seq\":$2,\"ts\":0,\"entries\":[{\"csci_id\":\"a1\",\"cs_id\":\"$3\",\"health\":\"HEALTHY\",\"gas\":$4,\"locator\":\"192.0.2.1\"}]}"; }
	# Replayed: the same bytes again.
	[ "$(cpost full.cbor)" = 409 ]
	dec < ans | jq -e '.result == "replay"'
	# Out of the window (60 s old, 60 s ahead; the window is 30 s).
	advert "$(delta sma-a 2 ARS 1)" $((now - 60000)) 10 sma.psk > old.cbor
	[ "$(cpost old.cbor)" = 409 ]
	advert "$(delta sma-a 2 ARS 1)" $((now + 60000)) 11 sma.psk > ahead.cbor
	[ "$(cpost ahead.cbor)" = 409 ]
	# A wrong MAC: one bit of the tag flipped.
	advert "$(delta sma-a 2 ARS 2)" "$now" 12 sma.psk > mac.cbor
	python3 -c 'import sys; b = bytearray(open("mac.cbor", "rb").read()); b[-2] ^= 1; open("mac.cbor", "wb").write(b)'
	[ "$(cpost mac.cbor)" = 401 ]
	dec < ans | jq -e '.result == "unauthorized" and (.reason | test("MAC does not verify"))'
	# A bad Ed25519 signature (sma-b).
	advert "$(delta sma-b 1 ARS 3)" "$now" 13 smab.key > sig.cbor
	python3 -c 'import sys; b = bytearray(open("sig.cbor", "rb").read()); b[-2] ^= 1; open("sig.cbor", "wb").write(b)'
	[ "$(cpost sig.cbor)" = 401 ]
	dec < ans | jq -e '.reason | test("signature does not verify")'
	# sma-b's key speaking for sma-a.
	advert "$(delta sma-a 2 ARS 4)" "$now" 14 smab.key > other.cbor
	[ "$(cpost other.cbor)" = 403 ]
	# An unauthorized CS-ID: sma-a may advertise ARS and VRS only.
	advert "$(delta sma-a 2 LLMS 5)" "$now" 15 sma.psk > cs.cbor
	[ "$(cpost cs.cbor)" = 403 ]
	dec < ans | jq -e '.reason | test("may not advertise CS-ID LLMS")'
	# Not authenticated at all.
	echo "$(delta sma-a 2 ARS 6)" | jq -c ".ts = $now | .nonce = 16" | enc > none.cbor
	[ "$(cpost none.cbor)" = 401 ]
	# Not a CBOR sequence of records; the wrong media type.
	printf 'garbage' > junk
	[ "$(cpost junk)" = 400 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: text/plain' --data-binary @full.cbor "http://127.0.0.1:$PS/metrics")" = 415 ]
	# Nothing of it reached the table; every refusal is audited.
	[ "$(cps_table)" = "$table0" ]
	[ "$(grep -c 'event=ingest-refused' "$W/cps.audit")" -eq 9 ]
	grep -q 'status=409 reason="record 0: nonce not above' "$W/cps.audit"
	grep -q 'status=409 reason="record 0: timestamp outside' "$W/cps.audit"
	grep -q 'status=403 reason="record 0: the key of sma-b cannot speak for sma-a"' "$W/cps.audit"
	# And a good one still goes in.
	advert "$(delta sma-a 2 ARS 7)" "$now" 17 sma.psk > good.cbor
	[ "$(cpost good.cbor update)" = 200 ]
	cps_table | grep -q '"a1","ARS","HEALTHY",null,7'
	# /update takes one entry, /withdraw withdrawals.
	advert "$(delta sma-a 3 ARS 8)" "$now" 18 sma.psk > good2.cbor
	[ "$(cpost good2.cbor withdraw)" = 400 ]
}

@test "sma_sync: partition: read-only, buffered, backoff 200 ms doubling to 1.6 s, full sync on heal; drops only past the bound" {
	cat >> sma.conf <<-EOF
	queue-max = 4
	EOF
	# Every change a record (control off), so the count is exact.
	sed -i 's/^\[update\]$/[update]\ncontrol = off/' sma.conf
	start_cps
	start_sma
	[ "$(round 2 100)" = 200 ]
	wait_for 50 synced
	kill "$CPS"
	wait "$CPS" 2>/dev/null || true
	r0=$(counter records_out)
	for g in 110 120 130 140 150 160; do
		[ "$(round 1 $g)" = 200 ]
	done
	made=$(( $(counter records_out) - r0 ))
	[ "$made" -eq 6 ]
	# The bound: 4 kept, the 2 oldest dropped and counted.
	wait_for 30 sh -c "curl -s --unix-socket $W/admin.sock http://x/stats |
	    jq -e '.counters.sync_state == 2'"
	[ "$(counter sync_queued)" -eq 4 ]
	[ "$(counter sync_dropped)" -eq 2 ]
	# The backoff schedule: 200, 400, 800, 1600, 1600 ms (+/- 10 %).
	wait_for 80 sh -c "grep -c 'retry [0-9]* in' $W/sma.err | grep -q '^[5-9]'"
	grep -o 'retry [0-9]* in [0-9]* ms' "$W/sma.err" | head -5 > sched
	base=200
	while read -r _ n _ ms _; do
		[ "$ms" -ge $((base * 9 / 10)) ] && [ "$ms" -le $((base * 11 / 10)) ]
		base=$((base * 2 > 1600 ? 1600 : base * 2))
	done < sched
	[ "$(admin /cache | wc -l)" -eq 2 ]
	# Heal: a full sync (records were dropped), the C-SMA's view wins.
	full0=$(counter sync_full)
	start_cps
	wait_for 50 synced
	[ "$(counter sync_full)" -eq $((full0 + 1)) ]
	diff <(cps_table) <(sma_view)
	cps_table | grep -q '"10.0.0.1:80","ARS","HEALTHY","HEALTHY",170'
	# The Prometheus textfile says so too.
	wait_for 20 grep -q 'cats_sma_sync_dropped_total{sma_id="sma-a"} 2' "$W/sma.prom"
	grep -q '^# TYPE cats_sma_sync_state gauge' "$W/sma.prom"
	grep -q 'cats_sma_sync_state{sma_id="sma-a"} 0' "$W/sma.prom"
	grep -q '^cats_sma_sync_last_full_seconds{sma_id="sma-a"} [0-9]*\.[0-9][0-9][0-9]$' "$W/sma.prom"
}

@test "sma_sync: a short partition with nothing dropped heals incrementally" {
	start_cps
	start_sma
	[ "$(round 2 100)" = 200 ]
	wait_for 50 synced
	kill -STOP "$CPS"
	[ "$(round 2 300)" = 200 ]
	wait_for 50 sh -c "curl -s --unix-socket $W/admin.sock http://x/stats |
	    jq -e '.counters.sync_state == 2'"
	[ "$(round 2 500)" = 200 ]
	kill -CONT "$CPS"
	wait_for 80 synced
	[ "$(counter sync_incremental)" -ge 1 ]
	[ "$(counter sync_dropped)" -eq 0 ]
	diff <(cps_table) <(sma_view)
}

@test "sma_sync: HTTPS with mutual TLS: the C-PS's certificate verified against ca-file; without it the TLS failure backs off" {
	# The C-PS's ingest speaks TLS itself (no terminator in front), and
	# takes C-SMAs with a certificate of the CA (examples/keys/make-certs.sh).
	sh "$TOP/examples/keys/make-certs.sh" "$W/k" cps sma-a >/dev/null
	TP=$(free_port)
	bg cats-select --ingest "https://127.0.0.1:$TP/" --ingest-keys cps.ring \
	    --sma sma-a=ARS,VRS --sma 'sma-b=*' --id cps-1 \
	    --stats-to "file:$W/cps.out" --audit "file:$W/cps.audit" \
	    --tls-cert "$W/k/cps.crt" --tls-key "$W/k/cps.key" \
	    --tls-ca "$W/k/ca.crt" < /dev/null > /dev/null 2>> "$W/cps.err"
	CPS=$LAST
	wait_for 50 sh -c "curl -s -o /dev/null --cacert $W/k/ca.crt --cert $W/k/sma-a.crt --key $W/k/sma-a.key https://127.0.0.1:$TP/"
	bg cats-sma -c sma.conf -l "$U/" -a "unix:$W/admin.sock" \
	    -t "https://127.0.0.1:$TP/" 2>> "$W/sma.err"
	SMA=$LAST
	wait_for 50 curl -sf "$U/health"
	[ "$(round 2 100)" = 200 ]
	wait_for 30 sh -c "curl -s --unix-socket $W/admin.sock http://x/stats |
	    jq -e '.counters.sync_state == 2'"
	grep -q 'unreachable: .*certificate' "$W/sma.err"
	kill "$SMA"
	wait "$SMA"	# a clean stop: exit 0
	printf '[http]\nca-file = %s\n' "$W/k/ca.crt" >> sma.conf
	start_sma_tls() {
		bg cats-sma -c sma.conf -l "$U/" -a "unix:$W/admin.sock" \
		    -t "https://127.0.0.1:$TP/" --tls-cert "$W/k/sma-a.crt" \
		    --tls-key "$W/k/sma-a.key" 2>> "$W/sma.err"
		SMA=$LAST
		wait_for 50 curl -sf "$U/health"
	}
	start_sma_tls
	[ "$(round 2 200)" = 200 ]
	wait_for 50 synced
	diff <(cps_table) <(sma_view)
	[ "$(cps_table | wc -l)" -eq 2 ]
	grep -q 'event=tls-peer .*subject="CN=sma-a"' "$W/cps.audit"
}

@test "sma_sync: mutual TLS, the C-SMA's certificate names what it may report (cats:sma:, cats:cs:): another C-SMA's or CS-ID's advertisement refused, audited, counted" {
	# sma-a's certificate names C-SMA sma-a and CS-ID ARS; sma-x's names
	# another C-SMA.  The configuration lets sma-a advertise ARS and VRS.
	sh "$TOP/examples/keys/make-certs.sh" "$W/k" cps \
	    "sma-a=URI:cats:sma:sma-a,URI:cats:cs:ARS" \
	    "sma-x=URI:cats:sma:sma-b" >/dev/null
	TP=$(free_port)
	bg cats-select --ingest "https://127.0.0.1:$TP/" --ingest-keys cps.ring \
	    --sma sma-a=ARS,VRS --sma 'sma-b=*' --id cps-1 \
	    --stats-to "file:$W/cps.out" --audit "file:$W/cps.audit" \
	    --tls-cert "$W/k/cps.crt" --tls-key "$W/k/cps.key" \
	    --tls-ca "$W/k/ca.crt" < /dev/null > /dev/null 2>> "$W/cps.err"
	CPS=$LAST
	wait_for 50 sh -c "curl -s -o /dev/null --cacert $W/k/ca.crt --cert $W/k/sma-a.crt --key $W/k/sma-a.key https://127.0.0.1:$TP/"
	printf '[http]\nca-file = %s\n' "$W/k/ca.crt" >> sma.conf
	sma_as() {
		bg cats-sma -c sma.conf -l "$U/" -a "unix:$W/admin.sock" \
		    -t "https://127.0.0.1:$TP/" --tls-cert "$W/k/$1.crt" \
		    --tls-key "$W/k/$1.key" 2>> "$W/sma.err"
		SMA=$LAST
		wait_for 50 curl -sf "$U/health"
	}
	# A certificate of another C-SMA: sma-a's records refused (403).
	sma_as sma-x
	[ "$(round 1 100)" = 200 ]
	wait_for 50 grep -q 'event=ingest-refused sma=sma-a .*status=403 reason="record 0: the client certificate does not name C-SMA sma-a"' "$W/cps.audit"
	[ "$(cps_table | wc -l)" -eq 0 ]
	kill "$SMA"
	wait "$SMA"
	# Its own certificate: ARS taken; VRS, not named by it, refused.
	sma_as sma-a
	[ "$(round 1 200)" = 200 ]
	wait_for 50 synced
	[ "$(cps_table | jq -r '.[1]')" = ARS ]
	[ "$(round 2 300)" = 200 ]
	wait_for 50 grep -q 'event=ingest-refused sma=sma-a .*status=403 reason="record 0: the client certificate does not name CS-ID VRS"' "$W/cps.audit"
	[ "$(cps_table | jq -r '.[1]' | sort -u)" = ARS ]
	kill -USR1 "$CPS"
	wait_for 30 sh -c "dec < '$W/cps.out' | jq -e 'select(.type == \"stats\") | .counters.ingest_cert_refused >= 2' >/dev/null"
}

@test "sma_sync: fallback C-PS URL when the primary does not answer" {
	DEAD=$(free_port)
	start_cps
	bg cats-sma -c sma.conf -l "$U/" -a "unix:$W/admin.sock" \
	    -t "http://127.0.0.1:$DEAD/" -t "http://127.0.0.1:$PS/" \
	    2>> "$W/sma.err"
	SMA=$LAST
	wait_for 50 curl -sf "$U/health"
	[ "$(round 3 100)" = 200 ]
	wait_for 50 synced
	[ "$(counter sync_url)" -eq 1 ]
	[ "$(cps_table | wc -l)" -eq 3 ]
}

@test "sma_sync: SIGHUP with a new rule file fires the Policy Change Trigger; a bad one is refused, the old rules stay" {
	echo 'IF SCI_Health = HEALTHY THEN REDUCE SCI_GAS BY 10%;' > r.rules
	printf '[policy]\nrules = %s\n' "$W/r.rules" >> sma.conf
	start_cps
	start_sma
	[ "$(round 2 100)" = 200 ]
	wait_for 50 synced
	# 110 and 120, reduced by 10 %: 99 and 108.
	cps_table | grep -q '"10.0.0.1:80","ARS","HEALTHY","HEALTHY",99,'
	echo 'IF SCI_Health = HEALTHY THEN REDUCE SCI_GAS BY 50%;' > r.rules
	kill -HUP "$SMA"
	wait_for 50 sh -c "curl -s --unix-socket $W/admin.sock http://x/advertised | grep -q '\"gas\":55'"
	wait_for 50 synced
	cps_table | grep -q '"10.0.0.1:80","ARS","HEALTHY","HEALTHY",55,'
	cps_table | grep -q '"10.0.0.2:80","VRS","HEALTHY","HEALTHY",60,'
	[ "$(counter trigger_policy)" -ge 2 ]
	grep -q 'event=policy file=.*r.rules rules=1' "$W/sma.audit"
	# A bad rule file: refused with line:column, the old rules stay.
	printf 'IF SCI_Health = HEALTHY THEN REDUCE SCI_GAS BY 50%%;\nIF Price > THEN SET Price = 1;\n' > r.rules
	kill -HUP "$SMA"
	wait_for 30 grep -q 'r.rules:2:12: expected a metric or a value' "$W/sma.err"
	grep -q 'event=config-refused' "$W/sma.audit"
	[ "$(round 2 300)" = 200 ]
	wait_for 50 sh -c "curl -s --unix-socket $W/admin.sock http://x/advertised | grep -q '\"gas\":155'"
}

@test "sma_sync: hierarchy: site C-SMAs report to a domain C-SMA that aggregates per CS-ID for the C-PS" {
	cats-key psk -n site-a -o sa.psk
	cats-key psk -n site-b -o sb.psk
	cats-key psk -n domain -o dom.psk
	cat sa.psk sb.psk > subs.ring
	chmod 600 subs.ring
	cp dom.psk cps.ring
	DP=$(free_port)
	cat > dom.conf <<-EOF
	id = domain
	site = domain-1
	audit = file:$W/dom.audit
	[auth]
	mode = none
	[timing]
	confirm = 1
	[validate]
	healthy-after = 1
	[update]
	control = off
	[northbound]
	key = $W/dom.psk
	[hierarchy]
	keys = $W/subs.ring
	[subordinate "site-a"]
	cs-ids = ARS VRS
	[subordinate "site-b"]
	cs-ids = ARS
	EOF
	for s in a b; do
		sed -e "s/^id = sma-a/id = site-$s/" -e "s/^site = site-a/site = site-$s/" \
		    -e "s/^egress = EF-1/egress = EF-$s/" \
		    -e "s|^key = .*|key = $W/s$s.psk|" -e "/prometheus/d" sma.conf > $s.conf
	done
	bg cats-select --ingest "http://127.0.0.1:$PS/" --ingest-keys cps.ring \
	    --sma 'domain=*' --stats-to "file:$W/cps.out" < /dev/null \
	    > /dev/null 2>> "$W/cps.err"
	CPS=$LAST
	bg cats-sma -c dom.conf -l "http://127.0.0.1:$DP/" -a "unix:$W/dom.sock" \
	    -t "http://127.0.0.1:$PS/" 2>> "$W/dom.err"
	wait_for 50 curl -sf "http://127.0.0.1:$DP/health"
	SA=$(free_port)
	bg cats-sma -c a.conf -l "http://127.0.0.1:$SA/" -t "http://127.0.0.1:$DP/" \
	    2>> "$W/a.err"
	SB=$(free_port)
	bg cats-sma -c b.conf -l "http://127.0.0.1:$SB/" -t "http://127.0.0.1:$DP/" \
	    2>> "$W/b.err"
	wait_for 50 curl -sf "http://127.0.0.1:$SA/health"
	wait_for 50 curl -sf "http://127.0.0.1:$SB/health"
	U=http://127.0.0.1:$SA
	[ "$(round 2 100)" = 200 ]	# site a: 10.0.0.1 ARS 110, 10.0.0.2 VRS 120
	ts=$(date +%s%3N)
	echo "{\"type\":\"sci-report\",\"csci_id\":\"10.1.0.1:80\",\"cs_id\":\"ARS\",\"seq\":1,\"ts\":$ts,\"health\":\"HEALTHY\",\"gas\":500,\"comp_time_ms\":20,\"locator\":\"192.0.2.99\"}" | enc > b.cbor
	curl -s -X POST -H 'Content-Type: application/cbor' --data-binary @b.cbor "http://127.0.0.1:$SB/reports" > /dev/null
	dom() { curl -s --unix-socket "$W/dom.sock" "http://x$1"; }
	wait_for 80 sh -c "curl -s --unix-socket $W/dom.sock http://x/advertised | grep -c csci_id | grep -q '^3$'"
	# The domain's view: every SCI with the site and egress it came from.
	dom /advertised | jq -e -s 'map(select(.csci_id == "10.1.0.1:80"))[0] |
	    .site == "site-b" and .egress == "EF-b" and .gas == 500'
	dom /advertised | jq -e -s 'map(select(.csci_id == "10.0.0.2:80"))[0] |
	    .site == "site-a" and .egress == "EF-a" and .cs_id == "VRS"'
	# The C-PS gets them with their own egress (selection needs it).
	wait_for 80 sh -c "curl -s --unix-socket $W/dom.sock http://x/stats | jq -e '.counters.sync_queued == 0 and .counters.sync_state == 0'"
	before=$(stat -c %s "$W/cps.out" 2>/dev/null || echo 0)
	kill -USR2 "$CPS"
	dump_whole "$CPS" "$W/cps.out" "$before"
	dec < "$W/cps.out" | jq -c 'select(.type == "metric")' > table
	jq -e -s '[.[] | select(.egress == "EF-b") | .entries[].csci_id] == ["10.1.0.1:80"]' table
	jq -e -s '[.[] | select(.egress == "EF-a") | .entries[].csci_id] | sort == ["10.0.0.1:80", "10.0.0.2:80"]' table
	jq -e -s '[.[] | .sma_id] | unique == ["domain"]' table
	# site-b may advertise ARS only: a VRS entry from it is refused.
	ts=$(date +%s%3N)
	echo "{\"type\":\"sci-report\",\"csci_id\":\"10.1.0.2:80\",\"cs_id\":\"VRS\",\"seq\":1,\"ts\":$ts,\"health\":\"HEALTHY\",\"gas\":7,\"comp_time_ms\":20}" | enc > bv.cbor
	curl -s -X POST -H 'Content-Type: application/cbor' --data-binary @bv.cbor "http://127.0.0.1:$SB/reports" > /dev/null
	wait_for 50 grep -q 'may not advertise CS-ID VRS' "$W/dom.audit"
	[ "$(dom /advertised | grep -c csci_id)" -eq 3 ]
}

@test "sma_sync: cron runs: the first syncs fully, the next incrementally; the textfile at each end" {
	start_cps
	sed -i 's/^\[update\]$/[update]\ncontrol = on/' sma.conf
	one_run() { # gas
		local ts
		ts=$(date +%s%3N)
		SEQ=$(( $(cat "$W/seq" 2>/dev/null || echo 0) + 1 ))
		echo "$SEQ" > "$W/seq"
		echo "{\"type\":\"sci-report\",\"csci_id\":\"10.0.0.1:80\",\"cs_id\":\"ARS\",\"seq\":$SEQ,\"ts\":$ts,\"health\":\"HEALTHY\",\"gas\":$1,\"comp_time_ms\":5,\"locator\":\"192.0.2.1\"}" |
		    enc | cats-sma -c sma.conf --once -T "$W/state" \
		    -t "http://127.0.0.1:$PS/" 2>> "$W/sma.err"
	}
	one_run 100
	grep -q 'cats_sma_sync_full_total{sma_id="sma-a"} 1' sma.prom
	grep -q 'cats_sma_sync_queued{sma_id="sma-a"} 0' sma.prom
	full1=$(grep '^cats_sma_sync_last_full_seconds{' sma.prom)
	[[ "$full1" =~ \}\ [1-9][0-9]*\.[0-9]{3}$ ]]
	cps_table | grep -q '"10.0.0.1:80","ARS","HEALTHY","HEALTHY",100'
	one_run 200
	grep -q 'cats_sma_sync_incremental_total{sma_id="sma-a"} 1' sma.prom
	grep -q 'cats_sma_sync_full_total{sma_id="sma-a"} 0' sma.prom
	# The last full sync is the first run's, kept in the state file.
	[ "$(grep '^cats_sma_sync_last_full_seconds{' sma.prom)" = "$full1" ]
	cps_table | grep -q '"10.0.0.1:80","ARS","HEALTHY","HEALTHY",200'
	# A run whose C-PS is down keeps its state; the next syncs fully.
	kill "$CPS"
	wait "$CPS" 2>/dev/null || true
	one_run 300
	grep -q 'cats_sma_sync_state{sma_id="sma-a"} 2' sma.prom
	start_cps
	one_run 400
	grep -q 'cats_sma_sync_full_total{sma_id="sma-a"} 1' sma.prom
	cps_table | grep -q '"10.0.0.1:80","ARS","HEALTHY","HEALTHY",400'
}
