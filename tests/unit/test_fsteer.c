/*
 * test_fsteer.c - the egress's table of site-local redirects (fwd/steer.h):
 * the rules of cats-records(5) steer (replace, end, until, epoch, seq) and
 * the lookups of the rewrite, with the time passed in.
 */
#include <string.h>

#include "fwd/steer.h"
#include "t.h"

static struct cats_steer
rec(int op, uint64_t epoch, uint64_t seq, const char *from, const char *fl,
    const char *to, const char *tl, uint64_t until)
{
	struct cats_steer s;
	memset(&s, 0, sizeof(s));
	s.op = op;
	s.sma_id = "SMA-1";
	s.epoch = epoch;
	s.seq = seq;
	s.ts = 1000;
	s.cs_id = "S1";
	s.from = from;
	if (fl != NULL) {
		cats_ip_parse(fl, strlen(fl), &s.from_locator);
		CATS_SET(&s, STR, from_locator, s.from_locator);
	}
	if (to != NULL) {
		s.to = to;
		CATS_SET(&s, STR, to, to);
	}
	if (tl != NULL) {
		cats_ip_parse(tl, strlen(tl), &s.locator);
		CATS_SET(&s, STR, locator, s.locator);
	}
	if (until)
		CATS_SET(&s, STR, until, until);
	return s;
}

static struct cats_ip
ip(const char *a)
{
	struct cats_ip x;
	cats_ip_parse(a, strlen(a), &x);
	return x;
}

int
main(void)
{
	static struct cats_fsteer t;
	char err[200];
	struct cats_ip a = ip("198.51.100.11"), b = ip("198.51.100.21"),
	    c = ip("198.51.100.31");
	cats_fsteer_init(&t, "EF-2");

	struct cats_steer r = rec(CATS_STEER_REDIRECT, 5, 1, "i1",
	    "198.51.100.11", "i2", "198.51.100.21", 10000);
	T_OK(cats_fsteer_apply(&t, &r, "SMA-1", 2000, err, sizeof(err)) == 0,
	    "a redirect is accepted");
	const struct cats_fsteer_ent *e = cats_fsteer_fwd(&t, 4, a.a, 80,
	    2000);
	T_OK(e != NULL && memcmp(e->to_loc.a, b.a, 4) == 0,
	    "packets to the failed instance go to the target");
	T_OK(cats_fsteer_fwd(&t, 4, b.a, 80, 2000) == NULL,
	    "the target's own packets are not moved");
	T_OK(cats_fsteer_rev(&t, 4, b.a, 80, 2000, NULL) == e,
	    "the target's replies find the redirect");
	T_OK(cats_fsteer_fwd(&t, 4, a.a, 80, 10000) == NULL,
	    "over at its until, without a record");

	/* Replay, stale epoch, bad signer, another egress: changes nothing. */
	T_OK(cats_fsteer_apply(&t, &r, "SMA-1", 2000, err, sizeof(err)) < 0 &&
	    strstr(err, "replayed") != NULL, "the same seq again: replayed");
	struct cats_steer o = rec(CATS_STEER_END, 4, 9, "i1", NULL, NULL, NULL,
	    0);
	T_OK(cats_fsteer_apply(&t, &o, "SMA-1", 2000, err, sizeof(err)) < 0 &&
	    strstr(err, "stale epoch") != NULL, "a lower epoch: stale");
	struct cats_steer x = rec(CATS_STEER_END, 5, 2, "i1", NULL, NULL, NULL,
	    0);
	T_OK(cats_fsteer_apply(&t, &x, "SMA-2", 2000, err, sizeof(err)) < 0 &&
	    strstr(err, "signed by") != NULL, "signed by another identity");
	x.egress = "EF-9";
	CATS_SET(&x, STR, egress, "EF-9");
	T_OK(cats_fsteer_apply(&t, &x, "SMA-1", 2000, err, sizeof(err)) < 0 &&
	    strstr(err, "egress EF-9") != NULL, "for another egress");
	struct cats_steer ex = rec(CATS_STEER_REDIRECT, 5, 3, "i3",
	    "198.51.100.31", "i2", "198.51.100.21", 1500);
	T_OK(cats_fsteer_apply(&t, &ex, "SMA-1", 2000, err, sizeof(err)) < 0 &&
	    strstr(err, "expired") != NULL, "until passed: expired");
	struct cats_steer nu = rec(CATS_STEER_REDIRECT, 5, 3, "i3",
	    "198.51.100.31", "i2", "198.51.100.21", 0);
	T_OK(cats_fsteer_apply(&t, &nu, "SMA-1", 2000, err, sizeof(err)) < 0 &&
	    strstr(err, "until") != NULL, "no until: refused");
	struct cats_steer af = rec(CATS_STEER_REDIRECT, 5, 3, "i3",
	    "198.51.100.31", "i2", "2001:db8:5::21", 9000);
	T_OK(cats_fsteer_apply(&t, &af, "SMA-1", 2000, err, sizeof(err)) < 0,
	    "across address families: refused");
	T_OK(t.st.refused == 7 && t.n == 1 && t.sma[0].seq == 1,
	    "seven refused, the table as it was");

	/* A redirect replaces the one of the same cs_id and from. */
	struct cats_steer rp = rec(CATS_STEER_REDIRECT, 5, 4, "i1",
	    "198.51.100.11", "i3", "198.51.100.31", 10000);
	T_OK(cats_fsteer_apply(&t, &rp, "SMA-1", 2100, err, sizeof(err)) == 0 &&
	    t.n == 1, "replaced, still one");
	e = cats_fsteer_fwd(&t, 4, a.a, 80, 2100);
	T_OK(e != NULL && memcmp(e->to_loc.a, c.a, 4) == 0,
	    "to the new target");
	T_OK(cats_fsteer_rev(&t, 4, b.a, 80, 2100, NULL) == NULL,
	    "the old target's replies are its own again");

	/* An end removes it. */
	struct cats_steer en = rec(CATS_STEER_END, 5, 5, "i1", NULL, NULL, NULL,
	    0);
	T_OK(cats_fsteer_apply(&t, &en, "SMA-1", 2200, err, sizeof(err)) == 0 &&
	    t.n == 0 && cats_fsteer_fwd(&t, 4, a.a, 80, 2200) == NULL,
	    "an end removes the redirect");

	/* A higher epoch ends every redirect of a lower one. */
	r.seq = 6;
	T_OK(cats_fsteer_apply(&t, &r, "SMA-1", 2300, err, sizeof(err)) == 0,
	    "redirect again");
	struct cats_steer hi = rec(CATS_STEER_REDIRECT, 6, 1, "i3",
	    "198.51.100.31", "i2", "198.51.100.21", 10000);
	T_OK(cats_fsteer_apply(&t, &hi, "SMA-1", 2400, err, sizeof(err)) == 0 &&
	    t.n == 1 && t.st.fenced == 1 &&
	    cats_fsteer_fwd(&t, 4, a.a, 80, 2400) == NULL &&
	    cats_fsteer_fwd(&t, 4, c.a, 80, 2400) != NULL,
	    "a higher epoch fences the lower one's redirects");

	/* Ports: matched and rewritten only when both are given. */
	struct cats_steer pt = rec(CATS_STEER_REDIRECT, 6, 2, "i1",
	    "198.51.100.11", "i2", "198.51.100.21", 10000);
	CATS_SET(&pt, STR, from_port, 8080);
	CATS_SET(&pt, STR, port, 9090);
	T_OK(cats_fsteer_apply(&t, &pt, "SMA-1", 2500, err, sizeof(err)) == 0,
	    "a redirect with ports");
	T_OK(cats_fsteer_fwd(&t, 4, a.a, 80, 2500) == NULL,
	    "another port is not moved");
	e = cats_fsteer_fwd(&t, 4, a.a, 8080, 2500);
	T_OK(e != NULL && e->ports && e->to_port == 9090,
	    "from_port moved to port");
	/* Two instances redirected to one target: each is tried. */
	const struct cats_fsteer_ent *r1 = cats_fsteer_rev(&t, 4, b.a, 9090,
	    2500, NULL);
	const struct cats_fsteer_ent *r2 = r1 ? cats_fsteer_rev(&t, 4, b.a,
	    9090, 2500, r1) : NULL;
	T_OK(r1 != NULL && r2 != NULL && r1 != r2 && (r1 == e || r2 == e) &&
	    cats_fsteer_rev(&t, 4, b.a, 9090, 2500, r2) == NULL,
	    "one target of two redirects: both found, in turn");
	r1 = cats_fsteer_rev(&t, 4, b.a, 80, 2500, NULL);
	T_OK(r1 != NULL && r1 != e && cats_fsteer_rev(&t, 4, b.a, 80, 2500,
	    r1) == NULL, "another port: only the redirect without ports");

	cats_fsteer_expire(&t, 10000);
	T_OK(t.n == 0 && t.st.expired == 2, "expire drops what until ended");
	return t_done();
}
