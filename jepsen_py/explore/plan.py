"""The search a command line asks for, checked before anything runs: the backend, the DB, the bugs
switched on, the space trials are drawn from (our cluster's in the simulator, the DB's declared one on
a real backend: realspace.py), how often a shrinking step must reproduce and how long shrinking may
take.

The command (jepsen_py/commands/explore.py) reads its flags into a PlanRequest of plain values; what
they mean and whether the backend and DB can do it is decided here, one BadInput line for anything
they cannot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jepsen_py.backends import BackendKind, backend_kind
from jepsen_py.bugs import check_bugs
from jepsen_py.errors import BadInput
from jepsen_py.explore import schedule as sched
from jepsen_py.explore.realspace import REAL_DRAWS, REAL_NODE_COUNTS, outside_families, real_space
from jepsen_py.explore.space import DEFAULT_WORKLOADS, SAFE_READ_MODES, SHAPES, TARGETS, Space
from jepsen_py.plugins import builtin_workloads, declared_bugs, is_reference, load_object
from jepsen_py.protocols import TestSpec
from jepsen_py.spec import DEFAULT_DB, READ_MODES, parse_db_options, parse_list

# Replays a shrinking step needs on a real backend unless --reproduce says otherwise: it is kept when
# one of two shows the failure again (a real replay repeats the faults, not the timing).
REAL_REPRODUCE = (1, 2)
# Shrinking on a real backend runs every candidate K to N times, each a run of tens of seconds.
SIM_SHRINK_BUDGET_S = 120.0
REAL_SHRINK_BUDGET_S = 300.0

FAMILY_NAMES = ("partition", "clock", "pause", "kill", "leader-clock")
# A world of its own in real time (maelstrom) starts in a second and a fault lands at once: main
# phases as short as a real cluster's are long enough, and faults may come closer together.
WORLD_TIME_LIMITS: tuple[float, ...] = (5.0, 10.0, 20.0)
WORLD_INTERVALS: tuple[float, ...] = (0.5, 1.0, 2.0, 3.0)


@dataclass(frozen=True)
class PlanRequest:
    """What the command line asks of a search, as given: the name lists are comma lists, possibly
    repeated (None or empty: not given)."""

    backend: str
    db: str
    backend_options: dict[str, Any]
    results_dir: str
    bugs: list[str] | None = None
    db_options: list[str] | None = None
    workloads: list[str] | None = None
    nemeses: list[str] | None = None
    read_modes: list[str] | None = None
    node_counts: list[int] | None = None
    time_limits: list[float] | None = None
    reproduce: tuple[int, int] | None = None
    shrink_budget: float | None = None
    # the backend options given on the command line (dests), not left at their defaults
    given_backend_options: tuple[str, ...] = ()


@dataclass
class Plan:
    """What the command line asks of a search, checked before anything runs."""

    backend: str
    simulated: bool
    db: str
    bugs: list[str]
    space: Space
    reproduce: tuple[int, int]
    shrink_budget: float
    outside: list[sched.OutsideFamily] = field(default_factory=list)
    # the hosts trials run on, when the backend's options name them (ssh): a trial of N nodes takes
    # the first N; None: the backend makes n1..nN
    hosts: list[str] | None = None
    # the backend's own options the trials get (none in the simulator, which takes none)
    backend_options: dict[str, Any] = field(default_factory=dict)

    # What differs between the worlds, decided here once: the command only prints and passes these.
    @property
    def draws(self) -> int:
        """Timing draws per schedule: a simulated replay is exact, a real one is not."""
        return 1 if self.simulated else REAL_DRAWS

    @property
    def time_word(self) -> str:
        """What the search's trial time is called: virtual seconds, or real ones."""
        return "simulated" if self.simulated else "run"

    @property
    def reproduce_text(self) -> str | None:
        """The replay rate a finding must reach, as said; None where a replay is exact."""
        return None if self.simulated else f"{self.reproduce[0]}/{self.reproduce[1]}"

    def harden_budget(self, asked: float) -> float:
        """Hardening a finding (more nodes hit) replays it many times: in the simulator only."""
        return asked if self.simulated else 0.0

    @property
    def line_per_trial(self) -> bool:
        """A real trial takes long enough to deserve its own progress line."""
        return not self.simulated


def plan(req: PlanRequest) -> Plan:
    """The search `req` describes; one BadInput line for anything the backend or DB cannot do. The
    backend's own checks of the command line (BackendKind.check_args) are the command's to make."""
    kind = backend_kind(req.backend)
    bugs = parse_list(req.bugs)
    fixed = parse_db_options(req.db_options)
    if kind.simulated:
        if req.db != DEFAULT_DB:
            raise BadInput(f"--db: the simulator runs our cluster only; explore {req.db} on a real backend "
                           "(--backend docker, ssh or local)")
        if fixed:
            raise BadInput("--db-option: our cluster in the simulator takes none "
                           "(its settings are --read-mode)")
        if req.reproduce is not None and req.reproduce != (1, 1):
            raise BadInput("--reproduce: a simulated replay is exact (1/1); the rate is for real backends")
        check_bugs(bugs)
        space = sim_space(req)
        return Plan(kind.name, True, req.db, bugs, space, (1, 1),
                    SIM_SHRINK_BUDGET_S if req.shrink_budget is None else req.shrink_budget)
    served = kind.workloads()
    if served is not None:  # a world of its own (maelstrom): its workloads, its faults, real time
        return world_plan(req, kind, sorted(served), bugs, fixed)
    if not kind.provisions:
        raise BadInput(f"--backend {kind.name}: has no nodes to run a DB on "
                       "(choose docker, ssh, local, maelstrom or sim)")
    db_cls = load_object(req.db, option="--db")
    check_bugs(bugs, declared_bugs(req.db), db=req.db)
    names = parse_list(req.nemeses)
    refs = [n for n in names if n not in FAMILY_NAMES and n != "none" and is_reference(n, "--nemesis")]
    families = [n for n in names if n not in refs]
    workloads = parse_list(req.workloads)
    outside = [f for ref in refs for f in outside_families(
        ref, db_cls, req.db, _probe_spec(req, kind.name, ref, workloads[0] if workloads else "register"))]
    hosts, node_counts = host_node_counts(kind, req.backend_options, req.node_counts or [])
    space = real_space(db_cls, req.db, default_db=req.db == DEFAULT_DB, workloads=workloads,
                       families=[] if families == ["none"] or (refs and not families) else (families or None),
                       modes=parse_list(req.read_modes), node_counts=node_counts,
                       time_limits=req.time_limits or (), fixed=fixed, outside=outside)
    return Plan(kind.name, False, req.db, bugs, space, req.reproduce or REAL_REPRODUCE,
                REAL_SHRINK_BUDGET_S if req.shrink_budget is None else req.shrink_budget, outside, hosts,
                dict(req.backend_options))


def world_plan(req: PlanRequest, kind: BackendKind, served: list[str], bugs: list[str],
               fixed: dict[str, str]) -> Plan:
    """The search on a backend that builds its own world in real time (maelstrom: nodes of the
    program --bin names): the workloads it serves, the fault families it carries out (no leader
    targets: its nodes name none), its own options drawn per trial (the network's latency) unless
    the command line fixes them, and short main phases (nothing is provisioned)."""
    for given, flag in ((req.db != DEFAULT_DB, "--db"), (bugs, "--bug"), (fixed, "--db-option"),
                        (parse_list(req.read_modes), "--read-mode")):
        if given:
            raise BadInput(f"{flag}: not for --backend {kind.name} (the system under test is its own)")
    workloads = parse_list(req.workloads) or served
    for w in workloads:
        if w not in served:
            raise BadInput(f"--workload: --backend {kind.name} serves {', '.join(served)}, not {w!r}")
    able = kind.fault_families()
    families = parse_list(req.nemeses)
    families = [] if families == ["none"] else (families or list(able))
    for f in families:
        if f not in able:
            raise BadInput(f"--nemesis: {f!r}: --backend {kind.name} carries out "
                           f"{', '.join(able) or 'no faults'} (or none)")
    drawn = kind.explore_options()
    values = {k: (req.backend_options[k],) if k in req.given_backend_options else v
              for k, v in drawn.items()}
    space = Space(workloads=tuple(workloads), families=tuple(families), read_modes=(None,),
                  shapes=tuple(s for s in SHAPES if s != "leader"),
                  targets=tuple(t for t in TARGETS if t != "leader"), intervals=WORLD_INTERVALS,
                  node_counts=tuple(sorted(set(req.node_counts or REAL_NODE_COUNTS))),
                  time_limits=tuple(sorted(set(req.time_limits or WORLD_TIME_LIMITS))),
                  backend_option_values=tuple(sorted(values.items())))
    options = {k: v for k, v in req.backend_options.items() if k not in drawn}  # a trial's come drawn
    # what the backend refuses of every trial (no --bin, a latency out of range): one line, before
    # the search's directory exists
    probe = _probe_spec(req, kind.name, "none", workloads[0])
    for k, vs in values.items():
        for v in vs:
            kind.check_spec(replace(probe, options={**options, k: v}))
    return Plan(kind.name, False, req.db, [], space, req.reproduce or REAL_REPRODUCE,
                REAL_SHRINK_BUDGET_S if req.shrink_budget is None else req.shrink_budget,
                backend_options=options)


def sim_space(req: PlanRequest) -> Space:
    """The simulator's space narrowed to what `req` names: our cluster's workloads, fault families
    and read modes, and the node counts and main-phase lengths asked for."""
    registry = builtin_workloads()
    workloads = parse_list(req.workloads) or [w for w in DEFAULT_WORKLOADS if w in registry]
    for w in workloads:
        if w not in DEFAULT_WORKLOADS:
            raise BadInput(f"--workload: {w!r} cannot be explored "
                           f"(choose from {', '.join(DEFAULT_WORKLOADS)})")
    families = parse_list(req.nemeses)
    if families == ["none"]:
        families = []
    elif not families:
        families = list(FAMILY_NAMES)
    for f in families:
        if f not in FAMILY_NAMES:
            raise BadInput(f"--nemesis: {f!r} is not a fault family (choose from {', '.join(FAMILY_NAMES)}, "
                           "or none)")

    read_modes = parse_list(req.read_modes) or list(SAFE_READ_MODES)
    for m in read_modes:
        if m not in READ_MODES:
            raise BadInput(f"--read-mode: unknown read mode {m!r} (choose from {', '.join(READ_MODES)})")
    space = Space(workloads=tuple(workloads), families=tuple(families), read_modes=tuple(read_modes))
    if req.node_counts:
        space = replace(space, node_counts=tuple(sorted(set(req.node_counts))))
    if req.time_limits:
        space = replace(space, time_limits=tuple(sorted(set(req.time_limits))))
    return space


def host_node_counts(kind: BackendKind, options: dict[str, Any],
                     asked: Sequence[int]) -> tuple[list[str] | None, tuple[int, ...]]:
    """On a backend whose nodes are the hosts its options name (ssh), those hosts and the node counts
    a search may draw: the ones asked for, each at most the hosts given, else the real backends'
    default counts that fit (all the hosts when none does). Elsewhere (None, the counts asked)."""
    if not kind.names_hosts:
        return None, tuple(asked)
    hosts = kind.hosts(options)
    if not hosts:
        raise BadInput(f"--backend {kind.name}: explore runs on the hosts you name, one {kind.hosts_flag} "
                       "per node")
    over = sorted({n for n in asked if n > len(hosts)})
    if over:
        raise BadInput(f"--node-count {over[-1]}: --backend {kind.name} has {len(hosts)} host(s) "
                       f"({', '.join(hosts)}); name more with {kind.hosts_flag} or ask for at most "
                       f"{len(hosts)}")
    counts = tuple(asked) or tuple(n for n in REAL_NODE_COUNTS if n <= len(hosts)) or (len(hosts),)
    return hosts, counts


def _probe_spec(req: PlanRequest, backend: str, ref: str, workload: str) -> TestSpec:
    """A spec to construct an outside nemesis with, to read what it declares, or to ask a backend
    whether it can run the search's trials (nothing runs)."""
    return TestSpec(name="explore", workload=workload, nemesis=[ref], nodes=["n1", "n2", "n3"],
                    time_limit=10.0, concurrency=3, rate=0.0, nemesis_interval=5.0, seed=0, backend=backend,
                    read_mode=None, bugs=[], db=req.db, results_dir=Path(req.results_dir),
                    options=dict(req.backend_options))
