/*
 * fuzz_topology - the topology loader (cats-topology(5)) on arbitrary
 * bytes, then paths over whatever it accepted.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pce/cspf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cats_cspf_ws *ws;
	struct cats_te_limits lim = {
		.max_file = 1 << 20, .max_nodes = 512, .max_links = 1024,
	};
	char err[512];
	struct cats_te *te = cats_te_load_mem((const char *)data, size, &lim, 1,
	    err, sizeof(err));
	if (te == NULL) {
		/* A refusal is one line naming something. */
		if (err[0] == '\0' || memchr(err, '\n', strlen(err)) != NULL)
			abort();
		return 0;
	}
	if (ws == NULL)
		ws = cats_cspf_ws_new();
	uint32_t n = cats_te_nodes(te);
	for (uint32_t k = 0; k < 4 && n > 1; k++) {
		struct cats_cspf_req q;
		struct cats_cspf_res r;
		cats_cspf_req_init(&q, k % n, (n - 1 - k) % n);
		q.dataplane = (int)(k % 4);
		q.metric = (int)(k % 4);
		if (k == 3) {
			q.max_delay_us = 1000;
			q.max_hops = 3;
			q.max_labels = 1000;
		}
		if (cats_cspf(te, ws, &q, &r) < 0)
			abort();
		if (r.status == CATS_CSPF_OK && (r.nodes == NULL ||
		    r.nodes[0] != q.src || r.nodes[r.hops] != q.dst))
			abort();
	}
	cats_te_free(te);
	return 0;
}
