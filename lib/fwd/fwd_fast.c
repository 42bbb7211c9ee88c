/*
 * fwd_fast.c - loading the cats-fwd fast path into the kernel and filling
 * its maps (fwd_fast.h).  The BPF object is lib/fwd/bpf/fwd_fast.c, compiled by
 * the build and embedded (fwd_fast_obj.S).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fwd/fwd_fast.h"
#include "base/log.h"

extern const char cats_fp_obj[], cats_fp_obj_end[];

#define FP_MAXPORTS 8
#define FP_HANDLE 0xCA75	/* tc filter handle and priority of ours */
#define FP_PRIO 1

struct cats_fwd_fast {
	struct bpf_object *obj;
	int flows, sids, ctr;	/* map fds */
	int tc;			/* the program's fd */
	int ports[FP_MAXPORTS];
	size_t nports;
	bool old_decap;		/* Linux before 6.3 */
	int ncpu;		/* possible CPUs: copies of each action */
	struct cats_fp_act *per;	/* ncpu of them, for put and get */
};

/*
 * libbpf's warnings, a verifier log among them (whose last lines say why a
 * program was refused), as our log lines, one per line; its chatter not.
 */
static int
fp_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *msg = NULL;
	if (level != LIBBPF_WARN || vasprintf(&msg, fmt, ap) < 0)
		return 0;
	for (char *line = strtok(msg, "\n"); line != NULL;
	    line = strtok(NULL, "\n"))
		cats_warnx("%s", line);
	free(msg);
	return 0;
}

struct cats_fwd_fast *
cats_fwd_fast_open(size_t max_keys, char *err, size_t errlen)
{
	struct cats_fwd_fast *f = calloc(1, sizeof(*f));
	if (f == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	f->ncpu = libbpf_num_possible_cpus();
	if (f->ncpu <= 0 || f->ncpu > UINT16_MAX ||
	    (f->per = calloc((size_t)f->ncpu, sizeof(*f->per))) == NULL) {
		snprintf(err, errlen, "CPUs: %s", f->ncpu <= 0 ?
		    strerror(-f->ncpu) : "out of memory");
		free(f);
		return NULL;
	}
	libbpf_set_print(fp_print);
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "cats_fwd_fast");
	f->obj = bpf_object__open_mem(cats_fp_obj,
	    (size_t)(cats_fp_obj_end - cats_fp_obj), &oo);
	if (f->obj == NULL) {
		snprintf(err, errlen, "BPF object: %s", strerror(errno));
		free(f->per);
		free(f);
		return NULL;
	}
	struct bpf_map *m = bpf_object__find_map_by_name(f->obj, "fp_flows");
	if (m == NULL || bpf_map__set_max_entries(m,
	    (uint32_t)(max_keys ? max_keys : 1)) < 0) {
		snprintf(err, errlen, "BPF object: no flow map");
		goto fail;
	}
	int r = bpf_object__load(f->obj);
	if (r < 0) {
		snprintf(err, errlen, "loading the BPF programs: %s",
		    strerror(-r));
		goto fail;
	}
	f->flows = bpf_map__fd(m);
	f->sids = bpf_object__find_map_fd_by_name(f->obj, "fp_sids");
	f->ctr = bpf_object__find_map_fd_by_name(f->obj, "fp_ctr");
	struct bpf_program *tc = bpf_object__find_program_by_name(f->obj,
	    "fp_tc");
	if (tc == NULL || f->sids < 0 || f->ctr < 0) {
		snprintf(err, errlen, "BPF object: missing programs or maps");
		goto fail;
	}
	f->tc = bpf_program__fd(tc);
	struct utsname u;
	unsigned major = 0, minor = 0;
	if (uname(&u) == 0)
		sscanf(u.release, "%u.%u", &major, &minor);
	f->old_decap = major < 6 || (major == 6 && minor < 3);
	return f;
fail:
	bpf_object__close(f->obj);
	free(f->per);
	free(f);
	return NULL;
}

static void
fp_detach(int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
	    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, o, .handle = FP_HANDLE, .priority = FP_PRIO);
	bpf_tc_detach(&hook, &o);
}

void
cats_fwd_fast_close(struct cats_fwd_fast *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->nports; i++)
		fp_detach(f->ports[i]);
	bpf_object__close(f->obj);
	free(f->per);
	free(f);
}

int
cats_fwd_fast_port(struct cats_fwd_fast *f, int ifindex, char *err,
    size_t errlen)
{
	if (f->nports == FP_MAXPORTS) {
		snprintf(err, errlen, "too many ports");
		return -1;
	}
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
	    .attach_point = BPF_TC_INGRESS);
	int r = bpf_tc_hook_create(&hook);
	if (r < 0 && r != -EEXIST) {
		snprintf(err, errlen, "tc clsact: %s", strerror(-r));
		return -1;
	}
	LIBBPF_OPTS(bpf_tc_opts, o, .prog_fd = f->tc, .handle = FP_HANDLE,
	    .priority = FP_PRIO, .flags = BPF_TC_F_REPLACE);
	r = bpf_tc_attach(&hook, &o);
	if (r < 0) {
		snprintf(err, errlen, "tc ingress program: %s", strerror(-r));
		return -1;
	}
	f->ports[f->nports++] = ifindex;
	return 0;
}

int
cats_fwd_fast_sid(struct cats_fwd_fast *f, uint8_t af, const uint8_t *a)
{
	struct cats_fp_sid k;
	uint8_t one = 1;
	memset(&k, 0, sizeof(k));
	k.af = af;
	memcpy(k.a, a, af == 4 ? 4 : 16);
	return bpf_map_update_elem(f->sids, &k, &one, BPF_ANY);
}

bool
cats_fwd_fast_old_decap(struct cats_fwd_fast *f, int on)
{
	if (on >= 0)
		f->old_decap = on != 0;
	return f->old_decap;
}

int
cats_fwd_fast_put(struct cats_fwd_fast *f, const struct cats_fp_key *k,
    const struct cats_fp_act *a)
{
	/* The same action for every CPU, its counters from 0. */
	for (int c = 0; c < f->ncpu; c++) {
		struct cats_fp_act *p = &f->per[c];
		*p = *a;
		if (f->old_decap)
			p->flags |= CATS_FP_F_OLD_DECAP;
		p->ncpu = (__u16)f->ncpu;
		p->pkts = p->bytes = p->last_ns = 0;
	}
	return bpf_map_update_elem(f->flows, k, f->per, BPF_ANY);
}

int
cats_fwd_fast_get(struct cats_fwd_fast *f, const struct cats_fp_key *k,
    struct cats_fp_act *a)
{
	if (bpf_map_lookup_elem(f->flows, k, f->per) < 0)
		return -1;
	*a = f->per[0];
	for (int c = 1; c < f->ncpu; c++) {
		const struct cats_fp_act *p = &f->per[c];
		a->pkts += p->pkts;
		a->bytes += p->bytes;
		if (p->last_ns > a->last_ns)
			a->last_ns = p->last_ns;
	}
	return 0;
}

int
cats_fwd_fast_del(struct cats_fwd_fast *f, const struct cats_fp_key *k)
{
	return bpf_map_delete_elem(f->flows, k);
}

void
cats_fwd_fast_counters(struct cats_fwd_fast *f, uint64_t out[CATS_FP__N])
{
	int ncpu = libbpf_num_possible_cpus();
	memset(out, 0, sizeof(uint64_t) * CATS_FP__N);
	if (ncpu <= 0)
		return;
	uint64_t *v = calloc((size_t)ncpu, sizeof(*v));
	if (v == NULL)
		return;
	for (uint32_t i = 0; i < CATS_FP__N; i++) {
		if (bpf_map_lookup_elem(f->ctr, &i, v) < 0)
			continue;
		for (int c = 0; c < ncpu; c++)
			out[i] += v[c];
	}
	free(v);
}

int
cats_fwd_fast_prog(const struct cats_fwd_fast *f)
{
	return f->tc;
}

int
cats_fp_key_make(struct cats_fp_key *out, const struct cats_fkey *k,
    int ifindex)
{
	memset(out, 0, sizeof(*out));
	if (k->wild || (k->proto != 6 && k->proto != 17) ||
	    (k->af != 4 && k->af != 6))
		return -1;
	out->ifindex = (uint32_t)ifindex;
	out->af = k->af;
	out->proto = k->proto;
	out->sport = htons(k->sport);
	out->dport = htons(k->dport);
	size_t al = k->af == 4 ? 4 : 16;
	memcpy(out->src, k->src, al);
	memcpy(out->dst, k->dst, al);
	return 0;
}

int
cats_fp_act_make(struct cats_fp_act *out, int ifindex, const uint8_t *l2,
    uint32_t mtu, int rewrite, const uint8_t *addr, uint8_t af,
    uint16_t port, const struct cats_encap *enc)
{
	memset(out, 0, sizeof(*out));
	out->ifindex = (uint32_t)ifindex;
	out->mtu = (uint16_t)(mtu > 65535 ? 65535 : mtu);
	out->rewrite = (uint8_t)rewrite;
	out->port = htons(port);
	if (rewrite != CATS_FP_RW_NONE)
		memcpy(out->addr, addr, af == 4 ? 4 : 16);
	memcpy(out->l2, l2, 14);
	if (enc == NULL || enc->kind == CATS_ENC_NONE)
		return 0;
	size_t oh = cats_encap_overhead(enc);
	if (enc->kind == CATS_ENC_MPLS) {
		/* The stack as lib/fwd pushes it on an inner packet of the
		 * flow's family with a traffic class of 0. */
		uint8_t room[CATS_PKT_HEADROOM + 40];
		uint8_t *p = room + CATS_PKT_HEADROOM;
		size_t len = af == 4 ? 20 : 40;
		if (oh == 0 || oh > 4 * CATS_FP_MPLS_MAX)
			return -1;
		memset(p, 0, len);
		p[0] = af == 4 ? 0x45 : 0x60;
		if (cats_encap_push(enc, &p, &len, 0) != 0)
			return -1;
		memcpy(out->enc, p, oh);
		out->enc_len = (uint8_t)oh;
		out->outer_af = CATS_FP_OUTER_MPLS;
		out->l2[12] = 0x88;
		out->l2[13] = 0x47;
		return 0;
	}
	if (oh > CATS_FP_ENC_MAX || oh < 20)
		return -1;
	/* The template: the outer headers of a minimal inner IPv4 packet,
	 * whose length, traffic class and id the program patches. */
	uint8_t room[CATS_PKT_HEADROOM + 20];
	uint8_t *p = room + CATS_PKT_HEADROOM;
	size_t len = 20;
	memset(p, 0, 20);
	p[0] = 0x45;
	if (cats_encap_push(enc, &p, &len, 0) != 0)
		return -1;
	memcpy(out->enc, p, oh);
	out->enc_len = (uint8_t)oh;
	out->outer_af = enc->outer_af == 4 ? 4 : 6;
	out->l2[12] = out->outer_af == 4 ? 0x08 : 0x86;
	out->l2[13] = out->outer_af == 4 ? 0x00 : 0xdd;
	return 0;
}

void
cats_fp_act_flowlabel(struct cats_fp_act *a, uint32_t fl)
{
	if (a->enc_len == 0 || a->outer_af != 6)
		return;
	a->enc[1] = (uint8_t)((a->enc[1] & 0xf0) | (fl >> 16 & 0x0f));
	a->enc[2] = (uint8_t)(fl >> 8);
	a->enc[3] = (uint8_t)fl;
}
