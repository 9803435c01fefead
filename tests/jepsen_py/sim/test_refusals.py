"""What the simulator cannot honour is refused with one line and exit 254 before anything runs: no
run directory is created."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def jepsen(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jepsen_py.cli", "run", "--backend", "sim", "--no-progress",
                           "--results-dir", str(tmp_path / "results"), "--time-limit", "5", *argv],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


@pytest.mark.parametrize(("argv", "says"), [
    (["--db", "tests.jepsen_py.fakes:FakeDB"], "--db tests.jepsen_py.fakes:FakeDB: the simulator runs this "
                                               "project's cluster only"),
    (["--leave-db-running"], "--leave-db-running: simulated nodes end with the run"),
    (["--workload", "register"], "no client for 'register'"),
    (["--ssh-host", "n1=10.0.0.1"], "--ssh-host: not an option of the simulator"),
])
def test_an_option_the_simulator_cannot_honour_is_one_line_and_254(tmp_path: Path, argv: list[str],
                                                                  says: str) -> None:
    p = jepsen(tmp_path, *argv)
    assert p.returncode == 254, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "results").exists()  # refused before anything was created
