/*
 * test_cps.c - cats-cps's configuration: the service's keys, each stage's
 * section as its options, and what is refused (cps.h).
 */
#include <stdio.h>
#include <string.h>

#include "cps/cps.h"
#include "t.h"

static int
parse(struct cps_conf *c, const char *text, char *err, size_t len)
{
	cps_conf_free(c);
	cps_conf_init(c);
	return cps_conf_parse(c, "t.conf", text, strlen(text), err, len);
}

/* The arguments of stage st joined by spaces. */
static const char *
args(const struct cps_conf *c, int st)
{
	static char buf[512];
	buf[0] = '\0';
	for (size_t i = 0; i < c->nargs[st]; i++) {
		if (i > 0)
			strcat(buf, " ");
		strcat(buf, c->args[st][i]);
	}
	return buf;
}

int
main(void)
{
	struct cps_conf c;
	char err[512];

	cps_conf_init(&c);
	T_OK(parse(&c, "id = cps-9\nstats-interval = 2s\ntap = file:/tmp/x\n"
	    "[select]\nno-auth =\nlisten = unix:/a\nlisten = tcp:[::1]:9\n"
	    "[pce]\nt = topo.json\n[bind]\nq =\ncommit = none\n", err,
	    sizeof(err)) == 0, "a configuration parses: %s", err);
	T_OK(strcmp(c.id, "cps-9") == 0 && c.stats_ms == 2000 &&
	    c.tap != NULL && strcmp(c.tap, "file:/tmp/x") == 0,
	    "the service's keys");
	T_OK(strcmp(args(&c, CPS_SELECT),
	    "--no-auth --listen=unix:/a --listen=tcp:[::1]:9") == 0,
	    "a flag, a repeated key: %s", args(&c, CPS_SELECT));
	T_OK(strcmp(args(&c, CPS_PCE), "-t topo.json") == 0,
	    "a one-letter key: %s", args(&c, CPS_PCE));
	T_OK(strcmp(args(&c, CPS_BIND), "-q --commit=none") == 0,
	    "a one-letter flag: %s", args(&c, CPS_BIND));

	T_OK(parse(&c, "[fwd]\nx = 1\n", err, sizeof(err)) < 0 &&
	    strstr(err, "t.conf:2: x: unknown section [fwd]") != NULL,
	    "an unknown section: %s", err);
	T_OK(parse(&c, "[select \"a\"]\nx = 1\n", err, sizeof(err)) < 0 &&
	    strstr(err, "unknown section [select \"a\"]") != NULL,
	    "a stage's section takes no argument: %s", err);
	T_OK(parse(&c, "nosuch = 1\n", err, sizeof(err)) < 0 &&
	    strstr(err, "t.conf:1: nosuch: unknown key") != NULL,
	    "an unknown key of the service: %s", err);
	T_OK(parse(&c, "to = http://x/\n", err, sizeof(err)) < 0,
	    "the output is a stream, not http: %s", err);
	T_OK(parse(&c, "stats-interval = soon\n", err, sizeof(err)) < 0,
	    "a bad duration: %s", err);
	T_OK(parse(&c, "id =\n", err, sizeof(err)) < 0,
	    "an empty id: %s", err);
	T_OK(parse(&c, "tls-cert = s.crt\ntls-key = s.key\ntls-ca = ca.crt\n"
	    "tls-crl = crl.pem\n", err, sizeof(err)) == 0 &&
	    strcmp(c.tls[CPS_TLS_CERT], "s.crt") == 0 &&
	    strcmp(c.tls[CPS_TLS_KEY], "s.key") == 0 &&
	    strcmp(c.tls[CPS_TLS_CA], "ca.crt") == 0 &&
	    strcmp(c.tls[CPS_TLS_CRL], "crl.pem") == 0,
	    "the TLS keys of every stage: %s", err);
	T_OK(parse(&c, "tls-ca =\n", err, sizeof(err)) < 0 &&
	    strstr(err, "tls-ca: a file name") != NULL,
	    "a TLS key without a file: %s", err);
	T_OK(cps_conf_set(&c, "bin", "/opt/cats/bin", err, sizeof(err)) == 0 &&
	    cps_conf_finish(&c) == 0 && strcmp(c.bin, "/opt/cats/bin") == 0,
	    "bin given: kept");
	int rc = parse(&c, "", err, sizeof(err));
	rc = rc == 0 ? cps_conf_finish(&c) : rc;
	T_OK(rc == 0 && c.bin != NULL && c.bin[0] == '/' &&
	    strstr(c.bin, "/opt/cats") == NULL, "bin found: %s", c.bin);
	cps_conf_free(&c);
	return t_done();
}
