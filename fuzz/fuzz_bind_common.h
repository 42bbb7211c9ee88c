/*
 * fuzz_bind_common.h - what the cats-bind fuzz targets share: a table with
 * two forwarders connected and a few transactions and bindings in every
 * state, the records of an input applied in turn, and the invariants
 * checked after each one.
 */
#ifndef FUZZ_BIND_COMMON_H
#define FUZZ_BIND_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bind/bind.h"
#include "rec/cbor_scan.h"

static void
fz_send(void *arg, const struct cats_rec *r, const char *to)
{
	struct cats_err e;
	(void)arg;
	(void)to;
	/* Whatever the table sends is a valid record. */
	if (cats_rec_validate(r, &e) < 0) {
		fprintf(stderr, "invalid %s sent: %s: %s\n",
		    cats_type_name(r->type), e.field, e.reason);
		abort();
	}
}

static void
fz_check(struct bind_table *t)
{
	char why[256];
	if (bind_check(t, why, sizeof(why)) < 0) {
		fprintf(stderr, "invariant: %s\n", why);
		abort();
	}
}

static struct bind_table *
fz_table(void)
{
	static const struct bind_io io = { fz_send, NULL, NULL, NULL, NULL };
	struct bind_conf c;
	bind_conf_default(&c);
	c.closed_memory = 64;
	c.client_bindings = 8;
	c.max_bindings = 64;
	struct bind_table *t = bind_new(&c, &io);
	bind_set_epoch(t, 1);
	bind_fwd_hello(t, "IF-1", 1, 1000);
	bind_fwd_hello(t, "EF-2", 1, 1000);
	return t;
}

/*
 * Apply each record of the CBOR sequence p[0..n) to t; the time is the
 * record's own (when it has one).  Returns the records applied.
 */
static size_t
fz_apply(struct bind_table *t, const uint8_t *p, size_t n, bool any_type)
{
	struct cats_dec d;
	struct cats_rec r;
	struct cats_limits lim = cats_limits_default;
	size_t off = 0, count = 0;
	uint64_t now = 1000;
	lim.max_record = 4096;
	cats_dec_init(&d, &lim);
	while (off < n && count < 64) {
		size_t used = 0, need = 0;
		struct cats_err e;
		cats_arena_reset(&d.arena);
		if (cats_scan(p + off, n - off, true, &d.lim, &d.toks, &d.arena,
		    &used, &need, &e) != CATS_SCAN_OK)
			break;
		off += used;
		if (cats_rec_from_toks(&d, &r, &e) < 0)
			continue;
		count++;
		switch (r.type) {
		case CATS_T_PATH_REP:
			now = r.u.prep.ts > now ? r.u.prep.ts : now;
			bind_path_rep(t, &r.u.prep, now);
			break;
		case CATS_T_STATUS:
			now = r.u.status.ts > now ? r.u.status.ts : now;
			bind_status(t, &r.u.status, now);
			break;
		case CATS_T_PATH_REQ:
			if (any_type)
				bind_path_req(t, &r.u.preq, now);
			break;
		case CATS_T_REQUEST:
			if (any_type)
				bind_request(t, &r.u.request, now);
			break;
		case CATS_T_ERROR:
			if (any_type)
				bind_error(t, &r.u.error, now);
			break;
		case CATS_T_METRIC:
			if (any_type)
				bind_metric(t, &r.u.metric, now);
			break;
		case CATS_T_BINDING:
			/* A forwarder's report of its fallback binding. */
			now = r.u.binding.ts > now ? r.u.binding.ts : now;
			bind_fwd_binding(t, r.u.binding.ingress ?
			    r.u.binding.ingress : "IF-1", &r.u.binding, now);
			break;
		default:
			break;
		}
		fz_check(t);
	}
	/* Time passes: every deadline and lifetime fires. */
	bind_tick(t, now + 3600 * 1000);
	fz_check(t);
	cats_dec_free(&d);
	return count;
}

#endif
