# help.awk - the --help text of a tool, made from its man page:
#   awk -f man/help.awk man/cats-X.1 > cats-X.help.h
# writes `static const char usage_text[] = "...";` for cmd/cats-X.c: the
# SYNOPSIS after "usage: " (so that it equals the page's, word for word),
# then one line per entry of OPTIONS: its tag and the first sentence of its
# description.  The page is the one source: --help cannot drift from it.
# Reads the man(7) subset the pages use (.B .I .BR .BI .IR .RB .IB .RI,
# \f fonts, \-, .nf/.fi); other requests are skipped.

# The arguments of a request line, quotes honoured, in a[1..n].
function args(s, a,    n, i, c, q, w, have) {
	n = 0; q = 0; w = ""; have = 0
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c == "\"") {
			if (q && substr(s, i + 1, 1) == "\"") { w = w "\""; i++; continue }
			q = !q; have = 1; continue
		}
		if (!q && (c == " " || c == "\t")) {
			if (have || w != "") { a[++n] = w; w = ""; have = 0 }
			continue
		}
		w = w c
	}
	if (have || w != "") a[++n] = w
	return n
}

# Escapes to plain text.
function plain(s) {
	gsub(/\\f\([A-Za-z][A-Za-z]/, "", s)
	gsub(/\\f[BIRPC]/, "", s)
	gsub(/\\\(lq|\\\(rq/, "\"", s)
	gsub(/\\\(em/, "--", s)
	gsub(/\\-/, "-", s)
	gsub(/\\&|\\\|/, "", s)
	gsub(/\\ /, " ", s)
	gsub(/\\e/, "\\", s)
	return s
}

# A line as text: a font request's words (joined by spaces for .B and .I,
# run together for the alternating ones), text as it is, other requests "".
function text(line,    a, n, i, r, m, out) {
	if (line !~ /^[.']/)
		return plain(line)
	m = line; sub(/[ \t].*/, "", m); m = substr(m, 2)
	r = line; sub(/^[^ \t]*[ \t]*/, "", r)
	if (m != "B" && m != "I" && m !~ /^(BR|BI|IR|RB|IB|RI)$/)
		return ""
	n = args(r, a)
	out = ""
	for (i = 1; i <= n; i++)
		out = out ((m == "B" || m == "I") && i > 1 ? " " : "") a[i]
	return plain(out)
}

# For C: backslashes and quotes escaped.
function cstr(s) {
	gsub(/\\/, "\\\\", s)
	gsub(/"/, "\\\"", s)
	return s
}

function emit(s) { out[++nout] = s }

function spaces(n,    s) { s = ""; while (n-- > 0) s = s " "; return s }

# A synopsis line: the first after "usage: ", the others under it.
function emit_syn(s) { emit((nsyn++ ? "       " : "usage: ") s) }

# Filled synopsis text (a page without .nf): words wrapped at 78 columns,
# continuation lines under the first option.
function fill_word(w) {
	if (fillline == "") { fillline = w; return }
	if (length(fillline) + 1 + length(w) > 78 - 7) {
		emit_syn(fillline)
		fillline = spaces(indent) w
		return
	}
	fillline = fillline " " w
}

function flush_fill() {
	if (fillline != "") emit_syn(fillline)
	fillline = ""
}

# The first sentence of an option's description, cut to fit a line.
function first_sentence(d,    i, w) {
	gsub(/[ \t]+/, " ", d); sub(/^ /, "", d)
	# Up to the first ". " that is not in "e.g. " or "i.e. ".
	for (i = index(d, ". "); i > 0; ) {
		if (substr(d, i - 3, 3) != "e.g" && substr(d, i - 3, 3) != "i.e") {
			d = substr(d, 1, i)
			break
		}
		j = index(substr(d, i + 2), ". ")
		i = j > 0 ? i + 1 + j : 0
	}
	sub(/ $/, "", d)
	w = 79 - 28
	if (length(d) > w) {
		d = substr(d, 1, w - 3)
		sub(/ [^ ]*$/, "", d)
		d = d "..."
	}
	return d
}

function end_option() {
	if (tag == "") return
	d = first_sentence(desc)
	if (length(tag) <= 24)
		emit(sprintf("  %-24s  %s", tag, d))
	else {
		emit("  " tag)
		if (d != "") emit(spaces(28) d)
	}
	tag = ""; desc = ""
}

BEGIN { sect = ""; nf = 0; nout = 0; nsyn = 0; tool = ""; pend = ""; grp = "" }

/^\.SH/ {
	if (sect == "OPTIONS") end_option()
	if (sect == "SYNOPSIS") { if (pend != "") emit_syn(pend); pend = ""; flush_fill() }
	sect = $0; sub(/^\.SH[ \t]*/, "", sect); gsub(/"/, "", sect)
	if (sect == "OPTIONS") { emit(""); emit("options:") }
	next
}

sect == "SYNOPSIS" {
	if ($0 ~ /^\.nf/) { nf = 1; next }
	if ($0 ~ /^\.fi/) { nf = 0; next }
	if ($0 ~ /^\.(br|PP|LP|P|sp)([ \t]|$)/) { flush_fill(); next }
	t = text($0)
	if ($0 ~ /^[.']/ && t == "") next
	if (tool == "") { tool = t; sub(/[ \t].*/, "", tool) }
	if (nf) {
		# A line that is only the name goes with the next one.
		if (pend != "") { t = pend " " t; pend = "" }
		if (t == tool) { pend = t; next }
		emit_syn(t)
		next
	}
	if (t ~ "^" tool "( |$)") {
		flush_fill()
		indent = length(tool) + 1
	}
	# Words, a bracketed group kept whole ("[--ingest ENDPOINT]").
	nw = split(t, ws, /[ \t]+/)
	for (k = 1; k <= nw; k++) {
		if (ws[k] == "") continue
		grp = grp == "" ? ws[k] : grp " " ws[k]
		depth += gsub(/\[/, "[", ws[k]) - gsub(/\]/, "]", ws[k])
		if (depth <= 0) { fill_word(grp); grp = ""; depth = 0 }
	}
	next
}

sect == "OPTIONS" {
	if ($0 ~ /^\.TP/) { end_option(); want_tag = 1; next }
	if ($0 ~ /^\.(PP|LP|P|IP|SS|RS|RE)([ \t]|$)/) { end_option(); want_tag = 0; next }
	if (want_tag) { tag = text($0); want_tag = 0; next }
	if (tag != "") desc = desc " " text($0)
	next
}

END {
	print "/* Made by man/help.awk from the page's SYNOPSIS and OPTIONS. */"
	print "static const char usage_text[] ="
	for (i = 1; i <= nout; i++)
		printf "    \"%s\\n\"%s\n", cstr(out[i]), i == nout ? ";" : ""
}
