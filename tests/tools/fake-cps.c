/*
 * fake-cps - a stand-in for cats-select | cats-pce | cats-bind in the
 * cats-fwd tests: it answers every request with a fixed kind of binding.
 *
 *   fake-cps --select EP --bind EP --egress ID --locator ADDR [options]
 *
 * Requests come in on --select (MAC checked with --key when given).  The
 * binding goes to the forwarders named by its ingress and egress, which
 * connect to --bind and say hello; a hello is answered with every active
 * binding of that forwarder and then a hello status (the sync marker).
 * The locator is the first line of --choose FILE when that exists (read on
 * every request), else --locator; --csid CSID=ADDR maps an explicit CS-ID
 * to a locator and an unknown CS-ID gets an error record.  Requests whose
 * destination port is --ignore-port are never answered.  Every record
 * received is appended as a JSON line to --log FILE.  --reserve-flows N
 * takes and touches the memory of N flows at start, as cats-fwd does (the
 * benchmark's bursts are then not slowed by this stand-in's page faults).
 */
#include <errno.h>
#include <signal.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/clock.h"
#include "sec/crypto.h"
#include "net/ep.h"
#include "rec/json.h"
#include "base/log.h"
#include "rec/seq.h"
#include "base/tool.h"

/*
 * A forwarder's connection.  Records for it are gathered in out and
 * written once the callbacks that were ready have run (one system call
 * for a whole batch of requests).
 */
struct conn {
	struct cats_stream *s;
	char fwd[CATS_ID + 1];
	bool used;
	struct cats_buf out;
	struct event *flush;
};

static struct conn conns[32];
static struct event_base *base;
static struct cats_dec dec;
static struct cats_key key;
static bool has_key;
static FILE *log_fp;
static const char *egress = "EF-2", *choose, *encap_name = "srv6";
static struct cats_ip locator, tunnel_dst, rev_tunnel_dst;
static struct cats_ip sids[8], rsids[8];
static size_t nsids, nrsids;
static struct { char cs[CATS_ID + 1]; struct cats_ip loc; } csmap[8];
static size_t ncs;
static uint64_t epoch = 1, next_id = 1, idle_ms, ignore_port;
static int port_rewrite;

/* Active bindings, kept encoded (CBOR) with their ingress and egress. */
struct active {
	uint64_t id;
	char ingress[CATS_ID + 1], egress[CATS_ID + 1];
	struct cats_buf enc;
};
static struct active act[4096];
static size_t nact;
/*
 * Sent to the egress, not yet to the ingress: a slot per binding id (ids
 * are consecutive); a slot still taken when its id comes round again goes
 * to the ingress at once.
 */
#define NWAIT 65536
static struct active *waiting;

static void
log_rec(const struct cats_rec *r)
{
	if (log_fp != NULL) {
		cats_rec_print_json(r, log_fp);
		fflush(log_fp);
	}
}

static void
conn_flush(struct conn *c)
{
	if (c->used && c->out.len > 0)
		cats_stream_send(c->s, c->out.p, c->out.len);
	cats_buf_reset(&c->out);
}

static void
on_flush(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	conn_flush(arg);
}

static void
conn_send(struct conn *c, const uint8_t *p, size_t n)
{
	cats_buf_add(&c->out, p, n);
	if (c->out.len >= 65536)
		conn_flush(c);
	else
		event_active(c->flush, EV_TIMEOUT, 0);
}

static void
send_to(const char *fwd, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < CATS_ARRAY_LEN(conns); i++)
		if (conns[i].used && conns[i].fwd[0] &&
		    strcmp(conns[i].fwd, fwd) == 0)
			conn_send(&conns[i], p, n);
}

/* Release a binding waiting for the egress to the ingress. */
static void
unwait(struct active *w)
{
	send_to(w->ingress, w->enc.p, w->enc.len);
	cats_buf_free(&w->enc);
	w->id = 0;
}

static bool
connected(const char *fwd)
{
	for (size_t i = 0; i < CATS_ARRAY_LEN(conns); i++)
		if (conns[i].used && strcmp(conns[i].fwd, fwd) == 0)
			return true;
	return false;
}

static void
parse_ips(const char *s, struct cats_ip *v, size_t *n)
{
	char buf[1024];
	cats_strlcpy(buf, s, sizeof(buf));
	for (char *t = strtok(buf, ","); t && *n < 8; t = strtok(NULL, ","))
		if (cats_ip_parse(t, strlen(t), &v[(*n)++]) < 0) {
			fprintf(stderr, "fake-cps: %s: bad address\n", t);
			exit(2);
		}
}

static bool
pick(const struct cats_request *q, struct cats_ip *loc)
{
	if (q->cs_id != NULL) {
		for (size_t i = 0; i < ncs; i++)
			if (strcmp(csmap[i].cs, q->cs_id) == 0 &&
			    csmap[i].loc.af == q->flow.src.af) {
				*loc = csmap[i].loc;
				return true;
			}
		if (ncs > 0)
			return false;
	}
	*loc = locator;
	if (choose != NULL) {
		FILE *f = fopen(choose, "r");
		char line[128];
		if (f != NULL && fgets(line, sizeof(line), f) != NULL) {
			line[strcspn(line, "\r\n ")] = '\0';
			cats_ip_parse(line, strlen(line), loc);
		}
		if (f != NULL)
			fclose(f);
	}
	return true;
}

static void
on_request(const struct cats_rec *rr)
{
	const struct cats_request *q = &rr->u.request;
	struct cats_rec r;
	struct cats_buf b = { 0 };
	if (ignore_port && CATS_HAS(&q->flow, FLOW, dport) &&
	    q->flow.dport == ignore_port)
		return;
	struct cats_ip loc;
	if (!pick(q, &loc)) {
		cats_rec_init(&r, CATS_T_ERROR);
		struct cats_error *e = &r.u.error;
		e->code = "unknown-cs-id";
		e->has = UINT64_C(1) << CATS_ERR_code;
		CATS_SET(e, ERR, txn, q->txn);
		CATS_SET(e, ERR, ts, cats_clock_now());
		e->stage = "fake-cps";
		e->ingress = q->ingress;
		e->flow = q->flow;
		e->has |= UINT64_C(1) << CATS_ERR_stage |
		    UINT64_C(1) << CATS_ERR_ingress | UINT64_C(1) << CATS_ERR_flow;
		cats_rec_encode(&r, &b, false);
		send_to(q->ingress, b.p, b.len);
		cats_buf_free(&b);
		return;
	}
	int enc = cats_enum_index(cats_dataplane_names, encap_name,
	    strlen(encap_name));
	cats_rec_init(&r, CATS_T_BINDING);
	struct cats_binding *bd = &r.u.binding;
	bd->id = next_id++;
	bd->version = 1;
	bd->epoch = epoch;
	bd->op = CATS_BIND_INSTALL;
	bd->ts = cats_clock_now();
	bd->has = UINT64_C(1) << CATS_BND_id | UINT64_C(1) << CATS_BND_version |
	    UINT64_C(1) << CATS_BND_epoch | UINT64_C(1) << CATS_BND_op |
	    UINT64_C(1) << CATS_BND_ts | UINT64_C(1) << CATS_BND_fwd |
	    UINT64_C(1) << CATS_BND_rev | UINT64_C(1) << CATS_BND_ingress |
	    UINT64_C(1) << CATS_BND_egress;
	CATS_SET(bd, BND, txn, q->txn);
	bd->ingress = q->ingress;
	bd->egress = egress;
	if (q->cs_id != NULL) {
		bd->cs_id = q->cs_id;
		bd->has |= UINT64_C(1) << CATS_BND_cs_id;
	}
	if (idle_ms)
		CATS_SET(bd, BND, idle_ms, idle_ms);
	struct cats_bind_fwd *f = &bd->fwd;
	f->has = UINT64_C(1) << CATS_BFW_match | UINT64_C(1) << CATS_BFW_locator |
	    UINT64_C(1) << CATS_BFW_encap;
	f->match = q->flow;
	f->locator = loc;
	f->encap = enc;
	if (port_rewrite)
		CATS_SET(f, BFW, port, (uint64_t)port_rewrite);
	f->sids.v = sids;
	f->sids.n = nsids;
	if (nsids)
		f->has |= UINT64_C(1) << CATS_BFW_sids;
	if (tunnel_dst.af) {
		f->tunnel_dst = tunnel_dst;
		f->has |= UINT64_C(1) << CATS_BFW_tunnel_dst;
	}
	f->egress = egress;
	f->has |= UINT64_C(1) << CATS_BFW_egress;
	struct cats_bind_rev *v = &bd->rev;
	v->has = UINT64_C(1) << CATS_BRV_match | UINT64_C(1) << CATS_BRV_restore_src;
	struct cats_flow *m = &v->match;
	m->proto = q->flow.proto;
	m->src = loc;
	m->dst = q->flow.src;
	m->has = UINT64_C(1) << CATS_FLOW_proto | UINT64_C(1) << CATS_FLOW_src |
	    UINT64_C(1) << CATS_FLOW_dst;
	if (CATS_HAS(&q->flow, FLOW, dport))
		CATS_SET(m, FLOW, sport, port_rewrite ? (uint64_t)port_rewrite :
		    q->flow.dport);
	if (CATS_HAS(&q->flow, FLOW, sport))
		CATS_SET(m, FLOW, dport, q->flow.sport);
	v->restore_src = q->flow.dst;
	if (CATS_HAS(&q->flow, FLOW, dport))
		CATS_SET(v, BRV, restore_port, q->flow.dport);
	v->owner = q->ingress;
	v->has |= UINT64_C(1) << CATS_BRV_owner;
	CATS_SET(v, BRV, encap, enc);
	v->sids.v = rsids;
	v->sids.n = nrsids;
	if (nrsids)
		v->has |= UINT64_C(1) << CATS_BRV_sids;
	if (rev_tunnel_dst.af) {
		v->tunnel_dst = rev_tunnel_dst;
		v->has |= UINT64_C(1) << CATS_BRV_tunnel_dst;
	}
	struct cats_err e;
	if (cats_rec_validate(&r, &e) < 0) {
		fprintf(stderr, "fake-cps: binding invalid: %s: %s\n", e.field,
		    e.reason);
		return;
	}
	log_rec(&r);
	cats_rec_encode(&r, &b, false);
	if (nact < CATS_ARRAY_LEN(act)) {
		struct active *a = &act[nact++];
		memset(a, 0, sizeof(*a));
		a->id = bd->id;
		cats_strlcpy(a->ingress, q->ingress, sizeof(a->ingress));
		cats_strlcpy(a->egress, egress, sizeof(a->egress));
		cats_buf_add(&a->enc, b.p, b.len);
	}
	/*
	 * Commit the egress first: the ingress gets the binding (and releases
	 * the held packets) once the egress reported it installed.
	 */
	if (strcmp(egress, q->ingress) != 0 && connected(egress)) {
		struct active *w = &waiting[bd->id % NWAIT];
		if (w->id != 0)
			unwait(w);
		w->id = bd->id;
		cats_strlcpy(w->ingress, q->ingress, sizeof(w->ingress));
		cats_buf_add(&w->enc, b.p, b.len);
		send_to(egress, b.p, b.len);
	} else {
		send_to(q->ingress, b.p, b.len);
		if (strcmp(egress, q->ingress) != 0)
			send_to(egress, b.p, b.len);
	}
	cats_buf_free(&b);
}

static void
on_item(struct cats_stream *s, const uint8_t *p, size_t n, uint64_t index,
    const struct cats_peer *peer, void *arg)
{
	struct conn *c = arg;
	struct cats_rec r;
	struct cats_err e;
	(void)s;
	(void)p;
	(void)n;
	(void)peer;
	memset(&e, 0, sizeof(e));
	if (cats_rec_from_toks(&dec, &r, &e) < 0) {
		fprintf(stderr, "fake-cps: record %" PRIu64 ": %s: %s\n", index,
		    e.field, e.reason);
		return;
	}
	log_rec(&r);
	if (has_key) {
		struct cats_keyring kr = { &key, 1 };
		const struct cats_key *who;
		if (cats_rec_verify(&r, &kr, &who, &e) < 0) {
			fprintf(stderr, "fake-cps: refused: %s\n", e.reason);
			return;
		}
	}
	if (r.type == CATS_T_REQUEST) {
		on_request(&r);
	} else if (r.type == CATS_T_STATUS) {
		const struct cats_status *st = &r.u.status;
		if (st->event == CATS_EV_HELLO) {
			cats_strlcpy(c->fwd, st->fwd, sizeof(c->fwd));
			for (size_t i = 0; i < nact; i++)
				if (strcmp(act[i].ingress, c->fwd) == 0 ||
				    strcmp(act[i].egress, c->fwd) == 0)
					conn_send(c, act[i].enc.p,
					    act[i].enc.len);
			struct cats_rec h;
			struct cats_buf b = { 0 };
			cats_rec_init(&h, CATS_T_STATUS);
			h.u.status.fwd = c->fwd;
			h.u.status.event = CATS_EV_HELLO;
			h.u.status.ts = cats_clock_now();
			h.u.status.has = UINT64_C(1) << CATS_STA_fwd |
			    UINT64_C(1) << CATS_STA_event |
			    UINT64_C(1) << CATS_STA_ts;
			CATS_SET(&h.u.status, STA, epoch, epoch);
			cats_rec_encode(&h, &b, false);
			conn_send(c, b.p, b.len);
			cats_buf_free(&b);
		} else if ((st->event == CATS_EV_INSTALLED ||
		    st->event == CATS_EV_FAILED) && CATS_HAS(st, STA, id)) {
			struct active *w = &waiting[st->id % NWAIT];
			if (w->id == st->id)
				unwait(w);
		} else if ((st->event == CATS_EV_EXPIRED ||
		    st->event == CATS_EV_REMOVED) && CATS_HAS(st, STA, id)) {
			for (size_t i = 0; i < nact; i++)
				if (act[i].id == st->id) {
					cats_buf_free(&act[i].enc);
					act[i] = act[--nact];
					break;
				}
		}
	}
}

static void
on_eof(struct cats_stream *s, int error, void *arg)
{
	struct conn *c = arg;
	(void)error;
	cats_stream_free(s);
	c->used = false;
	c->fwd[0] = '\0';
	cats_buf_reset(&c->out);
}

static void
on_accept(evutil_socket_t lfd, short what, void *arg)
{
	(void)what;
	(void)arg;
	int fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		return;
	for (size_t i = 0; i < CATS_ARRAY_LEN(conns); i++) {
		if (conns[i].used)
			continue;
		static const struct cats_stream_cbs cbs = { .item = on_item,
			.eof = on_eof };
		conns[i].used = true;
		conns[i].fwd[0] = '\0';
		if (conns[i].flush == NULL)
			conns[i].flush = event_new(base, -1, 0, on_flush,
			    &conns[i]);
		conns[i].s = cats_stream_new(base, fd, fd, false, NULL, 0, &cbs,
		    &conns[i]);
		cats_stream_own(conns[i].s);
		cats_stream_decode_into(conns[i].s, &dec);
		return;
	}
	close(fd);
}

static void
listen_on(const char *spec)
{
	struct cats_ep ep;
	char err[256];
	if (cats_ep_parse(spec, &ep, err, sizeof(err)) < 0) {
		fprintf(stderr, "fake-cps: %s\n", err);
		exit(2);
	}
	int fd = cats_ep_listen(&ep, err, sizeof(err));
	if (fd < 0) {
		fprintf(stderr, "fake-cps: %s\n", err);
		exit(1);
	}
	struct event *ev = event_new(base, fd, EV_READ | EV_PERSIST, on_accept,
	    NULL);
	event_add(ev, NULL);
}

static void
on_term(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	event_base_loopbreak(base);
}

int
main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "bind", required_argument, NULL, 'b' },
		{ "choose", required_argument, NULL, 'c' },
		{ "csid", required_argument, NULL, 'C' },
		{ "egress", required_argument, NULL, 'e' },
		{ "encap", required_argument, NULL, 'E' },
		{ "epoch", required_argument, NULL, 'p' },
		{ "idle-ms", required_argument, NULL, 'i' },
		{ "ignore-port", required_argument, NULL, 'I' },
		{ "key", required_argument, NULL, 'k' },
		{ "locator", required_argument, NULL, 'l' },
		{ "log", required_argument, NULL, 'L' },
		{ "port", required_argument, NULL, 'P' },
		{ "reserve-flows", required_argument, NULL, 'r' },
		{ "rev-sids", required_argument, NULL, 'R' },
		{ "rev-tunnel-dst", required_argument, NULL, 'T' },
		{ "select", required_argument, NULL, 's' },
		{ "sids", required_argument, NULL, 'S' },
		{ "tunnel-dst", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sel = NULL, *bnd = NULL;
	size_t reserve_flows = 0;
	int c;
	char err[256];
	cats_tool_init(argv[0]);
	base = event_base_new();
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'b': bnd = optarg; break;
		case 'c': choose = optarg; break;
		case 'C': {
			const char *eq = strchr(optarg, '=');
			if (eq == NULL || ncs == 8 || eq - optarg > CATS_ID)
				return 2;
			memcpy(csmap[ncs].cs, optarg, (size_t)(eq - optarg));
			if (cats_ip_parse(eq + 1, strlen(eq + 1),
			    &csmap[ncs].loc) < 0)
				return 2;
			ncs++;
			break;
		}
		case 'e': egress = optarg; break;
		case 'E': encap_name = optarg; break;
		case 'p': epoch = strtoull(optarg, NULL, 10); break;
		case 'i': idle_ms = strtoull(optarg, NULL, 10); break;
		case 'I': ignore_port = strtoull(optarg, NULL, 10); break;
		case 'k':
			if (cats_key_load(&key, optarg, CATS_KEY_PSK, err,
			    sizeof(err)) < 0) {
				fprintf(stderr, "fake-cps: %s\n", err);
				return 77;
			}
			has_key = true;
			break;
		case 'l':
			if (cats_ip_parse(optarg, strlen(optarg), &locator) < 0)
				return 2;
			break;
		case 'L':
			log_fp = fopen(optarg, "a");
			break;
		case 'P': port_rewrite = atoi(optarg); break;
		case 'r': reserve_flows = strtoull(optarg, NULL, 10); break;
		case 'R': parse_ips(optarg, rsids, &nrsids); break;
		case 's': sel = optarg; break;
		case 'S': parse_ips(optarg, sids, &nsids); break;
		case 't':
			cats_ip_parse(optarg, strlen(optarg), &tunnel_dst);
			break;
		case 'T':
			cats_ip_parse(optarg, strlen(optarg), &rev_tunnel_dst);
			break;
		default:
			return 2;
		}
	}
	cats_dec_init(&dec, NULL);
	if (reserve_flows > 0) {
		/* A flow's records in and out, its copies kept while the egress
		 * commits, and the slots below, touched now. */
		cats_tool_reserve(reserve_flows * 2048 +
		    NWAIT * sizeof(*waiting));
		memset(act, 0, sizeof(act));
	}
	waiting = calloc(NWAIT, sizeof(*waiting));
	if (waiting == NULL)
		return 1;
	if (sel != NULL)
		listen_on(sel);
	if (bnd != NULL)
		listen_on(bnd);
	struct event *t = evsignal_new(base, SIGTERM, on_term, NULL);
	event_add(t, NULL);
	event_base_dispatch(base);
	return 0;
}
