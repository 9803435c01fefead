"""The workloads' linearizability checker never calls a history valid when it judged no op of it."""

from __future__ import annotations

from jepsen_py.checkers.linearizable import LinearizableChecker

from tests.checkers.histories import H


def test_a_history_whose_every_op_failed_is_unknown_not_linearizable() -> None:
    h = H()
    h.op(0, "write", "k", 1, 0, 1, kind="fail", error="unavailable")
    h.op(1, "read", "k", None, 2, 3, kind="fail", error="unavailable")
    r = LinearizableChecker("register").check(None, h.build())
    assert r["valid"] == "unknown" and r["ops"] == 0 and r["keys_checked"] == 1
    assert r["reason"].startswith("no register operation left to check")


def test_a_history_with_none_of_the_models_ops_is_unknown() -> None:
    h = H()
    h.op(0, "commit", "k", 1, 0, 1)
    h.sample(2, "n1", "leader", 1)
    r = LinearizableChecker("register").check(None, h.build())
    assert r["valid"] == "unknown" and r["keys_checked"] == 0
    assert r["reason"] == "no register operation in the history: nothing was checked"


def test_one_op_checked_is_a_verdict() -> None:
    h = H()
    h.op(0, "write", "k", 1, 0, 1, kind="fail", error="unavailable")
    h.op(1, "write", "k", 2, 2, 3)
    r = LinearizableChecker("register").check(None, h.build())
    assert r["valid"] is True and r["ops"] == 1 and "reason" not in r
