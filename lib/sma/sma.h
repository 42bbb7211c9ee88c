/*
 * sma.h - the C-SMA core (seed 000 §4-§5, §8.1, §10.1, §12): SCI report
 * authentication, validation and sanitization, the metric cache with its
 * per-SCI state machine, site aggregation per CS-ID, the quarantine, and the
 * metric records that leave the C-SMA.  Everything here is pure: time comes
 * in as `now` (ms since the epoch) and nothing reads a clock or a socket.
 *
 * Data flow:
 *
 *   sci-report --> sma_report() --> auth --> ranges --> sequence -->
 *       rate of change / flapping (flag or quarantine) --> cache entry
 *       (hysteresis, smoothing, state machine, site aggregate) --> events
 *   sma_tick(now) --> TTL / grace: HEALTHY -> STALE (pull wanted) -> FAILED
 *       (withdrawal); static-metric expiry --> events
 *
 * Every change to what the C-SMA would advertise is reported through one
 * interface, struct sma_event, delivered to the callback given to sma_new():
 * ADD / UPDATE / WITHDRAW for entries, SITE for a site aggregate, PULL when
 * the core wants an on-demand pull, and COMMIT at the end of each change
 * set (one report, one tick step, one eviction...).  The update controller
 * consumes these; struct sma_out (below) is the plain consumer that turns
 * every change set into metric records at once.
 */
#ifndef CATS_SMA_H
#define CATS_SMA_H

#include "base/bucket.h"
#include "base/conf.h"
#include "sec/crypto.h"
#include "base/htab.h"
#include "rec/cbor_scan.h"
#include "rec/rec.h"
#include "sec/token.h"

/* ---- configuration (cats-sma.conf(5)) ---- */

/* A TTL: a multiple of the expected report interval, or a fixed time. */
struct sma_ttl {
	uint64_t mult_ppm;	/* 2000000 = 2x; 0 when ms is used */
	uint64_t ms;
};

/* [sci "CSCI-ID"]: an SCI known by configuration (hard state). */
struct sma_cfg_sci {
	char *csci_id;
	char *cs_id;		/* the CS-ID it serves, NULL: as its token says */
	char *pull;		/* URL answering GET with a report, or NULL */
	char *sse;		/* URL of its Server-Sent Events stream, or NULL */
	uint64_t interval_ms;	/* expected report interval, 0: default */
	uint64_t pull_interval_ms; /* periodic pull, 0: on demand only */
};

/* [service "CS-ID"]: per-service timing (the TTL of its metric class). */
struct sma_cfg_svc {
	char *cs_id;
	uint64_t interval_ms;	/* 0: default */
	struct sma_ttl ttl, ttl_static;	/* mult 0 and ms 0: default */
	uint64_t grace_ms;	/* 0: default */
};

struct sma_range {
	uint64_t min, max;
};

/* [policy]: the rule file (cats-sma-policy(5)) and the transformations. */
struct sma_pol_conf {
	char *rules;		/* rule file, NULL: none */
	uint64_t gas_factor_ppm;	/* safety margin: GAS x factor (1.0) */
	bool has_ct_floor, has_ct_ceiling;
	uint64_t ct_floor, ct_ceiling;	/* computing time bounds, ms */
	bool ema;		/* exponential moving average of GAS, time */
	uint64_t ema_alpha_ppm;	/* its alpha (0.3) */
};

enum sma_refresh { SMA_REFRESH_AUTO, SMA_REFRESH_ON, SMA_REFRESH_OFF };
enum sma_damp { SMA_DAMP_OFF, SMA_DAMP_ON, SMA_DAMP_OBSERVE };

/* [update]: the update controller (seed 000 §7.3, §9.1, §9.2). */
struct sma_uc_conf {
	bool control;		/* false: every change leaves at once */
	uint64_t gas_ppm;	/* GAS change that triggers (10 %) */
	uint64_t gas_abs;	/* ... or absolute (50) */
	uint64_t ct_ppm;	/* computing time change (20 %) */
	uint64_t heartbeat_ms;	/* full snapshot at least this often (60 s) */
	uint64_t jitter_ppm;	/* +/- heartbeat jitter (10 %) */
	int refresh;		/* enum sma_refresh */
	uint64_t full_every;	/* with refresh: every n-th heartbeat is full */
	uint64_t min_interval_ms;	/* routine updates of an entry (5 s) */
	uint64_t rate_milli;	/* token bucket: records/s x 1000, 0: off */
	uint64_t burst;		/* its depth */
	int damp;		/* enum sma_damp */
	uint64_t damp_penalty, damp_suppress, damp_reuse, damp_max;
	uint64_t damp_half_life_ms;
	uint64_t batch_ms;	/* gather routine updates this long, 0: off */
	uint64_t batch_max;	/* entries per record */
	uint64_t load_ppm;	/* selective reporting above this load */
};

/* [northbound]: the sender to the C-PS (cats-northbound(7)). */
struct sma_nb_conf {
	char **fallback;	/* alternative C-PS URLs, in order */
	size_t nfallback;
	char *key;		/* PSK or Ed25519 secret: every advertisement */
	char *ps_keys;		/* keyring verifying the C-PS's answers */
	uint64_t timeout_ms;
	uint64_t backoff_min_ms, backoff_max_ms, jitter_ppm;
	uint64_t queue_max;	/* records buffered */
	uint64_t max_post;	/* bytes of one request */
	char **authorized;	/* CS-IDs this C-PS may receive, none: all */
	size_t nauthorized;
	char *prometheus;	/* textfile for node_exporter */
	uint64_t stats_interval_ms;
	bool notify;		/* syslog the C-PS's reachability */
};

/* [subordinate "ID"]: a C-SMA whose metric records this one aggregates. */
struct sma_cfg_sub {
	char *sma_id;
	char **cs_ids;		/* CS-IDs it may advertise ("*": any) */
	size_t ncs_ids;
	char *locators;		/* its site's locator prefixes, NULL: any */
	char *egresses;		/* its site's egress nodes, NULL: any */
};

enum sma_auth_mode { SMA_AUTH_TOKEN, SMA_AUTH_NONE };
enum sma_anomaly { SMA_ANOMALY_FLAG, SMA_ANOMALY_QUARANTINE };

struct sma_conf {
	char *path;
	char *id;		/* sma_id of the metric records */
	char *site;		/* site identity */
	char *egress;		/* egress node of the site (TE database node) */
	char *audit;		/* audit sink (log.h), NULL: stderr */

	/* [auth] */
	int auth;		/* enum sma_auth_mode */
	char *issuers;		/* keyring of token issuers */
	char *revoked;		/* revocation list: token ids (hex), one a line */
	uint64_t skew_ms;	/* report timestamp window (replays), +/- */

	/* [timing] */
	uint64_t interval_ms;	/* expected report interval (10 s) */
	uint64_t max_interval_ms; /* cap on an interval an SCI announces */
	struct sma_ttl ttl;	/* dynamic metrics: GAS, computing time, health */
	struct sma_ttl ttl_static; /* price, reputation, security, extensions */
	uint64_t grace_ms;	/* STALE -> FAILED */
	uint64_t confirm;	/* reports that take ACTIVE to HEALTHY */
	uint64_t advert_ttl_ms;	/* ttl_ms of the metric records (C-PS) */

	/* [validate] */
	struct sma_range gas, comp_time, price, reputation, security;
	uint64_t gas_jump_ppm, gas_jump_ms;	/* 50 % within 1 s */
	uint64_t ct_jump_ppm, ct_jump_ms;	/* 100 % within 1 s */
	uint64_t flap_max, flap_ms;		/* > 3 within 10 s */
	int anomaly;		/* enum sma_anomaly */
	uint64_t healthy_after;	/* N consecutive reports to enter HEALTHY */
	uint64_t unhealthy_after; /* M consecutive reports to leave it */
	uint64_t smoothing;	/* moving average over this many reports */
	uint64_t quarantine_max;

	/* [cache] */
	uint64_t max_entries;
	uint64_t max_services;
	uint64_t save_interval_ms;	/* state file saved this often (-T) */

	/* [limits]: input side (000 §12), rates in thousandths a second */
	uint64_t in_sci_milli, in_sci_burst;	/* reports of one SCI */
	uint64_t in_all_milli, in_all_burst;	/* every report */
	uint64_t audit_burst;	/* audit lines of one kind a window, 0: all */
	uint64_t audit_window_ms;

	/* [http] */
	uint64_t max_body;
	uint64_t http_timeout_ms;
	uint64_t pull_timeout_ms;
	uint64_t stall_ms;	/* SSE: no byte for this long = stalled */
	uint64_t backoff_max_ms;
	char *ca_file;

	struct sma_pol_conf pol;
	struct sma_uc_conf uc;
	struct sma_nb_conf nb;

	/* [mqtt]: reports published to a broker (000 §4.1) */
	struct sma_mqtt_conf {
		char *broker;	/* mqtt:// or mqtts://, NULL: none */
		char *topic;	/* one "+" level: the CSCI-ID */
		char *client_id;	/* NULL: the C-SMA's id */
		char *ca_file, *cert, *key;
		char *username, *password;
		uint64_t qos;
		uint64_t keepalive_ms, backoff_min_ms, backoff_max_ms;
	} mqtt;

	/* [steer]: site-local steering in a partition (000 §10.3) */
	struct sma_steer_conf {
		char **services;	/* CS-IDs that allow it, none: off */
		size_t nservices;
		char *to;		/* where steer records go (an endpoint) */
		uint64_t max_ms;	/* at most this long into a partition */
		uint64_t max_redirects;	/* instances steered away from at once */
	} steer;
	/* [hierarchy] */
	char *sub_keys;		/* keyring of subordinate C-SMAs */
	uint64_t sub_window_ms;	/* their timestamp window, +/- */

	struct sma_cfg_sci *scis;
	size_t nscis;
	struct sma_cfg_svc *svcs;
	size_t nsvcs;
	struct sma_cfg_sub *subs;
	size_t nsubs;
	struct cats_htab sci_index;	/* scis by CSCI-ID */
};

/* The defaults of seed 000 (examples in the text) into c. */
void sma_conf_defaults(struct sma_conf *c);
/* Read a parsed file into c (defaults first); -1 with "file:line: key:
 * reason" in err. */
int sma_conf_from(struct sma_conf *c, const struct cats_conf *cf, char *err,
    size_t errlen);
/* Load and read a file. */
int sma_conf_load(struct sma_conf *c, const char *path, char *err,
    size_t errlen);
void sma_conf_free(struct sma_conf *c);
/* The [sci] section of a CSCI-ID, O(1); NULL if none. */
const struct sma_cfg_sci *sma_conf_sci(const struct sma_conf *c,
    const char *csci_id);

/*
 * Keys and the revocation list named by a configuration.  Loaded apart from
 * the core so that a reload can be refused as a whole.
 */
struct sma_keys {
	struct cats_keyring issuers;
	uint8_t (*revoked)[CATS_TOKEN_CTI_LEN];
	size_t nrevoked;
};
int sma_keys_load(struct sma_keys *k, const struct sma_conf *c, char *err,
    size_t errlen);
void sma_keys_free(struct sma_keys *k);

/* ---- the cache, as the core shows it ---- */

/* Warning flags an accepted report carries into the metric record. */
enum {
	SMA_FL_GAS_JUMP = 1 << 0,	/* GAS changed too much too fast */
	SMA_FL_CT_JUMP = 1 << 1,	/* computing time changed too fast */
	SMA_FL_FLAP = 1 << 2,		/* health flapping */
	SMA_FL_CT_ZERO = 1 << 3,	/* GAS > 0 with computing time 0 */
	SMA_FL_RELEASED = 1 << 4,	/* released from quarantine */
};
#define SMA_NFLAGS 5
extern const char *const sma_flag_names[];

/* What changed in an entry (sma_event.changed). */
enum {
	SMA_CH_GAS = 1 << 0,
	SMA_CH_CT = 1 << 1,
	SMA_CH_PRICE = 1 << 2,
	SMA_CH_REPUTATION = 1 << 3,
	SMA_CH_SECURITY = 1 << 4,
	SMA_CH_EXT = 1 << 5,
	SMA_CH_HEALTH = 1 << 6,
	SMA_CH_STATE = 1 << 7,
	SMA_CH_FLAGS = 1 << 8,
	SMA_CH_LOCATOR = 1 << 9,
};

/* Presence of optional metrics in an entry (sma_entry.has). */
enum {
	SMA_HAS_GAS = 1 << 0,
	SMA_HAS_CT = 1 << 1,
	SMA_HAS_PRICE = 1 << 2,
	SMA_HAS_REPUTATION = 1 << 3,
	SMA_HAS_SECURITY = 1 << 4,
	SMA_HAS_PORT = 1 << 5,
};

struct sma_svc;

/* Where an imported entry comes from (interned by the core). */
struct sma_origin {
	struct sma_origin *next;
	char *site, *egress;	/* may be NULL */
};

/*
 * One SCI's cache entry.  Identity (csci_id, svc) is the hard part; the
 * metrics, health and times are soft state.  Read-only outside the core.
 */
struct sma_entry {
	struct sma_svc *svc;
	struct sma_entry *svc_prev, *svc_next;	/* entries of the CS-ID */
	struct sma_entry *lru_prev, *lru_next;	/* least recently updated first */
	uint32_t heap;		/* index in the deadline heap, or UINT32_MAX */
	uint8_t state;		/* enum cats_sci_state */
	uint8_t health;		/* enum cats_health, after hysteresis */
	uint8_t rhealth;	/* health as last reported */
	uint8_t streak;		/* consecutive reports of rhealth */
	uint8_t confirmed;	/* ACTIVE: reports so far */
	uint8_t flags;		/* SMA_FL_* of the last accepted report */
	uint8_t has;		/* SMA_HAS_* */
	uint8_t nsmooth;	/* values in the smoothing ring */
	uint8_t rep;		/* reputation */
	uint8_t sec;		/* security level */
	uint16_t port;
	uint32_t gas;		/* GAS as reported (after smoothing) */
	uint32_t raw_gas;	/* last raw value, for rate of change */
	uint32_t ct;		/* computing time (after smoothing) */
	uint32_t raw_ct;
	uint32_t price;
	uint32_t interval_ms;	/* expected report interval */
	uint32_t ttl_ms;	/* dynamic TTL */
	uint32_t ttl_static_ms;
	uint64_t seq;		/* last report sequence */
	uint64_t qseq;		/* highest sequence held in quarantine */
	uint64_t rts;		/* last report's own timestamp */
	uint64_t updated;	/* when the last report arrived (now) */
	uint64_t static_at;	/* when static metrics last arrived */
	uint64_t since;		/* when the state was entered */
	uint64_t deadline;	/* next timer of the entry, 0: none */
	struct cats_ip locator;
	struct cats_kv *ext;	/* extension metrics (names owned) */
	uint8_t next_n;		/* number of extension metrics */
	uint8_t smooth_pos;	/* next slot of the smoothing ring */
	uint8_t flap_pos;	/* next slot of the flapping ring */
	uint32_t *smooth;	/* ring: gas[16], ct[16] (smoothing on) */
	uint64_t *flap;		/* ring: report times of health changes */
	/* The verified token (a cache: keyed by a keyed hash of its bytes). */
	bool tok_ok;
	uint8_t tok_hash[16];
	uint8_t tok_cti[CATS_TOKEN_CTI_LEN];
	uint64_t tok_exp;	/* seconds */
	uint8_t *tok_cnf;	/* Ed25519 key reports must be signed with */
	/* [limits] sci-rate: this SCI's reports (after the sequence). */
	struct cats_bucket in_b;
	/* [policy] ema: the averages in thousandths, once started. */
	uint8_t ema_init;	/* bit 0 GAS, bit 1 computing time */
	uint64_t ema_gas, ema_ct;
	/* Imported from a subordinate C-SMA: its site and egress. */
	const struct sma_origin *origin;
	char csci_id[];
};

/* A site aggregate (000 §4.2 cross-metric rules applied). */
struct sma_site_view {
	uint64_t gas;		/* sum of live HEALTHY/DEGRADED GAS, 0 if no
				 * SCI is HEALTHY */
	bool has_ct;
	uint64_t ct;		/* GAS-weighted mean computing time */
	int health;		/* enum cats_health */
	uint64_t healthy;	/* SCIs HEALTHY and not FAILED */
	uint64_t total;		/* SCIs */
};

/*
 * The running sums of a site's SCIs, from which its view follows: kept by
 * the core over the cached values and by the update controller over the
 * advertised ones.
 */
struct sma_site_acc {
	uint64_t n, n_healthy, n_degraded, n_unhealthy, n_unknown, n_failed;
	uint64_t sum_gas;	/* contributing GAS */
	uint64_t sum_gw;	/* contributing GAS of SCIs with a comp. time */
	unsigned __int128 sum_gct;	/* sum of GAS x computing time */
};

/*
 * Add (sign 1) or remove (sign -1) one SCI's share: its state (enum
 * cats_sci_state), health, GAS and computing time (when it has them).
 */
void sma_site_acc(struct sma_site_acc *a, int state, int health,
    bool has_gas, uint64_t gas, bool has_ct, uint64_t ct, int sign);
/*
 * The site view: GAS sums the live HEALTHY and DEGRADED SCIs but is 0 when
 * no SCI is HEALTHY (000 §4.2); computing time is their GAS-weighted mean.
 */
void sma_site_view_of(const struct sma_site_acc *a,
    struct sma_site_view *out);

/*
 * A metric record of this C-SMA with no entries yet: op, its id, epoch and
 * seq, ts, site, egress and advertised TTL from the configuration.
 */
void sma_metric_head(const struct sma_conf *c, uint64_t epoch, uint64_t seq,
    int op, uint64_t now, struct cats_rec *r);

/*
 * The entry that withdraws a saved one (a state file's entry no longer
 * fresh): its ids, state, health, generation and time, GAS 0.
 */
void sma_withdrawal_entry(const struct cats_entry *saved,
    struct cats_entry *w);

/* One CS-ID: its entries and running sums (hard state). */
struct sma_svc {
	struct sma_svc *next;	/* every service, in order of creation */
	struct sma_entry *head, *tail;
	struct sma_site_acc acc;
	struct sma_site_view view;	/* as last reported */
	const struct sma_cfg_svc *cfg;
	char cs_id[];
};

/* ---- events: the one interface the update controller consumes ---- */

enum sma_ev_kind {
	SMA_EV_ADD,		/* a new SCI (discovery) */
	SMA_EV_UPDATE,		/* what an entry advertises changed */
	SMA_EV_WITHDRAW,	/* an entry's metrics withdrawn */
	SMA_EV_SITE,		/* a site aggregate changed */
	SMA_EV_PULL,		/* please pull this SCI now (STALE) */
	SMA_EV_COMMIT,		/* end of a change set */
};

enum sma_wd_reason {
	SMA_WD_FAILED,		/* FAILED: no report within TTL + grace */
	SMA_WD_EVICTED,		/* LRU eviction (cache full) */
	SMA_WD_EXPIRED,		/* restored state too old (cron mode) */
	SMA_WD_MOVED,		/* the SCI now reports for another CS-ID */
	SMA_WD_WITHDRAWN,	/* a subordinate C-SMA withdrew it */
};
extern const char *const sma_wd_names[];

struct sma_event {
	enum sma_ev_kind kind;
	uint64_t now;
	const struct sma_entry *ent;	/* ADD, UPDATE, WITHDRAW, PULL */
	const struct sma_svc *svc;	/* every kind but COMMIT */
	uint32_t changed;		/* UPDATE: SMA_CH_* */
	int old_health, old_state;	/* UPDATE */
	int reason;			/* WITHDRAW: enum sma_wd_reason */
	bool critical;	/* health or state change, discovery, withdrawal */
};

typedef void (*sma_event_fn)(void *arg, const struct sma_event *ev);

/* ---- the core ---- */

struct sma;

/* Where a report came from. */
enum sma_src_kind { SMA_SRC_STREAM, SMA_SRC_PUSH, SMA_SRC_PULL, SMA_SRC_SSE,
	SMA_SRC_STATE, SMA_SRC_RELEASE, SMA_SRC_MQTT };

/* CS-IDs a client certificate may name (cats:cs:ID SAN URIs). */
#define SMA_CERT_CS 16

struct sma_src {
	int kind;		/* enum sma_src_kind */
	const char *expect;	/* the connection's CSCI-ID, or NULL */
	/* The CS-IDs the connection's certificate names (cats:cs:ID SAN
	 * URIs): its reports are for one of them; none: no limit. */
	const char *const *cs_ids;
	size_t ncs;
	const char *peer;	/* for the audit log, or NULL */
	uint64_t index;		/* record index in its stream or body */
};

enum sma_verdict {
	SMA_ACCEPTED,		/* in the cache */
	SMA_FLAGGED,		/* in the cache, with warning flags */
	SMA_QUARANTINED,	/* kept aside for review */
	SMA_REJECTED,		/* refused */
};

/* Why a report was refused; status is the HTTP status that says it. */
struct sma_result {
	int verdict;		/* enum sma_verdict */
	int status;		/* 200, 202, 400, 401, 403, 409, 503 */
	uint8_t flags;		/* SMA_FL_* */
	uint64_t qid;		/* QUARANTINED: its id */
	struct cats_err err;	/* REJECTED (and QUARANTINED): field, reason */
};

/*
 * A core on a configuration and keys (both must outlive it, or be replaced
 * by sma_reconf()); events go to fn.
 */
struct sma *sma_new(const struct sma_conf *c, const struct sma_keys *k,
    sma_event_fn fn, void *arg);
void sma_free(struct sma *s);

/*
 * A new configuration and keys (already loaded and checked).  Cached token
 * verifications are dropped, the cache shrinks to a smaller maximum
 * (evictions are withdrawals), and timers are recomputed.
 */
void sma_reconf(struct sma *s, const struct sma_conf *c,
    const struct sma_keys *k, uint64_t now);

/*
 * Offer one decoded sci-report.  raw/rawlen are its bytes (kept if it is
 * quarantined), may be NULL to re-encode.  Returns the verdict.
 */
int sma_report(struct sma *s, const struct cats_rec *r, const uint8_t *raw,
    size_t rawlen, const struct sma_src *src, uint64_t now,
    struct sma_result *res);

/*
 * Run the timers due at or before now, each at its own time (so replay gives
 * the same output whatever the input granularity).  Returns the next
 * deadline, 0 if none.
 */
uint64_t sma_tick(struct sma *s, uint64_t now);
uint64_t sma_next_deadline(const struct sma *s);

/* Lookup by CSCI-ID, O(1). */
const struct sma_entry *sma_lookup(const struct sma *s, const char *csci_id);
/* Services in order of creation; entries of one by svc->head / svc_next. */
const struct sma_svc *sma_services(const struct sma *s);
const struct sma_svc *sma_service(const struct sma *s, const char *cs_id);
/* Entries least recently updated first (the LRU order). */
const struct sma_entry *sma_lru_first(const struct sma *s);
size_t sma_count(const struct sma *s);

/*
 * The entry and site as record maps; pointers stay valid until the next
 * change of the entry.  flagbuf holds SMA_NFLAGS names.  With flagbuf NULL
 * the view is the one saved in a state file: GAS as reported rather than as
 * contributed, and the hysteresis and confirmation counters.
 */
void sma_entry_view(const struct sma_entry *e, struct cats_entry *out,
    const char **flagbuf);
void sma_site_view(const struct sma_svc *v, struct cats_site *out);

/* Counters (names are stable; see cats-sma(1) STATISTICS). */
struct sma_stats {
	uint64_t reports, accepted, flagged, quarantined, rejected;
	uint64_t rej_auth, rej_range, rej_seq, rej_other;
	uint64_t tok_verified, tok_cached, sig_verified;
	uint64_t added, evicted, stale, failed, recovered, pulls;
	uint64_t released, dropped_q;
	uint64_t limited_sci, limited_all;	/* [limits]: dropped */
	uint64_t audit_suppressed;	/* audit lines left to "N more" */
};
const struct sma_stats *sma_stats(const struct sma *s);

/*
 * An audit line through the core's limiter: at most audit-burst lines of
 * one kind (event and kind, e.g. "reject" "status=409 field=seq") in an
 * audit-window; beyond, they are counted, and when the window ends one
 * line says "N more like this" (from sma_tick(), or sma_audit_flush()).
 */
void sma_audit(struct sma *s, uint64_t now, const char *event,
    const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The "N more like this" lines of the windows ended by now (all: every
 * one, at the end of a run). */
void sma_audit_flush(struct sma *s, uint64_t now, bool all);

/*
 * A record that did not decode from tokens t (NULL: it did not scan).  An
 * sci-report whose fault is a metric out of range takes the path of the
 * core's own range check whichever layer caught it: rejected (400),
 * counted under rejected_range, audited with its csci and cs; returns 1.
 * Anything else is malformed: audited (with csci and cs when the tokens
 * show them), counted under rejected_other when count; returns 0.
 */
int sma_undecoded(struct sma *s, const struct cats_toks *t,
    const struct cats_err *err, const struct sma_src *src, uint64_t now,
    bool count, struct sma_result *res);
/* An unsigned top-level field of a scanned record (its "ts" in replay),
 * 0 if none. */
uint64_t sma_toks_u64(const struct cats_toks *t, const char *key);

/* ---- quarantine ---- */

struct sma_qitem {
	uint64_t id;
	uint64_t at;		/* when it was quarantined */
	uint8_t flags;		/* the anomalies */
	char csci_id[CATS_ID + 1];
	uint64_t seq;
	uint8_t *raw;		/* the report's bytes */
	size_t len;
};
/* Items in order of arrival; *n set. */
const struct sma_qitem *sma_quarantine(const struct sma *s, size_t *n);
/*
 * Release one item (id) or all (id 0) into the cache, skipping the anomaly
 * checks but nothing else; drop removes without applying.  Returns the
 * number of items handled, -1 if no such id.
 */
int sma_quarantine_release(struct sma *s, uint64_t id, uint64_t now);
int sma_quarantine_drop(struct sma *s, uint64_t id);

/* ---- hierarchical aggregation (000 §11) ---- */

/*
 * Take an entry a subordinate C-SMA advertised (already authenticated and
 * ordered by the caller) into the cache as it is: health, state and metrics
 * are the subordinate's, the TTL is its ttl_ms (else the configured one),
 * site and egress (NULL: none) travel with the entry.  Events as for a
 * report.  Returns 0, or -1 when the cache refuses it (a CS-ID too many).
 */
int sma_import(struct sma *s, const struct cats_entry *e, const char *site,
    const char *egress, uint64_t now);
/* The soft state of an imported entry was refreshed. */
void sma_import_refresh(struct sma *s, const char *csci_id, uint64_t now);
/* Remove an entry (a withdrawal with reason); 0 if there was none. */
int sma_remove(struct sma *s, const char *csci_id, int reason, uint64_t now);

/* ---- persisting soft state (cron mode) ---- */

/*
 * Restore an entry saved by sma_out_save_state(): only if still fresh
 * (now <= ts + ttl_ms: "within" is inclusive), with its remaining TTL;
 * returns 1 restored, 0 too old, -1 refused (bad entry, cache full of
 * services).  No events.
 */
int sma_restore(struct sma *s, const struct cats_entry *e, uint64_t now);

/* ---- the plain consumer: events to metric records ---- */

struct sma_out;
typedef int (*sma_emit_fn)(void *arg, const struct cats_rec *r);

/*
 * Records are numbered from seq + 1 in epoch; each gets ts = now.  A change
 * set becomes: one withdraw record per reason, then one delta record with the
 * entries added or updated and the sites that changed (the sites go in the
 * last withdraw record when there is no delta).  emit returns -1 on output
 * failure (counted).
 */
struct sma_out *sma_out_new(const struct sma_conf *c, uint64_t epoch,
    uint64_t seq, sma_emit_fn emit, void *arg);
void sma_out_free(struct sma_out *o);
void sma_out_reconf(struct sma_out *o, const struct sma_conf *c);
/* The event callback to pass to sma_new() with the sma_out as arg. */
void sma_out_event(void *arg, const struct sma_event *ev);
/* A full snapshot now, in parts of at most 256 entries and 256 sites. */
int sma_out_snapshot(struct sma_out *o, const struct sma *s, uint64_t now);
/* A withdrawal of a saved entry that was too old to restore. */
int sma_out_withdraw_saved(struct sma_out *o, const struct cats_entry *e,
    int reason, uint64_t now);
uint64_t sma_out_seq(const struct sma_out *o);
uint64_t sma_out_epoch(const struct sma_out *o);
uint64_t sma_out_failures(const struct sma_out *o);

/*
 * State file: a CBOR Sequence of metric records (op full, in parts) holding
 * the soft state, written to path.tmp, fsynced and renamed over path.
 * last_full (0: none) is when the last full snapshot was acknowledged, kept
 * so that the next run reports it (sync_last_full).
 */
int sma_out_save_state(const struct sma_out *o, const struct sma *s,
    const char *path, uint64_t now, uint64_t last_full, char *err,
    size_t errlen);

/* The state file read back: epoch, seq, last_full and the entries (owned by
 * st). */
struct sma_state {
	uint64_t epoch, seq, ts, last_full;
	struct cats_entry *v;
	size_t n;
	struct cats_arena arena;
};
/* 0 (st filled), 1 no file, -1 with err (file:record: reason). */
int sma_state_load(struct sma_state *st, const char *path, char *err,
    size_t errlen);
void sma_state_free(struct sma_state *st);

/* ---- small helpers shared with the tools ---- */

/*
 * Feed a body of one or more CBOR-encoded sci-reports (application/cbor or
 * application/cbor-seq) to the core.  Every record gets a result through fn
 * (may be NULL); returns the number of records seen.  A malformed item is
 * rejected with status 400 and ends the body (there is no resynchronizing
 * inside one body); records before it stand.
 */
typedef void (*sma_result_fn)(void *arg, uint64_t index,
    const struct sma_result *res);
size_t sma_ingest(struct sma *s, struct cats_dec *d, const uint8_t *p,
    size_t n, const struct sma_src *src, uint64_t now, sma_result_fn fn,
    void *arg);


#endif
