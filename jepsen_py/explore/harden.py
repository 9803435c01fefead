"""Hardening a shrunk schedule for a real backend, whose timings are its own.

A schedule that fails in simulation may fail only when a race in it goes one way: which node won an
election during a clock strobe, whose unreplicated tail the new leader overwrote. The simulator's seed
settles that race; a real cluster settles it anew on every run. A Docker replay of such a schedule
reproduces the anomaly only as often as the race goes the recorded way.

`timing_rate` measures that in seconds: it replays the schedule as a real backend does (its fault ops
at their offsets, the workload's own clients beside them: system.replay_in_kind) in the simulator,
under several timing seeds (network delays, disks and entropy drawn anew, while the schedule's seed
still decides the nemesis's draws and the nodes' timeouts), and counts the runs that show the
schedule's anomaly kind.

`harden` then widens the targets of the schedule's kills and pauses (one node, a minority, a
majority, all), widest first, keeping a wider target when the schedule still fails exactly as
recorded (with its control: the same schedule on the build without the bug passes) and the rate
rises: the fault then covers the race's outcome whichever way it went. The schedule keeps its size:
the same events, wider targets.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from jepsen_py.explore.schedule import Event, Schedule
from jepsen_py.nemeses.faults import KILL, PAUSE_F

#: How many nodes each target hits, narrowest first (leader, one and random hit one node).
TARGET_WIDTH: dict[str, int] = {"leader": 0, "one": 0, "random": 0, "minority": 1, "majority": 2, "all": 3}
#: The fault ops whose value names a target in TARGET_WIDTH.
TARGETED = frozenset({KILL, PAUSE_F})
#: Timing seeds per rate: enough to tell 1/4 from 3/4, few enough to harden in about a minute.
TIMINGS = 8


@dataclass(frozen=True)
class Rate:
    """Runs that showed the kind, of runs tried."""

    hits: int
    runs: int

    def __str__(self) -> str:
        return f"{self.hits}/{self.runs}"

    def above(self, other: Rate) -> bool:
        return self.hits * other.runs > other.hits * self.runs


@dataclass
class HardenResult:
    schedule: Schedule
    before: Rate
    after: Rate
    widened: list[str] = field(default_factory=list)  # "kill at 12 s: majority -> all"
    exhausted: bool = False  # the budget ended before every candidate was tried


def timing_seeds(schedule: Schedule, n: int = TIMINGS) -> list[int]:
    """`n` timing seeds, fixed for a schedule (so a rate measured twice is the same rate)."""
    rng = random.Random(f"timing:{schedule.seed}")
    return [rng.getrandbits(48) for _ in range(n)]


def timing_rate(schedule: Schedule, kind: str, shows: Callable[[Schedule, int], bool],
                seeds: Sequence[int]) -> Rate:
    """How many of `seeds` make an in-kind replay of `schedule` show `kind` (`shows(schedule, seed)`)."""
    return Rate(sum(1 for s in seeds if shows(schedule, s)), len(seeds))


def widenings(e: Event) -> list[str]:
    """The targets wider than `e`'s, widest first; none when `e` is not a targeted kill or pause."""
    if e.f not in TARGETED or not isinstance(e.value, str) or e.value not in TARGET_WIDTH:
        return []
    width = TARGET_WIDTH[e.value]
    wider = {TARGET_WIDTH[t]: t for t in ("minority", "majority", "all") if TARGET_WIDTH[t] > width}
    return [wider[w] for w in sorted(wider, reverse=True)]


def harden(schedule: Schedule, kind: str, *, shows: Callable[[Schedule, int], bool],
           still_fails: Callable[[Schedule], bool], budget_s: float = 120.0, timings: int = TIMINGS,
           clock: Callable[[], float] = time.monotonic) -> HardenResult:
    """`schedule` with its kills' and pauses' targets widened where that raises its timing rate."""
    deadline = clock() + budget_s
    seeds = timing_seeds(schedule, timings)
    best = schedule
    before = best_rate = timing_rate(schedule, kind, shows, seeds)
    result = HardenResult(schedule, before, before)
    for i, e in enumerate(schedule.events):
        for target in widenings(e):
            if best_rate.hits == best_rate.runs:
                return _done(result, best, best_rate)
            if clock() >= deadline:
                result.exhausted = True
                return _done(result, best, best_rate)
            events = list(best.events)
            events[i] = replace(e, value=target)
            cand = best.with_events(events)
            if not still_fails(cand):
                continue
            rate = timing_rate(cand, kind, shows, seeds)
            if rate.above(best_rate):
                best, best_rate = cand, rate
                result.widened.append(f"{e.f} at {e.at:g} s: {e.value} -> {target}")
                break  # this event is as wide as helps: on to the next one
    return _done(result, best, best_rate)


def _done(result: HardenResult, best: Schedule, rate: Rate) -> HardenResult:
    result.schedule = best
    result.after = rate
    return result
