"""The pytest plugin, as a user's suite sees it: a separate pytest session runs jepsen-py tests
through the `jepsen` fixture and marker, fails the invalid ones with their anomalies (also in the
JUnit report), and applies --jepsen-seed and --jepsen-time-limit to every test."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

USER_TESTS = '''
import pytest

from tests.workloads.memstore import Store, StoreDB

FAST = dict(backend="none", rate=300.0, recovery_timeout=0.0, pictures=False)


def test_correct_store(jepsen):
    out = jepsen.run(db=StoreDB, workload="register", **FAST)
    assert out.valid is True


def test_stale_store(jepsen):
    jepsen.run(db=StoreDB(None, Store(lag=0.3)), workload="register", **FAST)


@pytest.mark.jepsen(db="tests.workloads.memstore:StoreDB", workload="set",
                    options={"store_lose_every": 5}, **FAST)
def test_marker_lossy_set(jepsen):
    jepsen.run()


def test_expected_anomaly_with_check_false(jepsen):
    out = jepsen.run(db=StoreDB(None, Store(lose_every=3)), workload="queue", check=False, **FAST)
    assert out.valid is False


def test_command_line_overrides(jepsen):
    t = jepsen.test(db=StoreDB, seed=1, time_limit=99)
    assert (t.seed, t.time_limit) == (4242, 0.8)
'''


def plugin_args() -> list[str]:
    """-p loads the plugin unless the installed entry point already does."""
    installed = any(ep.value == "jepsen_py.pytest_plugin" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "jepsen_py.pytest_plugin"]


def test_the_entry_point_is_declared() -> None:
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert meta["project"]["entry-points"]["pytest11"] == {"jepsen_py": "jepsen_py.pytest_plugin"}


def test_a_user_suite_runs_and_fails_with_the_anomalies(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(USER_TESTS)
    junit = tmp_path / "junit.xml"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    res = subprocess.run(
        [sys.executable, "-m", "pytest", *plugin_args(), "-q", "-p", "no:cacheprovider",
         "--jepsen-seed", "4242", "--jepsen-time-limit", "0.8", f"--junitxml={junit}", "test_user.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "3 passed" in out and "2 failed" in out, out
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    stale = cases["test_stale_store"].find("failure")
    assert stale is not None
    assert stale.get("message", "").startswith("Failed: jepsen-py: valid=false")
    assert "linearizable: valid=false" in (stale.text or "")
    assert "cannot be linearized" in (stale.text or "")
    lossy = cases["test_marker_lossy_set"].find("failure")
    assert lossy is not None and "- lost:" in (lossy.text or "")
    for ok in ("test_correct_store", "test_expected_anomaly_with_check_false", "test_command_line_overrides"):
        assert cases[ok].find("failure") is None, ok


def test_the_options_are_in_the_help() -> None:
    res = subprocess.run([sys.executable, "-m", "pytest", *plugin_args(), "--help"], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert "--jepsen-seed" in res.stdout and "--jepsen-time-limit" in res.stdout
