/*
 * sma_policy.c - the policy rule language of cats-sma-policy(5): a bounded
 * lexer and recursive-descent parser, and the evaluator.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "rec/rec.h"
#include "sma/sma_policy.h"

typedef unsigned __int128 u128;

#define MICRO 1000000u
#define DAY_MS UINT64_C(86400000)

/* ---- the compiled form ---- */

enum vtype { VT_NUM, VT_HEALTH, VT_STATE, VT_STR, VT_NONE };

enum var {
	V_GAS, V_CT, V_PRICE, V_REP, V_SEC, V_HEALTH, V_STATE, V_EXT,
	V_CSID, V_CSCIID,
	V_SGAS, V_SCT, V_SHEALTHY, V_STOTAL, V_SHEALTH,
	V__N
};

static const struct {
	const char *name;
	uint8_t var;
} var_names[] = {
	{ "sci_gas", V_GAS }, { "gas", V_GAS },
	{ "comp_time", V_CT }, { "computing_time", V_CT },
	{ "comp_time_ms", V_CT }, { "sci_comp_time", V_CT },
	{ "price", V_PRICE }, { "reputation", V_REP },
	{ "security_level", V_SEC }, { "security", V_SEC },
	{ "sci_health", V_HEALTH }, { "health", V_HEALTH },
	{ "sci_state", V_STATE }, { "state", V_STATE },
	{ "ext", V_EXT },
	{ "cs_id", V_CSID }, { "csci_id", V_CSCIID },
	{ "site_gas", V_SGAS }, { "site_comp_time", V_SCT },
	{ "site_healthy", V_SHEALTHY }, { "site_total", V_STOTAL },
	{ "site_health", V_SHEALTH },
};

static const uint8_t var_type[V__N] = {
	[V_GAS] = VT_NUM, [V_CT] = VT_NUM, [V_PRICE] = VT_NUM,
	[V_REP] = VT_NUM, [V_SEC] = VT_NUM, [V_HEALTH] = VT_HEALTH,
	[V_STATE] = VT_STATE, [V_EXT] = VT_NONE, [V_CSID] = VT_STR,
	[V_CSCIID] = VT_STR, [V_SGAS] = VT_NUM, [V_SCT] = VT_NUM,
	[V_SHEALTHY] = VT_NUM, [V_STOTAL] = VT_NUM, [V_SHEALTH] = VT_HEALTH,
};

/* The metric bit of an entry variable, 0 for the others. */
static unsigned
var_bit(int v)
{
	switch (v) {
	case V_GAS: return SMA_PM_GAS;
	case V_CT: return SMA_PM_CT;
	case V_PRICE: return SMA_PM_PRICE;
	case V_REP: return SMA_PM_REPUTATION;
	case V_SEC: return SMA_PM_SECURITY;
	case V_HEALTH: return SMA_PM_HEALTH;
	case V_STATE: return SMA_PM_STATE;
	case V_EXT: return SMA_PM_EXT;
	default: return 0;
	}
}

static bool
entry_var(int v)
{
	return v <= V_EXT || v == V_CSCIID;
}

static bool
site_var(int v)
{
	return v >= V_SGAS;
}

enum okind { O_VAR, O_NUM, O_HEALTH, O_STATE, O_STR };

struct opnd {
	uint8_t kind;
	uint8_t var;
	int ival;		/* enum value */
	u128 num;		/* micro-units */
	char *str;
};

enum cmp { C_EQ, C_NE, C_LT, C_LE, C_GT, C_GE };

enum nkind { N_TRUE, N_FALSE, N_AND, N_OR, N_NOT, N_CMP, N_IN };

struct node {
	uint8_t kind;
	uint8_t op;
	uint16_t a, b;		/* children */
	uint16_t win;
	struct opnd l, r;
};

enum akind { A_SET, A_REDUCE, A_INCREASE, A_CLAMP, A_SUPPRESS, A_OMIT };

struct action {
	uint8_t kind;
	uint8_t var;
	uint64_t v, lo, hi;	/* SET value (or health), CLAMP bounds */
	u128 pct;		/* REDUCE / INCREASE: percent in micro-units */
};

struct rule {
	int64_t prio;
	size_t idx;		/* position in the file */
	struct node *nodes;
	size_t nnodes, capnodes;
	uint16_t root;
	struct action act[SMA_POL_MAX_ACTIONS];
	size_t nact;
	bool uses_entry;
	uint64_t hits;
};

enum { S_DAYS, S_ABS };

struct spec {
	uint8_t kind;
	uint8_t days;		/* bit 0 Monday .. bit 6 Sunday */
	uint64_t start, end;	/* S_DAYS: ms of the day; S_ABS: ms */
};

struct window {
	char name[SMA_POL_MAX_IDENT + 1];
	struct spec s[SMA_POL_MAX_SPECS];
	size_t n;
	bool used;
};

struct sma_policy {
	struct rule *rules;	/* in evaluation order */
	size_t nrules, caprules;
	size_t *file_order;	/* index in rules of the i-th rule of the file */
	struct window win[SMA_POL_MAX_WINDOWS];
	size_t nwin;
	bool uses_site, uses_time;
};

/* ---- the lexer ---- */

enum tkind {
	T_EOF, T_IDENT, T_NUM, T_STR, T_TOD, T_DATE, T_LP, T_RP, T_COMMA,
	T_SEMI, T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE, T_PCT, T_DASH,
};

static const char *const tnames[] = { "end of file", "a word", "a number",
	"a string", "a time of day", "a date", "'('", "')'", "','", "';'",
	"'='", "'!='", "'<'", "'<='", "'>'", "'>='", "'%'", "'-'" };

struct tok {
	int kind;
	const char *p;
	size_t n;
	unsigned line, col;
	u128 num;		/* T_NUM: micro-units */
	bool frac;		/* T_NUM had a fractional part */
	uint64_t ms;		/* T_TOD: ms of the day; T_DATE: ms */
};

struct parser {
	const char *name;
	const char *s;
	size_t n, pos;
	unsigned line, col;
	struct tok t;
	char *err;
	size_t errlen;
	bool failed;
	struct sma_policy *pol;
	struct rule *r;		/* the rule being parsed */
	unsigned depth;
};

__attribute__((format(printf, 3, 4))) static int
fail_at(struct parser *ps, const struct tok *t, const char *fmt, ...)
{
	if (ps->failed)
		return -1;
	ps->failed = true;
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ps->err, ps->errlen, "%s:%u:%u: %s", ps->name, t->line,
	    t->col, msg);
	return -1;
}

static int
peekc(const struct parser *ps, size_t k)
{
	return ps->pos + k < ps->n ? (unsigned char)ps->s[ps->pos + k] : -1;
}

static void
adv(struct parser *ps, size_t k)
{
	while (k-- > 0 && ps->pos < ps->n) {
		if (ps->s[ps->pos] == '\n') {
			ps->line++;
			ps->col = 1;
		} else {
			ps->col++;
		}
		ps->pos++;
	}
}

static bool
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static bool
is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* n digits at offset k as a number, or -1. */
static long
digits_at(const struct parser *ps, size_t k, size_t n)
{
	long v = 0;
	for (size_t i = 0; i < n; i++) {
		int c = peekc(ps, k + i);
		if (!is_digit(c))
			return -1;
		v = v * 10 + (c - '0');
	}
	return v;
}

/* Days since 1970-01-01 of a civil date (H. Hinnant's algorithm). */
static int64_t
days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static int
lex(struct parser *ps)
{
	for (;;) {
		int c = peekc(ps, 0);
		if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
			adv(ps, 1);
		} else if (c == '#') {
			while (peekc(ps, 0) != -1 && peekc(ps, 0) != '\n')
				adv(ps, 1);
		} else {
			break;
		}
	}
	struct tok *t = &ps->t;
	memset(t, 0, sizeof(*t));
	t->p = ps->s + ps->pos;
	t->line = ps->line;
	t->col = ps->col;
	int c = peekc(ps, 0);
	if (c == -1) {
		t->kind = T_EOF;
		return 0;
	}
	if (is_alpha(c)) {
		size_t k = 0;
		while (is_alpha(peekc(ps, k)) || is_digit(peekc(ps, k)))
			k++;
		if (k > SMA_POL_MAX_IDENT)
			return fail_at(ps, t, "a word longer than %d characters",
			    SMA_POL_MAX_IDENT);
		t->kind = T_IDENT;
		t->n = k;
		adv(ps, k);
		return 0;
	}
	if (is_digit(c)) {
		/* YYYY-MM-DDTHH:MM[:SS]Z */
		if (digits_at(ps, 0, 4) >= 0 && peekc(ps, 4) == '-' &&
		    is_digit(peekc(ps, 5))) {
			long y = digits_at(ps, 0, 4), mo = digits_at(ps, 5, 2),
			    d = digits_at(ps, 8, 2), h = digits_at(ps, 11, 2),
			    mi = digits_at(ps, 14, 2), se = 0;
			size_t k = 16;
			if (peekc(ps, 7) != '-' || peekc(ps, 10) != 'T' ||
			    peekc(ps, 13) != ':' || mo < 1 || mo > 12 || d < 1 ||
			    d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59)
				return fail_at(ps, t, "expected a date "
				    "YYYY-MM-DDTHH:MM[:SS]Z");
			if (peekc(ps, 16) == ':') {
				se = digits_at(ps, 17, 2);
				if (se < 0 || se > 59)
					return fail_at(ps, t, "bad seconds");
				k = 19;
			}
			if (peekc(ps, k) != 'Z')
				return fail_at(ps, t, "a date must end in Z "
				    "(UTC)");
			int64_t days = days_from_civil(y, (unsigned)mo,
			    (unsigned)d);
			if (days < 0)
				return fail_at(ps, t, "a date before 1970");
			t->kind = T_DATE;
			t->ms = (uint64_t)days * DAY_MS + (uint64_t)h * 3600000 +
			    (uint64_t)mi * 60000 + (uint64_t)se * 1000;
			t->n = k + 1;
			adv(ps, k + 1);
			return 0;
		}
		/* HH:MM */
		size_t nd = 0;
		while (is_digit(peekc(ps, nd)))
			nd++;
		if (nd <= 2 && peekc(ps, nd) == ':') {
			long h = digits_at(ps, 0, nd), mi = digits_at(ps, nd + 1,
			    2);
			if (mi < 0 || mi > 59 || h > 24 || (h == 24 && mi != 0) ||
			    is_digit(peekc(ps, nd + 3)))
				return fail_at(ps, t, "expected a time of day "
				    "HH:MM (00:00 to 24:00)");
			t->kind = T_TOD;
			t->ms = (uint64_t)h * 3600000 + (uint64_t)mi * 60000;
			t->n = nd + 3;
			adv(ps, nd + 3);
			return 0;
		}
		u128 v = 0;
		size_t k = 0;
		while (is_digit(peekc(ps, k))) {
			v = v * 10 + (unsigned)(peekc(ps, k) - '0');
			if (++k > 16)
				return fail_at(ps, t, "number too large");
		}
		v *= MICRO;
		if (peekc(ps, k) == '.' && is_digit(peekc(ps, k + 1))) {
			u128 f = MICRO / 10;
			k++;
			t->frac = true;
			while (is_digit(peekc(ps, k))) {
				if (f == 0)
					return fail_at(ps, t, "more than 6 "
					    "decimals");
				v += f * (unsigned)(peekc(ps, k) - '0');
				f /= 10;
				k++;
			}
		}
		if (is_alpha(peekc(ps, k)))
			return fail_at(ps, t, "a number runs into a word");
		t->kind = T_NUM;
		t->num = v;
		t->n = k;
		adv(ps, k);
		return 0;
	}
	if (c == '"') {
		size_t k = 1;
		for (;;) {
			int d = peekc(ps, k);
			if (d == -1 || d == '\n')
				return fail_at(ps, t, "unterminated string");
			if (d < 0x20 || d == 0x7f)
				return fail_at(ps, t, "control character in a "
				    "string");
			if (d == '"')
				break;
			if (++k > CATS_ID + 1)
				return fail_at(ps, t, "a string longer than "
				    "%d bytes", CATS_ID);
		}
		t->kind = T_STR;
		t->n = k + 1;
		adv(ps, k + 1);
		return 0;
	}
	int d = peekc(ps, 1);
	size_t k = 1;
	switch (c) {
	case '(': t->kind = T_LP; break;
	case ')': t->kind = T_RP; break;
	case ',': t->kind = T_COMMA; break;
	case ';': t->kind = T_SEMI; break;
	case '%': t->kind = T_PCT; break;
	case '-': t->kind = T_DASH; break;
	case '=':
		t->kind = T_EQ;
		if (d == '=')
			k = 2;
		break;
	case '!':
		if (d != '=')
			return fail_at(ps, t, "unexpected '!' (use != or NOT)");
		t->kind = T_NE;
		k = 2;
		break;
	case '<':
		t->kind = d == '=' ? T_LE : d == '>' ? T_NE : T_LT;
		k = d == '=' || d == '>' ? 2 : 1;
		break;
	case '>':
		t->kind = d == '=' ? T_GE : T_GT;
		k = d == '=' ? 2 : 1;
		break;
	default:
		if (c < 0x20 || c >= 0x7f)
			return fail_at(ps, t, "unexpected byte 0x%02x", c);
		return fail_at(ps, t, "unexpected character '%c'", c);
	}
	t->n = k;
	adv(ps, k);
	return 0;
}

/* Is the current token the keyword kw (case-insensitive)? */
static bool
is_kw(const struct parser *ps, const char *kw)
{
	return ps->t.kind == T_IDENT && strlen(kw) == ps->t.n &&
	    strncasecmp(ps->t.p, kw, ps->t.n) == 0;
}

static const char *
tok_desc(const struct tok *t, char *buf, size_t len)
{
	if (t->kind == T_IDENT || t->kind == T_NUM) {
		snprintf(buf, len, "'%.*s'", (int)(t->n > 40 ? 40 : t->n),
		    t->p);
		return buf;
	}
	return tnames[t->kind];
}

static int
expect_kw(struct parser *ps, const char *kw)
{
	char b[64];
	if (!is_kw(ps, kw))
		return fail_at(ps, &ps->t, "expected %s, found %s", kw,
		    tok_desc(&ps->t, b, sizeof(b)));
	return lex(ps);
}

static int
expect(struct parser *ps, int kind)
{
	char b[64];
	if (ps->t.kind != kind)
		return fail_at(ps, &ps->t, "expected %s, found %s", tnames[kind],
		    tok_desc(&ps->t, b, sizeof(b)));
	return lex(ps);
}

static int
lookup_var(const struct tok *t)
{
	for (size_t i = 0; i < CATS_ARRAY_LEN(var_names); i++)
		if (strlen(var_names[i].name) == t->n &&
		    strncasecmp(var_names[i].name, t->p, t->n) == 0)
			return var_names[i].var;
	return -1;
}

static int
lookup_enum(const char *const *names, const struct tok *t)
{
	char b[SMA_POL_MAX_IDENT + 1];
	for (size_t i = 0; i < t->n && i < SMA_POL_MAX_IDENT; i++)
		b[i] = (char)(t->p[i] >= 'a' && t->p[i] <= 'z' ? t->p[i] - 32 :
		    t->p[i]);
	b[t->n < SMA_POL_MAX_IDENT ? t->n : SMA_POL_MAX_IDENT] = '\0';
	return cats_enum_index(names, b, strlen(b));
}

static const char *const day_names[] = { "mon", "tue", "wed", "thu", "fri",
	"sat", "sun" };
static const char *const day_long[] = { "monday", "tuesday", "wednesday",
	"thursday", "friday", "saturday", "sunday" };

static int
lookup_day(const struct tok *t)
{
	if (t->kind != T_IDENT)
		return -1;
	for (int i = 0; i < 7; i++)
		if ((t->n == 3 && strncasecmp(t->p, day_names[i], 3) == 0) ||
		    (strlen(day_long[i]) == t->n &&
		    strncasecmp(t->p, day_long[i], t->n) == 0))
			return i;
	return -1;
}

static int
lookup_window(const struct sma_policy *p, const char *s, size_t n)
{
	for (size_t i = 0; i < p->nwin; i++)
		if (strlen(p->win[i].name) == n &&
		    strncasecmp(p->win[i].name, s, n) == 0)
			return (int)i;
	return -1;
}

/* ---- windows ---- */

static int
parse_span(struct parser *ps, struct spec *s)
{
	struct tok at = ps->t;
	if (ps->t.kind != T_TOD)
		return fail_at(ps, &ps->t, "expected a time of day HH:MM");
	s->start = ps->t.ms;
	if (lex(ps) < 0 || expect(ps, T_DASH) < 0)
		return -1;
	if (ps->t.kind != T_TOD)
		return fail_at(ps, &ps->t, "expected a time of day HH:MM");
	s->end = ps->t.ms;
	if (s->start == DAY_MS)
		return fail_at(ps, &at, "a span cannot start at 24:00");
	if (s->start == s->end)
		return fail_at(ps, &at, "an empty span (use 00:00-24:00 for "
		    "the whole day)");
	if (s->end == DAY_MS && s->start > 0)
		s->end = DAY_MS;
	return lex(ps);
}

static int
parse_instant(struct parser *ps, uint64_t *ms)
{
	if (ps->t.kind == T_DATE) {
		*ms = ps->t.ms;
	} else if (ps->t.kind == T_NUM && !ps->t.frac &&
	    ps->t.num / MICRO <= CATS_U53) {
		*ms = (uint64_t)(ps->t.num / MICRO);
	} else {
		return fail_at(ps, &ps->t, "expected a date "
		    "YYYY-MM-DDTHH:MMZ or milliseconds since the epoch");
	}
	return lex(ps);
}

static int
parse_spec(struct parser *ps, struct spec *s)
{
	memset(s, 0, sizeof(*s));
	if (is_kw(ps, "FROM")) {
		struct tok at = ps->t;
		s->kind = S_ABS;
		if (lex(ps) < 0 || parse_instant(ps, &s->start) < 0 ||
		    expect_kw(ps, "UNTIL") < 0 || parse_instant(ps, &s->end) < 0)
			return -1;
		if (s->end <= s->start)
			return fail_at(ps, &at, "UNTIL is not after FROM");
		return 0;
	}
	s->kind = S_DAYS;
	if (is_kw(ps, "DAILY")) {
		s->days = 0x7f;
		if (lex(ps) < 0)
			return -1;
		return parse_span(ps, s);
	}
	int d0 = lookup_day(&ps->t);
	if (d0 < 0) {
		char b[64];
		return fail_at(ps, &ps->t, "expected DAILY, a day (Mon..Sun) "
		    "or FROM, found %s", tok_desc(&ps->t, b, sizeof(b)));
	}
	if (lex(ps) < 0)
		return -1;
	int d1 = d0;
	if (ps->t.kind == T_DASH) {
		if (lex(ps) < 0)
			return -1;
		if ((d1 = lookup_day(&ps->t)) < 0)
			return fail_at(ps, &ps->t, "expected a day (Mon..Sun)");
		if (lex(ps) < 0)
			return -1;
	}
	for (int d = d0;; d = (d + 1) % 7) {
		s->days |= (uint8_t)(1u << d);
		if (d == d1)
			break;
	}
	return parse_span(ps, s);
}

static int
parse_window(struct parser *ps)
{
	struct sma_policy *p = ps->pol;
	if (lex(ps) < 0)
		return -1;
	if (ps->t.kind != T_IDENT)
		return fail_at(ps, &ps->t, "expected the window's name");
	if (lookup_window(p, ps->t.p, ps->t.n) >= 0)
		return fail_at(ps, &ps->t, "window %.*s is defined twice",
		    (int)ps->t.n, ps->t.p);
	if (p->nwin == SMA_POL_MAX_WINDOWS)
		return fail_at(ps, &ps->t, "more than %d windows",
		    SMA_POL_MAX_WINDOWS);
	struct window *w = &p->win[p->nwin];
	memset(w, 0, sizeof(*w));
	memcpy(w->name, ps->t.p, ps->t.n);
	if (lex(ps) < 0 || expect(ps, T_EQ) < 0)
		return -1;
	for (;;) {
		if (w->n == SMA_POL_MAX_SPECS)
			return fail_at(ps, &ps->t, "more than %d times in one "
			    "window", SMA_POL_MAX_SPECS);
		if (parse_spec(ps, &w->s[w->n]) < 0)
			return -1;
		w->n++;
		if (ps->t.kind != T_COMMA)
			break;
		if (lex(ps) < 0)
			return -1;
	}
	p->nwin++;
	if (ps->t.kind == T_EOF)
		return 0;
	return expect(ps, T_SEMI);
}

/* ---- conditions ---- */

static int
new_node(struct parser *ps, int kind)
{
	struct rule *r = ps->r;
	if (r->nnodes == SMA_POL_MAX_NODES)
		return fail_at(ps, &ps->t, "a condition of more than %d terms",
		    SMA_POL_MAX_NODES);
	if (r->nnodes == r->capnodes) {
		size_t cap = r->capnodes ? r->capnodes * 2 : 8;
		void *v = realloc(r->nodes, cap * sizeof(*r->nodes));
		if (v == NULL)
			return fail_at(ps, &ps->t, "out of memory");
		r->nodes = v;
		r->capnodes = cap;
	}
	struct node *n = &r->nodes[r->nnodes];
	memset(n, 0, sizeof(*n));
	n->kind = (uint8_t)kind;
	return (int)r->nnodes++;
}

static bool
reserved(const struct tok *t)
{
	static const char *const kw[] = { "IF", "THEN", "AND", "OR", "NOT",
		"TIME", "IN", "SET", "REDUCE", "INCREASE", "CLAMP", "BETWEEN",
		"BY", "SUPPRESS_UPDATES", "OMIT", "PRIORITY", "WINDOW", "TRUE",
		"FALSE", NULL };
	for (size_t i = 0; kw[i] != NULL; i++)
		if (strlen(kw[i]) == t->n && strncasecmp(kw[i], t->p, t->n) == 0)
			return true;
	return false;
}

/* A bare word waits for the other side's type: a health or state name. */
struct raw_opnd {
	struct opnd o;
	bool bare;
	struct tok t;
};

static int
parse_opnd(struct parser *ps, struct raw_opnd *ro)
{
	memset(ro, 0, sizeof(*ro));
	ro->t = ps->t;
	switch (ps->t.kind) {
	case T_NUM:
		ro->o.kind = O_NUM;
		ro->o.num = ps->t.num;
		break;
	case T_STR:
		ro->o.kind = O_STR;
		if ((ro->o.str = strndup(ps->t.p + 1, ps->t.n - 2)) == NULL)
			return fail_at(ps, &ps->t, "out of memory");
		break;
	case T_IDENT: {
		int v = lookup_var(&ps->t);
		if (v < 0 && reserved(&ps->t)) {
			char b[64];
			return fail_at(ps, &ps->t, "expected a metric or a "
			    "value, found %s", tok_desc(&ps->t, b, sizeof(b)));
		}
		if (v < 0) {
			ro->bare = true;
			break;
		}
		if (var_type[v] == VT_NONE)
			return fail_at(ps, &ps->t, "%.*s can only be omitted",
			    (int)ps->t.n, ps->t.p);
		ro->o.kind = O_VAR;
		ro->o.var = (uint8_t)v;
		if (entry_var(v))
			ps->r->uses_entry = true;
		if (site_var(v))
			ps->pol->uses_site = true;
		break;
	}
	default: {
		char b[64];
		return fail_at(ps, &ps->t, "expected a metric or a value, "
		    "found %s", tok_desc(&ps->t, b, sizeof(b)));
	}
	}
	if (lex(ps) < 0) {
		free(ro->o.str);
		ro->o.str = NULL;
		return -1;
	}
	return 0;
}

static int
opnd_type(const struct opnd *o)
{
	switch (o->kind) {
	case O_VAR: return var_type[o->var];
	case O_NUM: return VT_NUM;
	case O_HEALTH: return VT_HEALTH;
	case O_STATE: return VT_STATE;
	default: return VT_STR;
	}
}

/* Resolve a bare word against the type of the other side. */
static int
resolve(struct parser *ps, struct raw_opnd *ro, int type)
{
	if (!ro->bare)
		return 0;
	if (type == VT_HEALTH) {
		int h = lookup_enum(cats_health_names, &ro->t);
		if (h < 0)
			return fail_at(ps, &ro->t, "expected HEALTHY, DEGRADED, "
			    "UNHEALTHY or UNKNOWN, found '%.*s'",
			    (int)ro->t.n, ro->t.p);
		ro->o.kind = O_HEALTH;
		ro->o.ival = h;
		return 0;
	}
	if (type == VT_STATE) {
		int s = lookup_enum(cats_sci_state_names, &ro->t);
		if (s < 0)
			return fail_at(ps, &ro->t, "expected ACTIVE, HEALTHY, "
			    "STALE or FAILED, found '%.*s'", (int)ro->t.n,
			    ro->t.p);
		ro->o.kind = O_STATE;
		ro->o.ival = s;
		return 0;
	}
	return fail_at(ps, &ro->t, "unknown metric '%.*s'", (int)ro->t.n,
	    ro->t.p);
}

static int parse_or(struct parser *ps);

static int
parse_prim(struct parser *ps)
{
	if (++ps->depth > SMA_POL_MAX_DEPTH)
		return fail_at(ps, &ps->t, "a condition nested more than %d "
		    "deep", SMA_POL_MAX_DEPTH);
	int n;
	if (ps->t.kind == T_LP) {
		if (lex(ps) < 0 || (n = parse_or(ps)) < 0 ||
		    expect(ps, T_RP) < 0)
			return -1;
	} else if (is_kw(ps, "NOT")) {
		if (lex(ps) < 0)
			return -1;
		int a = parse_prim(ps);
		if (a < 0 || (n = new_node(ps, N_NOT)) < 0)
			return -1;
		ps->r->nodes[n].a = (uint16_t)a;
	} else if (is_kw(ps, "TRUE") || is_kw(ps, "FALSE")) {
		if ((n = new_node(ps, is_kw(ps, "TRUE") ? N_TRUE : N_FALSE)) < 0
		    || lex(ps) < 0)
			return -1;
	} else if (is_kw(ps, "TIME")) {
		if (lex(ps) < 0 || expect_kw(ps, "IN") < 0)
			return -1;
		if (ps->t.kind != T_IDENT)
			return fail_at(ps, &ps->t, "expected a window name");
		int w = lookup_window(ps->pol, ps->t.p, ps->t.n);
		if (w < 0)
			return fail_at(ps, &ps->t, "no window %.*s (define it "
			    "with WINDOW before the rules that use it)",
			    (int)ps->t.n, ps->t.p);
		if ((n = new_node(ps, N_IN)) < 0)
			return -1;
		ps->r->nodes[n].win = (uint16_t)w;
		ps->pol->win[w].used = true;
		ps->pol->uses_time = true;
		if (lex(ps) < 0)
			return -1;
	} else {
		struct raw_opnd l, r;
		struct tok at = ps->t;
		if (parse_opnd(ps, &l) < 0)
			return -1;
		int op;
		switch (ps->t.kind) {
		case T_EQ: op = C_EQ; break;
		case T_NE: op = C_NE; break;
		case T_LT: op = C_LT; break;
		case T_LE: op = C_LE; break;
		case T_GT: op = C_GT; break;
		case T_GE: op = C_GE; break;
		default: {
			char b[64];
			free(l.o.str);
			return fail_at(ps, &ps->t, "expected a comparison (=, "
			    "!=, <, <=, >, >=), found %s", tok_desc(&ps->t, b,
			    sizeof(b)));
		}
		}
		if (lex(ps) < 0 || parse_opnd(ps, &r) < 0) {
			free(l.o.str);
			return -1;
		}
		if (l.bare && r.bare) {
			free(l.o.str);
			free(r.o.str);
			return fail_at(ps, &l.t, "unknown metric '%.*s'",
			    (int)l.t.n, l.t.p);
		}
		int tl = l.bare ? -1 : opnd_type(&l.o);
		int tr = r.bare ? -1 : opnd_type(&r.o);
		if (resolve(ps, &l, tr) < 0 || resolve(ps, &r, tl) < 0 ||
		    opnd_type(&l.o) != opnd_type(&r.o) ||
		    (opnd_type(&l.o) != VT_NUM && op != C_EQ && op != C_NE) ||
		    (n = new_node(ps, N_CMP)) < 0) {
			free(l.o.str);
			free(r.o.str);
			if (!ps->failed)
				fail_at(ps, &at, opnd_type(&l.o) !=
				    opnd_type(&r.o) ? "the two sides of the "
				    "comparison are of different kinds" :
				    "health, state and text compare with = "
				    "and != only");
			return -1;
		}
		struct node *nd = &ps->r->nodes[n];
		nd->op = (uint8_t)op;
		nd->l = l.o;
		nd->r = r.o;
	}
	ps->depth--;
	return n;
}

static int
parse_and(struct parser *ps)
{
	int a = parse_prim(ps);
	while (a >= 0 && is_kw(ps, "AND")) {
		if (lex(ps) < 0)
			return -1;
		int b = parse_prim(ps), n;
		if (b < 0 || (n = new_node(ps, N_AND)) < 0)
			return -1;
		ps->r->nodes[n].a = (uint16_t)a;
		ps->r->nodes[n].b = (uint16_t)b;
		a = n;
	}
	return a;
}

static int
parse_or(struct parser *ps)
{
	int a = parse_and(ps);
	while (a >= 0 && is_kw(ps, "OR")) {
		if (lex(ps) < 0)
			return -1;
		int b = parse_and(ps), n;
		if (b < 0 || (n = new_node(ps, N_OR)) < 0)
			return -1;
		ps->r->nodes[n].a = (uint16_t)a;
		ps->r->nodes[n].b = (uint16_t)b;
		a = n;
	}
	return a;
}

/* ---- actions ---- */

static uint64_t
var_max(int v)
{
	return v == V_REP || v == V_SEC ? 255 : CATS_U32;
}

/* An integer value for SET or CLAMP. */
static int
parse_int(struct parser *ps, int var, uint64_t *out)
{
	if (ps->t.kind != T_NUM || ps->t.frac)
		return fail_at(ps, &ps->t, "expected a whole number");
	if (ps->t.num / MICRO > var_max(var))
		return fail_at(ps, &ps->t, "%llu is above the largest value "
		    "of this metric (%llu)",
		    (unsigned long long)(ps->t.num / MICRO),
		    (unsigned long long)var_max(var));
	*out = (uint64_t)(ps->t.num / MICRO);
	return lex(ps);
}

/* A metric an action may write (numeric entry metrics, or health). */
static int
action_var(struct parser *ps, bool health_ok)
{
	int v = ps->t.kind == T_IDENT ? lookup_var(&ps->t) : -1;
	bool ok = v == V_GAS || v == V_CT || v == V_PRICE || v == V_REP ||
	    v == V_SEC || (health_ok && v == V_HEALTH);
	if (!ok)
		return fail_at(ps, &ps->t, "expected SCI_GAS, Comp_Time, Price, "
		    "Reputation, Security_Level%s", health_ok ?
		    " or SCI_Health" : "");
	ps->r->uses_entry = true;
	if (lex(ps) < 0)
		return -1;
	return v;
}

static int
parse_action(struct parser *ps, struct action *a)
{
	memset(a, 0, sizeof(*a));
	int v;
	if (is_kw(ps, "SET")) {
		a->kind = A_SET;
		if (lex(ps) < 0 || (v = action_var(ps, true)) < 0 ||
		    expect(ps, T_EQ) < 0)
			return -1;
		a->var = (uint8_t)v;
		if (v == V_HEALTH) {
			struct tok t = ps->t;
			int h = t.kind == T_IDENT ? lookup_enum(cats_health_names,
			    &t) : -1;
			if (h < 0)
				return fail_at(ps, &t, "expected HEALTHY, "
				    "DEGRADED, UNHEALTHY or UNKNOWN");
			a->v = (uint64_t)h;
			return lex(ps);
		}
		return parse_int(ps, v, &a->v);
	}
	if (is_kw(ps, "REDUCE") || is_kw(ps, "INCREASE")) {
		a->kind = is_kw(ps, "REDUCE") ? A_REDUCE : A_INCREASE;
		if (lex(ps) < 0 || (v = action_var(ps, false)) < 0 ||
		    expect_kw(ps, "BY") < 0)
			return -1;
		a->var = (uint8_t)v;
		if (ps->t.kind != T_NUM)
			return fail_at(ps, &ps->t, "expected a percentage");
		if (a->kind == A_REDUCE && ps->t.num > (u128)100 * MICRO)
			return fail_at(ps, &ps->t, "cannot reduce by more than "
			    "100%%");
		if (ps->t.num > (u128)1000000 * MICRO)
			return fail_at(ps, &ps->t, "percentage too large");
		a->pct = ps->t.num;
		if (lex(ps) < 0)
			return -1;
		return expect(ps, T_PCT);
	}
	if (is_kw(ps, "CLAMP")) {
		a->kind = A_CLAMP;
		if (lex(ps) < 0 || (v = action_var(ps, false)) < 0 ||
		    expect_kw(ps, "BETWEEN") < 0)
			return -1;
		a->var = (uint8_t)v;
		struct tok at = ps->t;
		if (parse_int(ps, v, &a->lo) < 0 || expect_kw(ps, "AND") < 0 ||
		    parse_int(ps, v, &a->hi) < 0)
			return -1;
		if (a->lo > a->hi)
			return fail_at(ps, &at, "the lower bound is above the "
			    "upper");
		return 0;
	}
	if (is_kw(ps, "SUPPRESS_UPDATES")) {
		a->kind = A_SUPPRESS;
		return lex(ps);
	}
	if (is_kw(ps, "OMIT")) {
		a->kind = A_OMIT;
		if (lex(ps) < 0)
			return -1;
		v = ps->t.kind == T_IDENT ? lookup_var(&ps->t) : -1;
		if (v != V_PRICE && v != V_REP && v != V_SEC && v != V_EXT)
			return fail_at(ps, &ps->t, "only optional metrics can "
			    "be omitted: Price, Reputation, Security_Level, "
			    "Ext");
		a->var = (uint8_t)v;
		ps->r->uses_entry = true;
		return lex(ps);
	}
	char b[64];
	return fail_at(ps, &ps->t, "expected an action (SET, REDUCE, "
	    "INCREASE, CLAMP, SUPPRESS_UPDATES, OMIT), found %s",
	    tok_desc(&ps->t, b, sizeof(b)));
}

static int
parse_rule(struct parser *ps)
{
	struct sma_policy *p = ps->pol;
	if (p->nrules == SMA_POL_MAX_RULES)
		return fail_at(ps, &ps->t, "more than %d rules",
		    SMA_POL_MAX_RULES);
	if (p->nrules == p->caprules) {
		size_t cap = p->caprules ? p->caprules * 2 : 8;
		void *v = realloc(p->rules, cap * sizeof(*p->rules));
		if (v == NULL)
			return fail_at(ps, &ps->t, "out of memory");
		p->rules = v;
		p->caprules = cap;
	}
	struct rule *r = &p->rules[p->nrules];
	memset(r, 0, sizeof(*r));
	r->idx = p->nrules;
	p->nrules++;	/* so that free() sees its nodes */
	ps->r = r;
	if (is_kw(ps, "PRIORITY")) {
		if (lex(ps) < 0)
			return -1;
		bool neg = false;
		if (ps->t.kind == T_DASH) {
			neg = true;
			if (lex(ps) < 0)
				return -1;
		}
		if (ps->t.kind != T_NUM || ps->t.frac ||
		    ps->t.num / MICRO > 1000000)
			return fail_at(ps, &ps->t, "expected a priority "
			    "(a whole number, -1000000 to 1000000)");
		r->prio = (int64_t)(ps->t.num / MICRO) * (neg ? -1 : 1);
		if (lex(ps) < 0)
			return -1;
	}
	if (expect_kw(ps, "IF") < 0)
		return -1;
	ps->depth = 0;
	int root = parse_or(ps);
	if (root < 0 || expect_kw(ps, "THEN") < 0)
		return -1;
	r->root = (uint16_t)root;
	for (;;) {
		if (r->nact == SMA_POL_MAX_ACTIONS)
			return fail_at(ps, &ps->t, "more than %d actions",
			    SMA_POL_MAX_ACTIONS);
		if (parse_action(ps, &r->act[r->nact]) < 0)
			return -1;
		r->nact++;
		if (ps->t.kind != T_COMMA)
			break;
		if (lex(ps) < 0)
			return -1;
	}
	if (ps->t.kind == T_EOF)
		return 0;
	return expect(ps, T_SEMI);
}

/* ---- life cycle ---- */

void
sma_policy_free(struct sma_policy *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->nrules; i++) {
		struct rule *r = &p->rules[i];
		for (size_t j = 0; r->nodes && j < r->nnodes; j++) {
			free(r->nodes[j].l.str);
			free(r->nodes[j].r.str);
		}
		free(r->nodes);
	}
	free(p->rules);
	free(p->file_order);
	free(p);
}

static int
prio_cmp(const void *a, const void *b)
{
	const struct rule *x = a, *y = b;
	if (x->prio != y->prio)
		return x->prio > y->prio ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

struct sma_policy *
sma_policy_parse(const char *name, const char *text, size_t len, char *err,
    size_t errlen)
{
	struct parser ps = { .name = name ? name : "policy", .s = text,
		.n = len, .line = 1, .col = 1, .err = err, .errlen = errlen };
	if (len > SMA_POL_MAX_FILE) {
		snprintf(err, errlen, "%s: larger than %u bytes", ps.name,
		    SMA_POL_MAX_FILE);
		return NULL;
	}
	struct sma_policy *p = calloc(1, sizeof(*p));
	if (p == NULL) {
		snprintf(err, errlen, "%s: out of memory", ps.name);
		sma_policy_free(p);
		return NULL;
	}
	ps.pol = p;
	if (lex(&ps) < 0)
		goto fail;
	while (ps.t.kind != T_EOF) {
		int rc;
		if (is_kw(&ps, "WINDOW"))
			rc = parse_window(&ps);
		else if (is_kw(&ps, "IF") || is_kw(&ps, "PRIORITY"))
			rc = parse_rule(&ps);
		else if (ps.t.kind == T_SEMI)
			rc = lex(&ps);
		else {
			char b[64];
			rc = fail_at(&ps, &ps.t, "expected IF, PRIORITY or "
			    "WINDOW, found %s", tok_desc(&ps.t, b, sizeof(b)));
		}
		if (rc < 0)
			goto fail;
	}
	/* Evaluation order is by priority; keep the file order's map. */
	p->file_order = calloc(p->nrules ? p->nrules : 1,
	    sizeof(*p->file_order));
	if (p->file_order == NULL) {
		snprintf(err, errlen, "%s: out of memory", ps.name);
		goto fail;
	}
	if (p->nrules > 1)
		qsort(p->rules, p->nrules, sizeof(*p->rules), prio_cmp);
	for (size_t i = 0; i < p->nrules; i++)
		p->file_order[p->rules[i].idx] = i;
	return p;
fail:
	sma_policy_free(p);
	return NULL;
}

struct sma_policy *
sma_policy_load(const char *path, char *err, size_t errlen)
{
	int fd = cats_file_open(path, err, errlen);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > SMA_POL_MAX_FILE) {
		snprintf(err, errlen, "%s: %s", path, !S_ISREG(st.st_mode) ?
		    "not a regular file" : "larger than 1 MiB");
		close(fd);
		return NULL;
	}
	size_t n = (size_t)st.st_size;
	char *buf = malloc(n ? n : 1);
	ssize_t got = buf ? read(fd, buf, n) : -1;
	close(fd);
	if (got != (ssize_t)n) {
		snprintf(err, errlen, "%s: cannot read", path);
		free(buf);
		return NULL;
	}
	struct sma_policy *p = sma_policy_parse(path, buf, n, err, errlen);
	free(buf);
	return p;
}

/* ---- evaluation ---- */

static bool
spec_in(const struct spec *s, uint64_t now)
{
	if (s->kind == S_ABS)
		return now >= s->start && now < s->end;
	uint64_t d = now / DAY_MS, tod = now % DAY_MS;
	unsigned dow = (unsigned)((d + 3) % 7);	/* 1970-01-01: Thursday */
	unsigned prev = (dow + 6) % 7;
	if (s->start < s->end)
		return (s->days >> dow & 1) && tod >= s->start && tod < s->end;
	return ((s->days >> dow & 1) && tod >= s->start) ||
	    ((s->days >> prev & 1) && tod < s->end);
}

static bool
window_in(const struct window *w, uint64_t now)
{
	for (size_t i = 0; i < w->n; i++)
		if (spec_in(&w->s[i], now))
			return true;
	return false;
}

int
sma_policy_in_window(const struct sma_policy *p, const char *name,
    uint64_t now)
{
	int w = lookup_window(p, name, strlen(name));
	if (w < 0)
		return -1;
	return window_in(&p->win[w], now);
}

static void
consider(uint64_t t, uint64_t now, uint64_t *best)
{
	if (t > now && (*best == 0 || t < *best))
		*best = t;
}

uint64_t
sma_policy_next_boundary(const struct sma_policy *p, uint64_t now)
{
	uint64_t best = 0;
	for (size_t i = 0; p != NULL && i < p->nwin; i++) {
		const struct window *w = &p->win[i];
		if (!w->used)
			continue;
		for (size_t j = 0; j < w->n; j++) {
			const struct spec *s = &w->s[j];
			if (s->kind == S_ABS) {
				consider(s->start, now, &best);
				consider(s->end, now, &best);
				continue;
			}
			uint64_t d0 = now / DAY_MS;
			for (uint64_t d = d0 ? d0 - 1 : 0; d <= d0 + 8; d++) {
				unsigned dow = (unsigned)((d + 3) % 7);
				if (!(s->days >> dow & 1))
					continue;
				uint64_t st = d * DAY_MS + s->start;
				uint64_t en = s->start < s->end ? d * DAY_MS +
				    s->end : (d + 1) * DAY_MS + s->end;
				consider(st, now, &best);
				consider(en, now, &best);
			}
		}
	}
	return best;
}

/* An operand's value: false when absent. */
struct val {
	int type;
	u128 num;
	int e;
	const char *s;
};

static bool
get(const struct opnd *o, const struct sma_pmetrics *m,
    const struct sma_pctx *c, struct val *v)
{
	v->type = opnd_type(o);
	switch (o->kind) {
	case O_NUM:
		v->num = o->num;
		return true;
	case O_HEALTH:
	case O_STATE:
		v->e = o->ival;
		return true;
	case O_STR:
		v->s = o->str;
		return true;
	default:
		break;
	}
	unsigned bit = var_bit(o->var);
	if (bit && (!c->entry || !(m->has & bit)))
		return false;
	switch (o->var) {
	case V_GAS: v->num = (u128)m->gas * MICRO; return true;
	case V_CT: v->num = (u128)m->ct * MICRO; return true;
	case V_PRICE: v->num = (u128)m->price * MICRO; return true;
	case V_REP: v->num = (u128)m->reputation * MICRO; return true;
	case V_SEC: v->num = (u128)m->security * MICRO; return true;
	case V_HEALTH: v->e = m->health; return true;
	case V_STATE: v->e = m->state; return true;
	case V_CSID: v->s = c->cs_id; return v->s != NULL;
	case V_CSCIID: v->s = c->csci_id; return c->entry && v->s != NULL;
	case V_SGAS: v->num = (u128)c->site_gas * MICRO; return c->has_site;
	case V_SCT:
		v->num = (u128)c->site_ct * MICRO;
		return c->has_site && c->site_has_ct;
	case V_SHEALTHY:
		v->num = (u128)c->site_healthy * MICRO;
		return c->has_site;
	case V_STOTAL:
		v->num = (u128)c->site_total * MICRO;
		return c->has_site;
	case V_SHEALTH: v->e = c->site_health; return c->has_site;
	default: return false;
	}
}

static bool
compare(const struct node *n, const struct sma_pmetrics *m,
    const struct sma_pctx *c)
{
	struct val a, b;
	if (!get(&n->l, m, c, &a) || !get(&n->r, m, c, &b))
		return false;
	int r;
	if (a.type == VT_NUM)
		r = a.num < b.num ? -1 : a.num > b.num;
	else if (a.type == VT_STR)
		r = strcmp(a.s, b.s) != 0;
	else
		r = a.e != b.e;
	switch (n->op) {
	case C_EQ: return r == 0;
	case C_NE: return r != 0;
	case C_LT: return r < 0;
	case C_LE: return r <= 0;
	case C_GT: return r > 0;
	default: return r >= 0;
	}
}

static bool
eval_node(const struct sma_policy *p, const struct rule *r, uint16_t i,
    const struct sma_pmetrics *m, const struct sma_pctx *c)
{
	const struct node *n = &r->nodes[i];
	switch (n->kind) {
	case N_TRUE: return true;
	case N_FALSE: return false;
	case N_AND: return eval_node(p, r, n->a, m, c) &&
		    eval_node(p, r, n->b, m, c);
	case N_OR: return eval_node(p, r, n->a, m, c) ||
		    eval_node(p, r, n->b, m, c);
	case N_NOT: return !eval_node(p, r, n->a, m, c);
	case N_IN: return window_in(&p->win[n->win], c->now);
	default: return compare(n, m, c);
	}
}

static uint64_t *
slot(struct sma_pmetrics *m, int v)
{
	switch (v) {
	case V_GAS: return &m->gas;
	case V_CT: return &m->ct;
	case V_PRICE: return &m->price;
	case V_REP: return &m->reputation;
	default: return &m->security;
	}
}

static void
act(const struct action *a, struct sma_pmetrics *m, struct sma_pout *o)
{
	unsigned bit = var_bit(a->var);
	switch (a->kind) {
	case A_SET:
		if (a->var == V_HEALTH)
			m->health = (int)a->v;
		else
			*slot(m, a->var) = a->v;
		m->has |= bit;
		o->changed |= bit;
		break;
	case A_REDUCE:
	case A_INCREASE: {
		if (!(m->has & bit))
			break;
		uint64_t *x = slot(m, a->var);
		u128 f = a->kind == A_REDUCE ? (u128)100 * MICRO - a->pct
		    : (u128)100 * MICRO + a->pct;
		u128 v = (u128)*x * f / ((u128)100 * MICRO);
		uint64_t max = var_max(a->var);
		*x = v > max ? max : (uint64_t)v;
		o->changed |= bit;
		break;
	}
	case A_CLAMP: {
		if (!(m->has & bit))
			break;
		uint64_t *x = slot(m, a->var);
		if (*x < a->lo)
			*x = a->lo;
		if (*x > a->hi)
			*x = a->hi;
		o->changed |= bit;
		break;
	}
	case A_SUPPRESS:
		o->suppress = true;
		break;
	default:
		o->omit |= bit;
		break;
	}
}

void
sma_policy_eval(struct sma_policy *p, struct sma_pmetrics *m,
    const struct sma_pctx *ctx, struct sma_pout *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; p != NULL && i < p->nrules; i++) {
		struct rule *r = &p->rules[i];
		if (!ctx->entry && r->uses_entry)
			continue;
		if (!eval_node(p, r, r->root, m, ctx))
			continue;
		r->hits++;
		out->matched++;
		for (size_t k = 0; k < r->nact; k++)
			if (ctx->entry || r->act[k].kind == A_SUPPRESS)
				act(&r->act[k], m, out);
	}
	/* An omitted metric is not reported, whatever wrote it. */
	m->has &= ~(out->omit & ~(unsigned)SMA_PM_EXT);
}

size_t
sma_policy_rules(const struct sma_policy *p)
{
	return p ? p->nrules : 0;
}

size_t
sma_policy_windows(const struct sma_policy *p)
{
	return p ? p->nwin : 0;
}

bool
sma_policy_uses_site(const struct sma_policy *p)
{
	return p && p->uses_site;
}

bool
sma_policy_uses_time(const struct sma_policy *p)
{
	return p && p->uses_time;
}

uint64_t
sma_policy_hits(const struct sma_policy *p, size_t rule)
{
	if (p == NULL || rule >= p->nrules)
		return 0;
	return p->rules[p->file_order[rule]].hits;
}
