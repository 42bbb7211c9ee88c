/*
 * sma_policy.h - the C-SMA policy engine (seed 000 §7.1): a rule file in the
 * text's own syntax, evaluated in priority order on every entry before its
 * metrics leave (cats-sma-policy(5) is the reference).
 *
 *   # comments run to the end of the line
 *   WINDOW Maintenance_Window = Sat 02:00-04:00, DAILY 23:30-00:15;
 *   WINDOW Upgrade = FROM 2026-05-01T02:00Z UNTIL 2026-05-01T04:00Z;
 *   PRIORITY 10 IF Site_GAS < 100 THEN SET Security_Level = 5;
 *   IF SCI_Health = DEGRADED THEN REDUCE SCI_GAS BY 50%;
 *   IF Time IN Maintenance_Window THEN SUPPRESS_UPDATES;
 *   IF Price > 100 THEN SET Price = 100;
 *   IF TRUE THEN CLAMP Comp_Time BETWEEN 1 AND 10000, OMIT Ext;
 *
 * Rules run highest priority first (default 0; ties in file order); each
 * sees the values the rules before it left.  A comparison with a metric the
 * entry does not report is false.  Keywords, variables and enum values are
 * case-insensitive.  Parsing is bounded (file size, rules, nodes, depth) and
 * errors name "file:line:column: reason".  Evaluation is pure: the time is
 * an argument (windows are UTC).
 */
#ifndef CATS_SMA_POLICY_H
#define CATS_SMA_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Caps of a rule file. */
#define SMA_POL_MAX_FILE (1u << 20)
#define SMA_POL_MAX_RULES 1024
#define SMA_POL_MAX_WINDOWS 64
#define SMA_POL_MAX_SPECS 16	/* time specs of one window */
#define SMA_POL_MAX_ACTIONS 16	/* actions of one rule */
#define SMA_POL_MAX_NODES 256	/* condition nodes of one rule */
#define SMA_POL_MAX_DEPTH 32	/* nesting of a condition */
#define SMA_POL_MAX_IDENT 64

/* The metrics a rule reads and writes (presence in has). */
enum {
	SMA_PM_GAS = 1 << 0,
	SMA_PM_CT = 1 << 1,
	SMA_PM_PRICE = 1 << 2,
	SMA_PM_REPUTATION = 1 << 3,
	SMA_PM_SECURITY = 1 << 4,
	SMA_PM_HEALTH = 1 << 5,
	SMA_PM_STATE = 1 << 6,
	SMA_PM_EXT = 1 << 7,
};

/* An entry's metrics as the rules see and change them. */
struct sma_pmetrics {
	unsigned has;		/* SMA_PM_* */
	uint64_t gas, ct, price, reputation, security;
	int health;		/* enum cats_health */
	int state;		/* enum cats_sci_state */
};

/* What a rule reads besides the entry: its site and identity. */
struct sma_pctx {
	bool entry;		/* false: a site aggregate is evaluated */
	const char *cs_id, *csci_id;
	bool has_site;
	uint64_t site_gas, site_ct, site_healthy, site_total;
	bool site_has_ct;
	int site_health;
	uint64_t now;		/* ms since the epoch */
};

/* What the rules decided, besides the values. */
struct sma_pout {
	bool suppress;		/* SUPPRESS_UPDATES matched */
	unsigned omit;		/* SMA_PM_* not to report */
	unsigned changed;	/* SMA_PM_* a rule wrote */
	uint32_t matched;	/* rules whose condition held */
};

struct sma_policy;

/*
 * Parse a rule file held in memory (name is used in messages).  NULL with
 * "name:line:column: reason" in err.
 */
struct sma_policy *sma_policy_parse(const char *name, const char *text,
    size_t len, char *err, size_t errlen);
/* Read and parse a file (over SMA_POL_MAX_FILE: refused). */
struct sma_policy *sma_policy_load(const char *path, char *err, size_t errlen);
void sma_policy_free(struct sma_policy *p);

/* Run the rules on m (changed in place); counts the rules that match. */
void sma_policy_eval(struct sma_policy *p, struct sma_pmetrics *m,
    const struct sma_pctx *ctx, struct sma_pout *out);

/* Rules, windows; does a rule read a site variable, the time? */
size_t sma_policy_rules(const struct sma_policy *p);
size_t sma_policy_windows(const struct sma_policy *p);
bool sma_policy_uses_site(const struct sma_policy *p);
bool sma_policy_uses_time(const struct sma_policy *p);
/* Times a rule matched since the policy was loaded (rule in file order). */
uint64_t sma_policy_hits(const struct sma_policy *p, size_t rule);

/* Is now inside the named window?  -1 if no such window. */
int sma_policy_in_window(const struct sma_policy *p, const char *name,
    uint64_t now);
/*
 * The first time after now at which a window some rule uses opens or
 * closes (so that a caller re-evaluates then), 0 if none.
 */
uint64_t sma_policy_next_boundary(const struct sma_policy *p, uint64_t now);

#endif
