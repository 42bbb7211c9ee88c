/*
 * test_sci_mqtt.c - the MQTT transport's pure parts: the CSCI-ID a topic
 * names under a filter, broker URLs; and a client that cannot reach its
 * broker backing off without blocking the loop.
 */
#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "base/log.h"
#include "sci/sci_mqtt.h"
#include "t.h"

static int downs;

static void
state(void *arg, bool up, const char *why)
{
	(void)arg;
	(void)why;
	if (!up)
		downs++;
}

static void
stop(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

int
main(void)
{
	char b[32];
	cats_log_init("test_sci_mqtt");
	cats_log_verbosity(0);
	const char *f = "cats/sci/+/report";
	T_OK(sci_mqtt_topic_id(f, "cats/sci/sci-A/report", b, sizeof(b)) &&
	    strcmp(b, "sci-A") == 0, "the + level is the CSCI-ID");
	T_OK(sci_mqtt_topic_id(f, "cats/sci//report", b, sizeof(b)) == NULL,
	    "an empty level names none");
	T_OK(sci_mqtt_topic_id(f, "cats/sci/a/b/report", b, sizeof(b)) ==
	    NULL, "two levels for one +: no match");
	T_OK(sci_mqtt_topic_id(f, "cats/sci/a/reportx", b, sizeof(b)) == NULL &&
	    sci_mqtt_topic_id(f, "cats/sci/a", b, sizeof(b)) == NULL,
	    "the rest must match exactly");
	T_OK(sci_mqtt_topic_id("+", "x", b, sizeof(b)) && strcmp(b, "x") == 0,
	    "a filter that is only +");
	char longid[64];
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	char topic[128];
	snprintf(topic, sizeof(topic), "cats/sci/%s/report", longid);
	T_OK(sci_mqtt_topic_id(f, topic, b, sizeof(b)) == NULL,
	    "an id longer than the buffer is refused, not cut");
	T_OK(sci_mqtt_is_url("mqtt://h") && sci_mqtt_is_url("mqtts://h:1") &&
	    !sci_mqtt_is_url("http://h"), "mqtt:// and mqtts:// URLs");

	struct event_base *base = event_base_new();
	char err[200];
	static const struct sci_mqtt_cbs cbs = { NULL, state, NULL };
	static const char *const bad[] = { "mqtt://", "mqtt://h:0",
		"mqtt://h:99999", "mqtt://[::1", "tcp://h", "mqtt://h:1x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sci_mqtt_conf c = { .broker = bad[i], .qos = 1 };
		T_OK(sci_mqtt_new(base, &c, &cbs, NULL, err, sizeof(err)) ==
		    NULL && strstr(err, "expected mqtt://") != NULL,
		    "%s refused (%s)", bad[i], err);
	}
	/* Port 1 on loopback refuses: the client backs off (10 ms .. 40 ms)
	 * and tries again, told once. */
	struct sci_mqtt_conf c = { .broker = "mqtt://127.0.0.1:1", .qos = 1,
		.backoff_min_ms = 10, .backoff_max_ms = 40 };
	struct sci_mqtt *m = sci_mqtt_new(base, &c, &cbs, NULL, err,
	    sizeof(err));
	T_OK(m != NULL && !sci_mqtt_connected(m), "a client whose broker is "
	    "not there is made");
	struct event *t = evtimer_new(base, stop, base);
	struct timeval tv = { 0, 300000 };
	evtimer_add(t, &tv);
	event_base_dispatch(base);
	T_OK(downs == 1, "the outage told once (%d)", downs);
	int mid;
	T_OK(sci_mqtt_publish(m, "t", (const uint8_t *)"x", 1, &mid, err,
	    sizeof(err)) < 0 && strstr(err, "not connected") != NULL,
	    "no publish while away (%s)", err);
	sci_mqtt_free(m);
	event_free(t);
	event_base_free(base);
	return t_done();
}
