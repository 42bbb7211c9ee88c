/*
 * test_sma.c - the C-SMA core: configuration, validation, hysteresis, the
 * per-SCI state machine, LRU, site aggregation, quarantine, tokens, state
 * files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "base/log.h"
#include "sma/sma.h"
#include "t.h"

/* ---- an event recorder ---- */

struct ev {
	int kind;
	char csci[64];
	uint32_t changed;
	int reason, health, state;
	uint64_t now, site_gas;
	int site_health;
};

static struct ev evs[512];
static size_t nevs;

static void
record(void *arg, const struct sma_event *e)
{
	(void)arg;
	if (nevs == CATS_ARRAY_LEN(evs))
		return;
	struct ev *x = &evs[nevs++];
	memset(x, 0, sizeof(*x));
	x->kind = e->kind;
	x->now = e->now;
	x->changed = e->changed;
	x->reason = e->reason;
	if (e->ent) {
		snprintf(x->csci, sizeof(x->csci), "%s", e->ent->csci_id);
		x->health = e->ent->health;
		x->state = e->ent->state;
	}
	if (e->kind == SMA_EV_SITE) {
		x->site_gas = e->svc->view.gas;
		x->site_health = e->svc->view.health;
	}
}

static size_t
count(int kind)
{
	size_t n = 0;
	for (size_t i = 0; i < nevs; i++)
		n += evs[i].kind == kind;
	return n;
}

static const struct ev *
last(int kind)
{
	for (size_t i = nevs; i > 0; i--)
		if (evs[i - 1].kind == kind)
			return &evs[i - 1];
	return NULL;
}

/* ---- reports ---- */

struct rep {
	struct cats_rec r;
};

static void
rep(struct cats_rec *r, const char *csci, const char *cs, uint64_t seq,
    uint64_t ts, int health, long gas, long ct)
{
	cats_rec_init(r, CATS_T_SCI_REPORT);
	r->u.sci.csci_id = csci;
	r->u.sci.cs_id = cs;
	r->u.sci.seq = seq;
	r->u.sci.ts = ts;
	r->u.sci.health = health;
	if (gas >= 0)
		CATS_SET(&r->u.sci, SCI, gas, (uint64_t)gas);
	if (ct >= 0)
		CATS_SET(&r->u.sci, SCI, comp_time_ms, (uint64_t)ct);
}

static int
offer(struct sma *s, const char *csci, const char *cs, uint64_t seq,
    uint64_t ts, int health, long gas, long ct, struct sma_result *res)
{
	struct cats_rec r;
	struct sma_result tmp;
	rep(&r, csci, cs, seq, ts, health, gas, ct);
	sma_tick(s, ts);
	return sma_report(s, &r, NULL, 0, NULL, ts, res ? res : &tmp);
}

static struct sma_conf *
conf_text(const char *text)
{
	static struct sma_conf c;
	struct cats_conf cf;
	char err[300];
	sma_conf_free(&c);
	if (cats_conf_parse(&cf, "test.conf", text, strlen(text), err,
	    sizeof(err)) < 0 || sma_conf_from(&c, &cf, err, sizeof(err)) < 0) {
		printf("# conf: %s\n", err);
		exit(1);
	}
	cats_conf_free(&cf);
	return &c;
}

static int
conf_err(const char *text, char *err, size_t errlen)
{
	struct sma_conf c;
	struct cats_conf cf;
	if (cats_conf_parse(&cf, "bad.conf", text, strlen(text), err,
	    errlen) < 0)
		return -1;
	int rc = sma_conf_from(&c, &cf, err, errlen);
	cats_conf_free(&cf);
	if (rc == 0)
		sma_conf_free(&c);
	return rc;
}

#define BASE "[auth]\nmode = none\n[timing]\ninterval = 1s\ngrace = 2s\n"

static struct sma_keys nokeys;

/* ---- tests ---- */

static void
test_conf(void)
{
	char err[300];
	struct sma_conf d;
	sma_conf_defaults(&d);
	T_OK(d.gas_jump_ppm == 500000 && d.gas_jump_ms == 1000 &&
	    d.ct_jump_ppm == 1000000 && d.flap_max == 3 &&
	    d.flap_ms == 10000 && d.comp_time.max == 3600000 &&
	    d.reputation.max == 10 && d.security.max == 10 &&
	    d.gas.max == CATS_U32 && d.ttl.mult_ppm == 2000000 &&
	    d.skew_ms == 30000, "defaults are the examples of seed 000");
	struct sma_conf *c = conf_text("id = sma-x\nsite = s1\negress = EF-1\n"
	    "[auth]\nmode = none\n[timing]\nttl = 20s\nttl-static = 3x\n"
	    "[validate]\ngas-jump = 25%\ncomp-time-max = 2s\nreputation-max = 5\n"
	    "anomaly = quarantine\n[sci \"a:1\"]\ncs-id = ARS\n"
	    "pull = http://127.0.0.1:1/report\npull-interval = 5s\n"
	    "[service \"ARS\"]\nttl = 4x\n");
	T_OK(strcmp(c->id, "sma-x") == 0 && strcmp(c->egress, "EF-1") == 0,
	    "identity keys");
	T_OK(c->ttl.ms == 20000 && c->ttl_static.mult_ppm == 3000000,
	    "TTL as a duration or a multiple");
	T_OK(c->gas_jump_ppm == 250000 && c->comp_time.max == 2000 &&
	    c->reputation.max == 5 && c->anomaly == SMA_ANOMALY_QUARANTINE,
	    "validation thresholds");
	T_OK(c->nscis == 1 && strcmp(c->scis[0].cs_id, "ARS") == 0 &&
	    c->scis[0].pull_interval_ms == 5000, "[sci] sections");
	T_OK(c->nsvcs == 1 && c->svcs[0].ttl.mult_ppm == 4000000,
	    "[service] sections");
	T_OK(conf_err("[validate]\ngas-jump = lots\n", err, sizeof(err)) < 0 &&
	    strncmp(err, "bad.conf:2: gas-jump:", 21) == 0,
	    "bad value names file:line: key (%s)", err);
	T_OK(conf_err("[auth]\nmode = none\nbogus = 1\n", err, sizeof(err)) < 0 &&
	    strstr(err, "bad.conf:3: bogus: unknown key") != NULL,
	    "unknown key (%s)", err);
	T_OK(conf_err("[nosuch]\nx = 1\n", err, sizeof(err)) < 0 &&
	    strstr(err, "bad.conf:2: unknown section") != NULL,
	    "unknown section (%s)", err);
	T_OK(conf_err("[auth]\nmode = none\n[validate]\ngas-min = 9\n"
	    "gas-max = 3\n", err, sizeof(err)) < 0 &&
	    strstr(err, "-min above") != NULL, "min above max (%s)", err);
	T_OK(conf_err("id = sma 1\n", err, sizeof(err)) < 0,
	    "identifier with a space refused");
	T_OK(conf_err("[timing]\ninterval = 1s\n", err, sizeof(err)) < 0 &&
	    strstr(err, "issuers") != NULL, "token mode needs issuers (%s)",
	    err);
	T_OK(conf_err("[auth]\nmode = none\n[sci \"x\"]\npull = ftp://x\n", err,
	    sizeof(err)) < 0 && strstr(err, ":4: pull:") != NULL,
	    "pull URL must be http(s) (%s)", err);
}

/*
 * 100k [sci] sections and 10k [service] ones, one [sci] given twice: the
 * load is linear (issue 20: it was quadratic, 20 s for 100k); the time is
 * not asserted, a quadratic load would show as a test of many seconds.
 */
static void
test_conf_many(void)
{
	enum { NS = 100000, NV = 10000 };
	struct cats_buf b = { 0 };
	char line[160];
	cats_buf_add(&b, BASE, strlen(BASE));
	for (int i = 0; i < NS; i++) {
		int n = snprintf(line, sizeof(line), "[sci \"10.%d.%d.%d:80\"]\n"
		    "cs-id = S%d\n", i >> 16, (i >> 8) & 255, i & 255, i % NV);
		cats_buf_add(&b, line, (size_t)n);
	}
	for (int i = 0; i < NV; i++) {
		int n = snprintf(line, sizeof(line), "[service \"S%d\"]\n"
		    "ttl = 3x\n", i);
		cats_buf_add(&b, line, (size_t)n);
	}
	const char *again = "[sci \"10.0.0.5:80\"]\ninterval = 7s\n";
	cats_buf_add(&b, again, strlen(again));
	cats_buf_add(&b, "", 1);
	struct sma_conf *c = conf_text((const char *)b.p);
	const struct sma_cfg_sci *s5 = sma_conf_sci(c, "10.0.0.5:80");
	const struct sma_cfg_sci *sl = sma_conf_sci(c, "10.1.134.159:80");
	T_OK(c->nscis == NS && c->nsvcs == NV, "100k [sci] and 10k [service] "
	    "sections (%zu, %zu)", c->nscis, c->nsvcs);
	T_OK(s5 != NULL && s5->interval_ms == 7000 && strcmp(s5->cs_id, "S5") ==
	    0, "a section given twice is one, its keys merged");
	T_OK(sl != NULL && strcmp(sl->cs_id, "S9999") == 0, "the last of "
	    "100k found by its CSCI-ID");
	cats_buf_free(&b);
}

static void
test_hysteresis(void)
{
	struct sma_conf *c = conf_text(BASE "[validate]\nhealthy-after = 3\n"
	    "unhealthy-after = 3\n");
	struct sma *s = sma_new(c, &nokeys, record, NULL);
	static const int in[] = { CATS_HEALTHY, CATS_HEALTHY, CATS_HEALTHY,
		CATS_UNHEALTHY, CATS_UNHEALTHY, CATS_UNHEALTHY, CATS_HEALTHY };
	static const int want[] = { CATS_UNKNOWN, CATS_UNKNOWN, CATS_HEALTHY,
		CATS_HEALTHY, CATS_HEALTHY, CATS_UNHEALTHY, CATS_UNHEALTHY };
	int got[7];
	for (int i = 0; i < 7; i++) {
		offer(s, "a", "ARS", (uint64_t)i + 1, 100000 + 100 *
		    (uint64_t)i, in[i], 10, 5, NULL);
		got[i] = sma_lookup(s, "a")->health;
	}
	T_OK(memcmp(got, want, sizeof(want)) == 0, "OK,OK,OK,FAIL,FAIL,FAIL,OK "
	    "with N=M=3 gives ?,?,OK,OK,OK,FAIL,FAIL (%d %d %d %d %d %d %d)",
	    got[0], got[1], got[2], got[3], got[4], got[5], got[6]);
	/* A DEGRADED, UNHEALTHY mix still leaves HEALTHY after M reports. */
	sma_free(s);
	s = sma_new(c, &nokeys, record, NULL);
	for (int i = 0; i < 3; i++)
		offer(s, "b", "ARS", (uint64_t)i + 1, 100000 + 100 * (uint64_t)i,
		    CATS_HEALTHY, 10, 5, NULL);
	offer(s, "b", "ARS", 4, 100300, CATS_DEGRADED, 10, 5, NULL);
	offer(s, "b", "ARS", 5, 100400, CATS_UNHEALTHY, 10, 5, NULL);
	T_OK(sma_lookup(s, "b")->health == CATS_HEALTHY, "two bad reports "
	    "keep HEALTHY");
	offer(s, "b", "ARS", 6, 100500, CATS_DEGRADED, 10, 5, NULL);
	T_OK(sma_lookup(s, "b")->health == CATS_DEGRADED, "the third leaves it "
	    "with the latest reported health");
	offer(s, "b", "ARS", 7, 100600, CATS_UNHEALTHY, 10, 5, NULL);
	T_OK(sma_lookup(s, "b")->health == CATS_UNHEALTHY, "outside HEALTHY "
	    "the health follows at once");
	sma_free(s);
}

static void
test_state_machine(void)
{
	struct sma_conf *c = conf_text(BASE "[validate]\nhealthy-after = 1\n"
	    "[timing]\nconfirm = 2\n");
	struct sma *s = sma_new(c, &nokeys, record, NULL);
	nevs = 0;
	offer(s, "a", "ARS", 1, 100000, CATS_HEALTHY, 400, 5, NULL);
	const struct sma_entry *e = sma_lookup(s, "a");
	T_OK(e && e->state == CATS_SCI_ACTIVE && count(SMA_EV_ADD) == 1,
	    "discovered: ACTIVE, an ADD event");
	T_OK(e->ttl_ms == 2000 && sma_next_deadline(s) == 102001,
	    "TTL 2x the interval: STALE due the first ms past +2 s");
	offer(s, "a", "ARS", 2, 101000, CATS_HEALTHY, 400, 5, NULL);
	T_OK(e->state == CATS_SCI_HEALTHY, "second report confirms: HEALTHY");
	nevs = 0;
	sma_tick(s, 103000);
	T_OK(e->state == CATS_SCI_HEALTHY && nevs == 0, "nothing within the "
	    "TTL (its last millisecond included)");
	sma_tick(s, 103001);
	T_OK(e->state == CATS_SCI_STALE && count(SMA_EV_PULL) == 1 &&
	    last(SMA_EV_UPDATE)->changed & SMA_CH_STATE,
	    "no report within TTL: STALE, a pull is wanted");
	T_OK(sma_service(s, "ARS")->view.gas == 400, "a STALE SCI still "
	    "counts during the grace period");
	nevs = 0;
	sma_tick(s, 105001);
	T_OK(e->state == CATS_SCI_STALE, "still STALE at the end of grace");
	sma_tick(s, 105002);
	T_OK(e->state == CATS_SCI_FAILED && count(SMA_EV_WITHDRAW) == 1 &&
	    last(SMA_EV_WITHDRAW)->reason == SMA_WD_FAILED &&
	    last(SMA_EV_WITHDRAW)->now == 105002,
	    "no answer within grace: FAILED, withdrawn at the deadline");
	T_OK(count(SMA_EV_SITE) == 1 && last(SMA_EV_SITE)->site_gas == 0 &&
	    sma_service(s, "ARS")->view.health == CATS_UNHEALTHY,
	    "site updated at once: GAS 0");
	T_OK(sma_next_deadline(s) == 0, "a FAILED SCI has no timer");
	nevs = 0;
	offer(s, "a", "ARS", 3, 110000, CATS_HEALTHY, 300, 5, NULL);
	T_OK(e->state == CATS_SCI_ACTIVE && count(SMA_EV_ADD) == 1,
	    "a report brings it back through ACTIVE (re-discovery)");
	offer(s, "a", "ARS", 4, 110500, CATS_HEALTHY, 300, 5, NULL);
	T_OK(e->state == CATS_SCI_HEALTHY && sma_service(s, "ARS")->view.gas ==
	    300, "and on to HEALTHY");
	/* A restarted SCI: low sequence numbers, newer time. */
	sma_tick(s, 200000);
	T_OK(e->state == CATS_SCI_FAILED, "failed again");
	struct sma_result res;
	T_OK(offer(s, "a", "ARS", 1, 200100, CATS_HEALTHY, 1, 5, &res) ==
	    SMA_ACCEPTED, "after FAILED a restarted SCI (sequence 1) is taken");
	/* Timers run each at its own time, in order, whatever the step. */
	nevs = 0;
	offer(s, "b", "ARS", 1, 200100, CATS_HEALTHY, 1, 5, NULL);
	nevs = 0;
	sma_tick(s, 300000);
	int order_ok = nevs >= 6;
	uint64_t prev = 0;
	for (size_t i = 0; i < nevs; i++) {
		order_ok &= evs[i].now >= prev;
		prev = evs[i].now;
	}
	T_OK(order_ok && count(SMA_EV_WITHDRAW) == 2 &&
	    last(SMA_EV_WITHDRAW)->now == 204102,
	    "one big tick gives the same timed events in order");
	sma_free(s);
}

/* One meaning of "within": inclusive, on both sides of every boundary. */
static size_t
state_changes(void)
{
	size_t n = 0;
	for (size_t i = 0; i < nevs; i++)
		n += evs[i].kind == SMA_EV_UPDATE &&
		    (evs[i].changed & SMA_CH_STATE);
	return n;
}

static void
test_within(void)
{
	struct sma_conf *c = conf_text(BASE "[validate]\nhealthy-after = 1\n"
	    "unhealthy-after = 1\n[timing]\nconfirm = 1\n[auth]\nskew = 5s\n");
	struct sma *s = sma_new(c, &nokeys, record, NULL);
	struct sma_result res;
	/* TTL 2 s: a report at exactly last + TTL is within it. */
	offer(s, "a", "ARS", 1, 100000, CATS_HEALTHY, 100, 10, NULL);
	nevs = 0;
	offer(s, "a", "ARS", 2, 102000, CATS_HEALTHY, 100, 10, NULL);
	T_OK(sma_lookup(s, "a")->state == CATS_SCI_HEALTHY &&
	    state_changes() == 0 && count(SMA_EV_PULL) == 0,
	    "TTL: a report at last + TTL keeps the SCI HEALTHY, no update");
	nevs = 0;
	offer(s, "a", "ARS", 3, 104001, CATS_HEALTHY, 100, 10, NULL);
	T_OK(state_changes() == 2 && count(SMA_EV_PULL) == 1,
	    "TTL: at last + TTL + 1 it went STALE first (and back)");
	/* Grace 2 s after STALE (at 106002). */
	sma_tick(s, 106002);
	T_OK(sma_lookup(s, "a")->state == CATS_SCI_STALE, "STALE at 106002");
	nevs = 0;
	offer(s, "a", "ARS", 4, 108002, CATS_HEALTHY, 100, 10, NULL);
	T_OK(count(SMA_EV_WITHDRAW) == 0 && count(SMA_EV_ADD) == 0 &&
	    sma_lookup(s, "a")->state == CATS_SCI_HEALTHY,
	    "grace: a report at its last millisecond recovers, no withdrawal");
	sma_tick(s, 110003);
	T_OK(sma_lookup(s, "a")->state == CATS_SCI_STALE, "STALE again");
	nevs = 0;
	offer(s, "a", "ARS", 5, 112004, CATS_HEALTHY, 100, 10, NULL);
	T_OK(count(SMA_EV_WITHDRAW) == 1 && count(SMA_EV_ADD) == 1,
	    "grace: at its end + 1 ms it FAILED first (withdrawn, rediscovered)");
	/* Rate of change within 1 s. */
	offer(s, "a", "ARS", 6, 113004, CATS_HEALTHY, 200, 10, &res);
	T_OK(res.flags & SMA_FL_GAS_JUMP, "GAS jump exactly 1 s later: within");
	offer(s, "a", "ARS", 7, 114005, CATS_HEALTHY, 400, 10, &res);
	T_OK(!(res.flags & SMA_FL_GAS_JUMP), "1 s + 1 ms later: not within");
	offer(s, "a", "ARS", 8, 115005, CATS_HEALTHY, 400, 30, &res);
	T_OK(res.flags & SMA_FL_CT_JUMP, "computing time: exactly 1 s, within");
	offer(s, "a", "ARS", 9, 116006, CATS_HEALTHY, 400, 90, &res);
	T_OK(!(res.flags & SMA_FL_CT_JUMP), "1 s + 1 ms: not within");
	sma_free(s);
	/* Flapping: the 4th transition exactly 10 s after the 1st. */
	static const int h[] = { CATS_HEALTHY, CATS_UNHEALTHY, CATS_HEALTHY,
		CATS_UNHEALTHY, CATS_HEALTHY };
	struct sma_conf *c2 = conf_text("[auth]\nmode = none\n[timing]\n"
	    "interval = 30s\n[validate]\nhealthy-after = 1\n"
	    "unhealthy-after = 1\n");
	for (int k = 0; k < 2; k++) {
		s = sma_new(c2, &nokeys, record, NULL);
		static const uint64_t at[] = { 0, 1000, 1500, 1800 };
		for (int i = 0; i < 5; i++) {
			uint64_t t = 200000 + (i < 4 ? at[i] : 11000 + (uint64_t)k);
			offer(s, "f", "ARS", (uint64_t)i + 1, t, h[i], 10, 10,
			    &res);
		}
		T_OK(k == 0 ? (res.flags & SMA_FL_FLAP) != 0 :
		    (res.flags & SMA_FL_FLAP) == 0, "flapping: a transition "
		    "%s after the first of the window %s",
		    k == 0 ? "exactly 10 s" : "10 s + 1 ms",
		    k == 0 ? "is within" : "is not");
		sma_free(s);
	}
	/* The replay window: +/- skew, inclusive. */
	c = conf_text(BASE "[auth]\nskew = 5s\n");
	s = sma_new(c, &nokeys, record, NULL);
	static const struct { int64_t d; bool ok; } w[] = {
		{ -5000, true }, { -5001, false }, { 5000, true },
		{ 5001, false } };
	for (size_t i = 0; i < CATS_ARRAY_LEN(w); i++) {
		struct cats_rec r;
		rep(&r, "w", "ARS", i + 1, (uint64_t)(300000 + w[i].d),
		    CATS_HEALTHY, 10, 10);
		int v = sma_report(s, &r, NULL, 0, NULL, 300000, &res);
		T_OK((v != SMA_REJECTED) == w[i].ok, "replay window: a report "
		    "%+lld ms from now is %s", (long long)w[i].d,
		    w[i].ok ? "taken" : "refused");
	}
	sma_free(s);
}

/* Lines of an audit file that contain what. */
static size_t
grep_count(const char *path, const char *what, char *last, size_t len)
{
	FILE *f = fopen(path, "r");
	char line[2048];
	size_t n = 0;
	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, what) != NULL) {
			n++;
			if (last != NULL)
				snprintf(last, len, "%s", line);
		}
	if (f != NULL)
		fclose(f);
	return n;
}

/* Input-side limits per SCI and overall; the audit limiter. */
static void
test_limits(void)
{
	char apath[] = "/tmp/test_sma_auditXXXXXX", line[2048];
	int fd = mkstemp(apath);
	close(fd);
	char spec[64];
	snprintf(spec, sizeof(spec), "file:%s", apath);
	cats_audit_open(spec);
	struct sma_conf *c = conf_text(BASE "[limits]\nsci-rate = 10\n"
	    "sci-burst = 5\nrate = 0\naudit-burst = 3\naudit-window = 1s\n");
	struct sma *s = sma_new(c, &nokeys, record, NULL);
	struct sma_result res;
	int v[8];
	for (int i = 0; i < 8; i++)
		v[i] = offer(s, "a", "ARS", (uint64_t)i + 1, 100000,
		    CATS_HEALTHY, 10, 5, &res);
	T_OK(v[4] != SMA_REJECTED && v[5] == SMA_REJECTED && res.status == 429,
	    "sci-burst 5: the 5th report of a millisecond is taken, the 6th "
	    "dropped (429)");
	T_OK(sma_stats(s)->limited_sci == 3 && sma_stats(s)->rejected == 3,
	    "dropped and counted (limited_sci %llu)",
	    (unsigned long long)sma_stats(s)->limited_sci);
	T_OK(offer(s, "a", "ARS", 9, 100099, CATS_HEALTHY, 10, 5, &res) ==
	    SMA_REJECTED && offer(s, "a", "ARS", 10, 100100, CATS_HEALTHY, 10,
	    5, &res) != SMA_REJECTED, "10/s: a token 100 ms later, not 99");
	/* Replays of old reports do not spend the SCI's tokens. */
	for (int i = 0; i < 10; i++)
		offer(s, "a", "ARS", 10, 100100, CATS_HEALTHY, 10, 5, &res);
	T_OK(res.status == 409 && sma_stats(s)->limited_sci == 4,
	    "duplicates are 409, not 429, and take no token");
	T_OK(grep_count(apath, "event=limit", line, sizeof(line)) == 1 &&
	    strstr(line, "csci=a cs=ARS src=- index=0 status=429 scope=sci") !=
	    NULL,
	    "one limit line for the window (%s)", line);
	T_OK(grep_count(apath, "event=reject", NULL, 0) == 3,
	    "audit-burst 3: three reject lines of a kind in the window");
	T_OK(sma_next_deadline(s) == 100100 + 1001 ||
	    sma_next_deadline(s) == 100000 + 1001, "the window's end is a "
	    "deadline (%llu)", (unsigned long long)sma_next_deadline(s));
	sma_tick(s, 101000);
	T_OK(grep_count(apath, "more like this", NULL, 0) == 0,
	    "the window is open until its last millisecond");
	sma_tick(s, 101001);
	T_OK(grep_count(apath, "event=limit status=429 scope=sci csci=a "
	    "more=3 ", NULL, 0) == 1, "the limit's window closes: 3 more");
	sma_tick(s, 102000);
	T_OK(grep_count(apath, "event=reject status=409 field=seq more=7 "
	    "window_ms=1000 note=\"7 more like this\"", NULL, 0) == 1,
	    "the reject window closes: one line, 7 more like this");
	T_OK(sma_stats(s)->audit_suppressed == 10, "counted (%llu)",
	    (unsigned long long)sma_stats(s)->audit_suppressed);
	sma_free(s);
	/* The overall limit. */
	c = conf_text(BASE "[limits]\nsci-rate = 0\nrate = 100\nburst = 3\n");
	s = sma_new(c, &nokeys, record, NULL);
	static const char *const ids[] = { "p", "q", "r", "t" };
	for (int i = 0; i < 4; i++)
		v[i] = offer(s, ids[i], "ARS", 1, 200000, CATS_HEALTHY, 10, 5,
		    &res);
	T_OK(v[2] != SMA_REJECTED && v[3] == SMA_REJECTED &&
	    res.status == 429 && sma_stats(s)->limited_all == 1 &&
	    sma_lookup(s, "t") == NULL, "rate burst 3: the 4th report of "
	    "any SCI is dropped before it touches the cache");
	T_OK(offer(s, "t", "ARS", 1, 200010, CATS_HEALTHY, 10, 5, &res) !=
	    SMA_REJECTED, "100/s: a token 10 ms later");
	sma_audit_flush(s, 200010, true);
	sma_free(s);
	/* A flood of duplicates: audit bytes stay bounded. */
	c = conf_text(BASE);
	s = sma_new(c, &nokeys, record, NULL);
	offer(s, "d", "ARS", 1, 300000, CATS_HEALTHY, 10, 5, &res);
	for (int i = 0; i < 100000; i++)
		offer(s, "d", "ARS", 1, 300000 + (uint64_t)i / 100,
		    CATS_HEALTHY, 10, 5, &res);
	sma_audit_flush(s, 301000, true);
	size_t nrej = grep_count(apath, "src=- index=0 status=409", NULL, 0);
	T_OK(nrej <= 20 * 2 && grep_count(apath, "more like this", NULL, 0) >=
	    1, "100000 duplicates over 1 s: %zu reject lines, and the rest "
	    "counted", nrej);
	sma_free(s);
	cats_audit_open("none");
	unlink(apath);
}

static void
test_ttl_per_class(void)
{
	struct sma_conf *c = conf_text(BASE "[timing]\nttl-static = 5s\n"
	    "[service \"SLOW\"]\nttl = 10s\n");
	struct sma *s = sma_new(c, &nokeys, record, NULL);
	struct cats_rec r;
	struct sma_result res;
	rep(&r, "a", "ARS", 1, 100000, CATS_HEALTHY, 10, 5);
	CATS_SET(&r.u.sci, SCI, price, 7);
	CATS_SET(&r.u.sci, SCI, interval_ms, 4000);
	sma_report(s, &r, NULL, 0, NULL, 100000, &res);
	const struct sma_entry *e = sma_lookup(s, "a");
	T_OK(e->ttl_ms == 8000 && e->ttl_static_ms == 5000,
	    "the report's interval sets the dynamic TTL (2x); static is 5 s");
	rep(&r, "a", "ARS", 2, 104000, CATS_HEALTHY, 10, 5);
	CATS_SET(&r.u.sci, SCI, interval_ms, 4000);
	sma_report(s, &r, NULL, 0, NULL, 104000, &res);
	T_OK((e->has & SMA_HAS_PRICE) && e->price == 7, "a report without "
	    "price keeps the price");
	nevs = 0;
	sma_tick(s, 105000);
	T_OK(e->has & SMA_HAS_PRICE, "static metrics within their TTL stay");
	sma_tick(s, 105001);
	T_OK(!(e->has & SMA_HAS_PRICE) && e->state != CATS_SCI_STALE &&
	    last(SMA_EV_UPDATE) && (last(SMA_EV_UPDATE)->changed &
	    SMA_CH_PRICE), "static metrics expire on their own TTL");
	offer(s, "z", "SLOW", 1, 105000, CATS_HEALTHY, 10, 5, NULL);
	T_OK(sma_lookup(s, "z")->ttl_ms == 10000, "[service] TTL override");
	sma_free(s);
}

static void
test_lru(void)
{
	struct sma_conf *c = conf_text(BASE "[cache]\nmax-entries = 3\n");
	struct sma *s = sma_new(c, &nokeys, record, NULL);
	offer(s, "a", "ARS", 1, 100000, CATS_HEALTHY, 1, 5, NULL);
	offer(s, "b", "ARS", 1, 100001, CATS_HEALTHY, 1, 5, NULL);
	offer(s, "c", "VRS", 1, 100002, CATS_HEALTHY, 1, 5, NULL);
	offer(s, "a", "ARS", 2, 100003, CATS_HEALTHY, 1, 5, NULL);
	nevs = 0;
	offer(s, "d", "VRS", 1, 100004, CATS_HEALTHY, 1, 5, NULL);
	T_OK(sma_count(s) == 3 && sma_lookup(s, "b") == NULL &&
	    sma_lookup(s, "a") && sma_lookup(s, "c") && sma_lookup(s, "d"),
	    "full cache evicts the least recently updated (b)");
	T_OK(count(SMA_EV_WITHDRAW) == 1 && strcmp(last(SMA_EV_WITHDRAW)->csci,
	    "b") == 0 && last(SMA_EV_WITHDRAW)->reason == SMA_WD_EVICTED,
	    "the eviction is a withdrawal");
	T_OK(sma_service(s, "ARS")->view.total == 1, "and leaves the site "
	    "aggregate");
	T_OK(strcmp(sma_lru_first(s)->csci_id, "c") == 0, "LRU order: c first");
	/* Lookup is by hash: many entries, still found. */
	struct sma_conf *c2 = conf_text(BASE);
	struct sma *s2 = sma_new(c2, &nokeys, NULL, NULL);
	char id[32];
	for (int i = 0; i < 20000; i++) {
		snprintf(id, sizeof(id), "sci-%d", i);
		offer(s2, id, i % 2 ? "X" : "Y", 1, 100000, CATS_HEALTHY, 1, 5,
		    NULL);
	}
	snprintf(id, sizeof(id), "sci-%d", 12345);
	T_OK(sma_count(s2) == 20000 && sma_lookup(s2, id) != NULL &&
	    strcmp(sma_lookup(s2, id)->svc->cs_id, "X") == 0 &&
	    sma_service(s2, "Y")->view.total == 10000,
	    "20000 entries: lookup by CSCI-ID, iteration by CS-ID");
	size_t n = 0;
	for (const struct sma_entry *e = sma_service(s2, "X")->head; e;
	    e = e->svc_next)
		n++;
	T_OK(n == 10000, "a CS-ID's entries are linked (%zu)", n);
	sma_free(s2);
	sma_free(s);
}

static void
test_site(void)
{
	struct sma_conf *c = conf_text(BASE "[validate]\nhealthy-after = 1\n"
	    "unhealthy-after = 1\n");
	struct sma *s = sma_new(c, &nokeys, record, NULL);
	offer(s, "a", "ARS", 1, 100000, CATS_HEALTHY, 400, 5, NULL);
	offer(s, "b", "ARS", 1, 100000, CATS_HEALTHY, 600, 10, NULL);
	const struct sma_svc *v = sma_service(s, "ARS");
	T_OK(v->view.gas == 1000 && v->view.has_ct && v->view.ct == 8 &&
	    v->view.health == CATS_HEALTHY && v->view.healthy == 2,
	    "site GAS sums; comp. time is the GAS-weighted mean (8)");
	offer(s, "b", "ARS", 2, 100100, CATS_DEGRADED, 600, 10, NULL);
	T_OK(v->view.gas == 1000 && v->view.health == CATS_DEGRADED,
	    "a DEGRADED SCI still contributes; the site is DEGRADED");
	offer(s, "a", "ARS", 2, 100200, CATS_UNHEALTHY, 400, 5, NULL);
	T_OK(v->view.gas == 0 && v->view.healthy == 0,
	    "no HEALTHY SCI: site GAS is 0 (GAS > 0 needs a HEALTHY SCI)");
	offer(s, "b", "ARS", 3, 100300, CATS_UNHEALTHY, 600, 10, NULL);
	T_OK(v->view.gas == 0 && v->view.health == CATS_UNHEALTHY &&
	    !v->view.has_ct, "all UNHEALTHY: GAS 0, UNHEALTHY");
	const char *fl[SMA_NFLAGS];
	struct cats_entry ce;
	sma_entry_view(sma_lookup(s, "a"), &ce, fl);
	T_OK(ce.gas == 0, "an UNHEALTHY SCI contributes no GAS");
	struct sma_result res;
	offer(s, "c", "ARS", 1, 100400, CATS_HEALTHY, 5, 0, &res);
	T_OK(res.verdict == SMA_FLAGGED && (res.flags & SMA_FL_CT_ZERO),
	    "GAS > 0 with computing time 0 is flagged");
	sma_free(s);
}

static void
test_validation(void)
{
	struct sma_conf *c = conf_text(BASE "[validate]\nreputation-max = 10\n"
	    "[auth]\nskew = 30s\n");
	struct sma *s = sma_new(c, &nokeys, record, NULL);
	struct sma_result res;
	struct cats_rec r;
	rep(&r, "a", "ARS", 1, 100000, CATS_HEALTHY, 10, 3600001);
	T_OK(sma_report(s, &r, NULL, 0, NULL, 100000, &res) == SMA_REJECTED &&
	    res.status == 400 && strcmp(res.err.field, "comp_time_ms") == 0,
	    "computing time above 1 h rejected (%s)", res.err.reason);
	rep(&r, "a", "ARS", 1, 100000, CATS_HEALTHY, 10, 5);
	CATS_SET(&r.u.sci, SCI, reputation, 11);
	T_OK(sma_report(s, &r, NULL, 0, NULL, 100000, &res) == SMA_REJECTED &&
	    strcmp(res.err.field, "reputation") == 0, "reputation 11 rejected");
	T_OK(sma_lookup(s, "a") == NULL, "rejected reports leave no entry");
	T_OK(offer(s, "a", "ARS", 5, 100000, CATS_HEALTHY, 10, 5, &res) ==
	    SMA_ACCEPTED, "a good one");
	T_OK(offer(s, "a", "ARS", 5, 100100, CATS_HEALTHY, 11, 5, &res) ==
	    SMA_REJECTED && res.status == 409 && strstr(res.err.reason,
	    "duplicate"), "duplicate sequence (%s)", res.err.reason);
	T_OK(offer(s, "a", "ARS", 4, 100100, CATS_HEALTHY, 11, 5, &res) ==
	    SMA_REJECTED && strstr(res.err.reason, "out-of-order"),
	    "older sequence (%s)", res.err.reason);
	rep(&r, "a", "ARS", 9, 50000, CATS_HEALTHY, 10, 5);
	T_OK(sma_report(s, &r, NULL, 0, NULL, 100000, &res) == SMA_REJECTED &&
	    strcmp(res.err.field, "ts") == 0, "a report 50 s old is a replay");
	T_OK(sma_lookup(s, "a")->gas == 10 && sma_lookup(s, "a")->seq == 5,
	    "and the entry is untouched");
	T_OK(sma_stats(s)->rej_seq == 3 && sma_stats(s)->rej_range == 2,
	    "counted");
	sma_free(s);
}

static void
test_rate_of_change(void)
{
	struct sma_conf *c = conf_text(BASE "[validate]\nhealthy-after = 1\n"
	    "unhealthy-after = 1\n");
	struct sma *s = sma_new(c, &nokeys, record, NULL);
	struct sma_result res;
	offer(s, "a", "ARS", 1, 100000, CATS_HEALTHY, 100, 10, NULL);
	offer(s, "a", "ARS", 2, 100500, CATS_HEALTHY, 150, 10, &res);
	T_OK(res.verdict == SMA_ACCEPTED, "GAS +50 %% in 0.5 s is not > 50 %%");
	offer(s, "a", "ARS", 3, 101000, CATS_HEALTHY, 226, 10, &res);
	T_OK(res.verdict == SMA_FLAGGED && res.flags == SMA_FL_GAS_JUMP,
	    "GAS +50.7 %% within 1 s: flagged");
	const char *fl[SMA_NFLAGS];
	struct cats_entry ce;
	sma_entry_view(sma_lookup(s, "a"), &ce, fl);
	T_OK(ce.flags.n == 1 && strcmp(ce.flags.v[0], "gas-jump") == 0,
	    "the flag travels in the entry");
	offer(s, "a", "ARS", 4, 102001, CATS_HEALTHY, 20, 10, &res);
	T_OK(res.verdict == SMA_ACCEPTED, "the same jump after 1 s is fine");
	offer(s, "a", "ARS", 5, 102500, CATS_DEGRADED, 200, 10, &res);
	T_OK(!(res.flags & SMA_FL_GAS_JUMP), "a GAS jump with a health change "
	    "is not anomalous");
	offer(s, "a", "ARS", 6, 102600, CATS_DEGRADED, 200, 21, &res);
	T_OK(res.flags & SMA_FL_CT_JUMP, "computing time x2.1 within 1 s");
	/* Flapping: > 3 transitions within 10 s. */
	sma_free(s);
	s = sma_new(c, &nokeys, record, NULL);
	static const int h[] = { CATS_HEALTHY, CATS_UNHEALTHY, CATS_HEALTHY,
		CATS_UNHEALTHY, CATS_HEALTHY };
	uint8_t fls[5];
	for (int i = 0; i < 5; i++) {
		offer(s, "f", "ARS", (uint64_t)i + 1, 100000 + 2000 *
		    (uint64_t)i, h[i], 10, 10, &res);
		fls[i] = res.flags;
	}
	T_OK(!(fls[3] & SMA_FL_FLAP) && (fls[4] & SMA_FL_FLAP),
	    "the fourth transition within 10 s is flapping");
	offer(s, "f", "ARS", 6, 130000, CATS_UNHEALTHY, 10, 10, &res);
	T_OK(!(res.flags & SMA_FL_FLAP), "transitions age out of the window");
	sma_free(s);
}

static void
test_quarantine(void)
{
	struct sma_conf *c = conf_text(BASE "[validate]\nanomaly = quarantine\n"
	    "healthy-after = 1\nquarantine-max = 2\n");
	struct sma *s = sma_new(c, &nokeys, record, NULL);
	struct sma_result res;
	offer(s, "a", "ARS", 1, 100000, CATS_HEALTHY, 100, 10, NULL);
	nevs = 0;
	T_OK(offer(s, "a", "ARS", 2, 100200, CATS_HEALTHY, 900, 10, &res) ==
	    SMA_QUARANTINED && res.status == 202 && res.qid == 1,
	    "GAS x9 in 0.2 s is quarantined");
	T_OK(sma_lookup(s, "a")->gas == 100 && nevs == 0,
	    "the cache is untouched, nothing emitted");
	T_OK(offer(s, "a", "ARS", 2, 100300, CATS_HEALTHY, 900, 10, &res) ==
	    SMA_REJECTED && res.status == 409, "its duplicate is refused");
	size_t n;
	const struct sma_qitem *q = sma_quarantine(s, &n);
	T_OK(n == 1 && q[0].seq == 2 && (q[0].flags & SMA_FL_GAS_JUMP) &&
	    strcmp(q[0].csci_id, "a") == 0, "listed");
	T_OK(sma_quarantine_release(s, 1, 100400) == 1 &&
	    sma_lookup(s, "a")->gas == 900 &&
	    (sma_lookup(s, "a")->flags & SMA_FL_RELEASED),
	    "released into the cache, flagged as released");
	sma_quarantine(s, &n);
	T_OK(n == 0 && sma_quarantine_release(s, 1, 100400) == -1,
	    "and gone from the quarantine");
	offer(s, "a", "ARS", 3, 101300, CATS_HEALTHY, 10, 10, &res);
	T_OK(res.verdict == SMA_ACCEPTED, "1 s later a normal report passes");
	offer(s, "a", "ARS", 4, 101400, CATS_HEALTHY, 5000, 10, &res);
	T_OK(res.verdict == SMA_QUARANTINED, "another jump held");
	T_OK(offer(s, "a", "ARS", 5, 101500, CATS_HEALTHY, 10, 10, &res) ==
	    SMA_ACCEPTED, "a later normal report goes on");
	T_OK(sma_quarantine_release(s, 0, 101600) == 1 &&
	    sma_lookup(s, "a")->gas == 10 && sma_lookup(s, "a")->seq == 5,
	    "a release behind newer reports changes nothing (sequence)");
	/* Bounded: the oldest is dropped. */
	for (int i = 0; i < 3; i++) {
		offer(s, "a", "ARS", 10 + 2 * (uint64_t)i, 110000 + 2000 *
		    (uint64_t)i, CATS_HEALTHY, 10, 10, NULL);
		offer(s, "a", "ARS", 11 + 2 * (uint64_t)i, 110050 + 2000 *
		    (uint64_t)i, CATS_HEALTHY, 10000, 10, NULL);
	}
	q = sma_quarantine(s, &n);
	T_OK(n == 2 && q[0].seq == 13 && sma_stats(s)->dropped_q == 1,
	    "quarantine-max bounds it, oldest dropped");
	T_OK(sma_quarantine_drop(s, 0) == 2, "dropped by the operator");
	sma_free(s);
}

static void
test_smoothing(void)
{
	struct sma_conf *c = conf_text(BASE "[validate]\nsmoothing = 3\n"
	    "gas-jump = 100\n");
	struct sma *s = sma_new(c, &nokeys, record, NULL);
	offer(s, "a", "ARS", 1, 100000, CATS_HEALTHY, 90, 10, NULL);
	offer(s, "a", "ARS", 2, 102000, CATS_HEALTHY, 30, 10, NULL);
	T_OK(sma_lookup(s, "a")->gas == 60, "mean of 2 (60)");
	offer(s, "a", "ARS", 3, 104000, CATS_HEALTHY, 0, 40, NULL);
	T_OK(sma_lookup(s, "a")->gas == 40 && sma_lookup(s, "a")->ct == 20,
	    "mean of 3 (40, 20)");
	offer(s, "a", "ARS", 4, 106000, CATS_HEALTHY, 0, 10, NULL);
	T_OK(sma_lookup(s, "a")->gas == 10, "window of 3 (10)");
	sma_free(s);
}

/* ---- tokens ---- */

static struct cats_buf
token(const struct cats_key *iss, const char *sub, const char *cs,
    uint64_t now, uint64_t life, const struct cats_key *cnf, uint8_t *cti)
{
	struct cats_token t;
	struct cats_buf b = { 0 };
	memset(&t, 0, sizeof(t));
	cats_strlcpy(t.iss, iss->name, sizeof(t.iss));
	cats_strlcpy(t.sub, sub, sizeof(t.sub));
	t.iat = now / 1000;
	t.exp = (now + life) / 1000;
	randombytes_buf(t.cti, sizeof(t.cti));
	if (cti)
		memcpy(cti, t.cti, sizeof(t.cti));
	t.ncs = 1;
	cats_strlcpy(t.cs[0], cs, sizeof(t.cs[0]));
	if (cnf) {
		t.has_cnf = true;
		memcpy(t.cnf, cnf->pk, 32);
	}
	cats_token_make(&t, iss, &b);
	return b;
}

static int
offer_tok(struct sma *s, const char *csci, const char *cs, uint64_t seq,
    uint64_t ts, const struct cats_buf *tok, const struct cats_key *sign,
    struct sma_result *res)
{
	struct cats_rec r;
	rep(&r, csci, cs, seq, ts, CATS_HEALTHY, 10, 5);
	r.u.sci.token.p = tok->p;
	r.u.sci.token.n = tok->len;
	if (sign)
		cats_rec_sign(&r, sign);
	return sma_report(s, &r, NULL, 0, NULL, ts, res);
}

static void
test_tokens(void)
{
	char path[] = "/tmp/test_sma_issXXXXXX";
	int fd = mkstemp(path);
	struct cats_key iss, isspub, other, sci;
	char err[300];
	cats_key_gen_ed25519(&iss, "issuer");
	cats_key_gen_ed25519(&other, "issuer");
	cats_key_gen_ed25519(&sci, "sci");
	cats_key_public(&iss, &isspub);
	close(fd);
	cats_key_save(&isspub, path, 0644, err, sizeof(err));
	char text[400];
	snprintf(text, sizeof(text), "[auth]\nissuers = %s\n[timing]\n"
	    "interval = 1s\n", path);
	struct sma_conf *c = conf_text(text);
	struct sma_keys k;
	T_OK(sma_keys_load(&k, c, err, sizeof(err)) == 0, "issuer keyring");
	struct sma *s = sma_new(c, &k, record, NULL);
	uint64_t now = 1700000000000;
	struct sma_result res;
	struct cats_buf good = token(&iss, "a", "ARS", now, 3600000, NULL,
	    NULL);
	T_OK(offer_tok(s, "a", "ARS", 1, now, &good, NULL, &res) ==
	    SMA_ACCEPTED, "a good token (%s)", res.err.reason);
	for (int i = 2; i < 10; i++)
		offer_tok(s, "a", "ARS", (uint64_t)i, now + (uint64_t)i, &good,
		    NULL, &res);
	T_OK(sma_stats(s)->tok_verified == 1 && sma_stats(s)->tok_cached == 8,
	    "verified once, then from the cache");
	T_OK(offer_tok(s, "a", "ARS", 20, now + 3600000, &good, NULL, &res) ==
	    SMA_REJECTED && res.status == 401 && strstr(res.err.reason,
	    "expired"), "a cached token still expires (%s)", res.err.reason);
	struct cats_rec r;
	rep(&r, "b", "ARS", 1, now, CATS_HEALTHY, 1, 1);
	T_OK(sma_report(s, &r, NULL, 0, NULL, now, &res) == SMA_REJECTED &&
	    res.status == 401 && strcmp(res.err.field, "token") == 0,
	    "no token: 401");
	struct cats_buf exp = token(&iss, "b", "ARS", now - 7200000, 3600000,
	    NULL, NULL);
	T_OK(offer_tok(s, "b", "ARS", 1, now, &exp, NULL, &res) ==
	    SMA_REJECTED && res.status == 401, "expired: 401 (%s)",
	    res.err.reason);
	T_OK(offer_tok(s, "c", "ARS", 1, now, &good, NULL, &res) ==
	    SMA_REJECTED && res.status == 403 && strcmp(res.err.field,
	    "csci_id") == 0, "another CSCI-ID's token: 403 (%s)",
	    res.err.reason);
	T_OK(offer_tok(s, "a", "VRS", 30, now + 100, &good, NULL, &res) ==
	    SMA_REJECTED && res.status == 403 && strcmp(res.err.field,
	    "cs_id") == 0, "unauthorized CS-ID: 403 (%s)", res.err.reason);
	struct cats_buf forged = token(&other, "b", "ARS", now, 3600000, NULL,
	    NULL);
	T_OK(offer_tok(s, "b", "ARS", 1, now, &forged, NULL, &res) ==
	    SMA_REJECTED && res.status == 401, "unknown issuer key: 401 (%s)",
	    res.err.reason);
	struct cats_buf bad = token(&iss, "b", "ARS", now, 3600000, NULL, NULL);
	bad.p[bad.len - 1] ^= 1;
	T_OK(offer_tok(s, "b", "ARS", 1, now, &bad, NULL, &res) ==
	    SMA_REJECTED && res.status == 401 && strstr(res.err.reason,
	    "signature"), "bad signature: 401 (%s)", res.err.reason);
	/* Signed reports with the key the token binds. */
	struct cats_buf bound = token(&iss, "d", "ARS", now, 3600000, &sci,
	    NULL);
	T_OK(offer_tok(s, "d", "ARS", 1, now, &bound, &sci, &res) ==
	    SMA_ACCEPTED, "report signed with the bound key");
	T_OK(offer_tok(s, "d", "ARS", 2, now + 1, &bound, NULL, &res) ==
	    SMA_REJECTED && res.status == 401, "unsigned: 401 (%s)",
	    res.err.reason);
	T_OK(offer_tok(s, "d", "ARS", 3, now + 2, &bound, &other, &res) ==
	    SMA_REJECTED && res.status == 401, "signed by another key: 401");
	T_OK(sma_lookup(s, "d")->seq == 1, "the entry kept the good report");
	/* Revocation: a reload drops the cached verifications. */
	uint8_t cti[CATS_TOKEN_CTI_LEN];
	struct cats_buf rv = token(&iss, "e", "ARS", now, 3600000, NULL, cti);
	T_OK(offer_tok(s, "e", "ARS", 1, now, &rv, NULL, &res) == SMA_ACCEPTED,
	    "token e accepted");
	char rpath[] = "/tmp/test_sma_revXXXXXX";
	fd = mkstemp(rpath);
	char hex[2 * CATS_TOKEN_CTI_LEN + 2];
	sodium_bin2hex(hex, sizeof(hex), cti, sizeof(cti));
	dprintf(fd, "# revoked\n%s\n", hex);
	close(fd);
	snprintf(text, sizeof(text), "[auth]\nissuers = %s\nrevoked = %s\n"
	    "[timing]\ninterval = 1s\n", path, rpath);
	c = conf_text(text);
	struct sma_keys k2;
	T_OK(sma_keys_load(&k2, c, err, sizeof(err)) == 0 && k2.nrevoked == 1,
	    "revocation list read");
	sma_reconf(s, c, &k2, now);
	T_OK(offer_tok(s, "e", "ARS", 2, now + 5, &rv, NULL, &res) ==
	    SMA_REJECTED && res.status == 403 && strstr(res.err.reason,
	    "revoked"), "revoked token refused after the reload");
	T_OK(offer_tok(s, "a", "ARS", 40, now + 6, &good, NULL, &res) ==
	    SMA_ACCEPTED, "other tokens still good");
	sma_free(s);
	sma_keys_free(&k);
	sma_keys_free(&k2);
	unlink(path);
	unlink(rpath);
	cats_buf_free(&good);
	cats_buf_free(&exp);
	cats_buf_free(&forged);
	cats_buf_free(&bad);
	cats_buf_free(&bound);
	cats_buf_free(&rv);
}

/* ---- output records and state files ---- */

static struct cats_buf outbuf;
static size_t nout;

static int
collect(void *arg, const struct cats_rec *r)
{
	(void)arg;
	nout++;
	return cats_rec_encode(r, &outbuf, true);
}

static void
test_out_and_state(void)
{
	struct sma_conf *c = conf_text("id = s1\n" BASE "[validate]\n"
	    "healthy-after = 1\n[timing]\nconfirm = 1\n");
	struct sma_out *o = sma_out_new(c, 7, 100, collect, NULL);
	struct sma *s = sma_new(c, &nokeys, sma_out_event, o);
	nout = 0;
	offer(s, "a", "ARS", 1, 100000, CATS_HEALTHY, 400, 5, NULL);
	offer(s, "b", "VRS", 1, 100000, CATS_HEALTHY, 100, 15, NULL);
	T_OK(nout == 2 && sma_out_seq(o) == 102, "one delta per change");
	nout = 0;
	sma_out_snapshot(o, s, 100000);
	T_OK(nout == 1, "a small snapshot is one record");
	struct cats_dec d;
	struct cats_rec r;
	struct cats_err e;
	cats_dec_init(&d, NULL);
	/* Every record emitted is valid. */
	size_t off = 0, valid = 0, total = 0;
	while (off < outbuf.len) {
		size_t used;
		if (cats_scan(outbuf.p + off, outbuf.len - off, true, &d.lim,
		    &d.toks, &d.arena, &used, NULL, &e) != CATS_SCAN_OK)
			break;
		total++;
		valid += cats_rec_from_toks(&d, &r, &e) == 0 &&
		    r.type == CATS_T_METRIC;
		off += used;
	}
	T_OK(off == outbuf.len && valid == total && total == 3 &&
	    r.u.metric.op == CATS_OP_FULL &&
	    r.u.metric.entries.n == 2 && r.u.metric.sites.n == 2 &&
	    r.u.metric.epoch == 7 && r.u.metric.seq == 103,
	    "records valid; the snapshot has both entries and sites");
	/* Large snapshot in parts. */
	char id[32];
	for (int i = 0; i < 600; i++) {
		snprintf(id, sizeof(id), "x%d", i);
		offer(s, id, "BIG", 1, 100001, CATS_HEALTHY, 1, 1, NULL);
	}
	outbuf.len = 0;
	nout = 0;
	sma_out_snapshot(o, s, 100001);
	off = 0;
	size_t ents = 0, parts = 0;
	size_t bad = 0;
	while (off < outbuf.len) {
		size_t used;
		if (cats_scan(outbuf.p + off, outbuf.len - off, true, &d.lim,
		    &d.toks, &d.arena, &used, NULL, &e) != CATS_SCAN_OK) {
			bad++;
			break;
		}
		if (cats_rec_from_toks(&d, &r, &e) == 0) {
			ents += r.u.metric.entries.n;
			parts = r.u.metric.parts;
		} else
			bad++;
		off += used;
	}
	T_OK(bad == 0 && nout == 3 && parts == 3 && ents == 602,
	    "602 entries in 3 parts (%zu records, %zu entries, %zu invalid)",
	    nout, ents, bad);
	/* State file round trip. */
	char path[] = "/tmp/test_sma_stateXXXXXX";
	int fd = mkstemp(path);
	close(fd);
	char err[300];
	offer(s, "c", "ARS", 9, 101000, CATS_HEALTHY, 50, 5, NULL);
	T_OK(sma_out_save_state(o, s, path, 101000, 99000, err,
	    sizeof(err)) == 0, "state saved");
	struct sma_state st;
	T_OK(sma_state_load(&st, path, err, sizeof(err)) == 0 && st.n == 603 &&
	    st.epoch == 7 && st.seq == sma_out_seq(o), "state loaded (%zu)",
	    st.n);
	T_OK(st.last_full == 99000, "the last full sync's time kept (%llu)",
	    (unsigned long long)st.last_full);
	struct sma *s2 = sma_new(c, &nokeys, NULL, NULL);
	size_t restored = 0, old = 0;
	for (size_t i = 0; i < st.n; i++) {
		int rc = sma_restore(s2, &st.v[i], 101500);
		restored += rc == 1;
		old += rc == 0;
	}
	T_OK(restored == 603, "fresh entries restored");
	T_OK(sma_lookup(s2, "c")->seq == 9 && sma_lookup(s2, "c")->gas == 50 &&
	    sma_next_deadline(s2) == 102001, "with their values and remaining "
	    "TTL (STALE at %llu)", (unsigned long long)sma_next_deadline(s2));
	T_OK(offer(s2, "c", "ARS", 9, 101600, CATS_HEALTHY, 50, 5, NULL) ==
	    SMA_REJECTED, "the restored sequence still guards replays");
	sma_free(s2);
	s2 = sma_new(c, &nokeys, NULL, NULL);
	restored = old = 0;
	for (size_t i = 0; i < st.n; i++) {
		int rc = sma_restore(s2, &st.v[i], 102500);
		restored += rc == 1;
		old += rc == 0;
	}
	T_OK(restored == 1 && old == 602, "after their TTL only the newer one "
	    "is restored");
	sma_free(s2);
	for (int k = 0; k < 2; k++) {
		s2 = sma_new(c, &nokeys, NULL, NULL);
		restored = 0;
		for (size_t i = 0; i < st.n; i++)
			restored += sma_restore(s2, &st.v[i], 103000 +
			    (uint64_t)k) == 1;
		T_OK(restored == (k == 0 ? 1u : 0u), "restore %s ts + TTL: %s",
		    k == 0 ? "at exactly" : "1 ms past", k == 0 ? "fresh" :
		    "too old");
		sma_free(s2);
	}
	sma_state_free(&st);
	T_OK(sma_state_load(&st, "/nonexistent/x", err, sizeof(err)) == 1,
	    "a missing state file is no error");
	FILE *f = fopen(path, "w");
	fputs("garbage", f);
	fclose(f);
	T_OK(sma_state_load(&st, path, err, sizeof(err)) < 0, "a bad state "
	    "file is refused (%s)", err);
	unlink(path);
	cats_dec_free(&d);
	sma_free(s);
	sma_out_free(o);
	cats_buf_free(&outbuf);
}

static void
test_ingest(void)
{
	struct sma_conf *c = conf_text(BASE);
	struct sma *s = sma_new(c, &nokeys, NULL, NULL);
	struct cats_buf b = { 0 };
	struct cats_rec r;
	rep(&r, "a", "ARS", 1, 100000, CATS_HEALTHY, 1, 1);
	cats_rec_encode(&r, &b, true);
	rep(&r, "b", "ARS", 1, 100000, CATS_HEALTHY, 1, 1);
	cats_rec_encode(&r, &b, true);
	cats_buf_add(&b, "\xa1\x61", 2);
	rep(&r, "c", "ARS", 1, 100000, CATS_HEALTHY, 1, 1);
	cats_rec_encode(&r, &b, true);
	struct cats_dec d;
	cats_dec_init(&d, NULL);
	size_t n = sma_ingest(s, &d, b.p, b.len, NULL, 100000, NULL, NULL);
	T_OK(n == 3 && sma_count(s) == 2 && sma_stats(s)->rejected == 1,
	    "a body of records: two in, the malformed one ends it");
	cats_dec_free(&d);
	cats_buf_free(&b);
	sma_free(s);
}

int
main(void)
{
	cats_crypto_init();
	cats_log_init("test_sma");
	cats_audit_open("none");
	cats_log_verbosity(0);
	test_conf();
	test_conf_many();
	test_hysteresis();
	test_state_machine();
	test_within();
	test_limits();
	test_ttl_per_class();
	test_lru();
	test_site();
	test_validation();
	test_rate_of_change();
	test_quarantine();
	test_smoothing();
	test_tokens();
	test_out_and_state();
	test_ingest();
	return t_done();
}
