"""Every key is checked and every invalid one reported (Jepsen's independent checker): keys with a
cas, which the fast path cannot decide, are searched even after another key failed."""

from __future__ import annotations

from typing import Any

import pytest
from jepsen_py.checkers.linearizable import check, get_model
from jepsen_py.workloads.common import Linearizable

from jepsen_py.history import Op
from tests.checkers.linearizable.histgen import generate


def register_key(ops: list[Op], key: Any, process: int, lost_cas: bool) -> None:
    """write 1, cas 1->2, then a read: of 2, or of 1 when the cas was lost (a failover)."""
    for f, value, result in (("write", 1, 1), ("cas", [1, 2], [1, 2]), ("read", None, 1 if lost_cas else 2)):
        ops.append(Op(len(ops), len(ops), "invoke", process, f, key, value))
        ops.append(Op(len(ops), len(ops), "ok", process, f, key, result))


def test_every_key_with_a_lost_cas_is_reported() -> None:
    ops: list[Op] = []
    bad = {f"r{k}" for k in range(0, 30, 3)}
    for k in range(30):
        register_key(ops, f"r{k}", k, f"r{k}" in bad)
    r = check(ops, get_model("cas-register"), workers=1)
    assert r["valid"] is False
    assert sorted(r["invalid_keys"]) == sorted(bad) and r["unknown_reasons"] == {}
    assert r["anomaly_counts"] == {"nonlinearizable": len(bad)} and len(r["anomalies"]) == len(bad)
    assert r["failing_kinds"] == ["nonlinearizable"]
    early = check(ops, get_model("cas-register"), workers=1, stop_at_first_failure=True)
    assert len(early["invalid_keys"]) == 1 and len(early["unknown_reasons"]) == len(bad) + 19


def test_the_workload_checker_reports_every_bad_key_in_parallel_too() -> None:
    ops: list[Op] = []
    for k in range(45):  # enough ops (over PARALLEL_MIN_OPS) for worker processes
        for o in generate("cas-register", k, n_ops=60, processes=3, key=f"g{k}", unique_writes=True):
            o.process += 100 * k
            ops.append(o)
    for i, o in enumerate(ops):
        o.index = i
    bad = {f"r{k}" for k in range(5)}
    for k in range(5):
        register_key(ops, f"r{k}", 10_000 + k, lost_cas=True)
    assert len(ops) > 4000
    r = Linearizable("cas-register", frozenset({"read", "write", "cas"})).check(None, ops)
    assert r["valid"] is False and set(r["invalid_keys"]) == bad and r["unknown_reasons"] == {}


@pytest.mark.parametrize("n_bad", [0, 1, 120])
def test_anomaly_counts_count_keys_past_the_listed_hundred(n_bad: int) -> None:
    ops: list[Op] = []
    for k in range(n_bad + 2):
        register_key(ops, k, k, lost_cas=k < n_bad)
    r = check(ops, get_model("cas-register"), workers=1)
    assert r["anomaly_counts"] == ({"nonlinearizable": n_bad} if n_bad else {})
    assert len(r["anomalies"]) == min(n_bad, 100)
