/*
 * rec.h - the records cats tools exchange (see cats-records(5)).
 *
 * Every record is a CBOR map with a "type" entry.  Each record type and each
 * nested map is defined once below as a field list; the list generates the C
 * struct, the field index constants and the schema table that drives
 * decoding, validation, encoding and documentation (`cats-cbor schema`).
 *
 * A field list entry is
 *   X(P, name, KIND, ctype, flags, min, max, sub, enums, unit, doc)
 * where KIND is one of the CATS_F_* kinds, flags is REQ or OPT, [min, max]
 * is the value range (U64) or the length/count limit (TEXT, BYTES, arrays),
 * sub names the nested schema of MAP and ARR_MAP fields, enums the value
 * names of ENUM fields.
 *
 * Presence: every struct starts with `uint64_t has`, bit i set when field i
 * is present.  Text, bytes and arrays are also absent when NULL/empty.  Use
 * CATS_SET() to set an optional number and CATS_HAS() to test one.
 */
#ifndef CATS_REC_H
#define CATS_REC_H

#include "base/cats.h"
#include "rec/cbor_scan.h"

/* An IPv4 or IPv6 address; af is 0 when absent. Text on the wire. */
struct cats_ip {
	uint8_t af;	/* 4 or 6 */
	uint8_t a[16];	/* network order; IPv4 uses a[0..3] */
};

struct cats_bytes {
	const uint8_t *p;
	size_t n;
};

struct cats_kv {
	const char *k;
	uint64_t v;
};

struct cats_arr_u64 { uint64_t *v; size_t n; };
struct cats_arr_text { const char **v; size_t n; };
struct cats_arr_ip { struct cats_ip *v; size_t n; };
struct cats_arr_kv { struct cats_kv *v; size_t n; };

enum cats_fkind {
	CATS_F_U64,
	CATS_F_BOOL,
	CATS_F_TEXT,
	CATS_F_BYTES,
	CATS_F_ENUM,
	CATS_F_ADDR,
	CATS_F_MAP,
	CATS_F_ARR_U64,
	CATS_F_ARR_TEXT,
	CATS_F_ARR_ADDR,
	CATS_F_ARR_MAP,
	CATS_F_KV,	/* map of text keys to unsigned integers */
};

#define CATS_REQ 1
#define CATS_OPT 0
#define CATS_U32 UINT64_C(4294967295)
#define CATS_U53 UINT64_C(9007199254740991)	/* exact in JSON/jq */
#define CATS_ID 128	/* default length limit of identifiers */

/* ---- value names of ENUM fields (text on the wire) ---- */

enum cats_health { CATS_HEALTHY, CATS_DEGRADED, CATS_UNHEALTHY, CATS_UNKNOWN };
extern const char *const cats_health_names[];
/* Per-SCI reporting state (000 §5.3). */
enum cats_sci_state { CATS_SCI_ACTIVE, CATS_SCI_HEALTHY, CATS_SCI_STALE,
	CATS_SCI_FAILED };
extern const char *const cats_sci_state_names[];
/* release: the operator's removal of the listed entries whoever owns them,
 * taken only on cats-select's control stream (cats_cst_release). */
enum cats_metric_op { CATS_OP_FULL, CATS_OP_DELTA, CATS_OP_WITHDRAW,
	CATS_OP_HEARTBEAT, CATS_OP_REFRESH, CATS_OP_RELEASE };
extern const char *const cats_metric_op_names[];
enum cats_sync_mode { CATS_SYNC_NONE, CATS_SYNC_FULL, CATS_SYNC_INCREMENTAL };
extern const char *const cats_sync_mode_names[];
enum cats_ack_result { CATS_ACK_OK, CATS_ACK_STALE, CATS_ACK_REPLAY,
	CATS_ACK_UNAUTHORIZED, CATS_ACK_BAD, CATS_ACK_RESYNC };
extern const char *const cats_ack_result_names[];
enum cats_net_scope { CATS_NET_LINK, CATS_NET_PATH, CATS_NET_NODE };
extern const char *const cats_net_scope_names[];
enum cats_addr_kind { CATS_ADDR_VIRTUAL, CATS_ADDR_ANYCAST,
	CATS_ADDR_DEDICATED };
extern const char *const cats_addr_kind_names[];
enum cats_affinity { CATS_AFF_5TUPLE, CATS_AFF_CLIENT, CATS_AFF_TENANT_CLIENT };
extern const char *const cats_affinity_names[];
enum cats_on_failure { CATS_ONFAIL_FAIL, CATS_ONFAIL_RECONNECT };
extern const char *const cats_on_failure_names[];
/* Data plane of a path, and encapsulation of a binding. */
enum cats_dataplane { CATS_DP_IP, CATS_DP_IPIP, CATS_DP_SRV6, CATS_DP_SRMPLS };
extern const char *const cats_dataplane_names[];
enum cats_path_metric { CATS_METRIC_IGP, CATS_METRIC_TE, CATS_METRIC_DELAY,
	CATS_METRIC_HOPS };
extern const char *const cats_path_metric_names[];
enum cats_path_status { CATS_PATH_OK, CATS_PATH_NO_PATH, CATS_PATH_ERROR };
extern const char *const cats_path_status_names[];
enum cats_seg_kind { CATS_SEG_NODE, CATS_SEG_ADJ };
extern const char *const cats_seg_kind_names[];
enum cats_bind_op { CATS_BIND_INSTALL, CATS_BIND_REFRESH, CATS_BIND_REMOVE };
extern const char *const cats_bind_op_names[];
/* The flow state machine of 001. */
enum cats_flow_state { CATS_FS_ABSENT, CATS_FS_PENDING,
	CATS_FS_DESTINATION_SELECTED, CATS_FS_BINDING_READY, CATS_FS_ACTIVE,
	CATS_FS_DRAINING, CATS_FS_FAILED, CATS_FS_RECONNECT_REQUIRED };
extern const char *const cats_flow_state_names[];
enum cats_status_event { CATS_EV_INSTALLED, CATS_EV_REFRESHED, CATS_EV_FAILED,
	CATS_EV_EXPIRED, CATS_EV_REMOVED, CATS_EV_HELLO, CATS_EV_PATH_DOWN,
	CATS_EV_PATH_UP, CATS_EV_KEEPALIVE };
extern const char *const cats_status_event_names[];
enum cats_req_mode { CATS_MODE_NONE, CATS_MODE_A, CATS_MODE_B };
extern const char *const cats_req_mode_names[];
/* A C-SMA's site-local steering decision (000 §10.3). */
enum cats_steer_op { CATS_STEER_REDIRECT, CATS_STEER_END };
extern const char *const cats_steer_op_names[];

/* ---- nested maps ---- */

/* Constraints: hard limits of a service, a request or a path request. */
#define CATS_CON_FIELDS(X) \
 X(CON, max_delay_us, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "us", "maximum network delay, headend to egress") \
 X(CON, max_comp_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "maximum computing time") \
 X(CON, max_price, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "", "maximum price") \
 X(CON, min_reputation, U64, uint64_t, CATS_OPT, 0, 255, NULL, NULL, "", "minimum reputation") \
 X(CON, min_security, U64, uint64_t, CATS_OPT, 0, 255, NULL, NULL, "", "minimum security level") \
 X(CON, min_bw, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "bit/s", "minimum available bandwidth on every link") \
 X(CON, max_hops, U64, uint64_t, CATS_OPT, 0, 4096, NULL, NULL, "hops", "maximum number of links") \
 X(CON, metric, ENUM, int, CATS_OPT, 0, 0, NULL, cats_path_metric_names, "", "metric the path minimizes (default te)") \
 X(CON, include_any, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "bits", "admin groups: a link must have one of these") \
 X(CON, include_all, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "bits", "admin groups: a link must have all of these") \
 X(CON, exclude_any, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "bits", "admin groups: a link must have none of these") \
 X(CON, exclude_nodes, ARR_TEXT, struct cats_arr_text, CATS_OPT, 0, 64, NULL, NULL, "", "node ids the path must avoid") \
 X(CON, exclude_links, ARR_TEXT, struct cats_arr_text, CATS_OPT, 0, 64, NULL, NULL, "", "link ids the path must avoid") \
 X(CON, exclude_srlgs, ARR_U64, struct cats_arr_u64, CATS_OPT, 0, 64, NULL, NULL, "", "shared-risk link groups the path must avoid")

/* A flow key: the 5-tuple and the tenant. */
#define CATS_FLOW_FIELDS(X) \
 X(FLOW, proto, U64, uint64_t, CATS_REQ, 0, 255, NULL, NULL, "", "IP protocol number (6 TCP, 17 UDP)") \
 X(FLOW, src, ADDR, struct cats_ip, CATS_REQ, 0, 0, NULL, NULL, "", "source address") \
 X(FLOW, sport, U64, uint64_t, CATS_OPT, 0, 65535, NULL, NULL, "", "source port") \
 X(FLOW, dst, ADDR, struct cats_ip, CATS_REQ, 0, 0, NULL, NULL, "", "destination address") \
 X(FLOW, dport, U64, uint64_t, CATS_OPT, 0, 65535, NULL, NULL, "", "destination port") \
 X(FLOW, tenant, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "tenant context")

/* One SCI's entry in a metric advertisement. */
#define CATS_ENT_FIELDS(X) \
 X(ENT, csci_id, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "CSCI-ID") \
 X(ENT, cs_id, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "CS-ID") \
 X(ENT, health, ENUM, int, CATS_OPT, 0, 0, NULL, cats_health_names, "", "instance health") \
 X(ENT, state, ENUM, int, CATS_OPT, 0, 0, NULL, cats_sci_state_names, "", "SCI reporting state (000 5.3)") \
 X(ENT, gas, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "slots", "Global Available Slots contributed") \
 X(ENT, comp_time_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "computing time") \
 X(ENT, price, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "", "price") \
 X(ENT, reputation, U64, uint64_t, CATS_OPT, 0, 255, NULL, NULL, "", "reputation") \
 X(ENT, security_level, U64, uint64_t, CATS_OPT, 0, 255, NULL, NULL, "", "security level") \
 X(ENT, ext, KV, struct cats_arr_kv, CATS_OPT, 0, 16, NULL, NULL, "", "optional extension metrics") \
 X(ENT, locator, ADDR, struct cats_ip, CATS_OPT, 0, 0, NULL, NULL, "", "service locator of the instance") \
 X(ENT, port, U64, uint64_t, CATS_OPT, 0, 65535, NULL, NULL, "", "service port of the instance") \
 X(ENT, gen, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "update generation (the SCI report sequence)") \
 X(ENT, ts, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "ms", "time of the last SCI report") \
 X(ENT, ttl_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "soft-state lifetime of the entry") \
 X(ENT, flags, ARR_TEXT, struct cats_arr_text, CATS_OPT, 0, 8, NULL, NULL, "", "warning flags (e.g. gas-jump, flap)") \
 X(ENT, reported, ENUM, int, CATS_OPT, 0, 0, NULL, cats_health_names, "", "state files: health as last reported, before hysteresis") \
 X(ENT, streak, U64, uint64_t, CATS_OPT, 0, 255, NULL, NULL, "reports", "state files: consecutive reports on the reported side of HEALTHY") \
 X(ENT, confirmed, U64, uint64_t, CATS_OPT, 0, 255, NULL, NULL, "reports", "state files: reports since the SCI became ACTIVE") \
 X(ENT, interval_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "state files: expected report interval") \
 X(ENT, site, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "site of the entry when it differs from the record's (a domain C-SMA aggregating sites)") \
 X(ENT, egress, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "egress node of the entry's site when it differs from the record's")

/* A site aggregate per CS-ID in a metric advertisement. */
#define CATS_SITE_FIELDS(X) \
 X(SITE, cs_id, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "CS-ID") \
 X(SITE, gas, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "slots", "site GAS (sum over SCIs)") \
 X(SITE, comp_time_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "site computing time (GAS-weighted mean of healthy SCIs)") \
 X(SITE, health, ENUM, int, CATS_OPT, 0, 0, NULL, cats_health_names, "", "site health summary") \
 X(SITE, healthy, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "", "healthy SCIs") \
 X(SITE, total, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "", "SCIs")

/* A service address of a service context. */
#define CATS_ADR_FIELDS(X) \
 X(ADR, addr, ADDR, struct cats_ip, CATS_REQ, 0, 0, NULL, NULL, "", "service address") \
 X(ADR, kind, ENUM, int, CATS_OPT, 0, 0, NULL, cats_addr_kind_names, "", "virtual, anycast or dedicated") \
 X(ADR, port, U64, uint64_t, CATS_OPT, 0, 65535, NULL, NULL, "", "port (absent: any)") \
 X(ADR, proto, U64, uint64_t, CATS_OPT, 0, 255, NULL, NULL, "", "IP protocol (absent: any)") \
 X(ADR, tenant, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "tenant this address belongs to")

/* The C-PS decision a path request carries and a path reply returns. */
#define CATS_DEC_FIELDS(X) \
 X(DEC, cs_id, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "resolved CS-ID") \
 X(DEC, csci_id, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "selected CSCI-ID") \
 X(DEC, locator, ADDR, struct cats_ip, CATS_REQ, 0, 0, NULL, NULL, "", "selected service locator") \
 X(DEC, port, U64, uint64_t, CATS_OPT, 0, 65535, NULL, NULL, "", "selected service port") \
 X(DEC, egress, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "egress node of the selected site") \
 X(DEC, site, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "selected site") \
 X(DEC, policy, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "selection policy") \
 X(DEC, policy_version, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "policy version") \
 X(DEC, service_version, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "service context version") \
 X(DEC, cst_gen, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "CST generation used") \
 X(DEC, nst_gen, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "NST generation used") \
 X(DEC, ts, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "ms", "decision time") \
 X(DEC, cost_us, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "us", "expected total latency of the choice") \
 X(DEC, fallback, BOOL, bool, CATS_OPT, 0, 0, NULL, NULL, "", "a configured fallback was used") \
 X(DEC, on_failure, ENUM, int, CATS_OPT, 0, 0, NULL, cats_on_failure_names, "", "what an instance failure does to the flow") \
 X(DEC, idle_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "binding idle lifetime") \
 X(DEC, hard_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "binding hard lifetime") \
 X(DEC, affinity, ENUM, int, CATS_OPT, 0, 0, NULL, cats_affinity_names, "", "flow key the service's affinity needs: 5tuple, client or tenant-client")

/* One segment of a path: a node SID or an adjacency SID. */
#define CATS_SEG_FIELDS(X) \
 X(SEG, kind, ENUM, int, CATS_REQ, 0, 0, NULL, cats_seg_kind_names, "", "node or adj") \
 X(SEG, node, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "node (the target of a node SID, the local end of an adjacency)") \
 X(SEG, remote, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "remote end of an adjacency") \
 X(SEG, label, U64, uint64_t, CATS_OPT, 16, 1048575, NULL, NULL, "", "SR-MPLS label") \
 X(SEG, sid, ADDR, struct cats_ip, CATS_OPT, 0, 0, NULL, NULL, "", "SRv6 SID")

/* Forward half of a binding. */
#define CATS_BFW_FIELDS(X) \
 X(BFW, match, MAP, struct cats_flow, CATS_REQ, 0, 0, &cats_schema_flow, NULL, "", "client-side flow key") \
 X(BFW, locator, ADDR, struct cats_ip, CATS_REQ, 0, 0, NULL, NULL, "", "new destination (the selected locator)") \
 X(BFW, port, U64, uint64_t, CATS_OPT, 0, 65535, NULL, NULL, "", "new destination port (absent: unchanged)") \
 X(BFW, encap, ENUM, int, CATS_REQ, 0, 0, NULL, cats_dataplane_names, "", "encapsulation toward the egress") \
 X(BFW, sids, ARR_ADDR, struct cats_arr_ip, CATS_OPT, 0, 16, NULL, NULL, "", "SRv6 segment list, first segment first") \
 X(BFW, labels, ARR_U64, struct cats_arr_u64, CATS_OPT, 0, 16, NULL, NULL, "", "SR-MPLS label stack, top first") \
 X(BFW, tunnel_dst, ADDR, struct cats_ip, CATS_OPT, 0, 0, NULL, NULL, "", "outer destination (IP-in-IP)") \
 X(BFW, tunnel_src, ADDR, struct cats_ip, CATS_OPT, 0, 0, NULL, NULL, "", "outer source (absent: the forwarder's own)") \
 X(BFW, egress, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "egress forwarder")

/* Reverse half of a binding. */
#define CATS_BRV_FIELDS(X) \
 X(BRV, match, MAP, struct cats_flow, CATS_REQ, 0, 0, &cats_schema_flow, NULL, "", "service-side flow key of return packets") \
 X(BRV, restore_src, ADDR, struct cats_ip, CATS_REQ, 0, 0, NULL, NULL, "", "source to restore (the service address)") \
 X(BRV, restore_port, U64, uint64_t, CATS_OPT, 0, 65535, NULL, NULL, "", "source port to restore") \
 X(BRV, owner, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "forwarder owning the reverse state") \
 X(BRV, encap, ENUM, int, CATS_OPT, 0, 0, NULL, cats_dataplane_names, "", "encapsulation of the return path") \
 X(BRV, sids, ARR_ADDR, struct cats_arr_ip, CATS_OPT, 0, 16, NULL, NULL, "", "SRv6 segment list of the return path") \
 X(BRV, tunnel_dst, ADDR, struct cats_ip, CATS_OPT, 0, 0, NULL, NULL, "", "outer destination of the return path")

/* ---- records ---- */

/* sci-report: an SCI's report to the C-SMA (000 §4). */
#define CATS_SCI_FIELDS(X) \
 X(SCI, csci_id, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "CSCI-ID of the reporting SCI") \
 X(SCI, cs_id, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "CS-ID the report is for") \
 X(SCI, seq, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "", "report sequence number, increasing per SCI") \
 X(SCI, ts, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "ms", "report time") \
 X(SCI, health, ENUM, int, CATS_REQ, 0, 0, NULL, cats_health_names, "", "instance health") \
 X(SCI, gas, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "slots", "Global Available Slots") \
 X(SCI, comp_time_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "computing time of one request") \
 X(SCI, price, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "", "price") \
 X(SCI, reputation, U64, uint64_t, CATS_OPT, 0, 255, NULL, NULL, "", "reputation") \
 X(SCI, security_level, U64, uint64_t, CATS_OPT, 0, 255, NULL, NULL, "", "security level") \
 X(SCI, ext, KV, struct cats_arr_kv, CATS_OPT, 0, 16, NULL, NULL, "", "optional extension metrics") \
 X(SCI, interval_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "expected reporting interval") \
 X(SCI, locator, ADDR, struct cats_ip, CATS_OPT, 0, 0, NULL, NULL, "", "service locator of the instance") \
 X(SCI, port, U64, uint64_t, CATS_OPT, 0, 65535, NULL, NULL, "", "service port of the instance") \
 X(SCI, instances, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "", "instances behind the SCI") \
 X(SCI, token, BYTES, struct cats_bytes, CATS_OPT, 0, 2048, NULL, NULL, "", "signed SCI token (CWT) made by cats-key token")

/* metric: a C-SMA advertisement to the C-PS (000 §6-9). */
#define CATS_MET_FIELDS(X) \
 X(MET, op, ENUM, int, CATS_REQ, 0, 0, NULL, cats_metric_op_names, "", "full, delta, withdraw, heartbeat or refresh") \
 X(MET, sma_id, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "C-SMA identity") \
 X(MET, epoch, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "", "C-SMA epoch, grows on every restart") \
 X(MET, seq, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "", "advertisement sequence, strictly increasing in an epoch") \
 X(MET, ts, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "ms", "send time") \
 X(MET, nonce, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "strictly increasing nonce per sender") \
 X(MET, site, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "service site") \
 X(MET, egress, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "egress node of the site (a TE database node)") \
 X(MET, ttl_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "soft-state lifetime at the C-PS") \
 X(MET, part, U64, uint64_t, CATS_OPT, 1, 65535, NULL, NULL, "", "part number of a multi-record full snapshot") \
 X(MET, parts, U64, uint64_t, CATS_OPT, 1, 65535, NULL, NULL, "", "number of parts of the snapshot") \
 X(MET, entries, ARR_MAP, struct cats_arr_ent, CATS_OPT, 0, 1024, &cats_schema_entry, NULL, "", "per-SCI entries") \
 X(MET, sites, ARR_MAP, struct cats_arr_site, CATS_OPT, 0, 256, &cats_schema_site, NULL, "", "per-CS-ID site aggregates") \
 X(MET, reason, TEXT, const char *, CATS_OPT, 0, 256, NULL, NULL, "", "why (withdraw: failed, evicted, removed)") \
 X(MET, last_full, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "ms", "state file only: when the last full snapshot was acknowledged")

/* sync: the C-PS asks a C-SMA for a full or incremental sync (000 §9.3). */
#define CATS_SYNC_FIELDS(X) \
 X(SYNC, mode, ENUM, int, CATS_REQ, 0, 0, NULL, cats_sync_mode_names, "", "full or incremental") \
 X(SYNC, ts, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "ms", "request time") \
 X(SYNC, sma_id, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "C-SMA asked") \
 X(SYNC, ps_id, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "C-PS asking") \
 X(SYNC, epoch, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "C-SMA epoch the C-PS knows") \
 X(SYNC, from_seq, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "incremental: last sequence applied") \
 X(SYNC, nonce, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "strictly increasing nonce per sender")

/* ack: the C-PS acknowledges an advertisement. */
#define CATS_ACK_FIELDS(X) \
 X(ACK, sma_id, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "C-SMA acknowledged") \
 X(ACK, epoch, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "", "C-SMA epoch") \
 X(ACK, seq, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "", "highest sequence applied") \
 X(ACK, ts, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "ms", "time") \
 X(ACK, ps_id, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "C-PS identity") \
 X(ACK, ps_epoch, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "C-PS epoch, grows on every restart") \
 X(ACK, result, ENUM, int, CATS_OPT, 0, 0, NULL, cats_ack_result_names, "", "ok, stale, replay, unauthorized, bad or resync") \
 X(ACK, want, ENUM, int, CATS_OPT, 0, 0, NULL, cats_sync_mode_names, "", "sync the C-PS asks for") \
 X(ACK, refresh, BOOL, bool, CATS_OPT, 0, 0, NULL, NULL, "", "the C-PS accepts refresh (keepalive) messages") \
 X(ACK, reason, TEXT, const char *, CATS_OPT, 0, 256, NULL, NULL, "", "explanation")

/* net: network or path metrics for the NST and the TE database. */
#define CATS_NET_FIELDS(X) \
 X(NET, scope, ENUM, int, CATS_REQ, 0, 0, NULL, cats_net_scope_names, "", "link, path or node") \
 X(NET, ts, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "ms", "measurement time") \
 X(NET, gen, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "update generation") \
 X(NET, source, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "reporting C-NMA") \
 X(NET, ttl_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "validity") \
 X(NET, src, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "link: local node; path: headend") \
 X(NET, dst, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "link: remote node; path: egress") \
 X(NET, node, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "node: the node") \
 X(NET, link_id, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "link id (parallel links)") \
 X(NET, delay_us, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "us", "delay") \
 X(NET, igp_metric, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "", "IGP metric") \
 X(NET, te_metric, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "", "TE metric") \
 X(NET, max_bw, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "bit/s", "maximum bandwidth") \
 X(NET, avail_bw, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "bit/s", "available bandwidth") \
 X(NET, hops, U64, uint64_t, CATS_OPT, 0, 4096, NULL, NULL, "", "path: hop count") \
 X(NET, up, BOOL, bool, CATS_OPT, 0, 0, NULL, NULL, "", "reachable / operationally up")

/* service: a service context (CMAS-style registry). */
#define CATS_SVC_FIELDS(X) \
 X(SVC, cs_id, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "CS-ID") \
 X(SVC, version, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "", "service context version") \
 X(SVC, ts, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "ms", "time") \
 X(SVC, tenant, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "tenant (absent: every tenant)") \
 X(SVC, addresses, ARR_MAP, struct cats_arr_adr, CATS_OPT, 0, 16, &cats_schema_address, NULL, "", "service addresses") \
 X(SVC, authorized, ARR_TEXT, struct cats_arr_text, CATS_OPT, 0, 1024, NULL, NULL, "", "authorized CSCI-IDs") \
 X(SVC, sites, ARR_TEXT, struct cats_arr_text, CATS_OPT, 0, 256, NULL, NULL, "", "authorized sites") \
 X(SVC, constraints, MAP, struct cats_constraints, CATS_OPT, 0, 0, &cats_schema_constraints, NULL, "", "default hard constraints") \
 X(SVC, policy, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "joint-selection policy") \
 X(SVC, policy_version, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "policy version") \
 X(SVC, affinity, ENUM, int, CATS_OPT, 0, 0, NULL, cats_affinity_names, "", "flow key: 5tuple, client or tenant-client") \
 X(SVC, fallback, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "configured fallback (see cats-select(1))") \
 X(SVC, on_failure, ENUM, int, CATS_OPT, 0, 0, NULL, cats_on_failure_names, "", "instance failure: fail or reconnect") \
 X(SVC, dataplane, ENUM, int, CATS_OPT, 0, 0, NULL, cats_dataplane_names, "", "path data plane") \
 X(SVC, port, U64, uint64_t, CATS_OPT, 0, 65535, NULL, NULL, "", "service port at the instances (absent: unchanged)") \
 X(SVC, idle_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "binding idle lifetime") \
 X(SVC, hard_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "binding hard lifetime")

/* request: an ingress forwarder asks the C-PS to resolve a new flow. */
#define CATS_REQ_FIELDS(X) \
 X(REQ, txn, U64, uint64_t, CATS_REQ, 1, CATS_U53, NULL, NULL, "", "transaction id") \
 X(REQ, ingress, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "ingress forwarder (its TE database node)") \
 X(REQ, ts, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "ms", "time the first packet arrived") \
 X(REQ, gen, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "request generation (forwarder epoch)") \
 X(REQ, tenant, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "tenant context") \
 X(REQ, flow, MAP, struct cats_flow, CATS_REQ, 0, 0, &cats_schema_flow, NULL, "", "flow key of the first packet") \
 X(REQ, cs_id, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "explicit CS-ID (Mode A or B)") \
 X(REQ, constraints, MAP, struct cats_constraints, CATS_OPT, 0, 0, &cats_schema_constraints, NULL, "", "client constraints") \
 X(REQ, mode, ENUM, int, CATS_OPT, 0, 0, NULL, cats_req_mode_names, "", "request carriage: none, a or b") \
 X(REQ, held, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "packets", "packets held pending the decision") \
 X(REQ, dataplane, ENUM, int, CATS_OPT, 0, 0, NULL, cats_dataplane_names, "", "the data plane the forwarder asks for (one it advertises)") \
 X(REQ, msd, U64, uint64_t, CATS_OPT, 1, 255, NULL, NULL, "segments", "the most segments the forwarder pushes in that encapsulation (its advertised MSD)") \
 X(REQ, dataplanes, ARR_TEXT, struct cats_arr_text, CATS_OPT, 0, 8, NULL, NULL, "", "every data plane the forwarder advertises, preferred first; a service's own may be one of them (names not known are ignored)") \
 X(REQ, deadline, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "ms", "the pending record expires at")

/* path-req: the C-PS asks the PCE for a path to the selected egress. */
#define CATS_PRQ_FIELDS(X) \
 X(PRQ, txn, U64, uint64_t, CATS_REQ, 1, CATS_U53, NULL, NULL, "", "transaction id") \
 X(PRQ, ts, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "ms", "time") \
 X(PRQ, headend, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "headend node (the ingress forwarder)") \
 X(PRQ, endpoint, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "endpoint node (the selected egress)") \
 X(PRQ, domain, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "routing domain") \
 X(PRQ, dataplane, ENUM, int, CATS_REQ, 0, 0, NULL, cats_dataplane_names, "", "ip, ipip, srv6 or srmpls") \
 X(PRQ, msd, U64, uint64_t, CATS_OPT, 1, 255, NULL, NULL, "segments", "the most segments the headend pushes (its advertised MSD): a longer path is no path") \
 X(PRQ, constraints, MAP, struct cats_constraints, CATS_OPT, 0, 0, &cats_schema_constraints, NULL, "", "network constraints") \
 X(PRQ, decision, MAP, struct cats_decision, CATS_REQ, 0, 0, &cats_schema_decision, NULL, "", "the service decision (passed through)") \
 X(PRQ, flow, MAP, struct cats_flow, CATS_OPT, 0, 0, &cats_schema_flow, NULL, "", "the client flow (passed through)") \
 X(PRQ, ingress, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "ingress forwarder (passed through)") \
 X(PRQ, deadline, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "ms", "transaction deadline") \
 X(PRQ, unreachable, ADDR, struct cats_ip, CATS_OPT, 0, 0, NULL, NULL, "", "a repair: a segment a router reported unreachable (a path-down's); the path avoids its link, or its node") \
 X(PRQ, dataplanes, ARR_TEXT, struct cats_arr_text, CATS_OPT, 0, 8, NULL, NULL, "", "the data planes the selection allows, preferred first (the request's, when neither its forwarder nor the service chose one; passed through): cats-bind asks again in the first that both ends advertise when the egress does not advertise dataplane")

/* path-rep: the PCE's answer. */
#define CATS_PRP_FIELDS(X) \
 X(PRP, txn, U64, uint64_t, CATS_REQ, 1, CATS_U53, NULL, NULL, "", "transaction id") \
 X(PRP, ts, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "ms", "time") \
 X(PRP, status, ENUM, int, CATS_REQ, 0, 0, NULL, cats_path_status_names, "", "ok, no-path or error") \
 X(PRP, reason, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "failure reason code (cats-pce(1))") \
 X(PRP, pruned, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "no-path: the constraint that pruned last") \
 X(PRP, headend, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "headend node") \
 X(PRP, endpoint, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "endpoint node") \
 X(PRP, endpoint_addr, ADDR, struct cats_ip, CATS_OPT, 0, 0, NULL, NULL, "", "endpoint address (tunnel destination)") \
 X(PRP, dataplane, ENUM, int, CATS_OPT, 0, 0, NULL, cats_dataplane_names, "", "data plane of the path") \
 X(PRP, segments, ARR_MAP, struct cats_arr_seg, CATS_OPT, 0, 32, &cats_schema_segment, NULL, "", "segment list, first segment first") \
 X(PRP, path, ARR_TEXT, struct cats_arr_text, CATS_OPT, 0, 1024, NULL, NULL, "", "nodes of the path, headend first") \
 X(PRP, cost, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "cost in the minimized metric") \
 X(PRP, delay_us, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "us", "path delay") \
 X(PRP, hops, U64, uint64_t, CATS_OPT, 0, 4096, NULL, NULL, "", "links in the path") \
 X(PRP, gen, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "TE database generation") \
 X(PRP, path_id, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "identifier of the path (shared by flows)") \
 X(PRP, decision, MAP, struct cats_decision, CATS_OPT, 0, 0, &cats_schema_decision, NULL, "", "the service decision (passed through)") \
 X(PRP, flow, MAP, struct cats_flow, CATS_OPT, 0, 0, &cats_schema_flow, NULL, "", "the client flow (passed through)") \
 X(PRP, ingress, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "ingress forwarder (passed through)") \
 X(PRP, deadline, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "ms", "transaction deadline") \
 X(PRP, dataplanes, ARR_TEXT, struct cats_arr_text, CATS_OPT, 0, 8, NULL, NULL, "", "the path-req's dataplanes (passed through)")

/* binding: one logical steering binding, forward and reverse. */
#define CATS_BND_FIELDS(X) \
 X(BND, id, U64, uint64_t, CATS_REQ, 1, CATS_U53, NULL, NULL, "", "binding id") \
 X(BND, version, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "", "binding version") \
 X(BND, epoch, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "", "ownership epoch of the binding manager") \
 X(BND, op, ENUM, int, CATS_REQ, 0, 0, NULL, cats_bind_op_names, "", "install, refresh or remove") \
 X(BND, ts, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "ms", "time") \
 X(BND, txn, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "transaction id") \
 X(BND, ingress, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "ingress forwarder") \
 X(BND, egress, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "egress node") \
 X(BND, cs_id, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "CS-ID") \
 X(BND, csci_id, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "selected CSCI-ID") \
 X(BND, fwd, MAP, struct cats_bind_fwd, CATS_OPT, 0, 0, &cats_schema_bind_fwd, NULL, "", "forward direction (install, refresh)") \
 X(BND, rev, MAP, struct cats_bind_rev, CATS_OPT, 0, 0, &cats_schema_bind_rev, NULL, "", "reverse direction (install, refresh)") \
 X(BND, idle_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "idle lifetime") \
 X(BND, hard_ms, U64, uint64_t, CATS_OPT, 0, CATS_U32, NULL, NULL, "ms", "hard lifetime") \
 X(BND, cst_gen, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "CST generation of the decision") \
 X(BND, nst_gen, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "NST generation of the decision") \
 X(BND, path_gen, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "TE database generation of the path") \
 X(BND, path_id, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "shared path reference") \
 X(BND, path, ARR_TEXT, struct cats_arr_text, CATS_OPT, 0, 1024, NULL, NULL, "", "nodes of the path, headend first (the manager's output, journal and dumps; not sent to forwarders)") \
 X(BND, state, ENUM, int, CATS_OPT, 0, 0, NULL, cats_flow_state_names, "", "flow state (dumps)") \
 X(BND, on_failure, ENUM, int, CATS_OPT, 0, 0, NULL, cats_on_failure_names, "", "what an instance failure does to the flow (from the decision)") \
 X(BND, reason, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "remove: why")

/* status: a forwarder reports on a binding. */
#define CATS_STA_FIELDS(X) \
 X(STA, fwd, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "reporting forwarder") \
 X(STA, event, ENUM, int, CATS_REQ, 0, 0, NULL, cats_status_event_names, "", "installed, refreshed, failed, expired, removed, hello, path-down, path-up; keepalive (cats-bind and cats-select to a forwarder: the channel is alive, cats-fwd(1) CONTROL CHANNELS)") \
 X(STA, ts, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "ms", "time") \
 X(STA, id, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "binding id") \
 X(STA, txn, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "transaction id") \
 X(STA, epoch, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "epoch of the binding / forwarder epoch (hello)") \
 X(STA, version, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "binding version") \
 X(STA, reason, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "failure or removal reason") \
 X(STA, pkts, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "packets", "forward packets") \
 X(STA, bytes, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "bytes", "forward bytes") \
 X(STA, rev_pkts, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "packets", "reverse packets") \
 X(STA, rev_bytes, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "bytes", "reverse bytes") \
 X(STA, caps, ARR_TEXT, struct cats_arr_text, CATS_OPT, 0, 32, NULL, NULL, "", "hello, and refreshed with reason capabilities: what the forwarder can do, one token each (cats-fwd(1) CAPABILITIES)") \
 X(STA, unreachable, ADDR, struct cats_ip, CATS_OPT, 0, 0, NULL, NULL, "", "path-down: the destination of the packet a router's ICMP error quoted (the segment it could not reach)")

/* error: a transaction or a record failed. */
#define CATS_ERR_FIELDS(X) \
 X(ERR, code, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "reason code") \
 X(ERR, ts, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "ms", "time") \
 X(ERR, txn, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "transaction id") \
 X(ERR, stage, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "tool that failed it") \
 X(ERR, msg, TEXT, const char *, CATS_OPT, 0, 512, NULL, NULL, "", "one-line explanation") \
 X(ERR, index, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "", "index of the bad record in its stream") \
 X(ERR, field, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "field at fault") \
 X(ERR, ingress, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "ingress forwarder to notify") \
 X(ERR, flow, MAP, struct cats_flow, CATS_OPT, 0, 0, &cats_schema_flow, NULL, "", "flow whose pending packets to release")

/* steer: a C-SMA co-located with an egress steers within its site while
 * it is partitioned from the C-PS (000 §10.3; cats-sma(1) LOCAL STEERING). */
#define CATS_STR_FIELDS(X) \
 X(STR, op, ENUM, int, CATS_REQ, 0, 0, NULL, cats_steer_op_names, "", "redirect (from takes the place of to) or end (from's redirect is over)") \
 X(STR, sma_id, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "C-SMA identity") \
 X(STR, epoch, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "", "C-SMA epoch: a higher one ends every redirect of a lower") \
 X(STR, seq, U64, uint64_t, CATS_REQ, 1, CATS_U53, NULL, NULL, "", "steering sequence, strictly increasing in an epoch") \
 X(STR, ts, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "ms", "decision time") \
 X(STR, site, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "service site") \
 X(STR, egress, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "egress node of the site") \
 X(STR, cs_id, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "CS-ID (one that allows local steering)") \
 X(STR, from, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "CSCI-ID of the instance steered away from") \
 X(STR, from_locator, ADDR, struct cats_ip, CATS_OPT, 0, 0, NULL, NULL, "", "its locator") \
 X(STR, from_port, U64, uint64_t, CATS_OPT, 0, 65535, NULL, NULL, "", "its port") \
 X(STR, to, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "redirect: CSCI-ID of the instance of the same site and CS-ID that takes its flows") \
 X(STR, locator, ADDR, struct cats_ip, CATS_OPT, 0, 0, NULL, NULL, "", "redirect: its locator") \
 X(STR, port, U64, uint64_t, CATS_OPT, 0, 65535, NULL, NULL, "", "redirect: its port") \
 X(STR, until, U64, uint64_t, CATS_OPT, 0, CATS_U53, NULL, NULL, "ms", "redirect: over at the latest then, with or without an end record") \
 X(STR, reason, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "why: the instance's fault (redirect), or healed, recovered, max-duration, no-candidate, unconfigured (end)")

/* stats: a tool's counters. */
#define CATS_STS_FIELDS(X) \
 X(STS, tool, TEXT, const char *, CATS_REQ, 1, CATS_ID, NULL, NULL, "", "tool") \
 X(STS, ts, U64, uint64_t, CATS_REQ, 0, CATS_U53, NULL, NULL, "ms", "time") \
 X(STS, id, TEXT, const char *, CATS_OPT, 0, CATS_ID, NULL, NULL, "", "instance identity") \
 X(STS, counters, KV, struct cats_arr_kv, CATS_OPT, 0, 1024, NULL, NULL, "", "counter name to value") \
 X(STS, gauges, ARR_TEXT, struct cats_arr_text, CATS_OPT, 0, 1024, NULL, NULL, "", "the counters that are gauges (states, sizes, quantiles, times), the others only grow; absent: not said")

/* ---- generated structs and field indexes ---- */

#define CATS_X_MEMBER(P, name, K, ctype, ...) ctype name;
#define CATS_X_INDEX(P, name, ...) CATS_##P##_##name,
#define CATS_DEFINE(tag, P) \
	struct tag { uint64_t has; CATS_##P##_FIELDS(CATS_X_MEMBER) }; \
	enum { CATS_##P##_FIELDS(CATS_X_INDEX) CATS_##P##__N };

CATS_DEFINE(cats_constraints, CON)
CATS_DEFINE(cats_flow, FLOW)
CATS_DEFINE(cats_entry, ENT)
CATS_DEFINE(cats_site, SITE)
CATS_DEFINE(cats_address, ADR)
CATS_DEFINE(cats_decision, DEC)
CATS_DEFINE(cats_segment, SEG)
CATS_DEFINE(cats_bind_fwd, BFW)
CATS_DEFINE(cats_bind_rev, BRV)

struct cats_arr_ent { struct cats_entry *v; size_t n; };
struct cats_arr_site { struct cats_site *v; size_t n; };
struct cats_arr_adr { struct cats_address *v; size_t n; };
struct cats_arr_seg { struct cats_segment *v; size_t n; };

CATS_DEFINE(cats_sci_report, SCI)
CATS_DEFINE(cats_metric, MET)
CATS_DEFINE(cats_sync, SYNC)
CATS_DEFINE(cats_ack, ACK)
CATS_DEFINE(cats_net, NET)
CATS_DEFINE(cats_service, SVC)
CATS_DEFINE(cats_request, REQ)
CATS_DEFINE(cats_path_req, PRQ)
CATS_DEFINE(cats_path_rep, PRP)
CATS_DEFINE(cats_binding, BND)
CATS_DEFINE(cats_status, STA)
CATS_DEFINE(cats_error, ERR)
CATS_DEFINE(cats_stats, STS)
CATS_DEFINE(cats_steer, STR)

/* Set an optional field and mark it present: CATS_SET(&r, SCI, gas, 400). */
#define CATS_SET(s, P, name, val) \
	((s)->name = (val), (s)->has |= UINT64_C(1) << CATS_##P##_##name)
/*
 * The same when cond holds (val is evaluated only then), for a record
 * filled field by field from a source whose own flags say what it has:
 * CATS_SET_IF(e->has & X_GAS, &r, SCI, gas, e->gas).
 */
#define CATS_SET_IF(cond, s, P, name, val) \
	do { \
		if (cond) \
			CATS_SET(s, P, name, val); \
	} while (0)
/* Is an optional field present: CATS_HAS(&r, SCI, gas). */
#define CATS_HAS(s, P, name) (((s)->has >> CATS_##P##_##name) & 1)

/* ---- schema tables ---- */

struct cats_schema;

/* A field name's room: at most 15 characters and the NUL, padded with
 * zeros, so that the encoder copies a key in one fixed-size move. */
#define CATS_FIELD_NAME 16

struct cats_field {
	char name[CATS_FIELD_NAME];
	uint8_t namelen;
	uint8_t kind;		/* enum cats_fkind */
	uint8_t required;
	uint16_t off;		/* offset in the struct */
	uint64_t min, max;
	const struct cats_schema *sub;
	const char *const *enums;
	const char *unit;
	const char *doc;
};

struct cats_schema {
	const char *name;
	size_t size;
	size_t nfields;
	const struct cats_field *fields;
	/* Cross-field rules, after the fields are decoded; may be NULL. */
	int (*check)(const void *s, struct cats_err *e);
	const char *doc;
	uint64_t required;	/* bit i: field i is required */
	uint64_t by_has;	/* bit i: field i is present by its has bit */
};

extern const struct cats_schema cats_schema_constraints, cats_schema_flow,
    cats_schema_entry, cats_schema_site, cats_schema_address,
    cats_schema_decision, cats_schema_segment, cats_schema_bind_fwd,
    cats_schema_bind_rev;

/* ---- records ---- */

enum cats_type {
	CATS_T_SCI_REPORT,
	CATS_T_METRIC,
	CATS_T_SYNC,
	CATS_T_ACK,
	CATS_T_NET,
	CATS_T_SERVICE,
	CATS_T_REQUEST,
	CATS_T_PATH_REQ,
	CATS_T_PATH_REP,
	CATS_T_BINDING,
	CATS_T_STATUS,
	CATS_T_ERROR,
	CATS_T_STATS,
	CATS_T_STEER,
	CATS_T__N
};

/* COSE algorithms used in the auth field (RFC 9053). */
enum { CATS_ALG_NONE = 0, CATS_ALG_HMAC256 = 5, CATS_ALG_EDDSA = -8 };

#define CATS_KID_LEN 8

/*
 * The "auth" entry of a record: a COSE_Mac0 or COSE_Sign1 structure with a
 * detached payload, [protected, {}, null, tag], computed over the record's
 * deterministic encoding without "auth" (see crypto.h).  The protected
 * header's bytes are kept as they came (prot_len 0: none yet, they are
 * {1: alg, 4: kid}): the tag is checked over them, and the record is
 * encoded again with them.  The decoder refuses a protected header with
 * critical parameters (RFC 9052 §3.1, label 2) other than alg and kid, a
 * parameter twice, and "crit" outside the protected header.
 */
#define CATS_PROT_MAX 64
struct cats_auth {
	int alg;			/* CATS_ALG_* */
	uint8_t kid[CATS_KID_LEN];	/* key id */
	uint8_t tag[64];		/* MAC (32 bytes) or signature (64) */
	size_t tag_len;
	uint8_t prot[CATS_PROT_MAX];	/* the protected header's bytes */
	size_t prot_len;
};

struct cats_rec {
	enum cats_type type;
	struct cats_auth auth;
	union {
		struct cats_sci_report sci;
		struct cats_metric metric;
		struct cats_sync sync;
		struct cats_ack ack;
		struct cats_net net;
		struct cats_service service;
		struct cats_request request;
		struct cats_path_req preq;
		struct cats_path_rep prep;
		struct cats_binding binding;
		struct cats_status status;
		struct cats_error error;
		struct cats_stats stats;
		struct cats_steer steer;
	} u;
};

/* The schema of a record type, and type names ("sci-report" ...). */
const struct cats_schema *cats_type_schema(enum cats_type t);
const char *cats_type_name(enum cats_type t);
/* Returns the type, or -1 if the name is unknown. */
int cats_type_from_name(const char *s, size_t n);
/* Index of a value name in an ENUM table, or -1. */
int cats_enum_index(const char *const *names, const char *s, size_t n);

/*
 * A decoding context: the caps, the token array and the arena a decoded
 * record lives in.  A record stays valid until the next decode with the same
 * context.
 */
struct cats_dec {
	struct cats_limits lim;
	struct cats_toks toks;
	struct cats_arena arena;
	struct cats_buf scratch;
};

void cats_dec_init(struct cats_dec *d, const struct cats_limits *lim);
void cats_dec_free(struct cats_dec *d);

/* Zero a record and set its type. */
void cats_rec_init(struct cats_rec *r, enum cats_type t);

/*
 * The one way to build an error record: r becomes an "error" with code,
 * stage (the tool that failed it, NULL: none), ts (always set: the time
 * of the failure, 0 included), txn (0: none; transaction ids start at 1)
 * and msg (NULL or "": none).  The strings are not copied: they must live
 * as long as r.  The caller may then set index and field (CATS_SET,
 * e->field) and the route with cats_rec_error_route().
 */
void cats_rec_error_init(struct cats_rec *r, const char *code,
    const char *stage, uint64_t txn, uint64_t ts, const char *msg);
/*
 * The one keepalive of the control plane (cats-fwd(1) CONTROL CHANNELS):
 * r becomes a status record, event keepalive, at ts.  The sender sets
 * fwd for each forwarder, and cats-bind its epoch.
 */
void cats_rec_keepalive_init(struct cats_rec *r, uint64_t ts);
/*
 * Where an error goes back to: the ingress forwarder to notify (NULL:
 * none) and the flow whose pending packets it releases (NULL: none).
 */
void cats_rec_error_route(struct cats_rec *r, const char *ingress,
    const struct cats_flow *flow);
/*
 * The timestamp of a record of any type (ms); 0 when the type's ts is
 * optional and absent (service, error).  Replay clocks observe it:
 * cats_clock_observe(0) changes nothing.
 */
uint64_t cats_rec_ts(const struct cats_rec *r);

/*
 * Decode and validate the one CBOR item p[0..n).  Returns 0, or -1 with err
 * naming the field and the reason.  Unknown keys are ignored.
 */
int cats_rec_decode(struct cats_dec *d, const uint8_t *p, size_t n,
    struct cats_rec *r, struct cats_err *err);

/*
 * Copy the struct src of schema s to dst, its strings, byte strings and
 * arrays into arena a, so that dst outlives the decoder src came from.
 * Returns 0, or -1 when a runs out of memory (dst is then partial).
 */
int cats_struct_copy(const struct cats_schema *s, void *dst, const void *src,
    struct cats_arena *a);

/* Decode a record from tokens already scanned into d->toks. */
int cats_rec_from_toks(struct cats_dec *d, struct cats_rec *r,
    struct cats_err *err);

/*
 * Append the deterministic encoding of r to out: "type" first, then the
 * fields in schema order; "auth" last when with_auth and r carries one.
 */
int cats_rec_encode(const struct cats_rec *r, struct cats_buf *out,
    bool with_auth);

/* Validate a record built in memory against its schema (as decode does). */
int cats_rec_validate(const struct cats_rec *r, struct cats_err *err);

/* Encode a COSE protected header {1: alg, 4: kid}; returns its size or 0. */
size_t cats_cose_protected(int alg, const uint8_t kid[CATS_KID_LEN],
    uint8_t *out, size_t cap);

/* Address helpers: parse text, format (buf >= 46 bytes), compare. */
int cats_ip_parse(const char *s, size_t n, struct cats_ip *ip);
const char *cats_ip_fmt(const struct cats_ip *ip, char *buf, size_t len);
bool cats_ip_eq(const struct cats_ip *a, const struct cats_ip *b);

/* An address prefix (ADDRESS/LENGTH). */
struct cats_prefix {
	struct cats_ip ip;
	uint8_t plen;
};
/* Parse "ADDRESS/LENGTH" (n bytes of s); a bare address is a host prefix
 * when host_ok, else an error.  The address bits past the length must be
 * zero.  Returns 0, or -1 with a reason in err. */
int cats_prefix_parse(const char *s, size_t n, bool host_ok,
    struct cats_prefix *p, char *err, size_t errlen);
/* Do the first plen bits of a and pfx agree (16-byte or 4-byte arrays)? */
bool cats_bits_match(const uint8_t *a, const uint8_t *pfx, unsigned plen);
/* Is ip inside p (same family, first plen bits equal)? */
bool cats_prefix_has(const struct cats_prefix *p, const struct cats_ip *ip);

/* "record N: field: reason" into buf, for one-line error messages. */
const char *cats_err_fmt(const struct cats_err *e, uint64_t index, char *buf,
    size_t len);

#endif
