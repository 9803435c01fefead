"""A schedule: one run written down as data, so it can be shrunk, stored and replayed.

A schedule names the test (workload, nodes, seed, read mode, bugs, time limit, clients) and lists
every op the main phase performed, each with its offset in seconds from the start of the main phase:
client ops by the worker thread that issued them, nemesis ops on the "nemesis" thread. Replayed in
simulation with the same seed it reproduces the run exactly; on Docker the nemesis ops land at the
same offsets, so the same faults hit the cluster at the same moments.

The file is JSON (`save` / `load`); every problem with a file a user hands in is one BadInput line
naming the file and what is wrong.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jepsen_py.backends import KINDS
from jepsen_py.errors import BadInput, quote
from jepsen_py.files import make_dirs
from jepsen_py.history import depth_ok
from jepsen_py.nemeses.faults import FAULTS
from jepsen_py.nemeses.targets import TARGETS
from jepsen_py.nodenames import check_node_name
from jepsen_py.numbers import MAX_SECONDS, check
from jepsen_py.spec import CONCURRENCY, NEMESIS_INTERVAL, NODE_COUNT, RATE, READ_MODES, SEED, TIME_LIMIT
from jepsen_py.store import read_json, write_text
from jepsen_py.workloads import min_nodes

FORMAT = "jepsen-py-schedule"
VERSION = 1
NEMESIS_THREAD = "nemesis"

# What a schedule file may hold, beyond the bounds its fields share with the `run` flags (spec.py):
# explore writes files of kilobytes, with a few hundred events nested three deep; a file far past
# these is no schedule, and reading it would exhaust memory or the parser's stack.
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_EVENTS = 1_000_000
MAX_DEPTH = 32
# Names (workload, bugs, anomaly kind, op names) are words; a bug list is a handful of them.
MAX_NAME = 200
MAX_BUGS = 64
# The options a schedule carries into its replay: the client rate explore ran it at, and the backend
# settings explore draws per trial (a Maelstrom network's latency: a backend's EXPLORE_OPTIONS).
# Anything else (the other backend settings, --checker and --generator references) comes from the
# command line, never a file.
OPTIONS = ("rate",)


def carried_options() -> tuple[str, ...]:
    """Every option key a schedule may carry: OPTIONS and each backend's drawn ones."""
    return (*OPTIONS, *sorted({k for kind in KINDS.values() if not kind.simulated and not kind.provisions
                               for k in kind.explore_options()}))

# Fault families as the nemeses name their ops (nemeses.faults, the one vocabulary): family ->
# (ops that start it, the op that stops it, the --nemesis name that handles them).
FAMILIES: dict[str, tuple[tuple[str, ...], str, str]] = {
    k.name: (tuple(sorted(k.starts)), sorted(k.stops)[0], k.name) for k in FAULTS
}
START_FAMILY: dict[str, str] = {f: fam for fam, (starts, _, _) in FAMILIES.items() for f in starts}
STOP_FAMILY: dict[str, str] = {stop: fam for fam, (_, stop, _) in FAMILIES.items()}


def family_of(f: str) -> str | None:
    """The fault family a nemesis op belongs to, or None for an op no nemesis here knows."""
    return START_FAMILY.get(f) or STOP_FAMILY.get(f)


@dataclass(frozen=True)
class OutsideFamily:
    """A fault family of an outside nemesis (`--nemesis MODULE:NAME`): the ops that start it, the op
    that stops it, and the reference a replay builds the nemesis from. A schedule that uses one
    carries it, so the file replays without knowing the search that wrote it."""

    name: str
    ref: str
    starts: tuple[str, ...]
    stop: str

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "starts": list(self.starts), "stop": self.stop}


def register_outside(fam: OutsideFamily) -> None:
    """Adds an outside family to this process's vocabulary (FAMILIES and its indexes), so schedules,
    fault windows and coverage read its ops as they read a built-in's. The same family again is a
    no-op; a name or op a different family already has is refused (BadInput)."""
    known = FAMILIES.get(fam.name)
    entry = (tuple(sorted(fam.starts)), fam.stop, fam.ref)
    if known is not None:
        if known != entry:
            raise BadInput(f"--nemesis {fam.ref}: fault family {fam.name!r} is already another nemesis's")
        return
    for f in (*fam.starts, fam.stop):
        if family_of(f) is not None:
            raise BadInput(f"--nemesis {fam.ref}: op {f!r} is already fault family {family_of(f)!r}'s")
    FAMILIES[fam.name] = entry
    START_FAMILY.update({f: fam.name for f in fam.starts})
    STOP_FAMILY[fam.stop] = fam.name


@dataclass(frozen=True)
class Event:
    """One op of the main phase: `at` seconds after it began, on `thread` (a client worker number or
    "nemesis"). `node` is set only when the op was sent to a named node rather than the worker's own."""

    at: float
    thread: int | str
    f: str
    key: Any = None
    value: Any = None
    node: str | None = None
    # The exact test time the op was asked for, when recorded in simulation: a replay whose main
    # phase starts at the same moment (same seed, same setup) hands the op out at exactly that time,
    # which start + offset, in floating point, need not be.
    t: float | None = field(default=None, compare=False)
    # What the recorded worker was told to wait for (Pending.until, None for "an event") each time it
    # asked between its previous op and this one: a replay that tells it the same waits wakes it at
    # the very same moments, to the last bit of the simulator's clock.
    w: tuple[float | None, ...] | None = field(default=None, compare=False)

    @property
    def is_nemesis(self) -> bool:
        return self.thread == NEMESIS_THREAD

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"at": round(self.at, 6), "thread": self.thread, "f": self.f}
        if self.key is not None:
            d["key"] = self.key
        if self.value is not None:
            d["value"] = self.value
        if self.node is not None:
            d["node"] = self.node
        if self.t is not None:
            d["t"] = self.t
        if self.w:
            d["w"] = list(self.w)
        return d


@dataclass(frozen=True)
class FaultWindow:
    """A fault from the op that started it to the op that stopped it (None: still on at the end)."""

    family: str
    start: Event
    stop: Event | None

    @property
    def end(self) -> float:
        return math.inf if self.stop is None else self.stop.at


def fault_windows(events: Iterable[Event]) -> list[FaultWindow]:
    """Pairs every fault-starting nemesis op with the stop of its family that ends it. A family's
    stop ends every window of that family still open (resume thaws every paused node)."""
    open_: dict[str, list[Event]] = {}
    out: list[FaultWindow] = []
    for e in sorted((e for e in events if e.is_nemesis), key=lambda e: e.at):
        if e.f in START_FAMILY:
            open_.setdefault(START_FAMILY[e.f], []).append(e)
        elif e.f in STOP_FAMILY:
            for s in open_.pop(STOP_FAMILY[e.f], []):
                out.append(FaultWindow(STOP_FAMILY[e.f], s, e))
    for fam, starts in open_.items():
        out.extend(FaultWindow(fam, s, None) for s in starts)
    return sorted(out, key=lambda w: w.start.at)


@dataclass
class Schedule:
    """A whole main phase as data, plus what a replay needs to rebuild the test around it."""

    workload: str
    nodes: list[str]
    seed: int
    time_limit: float
    concurrency: int
    events: list[Event]
    # None for a DB that declares no read modes (plugins.read_modes)
    read_mode: str | None = "read-index"
    bugs: list[str] = field(default_factory=list)
    nemesis_interval: float = 10.0
    options: dict[str, Any] = field(default_factory=dict)
    # The DB's own settings the run had (--db-option KEY=VALUE): explore draws them from the values
    # the DB declares (db_option_values()), so they are part of what was found
    db_options: dict[str, str] = field(default_factory=dict)
    # The real backend the schedule was recorded on (None: the simulator). Its offsets are then a
    # real cluster's already: a replay anywhere real runs it as recorded, not stretched.
    recorded_on: str | None = None
    # The outside nemeses' fault families its nemesis ops use (registered when it is loaded)
    outside: list[OutsideFamily] = field(default_factory=list)
    # The final phase's ops (reads of every key on every node, after heal), in order.
    final: list[Event] = field(default_factory=list)
    # The anomaly kind this schedule shows, when it is a finding (what shrinking preserved).
    anomaly: str | None = None
    # When the recorded main phase began (test seconds, simulation only): see Event.t.
    t0: float | None = None

    def __post_init__(self) -> None:
        self.events = sorted(self.events, key=_order)

    @property
    def nemesis_events(self) -> list[Event]:
        return [e for e in self.events if e.is_nemesis]

    @property
    def client_events(self) -> list[Event]:
        return [e for e in self.events if not e.is_nemesis]

    @property
    def fault_count(self) -> int:
        """Fault events: the ops that start a fault (their stops come with them)."""
        return sum(1 for e in self.nemesis_events if e.f in START_FAMILY)

    @property
    def keys(self) -> list[Any]:
        seen: list[Any] = []
        for e in self.client_events:
            if e.key is not None and e.key not in seen:
                seen.append(e.key)
        return seen

    @property
    def min_nodes(self) -> int:
        """The fewest nodes this schedule still means the same thing on: what its workload's recorded
        ops need (a create asking for three copies is refused by a smaller cluster)."""
        return min_nodes(self.workload, len(self.nodes))

    def families(self) -> list[str]:
        """The --nemesis names a replay must build to carry out every nemesis op here."""
        out: list[str] = []
        for e in self.nemesis_events:
            fam = family_of(e.f)
            if fam is not None and FAMILIES[fam][2] not in out:
                out.append(FAMILIES[fam][2])
        return out

    def fault_targets(self) -> list[str]:
        """The targets named by pause and kill ops (what --fault-targets must allow)."""
        out: list[str] = []
        for e in self.nemesis_events:
            if e.f in ("pause", "kill") and e.value in TARGETS and e.value not in out:
                out.append(e.value)
        return out

    def size(self) -> dict[str, Any]:
        """What a shrunk schedule is judged by."""
        return {"faults": self.fault_count, "nemesis_ops": len(self.nemesis_events),
                "client_ops": len(self.client_events), "clients": self.concurrency,
                "keys": len(self.keys), "nodes": len(self.nodes), "time_limit": self.time_limit}

    def with_events(self, events: Iterable[Event], **changes: Any) -> Schedule:
        changes.setdefault("final", list(self.final))
        changes.setdefault("nodes", list(self.nodes))
        changes.setdefault("bugs", list(self.bugs))
        changes.setdefault("options", dict(self.options))
        changes.setdefault("db_options", dict(self.db_options))
        changes.setdefault("outside", list(self.outside))
        return replace(self, events=list(events), **changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "version": VERSION,
            "workload": self.workload, "nodes": list(self.nodes), "seed": self.seed,
            "time_limit": self.time_limit, "concurrency": self.concurrency,
            "read_mode": self.read_mode, "bugs": list(self.bugs),
            "nemesis_interval": self.nemesis_interval, "options": dict(self.options),
            **({"db_options": dict(self.db_options)} if self.db_options else {}),
            **({"recorded_on": self.recorded_on} if self.recorded_on else {}),
            **({"nemeses": {f.name: f.to_json() for f in self.outside}} if self.outside else {}),
            "anomaly": self.anomaly, "size": self.size(), "t0": self.t0,
            "events": [e.to_json() for e in self.events],
            "final": [e.to_json() for e in self.final],
        }


def _order(e: Event) -> tuple[float, int, str]:
    # nemesis ops first at equal offsets, then clients by thread number: one total order
    return (e.at, -1 if e.is_nemesis else int(e.thread), e.f)


def save(schedule: Schedule, path: Path) -> Path:
    make_dirs(path.parent)
    write_text(path, json.dumps(schedule.to_json(), indent=1, sort_keys=False) + "\n")
    return path


def load(path: Path | str) -> Schedule:
    """Reads a schedule file; anything wrong with it is one BadInput line naming the file. Only a
    regular file is read (a FIFO or a device would make `run --schedule` wait forever), and only
    up to MAX_FILE_BYTES (store.read_json)."""
    p = Path(path)
    try:
        data = read_json(p, what="schedule file", max_bytes=MAX_FILE_BYTES, max_depth=MAX_DEPTH)
    except BadInput as e:
        raise BadInput(f"--schedule: {str(e).replace('no such schedule file', 'no such file')}") from None
    return from_json(data, where=str(p))


def from_json(data: Any, *, where: str = "schedule") -> Schedule:
    """A schedule from parsed JSON: every field checked, every number within the bound its `run` flag
    has, every size within what a schedule holds."""
    if not isinstance(data, dict):
        raise BadInput(f"{where}: a schedule is a JSON object")
    # measured without recursion, so a deep value cannot overflow the stack here; everything after
    # may recurse freely
    if not depth_ok(data, MAX_DEPTH):
        raise BadInput(f"{where}: nested deeper than a schedule is (at most {MAX_DEPTH} levels)")
    if data.get("format", FORMAT) != FORMAT:
        raise BadInput(f"{where}: format {quote(data.get('format'))} is not a {FORMAT}")
    if data.get("version", VERSION) != VERSION:
        raise BadInput(f"{where}: schedule version {quote(data.get('version'))} "
                       f"(this jepsen-py reads {VERSION})")
    workload = _name(_get(data, "workload", str, where), "workload", where)
    raw_nodes = _get(data, "nodes", list, where)
    NODE_COUNT.check(f"{where}: the number of nodes", max(1, len(raw_nodes)))
    nodes = [check_node_name(n, f"{where}: nodes") for n in raw_nodes]
    if not nodes or len(set(nodes)) != len(nodes):
        raise BadInput(f"{where}: nodes must be distinct non-empty names")
    seed = _get(data, "seed", int, where)
    if seed < 0:
        raise BadInput(f"{where}: seed must be >= 0, got {seed}")
    SEED.check(f"{where}: seed", seed)
    time_limit = TIME_LIMIT.check(f"{where}: 'time_limit'", _number(data, "time_limit", where))
    concurrency = _get(data, "concurrency", int, where)
    if concurrency < 1:
        raise BadInput(f"{where}: concurrency must be >= 1, got {concurrency}")
    CONCURRENCY.check(f"{where}: concurrency", concurrency)
    read_mode = data.get("read_mode", "read-index")

    if read_mode is not None and read_mode not in READ_MODES:
        raise BadInput(f"{where}: read_mode {quote(read_mode)} (choose from {', '.join(READ_MODES)}, "
                       "or null for a DB without read modes)")
    recorded_on = data.get("recorded_on")
    if recorded_on is not None and (not isinstance(recorded_on, str) or not recorded_on):
        raise BadInput(f"{where}: recorded_on must be a backend name or null")
    if recorded_on is not None:
        _name(recorded_on, "recorded_on", where)
    db_options = data.get("db_options", {})
    if not isinstance(db_options, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in db_options.items()):
        raise BadInput(f"{where}: db_options must be an object of strings (KEY: VALUE)")
    if len(db_options) > MAX_BUGS:
        raise BadInput(f"{where}: {len(db_options)} db_options, more than a schedule holds "
                       f"(at most {MAX_BUGS})")
    for k, v in db_options.items():
        _name(k, "db_options", where)
        if len(v) > MAX_NAME:
            raise BadInput(f"{where}: db_options {quote(k)}: longer than {MAX_NAME} characters")
    bugs = data.get("bugs", [])
    if not isinstance(bugs, list) or not all(isinstance(b, str) for b in bugs):
        raise BadInput(f"{where}: bugs must be a list of names")
    if len(bugs) > MAX_BUGS:
        raise BadInput(f"{where}: {len(bugs)} bugs, more than a schedule holds (at most {MAX_BUGS})")
    for b in bugs:
        _name(b, "bugs", where)
    options = data.get("options", {})
    if not isinstance(options, dict):
        raise BadInput(f"{where}: options must be an object")
    carried = carried_options() if any(k not in OPTIONS for k in options) else OPTIONS
    unknown = sorted(k for k in options if k not in carried)
    if unknown:
        named = ", ".join(map(quote, unknown[:3]))
        if len(unknown) > 3:
            named += f" and {len(unknown) - 3} more"
        raise BadInput(f"{where}: options {named} are not a schedule's to set "
                       f"(a schedule carries {', '.join(carried)}; the rest comes from the command line)")
    if "rate" in options:
        RATE.check(f"{where}: options 'rate'", options["rate"])
    for k, v in options.items():  # a drawn backend option: its backend checks the value when it runs
        if k != "rate" and not ((isinstance(v, str) and len(v) <= MAX_NAME) or _finite(v)):
            raise BadInput(f"{where}: options {quote(k)}: a number or a word")
    interval = 10.0
    if "nemesis_interval" in data:
        interval = NEMESIS_INTERVAL.check(f"{where}: 'nemesis_interval'",
                                          _number(data, "nemesis_interval", where))
    t0 = data.get("t0")
    if t0 is not None and not _finite(t0):
        raise BadInput(f"{where}: 't0' must be seconds or null, got {quote(t0)}")
    if t0 is not None:
        _seconds(f"{where}: 't0'", t0)
    anomaly = data.get("anomaly")
    if anomaly is not None and not isinstance(anomaly, str):
        raise BadInput(f"{where}: anomaly must be a kind name or null")
    if anomaly is not None:
        _name(anomaly, "anomaly", where)
    outside = _outside(data.get("nemeses", {}), where)
    raw = _get(data, "events", list, where)
    raw_final = data.get("final", [])
    if not isinstance(raw_final, list):
        raise BadInput(f"{where}: 'final' must be a list of events")
    for name, items in (("events", raw), ("final", raw_final)):
        if len(items) > MAX_EVENTS:
            raise BadInput(f"{where}: {len(items):,} {name}, more than a schedule holds "
                           f"(at most {MAX_EVENTS:,})")
    events = [_event(e, i, where, concurrency) for i, e in enumerate(raw)]
    # final reads go to whichever worker is free: their recorded thread is only a note
    final = [_event(e, i, f"{where}: final", None) for i, e in enumerate(raw_final)]
    if any(e.is_nemesis for e in final):
        raise BadInput(f"{where}: the final phase has no nemesis ops")
    for e in events:
        if e.at > time_limit:
            raise BadInput(f"{where}: event {quote(e.f)} at {e.at:g} s is past the time limit "
                           f"{time_limit:g} s")
    return Schedule(workload=workload, nodes=list(nodes), seed=seed, time_limit=time_limit,
                    concurrency=concurrency, events=events, read_mode=read_mode, bugs=list(bugs),
                    nemesis_interval=interval, options=dict(options), db_options=dict(db_options),
                    recorded_on=recorded_on, outside=outside, final=final,
                    anomaly=anomaly, t0=None if t0 is None else float(t0))


def _outside(raw: Any, where: str) -> list[OutsideFamily]:
    """The file's outside fault families, checked and registered (before its events are read)."""
    if not isinstance(raw, dict) or len(raw) > MAX_BUGS:
        raise BadInput(f"{where}: nemeses must be an object of at most {MAX_BUGS} fault families")
    out: list[OutsideFamily] = []
    for name, d in raw.items():
        _name(name, "nemeses", where)
        ok = (isinstance(d, dict) and isinstance(d.get("ref"), str) and isinstance(d.get("stop"), str)
              and isinstance(d.get("starts"), list) and d["starts"] and len(d["starts"]) <= MAX_BUGS
              and all(isinstance(f, str) for f in d["starts"]))
        if not ok:
            raise BadInput(f"{where}: nemeses {quote(name)}: expected {{ref, starts: [ops], stop: op}}")
        for f in (d["ref"], d["stop"], *d["starts"]):
            _name(f, f"nemeses {name}", where)
        fam = OutsideFamily(name, d["ref"], tuple(d["starts"]), d["stop"])
        register_outside(fam)
        out.append(fam)
    return out


def _get(data: dict[str, Any], name: str, typ: type, where: str) -> Any:
    if name not in data:
        raise BadInput(f"{where}: missing {name!r}")
    v = data[name]
    if not isinstance(v, typ) or (typ is int and isinstance(v, bool)):
        what = {int: 'integer', str: 'string', list: 'list'}.get(typ, typ.__name__)
        raise BadInput(f"{where}: {name!r} must be {'an' if typ is int else 'a'} {what}, got {quote(v)}")
    return v


def _name(v: str, field: str, where: str) -> str:
    if not v or len(v) > MAX_NAME:
        raise BadInput(f"{where}: {field} {quote(v)} is not a name (1 to {MAX_NAME} characters)")
    return v


def _number(data: dict[str, Any], name: str, where: str) -> float:
    v = data.get(name)
    if not _finite(v) or v <= 0:
        raise BadInput(f"{where}: {name!r} must be a positive number of seconds, got {quote(v)}")
    return float(v)


def _finite(v: Any) -> bool:
    """A JSON number a float holds: not a bool, not NaN or infinite, not an integer of 400 digits."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:
        return False


def _seconds(name: str, v: Any) -> float:
    """A recorded test time: within the week every duration of a test is bounded by."""
    return float(check(name, v, lo=-MAX_SECONDS, hi=MAX_SECONDS))


def _event(raw: Any, i: int, where: str, concurrency: int | None) -> Event:
    at = f"{where}: events[{i}]"
    if not isinstance(raw, dict):
        raise BadInput(f"{at}: an event is an object with at, thread and f")
    unknown = sorted(set(raw) - {"at", "thread", "f", "key", "value", "node", "t", "w"})
    if unknown:
        raise BadInput(f"{at}: unknown fields {', '.join(unknown)}")
    t = raw.get("at")
    if not _finite(t) or t < 0:
        raise BadInput(f"{at}: 'at' must be seconds >= 0, got {quote(t)}")
    thread = raw.get("thread")
    if thread != NEMESIS_THREAD and (isinstance(thread, bool) or not isinstance(thread, int) or thread < 0
                                     or (concurrency is not None and thread >= concurrency)):
        clients = "a client number" if concurrency is None else f"a client 0..{concurrency - 1}"
        raise BadInput(f"{at}: 'thread' must be \"nemesis\" or {clients}, got {quote(thread)}")
    f = raw.get("f")
    if not isinstance(f, str) or not f:
        raise BadInput(f"{at}: 'f' must be an op name, got {quote(f)}")
    _name(f, "'f'", at)
    if thread == NEMESIS_THREAD and family_of(f) is None:
        known = ", ".join(sorted({*START_FAMILY, *STOP_FAMILY}))
        raise BadInput(f"{at}: no nemesis does {quote(f)} (known: {known})")
    node = raw.get("node")
    if node is not None:
        check_node_name(node, f"{at}: 'node'")
    exact = raw.get("t")
    if exact is not None and (not _finite(exact) or exact < 0):
        raise BadInput(f"{at}: 't' must be seconds >= 0, got {quote(exact)}")
    if exact is not None:
        _seconds(f"{at}: 't'", exact)
    waits = raw.get("w")
    if waits is not None and (not isinstance(waits, list) or not all(x is None or _finite(x) for x in waits)):
        raise BadInput(f"{at}: 'w' must be a list of seconds or nulls")
    for x in waits or ():
        if x is not None:
            _seconds(f"{at}: 'w'", x)
    return Event(at=float(t), thread=thread, f=f, key=_hashable(raw.get("key")), value=raw.get("value"),
                 node=node, t=None if exact is None else float(exact),
                 w=None if waits is None else tuple(None if x is None else float(x) for x in waits))


def _hashable(key: Any) -> Any:
    """JSON gives lists where a key was a tuple; keys are compared and grouped, so make them tuples."""
    if isinstance(key, list):
        return tuple(_hashable(k) for k in key)
    return key


def renumber_threads(events: Sequence[Event]) -> tuple[list[Event], int]:
    """Client threads renumbered 0..k-1 in order of first use (after dropping some): (events, k)."""
    order: dict[int, int] = {}
    for e in sorted(events, key=_order):
        if not e.is_nemesis and e.thread not in order:
            order[int(e.thread)] = len(order)
    out = [e if e.is_nemesis else replace(e, thread=order[int(e.thread)]) for e in events]
    return out, max(1, len(order))
