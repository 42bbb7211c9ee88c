/*
 * fuzz_ip.c - the address parser and formatter of the record layer
 * (cats_ip_parse, cats_ip_fmt) against inet_pton(3) and inet_ntop(3): the
 * same verdict and bytes for any text, the same text for any address, and
 * every formatted address parses back to itself.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "rec/rec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* As text: what inet_pton() says of the C string up to a NUL. */
	struct cats_ip a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	int ra = cats_ip_parse((const char *)data, size, &a), rb = -1;
	if (size > 0 && size < INET6_ADDRSTRLEN) {
		char buf[INET6_ADDRSTRLEN];
		memcpy(buf, data, size);
		buf[size] = '\0';
		int af = memchr(buf, ':', size) != NULL ? AF_INET6 : AF_INET;
		if (inet_pton(af, buf, b.a) == 1) {
			b.af = af == AF_INET6 ? 6 : 4;
			rb = 0;
		}
	}
	if (ra != rb || (ra == 0 && memcmp(&a, &b, sizeof(a)) != 0))
		abort();
	/* As an address: what inet_ntop() writes, and back. */
	if (size >= 17) {
		struct cats_ip x;
		memset(&x, 0, sizeof(x));
		x.af = data[0] & 1 ? 6 : 4;
		memcpy(x.a, data + 1, x.af == 6 ? 16 : 4);
		char mine[INET6_ADDRSTRLEN], ref[INET6_ADDRSTRLEN];
		cats_ip_fmt(&x, mine, sizeof(mine));
		if (inet_ntop(x.af == 6 ? AF_INET6 : AF_INET, x.a, ref,
		    sizeof(ref)) == NULL || strcmp(mine, ref) != 0)
			abort();
		if (cats_ip_parse(mine, strlen(mine), &a) < 0 ||
		    !cats_ip_eq(&a, &x))
			abort();
	}
	return 0;
}
