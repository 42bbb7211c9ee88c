/*
 * fuzz_path_rep.c - path replies (and the requests, decisions, errors and
 * metrics around them) into the binding table: decoding, the join, path
 * construction, limits, the state machine; every record sent must be
 * valid and the table's invariants must hold after each input record.
 */
#include "fuzz_bind_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bind_table *t = fz_table();
	fz_apply(t, data, size, true);
	bind_free(t);
	return 0;
}
