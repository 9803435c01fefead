"""The search: random configurations first, then mutations of the ones that reached something new.

A `System` runs trials: a configuration in (it records the schedule it ran), or a schedule in (a
replay); out comes a `Trial` with the anomaly kinds the checkers reported and the coverage features
the run reached. The search never looks at anything else, so it knows no bug.

Coverage guidance: every feature counts how many trials reached it. A trial that reached a feature no
earlier one had joins the corpus. After the warm-up, most trials mutate a corpus entry chosen with
weight sum(1 / times seen) over its features (configurations that reach rare states get more
children); the rest stay random so nothing is starved.

Where trials are expensive (a real backend), each draw, random or a mutation of the parent chosen,
makes `draws` candidates and takes the one trying the most pairs of configuration factors no trial
tried yet (pairs.py), so a few dozen trials meet every workload with every fault family.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from jepsen_py.explore.pairs import Pair, most_new_pairs, pairs
from jepsen_py.explore.schedule import Schedule
from jepsen_py.explore.space import Config, Space

# Anomaly kinds in the order a finding is named by: what the data says first (lost or duplicated
# writes, stale or non-linearizable reads, Elle's isolation anomalies of the transactional workloads,
# crashes), then liveness. Kinds not listed come after, by name.
SEVERITY: tuple[str, ...] = (
    "lost-commit", "duplicate-create", "split-leader", "stale-read", "nonlinearizable",
    "G0", "G1a", "G1b", "G1c", "G-single-item", "G-single", "G-nonadjacent-item", "G-nonadjacent", "G2-item",
    "dirty-update", "lost-update", "internal", "incompatible-order", "reordered-appends",
    "duplicate-elements", "garbage-read", "future-read", "node-crash",
    "crash", "never-available", "unavailable", "election-churn",
)


def severity_rank(kind: str) -> tuple[int, str]:
    """Sorts kinds most severe first (SEVERITY's order, then unlisted kinds by name)."""
    return (SEVERITY.index(kind) if kind in SEVERITY else len(SEVERITY), kind)


def primary_kind(kinds: dict[str, int] | set[str] | frozenset[str]) -> str | None:
    """The kind a finding is named by and its shrinking keeps."""
    return min(kinds, key=severity_rank) if kinds else None


@dataclass
class Trial:
    """One run and what came of it."""

    schedule: Schedule
    anomalies: dict[str, int]
    coverage: frozenset[str]
    sim_seconds: float
    wall_seconds: float
    config: Config | None = None
    run_dir: Path | None = None
    error: str | None = None
    cut: bool = False  # stopped by the search's wall budget before it ended: no verdict
    unknown: bool = False  # the checkers could not tell (exit 2): neither a finding nor a pass

    @property
    def failed(self) -> bool:
        return bool(self.anomalies)


class System(Protocol):
    """What the search runs trials on (the simulator; in tests, any deterministic system)."""

    def trial(self, config: Config) -> Trial:
        """Runs a fresh configuration, recording the schedule it performed."""

    def replay(self, schedule: Schedule, *, keep: Path | None = None) -> Trial:
        """Runs a schedule; with `keep`, writes the run's results directory there."""


@dataclass
class Stats:
    tried: int = 0
    errors: int = 0
    sim_seconds: float = 0.0
    corpus: int = 0
    features: int = 0
    findings: int = 0
    cut: int = 0  # trials the budget stopped before they ended (not counted as tried)
    last: str = ""


@dataclass
class Search:
    """Stepwise search over `space` on `system`; the caller owns the budget and the stopping rule."""

    system: System
    space: Space
    seed: int
    warmup: int = 10
    random_share: float = 0.25
    draws: int = 1  # candidates per draw, the one trying the most untried factor pairs kept
    rng: random.Random = field(init=False)
    seen: Counter[str] = field(init=False, default_factory=Counter)
    corpus: list[tuple[Config, frozenset[str]]] = field(init=False, default_factory=list)
    stats: Stats = field(init=False, default_factory=Stats)
    tried_pairs: set[Pair] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def next_config(self) -> Config:
        if self.stats.tried < self.warmup or not self.corpus or self.rng.random() < self.random_share:
            return self._best(lambda: self.space.sample(self.rng))
        weights = [sum(1.0 / self.seen[f] for f in feats) + 1e-6 for _, feats in self.corpus]
        parent, _ = self.rng.choices(self.corpus, weights=weights, k=1)[0]
        return self._best(lambda: self.space.mutate(parent, self.rng))

    def _best(self, draw: Callable[[], Config]) -> Config:
        """One draw, or with `draws` > 1 the best of that many for pairwise coverage (one draw takes
        the random stream exactly as a search without pairs did: simulated searches repeat)."""
        if self.draws <= 1:
            return draw()
        first, *others = [draw() for _ in range(self.draws)]
        if not self.tried_pairs:  # nothing tried yet: every candidate is as new as the first
            return first
        # among those with as many fault families as the first: swarm testing's mix is kept
        return most_new_pairs([first, *(c for c in others if len(c.families) == len(first.families))],
                              self.tried_pairs)

    def step(self) -> Trial:
        cfg = self.next_config()
        return self.record(cfg, self.system.trial(cfg))

    def record(self, cfg: Config, trial: Trial) -> Trial:
        """Counts a trial of `cfg` in: its stats, its coverage, the corpus if it reached something new.
        Trials run elsewhere (worker processes, Spark executors) come in here too, on the driver."""
        trial.config = trial.config or cfg
        if trial.cut:
            self.stats.cut += 1
            return trial
        self.stats.tried += 1
        self.stats.sim_seconds += trial.sim_seconds
        self.stats.last = cfg.label()
        if self.draws > 1:
            self.tried_pairs |= pairs(cfg)
        if trial.error:
            self.stats.errors += 1
            return trial
        new = [f for f in trial.coverage if f not in self.seen]
        self.seen.update(trial.coverage)
        if new:
            self.corpus.append((cfg, trial.coverage))
        self.stats.corpus = len(self.corpus)
        self.stats.features = len(self.seen)
        if trial.failed:
            self.stats.findings += 1
        return trial

    def load(self, entries: Iterable[tuple[Config, frozenset[str]]],
             seen: Mapping[str, int] | None = None) -> None:
        """Starts the search from configurations an earlier search kept (a corpus directory, or the
        driver's merged corpus): each joins the corpus, and its features count as seen (`seen`, when
        given, carries the counts themselves). Called before the first step, so the warm-up's random
        trials already compare against what was reached before, as a fuzzer's seed corpus does."""
        for cfg, feats in entries:
            self.corpus.append((cfg, frozenset(feats)))
            if self.draws > 1:
                self.tried_pairs |= pairs(cfg)
            if seen is None:
                self.seen.update(feats)
        if seen is not None:
            self.seen.update(seen)
        self.stats.corpus = len(self.corpus)
        self.stats.features = len(self.seen)


def run_search(search: Search, *, budget_s: float, keep_going: bool = False,
               on_trial: Callable[[Trial], None] | None = None,
               clock: Callable[[], float] = time.monotonic) -> list[Trial]:
    """Steps until the budget ends, or until the first failing trial unless `keep_going`.
    Returns the failing trials."""
    deadline = clock() + budget_s
    found: list[Trial] = []
    while clock() < deadline:
        trial = search.step()
        if on_trial is not None:
            on_trial(trial)
        if trial.failed:
            found.append(trial)
            if not keep_going:
                break
    return found
