/*
 * tcp.c - TCP connection tracking of bound flows (fwd.h): the state a
 * binding's connection is in, from the flags of its packets in both
 * directions, and the idle timeout each state allows.
 *
 * The machine is conntrack's without sequence numbers (a forwarder sees
 * both directions, but the fast path keeps established packets in the
 * kernel, which hands up only SYN, FIN and RST):
 *
 *   NONE -SYN-> SYN_SENT -SYN+ACK (reply)-> SYN_RECV -ACK (orig)-> ESTABLISHED
 *   NONE -any other packet-> ESTABLISHED (bindings sent again after a restart)
 *   any -FIN-> FIN_WAIT -FIN of the other side-> TIME_WAIT
 *   any -RST-> CLOSE
 *   FIN_WAIT, TIME_WAIT, CLOSE -SYN of the client-> CATS_TCP_REOPEN
 */
#include <stdio.h>
#include <string.h>

#include "base/conf.h"
#include "fwd/fwd.h"

const char *const cats_tcps_names[] = {
	"none", "syn-sent", "syn-recv", "established", "fin-wait", "time-wait",
	"close", NULL
};

/*
 * The defaults and why (cats-fwd(1) has conntrack's and IPVS's beside):
 * a SYN unanswered for 30 s, or a handshake not completed, costs a binding
 * and a place in the C-PS's active count for nothing, and a SYN sent again
 * after that may start a selection; established connections live as long
 * as the binding manager's idle lifetime; a half-closed connection idle
 * for a minute; after both FINs or a RST only the last ACK and
 * retransmissions are still to come (a reused 5-tuple starts afresh
 * anyway).
 */
const uint64_t cats_tcp_default_ms[CATS_TCPS__N] = {
	[CATS_TCPS_NONE] = 0,
	[CATS_TCPS_SYN_SENT] = 30000,
	[CATS_TCPS_SYN_RECV] = 30000,
	[CATS_TCPS_ESTABLISHED] = 0,
	[CATS_TCPS_FIN_WAIT] = 60000,
	[CATS_TCPS_TIME_WAIT] = 10000,
	[CATS_TCPS_CLOSE] = 10000,
};

int
cats_tcp_timeout_parse(struct cats_fwd_conf *c, const char *arg, char *err,
    size_t errlen)
{
	const char *eq = strchr(arg, '=');
	char e[128];
	uint64_t ms;
	int s = -1;
	for (int i = 1; eq != NULL && i < CATS_TCPS__N; i++)
		if (strlen(cats_tcps_names[i]) == (size_t)(eq - arg) &&
		    strncmp(cats_tcps_names[i], arg, (size_t)(eq - arg)) == 0)
			s = i;
	if (s < 0) {
		snprintf(err, errlen, "--tcp-timeout %s: expected STATE=DURATION, "
		    "STATE syn-sent, syn-recv, established, fin-wait, time-wait "
		    "or close", arg);
		return -1;
	}
	if (cats_parse_ms(eq + 1, &ms, e, sizeof(e)) < 0 || ms == 0 ||
	    ms > UINT32_MAX) {
		snprintf(err, errlen, "--tcp-timeout %s: %s", arg, ms == 0 ?
		    "a timeout of 0" : e);
		return -1;
	}
	c->tcp_ms[s] = ms;
	return 0;
}

void
cats_fbind_tcp_set(struct cats_fwd *t, struct cats_fbind *b, int s)
{
	if (b->tcp == s)
		return;
	t->st.tcp[b->tcp]--;
	t->st.tcp[s]++;
	b->tcp = (uint8_t)s;
}

int
cats_fbind_tcp(struct cats_fwd *t, struct cats_fbind *b, bool reply,
    uint8_t f)
{
	int s = b->tcp;
	if (f & CATS_TCP_RST) {
		s = CATS_TCPS_CLOSE;
	} else if ((f & CATS_TCP_SYN) && !reply && !(f & CATS_TCP_ACK)) {
		if (cats_fbind_closing(b))
			return CATS_TCP_REOPEN;
		if (s == CATS_TCPS_NONE)
			s = CATS_TCPS_SYN_SENT;
	} else if (f & CATS_TCP_SYN) {
		if (reply && (f & CATS_TCP_ACK) && (s == CATS_TCPS_NONE ||
		    s == CATS_TCPS_SYN_SENT))
			s = CATS_TCPS_SYN_RECV;
	} else if (f & CATS_TCP_FIN) {
		b->tcp_fin |= reply ? CATS_TCP_FIN_REPLY : CATS_TCP_FIN_ORIG;
		if (s != CATS_TCPS_CLOSE)
			s = b->tcp_fin == (CATS_TCP_FIN_ORIG | CATS_TCP_FIN_REPLY) ?
			    CATS_TCPS_TIME_WAIT : CATS_TCPS_FIN_WAIT;
	} else if (s == CATS_TCPS_NONE || (s == CATS_TCPS_SYN_RECV && !reply &&
	    (f & CATS_TCP_ACK))) {
		s = CATS_TCPS_ESTABLISHED;
	}
	cats_fbind_tcp_set(t, b, s);
	return s;
}

uint64_t
cats_fbind_idle_ms(const struct cats_fwd *t, const struct cats_fbind *b)
{
	if (!cats_fbind_tracked(t, b) || b->tcp == CATS_TCPS_NONE)
		return b->idle_ms;
	uint64_t ms = t->c.tcp_ms[b->tcp] ? t->c.tcp_ms[b->tcp] :
	    cats_tcp_default_ms[b->tcp];
	if (b->tcp == CATS_TCPS_ESTABLISHED)
		return ms && (ms < b->idle_ms || b->idle_ms == 0) ? ms :
		    b->idle_ms;
	/* The binding manager's lifetime bounds every state. */
	return b->idle_ms && b->idle_ms < ms ? b->idle_ms : ms;
}

const char *
cats_fbind_tcp_why(const struct cats_fwd *t, const struct cats_fbind *b)
{
	if (!cats_fbind_tracked(t, b))
		return "idle";
	switch (b->tcp) {
	case CATS_TCPS_SYN_SENT:
	case CATS_TCPS_SYN_RECV:
		return "tcp-syn";
	case CATS_TCPS_FIN_WAIT:
		return "tcp-fin-wait";
	case CATS_TCPS_TIME_WAIT:
		return "tcp-fin";
	case CATS_TCPS_CLOSE:
		return "tcp-rst";
	default:
		return "idle";
	}
}
