"""`jepsen-py test-all --backend sim --parallel 2`: the worker processes end when the command is
killed outright, instead of running the rest of the matrix for nobody."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.checkers.linearizable.test_workers_die import _alive, _children

ROOT = Path(__file__).resolve().parents[3]


def _cmdline(pid: int) -> str:
    """A process's command line; "" for one that ended since it was listed (its /proc entry gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except OSError:
        return ""


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads process trees from /proc")
def test_parallel_workers_end_when_test_all_is_killed(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "jepsen_py.cli", "test-all", "--backend", "sim",
                             "--parallel", "2", "--bugs", "zombie-leader", "--test-count", "4",
                             "--time-limit", "60", "--no-sweep", "--results-dir", str(tmp_path),
                             "--no-progress"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            workers = [c for c in _children(proc.pid) if "resource_tracker" not in _cmdline(c)]
            if len(workers) >= 2 and list(tmp_path.glob("*/*/history.jsonl")):
                break
            time.sleep(0.1)
        assert len(workers) >= 2 and proc.poll() is None, (workers, proc.poll())
        proc.kill()
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)], "workers outlived test-all"
    finally:
        for pid in [proc.pid, *workers]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
