"""`jepsen-py explore` end to end on the simulator: a seed bug found blind within the space given,
shrunk, its schedule written beside the replayed run's timeline, and `run --schedule` reproducing it
exactly in simulation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jepsen_py.cli import main
from jepsen_py.explore import schedule as sched

pytestmark = pytest.mark.slow


def test_explore_finds_shrinks_and_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explore", "--bug", "split-brain-metadata", "--workload", "topics", "--nemesis", "none",
                 "--node-count", "3", "--time-limit", "4", "--budget", "60", "--shrink-budget", "60",
                 "--seed", "3", "--results-dir", str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1, out
    [summary_path] = list(tmp_path.glob("explore/*/explore.json"))
    summary = json.loads(summary_path.read_text())
    assert summary["draws"] == 1  # trials are cheap here: the plain search, its pinned draws
    [finding] = summary["findings"]
    assert finding["kind"] in ("duplicate-create", "stale-read", "nonlinearizable")
    assert finding["reproduced"] is True
    # the search's CPU cost is reported beside its wall time (a loaded machine inflates the latter)
    assert finding["found_after_cpu_s"] > 0 and summary["cpu_s"] >= finding["found_after_cpu_s"]
    schedule_path = Path(finding["schedule_file"])
    assert schedule_path.parent == Path(finding["run_dir"])
    assert (schedule_path.parent / "timeline.html").is_file()
    shrunk = sched.load(schedule_path)
    assert shrunk.anomaly == finding["kind"]
    assert shrunk.fault_count == 0
    assert len(shrunk.client_events) < finding["original"]["client_ops"]
    assert "finding:" in out

    code = main(["run", "--schedule", str(schedule_path), "--backend", "sim", "--results-dir",
                 str(tmp_path / "replay"), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1
    assert f"schedule anomaly {shrunk.anomaly}: reproduced" in out
    replayed = next((tmp_path / "replay").glob("*/2*/history.jsonl")).read_bytes()
    assert replayed == (schedule_path.parent / "history.jsonl").read_bytes()


def test_explore_finds_the_txn_split_apply_bug_blind(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # the whole space (every workload, fault family, read mode): the transactional workloads are
    # drawable, and one trial of them shows the bug
    code = main(["explore", "--bug", "txn-split-apply", "--budget", "120", "--shrink-budget", "0",
                 "--harden-budget", "0", "--seed", "1", "--results-dir", str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1, out
    [summary_path] = list(tmp_path.glob("explore/*/explore.json"))
    [finding] = json.loads(summary_path.read_text())["findings"]
    # a realtime-only cycle is the bug too (the schedule found replays valid without it)
    assert finding["kind"] in ("G0", "G1a", "G1b", "G1c", "G-single-item", "G-single-item-realtime",
                               "G-nonadjacent-item", "G2-item", "internal", "lost-update"), finding
    assert "list-append" in out or "rw-register" in out
