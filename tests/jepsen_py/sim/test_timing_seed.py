"""The simulator's timing seed: another seed for the network, disks and entropy alone, while the run's
seed still decides the nemesis's draws. The same timing seed gives the same bytes; another gives other
timings under the very same faults."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jepsen_py.explore.schedule import NEMESIS_THREAD, Event, Schedule
from jepsen_py.explore.system import replay_run, run_sim, spec_for
from jepsen_py.sim.run import TIMING_SEED

SCHEDULE = Schedule(
    workload="offsets", nodes=["n1", "n2", "n3"], seed=11, time_limit=4.0, concurrency=3,
    events=[Event(at=1.0, thread=NEMESIS_THREAD, f="kill", value="majority"),
            Event(at=2.5, thread=NEMESIS_THREAD, f="start")],
    options={"rate": 20.0},
)


def _run(tmp: Path, name: str, timing: int | None) -> tuple[bytes, list[Any]]:
    base = {} if timing is None else {TIMING_SEED: timing}
    spec = spec_for(SCHEDULE, backend="sim", results_dir=tmp, name=name, base=base)
    outcome = replay_run(SCHEDULE, spec, run_sim, clients=False)
    history = (Path(outcome.run_dir) / "history.jsonl").read_bytes()
    faults = [op["value"] for op in map(json.loads, history.splitlines())
              if op["process"] == "nemesis" and op["type"] == "info"]
    return history, faults


def test_a_timing_seed_changes_timings_not_the_faults_and_repeats_exactly(tmp_path: Path) -> None:
    plain, plain_faults = _run(tmp_path, "plain", None)
    a, a_faults = _run(tmp_path, "a", 1234)
    again, _ = _run(tmp_path, "again", 1234)
    b, b_faults = _run(tmp_path, "b", 99)
    assert a == again, "a timing seed is a seed: the same one gives the same history"
    assert a != b and a != plain, "another timing seed gives other timings"
    # the nemesis drew the same majority each time: its draws come from the run's seed
    assert plain_faults == a_faults == b_faults
    assert plain_faults[0]["nodes"] and len(plain_faults[0]["nodes"]) == 2
