"""`jepsen-py run --backend sim`: one test on the simulated cluster, from an empty store directory to
an exit code, in virtual time.

The phases are the runner's own (jepsen_py.runner.run_test), on the simulator's engine
(jepsen_py.sim.engine), each in virtual time on the controller's loop:

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

import contextlib
import logging
import time
from collections.abc import Sequence
from typing import Any

from jepsen_py.analysis import PostRun
from jepsen_py.backends import get_backend, simulator
from jepsen_py.bugs import node_bugs
from jepsen_py.errors import BadInput
from jepsen_py.generator import Generator
from jepsen_py.nodenames import check_node_names
from jepsen_py.plugins import build_nemesis, builtin_workloads
from jepsen_py.plugins import build_workload as build
from jepsen_py.protocols import TestSpec
from jepsen_py.raftdb import RaftMetadataDB
from jepsen_py.references import canonical_db
from jepsen_py.runner import run_test
from jepsen_py.seeds import cluster_seed
from jepsen_py.sim.client import SimClient
from jepsen_py.sim.cluster import CONTROLLER, SimCluster, sim_node_config
from jepsen_py.sim.engine import SimEngine, SimOutcome
from jepsen_py.sim.interrupts import between_events
from jepsen_py.sim.nemesis import SimDB, SimNemesis, check_names
from jepsen_py.sim.progress import SimStatus
from jepsen_py.workload import Workload

log = logging.getLogger(__name__)

SIM_DB = "jepsen_py.raftdb:RaftMetadataDB"


def check_spec(spec: TestSpec) -> None:
    """One line (exit 254) for what the simulator cannot honour, before anything is created."""
    if canonical_db(spec.db) != SIM_DB:
        raise BadInput(f"--db {spec.db}: the simulator runs this project's cluster only ({SIM_DB})")
    if spec.leave_db_running:
        raise BadInput("--leave-db-running: simulated nodes end with the run; there is nothing to leave "
                       "running (--backend sim)")
    check_names(spec.nemesis)  # --bug is checked where the spec is made (runflags, explore's plan)
    if spec.concurrency < 1:
        raise BadInput(f"concurrency must be at least 1, got {spec.concurrency}")
    check_node_names(spec.nodes, "nodes")

    if CONTROLLER in spec.nodes:
        raise BadInput(f"nodes: {CONTROLLER!r} is the simulator's own name for the controller; "
                       f"name the node otherwise")


# spec.options key: a seed for the simulated cluster's own randomness alone (network delays, disk,
# the nodes' entropy), where the run's seed still decides everything else (the nemesis's draws, the
# generators, each node's Raft timeouts). A real backend replays a schedule under timings of its
# own; runs of one schedule under several timing seeds tell how much its outcome depends on them.
TIMING_SEED = "sim_timing_seed"


def make_cluster(spec: TestSpec) -> Any:
    """The simulated cluster for `spec`: its nodes configured as RaftMetadataDB starts them on Docker
    (ports, per-node seeds; the read mode and bugs asked for)."""
    nodes = list(spec.nodes)
    bugs = node_bugs(spec.bugs)

    def config(node: str) -> Any:
        return sim_node_config(node, nodes, spec.seed, read_mode=spec.read_mode, bugs=bugs)

    timing = spec.options.get(TIMING_SEED)
    return SimCluster(cluster_seed(spec.seed, timing), nodes, config)


def build_workload(spec: TestSpec) -> Workload:
    return build(spec, builtin_workloads())


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
    """run_sim's run on `cluster`, which the caller closes: the runner's phases on the simulator's
    engine."""
    db = SimDB(cluster, spec.nodes)
    sim_nemesis = SimNemesis(nemesis, db) if nemesis is not None else None
    client = SimClient.like(template, cluster.client_net)
    status = status if status is not None else SimStatus(spec.time_limit)
    engine = SimEngine(cluster, status, wall0=wall0, cpu0=cpu0)
    outcome = run_test(spec, db=db, workload=workload, nemesis=sim_nemesis,  # type: ignore[arg-type]
                       nemesis_generator=schedule, backend=get_backend(simulator(), spec), client=client,
                       engine=engine, saw=status.saw, post_run=post_run, show_progress=show_progress,
                       observer_interval=observer_interval, setup_timeout=setup_timeout)
    assert isinstance(outcome, SimOutcome)
    return outcome
