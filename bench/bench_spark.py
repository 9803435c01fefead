"""Spark benchmark: aggregate 1,000 runs x 10,000 ops (10 million ops) on local[2], and the distributed
per-key linearizability check against the local one on the same history.

    python bench/bench_spark.py [--runs 1000] [--ops 10000] [--master local[2]] [--cache DIR]
                                [--check-ops 200000] [--skip-aggregate] [--skip-check]

The generated runs are cached (written straight to Parquet with spark/synthetic.py's numpy generator)
under $TMPDIR/jepsen-py-bench-spark/ so a second run measures Spark only. Prints figures and ratios.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from spark.export import write_table
from spark.schema import OPS_FILE, PARQUET_DIR, RUN_FILE
from spark.synthetic import SyntheticRun, fast_tables, run_dir_for

WORKLOADS = ("offsets", "topics", "metadata")
NEMESES = (("partition-leader",), ("kill",), ("clock",), ())
BUGS = ((), ("zombie-leader",), ("volatile-offsets",))
VERSIONS = ("0.1.0", "0.2.0")


def bench_run(i: int, ops: int) -> SyntheticRun:
    """The i-th run of the benchmark store: every workload x nemesis x bug x version, over 30 days."""
    combo = i % (len(WORKLOADS) * len(NEMESES) * len(BUGS) * len(VERSIONS))
    w, rest = divmod(combo, len(NEMESES) * len(BUGS) * len(VERSIONS))
    n, rest = divmod(rest, len(BUGS) * len(VERSIONS))
    b, v = divmod(rest, len(VERSIONS))
    start = dt.datetime(2026, 10, 23, tzinfo=dt.UTC) + dt.timedelta(minutes=43 * i)
    return SyntheticRun(
        test_name=f"bench-{WORKLOADS[w]}", workload=WORKLOADS[w], nemesis=list(NEMESES[n]),
        bugs=list(BUGS[b]), version=VERSIONS[v], start=start, pairs=ops // 2, concurrency=10,
        keys=16, seed=i,
    )


def _generate_one(args: tuple[Path, int, int]) -> int:
    root, i, ops = args
    run = bench_run(i, ops)
    d = run_dir_for(root, run) / PARQUET_DIR
    if (d / RUN_FILE).is_file():
        return 0
    d.mkdir(parents=True, exist_ok=True)
    ops_t, run_t, _ = fast_tables(run)
    write_table(ops_t, d / OPS_FILE)
    write_table(run_t, d / RUN_FILE)  # last: its presence marks the run complete
    return ops_t.num_rows


def generate(root: Path, runs: int, ops: int) -> float:
    t = time.monotonic()
    with ProcessPoolExecutor(max_workers=2) as pool:
        made = sum(pool.map(_generate_one, [(root, i, ops) for i in range(runs)], chunksize=16))
    took = time.monotonic() - t
    print(f"generate: {made:,} new op rows in {took:.1f} s (cache {root})")
    return took


def bench_aggregate(root: Path, master: str) -> None:
    from spark.aggregate import run_aggregate
    from spark.session import get_session

    t = time.monotonic()
    spark = get_session(master)
    spark.range(1).count()
    start = time.monotonic() - t
    out = Path(tempfile.mkdtemp(prefix="jepsen-py-bench-aggregate-"))
    t = time.monotonic()
    res = run_aggregate(root, out_dir=out, spark=spark, progress=lambda s: print(f"  {s}"))
    took = time.monotonic() - t
    print(f"aggregate on {master}: {res.run_count:,} runs, {res.op_count:,} client ops "
          f"({res.op_count * 2:,} op rows), {len(res.summary)} groups")
    print(f"  Spark start {start:.1f} s; aggregate {took:.1f} s (target < 120 s): "
          f"{res.op_count * 2 / took:,.0f} op rows/s; {res.seconds}")
    print(f"  outputs in {out}")


def bench_check(master: str, n_ops: int) -> None:
    try:
        from spark.distributed_check import check_distributed
    except ImportError as e:
        print(f"check: skipped ({e})")
        return
    from checkers.linearizable import Budget, check
    from spark.session import get_session
    from spark.synthetic import SyntheticRun, simulate

    ops, _ = simulate(SyntheticRun(pairs=n_ops // 2, concurrency=10, keys=64, seed=7, nemesis=[]))
    client_ops = [o for o in ops if o.is_client]
    spark = get_session(master)
    t = time.monotonic()
    local = check(client_ops, "register", budget=Budget(seconds=600.0))
    local_s = time.monotonic() - t
    check_distributed(client_ops, "register", None, master=master, budget=Budget(seconds=600.0))  # warm
    t = time.monotonic()
    dist = check_distributed(client_ops, "register", None, master=master, budget=Budget(seconds=600.0))
    dist_s = time.monotonic() - t
    n = len(client_ops)
    print(f"check: {n:,} client ops over 64 keys; local valid={local['valid']} in {local_s:.2f} s "
          f"({n / local_s:,.0f} ops/s); distributed on {master} valid={dist['valid']} in {dist_s:.2f} s "
          f"({n / dist_s:,.0f} ops/s); distributed/local throughput ratio {local_s / dist_s:.2f}")
    del spark


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--ops", type=int, default=10000, help="op records per run")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "jepsen-py-bench-spark")
    ap.add_argument("--check-ops", type=int, default=200_000)
    ap.add_argument("--skip-aggregate", action="store_true")
    ap.add_argument("--skip-check", action="store_true")
    args = ap.parse_args()
    root = args.cache / f"runs{args.runs}-ops{args.ops}"
    root.mkdir(parents=True, exist_ok=True)
    print(f"bench_spark: {args.runs:,} runs x {args.ops:,} ops on {args.master}, {os.cpu_count()} cores")
    if not args.skip_aggregate:
        generate(root, args.runs, args.ops)
        bench_aggregate(root, args.master)
    if not args.skip_check:
        bench_check(args.master, args.check_ops)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
