# bench/lib/bench.sh - what the benchmark scripts share, sourced after their
# "set -e" (POSIX sh: the sma scripts are sh, the others bash):
#   TOP, BUILD (made absolute), PATH with the build's tools, tests' tools
#   and benchmarks;
#   bench_workdir: a work folder W, and PIDS killed and W removed at exit;
#   port: a free TCP port on loopback;
#   median VALUES: the median of figures one a line (skip, an error);
#   ratio A B: A / B to two places, or "error" when either is one;
#   cell FIGURE TEXT WHO: "FIGURE TEXT", or "error: WHO did not measure:
#   WHY" when FIGURE is "error: WHY";
#   tcp_gbps N: iperf3 to the server through the client's namespace (xc of
#   tests/bats/fwd_net.bash), N streams for DUR seconds, in Gbit/s, or
#   "error: ..." when it did not measure.
#   bench_fwd_net NAME ID TOOL...: for a bash benchmark of cats-fwd, the
#   namespaces of tests/bats/fwd_net.bash (its helpers sourced, the
#   forwarders' names made of ID, their default receive rings), DUR from
#   FWD_BENCH_SECONDS (3); "NAME: ... skipped" and exit 0 when not root or
#   a TOOL is missing.
TOP=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
PATH="$BUILD/bin:$BUILD/tests/tools:$BUILD/bench:$PATH"
export PATH

bench_cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null || true; done
	rm -rf "$W"
}

bench_workdir() {
	W=$(mktemp -d)
	PIDS=""
	trap bench_cleanup EXIT INT TERM
}

port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

bench_fwd_net() {
	_name=$1 FWD_ID=$2 FWD_RING=
	shift 2
	BATS_TEST_DIRNAME=$TOP/tests/bats
	. "$TOP/tests/bats/helper.bash"
	. "$TOP/tests/bats/fwd_net.bash"
	DUR=${FWD_BENCH_SECONDS:-3}
	if [ "$(id -u)" != 0 ]; then
		echo "$_name: needs root (network namespaces); skipped" >&2
		exit 0
	fi
	for _t in "$@"; do
		command -v "$_t" >/dev/null ||
			{ echo "$_name: no $_t; skipped" >&2; exit 0; }
	done
}

tcp_gbps() {
	# Bounded: a path that drops the SYNs must not hold the run (iperf3
	# would retry its control connection for minutes).
	_out=$(xc timeout $((DUR + 30)) iperf3 -c 203.0.113.100 -t "$DUR" \
		-P "$1" -J --connect-timeout 5000 2>&1)
	case $? in
	124) echo "error: iperf3 -P $1 did not end within $((DUR + 30)) s"; return ;;
	esac
	[ -n "$_out" ] || { echo "error: iperf3 printed nothing"; return; }
	printf '%s\n' "$_out" | jq -r 'if .error then "error: iperf3: " + .error
	elif (.end.sum_received.bits_per_second // 0) <= 0 then
		"error: iperf3 received nothing"
	else .end.sum_received.bits_per_second / 1e9 * 100 | floor / 100 end' \
		2>/dev/null ||
		echo "error: iperf3: $(printf '%s' "$_out" | tr '\n' ' ' | cut -c1-120)"
}

# median VALUES: of figures one a line, "skip" if one is, the first error
# if one is, else the median (the mean of the middle two of an even count).
median() {
	case $1 in *skip*) echo skip; return ;; esac
	case $1 in *error:*) printf '%s\n' "$1" | grep -m1 '^error:'; return ;; esac
	printf '%s\n' "$1" | sort -g | awk 'NF { v[n++] = $1 } END {
		if (n % 2) print v[int(n / 2)]
		else printf "%.6g\n", (v[n / 2 - 1] + v[n / 2]) / 2 }'
}

ratio() {
	case "$1$2" in *error*|"") echo error; return ;; esac
	awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "error" }'
}
cell() {
	case $1 in
	error:*) echo "error: $3 did not measure: ${1#error: }" ;;
	*) echo "$1 $2" ;;
	esac
}
