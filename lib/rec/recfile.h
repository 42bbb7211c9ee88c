/*
 * recfile.h - start-up record files (cats-select's --services, --metrics,
 * --net, ...): a CBOR Sequence or JSON Lines, the first byte tells (records
 * are maps, and no CBOR map starts with '{' or a blank).
 *
 * Bounded as input from anyone: regular files only (base/file.h); a CBOR
 * item over the decoder's record cap (d->lim.max_record), or a JSON line
 * over 4 x that cap, is refused before it is parsed (the line is skipped
 * unread to its end); each bad record is one line (PATH: record N: ...)
 * and counted, and after max_bad of them the file is given up.
 */
#ifndef CATS_RECFILE_H
#define CATS_RECFILE_H

#include "rec/rec.h"

/* One good record: 0, or -1 to count it bad (the callback said why). */
typedef int (*cats_recfile_fn)(const struct cats_rec *r, uint64_t index,
    void *arg);

struct cats_recfile_res {
	uint64_t records, bad;
	bool opened;		/* false: missing or not a regular file */
	bool gave_up;		/* stopped after max_bad bad records */
};

/*
 * Read path, decoding into d and handing each record to fn.  0 when the
 * whole file was read (res->bad may be above 0); -1 with err when it
 * could not be opened or read, or was given up.
 */
int cats_recfile_load(const char *path, struct cats_dec *d, uint64_t max_bad,
    cats_recfile_fn fn, void *arg, struct cats_recfile_res *res, char *err,
    size_t errlen);

#endif
