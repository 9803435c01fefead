"""One slice of a search, run wherever there is a core: a worker process (`explore --parallel N`) or
a Spark executor (`explore --master URL`).

A task is plain data: the space, the bugs, its own seed, how long to search, and the corpus and
seen-counts the driver had merged when it handed the task out (so coverage found by one task steers
the next). It builds its own simulator System and Search from that, runs trials in a scratch
directory of its own, and sends back compact records (configuration, anomaly kinds, coverage,
simulated seconds, and the recorded schedule of a failing trial): the driver merges them, and
shrinks findings with the same code as a search in one process.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jepsen_py.explore.schedule import Schedule
from jepsen_py.explore.search import Search, Trial
from jepsen_py.explore.space import Config, Space
from jepsen_py.explore.system import BackendSystem
from jepsen_py.lifetime import die_with_parent


@dataclass(frozen=True)
class Task:
    """One slice of the search, as the driver hands it out."""

    index: int
    seed: int
    space: Space
    bugs: tuple[str, ...]
    # wall seconds after which the task starts no new trial
    slice_s: float
    # wall seconds after which a trial still running is cut short: what is left of the whole budget
    budget_s: float
    corpus: tuple[tuple[Config, frozenset[str]], ...] = ()
    seen: dict[str, int] = field(default_factory=dict)
    warmup: int = 10
    # stop at the first failing trial (the driver stops the search there) or search the whole slice
    stop_at_finding: bool = True
    # > 0: exactly this many trials, however long they take (a round of a repeatable search);
    # 0: trials until slice_s has passed
    trials: int = 0


@dataclass
class TrialRecord:
    """What the driver needs of one trial; the run directory stays (and is removed) where it ran."""

    config: Config
    anomalies: dict[str, int]
    coverage: frozenset[str]
    sim_seconds: float
    wall_seconds: float
    error: str | None = None
    cut: bool = False
    unknown: bool = False  # the checkers could not tell: the driver's report and exit code count it
    schedule: Schedule | None = None  # a failing trial's recorded schedule, to shrink

    @classmethod
    def of(cls, trial: Trial, cfg: Config) -> TrialRecord:
        return cls(config=trial.config or cfg, anomalies=dict(trial.anomalies), coverage=trial.coverage,
                   sim_seconds=trial.sim_seconds, wall_seconds=trial.wall_seconds, error=trial.error,
                   cut=trial.cut, unknown=trial.unknown, schedule=trial.schedule if trial.failed else None)

    def trial(self) -> Trial:
        """The record as the driver's Search counts it in (no run directory: it was the executor's)."""
        sched = self.schedule if self.schedule is not None else _NO_SCHEDULE
        return Trial(schedule=sched, anomalies=dict(self.anomalies), coverage=self.coverage,
                     sim_seconds=self.sim_seconds, wall_seconds=self.wall_seconds, config=self.config,
                     error=self.error, cut=self.cut, unknown=self.unknown)


# clean trials come back without their schedule (the driver keeps only failing ones)
_NO_SCHEDULE = Schedule(workload="", nodes=[], seed=0, time_limit=0.0, concurrency=0, events=[])


@dataclass
class TaskResult:
    index: int
    trials: list[TrialRecord]
    wall_s: float
    cpu_s: float
    where: str  # host:pid of the process that ran it


# set in a worker process of `explore --parallel`: the driver asks every task to stop after its trial
_STOP: Any = None


def start_worker(parent_pid: int, stop: Any) -> None:
    """A pool worker's initializer: dies with the driver, leaves Ctrl-C to it, and learns the
    driver's stop flag."""
    global _STOP
    die_with_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _STOP = stop


def _stopped() -> bool:
    return _STOP is not None and bool(_STOP.is_set())


def run_task(task: Task) -> TaskResult:
    """Runs trials of the task's own Search until its slice ends or it has run `task.trials` (or
    until its first failing trial)."""
    started, cpu0 = time.monotonic(), time.process_time()
    work = Path(tempfile.mkdtemp(prefix="jepsen-py-explore-"))
    records: list[TrialRecord] = []
    try:
        system = BackendSystem(work_dir=work, bugs=list(task.bugs))
        search = Search(system, task.space, seed=task.seed, warmup=task.warmup)
        search.load(task.corpus, task.seen)
        soft, hard = started + task.slice_s, started + task.budget_s
        while (len(records) < task.trials if task.trials else time.monotonic() < soft) and not _stopped():
            system.deadline = hard
            cfg = search.next_config()
            trial = search.record(cfg, system.trial(cfg))
            records.append(TrialRecord.of(trial, cfg))
            if trial.cut or (trial.failed and task.stop_at_finding):
                break
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return TaskResult(index=task.index, trials=records, wall_s=time.monotonic() - started,
                      cpu_s=time.process_time() - cpu0, where=f"{socket.gethostname()}:{os.getpid()}")
