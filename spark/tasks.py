"""Long Python tasks on Spark's executors, one at a time per slot, results back as each ends.

`explore --master` and `test-all --backend sim --master` run work that takes seconds to minutes per
item, and want each result as soon as it is there (to steer the next task, or to print the run's
line). A job over an RDD gives results only when its last partition ends, and `toLocalIterator` runs
its partitions one after another; so each item is its own one-partition job, submitted from a
driver thread per slot (SparkContext is thread-safe, and jobs of different threads run at once).
The futures are ordinary concurrent.futures ones, like a process pool's.

Our packages reach the executors as the py-files zip of distributed checks (ship_code), and a warm-up
job on every slot starts each executor's Python and has it fetch the zip, before any timed work.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import socket
import uuid
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from jepsen_py.spark.distributed_check import ship_code
from jepsen_py.spark.session import get_session, is_connect

from jepsen_py.errors import BadInput, EnvironmentProblem

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")
R = TypeVar("R")

_LOCAL = re.compile(r"local(\[(\*|[1-9][0-9]*)(,[0-9]+)?\])?")
_STANDALONE = re.compile(r"spark://[A-Za-z0-9._-]+:[0-9]{1,5}(,[A-Za-z0-9._-]+:[0-9]{1,5})*")


def check_master(master: str) -> None:
    """BadInput unless `master` is a master these tasks can run on: local, local[N], local[*],
    spark://HOST:PORT, yarn or k8s://URL (not Spark Connect: it has no RDDs to run our tasks)."""
    if is_connect(master):
        raise BadInput(f"--master {master}: a Spark Connect server cannot run simulated trials "
                       "(no RDDs there); give spark://HOST:PORT, local[N], yarn or k8s://URL")
    if _LOCAL.fullmatch(master) or _STANDALONE.fullmatch(master) or master == "yarn" or (
            master.startswith("k8s://") and len(master) > len("k8s://")):
        return
    raise BadInput(f"--master {master!r}: not a Spark master URL (spark://HOST:PORT, local[N], yarn or "
                   "k8s://URL)")


def _reachable(master: str) -> None:
    """A standalone master that does not answer makes Spark retry for a minute: ask its port first."""
    if not master.startswith("spark://"):
        return
    for hostport in master[len("spark://"):].split(","):
        host, _, port = hostport.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=10).close()
            return
        except OSError as e:
            err = e.strerror or str(e)
    raise EnvironmentProblem(f"cannot reach the Spark master {master}: {err}")


def _where(_: Any) -> str:
    """Run on an executor: unpickling this function imports this module there, from the zip."""
    return f"{socket.gethostname()}:{os.getpid()}"


class SparkPool:
    """`slots` driver threads, each running one item at a time as a one-partition Spark job."""

    def __init__(self, spark: SparkSession, slots: int | None = None) -> None:
        self.spark = spark
        self.sc = spark.sparkContext
        self.slots = max(1, slots or self.sc.defaultParallelism)
        self.group = f"jepsen-py-{uuid.uuid4().hex[:12]}"
        self._threads = concurrent.futures.ThreadPoolExecutor(max_workers=self.slots,
                                                              thread_name_prefix="spark-task")
        self._stopped = False

    def warm_up(self) -> int:
        """Starts the executors' Pythons with our code; returns how many executor processes answered."""
        n = self.slots
        return len(set(self.sc.parallelize(range(n), n).map(_where).collect()))

    def submit(self, fn: Callable[[T], R], item: T, description: str = "") -> Future[R]:
        return self._threads.submit(self._run, fn, item, description)

    def _run(self, fn: Callable[[T], R], item: T, description: str) -> R:
        if self._stopped:
            raise concurrent.futures.CancelledError()
        self.sc.setJobGroup(self.group, description or "jepsen-py task", interruptOnCancel=True)
        return self.sc.parallelize([item], 1).map(fn).collect()[0]  # type: ignore[no-any-return]

    def stop(self) -> None:
        """Cancels every running job of this pool (their Python workers are interrupted)."""
        self._stopped = True
        self.sc.cancelJobGroup(self.group)

    def close(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)


def open_pool(master: str, app_name: str, slots: int | None = None) -> SparkPool:
    """A session on `master`, our code shipped, every slot's executor warmed up."""
    check_master(master)
    _reachable(master)
    spark = get_session(master, app_name=app_name)
    ship_code(spark)
    pool = SparkPool(spark, slots)
    try:
        pool.warm_up()
    except Exception as e:
        msg = str(e).strip().splitlines()[0][:300] if str(e).strip() else type(e).__name__
        raise EnvironmentProblem(f"Spark on {master} could not run a task: {msg}") from None
    return pool
