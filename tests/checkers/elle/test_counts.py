"""A transactional run's counts add up: the run's summary, `check`'s lines, isolation.html and
results.json's anomaly_counts give the same number of each kind, also past the checker's twenty
kept examples."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest


def _jepsen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jepsen_py", *args], capture_output=True, text=True,
                          timeout=600, check=False)


def _kinds(text: str) -> dict[str, int]:
    """'464 failing the run (G-single-item 159, internal 95, ...)' -> {kind: n}."""
    m = re.search(r"(\d+) failing the run \(([^)]*)\)", text)
    assert m, text
    out = {k: int(n) for k, n in (part.rsplit(" ", 1) for part in m.group(2).split(", "))}
    assert sum(out.values()) == int(m.group(1))
    return out


@pytest.mark.slow
def test_summary_check_line_page_and_results_agree(tmp_path: Path) -> None:
    run = _jepsen("run", "--backend", "sim", "--workload", "list-append", "--nemesis", "partition-leader",
                  "--seed", "7", "--bug", "txn-split-apply", "--time-limit", "15",
                  "--results-dir", str(tmp_path))
    assert run.returncode == 1, run.stdout + run.stderr
    d = (tmp_path / "latest").resolve()
    elle = json.loads((d / "results.json").read_text())["checkers"]["elle"]
    counts = elle["anomaly_counts"]
    failing = {k: n for k, n in counts.items() if k in elle["failing_kinds"]}
    assert max(failing.values()) > 20, counts  # more than the examples kept of some kind
    assert _kinds(" ".join(run.stdout.split())) == failing
    check = _jepsen("check", str(d / "history.jsonl"), "--model", "list-append")
    assert check.returncode == 1, check.stdout + check.stderr
    lines = dict(re.findall(r"^  (\S+) x(\d+)", check.stdout, re.M))
    assert {k: int(n) for k, n in lines.items()} == counts
    page = " ".join((d / "isolation.html").read_text().split())
    assert f"found {', '.join(f'{k} x{n}' for k, n in counts.items())}" in page
    cycles = sum(n for k, n in counts.items() if k.startswith("G") and k not in ("G1a", "G1b"))
    assert f"{cycles} dependency cycle(s)" in page
