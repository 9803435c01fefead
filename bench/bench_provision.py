"""How long a 5-node cluster takes from nothing to an elected leader on Docker, and to tear down.

The node image is built (or found in the cache) first and not counted: the figure is what every test
run pays. Provisioning = network + containers (DockerBackend.setup) + cluster/ upload and daemon start
on every node in parallel (RaftMetadataDB.setup) until a node reports a leader. Teardown = DB
teardown on every node + containers and network removed. Targets: < 10 s and < 5 s.

    python3 bench/bench_provision.py [--nodes 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from jepsen_py.nemeses.clock import ClockNemesis
from jepsen_py.nemeses.partition import PartitionNemesis

from jepsen_py.backends.docker import DockerBackend
from jepsen_py.backends.image import ensure_image
from jepsen_py.history import Op
from jepsen_py.protocols import Test, TestSpec
from jepsen_py.raftdb import RaftMetadataDB

PROVISION_TARGET_S = 10.0
TEARDOWN_TARGET_S = 5.0


def fault_latencies(test: Test) -> dict[str, float]:
    """Seconds each fault op takes to take effect on the 5 nodes (what a nemesis op costs)."""
    nem = PartitionNemesis(["leader"])
    out = {}
    for f, value in (("start-partition", "leader"), ("stop-partition", None)):
        t = time.perf_counter()
        nem.invoke(test, Op(0, 0, "invoke", "nemesis", f, value=value))
        out[f] = time.perf_counter() - t
    clock = ClockNemesis()
    t = time.perf_counter()
    clock.invoke(test, Op(0, 0, "invoke", "nemesis", "bump-clock", value=dict.fromkeys(test.nodes, 1000)))
    out["bump-clock (all nodes)"] = time.perf_counter() - t
    clock.heal(test)
    node = test.nodes[0]
    t = time.perf_counter()
    test.db.kill(test, node)  # type: ignore[union-attr]
    out["kill"] = time.perf_counter() - t
    t = time.perf_counter()
    test.db.start(test, node)  # type: ignore[union-attr]
    while not (test.db.status(test, node) or {}).get("leader"):  # type: ignore[union-attr]
        time.sleep(0.02)
    out["restart to rejoined"] = time.perf_counter() - t
    return out


def one_round(nodes: list[str], image: str, tmp: Path) -> tuple[float, float, float, str, dict[str, float]]:
    spec = TestSpec(name="bench-provision", workload="offsets", nemesis=[], nodes=nodes, time_limit=1,
                    concurrency=1, rate=0, nemesis_interval=1, seed=1, backend="docker",
                    read_mode="read-index", bugs=[], db="jepsen_py.raftdb:RaftMetadataDB", results_dir=tmp,
                    options={"docker_image": image})
    test = Test(spec=spec, store_dir=tmp, log=logging.getLogger("bench"), rng=random.Random(1))
    test.db = RaftMetadataDB(spec)
    test.backend = DockerBackend(spec)
    t0 = time.perf_counter()
    test.remotes = test.backend.setup(test)
    t_containers = time.perf_counter() - t0
    with ThreadPoolExecutor(len(nodes)) as pool:
        list(pool.map(lambda n: test.db.setup(test, n), nodes))
    leaders = test.db.primaries(test)
    t_leader = time.perf_counter() - t0
    faults = fault_latencies(test)
    t1 = time.perf_counter()
    with ThreadPoolExecutor(len(nodes)) as pool:
        list(pool.map(lambda n: test.db.teardown(test, n), nodes))
    test.backend.teardown(test)
    t_down = time.perf_counter() - t1
    return t_containers, t_leader, t_down, ",".join(leaders), faults


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    nodes = [f"n{i}" for i in range(1, args.nodes + 1)]

    t = time.perf_counter()
    image = ensure_image()
    t_image = time.perf_counter() - t
    t = time.perf_counter()
    ensure_image()
    t_cached = time.perf_counter() - t
    print(f"node image {image}: ensure_image {t_image:.2f} s (first call here), "
          f"{t_cached * 1000:.0f} ms cached")

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            c, lead, down, leaders, faults = one_round(nodes, image, Path(tmp))
            rows.append((c, lead, down))
            print(f"round {i + 1}: containers {c:.2f} s, to a leader {lead:.2f} s (leader {leaders}), "
                  f"teardown {down:.2f} s")
            print("  faults: " + ", ".join(f"{k} {v * 1000:.0f} ms" for k, v in faults.items()))
    lead_med = statistics.median(r[1] for r in rows)
    down_med = statistics.median(r[2] for r in rows)
    cont_med = statistics.median(r[0] for r in rows)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{args.nodes} nodes, median of {args.rounds}: containers {cont_med:.2f} s, nothing -> leader "
          f"{lead_med:.2f} s (target < {PROVISION_TARGET_S:.0f} s, "
          f"{lead_med / PROVISION_TARGET_S:.0%} of it), "
          f"teardown {down_med:.2f} s (target < {TEARDOWN_TARGET_S:.0f} s, "
          f"{down_med / TEARDOWN_TARGET_S:.0%} of it)")


if __name__ == "__main__":
    main()
