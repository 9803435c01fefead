"""`jepsen-py run`: build a test from names (workload, nemeses, db, backend) and run it."""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jepsen_py import assembly, runflags, store
from jepsen_py import spec as specmod
from jepsen_py.errors import EXIT_BAD_INPUT, EXIT_FRAMEWORK, BadInput, RunInterrupted
from jepsen_py.explore.rerun import run_schedule
from jepsen_py.flags import check_output_file, check_room
from jepsen_py.junit import write_junit_outcomes
from jepsen_py.postrun import CLI_POST_RUN
from jepsen_py.progress import print_summary
from jepsen_py.protocols import TestSpec
from jepsen_py.seeds import run_seed
from jepsen_py.spec import DEFAULT_DB, db_options_text
from jepsen_py.verdict import exit_code, merge

NAME = "run"
HELP = "run a test: provision nodes, drive clients and faults, record and check the history"

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "example: jepsen-py run --workload offsets --nemesis partition-leader --time-limit 60. "
        "Exit codes: 0 valid, 1 invalid, 2 unknown, 254 bad arguments or input, 255 framework failure."
    )
    runflags.add_arguments(parser)


def check_outputs(args: argparse.Namespace) -> None:
    """Where the run writes must be usable before anything is provisioned: --results-dir a
    directory (or absent) with room for run directories under it, --junit-xml a file in an existing
    directory."""
    results = Path(args.results_dir)
    if results.exists() and not results.is_dir():
        raise BadInput(f"--results-dir: {results} is not a directory")
    check_room("--results-dir", results)
    if args.junit_xml:
        check_output_file("--junit-xml", args.junit_xml)


def build_and_run(spec: TestSpec, *, show_progress: bool) -> Any:
    """One run: the workload, db, nemesis and backend built fresh from the spec's names."""
    return assembly.run(assembly.assemble(spec), post_run=CLI_POST_RUN, show_progress=show_progress)


def db_label(spec: TestSpec) -> str:
    """What configured the DB, for the summary's title: its options and read mode, "" if neither."""
    parts = [db_options_text(spec.db_options)]
    if spec.read_mode is not None and spec.db != DEFAULT_DB:
        parts.append(f"read-mode={spec.read_mode}")
    return ", ".join(p for p in parts if p)


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """A CI job cancelled with SIGTERM gets what Ctrl-C gets: heal, teardown, results.json."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def run(args: argparse.Namespace) -> int:
    with sigterm_as_interrupt():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    if args.schedule is not None:
        check_outputs(args)

        return run_schedule(args, CLI_POST_RUN)

    spec = runflags.spec_from_args(args)
    check_outputs(args)

    store.remove_stale_temps(spec.results_dir)
    outcomes = []
    for i in range(spec.test_count):
        s = specmod.with_seed(spec, run_seed(spec.seed, i)) if i else spec
        try:
            outcome = build_and_run(s, show_progress=not args.no_progress)
        except RunInterrupted as e:
            # The interrupted run's verdict is unknown: a gate that reads only the report sees it.
            if args.junit_xml:
                write_junit_outcomes([*outcomes, e], Path(args.junit_xml))
            raise
        outcomes.append(outcome)
        if outcome.exit_code == EXIT_BAD_INPUT:
            # The environment or an input is wrong (Docker down, a bad option for the db): one
            # line, and no point in running the remaining tests.
            print(f"jepsen-py: {outcome.error} (run stored in {outcome.run_dir})", file=sys.stderr)
            if args.junit_xml:  # a gate reading only the report sees this run's unknown verdict too
                write_junit_outcomes(outcomes, Path(args.junit_xml))
            return EXIT_BAD_INPUT
        title = f"{s.name} (seed {s.seed}{'; ' + db_label(s) if db_label(s) else ''})"
        if spec.test_count > 1:
            title += f", run {i + 1}/{spec.test_count}"
        print_summary(valid=outcome.valid, invokes=outcome.invokes, oks=outcome.oks,
                      anomalies=outcome.anomalies, run_dir=outcome.run_dir,
                      checkers=outcome.results.get("checkers"), error=outcome.error, title=title)
    merged = merge(o.valid for o in outcomes)
    if len(outcomes) > 1:
        valid_n = sum(1 for o in outcomes if o.valid is True)
        invalid_n = sum(1 for o in outcomes if o.valid is False)
        print(f"overall: {str(merged).lower()} over {len(outcomes)} runs ({valid_n} valid, "
              f"{invalid_n} invalid, {len(outcomes) - valid_n - invalid_n} unknown)")
    if args.junit_xml:
        write_junit_outcomes(outcomes, Path(args.junit_xml))
    failures = [o.exit_code for o in outcomes if o.exit_code in (EXIT_BAD_INPUT, EXIT_FRAMEWORK)]
    if failures:
        return max(failures)
    return exit_code(merged)
