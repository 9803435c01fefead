"""The verdict line of a replay: the schedule's own anomaly kind makes "reproduced"; another kind that
test-all counts for the schedule's bug is said apart, never as a reproduction."""

from __future__ import annotations

from jepsen_py.explore.rerun import documented_kinds, replay_verdict
from jepsen_py.explore.schedule import Event, Schedule


def _schedule(bugs: list[str], anomaly: str = "unavailable") -> Schedule:
    return Schedule(workload="describe", nodes=["n1", "n2", "n3"], seed=1, time_limit=0.2, concurrency=1,
                    events=[Event(0.17, 0, "describe", key="desc-2", node="n1")], bugs=bugs, anomaly=anomaly)


def test_the_schedules_own_kind_is_a_reproduction() -> None:
    line = replay_verdict(_schedule(["unordered-send"]), {"unavailable": 1, "election-churn": 1},
                          {"unordered-send": ("election-churn", "unavailable")})
    assert line == "schedule anomaly unavailable: reproduced (election-churn, unavailable)"


def test_another_kind_test_all_counts_for_the_bug_is_said_apart() -> None:
    # unordered-send on Docker: the one read got through while a leader was briefly up, and the terms
    # churned all the while
    line = replay_verdict(_schedule(["unordered-send"]), {"election-churn": 1, "never-ok": 2},
                          {"unordered-send": ("election-churn", "unavailable")})
    assert line.startswith("schedule anomaly unavailable: not reproduced (election-churn, never-ok); ")
    assert line.endswith("the bug showed as election-churn (what test-all counts for unordered-send)")


def test_a_kind_the_bug_is_not_known_by_shows_nothing() -> None:
    documented = {"unordered-send": ("election-churn", "unavailable")}
    assert replay_verdict(_schedule(["unordered-send"]), {"never-ok": 1}, documented) == \
        "schedule anomaly unavailable: not reproduced (never-ok)"
    assert replay_verdict(_schedule(["unordered-send"]), {}, documented) == \
        "schedule anomaly unavailable: not reproduced (no anomalies)"
    # the correct build has no documented kinds: only its own kind counts
    assert replay_verdict(_schedule([]), {"election-churn": 1}, documented) == \
        "schedule anomaly unavailable: not reproduced (election-churn)"


def test_the_documented_kinds_are_test_alls() -> None:
    kinds = documented_kinds(["unordered-send", "recovery-duplicates"])
    assert set(kinds) == {"unordered-send", "recovery-duplicates"}
    assert "election-churn" in kinds["unordered-send"]
    assert "crash" in kinds["recovery-duplicates"]
    assert documented_kinds([]) == {}
