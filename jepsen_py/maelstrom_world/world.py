"""`jepsen-py run --backend maelstrom`: the user's binary as nodes n1..nN, the router as their
network, and the ordinary runner's phases over them (jepsen_py.runner.run_test on a RealEngine).

Only what differs is here: the engine starts the nodes with Maelstrom's init handshake instead of a
backend and a DB setup, its `net` is the router (so the partition nemeses cut the router's links),
the DB's kill, start, pause and resume act on the node processes (so the kill and pause nemeses work
unchanged), and the clients send each op as a message from a client id of their own. Each node's
stderr lands in the run's nodes/<node>/, the router's message counts in results.json's
stats.net, as Maelstrom's net stats, and its journal of messages in messages.json (messages.html).
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jepsen_py import store
from jepsen_py.analysis import PostRun
from jepsen_py.dbversion import UNVERSIONED, db_version
from jepsen_py.engine import RealEngine, RunOutcome
from jepsen_py.generator import Generator
from jepsen_py.maelstrom.journal import MESSAGES_FILE, MessageJournal
from jepsen_py.maelstrom.router import Latency, MaelstromNet, Router
from jepsen_py.maelstrom_world.client import MaelstromClient
from jepsen_py.maelstrom_world.workloads import codec_for, factories
from jepsen_py.plugins import build_nemesis, build_workload
from jepsen_py.protocols import Client, Test, TestSpec
from jepsen_py.runner import run_test
from jepsen_py.spec import DEFAULT_DB
from jepsen_py.workload import Workload

if TYPE_CHECKING:
    from jepsen_py.runner import Run

log = logging.getLogger(__name__)

#: What a maelstrom run's test.json names as its system under test (the binary is in its options).
MAELSTROM_DB = "jepsen_py.maelstrom_world.world:MaelstromDB"
#: Seconds each node (and a restarted one) has to answer its init, as Maelstrom gives it.
INIT_TIMEOUT_S = 5.0
#: How many protocol breaches results.json quotes (all are counted).
PROBLEMS_SHOWN = 20


@dataclasses.dataclass(frozen=True)
class NodeProgram:
    """The node's program and its network, from the backend's options (spec.options)."""

    argv: tuple[str, ...]
    latency: Latency

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> NodeProgram:
        argv = (str(options["maelstrom_bin"]), *(str(a) for a in options.get("maelstrom_bin_args") or ()))
        latency = Latency(float(options.get("maelstrom_latency") or 0.0),
                          options.get("maelstrom_latency_dist") or "constant")
        return cls(argv, latency)


class MaelstromDB:
    """The nodes' processes as a DB: nothing to install (the engine starts them all with their
    inits), and the process faults done to the real processes through the router."""

    def __init__(self, router: Router, log_dir: Path, client_timeout_s: float) -> None:
        self.router = router
        self.log_dir = log_dir
        self.client_timeout_s = client_timeout_s

    def setup(self, test: Test, node: str) -> None:
        return None  # MaelstromEngine.start_nodes starts every node at once, with its init

    def teardown(self, test: Test, node: str) -> None:
        return None  # the router stops every node at once (MaelstromEngine.teardown_db)

    def log_files(self, test: Test, node: str) -> list[str]:
        return [str(self.log_dir / f"{node}.log")]

    def client(self, workload: str) -> Client:
        return MaelstromClient(self.router, codec_for(workload), self.client_timeout_s)

    def kill(self, test: Test, node: str) -> None:
        self.router.kill(node)

    def start(self, test: Test, node: str) -> None:
        """A killed node starts again knowing nothing, so it gets its init again; a running one is
        left alone."""
        if not self.router.processes[node].running:
            self.router.restart(node, INIT_TIMEOUT_S)

    def pause(self, test: Test, node: str) -> None:
        self.router.pause(node)

    def resume(self, test: Test, node: str) -> None:
        self.router.resume(node)


class MaelstromEngine(RealEngine):
    """Real time and threads, as on any real backend; the nodes are the router's processes and the
    network is the router."""

    def __init__(self, router: Router, log_dir: Path) -> None:
        super().__init__()
        self.router = router
        self.log_dir = log_dir
        self.net = MaelstromNet(router)

    async def start_nodes(self, run: Run) -> None:
        run.backend_set_up = True
        run.db_nodes_set_up = list(run.spec.nodes)  # torn down whatever happens from here
        self.router.start(INIT_TIMEOUT_S)  # NodeFailed (one line, 254) naming a node without init_ok

    def collect_logs(self, run: Run) -> None:
        """Stops the nodes first (a node's last stderr lines are written by then), then copies each
        node's stderr into nodes/<node>/, and the router's message journal into messages.json."""
        self.router.close()
        super().collect_logs(run)
        self.write_journal(run.run_dir)

    def write_journal(self, run_dir: Path) -> None:
        """messages.json (what messages.html draws): the router's journal, its times in seconds on
        the history's clock (since the engine's clock started)."""
        journal = self.router.journal
        if journal is None:
            return
        t0 = getattr(self.clock, "t0", None)
        base = t0 / 1e9 if isinstance(t0, int) else 0.0
        store.write_json(run_dir / MESSAGES_FILE, {"nodes": list(self.router.nodes), **journal.to_json(base)})

    def teardown_db(self, run: Run) -> None:
        self.router.close()
        shutil.rmtree(self.log_dir, ignore_errors=True)

    def finish_stats(self, stats: dict[str, Any]) -> None:
        """Maelstrom's net stats (all, clients, servers; msgs-per-op over the client ops), the late
        replies, and each protocol breach and crash of a node, one line each."""
        invokes = stats.get("invokes")
        net: dict[str, Any] = self.router.stats().to_dict(invokes if isinstance(invokes, int) else None)
        net["late_replies"] = self.router.late_replies
        problems = [str(p) for p in self.router.problems]
        crashes = [e.describe() for e in self.router.crashes()]
        if problems:
            net["problem_count"] = len(problems)
            net["problems"] = problems[:PROBLEMS_SHOWN]
            log.warning("%d protocol breach(es) by the nodes; the first: %s", len(problems), problems[0])
        if crashes:
            net["crashes"] = crashes
            log.warning("a node died on its own: %s", crashes[0])
        stats["net"] = net


def run_maelstrom(spec: TestSpec, *, workload: Workload | None = None,
                  nemesis_generator: Generator | None = None, post_run: Sequence[PostRun] = (),
                  show_progress: bool = False, **_: Any) -> RunOutcome:
    """Runs `spec` on nodes of the --bin program through the runner (run_test), as assembly.run
    hands it over."""
    program = NodeProgram.from_options(spec.options)
    if workload is None:
        workload = build_workload(spec, factories())
    if workload.client is None:
        codec_for(workload.name)  # a workload with no messages here: refused before anything starts
    client_timeout_s = max(0.1, 0.9 * spec.op_timeout)  # the client's own info before the interpreter's
    nemesis, schedule = build_nemesis(list(spec.nemesis), spec)
    if nemesis_generator is not None:
        schedule = nemesis_generator
    version = spec.options.get("db_version")
    if version == db_version(DEFAULT_DB):  # our cluster's, the --db default: not the binary's
        version = UNVERSIONED
    spec = dataclasses.replace(spec, db=MAELSTROM_DB, read_mode=None,
                               options={**spec.options, "db_version": version})
    log_dir = Path(tempfile.mkdtemp(prefix="jepsen-py-maelstrom-"))
    router = Router(program.argv, spec.nodes, log_dir, latency=program.latency, seed=spec.seed,
                    journal=MessageJournal())
    try:
        return run_test(spec, db=MaelstromDB(router, log_dir, client_timeout_s), workload=workload,
                        nemesis=nemesis, nemesis_generator=schedule, engine=MaelstromEngine(router, log_dir),
                        post_run=post_run, show_progress=show_progress,
                        fsync_history=bool(spec.options.get("fsync_history", False)))
    finally:
        router.close()
        shutil.rmtree(log_dir, ignore_errors=True)
