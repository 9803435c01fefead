"""The search space: every configuration `jepsen-py explore` may try, with no knowledge of any bug.

A configuration names a workload, which fault families it mixes (partitions of every shape, clock
jumps and strobes, pauses, kills, the isolated leader with its clock stepped back), whom pause and
kill may hit, the interval between fault ops, the shape of the fault timeline (random toggles, one
fault at a time in turn, or bursts of several at once), the read mode, the node count, the length of
the main phase, the client request rate and the seed. `nemesis_events` turns a configuration into the
explicit list of nemesis ops a run performs, so every run is a schedule from the start.

Sampling is swarm testing: each configuration enables a small random subset of the fault families
(most often one or two), so each trial drives a few faults hard instead of all of them lightly, and
over many trials every combination comes up. Short main phases and low request rates come up as
often as long and busy ones: a cheap trial that shows a bug is found sooner than an expensive one.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from jepsen_py.explore.schedule import FAMILIES, NEMESIS_THREAD, Event
from jepsen_py.workloads import CLUSTER_TXN_WORKLOADS, CLUSTER_WORKLOADS

SHAPES: tuple[str, ...] = ("leader", "random", "one", "ring", "bridge")
TARGETS: tuple[str, ...] = ("leader", "one", "minority", "majority", "all")
MODES: tuple[str, ...] = ("random", "cycle", "bursts")
SAFE_READ_MODES: tuple[str, ...] = ("read-index", "lease")
# Workloads of our cluster (named where they are defined); the command narrows this to what the DB
# under test serves.
DEFAULT_WORKLOADS: tuple[str, ...] = (*CLUSTER_WORKLOADS, *CLUSTER_TXN_WORKLOADS)


@dataclass(frozen=True)
class Config:
    """One point of the space: everything a trial run needs besides the build (its bugs)."""

    workload: str
    families: tuple[str, ...]
    shapes: tuple[str, ...]
    targets: tuple[str, ...]
    interval: float
    mode: str
    read_mode: str | None  # None: the DB declares no read modes
    node_count: int
    time_limit: float
    seed: int
    clients_per_node: int = 2
    rate: float | None = None  # client requests per second over all clients; None: the system's own
    # the DB's own settings (--db-option KEY=VALUE), drawn from the values it declares
    db_options: tuple[tuple[str, str], ...] = ()
    # the backend's own options drawn for this trial (a world's network latency: EXPLORE_OPTIONS)
    backend_options: tuple[tuple[str, object], ...] = ()

    def label(self) -> str:
        faults = "+".join(self.families) or "none"
        hit = " ".join(
            ([f"shapes {'/'.join(self.shapes)}"] if "partition" in self.families else [])
            + ([f"targets {'/'.join(self.targets)}"] if {"kill", "pause"} & set(self.families) else []))
        rate = f" {self.rate:g}/s" if self.rate is not None else ""
        read = f" {self.read_mode}" if self.read_mode is not None else ""
        opts = "".join(f" {k}={v}" for k, v in (*self.db_options, *self.backend_options))
        return (f"{self.workload} {faults}{' (' + hit + ')' if hit else ''} every {self.interval:g}s "
                f"({self.mode}){read}{opts} {self.node_count} nodes {self.time_limit:g}s{rate} "
                f"seed {self.seed}")


@dataclass(frozen=True)
class Space:
    """The ranges a search draws from. Every field can be narrowed from the command line."""

    workloads: tuple[str, ...] = DEFAULT_WORKLOADS
    families: tuple[str, ...] = tuple(FAMILIES)
    shapes: tuple[str, ...] = SHAPES
    targets: tuple[str, ...] = TARGETS
    intervals: tuple[float, ...] = (1.0, 2.0, 3.0, 5.0, 8.0)
    modes: tuple[str, ...] = MODES
    read_modes: tuple[str | None, ...] = SAFE_READ_MODES
    node_counts: tuple[int, ...] = (3, 5)
    time_limits: tuple[float, ...] = (8.0, 15.0, 25.0)
    clients_per_node: tuple[int, ...] = (1, 2)
    rates: tuple[float, ...] = (10.0, 25.0, 50.0)
    max_families: int = 3
    # how often a configuration enables 0, 1, 2, 3, ... fault families (swarm testing)
    family_weights: tuple[float, ...] = (1.0, 2.0, 4.0, 3.0)
    extra: dict[str, object] = field(default_factory=dict)
    # the values the DB declares for each of its --db-options (db_option_values()): one drawn per key
    db_option_values: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # the values the backend lets a search draw for its own options (BackendKind.explore_options)
    backend_option_values: tuple[tuple[str, tuple[object, ...]], ...] = ()

    def family_count(self, rng: random.Random) -> int:
        top = min(self.max_families, len(self.families))
        counts = list(range(top + 1))
        weights = [self.family_weights[k] if k < len(self.family_weights) else self.family_weights[-1]
                   for k in counts]
        return rng.choices(counts, weights=weights, k=1)[0]

    def sample(self, rng: random.Random) -> Config:
        k = self.family_count(rng)
        families = tuple(sorted(rng.sample(list(self.families), k)))
        node_count = self._node_count(rng)
        time_limit = rng.choice(self.time_limits)
        cfg = Config(
            workload=rng.choice(self.workloads),
            families=families,
            shapes=self._shapes(rng, node_count),
            targets=tuple(sorted(rng.sample(list(self.targets), rng.randint(1, len(self.targets))))),
            interval=self._interval(rng, time_limit),
            mode=rng.choice(self.modes),
            read_mode=rng.choice(self.read_modes),
            node_count=node_count,
            time_limit=time_limit,
            seed=rng.randrange(2**31),
            clients_per_node=rng.choice(self.clients_per_node),
            rate=rng.choice(self.rates) if self.rates else None,
        )
        # drawn last, and only when there are any, so a space without them draws as it always did
        if self.db_option_values:
            cfg = replace(cfg, db_options=self._db_options(rng))
        if self.backend_option_values:
            cfg = replace(cfg, backend_options=self._backend_options(rng))
        return cfg

    def _backend_options(self, rng: random.Random) -> tuple[tuple[str, object], ...]:
        return tuple((k, rng.choice(values)) for k, values in self.backend_option_values if values)

    def _db_options(self, rng: random.Random) -> tuple[tuple[str, str], ...]:
        return tuple((k, rng.choice(values)) for k, values in self.db_option_values if values)

    def _node_count(self, rng: random.Random) -> int:
        """The smallest cluster twice as often as each larger one: it costs least per trial."""
        smallest = min(self.node_counts)
        return rng.choices(self.node_counts, weights=[2 if n == smallest else 1 for n in self.node_counts])[0]

    def _interval(self, rng: random.Random, time_limit: float) -> float:
        """An interval that fits at least two fault ops (a start and its stop) in the main phase."""
        fits = [i for i in self.intervals if 2.5 * i <= time_limit]
        return rng.choice(fits or [min(self.intervals)])

    def _shapes(self, rng: random.Random, node_count: int) -> tuple[str, ...]:
        usable = [s for s in self.shapes if s != "ring" or node_count >= 4] or [
            "leader" if "leader" in self.shapes else "random"]
        return tuple(sorted(rng.sample(usable, rng.randint(1, len(usable)))))

    def mutate(self, cfg: Config, rng: random.Random) -> Config:
        """A neighbour of `cfg`: always a new seed, and one or two dimensions changed."""
        out = replace(cfg, seed=rng.randrange(2**31))
        dims = ("workload", "families", "targets", "interval", "mode", "read_mode", "node_count",
                "time_limit", "shapes", "clients", "rate")
        if self.db_option_values:
            dims += ("db_options",)
        if self.backend_option_values:
            dims += ("backend_options",)
        for _ in range(rng.choice((0, 1, 1, 2))):
            dim = rng.choice(dims)
            if dim == "backend_options":
                out = replace(out, backend_options=self._backend_options(rng))
            elif dim == "db_options":
                out = replace(out, db_options=self._db_options(rng))
            elif dim == "workload":
                out = replace(out, workload=rng.choice(self.workloads))
            elif dim == "families" and self.families:
                fams = set(out.families)
                f = rng.choice(self.families)
                if f in fams and len(fams) > 0:
                    fams.discard(f)
                elif len(fams) < self.max_families:
                    fams.add(f)
                out = replace(out, families=tuple(sorted(fams)))
            elif dim == "targets":
                ts = set(out.targets) ^ {rng.choice(self.targets)}
                out = replace(out, targets=tuple(sorted(ts)) or (rng.choice(self.targets),))
            elif dim == "interval":
                out = replace(out, interval=self._interval(rng, out.time_limit))
            elif dim == "mode":
                out = replace(out, mode=rng.choice(self.modes))
            elif dim == "read_mode":
                out = replace(out, read_mode=rng.choice(self.read_modes))
            elif dim == "node_count":
                n = self._node_count(rng)
                out = replace(out, node_count=n, shapes=self._shapes(rng, n))
            elif dim == "time_limit":
                limit = rng.choice(self.time_limits)
                interval = out.interval if 2.5 * out.interval <= limit else self._interval(rng, limit)
                out = replace(out, time_limit=limit, interval=interval)
            elif dim == "shapes":
                out = replace(out, shapes=self._shapes(rng, out.node_count))
            elif dim == "rate":
                out = replace(out, rate=rng.choice(self.rates) if self.rates else None)
            else:
                out = replace(out, clients_per_node=rng.choice(self.clients_per_node))
        return out


def _start(family: str, cfg: Config, rng: random.Random) -> Event:
    if family == "partition":
        return Event(0.0, NEMESIS_THREAD, "start-partition", value=rng.choice(cfg.shapes))
    if family == "clock":
        return Event(0.0, NEMESIS_THREAD, rng.choice(("bump-clock", "bump-clock", "strobe-clock")))
    if family in ("pause", "kill"):
        return Event(0.0, NEMESIS_THREAD, family, value=rng.choice(cfg.targets))
    return Event(0.0, NEMESIS_THREAD, FAMILIES[family][0][0])


def _stop(family: str) -> Event:
    return Event(0.0, NEMESIS_THREAD, FAMILIES[family][1])


def _at(e: Event, t: float) -> Event:
    return replace(e, at=round(t, 3))


def nemesis_events(cfg: Config, rng: random.Random | None = None) -> list[Event]:
    """The nemesis ops of a run of `cfg`, each with its offset in the main phase.

    random: every interval (the first after one interval of calm) a random family is toggled, so
            faults overlap in every combination;
    cycle:  one fault at a time, the families taking turns (start A, stop A, start B, ...);
    bursts: several faults started close together (a quarter interval apart), held for an
            interval, all stopped, then calm for an interval.
    """
    rng = rng or random.Random(cfg.seed)
    fams: Sequence[str] = cfg.families
    if not fams:
        return []
    out: list[Event] = []
    active: list[str] = []
    t = cfg.interval
    turn = 0
    while t < cfg.time_limit:
        if cfg.mode == "bursts":
            n = rng.randint(1, len(fams) + 1)
            for _ in range(n):
                if t >= cfg.time_limit:
                    break
                fam = rng.choice(fams)
                if fam not in active:
                    active.append(fam)
                    out.append(_at(_start(fam, cfg, rng), t))
                t += cfg.interval / 4
            t += cfg.interval
            for fam in list(active):
                if t < cfg.time_limit:
                    out.append(_at(_stop(fam), t))
                    active.remove(fam)
            t += cfg.interval
            continue
        if cfg.mode == "cycle":
            fam = active[0] if active else fams[turn % len(fams)]
            if not active:
                turn += 1
        else:
            fam = rng.choice(fams)
        if fam in active:
            active.remove(fam)
            out.append(_at(_stop(fam), t))
        else:
            active.append(fam)
            out.append(_at(_start(fam, cfg, rng), t))
        t += cfg.interval
    return out
