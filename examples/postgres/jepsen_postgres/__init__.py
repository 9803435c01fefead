"""jepsen-py plugin for PostgreSQL: Debian's PostgreSQL 15 on one node in a container derived from
the node image, serving the generic `list-append` workload (Elle's transactions), one isolation
level per run.

    cd examples/postgres
    jepsen-py db-check --db jepsen_postgres.db:PostgresDB --node-count 1
    jepsen-py run --db jepsen_postgres.db:PostgresDB --workload list-append --node-count 1 \\
        --concurrency 10 --time-limit 20 --workload-option consistency_models=serializable \\
        --db-option isolation=repeatable-read      # write skew (G2-item): invalid
    jepsen-py run ... --db-option isolation=serializable                     # valid

Installed (`pip install -e examples/postgres`, which brings its driver, pg8000), `--db postgres`
names it through its entry point.
"""
