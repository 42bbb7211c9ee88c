#!/usr/bin/env bats
# cats-sma in replay mode: each rule of seed 000 §4.2, §5 and §10.1 on a
# recorded JSON Lines fixture, with the exact expected output beside it.
load helper

setup() {
	D="$DATA/sma"
	W="$BATS_TEST_TMPDIR"
}

# Run fixture $1: its output in $W/$1.out, stderr in $W/$1.err, status in
# $W/$1.rc.  The whole output must equal $D/$1.out.jsonl and stderr
# $D/$1.err (audit lines included: replay makes them exact).
replay() {
	local n=$1
	cat "$D/base.conf" > "$W/$n.conf"
	[ -f "$D/$n.conf" ] && sed "s|@D@|$D|g" "$D/$n.conf" >> "$W/$n.conf"
	local args=""
	[ -f "$D/$n.args" ] && args=$(cat "$D/$n.args")
	enc "$D/$n.jsonl" > "$W/$n.cbor"
	set +e
	# shellcheck disable=SC2086
	cats-sma -c "$W/$n.conf" --replay --epoch 1 $args < "$W/$n.cbor" \
	    > "$W/$n.raw" 2> "$W/$n.err"
	echo $? > "$W/$n.rc"
	set -e
	dec < "$W/$n.raw" > "$W/$n.out"
	diff -u "$D/$n.out.jsonl" "$W/$n.out"
	diff -u "$D/$n.err" "$W/$n.err"
}

# Field of the entry of record $2 (1-based) of fixture $1's output.
ent() { sed -n "${2}p" "$W/$1.out" | jq -r ".entries[0].$3"; }
site() { sed -n "${2}p" "$W/$1.out" | jq -r ".sites[0].$3"; }

@test "sma: --help is the man page synopsis, --version" {
	run cats-sma --help
	[ "$status" -eq 0 ]
	[[ "$output" == "usage: cats-sma "* ]]
	check_synopsis cats-sma
	check_synopsis cats-sci
	run cats-sma --version
	[[ "$output" == "cats-sma (cats) "* ]]
	run cats-sma
	[ "$status" -eq 2 ]
}

@test "sma: start snapshot, site identity and egress on every record" {
	replay ttl
	head -1 "$W/ttl.out" | jq -e '.op == "full" and .epoch == 1 and
	    .seq == 1 and .site == "site-a" and .egress == "EF-1"'
	# Sequence numbers strictly increase.
	jq -s -e '[.[].seq] | . == (sort) and (. | unique | length) ==
	    length' "$W/ttl.out"
}

@test "sma: ranges: out-of-range metrics rejected, limits configurable" {
	replay ranges
	grep -q 'record 1: comp_time_ms: 3600001 is out of range 0..3600000' \
	    "$W/ranges.err"
	grep -q 'record 2: reputation: 11 is out of range 0..10' "$W/ranges.err"
	grep -q 'record 3: security_level: 11 is out of range 0..10' \
	    "$W/ranges.err"
	# gas-max = 5000 in ranges.conf
	grep -q 'record 4: gas: 5001 is out of range 0..5000' "$W/ranges.err"
	# Out of the record format's own range (the decoder catches it): the
	# same path, the configured range in the reason, csci and cs named.
	grep -q 'record 7: reputation: 300 is out of range 0..10' "$W/ranges.err"
	grep -q 'event=reject csci=10.0.0.1:80 cs=ARS src=stdin index=8 status=400 field=gas reason="4294967296 is out of range 0..5000"' "$W/ranges.err"
	[ "$(grep -c 'event=reject' "$W/ranges.err")" -eq 6 ]
	# The boundary values are accepted; rejects leave no trace in output.
	[ "$(ent ranges 3 price)" = 4294967295 ]
	[ "$(ent ranges 4 comp_time_ms)" = 3600000 ]
	[ "$(cat "$W/ranges.rc")" -eq 0 ]
}

@test "sma: sequence: duplicate, out-of-order and replayed reports discarded" {
	replay sequence
	grep -q 'record 1: seq: duplicate report' "$W/sequence.err"
	grep -q 'record 2: seq: out-of-order or replayed' "$W/sequence.err"
	grep -q 'record 4: ts: report time .* outside now' "$W/sequence.err"
	# Nothing of 401, 402 or 403 reached the cache; 404 did.
	! grep -q '"gas":40[123]' "$W/sequence.out" || false
	[ "$(ent sequence 4 gas)" = 404 ]
}

@test "sma: hysteresis OK,OK,OK,FAIL,FAIL,FAIL,OK with N=M=3" {
	replay hysteresis
	# Deltas only on change: discovery (UNKNOWN), confirmation, HEALTHY
	# after the third OK, UNHEALTHY after the third FAIL; the last OK
	# alone changes nothing.
	run jq -r 'select(.entries) | .entries[0] | "\(.health) \(.gas)"' "$W/hysteresis.out"
	[ "${lines[0]}" = "UNKNOWN 0" ]
	[ "${lines[1]}" = "UNKNOWN 0" ]
	[ "${lines[2]}" = "HEALTHY 400" ]
	[ "${lines[3]}" = "UNHEALTHY 0" ]
	[ "${#lines[@]}" -eq 4 ]
	[ "$(sed -n 4p "$W/hysteresis.out" | jq .entries[0].gen)" = 3 ]
	[ "$(sed -n 5p "$W/hysteresis.out" | jq .entries[0].gen)" = 6 ]
}

@test "sma: TTL and grace: HEALTHY -> STALE -> FAILED, withdrawal, back via ACTIVE" {
	replay ttl
	# B's last report at +1010 ms, TTL 2 s (2 x 1 s): a report until
	# +3010 is within it (TIME WINDOWS), so STALE at +3011.
	sed -n 6p "$W/ttl.out" | jq -e '.ts == 1700000003011 and
	    .entries[0].csci_id == "10.0.0.2:80" and
	    .entries[0].state == "STALE"'
	# Grace 2 s: FAILED at +5012, withdrawn, site GAS without it.
	sed -n 7p "$W/ttl.out" | jq -e '.op == "withdraw" and
	    .reason == "failed" and .ts == 1700000005012 and
	    .entries[0].state == "FAILED" and .entries[0].gas == 0 and
	    .sites[0].gas == 400'
	grep -q 'event=state csci=10.0.0.2:80 cs=ARS from=STALE to=FAILED' \
	    "$W/ttl.err"
	# It comes back through ACTIVE, then HEALTHY.
	[ "$(ent ttl 8 state)" = ACTIVE ]
	[ "$(site ttl 8 gas)" = 900 ]
	[ "$(ent ttl 9 state)" = HEALTHY ]
	# --until runs the timers past the end of input.  The site sums the
	# entries the C-PS holds: none left.
	tail -1 "$W/ttl.out" | jq -e '.op == "withdraw" and
	    .sites[0].gas == 0 and .sites[0].total == 0 and
	    .sites[0].health == "UNKNOWN"'
}

@test "sma: replay is deterministic whatever the read size" {
	replay ttl
	cats-sma -c "$W/ttl.conf" --replay --epoch 1 --until +10s \
	    < <(cat "$W/ttl.cbor") 2>/dev/null | dec > "$W/again"
	diff -u "$W/ttl.out" "$W/again"
}

@test "sma: rate of change flagged: GAS > 50 % and computing time > 100 % in 1 s" {
	replay jump
	[ "$(ent jump 3 flags[0])" = gas-jump ]
	[ "$(ent jump 4 flags[0])" = ct-jump ]
	# 1.1 s later the same drop is fine; with a health change too.
	[ "$(ent jump 5 flags)" = null ]
	[ "$(ent jump 6 flags)" = null ]
	[ "$(grep -c 'event=anomaly' "$W/jump.err")" -eq 2 ]
}

@test "sma: anomalous reports quarantined when so configured" {
	replay quarantine
	grep -q 'event=quarantine id=1 csci=10.0.0.1:80 cs=ARS seq=2 anomaly=gas-jump' \
	    "$W/quarantine.err"
	grep -q 'record 1: quarantined as 1' "$W/quarantine.err"
	# Nothing quarantined reached the output.
	[ "$(jq -s '[.[] | .entries[]? | select(.gen == 2 or .gen == 3)] |
	    length' "$W/quarantine.out")" -eq 0 ]
	[ "$(ent quarantine 3 gen)" = 4 ]
}

@test "sma: health flapping: the fourth transition within 10 s" {
	replay flap
	[ "$(ent flap 5 flags)" = null ]
	[ "$(ent flap 6 flags[0])" = flap ]
	grep -q 'event=anomaly csci=10.0.0.1:80 cs=ARS seq=5 anomaly=flap' \
	    "$W/flap.err"
	# After 10 quiet seconds no flag.
	[ "$(ent flap 11 flags)" = null ]
}

@test "sma: cross-metric consistency: site GAS needs a HEALTHY SCI" {
	replay consistency
	# 400 (HEALTHY) + 600 (DEGRADED); computing time GAS-weighted: 8.
	sed -n 3p "$W/consistency.out" | jq -e '.sites[0].gas == 1000 and
	    .sites[0].comp_time_ms == 8 and .sites[0].health == "DEGRADED"'
	# Only a DEGRADED SCI left: GAS 0.
	sed -n 4p "$W/consistency.out" | jq -e '.sites[0].gas == 0 and
	    .sites[0].healthy == 0'
	# All UNHEALTHY: GAS 0, UNHEALTHY.
	sed -n 5p "$W/consistency.out" | jq -e '.sites[0].gas == 0 and
	    .sites[0].health == "UNHEALTHY"'
	# GAS > 0 with computing time 0: flagged.
	[ "$(ent consistency 6 flags[0])" = ct-zero ]
}

@test "sma: smoothing: moving average over 3 reports" {
	replay smoothing
	run jq -r 'select(.entries) | .entries[0] | "\(.gas) \(.comp_time_ms)"' "$W/smoothing.out"
	[ "${lines[0]}" = "90 10" ]
	[ "${lines[1]}" = "60 10" ]
	[ "${lines[2]}" = "40 20" ]
	[ "${lines[3]}" = "10 20" ]
}

@test "sma: LRU eviction at max-entries is a withdrawal" {
	replay lru
	sed -n 5p "$W/lru.out" | jq -e '.op == "withdraw" and
	    .reason == "evicted" and .entries[0].csci_id == "10.0.0.2:80"'
	grep -q 'event=evict csci=10.0.0.2:80' "$W/lru.err"
	sed -n 6p "$W/lru.out" | jq -e '.entries[0].csci_id == "10.0.0.3:80"
	    and (.sites | length) == 2'
}

@test "sma: a sync record asks for a full snapshot; other records pass" {
	replay sync
	sed -n 3p "$W/sync.out" | jq -e '.op == "full" and .ts == 1700000000100
	    and (.entries | length) == 1'
	sed -n 4p "$W/sync.out" | jq -e '.type == "error" and
	    .code == "something"'
}

@test "sma: static metrics live on their own TTL" {
	replay static
	[ "$(ent static 3 price)" = 7 ]
	# ttl-static 2.5 s after the last report that carried them: gone
	# the first millisecond past it.
	sed -n 4p "$W/static.out" | jq -e '.ts == 1700000002501 and
	    .entries[0].price == null and .entries[0].ext == null'
	[ "$(ent static 5 price)" = 9 ]
}

@test "sma: malformed records: one line each, the stream goes on, exit 65" {
	replay malformed
	grep -q '^cats-sma: record 1: health: "FINE" is not one of' \
	    "$W/malformed.err"
	grep -q '^cats-sma: record 2: csci_id: required field missing' \
	    "$W/malformed.err"
	# The audit line names the csci and cs when the record shows them.
	grep -q 'event=reject csci=x cs=ARS src=stdin index=1 status=400' \
	    "$W/malformed.err"
	[ "$(cat "$W/malformed.rc")" -eq 65 ]
	[ "$(ent malformed 3 gen)" = 2 ]
	# --strict stops at the first.
	run cats-sma -c "$W/malformed.conf" --replay --strict \
	    < "$W/malformed.cbor"
	[ "$status" -eq 65 ]
}

@test "sma: output failure exits 74" {
	cat "$D/base.conf" > "$W/c.conf"
	enc "$D/ttl.jsonl" > "$W/in.cbor"
	run cats-sma -c "$W/c.conf" --replay --to file:/nonexistent/dir/out \
	    < "$W/in.cbor"
	[ "$status" -eq 74 ]
}

@test "sma: a bad configuration is refused with file:line, exit 78" {
	printf 'id = x\n[validate]\ngas-jump = much\n' > "$W/bad.conf"
	run cats-sma -c "$W/bad.conf" --replay < /dev/null
	[ "$status" -eq 78 ]
	[[ "$output" == *"bad.conf:3: gas-jump: expected a decimal number"* ]]
}

@test "sma: --stats counts what happened" {
	cat "$D/base.conf" > "$W/c.conf"
	enc "$D/sequence.jsonl" > "$W/in.cbor"
	cats-sma -c "$W/c.conf" --replay --stats < "$W/in.cbor" \
	    2> "$W/err" > /dev/null
	tail -1 "$W/err" | jq -e '.type == "stats" and
	    .counters.reports == 6 and .counters.accepted == 3 and
	    .counters.rejected_sequence == 3'
}

# ---- the update controller (000 7.2, 7.3, 9.1, 9.2): one fixture per
# trigger and suppression rule; each expected output was checked by hand
# (the numbers below are the ones to check).

# "op ts-offset csci gas" lines of fixture $1's entries.
adverts() {
	jq -r '(.ts - 1700000000000) as $t | .op as $o | (.entries // [])[] |
	    "\($o) \($t) \(.csci_id) \(.health) \(.state) \(.gas)"' "$W/$1.out"
}

@test "sma uc: thresholds: GAS > 10 % or > 50, computing time > 20 %, security level" {
	replay uc_threshold
	run adverts uc_threshold
	# A: 400 discovered, 420 confirmed (state change), 440 is 4.8 % of
	# 420: nothing; 470 is 11.9 %: sent; 480 (2 %) with computing time
	# 11 (10 %): nothing; 13 is 30 % of 10: sent; security 3 -> 4: sent.
	[[ "${lines[0]}" == "delta 0 10.0.0.1:80 HEALTHY ACTIVE 400" ]]
	[[ "${lines[2]}" == "delta 1000 10.0.0.1:80 HEALTHY HEALTHY 420" ]]
	[[ "${lines[4]}" == "delta 3000 10.0.0.1:80 HEALTHY HEALTHY 470" ]]
	sed -n 8p "$W/uc_threshold.out" | jq -e '.ts == 1700000005000 and
	    .entries[0].comp_time_ms == 13'
	sed -n 10p "$W/uc_threshold.out" | jq -e '.ts == 1700000006000 and
	    .entries[0].security_level == 4'
	# B: 1040 -> 1080 (40, 3.8 %): nothing; 1100 (60 > 50): sent.
	[[ "${lines[3]}" == "delta 1010 10.0.0.2:80 HEALTHY HEALTHY 1040" ]]
	[[ "${lines[5]}" == "delta 3010 10.0.0.2:80 HEALTHY HEALTHY 1100" ]]
	# Health change: at once.  B stops: STALE, then a withdrawal.
	[[ "${lines[9]}" == "delta 7000 10.0.0.1:80 DEGRADED HEALTHY 480" ]]
	[[ "${lines[7]}" == "delta 5011 10.0.0.2:80 HEALTHY STALE 1100" ]]
	[[ "${lines[10]}" == "withdraw 7012 10.0.0.2:80 UNHEALTHY FAILED 0" ]]
	[ "${#lines[@]}" -eq 13 ]
	# The site aggregate is the sum of what was advertised, in the same
	# record: 420 + 1040, then 470 + 1040, and no record of a site alone.
	sed -n 5p "$W/uc_threshold.out" | jq -e '.sites[0].gas == 1460'
	sed -n 6p "$W/uc_threshold.out" | jq -e '.sites[0].gas == 1510'
	jq -e -s 'all(.[]; .op == "full" or (.entries | length) > 0)' \
	    "$W/uc_threshold.out"
}

@test "sma uc: minimum interval: routine updates 5 s apart, the latest value; critical ones at once" {
	replay uc_interval
	run adverts uc_interval
	# Confirmed at +1 s; 500 (+2 s) and 560 (+3 s) wait until the
	# interval is past (+6.001 s): 560.
	[[ "${lines[1]}" == "delta 1000 10.0.0.1:80 HEALTHY HEALTHY 400" ]]
	[[ "${lines[2]}" == "delta 6001 10.0.0.1:80 HEALTHY HEALTHY 560" ]]
	# DEGRADED at +7 s leaves at once, with the GAS of then (700).
	[[ "${lines[3]}" == "delta 7000 10.0.0.1:80 DEGRADED HEALTHY 700" ]]
	# 800 at +8 s waits past 7 + 5 s; the end of input at +12 s (within
	# the interval still) drains it.
	[[ "${lines[4]}" == "delta 12000 10.0.0.1:80 DEGRADED HEALTHY 800" ]]
	[ "${#lines[@]}" -eq 5 ]
}

@test "sma uc: heartbeat every 10 s +/- 10 %: refresh, refresh, full heartbeat" {
	replay uc_heartbeat
	run jq -r 'select(.op == "refresh" or .op == "heartbeat") |
	    "\(.op) \(.ts - 1700000000000)"' "$W/uc_heartbeat.out"
	[ "${#lines[@]}" -eq 3 ]
	[[ "${lines[0]}" == "refresh "* && "${lines[1]}" == "refresh "* &&
	    "${lines[2]}" == "heartbeat "* ]]
	local prev=0 t
	for l in "${lines[@]}"; do
		t=${l#* }
		[ $((t - prev)) -ge 9000 ] && [ $((t - prev)) -le 11000 ]
		prev=$t
	done
	# Jittered, not exactly 10 s.
	[ "${lines[0]}" != "refresh 10000" ]
	# The full heartbeat carries every entry and site.
	tail -1 "$W/uc_heartbeat.out" | jq -e '(.entries | length) == 1 and
	    (.sites | length) == 1 and .part == 1 and .parts == 1'
}

@test "sma uc: maintenance window: routine updates held, critical ones pass, release at the end" {
	replay uc_window
	run adverts uc_window
	[[ "${lines[2]}" == "delta 2000 10.0.0.1:80 HEALTHY HEALTHY 500" ]]
	# 600 (+3 s) and 700 (+4 s) are inside the window: held.  DEGRADED at
	# +5 s passes (with 700); 800 at +6 s waits for the end at +8 s.
	[[ "${lines[3]}" == "delta 5000 10.0.0.1:80 DEGRADED HEALTHY 700" ]]
	[[ "${lines[4]}" == "delta 8000 10.0.0.1:80 DEGRADED HEALTHY 800" ]]
	[ "${#lines[@]}" -eq 5 ]
}

@test "sma uc: dampening: a flapping entry is suppressed, degradations pass, reuse after decay" {
	replay uc_damp
	run adverts uc_damp
	# Penalties: +2 s 1000; +3 s 1000 x 2^-0.1 + 1000 = 1933; +4 s 2804
	# >= 2000: damped (DEGRADED still sent, it is worse).
	[[ "${lines[2]}" == "delta 2000 10.0.0.1:80 DEGRADED HEALTHY 400" ]]
	[[ "${lines[3]}" == "delta 3000 10.0.0.1:80 HEALTHY HEALTHY 400" ]]
	[[ "${lines[4]}" == "delta 4000 10.0.0.1:80 DEGRADED HEALTHY 400" ]]
	# HEALTHY at +5 s and +7 s is held; the penalty at +7 s (5081) falls
	# below 750 after 10 s x log2(5081/750) = 27.6 s: HEALTHY at +34.6 s.
	[[ "${lines[5]}" == "delta 34602 10.0.0.1:80 HEALTHY HEALTHY 400" ]]
	[ "${#lines[@]}" -eq 6 ]
	grep -q 'event=damp csci=10.0.0.1:80 penalty=2804 action=suppress' \
	    "$W/uc_damp.err"
	grep -q 'ts=1700000034602 event=damp csci=10.0.0.1:80 penalty=750 action=reuse' \
	    "$W/uc_damp.err"
}

@test "sma uc: dampening observe-only: penalties computed and audited, nothing held" {
	replay uc_damp_observe
	run adverts uc_damp_observe
	[ "${#lines[@]}" -eq 8 ]
	[[ "${lines[5]}" == "delta 5000 10.0.0.1:80 HEALTHY HEALTHY 400" ]]
	[[ "${lines[7]}" == "delta 7000 10.0.0.1:80 HEALTHY HEALTHY 400" ]]
	grep -q 'event=damp csci=10.0.0.1:80 penalty=2804 action=observe' \
	    "$W/uc_damp_observe.err"
	! grep -q 'action=suppress' "$W/uc_damp_observe.err" || false
}

@test "sma uc: token bucket: 1 record/s, bursts of 2; critical updates pass" {
	replay uc_bucket
	# Discovery and confirmation (critical): at once.  The four +20 %
	# changes at +2 s: two tokens; the other two wait for the next token
	# at +3 s and leave in one record.
	run jq -r 'select(.ts >= 1700000002000) | "\(.ts - 1700000000000) \([.entries[].csci_id] | join(","))"' "$W/uc_bucket.out"
	[ "${lines[0]}" = "2000 10.0.0.1:80" ]
	[ "${lines[1]}" = "2010 10.0.0.2:80" ]
	[ "${lines[2]}" = "3000 10.0.0.3:80,10.0.0.4:80" ]
	[ "${#lines[@]}" -eq 3 ]
	[ "$(grep -c '"op":"delta"' "$W/uc_bucket.out")" -eq 11 ]
}

@test "sma uc: batching: routine updates of 200 ms in one record; critical before routine" {
	replay uc_batch
	run jq -r 'select(.ts >= 1700000003000) | "\(.ts - 1700000000000) \([.entries[].csci_id] | join(","))"' "$W/uc_batch.out"
	# +3.0, +3.05 and +3.15 s: one record at +3.2 s.
	[ "${lines[0]}" = "3200 10.0.0.1:80,10.0.0.2:80,10.0.0.3:80" ]
	# A's routine change at +5 s waits for its batch; B's DEGRADED at
	# +5.1 s goes first.
	[ "${lines[1]}" = "5100 10.0.0.2:80" ]
	[ "${lines[2]}" = "5200 10.0.0.1:80" ]
	[ "${#lines[@]}" -eq 3 ]
}

@test "sma uc: policy: the examples of 7.1 and 7.2 with hand-computed results" {
	replay uc_policy
	ent2() { sed -n "${1}p" "$W/uc_policy.out" | jq -r ".entries[$2] |
	    \"\(.gas) \(.comp_time_ms) \(.price) \(.security_level)\""; }
	# A: GAS 100, EMA starts at 100, x 0.8 = 80; computing time 0 -> 1
	# (floor); price 150 > 100 -> 100; Site_GAS 100 is not < 100.
	[ "$(ent2 2 0)" = "80 1 100 3" ]
	# B: 50 x 0.8 = 40, price 100 stays.
	[ "$(ent2 3 0)" = "40 5 100 3" ]
	# A: EMA 0.3 x 200 + 0.7 x 100 = 130 -> 104; 0.3 x 20000 = 6000.
	[ "$(ent2 4 0)" = "104 6000 100 3" ]
	# EMA 151 -> 120.8 -> 120; 0.3 x 20000 + 0.7 x 6000 = 10200 -> 10000.
	[ "$(ent2 6 0)" = "120 10000 100 3" ]
	# GAS 20: EMA 111.7 -> 112 -> 89; then 84.19 -> 84: Site_GAS 84 <
	# 100: SET Security_Level = 5 on both SCIs of the site; 84 x 0.8 = 67.
	[ "$(ent2 7 0)" = "89 10000 100 3" ]
	[ "$(ent2 8 0)" = "67 10000 100 5" ]
	[ "$(ent2 8 1)" = "0 5 100 5" ]
	# DEGRADED: EMA 64.9 -> 65, REDUCE BY 50 % -> 32, x 0.8 -> 25.
	[ "$(ent2 9 0)" = "25 10000 100 5" ]
	# The site aggregates the transformed values: 80 + 40, and the
	# GAS-weighted computing time (80 x 1 + 40 x 5) / 120 = 2.
	sed -n 3p "$W/uc_policy.out" | jq -e '.sites[0].gas == 120 and
	    .sites[0].comp_time_ms == 2'
}

@test "sma uc: a bad rule file is refused with file:line:column, exit 78" {
	cat "$D/base.conf" > "$W/c.conf"
	printf 'IF Price > 100 THEN SET Price = 100;\nIF Site_GAS < THEN SUPPRESS_UPDATES;\n' > "$W/bad.rules"
	printf '[policy]\nrules = %s\n' "$W/bad.rules" >> "$W/c.conf"
	run cats-sma -c "$W/c.conf" --replay < /dev/null
	[ "$status" -eq 78 ]
	[[ "$output" == *"bad.rules:2:15: expected a metric or a value, found 'THEN'"* ]]
	[[ "$output" == *"event=config-refused"* ]]
}

# Two site C-SMAs for the hierarchy tests, in $W: keys sa.psk and sb.psk
# (subs.ring for the domain), configurations a.conf and b.conf.
two_sites() {
	cd "$W"
	cats-key psk -n site-a -o sa.psk
	cats-key psk -n site-b -o sb.psk
	cat sa.psk sb.psk > subs.ring
	chmod 600 subs.ring
	for s in a b; do
		{ sed -e "s/^id = .*/id = site-$s/" -e "s/^site = .*/site = site-$s/" \
		    -e "s/^egress = .*/egress = EF-$s/" "$D/base.conf"
		  printf '[timing]\ninterval = 10s\n[northbound]\nkey = %s\n' "$W/s$s.psk"; } > $s.conf
	done
}

@test "sma: hierarchy in replay: a domain C-SMA aggregates two sites per CS-ID, each entry keeps its site and egress" {
	two_sites
	rep() { echo "{\"type\":\"sci-report\",\"csci_id\":\"$1\",\"cs_id\":\"$2\",\"seq\":$3,\"ts\":$((1700000000000 + $4)),\"health\":\"HEALTHY\",\"gas\":$5,\"comp_time_ms\":$6,\"locator\":\"192.0.2.$3\"}"; }
	{ rep a1 ARS 1 0 400 5; rep a1 ARS 2 1000 400 5; } | enc |
	    cats-sma -c a.conf --replay --epoch 1 > a.cbor 2>/dev/null
	{ rep b1 ARS 1 2000 600 10; rep b1 ARS 2 3000 600 10; rep b2 VRS 1 3500 9 1; } |
	    enc | cats-sma -c b.conf --replay --epoch 1 > b.cbor 2>/dev/null
	# The site records are MAC'd and carry nonces.
	dec < a.cbor | jq -e -s 'all(.nonce > 0 and .auth != null)'
	{ sed "s/^id = .*/id = domain/; s/^site = .*/site = dom/; /^egress/d" \
	    "$D/base.conf"
	  printf '[hierarchy]\nkeys = %s\n' "$W/subs.ring"
	  printf '[subordinate "site-a"]\ncs-ids = ARS\n'
	  printf '[subordinate "site-b"]\ncs-ids = ARS\n'; } > dom.conf
	cat a.cbor b.cbor | cats-sma -c dom.conf --replay --epoch 1 \
	    > dom.cbor 2> dom.err
	dec < dom.cbor > dom.out
	# Every SCI with the site and egress it came from.
	jq -e -s '[.[] | .entries[]? | select(.csci_id == "a1")] | last |
	    .site == "site-a" and .egress == "EF-a" and .gas == 400' dom.out
	jq -e -s '[.[] | .entries[]? | select(.csci_id == "b1")] | last |
	    .site == "site-b" and .egress == "EF-b" and .gas == 600' dom.out
	# The domain's aggregate per CS-ID: 400 + 600, computing time
	# GAS-weighted (400 x 5 + 600 x 10) / 1000 = 8, both healthy.
	jq -e -s '[.[] | .sites[]? | select(.cs_id == "ARS")] | last |
	    .gas == 1000 and .comp_time_ms == 8 and .healthy == 2 and
	    .total == 2' dom.out
	# site-b may not advertise VRS: refused, audited, not in the cache.
	grep -q 'event=ingest-refused sma=site-b .*may not advertise CS-ID VRS' dom.err
	! grep -q '"b2"' dom.out || false
}

@test "sma: hierarchy: a subordinate cannot take over another's instance or advertise outside its site" {
	two_sites
	rep() { echo "{\"type\":\"sci-report\",\"csci_id\":\"$1\",\"cs_id\":\"ARS\",\"seq\":$2,\"ts\":$((1700000000000 + $3)),\"health\":\"HEALTHY\",\"gas\":$4,\"comp_time_ms\":5,\"locator\":\"$5\"}"; }
	{ rep a1 1 0 400 192.0.2.1; rep a1 2 1000 400 192.0.2.1; } | enc |
	    cats-sma -c a.conf --replay --epoch 1 > a.cbor 2>/dev/null
	# site-b claims a1 with its own locator, then b1 outside its site.
	{ rep a1 1 2000 9999 198.51.101.9; rep a1 2 3000 9999 198.51.101.9; } | enc |
	    cats-sma -c b.conf --replay --epoch 1 > b1.cbor 2>/dev/null
	{ rep b1 1 4000 600 192.0.2.77; rep b1 2 5000 600 192.0.2.77; } | enc |
	    cats-sma -c b.conf --replay --epoch 2 > b2.cbor 2>/dev/null
	{ sed "s/^id = .*/id = domain/; s/^site = .*/site = dom/; /^egress/d" \
	    "$D/base.conf"
	  printf '[hierarchy]\nkeys = %s\n' "$W/subs.ring"
	  printf '[subordinate "site-a"]\ncs-ids = ARS\nlocators = 192.0.2.0/24\negresses = EF-a\n'
	  printf '[subordinate "site-b"]\ncs-ids = ARS\nlocators = 198.51.101.0/24\negresses = EF-b\n'; } > dom.conf
	cat a.cbor b1.cbor b2.cbor | cats-sma -c dom.conf --replay --epoch 1 \
	    > dom.cbor 2> dom.err
	dec < dom.cbor > dom.out
	# a1 is passed on as site-a's only, with its own locator.
	jq -e -s '[.[] | .entries[]? | select(.csci_id == "a1")] |
	    length > 0 and all(.site == "site-a" and .locator == "192.0.2.1" and .gas == 400)' dom.out
	grep -q 'event=ingest-refused sma=site-b owner=site-a .*status=409' dom.err
	# b1 points into site-a's prefix: refused, never passed on.
	grep -q 'event=ingest-refused sma=site-b owner=- .*status=403 .*locator 192.0.2.77 is outside the site of site-b' dom.err
	! grep -q '"b1"' dom.out || false
	# A bad prefix in the configuration names its line.
	printf '[subordinate "site-c"]\ncs-ids = ARS\nlocators = 10.0.0.1/8\n' >> dom.conf
	run cats-sma -c dom.conf --replay --epoch 1 < /dev/null
	[ "$status" -eq 78 ]
	[[ "$output" == *"dom.conf:"*"locators"*"bits set past the prefix length"* ]]
}

@test "sma: replay with [sci] sections reads stdin and ends at its end; --listen is refused with what to do" {
	cat "$DATA/sma/base.conf" > "$W/sci.conf"
	cat >> "$W/sci.conf" <<-EOC
	[sci "10.0.0.1:80"]
	cs-id = ARS
	pull = http://127.0.0.1:1/report
	sse = http://127.0.0.1:1/events
	EOC
	enc "$DATA/sma/ttl.jsonl" > "$W/in.cbor"
	# Without -i, and with it: the same output, and the run ends.
	for i in "" -i; do
		run timeout 10 sh -c "cats-sma -c '$W/sci.conf' --replay --epoch 1 \
		    $(cat "$DATA/sma/ttl.args") $i < '$W/in.cbor' |
		    cats-cbor decode > '$W/out$i'"
		[ "$status" -eq 0 ]
		diff -u "$DATA/sma/ttl.out.jsonl" "$W/out$i"
	done
	run cats-sma -c "$W/sci.conf" --replay -l http://127.0.0.1:1/ < /dev/null
	[ "$status" -eq 2 ]
	[[ "$output" == *"--replay reads recorded reports from stdin only: drop --listen"* ]]
	run cats-sma -c "$W/sci.conf" --replay -a unix:"$W/adm" < /dev/null
	[ "$status" -eq 2 ]
	[[ "$output" == *"drop --admin"* ]]
}

# $5 sci-reports of csci $1, one a millisecond from time $2, sequence from
# $3 by $4 (0: the same report again).
flood() {
	awk -v id="$1" -v t="$2" -v s="$3" -v d="$4" -v n="$5" 'BEGIN {
	    for (i = 0; i < n; i++)
		printf "{\"type\":\"sci-report\",\"csci_id\":\"%s\",\"cs_id\":" \
		    "\"ARS\",\"seq\":%.0f,\"ts\":%.0f,\"health\":\"HEALTHY\"," \
		    "\"gas\":100,\"comp_time_ms\":5}\n", id, s + i * d,
		    t + i }'
}

@test "sma: input limits: one SCI's burst dropped and counted, one limit line a window with a count" {
	cat "$DATA/sma/base.conf" > "$W/l.conf"
	printf '[limits]\nsci-rate = 50\nsci-burst = 100\n' >> "$W/l.conf"
	# 10000 new reports of one SCI in 10 s.
	flood A 1700000000000 1 1 10000 | enc > "$W/l.cbor"
	run sh -c "cats-sma -c '$W/l.conf' --replay --epoch 1 --stats \
	    < '$W/l.cbor' > /dev/null 2> '$W/l.err'"
	[ "$status" -eq 0 ]
	stats=$(grep '"type":"stats"' "$W/l.err")
	# The burst (100) and 50 a second for 9.999 s: 599 taken.
	echo "$stats" | jq -e '.counters.limited_sci == 9401 and
	    .counters.accepted + .counters.flagged == 599'
	# One limit line a second, each later window closed by its count.
	[ "$(grep -c 'event=limit csci=A' "$W/l.err")" -eq 10 ]
	grep -q 'event=limit status=429 scope=sci csci=A more=' "$W/l.err"
	# Without limits every one is taken.
	printf '[limits]\nsci-rate = 0\nrate = 0\n' >> "$W/l.conf"
	run sh -c "cats-sma -c '$W/l.conf' --replay --epoch 1 --stats \
	    < '$W/l.cbor' > /dev/null 2> '$W/l.err'"
	grep '"type":"stats"' "$W/l.err" | jq -e '.counters.limited_sci == 0 and
	    .counters.accepted + .counters.flagged == 10000'
}

@test "sma: a replay flood of 100000 duplicates writes a bounded audit (N more like this)" {
	flood A 1700000000000 1 0 100000 | enc > "$W/f.cbor"
	sed "s|^audit = stderr|audit = file:$W/audit|" "$DATA/sma/base.conf" \
	    > "$W/f.conf"
	run sh -c "cats-sma -c '$W/f.conf' --replay --epoch 1 -q \
	    --stats < '$W/f.cbor' > /dev/null 2> '$W/f.err'"
	[ "$status" -eq 0 ]
	# (Every 4 s the SCI has FAILED, and a newer report is taken as a
	# restart: 25 of them.)
	grep '"type":"stats"' "$W/f.err" | jq -e '
	    .counters.rejected_sequence == 99975 and
	    .counters.audit_suppressed > 97000'
	# 100 s of input: at most audit-burst (20) lines a kind a second, and
	# one count line a second.
	n=$(grep -c 'event=reject' "$W/audit" || true)
	[ "$n" -le 2100 ]
	grep -q 'event=reject status=409 field=seq more=9[0-9]* window_ms=1000 note="9[0-9]* more like this"' "$W/audit"
	[ "$(wc -c < "$W/audit")" -lt 500000 ]
}
