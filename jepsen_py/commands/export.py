"""`jepsen-py export RUN_DIR...`: write the Parquet export (spark/schema.py) of stored runs.

The runner exports every new run itself; this is for runs made before, or re-exports after a
re-check. A directory that holds several runs (results/, results/<test>/) exports each of them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from jepsen_py.errors import EXIT_VALID, BadInput
from jepsen_py.flags import path

NAME = "export"
HELP = "export stored runs (history, test.json, results.json) to Parquet under <run>/parquet/"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dirs", nargs="+", type=path, metavar="RUN_DIR",
                        help="a run directory, or a directory holding runs (e.g. results/)")
    parser.add_argument("--quiet", action="store_true", help="print nothing on success")


def run(args: argparse.Namespace) -> int:
    from jepsen_py.spark.aggregate import find_runs
    from jepsen_py.spark.export import export_run

    todo: list[Path] = []
    for d in args.run_dirs:
        if not d.exists():
            raise BadInput(f"{d}: no such directory")
        if not d.is_dir():
            raise BadInput(f"{d}: not a directory")
        runs = [r for r in find_runs(d) if (r / "history.jsonl").is_file()]
        if not runs:
            raise BadInput(f"{d}: no runs found (no test.json + history.jsonl under it)")
        todo.extend(runs)
    t = time.monotonic()
    for r in todo:
        out = export_run(r)
        if not args.quiet:
            print(out)
    if not args.quiet:
        print(f"exported {len(todo)} run(s) in {time.monotonic() - t:.2f} s", file=sys.stderr)
    return EXIT_VALID
