"""Runs several simulated tests in one process (no pictures), for the determinism tests: each copy
of a matrix runs in its own interpreter, so a hash seed or an address cannot hide in the bytes.

    python -m tests.jepsen_py.sim.run_many RESULTS_DIR TIME_LIMIT NEMESIS_INTERVAL NEMESIS:SEED ...

prints one line per run: `<nemesis>:<seed> <exit code> <history.jsonl path>`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from jepsen_py.protocols import TestSpec
from jepsen_py.sim.run import run_sim


def spec(results: Path, nemesis: str, seed: int, time_limit: float, *, bugs: list[str] | None = None,
         workload: str = "offsets", nemesis_interval: float = 5.0) -> TestSpec:
    names = [] if nemesis == "none" else nemesis.split("+")
    return TestSpec(name=f"{workload}-{nemesis}-{seed}", workload=workload, nemesis=names,
                    nodes=["n1", "n2", "n3", "n4", "n5"], time_limit=time_limit, concurrency=10, rate=100,
                    nemesis_interval=nemesis_interval, seed=seed, backend="sim", read_mode="read-index",
                    bugs=list(bugs or []), db="jepsen_py.raftdb:RaftMetadataDB", results_dir=results)


def main(argv: list[str]) -> int:
    results, time_limit, interval, *runs = argv
    for item in runs:
        nemesis, seed = item.rsplit(":", 1)
        outcome = run_sim(spec(Path(results), nemesis, int(seed), float(time_limit),
                               nemesis_interval=float(interval)))
        print(f"{item} {outcome.exit_code} {outcome.run_dir / 'history.jsonl'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
