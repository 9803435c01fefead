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

A schedule shrunk for one kind often shows others too: a commit lost, and the reads that can no
longer be ordered around it. `steadier_kinds` ranks the kinds its in-kind replays show by how many
timings show them, so explore names the schedule by the one a real backend will reproduce most.

`harden` then makes the schedule replayable: shown by most timings (more than half), as a real
backend should reproduce it in most runs. When the forecast is not, it steps back along the shrink's
path (the schedules the shrinker accepted, last first) to the smallest one that forecasts most:
shrinking keeps what fails exactly, and on the way it may drop what made the anomaly independent of
the exact client ops and timings (a fault or a stretch of time more). A finding whose every step
forecasts half or less owes its anomaly to its recorded client ops (a crash that needed two creates
in flight as a kill landed) or to a race that goes either way; the forecast says so, and explore's
--until-replayable searches on for another. Then it widens the targets of the kills and pauses (one node,
a minority, a majority, all), widest first, keeping a wider target when the schedule still fails
exactly as recorded (with its control: the same schedule on the build without the bug passes) and
the forecast rises: the fault then covers the race's outcome whichever way it went (which node led,
whose tail was overwritten).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace

from jepsen_py.explore.schedule import Event, Schedule
from jepsen_py.explore.search import severity_rank
from jepsen_py.nemeses.faults import KILL, PAUSE_F
from jepsen_py.seeds import timing_rng

#: How many nodes each target hits, narrowest first (leader, one and random hit one node).
TARGET_WIDTH: dict[str, int] = {"leader": 0, "one": 0, "random": 0, "minority": 1, "majority": 2, "all": 3}
#: The fault ops whose value names a target in TARGET_WIDTH.
TARGETED = frozenset({KILL, PAUSE_F})
#: Timing seeds per rate: enough to tell 1/4 from 3/4, few enough to harden in about a minute.
TIMINGS = 8


def most(runs: int) -> int:
    """The fewest hits that are most of `runs`: more than half, the share of runs a replayable
    schedule shows its anomaly in."""
    return runs // 2 + 1


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
    before: Rate  # the forecast of the schedule given
    after: Rate  # of `schedule`
    base: Rate  # of the schedule the widening started from (the one given, or one stepped back to)
    widened: list[str] = field(default_factory=list)  # "kill at 12 s: majority -> all"
    exhausted: bool = False  # the budget ended before every candidate was tried
    # the shrunk schedule, when its forecast was half or less and a larger one on the shrink's path
    # forecast most (`schedule` starts from that one)
    stepped_back_from: Schedule | None = None

    @property
    def replayable(self) -> bool:
        """Whether `schedule` shows its kind under most of the timings."""
        return self.after.runs > 0 and self.after.hits >= most(self.after.runs)


def timing_seeds(schedule: Schedule, n: int = TIMINGS) -> list[int]:
    """`n` timing seeds, fixed for a schedule (so a rate measured twice is the same rate)."""
    rng = timing_rng(schedule.seed)
    return [rng.getrandbits(48) for _ in range(n)]


def timing_rate(schedule: Schedule, kind: str, shows: Callable[[Schedule, int], bool],
                seeds: Sequence[int], need: int | None = None) -> Rate:
    """How many of `seeds` make an in-kind replay of `schedule` show `kind` (`shows(schedule, seed)`).
    With `need`, it stops as soon as fewer than `need` hits remain possible (the runs so far)."""
    hits = 0
    for i, seed in enumerate(seeds):
        if need is not None and hits + len(seeds) - i < need:
            return Rate(hits, i)
        hits += bool(shows(schedule, seed))
    return Rate(hits, len(seeds))


def kind_rates(schedule: Schedule, replayed: Callable[[Schedule, int], Collection[str]],
               seeds: Sequence[int]) -> dict[str, Rate]:
    """The forecast of every kind the in-kind replays of `schedule` under `seeds` show, one replay
    per seed for all of them."""
    shown = Counter(k for seed in seeds for k in set(replayed(schedule, seed)))
    return {k: Rate(n, len(seeds)) for k, n in shown.items()}


def steadier_kinds(rates: dict[str, Rate], kind: str) -> list[str]:
    """The kinds more timings show than `kind`, most first (the more severe first among equals):
    the names a schedule could take instead, if its exact replay shows them too."""
    own = rates.get(kind, Rate(0, 1))
    return sorted((k for k, r in rates.items() if r.above(own)),
                  key=lambda k: (-rates[k].hits / rates[k].runs, severity_rank(k)))


def in_kind_key(s: Schedule) -> str:
    """What an in-kind replay of `s` depends on. With faults, everything but its client ops and
    final reads (the workload's own clients stand in for them), so schedules on a shrink's path that
    differ only there are forecast once."""
    data = s.to_json()
    for k in ("size", "t0", "anomaly", "final"):
        data.pop(k, None)
    if s.nemesis_events:
        data["events"] = [e.to_json() for e in s.nemesis_events]
        data["concurrency"] = None  # a real backend's replay runs clients on every node regardless
    return json.dumps(data, sort_keys=True, default=str)


def widenings(e: Event) -> list[str]:
    """The targets wider than `e`'s, widest first; none when `e` is not a targeted kill or pause."""
    if e.f not in TARGETED or not isinstance(e.value, str) or e.value not in TARGET_WIDTH:
        return []
    return [t for t in ("all", "majority", "minority") if TARGET_WIDTH[t] > TARGET_WIDTH[e.value]]


def harden(schedule: Schedule, kind: str, *, shows: Callable[[Schedule, int], bool],
           still_fails: Callable[[Schedule], bool], path: Sequence[Schedule] = (), budget_s: float = 120.0,
           timings: int = TIMINGS, clock: Callable[[], float] = time.monotonic) -> HardenResult:
    """`schedule` made replayable on a real backend: stepped back along the shrink's `path` when it
    forecasts half or less, then its kills' and pauses' targets widened where that raises the forecast."""
    deadline = clock() + budget_s
    seeds = timing_seeds(schedule, timings)
    need = most(len(seeds))
    best = schedule
    best_rate = timing_rate(schedule, kind, shows, seeds)
    result = HardenResult(schedule, best_rate, best_rate, best_rate)
    if best_rate.hits < need:
        seen = {in_kind_key(schedule)}
        for cand in reversed(path):
            key = in_kind_key(cand)
            if key in seen:
                continue
            seen.add(key)
            if clock() >= deadline:
                result.exhausted = True
                return _done(result, best, best_rate)
            rate = timing_rate(cand, kind, shows, seeds, need=need)
            if rate.hits >= need:
                result.stepped_back_from = schedule
                best, best_rate = cand, rate
                result.base = rate
                break
    for i, e in enumerate(best.events):
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
