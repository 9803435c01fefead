"""jepsen-py plugin for etcd: Debian's etcd-server in containers derived from the node image,
spoken to over etcd's JSON gateway, serving the generic `register` workload.

    cd examples/etcd
    jepsen-py run --db jepsen_etcd.db:EtcdDB --workload register --nemesis partition-leader \\
        --node-count 3 --time-limit 30 --db-option reads=serializable   # stale reads: caught
    jepsen-py run --db jepsen_etcd.db:EtcdDB --workload register --nemesis partition-leader \\
        --node-count 3 --time-limit 30                       # linearizable reads: valid

Installed (`pip install -e examples/etcd`), `--db etcd` names it through its entry point.
"""
