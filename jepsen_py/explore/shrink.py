"""Shrinking a failing schedule to a small one that still fails with the same anomaly kind.

As hypothesis does, shrinking tries smaller candidates and keeps any that still fail, pass after
pass, until a whole round changes nothing or the budget ends. The passes: first what makes every
later attempt cheaper (less time to replay), then in order of what a reader of the result cares
about most:

  1. time:        end the main phase earlier (a quarter, half, three quarters of it, or just after
                  the last fault op; shortest first), so every later attempt replays less;
  2. faults:      drop fault windows (a start with the stop that ends it), all at once first, then
                  halves, quarters, ... down to single windows (delta debugging), then time again;
  3. nodes:       fewer nodes (ops sent to a node that no longer exists go with it), never fewer
                  than the workload's recorded ops need (Schedule.min_nodes): a create of three
                  copies on one node fails for a reason of its own, not the one found;
  4. clients:     drop every op of a worker, workers renumbered;
  5. keys:        drop every op on a key, in the main phase and the final reads;
  6. client ops:  drop runs of client ops (delta debugging, down to chunks of a few ops).

`fails(candidate)` runs the candidate (in simulation: deterministic) and says whether it shows the
kind. The budget counts both attempts and wall seconds; what was reached when it ends is returned.
`passes` narrows the passes: a real backend replays a schedule in kind (the workload's own clients
beside its faults), so there only time, faults and nodes mean anything (FAULT_PASSES).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from jepsen_py.explore.schedule import Event, Schedule, fault_windows, renumber_threads

T = TypeVar("T")

PASSES: tuple[str, ...] = ("time", "faults", "nodes", "clients", "keys", "client-ops")
# what a replay in kind keeps of a schedule: its faults, their timing, its nodes
FAULT_PASSES: tuple[str, ...] = ("time", "faults", "nodes")


@dataclass
class ShrinkResult:
    schedule: Schedule
    attempts: int
    accepted: int
    exhausted: bool  # the budget ran out before a round changed nothing
    # every schedule that failed, in the order it was found to: the first is the one given, the
    # last is `schedule`
    path: list[Schedule] = field(default_factory=list)


class _Budget(Exception):
    pass


class Shrinker:
    def __init__(self, fails: Callable[[Schedule], bool], *, max_attempts: int = 200,
                 budget_s: float = 120.0, min_chunk: int = 4,
                 clock: Callable[[], float] = time.monotonic, passes: Sequence[str] = PASSES) -> None:
        unknown = [p for p in passes if p not in PASSES]
        if unknown:
            raise ValueError(f"unknown shrink passes {unknown} (known: {', '.join(PASSES)})")
        self.passes = tuple(passes)
        self.fails = fails
        self.max_attempts = max_attempts
        self.deadline = clock() + budget_s
        self.clock = clock
        self.min_chunk = min_chunk
        self.attempts = 0
        self.accepted = 0
        self.path: list[Schedule] = []

    def _try(self, candidate: Schedule) -> bool:
        if self.attempts >= self.max_attempts or self.clock() >= self.deadline:
            raise _Budget
        self.attempts += 1
        ok = self.fails(candidate)
        if ok:
            self.accepted += 1
            self.path.append(candidate)
        return ok

    def _ddmin(self, items: Sequence[T], build: Callable[[list[T]], Schedule], *,
               min_chunk: int = 1) -> tuple[list[T], Schedule | None]:
        """The smallest sublist of `items` (by removing chunks) whose schedule still fails."""
        items = list(items)
        best: Schedule | None = None
        if not items:
            return items, None
        empty = build([])
        if self._try(empty):
            return [], empty
        n = 2
        while len(items) >= 2:
            chunk = max(1, math.ceil(len(items) / n))
            if chunk < min_chunk and n > 2:
                break
            removed = False
            for i in range(0, len(items), chunk):
                cand_items = items[:i] + items[i + chunk:]
                cand = build(cand_items)
                if self._try(cand):
                    items, best, removed = cand_items, cand, True
                    n = max(n - 1, 2)
                    break
            if not removed:
                if chunk == 1:
                    break
                n = min(len(items), n * 2)
        return items, best

    def reproduces(self, s: Schedule) -> bool:
        """Whether `s` itself fails (counted as an attempt); False when the budget is already spent."""
        try:
            return self._try(s)
        except _Budget:
            return False

    # ---- passes --------------------------------------------------------------------------------

    def drop_faults(self, s: Schedule) -> Schedule:
        windows = fault_windows(s.events)
        nemesis_ops = {id(e) for e in s.nemesis_events}
        loose = [e for e in s.nemesis_events if all(e is not w.start and e is not w.stop for w in windows)]

        def build(keep: list[object]) -> Schedule:
            kept: list[Event] = []
            for w in keep:
                kept.append(w.start)  # type: ignore[attr-defined]
                if w.stop is not None:  # type: ignore[attr-defined]
                    kept.append(w.stop)  # type: ignore[attr-defined]
            others = [e for e in s.events if id(e) not in nemesis_ops]
            return s.with_events([*others, *kept])

        if loose:  # stops with nothing to stop: drop them first
            cand = s.with_events([e for e in s.events if not any(e is x for x in loose)])
            if self._try(cand):
                s = cand
                windows = fault_windows(s.events)
                nemesis_ops = {id(e) for e in s.nemesis_events}
        _, best = self._ddmin(windows, build)
        return best or s

    def shorten(self, s: Schedule) -> Schedule:
        last_fault = max((e.at for e in s.nemesis_events), default=0.0)
        # shortest first: a shorter schedule makes every later attempt cheaper (a cut that falls
        # inside a fault window leaves that fault on until the final heal)
        candidates = sorted({round(x, 1) for x in (last_fault + 1.0, last_fault + 3.0, s.time_limit / 4,
                                                     s.time_limit / 2, s.time_limit * 3 / 4)
                             if 0 < x < s.time_limit - 0.05})
        for limit in candidates:
            cand = s.with_events([e for e in s.events if e.at <= limit], time_limit=limit)
            if self._try(cand):
                return self.shorten(cand)
        return s

    def fewer_nodes(self, s: Schedule) -> Schedule:
        for n in range(s.min_nodes, len(s.nodes)):
            if n % 2 == 0:
                continue
            nodes = s.nodes[:n]
            keep = [e for e in s.events if e.node is None or e.node in nodes]
            final = [e for e in s.final if e.node is None or e.node in nodes]
            cand = s.with_events(keep, nodes=nodes, final=final)
            if self._try(cand):
                return cand
        return s

    def fewer_clients(self, s: Schedule) -> Schedule:
        threads = sorted({int(e.thread) for e in s.client_events})

        def build(keep: list[int]) -> Schedule:
            events = [e for e in s.events if e.is_nemesis or int(e.thread) in keep]
            events, k = renumber_threads(events)
            return s.with_events(events, concurrency=k)

        _, best = self._ddmin(threads, build)
        return best or s

    def fewer_keys(self, s: Schedule) -> Schedule:
        keys = s.keys

        def build(keep: list[object]) -> Schedule:
            events = [e for e in s.events if e.is_nemesis or e.key is None or e.key in keep]
            final = [e for e in s.final if e.key is None or e.key in keep]
            return s.with_events(events, final=final)

        _, best = self._ddmin(keys, build)
        return best or s

    def fewer_client_ops(self, s: Schedule) -> Schedule:
        ops = s.client_events
        nem = s.nemesis_events

        def build(keep: list[Event]) -> Schedule:
            return s.with_events([*nem, *keep])

        _, best = self._ddmin(ops, build, min_chunk=self.min_chunk)
        return best or s

    def shrink(self, s: Schedule) -> ShrinkResult:
        # time first: each later attempt then replays a shorter run
        named = (("time", self.shorten), ("faults", self.drop_faults), ("time", self.shorten),
                 ("nodes", self.fewer_nodes), ("clients", self.fewer_clients), ("keys", self.fewer_keys),
                 ("client-ops", self.fewer_client_ops))
        passes = [p for name, p in named if name in self.passes]
        try:
            while True:
                before = _measure(s)
                for p in passes:
                    s = p(s)
                if _measure(s) >= before:
                    return ShrinkResult(s, self.attempts, self.accepted, False, list(self.path))
        except _Budget:
            return ShrinkResult(s, self.attempts, self.accepted, True, list(self.path))


def _measure(s: Schedule) -> tuple[int, float, int, int, int, int]:
    return (s.fault_count, s.time_limit, len(s.nodes), s.concurrency, len(s.keys), len(s.client_events))


def shrink(schedule: Schedule, fails: Callable[[Schedule], bool], **kwargs: object) -> ShrinkResult:
    return Shrinker(fails, **kwargs).shrink(schedule)  # type: ignore[arg-type]
