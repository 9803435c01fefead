"""The zombie-leader report on hand-written histories (times in ms)."""

from __future__ import annotations

from jepsen_py.checkers.staleness import StalenessChecker, TopicsProjection

from tests.checkers.histories import H

K = "g1/orders/0"


def check(h: H) -> dict:
    return StalenessChecker().check(None, h.build())


def test_stale_read_right_after_leader_change_is_found_and_attributed_to_the_zombie():
    h = H()
    h.sample(0, "n1", "leader", 1, "n1")
    h.op(0, "commit", K, 1, 10, 20, node="n1", role="leader", term=1)
    # n1 is cut off; n2 wins term 2 and takes a write of 2.
    h.sample(300, "n2", "leader", 2, "n2")
    h.sample(301, "n1", "leader", 1, "n1")
    h.op(1, "commit", K, 2, 310, 330, node="n2", role="leader", term=2)
    # The old leader still answers a read with the old value, after the write of 2 completed.
    h.op(2, "fetch", K, None, 400, 405, result=1, node="n1", role="leader", term=1)
    r = check(h)
    assert r["valid"] is False
    assert r["stale_count"] == 1 and r["zombie_count"] == 1
    s = r["stale_reads"][0]
    assert (s["node"], s["role"], s["term"]) == ("n1", "leader", 1)
    assert s["value"] == 1 and s["expected_at_least"] == 2 and s["versions_behind"] == 1
    assert s["newer_leader"]["node"] == "n2" and s["newer_leader"]["term"] == 2
    assert s["deposed_leader"] is True and r["deposed_leader_count"] == 1
    assert s["stale_for_ms"] == 70.0  # write of 2 done at 330, read began at 400
    assert r["longest_stale_window_ms"] == 75.0  # 330 .. 405
    assert r["by_node"]["n1"]["count"] == 1 and r["by_node"]["n1"]["zombie"] == 1
    a = r["anomalies"][0]
    assert a["kind"] == "stale-read" and "n1" in a["explanation"] and "term 2" in a["explanation"]


def test_read_concurrent_with_the_overwriting_write_is_not_stale():
    h = H()
    h.op(0, "commit", K, 1, 0, 10)
    h.op(1, "commit", K, 2, 20, 50)
    h.op(2, "fetch", K, None, 40, 60, result=1, node="n1", role="leader", term=1)  # began before 50
    r = check(h)
    assert r["valid"] is True and r["stale_count"] == 0 and r["reads_checked"] == 1


def test_writes_concurrent_with_each_other_are_not_ordered():
    # Write 1 and write 2 overlap: either order is legal, so reading 1 after both is fine.
    h = H()
    h.op(0, "commit", K, 1, 0, 30)
    h.op(1, "commit", K, 2, 10, 20)
    h.op(2, "fetch", K, None, 40, 45, result=1, node="n1", role="leader", term=1)
    assert check(h)["valid"] is True


def test_info_write_of_the_value_read_may_land_late_so_the_read_is_not_stale():
    h = H()
    h.op(0, "commit", K, 1, 0, 10, kind="info", error="timeout")  # may take effect at any time
    h.op(1, "commit", K, 2, 20, 30)
    h.op(2, "fetch", K, None, 40, 45, result=1, node="n2", role="follower", term=1)
    assert check(h)["valid"] is True


def test_info_write_never_counts_as_an_overwriter():
    h = H()
    h.op(0, "commit", K, 1, 0, 10)
    h.op(1, "commit", K, 2, 20, 30, kind="info", error="timeout")  # may never have happened
    h.op(2, "commit", K, 3, 25, None)  # never completed: same
    h.op(3, "fetch", K, None, 40, 45, result=1, node="n1", role="leader", term=1)
    assert check(h)["valid"] is True


def test_failed_writes_are_ignored_and_versions_behind_counts_ordered_overwrites():
    h = H()
    h.op(0, "commit", K, 1, 0, 10)
    h.op(1, "commit", K, 2, 20, 30)
    h.op(1, "commit", K, 3, 40, 50)
    h.op(1, "commit", K, 4, 60, 70, kind="fail", error="not_leader")
    h.op(2, "fetch", K, None, 80, 85, result=1, node="n3", role="follower", term=2)
    r = check(h)
    assert r["stale_count"] == 1
    s = r["stale_reads"][0]
    assert s["versions_behind"] == 2 and s["expected_at_least"] == 3 and s["role"] == "follower"
    assert s["zombie"] is False  # a follower serving its own state is stale, but not a zombie leader
    assert s["deposed_leader"] is False


def test_reading_nothing_after_an_acknowledged_commit_is_stale():
    h = H()
    h.op(0, "commit", K, 7, 0, 10)
    h.op(1, "fetch", K, None, 20, 25, result=None, node="n2", role="leader", term=1)
    r = check(h)
    assert r["stale_count"] == 1 and r["stale_reads"][0]["value"] is None


def test_reading_the_newest_value_and_other_keys_are_independent():
    h = H()
    h.op(0, "commit", K, 1, 0, 10)
    h.op(0, "commit", "g1/orders/1", 5, 12, 15)
    h.op(1, "commit", K, 2, 20, 30)
    h.op(2, "fetch", K, None, 40, 45, result=2, node="n1", role="leader", term=1)
    h.op(2, "fetch", "g1/orders/1", None, 50, 55, result=5, node="n1", role="leader", term=1)
    r = check(h)
    assert r["valid"] is True and r["reads_checked"] == 2


def test_stale_windows_merge_per_node_and_the_longest_is_reported():
    h = H()
    h.op(0, "commit", K, 1, 0, 10)
    h.op(0, "commit", K, 2, 20, 30)
    for i, t in enumerate((100, 200, 300)):
        h.op(10 + i, "fetch", K, None, t, t + 5, result=1, node="n1", role="leader", term=1)
    h.op(20, "fetch", K, None, 150, 160, result=1, node="n4", role="follower", term=1)
    r = check(h)
    assert r["stale_count"] == 4
    assert r["by_node"]["n1"]["longest_stale_window_ms"] == 275.0  # 30 .. 305
    assert r["by_node"]["n4"]["longest_stale_window_ms"] == 130.0  # 30 .. 160
    assert r["longest_stale_window_ms"] == 275.0


def test_topics_a_describe_that_misses_an_acknowledged_topic_is_stale():
    h = H()
    h.op(0, "create", "t1", {"partitions": 3}, 0, 10)
    h.op(1, "describe", "t1", None, 20, 25, result=None, node="n2", role="leader", term=1)
    h.op(1, "list", None, None, 30, 35, result=[], node="n2", role="leader", term=1)
    h.op(2, "describe", "t1", None, 5, 15, result=None, node="n1", role="leader", term=1)  # concurrent
    h.op(3, "list", None, None, 40, 45, result=["t1"], node="n1", role="leader", term=1)
    r = StalenessChecker(TopicsProjection()).check(None, h.build())
    assert r["stale_count"] == 2
    assert all(s["node"] == "n2" and s["value"] is None for s in r["stale_reads"])
    assert sorted(s["read_invoked"] for s in r["stale_reads"]) == [20_000_000, 30_000_000]


def test_a_deposed_leader_that_stepped_down_but_still_serves_is_named():
    # CheckQuorum made n1 step down (pre-candidate) yet local reads still answer from its old state.
    h = H()
    h.sample(0, "n1", "leader", 1, "n1")
    h.op(0, "commit", K, 1, 10, 20, node="n1", role="leader", term=1)
    h.sample(500, "n1", "pre-candidate", 1, None)
    h.sample(600, "n3", "leader", 2, "n3")
    h.op(1, "commit", K, 2, 610, 620, node="n3", role="leader", term=2)
    h.op(2, "fetch", K, None, 700, 702, result=1, node="n1", role="pre-candidate", term=1)
    r = check(h)
    s = r["stale_reads"][0]
    assert s["zombie"] is False and s["deposed_leader"] is True
    assert r["by_node"]["n1"]["deposed_leader"] == 1 and r["by_node"]["n1"]["roles"] == {"pre-candidate": 1}
    assert "deposed leader" in r["anomalies"][0]["explanation"]
