"""`test-all --backend sim --master URL`: the simulated matrix's runs as Spark tasks.

The matrix is planned, tallied and printed on the driver exactly as with `--parallel`
(jepsen_py.sim.matrix.run_matrix); only where each run happens changes: every run is one task on an
executor (spark/tasks.py), with the same seed, flags and checks, so the table's cells are the same.
Each run's directory is written where its task ran, at the driver's absolute --results-dir (one
place on a single machine or a shared filesystem).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from jepsen_py.spark.tasks import SparkPool, open_pool

R = TypeVar("R")  # a run's record (the backend kind's matrix runner says which)


def _call(packed: tuple[Callable[..., R], tuple[Any, ...]]) -> R:
    fn, args = packed
    return fn(*args)


class SparkMatrixPool:
    """run_matrix's Pool on Spark: `slots` runs at once, each a one-partition job."""

    def __init__(self, pool: SparkPool) -> None:
        self.pool = pool
        self.slots = pool.slots
        self.master = pool.sc.master

    def submit(self, fn: Callable[..., R], /, *args: Any) -> Future[R]:
        return self.pool.submit(_call, (fn, args), "test-all run")

    def close(self) -> None:
        self.pool.close()


def open_matrix_pool(master: str, slots: int | None = None) -> SparkMatrixPool:
    return SparkMatrixPool(open_pool(master, "jepsen-py test-all", slots))
