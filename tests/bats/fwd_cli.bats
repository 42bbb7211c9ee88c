#!/usr/bin/env bats
# cats-fwd command line: --help is the man page SYNOPSIS, --version, exit
# codes for bad usage, refused keys and ports that cannot be opened.

load helper

@test "fwd cli: --help equals the man page SYNOPSIS" {
	check_synopsis cats-fwd
}

@test "fwd cli: every long option is documented in OPTIONS" {
	sed -n '/^\.SH OPTIONS/,/^\.SH CONTROL/p' "$TOP/man/cats-fwd.1" >"$BATS_TEST_TMPDIR/opts"
	for o in $(cats-fwd --help | grep -o -- '--[a-z0-9-]*' | sort -u); do
		case $o in --help|--version) continue ;; esac
		grep -qF -- "$(echo "$o" | sed 's/-/\\-/g')" "$BATS_TEST_TMPDIR/opts" || {
			echo "undocumented: $o"; false; }
	done
}

@test "fwd cli: --version" {
	run cats-fwd --version
	[ "$status" -eq 0 ]
	[[ "$output" == "cats-fwd (cats) "* ]]
}

@test "fwd cli: bad usage exits 2" {
	run cats-fwd
	[ "$status" -eq 2 ]
	run cats-fwd --id IF-1 --client af_packet:x
	[ "$status" -eq 2 ]
	run cats-fwd --id IF-1 --core bogus:x --client tun:t
	[ "$status" -eq 2 ]
	run cats-fwd --id IF-1 --core tun:a --client tun:b --service noequals
	[ "$status" -eq 2 ]
	run cats-fwd --id IF-1 --core tun:a --client tun:b --mode-b sctp:1:0
	[ "$status" -eq 2 ]
	run cats-fwd --id IF-1 --core tun:a --client tun:b --dataplane srmpls
	[ "$status" -eq 2 ]
	run cats-fwd --id IF-1 --core af_packet:a,peer=zz --client tun:b
	[ "$status" -eq 2 ]
	run cats-fwd --id IF-1 --core tun:a --client tun:b --reserve-flows 2000000
	[ "$status" -eq 2 ]
	[[ "$output" == "cats-fwd: --reserve-flows: "* ]]
}

@test "fwd cli: a refused key exits 77, a missing interface exits 1" {
	run cats-fwd --id IF-1 --core af_packet:nonexistent0 --client af_packet:nonexistent1 \
		--key /nonexistent/key
	[ "$status" -eq 77 ]
	need_root
	run ip netns exec "$(ip netns add fwdcli$$ && echo fwdcli$$)" \
		cats-fwd --id IF-1 --core af_packet:nonexistent0 --client af_packet:nonexistent1
	ip netns del fwdcli$$
	[ "$status" -eq 1 ]
	[[ "$output" == *"nonexistent"* ]]
}
