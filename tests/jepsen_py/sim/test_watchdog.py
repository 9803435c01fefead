"""The livelock watchdog: a simulator step that never returns is stopped, anything else is left be."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from jepsen_py.explore.space import Config
from jepsen_py.explore.system import BackendSystem
from jepsen_py.sim.loop import Scheduler, SimLoop
from jepsen_py.sim.watchdog import NodeLivelock, livelock_watchdog


def test_an_endless_step_is_stopped_and_the_simulation_goes_on() -> None:
    sched = Scheduler(seed=1)
    loop = SimLoop(sched, "n1")
    done: list[str] = []

    def spin() -> None:
        while True:
            pass

    loop.call_soon(spin)
    loop.call_later(1.0, lambda: done.append("after"))
    started = time.process_time()
    with livelock_watchdog(limit_s=0.5, tick_s=0.05):
        sched.run_until_idle()
    assert time.process_time() - started < 10.0
    assert done == ["after"], "the simulation went on after the stuck step was stopped"
    assert any(isinstance(e.get("exception"), NodeLivelock) for e in loop.errors), loop.errors


def test_busy_code_outside_a_simulator_step_is_not_stopped() -> None:
    with livelock_watchdog(limit_s=0.2, tick_s=0.05):
        end = time.process_time() + 0.6
        n = 0
        while time.process_time() < end:
            n += 1
    assert n > 0


@pytest.mark.slow
def test_a_node_spinning_after_a_wal_recovery_is_a_crash_not_a_hang(tmp_path: Path) -> None:
    # recovery-duplicates: a restarted node replays two versions of its overwritten tail and its
    # Ready loop can never catch up; before the watchdog this trial never ended
    cfg = Config(workload="offsets", families=("kill", "partition"), shapes=("leader",), targets=("all",),
                 interval=3.0, mode="cycle", read_mode="read-index", node_count=3, time_limit=25.0, seed=0,
                 rate=25.0)
    system = BackendSystem(work_dir=tmp_path / "trials", bugs=["recovery-duplicates"])
    trial = system.trial(cfg)
    assert trial.error is None and "crash" in trial.anomalies, trial.anomalies
    assert trial.run_dir is not None
    logs = "".join(p.read_text() for p in trial.run_dir.glob("nodes/*/*.log"))
    assert "NodeLivelock" in logs
