"""Each element's life across the reads of one key, as Jepsen's set-full follows it, shared by the
set and list-append checkers.

An element enters when its add (or append) is invoked. It is *known* from the completion of its ok
add or of the first read that saw it, whichever came first. Every ok read completed after the add
began either saw it or missed it; what counts is the last read (by invocation) that saw it and the
last that missed it:

  stable      some read saw it, and every read invoked after the last miss saw it
  stale       stable, but a read invoked after it was known missed it (for how long: from known
              to the last miss); a linearizable system never does this
  lost        known, and the last miss was invoked after it was known and after the last read
              that saw it: it was there (or acknowledged) and then every later read missed it
  never-read  neither: no read invoked after it was known settles it (a read concurrent with the
              add may miss it, having taken effect first)

Stale and lost are judged by history order (invocation and completion indices), which is exact;
times only say how long. An add that ended info and was seen is *recovered*; it can still be lost
afterwards, like an acknowledged one. An add that failed (certainly not done) and was seen is an
aborted read, Elle's G1a, and is judged as that alone.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

from jepsen_py.history import FAIL, OK, Op

STABLE = "stable"
LOST = "lost"
NEVER_READ = "never-read"
QUANTILES = (0.0, 0.5, 0.95, 0.99, 1.0)
WORST_STALE = 8


@dataclass(slots=True)
class Element:
    """One element of one key and what the reads said of it."""

    value: Hashable
    add: Op
    add_done: Op | None = None
    known: Op | None = None
    last_present: Op | None = None
    last_absent: Op | None = None
    missed_after_known: list[Op] = field(default_factory=list)

    @property
    def add_type(self) -> str | None:
        return None if self.add_done is None else self.add_done.type


@dataclass(frozen=True, slots=True)
class Fate:
    """What an element's reads make of it; `ms` is how long it was stale, or how long after it was
    known it was last seen before being lost."""

    outcome: str
    stale: bool = False
    ms: float = 0.0


def _ms(later: Op, earlier: Op) -> float:
    return max(0.0, (later.time - earlier.time) / 1e6)


def fate(e: Element) -> Fate:
    """The element's outcome, by the rules in the module docstring."""
    present = e.last_present.index if e.last_present is not None else -1
    absent = e.last_absent.index if e.last_absent is not None else -1
    if e.last_present is not None and absent < present:
        assert e.known is not None  # a read that saw it made it known
        stale = e.last_absent is not None and absent > e.known.index
        return Fate(STABLE, stale, _ms(e.last_absent, e.known) if stale and e.last_absent else 0.0)
    if e.known is not None and e.last_absent is not None and present < absent and e.known.index < absent:
        return Fate(LOST, False, _ms(e.last_present, e.known) if e.last_present is not None else 0.0)
    return Fate(NEVER_READ)


class Timeline:
    """The elements of one key, fed the key's ops in history order."""

    def __init__(self) -> None:
        self.elements: dict[Hashable, Element] = {}

    def add_invoked(self, value: Hashable, op: Op) -> None:
        self.elements[value] = Element(value, op)

    def add_completed(self, value: Hashable, op: Op) -> None:
        e = self.elements.get(value)
        if e is None:
            return
        e.add_done = op
        if op.type == OK and e.known is None:
            e.known = op

    def read(self, invoke: Op, complete: Op, seen: set[Hashable]) -> None:
        """An ok read, invoked at `invoke`, completed at `complete`, returning `seen`."""
        for v, e in self.elements.items():
            if v in seen:
                if e.known is None:
                    e.known = complete
                if e.last_present is None or e.last_present.index < invoke.index:
                    e.last_present = invoke
            else:
                if e.last_absent is None or e.last_absent.index < invoke.index:
                    e.last_absent = invoke
                if e.known is not None and invoke.index > e.known.index:
                    e.missed_after_known.append(invoke)


@dataclass
class Tally:
    """Counts and anomalies over every key's elements."""

    attempts: int = 0
    acknowledged: int = 0
    stable: int = 0
    lost: int = 0
    stale: int = 0
    stale_reads: int = 0
    never_read: int = 0
    recovered: int = 0
    aborted_reads: int = 0
    stale_ms: list[float] = field(default_factory=list)
    lost_ms: list[float] = field(default_factory=list)
    worst_stale: list[dict[str, Any]] = field(default_factory=list)
    anomalies: list[dict[str, Any]] = field(default_factory=list)

    def judge(self, key: Hashable, timeline: Timeline, noun: str) -> None:
        """Classifies every element of `key`; `noun` names the op that adds one ("add", "append")."""
        stale_reads: set[int] = set()
        for e in timeline.elements.values():
            self.attempts += 1
            if e.add_type == OK:
                self.acknowledged += 1
            if e.add_type == FAIL:
                if e.last_present is not None:
                    self._aborted(key, e, noun)
                continue
            if e.add_type != OK and e.last_present is not None:
                self.recovered += 1
            f = fate(e)
            if f.outcome == STABLE:
                self.stable += 1
                if f.stale:
                    self.stale += 1
                    self.stale_ms.append(f.ms)
                    stale_reads.update(r.index for r in e.missed_after_known)
                    self._stale(key, e, f, noun)
            elif f.outcome == LOST:
                self.lost += 1
                self.lost_ms.append(f.ms)
                self._lost(key, e, f, noun)
            else:
                self.never_read += 1
        self.stale_reads += len(stale_reads)

    def _how(self, key: Hashable, e: Element, noun: str) -> str:
        where = f"{noun} of {e.value!r} to {key!r} (op {e.add.index})"
        if e.add_type == OK:
            assert e.add_done is not None
            return f"{where} was acknowledged at op {e.add_done.index}"
        assert e.known is not None
        ended = "ended info" if e.add_done is not None else "never completed"
        return f"{where} {ended}; a read completed at op {e.known.index} saw it"

    def _lost(self, key: Hashable, e: Element, f: Fate, noun: str) -> None:
        assert e.known is not None and e.last_absent is not None
        after = e.last_present.index if e.last_present is not None else e.known.index
        missed = _reads(len([r for r in e.missed_after_known if r.index > after]))
        if e.last_present is not None:
            seen = (f"the last read to see it was op {e.last_present.index} ({f.ms:.1f} ms after it "
                    f"was known), and all {missed} invoked after that missed it")
        else:
            seen = f"no read saw it, and all {missed} invoked after it was known missed it"
        ops = [e.add.index, e.known.index, *([e.last_present.index] if e.last_present else []),
               e.last_absent.index]
        self.anomalies.append({
            "kind": LOST, "key": key, "element": e.value, "ops": sorted(set(ops)),
            "explanation": f"{self._how(key, e, noun)}; {seen}, the last op {e.last_absent.index}"})

    def _stale(self, key: Hashable, e: Element, f: Fate, noun: str) -> None:
        assert e.known is not None and e.last_absent is not None
        first = e.missed_after_known[0]
        n = len(e.missed_after_known)
        record = {
            "kind": "stale-read", "key": key, "element": e.value, "stale_ms": round(f.ms, 3),
            "ops": sorted({e.add.index, e.known.index, first.index, e.last_absent.index}),
            "explanation": f"{self._how(key, e, noun)}, yet {_reads(n)} invoked after op "
                           f"{e.known.index} missed it (first op {first.index}, last op "
                           f"{e.last_absent.index}); every read invoked after op "
                           f"{e.last_absent.index} saw it: stale for {f.ms:.1f} ms"}
        self.anomalies.append(record)
        self.worst_stale.append(record)
        self.worst_stale.sort(key=lambda r: -r["stale_ms"])
        del self.worst_stale[WORST_STALE:]

    def _aborted(self, key: Hashable, e: Element, noun: str) -> None:
        assert e.add_done is not None and e.last_present is not None
        self.aborted_reads += 1
        self.anomalies.append({
            "kind": "aborted-read", "key": key, "element": e.value,
            "ops": [e.add.index, e.add_done.index, e.last_present.index],
            "explanation": f"{noun} of {e.value!r} to {key!r} (op {e.add.index}) failed at op "
                           f"{e.add_done.index}, certainly not done, yet read op "
                           f"{e.last_present.index} saw it (G1a, an aborted read)"})

    def verdict(self, report: dict[str, Any], tried: str) -> dict[str, Any]:
        """The verdict from an anomaly report: invalid on a failing kind; unknown, as set-full
        says, when no element was ever confirmed by a read (nothing could be verified); `tried`
        says what the attempts were, for the reason."""
        valid = not report["failing_kinds"]
        if valid and self.stable == 0:
            return {"valid": "unknown", "unknown_reason": "no element was confirmed by a read: nothing "
                                                          f"could be verified ({tried})"}
        return {"valid": valid}

    def counts(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "attempts": self.attempts, "acknowledged": self.acknowledged, "stable": self.stable,
            "lost": self.lost, "stale": self.stale, "stale_reads": self.stale_reads,
            "never_read": self.never_read, "recovered": self.recovered,
            "aborted_reads": self.aborted_reads,
        }
        if self.stale_ms:
            out["stale_ms"] = quantiles(self.stale_ms)
            out["worst_stale"] = [{k: r[k] for k in ("key", "element", "stale_ms", "ops")}
                                  for r in self.worst_stale]
        if self.lost_ms:
            out["lost_after_ms"] = quantiles(self.lost_ms)
        return out


def _reads(n: int) -> str:
    return f"{n} read" + ("" if n == 1 else "s")


def quantiles(xs: Iterable[float]) -> dict[str, float]:
    """Jepsen's frequency distribution: the value at each of QUANTILES, in ms."""
    s = sorted(xs)
    return {str(q): round(s[min(len(s) - 1, int(len(s) * q))], 3) for q in QUANTILES}
