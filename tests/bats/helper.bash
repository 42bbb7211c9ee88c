# Shared helpers for the bats tests.  Load with: load helper
TOP=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
BUILD=${BUILD:-build}
case "$BUILD" in /*) ;; *) BUILD="$TOP/$BUILD" ;; esac
PATH="$BUILD/bin:$BUILD/tests/tools:$PATH"
DATA="$TOP/tests/data"
export PATH TOP BUILD DATA

# A free TCP/UDP port on loopback (the kernel picks it).
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Skip unless root (network namespaces, raw sockets).
need_root() {
	[ "$(id -u)" = 0 ] || skip "needs root"
}

# Wait until a command succeeds while something keeps moving:
#   wait_progress STALL PROBE CMD...
# PROBE is a shell command (one string) whose output shows progress, such
# as "stat -c %s FILE" for a transfer; the wait fails only when CMD has not
# succeeded and PROBE's output has not changed for STALL tenths of a
# second.  A loaded machine slows a transfer down without failing it; a
# stuck one fails after STALL however long the transfer is.  CMD and PROBE
# are run anew each time: a "$(...)" in CMD would be counted only once,
# before the wait (use a function or sh -c '...').
wait_progress() {
	local stall=$1 probe=$2 n=$1 last now
	shift 2
	# A probe that fails (its file not there yet) is read for what it printed:
	# under errexit a failed assignment would end the test.
	last=$(eval "$probe" 2>/dev/null || :)
	until "$@" >/dev/null 2>&1; do
		if [ "$n" -le 0 ]; then
			echo "wait_progress: $* still false after $((stall / 10)) s" \
			    "without progress${probe:+ ($probe: ${last:-nothing})}" >&2
			return 1
		fi
		sleep 0.1
		now=
		[ -z "$probe" ] || now=$(eval "$probe" 2>/dev/null || :)
		if [ -n "$probe" ] && [ "$now" != "$last" ]; then
			last=$now
			n=$stall
		else
			n=$((n - 1))
		fi
	done
}

# Wait until a command succeeds, up to $1 tenths of a second: for one event
# (a socket, a log line), nothing to measure progress by.  The budget is a
# count of tries, each at least 0.1 s: a loaded machine stretches it.
wait_for() {
	local n=$1
	shift
	wait_progress "$n" "" "$@"
}

# Wait until a command succeeds while process PROC runs (a pid, or a name
# for pgrep -x where a PID namespace holds the test's processes alone), for
# an event only that process brings (its socket, its log line, its answer):
#   wait_on PROC CMD...
# It fails as soon as PROC has ended and CMD is still false, not after a
# budget: a loaded machine makes the process slow, not wrong.  A name is
# waited for to appear first (a process that has not yet exec'd its
# program).  A guard of WAIT_ON_GUARD tries (3000, each at least 0.1 s)
# ends a wait on a process that hangs.
runs() {
	case $1 in
	*[!0-9]*) pgrep -x "$1" >/dev/null ;;
	*) kill -0 "$1" 2>/dev/null ;;
	esac
}
wait_on() {
	local proc=$1 n=${WAIT_ON_GUARD:-3000} seen=
	shift
	case $proc in *[!0-9]*) ;; *) seen=1 ;; esac
	until "$@" >/dev/null 2>&1; do
		if runs "$proc"; then
			seen=1
		elif [ -n "$seen" ]; then
			"$@" >/dev/null 2>&1 && return 0
			echo "wait_on: $proc has ended, and $* is false" >&2
			return 1
		fi
		if [ "$n" -le 0 ]; then
			echo "wait_on: $* still false after ${WAIT_ON_GUARD:-3000}" \
			    "tries while $proc runs" >&2
			return 1
		fi
		n=$((n - 1))
		sleep 0.1
	done
}

# Wait until what a process appends to FILE after its first SIZE bytes
# (a dump on a signal, written record by record) is whole: it decodes as
# CBOR ($CBOR, or cats-cbor on PATH) and FILE has stopped growing (the
# same size at three tries in a row), while PROC (as for wait_on) runs.
#   dump_whole PROC FILE SIZE
# A dump that may be empty (an empty table) gives no event: not for it.
dump_whole() {
	local proc=$1 f=$2 n0=$3 last= same=0 now
	wait_on "$proc" sh -c "[ \$(stat -c %s '$f') -gt $n0 ]" || return 1
	while [ "$same" -lt 3 ]; do
		now=$(stat -c %s "$f")
		if [ "$now" = "$last" ] &&
		    tail -c +$((n0 + 1)) "$f" | "${CBOR:-cats-cbor}" decode \
		    >/dev/null 2>&1; then
			same=$((same + 1))
		else
			same=0
		fi
		last=$now
		runs "$proc" || { echo "dump_whole: $proc has ended" >&2; return 1; }
		sleep 0.1
	done
}

# The SYNOPSIS section of man page $1 as text: requests dropped but the
# words of .B and .I kept, font changes removed, \- as -.
man_synopsis() {
	sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$1" | sed '1d;$d' |
	    sed -E 's/^\.[BI] +//; /^\./d; s/\\f([BIRP]|\(..)//g; s/\\-/-/g;
		s/\\&//g; s/\\e/\\/g'
}

# The words of stdin, one a line.
words() {
	tr -s ' \t' '\n\n' | sed '/^$/d'
}

# The rule of HACKING.md for every tool: TOOL --help exits 0 and prints on
# stdout "usage: " and then the SYNOPSIS of its man page (man/TOOL.1, or
# $2), word for word: the same words in the same order, nothing more and
# nothing less.  Only line breaks and indentation may differ (the page may
# be filled by the formatter).  What follows an empty line (the options,
# one a line, from the page's OPTIONS: man/help.awk) is not the synopsis.
check_synopsis() {
	local tool=$1 page=${2:-$TOP/man/$1.1} help rc=0
	help=$("$tool" --help 2>/dev/null) || rc=$?
	help=${help%%$'\n\n'*}
	[ "$rc" -eq 0 ] || { echo "$tool --help exited $rc"; return 1; }
	[[ "$help" == "usage: $tool "* ]] ||
	    { echo "$tool --help does not begin with 'usage: $tool'"; return 1; }
	diff -u --label "SYNOPSIS of ${page##*/}" --label "$tool --help" \
	    <(man_synopsis "$page" | words) \
	    <(printf '%s\n' "${help#usage: }" | words)
}

# Counter NAME of the cats-fwd of pid PID that writes its stats (--stats
# file:FILE) to FILE, from a fresh dump (SIGUSR1): stats_counter PID FILE
# NAME.  Fails, saying why, when the forwarder is gone, sends no stats or
# has no such counter: a dead forwarder never reads as a count that did
# not move.
stats_counter() {
	local pid=$1 file=$2 name=$3 v
	rm -f "$file"
	kill -USR1 "$pid" 2>/dev/null ||
		{ echo "counter: pid ${pid:-none} is not running" >&2; return 1; }
	wait_for 50 jq -e .counters "$file" >/dev/null ||
		{ echo "counter: no stats from pid $pid" >&2; return 1; }
	v=$(jq -r ".counters.$name" "$file" | tail -1)
	case $v in
	''|*[!0-9]*) echo "counter: pid $pid has no counter $name ($v)" >&2; return 1 ;;
	esac
	echo "$v"
}

# JSON Lines -> CBOR, and back, for fixtures.
enc() { cats-cbor encode "$@"; }
dec() { cats-cbor decode "$@"; }

# Background processes of a test: started with bg (or "... & PIDS+=($!)"),
# ended by stop_pids in teardown: continued (a test may have stopped one),
# sent TERM, then reaped.
stop_pids() {
	local p
	for p in "${PIDS[@]}"; do
		kill -CONT "$p" 2>/dev/null || true
		kill "$p" 2>/dev/null || true
	done
	for p in "${PIDS[@]}"; do
		wait "$p" 2>/dev/null || true
	done
}

# Run "$@" in the background as one of the test's PIDS; its pid in LAST.
bg() {
	"$@" &
	PIDS+=($!)
	LAST=$!
}

# A fresh full metric advertisement of site1: instance 198.51.100.11:80 of
# S1 healthy (examples/demo/s1-metric.jq), as CBOR on stdout.
s1_metric() {
	jq -nc --argjson now "$(date +%s%3N)" -f "$TOP/examples/demo/s1-metric.jq" |
	    cats-cbor encode
}

# steer_sma_conf ID EGRESS DIR KEY SERVICES TO [LINE...]: the cats-sma.conf
# of the site-local steering tests (sma_steer.bats, fwd_steer.bats) on
# stdout: agent ID at site-a beside EGRESS, audit to DIR/sma.audit, one
# report makes an instance healthy or failed, updates leave at once, the
# northbound sender (PSK file KEY) retries within 400 ms, and [steer] on
# for SERVICES to TO, with LINE... after.
steer_sma_conf() {
	printf '%s\n' "id = $1" "site = site-a" "egress = $2" \
	    "audit = file:$3/sma.audit" "[auth]" "mode = none" "[validate]" \
	    "healthy-after = 1" "unhealthy-after = 1" "[timing]" "confirm = 1" \
	    "interval = 60s" "[update]" "min-interval = 0" "batch = 0" \
	    "rate = 0" "[northbound]" "key = $4" "backoff-min = 200ms" \
	    "backoff-max = 400ms" "timeout = 2s" "[steer]" "services = $5" \
	    "to = $6" "${@:7}"
}

# Forwarder IF-1's request for S1, transaction $2, to cats-select's
# forwarder socket $1 (select_client).
s1_request() {
	jq -nc --argjson now "$(date +%s%3N)" --argjson t "$2" '{type:
	    "request", txn: $t, ingress: "IF-1", ts: $now, gen: 1, flow: {proto:
	    6, src: "192.0.2.10", sport: (40000 + $t), dst: "203.0.113.100",
	    dport: 80}, mode: "none", held: 1, dataplane: "srv6",
	    deadline: ($now + 1000)}' | select_client -t "$1" -w 50
}

# cats-cbor decode of the CBOR file $1 repeated without end, to $3, ended by
# signal $2 (TERM or INT, as a terminal's Ctrl-C would send it: a background
# job of a script ignores it) once it has written: it must end by that
# signal, its last line whole.
decode_killed() {
	local pid st=0
	env --default-signal=INT cats-cbor decode \
		< <(while cat "$1"; do :; done 2>/dev/null 3>&-) >"$3" 3>&- &
	pid=$!
	wait_for 50 test -s "$3"
	kill -"$2" "$pid"
	wait "$pid" || st=$?
	[ "$st" -eq $((128 + $(kill -l "$2"))) ]
	[ "$(tail -c 1 "$3" | od -An -tx1 | tr -d ' ')" = 0a ]
}

# A one-member etcd on loopback (etcd-server), its data, log and pid in
# directory $1; ETCD is its client URL.  etcd_down $1 stops it.
etcd_up() {
	local cp pp
	cp=$(free_port)
	pp=$(free_port)
	export ETCD="http://127.0.0.1:$cp"
	etcd --name ha --data-dir "$1/data" \
	    --listen-client-urls "$ETCD" --advertise-client-urls "$ETCD" \
	    --listen-peer-urls "http://127.0.0.1:$pp" \
	    --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
	    --initial-cluster "ha=http://127.0.0.1:$pp" \
	    >"$1/log" 2>&1 &
	echo $! >"$1/pid"
	wait_for 100 curl -sf -m 1 "$ETCD/health"
}

etcd_down() {
	[ -f "$1/pid" ] && kill -CONT "$(cat "$1/pid")" 2>/dev/null
	[ -f "$1/pid" ] && kill "$(cat "$1/pid")" 2>/dev/null
	true
}
