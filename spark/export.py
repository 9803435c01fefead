"""Run directory -> Parquet (spark/schema.py), with pyarrow only.

The runner calls `export_run` at the end of every run, so it must be quick and must not start a JVM:
a 10,000-op history exports in well under a second. `jepsen-py export` does the same for older runs,
and `jepsen-py aggregate` exports any run it finds without Parquet before reading the store.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from jepsen_py.spark.schema import (
    DEFAULT_DB_OPTIONS,
    DEFAULT_SCHEDULE,
    DEFAULT_TARGETS,
    NO_BUG,
    NO_NEMESIS,
    NO_READ_MODE,
    OPS_FILE,
    OPS_SCHEMA,
    PARQUET_DIR,
    RUN_FILE,
    RUN_SCHEMA,
    SCHEMA_VERSION,
    UNVERSIONED,
    verdict_text,
)

from jepsen_py.errors import BadInput
from jepsen_py.files import file_mode, make_dirs
from jepsen_py.history import INFO, INVOKE, OK, SAMPLE_PROCESSES, Op, iter_history

HISTORY = "history.jsonl"
TEST_JSON = "test.json"
RESULTS_JSON = "results.json"
RUN_DIR_TIME_FORMAT = "%Y%m%dT%H%M%S.%f"


@dataclass(frozen=True, slots=True)
class RunLabels:
    """What a run was, as the columns every op row repeats (so ops alone can be grouped)."""

    run_id: str
    test_name: str
    workload: str
    nemesis: str
    bug: str
    bugs: tuple[str, ...]
    read_mode: str
    db_options: str
    fault_targets: str
    nemesis_schedule: str
    version: str
    start_time: dt.datetime


def _load_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise BadInput(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None


def _run_start(run_dir: Path, spec: dict[str, Any]) -> dt.datetime:
    """The run's start: its directory name (results/<name>/<YYYYMMDDTHHMMSS.fff>), else the spec's
    start_time, else test.json's modification time."""
    try:
        return dt.datetime.strptime(run_dir.name, RUN_DIR_TIME_FORMAT).replace(tzinfo=dt.UTC)
    except ValueError:
        pass
    raw = spec.get("start_time")
    if isinstance(raw, str):
        try:
            t = dt.datetime.fromisoformat(raw)
            return t if t.tzinfo else t.replace(tzinfo=dt.UTC)
        except ValueError:
            pass
    return dt.datetime.fromtimestamp((run_dir / TEST_JSON).stat().st_mtime, tz=dt.UTC)


def _names(raw: Any) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        return [s for s in raw.split(",") if s]
    return [str(s) for s in raw]


def labels_from_spec(run_dir: Path, spec: dict[str, Any]) -> RunLabels:
    """Reads the grouping labels out of test.json."""
    if not isinstance(spec, dict):
        raise BadInput(f"{run_dir / TEST_JSON}: expected a JSON object (the TestSpec)")
    if "workload" not in spec:
        raise BadInput(f"{run_dir / TEST_JSON}: no 'workload' field")
    options = spec.get("options") or {}
    nemeses = _names(spec.get("nemesis"))
    bugs = sorted(_names(spec.get("bugs")))
    version = spec.get("version") or options.get("db_version") or options.get("version") or UNVERSIONED
    targets = sorted(_names(spec.get("fault_targets")))
    return RunLabels(
        run_id=f"{run_dir.parent.name}/{run_dir.name}",
        test_name=str(spec.get("name") or run_dir.parent.name),
        workload=str(spec["workload"]),
        nemesis=",".join(nemeses) if nemeses else NO_NEMESIS,
        bug=",".join(bugs) if bugs else NO_BUG,
        bugs=tuple(bugs),
        # a DB without read modes records none (null); test.json from before read modes were optional
        # always had one
        read_mode=str(spec["read_mode"]) if spec.get("read_mode") else NO_READ_MODE,
        db_options=db_options_label(spec.get("db_options")),
        fault_targets=",".join(targets) if targets else DEFAULT_TARGETS,
        nemesis_schedule=str(spec.get("nemesis_schedule") or DEFAULT_SCHEDULE),
        version=str(version),
        start_time=_run_start(run_dir, spec),
    )


def db_options_label(raw: Any) -> str:
    """test.json's db_options as the grouping label: "key=value,..." sorted, "default" when none."""
    if not isinstance(raw, dict) or not raw:
        return DEFAULT_DB_OPTIONS
    return ",".join(f"{k}={v}" for k, v in sorted((str(k), str(v)) for k, v in raw.items()))


def _json_or_null(v: Any) -> str | None:
    if v is None:
        return None
    return json.dumps(v, separators=(",", ":"), default=_json_default)


def _json_default(o: Any) -> Any:
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


@dataclass(slots=True)
class OpCounts:
    ops: int = 0
    client_invokes: int = 0
    ok: int = 0
    fail: int = 0
    info: int = 0


def ops_table(labels: RunLabels, ops: Iterable[Op]) -> tuple[pa.Table, OpCounts]:
    """The op rows of one run, with each completion linked to its invocation."""
    cols: dict[str, list[Any]] = {f.name: [] for f in OPS_SCHEMA}
    in_flight: dict[Any, Op] = {}
    counts = OpCounts()
    for op in ops:
        counts.ops += 1
        is_client = op.is_client
        inv_index: int | None = None
        latency: int | None = None
        if op.process not in SAMPLE_PROCESSES:
            if op.type == INVOKE:
                in_flight[op.process] = op
            else:
                inv = in_flight.pop(op.process, None)
                if inv is not None:
                    inv_index = inv.index
                    latency = op.time - inv.time
        if is_client:
            if op.type == INVOKE:
                counts.client_invokes += 1
            elif op.type == OK:
                counts.ok += 1
            elif op.type == INFO:
                counts.info += 1
            else:
                counts.fail += 1
        meta = op.meta or {}
        cols["index"].append(op.index)
        cols["time"].append(op.time)
        cols["type"].append(op.type)
        cols["process"].append(str(op.process))
        cols["is_client"].append(is_client)
        cols["f"].append(op.f)
        cols["key"].append(_json_or_null(op.key))
        cols["value"].append(_json_or_null(op.value))
        cols["node"].append(op.node)
        cols["error"].append(_json_or_null(op.error))
        cols["meta"].append(_json_or_null(meta) if meta else None)
        role = meta.get("role")
        cols["role"].append(None if role is None else str(role))
        cols["term"].append(_int_or_none(meta.get("term")))
        cols["invoke_index"].append(inv_index)
        cols["latency_ns"].append(latency)
    # client ops still in flight at the end never completed: indeterminate, counted as info
    counts.info += sum(1 for p in in_flight if isinstance(p, int) and not isinstance(p, bool))
    n = counts.ops
    for name, value in (
        ("run_id", labels.run_id),
        ("workload", labels.workload),
        ("nemesis", labels.nemesis),
        ("bug", labels.bug),
        ("read_mode", labels.read_mode),
        ("db_options", labels.db_options),
        ("fault_targets", labels.fault_targets),
        ("nemesis_schedule", labels.nemesis_schedule),
        ("version", labels.version),
    ):
        cols[name] = [value] * n
    return pa.Table.from_pydict(cols, schema=OPS_SCHEMA), counts


def anomaly_counts(results: dict[str, Any] | None) -> dict[str, int]:
    """Anomalies by kind over every checker's result; one anomaly reported by two checkers (same kind,
    same ops) counts once."""
    out: dict[str, int] = {}
    if not results:
        return out
    seen: set[tuple[str, str]] = set()
    for res in (results.get("checkers") or {}).values():
        if not isinstance(res, dict):
            continue
        for a in res.get("anomalies") or []:
            kind = str(a.get("kind", "unknown")) if isinstance(a, dict) else "unknown"
            ops = a.get("ops") if isinstance(a, dict) else None
            if ops:
                ident = (kind, json.dumps(ops, default=_json_default))
                if ident in seen:
                    continue
                seen.add(ident)
            out[kind] = out.get(kind, 0) + 1
    return out


def run_table(
    labels: RunLabels, spec: dict[str, Any], results: dict[str, Any] | None, counts: OpCounts
) -> pa.Table:
    """The one-row run table."""
    checkers = (results or {}).get("checkers") or {}
    row = {
        "run_id": labels.run_id,
        "test_name": labels.test_name,
        "workload": labels.workload,
        "nemesis": labels.nemesis,
        "bug": labels.bug,
        "bugs": list(labels.bugs),
        "read_mode": labels.read_mode,
        "db_options": labels.db_options,
        "fault_targets": labels.fault_targets,
        "nemesis_schedule": labels.nemesis_schedule,
        "version": labels.version,
        "db": spec.get("db"),
        "backend": spec.get("backend"),
        "start_time": labels.start_time,
        "start_day": labels.start_time.date(),
        "time_limit": _float_or_none(spec.get("time_limit")),
        "concurrency": _int_or_none(spec.get("concurrency")),
        "rate": _float_or_none(spec.get("rate")),
        "seed": _int_or_none(spec.get("seed")),
        "node_count": len(spec.get("nodes") or []),
        "valid": "missing" if results is None else verdict_text(results.get("valid")),
        "checker_valid": [
            (str(k), verdict_text(v.get("valid") if isinstance(v, dict) else None))
            for k, v in checkers.items()
        ],
        "anomalies": list(anomaly_counts(results).items()),
        "results_json": None if results is None else json.dumps(results, separators=(",", ":")),
        "ops": counts.ops,
        "client_invokes": counts.client_invokes,
        "ok": counts.ok,
        "fail": counts.fail,
        "info": counts.info,
        "schema_version": SCHEMA_VERSION,
    }
    return pa.Table.from_pylist([row], schema=RUN_SCHEMA)


def _float_or_none(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def write_table(table: pa.Table, path: Path) -> None:
    """Writes atomically (temp file + rename), so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp, compression="zstd")
    os.chmod(tmp, file_mode())  # pyarrow leaves it to the umask
    os.replace(tmp, path)


def is_run_dir(path: Path) -> bool:
    return (path / TEST_JSON).is_file() and (path / HISTORY).is_file()


def export_run(run_dir: Path) -> Path:
    """Exports one run directory to <run_dir>/parquet/{ops,run}.parquet; returns that directory.

    Raises BadInput naming the file when the run directory is incomplete or malformed.
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise BadInput(f"{run_dir}: no such run directory")
    for needed in (TEST_JSON, HISTORY):
        if not (run_dir / needed).is_file():
            raise BadInput(f"{run_dir}: not a run directory (no {needed})")
    spec = _load_json(run_dir / TEST_JSON)
    labels = labels_from_spec(run_dir, spec)
    results_path = run_dir / RESULTS_JSON
    results = _load_json(results_path) if results_path.is_file() else None
    if results is not None and not isinstance(results, dict):
        raise BadInput(f"{results_path}: expected a JSON object")
    ops, counts = ops_table(labels, iter_history(run_dir / HISTORY))
    out = make_dirs(run_dir / PARQUET_DIR)
    write_table(ops, out / OPS_FILE)
    write_table(run_table(labels, spec, results, counts), out / RUN_FILE)
    return out


def find_run_dirs(root: Path) -> Iterator[Path]:
    """Every run directory under `root` (root itself may be one), sorted, symlinks like `latest`
    skipped so no run is counted twice."""
    root = Path(root)
    if is_run_dir(root):
        yield root
        return
    for dirpath, dirnames, _files in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
        p = Path(dirpath)
        if p != root and is_run_dir(p):
            dirnames[:] = []
            yield p


def needs_export(run_dir: Path) -> bool:
    """True when the Parquet is missing, older than the history or results, or written by an older
    exporter (a column the schema has now is missing)."""
    out = run_dir / PARQUET_DIR
    try:
        stamp = min((out / OPS_FILE).stat().st_mtime, (out / RUN_FILE).stat().st_mtime)
        if not set(RUN_SCHEMA.names) <= set(pq.read_schema(out / RUN_FILE).names):
            return True
    except FileNotFoundError:
        return True
    except (OSError, pa.ArrowInvalid):  # unreadable: write it again
        return True
    sources = [run_dir / HISTORY, run_dir / TEST_JSON, run_dir / RESULTS_JSON]
    return any(p.exists() and p.stat().st_mtime > stamp for p in sources)


def read_ops(parquet_dir: Path) -> list[Op]:
    """Reads ops.parquet back into history records (the inverse of `ops_table`)."""
    table = pq.read_table(Path(parquet_dir) / OPS_FILE)
    out: list[Op] = []
    for r in table.to_pylist():
        process: Any = int(r["process"]) if r["is_client"] else r["process"]
        out.append(
            Op(
                index=r["index"],
                time=r["time"],
                type=r["type"],
                process=process,
                f=r["f"],
                key=None if r["key"] is None else json.loads(r["key"]),
                value=None if r["value"] is None else json.loads(r["value"]),
                node=r["node"],
                error=None if r["error"] is None else json.loads(r["error"]),
                meta={} if r["meta"] is None else json.loads(r["meta"]),
            )
        )
    return out
