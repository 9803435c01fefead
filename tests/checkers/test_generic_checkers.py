"""The set, list-append and queue checkers on small hand-written histories: each anomaly kind is
found where it is and only there."""

from __future__ import annotations

from typing import Any

from jepsen_py.checkers.append import AppendChecker
from jepsen_py.checkers.queues import QueueChecker
from jepsen_py.checkers.sets import SetChecker

from jepsen_py.history import Op


class H:
    """Builds a history: `op(process, f, key, value, result, type)` appends invoke + completion;
    `invoke` and `complete` split them for concurrency."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def invoke(self, p: int, f: str, key: Any, value: Any = None) -> int:
        self.ops.append(Op(len(self.ops), len(self.ops), "invoke", p, f, key, value))
        return len(self.ops) - 1

    def complete(self, p: int, f: str, key: Any, value: Any = None, typ: str = "ok") -> int:
        self.ops.append(Op(len(self.ops), len(self.ops), typ, p, f, key, value))
        return len(self.ops) - 1

    def op(self, p: int, f: str, key: Any, value: Any = None, result: Any = None, typ: str = "ok") -> None:
        self.invoke(p, f, key, value)
        self.complete(p, f, key, value if result is None else result, typ)


def kinds(r: dict[str, Any]) -> list[str]:
    return sorted(a["kind"] for a in r["anomalies"])


def test_set_valid_lost_stale_unexpected() -> None:
    h = H()
    h.op(0, "add", "s", 1)
    h.op(0, "add", "s", 2)
    h.op(1, "read", "s", None, [1, 2])
    assert SetChecker().check(None, h.ops)["valid"] is True
    h.op(0, "add", "s", 3)
    h.op(1, "read", "s", None, [1, 2])      # misses 3, seen later: stale
    h.op(1, "read", "s", None, [1, 2, 3, 99])  # 99 never added
    h.op(0, "add", "s", 4)
    h.op(1, "read", "s", None, [1, 2, 3])   # 4 never seen again: lost
    r = SetChecker().check(None, h.ops)
    assert r["valid"] is False
    assert kinds(r) == ["lost", "stale-read", "unexpected"]
    assert r["lost"] == 1 and r["stale_reads"] == 1 and r["unexpected"] == 1


def test_set_info_adds_seen_count_as_recovered_not_unexpected() -> None:
    h = H()
    h.op(0, "add", "s", 1, typ="info")
    h.op(1, "read", "s", None, [1])
    r = SetChecker().check(None, h.ops)
    assert r["valid"] is True and r["recovered"] == 1


def test_append_prefixes_pass_and_diverging_reads_fail() -> None:
    h = H()
    for v in (1, 2, 3):
        h.op(0, "append", "l", v)
        h.op(1, "read", "l", None, list(range(1, v + 1)))
    assert AppendChecker().check(None, h.ops)["valid"] is True
    h.op(2, "read", "l", None, [1, 3, 2])
    r = AppendChecker().check(None, h.ops)
    assert "incompatible-order" in kinds(r) and r["valid"] is False


def test_append_duplicates_unexpected_lost_and_realtime_order() -> None:
    h = H()
    h.op(0, "append", "l", 1)
    h.op(0, "append", "l", 2)
    h.op(1, "read", "l", None, [2, 1, 1, 7])
    r = AppendChecker().check(None, h.ops)
    assert set(kinds(r)) == {"duplicate", "unexpected", "realtime-order"}
    h2 = H()
    h2.op(0, "append", "k", 1)
    h2.op(1, "read", "k", None, [])
    r2 = AppendChecker().check(None, h2.ops)
    assert kinds(r2) == ["lost"]


def test_append_concurrent_appends_may_land_in_either_order() -> None:
    h = H()
    h.invoke(0, "append", "l", 1)
    h.invoke(1, "append", "l", 2)
    h.complete(0, "append", "l", 1)
    h.complete(1, "append", "l", 2)
    h.op(2, "read", "l", None, [2, 1])
    assert AppendChecker().check(None, h.ops)["valid"] is True


def test_append_stale_read_fails_only_when_linearizable() -> None:
    h = H()
    h.op(0, "append", "l", 1)
    h.op(1, "read", "l", None, [])
    h.op(1, "read", "l", None, [1])
    assert kinds(AppendChecker().check(None, h.ops)) == ["stale-read"]
    assert AppendChecker(linearizable=False).check(None, h.ops)["valid"] is True


def test_queue_lost_duplicated_unexpected() -> None:
    h = H()
    h.op(0, "enqueue", "q", 1)
    h.op(0, "enqueue", "q", 2)
    h.op(1, "dequeue", "q", None, 1)
    h.op(1, "dequeue", "q", None, None)
    assert QueueChecker().check(None, h.ops)["valid"] is False  # 2 lost
    h.op(1, "dequeue", "q", None, 2)
    assert QueueChecker().check(None, h.ops)["valid"] is True
    h.op(1, "dequeue", "q", None, 2)
    h.op(1, "dequeue", "q", None, 5)
    r = QueueChecker().check(None, h.ops)
    assert kinds(r) == ["duplicated", "unexpected"]


# Outside systems (async replication, follower reads): what the checkers must call each case.

def seen_once_then_gone(f: str, key: str, typ: str = "ok", nodes: int = 3) -> H:
    """An add that one read saw, then missing from every later read, final reads on every node."""
    h = H()
    h.op(0, f, key, 1, typ=typ)
    h.op(1, "read", key, None, [1])
    for n in range(nodes):
        h.op(2 + n, "read", key, None, [])
    return h


def test_set_element_seen_then_missing_from_every_later_read_is_lost_not_stale() -> None:
    h = seen_once_then_gone("add", "s")
    for linearizable in (True, False):
        r = SetChecker(linearizable=linearizable).check(None, h.ops)
        assert kinds(r) == ["lost"], r
        assert r["valid"] is False and r["lost"] == 1 and r["stale"] == 0
        assert r["failing_kinds"] == ["lost"]


def test_set_lost_explanation_names_the_earlier_read_that_saw_it() -> None:
    r = SetChecker().check(None, seen_once_then_gone("add", "s").ops)
    text = r["anomalies"][0]["explanation"]
    assert "the last read to see it was op 2" in text and "all 3 reads invoked after that missed it" in text


def test_set_stale_element_is_seen_by_every_later_read() -> None:
    h = H()
    h.op(0, "add", "s", 1)          # ops 0, 1
    h.op(1, "read", "s", None, [])  # ops 2, 3: misses 1
    h.op(1, "read", "s", None, [1])
    r = SetChecker().check(None, h.ops)
    assert kinds(r) == ["stale-read"] and r["stale"] == 1 and r["stale_reads"] == 1
    assert "every read invoked after op 2 saw it" in r["anomalies"][0]["explanation"]
    weak = SetChecker(linearizable=False).check(None, h.ops)
    assert weak["valid"] is True and weak["reported_kinds"] == ["stale-read"] and weak["failing_kinds"] == []


def test_append_element_seen_then_missing_is_lost_whatever_linearizable_says() -> None:
    h = seen_once_then_gone("append", "l")
    for linearizable in (True, False):
        r = AppendChecker(linearizable=linearizable).check(None, h.ops)
        assert kinds(r) == ["lost"] and r["valid"] is False, r


def test_info_add_or_append_seen_once_then_gone_is_lost() -> None:
    for checker, f in ((SetChecker(), "add"), (AppendChecker(), "append")):
        r = checker.check(None, seen_once_then_gone(f, "k", typ="info").ops)
        assert kinds(r) == ["lost"] and r["valid"] is False and r["recovered"] == 1, (f, r)


def test_set_read_with_a_duplicate_element_fails() -> None:
    h = H()
    h.op(0, "add", "s", 1)
    h.op(0, "add", "s", 2)
    h.op(1, "read", "s", None, [1, 2, 1])
    for linearizable in (True, False):
        r = SetChecker(linearizable=linearizable).check(None, h.ops)
        assert kinds(r) == ["duplicate"] and r["valid"] is False and r["duplicated"] == 1


def test_set_with_no_verified_element_is_unknown() -> None:
    h = H()
    h.op(0, "add", "s", 1)
    h.op(0, "add", "s", 2, typ="info")
    r = SetChecker().check(None, h.ops)
    assert r["valid"] == "unknown" and r["never_read"] == 2
    assert "nothing could be verified" in r["unknown_reason"]
    h.op(1, "read", "s", None, [1])
    assert SetChecker().check(None, h.ops)["valid"] is True


def test_append_read_of_a_failed_append_is_an_aborted_read() -> None:
    h = H()
    h.op(0, "append", "l", 1)
    h.op(0, "append", "l", 2, typ="fail")
    h.op(1, "read", "l", None, [1, 2])
    for linearizable in (True, False):
        r = AppendChecker(linearizable=linearizable).check(None, h.ops)
        assert kinds(r) == ["aborted-read"] and r["valid"] is False and r["aborted_reads"] == 1, r
        assert "G1a" in r["anomalies"][0]["explanation"]


def test_queue_duplicates_fail_by_default_and_are_reported_when_at_least_once() -> None:
    h = H()
    h.op(0, "enqueue", "q", 1)
    h.op(1, "dequeue", "q", None, 1)
    h.op(1, "dequeue", "q", None, 1)
    h.op(1, "dequeue", "q", None, None)
    strict = QueueChecker().check(None, h.ops)
    assert strict["valid"] is False and strict["failing_kinds"] == ["duplicated"]
    loose = QueueChecker(exactly_once=False).check(None, h.ops)
    assert loose["valid"] is True and loose["reported_kinds"] == ["duplicated"] and loose["duplicated"] == 1
    h.op(0, "enqueue", "q", 2)
    h.op(0, "enqueue", "q", 3, typ="fail")
    h.op(1, "dequeue", "q", None, 3)
    h.op(1, "dequeue", "q", None, None)
    r = QueueChecker(exactly_once=False).check(None, h.ops)
    assert r["failing_kinds"] == ["aborted-read", "lost"] and r["lost"] == 1 and r["valid"] is False


def test_reported_only_anomalies_never_crowd_out_failing_ones() -> None:
    h = H()
    for v in range(150):                       # 150 stale elements, reported only
        h.op(0, "add", "s", v)
        h.op(1, "read", "s", None, list(range(v)))
    h.op(0, "add", "s", 999)                   # one lost element, last in the history
    h.op(1, "read", "s", None, list(range(150)))
    r = SetChecker(linearizable=False).check(None, h.ops)
    assert r["anomaly_counts"] == {"lost": 1, "stale-read": 150}
    assert r["valid"] is False and len(r["anomalies"]) == 100 and r["anomalies_truncated"] == 51
    assert "lost" in kinds(r)
