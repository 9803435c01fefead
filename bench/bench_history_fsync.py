"""What `--fsync-history` costs: history records/s with and without an fsync per record.

Writes the same ops through the real HistoryWriter from several threads (as the runner's clients
do) into a directory on the filesystem results/ lives on, and prints both rates and their ratio.
A test run records about rate x 2 records/s (invoke + completion; the default --rate is 100 ops/s),
so the figure that matters is whether the fsync'd rate stays far above that.

    python3 bench/bench_history_fsync.py [--records 20000] [--threads 10] [--dir results]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

from jepsen_py.history import HistoryWriter, Op


def rate(directory: Path, records: int, threads: int, fsync: bool) -> float:
    """Records per second written by `threads` threads, `records` in all."""
    with tempfile.TemporaryDirectory(dir=directory) as d:
        path = Path(d) / "history.jsonl"
        per = records // threads
        with HistoryWriter(path, fsync=fsync) as w:
            def work(p: int) -> None:
                for i in range(per):
                    w.append(Op(0, i, "invoke" if i % 2 == 0 else "ok", p, "write", key=p, value=i))

            ts = [threading.Thread(target=work, args=(p,)) for p in range(threads)]
            t0 = time.perf_counter()
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            elapsed = time.perf_counter() - t0
        return per * threads / elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--threads", type=int, default=10)
    ap.add_argument("--dir", type=Path, default=Path("results"))
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    plain = rate(args.dir, args.records, args.threads, fsync=False)
    synced = rate(args.dir, max(args.records // 10, args.threads), args.threads, fsync=True)
    print(f"history records/s without fsync: {plain:,.0f}")
    print(f"history records/s with fsync:    {synced:,.0f}")
    print(f"ratio: {plain / synced:.1f}x slower with fsync; a run at the default 100 ops/s writes "
          f"~200 records/s, {200 / synced:.1%} of the fsync'd capacity")


if __name__ == "__main__":
    main()
