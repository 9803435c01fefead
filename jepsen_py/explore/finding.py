"""A finding: the trial that failed, shrunk to a small schedule that still fails, hardened for a real
backend, replayed once more and written down (finding-N/ and the report explore.json carries).

It lives apart from the search (search.py finds failing trials) and from the shrinker and hardener
(shrink.py, harden.py, which know nothing of a finding's files or report): this is what explore does
with each failing trial, whether the search ran in this process or fanned out (session.py), and
whether its trials run in the simulator or on a real backend.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jepsen_py.analysis import PostRun
from jepsen_py.explore import schedule as sched
from jepsen_py.explore.harden import Rate, harden, in_kind_key, kind_rates, steadier_kinds, timing_seeds
from jepsen_py.explore.search import Search, Trial, primary_kind
from jepsen_py.explore.shrink import FAULT_PASSES, PASSES, Shrinker
from jepsen_py.files import make_dirs


@dataclass
class FindingReport:
    kind: str
    kinds: dict[str, int]
    found_after_s: float
    schedules_tried: int
    # CPU seconds of this process until the finding: the search's cost on a machine others load too
    found_after_cpu_s: float
    config: str
    original: dict[str, Any]
    shrunk: dict[str, Any] | None = None
    shrink_attempts: int = 0
    shrink_s: float = 0.0
    reproduced: bool = True
    # in-kind replays in simulation under other timings that showed the kind ("5/8"), of the
    # schedule written: what a replay on a real backend may expect; and before its targets were
    # widened, when they were
    timing_rate: str | None = None
    hardened_from: str | None = None
    # the size of the smallest failing schedule, when it replays in kind too rarely and the one
    # written (`shrunk`) is a larger one from the shrink's path
    smallest: dict[str, Any] | None = None
    # whether the schedule written shows its kind in most (more than half) of its in-kind replays under
    # other timings (None: not hardened, e.g. a schedule without faults, whose client ops are replayed)
    replayable: bool | None = None
    schedule_file: str | None = None
    run_dir: str | None = None
    notes: list[str] = field(default_factory=list)
    # on a real backend: replays of the schedule written that showed the kind ("2/2")
    reproduction: str | None = None


def reproduces(system: Any, c: sched.Schedule, kind: str, reproduce: tuple[int, int]) -> int | None:
    """Replays `c` until K of N show `kind` (then the number of replays it took) or until K can no
    longer be reached (None): a real replay repeats the faults, not the timing, so one replay proves
    little either way."""
    k, n = reproduce
    hits = 0
    for i in range(n):
        if kind in system.replay(c).anomalies:
            hits += 1
            if hits >= k:
                return i + 1
        if hits + (n - i - 1) < k:
            return None
    return None


def still_fails(system: Any, c: sched.Schedule, kind: str, reproduce: tuple[int, int] = (1, 1)) -> bool:
    """Whether a shrinking candidate still shows `kind`, and shows it because of the build under test.

    A candidate with no client op left is never accepted: with nothing asked, "never served an ok
    op" is a statement about the schedule, not the system. When the build under test has bugs
    switched on, the same schedule on the build without them is the control: a kind the control
    shows too is what the shrunk schedule provokes by itself (an op in the first instant of the main
    phase, a run too short for any answer), so the candidate is refused. On a real backend (a replay
    in kind) it must show `kind` in K of N replays (`reproduce`), and there is no control: the
    faults alone are replayed, beside the workload's own clients."""
    if not c.client_events:
        return False
    if not getattr(system, "exact", True):
        return reproduces(system, c, kind, reproduce) is not None
    if kind not in system.replay(c).anomalies:
        return False
    if c.bugs:
        control = c.with_events(c.events, bugs=[])
        return kind not in system.replay(control).anomalies
    return True


def stops_search(finding: FindingReport, *, keep_going: bool, until_replayable: bool) -> bool:
    """Whether the search ends at `finding`: never with --keep-going; with --until-replayable, only
    at a finding a real backend can be expected to reproduce (or one not forecast at all)."""
    if keep_going:
        return False
    return not (until_replayable and finding.replayable is False)


def harden_finding(s: sched.Schedule, kind: str, system: Any, report: FindingReport, budget: float,
                   path: list[sched.Schedule], fdir: Path) -> tuple[sched.Schedule, str]:
    """`s` made replayable on a real backend (harden.py), and the kind it is named by: the one its
    in-kind replays show most often of those its exact replay shows; a larger schedule from the
    shrink's `path` when `s` shows that kind under half the timings or fewer (`s` itself is kept
    beside it, in `fdir`, as schedule-smallest.json: the smallest failing schedule, for reading and
    exact replay), kill and pause targets widened where that helps; the rates go in the report."""
    shown: dict[tuple[str, int], frozenset[str]] = {}

    def replayed(c: sched.Schedule, timing: int) -> frozenset[str]:
        key = (in_kind_key(c), timing)
        if key not in shown:
            shown[key] = frozenset(system.replay_timed(c, timing))
        return shown[key]

    system.deadline = time.monotonic() + budget
    try:
        seeds = timing_seeds(s)
        rates = kind_rates(s, replayed, seeds)
        for steadier in steadier_kinds(rates, kind):
            if still_fails(system, s, steadier):
                own = rates.get(kind, Rate(0, len(seeds)))
                report.notes.append(
                    f"named {steadier}, not {kind}: in-kind replays under other timings show {steadier} "
                    f"in {rates[steadier]}, {kind} in {own} (its exact replay shows both)")
                kind = report.kind = steadier
                break
        result = harden(s, kind, shows=lambda c, timing: kind in replayed(c, timing),
                        still_fails=lambda c: still_fails(system, c, kind), path=path, budget_s=budget)
    finally:
        system.deadline = None
    report.timing_rate = str(result.after)
    report.replayable = result.replayable
    if result.stepped_back_from is not None:
        smallest = result.stepped_back_from
        small_file = sched.save(smallest.with_events(smallest.events, anomaly=kind),
                                fdir / "schedule-smallest.json")
        small = smallest.size()
        report.smallest = small
        report.notes.append(
            f"stepped back along the shrink's path: the smallest schedule ({small['faults']} fault(s), "
            f"{small['client_ops']} client op(s), {small['time_limit']:g} s; {small_file}) showed {kind} in "
            f"{result.before} in-kind replays under other timings; the schedule written is the smallest "
            "one before it that shows it in most")
    if result.widened:
        report.hardened_from = str(result.base)
        report.notes.append(f"hardened for a real backend: {'; '.join(result.widened)} (in-kind replays "
                            f"under other timings showing {kind}: {result.base} -> {result.after})")
    if result.exhausted:
        report.notes.append("the harden budget ended before every wider target was tried")
    return result.schedule, kind


def handle_finding(trial: Trial, system: Any, search: Search, out_dir: Path, n: int, found_after: float,
                   found_after_cpu: float, shrink_budget: float, harden_budget: float, *,
                   post_run: Sequence[PostRun], reproduce: tuple[int, int] = (1, 1)) -> FindingReport:
    """The `n`th finding of a search, from its failing `trial`: saved as found (finding-N/ in
    `out_dir`), shrunk, hardened (in simulation), replayed once more with `post_run`'s steps and saved
    as written; on a real backend, replayed N of `reproduce`'s times to report how often it shows."""
    kind = primary_kind(trial.anomalies) or "anomaly"
    original = trial.schedule.with_events(trial.schedule.events, anomaly=kind)
    fdir = out_dir / f"finding-{n}"
    make_dirs(fdir)
    sched.save(original, fdir / "schedule-found.json")
    report = FindingReport(kind=kind, kinds=dict(trial.anomalies), found_after_s=round(found_after, 3),
                           schedules_tried=search.stats.tried, found_after_cpu_s=round(found_after_cpu, 3),
                           config=trial.config.label() if trial.config else "", original=original.size())
    if trial.run_dir is not None:
        report.notes.append(f"the run that found it: {trial.run_dir}")

    exact = getattr(system, "exact", True)

    def fails(c: sched.Schedule) -> bool:
        return still_fails(system, c, kind, reproduce)

    t0 = time.monotonic()
    best = original
    result = None
    if shrink_budget > 0:
        shrinker = Shrinker(fails, budget_s=shrink_budget, max_attempts=400,
                            passes=PASSES if exact else FAULT_PASSES)
        system.deadline = t0 + shrink_budget  # a candidate still running when it ends is cut short
        try:
            reproduced = shrinker.reproduces(original)
            result = shrinker.shrink(original) if reproduced else None
        finally:
            system.deadline = None
        report.reproduced = reproduced
        if result is not None:
            best = result.schedule
            report.shrink_attempts = result.attempts
            if result.exhausted:
                report.notes.append("the shrink budget ended before shrinking finished")
        else:
            report.notes.append("the recorded schedule did not show the anomaly on replay: not shrunk")
    report.shrink_s = round(time.monotonic() - t0, 3)
    if harden_budget > 0 and best.nemesis_events and report.reproduced and exact:
        best, kind = harden_finding(best, kind, system, report, harden_budget,
                                    result.path if result else [], fdir)
    best = best.with_events(best.events, anomaly=kind)

    final = system.replay(best, keep=fdir, post_run=post_run, name="shrunk")
    if final.run_dir is not None:
        report.run_dir = str(final.run_dir)
        path = sched.save(best, Path(final.run_dir) / "schedule.json")
    else:
        path = sched.save(best, fdir / "schedule.json")
    report.schedule_file = str(path)
    report.shrunk = best.size()
    if not exact:  # how often the schedule written shows its kind again: N replays, the first kept
        hits = int(kind in final.anomalies) + sum(kind in system.replay(best).anomalies
                                                  for _ in range(reproduce[1] - 1))
        report.reproduction = f"{hits}/{reproduce[1]}"
        report.replayable = hits >= reproduce[0]
    if kind not in final.anomalies:
        report.notes.append(f"the final replay of the shrunk schedule did not show {kind}")
    return report
