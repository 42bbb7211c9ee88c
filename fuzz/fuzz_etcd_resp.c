/*
 * fuzz_etcd_resp.c - etcd's answers (untrusted: lib/ha/etcd.h): the first
 * byte picks the call they answer, the rest is the body; under small caps
 * too, so that every cap is reached.  A decoded answer is formatted, so
 * that every key and value it points to is read.  A first byte with 0x40
 * set makes the rest a value cats-bind wrote, a log entry (ha/ha_log.h):
 * its header, its deflated records and each record decoded; with 0x20 set
 * too, a chunk: decoded, then merged into a set of buckets (ha/ha_fold.h)
 * holding a binding of its range from a later entry.
 */
#include <stdint.h>
#include <stdlib.h>

#include "ha/etcd.h"
#include "ha/ha_fold.h"
#include "ha/ha_log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
each(void *arg, const struct cats_rec *r, const uint8_t *v, size_t n)
{
	size_t *count = arg;
	(void)r;
	*count += n > 0;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct etcd_resp r;
	struct etcd_limits lim;
	struct cats_buf out = { 0 };
	char err[256];
	if (size < 1)
		return 0;
	if (data[0] & 0x40) {
		static struct cats_dec d;
		static struct cats_buf raw;
		static int init;
		struct ha_log_hdr h;
		struct cats_err e;
		size_t count = 0;
		if (!init) {
			cats_dec_init(&d, NULL);
			init = 1;
		}
		if (!(data[0] & 0x20)) {
			ha_log_decode(&d, data + 1, size - 1, &raw, &h, each,
			    &count, &e);
			return 0;
		}
		struct ha_chunk_hdr ch;
		if (ha_chunk_decode(&d, data + 1, size - 1, &raw, &ch, each,
		    &count, &e) != 0)
			return 0;
		struct ha_fold_set s = { 0 };
		uint8_t v = 0xf6;
		ha_fold_put(&s, ch.lo, ch.seq + 1, false, &v, 1);
		ha_fold_chunk(&s, &d, data + 1, size - 1, ch.lo, &raw, &ch, &e);
		ha_fold_free(&s);
		return 0;
	}
	etcd_limits_default(&lim);
	if (data[0] & 0x80) {
		lim.max_kvs = 2;
		lim.max_key = 4;
		lim.max_value = 4;
		lim.max_responses = 2;
		lim.max_body = 512;
	}
	int kind = (data[0] & 0x7f) % ETCD__N;
	if (etcd_parse(&lim, kind, (const char *)data + 1, size - 1, &r, err,
	    sizeof(err)) == 0)
		etcd_resp_fmt(&r, &out);
	cats_buf_free(&out);
	return 0;
}
