#!/usr/bin/env bats
# The configured ingress fallback (cats-fwd(1) FALLBACK) through a kill -9
# of the C-PS (the fake control plane, tests/tools/fake-cps.c): new flows
# of the service that configures a fallback still reach an instance the
# C-PS had named, those of another service fail closed; every fallback
# binding is audited, and reported to the C-PS when it is back.

load helper
load fwd_net

setup() {
	fwd_setup b
}

teardown() {
	fwd_teardown
}

@test "fwd fallback: the C-PS killed (-9): new flows of the fallback service still work, another service's fail closed; reported at heal" {
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	start_egress --learn-reverse 30s
	start_ingress --fallback S1=30s --service S2=203.0.113.101
	start_web
	# With the C-PS: both services answer; S1's binding names a candidate.
	run xc curl -s -m 5 http://203.0.113.100/
	[ "$output" = "instance 198.51.100.11" ]
	run xc curl -s -m 5 http://203.0.113.101/
	[ "$output" = "instance 198.51.100.11" ]
	[ "$(counter ingress fallback_bound)" = 0 ]
	kill -9 "$(cat "$FWD_DIR/cps.pid")"
	rm -f "$FWD_DIR/cps.pid"
	wait_for 50 grep -q "select: connection closed" "$FWD_DIR/ingress.err"
	# Without it: S1's new flows are bound by the ingress (audited), the
	# egress learns their reverse ...
	for i in 1 2 3; do
		run xc curl -s -m 5 http://203.0.113.100/
		[ "$status" -eq 0 ]
		[ "$output" = "instance 198.51.100.11" ]
	done
	[ "$(counter ingress fallback_bound)" -ge 3 ]
	[ "$(grep -c 'audit.*event=fallback-bind cs_id=S1 .*locator=198.51.100.11 egress=EF-2' "$FWD_DIR/ingress.err")" -ge 3 ]
	[ "$(counter egress reverse_learned)" -ge 3 ]
	# ... and S2, which configures none, fails closed.
	run xc curl -s -m 3 http://203.0.113.101/
	[ "$status" -ne 0 ]
	wait_counter ingress drop_pending_timeout -ge 1
	# The C-PS is back: the forwarders say hello again and the ingress
	# tells it what it bound meanwhile.
	start_cps --egress EF-2 --locator 198.51.100.11 \
		--sids 2001:db8:2::100 --rev-sids 2001:db8:1::1
	wait_counter ingress fallback_reported -ge 3
	fb=$(grep '"type":"binding"' "$FWD_DIR/cps.log" | grep '"reason":"fallback"')
	[ "$(echo "$fb" | wc -l)" -ge 3 ]
	echo "$fb" | head -1 | jq -e '.ingress == "IF-1" and .egress == "EF-2" and
		.cs_id == "S1" and .fwd.locator == "198.51.100.11" and
		.fwd.encap == "srv6" and .fwd.match.dport == 80 and .id >= 4503599627370496'
	grep -q 'event=fallback-reported cs_id=S1' "$FWD_DIR/ingress.err"
	# New flows are the C-PS's again.
	q0=$(counter ingress requests)
	s2_ok() { xc curl -s -m 2 http://203.0.113.101/ | grep -q 198.51.100.11; }
	wait_for 50 s2_ok
	[ "$(counter ingress requests)" -gt "$q0" ]
}
