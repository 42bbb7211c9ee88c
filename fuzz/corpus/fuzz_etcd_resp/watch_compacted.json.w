{"result":{"header":{"cluster_id":"1863256803026163128","member_id":"5893209103805500857","revision":"9","raft_term":"2"},"canceled":true,"compact_revision":"7"}}
