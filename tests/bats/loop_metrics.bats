#!/usr/bin/env bats
# A real Prometheus server scrapes the demo loop's C-PS (cats-select,
# cats-pce, cats-bind) and forwarders (IF-1, EF-1, EF-2), each serving
# /metrics on a unix socket (LOOP_PROM, examples/demo/loop_net.bash)
# bridged to loopback by socat; a PromQL query over its HTTP API gives the
# new-flow rate of the ingress after a few new flows.
load helper
load loop_helper

setup_file() {
	command -v prometheus >/dev/null || return 0
	export LOOP_PROM=1
	loop_file_up lm
}

# Bridge daemon $1's socket to a loopback port; the port on stdout.
bridge() {
	local port
	port=$(free_port)
	socat "TCP-LISTEN:$port,bind=127.0.0.1,fork,reuseaddr" \
	    "UNIX-CONNECT:$LOOP_DIR/$1.prom" >/dev/null 2>&1 &
	echo $! >>"$BATS_TEST_TMPDIR/pids"
	echo "$port"
}

teardown() {
	local p
	[ -f "$BATS_TEST_TMPDIR/pids" ] || return 0
	while read -r p; do
		kill "$p" 2>/dev/null || true
	done <"$BATS_TEST_TMPDIR/pids"
}

# The value of instant query $1 ("" when it has no result).
promql() {
	curl -sf "http://127.0.0.1:$PPORT/api/v1/query" \
	    --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // ""'
}

positive() { local v; v=$(promql "$1"); [ -n "$v" ] && awk "BEGIN { exit !($v > 0) }"; }

@test "loop metrics: Prometheus scrapes the C-PS and the forwarders; the new-flow rate" {
	command -v prometheus >/dev/null || skip "prometheus (Debian)"
	local d=$BATS_TEST_TMPDIR n targets="" port if1
	for n in select pce bind IF-1 EF-1 EF-2; do
		loop_wait 50 test -S "$LOOP_DIR/$n.prom"
		port=$(bridge "$n")
		[ "$n" = IF-1 ] && if1=$port
		targets="$targets'127.0.0.1:$port', "
	done
	PPORT=$(free_port)
	cat >"$d/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: cats
    static_configs:
      - targets: [${targets%, }]
EOF
	promtool check config "$d/prometheus.yml" >/dev/null
	prometheus --config.file="$d/prometheus.yml" \
	    --storage.tsdb.path="$d/tsdb" \
	    --web.listen-address="127.0.0.1:$PPORT" >"$d/prom.log" 2>&1 &
	echo $! >>"$d/pids"
	wait_for 100 curl -sf "http://127.0.0.1:$PPORT/-/ready"
	# Every target is up (scraped, parsed).
	wait_for 100 sh -c "[ \"\$(curl -sf 'http://127.0.0.1:$PPORT/api/v1/query' \
	    --data-urlencode 'query=sum(up{job=\"cats\"})' |
	    jq -r '.data.result[0].value[1]')\" = 6 ]"
	# New flows: each curl is a new TCP connection, a new request of IF-1.
	for n in 1 2 3 4 5; do
		loop_curl http://203.0.113.100/ || { echo "curl: $LOOP_ERR"; false; }
	done
	wait_for 150 positive 'rate(cats_fwd_requests_total{fwd_id="IF-1"}[10s])'
	promql 'rate(cats_fwd_requests_total{fwd_id="IF-1"}[10s])'
	# The C-PS saw them: selections made, bindings installed, latencies.
	wait_for 50 positive 'increase(cats_select_decisions_total[30s])'
	wait_for 50 positive 'cats_pce_computation_seconds_count'
	wait_for 50 positive 'cats_bind_installation_seconds_count'
	wait_for 50 positive 'cats_fwd_first_packet_seconds_count{fwd_id="IF-1"}'
	wait_for 50 positive 'sum(cats_fwd_bindings{fwd_id=~"EF-.*"})'
	! grep -i 'level=error' "$d/prom.log" || false
	# The ingress's live look: the flows counted, their first packets
	# timed.
	cats-top -b -n 1 "tcp:127.0.0.1:$if1" >"$d/top"
	cat "$d/top"
	grep -Eq '^cats-fwd IF-1 ' "$d/top"
	grep -Eq '^  new flows \(requests\) +[0-9.]+ +([5-9]|[1-9][0-9]+)$' "$d/top"
	grep -Eq '^  first_packet_seconds +[0-9.]+ +[0-9.]+(us|ms) ' "$d/top"
}
