"""jepsen-py plugin for Redis: Debian's redis-server in containers derived from the node image, one
primary and asynchronous replicas with no failover, serving the generic `register` workload.
Written from docs/plugins.md alone.

    cd examples/redis
    jepsen-py db-check --db jepsen_redis.db:RedisDB                     # the plugin's contract
    jepsen-py run --db jepsen_redis.db:RedisDB --workload register --nemesis partition-leader \\
        --node-count 3 --time-limit 30 --db-option reads=replica         # stale reads: caught
    jepsen-py run --db jepsen_redis.db:RedisDB --workload register --nemesis partition-leader \\
        --node-count 3 --time-limit 30                                   # reads from the primary: valid

Installed (`pip install -e examples/redis`), `--db redis` names it through its entry point.
"""
