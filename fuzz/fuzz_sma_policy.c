/*
 * fuzz_sma_policy.c - the policy rule parser of cats-sma-policy(5), and an
 * evaluation of whatever parses.
 */
#include <stdint.h>
#include <string.h>

#include "rec/rec.h"
#include "sma/sma_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512];
	struct sma_policy *p = sma_policy_parse("fuzz.rules",
	    (const char *)data, size, err, sizeof(err));
	if (p == NULL) {
		if (strlen(err) >= sizeof(err))
			__builtin_trap();
		return 0;
	}
	struct sma_pmetrics m = { .has = 0x7f, .gas = 400, .ct = 5,
		.price = 150, .reputation = 7, .security = 3,
		.health = CATS_DEGRADED, .state = CATS_SCI_HEALTHY };
	struct sma_pctx c = { .entry = true, .cs_id = "ARS",
		.csci_id = "10.0.0.1:80", .has_site = true, .site_gas = 80,
		.site_health = CATS_HEALTHY, .now = UINT64_C(1777687200000) };
	struct sma_pout o;
	sma_policy_eval(p, &m, &c, &o);
	if (m.reputation > 255 || m.security > 255 || m.gas > CATS_U32)
		__builtin_trap();
	c.entry = false;
	sma_policy_eval(p, &m, &c, &o);
	(void)sma_policy_next_boundary(p, c.now);
	sma_policy_free(p);
	return 0;
}
