"""The engine: what one world gives the runner's phases, so the phases are written once.

The runner (jepsen_py.runner) says what a run does, in order; an engine says how, in its world:
what time it is, how the phase coroutine is driven, how to wait, how nodes come up and their logs
come back, and which interpreter drives the ops. `RealEngine` is the real machines' (wall time,
one thread per worker, the backend's nodes and the DB's setup); the simulator's engine
(jepsen_py.sim.engine) gives virtual time and its one event loop. The phases are a coroutine: the
real engine's waits block and never suspend it, so it runs to its end in one step; the simulator's
suspend it on its event loop, as turmoil and FoundationDB run one harness in both worlds.
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from jepsen_py import store
from jepsen_py.errors import BadInput, FrameworkFailure, JepsenError
from jepsen_py.generator import Generator
from jepsen_py.history import Op
from jepsen_py.interpreter import Clock, Interpreter, MonotonicClock, Scheduler
from jepsen_py.nemeses.clock import FAKETIME
from jepsen_py.nemeses.faults import declared
from jepsen_py.nemeses.net import IPTABLES
from jepsen_py.observer import Observer
from jepsen_py.plugins import HookExited, HookTimedOut, call_bounded, each_node, said
from jepsen_py.plugins import check_capabilities as check
from jepsen_py.progress import Progress
from jepsen_py.protocols import DB, Clocks, Nemesis, Net, Test, TestSpec, has_capability
from jepsen_py.verdict import Valid

if TYPE_CHECKING:
    from jepsen_py.runner import Run

log = logging.getLogger(__name__)

#: How long a DB's setup, or its teardown, may take on every node (one deadline for all: they run
#: at once). Installing and starting a system takes minutes at the most (ours takes seconds; a
#: plugin on SSH may install packages first). Past it the phase fails naming the nodes, and their
#: threads are left behind (daemon threads: they do not keep the process alive).
DB_HOOK_S = 300.0
#: How long a DB's log_files() may take to answer for one node (seconds); after one that does not,
#: the other nodes are not asked, and the run ends with its verdict and no copied logs.
LOG_FILES_S = 60.0


class Now(Protocol):
    """The run's time as the phases read it."""

    def ns(self) -> int:
        """Nanoseconds since the test began (history times)."""

    def s(self) -> float:
        """Seconds since the test began (deadlines)."""


@dataclass
class RunOutcome:
    """What one run produced; the CLI prints it and exits with `exit_code`."""

    run_dir: Path
    valid: Valid
    results: dict[str, Any]
    exit_code: int
    invokes: int = 0
    oks: int = 0
    anomalies: int = 0
    error: str | None = None
    phases: list[str] = field(default_factory=list)
    # the history as the analysis read and validated it (empty when it could not): a caller that
    # reads the run further (explore's coverage) need not parse history.jsonl again
    history: list[Op] = field(default_factory=list, repr=False, compare=False)

    @property
    def ok_fraction(self) -> float:
        return self.oks / self.invokes if self.invokes else 0.0


class Engine(Protocol):
    """What differs between worlds; everything else about a run is the runner's."""

    clock: Now
    #: how often the setup's leader wait asks the DB again
    leader_poll_s: float
    #: "run", or what else to call one in the log
    label: str
    #: results.json's per-phase second key beside wall seconds, and its rounding
    phase_clock_key: tuple[str, int]
    #: how this world cuts links and moves the nodes' clocks (the nemeses find them on the test)
    net: Net
    clocks: Clocks

    def check(self, db: DB, nemesis: Nemesis | None, spec: TestSpec) -> None:
        """Refuses (BadInput) what this world cannot run, before anything is created."""

    def phase_clock(self) -> float:
        """The reading phase_clock_key sums per phase."""

    def test_json_extra(self) -> dict[str, Any]: ...

    def interpreter(self, test: Test, *, client: Any, nemesis: Any, record: Any, append: Any,
                    concurrency: int, op_timeout: float, rng: random.Random) -> Any: ...

    def progress(self, run: Run, show: bool) -> Any:
        """What is told each phase (`phase(name)`); entered as a context when `show`."""

    def drive(self, phases: Coroutine[Any, Any, None]) -> None:
        """Runs the phase coroutine to its end."""

    async def sleep(self, seconds: float) -> None: ...

    async def start_nodes(self, run: Run) -> None:
        """The nodes up and the system installed on them (setup's first step)."""

    async def settle(self, run: Run) -> None:
        """After the nemesis's setup: what this world waits for before the leader wait."""

    def observer(self, run: Run) -> Any | None:
        """The status sampler (started by the runner), or None."""

    async def run_ops(self, run: Run, g: Generator, *, with_nemesis: bool) -> None: ...

    async def phases_done(self, run: Run) -> None:
        """The last step of the phases, in this world's time."""

    def stop_observer(self, run: Run) -> None:
        """The cleanup's observer stop."""

    def collect_logs(self, run: Run) -> None: ...

    def teardown_db(self, run: Run) -> None: ...

    # An engine may also have `bounded(fn, *args, timeout_s, name)`: a plugin's hook on a thread of
    # its own within a deadline (the real one does); without it the runner calls hooks directly
    # (the simulator's are its own code, on its one loop).

    def finish_stats(self, stats: dict[str, Any]) -> None:
        """Adds this world's own numbers to results.json's stats."""

    def outcome(self, **fields: Any) -> RunOutcome: ...


def check_capabilities(db: DB, nemesis: Nemesis | None, spec: TestSpec) -> None:
    """A nemesis that needs what the DB cannot do, or declares faults the analysis cannot read, is
    refused here, before anything is created."""
    if nemesis is None:
        return

    check(db, nemesis, db_name=spec.db or type(db).__name__)
    try:
        declared(nemesis)
    except ValueError as e:
        raise BadInput(f"--nemesis: {e}") from None


class RealEngine:
    """Real machines: the monotonic clock, a thread per worker, the backend's nodes, the DB's
    setup and teardown on every node in parallel."""

    leader_poll_s = 0.2
    label = "run"
    phase_clock_key = ("phase_cpu_s", 4)

    def __init__(self, clock: Clock | None = None, scheduler: Scheduler | None = None) -> None:
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self.scheduler = scheduler
        self.net: Net = IPTABLES
        self.clocks: Clocks = FAKETIME

    def check(self, db: DB, nemesis: Nemesis | None, spec: TestSpec) -> None:
        check_capabilities(db, nemesis, spec)

    def phase_clock(self) -> float:
        return time.process_time()

    def test_json_extra(self) -> dict[str, Any]:
        return {}

    def interpreter(self, test: Test, *, client: Any, nemesis: Any, record: Any, append: Any,
                    concurrency: int, op_timeout: float, rng: random.Random) -> Interpreter:
        return Interpreter(test, client=client, nemesis=nemesis, record=record, append=append,
                           concurrency=concurrency, op_timeout=op_timeout, rng=rng, clock=self.clock,
                           scheduler=self.scheduler)

    def progress(self, run: Run, show: bool) -> Progress | None:
        if not show:
            return None
        progress = Progress(run.spec.name, None, enabled=show)
        progress.counts = run.counts
        return progress

    def drive(self, phases: Coroutine[Any, Any, None]) -> None:
        """Every wait here blocks, so the coroutine ends at its first step."""
        try:
            phases.send(None)
        except StopIteration:
            return
        phases.close()
        raise FrameworkFailure("a phase suspended on the real engine, which has no event loop")

    async def sleep(self, seconds: float) -> None:
        self.clock.sleep(seconds)

    async def start_nodes(self, run: Run) -> None:
        run.backend_set_up = True
        run.test.remotes = dict(run.backend.setup(run.test) or {})
        self._setup_db(run)

    async def settle(self, run: Run) -> None:
        return None  # each node's DB setup waited for its node

    def observer(self, run: Run) -> Observer | None:
        if not has_capability(run.db, "status"):
            return None
        return Observer(run.test, run.db, run.record, self.clock.ns,  # type: ignore[arg-type]
                        interval=run.observer_interval, on_bad=run.stop, ref=run.db_ref)

    async def run_ops(self, run: Run, g: Generator, *, with_nemesis: bool) -> None:
        run.interpreter.run(g, with_nemesis=with_nemesis)

    async def phases_done(self, run: Run) -> None:
        return None  # the observer's thread is stopped in cleanup, whatever happened

    def stop_observer(self, run: Run) -> None:
        if run.observer is not None:
            run.observer.stop()

    def finish_stats(self, stats: dict[str, Any]) -> None:
        return None

    def outcome(self, **fields: Any) -> RunOutcome:
        return RunOutcome(**fields)

    def _setup_db(self, run: Run) -> None:
        nodes = run.spec.nodes
        if not nodes:
            return
        # Every node is torn down afterwards, whatever happens here: partial setups included.
        run.db_nodes_set_up = list(nodes)
        failed = each_node(run.db.setup, run.test, nodes, timeout_s=DB_HOOK_S, name="db setup")
        if failed:
            for n, e in sorted(failed.items()):
                log.debug("db setup failed on %s", n, exc_info=e)
            stuck = sorted(n for n, e in failed.items() if isinstance(e, HookTimedOut))
            if stuck:
                raise FrameworkFailure(f"db setup did not return within {DB_HOOK_S:g} s on "
                                       f"{', '.join(stuck)} (left behind)")
            node, exc = sorted(failed.items())[0]
            if isinstance(exc, JepsenError):
                raise exc
            raise FrameworkFailure(f"db setup on {node} failed: {said(exc)}") from exc

    def collect_logs(self, run: Run) -> None:
        stuck = False
        for node in run.spec.nodes:
            if stuck:  # one deadline for the run's logs, not one per node
                log.warning("log_files(%s) not asked: an earlier call did not return", node)
                continue
            try:
                paths = self.bounded(lambda n=node: list(run.db.log_files(run.test, n) or []),
                                     timeout_s=LOG_FILES_S, name=f"log_files({node})")
            except HookTimedOut as e:
                log.warning("%s: no logs copied", e)
                stuck = True
                continue
            except Exception as e:  # SystemExit and KeyboardInterrupt it raised come back as Escaped
                cause = e.cause if isinstance(e, HookExited) else e
                log.warning("log_files(%s) failed: %s", node, said(cause))
                continue
            dest_dir = run.run_dir / store.NODES / node
            remote = run.test.remotes.get(node)
            for p in paths:
                if not isinstance(p, str | os.PathLike):
                    log.warning("log_files(%s) gave %r, which is no path: skipped", node, p)
                    continue
                if Path(p).name in ("", ".", ".."):  # a DB's path like "logs/.." names no file here
                    log.info("log_files(%s) gave %r, which names no file: skipped", node, p)
                    continue
                why = store.foreign_log_path(str(p), workdir=getattr(remote, "workdir", None),
                                             on_controller=remote is None or hasattr(remote, "workdir"))
                if why is not None:  # nothing secret or foreign leaves through the store
                    log.warning("log_files(%s) gave %s, which %s: not copied", node, p, why)
                    continue
                store.make_dirs(dest_dir)
                dest = dest_dir / Path(p).name
                try:
                    if remote is not None:
                        remote.download(p, dest)
                    elif Path(p).is_dir():
                        shutil.copytree(p, dest, dirs_exist_ok=True)
                    elif Path(p).exists():
                        shutil.copy2(p, dest)
                except Exception as e:  # a log the node never wrote is not worth a console line
                    log.info("could not download %s from %s: %s", p, node, e)
            # an archive or a copy brings the node's modes (a world-writable log, a 0777 directory)
            store.settle_modes(dest_dir)

    def teardown_db(self, run: Run) -> None:
        failed = each_node(run.db.teardown, run.test, run.db_nodes_set_up, timeout_s=DB_HOOK_S,
                           name="db teardown")
        stuck = sorted(n for n, e in failed.items() if isinstance(e, HookTimedOut))
        if stuck:
            raise FrameworkFailure(f"db teardown did not return within {DB_HOOK_S:g} s on {', '.join(stuck)} "
                                   "(left behind)")
        if failed:
            raise FrameworkFailure("db teardown failed on " + "; ".join(f"{n}: {said(e)}"
                                                                       for n, e in sorted(failed.items())))

    def bounded(self, fn: Callable[..., Any], *args: Any, timeout_s: float, name: str) -> Any:
        """A plugin's hook on a thread of its own, within `timeout_s` (plugins.call_bounded)."""
        return call_bounded(fn, *args, timeout_s=timeout_s, name=name)
