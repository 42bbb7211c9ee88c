/*
 * fuzz_path_req - path-req decoding and answering: arbitrary bytes are
 * decoded as a record; a path request is answered over a small topology
 * and the reply must be a valid record; a net record is applied.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pce/pce.h"

#include "fuzz_topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cats_dec dec;
	static bool ready;
	if (!ready) {
		cats_dec_init(&dec, NULL);
		ready = true;
	}
	struct cats_rec r;
	struct cats_err e;
	if (cats_rec_decode(&dec, data, size, &r, &e) < 0)
		return 0;
	char err[300];
	struct cats_te *te = cats_te_load_mem(topo, sizeof(topo) - 1, NULL, 1,
	    err, sizeof(err));
	if (te == NULL)
		abort();
	if (r.type == CATS_T_NET) {
		uint64_t g = cats_te_gen(te);
		int rc = cats_te_apply_net(te, &r.u.net, err, sizeof(err));
		if ((rc == 0) != (cats_te_gen(te) == g + 1))
			abort();
		cats_te_free(te);
		return 0;
	}
	if (r.type != CATS_T_PATH_REQ) {
		cats_te_free(te);
		return 0;
	}
	struct cats_pce pce;
	cats_pce_init(&pce, te);
	struct cats_arena arena = { 0 };
	struct cats_rec rep;
	/* Twice: the second answer comes from the cache. */
	for (int i = 0; i < 2; i++) {
		cats_arena_reset(&arena);
		if (cats_pce_answer(&pce, &r.u.preq, 5000, &rep, &arena) < 0)
			abort();
		if (cats_rec_validate(&rep, &e) < 0)
			abort();	/* every reply is a valid record */
		if (rep.u.prep.txn != r.u.preq.txn)
			abort();
	}
	cats_arena_free(&arena);
	cats_pce_free(&pce);
	return 0;
}
