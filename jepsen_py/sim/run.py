"""`jepsen-py run --backend sim`: one test on the simulated cluster, from an empty store directory to
an exit code, in virtual time.

The phases are the runner's (jepsen_py.runner), each in virtual time on the controller's loop:

  1. store      the run directory, test.json, the `latest` link, jepsen.log
  2. setup      every node started on its own simulated host, disk and clock -> nemesis setup ->
                every node knows a leader, then some node claims leadership
  3. main       the workload's generator on the client workers, the nemesis schedule beside them
                (jepsen_py.sim.interpreter), the observer sampling node status, until the time limit
  4. heal       the nemesis undoes every fault still in force
  5. recovery   one stable leader for a second, bounded by recovery_timeout
  6. final      the workload's final generator (a read of every key on every node)
  7. cleanup    observer stopped, clients closed, nemesis teardown, node logs into nodes/<node>/
  8. check      the same analysis as a Docker run (jepsen_py.analysis): checkers, results.json,
                verdict, exit code
  9. post-run   the steps the caller passed in (pictures, Parquet)

History times are virtual nanoseconds since the run began. Everything that decides what happens (the
generators, the nemesis, the nodes, the network, the disks) draws from sources seeded by --seed, and
nothing reads a real clock, so the same seed and arguments give a byte-identical history.jsonl.
What a simulated run cannot honour (another system under test, an outside nemesis, nodes left
running) is refused with one line before the run directory exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jepsen_py import generator as gen
from jepsen_py import store
from jepsen_py.analysis import PostRun, analyse, count_anomalies, run_post_steps, write_results
from jepsen_py.errors import EXIT_BAD_INPUT, BadInput, FrameworkFailure, RunInterrupted
from jepsen_py.generator import Generator
from jepsen_py.history import HistoryWriter, Op
from jepsen_py.nodenames import check_node_names
from jepsen_py.protocols import Test, TestSpec
from jepsen_py.runner import RunOutcome, cleanup_step, record_heal
from jepsen_py.sim.backend import SimBackend
from jepsen_py.sim.client import SimClient
from jepsen_py.sim.interpreter import SimInterpreter
from jepsen_py.sim.interrupts import between_events
from jepsen_py.sim.nemesis import SimDB, SimNemesis, check_names
from jepsen_py.sim.observer import SimObserver
from jepsen_py.sim.progress import SimProgress, SimStatus
from jepsen_py.sim.watchdog import livelock_watchdog
from jepsen_py.workload import Workload

log = logging.getLogger(__name__)

SIM_DB = "jepsen_py.raftdb:RaftMetadataDB"
#: how long setup waits for every node to know a leader (the DB's own leader_timeout on Docker)
LEADER_TIMEOUT_S = 30.0
POLL_S = 0.1


@dataclass
class SimOutcome(RunOutcome):
    """A run's outcome plus what the simulation cost: simulated and wall seconds."""

    simulated_s: float = 0.0
    wall_s: float = 0.0
    cpu_s: float = 0.0

    @property
    def speed(self) -> float:
        """Simulated seconds per wall second."""
        return self.simulated_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def cpu_speed(self) -> float:
        """Simulated seconds per CPU second of this process (what a loaded machine cannot skew)."""
        return self.simulated_s / self.cpu_s if self.cpu_s > 0 else 0.0


def check_spec(spec: TestSpec) -> None:
    """One line (exit 254) for what the simulator cannot honour, before anything is created."""
    from jepsen_py.plugins import canonical_db

    if canonical_db(spec.db) != SIM_DB:
        raise BadInput(f"--db {spec.db}: the simulator runs this project's cluster only ({SIM_DB})")
    if spec.leave_db_running:
        raise BadInput("--leave-db-running: simulated nodes end with the run; there is nothing to leave "
                       "running (--backend sim)")
    check_names(spec.nemesis)
    known = known_bugs()
    unknown = [b for b in spec.bugs if b not in known]
    if unknown:
        raise BadInput(f"--bug {unknown[0]}: unknown bug (choose from {', '.join(known)})")
    if spec.concurrency < 1:
        raise BadInput(f"concurrency must be at least 1, got {spec.concurrency}")
    check_node_names(spec.nodes, "nodes")
    from jepsen_py.sim.cluster import CONTROLLER

    if CONTROLLER in spec.nodes:
        raise BadInput(f"nodes: {CONTROLLER!r} is the simulator's own name for the controller; "
                       f"name the node otherwise")


def known_bugs() -> tuple[str, ...]:
    """The seed bugs the node knows (its registry, cluster.bugs; older builds list them in node)."""
    try:
        from jepsen_py.cluster.bugs import NAMES
    except ImportError:
        from jepsen_py.cluster.node import KNOWN_BUGS as NAMES  # type: ignore[attr-defined,no-redef]
    return tuple(NAMES)


def node_bugs(names: Sequence[str]) -> Any:
    """The node's bug setting for `names` (the Bugs record; older builds took the names)."""
    try:
        from jepsen_py.cluster.bugs import Bugs
    except ImportError:
        return tuple(names)
    return Bugs.parse(names)


# spec.options key: a seed for the simulated cluster's own randomness alone (network delays, disk,
# the nodes' entropy), where the run's seed still decides everything else (the nemesis's draws, the
# generators, each node's Raft timeouts). A real backend replays a schedule under timings of its
# own; runs of one schedule under several timing seeds tell how much its outcome depends on them.
TIMING_SEED = "sim_timing_seed"


def make_cluster(spec: TestSpec) -> Any:
    """The simulated cluster for `spec`: its nodes configured as RaftMetadataDB starts them on Docker
    (ports, per-node seeds; the read mode and bugs asked for)."""
    from jepsen_py.sim.cluster import SimCluster, sim_node_config

    nodes = list(spec.nodes)
    bugs = node_bugs(spec.bugs)

    def config(node: str) -> Any:
        return sim_node_config(node, nodes, spec.seed, read_mode=spec.read_mode, bugs=bugs)

    timing = spec.options.get(TIMING_SEED)
    return SimCluster(spec.seed if timing is None else int(timing), nodes, config)


class SimRun:
    """The phases of one simulated run and what each set up, so cleanup undoes exactly that."""

    def __init__(self, spec: TestSpec, *, cluster: Any, workload: Workload, client: SimClient,
                 nemesis: SimNemesis | None, nemesis_generator: Generator | None, db: SimDB,
                 run_dir: Path, writer: HistoryWriter, observer_interval: float,
                 setup_timeout: float, status: SimStatus | None = None) -> None:
        self.spec = spec
        self.cluster = cluster
        self.workload = workload
        self.nemesis = nemesis
        self.nemesis_generator = nemesis_generator
        self.db = db
        self.run_dir = run_dir
        self.writer = writer
        self.observer_interval = observer_interval
        self.setup_timeout = setup_timeout
        self.t0 = cluster.now()
        self.test = Test(spec=spec, store_dir=run_dir, log=logging.getLogger("jepsen_py.test"),
                         rng=random.Random(spec.seed), backend=SimBackend(spec), db=db)  # type: ignore[arg-type]
        self.interpreter = SimInterpreter(
            self.test, client=client, nemesis=nemesis, record=self.record,
            concurrency=spec.concurrency, op_timeout=spec.op_timeout,
            rng=random.Random(f"generator:{spec.seed}"), now_ns=self.now_ns)
        self.observer: SimObserver | None = None
        self.phases: list[str] = []
        self.notes: list[str] = []
        self.started = False
        self.nemesis_set_up = False
        self.healed = True
        self.phase_times: dict[str, float] = {}
        self.phase_sim: dict[str, float] = {}
        self._mark: tuple[str, float, float] | None = None
        self.status = status if status is not None else SimStatus(spec.time_limit)
        self.status.simulated_s = self.now_s
        self.status.counts = self.interpreter.counts
        self.progress: SimProgress | None = None

    # ---- time and recording -------------------------------------------------------------------

    def now_s(self) -> float:
        return float(self.cluster.now() - self.t0)

    def now_ns(self) -> int:
        return round((self.cluster.now() - self.t0) * 1e9)

    def record(self, op: Op) -> Op:
        self.status.saw(op)
        return self.writer.append(op)

    def phase(self, name: str) -> None:
        """Marks the start of a phase; its wall and simulated seconds go into results.json."""
        self.end_phases()
        self._mark = (name, time.monotonic(), self.now_s())
        self.phases.append(name)
        log.info("phase: %s (at %.3f simulated s)", name, self.now_s())
        if self.progress is not None:
            self.progress.phase(name)
        else:
            self.status.enter(name)

    def end_phases(self) -> None:
        if self._mark is not None:
            name, wall0, sim0 = self._mark
            self.phase_times[name] = self.phase_times.get(name, 0.0) + time.monotonic() - wall0
            self.phase_sim[name] = self.phase_sim.get(name, 0.0) + self.now_s() - sim0
            self._mark = None

    # ---- phases -------------------------------------------------------------------------------

    def execute(self) -> None:
        """setup, main, heal, recovery, final, each run to completion in virtual time."""
        self.cluster.run_until_complete(self._execute())

    async def _execute(self) -> None:
        self.phase("setup")
        self.started = True
        for node in self.spec.nodes:
            self.cluster.start(node)
        if self.nemesis is not None:
            self.nemesis_set_up = True
            self.nemesis.setup(self.test)
        await self._wait_for_leader()

        self.observer = SimObserver(self.test, self.db, self.record, self.now_ns,
                                    interval=self.observer_interval)
        self.test.state["observer"] = self.observer
        self.observer.start()

        self.phase("main")
        client_gen = gen.rate(self.spec.rate, self.workload.generator)
        schedule = self.nemesis_generator if self.nemesis is not None else None
        main = gen.clients(client_gen) if schedule is None else gen.nemesis(schedule, client_gen)
        self.healed = False
        await self.interpreter.run(gen.time_limit(self.spec.time_limit, main),
                                   with_nemesis=schedule is not None)

        self.phase("heal")
        self.heal()

        self.phase("recovery")
        await self._wait_for_stable_leader()

        if self.workload.final_generator is not None:
            self.phase("final")
            final_limit = max(30.0, 3 * self.spec.op_timeout)
            await self.interpreter.run(
                gen.time_limit(final_limit, gen.clients(self.workload.final_generator)), with_nemesis=False)
        await self.observer.stop()

    async def _wait_for_leader(self) -> None:
        """Every node knows a leader (as each node's DB setup waits on Docker), then some node claims
        leadership, at most setup_timeout."""
        deadline = self.now_s() + LEADER_TIMEOUT_S
        waiting = list(self.spec.nodes)
        while waiting:
            waiting = [n for n in waiting if not (self.db.status(self.test, n) or {}).get("leader")]
            if not waiting:
                break
            if self.now_s() >= deadline:
                last = self.db.status(self.test, waiting[0])
                raise FrameworkFailure(f"{waiting[0]}: no leader within {LEADER_TIMEOUT_S:.0f} s "
                                       f"(last status: {last})")
            await asyncio.sleep(POLL_S)
        deadline = self.now_s() + self.setup_timeout
        while self.now_s() < deadline:
            leaders = self.db.primaries(self.test)
            if leaders:
                log.info("leader after setup: %s", ", ".join(leaders))
                return
            await asyncio.sleep(POLL_S)
        note = f"no leader within {self.setup_timeout:g}s of setup; running the test anyway"
        log.warning(note)
        self.notes.append(note)

    async def _wait_for_stable_leader(self, stable_for: float = 1.0) -> None:
        """One and the same leader for `stable_for` seconds, at most recovery_timeout."""
        if self.spec.recovery_timeout <= 0:
            return
        deadline = self.now_s() + self.spec.recovery_timeout
        since: float | None = None
        last: list[str] = []
        while self.now_s() < deadline:
            leaders = self.db.primaries(self.test)
            if len(leaders) == 1 and leaders == last:
                if since is not None and self.now_s() - since >= stable_for:
                    log.info("stable leader after heal: %s", leaders[0])
                    return
            else:
                since = self.now_s() if len(leaders) == 1 else None
            last = leaders
            await asyncio.sleep(POLL_S)
        note = (f"no stable leader within {self.spec.recovery_timeout:g}s after heal "
                f"(last seen: {', '.join(last) or 'none'})")
        log.warning(note)
        self.notes.append(note)

    def heal(self) -> None:
        """The heal op, recorded as on Docker; faults are undone at one virtual instant."""
        if self.nemesis is None or self.healed:
            self.healed = True
            return
        try:
            record_heal(self.nemesis, self.test, self.record, self.now_ns)
        finally:
            self.healed = True

    # ---- cleanup ------------------------------------------------------------------------------

    def cleanup(self) -> list[str]:
        """Undoes everything that was set up, each step on its own; returns what failed."""
        failures: list[str] = []
        step = cleanup_step(failures)

        if self.nemesis is not None and self.nemesis_set_up and not self.healed:
            self.phase("heal")
            step("heal", self.heal)
        self.interpreter.close_clients()
        if self.nemesis is not None and self.nemesis_set_up:
            step("nemesis teardown", lambda: self.nemesis.teardown(self.test))  # type: ignore[union-attr]
        if self.started:
            self.phase("collect logs")
            step("log collection", self._collect_logs)
        return failures

    def _collect_logs(self) -> None:
        for node, lines in sorted(self.cluster.node_logs().items()):
            dest = store.make_dirs(self.run_dir / store.NODES / node)
            store.write_text(dest / "node.log", "".join(f"{line}\n" for line in lines))

    def stats(self) -> dict[str, Any]:
        self.end_phases()
        return {
            "phases": self.phases,
            "duration_s": round(self.now_s(), 3),
            "phase_s": {k: round(v, 4) for k, v in self.phase_times.items()},
            "phase_simulated_s": {k: round(v, 3) for k, v in self.phase_sim.items()},
        }


def build_workload(spec: TestSpec) -> Workload:
    from jepsen_py.plugins import build_workload as build

    try:
        from jepsen_py import workloads
    except ModuleNotFoundError:
        known: dict[str, Any] = {}
    else:
        known = dict(workloads.WORKLOADS)
    return build(spec, known)


def run_sim(spec: TestSpec, *, workload: Workload | None = None,
            nemesis_generator: Generator | None = None, post_run: Sequence[PostRun] = (),
            observer_interval: float = 0.1, setup_timeout: float = 60.0, show_progress: bool = False,
            status: SimStatus | None = None) -> SimOutcome:
    """Runs one test in the simulator and returns its outcome, as runner.run_test does for Docker.

    `workload` replaces the one spec.workload names; `nemesis_generator` replaces the nemesis
    schedule (the nemesis itself is still built from spec.nemesis); `post_run` steps run after
    results.json (the CLI passes pictures and Parquet; leave them out for speed). `show_progress`
    draws the live line (jepsen_py.sim.progress); `status` is the caller's own view of the same
    counters (test-all's bar reads it). KeyboardInterrupt is re-raised after heal and results.json;
    any other failure is in the outcome."""
    wall0, cpu0 = time.monotonic(), time.process_time()
    check_spec(spec)
    from jepsen_py.plugins import build_nemesis
    from jepsen_py.raftdb import RaftMetadataDB

    if workload is None:
        workload = build_workload(spec)
    template = workload.client if workload.client is not None else RaftMetadataDB(spec).client(workload.name)
    SimClient.check(template)
    nemesis, schedule = build_nemesis(list(spec.nemesis), spec)
    if nemesis_generator is not None:
        schedule = nemesis_generator
    cluster = make_cluster(spec)
    scheduler = getattr(cluster, "scheduler", None)
    try:
        with between_events(scheduler) if scheduler is not None else contextlib.nullcontext():
            return _run_on(cluster, spec, workload, template, nemesis, schedule, post_run=post_run,
                           observer_interval=observer_interval, setup_timeout=setup_timeout,
                           show_progress=show_progress, status=status, wall0=wall0, cpu0=cpu0)
    finally:
        # However the run ends (Ctrl-C in the analysis too), its coroutines are closed now, while
        # the simulation can still discard them, not finalised at exit, where the node code's
        # handlers would catch GeneratorExit and print a warning for each.
        close = getattr(cluster, "close", None)
        if callable(close):
            close()


def _run_on(cluster: Any, spec: TestSpec, workload: Workload, template: Any, nemesis: Any,
            schedule: Generator | None, *, post_run: Sequence[PostRun], observer_interval: float,
            setup_timeout: float, show_progress: bool, status: SimStatus | None, wall0: float,
            cpu0: float) -> SimOutcome:
    """run_sim's run on `cluster`, which the caller closes."""
    db = SimDB(cluster, spec.nodes)
    sim_nemesis = SimNemesis(nemesis, db, cluster) if nemesis is not None else None
    client = SimClient.like(template, cluster.client_net)

    run_dir = store.create_run_dir(spec.results_dir, spec.name)
    store.write_test_json(run_dir, spec, extra={
        "workload_meta": workload.meta,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "simulated": True,
    })
    store.update_latest(run_dir)
    history_path = run_dir / store.HISTORY
    error: BaseException | None = None
    interrupted = False
    with store.capture_log(run_dir / store.LOG):
        log.info("simulated run %s in %s (seed %d, %d nodes, concurrency %d)", spec.name, run_dir,
                 spec.seed, len(spec.nodes), spec.concurrency)
        writer = HistoryWriter(history_path)
        run = SimRun(spec, cluster=cluster, workload=workload, client=client, nemesis=sim_nemesis,
                     nemesis_generator=schedule, db=db, run_dir=run_dir, writer=writer,
                     observer_interval=observer_interval, setup_timeout=setup_timeout, status=status)
        if show_progress:
            run.progress = SimProgress(spec.name, run.status)
            run.progress.__enter__()
        try:
            try:
                with livelock_watchdog():
                    run.execute()
            except KeyboardInterrupt:
                interrupted = True
                log.warning("interrupted: healing")
            except BaseException as e:
                error = e
                level = logging.INFO if getattr(e, "exit_code", None) == EXIT_BAD_INPUT else logging.ERROR
                log.log(level, "run failed in phase %s: %s", run.phases[-1] if run.phases else "?", e)
                log.debug("the failure in full", exc_info=True)
            failures = run.cleanup()
        finally:
            writer.close()
            if run.progress is not None:
                run.progress.__exit__(None, None, None)
        if error is None and failures:
            error = FrameworkFailure("; ".join(failures))

        simulated = run.now_s()
        main_ran = "heal" in run.phases or (error is None and not interrupted)
        verdict = analyse(history_path, checkers=workload.checkers, test=run.test, judge=main_ran,
                          error=error, interrupted=interrupted, on_check=lambda: run.phase("check"),
                          fs=workload.fs)
        results = verdict.results
        if run.notes:
            results["notes"] = run.notes
        wall, cpu = time.monotonic() - wall0, time.process_time() - cpu0
        results["stats"] = {"invokes": verdict.invokes, "ok": verdict.oks, **run.stats(),
                            "simulated_s": round(simulated, 3), "wall_s": round(wall, 3),
                            "cpu_s": round(cpu, 3),
                            "speed": round(simulated / wall, 2) if wall > 0 else None}
        write_results(run_dir, results)
        log.info("simulated %.1f s in %.1f wall s, %.1f CPU s (%.1fx wall, %.1fx CPU)", simulated, wall,
                 cpu, simulated / max(wall, 1e-9), simulated / max(cpu, 1e-9))
        run_post_steps(post_run, run_dir)
    if interrupted:
        raise RunInterrupted(run_dir, results)
    return SimOutcome(run_dir=run_dir, valid=verdict.valid, results=results, exit_code=verdict.exit_code,
                      invokes=verdict.invokes, oks=verdict.oks, anomalies=count_anomalies(results),
                      error=None if verdict.error is None else f"{verdict.error}", phases=run.phases,
                      simulated_s=simulated, wall_s=wall, cpu_s=cpu)
