/*
 * fuzz_topo.h - the small topology the PCE fuzz targets answer over
 * (fuzz_path_req, fuzz_pcep): IF-1 to EF-2 over P1 or P2, labels, SIDs,
 * router ids, one directed link.
 */
#ifndef FUZZ_TOPO_H
#define FUZZ_TOPO_H

static const char topo[] =
    "{\"nodes\":["
    "{\"id\":\"IF-1\",\"router_id\":\"192.0.2.1\",\"node_label\":16001,"
    "\"srv6_sid\":\"fc00::1\",\"msd\":3},"
    "{\"id\":\"P1\",\"router_id\":\"192.0.2.11\",\"node_label\":16002,"
    "\"srv6_sid\":\"fc00::2\"},"
    "{\"id\":\"P2\",\"router_id\":\"2001:db8::12\",\"node_label\":16003},"
    "{\"id\":\"EF-2\",\"router_id\":\"192.0.2.2\",\"node_label\":16004,"
    "\"srv6_sid\":\"fc00::4\"}],"
    "\"links\":["
    "{\"id\":\"a\",\"src\":\"IF-1\",\"dst\":\"P1\",\"igp_metric\":10,"
    "\"delay_us\":100,\"admin_groups\":1,\"srlgs\":[7],\"adj_label\":24001,"
    "\"adj_sid\":\"fc00::a1\",\"reverse\":{\"adj_label\":24001}},"
    "{\"id\":\"b\",\"src\":\"P1\",\"dst\":\"EF-2\",\"igp_metric\":10,"
    "\"delay_us\":100,\"adj_label\":24002,\"adj_sid\":\"fc00::b1\"},"
    "{\"id\":\"c\",\"src\":\"IF-1\",\"dst\":\"P2\",\"igp_metric\":30,"
    "\"te_metric\":1,\"delay_us\":50,\"max_bw\":1000,\"adj_label\":24003},"
    "{\"id\":\"d\",\"src\":\"P2\",\"dst\":\"EF-2\",\"igp_metric\":30,"
    "\"delay_us\":50,\"adj_label\":24004,\"directed\":true}]}";

#endif
