"""The transactional workloads (list-append, rw-register): Elle's generator and its knobs, and a
run through the real runner against an in-memory store, correct and with stale reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from jepsen_py.workloads import WORKLOADS, workload_options
from jepsen_py.workloads.txn import FINAL_KEYS_PER_TXN

from jepsen_py.errors import BadInput
from jepsen_py.generator import seq, simulate, time_limit
from jepsen_py.runner import run_test
from tests.jepsen_py.fakes import make_spec
from tests.workloads.memstore import Store, StoreDB

TXN = ("list-append", "rw-register")
NODES = ("n1", "n2", "n3")


def ops(workload: str, seconds: float = 3, **options):
    w = WORKLOADS[workload](make_spec(Path("/tmp"), workload=workload, options=options))
    sim = simulate(seq(time_limit(seconds, w.generator), w.final_generator), concurrency=6,
                   latency=0.005, nodes=NODES, seed=3)
    return w, [o.template for o in sim]


@pytest.mark.parametrize("workload", TXN)
def test_written_values_are_unique_per_key_and_keys_retire(workload: str) -> None:
    w, got = ops(workload, max_writes_per_key=5, key_count=2)
    assert w.fs == frozenset({"txn"}) and {o.f for o in got} == {"txn"}
    written: dict[int, list[int]] = {}
    write_f = "append" if workload == "list-append" else "w"
    for o in got:
        for f, k, v in o.value:
            assert f in ("r", write_f)
            if f == "r":
                assert v is None
            else:
                written.setdefault(k, []).append(v)
    assert all(sorted(v) == list(range(1, len(v) + 1)) for v in written.values())
    assert all(len(v) <= 5 for v in written.values())
    assert len(written) > 10  # keys retire after five writes and fresh ones take their place
    assert w.meta["max_writes_per_key"] == 5 and w.meta["key_count"] == 2


def test_transaction_length_and_read_fraction_follow_the_knobs() -> None:
    _, got = ops("list-append", min_txn_length=2, max_txn_length=3, read_fraction=0.0)
    main = [o for o in got if o.node is None]
    assert {len(o.value) for o in main} == {2, 3}
    assert all(f == "append" for o in main for f, _, _ in o.value)
    _, reads = ops("list-append", read_fraction=1.0)
    assert all(f == "r" for o in reads for f, _, _ in o.value)
    _, mixed = ops("list-append", max_txn_length=4)
    assert {len(o.value) for o in mixed if o.node is None} == {1, 2, 3, 4}


def test_final_reads_cover_every_key_on_every_node() -> None:
    _, got = ops("rw-register", max_writes_per_key=3)
    finals = [o for o in got if o.node is not None]
    keys = {k for o in got for _, k, _ in o.value}
    assert all(len(o.value) <= FINAL_KEYS_PER_TXN for o in finals)
    assert {(k, o.node) for o in finals for _, k, _ in o.value} == {(k, n) for k in keys for n in NODES}


def test_consistency_models_knob_reaches_the_checker() -> None:
    w, _ = ops("list-append", 0.1, consistency_models="serializable,snapshot-isolation")
    elle = w.checkers[0]
    assert elle.name == "elle" and elle.consistency_models == ["serializable", "snapshot-isolation"]
    assert WORKLOADS["rw-register"](make_spec(Path("/tmp"))).checkers[0].consistency_models == [
        "strict-serializable"]
    with pytest.raises(BadInput, match=r"^--workload-option consistency_models: unknown consistency model"):
        WORKLOADS["list-append"](make_spec(Path("/tmp"), options={"consistency_models": "sane"}))
    with pytest.raises(BadInput, match="min_txn_length"):
        WORKLOADS["list-append"](make_spec(Path("/tmp"), options={"min_txn_length": 5}))


@pytest.mark.parametrize(("options", "models", "anomalies"), [
    ({"anomalies": "G2"}, [], ["G2"]),
    ({"consistency_models": "none", "anomalies": ["G1", "G2"]}, [], ["G1", "G2"]),
    ({"consistency_models": ["serializable"], "anomalies": "G1"}, ["serializable"], ["G1"]),
])
def test_models_and_anomalies_options(options: dict[str, object], models: list[str],
                                      anomalies: list[str]) -> None:
    """The options are parsed as `check --consistency-models/--anomalies` are
    (checkers/elle/wanted.py); a refusal names the option as a run's user gives it."""
    elle = WORKLOADS["list-append"](make_spec(Path("/tmp"), options=options)).checkers[0]
    assert (elle.consistency_models, elle.anomalies) == (models, anomalies)


@pytest.mark.parametrize(("options", "message"), [
    ({"consistency_models": "none"},
     "--workload-option consistency_models none needs --workload-option anomalies"),
    ({"anomalies": "G3"}, "--workload-option anomalies: unknown anomaly(s) G3; known: "),
    ({"anomalies": "G2,"}, "--workload-option anomalies: an empty name in 'G2,'"),
])
def test_models_and_anomalies_refusals_name_the_option(options: dict[str, object], message: str) -> None:
    with pytest.raises(BadInput) as e:
        WORKLOADS["rw-register"](make_spec(Path("/tmp"), workload="rw-register", options=options))
    assert str(e.value).startswith(message)


@pytest.mark.parametrize(("item", "message"), [
    ("key_count=0", "key_count: must be 1..100000"),
    ("max_txn_length=2.5", "max_txn_length: expected a whole number"),
    ("max_writes_per_key=-1", "max_writes_per_key: must be 1.."),
])
def test_knob_ranges_are_checked(item: str, message: str) -> None:
    import argparse

    with pytest.raises(BadInput, match=message):
        workload_options(argparse.Namespace(workload_option=[item]))


@pytest.mark.parametrize("workload", TXN)
def test_an_atomic_store_passes_and_stale_reads_are_named(tmp_path: Path, workload: str) -> None:
    def run(store: Store, name: str):
        spec = make_spec(tmp_path / name, name=f"{workload}-mem", workload=workload, time_limit=1.0,
                         rate=400.0, options={"final_delay": 0.3})
        return run_test(spec, db=StoreDB(spec, store), workload=WORKLOADS[workload](spec))

    good = run(Store(), "good")
    assert good.valid is True, good.results
    assert good.results["checkers"]["elle"]["txns"]["ok"] > 100
    stale = run(Store(lag=0.2), "stale")
    assert stale.valid is False
    assert stale.results["checkers"]["elle"]["prohibited_anomaly_types"]
