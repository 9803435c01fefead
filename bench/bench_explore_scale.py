"""Schedules per hour of `jepsen-py explore` on the correct build: in one process, `--parallel N`,
`--master local[N]`, and (with --standalone) a standalone Spark cluster started here from PySpark's
spark-class (a Master and one Worker with N cores on 127.0.0.1).

    python bench/bench_explore_scale.py [--budget 240] [--cores 2] [--standalone] [--modes one,parallel,local]
                                        [--seed 1] [--keep DIR]

Each mode is one `explore` run of the same budget and seed over the whole default space; its
explore.json gives the schedules tried and the search's wall seconds (Spark's start-up comes before
the search's clock starts; the command's whole wall time is printed beside it). Prints schedules per
hour per mode, CPU seconds per schedule, and each mode's ratio to one process. The machine's other
load is not controlled: say what else ran when quoting the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from jepsen_py.spark.standalone import standalone as start_standalone  # noqa: E402


@contextlib.contextmanager
def standalone(cores: int, work: Path) -> Iterator[str]:
    """A Master and one Worker on 127.0.0.1, stopped (with their executors) on the way out."""
    with start_standalone(work, cores=cores) as cluster:
        yield cluster.url


def explore(label: str, extra: list[str], budget: float, seed: int, results: Path) -> dict:
    argv = [sys.executable, "-m", "jepsen_py", "explore", "--budget", str(budget), "--seed", str(seed),
            "--keep-going", "--shrink-budget", "30", "--harden-budget", "0", "--no-progress",
            "--results-dir", str(results / label), *extra]
    t0 = time.monotonic()
    p = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - t0
    runs = sorted((results / label / "explore").iterdir()) if (results / label / "explore").is_dir() else []
    if p.returncode not in (0, 1) or not runs:
        raise RuntimeError(f"{label}: exit {p.returncode}: {p.stderr[-2000:]}")
    out = json.loads((runs[-1] / "explore.json").read_text())
    out["command_wall_s"] = wall
    out["exit"] = p.returncode
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=240.0, help="search seconds per mode (default 240)")
    ap.add_argument("--cores", type=int, default=2,
                    help="worker processes / local[N] / the Worker's cores (default 2)")
    ap.add_argument("--standalone", action="store_true", help="also a standalone cluster started here")
    ap.add_argument("--modes", default="one,parallel,local", help="modes to run, comma separated "
                    "(one, parallel, local; standalone with --standalone)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", type=Path, default=None, help="keep the explore directories here")
    args = ap.parse_args()
    results = args.keep or Path(tempfile.mkdtemp(prefix="jepsen-py-bench-explore-"))
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if args.standalone and "standalone" not in modes:
        modes.append("standalone")
    n = args.cores
    print(f"explore on the correct build, default space, seed {args.seed}, {args.budget:g} s per mode, "
          f"{os.cpu_count()} cores here (other load not controlled)")
    figures: dict[str, dict] = {}
    for mode in modes:
        if mode == "one":
            figures[mode] = explore(mode, [], args.budget, args.seed, results)
        elif mode == "parallel":
            figures[mode] = explore(mode, ["--parallel", str(n)], args.budget, args.seed, results)
        elif mode == "local":
            figures[mode] = explore(mode, ["--master", f"local[{n}]"], args.budget, args.seed, results)
        elif mode == "standalone":
            with tempfile.TemporaryDirectory(prefix="jepsen-py-bench-standalone-") as d, \
                    standalone(n, Path(d)) as url:
                figures[mode] = explore(mode, ["--master", url], args.budget, args.seed, results)
        else:
            raise SystemExit(f"unknown mode {mode!r}")
        f = figures[mode]
        rate = f["schedules_tried"] * 3600 / f["wall_s"]
        f["rate"] = rate
        print(f"{mode:>10}: {f['schedules_tried']:5d} schedules in {f['wall_s']:.0f} s of search "
              f"({f['command_wall_s']:.0f} s the whole command): {rate:,.0f} schedules/hour, "
              f"{f['cpu_s'] / max(1, f['schedules_tried']):.2f} CPU s per schedule, "
              f"{f['simulated_s']:,.0f} simulated s, {len(f['findings'])} finding(s), "
              f"{f['errors']} error(s)", flush=True)
    base = figures.get("one", {}).get("rate")
    if base:
        for mode, f in figures.items():
            print(f"{mode:>10}: {f['rate'] / base:.2f}x one process")
    print(f"explore directories: {results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
