"""The check's edges: budget, bad input, the Checker a workload lists."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest
from jepsen_py.checkers.elle import ElleChecker, check

from jepsen_py.errors import BadInput
from tests.checkers.elle.build import Hist, inject, pattern, serial_history


def test_a_budget_that_runs_out_gives_unknown_never_valid() -> None:
    ops = serial_history(random.Random(3), 200, 4, "list-append")
    assert check(ops, "list-append", ["serializable"])["valid"] is True
    r = check(ops, "list-append", ["serializable"], time_s=0)
    assert r["valid"] == "unknown" and "time limit" in r["unknown_reason"]


def test_an_anomaly_found_before_the_budget_ran_out_still_fails() -> None:
    ops = inject(serial_history(random.Random(4), 50, 3, "list-append"), pattern("G1a", "list-append").ops,
                 random.Random(4))
    r = check(ops, "list-append", ["read-committed"], time_s=1e-9)
    assert r["valid"] in (False, "unknown")  # the clock may stop it before any key is looked at
    r = check(ops, "list-append", ["read-committed"])
    assert r["valid"] is False and r["not"] == ["read-committed"]


def test_no_ok_transaction_is_unknown() -> None:
    h = Hist()
    h.txn(0, [["append", "x", 1]], "fail")
    r = check(h.ops, "list-append", ["serializable"])
    assert r["valid"] == "unknown" and "no transaction" in r["unknown_reason"]


@pytest.mark.parametrize("value", [5, [["x", "k", 1]], [["append", "k"]], [None]])
def test_a_malformed_transaction_is_bad_input(value: object) -> None:
    h = Hist()
    h.invoke(0, [])
    h.ops[0].value = value
    h.complete(0, [])
    h.ops[1].value = value
    with pytest.raises(BadInput, match=r"op [01]"):
        check(h.ops, "list-append")


def test_a_read_that_is_not_a_list_is_bad_input() -> None:
    h = Hist()
    h.txn(0, [["r", "x", 3]])
    with pytest.raises(BadInput, match="not a list"):
        check(h.ops, "list-append")


def test_unknown_model_and_workload_are_bad_input() -> None:
    with pytest.raises(BadInput, match="consistency model"):
        check([], "list-append", ["serialisable"])
    with pytest.raises(BadInput, match="workload"):
        ElleChecker("bank")


def test_checker_reads_its_budget_from_the_test_options_and_result_is_json() -> None:
    ops = serial_history(random.Random(5), 100, 3, "rw-register")
    c = ElleChecker("rw-register", ["snapshot-isolation"])
    r = c.check(None, ops)
    assert r["valid"] is True and json.loads(json.dumps(r)) == r
    test = SimpleNamespace(spec=SimpleNamespace(options={"elle_time_s": 0}))
    assert c.check(test, ops)["valid"] == "unknown"


def test_non_transaction_ops_are_ignored() -> None:
    h = Hist()
    h.txn(0, [["append", "x", 1]])
    h.txn(1, [["r", "x", [1]]])
    h.ops[0].f = h.ops[1].f = "read"
    r = check(h.ops, "list-append")
    assert r["txns"] == {"ok": 1, "fail": 0, "info": 0} and r["anomaly_types"] == ["garbage-read"]


def test_a_cycle_search_that_gives_up_on_a_prohibited_kind_is_unknown(monkeypatch) -> None:
    from jepsen_py.checkers.elle import cycles

    ops = pattern("G2-item", "list-append").ops  # write skew: snapshot isolation allows it
    assert check(ops, "list-append", ["snapshot-isolation"])["valid"] is True
    monkeypatch.setattr(cycles, "MAX_STARTS", 1)  # G-single-item's search stops after one failed start
    r = check(ops, "list-append", ["snapshot-isolation"])
    assert r["valid"] == "unknown" and "gave up" in r["unknown_reason"]
    assert "cycle-search-timeout" in r["anomaly_types"]
    # a kind the models allow does not make the verdict unknown
    assert check(ops, "list-append", ["read-committed"])["valid"] is True


@pytest.mark.parametrize("workload, f", [("list-append", "append"), ("rw-register", "w")])
def test_a_value_written_twice_to_one_key_is_bad_input(workload: str, f: str) -> None:
    h = Hist()
    h.txn(0, [[f, "x", 1]])
    h.txn(1, [[f, "x", 1]], "fail")
    with pytest.raises(BadInput, match=r"op 2: .*(also in op 0|here and in op 0)"):
        check(h.ops, workload)


def test_through_the_runners_analysis_anomalies_read_as_every_checkers_do() -> None:
    from jepsen_py.analysis import count_anomalies, run_checkers, tally_anomalies

    ops = pattern("G1a", "list-append").ops
    results = run_checkers([ElleChecker("list-append", ["read-committed"])], None, ops)
    # the aborted read fails the run; that no dependency links the two is reported besides
    tally = tally_anomalies(results)
    assert results["valid"] is False and count_anomalies(results) == 2
    assert tally.failing == {"G1a": 1} and tally.reported == {"empty-transaction-graph": 1}
    (a,) = results["checkers"]["elle"]["anomalies"]
    assert a["kind"] == "G1a" and a["ops"] == [0, 1, 2, 3] and "failed" in a["explanation"]
    # read uncommitted allows the aborted read; with no dependency between the two transactions
    # nothing was checked for cycles, so the answer is unknown (Elle's empty-transaction-graph)
    results = run_checkers([ElleChecker("list-append", ["read-uncommitted"])], None, ops)
    assert results["valid"] == "unknown" and count_anomalies(results) == 2
    assert tally_anomalies(results).failing == {}
    other = results["checkers"]["elle"]["other_anomalies"]
    assert sorted(a["kind"] for a in other) == ["G1a", "empty-transaction-graph"]
