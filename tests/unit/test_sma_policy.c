/*
 * test_sma_policy.c - the rule language of cats-sma-policy(5): each example
 * of seed 000 §7.1 with a hand-computed result, priorities, windows, the
 * error positions of bad files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rec/rec.h"
#include "sma/sma_policy.h"
#include "t.h"

#define SAT_0200 UINT64_C(1777687200000)	/* Sat 2026-05-02 02:00 UTC */
#define FRI_0200 UINT64_C(1777600800000)	/* Fri 2026-05-01 02:00 UTC */
#define HOUR UINT64_C(3600000)

static struct sma_policy *
parse(const char *text, char *err, size_t errlen)
{
	return sma_policy_parse("t.rules", text, strlen(text), err, errlen);
}

static struct sma_pmetrics
entry(int health, uint64_t gas, uint64_t ct, uint64_t price, uint64_t sec)
{
	struct sma_pmetrics m;
	memset(&m, 0, sizeof(m));
	m.has = SMA_PM_GAS | SMA_PM_CT | SMA_PM_PRICE | SMA_PM_SECURITY |
	    SMA_PM_HEALTH | SMA_PM_STATE;
	m.health = health;
	m.state = CATS_SCI_HEALTHY;
	m.gas = gas;
	m.ct = ct;
	m.price = price;
	m.security = sec;
	return m;
}

static struct sma_pctx
ctx(uint64_t site_gas, uint64_t now)
{
	struct sma_pctx c;
	memset(&c, 0, sizeof(c));
	c.entry = true;
	c.cs_id = "ARS";
	c.csci_id = "188.3.67.3:67";
	c.has_site = true;
	c.site_gas = site_gas;
	c.site_health = CATS_HEALTHY;
	c.now = now;
	return c;
}

/* The error of a bad rule text, as "line:col: reason" without the name. */
static const char *
bad(const char *text)
{
	static char err[300];
	struct sma_policy *p = parse(text, err, sizeof(err));
	if (p != NULL) {
		sma_policy_free(p);
		return "(accepted)";
	}
	return strncmp(err, "t.rules:", 8) == 0 ? err + 8 : err;
}

static void
examples(void)
{
	char err[300];
	struct sma_policy *p = parse(
	    "# seed 000 section 7.1, the four examples\n"
	    "WINDOW Maintenance_Window = Sat 02:00-04:00;\n"
	    "IF Site_GAS < 100 THEN SET Security_Level = 5;\n"
	    "IF SCI_Health = DEGRADED THEN REDUCE SCI_GAS BY 50%;\n"
	    "IF Time IN Maintenance_Window THEN SUPPRESS_UPDATES;\n"
	    "IF Price > 100 THEN SET Price = 100;\n", err, sizeof(err));
	T_OK(p != NULL, "the four examples of 7.1 parse (%s)", p ? "" : err);
	if (p == NULL)
		return;
	T_OK(sma_policy_rules(p) == 4 && sma_policy_windows(p) == 1,
	    "4 rules, 1 window");
	T_OK(sma_policy_uses_site(p) && sma_policy_uses_time(p),
	    "they read a site variable and the time");

	struct sma_pmetrics m;
	struct sma_pctx c;
	struct sma_pout o;

	/* Site_GAS 80 < 100: security 3 -> 5.  Healthy: GAS stays. */
	m = entry(CATS_HEALTHY, 400, 5, 50, 3);
	c = ctx(80, FRI_0200);
	sma_policy_eval(p, &m, &c, &o);
	T_OK(m.security == 5 && m.gas == 400 && m.price == 50 && !o.suppress,
	    "Site_GAS 80 < 100 sets Security_Level 3 -> 5, the rest stays");
	/* Site_GAS 100 is not < 100. */
	m = entry(CATS_HEALTHY, 400, 5, 50, 3);
	c = ctx(100, FRI_0200);
	sma_policy_eval(p, &m, &c, &o);
	T_OK(m.security == 3 && o.matched == 0, "Site_GAS 100: nothing");
	/* DEGRADED: GAS 400 -> 200, and 333 -> floor(166.5) = 166. */
	m = entry(CATS_DEGRADED, 400, 5, 50, 3);
	c = ctx(1000, FRI_0200);
	sma_policy_eval(p, &m, &c, &o);
	T_OK(m.gas == 200, "DEGRADED: REDUCE SCI_GAS BY 50%%: 400 -> 200");
	m = entry(CATS_DEGRADED, 333, 5, 50, 3);
	sma_policy_eval(p, &m, &c, &o);
	T_OK(m.gas == 166, "333 -> 166 (rounded down)");
	/* Saturday 02:00 to 03:59:59.999 is in the window; 04:00 is not;
	 * Friday 02:00 is not. */
	m = entry(CATS_HEALTHY, 400, 5, 50, 3);
	c = ctx(1000, SAT_0200);
	sma_policy_eval(p, &m, &c, &o);
	T_OK(o.suppress, "Sat 02:00: SUPPRESS_UPDATES");
	c.now = SAT_0200 + 2 * HOUR - 1;
	sma_policy_eval(p, &m, &c, &o);
	T_OK(o.suppress, "Sat 03:59:59.999: still suppressed");
	c.now = SAT_0200 + 2 * HOUR;
	sma_policy_eval(p, &m, &c, &o);
	T_OK(!o.suppress, "Sat 04:00: window over");
	c.now = FRI_0200;
	sma_policy_eval(p, &m, &c, &o);
	T_OK(!o.suppress, "Fri 02:00: not a maintenance day");
	T_OK(sma_policy_in_window(p, "maintenance_window", SAT_0200) == 1 &&
	    sma_policy_in_window(p, "nope", SAT_0200) == -1,
	    "window names are case-insensitive; unknown is -1");
	T_OK(sma_policy_next_boundary(p, FRI_0200) == SAT_0200 &&
	    sma_policy_next_boundary(p, SAT_0200) == SAT_0200 + 2 * HOUR,
	    "next boundary: Saturday 02:00, then 04:00");
	/* Price 150 -> 100; 100 and 99 stay. */
	m = entry(CATS_HEALTHY, 400, 5, 150, 3);
	c = ctx(1000, FRI_0200);
	sma_policy_eval(p, &m, &c, &o);
	T_OK(m.price == 100, "Price 150 > 100: SET Price = 100");
	m = entry(CATS_HEALTHY, 400, 5, 100, 3);
	sma_policy_eval(p, &m, &c, &o);
	T_OK(m.price == 100 && o.matched == 0, "Price 100: no rule matches");
	/* A metric the entry does not report makes a comparison false. */
	m = entry(CATS_HEALTHY, 400, 5, 150, 3);
	m.has &= ~(unsigned)SMA_PM_PRICE;
	sma_policy_eval(p, &m, &c, &o);
	T_OK(!(m.has & SMA_PM_PRICE) && o.matched == 0,
	    "no Price: Price > 100 is false, and SET is not reached");
	/* A site aggregate sees only the rules without entry variables. */
	c = ctx(50, SAT_0200);
	c.entry = false;
	memset(&m, 0, sizeof(m));
	sma_policy_eval(p, &m, &c, &o);
	T_OK(o.suppress && o.matched == 1,
	    "a site: only the Time rule applies");
	T_OK(sma_policy_hits(p, 0) == 1 && sma_policy_hits(p, 2) == 3,
	    "hits per rule in file order");
	sma_policy_free(p);
}

static void
priorities(void)
{
	char err[300];
	struct sma_policy *p = parse(
	    "IF TRUE THEN SET Price = 1;\n"
	    "PRIORITY 10 IF Price > 50 THEN SET Price = 60;\n"
	    "PRIORITY -5 IF Price = 1 THEN INCREASE Price BY 12.5%, "
	    "CLAMP Comp_Time BETWEEN 1 AND 10000;\n"
	    "PRIORITY 10 IF Price >= 60 AND NOT (SCI_State = STALE OR "
	    "CS_ID != \"ARS\") THEN OMIT Ext, OMIT Reputation\n",
	    err, sizeof(err));
	T_OK(p != NULL, "priorities parse (%s)", p ? "" : err);
	if (p == NULL)
		return;
	struct sma_pmetrics m = entry(CATS_HEALTHY, 400, 20000, 80, 3);
	m.has |= SMA_PM_REPUTATION;
	m.reputation = 7;
	struct sma_pctx c = ctx(500, FRI_0200);
	struct sma_pout o;
	sma_policy_eval(p, &m, &c, &o);
	/*
	 * Order: prio 10 (file 2): 80 > 50 -> 60; prio 10 (file 4): 60 >= 60,
	 * state HEALTHY, CS-ID ARS -> omit Ext and Reputation; prio 0: Price
	 * = 1; prio -5: 1 = 1 -> 1 x 1.125 = 1.125 -> 1, computing time
	 * 20000 -> 10000.
	 */
	T_OK(m.price == 1 && m.ct == 10000, "priority order, then file order "
	    "(price %llu, comp time %llu)", (unsigned long long)m.price,
	    (unsigned long long)m.ct);
	T_OK((o.omit & SMA_PM_EXT) && (o.omit & SMA_PM_REPUTATION) &&
	    !(m.has & SMA_PM_REPUTATION), "OMIT Ext, Reputation");
	m = entry(CATS_HEALTHY, 400, 5, 8, 3);
	p = (sma_policy_free(p), parse("IF Price < 10 THEN INCREASE Price BY "
	    "12.5%;", err, sizeof(err)));
	sma_policy_eval(p, &m, &c, &o);
	T_OK(m.price == 9, "8 x 1.125 = 9");
	sma_policy_free(p);
	p = parse("IF gas <= 10 THEN SET sci_health = unhealthy", err,
	    sizeof(err));
	m = entry(CATS_HEALTHY, 10, 5, 8, 3);
	sma_policy_eval(p, &m, &c, &o);
	T_OK(p != NULL && m.health == CATS_UNHEALTHY,
	    "lower case, no final ';', SET SCI_Health");
	sma_policy_free(p);
	p = parse("WINDOW V = FROM 1000 UNTIL 2000;\n"
	    "WINDOW W = DAILY 22:00-02:00;\n"
	    "WINDOW U = FROM 2026-05-02T02:00Z UNTIL 2026-05-02T04:00:30Z;\n"
	    "IF Time IN V OR Time IN W OR Time IN U THEN SUPPRESS_UPDATES;",
	    err,
	    sizeof(err));
	T_OK(p != NULL, "windows: FROM..UNTIL, dates, midnight (%s)",
	    p ? "" : err);
	T_OK(sma_policy_in_window(p, "V", 999) == 0 &&
	    sma_policy_in_window(p, "V", 1000) == 1 &&
	    sma_policy_in_window(p, "V", 1999) == 1 &&
	    sma_policy_in_window(p, "V", 2000) == 0, "FROM 1000 UNTIL 2000");
	T_OK(sma_policy_in_window(p, "W", FRI_0200 - HOUR) == 1 &&
	    sma_policy_in_window(p, "W", FRI_0200) == 0 &&
	    sma_policy_in_window(p, "W", FRI_0200 - 4 * HOUR) == 1 &&
	    sma_policy_in_window(p, "W", FRI_0200 - 5 * HOUR) == 0,
	    "DAILY 22:00-02:00 crosses midnight");
	T_OK(sma_policy_in_window(p, "U", SAT_0200) == 1 &&
	    sma_policy_in_window(p, "U", SAT_0200 + 2 * HOUR + 29999) == 1 &&
	    sma_policy_in_window(p, "U", SAT_0200 + 2 * HOUR + 30000) == 0,
	    "dates are UTC, seconds count");
	T_OK(sma_policy_next_boundary(p, 0) == 1000 &&
	    sma_policy_next_boundary(p, 1000) == 2000 &&
	    sma_policy_next_boundary(p, FRI_0200 - 3 * HOUR) == FRI_0200,
	    "next boundaries");
	sma_policy_free(p);
}

static void
errors(void)
{
	T_OK(strcmp(bad("IF Price > THEN SET Price = 1;"),
	    "1:12: expected a metric or a value, found 'THEN'") == 0,
	    "a missing value: %s", bad("IF Price > THEN SET Price = 1;"));
	T_OK(strcmp(bad("IF Price > 1\nTHEN SET Prize = 1;"),
	    "2:10: expected SCI_GAS, Comp_Time, Price, Reputation, "
	    "Security_Level or SCI_Health") == 0, "an unknown metric: %s",
	    bad("IF Price > 1\nTHEN SET Prize = 1;"));
	T_OK(strcmp(bad("IF Health = GREEN THEN SUPPRESS_UPDATES;"),
	    "1:13: expected HEALTHY, DEGRADED, UNHEALTHY or UNKNOWN, found "
	    "'GREEN'") == 0, "a bad health: %s",
	    bad("IF Health = GREEN THEN SUPPRESS_UPDATES;"));
	T_OK(strcmp(bad("IF Time IN Night THEN SUPPRESS_UPDATES;"),
	    "1:12: no window Night (define it with WINDOW before the rules "
	    "that use it)") == 0, "an undefined window: %s",
	    bad("IF Time IN Night THEN SUPPRESS_UPDATES;"));
	T_OK(strcmp(bad("WINDOW W = Sat 25:00-26:00;"),
	    "1:16: expected a time of day HH:MM (00:00 to 24:00)") == 0,
	    "a bad time of day: %s", bad("WINDOW W = Sat 25:00-26:00;"));
	T_OK(strcmp(bad("IF TRUE THEN REDUCE SCI_GAS BY 150%;"),
	    "1:32: cannot reduce by more than 100%") == 0, "150 %%: %s",
	    bad("IF TRUE THEN REDUCE SCI_GAS BY 150%;"));
	T_OK(strcmp(bad("IF TRUE THEN SET Security_Level = 300;"),
	    "1:35: 300 is above the largest value of this metric (255)") == 0,
	    "a value out of range: %s",
	    bad("IF TRUE THEN SET Security_Level = 300;"));
	T_OK(strcmp(bad("IF Health < HEALTHY THEN SUPPRESS_UPDATES;"),
	    "1:4: health, state and text compare with = and != only") == 0,
	    "an order on an enum: %s",
	    bad("IF Health < HEALTHY THEN SUPPRESS_UPDATES;"));
	T_OK(strcmp(bad("IF CS_ID = 5 THEN SUPPRESS_UPDATES;"),
	    "1:4: the two sides of the comparison are of different kinds")
	    == 0, "a type clash: %s",
	    bad("IF CS_ID = 5 THEN SUPPRESS_UPDATES;"));
	T_OK(strcmp(bad("IF TRUE THEN SUPPRESS_UPDATES\nIF TRUE THEN "
	    "SUPPRESS_UPDATES;"), "2:1: expected ';', found 'IF'") == 0,
	    "a missing ';': %s", bad("IF TRUE THEN SUPPRESS_UPDATES\nIF TRUE "
	    "THEN SUPPRESS_UPDATES;"));
	T_OK(strcmp(bad("IF \"unterminated THEN"), "1:4: unterminated string")
	    == 0, "an unterminated string");
	T_OK(strcmp(bad("IF TRUE THEN CLAMP Price BETWEEN 9 AND 3;"),
	    "1:34: the lower bound is above the upper") == 0, "a bad clamp");
	T_OK(strcmp(bad("WINDOW W = DAILY 01:00-02:00;\nWINDOW w = DAILY "
	    "01:00-02:00;"), "2:8: window w is defined twice") == 0,
	    "a window twice");
	T_OK(strcmp(bad("IF TRUE THEN OMIT SCI_GAS;"),
	    "1:19: only optional metrics can be omitted: Price, Reputation, "
	    "Security_Level, Ext") == 0, "GAS cannot be omitted");
	T_OK(strcmp(bad("SET Price = 1;"), "1:1: expected IF, PRIORITY or "
	    "WINDOW, found 'SET'") == 0, "a statement without IF");
	T_OK(strcmp(bad("IF Price > 1 THEN SET Price = 1.5;"),
	    "1:31: expected a whole number") == 0, "SET takes a whole number");
	/* Depth and size caps. */
	char deep[200];
	memset(deep, 0, sizeof(deep));
	strcpy(deep, "IF ");
	for (int i = 0; i < 40; i++)
		strcat(deep, "(");
	strcat(deep, "TRUE");
	T_OK(strstr(bad(deep), "nested more than 32 deep") != NULL,
	    "nesting is capped: %s", bad(deep));
	size_t big = 30000;
	char *wide = malloc(big);
	strcpy(wide, "IF TRUE");
	for (int i = 0; i < 300; i++)
		strcat(wide, " OR TRUE");
	strcat(wide, " THEN SUPPRESS_UPDATES;");
	T_OK(strstr(bad(wide), "a condition of more than 256 terms") != NULL,
	    "condition size is capped");
	free(wide);
	char *many = malloc(40 * 1100 + 1);
	many[0] = '\0';
	for (int i = 0; i < 1100; i++)
		strcat(many, "IF TRUE THEN SUPPRESS_UPDATES;\n");
	T_OK(strstr(bad(many), "more than 1024 rules") != NULL,
	    "rules are capped: %s", bad(many));
	free(many);
	T_OK(strcmp(bad("IF TRUE THEN SUPPRESS_UPDATES; \x01"),
	    "1:32: unexpected byte 0x01") == 0, "a control byte");
	T_OK(strcmp(bad(""), "(accepted)") == 0 &&
	    strcmp(bad("# only a comment\n;;"), "(accepted)") == 0,
	    "an empty file is an empty policy");
}

int
main(void)
{
	examples();
	priorities();
	errors();
	return t_done();
}
