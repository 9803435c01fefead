"""Pause: a SIGSTOPped process stops answering, and answers again after SIGCONT."""

from __future__ import annotations

import pytest
from jepsen_py.nemeses.pause import PauseNemesis

from jepsen_py.history import INFO, Op


@pytest.mark.docker
def test_paused_leader_stops_answering_and_resumes(probe_cluster):
    test = probe_cluster
    test.db.leader = "n3"
    nem = PauseNemesis()
    pid_before = test.db.status(test, "n3")["pid"]
    try:
        done = nem.invoke(test, Op(0, 0, "invoke", "nemesis", "pause", value="leader"))
        assert done.type == INFO
        assert done.value == {"target": "leader", "nodes": ["n3"], "results": {"n3": "ok"}}
        assert test.db.status(test, "n3", timeout=1.0) is None
        assert test.db.status(test, "n1") is not None
        state = test.remotes["n3"].exec(["ps", "-o", "stat=", "-p", str(pid_before)]).stdout.strip()
        assert state.startswith("T"), f"process state {state!r} is not stopped"
    finally:
        resumed = nem.invoke(test, Op(1, 1, "invoke", "nemesis", "resume"))
    assert resumed.value["nodes"] == ["n3"]
    after = test.db.status(test, "n3")
    assert after is not None and after["pid"] == pid_before, "resume continues the same process"


@pytest.mark.docker
def test_heal_resumes_every_paused_node(probe_cluster):
    test = probe_cluster
    nem = PauseNemesis(targets=("minority",))
    done = nem.invoke(test, Op(0, 0, "invoke", "nemesis", "pause"))
    assert len(done.value["nodes"]) == 1
    assert test.state["paused"] == done.value["nodes"]
    nem.heal(test)
    assert test.state["paused"] == []
    assert all(test.db.status(test, n) is not None for n in test.nodes)
