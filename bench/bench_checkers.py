"""How fast the run checkers (staleness, availability, crash, stats, leaders) read a long history.

Synthesizes an offsets-workload history the shape a real run has (rotating keys, 10 clients, an
observer polling 5 nodes 10x a second, a stale-reading isolated leader for a stretch) and times each
checker. Prints ops/s per checker.

    python3 bench/bench_checkers.py [--ops 400000]
"""

from __future__ import annotations

import argparse
import random
import time

from jepsen_py.checkers.availability import AvailabilityChecker
from jepsen_py.checkers.crash import CrashChecker
from jepsen_py.checkers.leaders import LeadersChecker
from jepsen_py.checkers.staleness import StalenessChecker
from jepsen_py.checkers.stats import StatsChecker

from jepsen_py.history import Op

NODES = ["n1", "n2", "n3", "n4", "n5"]


def synth(n_ops: int, seed: int = 1) -> list[Op]:
    rng = random.Random(seed)
    ops: list[Op] = []
    t = 0
    key_id, key_ops = 0, 0
    value: dict[str, int] = {}
    last: dict[str, int] = {}
    stale_from, stale_to = n_ops // 3, n_ops // 3 + n_ops // 20
    for i in range(n_ops // 2):
        t += 200_000  # 0.2 ms between ops
        if key_ops >= 200:
            key_id, key_ops = key_id + 1, 0
        key_ops += 1
        key = f"g{key_id % 3}/t/{key_id}"
        proc = i % 10
        node = NODES[proc % 5]
        if i % 500 == 0:
            for n in NODES:
                ops.append(Op(len(ops), t, "ok", "observer", "status", None,
                              {"role": "leader" if n == "n1" else "follower", "term": 1, "leader": "n1"}, n))
        if rng.random() < 0.5:
            v = value.get(key, 0) + 1
            value[key] = v
            ops.append(Op(len(ops), t, "invoke", proc, "commit", key, v, node))
            ops.append(Op(len(ops), t + 100_000, "ok", proc, "commit", key, v, node, None,
                          {"role": "follower", "term": 1, "leader": "n1"}))
            last[key] = v
        else:
            seen = last.get(key)
            if stale_from <= len(ops) <= stale_to and node == "n2" and seen:
                seen = max(1, seen - 3)
            ops.append(Op(len(ops), t, "invoke", proc, "fetch", key, None, node))
            ops.append(Op(len(ops), t + 100_000, "ok", proc, "fetch", key, seen, node, None,
                          {"role": "follower", "term": 1, "leader": "n1"}))
    return ops


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ops", type=int, default=400_000)
    args = p.parse_args()
    t0 = time.perf_counter()
    hist = synth(args.ops)
    print(f"synthesized {len(hist):,} ops in {time.perf_counter() - t0:.2f} s")
    for c in (StalenessChecker(), AvailabilityChecker(), CrashChecker(), StatsChecker(), LeadersChecker()):
        t0 = time.perf_counter()
        r = c.check(None, hist)
        dt = time.perf_counter() - t0
        extra = f"stale reads {r['stale_count']}" if c.name == "staleness" else ""
        print(f"{c.name:13} {dt:7.2f} s  {len(hist) / dt:>12,.0f} ops/s  valid={r['valid']}  {extra}")


if __name__ == "__main__":
    main()
