/*
 * sci_mqtt.h - the MQTT transport of SCI reports (seed 000 §3, §4.1):
 * one broker connection (libmosquitto, MQTT v5) on the libevent loop, to
 * publish reports (cats-sci) or subscribe to them (cats-sma).
 *
 * The broker is "mqtt://HOST[:PORT]" (1883) or "mqtts://HOST[:PORT]"
 * (8883, TLS: the broker's certificate is verified against ca_file and
 * its name; cert and key are the client's own, when the broker wants
 * them, e.g. for per-client ACLs by certificate).  The connection is
 * kept: when it drops (or the broker refuses it, or restarts) the client
 * waits backoff_min, doubling to backoff_max (+/- 25 % jitter, back to the
 * minimum after a connection that came up), reconnects and subscribes
 * again to every pattern it was given.  Messages are QoS 1 by default: a
 * publish counts as done when the broker's PUBACK comes, with its reason
 * code (MQTT v5: 0x87 "not authorized" for a topic the ACL refuses).
 *
 * The connect itself (name lookup, TCP) is a blocking call of
 * libmosquitto; the TLS handshake and everything after it run on the
 * loop.
 */
#ifndef CATS_SCI_MQTT_H
#define CATS_SCI_MQTT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
struct sci_mqtt;

struct sci_mqtt_conf {
	const char *broker;	/* mqtt://host:port or mqtts://host:port */
	const char *client_id;	/* NULL: one made by libmosquitto */
	const char *ca_file;	/* mqtts: the CA of the broker's cert */
	const char *cert, *key;	/* mqtts: the client's certificate */
	const char *username, *password;	/* or NULL */
	int qos;		/* 0, 1 (default) or 2 */
	bool clean;		/* clean start (no session kept) */
	uint64_t keepalive_ms;	/* 0: 30 s */
	uint64_t backoff_min_ms, backoff_max_ms;	/* 0: 500 ms, 30 s */
};

struct sci_mqtt_cbs {
	/* A message on a subscribed topic. */
	void (*message)(void *arg, const char *topic, const uint8_t *p,
	    size_t n);
	/* Connected (subscriptions sent), or lost / refused, with why. */
	void (*state)(void *arg, bool up, const char *why);
	/* A publish was acknowledged: reason 0 (or < 0x80) means taken. */
	void (*published)(void *arg, int mid, int reason);
};

/*
 * A client on base: it connects at once (and keeps trying).  NULL with
 * why in err when the configuration is refused (a bad URL, TLS files that
 * cannot be used).
 */
struct sci_mqtt *sci_mqtt_new(struct event_base *base,
    const struct sci_mqtt_conf *c, const struct sci_mqtt_cbs *cbs,
    void *arg, char *err, size_t errlen);
void sci_mqtt_free(struct sci_mqtt *m);

/* Subscribe to a topic pattern now (if connected) and on every connect. */
int sci_mqtt_subscribe(struct sci_mqtt *m, const char *pattern);

/*
 * Publish one message; its id in *mid.  -1 with why in err when it cannot
 * leave now (not connected: nothing is queued for later).
 */
int sci_mqtt_publish(struct sci_mqtt *m, const char *topic,
    const uint8_t *p, size_t n, int *mid, char *err, size_t errlen);

bool sci_mqtt_connected(const struct sci_mqtt *m);

/* Counters: connections made, lost, messages in, publishes acked. */
struct sci_mqtt_stats {
	uint64_t connects, disconnects, refused, messages, published;
	uint64_t publish_refused, inflight;
};
const struct sci_mqtt_stats *sci_mqtt_stats(const struct sci_mqtt *m);

/*
 * The CSCI-ID a topic names under a pattern with one "+" level (e.g.
 * cats/sci/+/report): copied into buf; NULL if the topic does not match.
 */
const char *sci_mqtt_topic_id(const char *pattern, const char *topic,
    char *buf, size_t len);

/* "mqtt://" or "mqtts://"? */
bool sci_mqtt_is_url(const char *s);

#endif
