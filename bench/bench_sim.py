"""Benchmark: how fast the simulator runs the real nodes, in simulated seconds per wall second.

Five real nodes (cluster.node.Node) on SimCluster for `--seconds` of virtual time after an election,
optionally with a client load from the controller host: `--rate` requests per second (commit_offset
and fetch_offset alternating, one connection per node, sent to the leader) as the workload's client
would make them. Prints simulated seconds per wall second and per CPU second of this process (the
second figure is the one that holds on a loaded machine), events and delivered chunks per
simulated second, and with --profile the functions the time goes to.

`--compare REV` measures the code of git revision REV (exported to a temporary directory) and this
checkout side by side, alternating, each in its own interpreter, so that both see the same load.
On a machine shared with other work, CPU seconds vary by 10-20% from run to run, which hides smaller
gains: `--instructions` compares instead the instructions each side executes per simulated second
(valgrind's callgrind: a run of 1 and of 3 simulated seconds, the difference halved, so that startup
and the election are left out), which the load does not move:

    python3 bench/bench_sim.py [--seconds 60] [--rate 0] [--seed 1] [--profile]
                               [--compare REV [--rounds 3] [--instructions]]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jepsen_py.cluster.framing import MAX_CLIENT_FRAME, encode, read_frame

from jepsen_py.sim.cluster import CLIENT_PORT, SimCluster

NODES = ["n1", "n2", "n3", "n4", "n5"]


async def client_load(c: SimCluster, rate: float, until: float, answered: list[int]) -> None:
    """Sends `rate` requests/s to whoever leads, pipelined on one stream per node; answers counted."""
    loop = asyncio.get_running_loop()
    streams: dict[str, Any] = {}
    readers: list[asyncio.Task[None]] = []

    async def reader_task(reader: asyncio.StreamReader) -> None:
        while True:
            frame = await read_frame(reader, MAX_CLIENT_FRAME)
            if frame is None:
                return
            answered[0] += 1

    i = 0
    target: str | None = None
    look_at = 0.0
    while loop.time() < until:
        await asyncio.sleep(1.0 / rate)
        if loop.time() >= look_at:  # who leads, ten times a simulated second (asking costs a status())
            leaders = c.leaders()
            target = leaders[0] if leaders else None
            look_at = loop.time() + 0.1
        if target is None:
            continue
        if target not in streams:
            reader, writer = await c.client_net.open_connection(target, CLIENT_PORT)
            streams[target] = writer
            readers.append(loop.create_task(reader_task(reader)))
        i += 1
        key = {"group": "g", "topic": "t", "partition": i % 4}
        req = ({"op": "commit_offset", **key, "offset": i} if i % 2 else {"op": "fetch_offset", **key})
        streams[target].write(encode({"id": i, **req, "timeout_ms": 2000}))


PARTS = (
    ("engine (jepsen_py/sim loop, network, disk, clock)", ("jepsen_py/sim/",)),
    ("node code (cluster/)", ("/cluster/",)),
    ("asyncio (tasks, futures, streams, handles)", ("asyncio/", "_asyncio", "_contextvars")),
    ("json", ("json/", "_json")),
)


def time_by_part(stats: pstats.Stats) -> list[tuple[str, float]]:
    """Share of the profiled own time spent in each part of the code."""
    totals: dict[str, float] = {}
    for (filename, _, name), (_, _, tottime, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{filename}:{name}"
        part = next((p for p, keys in PARTS if any(k in where for k in keys)), "other (bench, builtins)")
        totals[part] = totals.get(part, 0.0) + tottime
    total = sum(totals.values()) or 1.0
    return sorted(((p, t / total) for p, t in totals.items()), key=lambda x: -x[1])


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURE = re.compile(r"cpu +([0-9.]+) s: ([0-9.]+) simulated s per CPU s")
WORK = re.compile(r"(\d+ events and \d+ delivered chunks|client requests answered: \d+|leaders: .*)")


def run_one(root: str, args: argparse.Namespace) -> tuple[float, float, str]:
    """(CPU s, simulated s per CPU s, whole report) of the benchmark of the checkout at `root`."""
    argv = [sys.executable, os.path.join(root, "bench", "bench_sim.py"), "--seconds", str(args.seconds),
            "--rate", str(args.rate), "--seed", str(args.seed)]
    out = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=True).stdout
    m = FIGURE.search(out)
    if m is None:
        raise RuntimeError(f"no figure in the output of {root}:\n{out}")
    return float(m.group(1)), float(m.group(2)), out


COLLECTED = re.compile(r"Collected : (\d+)")


def instructions_per_second(root: str, args: argparse.Namespace) -> float:
    """Instructions the checkout at `root` executes per steady simulated second (callgrind)."""
    counts = []
    for seconds in (1, 3):
        argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                os.path.join(root, "bench", "bench_sim.py"), "--seconds", str(seconds),
                "--rate", str(args.rate), "--seed", str(args.seed)]
        err = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=True).stderr
        m = COLLECTED.search(err)
        if m is None:
            raise RuntimeError(f"no instruction count from callgrind for {root}:\n{err[-2000:]}")
        counts.append(int(m.group(1)))
    return (counts[1] - counts[0]) / 2


def compare_instructions(old: str, args: argparse.Namespace) -> int:
    if shutil.which("valgrind") is None:
        print("bench_sim: --instructions needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 254
    ir = {name: instructions_per_second(root, args) for name, root in (("old", old), ("new", ROOT))}
    for name in ("old", "new"):
        print(f"{name} ({args.compare if name == 'old' else 'this checkout'}): "
              f"{ir[name] / 1e6:.1f} M instructions per simulated s")
    fewer = 100 * (1 - ir["new"] / ir["old"])
    print(f"speed-up: {ir['old'] / ir['new']:.3f}x ({fewer:.1f}% fewer instructions)")
    return 0


def compare(args: argparse.Namespace) -> int:
    """Old (git revision args.compare) against new (this checkout), alternating rounds."""
    with tempfile.TemporaryDirectory(prefix="bench-sim-") as old:
        archive = subprocess.run(["git", "-C", ROOT, "archive", args.compare], capture_output=True,
                                 check=True)
        subprocess.run(["tar", "-x", "-C", old], input=archive.stdout, check=True)
        if args.instructions:
            return compare_instructions(old, args)
        figures: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
        reports: dict[str, str] = {}
        for _ in range(args.rounds):
            for name, root in (("old", old), ("new", ROOT)):
                cpu, speed, reports[name] = run_one(root, args)
                figures[name].append((cpu, speed))
                print(f"  {name}: cpu {cpu:.2f} s, {speed:.1f} simulated s per CPU s", flush=True)
    best = {name: max(f, key=lambda x: x[1]) for name, f in figures.items()}
    for name in ("old", "new"):
        cpu, speed = best[name]
        print(f"{name} ({args.compare if name == 'old' else 'this checkout'}): best of {args.rounds}: "
              f"cpu {cpu:.2f} s, {speed:.1f} simulated s per CPU s")
    print(f"speed-up: {best['new'][1] / best['old'][1]:.2f}x")
    # the same simulated run on both sides: the same work done (a change meant to keep the run)
    work = {name: WORK.findall(r) for name, r in reports.items()}
    if work["old"] != work["new"]:
        print(f"note: the runs did different work: old {work['old']}, new {work['new']}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--seconds", type=float, default=60.0, help="simulated seconds measured")
    p.add_argument("--rate", type=float, default=0.0, help="client requests per simulated second")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--profile", action="store_true", help="print the top functions by own time")
    p.add_argument("--compare", metavar="REV", help="also measure git revision REV, side by side")
    p.add_argument("--rounds", type=int, default=3, help="with --compare: runs of each, alternating")
    p.add_argument("--instructions", action="store_true",
                   help="with --compare: instructions per simulated second (callgrind), not CPU time")
    args = p.parse_args()
    if args.instructions and not args.compare:
        p.error("--instructions goes with --compare REV")
    if args.compare:
        return compare(args)

    with SimCluster(args.seed, NODES) as c:
        c.start_all()
        c.run_until(3.0)  # elect a leader first
        if args.rate > 0:
            create = {"op": "create_topic", "name": "t", "partitions": 4, "rf": 3, "timeout_ms": 2000}

            async def setup() -> None:
                reader, writer = await c.client_net.open_connection(c.leaders()[0], CLIENT_PORT)
                writer.write(encode({"id": 0, **create}))
                await read_frame(reader, MAX_CLIENT_FRAME)
                writer.close()

            c.run_until_complete(setup(), timeout=5)
        start_sim, steps0 = c.now(), c.scheduler.steps
        chunks = [0]
        c.net.on_deliver = lambda *_: chunks.__setitem__(0, chunks[0] + 1)
        answered = [0]
        if args.rate > 0:
            until = c.controller_loop.time() + args.seconds
            c.controller_loop.create_task(client_load(c, args.rate, until, answered))
        prof = cProfile.Profile() if args.profile else None
        w0, p0 = time.perf_counter(), time.process_time()
        if prof is not None:
            prof.enable()
        c.run_until(start_sim + args.seconds)
        if prof is not None:
            prof.disable()
        wall, cpu = time.perf_counter() - w0, time.process_time() - p0
        sim = c.now() - start_sim
        steps = c.scheduler.steps - steps0
        print(f"{len(NODES)} nodes, {sim:.0f} simulated s, rate {args.rate:g}/s, seed {args.seed}")
        print(f"  wall {wall:.2f} s: {sim / wall:.1f} simulated s per wall s")
        print(f"  cpu  {cpu:.2f} s: {sim / cpu:.1f} simulated s per CPU s")
        print(f"  {steps / sim:.0f} events and {chunks[0] / sim:.0f} delivered chunks per simulated s, "
              f"{1e6 * cpu / max(steps, 1):.1f} CPU us per event")
        if args.rate > 0:
            print(f"  client requests answered: {answered[0]} ({answered[0] / sim:.0f}/s)")
        print(f"  leaders: {c.leaders()}")
        if prof is not None:
            stats = pstats.Stats(prof)
            print("  own time by part (profiled):")
            for part, share in time_by_part(stats):
                print(f"    {part:34} {100 * share:5.1f}%")
            stats.sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
