"""The transactional workloads on our cluster in the simulator: the correct build's transactions
are strict serializable under partitions and kills; the txn-split-apply bug is named by Elle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.jepsen_py.sim.test_run import jepsen, run_dir


@pytest.mark.parametrize("workload", ["list-append", "rw-register"])
@pytest.mark.parametrize("nemesis", ["partition-leader", "kill"])
def test_the_correct_build_is_strict_serializable(tmp_path: Path, workload: str, nemesis: str) -> None:
    p = jepsen(tmp_path, "--workload", workload, "--nemesis", nemesis, "--seed", "7",
               "--time-limit", "20")
    assert p.returncode == 0, p.stdout + p.stderr
    results = json.loads((run_dir(tmp_path) / "results.json").read_text())
    elle = results["checkers"]["elle"]
    assert elle["valid"] is True and elle["consistency_models"] == ["strict-serializable"]
    assert elle["txns"]["ok"] > 500 and elle["edges"]["wr"] > 100


def test_the_txn_split_apply_bug_is_caught_exit_1(tmp_path: Path) -> None:
    p = jepsen(tmp_path, "--workload", "list-append", "--nemesis", "partition-leader", "--seed", "7",
               "--time-limit", "20", "--bug", "txn-split-apply")
    assert p.returncode == 1, p.stdout + p.stderr
    elle = json.loads((run_dir(tmp_path) / "results.json").read_text())["checkers"]["elle"]
    assert elle["valid"] is False
    assert {"G-single-item", "G1c", "G2-item"} & set(elle["prohibited_anomaly_types"])
