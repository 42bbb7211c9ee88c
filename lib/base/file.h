/*
 * file.h - opening the files a tool is given by name (keys, configuration,
 * topologies, journal segments, start-up records): regular files only.
 *
 * A FIFO, a device, a socket or a directory where a file is expected is
 * refused with one line ("PATH: not a regular file (a FIFO)"), and without
 * blocking: the open is non-blocking, so that a FIFO with no writer (or,
 * for writing, no reader) does not hang the tool, and /dev/zero is never
 * read as an endless or empty file.  A symbolic link to a regular file is
 * followed.
 */
#ifndef CATS_FILE_H
#define CATS_FILE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * open(2) of path (relative to dirfd, or AT_FDCWD) with flags (O_CLOEXEC
 * and O_NOCTTY are added) and mode, refusing what is not a regular file.
 * The descriptor returned is blocking.  -1 with err "SHOWN: reason" and
 * errno set (that of open(2), EINVAL for another kind of file); shown
 * names the file in err (NULL: path).
 */
int cats_file_openat(int dirfd, const char *path, int flags, mode_t mode,
    const char *shown, char *err, size_t errlen);
/* The same from the working directory, read-only. */
int cats_file_open(const char *path, char *err, size_t errlen);
/*
 * The whole of a regular file of at most max bytes, NUL-terminated, in
 * *buf (free it) and *len.  -1 with err "PATH: reason".
 */
int cats_file_read(const char *path, size_t max, char **buf, size_t *len,
    char *err, size_t errlen);
/* "a FIFO", "a directory", ... for a st_mode. */
const char *cats_file_kind(mode_t mode);

#endif
