"""SimCluster: N real nodes (cluster.node.Node, unmodified) on one Scheduler, with the faults the
nemeses need as method calls.

Each node is a simulated host: a name on the SimNetwork, a SimDisk that outlives its processes, and
a clock setting (offset, drift) that outlives them too (libfaketime's file on a container). Each
start boots a new process: a fresh SimLoop, a NodeEnv over the host's network, disk and clock, with
entropy from the seeded RNG, and `Node.run()` as a task on that loop. A kill discards the loop (no
`finally` runs), closes the host's streams as its kernel would, and crashes its disk (unsynced data
is lost). A node that calls `env.exit(code)` is killed the same way, and the exit is recorded.
The controller (clients, nemesis, observer) runs on its own SimLoop, host "controller".
"""

from __future__ import annotations

import asyncio
import hashlib
import traceback
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar

from jepsen_py.cluster.io import NodeEnv
from jepsen_py.cluster.node import Node, NodeConfig, NodeLog, StartupError
from jepsen_py.seeds import node_seed

from .clock import EPOCH, SimClock
from .disk import DiskProfile, SimDisk
from .loop import NodeExit, Scheduler, SimLoop
from .network import HostNetwork, LinkProfile, SimNetwork

T = TypeVar("T")

#: the ports the Docker backend gives the node (jepsen_py/raftdb/db.py)
PEER_PORT = 9093
CLIENT_PORT = 9092
CONTROLLER = "controller"
#: the simulated pid of a node's first process; each restart adds one
FIRST_PID = 100


def sim_node_config(name: str, nodes: list[str], seed: int, **overrides: Any) -> NodeConfig:
    """The NodeConfig the Docker backend would give `name` (same ports, the same per-node raft seed),
    with its data under /data/<name> on the node's SimDisk; keyword arguments override fields."""
    fields: dict[str, Any] = {
        "id": name,
        "peers": {n: (n, PEER_PORT) for n in nodes},
        "data_dir": f"/data/{name}",
        "client_port": CLIENT_PORT,
        "client_host": "0.0.0.0",
        "seed": node_seed(seed, nodes.index(name)),
    }
    fields.update(overrides)
    return NodeConfig(**fields)


@dataclass
class SimHost:
    """What of a node outlives its processes: disk, clock setting, and the record of its lives."""

    name: str
    disk: SimDisk
    net: HostNetwork
    clock_offset: float = 0.0
    clock_drift: float = 0.0
    loop: SimLoop | None = None
    node: Node | None = None
    task: asyncio.Task[None] | None = None
    paused: bool = False
    starts: int = 0
    #: (global time, what happened) for every start, kill, exit, pause, resume of this host
    events: list[tuple[float, str]] = field(default_factory=list)

    @property
    def up(self) -> bool:
        return self.loop is not None and not self.loop.dead


class SimCluster:
    """The simulated cluster the run driver and the tests drive."""

    def __init__(
        self,
        seed: int,
        nodes: list[str],
        node_config: Callable[[str], NodeConfig] | None = None,
        *,
        link: LinkProfile | None = None,
        disk: DiskProfile | None = None,
        epoch: float = EPOCH,
    ) -> None:
        if len(set(nodes)) != len(nodes) or CONTROLLER in nodes:
            raise ValueError(f"node names must be distinct and not {CONTROLLER!r}: {nodes}")
        self.seed = seed
        self.nodes = list(nodes)
        self.scheduler = Scheduler(seed)
        self.scheduler.on_exit = self._on_exit
        self.rng = self.scheduler.rng
        self.net = SimNetwork(self.scheduler, link)
        self.epoch = epoch
        self.node_config = node_config or (lambda n: sim_node_config(n, self.nodes, seed))
        self._configs: dict[str, NodeConfig] = {n: self.node_config(n) for n in self.nodes}
        self.hosts: dict[str, SimHost] = {}
        for n in self.nodes:
            h = SimHost(name=n, disk=SimDisk(self.rng, disk), net=self.net.for_host(n))
            h.disk.charge = self._charger(h)
            self.hosts[n] = h
        self.client_net = self.net.for_host(CONTROLLER)
        self.controller_loop = SimLoop(self.scheduler, CONTROLLER)
        self.clock = SimClock(self.controller_loop, epoch)
        #: (global time, node, exit code) of every node process that ended by itself
        self.exits: list[tuple[float, str, int]] = []

    # ---- time ---------------------------------------------------------------------------------------

    def now(self) -> float:
        """Global virtual seconds since the simulation began."""
        return self.scheduler.now

    def run_until(self, t: float) -> None:
        self.scheduler.run_until(t)

    def run_for(self, seconds: float) -> None:
        self.scheduler.run_until(self.scheduler.now + seconds)

    def run_until_complete(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Runs the simulation until `coro`, run on the controller's loop, is done."""
        return self.scheduler.run_until_complete(coro, self.controller_loop, timeout)

    def close(self) -> None:
        """Ends the simulation: every process is discarded as it stands (nothing more is logged)."""
        for h in self.hosts.values():
            h.disk.release()
        self.scheduler.close()

    def __enter__(self) -> SimCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- processes ----------------------------------------------------------------------------------

    def _host(self, node: str) -> SimHost:
        try:
            return self.hosts[node]
        except KeyError:
            raise ValueError(f"no node {node!r} in {self.nodes}") from None

    def _charger(self, h: SimHost) -> Callable[[float], None]:
        def charge(seconds: float) -> None:
            if h.loop is not None and not h.loop.dead:
                h.loop.charge(seconds)

        return charge

    def start(self, node: str) -> None:
        """Boots a new process of `node` (no-op if one is running): it recovers from its SimDisk."""
        h = self._host(node)
        if h.up:
            return
        h.starts += 1
        loop = SimLoop(self.scheduler, node, h.clock_offset, h.clock_drift)
        h.loop, h.node, h.paused = loop, None, False
        h.events.append((self.now(), "start"))
        pid = FIRST_PID + h.starts - 1
        rng = self.rng

        def entropy(n: int) -> bytes:
            return rng.getrandbits(8 * n).to_bytes(n, "big") if n else b""

        def exit_(code: int) -> NoReturn:
            raise NodeExit(loop, code)

        env = NodeEnv(net=h.net, disk=h.disk, clock=SimClock(loop, self.epoch), entropy=entropy,
                      exit=exit_, pid=pid)
        cfg = self._configs[node]
        loop.call_soon(self._boot, h, loop, cfg, env)

    def _boot(self, h: SimHost, loop: SimLoop, cfg: NodeConfig, env: NodeEnv) -> None:
        """Runs on the new process's loop: constructing the Node reads the disk."""
        log = NodeLog(cfg.log_file, cfg.id, env)
        try:
            node = Node(cfg, log, env=env)
        except StartupError as e:
            log(f"refusing to start: {e}")
            self._ended(h, loop, 2)
            return
        h.node = node
        h.task = loop.create_task(self._run(h, loop, node, log))

    async def _run(self, h: SimHost, loop: SimLoop, node: Node, log: NodeLog) -> None:
        try:
            await node.run()
        except StartupError as e:
            log(f"refusing to start: {e}")
            self._ended(h, loop, 2)
            return
        except Exception:  # an uncaught error ends a real node's process with a traceback, exit 1
            log(f"crashed:\n{traceback.format_exc()}")
            self._ended(h, loop, 1)
            return
        log.close()
        self._ended(h, loop, 0)

    def _ended(self, h: SimHost, loop: SimLoop, code: int) -> None:
        """The process ended by itself (a clean stop or a refusal to start): it is gone, cleanly."""
        if loop.dead:
            return
        self.exits.append((self.now(), h.name, code))
        h.events.append((self.now(), f"exit {code}"))
        self.scheduler.kill(loop)
        self.net.host_down(h.name)
        h.disk.release()

    def _on_exit(self, loop: SimLoop, code: int) -> None:
        """A node called env.exit(code): the scheduler has discarded its loop; it crashed."""
        h = self.hosts.get(loop.name)
        if h is None or h.loop is not loop:
            return
        self.exits.append((self.now(), h.name, code))
        h.events.append((self.now(), f"exit {code}"))
        self.net.host_down(h.name)
        h.disk.crash()

    def kill(self, node: str) -> None:
        """kill -9: the process is gone at once, its streams close, unsynced disk data is lost."""
        h = self._host(node)
        if not h.up:
            return
        assert h.loop is not None
        h.events.append((self.now(), "kill"))
        self.scheduler.kill(h.loop)
        self.net.host_down(node)
        h.disk.crash()
        h.paused = False

    def restart(self, node: str) -> None:
        self.kill(node)
        self.start(node)

    def pause(self, node: str) -> None:
        """SIGSTOP: the process runs nothing until resumed; its kernel still receives for it."""
        h = self._host(node)
        if h.up and not h.paused:
            assert h.loop is not None
            h.paused = True
            h.events.append((self.now(), "pause"))
            self.scheduler.pause(h.loop)

    def resume(self, node: str) -> None:
        h = self._host(node)
        if h.up and h.paused:
            assert h.loop is not None
            h.paused = False
            h.events.append((self.now(), "resume"))
            self.scheduler.resume(h.loop)

    def start_all(self) -> None:
        for n in self.nodes:
            self.start(n)

    def is_up(self, node: str) -> bool:
        return self._host(node).up

    def is_paused(self, node: str) -> bool:
        return self._host(node).paused

    # ---- network and clocks -------------------------------------------------------------------------

    def cut(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Blocks each directed link (src, dst): what src sends to dst is dropped until healed."""
        pairs = list(pairs)
        for a, b in pairs:
            for x in (a, b):
                if x != CONTROLLER:
                    self._host(x)
        self.net.cut(pairs)

    def heal_network(self) -> None:
        self.net.heal()

    def set_clock(self, node: str, offset_s: float, drift: float = 0.0) -> None:
        """From now on `node` reads global time + offset_s, running at rate 1 + drift; its running
        process's timers follow the new clock; later processes keep the setting."""
        h = self._host(node)
        h.clock_offset, h.clock_drift = offset_s, drift
        if h.up:
            assert h.loop is not None
            h.loop.set_clock(offset_s, drift)

    def reset_clocks(self) -> None:
        for n in self.nodes:
            self.set_clock(n, 0.0, 0.0)

    # ---- observing ----------------------------------------------------------------------------------

    def node(self, node: str) -> Node | None:
        """The running Node object of `node` (None if down or not booted yet)."""
        h = self._host(node)
        return h.node if h.up else None

    def status(self, node: str) -> dict[str, Any] | None:
        """The node's status() (None if it is down, paused, or still booting)."""
        h = self._host(node)
        if not h.up or h.paused or h.node is None or h.loop is None:
            return None
        return h.node.status()

    def leaders(self) -> list[str]:
        """Nodes up that believe they lead, by name."""
        return sorted(n for n in self.nodes if (self.status(n) or {}).get("role") == "leader")

    def node_logs(self) -> dict[str, list[str]]:
        """Every node's log lines across all its processes (written to nodes/<node>/node.log)."""
        out: dict[str, list[str]] = {}
        for n in self.nodes:
            logs = self.hosts[n].disk.logs()
            out[n] = logs.get(SimDisk._norm(self._configs[n].log_file), [])
        return out

    def errors(self) -> dict[str, list[dict[str, Any]]]:
        """What asyncio reported on each live process's loop (unretrieved task exceptions...)."""
        out = {n: list(h.loop.errors) for n, h in self.hosts.items() if h.loop is not None and h.loop.errors}
        if self.controller_loop.errors:
            out[CONTROLLER] = list(self.controller_loop.errors)
        return out

    def fingerprint(self) -> str:
        """A digest of every node's log and the event count: equal for equal runs."""
        d = hashlib.sha256()
        for n, lines in self.node_logs().items():
            d.update(n.encode())
            for line in lines:
                d.update(line.encode())
                d.update(b"\n")
        d.update(f"{self.scheduler.steps} {self.scheduler.now!r}".encode())
        return d.hexdigest()
