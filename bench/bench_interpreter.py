"""Benchmark: ops per second through the threaded interpreter (jepsen_py.interpreter), with a
trivial in-process client, so what is measured is the interpreter: the generator handoff, the
workers, recording (into memory, not a file: history fsync has its own benchmark).

Each measurement drives `--ops` ops of an unlimited generator (`mix` of reads and writes) with
`--concurrency` client workers and prints ops per wall second and per CPU second of this process.
`--invoke-s` makes each client invoke take that long (a request's round trip), where the handoff
between threads matters less than with answers at once.

`--compare REV` measures the interpreter of git revision REV (exported to a temporary directory)
and this checkout's side by side, alternating, each in its own Python process, so that both see the
same load; the benchmark itself is this file in both cases (REV may predate it):

    python3 bench/bench_interpreter.py [--ops 20000] [--concurrency 10] [--invoke-s 0]
                                       [--compare REV [--rounds 3]]
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class EchoClient:
    """Every op succeeds, at once or after `invoke_s` seconds (a request's round trip)."""

    def __init__(self, invoke_s: float) -> None:
        self.invoke_s = invoke_s

    def open(self, test: Any, node: str) -> EchoClient:
        return self

    def invoke(self, test: Any, op: Any) -> Any:
        if self.invoke_s > 0:
            time.sleep(self.invoke_s)
        op.type = "ok"
        return op

    def close(self, test: Any) -> None:
        return None


class MemoryHistory:
    """Numbers and keeps ops, as the history writer does, without the file."""

    def __init__(self) -> None:
        self.ops: list[Any] = []
        self.lock = threading.Lock()

    def record(self, op: Any) -> Any:
        with self.lock:
            op.index = len(self.ops)
            self.ops.append(op)
        return op

    def append(self, op: Any, *, tail: str | None = None) -> Any:
        return self.record(op)


def measure(ops: int, concurrency: int, invoke_s: float) -> tuple[float, float, int]:
    """(wall s, CPU s, history lines) of one interpreter run of `ops` ops."""
    # imported here: --root says which checkout's jepsen_py this process measures
    from jepsen_py import generator as gen
    from jepsen_py.interpreter import Interpreter
    from jepsen_py.protocols import Test, TestSpec

    with tempfile.TemporaryDirectory(prefix="bench-interp-") as tmp:
        spec = TestSpec(name="bench", workload="register", nemesis=[], nodes=["n1", "n2", "n3"],
                        time_limit=60, concurrency=concurrency, rate=0.0, nemesis_interval=1, seed=1,
                        backend="none", read_mode="read-index", bugs=[], db="none", results_dir=Path(tmp))
        test = Test(spec=spec, store_dir=Path(tmp), log=logging.getLogger("bench"), rng=random.Random(1))
        history = MemoryHistory()
        interp = Interpreter(test, client=EchoClient(invoke_s), nemesis=None, record=history.record,
                             append=history.append, concurrency=concurrency, op_timeout=10.0,
                             rng=random.Random(1))
        g = gen.limit(ops, gen.mix(gen.repeat({"f": "read", "key": 0}),
                                   gen.repeat({"f": "write", "key": 0, "value": 1})))
        w0, c0 = time.perf_counter(), time.process_time()
        interp.run(g, with_nemesis=False)
        return time.perf_counter() - w0, time.process_time() - c0, len(history.ops)


FIGURE = re.compile(r"([0-9.]+) ops/s wall, ([0-9.]+) ops/s CPU")


def run_one(root: str, args: argparse.Namespace) -> tuple[float, float]:
    """(ops per wall s, ops per CPU s) of the interpreter of the checkout at `root`."""
    argv = [sys.executable, os.path.abspath(__file__), "--root", root, "--ops", str(args.ops),
            "--concurrency", str(args.concurrency), "--invoke-s", str(args.invoke_s)]
    out = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=True).stdout
    m = FIGURE.search(out)
    if m is None:
        raise RuntimeError(f"no figure in the output for {root}:\n{out}")
    return float(m.group(1)), float(m.group(2))


def compare(args: argparse.Namespace) -> int:
    """Old (git revision args.compare) against new (this checkout), alternating rounds."""
    with tempfile.TemporaryDirectory(prefix="bench-interp-old-") as old:
        archive = subprocess.run(["git", "-C", ROOT, "archive", args.compare], capture_output=True,
                                 check=True)
        subprocess.run(["tar", "-x", "-C", old], input=archive.stdout, check=True)
        figures: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
        for _ in range(args.rounds):
            for name, root in (("old", old), ("new", ROOT)):
                wall, cpu = run_one(root, args)
                figures[name].append((wall, cpu))
                print(f"  {name}: {wall:.0f} ops/s wall, {cpu:.0f} ops/s CPU", flush=True)
    best = {name: max(f) for name, f in figures.items()}
    for name in ("old", "new"):
        wall, cpu = best[name]
        print(f"{name} ({args.compare if name == 'old' else 'this checkout'}): best of {args.rounds}: "
              f"{wall:.0f} ops/s wall, {cpu:.0f} ops/s CPU")
    print(f"new/old: {best['new'][0] / best['old'][0]:.2f}x wall, {best['new'][1] / best['old'][1]:.2f}x CPU")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--ops", type=int, default=20000, help="ops driven per measurement")
    p.add_argument("--concurrency", type=int, default=10, help="client workers")
    p.add_argument("--invoke-s", type=float, default=0.0,
                   help="seconds each client invoke takes (0: answers at once)")
    p.add_argument("--compare", metavar="REV", help="also measure git revision REV, side by side")
    p.add_argument("--rounds", type=int, default=3, help="with --compare: runs of each, alternating")
    p.add_argument("--root", default=ROOT, help="the checkout whose interpreter is measured")
    args = p.parse_args()
    if args.compare:
        return compare(args)
    sys.path.insert(0, os.path.abspath(args.root))
    wall, cpu, lines = measure(args.ops, args.concurrency, args.invoke_s)
    if lines != 2 * args.ops:
        raise RuntimeError(f"{lines} history lines for {args.ops} ops")
    print(f"{args.ops} ops, concurrency {args.concurrency}, invoke {args.invoke_s * 1e3:g} ms: "
          f"wall {wall:.2f} s, CPU {cpu:.2f} s")
    print(f"  {args.ops / wall:.0f} ops/s wall, {args.ops / cpu:.0f} ops/s CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
