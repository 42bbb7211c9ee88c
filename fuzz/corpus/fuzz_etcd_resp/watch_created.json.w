{"result":{"header":{"cluster_id":"1863256803026163128","member_id":"5893209103805500857","revision":"1","raft_term":"2"},"created":true}}
