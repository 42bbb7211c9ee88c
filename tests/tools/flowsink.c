/*
 * flowsink - the receiving end of flowgen: counts the distinct flows (source
 * address and port) that reach ADDR:PORT within SECONDS and prints
 *
 *   flows p50_us p99_us span_s
 *
 * where the delays are first-packet one-way delays (the kernel's receive
 * time, SO_TIMESTAMPNS, minus the send time flowgen put in the payload; one
 * clock, the machine's, shared by every namespace) and the span runs from
 * the first flow's arrival to the last one's.  The receive time is the
 * kernel's, so the sink's own pace does not enter the figures, and being
 * C it takes little of the CPUs the forwarders share (bench/fwd_udp.py's
 * sink took about a seventh of the work of a burst).  With SAMPLES, every
 * delay the percentiles are taken from goes to that file too (us, sorted,
 * one per line) for bench/plot.sh.
 *
 * usage: flowsink ADDR PORT SECONDS [SAMPLES]
 */
#include <arpa/inet.h>
#include <endian.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define SEEN_BITS 18		/* distinct flows remembered: 2^17 */

static uint64_t seen[1u << SEEN_BITS];

/* Whether flow k (never 0) was seen before; remembers it. */
static int
seen_before(uint64_t k)
{
	size_t mask = (1u << SEEN_BITS) - 1;
	size_t i = (size_t)((k * UINT64_C(0x9E3779B97F4A7C15)) >> 40) & mask;
	for (size_t n = 0; n <= mask; n++, i = (i + 1) & mask) {
		if (seen[i] == k)
			return 1;
		if (seen[i] == 0) {
			seen[i] = k;
			return 0;
		}
	}
	return 1;		/* full: count no more */
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double
pct(const double *v, size_t n, unsigned p)
{
	if (n == 0)
		return 0;
	size_t i = n * p / 100;
	return v[i < n ? i : n - 1];
}

static double
now_real(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: flowsink ADDR PORT SECONDS [SAMPLES]\n");
		return 2;
	}
	struct sockaddr_in sa = { .sin_family = AF_INET };
	unsigned port = (unsigned)atoi(argv[2]);
	double secs = atof(argv[3]);
	if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1 || port == 0 ||
	    port > 65535 || secs <= 0) {
		fprintf(stderr, "flowsink: bad arguments\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)port);
	int s = socket(AF_INET, SOCK_DGRAM, 0), on = 1, rcvbuf = 32 << 20;
	/* A burst of released flows must not overflow the sink itself. */
	if (s < 0 ||
	    (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
	    sizeof(rcvbuf)) < 0 && setsockopt(s, SOL_SOCKET, SO_RCVBUF,
	    &rcvbuf, sizeof(rcvbuf)) < 0) ||
	    setsockopt(s, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) < 0 ||
	    bind(s, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("flowsink: socket");
		return 1;
	}
	size_t cap = 1u << (SEEN_BITS - 1), n = 0;
	double *delay = malloc(cap * sizeof(*delay)), first = 0, last = 0;
	if (delay == NULL) {
		perror("flowsink");
		return 1;
	}
	struct mmsghdr m[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in from[BATCH];
	uint8_t data[BATCH][64];
	union {
		struct cmsghdr h;
		uint8_t b[CMSG_SPACE(sizeof(struct timespec))];
	} ctl[BATCH];
	double end = now_real() + secs;
	for (double t; (t = now_real()) < end;) {
		struct pollfd pfd = { .fd = s, .events = POLLIN };
		if (poll(&pfd, 1, (int)((end - t) * 1000) + 1) <= 0)
			continue;
		memset(m, 0, sizeof(m));
		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){ data[i], sizeof(data[i]) };
			m[i].msg_hdr.msg_iov = &iov[i];
			m[i].msg_hdr.msg_iovlen = 1;
			m[i].msg_hdr.msg_name = &from[i];
			m[i].msg_hdr.msg_namelen = sizeof(from[i]);
			m[i].msg_hdr.msg_control = &ctl[i];
			m[i].msg_hdr.msg_controllen = sizeof(ctl[i]);
		}
		int got = recvmmsg(s, m, BATCH, MSG_DONTWAIT, NULL);
		for (int i = 0; i < got; i++) {
			struct cmsghdr *c = CMSG_FIRSTHDR(&m[i].msg_hdr);
			if (m[i].msg_len < 8 || c == NULL ||
			    c->cmsg_type != SCM_TIMESTAMPNS)
				continue;
			uint64_t k = (uint64_t)ntohl(from[i].sin_addr.s_addr)
			    << 16 | ntohs(from[i].sin_port);
			if (seen_before(k + 1) || n == cap)
				continue;
			struct timespec ts;
			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			double at = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
			uint64_t bits;
			double sent;
			memcpy(&bits, data[i], sizeof(bits));
			bits = be64toh(bits);
			memcpy(&sent, &bits, sizeof(sent));
			delay[n++] = (at - sent) * 1e6;
			if (first == 0 || at < first)
				first = at;
			if (at > last)
				last = at;
		}
	}
	qsort(delay, n, sizeof(*delay), cmp_double);
	if (argc == 5) {
		FILE *f = fopen(argv[4], "w");
		if (f == NULL) {
			perror("flowsink: samples");
			return 1;
		}
		fprintf(f, "# first-packet one-way delay us\n");
		for (size_t i = 0; i < n; i++)
			fprintf(f, "%.0f\n", delay[i]);
		if (fclose(f) != 0) {
			perror("flowsink: samples");
			return 1;
		}
	}
	printf("%zu %.0f %.0f %.6f\n", n, pct(delay, n, 50), pct(delay, n, 99),
	    last > first ? last - first : 0.0);
	return 0;
}
