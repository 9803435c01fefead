"""End to end on real Docker: `jepsen-py run` provisions a 5-node Raft cluster, drives clients, injects
faults, checks, and exits with the verdict.

A short version of scripts/matrix.py (a few workload x nemesis combinations, 20 s each) must come out
valid on the correct cluster; and with reads served locally (stale by design), isolating the leader
must come out invalid with the stale reads pinned on the isolated old leader: the framework has to
catch a real weakness, not only pass.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TIME_LIMIT = 20


def jepsen_run(tmp_path: Path, workload: str, nemesis: str, *extra: str) -> tuple[int, dict[str, Any], Path]:
    name = f"e2e-{workload}-{nemesis.replace(',', '+')}"
    junit = tmp_path / f"{name}.xml"
    # a flag is given once: `extra` replaces the defaults it names
    defaults = {"--time-limit": str(TIME_LIMIT), "--nemesis-interval": "5"}
    for flag in defaults.keys() & set(extra):
        del defaults[flag]
    argv = [sys.executable, "-m", "jepsen_py.cli", "run", "--workload", workload, "--nemesis", nemesis,
            *[x for kv in defaults.items() for x in kv], "--node-count", "5",
            "--concurrency", "10", "--results-dir", str(tmp_path), "--name", name, "--no-progress",
            "--junit-xml", str(junit), *extra]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    run_dir = (tmp_path / name / "latest").resolve()
    assert (run_dir / "results.json").exists(), proc.stderr[-3000:]
    results = json.loads((run_dir / "results.json").read_text())
    # The JUnit report mirrors results.json: the run's verdict, then one case per checker.
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(cases) == {"verdict", *results["checkers"]}
    assert (results["valid"] is True) == (len(list(cases["verdict"])) == 0)
    for cname, r in results["checkers"].items():
        assert (r["valid"] is True) == (len(list(cases[cname])) == 0)
    return proc.returncode, results, run_dir


def summary(results: dict[str, Any]) -> str:
    return json.dumps({n: {k: v for k, v in r.items() if k in ("valid", "problems", "findings", "anomalies")}
                       for n, r in results["checkers"].items() if r.get("valid") is not True},
                      default=str)[:4000]


@pytest.mark.parametrize(("workload", "nemesis"), [
    ("offsets", "partition-leader"),
    ("topics", "kill"),
    ("describe", "pause"),
    ("metadata", "partition-ring,clock"),
])
def test_correct_cluster_is_valid_under_faults(docker_engine, tmp_path, workload, nemesis):
    code, results, run_dir = jepsen_run(tmp_path, workload, nemesis)
    assert code == 0 and results["valid"] is True, summary(results)
    checkers = results["checkers"]
    for name, r in checkers.items():
        if name.startswith("staleness"):
            assert r["stale_count"] == 0 and r["reads_checked"] > 0
        if name.startswith("linearizable"):
            assert r["keys_checked"] > 0
    assert checkers["stats"]["ok"] > 50
    rec = checkers["availability"]["recovery"]
    assert rec["faults"] is True and rec["recovered"] is True
    assert checkers["crash"]["logs_scanned"] >= 5  # every node's log was downloaded and read
    hist = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    fault_fs = {op["f"] for op in hist if op["process"] == "nemesis"}
    assert fault_fs - {"heal"}, "the nemesis never acted"


def test_local_reads_under_a_partitioned_leader_are_caught_and_pinned_on_it(docker_engine, tmp_path):
    # Stale reads need the isolated leader to serve reads after the majority elected a new one. On a
    # loaded machine installing a partition took ~4 s and the isolated leader's clients sat in 10 s
    # commit timeouts, leaving no such moment in a 20 s run: longer partitions, more of them, and
    # clients that give up on a hung commit in 3 s leave room for it whatever the load.
    code, results, run_dir = jepsen_run(tmp_path, "offsets", "partition-leader", "--read-mode", "local",
                                        "--time-limit", "45", "--nemesis-interval", "10",
                                        "--op-timeout", "3")
    assert code == 1 and results["valid"] is False
    st = results["checkers"]["staleness"]
    assert st["valid"] is False and st["stale_count"] > 0, summary(results)
    hist = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    isolated = {op["value"]["leader"] for op in hist
                if op["process"] == "nemesis" and op["f"] == "start-partition" and op["type"] == "info"
                and isinstance(op["value"], dict) and op["value"].get("leader")}
    assert isolated, "partition-leader never isolated a leader"
    # The isolated old leader served stale reads: it led the term it answered in while a newer term
    # already had a leader elsewhere. (Followers reading locally may add a few lagging reads of their
    # own; those are stale too, but the partitioned leader is the one this fault exposes.)
    on_isolated = {n: b for n, b in st["by_node"].items() if n in isolated}
    assert on_isolated, (st["by_node"], isolated)
    assert sum(b["deposed_leader"] for b in on_isolated.values()) > 0
    for s in st["stale_reads"]:
        assert s["versions_behind"] >= 1
        if s["node"] in isolated and s["deposed_leader"]:
            assert s["newer_leader"]["node"] != s["node"]
    assert st["longest_stale_window_ms"] > 0
    assert results["checkers"]["linearizable"]["valid"] is False
