# sma_helper.bash - what the bats files of cats-sma with a real C-PS share
# (sma_sync.bats, sma_steer.bats): cats-sma with its push face on $U, its
# admin socket and its stderr in $W, sending to the C-PS's ingest on
# 127.0.0.1:$PS; its counters; caught up with the C-PS.

# In setup: the test's folder W (the working directory from now on),
# sma-a's PSK in sma.psk, the ports PS and SP (cats-sma's push face, $U).
sma_setup() {
	W="$BATS_TEST_TMPDIR"
	PIDS=()
	cd "$W"
	cats-key psk -n sma-a -o sma.psk
	PS=$(free_port)
	SP=$(free_port)
	U=http://127.0.0.1:$SP
}

# start_sma [OPTION...]: in the background (PIDS), its pid in SMA, up.
start_sma() {
	bg cats-sma -c sma.conf -l "$U/" -a "unix:$W/admin.sock" \
	    -t "http://127.0.0.1:$PS/" "$@" 2>> "$W/sma.err"
	SMA=$LAST
	wait_for 50 curl -sf "$U/health"
}

admin() { curl -s --unix-socket "$W/admin.sock" "http://x$1"; }
counter() { admin /stats | jq -r ".counters.$1"; }

# Caught up: connected and nothing queued.
synced() {
	[ "$(admin /stats | jq -r '.counters.sync_state == 0 and
	    .counters.sync_queued == 0')" = true ]
}
