/*
 * ingest.c - the C-PS's end of the C-SMA synchronization: authentication,
 * replay guard, CS-ID authorization, the table, acks and sync requests.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "base/htab.h"
#include "net/httpd.h"
#include "select/ingest.h"
#include "base/log.h"
#include "sma/sma.h"

const char *const cats_ingest_paths[] = { "/metrics", "/update", "/withdraw",
	"/retrieve", NULL };

struct peer {
	bool want_full;
	bool any;		/* may advertise every CS-ID */
	char **cs;		/* sorted */
	size_t ncs;
	char id[];
};

struct cats_ingest {
	struct cats_ingest_conf c;
	struct cats_cst *cst;
	struct cats_replay *guard;
	struct cats_htab peers;
	struct cats_dec dec;
	uint64_t nonce;
	struct cats_ingest_stats st;
};

static bool
peer_eq(const void *item, const void *key)
{
	return strcmp(((const struct peer *)item)->id, key) == 0;
}

static struct peer *
peer_get(struct cats_ingest *g, const char *id, bool create)
{
	return cats_htab_str_item(&g->peers, id, peer_eq, sizeof(struct peer),
	    offsetof(struct peer, id), create, NULL);
}

static void
peer_clear(struct peer *p)
{
	for (size_t i = 0; i < p->ncs; i++)
		free(p->cs[i]);
	free(p->cs);
	p->cs = NULL;
	p->ncs = 0;
	p->any = false;
}

struct cats_ingest *
cats_ingest_new(const struct cats_ingest_conf *c, struct cats_cst *cst)
{
	struct cats_ingest *g = calloc(1, sizeof(*g));
	if (g == NULL)
		return NULL;
	g->c = *c;
	if (g->c.max_records == 0)
		g->c.max_records = 4096;
	g->cst = cst;
	if ((g->guard = cats_replay_new(c->window_ms)) == NULL) {
		free(g);
		return NULL;
	}
	cats_dec_init(&g->dec, NULL);
	return g;
}

void
cats_ingest_free(struct cats_ingest *g)
{
	if (g == NULL)
		return;
	for (size_t i = 0; i < g->peers.cap; i++) {
		if (g->peers.s[i].h) {
			peer_clear(g->peers.s[i].item);
			free(g->peers.s[i].item);
		}
	}
	cats_htab_free(&g->peers);
	cats_replay_free(g->guard);
	cats_dec_free(&g->dec);
	free(g);
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
cats_ingest_allow(struct cats_ingest *g, const char *sma_id,
    const char *const *cs_ids, size_t n)
{
	struct peer *p = peer_get(g, sma_id, true);
	if (p == NULL)
		return -1;
	peer_clear(p);
	if (n > 0 && (p->cs = calloc(n, sizeof(*p->cs))) == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(cs_ids[i], "*") == 0) {
			p->any = true;
			continue;
		}
		if ((p->cs[p->ncs] = strdup(cs_ids[i])) == NULL)
			return -1;
		p->ncs++;
	}
	if (p->ncs > 1)
		qsort(p->cs, p->ncs, sizeof(*p->cs), str_cmp);
	return 0;
}

static bool
allowed(const struct peer *p, const char *cs_id)
{
	if (p == NULL)
		return false;
	if (p->any)
		return true;
	return bsearch(&cs_id, p->cs, p->ncs, sizeof(*p->cs), str_cmp) != NULL;
}

void
cats_ingest_want_full(struct cats_ingest *g, const char *sma_id)
{
	struct peer *p = peer_get(g, sma_id, true);
	if (p != NULL)
		p->want_full = true;
}

const struct cats_ingest_stats *
cats_ingest_stats(const struct cats_ingest *g)
{
	return &g->st;
}

/* ---- answers ---- */

/* What a request came to: the answer's fields. */
struct answer {
	int status;
	int result;		/* enum cats_ack_result */
	char sma_id[CATS_ID + 1];
	const struct cats_key *key;	/* verified the sender, if any */
	char reason[256];
	bool has_reason;
};

__attribute__((format(printf, 4, 5))) static void
refuse(struct answer *a, int status, int result, const char *fmt, ...)
{
	if (a->has_reason)
		return;
	a->status = status;
	a->result = result;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->reason, sizeof(a->reason), fmt, ap);
	va_end(ap);
	a->has_reason = true;
}

/* Sign or MAC an answer: with the sender's PSK, else the C-PS's key. */
static void
sign_answer(struct cats_ingest *g, const struct answer *a,
    struct cats_rec *r)
{
	if (a->key != NULL && a->key->kind == CATS_KEY_PSK)
		cats_rec_sign(r, a->key);
	else if (g->c.sign != NULL)
		cats_rec_sign(r, g->c.sign);
}

static void
add_answer(struct cats_ingest *g, const struct answer *a, uint64_t now,
    struct cats_buf *out)
{
	struct cats_cst_peer pos;
	bool known = a->sma_id[0] && cats_cst_peer(g->cst, a->sma_id, &pos);
	struct peer *p = a->sma_id[0] ? peer_get(g, a->sma_id, false) : NULL;
	bool want = p != NULL && p->want_full && a->status < 400;
	if (a->sma_id[0] && !known && a->status < 400)
		want = true;
	struct cats_rec r;
	cats_rec_init(&r, CATS_T_ACK);
	struct cats_ack *k = &r.u.ack;
	k->sma_id = a->sma_id[0] ? a->sma_id : "-";
	k->epoch = known ? pos.epoch : 0;
	k->seq = known && pos.has_seq ? pos.seq : 0;
	k->ts = now;
	k->ps_id = g->c.ps_id;
	CATS_SET(k, ACK, ps_epoch, g->c.ps_epoch);
	CATS_SET(k, ACK, result, a->result);
	CATS_SET(k, ACK, want, want ? CATS_SYNC_FULL : CATS_SYNC_NONE);
	CATS_SET(k, ACK, refresh, g->c.refresh);
	if (a->has_reason)
		k->reason = a->reason;
	sign_answer(g, a, &r);
	cats_rec_encode(&r, out, true);
	if (!want)
		return;
	/* The C-PS asks for the whole view (000 §9.3). */
	cats_rec_init(&r, CATS_T_SYNC);
	struct cats_sync *s = &r.u.sync;
	s->mode = CATS_SYNC_FULL;
	s->ts = now;
	s->sma_id = a->sma_id;
	s->ps_id = g->c.ps_id;
	CATS_SET_IF(known, s, SYNC, epoch, pos.epoch);
	uint64_t t = now * 1000;
	g->nonce = t > g->nonce ? t : g->nonce + 1;
	CATS_SET(s, SYNC, nonce, g->nonce);
	sign_answer(g, a, &r);
	cats_rec_encode(&r, out, true);
}

/* ---- retrieval ---- */

struct dump_ctx {
	const char *sma_id;
	struct cats_buf *out;
};

static int
dump_one(const struct cats_rec *r, void *arg)
{
	struct dump_ctx *d = arg;
	if (strcmp(r->u.metric.sma_id, d->sma_id) == 0)
		cats_rec_encode(r, d->out, false);
	return 0;
}

/* ---- the client certificate ---- */

int
cats_ingest_cert_parse(struct cats_ingest_cert *c, const char *const *v,
    size_t n)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		const char **to;
		size_t *k, plen;
		if (strncmp(v[i], "cats:sma:", plen = 9) == 0) {
			to = c->sma;
			k = &c->nsma;
		} else if (strncmp(v[i], "cats:site:", plen = 10) == 0) {
			to = c->site;
			k = &c->nsite;
		} else if (strncmp(v[i], "cats:cs:", plen = 8) == 0) {
			to = c->cs;
			k = &c->ncs;
		} else {
			continue;
		}
		if (*k >= CATS_INGEST_CERT_MAX)
			return -1;
		to[(*k)++] = v[i] + plen;
	}
	return 0;
}

static bool
named(const char *const *v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (s != NULL && strcmp(v[i], s) == 0)
			return true;
	return false;
}

/*
 * What a metric record names outside the certificate's CS-IDs and sites:
 * NULL, or the reason into buf.
 */
static const char *
cert_scope(const struct cats_ingest_cert *c, const struct cats_metric *m,
    char *buf, size_t len)
{
	char b[CATS_ID + 1];
	const char *cs = NULL, *site = NULL;
	bool nosite = false;
	if (c->ncs > 0) {
		for (size_t i = 0; cs == NULL && i < m->entries.n; i++)
			if (!named(c->cs, c->ncs, m->entries.v[i].cs_id))
				cs = m->entries.v[i].cs_id;
		for (size_t i = 0; cs == NULL && i < m->sites.n; i++)
			if (!named(c->cs, c->ncs, m->sites.v[i].cs_id))
				cs = m->sites.v[i].cs_id;
	}
	if (cs != NULL) {
		snprintf(buf, len, "the client certificate does not name "
		    "CS-ID %s", cats_safe(cs, b, sizeof(b)));
		return buf;
	}
	if (c->nsite == 0)
		return NULL;
	if (m->site != NULL && !named(c->site, c->nsite, m->site))
		site = m->site;
	for (size_t i = 0; site == NULL && !nosite && i < m->entries.n; i++) {
		const char *s = m->entries.v[i].site ? m->entries.v[i].site :
		    m->site;
		if (s == NULL)
			nosite = true;
		else if (!named(c->site, c->nsite, s))
			site = s;
	}
	if (site == NULL && !nosite)
		return NULL;
	if (nosite)
		snprintf(buf, len, "the client certificate names sites, the "
		    "record none");
	else
		snprintf(buf, len, "the client certificate does not name "
		    "site %s", cats_safe(site, b, sizeof(b)));
	return buf;
}

/* ---- the request ---- */

static const char *
op_name(int op)
{
	return cats_ingest_paths[op] + 1;
}

int
cats_ingest_handle(struct cats_ingest *g, int op, const uint8_t *p,
    size_t n, const char *peer, uint64_t now, struct cats_buf *out)
{
	return cats_ingest_handle_cert(g, op, p, n, peer, NULL, now, out);
}

int
cats_ingest_handle_cert(struct cats_ingest *g, int op, const uint8_t *p,
    size_t n, const char *peer, const struct cats_ingest_cert *cert,
    uint64_t now, struct cats_buf *out)
{
	struct answer a;
	memset(&a, 0, sizeof(a));
	a.status = 200;
	a.result = CATS_ACK_OK;
	struct cats_dec *d = &g->dec;
	size_t off = 0, index = 0;
	bool retrieve_full = false, retrieved = false;
	char q[300];
	g->st.requests++;
	if (peer == NULL)
		peer = "-";
	if (n == 0)
		refuse(&a, 400, CATS_ACK_BAD, "empty body");
	while (off < n && !a.has_reason) {
		struct cats_rec r;
		struct cats_err e;
		size_t used = 0;
		memset(&e, 0, sizeof(e));
		cats_arena_reset(&d->arena);
		if (index >= g->c.max_records) {
			refuse(&a, 400, CATS_ACK_BAD, "more than %zu records "
			    "in one request", g->c.max_records);
			break;
		}
		if (cats_scan(p + off, n - off, true, &d->lim, &d->toks,
		    &d->arena, &used, NULL, &e) != CATS_SCAN_OK ||
		    cats_rec_from_toks(d, &r, &e) < 0) {
			char msg[300];
			refuse(&a, 400, CATS_ACK_BAD, "%s", cats_err_fmt(&e,
			    index, msg, sizeof(msg)));
			break;
		}
		off += used;
		g->st.records++;
		bool want_sync = op == CATS_ING_RETRIEVE;
		if ((want_sync && r.type != CATS_T_SYNC) ||
		    (!want_sync && r.type != CATS_T_METRIC)) {
			refuse(&a, 400, CATS_ACK_BAD, "record %zu: /%s takes "
			    "%s records", index, op_name(op), want_sync ?
			    "sync" : "metric");
			break;
		}
		const char *sma_id = want_sync ? r.u.sync.sma_id :
		    r.u.metric.sma_id;
		uint64_t ts = want_sync ? r.u.sync.ts : r.u.metric.ts;
		bool has_nonce = want_sync ? CATS_HAS(&r.u.sync, SYNC, nonce) :
		    CATS_HAS(&r.u.metric, MET, nonce);
		uint64_t nonce = want_sync ? r.u.sync.nonce : r.u.metric.nonce;
		if (sma_id == NULL || sma_id[0] == '\0') {
			refuse(&a, 400, CATS_ACK_BAD, "record %zu: sma_id: "
			    "required", index);
			break;
		}
		if (a.sma_id[0] == '\0') {
			cats_strlcpy(a.sma_id, sma_id, sizeof(a.sma_id));
		} else if (strcmp(a.sma_id, sma_id) != 0) {
			refuse(&a, 400, CATS_ACK_BAD, "record %zu: one C-SMA "
			    "per request", index);
			break;
		}
		/* Authentication: the key's name is the sender. */
		const struct cats_key *who = NULL;
		if (g->c.keys == NULL ||
		    cats_rec_verify(&r, g->c.keys, &who, &e) < 0) {
			refuse(&a, 401, CATS_ACK_UNAUTHORIZED, "record %zu: %s",
			    index, g->c.keys ? e.reason : "no C-SMA keys");
			g->st.unauthenticated++;
			cats_audit_limited("ingest-refused", "sma=%s peer=%s "
			    "status=401 "
			    "reason=\"%s\"", cats_safe(sma_id, q, sizeof(q)), peer,
			    a.reason);
			break;
		}
		if (strcmp(who->name, sma_id) != 0) {
			char b[CATS_ID + 1];
			refuse(&a, 403, CATS_ACK_UNAUTHORIZED, "record %zu: the "
			    "key of %s cannot speak for %s", index,
			    cats_safe(who->name[0] ? who->name : "(unnamed)", b,
			    sizeof(b)), cats_safe(sma_id, q, sizeof(q)));
			g->st.unauthorized++;
			cats_audit("ingest-refused", "sma=%s peer=%s status=403 "
			    "reason=\"%s\"", q, peer, a.reason);
			break;
		}
		a.key = who;
		/* The client certificate: the C-SMAs it speaks for. */
		if (cert != NULL && cert->nsma > 0 &&
		    !named(cert->sma, cert->nsma, sma_id)) {
			refuse(&a, 403, CATS_ACK_UNAUTHORIZED, "record %zu: the "
			    "client certificate does not name C-SMA %s", index,
			    cats_safe(sma_id, q, sizeof(q)));
			g->st.unauthorized++;
			g->st.cert_refused++;
			cats_audit("ingest-refused", "sma=%s peer=%s status=403 "
			    "reason=\"%s\"", q, peer, a.reason);
			break;
		}
		/* Freshness: the window and a strictly increasing nonce. */
		int rc = has_nonce ? cats_replay_check(g->guard, sma_id, ts,
		    nonce, now) : CATS_REPLAY_NONCE;
		if (rc != CATS_REPLAY_OK) {
			if (!has_nonce)
				refuse(&a, 409, CATS_ACK_REPLAY, "record %zu: no "
				    "nonce", index);
			else
				refuse(&a, 409, CATS_ACK_REPLAY, "record %zu: %s "
				    "(ts %" PRIu64 ", nonce %" PRIu64 ")", index,
				    cats_replay_reason(rc), ts, nonce);
			g->st.replays++;
			cats_audit("ingest-refused", "sma=%s peer=%s status=409 "
			    "reason=\"%s\"", cats_safe(sma_id, q, sizeof(q)), peer,
			    a.reason);
			break;
		}
		if (want_sync) {
			retrieved = true;
			retrieve_full = r.u.sync.mode == CATS_SYNC_FULL;
			g->st.retrievals++;
			index++;
			break;
		}
		/* Authorization: the CS-IDs this C-SMA may advertise. */
		const struct cats_metric *m = &r.u.metric;
		struct peer *pe = peer_get(g, sma_id, false);
		const char *bad = NULL;
		for (size_t i = 0; bad == NULL && i < m->entries.n; i++)
			if (!allowed(pe, m->entries.v[i].cs_id))
				bad = m->entries.v[i].cs_id;
		for (size_t i = 0; bad == NULL && i < m->sites.n; i++)
			if (!allowed(pe, m->sites.v[i].cs_id))
				bad = m->sites.v[i].cs_id;
		if (bad != NULL) {
			char b[CATS_ID + 1];
			refuse(&a, 403, CATS_ACK_UNAUTHORIZED, "record %zu: %s "
			    "may not advertise CS-ID %s", index,
			    cats_safe(sma_id, q, sizeof(q)), cats_safe(bad, b,
			    sizeof(b)));
			g->st.unauthorized++;
			cats_audit("ingest-refused", "sma=%s peer=%s status=403 "
			    "reason=\"%s\"", q, peer, a.reason);
			break;
		}
		char why[200];
		if (cert != NULL && cert_scope(cert, m, why, sizeof(why))) {
			refuse(&a, 403, CATS_ACK_UNAUTHORIZED, "record %zu: %s",
			    index, why);
			g->st.unauthorized++;
			g->st.cert_refused++;
			cats_audit("ingest-refused", "sma=%s peer=%s status=403 "
			    "reason=\"%s\"", cats_safe(sma_id, q, sizeof(q)),
			    peer, a.reason);
			break;
		}
		if ((op == CATS_ING_UPDATE && (m->op != CATS_OP_DELTA ||
		    m->entries.n != 1)) ||
		    (op == CATS_ING_WITHDRAW && m->op != CATS_OP_WITHDRAW)) {
			refuse(&a, 400, CATS_ACK_BAD, "record %zu: /%s takes %s",
			    index, op_name(op), op == CATS_ING_UPDATE ?
			    "a delta of one entry" : "withdrawals");
			break;
		}
		if (m->op == CATS_OP_RELEASE) {
			refuse(&a, 400, CATS_ACK_BAD, "record %zu: op release "
			    "is the operator's, not a C-SMA's", index);
			g->st.unauthorized++;
			break;
		}
		struct cats_cst_result res;
		cats_cst_apply(g->cst, m, now, &res);
		g->st.entries_applied += res.applied;
		g->st.entries_removed += res.removed;
		if (res.result == CATS_ACK_STALE) {
			g->st.stale++;
			if (a.result == CATS_ACK_OK)
				a.result = CATS_ACK_STALE;
		} else if (res.result != CATS_ACK_OK) {
			/* Outside the sender's scope: not its to say (403);
			 * another's instance, a full table: a conflict. */
			int st = res.forbidden ? 403 : 409;
			char o[CATS_ID + 1];
			refuse(&a, st, res.forbidden ? CATS_ACK_UNAUTHORIZED :
			    CATS_ACK_BAD, "record %zu: %s", index, res.reason);
			if (res.forbidden)
				g->st.unauthorized++;
			else
				g->st.conflicts++;
			cats_audit("ingest-refused", "sma=%s owner=%s peer=%s "
			    "status=%d reason=\"%s\"", cats_safe(sma_id, q,
			    sizeof(q)), res.conflict ? cats_safe(res.owner, o,
			    sizeof(o)) : "-", peer, st, a.reason);
			break;
		} else {
			if (res.taken_over > 0) {
				char o[CATS_ID + 1];
				cats_audit("instance-takeover", "sma=%s from=%s "
				    "peer=%s entries=%zu reason=\"the owner's "
				    "entries had expired\"", cats_safe(sma_id, q,
				    sizeof(q)), cats_safe(res.owner, o,
				    sizeof(o)), peer, res.taken_over);
			}
			g->st.applied++;
			if (g->c.applied != NULL)
				g->c.applied(m, g->c.applied_arg);
		}
		if (pe == NULL)
			pe = peer_get(g, sma_id, true);
		bool snapshot = m->op == CATS_OP_FULL ||
		    (m->op == CATS_OP_HEARTBEAT && m->entries.n > 0);
		uint64_t part = CATS_HAS(m, MET, part) ? m->part : 1;
		uint64_t parts = CATS_HAS(m, MET, parts) ? m->parts : 1;
		if (res.resync && res.result == CATS_ACK_OK) {
			g->st.resync++;
			if (pe != NULL && !pe->want_full) {
				pe->want_full = true;
				g->st.full_wanted++;
				cats_info("C-SMA %s: %s; asking for a full sync",
				    cats_safe(sma_id, q, sizeof(q)), res.reason);
			}
		} else if (snapshot && part == parts &&
		    res.result == CATS_ACK_OK && pe != NULL) {
			pe->want_full = false;
		}
		if (a.result == CATS_ACK_OK && res.resync)
			a.result = CATS_ACK_RESYNC;
		index++;
	}
	if (a.status == 400) {
		/* Every 400 is audited here, once (the other refusals where
		 * they are decided). */
		char q4[CATS_ID + 1];
		g->st.bad++;
		cats_audit_limited("ingest-refused", "sma=%s peer=%s "
		    "status=400 "
		    "reason=\"%s\"", a.sma_id[0] ? cats_safe(a.sma_id, q4,
		    sizeof(q4)) : "-", peer, a.reason);
	}
	if (a.status >= 400 && !a.has_reason)
		a.has_reason = true;
	add_answer(g, &a, now, out);
	if (retrieved && retrieve_full && a.status == 200) {
		struct dump_ctx dc = { a.sma_id, out };
		cats_cst_dump(g->cst, now, dump_one, &dc);
	}
	return a.status;
}

void
cats_ingest_serve(struct cats_ingest *g, struct evhttp_request *req,
    uint64_t now)
{
	char ct[64], peer[80];
	const char *uri = evhttp_request_get_uri(req);
	int op = CATS_ING_METRICS;
	for (int i = 0; i < CATS_ING__N; i++)
		if (strncmp(uri, cats_ingest_paths[i],
		    strlen(cats_ingest_paths[i])) == 0)
			op = i;
	httpd_ctype(req, ct, sizeof(ct));
	if (strcmp(ct, "application/cbor-seq") != 0 &&
	    strcmp(ct, "application/cbor") != 0) {
		httpd_error(req, 415, "expected application/cbor-seq");
		return;
	}
	/* Mutual TLS: what the client certificate names limits the sender. */
	char ubuf[4096];
	const char *uris[3 * CATS_INGEST_CERT_MAX];
	struct cats_ingest_cert cert;
	int nu = httpd_peer_uris(req, ubuf, sizeof(ubuf), uris,
	    CATS_ARRAY_LEN(uris));
	httpd_peer(req, peer, sizeof(peer));
	if (nu == -2 || (nu >= 0 && cats_ingest_cert_parse(&cert, uris,
	    (size_t)nu) < 0)) {
		g->st.requests++;
		g->st.unauthorized++;
		g->st.cert_refused++;
		cats_audit_limited("ingest-refused", "sma=- peer=%s "
		    "status=403 "
		    "reason=\"the client certificate names more than %d "
		    "identities of a kind, or too long ones\"", peer,
		    CATS_INGEST_CERT_MAX);
		httpd_error(req, 403, "the client certificate names too many "
		    "identities");
		return;
	}
	size_t n;
	const uint8_t *p = httpd_body(req, &n);
	struct cats_buf out = { 0 };
	int st = cats_ingest_handle_cert(g, op, p, p ? n : 0, peer,
	    nu >= 0 ? &cert : NULL, now, &out);
	httpd_reply(req, st, "application/cbor-seq", out.p, out.len);
	cats_buf_free(&out);
}
