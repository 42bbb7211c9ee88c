/*
 * topogen - write a synthetic topology (te_synth.h) as cats-topology(5)
 * JSON, one element per line (the stream form, for large files).
 *
 * usage: topogen [-s seed] nodes > topology.json
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "te_synth.h"

static int
out_node(const struct cats_te_node_spec *n, void *arg)
{
	char rid[64], loc[64], sid[64];
	(void)arg;
	printf("{\"node\":{\"id\":\"%s\",\"router_id\":\"%s\",\"node_label\":%"
	    PRIu32 ",\"srv6_locator\":\"%s/%u\",\"srv6_sid\":\"%s\","
	    "\"msd\":%u}}\n", n->id, cats_ip_fmt(&n->router_id, rid,
	    sizeof(rid)), n->label, cats_ip_fmt(&n->srv6_locator, loc,
	    sizeof(loc)), n->srv6_plen, cats_ip_fmt(&n->srv6_sid, sid,
	    sizeof(sid)), n->msd);
	return ferror(stdout) ? -1 : 0;
}

static void
dir(const struct cats_te_dir *d, bool adj_only)
{
	char a[64];
	if (!adj_only)
		printf("\"igp_metric\":%" PRIu32 ",\"te_metric\":%" PRIu32
		    ",\"delay_us\":%" PRIu32 ",\"max_bw\":%" PRIu64 ",",
		    d->igp, d->te, d->delay_us, d->max_bw);
	printf("\"avail_bw\":%" PRIu64 ",\"adj_label\":%" PRIu32
	    ",\"adj_sid\":\"%s\"", d->avail_bw, d->adj_label,
	    cats_ip_fmt(&d->adj_sid, a, sizeof(a)));
}

static int
out_link(const struct cats_te_link_spec *l, void *arg)
{
	(void)arg;
	printf("{\"link\":{\"id\":\"%s\",\"src\":\"%s\",\"dst\":\"%s\",", l->id,
	    l->src, l->dst);
	if (l->admin_groups)
		printf("\"admin_groups\":%" PRIu32 ",", l->admin_groups);
	if (l->nsrlgs)
		printf("\"srlgs\":[%" PRIu32 "],", l->srlgs[0]);
	dir(&l->fwd, false);
	/* Both directions share metrics; availability and SIDs differ. */
	printf(",\"reverse\":{");
	dir(&l->rev, true);
	printf("}}}\n");
	return ferror(stdout) ? -1 : 0;
}

int
main(int argc, char **argv)
{
	struct cats_synth p = { .seed = 1 };
	int ch;
	while ((ch = getopt(argc, argv, "s:")) != -1) {
		if (ch == 's')
			p.seed = strtoull(optarg, NULL, 0);
		else
			goto usage;
	}
	if (optind + 1 != argc)
		goto usage;
	p.nodes = (uint32_t)strtoul(argv[optind], NULL, 0);
	static const struct cats_synth_cbs cbs = { out_node, out_link };
	printf("{\"name\":\"synthetic-%" PRIu32 "-%" PRIu64 "\",\"version\":1,"
	    "\"source\":\"tests/tools/topogen (bench/lib/te_synth.c)\"}\n", p.nodes,
	    p.seed);
	if (cats_te_synth(&p, &cbs, NULL) < 0) {
		fprintf(stderr, "topogen: cannot generate %" PRIu32 " nodes "
		    "(16 to 1032575)\n", p.nodes);
		return 1;
	}
	return fflush(stdout) == 0 ? 0 : 1;
usage:
	fprintf(stderr, "usage: topogen [-s seed] nodes > topology.json\n");
	return 2;
}
