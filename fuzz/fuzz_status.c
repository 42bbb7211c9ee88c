/*
 * fuzz_status.c - forwarder status records against a table holding
 * bindings in several states (commit, failure, expiry, removal, repair,
 * hello and re-sync, unknown ids, stale epochs, capabilities), and the
 * fallback bindings a forwarder reports (adopted or ended).
 */
#include "fuzz_bind_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Three bindings: id 1 ACTIVE, id 2 BINDING_READY, id 3 ACTIVE repairing. */

static void
seed(struct bind_table *t)
{
	struct cats_path_rep r;
	struct cats_status s;
	/* Connected, so that their capabilities and fallback reports count. */
	bind_fwd_hello(t, "IF-1", 1, 1000);
	bind_fwd_hello(t, "EF-2", 1, 1000);
	for (uint64_t i = 1; i <= 3; i++) {
		memset(&r, 0, sizeof(r));
		r.txn = i;
		r.ts = 1000;
		r.status = CATS_PATH_OK;
		r.endpoint = "EF-2";
		r.headend = "IF-1";
		r.ingress = "IF-1";
		CATS_SET(&r, PRP, dataplane, CATS_DP_IP);
		CATS_SET(&r, PRP, path_id, 7);
		r.has |= UINT64_C(1) << CATS_PRP_decision;
		r.decision.cs_id = "S1";
		r.decision.csci_id = "B";
		r.decision.egress = "EF-2";
		r.decision.ts = 1000;
		r.decision.locator.af = 4;
		memcpy(r.decision.locator.a, "\xc6\x33\x64\x15", 4);
		CATS_SET(&r.decision, DEC, on_failure, (int)(i & 1));
		r.has |= UINT64_C(1) << CATS_PRP_flow;
		r.flow.proto = 6;
		r.flow.src.af = r.flow.dst.af = 4;
		memcpy(r.flow.src.a, "\xc0\x00\x02\x0a", 4);
		memcpy(r.flow.dst.a, "\xc0\x00\x02\x64", 4);
		CATS_SET(&r.flow, FLOW, sport, 1000 + i);
		CATS_SET(&r, PRP, deadline, 5000);
		bind_path_rep(t, &r, 1000);
		if (i == 2)
			continue;
		memset(&s, 0, sizeof(s));
		s.ts = 1000;
		s.event = CATS_EV_INSTALLED;
		CATS_SET(&s, STA, id, i);
		s.fwd = "EF-2";
		bind_status(t, &s, 1000);
		s.fwd = "IF-1";
		bind_status(t, &s, 1000);
		if (i == 3) {
			s.event = CATS_EV_PATH_DOWN;
			bind_status(t, &s, 1000);
		}
	}

}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bind_table *t = fz_table();
	seed(t);
	fz_check(t);
	fz_apply(t, data, size, false);
	bind_free(t);
	return 0;
}
