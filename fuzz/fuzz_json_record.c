/*
 * fuzz_json_record.c - JSON text to record: never a crash.
 */
#include "rec/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cats_dec d;
	static bool init;
	if (!init) {
		cats_dec_init(&d, NULL);
		init = true;
	}
	json_error_t je;
	json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY |
	    JSON_ALLOW_NUL, &je);
	if (j == NULL)
		return 0;
	struct cats_rec r;
	struct cats_err e;
	if (cats_rec_from_json(&d, j, &r, &e) == 0) {
		json_t *back = cats_rec_to_json(&r);
		if (back == NULL)
			__builtin_trap();
		json_decref(back);
	}
	json_decref(j);
	return 0;
}
