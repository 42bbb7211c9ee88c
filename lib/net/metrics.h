/*
 * metrics.h - the /metrics endpoint of a daemon: Prometheus's text
 * exposition (format 0.0.4) of the tool's stats list, served by the one
 * HTTP server (net/httpd.h) on a listener of its own (--metrics ENDPOINT,
 * the endpoint syntax of net/ep.h: tcp:HOST:PORT, http://HOST:PORT/,
 * unix:PATH, and https://HOST:PORT/ with the tool's TLS options, net/tls.h).
 *
 * Contract:
 * - Each GET (or HEAD) of /metrics calls the tool's fill function on a
 *   fresh list, adds the endpoint's own entries (start_time, a time: it
 *   changes when the process restarts; scrapes, a counter; with a TLS
 *   certificate, net/tls.h's handshakes, refused, reloads, reload_failed
 *   as tls.*) and answers 200
 *   with cats_stats_render()'s text, Content-Type
 *   "text/plain; version=0.0.4; charset=utf-8".  The text is the textfile's
 *   (base/stats.h): one renderer.
 * - Any other path is a 404 and another method a 405, as httpd answers;
 *   request bodies are refused (max_body 1).
 * - The fill function runs on the daemon's event loop, between its other
 *   callbacks, so it reads the counters without locks.
 */
#ifndef CATS_METRICS_H
#define CATS_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "base/stats.h"

struct event_base;
struct cats_metrics;

/*
 * Fill st (initialized by the callee with cats_stats_init(): the tool and
 * its id) with the tool's stats list.
 */
typedef void (*cats_metrics_fill_fn)(void *arg, struct cats_stats_list *st);

/*
 * Serve /metrics on endpoint; NULL with "ENDPOINT: reason" in err.
 */
struct cats_metrics *cats_metrics_new(struct event_base *base,
    const char *endpoint, cats_metrics_fill_fn fill, void *arg, char *err,
    size_t errlen);
/*
 * A tool's --prometheus: *m serves /metrics on endpoint (NULL: none, *m
 * NULL); 0, or 1 (CATS_EXIT_FAIL) said in one line, "--prometheus: reason".
 */
int cats_metrics_open(struct cats_metrics **m, struct event_base *base,
    const char *endpoint, cats_metrics_fill_fn fill, void *arg);
/* The TCP port listened on (after port 0), 0 for a unix socket. */
int cats_metrics_port(const struct cats_metrics *m);
void cats_metrics_free(struct cats_metrics *m);

#endif
