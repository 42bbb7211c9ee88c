/*
 * sma_out.c - the plain consumer of the core's events: metric records (full
 * snapshot, delta, withdraw), and the state file of the cron-driven agent.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "rec/seq.h"
#include "sma/sma.h"

#define PART 256	/* entries (and sites) per record: well under 64 KiB */

struct pend {
	struct cats_entry ent;
	int reason;		/* -1: added or updated, else enum sma_wd_reason */
};

struct sma_out {
	const struct sma_conf *c;
	uint64_t epoch, seq;
	sma_emit_fn emit;
	void *arg;
	uint64_t failures;
	struct pend *p;
	size_t np, capp;
	struct cats_site *sites;
	size_t nsites, capsites;
	struct cats_arena arena;	/* copies for the change set */
	uint64_t last_full;	/* a state file's last_full (0: none) */
};

struct sma_out *
sma_out_new(const struct sma_conf *c, uint64_t epoch, uint64_t seq,
    sma_emit_fn emit, void *arg)
{
	struct sma_out *o = calloc(1, sizeof(*o));
	if (o == NULL)
		return NULL;
	o->c = c;
	o->epoch = epoch;
	o->seq = seq;
	o->emit = emit;
	o->arg = arg;
	o->arena.cap = 256u << 20;
	return o;
}

void
sma_out_free(struct sma_out *o)
{
	if (o == NULL)
		return;
	free(o->p);
	free(o->sites);
	cats_arena_free(&o->arena);
	free(o);
}

void
sma_out_reconf(struct sma_out *o, const struct sma_conf *c)
{
	o->c = c;
}

uint64_t
sma_out_seq(const struct sma_out *o)
{
	return o->seq;
}

uint64_t
sma_out_epoch(const struct sma_out *o)
{
	return o->epoch;
}

uint64_t
sma_out_failures(const struct sma_out *o)
{
	return o->failures;
}

static void
rec_head(struct sma_out *o, struct cats_rec *r, int op, uint64_t now)
{
	sma_metric_head(o->c, o->epoch, ++o->seq, op, now, r);
}

static int
out_send(struct sma_out *o, const struct cats_rec *r)
{
	if (o->emit(o->arg, r) < 0) {
		o->failures++;
		return -1;
	}
	return 0;
}

/* Deep copy of an entry view into the arena (the entry may be freed). */
static int
copy_entry(struct cats_arena *a, const struct cats_entry *in,
    struct cats_entry *out)
{
	*out = *in;
	out->csci_id = cats_arena_strndup(a, in->csci_id, strlen(in->csci_id));
	out->cs_id = cats_arena_strndup(a, in->cs_id, strlen(in->cs_id));
	if (out->csci_id == NULL || out->cs_id == NULL)
		return -1;
	if (in->ext.n > 0) {
		out->ext.v = cats_arena_alloc(a, in->ext.n * sizeof(*in->ext.v));
		if (out->ext.v == NULL)
			return -1;
		for (size_t i = 0; i < in->ext.n; i++) {
			out->ext.v[i].v = in->ext.v[i].v;
			out->ext.v[i].k = cats_arena_strndup(a, in->ext.v[i].k,
			    strlen(in->ext.v[i].k));
			if (out->ext.v[i].k == NULL)
				return -1;
		}
	}
	if (in->flags.n > 0) {
		const char **f = cats_arena_alloc(a, in->flags.n * sizeof(*f));
		if (f == NULL)
			return -1;
		memcpy(f, in->flags.v, in->flags.n * sizeof(*f));
		out->flags.v = f;
	}
	return 0;
}

static void
add_pending(struct sma_out *o, const struct sma_entry *e, int reason)
{
	const char *fl[SMA_NFLAGS];
	struct cats_entry v;
	sma_entry_view(e, &v, fl);
	if (reason >= 0) {
		/* What a withdrawal says: who, and that it gives nothing. */
		struct cats_entry w;
		memset(&w, 0, sizeof(w));
		w.csci_id = v.csci_id;
		w.cs_id = v.cs_id;
		CATS_SET(&w, ENT, state, e->state == CATS_SCI_FAILED ?
		    CATS_SCI_FAILED : v.state);
		CATS_SET(&w, ENT, health, v.health);
		CATS_SET(&w, ENT, gas, 0);
		CATS_SET(&w, ENT, gen, v.gen);
		CATS_SET(&w, ENT, ts, v.ts);
		v = w;
	}
	/* A later event of the same entry in the set replaces the earlier. */
	for (size_t i = 0; i < o->np; i++) {
		if (o->p[i].reason == reason &&
		    strcmp(o->p[i].ent.csci_id, v.csci_id) == 0) {
			copy_entry(&o->arena, &v, &o->p[i].ent);
			return;
		}
	}
	if (cats_grow((void **)&o->p, &o->capp, o->np, sizeof(*o->p), 16) < 0)
		return;
	if (copy_entry(&o->arena, &v, &o->p[o->np].ent) < 0)
		return;
	o->p[o->np++].reason = reason;
}

static void
add_site(struct sma_out *o, const struct sma_svc *v)
{
	struct cats_site s;
	sma_site_view(v, &s);
	for (size_t i = 0; i < o->nsites; i++) {
		if (strcmp(o->sites[i].cs_id, s.cs_id) == 0) {
			o->sites[i] = s;
			return;
		}
	}
	if (cats_grow((void **)&o->sites, &o->capsites, o->nsites,
	    sizeof(*o->sites), 16) < 0)
		return;
	o->sites[o->nsites++] = s;
}

/* Emit the pending change set. */
static void
flush(struct sma_out *o, uint64_t now)
{
	struct cats_entry *batch = NULL;
	size_t cap = 0;
	/* Which records there will be: one per withdraw reason, one delta. */
	int reasons[8], nr = 0;
	bool delta = false;
	for (size_t i = 0; i < o->np; i++) {
		int rs = o->p[i].reason;
		if (rs < 0) {
			delta = true;
			continue;
		}
		bool seen = false;
		for (int j = 0; j < nr; j++)
			seen |= reasons[j] == rs;
		if (!seen && nr < 8)
			reasons[nr++] = rs;
	}
	if (!delta && nr == 0 && o->nsites > 0)
		delta = true;
	int nrec = nr + (delta ? 1 : 0);
	for (int k = 0; k < nrec; k++) {
		int rs = k < nr ? reasons[k] : -1;
		size_t n = 0;
		for (size_t i = 0; i < o->np; i++) {
			if (o->p[i].reason != rs)
				continue;
			if (cats_grow((void **)&batch, &cap, n, sizeof(*batch),
			    16) < 0)
				goto out;
			batch[n++] = o->p[i].ent;
		}
		bool last = k == nrec - 1;
		/* Long lists go out in slices; sites ride on the last one. */
		size_t off = 0;
		do {
			size_t take = n - off > PART ? PART : n - off;
			bool final = last && off + take == n;
			struct cats_rec r;
			rec_head(o, &r, rs < 0 ? CATS_OP_DELTA : CATS_OP_WITHDRAW,
			    now);
			r.u.metric.entries.v = batch + off;
			r.u.metric.entries.n = take;
			if (rs >= 0)
				r.u.metric.reason = sma_wd_names[rs];
			size_t soff = 0;
			do {
				struct cats_rec rr = r;
				size_t st = 0;
				if (final) {
					st = o->nsites - soff > PART ? PART
					    : o->nsites - soff;
					rr.u.metric.sites.v = o->sites + soff;
					rr.u.metric.sites.n = st;
					if (soff > 0) {
						rr.u.metric.seq = ++o->seq;
						rr.u.metric.entries.n = 0;
						rr.u.metric.op = CATS_OP_DELTA;
						rr.u.metric.reason = NULL;
					}
				}
				out_send(o, &rr);
				soff += st;
			} while (final && soff < o->nsites);
			off += take;
		} while (off < n);
	}
out:
	free(batch);
	o->np = 0;
	o->nsites = 0;
	cats_arena_reset(&o->arena);
}

void
sma_out_event(void *arg, const struct sma_event *ev)
{
	struct sma_out *o = arg;
	switch (ev->kind) {
	case SMA_EV_ADD:
	case SMA_EV_UPDATE:
		add_pending(o, ev->ent, -1);
		break;
	case SMA_EV_WITHDRAW:
		add_pending(o, ev->ent, ev->reason);
		break;
	case SMA_EV_SITE:
		add_site(o, ev->svc);
		break;
	case SMA_EV_COMMIT:
		flush(o, ev->now);
		break;
	default:
		break;
	}
}

int
sma_out_withdraw_saved(struct sma_out *o, const struct cats_entry *e,
    int reason, uint64_t now)
{
	struct cats_entry w;
	struct cats_rec r;
	sma_withdrawal_entry(e, &w);
	rec_head(o, &r, CATS_OP_WITHDRAW, now);
	r.u.metric.entries.v = &w;
	r.u.metric.entries.n = 1;
	r.u.metric.reason = sma_wd_names[reason];
	return out_send(o, &r);
}

/* Every entry and site in parts; state: the view a state file keeps. */
static int
write_full(struct sma_out *o, const struct sma *s, uint64_t now, bool state,
    int (*out)(void *, const struct cats_rec *), void *arg)
{
	size_t ne = sma_count(s), ns = 0;
	for (const struct sma_svc *v = sma_services(s); v; v = v->next)
		ns++;
	struct cats_entry *ents = calloc(ne ? ne : 1, sizeof(*ents));
	struct cats_site *sites = calloc(ns ? ns : 1, sizeof(*sites));
	const char **flags = calloc(ne ? ne * SMA_NFLAGS : 1, sizeof(*flags));
	int rc = -1;
	if (ents == NULL || sites == NULL || flags == NULL)
		goto out;
	size_t i = 0, j = 0;
	for (const struct sma_svc *v = sma_services(s); v; v = v->next) {
		sma_site_view(v, &sites[j++]);
		for (const struct sma_entry *e = v->head; e; e = e->svc_next) {
			if (state && e->state == CATS_SCI_FAILED)
				continue;
			sma_entry_view(e, &ents[i], state ? NULL
			    : flags + i * SMA_NFLAGS);
			i++;
		}
	}
	ne = i;
	size_t pe = (ne + PART - 1) / PART, ps = state ? 0
	    : (ns + PART - 1) / PART;
	size_t parts = pe > ps ? pe : ps;
	if (parts == 0)
		parts = 1;
	if (parts > 65535)
		goto out;
	rc = 0;
	for (size_t p = 0; p < parts; p++) {
		struct cats_rec r;
		rec_head(o, &r, CATS_OP_FULL, now);
		if (state)
			r.u.metric.seq = --o->seq;	/* not an advertisement */
		CATS_SET(&r.u.metric, MET, part, p + 1);
		CATS_SET(&r.u.metric, MET, parts, parts);
		CATS_SET_IF(state && o->last_full, &r.u.metric, MET, last_full,
		    o->last_full);
		size_t eo = p * PART;
		if (eo < ne) {
			r.u.metric.entries.v = ents + eo;
			r.u.metric.entries.n = ne - eo > PART ? PART : ne - eo;
		}
		size_t so = p * PART;
		if (!state && so < ns) {
			r.u.metric.sites.v = sites + so;
			r.u.metric.sites.n = ns - so > PART ? PART : ns - so;
		}
		if (out(arg, &r) < 0)
			rc = -1;
	}
out:
	free(ents);
	free(sites);
	free(flags);
	return rc;
}

static int
out_emit(void *arg, const struct cats_rec *r)
{
	return out_send(arg, r);
}

int
sma_out_snapshot(struct sma_out *o, const struct sma *s, uint64_t now)
{
	/* Anything pending goes first, so the snapshot is the latest word. */
	if (o->np || o->nsites)
		flush(o, now);
	return write_full(o, s, now, false, out_emit, o);
}

/* ---- state files ---- */

struct filew {
	int fd;
	struct cats_buf b;
};

static int
file_emit(void *arg, const struct cats_rec *r)
{
	struct filew *w = arg;
	return cats_rec_encode(r, &w->b, false);
}

int
sma_out_save_state(const struct sma_out *o, const struct sma *s,
    const char *path, uint64_t now, uint64_t last_full, char *err,
    size_t errlen)
{
	char tmp[4200];
	struct filew w = { -1, { 0 } };
	struct sma_out copy = *o;	/* the sequence does not move */
	copy.last_full = last_full;
	copy.p = NULL;
	copy.sites = NULL;
	memset(&copy.arena, 0, sizeof(copy.arena));
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -1;
	}
	if (write_full(&copy, s, now, true, file_emit, &w) < 0) {
		snprintf(err, errlen, "%s: cannot encode the state", path);
		cats_buf_free(&w.b);
		return -1;
	}
	char why[300] = "";
	w.fd = cats_file_openat(AT_FDCWD, tmp, O_WRONLY | O_CREAT | O_TRUNC,
	    0600, NULL, why, sizeof(why));
	if (w.fd < 0 || cats_write_all(w.fd, w.b.p, w.b.len) < 0 ||
	    fsync(w.fd) < 0) {
		if (w.fd < 0)
			snprintf(err, errlen, "%s", why);
		else
			snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		if (w.fd >= 0)
			close(w.fd);
		unlink(tmp);
		cats_buf_free(&w.b);
		return -1;
	}
	close(w.fd);
	cats_buf_free(&w.b);
	if (rename(tmp, path) < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	/* The rename itself must survive a crash: sync the directory. */
	char dir[4200];
	cats_strlcpy(dir, path, sizeof(dir));
	int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

static int
copy_into(struct cats_arena *a, const struct cats_entry *in,
    struct cats_entry *out)
{
	if (copy_entry(a, in, out) < 0)
		return -1;
	out->flags.v = NULL;
	out->flags.n = 0;
	return 0;
}

int
sma_state_load(struct sma_state *st, const char *path, char *err,
    size_t errlen)
{
	memset(st, 0, sizeof(*st));
	st->arena.cap = 1u << 30;
	int fd = cats_file_open(path, err, errlen);
	if (fd < 0)
		return errno == ENOENT ? 1 : -1;
	struct cats_seq_reader rd;
	struct cats_dec d;
	struct cats_rec r;
	size_t cap = 0;
	int rc = 0;
	bool first = true;
	cats_seq_reader_init(&rd, NULL);
	cats_dec_init(&d, NULL);
	for (;;) {
		struct cats_err e;
		memset(&e, 0, sizeof(e));
		int k = cats_seq_next_rec(&rd, &d, &r, &e);
		if (k == CATS_SEQ_NEED) {
			if (rd.eof)
				break;
			if (cats_seq_read_fd(&rd, fd) < 0) {
				snprintf(err, errlen, "%s: %s", path,
				    strerror(errno));
				rc = -1;
				break;
			}
			continue;
		}
		char msg[400];
		if (k == CATS_SEQ_BAD) {
			snprintf(err, errlen, "%s: %s", path, cats_err_fmt(&e,
			    rd.index - 1, msg, sizeof(msg)));
			rc = -1;
			break;
		}
		const struct cats_metric *m = &r.u.metric;
		if (r.type != CATS_T_METRIC || m->op != CATS_OP_FULL ||
		    (!first && m->epoch != st->epoch)) {
			snprintf(err, errlen, "%s: record %" PRIu64 ": not a "
			    "state record (metric, op full, one epoch)", path,
			    rd.index - 1);
			rc = -1;
			break;
		}
		first = false;
		st->epoch = m->epoch;
		if (m->seq > st->seq)
			st->seq = m->seq;
		st->ts = m->ts;
		if (CATS_HAS(m, MET, last_full) && m->last_full > st->last_full)
			st->last_full = m->last_full;
		for (size_t i = 0; i < m->entries.n; i++) {
			if (st->n == cap) {
				size_t nc = cap ? cap * 2 : 256;
				void *v = realloc(st->v, nc * sizeof(*st->v));
				if (v == NULL) {
					rc = -1;
					break;
				}
				st->v = v;
				cap = nc;
			}
			if (copy_into(&st->arena, &m->entries.v[i],
			    &st->v[st->n]) < 0) {
				rc = -1;
				break;
			}
			st->n++;
		}
		if (rc < 0) {
			snprintf(err, errlen, "%s: out of memory", path);
			break;
		}
	}
	cats_dec_free(&d);
	cats_seq_reader_free(&rd);
	close(fd);
	if (rc < 0)
		sma_state_free(st);
	return rc;
}

void
sma_state_free(struct sma_state *st)
{
	free(st->v);
	cats_arena_free(&st->arena);
	memset(st, 0, sizeof(*st));
}
