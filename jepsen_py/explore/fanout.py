"""A search spread over many cores: the driver hands out slices of the search (tasks.py) to a
Runner (worker processes here, Spark executors in jepsen_py.spark.explore), merges what comes back
into its own Search, and hands out the next slice with the merged corpus, so coverage one core found
steers what the others try next (as a parallel fuzzer syncs its queues).

There is no barrier between slices: a slot that finishes gets its next task at once, with the corpus
as it is then. Each slice lasts `slice_s` wall seconds (a trial running at its end is let finish),
except at the end of the budget, where a trial still running is cut short as in one process.

With the same seed, the configurations tried depend on when each slice came back, so such a search
is not repeatable trial for trial the way a search in one process is; every finding's schedule is,
and it is shrunk on the driver with the usual code. `round_size` trades some of the cores' time for
that: the search goes in rounds of that many tasks of TASK_TRIALS trials each, handed out together
from the same corpus and merged in the order they were handed out once the whole round is back, so
the same seed and round size try the same schedules whatever the number of cores (up to the round
the budget cuts short). A round waits for its slowest task.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Protocol

from jepsen_py.explore.search import Search, Trial
from jepsen_py.explore.tasks import Task, TaskResult, run_task, start_worker

# wall seconds a slice searches before it comes back with its records (the driver merges them)
SLICE_S = 20.0
# no slice is handed out with less of the budget left than this: it could not finish a trial
MIN_SLICE_S = 0.5
# the trials of each task of a round (round_size): enough that a task's start-up is small beside them
TASK_TRIALS = 4


class Runner(Protocol):
    """Where tasks run: `slots` at once."""

    slots: int

    def submit(self, task: Task) -> Future[TaskResult]:
        """Starts a task; its future gives the task's records."""

    def stop(self) -> None:
        """Asks every running task to end as soon as it can (their records may be lost)."""

    def close(self) -> None:
        """Waits for the running tasks and releases the workers."""


class ProcessRunner:
    """`explore --parallel N`: N worker processes on this machine (spawned, not forked: nothing of
    the driver's threads or live display is copied), each dying with the driver."""

    def __init__(self, slots: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.slots = slots
        self._stop = ctx.Event()
        self._pool = concurrent.futures.ProcessPoolExecutor(
            max_workers=slots, mp_context=ctx, initializer=start_worker, initargs=(os.getpid(), self._stop))

    def submit(self, task: Task) -> Future[TaskResult]:
        return self._pool.submit(run_task, task)

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


@dataclass
class FanoutStats:
    tasks: int = 0
    task_errors: int = 0
    first_error: str | None = None
    # CPU seconds the tasks spent, wherever they ran (the driver's own are its process's)
    task_cpu_s: float = 0.0
    workers: int = 0


def run_fanout(search: Search, runner: Runner, *, bugs: list[str], budget_s: float, stop_at_first: bool,
               on_trial: Callable[[Trial], None] = lambda t: None,
               on_finding: Callable[[Trial], bool] = lambda t: True,
               slice_s: float = SLICE_S, clock: Callable[[], float] = time.monotonic,
               stats: FanoutStats | None = None, round_size: int = 0) -> FanoutStats:
    """Searches for `budget_s` wall seconds on `runner`, merging every trial into `search`.

    `on_finding(trial)` handles a failing trial on the driver (shrinks it) and says whether the search
    stops there; with `stop_at_first` the running tasks are told to stop before it is called, so the
    driver's shrinking has the cores. Task failures are counted, not raised; when tasks keep failing
    before any trial came back (the executors cannot import our code, say) the search gives up.
    `round_size` > 0: in repeatable rounds of that many tasks (see the module's docstring)."""
    stats = stats if stats is not None else FanoutStats()
    deadline = clock() + budget_s
    running: dict[Future[TaskResult], Task] = {}
    workers: set[str] = set()
    stopping = False

    def task(left: float, trials: int = 0) -> Task:
        t = Task(index=stats.tasks, seed=search.rng.randrange(2**31), space=search.space,
                 bugs=tuple(bugs), slice_s=min(slice_s, left), budget_s=left,
                 corpus=tuple(search.corpus), seen=dict(search.seen),
                 warmup=0 if search.stats.tried >= search.warmup else search.warmup,
                 stop_at_finding=stop_at_first, trials=trials)
        stats.tasks += 1
        return t

    def hand_out() -> None:
        if round_size:
            if running or stopping or deadline - clock() < MIN_SLICE_S:
                return
            left = deadline - clock()
            for t in [task(left, TASK_TRIALS) for _ in range(round_size)]:
                running[runner.submit(t)] = t
            return
        while not stopping and len(running) < runner.slots:
            left = deadline - clock()
            if left < MIN_SLICE_S:
                return
            t = task(left)
            running[runner.submit(t)] = t

    def stop() -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            runner.stop()

    def merge(fut: Future[TaskResult]) -> None:
        try:
            result = fut.result()
        except Exception as e:  # the worker died, or Spark lost the task
            if stopping:
                return
            stats.task_errors += 1
            if stats.first_error is None:
                stats.first_error = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}" \
                    if str(e).strip() else type(e).__name__
            if search.stats.tried == 0 and stats.task_errors >= 2 * runner.slots:
                stop()
            return
        stats.task_cpu_s += result.cpu_s
        workers.add(result.where)
        for rec in result.trials:
            trial = search.record(rec.config, rec.trial())
            on_trial(trial)
            if not trial.failed or stopping:
                continue
            if stop_at_first:
                stop()
            if on_finding(trial):
                stop()

    try:
        hand_out()
        while running:
            if round_size:  # the whole round, merged in the order it was handed out
                concurrent.futures.wait(running)
                for fut in sorted(running, key=lambda f: running[f].index):
                    merge(fut)
                running.clear()
            else:
                done, _ = concurrent.futures.wait(running, timeout=0.5,
                                                  return_when=concurrent.futures.FIRST_COMPLETED)
                for fut in done:
                    running.pop(fut)
                    merge(fut)
            hand_out()
    finally:
        stop()
        runner.close()
    stats.workers = len(workers)
    return stats
