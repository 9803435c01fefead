"""Benchmark: CPU seconds per schedule of `jepsen-py explore` in the simulator, on a fixed set of trials.

The first K trials of seed S of a single-process simulated search are deterministic, so two
revisions that keep every history byte-identical do the same work: this drives the search's own
API (the command's plan of `explore --seed S`, its BackendSystem and Search, the steps its loop
takes, clean runs removed) for exactly K trials and prints the CPU seconds of this process per
schedule, and a fingerprint of the work: each trial's configuration, anomaly kinds, coverage,
simulated seconds and recorded schedule (with --histories, also each run's history.jsonl, the runs
then kept until the end).

`--compare REV` measures git revision REV (exported to a temporary directory) and this checkout
side by side, alternating, each in its own interpreter (this script, run on the other checkout's
code), best of --rounds, and says whether both did the same work. On a machine shared with other
work, CPU seconds vary by 10-20% from run to run: quote the load beside the figures.

    python3 bench/bench_explore.py [--trials 12] [--seed 5] [--profile] [--histories]
                                   [--compare REV [--rounds 3]]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURE = re.compile(r"cpu ([0-9.]+) s for (\d+) schedules: ([0-9.]+) CPU s per schedule")
WORK = re.compile(r"work fingerprint: ([0-9a-f]+)")


def measure(root: str, args: argparse.Namespace) -> int:
    """Runs the K trials on the code of the checkout at `root` and prints the figures."""
    sys.path.insert(0, root)
    import cProfile
    import pstats
    from pathlib import Path

    from jepsen_py.commands import explore as command
    from jepsen_py.explore.search import Search
    from jepsen_py.explore.system import BackendSystem

    parser = argparse.ArgumentParser(allow_abbrev=False)
    command.add_arguments(parser)
    plan = command.plan(parser.parse_args(["--seed", str(args.seed)]))
    fingerprint = hashlib.sha256()
    with tempfile.TemporaryDirectory(prefix="bench-explore-") as work:
        system = BackendSystem(work_dir=Path(work) / "trials", bugs=plan.bugs, backend=plan.backend,
                               db=plan.db, keep_clean=args.histories)
        search = Search(system, plan.space, seed=args.seed)
        prof = cProfile.Profile() if args.profile else None
        trials = []
        w0, c0 = time.perf_counter(), time.process_time()
        if prof is not None:
            prof.enable()
        for _ in range(args.trials):
            trials.append(search.step())
        if prof is not None:
            prof.disable()
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        for t in trials:
            record = {"config": t.config.label() if t.config else None, "anomalies": t.anomalies,
                      "coverage": sorted(t.coverage), "sim_s": t.sim_seconds, "error": t.error,
                      "unknown": t.unknown, "schedule": t.schedule.to_json()}
            fingerprint.update(json.dumps(record, sort_keys=True, default=str).encode())
            if args.histories and t.run_dir is not None:
                fingerprint.update((Path(t.run_dir) / "history.jsonl").read_bytes())
    sim = sum(t.sim_seconds for t in trials)
    findings = sum(1 for t in trials if t.failed)
    print(f"explore seed {args.seed}, first {args.trials} trials of {root}: {sim:.0f} simulated s, "
          f"{findings} with anomalies, {sum(1 for t in trials if t.error)} errors")
    print(f"  wall {wall:.2f} s")
    print(f"  cpu {cpu:.2f} s for {len(trials)} schedules: {cpu / len(trials):.3f} CPU s per schedule")
    print(f"  work fingerprint: {fingerprint.hexdigest()[:16]}")
    if prof is not None:
        stats = pstats.Stats(prof)
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(30)
    return 0


def run_one(root: str, args: argparse.Namespace) -> tuple[float, str, str]:
    """(CPU s per schedule, work fingerprint, whole report) of the checkout at `root`."""
    argv = [sys.executable, os.path.abspath(__file__), "--root", root, "--trials", str(args.trials),
            "--seed", str(args.seed)] + (["--histories"] if args.histories else [])
    out = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=True).stdout
    m, w = FIGURE.search(out), WORK.search(out)
    if m is None or w is None:
        raise RuntimeError(f"no figure in the output of {root}:\n{out}")
    return float(m.group(3)), w.group(1), out


def compare(args: argparse.Namespace) -> int:
    """Old (git revision args.compare) against new (this checkout), alternating rounds."""
    with tempfile.TemporaryDirectory(prefix="bench-explore-old-") as old:
        archive = subprocess.run(["git", "-C", ROOT, "archive", args.compare], capture_output=True,
                                 check=True)
        subprocess.run(["tar", "-x", "-C", old], input=archive.stdout, check=True)
        figures: dict[str, list[float]] = {"old": [], "new": []}
        work: dict[str, set[str]] = {"old": set(), "new": set()}
        for _ in range(args.rounds):
            for name, root in (("old", old), ("new", ROOT)):
                per, fp, _ = run_one(root, args)
                figures[name].append(per)
                work[name].add(fp)
                print(f"  {name}: {per:.3f} CPU s per schedule (work {fp})", flush=True)
    best = {name: min(f) for name, f in figures.items()}
    for name in ("old", "new"):
        print(f"{name} ({args.compare if name == 'old' else 'this checkout'}): best of {args.rounds}: "
              f"{best[name]:.3f} CPU s per schedule")
    print(f"speed-up: {best['old'] / best['new']:.2f}x")
    if work["old"] != work["new"] or len(work["new"]) != 1:
        print(f"note: the runs did different work: old {sorted(work['old'])}, new {sorted(work['new'])}")
    else:
        print("same work on both sides (fingerprints equal)")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--trials", type=int, default=12, help="trials measured (default: 12)")
    p.add_argument("--seed", type=int, default=5, help="the search's seed (default: 5)")
    p.add_argument("--profile", action="store_true", help="print the top functions (cProfile)")
    p.add_argument("--histories", action="store_true",
                   help="keep every run and put its history.jsonl into the work fingerprint")
    p.add_argument("--compare", metavar="REV", help="also measure git revision REV, side by side")
    p.add_argument("--rounds", type=int, default=3, help="with --compare: runs of each, alternating")
    p.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)  # the checkout whose code runs
    args = p.parse_args()
    if args.trials < 1:
        p.error("--trials must be at least 1")
    if args.compare:
        return compare(args)
    return measure(os.path.abspath(args.root), args)


if __name__ == "__main__":
    sys.exit(main())
