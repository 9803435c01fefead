"""The set checker (Jepsen's set-full, per key): what reads of a grow-only set say about its adds.

Ops: `add` (value: the element) and `read` (ok value: every element of the set), on `key`. Each
element is followed over time (checkers.elements): stable, stale (stable, but missed by a read
invoked after it was known; how long), lost (known, then missed by every read invoked after the
last one that saw it, the final reads on every node included), never read. Anomalies:

  lost          fails: an element that was acknowledged or seen, then gone from every later read
  unexpected    fails: a read returned an element no add ever tried
  duplicate     fails: a read returned an element more than once (a set holds it once)
  aborted-read  fails: a read returned an element whose add failed (certainly not done)
  stale-read    fails only when `linearizable` (the default); `linearizable=False` reports it

Lost data fails the run whatever `linearizable` says. The verdict is "unknown" when nothing else
failed and no element at all is stable: no read confirmed any add, so nothing was verified (Jepsen's
set-full says the same; it is judged over every key at once, not per key, so a key that rotated out
with only a few reads does not make a correct run unknown). Adds that ended info and were seen are
counted as recovered.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from jepsen_py.checkers.anomalies import MAX_ANOMALIES, anomaly_report, hashable
from jepsen_py.checkers.elements import Tally, Timeline

from jepsen_py.history import INVOKE, OK, Op
from jepsen_py.protocols import Test

__all__ = ["MAX_ANOMALIES", "SetChecker", "hashable"]

#: Kinds that fail the run whatever `linearizable` says: data lost, invented, doubled or aborted.
ALWAYS_FAILING = frozenset({"lost", "unexpected", "duplicate", "aborted-read"})
#: Kinds only a linearizable set rules out.
STRICT_KINDS = frozenset({"stale-read"})


class SetChecker:
    """Lost, stale, duplicate, aborted and unexpected elements of a grow-only set, per key."""

    def __init__(self, *, name: str = "set", add_f: str = "add", read_f: str = "read",
                 linearizable: bool = True) -> None:
        self.name = name
        self.add_f = add_f
        self.read_f = read_f
        self.linearizable = linearizable

    def failing(self) -> frozenset[str]:
        return ALWAYS_FAILING | (STRICT_KINDS if self.linearizable else frozenset())

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        ops = [op for op in history if isinstance(op.process, int) and op.f in (self.add_f, self.read_f)]
        attempted: dict[Hashable, set[Hashable]] = defaultdict(set)
        for op in ops:
            if op.type == INVOKE and op.f == self.add_f:
                attempted[hashable(op.key)].add(hashable(op.value))
        timelines: dict[Hashable, Timeline] = defaultdict(Timeline)
        anomalies: list[dict[str, Any]] = []
        most: dict[tuple[Hashable, Hashable], tuple[int, Op, Op]] = {}
        reads = 0
        open_: dict[Any, Op] = {}
        for op in ops:
            if op.type == INVOKE:
                open_[op.process] = op
                if op.f == self.add_f:
                    timelines[hashable(op.key)].add_invoked(hashable(op.value), op)
                continue
            inv = open_.pop(op.process, None)
            if inv is None:
                continue
            key = hashable(inv.key)
            if inv.f == self.add_f:
                timelines[key].add_completed(hashable(inv.value), op)
            elif op.type == OK:
                reads += 1
                values = [hashable(x) for x in (op.value or [])]
                for x, n in Counter(values).items():
                    if n > 1 and ((key, x) not in most or n > most[(key, x)][0]):
                        most[(key, x)] = (n, inv, op)
                    if x not in attempted[key]:
                        anomalies.append({"kind": "unexpected", "key": key, "element": x,
                                          "ops": [inv.index, op.index],
                                          "explanation": f"read of {key!r} (op {inv.index}) returned "
                                                         f"{x!r}, which no add tried"})
                timelines[key].read(inv, op, set(values))
        for (key, x), (n, inv, comp) in most.items():
            anomalies.append({"kind": "duplicate", "key": key, "element": x, "ops": [inv.index, comp.index],
                              "explanation": f"read of {key!r} (op {inv.index}) returned {x!r} {n} "
                                             f"times; a set holds an element once"})
        tally = Tally()
        for key, timeline in timelines.items():
            tally.judge(key, timeline, "add")
        anomalies += tally.anomalies
        report = anomaly_report(anomalies, self.failing())
        counts = report["anomaly_counts"]
        return {
            **tally.verdict(report, f"{tally.attempts} adds tried, {reads} ok reads"),
            "keys": len(timelines),
            "reads": reads,
            **tally.counts(),
            "unexpected": counts.get("unexpected", 0),
            "duplicated": counts.get("duplicate", 0),
            **report,
        }
