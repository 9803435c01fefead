"""`jepsen-py check FILE --model list-append|rw-register`: a Jepsen EDN history with :txn values and
our JSONL history, verdict exit codes, bad input as one line (254)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jepsen_py.checkers.elle import WORKLOADS

from jepsen_py.cli import main
from jepsen_py.commands.check import TXN_MODELS

# Read skew, as Jepsen writes it: T0 sees y's append but not x's, from the same transaction.
G_SINGLE_EDN = """\
[{:type :invoke, :f :txn, :value [[:r :x nil] [:r :y nil]], :process 0, :time 10, :index 0}
 {:type :invoke, :f :txn, :value [[:append :x 1] [:append :y 1]], :process 1, :time 11, :index 1}
 {:type :ok, :f :txn, :value [[:r :x []] [:r :y [1]]], :process 0, :time 20, :index 2}
 {:type :ok, :f :txn, :value [[:append :x 1] [:append :y 1]], :process 1, :time 21, :index 3}
 {:type :invoke, :f :txn, :value [[:r :x nil]], :process 2, :time 30, :index 4}
 {:type :ok, :f :txn, :value [[:r :x [1]]], :process 2, :time 31, :index 5}
 {:type :info, :f :start-partition, :value nil, :process :nemesis, :time 32, :index 6}]
"""


def test_the_cli_knows_the_checkers_workloads() -> None:
    assert set(TXN_MODELS) == set(WORKLOADS)


def test_edn_history_with_txn_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    h = tmp_path / "history.edn"
    h.write_text(G_SINGLE_EDN)
    assert main(["check", str(h), "--model", "list-append", "--consistency-models", "serializable"]) == 1
    out = capsys.readouterr().out
    assert "INVALID under serializable" in out and "G-single-item x1: T0 read :x=[]" in out
    assert "rules out: consistent-view, repeatable-read" in out
    # read committed allows read skew: valid, the anomaly still reported
    assert main(["check", str(h), "--model", "list-append", "--consistency-models", "read-committed",
                 "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["valid"] is True and r["anomaly_types"] == ["G-single-item"] and r["format"] == "edn"


def test_jsonl_rw_register_history(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        {"index": 0, "time": 0, "type": "invoke", "process": 0, "f": "txn", "value": [["w", "x", 1]]},
        {"index": 1, "time": 1, "type": "ok", "process": 0, "f": "txn", "value": [["w", "x", 1]]},
        {"index": 2, "time": 2, "type": "invoke", "process": 1, "f": "txn", "value": [["r", "x", None]]},
        {"index": 3, "time": 3, "type": "ok", "process": 1, "f": "txn", "value": [["r", "x", 1]]},
    ]
    h = tmp_path / "history.jsonl"
    h.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["check", str(h), "--model", "rw-register"]) == 0
    assert "valid under strict-serializable" in capsys.readouterr().out
    # a budget of a hair's breadth: unknown (2), never valid
    assert main(["check", str(h), "--model", "rw-register", "--time-limit", "1e-12"]) == 2


@pytest.mark.parametrize("argv, message", [
    (["--consistency-models", "serialisable"],
     "--consistency-models: unknown consistency model(s) serialisable; known: "),
    (["--init", "0"], "--init does not apply"),
    (["--process-keys"], "--sequential-keys applies to rw-register only"),
    (["--wfr-keys"], "--wfr-keys applies to rw-register only"),
    (["--consistency-models", "none"], "--consistency-models none needs --anomalies"),
    (["--anomalies", "G3"], "--anomalies: unknown anomaly(s) G3"),
    (["--consistency-models", "serializable,", "--anomalies", "G2"], "--consistency-models: an empty name"),
    (["--consistency-models", "none,serializable", "--anomalies", "G2"], "'none' names no model"),
])
def test_bad_arguments_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                    message: str) -> None:
    h = tmp_path / "history.edn"
    h.write_text(G_SINGLE_EDN)
    assert main(["check", str(h), "--model", "list-append", *argv]) == 254
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_malformed_micro_op_names_its_op(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    h = tmp_path / "history.edn"
    h.write_text(G_SINGLE_EDN.replace("[[:r :x []] [:r :y [1]]]", "[[:r :x []] [:r]]"))
    assert main(["check", str(h), "--model", "list-append"]) == 254
    assert "op 2: micro-op" in capsys.readouterr().err


def test_a_history_without_transactions_is_bad_input(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Zero transactions checked is never valid: a register history given as list-append names the
    ops it does hold, 254."""
    rows = [
        {"index": 0, "time": 0, "type": "invoke", "process": 0, "f": "write", "value": 1},
        {"index": 1, "time": 1, "type": "ok", "process": 0, "f": "write", "value": 1},
    ]
    h = tmp_path / "history.jsonl"
    h.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["check", str(h), "--model", "list-append"]) == 254
    err = capsys.readouterr().err
    assert "no list-append operation to check: its client ops are 1 write" in err
    assert len(err.strip().splitlines()) == 1


def test_anomalies_alone_and_beside_models(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--anomalies is Elle's :anomalies: alone it assumes no model; G1 does not cover read skew, G2
    does (G-single-item implies G2); beside read committed it adds what it names."""
    h = tmp_path / "history.edn"
    h.write_text(G_SINGLE_EDN)
    assert main(["check", str(h), "--model", "list-append", "--anomalies", "G1"]) == 0
    assert "valid under no G1" in capsys.readouterr().out
    assert main(["check", str(h), "--model", "list-append", "--anomalies", "G2", "--json"]) == 1
    r = json.loads(capsys.readouterr().out)
    assert r["consistency_models"] == [] and r["anomalies_asked"] == ["G2"]
    assert r["prohibited_anomaly_types"] == ["G-single-item"]
    assert main(["check", str(h), "--model", "list-append", "--consistency-models", "read-committed",
                 "--anomalies", "G-single"]) == 1
    assert "INVALID under read-committed, no G-single" in capsys.readouterr().out


def _rows(txns: list[tuple[int, list[list[object]], list[list[object]]]]) -> str:
    rows, i = [], 0
    for p, invoked, completed in txns:
        for j, (typ, value) in enumerate((("invoke", invoked), ("ok", completed))):
            rows.append({"index": i + j, "time": i + j, "type": typ, "process": p, "f": "txn",
                         "value": value})
        i += 2
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_rw_register_assumptions_are_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Elle's rw-register options: writes-follow-reads adds the ww edges it assumes (here a G0,
    which read uncommitted prohibits; without it the two transactions make only a G1c, which read
    uncommitted allows); a commit order file is read and used (Elle's wfr and transaction-order
    tests)."""
    h = tmp_path / "history.jsonl"
    h.write_text(_rows([(0, [["w", "x", 1], ["r", "y", None], ["w", "y", 3]],
                         [["w", "x", 1], ["r", "y", 2], ["w", "y", 3]]),
                        (1, [["r", "x", None], ["w", "x", 2], ["w", "y", 2]],
                         [["r", "x", 1], ["w", "x", 2], ["w", "y", 2]])]))
    assert main(["check", str(h), "--model", "rw-register", "--consistency-models", "read-uncommitted"]) == 0
    capsys.readouterr()
    assert main(["check", str(h), "--model", "rw-register", "--consistency-models", "read-uncommitted",
                 "--wfr-keys"]) == 1
    assert "G0 x1" in capsys.readouterr().out
    # the database's commit order: T2 (ops 2-3) before T1 (ops 0-1)
    g = tmp_path / "order.jsonl"
    g.write_text(_rows([(0, [["r", "x", None], ["w", "y", 2]], [["r", "x", None], ["w", "y", 2]]),
                        (1, [["w", "x", 3], ["w", "y", 4]], [["w", "x", 3], ["w", "y", 4]])]))
    order = tmp_path / "order.json"
    order.write_text(json.dumps({"1": 2, "3": 1}))
    assert main(["check", str(g), "--model", "rw-register", "--consistency-models", "serializable"]) == 0
    capsys.readouterr()
    assert main(["check", str(g), "--model", "rw-register", "--consistency-models", "serializable",
                 "--transaction-order", str(order)]) == 1
    assert "G-single-item x1" in capsys.readouterr().out
    order.write_text('{"1": "first"}')
    assert main(["check", str(g), "--model", "rw-register", "--transaction-order", str(order)]) == 254
    assert "not a finite number" in capsys.readouterr().err
