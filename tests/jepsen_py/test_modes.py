"""Everything written under results/ gets its mode from the framework, not from the umask: files
0644 and directories 0755 under umask 000 (nobody else may rewrite a run's evidence), narrower under
a stricter umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from jepsen_py import store
from jepsen_py.backends.none import NoneBackend
from jepsen_py.runner import run_test
from tests.jepsen_py.fakes import FakeDB, make_spec, register_workload

ROOT = Path(__file__).resolve().parents[2]


def _modes(root: Path) -> dict[str, int]:
    """Mode of every file and directory under root (links skipped: their mode means nothing)."""
    out = {}
    for p in [root, *root.rglob("*")]:
        if not p.is_symlink():
            out[str(p.relative_to(root))] = stat.S_IMODE(p.lstat().st_mode)
    return out


def _wrong(root: Path, file_mode: int = 0o644, dir_mode: int = 0o755) -> dict[str, str]:
    return {name: oct(mode) for name, mode in _modes(root).items()
            if mode != (dir_mode if (root / name).is_dir() else file_mode)}


def _under_umask_000(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jepsen_py.cli", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, preexec_fn=lambda: os.umask(0))


def test_a_run_under_umask_000_writes_0644_files_and_0755_dirs(tmp_path: Path) -> None:
    results = tmp_path / "results"
    r = _under_umask_000("run", "--backend", "sim", "--time-limit", "3", "--nemesis", "partition",
                         "--results-dir", str(results), "--junit-xml", str(tmp_path / "junit.xml"),
                         "--no-progress")
    assert r.returncode in (0, 1), r.stderr
    names = set(_modes(results))
    for made in ("history.jsonl", "results.json", "test.json", "jepsen.log", "timeline.html",
                 "parquet/ops.parquet", "nodes/n1/node.log"):
        assert any(n.endswith(made) for n in names), made
    assert not _wrong(results)
    assert stat.S_IMODE((tmp_path / "junit.xml").stat().st_mode) == 0o644


def test_explore_under_umask_000_writes_0644_files_and_0755_dirs(tmp_path: Path) -> None:
    results = tmp_path / "results"
    r = _under_umask_000("explore", "--budget", "10", "--seed", "7", "--bug", "split-brain-metadata",
                         "--workload", "metadata", "--shrink-budget", "2", "--harden-budget", "1",
                         "--results-dir", str(results), "--no-progress")
    assert r.returncode == 1, r.stderr
    names = set(_modes(results))
    for made in ("explore.json", "schedule-found.json", "schedule.json"):
        assert any(n.endswith(made) for n in names), made
    assert not _wrong(results)


def test_node_logs_collected_by_the_runner_lose_their_world_write(tmp_path: Path) -> None:
    """A log copied from a node keeps the node's mode unless the runner sets it: 0666 there is
    0644 here."""
    logs = tmp_path / "node-logs"
    logs.mkdir()
    spec = make_spec(tmp_path / "results", time_limit=0.3, rate=50.0)
    old = os.umask(0)
    try:
        for node in spec.nodes:
            (logs / f"{node}.log").write_text(f"node {node} log\n")
            os.chmod(logs / f"{node}.log", 0o666)
        # the DB's setup writes them again (keeping 0666); log_files() lists them for the runner
        out = run_test(spec, db=FakeDB(spec, log_dir=logs), workload=register_workload(final=False),
                       backend=NoneBackend(spec))
    finally:
        os.umask(old)
    assert (out.run_dir / "nodes" / spec.nodes[0] / f"{spec.nodes[0]}.log").is_file()
    assert not _wrong(tmp_path / "results")


def test_a_stricter_umask_makes_them_stricter(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        run_dir = store.create_run_dir(tmp_path / "results", "t")
        store.write_json(run_dir / store.RESULTS, {"valid": True})
        store.write_text(run_dir / "notes.txt", "x\n")
        store.make_dirs(run_dir / "nodes" / "n1")
    finally:
        os.umask(old)
    assert not _wrong(tmp_path / "results", 0o600, 0o700)
