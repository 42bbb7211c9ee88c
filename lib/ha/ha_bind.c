/*
 * ha_bind.c - cats-bind under --etcd (ha_bind.h).
 */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/stats.h"
#include "ha/ha_bind.h"

static int
repl_append(void *arg, const struct cats_rec *r)
{
	return ha_append(arg, r);
}

static int
repl_begin(void *arg, uint64_t next_id, char *err, size_t errlen)
{
	return ha_commit_begin(arg, next_id, err, errlen);
}

static int
repl_work(void *arg)
{
	return ha_commit_work(arg);
}

static int
repl_end(void *arg, int rc, char *err, size_t errlen)
{
	return ha_commit_end(arg, rc, err, errlen);
}

static int
repl_tick(void *arg, char *err, size_t errlen)
{
	return ha_tick(arg, err, errlen);
}

static void
repl_stats(void *arg, struct cats_stats_list *st)
{
	const struct ha_stats *s = ha_stats(arg);
	const struct etcd_stats *e = ha_etcd_stats(arg);
	cats_stats_gauge(st, "ha.epoch", ha_epoch(arg));
	cats_stats_add(st, "ha.txns", s->txns);
	cats_stats_add(st, "ha.ops", s->ops);
	cats_stats_add(st, "ha.coalesced", s->coalesced);
	cats_stats_add(st, "ha.txn_bytes", s->txn_bytes);
	cats_stats_add(st, "ha.log_raw_bytes", s->log_raw_bytes);
	cats_stats_add(st, "ha.fenced", s->fenced);
	cats_stats_add(st, "ha.write_failures", s->write_failures);
	cats_stats_add(st, "ha.write_retries", s->write_retries);
	cats_stats_add(st, "ha.restored", s->restored);
	cats_stats_add(st, "ha.pending_written", s->pending_written);
	cats_stats_add(st, "ha.pending_restored", s->pending_restored);
	cats_stats_add(st, "ha.pending_dropped", s->pending_dropped);
	cats_stats_add(st, "ha.pending_carried", s->pending_carried);
	cats_stats_add(st, "ha.pending_ended", s->pending_ended);
	cats_stats_add(st, "ha.folds", s->folds);
	cats_stats_add(st, "ha.folded", s->folded);
	cats_stats_add(st, "ha.fold_bytes", s->fold_bytes);
	cats_stats_add(st, "ha.fold_failures", s->fold_failures);
	cats_stats_add(st, "ha.fold_chunks", s->fold_chunks);
	cats_stats_gauge(st, "ha.log_backlog", s->log_backlog);
	cats_stats_add(st, "ha.renewals", ha_own(arg)->renewals);
	cats_stats_add(st, "ha.renew_failures", ha_own(arg)->renew_failures);
	cats_stats_add(st, "etcd.calls", e->calls);
	cats_stats_add(st, "etcd.failures", e->failures);
	cats_stats_add(st, "etcd.errors", e->errors);
	cats_stats_add(st, "etcd.bytes_out", e->bytes_out);
	cats_stats_add(st, "etcd.bytes_in", e->bytes_in);
	cats_stats_add(st, "etcd.ms", e->ms);
}

static struct bind_replica REPL = { repl_append, repl_begin, repl_work,
	repl_end, repl_tick, repl_stats, NULL };

/*
 * The loop's first turn (the output and the forwarders' listener open):
 * each pending request a restore found taken again, its path asked of
 * the PCE again (under cats-cps the binding stage's path-reqs go to the
 * PCE); its binding, or its error at the deadline, then goes to its
 * ingress as any other's: none is left pending.
 */
static void
pending_again(evutil_socket_t fd, short what, void *arg)
{
	struct bind_app *a = arg;
	struct ha *h = REPL.arg;
	struct cats_dec d;
	size_t again = 0, n = h ? ha_pending_count(h) : 0;
	(void)fd;
	(void)what;
	cats_dec_init(&d, NULL);
	for (size_t i = 0; i < n; i++) {
		size_t len;
		const uint8_t *v = ha_pending_at(h, i, &len);
		struct cats_rec r;
		struct cats_err e;
		if (cats_rec_decode(&d, v, len, &r, &e) == 0 &&
		    r.type == CATS_T_PATH_REQ && bind_pending_again(a->t,
		    &r.u.preq, cats_clock_now()) == BR_OK)
			again++;
	}
	cats_dec_free(&d);
	if (n > 0)
		cats_info("etcd: %zu pending requests of the last owner taken "
		    "again (%zu asked of the PCE again)", n, again);
	if (h)
		ha_pending_clear(h);
}

/*
 * A standby until it owns the prefix: a campaign (no lease is held
 * meanwhile, nothing is listened to or read), then the warm copy kept by
 * a watch until the owner key goes (or a second passes), and a campaign
 * again; once owner, restore what the owners wrote, under the new epoch.
 * SIGTERM still ends a standby.
 */
int
ha_bind_start(struct bind_app *a, struct ha_conf *hc)
{
	char err[512], seen[256] = "";
	struct ha *h = ha_new(hc, err, sizeof(err));
	uint64_t t0 = hc->clock();
	bool failing = false, wfailing = false;
	if (h == NULL) {
		cats_errorx("--etcd %s: %s", hc->urls, err);
		return CATS_EXIT_USAGE;
	}
	for (;;) {
		int rc = ha_campaign(h, err, sizeof(err));
		if (rc == 1)
			break;
		if (rc < 0 && !failing)
			cats_warnx("etcd: %s: retrying", err);
		failing = rc < 0;
		if (rc == 0 && strcmp(seen, ha_owner(h)) != 0) {
			cats_info("standby: %s owns %s", ha_owner(h),
			    hc->prefix);
			cats_strlcpy(seen, ha_owner(h), sizeof(seen));
		}
		/*
		 * The warm copy kept by a watch, which also says when the
		 * owner key goes: campaign then, at once.  The watch is
		 * made again every second (a campaign first), so that an
		 * owner key missed (the watch failing) costs a second.
		 */
		if (rc == 0) {
			int w = ha_standby_watch(h, 1000, err, sizeof(err));
			if (w < 0 && !wfailing)
				cats_warnx("etcd: standby watch: %s", err);
			wfailing = w < 0;
			if (w == 1)
				cats_info("standby: the owner key of %s went "
				    "(watch): campaigning", hc->prefix);
			if (w >= 0)
				continue;
		}
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
	uint64_t now = hc->clock();
	if (ha_restore(h, a->t, now, err, sizeof(err)) < 0) {
		cats_errorx("etcd: restoring: %s", err);
		ha_free(h);
		return CATS_EXIT_FAIL;
	}
	REPL.arg = h;
	a->repl = &REPL;
	bind_set_journal_pending(a->t, true);
	struct timeval tv0 = { 0, 0 };
	event_base_once(a->base, -1, EV_TIMEOUT, pending_again, a, &tv0);
	cats_info("owner of %s, epoch %" PRIu64 " (after %" PRIu64 " ms as "
	    "a standby); restored %zu bindings from etcd in %" PRIu64 " ms",
	    hc->prefix, ha_epoch(h), now - t0, bind_count(a->t),
	    hc->clock() - now);
	return CATS_EXIT_OK;
}

void
ha_bind_end(struct bind_app *a)
{
	if (a->repl != &REPL)
		return;
	a->repl = NULL;
	ha_free(REPL.arg);
	REPL.arg = NULL;
}
