"""render_run (the runner's post-run hook) and `jepsen-py timeline RUN_DIR`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from jepsen_py.checkers.pictures.render import render_run

from tests.checkers.runfixture import make_run


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "jepsen_py.cli", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": os.getcwd()})


def test_render_run_writes_every_picture(tmp_path: Path) -> None:
    run = make_run(tmp_path, 200)
    written = render_run(run.run_dir)
    assert [p.name for p in written] == ["timeline.html", "perf.html"]
    assert 'href="linearizability.html"' not in written[0].read_text()  # no failures: no link
    assert all(p.stat().st_size > 100_000 for p in written)


def test_a_broken_result_still_leaves_the_other_pictures(tmp_path: Path) -> None:
    run = make_run(tmp_path, 200)
    res = json.loads((run.run_dir / "results.json").read_text())
    res["checkers"]["linearizable"]["failures"] = [{"key": "x", "op": "not a dict",
                                                    "longest_linearization": "nope"}]
    (run.run_dir / "results.json").write_text(json.dumps(res))
    names = [p.name for p in render_run(run.run_dir)]
    assert "timeline.html" in names and "perf.html" in names


def test_timeline_command_regenerates_and_follows_latest(tmp_path: Path) -> None:
    run = make_run(tmp_path, 200)
    (run.run_dir.parent / "latest").symlink_to(run.run_dir.name)
    r = _cli("timeline", str(run.run_dir.parent))
    assert r.returncode == 0, r.stderr
    assert [Path(x).name for x in r.stdout.split()] == ["timeline.html", "perf.html"]
    assert (run.run_dir / "timeline.html").exists()


def test_timeline_command_bad_input_is_one_line(tmp_path: Path) -> None:
    r = _cli("timeline", str(tmp_path / "missing"))
    assert r.returncode == 254
    assert r.stderr.strip() == f"jepsen-py: {tmp_path / 'missing'}: no such run directory"
    bad = '{"index": 0, "time": 0, "type": "bogus", "process": 0, "f": "x"}\n'
    (tmp_path / "history.jsonl").write_text(bad)
    r = _cli("timeline", str(tmp_path))
    assert r.returncode == 254 and "history.jsonl:1: unknown op type 'bogus'" in r.stderr
    assert "Traceback" not in r.stderr
