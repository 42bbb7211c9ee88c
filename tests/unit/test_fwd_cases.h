/*
 * test_fwd_cases.h - load and run the forwarder's packet fixtures
 * (tests/data/fwd/NAME.case, format in tests/data/fwd/README) through the
 * lib/fwd packet path with fake ports.  Shared by test_fwd_cases.c (every
 * case against its expected packets, drops and records) and
 * test_fwd_fast.c (the BPF fast path against the same path).
 */
#ifndef TEST_FWD_CASES_H
#define TEST_FWD_CASES_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/conf.h"
#include "fwd/path.h"
#include "rec/json.h"

#define FC_MAX_LINES	48
#define FC_PKT		(65536 + 256)

enum { FC_CTL, FC_IN, FC_OUT, FC_DROP, FC_COUNT, FC_REQUEST, FC_STATUS,
	FC_OPT, FC_TICK, FC_BINDING };

struct fc_line {
	int kind;
	char port[16];		/* client, core, site; core:mpls */
	uint8_t *pkt;		/* in, out */
	size_t len;
	char *text;		/* ctl JSON, drop/count name, key=value list */
	long n;			/* count */
};

struct fcase {
	char name[96];
	char doc[256];
	bool egress;
	struct fc_line l[FC_MAX_LINES];
	int nl;
};

/* What the hooks saw: the records sent, one summary line each. */
struct fc_seen {
	char rec[32][160];
	int n;
};
static struct fc_seen fc_seen;
/* opt select-down: the channel to the C-PS is down (requests fail). */
static bool fc_select_down;
/* The capabilities of the last record that had them, " TOKEN" each. */
static char fc_caps[1024];

static inline int
fc_hex(const char *s, uint8_t **out, size_t *len)
{
	size_t n = strlen(s);
	if (n % 2)
		return -1;
	*out = malloc(n / 2 + 1);
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		(*out)[i] = (uint8_t)v;
	}
	*len = n / 2;
	return 0;
}

/* Parse one case file; -1 with a message for a bad fixture. */
static inline int
fc_load(struct fcase *c, const char *path, const char *name)
{
	FILE *f = fopen(path, "r");
	static char line[300000];
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		char *sp = strchr(line, ' ');
		char *arg = sp ? sp + 1 : (char *)"";
		if (sp)
			*sp = '\0';
		if (line[0] == '#') {
			if (!c->doc[0])
				snprintf(c->doc, sizeof(c->doc), "%s", arg);
			continue;
		}
		if (strcmp(line, "role") == 0) {
			c->egress = strcmp(arg, "egress") == 0;
			continue;
		}
		if (line[0] == '\0' || c->nl == FC_MAX_LINES)
			continue;
		struct fc_line *l = &c->l[c->nl++];
		static const char *const kinds[] = { "ctl", "in", "out", "drop",
			"count", "request", "status", "opt", "tick", "binding" };
		l->kind = -1;
		for (int k = 0; k < 10; k++)
			if (strcmp(line, kinds[k]) == 0)
				l->kind = k;
		if (l->kind == FC_IN || l->kind == FC_OUT) {
			char *hex = strchr(arg, ' ');
			if (hex == NULL)
				goto bad;
			*hex++ = '\0';
			snprintf(l->port, sizeof(l->port), "%s", arg);
			if (fc_hex(hex, &l->pkt, &l->len) < 0)
				goto bad;
		} else if (l->kind == FC_TICK) {
			l->n = strtol(arg, NULL, 10);
		} else if (l->kind == FC_COUNT) {
			char *num = strchr(arg, ' ');
			l->n = num ? strtol(num + 1, NULL, 10) : 1;
			if (num)
				*num = '\0';
			l->text = strdup(arg);
		} else if (l->kind >= 0) {
			l->text = strdup(arg);
		} else {
			goto bad;
		}
	}
	fclose(f);
	return 0;
bad:
	printf("# %s: bad line \"%s\"\n", path, line);
	fclose(f);
	return -1;
}

static inline void
fc_free(struct fcase *c)
{
	for (int i = 0; i < c->nl; i++) {
		free(c->l[i].pkt);
		free(c->l[i].text);
	}
}

/* The case files in dir, sorted; returns their number (names malloc'd). */
static inline int
fc_list(const char *dir, char ***names)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, alphasort), k = 0;
	*names = calloc(n > 0 ? (size_t)n : 1, sizeof(char *));
	for (int i = 0; i < n; i++) {
		size_t len = strlen(ents[i]->d_name);
		if (len > 5 && strcmp(ents[i]->d_name + len - 5, ".case") == 0)
			(*names)[k++] = strndup(ents[i]->d_name, len - 5);
		free(ents[i]);
	}
	free(ents);
	return k;
}

static inline int
fc_emit(void *arg, int chan, struct cats_rec *r)
{
	(void)arg;
	if (chan == CATS_FWDP_SELECT && fc_select_down)
		return -1;
	if (fc_seen.n == 32)
		return 0;
	char *s = fc_seen.rec[fc_seen.n++];
	if (r->type == CATS_T_REQUEST) {
		const struct cats_request *q = &r->u.request;
		int o = snprintf(s, 160, "request mode=%s held=%llu cs_id=%s",
		    cats_req_mode_names[q->mode], (unsigned long long)q->held,
		    (q->has & (UINT64_C(1) << CATS_REQ_cs_id)) ? q->cs_id : "");
		o += snprintf(s + o, 160 - (size_t)o, " dataplane=%s msd=",
		    CATS_HAS(q, REQ, dataplane) ?
		    cats_dataplane_names[q->dataplane] : "");
		if (CATS_HAS(q, REQ, msd))
			o += snprintf(s + o, 160 - (size_t)o, "%llu",
			    (unsigned long long)q->msd);
		o += snprintf(s + o, 160 - (size_t)o, " dataplanes=");
		for (size_t i = 0; CATS_HAS(q, REQ, dataplanes) &&
		    i < q->dataplanes.n; i++)
			o += snprintf(s + o, 160 - (size_t)o, "%s%s",
			    i ? "," : "", q->dataplanes.v[i]);
		if (CATS_HAS(&q->constraints, CON, max_delay_us))
			snprintf(s + o, 160 - (size_t)o, " max_delay_us=%llu",
			    (unsigned long long)q->constraints.max_delay_us);
	} else if (r->type == CATS_T_STATUS) {
		int o = snprintf(s, 160, "status event=%s reason=%s id=%llu",
		    cats_status_event_names[r->u.status.event],
		    r->u.status.reason ? r->u.status.reason : "",
		    (unsigned long long)r->u.status.id);
		/* The capabilities: in full in fc_caps, a mark here. */
		if (CATS_HAS(&r->u.status, STA, caps)) {
			size_t at = 0;
			for (size_t i = 0; i < r->u.status.caps.n; i++)
				at += (size_t)snprintf(fc_caps + at,
				    sizeof(fc_caps) - at, " %s",
				    r->u.status.caps.v[i]);
			o += snprintf(s + o, 160 - (size_t)o, " caps=yes");
		}
		if (r->u.status.unreachable.af != 0) {
			char a[64];
			cats_ip_fmt(&r->u.status.unreachable, a, sizeof(a));
			snprintf(s + o, 160 - (size_t)o, " unreachable=%s", a);
		}
	} else if (r->type == CATS_T_BINDING) {
		snprintf(s, 160, "binding op=%s reason=%s locator_af=%d",
		    cats_bind_op_names[r->u.binding.op], r->u.binding.reason ?
		    r->u.binding.reason : "", r->u.binding.fwd.locator.af);
	} else {
		snprintf(s, 160, "%s", cats_type_name(r->type));
	}
	return 0;
}

/*
 * The forwarder of a case: an ingress (client and core ports) or an egress
 * (core and site ports), addresses as in tests/data/fwd/README, the case's
 * opt lines applied.  Every fake port gets ifindex (0: 1, 2, 3).
 */
static inline int
fc_setup(struct cats_fwdp *w, const struct fcase *c, int ifindex)
{
	static struct cats_fwdp_conf cf;
	memset(&cf, 0, sizeof(cf));
	fc_select_down = false;
	struct cats_ip ip;
	const char *src4 = c->egress ? "10.99.0.2" : "10.99.0.1";
	const char *src6 = c->egress ? "2001:db8:2::100" : "2001:db8:1::1";
	cf.id = c->egress ? "EF-2" : "IF-1";
	cf.dataplane = -1;
	cf.epoch = 1;
	cats_ip_parse(src4, strlen(src4), &ip);
	memcpy(cf.fc.src4, ip.a, 4);
	cf.fc.has_src4 = true;
	cf.sids[cf.nsids++] = ip;
	cats_ip_parse(src6, strlen(src6), &ip);
	memcpy(cf.fc.src6, ip.a, 16);
	cf.fc.has_src6 = true;
	cf.sids[cf.nsids++] = ip;
	if (!c->egress) {
		const char *svc[] = { "S1", "203.0.113.100", "S1",
			"2001:db8:100::100", "", "203.0.113.200" };
		for (int i = 0; i < 6; i += 2) {
			struct cats_fwd_svc *s = &cf.svc[cf.nsvc++];
			snprintf(s->cs_id, sizeof(s->cs_id), "%s", svc[i]);
			cats_ip_parse(svc[i + 1], strlen(svc[i + 1]), &s->addr);
		}
	} else {
		char err[128];
		cats_prefix_parse("198.51.100.0/24", 15, false,
		    &cf.owns[cf.nowns++], err, sizeof(err));
		cats_prefix_parse("2001:db8:5::/64", 15, false,
		    &cf.owns[cf.nowns++], err, sizeof(err));
	}
	for (int i = 0; i < c->nl; i++) {
		const char *o = c->l[i].text;
		if (c->l[i].kind != FC_OPT)
			continue;
		if (strncmp(o, "mtu=", 4) == 0)
			cf.mtu = (uint32_t)atoi(o + 4);
		else if (strcmp(o, "icmp-unreach") == 0)
			cf.icmp_unreach = true;
		else if (strcmp(o, "path-down") == 0)
			cf.path_down = true;
		else if (strncmp(o, "pending-flow=", 13) == 0)
			cf.fc.pend_pkts_flow = (unsigned)atoi(o + 13);
		else if (strcmp(o, "precedence=address") == 0)
			cf.precedence = 2;
		else if (strcmp(o, "precedence=csid") == 0)
			cf.precedence = 1;
		else if (sscanf(o, "mode-b=udp:%d:%d", &cf.modeb_port,
		    &cf.modeb_off) == 2)
			cf.modeb_proto = 17;
		else if (strcmp(o, "tcp-state=off") == 0)
			cf.fc.tcp_off = true;
		else if (strcmp(o, "flow-label=off") == 0)
			cf.fc.flowlabel_off = true;
		else if (strncmp(o, "label=", 6) == 0)
			cf.labels[cf.nlabels++] = (uint32_t)atoi(o + 6);
		else if (strcmp(o, "explicit-null") == 0)
			cf.fc.explicit_null = true;
		else if (strncmp(o, "dataplane=", 10) == 0)
			cf.dataplane = cats_enum_index(cats_dataplane_names,
			    o + 10, strlen(o + 10));
		else if (strncmp(o, "msd=", 4) == 0)
			cf.fc.msd = (unsigned)atoi(o + 4);
		else if (strcmp(o, "no-src6") == 0)
			cf.fc.has_src6 = false;
		else if (strcmp(o, "select-down") == 0)
			fc_select_down = true;
		else if (strncmp(o, "encaps=", 7) == 0) {
			char b[64], *save = NULL;
			snprintf(b, sizeof(b), "%s", o + 7);
			for (char *t = strtok_r(b, ",", &save); t != NULL;
			    t = strtok_r(NULL, ",", &save))
				cf.fc.encaps |= 1u << cats_enum_index(
				    cats_dataplane_names, t, strlen(t));
		}
		else if (strncmp(o, "fallback-ttl=", 13) == 0) {
			char e[128];
			cats_parse_ms(o + 13, &cf.fb.ttl_ms, e, sizeof(e));
		} else if (strncmp(o, "learn-reverse=", 14) == 0) {
			char e[128];
			cats_parse_ms(o + 14, &cf.learn_rev_ms, e, sizeof(e));
		} else if (strncmp(o, "fallback=", 9) == 0) {
			char e[256];
			if (cats_ifb_parse(&cf.fb, o + 9, e, sizeof(e)) < 0) {
				printf("# %s: %s\n", c->name, e);
				return -1;
			}
		}
		else if (strncmp(o, "return=", 7) == 0 && strchr(o + 7, '=')) {
			/* return=ID=mpls:L/L... or return=ID=ADDR */
			static char ids[4][32];
			struct cats_fwd_ret *rt = &cf.ret[cf.nret];
			const char *eq = strchr(o + 7, '=');
			snprintf(ids[cf.nret], sizeof(ids[0]), "%.*s",
			    (int)(eq - o - 7), o + 7);
			rt->id = ids[cf.nret++];
			if (strncmp(eq + 1, "mpls:", 5) == 0) {
				for (const char *q = eq + 6; *q; q++)
					if (q == eq + 6 || q[-1] == '/')
						rt->labels[rt->nlabels++] =
						    (uint32_t)atoi(q);
			} else {
				cats_ip_parse(eq + 1, strlen(eq + 1), &rt->addr);
			}
		} else if (strncmp(o, "tcp-timeout=", 12) == 0) {
			char err[256];
			if (cats_tcp_timeout_parse(&cf.fc, o + 12, err,
			    sizeof(err)) < 0) {
				printf("# %s: %s\n", c->name, err);
				return -1;
			}
		} else {
			printf("# %s: unknown opt %s\n", c->name, o);
			return -1;
		}
	}
	if (cats_fwdp_init(w, &cf) < 0)
		return -1;
	cats_fwdp_start(w, 0, 1000);
	w->emit = fc_emit;
	if (c->egress) {
		cats_fwdp_port_fake(w, "e1", CATS_PORT_CORE, ifindex ? ifindex : 2,
		    1500);
		cats_fwdp_port_fake(w, "e2", CATS_PORT_SITE, ifindex ? ifindex : 3,
		    1500);
	} else {
		cats_fwdp_port_fake(w, "c0", CATS_PORT_CLIENT,
		    ifindex ? ifindex : 1, 1500);
		cats_fwdp_port_fake(w, "i1", CATS_PORT_CORE, ifindex ? ifindex : 2,
		    1500);
	}
	memset(&fc_seen, 0, sizeof(fc_seen));
	return 0;
}

/* The port of a fixture's port name (core:mpls: the core). */
static inline struct cats_port *
fc_port(struct cats_fwdp *w, const char *name)
{
	return strcmp(name, "client") == 0 ? w->client : strncmp(name,
	    "core", 4) == 0 && (name[4] == '\0' || strcmp(name + 4, ":mpls") ==
	    0) ? w->core : strcmp(name, "site") == 0 ? w->site : NULL;
}

/* Does a port name say the bytes are an MPLS label stack (core:mpls)? */
static inline bool
fc_mpls(const char *name)
{
	return strstr(name, ":mpls") != NULL;
}

/* Apply a ctl line: a record from JSON through the one decoder. */
static inline int
fc_ctl(struct cats_fwdp *w, const char *text, uint64_t now)
{
	static struct cats_dec dec;
	static bool init;
	struct cats_rec r;
	struct cats_err e;
	json_error_t je;
	if (!init) {
		cats_dec_init(&dec, NULL);
		init = true;
	}
	json_t *j = json_loads(text, 0, &je);
	memset(&e, 0, sizeof(e));
	if (j == NULL || cats_rec_from_json(&dec, j, &r, &e) < 0) {
		printf("# bad ctl record: %s %s\n", j ? e.field : je.text,
		    j ? e.reason : "");
		json_decref(j);
		return -1;
	}
	json_decref(j);
	cats_fwdp_ctl(w, &r, true, now);
	return 0;
}

/* An input line: the packet (with headroom) received on its port. */
static inline void
fc_in(struct cats_fwdp *w, const struct fc_line *l, uint64_t now)
{
	static uint8_t room[CATS_PKT_HEADROOM + FC_PKT];
	struct cats_rxmeta m = { .in = fc_port(w, l->port) };
	memcpy(room + CATS_PKT_HEADROOM, l->pkt, l->len);
	if (fc_mpls(l->port))
		cats_fwdp_mpls(w, room + CATS_PKT_HEADROOM, l->len, &m, now);
	else
		cats_fwdp_packet(w, room + CATS_PKT_HEADROOM, l->len, &m, now);
}

/*
 * Run the actions of c (ctl and in lines, in order, at now 1000, 1001...;
 * a tick line runs the forwarder's tick at its time, as often as it takes
 * to visit every binding, and the lines after it go on from there) up to
 * line `upto` (c->nl: all).
 */
static inline int
fc_run(struct cats_fwdp *w, const struct fcase *c, int upto)
{
	uint64_t now = 1000;
	for (int i = 0; i < upto && i < c->nl; i++, now++) {
		const struct fc_line *l = &c->l[i];
		if (l->kind == FC_TICK) {
			if ((uint64_t)l->n > now)
				now = (uint64_t)l->n;
			for (int k = 0; k < 11; k++)
				cats_fwdp_tick(w, now, false);
		}
		if (l->kind == FC_CTL && fc_ctl(w, l->text, now) < 0)
			return -1;
		if (l->kind == FC_IN) {
			if (fc_port(w, l->port) == NULL) {
				printf("# %s: no port %s\n", c->name, l->port);
				return -1;
			}
			fc_in(w, l, now);
		}
	}
	return 0;
}

/* The stats counters (name, value) of w. */
struct fc_stats {
	struct cats_kv kv[256];
	struct cats_fwdp_names names;
	size_t n;
};

static inline void
fc_stats(struct cats_fwdp *w, struct fc_stats *s)
{
	struct cats_stats_list st;
	cats_stats_init(&st, "cats-fwd", NULL);
	cats_fwdp_stats(w, &st, &s->names);
	s->n = st.n < 256 ? st.n : 256;
	memcpy(s->kv, st.kv, s->n * sizeof(s->kv[0]));
	cats_stats_free(&st);
}

static inline long
fc_delta(const struct fc_stats *a, const struct fc_stats *b, const char *k,
    bool *found)
{
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->kv[i].k, k) == 0) {
			*found = true;
			return (long)(b->kv[i].v - a->kv[i].v);
		}
	*found = false;
	return 0;
}

/* Does one of the records seen hold every key=value token of want? */
static inline bool
fc_rec_seen(const char *type, const char *want)
{
	for (int i = 0; i < fc_seen.n; i++) {
		char have[170], tok[160];
		snprintf(have, sizeof(have), " %s ", fc_seen.rec[i]);
		if (strncmp(have + 1, type, strlen(type)) != 0)
			continue;
		bool all = true;
		const char *p = want;
		int used;
		while (sscanf(p, "%159s%n", tok, &used) == 1) {
			char t[170];
			snprintf(t, sizeof(t), " %s ", tok);
			all &= strstr(have, t) != NULL;
			p += used;
		}
		if (all)
			return true;
	}
	return false;
}

static inline void
fc_hexdiff(const uint8_t *got, size_t gn, const uint8_t *exp, size_t en)
{
	size_t i = 0;
	while (i < gn && i < en && got[i] == exp[i])
		i++;
	printf("#   %zu bytes, expected %zu; first difference at byte %zu\n",
	    gn, en, i);
	printf("#   got      ");
	for (size_t j = 0; j < gn && j < 96; j++)
		printf("%02x", got[j]);
	printf("\n#   expected ");
	for (size_t j = 0; j < en && j < 96; j++)
		printf("%02x", exp[j]);
	printf("\n");
}

/*
 * Check what the forwarder did against the case's out, drop, count,
 * request and status lines: the packets out of each port, in order and
 * nothing else; the drop counter named and no other drop counter; the
 * counters named moved by their amounts; the records named were sent.
 */
static inline bool
fc_check(struct cats_fwdp *w, const struct fcase *c,
    const struct fc_stats *before)
{
	bool ok = true, has_drop = false;
	struct fc_stats after;
	fc_stats(w, &after);
	for (int p = 0; p < w->nports; p++) {
		struct cats_port *pt = &w->ports[p];
		const char *pn = pt == w->client ? "client" : pt == w->core ?
		    "core" : "site";
		struct cats_port_sent *s = pt->sent;
		int k = 0;
		for (int i = 0; i < c->nl; i++) {
			const struct fc_line *l = &c->l[i];
			if (l->kind != FC_OUT || fc_port(w, l->port) != pt)
				continue;
			k++;
			if (s == NULL) {
				printf("#   %s: packet %d out of %s missing\n",
				    c->name, k, pn);
				ok = false;
				continue;
			}
			if (s->len != l->len || memcmp(s->ip, l->pkt, l->len)) {
				printf("#   %s: packet %d out of %s differs\n",
				    c->name, k, pn);
				fc_hexdiff(s->ip, s->len, l->pkt, l->len);
				ok = false;
			}
			if ((s->l2 == CATS_L2_MPLS) != fc_mpls(l->port)) {
				printf("#   %s: packet %d out of %s: %s, expected "
				    "%s\n", c->name, k, pn, s->l2 ==
				    CATS_L2_MPLS ? "MPLS" : "IP",
				    fc_mpls(l->port) ? "MPLS" : "IP");
				ok = false;
			}
			s = s->next;
		}
		for (; s != NULL; s = s->next, k++) {
			printf("#   %s: unexpected packet out of %s:\n", c->name,
			    pn);
			fc_hexdiff(s->ip, s->len, NULL, 0);
			ok = false;
		}
	}
	for (int i = 0; i < c->nl; i++) {
		const struct fc_line *l = &c->l[i];
		bool found;
		long d;
		switch (l->kind) {
		case FC_DROP:
		case FC_COUNT:
			has_drop |= l->kind == FC_DROP;
			d = fc_delta(before, &after, l->text, &found);
			if (!found || d != (l->kind == FC_DROP ? 1 : l->n)) {
				printf("#   %s: %s moved by %ld, expected %ld%s\n",
				    c->name, l->text, d, l->kind == FC_DROP ?
				    1 : l->n, found ? "" : " (no such counter)");
				ok = false;
			}
			break;
		case FC_REQUEST:
		case FC_STATUS:
		case FC_BINDING:
			if (!fc_rec_seen(l->kind == FC_REQUEST ? "request" :
			    l->kind == FC_STATUS ? "status" : "binding", l->text)) {
				printf("#   %s: no %s record with %s\n", c->name,
				    l->kind == FC_REQUEST ? "request" : l->kind ==
				    FC_STATUS ? "status" : "binding", l->text);
				for (int j = 0; j < fc_seen.n; j++)
					printf("#     sent: %s\n", fc_seen.rec[j]);
				ok = false;
			}
			break;
		}
	}
	/* No other drop counter moved. */
	for (size_t i = 0; i < after.n; i++) {
		if (strncmp(after.kv[i].k, "drop_", 5) != 0 ||
		    after.kv[i].v == before->kv[i].v)
			continue;
		bool named = false;
		for (int j = 0; j < c->nl; j++)
			named |= (c->l[j].kind == FC_DROP ||
			    c->l[j].kind == FC_COUNT) &&
			    strcmp(c->l[j].text, after.kv[i].k) == 0;
		if (!named) {
			printf("#   %s: %s moved by %llu, not named\n", c->name,
			    after.kv[i].k, (unsigned long long)(after.kv[i].v -
			    before->kv[i].v));
			ok = false;
		}
	}
	(void)has_drop;
	return ok;
}

#endif
