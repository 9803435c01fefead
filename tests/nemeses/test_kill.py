"""Kill: SIGKILL ends the process for real, and start brings it back from its own data directory."""

from __future__ import annotations

import pytest
from jepsen_py.nemeses.kill import KillNemesis

from jepsen_py.history import INFO, Op


@pytest.mark.docker
def test_killed_node_restarts_from_its_data(probe_cluster):
    test = probe_cluster
    test.db.leader = "n2"
    nem = KillNemesis()
    before = test.db.status(test, "n2")
    done = nem.invoke(test, Op(0, 0, "invoke", "nemesis", "kill", value="leader"))
    assert done.type == INFO and done.value["nodes"] == ["n2"]
    assert test.db.status(test, "n2") is None
    ps = test.remotes["n2"].exec(["ps", "-o", "pid=", "-p", str(before["pid"])], check=False)
    assert ps.exit_code != 0, "the killed process must be gone (reaped), not a zombie"
    started = nem.invoke(test, Op(1, 1, "invoke", "nemesis", "start"))
    assert started.value == {"nodes": ["n2"], "results": {"n2": "ok"}}
    after = test.db.status(test, "n2")
    assert after["pid"] != before["pid"]
    assert after["boots"] == before["boots"] + 1, "the restart must find the data the first run wrote"


@pytest.mark.docker
def test_kill_of_a_paused_process_and_heal(probe_cluster):
    test = probe_cluster
    test.db.pause(test, "n1")
    nem = KillNemesis(targets=("one",))
    test.rng.seed(5)
    done = nem.invoke(test, Op(0, 0, "invoke", "nemesis", "kill"))
    test.db.resume(test, "n1")
    nem.heal(test)
    assert nem.hit == set()
    assert all(test.db.status(test, n) is not None for n in test.nodes)
    assert done.value["results"] == dict.fromkeys(done.value["nodes"], "ok")
