/*
 * test_fwd.c - the flow and binding table: pending records and their
 * limits, bindings (install, refresh, remove), epochs and fencing, idle and
 * hard expiry with the time passed in (replay style, no sleeps).
 */
#include <string.h>

#include "fwd/fallback.h"
#include "fwd/fwd.h"
#include "rec/json.h"
#include "t.h"

static struct cats_dec dec;

/* A binding record from JSON (through the one decoder). */
static const struct cats_binding *
bind_json(const char *text)
{
	static struct cats_rec r;
	json_error_t je;
	struct cats_err e;
	json_t *j = json_loads(text, 0, &je);
	if (j == NULL || cats_rec_from_json(&dec, j, &r, &e) < 0) {
		printf("# bad fixture: %s %s %s\n", j ? e.field : je.text,
		    j ? e.reason : "", text);
		json_decref(j);
		return NULL;
	}
	json_decref(j);
	return &r.u.binding;
}

static char jb[2048];

static const struct cats_binding *
mkbind(uint64_t id, uint64_t version, uint64_t epoch, const char *op,
    int sport, const char *loc, const char *extra)
{
	snprintf(jb, sizeof(jb),
	    "{\"type\":\"binding\",\"id\":%llu,\"version\":%llu,\"epoch\":%llu,"
	    "\"op\":\"%s\",\"ts\":1,\"txn\":%llu,\"ingress\":\"IF-1\","
	    "\"egress\":\"EF-2\","
	    "\"fwd\":{\"match\":{\"proto\":6,\"src\":\"192.0.2.10\",\"sport\":%d,"
	    "\"dst\":\"203.0.113.100\",\"dport\":80},\"locator\":\"%s\","
	    "\"encap\":\"srv6\",\"sids\":[\"2001:db8:2::100\"]},"
	    "\"rev\":{\"match\":{\"proto\":6,\"src\":\"%s\",\"sport\":80,"
	    "\"dst\":\"192.0.2.10\",\"dport\":%d},\"restore_src\":\"203.0.113.100\","
	    "\"restore_port\":80,\"sids\":[\"2001:db8:1::1\"]}%s}",
	    (unsigned long long)id, (unsigned long long)version,
	    (unsigned long long)epoch, op, (unsigned long long)(id + 1000),
	    sport, loc, loc, sport, extra ? extra : "");
	return bind_json(jb);
}

static void
key4(struct cats_fkey *k, int sport)
{
	struct cats_flow f;
	memset(&f, 0, sizeof(f));
	f.proto = 6;
	cats_ip_parse("192.0.2.10", 10, &f.src);
	cats_ip_parse("203.0.113.100", 13, &f.dst);
	CATS_SET(&f, FLOW, sport, (uint64_t)sport);
	CATS_SET(&f, FLOW, dport, 80);
	cats_fkey_from_flow(k, &f, CATS_DIR_IN_FWD);
}

static int npend_cb, nbind_cb;
static char last_why[32];

static void
pend_cb(struct cats_pend *p, void *arg)
{
	struct cats_fwd *t = arg;
	npend_cb++;
	cats_fwd_held_free(t, cats_fwd_pend_take(t, p));
}

static void
bind_cb(struct cats_fbind *b, const char *why, void *arg)
{
	(void)b;
	(void)arg;
	nbind_cb++;
	cats_strlcpy(last_why, why, sizeof(last_why));
}

static void
test_pending(void)
{
	struct cats_fwd t;
	struct cats_fwd_conf c = { .id = "IF-1", .pend_pkts_flow = 3,
		.pend_pkts = 10, .pend_flows = 4, .pend_client = 3,
		.pend_ms = 500, .has_src6 = true };
	T_OK(cats_fwd_init(&t, &c) == 0, "init");
	struct cats_fkey k;
	struct cats_pend *p, *p2;
	uint8_t pkt[60] = { 0x45 };
	key4(&k, 1000);
	int rc = cats_fwd_hold(&t, &k, pkt, 60, 0, 100, &p);
	T_OK(rc == CATS_PEND_NEW && p->txn > 0, "first packet: new pending record");
	uint64_t txn = p->txn;
	T_OK(cats_fwd_hold(&t, &k, pkt, 60, 0, 110, &p2) == CATS_PEND_JOINED &&
	    p2 == p, "second packet joins (no second selection)");
	cats_fwd_hold(&t, &k, pkt, 60, 0, 120, &p2);
	T_OK(cats_fwd_hold(&t, &k, pkt, 60, 0, 130, &p2) ==
	    -CATS_FR_PEND_FLOW_FULL && p->npkts == 3,
	    "fourth packet over the per-flow limit");
	/* Per-client limit: same source, other ports. */
	key4(&k, 1001);
	cats_fwd_hold(&t, &k, pkt, 60, 0, 140, &p2);
	key4(&k, 1002);
	cats_fwd_hold(&t, &k, pkt, 60, 0, 140, &p2);
	key4(&k, 1003);
	T_OK(cats_fwd_hold(&t, &k, pkt, 60, 0, 140, &p2) ==
	    -CATS_FR_PEND_CLIENT_FULL, "per-client limit");
	T_OK(t.st.pending == 3 && t.st.held == 5, "3 pending, 5 held");
	/* Expiry at the deadline, driven by now. */
	npend_cb = 0;
	cats_fwd_expire(&t, 599, pend_cb, bind_cb, &t);
	T_OK(npend_cb == 0, "nothing expires before the deadline");
	cats_fwd_expire(&t, 600, pend_cb, bind_cb, &t);
	T_OK(npend_cb == 1 && t.st.pending == 2 && t.st.held == 2,
	    "the first record expires at created + pend_ms");
	/* An error record ends a pending record by txn or by flow. */
	key4(&k, 1000);
	T_OK(cats_fwd_hold(&t, &k, pkt, 60, 0, 700, &p) == CATS_PEND_NEW &&
	    p->txn != txn, "a new record after expiry gets a new txn");
	struct cats_error e;
	memset(&e, 0, sizeof(e));
	CATS_SET(&e, ERR, txn, p->txn);
	T_OK(cats_fwd_error(&t, &e) == p, "error finds the record by txn");
	cats_fwd_held_free(&t, cats_fwd_pend_take(&t, p));
	cats_fwd_free(&t);
}

static void
test_bindings(void)
{
	struct cats_fwd t;
	struct cats_fwd_conf c = { .id = "IF-1", .has_src6 = true };
	cats_fwd_init(&t, &c);
	struct cats_fkey k;
	struct cats_pend *p;
	struct cats_fbind *b = NULL;
	struct cats_held *rel = NULL;
	int ev;
	uint8_t pkt[60] = { 0x45 };
	key4(&k, 2000);
	cats_fwd_hold(&t, &k, pkt, 60, 0, 1000, &p);
	cats_fwd_hold(&t, &k, pkt, 40, 0, 1001, &p);
	const struct cats_binding *r = mkbind(1, 1, 5, "install", 2000,
	    "198.51.100.21", ",\"idle_ms\":3000,\"hard_ms\":10000");
	T_OK(r != NULL && cats_fwd_apply(&t, r, 1002, &b, &rel, &ev) == 0 &&
	    ev == CATS_EV_INSTALLED, "install");
	T_OK(rel != NULL && rel->len == 60 && rel->next != NULL &&
	    rel->next->len == 40 && rel->next->next == NULL &&
	    t.st.pending == 0, "held packets released in order");
	cats_fwd_held_free(&t, rel);
	T_OK(cats_fwd_lookup(&t, &k) == b && b->ingress && !b->egress &&
	    b->enc.kind == CATS_ENC_SRV6 && b->enc.nsids == 1,
	    "forward state: ingress role, SRv6");
	struct cats_fkey rk = b->keys[CATS_DIR_IN_REV];
	T_OK(cats_fwd_lookup(&t, &rk) == b && b->restore_port == 80,
	    "reverse state installed with the forward state");
	/* Refresh: same epoch, higher version. */
	r = mkbind(1, 2, 5, "refresh", 2000, "198.51.100.21",
	    ",\"idle_ms\":3000,\"hard_ms\":10000");
	T_OK(cats_fwd_apply(&t, r, 1500, &b, &rel, &ev) == 0 &&
	    ev == CATS_EV_REFRESHED && b->version == 2, "refresh");
	r = mkbind(1, 1, 5, "refresh", 2000, "198.51.100.21", NULL);
	T_OK(cats_fwd_apply(&t, r, 1500, &b, &rel, &ev) ==
	    CATS_FR_STALE_VERSION, "older version refused");
	/* Another binding for the same flow is refused. */
	r = mkbind(2, 1, 5, "install", 2000, "198.51.100.11", NULL);
	T_OK(cats_fwd_apply(&t, r, 1500, &b, &rel, &ev) == CATS_FR_FLOW_BOUND,
	    "a second binding for a bound flow is refused");
	/* A newer epoch fences older ones. */
	r = mkbind(3, 1, 6, "install", 2001, "198.51.100.11", NULL);
	T_OK(cats_fwd_apply(&t, r, 1600, &b, &rel, &ev) == 0, "epoch 6");
	r = mkbind(4, 1, 5, "install", 2002, "198.51.100.11", NULL);
	T_OK(cats_fwd_apply(&t, r, 1600, &b, &rel, &ev) == CATS_FR_FENCED,
	    "epoch 5 fenced after epoch 6");
	T_OK(cats_fwd_by_id(&t, 1) != NULL,
	    "bindings of the old epoch stay until refreshed or expired");
	/* Not for this forwarder. */
	r = mkbind(5, 1, 6, "install", 2003, "198.51.100.11", NULL);
	struct cats_binding other = *r;
	other.ingress = "IF-9";
	other.egress = "EF-9";
	other.fwd.egress = NULL;
	T_OK(cats_fwd_apply(&t, &other, 1600, &b, &rel, &ev) ==
	    CATS_FR_NOT_MINE, "a binding for other forwarders is refused");
	/* Idle and hard expiry, driven by now. */
	key4(&k, 2000);
	b = cats_fwd_lookup(&t, &k);
	cats_fbind_count(b, 0, 100, 4000);
	nbind_cb = 0;
	cats_fwd_expire(&t, 6999, pend_cb, bind_cb, &t);
	T_OK(nbind_cb == 0, "used at 4000: alive at 6999");
	cats_fwd_expire(&t, 7000, pend_cb, bind_cb, &t);
	T_OK(nbind_cb == 1 && strcmp(last_why, "idle") == 0 &&
	    cats_fwd_lookup(&t, &k) == NULL &&
	    cats_fwd_lookup(&t, &rk) == NULL,
	    "idle expiry at last + idle_ms removes both directions");
	r = mkbind(6, 1, 6, "install", 2004, "198.51.100.11",
	    ",\"hard_ms\":1000");
	cats_fwd_apply(&t, r, 8000, &b, &rel, &ev);
	for (uint64_t now = 8100; now < 9000; now += 100)
		cats_fbind_count(b, 0, 1, now);
	nbind_cb = 0;
	cats_fwd_expire(&t, 9000, pend_cb, bind_cb, &t);
	T_OK(nbind_cb == 1 && strcmp(last_why, "hard") == 0,
	    "hard lifetime ends a busy binding");
	/* Remove. */
	r = mkbind(3, 2, 6, "remove", 2001, "198.51.100.11", NULL);
	T_OK(cats_fwd_apply(&t, r, 9100, &b, &rel, &ev) == 0 &&
	    ev == CATS_EV_REMOVED && b->id == 3, "remove");
	cats_fwd_remove(&t, b);
	T_OK(cats_fwd_by_id(&t, 3) == NULL, "gone");
	struct cats_rec sr;
	r = mkbind(7, 1, 6, "install", 2005, "198.51.100.11", NULL);
	cats_fwd_apply(&t, r, 9200, &b, &rel, &ev);
	cats_fwd_status(&t, b, CATS_EV_INSTALLED, NULL, 9200, &sr);
	struct cats_err e;
	T_OK(cats_rec_validate(&sr, &e) == 0 && sr.u.status.id == 7 &&
	    sr.u.status.epoch == 6, "status record valid");
	cats_fwd_free(&t);
}

static void
test_egress_and_affinity(void)
{
	struct cats_fwd t;
	struct cats_fwd_conf c = { .id = "EF-2", .has_src6 = true };
	cats_fwd_init(&t, &c);
	struct cats_fbind *b = NULL;
	struct cats_held *rel;
	int ev;
	/* Egress role, no reverse SIDs: the return tunnel is learned. */
	const struct cats_binding *r = bind_json(
	    "{\"type\":\"binding\",\"id\":9,\"version\":1,\"epoch\":1,"
	    "\"op\":\"install\",\"ts\":1,\"ingress\":\"IF-1\",\"egress\":\"EF-2\","
	    "\"fwd\":{\"match\":{\"proto\":17,\"src\":\"192.0.2.10\","
	    "\"dst\":\"203.0.113.100\",\"dport\":53},\"locator\":\"198.51.100.21\","
	    "\"port\":5353,\"encap\":\"srv6\",\"sids\":[\"2001:db8:2::100\"]},"
	    "\"rev\":{\"match\":{\"proto\":17,\"src\":\"198.51.100.21\","
	    "\"sport\":5353,\"dst\":\"192.0.2.10\"},"
	    "\"restore_src\":\"203.0.113.100\",\"restore_port\":53}}");
	T_OK(r != NULL && cats_fwd_apply(&t, r, 1, &b, &rel, &ev) == 0 &&
	    b->egress && !b->ingress && b->renc_learn, "egress binding");
	/* Nothing learned yet: the return path is unknown (not an SRv6
	 * encapsulation without segments). */
	T_OK(b->renc.kind == CATS_ENC_SRV6 && b->renc.nsids == 0 &&
	    b->renc.outer_af == 0, "return tunnel not known before learning");
	struct cats_fkey k;
	memset(&k, 0, sizeof(k));
	k.af = 4;
	k.proto = 17;
	k.dir = CATS_DIR_EG_FWD;
	k.sport = 40000;
	k.dport = 5353;
	struct cats_ip a;
	cats_ip_parse("192.0.2.10", 10, &a);
	memcpy(k.src, a.a, 4);
	cats_ip_parse("198.51.100.21", 13, &a);
	memcpy(k.dst, a.a, 4);
	T_OK(cats_fwd_lookup(&t, &k) == b,
	    "any client port (client affinity) at the rewritten destination");
	k.dport = 53;
	T_OK(cats_fwd_lookup(&t, &k) == NULL,
	    "the original port does not match at the egress");
	cats_fwd_free(&t);
}

/* A configured return tunnel toward the owner needs no learning. */
static void
test_return_tunnel(void)
{
	struct cats_fwd t;
	struct cats_fwd_ret ret[1] = { { .id = "IF-1" } };
	cats_ip_parse("2001:db8:1::1", 13, &ret[0].addr);
	struct cats_fwd_conf c = { .id = "EF-2", .has_src6 = true,
		.ret = ret, .nret = 1 };
	c.src6[15] = 2;
	cats_fwd_init(&t, &c);
	struct cats_fbind *b = NULL;
	struct cats_held *rel;
	int ev;
	const char *fmt =
	    "{\"type\":\"binding\",\"id\":%d,\"version\":1,\"epoch\":1,"
	    "\"op\":\"install\",\"ts\":1,\"ingress\":\"%s\",\"egress\":\"EF-2\","
	    "\"fwd\":{\"match\":{\"proto\":6,\"src\":\"192.0.2.10\",\"sport\":%d,"
	    "\"dst\":\"203.0.113.100\",\"dport\":80},\"locator\":\"198.51.100.21\","
	    "\"encap\":\"srv6\",\"sids\":[\"2001:db8:2::100\"]},"
	    "\"rev\":{\"match\":{\"proto\":6,\"src\":\"198.51.100.21\","
	    "\"sport\":80,\"dst\":\"192.0.2.10\",\"dport\":%d},"
	    "\"restore_src\":\"203.0.113.100\",\"restore_port\":80,"
	    "\"owner\":\"%s\"}}";
	char j[1024];
	snprintf(j, sizeof(j), fmt, 11, "IF-1", 40001, 40001, "IF-1");
	const struct cats_binding *r = bind_json(j);
	T_OK(r != NULL && cats_fwd_apply(&t, r, 1, &b, &rel, &ev) == 0 &&
	    !b->renc_learn && b->renc.nsids == 1 && b->renc.outer_af == 6 &&
	    memcmp(b->renc.sids[0], ret[0].addr.a, 16) == 0 &&
	    b->renc.src[15] == 2, "return tunnel toward the owner, configured");
	snprintf(j, sizeof(j), fmt, 12, "IF-9", 40002, 40002, "IF-9");
	r = bind_json(j);
	T_OK(r != NULL && cats_fwd_apply(&t, r, 1, &b, &rel, &ev) == 0 &&
	    b->renc_learn && b->renc.nsids == 0 && b->renc.outer_af == 0,
	    "another owner: learned");
	cats_fwd_free(&t);
}

static uint64_t pend_seen[8];

static void
pend_order_cb(struct cats_pend *p, void *arg)
{
	struct cats_fwd *t = arg;
	if (npend_cb < 8)
		pend_seen[npend_cb] = p->key.sport;
	npend_cb++;
	cats_fwd_held_free(t, cats_fwd_pend_take(t, p));
}

/* Expiry in steps: pending records oldest first, bindings a window a tick. */
static void
test_expire_step(void)
{
	struct cats_fwd t;
	struct cats_fwd_conf c = { .id = "IF-1", .pend_ms = 500,
		.has_src6 = true };
	cats_fwd_init(&t, &c);
	struct cats_fkey k;
	struct cats_pend *p, *mid = NULL;
	uint8_t pkt[60] = { 0x45 };
	for (int i = 0; i < 5; i++) {
		key4(&k, 3000 + i);
		cats_fwd_hold(&t, &k, pkt, 60, 0, 100 + (uint64_t)i, &p);
		if (i == 2)
			mid = p;
	}
	/* A record taken from the middle (a binding came) leaves the rest. */
	cats_fwd_held_free(&t, cats_fwd_pend_take(&t, mid));
	size_t pos = 0;
	npend_cb = 0;
	cats_fwd_expire_step(&t, 603, &pos, 1, pend_order_cb, bind_cb, &t);
	T_OK(npend_cb == 3 && pend_seen[0] == 3000 && pend_seen[1] == 3001 &&
	    pend_seen[2] == 3003 && t.st.pending == 1,
	    "pending records expire oldest first, up to the deadline only");
	cats_fwd_expire_step(&t, 604, &pos, 1, pend_order_cb, bind_cb, &t);
	T_OK(npend_cb == 4 && t.oldest == NULL && t.newest == NULL,
	    "the last one expires a tick later; the list is empty");
	/* 100 idle bindings, all past their lifetime. */
	struct cats_fbind *b;
	struct cats_held *rel;
	int ev, ok = 1;
	for (int i = 0; i < 100; i++) {
		const struct cats_binding *r = mkbind(10 + (uint64_t)i, 1, 7,
		    "install", 4000 + i, "198.51.100.21", ",\"idle_ms\":1000");
		ok = ok && r != NULL && cats_fwd_apply(&t, r, 1000, &b, &rel,
		    &ev) == 0;
	}
	T_OK(ok && t.st.bindings == 100, "100 bindings");
	size_t cap = t.bind_by_id.cap, n = cap / 10 + 1;
	nbind_cb = 0;
	cats_fwd_expire_step(&t, 5000, &pos, n, pend_cb, bind_cb, &t);
	T_OK(nbind_cb > 0 && nbind_cb < 100,
	    "one step expires only the bindings of its window");
	for (int i = 0; i < 12; i++)
		cats_fwd_expire_step(&t, 5000, &pos, n, pend_cb, bind_cb, &t);
	T_OK(nbind_cb == 100 && t.st.bindings == 0,
	    "a round of steps (and one more) expires them all");
	cats_fwd_free(&t);
}

/*
 * TCP connection tracking (tcp.c): the transitions packet by packet, the
 * per-state timeouts and their option, the gauges, what is not tracked.
 */
static void
test_tcp(void)
{
	struct cats_fwd t;
	struct cats_fwd_conf c = { .id = "IF-1", .has_src6 = true };
	char err[256];
	T_OK(cats_tcp_timeout_parse(&c, "time-wait=2s", err, sizeof(err)) == 0 &&
	    c.tcp_ms[CATS_TCPS_TIME_WAIT] == 2000, "--tcp-timeout time-wait=2s");
	T_OK(cats_tcp_timeout_parse(&c, "none=2s", err, sizeof(err)) < 0 &&
	    cats_tcp_timeout_parse(&c, "close=0", err, sizeof(err)) < 0 &&
	    cats_tcp_timeout_parse(&c, "fin-wait", err, sizeof(err)) < 0 &&
	    strstr(err, "--tcp-timeout") != NULL,
	    "--tcp-timeout refuses an unknown state, 0, no value: %s", err);
	memset(c.tcp_ms, 0, sizeof(c.tcp_ms));
	cats_fwd_init(&t, &c);
	struct cats_fbind *b;
	struct cats_held *rel;
	int ev;
	T_OK(cats_fwd_apply(&t, mkbind(1, 1, 1, "install", 40000,
	    "198.51.100.11", NULL), 0, &b, &rel, &ev) == 0 &&
	    cats_fbind_tracked(&t, b) && t.st.tcp[CATS_TCPS_NONE] == 1,
	    "a TCP binding is tracked, in state none");
	enum { S = CATS_TCP_SYN, A = CATS_TCP_ACK, F = CATS_TCP_FIN,
		R = CATS_TCP_RST };
	static const struct { bool reply; uint8_t f; int to; } steps[] = {
		{ false, S, CATS_TCPS_SYN_SENT }, { false, S, CATS_TCPS_SYN_SENT },
		{ true, S | A, CATS_TCPS_SYN_RECV }, { true, A, CATS_TCPS_SYN_RECV },
		{ false, A, CATS_TCPS_ESTABLISHED },
		{ false, S, CATS_TCPS_ESTABLISHED },
		{ true, F | A, CATS_TCPS_FIN_WAIT }, { true, A, CATS_TCPS_FIN_WAIT },
		{ false, F | A, CATS_TCPS_TIME_WAIT },
		{ false, A, CATS_TCPS_TIME_WAIT },
		{ false, S, CATS_TCP_REOPEN }, { true, R, CATS_TCPS_CLOSE },
		{ false, F, CATS_TCPS_CLOSE }, { false, S, CATS_TCP_REOPEN },
	};
	bool ok = true;
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		int r = cats_fbind_tcp(&t, b, steps[i].reply, steps[i].f);
		if (r != steps[i].to) {
			printf("#   step %zu: state %d, expected %d\n", i, r,
			    steps[i].to);
			ok = false;
		}
	}
	T_OK(ok && t.st.tcp[CATS_TCPS_CLOSE] == 1 &&
	    t.st.tcp[CATS_TCPS_NONE] == 0, "the transitions, packet by packet");
	T_OK(cats_fbind_idle_ms(&t, b) == 10000 &&
	    strcmp(cats_fbind_tcp_why(&t, b), "tcp-rst") == 0,
	    "close: 10 s, reason tcp-rst");
	cats_fbind_tcp_set(&t, b, CATS_TCPS_ESTABLISHED);
	T_OK(cats_fbind_idle_ms(&t, b) == 0 &&
	    strcmp(cats_fbind_tcp_why(&t, b), "idle") == 0,
	    "established without an idle lifetime: never idle");
	nbind_cb = 0;
	cats_fwd_expire(&t, 100000000, pend_cb, bind_cb, &t);
	T_OK(nbind_cb == 0, "... not expired");
	cats_fbind_tcp_set(&t, b, CATS_TCPS_SYN_SENT);
	cats_fwd_expire(&t, 29000, pend_cb, bind_cb, &t);
	T_OK(nbind_cb == 0, "syn-sent: kept before 30 s");
	b->last = 0;
	cats_fwd_expire(&t, 30000, pend_cb, bind_cb, &t);
	T_OK(nbind_cb == 1 && strcmp(last_why, "tcp-syn") == 0 &&
	    t.st.tcp_released[CATS_TCPS_SYN_SENT] == 1 &&
	    t.st.tcp[CATS_TCPS_SYN_SENT] == 0 && t.st.bindings == 0,
	    "syn-sent: expired at 30 s, reason tcp-syn, counted");
	/* A binding of client affinity (any source port) is not one
	 * connection: not tracked. */
	T_OK(cats_fwd_apply(&t, bind_json("{\"type\":\"binding\",\"id\":9,"
	    "\"version\":1,\"epoch\":1,\"op\":\"install\",\"ts\":1,"
	    "\"ingress\":\"IF-1\",\"egress\":\"EF-2\",\"fwd\":{\"match\":"
	    "{\"proto\":6,\"src\":\"192.0.2.10\",\"dst\":\"203.0.113.100\","
	    "\"dport\":80},\"locator\":\"198.51.100.11\",\"encap\":\"srv6\","
	    "\"sids\":[\"2001:db8:2::100\"]},\"rev\":{\"match\":{\"proto\":6,"
	    "\"src\":\"198.51.100.11\",\"sport\":80,\"dst\":\"192.0.2.10\"},"
	    "\"restore_src\":\"203.0.113.100\",\"sids\":[\"2001:db8:1::1\"]}}"),
	    0, &b, &rel, &ev) == 0 && !cats_fbind_tracked(&t, b) &&
	    t.st.tcp[CATS_TCPS_NONE] == 0, "a wildcard TCP binding: not tracked");
	cats_fwd_free(&t);
	c.tcp_off = true;
	cats_fwd_init(&t, &c);
	T_OK(cats_fwd_apply(&t, mkbind(1, 1, 1, "install", 40000,
	    "198.51.100.11", NULL), 0, &b, &rel, &ev) == 0 &&
	    !cats_fbind_tracked(&t, b), "tracking off: nothing tracked");
	cats_fwd_free(&t);
}

/*
 * The fallback (fallback.h): the option, candidates from bindings and
 * their soft state, the bound on the C-PS's silence, and Maglev: flows
 * spread evenly, and when a candidate goes only its flows move.
 */
static void
test_fallback(void)
{
	static struct cats_ifb fb;
	char err[256];
	memset(&fb, 0, sizeof(fb));
	T_OK(cats_ifb_parse(&fb, "S1=20s", err, sizeof(err)) == 0 &&
	    cats_ifb_svc(&fb, "S1") != NULL && cats_ifb_svc(&fb, "S1")->max_ms ==
	    20000 && cats_ifb_svc(&fb, "S2") == NULL, "--fallback S1=20s");
	T_OK(cats_ifb_parse(&fb, "S1", err, sizeof(err)) < 0 &&
	    cats_ifb_parse(&fb, "S1=0", err, sizeof(err)) < 0,
	    "--fallback refuses no duration and 0: %s", err);
	struct cats_ifb_svc *s = cats_ifb_svc(&fb, "S1");
	const struct cats_ifb_cand *c;
	T_OK(cats_ifb_pick(&fb, s, 1, 0, &c) == CATS_IFB_NO_CAND &&
	    cats_ifb_pick(&fb, NULL, 1, 0, &c) == CATS_IFB_NONE,
	    "no candidate; no fallback for another service");
	/* Eight instances, from bindings of the service. */
	fb.ttl_ms = 30000;
	struct cats_fbind b;
	memset(&b, 0, sizeof(b));
	b.ingress = true;
	b.af = 4;
	cats_strlcpy(b.cs_id, "S1", sizeof(b.cs_id));
	for (int i = 0; i < 8; i++) {
		b.locator[0] = 198, b.locator[1] = 51, b.locator[2] = 100;
		b.locator[3] = (uint8_t)(10 + i);
		cats_ifb_learn(&fb, &b, "S1", "EF-2", 1000 + (uint64_t)i * 1000);
	}
	T_OK(s->n == 8, "8 candidates");
	int before[4096], per[8] = { 0 };
	bool ok = true;
	for (int f = 0; f < 4096; f++) {
		struct cats_fkey k;
		memset(&k, 0, sizeof(k));
		k.af = 4;
		k.proto = 6;
		k.sport = (uint16_t)(30000 + f);
		k.dport = 80;
		ok &= cats_ifb_pick(&fb, s, cats_ifb_flow_hash(&k), 10000, &c) ==
		    CATS_IFB_OK;
		before[f] = c->locator[3] - 10;
		per[before[f]]++;
	}
	int lo = 4096, hi = 0;
	for (int i = 0; i < 8; i++) {
		lo = per[i] < lo ? per[i] : lo;
		hi = per[i] > hi ? per[i] : hi;
	}
	T_OK(ok && lo > 4096 / 8 * 3 / 4 && hi < 4096 / 8 * 5 / 4,
	    "Maglev: 4096 flows over 8 candidates, %d to %d each", lo, hi);
	/* The first candidate's soft state ends (learned at 1000). */
	int moved = 0, moved_other = 0;
	for (int f = 0; f < 4096; f++) {
		struct cats_fkey k;
		memset(&k, 0, sizeof(k));
		k.af = 4;
		k.proto = 6;
		k.sport = (uint16_t)(30000 + f);
		k.dport = 80;
		cats_ifb_pick(&fb, s, cats_ifb_flow_hash(&k), 31500, &c);
		int now_i = c->locator[3] - 10;
		moved += now_i != before[f];
		moved_other += now_i != before[f] && before[f] != 0;
		ok &= now_i != 0;
	}
	T_OK(ok && moved_other < 4096 / 8 / 4, "a candidate's soft state ends: "
	    "its flows move (%d in all), few others (%d)", moved, moved_other);
	T_OK(cats_ifb_pick(&fb, s, 1, 40000, &c) == CATS_IFB_NO_CAND,
	    "every soft state ended: no candidate");
	cats_ifb_learn(&fb, &b, "S1", "EF-2", 40000);
	cats_ifb_silent(&fb, 40000);
	cats_ifb_silent(&fb, 50000);
	T_OK(cats_ifb_pick(&fb, s, 1, 60000, &c) == CATS_IFB_OK &&
	    cats_ifb_pick(&fb, s, 1, 60001, &c) == CATS_IFB_TOO_LONG,
	    "the C-PS silent since its first failure: 20 s, not more");
	cats_ifb_answer(&fb);
	T_OK(cats_ifb_pick(&fb, s, 1, 60001, &c) == CATS_IFB_OK,
	    "it answered: the fallback may be used again");
	b.ingress = false;
	unsigned n = s->n;
	b.locator[3] = 99;
	cats_ifb_learn(&fb, &b, "S1", "EF-2", 60000);
	T_OK(s->n == n, "an egress's binding names no candidate");
}

int
main(void)
{
	cats_dec_init(&dec, NULL);
	test_pending();
	test_bindings();
	test_egress_and_affinity();
	test_return_tunnel();
	test_expire_step();
	test_tcp();
	test_fallback();
	cats_dec_free(&dec);
	return t_done();
}
