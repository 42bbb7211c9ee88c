#!/usr/bin/env bats
# Docs as tests: every command block of README.md, examples/*/README.md,
# docs/*.md and the EXAMPLES sections of the man pages (and the blocks the
# pages mark elsewhere) is run exactly as written, extracted from the text
# by tests/tools/docs_test.py, in a fresh shell (env -i) with the PATH the
# text says to set (Markdown) or the installed tools' (man pages), in a
# scratch copy of the tree whose build/ is the build under test; its
# standard output is compared with the output the text shows after it.
# A block that cannot run here carries a marker with its reason
# (docs-test: skip (...)); this file lists them.

load helper

setup() {
	T=$(mktemp -d)
	# The tree as a reader has it after `make`: sources, examples, pages,
	# and build/ (the build under test).
	mkdir "$T/tree"
	(cd "$TOP" && tar --exclude=./.git --exclude='./build*' -cf - .) |
		tar -xf - -C "$T/tree"
	ln -s "$BUILD" "$T/tree/build"
	export TMPDIR=$T
}

teardown() {
	rm -rf "$T"
}

docs_run() {
	run python3 "$TOP/tests/tools/docs_test.py" run "$1" "$T/tree"
	echo "$output"
	[ "$status" -eq 0 ]
}

@test "docs: README.md runs as written, its pipeline's output as shown" {
	docs_run "$TOP/README.md"
	[[ "$output" == *"README.md: 4 blocks run, 1 outputs compared, 3 skipped"* ]]
}

@test "docs: examples/README.md runs as written" {
	docs_run "$TOP/examples/README.md"
}

@test "docs: examples/debug/README.md runs as written, replay.sh's story and the jq answers as shown" {
	docs_run "$TOP/examples/debug/README.md"
}

@test "docs: docs/*.md run as written" {
	local f
	for f in "$TOP"/docs/*.md; do
		docs_run "$f"
	done
}

@test "docs: the EXAMPLES of every man page run as written, their outputs as shown" {
	local f fails=0
	for f in "$TOP"/man/*.[1-8]; do
		python3 "$TOP/tests/tools/docs_test.py" run "$f" "$T/tree" || fails=$((fails + 1))
	done
	[ "$fails" -eq 0 ]
}

@test "docs: every README and page has its blocks found, and few skipped" {
	local f n=0
	for f in "$TOP/README.md" "$TOP"/examples/*/README.md "$TOP"/examples/README.md \
	    "$TOP"/docs/*.md "$TOP"/man/*.[1-8]; do
		python3 "$TOP/tests/tools/docs_test.py" list "$f" >"$T/list"
		n=$((n + $(grep -c "	skip (" "$T/list" || true)))
		grep "	skip (" "$T/list" || true
	done
	# The blocks that need root, a network or running daemons (each tested
	# elsewhere, as its reason says); a new one must be justified here.
	# 16: cats-top(1)'s two need a running daemon and cats-sma's textfile
	# (tests/bats/top.bats runs both).
	[ "$n" -le 16 ]
}

@test "docs: docs_test.py finds what it must not miss" {
	# An indented code block is refused (it would not be run), as is a
	# marker without a block or a skip without a reason.
	mkdir -p "$T/x"
	printf '# t\n\n    cats-cbor schema\n' >"$T/x/a.md"
	run python3 "$TOP/tests/tools/docs_test.py" list "$T/x/a.md"
	[ "$status" -eq 1 ]
	[[ "$output" == *"a.md:3: an indented code block"* ]]
	printf '# t\n\n<!-- docs-test: skip -->\n```sh\ntrue\n```\n' >"$T/x/b.md"
	run python3 "$TOP/tests/tools/docs_test.py" list "$T/x/b.md"
	[ "$status" -eq 1 ]
	[[ "$output" == *"bad docs-test marker"* ]]
	# A block that fails, and an output that differs, are reported with
	# their lines; a command not on PATH is named.
	printf '# t\n\n```sh\necho hi\n```\n\n<!-- docs-test: output -->\n```\nho\n```\n\n```sh\ncats-cbor schema | head -1\n```\n' >"$T/x/c.md"
	run python3 "$TOP/tests/tools/docs_test.py" run "$T/x/c.md" "$T/tree"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"c.md:3: output differs from the text"* ]]
	[[ "$output" == *"+hi"* ]]
	[[ "$output" == *"c.md:12: the block exited 127 (command not found)"* ]]
}
