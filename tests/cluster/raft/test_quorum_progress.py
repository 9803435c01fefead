"""Majority arithmetic and per-peer flow control."""

from __future__ import annotations

import pytest
from jepsen_py.cluster.raft.progress import PROBE, REPLICATE, SNAPSHOT, Inflights, Progress
from jepsen_py.cluster.raft.quorum import (
    VOTE_LOST,
    VOTE_PENDING,
    VOTE_WON,
    committed_index,
    quorum_active,
    vote_result,
)


@pytest.mark.parametrize(
    ("matches", "want"),
    [({"a": 5}, 5), ({"a": 5, "b": 3, "c": 1}, 3), ({"a": 5, "b": 5, "c": 1, "d": 1}, 1),
     ({"a": 9, "b": 7, "c": 5, "d": 3, "e": 1}, 5), ({"a": 9, "b": 7}, 7)],
)
def test_committed_index_is_the_majority_match(matches, want):
    assert committed_index(sorted(matches), matches) == want


def test_missing_voters_count_as_zero():
    assert committed_index(["a", "b", "c"], {"a": 4}) == 0


def test_vote_results():
    v = ["a", "b", "c", "d", "e"]
    assert vote_result(v, {"a": True, "b": True}) == VOTE_PENDING
    assert vote_result(v, {"a": True, "b": True, "c": True}) == VOTE_WON
    assert vote_result(v, {"a": True, "b": False, "c": False, "d": False}) == VOTE_LOST
    assert quorum_active(["a", "b", "c"], {"a", "c"}) and not quorum_active(["a", "b", "c"], {"a"})


def test_inflights_window():
    f = Inflights(3)
    for i in (2, 4, 6):
        f.add(i)
    assert f.full()
    with pytest.raises(RuntimeError):
        f.add(8)
    f.free_le(4)
    assert f.count() == 1 and not f.full()


def test_progress_state_machine():
    pr = Progress(match=0, next=5, inflights=Inflights(4))
    assert pr.state == PROBE and not pr.is_paused()
    assert not pr.maybe_decr_to(3, 0)  # stale rejection: not the probe we sent (next - 1 == 4)
    assert pr.maybe_decr_to(4, 1) and pr.next == 2
    assert pr.maybe_update(3) and pr.match == 3 and pr.next == 4
    assert not pr.maybe_update(2)  # an old acknowledgement changes nothing
    pr.become_replicate()
    pr.optimistic_update(9)
    assert pr.state == REPLICATE and pr.next == 10
    assert not pr.maybe_decr_to(2, 0)  # rejection below match: stale
    assert pr.maybe_decr_to(7, 0) and pr.next == 4
    pr.become_snapshot(20)
    assert pr.state == SNAPSHOT and pr.is_paused()
    pr.become_probe()
    assert pr.next == 21
