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

from jepsen_py.spark.export import write_table
from jepsen_py.spark.schema import OPS_FILE, PARQUET_DIR, RUN_FILE
from jepsen_py.spark.synthetic import SyntheticRun, fast_tables, run_dir_for

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


def jvm_cpu_seconds() -> float:
    """CPU time (user + system) of this process's JVM children: a load-independent figure, since the
    wall time on a shared machine depends on everyone else."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == os.getpid() and b"java" in cmd:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def bench_aggregate(root: Path, master: str) -> None:
    from jepsen_py.spark.aggregate import run_aggregate
    from jepsen_py.spark.session import get_session

    t = time.monotonic()
    spark = get_session(master)
    spark.range(1).count()
    start = time.monotonic() - t
    out = Path(tempfile.mkdtemp(prefix="jepsen-py-bench-aggregate-"))
    t = time.monotonic()
    cpu = jvm_cpu_seconds()
    res = run_aggregate(root, out_dir=out, spark=spark, progress=lambda s: print(f"  {s}"))
    took = time.monotonic() - t
    cpu = jvm_cpu_seconds() - cpu
    print(f"aggregate on {master}: {res.run_count:,} runs, {res.op_count:,} client ops "
          f"({res.op_count * 2:,} op rows), {len(res.summary)} groups")
    print(f"  Spark start {start:.1f} s; aggregate {took:.1f} s (target < 120 s): "
          f"{res.op_count * 2 / took:,.0f} op rows/s; {res.seconds}")
    print(f"  JVM CPU time {cpu:.1f} s over {os.cpu_count()} cores: on an otherwise idle machine the "
          f"wall time is about {cpu / (os.cpu_count() or 1):.0f}-{cpu:.0f} s; load average now "
          f"{os.getloadavg()[0]:.1f}")
    print(f"  outputs in {out}")


def bench_check(master: str, n_ops: int) -> None:
    from jepsen_py.checkers.linearizable import Budget, check, get_model
    from jepsen_py.spark.distributed_check import check_distributed
    from jepsen_py.spark.session import get_session
    from jepsen_py.spark.synthetic import SyntheticRun, simulate

    keys = 64
    ops, _ = simulate(SyntheticRun(pairs=n_ops // 2, concurrency=10, keys=keys, seed=7, nemesis=[]))
    n = len(ops)
    budget = Budget(time_s=600.0)
    model = get_model("register")
    figures = {}
    for workers in (1, os.cpu_count() or 1):
        t = time.monotonic()
        res = check(ops, model, budget=budget, workers=workers, stop_at_first_failure=False)
        figures[f"local, {workers} process(es)"] = (time.monotonic() - t, res["valid"])
    spark = get_session(master)
    check_distributed(ops[:2000], "register", None, spark=spark, budget=budget)  # warm the workers
    t = time.monotonic()
    res = check_distributed(ops, "register", None, spark=spark, budget=budget)
    figures[f"distributed, {master}"] = (time.monotonic() - t, res["valid"])
    print(f"check: {n:,} history records ({n_ops // 2:,} client ops) over {keys} keys, model register")
    base = figures["local, 1 process(es)"][0]
    for name, (secs, valid) in figures.items():
        print(f"  {name:<28} valid={valid!s:<5} {secs:7.2f} s  {n / secs:>10,.0f} ops/s  "
              f"throughput x{base / secs:.2f} of one local process")


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
