"""The cluster's transactions on Docker, one short run each: the correct build strict serializable,
the txn-split-apply bug named by Elle (the simulator's verdicts, on real containers)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


Run = tuple[subprocess.CompletedProcess[str], dict]


def run(tmp_path: Path, *extra: str, nemesis: str = "partition-leader") -> Run:
    argv = [sys.executable, "-m", "jepsen_py.cli", "run", "--backend", "docker", "--workload", "list-append",
            "--nemesis", nemesis, "--nemesis-interval", "3", "--time-limit", "10", "--seed", "7",
            "--results-dir", str(tmp_path), "--no-progress", *extra]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=10 * 60, cwd=REPO, check=False)
    results = tmp_path / "latest" / "results.json"
    assert results.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, json.loads(results.read_text())


@pytest.mark.docker
@pytest.mark.slow
def test_the_txn_split_apply_bug_is_caught_on_docker_and_the_correct_build_is_not(
        docker_engine: None, node_image: str, tmp_path: Path) -> None:
    proc, results = run(tmp_path / "bug", "--bug", "txn-split-apply")
    elle = results["checkers"]["elle"]
    assert proc.returncode == 1 and elle["valid"] is False, proc.stdout[-3000:]
    assert {"G0", "G1c", "G-single-item", "G2-item", "internal"} & set(elle["prohibited_anomaly_types"])
    proc, results = run(tmp_path / "correct")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert results["checkers"]["elle"]["txns"]["ok"] > 10


@pytest.mark.docker
@pytest.mark.slow
def test_the_correct_build_is_strict_serializable_under_kills_on_docker(
        docker_engine: None, node_image: str, tmp_path: Path) -> None:
    proc, results = run(tmp_path / "kill", nemesis="kill")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    elle = results["checkers"]["elle"]
    assert elle["valid"] is True and elle["txns"]["ok"] > 10
    ops = [json.loads(line) for line in (tmp_path / "kill" / "latest" / "history.jsonl").open()]
    assert any(op["f"] == "kill" and op["type"] == "info" for op in ops)  # a kill happened
