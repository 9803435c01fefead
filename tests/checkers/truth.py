"""Histories of known truth for the set and list-append checkers.

A history is a run of rounds. In each round every op is invoked before any completes (they are all
concurrent), and a round ends before the next begins (real-time order between rounds). Each
element is added in one round and has a *visibility*: whether the reads of each round from its own
on return it (all reads of a round agree). A correct store's visibility is: maybe in its own round,
then always (an info add: from some round on, or never; a failed add: never). Faults are other
visibilities: lost (gone from some round on), stale (missing for a few rounds after the add),
resurrected (gone, then back), aborted (a failed add that reads return).

`expected` says what each element is, from the rounds alone: the definition set-full states,
worked out at the grain of rounds rather than of history indices.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from jepsen_py.history import Op

MS = 1_000_000


@dataclass
class Element:
    key: str
    value: int
    round: int
    outcome: str  # ok | info | fail
    seen: list[bool]  # seen[i]: the reads of round `round + i` return it


@dataclass
class Plan:
    """Rounds of one history: its elements, how many reads each round has, and injected extras."""

    rounds: int
    reads_per_round: list[int]
    elements: list[Element]
    keys: list[str]
    unexpected: list[tuple[str, int, int, int]] = field(default_factory=list)  # key, round, read, value
    duplicated: list[tuple[str, int, int, int]] = field(default_factory=list)  # key, round, read, element


@dataclass
class Expected:
    stable: int = 0
    stale: int = 0
    lost: int = 0
    never_read: int = 0
    recovered: int = 0
    aborted_reads: int = 0
    stale_reads: int = 0


def fate(e: Element) -> str | None:
    """stable, stale, lost or never-read, by rounds; None for a failed add (judged only as aborted)."""
    if e.outcome == "fail":
        return None
    trues = [i for i, s in enumerate(e.seen) if s]
    falses = [i for i, s in enumerate(e.seen) if not s]
    known = 0 if e.outcome == "ok" else (trues[0] if trues else None)
    if known is None:
        return "never-read"
    last_t = max(trues, default=-1)
    last_f = max(falses, default=-1)
    if trues and last_f < last_t:
        return "stale" if last_f > known else "stable"
    if last_f > last_t and last_f > known:
        return "lost"
    return "never-read"


def expected(plan: Plan) -> Expected:
    out = Expected()
    stale_reads: set[tuple[str, int, int]] = set()
    for e in plan.elements:
        if e.outcome == "fail":
            out.aborted_reads += any(e.seen)
            continue
        if e.outcome == "info" and any(e.seen):
            out.recovered += 1
        f = fate(e)
        if f in ("stable", "stale"):
            out.stable += 1
        if f == "stale":
            out.stale += 1
            known = 0 if e.outcome == "ok" else e.seen.index(True)
            for i, s in enumerate(e.seen):
                if not s and i > known:
                    r = e.round + i
                    stale_reads |= {(e.key, r, j) for j in range(plan.reads_per_round[r])}
        elif f == "lost":
            out.lost += 1
        elif f == "never-read":
            out.never_read += 1
    out.stale_reads = len(stale_reads)
    return out


def history(plan: Plan, add_f: str, rng: random.Random, *, ordered: bool = False) -> list[Op]:
    """The plan's ops. Reads return the elements visible in their round: in add order when
    `ordered` (a list), shuffled otherwise (a set)."""
    ops: list[Op] = []
    process = 0
    for key in plan.keys:
        for r in range(plan.rounds):
            round_ops: list[tuple[int, str, Any, str, Any]] = []  # process, f, value, type, result
            for e in (e for e in plan.elements if e.key == key and e.round == r):
                round_ops.append((process, add_f, e.value, e.outcome, e.value))
                process += 1
            visible = [e.value for e in plan.elements
                       if e.key == key and e.round <= r and e.seen[r - e.round]]
            for j in range(plan.reads_per_round[r]):
                value = list(visible)
                if not ordered:
                    rng.shuffle(value)
                value += [x for k, rr, jj, x in plan.duplicated if (k, rr, jj) == (key, r, j)]
                value += [x for k, rr, jj, x in plan.unexpected if (k, rr, jj) == (key, r, j)]
                round_ops.append((process, "read", None, "ok", value))
                process += 1
            invokes = list(round_ops)
            rng.shuffle(invokes)
            completes = list(round_ops)
            rng.shuffle(completes)
            for p, f, value, _, _ in invokes:
                ops.append(Op(len(ops), len(ops) * MS, "invoke", p, f, key, value))
            for p, f, _, typ, result in completes:
                ops.append(Op(len(ops), len(ops) * MS, typ, p, f, key, result))
    return ops
