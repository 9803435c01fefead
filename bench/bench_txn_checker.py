"""Benchmark of the Elle-style transactional checker. Prints figures and ratios to the targets.

    python bench/bench_txn_checker.py [--txns 100000] [--procs 50] [--models strict-serializable]
                                      [--stale 0.02]

A list-append history from a serial reference execution with concurrency: transactions of 1-4
micro-ops (half reads) over 10 active keys, each key retired after 32 appends (as Elle's own
generator does), 50 processes with about 25-50 transactions in flight, 1% failed and 1%
indeterminate. Targets: 100,000 transactions in under 5 s on this machine's 2 cores, and
1,000,000 in under 60 s and 8 GB. Memory is the process's peak resident set (getrusage).
With --stale F, a fraction F of the ok reads lose a random tail (a stale snapshot), which makes
cycles and one large strongly connected component: that measures the cycle search too.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jepsen_py.checkers.elle import check

from jepsen_py.history import Op

TARGETS_S = {100_000: 5.0, 1_000_000: 60.0}
TARGET_MB_1M = 8192


def generate(n: int, procs: int, seed: int = 1) -> list[Op]:
    rng = random.Random(seed)
    state: dict[int, list[int]] = {}
    writes: dict[int, int] = {}
    active = list(range(10))
    next_key = 10
    counter = 0
    free_at = [0.0] * procs
    proc_id = list(range(procs))
    events: list[tuple[float, int, Any, str, list[list[Any]]]] = []
    for i in range(n):
        slot = i % procs
        start = max(free_at[slot] + 0.01, i - rng.uniform(0, procs / 2))
        end = i + rng.uniform(0.01, procs / 2)
        u = rng.random()
        kind = "fail" if u < 0.01 else "info" if u < 0.02 else "ok"
        applied = kind == "ok" or (kind == "info" and rng.random() < 0.5)
        inv: list[list[Any]] = []
        done: list[list[Any]] = []
        for _ in range(rng.randint(1, 4)):
            k = rng.choice(active)
            if rng.random() < 0.5:
                inv.append(["r", k, None])
                done.append(["r", k, list(state.get(k, ()))])
            else:
                counter += 1
                inv.append(["append", k, counter])
                done.append(["append", k, counter])
                if applied:
                    state.setdefault(k, []).append(counter)
                    writes[k] = writes.get(k, 0) + 1
                    if writes[k] >= 32:
                        active[active.index(k)] = next_key
                        next_key += 1
        p = proc_id[slot]
        events.append((start, 0, p, "invoke", inv))
        events.append((end, 1, p, kind, done if kind == "ok" else inv))
        free_at[slot] = end
        if kind == "info":
            proc_id[slot] += procs  # a crashed process's worker takes a new id
    events.sort(key=lambda e: (e[0], e[1]))
    return [Op(i, int(t * 1e6), typ, p, "txn", None, v) for i, (t, _, p, typ, v) in enumerate(events)]


def make_stale(ops: list[Op], fraction: float, seed: int = 2) -> int:
    rng = random.Random(seed)
    n = 0
    for op in ops:
        if op.type == "ok":
            for m in op.value:
                if m[0] == "r" and m[2] and rng.random() < fraction:
                    m[2] = m[2][:rng.randrange(len(m[2]))]
                    n += 1
    return n


def maxrss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench(n: int, procs: int, models: list[str], stale: float) -> None:
    t0 = time.perf_counter()
    ops = generate(n, procs)
    gen_s = time.perf_counter() - t0
    if stale:
        print(f"{make_stale(ops, stale):,} reads made stale")
    before = maxrss_mb()
    t0 = time.perf_counter()
    r = check(ops, "list-append", models, time_s=600)
    s = time.perf_counter() - t0
    peak = maxrss_mb()
    target = TARGETS_S.get(n)
    print(f"{n:,} txns ({len(ops):,} ops, {procs} processes; generated in {gen_s:.1f} s), "
          f"models {','.join(models)}: valid={r['valid']} anomalies={r['anomaly_counts']}"
          + (f" ({r['unknown_reason']})" if r.get("unknown_reason") else ""))
    print(f"  edges {r['edges']}")
    print(f"  check {s:.2f} s ({n / s:,.0f} txns/s)"
          + (f", {s / target:.2f}x of the {target:g} s target" if target else ""))
    print(f"  peak RSS {peak:,.0f} MB (was {before:,.0f} MB with the history loaded; "
          f"the check added at most {peak - before:,.0f} MB)"
          + (f", {peak / TARGET_MB_1M:.2f}x of the 8 GB target" if n >= 1_000_000 else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--txns", type=int, default=100_000)
    ap.add_argument("--procs", type=int, default=50)
    ap.add_argument("--models", default="strict-serializable")
    ap.add_argument("--stale", type=float, default=0.0)
    a = ap.parse_args()
    bench(a.txns, a.procs, a.models.split(","), a.stale)


if __name__ == "__main__":
    main()
