/*
 * test_sma_uc.c - the update controller beyond the replay fixtures:
 * selective reporting under load, CS-IDs the C-PS may not receive, refresh
 * when the C-PS takes it, draining, held values in heartbeats, the
 * advertised view, withdrawals of saved entries, renumbering, seeding,
 * the token bucket of routine records.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "sma/sma_uc.h"
#include "t.h"

#define T0 UINT64_C(1700000000000)

struct out {
	int op, kind;
	uint64_t seq;
	size_t n, next;		/* entries, extensions of the first */
	uint64_t gas;		/* of the first entry */
	uint64_t ct;
	int health, state;
	char csci[64], cs[16];
	size_t nsites;
};
static struct out outs[256];
static size_t nouts;

static void model_apply(const struct cats_metric *m);
static bool model_on;

static int
emit(void *arg, const struct cats_rec *r, int kind)
{
	(void)arg;
	const struct cats_metric *m = &r->u.metric;
	if (model_on)
		model_apply(m);
	struct out *o = &outs[nouts++ % 256];
	memset(o, 0, sizeof(*o));
	o->op = m->op;
	o->kind = kind;
	o->seq = m->seq;
	o->n = m->entries.n;
	o->nsites = m->sites.n;
	if (m->entries.n > 0) {
		o->next = m->entries.v[0].ext.n;
		o->gas = m->entries.v[0].gas;
		o->ct = m->entries.v[0].comp_time_ms;
		o->health = m->entries.v[0].health;
		o->state = m->entries.v[0].state;
		snprintf(o->csci, sizeof(o->csci), "%s", m->entries.v[0].csci_id);
		snprintf(o->cs, sizeof(o->cs), "%s", m->entries.v[0].cs_id);
	}
	return 0;
}

static struct sma_conf *
conf_text(const char *text)
{
	static struct sma_conf c;
	struct cats_conf cf;
	char err[300];
	sma_conf_free(&c);
	if (cats_conf_parse(&cf, "t.conf", text, strlen(text), err,
	    sizeof(err)) < 0 || sma_conf_from(&c, &cf, err, sizeof(err)) < 0) {
		printf("# conf: %s\n", err);
		exit(1);
	}
	cats_conf_free(&cf);
	return &c;
}

static struct sma *core;
static struct sma_uc *uc;
static struct sma_keys nokeys;

static void
setup(const char *text)
{
	sma_free(core);
	sma_uc_free(uc);
	const struct sma_conf *c = conf_text(text);
	uc = sma_uc_new(c, NULL, 1, 0, emit, NULL);
	core = sma_new(c, &nokeys, sma_uc_event, uc);
	sma_uc_set_core(uc, core);
	nouts = 0;
}

static void
report(const char *csci, const char *cs, uint64_t seq, uint64_t t,
    uint64_t gas, bool ext)
{
	struct cats_rec r;
	struct sma_result res;
	struct cats_kv kv = { "queue", 7 };
	cats_rec_init(&r, CATS_T_SCI_REPORT);
	r.u.sci.csci_id = csci;
	r.u.sci.cs_id = cs;
	r.u.sci.seq = seq;
	r.u.sci.ts = T0 + t;
	r.u.sci.health = CATS_HEALTHY;
	CATS_SET(&r.u.sci, SCI, gas, gas);
	CATS_SET(&r.u.sci, SCI, comp_time_ms, 5);
	if (ext) {
		r.u.sci.ext.v = &kv;
		r.u.sci.ext.n = 1;
	}
	sma_tick(core, T0 + t);
	sma_uc_tick(uc, T0 + t);
	sma_report(core, &r, NULL, 0, NULL, T0 + t, &res);
}

static const struct out *
last(void)
{
	return nouts ? &outs[(nouts - 1) % 256] : NULL;
}

#define BASE "[auth]\nmode = none\n[timing]\ninterval = 10s\nconfirm = 1\n" \
	"[validate]\nhealthy-after = 1\n[update]\nmin-interval = 0\n" \
	"batch = 0\nrate = 0\ndampening = off\nheartbeat = 0\n"

static void
selective(void)
{
	setup(BASE);
	report("a", "ARS", 1, 0, 400, true);
	T_OK(last()->kind == SMA_UC_CRITICAL && last()->next == 1,
	    "discovery: critical, with the extension metrics");
	sma_uc_set_load(uc, 600000);
	report("a", "ARS", 2, 1000, 500, true);
	T_OK(last()->kind == SMA_UC_ROUTINE && last()->gas == 500 &&
	    last()->next == 0 && sma_uc_stats(uc)->omitted == 1,
	    "under load (60 %% > 50 %%): a routine record without them");
	sma_uc_set_load(uc, 100000);
	report("a", "ARS", 3, 2000, 600, true);
	T_OK(last()->next == 1, "load gone: back");
}

static void
authorized(void)
{
	setup(BASE "[northbound]\nauthorized = ARS\n");
	sma_uc_snapshot(uc, T0, CATS_OP_FULL);
	report("a", "ARS", 1, 0, 400, false);
	report("v", "VRS", 1, 10, 300, false);
	T_OK(nouts == 2 && strcmp(last()->cs, "ARS") == 0 && last()->nsites == 1,
	    "a VRS entry is not advertised to a C-PS that may only have ARS");
	sma_uc_snapshot(uc, T0 + 100, CATS_OP_FULL);
	T_OK(last()->op == CATS_OP_FULL && last()->n == 1 &&
	    last()->nsites == 1 && sma_uc_count(uc) == 1,
	    "nor in a snapshot; the view holds one entry");
}

static void
refresh(void)
{
	setup(BASE "heartbeat = 10s\nheartbeat-jitter = 0\nfull-every = 3\n");
	sma_uc_snapshot(uc, T0, CATS_OP_FULL);
	report("a", "ARS", 1, 0, 400, false);
	sma_uc_tick(uc, T0 + 10000);
	T_OK(last()->op == CATS_OP_HEARTBEAT && last()->n == 1,
	    "refresh auto, the C-PS said nothing: a heartbeat snapshot");
	sma_uc_peer_refresh(uc, true);
	sma_uc_tick(uc, T0 + 20000);
	T_OK(last()->op == CATS_OP_REFRESH && last()->n == 0,
	    "the C-PS takes refreshes: a refresh");
	sma_uc_tick(uc, T0 + 30000);
	T_OK(last()->op == CATS_OP_HEARTBEAT, "every third a full heartbeat");
	T_OK(sma_uc_next_deadline(uc) == T0 + 40000, "next in 10 s (no "
	    "jitter)");
}

static void
drain_and_held(void)
{
	setup(BASE "batch = 10s\n");
	report("a", "ARS", 1, 0, 400, false);
	size_t n = nouts;
	report("a", "ARS", 2, 1000, 800, false);
	T_OK(nouts == n && sma_uc_stats(uc)->pending == 1, "a routine change "
	    "waits for its batch");
	sma_uc_drain(uc, T0 + 1500);
	T_OK(nouts == n + 1 && last()->gas == 800, "drain: it leaves");

	/* A held entry's heartbeat says what was advertised. */
	char rules[] = "/tmp/test_sma_uc.XXXXXX";
	int fd = mkstemp(rules);
	const char *text = "IF TRUE THEN SUPPRESS_UPDATES;\n";
	if (fd < 0 || write(fd, text, strlen(text)) < 0)
		return;
	close(fd);
	char err[300];
	struct sma_policy *p = sma_policy_load(rules, err, sizeof(err));
	unlink(rules);
	setup(BASE);
	report("a", "ARS", 1, 0, 400, false);
	sma_uc_set_policy(uc, p, T0 + 500);
	report("a", "ARS", 2, 1000, 900, false);
	T_OK(last()->gas == 400, "suppressed: 900 is not sent");
	sma_uc_snapshot(uc, T0 + 2000, CATS_OP_HEARTBEAT);
	T_OK(last()->op == CATS_OP_HEARTBEAT && last()->gas == 400,
	    "the heartbeat carries the advertised 400, not 900");
	sma_uc_set_policy(uc, NULL, T0 + 3000);
	T_OK(last()->gas == 900 && sma_uc_stats(uc)->trig_policy >= 1,
	    "a new (empty) policy: the Policy Change Trigger sends 900");
}

struct viewc {
	size_t n;
	uint64_t gas;
};

static void
view_fn(void *arg, const struct cats_entry *e)
{
	struct viewc *v = arg;
	v->n++;
	v->gas += e->gas;
}

static void
view_saved_renumber(void)
{
	setup(BASE);
	report("a", "ARS", 1, 0, 400, false);
	report("b", "ARS", 1, 10, 100, false);
	report("b", "ARS", 2, 20, 105, false);	/* below the threshold */
	struct viewc v = { 0, 0 };
	sma_uc_view(uc, view_fn, &v);
	T_OK(v.n == 2 && v.gas == 500, "the view: what was advertised "
	    "(100, not the 105 below the threshold)");
	struct cats_entry e;
	memset(&e, 0, sizeof(e));
	e.csci_id = "old";
	e.cs_id = "ARS";
	sma_uc_withdraw_saved(uc, &e, SMA_WD_EXPIRED, T0 + 100);
	T_OK(last()->op == CATS_OP_WITHDRAW && strcmp(last()->csci, "old") ==
	    0, "a saved entry withdrawn");
	uint64_t s = sma_uc_seq(uc);
	sma_uc_renumber(uc, s + 100);
	report("a", "ARS", 2, 200, 900, false);
	T_OK(last()->seq == s + 101, "renumbered above the C-PS's sequence");
	sma_uc_renumber(uc, 3);
	T_OK(sma_uc_seq(uc) == s + 101, "never backwards");

	/* Seeding: the core's entries count as advertised. */
	const struct sma_conf *c = conf_text(BASE);
	struct sma_uc *u2 = sma_uc_new(c, core, 1, 0, emit, NULL);
	size_t before = nouts;
	sma_uc_seed(u2, T0 + 300);
	T_OK(sma_uc_count(u2) == 2 && nouts == before, "seeded: 2 entries, "
	    "nothing sent");
	sma_uc_free(u2);
}

/* Routine records take a token each (rate 0.5/s, burst 2); critical ones
 * none; one without a token waits for it, a reloaded rate is followed. */
/* The minimum interval is inclusive: within it a routine record waits. */
static void
min_interval(void)
{
	setup("[auth]\nmode = none\n[timing]\ninterval = 10s\nconfirm = 1\n"
	    "[validate]\nhealthy-after = 1\n[update]\nmin-interval = 5s\n"
	    "batch = 0\nrate = 0\ndampening = off\nheartbeat = 0\n");
	report("a", "ARS", 1, 0, 400, false);
	report("a", "ARS", 2, 1000, 600, false);
	size_t n = nouts;
	sma_uc_tick(uc, T0 + 1000);
	T_OK(sma_uc_next_deadline(uc) == T0 + 5001, "a routine change "
	    "within min-interval is due at last send + interval + 1 ms");
	sma_tick(core, T0 + 5000);
	sma_uc_tick(uc, T0 + 5000);
	T_OK(nouts == n, "at exactly last + min-interval it still waits");
	sma_uc_tick(uc, T0 + 5001);
	T_OK(nouts == n + 1 && last()->gas == 600, "1 ms later it leaves");
	/* A change exactly min-interval after that send waits too. */
	report("a", "ARS", 3, 10001, 900, false);
	T_OK(nouts == n + 1, "change at last + min-interval: held");
	sma_uc_tick(uc, T0 + 10002);
	T_OK(nouts == n + 2 && last()->gas == 900, "at + 1 ms: sent");
}

static void
report_h(const char *csci, uint64_t seq, uint64_t t, int health,
    uint64_t gas, uint64_t ct)
{
	struct cats_rec r;
	struct sma_result res;
	cats_rec_init(&r, CATS_T_SCI_REPORT);
	r.u.sci.csci_id = csci;
	r.u.sci.cs_id = "ARS";
	r.u.sci.seq = seq;
	r.u.sci.ts = T0 + t;
	r.u.sci.health = health;
	CATS_SET(&r.u.sci, SCI, gas, gas);
	CATS_SET(&r.u.sci, SCI, comp_time_ms, ct);
	sma_tick(core, T0 + t);
	sma_uc_tick(uc, T0 + t);
	sma_report(core, &r, NULL, 0, NULL, T0 + t, &res);
}

/* The advertised view of one entry (sma_uc_view). */
static struct cats_entry seen;
static char seen_id[64];
static void
view_one(void *arg, const struct cats_entry *e)
{
	(void)arg;
	if (strcmp(e->csci_id, seen_id) == 0) {
		seen = *e;
		seen.ext.n = 0;
		seen.flags.n = 0;
	}
}

static const struct cats_entry *
advertised(const char *csci)
{
	memset(&seen, 0, sizeof(seen));
	snprintf(seen_id, sizeof(seen_id), "%s", csci);
	sma_uc_view(uc, view_one, NULL);
	return seen.csci_id ? &seen : NULL;
}

/*
 * A damped entry: a change that is worse in one field leaves with that
 * field only; the improvements held in the others stay held until reuse.
 */
static void
damp_no_leak(void)
{
	setup("[auth]\nmode = none\n[timing]\ninterval = 10s\nconfirm = 1\n"
	    "grace = 300s\n[validate]\nhealthy-after = 1\nunhealthy-after = 1\n"
	    "flap-transitions = 15\n[update]\nmin-interval = 0\nbatch = 0\n"
	    "rate = 0\nheartbeat = 0\ndampening = on\ndamp-penalty = 1000\n"
	    "damp-suppress = 2000\ndamp-reuse = 750\ndamp-max = 6000\n"
	    "damp-half-life = 60s\n");
	report_h("a", 1, 0, CATS_HEALTHY, 100, 5);
	report_h("a", 2, 1000, CATS_DEGRADED, 100, 5);
	report_h("a", 3, 2000, CATS_HEALTHY, 100, 5);
	report_h("a", 4, 3000, CATS_DEGRADED, 100, 5);
	T_OK(sma_uc_stats(uc)->damped == 1 && last()->health == CATS_DEGRADED,
	    "third flap: damped; the degradation left (damped %d, "
	    "health %d, %zu records)", (int)sma_uc_stats(uc)->damped,
	    last()->health, nouts);
	size_t n = nouts;
	report_h("a", 5, 4000, CATS_HEALTHY, 500, 5);
	T_OK(nouts == n, "an improvement (HEALTHY, GAS 500) is held");
	/* Worse computing time, with the held improvements pending. */
	report_h("a", 6, 5000, CATS_HEALTHY, 500, 50);
	T_OK(nouts == n + 1 && last()->ct == 50 && last()->gas == 100 &&
	    last()->health == CATS_DEGRADED, "a worse computing time leaves "
	    "alone: health %d GAS %" PRIu64 " (still DEGRADED, 100)",
	    last()->health, last()->gas);
	/* STALE (worse state) while HEALTHY and GAS 500 are held. */
	sma_tick(core, T0 + 25001);
	sma_uc_tick(uc, T0 + 25001);
	T_OK(nouts == n + 2 && last()->state == CATS_SCI_STALE &&
	    last()->health == CATS_DEGRADED && last()->gas == 100 &&
	    last()->ct == 50, "going STALE carries no held improvement "
	    "(health %d, GAS %" PRIu64 ")", last()->health, last()->gas);
	const struct cats_entry *a = advertised("a");
	T_OK(a != NULL && a->health == CATS_DEGRADED && a->gas == 100 &&
	    a->state == CATS_SCI_STALE, "the advertised view is what left");
	/* A snapshot (heartbeat) while damped says no more than that. */
	sma_uc_snapshot(uc, T0 + 26000, CATS_OP_HEARTBEAT);
	T_OK(last()->op == CATS_OP_HEARTBEAT && last()->gas == 100 &&
	    last()->health == CATS_DEGRADED, "a snapshot leaks nothing either");
	/* Back within grace, then reuse: the improvements leave. */
	report_h("a", 7, 30000, CATS_HEALTHY, 500, 5);
	a = advertised("a");
	T_OK(a->gas == 100 && a->health == CATS_DEGRADED, "recovery while "
	    "damped: held");
	sma_tick(core, T0 + 200000);
	for (uint64_t t = 30000; t <= 200000; t += 1000)
		sma_uc_tick(uc, T0 + t);
	a = advertised("a");
	T_OK(sma_uc_stats(uc)->damped == 0 && a->health == CATS_HEALTHY &&
	    a->gas == 500 && a->comp_time_ms == 5, "after reuse: HEALTHY, "
	    "GAS 500, 5 ms");
}

/* ---- a C-PS that applies what it receives (items 3 and 4) ---- */

struct ment {
	char csci[32], cs[16];
	int state, health;
	bool has_gas, has_ct;
	uint64_t gas, ct;
};
struct msite {
	char cs[16];
	uint64_t gas, healthy, total;
	int health;
};
static struct ment ments[64];
static size_t nments;
static struct msite msites[8];
static size_t nmsites;

static void
model_reset(void)
{
	nments = nmsites = 0;
}

static void
model_apply(const struct cats_metric *m)
{
	if ((m->op == CATS_OP_FULL || m->op == CATS_OP_HEARTBEAT) &&
	    (!CATS_HAS(m, MET, part) || m->part == 1))
		model_reset();
	for (size_t i = 0; i < m->entries.n; i++) {
		const struct cats_entry *e = &m->entries.v[i];
		size_t k = 0;
		while (k < nments && strcmp(ments[k].csci, e->csci_id) != 0)
			k++;
		if (m->op == CATS_OP_WITHDRAW) {
			if (k < nments)
				ments[k] = ments[--nments];
			continue;
		}
		if (k == nments && nments < 64)
			nments++;
		struct ment *x = &ments[k];
		memset(x, 0, sizeof(*x));
		snprintf(x->csci, sizeof(x->csci), "%s", e->csci_id);
		snprintf(x->cs, sizeof(x->cs), "%s", e->cs_id);
		x->state = e->state;
		x->health = e->health;
		x->has_gas = CATS_HAS(e, ENT, gas);
		x->gas = e->gas;
		x->has_ct = CATS_HAS(e, ENT, comp_time_ms);
		x->ct = e->comp_time_ms;
	}
	for (size_t i = 0; i < m->sites.n; i++) {
		const struct cats_site *v = &m->sites.v[i];
		size_t k = 0;
		while (k < nmsites && strcmp(msites[k].cs, v->cs_id) != 0)
			k++;
		if (k == nmsites && nmsites < 8)
			nmsites++;
		struct msite *x = &msites[k];
		snprintf(x->cs, sizeof(x->cs), "%s", v->cs_id);
		x->gas = v->gas;
		x->healthy = v->healthy;
		x->total = v->total;
		x->health = v->health;
	}
}

/* Does every site the C-PS holds agree with the entries it holds? */
static bool
model_consistent(char *why, size_t len)
{
	for (size_t k = 0; k < nmsites; k++) {
		struct sma_site_acc a;
		struct sma_site_view v;
		memset(&a, 0, sizeof(a));
		for (size_t i = 0; i < nments; i++)
			if (strcmp(ments[i].cs, msites[k].cs) == 0)
				sma_site_acc(&a, ments[i].state, ments[i].health,
				    ments[i].has_gas, ments[i].gas,
				    ments[i].has_ct, ments[i].ct, 1);
		sma_site_view_of(&a, &v);
		if (v.gas != msites[k].gas || v.total != msites[k].total ||
		    v.healthy != msites[k].healthy ||
		    v.health != msites[k].health) {
			snprintf(why, len, "%s: entries say GAS %llu %llu/%llu, "
			    "the site %llu %llu/%llu", msites[k].cs,
			    (unsigned long long)v.gas,
			    (unsigned long long)v.healthy,
			    (unsigned long long)v.total,
			    (unsigned long long)msites[k].gas,
			    (unsigned long long)msites[k].healthy,
			    (unsigned long long)msites[k].total);
			return false;
		}
	}
	snprintf(why, len, "%zu entries, %zu sites", nments, nmsites);
	return true;
}

/* The model's entries as one string (to compare two of them). */
static void
model_text(char *buf, size_t len)
{
	char tmp[64][96];
	buf[0] = '\0';
	for (size_t i = 0; i < nments; i++)
		snprintf(tmp[i], sizeof(tmp[i]), "%.31s/%.15s/%d/%d/%llu;",
		    ments[i].csci, ments[i].cs, ments[i].state, ments[i].health,
		    (unsigned long long)ments[i].gas);
	/* sorted, so that the order of records does not count */
	for (size_t i = 0; i < nments; i++)
		for (size_t j = i + 1; j < nments; j++)
			if (strcmp(tmp[j], tmp[i]) < 0) {
				char t[96];
				memcpy(t, tmp[i], sizeof(t));
				memcpy(tmp[i], tmp[j], sizeof(t));
				memcpy(tmp[j], t, sizeof(t));
			}
	for (size_t i = 0; i < nments; i++)
		snprintf(buf + strlen(buf), len - strlen(buf), "%s", tmp[i]);
	for (size_t k = 0; k < nmsites; k++)
		snprintf(buf + strlen(buf), len - strlen(buf), "|%s %llu %llu/%llu",
		    msites[k].cs, (unsigned long long)msites[k].gas,
		    (unsigned long long)msites[k].healthy,
		    (unsigned long long)msites[k].total);
}

/* Tick both at t. */
static void
at(uint64_t t)
{
	sma_tick(core, T0 + t);
	sma_uc_tick(uc, T0 + t);
}

/*
 * The C-PS's view stays consistent: a site aggregate always equals the
 * sum of the entries it holds, through an eviction with a discovery that
 * keep the counts, a change held by the minimum interval, a withdrawal
 * and a discovery inside a maintenance window.  And the deltas and
 * withdrawals that discovery and withdrawal send leave the C-PS with what
 * a full update would (000 9.1).
 */
static void
site_consistency(void)
{
	char why[256];
	bool ok = true;
	setup("[auth]\nmode = none\n[timing]\ninterval = 10s\nconfirm = 1\n"
	    "[validate]\nhealthy-after = 1\n[cache]\nmax-entries = 2\n"
	    "[update]\nmin-interval = 5s\nbatch = 0\nrate = 0\n"
	    "dampening = off\nheartbeat = 0\n");
	model_reset();
	model_on = true;
	sma_uc_snapshot(uc, T0, CATS_OP_FULL);
	report("a", "ARS", 1, 0, 100, false);
	report("b", "ARS", 1, 10, 200, false);
	ok &= model_consistent(why, sizeof(why));
	/* c evicts a: the counts stay 2/2, the GAS goes 300 -> 600. */
	report("c", "ARS", 1, 1000, 400, false);
	T_OK(model_consistent(why, sizeof(why)) && nments == 2 &&
	    msites[0].gas == 600, "an eviction and a discovery that keep the "
	    "counts: the site follows at once (%s)", why);
	/* b +30 %: routine, held by b's minimum interval. */
	report("b", "ARS", 2, 1500, 260, false);
	for (uint64_t t = 1500; t <= 5010; t += 500) {
		at(t);
		ok &= model_consistent(why, sizeof(why));
	}
	T_OK(ok && msites[0].gas == 600, "a held change is not in the "
	    "site's GAS (%s)", why);
	at(5011);
	T_OK(model_consistent(why, sizeof(why)) && msites[0].gas == 660,
	    "it leaves with the site: 660 (%s)", why);
	/* A maintenance window from +6 s to +20 s. */
	char err[200];
	static const char rules[] = "WINDOW M = FROM 1700000006000 UNTIL "
	    "1700000020000;\nIF Time IN M THEN SUPPRESS_UPDATES;\n";
	struct sma_policy *p = sma_policy_parse("t.rules", rules,
	    strlen(rules), err, sizeof(err));
	T_OK(p != NULL, "rules (%s)", p ? "" : err);
	sma_uc_set_policy(uc, p, T0 + 5500);
	report("b", "ARS", 3, 7000, 500, false);	/* held: window */
	report("d", "ARS", 1, 8000, 50, false);	/* discovery, evicts c */
	T_OK(model_consistent(why, sizeof(why)) && msites[0].gas == 310 &&
	    msites[0].total == 2, "discovery and eviction in the window: "
	    "the site leaves out b's held 500 (%s)", why);
	ok = true;
	for (uint64_t t = 8000; t <= 21000; t += 250) {
		at(t);
		ok &= model_consistent(why, sizeof(why));
	}
	T_OK(ok && msites[0].gas == 550, "the window closes: b's 500 and "
	    "the site together (%s)", why);
	/* What deltas and withdrawals built equals a full update now. */
	char incr[4096], full[4096];
	model_text(incr, sizeof(incr));
	sma_uc_snapshot(uc, T0 + 21000, CATS_OP_FULL);
	model_text(full, sizeof(full));
	T_OK(strcmp(incr, full) == 0, "deltas and withdrawals leave the C-PS "
	    "with what a full update gives (%s)", full);
	/* ... withdrawals included: every SCI fails. */
	ok = true;
	for (uint64_t t = 21000; t <= 60000; t += 1000) {
		at(t);
		ok &= model_consistent(why, sizeof(why));
	}
	model_text(incr, sizeof(incr));
	sma_uc_snapshot(uc, T0 + 60000, CATS_OP_FULL);
	model_text(full, sizeof(full));
	T_OK(ok && nments == 0 && strcmp(incr, full) == 0, "after the "
	    "withdrawals too (%s)", full);
	model_on = false;
}

static void
bucket(void)
{
	setup(BASE "rate = 0.5\nburst = 2\n");
	report("a", "ARS", 1, 0, 400, false);
	report("b", "ARS", 1, 0, 400, false);
	report("c", "ARS", 1, 0, 400, false);
	T_OK(nouts == 3 && sma_uc_stats(uc)->sup_bucket == 0,
	    "three discoveries: critical, no token taken");
	report("a", "ARS", 2, 1000, 800, false);
	report("b", "ARS", 2, 1000, 800, false);
	T_OK(nouts == 5 && last()->kind == SMA_UC_ROUTINE,
	    "two routine changes: the burst of 2");
	report("c", "ARS", 2, 1000, 800, false);
	T_OK(nouts == 5 && sma_uc_stats(uc)->sup_bucket == 1 &&
	    sma_uc_stats(uc)->pending == 1, "the third waits for a token");
	T_OK(sma_uc_next_deadline(uc) == T0 + 3000,
	    "due when the token is there: 2 s after the bucket was emptied, "
	    "at 0.5 a second (+%" PRIu64 " ms)", sma_uc_next_deadline(uc) - T0);
	sma_uc_tick(uc, T0 + 2999);
	T_OK(nouts == 5, "not a millisecond before");
	sma_uc_tick(uc, T0 + 3000);
	T_OK(nouts == 6 && strcmp(last()->csci, "c") == 0 && last()->gas == 800,
	    "then it leaves");
	report("a", "ARS", 3, 3000, 400, false);
	T_OK(nouts == 6 && sma_uc_stats(uc)->sup_bucket == 2,
	    "the bucket is empty again");
	sma_uc_reconf(uc, conf_text(BASE "rate = 10\nburst = 2\n"), T0 + 3000);
	report("b", "ARS", 3, 3100, 400, false);
	T_OK(nouts == 7 && last()->n == 2 && sma_uc_stats(uc)->sup_bucket == 2,
	    "a reloaded rate of 10/s: a token in 100 ms, for one record of "
	    "both changes");
}

int
main(void)
{
	cats_crypto_init();
	cats_audit_open("none");
	cats_log_verbosity(0);
	selective();
	authorized();
	refresh();
	drain_and_held();
	view_saved_renumber();
	bucket();
	min_interval();
	damp_no_leak();
	site_consistency();
	sma_free(core);
	sma_uc_free(uc);
	return t_done();
}
