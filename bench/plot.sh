#!/bin/sh
# bench/plot.sh - the plots of make bench, drawn by gnuplot from the data
# files bench/run.sh leaves in DATA (build/bench): the rows of the table
# (NAME.rows.tsv: name, value, baseline, ratio) and the samples the scripts
# wrote beside them (NAME.*.tsv: one number a line).  Nothing is measured
# here: every plotted number is a cell of the table or a sample whose
# percentiles are the table's.
#
#   sh bench/plot.sh DATA [OUT]        (OUT: DATA by default)
#
# OUT gets, for each plot, NAME.png and the numbers it drew (NAME.tsv;
# for first-packet.png, the samples files are read as they are):
#
#   first-packet.png  first-packet delay distribution (CDF): the whole loop
#                     with the real C-PS and with fake-cps (bench/loop.sh,
#                     connect time, 64 clients); cats-fwd with fake-cps,
#                     with --fast-path, and the kernel path (bench/fwd.sh,
#                     one-way delay, flows 2 ms apart and in a burst)
#   new-flows.png     new flows/s delivered against offered (bench/fwd.sh)
#   established.png   TCP Gbit/s and 64-byte UDP Mpps, cats-fwd against
#                     the kernel path (bench/fwd.sh)
#   cspf.png          time per path against graph size: igraph's Dijkstra,
#                     cats' SPF, cats' CSPF (bench_pce)
#
# A plot whose data is missing (its benchmark skipped or failed) is not
# drawn, and said so; the p50 of each sample set is checked against its
# row of the table (a mismatch is said, and fails the run).
DATA=${1:?usage: plot.sh DATA [OUT]}
OUT=${2:-$DATA}
mkdir -p "$OUT" || exit 1
command -v gnuplot >/dev/null || { echo "plot: no gnuplot (gnuplot-nox)" >&2; exit 1; }
rc=0
# png W,H: the terminal line of a plot.
png() { echo "set terminal pngcairo size $1 font 'sans,10'"; }
# loglog W,H TITLE XLABEL YLABEL: the head of a plot of lines on log-log
# axes into $OUT/$PLOT.png, its key top left.
loglog() {
	png "$1"
	cat <<EOF
set output "$OUT/$PLOT.png"
set title "$2" noenhanced
set logscale xy
set xlabel "$3"
set ylabel "$4"
set grid
set key top left
EOF
}
# gp: gnuplot on the script on stdin, read as a file (an error stops it
# and fails the plot).
gp() {
	cat >"$OUT/.$PLOT.gp"
	gnuplot "$OUT/.$PLOT.gp" || { echo "plot: $PLOT.png: gnuplot failed" >&2; rc=1; }
	rm -f "$OUT/.$PLOT.gp"
}

# cell FILE ROW COL: the number at the start of column COL (2 value,
# 3 baseline) of the row named ROW in FILE, or NaN when the row is
# missing or its cell is not a number ("error: ...").
cell() {
	awk -F'\t' -v row="$2" -v col="$3" '
		$1 == row { v = $col; found = 1 }
		END {
			if (found && match(v, /^-?[0-9]+(\.[0-9]+)?/))
				print substr(v, RSTART, RLENGTH)
			else
				print "NaN"
		}' "$1" 2>/dev/null || echo NaN
}

# p50 FILE: the median of a samples file, by the rule of the tools that
# wrote it (tcpload, flowsink): the sorted sample n * 50 / 100.
p50() {
	awk '!/^#/ { v[n++] = $1 } END { if (n) { i = int(n * 50 / 100); if (i > n - 1) i = n - 1; print v[i] } else print "NaN" }' "$1"
}

# check SAMPLES ROWS ROW COL: the samples' p50 is the table's cell.
check() {
	a=$(p50 "$1")
	b=$(cell "$2" "$3" "$4")
	if [ "$a" != "$b" ]; then
		echo "plot: ${1##*/}: p50 $a us, but the table's \"$3\" says $b" >&2
		rc=1
	fi
}

# have FILE...: every file is there (else the plot is not drawn).
have() {
	for f; do
		[ -s "$f" ] || { echo "plot: ${PLOT}.png not drawn: no ${f##*/}" >&2; return 1; }
	done
}

# drawn: gnuplot made the PNG of PLOT, or say it did not.
drawn() {
	if [ -s "$OUT/$PLOT.png" ]; then
		echo "plot: $OUT/$PLOT.png" >&2
	else
		echo "plot: $PLOT.png: gnuplot drew nothing" >&2
		rc=1
	fi
}

# The first-packet delay distribution.
PLOT=first-packet
L=$DATA/loop F=$DATA/fwd
if have "$L.delay-cps.tsv" "$L.delay-fakecps.tsv" "$F.delay-paced-cats.tsv"; then
	check "$L.delay-cps.tsv" "$L.rows.tsv" \
		"loop first-packet delay p50 us (connect: SYN held, decided, bound, SYN-ACK back)" 2
	check "$L.delay-fakecps.tsv" "$L.rows.tsv" \
		"loop first-packet delay p50 us (connect: SYN held, decided, bound, SYN-ACK back)" 3
	check "$F.delay-paced-cats.tsv" "$F.rows.tsv" \
		"fwd first-packet delay p50 us, flows 2 ms apart" 2
	[ -s "$F.delay-paced-kernel.tsv" ] &&
		check "$F.delay-paced-kernel.tsv" "$F.rows.tsv" \
			"fwd first-packet delay p50 us, flows 2 ms apart" 3
	[ -s "$F.delay-burst-cats.tsv" ] &&
		check "$F.delay-burst-cats.tsv" "$F.rows.tsv" "fwd first-packet delay p50 us" 2
	# Curves of the sample files that are there.
	curves() {
		sep=
		for c; do
			f=${c%%=*} t=${c#*=}
			[ -s "$f" ] || continue
			printf '%s"%s" using 1:(1) smooth cnormal with steps title "%s (p50 %s us)"' \
				"$sep" "$f" "$t" "$(p50 "$f")"
			sep=", "
		done
	}
	gp <<EOF
$(png 1100,620)
set output "$OUT/$PLOT.png"
set multiplot layout 1,2 title "First-packet delay (make bench, one run)" noenhanced
set logscale x
set format x "10^{%L}"
set xlabel "delay (us)"
set ylabel "fraction of flows"
set yrange [0:1]
set grid
set key below horizontal maxcols 2 font ',9'
set bmargin 10
set title "The whole loop: connect time, 64 clients (bench/loop.sh)" noenhanced
plot $(curves "$L.delay-cps.tsv=cats-fwd + the C-PS" \
	"$L.delay-fakecps.tsv=cats-fwd + fake-cps" \
	"$L.delay-kernel.tsv=the kernel path (conntrack, seg6)")
set title "cats-fwd against the kernel: one-way delay (bench/fwd.sh)" noenhanced
plot $(curves "$F.delay-paced-cats.tsv=cats-fwd + fake-cps, 2 ms apart" \
	"$F.delay-paced-fast.tsv=--fast-path, 2 ms apart" \
	"$F.delay-paced-kernel.tsv=kernel path, 2 ms apart" \
	"$F.delay-burst-cats.tsv=cats-fwd + fake-cps, burst of 5000" \
	"$F.delay-burst-kernel.tsv=kernel path, burst of 5000")
unset multiplot
EOF
	drawn
fi

# New flows/s delivered against offered: the rows of fwd.sh's sweep.
PLOT=new-flows
if have "$F.rows.tsv" && grep -q '^fwd new flows/s delivered at ' "$F.rows.tsv"; then
	{
		printf '# offered\tcats-fwd\tkernel\tcats-fwd --fast-path\n'
		sed -n 's,^fwd new flows/s delivered at \([0-9]*\)/s offered\t.*,\1,p' \
			"$F.rows.tsv" | while read -r r; do
			printf '%s\t%s\t%s\t%s\n' "$r" \
				"$(cell "$F.rows.tsv" "fwd new flows/s delivered at $r/s offered" 2)" \
				"$(cell "$F.rows.tsv" "fwd new flows/s delivered at $r/s offered" 3)" \
				"$(cell "$F.rows.tsv" "fwd --fast-path new flows/s delivered at $r/s offered" 2)"
		done
	} >"$OUT/$PLOT.tsv"
	gp <<EOF
$(loglog 900,540 "New flows through the forwarders, fake-cps as the C-PS (bench/fwd.sh)" \
	"offered (new flows/s, one packet each)" "delivered (new flows/s)")
plot "$OUT/$PLOT.tsv" using 1:2 with linespoints title "cats-fwd", \
	"" using 1:4 with linespoints title "cats-fwd --fast-path", \
	"" using 1:3 with linespoints title "kernel path", \
	"" using 1:1 with lines dashtype 2 linecolor "gray" title "offered"
EOF
	drawn
elif [ -s "$F.rows.tsv" ]; then
	echo "plot: $PLOT.png not drawn: no sweep rows in fwd.rows.tsv" >&2
fi

# Established flows: TCP and 64-byte UDP, against the kernel path.
PLOT=established
if have "$F.rows.tsv"; then
	est() {	# LABEL ROW FAST-ROW SCALE
		printf '"%s"\t%s\t%s\t%s\n' "$1" \
			"$(cell "$F.rows.tsv" "$2" 3)" "$(cell "$F.rows.tsv" "$2" 2)" \
			"$(cell "$F.rows.tsv" "$3" 2)"
	}
	{
		printf '# measure\tkernel\tcats-fwd\tcats-fwd --fast-path\n'
		est "TCP, 1 stream" "fwd tcp -P1 Gbit/s (cats-fwd vs the kernel path)" \
			"fwd --fast-path tcp -P1 Gbit/s"
		est "TCP, 4 streams" "fwd tcp -P4 Gbit/s" "fwd --fast-path tcp -P4 Gbit/s"
		est "UDP, one 5-tuple" "fwd udp64 pps one 5-tuple (established)" \
			"fwd --fast-path udp64 pps one 5-tuple (established)"
		est "UDP, random ports" "fwd udp64 pps random source ports (new flows)" \
			"fwd --fast-path udp64 pps random source ports (new flows)"
	} >"$OUT/$PLOT.tsv"
	gp <<EOF
$(png 1000,480)
set output "$OUT/$PLOT.png"
set multiplot layout 1,2 title "Established flows, cats-fwd against the kernel path (bench/fwd.sh)" noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid y
set yrange [0:*]
set key top right
set title "TCP (iperf3)" noenhanced
set ylabel "Gbit/s"
plot "$OUT/$PLOT.tsv" every ::0::1 using 2:xtic(1) title "kernel", \
	"" every ::0::1 using 3 title "cats-fwd", "" every ::0::1 using 4 title "--fast-path"
set title "64-byte UDP (trafgen)" noenhanced
set ylabel "Mpps"
plot "$OUT/$PLOT.tsv" every ::2::3 using (\$2/1e6):xtic(1) title "kernel", \
	"" every ::2::3 using (\$3/1e6) title "cats-fwd", "" every ::2::3 using (\$4/1e6) title "--fast-path"
unset multiplot
EOF
	drawn
fi

# CSPF against igraph by graph size: bench_pce's spf-N and cspf-N rows.
PLOT=cspf
P=$DATA/bench_pce.rows.tsv
if have "$P"; then
	{
		printf '# nodes\tigraph Dijkstra us\tcats SPF us\tcats CSPF us\n'
		sed -n 's/^spf-\([0-9]*\)\t.*/\1/p' "$P" | while read -r n; do
			printf '%s\t%s\t%s\t%s\n' "$n" "$(cell "$P" "spf-$n" 3)" \
				"$(cell "$P" "spf-$n" 2)" "$(cell "$P" "cspf-$n" 2)"
		done
	} >"$OUT/$PLOT.tsv"
	gp <<EOF
$(loglog 800,480 "Path computation time by graph size (bench_pce, synthetic carrier graphs)" \
	"nodes" "us per path")
set format x "10^{%L}"
set format y "10^{%L}"
plot "$OUT/$PLOT.tsv" using 1:2 with linespoints title "igraph Dijkstra (baseline)", \
	"" using 1:3 with linespoints title "cats SPF", \
	"" using 1:4 with linespoints title "cats CSPF (delay bound, bandwidth, affinity)"
EOF
	drawn
fi
exit $rc
