/*
 * ha_bind.h - cats-bind as one instance of a redundant C-PS (--etcd;
 * cats-bind(1), REDUNDANCY): the table's journal replicated by ha.h, the
 * output held until etcd holds it, the lease renewed on the timer.
 */
#ifndef CATS_HA_BIND_H
#define CATS_HA_BIND_H

#include "bind/bind_app.h"
#include "ha/ha.h"

/*
 * A standby until it owns the prefix of hc: a campaign when the owner
 * key goes (a watch of the prefix, which keeps the warm copy too), at
 * least every second (no lease is held meanwhile; nothing is listened to
 * or read: the caller opens its endpoints after this returns), then
 * restore into a->t what
 * the owners wrote, under the new epoch, and attach the replica
 * (a->repl).  Blocks; SIGTERM's default action still ends a standby.  A
 * cats(7) exit code, the reason logged.
 */
int ha_bind_start(struct bind_app *a, struct ha_conf *hc);
/* Detach and free; a clean stop of the owner revokes its lease (a
 * handover at once, not after the TTL). */
void ha_bind_end(struct bind_app *a);

#endif
