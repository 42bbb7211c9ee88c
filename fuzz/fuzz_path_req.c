/*
 * fuzz_path_req - path-req decoding and answering: arbitrary bytes are
 * decoded as a record; a path request is answered over a small topology
 * and the reply must be a valid record; a net record is applied.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pce/pce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char topo[] =
    "{\"nodes\":["
    "{\"id\":\"IF-1\",\"node_label\":16001,\"srv6_sid\":\"fc00::1\",\"msd\":3},"
    "{\"id\":\"P1\",\"node_label\":16002,\"srv6_sid\":\"fc00::2\"},"
    "{\"id\":\"P2\",\"node_label\":16003},"
    "{\"id\":\"EF-2\",\"node_label\":16004,\"srv6_sid\":\"fc00::4\"}],"
    "\"links\":["
    "{\"id\":\"a\",\"src\":\"IF-1\",\"dst\":\"P1\",\"igp_metric\":10,"
    "\"delay_us\":100,\"admin_groups\":1,\"srlgs\":[7],\"adj_label\":24001,"
    "\"adj_sid\":\"fc00::a1\",\"reverse\":{\"adj_label\":24001}},"
    "{\"id\":\"b\",\"src\":\"P1\",\"dst\":\"EF-2\",\"igp_metric\":10,"
    "\"delay_us\":100,\"adj_label\":24002,\"adj_sid\":\"fc00::b1\"},"
    "{\"id\":\"c\",\"src\":\"IF-1\",\"dst\":\"P2\",\"igp_metric\":30,"
    "\"te_metric\":1,\"delay_us\":50,\"max_bw\":1000,\"adj_label\":24003},"
    "{\"id\":\"d\",\"src\":\"P2\",\"dst\":\"EF-2\",\"igp_metric\":30,"
    "\"delay_us\":50,\"adj_label\":24004,\"directed\":true}]}";

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
