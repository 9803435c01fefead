"""The aggregate job on real PySpark local[2] equals a plain-Python computation over the same runs."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from jepsen_py.spark.aggregate import AggregateResult, run_aggregate
from jepsen_py.spark.schema import GROUP_COLUMNS
from jepsen_py.spark.synthetic import SyntheticRun, write_run

from jepsen_py.cli import main
from jepsen_py.history import read_history
from tests.spark.test_export import framework_run


def make_store(root: Path) -> list[Path]:
    """Runs across workloads, nemeses, bugs, versions and days: valid, invalid, unknown, unchecked."""
    dirs = []
    i = 0
    for workload in ("offsets", "topics"):
        for nemesis in (["partition-leader"], []):
            for bugs in ([], ["zombie-leader"]):
                for k in range(3):
                    i += 1
                    dirs.append(write_run(root, SyntheticRun(
                        test_name=f"{workload}-{i}", workload=workload, nemesis=nemesis, bugs=bugs,
                        version="0.1.0" if k < 2 else "0.2.0", seed=i, pairs=200 + 40 * k,
                        stale_reads=1 if bugs and k != 1 else 0, verdict_unknown=not bugs and k == 1,
                        start=dt.datetime(2026, 11, 18 + k, 8 + i % 5, i, tzinfo=dt.UTC))))
    (dirs[5] / "results.json").unlink()  # a run whose checkers never ran
    for read_mode, targets, schedule in (("local", [], "random"), ("read-index", ["majority"], "random"),
                                         ("read-index", [], "cycle")):
        i += 1  # runs of a correct build whose parameters change what they should get
        dirs.append(write_run(root, SyntheticRun(
            test_name=f"params-{i}", read_mode=read_mode, fault_targets=targets, nemesis_schedule=schedule,
            seed=i, pairs=120, stale_reads=1 if read_mode == "local" else 0,
            start=dt.datetime(2026, 11, 19, 9, i, tzinfo=dt.UTC))))
    dirs.append(framework_run(root))
    return dirs


def longest_stretch(ops: list[Any]) -> int:
    """Walks the events in time order keeping the set of pending ops: a stretch runs from the moment
    something is attempted with no success since, to the next ok."""
    pending: set[int] = set()
    start: int | None = None
    best = 0
    events = sorted(ops, key=lambda op: (op.time, op.index))
    for op in events:
        if op.type == "invoke":
            pending.add(op.process)
            if start is None:
                start = op.time
            continue
        pending.discard(op.process)
        if op.type == "ok":
            assert start is not None
            best = max(best, op.time - start)
            start = op.time if pending else None
    if start is not None:
        best = max(best, events[-1].time - start)
    return best


def nearest_rank(xs: list[int], p: float) -> float:
    s = sorted(xs)
    return s[max(0, math.ceil(p * len(s)) - 1)] / 1e6


def reference(dirs: list[Path]) -> tuple[dict[tuple, dict[str, Any]], dict[tuple, dict[str, Any]]]:
    """Plain Python over test.json, results.json and history.jsonl: (per group, per group x day)."""
    runs: list[dict[str, Any]] = []
    for d in dirs:
        spec = json.loads((d / "test.json").read_text())
        results = json.loads((d / "results.json").read_text()) if (d / "results.json").exists() else None
        ops = [op for op in read_history(d / "history.jsonl") if isinstance(op.process, int)]
        open_: dict[int, Any] = {}
        lat: list[int] = []
        for op in ops:
            if op.type == "invoke":
                open_[op.process] = op
            else:
                inv = open_.pop(op.process)
                if op.type == "ok":
                    lat.append(op.time - inv.time)
        first = min(op.time for op in ops if op.type == "invoke")
        last = max(op.time for op in ops if op.type != "invoke")
        oks = sorted(op.time for op in ops if op.type == "ok")
        kinds: dict[str, int] = defaultdict(int)
        seen = set()
        for res in ((results or {}).get("checkers") or {}).values():
            for a in res.get("anomalies", []):
                ident = (a["kind"], json.dumps(a.get("ops")))
                if a.get("ops") and ident in seen:
                    continue
                seen.add(ident)
                kinds[a["kind"]] += 1
        verdicts = {True: "true", False: "false"}
        valid = "missing" if results is None else verdicts.get(results["valid"], "unknown")
        try:
            day = dt.datetime.strptime(d.name, "%Y%m%dT%H%M%S.%f").date()
        except ValueError:
            day = None
        runs.append({
            "group": (spec["workload"], ",".join(spec["nemesis"]) or "none",
                      ",".join(sorted(spec["bugs"])) or "none", spec.get("read_mode") or "n/a",
                      ",".join(f"{k}={v}" for k, v in sorted((spec.get("db_options") or {}).items()))
                      or "default",
                      ",".join(sorted(spec.get("fault_targets") or [])) or "default",
                      spec.get("nemesis_schedule") or "random",
                      spec.get("options", {}).get("db_version")
                      or spec.get("options", {}).get("version", "unversioned")),
            "day": day, "valid": valid, "kinds": kinds, "lat": lat,
            "invokes": sum(op.type == "invoke" for op in ops), "ok": len(oks),
            "gap": longest_stretch(ops), "duration": last - first,
        })

    def figures(rs: list[dict[str, Any]]) -> dict[str, Any]:
        n = len(rs)
        invalid = sum(r["valid"] == "false" for r in rs)
        lat = [x for r in rs for x in r["lat"]]
        kinds: dict[str, int] = defaultdict(int)
        for r in rs:
            for k, v in r["kinds"].items():
                kinds[k] += v
        return {
            "runs": n,
            "valid_runs": sum(r["valid"] == "true" for r in rs),
            "invalid_runs": invalid,
            "unknown_runs": sum(r["valid"] == "unknown" for r in rs),
            "unchecked_runs": sum(r["valid"] == "missing" for r in rs),
            "detection_rate": None if rs[0]["group"][2] == "none" else invalid / n,
            "anomalies": dict(kinds),
            "availability": sum(r["ok"] for r in rs) / sum(r["invokes"] for r in rs),
            "throughput": sum(r["ok"] for r in rs) / (sum(r["duration"] for r in rs) / 1e9),
            "longest_unavailable_s": max(r["gap"] for r in rs) / 1e9,
            "latency_p50_ms": nearest_rank(lat, 0.5),
            "latency_p95_ms": nearest_rank(lat, 0.95),
            "latency_p99_ms": nearest_rank(lat, 0.99),
        }

    groups: dict[tuple, list] = defaultdict(list)
    days: dict[tuple, list] = defaultdict(list)
    for r in runs:
        groups[r["group"]].append(r)
        if r["day"] is not None:
            days[(*r["group"], r["day"])].append(r)
    return {g: figures(rs) for g, rs in groups.items()}, {g: figures(rs) for g, rs in days.items()}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    root = tmp_path_factory.mktemp("results")
    return root, make_store(root)


@pytest.fixture(scope="module")
def aggregated(spark_session: Any, store: tuple[Path, list[Path]]) -> AggregateResult:
    root, _ = store
    return run_aggregate(root, out_dir=root.parent / "agg", spark=spark_session, progress=lambda s: None)


FIELDS = ("runs", "valid_runs", "invalid_runs", "unknown_runs", "unchecked_runs", "detection_rate",
          "anomalies", "availability", "throughput", "longest_unavailable_s", "latency_p50_ms",
          "latency_p95_ms", "latency_p99_ms")


def _same(got: dict[str, Any], want: dict[str, Any]) -> None:
    for f in FIELDS:
        if isinstance(want[f], float):
            assert got[f] == pytest.approx(want[f], rel=1e-9), f
        else:
            assert got[f] == want[f], f


def test_summary_equals_plain_python(aggregated: AggregateResult, store: tuple[Path, list[Path]]) -> None:
    want, _ = reference(store[1])
    got = {tuple(r[c] for c in GROUP_COLUMNS): r for r in aggregated.summary}
    assert set(got) == set(want)
    for g in want:
        _same(got[g], want[g])
    assert aggregated.run_count == len(store[1])
    # the store holds detected and missed bugs, unknown and unchecked runs: the figures are not trivial
    rates = {r["detection_rate"] for r in aggregated.summary if r["detection_rate"] is not None}
    assert any(0 < x < 1 for x in rates)
    assert sum(r["unknown_runs"] for r in aggregated.summary) > 0
    assert sum(r["unchecked_runs"] for r in aggregated.summary) == 1


def test_trends_per_day_equal_plain_python(aggregated: AggregateResult,
                                           store: tuple[Path, list[Path]]) -> None:
    _, want = reference(store[1])
    got = {(*(r[c] for c in GROUP_COLUMNS), r["start_day"]): r
           for r in aggregated.trends}
    # the framework run's directory name is today's timestamp; compare the synthetic days exactly
    for g in want:
        _same(got[g], want[g])
    assert len({r["start_day"] for r in aggregated.trends}) >= 3


def test_outputs_are_parquet_and_a_self_contained_dashboard(aggregated: AggregateResult) -> None:
    out = aggregated.out_dir
    summary = pq.read_table(out / "summary.parquet").to_pylist()
    assert len(summary) == len(aggregated.summary)
    assert [dict(r["anomalies"]) for r in summary] == [r["anomalies"] for r in aggregated.summary]
    assert pq.read_table(out / "runs.parquet").num_rows == aggregated.run_count
    page = (aggregated.dashboard or Path("missing")).read_text()
    assert "Detection rate" in page and "Trends by day" in page and "Plotly.newPlot" in page
    assert "<script src=" not in page  # works offline: plotly.js is inlined


def test_cli_aggregate_prints_the_table(spark_session: Any, store: tuple[Path, list[Path]], tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    root, dirs = store
    assert main(["aggregate", str(root), "--out", str(tmp_path / "o"), "--quiet", "--no-dashboard"]) == 0
    out = capsys.readouterr().out
    assert f"{len(dirs)} runs" in out and "zombie-leader" in out and "partition-leader" in out
    assert (tmp_path / "o" / "summary.parquet").is_file() and not (tmp_path / "o" / "dashboard.html").exists()


def test_cli_bad_input_is_one_line_and_254(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["aggregate", str(tmp_path / "empty")]) == 254
    err = capsys.readouterr().err.strip()
    assert err == (f"jepsen-py: {tmp_path / 'empty'}: no runs found "
                   "(no test.json + history.jsonl, nor parquet/run.parquet)")
    assert main(["aggregate", str(tmp_path / "missing")]) == 254
    assert capsys.readouterr().err.strip().endswith("missing: no such results directory")
    assert main(["export", str(tmp_path / "empty")]) == 254
    assert "no runs found" in capsys.readouterr().err
    assert main(["aggregate", str(tmp_path), "--spark-log", "loud"]) == 254


def test_cli_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write_run(tmp_path, SyntheticRun(test_name="a", pairs=40))
    b = write_run(tmp_path, SyntheticRun(test_name="b", pairs=40))
    assert main(["export", str(tmp_path)]) == 0
    assert capsys.readouterr().out.split() == [str(a / "parquet"), str(b / "parquet")]


def test_unavailable_stretches_skip_idle_time_and_span_failures(spark_session: Any, tmp_path: Path) -> None:
    from jepsen_py.history import HistoryWriter, Op

    ms = 1_000_000
    events = [  # (ms, type, process)
        (0, "invoke", 0), (10, "ok", 0),                       # 10 ms before the first ok
        (1000, "invoke", 1), (1100, "fail", 1),               # failures and a pause between retries:
        (1200, "invoke", 1), (1300, "fail", 1),               # one stretch, 1000 -> 1500
        (1400, "invoke", 1), (1500, "ok", 1),
        (5000, "invoke", 2), (5050, "ok", 2),                 # the idle 1500 -> 5000 is no outage
        (6000, "invoke", 3), (6010, "invoke", 4),
        (6100, "ok", 3), (6400, "ok", 4),                     # 6100 -> 6400 while op 4 was pending
        (7000, "invoke", 5), (7600, "info", 5),               # the tail: 600 ms, the longest
    ]
    run = SyntheticRun(test_name="stretch", pairs=1)
    d = tmp_path / "results" / "stretch" / "20261122T000000.000"
    d.mkdir(parents=True)
    (d / "test.json").write_text(json.dumps(run.spec()))
    with HistoryWriter(d / "history.jsonl") as w:
        for t, typ, p in events:
            w.append(Op(0, t * ms, typ, p, "read", key="k"))
    ops = read_history(d / "history.jsonl")
    assert longest_stretch(ops) == 600 * ms
    res = run_aggregate(tmp_path / "results", out_dir=tmp_path / "agg", spark=spark_session,
                        dashboard=False, progress=lambda s: None)
    (row,) = res.runs
    assert row["longest_unavailable_s"] == pytest.approx(0.6)
    assert row["availability"] == pytest.approx(5 / 8)
    assert row["valid"] == "missing"


def test_a_weak_read_mode_is_its_own_row_not_the_correct_build_failing(spark_session: Any,
                                                                      tmp_path: Path) -> None:
    """A deliberately weak --read-mode local run (invalid, as it should be) and a correct read-index
    run of the same workload, nemesis, bug (none) and version land in different rows."""
    root = tmp_path / "results"
    write_run(root, SyntheticRun(test_name="weak", read_mode="local", stale_reads=2, seed=1, pairs=150))
    write_run(root, SyntheticRun(test_name="correct", read_mode="read-index", seed=2, pairs=150))
    res = run_aggregate(root, out_dir=tmp_path / "agg", spark=spark_session, dashboard=False,
                        progress=lambda s: None)
    rows = {r["read_mode"]: r for r in res.summary}
    assert set(rows) == {"local", "read-index"}
    assert (rows["local"]["runs"], rows["local"]["invalid_runs"]) == (1, 1)
    assert (rows["read-index"]["runs"], rows["read-index"]["valid_runs"]) == (1, 1)
    assert {r["bug"] for r in res.summary} == {"none"}


def test_a_weak_db_option_is_its_own_row(spark_session: Any, tmp_path: Path) -> None:
    """Two configurations of one plugin DB (no read modes: reads from replicas, reads from the
    primary) of the same workload, nemesis and version land in different rows, labelled by their
    --db-option."""
    root = tmp_path / "results"
    db = "jepsen_redis.db:RedisDB"
    write_run(root, SyntheticRun(test_name="weak", read_mode=None, db=db, db_options={"reads": "replica"},
                                 stale_reads=2, seed=1, pairs=150))
    write_run(root, SyntheticRun(test_name="correct", read_mode=None, db=db, seed=2, pairs=150))
    res = run_aggregate(root, out_dir=tmp_path / "agg", spark=spark_session, dashboard=False,
                        progress=lambda s: None)
    rows = {r["db_options"]: r for r in res.summary}
    assert set(rows) == {"reads=replica", "default"}
    assert (rows["reads=replica"]["runs"], rows["reads=replica"]["invalid_runs"]) == (1, 1)
    assert (rows["default"]["runs"], rows["default"]["valid_runs"]) == (1, 1)
    assert {r["read_mode"] for r in res.summary} == {"n/a"}
