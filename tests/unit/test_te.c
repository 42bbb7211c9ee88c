/*
 * test_te.c - the TE database: loading both forms of cats-topology(5),
 * refusing bad topologies with the element and the reason, net updates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pce/te.h"
#include "t.h"

#define LAB "tests/data/pce/lab.json"

static struct cats_te *
load(const char *text, char *err, size_t errlen)
{
	err[0] = '\0';
	return cats_te_load_mem(text, strlen(text), NULL, 7, err, errlen);
}

/* The topology is refused and the message contains want. */
static void
refused(const char *text, const char *want)
{
	char err[600];
	struct cats_te *te = load(text, err, sizeof(err));
	T_OK(te == NULL && strstr(err, want) != NULL,
	    "refused with \"%s\" (got \"%s\")", want, te ? "accepted" : err);
	cats_te_free(te);
}

static uint32_t
edge(const struct cats_te *te, const char *a, const char *b)
{
	uint32_t s = cats_te_node(te, a), d = cats_te_node(te, b);
	for (uint32_t e = te->row[s]; e < te->row[s + 1]; e++)
		if (te->dst[e] == d)
			return e;
	return CATS_TE_NONE;
}

static void
test_lab(void)
{
	char err[600];
	bool missing;
	struct cats_te *te = cats_te_load(LAB, NULL, 1, &missing, err,
	    sizeof(err));
	if (!T_OK(te != NULL, "lab loads (%s)", te ? "" : err))
		return;
	T_OK(cats_te_nodes(te) == 13 && cats_te_links(te) == 16 &&
	    cats_te_edges(te) == 32, "13 nodes, 16 links, 32 directions");
	T_OK(cats_te_gen(te) == 1, "generation from gen0");
	uint32_t a = cats_te_node(te, "IF-1"), p1 = cats_te_node(te, "P1");
	T_OK(a != CATS_TE_NONE && strcmp(cats_te_node_id(te, a), "IF-1") == 0,
	    "node lookup round trip");
	T_OK(cats_te_node(te, "nope") == CATS_TE_NONE, "unknown node");
	T_OK(cats_te_node_n(te, "P10", 2) == p1, "lookup by length");
	T_OK(te->label[a] == 16001 && te->msd[a] == CATS_TE_MSD_DEFAULT &&
	    te->msd[cats_te_node(te, "IF-9")] == 1, "labels and msd");
	T_OK(te->caps[cats_te_node(te, "P5")] ==
	    (CATS_TE_CAP_IP | CATS_TE_CAP_SRMPLS) &&
	    te->caps[a] == (CATS_TE_CAP_IP | CATS_TE_CAP_SRMPLS |
	    CATS_TE_CAP_SRV6), "capabilities derived from SIDs");
	uint32_t f = edge(te, "IF-1", "P1"), r = edge(te, "P1", "IF-1");
	T_OK(f != CATS_TE_NONE && r != CATS_TE_NONE &&
	    te->link[f] == te->link[r] &&
	    strcmp(cats_te_link_id(te, te->link[f]), "a1") == 0,
	    "a link both ways: two directions, one link id");
	T_OK(te->w[CATS_TE_W_IGP][f] == 10 && te->w[CATS_TE_W_DELAY][r] ==
	    1000 && te->max_bw[f] == 10000000000ULL && te->avail_bw[r] ==
	    10000000000ULL && te->ag[r] == 1, "reverse copies the attributes");
	T_OK(te->adj_label[f] == 24001 && te->adj_label[r] == 24001 &&
	    te->srlg_row[f + 1] - te->srlg_row[f] == 1 &&
	    te->srlg[te->srlg_row[r]] == 150,
	    "adjacency labels per direction, SRLGs on both");
	/* in-links */
	uint32_t n_in = te->rrow[p1 + 1] - te->rrow[p1];
	T_OK(n_in == 4, "P1 has 4 in-directions (got %u)", n_in);
	bool ok = true;
	for (uint32_t k = te->rrow[p1]; k < te->rrow[p1 + 1]; k++)
		ok &= te->dst[te->rin[k]] == p1 &&
		    cats_te_edge_src(te, te->rin[k]) == te->rsrc[k];
	T_OK(ok, "in-link index agrees with the out-links");
	T_OK(cats_te_link(te, "x13") != CATS_TE_NONE &&
	    cats_te_link(te, "zz") == CATS_TE_NONE, "link lookup");
	struct cats_te_mem m;
	cats_te_mem(te, &m);
	T_OK(m.node_bytes / te->n < 200 && m.edge_bytes / te->m < 100,
	    "compact: %zu bytes per node, %zu per direction",
	    m.node_bytes / te->n, m.edge_bytes / te->m);
	cats_te_free(te);

	te = cats_te_load("tests/data/pce/no-such-file.json", NULL, 1,
	    &missing, err, sizeof(err));
	T_OK(te == NULL && missing, "a missing file is told apart");
}

static const char two[] = "{\"nodes\":[{\"id\":\"A\"},{\"id\":\"B\"}],"
    "\"links\":[{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":5,"
    "\"delay_us\":10}]}";

static void
test_forms(void)
{
	char err[600];
	struct cats_te *te = load(two, err, sizeof(err));
	T_OK(te && te->n == 2 && te->m == 2 && te->w[CATS_TE_W_TE][0] == 5 &&
	    te->max_bw[0] == 10000000000ULL && te->avail_bw[0] ==
	    10000000000ULL && te->up[0] && te->gen == 7,
	    "defaults: te = igp, 10 Gbit/s, up, gen0");
	cats_te_free(te);
	/* The stream form: one element per value, nodes before links. */
	const char *lines =
	    "{\"name\":\"s\",\"generation\":42}\n"
	    "{\"node\":{\"id\":\"A\",\"node_label\":100}}\n"
	    "{\"node\":{\"id\":\"B\",\"node_label\":101}}\n"
	    "{\"link\":{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\","
	    "\"igp_metric\":5,\"delay_us\":10,\"directed\":true}}\n";
	te = load(lines, err, sizeof(err));
	T_OK(te && te->n == 2 && te->m == 1 && te->gen == 42,
	    "stream form, directed link, generation from the file (%s)",
	    te ? "" : err);
	cats_te_free(te);
	refused("{\"name\":\"s\"}\n{\"node\":{\"id\":\"A\"}}\n"
	    "{\"link\":{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\","
	    "\"igp_metric\":5,\"delay_us\":10}}\n",
	    "line 3: link \"l\": dst: no node \"B\" (dangling link)");
	te = load("{\"nodes\":[{\"id\":\"A\"},{\"id\":\"B\"}],\"links\":[{"
	    "\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":5,"
	    "\"delay_us\":10,\"max_bw\":100,\"avail_bw\":40,\"reverse\":{"
	    "\"igp_metric\":7,\"max_bw\":50}}]}", err, sizeof(err));
	T_OK(te && te->w[CATS_TE_W_IGP][1] == 7 && te->max_bw[1] == 50 &&
	    te->avail_bw[1] == 50 && te->avail_bw[0] == 40 &&
	    te->w[CATS_TE_W_DELAY][1] == 10, "reverse overrides (%s)",
	    te ? "" : err);
	cats_te_free(te);
}

static void
test_refused(void)
{
	refused("", "no nodes");
	refused("{\"nodes\":[]}", "no nodes");
	refused("{\"nodes\":[{\"id\":\"A\"}", "line 1:");
	refused("{\"nodes\":[{\"id\":\"A\"},{\"id\":\"A\"}]}",
	    "nodes[1] \"A\": id: duplicate node id");
	refused("{\"nodes\":[{\"name\":\"A\"}]}", "nodes[0]: id: required");
	refused("{\"nodes\":[{\"id\":\"\"}]}", "id: is empty");
	refused("{\"nodes\":[{\"id\":\"A\\u0001\"}]}", "control character");
	refused("{\"nodes\":[{\"id\":\"A\",\"colour\":1}]}",
	    "nodes[0] \"A\": colour: unknown key");
	refused("{\"nodes\":[{\"id\":\"A\",\"node_label\":5}]}",
	    "node_label: 5 is out of range 16..1048575");
	refused("{\"nodes\":[{\"id\":\"A\",\"msd\":40}]}",
	    "msd: 40 is out of range 1..16");
	refused("{\"nodes\":[{\"id\":\"A\",\"caps\":[\"srmpls\"]}]}",
	    "caps: srmpls needs a node_label");
	refused("{\"nodes\":[{\"id\":\"A\",\"caps\":[\"mpls\"]}]}",
	    "caps[0]: expected");
	refused("{\"nodes\":[{\"id\":\"A\",\"router_id\":\"10.0.0.300\"}]}",
	    "router_id: \"10.0.0.300\" is not an IP address");
	refused("{\"nodes\":[{\"id\":\"A\",\"srv6_sid\":\"10.0.0.1\"}]}",
	    "srv6_sid: an SRv6 SID is an IPv6 address");
	refused("{\"nodes\":[{\"id\":\"A\",\"srv6_locator\":\"fc00:1::/48\","
	    "\"srv6_sid\":\"fc00:2::1\"}]}", "srv6_sid: not within srv6_locator");
	refused("{\"nodes\":[{\"id\":\"A\",\"srv6_locator\":\"fc00:1::\"}]}",
	    "expected ADDRESS/LENGTH");
	refused("{\"nodes\":[{\"id\":\"A\",\"lat\":95}]}", "lat: expected");
	refused("{\"nodes\":[{\"id\":\"A\",\"node_label\":100},"
	    "{\"id\":\"B\",\"node_label\":100}]}",
	    "node \"B\": label 100 also used by node \"A\"");
	refused("{\"nodes\":[{\"id\":\"A\",\"srv6_sid\":\"fc00::1\"},"
	    "{\"id\":\"B\",\"srv6_sid\":\"fc00::1\"}]}",
	    "node \"B\": SRv6 SID fc00::1 also used by node \"A\"");
	/* links */
	const char *nodes = "{\"nodes\":[{\"id\":\"A\",\"node_label\":100},"
	    "{\"id\":\"B\",\"node_label\":101},{\"id\":\"C\"}],\"links\":[";
	struct {
		const char *link, *want;
	} cases[] = {
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"Z\",\"igp_metric\":1,"
		  "\"delay_us\":1}", "links[0] \"l\": dst: no node \"Z\" "
		  "(dangling link)" },
		{ "{\"id\":\"l\",\"src\":\"Y\",\"dst\":\"A\",\"igp_metric\":1,"
		  "\"delay_us\":1}", "src: no node \"Y\"" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"A\",\"igp_metric\":1,"
		  "\"delay_us\":1}", "dst: a link from a node to itself" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":-5,"
		  "\"delay_us\":1}", "links[0] \"l\": igp_metric: -5 is negative" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":0,"
		  "\"delay_us\":1}", "igp_metric: 0 is out of range 1..16777215" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":"
		  "16777216,\"delay_us\":1}", "igp_metric: 16777216 is out of "
		  "range" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1.5,"
		  "\"delay_us\":1}", "igp_metric: expected an integer" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
		  "\"delay_us\":0}", "delay_us: 0 is out of range 1..16777215" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1}",
		  "delay_us: required" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
		  "\"delay_us\":1,\"te_metric\":0}", "te_metric: 0 is out of "
		  "range" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
		  "\"delay_us\":1,\"max_bw\":10,\"avail_bw\":20}",
		  "avail_bw: 20 exceeds max_bw 10" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
		  "\"delay_us\":1,\"max_bw\":2000000000000000}",
		  "max_bw: 2000000000000000 is out of range" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
		  "\"delay_us\":1,\"srlgs\":[-1]}", "srlgs[0]: expected" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
		  "\"delay_us\":1,\"directed\":true,\"reverse\":{}}",
		  "reverse: a directed link has no reverse direction" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
		  "\"delay_us\":1,\"reverse\":{\"delay_us\":0}}",
		  "links[0] \"l\": reverse.delay_us: 0 is out of range" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
		  "\"delay_us\":1,\"reverse\":{\"colour\":0}}",
		  "links[0] \"l\": reverse: colour: unknown key" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
		  "\"delay_us\":1},{\"id\":\"l\",\"src\":\"B\",\"dst\":\"C\","
		  "\"igp_metric\":1,\"delay_us\":1}",
		  "links[1] \"l\": id: duplicate link id" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
		  "\"delay_us\":1,\"adj_label\":101}",
		  "link \"l\" at node \"A\": label 101 also used by node \"B\"" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
		  "\"delay_us\":1,\"adj_label\":200},{\"id\":\"m\",\"src\":\"A\","
		  "\"dst\":\"C\",\"igp_metric\":1,\"delay_us\":1,\"adj_label\":"
		  "200}", "link \"m\" at node \"A\": label 200 also used by link "
		  "\"l\" at node \"A\"" },
		{ "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
		  "\"delay_us\":1,\"adj_sid\":\"fc00::9\",\"reverse\":{"
		  "\"adj_sid\":\"fc00::9\"}}", "SRv6 SID fc00::9 also used" },
	};
	for (size_t i = 0; i < CATS_ARRAY_LEN(cases); i++) {
		char text[1024];
		snprintf(text, sizeof(text), "%s%s]}", nodes, cases[i].link);
		refused(text, cases[i].want);
	}
	/* The same local adjacency label at two nodes is fine. */
	char err[600], text[1024];
	snprintf(text, sizeof(text), "%s%s]}", nodes,
	    "{\"id\":\"l\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
	    "\"delay_us\":1,\"adj_label\":200,\"reverse\":{\"adj_label\":200}}");
	struct cats_te *te = load(text, err, sizeof(err));
	T_OK(te != NULL, "adjacency labels are local to their node (%s)",
	    te ? "" : err);
	cats_te_free(te);
	/* Caps on what a file may declare. */
	struct cats_te_limits lim = cats_te_limits_default;
	lim.max_nodes = 1;
	te = cats_te_load_mem(two, strlen(two), &lim, 1, err, sizeof(err));
	T_OK(te == NULL && strstr(err, "more than 1 nodes"), "node cap (%s)",
	    err);
	lim = cats_te_limits_default;
	lim.max_file = 10;
	te = cats_te_load_mem(two, strlen(two), &lim, 1, err, sizeof(err));
	T_OK(te == NULL && strstr(err, "exceeds the 10-byte limit"),
	    "file size cap (%s)", err);
	refused("[1,2]", "line 1: expected an object");
	/* Found by fuzz_topology: a key with a newline stays on one line. */
	refused("{\"li\\nse\":1,\"nodes\":[{\"id\":\"A\"}]}",
	    "line 1: li?se: unknown key");
	refused("{\"nodes\":{}}", "nodes: expected an array");
	refused("{\"version\":2,\"nodes\":[{\"id\":\"A\"}]}",
	    "only version 1");
	refused("{\"nodes\":[{\"id\":\"A\"}],\"nodes\":[]}", "duplicate");
}

static struct cats_net
net_link(const char *s, const char *d)
{
	struct cats_net n;
	memset(&n, 0, sizeof(n));
	n.scope = CATS_NET_LINK;
	n.src = s;
	n.dst = d;
	return n;
}

static void
test_net(void)
{
	char err[600];
	bool missing;
	struct cats_te *te = cats_te_load(LAB, NULL, 1, &missing, err,
	    sizeof(err));
	if (te == NULL)
		return;
	uint32_t f = edge(te, "IF-1", "P1"), r = edge(te, "P1", "IF-1");
	struct cats_net n = net_link("IF-1", "P1");
	CATS_SET(&n, NET, delay_us, 1234);
	CATS_SET(&n, NET, te_metric, 99);
	CATS_SET(&n, NET, avail_bw, 5);
	T_OK(cats_te_apply_net(te, &n, err, sizeof(err)) == 0 &&
	    te->gen == 2 && te->w[CATS_TE_W_DELAY][f] == 1234 &&
	    te->w[CATS_TE_W_TE][f] == 99 && te->avail_bw[f] == 5 &&
	    te->w[CATS_TE_W_DELAY][r] == 1000,
	    "a link update changes one direction and bumps the generation");
	n = net_link("IF-1", "P1");
	CATS_SET(&n, NET, delay_us, 0);
	T_OK(cats_te_apply_net(te, &n, err, sizeof(err)) < 0 && te->gen == 2 &&
	    strstr(err, "delay_us: 0 is out of range") &&
	    te->w[CATS_TE_W_DELAY][f] == 1234, "a bad update changes nothing");
	n = net_link("IF-1", "P1");
	CATS_SET(&n, NET, igp_metric, 7);
	CATS_SET(&n, NET, avail_bw, 20000000000ULL);
	T_OK(cats_te_apply_net(te, &n, err, sizeof(err)) < 0 &&
	    strstr(err, "avail_bw") && te->w[CATS_TE_W_IGP][f] == 10,
	    "avail above max refused, nothing applied (%s)", err);
	n = net_link("IF-1", "P1");
	CATS_SET(&n, NET, max_bw, 3);
	T_OK(cats_te_apply_net(te, &n, err, sizeof(err)) == 0 &&
	    te->avail_bw[f] == 3 && te->max_bw[f] == 3,
	    "a lower max_bw caps what is available");
	n = net_link("IF-1", "EF-2");
	T_OK(cats_te_apply_net(te, &n, err, sizeof(err)) < 0 &&
	    strstr(err, "no link from \"IF-1\" to \"EF-2\""), "no such link");
	n = net_link("IF-1", "Q");
	T_OK(cats_te_apply_net(te, &n, err, sizeof(err)) < 0 &&
	    strstr(err, "dst: no node \"Q\""), "no such node");
	n = net_link("IF-1", "P1");
	n.link_id = "b1";
	T_OK(cats_te_apply_net(te, &n, err, sizeof(err)) < 0,
	    "link_id must name a link between src and dst");
	n.link_id = "a1";
	CATS_SET(&n, NET, up, false);
	uint64_t g = te->gen;
	T_OK(cats_te_apply_net(te, &n, err, sizeof(err)) == 0 && !te->up[f] &&
	    te->up[r] && te->gen == g + 1, "link down by id");
	struct cats_net nn;
	memset(&nn, 0, sizeof(nn));
	nn.scope = CATS_NET_NODE;
	nn.node = "P3";
	CATS_SET(&nn, NET, up, false);
	uint32_t p3 = cats_te_node(te, "P3");
	T_OK(cats_te_apply_net(te, &nn, err, sizeof(err)) == 0, "node down");
	bool alldown = true;
	for (uint32_t e = te->row[p3]; e < te->row[p3 + 1]; e++)
		alldown &= !te->up[e];
	for (uint32_t k = te->rrow[p3]; k < te->rrow[p3 + 1]; k++)
		alldown &= !te->up[te->rin[k]];
	T_OK(alldown, "every link of a node that is down is down");
	nn.scope = CATS_NET_PATH;
	nn.src = "IF-1";
	nn.dst = "EF-2";
	g = te->gen;
	T_OK(cats_te_apply_net(te, &nn, err, sizeof(err)) == 1 && te->gen == g,
	    "path measurements leave the database alone");
	cats_te_free(te);

	/* Parallel links need a link id. */
	te = load("{\"nodes\":[{\"id\":\"A\"},{\"id\":\"B\"}],\"links\":["
	    "{\"id\":\"p\",\"src\":\"A\",\"dst\":\"B\",\"igp_metric\":1,"
	    "\"delay_us\":1},{\"id\":\"q\",\"src\":\"A\",\"dst\":\"B\","
	    "\"igp_metric\":1,\"delay_us\":1}]}", err, sizeof(err));
	n = net_link("A", "B");
	CATS_SET(&n, NET, delay_us, 5);
	T_OK(te && cats_te_apply_net(te, &n, err, sizeof(err)) < 0 &&
	    strstr(err, "parallel links"), "parallel links: ambiguous");
	n.link_id = "q";
	T_OK(te && cats_te_apply_net(te, &n, err, sizeof(err)) == 0 &&
	    te->w[CATS_TE_W_DELAY][1] == 5 && te->w[CATS_TE_W_DELAY][0] == 1,
	    "parallel links: by id");
	cats_te_free(te);
}

int
main(void)
{
	test_lab();
	test_forms();
	test_refused();
	test_net();
	return t_done();
}
