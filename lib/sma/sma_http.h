/*
 * sma_http.h - cats-sma's HTTP faces (cats-sma(1) HTTP): the push listener
 * (POST /reports, GET /health, and the ingest of subordinate C-SMAs), the
 * admin listener (quarantine, cache, advertised view, snapshot, stats),
 * and the SCIs' pulls and event streams (SSE).
 *
 * Each report goes to the core as it arrives (sma_ingest, "now" from the
 * clock); an answer says how many were accepted, quarantined, rejected
 * (the HTTP status of the first rejection).  Pulls and streams of a
 * reloaded configuration start again; a stream of the same URL resumes
 * after the last event id it had.
 */
#ifndef CATS_SMA_HTTP_H
#define CATS_SMA_HTTP_H

#include "sma/sma_app.h"

/* Routes of a push listener; the subordinates' ingest with a hierarchy. */
void sma_http_push_routes(struct sma_app *a, struct httpd *h);
/* Routes of the admin listener. */
void sma_http_admin_routes(struct sma_app *a, struct httpd *h);

/*
 * The configured SCIs: their streams and pull timers (none in replay; in
 * --once no stream and no timer, the main pulls once).  last_ids: per SCI
 * the event id to resume after, or NULL.  -1 if out of memory.
 */
int sma_http_scis_start(struct sma_app *a, const char *const *last_ids);
/* Stop and forget every SCI's stream, pull and timer. */
void sma_http_scis_stop(struct sma_app *a);
/* The SCI of csci_id, or NULL. */
struct sma_sci *sma_http_sci(struct sma_app *a, const char *csci_id);
/* Pull an SCI now, unless a pull is under way or it has no pull URL. */
void sma_http_pull(struct sma_sci *r);

#endif
