"""Schedules `jepsen-py explore` found against the correct build, kept as they were written: each was
a finding (a node bug or a checker's false alarm) and must replay valid in simulation now. A fix that
regresses brings its finding back, exactly, from the same seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from jepsen_py.explore.schedule import load
from jepsen_py.explore.system import BackendSystem

FOUND = Path(__file__).parent / "found"

# what each one was when explore found it
WAS = {
    # a strobe of every clock (+39 s): read rounds started while the clock was ahead looked younger
    # than an election timeout until the clock caught up, so no read was served for 39 s after it
    "read-round-after-clock-step-back.json": "unavailable",
    # a create tried once 80 ms after every node was restarted, before a leader existed: the stats
    # checker called the op type never available
    "never-ok-create-just-after-full-restart.json": "never-ok",
    # an op invoked a millisecond before a fault and refused (a create, as every node was killed) or
    # timed out (a lease-read commit, as a majority was paused) while it took effect: the stats
    # checker judged calm at the invocation only, so the op type counted as refused while calm
    "never-ok-create-refused-as-a-kill-began.json": "never-ok",
    "never-ok-commit-timed-out-as-a-pause-began.json": "never-ok",
}


def test_every_kept_schedule_is_named() -> None:
    assert sorted(p.name for p in FOUND.glob("*.json")) == sorted(WAS)


@pytest.mark.parametrize("name", sorted(WAS))
def test_a_schedule_found_on_the_correct_build_replays_valid(tmp_path: Path, name: str) -> None:
    schedule = load(FOUND / name)
    assert schedule.anomaly == WAS[name] and not schedule.bugs
    trial = BackendSystem(work_dir=tmp_path).replay(schedule, keep=tmp_path / "kept")
    assert trial.error is None
    assert trial.anomalies == {}, (trial.anomalies, trial.run_dir)
