/*
 * file.c - regular files only (file.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"

const char *
cats_file_kind(mode_t mode)
{
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISREG(mode))
		return "a regular file";
	return "not a file";
}

int
cats_file_openat(int dirfd, const char *path, int flags, mode_t mode,
    const char *shown, char *err, size_t errlen)
{
	struct stat st;
	const char *name = shown ? shown : path;
	int fd = openat(dirfd, path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
	    mode);
	if (fd < 0) {
		int e = errno;
		/* O_WRONLY on a FIFO without a reader, or a socket. */
		if ((e == ENXIO || e == EOPNOTSUPP) &&
		    fstatat(dirfd, path, &st, 0) == 0 && !S_ISREG(st.st_mode))
			snprintf(err, errlen, "%s: not a regular file (%s)",
			    name, cats_file_kind(st.st_mode));
		else
			snprintf(err, errlen, "%s: %s", name, strerror(e));
		errno = e;
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = errno;
		if (fstat(fd, &st) == 0)
			snprintf(err, errlen, "%s: not a regular file (%s)",
			    name, cats_file_kind(st.st_mode));
		else
			snprintf(err, errlen, "%s: %s", name, strerror(e));
		close(fd);
		errno = EINVAL;
		return -1;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

int
cats_file_open(const char *path, char *err, size_t errlen)
{
	return cats_file_openat(AT_FDCWD, path, O_RDONLY, 0, NULL, err,
	    errlen);
}

int
cats_file_read(const char *path, size_t max, char **buf, size_t *len,
    char *err, size_t errlen)
{
	struct stat st;
	*buf = NULL;
	*len = 0;
	int fd = cats_file_open(path, err, errlen);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size > max) {
		snprintf(err, errlen, "%s: over %zu bytes", path, max);
		close(fd);
		return -1;
	}
	size_t n = (size_t)st.st_size, got = 0;
	char *p = malloc(n + 1);
	while (p != NULL && got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	if (p == NULL || got != n) {
		snprintf(err, errlen, "%s: %s", path, p == NULL ? "out of memory"
		    : "read failed (the file changed while read)");
		free(p);
		return -1;
	}
	p[n] = '\0';
	*buf = p;
	*len = n;
	return 0;
}
