"""`jepsen-py explore` stopped by SIGTERM or Ctrl-C: explore.json still says what the search did
(marked interrupted), the run cut off is removed, nothing of the simulator's coroutines is printed,
and no `latest` link is left pointing at a removed trial."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# a bug the search finds in its first trial (about a second), so shrinking starts at once
FOUND_AT_ONCE = ["--seed", "7", "--bug", "split-brain-metadata", "--workload", "metadata"]
NOISE = ("GeneratorExit", "never awaited", "Exception ignored", "Traceback", "Task was destroyed")


def _explore(results: Path, *flags: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "jepsen_py.cli", "explore", "--results-dir", str(results),
                             "--no-progress", *flags], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for(pattern: str, root: Path, proc: subprocess.Popen[str], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not list(root.glob(pattern)):
        assert proc.poll() is None, f"explore ended before {pattern}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {pattern} after {seconds} s"
        time.sleep(0.02)


def _dangling(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_symlink() and not p.exists()]


def _interrupted(proc: subprocess.Popen[str], results: Path, sig: signal.Signals) -> tuple[dict, str, Path]:
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 255, err
    assert "interrupted" in err
    noise = [line for line in err.splitlines() if any(n in line for n in NOISE)]
    assert not noise, err
    (out_dir,) = (results / "explore").iterdir()
    summary = json.loads((out_dir / "explore.json").read_text())
    assert summary["interrupted"]["signal"] == sig.name
    removed = summary["interrupted"]["partial_run_removed"]
    assert removed is None or not Path(removed).exists()
    # every run left behind is a whole one, and no link leads nowhere
    for test_json in out_dir.rglob("test.json"):
        assert (test_json.parent / "results.json").is_file(), test_json.parent
    assert not _dangling(out_dir)
    return summary, err, out_dir


def test_sigterm_mid_search_writes_explore_json_and_removes_the_partial_trial(tmp_path: Path) -> None:
    proc = _explore(tmp_path, "--budget", "60", "--seed", "3", "--shrink-budget", "0")
    try:
        _wait_for("explore/*/trials/trial-00002/*/history.jsonl", tmp_path, proc)
        summary, _, _ = _interrupted(proc, tmp_path, signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert summary["interrupted"]["during"] == "searching"
    assert summary["schedules_tried"] >= 1


def test_ctrl_c_while_shrinking_prints_nothing_of_the_simulator(tmp_path: Path) -> None:
    for i, delay in enumerate((0.3, 1.2)):
        results = tmp_path / str(i)
        proc = _explore(results, "--budget", "60", *FOUND_AT_ONCE)
        try:
            _wait_for("explore/*/finding-1/schedule-found.json", results, proc)
            time.sleep(delay)  # shrinking: replays of candidate schedules, each a simulated run
            summary, _, _ = _interrupted(proc, results, signal.SIGINT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        note = summary["interrupted"]
        assert note["during"] == "shrinking"
        unfinished = note["unfinished_finding"]
        assert unfinished["kind"] and Path(unfinished["schedule_file"]).is_file()


def test_a_finished_search_leaves_no_dangling_latest_link(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "jepsen_py.cli", "explore", "--results-dir", str(tmp_path),
                        "--no-progress", "--budget", "3", "--seed", "3"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (out_dir,) = (tmp_path / "explore").iterdir()
    assert json.loads((out_dir / "explore.json").read_text())["schedules_tried"] >= 1
    assert not _dangling(out_dir), [(p, os.readlink(p)) for p in _dangling(out_dir)]


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(c) for c in text.split()]


def test_sigterm_during_a_parallel_search_stops_the_workers_and_writes_explore_json(tmp_path: Path) -> None:
    proc = _explore(tmp_path, "--budget", "120", "--seed", "3", "--parallel", "2", "--nemesis", "none",
                    "--workload", "offsets", "--node-count", "3", "--time-limit", "2")
    try:
        deadline = time.monotonic() + 60
        while len(_children(proc.pid)) < 2:  # the pool's workers (and its resource tracker)
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
        workers = _children(proc.pid)
        time.sleep(6)  # the workers are in their first slices
        summary, _, _ = _interrupted(proc, tmp_path, signal.SIGTERM)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert summary["interrupted"]["during"] == "searching"
    assert summary["fanout"]["where"] == "worker processes"
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{w}").exists() for w in workers):
        assert time.monotonic() < deadline, "a worker outlived the interrupted search"
        time.sleep(0.1)
