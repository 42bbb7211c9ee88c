{"result":{"header":{"cluster_id":"1863256803026163128","member_id":"5893209103805500857","revision":"4","raft_term":"2"},"events":[{"type":"DELETE","kv":{"key":"L3cvYQ==","mod_revision":"4"}}]}}
