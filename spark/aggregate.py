"""The aggregate job: any number of runs -> one row per group of runs that should get the same verdict:
workload x nemesis x bug x read mode x DB options x fault targets x nemesis schedule x version
(GROUP_COLUMNS).

Per group it computes (definitions are the contract the tests check against plain Python):

- runs; valid / invalid / unknown / unchecked counts (unchecked: no results.json)
- detection_rate: invalid runs / runs, for groups with a bug on (null for correct clusters)
- anomalies: count by kind, summed over the group's runs (results.json, deduplicated per run)
- latency_p50/p95/p99_ms: nearest-rank percentiles (the smallest latency L such that a fraction p of
  the ok client ops took at most L); exact below PERCENTILE_ACCURACY ok ops per group, within
  1/PERCENTILE_ACCURACY of the rank above
- throughput: ok client ops per second of client activity (first invocation to last completion of
  each run, summed over runs)
- availability: ok completions / client invocations, pooled over the group's runs
- longest_unavailable_s: the longest stretch, in any run of the group, during which clients were
  trying and nothing succeeded: it opens when an op is invoked with no stretch open (or at an ok
  completion while other ops are still pending) and closes at the next ok completion (or the run's
  last client event); failures and timeouts inside it do not close it, idle time with nothing
  attempted (between the main phase and the final reads) never opens one
- first_run / last_run: the group's earliest and latest run start

Trends are the same figures per group and calendar day of the run start. Everything heavy (latency
percentiles, the gap search) runs in Spark over the op rows; only the small result tables come back
to the driver.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jepsen_py.spark.dashboard import write_dashboard
from jepsen_py.spark.export import HISTORY, TEST_JSON, export_run, needs_export, write_table
from jepsen_py.spark.schema import GROUP_COLUMNS, NO_BUG, OPS_FILE, PARQUET_DIR, RUN_FILE
from jepsen_py.spark.session import Progress, get_session

from jepsen_py.errors import BadInput
from jepsen_py.files import make_dirs

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

PERCENTILES = (0.5, 0.95, 0.99)
# percentile_approx's accuracy: a group with fewer ok ops than this gets exact nearest-rank
# percentiles (measured: 10,000 already misses the p99 rank of an 8,000-op group once partial
# summaries are merged); a bigger group is within 1/ACCURACY of the rank
PERCENTILE_ACCURACY = 1_000_000
SUMMARY_FILE = "summary.parquet"
TRENDS_FILE = "trends.parquet"
RUNS_FILE = "runs.parquet"

# The exported columns the job reads, given up front so Spark need not open every file's footer.
OPS_DDL = "run_id string, index bigint, time bigint, type string, is_client boolean, latency_ns bigint"
RUN_DDL = (
    "run_id string, test_name string, workload string, nemesis string, bug string, read_mode string, "
    "db_options string, fault_targets string, nemesis_schedule string, version string, start_time timestamp, "
    "start_day date, valid string, anomalies map<string,bigint>"
)
DASHBOARD = "dashboard.html"


@dataclass
class AggregateResult:
    """What the job produced: the small tables (as plain rows) and where they were written."""

    summary: list[dict[str, Any]]
    trends: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    out_dir: Path
    dashboard: Path | None
    run_count: int
    op_count: int
    seconds: dict[str, float] = field(default_factory=dict)


def find_runs(root: Path) -> list[Path]:
    """Run directories under `root`: those with a history (exportable) or with exported Parquet.
    Symlinks such as `latest` are skipped so no run counts twice."""
    import os

    root = Path(root)
    found: list[Path] = []

    def is_run(p: Path) -> bool:
        return ((p / TEST_JSON).is_file() and (p / HISTORY).is_file()) or (
            p / PARQUET_DIR / RUN_FILE
        ).is_file()

    if is_run(root):
        return [root]
    for dirpath, dirnames, _files in os.walk(root):
        p = Path(dirpath)
        if p != root and is_run(p):
            dirnames[:] = []
            found.append(p)
            continue
        dirnames[:] = sorted(
            d for d in dirnames if d != PARQUET_DIR and not os.path.islink(os.path.join(dirpath, d))
        )
    return sorted(found)


def prepare(root: Path, progress: Callable[[str], None]) -> list[Path]:
    """Finds the runs and exports those without up-to-date Parquet; returns their Parquet dirs."""
    root = Path(root)
    if not root.exists():
        raise BadInput(f"{root}: no such results directory")
    if not root.is_dir():
        raise BadInput(f"{root}: not a directory")
    runs = find_runs(root)
    if not runs:
        raise BadInput(f"{root}: no runs found (no test.json + history.jsonl, nor parquet/run.parquet)")
    stale = [r for r in runs if (r / HISTORY).is_file() and needs_export(r)]
    if stale:
        progress(f"exporting {len(stale)} run(s) to Parquet")
        for r in stale:
            export_run(r)
    return [r / PARQUET_DIR for r in runs]


# The longest stretch without an ok, as one left fold over a run's client events in (time, index)
# order. State: p = ops pending, s = start of the current stretch (-1: none), b = longest so far.
# An invocation opens a stretch if none is open; an ok completion closes it, and a new one opens at
# that instant only if other ops are still pending; a fail/info completion changes nothing (the
# stretch goes on through retries). So idle time with nothing attempted (the pause between the
# main phase and the final reads) is never counted, while a run of failures is.
_STRETCH_FOLD = """
aggregate(ev, named_struct('p', 0, 's', -1L, 'b', 0L),
  (acc, e) -> CASE
    WHEN e.kind = 0 THEN named_struct('p', acc.p + 1, 's', IF(acc.s < 0, e.time, acc.s), 'b', acc.b)
    WHEN e.kind = 1 THEN named_struct('p', acc.p - 1, 's', IF(acc.p - 1 > 0, e.time, -1L),
                                      'b', GREATEST(acc.b, IF(acc.s < 0, 0L, e.time - acc.s)))
    ELSE named_struct('p', acc.p - 1, 's', acc.s, 'b', acc.b) END,
  acc -> GREATEST(acc.b, IF(acc.s < 0, 0L, last_time - acc.s)))
"""


def per_run_metrics(ops: DataFrame) -> DataFrame:
    """One row per run from its client ops (the caller filters them): counts, activity span, longest
    stretch without an ok (_STRETCH_FOLD)."""
    from pyspark.sql import functions as F

    is_inv = F.col("type") == "invoke"
    is_ok = F.col("type") == "ok"
    kind = F.when(is_inv, 0).when(is_ok, 1).otherwise(2)
    agg = ops.groupBy("run_id").agg(
        F.count(F.when(is_inv, 1)).alias("invokes"),
        F.count(F.when(is_ok, 1)).alias("ok_ops"),
        F.count(F.when(F.col("type") == "fail", 1)).alias("fail_ops"),
        F.min(F.when(is_inv, F.col("time"))).alias("first_invoke"),
        F.max(F.when(~is_inv, F.col("time"))).alias("last_completion"),
        F.max("time").alias("last_time"),
        F.array_sort(F.collect_list(F.struct(F.col("time"), F.col("index"), kind.alias("kind")))).alias("ev"),
    )
    return (
        agg.withColumn("longest_gap_ns", F.expr(_STRETCH_FOLD))
        .withColumn(
            "duration_ns",
            F.greatest(F.coalesce(F.col("last_completion"), F.col("first_invoke")) - F.col("first_invoke"),
                       F.lit(0)),
        )
        .drop("ev", "last_time")
    )


def _percentile_cols(col: str) -> list[Any]:
    from pyspark.sql import functions as F

    p = F.percentile_approx(F.col(col), [*PERCENTILES], PERCENTILE_ACCURACY)
    return [
        (p[i] / 1e6).alias(f"latency_p{round(q * 100)}_ms") for i, q in enumerate(PERCENTILES)
    ]


def _group_figures(df: DataFrame, keys: list[str]) -> DataFrame:
    """The verdict, availability and throughput figures of runs grouped by `keys`."""
    from pyspark.sql import functions as F

    v = F.col("valid")
    runs = F.count("*")
    invalid = F.sum(F.when(v == "false", 1).otherwise(0))
    return df.groupBy(*keys).agg(
        runs.alias("runs"),
        F.sum(F.when(v == "true", 1).otherwise(0)).alias("valid_runs"),
        invalid.alias("invalid_runs"),
        F.sum(F.when(v == "unknown", 1).otherwise(0)).alias("unknown_runs"),
        F.sum(F.when(v == "missing", 1).otherwise(0)).alias("unchecked_runs"),
        F.when(F.first("bug") != NO_BUG, invalid / runs).alias("detection_rate"),
        F.sum("invokes").alias("client_invokes"),
        F.sum("ok_ops").alias("ok_ops"),
        (F.sum("ok_ops") / F.sum("invokes")).alias("availability"),
        (F.sum("ok_ops") / (F.sum("duration_ns") / 1e9)).alias("throughput"),
        (F.max("longest_gap_ns") / 1e9).alias("longest_unavailable_s"),
        F.min("start_time").alias("first_run"),
        F.max("start_time").alias("last_run"),
    )


def _anomalies_by(runs: DataFrame, keys: list[str]) -> DataFrame:
    from pyspark.sql import functions as F

    exploded = runs.select(*keys, F.explode("anomalies").alias("kind", "n"))
    per_kind = exploded.groupBy(*keys, "kind").agg(F.sum("n").alias("n"))
    return per_kind.groupBy(*keys).agg(
        F.map_from_entries(F.array_sort(F.collect_list(F.struct("kind", "n")))).alias("anomalies")
    )


def _latencies(ok_ops: DataFrame, keys: list[str]) -> tuple[DataFrame, DataFrame]:
    """Latency percentiles per group and per group x day, from ONE scan of the ok ops (grouping sets)."""
    from pyspark.sql import functions as F

    day_keys = [*keys, "start_day"]
    both = (
        ok_ops.groupingSets([keys, day_keys], *day_keys)
        .agg(*_percentile_cols("latency_ns"), F.grouping("start_day").alias("_all_days"))
        .cache()
    )
    cols = [c for c in both.columns if c != "_all_days"]
    per_group = both.where(F.col("_all_days") == 1).select(*[c for c in cols if c != "start_day"])
    per_day = both.where(F.col("_all_days") == 0).select(*cols)
    return per_group, per_day


def compute(spark: SparkSession, parquet_dirs: list[Path]) -> tuple[DataFrame, DataFrame, DataFrame]:
    """(summary, trends, per-run) DataFrames over the given run Parquet directories.

    The op rows are scanned once and cached; the per-run figures and the latency percentiles are two
    passes over the cache.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    # the client ops are read from Parquet once and kept (compressed, in memory or spilled to disk)
    # for the two passes over them: per-run figures and latency percentiles
    ops = (
        spark.read.schema(OPS_DDL).parquet(*[str(d / OPS_FILE) for d in parquet_dirs])
        .where(F.col("is_client"))
        .select("run_id", "index", "time", "type", "latency_ns")
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    runs = spark.read.schema(RUN_DDL).parquet(*[str(d / RUN_FILE) for d in parquet_dirs]).select(
        "run_id", "test_name", *GROUP_COLUMNS, "start_time", "start_day", "valid", "anomalies"
    ).cache()
    keys = list(GROUP_COLUMNS)
    day_keys = [*keys, "start_day"]
    per_run = runs.join(per_run_metrics(ops), "run_id", "left").cache()
    ok_ops = (
        ops.where((F.col("type") == "ok") & F.col("latency_ns").isNotNull())
        .select("run_id", "latency_ns")
        .join(F.broadcast(runs.select("run_id", *day_keys)), "run_id")
    )
    lat_group, lat_day = _latencies(ok_ops, keys)
    no_anomalies = F.create_map().cast("map<string,bigint>")
    summary = (
        _group_figures(per_run, keys)
        .join(_anomalies_by(runs, keys), keys, "left")
        .withColumn("anomalies", F.coalesce(F.col("anomalies"), no_anomalies))
        .join(lat_group, keys, "left")
        .orderBy(*keys)
    )
    trends = (
        _group_figures(per_run, day_keys)
        .join(_anomalies_by(runs, day_keys), day_keys, "left")
        .withColumn("anomalies", F.coalesce(F.col("anomalies"), no_anomalies))
        .join(lat_day, day_keys, "left")
        .orderBy(*day_keys)
    )
    per_run_out = per_run.select(
        "run_id", "test_name", *keys, "start_time", "start_day", "valid", "anomalies",
        "invokes", "ok_ops", "fail_ops",
        (F.col("ok_ops") / F.col("invokes")).alias("availability"),
        (F.col("ok_ops") / (F.col("duration_ns") / 1e9)).alias("throughput"),
        (F.col("longest_gap_ns") / 1e9).alias("longest_unavailable_s"),
        (F.col("duration_ns") / 1e9).alias("duration_s"),
    ).orderBy("start_time", "run_id")
    return summary, trends, per_run_out


def _write_rows(rows: list[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa

    if not rows:
        write_table(pa.table({}), path)
        return
    maps = [k for k, v in rows[0].items() if isinstance(v, dict) or k == "anomalies"]
    plain = pa.Table.from_pylist([{k: v for k, v in r.items() if k not in maps} for r in rows])
    for k in maps:  # {kind: count} stays a Parquet map, not a struct of whatever kinds appeared
        col = pa.array([list((r[k] or {}).items()) for r in rows], pa.map_(pa.string(), pa.int64()))
        plain = plain.append_column(k, col)
    write_table(plain, path)


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    out = []
    for r in df.collect():
        d = r.asDict(recursive=True)
        for k, v in d.items():
            if isinstance(v, float) and math.isnan(v):
                d[k] = None
        out.append(d)
    return out


def run_aggregate(
    results_dir: Path,
    *,
    out_dir: Path | None = None,
    master: str | None = None,
    spark: SparkSession | None = None,
    dashboard: bool = True,
    progress: Callable[[str], None] | None = None,
) -> AggregateResult:
    """The whole job: export what is missing, aggregate in Spark, write Parquet and the dashboard.

    `spark` reuses a live session (tests, spark-submit); otherwise one is started on `master`.
    """
    import time

    say = progress or Progress()
    results_dir = Path(results_dir)
    out = Path(out_dir) if out_dir is not None else results_dir / "aggregate"
    seconds: dict[str, float] = {}
    t0 = time.monotonic()
    dirs = prepare(results_dir, say)
    seconds["prepare"] = time.monotonic() - t0
    if spark is None:
        say(f"starting Spark ({master or 'local[*]'})")
        t = time.monotonic()
        spark = get_session(master, app_name="jepsen-py aggregate")
        seconds["start"] = time.monotonic() - t
    say(f"aggregating {len(dirs)} run(s)")
    t = time.monotonic()
    summary_df, trends_df, runs_df = compute(spark, dirs)
    make_dirs(out)
    say(f"writing {out}")
    # the result tables are small: collect them once and write them from the driver
    summary = _rows(summary_df)
    trends = _rows(trends_df)
    runs = _rows(runs_df)
    for rows, name in ((summary, SUMMARY_FILE), (trends, TRENDS_FILE), (runs, RUNS_FILE)):
        _write_rows(rows, out / name)
    seconds["aggregate"] = time.monotonic() - t
    op_count = int(sum(r["invokes"] or 0 for r in runs))
    page: Path | None = None
    if dashboard:
        page = write_dashboard(out / DASHBOARD, summary, trends, runs)
        say(f"dashboard {page}")
    return AggregateResult(
        summary=summary, trends=trends, runs=runs, out_dir=out, dashboard=page,
        run_count=len(runs), op_count=op_count, seconds=seconds,
    )


def _fmt(v: Any, spec: str = "") -> str:
    if v is None:
        return "-"
    if isinstance(v, dt.datetime | dt.date):
        return v.isoformat()[:10]
    return format(v, spec)


def render_table(summary: list[dict[str, Any]], title: str = "jepsen-py aggregate") -> Any:
    """The summary as a rich Table (printed by the CLI)."""
    from rich.table import Table

    t = Table(title=title, show_lines=False)
    # the DB options column only where some group set one: our cluster's runs never do
    with_options = any((r.get("db_options") or "default") != "default" for r in summary)
    for name, justify in (
        ("workload", "left"), ("nemesis", "left"), ("bug", "left"), ("reads", "left"),
        *([("db options", "left")] if with_options else []),
        ("targets", "left"), ("schedule", "left"), ("version", "left"),
        ("runs", "right"), ("ok/bad/?", "right"), ("detect", "right"), ("anomalies", "left"),
        ("p50 ms", "right"), ("p95 ms", "right"), ("p99 ms", "right"), ("ok/s", "right"),
        ("avail", "right"), ("max gap s", "right"),
    ):
        t.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in summary:
        anomalies = r.get("anomalies") or {}
        t.add_row(
            r["workload"], r["nemesis"], r["bug"], r["read_mode"],
            *([r.get("db_options") or "default"] if with_options else []),
            r["fault_targets"],
            r["nemesis_schedule"], r["version"], str(r["runs"]),
            f"{r['valid_runs']}/{r['invalid_runs']}/{r['unknown_runs'] + r['unchecked_runs']}",
            _fmt(r["detection_rate"], ".0%"),
            " ".join(f"{k}:{v}" for k, v in sorted(anomalies.items())) or "-",
            _fmt(r["latency_p50_ms"], ".1f"), _fmt(r["latency_p95_ms"], ".1f"),
            _fmt(r["latency_p99_ms"], ".1f"), _fmt(r["throughput"], ".0f"),
            _fmt(r["availability"], ".1%"), _fmt(r["longest_unavailable_s"], ".2f"),
        )
    return t
