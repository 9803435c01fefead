"""`jepsen-py analyze RUN_DIR`: re-check a stored history without any cluster.

Rebuilds the workload from test.json (so its checkers are the ones the run used, or newer ones),
checks history.jsonl, rewrites results.json and re-runs the post-run renderers. A malformed
history is reported as one line naming the file and line.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any

from jepsen_py import store
from jepsen_py.analysis import count_anomalies, run_post_steps
from jepsen_py.backends import KINDS
from jepsen_py.errors import BadInput
from jepsen_py.flags import check_output_file, path_text
from jepsen_py.history import Op, load_jsonl, validate
from jepsen_py.junit import write_junit
from jepsen_py.plugins import build_workload, is_reference, served_workloads
from jepsen_py.postrun import CLI_POST_RUN
from jepsen_py.progress import print_summary
from jepsen_py.protocols import Test
from jepsen_py.runner import client_stats, run_checkers
from jepsen_py.seeds import test_rng
from jepsen_py.verdict import exit_code

NAME = "analyze"
HELP = "re-check a stored run's history (no cluster needed) and rewrite its results.json"

log = logging.getLogger(__name__)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", nargs="?", type=path_text, default="results/latest",
                        help="a run directory, a test directory or a latest link (default: results/latest)")
    parser.add_argument("--junit-xml", type=path_text, default=None, metavar="FILE",
                        help="also write JUnit XML (into an existing directory)")
    parser.add_argument("--no-render", action="store_true",
                        help="do not re-run the post-run renderers (timeline, plots)")
    parser.add_argument("--allow-truncated", action="store_true",
                        help="check the intact lines of a history whose last line was cut off "
                             "(a controller killed mid-write) instead of refusing it")


def load_history(path: Path) -> tuple[list[Op], dict[int, int], int | None]:
    """The ops, each op's line number (keyed by id(op)), and the line of a torn tail if one was
    skipped.

    A line without its newline at the very end is what a writer killed mid-write leaves: it is
    left out and its line returned. Anything else malformed is BadInput naming file:line.
    """
    loaded = load_jsonl(path, allow_truncated=True)
    return loaded.ops, {id(op): ln for op, ln in zip(loaded.ops, loaded.lines, strict=True)}, loaded.torn


def analyze(run_dir: Path, *, allow_truncated: bool = False) -> dict[str, Any]:
    """Re-checks one run; returns the new results (also written to results.json).

    A history cut off mid-line is refused (254, naming the line) unless `allow_truncated`: then
    the intact lines before it are checked, with a warning."""
    spec = store.load_spec(run_dir)
    history_path = run_dir / store.HISTORY
    ops, lines, torn = load_history(history_path)
    if torn is not None:
        if not allow_truncated:
            raise BadInput(f"{history_path}:{torn}: history truncated mid-line (the writer stopped "
                           f"mid-write); the {len(ops)} ops before it are intact: "
                           "pass --allow-truncated to check them")
        print(f"jepsen-py: warning: {history_path}:{torn}: torn last line skipped "
              "(the writer stopped mid-write)", file=sys.stderr)
    validate(ops, locate=lambda op: f"{history_path}:{lines.get(id(op), '?')}")
    workloads = served_workloads(KINDS.get(spec.backend))  # a stored run's backend may be unknown here

    if spec.workload not in workloads and not is_reference(spec.workload, "--workload"):
        raise BadInput(f"{run_dir / store.TEST_JSON}: workload {spec.workload!r} is not registered here "
                       f"(known: {', '.join(sorted(workloads)) or 'none'})")
    workload = build_workload(spec, workloads)  # outside workloads and --checker ones too
    test = Test(spec=spec, store_dir=run_dir, log=logging.getLogger("jepsen_py.test"),
                rng=test_rng(spec.seed))
    old: dict[str, Any] = {}
    if (run_dir / store.RESULTS).exists():
        try:
            old = store.read_json(run_dir / store.RESULTS)
        except BadInput:
            old = {}
    results = run_checkers(workload.checkers, test, ops, fs=workload.fs)
    invokes, oks = client_stats(ops)
    stats = dict(old.get("stats") or {}) if isinstance(old, dict) else {}
    stats.update({"invokes": invokes, "ok": oks})
    results["stats"] = stats
    for k in ("notes", "error"):
        if isinstance(old, dict) and k in old:
            results[f"run_{k}" if k == "error" else k] = old[k]
    results["analyzed"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    store.write_json(run_dir / store.RESULTS, results)
    return results


def run(args: argparse.Namespace) -> int:
    if args.junit_xml:
        check_output_file("--junit-xml", args.junit_xml)
    run_dir = store.resolve_run_dir(Path(args.run_dir))
    results = analyze(run_dir, allow_truncated=args.allow_truncated)
    if not args.no_render:
        run_post_steps(CLI_POST_RUN, run_dir)
    if args.junit_xml:
        write_junit(results, Path(args.junit_xml), run_dir=run_dir)
    stats = results.get("stats", {})
    print_summary(valid=results["valid"], invokes=stats.get("invokes", 0), oks=stats.get("ok", 0),
                  anomalies=count_anomalies(results), run_dir=run_dir, checkers=results.get("checkers"),
                  title=f"analyze {run_dir.parent.name}/{run_dir.name}")
    return exit_code(results["valid"])
