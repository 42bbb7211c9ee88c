/*
 * select_conf.h - cats-select's options and its configuration file
 * (cats-select(1) OPTIONS and CONFIGURATION): one setter for a value of the
 * command line or of the file, the [sma "ID"] and [forwarder "ID"]
 * sections, and the defaults taken once both are read.
 *
 * Order and precedence: options are set first (from_conf false), then the
 * file is applied (cats_sel_opts_conf), then cats_sel_opts_defaults().  The
 * command line wins: a key an option set is skipped in the file, but for
 * the keys that add (listen, sma, sma-locators, sma-egresses, and limit of
 * another scope).
 *
 * Strings are not copied: the options point into argv and into the parsed
 * struct cats_conf, which must outlive them.  Pure: no I/O, no logging;
 * every error is -1 with one reason in err (the caller names the option:
 * "--key: reason"; the file's errors are "file:line: key: reason").
 */
#ifndef CATS_SELECT_CONF_H
#define CATS_SELECT_CONF_H

#include "base/conf.h"
#include "select/select.h"

#define CATS_SEL_MAX_LISTEN 8
#define CATS_SEL_MAX_PEERCRED 64
#define CATS_SEL_MAX_SMA 256

/* A C-SMA, the CS-IDs it may advertise ("A,B" or "*"), and its site: the
 * locator prefixes and egress nodes it may name (NULL: not limited). */
struct cats_sel_sma {
	char id[CATS_ID + 1];
	const char *cs, *locators, *egresses;
};

/* A forwarder: the uid its unix socket connections carry (UINT32_MAX:
 * none) and, from the file, the tenants it may request for. */
struct cats_sel_peer {
	char id[CATS_ID + 1];
	uint32_t uid;
	char *tenants;		/* config: space-separated, or NULL */
};

struct cats_sel_opts {
	const char *config, *services, *metrics, *net, *keys, *to, *stats_to,
	    *dump_to;
	const char *prometheus;		/* --prometheus: the /metrics endpoint */
	const char *state;	/* --state: the CST kept across restarts */
	const char *audit, *log, *id;
	const char *ingest, *ingest_keys, *ingest_key, *tedb;
	uint64_t ingest_window;
	bool set_ingest_window;
	uint64_t hello_ms;	/* --hello-timeout: the unauthenticated's (5 s) */
	bool set_hello;
	struct cats_sel_sma smas[CATS_SEL_MAX_SMA];
	size_t nsmas;
	bool lim_set[3], lim_cli[3];
	const char *listen[CATS_SEL_MAX_LISTEN];
	size_t nlisten;
	struct cats_sel_peer pc[CATS_SEL_MAX_PEERCRED];
	size_t npc;
	struct cats_sel_conf sel;
	bool set_prec, set_policy, set_seed, set_dp, set_window, set_insecure;
	uint64_t metric_ttl, net_ttl, purge_ms, stats_ms;
	bool set_metric_ttl, set_net_ttl, set_purge, set_stats_ms;
	bool replay, dump_at_end, stats_at_end, strict;
	int verbose;
};

/* The options before any is given: the selector's defaults, metric TTL
 * 3 min, net TTL 30 s, purge after 10 min, verbosity 1. */
void cats_sel_opts_init(struct cats_sel_opts *o);

/*
 * Set the value of one key (the long option's name: "precedence",
 * "limit", "sma", "listen", "keys"...).  from_conf: the value is the
 * file's, and loses to one an option set.  -1: "unknown key", or why the
 * value is refused.
 */
int cats_sel_opts_set(struct cats_sel_opts *o, const char *key,
    const char *v, bool from_conf, char *err, size_t errlen);

/* --peercred FORWARDER-ID=UID (the command line only). */
int cats_sel_opts_peercred(struct cats_sel_opts *o, const char *s, char *err,
    size_t errlen);

/*
 * Apply a parsed configuration file: top-level keys as cats_sel_opts_set
 * with from_conf, [sma "ID"] (cs-ids, locators, egresses) and
 * [forwarder "ID"] (uid, tenants).  -1 at the first bad entry, with
 * "file:line: key: reason" in err.
 */
int cats_sel_opts_conf(struct cats_sel_opts *o, const struct cats_conf *cf,
    char *err, size_t errlen);

/* What neither gave: the admission limits of 001 section 9 for the scopes
 * with no limit, an ingest window of 30 s, a hello deadline of 5 s. */
void cats_sel_opts_defaults(struct cats_sel_opts *o);

#endif
