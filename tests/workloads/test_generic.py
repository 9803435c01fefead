"""The generic workloads (register, set, append, queue) through the real runner against an
in-process store: valid when the store is correct, invalid when it serves stale reads or loses
acknowledged writes."""

from __future__ import annotations

from pathlib import Path

import pytest
from jepsen_py.workloads import WORKLOADS

from jepsen_py.generator import seq, simulate, time_limit
from jepsen_py.runner import run_test
from tests.jepsen_py.fakes import make_spec
from tests.workloads.memstore import Store, StoreDB

GENERIC = ("register", "set", "append", "queue")


def run(tmp_path: Path, workload: str, store: Store, **options):
    spec = make_spec(tmp_path, name=f"{workload}-mem", workload=workload, time_limit=1.0,
                     rate=400.0, options=options)
    w = WORKLOADS[workload](spec)
    return run_test(spec, db=StoreDB(spec, store), workload=w)


@pytest.mark.parametrize("workload", GENERIC)
def test_a_correct_store_passes(tmp_path: Path, workload: str) -> None:
    out = run(tmp_path, workload, Store())
    assert out.valid is True, out.results
    assert out.oks > 100
    assert {"availability", "crash", "stats"} <= set(out.results["checkers"])


@pytest.mark.parametrize(("workload", "checker"), [
    ("register", "linearizable"), ("set", "set"), ("append", "append")])
def test_stale_reads_are_caught(tmp_path: Path, workload: str, checker: str) -> None:
    out = run(tmp_path, workload, Store(lag=0.2))
    assert out.valid is False
    r = out.results["checkers"][checker]
    assert r["valid"] is False
    assert r["anomalies"]


@pytest.mark.parametrize(("workload", "kind"), [
    ("set", "lost"), ("append", "lost"), ("queue", "lost")])
def test_lost_writes_are_caught(tmp_path: Path, workload: str, kind: str) -> None:
    out = run(tmp_path, workload, Store(lose_every=7))
    assert out.valid is False
    r = out.results["checkers"][workload]
    assert kind in {a["kind"] for a in r["anomalies"]}


def test_weak_set_reads_are_reported_but_pass_when_not_linearizable(tmp_path: Path) -> None:
    out = run(tmp_path, "set", Store(lag=0.2), linearizable=False)
    r = out.results["checkers"]["set"]
    assert r["valid"] is True and r["stale_reads"] > 0


@pytest.mark.parametrize("workload", ["set", "append"])
def test_a_failover_that_drops_seen_writes_is_lost_data_even_when_not_linearizable(
        tmp_path: Path, workload: str) -> None:
    """Elements reads had seen, then gone from every later read, final reads included: every one is
    lost (not stale), and the run fails whatever `linearizable` says."""
    store = Store(rollback_every=20)
    out = run(tmp_path, workload, store, linearizable=False)
    r = out.results["checkers"][workload]
    assert store.rolled_back and out.valid is False
    assert r["lost"] == len(store.rolled_back) and r["stale"] == 0
    assert "lost" in r["failing_kinds"]


def test_a_failover_that_breaks_many_register_keys_reports_each_one(tmp_path: Path) -> None:
    """Keys with a cas need the search; every broken key is searched and reported, not only the
    first, and the summary's count is the number of broken keys."""
    out = run(tmp_path, "register", Store(rollback_every=16), active_keys=8, ops_per_key=40)
    r = out.results["checkers"]["linearizable"]
    assert out.valid is False and len(r["invalid_keys"]) > 1, r.get("invalid_keys")
    assert r["unknown_reasons"] == {}
    assert r["anomaly_counts"] == {"nonlinearizable": len(r["invalid_keys"])}
    assert out.anomalies >= len(r["invalid_keys"])


def test_yes_no_options_refuse_what_is_neither(tmp_path: Path) -> None:
    from jepsen_py.errors import BadInput

    for text, strict in (("False", False), ("true", True), (False, False)):
        spec = make_spec(tmp_path, workload="set", options={"linearizable": text})
        assert WORKLOADS["set"](spec).checkers[0].linearizable is strict
    spec = make_spec(tmp_path, workload="queue", options={"exactly_once": "sometimes"})
    with pytest.raises(BadInput, match="exactly_once: expected true or false"):
        WORKLOADS["queue"](spec)


def test_register_values_are_unique_and_cas_names_the_last_value() -> None:
    spec = make_spec(Path("/tmp"), options={"ops_per_key": 40})
    w = WORKLOADS["register"](spec)
    ops = [o.template for o in simulate(seq(time_limit(3, w.generator), w.final_generator),
                                        concurrency=6, latency=0.005, nodes=("n1", "n2", "n3"), seed=3)]
    written: dict[str, list[int]] = {}
    for o in ops:
        if o.f == "write":
            written.setdefault(o.key, []).append(o.value)
        elif o.f == "cas":
            written.setdefault(o.key, []).append(o.value[1])
            assert o.value[0] in written[o.key][:-1]
    assert written and all(len(v) == len(set(v)) for v in written.values())
    assert {o.f for o in ops} == {"read", "write", "cas"}
    finals = [o for o in ops if o.node is not None]
    keys = {o.key for o in ops}
    assert {(o.key, o.node) for o in finals} == {(k, n) for k in keys for n in ("n1", "n2", "n3")}
