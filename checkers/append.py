"""The list-append checker (Jepsen's list-append, one key per op): what reads of append-only lists
say about the appends.

Ops: `append` (value: an element, unique per key) and `read` (ok value: the key's whole list), on
`key`. Per key:

  incompatible-order  two reads where neither is a prefix of the other: the list was not one
                      sequence that grew at its end
  duplicate           a read holding an element twice
  unexpected          a read holding an element no append tried
  lost                an acknowledged append missing from every read invoked after it completed
                      (and there is at least one)
  stale-read          a read missing an append that completed before it and that a later read saw
  realtime-order      an append that completed before another began, yet comes after it in the
                      list

The last two hold only for linearizable (strict serializable) systems: `linearizable=False`
reports them without failing.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from jepsen_py.checkers.sets import MAX_ANOMALIES, hashable

from jepsen_py.history import OK, Op, Pair, pairs
from jepsen_py.protocols import Test

INF = float("inf")
STRICT_KINDS = frozenset({"stale-read", "realtime-order"})


class AppendChecker:
    """Prefix consistency, no lost, duplicate or invented elements, and (strict) real-time order."""

    def __init__(self, *, name: str = "append", append_f: str = "append", read_f: str = "read",
                 linearizable: bool = True) -> None:
        self.name = name
        self.append_f = append_f
        self.read_f = read_f
        self.linearizable = linearizable

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        by_key: dict[Hashable, list[Pair]] = defaultdict(list)
        for p in pairs(op for op in history if isinstance(op.process, int)):
            if p.invoke.f in (self.append_f, self.read_f):
                by_key[hashable(p.invoke.key)].append(p)
        anomalies: list[dict[str, Any]] = []
        reads = acknowledged = 0
        for key, ps in by_key.items():
            r, a = self._check_key(key, ps, anomalies)
            reads += r
            acknowledged += a
        kinds: dict[str, int] = defaultdict(int)
        for a in anomalies:
            kinds[a["kind"]] += 1
        failing = [k for k in kinds if self.linearizable or k not in STRICT_KINDS]
        anomalies.sort(key=lambda a: a["ops"][0] if a["ops"] else -1)
        return {
            "valid": not failing,
            "keys": len(by_key),
            "reads": reads,
            "acknowledged": acknowledged,
            "anomaly_counts": dict(kinds),
            "anomalies": anomalies[:MAX_ANOMALIES],
            **({"anomalies_truncated": len(anomalies) - MAX_ANOMALIES}
               if len(anomalies) > MAX_ANOMALIES else {}),
        }

    def _check_key(self, key: Hashable, ps: list[Pair], out: list[dict[str, Any]]) -> tuple[int, int]:
        appends = [p for p in ps if p.invoke.f == self.append_f]
        reads: list[tuple[Op, Op, list[Hashable]]] = [
            (p.invoke, p.complete, [hashable(x) for x in (p.complete.value or [])])
            for p in ps if p.invoke.f == self.read_f and p.complete is not None and p.complete.type == OK]
        by_value = {hashable(p.invoke.value): p for p in appends}

        def add(kind: str, ops: list[int], explanation: str) -> None:
            out.append({"kind": kind, "key": key, "ops": ops, "explanation": explanation})

        for inv, comp, xs in reads:
            seen: set[Hashable] = set()
            for x in xs:
                if x in seen:
                    add("duplicate", [inv.index, comp.index], f"read of {key!r} holds {x!r} twice: {xs}")
                seen.add(x)
                if x not in by_value:
                    add("unexpected", [inv.index, comp.index],
                        f"read of {key!r} holds {x!r}, which no append tried")
        # Prefix consistency: sorted by length, each read is a prefix of the next.
        ordered = sorted(reads, key=lambda r: (len(r[2]), r[0].index))
        for (i1, c1, a), (i2, c2, b) in itertools.pairwise(ordered):
            if b[:len(a)] != a:
                at = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
                add("incompatible-order", [i1.index, c1.index, i2.index, c2.index],
                    f"reads of {key!r} disagree at position {at}: {a[at]!r} (op {i1.index}) vs "
                    f"{b[at]!r} (op {i2.index}); neither list is a prefix of the other")
        acknowledged = self._lost_and_stale(key, appends, reads, add)
        if ordered:
            self._realtime(key, ordered[-1], by_value, add)
        return len(reads), acknowledged

    def _lost_and_stale(self, key: Hashable, appends: list[Pair], reads: list[tuple[Op, Op, list[Hashable]]],
                        add: Any) -> int:
        sets = [(inv, comp, set(xs)) for inv, comp, xs in reads]
        stale: dict[int, tuple[Op, Op, list[Hashable]]] = {}
        acknowledged = 0
        for p in appends:
            if p.type != OK or p.complete is None:
                continue
            acknowledged += 1
            v = hashable(p.invoke.value)
            done = p.complete.index
            later = [r for r in sets if r[0].index > done]
            missing = [r for r in later if v not in r[2]]
            if later and len(missing) == len(later):
                add("lost", [p.invoke.index, done, missing[-1][0].index, missing[-1][1].index],
                    f"append {v!r} to {key!r} was acknowledged (op {done}) but none of the "
                    f"{len(later)} reads after it saw it")
            else:
                for inv, comp, _ in missing:
                    stale.setdefault(inv.index, (inv, comp, []))[2].append(v)
        for inv, comp, vs in stale.values():
            shown = ", ".join(map(repr, vs[:5])) + (f" and {len(vs) - 5} more" if len(vs) > 5 else "")
            add("stale-read", [inv.index, comp.index],
                f"read of {key!r} (op {inv.index}) missed {shown}, acknowledged before it was "
                f"invoked and seen by a later read")
        return acknowledged

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
