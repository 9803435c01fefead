"""spark-submit entry for the aggregate job: the same job as `jepsen-py aggregate`, with the master,
memory and executors chosen by spark-submit.

    spark-submit --master spark://host:7077 spark/jobs/aggregate_job.py results/ --out agg/

The driver needs jepsen-py installed (pip install -e . or the wheel on the driver machine): the
repository's spark/ and checkers/ import as jepsen_py.spark and jepsen_py.checkers only once
installed. RESULTS_DIR must be readable by the driver and the executors (a shared filesystem)
because they read the runs' Parquet files directly.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jepsen_py.spark.aggregate import render_table, run_aggregate
from jepsen_py.spark.session import get_session

from jepsen_py.errors import JepsenError


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="aggregate_job.py", description=__doc__.splitlines()[0],
                                 allow_abbrev=False)
    ap.add_argument("results_dir", type=Path)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--no-dashboard", action="store_true")
    args = ap.parse_args(argv)
    try:
        spark = get_session(None, app_name="jepsen-py aggregate")
        res = run_aggregate(args.results_dir, out_dir=args.out, spark=spark, dashboard=not args.no_dashboard)
    except JepsenError as e:
        print(f"aggregate_job: {e}", file=sys.stderr)
        return e.exit_code
    from rich.console import Console

    Console(width=160).print(render_table(res.summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
