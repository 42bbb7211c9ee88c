#!/usr/bin/env bats
# TLS on every listener (issue 20 §2), tried with clients nobody here
# wrote (curl, openssl s_client, socat's OPENSSL) on loopback: a valid
# client certificate works; none, another CA's, an expired or a revoked
# one (a CRL read again on SIGHUP) is refused at the handshake and
# audited; TLS 1.1 and plaintext are refused without harm; a capture
# shows no record content in clear.  Certificates by
# examples/keys/make-certs.sh.

load helper

setup() {
	W="$BATS_TEST_TMPDIR"
	PIDS=()
	K=$W/k
	sh "$TOP/examples/keys/make-certs.sh" "$K" srv cli cli2 >/dev/null
	sh "$TOP/examples/keys/make-certs.sh" "$W/other" cli >/dev/null
	TLS=(--tls-cert "$K/srv.crt" --tls-key "$K/srv.key" --tls-ca "$K/ca.crt"
	    --tls-crl "$K/crl.pem")
	CURL=(curl -sS --max-time 5 --cacert "$K/ca.crt")
	LAB="$DATA/pce/lab.json"
}

teardown() { stop_pids; }

# An expired certificate of the CA (valid one day in 2020).
expired() {
	(cd "$K" && openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
	    -nodes -keyout old.key -out old.csr -subj /CN=old 2>/dev/null &&
	    openssl ca -config ca.cnf -batch -notext -extensions leaf \
	    -startdate 20200101000000Z -enddate 20200102000000Z \
	    -in old.csr -out old.crt 2>/dev/null && rm -f ./[0-9A-F]*.pem)
}

# A TCP connection can be made to 127.0.0.1:$1 (the server listens).
port_open() { bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# A TLS handshake with s_client to 127.0.0.1:$1 (more options after),
# sending a line; its output in $W/shake.out.  Under TLS 1.3 a client
# learns that its certificate was refused only after its side of the
# handshake, so refusals are read from the server's audit lines.
shake() {
	local port=$1
	shift
	echo | timeout 5 openssl s_client -connect "127.0.0.1:$port" \
	    -CAfile "$K/ca.crt" "$@" >"$W/shake.out" 2>&1 || true
}

# The last shake's handshake was taken: the certificate verified and no
# alert from the server (a refusal of a client certificate comes as one,
# under TLS 1.3 after the handshake).  OpenSSL 3's "unexpected eof while
# reading", when the server closes after s_client's empty input without
# a close_notify, is no refusal and is not counted.
shake_taken() {
	grep -q 'Verify return code: 0 (ok)' "$W/shake.out" &&
	    ! grep -v 'unexpected eof while reading' "$W/shake.out" |
	    grep -qE 'alert|error:'
}

# The battery every listener passes: a valid certificate taken (its
# subject audited); none, another CA's, an expired one, TLS 1.1 refused,
# each audited (tls-refused, with the client's address) in the server's
# stderr $2.
battery() {
	local port=$1 err=$2
	expired
	shake "$port" -cert "$K/cli.crt" -key "$K/cli.key"
	shake_taken
	wait_for 50 grep -q 'event=tls-peer .*subject="CN=cli"' "$err"
	shake "$port"
	wait_for 50 grep -q 'event=tls-refused .*certificate required' "$err"
	shake "$port" -cert "$W/other/cli.crt" -key "$W/other/cli.key"
	wait_for 50 grep -q 'event=tls-refused .*unable to get local issuer' "$err"
	shake "$port" -cert "$K/old.crt" -key "$K/old.key"
	wait_for 50 grep -q 'event=tls-refused .*certificate has expired' "$err"
	shake "$port" -tls1_1 -cert "$K/cli.crt" -key "$K/cli.key"
	grep -qE 'alert|error' "$W/shake.out"
	wait_for 50 grep -q 'event=tls-refused .*protocol version' "$err"
	# Each line names the client's address, also when the client hung up
	# before the line was written (once src=local:0).
	! grep -E 'event=tls-(peer|refused) src=local' "$err" || false
}

@test "tls: the options are checked at start: a key others may read, a lone cert, tls: without a cert" {
	run cats-pce -t "$LAB" --insecure --listen "tls:127.0.0.1:$(free_port)"
	[ "$status" -ne 0 ]
	[[ "$output" == *"TLS needs --tls-cert and --tls-key"* ]]
	run cats-pce -t "$LAB" --insecure --tls-cert "$K/srv.crt" \
	    --listen "tcp:127.0.0.1:$(free_port)"
	[ "$status" -eq 77 ]
	[[ "$output" == *"--tls-cert and --tls-key go together"* ]]
	cp "$K/srv.key" "$W/open.key"
	chmod 644 "$W/open.key"
	run cats-sci -c S1 -s 10.0.0.1:80 --tls-cert "$K/srv.crt" \
	    --tls-key "$W/open.key" --listen "https://127.0.0.1:$(free_port)/"
	[ "$status" -eq 77 ]
	[[ "$output" == *"group or others may read"* ]]
	mkfifo "$W/fifo"
	run timeout 5 cats-sci -c S1 -s 10.0.0.1:80 --tls-cert "$W/fifo" \
	    --tls-key "$K/srv.key" --listen "https://127.0.0.1:$(free_port)/"
	[ "$status" -eq 77 ]
	[[ "$output" == *"not a regular file"* ]]
}

@test "tls: cats-sci's pull server over https: curl with a client certificate; refusals at the handshake, audited; plaintext refused" {
	port=$(free_port)
	bg cats-sci -c S1 -s 10.0.0.1:80 --listen "https://127.0.0.1:$port/" \
	    "${TLS[@]}" 2>"$W/err"
	wait_for 50 port_open "$port"
	"${CURL[@]}" --cert "$K/cli.crt" --key "$K/cli.key" \
	    "https://127.0.0.1:$port/report" | dec | jq -e '.csci_id == "10.0.0.1:80"'
	run "${CURL[@]}" "https://127.0.0.1:$port/report"
	[ "$status" -ne 0 ]
	battery "$port" "$W/err"
	# Plaintext HTTP to the TLS port: refused, audited, nothing crashes.
	run curl -sS --max-time 5 "http://127.0.0.1:$port/report"
	[ "$status" -ne 0 ]
	grep -q 'event=tls-refused .*reason="http request"' "$W/err"
	kill -0 "$LAST"
	"${CURL[@]}" --cert "$K/cli.crt" --key "$K/cli.key" -o /dev/null \
	    "https://127.0.0.1:$port/report"
	# And TLS to a plaintext port: no handshake, the server goes on.
	plain=$(free_port)
	bg cats-sci -c S1 -s 10.0.0.1:80 --listen "http://127.0.0.1:$plain/" \
	    2>"$W/plain.err"
	wait_for 50 port_open "$plain"
	run timeout 5 openssl s_client -connect "127.0.0.1:$plain" </dev/null
	[ "$status" -ne 0 ]
	curl -sf -o /dev/null "http://127.0.0.1:$plain/report"
}

@test "tls: a certificate revoked is refused after SIGHUP reads the CRL again; a failed reload keeps the old context" {
	port=$(free_port)
	bg cats-sci -c S1 -s 10.0.0.1:80 --listen "https://127.0.0.1:$port/" \
	    "${TLS[@]}" 2>"$W/err"
	SCI=$LAST
	wait_for 50 port_open "$port"
	c2=(--cert "$K/cli2.crt" --key "$K/cli2.key")
	"${CURL[@]}" "${c2[@]}" -o /dev/null "https://127.0.0.1:$port/report"
	sh "$TOP/examples/keys/make-certs.sh" -r cli2 "$K"
	# Not read yet: still taken.
	"${CURL[@]}" "${c2[@]}" -o /dev/null "https://127.0.0.1:$port/report"
	kill -HUP "$SCI"
	wait_for 50 grep -q 'event=tls-reloaded' "$W/err"
	run "${CURL[@]}" "${c2[@]}" "https://127.0.0.1:$port/report"
	[ "$status" -ne 0 ]
	grep -q 'event=tls-refused .*certificate revoked' "$W/err"
	"${CURL[@]}" --cert "$K/cli.crt" --key "$K/cli.key" -o /dev/null \
	    "https://127.0.0.1:$port/report"
	# A CRL that does not parse: the reload is refused, the old one stays.
	echo garbage >"$K/crl.pem"
	kill -HUP "$SCI"
	wait_for 50 grep -q 'event=tls-reload-refused .*no PEM CRL' "$W/err"
	grep -q 'TLS reload refused, the running certificates and CRLs stay' "$W/err"
	run "${CURL[@]}" "${c2[@]}" "https://127.0.0.1:$port/report"
	[ "$status" -ne 0 ]
	"${CURL[@]}" --cert "$K/cli.crt" --key "$K/cli.key" -o /dev/null \
	    "https://127.0.0.1:$port/report"
}

@test "tls: cats-pce's record channel on tls:: records answered, refusals audited, plaintext refused, no record content in a capture (tcpdump, tshark)" {
	need_root
	port=$(free_port)
	bg cats-pce -t "$LAB" --insecure --listen "tls:127.0.0.1:$port" \
	    "${TLS[@]}" 2>"$W/err"
	PCE=$LAST
	wait_for 50 grep -q listening "$W/err"
	printf '%s\n' '{"type":"path-req","txn":9,"ts":1000,"headend":"IF-1","endpoint":"EF-2","dataplane":"srmpls","constraints":{},"decision":{"cs_id":"S1","csci_id":"c1","locator":"198.51.100.21","egress":"EF-2","ts":1000}}' |
	    enc >"$W/q.cbor"
	bg tcpdump -Z root --immediate-mode -i lo -U -n -w "$W/cap.pcap" "tcp port $port" 2>"$W/tcpdump.err"
	DUMP=$LAST
	wait_for 50 grep -q listening "$W/tcpdump.err"
	socat -t 2 - "OPENSSL:127.0.0.1:$port,cafile=$K/ca.crt,cert=$K/cli.crt,key=$K/cli.key" \
	    <"$W/q.cbor" >"$W/a.cbor"
	[ "$(dec "$W/a.cbor" | jq -r '[.txn, .status] | join(" ")')" = "9 ok" ]
	kill -INT "$DUMP"
	wait "$DUMP" || true
	# The capture holds the exchange, and none of its text in clear.
	[ "$(tcpdump -r "$W/cap.pcap" -n 2>/dev/null | wc -l)" -ge 6 ]
	! grep -aq -e path-req -e path-rep -e srmpls -e EF-2 "$W/cap.pcap" || false
	# tshark, told the port is TLS, reads it as TLS records: the records
	# travel as application data (content type 23), and the TCP payloads
	# put together hold none of their text either.
	# (TLS 1.3 names a record's outer type opaque_type.)
	[ "$(tshark -r "$W/cap.pcap" -n -d "tcp.port==$port,tls" \
	    -Y 'tls.record.opaque_type == 23 || tls.record.content_type == 23' \
	    2>/dev/null | wc -l)" -ge 2 ]
	tshark -r "$W/cap.pcap" -n -T fields -e tcp.payload 2>/dev/null |
	    python3 -c 'import sys; sys.stdout.buffer.write(bytes.fromhex(sys.stdin.read().replace(":", "").replace("\n", "")))' \
	    >"$W/payload"
	[ -s "$W/payload" ]
	! grep -aq -e path-req -e path-rep -e srmpls -e EF-2 "$W/payload" || false
	battery "$port" "$W/err"
	# Plaintext records to the TLS port: refused, audited; still answering.
	socat -t 1 - "TCP:127.0.0.1:$port" <"$W/q.cbor" >"$W/p.out" || true
	[ ! -s "$W/p.out" ]
	grep -q 'event=tls-refused .*wrong version number' "$W/err"
	kill -0 "$PCE"
	socat -t 2 - "OPENSSL:127.0.0.1:$port,cafile=$K/ca.crt,cert=$K/cli.crt,key=$K/cli.key" \
	    <"$W/q.cbor" | dec | jq -e '.txn == 9'
	# TLS to a plaintext record port: one line, closed at once (not a
	# line per CBOR "item" of the ClientHello), the port still answers.
	plain=$(free_port)
	bg cats-pce -t "$LAB" --insecure --listen "tcp:127.0.0.1:$plain" \
	    2>"$W/plain.err"
	wait_for 50 port_open "$plain"
	run timeout 3 openssl s_client -connect "127.0.0.1:$plain" </dev/null
	[ "$status" -ne 0 ] && [ "$status" -ne 124 ]
	[ "$(grep -c 'record 0: a TLS handshake on a plaintext stream' "$W/plain.err")" = 1 ]
	[ "$(grep -c 'record [1-9]' "$W/plain.err")" = 0 ]
	socat -t 2 - "TCP:127.0.0.1:$plain" <"$W/q.cbor" | dec | jq -e '.txn == 9'
}

# cats-select with its forwarder channel on tls:127.0.0.1:$sp and its
# ingest on https://127.0.0.1:$ip/ (pid $selpid, stderr sel.err), cats-bind
# on tls:127.0.0.1:$bp (pid $bpid, stderr bind.err, its input held open on
# descriptor 7 until the test closes it).
start_select_bind() {
	sp=$(free_port)
	ip=$(free_port)
	cats-key psk -n sma-a -o "$W/sma.psk" >/dev/null
	bg cats-select --listen "tls:127.0.0.1:$sp" --ingest "https://127.0.0.1:$ip/" \
	    --ingest-keys "$W/sma.psk" --no-auth "${TLS[@]}" \
	    </dev/null >/dev/null 2>"$W/sel.err"
	selpid=$LAST
	bp=$(free_port)
	mkfifo "$W/bind.in"
	exec 7<>"$W/bind.in"
	bg cats-bind --listen "tls:127.0.0.1:$bp" "${TLS[@]}" <"$W/bind.in" \
	    >/dev/null 2>"$W/bind.err"
	bpid=$LAST
	wait_for 50 port_open "$ip"
	wait_for 50 port_open "$bp"
}

@test "tls: the forwarder channels of cats-select and cats-bind, and cats-select's ingest, on TLS" {
	start_select_bind
	battery "$sp" "$W/sel.err"
	: >"$W/sel.err"
	battery "$ip" "$W/sel.err"
	# The ingest answers a client with a certificate (an empty post: 400).
	code=$("${CURL[@]}" --cert "$K/cli.crt" --key "$K/cli.key" -o /dev/null \
	    -w '%{http_code}' -X POST -H 'Content-Type: application/cbor-seq' \
	    --data-binary '' "https://127.0.0.1:$ip/")
	[ "$code" -ge 200 ] && [ "$code" -lt 500 ]
	battery "$bp" "$W/bind.err"
	exec 7>&-
}

@test "tls: a tls: --to verifies the server: records reach a TLS server (socat) that checks the client; a server of another CA is refused" {
	port=$(free_port)
	bg socat -u "OPENSSL-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork,cert=$K/srv.crt,key=$K/srv.key,cafile=$K/ca.crt,verify=1" \
	    "OPEN:$W/got,creat,append" 2>"$W/srv.err"
	wait_for 50 port_open "$port"
	printf '%s\n' '{"type":"path-req","txn":9,"ts":1000,"headend":"IF-1","endpoint":"EF-2","dataplane":"srmpls","constraints":{},"decision":{"cs_id":"S1","csci_id":"c1","locator":"198.51.100.21","egress":"EF-2","ts":1000}}' |
	    enc | cats-pce -t "$LAB" --replay --to "tls:127.0.0.1:$port" \
	    --tls-cert "$K/cli.crt" --tls-key "$K/cli.key" --tls-ca "$K/ca.crt"
	wait_for 50 sh -c "cats-cbor decode '$W/got' 2>/dev/null | grep -q path-rep"
	run cats-pce -t "$LAB" --replay --to "tls:127.0.0.1:$port" \
	    --tls-ca "$W/other/ca.crt" </dev/null
	[ "$status" -ne 0 ]
	[[ "$output" == *"TLS handshake with 127.0.0.1"* ]]
}

# cats-sma with its push face on https://127.0.0.1:$pp/ and its admin on
# :$ap, tokens off (the certificates are what is tried).
start_sma() {
	cat >"$W/sma.conf" <<-EOF2
	id = sma-a
	site = site-a
	egress = EF-1
	[auth]
	mode = none
	EOF2
	pp=$(free_port)
	ap=$(free_port)
	bg cats-sma -c "$W/sma.conf" -l "https://127.0.0.1:$pp/" \
	    -a "https://127.0.0.1:$ap/" -t - "${TLS[@]}" >/dev/null 2>"$W/sma.err"
	wait_for 50 port_open "$pp"
	wait_for 50 port_open "$ap"
}

@test "tls: cats-sma's push and admin faces on https (an SCI's certificate binds its CSCI-ID), and a /metrics listener (--prometheus) on https" {
	start_sma
	c=(--cert "$K/cli.crt" --key "$K/cli.key")
	printf '{"type":"sci-report","csci_id":"10.0.0.1:80","cs_id":"S1","seq":1,"ts":%d,"health":"HEALTHY","gas":10}\n' \
	    "$(date +%s%3N)" | enc >"$W/r.cbor"
	code=$("${CURL[@]}" "${c[@]}" -o /dev/null -w '%{http_code}' -X POST \
	    -H 'Content-Type: application/cbor-seq' --data-binary @"$W/r.cbor" \
	    "https://127.0.0.1:$pp/reports")
	[ "$code" = 200 ]
	"${CURL[@]}" "${c[@]}" "https://127.0.0.1:$ap/stats" | jq -e .counters
	# A certificate naming an SCI (SAN URI cats:sci:ID) reports for that
	# CSCI-ID only.
	sh "$TOP/examples/keys/make-certs.sh" "$K" "sci1=URI:cats:sci:10.0.0.1:80"
	s1=(--cert "$K/sci1.crt" --key "$K/sci1.key")
	for id in 10.0.0.1:80 10.0.0.2:80; do
		printf '{"type":"sci-report","csci_id":"%s","cs_id":"S1","seq":2,"ts":%d,"health":"HEALTHY","gas":10}\n' \
		    "$id" "$(date +%s%3N)" | enc >"$W/r-$id.cbor"
	done
	code=$("${CURL[@]}" "${s1[@]}" -o /dev/null -w '%{http_code}' -X POST \
	    -H 'Content-Type: application/cbor-seq' \
	    --data-binary @"$W/r-10.0.0.1:80.cbor" "https://127.0.0.1:$pp/reports")
	[ "$code" = 200 ]
	out=$("${CURL[@]}" "${s1[@]}" -w ' %{http_code}' -X POST \
	    -H 'Content-Type: application/cbor-seq' \
	    --data-binary @"$W/r-10.0.0.2:80.cbor" "https://127.0.0.1:$pp/reports")
	[[ "$out" == *"belongs to CSCI-ID 10.0.0.1:80"*" 403" ]]
	# The framing refusals answer through TLS too: 413, 400 (issue 20 §1).
	head -c 2000000 /dev/zero >"$W/big"
	out=$("${CURL[@]}" "${c[@]}" -w ' %{http_code}' -X POST \
	    -H 'Content-Type: application/cbor-seq' --data-binary @"$W/big" \
	    "https://127.0.0.1:$pp/reports")
	[[ "$out" == *"body over 1048576 bytes"*" 413" ]]
	printf 'GET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n' |
	    timeout 5 openssl s_client -quiet -connect "127.0.0.1:$pp" \
	    -cert "$K/cli.crt" -key "$K/cli.key" -CAfile "$K/ca.crt" 2>/dev/null |
	    head -1 | grep -q '^HTTP/1.1 400 '
	battery "$pp" "$W/sma.err"
	: >"$W/sma.err"
	battery "$ap" "$W/sma.err"
	mp=$(free_port)
	bg cats-pce -t "$LAB" --insecure --listen "tcp:127.0.0.1:$(free_port)" \
	    --prometheus "https://127.0.0.1:$mp/" "${TLS[@]}" 2>"$W/pce.err"
	wait_for 50 port_open "$mp"
	"${CURL[@]}" "${c[@]}" "https://127.0.0.1:$mp/metrics" | grep -q '^# TYPE'
	run "${CURL[@]}" "http://127.0.0.1:$mp/metrics"
	[ "$status" -ne 0 ]
	battery "$mp" "$W/pce.err"
}

@test "tls: every TLS server reads its CRL again on SIGHUP: cats-sma's push and admin faces, cats-pce's tls: and /metrics, cats-select's and cats-bind's channels and ingest" {
	start_sma
	spid=$LAST
	tp=$(free_port)
	mp=$(free_port)
	bg cats-pce -t "$LAB" --insecure --listen "tls:127.0.0.1:$tp" \
	    --prometheus "https://127.0.0.1:$mp/" "${TLS[@]}" 2>"$W/pce.err"
	ppid=$LAST
	start_select_bind
	servers=("$pp sma" "$ap sma" "$tp pce" "$mp pce" "$sp sel" "$ip sel" "$bp bind")
	for s in "${servers[@]}"; do
		set -- $s
		wait_for 50 port_open "$1"
		shake "$1" -cert "$K/cli2.crt" -key "$K/cli2.key"
		wait_for 50 grep -q "event=tls-peer src=127.0.0.1:[0-9]* subject=\"CN=cli2\"" "$W/$2.err"
	done
	sh "$TOP/examples/keys/make-certs.sh" -r cli2 "$K"
	kill -HUP "$spid" "$ppid" "$selpid" "$bpid"
	for e in sma pce sel bind; do
		wait_for 50 grep -q 'event=tls-reloaded' "$W/$e.err"
	done
	for s in "${servers[@]}"; do
		set -- $s
		n=$(grep -c 'event=tls-refused .*certificate revoked' "$W/$2.err" || true)
		shake "$1" -cert "$K/cli2.crt" -key "$K/cli2.key"
		wait_for 50 sh -c "[ \$(grep -c 'event=tls-refused .*certificate revoked' '$W/$2.err') -gt $n ]"
		# A certificate not revoked is still taken.
		shake "$1" -cert "$K/cli.crt" -key "$K/cli.key"
		shake_taken
	done
	exec 7>&-
}

@test "tls: cats-sma's push face holds an SCI's certificate to the CS-IDs it names (cats:cs:); two CSCI-IDs in one certificate are refused" {
	start_sma
	sh "$TOP/examples/keys/make-certs.sh" "$K" \
	    "sci1=URI:cats:sci:10.0.0.1:80,URI:cats:cs:S1,URI:cats:cs:S3" \
	    "two=URI:cats:sci:10.0.0.1:80,URI:cats:sci:10.0.0.2:80" >/dev/null
	# push CERT CS-ID SEQ: the answer and its status.
	push() {
		printf '{"type":"sci-report","csci_id":"10.0.0.1:80","cs_id":"%s","seq":%d,"ts":%d,"health":"HEALTHY","gas":10}\n' \
		    "$2" "$3" "$(date +%s%3N)" | enc >"$W/r.cbor"
		"${CURL[@]}" --cert "$K/$1.crt" --key "$K/$1.key" -w ' %{http_code}' \
		    -X POST -H 'Content-Type: application/cbor-seq' \
		    --data-binary @"$W/r.cbor" "https://127.0.0.1:$pp/reports"
	}
	[[ "$(push sci1 S1 1)" == *" 200" ]]
	[[ "$(push sci1 S3 2)" == *" 200" ]]
	out=$(push sci1 S2 3)
	[[ "$out" == *"cs_id: this connection's certificate does not name CS-ID S2"*" 403" ]]
	grep -q 'event=auth-fail .*csci=10.0.0.1:80 cs=S2 .*field=cs_id' "$W/sma.err"
	out=$(push two S1 4)
	[[ "$out" == *"the client certificate names two CSCI-IDs"*" 403" ]]
	grep -q 'event=auth-fail .*field=cert reason="the client certificate names two CSCI-IDs"' "$W/sma.err"
	# A certificate without cats:cs: is not limited by it.
	[[ "$(push cli S2 5)" == *" 200" ]]
	# On one kept-alive connection (a certificate's names are read once a
	# connection) every request is held to them, not only the first.
	args=()
	seq=6
	for cs in S1 S2 S3; do
		printf '{"type":"sci-report","csci_id":"10.0.0.1:80","cs_id":"%s","seq":%d,"ts":%d,"health":"HEALTHY","gas":10}\n' \
		    "$cs" "$seq" "$(date +%s%3N)" | enc >"$W/k$cs.cbor"
		[ "$cs" = S1 ] || args+=(--next)
		args+=(--cacert "$K/ca.crt" --cert "$K/sci1.crt" --key "$K/sci1.key"
		    -o /dev/null -w '%{http_code} %{num_connects}\n' -X POST
		    -H 'Content-Type: application/cbor-seq'
		    --data-binary @"$W/k$cs.cbor" "https://127.0.0.1:$pp/reports")
		seq=$((seq + 1))
	done
	out=$(curl -sS --max-time 5 "${args[@]}")
	echo "$out"
	[ "$out" = $'200 1\n403 0\n200 0' ]
	"${CURL[@]}" --cert "$K/cli.crt" --key "$K/cli.key" \
	    "https://127.0.0.1:$ap/stats" | jq -e '.counters.cert_refused == 1'
}

@test "tls: a connection that does not finish its TLS handshake is closed at the hello deadline, even where quiet peers may wait" {
	port=$(free_port)
	bg cats-pce -t "$LAB" --insecure --listen "tls:127.0.0.1:$port" \
	    "${TLS[@]}" 2>"$W/err"
	wait_for 50 grep -q listening "$W/err"
	# One that never starts its handshake, one that finished it and says
	# nothing (a quiet peer: it waits, the channel has no hello).
	python3 - "$port" "$K" >"$W/out" <<'PY'
import socket, ssl, sys, time
port, k = int(sys.argv[1]), sys.argv[2]
mute = socket.create_connection(("127.0.0.1", port))
ctx = ssl.create_default_context(cafile=k + "/ca.crt")
ctx.load_cert_chain(k + "/cli.crt", k + "/cli.key")
quiet = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)),
    server_hostname="127.0.0.1")
mute.settimeout(20)
t0 = time.monotonic()
print("mute closed" if mute.recv(1) == b"" else "mute got bytes", flush=True)
print("after %.0f s" % (time.monotonic() - t0), flush=True)
quiet.settimeout(1)
try:
    print("quiet closed" if quiet.recv(1) == b"" else "quiet got bytes")
except (socket.timeout, TimeoutError):
    print("quiet open")
PY
	cat "$W/out"
	grep -qx "mute closed" "$W/out"
	grep -qx "quiet open" "$W/out"
	grep -q 'event=tls-refused .*closed before the handshake finished' "$W/err"
	grep -q 'not authenticated within 10000 ms, closed' "$W/err"
}

@test "tls: cats-cps's --tls-* reach its stages: select's forwarder channel and ingest, bind's channel on TLS with one set of files; SIGHUP reloads them all" {
	sp=$(free_port)
	ip=$(free_port)
	bp=$(free_port)
	cats-key psk -n sma-a -o "$W/sma.psk" >/dev/null
	cat >"$W/cps.conf" <<-EOF2
	[select]
	no-auth =
	listen = tls:127.0.0.1:$sp
	ingest = https://127.0.0.1:$ip/
	ingest-keys = $W/sma.psk
	[pce]
	t = $LAB
	[bind]
	commit = none
	listen = tls:127.0.0.1:$bp
	EOF2
	mkfifo "$W/cps.in"
	exec 7<>"$W/cps.in"	# (its input stays open)
	bg cats-cps -c "$W/cps.conf" "${TLS[@]}" <"$W/cps.in" >/dev/null 2>"$W/cps.err"
	wait_for 50 port_open "$sp"
	wait_for 50 port_open "$ip"
	wait_for 50 port_open "$bp"
	for port in "$sp" "$bp"; do
		: >"$W/cps.err"
		shake "$port" -cert "$K/cli2.crt" -key "$K/cli2.key"
		shake_taken
		wait_for 50 grep -q 'event=tls-peer .*subject="CN=cli2"' "$W/cps.err"
		shake "$port"
		wait_for 50 grep -q 'event=tls-refused .*certificate required' "$W/cps.err"
	done
	# The ingest: a client with a certificate is answered (an empty post:
	# 400), one without is refused at the handshake.
	ing=(-o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/cbor-seq'
	    --data-binary '' "https://127.0.0.1:$ip/metrics")
	code=$("${CURL[@]}" --cert "$K/cli2.crt" --key "$K/cli2.key" "${ing[@]}" || true)
	[ "$code" = 400 ]
	run "${CURL[@]}" "${ing[@]}"
	[ "$status" -ne 0 ]
	# cli2 revoked; SIGHUP to the service: every stage reads the CRL again.
	sh "$TOP/examples/keys/make-certs.sh" -r cli2 "$K"
	: >"$W/cps.err"
	kill -HUP "$LAST"
	wait_for 50 sh -c "[ \$(grep -c 'event=tls-reloaded' '$W/cps.err') -ge 4 ]"
	for port in "$sp" "$bp"; do
		shake "$port" -cert "$K/cli2.crt" -key "$K/cli2.key"
	done
	wait_for 50 sh -c "[ \$(grep -c 'event=tls-refused .*certificate revoked' '$W/cps.err') -ge 2 ]"
	run "${CURL[@]}" --cert "$K/cli2.crt" --key "$K/cli2.key" "${ing[@]}"
	[ "$status" -ne 0 ]
	[ "$("${CURL[@]}" --cert "$K/cli.crt" --key "$K/cli.key" "${ing[@]}")" = 400 ]
	exec 7>&-
}

@test "tls: cats-cps refuses TLS files it cannot use before any stage starts (77)" {
	run cats-cps --tls-cert "$K/srv.crt" </dev/null
	[ "$status" -eq 77 ]
	[[ "$output" == *"--tls-cert and --tls-key go together"* ]]
	[[ "$output" != *"stage"* ]]
}

@test "tls: cats-sci's https server under a flood: 500 mute connections held and 300 plaintext ones closed on their first bytes, all counted, their audit lines rate-limited; a valid client served meanwhile" {
	port=$(free_port)
	mp=$(free_port)
	bg cats-sci -c S1 -s 10.0.0.1:80 --listen "https://127.0.0.1:$port/" \
	    --prometheus "http://127.0.0.1:$mp/" "${TLS[@]}" 2>"$W/err"
	wait_for 50 port_open "$port"
	# 500 connections that never start a handshake, held until killed.
	python3 - "$port" >"$W/mute" <<'PY' &
import resource, socket, sys, time
port = int(sys.argv[1])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 1024), hard))
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(500)]
print("held %d" % len(held), flush=True)
time.sleep(600)
PY
	MUTE=$!
	PIDS+=($MUTE)
	wait_for 100 grep -q "held 500" "$W/mute"
	# 300 that send a plaintext request: each is closed on its first bytes
	# (an end of file, not the 10 s idle timeout nor a hang).
	python3 - "$port" >"$W/garbage" <<'PY'
import socket, sys
port = int(sys.argv[1])
closed = 0
for i in range(300):
    g = socket.create_connection(("127.0.0.1", port), timeout=30)
    g.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    try:
        while g.recv(4096):
            pass
        closed += 1
    except OSError:
        pass
    g.close()
print("closed %d" % closed)
PY
	cat "$W/garbage"
	grep -qx "closed 300" "$W/garbage"
	# The mute ones are still held, and a valid client is served.
	kill -0 "$MUTE"
	"${CURL[@]}" --cert "$K/cli.crt" --key "$K/cli.key" \
	    "https://127.0.0.1:$port/report" | dec | jq -e '.csci_id == "10.0.0.1:80"'
	curl -sf "http://127.0.0.1:$mp/metrics" >"$W/m"
	refused=$(awk '/^cats_sci_tls_refused_total/ { print $2 }' "$W/m")
	echo "refused $refused"
	[ "$refused" -ge 300 ]
	# Fewer lines than refusals; a later one says how many it left out.
	lines=$(grep -c 'event=tls-refused .*reason="http request"' "$W/err" || true)
	echo "lines $lines"
	[ "$lines" -lt 300 ]
	wait_for 50 sh -c "curl -s --max-time 5 http://127.0.0.1:$port/ >/dev/null;
	    grep -q 'event=tls-refused .* unlogged=[1-9]' '$W/err'"
	kill -0 "$LAST"
}
