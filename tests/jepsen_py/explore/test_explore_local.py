"""`jepsen-py explore --backend local`: the same search with nodes as processes in network namespaces
(no Docker): a seed bug found, its schedule written as recorded on local, and `run --schedule`
replaying it there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jepsen_py.cli import main
from jepsen_py.explore import schedule as sched
from tests.jepsen_py.test_backend_local import local_env  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slow


def test_a_seed_bug_found_and_replayed_on_local(local_env: None, tmp_path: Path,  # noqa: F811
                                                capsys: pytest.CaptureFixture[str]) -> None:
    # metadata writes that skip Raft: concurrent creates of one topic on two nodes both succeed
    code = main(["explore", "--backend", "local", "--bug", "split-brain-metadata", "--workload", "topics",
                 "--nemesis", "none", "--node-count", "3", "--time-limit", "10", "--budget", "90",
                 "--shrink-budget", "0", "--reproduce", "1/1", "--seed", "4", "--results-dir", str(tmp_path),
                 "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1, out
    [summary_path] = list(tmp_path.glob("explore/*/explore.json"))
    summary = json.loads(summary_path.read_text())
    assert summary["draws"] == 20  # a real backend draws pairwise (pairs.py)
    [finding] = summary["findings"]
    shrunk = sched.load(finding["schedule_file"])
    assert shrunk.recorded_on == "local" and shrunk.fault_count == 0
    assert finding["reproduction"] == "1/1", finding
    code = main(["run", "--schedule", finding["schedule_file"], "--backend", "local", "--results-dir",
                 str(tmp_path / "replay"), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 1 and f"schedule anomaly {shrunk.anomaly}: reproduced" in out, out
