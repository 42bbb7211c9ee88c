/*
 * opt.h - the option values of cats-fwd(1) that fill a packet path's
 * configuration (fwd/path.h): addresses, label stacks, return routes,
 * services, owned prefixes, Mode B, affinity, precedence and the
 * encapsulations.  As base/opt.h: a bad value is a one-line error naming the
 * option and the value, and the tool exits with CATS_EXIT_USAGE.
 */
#ifndef CATS_FWD_OPT_H
#define CATS_FWD_OPT_H

#include <stdbool.h>

#include "fwd/path.h"

/*
 * The options that go together, once all are read: --id, the core port
 * and a client or site port; a --dataplane among --encaps, and srmpls on
 * an af_packet core; --steer with --site and --steer-keys, and those keys
 * only with --steer.  A usage error (exit 2) naming the option otherwise.
 */
void cats_fwdp_opt_check(const struct cats_fwdp_conf *cf, const char *core,
    const char *client, const char *site, const char *steer,
    const char *steerkeys);
/* Parse s, an address called what in the error, into ip, or exit. */
void cats_fwdp_opt_ip(const char *s, struct cats_ip *ip, const char *what);
/* --src4 or --src6 (af 4 or 6): the source of encapsulated packets. */
void cats_fwdp_opt_src(struct cats_fwdp_conf *cf, const char *arg, int af);
/* --sid ADDR, one more of the forwarder's SIDs. */
void cats_fwdp_opt_sid(struct cats_fwdp_conf *cf, const char *arg);
/* --label LABEL, one more MPLS label of the forwarder. */
void cats_fwdp_opt_label(struct cats_fwdp_conf *cf, const char *arg);
/* --return ID=ADDR or ID=mpls:LABEL[/LABEL]...; arg is cut at the '='. */
void cats_fwdp_opt_return(struct cats_fwdp_conf *cf, char *arg);
/* --service (intercept false) or --intercept (true), one more service. */
void cats_fwdp_opt_service(struct cats_fwdp_conf *cf, const char *arg,
    bool intercept);
/* --owns PREFIX, one more prefix this forwarder owns. */
void cats_fwdp_opt_owns(struct cats_fwdp_conf *cf, const char *arg);
/* --affinity 5tuple|client. */
void cats_fwdp_opt_affinity(struct cats_fwdp_conf *cf, const char *arg);
/* --mode-b tcp|udp:PORT:OFFSET (or PROTO:PORT:OFFSET in numbers). */
void cats_fwdp_opt_modeb(struct cats_fwdp_conf *cf, const char *arg);
/* --precedence refuse|csid|address. */
void cats_fwdp_opt_precedence(struct cats_fwdp_conf *cf, const char *arg);
/* --dataplane srv6|srmpls|ipip|ip. */
void cats_fwdp_opt_dataplane(struct cats_fwdp_conf *cf, const char *arg);
/* --encaps NAME[,NAME]...: the encapsulations accepted from the core. */
void cats_fwdp_opt_encaps(struct cats_fwdp_conf *cf, const char *arg);

#endif
