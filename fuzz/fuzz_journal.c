/*
 * fuzz_journal.c - the journal reader: any bytes as a journal segment or a
 * snapshot.  The reader must stop at the first item that is not a whole
 * valid record, apply nothing of it, keep the table consistent, and every
 * binding it restored must come out again as a valid record.
 */
#include "bind/bind_journal.h"
#include "fuzz_bind_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
out(void *arg, const struct cats_rec *r)
{
	(void)arg;
	fz_send(NULL, r, NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bind_conf c;
	bind_conf_default(&c);
	c.closed_memory = 64;
	static const struct bind_io io = { fz_send, NULL, NULL, NULL, NULL };
	struct bind_table *t = bind_new(&c, &io);
	struct bj_stats st;
	int last;
	uint64_t seq = 0;
	memset(&st, 0, sizeof(st));
	size_t good = bj_replay(t, data, size, 5000, &st, &last, &seq, NULL);
	if (good > size)
		abort();
	fz_check(t);
	bind_foreach(t, 0xff, 5000, out, NULL);
	/* The restored table works: a forwarder comes back, time passes. */
	bind_fwd_hello(t, "IF-1", 2, 6000);
	fz_check(t);
	bind_tick(t, 6000 + 3600 * 1000);
	fz_check(t);
	bind_free(t);
	return 0;
}
