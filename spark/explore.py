"""`explore --master URL`: the search's slices (jepsen_py.explore.tasks) run on Spark's executors.

The driver (jepsen_py.explore.fanout) hands out one task per slot and merges each task's trial
records as it comes back; a finding is shrunk on the driver. Each task builds its own simulator from
the shipped code: the node code (jepsen_py.cluster) runs inside the executor's Python, in simulated
time, as it does in one process.
"""

from __future__ import annotations

from concurrent.futures import Future

from jepsen_py.spark.tasks import SparkPool, open_pool

from jepsen_py.explore.tasks import Task, TaskResult, run_task


class SparkRunner:
    """The fanout's Runner on a SparkPool."""

    def __init__(self, pool: SparkPool) -> None:
        self.pool = pool
        self.slots = pool.slots
        self.master = pool.sc.master

    def submit(self, task: Task) -> Future[TaskResult]:
        return self.pool.submit(run_task, task, f"explore slice {task.index}")

    def stop(self) -> None:
        self.pool.stop()

    def close(self) -> None:
        self.pool.close()


def open_runner(master: str, slots: int | None = None) -> SparkRunner:
    """A runner with `slots` tasks at once (default: the cluster's cores, Spark's default parallelism)."""
    return SparkRunner(open_pool(master, "jepsen-py explore", slots))
