"""Exact checking (checkers/elle/exact.py) against a brute-force oracle (oracle.py) on small
histories from real executions (executions.py), damaged as faulty databases damage them: the exact
checker agrees with the oracle on every one, and the Elle-style checker never calls a valid history
invalid. Hypothesis runs derandomized (a fixed seed) and shrinks any disagreement to its smallest."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jepsen_py.checkers.elle import check
from jepsen_py.checkers.elle.budget import Deadline
from jepsen_py.checkers.elle.exact import MODELS, decide
from jepsen_py.checkers.elle.txn import APPEND, WRITE, transactions

from jepsen_py.cli import main
from jepsen_py.errors import BadInput
from jepsen_py.history import Op
from tests.checkers.elle import oracle
from tests.checkers.elle.build import Hist, pattern, write_jsonl
from tests.checkers.elle.executions import ENGINES, MUTATIONS, execute, mutate

WRITE_F = {"list-append": APPEND, "rw-register": WRITE}


def _history(seed: int, n: int, keys: int, workload: str, engine: str, damage: list[str]) -> list[Op]:
    rng = random.Random(seed)
    ops = execute(rng, n, keys, workload, engine)
    for how in damage:
        ops = mutate(rng, ops, workload, how)
    return ops


@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32),
    n=st.integers(1, 6),
    keys=st.integers(1, 3),
    workload=st.sampled_from(["list-append", "rw-register"]),
    engine=st.sampled_from(ENGINES),
    damage=st.lists(st.sampled_from(MUTATIONS), max_size=2),
)
def test_exact_agrees_with_the_oracle_and_elle_is_never_unsound(
    seed: int, n: int, keys: int, workload: str, engine: str, damage: list[str]
) -> None:
    ops = _history(seed, n, keys, workload, engine, damage)
    try:
        txns = transactions(ops, WRITE_F[workload])
        check(ops, workload, ["serializable"])
    except BadInput:  # a mutation wrote one value twice: no history of a workload's kind
        assume(False)
    for model in MODELS:
        want = oracle.decide(txns, workload, model)
        got = decide(txns, workload, model, Deadline(60))
        assert got.valid is want, (model, got.reason, got.cycle)
        if got.valid is False:
            assert got.reason or got.cycle, model  # an invalid answer shows why
        elle = check(ops, workload, [model])
        if elle["valid"] is False:  # the Elle-style checker is never unsound
            assert want is False, (model, elle["prohibited_anomaly_types"])
        exact = check(ops, workload, [model], exact=True)
        assert exact["verdict"] == "exact" and exact["valid"] is want, (model, exact["valid"])


def test_engines_give_what_they_promise() -> None:
    """The toy database is what it says: serial runs are strict serializable, snapshot isolation
    runs are snapshot isolation and, for some, not serializable (write skew)."""
    seen_si_only = False
    for seed in range(300):
        for workload in ("list-append", "rw-register"):
            for engine, holds in (("serial", MODELS), ("si", ("snapshot-isolation",))):
                txns = transactions(execute(random.Random(seed), 5, 2, workload, engine), WRITE_F[workload])
                for model in holds:
                    assert oracle.decide(txns, workload, model), (seed, workload, engine, model)
                if engine == "si" and not oracle.decide(txns, workload, "serializable"):
                    seen_si_only = True
    assert seen_si_only


def test_own_appends_out_of_order_are_caught() -> None:
    """A read showing a transaction's own appends in the reverse of the order it made them ([2 1 3]
    after appending 1 then 2): no dependency links them, so only a rule of its own catches it."""
    h = Hist()
    h.txn(0, [["append", "x", 1], ["append", "x", 2]])
    h.txn(1, [["append", "x", 3]])
    h.txn(2, [["r", "x", [2, 1, 3]]])
    r = check(h.ops, "list-append", ["read-uncommitted"])
    assert r["valid"] is False and r["prohibited_anomaly_types"] == ["reordered-appends"]
    d = decide(transactions(h.ops, APPEND), "list-append", "serializable", Deadline(60))
    assert d.valid is False and d.reason and d.reason.startswith("reordered-appends")


def test_a_violation_only_the_exact_check_finds() -> None:
    """Write skew on registers whose versions no read orders: the Elle-style search has no ww
    edge and finds nothing, while every order of the two writes of each key makes a cycle."""
    h = Hist()
    h.concurrent((0, [["w", "x", 1], ["w", "y", 1]]), (1, [["w", "x", 2], ["w", "y", 2]]))
    h.concurrent((2, [["r", "x", 1], ["r", "y", 2]]))
    r = check(h.ops, "rw-register", ["serializable"])
    assert r["valid"] is True
    r = check(h.ops, "rw-register", ["serializable"], exact=True)
    assert r["valid"] is False and r["verdict"] == "exact"
    (a,) = [a for a in r["anomalies"] if a["kind"] == "PL-3-cycle-exists"]
    assert "every version order" in a["explanation"] and a["steps"]
    assert r["exact"]["serializable"]["valid"] is False
    assert oracle.decide(transactions(h.ops, WRITE), "rw-register", "serializable") is False


@pytest.mark.parametrize(
    "kind, workload, holds",
    [
        ("G2-item", "list-append", {"snapshot-isolation"}),
        ("G2-item", "rw-register", {"snapshot-isolation"}),
        ("G-single-item-realtime", "list-append", {"serializable", "snapshot-isolation"}),
        ("G-single-item", "rw-register", set()),
        ("lost-update", "list-append", set()),
    ],
)
def test_each_pattern_decided(kind: str, workload: str, holds: set[str]) -> None:
    ops = pattern(kind, workload).ops
    for model in MODELS:
        r = check(ops, workload, [model], exact=True)
        assert r["exact"][model]["valid"] is (model in holds), (kind, model)
        assert r["valid"] is (model in holds)


def test_a_model_not_decided_exactly_keeps_its_elle_style_verdict() -> None:
    ops = pattern("G2-item", "list-append").ops
    r = check(ops, "list-append", ["snapshot-isolation", "repeatable-read"], exact=True)
    assert r["verdict"] == "elle-style and exact" and r["valid"] is False  # repeatable read: G2-item
    assert r["exact"]["snapshot-isolation"]["valid"] is True


def test_cli_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    h = Hist()
    h.concurrent((0, [["w", "x", 1], ["w", "y", 1]]), (1, [["w", "x", 2], ["w", "y", 2]]))
    h.concurrent((2, [["r", "x", 1], ["r", "y", 2]]))
    f = write_jsonl(tmp_path / "h.jsonl", h.ops)
    assert main(["check", str(f), "--model", "rw-register", "--consistency-models", "serializable"]) == 0
    assert "(evidence: Elle-style)" in capsys.readouterr().out
    assert (
        main(["check", str(f), "--model", "rw-register", "--consistency-models", "serializable", "--exact"])
        == 1
    )
    out = capsys.readouterr().out
    assert "(decided exactly)" in out and "PL-3-cycle-exists" in out


@pytest.mark.slow
@pytest.mark.parametrize("bug, code", [(None, 0), ("txn-split-apply", 1)])
def test_our_cluster_decided_exactly(tmp_path: Path, bug: str | None, code: int) -> None:
    """The seed bug of transactions applied in pieces is invalid, decided exactly; the correct
    build is valid, decided exactly, in a simulated run."""
    import subprocess
    import sys

    argv = [sys.executable, "-m", "jepsen_py", "run", "--backend", "sim", "--workload", "list-append",
            "--nemesis", "partition-leader", "--seed", "7", "--time-limit", "10", "--no-progress",
            "--workload-option", "exact=true", "--results-dir", str(tmp_path)]
    res = subprocess.run([*argv, *(["--bug", bug] if bug else [])], capture_output=True, text=True,
                         timeout=600, check=False)
    assert res.returncode == code, res.stdout + res.stderr
    elle = json.loads((tmp_path / "latest" / "results.json").read_text())["checkers"]["elle"]
    assert elle["verdict"] == "exact" and elle["exact"]["strict-serializable"]["valid"] is (code == 0)
    assert "(decided exactly)" in " ".join(res.stdout.split())
