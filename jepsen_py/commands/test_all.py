"""`jepsen-py test-all`: the detection matrix, every seed bug and the correct build, with a verdict.

Exit 0 when every expectation held (each bug detected at its minimum rate, the correct build never
accused), 1 when one failed, 254 for a bad expectations file or flag, 255 when the runs could not be
carried out at all.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from jepsen_py import matrix as mx
from jepsen_py import runflags, store
from jepsen_py.backends import backend_kind, is_simulated, simulator
from jepsen_py.errors import BadInput
from jepsen_py.flags import check_room, path
from jepsen_py.numbers import MAX_SECONDS, check_seeds, integer, number
from jepsen_py.numbers import seed as seed_type
from jepsen_py.spark.matrix import open_matrix_pool
from jepsen_py.spark.tasks import check_master

NAME = "test-all"
HELP = "run the bug x workload x nemesis detection matrix and check it against the expectations"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("example: jepsen-py test-all --quick (one short run per bug plus a few "
                     "correct-build runs). Exit codes: 0 every expectation held, 1 one failed.")
    parser.add_argument("--quick", action="store_true",
                        help="the reduced matrix: one run per bug at its quick time limit, and the "
                             "correct-build runs marked quick")
    parser.add_argument("--test-count", type=integer(1, 100_000), default=None, metavar="N",
                        help="runs per cell (default: 1 with --quick, 10 otherwise)")
    parser.add_argument("--expectations", type=path, default=mx.DEFAULT_EXPECTATIONS, metavar="FILE",
                        help="the expectations TOML (default: jepsen_py/expectations.toml)")
    parser.add_argument("--bugs", default=None, metavar="NAMES",
                        help="only these bugs, comma separated ('correct' names the correct build; "
                             "'tuned' or a broad config's name, e.g. 'broad', keeps only those cells)")
    parser.add_argument("--time-limit", type=number(0, MAX_SECONDS, lo_open=True), default=None, metavar="S",
                        help="override every cell's main-phase seconds")
    parser.add_argument("--node-count", type=integer(1, 250), default=5, metavar="N",
                        help="nodes per cluster (default 5)")
    parser.add_argument("--results-dir", type=path, default=Path("results"), metavar="DIR",
                        help="the store (default: results)")
    parser.add_argument("--name", default=None, metavar="NAME",
                        help="matrix name: runs are <name>-<cell>, the summary results/<name>/summary.json "
                             "(default: matrix-quick or matrix)")
    parser.add_argument("--parallel", type=integer(1, 64), default=1, metavar="N",
                        help="runs at once, each its own cluster (default 1; timing-sensitive bugs "
                             "may need a quiet machine)")
    parser.add_argument("--seed", type=seed_type, default=None,
                        help="seed of the first run of each cell (+1 per run)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    sim = parser.add_argument_group("in the simulator (--backend sim)")
    sim.add_argument("--backend", choices=("docker", simulator()), default="docker",
                     help="docker (default): each run its own cluster; sim: every run in the "
                          "deterministic simulator, in this process, seeds --seed (default 1) + run")
    sim.add_argument("--correct-runs", type=integer(1, 1_000_000), default=None, metavar="N",
                     help="sim: at least N correct-build runs spread evenly over its cells and the "
                          "sweep (default 500 with the sweep, else --test-count per cell)")
    sim.add_argument("--sweep", action=argparse.BooleanOptionalAction, default=None,
                     help="sim: the correct build also under every workload our cluster serves x every "
                          "nemesis x read modes read-index and lease (default: on, off with --quick)")
    sim.add_argument("--sweep-time-limit", type=number(0, MAX_SECONDS, lo_open=True), default=None,
                     metavar="S", help="sim: the sweep's main-phase seconds (default 20)")
    sim.add_argument("--run-wall-limit", type=number(0, MAX_SECONDS, lo_open=True), default=None,
                     metavar="S", help="sim: stop a run after S wall seconds and count it failed "
                                       "(default 30 x its time limit + 300)")
    sim.add_argument("--master", default=None, metavar="URL",
                     help="sim: run the matrix's runs as Spark tasks on this master (spark://HOST:PORT, "
                          "local[N], yarn, k8s://URL), --parallel at once (default: its cores); the same "
                          "table, summary and exit code")
    sim.add_argument("--sweep-nemesis-interval", type=number(0, MAX_SECONDS, lo_open=True), default=None,
                     metavar="S", help="sim: the sweep's seconds between fault ops (default 5)")


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    test_count = args.test_count if args.test_count is not None else (1 if args.quick else 10)
    if args.parallel < 1:
        raise BadInput(f"--parallel must be at least 1, got {args.parallel}")
    if test_count < 1:
        raise BadInput(f"--test-count must be at least 1, got {test_count}")
    if args.node_count < 3:
        raise BadInput(f"--node-count must be at least 3, got {args.node_count}")
    if args.time_limit is not None and args.time_limit <= 0:
        raise BadInput(f"--time-limit must be positive, got {args.time_limit}")
    check_room("--results-dir", args.results_dir)
    cells = mx.load_expectations(args.expectations, args.quick)
    check_cells(cells if not args.quick else mx.load_expectations(args.expectations, False), args)
    bugs = [b.strip() for b in args.bugs.split(",") if b.strip()] if args.bugs else None
    cells = mx.select(cells, bugs)
    if is_simulated(args.backend):
        if args.master is not None:
            check_master(args.master)
        return _run_sim(cells, bugs, args, test_count)
    for flag in ("correct_runs", "sweep", "sweep_time_limit", "sweep_nemesis_interval", "run_wall_limit",
                 "master"):
        if getattr(args, flag) is not None:
            raise BadInput(f"--{flag.replace('_', '-')}: an option of the simulator's matrix (--backend sim)")
    if args.time_limit is not None:
        cells = [replace(c, time_limit=args.time_limit) for c in cells]
    if args.seed is not None:
        check_seeds("--seed", args.seed, test_count)  # run i of a cell has seed + i
    matrix = args.name or ("matrix-quick" if args.quick else "matrix")
    total = len(cells) * test_count
    t0 = time.monotonic()
    summary_path = args.results_dir / matrix / "summary.json"

    def tally(rows: list[mx.Row], records: list[mx.RunRecord]) -> None:
        mx.write_summary(summary_path, matrix=matrix, quick=args.quick, test_count=test_count, rows=rows,
                         records=records, wall_s=time.monotonic() - t0, complete=False)

    rows, records = _run_with_progress(cells, args, test_count, matrix, total, tally)
    summary = mx.write_summary(summary_path, matrix=matrix, quick=args.quick, test_count=test_count,
                               rows=rows, records=records, wall_s=time.monotonic() - t0)
    _print_table(rows, summary, summary_path)
    if records and all(r.error is not None for r in records):
        print(f"test-all: no run could be carried out; first error: {records[0].error}", file=sys.stderr)
        return 255
    return 0 if summary["passed"] else 1


def check_cells(cells: list[mx.Cell], args: argparse.Namespace) -> None:
    """Every cell of the expectations file as `jepsen-py run` takes it (its workload, nemesis, read
    mode, bug and args, parsed and checked by run's own code on the backend the matrix uses), when
    the file is loaded: a name the DB or the framework does not know is one line naming the file's
    entry and 254 before any run starts, not a failed run of the cell after the matrix has started
    (which test-all could only report as 255: no run carried out)."""
    parser = runflags.parser()
    seen: set[tuple[object, ...]] = set()
    for cell in cells:
        key = (cell.bug, cell.workload, cell.nemesis, cell.read_mode, cell.args)
        if key in seen:
            continue
        seen.add(key)
        where = cell.where or f"--expectations: {args.expectations} cell {cell.label}"
        argv = mx.run_argv(cell, "check", args.results_dir, args.node_count, None)
        # the backend named, so that run's default (a ping of the Docker engine) is not asked per cell
        flags = [*argv[argv.index("run") + 1:], "--backend", args.backend]
        said = io.StringIO()
        try:
            with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
                ns = parser.parse_args(flags)
            runflags.spec_from_args(ns, versioned=False)
        except SystemExit:  # the parser refused the flags (or printed help for a --help in args)
            told = " ".join(said.getvalue().split()).split(": error: ", 1)[-1] or "not flags a run takes"
            msg = re.sub(r" \(see jepsen-py[^()]* --help\)$", "", told)
            raise BadInput(" ".join(f"{where}: {'args: ' if cell.args else ''}{msg}".split())) from None
        except BadInput as e:  # folded: a name in the file may hold a newline
            raise BadInput(" ".join(f"{where}: {e}".split())) from None


def _run_with_progress(cells: list[mx.Cell], args: argparse.Namespace, test_count: int, matrix: str,
                       total: int, tally: Callable[[list[mx.Row], list[mx.RunRecord]], None],
                       ) -> tuple[list[mx.Row], list[mx.RunRecord]]:
    kw = {"test_count": test_count, "results_dir": args.results_dir, "matrix": matrix,
          "node_count": args.node_count, "seed": args.seed, "parallel": args.parallel, "on_tally": tally}
    if args.no_progress or not sys.stderr.isatty():
        def plain(cell: mx.Cell, i: int, rec: mx.RunRecord | None) -> None:
            if rec is None:
                print(f"test-all: {cell.label} run {i + 1}/{test_count} ...", file=sys.stderr, flush=True)
            else:
                kinds = ",".join(sorted(rec.anomaly_kinds)) or "-"
                print(f"test-all: {cell.label} run {i + 1}: {rec.verdict} ({kinds}) in {rec.wall_s:.0f} s"
                      + (f"; {rec.error}" if rec.error else ""), file=sys.stderr, flush=True)
        return mx.run_matrix(cells, on_run=plain, **kw)

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), transient=False) as bar:
        task = bar.add_task("test-all", total=total)

        def step(cell: mx.Cell, i: int, rec: mx.RunRecord | None) -> None:
            if rec is None:
                bar.update(task, description=f"{cell.label} ({i + 1}/{test_count})")
            else:
                bar.advance(task)
                bar.console.print(f"{cell.label} run {i + 1}: {rec.verdict} "
                                  f"({', '.join(sorted(rec.anomaly_kinds)) or 'no anomalies'}) "
                                  f"{rec.wall_s:.0f} s")
        return mx.run_matrix(cells, on_run=step, **kw)


def _run_sim(cells: list[mx.Cell], bugs: list[str] | None, args: argparse.Namespace, test_count: int) -> int:
    """The matrix in the simulator (the backend kind's in-process matrix runner): the same cells,
    table, summary and exit code; the correct build also over the sweep, with --correct-runs runs
    in all."""
    from dataclasses import replace

    smx = backend_kind(args.backend).matrix_runner()
    assert smx is not None  # is_simulated: the simulator's kind has one

    sweep = args.sweep if args.sweep is not None else not args.quick
    if sweep and (not bugs or mx.CORRECT in bugs):
        taken = {c.label for c in cells}
        limit, interval = args.sweep_time_limit or 20.0, args.sweep_nemesis_interval or 5.0
        extra, skipped = smx.runnable([c for c in smx.sweep_cells(limit, interval)
                                       if c.label not in taken], args.node_count)  # not twice
        for line in skipped:
            print(f"test-all: sweep: left out {line}", file=sys.stderr)
        cells += extra
    if args.time_limit is not None:
        cells = [replace(c, time_limit=args.time_limit) for c in cells]
    correct_runs = args.correct_runs if args.correct_runs is not None else (500 if sweep else None)
    planned = smx.plan(cells, test_count, correct_runs)
    matrix = args.name or ("matrix-sim-quick" if args.quick else "matrix-sim")
    seed = args.seed if args.seed is not None else smx.DEFAULT_SEED
    check_seeds("--seed", seed, max((p.runs for p in planned), default=1))  # run i has seed + i
    summary_path = args.results_dir / matrix / "summary.json"
    t0 = time.monotonic()

    def write(rows: list[mx.Row], records: list[mx.RunRecord], complete: bool) -> dict:
        summary = mx.write_summary(summary_path, matrix=matrix, quick=args.quick, test_count=test_count,
                                   rows=rows, records=records, wall_s=time.monotonic() - t0,
                                   complete=complete)
        summary.update(backend=args.backend, seed=seed, correct_runs=correct_runs)
        store.write_json(summary_path, summary)
        return summary

    kw = {"results_dir": args.results_dir, "matrix": matrix, "node_count": args.node_count, "seed": seed,
          "parallel": args.parallel, "wall_limit_s": args.run_wall_limit,
          "on_tally": lambda rows, records: write(rows, records, False)}
    if args.master is not None:  # the runs as Spark tasks, writing where the driver would
        kw.update(results_dir=args.results_dir.resolve(),
                  pool=open_matrix_pool(args.master, args.parallel if args.parallel > 1 else None))
    total = sum(p.runs for p in planned)
    if args.no_progress or not sys.stderr.isatty():
        def plain(cell: mx.Cell, i: int, rec: mx.RunRecord | None, status: object) -> None:
            if rec is not None:
                print(f"test-all: {_sim_run_line(cell, i, rec)}", file=sys.stderr, flush=True)
        rows, records = smx.run_matrix(planned, on_run=plain, **kw)
    else:
        rows, records = _sim_with_bar(smx, planned, total, kw)
    summary = write(rows, records, True)
    _print_table(rows, summary, summary_path)
    if records and all(r.error is not None for r in records):
        print(f"test-all: no run could be carried out; first error: {records[0].error}", file=sys.stderr)
        return 255
    return 0 if summary["passed"] else 1


def _sim_run_line(cell: mx.Cell, i: int, rec: mx.RunRecord) -> str:
    kinds = ", ".join(sorted(rec.anomaly_kinds)) or "no anomalies"
    seed = getattr(rec, "seed", None)
    simulated = getattr(rec, "simulated_s", None)
    return (f"{cell.label} run {i + 1} (seed {seed}): {rec.verdict} ({kinds}) "
            + (f"{simulated:.0f} simulated s in " if simulated is not None else "")
            + f"{rec.wall_s:.0f} s" + (f"; {rec.error}" if rec.error else ""))


def _sim_with_bar(smx: ModuleType, planned: list, total: int,
                  kw: dict) -> tuple[list[mx.Row], list[mx.RunRecord]]:
    """The bar over every run, and under it the live line of the run in progress (in-process runs
    by `smx`, the backend kind's matrix runner)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TextColumn("{task.fields[live]}", markup=False),
                  transient=False) as bar:
        task = bar.add_task("test-all (sim)", total=total, live="")
        current: list = [None]

        def live() -> None:  # the bar's refresh thread calls this through the column's field
            status = current[0]
            bar.update(task, live="" if status is None else status.line())

        def step(cell: mx.Cell, i: int, rec: mx.RunRecord | None, status: object) -> None:
            if rec is None:
                current[0] = status
                bar.update(task, description=f"{cell.label} ({i + 1})")
            else:
                current[0] = None
                bar.advance(task)
                bar.console.print(_sim_run_line(cell, i, rec))
            live()

        stop = threading.Event()

        def refresh() -> None:
            while not stop.wait(0.25):
                live()

        ticker = threading.Thread(target=refresh, name="test-all-live", daemon=True)
        ticker.start()
        try:
            return smx.run_matrix(planned, on_run=step, **kw)
        finally:
            stop.set()
            ticker.join()


def _print_table(rows: list[mx.Row], summary: dict, path: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{summary['matrix']}: {'PASSED' if summary['passed'] else 'FAILED'}")
    for col in ("bug", "config", "workload", "nemesis", "s", "runs", "valid", "invalid", "unknown",
                "anomalies found", "detection", "median 1st anomaly", "ok"):
        t.add_column(col)
    for r in rows:
        nem = r.nemesis + ("" if r.read_mode == "read-index" else f" ({r.read_mode})")
        anomalies = ", ".join(f"{k} {n}" for k, n in sorted(r.anomalies.items())) or "-"
        rate = "-" if r.detection_rate is None else f"{r.detection_rate:.0%}"
        first = "-" if r.median_first_anomaly_s is None else f"{r.median_first_anomaly_s:.1f} s"
        t.add_row(r.bug, r.config, r.workload, nem, f"{r.time_limit:g}", str(r.runs), str(r.valid),
                  str(r.invalid),
                  str(r.unknown) + (f" +{r.errors} err" if r.errors else ""), anomalies, rate, first,
                  ("yes" if r.passed else "NO") + ("" if r.gate else " (not gating)"))
    console = Console(width=200) if not sys.stdout.isatty() else Console()
    console.print(t)
    cb = summary["correct_build"]
    console.print(f"correct build: {cb['false_positives']} invalid of {cb['runs']} runs "
                  f"({cb['unknown']} unknown); summary in {path}; wall {summary['wall_s']:.0f} s")
