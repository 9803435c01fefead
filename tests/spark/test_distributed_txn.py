"""The Elle-style check with per-key inference on real PySpark local[2] gives the local engine's
verdicts: the same anomalies, counts, edges, cycles and ruled-out models on generated histories
with and without anomalies."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from jepsen_py.checkers.elle import check
from jepsen_py.checkers.elle.inference import Inference
from jepsen_py.spark.distributed_txn import check_txn_distributed

from jepsen_py.cli import main
from jepsen_py.errors import BadInput
from jepsen_py.history import HistoryWriter, Op
from tests.checkers.elle.build import Hist, inject, pattern, serial_history

SAME = ("valid", "workload", "consistency_models", "anomaly_types", "prohibited_anomaly_types",
        "anomaly_counts", "not", "also_not", "txns", "edges", "cyclic_components")


def history(seed: int, n: int, keys: int, workload: str, kinds: tuple[str, ...]) -> list[Op]:
    rng = random.Random(seed)
    ops = serial_history(rng, n, keys, workload)
    for j, kind in enumerate(kinds):
        ops = inject(ops, pattern(kind, workload, tag=f"t{j}", p0=1000 + 100 * j).ops, rng)
    return ops


def cycles(r: dict[str, Any]) -> list[Any]:
    return [(a["kind"], a["ops"], [(s["from"], s["to"], s["type"]) for s in a["steps"]])
            for a in r["anomalies"] + r["other_anomalies"] if "steps" in a]


def assert_same(dist: dict[str, Any], loc: dict[str, Any]) -> None:
    for k in SAME:
        assert dist[k] == loc[k], (k, dist[k], loc[k])
    assert cycles(dist) == cycles(loc)
    assert sorted(a["kind"] for a in dist["anomalies"]) == sorted(a["kind"] for a in loc["anomalies"])
    assert dist["engine"] == "spark" and dist["keys"] > 0


CASES = [
    # seed, transactions, keys, workload, injected anomalies, models, process keys
    (1, 300, 6, "list-append", (), ("strict-serializable",), False),
    (2, 300, 6, "rw-register", (), ("strict-serializable",), True),
    (3, 250, 5, "list-append", ("G-single-item", "G1a"), ("serializable",), False),
    (4, 250, 5, "list-append", ("G2-item", "G0-realtime", "lost-update"), ("strict-serializable",), False),
    (5, 250, 5, "list-append", ("G-nonadjacent-item", "incompatible-order", "internal"),
     ("snapshot-isolation", "read-committed"), False),
    (6, 250, 5, "rw-register", ("G-single-item", "G1b"), ("serializable",), False),
    (7, 250, 5, "rw-register", ("G1c-process", "garbage-read"), ("strong-session-serializable",), True),
    (8, 200, 4, "list-append", ("G-single-item",), ("read-committed",), False),  # found, but allowed: valid
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[3]}-{'+'.join(c[4]) or 'none'}" for c in CASES])
def test_the_verdict_is_the_local_engines(spark_session: Any, case: tuple[Any, ...]) -> None:
    seed, n, keys, workload, kinds, models, process_keys = case
    ops = history(seed, n, keys, workload, kinds)
    assume = Inference(sequential_keys=process_keys)
    loc = check(ops, workload, list(models), inference=assume)
    dist = check_txn_distributed(ops, workload, list(models), inference=assume, spark=spark_session,
                                 partitions=3)
    assert_same(dist, loc)
    for kind in kinds:
        assert kind in dist["anomaly_types"]
    assert dist["valid"] is (not set(kinds) & set(loc["prohibited_anomaly_types"]) if kinds else True)


def test_no_transaction_is_not_sent_to_spark(spark_session: Any) -> None:
    ops = [Op(0, 0, "invoke", 0, "write", "x", 1), Op(1, 1, "ok", 0, "write", "x", 1)]
    r = check_txn_distributed(ops, "list-append", ["serializable"], spark=spark_session)
    assert r["valid"] == check(ops, "list-append", ["serializable"])["valid"] == "unknown"
    assert r["keys"] == 0 and r["partitions"] == 0


def test_bad_input_found_on_an_executor_is_one_line(spark_session: Any) -> None:
    h = Hist()
    h.txn(0, [["append", "x", 1]])
    h.txn(1, [["append", "y", 1], ["append", "x", 1]])
    with pytest.raises(BadInput, match="appended to 'x' here and in op 0"):
        check_txn_distributed(h.ops, "list-append", ["serializable"], spark=spark_session)
    with pytest.raises(BadInput, match="unknown consistency model"):
        check_txn_distributed(h.ops, "list-append", ["no-such-model"], spark=spark_session)


def test_a_budget_spent_is_unknown_never_valid(spark_session: Any) -> None:
    ops = history(9, 200, 4, "list-append", ())
    r = check_txn_distributed(ops, "list-append", ["serializable"], time_s=1e-9, spark=spark_session)
    assert r["valid"] == "unknown" and "time limit" in r["unknown_reason"]


def test_cli_check_engine_spark(spark_session: Any, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as w:
        for o in history(10, 200, 4, "list-append", ("G-single-item",)):
            w.append(o)
    argv = ["check", str(path), "--model", "list-append", "--consistency-models", "serializable", "--json"]
    assert main(argv) == 1
    loc = json.loads(capsys.readouterr().out)
    assert main([*argv, "--engine", "spark", "--master", "local[2]"]) == 1
    dist = json.loads(capsys.readouterr().out)
    assert_same(dist, loc)
    assert dist["file"] == str(path)
    # the summary line names the anomaly as the local engine's does
    assert main([*argv[:-1], "--engine", "spark"]) == 1
    assert "G-single-item x1" in capsys.readouterr().out
