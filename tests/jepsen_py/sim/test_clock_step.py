"""Simulated 5-node clusters whose clocks all step back (a reset after a bump, a strobe) keep their
leader and serve every request afterwards: the simulator moves a node's timers with its clock from
its next wake-up, as libfaketime moves asyncio's on Docker."""

from __future__ import annotations

import pytest

from jepsen_py.sim.cluster import SimCluster
from tests.jepsen_py.sim.test_cluster import NODES, call, wait_for_leader

STEP_S = 27.0  # the strobe seen on Docker when the correct build lost its leader for good


def set_every_clock(c: SimCluster, offset_s: float) -> None:
    for n in NODES:
        c.set_clock(n, offset_s)


def served_after(c: SimCluster, requests: int) -> int:
    """Sends one create_topic a second, to each node in turn; how many were answered ok."""
    oks = 0
    for i in range(requests):
        c.run_for(1.0)
        resp = c.run_until_complete(call(c, NODES[i % len(NODES)], {
            "op": "create_topic", "name": f"after-{i}", "partitions": 1, "rf": 1, "timeout_ms": 2000}),
            timeout=5)
        oks += bool(resp and resp.get("ok"))
    return oks


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_clock_stepping_back_keeps_the_leader_and_serves(seed: int) -> None:
    # Before: the tick timers, set by the clocks before the step, fired 27 s late; the nodes ticked
    # only on input, so each request found every node an election timeout behind: all campaigned at
    # once and 1 request of 10 was served, with no leader at the end.
    with SimCluster(seed, NODES) as c:
        c.start_all()
        wait_for_leader(c, NODES, within=5.0)
        set_every_clock(c, STEP_S)
        c.run_for(0.5)
        leader = wait_for_leader(c, NODES, within=10.0)
        term = (c.status(leader) or {})["term"]
        set_every_clock(c, 0.0)
        assert served_after(c, 10) == 10
        assert c.leaders() == [leader] and (c.status(leader) or {})["term"] == term


@pytest.mark.parametrize(("seed", "period_s"), [(1, 0.1), (2, 0.002)])
def test_a_strobe_on_every_clock_elects_nobody_and_the_cluster_serves(seed: int, period_s: float) -> None:
    # Before: each forward flip gave every node two election timeouts of ticks at once, so all
    # campaigned together (explore found 717 terms in a 3 s strobe of +43 s every 2 ms), and 0 or 1
    # request of 10 was served after a 5 s strobe of +27 s every 100 ms.
    with SimCluster(seed, NODES) as c:
        c.start_all()
        leader = wait_for_leader(c, NODES, within=5.0)
        term = (c.status(leader) or {})["term"]
        on = False
        end = c.now() + 5.0
        while c.now() < end:
            on = not on
            set_every_clock(c, STEP_S if on else 0.0)
            c.run_for(period_s)
        set_every_clock(c, 0.0)
        assert served_after(c, 10) == 10
        assert c.leaders() == [leader] and max((c.status(n) or {})["term"] for n in NODES) == term


def test_asking_for_status_wakes_a_quiet_cluster_whose_clocks_all_stepped_back() -> None:
    # With no client traffic, every tick timer (set before the step) held its node still for the
    # size of the step; on Docker the controller's status requests woke the nodes, in the simulator
    # its direct status reads did not, so a leader lost just then was replaced only 27 s later.
    with SimCluster(4, NODES) as c:
        c.start_all()
        wait_for_leader(c, NODES, within=5.0)
        set_every_clock(c, STEP_S)
        c.run_for(0.5)
        old = wait_for_leader(c, NODES, within=10.0)
        set_every_clock(c, 0.0)
        c.kill(old)
        rest = [n for n in NODES if n != old]
        new = wait_for_leader(c, rest, within=5.0)  # status read every 0.1 s, nothing else
        assert new != old
