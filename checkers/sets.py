"""The set checker (Jepsen's set-full, per key): what reads of a grow-only set say about its adds.

Ops: `add` (value: the element) and `read` (ok value: every element of the set), on `key`.
For each acknowledged add and each ok read invoked after that add completed:

  lost         the element is missing from every such read (and there is at least one)
  stale-read   missing from some of them, present in a later one: a read that did not see a
               completed add (a linearizable set never does this; `linearizable=False` reports
               these without failing)
  unexpected   a read returned an element no add ever tried to add

Adds that ended info and were seen are counted as recovered; acknowledged adds never read
afterwards are counted as unverified (nothing can be said of them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from typing import Any

from jepsen_py.history import OK, Op, Pair, pairs
from jepsen_py.protocols import Test

MAX_ANOMALIES = 100


def hashable(v: Any) -> Hashable:
    if isinstance(v, list):
        return tuple(hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, hashable(x)) for k, x in v.items()))
    return v


class SetChecker:
    """Lost, stale and unexpected elements of a grow-only set, per key."""

    def __init__(self, *, name: str = "set", add_f: str = "add", read_f: str = "read",
                 linearizable: bool = True) -> None:
        self.name = name
        self.add_f = add_f
        self.read_f = read_f
        self.linearizable = linearizable

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        by_key: dict[Hashable, list[Pair]] = defaultdict(list)
        for p in pairs(op for op in history if isinstance(op.process, int)):
            if p.invoke.f in (self.add_f, self.read_f):
                by_key[hashable(p.invoke.key)].append(p)
        anomalies: list[dict[str, Any]] = []
        counts = {"acknowledged": 0, "lost": 0, "stale_reads": 0, "unexpected": 0, "recovered": 0,
                  "unverified": 0, "reads": 0}
        for key, ps in by_key.items():
            self._check_key(key, ps, anomalies, counts)
        bad = counts["lost"] + counts["unexpected"] + (counts["stale_reads"] if self.linearizable else 0)
        anomalies.sort(key=lambda a: a["ops"][0] if a["ops"] else -1)
        return {
            "valid": bad == 0,
            "keys": len(by_key),
            **counts,
            "anomalies": anomalies[:MAX_ANOMALIES],
            **({"anomalies_truncated": len(anomalies) - MAX_ANOMALIES}
               if len(anomalies) > MAX_ANOMALIES else {}),
        }

    def _check_key(self, key: Hashable, ps: list[Pair], anomalies: list[dict[str, Any]],
                   counts: dict[str, int]) -> None:
        adds = [p for p in ps if p.invoke.f == self.add_f]
        reads = [(p.invoke, p.complete) for p in ps
                 if p.invoke.f == self.read_f and p.complete is not None and p.complete.type == OK]
        counts["reads"] += len(reads)
        attempted = {hashable(p.invoke.value) for p in adds}
        seen_sets = [(inv, comp, {hashable(x) for x in (comp.value or [])}) for inv, comp in reads]
        ever_seen: set[Hashable] = set().union(*(s for _, _, s in seen_sets)) if seen_sets else set()
        for inv, comp, s in seen_sets:
            for x in sorted(s - attempted, key=repr):
                counts["unexpected"] += 1
                anomalies.append({"kind": "unexpected", "key": key, "ops": [inv.index, comp.index],
                                  "explanation": f"read of {key!r} returned {x!r}, which no add tried"})
        stale: dict[int, tuple[Op, Op, list[Hashable]]] = {}
        for p in adds:
            v = hashable(p.invoke.value)
            if p.type != OK:
                if v in ever_seen:
                    counts["recovered"] += 1
                continue
            counts["acknowledged"] += 1
            done = p.complete.index if p.complete is not None else -1
            later = [(inv, comp, s) for inv, comp, s in seen_sets if inv.index > done]
            if not later:
                counts["unverified"] += 1
                continue
            missing = [(inv, comp) for inv, comp, s in later if v not in s]
            if len(missing) == len(later):
                counts["lost"] += 1
                last_inv, last_comp = missing[-1]
                anomalies.append({
                    "kind": "lost", "key": key,
                    "ops": [p.invoke.index, done, last_inv.index, last_comp.index],
                    "explanation": f"add {v!r} to {key!r} was acknowledged (op {done}) but none of "
                                   f"the {len(later)} reads after it saw it"})
            else:
                for inv, comp in missing:
                    stale.setdefault(inv.index, (inv, comp, []))[2].append(v)
        for inv, comp, vs in stale.values():
            counts["stale_reads"] += 1
            shown = ", ".join(map(repr, vs[:5])) + (f" and {len(vs) - 5} more" if len(vs) > 5 else "")
            anomalies.append({
                "kind": "stale-read", "key": key, "ops": [inv.index, comp.index],
                "explanation": f"read of {key!r} (op {inv.index}) missed {shown}, acknowledged "
                               f"before it was invoked and seen by a later read"})
