"""docs/plugins.md's complete small plugin (toykv.py, taken from the page as it is) passes
`jepsen-py db-check` on Docker and runs a register test under pauses with a valid verdict: the page
a plugin author reads is runnable."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "plugins.md"

pytestmark = [pytest.mark.docker]


def toykv_source() -> str:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"<!-- toykv\.py -->\n```python\n(.*?)\n```\n", text, re.S)
    assert m, "docs/plugins.md lost its toykv.py block"
    return m.group(1) + "\n"


def jepsen_py(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "jepsen_py.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_pages_plugin_is_valid_python_with_every_hook(tmp_path: Path) -> None:
    (tmp_path / "toykv.py").write_text(toykv_source())
    sys.path.insert(0, str(tmp_path))
    try:
        import toykv
    finally:
        sys.path.remove(str(tmp_path))
    from jepsen_py.protocols import capabilities

    assert capabilities(toykv.ToyKV) == {"process", "pause", "primaries", "status"}
    assert toykv.ToyKV.ports == (7000,) and toykv.ToyKV.workloads() == ("register",)


def test_the_pages_plugin_passes_db_check_and_a_run(tmp_path: Path, node_image: str) -> None:
    (tmp_path / "toykv.py").write_text(toykv_source())
    res = jepsen_py(tmp_path, "db-check", "--db", "toykv:ToyKV", "--backend", "docker",
                    "--docker-image", node_image)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 fail, 0 skipped" in res.stdout

    res = jepsen_py(tmp_path, "run", "--db", "toykv:ToyKV", "--workload", "register", "--nemesis", "pause",
                    "--node-count", "3", "--time-limit", "10", "--nemesis-interval", "3",
                    "--docker-image", node_image, "--no-progress", "--results-dir", str(tmp_path / "results"))
    assert res.returncode == 0, res.stdout + res.stderr
    results = json.loads((tmp_path / "results" / "register-pause" / "latest" / "results.json").read_text())
    assert results["checkers"]["linearizable"]["valid"] is True
    assert results["stats"]["ok"] > 100
