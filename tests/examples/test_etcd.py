"""The etcd example plugin end to end on Docker: a plugin outside jepsen_py (examples/etcd, found
from its own directory) runs the generic register workload against Debian's etcd-server with the
leader partitioned away. Serializable reads (--db-option reads=serializable) are served stale by the cut-off
member and must be caught; linearizable reads must pass."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "etcd"

pytestmark = [pytest.mark.docker, pytest.mark.slow]

# The example's documented settings: three members, the leader cut off for 5 s in every 10 s,
# reads and writes at 200 ops/s on a handful of keys.
ARGS = ("--db", "jepsen_etcd.db:EtcdDB", "--workload", "register", "--nemesis", "partition-leader",
        "--node-count", "3", "--time-limit", "25", "--nemesis-interval", "5", "--rate", "200",
        "--no-progress")


def run_etcd(tmp_path: Path, *extra: str, name: str = "register-partition-leader") -> tuple[int, dict, str]:
    results = tmp_path / "results"
    # this checkout's jepsen-py (not whichever is installed), the plugin found from its own directory
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "run", *ARGS, "--results-dir", str(results),
                          *extra],
                         cwd=EXAMPLE, env=env, capture_output=True, text=True, timeout=600)
    latest = results / name / "latest" / "results.json"
    assert latest.exists(), res.stdout + res.stderr
    return res.returncode, json.loads(latest.read_text()), res.stdout + res.stderr


def test_serializable_reads_under_a_leader_partition_are_caught(tmp_path: Path, node_image: str) -> None:
    code, results, out = run_etcd(tmp_path, "--db-option", "reads=serializable",
                                  name="register-partition-leader-reads_serializable")
    spec = json.loads((tmp_path / "results" / "register-partition-leader-reads_serializable" / "latest"
                       / "test.json").read_text())
    assert spec["db_options"] == {"reads": "serializable"} and spec["read_mode"] is None
    assert code == 1, out
    lin = results["checkers"]["linearizable"]
    assert lin["valid"] is False, lin
    assert lin["anomalies"][0]["kind"] == "nonlinearizable"
    assert results["stats"]["ok"] > 300


def test_linearizable_reads_under_a_leader_partition_pass(tmp_path: Path, node_image: str) -> None:
    code, results, out = run_etcd(tmp_path)
    assert code == 0, out
    assert results["checkers"]["linearizable"]["valid"] is True
    assert results["stats"]["ok"] > 300


def test_db_check_passes(node_image: str) -> None:
    """Every hook the plugin declares works on a small Docker cluster, and teardown leaves nothing."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "db-check", "--db", "jepsen_etcd.db:EtcdDB",
                          "--backend", "docker"], cwd=EXAMPLE, env=env, capture_output=True, text=True,
                         timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    for step in ("setup", "primaries", "workload register", "kill/start", "pause/resume", "teardown"):
        assert step in out, out
    assert "0 fail" in out, out
