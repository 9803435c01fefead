"""`jepsen-py run --schedule --backend docker`: a schedule recorded in simulation replayed on real
containers, stretched to fit a cluster that reacts in seconds: the main phase outlasts the last
fault by the margin, every node has a client, and a fault window lasts as long as recorded from
the moment its fault took effect."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jepsen_py.cli import main
from jepsen_py.explore import schedule as sched
from jepsen_py.explore.replay import REAL_MARGIN_S, watch_after_heal_s
from jepsen_py.explore.schedule import NEMESIS_THREAD, Event, Schedule

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _ops(run_dir: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines() if line]


def test_a_late_fault_is_replayed_with_room_after_it(node_image: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # the leader killed 2 s before the recorded end and restarted 1 s later: recorded in simulation,
    # where both act at once; two clients on three nodes
    s = Schedule(workload="offsets", nodes=["n1", "n2", "n3"], seed=5, time_limit=4.0, concurrency=2,
                 options={"rate": 20.0},
                 events=[Event(2.0, NEMESIS_THREAD, "kill", value="leader"),
                         Event(3.0, NEMESIS_THREAD, "start")])
    path = sched.save(s, tmp_path / "schedule.json")
    code = main(["run", "--schedule", str(path), "--backend", "docker", "--results-dir", str(tmp_path / "r"),
                 "--no-progress"])
    out = capsys.readouterr().out
    assert code in (0, 1), out
    assert "replaying on docker: 2 fault ops at their offsets" in out and "12 clients (recorded 2)" in out
    [run_dir] = [p for p in (tmp_path / "r").glob("*/2*") if p.is_dir()]
    test = json.loads((run_dir / "test.json").read_text())
    assert test["time_limit"] >= 3.0 + REAL_MARGIN_S + 5.0 and test["concurrency"] == 12

    ops = _ops(run_dir)
    nemesis = [o for o in ops if o["process"] == "nemesis"]
    kill_done = next(o["time"] for o in nemesis if o["f"] == "kill" and o["type"] != "invoke")
    start_invoked = next(o["time"] for o in nemesis if o["f"] == "start" and o["type"] == "invoke")
    start_done = next(o["time"] for o in nemesis if o["f"] == "start" and o["type"] != "invoke")
    heal = next(o["time"] for o in nemesis if o["f"] == "heal" and o["type"] == "invoke")
    # the node stayed down the recorded second, counted from when the kill was done
    assert (start_invoked - kill_done) / 1e9 >= 1.0 - 0.05
    # and clients kept asking for the margin after the restart, then the phase ended
    clients = [o for o in ops if isinstance(o["process"], int) and o["time"] < heal]
    last_invoke = max(o["time"] for o in clients if o["type"] == "invoke")
    assert REAL_MARGIN_S - 1.0 <= (last_invoke - start_done) / 1e9 <= REAL_MARGIN_S + 0.5
    after = [o for o in clients if o["time"] > start_done]
    assert {o["node"] for o in after} == {"n1", "n2", "n3"}
    # and the cluster was watched long enough after the heal for a node that never came back to be
    # called down by the crash checker (the run used to end a second after it)
    healed = next(o["time"] for o in nemesis if o["f"] == "heal" and o["type"] != "invoke")
    assert (max(o["time"] for o in ops) - healed) / 1e9 >= watch_after_heal_s() - 0.5
