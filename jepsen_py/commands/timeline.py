"""`jepsen-py timeline RUN_DIR`: regenerate a stored run's pictures from its directory alone.

Useful after upgrading jepsen-py (newer pictures for old runs), after `jepsen-py analyze` changed
results.json, or for a history imported from elsewhere.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from jepsen_py.errors import BadInput, FrameworkFailure
from jepsen_py.flags import path_text

NAME = "timeline"
HELP = ("regenerate a run's timeline.html, perf.html, linearizability.html, isolation.html and (a "
        "--backend maelstrom run's) messages.html from its directory")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", nargs="?", type=path_text, default="results/latest",
                        help="a run directory, a test directory or a latest link (default: results/latest)")


def run(args: argparse.Namespace) -> int:
    from jepsen_py.checkers.pictures.render import render_run

    path = Path(args.run_dir)
    if not path.is_dir():
        raise BadInput(f"{path}: no such run directory")
    if not (path / "history.jsonl").exists() and (path / "latest" / "history.jsonl").exists():
        path = path / "latest"
    written = render_run(path.resolve())
    if not written:
        raise FrameworkFailure(f"{path}: no picture could be rendered (run with -v for the reason)")
    for p in written:
        print(p)
    return 0
