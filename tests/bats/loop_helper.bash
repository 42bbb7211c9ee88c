# loop_helper.bash - what the loop's bats files share: one loop per file
# (examples/demo/loop_net.bash), brought up once and torn down even when a
# test fails, and a client's view of which instance answers.
#   setup_file() { loop_file_up PREFIX; }   (PREFIX keeps namespaces apart)

loop_file_up() {
	[ "$(id -u)" = 0 ] || return 0
	LOOP_ID=$1$$
	export LOOP_ID
	echo "$LOOP_ID" >"$BATS_FILE_TMPDIR/id"
	. "$TOP/examples/demo/loop_net.bash"
	loop_up || { loop_down; false; }
	echo "$LOOP_DIR" >"$BATS_FILE_TMPDIR/dir"
	loop_wait_ready 200
}

teardown_file() {
	[ "$(id -u)" = 0 ] || return 0
	LOOP_ID=$(cat "$BATS_FILE_TMPDIR/id" 2>/dev/null)
	LOOP_DIR=$(cat "$BATS_FILE_TMPDIR/dir" 2>/dev/null)
	. "$TOP/examples/demo/loop_net.bash"
	loop_down
}

setup() {
	need_root
	LOOP_ID=$(cat "$BATS_FILE_TMPDIR/id")
	LOOP_DIR=$(cat "$BATS_FILE_TMPDIR/dir")
	export LOOP_DIR
	. "$TOP/examples/demo/loop_net.bash"
}

# A new flow to the service is answered by instance $1 (LOOP_PORT is its
# client port).
best_is() {
	loop_curl http://203.0.113.100/ || { echo "curl: $LOOP_ERR"; return 1; }
	[ "$LOOP_BODY" = "$1" ] || { echo "answered by $LOOP_BODY, not $1"; return 1; }
}
