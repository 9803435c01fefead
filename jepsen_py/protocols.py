"""The contracts every part plugs into, modelled on Jepsen's protocols.

Small interfaces with plain data between them. Nothing here knows what system is under test: our
Raft cluster is one DB among any a user names with `--db package.module:Name`.

A DB must set up, tear down, name its log files and hand out clients. Everything else is an
optional capability, as Jepsen's Process, Pause and Primary protocols are: a DB that can kill and
restart its nodes (`Process`), pause and resume them (`Pause`), name its leaders (`Primary`), report
a node's own view (`Status`) or run its daemons under a controllable clock (`ClockControl`). The
runner uses a capability only where the DB has it, and refuses, before provisioning anything, a
nemesis that needs one the DB lacks.

The nemeses act through seams each world supplies, as Jepsen's jepsen.net and jepsen.control: `Net`
(cut a grudge's links, heal) and `Clocks` (set offsets, strobe, reset), found on the test; process
faults go through the DB's `Process` and `Pause`.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from jepsen_py.history import Op
from jepsen_py.verdict import Valid


@dataclass(slots=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str


@runtime_checkable
class Remote(Protocol):
    """Runs things on one node. argv lists only: never a shell string built from input."""

    node: str

    def exec(
        self,
        argv: Sequence[str],
        *,
        timeout: float | None = None,
        check: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult: ...

    def upload(self, local: Path, remote: str) -> None:
        """Copies a local file or directory tree to `remote` on the node."""

    def download(self, remote: str, local: Path) -> None:
        """Copies a file or directory tree from the node to `local`."""

    def write_file(self, remote: str, data: bytes | str, *, mode: int = 0o644) -> None:
        """Writes `data` (str as UTF-8) to the file `remote` on the node, creating missing parent
        directories and replacing any file there, with permission bits `mode`: a DB's config file
        without a local temporary file and an upload."""

    def start_daemon(
        self,
        argv: Sequence[str],
        *,
        pidfile: str,
        logfile: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        """Starts a long-running process detached from the call, its pid in `pidfile`."""

    def signal(self, pidfile: str, sig: str) -> bool:
        """Sends `sig` to the pid in `pidfile`: one of KILL, STOP, CONT, TERM, INT, HUP, USR1, USR2
        (a "SIG" prefix and lower case are accepted), or "0", which sends nothing and only asks
        whether the process is alive. True if a process got it, False if none ran; ValueError for
        any other signal (jepsen_py.backends.common.SIGNALS)."""


@runtime_checkable
class Backend(Protocol):
    """Provisions the nodes a test runs on: docker (default), ssh, or local processes."""

    name: str

    def setup(self, test: Test) -> dict[str, Remote]:
        """Creates or connects to every node in test.nodes and returns a Remote for each."""

    def peer_address(self, node: str) -> str:
        """The address other nodes use to reach `node` (what goes in --peers)."""

    def client_endpoint(self, node: str, port: int) -> tuple[str, int]:
        """Where the controller connects to reach `port` on `node` (may differ from the peer
        address, e.g. a published port where container addresses are not routable)."""

    def teardown(self, test: Test) -> None: ...


@runtime_checkable
class Client(Protocol):
    """A connection to one node for one worker. Jepsen's rules for outcomes:
    ok took effect, fail certainly did not, info may or may not have (timeout after sending).

    Lifecycle, as Jepsen's: a worker whose op ended info continues as a new process, and a new
    process gets new clients (the old ones closed, fresh ones opened), so a connection left with a
    request in flight cannot hold that worker's later ops behind it. A client that leaves nothing
    behind after an info (it closes a connection whose answer did not come, say) may keep serving
    the new process: it says so with the optional `reusable(test) -> bool` (Jepsen's
    `is-reusable?`; absent means False). See `client_reusable`.
    """

    def open(self, test: Test, node: str) -> Client:
        """A new client bound to `node`; the receiver is a template and is not changed."""

    def invoke(self, test: Test, op: Op) -> Op:
        """Performs `op` (an invocation) and returns its completion. Expected errors become
        fail or info completions; an exception escaping here is recorded as info."""

    def close(self, test: Test) -> None: ...


def client_reusable(client: object, test: Test) -> bool:
    """Whether `client` may serve its worker's next process (its optional `reusable(test)`);
    False when it does not say, as in Jepsen."""
    fn = getattr(client, "reusable", None)
    return callable(fn) and bool(fn(test))


@runtime_checkable
class DB(Protocol):
    """The system under test's lifecycle on the nodes, and the clients that talk to it. The
    optional capabilities are the protocols below; `capabilities(db)` says which a DB has.

    A DB class may also declare, read before anything is provisioned: `ports` (client ports the
    docker backend publishes), `db_options()` (the --db-option keys it takes, read from
    spec.db_options), `workloads()` (the workloads it serves), `known_bugs()` (the --bug names it
    takes) and `read_modes()` (the --read-mode values, our cluster's). docs/plugins.md has it all."""

    def setup(self, test: Test, node: str) -> None:
        """Installs and starts the system on `node`."""

    def teardown(self, test: Test, node: str) -> None:
        """Stops it and wipes its data on `node`."""

    def log_files(self, test: Test, node: str) -> list[str]:
        """Paths on the node to download into the store after the test."""

    def client(self, workload: str) -> Client:
        """A client template for the named workload; BadInput if the workload is unsupported."""


@runtime_checkable
class Process(Protocol):
    """A DB that can crash its daemon on a node and start it again from its own disk."""

    def kill(self, test: Test, node: str) -> None: ...

    def start(self, test: Test, node: str) -> None: ...


@runtime_checkable
class Pause(Protocol):
    """A DB that can freeze its daemon on a node (SIGSTOP) and thaw it."""

    def pause(self, test: Test, node: str) -> None: ...

    def resume(self, test: Test, node: str) -> None: ...


@runtime_checkable
class Primary(Protocol):
    """A DB with leaders: the runner waits for one after setup and heal, and leader-targeted
    faults aim at them."""

    def primaries(self, test: Test) -> list[str]:
        """The nodes that consider themselves leader right now."""


@runtime_checkable
class Status(Protocol):
    """A DB whose nodes report their own view; the observer samples it into the history."""

    def status(self, test: Test, node: str) -> dict[str, Any] | None:
        """The node's own view: at least role, term and leader; None when it does not answer."""


@runtime_checkable
class ClockControl(Protocol):
    """A DB that starts its daemons under libfaketime (nemeses.clock.faketime_env), so clock
    faults can move their clocks."""

    def faketime_file(self, test: Test, node: str) -> str:
        """The node's libfaketime timestamp file."""


class Net(Protocol):
    """How a world cuts and heals links between nodes (Jepsen's jepsen.net). The partition nemeses
    call it; real machines use iptables on each node (nemeses/net.py `Iptables`), the simulator
    cuts its simulated links (jepsen_py.sim.nemesis.SimNet)."""

    def drop_all(self, test: Test, grudge: Mapping[str, Sequence[str]],
                 first: Collection[str] = ()) -> None:
        """Each node in `grudge` stops hearing from the peers it names; the nodes in `first` before
        the rest, where cutting takes time."""

    def heal(self, test: Test) -> None:
        """Every link whole again."""

    def ready(self, test: Test) -> None:
        """Whatever makes a later drop_all quick, done ahead (setup)."""

    def remove(self, test: Test) -> None:
        """Every trace of ours gone from the nodes, links whole (setup on reused nodes, teardown)."""


class Clocks(Protocol):
    """How a world moves the nodes' clocks (Jepsen's clock faults). The clock nemeses call it; real
    machines rewrite each daemon's libfaketime file (nemeses/clock.py `Faketime`), the simulator
    moves its virtual clocks (jepsen_py.sim.nemesis.SimClocks)."""

    def set_offsets(self, test: Test, offsets: Mapping[str, float]) -> None:
        """Puts each node's clock `offsets[node]` seconds from true time."""

    def strobe(self, test: Test, base: Mapping[str, float], delta_s: float, period_s: float,
               duration_s: float) -> None:
        """Flips each node's offset between base and base + delta_s every period_s for duration_s,
        then leaves it at base; returns when done."""

    def reset(self, test: Test) -> list[str]:
        """Every node it reaches back to offset 0; returns those nodes."""


#: Each optional capability: its name, the methods it takes, and what it lets a test do.
CAPABILITIES: dict[str, tuple[tuple[str, ...], str]] = {
    "process": (("kill", "start"), "kill and restart its nodes"),
    "pause": (("pause", "resume"), "pause and resume its nodes"),
    "primaries": (("primaries",), "name its leaders"),
    "status": (("status",), "report a node's own status"),
    "clock": (("faketime_file",), "run its daemons under a controllable clock"),
}


def capabilities(db: object) -> frozenset[str]:
    """The optional capabilities `db` has: every method of each is there and callable."""
    return frozenset(name for name, (methods, _) in CAPABILITIES.items()
                     if all(callable(getattr(db, m, None)) for m in methods))


def has_capability(db: object, name: str) -> bool:
    methods, _ = CAPABILITIES[name]
    return db is not None and all(callable(getattr(db, m, None)) for m in methods)


@runtime_checkable
class Nemesis(Protocol):
    """Injects faults. Every op it performs is recorded; heal undoes every fault it made.

    Optional: `faults()` -> a list of `FaultKind` (jepsen_py.nemeses.faults) declaring each of its
    faults in the built-ins' vocabulary: a name, the ops of fs() that start it and that end it, and
    its effects (NETWORK, PROCESS, PAUSE, CLOCK; `replaces=True` when a new start replaces the one in
    force, as a new partition does). Whom an op hit is what its completion's value names: "nodes"
    (or "node"); for a NETWORK fault the isolated side is "node", else the smaller of "sides". The
    interpreter writes the declaration into each such op's meta, so fault windows, availability, the
    crash checker and the pictures read a declared fault as they read a built-in one, from the stored
    history alone. Without it a fault's window comes only from the start-/stop- naming rule, with no
    kind. A declaration the analysis could not use is refused before the run (exit 254). E.g.

        def faults(self) -> list[FaultKind]:
            return [FaultKind("freeze", starts=frozenset({"freeze"}), stops=frozenset({"thaw"}),
                              effects=frozenset({PAUSE}))]
    """

    def fs(self) -> frozenset[str]:
        """The op names (f) this nemesis handles, e.g. {"start-partition", "stop-partition"}."""

    def setup(self, test: Test) -> None: ...

    def invoke(self, test: Test, op: Op) -> Op:
        """Performs a fault op; returns an info completion whose value says what was done
        (which nodes, which grudge, which offset)."""

    def heal(self, test: Test) -> None:
        """Undoes every fault still in force."""

    def teardown(self, test: Test) -> None: ...

    # Optional: `needs()` -> {capability: what needs it}, e.g. {"process": "--nemesis kill"}; the
    # runner refuses the test up front when the DB lacks one (see plugins.check_capabilities).


@runtime_checkable
class Checker(Protocol):
    """History in, result out. The result is plain JSON-able data with "valid": true/false/"unknown"."""

    name: str

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]: ...


@dataclass
class TestSpec:
    """Everything that defines a test run, as given on the command line (written to test.json)."""

    __test__ = False  # not a pytest test class, despite the name

    name: str
    workload: str
    nemesis: list[str]
    nodes: list[str]
    time_limit: float
    concurrency: int
    rate: float
    nemesis_interval: float
    seed: int
    backend: str
    # Our cluster's --read-mode; None for a DB that declares no read modes (see plugins.read_modes).
    read_mode: str | None
    bugs: list[str]
    db: str
    results_dir: Path
    leave_db_running: bool = False
    test_count: int = 1
    options: dict[str, Any] = field(default_factory=dict)
    # Controller bounds: an op not completed within op_timeout is recorded as info; recovery waits
    # at most recovery_timeout for a stable leader after heal.
    op_timeout: float = 10.0
    recovery_timeout: float = 30.0
    # Which nodes pause and kill may hit, each fault picking one kind at random (Jepsen's targets);
    # empty means the nemeses' defaults (leader, one, minority).
    fault_targets: list[str] = field(default_factory=list)
    # How the fault families take turns: "random" toggles a random one, "cycle" one at a time in turn.
    nemesis_schedule: str = "random"
    # --db-option KEY=VALUE: the DB's own configuration, read by the DB from its spec; only keys the
    # DB class declares in `db_options()` are accepted (jepsen_py.plugins.check_db_flags).
    db_options: dict[str, str] = field(default_factory=dict)


@dataclass
class Test:
    """A running test: the spec plus the live things every component needs."""

    __test__ = False

    spec: TestSpec
    store_dir: Path
    log: logging.Logger
    rng: random.Random
    backend: Backend | None = None
    db: DB | None = None
    remotes: dict[str, Remote] = field(default_factory=dict)
    # Faults the nemesis must be able to undo even after a crash of the controller go in here too.
    state: dict[str, Any] = field(default_factory=dict)
    # How this world cuts links and moves clocks (the engine's); None: the real machines' (iptables
    # and libfaketime through `remotes`, nemeses.net.Iptables and nemeses.clock.Faketime).
    net: Net | None = None
    clocks: Clocks | None = None

    @property
    def nodes(self) -> list[str]:
        return self.spec.nodes


Result = dict[str, Any]
__all__ = [
    "CAPABILITIES",
    "DB",
    "Backend",
    "Checker",
    "Client",
    "ClockControl",
    "Clocks",
    "ExecResult",
    "Nemesis",
    "Net",
    "Pause",
    "Primary",
    "Process",
    "Remote",
    "Result",
    "Status",
    "Test",
    "TestSpec",
    "Valid",
    "capabilities",
    "client_reusable",
    "has_capability",
]
