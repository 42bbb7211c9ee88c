/*
 * fuzz_sci_report.c - SCI report decoding through the C-SMA pipeline: the
 * bytes as a push body (CBOR or a CBOR Sequence of sci-reports, with and
 * without tokens required) and as a Server-Sent Events stream whose events
 * carry base64url reports.  The cores keep their state between inputs (with
 * small caps), so sequences of reports reach the cache, the quarantine and
 * the timers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/httpc.h"
#include "rec/json.h"
#include "base/log.h"
#include "sma/sma.h"

static struct sma_conf conf_none, conf_tok;
static struct sma_keys keys;
static struct sma *open_core, *tok_core;
static struct cats_dec dec;
static uint64_t now = 1700000000000;

static void
sink(void *arg, const struct sma_event *ev)
{
	(void)arg;
	(void)ev;
}

static void
setup(void)
{
	cats_crypto_init();
	cats_log_init("fuzz_sci_report");
	cats_log_verbosity(0);
	cats_audit_open("none");
	sma_conf_defaults(&conf_none);
	conf_none.auth = SMA_AUTH_NONE;
	conf_none.max_entries = 64;
	conf_none.max_services = 16;
	conf_none.quarantine_max = 8;
	conf_none.anomaly = SMA_ANOMALY_QUARANTINE;
	conf_none.smoothing = 3;
	conf_none.id = strdup("fuzz");
	conf_tok = conf_none;
	conf_tok.auth = SMA_AUTH_TOKEN;
	conf_tok.anomaly = SMA_ANOMALY_FLAG;
	struct cats_key k, pk;
	cats_key_gen_ed25519(&k, "issuer");
	cats_key_public(&k, &pk);
	keys.issuers.v = malloc(sizeof(pk));
	keys.issuers.v[0] = pk;
	keys.issuers.n = 1;
	open_core = sma_new(&conf_none, &keys, sink, NULL);
	tok_core = sma_new(&conf_tok, &keys, sink, NULL);
	cats_dec_init(&dec, NULL);
}

static void
on_event(void *arg, const struct httpc_sse_event *ev)
{
	uint8_t buf[8192];
	long n = cats_b64url_decode(ev->data, ev->len, buf, sizeof(buf));
	struct sma_src src = { .kind = SMA_SRC_SSE, .expect = arg };
	if (n > 0)
		sma_ingest(open_core, &dec, buf, (size_t)n, &src, now, NULL,
		    NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (open_core == NULL)
		setup();
	now += 250;
	struct sma_src src = { .kind = SMA_SRC_PUSH };
	sma_ingest(open_core, &dec, data, size, &src, now, NULL, NULL);
	sma_ingest(tok_core, &dec, data, size, &src, now, NULL, NULL);
	struct httpc_sse_parser p;
	httpc_sse_parser_init(&p, 4096);
	httpc_sse_feed(&p, (const char *)data, size, on_event, NULL);
	httpc_sse_parser_free(&p);
	sma_tick(open_core, now);
	sma_tick(tok_core, now);
	/* Now and then everything held is released or dropped. */
	if (size > 0 && data[0] == 0x42)
		sma_quarantine_release(open_core, 0, now);
	return 0;
}
