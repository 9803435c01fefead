"""The search's wall budget bounds its wall time: a trial still running when the budget ends is cut
short inside the run, not awaited, and is neither a finding nor an error."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from jepsen_py.cli import main
from jepsen_py.explore.search import Search
from jepsen_py.explore.space import Config, Space
from jepsen_py.explore.system import BackendSystem, Deadline, TrialCut
from jepsen_py.generator import Context, Template, lift

pytestmark = pytest.mark.slow

LONG = Config(workload="offsets", families=("partition",), shapes=("leader",), targets=("one",), interval=2.0,
              mode="random", read_mode="read-index", node_count=5, time_limit=600.0, seed=7)


def test_deadline_generator_raises_once_the_wall_clock_is_past_it() -> None:
    now = [0.0]
    gen = Deadline(lift({"f": "read"}), deadline=10.0, clock=lambda: now[0])
    ctx = Context(0.0, 0, 0, None, (0,), set(), ("n1",))  # type: ignore[arg-type]
    assert isinstance(gen.op(ctx), Template)
    now[0] = 10.0
    with pytest.raises(TrialCut):
        gen.op(ctx)


def test_a_trial_is_cut_when_the_deadline_passes(tmp_path: Path) -> None:
    system = BackendSystem(work_dir=tmp_path / "trials")
    search = Search(system, Space(), seed=1)
    search.next_config = lambda: LONG  # type: ignore[method-assign]
    started = time.monotonic()
    system.deadline = started + 2.0
    trial = search.step()
    wall = time.monotonic() - started
    # 600 simulated seconds at 100 requests/s take minutes of wall time; cut, it ends in seconds
    assert trial.cut and not trial.failed and trial.error is None
    assert wall < 30.0, wall
    assert search.stats.cut == 1 and search.stats.tried == 0 and search.stats.errors == 0
    assert not list((tmp_path / "trials").glob("trial-*/*/history.jsonl")), "a cut trial leaves nothing"


def test_explore_ends_within_its_budget(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    code = main(["explore", "--time-limit", "600", "--node-count", "5", "--budget", "3", "--seed", "1",
                 "--results-dir", str(tmp_path), "--no-progress"])
    wall = time.monotonic() - started
    assert code == 0, capsys.readouterr()
    assert wall < 30.0, wall  # without the cut, one 600 s trial alone takes minutes
    assert "TrialCut" not in capsys.readouterr().err


def test_shrinking_a_finding_comes_on_top_of_the_search_budget(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """With --keep-going (or --until-replayable) the search goes on after a finding for the budget it
    had left, however long the shrink took; each finding's time counts the search alone."""
    budget, shrink = 5.0, 8.0
    code = main(["explore", "--bug", "split-brain-metadata", "--keep-going", "--seed", "3",
                 "--budget", str(budget), "--shrink-budget", str(shrink), "--harden-budget", "0",
                 "--results-dir", str(tmp_path), "--no-progress"])
    assert code == 1, capsys.readouterr()
    summary = json.loads(next(tmp_path.glob("explore/*/explore.json")).read_text())
    found = [f["found_after_s"] for f in summary["findings"]]
    assert len(found) >= 2, (found, summary["wall_s"])
    assert summary["wall_s"] > budget + 1.0, "a shrink ran past the budget and the search went on"
    assert found == sorted(found) and found[-1] < budget + 10.0, found
