"""The fault vocabulary: which nemesis op starts each kind of fault, which op ends it, what it does
to a node, and whom it hit, read back out of a history.

The nemeses name their ops from here, and checkers (crash, availability) and pictures (timeline,
perf) ask this module instead of guessing from op names. It does no I/O and imports no nemesis, so
analysing a stored history never pulls in iptables or Docker code.

A nemesis from outside the project declares its faults in the same vocabulary: its optional
`faults()` returns FaultKinds (which of its ops start and end each, what the fault does: NETWORK,
PROCESS, PAUSE, CLOCK). The interpreter writes the declaration into each such op's meta ("fault"),
so a stored history says what its faults were without the nemesis's code, and the fault windows
take an op's own declaration before the built-in table (`op_kind`). Whom an op hit is what its
completion's value names ("nodes" or "node"; a network fault's isolated side is "node" or the
smaller "sides").

Histories imported from elsewhere (Jepsen's own) may use names no nemesis here uses; for those the
old rules of thumb still apply, in one place: a verb such as stop-*, heal, resume or reset-* ends a
fault of the same family, and names such as kill, pause, crash or freeze silence their node.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from jepsen_py.history import FAIL, NEMESIS, Op, Pair, pairs

# What a fault does to the nodes it hits.
NETWORK = "network"  # messages between nodes dropped
PROCESS = "process"  # the node's process killed (restarted from disk when the fault ends)
PAUSE = "pause"  # the node's process frozen (thawed when the fault ends)
CLOCK = "clock"  # the node's clock moved
EFFECTS = frozenset({NETWORK, PROCESS, PAUSE, CLOCK})

START_PARTITION, STOP_PARTITION = "start-partition", "stop-partition"
KILL, RESTART = "kill", "start"
PAUSE_F, RESUME = "pause", "resume"
BUMP_CLOCK, STROBE_CLOCK, RESET_CLOCK = "bump-clock", "strobe-clock", "reset-clock"
START_LEADER_CLOCK, STOP_LEADER_CLOCK = "start-leader-clock", "stop-leader-clock"
#: The op the runner records when it heals every fault at the end of the main phase.
HEAL = "heal"


@dataclass(frozen=True, slots=True)
class FaultKind:
    """One kind of fault: the ops that start it, the ops that end it, what it does."""

    name: str
    starts: frozenset[str]
    stops: frozenset[str]
    effects: frozenset[str]
    # A new start replaces the fault of the same op still in force (a new partition heals the old).
    replaces: bool = False

    @property
    def silences(self) -> bool:
        """Whether the nodes it hits stop answering (killed or frozen) while it lasts."""
        return bool(self.effects & {PROCESS, PAUSE})


FAULTS: tuple[FaultKind, ...] = (
    FaultKind("partition", frozenset({START_PARTITION}), frozenset({STOP_PARTITION}),
              frozenset({NETWORK}), replaces=True),
    FaultKind("kill", frozenset({KILL}), frozenset({RESTART}), frozenset({PROCESS})),
    FaultKind("pause", frozenset({PAUSE_F}), frozenset({RESUME}), frozenset({PAUSE})),
    FaultKind("clock", frozenset({BUMP_CLOCK, STROBE_CLOCK}), frozenset({RESET_CLOCK}), frozenset({CLOCK})),
    # the leader frozen while it is cut off and its clock stepped back, then thawed
    FaultKind("leader-clock", frozenset({START_LEADER_CLOCK}), frozenset({STOP_LEADER_CLOCK}),
              frozenset({PAUSE, NETWORK, CLOCK})),
)
_BY_START = {f: k for k in FAULTS for f in k.starts}
_BY_STOP = {f: k for k in FAULTS for f in k.stops}

# Rules of thumb for names no nemesis here uses (imported histories).
_UNDO_PREFIXES = ("stop", "heal", "resume", "reset", "restart", "recover", "cont", "unpause", "repair")
_SILENCING = re.compile(r"kill|pause|crash|stop-node|stop-process|sigstop|freeze|suspend", re.I)
_SILENCING_STOP = re.compile(r"stop-(node|process)", re.I)  # "stop" as in SIGSTOP: a fault, not an undo


def kind_of(f: str) -> FaultKind | None:
    """The kind of fault an op starts or ends; None for an op no nemesis here performs."""
    return _BY_START.get(f) or _BY_STOP.get(f)


#: The op meta key that carries an outside nemesis's declaration of the fault an op starts or ends.
META = "fault"


def declared(nemesis: object) -> dict[str, FaultKind]:
    """The faults a nemesis declares with its optional `faults()`, by op name (each start and stop
    op). ValueError, in one line, for a declaration the analysis could not use."""
    fn = getattr(nemesis, "faults", None)
    if not callable(fn):
        return {}
    fs_fn = getattr(nemesis, "fs", None)
    handles = frozenset(fs_fn()) if callable(fs_fn) else frozenset()
    who = type(nemesis).__name__
    out: dict[str, FaultKind] = {}
    for k in fn():
        if not isinstance(k, FaultKind):
            raise ValueError(f"{who}.faults() must return FaultKinds (jepsen_py.nemeses.faults), "
                             f"got {type(k).__name__}")
        if not k.name or not k.starts:
            raise ValueError(f"{who}.faults(): a fault needs a name and at least one start op")
        if not k.effects or not k.effects <= EFFECTS:
            raise ValueError(f"{who}.faults(): fault {k.name!r} has effects {sorted(k.effects)}; "
                             f"choose one or more of {', '.join(sorted(EFFECTS))}")
        for f in sorted(k.starts | k.stops):
            if f in out or (f in k.starts and f in k.stops):
                raise ValueError(f"{who}.faults(): op {f!r} is declared twice")
            if f not in handles:
                raise ValueError(f"{who}.faults(): fault {k.name!r} names op {f!r}, which its fs() "
                                 "does not handle")
            out[f] = k
    return out


def mark(op: Op, kind: FaultKind) -> Op:
    """`op` with `kind`'s declaration in its meta (in place: the op is about to be recorded)."""
    op.meta = {**op.meta, META: {"kind": kind.name, "starts": sorted(kind.starts),
                                 "stops": sorted(kind.stops), "effects": sorted(kind.effects),
                                 "replaces": kind.replaces}}
    return op


def _declared_kind(op: Op | None) -> FaultKind | None:
    """The fault an op's own meta declares (see `mark`); None when it declares none or not
    readably (a hand-edited history falls back to the built-in table and the rules of thumb)."""
    d = op.meta.get(META) if op is not None and isinstance(op.meta, dict) else None
    if not isinstance(d, dict):
        return None
    name, starts, stops, effects = d.get("kind"), d.get("starts"), d.get("stops"), d.get("effects")
    if not (isinstance(name, str) and all(isinstance(x, list) and all(isinstance(f, str) for f in x)
                                          for x in (starts, stops, effects))):
        return None
    assert isinstance(starts, list) and isinstance(stops, list) and isinstance(effects, list)
    if op.f not in starts and op.f not in stops:
        return None
    return FaultKind(name, frozenset(starts), frozenset(stops), frozenset(effects),
                     replaces=d.get("replaces") is True)


def op_kind(p: Pair) -> tuple[FaultKind | None, bool]:
    """What a nemesis op pair is: the fault kind it starts or ends (its own declaration first, then
    the built-in table; None for a foreign name), and whether it ends a fault."""
    kind = _declared_kind(p.complete) or _declared_kind(p.invoke)
    if kind is not None:
        return kind, p.invoke.f in kind.stops
    f = p.invoke.f
    return _BY_START.get(f) or _BY_STOP.get(f), is_stop(f)


def _verb(f: str) -> str:
    return f.replace("_", "-").split("-", 1)[0].lower()


def _family(f: str) -> str:
    """start-partition and stop-partition share the family "partition"; bare verbs have none."""
    parts = f.replace("_", "-").lower().split("-", 1)
    return parts[1] if len(parts) == 2 else ""


def is_stop(f: str) -> bool:
    """Whether a nemesis op ends a fault (stop-partition, resume, start after kill, heal, ...)."""
    if f in _BY_STOP:
        return True
    if f in _BY_START or _SILENCING_STOP.match(f):
        return False
    return _verb(f).startswith(_UNDO_PREFIXES)


def silences(f: str) -> bool:
    """Whether a fault started by op `f` takes its nodes' processes down (kill, pause, ...)."""
    kind = _BY_START.get(f)
    if kind is not None:
        return kind.silences
    return not is_stop(f) and bool(_SILENCING.search(f))


def targets(value: Any, nodes: Iterable[str]) -> frozenset[str] | None:
    """The nodes a nemesis op's value says it hit; None when it names none (it may hit anyone).

    A value that says outright whom it hit ("nodes", or "node") is taken at its word: it may also
    mention bystanders (leader-clock's grudge names every node it cut its node off from)."""
    known = set(nodes)
    if isinstance(value, dict):
        said = value.get("nodes", value.get("node"))
        explicit = [said] if isinstance(said, str) else said
        if isinstance(explicit, list) and explicit and all(n in known for n in explicit):
            return frozenset(explicit)
    found: set[str] = set()

    def walk(v: Any) -> None:
        if isinstance(v, str):
            if v in known:
                found.add(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)
        elif isinstance(v, list | tuple | set | frozenset):
            for x in v:
                walk(x)

    walk(value)
    return frozenset(found) or None


@dataclass(slots=True)
class FaultWindow:
    """One fault in force: from its start op's invocation to the completion of the op that undid
    it (None: never undone). Times are history nanoseconds."""

    f: str  # the op that began it
    kind: FaultKind | None  # None: a name no nemesis here uses
    start: int  # the start op's invocation
    started: int  # its completion: the fault is in force from here at the latest
    end: int | None
    value: Any  # what the nemesis said it did (the completion's value, else the invocation's)
    targets: frozenset[str] | None  # whom it hit; None: unknown, anyone

    @property
    def silences(self) -> bool:
        return self.kind.silences if self.kind is not None else silences(self.f)


def windows_of_pairs(nemesis_pairs: Sequence[Pair], *, nodes: Iterable[str] = ()) -> list[FaultWindow]:
    """Pairs each fault-causing nemesis op with the op that undid it.

    An undo closes the newest open window of the kind it ends (stop-partition ends start-partition,
    resume ends pause, start ends kill, reset-clock ends bump-clock, a declared stop its declared
    kind; for other names a window of the same family, else the oldest open one); "heal" closes
    all; a new partition (or a start of a kind declared `replaces`) replaces the open one. A strobe
    with a duration ends when its duration is up. A failed nemesis op caused nothing and opens
    nothing.
    """
    nodes = list(nodes)
    out: list[FaultWindow] = []
    open_: list[FaultWindow] = []
    for p in nemesis_pairs:
        if p.complete is not None and p.complete.type == FAIL:
            continue
        f = p.invoke.f
        t = p.invoke.time
        t_done = p.complete.time if p.complete is not None else p.invoke.time
        said = p.complete.value if p.complete is not None else p.invoke.value
        kind, stop = op_kind(p)
        if stop:
            if kind is None and _verb(f) == HEAL:
                closing, open_ = open_, []
            else:
                stopped = kind
                if stopped is not None:
                    same = [w for w in open_ if w.kind == stopped]
                else:
                    fam = _family(f)
                    same = [w for w in open_ if fam and _family(w.f) == fam]
                target = same[-1] if same else (open_[0] if open_ and stopped is None else None)
                closing = [target] if target is not None else []
                open_ = [w for w in open_ if w is not target]
            for w in closing:
                w.end = t_done
            continue
        if kind is not None and kind.replaces:
            for w in [w for w in open_ if w.f == f]:
                w.end = t
                open_.remove(w)
        hit = targets(said, nodes)
        if hit is None and p.complete is not None:
            hit = targets(p.invoke.value, nodes)
        w = FaultWindow(f=f, kind=kind, start=t, started=t_done, end=None, value=said, targets=hit)
        out.append(w)
        duration = said.get("duration-s") if isinstance(said, dict) else None
        if isinstance(duration, int | float) and not isinstance(duration, bool):
            w.end = max(t_done, t + round(float(duration) * 1e9))
        else:
            open_.append(w)
    return out


def own_duration(complete: Op) -> float:
    """Seconds a fault op runs by design before it completes, as its completion says ("duration-s",
    a strobe's length): 0 for an op that is done once in place."""
    said = complete.value.get("duration-s") if isinstance(complete.value, dict) else None
    if isinstance(said, int | float) and not isinstance(said, bool) and said > 0:
        return float(said)
    return 0.0


def fault_windows(history: Sequence[Op], *, nodes: Iterable[str] | None = None) -> list[FaultWindow]:
    """Every fault in a history, with whom it hit. `nodes` defaults to the nodes ops name."""
    if nodes is None:
        nodes = {str(op.node) for op in history if op.node is not None}
    return windows_of_pairs([p for p in pairs(history) if p.invoke.process == NEMESIS], nodes=nodes)
