"""`jepsen-py run --backend sim` end to end on the real node code: the same results directory as a
Docker run, the same verdicts for the same bugs, and byte-identical histories for the same seed,
across processes (each with its own hash seed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jepsen_py.history import INFO, INVOKE, NEMESIS, OBSERVER, read_history, validate

REPO = Path(__file__).resolve().parents[3]
#: every --nemesis the simulator models
NEMESES = ("partition-leader", "partition-random", "partition-one", "partition-ring", "partition-bridge",
           "partition", "clock", "pause", "kill", "leader-clock", "all")


def jepsen(tmp: Path, *argv: str, hash_seed: str = "0") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    return subprocess.run([sys.executable, "-m", "jepsen_py.cli", "run", "--backend", "sim", "--no-progress",
                           "--results-dir", str(tmp), *argv],
                          capture_output=True, text=True, cwd=REPO, timeout=1800, env=env)


def run_dir(tmp: Path) -> Path:
    return (tmp / "latest").resolve()


def test_partition_leader_seed_7_twice_gives_the_same_history_and_exit_0(tmp_path: Path) -> None:
    argv = ("--workload", "offsets", "--nemesis", "partition-leader", "--seed", "7")  # 60 s, as documented
    a = jepsen(tmp_path / "a", *argv, hash_seed="1")
    b = jepsen(tmp_path / "b", *argv, hash_seed="2")
    assert a.returncode == 0, a.stdout + a.stderr
    assert b.returncode == 0, b.stdout + b.stderr
    da, db = run_dir(tmp_path / "a"), run_dir(tmp_path / "b")
    assert (da / "history.jsonl").read_bytes() == (db / "history.jsonl").read_bytes()

    # the same results directory as Docker's: verdict, pictures, node logs
    for name in ("test.json", "results.json", "jepsen.log", "timeline.html", "perf.html"):
        assert (da / name).is_file(), name
    assert sorted(p.name for p in (da / "nodes").iterdir()) == ["n1", "n2", "n3", "n4", "n5"]
    assert "role leader" in (da / "nodes" / "n1" / "node.log").read_text() or any(
        "role leader" in (da / "nodes" / n / "node.log").read_text() for n in ("n2", "n3", "n4", "n5"))
    results = json.loads((da / "results.json").read_text())
    assert results["valid"] is True
    assert set(results["checkers"]) >= {"linearizable", "staleness", "availability", "crash"}
    assert results["stats"]["simulated_s"] >= 60

    history = read_history(da / "history.jsonl")
    validate(history, source="sim")
    # virtual time: the main phase spans the time limit to the nanosecond grid of the generator
    starts = [op for op in history if op.process == NEMESIS and op.f == "start-partition"]
    assert starts and all(op.type in (INVOKE, INFO) for op in starts)
    isolated = [op.value for op in starts if op.type == INFO]
    assert all(v["shape"] == "leader" and len(v["sides"][0]) == 1 for v in isolated)
    assert sum(1 for op in history if op.process == OBSERVER) >= 5 * 10 * 60
    assert max(op.time for op in history) < 180e9


def test_the_zombie_leader_bug_is_caught_exit_1(tmp_path: Path) -> None:
    p = jepsen(tmp_path, "--workload", "offsets", "--nemesis", "partition-leader", "--seed", "7",
               "--bug", "zombie-leader")
    assert p.returncode == 1, p.stdout + p.stderr
    results = json.loads((run_dir(tmp_path) / "results.json").read_text())
    assert results["valid"] is False
    assert results["checkers"]["linearizable"]["valid"] is False


def run_many(results: Path, hash_seed: str, runs: list[str],
             time_limit: float) -> dict[str, tuple[int, bytes]]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    p = subprocess.run([sys.executable, "-m", "tests.jepsen_py.sim.run_many", str(results), str(time_limit),
                        *runs], capture_output=True, text=True, cwd=REPO, timeout=3600, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    out = {}
    for line in p.stdout.splitlines():
        item, code, path = line.split(" ", 2)
        out[item] = (int(code), Path(path).read_bytes())
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_every_nemesis_gives_the_same_bytes_twice(tmp_path: Path, seed: int) -> None:
    runs = [f"{n}:{seed}" for n in NEMESES]
    first = run_many(tmp_path / "first", "11", runs, 12)
    second = run_many(tmp_path / "second", "12", runs, 12)
    assert set(first) == set(runs)
    for item in runs:
        code, history = first[item]
        assert code == 0, f"{item}: the correct build judged invalid or unknown (exit {code})"
        assert history == second[item][1], f"{item}: the two runs differ"
        assert b'"process":"nemesis"' in history
