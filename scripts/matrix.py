#!/usr/bin/env python3
"""The workload x nemesis matrix: every combination run for real (`jepsen-py run`), one table out.

    python3 scripts/matrix.py                       # 4 workloads x 7 nemeses, 60 s each
    python3 scripts/matrix.py --time-limit 20 --workloads offsets,topics --nemeses partition-leader,kill
    python3 scripts/matrix.py --read-mode local --nemeses partition-leader --expect invalid

Each run is a separate `jepsen-py run` process (its own run directory under --results-dir). The table
gives the verdict, ops, ok fraction, stale reads (with the serving nodes), other anomalies, recovery
after heal and wall time; --json writes the same rows. Exit 0 when every run gave the --expect'ed
verdict (valid by default), 1 otherwise, 255 when a run could not be carried out at all.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

WORKLOADS = ("offsets", "topics", "describe", "metadata")
NEMESES = ("partition-leader", "partition-random", "partition-ring", "clock", "pause", "kill", "all")
EXIT_NAMES = {0: "valid", 1: "invalid", 2: "unknown", 254: "bad-input", 255: "framework-failure"}


def run_one(workload: str, nemesis: str, args: argparse.Namespace) -> dict[str, Any]:
    name = f"matrix-{workload}-{nemesis}" + (f"-{args.read_mode}" if args.read_mode else "")
    argv = [sys.executable, "-m", "jepsen_py.cli", "run", "--workload", workload, "--nemesis", nemesis,
            "--time-limit", str(args.time_limit), "--node-count", str(args.node_count),
            "--results-dir", str(args.results_dir), "--name", name, "--no-progress"]
    if args.nemesis_interval:
        argv += ["--nemesis-interval", str(args.nemesis_interval)]
    if args.read_mode:
        argv += ["--read-mode", args.read_mode]
    if args.concurrency:
        argv += ["--concurrency", args.concurrency]
    if args.rate is not None:
        argv += ["--rate", str(args.rate)]
    for bug in args.bug:
        argv += ["--bug", bug]
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=args.time_limit * 4 + 600)
    wall = time.monotonic() - t0
    row: dict[str, Any] = {"workload": workload, "nemesis": nemesis, "exit": proc.returncode,
                           "verdict": EXIT_NAMES.get(proc.returncode, str(proc.returncode)),
                           "wall_s": round(wall, 1)}
    latest = Path(args.results_dir) / name / "latest"
    results_path = latest / "results.json"
    if not results_path.exists():
        row["error"] = (proc.stderr.strip().splitlines() or ["no results.json"])[-1][:200]
        return row
    results = json.loads(results_path.read_text())
    row["run_dir"] = str(latest.resolve())
    checkers: dict[str, Any] = results.get("checkers") or {}
    stats = checkers.get("stats") or {}
    row["ops"] = stats.get("count")
    row["ok_fraction"] = stats.get("ok_fraction")
    stale = 0
    stale_nodes: dict[str, int] = {}
    for cname, r in checkers.items():
        if cname.startswith("staleness") and isinstance(r, dict):
            stale += int(r.get("stale_count") or 0)
            for node, b in (r.get("by_node") or {}).items():
                stale_nodes[node] = stale_nodes.get(node, 0) + int(b.get("count") or 0)
    row["stale_reads"] = stale
    row["stale_nodes"] = stale_nodes
    row["invalid_checkers"] = sorted(n for n, r in checkers.items()
                                     if isinstance(r, dict) and r.get("valid") is not True)
    row["anomalies"] = sum(len(r.get("anomalies") or []) for r in checkers.values() if isinstance(r, dict))
    rec = (checkers.get("availability") or {}).get("recovery") or {}
    row["recovered"] = rec.get("recovered")
    row["recovery_ms"] = rec.get("recovery_ms")
    row["terms_per_minute"] = (checkers.get("availability") or {}).get("terms_per_minute")
    # Who the partition-leader nemesis cut off, so stale reads can be matched to the old leader.
    isolated: list[str] = []
    hist = latest / "history.jsonl"
    if hist.exists():
        with open(hist, encoding="utf-8") as f:
            for line in f:
                if '"nemesis"' not in line or '"start-partition"' not in line:
                    continue
                op = json.loads(line)
                v = op.get("value")
                if op.get("type") == "info" and isinstance(v, dict) and v.get("shape") == "leader" \
                        and v.get("leader"):
                    isolated.append(v["leader"])
    row["isolated_leaders"] = sorted(set(isolated))
    return row


def table(rows: list[dict[str, Any]]) -> str:
    cols = [("workload", 9), ("nemesis", 17), ("verdict", 8), ("ops", 6), ("ok%", 6), ("stale", 6),
            ("stale on", 14), ("anomalies", 9), ("recovered", 9), ("rec ms", 8), ("terms/min", 9),
            ("wall s", 7), ("not valid", 30)]
    out = ["  ".join(h.ljust(w) for h, w in cols)]
    for r in rows:
        okp = r.get("ok_fraction")
        vals = [r["workload"], r["nemesis"], r["verdict"], r.get("ops", "-"),
                f"{100 * okp:.1f}" if isinstance(okp, float) else "-", r.get("stale_reads", "-"),
                ",".join(f"{n}:{c}" for n, c in sorted((r.get("stale_nodes") or {}).items())) or "-",
                r.get("anomalies", "-"), r.get("recovered", "-"), r.get("recovery_ms", "-"),
                r.get("terms_per_minute", "-"), r["wall_s"],
                ",".join(r.get("invalid_checkers") or []) or r.get("error", "-")]
        out.append("  ".join(str(v).ljust(w) for v, (_, w) in zip(vals, cols, strict=True)))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                allow_abbrev=False)
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--nemeses", default=",".join(NEMESES))
    p.add_argument("--time-limit", type=float, default=60.0)
    p.add_argument("--nemesis-interval", type=float, default=None)
    p.add_argument("--node-count", type=int, default=5)
    p.add_argument("--concurrency", default=None)
    p.add_argument("--rate", type=float, default=None)
    p.add_argument("--read-mode", default=None)
    p.add_argument("--bug", action="append", default=[])
    p.add_argument("--results-dir", type=Path, default=Path("results"))
    p.add_argument("--expect", choices=("valid", "invalid"), default="valid")
    p.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    args = p.parse_args(argv)
    rows = []
    for w in [x for x in args.workloads.split(",") if x]:
        for n in [x for x in args.nemeses.split(",") if x]:
            row = run_one(w, n, args)
            rows.append(row)
            print(f"{w:9} {n:17} {row['verdict']:8} {row['wall_s']}s", file=sys.stderr, flush=True)
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if any(r["exit"] in (254, 255) for r in rows):
        return 255
    return 0 if all(r["verdict"] == args.expect for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
