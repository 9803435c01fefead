"""The leader-clock fault: the leader frozen, isolated and its clock stepped back, then thawed; stop
undoes the partition and the clock."""

from __future__ import annotations

import random

import pytest
from jepsen_py.nemeses.leader_clock import START, STOP, LeaderClockNemesis, step_back_s

from jepsen_py.history import INFO, Op
from tests.nemeses.support import peer_can_reach, read_clock


def test_the_clock_goes_back_further_than_the_fault_lasts():
    rng = random.Random(5)
    for interval in (1.0, 8.0, 10.0, 30.0):
        backs = [step_back_s(rng, interval) for _ in range(200)]
        assert min(backs) >= 2 * max(10.0, interval)
        assert max(backs) <= 4 * max(10.0, interval)


@pytest.mark.docker
def test_start_isolates_the_leader_with_its_clock_back_and_stop_undoes_both(probe_cluster):
    test = probe_cluster
    test.db.leader = "n2"
    nem = LeaderClockNemesis(interval=5.0)
    nem.setup(test)
    before = read_clock(test, "n2")
    pid = test.db.status(test, "n2")["pid"]
    try:
        done = nem.invoke(test, Op(0, 0, "invoke", "nemesis", START))
        assert done.type == INFO and done.value["node"] == "n2"
        back_ms = done.value["clock-back-ms"]
        assert 20_000 <= back_ms <= 40_000
        assert done.value["grudge"] == {"n1": ["n2"], "n2": ["n1", "n3"], "n3": ["n2"]}
        # thawed: the same process answers the controller, its clocks (wall and monotonic) behind
        s = test.db.status(test, "n2")
        assert s is not None and s["pid"] == pid
        # read against the controller's clocks at the middle of each round trip: a slow answer or a
        # slow docker exec in between is not counted as the node's clock moving
        now = read_clock(test, "n2")
        assert -back_ms / 1000 - 2 < now.skew < -back_ms / 1000 + 2
        assert (now.node_mono - before.node_mono) - (now.mono - before.mono) < -back_ms / 1000 + 2
        state = test.remotes["n2"].exec(["ps", "-o", "stat=", "-p", str(pid)]).stdout.strip()
        assert not state.startswith("T"), f"left stopped: {state!r}"
        # cut off from its peers, both ways; the others still talk
        assert not peer_can_reach(test, "n1", "n2") and not peer_can_reach(test, "n2", "n3")
        assert peer_can_reach(test, "n1", "n3")
        assert abs(read_clock(test, "n1").skew) < 2
    finally:
        stopped = nem.invoke(test, Op(1, 1, "invoke", "nemesis", STOP))
    assert stopped.type == INFO
    assert abs(read_clock(test, "n2").skew) < 2
    assert peer_can_reach(test, "n1", "n2") and peer_can_reach(test, "n2", "n3")
    assert "clock" not in test.state and "partition" not in test.state
    nem.teardown(test)
    assert all("jepsen-py" not in test.remotes[n].exec(["iptables", "-S"]).stdout for n in test.nodes)
