"""The Elle-style transactional check as a Spark job: the per-key inference on executors, the
cycle search on the driver.

Inference is per key (checkers/elle/perkey.py): each key's version order, non-cycle anomalies and
ww/wr/rw edges depend on that key's micro-ops only. So the driver projects every transaction onto
the keys it touches, ships one key per task, and collects each key's edges and anomalies; merged,
they are exactly the edges and anomaly counts the local engine infers. Process and real-time
edges, the strongly connected components and the cycle search then run on the driver, with the
same code as the local check (checker.conclude), so the verdict is the local engine's.

The time budget is one wall-clock deadline for every task and the driver's own work; a key that
runs out makes the answer "unknown", never "valid", as locally.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from jepsen_py.checkers.elle.budget import Deadline
from jepsen_py.checkers.elle.checker import WORKLOADS, conclude, gc_paused, validated
from jepsen_py.checkers.elle.found import Found
from jepsen_py.checkers.elle.graph import EdgeList
from jepsen_py.checkers.elle.inference import NONE, Inference
from jepsen_py.checkers.elle.perkey import infer_key, merge, split_by_key
from jepsen_py.checkers.elle.txn import left_out, transactions
from jepsen_py.spark.distributed_check import _session
from jepsen_py.spark.session import is_connect_session

from jepsen_py.history import Op

if TYPE_CHECKING:
    from jepsen_py.checkers.elle.perkey import KeyResult, TxnRow
    from pyspark.sql import SparkSession

Item = tuple[int, Hashable, "list[TxnRow]"]


def _infer_task(workload: str, nodes: int, until: float,
                inference: Inference) -> Callable[[Item], tuple[int, KeyResult]]:
    """One key's inference, with what is left of the budget when the task starts."""

    def run(item: Item) -> tuple[int, KeyResult]:
        i, _key, rows = item
        return i, infer_key(workload, rows, nodes, Deadline(until - time.time()), inference)

    return run


def check_txn_distributed(
    ops: Sequence[Op],
    workload: str = "list-append",
    consistency_models: Iterable[str] | None = ("strict-serializable",),
    *,
    anomalies: Iterable[str] = (),
    time_s: float = 120.0,
    inference: Inference = NONE,
    f: str = "txn",
    master: str | None = None,
    spark: SparkSession | None = None,
    partitions: int | None = None,
) -> dict[str, Any]:
    """checkers.elle.check's result for `ops`, with every key's inference on a Spark executor,
    plus "engine": "spark", "master", "partitions" and "keys". BadInput as the local check."""
    wanted = validated(workload, consistency_models, anomalies)
    deadline = Deadline(time_s)
    until = time.time() + time_s
    txns = transactions(ops, WORKLOADS[workload], f)
    groups = split_by_key(txns)
    edges = EdgeList(len(txns))
    found = Found()
    used_master: str | None = None
    n = 0
    if groups:

        session = _session(spark, master)
        items: list[Item] = [(i, k, rows) for i, (k, rows) in enumerate(groups)]
        if is_connect_session(session):
            n = partitions or max(1, min(len(items), 4 * (os.cpu_count() or 2)))
            pieces = _infer_connect(session, items, n, workload, len(txns), until, inference)
            used_master = master or "sc://"
        else:
            sc = session.sparkContext
            n = partitions or max(1, min(len(items), sc.defaultParallelism * 4))
            # largest keys first, dealt round-robin, so each partition gets a fair share of them
            order = sorted(range(len(items)), key=lambda i: -len(items[i][2]))
            slices: list[list[Item]] = [[] for _ in range(n)]
            for j, i in enumerate(order):
                slices[j % n].append(items[i])
            rdd = sc.parallelize([it for s in slices for it in s], n).map(
                _infer_task(workload, len(txns), until, inference))
            got = dict(rdd.collect())
            pieces = [got[i] for i in range(len(items))]
            used_master = sc.master
        late = merge(pieces, txns, edges, found)
    else:
        late = None
    stopped = f"{late} (on an executor)" if late is not None else None
    with gc_paused():
        result = conclude(txns, edges, found, workload, wanted, deadline, stopped=stopped)
    result.update(engine="spark", master=used_master, partitions=n, keys=len(groups))
    ignored = left_out(ops, f)
    if ignored:
        result["ignored"] = ignored
    return result


def _infer_arrow_task(workload: str, nodes: int, until: float,
                      inference: Inference) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """Per-key inference over Arrow batches of (i, pickled item) -> (i, pickled KeyResult)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pickle

        import pyarrow as pa

        task = _infer_task(workload, nodes, until, inference)
        for batch in batches:
            ids, out = [], []
            for blob in batch.column("item").to_pylist():
                i, piece = task(pickle.loads(blob))
                ids.append(i)
                out.append(pickle.dumps(piece))
            yield pa.record_batch([pa.array(ids, pa.int64()), pa.array(out, pa.binary())],
                                  names=["i", "piece"])

    return run


def _infer_connect(session: SparkSession, items: list[Item], n: int, workload: str, nodes: int,
                   until: float, inference: Inference) -> list[KeyResult]:
    """On a Spark Connect server (no RDDs): the keys travel as a DataFrame of pickled items,
    inferred with mapInArrow on the server's executors."""
    import pickle

    df = session.createDataFrame([(it[0], pickle.dumps(it)) for it in items], "i long, item binary")
    rows = df.repartition(n).mapInArrow(_infer_arrow_task(workload, nodes, until, inference),
                                        "i long, piece binary").collect()
    got = {r["i"]: pickle.loads(r["piece"]) for r in rows}
    return [got[i] for i in range(len(items))]
