"""Transactional histories follow the one input rule: nothing is dropped in silence. A transaction
whose process is not an integer is checked like any other; client ops that are not transactions,
and transactions of the nemesis, are named as left out; keys and values compare by type as well as
value (true is not 1, 1.0 is not 1, the EDN keyword :x is not the string "x")."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jepsen_py.checkers.elle import check

from jepsen_py.cli import main
from jepsen_py.history import Op
from tests.checkers.elle.build import Hist, inject, pattern, serial_history, write_jsonl


def _renamed(ops: list[Op], name: Any) -> list[Op]:
    return [Op(o.index, o.time, o.type, name(o.process), o.f, o.key, o.value) for o in ops]


@pytest.mark.parametrize("name", [lambda p: f"p{p}", lambda p: str(p)], ids=["p0", "'0'"])
def test_a_transaction_whose_process_is_not_an_integer_is_checked(
    tmp_path: Path, name: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    for kind, models in (
        ("G-single-item", ["serializable"]),
        ("G1a", ["read-committed"]),
        ("G-single-item-realtime", ["strict-serializable"]),
    ):
        ops = _renamed(pattern(kind, "list-append").ops, name)
        r = check(ops, "list-append", models)
        assert r["valid"] is False and kind in r["anomaly_types"], (kind, r["anomaly_types"])
        h = write_jsonl(tmp_path / "h.jsonl", ops)
        assert (
            main(["check", str(h), "--model", "list-append", "--consistency-models", ",".join(models)]) == 1
        )
        capsys.readouterr()


def test_an_edn_keyword_process_is_checked(tmp_path: Path) -> None:
    h = tmp_path / "h.edn"
    h.write_text("""\
{:type :invoke, :f :txn, :value [[:r :x nil] [:r :y nil]], :process :w0, :index 0}
{:type :invoke, :f :txn, :value [[:append :x 1] [:append :y 1]], :process :w1, :index 1}
{:type :ok, :f :txn, :value [[:r :x []] [:r :y [1]]], :process :w0, :index 2}
{:type :ok, :f :txn, :value [[:append :x 1] [:append :y 1]], :process :w1, :index 3}
{:type :invoke, :f :txn, :value [[:r :x nil]], :process :w2, :index 4}
{:type :ok, :f :txn, :value [[:r :x [1]]], :process :w2, :index 5}
""")
    assert main(["check", str(h), "--model", "list-append", "--consistency-models", "serializable"]) == 1


def test_ops_that_are_not_transactions_are_named_as_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    h = Hist()
    h.txn(0, [["append", "x", 1]])
    h.txn(1, [["r", "x", [1]]])
    ops = list(h.ops)
    n = len(ops)
    ops += [
        Op(n, n, "invoke", 2, "transaction", None, [["r", "x", None]]),
        Op(n + 1, n + 1, "ok", 2, "transaction", None, [["r", "x", [9]]]),
        Op(n + 2, n + 2, "invoke", 3, "read", None, [["r", "x", None]]),
        Op(n + 3, n + 3, "ok", 3, "read", None, [["r", "x", [7]]]),
        Op(n + 4, n + 4, "info", "nemesis", "txn", None, [["r", "x", [5]]]),
    ]
    r = check(ops, "list-append", ["serializable"])
    assert r["ignored"] == {"transaction": 1, "read": 1, "txn ops of process nemesis": 1}
    assert main(["check", str(write_jsonl(tmp_path / "h.jsonl", ops)), "--model", "list-append"]) == 0
    out = capsys.readouterr().out
    assert (
        "left out (not transactions of clients): 1 read, 1 transaction, 1 txn ops of process nemesis" in out
    )


@pytest.mark.parametrize("other", [True, 1.0], ids=["true", "1.0"])
@pytest.mark.parametrize("workload", ["list-append", "rw-register"])
def test_values_compare_by_type(workload: str, other: Any) -> None:
    """Reading [true] (or 1.0) after appending 1 is a read of a value nobody wrote."""
    h = Hist()
    if workload == "list-append":
        h.txn(0, [["append", "x", 1]])
        h.txn(1, [["r", "x", [other]]])
        h.txn(2, [["r", "x", [1]]])
    else:
        h.txn(0, [["w", "x", 1]])
        h.txn(1, [["r", "x", other]])
    r = check(h.ops, workload, ["read-committed"])
    # (a list read of [true] beside one of [1] is an incompatible order too)
    assert r["valid"] is False and "garbage-read" in r["prohibited_anomaly_types"], r["anomaly_types"]
    (a,) = [a for a in r["anomalies"] if a["kind"] == "garbage-read"]
    seen = a.get("element", a.get("value"))
    assert seen == other and type(seen) is type(other)
    assert json.dumps(r)  # the typed value is written back as it was


def test_an_edn_keyword_is_not_the_string_of_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A write to :x and a read of "x" are of two keys: the read saw a value nobody wrote there."""
    h = tmp_path / "h.edn"
    h.write_text("""\
{:type :invoke, :f :txn, :value [[:w :x 1]], :process 0, :index 0}
{:type :ok, :f :txn, :value [[:w :x 1]], :process 0, :index 1}
{:type :invoke, :f :txn, :value [[:r "x" nil]], :process 1, :index 2}
{:type :ok, :f :txn, :value [[:r "x" 1]], :process 1, :index 3}
""")
    assert main(["check", str(h), "--model", "rw-register", "--consistency-models", "read-committed"]) == 1
    assert "garbage-read" in capsys.readouterr().out


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    n=st.integers(0, 60),
    workload=st.sampled_from(["list-append", "rw-register"]),
    data=st.data(),
)
def test_renaming_processes_changes_no_verdict(seed: int, n: int, workload: str, data: st.DataObject) -> None:
    """Processes are names: ints, strings or keywords, the verdict and anomalies are the same."""
    from tests.checkers.elle.build import LIST_KINDS
    from tests.checkers.elle.test_patterns import RW_KINDS, _model

    kind = data.draw(st.sampled_from(LIST_KINDS if workload == "list-append" else RW_KINDS))
    rng = random.Random(seed)
    ops = inject(serial_history(rng, n, 4, workload), pattern(kind, workload).ops, rng)
    style = data.draw(st.sampled_from([lambda p: f"p{p}", lambda p: str(p), lambda p: f"worker-{p}"]))
    a = check(ops, workload, _model(kind))
    b = check(_renamed(ops, style), workload, _model(kind))
    for k in ("valid", "anomaly_types", "anomaly_counts", "not", "edges"):
        assert a[k] == b[k], k


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    n=st.integers(1, 60),
    workload=st.sampled_from(["list-append", "rw-register"]),
    swap=st.sampled_from([True, 1.0, "1"]),
    data=st.data(),
)
def test_a_value_read_as_another_type_is_never_taken_for_it(
    seed: int, n: int, workload: str, swap: Any, data: st.DataObject
) -> None:
    """A read that returned 1 returned true (or 1.0, or "1") instead: that is a value no one
    wrote, so the history is invalid under read committed, whatever it was before."""
    ops = serial_history(random.Random(seed), n, 3, workload, p_fail=0, p_info=0)
    reads = [
        (i, j)
        for i, o in enumerate(ops)
        if o.type == "ok"
        for j, m in enumerate(o.value)
        if m[0] == "r" and m[2]
    ]
    if not reads:
        return
    i, j = data.draw(st.sampled_from(reads))
    o = ops[i]
    value = [list(m) for m in o.value]
    read = value[j][2]
    if workload == "list-append":
        value[j][2] = [swap if x == 1 and type(x) is int else x for x in read]
        if value[j][2] == read and all(type(x) is type(y) for x, y in zip(value[j][2], read, strict=True)):
            value[j][2] = [*read[:-1], type(swap)(read[-1]) if not isinstance(swap, bool) else True]
    else:
        value[j][2] = type(swap)(read) if not isinstance(swap, bool) else True
    ops[i] = Op(o.index, o.time, o.type, o.process, o.f, o.key, value)
    r = check(ops, workload, ["read-committed"])
    assert r["valid"] is False and "garbage-read" in r["anomaly_types"], (value[j], r["anomaly_types"])
