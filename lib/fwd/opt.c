/*
 * opt.c - the option values of cats-fwd(1) into a packet path's
 * configuration (opt.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/conf.h"
#include "base/log.h"
#include "base/opt.h"
#include "base/tool.h"
#include "fwd/opt.h"

void
cats_fwdp_opt_check(const struct cats_fwdp_conf *cf, const char *core,
    const char *client, const char *site, const char *steer,
    const char *steerkeys)
{
	if (cf->id == NULL || core == NULL || (client == NULL && site == NULL))
		cats_usage_fail("needs %s", cf->id == NULL ? "--id ID"
		    : core == NULL ? "--core PORT" : "--client or --site PORT");
	/* The data plane the requests ask for must be one the forwarder does. */
	if (cf->dataplane >= 0 && cf->fc.encaps != 0 &&
	    !(cf->fc.encaps & (1u << cf->dataplane)))
		cats_usage_fail("--dataplane %s: not among --encaps",
		    cats_dataplane_names[cf->dataplane]);
	if (steer != NULL && (site == NULL || steerkeys == NULL))
		cats_usage_fail("--steer: %s", site == NULL ? "the egress's "
		    "(needs --site PORT)" : "needs --steer-keys FILE (the keys "
		    "of the C-SMAs whose steer records it applies)");
	if (steerkeys != NULL && steer == NULL)
		cats_usage_fail("--steer-keys: only with --steer");
	if (cf->dataplane == CATS_DP_SRMPLS && strncmp(core, "tun:", 4) == 0)
		cats_usage_fail("--dataplane srmpls: a TUN device carries IP "
		    "only; the core port must be af_packet");
}

void
cats_fwdp_opt_ip(const char *s, struct cats_ip *ip, const char *what)
{
	if (cats_ip_parse(s, strlen(s), ip) < 0) {
		cats_errorx("%s: bad %s address", s, what);
		exit(CATS_EXIT_USAGE);
	}
}

void
cats_fwdp_opt_src(struct cats_fwdp_conf *cf, const char *arg, int af)
{
	struct cats_ip ip;
	cats_fwdp_opt_ip(arg, &ip, "source");
	if (ip.af != af)
		cats_opt_fail(af == 4 ? "--src4" : "--src6", "%s: not IPv%d",
		    arg, af);
	if (af == 4) {
		memcpy(cf->fc.src4, ip.a, 4);
		cf->fc.has_src4 = true;
	} else {
		memcpy(cf->fc.src6, ip.a, 16);
		cf->fc.has_src6 = true;
	}
}

void
cats_fwdp_opt_sid(struct cats_fwdp_conf *cf, const char *arg)
{
	if (cf->nsids == CATS_ARRAY_LEN(cf->sids))
		cats_opt_fail("--sid", "at most %zu", CATS_ARRAY_LEN(cf->sids));
	cats_fwdp_opt_ip(arg, &cf->sids[cf->nsids++], "SID");
}

void
cats_fwdp_opt_label(struct cats_fwdp_conf *cf, const char *arg)
{
	if (cf->nlabels == CATS_ARRAY_LEN(cf->labels))
		cats_opt_fail("--label", "at most %zu",
		    CATS_ARRAY_LEN(cf->labels));
	cf->labels[cf->nlabels++] = (uint32_t)cats_opt_u64("--label", arg,
	    CATS_MPLS_FIRST, CATS_MPLS_MAX);
}

/* The label stack of --return ID=mpls:LABEL[/LABEL]..., top first. */
static void
need_labels(const char *s, struct cats_fwd_ret *rt)
{
	char buf[256], *save = NULL;
	if (cats_strlcpy(buf, s, sizeof(buf)) >= sizeof(buf))
		cats_opt_fail("--return", "%.32s...: too long", s);
	for (char *t = strtok_r(buf, "/", &save); t != NULL;
	    t = strtok_r(NULL, "/", &save)) {
		if (rt->nlabels == CATS_ARRAY_LEN(rt->labels)) {
			cats_errorx("--return: at most %zu labels",
			    CATS_ARRAY_LEN(rt->labels));
			exit(CATS_EXIT_USAGE);
		}
		rt->labels[rt->nlabels++] = (uint32_t)cats_opt_u64("--return",
		    t, CATS_MPLS_FIRST, CATS_MPLS_MAX);
	}
	if (rt->nlabels == 0)
		cats_opt_fail("--return", "%s: no label after mpls:", s);
}

void
cats_fwdp_opt_return(struct cats_fwdp_conf *cf, char *arg)
{
	char *eq = strchr(arg, '=');
	if (eq == NULL || eq == arg || cf->nret == CATS_ARRAY_LEN(cf->ret)) {
		cats_errorx("--return %s: expected ID=ADDR (at most %zu)", arg,
		    CATS_ARRAY_LEN(cf->ret));
		exit(CATS_EXIT_USAGE);
	}
	*eq = '\0';
	cf->ret[cf->nret].id = arg;
	if (strncmp(eq + 1, "mpls:", 5) == 0)
		need_labels(eq + 6, &cf->ret[cf->nret]);
	else
		cats_fwdp_opt_ip(eq + 1, &cf->ret[cf->nret].addr, "return");
	cf->nret++;
}

void
cats_fwdp_opt_service(struct cats_fwdp_conf *cf, const char *arg,
    bool intercept)
{
	char err[320];
	if (cf->nsvc == CATS_ARRAY_LEN(cf->svc)) {
		cats_errorx("too many services");
		exit(CATS_EXIT_USAGE);
	}
	if (cats_fwd_svc_parse(arg, intercept, &cf->svc[cf->nsvc++], err,
	    sizeof(err)) < 0) {
		cats_errorx("%s", err);
		exit(CATS_EXIT_USAGE);
	}
}

void
cats_fwdp_opt_owns(struct cats_fwdp_conf *cf, const char *arg)
{
	char err[160];
	if (cf->nowns == CATS_ARRAY_LEN(cf->owns))
		cats_opt_fail("--owns", "at most %zu prefixes",
		    CATS_ARRAY_LEN(cf->owns));
	if (cats_prefix_parse(arg, strlen(arg), true, &cf->owns[cf->nowns++],
	    err, sizeof(err)) < 0) {
		cats_errorx("--owns: %s", err);
		exit(CATS_EXIT_USAGE);
	}
}

void
cats_fwdp_opt_affinity(struct cats_fwdp_conf *cf, const char *arg)
{
	if (strcmp(arg, "5tuple") == 0)
		cf->affinity = CATS_AFF_5TUPLE;
	else if (strcmp(arg, "client") == 0)
		cf->affinity = CATS_AFF_CLIENT;
	else
		cats_opt_fail("--affinity", "%s: expected 5tuple or client",
		    arg);
}

void
cats_fwdp_opt_modeb(struct cats_fwdp_conf *cf, const char *arg)
{
	unsigned pr, po, off;
	char t[8];
	if (sscanf(arg, "%7[a-z]:%u:%u", t, &po, &off) == 3)
		pr = strcmp(t, "tcp") == 0 ? 6 : strcmp(t, "udp") == 0 ? 17 : 0;
	else if (sscanf(arg, "%u:%u:%u", &pr, &po, &off) != 3)
		pr = 0;
	if ((pr != 6 && pr != 17) || po == 0 || po > 65535 || off > 1400) {
		cats_errorx("--mode-b %s: expected tcp|udp:PORT:OFFSET", arg);
		exit(CATS_EXIT_USAGE);
	}
	cf->modeb_proto = (int)pr;
	cf->modeb_port = (int)po;
	cf->modeb_off = (int)off;
}

void
cats_fwdp_opt_precedence(struct cats_fwdp_conf *cf, const char *arg)
{
	cf->precedence = strcmp(arg, "refuse") == 0 ? 0 :
	    strcmp(arg, "csid") == 0 ? 1 :
	    strcmp(arg, "address") == 0 ? 2 : -1;
	if (cf->precedence < 0)
		cats_opt_fail("--precedence", "%s: expected refuse, csid or "
		    "address", arg);
}

void
cats_fwdp_opt_dataplane(struct cats_fwdp_conf *cf, const char *arg)
{
	cf->dataplane = cats_enum_index(cats_dataplane_names, arg,
	    strlen(arg));
	if (cf->dataplane < 0)
		cats_opt_fail("--dataplane", "%s: expected srv6, srmpls, ipip "
		    "or ip", arg);
}

void
cats_fwdp_opt_encaps(struct cats_fwdp_conf *cf, const char *arg)
{
	char buf[128], *save = NULL;
	cats_strlcpy(buf, arg, sizeof(buf));
	cf->fc.encaps = 0;
	for (char *t = strtok_r(buf, ",", &save); t != NULL;
	    t = strtok_r(NULL, ",", &save)) {
		int k = cats_enum_index(cats_dataplane_names, t, strlen(t));
		if (k < 0) {
			cats_errorx("--encaps %s: %s is none of ip, ipip, srv6, "
			    "srmpls", arg, t);
			exit(CATS_EXIT_USAGE);
		}
		cf->fc.encaps |= 1u << k;
	}
	if (cf->fc.encaps == 0)
		cats_opt_fail("--encaps", "no encapsulation named");
}
