/*
 * bind_journal.c - journal segments, snapshots, restore (bind_journal.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/file.h"
#include "bind/bind_journal.h"
#include "rec/seq.h"
#include "base/tool.h"

const char *const bj_fsync_names[] = { "always", "interval", "never", NULL };

#define OUT_HIGH (1u << 20)

struct bj {
	char *dir;
	bool readonly;
	int policy;
	int lockfd, fd, dirfd;
	uint64_t seq;		/* the segment appended to */
	bool dirty;		/* written since the last fdatasync */
	struct cats_buf out;	/* records queued */
	/* A commit begun (bj_commit_begin) and not ended: its records (fly)
	 * and what its work did, touched by that work alone meanwhile. */
	bool busy;
	struct cats_buf fly;
	int fly_err;
	uint64_t fly_syncs;
	bool want_sync;		/* the next commit syncs (bj_want_sync) */
	bool fly_sync;		/* this one does */
	struct bj_stats st;
	uint64_t snap_min;
	pid_t child;		/* a snapshot being written in the background */
	uint64_t child_seq;
};

static void
seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

struct bj *
bj_open(const char *dir, bool readonly, int policy, char *err, size_t errlen)
{
	struct bj *j = calloc(1, sizeof(*j));
	if (j == NULL) {
		seterr(err, errlen, "out of memory");
		return NULL;
	}
	j->readonly = readonly;
	j->policy = policy;
	j->lockfd = j->fd = j->dirfd = -1;
	j->snap_min = 64u << 20;
	j->dir = strdup(dir);
	if (j->dir == NULL)
		goto nomem;
	if (!readonly && mkdir(dir, 0700) < 0 && errno != EEXIST) {
		seterr(err, errlen, "%s: %s", dir, strerror(errno));
		goto fail;
	}
	j->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (j->dirfd < 0) {
		seterr(err, errlen, "%s: %s", dir, strerror(errno));
		goto fail;
	}
	if (!readonly) {
		char shown[4200];
		snprintf(shown, sizeof(shown), "%s/lock", dir);
		j->lockfd = cats_file_openat(j->dirfd, "lock", O_RDWR | O_CREAT,
		    0600, shown, err, errlen);
		if (j->lockfd < 0)
			goto fail;
		if (flock(j->lockfd, LOCK_EX | LOCK_NB) < 0) {
			seterr(err, errlen, "%s: in use by another cats-bind "
			    "(%s)", dir, strerror(errno));
			goto fail;
		}
	}
	return j;
nomem:
	seterr(err, errlen, "out of memory");
fail:
	bj_close(j);
	return NULL;
}

void
bj_close(struct bj *j)
{
	if (j == NULL)
		return;
	bj_snapshot_wait(j, true);
	if (j->fd >= 0) {
		bj_commit(j);
		if (j->dirty && j->policy != BJ_FSYNC_NEVER)
			fdatasync(j->fd);
		close(j->fd);
	}
	if (j->lockfd >= 0)
		close(j->lockfd);
	if (j->dirfd >= 0)
		close(j->dirfd);
	cats_buf_free(&j->out);
	cats_buf_free(&j->fly);
	free(j->dir);
	free(j);
}

const struct bj_stats *
bj_stats(const struct bj *j)
{
	return &j->st;
}

void
bj_set_snapshot_min(struct bj *j, uint64_t min_bytes)
{
	j->snap_min = min_bytes;
}

static void
apply(struct bind_table *t, const struct cats_rec *r, uint64_t now,
    struct bj_stats *st, int *last, uint64_t *seq)
{
	if (bind_restore(t, r, now) == BR_OK)
		st->restored++;
	else
		st->refused++;
	if (r->type == CATS_T_STATS && seq != NULL)
		for (size_t i = 0; i < r->u.stats.counters.n; i++)
			if (strcmp(r->u.stats.counters.v[i].k, "seq") == 0)
				*seq = r->u.stats.counters.v[i].v;
	*last = (int)r->type;
}

/*
 * Apply the whole records that start before stop in p[0..n): a record is
 * scanned within min(n - off, max_record) bytes, so a caller that stops
 * max_record short of a buffer's end sees what a scan of the whole file
 * sees.  Returns the offset reached; *bad when a record there is not whole
 * and valid (why says why).  Records are decoded one ahead of the one
 * applied (d[2] takes turns), so that the table's memory for a record is
 * on its way while the next one is decoded; they are applied in order,
 * and all those before a bad one are.
 */
static size_t
replay_run(struct cats_dec d[2], struct bind_table *t, const uint8_t *p,
    size_t n, size_t stop, uint64_t now, struct bj_stats *st, int *last,
    uint64_t *seq, bool *bad, struct cats_err *why)
{
	struct cats_rec r[2];
	size_t off = 0;
	int pend = -1;		/* the record decoded, not applied yet */
	*bad = false;
	while (off < stop) {
		int k = pend == 0 ? 1 : 0;
		size_t used = 0, need = 0, left = n - off;
		struct cats_err e;
		e.offset = 0;
		e.field[0] = e.reason[0] = '\0';
		cats_arena_reset(&d[k].arena);
		if (left > d[k].lim.max_record)
			left = d[k].lim.max_record;
		int s = cats_scan(p + off, left, true, &d[k].lim, &d[k].toks,
		    &d[k].arena, &used, &need, &e);
		if (s != CATS_SCAN_OK || cats_rec_from_toks(&d[k], &r[k],
		    &e) < 0) {
			if (why != NULL) {
				*why = e;
				why->offset = off;
			}
			*bad = true;
			break;
		}
		bind_restore_prefetch(t, &r[k]);
		if (pend >= 0)
			apply(t, &r[pend], now, st, last, seq);
		pend = k;
		off += used;
	}
	if (pend >= 0)
		apply(t, &r[pend], now, st, last, seq);
	return off;
}

size_t
bj_replay(struct bind_table *t, const uint8_t *p, size_t n, uint64_t now,
    struct bj_stats *st, int *last, uint64_t *seq, struct cats_err *why)
{
	struct cats_dec d[2];
	bool bad;
	*last = -1;
	cats_dec_init(&d[0], NULL);
	cats_dec_init(&d[1], NULL);
	size_t off = replay_run(d, t, p, n, n, now, st, last, seq, &bad, why);
	cats_dec_free(&d[0]);
	cats_dec_free(&d[1]);
	return off;
}

#define READ_BLOCK ((size_t)4 << 20)

/*
 * bj_replay() of a whole file, read in blocks into one buffer that stays
 * in the cache (a mapping of a 500 MB journal costs a page fault per few
 * pages).  Returns the bytes before the first record that is not whole and
 * valid, or -1 with errno on a read error.
 */
static ssize_t
replay_file(int fd, struct bind_table *t, uint64_t now, struct bj_stats *st,
    int *last, uint64_t *seq, struct cats_err *why)
{
	struct cats_dec d[2];
	cats_dec_init(&d[0], NULL);
	cats_dec_init(&d[1], NULL);
	size_t cap = READ_BLOCK + d[0].lim.max_record, have = 0, base = 0;
	uint8_t *buf = malloc(cap);
	ssize_t rc = -1;
	bool eof = false, bad = false;
	*last = -1;
	if (buf == NULL)
		goto out;
	while (!bad) {
		while (!eof && have < cap) {
			ssize_t got = read(fd, buf + have, cap - have);
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0)
				goto out;
			if (got == 0)
				eof = true;
			have += (size_t)got;
		}
		size_t stop = eof ? have : have - d[0].lim.max_record;
		size_t off = replay_run(d, t, buf, have, stop, now, st, last,
		    seq, &bad, why);
		if (bad && why != NULL)
			why->offset += base;
		memmove(buf, buf + off, have - off);
		base += off;
		have -= off;
		if (eof && !bad && have == 0)
			break;
	}
	rc = (ssize_t)base;
out:
	free(buf);
	cats_dec_free(&d[0]);
	cats_dec_free(&d[1]);
	return rc;
}

/* The size of an open file (0 if unknown). */
static size_t
file_size(int fd)
{
	struct stat sb;
	if (fstat(fd, &sb) < 0 || sb.st_size <= 0)
		return 0;
	return (size_t)sb.st_size;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The segment numbers in the directory, sorted. */
static int
list_segments(struct bj *j, uint64_t **out, size_t *n)
{
	int fd = openat(j->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dp = fd >= 0 ? fdopendir(fd) : NULL;
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	if (dp == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	struct dirent *de;
	while ((de = readdir(dp)) != NULL) {
		const char *s = de->d_name;
		if (strncmp(s, "journal.", 8) != 0 || strlen(s + 8) != 16 ||
		    strspn(s + 8, "0123456789abcdef") != 16)
			continue;
		if (cats_grow((void **)out, &cap, *n, sizeof(**out), 16) < 0) {
			closedir(dp);
			return -1;
		}
		(*out)[(*n)++] = strtoull(s + 8, NULL, 16);
	}
	closedir(dp);
	if (*n > 1)
		qsort(*out, *n, sizeof(**out), cmp_u64);
	return 0;
}

static void
seg_name(uint64_t seq, char *buf, size_t len)
{
	snprintf(buf, len, "journal.%016" PRIx64, seq);
}

/*
 * How many bindings the snapshot says it holds: its trailer, the last
 * record, read from the file's tail.  Only a hint for sizing the indexes
 * (0 if not found); the trailer is checked again when it is replayed.
 */
static size_t
snapshot_hint(int fd, size_t size)
{
	uint8_t tail[1024];
	size_t len = size < sizeof(tail) ? size : sizeof(tail), hint = 0;
	if (len == 0 || pread(fd, tail, len, (off_t)(size - len)) !=
	    (ssize_t)len)
		return 0;
	struct cats_dec d;
	struct cats_rec r;
	struct cats_err e;
	cats_dec_init(&d, NULL);
	for (size_t off = 0; off < len && hint == 0; off++) {
		if ((tail[off] >> 5) != 5 ||
		    cats_rec_decode(&d, tail + off, len - off, &r, &e) < 0 ||
		    r.type != CATS_T_STATS)
			continue;
		for (size_t i = 0; i < r.u.stats.counters.n; i++)
			if (strcmp(r.u.stats.counters.v[i].k, "bindings") == 0)
				hint = (size_t)r.u.stats.counters.v[i].v;
		break;
	}
	cats_dec_free(&d);
	/* A binding record takes more than 64 bytes. */
	return hint < size / 64 ? hint : size / 64;
}

/* Load the snapshot if there is one: 0 none, 1 loaded (*seq), -1 corrupt. */
static int
load_snapshot(struct bj *j, struct bind_table *t, uint64_t now,
    uint64_t *seq, char *err, size_t errlen)
{
	char shown[4200];
	snprintf(shown, sizeof(shown), "%s/snapshot", j->dir);
	int fd = cats_file_openat(j->dirfd, "snapshot", O_RDONLY, 0, shown, err,
	    errlen);
	*seq = 0;
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	size_t n = file_size(fd);
	struct cats_err why;
	memset(&why, 0, sizeof(why));
	int last = -1;
	uint64_t s = UINT64_MAX;
	bind_reserve(t, snapshot_hint(fd, n));
	ssize_t got = replay_file(fd, t, now, &j->st, &last, &s, &why);
	close(fd);
	if (got < 0) {
		seterr(err, errlen, "%s/snapshot: %s", j->dir, strerror(errno));
		return -1;
	}
	size_t good = (size_t)got;
	if (good != n || last != CATS_T_STATS || s == UINT64_MAX) {
		seterr(err, errlen, "%s/snapshot: corrupt or incomplete at "
		    "byte %zu of %zu (%s); move it away to restore from the "
		    "journal segments alone", j->dir, good, n,
		    why.reason[0] ? why.reason : "no trailer");
		return -1;
	}
	j->st.snapshot_bytes = n;
	*seq = s;
	return 1;
}

int
bj_restore(struct bj *j, struct bind_table *t, uint64_t now, char *err,
    size_t errlen)
{
	uint64_t snap_seq = 0;
	if (load_snapshot(j, t, now, &snap_seq, err, errlen) < 0)
		return -1;
	uint64_t *segs;
	size_t nsegs;
	if (list_segments(j, &segs, &nsegs) < 0) {
		seterr(err, errlen, "%s: %s", j->dir, strerror(errno));
		return -1;
	}
	j->seq = snap_seq;
	/*
	 * Size the indexes for what the segments may hold (a binding and its
	 * commit take some 500 bytes); bind_trim() below gives back what
	 * removals in them made too much.
	 */
	uint64_t jbytes = 0;
	for (size_t i = 0; i < nsegs; i++) {
		char name[32];
		struct stat sb;
		seg_name(segs[i], name, sizeof(name));
		if (segs[i] >= snap_seq && fstatat(j->dirfd, name, &sb, 0) == 0 &&
		    sb.st_size > 0)
			jbytes += (uint64_t)sb.st_size;
	}
	bind_reserve(t, (size_t)(jbytes / 512));
	for (size_t i = 0; i < nsegs; i++) {
		char name[32];
		seg_name(segs[i], name, sizeof(name));
		if (segs[i] < snap_seq) {
			/* Covered by the snapshot; left over by a crash. */
			if (!j->readonly)
				unlinkat(j->dirfd, name, 0);
			continue;
		}
		char shown[4200];
		snprintf(shown, sizeof(shown), "%s/%s", j->dir, name);
		int fd = cats_file_openat(j->dirfd, name, j->readonly ?
		    O_RDONLY : O_RDWR, 0, shown, err, errlen);
		if (fd < 0) {
			free(segs);
			return -1;
		}
		size_t n = file_size(fd);
		struct cats_err why;
		memset(&why, 0, sizeof(why));
		int last;
		ssize_t got = replay_file(fd, t, now, &j->st, &last, NULL, &why);
		if (got < 0) {
			seterr(err, errlen, "%s/%s: %s", j->dir, name,
			    strerror(errno));
			close(fd);
			free(segs);
			return -1;
		}
		size_t good = (size_t)got;
		j->st.segments++;
		if (good != n) {
			if (i + 1 < nsegs) {
				seterr(err, errlen, "%s/%s: corrupt at byte "
				    "%zu of %zu (%s), and later segments "
				    "follow", j->dir, name, good, n,
				    why.reason);
				close(fd);
				free(segs);
				return -1;
			}
			/* A torn tail: dropped whole, never half applied. */
			j->st.torn++;
			j->st.torn_bytes += n - good;
			if (!j->readonly && (ftruncate(fd, (off_t)good) < 0 ||
			    fsync(fd) < 0)) {
				seterr(err, errlen, "%s/%s: truncating the torn "
				    "tail: %s", j->dir, name, strerror(errno));
				close(fd);
				free(segs);
				return -1;
			}
		}
		close(fd);
		if (segs[i] > j->seq)
			j->seq = segs[i];
	}
	free(segs);
	bind_trim(t);
	return 0;
}

/* Start segment seq; the directory entry is synced before returning. */
static int
open_segment(struct bj *j, uint64_t seq, char *err, size_t errlen)
{
	char name[32];
	seg_name(seq, name, sizeof(name));
	char shown[4200];
	snprintf(shown, sizeof(shown), "%s/%s", j->dir, name);
	int fd = cats_file_openat(j->dirfd, name, O_WRONLY | O_CREAT | O_APPEND,
	    0600, shown, err, errlen);
	if (fd < 0)
		return -1;
	if (fsync(j->dirfd) < 0) {
		seterr(err, errlen, "%s: fsync: %s", j->dir, strerror(errno));
		close(fd);
		return -1;
	}
	if (j->fd >= 0)
		close(j->fd);
	j->fd = fd;
	j->seq = seq;
	return 0;
}

static void
hello_rec(struct cats_rec *r, const char *self, uint64_t epoch, uint64_t now)
{
	cats_rec_init(r, CATS_T_STATUS);
	r->u.status.fwd = self;
	r->u.status.event = CATS_EV_HELLO;
	r->u.status.ts = now;
	CATS_SET(&r->u.status, STA, epoch, epoch);
}

int
bj_start(struct bj *j, struct bind_table *t, uint64_t now, char *err,
    size_t errlen)
{
	struct cats_rec r;
	if (j->readonly) {
		seterr(err, errlen, "journal opened read-only");
		return -1;
	}
	bind_set_epoch(t, bind_epoch(t) + 1);
	if (open_segment(j, j->seq + 1, err, errlen) < 0)
		return -1;
	hello_rec(&r, bind_self(t), bind_epoch(t), now);
	/* The new epoch is durable before any forwarder hears of it. */
	if (bj_append(j, &r) < 0 || bj_commit(j) < 0 || bj_sync(j) < 0) {
		seterr(err, errlen, "%s: writing the epoch: %s", j->dir,
		    strerror(errno));
		return -1;
	}
	return 0;
}

int
bj_append(struct bj *j, const struct cats_rec *r)
{
	size_t before = j->out.len;
	if (j->readonly || cats_rec_encode(r, &j->out, false) < 0)
		return -1;
	j->st.records++;
	j->st.bytes += j->out.len - before;
	j->st.since_snapshot += j->out.len - before;
	/* Not while a commit's work may be writing: it ends first. */
	if (j->out.len >= OUT_HIGH && !j->busy)
		return bj_commit(j) < 0 ? -1 : 0;
	return 0;
}

size_t
bj_queued(const struct bj *j)
{
	return j->out.len;
}

/*
 * A commit in three steps, so that its write and sync may run off the
 * loop: begin takes the queued records (after those of a commit whose
 * write failed: they are written first, in order), work writes them and
 * syncs under BJ_FSYNC_ALWAYS, end counts.  Records are whole in the
 * buffer; a write that fails part-way leaves a torn tail that restore
 * drops.
 */
int
bj_commit_begin(struct bj *j, bool covers)
{
	if (j->fly.len == 0) {
		struct cats_buf t = j->fly;
		j->fly = j->out;
		j->out = t;
	} else if (j->out.len > 0) {
		if (cats_buf_add(&j->fly, j->out.p, j->out.len) < 0)
			return -1;
	}
	j->out.len = 0;
	j->busy = true;
	j->fly_err = 0;
	/* A covering batch syncs what it writes (and all before it); one
	 * that writes nothing syncs nothing: what covered its output was
	 * synced by its own batch, and a status's record is not worth a
	 * sync in a flow's way. */
	j->fly_sync = (j->policy == BJ_FSYNC_ALWAYS && covers &&
	    j->fly.len > 0) || (j->want_sync && (j->fly.len > 0 || j->dirty));
	j->want_sync = false;
	/* A sync is slow (the worker's); a write to the page cache is not. */
	return j->fly_sync;
}

void
bj_want_sync(struct bj *j)
{
	if (j->policy != BJ_FSYNC_NEVER)
		j->want_sync = true;
}

int
bj_commit_work(struct bj *j)
{
	if (j->fly.len > 0) {
		if (j->fd < 0 ||
		    cats_write_all(j->fd, j->fly.p, j->fly.len) < 0) {
			j->fly_err = j->fd < 0 ? EBADF : errno;
			return -1;
		}
		j->fly.len = 0;
		j->dirty = true;
	}
	if (j->fly_sync && j->dirty && j->fd >= 0) {
		if (fdatasync(j->fd) < 0) {
			j->fly_err = errno;
			return -1;
		}
		j->dirty = false;
		j->fly_syncs++;
	}
	return 0;
}

int
bj_commit_end(struct bj *j, int rc)
{
	j->busy = false;
	j->st.fsyncs += j->fly_syncs;
	j->fly_syncs = 0;
	if (rc < 0)
		errno = j->fly_err ? j->fly_err : EIO;
	return rc < 0 ? -1 : 0;
}

int
bj_commit(struct bj *j)
{
	if (bj_commit_begin(j, true) < 0) {
		j->busy = false;
		return -1;
	}
	return bj_commit_end(j, bj_commit_work(j));
}

int
bj_sync(struct bj *j)
{
	if (!j->dirty || j->fd < 0)
		return 0;
	if (fdatasync(j->fd) < 0)
		return -1;
	j->dirty = false;
	j->st.fsyncs++;
	return 0;
}

bool
bj_snapshot_due(const struct bj *j)
{
	uint64_t lim = 2 * j->st.snapshot_bytes;
	if (lim < j->snap_min)
		lim = j->snap_min;
	return !j->readonly && j->st.since_snapshot > lim;
}

struct snap {
	int fd;
	struct cats_buf b;
	uint64_t n;
	int err;
};

static void
snap_put(struct snap *s, const struct cats_rec *r)
{
	if (s->err)
		return;
	if (cats_rec_encode(r, &s->b, false) < 0) {
		s->err = EINVAL;
		return;
	}
	if (s->b.len >= OUT_HIGH) {
		if (cats_write_all(s->fd, s->b.p, s->b.len) < 0)
			s->err = errno;
		s->b.len = 0;
	}
}

static void
snap_binding(void *arg, const struct cats_rec *r)
{
	struct snap *s = arg;
	snap_put(s, r);
	s->n++;
}

/*
 * Write the snapshot of t as of segment seq, then delete the segments it
 * covers.  Returns 0 or an errno value.
 */
static int
write_snapshot(struct bj *j, struct bind_table *t, uint64_t seq, uint64_t now,
    uint64_t *records, uint64_t *size)
{
	struct snap s = { .fd = -1 };
	struct cats_rec r;
	s.fd = openat(j->dirfd, "snapshot.tmp", O_WRONLY | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0600);
	if (s.fd < 0)
		return errno;
	hello_rec(&r, bind_self(t), bind_epoch(t), now);
	snap_put(&s, &r);
	bind_foreach(t, (1u << CATS_FS_BINDING_READY) |
	    (1u << CATS_FS_ACTIVE), now, snap_binding, &s);
	struct cats_kv kv[] = {
		{ "seq", seq }, { "next_id", bind_next_id(t) },
		{ "epoch", bind_epoch(t) }, { "bindings", s.n },
	};
	cats_stats_rec(&r, "cats-bind", bind_self(t), kv, CATS_ARRAY_LEN(kv),
	    now);
	snap_put(&s, &r);
	if (!s.err && s.b.len > 0 && cats_write_all(s.fd, s.b.p, s.b.len) < 0)
		s.err = errno;
	struct stat sb;
	if (!s.err && (fsync(s.fd) < 0 || fstat(s.fd, &sb) < 0))
		s.err = errno;
	else if (!s.err)
		*size = (uint64_t)sb.st_size;
	close(s.fd);
	cats_buf_free(&s.b);
	if (!s.err && renameat(j->dirfd, "snapshot.tmp", j->dirfd,
	    "snapshot") < 0)
		s.err = errno;
	if (!s.err && fsync(j->dirfd) < 0)
		s.err = errno;
	if (s.err) {
		unlinkat(j->dirfd, "snapshot.tmp", 0);
		return s.err;
	}
	/* The segments the snapshot covers go. */
	uint64_t *segs;
	size_t nsegs;
	if (list_segments(j, &segs, &nsegs) == 0) {
		for (size_t i = 0; i < nsegs; i++) {
			if (segs[i] >= seq)
				continue;
			char name[32];
			seg_name(segs[i], name, sizeof(name));
			unlinkat(j->dirfd, name, 0);
		}
		free(segs);
	}
	*records = s.n;
	return 0;
}

/* Everything so far is in segments <= seq; new records go after. */
static int
cut_segment(struct bj *j, char *err, size_t errlen)
{
	if (j->readonly) {
		seterr(err, errlen, "journal opened read-only");
		return -1;
	}
	if (bj_commit(j) < 0 || bj_sync(j) < 0) {
		seterr(err, errlen, "%s: %s", j->dir, strerror(errno));
		return -1;
	}
	return open_segment(j, j->seq + 1, err, errlen);
}

int
bj_snapshot(struct bj *j, struct bind_table *t, uint64_t now, char *err,
    size_t errlen)
{
	uint64_t n = 0, size = 0;
	bj_snapshot_wait(j, true);
	if (cut_segment(j, err, errlen) < 0)
		return -1;
	int e = write_snapshot(j, t, j->seq, now, &n, &size);
	if (e) {
		seterr(err, errlen, "%s/snapshot: %s", j->dir, strerror(e));
		return -1;
	}
	j->st.snapshots++;
	j->st.snapshot_records = n;
	j->st.snapshot_bytes = size;
	j->st.since_snapshot = 0;
	return 0;
}

int
bj_snapshot_async(struct bj *j, struct bind_table *t, uint64_t now,
    char *err, size_t errlen)
{
	if (j->child > 0)
		return 0;	/* one at a time */
	if (cut_segment(j, err, errlen) < 0)
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		/* No child: write it here and now. */
		return bj_snapshot(j, t, now, err, errlen);
	}
	if (pid == 0) {
		/* The child sees the table as of the cut, copy-on-write. */
		uint64_t n = 0, size = 0;
		_exit(write_snapshot(j, t, j->seq, now, &n, &size) ? 1 : 0);
	}
	j->child = pid;
	j->child_seq = j->seq;
	/* Its size is unknown here; assume what the table grew to. */
	j->st.since_snapshot = 0;
	return 0;
}

int
bj_snapshot_wait(struct bj *j, bool block)
{
	int status;
	if (j->child <= 0)
		return 0;
	pid_t r = waitpid(j->child, &status, block ? 0 : WNOHANG);
	if (r == 0)
		return 1;	/* still writing */
	j->child = 0;
	if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	struct stat sb;
	if (fstatat(j->dirfd, "snapshot", &sb, 0) == 0)
		j->st.snapshot_bytes = (uint64_t)sb.st_size;
	j->st.snapshots++;
	return 0;
}
