#!/usr/bin/env bats
# What examples/ gives users to copy still works: the single-stage replay,
# the cron site agent, the systemd units, the configuration files.

load helper

setup() {
	T=$(mktemp -d)
	EX=$TOP/examples
}

teardown() {
	[ -n "${SCI_PID:-}" ] && kill "$SCI_PID" 2>/dev/null
	[ -n "${CPS_PID:-}" ] && kill "$CPS_PID" 2>/dev/null
	rm -rf "$T"
	true
}

@test "examples: the topology, catalogue and policy file are accepted" {
	run cats-pce -t "$EX/topology.json" --check
	[ "$status" -eq 0 ]
	[[ "$output" == *"4 nodes, 3 links"* ]]
	run cats-cbor check -j "$EX/services.jsonl"
	[ "$status" -eq 0 ]
	run cats-select --config "$EX/policy.conf" --services "$EX/services.jsonl" \
		--no-auth </dev/null
	[ "$status" -eq 0 ]
}

@test "examples: make-keys.sh makes keys cats-key accepts and tokens that verify" {
	sh "$EX/keys/make-keys.sh" "$T/k"
	[ "$(stat -c %a "$T/k")" = 700 ]
	[ "$(stat -c %a "$T/k/IF-1.psk")" = 600 ]
	cats-key verify -k "$T/k/site-ca.pub" -s 198.51.100.11:80 -c S1 \
		"$T/k/sci-198.51.100.11_80.token"
	[ "$(wc -l <"$T/k/bind.ring")" = 3 ]
	cats-key pub -k "$T/k/cats-bind.key" | cmp - "$T/k/cats-bind.pub"
}

@test "examples: debug/replay.sh runs every stage alone, the same answers every time" {
	run bash "$EX/debug/replay.sh" "$T/out"
	echo "$output"
	[ "$status" -eq 0 ]
	# The decisions follow the recorded metrics (see debug/README.md).
	run jq -r 'select(.type == "path-req") | "\(.txn) \(.decision.csci_id) \(.decision.cost_us)"' \
		"$T/out/select.jsonl"
	[ "${lines[0]}" = "1001 198.51.100.11:80 4500" ]
	[ "${lines[1]}" = "1002 198.51.100.12:80 6500" ]
	[ "${lines[2]}" = "1003 198.51.101.21:80 7000" ]
	[ "${lines[3]}" = "1004 198.51.101.21:80 7000" ]
	[ "${lines[4]}" = "1005 198.51.100.11:80 4500" ]
	jq -se 'any(.[]; .type == "error" and .txn == 1006 and .code == "unresolved-service")' \
		"$T/out/select.jsonl"
	[ "$(jq -s '[.[] | select(.type == "binding" and .op == "install")] | length' "$T/out/bind.jsonl")" = 5 ]
	# site1-b withdrawn: its flow (txn 1002) failed with it.
	jq -se 'any(.[]; .type == "error" and .txn == 1002 and .code == "instance-failed")' "$T/out/bind.jsonl"
	grep -q 'txn=1005 id=5 BINDING_READY -> ACTIVE' "$T/out/bind.trace"
	grep -q 'csci=198.51.100.12:80 .*from=STALE to=FAILED' "$T/out/sma1.audit"
	# The committed metrics are what the site agents make of the reports.
	cat "$T/out/metrics1.jsonl" "$T/out/metrics2.jsonl" | jq -sc 'sort_by(.ts)[]' |
		cmp - "$EX/debug/metrics.jsonl"
	cp "$T/out/select.jsonl" "$T/first"
	bash "$EX/debug/replay.sh" "$T/out" >/dev/null
	cmp "$T/first" "$T/out/select.jsonl"
}

@test "examples: the cron site agent pulls each SCI once and exits" {
	sh "$EX/keys/make-keys.sh" "$T/k" 198.51.100.11:80:S1 198.51.100.12:80:S1 >/dev/null
	port=$(free_port)
	# One reporter serves both SCIs' pulls here (the example has one each).
	cats-sci -s 198.51.100.11:80 -c S1 -K "$T/k/sci-198.51.100.11_80.token" \
		-k "$T/k/sci-198.51.100.11_80.key" --locator 198.51.100.11 --port 80 \
		-g 8 -C 3 -I 60s -l "http://127.0.0.1:$port/" 2>"$T/sci.err" &
	SCI_PID=$!
	wait_for 50 curl -sf -o /dev/null "http://127.0.0.1:$port/report"
	sed -e "s|/etc/cats/keys/site-ca.pub|$T/k/site-ca.pub|" \
		-e "s|/etc/cats/revoked.txt|$T/revoked|" -e 's|^audit = syslog|audit = stderr|' \
		-e "s|http://198.51.100.11:8500/|http://127.0.0.1:$port/|" \
		-e "s|/etc/cats/keys/sma-site1.psk|$T/k/sma-site1.psk|" \
		-e "s|/var/lib/cats/|$T/|" \
		-e '/^\[sci "198.51.100.12:80"\]/,$d' "$EX/cron/sma-cron.conf" >"$T/sma.conf"
	: >"$T/revoked"
	# The C-PS's ingest, with the site agents' keyring of make-keys.sh.
	ps=$(free_port)
	cats-select --ingest "http://127.0.0.1:$ps/" --ingest-keys "$T/k/sma.ring" \
		--sma sma-site1=S1 --stats-to "file:$T/cps.out" </dev/null >/dev/null 2>"$T/cps.err" &
	CPS_PID=$!
	wait_for 50 curl -s -o /dev/null "http://127.0.0.1:$ps/"
	# The command of the cron entry, with this test's paths.
	cmd=$(sed -n 's|^\* \* \* \* \* cats /usr/local/bin/\(cats-sma .*\) 2>>.*|\1|p' "$EX/cron/cats-sma.cron")
	[ -n "$cmd" ]
	cmd=$(echo "$cmd" | sed -e "s|/etc/cats/sma-cron.conf|$T/sma.conf|" \
		-e "s|/var/lib/cats/sma.state|$T/state|" -e "s|-t http[^ ]*|-t http://127.0.0.1:$ps/|")
	run $cmd
	[ "$status" -eq 0 ]
	[ -s "$T/state" ]
	cps_table | jq -se 'any(.[]; .csci_id == "198.51.100.11:80" and .state == "ACTIVE")'
	grep -q '^cats_sma_sync_last_full_seconds{sma_id="sma-site1"} [1-9]' "$T/cats-sma.prom"
	# The next run goes on from the saved state: confirmed, HEALTHY.
	run $cmd
	[ "$status" -eq 0 ]
	cps_table | jq -se 'any(.[]; .csci_id == "198.51.100.11:80" and .state == "HEALTHY" and
		.gas == 8 and .ttl_ms > 170000 and .ttl_ms <= 180000)'
	kill "$CPS_PID"
}

# The entries of the C-PS's table (cats-select dumps it on SIGUSR2).
cps_table() {
	local n0
	n0=$(stat -c %s "$T/cps.out" 2>/dev/null || echo 0)
	kill -USR2 "$CPS_PID"
	dump_whole "$CPS_PID" "$T/cps.out" "$n0"
	tail -c +$((n0 + 1)) "$T/cps.out" | cats-cbor decode |
		jq -c 'select(.type == "metric") | .entries[]?'
}

@test "examples: the systemd units verify and are hardened" {
	command -v systemd-analyze >/dev/null || skip "no systemd-analyze"
	mkdir "$T/u"
	for f in "$EX"/systemd/*; do
		sed "s|/usr/local/bin/|$BUILD/bin/|g" "$f" >"$T/u/${f##*/}"
	done
	cp "$T/u/cats-fwd@.service" "$T/u/cats-fwd@IF-1.service"
	cd "$T/u"
	run systemd-analyze verify --man=no ./*.timer \
		cats-cps.service cats-sma.service \
		cats-sma-once.service cats-fwd@IF-1.service
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	for s in cats-cps cats-sma cats-fwd@IF-1; do
		e=$(systemd-analyze security --offline=yes "./$s.service" 2>/dev/null |
			sed -n 's/.*exposure level for .*: \([0-9.]*\) .*/\1/p')
		echo "$s $e"
		awk -v e="$e" 'BEGIN { exit !(e != "" && e <= 3.0) }'
	done
}

@test "examples: the README's pipeline gives the bindings it shows" {
	cd "$EX"
	run sh -c 'cat services.jsonl debug/net.jsonl debug/metrics.jsonl debug/requests.jsonl |
		jq -sc "sort_by(.ts // 0)[]" | cats-cbor encode |
		cats-select --replay --no-auth |
		cats-pce -t topology.json --replay |
		cats-bind --replay --commit none -q |
		cats-cbor decode |
		jq -c "select(.type != \"metric\") | {type, op, txn, code, csci_id, sids: .fwd.sids}"'
	[ "$status" -eq 0 ]
	for l in "${lines[@]}"; do
		grep -qxF -- "$l" "$TOP/README.md"
	done
	[ "${#lines[@]}" = 8 ]
	# The withdrawn instance's flow failed with it.
	[ "${lines[4]}" = '{"type":"error","op":null,"txn":1002,"code":"instance-failed","csci_id":null,"sids":null}' ]
}
