#!/usr/bin/env bats
# cats-key: key files, PSKs, tokens; tampered, expired and unreadable ones.

load helper

setup() {
	T=$(mktemp -d)
	cd "$T"
	cats-key gen -n site-ca -o ca
	cats-key gen -n sci-67 -o sci
}
teardown() { rm -rf "$T"; }

@test "key: gen writes a 0600 secret and a 0644 public key" {
	[ "$(stat -c %a ca.key)" = 600 ]
	[ "$(stat -c %a ca.pub)" = 644 ]
	grep -q '^cats-key v1 ed25519-secret [A-Za-z0-9_-]\{43\} site-ca$' ca.key
	grep -q '^cats-key v1 ed25519-public [A-Za-z0-9_-]\{43\} site-ca$' ca.pub
	diff <(cats-key pub -k ca.key) ca.pub
}

@test "key: psk writes 32 random bytes, 0600" {
	cats-key psk -n sma-1 -o a.psk
	cats-key psk -n sma-1 -o b.psk
	[ "$(stat -c %a a.psk)" = 600 ]
	! cmp -s a.psk b.psk || false
}

@test "key: a token verifies and prints its claims" {
	cats-key token -k ca.key -s 188.3.67.3:67 -c ARS -c VRS -e 1h -o t.cbor
	run cats-key verify -k ca.pub t.cbor
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.iss == "site-ca" and .sub == "188.3.67.3:67" and .cs == ["ARS","VRS"] and (.exp - .iat) == 3600 and .cnf == false'
	cats-key verify -k ca.pub -s 188.3.67.3:67 -c VRS t.cbor
}

@test "key: the token is a COSE_Sign1 that cats-cbor can show" {
	cats-key token -k ca.key -s s1 -c A -o t.cbor
	cats-cbor decode t.cbor | jq -e 'length == 4 and (.[0]."$bytes" | length) > 0'
}

@test "key: base64 tokens verify from stdin" {
	cats-key token -b -k ca.key -s s1 -c A -o t.b64
	grep -q '^[A-Za-z0-9_-]*$' t.b64
	cats-key verify -k ca.pub < t.b64
}

@test "key: other CSCI-ID and unauthorized CS-ID are refused" {
	cats-key token -k ca.key -s 188.3.67.3:67 -c ARS -o t.cbor
	run cats-key verify -k ca.pub -s 188.3.67.4:69 t.cbor
	[ "$status" -eq 65 ]
	[[ "$output" == *'token is for CSCI-ID "188.3.67.3:67", not "188.3.67.4:69"'* ]]
	run cats-key verify -k ca.pub -c LLMS t.cbor
	[ "$status" -eq 65 ]
	[[ "$output" == *'does not authorize CS-ID "LLMS"'* ]]
}

@test "key: an expired token is refused (and its claims still shown)" {
	now=$(($(date +%s) * 1000))
	cats-key token -k ca.key -s s1 -c A -e 60s -T $((now - 120000)) -o t.cbor
	run cats-key verify -k ca.pub t.cbor
	[ "$status" -eq 65 ]
	[[ "$output" == *"token expired"* ]]
	run cats-key verify -k ca.pub -T $((now - 90000)) t.cbor
	[ "$status" -eq 0 ]
}

@test "key: a tampered token is refused" {
	cats-key token -k ca.key -s s1 -c A -o t.cbor
	python3 - <<'PY'
b = bytearray(open("t.cbor", "rb").read())
b[-5] ^= 1
open("sig.cbor", "wb").write(b)
b = bytearray(open("t.cbor", "rb").read())
i = b.find(b"s1")
b[i + 1] = ord("2")
open("claim.cbor", "wb").write(b)
PY
	run cats-key verify -k ca.pub sig.cbor
	[ "$status" -eq 65 ]
	[[ "$output" == *"signature does not verify"* ]]
	run cats-key verify -k ca.pub claim.cbor
	[ "$status" -eq 65 ]
	[[ "$output" == *"signature does not verify"* ]]
	head -c 20 t.cbor > short.cbor
	run cats-key verify -k ca.pub short.cbor
	[ "$status" -eq 65 ]
}

@test "key: a token from another issuer key is refused" {
	cats-key gen -n site-ca -o evil
	cats-key token -k evil.key -s s1 -c A -o t.cbor
	run cats-key verify -k ca.pub t.cbor
	[ "$status" -eq 65 ]
	[[ "$output" == *"unknown key"* ]]
	cats-key token -k ca.key -i mallory -s s1 -c A -o t2.cbor
	run cats-key verify -k ca.pub t2.cbor
	[ "$status" -eq 65 ]
	[[ "$output" == *'issuer "mallory"'* ]]
}

@test "key: a cnf key travels in the token" {
	cats-key token -k ca.key -s s1 -c A -p sci.pub -o t.cbor
	cats-key verify -k ca.pub t.cbor | jq -e '.cnf == true'
}

@test "key: group- or world-readable secrets and unreadable keys are refused" {
	chmod 640 ca.key
	run cats-key token -k ca.key -s s1 -c A -o t.cbor
	[ "$status" -eq 77 ]
	[[ "$output" == *"readable by group or others (mode 0640); chmod 600 it"* ]]
	chmod 604 ca.key
	run cats-key pub -k ca.key
	[ "$status" -eq 77 ]
	chmod 600 ca.key
	run cats-key token -k nosuch.key -s s1 -c A -o t.cbor
	[ "$status" -eq 77 ]
	[[ "$output" == *"nosuch.key: No such file or directory"* ]]
	run cats-key token -k ca.pub -s s1 -c A -o t.cbor
	[ "$status" -eq 77 ]
	[[ "$output" == *"expected ed25519-secret"* ]]
	echo "cats-key v1 psk zzz" > bad.psk; chmod 600 bad.psk
	run cats-key verify -k bad.psk t.cbor
	[ "$status" -eq 77 ]
	[[ "$output" == *"bad.psk:1:"* ]]
}

@test "key: usage errors exit 2; --help equals the man SYNOPSIS" {
	run cats-key token -k ca.key -o t.cbor
	[ "$status" -eq 2 ]
	run cats-key frob
	[ "$status" -eq 2 ]
	check_synopsis cats-key
}
