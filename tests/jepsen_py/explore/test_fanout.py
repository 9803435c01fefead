"""explore --parallel N: the search's slices in worker processes (the same task function Spark's
executors run), merged and shrunk on the driver; and the flags of --master/--parallel refused in one
line, 254, before anything is created."""

from __future__ import annotations

import json
import random
from concurrent.futures import Future
from pathlib import Path

import pytest

from jepsen_py.explore.fanout import TASK_TRIALS, FanoutStats, ProcessRunner, run_fanout
from jepsen_py.explore.schedule import Schedule
from jepsen_py.explore.search import Search, Trial
from jepsen_py.explore.space import Space
from jepsen_py.explore.tasks import Task, TaskResult, TrialRecord, run_task
from tests.jepsen_py.explore.planted import PlantedSystem
from tests.jepsen_py.explore.test_command import _code


@pytest.mark.parametrize("argv, message", [
    (["explore", "--master", "floppy"], "--master 'floppy': not a Spark master URL"),
    (["explore", "--master", "spark://"], "not a Spark master URL"),
    (["explore", "--master", "local[0]"], "not a Spark master URL"),
    (["explore", "--master", "sc://127.0.0.1:15002"], "a Spark Connect server cannot run simulated trials"),
    (["explore", "--master", "local[2]", "--backend", "docker"],
     "--master: trials fan out in the simulator only (--backend sim), not --backend docker"),
    (["explore", "--parallel", "2", "--backend", "docker"],
     "--parallel: trials fan out in the simulator only"),
    (["explore", "--parallel", "0"], "--parallel"),
    (["explore", "--round-size", "4"], "--round-size: rounds of tasks for --parallel or --master"),
    (["explore", "--parallel", "2", "--round-size", "0"], "--round-size"),
    (["test-all", "--master", "local[2]"], "--master: an option of the simulator's matrix"),
    (["test-all", "--backend", "sim", "--master", "local[two]"], "not a Spark master URL"),
])
def test_fanout_flags_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                              message: str) -> None:
    code = _code([*argv, "--results-dir", str(tmp_path / "r"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 254
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_a_task_searches_its_slice_from_the_corpus_it_was_given() -> None:
    space = Space(workloads=("offsets",), families=(), node_counts=(3,), time_limits=(2.0,))
    given = Search(PlantedSystem(), space, seed=1)
    for _ in range(5):
        given.step()
    task = Task(index=0, seed=7, space=space, bugs=(), slice_s=3.0, budget_s=60.0,
                corpus=tuple(given.corpus), seen=dict(given.seen), warmup=0)
    result = run_task(task)
    assert result.index == 0 and result.trials and result.cpu_s > 0
    for rec in result.trials:
        assert rec.error is None and not rec.cut and not rec.anomalies
        assert "workload:offsets" in rec.coverage and rec.sim_seconds > 0
        assert rec.schedule is None, "a clean trial's schedule stays where it ran"


def test_a_task_stops_at_its_first_failing_trial_and_sends_its_schedule() -> None:
    space = Space(workloads=("topics",), families=(), node_counts=(3,), time_limits=(10.0,))
    task = Task(index=3, seed=2, space=space, bugs=("split-brain-metadata",), slice_s=120.0, budget_s=300.0)
    result = run_task(task)
    assert result.trials[-1].anomalies and all(not r.anomalies for r in result.trials[:-1])
    failing = result.trials[-1]
    assert failing.schedule is not None and failing.schedule.bugs == ["split-brain-metadata"]
    assert failing.schedule.client_events, "the recorded schedule, to shrink on the driver"


class _Broken:
    """A runner whose every task dies (a worker killed, an executor that cannot import our code)."""

    slots = 2

    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, task: Task) -> Future[TaskResult]:
        self.submitted += 1
        f: Future[TaskResult] = Future()
        f.set_exception(RuntimeError("executor lost\nmore"))
        return f

    def stop(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_tasks_that_keep_failing_end_the_search_with_the_first_error() -> None:
    runner = _Broken()
    search = Search(PlantedSystem(), Space(), seed=1)
    stats = run_fanout(search, runner, bugs=[], budget_s=60, stop_at_first=True)
    assert isinstance(stats, FanoutStats)
    assert stats.task_errors == runner.submitted == 2 * runner.slots
    assert stats.first_error == "RuntimeError: executor lost" and search.stats.tried == 0


def _rounds(slots: int, rounds: int, round_size: int = 3) -> list[tuple[str, tuple[str, ...]]]:
    """The trials of the first `rounds` rounds of a search on `slots` worker processes, in the order
    the driver merged them: (configuration, coverage) each."""
    space = Space(workloads=("offsets",), node_counts=(3,), time_limits=(2.0,))
    search = Search(PlantedSystem(), space, seed=11, warmup=4)
    seen: list[tuple[str, tuple[str, ...]]] = []
    now = [0.0]
    per_round = round_size * TASK_TRIALS

    def on_trial(trial: Trial) -> None:
        assert trial.config is not None and not trial.error and not trial.cut
        seen.append((trial.config.label(), tuple(sorted(trial.coverage))))
        if len(seen) == rounds * per_round:
            now[0] = 1e9  # the budget ends: no round after this one

    stats = run_fanout(search, ProcessRunner(slots), bugs=[], budget_s=600, stop_at_first=True,
                       on_trial=on_trial, clock=lambda: now[0], round_size=round_size)
    assert stats.tasks == rounds * round_size and stats.task_errors == 0
    assert search.stats.tried == len(seen) == rounds * per_round
    return seen


def test_rounds_try_the_same_schedules_whatever_the_cores() -> None:
    """--round-size: the same seed tries the same configurations, with the same coverage, on one
    worker or two, and the second round starts from what the first found (its corpus)."""
    one = _rounds(slots=1, rounds=2)
    two = _rounds(slots=2, rounds=2)
    assert one == two
    assert len({config for config, _ in one}) > 1, "the tasks drew configurations of their own"


def _explore(tmp_path: Path, *argv: str) -> tuple[int, dict]:
    code = _code(["explore", *argv, "--no-progress", "--results-dir", str(tmp_path / "r")])
    runs = sorted((tmp_path / "r" / "explore").iterdir())
    return code, json.loads((runs[-1] / "explore.json").read_text())


def test_parallel_finds_a_seed_bug_and_its_schedule_replays(tmp_path: Path) -> None:
    code, out = _explore(tmp_path, "--parallel", "2", "--bug", "split-brain-metadata", "--budget", "120",
                         "--shrink-budget", "30", "--harden-budget", "0", "--seed", "3")
    assert code == 1
    assert out["fanout"]["where"] == "worker processes" and out["fanout"]["slots"] == 2
    assert out["fanout"]["workers"] >= 1 and out["fanout"]["task_errors"] == 0
    finding = out["findings"][0]
    replay = _code(["run", "--schedule", finding["schedule_file"], "--backend", "sim", "--no-progress",
                    "--results-dir", str(tmp_path / "replay")])
    assert replay == 1, f"the shrunk schedule of {finding['kind']} replays as a failing run"


def test_parallel_on_the_correct_build_searches_the_budget(tmp_path: Path) -> None:
    code, out = _explore(tmp_path, "--parallel", "2", "--budget", "8", "--nemesis", "none",
                         "--workload", "offsets", "--node-count", "3", "--time-limit", "2", "--seed", "1")
    assert code == 0 and out["findings"] == []
    assert out["schedules_tried"] > 0 and out["fanout"]["tasks"] >= 2 and out["fanout"]["workers"] == 2
    assert out["schedules_per_hour"] > 0 and out["cpu_s"] > 0


def test_a_trial_record_carries_what_the_driver_judges_by() -> None:
    # An unknown trial (the checkers could not tell) is neither a finding nor a pass; the driver's
    # report and its exit 2 rule read `unknown` from the records that come back from the slices.
    cfg = Space().sample(random.Random(1))
    schedule = Schedule(workload=cfg.workload, nodes=["n1"], seed=1, time_limit=1.0, concurrency=1, events=[])
    trial = Trial(schedule=schedule,
                  anomalies={}, coverage=frozenset({"f"}), sim_seconds=1.0, wall_seconds=0.5, config=cfg,
                  unknown=True)
    back = TrialRecord.of(trial, cfg).trial()
    assert back.unknown and not back.failed and back.coverage == trial.coverage and back.config == cfg
