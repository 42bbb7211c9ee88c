/*
 * sci.h - the reference SCI reporter (cats-sci(1)): the metrics a report
 * carries (options, a JSON file, a command's output), the signed
 * sci-report records, and the ways they leave: once on stdout, pushed
 * over HTTP, served to pulls (GET /report) and as an SSE stream
 * (GET /events, resumable after Last-Event-ID from the last 64 events).
 *
 * Each report reads --metrics FILE and runs --exec COMMAND again (what
 * they hold merges over the metrics given; a bad one is warned about and
 * the values stay); its seq is the next one, its ts the clock's or the
 * fixed --ts advanced by the interval.  A report that fails validation
 * is not sent (exit 65 where a run ends on it).
 *
 * The main fills the options (struct sci_reporter up to "run time"),
 * creates the event base, the HTTP client and server; this module does
 * the rest.  Functions returning an int return a cats(7) exit code.
 */
#ifndef CATS_SCI_H
#define CATS_SCI_H

#include "base/stats.h"
#include "net/httpc.h"
#include "net/httpd.h"
#include "rec/rec.h"
#include "sec/crypto.h"

#define SCI_MAX_EXT 16
#define SCI_RING 64

/* The metrics the next report carries. */
struct sci_metrics {
	int health;
	bool has_gas, has_ct, has_price, has_rep, has_sec, has_inst;
	uint64_t gas, ct, price, rep, sec, inst;
	struct cats_kv ext[SCI_MAX_EXT];
	char extname[SCI_MAX_EXT][CATS_ID + 1];
	size_t next;
};

struct sci_sub;
struct sci_mqtt;
struct event_base;

struct sci_reporter {
	/* options */
	const char *csci, *cs;
	struct sci_metrics m;
	const char *metrics_file, *exec;
	uint64_t interval_ms;
	uint64_t seq;
	bool fixed_ts;
	uint64_t ts;
	uint64_t count;
	bool json;
	struct cats_buf token;
	bool have_key;
	struct cats_key key;
	struct cats_ip locator;
	bool has_port;
	uint64_t port;
	const char *to, *listen;
	/* MQTT (to is mqtt:// or mqtts://): TLS files of the client */
	const char *ca_file, *cert, *cert_key;
	/* run time */
	struct event_base *base;
	struct httpc *http;		/* with to */
	struct sci_mqtt *mqtt;		/* with an mqtt:// to */
	char topic[512];
	uint64_t refused;		/* publishes the broker refused */
	struct httpd *httpd;		/* with listen */
	uint64_t sent, done;
	uint64_t pulls, streams;	/* GET /report, GET /events answered */
	struct sci_sub *subs;
	char ring_id[SCI_RING][24];
	char *ring_data[SCI_RING];
	size_t ring_pos;
	int exit_code;
	int report_rc;		/* why the last sci_report() failed (exit code) */
	bool refresh_failed;	/* ... in the metrics of --metrics or --exec */
};

/* Set the health from its name (HEALTHY, DEGRADED, UNHEALTHY, UNKNOWN);
 * -1 if it is none. */
int sci_set_health(struct sci_metrics *m, const char *name);

/*
 * An SCI token from path: base64url text (cats-key token -b) or raw
 * CBOR, into tok.  66 if the file cannot be read, 77 if it holds no
 * token; err says why.
 */
int sci_token_load(struct cats_buf *tok, const char *path, char *err,
    size_t errlen);

/*
 * Encode the next report into out (signed with the key, if any); -1 if the
 * metrics (--metrics, --exec) could not be had or the report is invalid,
 * said in one line, with s->report_rc the exit code (cats(7)).
 */
int sci_report(struct sci_reporter *s, struct cats_buf *out);

/* --count reports (1 without) on stdout, CBOR or JSON Lines. */
int sci_once(struct sci_reporter *s);

/* Serve pulls and the event stream on s->httpd; the first event is made
 * at once, so that a subscriber has one from the start. */
void sci_serve(struct sci_reporter *s);

/*
 * One interval: a report pushed to s->to (until --count are sent), one
 * for the event stream and a keepalive to its subscribers.  The loop
 * stops once --count pushes are answered (without a listener).
 */
void sci_tick(struct sci_reporter *s);

/* Push one report to s->to now (HTTP POST, or an MQTT publish). */
void sci_push(struct sci_reporter *s);

/*
 * The MQTT client of an mqtt:// or mqtts:// s->to: the broker, the topic
 * (the URL's path, default cats/sci/CSCI-ID/report), QoS 1, the client id
 * the CSCI-ID; the first push once connected.  78 with the line said if
 * the URL or the TLS files are refused.
 */
int sci_mqtt_start(struct sci_reporter *s);

/* The subscribers told the stream ends, the server and the client freed,
 * the ring emptied. */
void sci_end(struct sci_reporter *s);
/*
 * The reporter's counters into st (net/metrics.h's fill function; arg:
 * the reporter): reports sent and answered, refused by the broker, pulls
 * and event streams served, subscribers now, the next sequence number.
 */
void sci_stats_fill(void *arg, struct cats_stats_list *st);

#endif
