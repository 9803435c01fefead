"""The Redis example plugin (examples/redis, found from its own directory, written from
docs/plugins.md) on Docker: one primary, asynchronous replicas, no failover.

What its semantics call for, each checked here:
- it passes `jepsen-py db-check` (its declared capabilities and the register workload work);
- reads from replicas (--db-option reads=replica) with the primary partitioned away are stale: not
  linearizable;
- reads from the primary (the default) under the same partition are linearizable: every op goes to
  the one primary, which the controller still reaches, and nothing fails over;
- killing the primary with nothing on disk (persistence=none, the default) loses acknowledged
  writes: not linearizable; with every write fsync'd to the append-only file (persistence=aof) the
  restarted primary has them all: linearizable.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "redis"

pytestmark = [pytest.mark.docker, pytest.mark.slow]

RUN = ("--db", "jepsen_redis.db:RedisDB", "--workload", "register", "--node-count", "3",
       "--time-limit", "20", "--nemesis-interval", "5", "--rate", "200", "--no-progress")


def jepsen_py(*argv: str) -> subprocess.CompletedProcess[str]:
    """This checkout's jepsen-py, run from the example's directory (so `jepsen_redis` is found there,
    not installed)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "jepsen_py.cli", *argv], cwd=EXAMPLE, env=env,
                          capture_output=True, text=True, timeout=900)


def run_redis(tmp_path: Path, name: str, *extra: str) -> tuple[int, dict, dict, str]:
    results = tmp_path / "results"
    res = jepsen_py("run", *RUN, "--results-dir", str(results), *extra)
    latest = results / name / "latest"
    out = res.stdout + res.stderr
    assert (latest / "results.json").exists(), out
    return (res.returncode, json.loads((latest / "results.json").read_text()),
            json.loads((latest / "test.json").read_text()), out)


def test_db_check_passes(node_image: str) -> None:
    res = jepsen_py("db-check", "--db", "jepsen_redis.db:RedisDB", "--backend", "docker")
    out = " ".join(res.stdout.split())
    assert res.returncode == 0, res.stdout + res.stderr
    for words in ("primaries │ works │ n1", "no terms (term None)", "workload register │ works",
                  "kill/start │ works", "pause/resume │ works", "no listening port or process left behind",
                  "0 fail, 0 skipped"):
        assert words in out, (words, res.stdout)


def test_replica_reads_under_a_primary_partition_are_not_linearizable(tmp_path: Path,
                                                                     node_image: str) -> None:
    code, results, spec, out = run_redis(tmp_path, "register-partition-leader-reads_replica",
                                         "--nemesis", "partition-leader", "--db-option", "reads=replica")
    assert code == 1, out
    lin = results["checkers"]["linearizable"]
    assert lin["valid"] is False and lin["anomalies"][0]["kind"] == "nonlinearizable", lin
    assert spec["db_options"] == {"reads": "replica"} and spec["read_mode"] is None
    assert results["stats"]["ok"] > 1000


def test_primary_reads_under_a_primary_partition_are_linearizable(tmp_path: Path, node_image: str) -> None:
    code, results, _, out = run_redis(tmp_path, "register-partition-leader", "--nemesis", "partition-leader")
    assert code == 0, out
    assert results["checkers"]["linearizable"]["valid"] is True
    assert results["stats"]["ok"] > 1000


def test_killing_a_primary_without_persistence_loses_writes(tmp_path: Path, node_image: str) -> None:
    code, results, _, out = run_redis(tmp_path, "register-kill", "--nemesis", "kill",
                                      "--fault-targets", "leader")
    assert code == 1, out
    lin = results["checkers"]["linearizable"]
    assert lin["valid"] is False and lin["anomalies"][0]["kind"] == "nonlinearizable", lin


def test_killing_a_primary_with_an_fsyncd_aof_loses_nothing(tmp_path: Path, node_image: str) -> None:
    code, results, _, out = run_redis(tmp_path, "register-kill-persistence_aof", "--nemesis", "kill",
                                      "--fault-targets", "leader", "--db-option", "persistence=aof")
    assert code == 0, out
    assert results["checkers"]["linearizable"]["valid"] is True
    assert results["stats"]["ok"] > 500
