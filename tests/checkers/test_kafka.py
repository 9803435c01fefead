"""checkers.kafka on small hand-made histories: a correct one (crashed sends, sparse offsets, lagging
consumers and all) is valid; each of Jepsen's kafka anomalies is found and named."""

from __future__ import annotations

from jepsen_py.checkers.kafka import KafkaChecker

from tests.workloads.maelstrom.hist import H

FINAL = {"final": True}


def check(h: H) -> dict:
    return KafkaChecker().check(None, h.build())


def kinds(r: dict) -> set[str]:
    return {a["kind"] for a in r["anomalies"]}


def correct() -> H:
    """Two consumers on key "a" (sparse offsets 0, 2, 5), one crashed send never seen, one crashed
    send seen, commits advancing, a lagging consumer's lower commit ignored, final polls."""
    return (H()
            .op(0, "list_committed_offsets", ["a"], 0, 1, result={})
            .op(0, "send", 1, 2, 3, key="a", result=0)
            .op(1, "send", 2, 2, 4, key="a", result=2)
            .op(2, "send", 3, 5, 6, key="a", kind="info", result=None)  # crashed: maybe not in the log
            .op(3, "send", 4, 5, 6, key="a", kind="info", result=None)  # crashed, and in it (offset 5)
            .op(0, "poll", {"a": 0}, 7, 8, result={"a": [[0, 1], [2, 2]]})
            .op(0, "commit_offsets", {"a": 2}, 9, 10)
            .op(1, "poll", {"a": 0}, 9, 11, result={"a": [[0, 1]]})
            .op(1, "commit_offsets", {"a": 0}, 12, 13)  # lagging: below the committed 2
            .op(1, "list_committed_offsets", ["a"], 14, 15, result={"a": 2})
            .op(0, "poll", {"a": 3}, 14, 16, result={"a": [[5, 4]]})
            .op(0, "send", 5, 17, 18, key="a", kind="fail", result=None)
            .op(1, "poll", {"a": 1}, 19, 20, result={"a": [[2, 2], [5, 4]]}, meta=FINAL)
            .op(0, "poll", {"a": 6}, 19, 21, result={}, meta=FINAL))


def test_a_correct_history_is_valid() -> None:
    r = check(correct())
    assert r["valid"] is True, r["anomalies"]
    assert r["anomalies"] == [] and r["sends_acknowledged"] == 2 and r["final_polls"] == 2


def test_no_send_and_no_poll_is_unknown() -> None:
    r = check(H().op(0, "send", 1, 0, 1, key="a", kind="info", result=None))
    assert r["valid"] == "unknown"


def test_two_messages_at_one_offset_are_inconsistent_offsets() -> None:
    r = check(H().op(0, "send", 1, 0, 1, key="a", result=0)
              .op(1, "send", 2, 0, 2, key="a", result=0)
              .op(0, "poll", {"a": 0}, 3, 4, result={"a": [[0, 1]]}))
    assert r["valid"] is False and "inconsistent-offsets" in r["failing_kinds"]
    a = next(a for a in r["anomalies"] if a["kind"] == "inconsistent-offsets")
    assert a["key"] == "a" and a["offset"] == 0 and sorted(a["messages"]) == [1, 2]


def test_one_message_at_two_offsets_is_a_duplicate() -> None:
    r = check(H().op(0, "send", 1, 0, 1, key="a", result=0)
              .op(0, "poll", {"a": 0}, 2, 3, result={"a": [[0, 1], [1, 1]]}))
    assert r["failing_kinds"] == ["duplicate"], r["anomalies"]


def test_an_acknowledged_send_below_a_polled_offset_never_polled_is_lost() -> None:
    r = check(H().op(0, "send", 1, 0, 1, key="a", result=0)
              .op(0, "send", 2, 2, 3, key="a", result=1)
              .op(1, "poll", {"a": 1}, 4, 5, result={"a": [[1, 2]]}))
    assert r["failing_kinds"] == ["lost-write"], r["anomalies"]
    assert r["lost_count"] == 1 and r["anomalies"][0]["message"] == 1


def test_a_crashed_send_never_polled_is_not_lost() -> None:
    r = check(H().op(0, "send", 1, 0, 1, key="a", kind="info", result=None)
              .op(1, "send", 2, 2, 3, key="a", result=1)
              .op(1, "poll", {"a": 0}, 4, 5, result={"a": [[1, 2]]}, meta=FINAL))
    assert r["valid"] is True, r["anomalies"]


def test_unseen_fails_only_with_final_polls() -> None:
    base = H().op(0, "send", 1, 0, 1, key="a", result=0).op(0, "send", 2, 2, 3, key="a", result=1)
    during = check(H(list(base.events)).op(1, "poll", {"a": 0}, 4, 5, result={"a": [[0, 1]]}))
    assert during["valid"] is True and during["reported_kinds"] == ["unseen"]
    final = check(H(list(base.events)).op(1, "poll", {"a": 0}, 4, 5, result={"a": [[0, 1]]}, meta=FINAL))
    assert final["failing_kinds"] == ["unseen"] and final["unseen_count"] == 1


def test_a_consumer_jumping_over_an_existing_offset_is_a_poll_skip() -> None:
    r = check(H().op(0, "send", 1, 0, 1, key="a", result=0)
              .op(0, "send", 2, 1.5, 2, key="a", result=1)
              .op(0, "send", 3, 2.5, 3, key="a", result=2)
              .op(1, "poll", {"a": 0}, 4, 5, result={"a": [[0, 1]]})
              .op(1, "poll", {"a": 1}, 6, 7, result={"a": [[2, 3]]})
              .op(2, "poll", {"a": 0}, 8, 9, result={"a": [[0, 1], [1, 2], [2, 3]]}))
    assert r["failing_kinds"] == ["poll-skip"], r["anomalies"]
    assert r["anomalies"][0]["skipped"] == [1] and r["anomalies"][0]["process"] == 1


def test_a_poll_starting_past_the_offset_asked_for_is_a_poll_skip() -> None:
    r = check(H().op(0, "send", 1, 0, 1, key="a", result=0)
              .op(0, "send", 2, 1.5, 2, key="a", result=1)
              .op(1, "poll", {"a": 0}, 4, 5, result={"a": [[1, 2]]})
              .op(2, "poll", {"a": 0}, 6, 7, result={"a": [[0, 1], [1, 2]]}))
    assert r["failing_kinds"] == ["poll-skip"], r["anomalies"]


def test_a_consumer_going_back_is_a_nonmonotonic_poll() -> None:
    r = check(H().op(0, "send", 1, 0, 1, key="a", result=0)
              .op(0, "send", 2, 1.5, 2, key="a", result=1)
              .op(1, "poll", {"a": 0}, 4, 5, result={"a": [[0, 1], [1, 2]]})
              .op(1, "poll", {"a": 2}, 6, 7, result={"a": [[1, 2]]}))
    assert r["failing_kinds"] == ["nonmonotonic-poll"], r["anomalies"]


def test_within_one_poll_backwards_and_gaps_are_internal_anomalies() -> None:
    r = check(H().op(0, "send", 1, 0, 1, key="a", result=0)
              .op(0, "send", 2, 1.5, 2, key="a", result=1)
              .op(0, "send", 3, 2.5, 3, key="a", result=2)
              .op(1, "poll", {"a": 0}, 4, 5, result={"a": [[0, 1], [2, 3], [1, 2]]}))
    assert set(r["failing_kinds"]) == {"int-poll-skip", "int-nonmonotonic-poll"}, r["anomalies"]


def test_a_process_whose_later_send_gets_a_lower_offset_is_a_nonmonotonic_send() -> None:
    r = check(H().op(0, "send", 1, 0, 1, key="a", result=3)
              .op(0, "send", 2, 2, 3, key="a", result=1)
              .op(1, "poll", {"a": 0}, 4, 5, result={"a": [[1, 2], [3, 1]]}))
    assert r["failing_kinds"] == ["nonmonotonic-send"], r["anomalies"]


def test_a_polled_message_nobody_sent_is_unexpected_and_one_whose_send_failed_is_aborted() -> None:
    r = check(H().op(0, "send", 1, 0, 1, key="a", kind="fail", result=None)
              .op(1, "poll", {"a": 0}, 2, 3, result={"a": [[0, 1], [1, 99]]}))
    assert set(r["failing_kinds"]) == {"unexpected", "aborted-read"}, r["anomalies"]


def test_committed_offsets_going_back_or_beyond_the_log_are_caught() -> None:
    base = (H().op(0, "send", 1, 0, 1, key="a", result=0)
            .op(0, "send", 2, 1.5, 2, key="a", result=1)
            .op(1, "poll", {"a": 0}, 3, 4, result={"a": [[0, 1], [1, 2]]})
            .op(1, "commit_offsets", {"a": 1}, 5, 6))
    back = check(H(list(base.events)).op(1, "commit_offsets", {"a": 0}, 7, 8)
                 .op(1, "list_committed_offsets", ["a"], 9, 10, result={"a": 0}))
    assert back["failing_kinds"] == ["nonmonotonic-committed"], back["anomalies"]
    forgot = check(H(list(base.events)).op(1, "list_committed_offsets", ["a"], 9, 10, result={}))
    assert forgot["failing_kinds"] == ["nonmonotonic-committed"], forgot["anomalies"]
    beyond = check(H(list(base.events)).op(2, "list_committed_offsets", ["a"], 9, 10, result={"a": 7}))
    assert beyond["failing_kinds"] == ["committed-beyond-log"], beyond["anomalies"]
    invented = check(H(list(base.events)).op(2, "list_committed_offsets", ["a"], 9, 10, result={"a": 0}))
    assert invented["failing_kinds"] == ["unexpected-committed-offset"], invented["anomalies"]
