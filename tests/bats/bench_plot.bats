#!/usr/bin/env bats
# The plots of make bench (bench/plot.sh) on the data files of a small
# fixture run (tests/data/bench/: rows and samples as bench/run.sh and the
# scripts write them): every PNG drawn, each plotted number a cell of the
# table's rows, each sample set's p50 its row's; and bench/run.sh itself
# writing a benchmark's rows to the data file the table is made of.

load helper

setup() {
	command -v gnuplot >/dev/null || skip "no gnuplot (make deps installs gnuplot-nox)"
	T=$(mktemp -d)
	cp -r "$DATA/bench" "$T/data"
}

teardown() {
	rm -rf "$T"
}

is_png() {
	[ -s "$1" ] && [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
}

# The cell of column COL of row ROW of a rows file, as written.
cell() {
	awk -F'\t' -v r="$2" -v c="$3" '$1 == r { print $c }' "$1"
}

@test "bench_plot: the four plots are drawn from the fixture run, as PNGs" {
	run sh "$TOP/bench/plot.sh" "$T/data" "$T/out"
	echo "$output"
	[ "$status" -eq 0 ]
	for p in first-packet new-flows established cspf; do
		is_png "$T/out/$p.png" || { echo "$p.png is not a PNG"; return 1; }
		[[ "$output" == *"plot: $T/out/$p.png"* ]]
	done
	# The data is left as it was; OUT defaults to DATA.
	diff -r "$DATA/bench" "$T/data"
	run sh "$TOP/bench/plot.sh" "$T/data"
	[ "$status" -eq 0 ]
	is_png "$T/data/cspf.png"
}

@test "bench_plot: the plotted numbers are the cells of the table's rows" {
	sh "$TOP/bench/plot.sh" "$T/data" "$T/out" 2>/dev/null
	P=$T/data/bench_pce.rows.tsv F=$T/data/fwd.rows.tsv
	# cspf.png: nodes, igraph (spf-N's baseline), SPF, CSPF.
	for n in 10000 100000 1000000; do
		line=$(grep "^$n	" "$T/out/cspf.tsv")
		want="$n	$(cell "$P" "spf-$n" 3 | cut -d' ' -f1)	$(cell "$P" "spf-$n" 2 | cut -d' ' -f1)	$(cell "$P" "cspf-$n" 2 | cut -d' ' -f1)"
		[ "$line" = "$want" ] || { echo "cspf.tsv: '$line', table: '$want'"; return 1; }
	done
	[ "$(grep -vc '^#' "$T/out/cspf.tsv")" -eq 3 ]
	# new-flows.png: every offered rate of the sweep, cats-fwd, kernel, fast path.
	[ "$(grep -vc '^#' "$T/out/new-flows.tsv")" -eq 5 ]
	line=$(grep '^20000	' "$T/out/new-flows.tsv")
	[ "$line" = "20000	$(cell "$F" "fwd new flows/s delivered at 20000/s offered" 2)	$(cell "$F" "fwd new flows/s delivered at 20000/s offered" 3)	$(cell "$F" "fwd --fast-path new flows/s delivered at 20000/s offered" 2)" ]
	# established.png: kernel (the baseline), cats-fwd, --fast-path.
	line=$(grep '^"TCP, 4 streams"' "$T/out/established.tsv")
	[ "$line" = "\"TCP, 4 streams\"	$(cell "$F" "fwd tcp -P4 Gbit/s" 3)	$(cell "$F" "fwd tcp -P4 Gbit/s" 2)	$(cell "$F" "fwd --fast-path tcp -P4 Gbit/s" 2)" ]
}

@test "bench_plot: a sample set whose p50 is not its row's fails the plots, saying which" {
	# The samples of the C-PS loop, one more slow connect: the median moves.
	for i in 1 2 3 4 5 6 7 8 9 10; do echo 99999 >>"$T/data/loop.delay-cps.tsv"; done
	run sh "$TOP/bench/plot.sh" "$T/data" "$T/out"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"loop.delay-cps.tsv: p50 "*", but the table's \"loop first-packet delay p50 us"* ]]
	# The fixture as it is agrees.
	run sh "$TOP/bench/plot.sh" "$DATA/bench" "$T/out2"
	[ "$status" -eq 0 ]
}

@test "bench_plot: a benchmark that did not measure: its plot is not drawn, an error cell is no number" {
	rm "$T/data/bench_pce.rows.tsv"
	sed -i 's/^\(fwd tcp -P4 Gbit\/s\)\t[^\t]*/\1\terror: cats-fwd TCP did not measure: iperf3 received nothing/' \
		"$T/data/fwd.rows.tsv"
	run sh "$TOP/bench/plot.sh" "$T/data" "$T/out"
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"plot: cspf.png not drawn: no bench_pce.rows.tsv"* ]]
	[ ! -e "$T/out/cspf.png" ]
	is_png "$T/out/established.png"
	grep -q '^"TCP, 4 streams"	14.2	NaN	12.9$' "$T/out/established.tsv"
}

@test "bench_plot: bench/run.sh writes each benchmark's rows to the data file the table is made of" {
	make -s -C "$TOP" BUILD="$BUILD" "$BUILD/bench/bench_rec" >/dev/null
	run env BENCH_RECORDS=2000 BENCH_FILTER='^bench/rec\.sh$' BENCH_DATA="$T/run" \
		sh "$TOP/bench/run.sh"
	echo "$output"
	[ "$status" -eq 0 ]
	grep -q '^cats-cbor check through a pipe	' "$T/run/rec.rows.tsv"
	# Each row, cell for cell, in the table printed and kept (table.txt),
	# and no other row there.
	n=0
	while IFS='	' read -r name value base ratio; do
		grep -F "$name" "$T/run/table.txt" | grep -F "| $value" |
			grep -F "| $base" | grep -qF "| $ratio" ||
			{ echo "not in the table: $name | $value | $base | $ratio"; return 1; }
		n=$((n + 1))
	done <"$T/run/rec.rows.tsv"
	[ "$n" -ge 1 ]
	[ "$(wc -l <"$T/run/table.txt")" -eq $((n + 2)) ]
	[[ "$output" == *"plot: first-packet.png not drawn"* ]]
}
