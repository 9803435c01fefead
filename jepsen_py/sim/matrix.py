"""`jepsen-py test-all --backend sim`: the detection matrix in the simulator.

The same cells, expectations, table and summary.json as on Docker (jepsen_py.matrix); only how one
run is carried out changes. Each run is the `jepsen-py run` a Docker cell would start, with
`--backend sim` added, parsed by the same parser and run in this process (no pictures: a run takes
seconds, so thousands fit where Docker runs tens). Every run has an explicit seed (`--seed` of the
matrix plus the iteration), so any run the table names replays byte for byte with `jepsen-py run
--backend sim ... --seed N`.

The correct build gets the [[correct]] cells plus a sweep: every workload our cluster serves x
every nemesis the simulator models (and none) x the safe read modes, so "never accused" covers
every fault and workload, not just the tuned cells. `--correct-runs N` spreads at least N runs over
those cells.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import math
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from jepsen_py import assembly, runflags
from jepsen_py import matrix as mx
from jepsen_py.errors import BadInput, JepsenError
from jepsen_py.lifetime import die_with_parent
from jepsen_py.plugins import build_nemesis
from jepsen_py.seeds import run_seed
from jepsen_py.sim.nemesis import SUPPORTED
from jepsen_py.sim.progress import SimStatus
from jepsen_py.workloads import CLUSTER_WORKLOADS

#: the read modes a correct build must be linearizable under (`local` is unsafe by design)
SAFE_READ_MODES = ("read-index", "lease")
#: the seed of each cell's first run when --seed is not given: a fixed default, so a matrix run
#: twice is the same matrix (and any failure in it replays)
DEFAULT_SEED = 1


class WallLimit(SystemExit):
    """A run went past its wall-clock budget, raised by an alarm in the run's own thread. A
    SystemExit, because asyncio Tasks and the simulator's scheduler re-raise exactly that (and
    KeyboardInterrupt) while any other exception, even a BaseException, would only end the task it
    hit and the run would go on: node code that loops without letting virtual time pass would
    otherwise hold the matrix forever."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"stopped after {seconds:g} wall s: the simulated run did not finish (node code "
                         f"that never lets virtual time pass?); its history ends where it stopped")


def default_wall_limit(cell: mx.Cell) -> float:
    """Generous: a loaded machine runs the simulator below real time (5x slower was measured)."""
    return 30 * cell.time_limit + 300


@contextlib.contextmanager
def wall_limit(seconds: float | None) -> Iterator[None]:
    """Raises WallLimit in this thread after `seconds` of wall time (only the main thread can
    take a signal; elsewhere, and for None, there is no limit)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def ring(signum: int, frame: object) -> None:
        raise WallLimit(seconds)

    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class SimRunRecord(mx.RunRecord):
    """A run record plus what a simulated run adds: its seed (to replay it) and its cost."""

    seed: int = 0
    simulated_s: float | None = None
    cpu_s: float | None = None


@dataclass(frozen=True)
class Planned:
    """A cell and how many runs it gets."""

    cell: mx.Cell
    runs: int


def sweep_cells(time_limit: float, nemesis_interval: float) -> list[mx.Cell]:
    """The correct build under every workload our cluster serves x every nemesis the simulator
    models (and none) x every safe read mode."""
    return [mx.Cell(bug=mx.CORRECT, workload=w, nemesis=n, read_mode=mode, time_limit=time_limit,
                    nemesis_interval=nemesis_interval)
            for w in CLUSTER_WORKLOADS for n in ("none", *SUPPORTED) for mode in SAFE_READ_MODES]


def runnable(cells: list[mx.Cell], node_count: int) -> tuple[list[mx.Cell], list[str]]:
    """The cells whose runs `jepsen-py run` accepts at this node count, and one line for each left
    out (partition-ring needs at least 4 nodes): a sweep skips what the cluster size cannot carry."""
    keep: list[mx.Cell] = []
    skipped: list[str] = []
    for c in cells:
        try:
            spec = spec_for(run_flags(c, "check", Path("results"), node_count, DEFAULT_SEED))
            build_nemesis(list(spec.nemesis), spec)  # what a run checks first, nothing started
        except BadInput as e:
            skipped.append(f"{c.label}: {e}")
        else:
            keep.append(c)
    return keep, skipped


def plan(cells: list[mx.Cell], test_count: int, correct_runs: int | None) -> list[Planned]:
    """Each bug cell `test_count` runs; the correct build's cells share `correct_runs` evenly (at
    least one each), or `test_count` each when it is not given."""
    correct = [c for c in cells if c.bug == mx.CORRECT]
    per_correct = test_count
    if correct_runs is not None and correct:
        per_correct = max(1, math.ceil(correct_runs / len(correct)))
    return [Planned(c, per_correct if c.bug == mx.CORRECT else test_count) for c in cells]


def run_flags(cell: mx.Cell, name: str, results_dir: Path, node_count: int, seed: int) -> list[str]:
    """The `jepsen-py run` flags of the Docker cell, for the simulator."""
    argv = mx.run_argv(cell, name, results_dir, node_count, seed)
    return [*argv[argv.index("run") + 1:], "--backend", "sim"]


_VERSION: dict[str, str] = {}


def spec_for(flags: list[str]) -> Any:
    """The TestSpec `jepsen-py run FLAGS` would build, checked as it checks it (BadInput if not)."""
    try:
        args = runflags.parser().parse_args(flags)
    except SystemExit as e:  # the parser printed its one line already
        raise BadInput(f"bad run flags for the simulator: {' '.join(flags)}") from e
    # git describe once per matrix, not once per run
    return runflags.spec_from_args(args, versions=_VERSION)


def run_cell_sim(cell: mx.Cell, iteration: int, results_dir: Path, matrix: str, node_count: int,
                 seed: int, status: SimStatus | None = None,
                 wall_limit_s: float | None = None) -> SimRunRecord:
    """Runs one cell once in the simulator, in this process, and reads back its verdict; a run past
    `wall_limit_s` wall seconds is stopped and recorded as failed (its results.json says why)."""
    name = f"{matrix}-{cell.label}"
    t0 = time.monotonic()
    rec = SimRunRecord(cell=cell.label, iteration=iteration, exit_code=255, verdict="framework-failure",
                       wall_s=0.0, seed=seed)
    try:
        spec = spec_for(run_flags(cell, name, results_dir, node_count, seed))
        with wall_limit(wall_limit_s):
            outcome = assembly.run(assembly.assemble(spec), status=status)  # as `jepsen-py run` does
    except WallLimit as e:  # it rang after the run itself (in the checkers): the run is lost all the same
        rec.error = str(e)[:300]
        rec.wall_s = round(time.monotonic() - t0, 1)
        return rec
    except JepsenError as e:
        rec.exit_code, rec.verdict = e.exit_code, mx.EXIT_NAMES.get(e.exit_code, str(e.exit_code))
        rec.error = str(e)[:300]
        rec.wall_s = round(time.monotonic() - t0, 1)
        return rec
    rec.exit_code = outcome.exit_code
    rec.verdict = mx.EXIT_NAMES.get(outcome.exit_code, str(outcome.exit_code))
    rec.wall_s = round(time.monotonic() - t0, 1)
    rec.simulated_s, rec.cpu_s = round(outcome.simulated_s, 3), round(outcome.cpu_s, 1)
    rec.run_dir = str(outcome.run_dir)
    if outcome.exit_code in (254, 255):
        rec.error = (outcome.error or "the run failed")[:300]
        return rec
    rec.anomaly_kinds = mx.anomaly_kinds(outcome.results)
    rec.first_anomaly_s = mx.first_anomaly_s(Path(outcome.run_dir), outcome.results)
    rec.detected = outcome.exit_code == 1 and any(k in rec.anomaly_kinds for k in cell.anomalies)
    return rec


def run_in_child(cell: mx.Cell, iteration: int, results_dir: Path, matrix: str, node_count: int,
                 seed: int, wall_limit_s: float | None,
                 versions: dict[str, str] | None = None) -> SimRunRecord:
    """One run in a worker process; a crash of the controller becomes the run's record. `versions`
    are the DB versions the driver found: an executor runs from a copy of the code without its git
    history, where `git describe` would say unversioned."""
    _VERSION.update(versions or {})
    try:
        return run_cell_sim(cell, iteration, results_dir, matrix, node_count, seed, wall_limit_s=wall_limit_s)
    except Exception as e:
        return SimRunRecord(cell=cell.label, iteration=iteration, exit_code=255, verdict="framework-failure",
                            wall_s=0.0, seed=seed, error=f"{type(e).__name__}: {e}"[:300])


OnRun = Callable[[mx.Cell, int, "SimRunRecord | None", "SimStatus | None"], None]


class Pool(Protocol):
    """Where runs go when not in this process: `slots` at once, each `submit` a future of its record
    (a process pool here; Spark's executors with test-all --master, jepsen_py.spark.matrix)."""

    slots: int

    def submit(self, fn: Callable[..., SimRunRecord], /, *args: Any) -> Future[SimRunRecord]:
        """Runs fn(*args) somewhere."""

    def close(self) -> None:
        """Waits for what runs and releases the workers."""


def run_matrix(planned: list[Planned], *, results_dir: Path, matrix: str, node_count: int, seed: int,
               parallel: int = 1, on_run: OnRun = lambda c, i, r, s: None,
               wall_limit_s: float | None = None,
               on_tally: Callable[[list[mx.Row], list[mx.RunRecord]], None] | None = None,
               pool: Pool | None = None,
               ) -> tuple[list[mx.Row], list[mx.RunRecord]]:
    """Runs every planned cell its number of times, iteration by iteration (so a matrix stopped
    early has covered every cell evenly). Run i of a cell has seed `seed + i`.

    parallel 1 runs in this process, and on_run gets the live SimStatus of each run (the bar draws
    it); parallel N runs N worker processes (the simulation is one thread: threads would not help);
    a `pool` runs them where it runs things, its slots at once (parallel is then ignored).
    Each run may take `wall_limit_s` wall seconds (default: default_wall_limit of its cell)."""

    def limit(cell: mx.Cell) -> float:
        return wall_limit_s if wall_limit_s is not None else default_wall_limit(cell)

    jobs = [(k, p.cell, i) for i in range(max((p.runs for p in planned), default=0))
            for k, p in enumerate(planned) if i < p.runs]
    done: dict[tuple[int, int], mx.RunRecord] = {}  # (planned index, run): labels may repeat
    lock = threading.Lock()

    def tally() -> tuple[list[mx.Row], list[mx.RunRecord]]:
        rows: list[mx.Row] = []
        records: list[mx.RunRecord] = []
        for k, p in enumerate(planned):
            mine = [done[(k, i)] for i in range(p.runs) if (k, i) in done]
            records.extend(mine)
            rows.append(mx.summarize(p.cell, mine))
        return rows, records

    def finish(k: int, cell: mx.Cell, i: int, rec: SimRunRecord) -> None:
        with lock:
            done[(k, i)] = rec
            if on_tally is not None:
                on_tally(*tally())
        on_run(cell, i, rec, None)

    if parallel <= 1 and pool is None:
        for k, cell, i in jobs:
            status = SimStatus(cell.time_limit)
            on_run(cell, i, None, status)
            try:
                rec = run_cell_sim(cell, i, results_dir, matrix, node_count, run_seed(seed, i), status,
                                   limit(cell))
            except Exception as e:  # the controller broke: record it, keep the matrix going
                rec = SimRunRecord(cell=cell.label, iteration=i, exit_code=255, verdict="framework-failure",
                                   wall_s=0.0, seed=run_seed(seed, i), error=f"{type(e).__name__}: {e}"[:300])
            finish(k, cell, i, rec)
        return tally()

    if pool is None:
        pool = _ProcessPool(parallel)
    parallel = pool.slots
    # the DB versions, found here where the checkout is: once per set of extra flags (--db, --db-version
    # come from those), not once per cell
    for cell in {tuple(p.cell.args): p.cell for p in planned}.values():
        with contextlib.suppress(JepsenError):  # the cell's own run records why its flags are refused
            spec_for(run_flags(cell, f"{matrix}-{cell.label}", results_dir, node_count, seed))
    try:
        futures = {}
        for k, cell, i in jobs:
            fut = pool.submit(run_in_child, cell, i, results_dir, matrix, node_count, run_seed(seed, i),
                              limit(cell), dict(_VERSION))
            futures[fut] = (k, cell, i)
        for _, cell, i in jobs[:parallel]:
            on_run(cell, i, None, None)
        pending = list(jobs[parallel:])
        for fut in concurrent.futures.as_completed(futures):
            k, cell, i = futures[fut]
            try:
                rec = fut.result()
            except Exception as e:  # the worker process died
                rec = SimRunRecord(cell=cell.label, iteration=i, exit_code=255, verdict="framework-failure",
                                   wall_s=0.0, seed=run_seed(seed, i), error=f"{type(e).__name__}: {e}"[:300])
            finish(k, cell, i, rec)
            if pending:
                _, nxt_cell, nxt_i = pending.pop(0)
                on_run(nxt_cell, nxt_i, None, None)
    finally:
        pool.close()
    return tally()


class _ProcessPool:
    """`parallel` worker processes: spawned, so no threads or rich state are forked into them."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        ctx = multiprocessing.get_context("spawn")
        # no max_tasks_per_child: on Python 3.11 the pool stops handing out work once a worker has
        # retired (a matrix of hundreds of runs hung after 2 x 50)
        # the kernel ends each worker if this process dies without shutting the pool down (SIGKILL)
        self._pool = concurrent.futures.ProcessPoolExecutor(max_workers=slots, mp_context=ctx,
                                                            initializer=die_with_parent,
                                                            initargs=(os.getpid(),))

    def submit(self, fn: Callable[..., SimRunRecord], /, *args: Any) -> Future[SimRunRecord]:
        return self._pool.submit(fn, *args)

    def close(self) -> None:
        self._pool.shutdown(wait=True)


__all__ = ["DEFAULT_SEED", "SAFE_READ_MODES", "Planned", "Pool", "SimRunRecord", "WallLimit",
           "default_wall_limit", "plan", "run_cell_sim", "run_in_child", "run_matrix", "runnable", "spec_for",
           "sweep_cells", "wall_limit"]
