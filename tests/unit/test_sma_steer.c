/*
 * test_sma_steer.c - site-local steering in a partition (000 §10.3,
 * lib/sma/sma_steer.h), on the fixtures of tests/data/sma_steer/: each
 * NAME.jsonl is a script (sci-reports at their ts, the northbound's state,
 * ticks) run against a real core with the time passed in; the steer
 * records it makes are compared with NAME.out.jsonl.  Then the [steer]
 * configuration's errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "base/log.h"
#include "rec/json.h"
#include "sma/sma_steer.h"
#include "t.h"

#define DATA "tests/data/sma_steer/"

static struct sma_conf conf;
static struct sma *core;
static struct sma_steer *steer;
static struct sma_steer_nb nbv;
static json_t *out;	/* the records made, as JSON */
static bool fail_emit;

static int
emit(void *arg, const struct cats_rec *r)
{
	(void)arg;
	if (fail_emit)
		return -1;
	json_array_append_new(out, cats_rec_to_json(r));
	return 0;
}

/* As sma_app does: every event noted, a change set decided at its end. */
static void
on_event(void *arg, const struct sma_event *ev)
{
	(void)arg;
	sma_steer_note(steer, ev);
	if (ev->kind == SMA_EV_COMMIT)
		sma_steer_update(steer, core, &nbv, ev->now);
}

static int
load_conf(const char *text, char *err, size_t errlen)
{
	struct cats_conf cf;
	sma_conf_free(&conf);
	if (cats_conf_parse(&cf, "test.conf", text, strlen(text), err,
	    errlen) < 0)
		return -1;
	int rc = sma_conf_from(&conf, &cf, err, errlen);
	cats_conf_free(&cf);
	return rc;
}

static const char base_conf[] =
    "id = sma-a\nsite = site-a\negress = EF-1\naudit = none\n"
    "[auth]\nmode = none\n[validate]\nhealthy-after = 1\n"
    "unhealthy-after = 1\n[timing]\nconfirm = 1\ninterval = 60s\n"
    "[steer]\nservices = ARS\nto = file:/dev/null\nmax = 60s\n";

/* Run script NAME.jsonl; the records made equal NAME.out.jsonl. */
static void
run_fixture(const char *name, uint64_t audits_expected)
{
	char path[256], err[300] = "";
	T_OK(load_conf(base_conf, err, sizeof(err)) == 0, "%s: conf %s",
	    name, err);
	struct sma_keys keys;
	memset(&keys, 0, sizeof(keys));
	core = sma_new(&conf, &keys, on_event, NULL);
	steer = sma_steer_new(&conf, 7, emit, NULL);
	out = json_array();
	memset(&nbv, 0, sizeof(nbv));
	char apath[] = "/tmp/test_sma_steer.XXXXXX";
	int afd = mkstemp(apath);
	char spec[64];
	snprintf(spec, sizeof(spec), "file:%s", apath);
	cats_audit_open(spec);
	snprintf(path, sizeof(path), DATA "%s.jsonl", name);
	FILE *f = fopen(path, "r");
	T_OK(f != NULL, "%s opens", path);
	if (f == NULL)
		return;
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	struct cats_dec d;
	cats_dec_init(&d, NULL);
	while (getline(&line, &cap, f) > 0) {
		lineno++;
		json_error_t je;
		json_t *j = json_loads(line, 0, &je);
		T_OK(j != NULL, "%s:%u is JSON", path, lineno);
		if (j == NULL)
			continue;
		uint64_t at = (uint64_t)json_integer_value(json_object_get(j,
		    "at"));
		const char *nb = json_string_value(json_object_get(j, "nb"));
		if (nb != NULL) {
			if (strcmp(nb, "partition") == 0 && !nbv.partitioned) {
				nbv.partitioned = true;
				nbv.since = at;
			} else if (strcmp(nb, "connected") == 0) {
				nbv.partitioned = false;
			}
			nbv.synced = strcmp(nb, "synced") == 0;
		} else if (json_object_get(j, "tick") != NULL) {
			at = (uint64_t)json_integer_value(json_object_get(j,
			    "tick"));
		} else {
			struct cats_rec r;
			struct cats_err e;
			struct sma_result res;
			T_OK(cats_rec_from_json(&d, j, &r, &e) == 0,
			    "%s:%u decodes", path, lineno);
			at = r.u.sci.ts;
			sma_tick(core, at);
			int v = sma_report(core, &r, NULL, 0, NULL, at, &res);
			T_OK(v == SMA_ACCEPTED || v == SMA_FLAGGED,
			    "%s:%u accepted (%d %s)", path, lineno, v,
			    res.err.reason);
		}
		sma_tick(core, at);
		sma_steer_update(steer, core, &nbv, at);
		json_decref(j);
	}
	free(line);
	fclose(f);
	cats_dec_free(&d);
	/* Expected records. */
	snprintf(path, sizeof(path), DATA "%s.out.jsonl", name);
	json_t *want = json_array();
	f = fopen(path, "r");
	T_OK(f != NULL, "%s opens", path);
	line = NULL;
	cap = 0;
	while (f != NULL && getline(&line, &cap, f) > 0) {
		json_error_t je;
		json_t *j = json_loads(line, 0, &je);
		if (j != NULL)
			json_array_append_new(want, j);
	}
	free(line);
	if (f != NULL)
		fclose(f);
	bool same = json_equal(want, out);
	T_OK(same, "%s: %zu steer records as %s", name, json_array_size(out),
	    path);
	if (!same || getenv("STEER_PRINT") != NULL) {
		for (size_t i = 0; i < json_array_size(out); i++) {
			char *s = json_dumps(json_array_get(out, i),
			    JSON_COMPACT | JSON_PRESERVE_ORDER);
			printf("# %s\n", s);
			free(s);
		}
	}
	/* Every decision audited: a line a record, refusals, heals. */
	cats_audit_open("none");
	uint64_t steers = 0;
	FILE *af = fdopen(afd, "r");
	line = NULL;
	cap = 0;
	while (af != NULL && getline(&line, &cap, af) > 0)
		steers += strstr(line, " event=steer-") != NULL;
	free(line);
	if (af != NULL)
		fclose(af);
	if (getenv("STEER_PRINT") != NULL)
		printf("# audit: %s\n", apath);
	else
		unlink(apath);
	T_OK(steers == audits_expected, "%s: %llu steer audit lines (%llu "
	    "expected)", name, (unsigned long long)steers,
	    (unsigned long long)audits_expected);
	json_decref(want);
	json_decref(out);
	sma_steer_free(steer);
	sma_free(core);
}

static void
view_add(void *arg, const struct cats_rec *r)
{
	json_array_append_new(arg, cats_rec_to_json(r));
}

/* A record that does not leave is counted, and the state goes on. */
static void
test_emit_failure(void)
{
	char err[300];
	T_OK(load_conf(base_conf, err, sizeof(err)) == 0, "conf");
	struct sma_keys keys;
	memset(&keys, 0, sizeof(keys));
	core = sma_new(&conf, &keys, on_event, NULL);
	steer = sma_steer_new(&conf, 1, emit, NULL);
	out = json_array();
	memset(&nbv, 0, sizeof(nbv));
	struct cats_dec d;
	cats_dec_init(&d, NULL);
	static const char *reps[] = {
		"{\"type\":\"sci-report\",\"csci_id\":\"a\",\"cs_id\":\"ARS\","
		    "\"seq\":1,\"ts\":1000,\"health\":\"HEALTHY\",\"gas\":10,"
		    "\"locator\":\"192.0.2.1\"}",
		"{\"type\":\"sci-report\",\"csci_id\":\"b\",\"cs_id\":\"ARS\","
		    "\"seq\":1,\"ts\":1000,\"health\":\"HEALTHY\",\"gas\":10,"
		    "\"locator\":\"192.0.2.2\"}",
		"{\"type\":\"sci-report\",\"csci_id\":\"a\",\"cs_id\":\"ARS\","
		    "\"seq\":2,\"ts\":3000,\"health\":\"UNHEALTHY\",\"gas\":10,"
		    "\"locator\":\"192.0.2.1\"}",
	};
	nbv.partitioned = true;
	nbv.since = 2000;
	fail_emit = true;
	for (size_t i = 0; i < CATS_ARRAY_LEN(reps); i++) {
		json_error_t je;
		json_t *j = json_loads(reps[i], 0, &je);
		struct cats_rec r;
		struct cats_err e;
		struct sma_result res;
		cats_rec_from_json(&d, j, &r, &e);
		sma_report(core, &r, NULL, 0, NULL, r.u.sci.ts, &res);
		json_decref(j);
	}
	const struct sma_steer_stats *s = sma_steer_stats(steer);
	T_OK(s->failures == 1 && s->redirects == 1 && s->active == 1,
	    "a redirect whose record failed is counted (failures %llu) and "
	    "in force", (unsigned long long)s->failures);
	json_t *view = json_array();
	sma_steer_view(steer, view_add, view);
	json_t *v0 = json_array_get(view, 0);
	T_OK(json_array_size(view) == 1 && strcmp(json_string_value(
	    json_object_get(v0, "to")), "b") == 0 && json_integer_value(
	    json_object_get(v0, "seq")) == 1 && json_integer_value(
	    json_object_get(v0, "ts")) == 3000, "the view: the redirect in "
	    "force, as the record that made it");
	json_decref(view);
	T_OK(sma_steer_wants_full(steer) && !sma_steer_wants_full(steer),
	    "steering asks the heal for a full sync, once");
	T_OK(sma_steer_next_deadline(steer) == 2000 + 60000,
	    "the deadline is the end of max");
	fail_emit = false;
	nbv.partitioned = false;
	nbv.synced = false;
	sma_steer_update(steer, core, &nbv, 4000);
	T_OK(s->active == 1 && !s->steering, "connected, not yet synced: the "
	    "redirect holds, no new steering");
	nbv.synced = true;
	sma_steer_update(steer, core, &nbv, 4100);
	T_OK(s->active == 0 && s->heals == 1 && json_array_size(out) == 1,
	    "synced: ended (healed)");
	json_decref(out);
	cats_dec_free(&d);
	sma_steer_free(steer);
	sma_free(core);
}

/* Bad [steer] values: one line each, file:line: key: reason. */
static void
test_conf_errors(void)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "egress = E\n[steer]\nmax = 10\n", "test.conf:3: max:" },
		{ "egress = E\n[steer]\nmax = 2d\n", "test.conf:3: max:" },
		{ "egress = E\n[steer]\nmax-redirects = 0\n",
		  "test.conf:3: max-redirects:" },
		{ "egress = E\n[steer]\nto = http://x/\n", "test.conf:3: to:" },
		{ "egress = E\n[steer]\nservices = ,\n", "test.conf:3: services:" },
		{ "egress = E\n[steer]\nservice = ARS\n",
		  "test.conf:3: service: unknown key" },
		{ "egress = E\n[steer]\nservices = ARS\n",
		  "[steer] services and to go together" },
		{ "[steer]\nservices = ARS\nto = file:x\n",
		  "[steer] needs egress" },
		{ "egress = E\n[steer \"x\"]\nmax = 10s\n",
		  "this section takes no argument" },
	};
	for (size_t i = 0; i < CATS_ARRAY_LEN(cases); i++) {
		char err[300] = "";
		char text[300];
		snprintf(text, sizeof(text), "%s[auth]\nmode = none\n",
		    cases[i].text);
		int rc = load_conf(text, err, sizeof(err));
		T_OK(rc < 0 && strstr(err, cases[i].want) != NULL &&
		    strchr(err, '\n') == NULL, "refused in one line: %s", err);
	}
	char err[300];
	T_OK(load_conf("egress = E\n[steer]\nservices = A, B\nto = "
	    "udp:127.0.0.1:9\nmax = 5m\nmax-redirects = 8\n[auth]\nmode = "
	    "none\n", err,
	    sizeof(err)) == 0 && conf.steer.nservices == 2 &&
	    strcmp(conf.steer.services[1], "B") == 0 &&
	    conf.steer.max_ms == 300000 && conf.steer.max_redirects == 8,
	    "a good [steer] section");
	T_OK(load_conf("[auth]\nmode = none\n", err, sizeof(err)) == 0 &&
	    conf.steer.nservices == 0 && conf.steer.max_ms == 300000,
	    "off by default, max 5 minutes");
}

int
main(void)
{
	cats_log_init("test_sma_steer");
	cats_audit_open("none");
	/* redirect, replace, recover, heal; a second partition: refused,
	 * redirect, max-duration.  Audit lines: 12 records, 3 refusals, 1
	 * heal. */
	run_fixture("partition", 16);
	test_emit_failure();
	test_conf_errors();
	sma_conf_free(&conf);
	return t_done();
}
