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
