/*
 * test_bind.c - the binding table and the flow state machine (lib/bind/bind.c),
 * and the journal (lib/bind/bind_journal.c).
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bind/bind.h"
#include "bind/bind_journal.h"
#include "sec/crypto.h"
#include "rec/json.h"
#include "t.h"

enum { ABSENT, PENDING, DS, READY, ACTIVE, DRAINING, FAILED, RECONNECT };

/* ---- what the table sends, journals and traces ---- */

struct sent {
	int type, op, state;
	char to[32], code[48], reason[48];
	uint64_t id, txn, epoch, version, msd;
	size_t nsids, npath;
	char unreach[48];
	bool ahead;		/* through send_ahead */
};

static struct sent sent[4096];
static size_t nsent;
static struct cats_buf journal;
static size_t njournal;
static struct bind_trace traces[4096];
static size_t ntraces;

static void
io_send(void *arg, const struct cats_rec *r, const char *to)
{
	(void)arg;
	if (nsent == CATS_ARRAY_LEN(sent))
		return;
	struct sent *s = &sent[nsent++];
	memset(s, 0, sizeof(*s));
	s->type = r->type;
	snprintf(s->to, sizeof(s->to), "%s", to ? to : "-");
	if (r->type == CATS_T_BINDING) {
		const struct cats_binding *b = &r->u.binding;
		s->op = b->op;
		s->id = b->id;
		s->txn = b->txn;
		s->epoch = b->epoch;
		s->version = b->version;
		s->state = b->state;
		s->nsids = b->fwd.sids.n;
		s->npath = b->path.n;
		snprintf(s->reason, sizeof(s->reason), "%s",
		    b->reason ? b->reason : "");
		/* Every binding that leaves is a valid record. */
		struct cats_err e;
		if (cats_rec_validate(r, &e) < 0)
			printf("# invalid binding: %s: %s\n", e.field, e.reason);
		s->code[0] = cats_rec_validate(r, &e) < 0 ? '!' : 0;
	} else if (r->type == CATS_T_ERROR) {
		snprintf(s->code, sizeof(s->code), "%s", r->u.error.code);
		s->txn = r->u.error.txn;
	} else if (r->type == CATS_T_PATH_REQ) {
		s->txn = r->u.preq.txn;
		s->msd = CATS_HAS(&r->u.preq, PRQ, msd) ? r->u.preq.msd : 0;
		snprintf(s->reason, sizeof(s->reason), "%s",
		    cats_dataplane_names[r->u.preq.dataplane]);
		if (r->u.preq.unreachable.af != 0)
			cats_ip_fmt(&r->u.preq.unreachable, s->unreach,
			    sizeof(s->unreach));
		struct cats_err e;
		s->code[0] = cats_rec_validate(r, &e) < 0 ? '!' : 0;
	} else if (r->type == CATS_T_STATUS) {
		s->epoch = r->u.status.epoch;
	}
}

/* A binding sent ahead of the journal (bind.h): recorded as such. */
static void
io_send_ahead(void *arg, const struct cats_rec *r, const char *to)
{
	io_send(arg, r, to);
	if (nsent > 0)
		sent[nsent - 1].ahead = true;
}

static size_t
count_ahead(const char *to)
{
	size_t n = 0;
	for (size_t i = 0; i < nsent; i++)
		n += sent[i].ahead && strcmp(sent[i].to, to) == 0;
	return n;
}

static void
io_journal(void *arg, const struct cats_rec *r)
{
	(void)arg;
	cats_rec_encode(r, &journal, false);
	njournal++;
}

static void
io_trace(void *arg, const struct bind_trace *tr)
{
	(void)arg;
	if (ntraces < CATS_ARRAY_LEN(traces))
		traces[ntraces++] = *tr;
}

static const struct bind_io io = { io_send, io_journal, io_trace, NULL,
	io_send_ahead };
static const struct bind_io io_nojournal = { io_send, NULL, io_trace, NULL,
	NULL };

static void
reset_io(void)
{
	nsent = 0;
	ntraces = 0;
	journal.len = 0;
	njournal = 0;
}

/* How many records of type (and op, -1 any) went to `to` ("-" stdout). */
static size_t
count_sent(int type, int op, const char *to)
{
	size_t n = 0;
	for (size_t i = 0; i < nsent; i++)
		if (sent[i].type == type && (op < 0 || sent[i].op == op) &&
		    (to == NULL || strcmp(sent[i].to, to) == 0))
			n++;
	return n;
}

static const struct sent *
last_sent(int type, const char *to)
{
	for (size_t i = nsent; i-- > 0;)
		if (sent[i].type == type && (to == NULL ||
		    strcmp(sent[i].to, to) == 0))
			return &sent[i];
	return NULL;
}

static bool
traced(int from, int to, uint64_t txn)
{
	for (size_t i = 0; i < ntraces; i++)
		if (traces[i].from == from && traces[i].to == to &&
		    traces[i].txn == txn && !traces[i].refused)
			return true;
	return false;
}

/* ---- records from JSON, through the one decoder ---- */

static struct cats_dec dec;
static struct cats_rec rec;

static struct cats_rec *
J(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_error_t je;
	json_t *j = json_loads(buf, 0, &je);
	if (j == NULL) {
		printf("# bad JSON: %s: %s\n", je.text, buf);
		exit(1);
	}
	struct cats_err e;
	memset(&e, 0, sizeof(e));
	if (cats_rec_from_json(&dec, j, &rec, &e) < 0) {
		printf("# invalid record: %s: %s: %s\n", e.field, e.reason, buf);
		exit(1);
	}
	json_decref(j);
	return &rec;
}

static int
feed(struct bind_table *t, uint64_t now, const struct cats_rec *r)
{
	if (bind_input_kind(r->type) == BIND_IN_PASS)
		return -1;
	return bind_input(t, r, now);
}

#define FLOW(sport) "{\"proto\":6,\"src\":\"192.0.2.10\",\"sport\":" #sport \
	",\"dst\":\"192.0.2.100\",\"dport\":443}"
#define DECISION(csci, extra) "{\"cs_id\":\"S1\",\"csci_id\":\"" csci "\"," \
	"\"locator\":\"198.51.100.21\",\"egress\":\"EF-2\",\"ts\":1000," \
	"\"cst_gen\":5,\"nst_gen\":6,\"idle_ms\":10000,\"hard_ms\":60000" extra "}"

/* An ok SRv6 reply for txn, flow source port sport, at ts. */
static uint64_t rep_deadline;	/* 0: ts + 2000 */

static struct cats_rec *
rep_ok(uint64_t txn, unsigned sport, uint64_t ts, const char *sid,
    const char *dec_extra)
{
	return J("{\"type\":\"path-rep\",\"txn\":%" PRIu64 ",\"ts\":%" PRIu64
	    ",\"status\":\"ok\",\"headend\":\"IF-1\",\"endpoint\":\"EF-2\","
	    "\"dataplane\":\"srv6\",\"segments\":[{\"kind\":\"node\","
	    "\"node\":\"P-1\",\"sid\":\"fc00:1::1\"},{\"kind\":\"node\","
	    "\"node\":\"EF-2\",\"sid\":\"%s\"}],\"path_id\":7,\"gen\":3,"
	    "\"path\":[\"IF-1\",\"P-1\",\"EF-2\"],"
	    "\"decision\":{\"cs_id\":\"S1\",\"csci_id\":\"B\",\"locator\":"
	    "\"198.51.100.21\",\"egress\":\"EF-2\",\"ts\":1000,\"cst_gen\":5,"
	    "\"nst_gen\":6,\"idle_ms\":10000,\"hard_ms\":60000%s},"
	    "\"flow\":{\"proto\":6,\"src\":\"192.0.2.10\",\"sport\":%u,"
	    "\"dst\":\"192.0.2.100\",\"dport\":443},\"ingress\":\"IF-1\","
	    "\"deadline\":%" PRIu64 "}", txn, ts, sid, dec_extra, sport,
	    rep_deadline ? rep_deadline : ts + 2000);
}

static struct cats_rec *
status(const char *fwd, const char *event, uint64_t id, uint64_t ts)
{
	return J("{\"type\":\"status\",\"fwd\":\"%s\",\"event\":\"%s\","
	    "\"id\":%" PRIu64 ",\"ts\":%" PRIu64 "}", fwd, event, id, ts);
}

static struct bind_table *
table(int commit)
{
	struct bind_conf c;
	bind_conf_default(&c);
	c.commit = commit;
	reset_io();
	struct bind_table *t = bind_new(&c, &io);
	bind_set_epoch(t, 1);
	return t;
}

/* The table's invariants hold. */
static void
check(struct bind_table *t, const char *where)
{
	char why[256];
	int rc = bind_check(t, why, sizeof(why));
	T_OK(rc == 0, "invariants hold after %s%s%s", where, rc ? ": " : "",
	    rc ? why : "");
}

static int
state_of(struct bind_table *t, uint64_t id)
{
	struct bind_info in;
	return bind_get(t, id, &in) < 0 ? ABSENT : in.state;
}

/* A binding made ACTIVE through both forwarders; returns its id. */
static uint64_t
make_active(struct bind_table *t, uint64_t txn, unsigned sport, uint64_t now)
{
	if (!bind_fwd_connected(t, "IF-1"))
		bind_fwd_hello(t, "IF-1", 1, now);
	if (!bind_fwd_connected(t, "EF-2"))
		bind_fwd_hello(t, "EF-2", 1, now);
	if (feed(t, now, rep_ok(txn, sport, now, "fc00:2::100", "")) != BR_OK)
		return 0;
	struct bind_info in;
	if (bind_get_txn(t, txn, &in) == 0)
		return 0;	/* still in flight: not bound */
	uint64_t id = bind_next_id(t) - 1;
	feed(t, now, status("EF-2", "installed", id, now));
	feed(t, now, status("IF-1", "installed", id, now));
	return state_of(t, id) == ACTIVE ? id : 0;
}

/* ---- the edge table ---- */

static void
test_edges(void)
{
	static const int legal[][2] = {
		{ ABSENT, PENDING }, { PENDING, DS }, { PENDING, FAILED },
		{ DS, FAILED }, { DS, READY }, { READY, ACTIVE },
		{ READY, FAILED }, { ACTIVE, DRAINING }, { ACTIVE, ACTIVE },
		{ ACTIVE, FAILED }, { ACTIVE, RECONNECT }, { DRAINING, ABSENT },
		{ FAILED, ABSENT }, { RECONNECT, ABSENT },
	};
	int bad = 0, nlegal = 0;
	for (int f = 0; f < 8; f++) {
		for (int to = 0; to < 8; to++) {
			bool want = false;
			for (size_t i = 0; i < CATS_ARRAY_LEN(legal); i++)
				if (legal[i][0] == f && legal[i][1] == to)
					want = true;
			nlegal += bind_edge_ok(f, to);
			if (bind_edge_ok(f, to) != want)
				bad++;
		}
	}
	T_OK(bad == 0 && nlegal == 14, "edge table is 001's figure plus "
	    "PENDING->FAILED and RECONNECT_REQUIRED->ABSENT (%d legal)", nlegal);
	T_OK(!bind_edge_ok(-1, 0) && !bind_edge_ok(0, 8), "out of range refused");
}

/* ---- one test per legal transition, driven by records ---- */

/* The option values of cats-bind, the input kinds and the trace line. */
static void
test_conf_and_input(void)
{
	struct bind_conf c;
	char err[256];
	unsigned mask;
	bind_conf_default(&c);
	T_OK(bind_conf_limit(&c, "client-bindings=2", err, sizeof(err)) == 0 &&
	    c.client_bindings == 2 && bind_conf_limit(&c, "pending=0", err,
	    sizeof(err)) == 0 && c.max_pending == 0,
	    "--limit NAME=N sets that limit (0: unlimited)");
	T_OK(bind_conf_limit(&c, "nonsense=1", err, sizeof(err)) < 0 &&
	    strncmp(err, "expected NAME=N", 15) == 0 &&
	    bind_conf_limit(&c, "pending", err, sizeof(err)) < 0 &&
	    bind_conf_limit(&c, "pending=4294967296", err, sizeof(err)) < 0 &&
	    strstr(err, "out of range") != NULL && c.max_pending == 0,
	    "an unknown name, no value or one past 2^32-1 is refused: %s", err);
	T_OK(bind_conf_dataplanes("srv6,ipip", &mask, err, sizeof(err)) == 0 &&
	    mask == ((1u << CATS_DP_SRV6) | (1u << CATS_DP_IPIP)) &&
	    bind_conf_dataplanes(",,ip,", &mask, err, sizeof(err)) == 0 &&
	    mask == 1u << CATS_DP_IP, "--dataplanes: a list of names");
	T_OK(bind_conf_dataplanes("srv6,foo", &mask, err, sizeof(err)) < 0 &&
	    strcmp(err, "unknown data plane \"foo\" (ip, ipip, srv6, "
	    "srmpls)") == 0, "an unknown data plane is named: %s", err);
	T_OK(bind_input_kind(CATS_T_PATH_REP) == BIND_IN_TAKE &&
	    bind_input_kind(CATS_T_STATUS) == BIND_IN_TAKE &&
	    bind_input_kind(CATS_T_METRIC) == BIND_IN_BOTH &&
	    bind_input_kind(CATS_T_NET) == BIND_IN_BOTH &&
	    bind_input_kind(CATS_T_BINDING) == BIND_IN_PASS,
	    "inputs: taken, taken and passed on (metrics, net), passed on");
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	T_OK(bind_input(t, J("{\"type\":\"net\",\"scope\":\"link\",\"ts\":1,"
	    "\"src\":\"P1\",\"dst\":\"P2\",\"up\":false}"), 1000) == BR_OK &&
	    nsent == 0 && ntraces == 0 && bind_count(t) == 0,
	    "a link down on an empty table changes nothing");
	bind_free(t);
	struct bind_trace tr = { 5, 7, 9, ACTIVE, DRAINING, "expiry", BR_IDLE,
		false };
	char line[256];
	bind_trace_fmt(&tr, line, sizeof(line));
	T_OK(strcmp(line, "txn=7 id=9 ACTIVE -> DRAINING (expiry) "
	    "reason=idle") == 0, "the trace line: %s", line);
	tr.refused = true;
	tr.reason = BR_OK;
	bind_trace_fmt(&tr, line, sizeof(line));
	T_OK(strcmp(line, "txn=7 id=9 refused ACTIVE -> DRAINING (expiry)") ==
	    0, "a refused one: %s", line);
}

/* A reply over the nodes path (JSON array text), path_id pid. */
static struct cats_rec *
rep_over(uint64_t txn, unsigned sport, uint64_t ts, const char *path,
    unsigned pid)
{
	return J("{\"type\":\"path-rep\",\"txn\":%" PRIu64 ",\"ts\":%" PRIu64
	    ",\"status\":\"ok\",\"headend\":\"IF-1\",\"endpoint\":\"EF-2\","
	    "\"dataplane\":\"ip\",\"path\":%s,\"path_id\":%u,\"decision\":"
	    DECISION("B", "") ",\"flow\":{\"proto\":6,\"src\":\"192.0.2.10\","
	    "\"sport\":%u,\"dst\":\"192.0.2.100\",\"dport\":443},"
	    "\"ingress\":\"IF-1\",\"deadline\":%" PRIu64 "}", txn, ts, path, pid,
	    sport, ts + 2000);
}

static void
test_net_repair(void)
{
	struct bind_table *t = table(BIND_COMMIT_NONE);
	feed(t, 1000, rep_over(1, 51001, 1000, "[\"IF-1\",\"P-1\",\"EF-2\"]",
	    1));
	feed(t, 1000, rep_over(2, 51002, 1000, "[\"IF-1\",\"P-2\",\"EF-2\"]",
	    2));
	feed(t, 1000, rep_over(3, 51003, 1000, "[\"IF-1\",\"P-1\",\"EF-2\"]",
	    1));
	T_OK(bind_count(t) == 3 && bind_counters(t)->paths == 2,
	    "three flows over two paths");
	reset_io();
	feed(t, 1100, J("{\"type\":\"net\",\"scope\":\"link\",\"ts\":1100,"
	    "\"src\":\"EF-2\",\"dst\":\"P-1\",\"up\":false}"));
	feed(t, 1100, J("{\"type\":\"net\",\"scope\":\"link\",\"ts\":1100,"
	    "\"src\":\"P-1\",\"dst\":\"EF-2\",\"delay_us\":9}"));
	feed(t, 1100, J("{\"type\":\"net\",\"scope\":\"node\",\"ts\":1100,"
	    "\"node\":\"P\",\"up\":false}"));
	T_OK(nsent == 0 && bind_counters(t)->net_downs == 0,
	    "the other direction, no up, a node prefix: no repair");
	feed(t, 1200, J("{\"type\":\"net\",\"scope\":\"link\",\"ts\":1200,"
	    "\"src\":\"P-1\",\"dst\":\"EF-2\",\"up\":false}"));
	T_OK(count_sent(CATS_T_PATH_REQ, -1, "-") == 2 &&
	    bind_counters(t)->net_repairs == 2 &&
	    bind_counters(t)->repair_requests == 2,
	    "the link down: both flows over it asked again, not the third");
	feed(t, 1250, J("{\"type\":\"net\",\"scope\":\"node\",\"ts\":1250,"
	    "\"node\":\"P-1\",\"up\":false}"));
	T_OK(count_sent(CATS_T_PATH_REQ, -1, "-") == 2,
	    "a repair under way is not asked again");
	feed(t, 1300, rep_over(1, 51001, 1300, "[\"IF-1\",\"P-2\",\"EF-2\"]",
	    2));
	struct bind_info in;
	T_OK(bind_get(t, 1, &in) == 0 && in.state == ACTIVE &&
	    in.version == 2 && !in.repairing && bind_counters(t)->paths == 2,
	    "repaired over the other path (shared), version 2");
	reset_io();
	feed(t, 1400, J("{\"type\":\"net\",\"scope\":\"node\",\"ts\":1400,"
	    "\"node\":\"P-2\",\"up\":false}"));
	T_OK(count_sent(CATS_T_PATH_REQ, -1, "-") == 2,
	    "a node down: the flows through it asked again");
	check(t, "net repairs");
	bind_free(t);
}

/* A path-down naming the segment a router could not reach: the repair
 * asks the PCE to avoid it; a net record's names none. */
static void
test_repair_unreachable(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	uint64_t id = make_active(t, 1, 1000, 1000);
	reset_io();
	feed(t, 1100, J("{\"type\":\"status\",\"fwd\":\"IF-1\",\"event\":"
	    "\"path-down\",\"id\":%" PRIu64 ",\"ts\":1100,\"reason\":"
	    "\"unreachable\",\"unreachable\":\"fc00:1::1\"}", id));
	const struct sent *s = last_sent(CATS_T_PATH_REQ, "-");
	T_OK(s != NULL && strcmp(s->unreach, "fc00:1::1") == 0 &&
	    s->code[0] == 0, "a path-down's unreachable segment goes with the "
	    "repair request (%s)", s ? s->unreach : "none");
	feed(t, 1200, rep_ok(1, 1000, 1200, "fc00:2::100", ""));
	reset_io();
	feed(t, 1300, J("{\"type\":\"net\",\"scope\":\"link\",\"ts\":1300,"
	    "\"src\":\"P-1\",\"dst\":\"EF-2\",\"up\":false}"));
	s = last_sent(CATS_T_PATH_REQ, "-");
	T_OK(s != NULL && s->unreach[0] == 0, "a net record's repair names none");
	check(t, "repair unreachable");
	bind_free(t);
}

static void
test_absent_pending_ds(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	int rc = feed(t, 1000, J("{\"type\":\"request\",\"txn\":11,"
	    "\"ingress\":\"IF-1\",\"ts\":1000,\"flow\":" FLOW(51000) "}"));
	struct bind_info in;
	T_OK(rc == BR_OK && bind_get_txn(t, 11, &in) == 0 &&
	    in.state == PENDING, "ABSENT -> PENDING on a request");
	T_OK(traced(ABSENT, PENDING, 11), "transition logged with the txn");
	rc = feed(t, 1100, J("{\"type\":\"path-req\",\"txn\":11,\"ts\":1100,"
	    "\"headend\":\"IF-1\",\"endpoint\":\"EF-2\",\"dataplane\":\"srv6\","
	    "\"decision\":" DECISION("B", "") ",\"flow\":" FLOW(51000) ","
	    "\"ingress\":\"IF-1\"}"));
	T_OK(rc == BR_OK && bind_get_txn(t, 11, &in) == 0 && in.state == DS &&
	    strcmp(in.csci_id, "B") == 0,
	    "PENDING -> DESTINATION_SELECTED on the decision");
	T_OK(traced(PENDING, DS, 11), "logged");
	rc = feed(t, 1200, rep_ok(11, 51000, 1200, "fc00:2::100", ""));
	T_OK(rc == BR_OK && bind_get(t, in.id, &in) == 0 && in.state == READY,
	    "DESTINATION_SELECTED -> BINDING_READY on the path reply");
	T_OK(count_sent(CATS_T_BINDING, CATS_BIND_INSTALL, "-") == 1 &&
	    njournal == 1, "the binding is journaled and written out once");
	const struct sent *s = last_sent(CATS_T_BINDING, "-");
	T_OK(s && s->code[0] == 0 && s->nsids == 2 && s->version == 1,
	    "it is a valid binding record with the reply's segment list");
	check(t, "absent_pending_ds");
	bind_free(t);
}

static void
test_ready_active_both(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	bind_fwd_hello(t, "IF-1", 1, 1000);
	bind_fwd_hello(t, "EF-2", 1, 1000);
	feed(t, 1000, rep_ok(21, 51000, 1000, "fc00:2::100", ""));
	uint64_t id = bind_next_id(t) - 1;
	T_OK(state_of(t, id) == READY, "path reply alone: ABSENT .. READY");
	T_OK(traced(ABSENT, PENDING, 21) && traced(PENDING, DS, 21) &&
	    traced(DS, READY, 21), "each step logged");
	T_OK(count_sent(CATS_T_BINDING, CATS_BIND_INSTALL, "EF-2") == 1 &&
	    count_sent(CATS_T_BINDING, CATS_BIND_INSTALL, "IF-1") == 0,
	    "commit both: the egress gets the binding first");
	T_OK(count_ahead("EF-2") == 1, "ahead of the journal's sync: it "
	    "admits nothing");
	feed(t, 1010, status("EF-2", "installed", id, 1010));
	T_OK(state_of(t, id) == READY &&
	    count_sent(CATS_T_BINDING, CATS_BIND_INSTALL, "IF-1") == 1,
	    "egress installed: now the ingress gets it, still READY");
	T_OK(count_ahead("IF-1") == 0, "the ingress's copy, which releases "
	    "the first packet, waits for the journal");
	feed(t, 1020, status("IF-1", "installed", id, 1020));
	T_OK(state_of(t, id) == ACTIVE && traced(READY, ACTIVE, 21),
	    "BINDING_READY -> ACTIVE on the forwarder commit");
	T_OK(njournal == 2, "commit journaled (install + installed)");
	const struct sent *s = last_sent(CATS_T_BINDING, "IF-1");
	T_OK(s && s->epoch == 1 && s->id == id, "binding carries the epoch");
	check(t, "ready_active_both");
	bind_free(t);
}

static void
test_commit_ingress_and_none(void)
{
	struct bind_table *t = table(BIND_COMMIT_INGRESS);
	bind_fwd_hello(t, "IF-1", 1, 1000);
	bind_fwd_hello(t, "EF-2", 1, 1000);
	feed(t, 1000, rep_ok(31, 51000, 1000, "fc00:2::100", ""));
	uint64_t id = bind_next_id(t) - 1;
	T_OK(count_sent(CATS_T_BINDING, CATS_BIND_INSTALL, "IF-1") == 1 &&
	    count_sent(CATS_T_BINDING, CATS_BIND_INSTALL, "EF-2") == 1,
	    "commit ingress: both get it at once");
	T_OK(count_ahead("EF-2") == 0 && count_ahead("IF-1") == 0,
	    "neither ahead of the journal: the ingress's install commits");
	feed(t, 1010, status("IF-1", "installed", id, 1010));
	T_OK(state_of(t, id) == ACTIVE, "the ingress install commits");
	bind_free(t);

	t = table(BIND_COMMIT_NONE);
	feed(t, 1000, rep_ok(32, 51000, 1000, "fc00:2::100", ""));
	id = bind_next_id(t) - 1;
	T_OK(state_of(t, id) == ACTIVE && traced(READY, ACTIVE, 32),
	    "commit none: written out is committed");
	bind_free(t);
}

static void
test_failures_before_active(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	bind_fwd_hello(t, "IF-1", 1, 1000);
	/* PENDING -> FAILED: the deadline, then cleanup. */
	feed(t, 1000, J("{\"type\":\"request\",\"txn\":41,\"ingress\":\"IF-1\","
	    "\"ts\":1000,\"deadline\":1500,\"flow\":" FLOW(41000) "}"));
	bind_tick(t, 1499);
	struct bind_info in;
	T_OK(bind_get_txn(t, 41, &in) == 0, "pending until the deadline");
	bind_tick(t, 1500);
	T_OK(bind_get_txn(t, 41, &in) < 0 && traced(PENDING, FAILED, 41) &&
	    traced(FAILED, ABSENT, 41), "PENDING -> FAILED -> ABSENT at it");
	const struct sent *s = last_sent(CATS_T_ERROR, "IF-1");
	T_OK(s && strcmp(s->code, "timeout") == 0 && s->txn == 41,
	    "the ingress gets an error that releases the packets");

	/* PENDING -> FAILED: an upstream error (passed on, not doubled). */
	reset_io();
	feed(t, 2000, J("{\"type\":\"request\",\"txn\":42,\"ingress\":\"IF-1\","
	    "\"ts\":2000,\"flow\":" FLOW(42000) "}"));
	feed(t, 2001, J("{\"type\":\"error\",\"code\":\"unknown-cs-id\","
	    "\"txn\":42,\"ingress\":\"IF-1\",\"stage\":\"cats-select\"}"));
	T_OK(traced(PENDING, FAILED, 42) && bind_get_txn(t, 42, &in) < 0,
	    "an upstream error fails the transaction");
	T_OK(count_sent(CATS_T_ERROR, -1, "IF-1") == 1 &&
	    count_sent(CATS_T_ERROR, -1, "-") == 1 &&
	    strcmp(last_sent(CATS_T_ERROR, "IF-1")->code, "unknown-cs-id") == 0,
	    "and is passed on once, to the output and the ingress");

	/* DESTINATION_SELECTED -> FAILED: no path. */
	reset_io();
	feed(t, 3000, J("{\"type\":\"path-rep\",\"txn\":43,\"ts\":3000,"
	    "\"status\":\"no-path\",\"reason\":\"unreachable\",\"pruned\":"
	    "\"max_delay_us\",\"headend\":\"IF-1\",\"decision\":"
	    DECISION("B", "") ",\"flow\":" FLOW(43000) ",\"ingress\":\"IF-1\","
	    "\"deadline\":5000}"));
	T_OK(traced(DS, FAILED, 43) && traced(FAILED, ABSENT, 43) &&
	    bind_count(t) == 0, "DESTINATION_SELECTED -> FAILED on no path");
	s = last_sent(CATS_T_ERROR, "IF-1");
	T_OK(s && strcmp(s->code, "no-path") == 0, "error no-path to ingress");
	T_OK(bind_counters(t)->fail[BR_NO_PATH] == 1, "counted by reason");

	/* BINDING_READY -> FAILED: a commit failure at the egress. */
	reset_io();
	bind_fwd_hello(t, "EF-2", 1, 4000);
	feed(t, 4000, rep_ok(44, 44000, 4000, "fc00:2::100", ""));
	uint64_t id = bind_next_id(t) - 1;
	feed(t, 4001, J("{\"type\":\"status\",\"fwd\":\"EF-2\",\"event\":"
	    "\"failed\",\"id\":%" PRIu64 ",\"ts\":4001,\"reason\":\"no-route\"}",
	    id));
	T_OK(traced(READY, FAILED, 44) && traced(FAILED, ABSENT, 44) &&
	    state_of(t, id) == ABSENT, "BINDING_READY -> FAILED on a failed "
	    "install");
	T_OK(count_sent(CATS_T_BINDING, -1, "IF-1") == 0,
	    "the ingress never saw half a binding");
	s = last_sent(CATS_T_ERROR, "IF-1");
	T_OK(s && strcmp(s->code, "commit-failed") == 0, "error commit-failed");
	T_OK(count_sent(CATS_T_BINDING, CATS_BIND_REMOVE, "-") == 1,
	    "the removal is written out (and journaled)");

	/* BINDING_READY -> FAILED: commit timeout, removal at the holder. */
	reset_io();
	feed(t, 5000, rep_ok(45, 45000, 5000, "fc00:2::100", ""));
	id = bind_next_id(t) - 1;
	bind_tick(t, 5000 + 2000);
	T_OK(traced(READY, FAILED, 45) && state_of(t, id) == FAILED,
	    "commit timeout: FAILED, waiting for the egress to remove it");
	T_OK(count_sent(CATS_T_BINDING, CATS_BIND_REMOVE, "EF-2") == 1,
	    "remove sent to the egress that holds it");
	feed(t, 7001, status("EF-2", "removed", id, 7001));
	T_OK(state_of(t, id) == ABSENT && traced(FAILED, ABSENT, 45),
	    "FAILED -> ABSENT when the holder removed it");
	check(t, "failures_before_active");
	bind_free(t);
}

static void
test_active_edges(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	uint64_t id = make_active(t, 51, 51000, 10000);
	T_OK(id != 0, "active binding");

	/* ACTIVE -> DRAINING -> ABSENT: the forwarder saw it idle. */
	reset_io();
	feed(t, 12000, status("IF-1", "expired", id, 12000));
	T_OK(state_of(t, id) == DRAINING && traced(ACTIVE, DRAINING, 51),
	    "ACTIVE -> DRAINING on the ingress' expiry");
	T_OK(count_sent(CATS_T_BINDING, CATS_BIND_REMOVE, "EF-2") == 1 &&
	    count_sent(CATS_T_BINDING, CATS_BIND_REMOVE, "IF-1") == 0,
	    "the other side is told to remove it");
	feed(t, 12001, status("EF-2", "removed", id, 12001));
	T_OK(state_of(t, id) == ABSENT && traced(DRAINING, ABSENT, 51),
	    "DRAINING -> ABSENT on the reverse cleanup");
	T_OK(bind_counters(t)->expired_idle == 1, "idle expiry counted");

	/* ACTIVE -> ACTIVE: path repair, same instance, new path. */
	id = make_active(t, 52, 52000, 20000);
	struct bind_info in;
	bind_get(t, id, &in);
	uint64_t released = bind_counters(t)->paths_released;
	reset_io();
	feed(t, 21000, status("IF-1", "path-down", id, 21000));
	T_OK(count_sent(CATS_T_PATH_REQ, -1, "-") == 1 &&
	    last_sent(CATS_T_PATH_REQ, "-")->txn == 52 &&
	    last_sent(CATS_T_PATH_REQ, "-")->code[0] == 0,
	    "path down: a valid repair path request for the same txn");
	feed(t, 21100, rep_ok(52, 52000, 21100, "fc00:2::200", ""));
	bind_get(t, id, &in);
	T_OK(in.state == ACTIVE && in.version == 2 && !in.repairing &&
	    traced(ACTIVE, ACTIVE, 52), "ACTIVE -> ACTIVE: repaired, version 2");
	T_OK(count_sent(CATS_T_BINDING, CATS_BIND_REFRESH, "IF-1") == 1 &&
	    count_sent(CATS_T_BINDING, CATS_BIND_REFRESH, "EF-2") == 1,
	    "refresh to both forwarders");
	T_OK(bind_counters(t)->paths_released == released + 1,
	    "the old path is released with its last binding");

	/* A repair reply naming another instance never moves the flow. */
	feed(t, 22000, status("IF-1", "path-down", id, 22000));
	int rc = feed(t, 22100, J("{\"type\":\"path-rep\",\"txn\":52,\"ts\":"
	    "22100,\"status\":\"ok\",\"headend\":\"IF-1\",\"endpoint\":\"EF-3\","
	    "\"dataplane\":\"ip\",\"decision\":{\"cs_id\":\"S1\",\"csci_id\":"
	    "\"A\",\"locator\":\"198.51.100.11\",\"egress\":\"EF-3\",\"ts\":1},"
	    "\"flow\":" FLOW(52000) ",\"ingress\":\"IF-1\"}"));
	bind_get(t, id, &in);
	T_OK(rc == BR_MOVE_REFUSED && in.state == ACTIVE &&
	    strcmp(in.csci_id, "B") == 0, "another instance: refused, not moved");
	/* ... and no repair in time: instance failure, FAILED (default). */
	reset_io();
	bind_tick(t, 22000 + 2000);
	T_OK(state_of(t, id) == FAILED && traced(ACTIVE, FAILED, 52),
	    "ACTIVE -> FAILED when the repair does not come");
	const struct sent *s = last_sent(CATS_T_ERROR, "IF-1");
	T_OK(s && strcmp(s->code, "repair-failed") == 0, "error repair-failed");
	feed(t, 24001, status("IF-1", "removed", id, 24001));
	feed(t, 24002, status("EF-2", "removed", id, 24002));
	T_OK(state_of(t, id) == ABSENT && traced(FAILED, ABSENT, 52),
	    "FAILED -> ABSENT after both removed it");

	/* ACTIVE -> RECONNECT_REQUIRED: the service says reconnect. */
	bind_fwd_hello(t, "IF-1", 1, 30000);
	feed(t, 30000, rep_ok(53, 53000, 30000, "fc00:2::100",
	    ",\"on_failure\":\"reconnect\""));
	id = bind_next_id(t) - 1;
	feed(t, 30000, status("EF-2", "installed", id, 30000));
	feed(t, 30000, status("IF-1", "installed", id, 30000));
	T_OK(state_of(t, id) == ACTIVE, "active (on_failure reconnect)");
	reset_io();
	feed(t, 31000, J("{\"type\":\"metric\",\"op\":\"withdraw\","
	    "\"sma_id\":\"sma-1\",\"epoch\":1,\"seq\":9,\"ts\":31000,"
	    "\"entries\":[{\"csci_id\":\"B\",\"cs_id\":\"S1\"}]}"));
	T_OK(state_of(t, id) == RECONNECT && traced(ACTIVE, RECONNECT, 53),
	    "ACTIVE -> RECONNECT_REQUIRED on instance failure");
	s = last_sent(CATS_T_ERROR, "IF-1");
	T_OK(s && strcmp(s->code, "reconnect-required") == 0,
	    "the ingress is told the client must reconnect");
	bind_tick(t, 31000 + 5000);
	T_OK(state_of(t, id) == ABSENT && traced(RECONNECT, ABSENT, 53),
	    "RECONNECT_REQUIRED -> ABSENT at the cleanup deadline");

	/* ACTIVE -> FAILED on instance failure (on_failure fail). */
	id = make_active(t, 54, 54000, 40000);
	bind_instance_down(t, NULL, "B", 40001);
	T_OK(state_of(t, id) == FAILED && traced(ACTIVE, FAILED, 54),
	    "ACTIVE -> FAILED on instance failure");
	check(t, "active_edges");
	bind_free(t);
}

/* ---- every illegal transition is refused and counted ---- */

static uint64_t
reach(struct bind_table *t, int state, uint64_t txn)
{
	unsigned sport = (unsigned)(1000 + txn);
	uint64_t now = 100000;
	char flow[128];
	snprintf(flow, sizeof(flow), "{\"proto\":6,\"src\":\"192.0.2.10\","
	    "\"sport\":%u,\"dst\":\"192.0.2.100\",\"dport\":443}", sport);
	uint64_t id;
	switch (state) {
	case PENDING:
		feed(t, now, J("{\"type\":\"request\",\"txn\":%" PRIu64 ","
		    "\"ingress\":\"IF-1\",\"ts\":%" PRIu64 ",\"flow\":%s}", txn,
		    now, flow));
		return bind_next_id(t) - 1;
	case DS:
		feed(t, now, J("{\"type\":\"path-req\",\"txn\":%" PRIu64 ","
		    "\"ts\":%" PRIu64 ",\"headend\":\"IF-1\",\"endpoint\":"
		    "\"EF-2\",\"dataplane\":\"ip\",\"decision\":"
		    DECISION("B", "") ",\"flow\":%s,\"ingress\":\"IF-1\","
		    "\"deadline\":%" PRIu64 "}", txn, now, flow, now + 1000));
		return bind_next_id(t) - 1;
	case READY:
		bind_fwd_gone(t, "EF-2");
		feed(t, now, rep_ok(txn, sport, now, "fc00:2::100", ""));
		return bind_next_id(t) - 1;
	case ACTIVE:
		return make_active(t, txn, sport, now);
	case DRAINING:
		id = make_active(t, txn, sport, now);
		feed(t, now, status("IF-1", "expired", id, now));
		return id;
	case FAILED:
	case RECONNECT:
		bind_fwd_hello(t, "IF-1", 1, now);
		bind_fwd_hello(t, "EF-2", 1, now);
		feed(t, now, rep_ok(txn, sport, now, "fc00:2::100",
		    state == RECONNECT ? ",\"on_failure\":\"reconnect\"" : ""));
		id = bind_next_id(t) - 1;
		feed(t, now, status("EF-2", "installed", id, now));
		feed(t, now, status("IF-1", "installed", id, now));
		bind_instance_down(t, NULL, "B", now);
		return id;
	}
	return 0;
}

/* A table with one flow (transaction txn, *id) in state; NULL, said,
 * when it could not be reached. */
static struct bind_table *
table_in(int state, uint64_t txn, uint64_t *id)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	*id = reach(t, state, txn);
	if (state_of(t, *id) == state)
		return t;
	printf("# could not reach %s\n", cats_flow_state_names[state]);
	bind_free(t);
	return NULL;
}

static void
test_illegal(void)
{
	int tried = 0, refused = 0, kept = 0;
	for (int from = PENDING; from <= RECONNECT; from++) {
		for (int to = 0; to < 8; to++) {
			if (bind_edge_ok(from, to))
				continue;
			uint64_t id;
			struct bind_table *t = table_in(from, 900 +
			    (uint64_t)(from * 8 + to), &id);
			if (t == NULL)
				continue;
			uint64_t ill = bind_counters(t)->illegal;
			tried++;
			refused += bind_try(t, id, to, 100001) < 0 &&
			    bind_counters(t)->illegal == ill + 1;
			kept += state_of(t, id) == from;
			bind_free(t);
		}
	}
	T_OK(tried == 43 && refused == tried && kept == tried,
	    "each of the %d illegal transitions from a live state is refused, "
	    "counted, and changes nothing (%d refused, %d kept)", tried,
	    refused, kept);
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	int ok = 0;
	for (int to = 0; to < 8; to++)
		if (to != PENDING)
			ok += bind_try(t, 0, to, 1) < 0;
	T_OK(ok == 7 && bind_counters(t)->illegal == 7,
	    "from ABSENT only PENDING is legal (7 refused)");
	int rc = feed(t, 100003, status("IF-1", "installed", 99999, 100003));
	T_OK(rc == BR_UNKNOWN_BINDING &&
	    bind_counters(t)->refused[BR_UNKNOWN_BINDING] == 1,
	    "status for an unknown binding: refused, counted");
	uint64_t id = reach(t, ACTIVE, 78);
	rc = feed(t, 100004, status("EF-9", "removed", id, 100004));
	T_OK(rc == BR_NOT_OWNER && state_of(t, id) == ACTIVE,
	    "status from a forwarder the binding does not name: refused");
	rc = feed(t, 100005, J("{\"type\":\"status\",\"fwd\":\"IF-1\",\"event\":"
	    "\"removed\",\"id\":%" PRIu64 ",\"epoch\":0,\"ts\":100005}", id));
	T_OK(rc == BR_STALE_EPOCH && state_of(t, id) == ACTIVE,
	    "status of an older owner epoch: refused");
	bind_free(t);
}

/*
 * Every status event from each of a binding's forwarders in each live
 * state: never an illegal move (the handler asks only for edges of 001),
 * the invariants hold, and the state is one the event may lead to.
 */
static void
test_status_matrix(void)
{
	static const char *const events[] = { "installed", "refreshed",
		"failed", "expired", "removed", "path-down", "path-up" };
	static const char *const fwds[] = { "IF-1", "EF-2" };
	int tried = 0, legal = 0, sane = 0;
	for (int from = PENDING; from <= RECONNECT; from++) {
		for (size_t ev = 0; ev < CATS_ARRAY_LEN(events); ev++) {
			for (size_t f = 0; f < 2; f++) {
				uint64_t id;
				struct bind_table *t = table_in(from,
				    500 + (uint64_t)tried, &id);
				if (t == NULL)
					continue;
				uint64_t ill = bind_counters(t)->illegal;
				feed(t, 100002, status(fwds[f], events[ev], id,
				    100002));
				int to = state_of(t, id);
				char why[256];
				tried++;
				legal += bind_counters(t)->illegal == ill &&
				    bind_check(t, why, sizeof(why)) == 0;
				/* Where it went: itself, or an edge of 001
				 * (FAILED/ABSENT/DRAINING through their own). */
				bool ok = to == from || bind_edge_ok(from, to) ||
				    (to == ABSENT && (from == DRAINING ||
				    from == FAILED || from == RECONNECT ||
				    from == READY || from == ACTIVE));
				if (!ok || bind_counters(t)->illegal != ill)
					printf("# %s from %s in %s: %s%s\n",
					    events[ev], fwds[f],
					    cats_flow_state_names[from],
					    cats_flow_state_names[to],
					    bind_counters(t)->illegal != ill ?
					    " (illegal)" : "");
				sane += ok;
				bind_free(t);
			}
		}
	}
	T_OK(tried == 7 * 7 * 2 && legal == tried && sane == tried,
	    "each status event from each forwarder in each of the 7 live "
	    "states: no illegal move, invariants hold, a state it may reach "
	    "(%d tried, %d legal, %d sane)", tried, legal, sane);

	/* The one seen in traces: installed for a DRAINING binding. */
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	uint64_t id = reach(t, DRAINING, 77);
	const struct bind_counters *k = bind_counters(t);
	uint64_t ill = k->illegal, late = k->late_status, rm = k->sent_remove;
	reset_io();
	feed(t, 100002, status("EF-2", "installed", id, 100002));
	T_OK(state_of(t, id) == DRAINING && k->illegal == ill &&
	    k->late_status == late + 1 && k->sent_remove == rm,
	    "installed, late, from a forwarder sent the removal: DRAINING "
	    "kept, counted late, not illegal, nothing sent again");
	/* IF-1 reported expired (no longer a holder), then installed (it
	 * re-learned it): sent the removal, held until it reports. */
	feed(t, 100003, status("IF-1", "installed", id, 100003));
	T_OK(state_of(t, id) == DRAINING && k->illegal == ill &&
	    k->sent_remove == rm + 1 &&
	    count_sent(CATS_T_BINDING, CATS_BIND_REMOVE, "IF-1") == 1,
	    "installed from a forwarder not holding it: its removal sent");
	feed(t, 100004, status("EF-2", "removed", id, 100004));
	T_OK(state_of(t, id) == DRAINING, "still held by IF-1");
	feed(t, 100005, status("IF-1", "removed", id, 100005));
	T_OK(state_of(t, id) == ABSENT && k->illegal == ill,
	    "both removed: cleaned up, no illegal move");
	/* Removed for a flow not yet bound: counted, no DRAINING. */
	id = reach(t, PENDING, 78);
	feed(t, 100006, status("IF-1", "removed", id, 100006));
	T_OK(state_of(t, id) == PENDING && k->illegal == ill &&
	    k->late_status == late + 3, "removed for a PENDING flow: "
	    "counted late, no PENDING -> DRAINING");
	bind_free(t);
}

/* ---- late replies never resurrect ---- */

static void
test_late_reply(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	bind_fwd_hello(t, "IF-1", 1, 1000);
	feed(t, 1000, J("{\"type\":\"path-req\",\"txn\":61,\"ts\":1000,"
	    "\"headend\":\"IF-1\",\"endpoint\":\"EF-2\",\"dataplane\":\"srv6\","
	    "\"decision\":" DECISION("B", "") ",\"flow\":" FLOW(61000) ","
	    "\"ingress\":\"IF-1\",\"deadline\":2000}"));
	reset_io();
	/* The reply comes at 2500: the deadline fires first, then it is late. */
	int rc = feed(t, 2500, rep_ok(61, 61000, 2500, "fc00:2::100", ""));
	T_OK(traced(DS, FAILED, 61), "the transaction timed out at its deadline");
	T_OK(rc == BR_LATE_REPLY && bind_count(t) == 0 &&
	    count_sent(CATS_T_BINDING, -1, NULL) == 0,
	    "the late reply is refused: no binding");
	T_OK(bind_counters(t)->refused[BR_LATE_REPLY] == 1, "counted");
	/* Again, for a transaction long forgotten: its own deadline says so. */
	struct bind_conf c;
	bind_conf_default(&c);
	c.closed_memory = 1;
	bind_free(t);
	reset_io();
	t = bind_new(&c, &io);
	bind_fwd_hello(t, "IF-1", 1, 1000);
	rep_deadline = 3000;
	rc = feed(t, 3001, rep_ok(62, 62000, 3001, "fc00:2::100", ""));
	T_OK(rc == BR_LATE_REPLY && bind_count(t) == 0,
	    "a reply for an unknown transaction after its deadline: refused");
	const struct sent *s = last_sent(CATS_T_ERROR, "IF-1");
	T_OK(s && strcmp(s->code, "late-reply") == 0 && s->txn == 62,
	    "and the ingress is told once");
	rc = feed(t, 3002, rep_ok(62, 62000, 3002, "fc00:2::100", ""));
	T_OK(rc == BR_LATE_REPLY, "a second copy too");
	rep_deadline = 0;
	/* A duplicate of a reply already bound is not a second binding. */
	rc = feed(t, 1500, rep_ok(63, 63000, 1500, "fc00:2::100", ""));
	size_t n = bind_count(t);
	rc = feed(t, 1600, rep_ok(63, 63000, 1600, "fc00:2::100", ""));
	T_OK(rc == BR_DUP_FLOW && bind_count(t) == n,
	    "a duplicate reply: refused by its flow key");
	check(t, "late_reply");
	bind_free(t);
}

/* ---- the join ---- */

static void
test_join(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	bind_fwd_hello(t, "IF-1", 1, 1000);
	const char *preq = "{\"type\":\"path-req\",\"txn\":%d,\"ts\":1000,"
	    "\"headend\":\"IF-1\",\"endpoint\":\"EF-2\",\"dataplane\":\"srv6\","
	    "\"decision\":" DECISION("B", "") ",\"flow\":{\"proto\":6,\"src\":"
	    "\"192.0.2.10\",\"sport\":%d,\"dst\":\"192.0.2.100\",\"dport\":443},"
	    "\"ingress\":\"IF-1\",\"deadline\":3000}";
	feed(t, 1000, J(preq, 71, 7100));
	reset_io();
	/* The reply's decision names another instance. */
	int rc = feed(t, 1100, J("{\"type\":\"path-rep\",\"txn\":71,\"ts\":1100,"
	    "\"status\":\"ok\",\"headend\":\"IF-1\",\"endpoint\":\"EF-2\","
	    "\"dataplane\":\"ip\",\"decision\":" DECISION("A", "") ","
	    "\"flow\":" FLOW(7100) ",\"ingress\":\"IF-1\"}"));
	T_OK(rc == BR_JOIN_MISMATCH && traced(DS, FAILED, 71) &&
	    bind_count(t) == 0, "a reply that changes the instance fails the "
	    "transaction (join-mismatch)");
	T_OK(count_sent(CATS_T_BINDING, -1, NULL) == 0, "no binding");
	/* The metric generations differ. */
	feed(t, 1200, J(preq, 72, 7200));
	rc = feed(t, 1300, J("{\"type\":\"path-rep\",\"txn\":72,\"ts\":1300,"
	    "\"status\":\"ok\",\"endpoint\":\"EF-2\",\"dataplane\":\"ip\","
	    "\"decision\":{\"cs_id\":\"S1\",\"csci_id\":\"B\",\"locator\":"
	    "\"198.51.100.21\",\"egress\":\"EF-2\",\"ts\":1000,\"cst_gen\":4,"
	    "\"nst_gen\":6},\"ingress\":\"IF-1\"}"));
	T_OK(rc == BR_JOIN_MISMATCH, "other metric generations: join-mismatch");
	/* The path ends elsewhere than the selected egress. */
	feed(t, 1400, J(preq, 73, 7300));
	rc = feed(t, 1500, J("{\"type\":\"path-rep\",\"txn\":73,\"ts\":1500,"
	    "\"status\":\"ok\",\"endpoint\":\"EF-3\",\"dataplane\":\"ip\","
	    "\"ingress\":\"IF-1\"}"));
	T_OK(rc == BR_JOIN_MISMATCH, "path endpoint is not the egress: refused");
	/* Without a decision, a reply for a registered decision joins. */
	feed(t, 1600, J(preq, 74, 7400));
	rc = feed(t, 1700, J("{\"type\":\"path-rep\",\"txn\":74,\"ts\":1700,"
	    "\"status\":\"ok\",\"endpoint\":\"EF-2\",\"dataplane\":\"srv6\","
	    "\"segments\":[{\"kind\":\"node\",\"sid\":\"fc00:2::1\"}]}"));
	struct bind_info in;
	T_OK(rc == BR_OK && bind_get(t, bind_next_id(t) - 1, &in) == 0 &&
	    in.state == READY && strcmp(in.csci_id, "B") == 0,
	    "a bare reply joins the recorded decision by txn");
	/* A reply nobody decided: refused. */
	rc = feed(t, 1800, J("{\"type\":\"path-rep\",\"txn\":75,\"ts\":1800,"
	    "\"status\":\"ok\",\"endpoint\":\"EF-2\"}"));
	T_OK(rc == BR_NO_DECISION, "a reply without a decision: refused");
	/* A path the headend cannot realize is a path failure. */
	rc = feed(t, 1900, J("{\"type\":\"path-rep\",\"txn\":76,\"ts\":1900,"
	    "\"status\":\"ok\",\"endpoint\":\"EF-2\",\"dataplane\":\"srmpls\","
	    "\"segments\":[{\"kind\":\"node\",\"sid\":\"fc00:2::1\"}],"
	    "\"decision\":" DECISION("B", "") ",\"flow\":" FLOW(7600) ","
	    "\"ingress\":\"IF-1\",\"deadline\":3000}"));
	T_OK(rc == BR_PATH_CAPABILITY && traced(DS, FAILED, 76),
	    "an SR-MPLS path without labels: path-capability");
	check(t, "join");
	bind_free(t);
}

/* ---- admission limits ---- */

static void
test_limits(void)
{
	struct bind_conf c;
	bind_conf_default(&c);
	c.client_bindings = 2;
	c.tenant_bindings = 3;
	c.max_bindings = 4;
	c.client_pending = 1;
	c.commit = BIND_COMMIT_NONE;
	reset_io();
	struct bind_table *t = bind_new(&c, &io);
	bind_fwd_hello(t, "IF-1", 1, 1000);
	int rc[4];
	for (int i = 0; i < 3; i++)
		rc[i] = feed(t, 1000, rep_ok(81 + (uint64_t)i, 8100 +
		    (unsigned)i, 1000, "fc00:2::100", ""));
	T_OK(rc[0] == BR_OK && rc[1] == BR_OK && rc[2] == BR_LIMIT_CLIENT,
	    "client cap of 2 bindings: the third fails closed");
	const struct sent *s = last_sent(CATS_T_ERROR, "IF-1");
	T_OK(s && strcmp(s->code, "limit-client") == 0 && s->txn == 83,
	    "with reason limit-client to the ingress");
	/* Another client of the same (default) tenant. */
	rc[0] = feed(t, 1000, J("{\"type\":\"path-rep\",\"txn\":84,\"ts\":1000,"
	    "\"status\":\"ok\",\"endpoint\":\"EF-2\",\"decision\":"
	    DECISION("B", "") ",\"flow\":{\"proto\":17,\"src\":\"192.0.2.11\","
	    "\"dst\":\"192.0.2.100\"},\"ingress\":\"IF-1\",\"deadline\":3000}"));
	rc[1] = feed(t, 1000, J("{\"type\":\"path-rep\",\"txn\":85,\"ts\":1000,"
	    "\"status\":\"ok\",\"endpoint\":\"EF-2\",\"decision\":"
	    DECISION("B", "") ",\"flow\":{\"proto\":17,\"src\":\"192.0.2.12\","
	    "\"dst\":\"192.0.2.100\"},\"ingress\":\"IF-1\",\"deadline\":3000}"));
	T_OK(rc[0] == BR_OK && rc[1] == BR_LIMIT_TENANT,
	    "tenant cap of 3: the fourth of the tenant fails (limit-tenant)");
	rc[0] = feed(t, 1000, J("{\"type\":\"path-rep\",\"txn\":86,\"ts\":1000,"
	    "\"status\":\"ok\",\"endpoint\":\"EF-2\",\"decision\":"
	    DECISION("B", "") ",\"flow\":{\"proto\":17,\"src\":\"192.0.2.13\","
	    "\"dst\":\"192.0.2.100\",\"tenant\":\"t2\"},\"ingress\":\"IF-1\","
	    "\"deadline\":3000}"));
	rc[1] = feed(t, 1000, J("{\"type\":\"path-rep\",\"txn\":87,\"ts\":1000,"
	    "\"status\":\"ok\",\"endpoint\":\"EF-2\",\"decision\":"
	    DECISION("B", "") ",\"flow\":{\"proto\":17,\"src\":\"192.0.2.14\","
	    "\"dst\":\"192.0.2.100\",\"tenant\":\"t2\"},\"ingress\":\"IF-1\","
	    "\"deadline\":3000}"));
	T_OK(rc[0] == BR_OK && rc[1] == BR_LIMIT_GLOBAL,
	    "global cap of 4: the fifth fails (limit-global)");
	T_OK(bind_counters(t)->fail[BR_LIMIT_CLIENT] == 1 &&
	    bind_counters(t)->fail[BR_LIMIT_TENANT] == 1 &&
	    bind_counters(t)->fail[BR_LIMIT_GLOBAL] == 1, "counted by reason");
	/* Pending: one transaction in flight per client. */
	rc[0] = feed(t, 1000, J("{\"type\":\"request\",\"txn\":88,\"ingress\":"
	    "\"IF-1\",\"ts\":1000,\"flow\":{\"proto\":6,\"src\":\"192.0.2.50\","
	    "\"sport\":1,\"dst\":\"192.0.2.100\"}}"));
	rc[1] = feed(t, 1000, J("{\"type\":\"request\",\"txn\":89,\"ingress\":"
	    "\"IF-1\",\"ts\":1000,\"flow\":{\"proto\":6,\"src\":\"192.0.2.50\","
	    "\"sport\":2,\"dst\":\"192.0.2.100\"}}"));
	T_OK(rc[0] == BR_OK && rc[1] == BR_LIMIT_CLIENT,
	    "client pending cap of 1: the second request fails closed");
	/* Freed capacity is usable again. */
	uint64_t first = 1;
	feed(t, 1001, status("IF-1", "expired", first, 1001));
	rc[0] = feed(t, 1002, rep_ok(90, 8102, 1002, "fc00:2::100", ""));
	T_OK(rc[0] == BR_OK, "a released binding frees the client's slot");
	check(t, "limits");
	bind_free(t);
}

/* ---- lifetimes in replay time ---- */

static void
test_lifetimes(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	/* idle_ms 10000, default grace = idle: cats-bind's backstop at 20 s. */
	uint64_t id = make_active(t, 91, 9100, 100000);
	bind_tick(t, 100000 + 19999);
	T_OK(state_of(t, id) == ACTIVE, "idle backstop not yet at 19.999 s");
	feed(t, 100000 + 15000, status("IF-1", "refreshed", id, 115000));
	bind_tick(t, 100000 + 20000);
	T_OK(state_of(t, id) == ACTIVE, "activity at 15 s moves it");
	bind_tick(t, 115000 + 20000);
	T_OK(state_of(t, id) == DRAINING && bind_counters(t)->expired_idle == 1,
	    "idle expiry at 15 s + 20 s: DRAINING");
	bind_tick(t, 135000 + 5000);
	T_OK(state_of(t, id) == ABSENT, "and ABSENT after the drain timeout");
	/* hard_ms 60000: expires even when busy. */
	id = make_active(t, 92, 9200, 200000);
	for (uint64_t s = 205000; s < 260000; s += 5000)
		feed(t, s, status("IF-1", "refreshed", id, s));
	T_OK(state_of(t, id) == ACTIVE, "busy for 59 s: active");
	bind_tick(t, 260000);
	T_OK(state_of(t, id) == DRAINING && bind_counters(t)->expired_hard == 1,
	    "hard expiry at 60 s regardless of activity");
	/* A jump of hours in replay time fires everything once. */
	id = make_active(t, 93, 9300, 300000);
	bind_tick(t, 300000 + 3600 * 1000);
	T_OK(state_of(t, id) == ABSENT || state_of(t, id) == DRAINING,
	    "a long jump of the clock expires it");
	check(t, "lifetimes");
	bind_free(t);
}

/* ---- shared paths, duplicate flows, re-sync ---- */

/* The markers (a hello status of the manager) sent to fwd. */
static size_t
markers_to(const char *fwd)
{
	size_t n = 0;
	for (size_t i = 0; i < nsent; i++)
		if (sent[i].type == CATS_T_STATUS && strcmp(sent[i].to, fwd) == 0)
			n++;
	return n;
}

/*
 * A re-sync of a table of many bindings goes in slices, the loop turning
 * between them (cats-bind: a restart restoring ~18k bindings sent them all
 * in the hello's turn, over a second of silence on every other channel;
 * a forwarder's --ctl-deadline closed it, and its re-sync began again).
 */
static void
test_resync_slices(void)
{
	enum { N = 4 * BIND_RESYNC_SLICE + 10 };
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	size_t made = 0;
	for (unsigned i = 0; i < N; i++)
		made += make_active(t, 20000 + i, 20000 + i, 1000) != 0;
	T_OK(made == N, "%zu of %d bindings active", made, N);
	bind_fwd_gone(t, "IF-1");
	bind_fwd_gone(t, "EF-2");
	bind_set_epoch(t, 2);
	reset_io();
	bind_fwd_hello(t, "IF-1", 3, 2000);
	T_OK(count_sent(CATS_T_BINDING, CATS_BIND_INSTALL, "IF-1") ==
	    BIND_RESYNC_SLICE && markers_to("IF-1") == 0 &&
	    bind_fwd_resync_pending(t), "the hello: one slice, no marker yet");
	bind_fwd_hello(t, "EF-2", 3, 2000);
	T_OK(count_sent(CATS_T_BINDING, CATS_BIND_INSTALL, "EF-2") ==
	    BIND_RESYNC_SLICE, "a second forwarder's hello: its own slice");
	/* A binding made meanwhile is sent by its making, not again. */
	uint64_t late = make_active(t, 30000, 30000, 2100);
	size_t turns = 0;
	while (bind_fwd_resync(t, BIND_RESYNC_SLICE, 2200))
		turns++;
	T_OK(turns == 3, "the rest in slices: %zu more turns", turns);
	T_OK(late != 0 && count_sent(CATS_T_BINDING, CATS_BIND_INSTALL,
	    "IF-1") == N + 1 && count_sent(CATS_T_BINDING, CATS_BIND_INSTALL,
	    "EF-2") == N + 1, "every binding once to each, the new one too");
	T_OK(markers_to("IF-1") == 1 && markers_to("EF-2") == 1 &&
	    last_sent(CATS_T_STATUS, "IF-1") > last_sent(CATS_T_BINDING,
	    "IF-1") && last_sent(CATS_T_STATUS, "EF-2") >
	    last_sent(CATS_T_BINDING, "EF-2"), "then each one's marker "
	    "(%zu, %zu)", markers_to("IF-1"), markers_to("EF-2"));
	/* A forwarder gone during its re-sync: it stops there. */
	bind_fwd_gone(t, "IF-1");
	reset_io();
	bind_fwd_hello(t, "IF-1", 4, 3000);
	bind_fwd_gone(t, "IF-1");
	T_OK(!bind_fwd_resync_pending(t) && !bind_fwd_resync(t, 1, 3000) &&
	    markers_to("IF-1") == 0, "gone: its re-sync ends, no marker");
	check(t, "resync_slices");
	bind_free(t);
}

static void
test_shared_and_resync(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	uint64_t a = make_active(t, 101, 10100, 1000);
	uint64_t b = make_active(t, 102, 10200, 1000);
	struct bind_info in;
	bind_get(t, a, &in);
	T_OK(in.path_refs == 2 && bind_counters(t)->paths == 1,
	    "two flows share one path (refs 2)");
	feed(t, 2000, status("IF-1", "expired", a, 2000));
	feed(t, 2000, status("EF-2", "removed", a, 2000));
	bind_get(t, b, &in);
	T_OK(state_of(t, a) == ABSENT && in.path_refs == 1 &&
	    bind_counters(t)->paths == 1, "one ended: the path is kept");
	/* A second transaction for a bound flow keeps the one binding. */
	reset_io();
	int rc = feed(t, 2100, rep_ok(103, 10200, 2100, "fc00:2::999", ""));
	T_OK(rc == BR_DUP_FLOW && count_sent(CATS_T_BINDING,
	    CATS_BIND_INSTALL, "IF-1") == 1 && last_sent(CATS_T_BINDING,
	    "IF-1")->id == b, "a second txn for a bound flow: its binding is "
	    "sent again, no new one");
	/* The ingress reconnects: every binding naming it, then the marker. */
	bind_fwd_gone(t, "IF-1");
	T_OK(!bind_fwd_connected(t, "IF-1"), "gone");
	bind_set_epoch(t, 2);
	reset_io();
	bind_fwd_hello(t, "IF-1", 7, 3000);
	T_OK(count_sent(CATS_T_BINDING, CATS_BIND_INSTALL, "IF-1") == 1 &&
	    last_sent(CATS_T_BINDING, "IF-1")->epoch == 2,
	    "re-sync: the active binding, with the current epoch");
	T_OK(nsent >= 2 && sent[nsent - 1].type == CATS_T_STATUS &&
	    sent[nsent - 1].epoch == 2, "then the end-of-sync marker");
	feed(t, 4000, status("IF-1", "expired", b, 4000));
	feed(t, 4000, status("EF-2", "removed", b, 4000));
	T_OK(bind_counters(t)->paths == 0 &&
	    bind_counters(t)->paths_released == 1,
	    "the path goes with its last binding");
	T_OK(bind_count(t) == 0 && bind_counters(t)->classes == 0 &&
	    bind_counters(t)->clients == 0, "nothing left behind");
	check(t, "shared_and_resync");
	bind_free(t);
}

/*
 * A 5-tuple reused after a RST: the ingress ended the binding and asks
 * again.  Its new reply may reach the manager before the ingress's expired
 * status of the old binding: the new transaction is a new binding, the old
 * one drains, and the late status ends only the old one.
 */
static void
test_reused_flow(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	bind_fwd_hello(t, "IF-1", 5, 1000);	/* its txns: 5000 and up */
	uint64_t a = make_active(t, 5001, 30000, 1000);
	T_OK(a != 0, "bound (txn 5001)");
	reset_io();
	int rc = feed(t, 1100, rep_ok(5002, 30000, 1100, "fc00:2::100", ""));
	uint64_t b = bind_next_id(t) - 1;
	T_OK(rc == BR_OK && b != a && state_of(t, a) == DRAINING,
	    "a new txn of the same run of the ingress: a new binding, the old "
	    "one drains (%s)", bind_reason_names[rc]);
	T_OK(count_sent(CATS_T_BINDING, CATS_BIND_REMOVE, "EF-2") == 1 &&
	    count_sent(CATS_T_BINDING, CATS_BIND_REMOVE, "IF-1") == 0 &&
	    count_sent(CATS_T_BINDING, CATS_BIND_INSTALL, "EF-2") == 1 &&
	    last_sent(CATS_T_BINDING, "EF-2")->id == b,
	    "the old one removed at the egress only, the new one sent there");
	feed(t, 1110, status("EF-2", "installed", b, 1110));
	feed(t, 1110, status("IF-1", "installed", b, 1110));
	feed(t, 1120, status("IF-1", "expired", a, 1090));
	feed(t, 1120, status("EF-2", "removed", a, 1120));
	T_OK(state_of(t, b) == ACTIVE && state_of(t, a) == ABSENT,
	    "the late expired status ends the old binding only");
	check(t, "reused flow");
	/* The ingress restarted: an earlier run's binding is kept. */
	bind_fwd_gone(t, "IF-1");
	bind_fwd_hello(t, "IF-1", 9, 2000);
	feed(t, 2000, status("IF-1", "installed", b, 2000));
	reset_io();
	rc = feed(t, 2100, rep_ok(9001, 30000, 2100, "fc00:2::100", ""));
	T_OK(rc == BR_DUP_FLOW && state_of(t, b) == ACTIVE &&
	    count_sent(CATS_T_BINDING, CATS_BIND_INSTALL, "IF-1") == 1 &&
	    last_sent(CATS_T_BINDING, "IF-1")->id == b,
	    "after a restart of the ingress: the flow keeps its binding");
	check(t, "reused flow after a restart");
	bind_free(t);
}

/* ---- restore from the journal, with a torn tail ---- */

struct dump {
	struct cats_buf b;
	size_t n;
};

static void
dump_one(void *arg, const struct cats_rec *r)
{
	struct dump *d = arg;
	struct cats_rec c = *r;
	c.u.binding.epoch = 0;	/* compared apart from the epoch */
	cats_rec_encode(&c, &d->b, false);
	d->n++;
}

/* Both tables hold the same bindings, record for record (epoch aside). */
static bool
same_tables(struct bind_table *a, struct bind_table *b, size_t *n)
{
	struct cats_buf x = { 0 }, y = { 0 };
	bool same = true;
	*n = 0;
	for (uint64_t id = 1; id < bind_next_id(a) || id < bind_next_id(b);
	    id++) {
		struct cats_rec ra, rb;
		struct bind_info in;
		if (bind_get(a, id, &in) == 0 && in.state != READY &&
		    in.state != ACTIVE)
			continue;	/* leaving: not established */
		int ga = bind_record(a, id, CATS_BIND_INSTALL, 0, &ra);
		int gb = bind_record(b, id, CATS_BIND_INSTALL, 0, &rb);
		if (ga != gb) {
			printf("# id %" PRIu64 " in one table only\n", id);
			same = false;
			continue;
		}
		if (ga < 0)
			continue;
		ra.u.binding.epoch = rb.u.binding.epoch = 0;
		x.len = y.len = 0;
		cats_rec_encode(&ra, &x, false);
		cats_rec_encode(&rb, &y, false);
		if (x.len != y.len || memcmp(x.p, y.p, x.len) != 0) {
			printf("# id %" PRIu64 " differs\n", id);
			same = false;
		}
		(*n)++;
	}
	cats_buf_free(&x);
	cats_buf_free(&y);
	return same;
}

static void
test_restore(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	uint64_t ids[20];
	for (int i = 0; i < 20; i++)
		ids[i] = make_active(t, 200 + (uint64_t)i, 20000 + (unsigned)i,
		    1000);
	feed(t, 2000, status("IF-1", "expired", ids[3], 2000));
	feed(t, 2000, status("IF-1", "path-down", ids[5], 2000));
	feed(t, 2100, rep_ok(205, 20005, 2100, "fc00:2::555", ""));
	feed(t, 2200, rep_ok(300, 30000, 2200, "fc00:2::100", ""));	/* READY */
	struct dump before = { { 0 }, 0 };
	bind_foreach(t, 1u << READY | 1u << ACTIVE, 0, dump_one, &before);
	T_OK(before.n == 20, "19 active + 1 ready");

	struct bind_conf c;
	bind_conf_default(&c);
	struct bind_table *r = bind_new(&c, NULL);
	struct bj_stats st;
	memset(&st, 0, sizeof(st));
	int last;
	size_t good = bj_replay(r, journal.p, journal.len, 5000, &st, &last,
	    NULL, NULL);
	struct dump after = { { 0 }, 0 };
	bind_foreach(r, 1u << READY | 1u << ACTIVE, 0, dump_one, &after);
	T_OK(good == journal.len && st.refused == 0, "whole journal replayed");
	size_t nsame = 0;
	bool same = same_tables(t, r, &nsame);
	T_OK(after.n == before.n && same && nsame == 20,
	    "restored table equals the original: destination, reverse tuple, "
	    "path reference, version (%zu bindings)", nsame);
	struct bind_info in;
	bind_get(r, ids[5], &in);
	T_OK(in.version == 2 && in.state == ACTIVE, "the repaired version");
	T_OK(bind_next_id(r) == bind_next_id(t), "ids continue");
	bind_free(r);

	/*
	 * The journal keeps each path's nodes: a restored table repairs the
	 * flows over a link that goes down, as the original would.  The
	 * bindings to the forwarders carry none.
	 */
	bool fwd_nodes = false, out_nodes = false;
	for (size_t i = 0; i < nsent; i++) {
		if (sent[i].type != CATS_T_BINDING || sent[i].op ==
		    CATS_BIND_REMOVE)
			continue;
		if (strcmp(sent[i].to, "-") == 0)
			out_nodes |= sent[i].npath == 3;
		else
			fwd_nodes |= sent[i].npath != 0;
	}
	T_OK(out_nodes && !fwd_nodes, "bindings name their nodes on the "
	    "output and in the journal, not to the forwarders");
	r = bind_new(&c, &io_nojournal);
	bind_set_epoch(r, 2);
	bj_replay(r, journal.p, journal.len, 5000, &st, &last, NULL, NULL);
	size_t n0 = nsent;
	feed(r, 5000, J("{\"type\":\"net\",\"scope\":\"link\",\"ts\":5000,"
	    "\"src\":\"P-1\",\"dst\":\"EF-2\",\"up\":false}"));
	size_t nreq = 0;
	for (size_t i = n0; i < nsent; i++)
		nreq += sent[i].type == CATS_T_PATH_REQ;
	T_OK(bind_counters(r)->net_repairs == 19 && nreq == 19,
	    "restored from the journal, a link of the path down repairs the "
	    "19 active flows over it (%" PRIu64 ")",
	    bind_counters(r)->net_repairs);
	check(r, "restored net repairs");
	bind_free(r);

	/* Torn tail: cut into the last record; it is dropped whole. */
	for (size_t cut = 1; cut < 40; cut += 7) {
		r = bind_new(&c, NULL);
		memset(&st, 0, sizeof(st));
		good = bj_replay(r, journal.p, journal.len - cut, 5000, &st,
		    &last, NULL, NULL);
		struct dump torn = { { 0 }, 0 };
		bind_foreach(r, 1u << READY | 1u << ACTIVE, 0, dump_one, &torn);
		bool ok = good < journal.len - cut && torn.n == 19 &&
		    bind_get(r, bind_next_id(t) - 1, &in) < 0;
		T_OK(ok, "torn tail (%zu bytes cut): dropped, the other 19 "
		    "bindings whole", cut);
		cats_buf_free(&torn.b);
		bind_free(r);
	}
	/* Garbage after the last record: dropped too. */
	struct cats_buf g = { 0 };
	cats_buf_add(&g, journal.p, journal.len);
	cats_buf_add(&g, "\0\0\0\0\xa3\x64type", 10);
	r = bind_new(&c, NULL);
	good = bj_replay(r, g.p, g.len, 5000, &st, &last, NULL, NULL);
	T_OK(good == journal.len && bind_count(r) == 20, "zeros at the tail "
	    "are not records: dropped");
	bind_free(r);
	cats_buf_free(&g);
	cats_buf_free(&before.b);
	cats_buf_free(&after.b);
	bind_free(t);
}

/* ---- the journal on disk ---- */

static char dir[200];

static void
rm_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char p[512];
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static struct bj *jr;

static void
io_journal_disk(void *arg, const struct cats_rec *r)
{
	(void)arg;
	bj_append(jr, r);
}

static void
test_journal_disk(void)
{
	char err[256];
	snprintf(dir, sizeof(dir), "/tmp/test_bind.%d", (int)getpid());
	rm_dir();
	struct bind_conf c;
	bind_conf_default(&c);
	struct bind_io dio = { io_send, io_journal_disk, NULL, NULL, NULL };
	uint64_t epochs[3];
	size_t counts[3];
	for (int run = 0; run < 3; run++) {
		jr = bj_open(dir, false, BJ_FSYNC_ALWAYS, err, sizeof(err));
		T_OK(jr != NULL, "open %s (%s)", dir, jr ? "" : err);
		if (jr == NULL)
			return;
		struct bj *other = bj_open(dir, false, BJ_FSYNC_ALWAYS, err,
		    sizeof(err));
		T_OK(other == NULL && strstr(err, "in use"),
		    "a second owner is refused: %s", err);
		struct bind_table *t = bind_new(&c, &dio);
		T_OK(bj_restore(jr, t, 1000, err, sizeof(err)) == 0,
		    "restore (%s)", err);
		T_OK(bj_start(jr, t, 1000, err, sizeof(err)) == 0, "start");
		epochs[run] = bind_epoch(t);
		counts[run] = bind_count(t);
		reset_io();
		for (int i = 0; i < 10; i++)
			make_active(t, 1000 * (uint64_t)(run + 1) + (uint64_t)i,
			    (unsigned)(run * 100 + i), 1000);
		bj_commit(jr);
		if (run == 1) {
			T_OK(bj_snapshot_async(jr, t, 1000, err, sizeof(err))
			    == 0, "snapshot in the background (%s)", err);
			/* The table goes on changing while the child writes. */
			make_active(t, 5000, 5000, 1000);
			bj_commit(jr);
			T_OK(bj_snapshot_wait(jr, true) == 0 &&
			    bj_stats(jr)->snapshots == 1, "the snapshot is done");
		}
		bj_close(jr);
		bind_free(t);
	}
	T_OK(epochs[0] == 1 && epochs[1] == 2 && epochs[2] == 3,
	    "the epoch grows on every restart (%" PRIu64 " %" PRIu64 " %"
	    PRIu64 ")", epochs[0], epochs[1], epochs[2]);
	T_OK(counts[0] == 0 && counts[1] == 10 && counts[2] == 21,
	    "each start restores what the last left (%zu %zu %zu)", counts[0],
	    counts[1], counts[2]);
	/* Tear the last segment; restore drops the tail and truncates it. */
	DIR *d = opendir(dir);
	struct dirent *de;
	char last[512] = "";
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "journal.", 8) == 0 &&
		    strcmp(de->d_name, last + strlen(dir) + (last[0] ? 1 : 0)) > 0)
			snprintf(last, sizeof(last), "%s/%s", dir, de->d_name);
	closedir(d);
	struct stat sb;
	stat(last, &sb);
	T_OK(truncate(last, sb.st_size - 5) == 0, "tear %s", last);
	jr = bj_open(dir, true, BJ_FSYNC_ALWAYS, err, sizeof(err));
	struct bind_table *t = bind_new(&c, NULL);
	bj_restore(jr, t, 1000, err, sizeof(err));
	struct bind_info in;
	T_OK(bj_stats(jr)->torn == 1 && bind_count(t) == 31 &&
	    bind_get(t, bind_next_id(t) - 1, &in) == 0 && in.state == READY &&
	    bind_counters(t)->state[ACTIVE] == 30,
	    "read-only restore: the torn record (the last commit) is dropped "
	    "whole: that binding is back as BINDING_READY, 30 ACTIVE");
	bj_close(jr);
	bind_free(t);
	jr = bj_open(dir, false, BJ_FSYNC_ALWAYS, err, sizeof(err));
	t = bind_new(&c, NULL);
	bj_restore(jr, t, 1000, err, sizeof(err));
	stat(last, &sb);
	off_t after = sb.st_size;
	bj_close(jr);
	bind_free(t);
	jr = bj_open(dir, false, BJ_FSYNC_ALWAYS, err, sizeof(err));
	t = bind_new(&c, NULL);
	bj_restore(jr, t, 1000, err, sizeof(err));
	T_OK(bj_stats(jr)->torn == 0 && bind_count(t) == 31,
	    "after the truncation (%lld bytes) the journal is clean",
	    (long long)after);
	bj_close(jr);
	bind_free(t);
	/* A corrupt snapshot is refused, not half-used. */
	char p[512];
	snprintf(p, sizeof(p), "%s/snapshot", dir);
	stat(p, &sb);
	T_OK(truncate(p, sb.st_size / 2) == 0, "cut the snapshot in half");
	jr = bj_open(dir, false, BJ_FSYNC_ALWAYS, err, sizeof(err));
	t = bind_new(&c, NULL);
	T_OK(bj_restore(jr, t, 1000, err, sizeof(err)) < 0 &&
	    strstr(err, "snapshot"), "a corrupt snapshot is refused: %s", err);
	bj_close(jr);
	bind_free(t);
	rm_dir();
}

/*
 * Under --fsync always a batch is synced when output waits for it, and
 * with it every record written before; a batch no output waits for (a
 * forwarder's status) is written, not synced, until then or the timer's
 * bj_want_sync.  Never syncs neither.
 */
static void
test_journal_sync_rule(void)
{
	char err[256];
	snprintf(dir, sizeof(dir), "/tmp/test_bind.%d", (int)getpid());
	rm_dir();
	struct bind_conf c;
	bind_conf_default(&c);
	struct bind_io dio = { io_send, io_journal_disk, NULL, NULL, NULL };
	for (int pol = 0; pol < 2; pol++) {
		jr = bj_open(dir, false, pol ? BJ_FSYNC_NEVER : BJ_FSYNC_ALWAYS,
		    err, sizeof(err));
		T_OK(jr != NULL, "open %s (%s)", dir, jr ? "" : err);
		if (jr == NULL)
			return;
		struct bind_table *t = bind_new(&c, &dio);
		bj_restore(jr, t, 1000, err, sizeof(err));
		bj_start(jr, t, 1000, err, sizeof(err));
		uint64_t s0 = bj_stats(jr)->fsyncs;
		make_active(t, 7000, 7000, 1000);
		/* No output waits: written, not synced. */
		int b = bj_commit_begin(jr, false);
		T_OK(b == 0 && bj_commit_end(jr, bj_commit_work(jr)) == 0 &&
		    bj_stats(jr)->fsyncs == s0 && bj_queued(jr) == 0,
		    "%s: a batch no output waits for is written, not synced "
		    "(begin %d, fsyncs %" PRIu64 ")", pol ? "never" : "always",
		    b, bj_stats(jr)->fsyncs - s0);
		/* Output waits, nothing new queued: no sync in its way (what
		 * covered it was synced with its own batch). */
		b = bj_commit_begin(jr, true);
		bj_commit_end(jr, bj_commit_work(jr));
		T_OK(b == 0 && bj_stats(jr)->fsyncs == s0,
		    "%s: a covering batch that writes nothing does not sync "
		    "(begin %d, fsyncs %" PRIu64 ")", pol ? "never" : "always",
		    b, bj_stats(jr)->fsyncs - s0);
		/* Output waits, a record queued: synced, with what was
		 * written before it. */
		make_active(t, 7001, 7001, 1000);
		b = bj_commit_begin(jr, true);
		bj_commit_end(jr, bj_commit_work(jr));
		T_OK(b == !pol && bj_stats(jr)->fsyncs == s0 + (pol ? 0 : 1),
		    "%s: a covering batch that writes (synced under always, "
		    "with what was written before it: begin %d, fsyncs %"
		    PRIu64 ")", pol ? "never" : "always", b,
		    bj_stats(jr)->fsyncs - s0);
		b = bj_commit_begin(jr, true);
		bj_commit_end(jr, bj_commit_work(jr));
		T_OK(b == 0 && bj_stats(jr)->fsyncs == s0 + (pol ? 0 : 1),
		    "%s: nothing written since: no sync", pol ? "never" :
		    "always");
		make_active(t, 7003, 7003, 1000);
		bj_commit(jr);	/* as bj_commit_begin(jr, true) */
		make_active(t, 7002, 7002, 1000);
		b = bj_commit_begin(jr, false);
		bj_commit_end(jr, bj_commit_work(jr));
		T_OK(b == 0 && bj_stats(jr)->fsyncs == s0 + (pol ? 0 : 2),
		    "%s: after a synced batch, one no output waits for is "
		    "written only", pol ? "never" : "always");
		bj_want_sync(jr);
		b = bj_commit_begin(jr, false);
		bj_commit_end(jr, bj_commit_work(jr));
		T_OK(b == !pol && bj_stats(jr)->fsyncs == s0 + (pol ? 0 : 3),
		    "%s: the timer's want_sync (synced under always: begin %d, "
		    "fsyncs %" PRIu64 ")", pol ? "never" :
		    "always", b, bj_stats(jr)->fsyncs - s0);
		bj_close(jr);
		bind_free(t);
		rm_dir();
	}
}

/* ---- clients, indexes and the journal read in blocks ---- */

/* An ok reply for a flow from src (either family) of tenant ("" none). */
static struct cats_rec *
rep_from(uint64_t txn, const char *src, unsigned sport, const char *tenant,
    uint64_t ts)
{
	bool v6 = strchr(src, ':') != NULL;
	char ten[64] = "";
	if (tenant[0])
		snprintf(ten, sizeof(ten), ",\"tenant\":\"%s\"", tenant);
	return J("{\"type\":\"path-rep\",\"txn\":%" PRIu64 ",\"ts\":%" PRIu64
	    ",\"status\":\"ok\",\"headend\":\"IF-1\",\"endpoint\":\"EF-2\","
	    "\"dataplane\":\"ip\",\"decision\":{\"cs_id\":\"S1\",\"csci_id\":"
	    "\"B\",\"locator\":\"%s\",\"egress\":\"EF-2\",\"ts\":%" PRIu64 "},"
	    "\"flow\":{\"proto\":6,\"src\":\"%s\",\"sport\":%u,\"dst\":\"%s\","
	    "\"dport\":443%s},\"ingress\":\"IF-1\"}", txn, ts,
	    v6 ? "2001:db8:5::21" : "198.51.100.21", ts, src, sport,
	    v6 ? "2001:db8:1::100" : "192.0.2.100", ten);
}

/*
 * Clients of both families and several tenants: the per-client limit
 * counts each (tenant, address) apart; flows come and go in random order
 * (index deletion, client counts that empty and fill again) and the
 * invariants, counts included, hold throughout.
 */
static void
test_clients(void)
{
	struct bind_conf c;
	bind_conf_default(&c);
	c.commit = BIND_COMMIT_NONE;
	c.client_bindings = 3;
	reset_io();
	struct bind_table *t = bind_new(&c, NULL);
	bind_set_epoch(t, 1);
	static const char *const srcs[] = { "10.0.0.1", "2001:db8:9::1",
		"0.0.0.0", "::" };
	uint64_t txn = 1;
	for (size_t k = 0; k < CATS_ARRAY_LEN(srcs); k++) {
		for (int ten = 0; ten < 2; ten++) {
			int ok = 0, rc = 0;
			for (unsigned i = 0; i < 4; i++)
				if ((rc = feed(t, 1000, rep_from(txn++, srcs[k],
				    1000 + i, ten ? "t1" : "", 1000))) == BR_OK)
					ok++;
			T_OK(ok == 3 && rc == BR_LIMIT_CLIENT, "%s%s: 3 bindings, "
			    "the 4th refused (%s)", srcs[k], ten ? " (t1)" : "",
			    bind_reason_names[rc]);
		}
	}
	T_OK(bind_counters(t)->clients == 2 * CATS_ARRAY_LEN(srcs),
	    "%" PRIu64 " clients counted", bind_counters(t)->clients);
	check(t, "limits per client and family");
	/* A flow again: refused as a duplicate, whatever its family. */
	T_OK(feed(t, 1000, rep_from(txn++, "2001:db8:9::1", 1000, "",
	    1000)) == BR_DUP_FLOW, "an IPv6 flow given twice is one flow");
	bind_free(t);

	/* Churn: 4000 flows of 600 clients, removed and made again. */
	c.client_bindings = 0;
	t = bind_new(&c, NULL);
	bind_set_epoch(t, 1);
	uint64_t rnd = 88172645463325252u, ids[4000] = { 0 };
	size_t live = 0, bad = 0;
	for (int round = 0; round < 3; round++) {
		for (unsigned i = 0; i < 4000; i++) {
			if (ids[i] != 0)
				continue;
			char src[48];
			unsigned cl = i % 600;
			if (cl % 3 == 0)
				snprintf(src, sizeof(src), "2001:db8:%x::%x",
				    cl / 256, cl % 256 + 1);
			else
				snprintf(src, sizeof(src), "10.1.%u.%u",
				    cl / 256, cl % 256);
			if (feed(t, 1000, rep_from(txn++, src, 2000 + i,
			    cl % 5 == 0 ? "t2" : "", 1000)) != BR_OK) {
				bad++;
				continue;
			}
			ids[i] = bind_next_id(t) - 1;
			live++;
		}
		check(t, "adding flows");
		for (unsigned i = 0; i < 4000; i++) {
			rnd ^= rnd << 13;
			rnd ^= rnd >> 7;
			rnd ^= rnd << 17;
			if (ids[i] == 0 || rnd % 3 == 0)
				continue;
			feed(t, 1000, status("IF-1", "removed", ids[i], 1000));
			if (state_of(t, ids[i]) != ABSENT)
				bad++;
			ids[i] = 0;
			live--;
		}
		check(t, "removing flows");
	}
	T_OK(bad == 0 && bind_count(t) == live, "%zu flows live, %zu failed",
	    live, bad);
	for (unsigned i = 0; i < 4000; i++)
		if (ids[i] != 0)
			feed(t, 1000, status("IF-1", "removed", ids[i], 1000));
	T_OK(bind_count(t) == 0 && bind_counters(t)->clients == 0,
	    "all gone, no client counted");
	check(t, "removing all");
	bind_free(t);
}

/*
 * A journal of several read blocks (4 MB each) restores as the whole file
 * replayed in memory does, also when a record lies across a block's end;
 * damage past the first block drops exactly what bj_replay() drops.  A
 * snapshot sizes the indexes from its trailer: to what growth gives.
 */
static void
test_journal_blocks(void)
{
	char err[256], path[512];
	snprintf(dir, sizeof(dir), "/tmp/test_bind.%d", (int)getpid());
	rm_dir();
	struct bind_conf c;
	bind_conf_default(&c);
	c.commit = BIND_COMMIT_NONE;
	c.client_bindings = c.client_pending = 0;
	struct bind_io dio = { NULL, io_journal_disk, NULL, NULL, NULL };
	jr = bj_open(dir, false, BJ_FSYNC_NEVER, err, sizeof(err));
	T_OK(jr != NULL, "open %s", dir);
	if (jr == NULL)
		return;
	struct bind_table *t = bind_new(&c, &dio);
	bj_restore(jr, t, 1000, err, sizeof(err));
	bj_start(jr, t, 1000, err, sizeof(err));
	int n = 22000;
	for (int i = 0; i < n; i++) {
		char src[32];
		snprintf(src, sizeof(src), "10.2.%d.%d", i / 250, i % 250);
		feed(t, 1000, rep_from((uint64_t)i + 1, src, 3000, "", 1000));
	}
	bj_close(jr);
	size_t made = bind_count(t), mem = bind_mem(t);
	bind_free(t);
	/* The one segment, whole, in memory. */
	DIR *d = opendir(dir);
	struct dirent *de;
	path[0] = '\0';
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "journal.", 8) == 0) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			struct stat sb;
			if (stat(path, &sb) == 0 && sb.st_size > 0)
				break;
		}
	closedir(d);
	struct stat sb;
	if (path[0] == '\0' || stat(path, &sb) < 0) {
		T_OK(0, "a journal segment in %s", dir);
		return;
	}
	size_t size = (size_t)sb.st_size;
	T_OK(size > (size_t)9 << 20, "a journal of %zu bytes, %zu bindings",
	    size, made);
	uint8_t *all = malloc(size);
	FILE *f = fopen(path, "rb");
	if (all == NULL || f == NULL || fread(all, 1, size, f) != size) {
		T_OK(0, "read %s", path);
		return;
	}
	fclose(f);
	for (int damage = 0; damage < 3; damage++) {
		/* 0: whole; 1: a byte across the first block; 2: the tail. */
		size_t at = damage == 1 ? ((size_t)4 << 20) + 3 : size - 40;
		uint8_t *copy = malloc(size);
		memcpy(copy, all, size);
		if (damage)
			copy[at] = 0xff;
		f = fopen(path, "wb");
		fwrite(copy, 1, size, f);
		fclose(f);
		struct bj_stats st;
		memset(&st, 0, sizeof(st));
		struct bind_table *a = bind_new(&c, NULL), *b = bind_new(&c,
		    NULL);
		int last;
		struct cats_err why;
		size_t good = bj_replay(a, copy, size, 1000, &st, &last, NULL,
		    &why);
		jr = bj_open(dir, true, BJ_FSYNC_NEVER, err, sizeof(err));
		bj_restore(jr, b, 1000, err, sizeof(err));
		const struct bj_stats *js = bj_stats(jr);
		T_OK(bind_count(a) == bind_count(b) && js->restored ==
		    st.restored && js->torn_bytes == size - good &&
		    (damage == 0) == (good == size) &&
		    (damage != 0 || bind_count(b) == made),
		    "damage %d: blocks restore %zu (torn %" PRIu64 " bytes), "
		    "the whole file %zu (%zu good bytes)", damage,
		    bind_count(b), js->torn_bytes, bind_count(a), good);
		check(b, "a restore in blocks");
		bj_close(jr);
		bind_free(a);
		bind_free(b);
		free(copy);
	}
	/* Put it back whole, snapshot it, restore from the snapshot. */
	f = fopen(path, "wb");
	fwrite(all, 1, size, f);
	fclose(f);
	free(all);
	jr = bj_open(dir, false, BJ_FSYNC_NEVER, err, sizeof(err));
	t = bind_new(&c, NULL);
	bj_restore(jr, t, 1000, err, sizeof(err));
	T_OK(bj_snapshot(jr, t, 1000, err, sizeof(err)) == 0, "snapshot (%s)",
	    err);
	bj_close(jr);
	bind_free(t);
	jr = bj_open(dir, false, BJ_FSYNC_NEVER, err, sizeof(err));
	t = bind_new(&c, NULL);
	int rc = bj_restore(jr, t, 1000, err, sizeof(err));
	size_t got = bind_count(t), gmem = bind_mem(t);
	T_OK(rc == 0 && got == made && gmem == mem, "from the snapshot: %zu "
	    "bindings in %zu bytes (grown one by one: %zu)", got, gmem, mem);
	check(t, "a restore from a snapshot");
	bj_close(jr);
	bind_free(t);
	rm_dir();

	/*
	 * A journal where most flows were removed again: the indexes sized
	 * for all it could hold are trimmed to the few that stay.
	 */
	jr = bj_open(dir, false, BJ_FSYNC_NEVER, err, sizeof(err));
	t = bind_new(&c, &dio);
	bj_restore(jr, t, 1000, err, sizeof(err));
	bj_start(jr, t, 1000, err, sizeof(err));
	for (int i = 0; i < 20000; i++) {
		char src[32];
		snprintf(src, sizeof(src), "10.3.%d.%d", i / 250, i % 250);
		feed(t, 1000, rep_from((uint64_t)i + 1, src, 3000, "", 1000));
	}
	for (uint64_t id = 1; id <= 16000; id++)
		feed(t, 1000, status("IF-1", "removed", id, 1000));
	bj_close(jr);
	size_t before = bind_mem(t), left = bind_count(t);
	bind_free(t);
	jr = bj_open(dir, false, BJ_FSYNC_NEVER, err, sizeof(err));
	t = bind_new(&c, NULL);
	rc = bj_restore(jr, t, 1000, err, sizeof(err));
	got = bind_count(t);
	gmem = bind_mem(t);
	T_OK(rc == 0 && got == left && left == 4000 && gmem < before,
	    "a journal of removals: %zu bindings in %zu bytes (the table that "
	    "wrote it: %zu)", got, gmem, before);
	check(t, "a restore of removals");
	bj_close(jr);
	bind_free(t);
	rm_dir();
}

static void
test_memory(void)
{
	struct bind_conf c;
	bind_conf_default(&c);
	c.commit = BIND_COMMIT_NONE;
	c.client_bindings = 0;
	c.client_pending = 0;
	reset_io();
	struct bind_table *t = bind_new(&c, NULL);
	size_t base = bind_mem(t);
	int n = 100000;
	for (int i = 0; i < n; i++) {
		char src[32];
		int cl = i / 16;	/* 16 flows per client */
		snprintf(src, sizeof(src), "10.%d.%d.%d", (cl >> 16) & 255,
		    (cl >> 8) & 255, cl & 255);
		feed(t, 1000, J("{\"type\":\"path-rep\",\"txn\":%d,\"ts\":1000,"
		    "\"status\":\"ok\",\"endpoint\":\"EF-2\",\"dataplane\":"
		    "\"srv6\",\"segments\":[{\"kind\":\"node\",\"sid\":"
		    "\"fc00:2::1\"}],\"decision\":" DECISION("B", "") ","
		    "\"flow\":{\"proto\":6,\"src\":\"%s\",\"sport\":%d,\"dst\":"
		    "\"192.0.2.100\",\"dport\":443},\"ingress\":\"IF-1\","
		    "\"deadline\":3000}", i + 1, src, 1024 + (i % 16)));
	}
	size_t per = (bind_mem(t) - base) / (size_t)n;
	T_OK(bind_count(t) == (size_t)n && bind_counters(t)->state[ACTIVE] ==
	    (uint64_t)n, "%d active bindings", n);
	T_OK(per <= 128, "%zu bytes per binding, forward and reverse, 16 "
	    "flows per client (goal 128)", per);
	bind_free(t);
}

/* ---- advertised capabilities (cats-fwd(1) CAPABILITIES) ---- */

static struct cats_rec *
caps_status(const char *fwd, const char *event, const char *caps,
    uint64_t ts)
{
	return J("{\"type\":\"status\",\"fwd\":\"%s\",\"event\":\"%s\","
	    "%s\"epoch\":1,\"ts\":%" PRIu64 ",\"caps\":[%s]}", fwd, event,
	    strcmp(event, "refreshed") == 0 ? "\"reason\":\"capabilities\"," :
	    "", ts, caps);
}

/* A path reply in data plane dp (srv6: one SID; ipip: an IPv6 endpoint),
 * the selection's data planes dps (a JSON array, or "" for none). */
static struct cats_rec *
rep_dp(uint64_t txn, unsigned sport, uint64_t ts, const char *dp,
    const char *dps)
{
	bool srv6 = strcmp(dp, "srv6") == 0;
	return J("{\"type\":\"path-rep\",\"txn\":%" PRIu64 ",\"ts\":%" PRIu64
	    ",\"status\":\"ok\",\"headend\":\"IF-1\",\"endpoint\":\"EF-2\","
	    "\"dataplane\":\"%s\",%s\"path\":[\"IF-1\",\"EF-2\"],"
	    "\"decision\":{\"cs_id\":\"S1\",\"csci_id\":\"B\",\"locator\":"
	    "\"198.51.100.21\",\"egress\":\"EF-2\",\"ts\":1000},"
	    "\"flow\":{\"proto\":6,\"src\":\"192.0.2.10\",\"sport\":%u,"
	    "\"dst\":\"192.0.2.100\",\"dport\":443},\"ingress\":\"IF-1\","
	    "%s%s%s\"deadline\":%" PRIu64 "}", txn, ts, dp, srv6 ?
	    "\"segments\":[{\"kind\":\"node\",\"node\":\"EF-2\",\"sid\":"
	    "\"fc00:2::100\"}]," : strcmp(dp, "ipip") == 0 ?
	    "\"endpoint_addr\":\"fc00:2::1\"," : "", sport,
	    dps[0] ? "\"dataplanes\":" : "", dps, dps[0] ? "," : "", ts + 2000);
}

/*
 * The egress in the data-plane choice: a path in a data plane the egress
 * does not advertise, where the selection allowed others, is asked again
 * once in the first both ends advertise; pinned (no dataplanes), or with
 * none in common, it is a path failure naming the egress.
 */
static void
test_caps_reask(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	const struct bind_counters *k = bind_counters(t);
	uint64_t now = 1000;
	feed(t, now, caps_status("IF-1", "hello", "\"ingress\",\"ip\","
	    "\"ipip6\",\"srv6\"", now));
	feed(t, now, caps_status("EF-2", "hello", "\"egress\",\"ip\","
	    "\"ipip6\"", now));
	size_t n0 = nsent;
	T_OK(feed(t, now, rep_dp(1, 2001, now, "srv6", "[\"srv6\",\"srmpls\","
	    "\"ipip\",\"ip\"]")) == BR_OK && k->caps_reasks == 1 &&
	    k->fail[BR_PATH_CAPABILITY] == 0, "reask: an SRv6 path to an "
	    "egress without SRv6 is asked again, not failed");
	const struct sent *q = last_sent(CATS_T_PATH_REQ, "-");
	T_OK(q != NULL && q > &sent[n0 - 1] && q->txn == 1 &&
	    strcmp(q->reason, "ipip") == 0 && q->code[0] == 0,
	    "reask: the path-req asks for ipip (the first both advertise; "
	    "srmpls neither has)");
	T_OK(last_sent(CATS_T_ERROR, "IF-1") == NULL ||
	    last_sent(CATS_T_ERROR, "IF-1") < &sent[n0],
	    "reask: the ingress is told nothing yet");
	T_OK(feed(t, now + 5, rep_dp(1, 2001, now + 5, "ipip", "[\"srv6\","
	    "\"srmpls\",\"ipip\",\"ip\"]")) == BR_OK && k->bound == 1,
	    "reask: the IP-in-IP answer binds");
	/* Pinned (no dataplanes in the reply): a path failure. */
	T_OK(feed(t, now, rep_dp(2, 2002, now, "srv6", "")) ==
	    BR_PATH_CAPABILITY && k->caps_reasks == 1,
	    "reask: a pinned data plane is not asked again");
	/* Asked again once: an answer in the same data plane fails. */
	T_OK(feed(t, now, rep_dp(3, 2003, now, "srv6", "[\"srv6\",\"ipip\"]"))
	    == BR_OK && k->caps_reasks == 2, "reask: asked again");
	T_OK(feed(t, now, rep_dp(3, 2003, now, "srv6", "[\"srv6\",\"ipip\"]"))
	    == BR_PATH_CAPABILITY && k->caps_reasks == 2,
	    "reask: once only; the second refusal is a path failure");
	const struct sent *e = last_sent(CATS_T_ERROR, "IF-1");
	T_OK(e != NULL && e->txn == 3 && strcmp(e->code, "path-capability")
	    == 0, "reask: the ingress is told path-capability");
	/* Nothing in common among the choices: a path failure at once. */
	T_OK(feed(t, now, rep_dp(4, 2004, now, "srv6", "[\"srv6\",\"srmpls\"]"))
	    == BR_PATH_CAPABILITY && k->caps_reasks == 2,
	    "reask: no data plane in common is a path failure");
	check(t, "reask");
	bind_free(t);
}

static void
test_caps(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	const struct bind_counters *k = bind_counters(t);
	uint64_t now = 1000;
	T_OK(feed(t, now, caps_status("IF-1", "hello", "\"ingress\",\"ip\","
	    "\"srv6\",\"srv6-msd=1\"", now)) == BR_OK, "caps: a hello with "
	    "capabilities is taken");
	feed(t, now, caps_status("EF-2", "hello", "\"egress\",\"ip\",\"srv6\"",
	    now));
	/* Two SIDs, the headend pushes one: a path failure. */
	T_OK(feed(t, now, rep_ok(1, 1000, now, "fc00:2::100", "")) ==
	    BR_PATH_CAPABILITY && k->fail[BR_PATH_CAPABILITY] == 1,
	    "caps: more SIDs than the headend's MSD is a path failure");
	const struct sent *e = last_sent(CATS_T_ERROR, "IF-1");
	T_OK(e != NULL && strcmp(e->code, "path-capability") == 0 &&
	    e->txn == 1, "caps: the ingress is told path-capability");
	/* Refreshed, no id: the new capabilities count from now. */
	T_OK(feed(t, now, caps_status("IF-1", "refreshed", "\"ingress\","
	    "\"ip\",\"srv6\",\"srv6-msd=8\"", now)) == BR_OK &&
	    k->caps_updates == 1, "caps: refreshed with capabilities and no "
	    "id is taken");
	T_OK(feed(t, now, rep_ok(2, 1001, now, "fc00:2::100", "")) == BR_OK &&
	    k->bound == 1, "caps: within the new MSD the path binds");
	/* SRv6 no longer advertised by the headend, then by the egress. */
	feed(t, now, caps_status("IF-1", "refreshed", "\"ingress\",\"ip\","
	    "\"ipip4\"", now));
	T_OK(feed(t, now, rep_ok(3, 1002, now, "fc00:2::100", "")) ==
	    BR_PATH_CAPABILITY, "caps: a data plane the headend does not "
	    "advertise is a path failure");
	feed(t, now, caps_status("IF-1", "refreshed", "\"ingress\",\"srv6\"",
	    now));
	feed(t, now, caps_status("EF-2", "refreshed", "\"egress\",\"ip\"",
	    now));
	T_OK(feed(t, now, rep_ok(4, 1003, now, "fc00:2::100", "")) ==
	    BR_PATH_CAPABILITY && k->fail[BR_PATH_CAPABILITY] == 3,
	    "caps: nor one the egress does not advertise");
	/* Refused: a refreshed without id or caps; caps of a stranger. */
	T_OK(feed(t, now, J("{\"type\":\"status\",\"fwd\":\"IF-1\",\"event\":"
	    "\"refreshed\",\"ts\":1000}")) == BR_UNKNOWN_BINDING,
	    "caps: a refreshed without id nor caps is refused");
	T_OK(feed(t, now, caps_status("X-9", "refreshed", "\"ip\"", now)) ==
	    BR_NOT_OWNER, "caps: capabilities of an unconnected forwarder "
	    "are refused");
	/* A forwarder that cannot install what it got: path-capability. */
	feed(t, now, caps_status("EF-2", "refreshed", "\"egress\",\"srv6\"",
	    now));
	uint64_t id = make_active(t, 5, 1004, now);
	T_OK(id != 0, "caps: bound again once both advertise srv6");
	feed(t, now, J("{\"type\":\"status\",\"fwd\":\"IF-1\",\"event\":"
	    "\"failed\",\"id\":%" PRIu64 ",\"ts\":1000,\"reason\":"
	    "\"unsupported-encap\"}", id));
	T_OK(state_of(t, id) == FAILED && k->fail[BR_PATH_CAPABILITY] == 4,
	    "caps: unsupported-encap from a forwarder is a path-capability "
	    "failure");
	/* A repair asks for a path the headend can push. */
	feed(t, now, caps_status("IF-1", "refreshed", "\"ingress\",\"srv6\","
	    "\"srv6-msd=8\"", now));
	uint64_t id2 = make_active(t, 6, 1005, now);
	feed(t, now, status("IF-1", "path-down", id2, now));
	const struct sent *q = last_sent(CATS_T_PATH_REQ, "-");
	T_OK(id2 != 0 && q != NULL && q->txn == 6 && q->msd == 8 &&
	    q->code[0] == 0, "caps: a repair's path-req carries the headend's "
	    "MSD (8)");
	check(t, "capabilities");
	bind_free(t);

	/* --dataplanes overrides the advertised data planes, not the MSD. */
	struct bind_conf c;
	bind_conf_default(&c);
	char err[64];
	T_OK(bind_conf_dataplanes("srv6", &c.dataplanes, err, sizeof(err)) ==
	    0, "caps: --dataplanes srv6");
	reset_io();
	t = bind_new(&c, &io);
	bind_set_epoch(t, 1);
	feed(t, now, caps_status("IF-1", "hello", "\"ingress\",\"ip\"", now));
	feed(t, now, caps_status("EF-2", "hello", "\"egress\",\"ip\"", now));
	T_OK(feed(t, now, rep_ok(1, 1000, now, "fc00:2::100", "")) == BR_OK,
	    "caps: --dataplanes stands for the advertised data planes");
	bind_free(t);
}

/* ---- fallback bindings (cats-fwd(1) FALLBACK) ---- */

static struct cats_rec *
fb_binding(uint64_t id, unsigned sport, const char *locator)
{
	return J("{\"type\":\"binding\",\"id\":%" PRIu64 ",\"version\":1,"
	    "\"epoch\":1,\"op\":\"install\",\"ts\":2000,\"txn\":%" PRIu64 ","
	    "\"ingress\":\"IF-1\",\"egress\":\"EF-2\",\"cs_id\":\"S1\","
	    "\"reason\":\"fallback\",\"idle_ms\":10000,\"fwd\":{\"match\":"
	    "{\"proto\":6,\"src\":\"192.0.2.10\",\"sport\":%u,\"dst\":"
	    "\"192.0.2.100\",\"dport\":443},\"locator\":\"%s\",\"encap\":"
	    "\"srv6\",\"sids\":[\"fc00:1::1\",\"fc00:2::100\"],\"egress\":"
	    "\"EF-2\"},\"rev\":{\"match\":{\"proto\":6,\"src\":\"%s\","
	    "\"sport\":443,\"dst\":\"192.0.2.10\",\"dport\":%u},"
	    "\"restore_src\":\"192.0.2.100\",\"owner\":\"IF-1\"}}", id, id - 1,
	    sport, locator, locator, sport);
}

static void
test_fallback(void)
{
	struct bind_table *t = table(BIND_COMMIT_BOTH);
	const struct bind_counters *k = bind_counters(t);
	uint64_t now = 2000, fb = BIND_FALLBACK_ID + 1;
	uint64_t id = make_active(t, 1, 1000, now);
	T_OK(id != 0, "fallback: a binding of the manager names instance B");
	reset_io();
	/* Same instance: adopted, sent as the manager's own binding. */
	T_OK(bind_fwd_binding(t, "IF-1", &fb_binding(fb, 2000,
	    "198.51.100.21")->u.binding, now) == BR_OK &&
	    k->fallback_adopted == 1, "fallback: a binding to a known "
	    "instance is adopted");
	const struct sent *s = last_sent(CATS_T_BINDING, "EF-2");
	T_OK(s != NULL && s->op == CATS_BIND_INSTALL && s->id > id &&
	    s->id < BIND_FALLBACK_ID && s->code[0] == 0, "fallback: its "
	    "binding goes to the egress first, with an id of the manager");
	uint64_t nid = s ? s->id : 0;
	struct bind_info in;
	T_OK(bind_get(t, nid, &in) == 0 && strcmp(in.csci_id, "B") == 0 &&
	    in.nsegs == 2, "fallback: the adopted binding names the instance "
	    "and the path");
	feed(t, now, status("EF-2", "installed", nid, now));
	feed(t, now, status("IF-1", "installed", nid, now));
	T_OK(state_of(t, nid) == ACTIVE, "fallback: adopted, then ACTIVE");
	/* The ingress reports the fallback binding gone: counted, no more. */
	T_OK(feed(t, now, J("{\"type\":\"status\",\"fwd\":\"IF-1\",\"event\":"
	    "\"expired\",\"id\":%" PRIu64 ",\"ts\":2000,\"reason\":"
	    "\"fallback-adopted\"}", fb)) == BR_OK && k->fallback_status == 1,
	    "fallback: the status of a fallback id is not an unknown binding");
	/* An instance no binding of the manager names: ended. */
	reset_io();
	T_OK(bind_fwd_binding(t, "IF-1", &fb_binding(fb + 1, 2001,
	    "198.51.100.99")->u.binding, now) == BR_OK &&
	    k->fallback_ended == 1, "fallback: an unknown instance is ended");
	s = last_sent(CATS_T_BINDING, "IF-1");
	T_OK(s != NULL && s->op == CATS_BIND_REMOVE && s->id == fb + 1 &&
	    strcmp(s->reason, "fallback-ended") == 0 && s->code[0] == 0,
	    "fallback: ended by a remove of its id to the ingress");
	/* The same flow as an adopted one: already the manager's. */
	reset_io();
	bind_fwd_binding(t, "IF-1", &fb_binding(fb + 2, 2000,
	    "198.51.100.21")->u.binding, now);
	T_OK(k->fallback_adopted == 1 && k->fallback_ended == 1 &&
	    count_sent(CATS_T_BINDING, CATS_BIND_INSTALL, "IF-1") == 1,
	    "fallback: a flow the manager bound gets the manager's binding");
	/* Refused: not the reporter's, not a fallback id. */
	T_OK(bind_fwd_binding(t, "EF-2", &fb_binding(fb + 3, 2003,
	    "198.51.100.21")->u.binding, now) == BR_NOT_OWNER,
	    "fallback: a binding of another ingress is refused");
	T_OK(bind_fwd_binding(t, "IF-1", &fb_binding(5, 2004,
	    "198.51.100.21")->u.binding, now) == BR_BAD,
	    "fallback: an id below 2^52 is refused");
	/* A path the headend cannot do: ended, with the reason. */
	feed(t, now, caps_status("IF-1", "refreshed", "\"ingress\",\"ip\"",
	    now));
	reset_io();
	bind_fwd_binding(t, "IF-1", &fb_binding(fb + 4, 2005,
	    "198.51.100.21")->u.binding, now);
	T_OK(k->fallback_ended == 2 && k->fail[BR_PATH_CAPABILITY] == 1,
	    "fallback: a path the headend no longer advertises is ended");
	/* The adopted binding took the manager's path: its nodes with it. */
	reset_io();
	feed(t, 2100, J("{\"type\":\"net\",\"scope\":\"link\",\"ts\":2100,"
	    "\"src\":\"P-1\",\"dst\":\"EF-2\",\"up\":false}"));
	T_OK(k->net_repairs == 2 && count_sent(CATS_T_PATH_REQ, -1, "-") == 2,
	    "fallback: a link of the path down repairs the adopted flow too "
	    "(%" PRIu64 " repairs)", k->net_repairs);
	check(t, "fallback");
	bind_free(t);
}

int
main(void)
{
	cats_crypto_init();
	cats_dec_init(&dec, NULL);
	test_edges();
	test_conf_and_input();
	test_absent_pending_ds();
	test_net_repair();
	test_repair_unreachable();
	test_ready_active_both();
	test_commit_ingress_and_none();
	test_failures_before_active();
	test_active_edges();
	test_illegal();
	test_status_matrix();
	test_late_reply();
	test_join();
	test_limits();
	test_lifetimes();
	test_shared_and_resync();
	test_resync_slices();
	test_reused_flow();
	test_restore();
	test_journal_disk();
	test_journal_sync_rule();
	test_clients();
	test_journal_blocks();
	test_memory();
	test_caps();
	test_caps_reask();
	test_fallback();
	cats_dec_free(&dec);
	cats_buf_free(&journal);
	return t_done();
}
