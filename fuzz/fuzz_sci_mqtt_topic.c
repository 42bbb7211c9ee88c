/*
 * fuzz_sci_mqtt_topic.c - the CSCI-ID an MQTT topic names under a filter
 * (a broker's topic is untrusted input of cats-sma): the input is
 * "FILTER\nTOPIC"; the id found must fit, match the topic and hold no "/".
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sci/sci_mqtt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), id[129];
	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	char *nl = strchr(s, '\n');
	if (nl != NULL) {
		*nl = '\0';
		const char *r = sci_mqtt_topic_id(s, nl + 1, id, sizeof(id));
		if (r != NULL && (strlen(r) == 0 || strlen(r) >= sizeof(id) ||
		    strchr(r, '/') != NULL || strstr(nl + 1, r) == NULL))
			__builtin_trap();
	}
	(void)sci_mqtt_is_url(s);
	free(s);
	return 0;
}
