"""`jepsen-py db-check`: try what a DB plugin declares on a small cluster made for the check, and
print what works and what does not (jepsen_py.dbcheck).

Exit codes: 0 every declared step worked, 1 one did not (a hook that never returned included: it
fails its step within --timeout, and the check ends), 254 bad arguments (an unknown DB, option or
backend, a DB whose declarations are not ones), 255 framework failure.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from jepsen_py import spec as specmod
from jepsen_py.backends import KINDS, add_backend_arguments, backend_options, default_backend
from jepsen_py.dbcheck import Report, check_real, check_sim
from jepsen_py.errors import EXIT_INVALID, EXIT_VALID, BadInput
from jepsen_py.numbers import MAX_SECONDS, integer, number
from jepsen_py.plugins import check_db_flags
from jepsen_py.protocols import TestSpec
from jepsen_py.references import canonical_db
from jepsen_py.spec import DEFAULT_DB, READ_MODES

NAME = "db-check"
HELP = "check a DB plugin: setup, clients, faults, status and teardown on a small cluster"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("example: jepsen-py db-check --db mypkg.db:MyDB --db-option reads=replica. "
                     "Exit codes: 0 every declared step works, 1 one does not, 254 bad arguments.")
    parser.add_argument("--db", default=DEFAULT_DB, metavar="MODULE:CLASS",
                        help=f"the DB to check, constructed as CLASS(spec) (default: {DEFAULT_DB})")
    parser.add_argument("--db-option", action="append", default=None, metavar="KEY=VALUE",
                        help="a setting of the DB, repeatable, as `run` takes it")
    parser.add_argument("--read-mode", default=None, choices=READ_MODES,
                        help="our cluster's read mode (only for a DB that declares read modes)")
    parser.add_argument("--workload", action="append", default=None, metavar="NAME",
                        help="a workload to try, repeatable (default: every workload whose client the "
                             "DB hands out, or its workloads() when it declares them)")
    parser.add_argument("--node-count", type=integer(1, 9), default=3, metavar="N",
                        help="nodes of the cluster made for the check (default: 3)")
    parser.add_argument("--backend", default=None,
                        help="docker, ssh, local, or sim for our cluster in the simulator "
                             "(default: docker when a Docker engine answers, else local)")
    parser.add_argument("--timeout", type=number(0, MAX_SECONDS, lo_open=True), default=60.0, metavar="S",
                        help="how long any one hook of the DB may take (setup and teardown on every "
                             "node at once; a hook that does not return fails its step and ends the "
                             "check), a leader to appear, or a node to answer again after start or "
                             "resume (default: 60)")
    add_backend_arguments(parser)


def build_spec(args: argparse.Namespace) -> TestSpec:
    db = canonical_db(args.db)
    backend = args.backend or default_backend()
    spec = TestSpec(
        name="db-check", workload=(args.workload or ["register"])[0], nemesis=[],
        nodes=[f"n{i}" for i in range(1, args.node_count + 1)], time_limit=1.0, concurrency=1, rate=0.0,
        nemesis_interval=1.0, seed=1, backend=backend,
        read_mode=specmod.default_read_mode(args.read_mode, db), bugs=[], db=db,
        results_dir=Path("results"), options=backend_options(args), op_timeout=min(10.0, args.timeout),
        db_options=specmod.parse_db_options(args.db_option),
    )
    check_db_flags(spec)
    return spec


def print_report(report: Report, console: Console | None = None) -> None:
    console = console or Console()
    table = Table(title=f"db-check {report.db} on {report.backend}", show_lines=False)
    table.add_column("step", no_wrap=True)
    table.add_column("result", no_wrap=True)
    table.add_column("detail", overflow="fold")
    words = {True: ("works", "green"), False: ("FAILS", "bold red"), None: ("skipped", "yellow")}
    for s in report.steps:
        word, style = words[s.ok]
        table.add_row(s.name, Text(word, style=style), s.detail)
    console.print(table)
    failed = [s.name for s in report.steps if s.ok is False]
    skipped = sum(1 for s in report.steps if s.ok is None)
    works = sum(1 for s in report.steps if s.ok is True)
    summary = f"{works} work, {len(failed)} fail, {skipped} skipped"
    if failed:
        summary += f" (failing: {', '.join(failed)})"
    console.print(Text(summary, style="bold red" if failed else "bold green"))


def run(args: argparse.Namespace) -> int:
    spec = build_spec(args)
    kind = KINDS.get(spec.backend)
    if kind is not None and kind.simulated:
        kind.check_args(args)
        report = check_sim(spec, workloads=args.workload)
    else:
        if kind is None or not kind.provisions:
            choices = ", ".join(k.name for k in KINDS.values() if k.provisions or k.simulated)
            raise BadInput(f"--backend: db-check needs nodes to run the DB on (choose from {choices})")
        report = check_real(spec, workloads=args.workload, timeout=args.timeout)
    print_report(report)
    return EXIT_VALID if report.passed else EXIT_INVALID
