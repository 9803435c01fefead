"""`jepsen-py explore --backend docker` end to end: our cluster with a seed bug is found blind in short
ordinary runs, shrunk on Docker, written as a schedule that `run --schedule` replays there with the
same anomaly; the correct build stays quiet over a short budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jepsen_py.cli import main
from jepsen_py.explore import schedule as sched

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_a_seed_bug_found_shrunk_and_replayed_on_docker(node_image: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # the seed draws metadata ops under partitions first: split-brain metadata loses a commit there
    code = main(["explore", "--backend", "docker", "--bug", "split-brain-metadata", "--budget", "150",
                 "--shrink-budget", "40", "--reproduce", "1/1", "--seed", "1", "--results-dir", str(tmp_path),
                 "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1, out
    [out_dir] = list(tmp_path.glob("explore/*"))
    summary = json.loads((out_dir / "explore.json").read_text())
    assert summary["backend"] == "docker" and summary["reproduce"] == "1/1"
    [finding] = summary["findings"]
    assert finding["reproduction"] == "1/1", finding
    schedule_path = Path(finding["schedule_file"])
    shrunk = sched.load(schedule_path)
    assert shrunk.anomaly == finding["kind"] and shrunk.recorded_on == "docker"
    assert shrunk.bugs == ["split-brain-metadata"]
    assert (out_dir / "report.html").is_file()

    code = main(["run", "--schedule", str(schedule_path), "--backend", "docker", "--results-dir",
                 str(tmp_path / "replay"), "--no-progress"])
    out = capsys.readouterr().out
    assert "as recorded on docker" in out
    assert code == 1 and f"schedule anomaly {shrunk.anomaly}: reproduced" in out, out


def test_the_correct_build_is_quiet_over_a_short_budget(node_image: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["explore", "--backend", "docker", "--budget", "30", "--node-count", "3",
                 "--time-limit", "10", "--seed", "2", "--results-dir", str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    [summary_path] = list(tmp_path.glob("explore/*/explore.json"))
    summary = json.loads(summary_path.read_text())
    assert summary["findings"] == [] and summary["schedules_tried"] >= 1 and summary["errors"] == 0
    assert summary["coverage_features"] > 0
