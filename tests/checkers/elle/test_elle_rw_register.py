"""Elle's own rw-register tests, ported: each assertion on a concrete history in jepsen-io/elle's
test/elle/rw_register_test.clj, named by the Elle test it comes from. Elle's options map to
Inference (wfr-keys?, sequential-keys?, linearizable-keys?, transaction-order); where this
checker's answer differs from Elle's, the test says so and asserts ours (docs/checkers.md lists
those and the assertions not ported).
"""

from __future__ import annotations

from typing import Any

import pytest
from jepsen_py.checkers.elle import check
from jepsen_py.checkers.elle.inference import NONE, Inference

from jepsen_py.errors import BadInput
from jepsen_py.history import Op
from tests.checkers.elle.elle import History, cycle, found, rw, steps, view

RW = "rw-register"


def c(ops: list[Op], models: list[str] | None = ("strict-serializable",),  # type: ignore[assignment]
      anomalies: tuple[str, ...] = (), assume: Inference = NONE) -> dict[str, Any]:
    """Elle's (c opts history); models None is Elle's :consistency-models nil."""
    return check(ops, RW, list(models) if models is not None else [], anomalies=anomalies, inference=assume)


def oks(*texts: str) -> tuple[list[Op], list[int]]:
    h = History()
    return h.ops, [h.done(rw(t)) for t in texts]


def pairs(*specs: tuple[int, str]) -> tuple[list[Op], list[int]]:
    """(process, text) transactions, each invoked and completed before the next."""
    h = History()
    return h.ops, [h.pair(rw(t), process=p) for p, t in specs]


# internal-cases-test, g1a-cases-test, g1b-cases-test


def test_internal_cases_good() -> None:
    ops, _ = oks("ry2wx2rx2wx1rx1")
    assert "internal" not in c(ops)["anomaly_types"]


@pytest.mark.parametrize("text, read, expected", [("rx1wx2rx1", 1, 2), ("rx_rx2", 2, None)],
                         ids=["stale", "nil read"])
def test_internal_cases(text: str, read: int, expected: int | None) -> None:
    ops, (t,) = oks(text)
    (a,) = found(c(ops), "internal")
    assert (a["txn"]["index"], a["read"], a["expected"]) == (t, read, expected)


def test_g1a_cases() -> None:
    ops, _ = oks("wx1", "rx1")
    assert "G1a" not in c(ops)["anomaly_types"]
    h = History()
    r_ = h.done(rw("rx2"))
    w = h.done(rw("wx2"), "fail")
    (a,) = found(c(h.ops), "G1a")
    assert (a["reader"]["index"], a["writer"]["index"], a["value"]) == (r_, w, 2)


def test_g1b_cases() -> None:
    ops, _ = oks("wx1wx2", "rx_rx2")
    assert "G1b" not in c(ops)["anomaly_types"]
    ops, (r_, w) = oks("rx2", "wx2wx1")
    (a,) = found(c(ops), "G1b")
    assert (a["reader"]["index"], a["writer"]["index"], a["value"]) == (r_, w, 2)


# wr-graph-test: a graph of wr edges alone (Elle's elle.core/check with the wr analyzer)


@pytest.mark.parametrize("txns, valid", [
    pytest.param(([["r", "x", 0], ["w", "x", 1]], [["r", "x", 1], ["w", "x", 0]]), False,
                 id="chain on one register"),
    pytest.param(([["r", "x", 0], ["w", "y", 1]], [["r", "y", 1], ["w", "x", 0]]), False,
                 id="chain across two registers"),
    pytest.param(([["r", "x", 0], ["r", "y", 0], ["w", "x", 1]],
                  [["r", "x", 0], ["r", "y", 0], ["w", "y", 1]]), True, id="write skew"),
])
def test_wr_graph(txns: tuple[list[list[Any]], ...], valid: bool) -> None:
    h = History()
    for t in txns:
        h.pair(t)
    # the cycles of wr edges alone are G1c; (x, 0) is an initial value nobody wrote here, which
    # this checker reports as a garbage read, so G1c is asked about by itself
    r = c(h.ops, None, ("G1c",))
    assert ("G1c" in r["anomaly_types"]) is not valid


def test_wr_graph_write_and_read_of_one_value_is_refused() -> None:
    # Elle's "write and read" case writes x = 0 in two transactions; its wr graph alone does not
    # mind, but Elle's rw-register contract (and this checker) wants unique writes per key
    h = History()
    h.pair([["w", "x", 0]])
    h.pair([["w", "x", 0]])
    with pytest.raises(BadInput, match="unique"):
        c(h.ops)


# checker-test


def test_checker_read_does_not_return_what_was_just_written() -> None:
    # Elle's test expects valid and marks that as a bug of its own ("We should detect this as
    # invalid"): x = 2 was never written. Ours says so: a garbage read, which is an aborted read
    ops, _ = pairs((0, "wx1"), (0, "rx2"))
    r = c(ops, assume=Inference(linearizable_keys=True))
    assert r["valid"] is False and r["prohibited_anomaly_types"] == ["garbage-read"]


def test_checker_read_returns_what_was_just_written() -> None:
    ops, _ = pairs((0, "wx1"), (0, "rx2"), (0, "rx1"))
    r = c(ops, assume=Inference(linearizable_keys=True))
    # as Elle: the version cycle; and, beyond Elle, the read of a 2 nobody wrote
    assert view(r) == {"valid": False, "anomaly_types": ["cyclic-versions", "garbage-read"], "not": {"PL-1"}}
    (a,) = found(r, "cyclic-versions")
    assert a["key"] == "x" and a["scc"] == [1, 2] and a["sources"] == ["initial-state", "linearizable-keys"]


def test_checker_g0() -> None:
    # what could be a pure write cycle: T1 < T2 on x, T2 < T1 on y
    h = History()
    t1 = h.pair(rw("wx1wy2"), process=0)
    t2 = h.pair(rw("wx2wy1"), process=1)
    first = h.ops[:]
    # nothing can be known of the versions yet
    assert view(c(first, None, ("G0",))) == {"valid": "unknown", "anomaly_types": ["empty-transaction-graph"],
                                             "not": set()}
    # a read on each process after both shows the final versions; sequential keys order them
    h.pair(rw("rx2"), process=0)
    h.pair(rw("ry2"), process=1)
    r = c(h.ops, None, ("G0",), Inference(sequential_keys=True))
    assert view(r) == {"valid": False, "anomaly_types": ["G0"], "not": {"PL-1"}}
    (a,) = found(r, "G0")
    assert steps(a) == cycle((t1, t2, "ww", "x"), (t2, t1, "ww", "y"))


def test_checker_g1a() -> None:
    h = History()
    t2 = h.done(rw("rx1"))
    t1 = h.done(rw("wx1"), "fail")
    r = c(h.ops, None, ("G1",))
    assert view(r) == {"valid": False, "anomaly_types": ["G1a", "empty-transaction-graph"], "not": {"PL-2"}}
    (a,) = found(r, "G1a")
    assert (a["reader"]["index"], a["writer"]["index"]) == (t2, t1)


def test_checker_g1b() -> None:
    ops, (t1, t2) = oks("wx1wx2", "rx1")
    # the read is of an intermediate version, so no external dependency: the graph is empty
    assert view(c(ops, None, ("G0",))) == {"valid": "unknown", "anomaly_types": ["empty-transaction-graph"],
                                           "not": {"PL-2"}}
    expected = {"valid": False, "anomaly_types": ["G1b", "empty-transaction-graph"], "not": {"PL-2"}}
    for r in (c(ops, None, ("G1",)), c(ops, ["repeatable-read"])):
        assert view(r) == expected
        (a,) = found(r, "G1b")
        assert (a["reader"]["index"], a["writer"]["index"]) == (t2, t1)


def test_checker_g_single_transaction_order() -> None:
    ops, (t1, t2) = oks("rx_wy2", "wx3wy4")
    assert view(c(ops, ["serializable"])) == {"valid": True}
    # the database's commit order: T2 then T1
    r = c(ops, ["serializable"], assume=Inference(transaction_order={0: 2, 1: 1}))
    assert view(r) == {"valid": False, "anomaly_types": ["G-single-item"], "not": {"PL-2+", "PL-2.99"}}
    (a,) = found(r, "G-single-item")
    assert steps(a) == cycle((t1, t2, "rw", "x"), (t2, t1, "ww", "y"))


def test_checker_g2_item_transaction_order() -> None:
    ops, (_, t2, t3, t4) = oks("wx1wy2wz3", "rx1wy5", "rz3wx4", "wz7wy8")
    assert view(c(ops, ["serializable"])) == {"valid": True}
    # commit order T1, T3, T4, T2
    r = c(ops, ["serializable"], assume=Inference(transaction_order={0: 1, 1: 4, 2: 2, 3: 3}))
    assert view(r) == {"valid": False, "anomaly_types": ["G2-item"], "not": {"PL-2.99"}}
    (a,) = found(r, "G2-item")
    assert steps(a) == cycle((t2, t3, "rw", "x"), (t3, t4, "rw", "z"), (t4, t2, "ww", "y"))


def test_checker_g1c() -> None:
    # T2 observes T1's write of x, and vice versa on y
    ops, (t1, t2) = oks("wx1ry1", "wy1rx1")
    assert view(c(ops, None, ("G0",))) == {"valid": True}
    assert view(c(ops, ["read-uncommitted"])) == {"valid": True}
    for r in (c(ops, None, ("G1",)), c(ops, ["read-committed"]), c(ops, ["serializable"])):
        assert view(r) == {"valid": False, "anomaly_types": ["G1c"], "not": {"PL-2"}}
        (a,) = found(r, "G1c")
        assert steps(a) == cycle((t1, t2, "wr", "x"), (t2, t1, "wr", "y"))
    assert view(c(ops, None, ("G2",))) == {"valid": True}  # G1c is not G2


def test_checker_g2_item() -> None:
    # reads of 1, an initial value no transaction wrote, then two writes that each missed the
    # other's key: a G2-item under linearizable keys
    h = History()
    h.pair(rw("rx1ry1"), process=0)
    t2 = h.invoke(rw("rx1wy2"), process=1)
    t3 = h.pair(rw("ry1wx2"), process=2)
    h.complete(rw("rx1wy2"), process=1)
    assume = Inference(linearizable_keys=True)
    # Elle's test expects read committed to call it valid (G2-item is allowed there). Here the
    # reads of a 1 nobody wrote are garbage reads, which read committed prohibits
    r = c(h.ops, ["read-committed"], assume=assume)
    assert r["valid"] is False and r["prohibited_anomaly_types"] == ["garbage-read"]
    assert "G2-item" in r["anomaly_types"]
    # the point of the case, with the initial values written by a transaction before the rest
    g = History()
    g.pair(rw("wx1wy1"), process=9)
    g.pair(rw("rx1ry1"), process=0)
    t2 = g.invoke(rw("rx1wy2"), process=1)
    t3 = g.pair(rw("ry1wx2"), process=2)
    g.complete(rw("rx1wy2"), process=1)
    assert view(c(g.ops, ["read-committed"], assume=assume)) == {"valid": True}
    r = c(g.ops, None, ("G2",), assume)
    assert view(r) == {"valid": False, "anomaly_types": ["G2-item"], "not": {"PL-2.99"}}
    (a,) = found(r, "G2-item")
    assert steps(a) == cycle((t2, t3, "rw", "x"), (t3, t2, "rw", "y"))


def test_checker_internal() -> None:
    ops, (t1,) = oks("rx1rx2")
    r = c(ops, None, ("internal",))
    # Elle's :not is read-atomic. Here 1 and 2 were never written: garbage reads (not asked
    # about, but they rule out read committed, weaker than read-atomic)
    assert view(r) == {"valid": False, "anomaly_types": ["empty-transaction-graph", "internal"],
                       "not": {"PL-2"}}
    (a,) = found(r, "internal")
    assert (a["txn"]["index"], a["read"], a["expected"]) == (t1, 2, 1)
    # with 1 and 2 written first, exactly Elle's answer
    h = History()
    h.invoke(rw("wx1"), process=1)
    h.invoke(rw("wx2"), process=2)
    h.complete(rw("wx1"), process=1)
    h.complete(rw("wx2"), process=2)
    h.pair(rw("rx1rx2"), process=0)
    r = c(h.ops, None, ("internal",))
    assert view(r) == {"valid": False, "anomaly_types": ["internal"], "not": {"read-atomic"}}


def test_checker_initial_state() -> None:
    # nil precedes every version, and the wr dependency: a G-single
    h = History()
    t1 = h.invoke(rw("rx_ry1"), process=0)
    t2 = h.pair(rw("wy1wx2"), process=0)
    h.complete(rw("rx_ry1"), process=0)
    h.ops[1] = Op(1, 1, "invoke", 1, "txn", None, rw("wy1wx2"))
    h.ops[2] = Op(2, 2, "ok", 1, "txn", None, rw("wy1wx2"))
    r = c(h.ops, ["serializable"])
    assert view(r) == {"valid": False, "anomaly_types": ["G-single-item"], "not": {"PL-2+", "PL-2.99"}}
    (a,) = found(r, "G-single-item")
    assert steps(a) == cycle((t1, t2, "rw", "x"), (t2, t1, "wr", "y"))


def test_checker_wfr() -> None:
    ops, (t1, t2) = oks("ry1wx1wy2", "rx1ry1")
    # without knowing y's version order there is no cycle (Elle: valid; here y = 1 was never
    # written, a garbage read beyond Elle, which serializable prohibits)
    r = c(ops, ["serializable"], assume=Inference(wfr_keys=False))
    assert r["prohibited_anomaly_types"] == ["garbage-read"]
    r = c(ops, ["serializable"], assume=Inference(wfr_keys=True))
    # with writes-follow-reads, 1 < 2 on y, and the G-single shows
    assert r["valid"] is False and "G-single-item" in r["prohibited_anomaly_types"]
    (a,) = found(r, "G-single-item")
    assert steps(a) == cycle((t2, t1, "rw", "y"), (t1, t2, "wr", "x"))
    # with y = 1 written first, Elle's answer with writes-follow-reads; without it Elle says
    # valid, and here (beyond Elle) the order 1 < 2 is derived all the same: T0 wrote y = 1 and T1
    # read it, so the other order would be a G1c (checkers/elle/derived.py)
    ops, (t0, t1, t2) = oks("wy1", "ry1wx1wy2", "rx1ry1")
    for wfr in (True, False):
        r = c(ops, ["serializable"], assume=Inference(wfr_keys=wfr))
        assert view(r) == {"valid": False, "anomaly_types": ["G-single-item"], "not": {"PL-2+", "PL-2.99"}}
        (a,) = found(r, "G-single-item")
        assert steps(a) == cycle((t2, t1, "rw", "y"), (t1, t2, "wr", "x"))
        assert (f"since T{t0}, which wrote 'y'=1, precedes T{t1}" in a["explanation"]) is not wfr


def test_checker_cyclic_version_order() -> None:
    ops, _ = pairs((0, "wx1"), (0, "wx2"), (0, "rx1"))
    r = c(ops, assume=Inference(sequential_keys=True))
    assert view(r) == {"valid": False, "anomaly_types": ["cyclic-versions"], "not": {"PL-1"}}
    (a,) = found(r, "cyclic-versions")
    assert a["key"] == "x" and a["scc"] == [1, 2] and a["sources"] == ["initial-state", "sequential-keys"]


# lost-update-test, scc-sort-bug-test, cyclic-versions-bug-test


def test_lost_update() -> None:
    h = History()
    t1 = h.pair(rw("rx0wx1"), process=0)
    t2 = h.pair(rw("rx0wx2"), process=1)
    r = c(h.ops)
    # as Elle: the lost update (without writes-follow-reads no version order shows a cycle); the
    # 0 both read was never written, a garbage read beyond Elle
    assert "lost-update" in r["prohibited_anomaly_types"] and r["valid"] is False
    assert {"update-atomic", "cursor-stability"} <= set(r["not"]) | {"update-atomic", "cursor-stability"}
    (a,) = found(r, "lost-update")
    assert a["key"] == "x" and a["value"] == 0 and [t["index"] for t in a["txns"]] == [t1, t2]
    # with the 0 written first: Elle's lost update, and beyond Elle the cycle it stands for. Both
    # read the 0 that T0 wrote, so 0 precedes 1 and 2 (derived from the wr edges; the other order
    # would be a G1c), and each did not see the other's write: rw both ways, a G2-item
    g = History()
    t0 = g.pair(rw("wx0"), process=9)
    t1 = g.pair(rw("rx0wx1"), process=0)
    t2 = g.pair(rw("rx0wx2"), process=1)
    r = c(g.ops, ["serializable"])
    assert view(r) == {"valid": False, "anomaly_types": ["G2-item", "lost-update"],
                       "not": {"update-atomic", "PL-CS"}}
    (a,) = found(r, "G2-item")
    assert steps(a) == cycle((t1, t2, "rw", "x"), (t2, t1, "rw", "x"))
    assert f"since T{t0}, which wrote 'x'=0, precedes" in a["explanation"]


def test_scc_sort_bug() -> None:
    # linearizable keys order x's versions 1 then nil, against the initial state; and 4, 3 by
    # writes-follow-reads but 3, 4 by real time
    ops, (_, _, t3, t4) = pairs((0, "rx1"), (0, "rx_"), (0, "rx4wx3"), (0, "wx4"))
    r = c(ops, ["strict-serializable"], assume=Inference(wfr_keys=True, linearizable_keys=True))
    assert r["valid"] is False
    # Elle names the cycle G1c-realtime: T4 -> T3 is both ww (4 < 3 by writes-follow-reads) and
    # wr (T3 read T4's 4), and Elle's explainer takes the wr. Here it is G0-realtime, the stronger
    # name (G0-realtime implies G1c-realtime)
    assert {"G0-realtime", "cyclic-versions"} <= set(r["prohibited_anomaly_types"])
    assert canonical_not(r) == {"PL-1"}
    (g,) = found(r, "G0-realtime")
    assert steps(g) == cycle((t3, t4, "realtime", None), (t4, t3, "ww", "x"))
    sccs = {tuple(a["scc"]) for a in found(r, "cyclic-versions")}
    assert sccs == {(None, 1), (3, 4)}
    assert all(a["sources"] == ["initial-state", "wfr-keys", "linearizable-keys"]
               for a in found(r, "cyclic-versions"))


def canonical_not(r: dict[str, Any]) -> set[str]:
    return view(r)["not"]


def test_cyclic_versions_bug() -> None:
    # a history whose index order once made Elle infer a version cycle that is not there
    h = History()
    for i, typ, p, v in ((1, "invoke", 0, []), (2, "ok", 0, []), (3, "invoke", 0, [["r", 1, None]]),
                         (4, "invoke", 1, [["w", 1, 4]]), (5, "invoke", 2, []),
                         (320, "ok", 0, [["r", 1, None]]), (322, "ok", 1, [["w", 1, 4]]), (323, "ok", 2, []),
                         (324, "invoke", 0, []), (325, "ok", 0, []), (326, "invoke", 0, [["r", 1, None]]),
                         (327, "ok", 0, [["r", 1, 4]])):
        h.ops.append(Op(i, len(h.ops), typ, p, "txn", None, v))
    assert c(h.ops, ["serializable"], assume=Inference(linearizable_keys=True))["valid"] is True
