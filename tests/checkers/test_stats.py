from __future__ import annotations

from jepsen_py.checkers.stats import StatsChecker

from tests.checkers.histories import H


def test_counts_per_f_and_overall():
    h = H()
    h.op(0, "commit", "k", 1, 0, 1)
    h.op(0, "commit", "k", 2, 2, 3, kind="fail", error="not_leader")
    h.op(0, "fetch", "k", None, 4, 5, result=2)
    h.op(0, "commit", "k", 3, 6, 7, kind="info", error="timeout")
    h.op(1, "fetch", "k", None, 8, None)  # never completed: info
    h.nemesis("start-partition", 0, 1, {"grudge": {}})
    h.sample(3, "n1", "leader", 1)
    r = StatsChecker().check(None, h.build())
    assert r["valid"] is True
    assert r["by_f"]["commit"] == {"count": 3, "ok": 1, "fail": 1, "info": 1, "ok_fraction": 0.3333}
    assert r["by_f"]["fetch"]["info"] == 1 and r["by_f"]["fetch"]["ok"] == 1
    assert (r["count"], r["ok"], r["fail"], r["info"]) == (5, 2, 1, 2)
    assert "status" not in r["by_f"] and "start-partition" not in r["by_f"]


def test_an_f_that_never_succeeds_is_a_finding():
    h = H()
    h.op(0, "fetch", "k", None, 0, 1, result=None)
    for i in range(3):
        h.op(0, "commit", "k", i, 2 + 2 * i, 3 + 2 * i, kind="fail", error="unavailable")
    r = StatsChecker().check(None, h.build())
    assert r["valid"] is False and r["never_ok"] == ["commit"]
    assert r["anomalies"][0]["kind"] == "never-ok" and "3 times" in r["anomalies"][0]["explanation"]
    assert StatsChecker(ignore_fs=frozenset({"commit"})).check(None, h.build())["valid"] is True


def test_no_client_ops_is_unknown():
    h = H()
    h.sample(0, "n1", "leader", 1)
    assert StatsChecker().check(None, h.build())["valid"] == "unknown"


def test_a_definite_answer_like_already_exists_shows_the_op_type_works():
    h = H()
    h.op(0, "create", "t", {}, 0, 1, kind="info", error="timeout")  # the create that won, unacknowledged
    h.op(1, "create", "t", {}, 2, 3, kind="fail", error="already_exists")
    h.op(1, "describe", "t", None, 4, 5, result={"name": "t"})
    r = StatsChecker().check(None, h.build())
    assert r["valid"] is True and r["never_ok"] == []
    h.op(1, "create", "u", {}, 6, 7, kind="fail", error="unavailable")
    assert StatsChecker(answers=frozenset()).check(None, h.build())["never_ok"] == ["create"]


def test_a_fail_whose_error_is_a_structure_is_counted_not_a_crash():
    """A Maelstrom node's definite error is recorded as its body ({"code": 22, ...})."""
    h = H()
    h.op(0, "write", "k", 1, 0, 1)
    h.op(0, "cas", "k", [2, 3], 2, 3, kind="fail", error={"code": 22, "name": "precondition-failed"})
    r = StatsChecker().check(None, h.build())
    assert r["by_f"]["cas"]["fail"] == 1 and r["never_ok"] == ["cas"]


def test_an_f_tried_only_while_a_fault_was_in_force_is_not_never_ok():
    # a create tried once, while every node was killed, timing out: unavailable during a fault
    h = H()
    h.op(0, "fetch", "k", None, 0, 1, result=None)
    h.nemesis("kill", 2, 2, {"nodes": ["n1"]})
    h.op(0, "create", "t", None, 3, 4, kind="info", error="timeout")
    h.nemesis("start", 5, 5, {"nodes": ["n1"]})
    h.op(1, "fetch", "k", None, 6, 7, result=None)
    r = StatsChecker().check(None, h.build())
    assert r["valid"] is True and r["never_ok"] == []
    # the same create refused again after the restart, with no fault in force: a finding
    h.op(1, "create", "t", None, 8, 9, kind="fail", error="unavailable")
    r = StatsChecker().check(None, h.build())
    assert r["valid"] is False and r["never_ok"] == ["create"]


def test_an_f_tried_once_just_after_a_full_restart_is_not_never_ok():
    # explore's correct build: every node killed, restarted, and one create tried 80 ms later, before
    # a leader existed; no fault was in force, but the system had not yet shown it served again
    h = H()
    h.op(0, "describe", "t", None, 0, 1, result=None)
    h.nemesis("kill", 1000, 1000, {"target": "all", "nodes": ["n1", "n2", "n3"]})
    h.op(1, "describe", "t", None, 1100, 1101, kind="fail", error="unavailable")
    h.nemesis("start", 2000, 2000, {"nodes": ["n1", "n2", "n3"]})
    h.op(2, "create", "t", {"partitions": 3, "rf": 3}, 2080, 2082, kind="fail", error="unavailable")
    h.op(1, "describe", "t", None, 2090, 2093, kind="fail", error="unavailable")
    h.op(1, "describe", "t", None, 2500, 2502, result=None)
    r = StatsChecker().check(None, h.build())
    assert r["valid"] is True and r["never_ok"] == []
    # once an op has succeeded after the restart the system is serving: a create refused then is one
    h.op(2, "create", "t", {"partitions": 3, "rf": 3}, 2600, 2601, kind="fail", error="unavailable")
    r = StatsChecker().check(None, h.build())
    assert r["valid"] is False and r["never_ok"] == ["create"]


def test_only_an_ok_after_the_fault_ended_shows_the_system_serves_again():
    # one node killed: the others serve meanwhile, but an ok during the fault proves nothing about
    # the moments right after the restart
    h = H()
    h.nemesis("kill", 0, 0, {"nodes": ["n1"]})
    h.op(0, "fetch", "k", None, 10, 11, result=None)
    h.nemesis("start", 20, 20, {"nodes": ["n1"]})
    h.op(1, "commit", "k", 1, 21, 22, kind="fail", error="unavailable")
    assert StatsChecker().check(None, h.build())["valid"] is True
    # a fault that overlaps the next one: the grace runs from the last end
    h.nemesis("pause", 30, 30, {"nodes": ["n2"]})
    h.op(0, "fetch", "k", None, 31, 32, result=None)
    h.nemesis("resume", 40, 40, {"nodes": ["n2"]})
    h.op(1, "commit", "k", 2, 41, 42, kind="fail", error="unavailable")
    assert StatsChecker().check(None, h.build())["valid"] is True
    h.op(0, "fetch", "k", None, 43, 44, result=None)
    h.op(1, "commit", "k", 3, 45, 46, kind="fail", error="unavailable")
    assert StatsChecker().check(None, h.build())["never_ok"] == ["commit"]


def test_with_no_fault_every_op_is_calm():
    # leader-on-follower's shape: commits refused from the first to the last while fetches succeed
    h = H()
    h.op(0, "commit", "k", 1, 0, 1, kind="fail", error="not_leader")
    for i in range(5):
        h.op(1, "fetch", "k", None, 2 + 2 * i, 3 + 2 * i, result=None)
    assert StatsChecker().check(None, h.build())["never_ok"] == ["commit"]


def test_an_op_refused_as_a_fault_began_during_it_is_not_refused_in_calm():
    # explore's correct build: a create invoked 1 ms before a kill of every node, refused as the
    # kill took effect; calm at its invocation, but a fault began before it completed
    h = H()
    h.op(0, "describe", "t", None, 0, 1, result=None)
    h.op(1, "create", "t", {"partitions": 3, "rf": 3}, 999, 1001, kind="fail", error="unavailable")
    h.nemesis("kill", 1000, 1000, {"target": "all", "nodes": ["n1", "n2", "n3"]})
    h.nemesis("start", 2000, 2000, {"nodes": ["n1", "n2", "n3"]})
    h.op(0, "describe", "t", None, 2500, 2502, result=None)
    assert StatsChecker().check(None, h.build())["never_ok"] == []
    # the same with a commit that times out across a pause, and one that never completes at all
    h.op(2, "create", "u", {"partitions": 1, "rf": 3}, 2999, 3500, kind="info", error="timeout")
    h.nemesis("pause", 3000, 3000, {"nodes": ["n1", "n2"]})
    h.op(3, "create", "v", {"partitions": 1, "rf": 3}, 3001, None)
    assert StatsChecker().check(None, h.build())["never_ok"] == []
    # a create refused while calm from its invocation to its completion is still a finding
    h.nemesis("resume", 4000, 4000, {"nodes": ["n1", "n2"]})
    h.op(0, "describe", "t", None, 4100, 4101, result=None)
    h.op(1, "create", "t", {"partitions": 3, "rf": 3}, 4200, 4201, kind="fail", error="unavailable")
    assert StatsChecker().check(None, h.build())["never_ok"] == ["create"]


def test_no_ok_client_op_at_all_is_invalid_even_under_faults():
    # every op refused while a fault was in force: the calm rule excuses each op type, but a run in
    # which not one client op succeeded tested nothing the other checkers could judge
    h = H()
    h.nemesis("start-partition", 0, 0, {"grudge": {}})
    h.op(0, "commit", "k", 1, 1, 2, kind="info", error="timeout")
    h.op(1, "fetch", "k", None, 3, 4, kind="fail", error="unavailable")
    h.nemesis("stop-partition", 5, 5)
    h.op(2, "commit", "k", 2, 6, 7, kind="info", error="timeout")
    r = StatsChecker().check(None, h.build())
    assert r["valid"] is False and r["never_ok"] == []
    assert [a["kind"] for a in r["anomalies"]] == ["no-ok"]
    assert r["anomalies"][0]["explanation"] == "none of the 3 client ops succeeded (1 fail, 2 info)"


def test_no_client_op_says_why_it_is_unknown():
    h = H()
    h.nemesis("start-partition", 0, 1, {"grudge": {}})
    r = StatsChecker().check(None, h.build())
    assert r["valid"] == "unknown" and r["reason"] == "no client op was attempted: nothing was tested"


def test_no_ok_is_not_said_twice_when_never_ok_already_fails_the_run():
    h = H()
    h.op(0, "commit", "k", 1, 0, 1, kind="fail", error="unavailable")
    r = StatsChecker().check(None, h.build())
    assert r["valid"] is False and r["never_ok"] == ["commit"]
    assert [a["kind"] for a in r["anomalies"]] == ["never-ok"]
