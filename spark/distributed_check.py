"""The per-key linearizability check as a Spark job, for histories too big for one machine.

A history of independent keys is linearizable iff each key's sub-history is (P-compositionality,
as Knossos and Porcupine partition). So the history is split by the model's key, every key's
sub-history is checked by the in-repo checker's `check_key` on an executor, and the per-key results
are merged with `merge_key_results`: the same functions the local checker runs, hence the same
answers. Two entry points:

- `check_distributed(ops, ...)`: the history is in the driver's memory (`jepsen-py check --engine
  spark`); the driver splits it and ships one key per task.
- `check_distributed_parquet(paths, ...)`: the history never comes to the driver: the executors read
  exported ops.parquet files, group the op rows by key (each completion goes with its invocation's
  key) and check each group where it lands. Only the per-key results travel back.

Unlike the local checker, every key is checked even after one is found invalid (executors do not
share a stop flag); the verdict is the same, the report lists every invalid key.
"""

from __future__ import annotations

import atexit
import importlib
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jepsen_py.checkers.linearizable import Budget, check_key, get_model, merge_key_results, split_by_key
from jepsen_py.checkers.linearizable.model import Model
from jepsen_py.spark.session import get_session, is_connect_session

from jepsen_py import NAMESPACED_FOLDERS
from jepsen_py.errors import BadInput
from jepsen_py.history import NEMESIS, Op, validate

if TYPE_CHECKING:
    from jepsen_py.checkers.linearizable import Budget
    from pyspark.sql import SparkSession

_MODEL_CACHE: dict[str, Any] = {}
# What a task on an executor imports: the checker and the history records for a distributed check;
# a simulated trial (explore --master, test-all --master) needs the node code, workloads and nemeses too.
SHIPPED_PACKAGES = ("jepsen_py", *(f"jepsen_py.{name}" for name in NAMESPACED_FOLDERS))
# files beside the sources that modules read when imported (the pictures' scripts, the expectations)
SHIPPED_DATA = ("*.py", "*.js", "*.toml")


def _model(model_name: str, init: Any, options: dict[str, Any]) -> Any:
    """The model, built once per executor process (models are rebuilt from name + init, so nothing
    the driver holds needs to be picklable)."""
    ident = json.dumps([model_name, init, options], sort_keys=True, default=str)
    m = _MODEL_CACHE.get(ident)
    if m is None:
        m = get_model(model_name, init, **options)
        _MODEL_CACHE[ident] = m
    return m


def _as_row(op: Op) -> tuple[Any, ...]:
    """An op as a plain tuple: pickles several times faster than the dataclass."""
    return (op.index, op.time, op.type, op.process, op.f, op.key, op.value, op.node, op.error, op.meta)


def _check_task(
    model_name: str, init: Any, options: dict[str, Any], budget: Budget
) -> Callable[[tuple[int, Hashable, list[tuple[Any, ...]]]], tuple[int, dict[str, Any]]]:
    def run(item: tuple[int, Hashable, list[tuple[Any, ...]]]) -> tuple[int, dict[str, Any]]:
        i, key, rows = item
        ops = [Op(*r) for r in rows]
        return i, check_key(_model(model_name, init, options), key, ops, budget)

    return run


def _is_local(master: str) -> bool:
    return master.startswith("local")


# SparkContexts (by id) that have our packages already, and the zips they are served from.
_SHIPPED: dict[int, Path] = {}


def ship_code(spark: SparkSession) -> None:
    """On a real cluster the executors need our packages: zip them and add them to the job.

    The driver serves an added file from its path for as long as the context lives, and executors
    fetch it only when their first task arrives, so the zip is kept until the interpreter exits
    (removing it right after addPyFile fails every task with "Stream ... was not found"). A Spark
    Connect server gets the zip as a Python artifact of the session.
    """
    if is_connect_session(spark):
        if id(spark) not in _SHIPPED:
            zpath = _code_zip()
            spark.addArtifacts(str(zpath), pyfile=True)  # type: ignore[attr-defined]
            _SHIPPED[id(spark)] = zpath
        return
    sc = spark.sparkContext
    if _is_local(sc.master) or id(sc) in _SHIPPED:
        return
    zpath = _code_zip()
    sc.addPyFile(str(zpath))
    _SHIPPED[id(sc)] = zpath


def _code_zip() -> Path:
    """Our packages' sources as one zip, kept until the interpreter exits.

    Laid out as installed (jepsen_py/checkers/..., jepsen_py/spark/...), wherever each package's
    folder is on the driver: a checkout keeps checkers/ and spark/ beside jepsen_py/, a wheel inside it.
    """
    d = Path(tempfile.mkdtemp(prefix="jepsen-py-pyfiles-"))
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    zpath = d / "jepsen_py_packages.zip"
    written: set[str] = set()
    with zipfile.ZipFile(zpath, "w", zipfile.ZIP_DEFLATED) as z:
        for pkg in SHIPPED_PACKAGES:
            folder = Path(str(importlib.import_module(pkg).__file__)).resolve().parent
            for p in sorted(f for pattern in SHIPPED_DATA for f in folder.rglob(pattern)):
                arcname = "/".join((*pkg.split("."), *p.relative_to(folder).parts))
                if arcname not in written:
                    written.add(arcname)
                    z.write(p, arcname)
    return zpath


def _session(spark: SparkSession | None, master: str | None) -> SparkSession:
    if spark is not None:
        return spark

    s = get_session(master, app_name="jepsen-py check")
    ship_code(s)
    return s


def check_distributed(
    ops: list[Op],
    model_name: str,
    init: Any,
    *,
    master: str | None = None,
    budget: Budget | None = None,
    spark: SparkSession | None = None,
    model_options: dict[str, Any] | None = None,
    partitions: int | None = None,
    source: str = "history",
) -> dict[str, Any]:
    """Checks `ops` against the named model with every key's check on a Spark executor.

    Returns the local checker's result shape (checkers.linearizable docstring) plus "engine":
    "spark", "master" and "partitions". BadInput for an unknown model or a history that breaks
    Jepsen's rules (the same checks as the local checker).
    """
    options = dict(model_options or {})
    model = _model(model_name, init, options)  # unknown model names fail here, on the driver
    validate([op for op in ops if op.process != NEMESIS], source=source)
    groups = list(split_by_key(ops, model).items())
    budget = (budget or Budget()).started()  # one deadline for every key, as the local check has
    if not groups:
        out = merge_key_results({})
        out["model"] = model.name
        out.update(engine="spark", master=None, partitions=0)
        return out
    session = _session(spark, master)

    if is_connect_session(session):
        return _check_connect(session, groups, model, model_name, init, options, budget, partitions, master)
    sc = session.sparkContext
    n = partitions or max(1, min(len(groups), sc.defaultParallelism * 4))
    # largest keys first, dealt round-robin so each partition gets a fair share of the big ones
    order = sorted(range(len(groups)), key=lambda i: -len(groups[i][1]))
    slices: list[list[tuple[int, Hashable, list[tuple[Any, ...]]]]] = [[] for _ in range(n)]
    for j, i in enumerate(order):
        slices[j % n].append((i, groups[i][0], [_as_row(op) for op in groups[i][1]]))
    items = [it for s in slices for it in s]
    rdd = sc.parallelize(items, n).map(_check_task(model_name, init, options, budget))
    results = {groups[i][0]: r for i, r in rdd.collect()}
    out = merge_key_results(results)
    if out["model"] is None:
        out["model"] = model.name
    out.update(engine="spark", master=sc.master, partitions=n)
    return out


def _check_arrow_task(
    model_name: str, init: Any, options: dict[str, Any], budget: Budget
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The per-key check over Arrow batches of (i, pickled (key, rows)) -> (i, pickled result)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pickle

        import pyarrow as pa

        model = _model(model_name, init, options)
        for batch in batches:
            ids, out = [], []
            for i, blob in zip(batch.column("i").to_pylist(), batch.column("item").to_pylist(), strict=True):
                key, rows = pickle.loads(blob)
                ids.append(i)
                out.append(pickle.dumps(check_key(model, key, [Op(*r) for r in rows], budget)))
            yield pa.record_batch([pa.array(ids, pa.int64()), pa.array(out, pa.binary())],
                                  names=["i", "result"])

    return run


def _check_connect(
    session: SparkSession, groups: list[tuple[Hashable, list[Op]]], model: Any, model_name: str, init: Any,
    options: dict[str, Any], budget: Budget, partitions: int | None, master: str | None,
) -> dict[str, Any]:
    """check_distributed on a Spark Connect server: no RDDs there, so the keys travel as a DataFrame
    of pickled sub-histories and are checked with mapInArrow on the server's executors."""
    import pickle

    n = partitions or max(1, min(len(groups), 4 * (os.cpu_count() or 2)))
    items = [(i, pickle.dumps((key, [_as_row(op) for op in ops]))) for i, (key, ops) in enumerate(groups)]
    df = session.createDataFrame(items, "i long, item binary").repartition(n)
    task = _check_arrow_task(model_name, init, options, budget)
    rows = df.mapInArrow(task, "i long, result binary").collect()
    results = {groups[r["i"]][0]: pickle.loads(r["result"]) for r in rows}
    out = merge_key_results(results)
    if out["model"] is None:
        out["model"] = model.name
    out.update(engine="spark", master=master or "sc://", partitions=n)
    return out


def _ops_from_rows(rows: Iterable[Any]) -> list[Op]:
    out = []
    for r in rows:
        out.append(Op(
            index=r["index"], time=r["time"], type=r["type"],
            process=int(r["process"]) if r["is_client"] else r["process"], f=r["f"],
            key=None if r["key"] is None else json.loads(r["key"]),
            value=None if r["value"] is None else json.loads(r["value"]),
            node=r["node"],
            error=None if r["error"] is None else json.loads(r["error"]),
            meta={} if r["meta"] is None else json.loads(r["meta"]),
        ))
    out.sort(key=lambda o: o.index)
    return out


def _check_groups_task(
    model_name: str, init: Any, options: dict[str, Any], budget: Budget
) -> Callable[[Iterator[Any]], Iterator[tuple[str, str, dict[str, Any]]]]:
    def run(groups: Iterator[Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
        model = _model(model_name, init, options)
        for g in groups:
            ops = _ops_from_rows(g["ops"])
            for key, kops in split_by_key(ops, model).items():
                yield g["run_id"], repr(key), check_key(model, key, kops, budget)

    return run


def check_distributed_parquet(
    ops_paths: Sequence[Path | str],
    model_name: str,
    init: Any,
    *,
    master: str | None = None,
    budget: Budget | None = None,
    spark: SparkSession | None = None,
    model_options: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """Checks exported histories (ops.parquet files, spark/schema.py) without collecting them on the
    driver. Returns {run_id: merged result}.

    The executors group op rows by the invocation's key; models that partition by something other
    than the op's key (e.g. multi-register, which checks the whole history as one) get one group
    per run instead, which is still correct, only not spread out.
    """
    from pyspark.sql import functions as F

    options = dict(model_options or {})
    model = _model(model_name, init, options)
    by_key = type(model).key is Model.key
    for p in ops_paths:
        if not Path(p).exists():
            raise BadInput(f"{p}: no such Parquet file")
    budget = (budget or Budget()).started()
    session = _session(spark, master)
    ops = session.read.parquet(*[str(p) for p in ops_paths]).where(
        F.col("is_client") & (F.col("process") != NEMESIS)
    )
    invokes = ops.where(F.col("type") == "invoke").select(
        "run_id", F.col("index").alias("invoke_index"), F.col("key").alias("pkey")
    )
    completions = ops.where(F.col("type") != "invoke").join(invokes, ["run_id", "invoke_index"], "left")
    keyed = ops.where(F.col("type") == "invoke").withColumn("pkey", F.col("key")).unionByName(
        completions.withColumn("pkey", F.coalesce(F.col("pkey"), F.col("key")))
    )
    group_cols = ["run_id", "pkey"] if by_key else ["run_id"]
    fields = ["index", "time", "type", "process", "is_client", "f", "key", "value", "node", "error",
              "meta"]
    grouped = keyed.groupBy(*group_cols).agg(F.collect_list(F.struct(*fields)).alias("ops"))
    n = max(1, session.sparkContext.defaultParallelism * 4)
    rows = (grouped.repartition(n).rdd
            .mapPartitions(_check_groups_task(model_name, init, options, budget)).collect())
    per_run: dict[str, dict[Any, dict[str, Any]]] = {}
    for run_id, key_repr, r in rows:
        per_run.setdefault(run_id, {})[key_repr] = r
    out: dict[str, dict[str, Any]] = {}
    for run_id, results in sorted(per_run.items()):
        merged = merge_key_results(results)
        if merged["model"] is None:
            merged["model"] = model.name
        merged.update(engine="spark", master=session.sparkContext.master)
        out[run_id] = merged
    return out
