"""`jepsen-py aggregate [RESULTS_DIR]`: the PySpark job over every run in a results directory.

Embedded Spark on local[*] by default; `--master spark://host:7077` (or yarn, k8s://...) runs it on
a cluster. The same job runs under spark-submit: `spark-submit spark/jobs/aggregate_job.py results/`.
Writes summary.parquet, trends.parquet, runs.parquet and dashboard.html to --out and prints the table.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from jepsen_py.errors import EXIT_VALID, BadInput
from jepsen_py.flags import path
from jepsen_py.spark.session import LOG_ENV, Progress

NAME = "aggregate"
HELP = ("aggregate many runs with PySpark: verdicts, detection rate, anomalies, latency, availability "
        "per workload x nemesis x bug x read mode x fault targets x schedule x version, with a plotly "
        "dashboard")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results_dir", nargs="?", type=path, default=Path("results"), metavar="RESULTS_DIR",
                        help="directory holding runs (default: results)")
    parser.add_argument("--master", default=None,
                        help="Spark master URL (default local[*]: embedded Spark on every core)")
    parser.add_argument("--out", type=path, default=None,
                        help="output directory (default RESULTS_DIR/aggregate)")
    parser.add_argument("--no-dashboard", action="store_true", help="skip the HTML dashboard")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--spark-log", default=None, metavar="LEVEL",
                        help="Spark's own log level (default ERROR; e.g. WARN, INFO)")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console

    from jepsen_py.spark.aggregate import render_table, run_aggregate


    if args.spark_log:
        import os

        level = args.spark_log.upper()
        if level not in {"ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"}:
            raise BadInput(f"--spark-log: unknown log level {args.spark_log!r}")
        os.environ[LOG_ENV] = level
    res = run_aggregate(args.results_dir, out_dir=args.out, master=args.master,
                        dashboard=not args.no_dashboard, progress=Progress(enabled=not args.quiet))
    console = Console(width=max(shutil.get_terminal_size((200, 40)).columns, 200))
    console.print(render_table(res.summary, title=f"{res.run_count} runs, {res.op_count:,} client ops"))
    console.print(f"written: {res.out_dir}" + (f"  dashboard: {res.dashboard}" if res.dashboard else ""))
    return EXIT_VALID
