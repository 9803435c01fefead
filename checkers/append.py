"""The list-append checker (Jepsen's list-append, one key per op): what reads of append-only lists
say about the appends.

Ops: `append` (value: an element, unique per key) and `read` (ok value: the key's whole list), on
`key`. Per key:

  incompatible-order  fails: two reads where neither is a prefix of the other: the list was not one
                      sequence that grew at its end
  duplicate           fails: a read holding an element twice
  unexpected          fails: a read holding an element no append tried
  lost                fails: an element that was acknowledged or seen, then missing from every
                      read invoked after the last one that saw it (checkers.elements, as the set
                      checker follows elements); an append that ended info is checked as soon as
                      a read saw it
  aborted-read        fails: a read holding the element of an append that failed (certainly not
                      done): Elle's G1a
  stale-read          a read invoked after an element was known that missed it, the element being
                      seen by every read after that one
  realtime-order      an append that completed before another began, yet comes after it in the
                      list

Only the last two are excused by `linearizable=False` (a system that is serializable but not
strict); every other kind fails the run, as lost data does whatever `linearizable` says. The
verdict is "unknown" when nothing failed and no element was ever confirmed by a read.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jepsen_py.checkers.anomalies import anomaly_report, hashable
from jepsen_py.checkers.elements import Tally, Timeline

from jepsen_py.history import INVOKE, OK, Op, Pair
from jepsen_py.protocols import Test

INF = float("inf")
STRICT_KINDS = frozenset({"stale-read", "realtime-order"})
ALWAYS_FAILING = frozenset({"incompatible-order", "duplicate", "unexpected", "lost", "aborted-read"})

Read = tuple[Op, Op, list[Hashable]]


@dataclass
class _Key:
    """One key's appends (by element), ok reads and element timeline, in history order."""

    appends: dict[Hashable, Pair] = field(default_factory=dict)
    reads: list[Read] = field(default_factory=list)
    timeline: Timeline = field(default_factory=Timeline)


class AppendChecker:
    """Prefix consistency, no lost, duplicate, aborted or invented elements, and (strict) real-time
    order."""

    def __init__(self, *, name: str = "append", append_f: str = "append", read_f: str = "read",
                 linearizable: bool = True) -> None:
        self.name = name
        self.append_f = append_f
        self.read_f = read_f
        self.linearizable = linearizable

    def failing(self) -> frozenset[str]:
        return ALWAYS_FAILING | (STRICT_KINDS if self.linearizable else frozenset())

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        keys: dict[Hashable, _Key] = defaultdict(_Key)
        open_: dict[Any, Op] = {}
        for op in history:
            if not isinstance(op.process, int) or op.f not in (self.append_f, self.read_f):
                continue
            if op.type == INVOKE:
                open_[op.process] = op
                if op.f == self.append_f:
                    k = keys[hashable(op.key)]
                    v = hashable(op.value)
                    k.appends[v] = Pair(op, None)
                    k.timeline.add_invoked(v, op)
                continue
            inv = open_.pop(op.process, None)
            if inv is None:
                continue
            k = keys[hashable(inv.key)]
            if inv.f == self.append_f:
                v = hashable(inv.value)
                k.appends[v].complete = op
                k.timeline.add_completed(v, op)
            elif op.type == OK:
                xs = [hashable(x) for x in (op.value or [])]
                k.reads.append((inv, op, xs))
                k.timeline.read(inv, op, set(xs))
        anomalies: list[dict[str, Any]] = []
        tally = Tally()
        for key, k in keys.items():
            self._check_key(key, k, anomalies)
            tally.judge(key, k.timeline, "append")
        anomalies += tally.anomalies
        report = anomaly_report(anomalies, self.failing())
        return {
            **tally.verdict(report, f"{tally.attempts} appends tried"),
            "keys": len(keys),
            "reads": sum(len(k.reads) for k in keys.values()),
            **tally.counts(),
            **report,
        }

    def _check_key(self, key: Hashable, k: _Key, out: list[dict[str, Any]]) -> None:
        by_value = k.appends

        def add(kind: str, ops: list[int], explanation: str) -> None:
            out.append({"kind": kind, "key": key, "ops": ops, "explanation": explanation})

        for inv, comp, xs in k.reads:
            seen: set[Hashable] = set()
            for x in xs:
                if x in seen:
                    add("duplicate", [inv.index, comp.index], f"read of {key!r} holds {x!r} twice: {xs}")
                seen.add(x)
                if x not in by_value:
                    add("unexpected", [inv.index, comp.index],
                        f"read of {key!r} holds {x!r}, which no append tried")
        # Prefix consistency: sorted by length, each read is a prefix of the next.
        ordered = sorted(k.reads, key=lambda r: (len(r[2]), r[0].index))
        for (i1, c1, a), (i2, c2, b) in itertools.pairwise(ordered):
            if b[:len(a)] != a:
                at = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
                add("incompatible-order", [i1.index, c1.index, i2.index, c2.index],
                    f"reads of {key!r} disagree at position {at}: {a[at]!r} (op {i1.index}) vs "
                    f"{b[at]!r} (op {i2.index}); neither list is a prefix of the other")
        if ordered:
            self._realtime(key, ordered[-1], by_value, add)

    def _realtime(self, key: Hashable, longest: tuple[Op, Op, list[Hashable]], by_value: dict[Hashable, Pair],
                  add: Any) -> None:
        """In the longest read, no element may follow one whose append began after it completed."""
        xs = [x for x in dict.fromkeys(longest[2]) if x in by_value]
        done = [by_value[x].complete.index if by_value[x].type == OK and by_value[x].complete is not None
                else INF for x in xs]
        # suffix[i]: the earliest completion among elements at positions >= i, and which one.
        suffix: list[tuple[float, int]] = [(INF, -1)] * (len(xs) + 1)
        for i in range(len(xs) - 1, -1, -1):
            suffix[i] = min(suffix[i + 1], (done[i], i))
        for i, x in enumerate(xs):
            earliest, j = suffix[i + 1]
            began = by_value[x].invoke.index
            if earliest < began:
                y = xs[j]
                add("realtime-order", [by_value[y].invoke.index, int(earliest), began, longest[0].index],
                    f"in {key!r}, {y!r} comes after {x!r}, yet its append completed (op {int(earliest)}) "
                    f"before the append of {x!r} began (op {began})")
