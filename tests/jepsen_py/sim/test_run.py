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


def start(tmp: Path, argv: list[str], hash_seed: str) -> subprocess.Popen[bytes]:
    """Starts a Python process in the repository, its output in files under `tmp` (not pipes: a
    process left unread while another is awaited must not block on a full pipe)."""
    tmp.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    with open(tmp / "stdout", "wb") as out, open(tmp / "stderr", "wb") as err:
        return subprocess.Popen([sys.executable, *argv], stdout=out, stderr=err, cwd=REPO, env=env)


def finish(p: subprocess.Popen[bytes], tmp: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        p.wait(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return subprocess.CompletedProcess(p.args, p.returncode, (tmp / "stdout").read_text(),
                                       (tmp / "stderr").read_text())


def run_argv(tmp: Path, *argv: str) -> list[str]:
    return ["-m", "jepsen_py.cli", "run", "--backend", "sim", "--no-progress", "--results-dir", str(tmp),
            *argv]


def jepsen(tmp: Path, *argv: str, hash_seed: str = "0") -> subprocess.CompletedProcess[str]:
    return finish(start(tmp, run_argv(tmp, *argv), hash_seed), tmp, 1800)


def jepsen_pair(a: Path, b: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], ...]:
    """The same run in two interpreters at once, hash seeds 1 and 2: one run's wall time on two cores."""
    procs = [(start(tmp, run_argv(tmp, *argv), seed), tmp) for tmp, seed in ((a, "1"), (b, "2"))]
    return tuple(finish(p, tmp, 1800) for p, tmp in procs)


def run_dir(tmp: Path) -> Path:
    return (tmp / "latest").resolve()


def test_partition_leader_seed_7_twice_gives_the_same_history_and_exit_0(tmp_path: Path) -> None:
    argv = ("--workload", "offsets", "--nemesis", "partition-leader", "--seed", "7")  # 60 s, as documented
    a, b = jepsen_pair(tmp_path / "a", tmp_path / "b", *argv)
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


def run_many_start(results: Path, hash_seed: str, runs: list[str], time_limit: float,
                   interval: float) -> subprocess.Popen[bytes]:
    return start(results, ["-m", "tests.jepsen_py.sim.run_many", str(results), str(time_limit), str(interval),
                           *runs], hash_seed)


def histories(done: subprocess.CompletedProcess[str]) -> dict[str, tuple[int, bytes]]:
    """What run_many printed: each run's exit code and history bytes."""
    assert done.returncode == 0, done.stderr[-3000:]
    out = {}
    for line in done.stdout.splitlines():
        item, code, path = line.split(" ", 2)
        out[item] = (int(code), Path(path).read_bytes())
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_every_nemesis_gives_the_same_bytes_twice(tmp_path: Path, seed: int) -> None:
    runs = [f"{n}:{seed}" for n in NEMESES]
    # both copies at once, each its own interpreter and hash seed. 8 simulated s with a fault op every
    # 3 s: each nemesis starts its fault (at 3.6 s) and stops it (6.6 s) before the final heal
    procs = [(run_many_start(tmp_path / name, hash_seed, runs, 8, 3), tmp_path / name)
             for name, hash_seed in (("first", "11"), ("second", "12"))]
    first, second = (histories(d) for d in [finish(p, results, 3600) for p, results in procs])
    assert set(first) == set(runs)
    for item in runs:
        code, history = first[item]
        assert code == 0, f"{item}: the correct build judged invalid or unknown (exit {code})"
        assert history == second[item][1], f"{item}: the two runs differ"
        assert b'"process":"nemesis"' in history
        # the fault, its end and the final heal, each done (an info op)
        assert history.count(b'"type":"info","process":"nemesis"') >= 3, f"{item}: a fault op missing"
