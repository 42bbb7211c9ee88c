/*
 * ha_own.c - ownership, renew deadline and loss (ha_own.h).
 */
#include <string.h>

#include "ha/ha_own.h"

const char *const ha_state_names[] = { "standby", "owner", "lost", NULL };

void
ha_own_init(struct ha_own *o, uint64_t ttl_ms)
{
	memset(o, 0, sizeof(*o));
	uint64_t s = (ttl_ms + 999) / 1000;
	o->ttl_ms = (s < 2 ? 2 : s) * 1000;
	o->renew_ms = o->ttl_ms * 3 / 4;
	o->keepalive_ms = o->ttl_ms / 4;
	o->retry_ms = o->keepalive_ms / 4;
	o->state = HA_STANDBY;
}

/* The deadline a lease of ttl_s renewed on a request sent at sent gives. */
static uint64_t
deadline_of(const struct ha_own *o, int64_t ttl_s, uint64_t sent)
{
	uint64_t ttl = (uint64_t)ttl_s * 1000;
	if (ttl > o->ttl_ms)
		ttl = o->ttl_ms;
	return sent + ttl * 3 / 4;
}

void
ha_own_won(struct ha_own *o, int64_t lease, int64_t ttl_s, uint64_t epoch,
    uint64_t sent, uint64_t now)
{
	o->lease = lease;
	o->epoch = epoch;
	o->state = ttl_s > 0 ? HA_OWNER : HA_LOST;
	o->why = ttl_s > 0 ? NULL : "the lease was granted without a TTL";
	o->deadline = ttl_s > 0 ? deadline_of(o, ttl_s, sent) : 0;
	o->next_ka = now + o->keepalive_ms;
	ha_own_check(o, now);
}

void
ha_own_renewed(struct ha_own *o, int64_t ttl_s, uint64_t sent, uint64_t now)
{
	if (o->state != HA_OWNER)
		return;
	if (ttl_s <= 0) {
		o->state = HA_LOST;
		o->why = "the lease expired";
		return;
	}
	uint64_t d = deadline_of(o, ttl_s, sent);
	if (d > o->deadline)
		o->deadline = d;
	o->renewals++;
	o->next_ka = now + o->keepalive_ms;
	ha_own_check(o, now);
}

void
ha_own_renew_failed(struct ha_own *o, uint64_t now)
{
	o->renew_failures++;
	o->next_ka = now + o->retry_ms;
	ha_own_check(o, now);
}

void
ha_own_fenced(struct ha_own *o)
{
	o->state = HA_LOST;
	o->why = "fenced: the owner key is not ours any more";
}

int
ha_own_check(struct ha_own *o, uint64_t now)
{
	if (o->state == HA_OWNER && now >= o->deadline) {
		o->state = HA_LOST;
		o->why = "the renew deadline passed";
	}
	return o->state;
}

bool
ha_own_may_act(struct ha_own *o, uint64_t now)
{
	return ha_own_check(o, now) == HA_OWNER;
}

bool
ha_own_keepalive_due(const struct ha_own *o, uint64_t now)
{
	return o->state == HA_OWNER && now >= o->next_ka;
}
