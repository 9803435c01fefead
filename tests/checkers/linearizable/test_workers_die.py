"""`jepsen-py check --workers 2`: the pool's workers end with the command, however it ends (SIGTERM,
SIGINT, or the parent killed outright), instead of searching on at full CPU for nobody."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jepsen_py.checkers.linearizable.partition import PARALLEL_MIN_OPS

ROOT = Path(__file__).resolve().parents[3]


def _hard_history(path: Path, adds: int = 22) -> Path:
    """Keys whose searches each take far longer than the test: concurrent adds and a read no subset
    explains, repeated on enough keys that the check runs in worker processes."""
    keys = PARALLEL_MIN_OPS // (2 * adds + 2) + 1
    rows: list[dict[str, object]] = []
    for k in range(keys):
        procs = [1000 * k + i for i in range(adds + 1)]
        rows += [{"type": "invoke", "process": procs[i], "f": "add", "key": k, "value": i}
                 for i in range(adds)]
        rows.append({"type": "invoke", "process": procs[adds], "f": "read", "key": k, "value": None})
        rows += [{"type": "ok", "process": procs[i], "f": "add", "key": k, "value": i} for i in range(adds)]
        rows.append({"type": "ok", "process": procs[adds], "f": "read", "key": k,
                     "value": [*range(adds), -1]})
    path.write_text("".join(json.dumps({"index": i, "time": i, **r}) + "\n" for i, r in enumerate(rows)))
    return path


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads process trees from /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_workers_end_with_the_check(tmp_path: Path, sig: signal.Signals) -> None:
    history = _hard_history(tmp_path / "hard.jsonl")
    proc = subprocess.Popen([sys.executable, "-m", "jepsen_py.cli", "check", str(history), "--model", "set",
                             "--workers", "2", "--time-limit", "600"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            workers = _children(proc.pid)
        assert len(workers) >= 2, f"no pool of two workers: {workers}, rc {proc.poll()}"
        time.sleep(0.5)  # the workers are searching
        assert all(_alive(w) for w in workers)
        proc.send_signal(sig)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [w for w in workers if _alive(w)], f"workers outlived the check ({sig.name})"
        if sig != signal.SIGKILL:
            err = proc.stderr.read() if proc.stderr else ""
            assert "Traceback" not in err and "interrupted" in err, err
    finally:
        for pid in [proc.pid, *workers]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
