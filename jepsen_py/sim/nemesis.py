"""The Docker nemeses, carried out on the simulated cluster through the simulator's seams.

The nemesis and its schedule are built exactly as for Docker (jepsen_py.plugins.build_nemesis, i.e.
nemeses.build), and the very same objects run here: the same FaultSchedule, the same target choice
(nemeses.targets.pick, partition shapes and grudges, clock deltas) from the same seeded test.rng,
and the same op names and values, so checkers and pictures read a simulated run's faults as they
read Docker's. Only the seams they act through differ, which the engine puts on the test (test.net,
test.clocks) and the DB: `SimNet` cuts links instead of adding iptables rules, `SimClocks` moves the
node's virtual clock instead of a libfaketime file, `SimDB` pauses, kills and starts the node on its
event loop instead of sending signals. A new fault goes into a seam: its real machines' way beside
iptables or libfaketime (nemeses/net.py, nemeses/clock.py) and its simulated way here.

Pause and kill go through `SimDB`, the DB capabilities the nemeses call (test.db.kill and so on).
ProcessNemesis fans those calls out on threads, as it does to reach several containers at once; the
SimDB only queues them, and `flush` applies them after the op in node order, in virtual time, so the
order of the threads never reaches the simulation.

What takes time is awaited in virtual time instead of a blocking sleep: the partition-leader and
leader-clock starts wait for a leader (`await_leaders`), a strobe flips the clock for its duration
(`SimClocks.astrobe`). SimNemesis awaits those ops; each is the nemesis's own step but for the wait.

A nemesis of ours this module does not model (or a subclass of one, which may do something else) is
refused before the run; one from outside the project runs through the same seams.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from jepsen_py.errors import BadInput
from jepsen_py.history import INFO, Op
from jepsen_py.nemeses import NEMESES
from jepsen_py.nemeses.clock import ClockNemesis
from jepsen_py.nemeses.compose import ComposedNemesis, NoopNemesis
from jepsen_py.nemeses.faults import START_LEADER_CLOCK, START_PARTITION, STROBE_CLOCK
from jepsen_py.nemeses.kill import KillNemesis
from jepsen_py.nemeses.leader_clock import LeaderClockNemesis
from jepsen_py.nemeses.partition import LEADER_POLL_S, LEADER_WAIT_S, PartitionNemesis
from jepsen_py.nemeses.pause import PauseNemesis
from jepsen_py.nemeses.targets import primaries
from jepsen_py.protocols import Nemesis, Test, has_capability


class FaultableCluster(Protocol):
    """What the seams need from the simulated cluster (jepsen_py.sim.cluster.SimCluster)."""

    def kill(self, node: str) -> None: ...

    def start(self, node: str) -> None: ...

    def pause(self, node: str) -> None: ...

    def resume(self, node: str) -> None: ...

    def cut(self, pairs: Iterable[tuple[str, str]]) -> None: ...

    def heal_network(self) -> None: ...

    def set_clock(self, node: str, offset_s: float, drift: float = 0.0) -> None: ...

    def status(self, node: str) -> dict[str, Any] | None: ...


class _NotPlain(Exception):
    """A value whose JSON round trip is more than a copy (a key that is not a string, a type JSON
    converts): the round trip itself decides it."""


def _plain_copy(v: Any) -> Any:
    t = type(v)
    if v is None or t is str or t is int or t is bool or t is float:
        return v
    if t is dict:
        if not all(type(k) is str for k in v):
            raise _NotPlain
        return {k: _plain_copy(x) for k, x in v.items()}
    if t is list or t is tuple:
        return [_plain_copy(x) for x in v]
    raise _NotPlain


def as_received(value: dict[str, Any]) -> dict[str, Any]:
    """`value` as a client receives it over the wire, json.loads(json.dumps(value)), without the
    text in between when it is plain (string keys; strings, numbers, booleans, None, lists and
    tuples): the observer asks every node for its status several times a simulated second."""
    try:
        out: dict[str, Any] = _plain_copy(value)
    except (_NotPlain, RecursionError):
        out = json.loads(json.dumps(value))
    return out


class SimDB:
    """The DB capabilities the nemeses and the observer use, done on the simulated cluster.

    primaries and status answer at once from the nodes' state; pause, resume, kill and start are
    queued and applied by `flush` (see the module docstring). A process fault follows the signals'
    rules: start revives only a killed node (a paused one counts as running), resume only a paused
    one, and a kill ends a paused node too."""

    def __init__(self, cluster: FaultableCluster, nodes: Iterable[str]) -> None:
        self.cluster = cluster
        self.nodes = list(nodes)
        self.killed: set[str] = set()
        self.paused: set[str] = set()
        self._queue: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    # ---- what the nodes say -------------------------------------------------------------------

    def status(self, test: Test | None, node: str) -> dict[str, Any] | None:
        """The node's status as a client of its API receives it: JSON, with the node, role, term and
        leader every answer carries. None for a node that cannot answer (killed or paused)."""
        if node in self.killed or node in self.paused:
            return None
        st = self.cluster.status(node)
        if st is None:
            return None
        out: dict[str, Any] = as_received(st)
        return {**out, "node": out.get("node", out.get("id", node)), "role": out.get("role"),
                "term": out.get("term"), "leader": out.get("leader")}

    def primaries(self, test: Test | None) -> list[str]:
        return sorted(n for n in self.nodes if (self.status(test, n) or {}).get("role") == "leader")

    # ---- process faults, queued ---------------------------------------------------------------

    def _put(self, action: str, node: str) -> None:
        with self._lock:
            self._queue.append((action, node))

    def kill(self, test: Test, node: str) -> None:
        self._put("kill", node)

    def start(self, test: Test, node: str) -> None:
        self._put("start", node)

    def pause(self, test: Test, node: str) -> None:
        self._put("pause", node)

    def resume(self, test: Test, node: str) -> None:
        self._put("resume", node)

    def flush(self) -> None:
        """Applies the queued process faults, node by node (each node's in the order asked)."""
        with self._lock:
            queue, self._queue = self._queue, []
        for action, node in sorted(queue, key=lambda a: a[1]):
            if action == "kill" and node not in self.killed:
                self.cluster.kill(node)
                self.killed.add(node)
                self.paused.discard(node)
            elif action == "start" and node in self.killed:
                self.cluster.start(node)
                self.killed.discard(node)
            elif action == "pause" and node not in self.killed and node not in self.paused:
                self.cluster.pause(node)
                self.paused.add(node)
            elif action == "resume" and node in self.paused:
                self.cluster.resume(node)
                self.paused.discard(node)

    def reset(self) -> None:
        """Every node running and thawed (the end of a run, whatever the nemesis left)."""
        for node in sorted(self.paused):
            self.resume(None, node)  # type: ignore[arg-type]
        for node in sorted(self.killed):
            self.start(None, node)  # type: ignore[arg-type]
        self.flush()


def grudge_cuts(grudge: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """The directed links a grudge cuts: a node holding a grudge against a peer drops what the peer
    sends it (iptables INPUT DROP by source), so the link peer -> node is cut."""
    return sorted((peer, node) for node, peers in grudge.items() for peer in peers)


class SimNet:
    """The simulator's `Net`: cut links for iptables rules. Healing heals every link, as flushing
    the shared JEPSEN-PY chain does on Docker (a leader-clock cut included)."""

    def __init__(self, cluster: FaultableCluster) -> None:
        self.cluster = cluster

    def drop_all(self, test: Test, grudge: Mapping[str, Sequence[str]],
                 first: Collection[str] = ()) -> None:
        """Every link at once: the simulator has no order of installs to choose."""
        self.cluster.cut(grudge_cuts(grudge))

    def heal(self, test: Test) -> None:
        self.cluster.heal_network()

    def ready(self, test: Test) -> None:
        pass  # a cut is atomic here: nothing to make ahead

    def remove(self, test: Test) -> None:
        self.cluster.heal_network()


class SimClocks:
    """The simulator's `Clocks`: the nodes' virtual clocks for libfaketime files. A strobe takes
    virtual time, so SimNemesis awaits `astrobe` in its place."""

    def __init__(self, cluster: FaultableCluster) -> None:
        self.cluster = cluster

    def set_offsets(self, test: Test, offsets: Mapping[str, float]) -> None:
        for node in sorted(offsets):
            self.cluster.set_clock(node, offsets[node])

    def strobe(self, test: Test, base: Mapping[str, float], delta_s: float, period_s: float,
               duration_s: float) -> None:
        raise RuntimeError("a simulated strobe takes virtual time: await SimClocks.astrobe")

    async def astrobe(self, test: Test, base: Mapping[str, float], delta_s: float, period_s: float,
                      duration_s: float) -> None:
        """The strobe in virtual time for its whole duration, as the helper on a node does."""
        loop = asyncio.get_running_loop()
        end = loop.time() + duration_s
        on = False
        while loop.time() < end:
            on = not on
            self.set_offsets(test, {n: b + delta_s if on else b for n, b in base.items()})
            await asyncio.sleep(period_s)
        self.set_offsets(test, base)

    def reset(self, test: Test) -> list[str]:
        """Every node back to offset 0 (the simulator has every node; Docker resets those it
        reaches)."""
        nodes = list(test.nodes)
        self.set_offsets(test, dict.fromkeys(nodes, 0.0))
        return nodes


async def await_leaders(test: Test) -> list[str]:
    """PartitionNemesis.await_leaders in virtual time: the same bound and the same polls."""
    if not has_capability(test.db, "primaries"):
        return []
    loop = asyncio.get_running_loop()
    end = loop.time() + LEADER_WAIT_S
    while not (leaders := primaries(test)) and loop.time() < end:
        await asyncio.sleep(LEADER_POLL_S)
    return leaders


# The ops whose waits take virtual time: awaited here, each the nemesis's own invoke but for the
# wait (a blocking sleep there). Every other op is the nemesis's invoke as on Docker.

async def _start_partition(nemesis: PartitionNemesis, test: Test, op: Op) -> Op:
    shape = nemesis.shape_for(test, op)
    return nemesis.start(test, op, shape, await await_leaders(test) if shape == "leader" else [])


async def _strobe_clock(nemesis: ClockNemesis, test: Test, op: Op) -> Op:
    clocks = test.clocks
    assert isinstance(clocks, SimClocks), "a simulated strobe needs the simulator's clocks"
    nodes, delta_ms, period_ms = nemesis.strobe_plan(test)
    await clocks.astrobe(test, {n: nemesis.offsets.get(n, 0.0) for n in nodes}, delta_ms / 1000.0,
                         period_ms / 1000.0, nemesis.strobe_duration)
    test.state["clock"] = dict(nemesis.offsets)
    return Op(op.index, op.time, INFO, op.process, op.f, op.key,
              nemesis.strobe_value(nodes, delta_ms, period_ms), op.node, None, dict(op.meta))


async def _start_leader_clock(nemesis: LeaderClockNemesis, test: Test, op: Op) -> Op:
    """The freeze around the cut and the clock step is kept (queued pause and resume at the same
    instant): in virtual time the cut and the step are atomic anyway, which is what the freeze buys
    on Docker."""
    return replace(op, type=INFO, value=nemesis._start(test, await await_leaders(test)))


#: The nemesis classes carried out here, with the ops of each awaited in virtual time. Exact types:
#: a subclass may do something else, and is refused.
_CARRIED: dict[type, dict[str, Callable[[Any, Test, Op], Awaitable[Op]]]] = {
    PartitionNemesis: {START_PARTITION: _start_partition},
    ClockNemesis: {STROBE_CLOCK: _strobe_clock},
    LeaderClockNemesis: {START_LEADER_CLOCK: _start_leader_clock},
    PauseNemesis: {},
    KillNemesis: {},
    NoopNemesis: {},
}


def _members(nemesis: object) -> list[Any]:
    """The nemeses `nemesis` is made of, each one the simulator carries out: ours, and any from
    outside the project, act through the test's seams (test.net, test.clocks and the DB's process
    faults, which are the simulator's here), the ops of some awaited in virtual time (_CARRIED). A
    subclass of one of those is refused: it may do what the step awaited for its parent does not."""
    kind = type(nemesis)
    if kind is ComposedNemesis:
        return [m for member in nemesis.members for m in _members(member)]  # type: ignore[attr-defined]
    if kind not in _CARRIED and issubclass(kind, tuple(_CARRIED)):
        raise BadInput(f"--backend sim: the simulator cannot carry out the nemesis {kind.__name__} "
                       f"(it changes one the simulator models: {', '.join(SUPPORTED)})")
    return [nemesis]


#: The --nemesis names the simulator carries out: every one of ours.
SUPPORTED = tuple(n for n in NEMESES if n != "none")


def check_names(names: Iterable[str]) -> None:
    """One line (exit 254) for a --nemesis the simulator cannot model, before anything runs. A
    MODULE:NAME of your own is carried out through the seams (see `_members`)."""
    unsupported = [n for n in names if n not in SUPPORTED and n != "none" and ":" not in n]
    if unsupported:
        raise BadInput(f"--nemesis {unsupported[0]}: the simulator cannot model this nemesis "
                       f"(--backend sim models {', '.join(SUPPORTED)})")


class SimNemesis:
    """The run's nemesis in the simulator: routes each op to its member, awaits it in virtual time,
    then applies the process faults it asked for. The members are the ones built for Docker; they
    act through the test's seams (SimNet, SimClocks, and the DB's process faults, SimDB)."""

    def __init__(self, nemesis: Nemesis, db: SimDB) -> None:
        self.inner = nemesis
        self.db = db
        self.route: dict[str, Any] = {f: m for m in _members(nemesis) for f in m.fs()}

    async def invoke(self, test: Test, op: Op) -> Op:
        member = self.route.get(op.f)
        if member is None:
            raise ValueError(f"no nemesis handles {op.f!r} (handled: {sorted(self.route)})")
        try:
            awaited = _CARRIED.get(type(member), {}).get(op.f)
            return await awaited(member, test, op) if awaited is not None else member.invoke(test, op)
        finally:
            self.db.flush()

    def setup(self, test: Test) -> None:
        try:
            self.inner.setup(test)
        finally:
            self.db.flush()

    def heal(self, test: Test) -> None:
        try:
            self.inner.heal(test)
        finally:
            self.db.flush()

    def teardown(self, test: Test) -> None:
        try:
            self.inner.teardown(test)
        finally:
            self.db.flush()
