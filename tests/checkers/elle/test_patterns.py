"""Each anomaly kind, shown by the smallest hand-built history, is found and named, and rules out
exactly the models Elle says it does."""

from __future__ import annotations

from dataclasses import replace

import pytest
from jepsen_py.checkers.elle import check, impossible, prohibited
from jepsen_py.checkers.elle.inference import Inference

from tests.checkers.elle.build import LIST_KINDS, Hist, pattern

# a register's ww edges come only from writes-follow-reads, so no G0 without process_keys; the rest
# of these are about lists
LIST_ONLY = ("G0", "G0-process", "G0-realtime", "dirty-update", "duplicate-elements", "incompatible-order")
RW_KINDS = tuple(k for k in LIST_KINDS if k not in LIST_ONLY)


def _model(kind: str) -> list[str]:
    """Process order is searched only where real-time order is not (Elle's choice: real time holds
    it), so a -process cycle shows under a strong-session model."""
    return ["strong-session-serializable"] if kind.endswith("-process") else ["strict-serializable"]


@pytest.mark.parametrize("kind", LIST_KINDS)
def test_list_append_pattern_is_found_and_named(kind: str) -> None:
    r = check(pattern(kind, "list-append").ops, "list-append", _model(kind))
    assert kind in r["anomaly_types"], r
    assert r["valid"] is False
    (a,) = [a for a in r["anomalies"] if a["kind"] == kind][:1]
    assert a["explanation"] and a["ops"] and all(isinstance(i, int) for i in a["ops"])
    # what it rules out is what Elle's map says the kinds found rule out
    assert set(r["not"]) | set(r["also_not"]) == impossible(r["anomaly_types"])


@pytest.mark.parametrize("kind", RW_KINDS)
def test_rw_register_pattern_is_found_and_named(kind: str) -> None:
    r = check(pattern(kind, "rw-register").ops, "rw-register", _model(kind))
    assert kind in r["anomaly_types"], r
    assert r["valid"] is False


def test_a_serial_history_shows_no_anomaly_under_the_strongest_models() -> None:
    h = Hist()
    h.txn(0, [["append", "x", 1], ["r", "y", []]])
    h.txn(1, [["r", "x", [1]], ["append", "y", 1]])
    h.txn(0, [["r", "x", [1]], ["r", "y", [1]], ["append", "x", 2]])
    h.txn(2, [["append", "y", 2], ["r", "y", [1, 2]], ["r", "x", [1, 2]]])
    for models in (["strict-serializable"], ["strong-session-serializable"], ["strong-snapshot-isolation"]):
        r = check(h.ops, "list-append", models)
        assert r["valid"] is True and r["anomaly_types"] == [] and r["not"] == []
        assert r["edges"]["ww"] == 2
        # real-time order holds process order, so only one of them is added (as Elle does)
        assert ("realtime" in r["edges"]) == (models != ["strong-session-serializable"])
        assert ("process" in r["edges"]) == (models == ["strong-session-serializable"])


def test_g_single_cycle_is_explained_edge_by_edge() -> None:
    r = check(pattern("G-single-item", "list-append").ops, "list-append", ["serializable"])
    (a,) = r["anomalies"]
    assert a["kind"] == "G-single-item" and a["ops"] == [0, 1, 3, 4]  # T0: ops 0 and 3, T1: 1 and 4
    assert [s["type"] for s in a["steps"]] in (["rw", "wr"], ["wr", "rw"])
    rw = next(s for s in a["steps"] if s["type"] == "rw")
    wr = next(s for s in a["steps"] if s["type"] == "wr")
    assert rw["from"] == 0 and rw["to"] == 1 and rw["key"] == "a:x"
    assert "T0 read 'a:x'=[]" in rw["explanation"] and "T1 appended 1" in rw["explanation"]
    assert wr["from"] == 1 and wr["to"] == 0 and "T0 read 'a:y'=[..1]" in wr["explanation"]
    assert [t["index"] for t in a["cycle"]] == [s["from"] for s in a["steps"]]
    # read skew: the weakest models it rules out; snapshot isolation implies consistent view
    assert r["not"] == ["consistent-view", "repeatable-read"]
    assert {"snapshot-isolation", "serializable"} <= set(r["also_not"])


def test_write_skew_is_allowed_by_snapshot_isolation_but_not_serializable() -> None:
    ops = pattern("G2-item", "list-append").ops
    assert check(ops, "list-append", ["snapshot-isolation"])["valid"] is True
    r = check(ops, "list-append", ["serializable"])
    assert r["valid"] is False and r["prohibited_anomaly_types"] == ["G2-item"]
    assert "snapshot-isolation" not in r["not"] + r["also_not"]


def test_realtime_cycle_is_allowed_by_serializable_only() -> None:
    ops = pattern("G-single-item-realtime", "list-append").ops
    assert check(ops, "list-append", ["serializable"])["valid"] is True
    r = check(ops, "list-append", ["strict-serializable"])
    assert r["valid"] is False and r["not"] == ["strong-snapshot-isolation"]
    assert "strict-serializable" in r["also_not"] and "serializable" not in r["also_not"]
    (a,) = [a for a in r["anomalies"] if a["kind"] == "G-single-item-realtime"]
    step = next(s for s in a["steps"] if s["type"] == "realtime")
    assert "completed (op 1) before" in step["explanation"]


def test_process_cycle_rules_out_strong_session_models() -> None:
    ops = pattern("G-single-item-process", "list-append").ops
    r = check(ops, "list-append", ["strong-session-snapshot-isolation"])
    assert r["valid"] is False and "G-single-item-process" in r["prohibited_anomaly_types"]
    assert check(ops, "list-append", ["snapshot-isolation"])["valid"] is True


def test_rw_register_g0_needs_process_order_of_keys() -> None:
    h = Hist()
    h.concurrent((0, [["w", "x", 1], ["w", "y", 1]]), (1, [["w", "x", 2], ["w", "y", 2]]))
    h.txn(2, [["r", "x", 1]])
    h.txn(2, [["r", "x", 2]])
    h.txn(3, [["r", "y", 2]])
    h.txn(3, [["r", "y", 1]])
    assert "G0" not in check(h.ops, "rw-register", ["read-uncommitted"])["anomaly_types"]
    r = check(h.ops, "rw-register", ["read-uncommitted"], process_keys=True)
    assert r["valid"] is False and "G0" in r["anomaly_types"] and r["not"] == ["read-uncommitted"]


def test_info_writes_count_only_when_observed() -> None:
    h = Hist()
    h.concurrent((0, [["append", "x", 1]], "info"), (1, [["append", "x", 2]], "info"))
    h.txn(2, [["r", "x", [2]]])
    r = check(h.ops, "list-append", ["strict-serializable"])
    assert r["valid"] is True and r["anomaly_types"] == []
    assert r["txns"] == {"ok": 1, "fail": 0, "info": 2}


def test_read_of_an_info_write_is_not_an_aborted_read() -> None:
    h = Hist()
    h.concurrent((0, [["w", "x", 1]], "info"), (1, [["r", "x", 1]]))
    assert check(h.ops, "rw-register", ["serializable"])["anomaly_types"] == []


def test_prohibited_sets_follow_elle() -> None:
    assert {"G0", "duplicate-elements"} <= prohibited(["read-uncommitted"])
    assert "G1a" not in prohibited(["read-uncommitted"]) and "G1a" in prohibited(["read-committed"])
    assert "G2-item" not in prohibited(["snapshot-isolation"])
    assert {"G-single-item", "G-nonadjacent-item", "internal"} <= prohibited(["snapshot-isolation"])
    assert {"G2-item", "lost-update"} <= prohibited(["repeatable-read"])
    assert "G-single-item-realtime" in prohibited(["strict-serializable"])
    assert "G-single-item-realtime" not in prohibited(["serializable"])
    assert "G1c-process" in prohibited(["strong-session-read-committed"])


def test_incompatible_reads_give_no_ordering_edges_to_fake_cycles_with() -> None:
    # the two reads disagree about x's order; a guessed order would make a ww cycle with y's
    h = Hist()
    h.concurrent((0, [["append", "x", 1], ["append", "y", 1]]), (1, [["append", "x", 2], ["append", "y", 2]]),
                 (2, [["r", "x", [1, 2]], ["r", "y", [2, 1]]]), (3, [["r", "x", [2, 1]]]))
    r = check(h.ops, "list-append", ["read-uncommitted"])
    assert r["anomaly_types"] == ["incompatible-order"] and r["valid"] is True
    assert r["not"] == ["read-committed"]


def test_a_read_only_transaction_that_reads_two_states_is_internally_inconsistent() -> None:
    h = Hist()
    h.concurrent((0, [["append", "x", 1]]), (1, [["r", "x", []], ["r", "x", [1]]]))
    r = check(h.ops, "list-append", ["serializable"])
    # every read counts, as in Elle: the empty read did not see T0, the other did (a G-single)
    assert r["anomaly_types"] == ["G-single-item", "internal"] and r["valid"] is False
    h = Hist()
    h.concurrent((0, [["w", "x", 1]]), (1, [["r", "x", None], ["r", "x", 1]]))
    assert check(h.ops, "rw-register", ["serializable"])["anomaly_types"] == ["internal"]


def test_rw_register_versions_ordered_in_a_cycle() -> None:
    # writes follow reads put 1 before 2; process 3's reads put 2 before 1
    h = Hist()
    h.txn(0, [["w", "x", 1]])
    h.txn(1, [["r", "x", 1], ["w", "x", 2]])
    h.txn(3, [["r", "x", 2]])
    h.txn(3, [["r", "x", 1]])
    assume = Inference(wfr_keys=True)
    assert "cyclic-versions" not in check(h.ops, "rw-register", ["read-uncommitted"],
                                          inference=assume)["anomaly_types"]
    r = check(h.ops, "rw-register", ["read-uncommitted"], inference=replace(assume, sequential_keys=True))
    assert "cyclic-versions" in r["anomaly_types"] and r["valid"] is False
    (a,) = [a for a in r["anomalies"] if a["kind"] == "cyclic-versions"]
    assert a["key"] == "x" and a["scc"] == [1, 2]
    assert a["sources"] == ["initial-state", "wfr-keys", "sequential-keys"]
