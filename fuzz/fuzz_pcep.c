/*
 * fuzz_pcep - the PCEP speaker: arbitrary bytes are framed and decoded as
 * one message (a decoded message must encode and decode again to the same
 * type and counts); a PCReq's well-formed requests go through the PCE
 * side (path-req, cats_pce_answer(), PCRep on the wire, the PCC's
 * path-rep, which must be a valid record); and the same bytes, cut in
 * pieces at times chosen by the first byte, drive a PCE session, whose
 * output must stay bounded.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pce/pce.h"
#include "pce/pcep.h"

#include "fuzz_topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cats_te *te;
static struct cats_pcep_names *names;
static struct cats_pce pce;

static int
reencode(const struct cats_pcep_msg *m, struct cats_buf *out)
{
	switch (m->type) {
	case CATS_PCEP_OPEN:
		return cats_pcep_put_open(out, &m->open);
	case CATS_PCEP_KEEPALIVE:
		return cats_pcep_put_keepalive(out);
	case CATS_PCEP_CLOSE:
		return cats_pcep_put_close(out, m->close_reason);
	case CATS_PCEP_PCREQ: {
		/* Only the well-formed requests are sent on. */
		size_t k = 0;
		for (size_t i = 0; i < m->nreqs; i++)
			if (m->reqs[i].st.code == CATS_PCEP_ST_OK)
				m->reqs[k++] = m->reqs[i];
		return k ? cats_pcep_put_pcreq(out, m->reqs, k) : 1;
	}
	case CATS_PCEP_PCREP:
		return cats_pcep_put_pcrep(out, m->reps, m->nreps);
	case CATS_PCEP_PCERR:
		return cats_pcep_put_pcerr(out, m->err.ids, m->err.nids,
		    m->err.v, m->err.n, m->err.has_open ? &m->err.open : NULL);
	default:
		return 1;
	}
}

static void
answer(const struct cats_pcep_req *r, struct cats_arena *a)
{
	struct cats_pcep_status st;
	struct cats_path_req prq;
	if (cats_pcep_to_path_req(r, te, names, 1000, &prq, a, &st) < 0) {
		if (st.code != CATS_PCEP_ST_PCERR &&
		    st.code != CATS_PCEP_ST_NOMEM)
			abort();
		return;
	}
	struct cats_rec rep;
	if (cats_pce_answer(&pce, &prq, 1000, &rep, a) < 0)
		return;
	struct cats_pcep_rep o;
	if (cats_pcep_from_path_rep(&rep.u.prep, r, te, names, &o, a) < 0)
		return;
	struct cats_buf w = { 0 };
	if (cats_pcep_put_pcrep(&w, &o, 1) == 0) {
		struct cats_arena ra = { 0 };
		struct cats_pcep_msg m;
		if (cats_pcep_decode(w.p, w.len, NULL, &m, &ra, &st) < 0 ||
		    m.nreps != 1)
			abort();	/* our own reply must decode */
		struct cats_rec back;
		struct cats_err e;
		if (cats_pcep_to_path_rep(&m.reps[0], &prq, te, names, 1000,
		    &back, a) == 0 && cats_rec_validate(&back, &e) < 0)
			abort();	/* every rebuilt reply is valid */
		cats_arena_free(&ra);
	}
	cats_buf_free(&w);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (te == NULL) {
		char err[300];
		te = cats_te_load_mem(topo, sizeof(topo) - 1, NULL, 1, err,
		    sizeof(err));
		if (te == NULL)
			abort();
		names = cats_pcep_names_new(te);
		cats_pce_init(&pce, te);
	}
	struct cats_arena a = { 0 };
	struct cats_pcep_msg m;
	struct cats_pcep_status st;
	long fl = cats_pcep_frame(data, size, NULL, &st);
	if (fl > 0 && cats_pcep_decode(data, (size_t)fl, NULL, &m, &a,
	    &st) == 0) {
		if (m.type == CATS_PCEP_PCREQ)
			for (size_t i = 0; i < m.nreqs; i++)
				if (m.reqs[i].st.code == CATS_PCEP_ST_OK)
					answer(&m.reqs[i], &a);
		uint8_t type = m.type;
		size_t nreps = m.nreps;
		struct cats_buf out = { 0 };
		int rc = reencode(&m, &out);
		if (rc == 0) {
			struct cats_arena b = { 0 };
			struct cats_pcep_msg m2;
			if (cats_pcep_decode(out.p, out.len, NULL, &m2, &b,
			    &st) < 0 || m2.type != type ||
			    (type == CATS_PCEP_PCREP && m2.nreps != nreps))
				abort();
			cats_arena_free(&b);
		}
		cats_buf_free(&out);
	}
	cats_arena_free(&a);

	/* A session fed the bytes in pieces. */
	struct cats_pcep_conf c;
	cats_pcep_conf_default(&c, size > 0 && (data[0] & 1));
	struct cats_pcep_sess s;
	if (cats_pcep_sess_init(&s, &c, 0) < 0)
		return 0;
	size_t step = size > 0 ? (data[0] >> 1) + 1 : 1, pos = 0;
	uint64_t now = 0;
	struct cats_pcep_ev ev;
	while (pos < size && s.state != CATS_PCEP_S_CLOSED) {
		size_t n = size - pos < step ? size - pos : step;
		if (cats_pcep_sess_feed(&s, data + pos, n) < 0)
			abort();	/* next() drains below the cap */
		pos += n;
		while (cats_pcep_sess_next(&s, now, &ev) == 1)
			if (ev.kind == CATS_PCEP_EV_MSG &&
			    ev.msg->type == CATS_PCEP_PCREQ)
				(void)cats_pcep_sess_send_err(&s, NULL, 0, 2, 0,
				    now);
		if (s.out.len > 8 * 65536)
			abort();
		cats_buf_reset(&s.out);
		now += 7919;
	}
	cats_pcep_sess_free(&s);
	return 0;
}
