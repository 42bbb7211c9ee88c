/*
 * hello.h - the replay guard of forwarders' signed hellos, one for every
 * manager a forwarder says hello to (cats-bind(1), cats-select(1)).
 *
 * A signed hello is fresh when it was signed at or after the start of the
 * process that checks it and after the last hello accepted from the same
 * forwarder: a hello recorded on the wire and sent again (on this
 * connection or another, before or after a restart) is refused whatever
 * the window.  Forwarders sign each hello anew, so theirs always pass.
 * The caller checks the MAC first: only forwarders of its keyring get an
 * entry, so the table is bounded by the keyring.
 */
#ifndef CATS_SEC_HELLO_H
#define CATS_SEC_HELLO_H

#include "base/cats.h"
#include "base/htab.h"

struct cats_hello_guard {
	struct cats_htab seen;		/* last hello accepted, by forwarder */
	uint64_t started;		/* no signed hello is older */
};

enum { CATS_HELLO_FRESH, CATS_HELLO_REPLAY, CATS_HELLO_NOMEM };

void cats_hello_guard_init(struct cats_hello_guard *g, uint64_t started);
/*
 * The hello of fwd signed at ts: CATS_HELLO_FRESH (and remembered), or
 * CATS_HELLO_REPLAY with *floor the time it is not after and *last true
 * when that is the last hello accepted (false: the start).
 */
int cats_hello_check(struct cats_hello_guard *g, const char *fwd, uint64_t ts,
    uint64_t *floor, bool *last);
void cats_hello_guard_free(struct cats_hello_guard *g);

#endif
