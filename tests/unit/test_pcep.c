/*
 * test_pcep.c - the PCEP speaker: the byte-level vectors of tests/data/pcep
 * (README there: *.vec decode one message, *.ses script a session), the
 * caps on both sides of each boundary, the session timers, and the
 * translation to and from path records held equal to cats-pce's answers on
 * the lab requests.
 */
#include <dirent.h>
#include <jansson.h>
#include <poll.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pce/pce.h"
#include "pce/pcep.h"
#include "pce/pcep_srv.h"
#include "base/clock.h"
#include "net/ep.h"
#include "rec/json.h"
#include "t.h"

#define DIR_DEFAULT "tests/data/pcep"
#define LAB "tests/data/pce/lab.json"
#define REQUESTS "tests/data/pce/requests.jsonl"

/* ---- text ---- */

struct sbuf {
	char s[65536];
	size_t n;
};

__attribute__((format(printf, 2, 3))) static void
sb(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(b->s + b->n, sizeof(b->s) - b->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		b->n += (size_t)k < sizeof(b->s) - b->n ? (size_t)k :
		    sizeof(b->s) - b->n - 1;
}

static const char *
ip(const struct cats_ip *a, char *buf)
{
	const char *s = cats_ip_fmt(a, buf, 64);
	return s ? s : "-";
}

/* Hex digits (spaces and newlines between them ignored) into out. */
static long
unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1;
	for (; *s; s++) {
		int v;
		if (*s >= '0' && *s <= '9')
			v = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			v = *s - 'a' + 10;
		else if (*s >= 'A' && *s <= 'F')
			v = *s - 'A' + 10;
		else if (*s == ' ' || *s == '\t' || *s == '\n')
			continue;
		else
			return -1;
		if (hi < 0)
			hi = v;
		else {
			if (n == cap)
				return -1;
			out[n++] = (uint8_t)(hi << 4 | v);
			hi = -1;
		}
	}
	return hi < 0 ? (long)n : -1;
}

/* ---- the canonical text of a decoded message (README) ---- */

static void
dump_open(struct sbuf *b, const char *what, const struct cats_pcep_open *o)
{
	sb(b, "%s ver=%u ka=%u dt=%u sid=%u", what, o->version, o->keepalive,
	    o->deadtimer, o->sid);
	if (o->stateful)
		sb(b, " stateful");
	if (o->pst_cap) {
		sb(b, " pst=");
		for (size_t i = 0; i < o->npsts; i++)
			sb(b, "%s%u", i ? "," : "", o->psts[i]);
	}
	if (o->sr)
		sb(b, " sr=%02x/%u%s", o->sr_flags, o->msd,
		    o->sr_legacy ? "/legacy" : "");
	if (o->srv6) {
		sb(b, " srv6=%04x", o->srv6_flags);
		for (size_t i = 0; i < o->nsrv6_msd; i++)
			sb(b, "/%u:%u", o->srv6_msd[i].type,
			    o->srv6_msd[i].value);
	}
	sb(b, "\n");
}

static void
dump_rp(struct sbuf *b, const char *what, const struct cats_pcep_rp *rp)
{
	sb(b, "%s id=%u flags=%08x p=%d", what, rp->id, rp->flags, rp->p);
	if (rp->has_pst)
		sb(b, " pst=%u", rp->pst);
}

static void
dump_attrs(struct sbuf *b, const struct cats_pcep_attrs *a)
{
	char x[64];
	if (a->has_lspa)
		sb(b, " lspa %08x %08x %08x %u %u %d\n", a->lspa.exclude_any,
		    a->lspa.include_any, a->lspa.include_all, a->lspa.setup,
		    a->lspa.hold, a->lspa.local_prot);
	if (a->has_bw)
		sb(b, " bw %u %g\n", a->bw_type, (double)a->bw);
	for (size_t i = 0; i < a->nmetrics; i++)
		sb(b, " metric %u b=%d c=%d %g\n", a->metrics[i].type,
		    a->metrics[i].bound, a->metrics[i].computed,
		    (double)a->metrics[i].value);
	if (a->has_xro) {
		sb(b, " xro %04x\n", a->xro.flags);
		for (size_t i = 0; i < a->xro.n; i++) {
			const struct cats_pcep_xsub *s = &a->xro.v[i];
			switch (s->type) {
			case CATS_PCEP_SO_IPV4:
			case CATS_PCEP_SO_IPV6:
				sb(b, "  x ip %d %s/%u %u\n", s->desirable,
				    ip(&s->addr, x), s->plen, s->attr);
				break;
			case CATS_PCEP_SO_UNNUM:
				sb(b, "  x unnum %d %s %u %u\n", s->desirable,
				    ip(&s->addr, x), s->ifid, s->attr);
				break;
			case CATS_PCEP_SO_SRLG:
				sb(b, "  x srlg %d %u %u\n", s->desirable,
				    s->srlg, s->attr);
				break;
			case CATS_PCEP_SO_AS:
				sb(b, "  x as %d %u\n", s->desirable, s->asn);
				break;
			default:
				sb(b, "  x type=%u %d\n", s->type,
				    s->desirable);
				break;
			}
		}
	}
	if (a->has_of)
		sb(b, " of %u\n", a->of);
}

static void
dump_nai(struct sbuf *b, const struct cats_pcep_hop *h)
{
	char x[64], y[64];
	if (!h->has_nai)
		return;
	switch (h->nt) {
	case CATS_PCEP_NAI_IPV4_NODE:
	case CATS_PCEP_NAI_IPV6_NODE:
		sb(b, " nai=%s", ip(&h->local, x));
		break;
	case CATS_PCEP_NAI_IPV4_ADJ:
	case CATS_PCEP_NAI_IPV6_ADJ:
		sb(b, " nai=%s,%s", ip(&h->local, x), ip(&h->remote, y));
		break;
	default:
		sb(b, " nai=%s:%u,%s:%u", ip(&h->local, x), h->local_if,
		    ip(&h->remote, y), h->remote_if);
		break;
	}
}

static void
dump_hop(struct sbuf *b, const struct cats_pcep_hop *h)
{
	char x[64];
	switch (h->type) {
	case CATS_PCEP_SO_SR:
		sb(b, "  sr l=%d nt=%u f=%03x", h->loose, h->nt, h->flags);
		if (h->has_sid)
			sb(b, " sid=%08x", h->sid);
		dump_nai(b, h);
		break;
	case CATS_PCEP_SO_SRV6:
		sb(b, "  srv6 l=%d nt=%u f=%03x b=%u", h->loose, h->nt,
		    h->flags, h->behavior);
		if (h->has_sid) {
			struct cats_ip s = { .af = 6 };
			memcpy(s.a, h->sid6, 16);
			sb(b, " sid=%s", ip(&s, x));
		}
		dump_nai(b, h);
		if (h->has_struct)
			sb(b, " st=%u,%u,%u,%u", h->lb, h->ln, h->fun, h->arg);
		break;
	case CATS_PCEP_SO_IPV4:
	case CATS_PCEP_SO_IPV6:
		sb(b, "  ip l=%d %s/%u", h->loose, ip(&h->local, x), h->plen);
		break;
	default:
		sb(b, "  so type=%u l=%d", h->type, h->loose);
		break;
	}
	sb(b, "\n");
}

static void
dump_st(struct sbuf *b, const struct cats_pcep_status *st)
{
	if (st->code == CATS_PCEP_ST_OK)
		sb(b, " st=ok");
	else
		sb(b, " st=%u/%u", st->err_type, st->err_value);
}

static void
dump(struct sbuf *b, const struct cats_pcep_msg *m)
{
	char x[64], y[64];
	sb(b, "msg %s len=%u\n", cats_pcep_msg_name(m->type), m->len);
	switch (m->type) {
	case CATS_PCEP_OPEN:
		dump_open(b, "open", &m->open);
		break;
	case CATS_PCEP_CLOSE:
		sb(b, "close reason=%u\n", m->close_reason);
		break;
	case CATS_PCEP_PCREQ:
		for (size_t i = 0; i < m->nreqs; i++) {
			const struct cats_pcep_req *r = &m->reqs[i];
			dump_rp(b, "req", &r->rp);
			dump_st(b, &r->st);
			sb(b, "\n");
			if (r->has_ep)
				sb(b, " ep %s %s\n", ip(&r->ep.src, x),
				    ip(&r->ep.dst, y));
			dump_attrs(b, &r->a);
		}
		break;
	case CATS_PCEP_PCREP:
		for (size_t i = 0; i < m->nreps; i++) {
			const struct cats_pcep_rep *r = &m->reps[i];
			dump_rp(b, "rep", &r->rp);
			sb(b, "\n");
			if (r->nopath)
				sb(b, " nopath ni=%u c=%d vector=%x\n", r->ni,
				    r->nopath_c, r->vector);
			if (r->has_ero) {
				sb(b, " ero %zu\n", r->nero);
				for (size_t k = 0; k < r->nero; k++)
					dump_hop(b, &r->ero[k]);
			}
			dump_attrs(b, &r->a);
		}
		break;
	case CATS_PCEP_PCERR:
		sb(b, "err ids=");
		for (size_t i = 0; i < m->err.nids; i++)
			sb(b, "%s%u", i ? "," : "", m->err.ids[i]);
		sb(b, "\n");
		for (size_t i = 0; i < m->err.n; i++)
			sb(b, " error %u/%u\n", m->err.v[i].type,
			    m->err.v[i].value);
		if (m->err.has_open)
			dump_open(b, " proposal", &m->err.open);
		break;
	case CATS_PCEP_PCNTF:
		sb(b, "ntf ids=");
		for (size_t i = 0; i < m->nntf_ids; i++)
			sb(b, "%s%u", i ? "," : "", m->ntf_ids[i]);
		sb(b, "\n");
		for (size_t i = 0; i < m->nntfs; i++)
			sb(b, " ntf %u/%u\n", m->ntfs[i].type,
			    m->ntfs[i].value);
		break;
	default:
		break;
	}
}

/* ---- the files ---- */

struct kv {
	char *key, *val;
};

struct file {
	char name[256];
	struct kv kv[512];
	size_t n;
	char *text;
};

/* Lines "key: value"; a value may continue on indented lines; "dump:" takes
 * every following line up to "end". */
static int
load(const char *path, struct file *f)
{
	FILE *fp = fopen(path, "r");
	if (fp == NULL)
		return -1;
	fseek(fp, 0, SEEK_END);
	long sz = ftell(fp);
	rewind(fp);
	f->text = malloc((size_t)sz + 1);
	if (f->text == NULL ||
	    fread(f->text, 1, (size_t)sz, fp) != (size_t)sz) {
		fclose(fp);
		return -1;
	}
	fclose(fp);
	f->text[sz] = 0;
	f->n = 0;
	char *save, *line = strtok_r(f->text, "\n", &save);
	while (line != NULL && f->n < CATS_ARRAY_LEN(f->kv)) {
		if (line[0] == '#' || line[0] == 0) {
			line = strtok_r(NULL, "\n", &save);
			continue;
		}
		char *c = strchr(line, ':');
		if (c == NULL)
			return -1;
		*c = 0;
		char *v = c + 1;
		while (*v == ' ')
			v++;
		if (strcmp(line, "dump") == 0) {
			/* Everything to "end", newlines kept. */
			char *start = save, *e = strstr(save, "\nend\n");
			if (strncmp(save, "end\n", 4) == 0)
				e = save - 1;
			if (e == NULL)
				return -1;
			*e = 0;
			f->kv[f->n].key = line;
			f->kv[f->n++].val = e == save - 1 ? e : start;
			save = e + 5;
			line = strtok_r(NULL, "\n", &save);
			continue;
		}
		f->kv[f->n].key = line;
		f->kv[f->n++].val = v;
		line = strtok_r(NULL, "\n", &save);
	}
	return 0;
}

static const char *
get(const struct file *f, const char *key)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->kv[i].key, key) == 0)
			return f->kv[i].val;
	return NULL;
}

/* The expected status "ok", "incomplete", "close R", "ignored",
 * "pcerr T/V" with optional " id N" and " ids A,B". */
static void
status_text(char *buf, size_t len, long fl, int rc,
    const struct cats_pcep_status *st, const struct cats_pcep_msg *m)
{
	if (fl == 0) {
		snprintf(buf, len, "incomplete");
		return;
	}
	if (fl < 0 || st->code == CATS_PCEP_ST_CLOSE) {
		snprintf(buf, len, "close %u", st->close_reason);
		return;
	}
	if (rc == 0) {
		snprintf(buf, len, "ok");
		return;
	}
	if (st->code == CATS_PCEP_ST_IGNORED) {
		snprintf(buf, len, "ignored");
		return;
	}
	size_t n = (size_t)snprintf(buf, len, "pcerr %u/%u", st->err_type,
	    st->err_value);
	if (st->has_req)
		n += (size_t)snprintf(buf + n, len - n, " id %u", st->req_id);
	if (m->type == CATS_PCEP_PCREQ && m->nreqs > 0) {
		n += (size_t)snprintf(buf + n, len - n, " ids ");
		for (size_t i = 0; i < m->nreqs && n < len; i++)
			n += (size_t)snprintf(buf + n, len - n, "%s%u",
			    i ? "," : "", m->reqs[i].rp.id);
	}
}

static uint8_t msgbuf[CATS_PCEP_MSG_MAX + 16];

/* Re-encode a decoded message with the speaker's encoder. */
static int
reencode(const struct cats_pcep_msg *m, struct cats_buf *out)
{
	switch (m->type) {
	case CATS_PCEP_OPEN:
		return cats_pcep_put_open(out, &m->open);
	case CATS_PCEP_KEEPALIVE:
		return cats_pcep_put_keepalive(out);
	case CATS_PCEP_CLOSE:
		return cats_pcep_put_close(out, m->close_reason);
	case CATS_PCEP_PCREQ:
		return cats_pcep_put_pcreq(out, m->reqs, m->nreqs);
	case CATS_PCEP_PCREP:
		return cats_pcep_put_pcrep(out, m->reps, m->nreps);
	case CATS_PCEP_PCERR:
		return cats_pcep_put_pcerr(out, m->err.ids, m->err.nids,
		    m->err.v, m->err.n, m->err.has_open ? &m->err.open : NULL);
	default:
		return -1;
	}
}

static void
run_vec(const char *path, const char *name)
{
	static struct file f;
	if (load(path, &f) < 0) {
		T_OK(0, "%s: readable", name);
		return;
	}
	const char *hex = get(&f, "hex"), *want = get(&f, "expect");
	long n = hex ? unhex(hex, msgbuf, sizeof(msgbuf)) : -1;
	if (n < 0 || want == NULL) {
		T_OK(0, "%s: hex and expect", name);
		free(f.text);
		return;
	}
	struct cats_pcep_limits lim = cats_pcep_limits_default;
	const char *mm = get(&f, "max_msg");
	if (mm)
		lim.max_msg = strtoul(mm, NULL, 10);
	struct cats_arena a = { 0 };
	struct cats_pcep_msg m;
	struct cats_pcep_status st = { 0 };
	memset(&m, 0, sizeof(m));
	long fl = cats_pcep_frame(msgbuf, (size_t)n, &lim, &st);
	int rc = -1;
	if (fl > 0)
		rc = cats_pcep_decode(msgbuf, (size_t)fl, &lim, &m, &a, &st);
	char got[512];
	status_text(got, sizeof(got), fl, rc, &st, &m);
	T_OK(strcmp(got, want) == 0, "%s: %s (got %s: %s)", name, want, got,
	    st.why ? st.why : "");
	const char *d = get(&f, "dump");
	if (d != NULL) {
		static struct sbuf b;
		b.n = 0;
		b.s[0] = 0;
		dump(&b, &m);
		bool same = strcmp(b.s, d) == 0 || (b.n > 0 &&
		    strncmp(b.s, d, b.n - 1) == 0 && d[b.n - 1] == 0);
		if (!T_OK(same, "%s: decoded as expected", name))
			printf("# got:\n%s# want:\n%s\n", b.s, d);
	}
	const char *rt = get(&f, "roundtrip");
	if (rc == 0 && rt != NULL && strcmp(rt, "yes") == 0) {
		struct cats_buf out = { 0 };
		int er = reencode(&m, &out);
		T_OK(er == 0 && out.len == (size_t)n &&
		    memcmp(out.p, msgbuf, (size_t)n) == 0,
		    "%s: encodes back to the same bytes", name);
		cats_buf_free(&out);
	}
	cats_arena_free(&a);
	free(f.text);
}

/* ---- session scripts ---- */

static const char *
ev_name(int k)
{
	static const char *const n[] = { "none", "up", "msg", "answered",
	    "closed" };
	return k >= 0 && k < 5 ? n[k] : "?";
}

/* The event as the scripts write it. */
static void
ev_text(char *buf, size_t len, int rc, const struct cats_pcep_ev *ev)
{
	if (rc == 0) {
		snprintf(buf, len, "none");
		return;
	}
	size_t n = (size_t)snprintf(buf, len, "%s", ev_name(ev->kind));
	if (ev->kind == CATS_PCEP_EV_MSG)
		snprintf(buf + n, len - n, " %s",
		    cats_pcep_msg_name(ev->msg->type));
	else if (ev->kind == CATS_PCEP_EV_ANSWERED && ev->st.err_type)
		snprintf(buf + n, len - n, " %u/%u", ev->st.err_type,
		    ev->st.err_value);
	else if (ev->kind == CATS_PCEP_EV_CLOSED) {
		if (ev->st.close_reason)
			snprintf(buf + n, len - n, " close %u",
			    ev->st.close_reason);
		else if (ev->st.err_type)
			snprintf(buf + n, len - n, " pcerr %u/%u",
			    ev->st.err_type, ev->st.err_value);
	}
}

static void
conf_set(struct cats_pcep_conf *c, const char *spec)
{
	char buf[256];
	cats_strlcpy(buf, spec, sizeof(buf));
	char *save, *w = strtok_r(buf, " ", &save);
	for (; w; w = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(w, '=');
		if (eq == NULL)
			continue;
		*eq = 0;
		unsigned long v = strtoul(eq + 1, NULL, 0);
		if (strcmp(w, "keepalive") == 0)
			c->keepalive = (uint8_t)v;
		else if (strcmp(w, "deadtimer") == 0)
			c->deadtimer = (uint8_t)v;
		else if (strcmp(w, "msd") == 0)
			c->msd = (uint8_t)v;
		else if (strcmp(w, "srv6_msd") == 0)
			c->srv6_msd = (uint8_t)v;
		else if (strcmp(w, "sid") == 0)
			c->sid = (uint8_t)v;
		else if (strcmp(w, "sr") == 0)
			c->sr = v != 0;
		else if (strcmp(w, "srv6") == 0)
			c->srv6 = v != 0;
	}
}

static void
run_ses(const char *path, const char *name)
{
	static struct file f;
	if (load(path, &f) < 0) {
		T_OK(0, "%s: readable", name);
		return;
	}
	struct cats_pcep_conf c;
	const char *role = get(&f, "role");
	cats_pcep_conf_default(&c, role == NULL || strcmp(role, "pce") == 0);
	const char *cs = get(&f, "conf");
	if (cs)
		conf_set(&c, cs);
	struct cats_pcep_sess s;
	uint64_t now = 0;
	const char *at0 = get(&f, "start");
	if (at0)
		now = strtoull(at0, NULL, 10);
	cats_pcep_sess_init(&s, &c, now);
	bool ok = true;
	size_t step = 0;
	for (size_t i = 0; i < f.n && ok; i++) {
		const char *k = f.kv[i].key, *v = f.kv[i].val;
		step++;
		if (strcmp(k, "at") == 0)
			now = strtoull(v, NULL, 10);
		else if (strcmp(k, "in") == 0) {
			long n = unhex(v, msgbuf, sizeof(msgbuf));
			ok = n >= 0 && cats_pcep_sess_feed(&s, msgbuf,
			    (size_t)n) == 0;
			if (!ok)
				T_OK(0, "%s: step %zu: feed", name, step);
		} else if (strcmp(k, "event") == 0) {
			struct cats_pcep_ev ev;
			int rc = cats_pcep_sess_next(&s, now, &ev);
			char got[128];
			ev_text(got, sizeof(got), rc, &ev);
			ok = strcmp(got, v) == 0;
			if (!ok)
				T_OK(0, "%s: step %zu: event %s (got %s: %s)",
				    name, step, v, got,
				    ev.st.why ? ev.st.why : "");
		} else if (strcmp(k, "out") == 0) {
			long n = strcmp(v, "-") == 0 ? 0 :
			    unhex(v, msgbuf, sizeof(msgbuf));
			ok = n >= 0 && s.out.len == (size_t)n &&
			    memcmp(s.out.p, msgbuf, (size_t)n) == 0;
			if (!ok) {
				T_OK(0, "%s: step %zu: out", name, step);
				printf("# got:");
				for (size_t b = 0; b < s.out.len; b++)
					printf(" %02x", s.out.p[b]);
				printf("\n");
			}
			cats_buf_reset(&s.out);
		} else if (strcmp(k, "state") == 0) {
			ok = strcmp(cats_pcep_state_name(s.state), v) == 0;
			if (!ok)
				T_OK(0, "%s: step %zu: state %s (got %s)", name,
				    step, v, cats_pcep_state_name(s.state));
		} else if (strcmp(k, "deadline") == 0) {
			uint64_t d = cats_pcep_sess_deadline(&s);
			ok = strcmp(v, "none") == 0 ? d == UINT64_MAX :
			    d == strtoull(v, NULL, 10);
			if (!ok)
				T_OK(0, "%s: step %zu: deadline %s (got %llu)",
				    name, step, v, (unsigned long long)d);
		}
	}
	if (ok)
		T_OK(1, "%s: %zu steps", name, step);
	cats_pcep_sess_free(&s);
	free(f.text);
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d == NULL) {
		T_OK(0, "%s: readable", dir);
		return;
	}
	char *names[1024];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL && n < CATS_ARRAY_LEN(names)) {
		size_t l = strlen(e->d_name);
		if (l > 4 && (strcmp(e->d_name + l - 4, ".vec") == 0 ||
		    strcmp(e->d_name + l - 4, ".ses") == 0))
			names[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), name_cmp);
	size_t vec = 0, ses = 0;
	for (size_t i = 0; i < n; i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (strstr(names[i], ".vec")) {
			run_vec(path, names[i]);
			vec++;
		} else {
			run_ses(path, names[i]);
			ses++;
		}
		free(names[i]);
	}
	T_OK(vec >= 60 && ses >= 15, "%zu vectors and %zu session scripts",
	    vec, ses);
}

/* ---- caps on both sides of each boundary, built here ---- */

static struct cats_buf mb;

static void
m_begin(uint8_t type)
{
	cats_buf_reset(&mb);
	uint8_t h[4] = { 0x20, type, 0, 0 };
	cats_buf_add(&mb, h, 4);
}

static void
m_obj(uint8_t cls, uint8_t type, bool p, const void *body, size_t n)
{
	uint8_t h[4] = { cls, (uint8_t)(type << 4 | (p ? 2 : 0)),
	    (uint8_t)((n + 4) >> 8), (uint8_t)(n + 4) };
	cats_buf_add(&mb, h, 4);
	cats_buf_add(&mb, body, n);
}

static void
m_end(void)
{
	mb.p[2] = (uint8_t)(mb.len >> 8);
	mb.p[3] = (uint8_t)mb.len;
}

static void
m_req(uint32_t id)
{
	uint8_t rp[8] = { 0, 0, 0, 0, (uint8_t)(id >> 24), (uint8_t)(id >> 16),
	    (uint8_t)(id >> 8), (uint8_t)id };
	uint8_t ep[8] = { 192, 0, 2, 1, 192, 0, 2, 2 };
	m_obj(CATS_PCEP_OC_RP, 1, true, rp, 8);
	m_obj(CATS_PCEP_OC_ENDPOINTS, 1, true, ep, 8);
}

/* Decode mb: the status code and, for PCReq, the first request's. */
static int
m_decode(const struct cats_pcep_limits *lim, struct cats_pcep_msg *m,
    struct cats_arena *a, struct cats_pcep_status *st)
{
	m_end();
	cats_arena_reset(a);
	return cats_pcep_decode(mb.p, mb.len, lim, m, a, st);
}

static void
test_caps(void)
{
	struct cats_pcep_limits lim = cats_pcep_limits_default;
	struct cats_arena a = { 0 };
	struct cats_pcep_msg m;
	struct cats_pcep_status st;

	/* max_msg: a message of exactly max_msg frames, one more does not. */
	uint8_t h[4] = { 0x20, 3, (uint8_t)(lim.max_msg >> 8),
	    (uint8_t)lim.max_msg };
	T_OK(cats_pcep_frame(h, 4, &lim, &st) == 0,
	    "a message of max_msg bytes waits for its bytes");
	h[3]++;
	T_OK(cats_pcep_frame(h, 4, &lim, &st) < 0 &&
	    st.close_reason == CATS_PCEP_CLOSE_MALFORMED,
	    "max_msg + 1 bytes: refused from the header alone");
	/* A PCReq padded with ignored objects to exactly max_msg. */
	m_begin(CATS_PCEP_PCREQ);
	m_req(1);
	static uint8_t pad[4096];
	while (mb.len + 4 + 4000 <= lim.max_msg)
		m_obj(99, 1, false, pad, 4000);
	m_obj(99, 1, false, pad, lim.max_msg - mb.len - 4);
	T_OK(mb.len == lim.max_msg && m_decode(&lim, &m, &a, &st) == 0 &&
	    m.nreqs == 1 && m.reqs[0].st.code == CATS_PCEP_ST_OK,
	    "a PCReq of max_msg bytes decodes");

	/* Objects: max_objs, then one more. */
	m_begin(CATS_PCEP_PCREQ);
	m_req(2);
	for (size_t i = 2; i < lim.max_objs; i++)
		m_obj(99, 1, false, NULL, 0);
	T_OK(m_decode(&lim, &m, &a, &st) == 0, "%zu objects decode",
	    lim.max_objs);
	m_obj(99, 1, false, NULL, 0);
	T_OK(m_decode(&lim, &m, &a, &st) < 0 &&
	    st.err_value == CATS_PCEP_EV_MALFORMED && m.nreqs == 1 &&
	    m.reqs[0].rp.id == 2, "%zu objects: PCErr 10/11 naming request 2",
	    lim.max_objs + 1);

	/* Requests: max_reqs, then one more. */
	m_begin(CATS_PCEP_PCREQ);
	for (uint32_t i = 1; i <= lim.max_reqs; i++)
		m_req(i);
	T_OK(m_decode(&lim, &m, &a, &st) == 0 && m.nreqs == lim.max_reqs,
	    "%zu requests decode", lim.max_reqs);
	m_req(999);
	T_OK(m_decode(&lim, &m, &a, &st) < 0 && m.nreqs == lim.max_reqs,
	    "%zu requests: refused, the first %zu named", lim.max_reqs + 1,
	    lim.max_reqs);

	/* METRIC objects of one request. */
	m_begin(CATS_PCEP_PCREQ);
	m_req(3);
	uint8_t met[8] = { 0, 0, 0, 2, 0, 0, 0, 0 };
	for (size_t i = 0; i < lim.max_metrics; i++)
		m_obj(CATS_PCEP_OC_METRIC, 1, true, met, 8);
	T_OK(m_decode(&lim, &m, &a, &st) == 0 &&
	    m.reqs[0].st.code == CATS_PCEP_ST_OK &&
	    m.reqs[0].a.nmetrics == lim.max_metrics, "%zu METRIC objects",
	    lim.max_metrics);
	m_obj(CATS_PCEP_OC_METRIC, 1, true, met, 8);
	T_OK(m_decode(&lim, &m, &a, &st) == 0 &&
	    m.reqs[0].st.err_value == CATS_PCEP_EV_MALFORMED,
	    "%zu METRIC objects: the request gets 10/11", lim.max_metrics + 1);

	/* TLVs of one object (the RP). */
	for (size_t k = lim.max_tlvs; k <= lim.max_tlvs + 1; k++) {
		m_begin(CATS_PCEP_PCREQ);
		uint8_t rp[8 + 4 * 32] = { 0, 0, 0, 0, 0, 0, 0, 4 };
		for (size_t i = 0; i < k; i++) {
			rp[8 + 4 * i] = 0x7f;	/* unknown TLV type 0x7f00 */
		}
		m_obj(CATS_PCEP_OC_RP, 1, true, rp, 8 + 4 * k);
		uint8_t ep[8] = { 192, 0, 2, 1, 192, 0, 2, 2 };
		m_obj(CATS_PCEP_OC_ENDPOINTS, 1, true, ep, 8);
		int rc = m_decode(&lim, &m, &a, &st);
		bool okk = rc == 0 && m.reqs[0].st.code == CATS_PCEP_ST_OK;
		T_OK(k == lim.max_tlvs ? okk : !okk && rc == 0 &&
		    m.reqs[0].st.err_value == CATS_PCEP_EV_MALFORMED,
		    "%zu TLVs in the RP: %s", k, k == lim.max_tlvs ? "decode" :
		    "10/11");
	}

	/* Subobjects of one XRO. */
	for (size_t k = lim.max_subobjs; k <= lim.max_subobjs + 1; k++) {
		m_begin(CATS_PCEP_PCREQ);
		m_req(5);
		static uint8_t x[4 + 8 * 80];
		memset(x, 0, sizeof(x));
		for (size_t i = 0; i < k; i++) {
			uint8_t *s = x + 4 + 8 * i;
			s[0] = CATS_PCEP_SO_SRLG;
			s[1] = 8;
			s[5] = (uint8_t)i;
			s[7] = 2;
		}
		m_obj(CATS_PCEP_OC_XRO, 1, true, x, 4 + 8 * k);
		int rc = m_decode(&lim, &m, &a, &st);
		T_OK(rc == 0 && (k == lim.max_subobjs ?
		    m.reqs[0].st.code == CATS_PCEP_ST_OK &&
		    m.reqs[0].a.xro.n == k :
		    m.reqs[0].st.err_value == CATS_PCEP_EV_MALFORMED),
		    "%zu XRO subobjects", k);
	}

	/* The session's input buffer. */
	struct cats_pcep_conf c;
	cats_pcep_conf_default(&c, true);
	struct cats_pcep_sess s;
	cats_pcep_sess_init(&s, &c, 0);
	static uint8_t junk[2 * 16384 + 1];
	T_OK(cats_pcep_sess_feed(&s, junk, 2 * c.lim.max_msg) == 0 &&
	    cats_pcep_sess_feed(&s, junk, 1) < 0,
	    "at most 2 x max_msg bytes wait in the session");
	cats_pcep_sess_free(&s);
	cats_arena_free(&a);
}

/* ---- sessions: the bounded behaviours, over many messages ---- */

static size_t
open_bytes(uint8_t *b, uint8_t ka, uint8_t dt)
{
	struct cats_pcep_open o = { .version = 1, .keepalive = ka,
	    .deadtimer = dt, .pst_cap = true, .npsts = 1,
	    .psts = { CATS_PCEP_PST_SR }, .sr = true, .msd = 5 };
	struct cats_buf out = { 0 };
	cats_pcep_put_open(&out, &o);
	memcpy(b, out.p, out.len);
	size_t n = out.len;
	cats_buf_free(&out);
	return n;
}

/* A PCE session brought up by a PCC at time 0. */
static void
bring_up(struct cats_pcep_sess *s, struct cats_pcep_conf *c)
{
	uint8_t b[256];
	struct cats_pcep_ev ev;
	cats_pcep_sess_init(s, c, 0);
	size_t n = open_bytes(b, 30, 120);
	cats_pcep_sess_feed(s, b, n);
	uint8_t ka[4] = { 0x20, 2, 0, 4 };
	cats_pcep_sess_feed(s, ka, 4);
	cats_pcep_sess_next(s, 0, &ev);
	cats_buf_reset(&s->out);
}

static void
test_session_bounds(void)
{
	struct cats_pcep_conf c;
	cats_pcep_conf_default(&c, true);
	struct cats_pcep_sess s;
	struct cats_pcep_ev ev;

	bring_up(&s, &c);
	T_OK(s.state == CATS_PCEP_S_UP, "session up");
	/* Keepalives every 30 s while the peer keeps talking. */
	uint8_t ka[4] = { 0x20, 2, 0, 4 };
	size_t sent = 0;
	for (uint64_t t = 1000; t <= 600000; t += 1000) {
		if (t % 60000 == 0)
			cats_pcep_sess_feed(&s, ka, 4);
		while (cats_pcep_sess_next(&s, t, &ev) == 1)
			;
		sent += s.out.len / 4;
		cats_buf_reset(&s.out);
	}
	T_OK(s.state == CATS_PCEP_S_UP && sent == 20,
	    "10 minutes: 20 keepalives sent (got %zu), still up", sent);
	T_OK(cats_pcep_sess_deadline(&s) == 630000,
	    "next deadline: the keepalive at 630 s");
	/* Silence: the dead timer (120 s after the last message). */
	int rc = cats_pcep_sess_next(&s, 720000 - 1, &ev);
	T_OK(rc == 0 || ev.kind != CATS_PCEP_EV_CLOSED,
	    "dead timer: not yet at 119.999 s");
	rc = cats_pcep_sess_next(&s, 720000, &ev);
	T_OK(rc == 1 && ev.kind == CATS_PCEP_EV_CLOSED &&
	    ev.st.close_reason == CATS_PCEP_CLOSE_DEADTIMER,
	    "dead timer: Close reason 2 at 120 s");
	cats_pcep_sess_free(&s);

	/* Unknown messages: max_unknown a minute are tolerated. */
	bring_up(&s, &c);
	uint8_t unk[4] = { 0x20, 99, 0, 4 };
	unsigned answered = 0;
	for (unsigned i = 0; i < c.max_unknown; i++) {
		cats_pcep_sess_feed(&s, unk, 4);
		answered += cats_pcep_sess_next(&s, 1000 + i, &ev) == 1 &&
		    ev.kind == CATS_PCEP_EV_ANSWERED;
	}
	T_OK(answered == c.max_unknown && s.state == CATS_PCEP_S_UP,
	    "%u unknown messages: ignored", c.max_unknown);
	cats_pcep_sess_feed(&s, unk, 4);
	rc = cats_pcep_sess_next(&s, 2000, &ev);
	T_OK(rc == 1 && ev.kind == CATS_PCEP_EV_CLOSED &&
	    ev.st.close_reason == CATS_PCEP_CLOSE_UNKNOWN_MSG,
	    "one more in the minute: Close reason 5");
	cats_pcep_sess_free(&s);

	/* The window is a minute: spread out, they never close. */
	bring_up(&s, &c);
	for (unsigned i = 0; i < 50; i++) {
		cats_pcep_sess_feed(&s, unk, 4);
		cats_pcep_sess_feed(&s, ka, 4);
		cats_pcep_sess_next(&s, 1000 + (uint64_t)i * 20000, &ev);
		while (cats_pcep_sess_next(&s, 1000 + (uint64_t)i * 20000,
		    &ev) == 1)
			;
	}
	T_OK(s.state == CATS_PCEP_S_UP,
	    "50 unknown messages 20 s apart: still up");
	cats_pcep_sess_free(&s);

	/* Malformed PCReqs: answered with 10/11, then Close reason 3. */
	bring_up(&s, &c);
	uint8_t bad[16] = { 0x20, 3, 0, 16, 2, 0x12, 0, 12, 0, 0, 0, 0,
	    0, 0, 0, 9 };
	bad[7] = 40;	/* the RP claims more than the message holds */
	unsigned pcerrs = 0;
	for (unsigned i = 0; i <= c.max_malformed; i++) {
		cats_pcep_sess_feed(&s, bad, 16);
		rc = cats_pcep_sess_next(&s, 5000, &ev);
		pcerrs += rc == 1 && ev.kind == CATS_PCEP_EV_ANSWERED &&
		    ev.st.err_type == CATS_PCEP_ET_INVALID &&
		    ev.st.err_value == CATS_PCEP_EV_MALFORMED;
	}
	T_OK(pcerrs == c.max_malformed && ev.kind == CATS_PCEP_EV_CLOSED &&
	    ev.st.close_reason == CATS_PCEP_CLOSE_MALFORMED,
	    "%u malformed PCReqs answered 10/11, the next closes (reason 3)",
	    c.max_malformed);
	cats_pcep_sess_free(&s);

	/* Unknown request references (a PCC): PCErr 8, then reason 4. */
	cats_pcep_conf_default(&c, false);
	bring_up(&s, &c);
	rc = 0;
	for (unsigned i = 0; i < c.max_unknown && rc == 0; i++)
		rc = cats_pcep_sess_unknown_ref(&s, 77 + i, 100, &ev);
	T_OK(rc == 0 && s.c.unknown_refs == c.max_unknown,
	    "%u unknown references: PCErr 8 each", c.max_unknown);
	rc = cats_pcep_sess_unknown_ref(&s, 99, 100, &ev);
	T_OK(rc == 1 && ev.st.close_reason == CATS_PCEP_CLOSE_UNKNOWN_REQ,
	    "one more: Close reason 4");
	cats_pcep_sess_free(&s);

	/* A thousand sessions opened and dropped, none left behind. */
	cats_pcep_conf_default(&c, true);
	unsigned closed = 0;
	for (unsigned i = 0; i < 1000; i++) {
		cats_pcep_sess_init(&s, &c, i);
		if (i % 2)
			cats_pcep_sess_feed(&s, "\x20\x01\x00", 3);
		cats_pcep_sess_next(&s, i, &ev);
		cats_pcep_sess_eof(&s, &ev);
		closed += ev.kind == CATS_PCEP_EV_CLOSED;
		cats_pcep_sess_free(&s);
	}
	T_OK(closed == 1000, "1000 sessions opened and dropped: each closed");
}

/* ---- translation ---- */

static struct cats_te *
lab(void)
{
	char err[256];
	bool missing;
	struct cats_te *te = cats_te_load(LAB, NULL, 1, &missing, err,
	    sizeof(err));
	if (te == NULL)
		printf("# %s\n", err);
	return te;
}

/* Two path-reps equal except ts (their deterministic encodings). */
static bool
rep_eq(const struct cats_path_rep *a, const struct cats_path_rep *b)
{
	struct cats_rec ra, rb;
	cats_rec_init(&ra, CATS_T_PATH_REP);
	cats_rec_init(&rb, CATS_T_PATH_REP);
	ra.u.prep = *a;
	rb.u.prep = *b;
	rb.u.prep.ts = ra.u.prep.ts;
	struct cats_buf x = { 0 }, y = { 0 };
	bool eq = cats_rec_encode(&ra, &x, false) == 0 &&
	    cats_rec_encode(&rb, &y, false) == 0 && x.len == y.len &&
	    memcmp(x.p, y.p, x.len) == 0;
	if (!eq) {
		printf("# want: ");
		cats_rec_print_json(&ra, stdout);
		printf("# got:  ");
		cats_rec_print_json(&rb, stdout);
	}
	cats_buf_free(&x);
	cats_buf_free(&y);
	return eq;
}

/*
 * One request through PCEP: the PCC's PCReq on the wire, the PCE's
 * path-req, cats_pce_answer(), the PCRep on the wire, the PCC's path-rep.
 * Returns 0 with out, -1 when the PCC could not ask (st).
 */
static int
through_pcep(struct cats_pce *pce, const struct cats_pcep_names *names,
    const struct cats_path_req *rq, uint64_t now, struct cats_rec *out,
    struct cats_arena *a, struct cats_pcep_status *st)
{
	struct cats_pcep_req q;
	if (cats_pcep_from_path_req(rq, (uint32_t)rq->txn, pce->te, names, &q,
	    a, st) < 0)
		return -1;
	struct cats_buf w = { 0 };
	cats_pcep_put_pcreq(&w, &q, 1);
	struct cats_pcep_msg m;
	struct cats_arena wa = { 0 };
	int rc = cats_pcep_decode(w.p, w.len, NULL, &m, &wa, st);
	if (rc < 0 || m.nreqs != 1 || m.reqs[0].st.code != CATS_PCEP_ST_OK) {
		printf("# PCReq did not decode: %s\n", st->why ? st->why : "");
		cats_buf_free(&w);
		cats_arena_free(&wa);
		return -1;
	}
	struct cats_path_req prq;
	struct cats_rec ans;
	struct cats_pcep_rep rp;
	rc = cats_pcep_to_path_req(&m.reqs[0], pce->te, names, now, &prq, a,
	    st);
	if (rc == 0)
		rc = cats_pce_answer(pce, &prq, now, &ans, a);
	if (rc == 0)
		rc = cats_pcep_from_path_rep(&ans.u.prep, &m.reqs[0], pce->te,
		    names, &rp, a);
	cats_buf_reset(&w);
	if (rc == 0)
		rc = cats_pcep_put_pcrep(&w, &rp, 1);
	struct cats_pcep_msg mr;
	struct cats_arena ra = { 0 };
	if (rc == 0)
		rc = cats_pcep_decode(w.p, w.len, NULL, &mr, &ra, st);
	if (rc == 0 && mr.nreps == 1)
		rc = cats_pcep_to_path_rep(&mr.reps[0], rq, pce->te, names,
		    now, out, a);
	else
		rc = -1;
	/* The reply lives in a; the decoded PCRep's strings do not. */
	cats_buf_free(&w);
	cats_arena_free(&wa);
	cats_arena_free(&ra);
	return rc;
}

static void
test_same_answers(void)
{
	struct cats_te *te = lab();
	if (!T_OK(te != NULL, "lab topology loads"))
		return;
	struct cats_pcep_names *names = cats_pcep_names_new(te);
	struct cats_pce pce;
	cats_pce_init(&pce, te);
	pce.cache_max = 0;
	FILE *f = fopen(REQUESTS, "r");
	if (!T_OK(f != NULL, "%s", REQUESTS))
		return;
	char line[8192];
	struct cats_dec dec;
	cats_dec_init(&dec, NULL);
	struct cats_arena a = { 0 };
	size_t n = 0, same = 0, local = 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		json_error_t je;
		json_t *j = json_loads(line, 0, &je);
		struct cats_rec r;
		struct cats_err e;
		if (j == NULL || cats_rec_from_json(&dec, j, &r, &e) < 0) {
			json_decref(j);
			continue;
		}
		json_decref(j);
		char err[256];
		if (r.type == CATS_T_NET) {
			cats_te_apply_net(pce.te, &r.u.net, err, sizeof(err));
			cats_pcep_names_free(names);
			names = cats_pcep_names_new(pce.te);
			continue;
		}
		if (r.type != CATS_T_PATH_REQ)
			continue;
		n++;
		cats_arena_reset(&a);
		uint64_t now = r.u.preq.ts;
		struct cats_rec direct, via;
		cats_pce_answer(&pce, &r.u.preq, now, &direct, &a);
		struct cats_path_rep want;
		cats_pcep_rep_project(&direct.u.prep, &want);
		struct cats_pcep_status st;
		int rc = through_pcep(&pce, names, &r.u.preq, now, &via, &a,
		    &st);
		if (rc < 0) {
			/* The PCC could not name the node: it answers
			 * itself, as cats-pce would have. */
			bool ok = direct.u.prep.status == CATS_PATH_ERROR &&
			    st.why != NULL && direct.u.prep.reason != NULL &&
			    strcmp(st.why, direct.u.prep.reason) == 0;
			T_OK(ok, "txn %llu: the PCC answers %s itself",
			    (unsigned long long)r.u.preq.txn,
			    direct.u.prep.reason ? direct.u.prep.reason : "?");
			local += ok;
			continue;
		}
		bool eq = rep_eq(&want, &via.u.prep);
		T_OK(eq, "txn %llu: %s%s%s over PCEP as over records",
		    (unsigned long long)r.u.preq.txn,
		    cats_path_status_names[direct.u.prep.status],
		    direct.u.prep.reason ? " " : "",
		    direct.u.prep.reason ? direct.u.prep.reason : "");
		same += eq;
	}
	fclose(f);
	T_OK(n >= 20 && same + local == n, "%zu requests: %zu the same, %zu "
	    "answered by the PCC", n, same, local);
	cats_arena_free(&a);
	cats_dec_free(&dec);
	cats_pce_free(&pce);
	cats_pcep_names_free(names);
}

/* Each row of the NO-PATH table, and back. */
static void
test_reason_table(void)
{
	struct cats_te *te = lab();
	if (te == NULL)
		return;
	struct cats_pcep_names *names = cats_pcep_names_new(te);
	static const struct {
		int status;
		const char *reason, *pruned;
		uint32_t vector;
		bool c;
		const char *back_status, *back_reason, *back_pruned;
	} rows[] = {
		{ CATS_PATH_ERROR, "no-source", NULL, 4, false, "error",
		    "no-source", NULL },
		{ CATS_PATH_ERROR, "no-destination", NULL, 2, false, "error",
		    "no-destination", NULL },
		{ CATS_PATH_ERROR, "no-database", NULL, 1, false, "error",
		    "pce-unavailable", NULL },
		{ CATS_PATH_ERROR, "budget", NULL, 1, false, "error",
		    "pce-unavailable", NULL },
		{ CATS_PATH_ERROR, "path-too-long", NULL, 1, false, "error",
		    "pce-unavailable", NULL },
		{ CATS_PATH_ERROR, "same-node", NULL, 0, false, "no-path",
		    "no-path", "topology" },
		{ CATS_PATH_NO_PATH, "no-path", "topology", 0, false,
		    "no-path", "no-path", "topology" },
		{ CATS_PATH_NO_PATH, "no-path", "dataplane", 0, true,
		    "no-path", "no-path", "dataplane" },
		{ CATS_PATH_NO_PATH, "headend-dataplane", NULL, 0, true,
		    "no-path", "no-path", "dataplane" },
		{ CATS_PATH_NO_PATH, "endpoint-dataplane", NULL, 0, true,
		    "no-path", "no-path", "dataplane" },
		{ CATS_PATH_NO_PATH, "ecmp", NULL, 0, true, "no-path",
		    "no-path", "dataplane" },
		{ CATS_PATH_NO_PATH, "no-sid", NULL, 0, true, "no-path",
		    "no-path", "dataplane" },
		{ CATS_PATH_NO_PATH, "sid-depth", NULL, 0, true, "no-path",
		    "sid-depth", NULL },
		{ CATS_PATH_NO_PATH, "no-path", "exclude_nodes", 0, true,
		    "no-path", "no-path", "exclude_nodes" },
		{ CATS_PATH_NO_PATH, "no-path", "exclude_links", 0, true,
		    "no-path", "no-path", "exclude_links" },
		{ CATS_PATH_NO_PATH, "no-path", "exclude_srlgs", 0, true,
		    "no-path", "no-path", "exclude_srlgs" },
		{ CATS_PATH_NO_PATH, "no-path", "exclude_any", 0, true,
		    "no-path", "no-path", "exclude_any" },
		{ CATS_PATH_NO_PATH, "no-path", "include_any", 0, true,
		    "no-path", "no-path", "include_any" },
		{ CATS_PATH_NO_PATH, "no-path", "include_all", 0, true,
		    "no-path", "no-path", "include_all" },
		{ CATS_PATH_NO_PATH, "no-path", "min_bw", 0, true, "no-path",
		    "no-path", "min_bw" },
		{ CATS_PATH_NO_PATH, "no-path", "max_hops", 0, true,
		    "no-path", "no-path", "max_hops" },
		{ CATS_PATH_NO_PATH, "no-path", "max_delay", 0, true,
		    "no-path", "no-path", "max_delay" },
	};
	/* A request carrying every constraint kind. */
	struct cats_path_req rq;
	memset(&rq, 0, sizeof(rq));
	rq.txn = 5;
	rq.headend = "IF-1";
	rq.endpoint = "EF-2";
	rq.dataplane = CATS_DP_SRMPLS;
	rq.has |= UINT64_C(1) << CATS_PRQ_constraints;
	struct cats_constraints *k = &rq.constraints;
	static const char *xn[] = { "P1" }, *xl[] = { "a1" };
	static uint64_t xs[] = { 100 };
	k->exclude_nodes.v = xn;
	k->exclude_nodes.n = 1;
	k->exclude_links.v = xl;
	k->exclude_links.n = cats_te_link(te, "a1") != CATS_TE_NONE;
	k->exclude_srlgs.v = xs;
	k->exclude_srlgs.n = 1;
	CATS_SET(k, CON, exclude_any, 1);
	CATS_SET(k, CON, include_any, 2);
	CATS_SET(k, CON, include_all, 4);
	CATS_SET(k, CON, min_bw, 8000);
	CATS_SET(k, CON, max_hops, 3);
	CATS_SET(k, CON, max_delay_us, 500);
	struct cats_arena a = { 0 };
	struct cats_pcep_status st;
	struct cats_pcep_req q;
	int rc = cats_pcep_from_path_req(&rq, 5, te, names, &q, &a, &st);
	T_OK(rc == 0 && q.a.nmetrics == 3 && q.a.has_bw && q.a.has_lspa &&
	    q.a.has_xro && q.a.xro.n == 2 + k->exclude_links.n,
	    "a PCReq with every constraint kind (%s)", st.why ? st.why : "ok");
	for (size_t i = 0; i < CATS_ARRAY_LEN(rows); i++) {
		struct cats_path_rep rep;
		memset(&rep, 0, sizeof(rep));
		rep.txn = 5;
		rep.status = rows[i].status;
		rep.reason = rows[i].reason;
		rep.pruned = rows[i].pruned;
		rep.headend = "IF-1";
		struct cats_pcep_rep o;
		cats_pcep_from_path_rep(&rep, &q, te, names, &o, &a);
		struct cats_rec back;
		cats_pcep_to_path_rep(&o, &rq, te, names, 10, &back, &a);
		const struct cats_path_rep *b = &back.u.prep;
		bool ok = o.nopath && o.vector == rows[i].vector &&
		    o.nopath_c == rows[i].c &&
		    strcmp(cats_path_status_names[b->status],
		    rows[i].back_status) == 0 && b->reason != NULL &&
		    strcmp(b->reason, rows[i].back_reason) == 0 &&
		    (rows[i].back_pruned == NULL ? b->pruned == NULL :
		    b->pruned != NULL &&
		    strcmp(b->pruned, rows[i].back_pruned) == 0);
		struct cats_path_rep proj;
		cats_pcep_rep_project(&rep, &proj);
		ok = ok && proj.status == b->status &&
		    strcmp(proj.reason, b->reason) == 0 &&
		    (proj.pruned == b->pruned || (proj.pruned && b->pruned &&
		    strcmp(proj.pruned, b->pruned) == 0));
		T_OK(ok, "%s%s%s: NO-PATH vector %x%s, back as %s %s%s%s",
		    rows[i].reason, rows[i].pruned ? "/" : "",
		    rows[i].pruned ? rows[i].pruned : "", rows[i].vector,
		    rows[i].c ? " C" : "", rows[i].back_status,
		    rows[i].back_reason, rows[i].back_pruned ? "/" : "",
		    rows[i].back_pruned ? rows[i].back_pruned : "");
	}
	/* The unmet constraint objects are the request's. */
	struct cats_path_rep rep;
	memset(&rep, 0, sizeof(rep));
	rep.status = CATS_PATH_NO_PATH;
	rep.reason = "no-path";
	rep.pruned = "exclude_srlgs";
	struct cats_pcep_rep o;
	cats_pcep_from_path_rep(&rep, &q, te, names, &o, &a);
	T_OK(o.a.has_xro && o.a.xro.n == 1 &&
	    o.a.xro.v[0].type == CATS_PCEP_SO_SRLG && o.a.xro.v[0].srlg == 100,
	    "exclude_srlgs: the XRO holds the request's SRLG alone");
	rep.pruned = "include_all";
	cats_pcep_from_path_rep(&rep, &q, te, names, &o, &a);
	T_OK(o.a.has_lspa && o.a.lspa.include_all == 4 &&
	    o.a.lspa.include_any == 0 && o.a.lspa.exclude_any == 0,
	    "include_all: the LSPA holds that field alone");
	rep.pruned = "max_delay";
	cats_pcep_from_path_rep(&rep, &q, te, names, &o, &a);
	T_OK(o.a.nmetrics == 1 && o.a.metrics[0].type == CATS_PCEP_MT_DELAY &&
	    o.a.metrics[0].bound && o.a.metrics[0].value == 500,
	    "max_delay: the delay bound of the request");

	/* The PCE side of that request: every constraint back. */
	struct cats_path_req prq;
	rc = cats_pcep_to_path_req(&q, te, names, 7, &prq, &a, &st);
	const struct cats_constraints *pk = &prq.constraints;
	T_OK(rc == 0 && strcmp(prq.headend, "IF-1") == 0 &&
	    strcmp(prq.endpoint, "EF-2") == 0 &&
	    prq.dataplane == CATS_DP_SRMPLS && pk->max_hops == 3 &&
	    pk->max_delay_us == 500 && pk->min_bw == 8000 &&
	    pk->exclude_any == 1 && pk->include_any == 2 &&
	    pk->include_all == 4 && pk->exclude_nodes.n == 1 &&
	    strcmp(pk->exclude_nodes.v[0], "P1") == 0 &&
	    pk->exclude_links.n == k->exclude_links.n &&
	    pk->exclude_srlgs.n == 1 && pk->exclude_srlgs.v[0] == 100 &&
	    CATS_HAS(pk, CON, metric) && pk->metric == CATS_METRIC_TE,
	    "PCE side: the path-req has every constraint of the record");
	/* Addresses no node has: their text, answered no-source. */
	struct cats_pcep_req u = q;
	cats_ip_parse("203.0.113.9", 11, &u.ep.src);
	rc = cats_pcep_to_path_req(&u, te, names, 7, &prq, &a, &st);
	T_OK(rc == 0 && strcmp(prq.headend, "203.0.113.9") == 0,
	    "an unknown source address becomes its text");
	/* A mandatory exclusion of a kind not supported: 4/4. */
	struct cats_pcep_xsub xas = { .type = CATS_PCEP_SO_AS, .asn = 65000 };
	u = q;
	u.a.xro.v = &xas;
	u.a.xro.n = 1;
	rc = cats_pcep_to_path_req(&u, te, names, 7, &prq, &a, &st);
	T_OK(rc < 0 && st.err_type == 4 && st.err_value == 4,
	    "a mandatory AS exclusion: PCErr 4/4");
	xas.desirable = true;
	rc = cats_pcep_to_path_req(&u, te, names, 7, &prq, &a, &st);
	T_OK(rc == 0, "a desirable AS exclusion: ignored");
	u = q;
	u.rp.pst = 2;
	rc = cats_pcep_to_path_req(&u, te, names, 7, &prq, &a, &st);
	T_OK(rc < 0 && st.err_type == 21 && st.err_value == 1,
	    "PST 2: PCErr 21/1");
	/* The headend's MSD: a SID depth bound (RFC 8664 4.5) both ways. */
	struct cats_path_req mq = rq;
	CATS_SET(&mq, PRQ, msd, 3);
	struct cats_pcep_req q2;
	rc = cats_pcep_from_path_req(&mq, 6, te, names, &q2, &a, &st);
	T_OK(rc == 0 && q2.a.nmetrics == 4 &&
	    q2.a.metrics[1].type == CATS_PCEP_MT_SID_DEPTH &&
	    q2.a.metrics[1].bound && q2.a.metrics[1].value == 3,
	    "msd 3: a METRIC SID depth bound of 3");
	rc = cats_pcep_to_path_req(&q2, te, names, 7, &prq, &a, &st);
	T_OK(rc == 0 && CATS_HAS(&prq, PRQ, msd) && prq.msd == 3,
	    "PCE side: the SID depth bound is the path-req's msd");
	memset(&rep, 0, sizeof(rep));
	rep.status = CATS_PATH_NO_PATH;
	rep.reason = "sid-depth";
	rep.headend = "IF-1";
	cats_pcep_from_path_rep(&rep, &q2, te, names, &o, &a);
	T_OK(o.nopath && o.a.nmetrics == 1 &&
	    o.a.metrics[0].type == CATS_PCEP_MT_SID_DEPTH &&
	    o.a.metrics[0].value == 3, "sid-depth: the NO-PATH names the "
	    "request's MSD");
	q2.a.metrics[1].value = 0;
	rc = cats_pcep_to_path_req(&q2, te, names, 7, &prq, &a, &st);
	T_OK(rc < 0 && st.err_type == CATS_PCEP_ET_INVALID,
	    "a SID depth bound of 0: PCErr");
	/* A late reply: the PCC's deadline. */
	CATS_SET(&rq, PRQ, deadline, 10);
	memset(&rep, 0, sizeof(rep));
	rep.status = CATS_PATH_OK;
	cats_pcep_from_path_rep(&rep, &q, te, names, &o, &a);
	struct cats_rec back;
	cats_pcep_to_path_rep(&o, &rq, te, names, 10, &back, &a);
	T_OK(back.u.prep.status == CATS_PATH_ERROR &&
	    strcmp(back.u.prep.reason, "deadline") == 0,
	    "a reply at the deadline: error deadline");
	cats_arena_free(&a);
	cats_pcep_names_free(names);
	cats_te_free(te);
}

/* Segment lists both ways, with their NAIs: IPv6 router ids (NAI types 2
 * and 6), parallel links that need adjacency SIDs. */
static const char ecmp_topo[] =
    "{\"nodes\":["
    "{\"id\":\"A\",\"router_id\":\"2001:db8::a\",\"node_label\":16001,"
    "\"srv6_sid\":\"fc00:a::1\"},"
    "{\"id\":\"B\",\"router_id\":\"2001:db8::b\",\"node_label\":16002,"
    "\"srv6_sid\":\"fc00:b::1\"},"
    "{\"id\":\"C\",\"router_id\":\"2001:db8::c\",\"node_label\":16003,"
    "\"srv6_sid\":\"fc00:c::1\"}],"
    "\"links\":["
    "{\"id\":\"ab\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":10,"
    "\"delay_us\":100,\"adj_label\":24001,\"adj_sid\":\"fc00:a::e1\","
    "\"reverse\":{\"adj_label\":24002,\"adj_sid\":\"fc00:b::e1\"}},"
    "{\"id\":\"bc1\",\"src\":\"B\",\"dst\":\"C\",\"igp_metric\":10,"
    "\"delay_us\":100,\"adj_label\":24003,\"adj_sid\":\"fc00:b::e2\","
    "\"reverse\":{\"adj_label\":24004,\"adj_sid\":\"fc00:c::e1\"}},"
    "{\"id\":\"bc2\",\"src\":\"B\",\"dst\":\"C\",\"igp_metric\":10,"
    "\"delay_us\":50,\"adj_label\":24005,\"adj_sid\":\"fc00:b::e3\","
    "\"reverse\":{\"adj_label\":24006,\"adj_sid\":\"fc00:c::e2\"}}]}";

static void
test_segments(void)
{
	char err[256];
	struct cats_te *te = cats_te_load_mem(ecmp_topo, sizeof(ecmp_topo) - 1,
	    NULL, 1, err, sizeof(err));
	if (!T_OK(te != NULL, "the ECMP topology loads (%s)", te ? "" : err))
		return;
	struct cats_pcep_names *names = cats_pcep_names_new(te);
	struct cats_ip a6;
	cats_ip_parse("2001:db8::b", 11, &a6);
	T_OK(cats_pcep_names_node(names, &a6) == cats_te_node(te, "B"),
	    "2001:db8::b names B");
	struct cats_pce pce;
	cats_pce_init(&pce, te);
	struct cats_arena a = { 0 };
	int dps[2] = { CATS_DP_SRMPLS, CATS_DP_SRV6 };
	for (int d = 0; d < 2; d++) {
		struct cats_path_req rq;
		memset(&rq, 0, sizeof(rq));
		rq.txn = 9;
		rq.headend = "A";
		rq.endpoint = "C";
		rq.dataplane = dps[d];
		rq.has |= UINT64_C(1) << CATS_PRQ_constraints;
		CATS_SET(&rq.constraints, CON, max_delay_us, 180);
		struct cats_rec ans, via;
		cats_pce_answer(&pce, &rq, 5, &ans, &a);
		struct cats_pcep_status st;
		int rc = through_pcep(&pce, names, &rq, 5, &via, &a, &st);
		const struct cats_path_rep *x = &ans.u.prep, *y = &via.u.prep;
		bool ok = rc == 0 && x->status == CATS_PATH_OK &&
		    y->status == CATS_PATH_OK && x->segments.n ==
		    y->segments.n && x->segments.n >= 2;
		size_t nadj = 0;
		for (size_t i = 0; ok && i < x->segments.n; i++) {
			const struct cats_segment *g = &x->segments.v[i],
			    *h = &y->segments.v[i];
			nadj += g->kind == CATS_SEG_ADJ;
			ok = g->kind == h->kind && g->label == h->label &&
			    cats_ip_eq(&g->sid, &h->sid) && h->node &&
			    strcmp(g->node, h->node) == 0 &&
			    (g->kind == CATS_SEG_NODE || (h->remote &&
			    strcmp(g->remote, h->remote) == 0));
		}
		T_OK(ok && nadj > 0, "%s: %zu segments (%zu adjacencies) back "
		    "with kind, node, remote and %s",
		    cats_dataplane_names[dps[d]], x->segments.n, nadj,
		    d ? "SID" : "label");
		struct cats_path_rep want;
		cats_pcep_rep_project(x, &want);
		T_OK(rc == 0 && rep_eq(&want, y), "%s: the whole reply",
		    cats_dataplane_names[dps[d]]);
		/* The NAIs on the wire: IPv6 node and adjacency forms. */
		struct cats_pcep_req q;
		struct cats_pcep_rep o;
		cats_pcep_from_path_req(&rq, 9, te, names, &q, &a, &st);
		cats_pcep_from_path_rep(x, &q, te, names, &o, &a);
		bool nai = o.nero == x->segments.n;
		for (size_t i = 0; nai && i < o.nero; i++)
			nai = o.ero[i].has_nai && o.ero[i].nt ==
			    (x->segments.v[i].kind == CATS_SEG_ADJ ?
			    CATS_PCEP_NAI_IPV6_LL_ADJ :
			    CATS_PCEP_NAI_IPV6_NODE);
		T_OK(nai, "%s: NAI types 2 and 6",
		    cats_dataplane_names[dps[d]]);
	}
	cats_arena_free(&a);
	cats_pce_free(&pce);
	cats_pcep_names_free(names);
}


/* ---- the socket side (pcep_srv.h), over loopback ---- */

struct srvt {
	struct cats_pcep_peer *pcc;
	int ups, reps, closed, notes[8];
	uint32_t rep_id;
	bool nopath;
};

static void
t_up(struct cats_pcep_peer *p, void *arg)
{
	struct srvt *t = arg;
	t->ups++;
	if (p == t->pcc) {
		struct cats_pcep_req q;
		memset(&q, 0, sizeof(q));
		q.rp.id = 42;
		q.rp.has_pst = true;
		q.rp.pst = CATS_PCEP_PST_SR;
		q.has_ep = true;
		cats_ip_parse("192.0.2.1", 9, &q.ep.src);
		cats_ip_parse("192.0.2.2", 9, &q.ep.dst);
		cats_pcep_peer_send_reqs(p, &q, 1);
	}
}

/* The PCE side answers every request NO-PATH, unknown destination. */
static void
t_msg(struct cats_pcep_peer *p, const struct cats_pcep_msg *m, void *arg)
{
	struct srvt *t = arg;
	if (m->type == CATS_PCEP_PCREQ) {
		struct cats_pcep_rep r;
		memset(&r, 0, sizeof(r));
		r.rp = m->reqs[0].rp;
		r.nopath = true;
		r.vector = CATS_PCEP_NPV_UNKNOWN_DST;
		cats_pcep_peer_send_reps(p, &r, 1);
	} else if (m->type == CATS_PCEP_PCREP) {
		t->reps++;
		t->rep_id = m->reps[0].rp.id;
		t->nopath = m->reps[0].nopath;
	}
}

static void
t_note(struct cats_pcep_peer *p, const char *peer, int what,
    const struct cats_pcep_status *st, void *arg)
{
	struct srvt *t = arg;
	t->notes[what]++;
}

static void
t_closed(struct cats_pcep_peer *p, const struct cats_pcep_status *st,
    void *arg)
{
	struct srvt *t = arg;
	t->closed++;
	if (p == t->pcc)
		t->pcc = NULL;
}

static void
spin(struct event_base *b, int ms)
{
	uint64_t end = cats_clock_mono_ns() / 1000000 + (uint64_t)ms;
	while (cats_clock_mono_ns() / 1000000 < end) {
		event_base_loop(b, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(1000);
	}
}

/* A raw connection from src to port: what it reads within ms. */
static ssize_t
raw_conn(const char *src, int port, uint8_t *buf, size_t cap, int ms,
    struct event_base *b)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	inet_pton(AF_INET, src, &a.sin_addr);
	bind(fd, (struct sockaddr *)&a, sizeof(a));
	a.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	spin(b, ms);
	struct pollfd pf = { fd, POLLIN, 0 };
	ssize_t n = poll(&pf, 1, 0) > 0 ? read(fd, buf, cap) : -2;
	close(fd);
	return n;
}

static void
test_srv(void)
{
	struct event_base *b = event_base_new();
	struct srvt t = { 0 };
	struct cats_pcep_srv_cbs cbs = { t_up, t_msg, t_note, t_closed };
	struct cats_pcep_srv_conf pc = { 0 }, cc = { 0 };
	static struct cats_prefix allow[1];
	char err[128];
	cats_prefix_parse("127.0.0.0/24", 12, false, &allow[0], err,
	    sizeof(err));
	pc.allow = allow;
	pc.nallow = 1;
	pc.max_sessions = 8;
	cats_pcep_conf_default(&pc.sess, true);
	cats_pcep_conf_default(&cc.sess, false);
	struct cats_pcep_srv *pce = cats_pcep_srv_new(b, &pc, &cbs, &t);
	struct cats_pcep_srv *pcc = cats_pcep_srv_new(b, &cc, &cbs, &t);
	struct cats_ep ep;
	cats_ep_parse("tcp:127.0.0.1:0", &ep, err, sizeof(err));
	int lfd = cats_ep_listen(&ep, err, sizeof(err));
	struct sockaddr_in la;
	socklen_t ll = sizeof(la);
	getsockname(lfd, (struct sockaddr *)&la, &ll);
	int port = ntohs(la.sin_port);
	T_OK(lfd >= 0 && cats_pcep_srv_listen(pce, lfd) == 0,
	    "a PCE listening on 127.0.0.1:%d", port);
	snprintf(ep.port, sizeof(ep.port), "%d", port);
	int cfd = cats_ep_open(&ep, true, err, sizeof(err));
	t.pcc = cats_pcep_srv_attach(pcc, cfd, "pce");
	for (int i = 0; i < 200 && t.reps == 0; i++)
		spin(b, 5);
	T_OK(t.ups == 2 && t.reps == 1 && t.rep_id == 42 && t.nopath,
	    "PCC and PCE up, a PCReq answered over TCP");
	struct cats_pcep_srv_stats st;
	cats_pcep_srv_get_stats(pce, &st);
	T_OK(st.sessions == 1 && st.up == 1, "the PCE holds one session up");

	/* A second session from 127.0.0.1: PCErr 9, then closed. */
	uint8_t buf[256];
	ssize_t n = raw_conn("127.0.0.1", port, buf, sizeof(buf), 50, b);
	T_OK(n >= 12 && buf[1] == CATS_PCEP_PCERR && buf[10] == 9 &&
	    t.notes[CATS_PCEP_NOTE_SECOND] == 1,
	    "a second session from one address: PCErr 9 (%zd bytes)", n);
	/* Another address of the allowed prefix: its Open. */
	n = raw_conn("127.0.0.2", port, buf, sizeof(buf), 50, b);
	T_OK(n >= 4 && buf[1] == CATS_PCEP_OPEN,
	    "127.0.0.2 gets the PCE's Open");
	/* Outside allow: refused at accept, nothing sent. */
	n = raw_conn("127.0.1.1", port, buf, sizeof(buf), 50, b);
	T_OK(n == 0 && t.notes[CATS_PCEP_NOTE_REFUSED] == 1,
	    "127.0.1.1, outside the allowed prefix: refused, audited");
	/* Sessions that never come up, over the cap: the oldest evicted,
	 * the session up untouched. */
	int idle[20];
	for (int i = 0; i < 20; i++) {
		idle[i] = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = { .sin_family = AF_INET,
		    .sin_port = htons((uint16_t)port) };
		inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
		struct sockaddr_in src = { .sin_family = AF_INET };
		char s4[32];
		snprintf(s4, sizeof(s4), "127.0.0.%d", 10 + i);
		inet_pton(AF_INET, s4, &src.sin_addr);
		bind(idle[i], (struct sockaddr *)&src, sizeof(src));
		connect(idle[i], (struct sockaddr *)&sa, sizeof(sa));
		spin(b, 2);
	}
	spin(b, 50);
	cats_pcep_srv_get_stats(pce, &st);
	/* Of 8, a quarter may be not up: 1 up + 2. */
	T_OK(st.up == 1 && st.sessions == 3 && t.pcc != NULL &&
	    t.notes[CATS_PCEP_NOTE_EVICTED] == 18,
	    "20 connections that never send an Open: %zu sessions, %d "
	    "evicted, the one up kept", st.sessions,
	    t.notes[CATS_PCEP_NOTE_EVICTED]);
	for (int i = 0; i < 20; i++)
		close(idle[i]);
	spin(b, 50);
	cats_pcep_peer_close(t.pcc, CATS_PCEP_CLOSE_NONE);
	for (int i = 0; i < 100 && st.sessions > 0; i++) {
		spin(b, 5);
		cats_pcep_srv_get_stats(pce, &st);
	}
	T_OK(st.sessions == 0, "the PCC's Close ends the PCE's session");
	cats_pcep_srv_free(pcc);
	cats_pcep_srv_free(pce);
	close(lfd);
	event_base_free(b);
}

int
main(int argc, char **argv)
{
	run_dir(argc > 1 ? argv[1] : DIR_DEFAULT);
	test_caps();
	test_session_bounds();
	test_reason_table();
	test_segments();
	test_same_answers();
	test_srv();
	cats_buf_free(&mb);
	return t_done();
}
