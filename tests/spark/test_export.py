"""Export: Parquet rows == history ops, run rows == test.json + results.json; no JVM involved."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from jepsen_py.spark.aggregate import find_runs, prepare
from jepsen_py.spark.export import anomaly_counts, export_run, needs_export, read_ops
from jepsen_py.spark.schema import OPS_FILE, OPS_SCHEMA, RUN_FILE, RUN_SCHEMA
from jepsen_py.spark.synthetic import SyntheticRun, write_run

from jepsen_py.errors import BadInput
from jepsen_py.history import read_history, validate
from tests.jepsen_py.fakes import FakeDB, make_spec, register_workload


def framework_run(tmp: Path) -> Path:
    """A run made by the real runner (in-process DB and clients), stored the way `jepsen-py run` does."""
    from jepsen_py.backends.none import NoneBackend
    from jepsen_py.runner import run_test

    spec = make_spec(tmp, time_limit=0.4, bugs=["zombie-leader"], options={"version": "9.9.9"})
    out = run_test(spec, db=FakeDB(spec), workload=register_workload(), backend=NoneBackend(spec))
    return out.run_dir


def test_round_trip_of_a_framework_run(tmp_path: Path) -> None:
    run_dir = framework_run(tmp_path)
    history = read_history(run_dir / "history.jsonl")
    assert len(history) > 20
    out = export_run(run_dir)
    assert read_ops(out) == history
    ops = pq.read_table(out / OPS_FILE)
    assert ops.schema.equals(OPS_SCHEMA)
    rows = ops.to_pylist()
    assert {r["run_id"] for r in rows} == {f"{run_dir.parent.name}/{run_dir.name}"}
    assert {(r["workload"], r["bug"], r["version"], r["nemesis"]) for r in rows} == {
        ("register", "zombie-leader", "9.9.9", "none")}
    # each completion names its invocation and its latency
    by_index = {op.index: op for op in history}
    completions = [r for r in rows if r["invoke_index"] is not None]
    assert completions
    for r in completions:
        inv = by_index[r["invoke_index"]]
        assert inv.type == "invoke" and str(inv.process) == r["process"]
        assert r["latency_ns"] == r["time"] - inv.time
    run = pq.read_table(out / RUN_FILE)
    assert run.schema.equals(RUN_SCHEMA)
    (row,) = run.to_pylist()
    results = json.loads((run_dir / "results.json").read_text())
    assert row["valid"] == {True: "true", False: "false"}.get(results["valid"], "unknown")
    assert json.loads(row["results_json"]) == results
    client = [op for op in history if op.is_client]
    assert row["client_invokes"] == sum(op.type == "invoke" for op in client)
    assert row["ok"] == sum(op.type == "ok" for op in client)
    assert row["ops"] == len(history)


def test_synthetic_runs_follow_jepsens_rules_and_round_trip(tmp_path: Path) -> None:
    run = SyntheticRun(pairs=800, stale_reads=2, bugs=["zombie-leader"], seed=11)
    run_dir = write_run(tmp_path, run)
    history = read_history(run_dir / "history.jsonl")
    validate(history)
    assert {op.process for op in history} >= {"nemesis", "observer"}
    assert any(op.type == "info" for op in history if op.is_client)
    assert read_ops(export_run(run_dir)) == history
    (row,) = pq.read_table(run_dir / "parquet" / RUN_FILE).to_pylist()
    # the stale reads are reported by two checkers: counted once per kind each
    assert dict(row["anomalies"]) == {"stale-read": 2, "nonlinearizable": 2}
    assert row["valid"] == "false"


def test_anomalies_reported_by_two_checkers_count_once() -> None:
    a = {"kind": "stale-read", "ops": [3, 9]}
    results = {"checkers": {"x": {"anomalies": [a, {"kind": "stale-read", "ops": [4, 10]}]},
                            "y": {"anomalies": [a, {"kind": "lost-write"}]}}}
    assert anomaly_counts(results) == {"stale-read": 2, "lost-write": 1}


def test_a_run_without_results_is_exported_as_unchecked(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, SyntheticRun(pairs=50))
    (run_dir / "results.json").unlink()
    (row,) = pq.read_table(export_run(run_dir) / RUN_FILE).to_pylist()
    assert row["valid"] == "missing" and row["results_json"] is None


def test_bad_run_directories_are_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such run directory"):
        export_run(tmp_path / "nope")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "test.json").write_text("{}")
    with pytest.raises(BadInput, match=r"half: not a run directory \(no history.jsonl\)"):
        export_run(tmp_path / "half")
    (tmp_path / "half" / "history.jsonl").write_text("")
    with pytest.raises(BadInput, match="no 'workload' field"):
        export_run(tmp_path / "half")
    (tmp_path / "half" / "test.json").write_text("{not json")
    with pytest.raises(BadInput, match=r"test.json: not valid JSON"):
        export_run(tmp_path / "half")
    with pytest.raises(BadInput, match="no such results directory"):
        prepare(tmp_path / "nothing-here", print)
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadInput, match="empty: no runs found"):
        prepare(tmp_path / "empty", print)


def test_find_runs_skips_latest_links_and_reexports_only_what_changed(tmp_path: Path) -> None:
    a = write_run(tmp_path, SyntheticRun(test_name="t", pairs=30, seed=1))
    os.symlink(a, tmp_path / "t" / "latest")
    os.symlink(a, tmp_path / "latest")
    assert find_runs(tmp_path) == [a]
    assert needs_export(a)
    export_run(a)
    assert not needs_export(a)
    st = (a / "parquet" / OPS_FILE).stat()
    os.utime(a / "results.json", (st.st_mtime + 5, st.st_mtime + 5))
    assert needs_export(a)


def test_parquet_of_an_older_exporter_is_written_again(tmp_path: Path) -> None:
    """Runs exported before the grouping columns existed are re-exported, not read with nulls."""
    run_dir = write_run(tmp_path, SyntheticRun(test_name="old", pairs=20, fault_targets=["all"]))
    out = export_run(run_dir)
    assert not needs_export(run_dir)
    old = pq.read_table(out / RUN_FILE).drop_columns(["fault_targets", "nemesis_schedule"])
    pq.write_table(old, out / RUN_FILE)
    assert needs_export(run_dir)
    export_run(run_dir)
    (row,) = pq.read_table(out / RUN_FILE).to_pylist()
    assert (row["fault_targets"], row["nemesis_schedule"]) == ("all", "random")
