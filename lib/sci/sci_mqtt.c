/*
 * sci_mqtt.c - the MQTT transport of SCI reports (see sci_mqtt.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <mosquitto.h>
#include <mqtt_protocol.h>

#include "base/clock.h"
#include "base/log.h"
#include "sci/sci_mqtt.h"

#define MAX_SUBS 16

struct sci_mqtt {
	struct event_base *base;
	struct mosquitto *mosq;
	struct sci_mqtt_cbs cbs;
	void *arg;
	char host[256];
	int port;
	int qos;
	int keepalive_s;
	uint64_t backoff_min, backoff_max, backoff;
	uint64_t rng;
	bool up;		/* CONNACK 0 received */
	bool told_down;		/* this outage was told */
	mosquitto_property *props;	/* of CONNECT: the session's expiry */
	bool sock;		/* a socket is open, events set */
	bool freeing;
	struct event *rd, *wr, *misc, *retry;
	char *subs[MAX_SUBS];
	size_t nsubs;
	struct sci_mqtt_stats st;
};

bool
sci_mqtt_is_url(const char *s)
{
	return strncmp(s, "mqtt://", 7) == 0 || strncmp(s, "mqtts://", 8) == 0;
}

/* Parse mqtt[s]://host[:port][/...]; -1 if it is none. */
static int
parse_url(const char *url, char *host, size_t hlen, int *port, bool *tls)
{
	const char *p;
	if (strncmp(url, "mqtts://", 8) == 0) {
		*tls = true;
		*port = 8883;
		p = url + 8;
	} else if (strncmp(url, "mqtt://", 7) == 0) {
		*tls = false;
		*port = 1883;
		p = url + 7;
	} else {
		return -1;
	}
	const char *end;
	if (*p == '[') {
		end = strchr(p, ']');
		if (end == NULL || (size_t)(end - p - 1) >= hlen || end == p + 1)
			return -1;
		memcpy(host, p + 1, (size_t)(end - p - 1));
		host[end - p - 1] = '\0';
		p = end + 1;
	} else {
		end = p + strcspn(p, ":/");
		if (end == p || (size_t)(end - p) >= hlen)
			return -1;
		memcpy(host, p, (size_t)(end - p));
		host[end - p] = '\0';
		p = end;
	}
	if (*p == ':') {
		char *e;
		long v = strtol(p + 1, &e, 10);
		if (e == p + 1 || v < 1 || v > 65535 || (*e && *e != '/'))
			return -1;
		*port = (int)v;
		p = e;
	}
	return *p == '\0' || *p == '/' ? 0 : -1;
}

const char *
sci_mqtt_topic_id(const char *pattern, const char *topic, char *buf,
    size_t len)
{
	const char *p = pattern, *t = topic;
	bool got = false;
	while (*p) {
		if (p[0] == '+' && (p[1] == '/' || p[1] == '\0')) {
			size_t n = strcspn(t, "/");
			if (n == 0 || n >= len)
				return NULL;
			memcpy(buf, t, n);
			buf[n] = '\0';
			got = true;
			t += n;
			p++;
		} else if (*p == *t) {
			p++;
			t++;
		} else {
			return NULL;
		}
	}
	return *t == '\0' && got ? buf : NULL;
}

/* ---- the loop ---- */

static void teardown(struct sci_mqtt *m, const char *why);
static void schedule_retry(struct sci_mqtt *m);

static void
want_write(struct sci_mqtt *m)
{
	if (m->sock && mosquitto_want_write(m->mosq))
		event_add(m->wr, NULL);
}

/* After a libmosquitto call: a lost connection is torn down. */
static void
check(struct sci_mqtt *m, int rc, const char *what)
{
	if (rc == MOSQ_ERR_SUCCESS) {
		want_write(m);
		return;
	}
	char why[200];
	snprintf(why, sizeof(why), "%s: %s", what, rc == MOSQ_ERR_ERRNO ?
	    strerror(errno) : mosquitto_strerror(rc));
	teardown(m, why);
	schedule_retry(m);
}

static void
on_read(evutil_socket_t fd, short what, void *arg)
{
	struct sci_mqtt *m = arg;
	(void)fd;
	(void)what;
	check(m, mosquitto_loop_read(m->mosq, 64), "read");
}

static void
on_write(evutil_socket_t fd, short what, void *arg)
{
	struct sci_mqtt *m = arg;
	(void)fd;
	(void)what;
	check(m, mosquitto_loop_write(m->mosq, 64), "write");
}

static void
on_misc(evutil_socket_t fd, short what, void *arg)
{
	struct sci_mqtt *m = arg;
	(void)fd;
	(void)what;
	if (m->sock)
		check(m, mosquitto_loop_misc(m->mosq), "keepalive");
}

/* The socket closed, its events gone; the owner told (once). */
static void
teardown(struct sci_mqtt *m, const char *why)
{
	bool was = m->up;
	if (m->sock) {
		event_del(m->rd);
		event_del(m->wr);
		event_free(m->rd);
		event_free(m->wr);
		m->rd = m->wr = NULL;
		m->sock = false;
		mosquitto_disconnect(m->mosq);
	}
	m->up = false;
	if (was)
		m->st.disconnects++;
	/* A lost connection, or one that never came up (TLS refused...):
	 * told once an outage. */
	if ((was || !m->told_down) && m->cbs.state != NULL && !m->freeing)
		m->cbs.state(m->arg, false, why);
	m->told_down = true;
}

static uint64_t
next_rand(struct sci_mqtt *m)
{
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return m->rng;
}

static void connect_now(struct sci_mqtt *m);

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	connect_now(arg);
}

/* The next try after the backoff (+/- 25 %), which then doubles. */
static void
schedule_retry(struct sci_mqtt *m)
{
	if (m->freeing || evtimer_pending(m->retry, NULL))
		return;
	uint64_t d = m->backoff;
	uint64_t j = d / 4;
	if (j > 0)
		d = d - j + next_rand(m) % (2 * j + 1);
	struct timeval tv = { (time_t)(d / 1000), (suseconds_t)(d % 1000) *
		1000 };
	evtimer_add(m->retry, &tv);
	m->backoff = m->backoff * 2 > m->backoff_max ? m->backoff_max :
	    m->backoff * 2;
}

static void
connect_now(struct sci_mqtt *m)
{
	if (m->sock || m->freeing)
		return;
	int rc = mosquitto_connect_bind_v5(m->mosq, m->host, m->port,
	    m->keepalive_s, NULL, m->props);
	if (rc != MOSQ_ERR_SUCCESS) {
		char why[300];
		snprintf(why, sizeof(why), "%s:%d: %s", m->host, m->port,
		    rc == MOSQ_ERR_ERRNO ? strerror(errno) :
		    mosquitto_strerror(rc));
		cats_debug("mqtt: %s", why);
		/* Told once an outage, not at every try. */
		if (m->cbs.state != NULL && !m->told_down)
			m->cbs.state(m->arg, false, why);
		m->told_down = true;
		schedule_retry(m);
		return;
	}
	int fd = mosquitto_socket(m->mosq);
	m->rd = event_new(m->base, fd, EV_READ | EV_PERSIST, on_read, m);
	m->wr = event_new(m->base, fd, EV_WRITE, on_write, m);
	if (m->rd == NULL || m->wr == NULL) {
		event_free(m->rd);
		event_free(m->wr);
		m->rd = m->wr = NULL;
		mosquitto_disconnect(m->mosq);
		schedule_retry(m);
		return;
	}
	m->sock = true;
	event_add(m->rd, NULL);
	want_write(m);
}

/* ---- libmosquitto's callbacks (inside loop_read and loop_write) ---- */

static void
cb_connect(struct mosquitto *mosq, void *obj, int rc, int flags,
    const mosquitto_property *props)
{
	struct sci_mqtt *m = obj;
	(void)mosq;
	(void)flags;
	(void)props;
	if (rc != 0) {
		char why[200];
		m->st.refused++;
		snprintf(why, sizeof(why), "the broker refused the connection: "
		    "%s", mosquitto_reason_string(rc));
		if (m->cbs.state != NULL && !m->told_down)
			m->cbs.state(m->arg, false, why);
		m->told_down = true;
		/* The broker closes it; read() will tell. */
		return;
	}
	m->up = true;
	m->told_down = false;
	m->backoff = m->backoff_min;
	m->st.connects++;
	for (size_t i = 0; i < m->nsubs; i++)
		mosquitto_subscribe_v5(m->mosq, NULL, m->subs[i], m->qos, 0,
		    NULL);
	if (m->cbs.state != NULL)
		m->cbs.state(m->arg, true, "connected");
}

static void
cb_disconnect(struct mosquitto *mosq, void *obj, int rc,
    const mosquitto_property *props)
{
	(void)mosq;
	(void)obj;
	(void)rc;
	(void)props;
	/* The loop call that saw it tears down (check()). */
}

static void
cb_message(struct mosquitto *mosq, void *obj, const struct mosquitto_message *msg,
    const mosquitto_property *props)
{
	struct sci_mqtt *m = obj;
	(void)mosq;
	(void)props;
	m->st.messages++;
	if (m->cbs.message != NULL && msg->payloadlen >= 0)
		m->cbs.message(m->arg, msg->topic, msg->payload,
		    (size_t)msg->payloadlen);
}

static void
cb_publish(struct mosquitto *mosq, void *obj, int mid, int reason,
    const mosquitto_property *props)
{
	struct sci_mqtt *m = obj;
	(void)mosq;
	(void)props;
	if (m->st.inflight > 0)
		m->st.inflight--;
	if (reason >= 0x80)
		m->st.publish_refused++;
	else
		m->st.published++;
	if (m->cbs.published != NULL)
		m->cbs.published(m->arg, mid, reason);
}

/* ---- the client ---- */

struct sci_mqtt *
sci_mqtt_new(struct event_base *base, const struct sci_mqtt_conf *c,
    const struct sci_mqtt_cbs *cbs, void *arg, char *err, size_t errlen)
{
	static bool inited;
	bool tls;
	struct sci_mqtt *m = calloc(1, sizeof(*m));
	if (m == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (parse_url(c->broker, m->host, sizeof(m->host), &m->port,
	    &tls) < 0) {
		snprintf(err, errlen, "%s: expected mqtt://HOST[:PORT] or "
		    "mqtts://HOST[:PORT]", c->broker);
		free(m);
		return NULL;
	}
	if (!inited) {
		mosquitto_lib_init();
		inited = true;
	}
	m->base = base;
	if (cbs != NULL)
		m->cbs = *cbs;
	m->arg = arg;
	m->qos = c->qos;
	m->keepalive_s = c->keepalive_ms ? (int)((c->keepalive_ms + 999) /
	    1000) : 30;
	if (m->keepalive_s < 5)
		m->keepalive_s = 5;
	m->backoff_min = c->backoff_min_ms ? c->backoff_min_ms : 500;
	m->backoff_max = c->backoff_max_ms ? c->backoff_max_ms : 30000;
	if (m->backoff_max < m->backoff_min)
		m->backoff_max = m->backoff_min;
	m->backoff = m->backoff_min;
	m->rng = cats_clock_mono_ns() | 1;
	bool clean = c->clean || c->client_id == NULL;
	m->mosq = mosquitto_new(c->client_id, clean, m);
	if (m->mosq == NULL) {
		snprintf(err, errlen, "mqtt: cannot make a client: %s",
		    strerror(errno));
		free(m);
		return NULL;
	}
	mosquitto_int_option(m->mosq, MOSQ_OPT_PROTOCOL_VERSION,
	    MQTT_PROTOCOL_V5);
	/* A kept session outlives a disconnection (MQTT v5 ends it at once
	 * unless told): QoS 1 messages wait for the subscriber. */
	if (!clean)
		mosquitto_property_add_int32(&m->props,
		    MQTT_PROP_SESSION_EXPIRY_INTERVAL, 86400);
	mosquitto_connect_v5_callback_set(m->mosq, cb_connect);
	mosquitto_disconnect_v5_callback_set(m->mosq, cb_disconnect);
	mosquitto_message_v5_callback_set(m->mosq, cb_message);
	mosquitto_publish_v5_callback_set(m->mosq, cb_publish);
	int rc = MOSQ_ERR_SUCCESS;
	if (c->username != NULL)
		rc = mosquitto_username_pw_set(m->mosq, c->username,
		    c->password);
	if (rc == MOSQ_ERR_SUCCESS && tls)
		rc = mosquitto_tls_set(m->mosq, c->ca_file, c->ca_file ? NULL :
		    "/etc/ssl/certs", c->cert, c->key, NULL);
	if (rc != MOSQ_ERR_SUCCESS) {
		snprintf(err, errlen, "mqtt %s: %s", c->broker,
		    rc == MOSQ_ERR_ERRNO ? strerror(errno) :
		    mosquitto_strerror(rc));
		mosquitto_property_free_all(&m->props);
		mosquitto_destroy(m->mosq);
		free(m);
		return NULL;
	}
	m->misc = event_new(base, -1, EV_PERSIST, on_misc, m);
	m->retry = evtimer_new(base, on_retry, m);
	if (m->misc == NULL || m->retry == NULL) {
		snprintf(err, errlen, "out of memory");
		sci_mqtt_free(m);
		return NULL;
	}
	struct timeval tv = { 1, 0 };
	event_add(m->misc, &tv);
	connect_now(m);
	return m;
}

void
sci_mqtt_free(struct sci_mqtt *m)
{
	if (m == NULL)
		return;
	m->freeing = true;
	bool up = m->sock && m->up;
	if (m->sock) {
		/* The events go before libmosquitto closes the socket. */
		event_del(m->rd);
		event_del(m->wr);
		event_free(m->rd);
		event_free(m->wr);
		m->rd = m->wr = NULL;
		m->sock = false;
	}
	if (up) {
		/* A clean DISCONNECT, flushed if the socket takes it. */
		mosquitto_disconnect(m->mosq);
		mosquitto_loop_write(m->mosq, 1);
	}
	teardown(m, "closed");
	if (m->misc != NULL)
		event_free(m->misc);
	if (m->retry != NULL)
		event_free(m->retry);
	for (size_t i = 0; i < m->nsubs; i++)
		free(m->subs[i]);
	mosquitto_property_free_all(&m->props);
	mosquitto_destroy(m->mosq);
	free(m);
}

int
sci_mqtt_subscribe(struct sci_mqtt *m, const char *pattern)
{
	if (m->nsubs == MAX_SUBS)
		return -1;
	if ((m->subs[m->nsubs] = strdup(pattern)) == NULL)
		return -1;
	m->nsubs++;
	if (m->up) {
		mosquitto_subscribe_v5(m->mosq, NULL, pattern, m->qos, 0, NULL);
		want_write(m);
	}
	return 0;
}

int
sci_mqtt_publish(struct sci_mqtt *m, const char *topic, const uint8_t *p,
    size_t n, int *mid, char *err, size_t errlen)
{
	if (!m->up) {
		snprintf(err, errlen, "not connected to %s:%d", m->host,
		    m->port);
		return -1;
	}
	int rc = mosquitto_publish_v5(m->mosq, mid, topic, (int)n, p, m->qos,
	    false, NULL);
	if (rc != MOSQ_ERR_SUCCESS) {
		snprintf(err, errlen, "%s", mosquitto_strerror(rc));
		return -1;
	}
	if (m->qos > 0)
		m->st.inflight++;
	want_write(m);
	return 0;
}

bool
sci_mqtt_connected(const struct sci_mqtt *m)
{
	return m->up;
}

const struct sci_mqtt_stats *
sci_mqtt_stats(const struct sci_mqtt *m)
{
	return &m->st;
}
