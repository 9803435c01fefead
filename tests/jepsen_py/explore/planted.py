"""A small deterministic system with a planted bug, to develop the search and the shrinker against.

It is a pure function of a schedule: a key-value store whose writes are lost when a write lands while
a pause and a bridge partition are both in force, and the key is read after the pause ends. Nothing
here mimics our cluster; it only has to be deterministic, cheap, and hide its bug in one corner of
the space (two specific faults overlapping, with a write inside the overlap and a read after it).
"""

from __future__ import annotations

import random
from pathlib import Path

from jepsen_py.explore.coverage import fault_features
from jepsen_py.explore.schedule import Event, Schedule, fault_windows
from jepsen_py.explore.search import Trial
from jepsen_py.explore.space import Config, nemesis_events


def client_events(cfg: Config, rng: random.Random) -> list[Event]:
    out: list[Event] = []
    keys = [f"k{i}" for i in range(5)]
    for thread in range(cfg.node_count * cfg.clients_per_node):
        t = rng.uniform(0, 0.5)
        n = 0
        while t < cfg.time_limit:
            f = "write" if rng.random() < 0.5 else "read"
            out.append(Event(round(t, 3), thread, f, key=rng.choice(keys), value=n if f == "write" else None))
            n += 1
            t += rng.uniform(0.2, 0.8)
    return out


def lost_writes(s: Schedule) -> list[Event]:
    """The writes this system loses: made inside a pause/bridge-partition overlap, read after it."""
    windows = fault_windows(s.events)
    pauses = [w for w in windows if w.family == "pause"]
    bridges = [w for w in windows if w.family == "partition" and w.start.value == "bridge"]
    lost: list[Event] = []
    for p in pauses:
        for b in bridges:
            lo, hi = max(p.start.at, b.start.at), min(p.end, b.end)
            if lo >= hi:
                continue
            for w in s.client_events:
                if w.f == "write" and lo <= w.at < hi and any(
                        r.f == "read" and r.key == w.key and r.at >= p.end for r in s.client_events):
                    lost.append(w)
    return lost


class PlantedSystem:
    """Trials in microseconds; counts them so tests can say how many a search needed."""

    def __init__(self) -> None:
        self.runs = 0

    def _judge(self, s: Schedule, cfg: Config | None) -> Trial:
        self.runs += 1
        lost = lost_writes(s)
        feats = fault_features(s.events) | {f"workload:{s.workload}"}
        return Trial(schedule=s, anomalies={"lost-commit": len(lost)} if lost else {},
                     coverage=frozenset(feats), sim_seconds=s.time_limit, wall_seconds=0.0, config=cfg)

    def trial(self, config: Config) -> Trial:
        rng = random.Random(config.seed)
        events = nemesis_events(config, rng) + client_events(config, rng)
        s = Schedule(workload=config.workload, nodes=[f"n{i + 1}" for i in range(config.node_count)],
                     seed=config.seed, time_limit=config.time_limit,
                     concurrency=config.node_count * config.clients_per_node, events=events,
                     read_mode=config.read_mode)
        return self._judge(s, config)

    def replay(self, schedule: Schedule, *, keep: Path | None = None) -> Trial:
        return self._judge(schedule, None)
