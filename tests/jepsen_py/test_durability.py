"""What a crash can and cannot leave behind: pages and JSON replaced whole (temp file + rename),
renames made durable by a directory fsync, an interrupted write's temp file removed by the next
run, and the history fsync'd per record with --fsync-history."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from jepsen_py.checkers.pictures.render import render_run

from jepsen_py import cli, store
from tests.checkers.runfixture import make_run
from tests.jepsen_py.test_cli import fake_run, use_fakes


def test_pages_are_replaced_whole_not_rewritten_in_place(tmp_path: Path) -> None:
    """A rename gives the page a new inode; writing in place (what a crash can cut short) keeps it."""
    run = make_run(tmp_path, 60)
    render_run(run.run_dir)
    pages = [run.run_dir / n for n in ("timeline.html", "perf.html")]
    before = {p: p.stat().st_ino for p in pages}
    render_run(run.run_dir)
    for p in pages:
        assert p.stat().st_ino != before[p], p.name
        assert p.read_text(encoding="utf-8").rstrip().endswith("</html>")
        assert stat_mode(p) == 0o644 & ~current_umask()
    assert not [p for p in run.run_dir.iterdir() if p.name.endswith(store.TMP_SUFFIX)]


def stat_mode(p: Path) -> int:
    return p.stat().st_mode & 0o777


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_json_renames_are_followed_by_a_directory_fsync(tmp_path: Path, monkeypatch) -> None:
    synced: list[Path] = []
    real = store.fsync_dir
    monkeypatch.setattr(store, "fsync_dir", lambda d: (synced.append(Path(d)), real(d)))
    store.write_json(tmp_path / "results.json", {"valid": True})
    from jepsen_py import matrix

    summary = tmp_path / "m" / "summary.json"
    matrix.write_summary(summary, matrix="m", quick=True, test_count=1, rows=[], records=[], wall_s=1.0)
    assert synced == [tmp_path, tmp_path / "m"]
    assert json.loads((tmp_path / "results.json").read_text()) == {"valid": True}
    assert json.loads(summary.read_text())["matrix"] == "m"
    assert [p.name for p in (tmp_path / "m").iterdir()] == ["summary.json"]


def test_the_next_run_removes_an_interrupted_writes_temp_file(tmp_path: Path, monkeypatch) -> None:
    use_fakes(monkeypatch)
    results = tmp_path / "results"
    run_dir = results / "t" / "20261122T000000.000"
    run_dir.mkdir(parents=True)
    stale = run_dir / ".results.json.ab12cd34.tmp"
    stale.write_text('{"valid": tr')  # what a kill mid-write leaves
    fresh = run_dir / ".timeline.html.ef56gh78.tmp"
    fresh.write_text("<html>")  # another process's write in progress: left alone
    mine = run_dir / "notes.tmp"
    mine.write_text("not ours")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    os.utime(mine, (old, old))
    assert cli.main(fake_run(tmp_path)) == 0
    assert not stale.exists()
    assert fresh.exists() and mine.exists()


def test_fsync_history_syncs_every_record(tmp_path: Path, monkeypatch) -> None:
    use_fakes(monkeypatch)
    import jepsen_py.history as history

    calls = {"n": 0}
    real = os.fsync

    def counting(fd: int) -> None:
        calls["n"] += 1
        real(fd)

    monkeypatch.setattr(history.os, "fsync", counting)
    assert cli.main(fake_run(tmp_path, "--fsync-history")) == 0
    records = len(((tmp_path / "results" / "latest") / "history.jsonl").read_text().splitlines())
    assert calls["n"] >= records
    calls["n"] = 0
    assert cli.main(fake_run(tmp_path)) == 0
    # Without the flag: the history once when closed, plus test.json and results.json.
    assert calls["n"] < 10 <= records
