"""A node whose unreplicated tail a new leader overwrote says so in its log: the overwritten tail is
what WAL recovery must drop (recovery-duplicates keeps it), and how often faults leave one is what
decides whether that bug can show. Run on the simulated cluster, where the cut is exact."""

from __future__ import annotations

import re

from jepsen_py.sim.cluster import SimCluster
from tests.jepsen_py.sim.test_cluster import NODES, call, wait_for_leader

REPLACED = re.compile(r"log: (\d+) entries from index (\d+) \(term (\d+)\) replaced by term (\d+)'s")


def test_a_cut_off_leaders_tail_is_logged_as_replaced() -> None:
    with SimCluster(3, NODES) as c:
        c.start_all()
        old = wait_for_leader(c, NODES, within=5.0)
        old_term = (c.status(old) or {})["term"]
        others = [n for n in NODES if n != old]
        c.cut([(old, n) for n in others] + [(n, old) for n in others])
        # two writes the cut-off leader appends and can never commit
        for i in range(2):
            resp = c.run_until_complete(call(c, old, {"op": "create_topic", "name": f"lost-{i}",
                                                      "partitions": 1, "rf": 1, "timeout_ms": 300}),
                                        timeout=5)
            assert resp is not None and not resp.get("ok"), resp
        new = wait_for_leader(c, others, within=10.0)
        c.heal_network()
        wait_for_leader(c, NODES, within=10.0)
        c.run_for(2.0)
        replaced = [m for line in c.node_logs()[old] if (m := REPLACED.search(line))]
        assert replaced, c.node_logs()[old][-20:]
        count, _, term, by = (int(x) for x in replaced[0].groups())
        assert count >= 2 and term == old_term and by > old_term
        assert not any(REPLACED.search(line) for n in others for line in c.node_logs()[n]), new
