from __future__ import annotations

from jepsen_py.checkers.leaders import LeadersChecker
from jepsen_py.checkers.topics import TopicsChecker

from tests.checkers.histories import H


def desc(epoch: int, leader: str, name: str = "desc-0") -> dict:
    return {"name": name, "partitions": [{"partition": 0, "leader": leader, "leader_epoch": epoch},
                                         {"partition": 1, "leader": leader, "leader_epoch": epoch}]}


def test_agreeing_describes_across_a_leader_move_are_valid():
    h = H()
    h.op(0, "describe", "desc-0", None, 0, 5, result=desc(1, "n1"), node="n1", role="leader", term=1)
    h.op(1, "describe", "desc-0", None, 1, 6, result=desc(1, "n1"), node="n2", role="follower", term=1)
    h.op(2, "describe", "desc-0", None, 10, 15, result=desc(2, "n3"), node="n3", role="leader", term=2)
    h.op(3, "describe", "desc-0", None, 12, 14, result=desc(1, "n1"), node="n4", role="follower", term=1)
    h.op(0, "describe", "desc-0", None, 20, 25, result=desc(2, "n3"), node="n1", role="follower", term=2)
    r = LeadersChecker().check(None, h.build())
    assert r["valid"] is True and r["describes_checked"] == 5 and r["partitions_seen"] == 2


def test_two_leaders_for_one_epoch_is_a_split_leader():
    h = H()
    h.op(0, "describe", "desc-0", None, 0, 5, result=desc(2, "n1"), node="n1", role="leader", term=2)
    h.op(1, "describe", "desc-0", None, 0, 5, result=desc(2, "n4"), node="n4", role="leader", term=2)
    r = LeadersChecker().check(None, h.build())
    assert r["valid"] is False and r["split_leader_count"] == 2  # both partitions
    assert r["anomalies"][0]["kind"] == "split-leader" and "n1, n4" in r["anomalies"][0]["explanation"]


def test_an_older_epoch_after_a_newer_one_was_read_is_stale_and_attributed():
    h = H()
    h.op(0, "describe", "desc-0", None, 0, 5, result=desc(3, "n2"), node="n2", role="leader", term=3)
    h.op(1, "describe", "desc-0", None, 10, 12, result=desc(2, "n1"), node="n1", role="leader", term=2)
    r = LeadersChecker().check(None, h.build())
    assert r["valid"] is False and r["epoch_regression_count"] == 2
    reg = r["epoch_regressions"][0]
    got = (reg["node"], reg["role"], reg["term"], reg["epoch"], reg["newer_epoch"])
    assert got == ("n1", "leader", 2, 2, 3)
    assert r["epoch_regressions_by_node"] == {"n1": 2}


def test_duplicate_create_is_named_with_both_servers():
    h = H()
    h.op(0, "create", "topic-1", {"partitions": 1, "rf": 3}, 0, 5, node="n1", role="leader", term=2)
    h.op(1, "create", "topic-1", {"partitions": 1, "rf": 3}, 1, 6, node="n4", role="leader", term=2)
    h.op(2, "create", "topic-2", {"partitions": 1, "rf": 3}, 1, 6, node="n1", role="leader", term=2)
    h.op(3, "create", "topic-2", {"partitions": 1, "rf": 3}, 2, 7, kind="fail", error="already_exists")
    r = TopicsChecker().check(None, h.build())
    assert r["valid"] is False and r["duplicate_creates"] == 1 and r["names_created"] == 2
    assert r["already_exists_answers"] == 1
    a = r["anomalies"][0]
    assert a["kind"] == "duplicate-create" and "n1" in a["explanation"] and "n4" in a["explanation"]
