/*
 * flowgen - N one-datagram UDP flows (distinct source ports from SPORT0) as
 * fast as a raw socket takes them, each carrying its send time (a
 * big-endian IEEE double of wall-clock seconds) for flowsink.
 * A C sender: no interpreter's cost on the CPUs the forwarders share.
 * With RATE (flows per second) the flows are paced: each millisecond sends
 * those due by then (an offered load, or flows 2 ms apart at 500:
 * bench/fwd.sh), instead of all at once.
 *
 * usage: flowgen SRC DST DPORT N [SPORT0 [RATE]]
 */
#include <arpa/inet.h>
#include <endian.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fwd/pkt.h"

int
main(int argc, char **argv)
{
	if (argc < 5 || argc > 7) {
		fprintf(stderr, "usage: flowgen SRC DST DPORT N [SPORT0 [RATE]]\n");
		return 2;
	}
	struct sockaddr_in dst = { .sin_family = AF_INET };
	uint8_t src[4];
	unsigned dport = (unsigned)atoi(argv[3]);
	long n = atol(argv[4]);
	unsigned sport0 = argc > 5 ? (unsigned)atoi(argv[5]) : 1024;
	double rate = argc > 6 ? atof(argv[6]) : 0;
	if (inet_pton(AF_INET, argv[1], src) != 1 ||
	    inet_pton(AF_INET, argv[2], &dst.sin_addr) != 1 || dport == 0 ||
	    dport > 65535 || n <= 0 || sport0 == 0 || sport0 > 65535 ||
	    rate < 0) {
		fprintf(stderr, "flowgen: bad arguments\n");
		return 2;
	}
	int s = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (s < 0) {
		perror("flowgen: raw socket");
		return 1;
	}
	uint8_t p[20 + 8 + 8];
	struct timespec t0, tick;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	tick = t0;
	for (long i = 0; i < n; i++) {
		unsigned sport = sport0 + (unsigned)(i % (65536 - sport0));
		struct timespec ts;
		/* Paced: wait for the millisecond by which flow i is due. */
		while (rate > 0) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			double el = (double)(ts.tv_sec - t0.tv_sec) +
			    (double)(ts.tv_nsec - t0.tv_nsec) / 1e9;
			if ((double)i < el * rate)
				break;
			tick.tv_nsec += 1000000;
			if (tick.tv_nsec >= 1000000000) {
				tick.tv_sec++;
				tick.tv_nsec -= 1000000000;
			}
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &tick,
			    NULL);
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		double t = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
		uint64_t bits;
		memcpy(&bits, &t, sizeof(bits));
		bits = htobe64(bits);
		memset(p, 0, sizeof(p));
		p[0] = 0x45;
		p[3] = sizeof(p);
		p[8] = 64;
		p[9] = 17;
		memcpy(p + 12, src, 4);
		memcpy(p + 16, &dst.sin_addr, 4);
		p[20] = (uint8_t)(sport >> 8);
		p[21] = (uint8_t)sport;
		p[22] = (uint8_t)(dport >> 8);
		p[23] = (uint8_t)dport;
		p[25] = 16;
		memcpy(p + 28, &bits, 8);
		uint16_t c = (uint16_t)~cats_csum_fold(cats_csum_add(0, p, 20));
		p[10] = (uint8_t)(c >> 8);
		p[11] = (uint8_t)c;
		if (sendto(s, p, sizeof(p), 0, (struct sockaddr *)&dst,
		    sizeof(dst)) < 0) {
			perror("flowgen: sendto");
			return 1;
		}
	}
	close(s);
	return 0;
}
