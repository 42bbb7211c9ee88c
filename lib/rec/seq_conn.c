/*
 * seq_conn.c - a record stream on each connection of a listener (seq.h,
 * net/listener.h).
 */
#include <stdlib.h>

#include "net/listener.h"
#include "rec/seq.h"

void *
cats_sconn_accept(struct event_base *base, struct cats_conn *lc, int fd,
    size_t size, const struct cats_stream_cbs *cbs, struct cats_dec *dec)
{
	struct cats_sconn *c = calloc(1, size);
	if (c == NULL)
		return NULL;
	c->lc = lc;
	c->st = cats_stream_new(base, fd, fd, false, NULL, 0, cbs, c);
	if (c->st == NULL) {
		free(c);
		return NULL;
	}
	if (dec != NULL)
		cats_stream_decode_into(c->st, dec);
	cats_stream_own(c->st);
	cats_conn_set_data(lc, c);
	return c;
}

void
cats_sconn_free(void *obj)
{
	struct cats_sconn *c = obj;
	cats_stream_free(c->st);
	free(c);
}

void
cats_sconn_end(void *obj)
{
	struct cats_sconn *c = obj;
	cats_stream_flush(c->st);
	cats_conn_release(c->lc);
	cats_sconn_free(c);
}

void
cats_sconn_eof(struct cats_stream *s, int error, void *arg)
{
	(void)s;
	(void)error;
	cats_sconn_end(arg);
}

void
cats_sconn_closed(struct cats_conn *lc, int why, void *arg)
{
	(void)why;
	(void)arg;
	cats_sconn_free(cats_conn_data(lc));
}
