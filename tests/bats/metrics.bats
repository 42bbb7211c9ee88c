#!/usr/bin/env bats
# --prometheus on every daemon: /metrics in the Prometheus text format
# (promtool check metrics), every counter of the stats record there, the
# latency histograms, one renderer with the textfile; a real Prometheus
# server scraping the demo loop's C-PS and forwarders.
load helper

setup() {
	W="$BATS_TEST_TMPDIR"
	PIDS=()
}

teardown() {
	stop_pids
	[ -z "${NS:-}" ] || ip netns del "$NS" 2>/dev/null || true
}

need_promtool() {
	command -v promtool >/dev/null || skip "promtool (Debian prometheus)"
}

# Scrape $1 (host:port) into $W/$2.prom, waiting for the listener.
scrape() {
	wait_for 50 curl -sf -o "$W/$2.prom" "http://$1/metrics"
	curl -sf -D "$W/$2.head" -o "$W/$2.prom" "http://$1/metrics"
}

# promtool's verdict on $W/$1.prom, and the content type of the answer.
check() {
	promtool check metrics < "$W/$1.prom"
	grep -qi '^content-type: text/plain; version=0.0.4; charset=utf-8' \
	    "$W/$1.head"
}

# Every counter name of stats record $2 (JSON) is in $W/$1.prom as
# cats_TOOL_NAME_total or as a gauge cats_TOOL_NAME.
every_counter() {
	local pre=$3 k n missing=0
	for k in $(jq -r '.counters | keys[]' "$2"); do
		n=$(printf '%s' "$k" | tr -c 'A-Za-z0-9_\n' '_' |
		    sed -E 's/_(ms|us)$/_seconds/')
		grep -Eq "^${pre}_${n}(_total)?([{ ])" "$W/$1.prom" || {
			echo "missing: $k (${pre}_${n})"
			missing=1
		}
	done
	[ "$missing" = 0 ]
}

@test "metrics: --prometheus is in every daemon's synopsis" {
	for t in cats-sma cats-select cats-pce cats-bind cats-fwd cats-sci \
	    cats-cps; do
		check_synopsis "$t"
		"$t" --help >"$BATS_TEST_TMPDIR/help.txt"
		grep -q -- '--prometheus\|-P endpoint' "$BATS_TEST_TMPDIR/help.txt"
	done
}

@test "metrics: cats-select /metrics passes promtool, every counter, the selection histogram" {
	need_promtool
	local port mport
	port=$(free_port)
	mport=$(free_port)
	mkfifo "$W/in"
	cats-select --no-auth --services "$TOP/examples/services.jsonl" \
	    --listen "tcp:127.0.0.1:$port" --prometheus "tcp:127.0.0.1:$mport" \
	    --stats-to "file:$W/stats" <"$W/in" 2>"$W/err" &
	PIDS+=($!)
	exec 7>"$W/in"
	scrape "127.0.0.1:$mport" sel
	check sel
	grep -q '^# TYPE cats_select_selection_seconds histogram$' "$W/sel.prom"
	grep -q '^cats_select_selection_seconds_bucket{le="+Inf"} 0$' \
	    "$W/sel.prom"
	grep -q '^cats_select_start_time_seconds ' "$W/sel.prom"
	kill -USR1 "${PIDS[0]}"
	wait_for 50 test -s "$W/stats"
	cats-cbor check "$W/stats"	# a valid record: no name twice
	cats-cbor decode < "$W/stats" | head -1 > "$W/stats.json"
	scrape "127.0.0.1:$mport" sel
	every_counter sel "$W/stats.json" cats_select
	# A second scrape: the scrape counter moved, nothing else is lost.
	grep -q '^cats_select_scrapes_total [3-9]' "$W/sel.prom"
	# Only /metrics; a body is refused.
	run curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$mport/"
	[ "$output" = 404 ]
	run curl -s -o /dev/null -w '%{http_code}' -d x \
	    "http://127.0.0.1:$mport/metrics"
	[ "$output" = 405 ] || [ "$output" = 413 ]
	exec 7>&-
}

@test "metrics: cats-pce /metrics passes promtool, every counter, the computation histogram" {
	need_promtool
	local port mport
	port=$(free_port)
	mport=$(free_port)
	cats-pce -t "$DATA/pce/lab.json" --insecure \
	    --listen "tcp:127.0.0.1:$port" --prometheus "tcp:127.0.0.1:$mport" \
	    2>"$W/err" &
	PIDS+=($!)
	scrape "127.0.0.1:$mport" pce
	check pce
	grep -q '^# TYPE cats_pce_computation_seconds histogram$' "$W/pce.prom"
	kill -USR1 "${PIDS[0]}"
	wait_for 50 grep -q '"type":"stats"' "$W/err"
	grep '"type":"stats"' "$W/err" | head -1 > "$W/stats.json"
	every_counter pce "$W/stats.json" cats_pce
}

@test "metrics: cats-bind /metrics passes promtool, every counter, the installation histogram" {
	need_promtool
	local mport
	mport=$(free_port)
	mkfifo "$W/in"
	cats-bind -q --listen "unix:$W/sock" --prometheus "tcp:127.0.0.1:$mport" \
	    <"$W/in" >"$W/out" 2>"$W/err" &
	PIDS+=($!)
	exec 7>"$W/in"
	scrape "127.0.0.1:$mport" bind
	check bind
	grep -q '^# TYPE cats_bind_installation_seconds histogram$' \
	    "$W/bind.prom"
	grep -q '^# TYPE cats_bind_bindings gauge$' "$W/bind.prom"
	kill -USR1 "${PIDS[0]}"
	wait_for 50 test -s "$W/out"
	cats-cbor decode < "$W/out" | grep '"type":"stats"' | head -1 \
	    > "$W/stats.json"
	every_counter bind "$W/stats.json" cats_bind
	exec 7>&-
}

@test "metrics: cats-sma /metrics is its textfile, and passes promtool" {
	need_promtool
	local port mport
	port=$(free_port)
	mport=$(free_port)
	sed '/^audit/d' "$DATA/sma/base.conf" > "$W/sma.conf"
	printf '[northbound]\nprometheus = %s\n' "$W/text.prom" >> "$W/sma.conf"
	cats-sma -c "$W/sma.conf" -l "http://127.0.0.1:$port/" \
	    -P "tcp:127.0.0.1:$mport" -t "file:$W/out" 2>"$W/err" &
	PIDS+=($!)
	scrape "127.0.0.1:$mport" sma
	check sma
	kill -USR2 "${PIDS[0]}"
	wait_for 50 test -s "$W/text.prom"
	scrape "127.0.0.1:$mport" sma
	# One renderer: the textfile's families are all on /metrics, the
	# same lines (the values of counters that did not move).
	grep '^# ' "$W/text.prom" | while read -r line; do
		grep -qFx "$line" "$W/sma.prom" || { echo "$line"; exit 1; }
	done
	promtool check metrics < "$W/text.prom"
	grep -q '^cats_sma_reports_total{sma_id="sma-test"} 0$' "$W/sma.prom"
}

@test "metrics: cats-sci server mode /metrics passes promtool" {
	need_promtool
	local port mport
	port=$(free_port)
	mport=$(free_port)
	cats-sci -c svc -s sci-1 -g 5 -l "http://127.0.0.1:$port/" \
	    --prometheus "tcp:127.0.0.1:$mport" 2>"$W/err" &
	PIDS+=($!)
	wait_for 50 curl -sf -o /dev/null "http://127.0.0.1:$port/report"
	scrape "127.0.0.1:$mport" sci
	check sci
	grep -q '^cats_sci_pulls_total{sci_id="sci-1"} 1$' "$W/sci.prom"
	run cats-sci -1 -c svc -s sci-1 --prometheus tcp:127.0.0.1:1
	[ "$status" -eq 2 ]
	[[ "$output" == *"--prometheus"* ]]
}

@test "metrics: cats-fwd /metrics passes promtool, gauges and histograms" {
	need_root
	need_promtool
	NS="cm$$"
	ip netns add "$NS"
	ip -n "$NS" link set lo up
	ip netns exec "$NS" cats-fwd --id IF-1 --client tun:cl0 --core tun:co0 \
	    --prometheus tcp:127.0.0.1:9464 2>"$W/err" &
	PIDS+=($!)
	wait_for 50 ip netns exec "$NS" curl -sf -o "$W/fwd.prom" \
	    http://127.0.0.1:9464/metrics
	ip netns exec "$NS" curl -sf -D "$W/fwd.head" -o "$W/fwd.prom" \
	    http://127.0.0.1:9464/metrics
	check fwd
	grep -q '^# TYPE cats_fwd_bindings gauge$' "$W/fwd.prom"
	grep -q '^# TYPE cats_fwd_pending gauge$' "$W/fwd.prom"
	grep -q '^# TYPE cats_fwd_requests_total counter$' "$W/fwd.prom"
	grep -q '^# TYPE cats_fwd_first_packet_seconds histogram$' \
	    "$W/fwd.prom"
	grep -q '^# TYPE cats_fwd_cps_answer_seconds histogram$' "$W/fwd.prom"
	grep -q '^cats_fwd_rx_pkts_total{fwd_id="IF-1"} ' "$W/fwd.prom"
}

@test "metrics: an endpoint that cannot be listened on is one line and exit 1" {
	run cats-pce -t "$DATA/pce/lab.json" --prometheus "udp:127.0.0.1:1"
	[ "$status" -eq 1 ]
	[[ "$output" == "cats-pce: --prometheus: "* ]]
	[ "${#lines[@]}" -eq 1 ]
}

# cats-cps with its stages, each on its own endpoint, and one request
# through them: the service's counters, the stages' histograms moved.
@test "metrics: cats-cps and its stages: promtool, restarts counted, the histograms move" {
	need_promtool
	local EX=$TOP/examples m0 m1 m2 m3
	m0=$(free_port); m1=$(free_port); m2=$(free_port); m3=$(free_port)
	sh "$EX/nst-from-tedb.sh" "$EX/topology.json" IF-1 EF-1 EF-2 >"$W/nst.jsonl"
	cat >"$W/cps.conf" <<CONF
id = cps-m
prometheus = tcp:127.0.0.1:$m0
[select]
no-auth =
services = $EX/services.jsonl
net = $W/nst.jsonl
listen = unix:$W/select.sock
prometheus = tcp:127.0.0.1:$m1
[pce]
t = $EX/topology.json
prometheus = tcp:127.0.0.1:$m2
[bind]
commit = none
listen = unix:$W/bind.sock
prometheus = tcp:127.0.0.1:$m3
CONF
	mkfifo "$W/in"
	cats-cps -c "$W/cps.conf" <"$W/in" >"$W/out.cbor" 2>"$W/err" &
	PIDS+=($!)
	exec 7>"$W/in"
	wait_for 50 test -S "$W/select.sock"
	wait_for 50 test -S "$W/bind.sock"
	s1_metric >&7
	s1_request "unix:$W/select.sock" 1
	scrape "127.0.0.1:$m3" bind
	wait_for 50 sh -c "curl -sf http://127.0.0.1:$m3/metrics |
	    grep -Eq '^cats_bind_installation_seconds_count(\{.*\})? 1$'"
	for e in "$m0 cps" "$m1 select" "$m2 pce" "$m3 bind"; do
		set -- $e
		scrape "127.0.0.1:$1" "$2"
		check "$2"
	done
	grep -q '^cats_cps_select_running{cps_id="cps-m"} 1$' "$W/cps.prom"
	grep -q '^# TYPE cats_cps_bind_restarts_total counter$' "$W/cps.prom"
	grep -Eq '^cats_select_selection_seconds_count(\{.*\})? 1$' \
	    "$W/select.prom"
	grep -Eq '^cats_pce_computation_seconds_count(\{.*\})? 1$' \
	    "$W/pce.prom"
	grep -Eq '^cats_select_decisions_total(\{.*\})? 1$' "$W/select.prom"
	# The stages' last records, relayed by the parent typed as they say
	# (check: promtool, and no untyped family).
	kill -USR1 "${PIDS[0]}"
	wait_for 50 sh -c "curl -sf http://127.0.0.1:$m0/metrics |
	    grep -q '^# TYPE cats_cps_select_decisions_total counter'"
	curl -sf "http://127.0.0.1:$m0/metrics" >"$W/cps3.prom"
	grep -q '^# TYPE cats_cps_bind_bindings gauge$' "$W/cps3.prom"
	run grep -c ' untyped$' "$W/cps3.prom"
	[ "$output" = 0 ]
	grep -q '^cats_cps_select_bad_total{cps_id="cps-m"} 0$' "$W/cps.prom"
	scrape "127.0.0.1:$m0" cps2
	check cps2
	exec 7>&-
}

@test "metrics: --prometheus https:// speaks the tool's TLS (mutual with --tls-ca); cats-top reads it" {
	need_promtool
	local K=$W/k mport
	sh "$TOP/examples/keys/make-certs.sh" "$K" srv cli >/dev/null
	mport=$(free_port)
	cats-pce -t "$DATA/pce/lab.json" --insecure --tls-cert "$K/srv.crt" \
	    --tls-key "$K/srv.key" --tls-ca "$K/ca.crt" \
	    --listen "unix:$W/pce.sock" \
	    --prometheus "https://127.0.0.1:$mport/" 2>"$W/err" &
	PIDS+=($!)
	local c=(curl -sf --max-time 5 --cacert "$K/ca.crt" --cert "$K/cli.crt"
	    --key "$K/cli.key")
	wait_for 50 "${c[@]}" -o "$W/pce.prom" "https://127.0.0.1:$mport/metrics"
	promtool check metrics <"$W/pce.prom"
	grep -q '^cats_pce_tls_handshakes_total [1-9]' "$W/pce.prom"
	# No client certificate, or plain HTTP: refused.
	run curl -sf --max-time 5 --cacert "$K/ca.crt" \
	    "https://127.0.0.1:$mport/metrics"
	[ "$status" -ne 0 ]
	run curl -sf --max-time 5 "http://127.0.0.1:$mport/metrics"
	[ "$status" -ne 0 ]
	run cats-top -b -n 1 --tls-ca "$K/ca.crt" --tls-cert "$K/cli.crt" \
	    --tls-key "$K/cli.key" "https://127.0.0.1:$mport/metrics"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "cats-pce "* ]]
}
