"""Benchmark of the linearizability checker. Prints figures and ratios.

    python bench/bench_linearizable.py [--anchors DIR] [--ops 1000000] [--keys 1000] [--procs 50]

1. Porcupine's 102 etcd Jepsen logs (cas-register): total and slowest-file seconds, against the
   0.8 s Porcupine (Go) takes on this machine (target: within 5x).
2. Porcupine's 6 kv logs (kv model, per-key partitions).
3. A generated unique-value register history (default 1,000,000 ops over 1,000 keys, 50 processes,
   1% crashed ops): the fast path, keys in parallel on all cores (target: under 60 s on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jepsen_py.checkers.linearizable import check, get_model

from jepsen_py.history import Op
from jepsen_py.importers import load_history

PORCUPINE_ETCD_S = 0.8
PORCUPINE_SLOWEST_S = 0.27


def bench_etcd(anchors: Path) -> None:
    expected = dict(ln.split("\t") for ln in (anchors / "expected.tsv").read_text().splitlines()[1:] if ln)
    files = sorted(f for f in expected if f.startswith("jepsen/"))
    parse_s = check_s = 0.0
    slowest = (0.0, "")
    wrong = []
    for f in files:
        t0 = time.perf_counter()
        ops, _, _ = load_history(anchors / f)
        t1 = time.perf_counter()
        r = check(ops, get_model("cas-register", failed_cas="mismatch"), workers=1)
        t2 = time.perf_counter()
        parse_s += t1 - t0
        check_s += t2 - t1
        slowest = max(slowest, (t2 - t0, f))
        if str(r["valid"]).lower() != expected[f].strip():
            wrong.append(f)
    total = parse_s + check_s
    print(f"etcd logs: {len(files)} files, {total:.2f} s total ({parse_s:.2f} s parsing, {check_s:.2f} s "
          f"checking), slowest {slowest[1]} {slowest[0]:.3f} s, verdicts wrong: {len(wrong)}")
    print(f"  vs Porcupine (Go) {PORCUPINE_ETCD_S} s: ratio {total / PORCUPINE_ETCD_S:.2f}x "
          f"(target <= 5x); slowest file ratio {slowest[0] / PORCUPINE_SLOWEST_S:.2f}x")


def bench_kv(anchors: Path) -> None:
    for f in sorted((anchors / "kv").glob("*.txt")):
        t0 = time.perf_counter()
        ops, _, _ = load_history(f)
        r = check(ops, get_model("kv"))
        dt = time.perf_counter() - t0
        print(f"kv {f.name}: {dt:.2f} s, valid={r['valid']}, keys={r['keys_checked']}, ops={r['ops']}")


def generate_unique_register(n_ops: int, keys: int, procs: int, seed: int = 7) -> list[Op]:
    """Linearizable by construction: each op takes effect at its completion; 1% crash (info)."""
    rng = random.Random(seed)
    state: dict[int, int | None] = {}
    ops: list[Op] = []
    pending: dict[int, tuple[str, int, int | None]] = {}
    next_proc = procs
    idle = list(range(procs))
    busy: list[int] = []
    next_value = 0
    started = 0
    append = ops.append
    while started < n_ops or busy:
        if idle and started < n_ops and (not busy or rng.random() < 0.5):
            p = idle.pop(rng.randrange(len(idle)))
            k = rng.randrange(keys)
            if rng.random() < 0.5:
                next_value += 1
                pending[p] = ("write", k, next_value)
                append(Op(len(ops), len(ops), "invoke", p, "write", k, next_value))
            else:
                pending[p] = ("read", k, None)
                append(Op(len(ops), len(ops), "invoke", p, "read", k, None))
            busy.append(p)
            started += 1
            continue
        i = rng.randrange(len(busy))
        p = busy[i]
        busy[i] = busy[-1]
        busy.pop()
        f, k, v = pending.pop(p)
        if rng.random() < 0.01:
            if f == "write" and rng.random() < 0.5:
                state[k] = v  # it did take effect
            append(Op(len(ops), len(ops), "info", p, f, k, v, error="timeout"))
            idle.append(next_proc)
            next_proc += 1
            continue
        if f == "write":
            state[k] = v
            append(Op(len(ops), len(ops), "ok", p, f, k, v))
        else:
            append(Op(len(ops), len(ops), "ok", p, f, k, state.get(k)))
        idle.append(p)
    return ops


def bench_big(n_ops: int, keys: int, procs: int) -> None:
    t0 = time.perf_counter()
    ops = generate_unique_register(n_ops, keys, procs)
    t1 = time.perf_counter()
    r = check(ops, get_model("register"))
    t2 = time.perf_counter()
    print(f"generated register history: {n_ops} ops ({len(ops)} records) over {keys} keys, {procs} "
          f"processes: generated in {t1 - t0:.1f} s, checked in {t2 - t1:.1f} s on {os.cpu_count()} cores "
          f"(target < 60 s), valid={r['valid']}, engines={r['engines']}")
    # One stale read on one key must be found at that size too.
    k = ops[0].key
    n = len(ops)
    p = 10**6
    ops += [Op(n, n, "invoke", p, "write", k, -5), Op(n + 1, n + 1, "ok", p, "write", k, -5),
            Op(n + 2, n + 2, "invoke", p, "read", k, None), Op(n + 3, n + 3, "ok", p, "read", k, None)]
    t3 = time.perf_counter()
    r = check(ops, get_model("register"))
    print(f"  with one stale read injected: {time.perf_counter() - t3:.1f} s, valid={r['valid']}, "
          f"invalid_keys={r.get('invalid_keys')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--anchors", type=Path, default=Path("/work/shared/anchors/porcupine"))
    ap.add_argument("--ops", type=int, default=1_000_000)
    ap.add_argument("--keys", type=int, default=1000)
    ap.add_argument("--procs", type=int, default=50)
    ap.add_argument("--skip-big", action="store_true")
    args = ap.parse_args()
    if (args.anchors / "expected.tsv").exists():
        bench_etcd(args.anchors)
        bench_kv(args.anchors)
    else:
        print(f"no anchors at {args.anchors}: skipping etcd and kv")
    if not args.skip_big:
        bench_big(args.ops, args.keys, args.procs)


if __name__ == "__main__":
    main()
