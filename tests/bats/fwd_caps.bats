#!/usr/bin/env bats
# Capability advertisement (cats-fwd(1) CAPABILITIES): the forwarders'
# hellos say what each can do, and a forwarder refuses, as
# unsupported-encap, a binding it cannot realize.  (That no SRv6 binding is
# ever made for a forwarder that advertises no SRv6 is the binding
# manager's part; the fake control plane here binds blindly.)

load helper
load fwd_net

setup() {
	fwd_setup c
}

teardown() {
	fwd_teardown
}

hello_of() {
	grep '"event":"hello"' "$FWD_DIR/cps.log" | grep "\"fwd\":\"$1\"" | tail -1
}

@test "fwd caps: the hellos carry each forwarder's capabilities" {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_egress
	start_ingress --fast-path --mode-b udp:7100:0
	wait_for 50 sh -c "grep -q '\"fwd\":\"IF-1\",\"event\":\"hello\"' '$FWD_DIR/cps.log'"
	h=$(hello_of IF-1)
	echo "$h" | jq -e '.caps | index("ingress") and index("srv6") and
		index("srv6-msd=16") and index("ipip4") and index("ipip6") and
		index("srmpls") and index("mode-a") and index("mode-b=udp:7100:0") and
		index("fast-path") and index("tcp-state") and (index("egress") | not)'
	h=$(hello_of EF-2)
	# The egress has no IPv4 source: no IPv4 outer header.
	echo "$h" | jq -e '.caps | index("egress") and index("srv6") and
		(index("ipip4") | not) and (index("fast-path") | not)'
}

@test "fwd caps: a forwarder without SRv6 (--encaps srmpls,ip) says so and refuses an SRv6 binding" {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_egress
	start_ingress --encaps srmpls,ip
	start_web
	wait_for 50 sh -c "grep -q '\"fwd\":\"IF-1\",\"event\":\"hello\"' '$FWD_DIR/cps.log'"
	hello_of IF-1 | jq -e '.caps | index("srmpls") and index("ip") and
		(index("srv6") | not) and (index("ipip4") | not)'
	run xc curl -s -m 3 http://203.0.113.100/
	[ "$status" -ne 0 ]
	grep '"event":"failed"' "$FWD_DIR/cps.log" | grep '"fwd":"IF-1"' |
		grep -q '"reason":"unsupported-encap"'
	[ "$(counter ingress bindings_installed)" = 0 ]
}

@test "fwd caps: --msd 2 is advertised and asked for, and a binding of 3 SIDs is refused" {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:cc::2,2001:db8:cc::3,2001:db8:2::100 \
		--rev-sids 2001:db8:1::1
	start_egress
	start_ingress --msd 2
	start_web
	wait_for 50 sh -c "grep -q '\"fwd\":\"IF-1\",\"event\":\"hello\"' '$FWD_DIR/cps.log'"
	hello_of IF-1 | jq -e '.caps | index("srv6-msd=2") and index("srmpls-msd=2")'
	run xc curl -s -m 3 http://203.0.113.100/
	[ "$status" -ne 0 ]
	grep '"type":"request"' "$FWD_DIR/cps.log" | tail -1 |
		jq -e '.dataplane == "srv6" and .msd == 2 and
			.dataplanes == ["srv6", "srmpls", "ipip", "ip"]'
	grep '"event":"failed"' "$FWD_DIR/cps.log" | grep '"fwd":"IF-1"' |
		grep -q '"reason":"unsupported-encap"'
	[ "$(counter ingress bindings_installed)" = 0 ]
}
