# A fresh full metric advertisement of site1 (jq -n --argjson now MS -f):
# instance 198.51.100.11:80 of S1 (examples/services.jsonl) healthy, as the
# site's cats-sma would send it; repair_net.bash and the tests' s1_metric.
{type: "metric", op: "full", sma_id: "sma-site1", epoch: 1, seq: 1,
 ts: $now, site: "site1", egress: "EF-1", ttl_ms: 600000, part: 1,
 parts: 1,
 entries: [{csci_id: "198.51.100.11:80", cs_id: "S1", health: "HEALTHY",
 state: "HEALTHY", gas: 100, comp_time_ms: 3, locator: "198.51.100.11",
 port: 80, gen: 1, ts: $now, ttl_ms: 600000}]}
