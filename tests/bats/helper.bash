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

# Wait until a command succeeds, up to $1 tenths of a second.
wait_for() {
	local n=$1; shift
	while [ "$n" -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# JSON Lines -> CBOR, and back, for fixtures.
enc() { cats-cbor encode "$@"; }
dec() { cats-cbor decode "$@"; }
