"""Register version orders derived from the dependency graph (checkers/elle/derived.py): the
orders it finds, the edges it keeps, that slicing the reachability changes no verdict, and that
what it finds the brute-force oracle confirms."""

from __future__ import annotations

import random

import pytest
from jepsen_py.checkers.elle import check, checker, derived
from jepsen_py.checkers.elle.budget import Deadline
from jepsen_py.checkers.elle.checker import infer
from jepsen_py.checkers.elle.found import Found
from jepsen_py.checkers.elle.graph import RW, EdgeList
from jepsen_py.checkers.elle.txn import WRITE, transactions

from jepsen_py.errors import BadInput
from tests.checkers.elle import oracle
from tests.checkers.elle.elle import History, cycle, found, rw, steps
from tests.checkers.elle.executions import ENGINES, MUTATIONS, execute, mutate

RW_REG = "rw-register"


def _derived(ops: list) -> list[tuple[int, int, tuple]]:
    """The rw edges derive() adds after the register inference, as (reader, writer, why)."""
    txns = transactions(ops, WRITE)
    edges = EdgeList(len(txns))
    infer(RW_REG, txns, edges, Found(), Deadline(10))
    before = len(edges.src)
    derived.derive(txns, edges, Deadline(10))
    return [(txns[a].index, txns[b].index, w) for a, b, k, w in
            zip(edges.src[before:], edges.dst[before:], edges.kind[before:], edges.why[before:], strict=True)
            if k == RW]


def test_an_order_only_the_graph_gives() -> None:
    """T1 read the y = 1 that T0 wrote, then wrote y = 2: y = 1 precedes y = 2 though no read
    shows it, so T2, which read x from T1 and y = 1, missed T1's write of y: a G-single-item that
    the oracle confirms (no serial order explains T2's reads)."""
    h = History()
    t0 = h.done(rw("wy1"))
    t1 = h.done(rw("ry1wx1wy2"))
    t2 = h.done(rw("rx1ry1"))
    assert _derived(h.ops) == [(t2, t1, ("y", 1, 2, f"T{t0}"))]
    r = check(h.ops, RW_REG, ["serializable"])
    (a,) = found(r, "G-single-item")
    assert steps(a) == cycle((t2, t1, "rw", "y"), (t1, t2, "wr", "x"))
    assert r["valid"] is False and not oracle.decide(transactions(h.ops, WRITE), RW_REG, "serializable")


def test_only_the_earliest_later_writer_gets_an_edge() -> None:
    """x = 0 precedes x = 1 and x = 2 (T0 reaches T1, T1 reaches T2, by wr edges on y and z): the
    reader of x = 0 gets one rw edge, to T1; the one to T2 is T1's path onwards."""
    h = History()
    t0 = h.done(rw("wx0wy0"))
    t1 = h.done(rw("ry0wx1wz1"))
    h.done(rw("rz1wx2"))
    r0 = h.done(rw("rx0"))
    assert _derived(h.ops) == [(r0, t1, ("x", 0, 1, f"T{t0}"))]
    assert check(h.ops, RW_REG, ["serializable"])["valid"] is True


def test_a_path_through_an_anti_dependency_orders_nothing() -> None:
    """T2 -rw-> T1 (T2 read z before T1 wrote it) orders T2 first under serializability but not
    under snapshot isolation, so nothing is derived from it."""
    h = History()
    h.done(rw("wx2rz_"))
    h.done(rw("wz1wx1"))
    h.done(rw("rx2"))
    assert _derived(h.ops) == []


def _random(seed: int) -> list:
    rng = random.Random(seed)
    ops = execute(rng, rng.randint(4, 7), rng.randint(1, 3), RW_REG, rng.choice(ENGINES))
    for how in rng.sample(MUTATIONS, rng.randint(0, 2)):
        ops = mutate(rng, ops, RW_REG, how)
    return ops


def test_slicing_the_reachability_changes_no_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a slice of one writer at a time (as a history too large for one pass is done), each
    history's verdict and anomalies are those of the single pass."""
    seen = 0
    for seed in range(300):
        ops = _random(seed)
        try:
            whole = check(ops, RW_REG, ["serializable", "snapshot-isolation"])
        except BadInput:
            continue
        monkeypatch.setattr(derived, "MAX_BITS", 1)
        sliced = check(ops, RW_REG, ["serializable", "snapshot-isolation"])
        monkeypatch.undo()
        assert (sliced["valid"], sliced["anomaly_types"]) == (whole["valid"], whole["anomaly_types"]), seed
        seen += whole["valid"] is False
    assert seen > 20


def test_what_it_finds_holds() -> None:
    """Every model the Elle-style checker rules out on random damaged histories (with derived
    orders among its edges), the oracle rules out too."""
    ruled_out = 0
    for seed in range(600):
        ops = _random(seed)
        try:
            txns = transactions(ops, WRITE)
            check(ops, RW_REG, ["serializable"])
        except BadInput:
            continue
        for model in ("serializable", "snapshot-isolation", "strict-serializable"):
            if check(ops, RW_REG, [model])["valid"] is False:
                assert not oracle.decide(txns, RW_REG, model), (seed, model)
                ruled_out += 1
    assert ruled_out > 300


@pytest.mark.parametrize(("seed", "model"), [(1160, "strict-serializable"), (1933, "serializable"),
                                             (2350, "serializable")])
def test_violations_only_a_derived_order_shows(monkeypatch: pytest.MonkeyPatch, seed: int,
                                               model: str) -> None:
    """Random histories (found by scanning seeds: about one in a thousand) where only a derived
    order shows the violation: invalid with it, not without it, and the oracle agrees."""
    ops = _random(seed)
    assert check(ops, RW_REG, [model])["valid"] is False
    assert not oracle.decide(transactions(ops, WRITE), RW_REG, model)
    monkeypatch.setattr(checker, "derive", lambda *a: 0)
    assert check(ops, RW_REG, [model])["valid"] is not False
