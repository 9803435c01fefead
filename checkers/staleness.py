"""The zombie-leader report: ok reads that returned a value already overwritten before the read began.

Linearizability says *whether* a history is wrong; this says *who* served the stale data, how stale
it was, and whether the server was a deposed leader that kept answering (KAFKA-15489's failure, and
what `--read-mode local` does by design). A read r of value v on key k is stale when some ok write w'
of another value completed before r was invoked, and every write that could have produced v (ok or
info, plus the initial state when v is the initial value) had already completed before w' was
invoked: then w' is ordered after every source of v in real time, so v was no longer current when r
began. The test is conservative on purpose:

- an info (or never completed) write may take effect at any moment after its invocation, so a read of
  its value is never called stale (it may have landed late) and it never counts as an overwriter
  (it may never have landed at all);
- concurrent writes are not ordered: "versions behind" counts only writes that are provably after
  every source of v and provably before r.

What counts as a write or a read is a `Projection`, so the same report covers offsets (a register per
(group, topic, partition)) and topics (absent -> present per name).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from jepsen_py.checkers.samples import leader_claims, newer_leader_before

from jepsen_py.history import FAIL, NEMESIS, OK, Op, Pair, pairs
from jepsen_py.protocols import Test

INFINITY = float("inf")
# Keep results.json readable for long runs: every stale read is counted, the first ones are listed.
MAX_LISTED = 200


@dataclass(frozen=True, slots=True)
class Write:
    key: Hashable
    value: Any
    invoke_time: int
    complete_time: float  # INFINITY when the write may still land (info / never completed)
    ok: bool
    index: int


class Projection(Protocol):
    """How a workload's ops look as writes and reads of registers."""

    initial: Any

    def write(self, p: Pair) -> tuple[Hashable, Any] | None:
        """(key, value) when the pair is a write (whatever its outcome), else None."""

    def reads(self, p: Pair, keys: set[Hashable]) -> list[tuple[Hashable, Any]]:
        """(key, value) observations made by an ok read (one read may observe many keys)."""


class OffsetsProjection:
    """offsets workload: "commit" writes the offset, "fetch" reads it (None: nothing committed)."""

    initial: Any = None

    def __init__(self, write_f: str = "commit", read_f: str = "fetch") -> None:
        self.write_f = write_f
        self.read_f = read_f

    def write(self, p: Pair) -> tuple[Hashable, Any] | None:
        if p.invoke.f != self.write_f:
            return None
        return _hashable(p.invoke.key), p.invoke.value

    def reads(self, p: Pair, keys: set[Hashable]) -> list[tuple[Hashable, Any]]:
        if p.invoke.f != self.read_f or p.complete is None:
            return []
        return [(_hashable(p.invoke.key), p.complete.value)]


PRESENT = "present"


class TopicsProjection:
    """topics workload: a topic name is a register that starts absent (None) and becomes present.

    "create" ok is the write; "describe" ok observes one name (value None when not found); "list" ok
    observes every name the history ever tried to create (those missing from the list read absent).
    """

    initial: Any = None

    def write(self, p: Pair) -> tuple[Hashable, Any] | None:
        if p.invoke.f != "create":
            return None
        return _hashable(p.invoke.key), PRESENT

    def reads(self, p: Pair, keys: set[Hashable]) -> list[tuple[Hashable, Any]]:
        c = p.complete
        if c is None:
            return []
        if p.invoke.f == "describe":
            return [(_hashable(p.invoke.key), None if c.value is None else PRESENT)]
        if p.invoke.f == "list" and isinstance(c.value, list | tuple | set | frozenset):
            listed = {_hashable(n) for n in c.value}
            return [(k, PRESENT if k in listed else None) for k in keys]
        return []


class _KeyWrites:
    """One key's writes, indexed: by value (the sources of a read) and ok ones by invocation time."""

    def __init__(self, ws: list[Write]) -> None:
        self.by_value: dict[Hashable, list[Write]] = defaultdict(list)
        for w in ws:
            self.by_value[_hashable(w.value)].append(w)
        self.ok = sorted((w for w in ws if w.ok), key=lambda w: w.invoke_time)
        self.ok_invokes = [w.invoke_time for w in self.ok]


def _hashable(x: Any) -> Hashable:
    if isinstance(x, list):
        return tuple(_hashable(i) for i in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in x.items()))
    return x


def _ms(ns: float) -> float:
    return round(ns / 1e6, 3)


class StalenessChecker:
    """Finds stale reads and attributes each to the node, role and term that served it."""

    def __init__(self, projection: Projection | None = None, name: str = "staleness") -> None:
        self.projection: Projection = projection or OffsetsProjection()
        self.name = name

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        proj = self.projection
        ps = [p for p in pairs(history) if isinstance(p.invoke.process, int)]
        writes: dict[Hashable, list[Write]] = defaultdict(list)
        for p in ps:
            w = proj.write(p)
            if w is None or p.type == FAIL:
                continue
            key, value = w
            done = p.complete.time if p.type == OK and p.complete is not None else INFINITY
            writes[key].append(Write(key, value, p.invoke.time, done, p.type == OK, p.invoke.index))
        keys = set(writes)
        index = {k: _KeyWrites(ws) for k, ws in writes.items()}
        empty = _KeyWrites([])
        claims = leader_claims(history)

        stale: list[dict[str, Any]] = []
        reads_checked = 0
        unwritten = 0
        for p in ps:
            if p.type != OK:
                continue
            for key, value in proj.reads(p, keys):
                reads_checked += 1
                finding = self._judge(key, value, p, index.get(key, empty), proj.initial, claims)
                if finding is None:
                    continue
                if finding == "unwritten":
                    unwritten += 1
                else:
                    stale.append(finding)

        # After the last fault was healed and the last write was invoked, nothing is in flight and
        # nothing is cut off: a stale read then is an acknowledged write the cluster lost.
        fault_ends = [op.time for op in history if op.process == NEMESIS and op.type != "invoke"]
        settled = None
        if fault_ends:
            write_invokes = [w.invoke_time for ws in writes.values() for w in ws]
            settled = max([*fault_ends, *write_invokes])
        for s in stale:
            s["lost"] = settled is not None and s["read_invoked"] > settled
        return self._report(stale, reads_checked, unwritten)

    @staticmethod
    def _judge(key: Hashable, value: Any, p: Pair, kw: _KeyWrites, initial: Any,
               claims: list[Any]) -> dict[str, Any] | str | None:
        assert p.complete is not None
        r_inv, r_done = p.invoke.time, p.complete.time
        sources = kw.by_value.get(_hashable(value), [])
        if value == initial:
            sources_done: float = -1.0 if not sources else max(w.complete_time for w in sources)
        elif not sources:
            return "unwritten"  # a value nobody wrote: the linearizability checker's business
        else:
            sources_done = max(w.complete_time for w in sources)
        if sources_done == INFINITY:
            return None  # an info write of this value may have landed at any time: not provably stale
        # Overwriters are invoked after sources_done and completed (hence invoked) before r_inv.
        lo = bisect.bisect_right(kw.ok_invokes, sources_done)
        hi = bisect.bisect_left(kw.ok_invokes, r_inv)
        over = [w for w in kw.ok[lo:hi] if w.value != value and w.complete_time < r_inv]
        if not over:
            return None
        stale_since = min(w.complete_time for w in over)
        c = p.complete
        role = c.meta.get("role") if c.meta else None
        term = c.meta.get("term") if c.meta else None
        node = c.node
        newer = None
        led_term = False
        if isinstance(term, int) and not isinstance(term, bool):
            newer = newer_leader_before(claims, term, r_done, not_node=None)
            led_term = any(c.term == term and c.node == node and c.time <= r_done for c in claims)
        latest = max(over, key=lambda w: w.complete_time)
        return {
            "key": key if not isinstance(key, tuple) else list(key),
            "read": [p.invoke.index, c.index],
            "value": value,
            "expected_at_least": latest.value,
            "overwritten_by": sorted(w.index for w in over),
            "versions_behind": len(over),
            "stale_since": int(stale_since),
            "read_invoked": r_inv,
            "read_completed": r_done,
            "stale_for_ms": _ms(r_inv - stale_since),
            "node": node,
            "role": role,
            "term": term,
            "leader_hint": c.meta.get("leader") if c.meta else None,
            "newer_leader": None if newer is None else {
                "node": newer.node, "term": newer.term, "seen_ms": _ms(newer.time), "op": newer.index},
            "zombie": role == "leader" and newer is not None,
            # It led the term it answered in, and someone else leads a newer one: a deposed leader
            # still serving (whatever it now calls itself: leader, pre-candidate, candidate).
            "deposed_leader": led_term and newer is not None,
        }

    def _report(self, stale: list[dict[str, Any]], reads_checked: int, unwritten: int) -> dict[str, Any]:
        by_node: dict[str, dict[str, Any]] = {}
        intervals: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for s in stale:
            node = str(s["node"])
            b = by_node.setdefault(node, {"count": 0, "zombie": 0, "deposed_leader": 0, "roles": {},
                                          "terms": set(), "max_versions_behind": 0})
            b["count"] += 1
            b["zombie"] += 1 if s["zombie"] else 0
            b["deposed_leader"] += 1 if s["deposed_leader"] else 0
            b["roles"][str(s["role"])] = b["roles"].get(str(s["role"]), 0) + 1
            if s["term"] is not None:
                b["terms"].add(s["term"])
            b["max_versions_behind"] = max(b["max_versions_behind"], s["versions_behind"])
            intervals[node].append((s["stale_since"], s["read_completed"]))
        longest = 0
        for node, ivs in intervals.items():
            w = _longest_union(ivs)
            by_node[node]["longest_stale_window_ms"] = _ms(w)
            by_node[node]["terms"] = sorted(by_node[node]["terms"])
            longest = max(longest, w)
        anomalies = [
            {
                "kind": "lost-commit" if s.get("lost") else "stale-read",
                "ops": [*s["read"], *s["overwritten_by"][:5]],
                "explanation": (
                    ("after every fault was healed, " if s.get("lost") else "")
                    + f"{s['node']} ({s['role']}, term {s['term']}"
                    + (", deposed leader" if s["deposed_leader"] else "")
                    + f") returned {s['value']!r} for "
                    f"{s['key']!r}, {s['versions_behind']} version(s) behind: overwritten "
                    f"{s['stale_for_ms']} ms before the read began"
                    + (f"; {s['newer_leader']['node']} already led term {s['newer_leader']['term']}"
                       if s["newer_leader"] else "")
                ),
            }
            for s in stale[:MAX_LISTED]
        ]
        return {
            "valid": not stale,
            "reads_checked": reads_checked,
            "stale_count": len(stale),
            "zombie_count": sum(1 for s in stale if s["zombie"]),
            "lost_commit_count": sum(1 for s in stale if s.get("lost")),
            "deposed_leader_count": sum(1 for s in stale if s["deposed_leader"]),
            "longest_stale_window_ms": _ms(longest),
            "max_versions_behind": max((s["versions_behind"] for s in stale), default=0),
            "max_stale_for_ms": max((s["stale_for_ms"] for s in stale), default=0.0),
            "reads_of_unwritten_values": unwritten,
            "by_node": by_node,
            "stale_reads": stale[:MAX_LISTED],
            "anomalies": anomalies,
        }


def _longest_union(ivs: list[tuple[int, int]]) -> int:
    """Length of the longest stretch covered by the union of the intervals."""
    best = 0
    cur_s: int | None = None
    cur_e = 0
    for s, e in sorted(ivs):
        if cur_s is None or s > cur_e:
            if cur_s is not None:
                best = max(best, cur_e - cur_s)
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_s is not None:
        best = max(best, cur_e - cur_s)
    return best


__all__ = ["OffsetsProjection", "Projection", "StalenessChecker", "TopicsProjection"]
